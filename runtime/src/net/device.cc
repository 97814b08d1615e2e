#include "fedrt/net/device.h"

#include <chrono>
#include <cstring>
#include <memory>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "fedrt/algorithms/lsa.h"
#include "fedrt/compression/bit_stream.h"
#include "fedrt/compression/diana.h"
#include "fedrt/core/arena.h"
#include "fedrt/core/rng.h"
#include "fedrt/net/network_config.h"
#include "fedrt/net/wire.h"
#include "fedrt/net/log_time.h"
#include "fedrt/problems/expected_oracle.h"
#include "fedrt/problems/td_oracle.h"
#include "fedrt/secagg/device.h"
#include "fedrt/sim/simulator.h"

namespace fedrt::net {

using algorithms::LsaAlgorithm;
using algorithms::LsaClient;
using algorithms::LsaHyper;
using algorithms::RoundPlan;

namespace {

// Per-algorithm client state: xi_c, the compression memory V_c, and the
// update not yet committed.
struct AlgState {
  uint32_t run = 0;
  std::vector<double> xi;
  std::vector<double> cv;  // V_c as the coordinator's mirror holds it (empty = 0)
  bool pending = false;
  uint32_t pending_round = 0;
  std::vector<double> pending_theta;  // theta_{t,H}^c, or theta_t + g_hat with the codec
  std::vector<double> pending_cv;     // V_c after the pending update (committed when included)
  std::string pending_payload;        // codec bytes of the pending update (empty: raw float64)
};

struct PersistentState {
  int index = -1;
  std::map<uint32_t, AlgState> algs;
};

std::string HexDouble(double v) { return fmt::format("{:a}", v); }

Status SaveState(const std::string& path, const PersistentState& s) {
  if (path.empty()) return Status::Ok();
  std::ostringstream o;
  o << "fedrt-device-state 1\nindex " << s.index << "\n";
  for (const auto& [a, st] : s.algs) {
    o << "alg " << a << " run " << st.run << " d " << st.xi.size() << " pending " << (st.pending ? 1 : 0) << " "
      << st.pending_round << "\nxi";
    for (double v : st.xi) o << ' ' << HexDouble(v);
    o << "\ntheta";  // only a pending update has one
    if (st.pending)
      for (double v : st.pending_theta) o << ' ' << HexDouble(v);
    o << "\n";
    // Compressed uplink: V_c, and for a pending codec update its bytes and V_c after it.
    if (!st.cv.empty()) {
      o << "cv " << st.cv.size();
      for (double v : st.cv) o << ' ' << HexDouble(v);
      o << "\n";
    }
    if (st.pending && !st.pending_payload.empty()) {
      o << "payload " << st.pending_payload.size() << ' ';
      for (unsigned char ch : st.pending_payload) o << fmt::format("{:02x}", ch);
      o << "\npending_cv " << st.pending_cv.size();
      for (double v : st.pending_cv) o << ' ' << HexDouble(v);
      o << "\n";
    }
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    if (!f) return Status(StatusCode::kUnavailable, fmt::format("cannot write state file '{}'", tmp));
    f << o.str();
    f.flush();
    if (!f) return Status(StatusCode::kDataLoss, fmt::format("short write to state file '{}'", tmp));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return Status(StatusCode::kDataLoss, fmt::format("cannot replace state file '{}'", path));
  return Status::Ok();
}

Result<PersistentState> LoadState(const std::string& path) {
  PersistentState s;
  std::ifstream f(path);
  if (path.empty() || !f) return s;  // first start
  auto bad = [&](const std::string& why) {
    return Status(StatusCode::kDataLoss, fmt::format("state file '{}' is corrupt: {}", path, why));
  };
  std::string magic, word;
  int version = 0;
  if (!(f >> magic >> version) || magic != "fedrt-device-state" || version != 1) return bad("bad header");
  if (!(f >> word >> s.index) || word != "index") return bad("no index");
  AlgState* last = nullptr;
  auto read_counted = [&](std::vector<double>& v) -> bool {
    size_t n = 0;
    if (!(f >> n) || n > static_cast<size_t>(kMaxDim)) return false;
    v.resize(n);
    for (size_t i = 0; i < n; ++i) {
      std::string x;
      if (!(f >> x)) return false;
      v[i] = std::strtod(x.c_str(), nullptr);
    }
    return true;
  };
  while (f >> word) {
    if (word == "cv" || word == "pending_cv") {
      if (last == nullptr || !read_counted(word == "cv" ? last->cv : last->pending_cv)) return bad("bad " + word);
      continue;
    }
    if (word == "payload") {
      size_t n = 0;
      std::string hex;
      if (last == nullptr || !(f >> n >> hex) || n > 4096 || hex.size() != 2 * n) return bad("bad payload");
      last->pending_payload.resize(n);
      for (size_t i = 0; i < n; ++i) {
        char* end = nullptr;
        const std::string byte = hex.substr(2 * i, 2);
        last->pending_payload[i] = static_cast<char>(std::strtoul(byte.c_str(), &end, 16));
        if (end != byte.c_str() + 2) return bad("bad payload");
      }
      continue;
    }
    if (word != "alg") return bad("expected 'alg'");
    uint32_t a = 0;
    size_t d = 0;
    int pending = 0;
    AlgState st;
    std::string w1, w2, w3;
    if (!(f >> a >> w1 >> st.run >> w2 >> d >> w3 >> pending >> st.pending_round) || w1 != "run" || w2 != "d" ||
        w3 != "pending" || d > static_cast<size_t>(kMaxDim))
      return bad("bad algorithm line");
    st.pending = pending != 0;
    auto read_vec = [&](const char* tag, std::vector<double>& v, size_t n) -> bool {
      std::string t;
      if (!(f >> t) || t != tag) return false;
      v.resize(n);
      for (size_t i = 0; i < n; ++i) {
        std::string x;
        if (!(f >> x)) return false;
        v[i] = std::strtod(x.c_str(), nullptr);
      }
      return true;
    };
    if (!read_vec("xi", st.xi, d)) return bad("bad xi");
    if (!read_vec("theta", st.pending_theta, st.pending ? d : 0)) return bad("bad theta");
    s.algs[a] = std::move(st);
    last = &s.algs[a];
  }
  return s;
}

class Device {
 public:
  explicit Device(const DeviceOptions& o) : opt_(o) {}
  Status run();

 private:
  template <class... Args>
  void log(fmt::format_string<Args...> f, Args&&... args) {
    if (opt_.quiet) return;
    std::string line =
        UtcTimestamp() + " device " + opt_.id + " " + fmt::format(f, std::forward<Args>(args)...) + "\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
  }
  Status build_oracle(uint32_t index);
  Status send(const wire::Envelope& env) { return tls_.write_all(EncodeFrame(env)); }
  // Returns false to stop the session (fatal error or shutdown).
  Status handle(const wire::Envelope& env, bool& stop, bool& done);
  Status on_announce(const wire::RoundAnnouncement& a);
  Status on_result(const wire::RoundResult& r);
  Status send_update(uint32_t alg, const AlgState& st, uint64_t samples);
  Status compress(const wire::RoundAnnouncement& a, const std::vector<double>& theta_t, AlgState& st);
  // Secure aggregation (fedrt.proto "Secure aggregation"): SecAggDevice over
  // the x_u of the pending rounding payload, fresh secrets from CTR-DRBG.
  Status sa_start(const wire::RoundAnnouncement& a, const AlgState& st);
  Status sa_keys(const wire::SecAggKeys& m);
  Status sa_shares_in(const wire::SecAggSharesIn& m);
  Status sa_unmask(const wire::SecAggUnmaskRequest& m);
  Status sa_send(const wire::Envelope& env) {
    if (opt_.delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(opt_.delay_ms));  // a slow board
    if (opt_.before_secagg) {
      opt_.before_secagg(env, [this](const std::string& bytes) { return tls_.write_all(bytes); });
      if (!tls_.connected()) return Status(StatusCode::kUnavailable, std::string("connection lost in test hook"));
    }
    return send(env);
  }
  template <class M>
  bool sa_current(const M& m) const {
    return sa_ != nullptr && m.algorithm_index() == sa_alg_ && m.run() == sa_run_ && m.round() == sa_round_;
  }
  template <class M>
  void sa_head(M* m) const {
    m->set_algorithm_index(sa_alg_);
    m->set_run(sa_run_);
    m->set_round(sa_round_);
  }

  DeviceOptions opt_;
  TlsClient tls_;
  PersistentState state_;
  std::optional<problems::TdProblem> owned_problem_;
  const problems::TdProblem* problem_ = nullptr;
  int dim_ = 0;
  std::vector<uint8_t> oracle_mem_;
  problems::TdOracle<double> td_;
  problems::ExpectedLsaOracle<double> expected_;
  bool oracle_ready_ = false;
  std::vector<uint8_t> client_mem_;
  std::vector<uint8_t> codec_mem_;
  std::map<uint32_t, LsaClient<double>> clients_;
  std::map<uint32_t, std::vector<uint8_t>> client_arenas_;
  std::unique_ptr<secagg::SecAggDevice> sa_;  // about 15 KB: the open secure round
  std::unique_ptr<TlsRandom> sa_rng_;
  uint32_t sa_alg_ = 0, sa_run_ = 0, sa_round_ = 0;
  std::vector<uint32_t> sa_x_;
};

Status Device::build_oracle(uint32_t c) {
  if (oracle_ready_) return Status::Ok();
  const problems::TdProblem& p = *problem_;
  if (static_cast<int>(c) >= p.agents())
    return Status(StatusCode::kOutOfRange, fmt::format("agent index {} but the problem has {} agents", c, p.agents()));
  // Same construction as the simulator's agent c (sim/simulator.cc BuildTdOracles / BuildExpectedOracles).
  if (opt_.experiment.noise_free) {
    const size_t d = static_cast<size_t>(p.dim);
    oracle_mem_.assign(sizeof(double) * (d * d + 2 * d) + 4 * Arena::kAlignment, 0);
    Arena arena(oracle_mem_.data(), oracle_mem_.size());
    auto o = problems::ExpectedLsaOracle<double>::create(arena, p.dim, p.lsa.abar[c].data(), p.lsa.bbar[c].data());
    if (!o.ok()) return o.status();
    expected_ = *o;
  } else {
    const size_t n = static_cast<size_t>(p.n_states);
    oracle_mem_.assign(sizeof(double) * n * p.dim + n * n * (sizeof(problems::TdTransition<double>) + 24) +
                           8 * Arena::kAlignment,
                       0);
    Arena arena(oracle_mem_.data(), oracle_mem_.size());
    const std::vector<double> joint = p.joint_law(static_cast<int>(c));
    auto o = problems::TdOracle<double>::create(arena, p.dim, p.n_states, p.gamma, p.phi.data(), p.reward[c].data(),
                                                joint.data());
    if (!o.ok()) return o.status();
    td_ = *o;
  }
  oracle_ready_ = true;
  return Status::Ok();
}

Status Device::send_update(uint32_t alg, const AlgState& st, uint64_t samples) {
  wire::Envelope env;
  auto* u = env.mutable_update();
  u->set_algorithm_index(alg);
  u->set_run(st.run);
  u->set_round(st.pending_round);
  if (st.pending_payload.empty()) {
    u->set_payload(EncodeRawPayload(st.pending_theta.data(), dim_));
    u->set_encoding(0);
  } else {
    u->set_payload(st.pending_payload);  // the same bytes on a resubmission
    u->set_encoding(1);
  }
  u->set_sample_count(samples);
  if (opt_.delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(opt_.delay_ms));
  if (opt_.before_update) {
    opt_.before_update(*u, [this](const std::string& bytes) { return tls_.write_all(bytes); });
    if (!tls_.connected()) return Status(StatusCode::kUnavailable, std::string("connection lost in test hook"));
  }
  log("update alg={} run={} round={}", alg, st.run, st.pending_round);
  return send(env);
}

// Encoding 1 (fedrt.proto, Update): payload = bytes(Q(g - V_c)), g = theta_{t,H}^c - theta_t,
// draws from CounterRng(seed, run, c, round, kCompression), as the simulator's
// agent c; pending_theta = theta_t + g_hat (SCAFFLSA's xi_c uses it), and
// pending_cv = V_c + alpha m, committed only when the update is included.
Status Device::compress(const wire::RoundAnnouncement& a, const std::vector<double>& theta_t, AlgState& st) {
  compression::QuantizerSpec q;
  if (a.quantizer() > static_cast<uint32_t>(compression::QuantizerKind::kRounding))
    return Status(StatusCode::kInvalidArgument, fmt::format("announcement has unknown quantizer {}", a.quantizer()));
  q.kind = static_cast<compression::QuantizerKind>(a.quantizer());
  q.levels = a.levels();
  q.elias_gamma = a.elias_gamma();
  q.bits = a.bits();
  q.clip = a.clip();
  codec_mem_.assign(sizeof(double) * 2 * static_cast<size_t>(dim_) + 2 * Arena::kAlignment, 0);
  Arena arena(codec_mem_.data(), codec_mem_.size());
  auto cd = compression::CompressedDifference<double>::create(arena, dim_, q, a.control_variates());
  if (!cd.ok()) return Status(cd.status().code(), fmt::format("announcement quantizer: {}", cd.status().message()));
  if (st.cv.size() == static_cast<size_t>(dim_)) cd->set_memory(st.cv.data());
  std::vector<double> g(static_cast<size_t>(dim_)), g_hat(static_cast<size_t>(dim_));
  for (int i = 0; i < dim_; ++i) g[i] = st.pending_theta[i] - theta_t[i];
  std::string bytes(cd->max_payload_bytes(), '\0');
  CounterRng rng(a.seed(), a.run(), static_cast<uint64_t>(state_.index), a.round(), RngStream::kCompression);
  auto n = cd->encode(g.data(), rng, reinterpret_cast<uint8_t*>(bytes.data()), bytes.size(), g_hat.data());
  if (!n.ok()) return n.status();
  bytes.resize(*n);
  st.pending_payload = std::move(bytes);
  cd->commit();  // V_c after this update, committed when the result says it was included
  st.pending_cv.assign(cd->memory(), cd->memory() + dim_);
  for (int i = 0; i < dim_; ++i) st.pending_theta[i] = theta_t[i] + g_hat[i];
  return Status::Ok();
}

Status Device::on_announce(const wire::RoundAnnouncement& a) {
  std::vector<double> theta;
  WireError err;
  if (!ValidateModel(a.global_model(), dim_, theta, err))
    return Status(StatusCode::kInvalidArgument, fmt::format("announcement rejected: {}", err.message));
  auto alg = sim::LsaAlgorithmFromName(a.algorithm());
  if (!alg.ok()) return alg.status();
  if (a.local_steps() == 0 || !(a.step_size() > 0.0) || a.hyper_local_steps() == 0)
    return Status(StatusCode::kInvalidArgument, std::string("announcement has bad hyper-parameters"));
  const uint32_t ai = a.algorithm_index();
  AlgState& st = state_.algs[ai];
  if (st.xi.size() != static_cast<size_t>(dim_) || st.run != a.run()) {
    if (!st.xi.empty()) log("new run alg={} run={}: control variate reset", ai, a.run());
    st = AlgState{};
    st.run = a.run();
    st.xi.assign(static_cast<size_t>(dim_), 0.0);
    clients_.erase(ai);
  }
  if (st.pending && st.pending_round == a.round()) {
    // The coordinator has not got (or lost, after a restart) our update: resubmit the same one.
    log("resubmit alg={} run={} round={}", ai, st.run, st.pending_round);
    if (a.has_secagg()) return sa_start(a, st);  // fresh keys, same input
    return send_update(ai, st, a.local_steps());
  }
  if (st.pending) log("dropped uncommitted update alg={} run={} round={}", ai, st.run, st.pending_round);
  st.pending = false;  // V_c stays at its committed value: the coordinator's mirror did not move
  st.pending_payload.clear();
  st.pending_cv.clear();
  LsaHyper<double> hyper;
  hyper.algorithm = *alg;
  hyper.step_size = a.step_size();
  hyper.local_steps = a.hyper_local_steps();
  hyper.comm_prob = a.comm_prob();
  auto it = clients_.find(ai);
  if (it == clients_.end()) {
    auto& mem = client_arenas_[ai];
    mem.assign(sizeof(double) * 3 * static_cast<size_t>(dim_) + 4 * Arena::kAlignment, 0);
    Arena arena(mem.data(), mem.size());
    auto cl = LsaClient<double>::create(arena, dim_, hyper);
    if (!cl.ok()) return cl.status();
    it = clients_.emplace(ai, *cl).first;
    std::copy(st.xi.begin(), st.xi.end(), it->second.mutable_control_variate());
  }
  LsaClient<double>& client = it->second;
  RoundPlan plan;
  plan.round = a.round();
  plan.local_steps = a.local_steps();
  client.begin_round(theta.data(), plan);
  CounterRng rng(a.seed(), a.run(), static_cast<uint64_t>(state_.index), a.round(), RngStream::kLocalSteps);
  DispatchDim(dim_, [&](auto tag) {
    constexpr int D = decltype(tag)::value;
    if (opt_.experiment.noise_free) client.template run_local_steps<D>(expected_, rng);
    else client.template run_local_steps<D>(td_, rng);
  });
  st.pending = true;
  st.pending_round = a.round();
  st.pending_theta.assign(client.update(), client.update() + dim_);
  st.pending_payload.clear();
  st.pending_cv.clear();
  if (a.quantizer() != 0) FEDRT_TRY(compress(a, theta, st));
  FEDRT_TRY(SaveState(opt_.state_file, state_));
  if (a.has_secagg()) return sa_start(a, st);
  return send_update(ai, st, a.local_steps());
}

Status Device::sa_start(const wire::RoundAnnouncement& a, const AlgState& st) {
  sa_.reset();
  const auto& sp = a.secagg();
  if (a.quantizer() != static_cast<uint32_t>(compression::QuantizerKind::kRounding) || a.control_variates())
    return Status(StatusCode::kInvalidArgument,
                  std::string("secure aggregation announced without the rounding quantizer (or with control variates)"));
  secagg::RoundParams p;
  p.round_id = sp.round_id();
  p.graph_seed = sp.graph_seed();
  p.n = sp.n();
  p.k = sp.k();
  p.t = sp.t();
  p.dim = static_cast<uint32_t>(dim_);
  p.bits = a.bits();
  Status v = secagg::ValidateParams(p);
  if (!v.ok()) return Status(v.code(), std::string("secure aggregation parameters: ") + v.message());
  if (sp.id() >= p.n)
    return Status(StatusCode::kInvalidArgument, fmt::format("secure aggregation id {} outside 0..{}", sp.id(), p.n - 1));
  // x_u: the d b-bit fields of the rounding payload (fedrt.proto, Update encoding 1).
  sa_x_.assign(static_cast<size_t>(dim_), 0);
  compression::BitReader r(reinterpret_cast<const uint8_t*>(st.pending_payload.data()), st.pending_payload.size());
  for (int i = 0; i < dim_; ++i)
    if (!r.get(p.bits, sa_x_[static_cast<size_t>(i)]))
      return Status(StatusCode::kInternal, std::string("secure aggregation: payload shorter than d fields"));
  if (sa_rng_ == nullptr) {
    sa_rng_ = std::make_unique<TlsRandom>();
    FEDRT_TRY(sa_rng_->init("fedrt-secagg " + opt_.id));
  }
  secagg::DeviceEntropy e;
  if (mbedtls_ctr_drbg_random(sa_rng_->drbg(), reinterpret_cast<unsigned char*>(&e), sizeof e) != 0)
    return Status(StatusCode::kInternal, std::string("secure aggregation: CTR-DRBG failed"));
  sa_ = std::make_unique<secagg::SecAggDevice>();
  secagg::Advertise ad;
  Status as = sa_->advertise(p, sp.id(), e, ad);
  std::memset(&e, 0, sizeof e);
  if (!as.ok()) {
    sa_.reset();
    return as;
  }
  sa_alg_ = a.algorithm_index();
  sa_run_ = a.run();
  sa_round_ = a.round();
  wire::Envelope env;
  auto* m = env.mutable_secagg_advertise();
  sa_head(m);
  m->set_c_pk(std::string(reinterpret_cast<const char*>(ad.c_pk), secagg::kKeyBytes));
  m->set_s_pk(std::string(reinterpret_cast<const char*>(ad.s_pk), secagg::kKeyBytes));
  log("secagg advertise alg={} run={} round={} id={} n={} k={} t={}", sa_alg_, sa_run_, sa_round_, sp.id(), p.n, p.k,
      p.t);
  return sa_send(env);
}

Status Device::sa_keys(const wire::SecAggKeys& m) {
  if (!sa_current(m)) return Status::Ok();  // an old round's message
  if (m.peers_size() > static_cast<int>(secagg::kMaxNeighbours))
    return Status(StatusCode::kInvalidArgument, std::string("SecAggKeys: more peers than neighbours"));
  std::vector<secagg::Advertise> ads(static_cast<size_t>(m.peers_size()));
  for (int i = 0; i < m.peers_size(); ++i) {
    const auto& pk = m.peers(i);
    if (pk.c_pk().size() != secagg::kKeyBytes || pk.s_pk().size() != secagg::kKeyBytes)
      return Status(StatusCode::kInvalidArgument, std::string("SecAggKeys: keys must be 32 bytes"));
    ads[i].id = pk.id();
    std::memcpy(ads[i].c_pk, pk.c_pk().data(), secagg::kKeyBytes);
    std::memcpy(ads[i].s_pk, pk.s_pk().data(), secagg::kKeyBytes);
  }
  std::vector<secagg::ShareCiphertext> out(secagg::kMaxNeighbours);
  size_t written = 0;
  FEDRT_TRY(sa_->share_keys(ads.data(), ads.size(), out.data(), out.size(), written));
  wire::Envelope env;
  auto* s = env.mutable_secagg_shares();
  sa_head(s);
  for (size_t i = 0; i < written; ++i) {
    auto* w = s->add_shares();
    w->set_peer(out[i].to);
    std::string b(secagg::kShareWireBytes, '\0');
    secagg::PackShareCiphertext(out[i], reinterpret_cast<uint8_t*>(&b[0]));
    w->set_ciphertext(std::move(b));
  }
  return sa_send(env);
}

Status Device::sa_shares_in(const wire::SecAggSharesIn& m) {
  if (!sa_current(m)) return Status::Ok();
  if (m.shares_size() > static_cast<int>(secagg::kMaxNeighbours))
    return Status(StatusCode::kInvalidArgument, std::string("SecAggSharesIn: more shares than neighbours"));
  std::vector<secagg::ShareCiphertext> in(static_cast<size_t>(m.shares_size()));
  for (int i = 0; i < m.shares_size(); ++i) {
    const auto& w = m.shares(i);
    if (!secagg::UnpackShareCiphertext(w.ciphertext().data(), w.ciphertext().size(), w.peer(), sa_->id(), in[i]))
      return Status(StatusCode::kInvalidArgument, std::string("SecAggSharesIn: ciphertext must be 89 bytes"));
  }
  std::vector<uint32_t> y(static_cast<size_t>(dim_));
  FEDRT_TRY(sa_->masked_input(in.data(), in.size(), sa_x_.data(), y.data()));
  wire::Envelope env;
  auto* s = env.mutable_secagg_masked();
  sa_head(s);
  for (uint32_t v : y) s->add_masked(v);
  FEDRT_TRY(sa_send(env));
  log("secagg masked alg={} run={} round={}", sa_alg_, sa_run_, sa_round_);
  if (opt_.secagg_drop_after_masked_round >= 0 && sa_round_ == static_cast<uint32_t>(opt_.secagg_drop_after_masked_round)) {
    sa_.reset();
    return Status(StatusCode::kUnavailable, std::string("test: connection dropped after the masked input"));
  }
  return Status::Ok();
}

Status Device::sa_unmask(const wire::SecAggUnmaskRequest& m) {
  if (!sa_current(m)) return Status::Ok();
  if (m.survivors_size() > static_cast<int>(secagg::kMaxNeighbours) + 1)
    return Status(StatusCode::kInvalidArgument, std::string("SecAggUnmaskRequest: more survivors than neighbours + 1"));
  std::vector<uint32_t> surv(m.survivors().begin(), m.survivors().end());
  std::vector<secagg::UnmaskShare> out(secagg::kMaxNeighbours + 1);
  size_t written = 0;
  FEDRT_TRY(sa_->unmask(surv.data(), surv.size(), out.data(), out.size(), written));
  wire::Envelope env;
  auto* s = env.mutable_secagg_unmask();
  sa_head(s);
  for (size_t i = 0; i < written; ++i) {
    auto* w = s->add_shares();
    w->set_about(out[i].about);
    w->set_kind(static_cast<uint32_t>(out[i].kind));
    w->set_x(out[i].x);
    w->set_share(std::string(reinterpret_cast<const char*>(out[i].share), secagg::kKeyBytes));
  }
  sa_.reset();  // the round's secrets are no longer needed
  return sa_send(env);
}

Status Device::on_result(const wire::RoundResult& r) {
  auto sit = state_.algs.find(r.algorithm_index());
  if (sit == state_.algs.end()) return Status::Ok();
  AlgState& st = sit->second;
  if (!st.pending || st.run != r.run() || st.pending_round != r.round()) return Status::Ok();
  std::vector<double> theta;
  WireError err;
  if (!ValidateModel(r.global_model(), dim_, theta, err))
    return Status(StatusCode::kInvalidArgument, fmt::format("result rejected: {}", err.message));
  if (r.included()) {
    auto it = clients_.find(r.algorithm_index());
    if (!st.pending_payload.empty()) st.cv = st.pending_cv;  // the mirror absorbed m too
    if (it != clients_.end()) {
      LsaClient<double>& client = it->second;
      RoundPlan plan;
      plan.round = r.round();
      client.begin_round(st.pending_theta.data(), plan);  // restores theta_{t,H}^c (e.g. after a restart)
      client.apply_global(theta.data());                  // xi_c += coef (theta_{t+1} - theta_{t,H}^c)
      st.xi.assign(client.control_variate(), client.control_variate() + dim_);
    } else {
      // Restarted between update and result: rebuild the client from the state file.
      return Status(StatusCode::kInternal, std::string("result for an algorithm without a client"));
    }
  }
  st.pending = false;
  st.pending_payload.clear();
  st.pending_cv.clear();
  FEDRT_TRY(SaveState(opt_.state_file, state_));
  double norm = 0.0;
  for (double v : st.xi) norm += v * v;
  log("committed alg={} run={} round={} included={} xi_norm={:.6e}", r.algorithm_index(), r.run(), r.round(),
      r.included(), std::sqrt(norm));
  return Status::Ok();
}

Status Device::handle(const wire::Envelope& env, bool& stop, bool& done) {
  switch (env.body_case()) {
    case wire::Envelope::kWelcome: {
      const uint32_t idx = env.welcome().device_index();
      if (state_.index >= 0 && state_.index != static_cast<int>(idx)) {
        log("warning state file was for agent {}, coordinator says {}: starting fresh", state_.index, idx);
        state_ = PersistentState{};
      }
      state_.index = static_cast<int>(idx);
      FEDRT_TRY(build_oracle(idx));
      log("registered index={} devices={}", idx, env.welcome().num_devices());
      return Status::Ok();
    }
    case wire::Envelope::kAnnounce: return on_announce(env.announce());
    case wire::Envelope::kResult: {
      // A result replayed after a restart may arrive before any announcement built the client.
      auto sit = state_.algs.find(env.result().algorithm_index());
      if (sit != state_.algs.end() && !clients_.count(env.result().algorithm_index())) {
        // Rebuild the client from persisted xi with hyper-parameters from the experiment file.
        const auto& cfg = opt_.experiment;
        if (env.result().algorithm_index() < cfg.algorithms.size()) {
          auto alg = sim::LsaAlgorithmFromName(cfg.algorithms[env.result().algorithm_index()]);
          if (alg.ok()) {
            LsaHyper<double> hyper;
            hyper.algorithm = *alg;
            hyper.step_size = cfg.step;
            hyper.local_steps = static_cast<uint32_t>(cfg.local_steps);
            hyper.comm_prob = cfg.effective_comm_prob();
            auto& mem = client_arenas_[env.result().algorithm_index()];
            mem.assign(sizeof(double) * 3 * static_cast<size_t>(dim_) + 4 * Arena::kAlignment, 0);
            Arena arena(mem.data(), mem.size());
            auto cl = LsaClient<double>::create(arena, dim_, hyper);
            if (cl.ok()) {
              auto it = clients_.emplace(env.result().algorithm_index(), *cl).first;
              std::copy(sit->second.xi.begin(), sit->second.xi.end(), it->second.mutable_control_variate());
            }
          }
        }
      }
      return on_result(env.result());
    }
    case wire::Envelope::kAck:
      return Status::Ok();
    case wire::Envelope::kSecaggKeys: return sa_keys(env.secagg_keys());
    case wire::Envelope::kSecaggSharesIn: return sa_shares_in(env.secagg_shares_in());
    case wire::Envelope::kSecaggUnmaskRequest: return sa_unmask(env.secagg_unmask_request());
    case wire::Envelope::kShutdown:
      log("shutdown reason={}", env.shutdown().reason());
      stop = true;
      done = true;
      return Status::Ok();
    case wire::Envelope::kError: {
      const auto r = env.error().reason();
      log("coordinator error reason={}: {}", ErrorReasonName(r), env.error().message());
      if (r == wire::ERROR_IDENTITY || r == wire::ERROR_CONFIG_MISMATCH || r == wire::ERROR_PROTOCOL_VERSION) {
        stop = true;
        return Status(StatusCode::kPermissionDenied,
                      fmt::format("refused by the coordinator: {}: {}", ErrorReasonName(r), env.error().message()));
      }
      return Status::Ok();
    }
    default:
      return Status::Ok();
  }
}

Status Device::run() {
  FEDRT_TRY(tls_.init(opt_.credentials));
  if (opt_.problem != nullptr) {
    problem_ = opt_.problem;
  } else {
    auto p = sim::BuildProblem(opt_.experiment);
    if (!p.ok()) return p.status();
    owned_problem_ = std::move(*p);
    problem_ = &*owned_problem_;
  }
  dim_ = problem_->lsa.dim;
  auto loaded = LoadState(opt_.state_file);
  if (!loaded.ok()) return loaded.status();
  state_ = std::move(*loaded);
  for (const auto& [a, st] : state_.algs) {
    double norm = 0.0;
    for (double v : st.xi) norm += v * v;
    log("restored alg={} run={} xi_norm={:.6e} pending={} from {}", a, st.run, std::sqrt(norm),
        st.pending ? std::to_string(st.pending_round) : std::string("none"), opt_.state_file);
  }
  const uint64_t fp = ProblemFingerprint(opt_.experiment);
  long backoff = 100;
  auto last_ok = std::chrono::steady_clock::now();
  std::vector<uint8_t> buf(16384);
  for (;;) {
    Status st = tls_.connect(opt_.host, opt_.port, 1000);
    if (!st.ok()) {
      const auto waited =
          std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - last_ok).count();
      if (waited > opt_.give_up_ms)
        return Status(StatusCode::kUnavailable,
                      fmt::format("no connection to {}:{} for {} ms: {}", opt_.host, opt_.port, waited, st.message()));
      log("connect failed: {}; retry in {} ms", st.message(), backoff);
      std::this_thread::sleep_for(std::chrono::milliseconds(backoff));
      backoff = std::min<long>(backoff * 2, 3000);
      continue;
    }
    log("connected {}:{}", opt_.host, opt_.port);
    wire::Envelope hello;
    auto* h = hello.mutable_hello();
    h->set_protocol_version(kProtocolVersion);
    h->set_device_id(opt_.id);
    h->set_config_fingerprint(fp);
    for (const auto& [a, s] : state_.algs) {
      if (s.pending) {
        h->set_has_pending(true);
        h->set_pending_algorithm(a);
        h->set_pending_run(s.run);
        h->set_pending_round(s.pending_round);
      }
    }
    st = send(hello);
    FrameDecoder dec;
    bool stop = false, done = false;
    while (st.ok() && !stop) {
      auto n = tls_.read_some(buf.data(), buf.size());
      if (!n.ok()) {
        st = n.status();
        break;
      }
      if (*n == 0) continue;
      last_ok = std::chrono::steady_clock::now();
      dec.feed(buf.data(), *n);
      std::string body;
      WireError err;
      int k = 0;
      while (!stop && (k = dec.next(body, err)) == 1) {
        wire::Envelope env;
        if (!ParseEnvelope(body, env, err)) {
          st = Status(StatusCode::kDataLoss, "from coordinator: " + err.message);
          break;
        }
        Status hs = handle(env, stop, done);
        if (!hs.ok()) {
          if (stop) {
            tls_.close();
            return hs;
          }
          log("error {}", hs.message());
          if (hs.code() == StatusCode::kUnavailable || hs.code() == StatusCode::kDataLoss) {
            st = hs;
            break;
          }
        }
        if (env.body_case() == wire::Envelope::kWelcome) backoff = 100;
      }
      if (k < 0) st = Status(StatusCode::kDataLoss, "from coordinator: " + err.message);
    }
    tls_.close();
    if (done) return Status::Ok();
    log("disconnected: {}; reconnect in {} ms", st.message(), backoff);
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff));
    backoff = std::min<long>(backoff * 2, 3000);
    last_ok = std::chrono::steady_clock::now();
  }
}

}  // namespace

Status RunDevice(const DeviceOptions& options) {
  Device d(options);
  return d.run();
}

}  // namespace fedrt::net
