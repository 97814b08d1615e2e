#pragma once
// WorkerPool: persistent threads running contiguous chunks of an index range
// (host code: the simulator's agents, the evaluations' per-agent sums).
// Work is partitioned statically, so which thread runs an agent never changes
// a result: every agent's randomness is keyed by (seed, run, agent, round).

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace fedrt {

class WorkerPool {
 public:
  explicit WorkerPool(int threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }
  // Threads worth starting for n independent items of work: `threads` (0:
  // the machine's), at most one per `per_thread` items, at least one.
  static int ThreadsFor(size_t n, int threads, size_t per_thread);
  // Calls fn(begin, end) on `threads()` contiguous chunks of [0, n); the
  // calling thread runs the first chunk. Returns when every chunk is done.
  void parallel_for(size_t n, const std::function<void(size_t, size_t)>& fn);

 private:
  void worker_main(int index);

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  const std::function<void(size_t, size_t)>* job_ = nullptr;
  size_t n_ = 0;
  unsigned long generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

}  // namespace fedrt
