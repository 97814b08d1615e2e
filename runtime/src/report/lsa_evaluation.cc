// Evaluation of the federated LSA / TD(0) family (docs/algorithms.md 1.1-1.3,
// 6): error ||theta_t - theta*||^2, FedLSA's predicted bias.
#include "fedrt/report/family_evaluations.h"

#include <fmt/format.h>

#include "fedrt/analysis/fedlsa_bias.h"
#include "fedrt/report/settings_json.h"

namespace fedrt::report {

namespace {

class LsaEvaluation : public Evaluation {
 public:
  LsaEvaluation(const task::Task& t, const problems::DataFiles& f, const problems::Instance& i)
      : task_(t), files_(f), inst_(i), agents_(i.td()->lsa.agents()), dim_(i.td()->lsa.dim),
        linear_system_(i.td()->linear_system()), theta_star_(i.td()->lsa.theta_star),
        delta_het_(analysis::DeltaHet(i.td()->lsa)),
        bias_(analysis::PredictFedLsaBias(i.td()->lsa, t.hyper.step, t.hyper.local_steps, t.rounds)) {}

  void describe(SimResult& out) const override {
    const task::ProblemSpec& p = inst_.problem();
    const task::GarnetSpec& g = p.garnet;
    out.problem.agents = agents_;
    out.problem.dim = dim_;
    out.problem.theta_star = theta_star_;
    out.problem.delta_het = delta_het_;
    out.problem.oracle_atoms_max = inst_.max_alias_atoms();
    out.settings = {{"comm_prob", task_.hyper.comm_prob},
                    {"noise_free", g.noise_free},
                    {"aggregation", "uniform mean over the agents that reported"},
                    {"payload", "raw float64, d values per message (framing not counted)"},
                    {"initial_iterate", "theta_star + (1, ..., 1)"}};
    if (task_.compression.enabled()) {
      out.settings["payload"] =
          "encoded bytes of the compressed update difference theta_{t,H}^c - theta_t (bits = 8 * bytes)";
      out.settings["compression"] = CompressionJson(task_.compression, dim_);
    }
    if (task_.secagg.enabled)
      out.settings["secure_aggregation"] = SecAggJson(task_.secagg, p.agents, task_.compression.quantizer.bits);
    const char* het = g.heterogeneity == task::Heterogeneity::kHigh ? "high" : "low";
    if (p.own_data) {
      out.settings.update({{"train", files_.shards.train}, {"gamma", g.gamma}, {"train_loss", "mean squared TD error"}});
      out.problem.description =
          fmt::format("federated TD(0) on the agents' own transitions '{}', d={}, gamma={}", files_.shards.train, p.dim,
                      g.gamma);
    } else if (p.kind == task::ProblemKind::kBundle) {
      out.settings["problem_file"] = files_.bundle;
      if (linear_system_) {
        out.settings["oracle"] = "A_c(Z) = Abar_c + sigma_a[c] G, b_c(Z) = bbar_c + sigma_b[c] g, G and g standard Gaussian";
        out.problem.description = fmt::format("federated linear system from '{}', d={}", files_.bundle, p.dim);
      } else {
        out.problem.description = fmt::format("federated TD(0) from '{}'", files_.bundle);
      }
    } else {
      out.settings.update({{"heterogeneity", het},
                           {"states", g.states},
                           {"actions", g.actions},
                           {"branching", g.branching},
                           {"gamma", g.gamma},
                           {"epsilon", g.epsilon}});
      out.problem.description =
          fmt::format("Garnet TD(0), {} heterogeneity, {} states, {} actions, branching {}, d={}, gamma={}", het,
                      g.states, g.actions, g.branching, p.dim, g.gamma);
    }
  }

  double initial_error() const override { return SquaredDistance(inst_.initial_iterate().data(), theta_star_); }
  double error(const protocol::ServerCore& core) const override { return SquaredDistance(core.model(), theta_star_); }
  bool concurrent_runs() const override { return true; }  // no per-run state

  void algorithm_finished(size_t a, AlgorithmResult& res) override {
    if (task_.algorithms[a].kind == task::AlgorithmKind::kFedLsa) {
      if (task_.participation >= 1.0) {
        res.predicted_bias_sq = bias_.after_rounds.squaredNorm();
        res.predicted_bias_sq_stationary = bias_.stationary.squaredNorm();
      }
    } else {
      res.predicted_bias_sq = 0.0;  // control variates remove the heterogeneity bias
      res.predicted_bias_sq_stationary = 0.0;
    }
  }

 private:
  const task::Task& task_;
  problems::DataFiles files_;
  const problems::Instance& inst_;
  // What the evaluation needs of the agents' systems, taken once: a
  // coordinator then frees them (problems::Instance::drop_agents).
  int agents_, dim_;
  bool linear_system_;
  Eigen::VectorXd theta_star_;
  double delta_het_;
  analysis::FedLsaBias bias_;
};

}  // namespace

std::unique_ptr<Evaluation> MakeLsaEvaluation(const task::Task& task, const problems::DataFiles& files,
                                              const problems::Instance& instance) {
  return std::make_unique<LsaEvaluation>(task, files, instance);
}

double SquaredDistance(const double* x, const Eigen::VectorXd& star) {
  double e = 0.0;
  for (int i = 0; i < star.size(); ++i) {
    const double d = x[i] - star[i];
    e += d * d;
  }
  return e;
}

}  // namespace fedrt::report
