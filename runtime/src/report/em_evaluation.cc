// Evaluation of the federated EM family (docs/algorithms.md 1.5, 5): error
// ||h(Shat_k)||^2 with h(s) = mean_c sbar_c(T(s)) - s, and the distance of
// T(Shat_k) to the exact EM fixed point reached from the same start. On the
// devices' shards there is no truth (no true_parameters), and a data.test
// file is scored by its mean negative log-likelihood at T(Shat_k).
#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "fedrt/compression/quantizer.h"
#include "fedrt/task/names.h"
#include "fedrt/data/shard.h"
#include "fedrt/problems/gmm_oracle.h"
#include "fedrt/protocol/messages.h"
#include "fedrt/report/family_evaluations.h"
#include "fedrt/report/settings_json.h"
#include "fedrt/core/worker_pool.h"

namespace fedrt::report {

namespace {

class EmEvaluation : public Evaluation {
 public:
  EmEvaluation(const task::Task& t, const problems::DataFiles& f, const problems::Instance& i, WorkerPool* pool)
      : task_(t), files_(f), inst_(i), d_(*i.gmm()), pool_(pool), own_(t.problem.own_data),
        blind_(own_ && d_.total_points() == 0) {}

  // data.test: its points (no label), scored by their mean NLL at T(Shat_k).
  Status load_test() {
    if (files_.test.empty()) return Status::Ok();
    const std::string& path = files_.test;
    const bool csv = path.size() >= 4 && path.compare(path.size() - 4, 4, ".csv") == 0;
    auto s = data::ReadShard(csv ? data::ShardFormat::kCsv : files_.shards.format, path, files_.shards.label,
                             data::LabelKind::kNone);
    if (!s.ok()) return Status(s.status().code(), fmt::format("data.test: {}", s.status().message()));
    if (static_cast<int>(s->dim) != d_.p)
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("data.test: '{}' has {} columns, the mixture's points p = {}", path, s->dim, d_.p));
    test_points_ = std::move(s->x);
    auto o = problems::GmmOracle<double>::create(test_points_.data(), static_cast<uint32_t>(s->count()), d_.G, d_.p);
    if (!o.ok()) return o.status();
    test_ = *o;
    return Status::Ok();
  }

  // The exact EM fixed point from the same start: s <- mean_c sbar_c(T(s)).
  void prepare() {
    if (blind_) return;  // no points at the coordinator
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
    if (own_) return describe_own(out);
    const task::GmmSpec& g = task_.problem.gmm;
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
                    {"quantizer", task::QuantizerName(q.kind)},
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

  double initial_error() const override { return blind_ ? kNaN : HSquared(inst_.initial_iterate().data()); }
  double error(const protocol::ServerCore& core) const override { return blind_ ? kNaN : HSquared(core.statistic()); }

  void round_finished(size_t a, uint32_t run, uint32_t round, const protocol::ServerCore& core) override {
    if (test_.points() > 0 && round != protocol::kInitRound) {  // row round + 1; row 0 is theta_0
      std::vector<double>& row = test_rows_[a][run];
      if (row.empty()) row.assign(task_.rounds + 1, kNaN);
      if (round < task_.rounds) row[round + 1] = test_.nll(core.model());
    }
    if (blind_) return;
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
    res.extra["sample_evaluations_per_run"] = res.agent_steps / std::max<uint64_t>(1, task_.runs);
    if (test_.points() > 0) {  // test_accuracy does not apply to a mixture: NaN
      std::vector<double> theta0(d_.dim);
      problems::GmmMStep(inst_.initial_iterate().data(), d_.G, d_.p, theta0.data());
      const double first = test_.nll(theta0.data());
      for (uint32_t run = 0; run < task_.runs; ++run) {
        std::vector<double> row(task_.rounds + 1, kNaN);
        if (test_rows_.count(a) && test_rows_[a].count(run)) row = test_rows_[a][run];
        row[0] = first;
        res.test_loss.push_back(row);
        res.test_accuracy.push_back(std::vector<double>(row.size(), kNaN));
      }
      res.extra["test_points"] = test_.points();
    }
    if (blind_) return;
    double mean = 0;
    for (auto& [run, dist] : dist_[a]) mean += dist.back() / static_cast<double>(dist_[a].size());
    res.extra["final_param_distance_sq_mean"] = mean;
    res.extra["param_distance_metric"] = "||T(Shat_k) - theta_EM||^2 (exact EM fixed point)";
    if (dist_[a].count(0)) res.extra["param_distance_sq_run0"] = dist_[a][0];
  }

  double work_per_sample() const override {
    return d_.m > 0 ? d_.m : static_cast<double>(d_.total_points()) / std::max<uint32_t>(1, d_.n);
  }
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

  // The mixture on the devices' shards: no true parameters (docs/data.md).
  void describe_own(SimResult& out) const {
    out.error_metric = blind_ ? "none (the coordinator does not read the shards: no h(Shat_k); see train_loss)"
                              : "||h(Shat_k)||^2";
    out.error_label = blind_ ? "error (not available without the shards)" : "‖h(Ŝ_k)‖²";
    out.problem.agents = static_cast<int>(d_.n);
    out.problem.dim = d_.dim;
    out.problem.theta_star = theta_star_;
    out.problem.description =
        blind_ ? fmt::format("Gaussian mixture on the devices' shards '{}' (not read by the coordinator), G={}, p={}",
                             files_.shards.train, d_.G, d_.p)
               : fmt::format("Gaussian mixture on the devices' shards '{}', G={}, p={}, {} points", files_.shards.train,
                             d_.G, d_.p, d_.total_points());
    out.problem.extra = {{"parameter_layout", "pi_1..pi_G, mu_1 (p), ..., mu_G (p)"}};
    if (!blind_)
      out.problem.extra.update({{"em_fixed_point_statistics", s_star_},
                                {"em_fixed_point_iterations", iters_},
                                {"em_fixed_point_last_step_sq", last_step_},
                                {"points_per_agent", d_.counts}});
    const auto& q = task_.compression.quantizer;
    out.settings = {{"components", d_.G},
                    {"data_dim", d_.p},
                    {"train", files_.shards.train},
                    {"coordinator_reads_shards", !blind_},
                    {"em_step", task_.hyper.em_step},
                    {"batch", task_.hyper.batch},
                    {"inner_iters", task_.hyper.inner_iters},
                    {"quantizer", task::QuantizerName(q.kind)},
                    {"levels", q.levels},
                    {"elias_gamma", q.elias_gamma},
                    {"bits", q.bits},
                    {"clip", q.clip},
                    {"omega", compression::Omega(q, d_.dim)},
                    {"alpha", compression::ControlVariateStep(q, d_.dim)},
                    {"train_loss", "mean negative log-likelihood per point of each member's shard at T(Shat_k), "
                                   "averaged over the members with equal weight (local_loss: at T(S_{k,c}))"},
                    {"initial_iterate", files_.initial.empty()
                                            ? fmt::format("uniform weights, means by k-means++ seeding over the pooled "
                                                          "points (problem seed {}); Shat_0 = (pi, pi mu)",
                                                          task_.problem.seed)
                                            : std::string("uniform weights, means from model.init; Shat_0 = (pi, pi mu)")},
                    {"payload", "uplink: encoded bytes of Q(Delta_c) (bits = 8 * bytes), plus V_{0,c} as float32 in "
                                "round 0; downlink: Shat_k and T(Shat_k) as float64 to each agent that needs them"}};
    if (!files_.test.empty()) out.settings["test"] = files_.test;
    if (task_.secagg.enabled) out.settings["secure_aggregation"] = SecAggJson(task_.secagg, d_.n, q.bits);
  }

  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  const task::Task& task_;
  problems::DataFiles files_;
  const problems::Instance& inst_;
  const problems::GmmData& d_;
  WorkerPool* pool_;
  bool own_, blind_;
  std::vector<double> test_points_;
  problems::GmmOracle<double> test_;
  std::map<size_t, std::map<uint32_t, std::vector<double>>> test_rows_;
  std::vector<double> s_star_;
  Eigen::VectorXd theta_star_;
  long iters_ = 0;
  double last_step_ = 0;
  std::map<size_t, std::map<uint32_t, std::vector<double>>> dist_;
};

}  // namespace

Result<std::unique_ptr<Evaluation>> MakeEmEvaluation(const task::Task& task, const problems::DataFiles& files,
                                                     const problems::Instance& instance, WorkerPool* pool) {
  auto e = std::make_unique<EmEvaluation>(task, files, instance, pool);
  FEDRT_TRY(e->load_test());
  e->prepare();
  return std::unique_ptr<Evaluation>(std::move(e));
}

}  // namespace fedrt::report
