#pragma once
// Ranks of a distributed simulation (docs/architecture.md, "MPI"): K processes
// run identical server replicas; rank r owns the client sessions of one
// contiguous range of agents, and every round the ranks share their agents'
// messages so that every replica is fed all of them in the single-process
// order. This header knows nothing of MPI: RankExchange is the one collective
// the simulator needs (sim/mpi_ranks.h implements it over MPI), RankChannel
// puts frames on it that carry messages, failures and agreements. Host code.

#include <cstdint>
#include <string>
#include <vector>

#include "fedrt/core/status.h"

namespace fedrt::config {
struct ExperimentConfig;
}

namespace fedrt::sim {

// What every rank must agree on before a distributed run: FNV-1a of the task
// (task/fingerprint.h) and the simulator's own settings (SecAgg+ dropouts).
Result<uint64_t> ExperimentFingerprint(const config::ExperimentConfig& config);

// The agents [lo, hi) of one rank: the first n mod K ranks own one more.
struct AgentRange {
  uint32_t lo = 0, hi = 0;
  bool owns(uint32_t agent) const { return agent >= lo && agent < hi; }
  uint32_t count() const { return hi - lo; }
};
AgentRange RangeOf(uint32_t agents, uint32_t ranks, uint32_t rank);

// The collective the ranks share: every rank gives bytes, every rank gets
// every rank's bytes (rank r's at [offsets[r], offsets[r + 1])).
class RankExchange {
 public:
  virtual ~RankExchange() = default;
  virtual uint32_t rank() const = 0;
  virtual uint32_t size() const = 0;
  virtual Status allgather(const std::vector<uint8_t>& mine, std::vector<uint8_t>& all,
                           std::vector<size_t>& offsets) = 0;
};

// Frames over a RankExchange. Every rank makes the same sequence of calls
// (the replicas are identical); a rank that fails makes one fail() instead of
// its next call, which every rank then sees as an error naming that rank, and
// after which nobody calls the exchange again, so no rank waits forever.
class RankChannel {
 public:
  explicit RankChannel(RankExchange& exchange) : ex_(exchange) {}
  uint32_t rank() const { return ex_.rank(); }
  uint32_t size() const { return ex_.size(); }
  // Failed (here or on another rank): no further collectives.
  bool broken() const { return !failure_.ok(); }
  const Status& failure() const { return failure_; }

  // One round of messages: `mine` (records of sim/rank_messages.h) and this
  // rank's samples since the last call; `all` gets every rank's records,
  // `samples` the sum over the ranks.
  Status messages(const std::vector<uint8_t>& mine, uint64_t samples_mine, std::vector<uint8_t>& all,
                  std::vector<size_t>& offsets, uint64_t& samples);
  // This rank failed with `error`: tells the others (unless already broken)
  // and returns the error every rank agrees on (the lowest failing rank's).
  Status fail(const Status& error);
  // Before any work: every rank parsed its experiment (ok, or `error`) into a
  // task with this fingerprint, from `source` (the file, for messages). An
  // error on every rank when one failed or the fingerprints differ.
  Status agree_start(const Status& parsed, uint64_t fingerprint, const std::string& source);
  // Every rank built its instance: the ranks meet here, so that no rank's
  // run time includes waiting for a slower rank's construction.
  Status built();
  // After the work: Ok on every rank when every rank finished with Ok.
  Status agree_done(const Status& mine);

 private:
  struct Frame;
  Status collect(uint8_t kind, const std::vector<uint8_t>& body, uint64_t value, const Status& error,
                 std::vector<Frame>& frames, std::vector<uint8_t>& all, std::vector<size_t>& offsets);

  RankExchange& ex_;
  Status failure_;
};

}  // namespace fedrt::sim
