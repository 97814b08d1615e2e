#pragma once
// The simulator's integer uplink for the shared-scale stochastic rounding
// quantizer (host code). Each agent's message is its vector of b-bit integers
// x_c = Q(theta_{t,H}^c - theta_t) (the same draws as CompressedLinks); the
// server only ever gets S = sum_c x_c, either as a plain integer sum or from a
// SecAgg+ round run with the device and server state machines, and
// dequantizes once: mean = theta_t + Delta S / m - clip. Both paths therefore
// give bit-identical iterates for the same seeds.
// With compression control variates (DIANA, alpha = 1 for rounding) agent c
// sends Q(g_c - V_c) and keeps V_c <- V_c + m_c; the server needs
// sum_c (V_c + m_c), which it can track from sums alone only when every agent
// reports in every round: it keeps W = sum_c V_c and W <- W + alpha sum_c m_c.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fedrt/compression/quantizer.h"
#include "fedrt/core/rng.h"
#include "fedrt/core/status.h"
#include "fedrt/secagg/settings.h"
#include "fedrt/secagg/simulated_round.h"

namespace fedrt::secagg {

struct UplinkRound {
  uint32_t contributors = 0;        // m, agents in the sum (0: the round failed)
  std::vector<uint32_t> who;        // their agent ids
  uint64_t bits_up = 0;             // all uplink bits of the round
  uint64_t bits_down_extra = 0;     // protocol traffic server -> devices (secure aggregation)
  std::string failure;              // why a secure round failed (empty if it did not)
};

// S = sum over `who` of x[i] (x[i] is agent who[i]'s d integers): a plain
// integer sum, or one SecAgg+ round among them with the settings' simulated
// dropouts. The result lists the contributors (empty and `failure` set when a
// secure round fails) and the round's bits.
UplinkRound SumIntegerUplink(const std::vector<uint32_t>& who, const std::vector<const uint32_t*>& x, uint32_t dim,
                             uint32_t bits, uint64_t payload_bytes, const SecAggSettings& s, uint64_t seed, uint64_t run,
                             uint32_t round, std::vector<uint64_t>& sum);

class IntegerUplink {
 public:
  // True for the settings this uplink handles: rounding, and control variates
  // only with full participation (else the server needs each V_c).
  static bool Applies(const compression::QuantizerSpec& q, bool control_variates, double participation) {
    return q.kind == compression::QuantizerKind::kRounding && (!control_variates || participation >= 1.0);
  }
  Status init(int agents, int dim, const compression::QuantizerSpec& q, bool control_variates, const SecAggSettings& s);
  bool secure() const { return settings_.enabled; }

  // Agent c (thread-safe across agents): x_c from update - start with `rng`.
  Status agent_quantize(uint32_t c, const double* update, const double* start, CounterRng rng);

  // Server: S over `sampled` (plain or secure) and out = start + Delta S / m - clip.
  Result<UplinkRound> aggregate(const std::vector<uint32_t>& sampled, const double* start, uint64_t seed, uint64_t run,
                                uint32_t round, double* out);

  // summary.json description of the secure-aggregation settings for n agents.
  static nlohmann::json Describe(const SecAggSettings& s, uint32_t agents, uint32_t bits);

 private:
  int dim_ = 0;
  compression::QuantizerSpec q_{};
  SecAggSettings settings_{};
  std::vector<uint32_t> x_;        // agents x dim integers
  std::vector<uint8_t> payload_;   // per-agent encode scratch
  std::vector<double> decoded_;    // per-agent decode scratch
  size_t cap_ = 0;
  int agents_ = 0;
  bool cv_ = false;
  double alpha_ = 1.0;
  std::vector<double> v_;          // agents' V_c (agent side)
  std::vector<double> w_;          // server: W = sum_c V_c
};

}  // namespace fedrt::secagg
