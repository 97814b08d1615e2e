#pragma once
// The task's semantic checks, once for every codec (docs/architecture.md,
// "The task travels"): a codec maps the wire's fields into a task::Task
// (refusing only values its enumerations cannot hold) and then asks
// Invalid() whether the task makes sense: sizes within the wire limits
// (task/limits.h), finite settings, algorithms of the problem's family,
// hyper-parameters in range, a quantizer and secure aggregation that go
// together. Device code, header-only.

#include <cfloat>
#include <cstdint>

#include "fedrt/compression/quantizer.h"
#include "fedrt/task/limits.h"
#include "fedrt/task/task.h"

namespace fedrt::task {

// What is wrong with `t` (nullptr: nothing).
inline const char* Invalid(const Task& t) {
  // Positive-and-finite is one comparison chain below (NaN fails every
  // comparison, infinity `<= DBL_MAX`): soft-float images (Cortex-M3) pay a
  // library call per operation, and fedrt-fw-lsa has 92 KB.
  const auto finite = [](double v) { return v - v == 0.0; };
  const ProblemSpec& p = t.problem;
  if (p.agents == 0 || p.agents > (1u << 24)) return "agents outside 1..2^24";
  // The wire's bound: broadcasts and updates travel in chunks, so what else
  // limits d (memory, round results) is the device's to refuse.
  if (p.dim == 0 || p.dim > kMaxLinuxStreamDim) return "dimension outside 1..2^27";
  const double reals[] = {p.garnet.gamma, p.garnet.epsilon, p.synthetic.covariate_shift, p.synthetic.concept_shift,
                          p.synthetic.quantity_skew, p.synthetic.noise, p.synthetic.l2, p.gmm.own_weight,
                          p.gmm.separation};
  for (double v : reals)
    if (!finite(v)) return "a problem setting is NaN or infinite";
  if (p.kind == ProblemKind::kGmm &&
      (p.gmm.components == 0 || p.gmm.components > 64 || p.gmm.data_dim == 0 ||
       p.dim != p.gmm.components * (1 + p.gmm.data_dim)))
    return "Gaussian-mixture sizes do not match the dimension G (1 + p)";
  if (p.kind == ProblemKind::kSoftmax &&
      (p.classes < 2 || p.classes > 1024 || p.dim % p.classes != 0 || p.dim / p.classes < (p.intercept ? 2u : 1u)))
    return "softmax: the classes do not divide the dimension into K (features + intercept)";
  if (p.intercept && p.kind != ProblemKind::kSoftmax &&
      ((p.kind != ProblemKind::kLeastSquares && p.kind != ProblemKind::kLogistic) || p.dim < 2))
    return "an intercept is for least squares, logistic or softmax models with d >= 2";
  if (t.num_algorithms == 0 || t.num_algorithms > kMaxAlgorithms) return "algorithms outside 1..8";
  for (uint32_t a = 0; a < t.num_algorithms; ++a) {
    if (FamilyOf(t.algorithms[a].kind) != FamilyOf(p.kind)) return "an algorithm of another family than the problem's";
    if (t.algorithms[a].rr && FamilyOf(t.algorithms[a].kind) != Family::kOpt)
      return "Richardson-Romberg wraps optimisation algorithms only";
  }
  const HyperSpec& h = t.hyper;
  if (!(h.step > 0 && h.step <= DBL_MAX)) return "the step size must be positive";
  if (h.local_steps == 0 || h.local_steps > (1u << 30)) return "local steps outside 1..2^30";
  if (!(h.comm_prob > 0 && h.comm_prob <= 1)) return "communication probability outside (0, 1]";
  if (!(h.prox_mu >= 0 && h.prox_mu <= DBL_MAX)) return "prox mu must be >= 0";
  if (!(h.server_step > 0 && h.server_step <= DBL_MAX)) return "server step must be positive";
  if (!(h.em_step > 0 && h.em_step <= 1)) return "EM step outside (0, 1]";
  if (h.inner_iters == 0) return "VR-FedEM inner iterations must be positive";
  const Status q = compression::ValidateSpec(t.compression.quantizer);
  if (!q.ok()) return q.message();
  if (t.secagg.enabled && t.compression.quantizer.kind != compression::QuantizerKind::kRounding)
    return "secure aggregation without the rounding quantizer";
  if (!(t.participation > 0 && t.participation <= 1)) return "participation outside (0, 1]";
#ifndef FEDRT_TASK_NO_DP  // an image without the optimisation family refuses every DP task anyway
  if (t.privacy.enabled && !(t.privacy.clip > 0 && t.privacy.clip <= DBL_MAX && t.privacy.noise_multiplier >= 0 &&
                             t.privacy.noise_multiplier <= DBL_MAX))
    return "privacy: clip <= 0 or noise < 0";  // the experiment file named the key (config)
  if (t.privacy.distributed && !(t.privacy.enabled && t.secagg.enabled && t.privacy.quorum_ppm - 1u < 1000000u &&
                                 t.privacy.device_variance - 1u < (1u << 24)))
    return "privacy: distributed needs SecAgg+, a quorum in (0, 1] and a variance in 1..2^24";
#endif
  if (t.rounds == 0 || t.runs == 0) return "no rounds or no runs";
  return nullptr;
}

}  // namespace fedrt::task
