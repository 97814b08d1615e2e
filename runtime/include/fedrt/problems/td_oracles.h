#pragma once
// Host-only: the TD(0) oracles of a whole Garnet (or bundle) fleet, built on
// several threads (runtime/src/problems/td_oracles.cc).

#include <cstdint>
#include <vector>

#include "fedrt/core/status.h"
#include "fedrt/problems/td_oracle.h"
#include "fedrt/problems/td_problem.h"

namespace fedrt::problems {

struct TdOracleTables {
  std::vector<uint8_t> memory;            // every agent's alias table, exactly sized
  std::vector<TdOracle<double>> oracles;  // agent c's oracle over p.phi and its table
  int max_atoms = 0;                      // largest table
};

// Agent c's oracle draws Z = (s, s') from its joint law mu_c(s) P^pi_c(s, s')
// (the alias table create_shared builds) with the features p.phi shared by
// all agents; agents spread over `threads` threads (0: the machine's). The
// tables are the same bytes for any thread count. Errors name the agent.
Status BuildTdOracles(const TdProblem& p, int threads, TdOracleTables& out);

}  // namespace fedrt::problems
