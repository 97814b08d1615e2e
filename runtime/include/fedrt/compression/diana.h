#pragma once
// Compressed differences with control variates (DIANA; V_c in FedEM;
// docs/algorithms.md 4). One instance per (agent, direction) on EACH side of
// the link: the sender's and the receiver's memories V stay identical because
// both update them with the decoded message m:
//   sender:   m = Q(g - V), send bytes(m), g_hat = V + m; once the receiver
//             has taken the message: commit(), V <- V + alpha m
//   receiver: m = decode(bytes), g_hat = V + m, V <- V + alpha m
// with alpha = 1/(1+omega). Without control variates V stays 0 (plain Q(g)).
// The sender's commit is separate because a message can be lost: a device
// moves V only when the server says its update was aggregated.
// Device code: memory from an Arena, no heap, no exceptions.

#include <cstdint>
#include <cstring>

#include "fedrt/compression/payload.h"
#include "fedrt/compression/quantizer.h"
#include "fedrt/core/arena.h"
#include "fedrt/core/rng.h"
#include "fedrt/core/status.h"

namespace fedrt::compression {

template <class S>
class CompressedDifference {
 public:
  CompressedDifference() = default;

  // Allocates V (zero) and a decode scratch of `dim` scalars in `arena`.
  static constexpr size_t ArenaBytes(int dim) { return sizeof(S) * 2 * static_cast<size_t>(dim) + Arena::kAlignment; }

  static Result<CompressedDifference> create(Arena& arena, int dim, const QuantizerSpec& spec, bool control_variate) {
    if (dim <= 0) return Status::InvalidArgument("compressed difference: dimension must be positive");
    FEDRT_TRY(ValidateSpec(spec));
    auto buf = arena.allocate<S>(static_cast<size_t>(dim) * 2);
    if (!buf.ok()) return buf.status();
    CompressedDifference c;
    c.dim_ = dim;
    c.spec_ = spec;
    c.control_variate_ = control_variate;
    c.alpha_ = static_cast<S>(ControlVariateStep(spec, dim));
    c.memory_ = buf->data;
    c.scratch_ = buf->data + dim;
    return c;
  }

  // Sender: writes bytes(Q(g - V)) to out[0..cap) and g_hat = V + m (what
  // the receiver reconstructs); m is kept for commit(). Returns the payload
  // bytes. g and g_hat may be the same array.
  Result<size_t> encode(const S* g, CounterRng& rng, uint8_t* out, size_t cap, S* g_hat) {
    for (int i = 0; i < dim_; ++i) g_hat[i] = g[i] - memory_[i];
    auto n = Encode<S>(spec_, g_hat, dim_, rng, out, cap, scratch_);
    if (!n.ok()) return n.status();
    for (int i = 0; i < dim_; ++i) g_hat[i] = memory_[i] + scratch_[i];
    return n;
  }

  // Sender, after the receiver took the last encoded message: V <- V + alpha m.
  void commit() {
    if (!control_variate_) return;
    for (int i = 0; i < dim_; ++i) memory_[i] += alpha_ * scratch_[i];
  }

  // Receiver: decodes in[0..n), g_hat = V + m, V <- V + alpha m. On a bad
  // payload returns the decoder's status and leaves V unchanged.
  Status decode(const uint8_t* in, size_t n, S* g_hat) {
    FEDRT_TRY(Decode<S>(spec_, in, n, dim_, scratch_));
    absorb(g_hat);
    return Status::Ok();
  }

  // Sets V (e.g. FedEM's V_{0,c}); both ends must set the same value.
  void set_memory(const S* v) { std::memcpy(memory_, v, sizeof(S) * dim_); }

  // Largest payload of one message.
  size_t max_payload_bytes() const { return MaxPayloadBytes(spec_, dim_); }
  S alpha() const { return alpha_; }
  const S* memory() const { return memory_; }  // V (V_c on the agent)
  S* mutable_memory() { return memory_; }      // for parking a sender
  int dim() const { return dim_; }
  // The decoded message m of the last encode/decode.
  const S* message() const { return scratch_; }
  S* mutable_message() { return scratch_; }  // for restoring a pending message
  bool control_variate() const { return control_variate_; }

 private:
  void absorb(S* g_hat) {
    for (int i = 0; i < dim_; ++i) {
      g_hat[i] = memory_[i] + scratch_[i];
      if (control_variate_) memory_[i] += alpha_ * scratch_[i];
    }
  }

  int dim_ = 0;
  QuantizerSpec spec_{};
  bool control_variate_ = false;
  S alpha_ = S(1);
  S* memory_ = nullptr;
  S* scratch_ = nullptr;
};

}  // namespace fedrt::compression
