#include "fedrt/coordinator/privacy_rounds.h"

#include <algorithm>
#include <memory>

#include "fedrt/coordinator/log.h"
#include "fedrt/privacy/gaussian_noise.h"
#include "fedrt/protocol/dp_round_sigma.h"

namespace fedrt::net {

Status PrivacyRounds::init(const config::PrivacySettings& settings, const task::Task& task,
                           const std::vector<std::string>& names) {
  on_ = task.privacy.enabled;
  rounds_ = task.rounds;
  allowed_.clear();
  if (!on_) return Status::Ok();
  settings_ = settings;
  task_ = task;
  rate_ = task.participation;
  runs_ = task.runs;
  names_ = names;
  for (uint32_t run = 0; run < runs_; ++run) {  // each round at the multiplier its seed-sampled n gives
    auto allowed = privacy::RunBudget::RoundsAllowed(
        settings.delta, settings.epsilon_budget, rate_,
        [task = task_, run](uint32_t t) { return protocol::DpForeseenSigma(task, run, t); }, rounds_);
    if (!allowed.ok()) return allowed.status();
    allowed_.push_back(*allowed);
    if (!task.privacy.distributed) {  // the same for every run
      allowed_.assign(runs_, *allowed);
      break;
    }
  }
  auto adaptive = config::AdaptiveClipFor(settings, rate_, task.problem.agents, task.secagg.enabled);
  if (!adaptive.ok()) return adaptive.status();
  adaptive_ = *adaptive;
  ledgers_.assign(static_cast<size_t>(task.num_algorithms) * runs_, std::nullopt);
  if (settings.test_seed)
    CoordinatorWarn("privacy test_seed={}: the noise is reproducible and the run is NOT private", *settings.test_seed);
  if (rounds_allowed() < rounds_)
    CoordinatorLog("privacy epsilon_budget={} allows {} of {} rounds per run", *settings.epsilon_budget,
                   rounds_allowed(), rounds_);
  return Status::Ok();
}

uint32_t PrivacyRounds::rounds_allowed() const {
  return allowed_.empty() ? rounds_ : *std::max_element(allowed_.begin(), allowed_.end());
}

PrivacyRounds::Noise PrivacyRounds::noise(uint32_t algorithm, uint32_t run, uint32_t closed, size_t per_round) const {
  if (task_.privacy.distributed) return nullptr;  // the devices add it
  auto source = std::make_shared<privacy::GaussianNoise>(
      settings_.test_seed ? privacy::GaussianNoise::Seeded(*settings_.test_seed, run, algorithm)
                          : privacy::GaussianNoise::Cryptographic());
  if (source->seeded() && closed > 0) {  // the draws of the committed rounds, as the simulator made them
    std::vector<double> skip(per_round + (adaptive_.on() ? 1 : 0));  // adaptive clipping: the count's draw
    for (uint32_t t = 0; t < closed; ++t) (void)source->Fill(skip.data(), skip.size());
  }
  return [source](double* out, size_t n) { return source->Fill(out, n); };
}

Result<privacy::RunBudget*> PrivacyRounds::ledger(uint32_t algorithm, uint32_t run) {
  std::optional<privacy::RunBudget>& l = ledgers_[static_cast<size_t>(algorithm) * runs_ + run];
  if (!l) {
    auto b = privacy::RunBudget::Create(
        settings_.delta, settings_.epsilon_budget, rate_,
        [task = task_, run](uint32_t t) { return protocol::DpForeseenSigma(task, run, t); }, rounds_);
    if (!b.ok()) return b.status();
    l.emplace(std::move(*b));
  }
  return &*l;
}

Status PrivacyRounds::resume(uint32_t algorithm, uint32_t run, const std::vector<uint32_t>& sampled) {
  if (!on_ || sampled.empty()) return Status::Ok();
  auto l = ledger(algorithm, run);
  if (!l.ok()) return l.status();
  for (size_t t = (*l)->rounds_closed(); t < sampled.size(); ++t)
    FEDRT_TRY((*l)->CloseRound(protocol::DpRoundSigma(task_, sampled[t])).status());
  return Status::Ok();
}

bool PrivacyRounds::stopped(uint32_t algorithm, uint32_t run) const {
  const std::optional<privacy::RunBudget>& l = ledgers_[static_cast<size_t>(algorithm) * runs_ + run];
  return l && !l->stop().empty();
}

Result<double> PrivacyRounds::closed(uint32_t algorithm, uint32_t run, uint32_t t, uint32_t sampled, double clip) {
  auto l = ledger(algorithm, run);
  if (!l.ok()) return l.status();
  privacy::RunBudget& ledger = **l;
  while (ledger.rounds_closed() < t) {  // rounds committed before a restart resume() did not see
    auto eps = ledger.CloseRound();
    if (!eps.ok()) return eps.status();
  }
  auto eps = ledger.CloseRound(protocol::DpRoundSigma(task_, sampled));
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
  if (!ledger.stop().empty()) CoordinatorWarn("privacy_stop alg={} run={}: {}", name, run, ledger.stop());
  return *eps;
}

}  // namespace fedrt::net
