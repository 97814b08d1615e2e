#pragma once
// Which kernel runs the simulator's TD(0) local steps (sim/td_lanes.h): the
// experiment's `kernel` key. A choice of speed only: every kernel gives the
// same bits.

#include <cstring>

namespace fedrt::config {

enum class TdKernel {
  kAuto = 0,  // the best this CPU runs: avx2 where supported, else portable
  kScalar,    // one agent at a time (LsaClient::run_local_steps)
  kPortable,  // 4-agent lanes in GCC vector extensions at the build's baseline ISA (SSE2, NEON, ...)
  kAvx2,      // 4-agent lanes in 256-bit AVX2 registers (x86-64 builds)
};

// "auto", "scalar", "portable", "avx2".
inline const char* TdKernelName(TdKernel k) {
  switch (k) {
    case TdKernel::kAuto: return "auto";
    case TdKernel::kScalar: return "scalar";
    case TdKernel::kPortable: return "portable";
    case TdKernel::kAvx2: return "avx2";
  }
  return "?";
}

// Parses a kernel name; false when unknown.
inline bool ParseTdKernel(const char* name, TdKernel& out) {
  for (TdKernel k : {TdKernel::kAuto, TdKernel::kScalar, TdKernel::kPortable, TdKernel::kAvx2})
    if (std::strcmp(name, TdKernelName(k)) == 0) {
      out = k;
      return true;
    }
  return false;
}

}  // namespace fedrt::config
