#pragma once
// The server side of SecAgg+ (protocol.h) as a pure state machine (host code:
// the coordinator and the simulator drive it). It routes keys and encrypted
// shares, adds masked inputs into one running sum in Z_(2^32) (O(d) memory),
// and at the end removes the self masks of the survivors and the pairwise
// masks of the devices that dropped after sharing keys. It never sees a
// device's input in the clear. A round that cannot be unmasked fails with a
// reason naming the device and the shares that are missing. A share that
// lies off the polynomial the others agree on is located and dropped (up to
// (m - t) / 2 per secret, shamir_decode.h), and its sender named
// (docs/secure-aggregation.md "Cheating participants").

#include <cstdint>
#include <string>
#include <vector>

#include "fedrt/core/status.h"
#include "fedrt/secagg/protocol.h"

namespace fedrt::secagg {

// A round-3 share off the polynomial of `about`'s secret: `holder` revealed
// a wrong share, or `about` dealt it a wrong one in round 1 (shares travel
// under pairwise keys, so the server cannot tell which from one share).
struct OffShare {
  uint32_t holder = 0;
  uint32_t about = 0;
  ShareKind kind = ShareKind::kSelfSeed;
};

class SecAggServer {
 public:
  Status begin(const RoundParams& p);
  // Round 0.
  Status on_advertise(const Advertise& a);
  Status close_advertise();  // U1 = who advertised
  // What the server sends device `id` (in U1): its neighbours' advertisements.
  std::vector<Advertise> neighbour_ads(uint32_t id) const;
  // Round 1: device `from` sends one ciphertext to each neighbour in U1.
  Status on_shares(uint32_t from, const ShareCiphertext* cts, size_t count);
  Status close_shares();  // U2 = who shared
  std::vector<ShareCiphertext> shares_for(uint32_t id) const;
  // Round 2: y_u, added to the running sum.
  Status on_masked(uint32_t from, const uint32_t* y);
  // Round 2 through a gateway: sum_{u in ids} y_u mod 2^32 of `count` devices
  // at once (each in U2, none in U3 yet, no id twice), checked before the sum moves.
  Status on_masked_sum(const uint32_t* ids, size_t count, const uint32_t* ysum);
  Status close_masked();  // U3 = who sent a masked input
  // What the server sends device `id` (in U3): its neighbours in U3 (and itself).
  std::vector<uint32_t> survivors_for(uint32_t id) const;
  // Consistency check (protocol.h ConsistencyTag): survivor `from` sends one
  // tag to each neighbour in its survivor list. Optional for a driver whose
  // devices answer unmask() directly; once close_check() ran, only devices
  // that sent their tags (U4) may unmask, and U4 needs t members.
  Status on_check(uint32_t from, const ConsistencyTag* tags, size_t count);
  Status close_check();
  // What the server forwards device `id` (in U4): the tags addressed to it.
  std::vector<ConsistencyTag> checks_for(uint32_t id) const;
  // Round 3.
  Status on_unmask(uint32_t from, const UnmaskShare* shares, size_t count);
  // Removes the masks: sum_{u in U3} x_u mod 2^32 into `sum` (d entries).
  Status finish(std::vector<uint32_t>& sum);

  const RoundParams& params() const { return p_; }
  // Devices whose inputs are in the sum (U3), ascending.
  std::vector<uint32_t> contributors() const;
  uint32_t count(int set) const;  // |U1|, |U2|, |U3|, |U4| for set = 1, 2, 3, 4
  // After finish(): the shares dropped as off their polynomial.
  const std::vector<OffShare>& off_shares() const { return off_; }
  // The devices those shares convict, ascending: a holder off in >= 2 sharings,
  // or a dealer with >= 2 wrong shares from holders not convicted.
  std::vector<uint32_t> cheaters() const;

 private:
  enum class Phase { kIdle, kAdvertise, kShares, kMasked, kUnmask, kDone, kFailed };
  struct Held {
    uint32_t from;
    uint8_t x;
    uint8_t share[kKeyBytes];
  };
  Status fail(Status st);

  RoundParams p_{};
  Phase phase_ = Phase::kIdle;
  std::vector<Advertise> ads_;
  std::vector<uint8_t> u1_, u2_, u3_, u4_, unmasked_;
  bool checked_ = false;  // close_check() ran: unmasking needs U4
  std::vector<std::vector<ConsistencyTag>> tags_in_;
  std::vector<std::vector<uint32_t>> nbrs_;
  std::vector<std::vector<ShareCiphertext>> inbox_;
  std::vector<std::vector<Held>> held_;  // shares revealed about device u (b if u in U3, s_sk otherwise)
  std::vector<OffShare> off_;
  std::vector<uint32_t> sum_;
};

}  // namespace fedrt::secagg
