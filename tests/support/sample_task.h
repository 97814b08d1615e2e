#pragma once
// The task both wire codecs' round-trip tests encode (tests/wire/codec_test.cc:
// protobuf-lite; tests/fw_link/fw_codec_test.cc: nanopb against protobuf-lite):
// every field away from its default, so a field a codec drops shows.
#include "fedrt/task/task.h"

namespace fedrt::test_support {

inline task::Task SampleTask() {
  task::Task t;
  t.problem.kind = task::ProblemKind::kLeastSquares;
  t.problem.agents = 12;
  t.problem.dim = 7;
  t.problem.seed = 0x123456789ull;
  t.problem.synthetic.samples = 77;
  t.problem.synthetic.covariate_shift = 0.25;
  t.problem.synthetic.concept_shift = 1.5;
  t.problem.synthetic.quantity_skew = 0.125;
  t.problem.synthetic.noise = 0.3;
  t.problem.synthetic.l2 = 1e-3;
  t.num_algorithms = 3;
  t.algorithms[0] = {task::AlgorithmKind::kFedAvg, false};
  t.algorithms[1] = {task::AlgorithmKind::kScaffold, true};
  t.algorithms[2] = {task::AlgorithmKind::kFedProxExact, false};
  t.hyper.step = 0.0625;
  t.hyper.local_steps = 33;
  t.hyper.comm_prob = 0.5;
  t.hyper.batch = 4;
  t.hyper.prox_mu = 0.75;
  t.hyper.server_step = 0.9;
  t.hyper.burn_in = 11;
  t.hyper.em_step = 0.5;
  t.hyper.inner_iters = 6;
  t.compression.quantizer.kind = compression::QuantizerKind::kRounding;
  t.compression.quantizer.bits = 12;
  t.compression.quantizer.clip = 2.5;
  t.compression.control_variates = true;
  t.secagg.enabled = true;
  t.secagg.neighbours = 4;
  t.participation = 0.8;
  t.seed = 99;
  t.rounds = 21;
  t.runs = 2;
  return t;
}

}  // namespace fedrt::test_support
