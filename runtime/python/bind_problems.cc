// Problems from numpy arrays (docs/python.md, "Problems from arrays"): array
// bundles (a linear system, a TD(0) problem) and per-agent shards reach the
// simulator in memory, through the same readers and checks as files; the
// generated problems' arrays come back out; the theory of docs/algorithms.md 6.

#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "fedrt/analysis/fedlsa_bias.h"
#include "fedrt/analysis/fedopt_theory.h"
#include "fedrt/config/task_builder.h"
#include "fedrt/problems/array_bundle.h"
#include "fedrt/problems/td_problem.h"

namespace fedrt::python {
namespace {

using Array = py::array_t<double, py::array::c_style | py::array::forcecast>;

py::array_t<double> ToNumpy(const std::vector<double>& values, std::vector<py::ssize_t> shape) {
  py::array_t<double> a(shape);
  if (values.size() != static_cast<size_t>(a.size()))
    throw std::logic_error("fedrt internal error: " + std::to_string(values.size()) + " values for an array of " +
                           std::to_string(a.size()));
  std::copy(values.begin(), values.end(), a.mutable_data());
  return a;
}

problems::NdArray FromNumpy(const std::string& name, const Array& a) {
  problems::NdArray out;
  out.name = name;
  for (py::ssize_t k = 0; k < a.ndim(); ++k) out.shape.push_back(static_cast<size_t>(a.shape(k)));
  out.values.assign(a.data(), a.data() + a.size());
  return out;
}

problems::LsaSystem SystemOf(const Array& abar, const Array& bbar) {
  if (abar.ndim() != 3 || abar.shape(1) != abar.shape(2) || bbar.ndim() != 2 || bbar.shape(0) != abar.shape(0) ||
      bbar.shape(1) != abar.shape(1))
    throw py::value_error("abar must be N x d x d and bbar N x d");
  problems::LsaSystem s;
  const auto n = static_cast<int>(abar.shape(0)), d = static_cast<int>(abar.shape(1));
  s.dim = d;
  for (int c = 0; c < n; ++c) {
    s.abar.emplace_back(Eigen::Map<const problems::MatrixRM>(abar.data() + static_cast<size_t>(c) * d * d, d, d));
    s.bbar.emplace_back(Eigen::Map<const Eigen::VectorXd>(bbar.data() + static_cast<size_t>(c) * d, d));
  }
  return s;
}

py::array_t<double> Vec(const Eigen::VectorXd& v) { return py::array_t<double>(v.size(), v.data()); }

}  // namespace

problems::ArrayBundle BundleOf(const py::dict& arrays, const std::string& source) {
  problems::ArrayBundle b(source);
  for (auto item : arrays) Check(b.add(FromNumpy(py::str(item.first), item.second.cast<Array>())));
  return b;
}

std::vector<data::Shard> ShardsOf(const py::list& shards) {
  std::vector<data::Shard> out;
  for (py::handle h : shards) {
    auto pair = h.cast<py::tuple>();
    const Array x = pair[0].cast<Array>();
    if (x.ndim() != 2) throw py::value_error("a shard's examples must be a 2-D array (examples x features)");
    data::Shard s;
    s.dim = static_cast<uint32_t>(x.shape(1));
    s.x.assign(x.data(), x.data() + x.size());
    if (pair[1].is_none()) {
      s.y.assign(static_cast<size_t>(x.shape(0)), 0.0);
    } else {
      const Array y = pair[1].cast<Array>();
      if (y.ndim() != 1 || y.shape(0) != x.shape(0)) throw py::value_error("a shard's labels must be 1-D, one per example");
      s.y.assign(y.data(), y.data() + y.size());
    }
    out.push_back(std::move(s));
  }
  return out;
}

void BindProblems(py::module_& m) {
  m.def("bundle_text", [](const py::dict& arrays) { return BundleOf(arrays, "arrays").text(); },
        "The array-bundle file text of named arrays (17 significant digits: reads back to the same doubles).");
  m.def("read_bundle",
        [](const std::string& path) {
          auto b = problems::ArrayBundle::load(path);
          Check(b.status());
          py::dict out;
          for (const std::string& name : b->names()) {
            const problems::NdArray* a = b->find(name);
            out[name.c_str()] = ToNumpy(a->values, std::vector<py::ssize_t>(a->shape.begin(), a->shape.end()));
          }
          return out;
        },
        "The arrays of an array-bundle file, by name.");
  m.def("td_arrays",
        [](const Experiment& e) {  // the primitive arrays of the experiment's TD(0) problem (e.g. a Garnet)
          auto inst = config::BuildInstance(e.config);
          Check(inst.status());
          const problems::TdProblem* p = (*inst)->td();
          if (p == nullptr || p->linear_system()) throw py::value_error("the experiment's problem is not a TD(0) problem");
          const auto S = static_cast<py::ssize_t>(p->n_states), A = static_cast<py::ssize_t>(p->n_actions);
          const auto N = static_cast<py::ssize_t>(p->agents()), d = static_cast<py::ssize_t>(p->dim);
          py::dict out;
          out["gamma"] = p->gamma;
          out["features"] = ToNumpy(std::vector<double>(p->phi.data(), p->phi.data() + p->phi.size()), {S, d});
          out["policy"] = ToNumpy(std::vector<double>(p->policy.data(), p->policy.data() + p->policy.size()), {S, A});
          std::vector<double> r, k;
          for (const auto& v : p->reward) r.insert(r.end(), v.data(), v.data() + v.size());
          for (int c = 0; c < p->agents(); ++c) {  // kept, or regenerated from the seed (Garnet)
            const std::vector<double> v = p->agent_kernel(c);
            k.insert(k.end(), v.begin(), v.end());
          }
          out["rewards"] = ToNumpy(r, {N, S});
          out["kernels"] = ToNumpy(k, {N, S, A, S});
          return out;
        });
  m.def("lsa_system",
        [](const py::dict& arrays) {  // Abar_c, bbar_c, theta_c, theta_star of a TD(0) or linear-system bundle
          auto p = problems::TdProblem::from_bundle(BundleOf(arrays, "arrays"));
          Check(p.status());
          const problems::LsaSystem& s = p->lsa;
          const auto N = static_cast<py::ssize_t>(s.agents()), d = static_cast<py::ssize_t>(s.dim);
          std::vector<double> a, b;
          for (const auto& m : s.abar) a.insert(a.end(), m.data(), m.data() + m.size());
          for (const auto& v : s.bbar) b.insert(b.end(), v.data(), v.data() + v.size());
          py::dict out;
          out["abar"] = ToNumpy(a, {N, d, d});
          out["bbar"] = ToNumpy(b, {N, d});
          out["theta_star"] = Vec(s.theta_star);
          return out;
        });
  m.def("gmm_points",
        [](const Experiment& e) {  // every agent's points of the experiment's Gaussian mixture
          auto inst = config::BuildInstance(e.config);
          Check(inst.status());
          const problems::GmmData* g = (*inst)->gmm();
          if (g == nullptr) throw py::value_error("the experiment's problem is not a Gaussian mixture");
          py::list out;
          for (size_t c = 0; c < g->points.size(); ++c)
            out.append(ToNumpy(g->points[c], {static_cast<py::ssize_t>(g->counts[c]), g->p}));
          return out;
        });
  m.def("fedlsa_bias",
        [](const Array& abar, const Array& bbar, double step, long local_steps, long rounds) {
          problems::LsaSystem s = SystemOf(abar, bbar);
          Check(s.solve());
          const analysis::FedLsaBias b = analysis::PredictFedLsaBias(s, step, local_steps, rounds);
          py::dict out;
          out["rho"] = Vec(b.rho);
          out["after_rounds"] = Vec(b.after_rounds);
          out["stationary"] = Vec(b.stationary);
          out["theta_star"] = Vec(s.theta_star);
          return out;
        });
  m.def("fedavg_fixed_point", [](const Array& abar, const Array& bbar, double step, long local_steps) {
    auto x = analysis::FedAvgFixedPoint(SystemOf(abar, bbar), step, local_steps);
    Check(x.status());
    return Vec(*x);
  });
  m.def("fedprox_fixed_point", [](const Array& abar, const Array& bbar, double mu) {
    auto x = analysis::FedProxFixedPoint(SystemOf(abar, bbar), mu);
    Check(x.status());
    return Vec(*x);
  });
}

}  // namespace fedrt::python
