// Own-data samples of the firmware client (fedrt/fw/client.h,
// docs/data.md): in place, pulled or fed into the workspace store.
#include "client_impl.h"

namespace fedrt::fw {

namespace {
bool Finite(float v) { return v - v == 0.0f; }
// A softmax label is a class index 0..K-1 stored as a float.
bool IsClass(float v, uint32_t classes) {
  return v >= 0.0f && v < static_cast<float>(classes) && v == static_cast<float>(static_cast<uint32_t>(v));
}
// Features per example of an own-data task: p = d - intercept, or
// p = d / K - intercept for softmax regression (d = K (p + intercept), class-major).
uint32_t Features(const task::ProblemSpec& p) {
  if (p.kind != task::ProblemKind::kSoftmax) return p.intercept && p.dim > 0 ? p.dim - 1 : p.dim;
  const uint32_t per_class = p.classes == 0 ? 0 : p.dim / p.classes;
  return per_class > (p.intercept ? 1u : 0u) ? per_class - (p.intercept ? 1u : 0u) : 0u;
}
// "the device's samples have 4 features, the task's model d = 5" (softmax:
// "... the task's softmax model has 5 (d = 18)").
LogLine FeatureMismatch(uint32_t have, uint32_t want, const task::ProblemSpec& p) {
  LogLine l;
  l.add("the device's samples have ").add_u(have);
  if (p.kind == task::ProblemKind::kSoftmax)
    l.add(" features, the task's softmax model has ").add_u(want).add(" (d = ").add_u(p.dim).add(")");
  else if (p.intercept)
    l.add(" features, the task's model has ").add_u(want).add(" and an intercept (d = ").add_u(p.dim).add(")");
  else
    l.add(" features, the task's model d = ").add_u(want);
  return l;
}
LogLine NotAClass(uint32_t example, uint32_t classes) {
  LogLine l;
  l.add("example ").add_u(example).add(": label is not a class of softmax regression with ").add_u(classes);
  l.add(" classes (an integer 0..").add_u(classes - 1).add(")");
  return l;
}
}  // namespace

// Where an own-data task's examples are (x, y, rows; nullptr) or why this
// device cannot give them; need_samples when they are still to be fed. Binary
// labels 0/1 become -1/+1 in the store, as the shard readers store them;
// softmax labels must be class indices 0..K-1 (the examples then have
// p = d / K - intercept features).
const char* FwClient::Impl::own_samples(const task::Task& t, const float** x, const float** y, uint32_t* rows) {
  need_samples = false;
  const SampleOptions& so = opt.samples;
  const task::ProblemKind kind = t.problem.kind;
  if (kind != task::ProblemKind::kLeastSquares && kind != task::ProblemKind::kLogistic &&
      kind != task::ProblemKind::kSoftmax)
    return "own-data tasks of this model are not in this firmware (least squares, binary logistic and softmax regression only)";
  if (!protocol::Has(kFamilies, task::Family::kOpt)) return "this device build does not include the task's algorithm family";
  const bool binary = kind == task::ProblemKind::kLogistic;
  const bool softmax = kind == task::ProblemKind::kSoftmax;
  const uint32_t classes = t.problem.classes;
  const uint32_t d = Features(t.problem);  // features per example
  if (softmax && (d == 0 || classes * (d + (t.problem.intercept ? 1u : 0u)) != t.problem.dim))
    return "softmax: the task's d is not K (p + intercept) for its K classes";
  if (so.x != nullptr) {  // in place: validated, never written
    if (so.dim != d) return format(FeatureMismatch(so.dim, d, t.problem));
    for (uint32_t i = 0; i < so.rows; ++i) {
      if (softmax) {
        if (!IsClass(so.y[i], classes)) return format(NotAClass(i, classes));
      } else if (binary ? (so.y[i] != 1.0f && so.y[i] != -1.0f) : !Finite(so.y[i])) {
        return format(LogLine().add("example ").add_u(i).add(binary ? ": label is not -1/+1 (binary logistic regression; a shard in place must store -1/+1)" : ": label is not a finite number"));
      }
    }
    *x = so.x;
    *y = so.y;
    *rows = so.rows;
    return so.rows == 0 ? "the device holds no examples" : nullptr;
  }
  if (!store_sealed && so.pull != nullptr) {
    if (d > so.store_dim)
      return format(LogLine().add("the task's examples have ").add_u(d).add(" features, more than this device's sample store (").add_u(so.store_dim).add(")"));
    store_dim = d;
    store_rows = 0;
    for (;;) {
      const bool full = store_rows == so.store_rows;
      float* xi = full ? nullptr : store_x + static_cast<size_t>(store_rows) * d;
      const int r = so.pull(so.pull_ctx, store_rows, xi, d, full ? nullptr : store_y + store_rows);
      if (r == 0) break;
      if (r < 0) return format(LogLine().add("example ").add_u(store_rows).add(": the sample callback failed"));
      if (full)
        return format(LogLine().add("the device holds more examples than its sample store (").add_u(so.store_rows).add(")"));
      for (uint32_t k = 0; k <= d; ++k)
        if (!Finite(k < d ? xi[k] : store_y[store_rows]))
          return format(LogLine().add("example ").add_u(store_rows).add(k < d ? ", feature " : ", label").add(k < d ? "" : "")
                            .add_u(k < d ? k : 0).add(": not a finite number (NaN and Inf are refused)"));
      ++store_rows;
    }
    store_sealed = true;
  }
  if (!store_sealed && so.store_rows == 0) return "this device holds no own samples: its data is a provisioned problem image";
  if (!store_sealed) {
    need_samples = true;
    return nullptr;
  }
  if (store_rows == 0) return "the device holds no examples";
  if (store_dim != d) return format(FeatureMismatch(store_dim, d, t.problem));
  if (softmax)
    for (uint32_t i = 0; i < store_rows; ++i)
      if (!IsClass(store_y[i], classes)) return format(NotAClass(i, classes));
  if (binary)
    for (uint32_t i = 0; i < store_rows; ++i) {
      float& l = store_y[i];
      if (l == 0.0f) l = -1.0f;
      if (l != 1.0f && l != -1.0f)
        return format(LogLine().add("example ").add_u(i).add(": label is not a class of binary logistic regression (0/1 or -1/+1)"));
    }
  *x = store_x;
  *y = store_y;
  *rows = store_rows;
  return nullptr;
}

Status FwClient::feed(const float* x, uint32_t dim, float y) {
  if (impl_ == nullptr) return Status::FailedPrecondition("fw client: not initialised");
  Impl& m = *impl_;
  const SampleOptions& so = m.opt.samples;
  if (m.store_sealed) return Status::FailedPrecondition("feed: the samples are complete (feed_done was called)");
  if (x == nullptr || dim == 0) return Status::InvalidArgument("feed: no features");
  if (m.store_rows == 0) {
    if (dim > so.store_dim) return Status::ResourceExhausted("feed: more features than the sample store's dimension");
    m.store_dim = dim;
  } else if (dim != m.store_dim) {
    return Status::InvalidArgument("feed: an example with another number of features than the first one");
  }
  if (m.store_rows >= so.store_rows) return Status::ResourceExhausted("feed: the sample store is full");
  for (uint32_t k = 0; k <= dim; ++k)
    if (!Finite(k < dim ? x[k] : y))
      return Status::InvalidArgument(m.format(LogLine().add("feed: example ").add_u(m.store_rows).add(k < dim ? ", feature " : ", label ")
                                                  .add_u(k < dim ? k : 0).add(": not a finite number (NaN and Inf are refused)")));
  std::memcpy(m.store_x + static_cast<size_t>(m.store_rows) * dim, x, sizeof(float) * dim);
  m.store_y[m.store_rows++] = y;
  return Status::Ok();
}

Status FwClient::feed_done() {
  if (impl_ == nullptr) return Status::FailedPrecondition("fw client: not initialised");
  impl_->store_sealed = true;
  return Status::Ok();
}

}  // namespace fedrt::fw
