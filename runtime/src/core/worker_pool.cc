#include "fedrt/core/worker_pool.h"

#include <algorithm>

namespace fedrt {

WorkerPool::WorkerPool(int threads) {
  if (threads < 1) threads = 1;
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_main(i); });
}

int WorkerPool::ThreadsFor(size_t n, int threads, size_t per_thread) {
  if (threads <= 0) {
    const size_t cap = per_thread > 0 ? n / per_thread : n;
    threads = static_cast<int>(std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), cap));
  }
  return std::max(1, static_cast<int>(std::min<size_t>(static_cast<size_t>(threads), std::max<size_t>(n, 1))));
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

static inline void Chunk(size_t n, int parts, int index, size_t& begin, size_t& end) {
  begin = n * static_cast<size_t>(index) / static_cast<size_t>(parts);
  end = n * static_cast<size_t>(index + 1) / static_cast<size_t>(parts);
}

void WorkerPool::parallel_for(size_t n, const std::function<void(size_t, size_t)>& fn) {
  if (workers_.empty() || n < 2) {
    if (n) fn(0, n);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &fn;
    n_ = n;
    pending_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  start_cv_.notify_all();
  size_t b, e;
  Chunk(n, threads(), 0, b, e);
  if (e > b) fn(b, e);
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return pending_ == 0; });
  job_ = nullptr;
}

void WorkerPool::worker_main(int index) {
  unsigned long seen = 0;
  for (;;) {
    const std::function<void(size_t, size_t)>* job;
    size_t n;
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
      n = n_;
    }
    size_t b, e;
    Chunk(n, threads(), index, b, e);
    if (e > b) (*job)(b, e);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) done_cv_.notify_one();
    }
  }
}

}  // namespace fedrt
