#include "fedrt/problems/gmm_data.h"

#include <cmath>

#include "fedrt/core/rng.h"

namespace fedrt::problems {

namespace {
// Box-Muller standard normal from the counter RNG.
double Normal(CounterRng& rng) {
  const double u1 = 1.0 - rng.uniform(), u2 = rng.uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}
}  // namespace

Result<GmmData> GenerateGmm(const task::ProblemSpec& spec) {
  const task::GmmSpec& s = spec.gmm;
  if (s.components < 1 || s.data_dim < 1 || s.points < 1 || spec.agents < 1)
    return Status::InvalidArgument("gmm: components, data dimension, points and agents must be positive");
  GmmData d;
  d.G = static_cast<int>(s.components);
  d.p = static_cast<int>(s.data_dim);
  d.dim = d.G * (1 + d.p);
  d.n = spec.agents;
  d.m = s.points;
  d.true_params = Eigen::VectorXd::Zero(d.dim);
  for (int g = 0; g < d.G; ++g) {
    double* mu = d.true_params.data() + d.G + g * d.p;
    if (d.p == 1) {
      mu[0] = s.separation * (g - 0.5 * (d.G - 1));
    } else {
      const double a = 6.283185307179586 * g / d.G;
      mu[0] = 0.5 * s.separation * std::cos(a);
      mu[1] = 0.5 * s.separation * std::sin(a);
    }
  }
  std::vector<double> w(static_cast<size_t>(d.G));
  for (uint32_t c = 0; c < d.n; ++c) {
    const int own = static_cast<int>(c % static_cast<uint32_t>(d.G));
    for (int g = 0; g < d.G; ++g) w[g] = d.G == 1 ? 1.0 : (g == own ? s.own_weight : (1 - s.own_weight) / (d.G - 1));
    CounterRng rng(spec.seed, 0, c, 0, RngStream::kProblem);
    std::vector<double> pts(static_cast<size_t>(d.m) * d.p);
    for (uint32_t i = 0; i < d.m; ++i) {
      double u = rng.uniform(), acc = 0;
      int z = d.G - 1;
      for (int g = 0; g < d.G; ++g) {
        acc += w[g];
        if (u < acc) {
          z = g;
          break;
        }
      }
      d.true_params[z] += 1.0 / (static_cast<double>(d.m) * d.n);
      const double* mu = d.true_params.data() + d.G + z * d.p;
      for (int j = 0; j < d.p; ++j) pts[static_cast<size_t>(i) * d.p + j] = mu[j] + Normal(rng);
    }
    d.points.push_back(std::move(pts));
    d.counts.push_back(d.m);
  }
  return d;
}

uint64_t GmmData::total_points() const {
  uint64_t t = 0;
  for (uint32_t c : counts) t += c;
  return t;
}

std::vector<double> GmmInitialStatistic(const GmmData& d) {
  std::vector<double> theta0(d.dim), shat0(d.dim);
  for (int g = 0; g < d.G; ++g) {
    theta0[g] = 1.0 / d.G;
    for (int j = 0; j < d.p; ++j) theta0[d.G + g * d.p + j] = 0.5 * d.true_params[d.G + g * d.p + j] + 0.5;
  }
  for (int g = 0; g < d.G; ++g) {
    shat0[g] = theta0[g];
    for (int j = 0; j < d.p; ++j) shat0[d.G + g * d.p + j] = theta0[g] * theta0[d.G + g * d.p + j];
  }
  return shat0;
}

}  // namespace fedrt::problems
