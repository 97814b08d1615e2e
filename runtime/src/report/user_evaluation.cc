// Evaluation of a user-defined model (docs/user-models.md): the coordinator
// and the report have no code for the model, so the error metric is NaN in
// every round; the devices' reports (train_loss, local_loss: f_c at the
// broadcast and after the local steps, aggregated by the coordinator) are the
// run's measure of progress.
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "fedrt/report/family_evaluations.h"
#include "fedrt/report/settings_json.h"

namespace fedrt::report {

namespace {

class UserEvaluation : public Evaluation {
 public:
  UserEvaluation(const task::Task& t, const problems::DataFiles& f) : task_(t), train_(f.shards.train),
      init_(f.initial.empty() ? "x_0 = 0" : "x_0 = model.init") {}

  void describe(SimResult& out) const override {
    const int d = static_cast<int>(task_.problem.dim);
    out.error_metric = "none (a user model: the coordinator cannot evaluate it; see train_loss)";
    out.error_label = "error (not available for a user model)";
    out.problem.agents = static_cast<int>(task_.problem.agents);
    out.problem.dim = d;
    out.problem.description =
        fmt::format("user-defined model (d={}) trained on the devices' own shards '{}'", d, train_);
    const uint32_t batch = task_.hyper.batch;
    out.settings = {{"batch", batch},
                    {"gradients", batch == 0 ? "full" : fmt::format("mini-batch of {} (with replacement)", batch)},
                    {"prox_mu", task_.hyper.prox_mu},
                    {"server_step", task_.hyper.server_step},
                    {"aggregation", "uniform mean over the agents that reported"},
                    {"payload", "raw float64: d values per message (2d for Scaffold), framing not counted"},
                    {"initial_iterate", init_}};
    if (task_.compression.enabled()) out.settings["compression"] = CompressionJson(task_.compression, d);
    if (task_.secagg.enabled)
      out.settings["secure_aggregation"] =
          SecAggJson(task_.secagg, task_.problem.agents, task_.compression.quantizer.bits);
  }
  double initial_error() const override { return std::numeric_limits<double>::quiet_NaN(); }
  double error(const protocol::ServerCore&) const override { return std::numeric_limits<double>::quiet_NaN(); }
  bool concurrent_runs() const override { return true; }  // no per-run state

 private:
  const task::Task& task_;
  std::string train_, init_;
};

}  // namespace

std::unique_ptr<Evaluation> MakeUserEvaluation(const task::Task& task, const problems::DataFiles& files) {
  return std::make_unique<UserEvaluation>(task, files);
}

}  // namespace fedrt::report
