#include "fedrt/net/coordinator.h"

#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include <asio.hpp>
#include <fmt/format.h>

#include "fedrt/algorithms/lsa.h"
#include "fedrt/analysis/fedlsa_bias.h"
#include "fedrt/compression/bit_stream.h"
#include "fedrt/compression/diana.h"
#include "fedrt/core/arena.h"
#include "fedrt/core/rng.h"
#include "fedrt/net/state_store.h"
#include "fedrt/net/tls.h"
#include "fedrt/net/wire.h"
#include "fedrt/net/log_time.h"
#include "fedrt/secagg/integer_uplink.h"
#include "fedrt/secagg/server.h"
#include "fedrt/sim/outputs.h"
#include "fedrt/sim/simulator.h"
#include "../sim/compressed_link.h"  // CompressionSettingsJson: summary.json as the simulator writes it

namespace fedrt::net {

using algorithms::IsSampled;
using algorithms::LsaAlgorithm;
using algorithms::LsaHyper;
using algorithms::LsaServer;
using algorithms::RoundPlan;

namespace {

constexpr uint64_t kBitsPerScalar = 64;  // raw float64 payloads (encoding 0)
constexpr uint32_t kEncodingRaw = 0, kEncodingCodec = 1;
constexpr int kHandshakeTimeoutMs = 10000;

// One line per event on stderr: "TIME coordinator EVENT key=value ...".
template <class... Args>
void Log(fmt::format_string<Args...> f, Args&&... args) {
  std::string line = UtcTimestamp() + " coordinator " + fmt::format(f, std::forward<Args>(args)...) + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

class Coordinator;

// One TLS connection driven by readiness notifications of the event loop.
class Conn : public std::enable_shared_from_this<Conn> {
 public:
  enum class State { kHandshake, kAwaitHello, kRegistered, kClosed };

  Conn(Coordinator* co, asio::ip::tcp::socket sock, uint64_t serial);
  ~Conn() { mbedtls_ssl_free(&ssl_); }

  Status start(const mbedtls_ssl_config* conf);
  void pump();
  void send(const wire::Envelope& env);
  void send_error(wire::ErrorReason reason, const std::string& message, bool then_close);
  void close(const std::string& why);

  State state() const { return state_; }
  void set_registered() {
    state_ = State::kRegistered;
    hs_timer_.cancel();
  }
  const mbedtls_ssl_context* ssl() const { return &ssl_; }
  const std::string& peer() const { return peer_; }
  const std::string& identity() const { return identity_; }
  int device = -1;  // agent index once registered
  uint64_t serial;

 private:
  static int BioSend(void* ctx, const unsigned char* buf, size_t len);
  static int BioRecv(void* ctx, unsigned char* buf, size_t len);
  void wait_read();
  void wait_write();
  bool flush();  // false when the connection failed

  Coordinator* co_;
  asio::ip::tcp::socket sock_;
  asio::steady_timer hs_timer_;
  mbedtls_ssl_context ssl_;
  FrameDecoder dec_;
  std::string out_;
  size_t out_off_ = 0;
  State state_ = State::kHandshake;
  std::string peer_;
  std::string identity_;
  bool reading_ = false, writing_ = false, close_after_flush_ = false;
  std::string close_reason_;
};

class Coordinator {
 public:
  explicit Coordinator(const CoordinatorOptions& opt) : opt_(opt), acceptor_(io_) {}
  Status init();
  Status run();

  // Called by connections.
  void on_frame(Conn& c, const std::string& body);
  void on_closed(Conn& c, const std::string& why);
  void on_handshake_failed(Conn& c, int rc);
  void on_handshake_done(Conn& c);
  TlsServerConfig& tls() { return tls_; }
  asio::io_context& io() { return io_; }

 private:
  struct Phase {
    uint32_t alg = 0, run = 0, round = 0;
    bool valid = false;
  };
  void accept();
  void on_hello(Conn& c, const wire::Hello& h);
  void on_update(Conn& c, const wire::Update& u);
  // Secure aggregation (fedrt.proto "Secure aggregation"): one SecAgg+ round per
  // model round over the sampled devices, phase by phase.
  Status sa_begin();
  void sa_receive(Conn& c, const wire::Envelope& env);
  void sa_check_complete();
  void sa_advance(const char* by);
  void sa_fail(const std::string& why);
  void sa_send(uint32_t u, const wire::Envelope& env);
  void sa_dump(uint32_t u, const wire::Envelope& env);
  void maybe_start();
  void start_next_round();
  void announce(Conn& c);
  void close_round(const char* by);
  void arm_deadline();
  Status finish();
  Result<sim::SimResult> build_result();
  std::string experiment_identity() const;
  Phase next_phase() const;

  CoordinatorOptions opt_;
  asio::io_context io_;
  asio::ip::tcp::acceptor acceptor_;
  asio::steady_timer deadline_{io_};
  asio::steady_timer start_timer_{io_};
  TlsServerConfig tls_;
  std::unique_ptr<StateStore> store_;
  std::map<std::string, uint32_t> registry_;  // id -> agent index
  std::vector<std::string> ids_by_index_;
  std::set<std::shared_ptr<Conn>> conns_;
  std::vector<Conn*> device_conn_;  // by agent index (nullptr: offline)
  uint64_t next_serial_ = 0;
  Status fatal_ = Status::Ok();

  // Experiment.
  std::optional<problems::TdProblem> problem_;
  int dim_ = 0;
  uint32_t agents_ = 0;
  uint64_t fingerprint_ = 0;
  std::vector<LsaAlgorithm> algs_;
  std::set<std::tuple<uint32_t, uint32_t, uint32_t>> done_;  // closed (alg, run, round)
  std::map<std::pair<uint32_t, uint32_t>, std::vector<double>> last_theta_;  // (alg, run) -> latest theta

  // The open round.
  bool started_ = false, round_open_ = false, finished_ = false;
  Phase cur_;
  RoundPlan plan_{};
  std::vector<uint8_t> server_mem_;
  LsaServer<double> server_;
  std::pair<uint32_t, uint32_t> server_key_{~0u, ~0u};
  std::vector<char> sampled_, reported_;
  std::vector<uint32_t> members_;
  uint32_t n_sampled_ = 0;
  std::chrono::steady_clock::time_point round_t0_;
  long rounds_closed_here_ = 0;
  std::vector<double> scratch_;

  // Compressed uplink (encoding 1, see fedrt.proto): the server's mirror V_c of
  // every device for the current (algorithm, run); empty = 0. Persisted with
  // each round for the members (StateStore mirrors), reloaded on a restart.
  bool compressed_ = false;
  std::vector<std::vector<double>> mirror_;
  std::vector<uint8_t> codec_mem_;
  compression::CompressedDifference<double> codec_;
  uint64_t bits_up_round_ = 0;
  // Shared-scale rounding without control variates (as the simulator's
  // IntegerUplink): the round sums the devices' b-bit integers exactly and
  // dequantizes once at the close, theta_t + Delta S / m - clip, so the plain
  // and the secure fleet give the same bits as the simulator.
  bool int_sum_ = false;
  std::vector<uint64_t> int_acc_;

  // Secure aggregation: the SecAgg+ server of the open round; ids u = position
  // of the agent among the sampled ones (ascending). Phase 1..4 = advertise,
  // shares, masked, unmask (0: no secure round open).
  bool secure_ = false;
  secagg::SecAggServer sa_;
  secagg::RoundParams sa_p_{};
  int sa_phase_ = 0;
  std::vector<uint32_t> sa_agent_;   // u -> agent
  std::vector<int> sa_id_;           // agent -> u (-1: not in the round)
  std::vector<char> sa_expected_, sa_answered_, sa_left_;  // left: lost its connection after advertising
  uint64_t sa_down_bytes_ = 0;
  std::string sa_failure_;
};

// ---------------------------------------------------------------- Conn

Conn::Conn(Coordinator* co, asio::ip::tcp::socket sock, uint64_t s)
    : serial(s), co_(co), sock_(std::move(sock)), hs_timer_(co->io()) {
  mbedtls_ssl_init(&ssl_);
  std::error_code ec;
  auto ep = sock_.remote_endpoint(ec);
  peer_ = ec ? "?" : fmt::format("{}:{}", ep.address().to_string(), ep.port());
}

Status Conn::start(const mbedtls_ssl_config* conf) {
  std::error_code ec;
  sock_.non_blocking(true, ec);
  int rc = mbedtls_ssl_setup(&ssl_, conf);
  if (rc != 0) return Status(StatusCode::kInternal, "ssl setup: " + TlsErrorString(rc));
  mbedtls_ssl_set_bio(&ssl_, this, &Conn::BioSend, &Conn::BioRecv, nullptr);
  auto self = shared_from_this();
  hs_timer_.expires_after(std::chrono::milliseconds(kHandshakeTimeoutMs));
  hs_timer_.async_wait([self](const std::error_code& e) {
    if (!e && self->state_ != State::kRegistered && self->state_ != State::kClosed) {
      Log("refused peer={} stage={} reason=timeout: no completed handshake/registration within {} ms", self->peer_,
          self->state_ == State::kHandshake ? "handshake" : "registration", kHandshakeTimeoutMs);
      self->close("handshake timeout");
    }
  });
  return Status::Ok();
}

int Conn::BioSend(void* ctx, const unsigned char* buf, size_t len) {
  auto* c = static_cast<Conn*>(ctx);
  const ssize_t n = ::send(c->sock_.native_handle(), buf, len, MSG_NOSIGNAL);
  if (n >= 0) return static_cast<int>(n);
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return MBEDTLS_ERR_SSL_WANT_WRITE;
  return MBEDTLS_ERR_NET_SEND_FAILED;
}

int Conn::BioRecv(void* ctx, unsigned char* buf, size_t len) {
  auto* c = static_cast<Conn*>(ctx);
  const ssize_t n = ::recv(c->sock_.native_handle(), buf, len, 0);
  if (n > 0) return static_cast<int>(n);
  if (n == 0) return MBEDTLS_ERR_NET_CONN_RESET;
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return MBEDTLS_ERR_SSL_WANT_READ;
  return MBEDTLS_ERR_NET_RECV_FAILED;
}

void Conn::wait_read() {
  if (reading_ || state_ == State::kClosed) return;
  reading_ = true;
  auto self = shared_from_this();
  sock_.async_wait(asio::ip::tcp::socket::wait_read, [self](const std::error_code& ec) {
    self->reading_ = false;
    if (!ec) self->pump();
  });
}

void Conn::wait_write() {
  if (writing_ || state_ == State::kClosed) return;
  writing_ = true;
  auto self = shared_from_this();
  sock_.async_wait(asio::ip::tcp::socket::wait_write, [self](const std::error_code& ec) {
    self->writing_ = false;
    if (!ec) self->pump();
  });
}

bool Conn::flush() {
  while (out_off_ < out_.size()) {
    const int rc = mbedtls_ssl_write(&ssl_, reinterpret_cast<const unsigned char*>(out_.data()) + out_off_,
                                     out_.size() - out_off_);
    if (rc == MBEDTLS_ERR_SSL_WANT_WRITE || rc == MBEDTLS_ERR_SSL_WANT_READ) {
      wait_write();
      return true;
    }
    if (rc < 0) {
      close("write failed: " + TlsErrorString(rc));
      return false;
    }
    out_off_ += static_cast<size_t>(rc);
  }
  out_.clear();
  out_off_ = 0;
  if (close_after_flush_) {
    close(close_reason_);
    return false;
  }
  return true;
}

void Conn::send(const wire::Envelope& env) {
  if (state_ == State::kClosed || state_ == State::kHandshake || close_after_flush_) return;
  out_ += EncodeFrame(env);
  flush();
}

void Conn::send_error(wire::ErrorReason reason, const std::string& message, bool then_close) {
  wire::Envelope env;
  env.mutable_error()->set_reason(reason);
  env.mutable_error()->set_message(message.substr(0, 127));
  send(env);
  if (then_close && state_ != State::kClosed) {
    close_after_flush_ = true;
    close_reason_ = std::string(ErrorReasonName(reason)) + ": " + message;
    flush();
  }
}

void Conn::pump() {
  if (state_ == State::kClosed) return;
  auto self = shared_from_this();  // callbacks may drop the coordinator's reference
  if (state_ == State::kHandshake) {
    const int rc = mbedtls_ssl_handshake(&ssl_);
    if (rc == MBEDTLS_ERR_SSL_WANT_READ) return wait_read();
    if (rc == MBEDTLS_ERR_SSL_WANT_WRITE) return wait_write();
    if (rc != 0) {
      co_->on_handshake_failed(*this, rc);
      close("handshake failed");
      return;
    }
    bool used_psk = false;
    identity_ = PeerIdentity(co_->tls(), &ssl_, &used_psk);
    state_ = State::kAwaitHello;
    co_->on_handshake_done(*this);
    if (state_ == State::kClosed) return;
  }
  if (!flush()) return;
  if (close_after_flush_) return;  // stop reading; waiting for the error to drain
  unsigned char buf[16384];
  for (;;) {
    const int rc = mbedtls_ssl_read(&ssl_, buf, sizeof buf);
    if (rc > 0) {
      dec_.feed(buf, static_cast<size_t>(rc));
      std::string body;
      WireError err;
      int k;
      while ((k = dec_.next(body, err)) == 1) {
        co_->on_frame(*this, body);
        if (state_ == State::kClosed || close_after_flush_) return;
      }
      if (k < 0) {
        Log("rejected device={} peer={} reason={}: {} (connection closed)", identity_, peer_,
            ErrorReasonName(err.reason), err.message);
        send_error(err.reason, err.message, true);
        return;
      }
      continue;
    }
    if (rc == MBEDTLS_ERR_SSL_WANT_READ) return wait_read();
    if (rc == MBEDTLS_ERR_SSL_WANT_WRITE) return wait_write();
    if (rc == 0 || rc == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY || rc == MBEDTLS_ERR_NET_CONN_RESET)
      close("closed by peer");
    else
      close("read failed: " + TlsErrorString(rc));
    return;
  }
}

void Conn::close(const std::string& why) {
  if (state_ == State::kClosed) return;
  const bool was_open = state_ != State::kHandshake;
  state_ = State::kClosed;
  std::error_code ec;
  hs_timer_.cancel();
  if (was_open) mbedtls_ssl_close_notify(&ssl_);
  sock_.close(ec);
  co_->on_closed(*this, why);
}

// ---------------------------------------------------------------- Coordinator

std::string Coordinator::experiment_identity() const {
  const auto& c = opt_.experiment;
  std::string id = fmt::format("fp={:016x};algs={};step={};H={};p={};q={};T={};R={};seed={}", fingerprint_,
                               sim::AlgorithmList(c.algorithms), c.step, c.local_steps, c.effective_comm_prob(),
                               c.participation, c.rounds, c.runs, c.seed);
  if (c.compression.enabled()) {  // a state db's mirrors V_c belong to one quantizer
    const auto& q = c.compression.quantizer;
    id += fmt::format(";quantizer={};s={};eg={};b={};clip={};cv={}", sim::QuantizerKindName(q.kind), q.levels,
                      q.elias_gamma, q.bits, q.clip, c.compression.control_variates);
  }
  return id;
}

Status Coordinator::init() {
  const auto& cfg = opt_.experiment;
  FEDRT_TRY(sim::Validate(cfg));
  FEDRT_TRY(ValidateNetwork(opt_.network));
  for (const auto& name : cfg.algorithms) {
    auto a = sim::LsaAlgorithmFromName(name);
    if (!a.ok()) return a.status();
    algs_.push_back(*a);
  }
  auto p = sim::BuildProblem(cfg);
  if (!p.ok()) return p.status();
  problem_ = std::move(*p);
  dim_ = problem_->lsa.dim;
  agents_ = static_cast<uint32_t>(problem_->agents());
  if (dim_ > kMaxDim)
    return Status(StatusCode::kInvalidArgument, fmt::format("dimension {} exceeds the wire maximum {}", dim_, kMaxDim));
  fingerprint_ = ProblemFingerprint(cfg);
  compressed_ = cfg.compression.enabled();
  if (compressed_) {
    if (cfg.compression.downlink)
      return Status(StatusCode::kInvalidArgument,
                    std::string("compression.downlink is simulator-only: the coordinator broadcasts theta_t as raw "
                                "float64 (set downlink = false)"));
    codec_mem_.assign(sizeof(double) * 2 * static_cast<size_t>(dim_) + 2 * Arena::kAlignment, 0);
    Arena arena(codec_mem_.data(), codec_mem_.size());
    auto cd = compression::CompressedDifference<double>::create(arena, dim_, cfg.compression.quantizer,
                                                                cfg.compression.control_variates);
    if (!cd.ok()) return cd.status();
    codec_ = *cd;
  }
  secure_ = cfg.secagg.enabled;
  int_sum_ = compressed_ && !secure_ && cfg.compression.quantizer.kind == compression::QuantizerKind::kRounding &&
             !cfg.compression.control_variates;
  if (secure_) {
    if (cfg.compression.quantizer.kind != compression::QuantizerKind::kRounding || cfg.compression.control_variates)
      return Status(StatusCode::kInvalidArgument,
                    std::string("secure_aggregation over the network needs quantizer = \"rounding\" and "
                                "control_variates = false (the coordinator only sees sums, not each V_c)"));
    if (cfg.secagg.dropout > 0.0)
      return Status(StatusCode::kInvalidArgument,
                    std::string("compression.secagg_dropout is simulator-only: a fleet's dropouts are real (set it to 0)"));
  }

  const std::string keys = opt_.network.keys;
  auto reg = LoadRegistry(keys + "/registry.tsv");
  if (!reg.ok()) return reg.status();
  ids_by_index_.assign(agents_, "");
  for (const auto& e : *reg) {
    if (e.index >= agents_) continue;  // provisioned for a larger fleet: not an agent of this experiment
    registry_[e.id] = e.index;
    ids_by_index_[e.index] = e.id;
  }
  if (registry_.size() < agents_)
    Log("warning registry={} provisions {} of the experiment's {} agents", keys + "/registry.tsv", registry_.size(),
        agents_);
  FEDRT_TRY(tls_.init(keys + "/ca.crt", keys + "/coordinator.crt", keys + "/coordinator.key", *reg,
                      opt_.network.auth));

  auto st = StateStore::Open(opt_.network.state);
  if (!st.ok()) return st.status();
  store_ = std::move(*st);
  FEDRT_TRY(store_->check_experiment(experiment_identity()));
  auto rounds = store_->load_rounds();
  if (!rounds.ok()) return rounds.status();
  for (const auto& r : *rounds) {
    done_.insert({r.algorithm, r.run, r.round});
    last_theta_[{r.algorithm, r.run}] = r.theta;
  }
  if (!rounds->empty()) {
    const auto& r = rounds->back();
    Log("resume state={} completed_rounds={} last=alg:{} run:{} round:{}", opt_.network.state, rounds->size(),
        cfg.algorithms[r.algorithm], r.run, r.round);
  }
  device_conn_.assign(agents_, nullptr);
  sampled_.assign(agents_, 0);
  reported_.assign(agents_, 0);
  server_mem_.resize(LsaServer<double>::ArenaBytes(dim_) + 256);

  asio::ip::tcp::endpoint ep(asio::ip::make_address(opt_.network.listen), static_cast<uint16_t>(opt_.network.port));
  std::error_code ec;
  acceptor_.open(ep.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(ep, ec);
  if (!ec) acceptor_.listen(4096, ec);
  if (ec)
    return Status(StatusCode::kUnavailable,
                  fmt::format("cannot listen on {}:{}: {}", opt_.network.listen, opt_.network.port, ec.message()));
  const uint16_t port = acceptor_.local_endpoint().port();
  if (!opt_.port_file.empty()) {
    const std::string tmp = opt_.port_file + ".tmp";
    std::ofstream(tmp) << port << "\n";
    std::rename(tmp.c_str(), opt_.port_file.c_str());
  }
  Log("listening address={}:{} agents={} d={} algorithms={} auth={} deadline_ms={} quorum={}", opt_.network.listen,
      port, agents_, dim_, sim::AlgorithmList(cfg.algorithms), opt_.network.auth, opt_.network.deadline_ms,
      opt_.network.quorum);
  return Status::Ok();
}

void Coordinator::accept() {
  acceptor_.async_accept([this](const std::error_code& ec, asio::ip::tcp::socket sock) {
    if (finished_) return;
    if (!ec) {
      auto c = std::make_shared<Conn>(this, std::move(sock), next_serial_++);
      Status st = c->start(tls_.conf());
      if (st.ok()) {
        conns_.insert(c);
        c->pump();
      } else {
        Log("refused peer={} stage=setup reason={}", c->peer(), st.message());
      }
    } else if (ec != asio::error::operation_aborted) {
      Log("accept error={}", ec.message());
    }
    if (acceptor_.is_open()) accept();
  });
}

void Coordinator::on_handshake_failed(Conn& c, int rc) {
  // Reason as mbedTLS reports it, plus the unknown PSK identity if that was it.
  const std::string rejected = tls_.take_rejected_identity(c.ssl());
  std::string why = TlsErrorString(rc);
  if (!rejected.empty()) why += fmt::format(" [PSK identity '{}' is not provisioned]", rejected);
  if (rc == MBEDTLS_ERR_SSL_INVALID_RECORD || rc == MBEDTLS_ERR_SSL_BAD_HS_CLIENT_HELLO)
    why += " [not a TLS 1.2 client hello / plaintext or corrupt record]";
  if (rc == MBEDTLS_ERR_SSL_INVALID_MAC) why += " [record MAC check failed: wrong pre-shared key or tampered record]";
  if (rc == MBEDTLS_ERR_X509_CERT_VERIFY_FAILED) why += " [client certificate not signed by the fleet CA]";
  if (rc == MBEDTLS_ERR_SSL_UNKNOWN_IDENTITY) why += " [unknown PSK identity]";
  if (rc == MBEDTLS_ERR_SSL_BAD_HS_FINISHED) why += " [wrong pre-shared key]";
  Log("refused peer={} stage=handshake reason={}", c.peer(), why);
}

void Coordinator::on_handshake_done(Conn& c) {
  if (c.identity().empty()) {
    Log("refused peer={} stage=handshake reason=no authenticated identity", c.peer());
    c.close("no identity");
    return;
  }
  Log("tls peer={} identity={}", c.peer(), c.identity());
}

void Coordinator::on_closed(Conn& c, const std::string& why) {
  tls_.take_rejected_identity(c.ssl());
  if (c.device >= 0 && device_conn_[static_cast<size_t>(c.device)] == &c) {
    device_conn_[static_cast<size_t>(c.device)] = nullptr;
    Log("disconnected device={} index={} reason={}", c.identity(), c.device, why);
    (void)store_->upsert_device(c.identity(), static_cast<uint32_t>(c.device), "disconnected");
    // After the keys are advertised a lost connection is a dropout: the device
    // leaves the secure round (its SecAggDevice state is gone or stale).
    if (secure_ && round_open_ && sa_phase_ > 0 && sa_id_[static_cast<size_t>(c.device)] >= 0) {
      const size_t u = static_cast<size_t>(sa_id_[static_cast<size_t>(c.device)]);
      if (sa_phase_ >= 2 || sa_answered_[u]) {
        sa_left_[u] = 1;
        sa_expected_[u] = sa_answered_[u];  // an answer it already gave still counts in this phase
        asio::post(io_, [this] { sa_check_complete(); });
      }
    }
  }
  for (auto it = conns_.begin(); it != conns_.end(); ++it) {
    if (it->get() == &c) {
      // Keep the object alive until the current handler returns.
      auto keep = *it;
      conns_.erase(it);
      asio::post(io_, [keep] {});
      break;
    }
  }
}

void Coordinator::on_frame(Conn& c, const std::string& body) {
  wire::Envelope env;
  WireError err;
  if (!ParseEnvelope(body, env, err)) {
    Log("rejected device={} peer={} reason={}: {} (connection closed)", c.identity(), c.peer(),
        ErrorReasonName(err.reason), err.message);
    c.send_error(err.reason, err.message, true);
    return;
  }
  if (c.state() == Conn::State::kAwaitHello) {
    if (env.body_case() != wire::Envelope::kHello) {
      Log("rejected device={} peer={} reason=not_registered: first message must be hello (connection closed)",
          c.identity(), c.peer());
      c.send_error(wire::ERROR_NOT_REGISTERED, "first message must be hello", true);
      return;
    }
    on_hello(c, env.hello());
    return;
  }
  switch (env.body_case()) {
    case wire::Envelope::kUpdate: on_update(c, env.update()); break;
    case wire::Envelope::kSecaggAdvertise:
    case wire::Envelope::kSecaggShares:
    case wire::Envelope::kSecaggMasked:
    case wire::Envelope::kSecaggUnmask: sa_receive(c, env); break;
    default:
      Log("rejected device={} reason=malformed: unexpected message type {}", c.identity(),
          static_cast<int>(env.body_case()));
      c.send_error(wire::ERROR_MALFORMED, "unexpected message type", false);
  }
}

void Coordinator::on_hello(Conn& c, const wire::Hello& h) {
  WireError err;
  if (!ValidateHello(h, err)) {
    Log("refused device={} peer={} stage=registration reason={}: {}", c.identity(), c.peer(),
        ErrorReasonName(err.reason), err.message);
    c.send_error(err.reason, err.message, true);
    return;
  }
  if (h.device_id() != c.identity()) {
    const std::string m =
        fmt::format("device id '{}' does not match the TLS identity '{}'", h.device_id(), c.identity());
    Log("refused peer={} stage=registration reason=identity: {}", c.peer(), m);
    c.send_error(wire::ERROR_IDENTITY, m, true);
    return;
  }
  auto it = registry_.find(h.device_id());
  if (it == registry_.end()) {
    const std::string m = fmt::format("device '{}' is not in the registry of this experiment", h.device_id());
    Log("refused peer={} stage=registration reason=identity: {}", c.peer(), m);
    c.send_error(wire::ERROR_IDENTITY, m, true);
    return;
  }
  if (h.config_fingerprint() != fingerprint_) {
    const std::string m = fmt::format("problem fingerprint {:016x} differs from the coordinator's {:016x}",
                                      h.config_fingerprint(), fingerprint_);
    Log("refused device={} stage=registration reason=config_mismatch: {}", h.device_id(), m);
    c.send_error(wire::ERROR_CONFIG_MISMATCH, m, true);
    return;
  }
  const uint32_t idx = it->second;
  if (Conn* old = device_conn_[idx]; old != nullptr && old != &c) {
    Log("superseded device={} old_peer={} new_peer={}", h.device_id(), old->peer(), c.peer());
    old->close("superseded by a new connection");
  }
  c.device = static_cast<int>(idx);
  c.set_registered();
  device_conn_[idx] = &c;
  (void)store_->upsert_device(h.device_id(), idx, "registered");
  Log("registered device={} index={} peer={} pending={}", h.device_id(), idx, c.peer(),
      h.has_pending() ? fmt::format("alg:{} run:{} round:{}", h.pending_algorithm(), h.pending_run(),
                                    h.pending_round())
                      : std::string("none"));
  wire::Envelope env;
  env.mutable_welcome()->set_protocol_version(kProtocolVersion);
  env.mutable_welcome()->set_device_index(idx);
  env.mutable_welcome()->set_num_devices(agents_);
  c.send(env);
  // A device that computed an update whose round has since closed learns the result.
  if (h.has_pending() && done_.count({h.pending_algorithm(), h.pending_run(), h.pending_round()})) {
    auto rec = store_->get_round(h.pending_algorithm(), h.pending_run(), h.pending_round());
    auto member = store_->was_member(h.pending_algorithm(), h.pending_run(), h.pending_round(), idx);
    if (rec.ok() && rec->has_value() && member.ok()) {
      wire::Envelope r;
      auto* res = r.mutable_result();
      res->set_algorithm_index(h.pending_algorithm());
      res->set_run(h.pending_run());
      res->set_round(h.pending_round());
      res->set_included(*member);
      for (double v : (*rec)->theta) res->add_global_model(v);
      c.send(r);
      Log("replayed result device={} alg={} run={} round={} included={}", h.device_id(), h.pending_algorithm(),
          h.pending_run(), h.pending_round(), *member);
    }
  }
  // A secure round takes new devices only while keys are advertised.
  if (round_open_ && sampled_[idx] && !reported_[idx] && (!secure_ || sa_phase_ == 1)) announce(c);
  maybe_start();
}

void Coordinator::announce(Conn& c) {
  wire::Envelope env;
  auto* a = env.mutable_announce();
  a->set_algorithm_index(cur_.alg);
  a->set_algorithm(algorithms::LsaAlgorithmName(algs_[cur_.alg]));
  a->set_run(cur_.run);
  a->set_round(cur_.round);
  a->set_local_steps(plan_.local_steps);
  a->set_step_size(opt_.experiment.step);
  a->set_hyper_local_steps(static_cast<uint32_t>(opt_.experiment.local_steps));
  a->set_comm_prob(opt_.experiment.effective_comm_prob());
  a->set_seed(opt_.experiment.seed);
  const double* th = server_.global();
  for (int i = 0; i < dim_; ++i) a->add_global_model(th[i]);
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_.expiry() -
                                                                          std::chrono::steady_clock::now());
  a->set_deadline_ms(static_cast<uint32_t>(std::max<long>(0, static_cast<long>(left.count()))));
  if (compressed_) {
    const auto& k = opt_.experiment.compression;
    a->set_quantizer(static_cast<uint32_t>(k.quantizer.kind));
    a->set_levels(k.quantizer.levels);
    a->set_elias_gamma(k.quantizer.elias_gamma);
    a->set_bits(k.quantizer.bits);
    a->set_clip(k.quantizer.clip);
    a->set_control_variates(k.control_variates);
  }
  if (secure_) {
    auto* sp = a->mutable_secagg();
    sp->set_round_id(sa_p_.round_id);
    sp->set_graph_seed(sa_p_.graph_seed);
    sp->set_n(sa_p_.n);
    sp->set_k(sa_p_.k);
    sp->set_t(sa_p_.t);
    sp->set_id(static_cast<uint32_t>(sa_id_[static_cast<size_t>(c.device)]));
  }
  c.send(env);
}

void Coordinator::on_update(Conn& c, const wire::Update& u) {
  const std::string& id = c.identity();
  auto reject = [&](wire::ErrorReason r, const std::string& m) {
    Log("rejected device={} alg={} run={} round={} reason={}: {}", id, u.algorithm_index(), u.run(), u.round(),
        ErrorReasonName(r), m);
    c.send_error(r, m, false);
  };
  const auto key = std::make_tuple(u.algorithm_index(), u.run(), u.round());
  const auto cur = std::make_tuple(cur_.alg, cur_.run, cur_.round);
  if (c.device < 0) return reject(wire::ERROR_NOT_REGISTERED, "update before registration");
  // The open (or just closed) round already has this device's update: a duplicate.
  if (key == cur && reported_[static_cast<size_t>(c.device)])
    return reject(wire::ERROR_DUPLICATE, fmt::format("round {} already has this device's update", u.round()));
  if (!round_open_ || key < cur)
    return reject(wire::ERROR_STALE_ROUND, fmt::format("round {} is closed; the open round is {}", u.round(),
                                                       round_open_ ? std::to_string(cur_.round) : std::string("none")));
  if (key > cur)
    return reject(wire::ERROR_FUTURE_ROUND, fmt::format("round {} is not open yet; the open round is {}", u.round(),
                                                        cur_.round));
  const uint32_t idx = static_cast<uint32_t>(c.device);
  if (!sampled_[idx]) return reject(wire::ERROR_NOT_SAMPLED, fmt::format("agent {} is not sampled in this round", idx));
  if (reported_[idx]) return reject(wire::ERROR_DUPLICATE, "an update for this round was already accepted");
  if (secure_)
    return reject(wire::ERROR_MALFORMED, "this experiment uses secure aggregation: answer the announcement with "
                                         "SecAggAdvertise, not an Update");
  const uint32_t want = compressed_ ? kEncodingCodec : kEncodingRaw;
  if (u.encoding() != want)
    return reject(wire::ERROR_MALFORMED, fmt::format("payload encoding {}, this experiment uses {} ({})", u.encoding(),
                                                     want, compressed_ ? "compression codec" : "raw float64"));
  if (compressed_) {
    // theta_hat_c = theta_t + V_c + m, m = bytes decoded by the bounded decoder;
    // the mirror V_c moves only when the payload is valid.
    std::vector<double>& v = mirror_[idx];
    if (v.empty()) v.assign(static_cast<size_t>(dim_), 0.0);
    codec_.set_memory(v.data());
    scratch_.resize(static_cast<size_t>(dim_));
    Status st = codec_.decode(reinterpret_cast<const uint8_t*>(u.payload().data()), u.payload().size(),
                              scratch_.data());
    if (!st.ok())
      return reject(wire::ERROR_MALFORMED, fmt::format("codec payload of {} bytes rejected: {}", u.payload().size(),
                                                       st.message()));
    std::copy(codec_.memory(), codec_.memory() + dim_, v.begin());
    const double* theta_t = server_.global();
    for (int i = 0; i < dim_; ++i) scratch_[i] += theta_t[i];
    bits_up_round_ += static_cast<uint64_t>(u.payload().size()) * 8;
    if (int_sum_) {  // the payload's b-bit fields (validated by the decoder above)
      compression::BitReader r(reinterpret_cast<const uint8_t*>(u.payload().data()), u.payload().size());
      const unsigned bits = opt_.experiment.compression.quantizer.bits;
      for (int i = 0; i < dim_; ++i) {
        uint32_t x = 0;
        (void)r.get(bits, x);
        int_acc_[static_cast<size_t>(i)] += x;
      }
    }
  } else {
    WireError err;
    if (!DecodeRawPayload(u.payload(), dim_, scratch_, err)) return reject(err.reason, err.message);
  }
  if (!int_sum_) server_.accumulate(scratch_.data());  // arrival order; see README (equivalence)
  reported_[idx] = 1;
  members_.push_back(idx);
  wire::Envelope ack;
  ack.mutable_ack()->set_algorithm_index(cur_.alg);
  ack.mutable_ack()->set_run(cur_.run);
  ack.mutable_ack()->set_round(cur_.round);
  c.send(ack);
  if (members_.size() == n_sampled_) close_round("all");
}

// ---------------------------------------------------------------- secure aggregation

Status Coordinator::sa_begin() {
  const auto& cfg = opt_.experiment;
  sa_agent_.clear();
  sa_id_.assign(agents_, -1);
  for (uint32_t c = 0; c < agents_; ++c)
    if (sampled_[c]) {
      sa_id_[c] = static_cast<int>(sa_agent_.size());
      sa_agent_.push_back(c);
    }
  // Same public parameters as the simulator (secagg/integer_uplink.cc), with
  // the algorithm index in round_id's top bits (one round id per model round).
  sa_p_ = secagg::RoundParams{};
  sa_p_.n = static_cast<uint32_t>(sa_agent_.size());
  sa_p_.dim = static_cast<uint32_t>(dim_);
  sa_p_.bits = cfg.compression.quantizer.bits;
  sa_p_.round_id = static_cast<uint64_t>(cur_.alg) << 48 | static_cast<uint64_t>(cur_.run) << 32 | cur_.round;
  sa_p_.graph_seed = Mix64(cfg.seed ^ Mix64(sa_p_.round_id + 0x6EA9));
  secagg::DefaultGraph(sa_p_.n, sa_p_.k, sa_p_.t, 0.2);
  if (cfg.secagg.neighbours > 0 && cfg.secagg.neighbours < sa_p_.k) {
    sa_p_.k = cfg.secagg.neighbours;
    sa_p_.t = (sa_p_.k + 1) / 2 + 1;
  }
  sa_expected_.assign(sa_p_.n, 1);
  sa_answered_.assign(sa_p_.n, 0);
  sa_left_.assign(sa_p_.n, 0);
  sa_failure_.clear();
  sa_phase_ = 1;
  Status st = sa_.begin(sa_p_);
  if (!st.ok()) return st;
  Log("secagg alg={} run={} round={} n={} k={} t={}", cfg.algorithms[cur_.alg], cur_.run, cur_.round + 1, sa_p_.n,
      sa_p_.k, sa_p_.t);
  return Status::Ok();
}

void Coordinator::sa_send(uint32_t u, const wire::Envelope& env) {
  Conn* c = device_conn_[sa_agent_[u]];
  if (c == nullptr) return;
  sa_down_bytes_ += env.ByteSizeLong();
  c->send(env);
}

void Coordinator::sa_dump(uint32_t u, const wire::Envelope& env) {
  if (opt_.secagg_dump.empty()) return;
  std::ofstream out(opt_.secagg_dump, std::ios::app);
  std::string bytes;
  env.SerializeToString(&bytes);
  out << cur_.alg << ' ' << cur_.run << ' ' << cur_.round << ' ' << u << ' ' << static_cast<int>(env.body_case())
      << ' ' << BytesToHex(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()) << '\n';
}

template <class M>
static bool SameRound(const M& m, uint32_t alg, uint32_t run, uint32_t round) {
  return m.algorithm_index() == alg && m.run() == run && m.round() == round;
}

static bool CopyKey(const std::string& in, uint8_t out[secagg::kKeyBytes]) {
  if (in.size() != secagg::kKeyBytes) return false;
  std::memcpy(out, in.data(), secagg::kKeyBytes);
  return true;
}

void Coordinator::sa_receive(Conn& c, const wire::Envelope& env) {
  auto reject = [&](wire::ErrorReason r, const std::string& m) {
    Log("rejected device={} secagg message={} reason={}: {}", c.identity(), static_cast<int>(env.body_case()),
        ErrorReasonName(r), m);
    c.send_error(r, m, false);
  };
  if (c.device < 0) return reject(wire::ERROR_NOT_REGISTERED, "secure aggregation message before registration");
  if (!secure_) return reject(wire::ERROR_MALFORMED, "this experiment does not use secure aggregation");
  int phase = 0;
  bool same = false;
  const uint32_t a = cur_.alg, r = cur_.run, t = cur_.round;
  switch (env.body_case()) {
    case wire::Envelope::kSecaggAdvertise: phase = 1; same = SameRound(env.secagg_advertise(), a, r, t); break;
    case wire::Envelope::kSecaggShares: phase = 2; same = SameRound(env.secagg_shares(), a, r, t); break;
    case wire::Envelope::kSecaggMasked: phase = 3; same = SameRound(env.secagg_masked(), a, r, t); break;
    default: phase = 4; same = SameRound(env.secagg_unmask(), a, r, t); break;
  }
  if (!round_open_ || !same) return reject(wire::ERROR_STALE_ROUND, "secure aggregation message for another round");
  const int ui = sa_id_[static_cast<size_t>(c.device)];
  if (ui < 0) return reject(wire::ERROR_NOT_SAMPLED, "not sampled in this round");
  const uint32_t u = static_cast<uint32_t>(ui);
  if (phase != sa_phase_ || !sa_expected_[u])
    return reject(wire::ERROR_STALE_ROUND, fmt::format("secure aggregation phase {} message while phase {} is open "
                                                       "(or this device left the round)", phase, sa_phase_));
  if (sa_answered_[u]) return reject(wire::ERROR_DUPLICATE, "this phase already has this device's message");
  sa_dump(u, env);
  Status st = Status::Ok();
  if (phase == 1) {
    const auto& m = env.secagg_advertise();
    secagg::Advertise ad;
    ad.id = u;
    if (!CopyKey(m.c_pk(), ad.c_pk) || !CopyKey(m.s_pk(), ad.s_pk))
      return reject(wire::ERROR_MALFORMED, "SecAggAdvertise keys must be 32 bytes");
    st = sa_.on_advertise(ad);
    if (st.ok()) reported_[static_cast<size_t>(c.device)] = 1;
  } else if (phase == 2) {
    const auto& m = env.secagg_shares();
    if (m.shares_size() > static_cast<int>(secagg::kMaxNeighbours))
      return reject(wire::ERROR_MALFORMED, "more share ciphertexts than neighbours");
    std::vector<secagg::ShareCiphertext> cts(static_cast<size_t>(m.shares_size()));
    for (int i = 0; i < m.shares_size(); ++i) {
      const auto& w = m.shares(i);
      if (!secagg::UnpackShareCiphertext(w.ciphertext().data(), w.ciphertext().size(), u, w.peer(), cts[i]))
        return reject(wire::ERROR_MALFORMED, fmt::format("share ciphertext of {} bytes, expected {}",
                                                         w.ciphertext().size(), secagg::kShareWireBytes));
    }
    st = sa_.on_shares(u, cts.data(), cts.size());
  } else if (phase == 3) {
    const auto& m = env.secagg_masked();
    if (m.masked_size() != dim_)
      return reject(wire::ERROR_DIMENSION, fmt::format("masked input has {} values, expected d = {}", m.masked_size(), dim_));
    st = sa_.on_masked(u, m.masked().data());
  } else {
    const auto& m = env.secagg_unmask();
    if (m.shares_size() > static_cast<int>(secagg::kMaxNeighbours) + 1)
      return reject(wire::ERROR_MALFORMED, "more unmask shares than neighbours + 1");
    std::vector<secagg::UnmaskShare> sh(static_cast<size_t>(m.shares_size()));
    for (int i = 0; i < m.shares_size(); ++i) {
      const auto& w = m.shares(i);
      if (w.kind() < 1 || w.kind() > 2 || w.x() < 1 || w.x() > 255 || !CopyKey(w.share(), sh[i].share))
        return reject(wire::ERROR_MALFORMED, "unmask share needs kind 1 or 2, x in [1, 255] and 32 bytes");
      sh[i].from = u;
      sh[i].about = w.about();
      sh[i].kind = static_cast<secagg::ShareKind>(w.kind());
      sh[i].x = static_cast<uint8_t>(w.x());
    }
    st = sa_.on_unmask(u, sh.data(), sh.size());
  }
  if (!st.ok()) {
    // The server state machine refused it: this device leaves the round.
    sa_expected_[u] = 0;
    reject(wire::ERROR_MALFORMED, st.message());
  } else {
    sa_answered_[u] = 1;
    bits_up_round_ += static_cast<uint64_t>(env.ByteSizeLong()) * 8;
  }
  sa_check_complete();
}

// A phase closes early when every device still expected in it answered: in
// the advertise phase every sampled device (an offline one may still connect
// before the deadline, as in a plain round), later the devices of the previous
// phase that are still connected.
void Coordinator::sa_check_complete() {
  if (!round_open_ || !secure_ || sa_phase_ == 0) return;
  for (uint32_t u = 0; u < sa_p_.n; ++u)
    if (sa_expected_[u] && !sa_answered_[u]) return;
  sa_advance("all");
}

void Coordinator::sa_fail(const std::string& why) {
  if (!round_open_) return;
  sa_failure_ = why;
  Log("secagg_failed alg={} run={} round={} reason={}: the model stays at theta_t", opt_.experiment.algorithms[cur_.alg],
      cur_.run, cur_.round + 1, why);
  members_.clear();
  sa_phase_ = 0;
  close_round("secagg-failed");
}

void Coordinator::sa_advance(const char* by) {
  if (!round_open_ || sa_phase_ == 0) return;
  deadline_.cancel();
  const uint32_t n = sa_p_.n;
  auto head = [&](auto* m) {
    m->set_algorithm_index(cur_.alg);
    m->set_run(cur_.run);
    m->set_round(cur_.round);
  };
  auto next = [&](const char* what, Status st) -> bool {
    uint32_t got = 0;
    for (uint32_t u = 0; u < n; ++u) got += sa_answered_[u] ? 1 : 0;
    Log("secagg_phase alg={} run={} round={} phase={} answered={}/{} closed_by={}", opt_.experiment.algorithms[cur_.alg],
        cur_.run, cur_.round + 1, what, got, n, by);
    if (!st.ok()) {
      sa_fail(st.message());
      return false;
    }
    for (uint32_t u = 0; u < n; ++u) sa_expected_[u] = sa_answered_[u] && !sa_left_[u];
    sa_answered_.assign(n, 0);
    ++sa_phase_;
    return true;
  };
  if (sa_phase_ == 1) {
    if (!next("advertise", sa_.close_advertise())) return;
    for (uint32_t u = 0; u < n; ++u) {
      if (!sa_expected_[u]) continue;
      wire::Envelope env;
      auto* m = env.mutable_secagg_keys();
      head(m);
      for (const auto& ad : sa_.neighbour_ads(u)) {
        auto* pk = m->add_peers();
        pk->set_id(ad.id);
        pk->set_c_pk(std::string(reinterpret_cast<const char*>(ad.c_pk), secagg::kKeyBytes));
        pk->set_s_pk(std::string(reinterpret_cast<const char*>(ad.s_pk), secagg::kKeyBytes));
      }
      sa_send(u, env);
    }
  } else if (sa_phase_ == 2) {
    if (!next("shares", sa_.close_shares())) return;
    for (uint32_t u = 0; u < n; ++u) {
      if (!sa_expected_[u]) continue;
      wire::Envelope env;
      auto* m = env.mutable_secagg_shares_in();
      head(m);
      for (const auto& ct : sa_.shares_for(u)) {
        auto* w = m->add_shares();
        w->set_peer(ct.from);
        std::string b(secagg::kShareWireBytes, '\0');
        secagg::PackShareCiphertext(ct, reinterpret_cast<uint8_t*>(&b[0]));
        w->set_ciphertext(std::move(b));
      }
      sa_send(u, env);
    }
  } else if (sa_phase_ == 3) {
    if (!next("masked", sa_.close_masked())) return;
    for (uint32_t u = 0; u < n; ++u) {
      if (!sa_expected_[u]) continue;
      wire::Envelope env;
      auto* m = env.mutable_secagg_unmask_request();
      head(m);
      for (uint32_t v : sa_.survivors_for(u)) m->add_survivors(v);
      sa_send(u, env);
    }
  } else {
    uint32_t got = 0;
    for (uint32_t u = 0; u < n; ++u) got += sa_answered_[u] ? 1 : 0;
    Log("secagg_phase alg={} run={} round={} phase=unmask answered={}/{} closed_by={}",
        opt_.experiment.algorithms[cur_.alg], cur_.run, cur_.round + 1, got, n, by);
    std::vector<uint32_t> sum;
    Status st = sa_.finish(sum);
    if (!st.ok()) return sa_fail(st.message());
    // S = sum_{u in U3} x_u; theta_hat = theta_t + Delta S / m - clip, weight m (as the simulator).
    const auto contributors = sa_.contributors();
    const auto& q = opt_.experiment.compression.quantizer;
    const double delta = 2.0 * q.clip / static_cast<double>((1u << q.bits) - 1u);
    const double m = static_cast<double>(contributors.size());
    const double* theta_t = server_.global();
    scratch_.resize(static_cast<size_t>(dim_));
    for (int i = 0; i < dim_; ++i) scratch_[i] = theta_t[i] + static_cast<double>(sum[i]) * delta / m - q.clip;
    server_.accumulate(scratch_.data(), m);
    members_.clear();
    for (uint32_t u : contributors) members_.push_back(sa_agent_[u]);
    sa_phase_ = 0;
    close_round("secagg");
    return;
  }
  // Next phase: its own deadline; it may already be complete (everyone offline).
  arm_deadline();
  sa_check_complete();
}

Coordinator::Phase Coordinator::next_phase() const {
  const auto& cfg = opt_.experiment;
  for (uint32_t a = 0; a < algs_.size(); ++a)
    for (uint32_t r = 0; r < static_cast<uint32_t>(cfg.runs); ++r)
      for (uint32_t t = 0; t < static_cast<uint32_t>(cfg.rounds); ++t)
        if (!done_.count({a, r, t})) return Phase{a, r, t, true};
  return Phase{};
}

void Coordinator::maybe_start() {
  if (started_) return;
  uint32_t online = 0;
  for (Conn* p : device_conn_) online += p != nullptr ? 1 : 0;
  if (online < agents_) return;
  started_ = true;
  start_timer_.cancel();
  Log("start devices={} of {}", online, agents_);
  asio::post(io_, [this] { start_next_round(); });
}

void Coordinator::arm_deadline() {
  deadline_.expires_after(std::chrono::milliseconds(opt_.network.deadline_ms));
  const Phase p = cur_;
  deadline_.async_wait([this, p](const std::error_code& ec) {
    if (ec || !round_open_ || p.alg != cur_.alg || p.run != cur_.run || p.round != cur_.round) return;
    if (secure_) return sa_advance("deadline");  // per-phase deadline
    const uint32_t need = std::max<uint32_t>(1, static_cast<uint32_t>(std::ceil(opt_.network.quorum * n_sampled_ - 1e-9)));
    if (members_.size() >= need) {
      close_round("deadline");
    } else {
      Log("deadline alg={} run={} round={} reports={}/{} below quorum {}: extending by {} ms",
          opt_.experiment.algorithms[cur_.alg], cur_.run, cur_.round, members_.size(), n_sampled_, need,
          opt_.network.deadline_ms);
      arm_deadline();
    }
  });
}

void Coordinator::start_next_round() {
  if (finished_ || round_open_) return;
  const Phase p = next_phase();
  if (!p.valid) {
    Status st = finish();
    if (!st.ok()) fatal_ = st;
    return;
  }
  const auto& cfg = opt_.experiment;
  if (server_key_ != std::make_pair(p.alg, p.run)) {
    LsaHyper<double> hyper;
    hyper.algorithm = algs_[p.alg];
    hyper.step_size = cfg.step;
    hyper.local_steps = static_cast<uint32_t>(cfg.local_steps);
    hyper.comm_prob = cfg.effective_comm_prob();
    const Eigen::VectorXd theta0 = problem_->lsa.theta_star + Eigen::VectorXd::Ones(dim_);
    Arena arena(server_mem_.data(), server_mem_.size());
    server_ = *LsaServer<double>::create(arena, dim_, hyper, theta0.data(), cfg.seed, p.run);
    auto it = last_theta_.find({p.alg, p.run});
    if (it != last_theta_.end()) std::copy(it->second.begin(), it->second.end(), server_.mutable_global());
    server_key_ = {p.alg, p.run};
    mirror_.assign(agents_, {});  // V_c = 0 at the start of a run (as the simulator's links)
    if (compressed_) {
      auto m = store_->load_mirrors(p.alg, p.run);
      if (!m.ok()) {
        fatal_ = m.status();
        io_.stop();
        return;
      }
      for (auto& [c, v] : *m)
        if (c < agents_ && v.size() == static_cast<size_t>(dim_)) mirror_[c] = std::move(v);
    }
  }
  bits_up_round_ = 0;
  sa_down_bytes_ = 0;
  int_acc_.assign(static_cast<size_t>(dim_), 0);
  cur_ = p;
  plan_ = server_.start_round(p.round);
  members_.clear();
  n_sampled_ = 0;
  for (uint32_t c = 0; c < agents_; ++c) {
    reported_[c] = 0;
    sampled_[c] = IsSampled(cfg.seed, p.run, c, p.round, cfg.participation) ? 1 : 0;
    n_sampled_ += sampled_[c];
  }
  round_open_ = true;
  round_t0_ = std::chrono::steady_clock::now();
  Log("open alg={} run={} round={} sampled={}/{} local_steps={}", cfg.algorithms[p.alg], p.run, p.round + 1,
      n_sampled_, agents_, plan_.local_steps);
  arm_deadline();
  if (n_sampled_ == 0) {
    close_round("empty");
    return;
  }
  if (secure_) {
    Status st = sa_begin();
    if (!st.ok()) return sa_fail(st.message());
  }
  for (uint32_t c = 0; c < agents_; ++c)
    if (sampled_[c] && device_conn_[c] != nullptr) announce(*device_conn_[c]);
}

void Coordinator::close_round(const char* by) {
  if (!round_open_) return;
  round_open_ = false;
  deadline_.cancel();
  if (int_sum_ && !members_.empty()) {
    const auto& q = opt_.experiment.compression.quantizer;
    const double delta = 2.0 * q.clip / static_cast<double>((1u << q.bits) - 1u);
    const double m = static_cast<double>(members_.size());
    const double* theta_t = server_.global();
    scratch_.resize(static_cast<size_t>(dim_));
    for (int i = 0; i < dim_; ++i) scratch_[i] = theta_t[i] + static_cast<double>(int_acc_[i]) * delta / m - q.clip;
    server_.accumulate(scratch_.data(), m);
  }
  server_.finish_round();
  const double* th = server_.global();
  RoundRecord rec;
  rec.algorithm = cur_.alg;
  rec.run = cur_.run;
  rec.round = cur_.round;
  rec.theta.assign(th, th + dim_);
  rec.agents = static_cast<uint32_t>(members_.size());
  rec.sampled = n_sampled_;
  double e = 0.0;
  for (int i = 0; i < dim_; ++i) {
    const double d = th[i] - problem_->lsa.theta_star[i];
    e += d * d;
  }
  rec.error = e;
  rec.bits_up = compressed_ ? bits_up_round_ : static_cast<uint64_t>(members_.size()) * dim_ * kBitsPerScalar;
  rec.bits_down = static_cast<uint64_t>(n_sampled_) * dim_ * kBitsPerScalar + sa_down_bytes_ * 8;
  rec.closed_at = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  rec.closed_by = by;
  // Durable before anyone learns the result (write-ahead): a restart resumes after this round.
  std::map<uint32_t, std::vector<double>> mirrors;
  if (compressed_ && opt_.experiment.compression.control_variates)
    for (uint32_t c : members_) mirrors[c] = mirror_[c];
  Status st = store_->save_round(rec, members_, mirrors);
  if (!st.ok()) {
    fatal_ = st;
    Log("fatal {}", st.message());
    io_.stop();
    return;
  }
  done_.insert({cur_.alg, cur_.run, cur_.round});
  last_theta_[{cur_.alg, cur_.run}] = rec.theta;
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - round_t0_).count();
  Log("round alg={} run={} round={} agents={}/{} closed_by={} error={:.6e} bits_up={} latency_ms={:.1f}",
      opt_.experiment.algorithms[cur_.alg], cur_.run, cur_.round + 1, members_.size(), n_sampled_, by, e,
      rec.bits_up, ms);
  sa_phase_ = 0;
  wire::Envelope env;
  auto* r = env.mutable_result();
  r->set_algorithm_index(cur_.alg);
  r->set_run(cur_.run);
  r->set_round(cur_.round);
  r->set_included(true);
  for (int i = 0; i < dim_; ++i) r->add_global_model(th[i]);
  for (uint32_t c : members_)
    if (device_conn_[c] != nullptr) device_conn_[c]->send(env);
  ++rounds_closed_here_;
  if (opt_.stop_after_rounds > 0 && rounds_closed_here_ >= opt_.stop_after_rounds) {
    Log("stop after_rounds={}", rounds_closed_here_);
    io_.stop();
    return;
  }
  asio::post(io_, [this] { start_next_round(); });
}

Result<sim::SimResult> Coordinator::build_result() {
  const auto& cfg = opt_.experiment;
  auto rounds = store_->load_rounds();
  if (!rounds.ok()) return rounds.status();
  const auto& lsa = problem_->lsa;
  sim::SimResult out;
  out.config = cfg;
  out.problem.agents = lsa.agents();
  out.problem.dim = lsa.dim;
  out.problem.theta_star = lsa.theta_star;
  out.problem.delta_het = analysis::DeltaHet(lsa);
  out.problem.description = fmt::format("federated TD(0), {} agents over TLS, d={}", lsa.agents(), lsa.dim);
  out.settings = {{"driver", "fedrt-coordinator"},
                  {"comm_prob", cfg.effective_comm_prob()},
                  {"aggregation", "uniform mean over the agents that reported, in arrival order"},
                  {"payload", compressed_ ? "encoding 1: codec bytes of Q(theta_{t,H}^c - theta_t - V_c) "
                                            "(bits = 8 * bytes; framing not counted)"
                                          : "raw float64, d values per message (framing not counted)"},
                  {"initial_iterate", "theta_star + (1, ..., 1)"},
                  {"deadline_ms", opt_.network.deadline_ms},
                  {"quorum", opt_.network.quorum},
                  {"auth", opt_.network.auth}};
  if (compressed_) out.settings["compression"] = sim::CompressionSettingsJson(cfg.compression, dim_);
  if (int_sum_)
    out.settings["aggregation"] = "integer sum S of the b-bit payloads, theta_t + Delta S / m - clip (as the simulator)";
  if (secure_) {
    out.settings["aggregation"] = "SecAgg+ sum S of the devices' b-bit integers, theta_t + Delta S / m - clip";
    out.settings["payload"] = "SecAgg+ messages (fedrt.proto); bits_up/bits_down include all protocol traffic";
    out.settings["secure_aggregation"] = secagg::IntegerUplink::Describe(cfg.secagg, agents_, cfg.compression.quantizer.bits);
    uint64_t failed = 0;
    for (const auto& rec : *rounds) failed += rec.closed_by == "secagg-failed" ? 1 : 0;
    out.settings["secagg_failed_rounds"] = failed;
  }
  const analysis::FedLsaBias bias = analysis::PredictFedLsaBias(lsa, cfg.step, cfg.local_steps, cfg.rounds);
  const Eigen::VectorXd theta0 = lsa.theta_star + Eigen::VectorXd::Ones(dim_);
  for (uint32_t a = 0; a < algs_.size(); ++a) {
    sim::AlgorithmResult res;
    res.name = algorithms::LsaAlgorithmName(algs_[a]);
    for (uint32_t r = 0; r < static_cast<uint32_t>(cfg.runs); ++r) {
      std::vector<double> err(static_cast<size_t>(cfg.rounds) + 1, std::nan(""));
      std::vector<uint32_t> agents(err.size(), 0);
      std::vector<uint64_t> up(err.size(), 0), down(err.size(), 0);
      err[0] = (theta0 - lsa.theta_star).squaredNorm();
      Eigen::VectorXd final_theta = theta0;
      for (const auto& rec : *rounds) {
        if (rec.algorithm != a || rec.run != r || rec.round >= static_cast<uint32_t>(cfg.rounds)) continue;
        err[rec.round + 1] = rec.error;
        agents[rec.round + 1] = rec.agents;
        up[rec.round + 1] = rec.bits_up;
        down[rec.round + 1] = rec.bits_down;
        final_theta = Eigen::Map<const Eigen::VectorXd>(rec.theta.data(), dim_);
        res.agent_steps += static_cast<uint64_t>(rec.agents) * static_cast<uint64_t>(cfg.local_steps);
      }
      res.error.push_back(err);
      res.agents.push_back(agents);
      res.bits_up.push_back(up);
      res.bits_down.push_back(down);
      res.final_theta.push_back(final_theta);
    }
    if (algs_[a] == LsaAlgorithm::kFedLsa) {
      if (cfg.participation >= 1.0) {
        res.predicted_bias_sq = bias.after_rounds.squaredNorm();
        res.predicted_bias_sq_stationary = bias.stationary.squaredNorm();
      }
    } else {
      res.predicted_bias_sq = 0.0;
      res.predicted_bias_sq_stationary = 0.0;
    }
    out.algorithms.push_back(std::move(res));
  }
  return out;
}

Status Coordinator::finish() {
  finished_ = true;
  deadline_.cancel();
  start_timer_.cancel();
  Log("finished rounds={} writing outputs to {}", done_.size(), opt_.out);
  if (!opt_.out.empty()) {
    auto res = build_result();
    if (!res.ok()) return res.status();
    res->config.plot = opt_.plot;
    Status plot = Status::Ok();
    FEDRT_TRY(sim::WriteOutputs(*res, opt_.out, opt_.plot ? &plot : nullptr));
    if (!plot.ok()) Log("warning plot={}", plot.message());
  }
  wire::Envelope env;
  env.mutable_shutdown()->set_reason("experiment complete");
  for (const auto& c : conns_)
    if (c->state() == Conn::State::kRegistered) c->send(env);
  std::error_code ec;
  acceptor_.close(ec);
  // Let the shutdown messages drain, then stop.
  auto t = std::make_shared<asio::steady_timer>(io_, std::chrono::milliseconds(300));
  t->async_wait([this, t](const std::error_code&) { io_.stop(); });
  return Status::Ok();
}

Status Coordinator::run() {
  accept();
  if (next_phase().valid) {
    if (opt_.network.start_timeout_ms > 0) {
      start_timer_.expires_after(std::chrono::milliseconds(opt_.network.start_timeout_ms));
      start_timer_.async_wait([this](const std::error_code& ec) {
        if (ec || started_) return;
        started_ = true;
        uint32_t online = 0;
        for (Conn* p : device_conn_) online += p != nullptr ? 1 : 0;
        Log("start devices={} of {} (start timeout)", online, agents_);
        start_next_round();
      });
    } else {
      started_ = true;
      asio::post(io_, [this] { start_next_round(); });
    }
  } else {
    asio::post(io_, [this] {
      Status st = finish();
      if (!st.ok()) fatal_ = st;
    });
  }
  io_.run();
  return fatal_;
}

}  // namespace

Status RunCoordinator(const CoordinatorOptions& options) {
  Coordinator co(options);
  FEDRT_TRY(co.init());
  return co.run();
}

}  // namespace fedrt::net
