#pragma once
// Plain-text tables and titles for the benchmark printouts (bench/*.cc).

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace fedrt::bench {

// A plain-text table: first column left-aligned, the others right-aligned.
class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void row(std::vector<std::string> cells) {
    cells.resize(header_.size());
    rows_.push_back(std::move(cells));
  }
  void print() const {
    std::vector<size_t> w(header_.size(), 0);
    auto widen = [&](const std::vector<std::string>& r) {
      for (size_t i = 0; i < r.size(); ++i) w[i] = std::max(w[i], r[i].size());
    };
    widen(header_);
    for (const auto& r : rows_) widen(r);
    auto line = [&](const std::vector<std::string>& r) {
      std::string s;
      for (size_t i = 0; i < r.size(); ++i) {
        if (i > 0) s += "  ";
        s += i == 0 ? fmt::format("{:<{}}", r[i], w[i]) : fmt::format("{:>{}}", r[i], w[i]);
      }
      while (!s.empty() && s.back() == ' ') s.pop_back();
      std::puts(s.c_str());
    };
    line(header_);
    size_t total = 0;
    for (size_t i = 0; i < w.size(); ++i) total += w[i] + (i > 0 ? 2 : 0);
    std::puts(std::string(total, '-').c_str());
    for (const auto& r : rows_) line(r);
  }

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

inline void Title(const std::string& t) {
  std::printf("\n%s\n%s\n", t.c_str(), std::string(t.size(), '=').c_str());
}

}  // namespace fedrt::bench
