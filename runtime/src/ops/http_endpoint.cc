#include "fedrt/ops/http_endpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include <asio/ip/address.hpp>
#include <fmt/format.h>
#include <httplib.h>
#include <mbedtls/ctr_drbg.h>

#include "fedrt/ops/dashboard_assets.h"
#include "fedrt/tls/tls.h"
#include "http_gate.h"

namespace fedrt::net {

namespace {

constexpr const char* kCookie = "fedrt_token";
// Header fields a request may carry (a browser sends about 15); the whole head
// is bounded before it is parsed (http_gate.h).
constexpr size_t kMaxHeaders = 64;

bool SameSecret(const std::string& a, const std::string& b) {  // constant time in the length of b
  unsigned diff = a.size() != b.size() ? 1u : 0u;
  for (size_t i = 0; i < b.size(); ++i) diff |= static_cast<unsigned>(i < a.size() ? a[i] ^ b[i] : 1);
  return diff == 0 && !b.empty();
}

std::string CookieToken(const httplib::Request& req) {
  const std::string cookies = req.get_header_value("Cookie");
  size_t at = 0;
  while (at < cookies.size()) {
    size_t end = cookies.find(';', at);
    if (end == std::string::npos) end = cookies.size();
    std::string kv = cookies.substr(at, end - at);
    kv.erase(0, kv.find_first_not_of(' '));
    const std::string prefix = std::string(kCookie) + "=";
    if (kv.compare(0, prefix.size(), prefix) == 0) return kv.substr(prefix.size());
    at = end + 1;
  }
  return "";
}

const char* MimeOf(const std::string& path) {
  auto ends = [&](const char* s) {
    const std::string e(s);
    return path.size() >= e.size() && path.compare(path.size() - e.size(), e.size(), e) == 0;
  };
  if (ends(".html")) return "text/html; charset=utf-8";
  if (ends(".js")) return "text/javascript; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  if (ends(".svg")) return "image/svg+xml";
  return "application/octet-stream";
}

// ?since=K of api/rounds and api/live: a non-negative integer, 0 when absent; false after a 400 answer.
bool SinceParam(const httplib::Request& req, httplib::Response& res, size_t* since) {
  if (!req.has_param("since")) return true;
  const std::string v = req.get_param_value("since");
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || v[0] == '-') {
    res.status = 400;
    res.set_content("since must be a non-negative integer\n", "text/plain");
    return false;
  }
  *since = static_cast<size_t>(n);
  return true;
}

// Where /PATH?token=T sends the browser once the cookie is set: PATH itself when
// it is a path of this server, else "/". "//host/x" and "/\\host/x" are read
// by browsers as another host's address.
std::string OnSite(const std::string& path) {
  const bool own = path.size() >= 1 && path[0] == '/' && (path.size() == 1 || (path[1] != '/' && path[1] != '\\')) &&
                   path.find_first_of("\r\n") == std::string::npos;
  return own ? path : std::string("/");
}

}  // namespace

Status ParseHttpAddress(const std::string& spec, std::string* host, uint16_t* port) {
  std::string h = "127.0.0.1", p = spec;
  const size_t colon = spec.rfind(':');
  if (colon != std::string::npos) {
    h = spec.substr(0, colon);
    p = spec.substr(colon + 1);
    if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
    if (h.empty()) h = "127.0.0.1";
  }
  char* end = nullptr;
  const long v = p.empty() ? -1 : std::strtol(p.c_str(), &end, 10);
  if (p.empty() || *end != '\0' || v < 0 || v > 65535)
    return Status(StatusCode::kInvalidArgument, fmt::format("--http '{}': expected PORT or ADDRESS:PORT with PORT in 0..65535", spec));
  std::error_code ec;
  if (h != "localhost") {
    (void)asio::ip::make_address(h, ec);
    if (ec) return Status(StatusCode::kInvalidArgument, fmt::format("--http '{}': '{}' is not an IP address", spec, h));
  }
  *host = h == "localhost" ? "127.0.0.1" : h;
  *port = static_cast<uint16_t>(v);
  return Status::Ok();
}

bool IsLoopbackAddress(const std::string& host) {
  std::error_code ec;
  const asio::ip::address a = asio::ip::make_address(host, ec);
  return !ec && a.is_loopback();
}

Result<std::string> LoadOrCreateHttpToken(const std::string& keys_dir) {
  const std::string path = keys_dir + "/http.token";
  std::ifstream in(path);
  if (in) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && (st.st_mode & 077) != 0)
      return Status(StatusCode::kPermissionDenied,
                    fmt::format("'{}' is readable or writable by others (mode {:04o}): anyone on this machine could "
                                "read the dashboard's token; run 'chmod 600 {}'",
                                path, st.st_mode & 07777, path));
    std::string token;
    std::getline(in, token);
    if (token.size() < 32)
      return Status(StatusCode::kInvalidArgument, fmt::format("'{}' must hold a token of at least 32 characters", path));
    return token;
  }
  TlsRandom rng;
  FEDRT_TRY(rng.init("fedrt-http-token"));
  unsigned char raw[32];
  if (mbedtls_ctr_drbg_random(rng.drbg(), raw, sizeof raw) != 0)
    return Status(StatusCode::kInternal, std::string("token generation failed"));
  const std::string token = BytesToHex(raw, sizeof raw);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0) return Status(StatusCode::kPermissionDenied, fmt::format("cannot create '{}'", path));
  const std::string line = token + "\n";
  const bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  ::close(fd);
  if (!ok) return Status(StatusCode::kDataLoss, fmt::format("short write to '{}'", path));
  return token;
}

struct HttpEndpoint::Impl {
  explicit Impl(int threads) : server(static_cast<size_t>(threads)) {}
  GatedHttpServer server;
  std::thread thread;
};

Result<std::unique_ptr<HttpEndpoint>> HttpEndpoint::Start(const HttpOptions& o, const FleetMonitor& monitor) {
  std::unique_ptr<HttpEndpoint> ep(new HttpEndpoint());
  ep->impl_ = std::make_unique<Impl>(o.threads);
  httplib::Server& s = ep->impl_->server;
  s.set_payload_max_length(1024);  // time limits and one request per connection: http_gate.h
  s.set_default_headers({{"X-Content-Type-Options", "nosniff"},
                         {"X-Frame-Options", "DENY"},
                         {"Referrer-Policy", "no-referrer"},
                         {"Cache-Control", "no-store"},
                         {"Content-Security-Policy",
                          "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
                          "connect-src 'self'; frame-ancestors 'none'"}});
  const std::string token = o.token;
  s.set_pre_routing_handler([token](const httplib::Request& req, httplib::Response& res) {
    if (req.method != "GET" && req.method != "HEAD") {
      res.status = 405;
      res.set_header("Allow", "GET, HEAD");
      res.set_content("only GET and HEAD\n", "text/plain");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.headers.size() > kMaxHeaders) {
      res.status = 431;
      res.set_content("431 too many header fields\n", "text/plain");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (token.empty()) return httplib::Server::HandlerResponse::Unhandled;
    const std::string auth = req.get_header_value("Authorization");
    const std::string bearer = auth.compare(0, 7, "Bearer ") == 0 ? auth.substr(7) : std::string();
    if (SameSecret(bearer, token) || SameSecret(CookieToken(req), token))
      return httplib::Server::HandlerResponse::Unhandled;
    if (req.has_param("token") && SameSecret(req.get_param_value("token"), token)) {
      // The browser's way in: a cookie for the page's own requests, and the token out of the address bar.
      res.set_header("Set-Cookie", fmt::format("{}={}; Path=/; HttpOnly; SameSite=Strict", kCookie, token));
      res.set_redirect(OnSite(req.path), 303);
      return httplib::Server::HandlerResponse::Handled;
    }
    res.status = 401;
    res.set_header("WWW-Authenticate", "Bearer realm=\"fedrt\"");
    res.set_content("401 unauthorized: this endpoint needs the token of the keys folder's http.token\n",
                    "text/plain");
    return httplib::Server::HandlerResponse::Handled;
  });
  const FleetMonitor* m = &monitor;
  s.Get("/api/run", [m](const httplib::Request&, httplib::Response& res) {
    res.set_content(m->run_json(), "application/json");
  });
  s.Get("/api/rounds", [m](const httplib::Request& req, httplib::Response& res) {
    size_t since = 0;
    if (SinceParam(req, res, &since)) res.set_content(m->rounds_json(since), "application/json");
  });
  s.Get("/api/live", [m](const httplib::Request& req, httplib::Response& res) {
    size_t since = 0;
    if (SinceParam(req, res, &since)) res.set_content(m->live_json(since), "application/json");
  });
  s.Get("/api/devices", [m](const httplib::Request&, httplib::Response& res) {
    res.set_content(m->devices_json(), "application/json");
  });
  s.Get("/api/gateways", [m](const httplib::Request&, httplib::Response& res) {
    res.set_content(m->gateways_json(), "application/json");
  });
  s.Get("/metrics", [m](const httplib::Request&, httplib::Response& res) {
    res.set_content(m->metrics_text(), "text/plain; version=0.0.4; charset=utf-8");
  });
  // Everything else: one of the compiled-in files, looked up by exact path.
  s.Get(".*", [](const httplib::Request& req, httplib::Response& res) {
    const std::string path = req.path == "/" ? std::string("/index.html") : req.path;
    for (const Asset& a : DashboardAssets()) {
      if (path == a.path) {
        res.set_content(a.data, a.size, MimeOf(path));
        return;
      }
    }
    res.status = 404;
    res.set_content("404 not found\n", "text/plain");
  });
  int port = o.port;
  if (o.port == 0) {
    port = s.bind_to_any_port(o.host);
    if (port <= 0) return Status(StatusCode::kUnavailable, fmt::format("--http: cannot listen on {}:0", o.host));
  } else if (!s.bind_to_port(o.host, o.port)) {
    return Status(StatusCode::kUnavailable,
                  fmt::format("--http: cannot listen on {}:{} (in use, or not an address of this machine)", o.host,
                              o.port));
  }
  ep->impl_->server.widen_backlog();
  ep->port_ = static_cast<uint16_t>(port);
  ep->impl_->thread = std::thread([&s] { s.listen_after_bind(); });
  for (int i = 0; i < 1000 && !s.is_running(); ++i)  // stop() before the loop runs would not stop it
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return ep;
}

HttpEndpoint::~HttpEndpoint() {
  if (impl_ == nullptr) return;
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

}  // namespace fedrt::net
