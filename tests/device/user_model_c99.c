/* fedrt/user_model.h is a C99 header (docs/user-models.md): this file must
 * compile as strict C99, and a model written in C fits its typedef. */
#include <stddef.h>

#include "fedrt/user_model.h"

/* L(w) = mean_j 0.5 (w . x_j - y_j)^2 over the batch. */
static double MeanSquares(void* context, const double* w, uint32_t dim, const fedrt_batch* b, double* g) {
  double loss = 0.0;
  uint32_t j, k;
  (void)context;
  for (k = 0; k < dim; ++k) g[k] = 0.0;
  for (j = 0; j < b->count; ++j) {
    const double* x = b->x + (size_t)j * b->features;
    double e = -b->y[j];
    for (k = 0; k < dim; ++k) e += w[k] * x[k];
    loss += 0.5 * e * e;
    for (k = 0; k < dim; ++k) g[k] += e * x[k] / b->count;
  }
  return loss / b->count;
}

fedrt_loss_and_grad_fn fedrt_c99_check_model(void) { return &MeanSquares; }
