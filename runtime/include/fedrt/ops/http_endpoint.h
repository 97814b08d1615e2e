#pragma once
// The coordinator's HTTP endpoint (docs/dashboard.md): the dashboard's static
// files (compiled in, ops/dashboard_assets.h), the JSON of FleetMonitor
// (GET /api/run, /api/rounds?since=K, /api/devices) and Prometheus metrics
// (GET /metrics), served by cpp-httplib on threads of its own so that the
// event loop never waits for a browser; request heads are bounded in size
// and time before anything parses them (runtime/src/ops/http_gate.h). Bound
// to a loopback address it is open; bound elsewhere every request needs the
// keys folder's token (Authorization: Bearer TOKEN, or the cookie set by
// /?token=TOKEN), else 401. It reads no file and accepts no body. Host code.

#include <cstdint>
#include <memory>
#include <string>

#include "fedrt/core/status.h"
#include "fedrt/ops/fleet_monitor.h"

namespace fedrt::net {

// "PORT", "ADDR:PORT" or "[IPv6]:PORT" (no address: 127.0.0.1).
Status ParseHttpAddress(const std::string& spec, std::string* host, uint16_t* port);
bool IsLoopbackAddress(const std::string& host);
// KEYS/http.token (64 hex characters, mode 0600), created on first use; an
// existing one that group or others may read or write is refused (chmod 600).
Result<std::string> LoadOrCreateHttpToken(const std::string& keys_dir);

struct HttpOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;   // 0: any free port
  std::string token;   // non-empty: every request must carry it
  int threads = 4;     // threads that answer complete requests (heads: runtime/src/ops/http_gate.h)
};

class HttpEndpoint {
 public:
  // Binds and starts serving `monitor` (which must outlive the endpoint).
  static Result<std::unique_ptr<HttpEndpoint>> Start(const HttpOptions& options, const FleetMonitor& monitor);
  ~HttpEndpoint();  // stops serving and joins the threads
  uint16_t port() const { return port_; }

 private:
  struct Impl;
  HttpEndpoint() = default;
  std::unique_ptr<Impl> impl_;
  uint16_t port_ = 0;
};

}  // namespace fedrt::net
