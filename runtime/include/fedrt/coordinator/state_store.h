#pragma once
// The coordinator's durable state in SQLite: experiment identity, device
// registry, revoked devices, and the round log (docs/architecture.md, "Persistence"): per
// closed round the reported model, the server session's whole state, the
// error, bits and samples, and the agents whose updates were aggregated
// (compression memories need no per-device rows: their sum W is part of the
// session's state). Written in one
// transaction per round before any device learns the result, so a restart
// resumes after the last committed round. Host only.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fedrt/core/status.h"
#include "fedrt/keys/revocations.h"
#include "fedrt/ops/round_record.h"
#include "fedrt/protocol/server_core.h"

struct sqlite3;

namespace fedrt::net {

// What a round saves besides its row: the model and the session's state as
// slices of the session's memory, streamed into SQLite without a copy.
struct RoundVectors {
  std::vector<protocol::StateSlice> theta, state;
};
// Which of a round's vectors a load reads (a bit set).
enum LoadVectors : unsigned { kNoVectors = 0, kTheta = 1, kState = 2, kBothVectors = 3 };

// A member report with its round, as load_reports returns them.
struct MemberRow {
  uint32_t algorithm = 0, run = 0, round = 0;
  MemberReport report;
};

// A device as the registry table holds it (upsert_device).
struct DeviceRow {
  std::string id;
  uint32_t index = 0;
  double first_seen = 0, last_seen = 0;  // seconds since the epoch
  std::string last_event;
  uint64_t connections = 0;
};

// One device's part in the round log (round_members), summed over rounds.
struct MemberTotals {
  uint32_t device = 0;  // agent index
  uint64_t rounds = 0;  // rounds that aggregated its update (FedEM's initial exchange included)
  uint64_t bytes_up = 0, bytes_down = 0;
  std::optional<uint32_t> last_duration_ms;  // in the last such round to close; none: not reported
};

class StateStore {
 public:
  ~StateStore();
  // Opens (or creates) the state db and checks it (docs/security.md, "State
  // that never goes back"): SQLite's quick_check must pass, and the db must
  // hold at least the rounds its watermark (coordinator/state_watermark.h)
  // records, unless `accept_rollback`: then the watermark is brought back to
  // the db and rolled_back_from() tells what it recorded.
  static Result<std::unique_ptr<StateStore>> Open(const std::string& path, bool accept_rollback = false);
  // For readers such as fedrt-status: SQLITE_OPEN_READONLY, no table created;
  // works while a coordinator holds the file (WAL). A missing file, a file
  // that is not a fedrt state database or one of another schema is an error.
  static Result<std::unique_ptr<StateStore>> OpenReadOnly(const std::string& path);

  // Records the experiment's identity on first use; afterwards a different
  // identity is an error (a state file belongs to one experiment).
  Status check_experiment(const std::string& identity);
  // The stored identity ("task=<hex>;algorithms=a,b"); "" before check_experiment.
  Result<std::string> experiment();
  // Records a device's registration event ("registered", "refused: why", "disconnected").
  Status upsert_device(const std::string& id, uint32_t index, const std::string& event);
  // The registry table, ordered by agent index.
  Result<std::vector<DeviceRow>> load_devices();
  // A revoked device (KEYS/revoked.tsv); a second record of an id replaces the first.
  Status record_revocation(const Revocation& r);
  // Ordered by revocation time; none in a file written before revocations existed.
  Result<std::vector<Revocation>> load_revocations();
  // Per agent index that took part in a round, ordered by index.
  Result<std::vector<MemberTotals>> member_totals();
  // One transaction: the round row, its vectors and its members; then the
  // watermark moves to the rounds committed.
  Status save_round(const RoundRecord& r, const std::vector<uint32_t>& members, const RoundVectors& vectors);
  // The steps' clock of a run of asynchronous rounds ((round, time_s) in
  // round order; empty for synchronous runs).
  Result<std::vector<std::pair<uint32_t, double>>> load_times(uint32_t alg, uint32_t run);
  // Test hook (crash torture): called inside save_round's transaction, every
  // row written, just before its COMMIT.
  void set_before_commit(std::function<void()> f) { before_commit_ = std::move(f); }
  Result<std::vector<RoundRecord>> load_rounds(unsigned vectors = kBothVectors);
  // The rounds of (`algorithm`, `run`), FedEM's initial exchange first, handed
  // to `fn` one at a time (a run's records hold several d-vectors each).
  Status for_each_round(uint32_t algorithm, uint32_t run, const std::function<Status(const RoundRecord&)>& fn,
                        unsigned vectors = kBothVectors);
  Result<std::optional<RoundRecord>> get_round(uint32_t alg, uint32_t run, uint32_t round,
                                               unsigned vectors = kBothVectors);
  // A round's state read straight into `into` (ServerSession::import_targets);
  // a stored state of another size is an error naming both sizes.
  Status read_state(uint32_t alg, uint32_t run, uint32_t round, const std::vector<protocol::StateTarget>& into);
  Result<bool> was_member(uint32_t alg, uint32_t run, uint32_t round, uint32_t device);
  // Every member's report, ordered by (algorithm, run, round, device).
  Result<std::vector<MemberRow>> load_reports();
  // Rounds committed to the db, and (an accepted rollback) what the watermark
  // recorded at open (0: none).
  uint64_t committed_rounds() const { return committed_; }
  uint64_t rolled_back_from() const { return rolled_back_from_; }

 private:
  explicit StateStore(sqlite3* db) : db_(db) {}
  Status check_schema(const std::string& path, bool adopt);
  Status quick_check();
  Status check_watermark(bool accept_rollback);
  Status exec(const char* sql);
  Status write_vector(const RoundRecord& r, unsigned kind, const std::vector<protocol::StateSlice>& parts);
  Status read_vector(uint32_t alg, uint32_t run, uint32_t round, unsigned kind, std::vector<double>* whole,
                     const std::vector<protocol::StateTarget>* into, size_t values = 0);
  Status load_vectors(RoundRecord& r, unsigned vectors);
  sqlite3* db_ = nullptr;
  std::function<void()> before_commit_;
  std::string path_;          // the db's file (its watermark is next to it); empty: read-only
  uint64_t committed_ = 0;    // rows of `rounds`
  uint64_t rolled_back_from_ = 0;
};

}  // namespace fedrt::net
