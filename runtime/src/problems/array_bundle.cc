#include "fedrt/problems/array_bundle.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace fedrt::problems {
namespace {

bool IsNumberStart(std::string_view tok) {
  if (tok.empty()) return false;
  const char c = tok[0];
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.';
}

// Splits a line into whitespace-separated tokens (views into `line`).
void Tokenize(std::string_view line, std::vector<std::string_view>& out) {
  out.clear();
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
}

bool ParseDouble(std::string_view tok, double& v) {
  if (!tok.empty() && tok[0] == '+') tok.remove_prefix(1);
  auto [ptr, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
  return ec == std::errc() && ptr == tok.data() + tok.size();
}

bool ParseSize(std::string_view tok, size_t& v) {
  auto [ptr, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
  return ec == std::errc() && ptr == tok.data() + tok.size();
}

}  // namespace

std::string ShapeString(const std::vector<size_t>& shape) {
  if (shape.empty()) return "scalar";
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? " x " : "") + std::to_string(shape[i]);
  return s + "]";
}

Result<ArrayBundle> ArrayBundle::parse(std::string_view text, const std::string& source) {
  ArrayBundle bundle;
  bundle.source_ = source;
  NdArray* current = nullptr;
  size_t expected = 0;
  size_t line_no = 0;
  std::vector<std::string_view> tokens;

  auto truncated = [&](const NdArray& a, size_t at_line) {
    return Status(StatusCode::kDataLoss,
                  fmt::format("{}: array '{}' (header at line {}) is truncated: expected {} numbers for shape {}, "
                              "found {} before line {}",
                              source, a.name, a.line, expected, ShapeString(a.shape), a.values.size(), at_line));
  };

  size_t pos = 0;
  while (pos <= text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    Tokenize(line, tokens);
    if (tokens.empty() || tokens[0][0] == '#') {
      if (pos > text.size()) break;
      continue;
    }
    size_t t = 0;
    if (current && current->values.size() < expected) {
      double first;  // a value line may start with nan/NaN/Inf/infinity (rejected below as non-finite)
      if (!IsNumberStart(tokens[0]) && !ParseDouble(tokens[0], first)) {
        return truncated(*current, line_no);
      }
      for (; t < tokens.size() && current->values.size() < expected; ++t) {
        double v;
        if (!ParseDouble(tokens[t], v)) {
          return Status(StatusCode::kInvalidArgument,
                        fmt::format("{}:{}: '{}' is not a number (in array '{}')", source, line_no, tokens[t],
                                    current->name));
        }
        if (!std::isfinite(v)) {
          return Status(StatusCode::kInvalidArgument,
                        fmt::format("{}:{}: array '{}' holds a non-finite value '{}'", source, line_no,
                                    current->name, tokens[t]));
        }
        current->values.push_back(v);
      }
      if (t < tokens.size()) {
        return Status(StatusCode::kInvalidArgument,
                      fmt::format("{}:{}: array '{}' has more values than its shape {} allows ('{}' is extra)",
                                  source, line_no, current->name, ShapeString(current->shape), tokens[t]));
      }
      if (pos > text.size()) break;
      continue;
    }
    // A header line: NAME NDIM D1 ... DNDIM
    if (IsNumberStart(tokens[0])) {
      const std::string after = current ? fmt::format(" after array '{}' ({} values)", current->name, expected) : "";
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("{}:{}: unexpected number '{}'{}: expected an array header 'NAME NDIM D1 ... Dn'",
                                source, line_no, tokens[0], after));
    }
    NdArray a;
    a.name = std::string(tokens[0]);
    a.line = line_no;
    size_t ndim = 0;
    if (tokens.size() < 2 || !ParseSize(tokens[1], ndim) || ndim > 8) {
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("{}:{}: array '{}' has a malformed header: expected 'NAME NDIM D1 ... Dn'", source,
                                line_no, a.name));
    }
    if (tokens.size() != 2 + ndim) {
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("{}:{}: array '{}' header declares {} dimensions but lists {}", source, line_no,
                                a.name, ndim, tokens.size() - 2));
    }
    size_t count = 1;
    for (size_t k = 0; k < ndim; ++k) {
      size_t dk = 0;
      if (!ParseSize(tokens[2 + k], dk) || dk == 0 || dk > (size_t(1) << 28)) {
        return Status(StatusCode::kInvalidArgument,
                      fmt::format("{}:{}: array '{}' has an invalid extent '{}' in dimension {}", source, line_no,
                                  a.name, tokens[2 + k], k + 1));
      }
      a.shape.push_back(dk);
      // In 64 bits: both factors are <= 2^28, and a 32-bit size_t (armhf)
      // would wrap 65536 x 65536 to 0.
      const uint64_t wide = uint64_t(count) * dk;
      if (wide > (uint64_t(1) << 28)) {
        return Status(StatusCode::kInvalidArgument,
                      fmt::format("{}:{}: array '{}' is too large ({} values)", source, line_no, a.name, wide));
      }
      count = size_t(wide);
    }
    if (bundle.arrays_.count(a.name)) {
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("{}:{}: array '{}' is defined twice", source, line_no, a.name));
    }
    // Reserve what the rest of the text can hold (a value and its separator
    // take at least 2 bytes), not what the header claims: a 40-byte file
    // declaring 2^28 values must not reserve 2 GB.
    a.values.reserve(std::min<size_t>(count, (text.size() - std::min(pos, text.size())) / 2 + 1));
    auto [it, _] = bundle.arrays_.emplace(a.name, std::move(a));
    current = &it->second;
    expected = count;
    if (pos > text.size()) break;
  }
  if (current && current->values.size() < expected) return truncated(*current, line_no);
  if (bundle.arrays_.empty()) {
    return Status(StatusCode::kInvalidArgument, fmt::format("{}: no arrays found (is this an array bundle?)", source));
  }
  return bundle;
}

Result<ArrayBundle> ArrayBundle::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(StatusCode::kNotFound, fmt::format("cannot open problem file '{}'", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse(ss.str(), path);
}

Result<const NdArray*> ArrayBundle::get(const std::string& name, const std::vector<long>& shape) const {
  auto it = arrays_.find(name);
  auto want = [&] {
    if (shape.empty()) return std::string("scalar");
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i)
      s += (i ? " x " : "") + (shape[i] < 0 ? std::string("*") : std::to_string(shape[i]));
    return s + "]";
  };
  if (it == arrays_.end()) {
    return Status(StatusCode::kNotFound,
                  fmt::format("{}: array '{}' is missing (expected shape {})", source_, name, want()));
  }
  const NdArray& a = it->second;
  bool match = a.shape.size() == shape.size();
  for (size_t i = 0; match && i < shape.size(); ++i) match = shape[i] < 0 || a.shape[i] == size_t(shape[i]);
  if (!match) {
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("{}: array '{}' (line {}) has shape {}, expected {}", source_, name, a.line,
                              ShapeString(a.shape), want()));
  }
  return &a;
}

std::vector<std::string> ArrayBundle::names() const {
  std::vector<std::string> n;
  for (auto& [k, _] : arrays_) n.push_back(k);
  return n;
}

Status ArrayBundle::add(NdArray a) {
  if (a.name.empty() || IsNumberStart(a.name) || a.name.find_first_of(" \t\r\n#") != std::string::npos)
    return Status(StatusCode::kInvalidArgument, fmt::format("{}: '{}' is not a valid array name", source_, a.name));
  if (arrays_.count(a.name))
    return Status(StatusCode::kInvalidArgument, fmt::format("{}: array '{}' is given twice", source_, a.name));
  uint64_t count = 1;
  for (size_t dk : a.shape) {
    if (dk == 0 || dk > (size_t(1) << 28))
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("{}: array '{}' has an invalid extent {} in its shape {}", source_, a.name, dk,
                                ShapeString(a.shape)));
    count *= dk;
    if (count > (uint64_t(1) << 31))
      return Status(StatusCode::kInvalidArgument, fmt::format("{}: array '{}' is too large", source_, a.name));
  }
  if (count != a.values.size())
    return Status(StatusCode::kInvalidArgument, fmt::format("{}: array '{}' has {} values for shape {}", source_,
                                                            a.name, a.values.size(), ShapeString(a.shape)));
  for (size_t i = 0; i < a.values.size(); ++i)
    if (!std::isfinite(a.values[i]))
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("{}: array '{}' holds a non-finite value at flat index {}", source_, a.name, i));
  const std::string name = a.name;
  arrays_.emplace(name, std::move(a));
  return Status::Ok();
}

std::string ArrayBundle::text() const {
  std::string out;
  for (const auto& [name, a] : arrays_) {
    out += fmt::format("{} {}", name, a.shape.size());
    for (size_t dk : a.shape) out += fmt::format(" {}", dk);
    out += '\n';
    const size_t row = a.shape.empty() ? 1 : a.shape.back();
    for (size_t i = 0; i < a.values.size(); ++i)
      out += fmt::format("{:.17g}{}", a.values[i], (i + 1) % row == 0 ? '\n' : ' ');
  }
  return out;
}

}  // namespace fedrt::problems
