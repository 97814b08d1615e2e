#include "fedrt/keys/registry.h"

#include <unordered_map>

#include <fmt/format.h>

namespace fedrt::net {

Status DeviceRegistry::load(const std::string& path, uint32_t agents) {
  auto reg = LoadRegistry(path);
  if (!reg.ok()) return reg.status();
  entries_ = *reg;
  agents_.assign(agents, Agent{});
  index_.clear();
  for (const RegistryEntry& e : entries_) {
    if (e.index >= agents) continue;  // provisioned for a larger fleet: not an agent of this experiment
    index_[e.id] = e.index;
    agents_[e.index].id = e.id;
  }
  return Status::Ok();
}

std::vector<RegistryEntry> DeviceRegistry::merge(const std::vector<RegistryEntry>& fresh,
                                                 std::vector<std::string>* conflicts,
                                                 std::vector<RegistryEntry>* rotated) {
  std::vector<RegistryEntry> added;
  std::unordered_map<std::string, size_t> at;  // id -> its place in entries_: one pass, not one per fresh entry
  at.reserve(entries_.size());
  for (size_t i = 0; i < entries_.size(); ++i) at.emplace(entries_[i].id, i);
  for (const RegistryEntry& e : fresh) {
    if (e.index >= agents_.size()) continue;  // beyond this experiment
    if (index_.count(e.id) > 0) {             // known: rotated if its PSK changed
      auto k = at.find(e.id);
      if (k != at.end() && entries_[k->second].psk != e.psk) {
        entries_[k->second].psk = e.psk;
        if (rotated != nullptr) rotated->push_back(e);
      }
      continue;
    }
    if (!agents_[e.index].id.empty()) {
      conflicts->push_back(fmt::format("device '{}' is provisioned for agent {}, which device '{}' already holds", e.id,
                                       e.index, agents_[e.index].id));
      continue;
    }
    index_[e.id] = e.index;
    agents_[e.index].id = e.id;
    entries_.push_back(e);
    added.push_back(e);
  }
  return added;
}

std::optional<uint32_t> DeviceRegistry::index_of(const std::string& id) const {
  auto it = index_.find(id);
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

Connection* DeviceRegistry::attach(uint32_t agent, Connection* c) {
  Connection* old = agents_[agent].conn;
  agents_[agent].conn = c;
  return old == c ? nullptr : old;
}

bool DeviceRegistry::detach(uint32_t agent, const Connection* c) {
  if (agents_[agent].conn != c) return false;
  agents_[agent].conn = nullptr;
  if (agents_[agent].state != State::kRefused) agents_[agent].state = State::kOffline;
  return true;
}

void DeviceRegistry::set_state(uint32_t agent, State s, const std::string& reason) {
  agents_[agent].state = s;
  agents_[agent].reason = reason;
}

uint32_t DeviceRegistry::count(State s) const {
  uint32_t n = 0;
  for (const Agent& a : agents_) n += a.state == s ? 1u : 0u;
  return n;
}

}  // namespace fedrt::net
