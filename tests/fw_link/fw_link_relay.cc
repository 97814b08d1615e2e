// fw-link-relay: a misbehaving link between one firmware device and the real
// coordinator, for the firmware link tests (tests/fw_link). Listens on
// 127.0.0.1 (port written to --port-file) and relays each device connection to
// the coordinator. Modes:
//   corrupt-record  plain TCP relay that flips one byte of the N-th TLS
//                   application-data record sent by the coordinator (the
//                   device must reject the record and rejoin);
//   bad-frames      terminates TLS with the device's PSK on both sides (the
//                   relay is provisioned like the coordinator) and, before the
//                   N-th round announcement, sends the device an undecodable
//                   frame and an oversized frame (20000 bytes: over every
//                   firmware image's bound, under the hosts' 64 KiB; the
//                   device must reject both and go on with the round);
//   huge-frame      like bad-frames, but announces a frame of 1 MB (beyond any
//                   limit: the device must drop the session and rejoin).
// Every tampering is logged on stderr ("relay: ...").

#include <poll.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <mbedtls/net_sockets.h>
#include <mbedtls/ssl.h>

#include "fedrt/tls/tls.h"
#include "fedrt/wire/protobuf_codec.h"
#include "fedrt/wire/frame.h"

using namespace fedrt;

namespace {

constexpr uint32_t kOversized = 20000;  // over fedrt_wire_Envelope_size of every firmware image

int Fail(const std::string& what) {
  std::fprintf(stderr, "fw-link-relay: error: %s\n", what.c_str());
  return 2;
}

void Say(const std::string& what) {
  std::fprintf(stderr, "relay: %s\n", what.c_str());
  std::fflush(stderr);
}

int ConnectTcp(const std::string& host, const std::string& port) {
  mbedtls_net_context n;
  mbedtls_net_init(&n);
  if (mbedtls_net_connect(&n, host.c_str(), port.c_str(), MBEDTLS_NET_PROTO_TCP) != 0) return -1;
  return n.fd;
}

bool SendAll(int fd, const uint8_t* p, size_t n) {
  while (n > 0) {
    const ssize_t r = ::send(fd, p, n, MSG_NOSIGNAL);
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// Raw relay; flips the last byte of coordinator->device application-data record
// number `target` (1-based, counted over the whole run) once.
void RelayCorrupt(int dev, int coord, int target, int& seen, bool& done) {
  std::vector<uint8_t> pending;  // coordinator->device bytes not yet forwarded (record parsing)
  uint8_t buf[16384];
  for (;;) {
    pollfd p[2] = {{dev, POLLIN, 0}, {coord, POLLIN, 0}};
    if (::poll(p, 2, -1) < 0) return;
    if (p[0].revents) {
      const ssize_t r = ::recv(dev, buf, sizeof buf, 0);
      if (r <= 0 || !SendAll(coord, buf, static_cast<size_t>(r))) return;
    }
    if (p[1].revents) {
      const ssize_t r = ::recv(coord, buf, sizeof buf, 0);
      if (r <= 0) return;
      pending.insert(pending.end(), buf, buf + r);
      size_t off = 0;
      while (pending.size() - off >= 5) {
        const size_t len = (size_t(pending[off + 3]) << 8) | pending[off + 4];
        if (pending.size() - off < 5 + len) break;
        if (pending[off] == 23 && !done && ++seen == target) {
          pending[off + 5 + len - 1] ^= 0x5A;
          done = true;
          Say("corrupted TLS record " + std::to_string(seen) + " (" + std::to_string(len) + " bytes) to the device");
        }
        off += 5 + len;
      }
      if (!SendAll(dev, pending.data(), off)) return;
      pending.erase(pending.begin(), pending.begin() + static_cast<long>(off));
    }
  }
}

bool SslWriteAll(mbedtls_ssl_context* ssl, const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    const int rc = mbedtls_ssl_write(ssl, reinterpret_cast<const unsigned char*>(bytes.data()) + off,
                                     bytes.size() - off);
    if (rc == MBEDTLS_ERR_SSL_WANT_READ || rc == MBEDTLS_ERR_SSL_WANT_WRITE) continue;
    if (rc < 0) return false;
    off += static_cast<size_t>(rc);
  }
  return true;
}

std::string Frame(const std::string& body, uint32_t declared_len) {
  std::string f(4, '\0');
  f[0] = static_cast<char>(declared_len >> 24);
  f[1] = static_cast<char>(declared_len >> 16);
  f[2] = static_cast<char>(declared_len >> 8);
  f[3] = static_cast<char>(declared_len);
  return f + body;
}

// TLS-terminating relay; before announcement number `target` sends the
// device an undecodable frame and an oversized frame.
void RelayBadFrames(mbedtls_net_context* dev_net, net::TlsServerConfig& server, const std::string& keys,
                    const std::string& host, uint16_t port, int target, bool huge, int& seen, bool& done) {
  mbedtls_ssl_context ssl;
  mbedtls_ssl_init(&ssl);
  struct Guard {
    mbedtls_ssl_context* s;
    ~Guard() { mbedtls_ssl_free(s); }
  } guard{&ssl};
  if (mbedtls_ssl_setup(&ssl, server.conf()) != 0) return Say("TLS setup failed");
  mbedtls_ssl_set_bio(&ssl, dev_net, mbedtls_net_send, mbedtls_net_recv, nullptr);
  int rc;
  while ((rc = mbedtls_ssl_handshake(&ssl)) != 0) {
    if (rc != MBEDTLS_ERR_SSL_WANT_READ && rc != MBEDTLS_ERR_SSL_WANT_WRITE)
      return Say("device handshake failed: " + net::TlsErrorString(rc));
  }
  bool used_psk = false;
  const std::string id = net::PeerIdentity(server, &ssl, &used_psk);
  Say("device " + id + " connected");
  net::TlsClient up;
  net::TlsClientCredentials creds;
  creds.identity = id;
  creds.psk_file = keys + "/devices/" + id + "/device.psk";
  if (!up.init(creds).ok()) return Say("no PSK for " + id);
  Status st = up.connect(host, port, 20);
  if (!st.ok()) return Say(std::string("cannot reach the coordinator: ") + st.message());
  wire::FrameDecoder dec;
  uint8_t buf[16384];
  for (;;) {
    // device -> coordinator
    pollfd p{dev_net->fd, POLLIN, 0};
    if (mbedtls_ssl_get_bytes_avail(&ssl) > 0 || ::poll(&p, 1, 20) > 0) {
      rc = mbedtls_ssl_read(&ssl, buf, sizeof buf);
      if (rc == MBEDTLS_ERR_SSL_WANT_READ || rc == MBEDTLS_ERR_SSL_WANT_WRITE) continue;
      if (rc <= 0) return Say("device closed: " + net::TlsErrorString(rc));
      if (!up.write_all(std::string(reinterpret_cast<char*>(buf), static_cast<size_t>(rc))).ok())
        return Say("coordinator write failed");
    }
    // coordinator -> device, frame by frame
    auto n = up.read_some(buf, sizeof buf);
    if (!n.ok()) return Say(std::string("coordinator closed: ") + n.status().message());
    if (*n == 0) continue;
    dec.feed(buf, *n);
    std::string body;
    wire::WireError err;
    while (dec.next(body, err) == 1) {
      wire::Envelope env;
      if (wire::ParseEnvelope(body, env, err) && env.body_case() == wire::Envelope::kAnnounce && !done &&
          ++seen == target) {
        done = true;
        if (huge) {  // a length header only: the device cannot skip 1 MB
          if (!SslWriteAll(&ssl, Frame(std::string(), 1000000))) return Say("device write failed");
          Say("sent a frame header of 1000000 bytes before announcement " + std::to_string(seen));
          continue;
        }
        const std::string garbage(12, '\xff');
        const std::string oversized(kOversized, '\0');
        if (!SslWriteAll(&ssl, Frame(garbage, 12)) || !SslWriteAll(&ssl, Frame(oversized, kOversized)))
          return Say("device write failed");
        Say("sent an undecodable frame (12 bytes) and an oversized frame (" + std::to_string(kOversized) +
            " bytes) before announcement " + std::to_string(seen));
      }
      if (!SslWriteAll(&ssl, Frame(body, static_cast<uint32_t>(body.size())))) return Say("device write failed");
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fw-link-relay: a misbehaving link between a firmware device and the coordinator"};
  std::string coordinator, mode, port_file, keys;
  int target = 3;
  app.add_option("--coordinator", coordinator, "HOST:PORT of the coordinator")->required();
  app.add_option("--mode", mode, "corrupt-record, bad-frames or huge-frame")->required();
  app.add_option("--port-file", port_file, "write the listening port here")->required();
  app.add_option("--keys", keys, "fleet keys directory (bad-frames: the relay terminates TLS)");
  app.add_option("--at", target, "tamper with the N-th application record (corrupt-record) or announcement");
  CLI11_PARSE(app, argc, argv);
  if (mode != "corrupt-record" && mode != "bad-frames" && mode != "huge-frame")
    return Fail("--mode must be corrupt-record, bad-frames or huge-frame");
  if (mode != "corrupt-record" && keys.empty()) return Fail("--mode " + mode + " needs --keys");
  const auto colon = coordinator.rfind(':');
  if (colon == std::string::npos) return Fail("--coordinator must be HOST:PORT");
  const std::string host = coordinator.substr(0, colon), cport = coordinator.substr(colon + 1);

  net::TlsServerConfig server;
  if (mode != "corrupt-record") {
    auto reg = net::LoadRegistry(keys + "/registry.tsv");
    if (!reg.ok()) return Fail(reg.status().message());
    Status st = server.init(keys + "/ca.crt", keys + "/coordinator.crt", keys + "/coordinator.key", *reg, "psk");
    if (!st.ok()) return Fail(st.message());
  }
  mbedtls_net_context listener;
  mbedtls_net_init(&listener);
  if (mbedtls_net_bind(&listener, "127.0.0.1", "0", MBEDTLS_NET_PROTO_TCP) != 0) return Fail("cannot listen");
  sockaddr_in addr{};
  socklen_t alen = sizeof addr;
  ::getsockname(listener.fd, reinterpret_cast<sockaddr*>(&addr), &alen);
  {
    std::ofstream f(port_file + ".tmp");
    f << ntohs(addr.sin_port) << "\n";
  }
  std::rename((port_file + ".tmp").c_str(), port_file.c_str());
  int seen = 0;
  bool done = false;
  for (;;) {  // one device connection at a time; a reconnecting device gets a fresh upstream
    mbedtls_net_context dev;
    mbedtls_net_init(&dev);
    if (mbedtls_net_accept(&listener, &dev, nullptr, 0, nullptr) != 0) continue;
    if (mode == "corrupt-record") {
      const int up = ConnectTcp(host, cport);
      if (up < 0) {
        Say("cannot reach the coordinator");
      } else {
        RelayCorrupt(dev.fd, up, target, seen, done);
        ::close(up);
      }
    } else {
      RelayBadFrames(&dev, server, keys, host, static_cast<uint16_t>(std::stoi(cport)), target, mode == "huge-frame",
                     seen, done);
    }
    Say("connection closed");
    mbedtls_net_free(&dev);
  }
}
