// Device-code discipline of the client session (protocol/client_session.h):
// compiled with -fno-exceptions -fno-rtti, every family (LSA, optimisation
// with Fed-RR and a compressed uplink with memory, FedEM with its initial
// exchange) runs rounds of announcements and results with no heap allocation
// after init (malloc is counted, Eigen's runtime check is on). The
// announcements and results are written here, as a server would send them.
// Plain main(): GoogleTest itself needs exceptions and the heap.

#include <cstdio>
#include <cstdlib>

#include "fedrt/core/arena.h"
#include "fedrt/protocol/client_session.h"

#if defined(__cpp_exceptions) || defined(__GXX_RTTI)
#error "device code must build with -fno-exceptions -fno-rtti"
#endif

#include "alloc_counter.h"

using namespace fedrt;
using task::AlgorithmKind;

namespace {

int failures = 0;
bool g_inject_allocation = false;  // --self-check: prove the counter sees a heap allocation
void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "FAIL: %s\n", what);
    ++failures;
  }
}

constexpr int kStates = 4, kDim = 8, kSamples = 12, kPoints = 20;
double phi[kStates * kDim];
const double reward[kStates] = {0.3, -0.2, 0.7, 0.1};
const double joint[kStates * kStates] = {0.05, 0.20, 0, 0, 0, 0.1, 0.15, 0, 0.1, 0, 0, 0.15, 0.25, 0, 0, 0};

template <class S>
struct Data {
  S x[kSamples * kDim], y[kSamples], points[kPoints * 2];
  Data() {
    for (int j = 0; j < kSamples; ++j) {
      for (int k = 0; k < kDim; ++k) x[j * kDim + k] = S(((j * 5 + k * 3) % 7) - 3) / S(4) + S(j % kDim == k);
      y[j] = S(0.1) * S(j) - S(0.4);
    }
    for (int i = 0; i < kPoints * 2; ++i) points[i] = S((i * 37 % 11) - 5) / S(2);
  }
};

template <class S>
void RunTask(const char* name, task::Task task, const problems::LocalProblem<S>& problem) {
  using Session = protocol::ClientSession<S>;
  StaticArena<1 << 16> arena;
  typename Session::Options o;
  o.task = &task;
  o.agent = 3;
  o.problem = problem;
  Session s;
  Status st = s.init(arena, o);
  Check(st.ok(), "the session fits its arena");
  if (!st.ok()) {
    std::fprintf(stderr, "%s: %s\n", name, st.message());
    return;
  }
  const int b = s.shape().broadcast_dim;
  double model[4 * kDim] = {};
  for (int i = 0; i < b; ++i) model[i] = 0.25 + 0.01 * i;
  const long before = g_allocations;
  protocol::ClientMessage out;
  uint32_t first = 0;
  if (task.algorithms[0].kind == AlgorithmKind::kFedEm) {  // the initial exchange of V_{0,c}
    protocol::Announcement a;
    a.id = protocol::RoundId{0, 0, protocol::kInitRound};
    a.kind = protocol::WorkKind::kInitialStatistic;
    a.model = protocol::View<double>{model, static_cast<uint32_t>(b)};
    Check(s.on_announce(a, out).ok() && out.kind == protocol::MessageKind::kUpdate, "initial exchange");
    protocol::RoundResult r;
    r.id = a.id;
    r.included = true;
    Check(s.on_result(r).ok(), "initial exchange commits");
  }
  for (uint32_t t = first; t < 5; ++t) {
    protocol::Announcement a;
    a.id = protocol::RoundId{0, 0, t};
    a.local_steps = 20;
    a.model = protocol::View<double>{model, static_cast<uint32_t>(b)};
    Check(s.on_announce(a, out).ok() && out.kind == protocol::MessageKind::kUpdate, "announcement answered");
    protocol::RoundResult r;
    r.id = a.id;
    r.included = t != 2;  // round 2: not aggregated, discarded
    r.model = protocol::View<double>{model, static_cast<uint32_t>(kDim)};
    Check(s.on_result(r).ok(), "round result taken");
    if (g_inject_allocation) {
      void* volatile p = std::malloc(16);  // volatile: the compiler may not elide the pair
      std::free(p);
    }
  }
  const long used = g_allocations - before;
  if (used != 0) std::fprintf(stderr, "%s: %ld heap allocations\n", name, used);
  Check(used == 0, "no heap allocation during rounds");
  std::printf("%s: workspace %zu bytes (WorkspaceBytes %zu), persistent state %zu bytes\n", name, arena.used(),
              Session::WorkspaceBytes(task, 0), s.state_size());
  Check(arena.used() <= Session::WorkspaceBytes(task, 0), "WorkspaceBytes bounds what init uses");
}

task::Task BaseTask(task::ProblemKind kind, AlgorithmKind alg, bool rr) {
  task::Task t;
  t.problem.kind = kind;
  t.problem.agents = 10;
  t.problem.dim = kind == task::ProblemKind::kGmm ? 6 : kDim;
  t.problem.gmm.components = 2;
  t.problem.gmm.data_dim = 2;
  t.num_algorithms = 1;
  t.algorithms[0] = task::AlgorithmChoice{alg, rr};
  t.hyper.step = 0.05;
  t.hyper.local_steps = 20;
  t.hyper.batch = 3;
  return t;
}

template <class S>
void RunAll(const char* scalar) {
  StaticArena<16384> arena;
  Data<S> data;
  auto td = problems::TdOracle<S>::create(arena, kDim, kStates, 0.95, phi, reward, joint);
  auto lsq = problems::LeastSquaresOracle<S>::create(arena, kDim, kSamples, data.x, data.y, S(1));
  auto gmm = problems::GmmOracle<S>::create(data.points, kPoints, 2, 2);
  Check(td.ok() && lsq.ok() && gmm.ok(), "oracles fit the arena");
  problems::LocalProblem<S> p;
  p.td = &*td;
  p.least_squares = &*lsq;
  p.gmm = &*gmm;
  char name[96];
  for (AlgorithmKind k : {AlgorithmKind::kFedLsa, AlgorithmKind::kScaffLsa}) {
    std::snprintf(name, sizeof name, "%s %s", scalar, k == AlgorithmKind::kFedLsa ? "fedlsa" : "scafflsa");
    RunTask<S>(name, BaseTask(task::ProblemKind::kGarnet, k, false), p);
  }
  task::Task scaffold = BaseTask(task::ProblemKind::kLeastSquares, AlgorithmKind::kScaffold, true);
  scaffold.compression.quantizer.kind = compression::QuantizerKind::kDither;
  scaffold.compression.control_variates = true;
  std::snprintf(name, sizeof name, "%s scaffold-rr, dithered uplink with memory", scalar);
  RunTask<S>(name, scaffold, p);
  task::Task em = BaseTask(task::ProblemKind::kGmm, AlgorithmKind::kFedEm, false);
  em.compression.quantizer.kind = compression::QuantizerKind::kRounding;
  std::snprintf(name, sizeof name, "%s fedem, rounding uplink", scalar);
  RunTask<S>(name, em, p);
}

}  // namespace

int main(int argc, char** argv) {
  g_inject_allocation = argc > 1 && argv[1][0] == '-';
  for (int s = 0; s < kStates; ++s) {
    double sum = 0;
    for (int i = 0; i < kDim; ++i) sum += (phi[s * kDim + i] = 1.0 + ((s * 7 + i * 3) % 5));
    for (int i = 0; i < kDim; ++i) phi[s * kDim + i] /= sum;
  }
#if defined(EIGEN_RUNTIME_NO_MALLOC)
  Eigen::internal::set_is_malloc_allowed(false);
#endif
  RunAll<double>("double");
  RunAll<float>("float");
  std::printf("%d passed, %d failed\n", failures == 0 ? 1 : 0, failures == 0 ? 0 : 1);
  return failures == 0 ? 0 : 1;
}
