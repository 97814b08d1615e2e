#pragma once
// TdBlock: one agent's block of H TD(0) local steps, described for a host
// lane kernel that advances several agents at once (sim/td_lanes.h). The
// block means exactly LsaClient::run_local_steps on TdOracle (docs/algorithms.md
// 2): for h < H, theta <- theta - eta (A_c(Z_h) theta - b_c(Z_h)), then
// theta <- theta + eta xi_c for SCAFFLSA, with Z_h drawn from CounterRng(key).

#include <cstdint>

#include "fedrt/problems/td_oracle.h"

namespace fedrt::problems {

template <class S>
struct TdBlock {
  S* theta = nullptr;               // theta_{t,0}^c in, theta_{t,H}^c out (dim values)
  const S* eta_xi = nullptr;        // eta xi_c, added after every step (null: FedLSA)
  const TdOracle<S>* oracle = nullptr;
  uint64_t key = 0;                 // RngKey(seed, run, agent, round, kLocalSteps)
  uint32_t steps = 0;               // H
  S eta = 0;                        // step size
};

}  // namespace fedrt::problems
