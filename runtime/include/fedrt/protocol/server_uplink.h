#pragma once
// ServerUplink: how the server takes one device's update (docs/architecture.md,
// "Uplink"). It validates every segment with the bounded decoders before any
// state moves, then
//   raw:        adds the values (LSA, optimisation without a quantizer);
//   coded:      adds start + V_c + m, keeping the mirror V_c of each device's
//               compression memory (DIANA), or FedEM's m alone;
//   integer:    adds the b-bit fields of the rounding quantizer to exact
//               integer sums S (plain, or the SecAgg+ sum) and dequantizes
//               once at the close: start + Delta S / m - clip, with the
//               memories' sum W when control variates ride on it.
// Host code.

#include <cstdint>
#include <string>
#include <vector>

#include "fedrt/config/task.h"
#include "fedrt/core/status.h"
#include "fedrt/protocol/messages.h"
#include "fedrt/protocol/server_core.h"

namespace fedrt::protocol {

class ServerUplink {
 public:
  enum class Mode : uint8_t { kRaw, kCoded, kInteger };

  Status init(const config::Task& task, const ServerCore& core, uint32_t agents);
  Mode mode() const { return mode_; }
  // The integer sum with control variates needs every agent in every round.
  bool needs_everyone() const { return mode_ == Mode::kInteger && memory_ && !message_only_; }
  Encoding expected_encoding(bool initial) const;

  void start_round();
  // Validates and aggregates agent c's update; on error nothing changed and
  // the message says why. Returns the payload bits.
  // `announced` is the broadcast the devices received (their starts).
  Result<uint64_t> accept(uint32_t agent, const Update& u, const double* announced, ServerCore& core);
  // Integer mode: the m contributors' sum (from accept(), or `secure_sum` of a
  // SecAgg+ round over the concatenated segments) into the server core.
  void close_integer(uint32_t m, const uint32_t* secure_sum, const double* announced, ServerCore& core);

  // Compression memories: device c's mirror V_c (chains x segment_dim
  // values; empty when the server keeps none or c never reported).
  bool has_mirrors() const { return mode_ == Mode::kCoded && memory_ && !message_only_; }
  const std::vector<double>& mirror(uint32_t agent) const { return mirrors_[agent]; }
  Status set_mirror(uint32_t agent, const std::vector<double>& v);
  // What else persists: W per segment (integer mode with memories).
  void export_state(std::vector<double>& out) const { out = w_; }
  Status import_state(const std::vector<double>& in);

 private:
  Mode mode_ = Mode::kRaw;
  compression::QuantizerSpec q_{};
  bool memory_ = false;        // compression control variates (DIANA)
  bool message_only_ = false;  // FedEM: the server adds m and keeps V itself
  Reconstruction rec_ = Reconstruction::kValue;
  uint32_t chains_ = 1;
  int seg_ = 0;
  double alpha_ = 1.0;
  std::vector<std::vector<double>> mirrors_;
  std::vector<double> w_;                 // integer mode: W = sum_c V_c per segment
  std::vector<uint64_t> isum_;            // integer mode: S per segment
  std::vector<double> scratch_, value_;   // decoded messages of every segment, one reconstructed value
};

}  // namespace fedrt::protocol
