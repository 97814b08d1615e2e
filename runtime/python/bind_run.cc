// fedrt._fedrt.run: the simulator with the GIL released, a Python callback
// after every round, and the results as numpy arrays.

#include <cmath>
#include <new>
#include <optional>

#include <fmt/format.h>
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "fedrt/report/outputs.h"
#include "fedrt/sim/simulator.h"

namespace fedrt::python {
namespace {

using report::AlgorithmResult;
using report::SimResult;

struct RunResult {
  SimResult result;
};

// A (rows, d) float64 array of vectors that all have d entries.
py::array_t<double> Stack(const std::vector<Eigen::VectorXd>& rows, int dim) {
  py::array_t<double> out({static_cast<py::ssize_t>(rows.size()), static_cast<py::ssize_t>(dim)});
  auto w = out.mutable_unchecked<2>();
  for (size_t r = 0; r < rows.size(); ++r)
    for (int i = 0; i < dim; ++i) w(static_cast<py::ssize_t>(r), i) = rows[r][i];
  return out;
}

// metrics.csv as columns (report/outputs.cc writes the same rows, the same
// optional columns, NaN where a row has no value).
py::dict Metrics(const SimResult& r) {
  const report::MetricsColumns cols = report::OptionalMetricsColumns(r);
  const bool train = cols.train, test = cols.test, with_epsilon = cols.epsilon, with_clip = cols.clip;
  size_t rows = 0, name_len = 1;
  for (const AlgorithmResult& a : r.algorithms) {
    for (const auto& e : a.error) rows += e.size();
    name_len = std::max(name_len, a.name.size());
  }
  const auto n = static_cast<py::ssize_t>(rows);
  py::array_t<int64_t> run(n), round(n), agents(n);
  py::array_t<uint64_t> up(n), down(n);
  py::array_t<double> error(n), train_loss(n), local_loss(n), test_loss(n), test_accuracy(n), epsilon(n), clip(n);
  std::vector<std::string> names;
  names.reserve(rows);
  using report::MetricsCell;
  py::ssize_t i = 0;
  for (const AlgorithmResult& a : r.algorithms)
    for (size_t k = 0; k < a.error.size(); ++k)
      for (size_t t = 0; t < a.error[k].size(); ++t, ++i) {
        names.push_back(a.name);
        run.mutable_at(i) = static_cast<int64_t>(k);
        round.mutable_at(i) = static_cast<int64_t>(t);
        error.mutable_at(i) = a.error[k][t];
        agents.mutable_at(i) = a.agents[k][t];
        up.mutable_at(i) = a.bits_up[k][t];
        down.mutable_at(i) = a.bits_down[k][t];
        train_loss.mutable_at(i) = MetricsCell(a.train_loss, k, t);
        local_loss.mutable_at(i) = MetricsCell(a.local_loss, k, t);
        test_loss.mutable_at(i) = MetricsCell(a.test_loss, k, t);
        test_accuracy.mutable_at(i) = MetricsCell(a.test_accuracy, k, t);
        epsilon.mutable_at(i) = MetricsCell(a.epsilon, k, t);
        clip.mutable_at(i) = MetricsCell(a.clip, k, t);
      }
  py::dict m;
  m["algorithm"] = py::module_::import("numpy").attr("array")(names, fmt::format("<U{}", name_len));
  m["run"] = run;
  m["round"] = round;
  m["error"] = error;
  m["agents"] = agents;
  m["bits_up"] = up;
  m["bits_down"] = down;
  if (train) m["train_loss"] = train_loss, m["local_loss"] = local_loss;
  if (test) m["test_loss"] = test_loss, m["test_accuracy"] = test_accuracy;
  if (with_epsilon) m["epsilon"] = epsilon;
  if (with_clip) m["clip"] = clip;
  return m;
}

// Runs the experiment; `callback(algorithm, run, round, error, model)` after
// every round returns False to end that run. Python exceptions (also Ctrl-C)
// raised in the callback stop the experiment and propagate.
RunResult Run(const Experiment& e, std::optional<py::function> callback, bool keep_history) {
  sim::SimOptions opt;
  opt.keep_theta_history = keep_history;
  std::optional<py::error_already_set> raised;
  opt.on_round = [&](const sim::RoundEvent& ev) -> Status {
    py::gil_scoped_acquire gil;
    try {
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
      if (!callback) return Status::Ok();
      py::array_t<double> model(ev.dim, ev.model);
      py::object go = (*callback)(ev.algorithm, ev.run, ev.round, ev.error, model);
      if (!go.is_none() && !go.cast<bool>()) return Status(StatusCode::kCancelled, std::string("stopped by the callback"));
      return Status::Ok();
    } catch (py::error_already_set& err) {
      raised.emplace(std::move(err));
      return Status(StatusCode::kAborted, std::string("the Python callback raised an exception"));
    }
  };
  std::optional<Result<SimResult>> out;
  {
    py::gil_scoped_release nogil;
    try {
      out.emplace(sim::RunExperiment(e.config, opt));
    } catch (const std::bad_alloc&) {
      out.emplace(Status(StatusCode::kResourceExhausted, std::string("out of memory")));
    }
  }
  if (raised) throw std::move(*raised);
  if (!out->ok()) {
    if (out->status().code() == StatusCode::kResourceExhausted)
      throw std::bad_alloc();  // MemoryError
    Raise(out->status());
  }
  return RunResult{out->take()};
}

}  // namespace

void BindRun(py::module_& m) {
  py::class_<RunResult>(m, "RunResult")
      .def("summary_json", [](const RunResult& r) { return report::SummaryJson(r.result).dump(); })
      .def("metrics", [](const RunResult& r) { return Metrics(r.result); })
      .def("models",
           [](const RunResult& r) {
             py::dict d;
             for (const AlgorithmResult& a : r.result.algorithms) d[a.name.c_str()] = Stack(a.final_theta, r.result.problem.dim);
             return d;
           })
      .def("history",
           [](const RunResult& r) {  // algorithm -> [run] (rounds + 1, d)
             py::dict d;
             for (const AlgorithmResult& a : r.result.algorithms) {
               py::list runs;
               for (const auto& h : a.theta_history) runs.append(Stack(h, r.result.problem.dim));
               d[a.name.c_str()] = runs;
             }
             return d;
           })
      .def("theta_star",
           [](const RunResult& r) -> py::object {
             const Eigen::VectorXd& s = r.result.problem.theta_star;
             if (s.size() == 0) return py::none();
             return py::array_t<double>(s.size(), s.data());
           })
      .def("save",
           [](const RunResult& r, const std::string& dir, bool plot) {  // returns why there is no plot, or ""
             Status plot_status;
             Check(report::WriteOutputs(r.result, dir, nullptr));
             if (plot) plot_status = report::RenderPlots(dir);
             return plot_status.ok() ? std::string() : std::string(plot_status.message());
           },
           py::arg("dir"), py::arg("plot"));
  m.def("run", &Run, py::arg("experiment"), py::arg("callback") = py::none(), py::arg("keep_history") = false,
        "Runs every algorithm of the experiment for every run (the simulator, as fedrt-sim).");
}

}  // namespace fedrt::python
