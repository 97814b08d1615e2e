#pragma once
// ClientWork: the client cores of one algorithm of a task and the layout of
// its messages (docs/architecture.md, "Families"). Per family:
//   LSA (FedLSA, SCAFFLSA):  broadcast theta_t (d); one segment theta_{t,H}^c,
//                            coded relative to theta_t; commit xi_c with theta_{t+1}
//   optimisation:            broadcast per chain x_t (and c for Scaffold); one
//                            segment per chain (dx, and dc for Scaffold),
//                            coded as is; commit Scaffold's c_c
//   EM (FedEM, VR-FedEM):    broadcast Shat_k and T(Shat_k); one segment
//                            S_{k,c}, coded relative to Shat_k with the
//                            memory V_c; the initial exchange sends V_{0,c}
// Fed-RR runs two chains (steps gamma and 2 gamma) on the same samples.
// Device code: cores carved from an Arena, no heap, no virtual calls.

#include <cstdint>
#include <cstring>

#include "fedrt/algorithms/fedem.h"
#include "fedrt/algorithms/fedopt.h"
#include "fedrt/algorithms/lsa.h"
#include "fedrt/task/task.h"
#include "fedrt/core/types.h"
#include "fedrt/problems/local_problem.h"
#include "fedrt/problems/td_block.h"
#include "fedrt/protocol/families.h"

namespace fedrt::protocol {

template <class S, uint32_t kFamilies = kAllFamilies>
class ClientWork {
 public:
  static constexpr bool kLsa = Has(kFamilies, task::Family::kLsa);
  static constexpr bool kOpt = Has(kFamilies, task::Family::kOpt);
  static constexpr bool kEm = Has(kFamilies, task::Family::kEm);

  // Vector lengths of algorithm `a` of `task`.
  struct Shape {
    task::Family family = task::Family::kLsa;
    int dim = 0;           // d (EM: the statistic's G (1 + p))
    uint32_t chains = 1;   // segments of an update (2 for Fed-RR)
    int segment_dim = 0;   // scalars per segment
    int broadcast_dim = 0; // scalars of the broadcast
  };
  static Shape ShapeOf(const task::Task& task, task::AlgorithmChoice a) {
    Shape s;
    s.family = task::FamilyOf(a.kind);
    s.dim = static_cast<int>(task.problem.dim);
    s.chains = s.family == task::Family::kOpt && a.rr ? 2u : 1u;
    s.segment_dim = a.kind == task::AlgorithmKind::kScaffold ? 2 * s.dim : s.dim;
    s.broadcast_dim = s.family == task::Family::kEm ? 2 * s.dim : static_cast<int>(s.chains) * s.segment_dim;
    return s;
  }

  static size_t ArenaBytes(const task::Task& task, task::AlgorithmChoice a) {
    const Shape s = ShapeOf(task, a);
    switch (s.family) {
      case task::Family::kLsa: return algorithms::LsaClient<S>::ArenaBytes(s.dim);
      case task::Family::kOpt: return s.chains * algorithms::FedOptClient<S>::ArenaBytes(s.dim);
      case task::Family::kEm:  // own data: T(S_{k,c}) for the loss report
        return algorithms::FedEmClient<S>::ArenaBytes(s.dim) +
               (task.problem.own_data ? sizeof(S) * static_cast<size_t>(s.dim) + Arena::kAlignment : 0);
    }
    return 0;
  }

  Status create(Arena& arena, const task::Task& task, task::AlgorithmChoice a, uint32_t run) {
    shape_ = ShapeOf(task, a);
    seed_ = task.seed;
    run_ = run;
    kind_ = task.problem.kind;
    report_loss_ = task.problem.own_data;
    batch_ = task.hyper.batch;
    noise_free_ = task.problem.garnet.noise_free;
    const task::HyperSpec& h = task.hyper;
    switch (shape_.family) {
      case task::Family::kLsa:
        if constexpr (kLsa) {
          algorithms::LsaHyper<S> hy;
          hy.algorithm = static_cast<algorithms::LsaAlgorithm>(a.kind);
          hy.step_size = static_cast<S>(h.step);
          hy.local_steps = h.local_steps;
          hy.comm_prob = h.comm_prob;
          auto c = algorithms::LsaClient<S>::create(arena, shape_.dim, hy);
          if (!c.ok()) return c.status();
          lsa_ = *c;
          return Status::Ok();
        }
        break;
      case task::Family::kOpt:
        if constexpr (kOpt) {
          for (uint32_t k = 0; k < shape_.chains; ++k) {
            algorithms::FedOptHyper<S> hy;
            hy.algorithm = static_cast<algorithms::FedOptAlgorithm>(static_cast<unsigned>(a.kind) -
                                                                    static_cast<unsigned>(task::AlgorithmKind::kFedAvg));
            hy.step_size = static_cast<S>(h.step * (k == 0 ? 1.0 : 2.0));  // Fed-RR: gamma, 2 gamma
            hy.local_steps = h.local_steps;
            hy.batch = h.batch;
            hy.prox_mu = static_cast<S>(h.prox_mu);
            hy.server_step = static_cast<S>(h.server_step);
            if (task.privacy.enabled) hy.clip = static_cast<S>(task.privacy.clip);
            auto c = algorithms::FedOptClient<S>::create(arena, shape_.dim, hy);
            if (!c.ok()) return c.status();
            opt_[k] = *c;
          }
          return Status::Ok();
        }
        break;
      case task::Family::kEm:
        if constexpr (kEm) {
          auto c = algorithms::FedEmClient<S>::create(arena, shape_.dim, EmHyperOf(task, a));
          em_vr_ = a.kind == task::AlgorithmKind::kVrFedEm;
          if (!c.ok()) return c.status();
          em_ = *c;
          G_ = static_cast<int>(task.problem.gmm.components);
          p_ = static_cast<int>(task.problem.gmm.data_dim);
          if (report_loss_) {
            auto t = arena.allocate<S>(static_cast<size_t>(shape_.dim));
            if (!t.ok()) return t.status();
            local_theta_ = t->data;
          }
          return Status::Ok();
        }
        break;
    }
    return Status::Unimplemented("this device build does not include the task's algorithm family");
  }

  const Shape& shape() const { return shape_; }

  // Adaptive clipping (docs/privacy.md): the announced clip C_t for this
  // round's run(), and afterwards its clip indicator (Update.clip_indicator:
  // 2 if ||dx|| <= C_t, else 1).
  void set_clip(double clip) {
    if constexpr (kOpt)
      for (uint32_t k = 0; k < shape_.chains; ++k) opt_[k].set_clip(static_cast<S>(clip));
  }
  uint8_t clip_indicator() const {
    if constexpr (kOpt) return opt_[0].within_clip() ? 2 : 1;
    return 0;
  }

  // Local work from `broadcast` (broadcast_dim scalars). Writes, per chain,
  // the value to send (`value[k]`) and what it is coded relative to
  // (`start[k]`, null = zero). Returns the samples drawn.
  uint64_t run(const S* broadcast, uint32_t round, uint32_t local_steps, uint32_t agent, const problems::LocalProblem<S>& p,
               const S* value[], const S* start[]) {
    uint64_t samples = 0;
    if constexpr (kLsa) {
      if (shape_.family == task::Family::kLsa) {
        algorithms::RoundPlan plan;
        plan.round = round;
        plan.local_steps = local_steps;
        lsa_.begin_round(broadcast, plan);
        // The generator is created inside the dispatched kernel so that its
        // state stays in a register (a captured reference would be stored
        // every step and force theta to be reloaded).
        const uint64_t key = RngKey(seed_, run_, agent, round, RngStream::kLocalSteps);
        if (report_loss_) {  // own transitions: the mean squared TD error before and after
          loss_before_ = p.td->mean_squared_td_error(broadcast);
          examples_ = local_steps;
        }
        DispatchDim(shape_.dim, [this, key, &p](auto tag) {
          constexpr int D = decltype(tag)::value;
          CounterRng rng(key);
          if (noise_free_ || p.expected != nullptr) lsa_.template run_local_steps<D>(*p.expected, rng);
          else lsa_.template run_local_steps<D>(*p.td, rng);
        });
        if (report_loss_) loss_after_ = p.td->mean_squared_td_error(lsa_.update());
        value[0] = lsa_.update();
        start[0] = broadcast;
        return local_steps;
      }
    }
    if constexpr (kOpt) {
      if (shape_.family == task::Family::kOpt) {
        for (uint32_t k = 0; k < shape_.chains; ++k) {
          algorithms::RoundPlan plan;
          plan.round = round;
          plan.local_steps = local_steps;
          opt_[k].begin_round(broadcast + k * shape_.segment_dim, plan);
          // Both Fed-RR chains see the same samples Z (common random numbers).
          CounterRng rng(seed_, run_, agent, round, RngStream::kLocalSteps);
          if (report_loss_ && k == 0) {
            loss_before_ = Loss(p, broadcast);
            examples_ = static_cast<uint64_t>(local_steps) * (batch_ > 0 ? batch_ : Samples(p));
          }
          if (kind_ == task::ProblemKind::kLogistic) opt_[k].run_local_steps(*p.logistic, rng);
          else if (kind_ == task::ProblemKind::kSoftmax) opt_[k].run_local_steps(*p.softmax, rng);
          else if (kind_ == task::ProblemKind::kUser) opt_[k].run_local_steps(*p.user, rng);
          else opt_[k].run_local_steps(*p.least_squares, rng);
          if (report_loss_ && k == 0) loss_after_ = Loss(p, opt_[0].local_iterate());
          value[k] = opt_[k].update();
          start[k] = nullptr;
          samples += local_steps;
        }
        return samples;
      }
    }
    if constexpr (kEm) {
      if (shape_.family == task::Family::kEm) {
        CounterRng rng(seed_, run_, agent, round, RngStream::kLocalSteps);
        if (report_loss_) {  // own points: the mean NLL at T(Shat_k) and at the local M-step T(S_{k,c})
          loss_before_ = p.gmm->nll(broadcast + shape_.dim);
        }
        samples = em_.compute_statistic(*p.gmm, broadcast + shape_.dim, round, rng);
        if (report_loss_) {
          problems::GmmMStep(em_.statistic(), G_, p_, local_theta_);
          loss_after_ = p.gmm->nll(local_theta_);
          examples_ = samples;  // per-point statistic evaluations
        }
        value[0] = em_.statistic();
        start[0] = broadcast;  // Shat_k
        return samples;
      }
    }
    return samples;
  }

  // Host lane kernels (sim/td_lanes.h) run the TD(0) local steps of several
  // agents at once: run() in three parts. Whether this round's run() is a
  // plain TD(0) block (LSA family, sampled transitions, no loss report).
  bool td_block_possible(const problems::LocalProblem<S>& p) const {
    if constexpr (kLsa)
      return shape_.family == task::Family::kLsa && !report_loss_ && !noise_free_ && p.expected == nullptr &&
             p.td != nullptr;
    return false;
  }
  // run()'s start: theta_{t,0}^c = theta_t; `block` describes the H steps.
  void begin_td_block(const S* broadcast, uint32_t round, uint32_t local_steps, uint32_t agent,
                      const problems::LocalProblem<S>& p, problems::TdBlock<S>& block) {
    if constexpr (kLsa) {
      algorithms::RoundPlan plan;
      plan.round = round;
      plan.local_steps = local_steps;
      lsa_.begin_round(broadcast, plan);
      block.theta = lsa_.mutable_update();
      block.eta_xi = lsa_.eta_control_variate();
      block.oracle = p.td;
      block.key = RngKey(seed_, run_, agent, round, RngStream::kLocalSteps);
      block.steps = local_steps;
      block.eta = lsa_.step_size();
    }
  }
  // run()'s end once the block has run: what run() returns and writes.
  uint64_t finish_td_block(const S* broadcast, uint32_t local_steps, const S* value[], const S* start[]) {
    value[0] = lsa_.update();
    start[0] = broadcast;
    return local_steps;
  }

  // The local objective f_c at the last round's broadcast and local model
  // (own-data tasks: optimisation f_c, TD(0) mean squared TD error, EM mean
  // NLL at T(Shat_k) and T(S_{k,c}); NaN otherwise), for the device's report.
  double loss_before() const { return loss_before_; }
  double loss_after() const { return loss_after_; }
  uint64_t examples() const { return examples_; }

  // FedEM's initial exchange: V_{0,c} from the broadcast (Shat_0, T(Shat_0)).
  uint64_t run_initial(const S* broadcast, const problems::LocalProblem<S>& p, S* v0) {
    if constexpr (kEm) {
      if (shape_.family == task::Family::kEm) {
        em_.init(*p.gmm, broadcast, broadcast + shape_.dim, v0);
        return p.gmm->points();
      }
    }
    return 0;
  }

  // The server aggregated the round: chain k's `sent[k]` (what it reconstructed)
  // and, for the LSA family, the result model theta_{t+1}.
  void commit(const S* const sent[], const S* result_model) {
    if constexpr (kLsa) {
      if (shape_.family == task::Family::kLsa) {
        lsa_.set_sent_update(sent[0]);
        lsa_.apply_global(result_model);
      }
    }
    if constexpr (kOpt) {
      if (shape_.family == task::Family::kOpt)
        for (uint32_t k = 0; k < shape_.chains; ++k) opt_[k].commit(sent[k]);
    }
  }

  // The parts of the work's arena that carry over from one round to the next
  // (ClientSession::park): xi_c (SCAFFLSA, SCAFFLSA-H1), c_c per chain
  // (Scaffold), S_{k,c} and T(Shat_{k-1}) (VR-FedEM's SPIDER state). Everything
  // else is rewritten by each round before it is read. Writes at most
  // kMaxRestSpans spans to `out` and returns their number.
  static constexpr uint32_t kMaxRestSpans = task::kMaxSegments;
  uint32_t rest_spans(Span<uint8_t>* out) {
    auto bytes = [](S* p, int n) { return Span<uint8_t>{reinterpret_cast<uint8_t*>(p), sizeof(S) * static_cast<size_t>(n)}; };
    uint32_t n = 0;
    if constexpr (kLsa) {
      if (shape_.family == task::Family::kLsa && lsa_.eta_control_variate() != nullptr)
        out[n++] = bytes(lsa_.mutable_control_variate(), shape_.dim);
    }
    if constexpr (kOpt) {
      if (shape_.family == task::Family::kOpt && shape_.segment_dim == 2 * shape_.dim)  // Scaffold
        for (uint32_t k = 0; k < shape_.chains; ++k) out[n++] = bytes(opt_[k].mutable_control_variate(), shape_.dim);
    }
    if constexpr (kEm) {
      if (shape_.family == task::Family::kEm && em_vr_) out[n++] = bytes(em_.mutable_spider_state(), 2 * shape_.dim);
    }
    return n;
  }

  // Whether the round result must carry the model (LSA: theta_{t+1} for xi_c).
  bool result_needs_model() const { return shape_.family == task::Family::kLsa; }

  static algorithms::EmHyper<S> EmHyperOf(const task::Task& t, task::AlgorithmChoice a) {
    algorithms::EmHyper<S> hy;
    hy.algorithm = static_cast<algorithms::EmAlgorithm>(static_cast<unsigned>(a.kind) -
                                                        static_cast<unsigned>(task::AlgorithmKind::kFedEm));
    hy.step = static_cast<S>(t.hyper.em_step);
    hy.participation = t.participation;
    hy.batch = t.hyper.batch;
    hy.inner_iters = t.hyper.inner_iters;
    hy.quantizer = t.compression.quantizer;
    return hy;
  }

 private:
  double Loss(const problems::LocalProblem<S>& p, const S* x) const {
    if (kind_ == task::ProblemKind::kLogistic) return static_cast<double>(p.logistic->loss(x));
    if (kind_ == task::ProblemKind::kSoftmax) return static_cast<double>(p.softmax->loss(x));
    if (kind_ == task::ProblemKind::kLeastSquares) return static_cast<double>(p.least_squares->loss(x));
    if (kind_ == task::ProblemKind::kUser) return static_cast<double>(p.user->loss(x));
    return kNaN;
  }
  uint64_t Samples(const problems::LocalProblem<S>& p) const {
    if (kind_ == task::ProblemKind::kLogistic) return p.logistic->samples();
    if (kind_ == task::ProblemKind::kSoftmax) return p.softmax->samples();
    if (kind_ == task::ProblemKind::kLeastSquares) return p.least_squares->samples();
    if (kind_ == task::ProblemKind::kUser) return p.user->samples();
    return 0;
  }
  static constexpr double kNaN = __builtin_nan("");

  Shape shape_{};
  bool report_loss_ = false;
  double loss_before_ = kNaN, loss_after_ = kNaN;
  uint64_t examples_ = 0;
  uint32_t batch_ = 0;
  uint64_t seed_ = 0;
  uint32_t run_ = 0;
  task::ProblemKind kind_ = task::ProblemKind::kGarnet;
  bool noise_free_ = false;
  int G_ = 0, p_ = 0;          // EM: components and data dimension
  bool em_vr_ = false;         // VR-FedEM: S_{k,c} carries over between rounds
  S* local_theta_ = nullptr;   // EM on own data: T(S_{k,c}) (arena)
  algorithms::LsaClient<S> lsa_;
  algorithms::FedOptClient<S> opt_[task::kMaxSegments];
  algorithms::FedEmClient<S> em_;
};

}  // namespace fedrt::protocol
