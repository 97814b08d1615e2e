#include "fedrt/protocol/masked_summer.h"

#include <fmt/format.h>

namespace fedrt::protocol {

void MaskedSummer::begin(const RoundId& id) {
  id_ = id;
  open_ = true;
  armed_ = false;
  expected_.clear();
  sum_.clear();
}

void MaskedSummer::expect(const std::vector<uint32_t>& agents) {
  if (!open_) return;
  armed_ = true;
  for (uint32_t a : agents) expected_.emplace(a, Entry{});
}

void MaskedSummer::drop(uint32_t agent) {
  auto it = expected_.find(agent);
  if (it != expected_.end() && !it->second.answered) expected_.erase(it);
}

Verdict MaskedSummer::add(uint32_t agent, const SecAggMaskedMsg& m) {
  if (!open_ || m.id != id_) return Verdict{Refusal::kStaleRound, "masked input for another round"};
  auto it = expected_.find(agent);
  if (it == expected_.end()) return Verdict{Refusal::kNotSampled, "no masked input was asked of this device"};
  if (it->second.answered) return Verdict{Refusal::kDuplicate, "this device already sent its masked input"};
  if (m.masked.size == 0 || (!sum_.empty() && m.masked.size != sum_.size()))
    return Verdict{Refusal::kDimension,
                   fmt::format("masked input has {} values, the others {}", m.masked.size, sum_.size())};
  if (sum_.empty()) sum_.assign(m.masked.size, 0);
  for (uint32_t i = 0; i < m.masked.size; ++i) sum_[i] += m.masked.data[i];  // mod 2^32
  it->second.answered = true;
  it->second.report = m.report;
  return Verdict{};
}

bool MaskedSummer::ready() const {
  if (!open_ || !armed_) return false;
  bool any = false;
  for (const auto& [agent, e] : expected_) {
    if (!e.answered) return false;
    any = true;
  }
  return any;
}

void MaskedSummer::take(MaskedSum& out) {
  out = MaskedSum{};
  out.id = id_;
  for (const auto& [agent, e] : expected_)
    if (e.answered) {
      out.members.push_back(agent);
      out.reports.push_back(e.report);
    }
  out.sum = sum_;
  open_ = false;
  armed_ = false;
  expected_.clear();
}

}  // namespace fedrt::protocol
