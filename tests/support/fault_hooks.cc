// The coordinator's fault hooks for tests (fault_hooks.h).
#include "fault_hooks.h"

#include <csignal>
#include <fstream>

#include "fedrt/tls/tls.h"

namespace fedrt::test {

void FaultHooks::before_save(long n, net::StateStore& store) {
  if (s_.crash_in_commit == n) store.set_before_commit([] { raise(SIGKILL); });
}

void FaultHooks::after_save(long n) {
  if (s_.crash_after_commit == n) raise(SIGKILL);
}

void FaultHooks::received(const protocol::ServerSession& session, uint32_t agent, const wire::Envelope& env) {
  if (s_.secagg_dump.empty()) return;
  std::ofstream out(s_.secagg_dump, std::ios::app);
  std::string bytes;
  env.SerializeToString(&bytes);
  const protocol::RoundId& id = session.current();
  out << id.algorithm << ' ' << id.run << ' ' << id.round << ' ' << session.secagg().params_for(agent).id << ' '
      << static_cast<int>(env.body_case()) << ' '
      << net::BytesToHex(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()) << '\n';
}

// The lie: devices 0..n/2-1 hear that device n-1 did not survive.
void FaultHooks::sending(const protocol::ServerSession& session, uint32_t agent, protocol::ServerMessage& m) {
  if (m.kind != protocol::MessageKind::kSecAggUnmaskRequest || s_.secagg_lie_round < 0 ||
      m.unmask_request.id.round != static_cast<uint32_t>(s_.secagg_lie_round))
    return;
  const auto& sa = session.secagg();
  if (sa.params_for(agent).id >= sa.n() / 2) return;
  lie_.clear();
  for (uint32_t i = 0; i < m.unmask_request.survivors.size; ++i)
    if (m.unmask_request.survivors[i] != sa.n() - 1) lie_.push_back(m.unmask_request.survivors[i]);
  m.unmask_request.survivors = protocol::View<uint32_t>{lie_.data(), static_cast<uint32_t>(lie_.size())};
}

}  // namespace fedrt::test
