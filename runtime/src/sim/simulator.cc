#include "fedrt/sim/simulator.h"

#include <chrono>
#include <cmath>
#include <thread>

#include <fmt/format.h>

#include "fedrt/config/names.h"
#include "fedrt/report/evaluation.h"
#include "fedrt/sim/session_driver.h"
#include "fedrt/config/task_builder.h"
#include "fedrt/core/worker_pool.h"

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

// Every algorithm of the task for every run, through the round protocol
// (sim/session_driver.h); the family's evaluation (report/evaluation.h)
// measures each closed round.
Result<SimResult> RunExperiment(const config::ExperimentConfig& cfg, const SimOptions& opt) {
  FEDRT_TRY(config::Validate(cfg));
  auto task_r = config::MakeTask(cfg);
  if (!task_r.ok()) return task_r.status();
  config::Task task = *task_r;
  if (task.problem.kind == config::ProblemKind::kUser)
    return Status(StatusCode::kInvalidArgument,
                  std::string("[model] kind = \"user\": the simulator has no code for a user-defined model; it trains "
                              "on devices built on fedrt::Device (docs/user-models.md)"));
  for (uint32_t a = 0; a < task.num_algorithms; ++a)
    if (task.algorithms[a].kind == config::AlgorithmKind::kFedProxExact &&
        task.problem.kind != config::ProblemKind::kLeastSquares)
      return Status(StatusCode::kInvalidArgument,
                    std::string("fedprox-exact needs least squares (--problem lsq): logistic has no closed-form prox"));
  auto instance = config::BuildInstance(cfg);
  if (!instance.ok()) return instance.status();
  task.problem = (*instance)->problem();
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  WorkerPool pool(cfg.threads > 0 ? cfg.threads : static_cast<int>(hw));
  auto eval_r = report::Evaluation::Make(task, config::DataFilesOf(cfg), **instance, &pool);
  if (!eval_r.ok()) return eval_r.status();
  report::Evaluation& eval = **eval_r;

  SimResult out;
  out.config = cfg;
  out.threads = pool.threads();
  eval.describe(out);
  const int dim = out.problem.dim;
  const uint32_t T = task.rounds;
  for (uint32_t a = 0; a < task.num_algorithms; ++a) {
    AlgorithmResult res;
    res.name = config::AlgorithmName(task.algorithms[a]);
    uint64_t secagg_failed = 0;
    for (uint32_t run = 0; run < task.runs; ++run) {
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<double> err(T + 1);
      std::vector<uint32_t> members(T + 1, 0);
      std::vector<uint64_t> up(T + 1, 0), down(T + 1, 0);
      std::vector<double> train(T + 1, std::nan("")), local(T + 1, std::nan(""));
      std::vector<Eigen::VectorXd> history;
      size_t rows = 1;  // rows filled: fewer than T + 1 when on_round ends the run early
      err[0] = eval.initial_error();
      if (opt.keep_theta_history) history.push_back(Eigen::Map<const Eigen::VectorXd>((*instance)->initial_iterate().data(), dim));
      DriverOptions o;
      o.task = &task;
      o.algorithm = a;
      o.run = run;
      o.agents = &(*instance)->locals();
      o.initial = protocol::View<double>{(*instance)->initial_iterate().data(), static_cast<uint32_t>((*instance)->initial_iterate().size())};
      o.pool = &pool;
      o.min_parallel_work = eval.min_parallel_work();
      o.work_per_sample = eval.work_per_sample();
      ParseTdKernel(cfg.kernel.c_str(), o.kernel);  // checked by Validate
      o.ranks = opt.ranks;
      SessionDriver driver;
      Status st = driver.run(o, [&](const DriverRound& r) -> Status {
        res.agent_steps += r.samples;
        eval.round_finished(a, run, r.round, r.server->core());
        if (r.round == protocol::kInitRound) {  // FedEM's V_{0,c} and the first broadcast: round 0's row
          up[0] = r.commit->bits_up;
          down[0] = r.commit->bits_down;
          return Status::Ok();
        }
        const uint32_t t = r.round;
        const protocol::ServerCore& core = r.server->core();
        err[t + 1] = eval.error(core);
        members[t + 1] = static_cast<uint32_t>(r.commit->members.size());
        up[t + 1] = r.commit->bits_up;
        down[t + 1] = r.commit->bits_down;
        train[t + 1] = r.commit->train_loss;
        local[t + 1] = r.commit->local_loss;
        if (!r.commit->failure.empty() && secagg_failed++ == 0) res.extra["secagg_first_failure"] = r.commit->failure;
        if (opt.keep_theta_history) history.push_back(Eigen::Map<const Eigen::VectorXd>(core.model(), dim));
        rows = t + 2;
        if (opt.on_round)
          return opt.on_round(RoundEvent{a, res.name, run, static_cast<long>(t) + 1, err[t + 1], core.model(), dim});
        return Status::Ok();
      });
      if (st.code() == StatusCode::kCancelled) {  // the caller ended this run
        for (auto* v : {&err, &train, &local}) v->resize(rows);
        members.resize(rows);
        up.resize(rows);
        down.resize(rows);
      } else if (!st.ok()) {
        return Status(st.code(), fmt::format("{}: {}", res.name, st.message()));
      }
      const protocol::ServerCore& core = driver.server().core();
      res.wall_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      res.error.push_back(std::move(err));
      res.agents.push_back(std::move(members));
      res.bits_up.push_back(std::move(up));
      res.bits_down.push_back(std::move(down));
      if (task.problem.own_data) {
        res.train_loss.push_back(std::move(train));
        res.local_loss.push_back(std::move(local));
      }
      res.final_theta.push_back(Eigen::Map<const Eigen::VectorXd>(core.model(), dim));
      if (opt.keep_theta_history) res.theta_history.push_back(std::move(history));
      eval.run_finished(a, run, core);
    }
    if (task.secagg.enabled) res.extra["secagg_failed_rounds"] = secagg_failed;
    eval.algorithm_finished(a, res);
    out.algorithms.push_back(std::move(res));
  }
  return out;
}

}  // namespace fedrt::sim
