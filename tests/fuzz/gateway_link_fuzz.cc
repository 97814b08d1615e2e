// libFuzzer target: the gateway link at the coordinator (docs/gateways.md):
// GatewayEnvelopes decoded by the gateway codec (runtime/src/wire/gateway_codec.cc)
// and taken by ServerSession::on_partial / on_masked_sum of an open round of
// FedAvg on least squares (4 agents, d = 8), and the round's basis and
// verdict taken by a gateway's partial session (open_from, settle).
// Input: one byte choosing the task (bit 0: the rounding quantizer's integer
// sums; else raw float64 sums), then records [length: 2 bytes, big-endian]
// [GatewayEnvelope bytes]. Properties:
// - no out-of-bounds access or undefined behaviour (ASan, UBSan);
// - every refusal (decoder or session) carries a non-empty reason;
// - a refused partial changes nothing: a twin session given only the
//   accepted ones ends the round (at its deadline) with the same state, bit
//   for bit, and the same members.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "fedrt/protocol/server_session.h"
#include "fedrt/wire/gateway_codec.h"

using namespace fedrt;
using namespace fedrt::protocol;
using fedrt::fuzz::Require;
using fedrt::fuzz::RequireMessage;

namespace {

constexpr uint32_t kAgents = 4;
constexpr uint32_t kDim = 8;

ServerOptions Options(uint8_t mode, bool partial) {
  ServerOptions so;
  so.task.problem.kind = task::ProblemKind::kLeastSquares;
  so.task.problem.agents = kAgents;
  so.task.problem.dim = kDim;
  so.task.num_algorithms = 1;
  so.task.algorithms[0] = task::AlgorithmChoice{task::AlgorithmKind::kFedAvg, false};
  so.task.hyper.step = 0.05;
  so.task.hyper.local_steps = 5;
  so.task.hyper.batch = 2;
  so.task.rounds = 4;
  if (mode & 1) {
    so.task.compression.quantizer.kind = compression::QuantizerKind::kRounding;
    so.task.compression.quantizer.bits = 8;
    so.task.compression.quantizer.clip = 2.0;
  }
  static const std::vector<double> zero(kDim, 0.0);
  so.initial = View<double>{zero.data(), kDim};
  so.deadline_ms = 1000;
  so.quorum = 0.01;
  so.partial = partial;
  return so;
}

bool Open(ServerSession& s, uint8_t mode) {
  if (!s.init(Options(mode, false)).ok()) return false;
  for (uint32_t c = 0; c < kAgents; ++c) s.set_connected(c, true, 0);
  return s.open_round(0, 0).ok();
}

bool SameBits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  ServerSession root, twin, gateway;
  Require(Open(root, mode) && Open(twin, mode), "the session's task is refused");
  Require(gateway.init(Options(mode, true)).ok(), "the gateway's session is refused");
  size_t i = 1;
  while (i + 2 <= size) {
    const size_t len = std::min<size_t>(size - i - 2, size_t(data[i]) << 8 | data[i + 1]);
    const std::string body(reinterpret_cast<const char*>(data + i + 2), len);
    i += 2 + len;
    wire::GatewayEnvelope ge;
    if (!ge.ParseFromString(body)) continue;
    Status st;
    Verdict v;
    if (ge.has_partial()) {
      Partial p;
      st = wire::Decode(ge.partial(), p);
      if (!st.ok()) {
        RequireMessage(st.message(), "gateway codec");
        continue;
      }
      v = root.on_partial(p, 0);
      if (v.ok()) {
        const Verdict w = twin.on_partial(p, 0);
        Require(w.ok(), "the twin refuses a partial the session took", w.why);
      }
    } else if (ge.has_masked_sum()) {
      MaskedSum m;
      st = wire::Decode(ge.masked_sum(), m);
      if (!st.ok()) {
        RequireMessage(st.message(), "gateway codec");
        continue;
      }
      v = root.on_masked_sum(m, 0);
      Require(!v.ok(), "a plain round took a masked sum");
    } else if (ge.has_round()) {
      RoundBasis b;
      st = wire::Decode(ge.round(), b);
      if (st.ok()) st = gateway.open_from(b, 0);
      if (!st.ok()) RequireMessage(st.message(), "gateway session");
      continue;
    } else if (ge.has_result()) {
      RoundVerdict r;
      st = wire::Decode(ge.result(), r);
      if (!st.ok()) {
        RequireMessage(st.message(), "gateway codec");
        continue;
      }
      std::vector<uint32_t> mine;
      for (uint32_t c : r.included)
        if (c < kAgents) mine.push_back(c);
      gateway.settle(mine, View<double>{r.model.data(), static_cast<uint32_t>(r.model.size())});
      gateway.publish();
      Outgoing out;
      while (gateway.next_outgoing(out)) (void)gateway.message(out, 0);
      continue;
    } else {
      continue;
    }
    if (!v.ok()) RequireMessage(v.why.c_str(), "ServerSession");
  }
  root.tick(1000000);
  twin.tick(1000000);
  Require(root.round_closed() == twin.round_closed(), "twin sessions disagree on the round's close");
  if (root.round_closed()) {
    Require(root.commit().members == twin.commit().members, "twin sessions closed with other members");
    std::vector<double> a, b;
    root.export_state(a);
    twin.export_state(b);
    Require(SameBits(a, b), "a refused partial changed the round");
  }
  return 0;
}
