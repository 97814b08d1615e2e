#include "fedrt/coordinator/fleet_result.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "fedrt/config/adaptive_clip.h"
#include "fedrt/task/names.h"
#include "fedrt/privacy/run_budget.h"
#include "fedrt/protocol/dp_round_sigma.h"
#include "fedrt/protocol/server_session.h"
#include "fedrt/report/privacy_summary.h"

namespace fedrt::net {

Status FleetResult(const task::Task& task, const problems::Instance& instance, report::Evaluation& eval,
                   StateStore& store, report::SimResult& out, const config::PrivacySettings* privacy) {
  const bool dp = privacy != nullptr && task.privacy.enabled;
  // Round t of run r is accounted at sigma_t = DpRoundSigma(task, n_t), n_t its
  // sampled count (central: sigma); the budget looks ahead with the seed's n.
  auto foreseen = [&task](uint32_t r) {
    return [&task, r](uint32_t t) { return protocol::DpForeseenSigma(task, r, t); };
  };
  for (uint32_t a = 0; a < task.num_algorithms; ++a) {
    report::AlgorithmResult res;
    res.name = task::AlgorithmName(task.algorithms[a]);
    uint64_t secagg_failed = 0;
    double epsilon = 0, effective_noise = HUGE_VAL;  // the largest epsilon, the smallest sigma_t over runs
    std::vector<std::string> stops;
    std::vector<double> final_clips;  // adaptive clipping: C_T per run
    algorithms::AdaptiveClip adaptive;
    if (dp) {
      auto ac = config::AdaptiveClipFor(*privacy, task.participation, task.problem.agents, task.secagg.enabled);
      if (!ac.ok()) return ac.status();
      adaptive = *ac;
    }
    for (uint32_t r = 0; r < task.runs; ++r) {
      uint32_t T = task.rounds;
      if (dp) {  // a run the budget ends has rows up to its last round (as fedrt-sim's)
        auto allowed = privacy::RunBudget::RoundsAllowed(privacy->delta, privacy->epsilon_budget, task.participation,
                                                         foreseen(r), task.rounds);
        if (!allowed.ok()) return allowed.status();
        T = *allowed;
      }
      std::vector<uint32_t> sampled(T + 1, 0);
      std::vector<double> err(T + 1, std::nan(""));
      std::vector<uint32_t> members(T + 1, 0);
      std::vector<uint64_t> up(T + 1, 0), down(T + 1, 0);
      std::vector<double> train(T + 1, std::nan("")), local(T + 1, std::nan(""));
      std::vector<char> closed(T + 1, 0);  // row t + 1: round t is committed
      err[0] = eval.initial_error();
      // A server session to hold each committed state while the evaluation reads it.
      protocol::ServerSession session;
      protocol::ServerOptions so;
      so.task = task;
      so.algorithm = a;
      so.run = r;
      so.initial = protocol::View<double>{instance.initial_iterate().data(), static_cast<uint32_t>(instance.initial_iterate().size())};
      if (task.privacy.enabled)  // it replays committed states and closes no round: it draws no noise
        so.standard_normal = [](double*, size_t) {
          return Status(StatusCode::kInternal, std::string("the outputs' replay of committed rounds draws no noise"));
        };
      so.adaptive = adaptive;  // the clip C_t is a slice of the stored state
      std::vector<double> clips(adaptive.on() ? T + 1 : 0, std::nan(""));
      if (!clips.empty()) clips[0] = task.privacy.clip;
      double clip_before = task.privacy.clip;  // C_t before round t: the state after round t - 1
      FEDRT_TRY(session.init(so));
      // One record at a time, the initial exchange first: a run's records
      // together would be rounds x (model + server state) at the peak.
      std::vector<protocol::StateTarget> into;
      FEDRT_TRY(store.for_each_round(a, r, [&](const RoundRecord& rec) -> Status {
        if (rec.round != protocol::kInitRound && rec.round >= T) return Status::Ok();
        session.import_targets(into);
        Status st = store.read_state(a, r, rec.round, into);  // into the session's memory: no copy
        if (st.ok()) st = session.finish_import();
        if (!st.ok())
          return Status(st.code(), fmt::format("state db: {} run {} round {}: {}", res.name, r, rec.round, st.message()));
        eval.round_finished(a, r, rec.round, session.core());
        res.agent_steps += rec.samples;
        if (rec.round == protocol::kInitRound) {  // FedEM's V_{0,c} and the first broadcast: round 0's row
          up[0] = rec.bits_up;
          down[0] = rec.bits_down;
          return Status::Ok();
        }
        const uint32_t t = rec.round;
        closed[t + 1] = 1;
        if (!clips.empty()) {
          clips[t + 1] = clip_before;
          clip_before = session.clip();
        }
        err[t + 1] = rec.error;
        members[t + 1] = rec.agents;
        sampled[t + 1] = rec.sampled;
        up[t + 1] = rec.bits_up;
        down[t + 1] = rec.bits_down;
        train[t + 1] = rec.train_loss;
        local[t + 1] = rec.local_loss;
        if (!rec.failure.empty() && secagg_failed++ == 0) res.extra["secagg_first_failure"] = rec.failure;
        return Status::Ok();
      }, kNoVectors));
      if (dp) {  // epsilon after every round the run closed: the simulator's ledger, row by row
        auto budget = privacy::RunBudget::Create(privacy->delta, privacy->epsilon_budget, task.participation,
                                                 foreseen(r), task.rounds);
        if (!budget.ok()) return budget.status();
        std::vector<double> eps(T + 1, std::nan(""));
        eps[0] = 0;
        for (uint32_t t = 0; t < T && closed[t + 1]; ++t) {
          const double sigma_t = protocol::DpRoundSigma(task, sampled[t + 1]);
          if (task.privacy.distributed && sampled[t + 1] > 0) effective_noise = std::min(effective_noise, sigma_t);
          auto e = budget->CloseRound(sigma_t);
          if (!e.ok()) return e.status();
          eps[t + 1] = *e;
          epsilon = std::max(epsilon, *e);
        }
        if (!budget->stop().empty()) stops.push_back(fmt::format("run {}: {}", r, budget->stop()));
        res.epsilon.push_back(std::move(eps));
        if (adaptive.on()) {
          res.clip.push_back(std::move(clips));
          final_clips.push_back(clip_before);
        }
      }
      auto times = store.load_times(a, r);  // asynchronous steps' clock (docs/async.md)
      if (!times.ok()) return times.status();
      if (!times->empty()) {
        std::vector<double> ts(T + 1, std::nan(""));
        ts[0] = 0;
        for (const auto& [round, t] : *times)
          if (round < T) ts[round + 1] = t;
        res.time_s.push_back(std::move(ts));
      }
      const protocol::ServerCore& core = session.core();
      const int dim = out.problem.dim;
      res.error.push_back(std::move(err));
      res.agents.push_back(std::move(members));
      res.bits_up.push_back(std::move(up));
      res.bits_down.push_back(std::move(down));
      if (task.problem.own_data) {
        res.train_loss.push_back(std::move(train));
        res.local_loss.push_back(std::move(local));
      }
      res.final_theta.push_back(Eigen::Map<const Eigen::VectorXd>(core.model(), dim));
      eval.run_finished(a, r, core);
    }
    if (task.secagg.enabled) res.extra["secagg_failed_rounds"] = secagg_failed;
    if (dp) report::AddPrivacySummary(*privacy, epsilon, stops, res.extra, effective_noise);
    if (!final_clips.empty()) report::AddAdaptiveClipSummary(*privacy, final_clips, res.extra);
    eval.algorithm_finished(a, res);
    if (!res.time_s.empty()) {  // asynchronous steps (only they keep times in the state db)
      res.predicted_bias_sq.reset();  // the theory's fixed points are those of synchronous rounds
      res.predicted_bias_sq_stationary.reset();
    }
    out.algorithms.push_back(std::move(res));
  }
  return Status::Ok();
}

Status WriteDeviceReports(const task::Task& task, const std::vector<std::string>& names,
                          const std::vector<std::string>& ids, StateStore& store, const std::string& path) {
  auto rows = store.load_reports();
  if (!rows.ok()) return rows.status();
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return Status(StatusCode::kPermissionDenied, fmt::format("cannot write '{}'", path));
  std::fputs("algorithm,run,round,device,examples,loss_before,loss_after,duration_ms,bytes_down,bytes_up\n", f);
  for (const MemberRow& m : *rows) {
    if (m.algorithm >= names.size() || m.round == protocol::kInitRound || m.round >= task.rounds) continue;
    const MemberReport& r = m.report;
    const std::string id = r.device < ids.size() && !ids[r.device].empty() ? ids[r.device] : std::to_string(r.device);
    std::fprintf(f, "%s,%u,%u,%s,%llu,%.17g,%.17g,%u,%llu,%llu\n", names[m.algorithm].c_str(), m.run, m.round + 1,
                 id.c_str(), static_cast<unsigned long long>(r.examples), r.loss_before, r.loss_after, r.duration_ms,
                 static_cast<unsigned long long>(r.bytes_down), static_cast<unsigned long long>(r.bytes_up));
  }
  if (std::fclose(f) != 0) return Status(StatusCode::kDataLoss, fmt::format("error writing '{}'", path));
  return Status::Ok();
}

}  // namespace fedrt::net
