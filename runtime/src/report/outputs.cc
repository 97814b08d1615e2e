#include "fedrt/report/outputs.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fedrt/task/names.h"
#include "fedrt/report/npy.h"

namespace fedrt::report {

using task::ProblemKind;

namespace {


// Common settings, then the family's own (which may add or refine keys).
nlohmann::json Settings(const SimResult& r) {
  const ExperimentConfig& c = r.config;
  nlohmann::json s;
  s["problem"] = task::ProblemKindName(c.problem);
  s["agents"] = r.problem.agents;
  s["dim"] = r.problem.dim;
  std::string names;
  for (const AlgorithmResult& a : r.algorithms) names += (names.empty() ? "" : ",") + a.name;
  s["algorithms"] = names;
  s["step"] = c.step;
  s["local_steps"] = c.local_steps;
  s["participation"] = c.participation;
  s["rounds"] = c.rounds;
  s["runs"] = c.runs;
  s["threads"] = r.threads;
  s.update(r.settings);
  return s;
}

double Mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0.0 : s / static_cast<double>(v.size());
}
double Std(const std::vector<double>& v) {
  if (v.size() < 2) return 0.0;
  const double m = Mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size() - 1));
}

}  // namespace

MetricsColumns OptionalMetricsColumns(const SimResult& r) {
  MetricsColumns c;
  for (const AlgorithmResult& a : r.algorithms) {
    c.train = c.train || !a.train_loss.empty();
    c.test = c.test || !a.test_loss.empty();
    c.epsilon = c.epsilon || !a.epsilon.empty();
    c.clip = c.clip || !a.clip.empty();
  }
  return c;
}

double MetricsCell(const std::vector<std::vector<double>>& v, size_t run, size_t t) {
  return run < v.size() && t < v[run].size() ? v[run][t] : std::nan("");
}

Status WriteMetricsCsv(const SimResult& r, const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return Status(StatusCode::kPermissionDenied, fmt::format("cannot write '{}'", path));
  const auto [train, test, epsilon, clip] = OptionalMetricsColumns(r);
  bool time = false;  // the virtual clock's column (docs/async.md)
  for (const AlgorithmResult& a : r.algorithms) time = time || !a.time_s.empty();
  std::fprintf(f, "algorithm,run,round,error,agents,bits_up,bits_down%s%s%s%s%s\n", train ? ",train_loss,local_loss" : "",
               test ? ",test_loss,test_accuracy" : "", epsilon ? ",epsilon" : "", clip ? ",clip" : "", time ? ",time_s" : "");
  for (const AlgorithmResult& a : r.algorithms) {
    const char* name = a.name.c_str();
    for (size_t run = 0; run < a.error.size(); ++run)
      for (size_t t = 0; t < a.error[run].size(); ++t) {
        std::fprintf(f, "%s,%zu,%zu,%.17g,%u,%llu,%llu", name, run, t, a.error[run][t], a.agents[run][t],
                     static_cast<unsigned long long>(a.bits_up[run][t]),
                     static_cast<unsigned long long>(a.bits_down[run][t]));
        if (train) std::fprintf(f, ",%.17g,%.17g", MetricsCell(a.train_loss, run, t), MetricsCell(a.local_loss, run, t));
        if (test) std::fprintf(f, ",%.17g,%.17g", MetricsCell(a.test_loss, run, t), MetricsCell(a.test_accuracy, run, t));
        if (epsilon) std::fprintf(f, ",%.17g", MetricsCell(a.epsilon, run, t));
        if (clip) std::fprintf(f, ",%.17g", MetricsCell(a.clip, run, t));
        if (time) std::fprintf(f, ",%.17g", MetricsCell(a.time_s, run, t));
        std::fputc('\n', f);
      }
  }
  const bool ok = std::fclose(f) == 0;
  if (!ok) return Status(StatusCode::kDataLoss, fmt::format("error writing '{}'", path));
  return Status::Ok();
}

nlohmann::json SummaryJson(const SimResult& r) {
  nlohmann::json j;
  j["settings"] = Settings(r);
  j["error_metric"] = r.error_metric;
  j["error_label"] = r.error_label;
  j["seeds"] = {{"seed", r.config.seed},
                {"problem_seed", r.config.effective_problem_seed()},
                {"streams", "counter-based, keyed by (seed, run, agent, round, stream)"}};
  j["problem"] = {{"description", r.problem.description}, {"agents", r.problem.agents}, {"dim", r.problem.dim}};
  // No solution for a user model or a coordinator without the shards: nothing to compare with.
  if (r.problem.theta_star.size() > 0) {
    j["problem"]["delta_het"] = r.problem.delta_het;
    j["problem"]["theta_star_norm_sq"] = r.problem.theta_star.squaredNorm();
  }
  j["problem"].update(r.problem.extra);
  if (r.problem.theta_star.size() == r.problem.dim)
    j["theta_star"] = std::vector<double>(r.problem.theta_star.data(), r.problem.theta_star.data() + r.problem.dim);
  nlohmann::json algs = nlohmann::json::object();
  for (const AlgorithmResult& a : r.algorithms) {
    std::vector<double> finals;
    uint64_t up = 0, down = 0;
    for (size_t run = 0; run < a.error.size(); ++run) {
      finals.push_back(a.error[run].back());
      for (auto b : a.bits_up[run]) up += b;
      for (auto b : a.bits_down[run]) down += b;
    }
    nlohmann::json e;
    e["final_error_mean"] = Mean(finals);
    e["final_error_std"] = Std(finals);
    e["final_error_per_run"] = finals;
    e["predicted_bias_sq"] = a.predicted_bias_sq ? nlohmann::json(*a.predicted_bias_sq) : nlohmann::json(nullptr);
    e["predicted_bias_sq_stationary"] =
        a.predicted_bias_sq_stationary ? nlohmann::json(*a.predicted_bias_sq_stationary) : nlohmann::json(nullptr);
    const size_t runs = a.error.size() ? a.error.size() : 1;
    e["bits_up"] = up / runs;  // per run
    e["bits_down"] = down / runs;
    // The last row's reports and test scores, averaged over runs.
    auto final_mean = [](const std::vector<std::vector<double>>& v) -> nlohmann::json {
      std::vector<double> last;
      for (const auto& run : v)
        if (!run.empty() && !std::isnan(run.back())) last.push_back(run.back());
      return last.empty() ? nlohmann::json(nullptr) : nlohmann::json(Mean(last));
    };
    if (!a.train_loss.empty()) {
      e["final_train_loss"] = final_mean(a.train_loss);
      e["final_local_loss"] = final_mean(a.local_loss);
    }
    if (!a.test_loss.empty()) {
      e["final_test_loss"] = final_mean(a.test_loss);
      e["final_test_accuracy"] = final_mean(a.test_accuracy);
    }
    e["wall_seconds"] = a.wall_seconds;
    e["agent_steps"] = a.agent_steps;
    e["agent_steps_per_second"] = a.wall_seconds > 0 ? static_cast<double>(a.agent_steps) / a.wall_seconds : 0.0;
    e.update(a.extra);
    algs[a.name] = e;
  }
  j["algorithms"] = algs;
  return j;
}

Status WriteSummaryJson(const SimResult& r, const std::string& path) {
  const nlohmann::json j = SummaryJson(r);
  std::ofstream out(path);
  if (!out) return Status(StatusCode::kPermissionDenied, fmt::format("cannot write '{}'", path));
  out << j.dump(2) << "\n";
  if (!out) return Status(StatusCode::kDataLoss, fmt::format("error writing '{}'", path));
  return Status::Ok();
}

Status WriteModels(const SimResult& r, const std::string& dir) {
  for (const AlgorithmResult& a : r.algorithms)
    FEDRT_TRY(WriteNpy(fmt::format("{}/model_{}.npy", dir, a.name), a.final_theta, static_cast<size_t>(r.problem.dim)));
  return Status::Ok();
}

// The plot script: $FEDRT_PLOT_SCRIPT, else the installed copy next to the
// running program (PREFIX/bin/x -> PREFIX/share/fedrt/plot_run.py, see
// docs/install.md), else the source tree's scripts/plot_run.py.
static std::string PlotScript() {
  if (const char* env_script = std::getenv("FEDRT_PLOT_SCRIPT")) return env_script;
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const std::filesystem::path installed = exe.parent_path().parent_path() / "share" / "fedrt" / "plot_run.py";
    if (std::filesystem::exists(installed, ec)) return installed.string();
  }
  return FEDRT_PLOT_SCRIPT;
}

Status RenderPlots(const std::string& dir) {
  const char* env_python = std::getenv("FEDRT_PYTHON");
  const std::string script = PlotScript();
  const std::string python = env_python ? env_python : FEDRT_PYTHON;
  if (python.empty()) return Status(StatusCode::kUnavailable, std::string("no python3 with matplotlib (install python3-matplotlib)"));
  if (!std::filesystem::exists(script))
    return Status(StatusCode::kNotFound, fmt::format("plot script '{}' not found (set FEDRT_PLOT_SCRIPT)", script));
  auto quote = [](const std::string& s) {
    std::string q = "'";
    for (char ch : s) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    return q + "'";
  };
  const std::string cmd = quote(python) + " " + quote(script) + " " + quote(dir);
  const int rc = std::system(cmd.c_str());
  if (rc != 0) return Status(StatusCode::kInternal, fmt::format("plot script failed (exit {})", WEXITSTATUS(rc)));
  return Status::Ok();
}

std::vector<std::string> PlotFiles(const std::string& dir) {
  std::vector<std::string> files;
  for (const char* name : {"error.png", "loss.png", "accuracy.png"})
    if (std::filesystem::exists(dir + "/" + name)) files.emplace_back(name);
  return files;
}

Status WriteOutputs(const SimResult& r, const std::string& dir, Status* plot_status) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status(StatusCode::kPermissionDenied, fmt::format("cannot create output directory '{}': {}", dir, ec.message()));
  FEDRT_TRY(WriteMetricsCsv(r, dir + "/metrics.csv"));
  FEDRT_TRY(WriteSummaryJson(r, dir + "/summary.json"));
  FEDRT_TRY(WriteModels(r, dir));
  if (plot_status) *plot_status = r.config.plot ? RenderPlots(dir) : Status::Ok();
  return Status::Ok();
}

}  // namespace fedrt::report
