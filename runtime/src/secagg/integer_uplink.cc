// Integer uplink of the simulator: plain integer sum or SecAgg+ (host code).
#include "fedrt/secagg/integer_uplink.h"

#include <algorithm>

#include <fmt/format.h>

#include "fedrt/compression/bit_stream.h"
#include "fedrt/compression/stochastic_rounding.h"
#include "fedrt/secagg/protocol.h"

namespace fedrt::secagg {

Status IntegerUplink::init(int agents, int dim, const compression::QuantizerSpec& q, bool control_variates,
                          const SecAggSettings& s) {
  if (!Applies(q, false, 1.0)) return Status::InvalidArgument("integer uplink: needs the shared-scale rounding quantizer");
  if (control_variates && s.dropout > 0.0)
    return Status::InvalidArgument("secure aggregation: compression control variates need every agent in every round (secagg_dropout = 0)");
  if (s.enabled) {
    const uint64_t top = (uint64_t{1} << q.bits) - 1;
    if (agents < 3) return Status::InvalidArgument("secure aggregation needs at least 3 agents");
    if (static_cast<uint64_t>(agents) * top > 0xFFFFFFFFull)
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("secure aggregation: {} agents x {}-bit inputs can wrap Z_(2^32) (needs bits + log2 agents <= 32)",
                                agents, q.bits));
  }
  dim_ = dim;
  q_ = q;
  settings_ = s;
  x_.assign(static_cast<size_t>(agents) * dim, 0u);
  cap_ = compression::MaxPayloadBytes(q, dim);
  payload_.assign(static_cast<size_t>(agents) * cap_, 0);
  decoded_.assign(static_cast<size_t>(agents) * dim, 0.0);
  agents_ = agents;
  cv_ = control_variates;
  alpha_ = compression::ControlVariateStep(q, dim);  // 1 for rounding (omega = 0)
  v_.assign(cv_ ? static_cast<size_t>(agents) * dim : 0, 0.0);
  w_.assign(cv_ ? dim : 0, 0.0);
  return Status::Ok();
}

Status IntegerUplink::agent_quantize(uint32_t c, const double* update, const double* start, CounterRng rng) {
  double* g = decoded_.data() + static_cast<size_t>(c) * dim_;
  for (int i = 0; i < dim_; ++i) g[i] = update[i] - start[i];  // as CompressedLinks::agent_send
  double* v = cv_ ? v_.data() + static_cast<size_t>(c) * dim_ : nullptr;
  if (cv_)  // as CompressedDifference::encode: Q(g - V_c)
    for (int i = 0; i < dim_; ++i) g[i] -= v[i];
  uint8_t* out = payload_.data() + c * cap_;
  auto n = compression::RoundingEncode<double>(g, dim_, q_.bits, q_.clip, rng, out, cap_, g);
  if (!n.ok()) return n.status();
  if (cv_)  // V_c <- V_c + alpha m_c (g now holds m_c)
    for (int i = 0; i < dim_; ++i) v[i] += static_cast<double>(static_cast<double>(alpha_) * g[i]);
  compression::BitReader r(out, *n);  // the integers of the payload
  uint32_t* x = x_.data() + static_cast<size_t>(c) * dim_;
  for (int i = 0; i < dim_; ++i)
    if (!r.get(q_.bits, x[i])) return Status::Internal("integer uplink: payload shorter than d fields");
  return Status::Ok();
}

UplinkRound SumIntegerUplink(const std::vector<uint32_t>& who, const std::vector<const uint32_t*>& x, uint32_t dim,
                             uint32_t bits, uint64_t payload_bytes, const SecAggSettings& s, uint64_t seed, uint64_t run,
                             uint32_t round, std::vector<uint64_t>& sum) {
  UplinkRound r;
  sum.assign(dim, 0);
  if (!s.enabled) {
    for (const uint32_t* xc : x)
      for (uint32_t i = 0; i < dim; ++i) sum[i] += xc[i];
    r.who = who;
    r.bits_up = static_cast<uint64_t>(who.size()) * payload_bytes * 8;
    r.contributors = static_cast<uint32_t>(r.who.size());
    return r;
  }
  RoundParams p;
  p.n = static_cast<uint32_t>(who.size());
  p.dim = dim;
  p.bits = bits;
  p.round_id = run << 32 | round;
  p.graph_seed = Mix64(seed ^ Mix64(p.round_id + 0x6EA9));  // public
  DefaultGraph(p.n, p.k, p.t, std::max(0.2, s.dropout));
  if (s.neighbours > 0 && s.neighbours < p.k) {
    p.k = s.neighbours;
    p.t = (p.k + 1) / 2 + 1;
  }
  std::vector<DropPoint> drops;
  if (s.dropout > 0.0 && p.n > 0) {  // the simulated dropouts of this round
    drops.assign(p.n, DropPoint::kNone);
    std::vector<uint32_t> order(p.n);
    for (uint32_t i = 0; i < p.n; ++i) order[i] = i;
    CounterRng rng(Mix64(seed ^ 0xD209D209ull), run, 0, round, RngStream::kParticipation);
    for (uint32_t i = p.n - 1; i > 0; --i) std::swap(order[i], order[rng.below(i + 1)]);
    const uint32_t vanish = static_cast<uint32_t>(s.dropout * p.n);
    for (uint32_t i = 0; i < vanish; ++i) drops[order[i]] = DropPoint::kBeforeMasked;
  }
  const SimulatedRound sr = RunSimulatedRound(p, x, drops, Mix64(seed ^ 0xE27E27ull), nullptr);
  r.bits_up = sr.traffic.up_bytes * 8;
  r.bits_down_extra = sr.traffic.down_bytes * 8;
  if (!sr.status.ok()) {
    r.failure = sr.status.message();
    return r;  // contributors = 0: the model stays where it is
  }
  for (uint32_t u : sr.contributors) r.who.push_back(who[u]);
  for (uint32_t i = 0; i < dim; ++i) sum[i] = sr.sum[i];
  r.contributors = static_cast<uint32_t>(r.who.size());
  return r;
}

Result<UplinkRound> IntegerUplink::aggregate(const std::vector<uint32_t>& sampled, const double* start, uint64_t seed,
                                             uint64_t run, uint32_t round, double* out) {
  std::vector<const uint32_t*> inputs;
  for (uint32_t c : sampled) inputs.push_back(x_.data() + static_cast<size_t>(c) * dim_);
  std::vector<uint64_t> sum;
  UplinkRound r = SumIntegerUplink(sampled, inputs, static_cast<uint32_t>(dim_), q_.bits, cap_, settings_, seed, run,
                                   round, sum);
  r.contributors = static_cast<uint32_t>(r.who.size());
  if (cv_ && r.contributors != static_cast<uint32_t>(agents_))
    return Status(StatusCode::kFailedPrecondition,
                  fmt::format("round {}: compression control variates need all {} agents in every round, {} reported{}",
                              round, agents_, r.contributors, r.failure.empty() ? "" : " (" + r.failure + ")"));
  if (r.contributors == 0) return r;
  const double delta = 2.0 * q_.clip / static_cast<double>((1u << q_.bits) - 1u);
  const double m = static_cast<double>(r.contributors);
  if (!cv_) {
    for (int i = 0; i < dim_; ++i) out[i] = start[i] + static_cast<double>(sum[i]) * delta / m - q_.clip;
    return r;
  }
  for (int i = 0; i < dim_; ++i) {  // sum_c m_c = Delta S - m clip; mean g_hat = (W + sum m) / m
    const double msum = static_cast<double>(sum[i]) * delta - m * q_.clip;
    out[i] = start[i] + (w_[i] + msum) / m;
    w_[i] += alpha_ * msum;
  }
  return r;
}

nlohmann::json IntegerUplink::Describe(const SecAggSettings& s, uint32_t agents, uint32_t bits) {
  uint32_t k = 0, t = 0;
  DefaultGraph(agents, k, t, std::max(0.2, s.dropout));
  if (s.neighbours > 0 && s.neighbours < k) {
    k = s.neighbours;
    t = (k + 1) / 2 + 1;
  }
  return {{"protocol", "SecAgg+ (X25519, HKDF-SHA256, ChaCha20 masks in Z_(2^32), Shamir over GF(2^8))"},
          {"neighbours_at_full_participation", k},
          {"threshold_at_full_participation", t},
          {"design_dropout", std::max(0.2, s.dropout)},
          {"unmask_failure_bound", UnmaskFailureBound(agents, k, t, std::max(0.2, s.dropout))},
          {"simulated_dropout", s.dropout},
          {"bits", bits},
          {"aggregation", "integer sum of the b-bit payloads, dequantized once (same as without secure aggregation)"}};
}

}  // namespace fedrt::secagg
