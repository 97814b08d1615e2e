#pragma once
// TD(0) local blocks of several agents in the lanes of SIMD vectors (host
// code, docs/architecture.md, "Lane kernels"). Each lane is one agent with
// its own counter-based random stream and its own arithmetic in the scalar
// kernel's order, so every agent's theta_{t,H}^c is bit-identical to
// LsaClient::run_local_steps (tests/unit/td_lanes_test.cc): the lanes only
// interleave independent agents to fill the vector units and hide latency.

#include <cstddef>

#include "fedrt/config/td_kernel.h"
#include "fedrt/problems/td_block.h"

namespace fedrt::sim {

// kAuto resolved for this CPU and build; an explicit choice the CPU lacks
// (avx2 on a non-AVX2 machine) resolves to portable.
config::TdKernel ResolveTdKernel(config::TdKernel k);

// Agents in one lane call: blocks are handed over in groups of this many.
constexpr size_t kTdLaneGroup = 8;

// Runs blocks[0..n) (n <= kTdLaneGroup): consecutive blocks with the same
// dimension, step count, step size and algorithm share lanes; the rest run
// one by one. theta_{t,H}^c of every block equals the scalar kernel's bit for bit.
void RunTdBlocks(problems::TdBlock<double>* blocks, size_t n, config::TdKernel kernel);

}  // namespace fedrt::sim
