// CSV shards (fedrt/data/shard.h): libcsv splits fields (RFC 4180 quoting);
// this file checks the header, the column count and every cell.
#include <csv.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "fedrt/data/shard.h"

namespace fedrt::data {
namespace {

std::string Trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\r')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r')) --e;
  return s.substr(b, e - b);
}

struct Reader {
  std::string path, label_name;
  LabelKind kind = LabelKind::kReal;
  uint32_t classes = 0;
  long line = 0;                   // line being fed to the parser
  bool row_open = false;           // a field of the current row has been seen
  std::vector<std::string> cells;  // the current row's fields
  std::vector<std::string> header;
  size_t label_col = 0;
  Status error;
  Shard shard;

  std::string where(size_t col) const {
    return fmt::format("{}:{}:{} ({})", path, line, col + 1, col < header.size() ? header[col] : "?");
  }

  void on_row() {
    row_open = false;
    if (!error.ok()) return;
    if (header.empty()) {
      header_row();
    } else {
      data_row();
    }
    cells.clear();
  }

  void header_row() {
    for (auto& c : cells) header.push_back(Trim(c));
    size_t found = header.size();
    for (size_t c = 0; c < header.size(); ++c) {
      if (header[c].empty()) {
        error = Status::Invalid(fmt::format("{}:{}:{}: the header names no column here (a header row naming every column is "
                                "required)", path, line, c + 1));
        return;
      }
      if (kind != LabelKind::kNone && header[c] == label_name) found = c;
    }
    if (kind == LabelKind::kNone) {  // every column is a feature
      label_col = header.size();
      shard.dim = static_cast<uint32_t>(header.size());
      shard.features = header;
      return;
    }
    if (found == header.size()) {
      error = Status::Invalid(fmt::format("{}:{}: no label column '{}' in the header ({} columns: {})", path, line, label_name,
                              header.size(), fmt::join(header, ",")));
      return;
    }
    if (header.size() < 2) {
      error = Status::Invalid(fmt::format("{}:{}: a label and at least one feature column are needed", path, line));
      return;
    }
    label_col = found;
    shard.dim = static_cast<uint32_t>(header.size() - 1);
    for (size_t c = 0; c < header.size(); ++c)
      if (c != label_col) shard.features.push_back(header[c]);
  }

  void data_row() {
    if (cells.size() != header.size()) {
      error = Status::Invalid(fmt::format("{}:{}: {} columns, the header has {}", path, line, cells.size(), header.size()));
      return;
    }
    for (size_t c = 0; c < cells.size(); ++c) {
      const std::string cell = Trim(cells[c]);
      if (cell.empty()) {
        error = Status::Invalid(fmt::format("{}: empty cell", where(c)));
        return;
      }
      errno = 0;
      char* end = nullptr;
      const double v = std::strtod(cell.c_str(), &end);
      if (end != cell.c_str() + cell.size()) {
        error = Status::Invalid(fmt::format("{}: '{}' is not a number", where(c), cell));
        return;
      }
      if (!std::isfinite(v) || errno == ERANGE) {
        error = Status::Invalid(fmt::format("{}: '{}' is not a finite number (NaN and Inf are refused)", where(c), cell));
        return;
      }
      if (c == label_col) {
        double y = v;
        if (!StoredLabel(kind, classes, v, y)) {
          error = Status::Invalid(fmt::format("{}: label {} is not {}", where(c), cell, LabelClasses(kind, classes)));
          return;
        }
        shard.y.push_back(y);
      } else {
        shard.x.push_back(v);
      }
    }
    if (kind == LabelKind::kNone) shard.y.push_back(0.0);
  }
};

void OnField(void* s, size_t len, void* data) {
  auto* r = static_cast<Reader*>(data);
  r->row_open = true;
  r->cells.emplace_back(s != nullptr ? static_cast<const char*>(s) : "", s != nullptr ? len : 0);
}
void OnRow(int, void* data) { static_cast<Reader*>(data)->on_row(); }

}  // namespace

bool StoredLabel(LabelKind kind, uint32_t classes, double v, double& out) {
  switch (kind) {
    case LabelKind::kReal: out = v; return true;
    case LabelKind::kBinary:  // 0/1 or -1/+1, stored as -1/+1
      if (v == 1.0) out = 1.0;
      else if (v == 0.0 || v == -1.0) out = -1.0;
      else return false;
      return true;
    case LabelKind::kNone: out = 0.0; return true;  // no label: the slot is ignored
    case LabelKind::kClass:
      if (!(v >= 0.0 && v < static_cast<double>(classes) && v == std::floor(v))) return false;
      out = v;
      return true;
  }
  return false;
}

std::string LabelClasses(LabelKind kind, uint32_t classes) {
  switch (kind) {
    case LabelKind::kReal: return "a finite number";
    case LabelKind::kBinary: return "a class of binary logistic regression (0/1 or -1/+1)";
    case LabelKind::kNone: return "ignored (the model has no label)";
    case LabelKind::kClass:
      return fmt::format("a class of softmax regression with {} classes (an integer 0..{})", classes, classes - 1);
  }
  return "?";
}

Result<Shard> ReadCsvShard(const std::string& path, const std::string& label, LabelKind kind, uint32_t classes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(StatusCode::kNotFound, fmt::format("{}: cannot open", path));
  Reader r;
  r.path = path;
  r.label_name = label;
  r.kind = kind;
  r.classes = classes;
  r.shard.path = path;
  csv_parser p;
  if (csv_init(&p, CSV_APPEND_NULL) != 0) return Status(StatusCode::kInternal, "libcsv: init failed");
  std::string line;
  while (r.error.ok() && std::getline(in, line)) {
    ++r.line;
    // A UTF-8 byte order mark (spreadsheet exports) is not part of the first name.
    if (r.line == 1 && line.compare(0, 3, "\xEF\xBB\xBF") == 0) line.erase(0, 3);
    // Blank lines and '#' comments between rows are skipped.
    const std::string t = Trim(line);
    if (!r.row_open && (t.empty() || t[0] == '#')) continue;
    line += '\n';
    if (csv_parse(&p, line.data(), line.size(), OnField, OnRow, &r) != line.size()) {
      const std::string why = csv_strerror(csv_error(&p));
      csv_free(&p);
      return Status::Invalid(fmt::format("{}:{}: {}", path, r.line, why));
    }
  }
  if (r.error.ok()) csv_fini(&p, OnField, OnRow, &r);
  csv_free(&p);
  if (!r.error.ok()) return r.error;
  if (r.header.empty()) return Status::Invalid(fmt::format("{}: empty file (a header row and data rows are expected)", path));
  if (r.shard.count() == 0) return Status::Invalid(fmt::format("{}: no data rows after the header", path));
  return std::move(r.shard);
}

Status WriteCsvShard(const std::string& path, const Shard& s, const std::string& label) {
  std::string out;
  for (uint32_t k = 0; k < s.dim; ++k)
    out += fmt::format("{},", k < s.features.size() ? s.features[k] : fmt::format("x{}", k + 1));
  out += label + "\n";
  for (uint64_t j = 0; j < s.count(); ++j) {
    for (uint32_t k = 0; k < s.dim; ++k) out += fmt::format("{},", s.x[j * s.dim + k]);
    out += fmt::format("{}\n", s.y[j]);
  }
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return Status(StatusCode::kNotFound, fmt::format("{}: cannot create", path));
  f << out;
  if (!f) return Status(StatusCode::kDataLoss, fmt::format("{}: write failed", path));
  return Status::Ok();
}

Shard SubShard(const Shard& s, const std::vector<uint64_t>& rows) {
  Shard out;
  out.dim = s.dim;
  out.features = s.features;
  out.path = s.path;
  for (uint64_t j : rows) {
    out.x.insert(out.x.end(), s.x.begin() + static_cast<long>(j * s.dim), s.x.begin() + static_cast<long>((j + 1) * s.dim));
    out.y.push_back(s.y[j]);
  }
  return out;
}

std::string ShardPath(const std::string& pattern, uint32_t agent) {
  std::string out = pattern;
  const std::string key = "{id}";
  for (size_t at = out.find(key); at != std::string::npos; at = out.find(key, at))
    out.replace(at, key.size(), std::to_string(agent));
  return out;
}

Result<Shard> ReadShard(ShardFormat format, const std::string& path, const std::string& label, LabelKind kind,
                        uint32_t classes) {
  return format == ShardFormat::kCsv ? ReadCsvShard(path, label, kind, classes) : ReadRecordShard(path, kind, classes);
}

}  // namespace fedrt::data
