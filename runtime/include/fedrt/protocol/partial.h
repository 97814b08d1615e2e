#pragma once
// Partial: what a gateway forwards for one round instead of its devices'
// updates (docs/gateways.md, "Partial aggregation"). A gateway runs a server
// session over its own devices (ServerOptions::partial); when they have all
// answered, or at its deadline, it hands up the round's exact sums as
// pieces (core/exact_sum_pieces.h), the integer uplink's sums, and one small
// record per device. The coordinator adds them to its own sums
// (ServerSession::on_partial): the same bits as if every update had come to
// it, in any order. Host code.

#include <cstdint>
#include <string>
#include <vector>

#include "fedrt/protocol/messages.h"

namespace fedrt::protocol {

// One exact-sum array of the round as layers: layer j holds every
// coordinate's (j+1)-th piece (0 where it has fewer), so adding all layers
// coordinate by coordinate gives each sum exactly.
struct PartialSum {
  uint32_t size = 0;            // coordinates
  std::vector<double> layers;   // layers() x size values
  uint32_t layer_count() const { return size == 0 ? 0 : static_cast<uint32_t>(layers.size() / size); }
};

struct Partial {
  RoundId id;
  // The devices whose updates the sums hold, ascending, with their reports,
  // sample counts and (adaptive clipping) clip indicators, aligned.
  std::vector<uint32_t> members;
  std::vector<WorkReport> reports;
  std::vector<uint64_t> samples;
  std::vector<uint8_t> indicators;
  uint64_t bits_up = 0;  // the members' payload bits
  // Devices that answered with an update the gateway dropped (over
  // privacy.clip, over robustness.max_update_norm): not members, not waited for.
  std::vector<uint32_t> unclipped, over_norm;
  // Why the sums cannot be used (a cut-off update that could not be taken
  // back): the round fails at the coordinator, as it would have there.
  std::string failure;
  // The server core's round sums (ServerCore::round_sums), then the
  // uplink's sum of messages when it keeps one; the integer uplink's sums.
  std::vector<PartialSum> sums;
  std::vector<uint64_t> integer_sums;
  // Per member, the frame bytes it exchanged with the gateway this round
  // (reporting only: the coordinator's devices.csv; empty or aligned).
  std::vector<uint64_t> bytes_down, bytes_up;
};

// A gateway's masked inputs of one secure round (phase 3 of SecAgg+): their
// sum modulo 2^32, with the members' reports. The coordinator unmasks the
// round's total as if each input had come to it; it never sees one input.
struct MaskedSum {
  RoundId id;
  std::vector<uint32_t> members;  // ascending
  std::vector<WorkReport> reports;
  std::vector<uint32_t> sum;
  std::vector<uint64_t> bytes_down, bytes_up;  // per member, as Partial's
};

// Coordinator -> gateway: what a round opens with. The coordinator's server
// state and its compressed downlink's version and last delta per chain, from
// which the gateway's partial session announces what the coordinator would
// (ServerSession::basis, open_from).
struct RoundBasis {
  RoundId id;
  std::vector<double> state;
  uint32_t down_version = 0;
  std::vector<std::vector<uint8_t>> down_delta;  // per chain
  uint32_t deadline_ms = 0;
  bool secure = false;
  std::vector<uint32_t> refused;  // never sampled (a secure round's device ids depend on who is)
};

// Coordinator -> gateway: the round closed with these of its agents, and
// (LSA) the model their round results carry.
struct RoundVerdict {
  RoundId id;
  std::vector<uint32_t> included;
  std::vector<double> model;
};

}  // namespace fedrt::protocol
