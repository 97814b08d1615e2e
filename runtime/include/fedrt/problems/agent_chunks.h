#pragma once
// Host-only: per-agent construction work of a large fleet (an eigen-solve,
// an alias table) spread over threads. Agents are independent, so every
// agent's result is the same whichever thread computes it.

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace fedrt::problems {

// Calls fn(c) for every c in [0, n), in contiguous chunks on `threads`
// threads (0: the machine's, at most one per 512 agents); returns when all
// are done.
template <class Fn>
void ForAgentsInChunks(int n, int threads, const Fn& fn) {
  if (threads <= 0) threads = std::min<int>(static_cast<int>(std::thread::hardware_concurrency()), n / 512);
  threads = std::max(1, std::min(threads, n));
  auto chunk = [&fn, n, threads](int t) {
    const int64_t lo = int64_t(n) * t / threads, hi = int64_t(n) * (t + 1) / threads;
    for (int64_t c = lo; c < hi; ++c) fn(static_cast<int>(c));
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(chunk, t);
  chunk(0);
  for (std::thread& th : pool) th.join();
}

}  // namespace fedrt::problems
