// Evaluation of an own-data least squares / logistic / softmax task at a
// coordinator that does not hold the devices' shards ([data]
// coordinator_reads_shards = false, docs/data.md): without the shards there is
// no x_star, so the error metric is NaN in every round (as for a user model);
// the devices' reports (train_loss, local_loss) and, with a data.test file of
// the coordinator's own, the held-out scores of every round's model measure
// progress. Those are the same numbers as with the shards.
#include <cmath>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "fedrt/report/family_evaluations.h"
#include "fedrt/report/held_out.h"
#include "fedrt/report/settings_json.h"

namespace fedrt::report {

namespace {

class BlindEvaluation : public Evaluation {
 public:
  BlindEvaluation(const config::Task& t, const problems::DataFiles& f, const problems::Instance& i)
      : task_(t), train_(f.shards.train), inst_(i) {}

  void set_test(HeldOutSet test) { test_.emplace(std::move(test), task_.rounds); }

  void describe(SimResult& out) const override {
    const config::ProblemSpec& p = task_.problem;
    const int d = static_cast<int>(p.dim);
    const double l2 = p.synthetic.l2;
    out.error_metric = "none (the coordinator does not read the shards: no x_star; see train_loss)";
    out.error_label = "error (not available without the shards)";
    out.problem.agents = static_cast<int>(p.agents);
    out.problem.dim = d;
    const std::string loss = p.kind == config::ProblemKind::kLeastSquares ? std::string("least squares")
                             : p.kind == config::ProblemKind::kSoftmax
                                 ? fmt::format("softmax regression ({} classes{}, l2={})", p.classes,
                                               p.intercept ? ", intercept" : "", l2)
                                 : fmt::format("logistic regression (l2={})", l2);
    out.problem.description = fmt::format("federated {} on the devices' own shards '{}' (not read by the coordinator), d={}",
                                          loss, train_, d);
    out.settings = OptSettingsJson(task_, l2, "uniform mean over the agents that reported");
    out.settings.update({{"data", train_}, {"coordinator_reads_shards", false}});
    if (task_.compression.enabled()) out.settings["compression"] = CompressionJson(task_.compression, d);
    if (task_.secagg.enabled)
      out.settings["secure_aggregation"] = SecAggJson(task_.secagg, p.agents, task_.compression.quantizer.bits);
  }
  double initial_error() const override { return std::numeric_limits<double>::quiet_NaN(); }
  double error(const protocol::ServerCore&) const override { return std::numeric_limits<double>::quiet_NaN(); }
  void round_finished(size_t a, uint32_t run, uint32_t round, const protocol::ServerCore& core) override {
    if (test_) test_->record(a, run, round, core.model());
  }
  void algorithm_finished(size_t a, AlgorithmResult& res) override {
    if (test_) test_->fill(a, task_.runs, inst_.initial_iterate().data(), res);
  }

 private:
  const config::Task& task_;
  std::string train_;
  const problems::Instance& inst_;
  std::optional<HeldOutScores> test_;
};

}  // namespace

Result<std::unique_ptr<Evaluation>> MakeBlindEvaluation(const config::Task& task, const problems::DataFiles& files,
                                                        const problems::Instance& instance) {
  auto e = std::make_unique<BlindEvaluation>(task, files, instance);
  if (!files.test.empty()) {
    auto test = HeldOutSet::Load(task, files.shards, files.test);
    if (!test.ok()) return test.status();
    e->set_test(std::move(*test));
  }
  return std::unique_ptr<Evaluation>(std::move(e));
}

}  // namespace fedrt::report
