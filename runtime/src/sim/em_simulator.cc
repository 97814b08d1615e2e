#include "fedrt/sim/em_simulator.h"

#include <chrono>
#include <cmath>
#include <thread>

#include <fmt/format.h>

#include "fedrt/algorithms/fedem.h"
#include "fedrt/algorithms/lsa.h"
#include "fedrt/problems/gmm_oracle.h"
#include "fedrt/sim/session_driver.h"
#include "fedrt/sim/task_builder.h"
#include "fedrt/sim/worker_pool.h"
#include "fedrt/secagg/integer_uplink.h"

namespace fedrt::sim {

using algorithms::EmAlgorithm;
using problems::GmmOracle;

namespace {

Result<EmAlgorithm> EmAlgorithmFromName(const std::string& name) {
  for (EmAlgorithm a : {EmAlgorithm::kFedEm, EmAlgorithm::kFedEmNaive, EmAlgorithm::kVrFedEm})
    if (name == algorithms::EmAlgorithmName(a)) return a;
  return Status(StatusCode::kInvalidArgument, fmt::format("unknown algorithm '{}' for federated EM", name));
}

// Box-Muller standard normal from the counter RNG.
double Normal(CounterRng& rng) {
  const double u1 = 1.0 - rng.uniform(), u2 = rng.uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

struct GmmData {
  int G = 2, p = 2, dim = 6;
  uint32_t n = 0, m = 0;
  std::vector<std::vector<double>> points;  // [agent][m * p]
  std::vector<GmmOracle<double>> oracles;
  Eigen::VectorXd true_params;  // (pi of the pooled data, true means)
};

// Agent c draws m points: component z ~ (own_weight on c mod G, the rest
// spread evenly), y = mu_z + N(0, I). True means on a circle of diameter
// `separation` in the first two coordinates (on a line when p = 1).
Result<GmmData> BuildGmm(const ExperimentConfig& cfg) {
  const GmmSettings& s = cfg.gmm;
  GmmData d;
  d.G = s.components;
  d.p = s.data_dim;
  d.dim = d.G * (1 + d.p);
  d.n = static_cast<uint32_t>(cfg.garnet.agents);
  d.m = static_cast<uint32_t>(s.points);
  d.true_params = Eigen::VectorXd::Zero(d.dim);
  for (int g = 0; g < d.G; ++g) {
    double* mu = d.true_params.data() + d.G + g * d.p;
    if (d.p == 1) {
      mu[0] = s.separation * (g - 0.5 * (d.G - 1));
    } else {
      const double a = 6.283185307179586 * g / d.G;
      mu[0] = 0.5 * s.separation * std::cos(a);
      mu[1] = 0.5 * s.separation * std::sin(a);
    }
  }
  std::vector<double> w(d.G);
  for (uint32_t c = 0; c < d.n; ++c) {
    const int own = static_cast<int>(c % d.G);
    for (int g = 0; g < d.G; ++g) w[g] = d.G == 1 ? 1.0 : (g == own ? s.own_weight : (1 - s.own_weight) / (d.G - 1));
    CounterRng rng(cfg.effective_problem_seed(), 0, c, 0, RngStream::kProblem);
    std::vector<double> pts(static_cast<size_t>(d.m) * d.p);
    for (uint32_t i = 0; i < d.m; ++i) {
      double u = rng.uniform(), acc = 0;
      int z = d.G - 1;
      for (int g = 0; g < d.G; ++g) {
        acc += w[g];
        if (u < acc) { z = g; break; }
      }
      d.true_params[z] += 1.0 / (static_cast<double>(d.m) * d.n);
      const double* mu = d.true_params.data() + d.G + z * d.p;
      for (int j = 0; j < d.p; ++j) pts[static_cast<size_t>(i) * d.p + j] = mu[j] + Normal(rng);
    }
    d.points.push_back(std::move(pts));
  }
  for (uint32_t c = 0; c < d.n; ++c) {
    auto o = GmmOracle<double>::create(d.points[c].data(), d.m, d.G, d.p);
    if (!o.ok()) return o.status();
    d.oracles.push_back(*o);
  }
  return d;
}

// mean_c sbar_c(theta), summed in agent order (deterministic for any thread count).
void MeanStat(const GmmData& d, const double* theta, WorkerPool& pool, std::vector<double>& per_agent,
              double* out) {
  per_agent.assign(static_cast<size_t>(d.n) * d.dim, 0.0);
  pool.parallel_for(d.n, [&](size_t b, size_t e) {
    for (size_t c = b; c < e; ++c) d.oracles[c].mean_stat(theta, per_agent.data() + c * d.dim);
  });
  for (int k = 0; k < d.dim; ++k) out[k] = 0;
  for (uint32_t c = 0; c < d.n; ++c)
    for (int k = 0; k < d.dim; ++k) out[k] += per_agent[static_cast<size_t>(c) * d.dim + k] / d.n;
}

// ||h(s)||^2 with h(s) = mean_c sbar_c(T(s)) - s.
double HSquared(const GmmData& d, const double* s, WorkerPool& pool, std::vector<double>& scratch) {
  std::vector<double> theta(d.dim), mean(d.dim);
  problems::GmmMStep(s, d.G, d.p, theta.data());
  MeanStat(d, theta.data(), pool, scratch, mean.data());
  double h = 0;
  for (int k = 0; k < d.dim; ++k) h += (mean[k] - s[k]) * (mean[k] - s[k]);
  return h;
}

double Dist2(const double* a, const Eigen::VectorXd& b) {
  double e = 0;
  for (int i = 0; i < b.size(); ++i) e += (a[i] - b[i]) * (a[i] - b[i]);
  return e;
}

}  // namespace

Result<SimResult> RunEmExperiment(const ExperimentConfig& cfg, const SimOptions& opt) {
  std::vector<EmAlgorithm> algs;
  for (const std::string& name : cfg.algorithms) {
    auto a = EmAlgorithmFromName(name);
    if (!a.ok()) return a.status();
    algs.push_back(*a);
  }
  auto built = BuildGmm(cfg);
  if (!built.ok()) return built.status();
  const GmmData& d = *built;
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  WorkerPool pool(cfg.threads > 0 ? cfg.threads : static_cast<int>(hw));
  std::vector<double> scratch;

  // Start: uniform weights, means pulled halfway to the origin and shifted by
  // (0.5, ..., 0.5); Shat_0 = (pi_g, pi_g mu_g) so that T(Shat_0) = theta_0.
  std::vector<double> theta0(d.dim), shat0(d.dim);
  for (int g = 0; g < d.G; ++g) {
    theta0[g] = 1.0 / d.G;
    for (int j = 0; j < d.p; ++j) theta0[d.G + g * d.p + j] = 0.5 * d.true_params[d.G + g * d.p + j] + 0.5;
  }
  for (int g = 0; g < d.G; ++g) {
    shat0[g] = theta0[g];
    for (int j = 0; j < d.p; ++j) shat0[d.G + g * d.p + j] = theta0[g] * theta0[d.G + g * d.p + j];
  }
  // The exact EM fixed point from the same start: s <- mean_c sbar_c(T(s)).
  std::vector<double> s_star = shat0, th(d.dim);
  long em_iters = 0;
  double h_star = 0;
  for (; em_iters < 100000; ++em_iters) {
    problems::GmmMStep(s_star.data(), d.G, d.p, th.data());
    std::vector<double> next(d.dim);
    MeanStat(d, th.data(), pool, scratch, next.data());
    double diff = 0;
    for (int k = 0; k < d.dim; ++k) diff += (next[k] - s_star[k]) * (next[k] - s_star[k]);
    s_star = next;
    h_star = diff;
    if (diff < 1e-30) break;
  }
  Eigen::VectorXd theta_star(d.dim);
  problems::GmmMStep(s_star.data(), d.G, d.p, theta_star.data());

  SimResult out;
  out.config = cfg;
  out.error_metric = "||h(Shat_k)||^2";
  out.error_label = "‖h(Ŝ_k)‖²";
  out.problem.agents = static_cast<int>(d.n);
  out.problem.dim = d.dim;
  out.problem.theta_star = theta_star;
  out.problem.description = fmt::format(
      "Gaussian mixture, G={} components in R^{}, {} points per agent, own-component weight {} ({})", d.G, d.p, d.m,
      cfg.gmm.own_weight, cfg.gmm.own_weight * d.G <= 1.0 + 1e-12 ? "homogeneous" : "heterogeneous");
  out.problem.extra = {{"em_fixed_point_statistics", s_star},
                       {"em_fixed_point_iterations", em_iters},
                       {"em_fixed_point_last_step_sq", h_star},
                       {"true_parameters", std::vector<double>(d.true_params.data(), d.true_params.data() + d.dim)},
                       {"parameter_layout", "pi_1..pi_G, mu_1 (p), ..., mu_G (p)"}};
  const auto& q = cfg.compression.quantizer;
  out.settings = {{"components", d.G},
                  {"data_dim", d.p},
                  {"points_per_agent", d.m},
                  {"own_weight", cfg.gmm.own_weight},
                  {"separation", cfg.gmm.separation},
                  {"em_step", cfg.gmm.em_step},
                  {"batch", cfg.gmm.batch},
                  {"inner_iters", cfg.gmm.inner_iters},
                  {"quantizer", QuantizerKindName(q.kind)},
                  {"levels", q.levels},
                  {"elias_gamma", q.elias_gamma},
                  {"bits", q.bits},
                  {"clip", q.clip},
                  {"omega", compression::Omega(q, d.dim)},
                  {"alpha", compression::ControlVariateStep(q, d.dim)},
                  {"initial_iterate", "uniform weights, means 0.5 * true + 0.5; Shat_0 = (pi, pi mu)"},
                  {"payload", "uplink: encoded bytes of Q(Delta_c) (bits = 8 * bytes), plus V_{0,c} as float32 in "
                              "round 0; downlink: Shat_k and T(Shat_k) as float64 to each agent that needs them"}};
  if (cfg.secagg.enabled)
    out.settings["secure_aggregation"] = secagg::IntegerUplink::Describe(
        cfg.secagg, static_cast<uint32_t>(cfg.garnet.agents), cfg.compression.quantizer.bits);

  const int dim = d.dim;
  auto task_r = MakeTask(cfg);
  if (!task_r.ok()) return task_r.status();
  const config::Task task = *task_r;
  std::vector<protocol::LocalProblem<double>> agents(d.n);
  for (uint32_t c = 0; c < d.n; ++c) agents[c].gmm = &d.oracles[c];
  for (size_t a = 0; a < algs.size(); ++a) {
    const EmAlgorithm alg = algs[a];
    AlgorithmResult res;
    res.name = algorithms::EmAlgorithmName(alg);
    std::vector<double> final_dist;
    uint64_t evals_total = 0;
    for (long run = 0; run < cfg.runs; ++run) {
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<double> err(cfg.rounds + 1), dist(cfg.rounds + 1);
      std::vector<uint32_t> members(cfg.rounds + 1, 0);
      std::vector<uint64_t> up(cfg.rounds + 1, 0), down(cfg.rounds + 1, 0);
      uint64_t evals = 0;
      {
        std::vector<double> theta0_params(dim);
        problems::GmmMStep(shat0.data(), d.G, d.p, theta0_params.data());
        err[0] = HSquared(d, shat0.data(), pool, scratch);
        dist[0] = Dist2(theta0_params.data(), theta_star);
      }
      DriverOptions o;
      o.task = &task;
      o.algorithm = static_cast<uint32_t>(a);
      o.run = static_cast<uint32_t>(run);
      o.agents = &agents;
      o.initial = shat0;
      o.pool = &pool;
      o.work_per_sample = d.m;
      SessionDriver driver;
      Status st = driver.run(o, [&](const DriverRound& r) -> Status {
        evals += r.samples;
        if (r.round == protocol::kInitRound) {  // V_{0,c} as float32; the initial broadcast
          up[0] = r.commit->bits_up;
          down[0] = r.commit->bits_down;
          return Status::Ok();
        }
        const uint32_t k = r.round;
        const protocol::ServerCore& core = r.server->core();
        if (!r.commit->failure.empty())
          return Status(StatusCode::kFailedPrecondition,
                        fmt::format("{}: round {}: secure aggregation failed: {}", res.name, k, r.commit->failure));
        err[k + 1] = HSquared(d, core.statistic(), pool, scratch);
        dist[k + 1] = Dist2(core.model(), theta_star);
        members[k + 1] = static_cast<uint32_t>(r.commit->members.size());
        up[k + 1] = r.commit->bits_up;
        down[k + 1] = r.commit->bits_down;
        if (opt.on_round) opt.on_round(RoundEvent{a, res.name, run, static_cast<long>(k) + 1, err[k + 1]});
        return Status::Ok();
      });
      if (!st.ok()) return st;
      res.wall_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      res.agent_steps += evals;
      evals_total += evals;
      final_dist.push_back(dist.back());
      res.error.push_back(std::move(err));
      res.agents.push_back(std::move(members));
      res.bits_up.push_back(std::move(up));
      res.bits_down.push_back(std::move(down));
      res.final_theta.push_back(Eigen::Map<const Eigen::VectorXd>(driver.server().core().model(), dim));
      if (run == 0) res.extra["param_distance_sq_run0"] = dist;
    }
    double md = 0;
    for (double x : final_dist) md += x / static_cast<double>(final_dist.size());
    res.extra["final_param_distance_sq_mean"] = md;
    res.extra["param_distance_metric"] = "||T(Shat_k) - theta_EM||^2 (exact EM fixed point)";
    res.extra["sample_evaluations_per_run"] = evals_total / static_cast<uint64_t>(cfg.runs);
    out.algorithms.push_back(std::move(res));
  }
  out.threads = pool.threads();
  return out;
}

}  // namespace fedrt::sim
