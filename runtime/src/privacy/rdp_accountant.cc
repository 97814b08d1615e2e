// RDP of the Poisson-subsampled Gaussian mechanism at integer orders, its
// composition and conversion to (epsilon, delta) (docs/privacy-accounting.md).
#include "fedrt/privacy/rdp_accountant.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace fedrt::privacy {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int kMaxOrder = 4096;

Status CheckRate(double rate) {
  if (!(rate > 0.0 && rate <= 1.0)) return Status::Invalid(fmt::format("rate must be in (0, 1], got {}", rate));
  return Status::Ok();
}

Status CheckNoise(double sigma) {
  if (!(sigma >= 0.0) || !std::isfinite(sigma))
    return Status::Invalid(fmt::format("noise_multiplier must be a finite number >= 0, got {}", sigma));
  return Status::Ok();
}

Status CheckRounds(uint64_t rounds) {
  if (rounds < 1) return Status::Invalid("rounds must be at least 1, got 0");
  return Status::Ok();
}

Status CheckDelta(double delta) {
  if (!(delta > 0.0 && delta < 1.0)) return Status::Invalid(fmt::format("delta must be in (0, 1), got {}", delta));
  return Status::Ok();
}

Status CheckOrders(const std::vector<int>& orders) {
  if (orders.empty()) return Status::Invalid("orders must name at least one order");
  for (int a : orders)
    if (a < 2 || a > kMaxOrder)
      return Status::Invalid(fmt::format("orders must be integers from 2 to {}, got {}", kMaxOrder, a));
  return Status::Ok();
}

// log(exp(x) - 1) for x > 0, without overflow for large x.
double LogExpm1(double x) { return x > 30.0 ? x + std::log1p(-std::exp(-x)) : std::log(std::expm1(x)); }

// log C(n, k).
double LogChoose(int n, int k) {
  return std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(static_cast<double>(n - k) + 1.0);
}

// RDP of one step, arguments already checked. A_alpha - 1 is a sum of
// positive terms (k = 0 and k = 1 contribute exactly their binomial weight,
// which sums with the rest to 1), so log A_alpha = log1p(A_alpha - 1) keeps
// its precision when A_alpha is close to 1 (small rate, large noise).
double RdpOfStep(double q, double sigma, int alpha) {
  if (sigma == 0.0) return kInf;
  const double inv2s2 = 1.0 / (2.0 * sigma * sigma);
  if (q == 1.0) return alpha * inv2s2;
  const double log_q = std::log(q), log_1mq = std::log1p(-q);
  std::vector<double> terms;
  terms.reserve(static_cast<size_t>(alpha));
  double top = -kInf;
  for (int k = 2; k <= alpha; ++k) {
    const double e = static_cast<double>(k) * (k - 1) * inv2s2;
    if (std::isinf(e)) return kInf;
    const double t = LogChoose(alpha, k) + (alpha - k) * log_1mq + k * log_q + LogExpm1(e);
    terms.push_back(t);
    top = std::max(top, t);
  }
  if (top == -kInf) return 0.0;  // every term underflowed: A_alpha = 1 to double precision
  double sum = 0.0;
  for (double t : terms) sum += std::exp(t - top);
  const double log_am1 = top + std::log(sum);  // log(A_alpha - 1)
  const double log_a = log_am1 > 0.0 ? log_am1 + std::log1p(std::exp(-log_am1)) : std::log1p(std::exp(log_am1));
  return log_a / (alpha - 1);
}

double Convert(double rdp, int alpha, double delta, Conversion c) {
  const double a = alpha;
  if (c == Conversion::kClassic) return rdp + std::log(1.0 / delta) / (a - 1.0);
  return std::max(0.0, rdp + std::log1p(-1.0 / a) - (std::log(delta) + std::log(a)) / (a - 1.0));
}

double Pick(const EpsilonReport& r, Conversion c) { return c == Conversion::kClassic ? r.epsilon : r.epsilon_tight; }

}  // namespace

std::vector<int> DefaultOrders() {
  std::vector<int> orders;
  for (int a = 2; a <= 256; ++a) orders.push_back(a);
  return orders;
}

Result<double> SampledGaussianRdp(double rate, double noise_multiplier, int order) {
  FEDRT_TRY(CheckRate(rate));
  FEDRT_TRY(CheckNoise(noise_multiplier));
  FEDRT_TRY(CheckOrders({order}));
  return RdpOfStep(rate, noise_multiplier, order);
}

Result<std::vector<double>> ComposeRdp(const std::vector<Phase>& phases, const std::vector<int>& orders) {
  FEDRT_TRY(CheckOrders(orders));
  std::vector<double> rdp(orders.size(), 0.0);
  for (const Phase& p : phases) {
    FEDRT_TRY(CheckRate(p.rate));
    FEDRT_TRY(CheckNoise(p.noise_multiplier));
    FEDRT_TRY(CheckRounds(p.rounds));
    for (size_t i = 0; i < orders.size(); ++i)
      rdp[i] += static_cast<double>(p.rounds) * RdpOfStep(p.rate, p.noise_multiplier, orders[i]);
  }
  return rdp;
}

Result<EpsilonReport> EpsilonFromRdp(const std::vector<double>& rdp, const std::vector<int>& orders, double delta) {
  FEDRT_TRY(CheckOrders(orders));
  FEDRT_TRY(CheckDelta(delta));
  if (rdp.size() != orders.size())
    return Status::Invalid(fmt::format("rdp has {} values for {} orders", rdp.size(), orders.size()));
  EpsilonReport r{kInf, 0, kInf, 0};
  for (size_t i = 0; i < orders.size(); ++i) {
    if (std::isnan(rdp[i]) || rdp[i] < 0.0)
      return Status::Invalid(fmt::format("rdp at order {} is {}", orders[i], rdp[i]));
    if (std::isinf(rdp[i])) continue;
    const double c = Convert(rdp[i], orders[i], delta, Conversion::kClassic);
    const double t = Convert(rdp[i], orders[i], delta, Conversion::kTight);
    if (c < r.epsilon) r.epsilon = c, r.order = orders[i];
    if (t < r.epsilon_tight) r.epsilon_tight = t, r.order_tight = orders[i];
  }
  return r;
}

Result<EpsilonReport> Epsilon(const std::vector<Phase>& phases, double delta, const std::vector<int>& orders) {
  FEDRT_TRY(CheckDelta(delta));
  FEDRT_ASSIGN_OR_RETURN(std::vector<double> rdp, ComposeRdp(phases, orders));
  return EpsilonFromRdp(rdp, orders, delta);
}

Result<double> EpsilonFloor(double delta, Conversion conversion, const std::vector<int>& orders) {
  FEDRT_TRY(CheckDelta(delta));
  FEDRT_TRY(CheckOrders(orders));
  double floor = kInf;
  for (int a : orders) floor = std::min(floor, Convert(0.0, a, delta, conversion));
  return floor;
}

Result<double> NoiseMultiplierFor(double epsilon, double rate, uint64_t rounds, double delta, Conversion conversion,
                                  const std::vector<int>& orders) {
  if (!(epsilon > 0.0) || !std::isfinite(epsilon))
    return Status::Invalid(fmt::format("epsilon must be a positive number, got {}", epsilon));
  FEDRT_TRY(CheckRate(rate));
  FEDRT_TRY(CheckRounds(rounds));
  FEDRT_TRY(CheckDelta(delta));
  FEDRT_TRY(CheckOrders(orders));
  FEDRT_ASSIGN_OR_RETURN(const double floor, EpsilonFloor(delta, conversion, orders));
  if (epsilon <= floor)
    return Status(StatusCode::kFailedPrecondition,
                  fmt::format("epsilon {} cannot be reached at delta {} with orders up to {}: no noise multiplier "
                              "gets epsilon below {:.6g}",
                              epsilon, delta, *std::max_element(orders.begin(), orders.end()), floor));
  const std::vector<Phase> one{{rate, 1.0, rounds}};
  auto eps_at = [&](double sigma) {
    std::vector<Phase> p = one;
    p[0].noise_multiplier = sigma;
    auto r = Epsilon(p, delta, orders);
    return r.ok() ? Pick(*r, conversion) : kInf;
  };
  // Epsilon falls as sigma grows (every order's RDP does): bracket, then bisect.
  double lo = 1.0, hi = 1.0;
  if (eps_at(1.0) > epsilon) {
    while (eps_at(hi) > epsilon) {
      lo = hi;
      hi *= 2.0;
      if (hi > 1e30)
        return Status(StatusCode::kFailedPrecondition,
                      fmt::format("epsilon {} needs a noise multiplier above 1e30", epsilon));
    }
  } else {
    while (eps_at(lo) <= epsilon) {
      hi = lo;
      lo /= 2.0;
      if (lo < 1e-30) return hi;
    }
  }
  while (hi / lo - 1.0 > 1e-10) {
    const double mid = std::sqrt(lo * hi);
    (eps_at(mid) > epsilon ? lo : hi) = mid;
  }
  return hi;
}

Result<RdpAccountant> RdpAccountant::Create(double delta, double epsilon_budget, Conversion budget_conversion,
                                            const std::vector<int>& orders) {
  FEDRT_TRY(CheckDelta(delta));
  FEDRT_TRY(CheckOrders(orders));
  if (!(epsilon_budget > 0.0))
    return Status::Invalid(fmt::format("epsilon_budget must be positive, got {}", epsilon_budget));
  RdpAccountant a;
  a.orders_ = orders;
  a.rdp_.assign(orders.size(), 0.0);
  a.delta_ = delta;
  a.budget_ = epsilon_budget;
  a.conversion_ = budget_conversion;
  return a;
}

Status RdpAccountant::AddRounds(double rate, double noise_multiplier, uint64_t rounds) {
  FEDRT_ASSIGN_OR_RETURN(std::vector<double> add, ComposeRdp({{rate, noise_multiplier, rounds}}, orders_));
  for (size_t i = 0; i < rdp_.size(); ++i) rdp_[i] += add[i];
  rounds_ += rounds;
  return Status::Ok();
}

EpsilonReport RdpAccountant::Spent() const {
  if (rounds_ == 0) return EpsilonReport{};
  auto r = EpsilonFromRdp(rdp_, orders_, delta_);  // checked at Create and AddRounds
  return r.ok() ? *r : EpsilonReport{kInf, 0, kInf, 0};
}

Result<bool> RdpAccountant::NextRoundExceedsBudget(double rate, double noise_multiplier) const {
  FEDRT_ASSIGN_OR_RETURN(std::vector<double> next, ComposeRdp({{rate, noise_multiplier, 1}}, orders_));
  for (size_t i = 0; i < next.size(); ++i) next[i] += rdp_[i];
  FEDRT_ASSIGN_OR_RETURN(EpsilonReport r, EpsilonFromRdp(next, orders_, delta_));
  return Pick(r, conversion_) > budget_;
}

}  // namespace fedrt::privacy
