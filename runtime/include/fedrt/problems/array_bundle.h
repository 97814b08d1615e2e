#pragma once
// Reader for the array-bundle text format (tests/data/README.md): named
// numeric arrays, each a header `NAME NDIM D1 ... DNDIM` followed by the
// values in row-major order. Host only. Every error names the source, the
// line and the array.

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "fedrt/core/status.h"

namespace fedrt::problems {

struct NdArray {
  std::string name;
  std::vector<size_t> shape;  // empty for a scalar
  std::vector<double> values;
  size_t line = 0;  // line of the header
  size_t size() const { return values.size(); }
};

class ArrayBundle {
 public:
  // Parses `text`; `source` names it in error messages (usually the file name).
  static Result<ArrayBundle> parse(std::string_view text, const std::string& source);
  static Result<ArrayBundle> load(const std::string& path);
  // An empty bundle built in memory (e.g. from numpy arrays); `source` names it in messages.
  explicit ArrayBundle(std::string source = "") : source_(std::move(source)) {}
  // Adds an array; refuses a second array of the same name, a shape that does
  // not match the values, and non-finite values, as the file reader does.
  Status add(NdArray array);
  // The bundle in the file format, every value with 17 significant digits
  // (reads back to the same doubles).
  std::string text() const;

  // The array `name` with exactly `shape` (-1 in a dimension accepts any extent).
  // Errors name the array, what was expected and what the file holds.
  Result<const NdArray*> get(const std::string& name, const std::vector<long>& shape) const;
  bool has(const std::string& name) const { return arrays_.count(name) != 0; }
  const NdArray* find(const std::string& name) const {
    auto it = arrays_.find(name);
    return it == arrays_.end() ? nullptr : &it->second;
  }
  const std::string& source() const { return source_; }
  std::vector<std::string> names() const;

 private:
  std::string source_;
  std::map<std::string, NdArray> arrays_;
};

std::string ShapeString(const std::vector<size_t>& shape);

}  // namespace fedrt::problems
