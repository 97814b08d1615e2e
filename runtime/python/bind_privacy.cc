// The privacy accountant (fedrt/privacy/rdp_accountant.h) for fedrt.privacy.
#include <vector>

#include <pybind11/stl.h>

#include "bindings.h"
#include "fedrt/privacy/rdp_accountant.h"

namespace fedrt::python {

namespace {

std::vector<int> OrdersUpTo(int max_order) {
  std::vector<int> orders;
  for (int a = 2; a <= max_order; ++a) orders.push_back(a);
  return orders;
}

}  // namespace

void BindPrivacy(py::module_& m) {
  m.def("privacy_epsilon",
        [](const std::vector<double>& rates, const std::vector<double>& sigmas, const std::vector<uint64_t>& rounds,
           double delta, int max_order) {
          if (sigmas.size() != rates.size() || rounds.size() != rates.size())
            throw py::value_error("rate, noise_multiplier and rounds need one value per phase");
          std::vector<privacy::Phase> phases;
          for (size_t i = 0; i < rates.size(); ++i) phases.push_back({rates[i], sigmas[i], rounds[i]});
          auto r = privacy::Epsilon(phases, delta, OrdersUpTo(max_order));
          Check(r.status());
          py::dict out;
          out["epsilon"] = r->epsilon;
          out["order"] = r->order;
          out["epsilon_tight"] = r->epsilon_tight;
          out["order_tight"] = r->order_tight;
          return out;
        });
  m.def("privacy_noise_multiplier", [](double epsilon, double rate, uint64_t rounds, double delta, bool tight,
                                       int max_order) {
    auto s = privacy::NoiseMultiplierFor(epsilon, rate, rounds, delta,
                                         tight ? privacy::Conversion::kTight : privacy::Conversion::kClassic,
                                         OrdersUpTo(max_order));
    Check(s.status());
    return *s;
  });
}

}  // namespace fedrt::python
