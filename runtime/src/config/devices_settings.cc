// The [algorithm] async keys and the [devices] table (docs/async.md): reading
// them with errors that name the key and line, and checking them against the
// rest of the experiment.
#include <cmath>
#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "fedrt/config/devices.h"
#include "fedrt/config/experiment.h"
#include "table_reader.h"

namespace fedrt::config {
namespace {

Status Bad(std::string m) { return Status(StatusCode::kInvalidArgument, std::move(m)); }

// A number, or { distribution = "lognormal" | "uniform" | "constant", ... }.
Status ReadDistribution(const toml::table& t, const char* key, const std::string& path, Distribution& out) {
  const toml::node* n = t.get(key);
  if (n == nullptr) return Status::Ok();
  const std::string where = fmt::format("{}{}: devices.{}", path, LineSuffix(*n), key);
  if (auto v = n->value<double>()) {
    if (!(*v > 0) || !std::isfinite(*v)) return Bad(fmt::format("{} must be > 0, got {}", where, *v));
    out = Distribution{Distribution::Kind::kConstant, *v};
    return Status::Ok();
  }
  const toml::table* d = n->as_table();
  if (d == nullptr)
    return Bad(fmt::format("{} must be a number or a table {{ distribution = \"lognormal\", mu = .., sigma = .. }}", where));
  TableReader r(*d, std::string("devices.") + key, path);
  std::string kind = "lognormal";
  FEDRT_TRY(r.read("distribution", kind));
  Distribution got;
  FEDRT_TRY(r.read("mu", got.mu));
  FEDRT_TRY(r.read("sigma", got.sigma));
  FEDRT_TRY(r.read("low", got.low));
  FEDRT_TRY(r.read("high", got.high));
  FEDRT_TRY(r.read("value", got.value));
  FEDRT_TRY(r.check_unknown());
  auto has = [&](const char* k) { return d->contains(k); };
  if (kind == "lognormal") {
    got.kind = Distribution::Kind::kLognormal;
    if (has("low") || has("high") || has("value")) return Bad(where + ": a lognormal takes mu and sigma only");
    if (!std::isfinite(got.mu) || !(got.sigma >= 0) || !std::isfinite(got.sigma))
      return Bad(fmt::format("{}: lognormal needs a finite mu and sigma >= 0, got mu = {}, sigma = {}", where, got.mu, got.sigma));
  } else if (kind == "uniform") {
    got.kind = Distribution::Kind::kUniform;
    if (has("mu") || has("sigma") || has("value")) return Bad(where + ": a uniform takes low and high only");
    if (!(got.low > 0) || !(got.high > got.low) || !std::isfinite(got.high))
      return Bad(fmt::format("{}: uniform needs 0 < low < high, got low = {}, high = {}", where, got.low, got.high));
  } else if (kind == "constant") {
    got.kind = Distribution::Kind::kConstant;
    if (has("mu") || has("sigma") || has("low") || has("high")) return Bad(where + ": a constant takes value only");
    if (!(got.value > 0) || !std::isfinite(got.value))
      return Bad(fmt::format("{}: value must be > 0, got {}", where, got.value));
  } else {
    return Bad(fmt::format("{}: distribution must be \"lognormal\", \"uniform\" or \"constant\", got \"{}\"", where, kind));
  }
  out = got;
  return Status::Ok();
}

std::string ResolveDevicesPath(const std::string& base, const std::string& p) {
  if (p.empty() || base.empty() || std::filesystem::path(p).is_absolute()) return p;
  return (std::filesystem::path(base) / p).string();
}

}  // namespace

Status ReadAsyncKeys(TableReader& r, const toml::table& t, AsyncSettings& out) {
  FEDRT_TRY(r.read("mode", out.mode));
  FEDRT_TRY(r.read("buffer", out.buffer));
  FEDRT_TRY(r.read("concurrency", out.concurrency));
  FEDRT_TRY(r.read("max_staleness", out.max_staleness));
  FEDRT_TRY(r.read("staleness_exponent", out.staleness_exponent));
  for (const char* k : {"buffer", "concurrency", "max_staleness", "staleness_exponent"})
    if (t.contains(k)) out.keys_given = true;
  return Status::Ok();
}

Status ReadDevices(const toml::table& t, bool present, const std::string& base, const std::string& path,
                   DevicesSettings& out) {
  TableReader r(t, "devices", path);
  out.present = out.present || present;
  FEDRT_TRY(ReadDistribution(t, "speed", path, out.speed));
  FEDRT_TRY(ReadDistribution(t, "bandwidth_mbps", path, out.bandwidth_mbps));
  r.known("speed");
  r.known("bandwidth_mbps");
  FEDRT_TRY(r.read("availability", out.availability));
  FEDRT_TRY(r.read("profiles", out.profiles));
  FEDRT_TRY(r.read("online_hours", out.online_hours));
  FEDRT_TRY(r.read("deadline_s", out.deadline_s));
  FEDRT_TRY(r.check_unknown());
  if (out.availability.empty()) return Bad(path + ": devices.availability must be \"always\", \"diurnal\" or a CSV file");
  if (out.availability_is_file()) out.availability = ResolveDevicesPath(base, out.availability);
  out.profiles = ResolveDevicesPath(base, out.profiles);
  return Status::Ok();
}

Status ValidateAsyncDevices(const ExperimentConfig& c) {
  const AsyncSettings& a = c.async;
  if (a.mode != "sync" && a.mode != "async")
    return Bad(fmt::format("algorithm.mode must be \"sync\" or \"async\", got \"{}\"", a.mode));
  const DevicesSettings& d = c.devices;
  if (!(d.online_hours > 0 && d.online_hours <= 24))
    return Bad(fmt::format("devices.online_hours must be in (0, 24], got {}", d.online_hours));
  if (!(d.deadline_s >= 0) || !std::isfinite(d.deadline_s))
    return Bad(fmt::format("devices.deadline_s must be >= 0 (0: no deadline), got {}", d.deadline_s));
  if (!a.async()) {
    if (a.keys_given)
      return Bad("algorithm.buffer, concurrency, max_staleness and staleness_exponent are for algorithm.mode = \"async\"");
    return Status::Ok();
  }
  if (a.buffer < 1) return Bad(fmt::format("algorithm.buffer must be >= 1 (a server step every K updates), got {}", a.buffer));
  if (a.concurrency < a.buffer)
    return Bad(fmt::format("algorithm.concurrency ({}) must be >= algorithm.buffer ({}): fewer devices training at once "
                           "than a buffer holds would never fill it",
                           a.concurrency, a.buffer));
  if (a.concurrency > (1L << 24)) return Bad(fmt::format("algorithm.concurrency must be at most 2^24, got {}", a.concurrency));
  if (a.max_staleness < 0) return Bad(fmt::format("algorithm.max_staleness must be >= 0, got {}", a.max_staleness));
  if (!(a.staleness_exponent >= 0) || !std::isfinite(a.staleness_exponent))
    return Bad(fmt::format("algorithm.staleness_exponent must be >= 0, got {}", a.staleness_exponent));
  if (task::FamilyOf(c.problem) != task::Family::kOpt)
    return Bad("algorithm.mode = \"async\" runs the optimisation family (FedAvg, FedProx, Scaffold: problem lsq, "
               "logistic, softmax): an LSA or EM step needs the same round's iterates from every device");
  for (const std::string& name : c.algorithms)
    if (name.size() > 3 && name.compare(name.size() - 3, 3, "-rr") == 0)
      return Bad(fmt::format("algorithm.mode = \"async\" cannot run '{}': Richardson-Romberg's two chains step in rounds",
                             name));
  const std::string why = " with algorithm.mode = \"async\" is not supported yet";
  if (c.privacy.on() && c.privacy.mechanism != "central")
    return Bad("privacy.mechanism = \"" + c.privacy.mechanism + "\"" + why +
               ": a buffer's devices would have to share its noise (use \"central\")");
  if (c.privacy.on() && c.privacy.adaptive_quantile)
    return Bad("privacy.adaptive_quantile" + why + ": the clip would move with steps whose buffers mix its values");
  if (c.secagg.enabled)
    for (const std::string& name : c.algorithms)
      if (name.rfind("scaffold", 0) == 0)
        return Bad(fmt::format("algorithm.mode = \"async\" with compression.secure_aggregation cannot run '{}': a "
                               "device weighs its whole masked input, dc with dx, which breaks mean_c c_c = c (run "
                               "Scaffold without SecAgg+, or fedavg / fedprox)",
                               name));
  if (c.compression.control_variates)
    return Bad("compression.control_variates" + why + ": the memories' sum W assumes every member of a step received it");
  if (c.compression.downlink) return Bad("compression.downlink" + why + ": each device may hold another model version");
  if (c.compression.quantizer.kind == compression::QuantizerKind::kRounding && !c.secagg.enabled)
    return Bad("compression.quantizer = \"rounding\"" + why +
               " without compression.secure_aggregation: its integer sums cannot be weighted by staleness at the server "
               "(use \"dithering\" or none, or SecAgg+, under which each device weighs its own input)");
  return Status::Ok();
}

}  // namespace fedrt::config
