#pragma once
// LocalData: the oracle a task needs, over the firmware's provisioned problem
// image (fedrt/fw/problem_image.h), or over the device's own samples (an
// own-data task, docs/data.md): what problems::Instance builds on a host for
// agent c, in float, for the families of this build only. Device code.

#include <cstdint>

#include "fedrt/task/task.h"
#include "fedrt/core/arena.h"
#include "fedrt/core/status.h"
#include "fedrt/fw/problem_image.h"
#include "fedrt/problems/local_problem.h"
#include "fedrt/protocol/families.h"

namespace fedrt::fw {

template <uint32_t kFamilies>
class LocalData {
 public:
  // Builds `out` for `task` from `image` (least squares: Abar_c and bbar_c
  // (and the prox factor) in `arena`). An error says why the data cannot
  // serve the task; nothing is built for a family outside this build.
  Status build(const ProblemView& image, const task::Task& task, Arena& arena, problems::LocalProblem<float>& out) {
    out = problems::LocalProblem<float>{};
    const task::ProblemSpec& p = task.problem;
    if (image.kind != p.kind) return Status::FailedPrecondition("the provisioned data is of another problem kind");
    switch (task::FamilyOf(p.kind)) {
      case task::Family::kLsa:
        if constexpr (protocol::Has(kFamilies, task::Family::kLsa)) {
          if (static_cast<uint32_t>(image.dim) != p.dim)
            return Status::FailedPrecondition("the provisioned features have another dimension than the task's");
          td_ = problems::TdOracle<float>::FromTables(image.dim, image.gamma, image.table, image.atoms, image.aux);
          if (!p.garnet.noise_free) out.td = &td_;  // noise-free TD(0) needs Abar_c, bbar_c: not provisioned
        }
        return Status::Ok();
      case task::Family::kOpt:
        if constexpr (protocol::Has(kFamilies, task::Family::kOpt)) {
          if (static_cast<uint32_t>(image.dim) != p.dim)
            return Status::FailedPrecondition("the provisioned samples have another dimension than the task's");
          if (p.kind == task::ProblemKind::kLeastSquares) {
            auto o = LeastSquares(arena, image.dim, image.rows, image.table, image.labels, task, false);
            if (!o.ok())
              return o.status().code() == StatusCode::kResourceExhausted
                         ? Status::ResourceExhausted("least squares: Abar_c does not fit this device's memory")
                         : o.status();
            lsq_ = *o;
            out.least_squares = &lsq_;
          } else {
            auto o = problems::LogisticOracle<float>::create(arena, image.dim, image.rows, image.table, image.labels,
                                                             static_cast<float>(p.synthetic.l2));
            if (!o.ok()) return o.status();
            logistic_ = *o;
            out.logistic = &logistic_;
          }
        }
        return Status::Ok();
      case task::Family::kEm:
        if constexpr (protocol::Has(kFamilies, task::Family::kEm)) {
          const uint32_t g = image.aux, dp = static_cast<uint32_t>(image.dim);
          if (g != p.gmm.components || dp != p.gmm.data_dim || g * (1 + dp) != p.dim)
            return Status::FailedPrecondition("the provisioned mixture data has other sizes than the task's");
          auto o = problems::GmmOracle<float>::create(image.table, image.rows, static_cast<int>(g), image.dim);
          if (!o.ok()) return o.status();
          gmm_ = *o;
          out.gmm = &gmm_;
        }
        return Status::Ok();
    }
    return Status::InvalidArgument("unknown problem family");
  }

  // Builds `out` for an own-data least squares, binary logistic or softmax
  // task over the device's samples: x (rows x p, row-major; p = d - intercept,
  // or d / K - intercept for softmax), y (logistic: -1/+1; softmax: 0..K-1),
  // in the caller's memory, read in stored order as the shard readers store
  // a shard (least squares: Abar_c, bbar_c (and the prox factor) in `arena`).
  Status build_own(const float* x, const float* y, uint32_t rows, const task::Task& task, Arena& arena,
                   problems::LocalProblem<float>& out) {
    out = problems::LocalProblem<float>{};
    const task::ProblemSpec& p = task.problem;
    if constexpr (protocol::Has(kFamilies, task::Family::kOpt)) {
      const int d = static_cast<int>(p.dim);
      if (p.kind == task::ProblemKind::kLeastSquares) {
        auto o = LeastSquares(arena, d, rows, x, y, task, p.intercept);
        if (!o.ok())
          return o.status().code() == StatusCode::kResourceExhausted
                     ? Status::ResourceExhausted("least squares: Abar_c does not fit this device's memory")
                     : o.status();
        lsq_ = *o;
        out.least_squares = &lsq_;
        return Status::Ok();
      }
      if (p.kind == task::ProblemKind::kLogistic) {
        auto o = problems::LogisticOracle<float>::create(arena, d, rows, x, y, static_cast<float>(p.synthetic.l2),
                                                         p.intercept);
        if (!o.ok()) return o.status();
        logistic_ = *o;
        out.logistic = &logistic_;
        return Status::Ok();
      }
      if (p.kind == task::ProblemKind::kSoftmax && p.classes > 0) {
        const int features = d / static_cast<int>(p.classes) - (p.intercept ? 1 : 0);
        auto o = problems::SoftmaxOracle<float>::create(arena, features, p.classes, p.intercept, rows, x, y,
                                                        static_cast<float>(p.synthetic.l2));
        if (!o.ok()) return o.status();
        if (o->dim() != d) return Status::FailedPrecondition("softmax: the task's d is not K (p + intercept)");
        softmax_ = *o;
        out.softmax = &softmax_;
        return Status::Ok();
      }
    }
    return Status::FailedPrecondition("own-data tasks of this model are not in this firmware");
  }

 private:
  // Abar_c (and the prox factor) in the arena up to d = 2048, matrix-free
  // above, as problems::Instance builds it on a host (the same f_c and
  // stochastic gradients; the host refuses fedprox-exact there).
  static Result<problems::LeastSquaresOracle<float>> LeastSquares(Arena& arena, int d, uint32_t rows, const float* x,
                                                                  const float* y, const task::Task& task,
                                                                  bool intercept) {
    const float l2 = static_cast<float>(task.problem.synthetic.l2);
    if (d > problems::kDenseLeastSquaresMaxDim)
      return problems::LeastSquaresOracle<float>::CreateMatrixFree(d, rows, x, y, l2, intercept);
    return problems::LeastSquaresOracle<float>::create(arena, d, rows, x, y, static_cast<float>(task.hyper.prox_mu), l2,
                                                       intercept);
  }

  problems::TdOracle<float> td_;
  problems::LeastSquaresOracle<float> lsq_;
  problems::LogisticOracle<float> logistic_;
  problems::SoftmaxOracle<float> softmax_;
  problems::GmmOracle<float> gmm_;
};

}  // namespace fedrt::fw
