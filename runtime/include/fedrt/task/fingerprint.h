#pragma once
// ProblemFingerprint: FNV-1a 64 over every field of a ProblemSpec that
// determines the agents' local data, in a fixed little-endian encoding, so a
// host and a microcontroller compute the same value. A provisioned device
// compares it with its image; a coordinator's state database records it.
// Device code.

#include <cstdint>
#include <cstring>

#include "fedrt/task/task.h"

namespace fedrt::task {

class Fnv1a {
 public:
  void bytes(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    for (size_t i = 0; i < n; ++i) {
      h_ ^= b[i];
      h_ *= 1099511628211ull;
    }
  }
  void u64(uint64_t v) {
    uint8_t b[8];
    for (int i = 0; i < 8; ++i) b[i] = static_cast<uint8_t>(v >> (8 * i));
    bytes(b, 8);
  }
  void f64(double v) {
    uint64_t u;
    std::memcpy(&u, &v, 8);
    u64(u);
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 1469598103934665603ull;
};

inline uint64_t ProblemFingerprint(const ProblemSpec& p) {
  Fnv1a h;
  h.u64(static_cast<uint64_t>(p.kind));
  h.u64(p.agents);
  h.u64(p.dim);
  h.u64(p.from_files ? 1 : 0);
  if (p.own_data) {  // no device holds the others' shards: the format identifies the data
    h.u64(p.data_format);
    for (const char* c = p.label; *c != '\0'; ++c) h.u64(static_cast<unsigned char>(*c));
  } else if (p.from_files) {
    h.u64(p.data_fingerprint);
  } else {
    h.u64(p.seed);
  }
  switch (FamilyOf(p.kind)) {
    case Family::kLsa:
      h.u64(p.garnet.states);
      h.u64(p.garnet.actions);
      h.u64(p.garnet.branching);
      h.f64(p.garnet.gamma);
      h.f64(p.garnet.epsilon);
      h.u64(static_cast<uint64_t>(p.garnet.heterogeneity));
      h.u64(p.garnet.noise_free ? 1 : 0);
      break;
    case Family::kOpt:
      h.u64(p.synthetic.samples);
      h.f64(p.synthetic.covariate_shift);
      h.f64(p.synthetic.concept_shift);
      h.f64(p.synthetic.quantity_skew);
      h.f64(p.synthetic.noise);
      h.f64(p.synthetic.l2);
      if (p.kind == ProblemKind::kSoftmax) {
        h.u64(p.classes);
        h.u64(p.intercept ? 1 : 0);
      }
      break;
    case Family::kEm:
      h.u64(p.gmm.components);
      h.u64(p.gmm.data_dim);
      h.u64(p.gmm.points);
      h.f64(p.gmm.own_weight);
      h.f64(p.gmm.separation);
      break;
  }
  return h.value();
}

}  // namespace fedrt::task

namespace fedrt::task {

// FNV-1a of what a device's persisted state depends on: the problem, one
// algorithm with its hyper-parameters, the uplink codec, the seed and the run.
inline uint64_t SessionFingerprint(const Task& t, uint32_t algorithm, uint32_t run) {
  Fnv1a h;
  h.u64(ProblemFingerprint(t.problem));
  const AlgorithmChoice a = algorithm < t.num_algorithms ? t.algorithms[algorithm] : AlgorithmChoice{};
  h.u64(static_cast<uint64_t>(a.kind));
  h.u64(a.rr ? 1 : 0);
  h.f64(t.hyper.step);
  h.u64(t.hyper.local_steps);
  h.f64(t.hyper.comm_prob);
  h.u64(t.hyper.batch);
  h.f64(t.hyper.prox_mu);
  h.f64(t.hyper.server_step);
  h.f64(t.hyper.em_step);
  h.u64(t.hyper.inner_iters);
  h.u64(static_cast<uint64_t>(t.compression.quantizer.kind));
  h.u64(t.compression.quantizer.levels);
  h.u64(t.compression.quantizer.elias_gamma ? 1 : 0);
  h.u64(t.compression.quantizer.bits);
  h.f64(t.compression.quantizer.clip);
  h.u64(t.compression.control_variates ? 1 : 0);
  if (t.privacy.enabled) {  // absent otherwise: fingerprints of tasks without privacy are unchanged
    h.f64(t.privacy.clip);
    h.f64(t.privacy.noise_multiplier);
#ifndef FEDRT_TASK_NO_DP  // an image without the optimisation family never runs a DP task
    if (t.privacy.distributed) {  // absent for central tasks: their fingerprints are unchanged
      h.u64(t.privacy.quorum_ppm);
      h.u64(t.privacy.device_variance);
      h.u64(t.privacy.has_test_seed ? t.privacy.test_seed : ~0ull);
    }
#endif
  }
  h.f64(t.participation);
  h.u64(t.seed);
  h.u64(algorithm);
  h.u64(run);
  return h.value();
}

}  // namespace fedrt::task

namespace fedrt::task {

// FNV-1a of the whole task: every algorithm's session, the schedule and SecAgg+.
inline uint64_t TaskFingerprint(const Task& t) {
  Fnv1a h;
  for (uint32_t a = 0; a < t.num_algorithms; ++a) h.u64(SessionFingerprint(t, a, 0));
  h.u64(t.num_algorithms);
  h.u64(t.rounds);
  h.u64(t.runs);
  h.u64(t.hyper.burn_in);
  h.u64(t.compression.downlink ? 1 : 0);
  h.u64(t.secagg.enabled ? 1 : 0);
  h.u64(t.secagg.neighbours);
  return h.value();
}

}  // namespace fedrt::task
