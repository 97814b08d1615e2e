// The round protocol's sessions driven by hand (runtime/include/fedrt/protocol):
// arrival order, bad input, deadlines and quorum, resubmission, persistence
// and refusals. The simulator's and the fleet's tests cover whole runs.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "session_harness.h"

namespace fedrt::protocol {
namespace {

using session_testing::Client;
using session_testing::Fleet;
using session_testing::Sessions;
using task::AlgorithmKind;

// The coordinator adds updates as they arrive: any order gives the same bits
// (exact sums, core/exact_sum.h), the memories' sum W included (in the state).
TEST(ServerSession, UpdatesInAnyOrderGiveTheSameBits) {
  for (AlgorithmKind kind : {AlgorithmKind::kFedAvg, AlgorithmKind::kScaffold}) {
    Fleet f(kind, /*rr=*/kind == AlgorithmKind::kScaffold);
    f.dither(/*memory=*/true);
    Sessions fwd(f), rev(f);
    for (uint32_t t = 0; t < 4; ++t) {
      auto a = fwd.announce(t), b = rev.announce(t);
      ASSERT_EQ(a.size(), Fleet::kAgents);
      for (auto& [c, r] : a) ASSERT_TRUE(fwd.server.on_update(c, r.update, 0).ok());
      std::reverse(b.begin(), b.end());
      for (auto& [c, r] : b) ASSERT_TRUE(rev.server.on_update(c, r.update, 0).ok());
      ASSERT_TRUE(fwd.server.round_closed() && rev.server.round_closed());
      EXPECT_EQ(fwd.state(), rev.state()) << "round " << t;
      fwd.publish();
      rev.publish();
    }
  }
}

// Updates for a closed round, a round not yet open, twice, from an agent not
// sampled, or with a bad payload are refused with a reason, and change nothing.
TEST(ServerSession, RefusesBadUpdatesAndKeepsWhatItAccepted) {
  Fleet f(AlgorithmKind::kFedAvg);
  f.dither(true);
  f.task.participation = 0.5;
  Sessions s(f);
  auto r0 = s.announce(0);
  for (auto& [c, r] : r0) ASSERT_TRUE(s.server.on_update(c, r.update, 0).ok());
  s.publish();
  auto r1 = s.announce(1);
  ASSERT_GE(r1.size(), 2u);
  const std::vector<double> before = s.state();
  const uint32_t c0 = r1[0].first;
  Update u = r1[0].second.update;
  auto refused = [&](const Update& bad, Refusal want) {
    const Verdict v = s.server.on_update(c0, bad, 0);
    EXPECT_EQ(v.refusal, want) << v.why;
    EXPECT_FALSE(v.why.empty());
    EXPECT_TRUE(s.server.round_open());
    EXPECT_EQ(s.state(), before);
  };
  // Round 0 is closed: a repeat of an update it took is a late duplicate, anything else for it is stale.
  bool took_part = false;
  for (auto& [c, r] : r0) took_part = took_part || c == c0;
  Update stale = u;
  stale.id.round = 0;
  refused(stale, took_part ? Refusal::kDuplicate : Refusal::kStaleRound);
  Update older = u;
  older.id.algorithm += 1;  // another algorithm's session: nothing of it is open here
  refused(older, Refusal::kStaleRound);
  Update future = u;
  future.id.round = 2;
  refused(future, Refusal::kFutureRound);
  Update short_payload = u;
  short_payload.payload[0].size -= 1;
  refused(short_payload, Refusal::kMalformed);
  Update raw = u;
  raw.encoding = Encoding::kRawFloat64;
  refused(raw, Refusal::kMalformed);
  Update two = u;
  two.segments = 2;
  refused(two, Refusal::kMalformed);
  uint32_t unsampled = 0;
  while (s.server.sampled(unsampled)) ++unsampled;
  EXPECT_EQ(s.server.on_update(unsampled, u, 0).refusal, Refusal::kNotSampled);
  ASSERT_TRUE(s.server.on_update(c0, u, 0).ok());
  EXPECT_EQ(s.server.on_update(c0, u, 0).refusal, Refusal::kDuplicate);
  for (size_t i = 1; i < r1.size(); ++i) ASSERT_TRUE(s.server.on_update(r1[i].first, r1[i].second.update, 0).ok());
  EXPECT_TRUE(s.server.round_closed());
  EXPECT_EQ(s.server.commit().members.size(), r1.size());
}

// At the deadline the round closes when a quorum reported, else it waits
// another deadline; updates are refused after the close.
TEST(ServerSession, DeadlineClosesWithAQuorumOrExtends) {
  Fleet f(AlgorithmKind::kFedAvg);
  Sessions s(f, /*deadline_ms=*/100, /*quorum=*/0.5);
  auto r = s.announce(0, 1000);
  ASSERT_EQ(r.size(), Fleet::kAgents);
  EXPECT_EQ(s.server.announcement(0, 1040).deadline_ms, 60u);
  ASSERT_TRUE(s.server.on_update(r[0].first, r[0].second.update, 1010).ok());
  s.server.tick(1100);  // 1 of 6 < quorum 3: extended to 1200
  EXPECT_TRUE(s.server.round_open());
  EXPECT_EQ(s.server.next_deadline_ms(), 1200u);
  for (int i = 1; i < 3; ++i) ASSERT_TRUE(s.server.on_update(r[i].first, r[i].second.update, 1150).ok());
  s.server.tick(1199);
  EXPECT_TRUE(s.server.round_open());
  s.server.tick(1200);
  ASSERT_TRUE(s.server.round_closed());
  EXPECT_STREQ(s.server.commit().closed_by, "deadline");
  EXPECT_EQ(s.server.commit().members.size(), 3u);
  EXPECT_EQ(s.server.on_update(r[4].first, r[4].second.update, 1201).refusal, Refusal::kStaleRound);
}

// A participant revoked during the open round leaves it: the round closes
// when the others answered, not at its deadline, and without the revoked
// device's update; an update it sends afterwards is refused.
TEST(ServerSession, ARevokedParticipantIsNotWaitedFor) {
  Fleet f(AlgorithmKind::kFedAvg);
  Sessions s(f, /*deadline_ms=*/30000, /*quorum=*/0.5);
  auto r = s.announce(0, 1000);
  ASSERT_EQ(r.size(), Fleet::kAgents);
  for (uint32_t i = 0; i + 1 < Fleet::kAgents; ++i) {
    if (i == 2) continue;
    ASSERT_TRUE(s.server.on_update(r[i].first, r[i].second.update, 1010).ok());
  }
  EXPECT_TRUE(s.server.round_open()) << "agents 2 and 5 have not answered";
  s.server.set_connected(2, false, 1020);
  s.server.set_refused(2, true);  // revoked
  EXPECT_TRUE(s.server.round_open()) << "agent 5 is still to answer";
  ASSERT_TRUE(s.server.on_update(r[5].first, r[5].second.update, 1030).ok());
  ASSERT_TRUE(s.server.round_closed()) << "closed at 1030 ms, not at the 31000 ms deadline";
  EXPECT_STREQ(s.server.commit().closed_by, "all");
  EXPECT_EQ(s.server.commit().members.size(), Fleet::kAgents - 1);
  for (uint32_t m : s.server.commit().members) EXPECT_NE(m, 2u);
  EXPECT_FALSE(s.server.on_update(r[2].first, r[2].second.update, 1040).ok());

  // The last one to answer revoked: the round closes at once.
  Sessions t(f, /*deadline_ms=*/30000, /*quorum=*/0.5);
  auto q = t.announce(0, 1000);
  for (uint32_t i = 1; i < Fleet::kAgents; ++i) ASSERT_TRUE(t.server.on_update(q[i].first, q[i].second.update, 1010).ok());
  t.server.set_refused(0, true);
  ASSERT_TRUE(t.server.round_closed());
  EXPECT_EQ(t.server.commit().members.size(), Fleet::kAgents - 1);
}

// A repeated announcement of the pending round sends the same bytes again.
TEST(ClientSession, ResubmitsTheSameUpdate) {
  Fleet f(AlgorithmKind::kScaffold);
  f.dither(true);
  Sessions s(f);
  auto r = s.announce(0);
  const Update& first = r[2].second.update;
  std::vector<uint8_t> bytes(first.payload[0].data, first.payload[0].data + first.payload[0].size);
  ClientMessage again;
  ASSERT_TRUE(s.clients[2].on_announce(s.server.announcement(2, 0), again).ok());
  ASSERT_EQ(again.kind, MessageKind::kUpdate);
  EXPECT_EQ(std::vector<uint8_t>(again.update.payload[0].data, again.update.payload[0].data + again.update.payload[0].size),
            bytes);
}

// A device restarted between its update and the round result restores its
// state and commits exactly as the device that never stopped.
TEST(ClientSession, StateSurvivesARestart) {
  Fleet f(AlgorithmKind::kScaffold);
  f.dither(true);
  Sessions s(f);
  for (uint32_t t = 0; t < 3; ++t) {
    auto r = s.announce(t);
    for (auto& [c, out] : r) ASSERT_TRUE(s.server.on_update(c, out.update, 0).ok());
    if (t < 2) s.publish();
  }
  // Agent 1 "restarts" now: a new session restored from the saved bytes.
  std::vector<uint8_t> saved(s.clients[1].state(), s.clients[1].state() + s.clients[1].state_size());
  RoundId pending;
  ASSERT_TRUE(s.clients[1].pending(&pending));
  EXPECT_EQ(pending.round, 2u);
  std::vector<uint8_t> mem(Client::WorkspaceBytes(f.task, 0));
  Arena arena(mem.data(), mem.size());
  Client restarted;
  Client::Options o;
  o.task = &f.task;
  o.agent = 1;
  o.problem = f.local[1];
  ASSERT_TRUE(restarted.init(arena, o).ok());
  ASSERT_TRUE(restarted.restore(saved.data(), saved.size()).ok());
  ASSERT_TRUE(restarted.pending(nullptr));
  ASSERT_TRUE(restarted.on_result(s.server.result(1)).ok());
  s.publish();
  ASSERT_EQ(restarted.state_size(), s.clients[1].state_size());
  EXPECT_EQ(0, std::memcmp(restarted.state(), s.clients[1].state(), restarted.state_size()));
  // A state saved for another agent or task is refused.
  Client other;
  std::vector<uint8_t> mem2(mem.size());
  Arena arena2(mem2.data(), mem2.size());
  o.agent = 2;
  ASSERT_TRUE(other.init(arena2, o).ok());
  EXPECT_FALSE(other.restore(saved.data(), saved.size()).ok());
}

// A device says why it cannot take a task: a family not in its build, no data
// for the problem, too little memory.
TEST(ClientSession, RefusesTasksItCannotRun) {
  Fleet f(AlgorithmKind::kFedAvg);
  EXPECT_EQ(Client::Refusal(f.task, f.local[0], 1 << 20), nullptr);
  EXPECT_STREQ((ClientSession<double, kFamilyLsa>::Refusal(f.task, f.local[0], 1 << 20)),
               "this device build does not include the task's algorithm family");
  EXPECT_STREQ(Client::Refusal(f.task, problems::LocalProblem<double>{}, 1 << 20), "no least-squares data for this task");
  EXPECT_STREQ(Client::Refusal(f.task, f.local[0], 64), "the task's vectors do not fit this device's memory");
  task::Task big = f.task;  // no wire here (the simulator's case): d is bounded by the memory given
  big.problem.dim = task::kMaxLinuxDim + 1;
  EXPECT_STREQ(Client::Refusal(big, f.local[0], 1 << 20), "the task's vectors do not fit this device's memory");
  big.problem.dim = 0;
  EXPECT_STREQ(Client::Refusal(big, f.local[0], 1 << 20), "the task's model has no parameters");
}

// Announcements with the wrong length, NaN, another run or no local steps
// are refused; the session stays usable.
TEST(ClientSession, RejectsBadAnnouncements) {
  Fleet f(AlgorithmKind::kFedAvg);
  Sessions s(f);
  ASSERT_TRUE(s.server.open_round(0, 0).ok());
  const Announcement good = s.server.announcement(0, 0);
  std::vector<double> model(good.model.data, good.model.data + good.model.size);
  ClientMessage out;
  Announcement a = good;
  a.model.size -= 1;
  EXPECT_FALSE(s.clients[0].on_announce(a, out).ok());
  std::vector<double> nan = model;
  nan[1] = std::nan("");
  a = good;
  a.model.data = nan.data();
  EXPECT_FALSE(s.clients[0].on_announce(a, out).ok());
  a = good;
  a.id.run = 1;
  EXPECT_FALSE(s.clients[0].on_announce(a, out).ok());
  a = good;
  a.local_steps = 0;
  EXPECT_FALSE(s.clients[0].on_announce(a, out).ok());
  EXPECT_FALSE(s.clients[0].pending(nullptr));
  ASSERT_TRUE(s.clients[0].on_announce(good, out).ok());
  EXPECT_EQ(out.kind, MessageKind::kUpdate);
}

// Compressed downlink (docs/architecture.md, "Downlink"): round 0 sends xhat
// whole, later rounds the delta to agents whose update was aggregated (the
// fleet test compares whole runs with the simulator). A delta for a version the
// client does not hold is refused (the server then sends xhat whole to it),
// and a repeated announcement does not apply the delta twice.
TEST(ClientSession, FollowsTheCompressedDownlink) {
  Fleet f(AlgorithmKind::kFedAvg);
  f.dither(/*memory=*/false);
  f.task.compression.downlink = true;
  Sessions s(f);
  for (uint32_t t = 0; t < 3; ++t) {
    ASSERT_TRUE(s.server.open_round(t, 0).ok());
    Outgoing out;
    while (s.server.next_outgoing(out)) {
      const Announcement a = s.server.announcement(out.agent, 0);
      EXPECT_EQ(a.has_delta, t > 0) << "round " << t;
      EXPECT_EQ(a.model_version, t);
      ClientMessage r;
      ASSERT_TRUE(s.clients[out.agent].on_announce(a, r).ok());
      ASSERT_TRUE(s.server.on_update(out.agent, r.update, 0).ok());
    }
    ASSERT_TRUE(s.server.round_closed());
    s.publish();
  }
  // Round 3: agent 0's announcement moves version 2 to 3 ...
  ASSERT_TRUE(s.server.open_round(3, 0).ok());
  const Announcement a = s.server.announcement(0, 0);
  ASSERT_TRUE(a.has_delta);
  EXPECT_EQ(a.delta_base, 2u);
  // ... which a client still at version 1 cannot apply.
  Fleet g(AlgorithmKind::kFedAvg);
  g.dither(false);
  g.task.compression.downlink = true;
  Sessions stale(g);
  ASSERT_TRUE(stale.server.open_round(0, 0).ok());
  ClientMessage r0;
  ASSERT_TRUE(stale.clients[0].on_announce(stale.server.announcement(0, 0), r0).ok());  // holds version 0
  ClientMessage r;
  const Status st = stale.clients[0].on_announce(a, r);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.message();
  // The up-to-date client applies it once; a repeat sends the same update.
  ClientMessage first, again;
  ASSERT_TRUE(s.clients[0].on_announce(a, first).ok());
  ASSERT_TRUE(s.clients[0].on_announce(a, again).ok());
  ASSERT_EQ(first.update.payload[0].size, again.update.payload[0].size);
  EXPECT_EQ(0, std::memcmp(first.update.payload[0].data, again.update.payload[0].data, first.update.payload[0].size));
  Announcement bad = a;  // a delta that skips versions is malformed
  bad.delta_base = 0;
  EXPECT_EQ(s.clients[1].on_announce(bad, r).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace fedrt::protocol
