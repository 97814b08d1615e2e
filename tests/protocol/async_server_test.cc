// Buffered asynchronous aggregation (protocol/async_server.h, docs/async.md):
// an update of staleness s is weighted (1 + s)^-a, one staler than
// max_staleness is dropped, a full buffer of K steps
// x_{v+1} = x_v + eta_g (1/K) sum_i w_i dx_i, whatever the arrival order,
// and the device protocol's jobs and results hold.

#include <cmath>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "fedrt/protocol/async_server.h"
#include "fedrt/sim/session_driver.h"  // SimulatedSecrets
#include "session_harness.h"

namespace fedrt::protocol {
namespace {

using session_testing::Fleet;

// Agent c's raw update dx for `job` (d values).
struct RawUpdate {
  std::vector<double> dx;
  Update u;
  RawUpdate(uint32_t job, std::vector<double> values) : dx(std::move(values)) {
    u.id = RoundId{0, 0, job};
    u.segments = 1;
    u.sample_count = 5;
    u.payload[0] = View<uint8_t>{reinterpret_cast<const uint8_t*>(dx.data()), static_cast<uint32_t>(8 * dx.size())};
  }
};

std::vector<double> Dx(uint32_t c) {
  std::vector<double> v(Fleet::kDim);
  for (int i = 0; i < Fleet::kDim; ++i) v[i] = std::sin(0.7 + 1.3 * c + 0.4 * i);
  return v;
}

struct Server {
  Fleet fleet{task::AlgorithmKind::kFedAvg};
  std::vector<double> zero = std::vector<double>(Fleet::kDim, 0.0);
  AsyncServer s;
  explicit Server(AsyncOptions a, double server_step = 1.0) {
    fleet.task.hyper.server_step = server_step;
    ServerOptions so;
    so.task = fleet.task;
    so.initial = View<double>{zero.data(), Fleet::kDim};
    const Status st = s.init(so, a);
    EXPECT_TRUE(st.ok()) << st.message();
  }
  uint32_t dispatch(uint32_t c) {
    Announcement a;
    EXPECT_TRUE(s.dispatch(c, a).ok());
    return a.id.round;
  }
  Arrival send(uint32_t c, uint32_t job) {
    RawUpdate r(job, Dx(c));
    return s.on_update(c, r.u);
  }
  std::vector<double> x() const { return std::vector<double>(s.core().model(), s.core().model() + Fleet::kDim); }
};

TEST(AsyncServer, StalenessWeightIsOnePlusSToTheMinusA) {
  EXPECT_EQ(StalenessWeight(0, 0.5), 1.0);
  EXPECT_EQ(StalenessWeight(3, 0.5), 0.5);
  EXPECT_EQ(StalenessWeight(7, 1.0), 0.125);
  EXPECT_EQ(StalenessWeight(9, 0.0), 1.0);  // a = 0: plain FedBuff averaging
  EXPECT_DOUBLE_EQ(StalenessWeight(2, 0.5), 1.0 / std::sqrt(3.0));
}

// Agent 0 takes a job at version 0; agents 1 and 2 make three steps of one
// update each; agent 0's update, of staleness 3, counts 0.5 in the next step.
TEST(AsyncServer, AStaleUpdateIsWeightedByOnePlusSToTheMinusA) {
  AsyncOptions a;
  a.buffer = 1;
  a.concurrency = 2;
  a.max_staleness = 3;
  a.staleness_exponent = 0.5;
  Server srv(a);
  const uint32_t j0 = srv.dispatch(0);
  for (int k = 0; k < 3; ++k) {
    const uint32_t j = srv.dispatch(1 + k % 2);
    const Arrival got = srv.send(1 + k % 2, j);
    ASSERT_TRUE(got.verdict.ok()) << got.verdict.why;
    EXPECT_TRUE(got.stepped);
    EXPECT_EQ(got.staleness, 0u);
  }
  ASSERT_EQ(srv.s.version(), 3u);
  const std::vector<double> before = srv.x();
  const Arrival got = srv.send(0, j0);
  ASSERT_TRUE(got.verdict.ok()) << got.verdict.why;
  EXPECT_FALSE(got.dropped);
  EXPECT_EQ(got.staleness, 3u);
  EXPECT_EQ(got.weight, 0.5);
  EXPECT_TRUE(got.stepped);
  const std::vector<double> dx = Dx(0), after = srv.x();
  for (int i = 0; i < Fleet::kDim; ++i) EXPECT_EQ(after[i], before[i] + 0.5 * dx[i]) << i;  // eta_g = 1, K = 1
  EXPECT_TRUE(srv.s.result(0).included);
  EXPECT_EQ(srv.s.result(0).id.round, j0);
}

// max_staleness = 2: agent 0's update of staleness 3 is dropped; the model
// and the buffer do not move, its slot frees, its result says not included.
TEST(AsyncServer, AnUpdateStalerThanMaxStalenessIsDropped) {
  AsyncOptions a;
  a.buffer = 1;
  a.concurrency = 2;
  a.max_staleness = 2;
  Server srv(a);
  const uint32_t j0 = srv.dispatch(0);
  for (int k = 0; k < 3; ++k) ASSERT_TRUE(srv.send(1, srv.dispatch(1)).stepped);
  const std::vector<double> before = srv.x();
  EXPECT_EQ(srv.s.jobs_out(), 1u);
  const Arrival got = srv.send(0, j0);
  EXPECT_TRUE(got.verdict.ok());
  EXPECT_TRUE(got.dropped);
  EXPECT_EQ(got.staleness, 3u);
  EXPECT_FALSE(got.stepped);
  EXPECT_EQ(srv.x(), before);
  EXPECT_EQ(srv.s.version(), 3u);
  EXPECT_EQ(srv.s.jobs_out(), 0u);
  EXPECT_EQ(srv.s.dropped_stale(), 1u);
  EXPECT_FALSE(srv.s.result(0).included);
  // At staleness max_staleness exactly an update still counts.
  const uint32_t j2 = srv.dispatch(2);
  for (int k = 0; k < 2; ++k) ASSERT_TRUE(srv.send(1, srv.dispatch(1)).stepped);
  const Arrival edge = srv.send(2, j2);
  EXPECT_FALSE(edge.dropped);
  EXPECT_EQ(edge.staleness, 2u);
}

// K = 3 with eta_g = 0.5: x_1 = x_0 + 0.5 (w_a dx_a + dx_b + dx_c) / 3 as
// exact sums give it, in any arrival order.
TEST(AsyncServer, ABufferStepsByTheMeanOfItsWeightedUpdatesInAnyOrder) {
  AsyncOptions a;
  a.buffer = 3;
  a.concurrency = 6;
  a.staleness_exponent = 1.0;
  std::vector<std::vector<double>> results;
  for (int order = 0; order < 2; ++order) {
    Server srv(a, 0.5);
    // Version 1 first (three updates of agents 3, 4, 5), then agents 0..2's
    // jobs: 0 from version 0 (staleness 1, weight 1/2), 1 and 2 from version 1.
    const uint32_t j0 = srv.dispatch(0);
    for (uint32_t c = 3; c < 6; ++c) srv.send(c, srv.dispatch(c));
    ASSERT_EQ(srv.s.version(), 1u);
    const uint32_t j1 = srv.dispatch(1), j2 = srv.dispatch(2);
    const std::vector<double> x1 = srv.x();
    const uint32_t agents[3] = {0, 1, 2}, jobs[3] = {j0, j1, j2};
    for (int k = 0; k < 3; ++k) {
      const int i = order == 0 ? k : 2 - k;
      const Arrival got = srv.send(agents[i], jobs[i]);
      ASSERT_TRUE(got.verdict.ok()) << got.verdict.why;
      EXPECT_EQ(got.stepped, k == 2);
    }
    EXPECT_EQ(srv.s.step().members.size(), 3u);
    EXPECT_EQ(srv.s.step_staleness().size(), 3u);
    std::vector<double> x2 = srv.x();
    const std::vector<double> d0 = Dx(0), d1 = Dx(1), d2 = Dx(2);
    for (int i = 0; i < Fleet::kDim; ++i)
      EXPECT_NEAR(x2[i], x1[i] + 0.5 * (0.5 * d0[i] + d1[i] + d2[i]) / 3.0, 1e-15) << i;
    results.push_back(x2);
  }
  EXPECT_EQ(results[0], results[1]);  // bit for bit
}

TEST(AsyncServer, RefusesUpdatesThatAreNotTheDevicesJob) {
  AsyncOptions a;
  a.buffer = 2;
  a.concurrency = 2;
  Server srv(a);
  const uint32_t j0 = srv.dispatch(0);
  EXPECT_EQ(srv.send(1, 0).verdict.refusal, Refusal::kStaleRound);    // agent 1 holds no job
  EXPECT_EQ(srv.send(0, j0 + 7).verdict.refusal, Refusal::kStaleRound);  // another job number
  Announcement ann;
  EXPECT_FALSE(srv.s.dispatch(0, ann).ok());  // already busy
  srv.dispatch(1);
  EXPECT_FALSE(srv.s.slot_free());
  EXPECT_FALSE(srv.s.dispatch(2, ann).ok());  // concurrency 2: no slot
  srv.s.abandon(1);  // went offline: its slot frees
  EXPECT_TRUE(srv.s.slot_free());
  EXPECT_TRUE(srv.send(0, j0).verdict.ok());
  EXPECT_EQ(srv.s.version(), 0u);  // one of K = 2
}

// A device with valid keys that lies: an update of 1e308 values is refused
// (over the norm bound) before anything moves; the buffer and the others'
// step are as if it had not sent.
TEST(AsyncServer, AnUpdateOverTheNormBoundIsRefusedAndChangesNothing) {
  AsyncOptions a;
  a.buffer = 2;
  a.concurrency = 3;
  Server srv(a), twin(a);
  const uint32_t j0 = srv.dispatch(0), j1 = srv.dispatch(1), j2 = srv.dispatch(2);
  RawUpdate bad(j1, std::vector<double>(Fleet::kDim, 1e308));
  const Arrival got = srv.s.on_update(1, bad.u);
  EXPECT_EQ(got.verdict.refusal, Refusal::kOverNorm) << got.verdict.why;
  EXPECT_FALSE(got.stepped);
  srv.s.abandon(1);
  ASSERT_TRUE(srv.send(0, j0).verdict.ok());
  ASSERT_TRUE(srv.send(2, j2).stepped);
  const uint32_t t0 = twin.dispatch(0), t2 = twin.dispatch(2);
  twin.send(0, t0);
  ASSERT_TRUE(twin.send(2, t2).stepped);
  EXPECT_EQ(srv.x(), twin.x());
}

// SecAgg+ per buffer: three devices (16-bit rounding, clip 2) send receipts,
// the third forms the group; driven by hand through the five phases, the
// server learns only the sum, and the step is x_0 + eta_g (1/K) sum_i w_i v_i
// to within eta_g Delta / 2 per coordinate (v_i the value each device's
// integers stand for, w_i its staleness weight: each device scales its own
// integers around the zero point). Weights are 1, 2^-1/2 and 3^-1/2.
TEST(AsyncServer, ASecureBufferStepsByItsWeightedSum) {
  Fleet fleet{task::AlgorithmKind::kFedAvg};
  fleet.task.compression.quantizer.kind = compression::QuantizerKind::kRounding;
  fleet.task.compression.quantizer.bits = 16;
  fleet.task.compression.quantizer.clip = 2.0;
  fleet.task.secagg.enabled = true;
  uint64_t seed = 17;
  session_testing::Sessions hand(fleet, 0, 1.0, sim::SimulatedSecrets, &seed);  // its clients (its server is not used)
  std::vector<double> zero(Fleet::kDim, 0.0);
  ServerOptions so;
  so.task = fleet.task;
  so.initial = View<double>{zero.data(), Fleet::kDim};
  AsyncOptions a;
  a.buffer = 3;
  a.concurrency = 6;
  a.staleness_exponent = 0.5;
  AsyncServer s;
  ASSERT_TRUE(s.init(so, a).ok());
  // Agent 0 trains on version 0, agent 1 on version 1, agent 2 on version 2
  // (agents 3..5 make the two steps between); their group then steps.
  std::vector<ClientMessage> out(Fleet::kAgents);
  auto deliver = [&]() {
    Outgoing o;
    while (s.next_outgoing(o)) {
      const ServerMessage m = s.message(o);
      const Status st = hand.clients[o.agent].on_message(m, out[o.agent]);
      ASSERT_TRUE(st.ok()) << st.message();
      if (m.kind == MessageKind::kRoundResult || out[o.agent].kind == MessageKind::kNone) continue;
      const Verdict v = s.on_secagg(o.agent, out[o.agent]);
      ASSERT_TRUE(v.ok()) << v.why;
    }
  };
  auto train = [&](uint32_t c) {
    Announcement ann;
    ASSERT_TRUE(s.dispatch(c, ann).ok());
    ASSERT_TRUE(hand.clients[c].on_announce(ann, out[c]).ok());
    ASSERT_EQ(out[c].kind, MessageKind::kUpdate);
    EXPECT_EQ(out[c].update.payload[0].size, 0u);  // a receipt: nothing of the update in the clear
  };
  auto arrive = [&](uint32_t c) {
    const Arrival got = s.on_update(c, out[c].update);
    ASSERT_TRUE(got.verdict.ok()) << got.verdict.why;
    deliver();
  };
  train(0);                                  // on version 0
  for (uint32_t c = 3; c < 6; ++c) train(c);
  for (uint32_t c = 3; c < 6; ++c) arrive(c);  // group 1 -> version 1
  ASSERT_EQ(s.version(), 1u);
  train(1);                                  // on version 1
  train(3);
  train(4);
  train(5);
  arrive(3), arrive(4), arrive(5);           // group 2 -> version 2
  ASSERT_EQ(s.version(), 2u);
  train(2);                                  // on version 2
  const std::vector<double> x2(s.core().model(), s.core().model() + Fleet::kDim);
  // v_i: what each member's integers stand for, read before they mask them.
  std::vector<std::vector<double>> v;
  for (uint32_t c : {0u, 1u, 2u}) v.emplace_back(hand.clients[c].coder(0).sent(), hand.clients[c].coder(0).sent() + Fleet::kDim);
  arrive(0), arrive(1), arrive(2);           // staleness 2, 1, 0
  ASSERT_EQ(s.version(), 3u);
  EXPECT_EQ(s.step().members.size(), 3u);
  EXPECT_EQ(s.step().closed_by, std::string("secagg"));
  const double w[3] = {1.0 / std::sqrt(3.0), 1.0 / std::sqrt(2.0), 1.0};
  const double delta = 4.0 / 65535.0, eta_g = fleet.task.hyper.server_step;
  for (int i = 0; i < Fleet::kDim; ++i) {
    double want = 0;
    for (int k = 0; k < 3; ++k) want += w[k] * v[k][i];
    want = x2[i] + eta_g * want / 3.0;
    EXPECT_NEAR(s.core().model()[i], want, eta_g * delta / 2 + 1e-12) << i;
  }
  for (uint32_t c : {0u, 1u, 2u}) EXPECT_TRUE(s.result(c).included);
}

// Central DP-FedAvg: an update longer than the clip is refused; an accepted
// one holds its device (no new job) until its buffer's step, so no device
// adds two updates to one step; the step adds sigma C times the source's
// draws and divides by K; the results come from the server's outbox.
TEST(AsyncServer, UnderCentralDpADeviceAddsOneUpdatePerStep) {
  Fleet fleet{task::AlgorithmKind::kFedAvg};
  fleet.task.privacy.enabled = true;
  fleet.task.privacy.clip = 10.0;
  fleet.task.privacy.noise_multiplier = 0.5;
  std::vector<double> zero(Fleet::kDim, 0.0);
  ServerOptions so;
  so.task = fleet.task;
  so.initial = View<double>{zero.data(), Fleet::kDim};
  so.standard_normal = [](double* out, size_t n) {
    for (size_t i = 0; i < n; ++i) out[i] = 0.25 * static_cast<double>(i + 1);
    return Status::Ok();
  };
  AsyncOptions a;
  a.buffer = 2;
  a.concurrency = 3;
  a.staleness_exponent = 0;
  AsyncServer s;
  ASSERT_TRUE(s.init(so, a).ok());
  EXPECT_TRUE(s.holds());
  Announcement ann;
  ASSERT_TRUE(s.dispatch(0, ann).ok());
  const uint32_t j0 = ann.id.round;
  ASSERT_TRUE(s.dispatch(1, ann).ok());
  const uint32_t j1 = ann.id.round;
  RawUpdate big(j1, std::vector<double>(Fleet::kDim, 100.0));  // norm 200 > clip 10
  EXPECT_EQ(s.on_update(1, big.u).verdict.refusal, Refusal::kUnclipped);
  RawUpdate u0(j0, Dx(0));
  ASSERT_TRUE(s.on_update(0, u0.u).verdict.ok());
  EXPECT_TRUE(s.busy(0));                   // held until the step
  EXPECT_FALSE(s.dispatch(0, ann).ok());    // no second update of device 0 in this buffer
  s.abandon(1);
  ASSERT_TRUE(s.dispatch(2, ann).ok());
  RawUpdate u2(ann.id.round, Dx(2));
  ASSERT_TRUE(s.on_update(2, u2.u).stepped);
  EXPECT_FALSE(s.busy(0));
  const std::vector<double> d0 = Dx(0), d2 = Dx(2);
  for (int i = 0; i < Fleet::kDim; ++i)  // x_1 = 0 + eta_g (dx_0 + dx_2 + sigma C n) / K
    EXPECT_NEAR(s.core().model()[i], (d0[i] + d2[i] + 0.5 * 10.0 * 0.25 * (i + 1)) / 2.0, 1e-14) << i;
  Outgoing o;
  int results = 0;
  while (s.next_outgoing(o)) results += o.kind == MessageKind::kRoundResult;
  EXPECT_EQ(results, 2);
}

TEST(AsyncServer, InitRefusesWhatItCannotWeigh) {
  Fleet f{task::AlgorithmKind::kFedAvg};
  std::vector<double> zero(Fleet::kDim, 0.0);
  ServerOptions so;
  so.initial = View<double>{zero.data(), Fleet::kDim};
  AsyncOptions a;
  a.buffer = 4;
  a.concurrency = 3;
  so.task = f.task;
  AsyncServer s;
  EXPECT_FALSE(s.init(so, a).ok());  // concurrency < buffer
  a.concurrency = 4;
  f.task.compression.quantizer.kind = compression::QuantizerKind::kRounding;
  f.task.compression.quantizer.bits = 16;
  so.task = f.task;
  EXPECT_FALSE(s.init(so, a).ok());  // integer sums
}

}  // namespace
}  // namespace fedrt::protocol
