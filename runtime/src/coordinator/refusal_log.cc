#include "fedrt/coordinator/refusal_log.h"

#include <fmt/format.h>

namespace fedrt::net {

RefusalLog::RefusalLog(uint32_t lines, long interval_ms, Sink sink)
    : lines_(lines), interval_(std::chrono::milliseconds(interval_ms > 0 ? interval_ms : 1)), sink_(std::move(sink)) {}

bool RefusalLog::admit(std::string_view key, Clock::time_point now) {
  auto t = totals_.find(key);
  if (t == totals_.end()) t = totals_.emplace(std::string(key), 0).first;
  ++t->second;
  auto it = windows_.find(key);
  if (it == windows_.end()) {
    it = windows_.emplace(std::string(key), Window{now, 0}).first;
  } else if (now - it->second.start >= interval_) {
    close(it->first, it->second);
    it->second.start = now;
  }
  return ++it->second.count <= lines_;
}

void RefusalLog::flush(Clock::time_point now, bool all) {
  for (auto it = windows_.begin(); it != windows_.end();) {
    if (!all && now - it->second.start < interval_) {
      ++it;
      continue;
    }
    close(it->first, it->second);
    it = windows_.erase(it);  // a key with no refusal for a whole interval starts afresh
  }
}

void RefusalLog::close(const std::string& key, Window& w) {
  if (w.count > lines_) {
    sink_(fmt::format("refusals key={} count={} logged={} interval_ms={} (the other lines left out)", key, w.count,
                      lines_, std::chrono::duration_cast<std::chrono::milliseconds>(interval_).count()));
  }
  w.count = 0;
}

}  // namespace fedrt::net
