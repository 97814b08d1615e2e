#pragma once
// Run outputs (docs/simulate.md, "Outputs"): metrics.csv (a row per algorithm, run
// and round), summary.json (settings, seeds, exact solution, per-algorithm
// statistics), model_<algorithm>.npy (the final iterates) and the plots
// error.png, loss.png and accuracy.png, one per quantity the run has (drawn
// by scripts/plot_run.py).

#include <string>
#include <vector>

#include "fedrt/core/status.h"
#include "fedrt/report/results.h"

namespace fedrt::report {

// summary.json's content: settings, seeds, the problem, per-algorithm statistics.
nlohmann::json SummaryJson(const SimResult& result);

// metrics.csv's optional columns: train_loss/local_loss (own data) and
// test_loss/test_accuracy (a held-out set), epsilon (DP-FedAvg, [privacy]),
// clip (adaptive clipping: the clip C_t round t used; row 0 C_0), present
// when any algorithm has them.
struct MetricsColumns {
  bool train = false, test = false, epsilon = false, clip = false;
};
MetricsColumns OptionalMetricsColumns(const SimResult& result);
// v[run][t], or NaN where a run has no such row.
double MetricsCell(const std::vector<std::vector<double>>& v, size_t run, size_t t);

Status WriteMetricsCsv(const SimResult& result, const std::string& path);
Status WriteSummaryJson(const SimResult& result, const std::string& path);
// model_<algorithm>.npy in `dir` for every algorithm: its final reported
// iterate of every run (report/npy.h; shape (runs, d), float64).
Status WriteModels(const SimResult& result, const std::string& dir);
// Runs the plotter (scripts/plot_run.py) on `dir`; returns an error saying why when it cannot.
Status RenderPlots(const std::string& dir);
// The plots in `dir` among error.png, loss.png and accuracy.png, in that order.
std::vector<std::string> PlotFiles(const std::string& dir);
// Creates `dir` and writes all the files; a plot failure is reported in
// `plot_status` but does not fail the run.
Status WriteOutputs(const SimResult& result, const std::string& dir, Status* plot_status);

}  // namespace fedrt::report
