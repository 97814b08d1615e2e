#pragma once
// SQLite helpers shared by the state store's files (state_store.cc,
// state_vectors.cc). Host only.

#include <string>

#include <fmt/format.h>
#include <sqlite3.h>

#include "fedrt/core/status.h"

namespace fedrt::net {

inline Status SqlError(sqlite3* db, const std::string& what) {
  return Status(StatusCode::kDataLoss, fmt::format("state db: {}: {}", what, sqlite3_errmsg(db)));
}

// RAII prepared statement.
struct Stmt {
  sqlite3_stmt* s = nullptr;
  Stmt(sqlite3* db, const char* sql) { sqlite3_prepare_v2(db, sql, -1, &s, nullptr); }
  ~Stmt() { sqlite3_finalize(s); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
};

}  // namespace fedrt::net
