// The known name a mistyped one was probably meant to be: the closest by
// Levenshtein distance, within a third of the typed word (2 edits always).
// Used for "did you mean" on flags (cli/parse.cc) and experiment keys
// (config/table_reader.h). Host code only (std::string).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

namespace fedrt {

// Levenshtein distance, for names of a few dozen characters.
inline size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// argmin_{n in names} EditDistance(typed, n) if it is at most
// max(2, |typed| / 3); "" when none is that close or `typed` is itself a name.
template <typename Names>
std::string ClosestName(const std::string& typed, const Names& names) {
  std::string best;
  size_t best_d = std::max<size_t>(2, typed.size() / 3) + 1;
  for (const std::string& n : names) {
    if (n == typed) return "";
    const size_t d = EditDistance(typed, n);
    if (d < best_d) {
      best_d = d;
      best = n;
    }
  }
  return best;
}

}  // namespace fedrt
