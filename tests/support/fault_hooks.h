#pragma once
// The coordinator's fault hooks for tests (a RoundFaults of
// coordinator/fleet_rounds.h): a SIGKILL inside or after the N-th round
// commit, a stop after N rounds (a crash between rounds), a dump of every
// SecAgg+ message received, and a coordinator that lies about who survived a
// secure round. fedrt-test-coordinator (tests/net/test_coordinator.cc) sets
// them from its flags; the product's binaries do not link them. Host code.

#include <cstdint>
#include <string>
#include <vector>

#include "fedrt/coordinator/fleet_rounds.h"

namespace fedrt::test {

struct FaultSettings {
  long stop_after_rounds = 0;   // exit after closing this many rounds (0 = never)
  std::string secagg_dump;      // append "alg run round u body_case hex(Envelope)" per SecAgg+ message received
  long crash_in_commit = 0;     // SIGKILL in the N-th round commit, before SQLite's COMMIT (0 = never)
  long crash_after_commit = 0;  // SIGKILL after the N-th round commit, before devices hear of it
  long secagg_lie_round = -1;   // in this secure round (0-based), tell devices 0..n/2-1 that device n-1 dropped
};

class FaultHooks : public net::RoundFaults {
 public:
  explicit FaultHooks(FaultSettings s) : s_(std::move(s)) {}
  void before_save(long n, net::StateStore& store) override;
  void after_save(long n) override;
  bool stop_after(long n) override { return s_.stop_after_rounds > 0 && n >= s_.stop_after_rounds; }
  void received(const protocol::ServerSession& session, uint32_t agent, const wire::Envelope& env) override;
  void sending(const protocol::ServerSession& session, uint32_t agent, protocol::ServerMessage& m) override;

 private:
  FaultSettings s_;
  std::vector<uint32_t> lie_;  // the survivors told in the lie
};

}  // namespace fedrt::test
