#include "fedrt/sim/device_clock.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "fedrt/core/rng.h"
#include "fedrt/data/shard.h"

namespace fedrt::sim {
namespace {

// A standard normal draw (Box-Muller on two uniforms; 1 - u keeps the log finite).
double Normal(CounterRng& rng) {
  const double u = 1.0 - rng.uniform(), v = rng.uniform();
  return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * M_PI * v);
}

double Draw(const config::Distribution& d, CounterRng& rng) {
  switch (d.kind) {
    case config::Distribution::Kind::kConstant: return d.value;
    case config::Distribution::Kind::kLognormal: return std::exp(d.mu + d.sigma * Normal(rng));
    case config::Distribution::Kind::kUniform: return d.low + (d.high - d.low) * rng.uniform();
  }
  return d.value;
}

// A CSV of numbers with exactly these columns (a header row names them).
Result<data::Shard> ReadColumns(const std::string& path, const char* what, const std::vector<std::string>& columns) {
  auto s = data::ReadCsvShard(path, "", data::LabelKind::kNone);
  if (!s.ok()) return Status(s.status().code(), fmt::format("devices.{}: {}", what, s.status().message()));
  if (s->features != columns)
    return Status::Invalid(fmt::format("devices.{}: {}: the header must be '{}', got '{}'", what, path,
                                       fmt::join(columns, ","), fmt::join(s->features, ",")));
  return s;
}

// The agent on data row i (line i + 2): an integer in [0, agents).
Result<uint32_t> AgentOn(const data::Shard& s, size_t i, const char* what, uint32_t agents) {
  const double v = s.x[i * s.dim];
  if (!(v >= 0 && v < agents && v == std::floor(v)))
    return Status::Invalid(fmt::format("devices.{}: {}:{}: device {} is not one of the experiment's devices 0..{}", what,
                                       s.path, i + 2, v, agents - 1));
  return static_cast<uint32_t>(v);
}

}  // namespace

Result<DeviceClock> DeviceClock::Build(const config::DevicesSettings& d, uint32_t agents, uint64_t seed) {
  if (agents == 0) return Status::Invalid("devices: the experiment has no devices");
  DeviceClock clock;
  clock.speed_.resize(agents);
  clock.mbps_.resize(agents);
  const bool diurnal = d.availability == "diurnal";
  if (diurnal) {
    clock.mode_ = Mode::kDiurnal;
    clock.phase_.resize(agents);
    clock.length_.resize(agents);
  }
  for (uint32_t c = 0; c < agents; ++c) {
    CounterRng rng(seed, 0, c, 0, RngStream::kDevices);
    clock.speed_[c] = Draw(d.speed, rng);
    clock.mbps_[c] = Draw(d.bandwidth_mbps, rng);
    if (diurnal) {  // online from about 22:00 (sd 2 h), for online_hours x U[0.5, 1.5) (at most a day)
      const double start = 22.0 * 3600.0 + 2.0 * 3600.0 * Normal(rng);
      clock.phase_[c] = start - kDay * std::floor(start / kDay);
      clock.length_[c] = std::min(kDay, d.online_hours * 3600.0 * (0.5 + rng.uniform()));
    }
  }
  if (!d.profiles.empty()) {
    auto p = ReadColumns(d.profiles, "profiles", {"device", "speed", "bandwidth_mbps"});
    if (!p.ok()) return p.status();
    std::vector<uint32_t> line(agents, 0);
    for (size_t i = 0; i < p->count(); ++i) {
      auto c = AgentOn(*p, i, "profiles", agents);
      if (!c.ok()) return c.status();
      if (line[*c] != 0)
        return Status::Invalid(fmt::format("devices.profiles: {}:{}: device {} is already on line {}", p->path, i + 2,
                                           *c, line[*c]));
      line[*c] = static_cast<uint32_t>(i + 2);
      const double v = p->x[i * 3 + 1], b = p->x[i * 3 + 2];
      if (!(v > 0) || !(b > 0))
        return Status::Invalid(fmt::format("devices.profiles: {}:{}: speed and bandwidth_mbps must be > 0", p->path, i + 2));
      clock.speed_[*c] = v;
      clock.mbps_[*c] = b;
    }
  }
  if (!d.availability_is_file()) return clock;
  auto t = ReadColumns(d.availability, "availability", {"device", "start_s", "end_s"});
  if (!t.ok()) return t.status();
  clock.mode_ = Mode::kTrace;
  const size_t n = t->count();
  std::vector<uint32_t> agent_of(n);
  for (size_t i = 0; i < n; ++i) {
    auto c = AgentOn(*t, i, "availability", agents);
    if (!c.ok()) return c.status();
    agent_of[i] = *c;
    const double s = t->x[i * 3 + 1], e = t->x[i * 3 + 2];
    if (!(s >= 0 && e > s))
      return Status::Invalid(fmt::format("devices.availability: {}:{}: an interval needs 0 <= start_s < end_s, got "
                                         "[{}, {})", t->path, i + 2, s, e));
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return agent_of[a] != agent_of[b] ? agent_of[a] < agent_of[b] : t->x[a * 3 + 1] < t->x[b * 3 + 1];
  });
  clock.first_.assign(agents + 1, 0);
  clock.start_.resize(n);
  clock.end_.resize(n);
  for (size_t k = 0; k < n; ++k) {
    const size_t i = order[k];
    clock.start_[k] = t->x[i * 3 + 1];
    clock.end_[k] = t->x[i * 3 + 2];
    ++clock.first_[agent_of[i] + 1];
    if (k > 0 && agent_of[order[k - 1]] == agent_of[i] && clock.start_[k] < clock.end_[k - 1])
      return Status::Invalid(fmt::format("devices.availability: {}:{}: device {}'s interval [{}, {}) overlaps the one on "
                                         "line {} [{}, {})",
                                         t->path, std::max(i, order[k - 1]) + 2, agent_of[i], clock.start_[k],
                                         clock.end_[k], std::min(i, order[k - 1]) + 2, clock.start_[k - 1],
                                         clock.end_[k - 1]));
  }
  for (uint32_t c = 0; c < agents; ++c) clock.first_[c + 1] += clock.first_[c];
  clock.changes_.reserve(2 * n);
  clock.changes_.insert(clock.changes_.end(), clock.start_.begin(), clock.start_.end());
  clock.changes_.insert(clock.changes_.end(), clock.end_.begin(), clock.end_.end());
  std::sort(clock.changes_.begin(), clock.changes_.end());
  return clock;
}

// The start of agent c's daily window that began last at or before t (plus
// `later` days), as phase + k day: the same expression for every t, so a
// start it returns is itself in its window.
double DeviceClock::window_start(uint32_t c, double t, int later) const {
  double k = std::floor((t - phase_[c]) / kDay);
  if (t < phase_[c] + k * kDay) k -= 1;
  if (t >= phase_[c] + (k + 1) * kDay) k += 1;
  return phase_[c] + (k + later) * kDay;
}

bool DeviceClock::online(uint32_t c, double t) const { return online_until(c, t) > t; }

double DeviceClock::online_until(uint32_t c, double t) const {
  switch (mode_) {
    case Mode::kAlways: return kNever;
    case Mode::kDiurnal: {
      if (length_[c] >= kDay) return kNever;
      const double begin = window_start(c, t);
      return t < begin + length_[c] ? begin + length_[c] : t;
    }
    case Mode::kTrace: {
      const double* b = start_.data() + first_[c];
      const double* e = start_.data() + first_[c + 1];
      const double* it = std::upper_bound(b, e, t);  // the first interval starting after t
      if (it == b) return t;
      const size_t k = static_cast<size_t>(it - start_.data()) - 1;
      return t < end_[k] ? end_[k] : t;
    }
  }
  return t;
}

double DeviceClock::next_online(uint32_t c, double t) const {
  switch (mode_) {
    case Mode::kAlways: return t;
    case Mode::kDiurnal: {
      if (online(c, t)) return t;
      return window_start(c, t, 1);
    }
    case Mode::kTrace: {
      if (online(c, t)) return t;
      const double* b = start_.data() + first_[c];
      const double* e = start_.data() + first_[c + 1];
      const double* it = std::upper_bound(b, e, t);
      return it == e ? kNever : *it;
    }
  }
  return kNever;
}

double DeviceClock::next_change(double t) const {
  switch (mode_) {
    case Mode::kAlways: return kNever;
    case Mode::kDiurnal: {
      double best = kNever;
      for (uint32_t c = 0; c < agents(); ++c) {
        if (length_[c] >= kDay) continue;
        const double until = online_until(c, t);
        best = std::min(best, until > t ? until : next_online(c, t));  // offline at t: its next window starts after t
      }
      return best;
    }
    case Mode::kTrace: {
      auto it = std::upper_bound(changes_.begin(), changes_.end(), t);
      return it == changes_.end() ? kNever : *it;
    }
  }
  return kNever;
}

size_t DeviceClock::bytes() const {
  return sizeof(double) * (speed_.size() + mbps_.size() + phase_.size() + length_.size() + start_.size() + end_.size() +
                           changes_.size()) +
         sizeof(uint32_t) * first_.size();
}

}  // namespace fedrt::sim
