#pragma once
// A two-layer network over flat arrays, for fedrt's user models
// (fedrt/user_model.h): 2 inputs, kHidden tanh units, one sigmoid output,
// binary cross-entropy.
//   p(x) = sigmoid(w2 . tanh(W1 x + b1) + b2)
//   L    = mean over the batch of -[y log p + (1 - y) log(1 - p)]
// Parameters, d = 4 kHidden + 1: W1 (kHidden x 2, row-major), b1 (kHidden),
// w2 (kHidden), b2.
#include <cstdint>

#include "fedrt/user_model.h"

namespace two_layer {

constexpr uint32_t kInputs = 2, kHidden = 8;
constexpr uint32_t kParams = kHidden * kInputs + 2 * kHidden + 1;

// L(params) on the batch; writes dL/dparams into grad.
double LossAndGrad(fedrt::Span<const double> params, const fedrt::Batch& batch, fedrt::Span<double> grad);

// The model for a fedrt::Device.
fedrt::UserModel Model();

}  // namespace two_layer
