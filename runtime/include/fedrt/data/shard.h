#pragma once
// An agent's shard read from a file into memory, host side (docs/data.md):
// CSV with a header row (feature columns and one label column, named), or the
// compact binary record file. Every cell is checked when the file is read, so
// a bad file stops its device at start with an error naming the file, line
// and column, before the device takes part in anything.

#include <cstdint>
#include <string>
#include <vector>

#include "fedrt/core/status.h"
#include "fedrt/data/source.h"

namespace fedrt::data {

// Which labels a model accepts.
enum class LabelKind : uint8_t {
  kReal,    // least squares: any finite number
  kBinary,  // binary logistic: 0/1 or -1/+1, stored as -1/+1
  kClass,   // softmax: an integer class index 0..K-1
  kNone,    // no label (Gaussian mixture): every CSV column is a feature; a record's
            // label slot is ignored; y holds one 0 per example so count() is the row count
};

// The label `v` as stored for `kind` (K = `classes` for kClass) in `out`;
// false when `v` is not one of the model's classes.
bool StoredLabel(LabelKind kind, uint32_t classes, double v, double& out);
// What the model's classes are, for errors: "a class of ... (...)".
std::string LabelClasses(LabelKind kind, uint32_t classes);

struct Shard {
  uint32_t dim = 0;
  std::vector<double> x;              // count x dim, row-major
  std::vector<double> y;              // labels (binary: -1/+1)
  std::vector<std::string> features;  // feature column names (CSV)
  std::string path;
  uint64_t count() const { return y.size(); }
  ArraySource source() const { return ArraySource(x.data(), y.data(), count(), dim); }
};

// A CSV file with a header row; `label` names the label column, every other
// column is a feature (kind kNone: no label column, `label` is not used). Quoted fields (RFC 4180) are accepted. Errors name the
// file, line and column: wrong column count, empty or non-numeric cell, NaN or
// Inf, a label outside the model's classes, no data rows.
Result<Shard> ReadCsvShard(const std::string& path, const std::string& label, LabelKind kind, uint32_t classes = 0);

// The record file: "FEDRTREC", u32 version 1, u32 dim, u64 count, then count
// records of dim features and the label, little-endian float64.
Result<Shard> ReadRecordShard(const std::string& path, LabelKind kind, uint32_t classes = 0);
Status WriteRecordShard(const std::string& path, const Shard& shard);

// Writes a CSV shard: the feature names (x1.. when the shard has none), then
// `label`; numbers in their shortest form that reads back to the same double.
Status WriteCsvShard(const std::string& path, const Shard& shard, const std::string& label);
// The examples `rows` of `shard`, in that order.
Shard SubShard(const Shard& shard, const std::vector<uint64_t>& rows);

// One pass over a caller's source, in stored order (restart(0)), checked as a
// file is: every value finite, labels of `kind`; errors name `name` and the
// example's 0-based index. The source is left restarted.
Result<Shard> ReadSource(Source& source, LabelKind kind, const std::string& name, uint32_t classes = 0);

enum class ShardFormat : uint8_t { kCsv, kRecords };
Result<Shard> ReadShard(ShardFormat format, const std::string& path, const std::string& label, LabelKind kind,
                        uint32_t classes = 0);

// "shards/device-{id}.csv" with {id} replaced by the agent index.
std::string ShardPath(const std::string& pattern, uint32_t agent);

}  // namespace fedrt::data
