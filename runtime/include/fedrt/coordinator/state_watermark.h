#pragma once
// The state db's watermark (docs/security.md, "State that never goes back"):
// STATE.rounds, next to the state db STATE, holds the number of rounds
// committed to it, rewritten atomically (write, fsync, rename) after every
// commit. It is never ahead of the db (it is written after the commit), so a
// db holding fewer rounds than its watermark was emptied, replaced or rolled
// back (a -wal file lost). Host code.

#include <cstdint>
#include <string>

#include "fedrt/core/status.h"

namespace fedrt::net {

// The watermark's path for the state db `state`.
std::string WatermarkPath(const std::string& state);
// The committed rounds the watermark of `state` records: 0 when it has none;
// an unreadable or malformed file is an error naming it.
Result<uint64_t> ReadWatermark(const std::string& state);
// Replaces the watermark of `state` with `rounds`, atomically and durably.
Status WriteWatermark(const std::string& state, uint64_t rounds);
// The refusal of a db that holds `held` rounds while its watermark records
// `recorded`: what happened and the two ways on.
std::string RollbackMessage(const std::string& state, uint64_t held, uint64_t recorded);

}  // namespace fedrt::net
