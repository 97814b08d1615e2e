#include "fedrt/sim/simulator.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <cmath>
#include <thread>

#include <fmt/format.h>

#include "fedrt/task/names.h"
#include "fedrt/algorithms/lsa.h"  // IsSampled
#include "fedrt/report/evaluation.h"
#include "fedrt/config/task_builder.h"
#include "fedrt/core/worker_pool.h"
#include "fedrt/privacy/run_budget.h"
#include "fedrt/protocol/dp_round_sigma.h"
#include "fedrt/report/privacy_summary.h"
#include "fedrt/sim/device_clock.h"
#include "pair_runner.h"

namespace fedrt::sim {

Result<problems::TdProblem> BuildProblem(const config::ExperimentConfig& cfg) {
  auto inst = config::BuildInstance(cfg);
  if (!inst.ok()) return inst.status();
  return *(*inst)->td();
}

Result<problems::FedDataset> BuildFedData(const config::ExperimentConfig& cfg) {
  auto inst = config::BuildInstance(cfg);
  if (!inst.ok()) return inst.status();
  return *(*inst)->fed();
}

// What the simulator itself cannot do with [privacy] (config::ValidatePrivacy
// checked the rest): replicas of the server on several ranks would draw
// different cryptographic noise, and a budget below one round's epsilon
// leaves no round to run.
Status CheckPrivacy(const config::ExperimentConfig& cfg, const task::Task& task, const SimOptions& opt) {
  if (!task.privacy.enabled) return Status::Ok();
  uint32_t likely = 0;  // distributed: the group must hold the sum of a likely round's devices (docs/privacy.md)
  if (const char* why = protocol::DpLikelyRoundFits(task, &likely))
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("{} (checked for {} sampled devices, q N + 6 sqrt(q N))", why, likely));
  if (!task.privacy.distributed && opt.ranks != nullptr && opt.ranks->size() > 1 && !cfg.privacy.test_seed)
    return Status(StatusCode::kInvalidArgument,
                  std::string("privacy.mechanism = \"central\" does not run across MPI ranks yet: each rank's server "
                              "replica would draw its own noise (run one process)"));
  // Each run's first round at its multiplier (distributed: sigma_eff of the n the seed samples).
  for (uint32_t run = 0; run < (task.privacy.distributed ? task.runs : 1u); ++run) {
    auto budget = privacy::RunBudget::Create(
        cfg.privacy.delta, cfg.privacy.epsilon_budget, cfg.async.async() ? 1.0 : task.participation,
        [&task, run](uint32_t t) { return protocol::DpForeseenSigma(task, run, t); }, task.rounds);
    if (!budget.ok()) return budget.status();
  }
  return Status::Ok();
}

// Every algorithm of the task for every run, through the round protocol
// (pair_runner.h: one run of one algorithm at a time with the pool inside
// rounds, or several runs at once); the family's evaluation
// (report/evaluation.h) measures each closed round.
Result<SimResult> RunExperiment(const config::ExperimentConfig& cfg, const SimOptions& opt) {
  FEDRT_TRY(config::Validate(cfg));
  auto task_r = config::MakeTask(cfg);
  if (!task_r.ok()) return task_r.status();
  task::Task task = *task_r;
  if (task.problem.kind == task::ProblemKind::kUser)
    return Status(StatusCode::kInvalidArgument,
                  std::string("[model] kind = \"user\": the simulator has no code for a user-defined model; it trains "
                              "on devices built on fedrt::Device (docs/user-models.md)"));
  for (uint32_t a = 0; a < task.num_algorithms; ++a)
    if (task.algorithms[a].kind == task::AlgorithmKind::kFedProxExact &&
        task.problem.kind != task::ProblemKind::kLeastSquares)
      return Status(StatusCode::kInvalidArgument,
                    std::string("fedprox-exact needs least squares (--problem lsq): logistic has no closed-form prox"));
  auto instance = config::BuildInstance(cfg);
  if (!instance.ok()) return instance.status();
  task.problem = (*instance)->problem();  // devices' own data: N and d from the shards
  FEDRT_TRY(CheckPrivacy(cfg, task, opt));
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  WorkerPool pool(cfg.threads > 0 ? cfg.threads : static_cast<int>(hw));
  auto eval_r = report::Evaluation::Make(task, config::DataFilesOf(cfg), **instance, &pool);
  if (!eval_r.ok()) return eval_r.status();
  report::Evaluation& eval = **eval_r;

  SimResult out;
  out.config = cfg;
  out.threads = pool.threads();
  eval.describe(out);
  // The virtual clock (docs/async.md): with [devices], or asynchronous rounds
  // (which need one: every device then at speed 1, 10 Mbit/s, always online).
  // A bad trace or profiles file is in what the experiment asked for.
  std::optional<DeviceClock> clock;
  if (cfg.devices.present || cfg.async.async()) {
    auto c = DeviceClock::Build(cfg.devices, task.problem.agents, task.seed);
    if (!c.ok()) return c.status();
    clock = std::move(*c);
  }
  if (opt.started != nullptr) *opt.started = true;
  if (opt.ranks != nullptr) FEDRT_TRY(opt.ranks->built());  // run times start together on every rank
  const auto runs_start = std::chrono::steady_clock::now();
  PairContext ctx;
  ctx.task = &task;
  ctx.instance = &**instance;
  ctx.eval = &eval;
  ctx.dim = out.problem.dim;
  for (uint32_t a = 0; a < task.num_algorithms; ++a) ctx.names.push_back(task::AlgorithmName(task.algorithms[a]));
  ctx.keep_theta_history = opt.keep_theta_history;
  ctx.park_idle_agents = opt.park_idle_agents;
  ctx.gateways = opt.gateways;
  config::ParseTdKernel(cfg.kernel.c_str(), ctx.kernel);  // checked by Validate
  ctx.ranks = opt.ranks;
  ctx.privacy = &cfg.privacy;
  ctx.max_update_norm = cfg.robustness.max_update_norm;
  if (clock) {
    ctx.clock = &*clock;
    ctx.deadline_s = cfg.devices.deadline_s;
  }
  ctx.async = &cfg.async;
  // Short rounds: whole runs at once, one per thread; otherwise one run after
  // the other, each round's agents on the pool. The same bits either way.
  std::vector<PairOutput> done;
  if (PairsInParallel(ctx, pool, opt)) {
    out.concurrent_runs = true;
    done = RunPairsInParallel(ctx, pool, opt);
    for (const PairOutput& p : done)  // the first error in (algorithm, run) order
      if (!p.status.ok() && !p.stopped) return p.status;
  }
  for (uint32_t a = 0; a < task.num_algorithms; ++a) {
    AlgorithmResult res;
    res.name = ctx.names[a];
    uint64_t secagg_failed = 0;
    double epsilon = 0, effective_noise = HUGE_VAL;
    std::vector<std::string> stops;
    std::vector<double> final_clips;
    uint64_t staleness_sum = 0, aggregated = 0;
    for (uint32_t run = 0; run < task.runs; ++run) {
      PairOutput p = done.empty() ? RunPair(ctx, a, run, &pool, opt.on_round)
                                  : std::move(done[static_cast<size_t>(a) * task.runs + run]);
      if (!p.status.ok()) return p.status;
      res.agent_steps += p.agent_steps;
      res.wall_seconds += p.wall_seconds;
      res.client_sessions = std::max(res.client_sessions, p.client_sessions);
      res.parked_bytes_per_agent = p.parked_bytes_per_agent;
      if (secagg_failed == 0 && p.secagg_failed > 0) res.extra["secagg_first_failure"] = p.secagg_first_failure;
      secagg_failed += p.secagg_failed;
      if (task.privacy.enabled) {
        epsilon = std::max(epsilon, p.epsilon.empty() ? 0.0 : p.epsilon.back());
        effective_noise = std::min(effective_noise, p.effective_noise);
        if (!p.privacy_stop.empty()) stops.push_back(fmt::format("run {}: {}", run, p.privacy_stop));
        res.epsilon.push_back(std::move(p.epsilon));
        if (!p.clip.empty()) {
          res.clip.push_back(std::move(p.clip));
          final_clips.push_back(p.final_clip);
        }
      }
      res.error.push_back(std::move(p.error));
      res.agents.push_back(std::move(p.agents));
      res.bits_up.push_back(std::move(p.bits_up));
      res.bits_down.push_back(std::move(p.bits_down));
      if (!p.time_s.empty()) res.time_s.push_back(std::move(p.time_s));
      if (cfg.async.async()) {
        res.extra["async_dispatches"] = res.extra.value("async_dispatches", uint64_t{0}) + p.dispatches;
        res.extra["async_lost_offline"] = res.extra.value("async_lost_offline", uint64_t{0}) + p.abandoned;
        res.extra["async_dropped_stale"] = res.extra.value("async_dropped_stale", uint64_t{0}) + p.dropped_stale;
        staleness_sum += p.staleness_sum;
        aggregated += p.aggregated;
      }
      if (task.problem.own_data) {
        res.train_loss.push_back(std::move(p.train_loss));
        res.local_loss.push_back(std::move(p.local_loss));
      }
      res.final_theta.push_back(std::move(p.final_theta));
      if (opt.keep_theta_history) res.theta_history.push_back(std::move(p.history));
    }
    if (task.secagg.enabled) res.extra["secagg_failed_rounds"] = secagg_failed;
    if (aggregated > 0) res.extra["async_mean_staleness"] = static_cast<double>(staleness_sum) / static_cast<double>(aggregated);
    if (task.privacy.enabled) report::AddPrivacySummary(cfg.privacy, epsilon, stops, res.extra, effective_noise);
    if (!final_clips.empty()) report::AddAdaptiveClipSummary(cfg.privacy, final_clips, res.extra);
    eval.algorithm_finished(a, res);
    if (cfg.async.async()) {  // the theory's fixed points are those of synchronous rounds
      res.predicted_bias_sq.reset();
      res.predicted_bias_sq_stationary.reset();
    }
    out.algorithms.push_back(std::move(res));
  }
  out.run_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - runs_start).count();
  return out;
}

}  // namespace fedrt::sim
