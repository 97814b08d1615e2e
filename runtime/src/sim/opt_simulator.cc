#include "fedrt/sim/opt_simulator.h"

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "fedrt/algorithms/fedopt.h"
#include "fedrt/algorithms/richardson_romberg.h"
#include "fedrt/analysis/fedlsa_bias.h"
#include "fedrt/analysis/fedopt_theory.h"
#include "fedrt/core/arena.h"
#include "fedrt/problems/least_squares.h"
#include "fedrt/problems/logistic.h"
#include "fedrt/config/names.h"
#include "fedrt/sim/session_driver.h"
#include "fedrt/sim/task_builder.h"
#include "fedrt/sim/worker_pool.h"
#include "compressed_link.h"
#include "fedrt/secagg/integer_uplink.h"

namespace fedrt::sim {

using algorithms::FedOptAlgorithm;

namespace {

constexpr double kMinParallelWork = 1u << 16;  // flops below which a round runs inline

std::vector<double> ToVec(const Eigen::VectorXd& v) { return std::vector<double>(v.data(), v.data() + v.size()); }

double SquaredError(const double* x, const Eigen::VectorXd& star) {
  double e = 0.0;
  for (int i = 0; i < star.size(); ++i) e += (x[i] - star[i]) * (x[i] - star[i]);
  return e;
}

struct AlgSpec {
  std::string name;
  FedOptAlgorithm base;
  bool rr = false;
};

// Runs algorithm `alg_index` of the task (one chain, or the gamma / 2 gamma
// chains of Fed-RR) for every run through the round protocol
// (sim/session_driver.h); the reported iterate is x_t, or x_RR for Fed-RR.
Status RunChains(const ExperimentConfig& cfg, const config::Task& task, size_t alg_index,
                 const std::vector<protocol::LocalProblem<double>>& agents, double work_per_step,
                 const Eigen::VectorXd& x_star, const Eigen::VectorXd& x0, WorkerPool& pool, const SimOptions& opt,
                 AlgorithmResult& res, std::vector<Eigen::VectorXd>& pr_gamma, std::vector<Eigen::VectorXd>& pr_2gamma) {
  const int d = static_cast<int>(x_star.size());
  const long T = cfg.rounds;
  uint64_t secagg_failed = 0;
  for (long run = 0; run < cfg.runs; ++run) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<double> err(T + 1);
    std::vector<uint32_t> members(T + 1, 0);
    std::vector<uint64_t> up(T + 1, 0), down(T + 1, 0);
    std::vector<Eigen::VectorXd> history;
    err[0] = SquaredError(x0.data(), x_star);  // x_RR = 2 x0 - x0
    if (opt.keep_theta_history) history.push_back(x0);
    DriverOptions o;
    o.task = &task;
    o.algorithm = static_cast<uint32_t>(alg_index);
    o.run = static_cast<uint32_t>(run);
    o.agents = &agents;
    o.initial.assign(x0.data(), x0.data() + d);
    o.pool = &pool;
    o.min_parallel_work = kMinParallelWork;
    o.work_per_sample = work_per_step;
    SessionDriver driver;
    Status st = driver.run(o, [&](const DriverRound& r) -> Status {
      const uint32_t t = r.round;
      const double* report = r.server->core().model();
      err[t + 1] = SquaredError(report, x_star);
      members[t + 1] = static_cast<uint32_t>(r.commit->members.size());
      up[t + 1] = r.commit->bits_up;
      down[t + 1] = r.commit->bits_down;
      res.agent_steps += r.samples;
      if (!r.commit->failure.empty() && secagg_failed++ == 0) res.extra["secagg_first_failure"] = r.commit->failure;
      if (opt.keep_theta_history) history.push_back(Eigen::Map<const Eigen::VectorXd>(report, d));
      if (opt.on_round) opt.on_round(RoundEvent{alg_index, res.name, run, static_cast<long>(t) + 1, err[t + 1]});
      return Status::Ok();
    });
    if (!st.ok()) return st;
    const protocol::ServerCore& core = driver.server().core();
    res.wall_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    res.error.push_back(std::move(err));
    res.agents.push_back(std::move(members));
    res.bits_up.push_back(std::move(up));
    res.bits_down.push_back(std::move(down));
    res.final_theta.push_back(Eigen::Map<const Eigen::VectorXd>(core.model(), d));
    if (cfg.secagg.enabled) res.extra["secagg_failed_rounds"] = secagg_failed;
    pr_gamma.push_back(Eigen::Map<const Eigen::VectorXd>(core.average_gamma(), d));
    pr_2gamma.push_back(Eigen::Map<const Eigen::VectorXd>(core.average_2gamma(), d));
    if (opt.keep_theta_history) res.theta_history.push_back(std::move(history));
  }
  return Status::Ok();
}

double MeanOf(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0.0 : s / static_cast<double>(v.size());
}

}  // namespace

Result<problems::FedDataset> BuildFedData(const ExperimentConfig& cfg) {
  const problems::FedLoss loss =
      cfg.problem == ProblemKind::kLogistic ? problems::FedLoss::kLogistic : problems::FedLoss::kLeastSquares;
  if (!cfg.opt.data.empty()) {
    auto data = problems::LoadFedDataCsv(loss, cfg.opt.data);
    if (!data.ok()) return data.status();
    if (cfg.agents_set && cfg.garnet.agents != data->agents())
      return Status(StatusCode::kInvalidArgument, fmt::format("--agents {} does not match the {} agents in '{}'",
                                                              cfg.garnet.agents, data->agents(), cfg.opt.data));
    return data;
  }
  problems::FedDataConfig g;
  g.agents = cfg.garnet.agents;
  g.dim = cfg.garnet.dim;
  g.samples = cfg.opt.samples;
  g.covariate_shift = cfg.opt.covariate_shift;
  g.concept_shift = cfg.opt.concept_shift;
  g.quantity_skew = cfg.opt.quantity_skew;
  g.noise = cfg.opt.noise;
  g.seed = cfg.effective_problem_seed();
  return problems::GenerateFedData(loss, g);
}

Result<SimResult> RunOptExperiment(const ExperimentConfig& cfg, const SimOptions& opt) {
  auto task_r = MakeTask(cfg);
  if (!task_r.ok()) return task_r.status();
  config::Task task = *task_r;
  std::vector<AlgSpec> specs;
  for (uint32_t a = 0; a < task.num_algorithms; ++a) {
    AlgSpec s;
    s.name = config::AlgorithmName(task.algorithms[a]);
    s.base = static_cast<FedOptAlgorithm>(static_cast<unsigned>(task.algorithms[a].kind) -
                                          static_cast<unsigned>(config::AlgorithmKind::kFedAvg));
    s.rr = task.algorithms[a].rr;
    specs.push_back(s);
  }
  const bool lsq = cfg.problem == ProblemKind::kLsq;
  for (const AlgSpec& s : specs)
    if (s.base == FedOptAlgorithm::kFedProxExact && !lsq)
      return Status(StatusCode::kInvalidArgument,
                    std::string("fedprox-exact needs least squares (--problem lsq): logistic has no closed-form prox"));
  auto data_r = BuildFedData(cfg);
  if (!data_r.ok()) return data_r.status();
  const problems::FedDataset& data = *data_r;
  auto x_star_r = problems::ExactSolution(data, cfg.opt.l2);
  if (!x_star_r.ok()) return x_star_r.status();
  const Eigen::VectorXd x_star = *x_star_r;
  const int d = data.dim;
  const int n = data.agents();

  SimResult out;
  out.config = cfg;
  out.error_metric = "||x_t - x_star||^2";
  out.error_label = "‖x_t − x*‖²";
  out.problem.agents = n;
  out.problem.dim = d;
  out.problem.theta_star = x_star;
  const long total = data.total_samples();
  long n_min = data.x[0].rows(), n_max = n_min;
  for (const auto& m : data.x) {
    n_min = std::min<long>(n_min, m.rows());
    n_max = std::max<long>(n_max, m.rows());
  }
  const std::string loss_name = lsq ? "least squares" : fmt::format("logistic regression (l2={})", cfg.opt.l2);
  out.problem.description =
      data.source == "synthetic"
          ? fmt::format("federated {}, synthetic: covariate shift {}, concept shift {}, quantity skew {}, d={}, "
                        "n_c in [{}, {}]",
                        loss_name, cfg.opt.covariate_shift, cfg.opt.concept_shift, cfg.opt.quantity_skew, d, n_min,
                        n_max)
          : fmt::format("federated {} from '{}', d={}, n_c in [{}, {}]", loss_name, data.source, d, n_min, n_max);
  const analysis::Heterogeneity het = analysis::HeterogeneityAt(data, cfg.opt.l2, x_star);
  nlohmann::json& px = out.problem.extra;
  px["x_star"] = ToVec(x_star);
  px["zeta1"] = het.zeta1;
  px["zeta2"] = het.zeta2;
  {  // L_max = max_c lambda_max(hess f_c) (logistic: upper bound X_c^T X_c / (4 n_c) + l2); stable steps need eta L_max < 2
    double l_max = 0;
    for (int c = 0; c < n; ++c) {
      const Eigen::MatrixXd g = data.x[c].transpose() * data.x[c] / static_cast<double>(data.x[c].rows());
      Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(g, Eigen::EigenvaluesOnly);
      l_max = std::max(l_max, lsq ? es.eigenvalues().maxCoeff() : 0.25 * es.eigenvalues().maxCoeff() + cfg.opt.l2);
    }
    px["smoothness_max"] = l_max;
    px["step_times_smoothness_max"] = cfg.step * l_max;
  }
  px["samples_total"] = total;
  px["samples_min"] = n_min;
  px["samples_max"] = n_max;
  if (data.theta_true) {
    px["theta_true"] = ToVec(*data.theta_true);
    px["x_star_statistical_error_sq"] = (x_star - *data.theta_true).squaredNorm();
  }
  out.settings = {{"batch", cfg.opt.batch},
                  {"gradients", cfg.opt.batch == 0 ? "full" : fmt::format("mini-batch of {} (with replacement)", cfg.opt.batch)},
                  {"prox_mu", cfg.opt.prox_mu},
                  {"server_step", cfg.opt.server_step},
                  {"rr_burn_in", cfg.opt.burn_in.value_or(cfg.rounds / 2)},
                  {"l2", cfg.opt.l2},
                  {"aggregation", "uniform mean over the agents that reported (x_star minimises (1/N) sum_c f_c)"},
                  {"payload", "raw float64: d values per message (2d for Scaffold), framing not counted"},
                  {"initial_iterate", "x_0 = 0"}};
  if (cfg.compression.enabled()) {
    out.settings["payload"] =
        "encoded bytes of the compressed update (dx, and dc for Scaffold, one vector; bits = 8 * bytes)";
    out.settings["compression"] = CompressionSettingsJson(cfg.compression, d);
    out.settings["compression"]["omega_note"] =
        "omega and alpha for a d-vector; Scaffold compresses 2d scalars (see each algorithm's compression_omega)";
    if (cfg.compression.downlink)
      out.settings["compression"]["downlink_model"] =
          "agents use xhat <- xhat + Q(broadcast - xhat); the server keeps its own x_t (and c)";
  }
  if (cfg.secagg.enabled)
    out.settings["secure_aggregation"] = secagg::IntegerUplink::Describe(
        cfg.secagg, static_cast<uint32_t>(data.agents()), cfg.compression.quantizer.bits);
  if (data.source == "synthetic")
    out.settings.update({{"heterogeneity", fmt::format("covariate {}, concept {}, quantity {}", cfg.opt.covariate_shift,
                                                       cfg.opt.concept_shift, cfg.opt.quantity_skew)},
                         {"covariate_shift", cfg.opt.covariate_shift},
                         {"concept_shift", cfg.opt.concept_shift},
                         {"quantity_skew", cfg.opt.quantity_skew},
                         {"samples", cfg.opt.samples},
                         {"noise", cfg.opt.noise}});
  else
    out.settings["data"] = data.source;

  // Closed-form theory for least squares (ALGORITHMS.md 6).
  std::optional<problems::LsaSystem> lsa;
  std::optional<Eigen::VectorXd> fedavg_point, fedprox_point;
  if (lsq) {
    auto s = problems::LeastSquaresSystem(data);
    if (!s.ok()) return s.status();
    lsa = *s;
    auto fa = analysis::FedAvgFixedPoint(*lsa, cfg.step, cfg.local_steps);
    if (fa.ok()) fedavg_point = *fa;
    auto fp = analysis::FedProxFixedPoint(*lsa, cfg.opt.prox_mu);
    if (fp.ok()) fedprox_point = *fp;
    auto put = [&](const char* key, const std::optional<Eigen::VectorXd>& p) {
      if (!p) return;
      px[std::string(key)] = ToVec(*p);
      px[std::string(key) + "_rel_diff_from_x_star"] = (*p - x_star).norm() / x_star.norm();
      if (data.theta_true) px[std::string(key) + "_statistical_error_sq"] = (*p - *data.theta_true).squaredNorm();
    };
    put("fedavg_fixed_point", fedavg_point);
    put("fedprox_exact_fixed_point", fedprox_point);
  }

  // Oracles over the data (the data matrices are row-major and contiguous).
  std::vector<uint8_t> oracle_mem(n * (sizeof(double) * (2 * d * d + d) + 4 * Arena::kAlignment) + 4096);
  Arena oracle_arena(oracle_mem.data(), oracle_mem.size());
  std::vector<problems::LeastSquaresOracle<double>> lsq_oracles;
  std::vector<problems::LogisticOracle<double>> log_oracles;
  for (int c = 0; c < n; ++c) {
    const uint32_t nc = static_cast<uint32_t>(data.x[c].rows());
    if (lsq) {
      auto o = problems::LeastSquaresOracle<double>::create(oracle_arena, d, nc, data.x[c].data(), data.y[c].data(),
                                                            cfg.opt.prox_mu);
      if (!o.ok()) return Status(o.status().code(), fmt::format("agent {}: {}", c, o.status().message()));
      lsq_oracles.push_back(*o);
    } else {
      auto o = problems::LogisticOracle<double>::create(oracle_arena, d, nc, data.x[c].data(), data.y[c].data(),
                                                        cfg.opt.l2);
      if (!o.ok()) return Status(o.status().code(), fmt::format("agent {}: {}", c, o.status().message()));
      log_oracles.push_back(*o);
    }
  }
  // Flops of one local step (for the inline-vs-threads decision only).
  const double work_per_step =
      cfg.opt.batch > 0 ? static_cast<double>(cfg.opt.batch) * d
                        : (lsq ? static_cast<double>(d) * d : static_cast<double>(total) / n * d);

  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  WorkerPool pool(cfg.threads > 0 ? cfg.threads : static_cast<int>(hw));
  out.threads = pool.threads();
  const Eigen::VectorXd x0 = Eigen::VectorXd::Zero(d);
  std::optional<analysis::FedLsaBias> fedavg_bias;
  if (lsq) fedavg_bias = analysis::PredictFedLsaBias(*lsa, cfg.step, cfg.local_steps, cfg.rounds);

  task.problem.agents = static_cast<uint32_t>(n);
  task.problem.dim = static_cast<uint32_t>(d);
  std::vector<protocol::LocalProblem<double>> agents(static_cast<size_t>(n));
  for (int c = 0; c < n; ++c) {
    if (lsq) agents[c].least_squares = &lsq_oracles[c];
    else agents[c].logistic = &log_oracles[c];
  }
  for (size_t a = 0; a < specs.size(); ++a) {
    const AlgSpec& spec = specs[a];
    AlgorithmResult res;
    res.name = spec.name;
    std::vector<Eigen::VectorXd> pr_gamma, pr_2gamma;
    const Status st = RunChains(cfg, task, a, agents, work_per_step, x_star, x0, pool, opt, res, pr_gamma, pr_2gamma);
    if (!st.ok()) return Status(st.code(), fmt::format("{}: {}", res.name, st.message()));

    // Distances to x_star (not squared) of the final iterate and of the Polyak-Ruppert averages.
    std::vector<double> final_dist, pr_dist, pr2_dist, stat_err;
    for (size_t r = 0; r < res.final_theta.size(); ++r) {
      final_dist.push_back((res.final_theta[r] - x_star).norm());
      pr_dist.push_back((pr_gamma[r] - x_star).norm());
      pr2_dist.push_back((pr_2gamma[r] - x_star).norm());
      if (data.theta_true) stat_err.push_back((res.final_theta[r] - *data.theta_true).squaredNorm());
    }
    nlohmann::json& e = res.extra;
    e["final_dist_mean"] = MeanOf(final_dist);
    if (cfg.compression.enabled()) {
      const int udim = algorithms::FedOptUpdateDim(spec.base, d);
      e["compression_vector_length"] = udim;
      e["compression_omega"] = compression::Omega(cfg.compression.quantizer, udim);
      e["compression_alpha"] =
          cfg.compression.control_variates ? compression::ControlVariateStep(cfg.compression.quantizer, udim) : 0.0;
    }
    if (spec.rr) {
      e["rr_dist_per_run"] = final_dist;
      e["pr_gamma_dist_per_run"] = pr_dist;
      e["pr_2gamma_dist_per_run"] = pr2_dist;
      e["pr_gamma_dist_mean"] = MeanOf(pr_dist);
      e["pr_2gamma_dist_mean"] = MeanOf(pr2_dist);
      e["rr_gain"] = MeanOf(final_dist) > 0 ? MeanOf(pr_dist) / MeanOf(final_dist) : 0.0;
      e["plot_lines"] = {{{"label", "||xbar_gamma - x*||² (FedAvg Polyak-Ruppert average)"},
                          {"value", MeanOf(pr_dist) * MeanOf(pr_dist)}}};
      e["note"] = "error is ||x_RR - x_star||^2, x_RR = 2 xbar_gamma - xbar_2gamma (Polyak-Ruppert averages after the burn-in)";
    } else {
      e["pr_average_dist_per_run"] = pr_dist;
      e["pr_average_dist_mean"] = MeanOf(pr_dist);
      if (cfg.opt.batch > 0)  // stochastic: the averaged iterate is the fair comparison with Fed-RR
        e["plot_lines"] = {{{"label", "Polyak-Ruppert average, ||xbar - x*||²"},
                            {"value", MeanOf(pr_dist) * MeanOf(pr_dist)}}};
    }
    if (!stat_err.empty()) e["statistical_error_sq_mean"] = MeanOf(stat_err);

    // Predicted plateaus (full participation, eta_g = 1): the dashed lines of the plot.
    const bool exact_theory = cfg.participation >= 1.0 && cfg.opt.server_step == 1.0 && !spec.rr;
    if (exact_theory && spec.base == FedOptAlgorithm::kScaffold) {
      res.predicted_bias_sq = 0.0;  // control variates remove the heterogeneity bias
      res.predicted_bias_sq_stationary = 0.0;
    } else if (exact_theory && lsq && spec.base == FedOptAlgorithm::kFedAvg) {
      res.predicted_bias_sq = fedavg_bias->after_rounds.squaredNorm();
      res.predicted_bias_sq_stationary = fedavg_bias->stationary.squaredNorm();
      if (fedavg_point) {
        e["fixed_point_dist_sq"] = (*fedavg_point - x_star).squaredNorm();
        e["final_rel_diff_from_fixed_point"] = (res.final_theta[0] - *fedavg_point).norm() / fedavg_point->norm();
      }
    } else if (exact_theory && lsq && spec.base == FedOptAlgorithm::kFedProxExact && fedprox_point) {
      res.predicted_bias_sq = (*fedprox_point - x_star).squaredNorm();
      res.predicted_bias_sq_stationary = res.predicted_bias_sq;
      e["fixed_point_dist_sq"] = *res.predicted_bias_sq;
      e["final_rel_diff_from_fixed_point"] = (res.final_theta[0] - *fedprox_point).norm() / fedprox_point->norm();
    }
    out.algorithms.push_back(std::move(res));
  }
  return out;
}

}  // namespace fedrt::sim
