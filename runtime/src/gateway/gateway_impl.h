#pragma once
// The gateway's event loop object (gateway/gateway.h), shared by its source
// files: gateway.cc (its devices: registration, round messages), upstream.cc
// (the link to the coordinator and what comes down it). Private to the
// gateway module. Host code.

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <asio.hpp>

#include "fedrt.pb.h"
#include "fedrt_gateway.pb.h"
#include "fedrt/coordinator/connection.h"
#include "fedrt/coordinator/refusal_log.h"
#include "fedrt/coordinator/serial_line.h"
#include "fedrt/coordinator/transport.h"
#include "fedrt/gateway/gateway.h"
#include "fedrt/log/log.h"
#include "fedrt/protocol/masked_summer.h"
#include "fedrt/protocol/server_session.h"
#include "fedrt/task/task.h"
#include "fedrt/tls/tls.h"
#include "fedrt/wire/protobuf_codec.h"

namespace fedrt::net::detail {

inline spdlog::logger& Log() { return log::Get("fedrt-gateway"); }

class Gateway : public ConnectionOwner {
 public:
  explicit Gateway(const GatewayOptions& o)
      : opt_(o), acceptor_(io_), refusals_(10, 10000, [](const std::string& line) { Log().warn("{}", line); }) {}
  Status init();
  Status run();

  void on_handshake_done(Connection& c) override;
  void on_handshake_failed(Connection& c, int rc) override;
  void on_frame(Connection& c, const std::string& body) override;
  void on_closed(Connection& c, const std::string& why) override;
  TlsServerConfig& tls() override { return tls_; }
  asio::io_context& io() override { return io_; }
  // Refusals logged within a quota per reason (10 lines each 10 s, the rest counted): a peer cannot fill the log.
  bool log_refusal(std::string_view key) override { return refusals_.admit(key, std::chrono::steady_clock::now()); }

 private:
  // Devices (gateway.cc).
  struct Device {
    std::string id;
    Connection* conn = nullptr;
    bool ready = false;    // answered the task with yes
    bool revoked = false;  // the coordinator said so: refused from then on
    uint32_t chunk_limit = task::kChunkBytes;
    std::string platform;
    std::optional<protocol::RoundId> pending;
    uint64_t bytes_down = 0, bytes_up = 0;  // this round's frames with it (announcement and update, chunks)
  };
  void accept();
  void admit(std::unique_ptr<Transport> t);
  void on_hello(Connection& c, const wire::Hello& h);
  void on_task_reply(Connection& c, const wire::TaskReply& r);
  void on_round_message(Connection& c, const wire::Envelope& env);
  void device_up(uint32_t agent, bool accepted, const std::string& refusal);
  void send_device(uint32_t agent, const wire::Envelope& env);
  // The round (gateway.cc): the partial session's messages out, its partial up.
  void deliver();
  void announce(uint32_t agent);
  void hand_up();
  void arm_deadline();
  uint64_t now_ms() const {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0_).count());
  }

  // Upstream (upstream.cc).
  void connect_upstream();
  void retry_upstream(const std::string& why);
  void send_up(const wire::GatewayEnvelope& ge);
  void on_upstream_frame(const wire::Envelope& env);
  void on_welcome(const wire::GatewayWelcome& w);
  void on_round(const wire::GatewayRound& r);
  void on_result(const wire::GatewayResult& r);
  void on_relayed(const wire::Relayed& r);
  void shutdown(const std::string& why);

  GatewayOptions opt_;
  asio::io_context io_;
  asio::ip::tcp::acceptor acceptor_;
  RefusalLog refusals_;
  asio::steady_timer accept_retry_{io_};
  uint64_t accept_errors_ = 0;
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
  TlsServerConfig tls_;
  std::unordered_map<const Connection*, std::shared_ptr<Connection>> conns_;
  uint64_t next_serial_ = 0;
  std::map<std::string, uint32_t> index_;  // device id -> agent
  std::map<uint32_t, Device> devices_;     // by agent
  wire::Inbound inbound_;
  std::vector<std::shared_ptr<SerialLine>> lines_;  // --serial, one microcontroller each

  // The link to the coordinator.
  TlsClientConfig up_tls_;
  std::shared_ptr<Connection> up_;
  bool welcomed_ = false;
  size_t next_address_ = 0;
  int failures_ = 0;
  asio::steady_timer retry_timer_{io_};
  bool finished_ = false;
  Status fatal_ = Status::Ok();

  // The task and the round.
  bool have_task_ = false;
  task::Task task_{};
  uint32_t heartbeat_ms_ = 0;
  std::unique_ptr<protocol::ServerSession> session_;  // the partial session of (algorithm, run)
  uint32_t session_alg_ = ~0u, session_run_ = ~0u;
  bool handed_up_ = true;     // this round's partial went up (or none is due)
  bool secure_ = false;       // the open round is secure: relayed, masked inputs summed
  protocol::RoundId secure_id_{};
  protocol::MaskedSummer summer_;
  asio::steady_timer deadline_{io_};
  uint64_t armed_for_ = protocol::ServerSession::kNoDeadline;
};

}  // namespace fedrt::net::detail
