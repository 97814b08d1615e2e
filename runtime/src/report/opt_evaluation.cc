// Evaluation of the federated optimisation family (docs/algorithms.md 1.4, 3,
// 6): error ||x_t - x*||^2 (x_RR for Fed-RR), heterogeneity at x*, the
// closed-form FedAvg / FedProx points and FedAvg's predicted bias on least
// squares, and the Polyak-Ruppert averages of every run.
#include <cmath>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "fedrt/algorithms/fedopt.h"
#include "fedrt/analysis/fedlsa_bias.h"
#include "fedrt/analysis/fedopt_theory.h"
#include "fedrt/compression/quantizer.h"
#include "fedrt/report/family_evaluations.h"
#include "fedrt/protocol/messages.h"
#include "fedrt/report/held_out.h"
#include "fedrt/report/settings_json.h"

namespace fedrt::report {

namespace {

using task::AlgorithmKind;

std::vector<double> ToVec(const Eigen::VectorXd& v) { return std::vector<double>(v.data(), v.data() + v.size()); }

double MeanOf(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0.0 : s / static_cast<double>(v.size());
}

class OptEvaluation : public Evaluation {
 public:
  OptEvaluation(const task::Task& t, const problems::Instance& i, Eigen::VectorXd x_star)
      : task_(t), inst_(i), data_(*i.fed()), x_star_(std::move(x_star)),
        lsq_(t.problem.kind == task::ProblemKind::kLeastSquares),
        runs_(static_cast<size_t>(t.num_algorithms) * t.runs) {}

  // Above d = 2048 the host keeps no d x d matrix: no closed-form theory, no
  // Hessian-based heterogeneity or smoothness (summary.json says so).
  bool dense() const { return data_.model_dim() <= problems::kDenseLeastSquaresMaxDim; }

  Status prepare() {  // closed-form theory for least squares (docs/algorithms.md 6)
    if (!lsq_ || !dense()) return Status::Ok();
    auto s = problems::LeastSquaresSystem(data_, task_.problem.synthetic.l2);
    if (!s.ok()) return s.status();
    lsa_ = *s;
    auto fa = analysis::FedAvgFixedPoint(*lsa_, task_.hyper.step, task_.hyper.local_steps);
    if (fa.ok()) fedavg_point_ = *fa;
    auto fp = analysis::FedProxFixedPoint(*lsa_, task_.hyper.prox_mu);
    if (fp.ok()) fedprox_point_ = *fp;
    fedavg_bias_ = analysis::PredictFedLsaBias(*lsa_, task_.hyper.step, task_.hyper.local_steps, task_.rounds);
    return Status::Ok();
  }

  void describe(SimResult& out) const override {
    const task::SyntheticSpec& syn = task_.problem.synthetic;
    const double l2 = syn.l2;
    const int d = data_.model_dim(), n = data_.agents();
    out.error_metric = "||x_t - x_star||^2";
    out.error_label = "‖x_t − x*‖²";
    out.problem.agents = n;
    out.problem.dim = d;
    out.problem.theta_star = x_star_;
    long n_min = data_.x[0].rows(), n_max = n_min;
    for (const auto& m : data_.x) {
      n_min = std::min<long>(n_min, m.rows());
      n_max = std::max<long>(n_max, m.rows());
    }
    const std::string loss =
        lsq_ ? (l2 > 0 ? fmt::format("ridge least squares (l2={}{})", l2, data_.intercept ? ", intercept" : "")
                       : std::string(data_.intercept ? "least squares (intercept)" : "least squares"))
        : data_.loss == problems::FedLoss::kSoftmax
            ? fmt::format("softmax regression ({} classes, {} features{}, l2={})", data_.classes, data_.dim,
                          data_.intercept ? " + intercept" : "", l2)
            : fmt::format("logistic regression (l2={}{})", l2, data_.intercept ? ", intercept" : "");
    out.problem.description =
        data_.source == "synthetic"
            ? fmt::format("federated {}, synthetic: covariate shift {}, concept shift {}, quantity skew {}, d={}, "
                          "n_c in [{}, {}]",
                          loss, syn.covariate_shift, syn.concept_shift, syn.quantity_skew, d, n_min, n_max)
            : fmt::format("federated {} from '{}', d={}, n_c in [{}, {}]", loss, data_.source, d, n_min, n_max);
    nlohmann::json& px = out.problem.extra;
    px["x_star"] = ToVec(x_star_);
    if (!dense()) {
      px["large_d_note"] = fmt::format(
          "d = {} > {}: x_star by conjugate gradients (matrix-free); the closed-form fixed points and predicted "
          "bias and zeta1/zeta2 need d x d matrices and are not computed",
          d, problems::kDenseLeastSquaresMaxDim);
    } else {
      const analysis::Heterogeneity het = analysis::HeterogeneityAt(data_, l2, x_star_);
      px["zeta1"] = het.zeta1;
      if (het.zeta2_computed)
        px["zeta2"] = het.zeta2;
      else
        px["zeta2_note"] = fmt::format("zeta2 not computed: it needs one {} x {} eigenproblem per agent, {} agents",
                                       d, d, n);
    }
    long gram_max = 0;  // lambda_max(Z^T Z) = lambda_max(Z Z^T): the smaller Gram matrix serves
    for (const auto& m : data_.x) gram_max = std::max<long>(gram_max, std::min<long>(m.rows(), m.cols()));
    if (gram_max <= problems::kDenseLeastSquaresMaxDim) {
      // L_max = max_c lambda_max(hess f_c) (logistic: bound X_c^T X_c / (4 n_c) + l2,
      // softmax: Z_c^T Z_c / (2 n_c) + l2 with z = (a, 1)); stable steps need eta L_max < 2
      double l_max = 0;
      const bool softmax = data_.loss == problems::FedLoss::kSoftmax;
      for (int c = 0; c < n; ++c) {
        Eigen::MatrixXd z = data_.x[c];
        if (softmax && data_.intercept) {
          z.conservativeResize(Eigen::NoChange, z.cols() + 1);
          z.col(z.cols() - 1).setOnes();
        }
        const Eigen::MatrixXd g = (z.rows() < z.cols() ? Eigen::MatrixXd(z * z.transpose())
                                                        : Eigen::MatrixXd(z.transpose() * z)) /
                                  static_cast<double>(z.rows());
        Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(g, Eigen::EigenvaluesOnly);
        const double top = es.eigenvalues().maxCoeff();
        l_max = std::max(l_max, (lsq_ ? top : (softmax ? 0.5 : 0.25) * top) + l2);
      }
      px["smoothness_max"] = l_max;
      px["step_times_smoothness_max"] = task_.hyper.step * l_max;
    }
    px["samples_total"] = data_.total_samples();
    px["samples_min"] = n_min;
    px["samples_max"] = n_max;
    if (data_.theta_true) {
      px["theta_true"] = ToVec(*data_.theta_true);
      px["x_star_statistical_error_sq"] = (x_star_ - *data_.theta_true).squaredNorm();
    }
    out.settings = OptSettingsJson(task_, l2, "uniform mean over the agents that reported (x_star minimises (1/N) sum_c f_c)");
    if (task_.compression.enabled()) {
      out.settings["compression"] = CompressionJson(task_.compression, d);
      out.settings["compression"]["omega_note"] =
          "omega and alpha for a d-vector; Scaffold compresses 2d scalars (see each algorithm's compression_omega)";
      if (task_.compression.downlink)
        out.settings["compression"]["downlink_model"] =
            "agents use xhat <- xhat + Q(broadcast - xhat); the server keeps its own x_t (and c)";
    }
    if (task_.secagg.enabled)
      out.settings["secure_aggregation"] = SecAggJson(task_.secagg, static_cast<uint32_t>(n), task_.compression.quantizer.bits);
    if (data_.source == "synthetic")
      out.settings.update(SyntheticSettingsJson(syn));
    else
      out.settings["data"] = data_.source;
    auto put = [&](const char* key, const std::optional<Eigen::VectorXd>& p) {
      if (!p) return;
      px[std::string(key)] = ToVec(*p);
      px[std::string(key) + "_rel_diff_from_x_star"] = (*p - x_star_).norm() / x_star_.norm();
      if (data_.theta_true) px[std::string(key) + "_statistical_error_sq"] = (*p - *data_.theta_true).squaredNorm();
    };
    if (test_) {  // the centralized model x_star (trained on the union of the shards) on the held-out set
      const TestScore c = test_->set().score(x_star_.data());
      px["centralized_test_loss"] = c.loss;
      px["centralized_test_accuracy"] = c.accuracy;
    }
    put("fedavg_fixed_point", fedavg_point_);
    put("fedprox_exact_fixed_point", fedprox_point_);
  }

  void set_test(HeldOutSet test) { test_.emplace(std::move(test), task_.rounds); }

  // Held-out scores of round t's model go in row t + 1 (row 0: the initial iterate).
  // A plain run's Polyak-Ruppert average xbar = mean of x_t over the rounds
  // after the burn-in, t = round + 1 > b (docs/algorithms.md 3), kept here:
  // Fed-RR's server keeps its two chains' averages, a single chain's needs none.
  // Every (algorithm, run) has its own slot, so runs may be evaluated at once.
  void round_finished(size_t a, uint32_t run, uint32_t round, const protocol::ServerCore& core) override {
    if (test_) test_->record(a, run, round, core.model());
    if (task_.algorithms[a].rr || round == protocol::kInitRound) return;
    RunState& s = slot(a, run);
    const int d = data_.model_dim();
    if (round == 0 || s.average.size() != d) {
      s.average = Eigen::VectorXd::Zero(d);
      s.averaged = 0;
    }
    if (round + 1 <= task_.hyper.burn_in) return;
    ++s.averaged;
    const double w = 1.0 / static_cast<double>(s.averaged);
    const double* x = core.model();
    for (int i = 0; i < d; ++i) s.average[i] += w * (x[i] - s.average[i]);
  }

  double initial_error() const override { return SquaredDistance(inst_.initial_iterate().data(), x_star_); }
  double error(const protocol::ServerCore& core) const override { return SquaredDistance(core.model(), x_star_); }
  double test_accuracy(const protocol::ServerCore& core) const override {
    return test_ ? test_->set().score(core.model()).accuracy : std::nan("");
  }

  void run_finished(size_t a, uint32_t run, const protocol::ServerCore& core) override {
    RunState& s = slot(a, run);
    const int d = data_.model_dim();
    s.finished = true;
    s.final = Eigen::Map<const Eigen::VectorXd>(core.model(), d);
    if (task_.algorithms[a].rr) {
      s.pr_gamma = Eigen::Map<const Eigen::VectorXd>(core.average_gamma(), d);
      s.pr_2gamma = Eigen::Map<const Eigen::VectorXd>(core.average_2gamma(), d);
    } else {
      if (s.average.size() != d) s.average = Eigen::VectorXd::Zero(d);
      s.pr_gamma = std::move(s.average);
      s.pr_2gamma = s.pr_gamma;
      s.average = Eigen::VectorXd();
    }
  }

  bool concurrent_runs() const override { return true; }

  void algorithm_finished(size_t a, AlgorithmResult& res) override {
    const task::AlgorithmChoice spec = task_.algorithms[a];
    if (test_) test_->fill(a, task_.runs, inst_.initial_iterate().data(), res);
    std::vector<double> final_dist, pr_dist, pr2_dist, stat_err;
    std::vector<const Eigen::VectorXd*> finals;  // the finished runs' final iterates, in run order
    for (uint32_t r = 0; r < task_.runs; ++r) {  // distances to x_star (not squared)
      const RunState& s = slot(a, r);
      if (!s.finished) continue;
      finals.push_back(&s.final);
      final_dist.push_back((s.final - x_star_).norm());
      pr_dist.push_back((s.pr_gamma - x_star_).norm());
      pr2_dist.push_back((s.pr_2gamma - x_star_).norm());
      if (data_.theta_true) stat_err.push_back((s.final - *data_.theta_true).squaredNorm());
    }
    nlohmann::json& e = res.extra;
    e["final_dist_mean"] = MeanOf(final_dist);
    if (task_.compression.enabled()) {
      const int udim = spec.kind == AlgorithmKind::kScaffold ? 2 * data_.model_dim() : data_.model_dim();
      e["compression_vector_length"] = udim;
      e["compression_omega"] = compression::Omega(task_.compression.quantizer, udim);
      e["compression_alpha"] =
          task_.compression.control_variates ? compression::ControlVariateStep(task_.compression.quantizer, udim) : 0.0;
    }
    if (spec.rr) {
      e["rr_dist_per_run"] = final_dist;
      e["pr_gamma_dist_per_run"] = pr_dist;
      e["pr_2gamma_dist_per_run"] = pr2_dist;
      e["pr_gamma_dist_mean"] = MeanOf(pr_dist);
      e["pr_2gamma_dist_mean"] = MeanOf(pr2_dist);
      e["rr_gain"] = MeanOf(final_dist) > 0 ? MeanOf(pr_dist) / MeanOf(final_dist) : 0.0;
      e["plot_lines"] = {{{"label", "level ||xbar_gamma - x*||² of the last round, xbar_gamma = mean of FedAvg's x_t after the burn-in"},
                          {"value", MeanOf(pr_dist) * MeanOf(pr_dist)}}};
      e["note"] = "error is ||x_RR - x_star||^2, x_RR = 2 xbar_gamma - xbar_2gamma (Polyak-Ruppert averages after the burn-in)";
    } else {
      e["pr_average_dist_per_run"] = pr_dist;
      e["pr_average_dist_mean"] = MeanOf(pr_dist);
      if (task_.hyper.batch > 0)  // stochastic: the averaged iterate is the fair comparison with Fed-RR
        e["plot_lines"] = {{{"label", "level ||xbar - x*||² of the last round, xbar = mean of x_t after the burn-in"},
                            {"value", MeanOf(pr_dist) * MeanOf(pr_dist)}}};
    }
    if (!stat_err.empty()) e["statistical_error_sq_mean"] = MeanOf(stat_err);
    // Predicted plateaus (full participation, eta_g = 1): the dashed lines of the plot.
    const bool exact_theory = task_.participation >= 1.0 && task_.hyper.server_step == 1.0 && !spec.rr;
    if (exact_theory && spec.kind == AlgorithmKind::kScaffold) {
      res.predicted_bias_sq = 0.0;  // control variates remove the heterogeneity bias
      res.predicted_bias_sq_stationary = 0.0;
    } else if (exact_theory && lsq_ && fedavg_bias_ && spec.kind == AlgorithmKind::kFedAvg) {
      res.predicted_bias_sq = fedavg_bias_->after_rounds.squaredNorm();
      res.predicted_bias_sq_stationary = fedavg_bias_->stationary.squaredNorm();
      if (fedavg_point_ && !finals.empty()) {
        e["fixed_point_dist_sq"] = (*fedavg_point_ - x_star_).squaredNorm();
        e["final_rel_diff_from_fixed_point"] = (*finals[0] - *fedavg_point_).norm() / fedavg_point_->norm();
      }
    } else if (exact_theory && lsq_ && spec.kind == AlgorithmKind::kFedProxExact && fedprox_point_ && !finals.empty()) {
      res.predicted_bias_sq = (*fedprox_point_ - x_star_).squaredNorm();
      res.predicted_bias_sq_stationary = res.predicted_bias_sq;
      e["fixed_point_dist_sq"] = *res.predicted_bias_sq;
      e["final_rel_diff_from_fixed_point"] = (*finals[0] - *fedprox_point_).norm() / fedprox_point_->norm();
    }
  }

  // Flops of one local step (for the simulator's inline-vs-threads decision only).
  double work_per_sample() const override {
    const double d = data_.model_dim();
    if (task_.hyper.batch > 0) return task_.hyper.batch * d;
    return lsq_ && dense() ? d * d : static_cast<double>(data_.total_samples()) / data_.agents() * d;
  }
  double min_parallel_work() const override { return 1u << 16; }

 private:
  const task::Task& task_;
  const problems::Instance& inst_;
  const problems::FedDataset& data_;
  Eigen::VectorXd x_star_;
  bool lsq_;
  std::optional<problems::LsaSystem> lsa_;
  std::optional<Eigen::VectorXd> fedavg_point_, fedprox_point_;
  std::optional<analysis::FedLsaBias> fedavg_bias_;
  struct RunState {
    Eigen::VectorXd average;  // a plain run's xbar while it runs (round_finished)
    uint32_t averaged = 0;
    bool finished = false;
    Eigen::VectorXd final, pr_gamma, pr_2gamma;  // at run_finished
  };
  RunState& slot(size_t a, uint32_t run) { return runs_[a * task_.runs + run]; }
  const RunState& slot(size_t a, uint32_t run) const { return runs_[a * task_.runs + run]; }
  std::vector<RunState> runs_;  // [algorithm * runs + run]
  std::optional<HeldOutScores> test_;
};

}  // namespace

Result<std::unique_ptr<Evaluation>> MakeOptEvaluation(const task::Task& task, const problems::DataFiles& files,
                                                      const problems::Instance& instance) {
  auto x_star = problems::ExactSolution(*instance.fed(), task.problem.synthetic.l2);
  if (!x_star.ok()) return x_star.status();
  auto e = std::make_unique<OptEvaluation>(task, instance, *x_star);
  FEDRT_TRY(e->prepare());
  if (!files.test.empty()) {
    auto test = HeldOutSet::Load(task, files.shards, files.test);
    if (!test.ok()) return test.status();
    e->set_test(std::move(*test));
  }
  return std::unique_ptr<Evaluation>(std::move(e));
}

}  // namespace fedrt::report
