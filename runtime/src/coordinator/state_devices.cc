// The fleet's side of the state store (docs/architecture.md, "Persistence"):
// the registry table, the revoked devices, each device's part in the round
// log, and the experiment's identity, for the coordinator and for readers
// such as fedrt-status.

#include "fedrt/coordinator/state_store.h"
#include "state_sql.h"

namespace fedrt::net {

namespace {

std::string Text(sqlite3_stmt* s, int col) {
  const unsigned char* t = sqlite3_column_text(s, col);
  return t ? reinterpret_cast<const char*>(t) : "";
}

}  // namespace

Result<std::string> StateStore::experiment() {
  Stmt q(db_, "SELECT value FROM meta WHERE key = 'experiment'");
  if (q.s == nullptr) return SqlError(db_, "meta");
  const int rc = sqlite3_step(q.s);
  if (rc == SQLITE_ROW) return Text(q.s, 0);
  if (rc != SQLITE_DONE) return SqlError(db_, "meta");
  return std::string();
}

Result<std::vector<DeviceRow>> StateStore::load_devices() {
  Stmt s(db_,
         "SELECT id, device_index, first_seen, last_seen, last_event, connections FROM devices "
         "ORDER BY device_index, id");
  if (s.s == nullptr) return SqlError(db_, "load devices");
  std::vector<DeviceRow> out;
  int rc;
  while ((rc = sqlite3_step(s.s)) == SQLITE_ROW) {
    DeviceRow d;
    d.id = Text(s.s, 0);
    d.index = static_cast<uint32_t>(sqlite3_column_int64(s.s, 1));
    d.first_seen = sqlite3_column_double(s.s, 2);
    d.last_seen = sqlite3_column_double(s.s, 3);
    d.last_event = Text(s.s, 4);
    d.connections = static_cast<uint64_t>(sqlite3_column_int64(s.s, 5));
    out.push_back(std::move(d));
  }
  if (rc != SQLITE_DONE) return SqlError(db_, "load devices");
  return out;
}

Status StateStore::record_revocation(const Revocation& r) {
  Stmt s(db_, "INSERT OR REPLACE INTO revocations (id, revoked_at, reason) VALUES (?1, ?2, ?3)");
  if (s.s == nullptr) return SqlError(db_, "revocation");
  sqlite3_bind_text(s.s, 1, r.id.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_double(s.s, 2, r.revoked_at);
  sqlite3_bind_text(s.s, 3, r.reason.c_str(), -1, SQLITE_TRANSIENT);
  if (sqlite3_step(s.s) != SQLITE_DONE) return SqlError(db_, "revocation");
  return Status::Ok();
}

Result<std::vector<Revocation>> StateStore::load_revocations() {
  std::vector<Revocation> out;
  {  // A file no coordinator of this version has opened yet has no such table.
    Stmt t(db_, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'revocations'");
    if (t.s == nullptr) return SqlError(db_, "load revocations");
    if (sqlite3_step(t.s) != SQLITE_ROW) return out;
  }
  Stmt s(db_, "SELECT id, revoked_at, reason FROM revocations ORDER BY revoked_at, id");
  if (s.s == nullptr) return SqlError(db_, "load revocations");
  int rc;
  while ((rc = sqlite3_step(s.s)) == SQLITE_ROW)
    out.push_back(Revocation{Text(s.s, 0), sqlite3_column_double(s.s, 1), Text(s.s, 2)});
  if (rc != SQLITE_DONE) return SqlError(db_, "load revocations");
  return out;
}

Result<std::vector<MemberTotals>> StateStore::member_totals() {
  // With max() as the only aggregate, SQLite takes the bare column
  // (duration_ms) from the row holding the maximum: the last round to close.
  Stmt s(db_,
         "SELECT m.device_index, COUNT(*), SUM(m.bytes_up), SUM(m.bytes_down), m.duration_ms, MAX(r.closed_at) "
         "FROM round_members m JOIN rounds r ON r.algorithm = m.algorithm AND r.run = m.run AND r.round = m.round "
         "GROUP BY m.device_index ORDER BY m.device_index");
  if (s.s == nullptr) return SqlError(db_, "member totals");
  std::vector<MemberTotals> out;
  int rc;
  while ((rc = sqlite3_step(s.s)) == SQLITE_ROW) {
    MemberTotals t;
    t.device = static_cast<uint32_t>(sqlite3_column_int64(s.s, 0));
    t.rounds = static_cast<uint64_t>(sqlite3_column_int64(s.s, 1));
    t.bytes_up = static_cast<uint64_t>(sqlite3_column_int64(s.s, 2));
    t.bytes_down = static_cast<uint64_t>(sqlite3_column_int64(s.s, 3));
    if (sqlite3_column_type(s.s, 4) != SQLITE_NULL) t.last_duration_ms = static_cast<uint32_t>(sqlite3_column_int64(s.s, 4));
    out.push_back(t);
  }
  if (rc != SQLITE_DONE) return SqlError(db_, "member totals");
  return out;
}

}  // namespace fedrt::net
