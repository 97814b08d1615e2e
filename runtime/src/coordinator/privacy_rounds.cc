#include "fedrt/coordinator/privacy_rounds.h"

#include <memory>

#include "fedrt/coordinator/log.h"
#include "fedrt/privacy/gaussian_noise.h"

namespace fedrt::net {

Status PrivacyRounds::init(const config::PrivacySettings& settings, const task::Task& task,
                           const std::vector<std::string>& names) {
  on_ = task.privacy.enabled;
  rounds_ = allowed_ = task.rounds;
  if (!on_) return Status::Ok();
  settings_ = settings;
  rate_ = task.participation;
  sigma_ = task.privacy.noise_multiplier;
  runs_ = task.runs;
  names_ = names;
  auto allowed = privacy::RunBudget::RoundsAllowed(settings.delta, settings.epsilon_budget, rate_, sigma_, rounds_);
  if (!allowed.ok()) return allowed.status();
  allowed_ = *allowed;
  auto adaptive = config::AdaptiveClipFor(settings, rate_, task.problem.agents, task.secagg.enabled);
  if (!adaptive.ok()) return adaptive.status();
  adaptive_ = *adaptive;
  ledgers_.assign(static_cast<size_t>(task.num_algorithms) * runs_, std::nullopt);
  if (settings.test_seed)
    CoordinatorWarn("privacy test_seed={}: the noise is reproducible and the run is NOT private", *settings.test_seed);
  if (allowed_ < rounds_)
    CoordinatorLog("privacy epsilon_budget={} allows {} of {} rounds per run", *settings.epsilon_budget, allowed_,
                   rounds_);
  return Status::Ok();
}

PrivacyRounds::Noise PrivacyRounds::noise(uint32_t algorithm, uint32_t run, uint32_t closed, size_t per_round) const {
  auto source = std::make_shared<privacy::GaussianNoise>(
      settings_.test_seed ? privacy::GaussianNoise::Seeded(*settings_.test_seed, run, algorithm)
                          : privacy::GaussianNoise::Cryptographic());
  if (source->seeded() && closed > 0) {  // the draws of the committed rounds, as the simulator made them
    std::vector<double> skip(per_round + (adaptive_.on() ? 1 : 0));  // adaptive clipping: the count's draw
    for (uint32_t t = 0; t < closed; ++t) (void)source->Fill(skip.data(), skip.size());
  }
  return [source](double* out, size_t n) { return source->Fill(out, n); };
}

Result<double> PrivacyRounds::closed(uint32_t algorithm, uint32_t run, uint32_t t, double clip) {
  std::optional<privacy::RunBudget>& ledger = ledgers_[static_cast<size_t>(algorithm) * runs_ + run];
  if (!ledger) {
    auto b = privacy::RunBudget::Create(settings_.delta, settings_.epsilon_budget, rate_, sigma_, rounds_);
    if (!b.ok()) return b.status();
    ledger.emplace(std::move(*b));
  }
  while (ledger->rounds_closed() < t) {  // rounds committed before a restart
    auto eps = ledger->CloseRound();
    if (!eps.ok()) return eps.status();
  }
  auto eps = ledger->CloseRound();
  if (!eps.ok()) return eps.status();
  const std::string& name = names_[algorithm];
  if (adaptive_.on())
    CoordinatorLog("privacy alg={} run={} round={} epsilon={:.6g} delta={} clip={:.6g}", name, run, t + 1, *eps,
                   settings_.delta, clip);
  else
    CoordinatorLog("privacy alg={} run={} round={} epsilon={:.6g} delta={}", name, run, t + 1, *eps, settings_.delta);
  if (settings_.test_seed)  // every round, so no excerpt of the log hides it (docs/privacy.md)
    CoordinatorWarn("privacy alg={} run={} round={}: privacy.test_seed is set: the noise is reproducible and the run "
                    "is NOT private",
                    name, run, t + 1);
  if (!ledger->stop().empty()) CoordinatorWarn("privacy_stop alg={} run={}: {}", name, run, ledger->stop());
  return *eps;
}

}  // namespace fedrt::net
