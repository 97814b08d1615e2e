#pragma once
// ClientSecAgg: a device's part in one SecAgg+ round (secagg/device.h) as the
// client session drives it: advertise fresh keys, share them with the
// neighbours, send the masked input y_u = x_u + masks, confirm the survivor
// list to the neighbours (consistency check), reveal the unmasking shares. Its input x_u is the b-bit integers of the device's rounding
// payload. Buffers for kMaxNeighbours neighbours come from an Arena once.
// Device code.

#include <cstdint>
#include <new>

#include "fedrt/core/arena.h"
#include "fedrt/core/status.h"
#include "fedrt/protocol/messages.h"
#include "fedrt/secagg/device.h"

namespace fedrt::protocol {

// Draws n random bytes into out for the secure round `round_id` where the
// device has id u (a hardware RNG or DRBG on devices, which ignore both; the
// simulator derives them from its seed). Returns 0 on success.
using EntropyFn = int (*)(void* ctx, uint64_t round_id, uint32_t u, uint8_t* out, size_t n);

class ClientSecAgg {
 public:
  static constexpr size_t ArenaBytes(uint32_t max_inputs) {
    return sizeof(secagg::SecAggDevice) + sizeof(secagg::ShareCiphertext) * secagg::kMaxNeighbours +
           sizeof(secagg::UnmaskShare) * (secagg::kMaxNeighbours + 1) +
           sizeof(secagg::ConsistencyTag) * secagg::kMaxNeighbours + 2 * sizeof(uint32_t) * max_inputs +
           5 * Arena::kAlignment;
  }

  Status create(Arena& arena, uint32_t max_inputs) {
    auto dev = arena.allocate<uint8_t>(sizeof(secagg::SecAggDevice));
    auto cts = arena.allocate<secagg::ShareCiphertext>(secagg::kMaxNeighbours);
    auto sh = arena.allocate<secagg::UnmaskShare>(secagg::kMaxNeighbours + 1);
    auto tags = arena.allocate<secagg::ConsistencyTag>(secagg::kMaxNeighbours);
    auto xy = arena.allocate<uint32_t>(2 * static_cast<size_t>(max_inputs));
    if (!dev.ok() || !cts.ok() || !sh.ok() || !tags.ok() || !xy.ok())
      return Status::ResourceExhausted("secure aggregation: not enough memory for the device's SecAgg+ tables");
    device_ = new (dev->data) secagg::SecAggDevice();
    cts_ = cts->data;
    shares_ = sh->data;
    tags_ = tags->data;
    x_ = xy->data;
    y_ = xy->data + max_inputs;
    max_inputs_ = max_inputs;
    return Status::Ok();
  }

  // Input buffer x_u (the caller fills `count` integers before start()).
  uint32_t* input() { return x_; }

  // Round 0: fresh secrets from `entropy`, SecAggAdvertise.
  Status start(const RoundId& id, const SecAggRound& r, uint32_t count, uint32_t bits, EntropyFn entropy, void* ctx,
               SecAggAdvertiseMsg& out) {
    open_ = false;
    if (count > max_inputs_) return Status::OutOfRange("secure aggregation: input longer than this device holds");
    secagg::RoundParams p;
    p.round_id = r.round_id;
    p.graph_seed = r.graph_seed;
    p.n = r.n;
    p.k = r.k;
    p.t = r.t;
    p.dim = count;
    p.bits = bits;
    FEDRT_TRY(secagg::ValidateParams(p));
    if (r.id >= p.n) return Status::InvalidArgument("secure aggregation: device id outside 0..n-1");
    if (p.k > secagg::kMaxNeighbours)  // a device that cannot hold k neighbours must not advertise
      return Status::ResourceExhausted("secure aggregation: more neighbours than this device holds");
    secagg::DeviceEntropy e;
    if (entropy == nullptr || entropy(ctx, r.round_id, r.id, reinterpret_cast<uint8_t*>(&e), sizeof e) != 0)
      return Status::Internal("secure aggregation: the entropy source failed");
    Status st = device_->advertise(p, r.id, e, out.keys);
    volatile uint8_t* wipe = reinterpret_cast<volatile uint8_t*>(&e);
    for (size_t i = 0; i < sizeof e; ++i) wipe[i] = 0;
    FEDRT_TRY(st);
    out.id = id;
    id_ = id;
    count_ = count;
    open_ = true;
    return Status::Ok();
  }

  bool open_for(const RoundId& id) const { return open_ && id == id_; }

  // Round 1: one share ciphertext per advertised neighbour.
  Status on_keys(const SecAggKeysMsg& m, SecAggSharesMsg& out) {
    if (m.peers.size > secagg::kMaxNeighbours) return fail(Status::InvalidArgument("SecAggKeys: more peers than neighbours"));
    size_t written = 0;
    Status st = device_->share_keys(m.peers.data, m.peers.size, cts_, secagg::kMaxNeighbours, written);
    if (!st.ok()) return fail(st);
    out.id = id_;
    out.shares = View<secagg::ShareCiphertext>{cts_, static_cast<uint32_t>(written)};
    return Status::Ok();
  }

  // Round 2: y_u = x_u + PRG(b_u) + sum_v +-PRG(s_uv) mod 2^32.
  Status on_shares_in(const SecAggSharesMsg& m, SecAggMaskedMsg& out) {
    if (m.shares.size > secagg::kMaxNeighbours)
      return fail(Status::InvalidArgument("SecAggSharesIn: more shares than neighbours"));
    // The wire names only the sender of each ciphertext: this device is the recipient.
    for (uint32_t i = 0; i < m.shares.size; ++i) {
      cts_[i] = m.shares.data[i];
      cts_[i].to = device_->id();
    }
    Status st = device_->masked_input(cts_, m.shares.size, x_, y_);
    if (!st.ok()) return fail(st);
    out.id = id_;
    out.masked = View<uint32_t>{y_, count_};
    return Status::Ok();
  }

  // Consistency check: a tag of the survivor list for each neighbour that shared with us.
  Status on_unmask_request(const SecAggUnmaskRequestMsg& m, SecAggCheckMsg& out) {
    size_t written = 0;
    Status st = device_->check_survivors(m.survivors.data, m.survivors.size, tags_, secagg::kMaxNeighbours, written);
    if (!st.ok()) return fail(st);
    out.id = id_;
    out.tags = View<secagg::ConsistencyTag>{tags_, static_cast<uint32_t>(written)};
    return Status::Ok();
  }

  // Round 3: the neighbours' tags verified against our list (ABORTED when one
  // differs: the server lied), then the shares that let the server remove the
  // masks (answered once).
  Status on_checks(const SecAggCheckMsg& m, SecAggUnmaskMsg& out) {
    size_t written = 0;
    Status st = device_->unmask_checked(m.tags.data, m.tags.size, shares_, secagg::kMaxNeighbours + 1, written);
    open_ = false;
    FEDRT_TRY(st);
    out.id = id_;
    out.shares = View<secagg::UnmaskShare>{shares_, static_cast<uint32_t>(written)};
    return Status::Ok();
  }

  void close() { open_ = false; }

 private:
  Status fail(Status st) {
    open_ = false;
    return st;
  }

  secagg::SecAggDevice* device_ = nullptr;
  secagg::ShareCiphertext* cts_ = nullptr;
  secagg::UnmaskShare* shares_ = nullptr;
  secagg::ConsistencyTag* tags_ = nullptr;
  uint32_t* x_ = nullptr;
  uint32_t* y_ = nullptr;
  uint32_t max_inputs_ = 0, count_ = 0;
  RoundId id_{};
  bool open_ = false;
};

}  // namespace fedrt::protocol
