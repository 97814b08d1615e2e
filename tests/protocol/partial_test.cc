// Partial aggregation at the server session (protocol/partial.h,
// docs/gateways.md): a gateway's partial session over agents 0..2 hands its
// sums up to a coordinator that takes agents 3..5 directly, and every round's
// state equals the flat session's bits; a gateway's round results equal the
// coordinator's. A hostile partial (a member out of range, one that answered
// already, members out of order, a NaN piece, a sum of the wrong size, an
// integer sum no member set could add) is refused with its reason and
// changes nothing: the honest partial after it gives the flat bits.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fedrt/protocol/masked_summer.h"
#include "session_harness.h"

namespace fedrt::protocol {
namespace {

using session_testing::Fleet;
using session_testing::Sessions;
using task::AlgorithmKind;

constexpr uint32_t kBehindGateway = 3;  // agents 0..2

class GatewaySide {
 public:
  explicit GatewaySide(const Fleet& f) {
    ServerOptions so;
    so.task = f.task;
    const std::vector<double> zero(Fleet::kDim, 0.0);
    so.initial = View<double>{zero.data(), Fleet::kDim};
    so.partial = true;
    EXPECT_TRUE(session.init(so).ok());
    for (uint32_t c = 0; c < Fleet::kAgents; ++c) {
      session.set_served(c, c < kBehindGateway);
      session.set_connected(c, c < kBehindGateway, 0);
    }
  }
  void open(const ServerSession& root, uint32_t t) {
    std::vector<double> state;
    root.export_state(state);
    ASSERT_TRUE(session.import_state(state).ok());
    ASSERT_TRUE(session.open_round(t, 0).ok());
    Outgoing out;
    while (session.next_outgoing(out)) ASSERT_LT(out.agent, kBehindGateway);
  }
  ServerSession session;
};

struct PartialCase {
  const char* name;
  AlgorithmKind kind;
  bool rr;
  int compression;  // 0 raw, 1 dithering with memories, 2 rounding (integer sums)
};

Fleet Make(const PartialCase& p) {
  Fleet f(p.kind, p.rr);
  if (p.compression == 1) f.dither(true);
  if (p.compression == 2) {
    f.task.compression.quantizer.kind = compression::QuantizerKind::kRounding;
    f.task.compression.quantizer.bits = 10;
    f.task.compression.quantizer.clip = 4.0;
  }
  return f;
}

class Partials : public ::testing::TestWithParam<PartialCase> {};

TEST_P(Partials, GiveTheFlatBitsAndTheSameResults) {
  const Fleet f = Make(GetParam());
  Sessions flat(f), root(f);
  GatewaySide gw(f);
  for (uint32_t t = 0; t < 4; ++t) {
    auto a = flat.announce(t);
    auto b = root.announce(t);
    gw.open(root.server, t);
    ASSERT_EQ(b.size(), Fleet::kAgents);
    for (auto& [c, r] : a) ASSERT_TRUE(flat.server.on_update(c, r.update, 0).ok());
    for (auto& [c, r] : b) {
      const Verdict v = c < kBehindGateway ? gw.session.on_update(c, r.update, 0) : root.server.on_update(c, r.update, 0);
      ASSERT_TRUE(v.ok()) << v.why;
    }
    ASSERT_TRUE(gw.session.round_closed());
    ASSERT_FALSE(root.server.round_closed());
    Partial p;
    ASSERT_TRUE(gw.session.export_partial(p).ok());
    EXPECT_EQ(p.members, (std::vector<uint32_t>{0, 1, 2}));
    const Verdict v = root.server.on_partial(p, 0);
    ASSERT_TRUE(v.ok()) << v.why;
    ASSERT_TRUE(root.server.round_closed());
    EXPECT_EQ(flat.state(), root.state()) << "round " << t;
    EXPECT_EQ(flat.server.commit().bits_up, root.server.commit().bits_up);
    EXPECT_EQ(flat.server.commit().members, root.server.commit().members);
    const RoundResult want = root.server.result(1);
    gw.session.settle({0, 1, 2}, want.model);
    const RoundResult got = gw.session.result(1);
    EXPECT_TRUE(got.included);
    ASSERT_EQ(got.model.size, want.model.size);
    for (uint32_t i = 0; i < got.model.size; ++i) EXPECT_EQ(got.model[i], want.model[i]);
    gw.session.publish();
    flat.publish();
    root.publish();
  }
}

INSTANTIATE_TEST_SUITE_P(Families, Partials,
                         ::testing::Values(PartialCase{"fedavg_raw", AlgorithmKind::kFedAvg, false, 0},
                                           PartialCase{"scaffold_rr_raw", AlgorithmKind::kScaffold, true, 0},
                                           PartialCase{"scaffold_memory", AlgorithmKind::kScaffold, false, 1},
                                           PartialCase{"fedavg_rounding", AlgorithmKind::kFedAvg, false, 2}),
                         [](const ::testing::TestParamInfo<PartialCase>& i) { return std::string(i.param.name); });

TEST(Partials, AHostilePartialIsRefusedAndChangesNothing) {
  const Fleet f = Make(PartialCase{"", AlgorithmKind::kFedAvg, false, 2});
  Sessions flat(f), root(f);
  GatewaySide gw(f);
  auto a = flat.announce(0);
  auto b = root.announce(0);
  gw.open(root.server, 0);
  for (auto& [c, r] : a) ASSERT_TRUE(flat.server.on_update(c, r.update, 0).ok());
  for (auto& [c, r] : b)
    ASSERT_TRUE((c < kBehindGateway ? gw.session.on_update(c, r.update, 0) : root.server.on_update(c, r.update, 0)).ok());
  Partial honest;
  ASSERT_TRUE(gw.session.export_partial(honest).ok());
  ASSERT_FALSE(honest.integer_sums.empty());
  auto refused = [&](Partial p, Refusal want, const char* says) {
    const Verdict v = root.server.on_partial(p, 0);
    EXPECT_EQ(v.refusal, want) << v.why;
    EXPECT_NE(v.why.find(says), std::string::npos) << v.why;
    EXPECT_FALSE(root.server.round_closed());
  };
  Partial p = honest;
  p.members[2] = 99;
  refused(p, Refusal::kMalformed, "member 99 is not an agent");
  p = honest;
  p.members.push_back(3);  // answered directly
  p.reports.push_back({});
  p.samples.push_back(0);
  refused(p, Refusal::kDuplicate, "member 3 already answered");
  p = honest;
  std::swap(p.members[0], p.members[1]);
  refused(p, Refusal::kMalformed, "not ascending");
  p = honest;
  p.over_norm.push_back(1);  // a member and dropped
  refused(p, Refusal::kDuplicate, "dropped device 1 already answered");
  p = honest;
  p.integer_sums[0] = 3 * 1023 + 1;
  refused(p, Refusal::kDimension, "above the 3069 that 3 members can add");
  p = honest;
  p.integer_sums.pop_back();
  refused(p, Refusal::kDimension, "integer sums");
  p = honest;
  p.reports.pop_back();
  refused(p, Refusal::kMalformed, "do not align");
  p = honest;
  p.id.round = 1;
  refused(p, Refusal::kStaleRound, "the open round is 0");
  const Verdict v = root.server.on_partial(honest, 0);
  ASSERT_TRUE(v.ok()) << v.why;
  EXPECT_EQ(flat.state(), root.state());
  EXPECT_EQ(root.server.on_partial(honest, 0).refusal, Refusal::kStaleRound);  // closed: a replay changes nothing
}

// A gateway's round ends at its deadline with the updates it has, whatever
// the coordinator's quorum: the partial goes up with them, and the
// coordinator's round then waits for (or closes without) the others.
TEST(Partials, AGatewayHandsUpWhatItHasAtItsDeadline) {
  const Fleet f(AlgorithmKind::kFedAvg);
  Sessions root(f, /*deadline_ms=*/1000, /*quorum=*/1.0);
  GatewaySide gw(f);
  auto b = root.announce(0, /*now=*/0);
  RoundBasis basis;
  root.server.basis(basis);
  EXPECT_EQ(basis.deadline_ms, 1000u);
  ASSERT_TRUE(gw.session.open_from(basis, 0).ok());
  EXPECT_EQ(gw.session.next_deadline_ms(), 900u);  // a tenth of the time left before the coordinator's
  for (auto& [c, r] : b)
    if (c < 2) ASSERT_TRUE(gw.session.on_update(c, r.update, 10).ok());  // agent 2 of the gateway stays silent
  gw.session.tick(899);
  EXPECT_TRUE(gw.session.round_open());
  gw.session.tick(900);
  ASSERT_TRUE(gw.session.round_closed());
  Partial p;
  ASSERT_TRUE(gw.session.export_partial(p).ok());
  EXPECT_EQ(p.members, (std::vector<uint32_t>{0, 1}));
  ASSERT_TRUE(root.server.on_partial(p, 901).ok());
  EXPECT_FALSE(root.server.round_closed());  // agents 2..5 still owe their updates
}

TEST(Partials, ANonFinitePieceIsRefused) {
  const Fleet f(AlgorithmKind::kFedAvg);
  Sessions root(f);
  GatewaySide gw(f);
  auto b = root.announce(0);
  gw.open(root.server, 0);
  for (auto& [c, r] : b)
    if (c < kBehindGateway) {
      ASSERT_TRUE(gw.session.on_update(c, r.update, 0).ok());
    }
  Partial p;
  ASSERT_TRUE(gw.session.export_partial(p).ok());
  ASSERT_EQ(p.sums.size(), 1u);
  p.sums[0].layers[1] = std::nan("");
  const Verdict v = root.server.on_partial(p, 0);
  EXPECT_EQ(v.refusal, Refusal::kMalformed);
  EXPECT_NE(v.why.find("NaN or Inf piece"), std::string::npos) << v.why;
  p.sums[0].layers.pop_back();
  EXPECT_EQ(root.server.on_partial(p, 0).refusal, Refusal::kDimension);
  EXPECT_EQ(gw.session.export_partial(p).ok(), true);  // a second export finds the sums moved out
  for (double x : p.sums[0].layers) EXPECT_EQ(x, 0.0);
}

}  // namespace
}  // namespace fedrt::protocol

namespace fedrt::protocol {
namespace {

// Deterministic SecAgg+ secrets for the tests (never a device's).
int TestEntropy(void*, uint64_t round_id, uint32_t u, uint8_t* out, size_t n) {
  uint64_t x = round_id * 0x9E3779B97F4A7C15ull + u + 1;
  for (size_t i = 0; i < n; ++i) {
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    out[i] = static_cast<uint8_t>(x >> 56);
  }
  return 0;
}

// One secure round by hand: every message of the server goes to its client,
// the clients' masked inputs of agents 0..2 to `summer` when there is one.
class SecureRound {
 public:
  explicit SecureRound(const session_testing::Fleet& f) {
    ServerOptions so;
    so.task = f.task;
    const std::vector<double> zero(session_testing::Fleet::kDim, 0.0);
    so.initial = View<double>{zero.data(), session_testing::Fleet::kDim};
    EXPECT_TRUE(server.init(so).ok());
    const size_t per = (session_testing::Client::WorkspaceBytes(f.task, 0) + 63) & ~size_t(63);
    memory_.assign(per * session_testing::Fleet::kAgents, 0);
    clients.reset(new session_testing::Client[session_testing::Fleet::kAgents]);
    for (uint32_t c = 0; c < session_testing::Fleet::kAgents; ++c) {
      Arena a(memory_.data() + per * c, per);
      session_testing::Client::Options o;
      o.task = &f.task;
      o.agent = c;
      o.problem = f.local[c];
      o.entropy = TestEntropy;
      EXPECT_TRUE(clients[c].init(a, o).ok());
      server.set_connected(c, true, 0);
    }
  }
  // Plays the open round until nothing moves; masked inputs of the gateway's
  // agents wait in `summer` (armed with the first phase-3 message).
  void play(MaskedSummer* summer) {
    for (bool moved = true; moved && !server.round_closed();) {
      moved = false;
      Outgoing out;
      while (server.next_outgoing(out)) {  // one at a time: a message's views last until the next
        const uint32_t agent = out.agent;
        const ServerMessage m = server.message(out, 0);
        if (summer != nullptr && m.kind == MessageKind::kSecAggSharesIn && !summer->armed()) {
          std::vector<uint32_t> waiting, mine;
          server.secagg().waiting_for(waiting);
          for (uint32_t a : waiting)
            if (a < kBehindGateway) mine.push_back(a);
          summer->expect(mine);
        }
        ClientMessage r;
        const Status st = clients[agent].on_message(m, r);
        ASSERT_TRUE(st.ok()) << st.message() << " (message kind " << static_cast<int>(m.kind) << ")";
        if (r.kind == MessageKind::kNone) continue;
        moved = true;
        if (summer != nullptr && r.kind == MessageKind::kSecAggMasked && agent < kBehindGateway) {
          masked_[agent] = std::vector<uint32_t>(r.masked.masked.data, r.masked.masked.data + r.masked.masked.size);
          r.masked.masked = View<uint32_t>{masked_[agent].data(), r.masked.masked.size};
          const Verdict v = summer->add(agent, r.masked);
          ASSERT_TRUE(v.ok()) << v.why;
          continue;
        }
        const Verdict v = server.on_message(agent, r, 0);
        ASSERT_TRUE(v.ok()) << v.why;
      }
    }
  }
  std::vector<double> state() const {
    std::vector<double> s;
    server.export_state(s);
    return s;
  }
  ServerSession server;
  std::unique_ptr<session_testing::Client[]> clients;

 private:
  std::vector<uint8_t> memory_;
  std::vector<uint32_t> masked_[session_testing::Fleet::kAgents];
};

// A gateway's masked sum gives the flat secure round's bits; a hostile one
// (a member that is not sampled, one that answered already, members out of
// order, a sum of another length) is refused and changes nothing.
TEST(MaskedSums, GiveTheFlatBitsAndAHostileOneChangesNothing) {
  session_testing::Fleet f(task::AlgorithmKind::kFedAvg);
  f.task.compression.quantizer.kind = compression::QuantizerKind::kRounding;
  f.task.compression.quantizer.bits = 16;
  f.task.compression.quantizer.clip = 2.0;
  f.task.secagg.enabled = true;
  SecureRound flat(f), root(f);
  for (uint32_t t = 0; t < 3; ++t) {
    ASSERT_TRUE(flat.server.open_round(t, 0).ok());
    ASSERT_TRUE(root.server.open_round(t, 0).ok());
    flat.play(nullptr);
    MaskedSummer summer;
    summer.begin(root.server.current());
    root.play(&summer);
    ASSERT_TRUE(summer.ready());
    ASSERT_FALSE(root.server.round_closed());
    MaskedSum honest;
    summer.take(honest);
    EXPECT_EQ(honest.members, (std::vector<uint32_t>{0, 1, 2}));
    auto refused = [&](MaskedSum m, Refusal want, const char* says) {
      const Verdict v = root.server.on_masked_sum(m, 0);
      EXPECT_EQ(v.refusal, want) << v.why;
      EXPECT_NE(v.why.find(says), std::string::npos) << v.why;
    };
    MaskedSum m = honest;
    m.members[2] = 99;
    refused(m, Refusal::kNotSampled, "agent 99 is not sampled");
    m = honest;
    m.members.push_back(4);  // sent its own masked input
    m.reports.push_back({});
    refused(m, Refusal::kDuplicate, "agent 4 already sent");
    m = honest;
    std::swap(m.members[0], m.members[1]);
    refused(m, Refusal::kMalformed, "not ascending");
    m = honest;
    m.sum.pop_back();
    refused(m, Refusal::kDimension, "masked sum has");
    const Verdict v = root.server.on_masked_sum(honest, 0);
    ASSERT_TRUE(v.ok()) << v.why;
    const Verdict again = root.server.on_masked_sum(honest, 0);  // phase 3 closed with it: a replay is refused
    EXPECT_EQ(again.refusal, Refusal::kMalformed) << again.why;
    EXPECT_NE(again.why.find("while phase 4 is open"), std::string::npos) << again.why;
    root.play(nullptr);
    ASSERT_TRUE(flat.server.round_closed() && root.server.round_closed());
    EXPECT_STREQ(root.server.commit().closed_by, "secagg");
    EXPECT_EQ(flat.state(), root.state()) << "round " << t;
    EXPECT_EQ(flat.server.commit().bits_up, root.server.commit().bits_up);
    EXPECT_EQ(flat.server.commit().members, root.server.commit().members);
    for (SecureRound* s : {&flat, &root}) {
      s->server.publish();
      s->play(nullptr);
    }
  }
}

}  // namespace
}  // namespace fedrt::protocol
