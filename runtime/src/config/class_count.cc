// K of a softmax experiment from its shards' labels (fedrt/config/class_count.h).
#include "fedrt/config/class_count.h"

#include <algorithm>

#include <fmt/format.h>

#include "fedrt/config/task_builder.h"
#include "fedrt/data/shard.h"
#include "fedrt/problems/fed_data.h"

namespace fedrt::config {

namespace {
constexpr uint32_t kMaxClasses = 1024;  // the loader's bound on model.classes
}  // namespace

Result<std::string> CountClasses(ExperimentConfig& cfg, bool reads_shards, bool skip_unreadable) {
  if (cfg.data.model != "softmax" || cfg.data.classes != 0 || !cfg.data.own()) return std::string();
  if (!reads_shards)
    return Status::Invalid(
        "model.classes is missing: a coordinator without the shards (data.coordinator_reads_shards = false) cannot "
        "count the classes from the labels; set [model] classes = K (labels 0..K-1)");
  problems::ShardFiles files = DataFilesOf(cfg).shards;
  files.classes = kMaxClasses;  // any class index the loader accepts; K is counted below
  if (cfg.data.arrays) files.agents = static_cast<uint32_t>(cfg.data.arrays->size());
  double top = -1;
  uint32_t read = 0;
  for (uint32_t c = 0; c < files.agents; ++c) {
    auto s = problems::ReadAgentShard(files, c, data::LabelKind::kClass);
    if (!s.ok() && skip_unreadable) continue;  // its device is refused when the instance is built
    if (!s.ok()) return s.status();
    for (double y : s->y) top = std::max(top, y);
    ++read;
  }
  if (!cfg.data.test.empty()) {
    auto t = data::ReadShard(files.format, cfg.data.test, files.label, data::LabelKind::kClass, kMaxClasses);
    if (!t.ok()) return t.status();
    for (double y : t->y) top = std::max(top, y);
  }
  const long k = static_cast<long>(top) + 1;
  if (k < 2)
    return Status::Invalid(fmt::format("model.classes is missing and the labels of '{}' hold fewer than 2 classes: "
                                       "softmax regression needs 2 or more; set [model] classes = K",
                                       cfg.data.train));
  cfg.data.classes = k;
  return fmt::format("model.classes = {}: counted from the labels (the largest is {}) of the {} shards{}", k, k - 1,
                     read, cfg.data.test.empty() ? "" : " and data.test");
}

}  // namespace fedrt::config
