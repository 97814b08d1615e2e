#pragma once
// TableReader: reads one TOML table of an experiment file into typed fields
// and reports unknown keys and wrong types by name (private to config/).

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "fedrt/core/closest_name.h"
#include "fedrt/core/status.h"

namespace fedrt::config {

// " (line N)" for a node read from a file; nothing for one built in memory.
inline std::string LineSuffix(const toml::node& n) {
  const auto line = n.source().begin.line;
  return line ? fmt::format(" (line {})", line) : std::string();
}

// While one is alive (on this thread), every TableReader records the keys it
// knows when it checks for unknown ones: ExperimentKeys() reads an empty file
// with one to list every table's keys.
class KeyCollector {
 public:
  explicit KeyCollector(std::map<std::string, std::set<std::string>>* keys) : prev_(current()) { current() = keys; }
  ~KeyCollector() { current() = prev_; }
  KeyCollector(const KeyCollector&) = delete;
  KeyCollector& operator=(const KeyCollector&) = delete;
  static std::map<std::string, std::set<std::string>>*& current() {
    static thread_local std::map<std::string, std::set<std::string>>* keys = nullptr;
    return keys;
  }

 private:
  std::map<std::string, std::set<std::string>>* prev_;
};

// Typed access to one TOML table with precise error messages.
class TableReader {
 public:
  TableReader(const toml::table& t, std::string name, std::string file)
      : t_(t), name_(std::move(name)), file_(std::move(file)) {}

  template <class T>
  Status read(const char* key, T& out) {
    seen_.insert(key);
    const toml::node* n = t_.get(key);
    if (!n) return Status::Ok();
    if constexpr (std::is_same_v<T, bool>) {
      if (auto v = n->value_exact<bool>()) { out = *v; return Status::Ok(); }
      return type_error(key, "a boolean");
    } else if constexpr (std::is_integral_v<T>) {
      if (auto v = n->value_exact<int64_t>()) {
        if (*v < 0 && std::is_unsigned_v<T>) return range_error(key, "must not be negative");
        // In range of the setting's type: 10^12 agents must not wrap to a negative count.
        if constexpr (sizeof(T) < sizeof(int64_t) || std::is_unsigned_v<T>)
          if (*v > 0 && static_cast<uint64_t>(*v) > static_cast<uint64_t>(std::numeric_limits<T>::max()))
            return range_error(key, fmt::format("= {} is too large (at most {})", *v, std::numeric_limits<T>::max()).c_str());
        if constexpr (std::is_signed_v<T> && sizeof(T) < sizeof(int64_t))
          if (*v < static_cast<int64_t>(std::numeric_limits<T>::min()))
            return range_error(key, fmt::format("= {} is too small (at least {})", *v, std::numeric_limits<T>::min()).c_str());
        out = static_cast<T>(*v);
        return Status::Ok();
      }
      return type_error(key, "an integer");
    } else if constexpr (std::is_floating_point_v<T>) {
      if (auto v = n->value<double>()) { out = *v; return Status::Ok(); }
      return type_error(key, "a number");
    } else {
      if (auto v = n->value_exact<std::string>()) { out = *v; return Status::Ok(); }
      return type_error(key, "a string");
    }
  }

  // Reads a string or an array of strings, joined by commas.
  Status read_list(const char* key, std::optional<std::string>& out) {
    seen_.insert(key);
    const toml::node* n = t_.get(key);
    if (!n) return Status::Ok();
    if (auto v = n->value_exact<std::string>()) { out = *v; return Status::Ok(); }
    if (auto arr = n->as_array()) {
      std::string s;
      for (auto& e : *arr) {
        auto v = e.value_exact<std::string>();
        if (!v) return type_error(key, "a string or an array of strings");
        s += (s.empty() ? "" : ",") + *v;
      }
      out = s;
      return Status::Ok();
    }
    return type_error(key, "a string or an array of strings");
  }

  // Marks `key` as known (a value read without read()).
  void known(const char* key) { seen_.insert(key); }

  Status check_unknown() const {
    if (auto* keys = KeyCollector::current()) (*keys)[name_].insert(seen_.begin(), seen_.end());
    for (auto& [k, v] : t_) {
      if (!seen_.count(std::string(k.str()))) {
        const std::string near = ClosestName(std::string(k.str()), seen_);
        return Status(StatusCode::kInvalidArgument,
                      fmt::format("{}: unknown key '{}.{}'{}{}", file_, name_, k.str(), LineSuffix(v),
                                  near.empty() ? "" : fmt::format("; did you mean '{}.{}'?", name_, near)));
      }
    }
    return Status::Ok();
  }

 private:
  Status type_error(const char* key, const char* want) const {
    const toml::node* n = t_.get(key);
    const auto line = n->source().begin.line;
    return Status(StatusCode::kInvalidArgument, line ? fmt::format("{}:{}: '{}.{}' must be {}", file_, line, name_, key, want)
                                                     : fmt::format("{}: '{}.{}' must be {}", file_, name_, key, want));
  }
  Status range_error(const char* key, const char* why) const {
    return Status(StatusCode::kInvalidArgument, fmt::format("{}: '{}.{}' {}", file_, name_, key, why));
  }
  const toml::table& t_;
  std::string name_, file_;
  std::set<std::string> seen_;
};

struct ExperimentConfig;
// [data] and [model] of an experiment file (data_model.cc); `base` is the
// file's directory, against which data.train and data.test are resolved.
Status ReadDataModel(const toml::table& data, const toml::table& model, const std::string& base,
                     const std::string& path, ExperimentConfig& cfg);

struct AsyncSettings;
struct DevicesSettings;
// [algorithm] mode, buffer, concurrency, max_staleness, staleness_exponent
// and the [devices] table (devices_settings.cc); `present`: the file has [devices].
Status ReadAsyncKeys(TableReader& r, const toml::table& algorithm, AsyncSettings& out);
Status ReadDevices(const toml::table& devices, bool present, const std::string& base, const std::string& path,
                   DevicesSettings& out);

}  // namespace fedrt::config
