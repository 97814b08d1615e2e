#pragma once
// ServerUplink: how the server takes one device's update (docs/architecture.md,
// "Uplink"). It validates every segment with the bounded decoders before any
// state moves, then
//   raw:        adds the values (LSA, optimisation without a quantizer);
//   coded:      adds start + m (no memories) or FedEM's m alone; with
//               compression memories (DIANA) it adds m to an exact sum S_m
//               and closes the round with start + W/N + S_m/|S|;
//   integer:    adds the b-bit fields of the rounding quantizer to exact
//               integer sums S (plain, or the SecAgg+ sum) and dequantizes
//               once at the close: start + Delta S / |S| - clip, or with
//               memories start + W/N + S_m/|S|, S_m = Delta S - |S| clip.
// With memories the server keeps only W = sum_c V_c over all N agents
// (chains x segment_dim values, whatever N): W <- W + alpha S_m at every
// close, which is exactly what the members add to their V_c when their
// round result says they were included. Host code.

#include <cstdint>
#include <string>
#include <vector>

#include "fedrt/task/task.h"
#include "fedrt/core/exact_sum_array.h"
#include "fedrt/core/status.h"
#include "fedrt/protocol/messages.h"
#include "fedrt/protocol/server_core.h"

namespace fedrt::protocol {

class ServerUplink {
 public:
  enum class Mode : uint8_t { kRaw, kCoded, kInteger };

  Status init(const task::Task& task, const ServerCore& core, uint32_t agents);
  Mode mode() const { return mode_; }
  // Whether the round's aggregate is formed at close() (integer mode, or
  // compression memories) rather than update by update in accept().
  bool closes_round() const { return mode_ == Mode::kInteger || keeps_sum(); }
  Encoding expected_encoding(bool initial) const;

  void start_round();
  // Validates and aggregates agent c's update; on error nothing changed and
  // the message says why. Returns the payload bits.
  // `announced` is the broadcast the devices received (their starts).
  Result<uint64_t> accept(uint32_t agent, const Update& u, const double* announced, ServerCore& core);
  // The round's close with its m members (when closes_round()): integer mode
  // takes their sum from accept(), or `secure_sum` of a SecAgg+ round over the
  // concatenated segments. Adds start + W/N + S_m/m (memories; W <- W + alpha
  // S_m), start + S_m/m (integer, none) or FedEM's S_m to the server core.
  void close(uint32_t m, const uint32_t* secure_sum, const double* announced, ServerCore& core);

  // Chunked updates (docs/architecture.md, "Chunked transfer"). The header's
  // encoding, segments and byte counts, checked before any chunk is taken.
  Status check_stream(const Update& header) const;
  // Raw float64 values are aggregated chunk by chunk as they arrive; every
  // other encoding is decoded by accept() once the update is whole.
  bool streams_values(bool initial) const { return !initial && mode_ == Mode::kRaw; }
  // Bytes [offset, offset + n) of raw segment k: validated (whole finite
  // values), then added to the server core, or taken back with `negate`.
  Status add_chunk(uint32_t k, uint64_t offset, const uint8_t* data, size_t n, bool negate, ServerCore& core);
  // A raw update is whole: it counts once per segment.
  void count_stream(ServerCore& core) const;

  // The bound on an update's L2 norm (docs/security.md, "What a malicious
  // device can do to the model"): accept() refuses a longer update with
  // kResourceExhausted before anything moves. The norm is that of what the
  // update adds relative to the broadcast: raw LSA theta_H^c - theta_t, raw
  // optimisation dx (every chain), a coded or integer update its decoded
  // message m (relative to the start and the compression memory), FedEM m.
  void set_max_norm(double bound) { max_norm_ = bound; }
  double max_norm() const { return max_norm_; }
  // sq plus the squares of segment k's entries [first, first + n) of the
  // update, given its decoded values (raw: the start is taken off).
  double add_update_squares(uint32_t k, int first, const double* values, int n, const double* announced,
                            const ServerCore& core, double sq) const;
  // Whether an update of this L2 norm is refused (NaN and infinity are), and why.
  bool over_norm(double norm) const { return !(norm <= max_norm_); }
  std::string over_norm_reason() const;

  // Compression memories: the server keeps W = sum_c V_c (chains x segment_dim).
  bool keeps_sum() const { return memory_ && !message_only_; }
  const std::vector<double>& memory_sum() const { return w_; }
  // What persists: W (empty without memories), restored in place.
  std::vector<double>& mutable_memory_sum() { return w_; }

  // The round's sums a partial aggregate carries (docs/gateways.md): the
  // exact S_m of the coded uplink with memories (null otherwise) and the
  // integer uplink's S (empty otherwise), chains x segment_dim each.
  ExactSumArray* message_sum() { return msum_.size() > 0 ? &msum_ : nullptr; }
  std::vector<uint64_t>& integer_sums() { return isum_; }
  // The largest integer one update adds to a coordinate of S: 2^bits - 1.
  uint64_t max_field() const { return (uint64_t{1} << q_.bits) - 1; }

 private:
  Mode mode_ = Mode::kRaw;
  compression::QuantizerSpec q_{};
  bool memory_ = false;        // compression control variates (DIANA)
  bool message_only_ = false;  // FedEM: the server adds m and keeps V itself
  Reconstruction rec_ = Reconstruction::kValue;
  uint32_t agents_ = 1;
  uint32_t chains_ = 1;
  int seg_ = 0;
  double alpha_ = 1.0;
  double max_norm_ = 0;  // set by the session (ServerSession::init)
  std::vector<double> w_;                 // memories: W = sum_c V_c per segment
  std::vector<uint8_t> msum_memory_;      // msum_'s arena
  ExactSumArray msum_;                    // coded mode with memories: S_m, exactly, per segment
  std::vector<uint64_t> isum_;            // integer mode: S per segment
  std::vector<double> scratch_, value_;   // decoded messages of every segment, one reconstructed value
};

}  // namespace fedrt::protocol
