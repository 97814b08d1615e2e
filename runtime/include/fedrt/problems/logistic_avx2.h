#pragma once
// Host x86-64 only (FEDRT_LOGISTIC_AVX2, set by the build): an AVX2 kernel of
// LogisticOracle<double>::gradient, in a translation unit built with -mavx2
// and without -mfma. Vectors run ACROSS samples (the dot products, the index
// draws) or across coordinates (the gradient's sums), never inside one sum,
// and multiplies and adds stay separate roundings: every number is the bits
// of the one-by-one loop. glibc's exp is called once per sample, as there.

#include <cstdint>

namespace fedrt::problems::detail {

// Whether this CPU runs the AVX2 kernel (checked once).
bool LogisticAvx2Supported();

// Rows (n rows of p features, row-major) and labels of one agent's data.
struct LogisticRows {
  const double* x;
  const double* y;
  uint32_t n;
  int p;
  bool intercept;  // the model is d = p + 1 long, the last coordinate the intercept
};

// g = l2 x + sum_{b < m} coef_b z_{j_b}, coef_b = -y sigma(-y z^T x) / m (in b order,
// as LogisticOracle::gradient): j_b = b and m = n when batch = 0, otherwise
// m = batch and j_b = CounterRng draw b + 1 of below(n) from state `rng_state`
// (CounterRng::advance). The draws are computed 4 at a time.
void LogisticGradientAvx2(const LogisticRows& rows, double l2, const double* x, double* g, uint32_t batch,
                          uint64_t rng_state);

// exp(v) from glibc's libm, without its errno wrapper where the libm exports
// the bare function (the same bits: the wrapper only sets errno).
double LogisticExp(double v);

}  // namespace fedrt::problems::detail
