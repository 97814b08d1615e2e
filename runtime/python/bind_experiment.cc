// Experiments from Python: a dict with the experiment file's tables (or a
// file and a dict of overrides) becomes a TOML table that the file's own
// reader checks, so every key, type and range error is the file's.

#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <pybind11/stl.h>
#include <toml++/toml.h>

#include "bindings.h"
#include "fedrt/config/class_count.h"
#include "fedrt/config/experiment_toml.h"
#include "fedrt/task/names.h"

namespace fedrt::python {
namespace {

// One Python value as a TOML node; `where` ("run.rounds") names it in errors.
std::unique_ptr<toml::node> ToToml(py::handle v, const std::string& where);

toml::table ToTable(py::handle v, const std::string& where) {
  if (!py::isinstance<py::dict>(v))
    throw py::type_error(fmt::format("{} must be a dict of settings, got {}", where,
                                     std::string(py::str(py::type::of(v).attr("__name__")))));
  toml::table t;
  for (auto item : py::reinterpret_borrow<py::dict>(v)) {
    if (!py::isinstance<py::str>(item.first))
      throw py::type_error(fmt::format("{}: keys must be strings, got {}", where, std::string(py::repr(item.first))));
    const std::string key = py::str(item.first);
    const std::string at = where.empty() ? key : where + "." + key;
    std::unique_ptr<toml::node> n = ToToml(item.second, at);
    if (n) t.insert_or_assign(key, std::move(*n));
  }
  return t;
}

std::unique_ptr<toml::node> ToToml(py::handle v, const std::string& where) {
  if (v.is_none()) throw py::type_error(fmt::format("{} is None: give a value or leave the key out", where));
  if (py::isinstance<py::bool_>(v)) return std::make_unique<toml::value<bool>>(v.cast<bool>());
  if (py::isinstance<py::int_>(v)) {
    long long x = 0;
    try {
      x = v.cast<long long>();
    } catch (const py::cast_error&) {
      throw py::value_error(fmt::format("{} = {} does not fit in 64 bits", where, std::string(py::str(v))));
    }
    return std::make_unique<toml::value<int64_t>>(x);
  }
  if (py::isinstance<py::float_>(v)) return std::make_unique<toml::value<double>>(v.cast<double>());
  if (py::isinstance<py::str>(v)) return std::make_unique<toml::value<std::string>>(v.cast<std::string>());
  if (py::isinstance<py::list>(v)) {
    auto arr = std::make_unique<toml::array>();
    size_t i = 0;
    for (py::handle e : py::reinterpret_borrow<py::list>(v)) arr->push_back(*ToToml(e, fmt::format("{}[{}]", where, i++)));
    return arr;
  }
  if (py::isinstance<py::dict>(v)) return std::make_unique<toml::table>(ToTable(v, where));
  throw py::type_error(fmt::format("{} has type {}: settings are bool, int, float, str, list or dict", where,
                                   std::string(py::str(py::type::of(v).attr("__name__")))));
}

// Tables of `over` replace or extend those of `base`, key by key.
void Merge(toml::table& base, const toml::table& over) {
  for (auto& [k, v] : over) {
    toml::node* b = base.get(k.str());
    if (b && b->is_table() && v.is_table()) Merge(*b->as_table(), *v.as_table());
    else base.insert_or_assign(k, v);
  }
}

// The experiment of a file (path) or of `tables` (named `source`, relative
// paths against `base_dir`), `overrides` merged over it; a problem given as
// arrays (`bundle`: named arrays; `shards`: per-agent examples) named `arrays_name`.
Experiment Load(std::optional<std::string> path, py::dict tables, py::dict overrides, std::string source,
                std::string base_dir, std::optional<py::dict> bundle, std::optional<py::list> shards,
                std::string arrays_name) {
  toml::table root;
  if (path) {
    Check(config::ParseExperimentFile(*path, root));
    source = *path;
    base_dir = std::filesystem::path(*path).parent_path().string();
  } else {
    root = ToTable(tables, "");
  }
  Merge(root, ToTable(overrides, ""));
  Experiment e;
  Check(config::LoadExperimentTable(root, source, base_dir, e.config));
  if (bundle) {
    e.config.problem_arrays = std::make_shared<const problems::ArrayBundle>(BundleOf(*bundle, arrays_name));
    e.config.problem_file = arrays_name;
  }
  if (shards) {
    e.config.data.arrays = std::make_shared<const std::vector<data::Shard>>(ShardsOf(*shards));
    e.config.data.train = arrays_name;
  }
  config::ApplyFamilyDefaults(e.config);
  {  // softmax without model.classes: the simulator reads every shard, so K is counted from the labels
    auto counted = config::CountClasses(e.config, true);
    Check(counted.status());
    if (!counted->empty()) py::module_::import("logging").attr("getLogger")("fedrt").attr("info")(*counted);
  }
  Check(config::Validate(e.config));
  return e;
}

}  // namespace

void BindExperiment(py::module_& m) {
  m.def("experiment_keys", &config::ExperimentKeys, "Every table of an experiment file and the keys it accepts.");
  py::class_<Experiment>(m, "Experiment")
      .def_property_readonly("algorithms", [](const Experiment& e) { return e.config.algorithms; })
      .def_property_readonly("rounds", [](const Experiment& e) { return e.config.rounds; })
      .def_property_readonly("runs", [](const Experiment& e) { return e.config.runs; })
      .def_property_readonly("agents", [](const Experiment& e) { return e.config.garnet.agents; })
      .def_property_readonly("problem", [](const Experiment& e) { return std::string(task::ProblemKindName(e.config.problem)); })
      .def_property_readonly("out", [](const Experiment& e) { return e.config.out; });
  m.def("load_experiment", &Load, py::arg("path"), py::arg("tables"), py::arg("overrides"),
        py::arg("source") = "experiment dict", py::arg("base_dir") = "", py::arg("bundle") = py::none(),
        py::arg("shards") = py::none(), py::arg("arrays_name") = "numpy arrays",
        "An experiment from a TOML file (path) or a dict of its tables, with overrides merged over it; validated.");
}

}  // namespace fedrt::python
