#pragma once
// The simulator's compressed links (ALGORITHMS.md 4): one CompressedDifference
// pair per agent on the uplink (V_c on the agent, its mirror on the server),
// and optionally a compressed broadcast: the server sends Q(theta_{t+1} - xhat_t)
// and every agent's model follows xhat_{t+1} = xhat_t + m. Payloads are
// really encoded and decoded; bits are 8 * the encoded bytes.

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "fedrt/compression/diana.h"
#include "fedrt/core/arena.h"
#include "fedrt/core/rng.h"
#include "fedrt/sim/compression_em_config.h"

namespace fedrt::sim {

// summary.json's settings.compression for a `dim`-vector uplink (omega and
// alpha = 1/(1+omega) depend on the vector length).
inline nlohmann::json CompressionSettingsJson(const CompressionSettings& k, int dim) {
  const compression::QuantizerSpec& q = k.quantizer;
  return {{"quantizer", QuantizerKindName(q.kind)},
          {"levels", q.levels},
          {"elias_gamma", q.elias_gamma},
          {"bits", q.bits},
          {"clip", q.clip},
          {"omega", compression::Omega(q, dim)},
          {"control_variates", k.control_variates},
          {"alpha", k.control_variates ? compression::ControlVariateStep(q, dim) : 0.0},
          {"downlink", k.downlink}};
}

class CompressedLinks {
 public:
  // Agent id used to key the server's downlink compression stream.
  static constexpr uint64_t kServerRngAgent = 0xFFFFFFFFull;

  Status init(int agents, int dim, const CompressionSettings& s) {
    settings_ = s;
    dim_ = dim;
    if (!s.enabled()) return Status::Ok();
    const size_t per = sizeof(double) * 2 * static_cast<size_t>(dim) + 2 * Arena::kAlignment;
    memory_.assign(per * (2 * static_cast<size_t>(agents) + 1) + 64, 0);
    Arena arena(memory_.data(), memory_.size());
    agent_.clear();
    server_.clear();
    for (int c = 0; c < agents; ++c) {
      auto a = compression::CompressedDifference<double>::create(arena, dim, s.quantizer, s.control_variates);
      if (!a.ok()) return a.status();
      agent_.push_back(*a);
      auto b = compression::CompressedDifference<double>::create(arena, dim, s.quantizer, s.control_variates);
      if (!b.ok()) return b.status();
      server_.push_back(*b);
    }
    auto d = compression::CompressedDifference<double>::create(arena, dim, s.quantizer, false);
    if (!d.ok()) return d.status();
    down_ = *d;
    const size_t cap = agent_.empty() ? 0 : agent_[0].max_payload_bytes();
    wire_.assign(static_cast<size_t>(agents) * cap, 0);
    wire_size_.assign(static_cast<size_t>(agents), 0);
    down_wire_.assign(cap, 0);
    scratch_.assign(static_cast<size_t>(agents) * dim, 0.0);
    return Status::Ok();
  }
  bool enabled() const { return settings_.enabled(); }
  bool downlink() const { return settings_.enabled() && settings_.downlink; }

  // Agent c (thread-safe across agents): encodes g_c = update - start into its
  // wire buffer; `sent` = start + g_hat_c, what the server will reconstruct.
  Status agent_send(uint32_t c, const double* update, const double* start, CounterRng& rng, double* sent) {
    double* g = scratch_.data() + static_cast<size_t>(c) * dim_;
    for (int i = 0; i < dim_; ++i) g[i] = update[i] - start[i];
    const size_t cap = agent_[c].max_payload_bytes();
    auto n = agent_[c].encode(g, rng, wire_.data() + c * cap, cap, g);
    if (!n.ok()) return n.status();
    wire_size_[c] = *n;
    for (int i = 0; i < dim_; ++i) sent[i] = start[i] + g[i];
    return Status::Ok();
  }
  // Server: decodes agent c's payload; out = start + g_hat_c. Returns the payload bits.
  Result<uint64_t> server_receive(uint32_t c, const double* start, double* out) {
    const size_t cap = server_[c].max_payload_bytes();
    FEDRT_TRY(server_[c].decode(wire_.data() + c * cap, wire_size_[c], out));
    for (int i = 0; i < dim_; ++i) out[i] += start[i];
    return static_cast<uint64_t>(wire_size_[c]) * 8;
  }
  // Downlink: encodes theta_next - xhat, decodes it as the agents do, and
  // updates xhat (the agents' model) in place. Returns the bits of one copy.
  Result<uint64_t> broadcast(const double* theta_next, double* xhat, uint64_t seed, uint64_t run, uint32_t round) {
    std::vector<double>& g = down_g_;
    g.assign(dim_, 0.0);
    for (int i = 0; i < dim_; ++i) g[i] = theta_next[i] - xhat[i];
    CounterRng rng(seed, run, kServerRngAgent, round, RngStream::kCompression);
    auto n = down_.encode(g.data(), rng, down_wire_.data(), down_wire_.size(), g.data());
    if (!n.ok()) return n.status();
    // The agents decode the same bytes (a stateless receiver: no control variate).
    std::vector<double> m(dim_);
    FEDRT_TRY(compression::Decode<double>(settings_.quantizer, down_wire_.data(), *n, dim_, m.data()));
    for (int i = 0; i < dim_; ++i) xhat[i] += m[i];
    return static_cast<uint64_t>(*n) * 8;
  }

 private:
  CompressionSettings settings_{};
  int dim_ = 0;
  std::vector<uint8_t> memory_;
  std::vector<compression::CompressedDifference<double>> agent_, server_;
  compression::CompressedDifference<double> down_;
  std::vector<uint8_t> wire_, down_wire_;
  std::vector<size_t> wire_size_;
  std::vector<double> scratch_, down_g_;
};

}  // namespace fedrt::sim
