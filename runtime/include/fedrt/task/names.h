#pragma once
// Names of the task's enums as they appear in experiment files, on command
// lines and in outputs. Device code (static strings).

#include "fedrt/task/task.h"

namespace fedrt::task {

inline const char* AlgorithmName(AlgorithmChoice a) {
  static const char* const kPlain[] = {"fedlsa", "scafflsa", "scafflsa-prob", "fedavg", "scaffold",
                                       "fedprox", "fedprox-exact", "fedem", "fedem-naive", "vr-fedem"};
  static const char* const kRr[] = {"fedavg-rr", "scaffold-rr", "fedprox-rr", "fedprox-exact-rr"};
  const unsigned i = static_cast<unsigned>(a.kind);
  if (i >= sizeof kPlain / sizeof kPlain[0]) return "?";
  if (!a.rr) return kPlain[i];
  if (FamilyOf(a.kind) != Family::kOpt) return "?";
  return kRr[i - static_cast<unsigned>(AlgorithmKind::kFedAvg)];
}

inline const char* FamilyName(Family f) {
  switch (f) {
    case Family::kLsa: return "lsa";
    case Family::kOpt: return "optimisation";
    case Family::kEm: return "em";
  }
  return "?";
}

inline const char* ProblemKindName(ProblemKind k) {
  switch (k) {
    case ProblemKind::kGarnet: return "garnet";
    case ProblemKind::kBundle: return "file";
    case ProblemKind::kLeastSquares: return "lsq";
    case ProblemKind::kLogistic: return "logistic";
    case ProblemKind::kGmm: return "gmm";
    case ProblemKind::kSoftmax: return "softmax";
    case ProblemKind::kUser: return "user";
  }
  return "?";
}

inline const char* QuantizerName(compression::QuantizerKind k) {
  switch (k) {
    case compression::QuantizerKind::kNone: return "none";
    case compression::QuantizerKind::kDither: return "dither";
    case compression::QuantizerKind::kRounding: return "rounding";
  }
  return "?";
}

}  // namespace fedrt::task
