#pragma once
// What a device brings to a session: its local problem (the oracle over its
// data) and the families its build runs. Device code.

#include <cstdint>

#include "fedrt/config/task.h"
#include "fedrt/problems/expected_oracle.h"
#include "fedrt/problems/gmm_oracle.h"
#include "fedrt/problems/least_squares.h"
#include "fedrt/problems/logistic.h"
#include "fedrt/problems/softmax.h"
#include "fedrt/problems/td_oracle.h"
#include "fedrt/problems/user_oracle.h"

namespace fedrt::protocol {

// Families compiled into a client (a template argument: a build without a
// family links none of its code and refuses its tasks).
enum FamilySet : uint32_t {
  kFamilyLsa = 1u << static_cast<unsigned>(config::Family::kLsa),
  kFamilyOpt = 1u << static_cast<unsigned>(config::Family::kOpt),
  kFamilyEm = 1u << static_cast<unsigned>(config::Family::kEm),
  kAllFamilies = kFamilyLsa | kFamilyOpt | kFamilyEm,
};
constexpr bool Has(uint32_t set, config::Family f) { return (set >> static_cast<unsigned>(f)) & 1u; }

// Agent c's oracle: the one matching the task's problem kind is set, the
// others stay null. Not owned.
template <class S>
struct LocalProblem {
  const problems::TdOracle<S>* td = nullptr;                  // garnet, file (stochastic TD(0))
  const problems::ExpectedLsaOracle<S>* expected = nullptr;   // garnet, file with noise_free
  const problems::LeastSquaresOracle<S>* least_squares = nullptr;
  const problems::LogisticOracle<S>* logistic = nullptr;
  const problems::SoftmaxOracle<S>* softmax = nullptr;
  const problems::GmmOracle<S>* gmm = nullptr;
  const problems::UserModelOracle<S>* user = nullptr;  // the program's own model (fedrt::Device)
};

// Why `problem` cannot serve `spec` (nullptr: it can).
template <class S>
const char* MissingOracle(const config::ProblemSpec& spec, const LocalProblem<S>& problem) {
  switch (spec.kind) {
    case config::ProblemKind::kGarnet:
    case config::ProblemKind::kBundle:
      // A stochastic task runs on TD(0) transitions, or on a linear system's noisy expected operator.
      if (spec.garnet.noise_free ? problem.expected == nullptr : problem.td == nullptr && problem.expected == nullptr)
        return spec.garnet.noise_free ? "no expected-operator oracle for a noise-free TD(0) task"
                                      : "no TD(0) oracle (data) for this task";
      return nullptr;
    case config::ProblemKind::kLeastSquares:
      return problem.least_squares == nullptr ? "no least-squares data for this task" : nullptr;
    case config::ProblemKind::kLogistic:
      return problem.logistic == nullptr ? "no logistic-regression data for this task" : nullptr;
    case config::ProblemKind::kSoftmax:
      if (problem.softmax == nullptr) return "no softmax-regression data for this task";
      return problem.softmax->dim() == static_cast<int>(spec.dim) ? nullptr
                                                                  : "the softmax data's classes and features do not give the task's dimension";
    case config::ProblemKind::kGmm:
      return problem.gmm == nullptr ? "no Gaussian-mixture data for this task" : nullptr;
    case config::ProblemKind::kUser:
      return problem.user == nullptr ? "no user-defined model on this device (it needs a program built on fedrt::Device)"
                                     : nullptr;
  }
  return "unknown problem kind";
}

}  // namespace fedrt::protocol
