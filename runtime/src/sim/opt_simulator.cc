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
#include "fedrt/sim/worker_pool.h"
#include "compressed_link.h"
#include "fedrt/secagg/integer_uplink.h"

namespace fedrt::sim {

using algorithms::FedOptAlgorithm;
using algorithms::FedOptClient;
using algorithms::FedOptHyper;
using algorithms::FedOptServer;
using algorithms::IsSampled;
using algorithms::RichardsonRomberg;
using algorithms::RoundPlan;

namespace {

constexpr uint64_t kBitsPerScalar = 64;
constexpr uint64_t kMinParallelWork = 1u << 16;  // flops below which a round runs inline
constexpr const char* kRrSuffix = "-rr";

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

Result<AlgSpec> ParseOptAlgorithm(const std::string& name) {
  AlgSpec s;
  s.name = name;
  std::string base = name;
  if (base.size() > 3 && base.compare(base.size() - 3, 3, kRrSuffix) == 0) {
    s.rr = true;
    base.resize(base.size() - 3);
  }
  for (FedOptAlgorithm a : {FedOptAlgorithm::kFedAvg, FedOptAlgorithm::kScaffold, FedOptAlgorithm::kFedProx,
                            FedOptAlgorithm::kFedProxExact}) {
    if (base == algorithms::FedOptAlgorithmName(a)) {
      s.base = a;
      return s;
    }
  }
  return Status(StatusCode::kInvalidArgument, fmt::format("unknown algorithm '{}' for federated optimisation", name));
}

// Runs one algorithm (one chain, or the gamma / 2 gamma chains of Fed-RR) for every run.
// Compression (ALGORITHMS.md 4), per chain: agent c sends the codec bytes of
// Q(u_c - V_c), u_c = update() (dx, and dc for Scaffold, one vector of
// update_dim() scalars); the server decodes u_hat_c = V_c + m and averages
// u_hat_c; the agent keeps u_hat_c too (Scaffold: c_c = c_c^prev + dc_hat).
// Optional downlink: the agents' model xhat (x_t, and c for Scaffold) follows
// xhat <- xhat + Q(broadcast_{t+1} - xhat); the server keeps its own x_t.
template <class Oracle>
Status RunChains(const ExperimentConfig& cfg, size_t alg_index, const AlgSpec& spec, const std::vector<Oracle>& oracles,
               double work_per_step, const Eigen::VectorXd& x_star, const Eigen::VectorXd& x0, WorkerPool& pool,
               const SimOptions& opt, AlgorithmResult& res, std::vector<Eigen::VectorXd>& pr_gamma,
               std::vector<Eigen::VectorXd>& pr_2gamma) {
  const int d = static_cast<int>(x_star.size());
  const uint32_t n = static_cast<uint32_t>(oracles.size());
  const long T = cfg.rounds;
  const int chains = spec.rr ? 2 : 1;
  const uint32_t burn_in = static_cast<uint32_t>(cfg.opt.burn_in.value_or(T / 2));
  FedOptHyper<double> hyper[2];
  for (int k = 0; k < chains; ++k) {
    hyper[k].algorithm = spec.base;
    hyper[k].step_size = cfg.step * (k == 0 ? 1.0 : 2.0);  // gamma, 2 gamma
    hyper[k].local_steps = static_cast<uint32_t>(cfg.local_steps);
    hyper[k].batch = static_cast<uint32_t>(cfg.opt.batch);
    hyper[k].prox_mu = cfg.opt.prox_mu;
    hyper[k].server_step = cfg.opt.server_step;
  }
  std::vector<uint8_t> client_mem(FedOptClient<double>::ArenaBytes(d) * n * chains + 4096);
  std::vector<uint8_t> server_mem(2 * FedOptServer<double>::ArenaBytes(d) + sizeof(double) * 3 * d + 4096);
  std::vector<FedOptClient<double>> clients[2];
  std::vector<uint32_t> sampled;
  sampled.reserve(n);
  const int udim = algorithms::FedOptUpdateDim(spec.base, d);  // == broadcast dim
  CompressedLinks links[2];
  std::vector<double> xhat[2], sent[2], recon(udim), zeros(udim, 0.0);
  std::vector<Status> link_errors[2];
  // Shared-scale rounding: the server sums the agents' b-bit integers (plain, or
  // secure aggregation) and dequantizes once (fedrt/secagg/integer_uplink.h).
  const bool int_uplink =
      cfg.compression.enabled() && secagg::IntegerUplink::Applies(cfg.compression.quantizer,
                                                                  cfg.compression.control_variates, cfg.participation);
  secagg::IntegerUplink uplink[2];
  uint64_t secagg_failed = 0;

  for (long run = 0; run < cfg.runs; ++run) {
    const auto t0 = std::chrono::steady_clock::now();
    Arena client_arena(client_mem.data(), client_mem.size());
    Arena server_arena(server_mem.data(), server_mem.size());
    FedOptServer<double> server[2];
    for (int k = 0; k < chains; ++k) {
      clients[k].assign(n, FedOptClient<double>());
      for (uint32_t c = 0; c < n; ++c) clients[k][c] = *FedOptClient<double>::create(client_arena, d, hyper[k]);
      server[k] = *FedOptServer<double>::create(server_arena, d, hyper[k], x0.data(), n);
      FEDRT_TRY(links[k].init(static_cast<int>(n), udim, cfg.compression));
      if (int_uplink)
        FEDRT_TRY(uplink[k].init(static_cast<int>(n), udim, cfg.compression.quantizer, cfg.compression.control_variates,
                                 cfg.secagg));
      xhat[k].assign(server[k].broadcast(), server[k].broadcast() + udim);
      if (links[k].enabled()) sent[k].assign(static_cast<size_t>(n) * udim, 0.0);
      link_errors[k].assign(n, Status::Ok());
    }
    // Polyak-Ruppert averages after the burn-in (for every algorithm; Fed-RR extrapolates them).
    RichardsonRomberg<double> avg = *RichardsonRomberg<double>::create(server_arena, d, burn_in);

    std::vector<double> err(T + 1);
    std::vector<uint32_t> agents(T + 1, 0);
    std::vector<uint64_t> up(T + 1, 0), down(T + 1, 0);
    std::vector<Eigen::VectorXd> history;
    Eigen::VectorXd x_rr0 = x0;  // 2 x0 - x0
    err[0] = SquaredError(x_rr0.data(), x_star);
    if (opt.keep_theta_history) history.push_back(x0);
    const double* report = nullptr;
    for (long t = 0; t < T; ++t) {
      const uint32_t round = static_cast<uint32_t>(t);
      RoundPlan plan[2];
      for (int k = 0; k < chains; ++k) plan[k] = server[k].start_round(round);
      sampled.clear();
      for (uint32_t c = 0; c < n; ++c)
        if (IsSampled(cfg.seed, static_cast<uint64_t>(run), c, round, cfg.participation)) sampled.push_back(c);
      auto local_work = [&](size_t b, size_t e) {
        for (size_t i = b; i < e; ++i) {
          const uint32_t c = sampled[i];
          for (int k = 0; k < chains; ++k) {
            clients[k][c].begin_round(links[k].downlink() ? xhat[k].data() : server[k].broadcast(), plan[k]);
            // Both Fed-RR chains see the same samples Z (common random numbers).
            CounterRng rng(cfg.seed, static_cast<uint64_t>(run), c, round, RngStream::kLocalSteps);
            clients[k][c].run_local_steps(oracles[c], rng);
            if (links[k].enabled()) {  // the agent encodes Q(u_c - V_c), same key as the LSA family
              CounterRng crng(cfg.seed, static_cast<uint64_t>(run), c, round, RngStream::kCompression);
              double* sp = sent[k].data() + static_cast<size_t>(c) * udim;
              link_errors[k][c] = links[k].agent_send(c, clients[k][c].update(), zeros.data(), crng, sp);
              if (int_uplink && link_errors[k][c].ok())  // the same draws: the payload's integers
                link_errors[k][c] = uplink[k].agent_quantize(
                    c, clients[k][c].update(), zeros.data(),
                    CounterRng(cfg.seed, static_cast<uint64_t>(run), c, round, RngStream::kCompression));
              if (link_errors[k][c].ok()) clients[k][c].set_sent_update(sp);
            }
          }
        }
      };
      const double work = static_cast<double>(sampled.size()) * plan[0].local_steps * chains * work_per_step;
      if (work >= static_cast<double>(kMinParallelWork)) pool.parallel_for(sampled.size(), local_work);
      else local_work(0, sampled.size());
      uint32_t reporters = static_cast<uint32_t>(sampled.size());
      for (int k = 0; k < chains; ++k) {
        if (int_uplink) {
          for (uint32_t c : sampled) FEDRT_TRY(link_errors[k][c]);
          // Each Fed-RR chain is its own secure round (fresh keys: seed differs per chain).
          auto agg = uplink[k].aggregate(sampled, zeros.data(), cfg.seed ^ (static_cast<uint64_t>(k) * 0x9E3779B97F4A7C15ull),
                                         static_cast<uint64_t>(run), round, recon.data());
          if (!agg.ok()) return agg.status();
          up[t + 1] += agg->bits_up;
          down[t + 1] += agg->bits_down_extra;
          for (uint32_t i = 0; i < agg->contributors; ++i) server[k].accumulate(recon.data());  // |S| reports
          if (!agg->failure.empty() && secagg_failed++ == 0) res.extra["secagg_first_failure"] = agg->failure;
          if (k == 0) reporters = agg->contributors;
        } else if (links[k].enabled()) {
          for (uint32_t c : sampled) {  // fixed agent order
            FEDRT_TRY(link_errors[k][c]);
            auto bits = links[k].server_receive(c, zeros.data(), recon.data());
            if (!bits.ok()) return bits.status();
            up[t + 1] += *bits;
            server[k].accumulate(recon.data());
          }
        } else {
          for (uint32_t c : sampled) server[k].accumulate(clients[k][c].update());  // fixed agent order
          up[t + 1] += sampled.size() * static_cast<uint64_t>(server[k].update_dim()) * kBitsPerScalar;
        }
        server[k].finish_round();
        res.agent_steps += static_cast<uint64_t>(sampled.size()) * plan[k].local_steps;
        if (links[k].downlink()) {  // one encoded broadcast, received by each sampled agent
          auto bits = links[k].broadcast(server[k].broadcast(), xhat[k].data(), cfg.seed, static_cast<uint64_t>(run), round);
          if (!bits.ok()) return bits.status();
          down[t + 1] += sampled.size() * *bits;
        } else {
          down[t + 1] += sampled.size() * static_cast<uint64_t>(server[k].broadcast_dim()) * kBitsPerScalar;
        }
      }
      avg.observe(round + 1, server[0].global(), spec.rr ? server[1].global() : server[0].global());
      report = spec.rr ? avg.output() : server[0].global();
      err[t + 1] = SquaredError(report, x_star);
      agents[t + 1] = reporters;
      if (opt.keep_theta_history) history.push_back(Eigen::Map<const Eigen::VectorXd>(report, d));
      if (opt.on_round) opt.on_round(RoundEvent{alg_index, res.name, run, t + 1, err[t + 1]});
    }
    res.wall_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    res.error.push_back(std::move(err));
    res.agents.push_back(std::move(agents));
    res.bits_up.push_back(std::move(up));
    res.bits_down.push_back(std::move(down));
    res.final_theta.push_back(Eigen::Map<const Eigen::VectorXd>(report, d));
    if (cfg.secagg.enabled) res.extra["secagg_failed_rounds"] = secagg_failed;
    pr_gamma.push_back(Eigen::Map<const Eigen::VectorXd>(avg.average_gamma(), d));
    pr_2gamma.push_back(Eigen::Map<const Eigen::VectorXd>(avg.average_2gamma(), d));
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
  std::vector<AlgSpec> specs;
  for (const std::string& name : cfg.algorithms) {
    auto s = ParseOptAlgorithm(name);
    if (!s.ok()) return s.status();
    specs.push_back(*s);
    if (cfg.opt.rr && !s->rr) {  // --rr: each selected algorithm also runs wrapped in Fed-RR
      const std::string rr_name = name + kRrSuffix;
      if (std::find(cfg.algorithms.begin(), cfg.algorithms.end(), rr_name) == cfg.algorithms.end()) {
        AlgSpec w = *s;
        w.rr = true;
        w.name = rr_name;
        specs.push_back(w);
      }
    }
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

  for (size_t a = 0; a < specs.size(); ++a) {
    const AlgSpec& spec = specs[a];
    AlgorithmResult res;
    res.name = spec.name;
    std::vector<Eigen::VectorXd> pr_gamma, pr_2gamma;
    const Status st =
        lsq ? RunChains(cfg, a, spec, lsq_oracles, work_per_step, x_star, x0, pool, opt, res, pr_gamma, pr_2gamma)
            : RunChains(cfg, a, spec, log_oracles, work_per_step, x_star, x0, pool, opt, res, pr_gamma, pr_2gamma);
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
