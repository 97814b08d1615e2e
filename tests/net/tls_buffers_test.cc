// A Linux device's session with the coordinator: TLS 1.3 with PSK and an
// X25519 exchange, and the coordinator's TLS record buffers after the
// handshake (docs/scale.md, "Memory per connection"): both ends send records
// of at most 2048 bytes, and the host's mbedTLS (cmake/host_mbedtls.cmake:
// variable buffer length, 4096-byte input records) shrinks the session's
// handshake buffers once it ends.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <mbedtls/net_sockets.h>
#include <mbedtls/ssl.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "fedrt/tls/key_exchange.h"
#include "fedrt/tls/tls.h"

namespace fedrt::net {
namespace {

namespace fs = std::filesystem;

// What one session showed: the server side's handshake, identity, record
// size and buffers; the suite the client negotiated; the echo intact.
struct Session {
  int handshake_rc = -1;
  size_t out_frag = 0, in_buf = 0, out_buf = 0;
  std::string identity, client_suite, client_version, server_session;
  bool echoed = false;
};

// The server side's socket, whose outgoing handshake bytes a ServerFlight sees (as the coordinator's do).
struct ObservedNet {
  mbedtls_net_context* net;
  ServerFlight* flight;
  static int Send(void* ctx, const unsigned char* buf, size_t len) {
    auto* self = static_cast<ObservedNet*>(ctx);
    const int n = mbedtls_net_send(self->net, buf, len);
    if (n > 0) self->flight->observe(buf, static_cast<size_t>(n));
    return n;
  }
  static int Recv(void* ctx, unsigned char* buf, size_t len) {
    return mbedtls_net_recv(static_cast<ObservedNet*>(ctx)->net, buf, len);
  }
};

// One device session against a coordinator configuration (psk_ecdhe as
// network.psk_forward_secrecy); the server side echoes a 6000-byte message.
// (void, for ASSERT_*: the results go to `side`.)
void RunSession(bool psk_ecdhe, Session& side) {
  const fs::path dir = fs::temp_directory_path() / ("fedrt_tls_buffers_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string hex(64, 'a');
  std::ofstream(dir / "dev0.psk") << hex << "\n";
  bool ok = false;
  const std::vector<uint8_t> key = HexToBytes(hex, &ok);
  ASSERT_TRUE(ok);
  std::vector<RegistryEntry> reg(1);
  reg[0].id = "dev0";
  reg[0].psk.assign(key.begin(), key.end());
  TlsServerConfig server;
  ASSERT_TRUE(server.init("", "", "", reg, "psk", psk_ecdhe).ok());

  mbedtls_net_context listener, peer;
  mbedtls_net_init(&listener);
  mbedtls_net_init(&peer);
  ASSERT_EQ(mbedtls_net_bind(&listener, "127.0.0.1", "0", MBEDTLS_NET_PROTO_TCP), 0);
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  ASSERT_EQ(getsockname(listener.fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const uint16_t port = ntohs(addr.sin_port);

  std::thread t([&] {
    if (mbedtls_net_accept(&listener, &peer, nullptr, 0, nullptr) != 0) return;
    mbedtls_ssl_context ssl;
    mbedtls_ssl_init(&ssl);
    if (mbedtls_ssl_setup(&ssl, server.conf()) == 0) {
      ServerFlight flight;
      ObservedNet io{&peer, &flight};
      mbedtls_ssl_set_bio(&ssl, &io, ObservedNet::Send, ObservedNet::Recv, nullptr);
      while ((side.handshake_rc = mbedtls_ssl_handshake(&ssl)) == MBEDTLS_ERR_SSL_WANT_READ) {}
      if (side.handshake_rc == 0) {
        bool used_psk = false;
        side.identity = PeerIdentity(server, &ssl, &used_psk);
        side.server_session = TlsSessionName(&ssl, flight);
        side.out_frag = static_cast<size_t>(mbedtls_ssl_get_max_out_record_payload(&ssl));
        side.in_buf = ssl.MBEDTLS_PRIVATE(in_buf_len);
        side.out_buf = ssl.MBEDTLS_PRIVATE(out_buf_len);
        // A 6000-byte message crosses three records each way.
        std::string received;
        unsigned char buf[8192];
        while (received.size() < 6000) {
          const int n = mbedtls_ssl_read(&ssl, buf, sizeof buf);
          if (n <= 0) break;
          received.append(reinterpret_cast<char*>(buf), static_cast<size_t>(n));
        }
        size_t off = 0;
        while (off < received.size()) {
          const int n = mbedtls_ssl_write(&ssl, reinterpret_cast<const unsigned char*>(received.data()) + off,
                                          received.size() - off);
          if (n <= 0) break;
          off += static_cast<size_t>(n);
        }
      }
    }
    mbedtls_ssl_free(&ssl);
  });

  // Should an assertion below end this function early: unblock the server
  // thread's accept and join it, so the test fails rather than terminates.
  struct Join {
    std::thread& t;
    int fd;
    ~Join() {
      if (fd >= 0) ::shutdown(fd, SHUT_RDWR);
      if (t.joinable()) t.join();
    }
  } join{t, listener.fd};
  TlsClient client;
  TlsClientCredentials creds;
  creds.identity = "dev0";
  creds.psk_file = (dir / "dev0.psk").string();
  ASSERT_TRUE(client.init(creds).ok());
  const Status st = client.connect("127.0.0.1", port, 5000);
  ASSERT_TRUE(st.ok()) << st.message();
  side.client_suite = client.suite();
  side.client_version = client.version();
  std::string msg(6000, '\0');
  for (size_t i = 0; i < msg.size(); ++i) msg[i] = static_cast<char>('a' + i % 26);
  ASSERT_TRUE(client.write_all(msg).ok());
  std::string back;
  uint8_t buf[8192];
  while (back.size() < msg.size()) {
    auto n = client.read_some(buf, sizeof buf);
    ASSERT_TRUE(n.ok() && *n > 0);
    back.append(reinterpret_cast<char*>(buf), *n);
  }
  client.close();
  t.join();
  join.fd = -1;
  mbedtls_net_free(&peer);
  mbedtls_net_free(&listener);
  fs::remove_all(dir);
  side.echoed = back == msg;
}

TEST(TlsDeviceSession, Tls13PskWithX25519And2048ByteRecordsAndTheCoordinatorShrinksItsBuffers) {
  Session side;
  RunSession(true, side);
  ASSERT_EQ(side.handshake_rc, 0);
  // Forward secrecy: TLS 1.3 psk_dhe_ke on X25519, the coordinator's first group.
  EXPECT_EQ(side.client_version, "TLSv1.3");
  EXPECT_EQ(side.server_session, "TLSv1.3/X25519");
  EXPECT_EQ(side.client_suite, "TLS1-3-CHACHA20-POLY1305-SHA256");  // fedrt-device's first TLS 1.3 suite
  EXPECT_EQ(side.identity, "dev0");
  // The coordinator's records to this device: 2048 bytes of payload at most (less TLS 1.3's inner padding room).
  EXPECT_GE(side.out_frag, 2048u - 16u);
  EXPECT_LE(side.out_frag, 2048u);
  EXPECT_TRUE(side.echoed);  // whole messages cross 2048-byte records both ways
  // After the handshake: 4096 bytes in (TLS 1.3 negotiates no smaller records), 2048 out, plus
  // header, IV, MAC and padding room: far from 16 KiB each way.
  EXPECT_GE(side.in_buf, 4096u);
  EXPECT_LE(side.in_buf, 4096u + 512u);
  EXPECT_GE(side.out_buf, 2048u);
  EXPECT_LE(side.out_buf, 2048u + 512u);
}

TEST(TlsDeviceSession, WithoutForwardSecrecyTheCoordinatorTakesPskAlone) {
  Session side;
  RunSession(false, side);
  ASSERT_EQ(side.handshake_rc, 0);
  EXPECT_EQ(side.server_session, "TLSv1.3/none");  // psk_ke: no (EC)DHE
  EXPECT_EQ(side.identity, "dev0");
  EXPECT_TRUE(side.echoed);
}

}  // namespace
}  // namespace fedrt::net
