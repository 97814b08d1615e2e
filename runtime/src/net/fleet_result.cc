#include "fedrt/net/fleet_result.h"

#include <cmath>

#include <fmt/format.h>

#include "fedrt/config/names.h"
#include "fedrt/protocol/server_session.h"

namespace fedrt::net {

Status FleetResult(const config::Task& task, const problems::Instance& instance, report::Evaluation& eval,
                   StateStore& store, report::SimResult& out) {
  auto rounds = store.load_rounds();
  if (!rounds.ok()) return rounds.status();
  const uint32_t T = task.rounds;
  for (uint32_t a = 0; a < task.num_algorithms; ++a) {
    report::AlgorithmResult res;
    res.name = config::AlgorithmName(task.algorithms[a]);
    uint64_t secagg_failed = 0;
    for (uint32_t r = 0; r < task.runs; ++r) {
      std::vector<double> err(T + 1, std::nan(""));
      std::vector<uint32_t> members(T + 1, 0);
      std::vector<uint64_t> up(T + 1, 0), down(T + 1, 0);
      err[0] = eval.initial_error();
      // A server session to hold each committed state while the evaluation reads it.
      protocol::ServerSession session;
      protocol::ServerOptions so;
      so.task = task;
      so.algorithm = a;
      so.run = r;
      so.initial = instance.initial_iterate();
      FEDRT_TRY(session.init(so));
      // The log sorts the initial exchange (round 0xFFFFFFFF) last; it comes first.
      std::vector<const RoundRecord*> order;
      for (const RoundRecord& rec : *rounds)
        if (rec.algorithm == a && rec.run == r && rec.round == protocol::kInitRound) order.push_back(&rec);
      for (const RoundRecord& rec : *rounds)
        if (rec.algorithm == a && rec.run == r && rec.round < T) order.push_back(&rec);
      for (const RoundRecord* rec : order) {
        Status st = session.import_state(rec->state);
        if (!st.ok())
          return Status(st.code(), fmt::format("state db: {} run {} round {}: {}", res.name, r, rec->round, st.message()));
        eval.round_finished(a, r, rec->round, session.core());
        res.agent_steps += rec->samples;
        if (rec->round == protocol::kInitRound) {  // FedEM's V_{0,c} and the first broadcast: round 0's row
          up[0] = rec->bits_up;
          down[0] = rec->bits_down;
          continue;
        }
        const uint32_t t = rec->round;
        err[t + 1] = rec->error;
        members[t + 1] = rec->agents;
        up[t + 1] = rec->bits_up;
        down[t + 1] = rec->bits_down;
        if (!rec->failure.empty() && secagg_failed++ == 0) res.extra["secagg_first_failure"] = rec->failure;
      }
      const protocol::ServerCore& core = session.core();
      const int dim = out.problem.dim;
      res.error.push_back(std::move(err));
      res.agents.push_back(std::move(members));
      res.bits_up.push_back(std::move(up));
      res.bits_down.push_back(std::move(down));
      res.final_theta.push_back(Eigen::Map<const Eigen::VectorXd>(core.model(), dim));
      eval.run_finished(a, r, core);
    }
    if (task.secagg.enabled) res.extra["secagg_failed_rounds"] = secagg_failed;
    eval.algorithm_finished(a, res);
    out.algorithms.push_back(std::move(res));
  }
  return Status::Ok();
}

}  // namespace fedrt::net
