#pragma once
// Evaluation: what a family reports about a run, whichever driver ran it
// (docs/algorithms.md 6, 7). One per family, built over the problem instance:
// the problem's description and exact solution, the per-round error metric
// of the server's state (||theta_t - theta*||^2, ||x_t - x*||^2 or
// ||h(Shat_k)||^2), and the theory and extras of summary.json. The simulator
// calls it as rounds close; the coordinator with the states it persisted.
// Host code.

#include <cmath>
#include <cstdint>
#include <memory>

#include "fedrt/task/task.h"
#include "fedrt/core/status.h"
#include "fedrt/problems/instance.h"
#include "fedrt/protocol/server_core.h"
#include "fedrt/report/results.h"

namespace fedrt {
class WorkerPool;
}

namespace fedrt::report {

class Evaluation {
 public:
  virtual ~Evaluation() = default;

  // The family's evaluation of `task` over `instance` (both must outlive
  // it). `pool` may be null (single-threaded).
  static Result<std::unique_ptr<Evaluation>> Make(const task::Task& task, const problems::DataFiles& files,
                                                  const problems::Instance& instance, WorkerPool* pool);

  // The problem summary, the error metric's name and the family's settings.
  virtual void describe(SimResult& out) const = 0;
  // The error metric of the initial iterate, and of the server's state after a round.
  virtual double initial_error() const = 0;
  virtual double error(const protocol::ServerCore& core) const = 0;
  // The held-out test accuracy of the server's model ([data] test), NaN
  // without a test set or for a model without one (the dashboard's live curve).
  virtual double test_accuracy(const protocol::ServerCore& core) const { return std::nan(""); }
  // Per-round, per-run and per-algorithm hooks for the family's extras.
  virtual void round_finished(size_t algorithm, uint32_t run, uint32_t round, const protocol::ServerCore& core) {}
  virtual void run_finished(size_t algorithm, uint32_t run, const protocol::ServerCore& core) {}
  virtual void algorithm_finished(size_t algorithm, AlgorithmResult& res) {}
  // True when error(), round_finished and run_finished may run for different
  // (algorithm, run) pairs at once (each pair's calls still in round order;
  // algorithm_finished after all of an algorithm's runs, in algorithm order).
  virtual bool concurrent_runs() const { return false; }
  // Local work per sample (flops), for the simulator's threads-or-inline choice.
  virtual double work_per_sample() const { return 1.0; }
  virtual double min_parallel_work() const { return 1u << 15; }
};

}  // namespace fedrt::report
