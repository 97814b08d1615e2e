// fedrt-fw-host, fedrt-fw-host-lsa: the firmware's device client
// (runtime/src/fw, mbedTLS and nanopb built from source with the firmware's
// configuration; all families or LSA only, as fedrt-fw and fedrt-fw-lsa) on a
// POSIX host, over a TCP socket instead of a UART, with the same workspace as
// the image by default. Used to test the firmware's exact protocol code
// against the real coordinator without an emulator. With --serial-pty the
// link is a pseudo-terminal instead, as a UART is (no reconnect: stale bytes
// are drained), for the coordinator's --serial; --line-noise writes garbage
// onto it (docs/microcontrollers.md, "A board on a serial line").

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "fedrt/fw/client.h"
#include "fedrt/fw/problem_image.h"
#include "fedrt/cli/parse.h"
#include "fedrt/protocol/families.h"

#ifndef FEDRT_FW_HOST_NAME
#define FEDRT_FW_HOST_NAME "fedrt-fw-host"
#endif

using namespace fedrt;

namespace {

// Prints the error; 2 for what the command line names (docs/cli.md, "Exit
// codes"), 1 (`run`) for a connection or run that failed.
int Fail(const std::string& what, int rc = cli::kUsageError) {
  std::fprintf(stderr, FEDRT_FW_HOST_NAME ": error: %s\n", what.c_str());
  return rc;
}

struct TcpLink {
  std::string host;
  std::string port;
  int fd = -1;
  bool pty = false;  // fd is a pseudo-terminal's master (read/write, not send/recv)
  // --line-noise: `noise` garbage bytes written once after `noise_after` bytes of the client.
  size_t noise = 0, noise_after = 0, written = 0;
  uint32_t noise_seed = 12345;

  int connect_once() {
    if (fd >= 0) ::close(fd);
    fd = -1;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0) return -1;
    for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
      const int s = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
      if (s < 0) continue;
      if (::connect(s, a->ai_addr, a->ai_addrlen) == 0) {
        const int one = 1;
        ::setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        fd = s;
        break;
      }
      ::close(s);
    }
    ::freeaddrinfo(res);
    return fd >= 0 ? 0 : -1;
  }
};

// --line-noise: pseudo-random bytes (a fixed LCG, every value 0..255) onto the
// line, all of them, once; a new session must start after them.
void WriteNoise(TcpLink& l) {
  std::vector<uint8_t> junk(l.noise);
  for (auto& b : junk) {
    l.noise_seed = l.noise_seed * 1103515245u + 12345u;
    b = static_cast<uint8_t>(l.noise_seed >> 16);
  }
  std::fprintf(stderr, FEDRT_FW_HOST_NAME ": line noise: %zu bytes after %zu bytes of the client\n", l.noise, l.written);
  size_t off = 0;
  while (off < junk.size()) {
    const ssize_t r = ::write(l.fd, junk.data() + off, junk.size() - off);
    if (r > 0) {
      off += static_cast<size_t>(r);
    } else if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      break;
    } else {
      pollfd p{l.fd, POLLOUT, 0};
      ::poll(&p, 1, 100);
    }
  }
  l.noise = 0;
}

// A pseudo-terminal for the link: its slave's path goes to `path_file` for the
// coordinator's --serial; the slave is set raw and kept open here, so bytes
// written before the coordinator opens it wait in its queue unaltered.
bool OpenPty(TcpLink& l, const std::string& path_file, std::string& err) {
  const int m = ::posix_openpt(O_RDWR | O_NOCTTY);
  if (m < 0 || ::grantpt(m) != 0 || ::unlockpt(m) != 0) {
    err = std::string("posix_openpt: ") + std::strerror(errno);
    return false;
  }
  const char* name = ::ptsname(m);
  const int s = name == nullptr ? -1 : ::open(name, O_RDWR | O_NOCTTY);
  termios t{};
  if (s < 0 || ::tcgetattr(s, &t) != 0) {
    err = std::string("opening the pseudo-terminal: ") + std::strerror(errno);
    return false;
  }
  ::cfmakeraw(&t);
  ::tcsetattr(s, TCSANOW, &t);
  ::fcntl(m, F_SETFL, ::fcntl(m, F_GETFL) | O_NONBLOCK);
  const std::string tmp = path_file + ".tmp";
  std::ofstream(tmp) << name << "\n";
  if (std::rename(tmp.c_str(), path_file.c_str()) != 0) {
    err = "cannot write --serial-pty file '" + path_file + "'";
    return false;
  }
  l.fd = m;
  l.pty = true;
  return true;
}

// Non-blocking send: bytes taken, 0 when the socket buffer is full, -1 broken.
int LinkWrite(void* ctx, const uint8_t* data, size_t n) {
  auto* l = static_cast<TcpLink*>(ctx);
  if (l->fd < 0) return -1;
  if (l->pty) {
    if (l->noise > 0 && l->written >= l->noise_after) WriteNoise(*l);
    const ssize_t r = ::write(l->fd, data, n);
    if (r >= 0) l->written += static_cast<size_t>(r);
    if (r >= 0) return static_cast<int>(r);
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
  }
  for (;;) {
    const ssize_t r = ::send(l->fd, data, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (r >= 0) return static_cast<int>(r);
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    if (errno != EINTR) return -1;
  }
}

// Non-blocking receive: bytes read, 0 when none are waiting, -1 closed or broken.
int LinkRead(void* ctx, uint8_t* data, size_t n) {
  auto* l = static_cast<TcpLink*>(ctx);
  if (l->fd < 0) return -1;
  if (l->pty) {
    const ssize_t r = ::read(l->fd, data, n);
    if (r > 0) return static_cast<int>(r);
    return r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : -1;
  }
  for (;;) {
    const ssize_t r = ::recv(l->fd, data, n, MSG_DONTWAIT);
    if (r > 0) return static_cast<int>(r);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    if (r < 0 && errno == EINTR) continue;
    return -1;
  }
}

uint32_t LinkMillis(void*) {
  return static_cast<uint32_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

void LinkWait(void* ctx, uint32_t ms, bool write) {
  auto* l = static_cast<TcpLink*>(ctx);
  if (l->fd < 0) return;
  pollfd p{l->fd, static_cast<short>(write ? POLLOUT : POLLIN), 0};
  ::poll(&p, 1, static_cast<int>(std::min<uint32_t>(ms, 1u << 30)));
}

// New TCP connection, retried with backoff for up to a minute.
int LinkReconnect(void* ctx) {
  auto* l = static_cast<TcpLink*>(ctx);
  int backoff = 100;
  for (int waited = 0; waited < 60000; waited += backoff, backoff = std::min(backoff * 2, 2000)) {
    if (l->connect_once() == 0) return 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff));
  }
  return -1;
}

struct LogCtx {
  std::string id;
  bool quiet = false;
};

void Log(void* ctx, const char* line) {
  auto* c = static_cast<LogCtx*>(ctx);
  if (c->quiet) return;
  char ts[32];
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const long ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
  std::fprintf(stderr, "%s.%03ldZ fw %s %s\n", ts, ms, c->id.c_str(), line);
  std::fflush(stderr);
}

bool ReadFile(const std::string& path, std::vector<uint8_t>& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  out.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  return true;
}

bool ParseHex(const std::string& hex, std::vector<uint8_t>& out) {
  if (hex.size() % 2 != 0) return false;
  out.clear();
  for (size_t i = 0; i < hex.size(); i += 2) {
    unsigned v = 0;
    if (std::sscanf(hex.c_str() + i, "%2x", &v) != 1) return false;
    out.push_back(static_cast<uint8_t>(v));
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{FEDRT_FW_HOST_NAME ": the firmware protocol client over TCP", FEDRT_FW_HOST_NAME};
  std::string coordinator, id, key, problem, seed_hex, pty_file, noise;
  bool quiet = false;
  uint32_t handshake_ms = 5000;
  // The workspace of the firmware image this client is built like (cmake/firmware_app.cmake).
  size_t workspace_bytes = fw::FwClient::Families() == protocol::kAllFamilies ? 28672 : 10240;
  auto* coord_opt = app.add_option("--coordinator", coordinator, "HOST:PORT of the coordinator");
  auto* pty_opt = app.add_option("--serial-pty", pty_file,
                                 "instead of TCP, a pseudo-terminal: its path is written to this FILE, for the "
                                 "coordinator's --serial");
  coord_opt->excludes(pty_opt);
  pty_opt->excludes(coord_opt);
  app.add_option("--line-noise", noise,
                 "with --serial-pty: N[@AFTER] garbage bytes onto the line once, after the client wrote AFTER bytes "
                 "(default 0: before its first handshake)");
  app.add_option("--id", id, "device id (the PSK identity)")->required();
  app.add_option("--key", key, "PSK file (hex, one line)")->required();
  app.add_option("--problem", problem, "problem image written by fedrt-fw-provision")->required();
  app.add_option("--seed-hex", seed_hex, "entropy seed of the TLS random generator (default: 32 bytes of /dev/urandom)");
  app.add_option("--handshake-timeout-ms", handshake_ms, "per-read handshake timeout");
  app.add_option("--workspace-bytes", workspace_bytes,
                 "memory for the local oracle and the protocol session (default: the firmware image's)");
  app.add_flag("--quiet", quiet, "no log lines");
  if (int rc = 0; !cli::Parse(app, argc, argv, &rc)) return rc;

  TcpLink link;
  if (pty_file.empty()) {
    if (coordinator.empty()) return Fail("--coordinator HOST:PORT (or --serial-pty FILE) is required");
    const auto colon = coordinator.rfind(':');
    if (colon == std::string::npos) return Fail("--coordinator must be HOST:PORT, got '" + coordinator + "'");
    link.host = coordinator.substr(0, colon);
    link.port = coordinator.substr(colon + 1);
  }
  if (!noise.empty()) {
    const auto at = noise.find('@');
    const std::string n = noise.substr(0, at), after = at == std::string::npos ? "0" : noise.substr(at + 1);
    auto digits = [](const std::string& v) { return !v.empty() && v.size() < 10 && v.find_first_not_of("0123456789") == std::string::npos; };
    if (pty_file.empty()) return Fail("--line-noise needs --serial-pty");
    if (!digits(n) || !digits(after)) return Fail("--line-noise must be N[@AFTER] (byte counts), got '" + noise + "'");
    link.noise = std::stoul(n);
    link.noise_after = std::stoul(after);
  }

  std::vector<uint8_t> psk_file, psk, seed;
  if (!ReadFile(key, psk_file)) return Fail("cannot read PSK file '" + key + "'");
  std::string hex(psk_file.begin(), psk_file.end());
  while (!hex.empty() && (hex.back() == '\n' || hex.back() == '\r' || hex.back() == ' ')) hex.pop_back();
  if (!ParseHex(hex, psk)) return Fail("PSK file '" + key + "' must hold the key as hex on one line");
  if (seed_hex.empty()) {
    std::ifstream r("/dev/urandom", std::ios::binary);
    seed.resize(32);
    if (!r.read(reinterpret_cast<char*>(seed.data()), 32)) return Fail("cannot read /dev/urandom", cli::kRunFailed);
  } else if (!ParseHex(seed_hex, seed)) {
    return Fail("--seed-hex must be hex");
  }
  std::vector<uint8_t> raw;
  if (!ReadFile(problem, raw)) return Fail("cannot read problem image '" + problem + "'");
  std::vector<uint64_t> aligned((raw.size() + 7) / 8);  // 8-byte aligned copy
  std::memcpy(aligned.data(), raw.data(), raw.size());
  auto view = fw::ParseProblemImage(reinterpret_cast<const uint8_t*>(aligned.data()), raw.size());
  if (!view.ok()) return Fail(problem + ": " + view.status().message());

  std::vector<uint64_t> workspace((workspace_bytes + 7) / 8 + 2);  // 16-byte aligned below
  auto* ws = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(workspace.data()) + 15) & ~uintptr_t(15));

  LogCtx log_ctx{id, quiet};
  fw::ClientOptions opt;
  opt.identity.device_id = id.c_str();
  opt.identity.psk = psk.data();
  opt.identity.psk_len = psk.size();
  opt.identity.entropy_seed = seed.data();
  opt.identity.entropy_seed_len = seed.size();
  opt.problem = *view;
  opt.link.ctx = &link;
  opt.link.write = LinkWrite;
  opt.link.read = LinkRead;
  opt.link.now_ms = LinkMillis;
  opt.link.reconnect = pty_file.empty() ? LinkReconnect : nullptr;  // a line is drained, as a UART
  opt.link.wait = LinkWait;
  opt.workspace = ws;
  opt.workspace_bytes = workspace_bytes;
  opt.log = Log;
  opt.log_ctx = &log_ctx;
  opt.handshake_timeout_ms = handshake_ms;
  if (!pty_file.empty()) {
    std::string err;
    if (!OpenPty(link, pty_file, err)) return Fail(err, cli::kRunFailed);
    if (link.noise > 0 && link.noise_after == 0) WriteNoise(link);
  } else if (LinkReconnect(&link) != 0) {
    return Fail("cannot connect to " + coordinator, cli::kRunFailed);
  }

  static fw::FwClient client;
  Status st = client.init(opt);
  if (!st.ok()) return Fail(st.message());
  st = client.run();
  const fw::ClientStats s = client.stats();
  std::fprintf(stderr,
               FEDRT_FW_HOST_NAME ": %s sessions=%u rounds=%u results=%u rejected_frames=%u rejected_records=%u "
               "chunks_in=%u chunks_out=%u tls_heap_max_bytes=%zu tls_heap_bytes=%zu workspace_max_bytes=%zu "
               "workspace_bytes=%zu\n",
               id.c_str(), s.sessions, s.rounds, s.results, s.rejected_frames, s.rejected_records, s.chunks_in,
               s.chunks_out, s.tls_heap_max_bytes, s.tls_heap_bytes, s.workspace_max_bytes, workspace_bytes);
  if (!st.ok()) return Fail(st.message(), cli::kRunFailed);
  return 0;
}
