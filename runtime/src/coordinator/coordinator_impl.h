#pragma once
// The coordinator's event loop object (coordinator/coordinator.h), shared by its
// source files: coordinator.cc (devices, rounds, outputs), device_messages.cc
// (a registered device's task reply and round messages), startup_checks.cc
// (the task and what the fleet refuses before it listens), operator.cc
// (the keys folder while running, the HTTP endpoint) and rollback_check.cc (a
// state db behind its devices).
// Private to the net library. Host code.

#include <chrono>
#include <memory>
#include <optional>
#include <map>
#include <unordered_map>
#include <string>
#include <vector>

#include <asio.hpp>

#include "fedrt/coordinator/connection.h"
#include "fedrt/coordinator/log.h"
#include "fedrt/coordinator/coordinator.h"
#include "fedrt/ops/fleet_monitor.h"
#include "fedrt/coordinator/fleet_rounds.h"
#include "fedrt/coordinator/privacy_rounds.h"
#include "fedrt/ops/http_endpoint.h"
#include "fedrt/keys/watch.h"
#include "fedrt/coordinator/admission.h"
#include "fedrt/coordinator/refusal_log.h"
#include "fedrt/keys/gateways.h"
#include "fedrt/coordinator/serial_line.h"
#include "fedrt/coordinator/transport.h"
#include "fedrt/keys/registry.h"
#include "fedrt_gateway.pb.h"
#include "fedrt/coordinator/state_store.h"
#include "fedrt/problems/instance.h"
#include "fedrt/report/evaluation.h"

namespace fedrt::net::detail {

using Registry = DeviceRegistry;

class Coordinator : public ConnectionOwner, public GatewayRoute {
 public:
  explicit Coordinator(const CoordinatorOptions& opt)
      : opt_(opt),
        acceptor_(io_),
        refusals_(static_cast<uint32_t>(opt.network.refusal_log_lines), opt.network.refusal_log_interval_ms,
                  [](const std::string& line) { CoordinatorWarn("{}", line); }) {}
  Status init();
  Status run();

  void on_handshake_done(Connection& c) override;
  void on_handshake_failed(Connection& c, int rc) override;
  void on_frame(Connection& c, const std::string& body) override;
  void on_closed(Connection& c, const std::string& why) override;
  TlsServerConfig& tls() override { return tls_; }
  asio::io_context& io() override { return io_; }
  bool log_refusal(std::string_view key) override { return refusals_.admit(key, std::chrono::steady_clock::now()); }
  void traffic(size_t in, size_t out) override {
    traffic_.in += in;
    traffic_.out += out;
  }
  // GatewayRoute (gateway_links.cc).
  bool routed(uint32_t agent) const override;
  void round_opened(const protocol::ServerSession& session) override;
  void masked_wanted(const protocol::ServerSession& session) override;
  void round_published(const protocol::ServerSession& session) override;
  std::vector<std::vector<uint32_t>> by_gateway(const std::vector<uint32_t>& agents, bool routed_only) const;

 private:
  // Gateways (gateway_links.cc, docs/gateways.md).
  struct GatewayLink {
    std::string id;
    std::vector<uint32_t> agents;  // provisioned behind it
    Connection* conn = nullptr;
    bool welcomed = false;
  };
  Status load_gateways();
  void on_gateway_frame(Connection& c, const wire::Envelope& env);
  void send_gateway(size_t g, const wire::GatewayEnvelope& ge);
  void relay(uint32_t agent, const wire::Envelope& env);  // to a device behind its gateway
  void relay_to(size_t g, uint32_t agent, const wire::Envelope& env);
  void gateway_down(size_t g, const std::string& why);
  void gateway_key(uint32_t agent, const RegistryEntry& e);  // a rotated PSK to the device's gateway
  void device_down(uint32_t agent, const std::string& why);

  Status prepare_task();
  Status listen();
  Status serve_http();
  void watch_keys();
  void apply_keys(const KeysWatch::Changes& changes);
  void revoke(const Revocation& r);
  void set_limits();
  void accept();
  void admit(asio::ip::tcp::socket sock);
  // A new session on a socket or a serial line (peer: its address, nullptr for a line).
  void admit(std::unique_ptr<Transport> transport, const asio::ip::address* peer);
  Status open_lines();  // network.serial (--serial): opened before the run starts
  // A refusal's warning, written only while its key's quota lasts (refusals_).
  template <class... Args>
  void refused(std::string_view key, fmt::format_string<Args...> f, Args&&... args) {
    if (log_refusal(key)) CoordinatorWarn(f, std::forward<Args>(args)...);
  }
  void on_hello(Connection& c, const wire::Hello& h);
  void on_task_reply(Connection& c, const wire::TaskReply& r);
  void on_round_message(Connection& c, const wire::Envelope& env);
  void flooded(Connection& c, const char* what);  // a message over the connection's budget, dropped
  void maybe_start(bool timeout);
  // network.idle_timeout_ms: drops registered devices that heartbeat but fell silent.
  // heartbeat_ms = idle_timeout_ms / 4: the devices' heartbeat interval (Welcome) and the idle
  // check's period, so a silent device is dropped 1 to 1.25 timeouts after it was last heard.
  long heartbeat_ms() const { return opt_.network.idle_timeout_ms / 4; }
  void watch_idle();
  void drop_idle();
  void after_event();
  // A device shows a round this state db does not hold (rollback_check.cc): the run stops.
  void stop_behind(const std::string& device, const std::string& lag);
  void arm_deadline();
  Status finish();
  void linger();
  uint64_t now_ms() const {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0_).count());
  }

  CoordinatorOptions opt_;
  asio::io_context io_;
  asio::ip::tcp::acceptor acceptor_;
  RefusalLog refusals_;  // refusals and rejections logged at a bounded rate
  asio::steady_timer deadline_{io_};
  asio::steady_timer start_timer_{io_};
  uint64_t armed_for_ = protocol::ServerSession::kNoDeadline;
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
  TlsServerConfig tls_;
  std::unique_ptr<StateStore> store_;
  Registry registry_;
  std::unordered_map<const Connection*, std::shared_ptr<Connection>> conns_;
  std::map<uint64_t, Connection*> handshaking_;  // not yet registered, by serial (accept order)
  Admission admission_;                          // set_limits: who gets a connection (coordinator/admission.h)
  asio::steady_timer accept_retry_{io_};
  std::vector<std::shared_ptr<SerialLine>> lines_;  // network.serial, one microcontroller each
  uint64_t next_serial_ = 0;
  bool finished_ = false;
  Status fatal_ = Status::Ok();

  task::Task task_{};
  // The task as the privacy accountant sees it: asynchronous steps are not
  // Poisson samples of the fleet, so they compose without amplification
  // (participation 1; docs/async.md).
  task::Task AccountedTask() const {
    task::Task t = task_;
    if (opt_.experiment.async.async()) t.participation = 1.0;
    return t;
  }
  std::vector<std::string> names_;
  // Agents whose shard in the coordinator's copy did not read, and why: refused
  // from the start, told so at their Hello (docs/data.md).
  std::map<uint32_t, std::string> bad_shards_;
  std::unique_ptr<problems::Instance> instance_;
  std::unique_ptr<report::Evaluation> eval_;
  FleetRounds rounds_;
  Traffic traffic_;  // every connection's socket bytes (the round line's rx_bytes, tx_bytes)
  PrivacyRounds privacy_;  // central DP-FedAvg: the sessions' noise, epsilon, the budget (docs/privacy.md)
  std::vector<std::optional<protocol::RoundId>> pending_;  // per agent, from its Hello
  // Per agent: the last round-message rejection and how many identical ones
  // followed it (the rest of a refused update's chunks): logged and answered once.
  std::vector<std::string> last_rejection_;
  std::vector<uint64_t> repeated_rejections_;
  // Per agent: its Hello asked for heartbeats, and when (now_ms) it was last
  // heard from or last owed the open round something (drop_idle).
  std::vector<char> heartbeats_;
  std::vector<uint64_t> heard_ms_;
  asio::steady_timer idle_timer_{io_};
  wire::Inbound inbound_;
  std::unique_ptr<FleetMonitor> monitor_;  // the operator's view (dashboard, metrics)
  std::unique_ptr<HttpEndpoint> http_;     // --http: serves monitor_
  std::unique_ptr<KeysWatch> keys_;        // `keys add` / `keys revoke` while running
  asio::steady_timer keys_timer_{io_};
  std::vector<GatewayLink> gateways_;
  std::map<std::string, size_t> gateway_index_;
  std::unordered_map<const Connection*, size_t> gateway_of_conn_;
  std::vector<int> via_;      // per agent: the gateway it is up behind, or -1
  std::vector<int> allowed_;  // per agent: the gateway provisioned for it, or -1
};

}  // namespace fedrt::net::detail
