// The round log's vectors (the reported model, the session's state) in the
// round_vectors table: written from the session's own memory and read back
// into it through SQLite's incremental blob I/O, so a round's d-vectors never
// exist as a second copy in the coordinator (docs/architecture.md,
// "Persistence"). A zeroblob placeholder is inserted, then filled slice by slice.

#include <climits>

#include "fedrt/coordinator/state_store.h"
#include "state_sql.h"

namespace fedrt::net {

namespace {

const char* KindName(unsigned kind) { return kind == kTheta ? "model" : "server state"; }

struct Blob {
  sqlite3_blob* b = nullptr;
  ~Blob() { sqlite3_blob_close(b); }
};

}  // namespace

Status StateStore::write_vector(const RoundRecord& r, unsigned kind, const std::vector<protocol::StateSlice>& parts) {
  size_t total = 0;
  for (const protocol::StateSlice& p : parts) total += p.size * sizeof(double);
  if (total > static_cast<size_t>(INT_MAX))
    return Status(StatusCode::kResourceExhausted,
                  fmt::format("state db: the round's {} is {} bytes, more than a SQLite blob holds", KindName(kind), total));
  Stmt ins(db_, "INSERT INTO round_vectors (algorithm, run, round, kind, data) VALUES (?1, ?2, ?3, ?4, zeroblob(?5))");
  sqlite3_bind_int64(ins.s, 1, r.algorithm);
  sqlite3_bind_int64(ins.s, 2, r.run);
  sqlite3_bind_int64(ins.s, 3, r.round);
  sqlite3_bind_int64(ins.s, 4, kind);
  sqlite3_bind_int64(ins.s, 5, static_cast<sqlite3_int64>(total));
  if (sqlite3_step(ins.s) != SQLITE_DONE) return SqlError(db_, fmt::format("{} insert", KindName(kind)));
  if (total == 0) return Status::Ok();
  Blob blob;
  if (sqlite3_blob_open(db_, "main", "round_vectors", "data", sqlite3_last_insert_rowid(db_), 1, &blob.b) != SQLITE_OK)
    return SqlError(db_, fmt::format("{} write", KindName(kind)));
  int at = 0;
  for (const protocol::StateSlice& p : parts) {
    const int n = static_cast<int>(p.size * sizeof(double));
    if (n > 0 && sqlite3_blob_write(blob.b, p.data, n, at) != SQLITE_OK)
      return SqlError(db_, fmt::format("{} write", KindName(kind)));
    at += n;
  }
  return Status::Ok();
}

// Reads round (alg, run, round)'s vector `kind` into `into`, which must
// hold exactly its first `values` values (0: all of them); `*whole`, when
// given, is sized to the stored vector (or `values`) and becomes the target.
Status StateStore::read_vector(uint32_t alg, uint32_t run, uint32_t round, unsigned kind, std::vector<double>* whole,
                               const std::vector<protocol::StateTarget>* into, size_t values) {
  Stmt q(db_, "SELECT rowid FROM round_vectors WHERE algorithm = ?1 AND run = ?2 AND round = ?3 AND kind = ?4");
  sqlite3_bind_int64(q.s, 1, alg);
  sqlite3_bind_int64(q.s, 2, run);
  sqlite3_bind_int64(q.s, 3, round);
  sqlite3_bind_int64(q.s, 4, kind);
  if (sqlite3_step(q.s) != SQLITE_ROW)
    return Status(StatusCode::kDataLoss, fmt::format("state db: round {} (algorithm {}, run {}) has no stored {}", round,
                                                     alg, run, KindName(kind)));
  Blob blob;
  if (sqlite3_blob_open(db_, "main", "round_vectors", "data", sqlite3_column_int64(q.s, 0), 0, &blob.b) != SQLITE_OK)
    return SqlError(db_, fmt::format("{} read", KindName(kind)));
  const size_t stored = static_cast<size_t>(sqlite3_blob_bytes(blob.b)) / sizeof(double);
  std::vector<protocol::StateTarget> own;
  if (whole != nullptr) {
    whole->resize(values > 0 ? values : stored);
    own.push_back({whole->data(), whole->size()});
    into = &own;
  }
  size_t total = 0;
  for (const protocol::StateTarget& p : *into) total += p.size;
  if (values > 0 ? stored < total : stored != total)
    return Status(StatusCode::kDataLoss, fmt::format("state db: the stored {} has {} values, the {} has {}",
                                                     KindName(kind), stored, values > 0 ? "model" : "algorithm's", total));
  int at = 0;
  for (const protocol::StateTarget& p : *into) {
    const int n = static_cast<int>(p.size * sizeof(double));
    if (n > 0 && sqlite3_blob_read(blob.b, p.data, n, at) != SQLITE_OK)
      return SqlError(db_, fmt::format("{} read", KindName(kind)));
    at += n;
  }
  return Status::Ok();
}

Status StateStore::load_vectors(RoundRecord& r, unsigned vectors) {
  if ((vectors & kTheta) && r.theta_in_state > 0)  // the model is the state's first values
    FEDRT_TRY(read_vector(r.algorithm, r.run, r.round, kState, &r.theta, nullptr, r.theta_in_state));
  else if (vectors & kTheta)
    FEDRT_TRY(read_vector(r.algorithm, r.run, r.round, kTheta, &r.theta, nullptr));
  if (vectors & kState) FEDRT_TRY(read_vector(r.algorithm, r.run, r.round, kState, &r.state, nullptr));
  return Status::Ok();
}

Status StateStore::read_state(uint32_t alg, uint32_t run, uint32_t round,
                              const std::vector<protocol::StateTarget>& into) {
  return read_vector(alg, run, round, kState, nullptr, &into);
}

}  // namespace fedrt::net
