/* A user-defined model: loss and gradient over flat arrays, supplied by the
 * program that runs the device (docs/user-models.md). Every SGD-family
 * algorithm (FedAvg, Scaffold, FedProx, Fed-RR) trains it on the device; the
 * coordinator only averages its parameter vectors. C99 and C++: the C part
 * (a function pointer with a context pointer) is what device code calls; the
 * C++ part wraps a callable in it. */
#ifndef FEDRT_USER_MODEL_H_
#define FEDRT_USER_MODEL_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A batch of examples: `count` rows of `features` values (row-major), one label each. */
typedef struct fedrt_batch {
  const double* x;
  const double* y;
  uint32_t count;
  uint32_t features;
} fedrt_batch;

/* L(params) = mean over the batch of the model's per-example loss; writes
 * grad[k] = dL/dparams[k] for k < dim and returns L. Must not keep the
 * pointers. */
typedef double (*fedrt_loss_and_grad_fn)(void* context, const double* params, uint32_t dim,
                                         const fedrt_batch* batch, double* grad);

/* The same in float32, for devices that compute in float (microcontrollers). */
typedef struct fedrt_batch_f32 {
  const float* x;
  const float* y;
  uint32_t count;
  uint32_t features;
} fedrt_batch_f32;
typedef float (*fedrt_loss_and_grad_f32_fn)(void* context, const float* params, uint32_t dim,
                                            const fedrt_batch_f32* batch, float* grad);

#ifdef __cplusplus
}  /* extern "C" */
#endif

/* The C++ form, for host and Linux-board programs (fedrt/device.h). */
#if defined(__cplusplus) && defined(FEDRT_HOST)
#include <cstddef>
#include <functional>

#include "fedrt/core/arena.h"  // Span: params.data, params.size

namespace fedrt {

using Batch = fedrt_batch;

// A model of `dim` parameters over examples of `features` values (0: any).
// The C++ callable or the C function pointer (with its context) computes
// L(params) on a batch and its gradient, as fedrt_loss_and_grad_fn.
struct UserModel {
  uint32_t dim = 0;
  uint32_t features = 0;
  std::function<double(Span<const double> params, const Batch& batch, Span<double> grad)> loss_and_grad;
  fedrt_loss_and_grad_fn c_loss_and_grad = nullptr;  // used when loss_and_grad is empty
  void* c_context = nullptr;

  // The C form device code calls: fn(context, ...) reaches whichever is set.
  fedrt_loss_and_grad_fn function() const { return loss_and_grad ? &UserModel::Call : c_loss_and_grad; }
  void* context() const { return loss_and_grad ? const_cast<UserModel*>(this) : c_context; }

 private:
  static double Call(void* self, const double* params, uint32_t dim, const fedrt_batch* batch, double* grad) {
    const UserModel* m = static_cast<const UserModel*>(self);
    return m->loss_and_grad(Span<const double>{params, dim}, *batch, Span<double>{grad, dim});
  }
};

}  // namespace fedrt
#endif /* __cplusplus && FEDRT_HOST */

#endif /* FEDRT_USER_MODEL_H_ */
