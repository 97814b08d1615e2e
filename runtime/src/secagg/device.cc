// Device state machine of SecAgg+ (device code: no heap, no exceptions).
#include "fedrt/secagg/device.h"

#include <cstring>

#include "fedrt/core/little_endian.h"
#include "fedrt/secagg/shamir.h"

namespace fedrt::secagg {

namespace {
const uint8_t kCoeffNonceB[kNonceBytes] = {'s', 'h', 'a', 'm', 'i', 'r', '-', 'b', 0, 0, 0, 0};
const uint8_t kCoeffNonceS[kNonceBytes] = {'s', 'h', 'a', 'm', 'i', 'r', '-', 's', 0, 0, 0, 0};

}  // namespace

Status SecAggDevice::fail(Status st) {
  wipe();
  phase_ = Phase::kFailed;
  return st;
}

void SecAggDevice::wipe() {
  Wipe(c_sk_, sizeof c_sk_);
  Wipe(s_sk_, sizeof s_sk_);
  Wipe(b_, sizeof b_);
  Wipe(shamir_key_, sizeof shamir_key_);
  Wipe(coeff_, sizeof coeff_);
  Wipe(peers_, sizeof peers_);
  Wipe(own_b_share_, sizeof own_b_share_);
}

int SecAggDevice::index_of(uint32_t id) const {
  for (uint32_t i = 0; i < nbr_count_; ++i)
    if (nbr_[i] == id) return static_cast<int>(i);
  return -1;
}

Status SecAggDevice::advertise(const RoundParams& p, uint32_t id, const DeviceEntropy& e, Advertise& out) {
  wipe();
  phase_ = Phase::kIdle;
  FEDRT_TRY(ValidateParams(p));
  if (id >= p.n) return fail(Status::InvalidArgument("secagg: id outside the round's devices"));
  p_ = p;
  id_ = id;
  nbr_count_ = Neighbours(p, id, nbr_);
  std::memcpy(c_sk_, e.c_sk, kKeyBytes);
  std::memcpy(s_sk_, e.s_sk, kKeyBytes);
  std::memcpy(b_, e.b, kKeyBytes);
  std::memcpy(shamir_key_, e.shamir, kKeyBytes);
  out.id = id;
  Status st = X25519Public(c_sk_, out.c_pk);
  if (st.ok()) st = X25519Public(s_sk_, out.s_pk);
  if (!st.ok()) return fail(st);
  phase_ = Phase::kAdvertised;
  return Status::Ok();
}

Status SecAggDevice::share_keys(const Advertise* ads, size_t count, ShareCiphertext* out, size_t cap, size_t& written) {
  written = 0;
  if (phase_ != Phase::kAdvertised) return fail(Status::FailedPrecondition("secagg: share_keys out of order"));
  for (size_t i = 0; i < count; ++i) {
    const int j = index_of(ads[i].id);
    if (j < 0) return fail(Status::InvalidArgument("secagg: advertisement from a non-neighbour"));
    Peer& peer = peers_[j];
    if (peer.advertised) return fail(Status::InvalidArgument("secagg: duplicate advertisement"));
    if (std::memcmp(ads[i].c_pk, ads[i].s_pk, kKeyBytes) == 0)
      return fail(Status::InvalidArgument("secagg: neighbour advertised the same key twice"));
    std::memcpy(peer.c_pk, ads[i].c_pk, kKeyBytes);
    std::memcpy(peer.s_pk, ads[i].s_pk, kKeyBytes);
    peer.advertised = true;
  }
  if (count < p_.t) return fail(Status::FailedPrecondition("secagg: fewer than t neighbours advertised keys"));
  if (count > cap) return fail(Status::ResourceExhausted("secagg: share output buffer too small"));
  const size_t coeff_bytes = static_cast<size_t>(p_.t - 1) * kKeyBytes;
  uint8_t plain[kSharePlainBytes];
  uint8_t coeff_s[kMaxNeighbours * kKeyBytes];
  Status st = ChaCha20Xor(shamir_key_, kCoeffNonceB, 0, nullptr, coeff_, coeff_bytes);
  if (st.ok()) st = ChaCha20Xor(shamir_key_, kCoeffNonceS, 0, nullptr, coeff_s, coeff_bytes);
  for (uint32_t j = 0; j < nbr_count_ && st.ok(); ++j) {
    Peer& peer = peers_[j];
    if (!peer.advertised) continue;
    const uint8_t x = static_cast<uint8_t>(j + 1);  // holder nbr_[j] gets x = its position + 1
    PutLe32(plain, id_);
    PutLe32(plain + 4, nbr_[j]);
    plain[8] = x;
    st = ShamirShare(b_, kKeyBytes, p_.t, coeff_, x, plain + 9);
    if (st.ok()) st = ShamirShare(s_sk_, kKeyBytes, p_.t, coeff_s, x, plain + 9 + kKeyBytes);
    if (st.ok()) st = DeriveKey(p_, c_sk_, peer.c_pk, kShareChannelLabel, peer.channel);
    if (!st.ok()) break;
    ShareCiphertext& c = out[written++];
    c.from = id_;
    c.to = nbr_[j];
    uint8_t nonce[kNonceBytes], aad[16];
    ShareNonce(id_, nbr_[j], nonce);
    ShareAad(p_, id_, nbr_[j], aad);
    st = AeadSeal(peer.channel, nonce, aad, sizeof aad, plain, kSharePlainBytes, c.ct, c.tag);
  }
  // Our own share of b_u (x = k + 1): revealed only if we survive to round 3,
  // so a survivor's self mask needs only t - 1 answering neighbours.
  if (st.ok()) st = ShamirShare(b_, kKeyBytes, p_.t, coeff_, static_cast<uint8_t>(nbr_count_ + 1), own_b_share_);
  Wipe(plain, sizeof plain);
  Wipe(coeff_s, sizeof coeff_s);
  Wipe(coeff_, sizeof coeff_);
  Wipe(shamir_key_, sizeof shamir_key_);
  Wipe(c_sk_, sizeof c_sk_);
  if (!st.ok()) return fail(st);
  phase_ = Phase::kShared;
  return Status::Ok();
}

Status SecAggDevice::masked_input(const ShareCiphertext* in, size_t count, const uint32_t* x, uint32_t* y) {
  if (phase_ != Phase::kShared) return fail(Status::FailedPrecondition("secagg: masked_input out of order"));
  uint8_t plain[kSharePlainBytes];
  for (size_t i = 0; i < count; ++i) {
    const ShareCiphertext& c = in[i];
    if (c.to != id_) return fail(Status::InvalidArgument("secagg: share addressed to another device"));
    const int j = index_of(c.from);
    if (j < 0 || !peers_[j].advertised)
      return fail(Status::InvalidArgument("secagg: share from a non-neighbour"));
    Peer& peer = peers_[j];
    if (peer.shared) return fail(Status::InvalidArgument("secagg: duplicate share"));
    uint8_t nonce[kNonceBytes], aad[16];
    ShareNonce(c.from, c.to, nonce);
    ShareAad(p_, c.from, c.to, aad);
    Status st = AeadOpen(peer.channel, nonce, aad, sizeof aad, c.ct, kSharePlainBytes, c.tag, plain);
    if (!st.ok()) return fail(st);
    // Our x in the sender's sharing is public (our position in its neighbour list + 1).
    if (GetLe32(plain) != c.from || GetLe32(plain + 4) != id_ || plain[8] != HolderX(p_, c.from, id_)) {
      Wipe(plain, sizeof plain);
      return fail(Status::DataLoss("secagg: share header does not match its envelope"));
    }
    peer.x = plain[8];
    std::memcpy(peer.b_share, plain + 9, kKeyBytes);
    std::memcpy(peer.s_share, plain + 9 + kKeyBytes, kKeyBytes);
    peer.shared = true;
  }
  Wipe(plain, sizeof plain);
  if (count < p_.t) return fail(Status::FailedPrecondition("secagg: fewer than t neighbours completed key sharing"));
  const uint64_t top = (uint64_t{1} << p_.bits) - 1;
  for (uint32_t i = 0; i < p_.dim; ++i) {
    if (x[i] > top) return fail(Status::OutOfRange("secagg: input entry exceeds the round's bits"));
    y[i] = x[i];
  }
  Status st = AddSelfMask(p_, b_, +1, y);
  for (uint32_t j = 0; j < nbr_count_ && st.ok(); ++j) {
    if (!peers_[j].shared) continue;  // a neighbour that dropped before sharing is not masked with
    st = AddPairMask(p_, s_sk_, peers_[j].s_pk, nbr_[j] > id_ ? +1 : -1, y);
  }
  if (!st.ok()) return fail(st);
  Wipe(b_, sizeof b_);
  Wipe(s_sk_, sizeof s_sk_);
  phase_ = Phase::kMasked;
  return Status::Ok();
}

Status SecAggDevice::take_survivors(const uint32_t* survivors, size_t count) {
  bool self = false;
  for (uint32_t j = 0; j < nbr_count_; ++j) peers_[j].listed = false;
  for (size_t i = 0; i < count; ++i) {
    if (survivors[i] == id_) {
      self = true;
      continue;
    }
    const int j = index_of(survivors[i]);
    if (j < 0 || !peers_[j].shared)
      return Status::InvalidArgument("secagg: survivor is no sharing neighbour");
    peers_[j].listed = true;
  }
  if (!self) return Status::FailedPrecondition("secagg: not listed as a survivor");
  return Status::Ok();
}

size_t SecAggDevice::listed_ids(uint32_t* out) const {
  size_t n = 0;
  out[n++] = id_;
  for (uint32_t j = 0; j < nbr_count_; ++j)
    if (peers_[j].listed) out[n++] = nbr_[j];
  return n;
}

Status SecAggDevice::consistency_tag(uint32_t j, uint32_t from, uint32_t to, bool open, uint8_t tag[kTagBytes]) const {
  uint32_t listed[kMaxNeighbours + 1];
  const size_t n = listed_ids(listed);
  uint8_t aad[kConsistencyAadBytes], nonce[kNonceBytes], none[1] = {0};
  const size_t len = ConsistencyAad(p_, from, to, listed, n, aad);
  ConsistencyNonce(from, to, nonce);
  return open ? AeadOpen(peers_[j].channel, nonce, aad, len, none, 0, tag, none)
              : AeadSeal(peers_[j].channel, nonce, aad, len, none, 0, none, tag);
}

Status SecAggDevice::check_survivors(const uint32_t* survivors, size_t count, ConsistencyTag* out, size_t cap,
                                     size_t& written) {
  written = 0;
  if (phase_ != Phase::kMasked) return fail(Status::FailedPrecondition("secagg: check out of order"));
  Status st = take_survivors(survivors, count);
  for (uint32_t j = 0; j < nbr_count_ && st.ok(); ++j) {
    // Every neighbour that shared with us, listed or not: one told we think it
    // dropped while it is alive sees that the server lied about it.
    if (!peers_[j].shared) continue;
    if (written >= cap) return fail(Status::ResourceExhausted("secagg: tag buffer too small"));
    ConsistencyTag& t = out[written++];
    t.from = id_;
    t.to = nbr_[j];
    st = consistency_tag(j, id_, nbr_[j], false, t.tag);
  }
  if (!st.ok()) return fail(st);
  phase_ = Phase::kChecked;
  return Status::Ok();
}

Status SecAggDevice::unmask_checked(const ConsistencyTag* tags, size_t count, UnmaskShare* out, size_t cap,
                                    size_t& written) {
  written = 0;
  if (phase_ != Phase::kChecked) return fail(Status::FailedPrecondition("secagg: unmask before the check"));
  uint32_t confirmed = 0;
  for (size_t i = 0; i < count; ++i) {
    ConsistencyTag t = tags[i];  // addressed to us (the AAD names us: a tag for another device fails)
    const int j = index_of(t.from);
    if (j < 0 || !peers_[j].shared) return fail(Status::InvalidArgument("secagg: tag from a non-neighbour"));
    if (peers_[j].confirmed) return fail(Status::InvalidArgument("secagg: duplicate tag"));
    // Checked against our own list: a sender told something else has a different AAD.
    if (!consistency_tag(static_cast<uint32_t>(j), t.from, id_, true, t.tag).ok())
      return fail(Status(StatusCode::kAborted, "secagg: survivor list differs from ours: server lied"));
    peers_[j].confirmed = true;
    confirmed += peers_[j].listed ? 1u : 0u;
  }
  if (confirmed + 1 < p_.t)
    return fail(Status(StatusCode::kAborted, "secagg: survivor list confirmed by < t - 1"));
  return reveal(out, cap, written);
}

Status SecAggDevice::unmask(const uint32_t* survivors, size_t count, UnmaskShare* out, size_t cap, size_t& written) {
  written = 0;
  if (phase_ != Phase::kMasked) return fail(Status::FailedPrecondition("secagg: unmask out of order or repeated"));
  const Status st = take_survivors(survivors, count);
  if (!st.ok()) return fail(st);
  return reveal(out, cap, written);
}

Status SecAggDevice::reveal(UnmaskShare* out, size_t cap, size_t& written) {
  written = 0;
  if (cap < 1) return fail(Status::ResourceExhausted("secagg: unmask output buffer too small"));
  UnmaskShare& own = out[written++];
  own.from = own.about = id_;
  own.kind = ShareKind::kSelfSeed;
  own.x = static_cast<uint8_t>(nbr_count_ + 1);
  std::memcpy(own.share, own_b_share_, kKeyBytes);
  for (uint32_t j = 0; j < nbr_count_; ++j) {
    const Peer& peer = peers_[j];
    if (!peer.shared) continue;
    if (written >= cap) return fail(Status::ResourceExhausted("secagg: unmask output buffer too small"));
    UnmaskShare& s = out[written++];
    s.from = id_;
    s.about = nbr_[j];
    s.x = peer.x;
    s.kind = peer.listed ? ShareKind::kSelfSeed : ShareKind::kMaskKey;  // never both for one neighbour
    std::memcpy(s.share, peer.listed ? peer.b_share : peer.s_share, kKeyBytes);
  }
  wipe();
  phase_ = Phase::kDone;
  return Status::Ok();
}

}  // namespace fedrt::secagg
