#pragma once
// The privacy accountant of DP-FedAvg (docs/privacy-accounting.md): Renyi differential
// privacy (RDP) of the Poisson-subsampled Gaussian mechanism at integer
// orders, composed over rounds and phases, converted to (epsilon, delta), and
// its inverse (the noise multiplier that reaches a target epsilon). Host code:
// errors are Status values whose message names the parameter (rate,
// noise_multiplier, rounds, delta, epsilon, orders), never exceptions.

#include <cstdint>
#include <vector>

#include "fedrt/core/status.h"

namespace fedrt::privacy {

// The orders 2..256, the accountant's default.
std::vector<int> DefaultOrders();

// RDP of one step at integer order alpha >= 2: rate q in (0, 1], noise
// multiplier sigma >= 0 (sigma = 0: infinity).
Result<double> SampledGaussianRdp(double rate, double noise_multiplier, int order);

// A run of `rounds` identical steps.
struct Phase {
  double rate = 1.0;
  double noise_multiplier = 1.0;
  uint64_t rounds = 1;
};

// The phases' RDP added up, one value per order (infinity where unbounded).
Result<std::vector<double>> ComposeRdp(const std::vector<Phase>& phases, const std::vector<int>& orders);

// How RDP becomes (epsilon, delta): kClassic is min over orders of
// rdp + log(1/delta)/(alpha-1); kTight subtracts what the sharper bound of
// docs/privacy-accounting.md ("From RDP to (epsilon, delta)") allows.
enum class Conversion { kClassic, kTight };

// Epsilon at one delta by both conversions, with the order each one took.
struct EpsilonReport {
  double epsilon = 0;        // classic
  int order = 0;
  double epsilon_tight = 0;  // tight (never above the classic one)
  int order_tight = 0;
};

// (epsilon, delta) from composed RDP values at `orders` (delta in (0, 1)).
Result<EpsilonReport> EpsilonFromRdp(const std::vector<double>& rdp, const std::vector<int>& orders, double delta);

// Epsilon after the phases, at delta, over `orders` (default 2..256).
Result<EpsilonReport> Epsilon(const std::vector<Phase>& phases, double delta,
                              const std::vector<int>& orders = DefaultOrders());

// The smallest noise multiplier whose epsilon (by `conversion`) after `rounds`
// rounds at `rate` is at most `epsilon` at `delta` (to 1e-9 relative, rounded up).
Result<double> NoiseMultiplierFor(double epsilon, double rate, uint64_t rounds, double delta,
                                  Conversion conversion = Conversion::kClassic,
                                  const std::vector<int>& orders = DefaultOrders());

// The epsilon no noise can go below at `delta` with `orders`: the limit as
// the noise multiplier grows without bound.
Result<double> EpsilonFloor(double delta, Conversion conversion, const std::vector<int>& orders = DefaultOrders());

// Incremental accounting for a coordinator: rounds are added one phase at a
// time; epsilon and the best order can be read after each, and a round can
// be checked against the budget before it runs.
class RdpAccountant {
 public:
  // delta in (0, 1); epsilon_budget > 0 (infinity: no budget).
  static Result<RdpAccountant> Create(double delta, double epsilon_budget,
                                      Conversion budget_conversion = Conversion::kClassic,
                                      const std::vector<int>& orders = DefaultOrders());

  // Adds `rounds` rounds at `rate` with `noise_multiplier`.
  Status AddRounds(double rate, double noise_multiplier, uint64_t rounds = 1);
  // Epsilon spent so far (0 before any round).
  EpsilonReport Spent() const;
  // Whether one more round at (rate, noise_multiplier) would take epsilon
  // (by the budget's conversion) above the budget.
  Result<bool> NextRoundExceedsBudget(double rate, double noise_multiplier) const;

  uint64_t rounds() const { return rounds_; }
  double delta() const { return delta_; }
  double epsilon_budget() const { return budget_; }
  const std::vector<int>& orders() const { return orders_; }
  const std::vector<double>& rdp() const { return rdp_; }

 private:
  RdpAccountant() = default;
  std::vector<int> orders_;
  std::vector<double> rdp_;
  double delta_ = 0, budget_ = 0;
  Conversion conversion_ = Conversion::kClassic;
  uint64_t rounds_ = 0;
};

}  // namespace fedrt::privacy
