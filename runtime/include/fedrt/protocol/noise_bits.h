#pragma once
// NoiseBits: where a device's distributed-DP draws come from (docs/privacy.md,
// "Distributed DP under SecAgg+"): a ChaCha20 keystream under a 32-byte key
// the device's own entropy gives for the round (the TLS random generator on
// Linux and on the microcontroller, never the experiment's seed, which the
// coordinator knows), or, under privacy.test_seed only, the counter stream
// of privacy::DdgTestNoiseKey, the same in every driver and NOT private.
// Words are taken as little-endian 64-bit values of the keystream. Device
// code: a 64-byte buffer, no heap.

#include <cstdint>

#include "fedrt/core/rng.h"
#include "fedrt/core/status.h"
#include "fedrt/protocol/client_secagg.h"
#include "fedrt/secagg/crypto.h"

namespace fedrt::protocol {

class NoiseBits {
 public:
  NoiseBits() = default;
  NoiseBits(const NoiseBits&) = delete;
  NoiseBits& operator=(const NoiseBits&) = delete;
  ~NoiseBits() {
    secagg::Wipe(key_, sizeof key_);
    secagg::Wipe(buf_, sizeof buf_);
  }

  // Reproducible draws (privacy.test_seed): NOT private.
  void use_counter(uint64_t key) {
    counter_ = true;
    rng_ = CounterRng(key);
  }
  // A fresh key from the device's entropy for round `round_id`, device id u.
  Status use_entropy(EntropyFn entropy, void* ctx, uint64_t round_id, uint32_t u) {
    counter_ = false;
    block_ = 0;
    pos_ = sizeof buf_;
    if (entropy == nullptr || entropy(ctx, round_id, u, key_, sizeof key_) != 0)
      return Status::Internal("distributed DP: the device's entropy source failed");
    return Status::Ok();
  }

  uint64_t next_u64() {
    if (counter_) return rng_.next_u64();
    if (pos_ + 8 > sizeof buf_) {
      const uint8_t nonce[secagg::kNonceBytes] = {'f', 'e', 'd', 'r', 't', ' ', 'd', 'd', 'g'};
      if (!secagg::ChaCha20Xor(key_, nonce, block_++, nullptr, buf_, sizeof buf_).ok()) failed_ = true;
      pos_ = 0;
    }
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = v << 8 | buf_[pos_ + static_cast<size_t>(i)];
    pos_ += 8;
    return v;
  }
  // Whether the keystream ever failed (the draws are then not to be used).
  bool failed() const { return failed_; }

 private:
  bool counter_ = true;
  bool failed_ = false;
  CounterRng rng_{0};
  uint8_t key_[secagg::kKeyBytes] = {};
  uint8_t buf_[64] = {};
  uint32_t block_ = 0;
  size_t pos_ = 64;
};

}  // namespace fedrt::protocol
