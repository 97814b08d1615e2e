#pragma once
// Experiment-file settings of secure aggregation ([compression] table):
//   secure_aggregation = true   SecAgg+ on the uplink (needs quantizer = "rounding")
//   secagg_neighbours = 0       k of the neighbour graph (0 = DefaultGraph for each round's n)
//   secagg_dropout = 0.0        simulator only: fraction of the sampled devices that
//                               vanish after sharing keys, in every round

#include <cstdint>

namespace fedrt::secagg {

struct SecAggSettings {
  bool enabled = false;
  uint32_t neighbours = 0;
  double dropout = 0.0;
};

}  // namespace fedrt::secagg
