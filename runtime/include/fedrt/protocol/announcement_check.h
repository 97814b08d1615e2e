#pragma once
// What a device checks of an announcement before it touches its state
// (protocol/client_session.h): its algorithm and run, the broadcast's length
// and finiteness (or a compressed downlink's delta), the work it asks for,
// and that a secure round or a staleness weight (docs/async.md) belongs to
// the task. Device code: no allocation.

#include <cstddef>
#include <cstdint>

#include "fedrt/compression/quantizer.h"
#include "fedrt/core/status.h"
#include "fedrt/protocol/messages.h"
#include "fedrt/task/task.h"

namespace fedrt::protocol {

// `s` is the session's work shape (family, chains, segment and broadcast
// dimensions); `downlink`: the task's downlink is compressed.
template <class Shape>
Status CheckAnnouncement(const Announcement& a, const task::Task& task, uint32_t algorithm, uint32_t run,
                         const Shape& s, bool downlink) {
  if (a.id.algorithm != algorithm || a.id.run != run)
    return Status::InvalidArgument("announcement for another algorithm or run than this session's");
  if (a.has_delta) {
    if (!downlink) return Status::InvalidArgument("announcement: a model delta, but the task's downlink is not compressed");
    if (a.model.size != 0 || a.delta_base + 1 != a.model_version)
      return Status::InvalidArgument("announcement: a model delta must come alone and move xhat by one version");
    const size_t cap = compression::MaxPayloadBytes(task.compression.quantizer, s.segment_dim);
    for (uint32_t k = 0; k < task::kMaxSegments; ++k)
      if ((k < s.chains) != (a.delta[k].size > 0) || a.delta[k].size > cap)
        return Status::InvalidArgument("announcement: model delta segments of the wrong number or size");
  } else if (a.model_in_place ? a.model.size != 0 : a.model.size != static_cast<uint32_t>(s.broadcast_dim)) {
    return Status::InvalidArgument("announcement: broadcast of the wrong length");
  }
  for (uint32_t i = 0; i < a.model.size; ++i)
    if (!(a.model[i] - a.model[i] == 0.0)) return Status::InvalidArgument("announcement: broadcast has a NaN or Inf entry");
  if (a.kind == WorkKind::kInitialStatistic) {
    const task::AlgorithmKind k = task.algorithms[algorithm].kind;
    if (s.family != task::Family::kEm || k == task::AlgorithmKind::kFedEmNaive || a.id.round != kInitRound)
      return Status::InvalidArgument("announcement: an initial exchange for an algorithm without one");
  } else {
    if (a.id.round == kInitRound) return Status::InvalidArgument("announcement: bad round number");
    if (s.family != task::Family::kEm && (a.local_steps == 0 || a.local_steps > (1u << 30)))
      return Status::InvalidArgument("announcement: local steps out of range");
  }
  if (a.secagg.enabled && !task.secagg.enabled)
    return Status::InvalidArgument("announcement: a secure round in a task without secure aggregation");
  if (!(a.weight >= 0 && a.weight <= 1) || (a.weight > 0 && !a.secagg.enabled))
    return Status::InvalidArgument("announcement: a staleness weight outside (0, 1] or outside a secure round");
  return Status::Ok();
}

}  // namespace fedrt::protocol
