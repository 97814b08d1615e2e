#pragma once
// Gaussian mixture with identity covariance (docs/algorithms.md 1.5): one agent's
// data and its conditional sufficient statistics. Device code: the data is
// caller-owned memory, no heap, no exceptions; float or double.
//
// Layouts (both of size G (1 + p)):
//   parameters theta = (pi_1..pi_G, mu_1 (p), ..., mu_G (p))
//   statistics s     = (s^0_1..s^0_G, s^1_1 (p), ..., s^1_G (p)),
//   s_i(theta) = (r_ig, r_ig y_i)_g with responsibilities r_ig.

#include <cmath>
#include <cstdint>

#include "fedrt/core/status.h"

namespace fedrt::problems {

constexpr int kMaxGmmComponents = 64;

// M-step T(s): pi_g = s^0_g / sum_h s^0_h, mu_g = s^1_g / s^0_g (s^0_g floored
// at a tiny positive value so a noisy statistic never divides by zero).
template <class S>
inline void GmmMStep(const S* s, int G, int p, S* theta) {
  const S floor_w = S(1e-12);
  S total = 0;
  for (int g = 0; g < G; ++g) total += s[g] > floor_w ? s[g] : floor_w;
  for (int g = 0; g < G; ++g) {
    const S w = s[g] > floor_w ? s[g] : floor_w;
    theta[g] = w / total;
    for (int j = 0; j < p; ++j) theta[G + g * p + j] = s[G + g * p + j] / w;
  }
}

// The M-step as an object, for the EM cores (algorithms/fedem.h):
// theta = T(shat) for G components of p values.
template <class S>
struct GmmMStepOf {
  int components = 0, data_dim = 0;  // G, p
  void operator()(const S* shat, S* theta) const { GmmMStep(shat, components, data_dim, theta); }
};

template <class S>
class GmmOracle {
 public:
  GmmOracle() = default;

  // `points` rows of `p` values, row-major; not copied (caller keeps it alive).
  static Result<GmmOracle> create(const S* points, uint32_t count, int components, int p) {
    if (components < 1 || components > kMaxGmmComponents)
      return Status::InvalidArgument("gmm oracle: components must be in [1, 64]");
    if (p < 1) return Status::InvalidArgument("gmm oracle: data dimension must be positive");
    if (count == 0 || points == nullptr) return Status::InvalidArgument("gmm oracle: no data");
    GmmOracle o;
    o.y_ = points;
    o.m_ = count;
    o.G_ = components;
    o.p_ = p;
    return o;
  }

  int stat_dim() const { return G_ * (1 + p_); }
  uint32_t points() const { return m_; }

  // acc += w * s_i(theta) for data point i (E-step of one point).
  void add_stat(const S* theta, uint32_t i, S w, S* acc) const {
    const S* y = y_ + static_cast<size_t>(i) * p_;
    S logw[kMaxGmmComponents];
    S mx = -INFINITY;
    for (int g = 0; g < G_; ++g) {
      const S* mu = theta + G_ + g * p_;
      S d2 = 0;
      for (int j = 0; j < p_; ++j) d2 += (y[j] - mu[j]) * (y[j] - mu[j]);
      const S pi = theta[g] > S(1e-30) ? theta[g] : S(1e-30);
      logw[g] = std::log(pi) - S(0.5) * d2;
      if (logw[g] > mx) mx = logw[g];
    }
    S z = 0;
    for (int g = 0; g < G_; ++g) {
      logw[g] = std::exp(logw[g] - mx);
      z += logw[g];
    }
    for (int g = 0; g < G_; ++g) {
      const S r = w * logw[g] / z;
      acc[g] += r;
      S* a1 = acc + G_ + g * p_;
      for (int j = 0; j < p_; ++j) a1[j] += r * y[j];
    }
  }

  // Mean negative log-likelihood of the agent's points at theta:
  // (1/m) sum_i [-log sum_g pi_g exp(-||y_i - mu_g||^2 / 2) + (p/2) log(2 pi)].
  double nll(const S* theta) const {
    double total = 0;
    for (uint32_t i = 0; i < m_; ++i) {
      const S* y = y_ + static_cast<size_t>(i) * p_;
      double logw[kMaxGmmComponents];
      double mx = -INFINITY;
      for (int g = 0; g < G_; ++g) {
        const S* mu = theta + G_ + g * p_;
        double d2 = 0;
        for (int j = 0; j < p_; ++j) d2 += (double(y[j]) - double(mu[j])) * (double(y[j]) - double(mu[j]));
        const double pi = double(theta[g]) > 1e-30 ? double(theta[g]) : 1e-30;
        logw[g] = std::log(pi) - 0.5 * d2;
        if (logw[g] > mx) mx = logw[g];
      }
      double z = 0;
      for (int g = 0; g < G_; ++g) z += std::exp(logw[g] - mx);
      total += -(mx + std::log(z));
    }
    return total / m_ + 0.5 * p_ * 1.8378770664093453;  // log(2 pi)
  }

  // out = sbar_c(theta) = (1/m) sum_i s_i(theta): the full local pass.
  void mean_stat(const S* theta, S* out) const {
    for (int k = 0; k < stat_dim(); ++k) out[k] = 0;
    const S w = S(1) / static_cast<S>(m_);
    for (uint32_t i = 0; i < m_; ++i) add_stat(theta, i, w, out);
  }

 private:
  const S* y_ = nullptr;
  uint32_t m_ = 0;
  int G_ = 0, p_ = 0;
};

}  // namespace fedrt::problems
