#pragma once
// DeviceRegistry: the fleet as the coordinator knows it. Who may connect
// (keys/registry.tsv: device id, agent index, PSK), which connection serves
// each agent, and where each agent stands with the task: offline, waiting
// for its TaskReply, ready, or refused (and why). Host code.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fedrt/core/status.h"
#include "fedrt/tls/tls.h"

namespace fedrt::net {

class Connection;

class DeviceRegistry {
 public:
  enum class State : uint8_t { kOffline, kAwaitingReply, kReady, kRefused };

  // Reads the provisioning registry; entries for agents beyond `agents`
  // (a larger fleet's keys) are skipped.
  Status load(const std::string& path, uint32_t agents);
  const std::vector<RegistryEntry>& entries() const { return entries_; }
  // Adds the entries of a re-read registry that are new (`keys add` while
  // running): an unknown id for an agent no device holds yet. Returns them;
  // an entry that conflicts with a known one is described in `conflicts`;
  // a known id whose PSK changed (`keys rotate`) takes the new one and is
  // listed in `rotated` (may be null).
  std::vector<RegistryEntry> merge(const std::vector<RegistryEntry>& fresh, std::vector<std::string>* conflicts,
                                   std::vector<RegistryEntry>* rotated = nullptr);
  // `keys revoke`: the device is refused at every later handshake.
  void revoke(const std::string& id, const std::string& reason) { revoked_[id] = reason; }
  // The revocation's reason, or null when `id` is not revoked.
  const std::string* revoked(const std::string& id) const {
    auto it = revoked_.find(id);
    return it == revoked_.end() ? nullptr : &it->second;
  }
  uint32_t agents() const { return static_cast<uint32_t>(agents_.size()); }
  size_t provisioned() const { return index_.size(); }

  std::optional<uint32_t> index_of(const std::string& id) const;
  const std::string& id_of(uint32_t agent) const { return agents_[agent].id; }

  Connection* connection(uint32_t agent) const { return agents_[agent].conn; }
  // Binds a connection to its agent (the previous one, if any, is returned).
  Connection* attach(uint32_t agent, Connection* c);
  // Unbinds the connection if it is the agent's; returns whether it was.
  bool detach(uint32_t agent, const Connection* c);

  State state(uint32_t agent) const { return agents_[agent].state; }
  void set_state(uint32_t agent, State s, const std::string& reason = "");
  const std::string& refusal(uint32_t agent) const { return agents_[agent].reason; }
  uint32_t count(State s) const;

 private:
  struct Agent {
    std::string id;
    Connection* conn = nullptr;
    State state = State::kOffline;
    std::string reason;
  };
  std::vector<RegistryEntry> entries_;
  std::map<std::string, uint32_t> index_;
  std::vector<Agent> agents_;
  std::map<std::string, std::string> revoked_;  // id -> reason
};

}  // namespace fedrt::net
