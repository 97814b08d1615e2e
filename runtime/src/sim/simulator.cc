#include "fedrt/sim/simulator.h"

#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "fedrt/analysis/fedlsa_bias.h"
#include "fedrt/core/arena.h"
#include "fedrt/problems/expected_oracle.h"
#include "fedrt/problems/garnet.h"
#include "fedrt/problems/td_oracle.h"
#include "fedrt/sim/opt_simulator.h"
#include "fedrt/sim/worker_pool.h"
#include "compressed_link.h"
#include "fedrt/sim/em_simulator.h"
#include "fedrt/sim/session_driver.h"
#include "fedrt/sim/task_builder.h"
#include "fedrt/secagg/integer_uplink.h"

namespace fedrt::sim {

using algorithms::LsaAlgorithm;

Result<problems::TdProblem> BuildProblem(const ExperimentConfig& cfg) {
  if (cfg.problem == ProblemKind::kFile) {
    auto bundle = problems::ArrayBundle::load(cfg.problem_file);
    if (!bundle.ok()) return bundle.status();
    auto p = problems::TdProblem::from_bundle(*bundle);
    if (!p.ok()) return p.status();
    if (cfg.agents_set && cfg.garnet.agents != p->agents()) {
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("--agents {} does not match the {} agents in problem file '{}'", cfg.garnet.agents,
                                p->agents(), cfg.problem_file));
    }
    return p;
  }
  problems::GarnetConfig g = cfg.garnet;
  g.seed = cfg.effective_problem_seed();
  return problems::GenerateGarnet(g);
}

namespace {

constexpr double kMinParallelSteps = 1u << 15;  // below this many local steps per round, run on one thread

double SquaredError(const double* theta, const Eigen::VectorXd& star) {
  double e = 0.0;
  for (int i = 0; i < star.size(); ++i) {
    const double d = theta[i] - star[i];
    e += d * d;
  }
  return e;
}

// Runs algorithm `alg_index` of the task for every run through the round
// protocol (sim/session_driver.h) and records its metrics.
Status RunAlgorithm(const ExperimentConfig& cfg, const config::Task& task, size_t alg_index,
                    const std::vector<protocol::LocalProblem<double>>& agents, const Eigen::VectorXd& theta_star,
                    WorkerPool& pool, const SimOptions& opt, AlgorithmResult& res) {
  const int d = static_cast<int>(theta_star.size());
  const long T = cfg.rounds;
  const Eigen::VectorXd theta0 = theta_star + Eigen::VectorXd::Ones(d);
  uint64_t secagg_failed = 0;
  for (long run = 0; run < cfg.runs; ++run) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<double> err(T + 1);
    std::vector<uint32_t> members(T + 1, 0);
    std::vector<uint64_t> up(T + 1, 0), down(T + 1, 0);
    std::vector<Eigen::VectorXd> history;
    err[0] = SquaredError(theta0.data(), theta_star);
    if (opt.keep_theta_history) history.push_back(theta0);
    DriverOptions o;
    o.task = &task;
    o.algorithm = static_cast<uint32_t>(alg_index);
    o.run = static_cast<uint32_t>(run);
    o.agents = &agents;
    o.initial.assign(theta0.data(), theta0.data() + d);
    o.pool = &pool;
    o.min_parallel_work = kMinParallelSteps;
    SessionDriver driver;
    Status st = driver.run(o, [&](const DriverRound& r) -> Status {
      const uint32_t t = r.round;
      const double* theta = r.server->core().model();
      err[t + 1] = SquaredError(theta, theta_star);
      members[t + 1] = static_cast<uint32_t>(r.commit->members.size());
      up[t + 1] = r.commit->bits_up;
      down[t + 1] = r.commit->bits_down;
      res.agent_steps += r.samples;
      if (!r.commit->failure.empty() && secagg_failed++ == 0) res.extra["secagg_first_failure"] = r.commit->failure;
      if (opt.keep_theta_history) history.push_back(Eigen::Map<const Eigen::VectorXd>(theta, d));
      if (opt.on_round) opt.on_round(RoundEvent{alg_index, res.name, run, static_cast<long>(t) + 1, err[t + 1]});
      return Status::Ok();
    });
    if (!st.ok()) return st;
    res.wall_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    res.error.push_back(std::move(err));
    res.agents.push_back(std::move(members));
    res.bits_up.push_back(std::move(up));
    res.bits_down.push_back(std::move(down));
    res.final_theta.push_back(Eigen::Map<const Eigen::VectorXd>(driver.server().core().model(), d));
    if (cfg.secagg.enabled) res.extra["secagg_failed_rounds"] = secagg_failed;
    if (opt.keep_theta_history) res.theta_history.push_back(std::move(history));
  }
  return Status::Ok();
}

// Oracles of every agent, carved from one arena (the simulator's "devices").
template <class Oracle>
struct OracleFleet {
  std::vector<uint8_t> memory;
  std::vector<Oracle> oracles;
};

Status BuildTdOracles(const problems::TdProblem& p, OracleFleet<problems::TdOracle<double>>& fleet, int& max_atoms) {
  const size_t n = static_cast<size_t>(p.n_states);
  const size_t per_agent = sizeof(double) * n * p.dim + n * n * (sizeof(problems::TdTransition<double>) + 24) +
                           8 * Arena::kAlignment;
  fleet.memory.assign(per_agent * p.agents(), 0);
  Arena arena(fleet.memory.data(), fleet.memory.size());
  max_atoms = 0;
  for (int c = 0; c < p.agents(); ++c) {
    const std::vector<double> joint = p.joint_law(c);
    auto o = problems::TdOracle<double>::create(arena, p.dim, p.n_states, p.gamma, p.phi.data(), p.reward[c].data(),
                                                joint.data());
    if (!o.ok()) return Status(o.status().code(), fmt::format("agent {}: {}", c, o.status().message()));
    max_atoms = std::max<int>(max_atoms, static_cast<int>(o->atoms()));
    fleet.oracles.push_back(*o);
  }
  return Status::Ok();
}

Status BuildExpectedOracles(const problems::LsaSystem& lsa, OracleFleet<problems::ExpectedLsaOracle<double>>& fleet) {
  const size_t d = static_cast<size_t>(lsa.dim);
  const size_t per_agent = sizeof(double) * (d * d + 2 * d) + 4 * Arena::kAlignment;
  fleet.memory.assign(per_agent * lsa.agents(), 0);
  Arena arena(fleet.memory.data(), fleet.memory.size());
  for (int c = 0; c < lsa.agents(); ++c) {
    auto o = problems::ExpectedLsaOracle<double>::create(arena, lsa.dim, lsa.abar[c].data(), lsa.bbar[c].data());
    if (!o.ok()) return o.status();
    fleet.oracles.push_back(*o);
  }
  return Status::Ok();
}

}  // namespace

Result<SimResult> RunExperiment(const ExperimentConfig& cfg, const SimOptions& opt) {
  FEDRT_TRY(Validate(cfg));
  switch (cfg.problem) {
    case ProblemKind::kGarnet:
    case ProblemKind::kFile:
      return RunLsaExperiment(cfg, opt);
    case ProblemKind::kGmm:
      return RunEmExperiment(cfg, opt);
    case ProblemKind::kLsq:
    case ProblemKind::kLogistic:
      return RunOptExperiment(cfg, opt);
  }
  return Status(StatusCode::kUnimplemented, std::string("unknown problem family"));
}

Result<SimResult> RunLsaExperiment(const ExperimentConfig& cfg, const SimOptions& opt) {
  std::vector<LsaAlgorithm> algs;
  for (const std::string& name : cfg.algorithms) {
    auto a = LsaAlgorithmFromName(name);
    if (!a.ok()) return a.status();
    algs.push_back(*a);
  }
  auto problem = BuildProblem(cfg);
  if (!problem.ok()) return problem.status();
  const problems::TdProblem& p = *problem;
  const problems::LsaSystem& lsa = p.lsa;

  SimResult out;
  out.config = cfg;
  out.problem.agents = lsa.agents();
  out.problem.dim = lsa.dim;
  out.problem.theta_star = lsa.theta_star;
  out.problem.delta_het = analysis::DeltaHet(lsa);
  out.settings = {{"comm_prob", cfg.effective_comm_prob()},
                  {"noise_free", cfg.noise_free},
                  {"aggregation", "uniform mean over the agents that reported"},
                  {"payload", "raw float64, d values per message (framing not counted)"},
                  {"initial_iterate", "theta_star + (1, ..., 1)"}};
  if (cfg.compression.enabled()) {
    out.settings["payload"] = "encoded bytes of the compressed update difference theta_{t,H}^c - theta_t (bits = 8 * bytes)";
    out.settings["compression"] = CompressionSettingsJson(cfg.compression, lsa.dim);
  }
  if (cfg.secagg.enabled)
    out.settings["secure_aggregation"] = secagg::IntegerUplink::Describe(
        cfg.secagg, static_cast<uint32_t>(lsa.agents()), cfg.compression.quantizer.bits);
  if (cfg.problem == ProblemKind::kFile) out.settings["problem_file"] = cfg.problem_file;
  else
    out.settings.update({{"heterogeneity", cfg.garnet.heterogeneity == problems::Heterogeneity::kHigh ? "high" : "low"},
                         {"states", cfg.garnet.n_states},
                         {"actions", cfg.garnet.n_actions},
                         {"branching", cfg.garnet.branching},
                         {"gamma", cfg.garnet.gamma},
                         {"epsilon", cfg.garnet.epsilon}});
  out.problem.description =
      cfg.problem == ProblemKind::kFile
          ? fmt::format("federated TD(0) from '{}'", cfg.problem_file)
          : fmt::format("Garnet TD(0), {} heterogeneity, {} states, {} actions, branching {}, d={}, gamma={}",
                        cfg.garnet.heterogeneity == problems::Heterogeneity::kHigh ? "high" : "low",
                        cfg.garnet.n_states, cfg.garnet.n_actions, cfg.garnet.branching, cfg.garnet.dim,
                        cfg.garnet.gamma);

  const analysis::FedLsaBias bias = analysis::PredictFedLsaBias(lsa, cfg.step, cfg.local_steps, cfg.rounds);
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  WorkerPool pool(cfg.threads > 0 ? cfg.threads : static_cast<int>(hw));
  out.threads = pool.threads();

  OracleFleet<problems::TdOracle<double>> td_fleet;
  OracleFleet<problems::ExpectedLsaOracle<double>> exp_fleet;
  if (cfg.noise_free) {
    FEDRT_TRY(BuildExpectedOracles(lsa, exp_fleet));
  } else {
    FEDRT_TRY(BuildTdOracles(p, td_fleet, out.problem.oracle_atoms_max));
  }

  auto task_r = MakeTask(cfg);
  if (!task_r.ok()) return task_r.status();
  config::Task task = *task_r;
  task.problem.agents = static_cast<uint32_t>(lsa.agents());
  task.problem.dim = static_cast<uint32_t>(lsa.dim);
  std::vector<protocol::LocalProblem<double>> agents(static_cast<size_t>(lsa.agents()));
  for (size_t c = 0; c < agents.size(); ++c) {
    if (cfg.noise_free) agents[c].expected = &exp_fleet.oracles[c];
    else agents[c].td = &td_fleet.oracles[c];
  }
  for (size_t a = 0; a < algs.size(); ++a) {
    const LsaAlgorithm alg = algs[a];
    AlgorithmResult res;
    res.name = algorithms::LsaAlgorithmName(alg);
    Status run_status = RunAlgorithm(cfg, task, a, agents, lsa.theta_star, pool, opt, res);
    if (!run_status.ok())
      return Status(run_status.code(), fmt::format("{}: {}", res.name, run_status.message()));
    if (alg == LsaAlgorithm::kFedLsa) {
      if (cfg.participation >= 1.0) {
        res.predicted_bias_sq = bias.after_rounds.squaredNorm();
        res.predicted_bias_sq_stationary = bias.stationary.squaredNorm();
      }
    } else {
      res.predicted_bias_sq = 0.0;  // control variates remove the heterogeneity bias
      res.predicted_bias_sq_stationary = 0.0;
    }
    out.algorithms.push_back(std::move(res));
  }
  return out;
}

}  // namespace fedrt::sim
