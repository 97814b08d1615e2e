#include "model.h"

#include <cmath>

namespace two_layer {

double LossAndGrad(fedrt::Span<const double> params, const fedrt::Batch& batch, fedrt::Span<double> grad) {
  const double* w1 = params.data;
  const double* b1 = w1 + kHidden * kInputs;
  const double* w2 = b1 + kHidden;
  const double b2 = w2[kHidden];
  double* gw1 = grad.data;
  double* gb1 = gw1 + kHidden * kInputs;
  double* gw2 = gb1 + kHidden;
  double* gb2 = gw2 + kHidden;
  for (size_t k = 0; k < grad.size; ++k) grad[k] = 0.0;
  double loss = 0.0;
  double z[kHidden];
  for (uint32_t j = 0; j < batch.count; ++j) {
    const double* x = batch.x + static_cast<size_t>(j) * batch.features;
    const double y = batch.y[j];
    double o = b2;
    for (uint32_t h = 0; h < kHidden; ++h) {
      double a = b1[h];
      for (uint32_t i = 0; i < kInputs; ++i) a += w1[h * kInputs + i] * x[i];
      z[h] = std::tanh(a);
      o += w2[h] * z[h];
    }
    // -[y log p + (1 - y) log(1 - p)] = softplus(o) - y o, without overflow.
    loss += (o > 0 ? o + std::log1p(std::exp(-o)) : std::log1p(std::exp(o))) - y * o;
    const double p = o >= 0 ? 1.0 / (1.0 + std::exp(-o)) : std::exp(o) / (1.0 + std::exp(o));
    const double d_o = p - y;  // dL_j/do
    *gb2 += d_o;
    for (uint32_t h = 0; h < kHidden; ++h) {
      gw2[h] += d_o * z[h];
      const double d_a = d_o * w2[h] * (1.0 - z[h] * z[h]);  // tanh' = 1 - tanh^2
      gb1[h] += d_a;
      for (uint32_t i = 0; i < kInputs; ++i) gw1[h * kInputs + i] += d_a * x[i];
    }
  }
  const double inv = 1.0 / batch.count;
  for (size_t k = 0; k < grad.size; ++k) grad[k] *= inv;
  return loss * inv;
}

fedrt::UserModel Model() {
  fedrt::UserModel m;
  m.dim = kParams;
  m.features = kInputs;
  m.loss_and_grad = &LossAndGrad;
  return m;
}

}  // namespace two_layer
