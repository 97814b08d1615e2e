#pragma once
// What a device brings to a session: its local problem, the oracle over its
// own data that the task's problem kind needs (docs/architecture.md, "Round
// protocol"). Device code.

#include "fedrt/task/task.h"
#include "fedrt/problems/expected_oracle.h"
#include "fedrt/problems/gmm_oracle.h"
#include "fedrt/problems/least_squares.h"
#include "fedrt/problems/logistic.h"
#include "fedrt/problems/softmax.h"
#include "fedrt/problems/td_oracle.h"
#include "fedrt/problems/user_oracle.h"

namespace fedrt::problems {

// Agent c's oracle: the one matching the task's problem kind is set, the
// others stay null. Not owned.
template <class S>
struct LocalProblem {
  const TdOracle<S>* td = nullptr;                  // garnet, file (stochastic TD(0))
  const ExpectedLsaOracle<S>* expected = nullptr;   // garnet, file with noise_free
  const LeastSquaresOracle<S>* least_squares = nullptr;
  const LogisticOracle<S>* logistic = nullptr;
  const SoftmaxOracle<S>* softmax = nullptr;
  const GmmOracle<S>* gmm = nullptr;
  const UserModelOracle<S>* user = nullptr;  // the program's own model (fedrt::Device)
};

// Why `problem` cannot serve `spec` (nullptr: it can).
template <class S>
const char* MissingOracle(const task::ProblemSpec& spec, const LocalProblem<S>& problem) {
  switch (spec.kind) {
    case task::ProblemKind::kGarnet:
    case task::ProblemKind::kBundle:
      // A stochastic task runs on TD(0) transitions, or on a linear system's noisy expected operator.
      if (spec.garnet.noise_free ? problem.expected == nullptr : problem.td == nullptr && problem.expected == nullptr)
        return spec.garnet.noise_free ? "no expected-operator oracle for a noise-free TD(0) task"
                                      : "no TD(0) oracle (data) for this task";
      return nullptr;
    case task::ProblemKind::kLeastSquares:
      return problem.least_squares == nullptr ? "no least-squares data for this task" : nullptr;
    case task::ProblemKind::kLogistic:
      return problem.logistic == nullptr ? "no logistic-regression data for this task" : nullptr;
    case task::ProblemKind::kSoftmax:
      if (problem.softmax == nullptr) return "no softmax-regression data for this task";
      return problem.softmax->dim() == static_cast<int>(spec.dim) ? nullptr
                                                                  : "the softmax data's classes and features do not give the task's dimension";
    case task::ProblemKind::kGmm:
      return problem.gmm == nullptr ? "no Gaussian-mixture data for this task" : nullptr;
    case task::ProblemKind::kUser:
      return problem.user == nullptr ? "no user-defined model on this device (it needs a program built on fedrt::Device)"
                                     : nullptr;
  }
  return "unknown problem kind";
}

}  // namespace fedrt::problems
