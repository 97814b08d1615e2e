#include "fedrt/data/split.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <random>

#include <fmt/format.h>

namespace fedrt::data {

Result<std::vector<std::vector<uint64_t>>> DirichletSplit(const std::vector<double>& labels, uint32_t devices,
                                                          double alpha, uint64_t min_examples, uint64_t seed) {
  if (devices == 0) return Status::InvalidArgument("split: at least one device");
  if (!(alpha > 0.0)) return Status(StatusCode::kInvalidArgument, fmt::format("split: alpha must be > 0, got {}", alpha));
  if (labels.size() < static_cast<uint64_t>(devices) * min_examples)
    return Status(StatusCode::kInvalidArgument, fmt::format("split: {} examples cannot give {} devices {} each",
                                                            labels.size(), devices, min_examples));
  std::map<double, std::vector<uint64_t>> by_class;
  for (uint64_t j = 0; j < labels.size(); ++j) by_class[labels[j]].push_back(j);
  std::mt19937_64 rng(seed);
  std::gamma_distribution<double> gamma(alpha, 1.0);
  for (int attempt = 0; attempt < 1000; ++attempt) {
    std::vector<std::vector<uint64_t>> out(devices);
    for (auto& [label, idx] : by_class) {
      std::vector<uint64_t> order = idx;
      std::shuffle(order.begin(), order.end(), rng);
      std::vector<double> p(devices);
      double total = 0;
      for (auto& v : p) total += (v = gamma(rng));
      // Cut points of the cumulative proportions over this class's examples.
      double acc = 0;
      uint64_t from = 0;
      for (uint32_t i = 0; i < devices; ++i) {
        acc += p[i] / total;
        const uint64_t to = i + 1 == devices ? order.size()
                                             : std::min<uint64_t>(order.size(), static_cast<uint64_t>(acc * order.size() + 0.5));
        for (uint64_t j = from; j < to; ++j) out[i].push_back(order[j]);
        from = std::max(from, to);
      }
    }
    bool enough = true;
    for (auto& d : out) {
      std::sort(d.begin(), d.end());
      enough = enough && d.size() >= min_examples;
    }
    if (enough) return out;
  }
  return Status(StatusCode::kFailedPrecondition,
                fmt::format("split: no Dirichlet(alpha = {}) draw in 1000 gave every device {} examples; lower "
                            "--min-examples or raise --alpha", alpha, min_examples));
}

Result<std::vector<std::vector<uint64_t>>> UniformSplit(uint64_t count, uint32_t devices, uint64_t seed) {
  if (devices == 0 || count < devices)
    return Status(StatusCode::kInvalidArgument, fmt::format("split: {} examples for {} devices", count, devices));
  std::vector<uint64_t> order(count);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<std::vector<uint64_t>> out(devices);
  for (uint64_t j = 0; j < count; ++j) out[j % devices].push_back(order[j]);
  for (auto& d : out) std::sort(d.begin(), d.end());
  return out;
}

}  // namespace fedrt::data
