// libFuzzer target: the SecAgg+ state machines (runtime/src/secagg/server.cc,
// device.cc) on the messages a hostile peer can send them. Input: 6 bytes of
// round parameters (n in [3, 6], k, t, d, bits, seeds), then a script of
// operations, one byte each plus its operands: a forged advertisement, share
// ciphertexts, masked input or unmask shares from device u to the server;
// forged neighbour keys, ciphertexts or survivor lists to device 0; an
// honest step of device u (the real protocol, so a script reaches every
// phase); a phase close; the final unmasking. Forged values keep the shapes
// the wire decoders (runtime/src/wire/protobuf_codec.cc) let through: at most
// kMaxNeighbours ciphertexts, share kind 1 or 2, x in [1, 255], d values.
// Properties:
// - no out-of-bounds access or undefined behaviour (ASan, UBSan);
// - every refusal is a Status with a non-empty message;
// - when no forged message was accepted, a round that finishes sums exactly
//   the inputs of the devices it names as contributors.
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz_util.h"
#include "fedrt/secagg/device.h"
#include "fedrt/secagg/server.h"

using namespace fedrt;
using namespace fedrt::secagg;
using fedrt::fuzz::Require;
using fedrt::fuzz::RequireMessage;

namespace {

class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  bool empty() const { return i_ >= n_; }
  uint8_t byte() { return i_ < n_ ? p_[i_++] : 0; }
  uint32_t u32() {
    uint32_t v = 0;
    for (int j = 0; j < 4; ++j) v = v << 8 | byte();
    return v;
  }
  void bytes(uint8_t* out, size_t n) {
    for (size_t j = 0; j < n; ++j) out[j] = byte();
  }

 private:
  const uint8_t* p_;
  size_t n_, i_ = 0;
};

// A status from the code under test: fine, or refused with a reason.
bool Check(const Status& st, const char* what) {
  if (!st.ok()) RequireMessage(st.message(), what);
  return st.ok();
}

uint32_t Input(uint32_t u, uint32_t i, uint32_t bits) { return (u * 2654435761u + i * 40503u) & ((1u << bits) - 1); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 6) return 0;
  Reader in(data, size);
  RoundParams p;
  p.n = 3 + in.byte() % 4;
  const uint8_t kb = in.byte();
  p.k = (kb & 1) ? p.n - 1 : 2 * (1 + (kb >> 1) % ((p.n - 1) / 2));
  p.t = 2 + in.byte() % p.k;
  p.dim = 1 + in.byte() % 4;
  p.bits = 1 + in.byte() % 16;
  const uint8_t seed = in.byte();
  p.round_id = seed;
  p.graph_seed = seed >> 4;
  SecAggServer server;
  if (!Check(server.begin(p), "SecAggServer::begin")) return 0;

  // At most 6 devices of about 13 KB each, reused: fresh ones from the heap
  // cost page faults and clearing that were most of an execution's time.
  static SecAggDevice pool[6];
  SecAggDevice* dev = pool;
  for (uint32_t u = 0; u < p.n; ++u) dev[u] = SecAggDevice();
  std::vector<std::vector<uint32_t>> x(p.n, std::vector<uint32_t>(p.dim));
  for (uint32_t u = 0; u < p.n; ++u)
    for (uint32_t i = 0; i < p.dim; ++i) x[u][i] = Input(u, i, p.bits);
  std::vector<uint32_t> y(p.dim);
  std::vector<ShareCiphertext> cts(kMaxNeighbours);
  std::vector<Advertise> ads(kMaxNeighbours);
  std::vector<UnmaskShare> shares(kMaxNeighbours + 1);
  std::vector<uint32_t> ids(kMaxNeighbours + 1);
  bool forged_accepted = false;

  while (!in.empty()) {
    const uint8_t op = in.byte() % 12;
    const uint32_t u = in.byte() % p.n;
    switch (op) {
      case 0: {  // honest step of device u through the server
        SecAggDevice& d = dev[u];
        size_t written = 0;
        if (d.phase() == SecAggDevice::Phase::kIdle) {
          DeviceEntropy e;
          for (size_t j = 0; j < kKeyBytes; ++j) {
            e.c_sk[j] = static_cast<uint8_t>(u * 7 + j);
            e.s_sk[j] = static_cast<uint8_t>(u * 11 + 3 * j);
            e.b[j] = static_cast<uint8_t>(u * 13 + 5 * j);
            e.shamir[j] = static_cast<uint8_t>(u * 17 + 7 * j);
          }
          Advertise a;
          if (Check(d.advertise(p, u, e, a), "SecAggDevice::advertise")) Check(server.on_advertise(a), "on_advertise");
        } else if (d.phase() == SecAggDevice::Phase::kAdvertised) {
          const std::vector<Advertise> nb = server.neighbour_ads(u);
          if (Check(d.share_keys(nb.data(), nb.size(), cts.data(), cts.size(), written), "share_keys"))
            Check(server.on_shares(u, cts.data(), written), "on_shares");
        } else if (d.phase() == SecAggDevice::Phase::kShared) {
          const std::vector<ShareCiphertext> mine = server.shares_for(u);
          if (Check(d.masked_input(mine.data(), mine.size(), x[u].data(), y.data()), "masked_input"))
            Check(server.on_masked(u, y.data()), "on_masked");
        } else if (d.phase() == SecAggDevice::Phase::kMasked) {
          const std::vector<uint32_t> alive = server.survivors_for(u);
          if (Check(d.unmask(alive.data(), alive.size(), shares.data(), shares.size(), written), "unmask"))
            Check(server.on_unmask(u, shares.data(), written), "on_unmask");
        }
        break;
      }
      case 1: {  // forged advertisement
        Advertise a;
        a.id = u;
        in.bytes(a.c_pk, kKeyBytes);
        in.bytes(a.s_pk, kKeyBytes);
        forged_accepted |= Check(server.on_advertise(a), "on_advertise (forged)");
        break;
      }
      case 2: {  // forged share ciphertexts from u
        const size_t count = in.byte() % (kMaxNeighbours + 1);
        for (size_t i = 0; i < count; ++i) {
          uint8_t wire[kShareWireBytes];
          const uint32_t to = in.byte() % (p.n + 1);
          in.bytes(wire, sizeof(wire));
          UnpackShareCiphertext(wire, sizeof(wire), u, to, cts[i]);
        }
        forged_accepted |= Check(server.on_shares(u, cts.data(), count), "on_shares (forged)");
        break;
      }
      case 3: {  // forged masked input
        for (uint32_t i = 0; i < p.dim; ++i) y[i] = in.u32();
        forged_accepted |= Check(server.on_masked(u, y.data()), "on_masked (forged)");
        break;
      }
      case 4: {  // forged unmask shares
        const size_t count = in.byte() % (kMaxNeighbours + 2);
        for (size_t i = 0; i < count; ++i) {
          shares[i].from = u;
          shares[i].about = in.byte() % (p.n + 1);
          shares[i].kind = static_cast<ShareKind>(1 + in.byte() % 2);
          shares[i].x = static_cast<uint8_t>(1 + in.byte() % 255);
          in.bytes(shares[i].share, kKeyBytes);
        }
        forged_accepted |= Check(server.on_unmask(u, shares.data(), count), "on_unmask (forged)");
        break;
      }
      case 5: Check(server.close_advertise(), "close_advertise"); break;
      case 6: Check(server.close_shares(), "close_shares"); break;
      case 7: Check(server.close_masked(), "close_masked"); break;
      case 8: {  // forged neighbour keys to device u (a lying server)
        const size_t count = in.byte() % (kMaxNeighbours + 1);
        for (size_t i = 0; i < count; ++i) {
          ads[i].id = in.byte() % (p.n + 1);
          in.bytes(ads[i].c_pk, kKeyBytes);
          in.bytes(ads[i].s_pk, kKeyBytes);
        }
        size_t written = 0;
        forged_accepted |= Check(dev[u].share_keys(ads.data(), count, cts.data(), cts.size(), written), "share_keys (forged)");
        break;
      }
      case 9: {  // forged ciphertexts to device u
        const size_t count = in.byte() % (kMaxNeighbours + 1);
        for (size_t i = 0; i < count; ++i) {
          uint8_t wire[kShareWireBytes];
          const uint32_t from = in.byte() % (p.n + 1);
          in.bytes(wire, sizeof(wire));
          UnpackShareCiphertext(wire, sizeof(wire), from, u, cts[i]);
        }
        forged_accepted |= Check(dev[u].masked_input(cts.data(), count, x[u].data(), y.data()), "masked_input (forged)");
        break;
      }
      case 10: {  // forged survivor list to device u
        const size_t count = in.byte() % (kMaxNeighbours + 2);
        for (size_t i = 0; i < count; ++i) ids[i] = in.byte() % (p.n + 1);
        size_t written = 0;
        forged_accepted |= Check(dev[u].unmask(ids.data(), count, shares.data(), shares.size(), written), "unmask (forged)");
        break;
      }
      default: {  // the end of the round
        std::vector<uint32_t> sum;
        if (!Check(server.finish(sum), "finish") || forged_accepted) break;
        Require(sum.size() == p.dim, "finish: sum of the wrong dimension");
        std::vector<uint32_t> want(p.dim, 0);
        for (uint32_t c : server.contributors())
          for (uint32_t i = 0; i < p.dim; ++i) want[i] += x[c][i];
        Require(sum == want, "an honest round's sum is not the contributors' inputs");
        break;
      }
    }
  }
  return 0;
}
