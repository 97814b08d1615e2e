#pragma once
// Refusals logged at a bounded rate (docs/dashboard.md, "Refusals in the log"). Per key (stage and
// reason, e.g. "handshake/not_tls"), the first `lines` refusals of each interval are written in
// full; the rest are only counted, and one summary line per key ends the interval:
//   refusals key=handshake/not_tls count=14800 logged=10 interval_ms=10000 (the other lines left out)
// so a flood of bad connections adds O(keys) lines per interval, not one per connection. Host code.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace fedrt::net {

class RefusalLog {
 public:
  using Clock = std::chrono::steady_clock;
  using Sink = std::function<void(const std::string&)>;  // writes one summary line

  // lines: refusals written in full per key and interval (0: summaries only); interval_ms > 0.
  RefusalLog(uint32_t lines, long interval_ms, Sink sink);

  // Counts one refusal of `key`; true when its line is to be written (the key's quota not spent).
  // Ends the key's interval first if it is over.
  bool admit(std::string_view key, Clock::time_point now);

  // Ends every interval that is over (all: every interval), writing the summary of each key that
  // left lines out. Called once a second by the coordinator and when it stops.
  void flush(Clock::time_point now, bool all = false);

  // Refusals counted since the start, by key (logged or not).
  const std::map<std::string, uint64_t, std::less<>>& totals() const { return totals_; }

 private:
  struct Window {
    Clock::time_point start;
    uint64_t count = 0;  // refusals in this interval
  };
  void close(const std::string& key, Window& w);

  uint32_t lines_;
  Clock::duration interval_;
  Sink sink_;
  std::map<std::string, Window, std::less<>> windows_;
  std::map<std::string, uint64_t, std::less<>> totals_;
};

}  // namespace fedrt::net
