// fedrt-swarm: many devices in one process, for load on one machine
// (docs/gateways.md, "Scale on one machine"). One asio event loop holds N
// device sessions, each a real one: its own TLS 1.3 PSK handshake with its
// own identity over the coordinator's Connection in the client role (as a
// gateway's link up, gateway/gateway.h), the wire's frames, Hello, Welcome
// and TaskReply, and the protocol's device agent (protocol/device_agent.h)
// computing the device's local work from the announcement, so the
// coordinator's results are the simulator's.
//
// What a device keeps between its messages is small: its TLS session and
// PSK configuration (tls/tls.h TlsPskClientConfig: the random generator is
// the process's), its connection, and its session's state region
// (ClientSession::state, a few hundred bytes at small d: what a Linux device
// writes to its state file). One device agent and one workspace serve them
// all, since one thread does everything: a device is seated on the agent
// when a message comes for it, its session rebuilt in the shared workspace
// and its state restored (the agent host's session_opened, as a Linux device
// after a restart), and its state saved back when another device takes the
// seat. The problem instance is built once from the task and shared.
//
// Limits: plain rounds (a secure round's SecAgg+ secrets live in the
// session, not in its state region: the swarm refuses such tasks) and
// messages that travel whole (d at most task::kChunkBytes / 8).
//
//   fedrt-swarm --coordinator HOST:PORT[,HOST:PORT...] --keys KEYS [--first I] [--count N]
//               [--connect-rate R] [--no-forward-secrecy] [--log-level L]
//
// Device i (its registry index) connects to address i mod K of the list: one
// address for a flat fleet, G gateways' addresses in gateway order for
// devices provisioned behind them by `fedrt-keys gateways` (device i behind
// gw(i mod G)). Progress on stderr; one summary line on stdout at the end.

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <asio.hpp>
#include <fmt/format.h>

#include "fedrt.pb.h"
#include "fedrt/cli/parse.h"
#include "fedrt/coordinator/connection.h"
#include "fedrt/coordinator/transport.h"
#include "fedrt/log/log.h"
#include "fedrt/problems/instance.h"
#include "fedrt/protocol/device_agent.h"
#include "fedrt/task/fingerprint.h"
#include "fedrt/task/limits.h"
#include "fedrt/task/names.h"
#include "fedrt/task/platform.h"
#include "fedrt/tls/tls.h"
#include "fedrt/wire/frame.h"
#include "fedrt/wire/protobuf_codec.h"

namespace {

using namespace fedrt;
using Clock = std::chrono::steady_clock;

spdlog::logger& Log() { return log::Get("fedrt-swarm"); }

long ProcKb(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) return std::atol(line.c_str() + std::strlen(key));
  return 0;
}

struct SwarmOptions {
  std::vector<std::string> addresses;
  std::string keys;
  long first = 0, count = -1;
  double connect_rate = 500;  // handshakes started per second
  bool forward_secrecy = true;
  long give_up_ms = 120000;   // a device without a session for this long gives up
};

class Swarm : public net::ConnectionOwner {
 public:
  explicit Swarm(const SwarmOptions& o) : opt_(o), agent_(*this) {}
  Status init();
  int run();

  // ConnectionOwner (coordinator/connection.h): each connection's serial is its device's slot.
  void on_handshake_done(net::Connection& c) override;
  void on_handshake_failed(net::Connection& c, int rc) override;
  void on_frame(net::Connection& c, const std::string& body) override;
  void on_closed(net::Connection& c, const std::string& why) override;
  net::TlsServerConfig& tls() override { return no_server_; }  // the peer identity of a client: none
  asio::io_context& io() override { return io_; }
  bool log_refusal(std::string_view) override { return false; }

  // The device agent's host (protocol/device_agent.h), for the seated device.
  using Agent = protocol::DeviceAgent<double, protocol::kAllFamilies, Swarm>;
  using Session = Agent::Session;
  static protocol::AgentLimits limits() { return protocol::AgentLimits{}; }
  static const char* WireRefusal(const task::Task& t) {
    if (t.secagg.enabled) return "fedrt-swarm runs plain rounds: a secure round's secrets are not in the parked state";
    if (8ull * t.problem.dim > task::kChunkBytes) return "fedrt-swarm takes whole messages: d at most kChunkBytes / 8";
    return nullptr;
  }
  static int Entropy(void*, uint64_t, uint32_t, uint8_t*, size_t) { return -1; }
  Arena* session_arena(size_t bytes);
  void session_opened(Session& s, const protocol::RoundId& id);
  bool has_saved(const protocol::RoundId& id) const;
  uint32_t now_ms() const {
    return static_cast<uint32_t>(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0_).count());
  }
  Status persist(bool) {
    save_seated();
    return Status::Ok();
  }
  Status send(const protocol::ClientMessage& m);
  void worked(const protocol::RoundId& id, const protocol::ClientMessage&, bool, uint32_t);
  void masked(const protocol::RoundId&) {}
  void settled(const protocol::Settled& s);
  void broadcast_received(const protocol::RoundId&, uint64_t, uint32_t) {}
  void upload_done(const protocol::RoundId&, uint32_t, bool, uint64_t) {}

 private:
  enum class Phase : uint8_t { kQueued, kConnecting, kHandshake, kHello, kReady, kDone, kFailed };
  struct Device {
    std::string id;
    uint32_t index = 0;
    uint32_t address = 0;
    Phase phase = Phase::kQueued;
    bool has_state = false, pending = false;
    uint32_t last_ok_s = 0;  // seconds since start: the last session, or the start
    protocol::RoundId state_id{}, pending_id{};
    net::TlsPskClientConfig tls;
    std::shared_ptr<net::Connection> conn;
    std::vector<uint8_t> state;  // the session's state region between its messages
  };
  static constexpr uint32_t kNone = ~0u;
  static constexpr int kMaxHandshakes = 256;  // started and not finished

  void tick();
  void connect(uint32_t slot);
  void again(uint32_t slot, const std::string& why);
  void fail(uint32_t slot, const std::string& why);
  void leave(Device& d);  // out of the counts of its phase, queued
  void finish_device(uint32_t slot);
  void on_welcome(uint32_t slot, net::Connection& c, const wire::Welcome& w);
  void refuse(uint32_t slot, net::Connection& c, const std::string& why);
  void seat(uint32_t slot);
  void save_seated();
  void progress(bool last);
  uint32_t seconds() const { return now_ms() / 1000; }

  SwarmOptions opt_;
  asio::io_context io_;
  asio::steady_timer ticker_{io_};
  Clock::time_point t0_ = Clock::now(), last_progress_ = Clock::now();
  net::TlsRandom rng_;
  net::TlsServerConfig no_server_;
  std::vector<asio::ip::tcp::endpoint> endpoints_;
  std::deque<std::unique_ptr<Device>> devices_;
  std::deque<uint32_t> queue_;                       // to connect now
  std::deque<std::pair<uint32_t, uint32_t>> later_;  // (due ms, slot): to connect again after a pause
  double budget_ = 0;
  int handshaking_ = 0;
  long connected_ = 0, ready_ = 0, done_ = 0, failed_ = 0, reconnects_ = 0, warnings_ = 0;
  uint64_t updates_ = 0, settled_ = 0;
  uint32_t last_round_ = 0;

  // The task (from the first Welcome) and what all devices share.
  bool have_task_ = false;
  task::Task task_{};
  uint64_t task_print_ = 0;
  std::unique_ptr<problems::Instance> instance_;
  problems::LocalProblem<double> local_{};
  long base_kb_ = 0, instance_kb_ = 0, ready_kb_ = 0;
  wire::Inbound inbound_;
  std::vector<uint8_t> workspace_;
  std::optional<Arena> arena_;
  uint32_t seated_ = kNone;
  Agent agent_;
};

Status Swarm::init() {
  auto registry = net::LoadRegistry(opt_.keys + "/registry.tsv");
  if (!registry.ok()) return registry.status();
  FEDRT_TRY(rng_.init("fedrt-swarm"));
  std::sort(registry->begin(), registry->end(), [](const auto& a, const auto& b) { return a.index < b.index; });
  for (const std::string& a : opt_.addresses) {
    const size_t colon = a.rfind(':');
    asio::ip::tcp::resolver resolver(io_);
    std::error_code ec;
    auto r = resolver.resolve(a.substr(0, colon), a.substr(colon + 1), ec);
    if (ec || r.empty()) return Status(StatusCode::kInvalidArgument, fmt::format("--coordinator {}: {}", a, ec.message()));
    endpoints_.push_back(r.begin()->endpoint());
  }
  base_kb_ = ProcKb("VmRSS:");
  for (const net::RegistryEntry& e : *registry) {
    if (e.index < opt_.first || (opt_.count >= 0 && e.index >= opt_.first + opt_.count)) continue;
    auto d = std::make_unique<Device>();
    d->id = e.id;
    d->index = e.index;
    d->address = static_cast<uint32_t>(e.index % endpoints_.size());
    FEDRT_TRY(d->tls.init(e.id, e.psk, rng_, opt_.forward_secrecy));
    queue_.push_back(static_cast<uint32_t>(devices_.size()));
    devices_.push_back(std::move(d));
  }
  if (devices_.empty()) return Status(StatusCode::kInvalidArgument, "no device of the registry in --first/--count");
  rlimit nofile{};
  getrlimit(RLIMIT_NOFILE, &nofile);
  if (devices_.size() + 64 > nofile.rlim_cur)
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("{} devices need as many sockets, and this process may open {} files: run several "
                              "swarms with --first/--count", devices_.size(), static_cast<unsigned long>(nofile.rlim_cur)));
  Log().info("swarm devices={} first={} addresses={} connect_rate={} tls_config_bytes={}", devices_.size(),
             devices_.front()->index, fmt::join(opt_.addresses, ","), opt_.connect_rate, sizeof(mbedtls_ssl_config));
  return Status::Ok();
}

int Swarm::run() {
  tick();
  io_.run();
  progress(true);
  for (auto& d : devices_)  // the connections' pending waits end here, before their configurations go
    if (d->conn) d->conn->close("end");
  io_.restart();
  io_.poll();
  const long hwm = ProcKb("VmHWM:");
  const double n = static_cast<double>(devices_.size());
  std::printf("swarm devices=%zu done=%ld failed=%ld reconnects=%ld updates=%llu settled=%llu rounds_seen=%u "
              "base_kib=%ld instance_kib=%ld ready_kib=%ld hwm_kib=%ld per_device_ready_bytes=%.0f "
              "per_device_peak_bytes=%.0f tls_config_bytes=%zu\n",
              devices_.size(), done_, failed_, reconnects_, static_cast<unsigned long long>(updates_),
              static_cast<unsigned long long>(settled_), last_round_, base_kb_, instance_kb_, ready_kb_, hwm,
              ready_kb_ > 0 ? 1024.0 * static_cast<double>(ready_kb_ - base_kb_ - instance_kb_) / n : 0.0,
              1024.0 * static_cast<double>(hwm - base_kb_ - instance_kb_) / n, sizeof(mbedtls_ssl_config));
  std::fflush(stdout);
  return failed_ == 0 ? 0 : 1;
}

// Every 10 ms: connections started at --connect-rate (at most kMaxHandshakes in
// flight), devices whose pause is over queued again, progress every 2 s.
void Swarm::tick() {
  const uint32_t now = now_ms();
  while (!later_.empty() && later_.front().first <= now) {
    queue_.push_back(later_.front().second);
    later_.pop_front();
  }
  budget_ = std::min(budget_ + opt_.connect_rate * 0.01, std::max(1.0, opt_.connect_rate * 0.01));
  while (budget_ >= 1 && !queue_.empty() && handshaking_ < kMaxHandshakes) {
    budget_ -= 1;
    const uint32_t slot = queue_.front();
    queue_.pop_front();
    connect(slot);
  }
  if (Clock::now() - last_progress_ >= std::chrono::seconds(2)) progress(false);
  if (done_ + failed_ == static_cast<long>(devices_.size())) return io_.stop();
  ticker_.expires_after(std::chrono::milliseconds(10));
  ticker_.async_wait([this](const std::error_code& ec) {
    if (!ec) tick();
  });
}

void Swarm::progress(bool last) {
  last_progress_ = Clock::now();
  std::fprintf(stderr, "[swarm] %s%.1f s: connected %ld/%zu ready %ld rounds_seen %u updates %llu settled %llu "
               "reconnects %ld done %ld failed %ld rss_mib %.1f\n", last ? "end " : "", now_ms() / 1000.0, connected_,
               devices_.size(), ready_, last_round_, static_cast<unsigned long long>(updates_),
               static_cast<unsigned long long>(settled_), reconnects_, done_, failed_, ProcKb("VmRSS:") / 1024.0);
}

void Swarm::connect(uint32_t slot) {
  Device& d = *devices_[slot];
  d.phase = Phase::kConnecting;
  ++handshaking_;
  auto sock = std::make_shared<asio::ip::tcp::socket>(io_);
  sock->async_connect(endpoints_[d.address], [this, slot, sock](const std::error_code& ec) {
    Device& dev = *devices_[slot];
    if (ec) {
      --handshaking_;
      return again(slot, "connect: " + ec.message());
    }
    auto c = std::make_shared<net::Connection>(this, std::make_unique<net::TcpTransport>(std::move(*sock)), slot);
    if (Status st = c->start(dev.tls.conf()); !st.ok()) {
      --handshaking_;
      return again(slot, std::string(st.message()));
    }
    dev.conn = c;
    dev.phase = Phase::kHandshake;
    c->pump();
  });
}

// The device connects again after a pause, unless it has had no session for --give-up-ms.
void Swarm::again(uint32_t slot, const std::string& why) {
  Device& d = *devices_[slot];
  if (seconds() - d.last_ok_s > opt_.give_up_ms / 1000) return fail(slot, "no session for --give-up-ms: " + why);
  if (++warnings_ <= 20 || spdlog::should_log(spdlog::level::debug))
    Log().warn("device={} reconnects in 1 s: {}", d.id, why);
  ++reconnects_;
  d.phase = Phase::kQueued;
  later_.emplace_back(now_ms() + 1000, slot);
}

void Swarm::leave(Device& d) {
  if (d.phase == Phase::kHandshake) --handshaking_;
  if (d.phase == Phase::kHello || d.phase == Phase::kReady) --connected_;
  if (d.phase == Phase::kReady) --ready_;
  d.phase = Phase::kQueued;
}

void Swarm::fail(uint32_t slot, const std::string& why) {
  Device& d = *devices_[slot];
  if (d.phase == Phase::kFailed || d.phase == Phase::kDone) return;
  Log().error("device={} index={} gave up: {}", d.id, d.index, why);
  leave(d);
  d.phase = Phase::kFailed;
  ++failed_;
  if (d.conn) d.conn->close("gave up");
}

void Swarm::on_handshake_done(net::Connection& c) {
  const uint32_t slot = static_cast<uint32_t>(c.serial());
  Device& d = *devices_[slot];
  --handshaking_;
  ++connected_;
  d.last_ok_s = seconds();
  d.phase = Phase::kHello;
  c.set_registered(static_cast<int>(d.index));  // frames up to the Linux bound from now on (a Welcome carries the task)
  wire::Envelope env;
  wire::Hello* h = env.mutable_hello();
  h->set_protocol_version(wire::kProtocolVersion);
  h->set_device_id(d.id);
  h->set_platform(task::kPlatformName);
  h->set_heartbeats(false);
  if (d.pending) {  // an update not seen settled: the coordinator replays its result
    h->set_has_pending(true);
    h->set_pending_algorithm(d.pending_id.algorithm);
    h->set_pending_run(d.pending_id.run);
    h->set_pending_round(d.pending_id.round);
  }
  c.send(env);
}

void Swarm::on_handshake_failed(net::Connection& c, int rc) {
  Device& d = *devices_[static_cast<uint32_t>(c.serial())];
  if (++warnings_ <= 20 || spdlog::should_log(spdlog::level::debug))
    Log().warn("device={} handshake failed: {}", d.id, net::TlsErrorString(rc));
}

void Swarm::on_closed(net::Connection& c, const std::string& why) {
  const uint32_t slot = static_cast<uint32_t>(c.serial());
  Device& d = *devices_[slot];
  if (d.conn.get() != &c) return;
  auto keep = d.conn;
  d.conn.reset();
  asio::post(io_, [keep] {});  // the connection is inside its own call
  if (seated_ == slot) {  // a transfer cut off with the connection is announced again
    save_seated();
    agent_.assign(nullptr, 0, nullptr);
    seated_ = kNone;
  }
  if (d.phase == Phase::kDone || d.phase == Phase::kFailed) return;
  leave(d);
  again(slot, why);
}

void Swarm::finish_device(uint32_t slot) {
  Device& d = *devices_[slot];
  leave(d);
  d.phase = Phase::kDone;
  ++done_;
  if (d.conn) d.conn->close("shutdown");
}

void Swarm::on_frame(net::Connection& c, const std::string& body) {
  const uint32_t slot = static_cast<uint32_t>(c.serial());
  Device& d = *devices_[slot];
  wire::Envelope env;
  wire::WireError err;
  if (!wire::ParseEnvelope(body, env, err)) return c.close("undecodable frame: " + err.message);
  switch (env.body_case()) {
    case wire::Envelope::kWelcome: return on_welcome(slot, c, env.welcome());
    case wire::Envelope::kAck: return;
    case wire::Envelope::kShutdown: return finish_device(slot);
    case wire::Envelope::kError: {
      const auto r = env.error().reason();
      if (r == wire::ERROR_IDENTITY || r == wire::ERROR_CONFIG_MISMATCH || r == wire::ERROR_PROTOCOL_VERSION)
        return fail(slot, fmt::format("refused: {}: {}", wire::ErrorReasonName(r), env.error().message()));
      if (++warnings_ <= 20 || spdlog::should_log(spdlog::level::debug))
        Log().warn("device={} coordinator error {}: {}", d.id, wire::ErrorReasonName(r), env.error().message());
      return;
    }
    default: break;
  }
  if (d.phase != Phase::kReady) return c.close("a round message before the task was accepted");
  if (!inbound_.decode(env, err)) return c.close("from coordinator: " + err.message);
  const protocol::ServerMessage m = inbound_.from_coordinator();
  if (m.kind == protocol::MessageKind::kNone) return c.close("from coordinator: a message a device does not take");
  seat(slot);
  Status st = agent_.on_message(m);
  while (st.ok() && agent_.uploading()) st = agent_.send_next_chunk();
  if (!st.ok() && (++warnings_ <= 20 || spdlog::should_log(spdlog::level::debug)))
    Log().warn("device={} {}", d.id, st.message());
}

// Welcome: the task, built once into the shared instance; each device checks
// its index and the task and answers.
void Swarm::on_welcome(uint32_t slot, net::Connection& c, const wire::Welcome& w) {
  Device& d = *devices_[slot];
  task::Task t;
  if (Status st = wire::DecodeTask(w.task(), t); !st.ok()) return refuse(slot, c, std::string(st.message()));
  if (!have_task_) {
    const long before = ProcKb("VmRSS:");
    auto inst = problems::Instance::Build(t, {});
    if (!inst.ok()) return refuse(slot, c, fmt::format("the task's problem: {}", inst.status().message()));
    if (task::ProblemFingerprint((*inst)->problem()) != task::ProblemFingerprint(t.problem))
      return refuse(slot, c, "the problem built here differs from the coordinator's (fingerprint mismatch)");
    instance_ = std::move(*inst);
    instance_kb_ = ProcKb("VmRSS:") - before;
    task_ = t;
    task_print_ = task::TaskFingerprint(t);
    have_task_ = true;
    Log().info("task problem={} d={} agents={} instance_kib={}", task::ProblemKindName(t.problem.kind), t.problem.dim,
               t.problem.agents, instance_kb_);
  } else if (task::TaskFingerprint(t) != task_print_) {
    return refuse(slot, c, "another task than the other devices of this swarm took");
  }
  if (w.device_index() != d.index)
    return refuse(slot, c, fmt::format("the coordinator calls it agent {}, the registry {}", w.device_index(), d.index));
  if (d.index >= instance_->agents()) return refuse(slot, c, "not an agent of this task");
  if (d.phase == Phase::kReady) return;  // a Welcome again on the same connection
  seat(slot);
  if (const char* why = agent_.refusal(size_t{1} << 30)) return refuse(slot, c, why);
  wire::Envelope env;
  env.mutable_task_reply()->set_accepted(true);
  c.send(env);
  d.phase = Phase::kReady;
  if (++ready_ == static_cast<long>(devices_.size())) {
    ready_kb_ = ProcKb("VmRSS:");
    Log().info("all {} devices ready after {:.1f} s rss_kib={}", devices_.size(), now_ms() / 1000.0, ready_kb_);
  }
}

void Swarm::refuse(uint32_t slot, net::Connection& c, const std::string& why) {
  wire::Envelope env;
  env.mutable_task_reply()->set_accepted(false);
  env.mutable_task_reply()->set_reason(why.substr(0, task::kMaxReasonChars));
  c.send(env);
  fail(slot, "refused the task: " + why);
}

// The agent serves `slot` from now on: the device seated before it keeps its state.
void Swarm::seat(uint32_t slot) {
  if (seated_ == slot) return;
  save_seated();
  const Device& d = *devices_[slot];
  local_ = instance_->local(d.index);
  agent_.assign(&task_, d.index, &local_);
  seated_ = slot;
}

void Swarm::save_seated() {
  const Session* s = seated_ == kNone ? nullptr : agent_.session();
  if (s == nullptr) return;
  Device& d = *devices_[seated_];
  d.state.assign(s->state(), s->state() + s->state_size());
  d.state.shrink_to_fit();
  d.state_id = protocol::RoundId{s->algorithm(), s->run(), 0};
  d.has_state = true;
}

Arena* Swarm::session_arena(size_t bytes) {
  arena_.reset();
  if (workspace_.size() < bytes + 64) workspace_.resize(bytes + 64);
  std::fill(workspace_.begin(), workspace_.begin() + static_cast<long>(bytes + 64), uint8_t{0});
  return &arena_.emplace(workspace_.data(), bytes + 64);
}

bool Swarm::has_saved(const protocol::RoundId& id) const {
  if (seated_ == kNone) return false;
  const Device& d = *devices_[seated_];
  return d.has_state && d.state_id.algorithm == id.algorithm && d.state_id.run == id.run;
}

void Swarm::session_opened(Session& s, const protocol::RoundId& id) {
  if (!has_saved(id)) return;
  const Device& d = *devices_[seated_];
  if (Status st = s.restore(d.state.data(), d.state.size()); !st.ok())
    Log().warn("device={} state not restored: {}", d.id, st.message());
}

Status Swarm::send(const protocol::ClientMessage& m) {
  wire::Envelope env;
  if (!wire::Encode(m, env)) return Status::Internal("swarm: unexpected session output");
  Device& d = *devices_[seated_];
  if (!d.conn) return Status(StatusCode::kUnavailable, "not connected");
  d.conn->send(env);
  return Status::Ok();
}

void Swarm::worked(const protocol::RoundId& id, const protocol::ClientMessage&, bool, uint32_t) {
  Device& d = *devices_[seated_];
  d.pending = true;
  d.pending_id = id;
  ++updates_;
}

void Swarm::settled(const protocol::Settled& s) {
  devices_[seated_]->pending = false;
  ++settled_;
  last_round_ = std::max(last_round_, s.id.round == protocol::kInitRound ? 0u : s.id.round + 1);
}

}  // namespace

int main(int argc, char** argv) {
  SwarmOptions o;
  std::string coordinators, log_level = "warn";
  bool no_forward_secrecy = false;
  CLI::App app{"fedrt-swarm: N lightweight devices in one process on one event loop, each with its own TLS 1.3 "
               "PSK session and the real protocol (docs/gateways.md, \"Scale on one machine\")", "fedrt-swarm"};
  app.add_option("--coordinator", coordinators,
                 "HOST:PORT[,HOST:PORT...]: device i connects to address i mod K (the coordinator, or G gateways "
                 "in gateway order)")->required();
  app.add_option("--keys", o.keys, "the fleet's keys folder (fedrt-keys --out): its registry.tsv")->required();
  app.add_option("--first", o.first, "the first device index to run (default 0)")->check(CLI::Range(0L, 1L << 30));
  app.add_option("--count", o.count, "how many devices from --first (default: the rest of the registry)")
      ->check(CLI::Range(1L, 1L << 30));
  app.add_option("--connect-rate", o.connect_rate, "handshakes started per second (default 500)")
      ->check(CLI::Range(1.0, 1e6));
  app.add_option("--give-up-ms", o.give_up_ms, "a device without a session this long gives up (default 120000)")
      ->check(CLI::Range(1000L, 1L << 40));
  app.add_flag("--no-forward-secrecy", no_forward_secrecy,
               "offer TLS 1.3 psk_ke only (no X25519): for a coordinator or gateway that allows it");
  fedrt::log::AddLevelFlag(app, log_level);
  if (int rc = 0; !fedrt::cli::Parse(app, argc, argv, &rc)) return rc;
  (void)fedrt::log::SetLevel(log_level);
  o.forward_secrecy = !no_forward_secrecy;
  for (size_t at = 0; at <= coordinators.size();) {
    const size_t comma = std::min(coordinators.find(',', at), coordinators.size());
    const std::string a = coordinators.substr(at, comma - at);
    if (a.find(':') == std::string::npos || a.back() == ':') {
      fmt::print(stderr, "fedrt-swarm: error: --coordinator '{}': expected HOST:PORT\n", a);
      return fedrt::cli::kUsageError;
    }
    o.addresses.push_back(a);
    at = comma + 1;
  }
  rlimit nofile{};  // one socket per device
  getrlimit(RLIMIT_NOFILE, &nofile);
  nofile.rlim_cur = nofile.rlim_max;
  setrlimit(RLIMIT_NOFILE, &nofile);
  Swarm swarm(o);
  if (fedrt::Status st = swarm.init(); !st.ok()) {
    fmt::print(stderr, "fedrt-swarm: error: {}\n", st.message());
    return st.code() == fedrt::StatusCode::kInvalidArgument || st.code() == fedrt::StatusCode::kNotFound
               ? fedrt::cli::kUsageError
               : fedrt::cli::kRunFailed;
  }
  return swarm.run();
}
