#include "pair_runner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <memory>
#include <mutex>
#include <optional>

#include <fmt/format.h>

#include "fedrt/config/adaptive_clip.h"
#include "fedrt/privacy/gaussian_noise.h"
#include "fedrt/privacy/run_budget.h"
#include "fedrt/protocol/dp_round_sigma.h"
#include "fedrt/sim/async_driver.h"
#include "fedrt/sim/session_driver.h"

namespace fedrt::sim {

PairOutput RunPair(const PairContext& ctx, uint32_t a, uint32_t run, WorkerPool* pool,
                   const PairRoundCallback& on_round) {
  const task::Task& task = *ctx.task;
  const problems::Instance& inst = *ctx.instance;
  report::Evaluation& eval = *ctx.eval;
  const std::string& name = ctx.names[a];
  const int dim = ctx.dim;
  const uint32_t T = task.rounds;
  const auto t0 = std::chrono::steady_clock::now();
  PairOutput p;
  p.error.assign(T + 1, 0.0);
  p.agents.assign(T + 1, 0);
  p.bits_up.assign(T + 1, 0);
  p.bits_down.assign(T + 1, 0);
  p.train_loss.assign(T + 1, std::nan(""));
  p.local_loss.assign(T + 1, std::nan(""));
  size_t rows = 1;  // rows filled: fewer than T + 1 when on_round ends the run early
  p.error[0] = eval.initial_error();
  if (ctx.keep_theta_history) p.history.push_back(Eigen::Map<const Eigen::VectorXd>(inst.initial_iterate().data(), dim));
  DriverOptions o;
  o.task = &task;
  o.algorithm = a;
  o.run = run;
  o.agents = &inst.locals();
  o.initial = protocol::View<double>{inst.initial_iterate().data(), static_cast<uint32_t>(inst.initial_iterate().size())};
  o.pool = pool;
  o.min_parallel_work = eval.min_parallel_work();
  o.work_per_sample = eval.work_per_sample();
  o.max_update_norm = ctx.max_update_norm;
  o.kernel = ctx.kernel;
  o.ranks = ctx.ranks;
  o.park_idle_agents = ctx.park_idle_agents;
  o.gateways = ctx.gateways;
  o.clock = ctx.clock;
  o.deadline_s = ctx.deadline_s;
  if (ctx.clock != nullptr) p.time_s.assign(T + 1, 0.0);
  // DP-FedAvg (docs/privacy.md): the server's noise (central) and the accountant.
  const config::PrivacySettings* dp = task.privacy.enabled ? ctx.privacy : nullptr;
  std::optional<privacy::RunBudget> budget;
  if (dp != nullptr) {
    if (!task.privacy.distributed) {  // distributed: the devices draw the noise
      auto noise = std::make_shared<privacy::GaussianNoise>(
          dp->test_seed ? privacy::GaussianNoise::Seeded(*dp->test_seed, run, a) : privacy::GaussianNoise::Cryptographic());
      o.standard_normal = [noise](double* out, size_t n) { return noise->Fill(out, n); };
    }
    // Each round at its multiplier (distributed: sigma_eff of its n, foreseen from the seed).
    // Asynchronous steps are not Poisson samples of the fleet: composed without amplification (docs/async.md).
    const double rate = ctx.async != nullptr && ctx.async->async() ? 1.0 : task.participation;
    auto b = privacy::RunBudget::Create(dp->delta, dp->epsilon_budget, rate,
                                        [&task, run](uint32_t t) { return protocol::DpForeseenSigma(task, run, t); }, T);
    if (!b.ok()) {
      p.status = b.status();
      return p;
    }
    budget = std::move(*b);
    p.epsilon.assign(T + 1, 0.0);
    auto adaptive = config::AdaptiveClipFor(*dp, task.participation, task.problem.agents, task.secagg.enabled);
    if (!adaptive.ok()) {
      p.status = adaptive.status();
      return p;
    }
    o.adaptive = *adaptive;
    if (o.adaptive.on()) p.clip.assign(T + 1, task.privacy.clip);
  }
  bool budget_stop = false;
  auto on_closed = [&](const DriverRound& r) -> Status {
    p.agent_steps += r.samples;
    eval.round_finished(a, run, r.round, *r.core);
    if (r.round == protocol::kInitRound) {  // FedEM's V_{0,c} and the first broadcast: round 0's row
      p.bits_up[0] = r.commit->bits_up;
      p.bits_down[0] = r.commit->bits_down;
      return Status::Ok();
    }
    const uint32_t t = r.round;
    if (t >= T) return Status(StatusCode::kInternal, fmt::format("simulator: round or step {} of a run of {}", t + 1, T));
    const protocol::ServerCore& core = *r.core;
    p.error[t + 1] = eval.error(core);
    if (!p.time_s.empty()) p.time_s[t + 1] = r.time_s;
    p.agents[t + 1] = static_cast<uint32_t>(r.commit->members.size());
    p.bits_up[t + 1] = r.commit->bits_up;
    p.bits_down[t + 1] = r.commit->bits_down;
    p.train_loss[t + 1] = r.commit->train_loss;
    p.local_loss[t + 1] = r.commit->local_loss;
    if (!r.commit->failure.empty() && p.secagg_failed++ == 0) p.secagg_first_failure = r.commit->failure;
    if (ctx.keep_theta_history) p.history.push_back(Eigen::Map<const Eigen::VectorXd>(core.model(), dim));
    rows = t + 2;
    if (!p.clip.empty()) p.clip[t + 1] = r.commit->clip;
    if (budget) {
      const double sigma_t = protocol::DpRoundSigma(task, r.commit->sampled);
      if (task.privacy.distributed && r.commit->sampled > 0) p.effective_noise = std::min(p.effective_noise, sigma_t);
      auto eps = budget->CloseRound(sigma_t);
      if (!eps.ok()) return eps.status();
      p.epsilon[t + 1] = *eps;
      if (!budget->stop().empty()) {
        budget_stop = true;
        p.privacy_stop = budget->stop();
      }
    }
    Status next = Status::Ok();
    if (on_round) next = on_round(RoundEvent{a, name, run, static_cast<long>(t) + 1, p.error[t + 1], core.model(), dim});
    if (next.ok() && budget_stop) return Status(StatusCode::kCancelled, p.privacy_stop);
    return next;
  };
  const bool async = ctx.async != nullptr && ctx.async->async();
  SessionDriver driver;
  std::unique_ptr<AsyncDriver> async_driver;
  Status st;
  if (async) {
    protocol::AsyncOptions ao;
    ao.buffer = static_cast<uint32_t>(ctx.async->buffer);
    ao.concurrency = static_cast<uint32_t>(ctx.async->concurrency);
    ao.max_staleness = static_cast<uint32_t>(ctx.async->max_staleness);
    ao.staleness_exponent = ctx.async->staleness_exponent;
    ao.steps = T;
    async_driver = std::make_unique<AsyncDriver>();
    st = async_driver->run(o, ao, on_closed);
  } else {
    st = driver.run(o, on_closed);
  }
  if (st.code() == StatusCode::kCancelled) {  // the caller ended this run
    for (auto* v : {&p.error, &p.train_loss, &p.local_loss}) v->resize(rows);
    if (!p.epsilon.empty()) p.epsilon.resize(rows);
    if (!p.clip.empty()) p.clip.resize(rows);
    p.agents.resize(rows);
    if (!p.time_s.empty()) p.time_s.resize(rows);
    p.bits_up.resize(rows);
    p.bits_down.resize(rows);
  } else if (!st.ok()) {
    p.status = Status(st.code(), fmt::format("{}: {}", name, st.message()));
    return p;
  }
  if (async) {
    const AsyncDriver& d = *async_driver;
    p.client_sessions = d.seats();
    p.parked_bytes_per_agent = d.parked_bytes_per_agent();
    p.dispatches = d.dispatches();
    p.abandoned = d.abandoned();
    p.dropped_stale = d.server().dropped_stale();
    p.staleness_sum = d.staleness_sum();
    p.aggregated = d.aggregated();
  } else {
    p.client_sessions = driver.seats();
    p.parked_bytes_per_agent = driver.parked_bytes_per_agent();
    p.final_clip = driver.server().clip();
  }
  const protocol::ServerCore& core = async ? async_driver->server().core() : driver.server().core();
  p.final_theta = Eigen::Map<const Eigen::VectorXd>(core.model(), dim);
  eval.run_finished(a, run, core);
  p.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return p;
}

namespace {

// Concurrent runs share the agents' oracles; those with a workspace of their
// own (softmax's logits, the expected operator's A theta) serve one at a time.
bool OraclesKeepNoWorkspace(const std::vector<problems::LocalProblem<double>>& agents) {
  for (const problems::LocalProblem<double>& p : agents)
    if (p.softmax != nullptr || p.expected != nullptr || p.user != nullptr) return false;
  return true;
}

}  // namespace

bool PairsInParallel(const PairContext& ctx, const WorkerPool& pool, const SimOptions& options) {
  const task::Task& task = *ctx.task;
  const uint64_t pairs = static_cast<uint64_t>(task.num_algorithms) * task.runs;
  if (pool.threads() < 2 || pairs < 2 || !ctx.eval->concurrent_runs() || ctx.ranks != nullptr) return false;
  if (!OraclesKeepNoWorkspace(ctx.instance->locals())) return false;
  if (options.on_round && !options.on_round_any_thread) return false;
  // A round's local work, the quantity SessionDriver compares with
  // min_parallel_work: far above it, rounds take milliseconds, the pool pays
  // within every round and balances better than whole runs.
  const double round_work = static_cast<double>(task.problem.agents) * task.participation *
                            std::max<uint32_t>(1, task.hyper.local_steps) * ctx.eval->work_per_sample();
  return round_work < 64.0 * ctx.eval->min_parallel_work();
}

std::vector<PairOutput> RunPairsInParallel(const PairContext& ctx, WorkerPool& pool, const SimOptions& options) {
  const uint32_t runs = ctx.task->runs;
  const size_t pairs = static_cast<size_t>(ctx.task->num_algorithms) * runs;
  std::vector<PairOutput> out(pairs);
  // Longest first, so no thread is left with a long run at the end: a Fed-RR
  // run advances two chains on the same samples, twice another run's work.
  std::vector<size_t> order(pairs);
  for (size_t k = 0; k < pairs; ++k) order[k] = k;
  auto chains = [&](size_t k) { return ctx.task->algorithms[k / runs].rr ? 2 : 1; };
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return chains(x) > chains(y); });
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex callback_mu;
  auto work = [&](size_t, size_t) {
    for (size_t i; (i = next.fetch_add(1)) < pairs;) {
      const size_t k = order[i];
      if (failed.load()) {
        out[k].stopped = true;
        out[k].status = Status(StatusCode::kAborted, std::string("stopped: another run failed"));
        continue;
      }
      bool aborted = false;
      PairRoundCallback cb = [&](const RoundEvent& e) -> Status {
        if (failed.load()) {
          aborted = true;
          return Status(StatusCode::kAborted, std::string("stopped: another run failed"));
        }
        if (!options.on_round) return Status::Ok();
        std::lock_guard<std::mutex> lock(callback_mu);
        return options.on_round(e);
      };
      out[k] = RunPair(ctx, static_cast<uint32_t>(k / runs), static_cast<uint32_t>(k % runs), nullptr, cb);
      if (aborted) out[k].stopped = true;
      else if (!out[k].status.ok()) failed.store(true);
    }
  };
  // One chunk of one index per thread: each thread loops over the queue.
  pool.parallel_for(static_cast<size_t>(pool.threads()), work);
  return out;
}

}  // namespace fedrt::sim
