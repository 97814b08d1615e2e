// The firmware's local data (device code, built on the host): a problem image
// written by fw::MakeProblemImage for every kind of problem round-trips
// through the firmware's validation into the oracle a task needs (the same
// data as problems::Instance's agent c, in float), every kind of damage is
// rejected with a status naming it, and log lines format their fields.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "fedrt/task/fingerprint.h"
#include "fedrt/core/arena.h"
#include "fedrt/fw/log_line.h"
#include "fedrt/fw/problem_image.h"
#include "fedrt/fw/provision.h"
#include "local_data.h"  // runtime/src/fw

namespace fedrt::fw {
namespace {

task::Task TaskOf(task::ProblemKind kind, task::AlgorithmKind alg) {
  task::Task t;
  t.problem.kind = kind;
  t.problem.agents = 3;
  t.problem.dim = 4;
  t.problem.seed = 7;
  t.problem.garnet.states = 6;
  t.problem.synthetic.samples = 20;
  t.problem.synthetic.l2 = 0.05;
  t.problem.gmm = task::GmmSpec{2, 2, 30, 0.9, 4.0};
  if (kind == task::ProblemKind::kGmm) t.problem.dim = 6;
  t.num_algorithms = 1;
  t.algorithms[0] = {alg, false};
  t.hyper.prox_mu = 0.5;
  return t;
}

// The image of agent 1, in 8-aligned memory.
struct Image {
  std::vector<uint64_t> words;
  size_t bytes = 0;
  const uint8_t* data() const { return reinterpret_cast<const uint8_t*>(words.data()); }
  uint8_t* data() { return reinterpret_cast<uint8_t*>(words.data()); }
};
Image MakeImage(const problems::Instance& inst, uint32_t agent = 1) {
  auto img = MakeProblemImage(inst, agent);
  EXPECT_TRUE(img.ok()) << img.status().message();
  Image out;
  out.bytes = img->size();
  out.words.assign((img->size() + 7) / 8, 0);
  std::memcpy(out.words.data(), img->data(), img->size());
  return out;
}

std::unique_ptr<problems::Instance> Build(const task::Task& t) {
  auto inst = problems::Instance::Build(t, problems::DataFiles{});
  EXPECT_TRUE(inst.ok()) << inst.status().message();
  return std::move(*inst);
}

TEST(FwProblemImage, TdImageSamplesTheHostsTransitions) {
  const task::Task t = TaskOf(task::ProblemKind::kGarnet, task::AlgorithmKind::kScaffLsa);
  auto inst = Build(t);
  const Image img = MakeImage(*inst);
  auto v = ParseProblemImage(img.data(), img.bytes);
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(v->agent_index, 1u);
  EXPECT_EQ(v->problem_fingerprint, task::ProblemFingerprint(inst->problem()));
  EXPECT_EQ(v->kind, task::ProblemKind::kGarnet);
  EXPECT_EQ(v->dim, 4);
  EXPECT_EQ(v->rows, 6u);
  const problems::TdOracle<double>& host = *inst->local(1).td;
  EXPECT_EQ(v->aux, host.atoms());  // the same alias table, entry for entry
  for (uint32_t i = 0; i < v->aux; ++i) {
    EXPECT_EQ(v->atoms[i].threshold, host.alias_table()[i].threshold);
    EXPECT_EQ(v->atoms[i].state, host.alias_table()[i].state);
    EXPECT_EQ(v->atoms[i].next_state, host.alias_table()[i].next_state);
    EXPECT_EQ(v->atoms[i].reward, static_cast<float>(host.alias_table()[i].reward));
  }
  std::vector<uint8_t> ws(4096);
  Arena arena(ws.data(), ws.size());
  LocalData<protocol::kAllFamilies> data;
  problems::LocalProblem<float> local;
  ASSERT_TRUE(data.build(*v, t, arena, local).ok());
  ASSERT_NE(local.td, nullptr);
  EXPECT_EQ(local.least_squares, nullptr);
  EXPECT_EQ(arena.used(), 0u);  // mapped in place
  // A noise-free task needs Abar_c, which no image holds: the session refuses it.
  task::Task nf = t;
  nf.problem.garnet.noise_free = true;
  ASSERT_TRUE(data.build(*v, nf, arena, local).ok());
  EXPECT_NE(problems::MissingOracle(nf.problem, local), nullptr);
  EXPECT_FALSE(MakeProblemImage(*Build(nf), 0).ok());
}

TEST(FwProblemImage, LeastSquaresImageGivesTheHostsGradient) {
  const task::Task t = TaskOf(task::ProblemKind::kLeastSquares, task::AlgorithmKind::kFedAvg);
  auto inst = Build(t);
  const Image img = MakeImage(*inst);
  auto v = ParseProblemImage(img.data(), img.bytes);
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(v->rows, static_cast<uint32_t>(inst->fed()->x[1].rows()));
  EXPECT_EQ(v->labels[3], static_cast<float>(inst->fed()->y[1][3]));
  std::vector<uint8_t> ws(4096);
  Arena arena(ws.data(), ws.size());
  LocalData<protocol::kAllFamilies> data;
  problems::LocalProblem<float> local;
  ASSERT_TRUE(data.build(*v, t, arena, local).ok());
  ASSERT_NE(local.least_squares, nullptr);
  EXPECT_TRUE(local.least_squares->has_prox());  // prox_mu from the task
  const double xd[4] = {0.5, -1.0, 0.25, 2.0};
  const float xf[4] = {0.5f, -1.0f, 0.25f, 2.0f};
  double gd[4];
  float gf[4];
  CounterRng r1(1, 0), r2(1, 0);
  inst->local(1).least_squares->gradient(xd, gd, 0, r1);
  local.least_squares->gradient(xf, gf, 0, r2);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(gf[i], gd[i], 1e-4 * (1 + std::fabs(gd[i]))) << i;  // float32 data and sums
  // Abar_c needs d^2 floats of workspace: too little is a refusal, not an overflow.
  std::vector<uint8_t> tiny(32);
  Arena small(tiny.data(), tiny.size());
  EXPECT_EQ(data.build(*v, t, small, local).code(), StatusCode::kResourceExhausted);
  // A build without the optimisation family builds nothing (the session refuses the task).
  LocalData<protocol::kFamilyLsa> lsa_only;
  ASSERT_TRUE(lsa_only.build(*v, t, arena, local).ok());
  EXPECT_EQ(local.least_squares, nullptr);
}

TEST(FwProblemImage, LogisticAndMixtureImages) {
  const task::Task lt = TaskOf(task::ProblemKind::kLogistic, task::AlgorithmKind::kFedAvg);
  auto linst = Build(lt);
  Image limg = MakeImage(*linst);
  auto lv = ParseProblemImage(limg.data(), limg.bytes);
  ASSERT_TRUE(lv.ok()) << lv.status().message();
  for (uint32_t i = 0; i < lv->rows; ++i) EXPECT_TRUE(lv->labels[i] == 1.0f || lv->labels[i] == -1.0f);
  std::vector<uint8_t> ws(4096);
  Arena arena(ws.data(), ws.size());
  LocalData<protocol::kAllFamilies> data;
  problems::LocalProblem<float> local;
  ASSERT_TRUE(data.build(*lv, lt, arena, local).ok());
  EXPECT_NE(local.logistic, nullptr);
  // A label that is not -1 or +1 is rejected even with a valid CRC.
  ProblemImageHeader h;
  std::memcpy(&h, limg.data(), sizeof h);
  const float half = 0.5f;
  std::memcpy(limg.data() + ProblemImageSecondOffset(h.rows, h.dim), &half, sizeof half);
  h.crc32 = Crc32(limg.data() + sizeof h, limg.bytes - sizeof h);
  std::memcpy(limg.data(), &h, sizeof h);
  EXPECT_STREQ(ParseProblemImage(limg.data(), limg.bytes).status().message(),
               "problem image: a logistic label is not -1 or +1");

  const task::Task gt = TaskOf(task::ProblemKind::kGmm, task::AlgorithmKind::kFedEm);
  auto ginst = Build(gt);
  const Image gimg = MakeImage(*ginst, 2);
  auto gv = ParseProblemImage(gimg.data(), gimg.bytes);
  ASSERT_TRUE(gv.ok()) << gv.status().message();
  EXPECT_EQ(gv->aux, 2u);  // G
  EXPECT_EQ(gv->dim, 2);   // p
  EXPECT_EQ(gv->rows, 30u);
  EXPECT_EQ(gv->table[5], static_cast<float>(ginst->gmm()->points[2][5]));
  ASSERT_TRUE(data.build(*gv, gt, arena, local).ok());
  ASSERT_NE(local.gmm, nullptr);
  EXPECT_EQ(local.gmm->stat_dim(), 6);
  // Data of another kind than the task's is refused.
  EXPECT_FALSE(data.build(*gv, lt, arena, local).ok());
}

TEST(FwProblemImage, RejectsDamage) {
  auto inst = Build(TaskOf(task::ProblemKind::kGarnet, task::AlgorithmKind::kFedLsa));
  Image img = MakeImage(*inst);
  uint8_t* p = img.data();
  const size_t n = img.bytes;
  auto parse = [&] { return ParseProblemImage(p, n); };
  p[sizeof(ProblemImageHeader) + 3] ^= 1;  // a feature bit
  auto r = parse();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_STREQ(r.status().message(), "problem image: CRC mismatch");
  p[sizeof(ProblemImageHeader) + 3] ^= 1;
  ASSERT_TRUE(parse().ok());
  p[0] ^= 0xFF;  // magic
  EXPECT_STREQ(parse().status().message(), "problem image: bad magic (not provisioned?)");
  p[0] ^= 0xFF;
  p[4] = 1;  // version 1 (before the task travelled)
  EXPECT_STREQ(parse().status().message(), "problem image: unsupported version");
  p[4] = static_cast<uint8_t>(kProblemImageVersion);
  EXPECT_FALSE(ParseProblemImage(p, n - 1).ok());      // truncated
  EXPECT_FALSE(ParseProblemImage(p + 4, n - 4).ok());  // misaligned
  EXPECT_FALSE(ParseProblemImage(nullptr, 0).ok());
  ASSERT_TRUE(parse().ok());
}

TEST(FwLogLine, FormatsFields) {
  LogLine l;
  l.add("x=").add_u(1234567890123ull).add(" y=").add_i(-42).add(" h=").add_hex(0x7180u).add(" f=").add_float(
      3.591295e-02);
  EXPECT_STREQ(l.c_str(), "x=1234567890123 y=-42 h=7180 f=3.591295e-02");
  LogLine z;
  z.add_float(0.0).add(" ").add_float(-1.5e10);
  EXPECT_STREQ(z.c_str(), "0.000000e+00 -1.500000e+10");
  LogLine big;
  for (int i = 0; i < 100; ++i) big.add("abcd");
  EXPECT_EQ(big.size(), LogLine::kCapacity - 1);
}

}  // namespace
}  // namespace fedrt::fw
