#include "fedrt/coordinator/state_store.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>
#include <sqlite3.h>

#include "fedrt/coordinator/state_watermark.h"
#include "state_sql.h"

namespace fedrt::net {

namespace {

double RealOrNaN(sqlite3_stmt* s, int col) {
  return sqlite3_column_type(s, col) == SQLITE_NULL ? std::nan("") : sqlite3_column_double(s, col);
}

RoundRecord ReadRound(sqlite3_stmt* s) {
  RoundRecord r;
  r.algorithm = static_cast<uint32_t>(sqlite3_column_int64(s, 0));
  r.run = static_cast<uint32_t>(sqlite3_column_int64(s, 1));
  r.round = static_cast<uint32_t>(sqlite3_column_int64(s, 2));
  r.agents = static_cast<uint32_t>(sqlite3_column_int64(s, 3));
  r.sampled = static_cast<uint32_t>(sqlite3_column_int64(s, 4));
  r.error = RealOrNaN(s, 5);  // NULL: no error metric (a user model)
  r.bits_up = static_cast<uint64_t>(sqlite3_column_int64(s, 6));
  r.bits_down = static_cast<uint64_t>(sqlite3_column_int64(s, 7));
  r.closed_at = sqlite3_column_double(s, 8);
  const unsigned char* by = sqlite3_column_text(s, 9);
  r.closed_by = by ? reinterpret_cast<const char*>(by) : "";
  r.samples = static_cast<uint64_t>(sqlite3_column_int64(s, 10));
  const unsigned char* failure = sqlite3_column_text(s, 11);
  r.failure = failure ? reinterpret_cast<const char*>(failure) : "";
  r.train_loss = RealOrNaN(s, 12);
  r.local_loss = RealOrNaN(s, 13);
  r.theta_in_state = static_cast<uint64_t>(sqlite3_column_int64(s, 14));
  return r;
}

constexpr const char* kRoundCols =
    "algorithm, run, round, agents, sampled, error, bits_up, bits_down, closed_at, closed_by, samples, failure, "
    "train_loss, local_loss, theta_in_state";
// 3: rounds and members carry the devices' reports; 4: no per-device mirrors
// (the state blob carries the memories' sum W instead); 5: the model and the
// state in round_vectors, streamed in and out (state_vectors.cc).
constexpr const char* kSchema = "5";

}  // namespace

StateStore::~StateStore() { sqlite3_close(db_); }

Status StateStore::exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string m = err ? err : "?";
    sqlite3_free(err);
    return Status(StatusCode::kDataLoss, fmt::format("state db: {}", m));
  }
  return Status::Ok();
}

Result<std::unique_ptr<StateStore>> StateStore::Open(const std::string& path, bool accept_rollback) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    std::string m = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return Status(StatusCode::kUnavailable, fmt::format("cannot open state db '{}': {}", path, m));
  }
  std::unique_ptr<StateStore> st(new StateStore(db));
  sqlite3_busy_timeout(db, 5000);
  st->path_ = path;
  FEDRT_TRY(st->quick_check());  // first: a damaged page can make any later read say something else
  // Registry updates need not hit the disk one by one (synchronous=NORMAL is safe
  // against a process crash in WAL mode); round commits are fsynced (FULL).
  FEDRT_TRY(st->exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"));
  FEDRT_TRY(st->exec(
      "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
      "CREATE TABLE IF NOT EXISTS devices (id TEXT PRIMARY KEY, device_index INTEGER NOT NULL,"
      "  first_seen REAL NOT NULL, last_seen REAL NOT NULL, last_event TEXT, connections INTEGER NOT NULL DEFAULT 0);"
      "CREATE TABLE IF NOT EXISTS rounds (algorithm INTEGER NOT NULL, run INTEGER NOT NULL, round INTEGER NOT NULL,"
      "  agents INTEGER NOT NULL, sampled INTEGER NOT NULL, error REAL,"
      "  bits_up INTEGER NOT NULL, bits_down INTEGER NOT NULL, closed_at REAL NOT NULL, closed_by TEXT,"
      "  samples INTEGER NOT NULL, failure TEXT NOT NULL, train_loss REAL, local_loss REAL,"
      "  theta_in_state INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (algorithm, run, round));"
      "CREATE TABLE IF NOT EXISTS round_vectors (algorithm INTEGER NOT NULL, run INTEGER NOT NULL,"
      "  round INTEGER NOT NULL, kind INTEGER NOT NULL, data BLOB NOT NULL, UNIQUE (algorithm, run, round, kind));"
      "CREATE TABLE IF NOT EXISTS round_members (algorithm INTEGER NOT NULL, run INTEGER NOT NULL,"
      "  round INTEGER NOT NULL, device_index INTEGER NOT NULL, examples INTEGER, loss_before REAL, loss_after REAL,"
      "  duration_ms INTEGER, bytes_down INTEGER, bytes_up INTEGER, PRIMARY KEY (algorithm, run, round, device_index));"));
  FEDRT_TRY(st->exec("CREATE TABLE IF NOT EXISTS revocations (id TEXT PRIMARY KEY, revoked_at REAL NOT NULL,"
                     "  reason TEXT NOT NULL);"));  // added without a schema bump: older files gain it here
  FEDRT_TRY(st->exec("CREATE TABLE IF NOT EXISTS round_times (algorithm INTEGER NOT NULL, run INTEGER NOT NULL,"
                     "  round INTEGER NOT NULL, time_s REAL NOT NULL, PRIMARY KEY (algorithm, run, round));"));  // likewise
  FEDRT_TRY(st->check_schema(path, true));
  FEDRT_TRY(st->check_watermark(accept_rollback));
  return st;
}

// SQLite's quick_check: pages, cells and index order (not index contents).
Status StateStore::quick_check() {
  Stmt q(db_, "PRAGMA quick_check(1)");
  const bool row = q.s != nullptr && sqlite3_step(q.s) == SQLITE_ROW;
  const unsigned char* text = row ? sqlite3_column_text(q.s, 0) : nullptr;
  const std::string v = text ? reinterpret_cast<const char*>(text) : sqlite3_errmsg(db_);
  if (v == "ok") return Status::Ok();
  return Status(StatusCode::kDataLoss,
                fmt::format("state db '{}' fails SQLite's integrity check ({}): restore it together with its -wal "
                            "from a backup (docs/security.md, \"Backing up the state\"), or start a new run",
                            path_, v));
}

// The db against its watermark (coordinator/state_watermark.h).
Status StateStore::check_watermark(bool accept_rollback) {
  Stmt n(db_, "SELECT COUNT(*) FROM rounds");
  if (n.s == nullptr || sqlite3_step(n.s) != SQLITE_ROW) return SqlError(db_, "rounds count");
  committed_ = static_cast<uint64_t>(sqlite3_column_int64(n.s, 0));
  auto mark = ReadWatermark(path_);
  if (!mark.ok()) return mark.status();
  if (*mark <= committed_) return Status::Ok();
  if (!accept_rollback) return Status(StatusCode::kFailedPrecondition, RollbackMessage(path_, committed_, *mark));
  rolled_back_from_ = *mark;
  return WriteWatermark(path_, committed_);
}

Result<std::unique_ptr<StateStore>> StateStore::OpenReadOnly(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    return Status(StatusCode::kNotFound, fmt::format("state db '{}' not found", path));
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    std::string m = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return Status(StatusCode::kUnavailable, fmt::format("cannot open state db '{}': {}", path, m));
  }
  std::unique_ptr<StateStore> st(new StateStore(db));
  sqlite3_busy_timeout(db, 5000);
  FEDRT_TRY(st->check_schema(path, false));
  return st;
}

// A database of another schema cannot be resumed (nor read: its tables differ).
// `adopt`: a database without rounds and without a schema row is a new one
// (Open has just created its tables) and gets this schema.
Status StateStore::check_schema(const std::string& path, bool adopt) {
  Stmt q(db_, "SELECT value FROM meta WHERE key = 'schema'");
  if (q.s == nullptr) {  // no meta table, or not a database at all
    if (adopt) return SqlError(db_, "schema");
    return Status(StatusCode::kFailedPrecondition,
                  fmt::format("'{}' is not a fedrt state database ({})", path, sqlite3_errmsg(db_)));
  }
  if (sqlite3_step(q.s) == SQLITE_ROW) {
    const unsigned char* text = sqlite3_column_text(q.s, 0);
    const std::string v = text ? reinterpret_cast<const char*>(text) : "";
    if (v == kSchema) return Status::Ok();
    if (!adopt)
      return Status(StatusCode::kFailedPrecondition,
                    fmt::format("state db '{}' has schema {} (this program reads {})", path, v, kSchema));
    return Status(StatusCode::kFailedPrecondition,
                  fmt::format("state db '{}' has schema {} (this coordinator writes {}): use a fresh --state file",
                              path, v, kSchema));
  }
  if (!adopt)
    return Status(StatusCode::kFailedPrecondition,
                  fmt::format("'{}' is not a fedrt state database (no schema in its meta table)", path));
  Stmt rounds(db_, "SELECT COUNT(*) FROM rounds");
  if (rounds.s != nullptr && sqlite3_step(rounds.s) == SQLITE_ROW && sqlite3_column_int64(rounds.s, 0) > 0)
    return Status(StatusCode::kFailedPrecondition,
                  fmt::format("state db '{}' was written by an older coordinator: use a fresh --state file", path));
  return exec(fmt::format("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema', '{}')", kSchema).c_str());
}

Status StateStore::check_experiment(const std::string& identity) {
  Stmt q(db_, "SELECT value FROM meta WHERE key = 'experiment'");
  if (q.s == nullptr) return SqlError(db_, "meta");
  if (sqlite3_step(q.s) == SQLITE_ROW) {
    const std::string stored = reinterpret_cast<const char*>(sqlite3_column_text(q.s, 0));
    if (stored != identity)
      return Status(StatusCode::kFailedPrecondition,
                    fmt::format("state db belongs to another experiment (stored '{}', this run '{}'); "
                                "use a fresh --state file",
                                stored, identity));
    return Status::Ok();
  }
  Stmt ins(db_, "INSERT INTO meta (key, value) VALUES ('experiment', ?1)");
  sqlite3_bind_text(ins.s, 1, identity.c_str(), -1, SQLITE_TRANSIENT);
  if (sqlite3_step(ins.s) != SQLITE_DONE) return SqlError(db_, "meta insert");
  return Status::Ok();
}

Status StateStore::upsert_device(const std::string& id, uint32_t index, const std::string& event) {
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  Stmt s(db_,
         "INSERT INTO devices (id, device_index, first_seen, last_seen, last_event, connections) "
         "VALUES (?1, ?2, ?3, ?3, ?4, 1) ON CONFLICT(id) DO UPDATE SET last_seen = ?3, last_event = ?4, "
         "connections = connections + (CASE WHEN ?4 = 'registered' THEN 1 ELSE 0 END)");
  sqlite3_bind_text(s.s, 1, id.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(s.s, 2, index);
  sqlite3_bind_double(s.s, 3, now);
  sqlite3_bind_text(s.s, 4, event.c_str(), -1, SQLITE_TRANSIENT);
  if (sqlite3_step(s.s) != SQLITE_DONE) return SqlError(db_, "device registry");
  return Status::Ok();
}

Status StateStore::save_round(const RoundRecord& r, const std::vector<uint32_t>& members, const RoundVectors& vectors) {
  FEDRT_TRY(exec("PRAGMA synchronous=FULL"));
  FEDRT_TRY(exec("BEGIN IMMEDIATE"));
  Status st = [&]() -> Status {
    Stmt s(db_, fmt::format("INSERT INTO rounds ({}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
                            kRoundCols)
                    .c_str());
    sqlite3_bind_int64(s.s, 1, r.algorithm);
    sqlite3_bind_int64(s.s, 2, r.run);
    sqlite3_bind_int64(s.s, 3, r.round);
    sqlite3_bind_int64(s.s, 4, r.agents);
    sqlite3_bind_int64(s.s, 5, r.sampled);
    sqlite3_bind_double(s.s, 6, r.error);  // NaN is stored as NULL
    sqlite3_bind_int64(s.s, 7, static_cast<sqlite3_int64>(r.bits_up));
    sqlite3_bind_int64(s.s, 8, static_cast<sqlite3_int64>(r.bits_down));
    sqlite3_bind_double(s.s, 9, r.closed_at);
    sqlite3_bind_text(s.s, 10, r.closed_by.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s.s, 11, static_cast<sqlite3_int64>(r.samples));
    sqlite3_bind_text(s.s, 12, r.failure.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(s.s, 13, r.train_loss);  // NaN is stored as NULL
    sqlite3_bind_double(s.s, 14, r.local_loss);
    // The model is written once: where it is the state's first values (LSA's
    // theta_t, a single chain's x_t), the round row says so instead.
    const bool shared = vectors.theta.size() == 1 && !vectors.state.empty() &&
                        vectors.theta[0].data == vectors.state[0].data && vectors.theta[0].size <= vectors.state[0].size;
    sqlite3_bind_int64(s.s, 15, shared ? static_cast<sqlite3_int64>(vectors.theta[0].size) : 0);
    if (sqlite3_step(s.s) != SQLITE_DONE) return SqlError(db_, "round insert");
    if (!shared) FEDRT_TRY(write_vector(r, kTheta, vectors.theta));
    FEDRT_TRY(write_vector(r, kState, vectors.state));
    Stmt m(db_,
           "INSERT INTO round_members (algorithm, run, round, device_index, examples, loss_before, loss_after, "
           "duration_ms, bytes_down, bytes_up) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
    for (size_t i = 0; i < members.size(); ++i) {
      const uint32_t d = members[i];
      sqlite3_reset(m.s);
      sqlite3_clear_bindings(m.s);
      sqlite3_bind_int64(m.s, 1, r.algorithm);
      sqlite3_bind_int64(m.s, 2, r.run);
      sqlite3_bind_int64(m.s, 3, r.round);
      sqlite3_bind_int64(m.s, 4, d);
      if (i < r.reports.size() && r.reports[i].device == d) {
        const MemberReport& p = r.reports[i];
        sqlite3_bind_int64(m.s, 5, static_cast<sqlite3_int64>(p.examples));
        sqlite3_bind_double(m.s, 6, p.loss_before);
        sqlite3_bind_double(m.s, 7, p.loss_after);
        sqlite3_bind_int64(m.s, 8, p.duration_ms);
        sqlite3_bind_int64(m.s, 9, static_cast<sqlite3_int64>(p.bytes_down));
        sqlite3_bind_int64(m.s, 10, static_cast<sqlite3_int64>(p.bytes_up));
      }
      if (sqlite3_step(m.s) != SQLITE_DONE) return SqlError(db_, "member insert");
    }
    if (r.time_s == r.time_s) {
      Stmt t(db_, "INSERT INTO round_times (algorithm, run, round, time_s) VALUES (?1, ?2, ?3, ?4)");
      sqlite3_bind_int64(t.s, 1, r.algorithm);
      sqlite3_bind_int64(t.s, 2, r.run);
      sqlite3_bind_int64(t.s, 3, r.round);
      sqlite3_bind_double(t.s, 4, r.time_s);
      if (sqlite3_step(t.s) != SQLITE_DONE) return SqlError(db_, "time insert");
    }
    return Status::Ok();
  }();
  if (!st.ok()) {
    (void)exec("ROLLBACK");
    return st;
  }
  if (before_commit_) before_commit_();
  Status committed = exec("COMMIT");
  (void)exec("PRAGMA synchronous=NORMAL");
  if (!committed.ok()) return committed;
  ++committed_;
  return WriteWatermark(path_, committed_);
}

Result<std::vector<std::pair<uint32_t, double>>> StateStore::load_times(uint32_t alg, uint32_t run) {
  std::vector<std::pair<uint32_t, double>> out;
  {  // A file written before asynchronous rounds has no such table (read-only opens do not create it).
    Stmt t(db_, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'round_times'");
    if (t.s == nullptr) return SqlError(db_, "load times");
    if (sqlite3_step(t.s) != SQLITE_ROW) return out;
  }
  Stmt s(db_, "SELECT round, time_s FROM round_times WHERE algorithm = ?1 AND run = ?2 ORDER BY round");
  if (s.s == nullptr) return SqlError(db_, "load times");
  sqlite3_bind_int64(s.s, 1, alg);
  sqlite3_bind_int64(s.s, 2, run);
  while (sqlite3_step(s.s) == SQLITE_ROW)
    out.emplace_back(static_cast<uint32_t>(sqlite3_column_int64(s.s, 0)), sqlite3_column_double(s.s, 1));
  return out;
}

Result<std::vector<RoundRecord>> StateStore::load_rounds(unsigned vectors) {
  Stmt s(db_, fmt::format("SELECT {} FROM rounds ORDER BY algorithm, run, round", kRoundCols).c_str());
  if (s.s == nullptr) return SqlError(db_, "load rounds");
  std::vector<RoundRecord> out;
  while (sqlite3_step(s.s) == SQLITE_ROW) out.push_back(ReadRound(s.s));
  for (RoundRecord& r : out) FEDRT_TRY(load_vectors(r, vectors));
  return out;
}

Status StateStore::for_each_round(uint32_t alg, uint32_t run, const std::function<Status(const RoundRecord&)>& fn,
                                  unsigned vectors) {
  // Round 4294967295 (protocol::kInitRound), the initial exchange, comes first; then
  // the others in the primary key's order: no sort, so SQLite holds no row but the current.
  constexpr int64_t kInit = 4294967295;
  auto init = get_round(alg, run, static_cast<uint32_t>(kInit), vectors);
  if (!init.ok()) return init.status();
  if (init->has_value()) FEDRT_TRY(fn(**init));
  Stmt s(db_, fmt::format("SELECT {} FROM rounds WHERE algorithm = ?1 AND run = ?2 AND round < ?3 ORDER BY round",
                          kRoundCols).c_str());
  if (s.s == nullptr) return SqlError(db_, "load rounds");
  sqlite3_bind_int64(s.s, 1, alg);
  sqlite3_bind_int64(s.s, 2, run);
  sqlite3_bind_int64(s.s, 3, kInit);
  int rc;
  while ((rc = sqlite3_step(s.s)) == SQLITE_ROW) {
    RoundRecord r = ReadRound(s.s);
    FEDRT_TRY(load_vectors(r, vectors));
    FEDRT_TRY(fn(r));
  }
  if (rc != SQLITE_DONE) return SqlError(db_, "load rounds");
  return Status::Ok();
}

Result<std::optional<RoundRecord>> StateStore::get_round(uint32_t alg, uint32_t run, uint32_t round,
                                                         unsigned vectors) {
  Stmt s(db_, fmt::format("SELECT {} FROM rounds WHERE algorithm = ?1 AND run = ?2 AND round = ?3", kRoundCols)
                  .c_str());
  sqlite3_bind_int64(s.s, 1, alg);
  sqlite3_bind_int64(s.s, 2, run);
  sqlite3_bind_int64(s.s, 3, round);
  if (sqlite3_step(s.s) != SQLITE_ROW) return std::optional<RoundRecord>();
  RoundRecord r = ReadRound(s.s);
  FEDRT_TRY(load_vectors(r, vectors));
  return std::optional<RoundRecord>(std::move(r));
}

Result<bool> StateStore::was_member(uint32_t alg, uint32_t run, uint32_t round, uint32_t device) {
  Stmt s(db_,
         "SELECT 1 FROM round_members WHERE algorithm = ?1 AND run = ?2 AND round = ?3 AND device_index = ?4");
  sqlite3_bind_int64(s.s, 1, alg);
  sqlite3_bind_int64(s.s, 2, run);
  sqlite3_bind_int64(s.s, 3, round);
  sqlite3_bind_int64(s.s, 4, device);
  return sqlite3_step(s.s) == SQLITE_ROW;
}


Result<std::vector<MemberRow>> StateStore::load_reports() {
  Stmt s(db_,
         "SELECT algorithm, run, round, device_index, examples, loss_before, loss_after, duration_ms, bytes_down, "
         "bytes_up FROM round_members ORDER BY algorithm, run, round, device_index");
  if (s.s == nullptr) return SqlError(db_, "load reports");
  std::vector<MemberRow> out;
  while (sqlite3_step(s.s) == SQLITE_ROW) {
    MemberRow r;
    r.algorithm = static_cast<uint32_t>(sqlite3_column_int64(s.s, 0));
    r.run = static_cast<uint32_t>(sqlite3_column_int64(s.s, 1));
    r.round = static_cast<uint32_t>(sqlite3_column_int64(s.s, 2));
    r.report.device = static_cast<uint32_t>(sqlite3_column_int64(s.s, 3));
    r.report.examples = static_cast<uint64_t>(sqlite3_column_int64(s.s, 4));
    r.report.loss_before = RealOrNaN(s.s, 5);
    r.report.loss_after = RealOrNaN(s.s, 6);
    r.report.duration_ms = static_cast<uint32_t>(sqlite3_column_int64(s.s, 7));
    r.report.bytes_down = static_cast<uint64_t>(sqlite3_column_int64(s.s, 8));
    r.report.bytes_up = static_cast<uint64_t>(sqlite3_column_int64(s.s, 9));
    out.push_back(r);
  }
  return out;
}

}  // namespace fedrt::net
