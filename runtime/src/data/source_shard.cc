// A caller's data::Source read into a Shard (fedrt/data/shard.h), checked
// like a shard file (docs/data.md, "Errors").
#include <cmath>

#include <fmt/format.h>

#include "fedrt/data/shard.h"

namespace fedrt::data {

Result<Shard> ReadSource(Source& source, LabelKind kind, const std::string& name, uint32_t classes) {
  auto bad = [](std::string m) { return Status(StatusCode::kInvalidArgument, std::move(m)); };
  Shard s;
  s.path = name;
  s.dim = source.dim();
  if (s.dim == 0) return bad(fmt::format("{}: 0 features per example", name));
  const uint64_t n = source.count();
  if (n == 0) return bad(fmt::format("{}: no examples", name));
  for (uint32_t k = 0; k < s.dim; ++k) s.features.push_back(fmt::format("x{}", k + 1));
  s.x.resize(n * s.dim);
  s.y.resize(n);
  source.restart(0);
  for (uint64_t j = 0; j < n; ++j) {
    double y = 0.0;
    Status st = source.next(s.x.data() + j * s.dim, &y);
    if (!st.ok()) return bad(fmt::format("{}: example {}: {} (count() said {})", name, j, st.message(), n));
    for (uint32_t k = 0; k < s.dim; ++k)
      if (!std::isfinite(s.x[j * s.dim + k]))
        return bad(fmt::format("{}: example {} feature {}: not a finite number (NaN and Inf are refused)", name, j, k + 1));
    if (kind == LabelKind::kNone) y = 0.0;  // no label: ignored
    if (!std::isfinite(y)) return bad(fmt::format("{}: example {} label: not a finite number", name, j));
    double stored = 0.0;
    if (!StoredLabel(kind, classes, y, stored))
      return bad(fmt::format("{}: example {}: label {} is not {}", name, j, y, LabelClasses(kind, classes)));
    y = stored;
    s.y[j] = y;
  }
  source.restart(0);
  return s;
}

}  // namespace fedrt::data
