// Evaluation of the federated EM family (docs/algorithms.md 1.5, 5): error
// ||h(Shat_k)||^2 with h(s) = mean_c sbar_c(T(s)) - s, and the distance of
// T(Shat_k) to the exact EM fixed point reached from the same start.
#include <map>

#include <fmt/format.h>

#include "fedrt/compression/quantizer.h"
#include "fedrt/config/names.h"
#include "fedrt/problems/gmm_oracle.h"
#include "fedrt/protocol/messages.h"
#include "fedrt/report/family_evaluations.h"
#include "fedrt/report/settings_json.h"
#include "fedrt/core/worker_pool.h"

namespace fedrt::report {

namespace {

class EmEvaluation : public Evaluation {
 public:
  EmEvaluation(const config::Task& t, const problems::Instance& i, WorkerPool* pool)
      : task_(t), inst_(i), d_(*i.gmm()), pool_(pool) {}

  // The exact EM fixed point from the same start: s <- mean_c sbar_c(T(s)).
  void prepare() {
    s_star_ = inst_.initial_iterate();
    std::vector<double> th(d_.dim), next(d_.dim);
    for (iters_ = 0; iters_ < 100000; ++iters_) {
      problems::GmmMStep(s_star_.data(), d_.G, d_.p, th.data());
      MeanStat(th.data(), next.data());
      double diff = 0;
      for (int k = 0; k < d_.dim; ++k) diff += (next[k] - s_star_[k]) * (next[k] - s_star_[k]);
      s_star_ = next;
      last_step_ = diff;
      if (diff < 1e-30) break;
    }
    theta_star_.resize(d_.dim);
    problems::GmmMStep(s_star_.data(), d_.G, d_.p, theta_star_.data());
  }

  void describe(SimResult& out) const override {
    const config::GmmSpec& g = task_.problem.gmm;
    out.error_metric = "||h(Shat_k)||^2";
    out.error_label = "‖h(Ŝ_k)‖²";
    out.problem.agents = static_cast<int>(d_.n);
    out.problem.dim = d_.dim;
    out.problem.theta_star = theta_star_;
    out.problem.description = fmt::format(
        "Gaussian mixture, G={} components in R^{}, {} points per agent, own-component weight {} ({})", d_.G, d_.p,
        d_.m, g.own_weight, g.own_weight * d_.G <= 1.0 + 1e-12 ? "homogeneous" : "heterogeneous");
    out.problem.extra = {{"em_fixed_point_statistics", s_star_},
                         {"em_fixed_point_iterations", iters_},
                         {"em_fixed_point_last_step_sq", last_step_},
                         {"true_parameters", std::vector<double>(d_.true_params.data(), d_.true_params.data() + d_.dim)},
                         {"parameter_layout", "pi_1..pi_G, mu_1 (p), ..., mu_G (p)"}};
    const auto& q = task_.compression.quantizer;
    out.settings = {{"components", d_.G},
                    {"data_dim", d_.p},
                    {"points_per_agent", d_.m},
                    {"own_weight", g.own_weight},
                    {"separation", g.separation},
                    {"em_step", task_.hyper.em_step},
                    {"batch", task_.hyper.batch},
                    {"inner_iters", task_.hyper.inner_iters},
                    {"quantizer", config::QuantizerName(q.kind)},
                    {"levels", q.levels},
                    {"elias_gamma", q.elias_gamma},
                    {"bits", q.bits},
                    {"clip", q.clip},
                    {"omega", compression::Omega(q, d_.dim)},
                    {"alpha", compression::ControlVariateStep(q, d_.dim)},
                    {"initial_iterate", "uniform weights, means 0.5 * true + 0.5; Shat_0 = (pi, pi mu)"},
                    {"payload", "uplink: encoded bytes of Q(Delta_c) (bits = 8 * bytes), plus V_{0,c} as float32 in "
                                "round 0; downlink: Shat_k and T(Shat_k) as float64 to each agent that needs them"}};
    if (task_.secagg.enabled)
      out.settings["secure_aggregation"] = SecAggJson(task_.secagg, d_.n, q.bits);
  }

  double initial_error() const override { return HSquared(inst_.initial_iterate().data()); }
  double error(const protocol::ServerCore& core) const override { return HSquared(core.statistic()); }

  void round_finished(size_t a, uint32_t run, uint32_t round, const protocol::ServerCore& core) override {
    std::vector<double>& dist = dist_[a][run];
    if (dist.empty()) {
      std::vector<double> theta0(d_.dim);
      problems::GmmMStep(inst_.initial_iterate().data(), d_.G, d_.p, theta0.data());
      dist.push_back(SquaredDistance(theta0.data(), theta_star_));
    }
    if (round == protocol::kInitRound) return;
    dist.push_back(SquaredDistance(core.model(), theta_star_));
  }

  void algorithm_finished(size_t a, AlgorithmResult& res) override {
    double mean = 0;
    for (auto& [run, dist] : dist_[a]) mean += dist.back() / static_cast<double>(dist_[a].size());
    res.extra["final_param_distance_sq_mean"] = mean;
    res.extra["param_distance_metric"] = "||T(Shat_k) - theta_EM||^2 (exact EM fixed point)";
    res.extra["sample_evaluations_per_run"] = res.agent_steps / std::max<uint64_t>(1, task_.runs);
    if (dist_[a].count(0)) res.extra["param_distance_sq_run0"] = dist_[a][0];
  }

  double work_per_sample() const override { return d_.m; }
  double min_parallel_work() const override { return 0; }

 private:
  // mean_c sbar_c(theta), summed in agent order (deterministic for any thread count).
  void MeanStat(const double* theta, double* out) const {
    std::vector<double> per_agent(static_cast<size_t>(d_.n) * d_.dim, 0.0);
    auto work = [&](size_t b, size_t e) {
      for (size_t c = b; c < e; ++c) inst_.locals()[c].gmm->mean_stat(theta, per_agent.data() + c * d_.dim);
    };
    if (pool_ != nullptr) pool_->parallel_for(d_.n, work);
    else work(0, d_.n);
    for (int k = 0; k < d_.dim; ++k) out[k] = 0;
    for (uint32_t c = 0; c < d_.n; ++c)
      for (int k = 0; k < d_.dim; ++k) out[k] += per_agent[static_cast<size_t>(c) * d_.dim + k] / d_.n;
  }
  // ||h(s)||^2.
  double HSquared(const double* s) const {
    std::vector<double> theta(d_.dim), mean(d_.dim);
    problems::GmmMStep(s, d_.G, d_.p, theta.data());
    MeanStat(theta.data(), mean.data());
    double h = 0;
    for (int k = 0; k < d_.dim; ++k) h += (mean[k] - s[k]) * (mean[k] - s[k]);
    return h;
  }

  const config::Task& task_;
  const problems::Instance& inst_;
  const problems::GmmData& d_;
  WorkerPool* pool_;
  std::vector<double> s_star_;
  Eigen::VectorXd theta_star_;
  long iters_ = 0;
  double last_step_ = 0;
  std::map<size_t, std::map<uint32_t, std::vector<double>>> dist_;
};

}  // namespace

Result<std::unique_ptr<Evaluation>> MakeEmEvaluation(const config::Task& task, const problems::Instance& instance,
                                                     WorkerPool* pool) {
  auto e = std::make_unique<EmEvaluation>(task, instance, pool);
  e->prepare();
  return std::unique_ptr<Evaluation>(std::move(e));
}

}  // namespace fedrt::report
