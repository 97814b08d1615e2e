#include "fedrt/privacy/run_budget.h"

#include <cmath>

#include <fmt/format.h>

namespace fedrt::privacy {

Result<RunBudget> RunBudget::Create(double delta, std::optional<double> budget, double rate, double noise_multiplier,
                                    uint32_t rounds) {
  return Create(delta, budget, rate, [noise_multiplier](uint32_t) { return noise_multiplier; }, rounds);
}

Result<RunBudget> RunBudget::Create(double delta, std::optional<double> budget, double rate, RoundSigma sigma,
                                    uint32_t rounds) {
  auto acc = RdpAccountant::Create(delta, budget.value_or(HUGE_VAL));
  if (!acc.ok()) return acc.status();
  if (budget) {
    const double noise_multiplier = sigma(0);
    auto over = acc->NextRoundExceedsBudget(rate, noise_multiplier);
    if (!over.ok()) return over.status();
    if (*over) {
      auto one = Epsilon({{rate, noise_multiplier, 1}}, delta);
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("privacy.epsilon_budget {} is below the epsilon of a single round ({:.6g} at rate {}, "
                                "noise_multiplier {}, delta {}): no round can run",
                                *budget, one.ok() ? one->epsilon : HUGE_VAL, rate, noise_multiplier, delta));
    }
  }
  RunBudget b(std::move(*acc));
  b.rate_ = rate;
  b.sigma_ = std::move(sigma);
  b.rounds_ = rounds;
  return b;
}

Result<double> RunBudget::CloseRound(std::optional<double> sigma) {
  FEDRT_TRY(accountant_.AddRounds(rate_, sigma ? *sigma : sigma_(closed_)));
  ++closed_;
  const double eps = accountant_.Spent().epsilon;
  if (stop_.empty() && closed_ < rounds_) {
    auto over = accountant_.NextRoundExceedsBudget(rate_, sigma_(closed_));
    if (!over.ok()) return over.status();
    if (*over)
      stop_ = fmt::format("stopped after round {} of {}: round {} would take epsilon from {:.6g} past "
                          "privacy.epsilon_budget {}",
                          closed_, rounds_, closed_ + 1, eps, accountant_.epsilon_budget());
  }
  return eps;
}

Result<uint32_t> RunBudget::RoundsAllowed(double delta, std::optional<double> budget, double rate,
                                          double noise_multiplier, uint32_t rounds) {
  return RoundsAllowed(delta, budget, rate, [noise_multiplier](uint32_t) { return noise_multiplier; }, rounds);
}

Result<uint32_t> RunBudget::RoundsAllowed(double delta, std::optional<double> budget, double rate, RoundSigma sigma,
                                          uint32_t rounds) {
  if (!budget) return rounds;
  auto b = Create(delta, budget, rate, std::move(sigma), rounds);
  if (!b.ok()) return b.status();
  while (b->rounds_closed() < rounds && b->stop().empty()) {
    auto eps = b->CloseRound();
    if (!eps.ok()) return eps.status();
  }
  return b->rounds_closed();
}

}  // namespace fedrt::privacy
