// fedrt-keys: the keys folder of a fleet (fedrt/keys/provision.h; README.md,
// "Deployment on a real network" and "Devices during a run").
//
//   fedrt-keys --out DIR --devices N [--prefix P] [--force]   a new fleet: CA, coordinator, N devices
//                                                         (--force: replace the fleet DIR holds)
//   fedrt-keys add --keys DIR [--count N] [--prefix P]    N more devices, signed by DIR's CA
//   fedrt-keys revoke --keys DIR ID [ID...] [--reason T]  list devices in DIR/revoked.tsv
//   fedrt-keys rotate --keys DIR [ID...] [--coordinator]  new keys, certificates and PSKs (same ids)
//
// Exit codes: 0 done, 1 the work failed (nothing or, for a new fleet, part of
// it written), 2 bad command line.

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fedrt/log/log.h"
#include "fedrt/cli/parse.h"
#include "fedrt/keys/gateways.h"
#include "fedrt/keys/provision.h"

namespace {

constexpr int kMaxDevices = 100000;

int Fail(const fedrt::Status& st) {
  fmt::print(stderr, "fedrt-keys: error: {}\n", st.message());
  return 1;
}

int Usage(const std::string& what) {
  fmt::print(stderr, "fedrt-keys: error: {}\n", what);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fedrt-keys: provision a fleet (CA, coordinator certificate, per-device certificates and PSKs), "
               "add devices to it, revoke devices, rotate keys"};
  std::string log_level = "info";
  std::string out, prefix = "dev";
  int devices = 0;
  CLI::Option* out_opt = app.add_option("--out", out, "new fleet: output directory");
  CLI::Option* devices_opt = app.add_option("--devices", devices, "new fleet: number of devices N (agent indices 0..N-1)");
  CLI::Option* prefix_opt = app.add_option("--prefix", prefix, "new fleet: device id prefix (ids are PREFIX0000, PREFIX0001, ...)");
  bool force = false;
  CLI::Option* force_opt = app.add_flag("--force", force,
                                        "new fleet: replace the fleet DIR already holds (its CA, coordinator key, "
                                        "registry, revocations and every device folder)");
  fedrt::log::AddLevelFlag(app, log_level);
  app.require_subcommand(0, 1);

  std::string add_keys, add_prefix;
  int count = 1;
  CLI::App* add = app.add_subcommand("add", "provision more devices in an existing keys folder (next free indices)");
  add->add_option("--keys", add_keys, "keys folder written by fedrt-keys --out")->required();
  add->add_option("--count", count, "number of new devices (default 1)");
  add->add_option("--prefix", add_prefix, "id prefix (default: the one the registry's ids share, else dev)");
  fedrt::log::AddLevelFlag(*add, log_level);

  std::string revoke_keys, reason = "revoked by operator";
  std::vector<std::string> ids;
  CLI::App* revoke = app.add_subcommand("revoke", "list devices in KEYS/revoked.tsv (the coordinator refuses them)");
  revoke->add_option("--keys", revoke_keys, "keys folder written by fedrt-keys --out")->required();
  revoke->add_option("ids", ids, "device ids, as in KEYS/registry.tsv")->required();
  revoke->add_option("--reason", reason, "why (one line, at most 200 bytes kept)");
  fedrt::log::AddLevelFlag(*revoke, log_level);

  std::string rotate_keys;
  std::vector<std::string> rotate_ids;
  bool rotate_coordinator = false;
  CLI::App* rotate = app.add_subcommand(
      "rotate", "new key, certificate and PSK for devices (same id and agent index: their state is kept), or for "
                "the coordinator; a running coordinator refuses the old PSKs within a second");
  rotate->add_option("--keys", rotate_keys, "keys folder written by fedrt-keys --out")->required();
  rotate->add_option("ids", rotate_ids, "device ids, as in KEYS/registry.tsv");
  rotate->add_flag("--coordinator", rotate_coordinator,
                   "the coordinator's key and certificate (signed by the same CA: devices accept it unchanged)");
  fedrt::log::AddLevelFlag(*rotate, log_level);

  std::string gw_keys;
  int gw_count = 1;
  CLI::App* gateways = app.add_subcommand(
      "gateways", "credentials for G gateways (docs/gateways.md): device index i behind gateway gw(i mod G); "
                  "KEYS/gateways.tsv for the coordinator, KEYS/gateways/ID for each gateway");
  gateways->add_option("--keys", gw_keys, "keys folder written by fedrt-keys --out")->required();
  gateways->add_option("--count", gw_count, "number of gateways G (default 1)");
  fedrt::log::AddLevelFlag(*gateways, log_level);

  if (int rc = 0; !fedrt::cli::Parse(app, argc, argv, &rc)) return rc;
  (void)fedrt::log::SetLevel(log_level);  // checked by the flag
  auto& log = fedrt::log::Get("fedrt-keys");

  auto no_folder_ = [](const std::string& dir) {
    std::error_code ec;
    return !std::filesystem::is_directory(dir, ec);
  };
  if (gateways->parsed()) {
    if (no_folder_(gw_keys)) return Usage(fmt::format("keys folder '{}' not found", gw_keys));
    if (gw_count <= 0 || gw_count > 4096) return Usage(fmt::format("--count must be in 1..4096, got {}", gw_count));
    auto dirs = fedrt::net::ProvisionGateways(gw_keys, static_cast<uint32_t>(gw_count));
    if (!dirs.ok()) return Fail(dirs.status());
    for (const auto& d : *dirs) fmt::print("gateway dir={}\n", d);
    log.info("{} gateway{} in {}: gateways.tsv for the coordinator, each folder for its gateway", dirs->size(),
             dirs->size() == 1 ? "" : "s", gw_keys);
    return 0;
  }
  if (add->parsed() || revoke->parsed() || rotate->parsed()) {
    if (out_opt->count() + devices_opt->count() + prefix_opt->count() + force_opt->count() > 0)
      return Usage(fmt::format("--out/--devices/--prefix/--force before the subcommand make a new fleet; '{}' works on --keys DIR",
                               add->parsed() ? "add" : revoke->parsed() ? "revoke" : "rotate"));
  }
  auto no_folder = [](const std::string& dir) {  // a usage error (docs/cli.md, "Exit codes")
    std::error_code ec;
    return !std::filesystem::is_directory(dir, ec);
  };
  if (rotate->parsed()) {
    if (rotate_ids.empty() && !rotate_coordinator)
      return Usage("rotate: name device ids, or --coordinator, or both");
    if (no_folder(rotate_keys)) return Usage(fmt::format("keys folder '{}' not found", rotate_keys));
    if (!rotate_ids.empty()) {
      auto done = fedrt::net::RotateDevices(rotate_keys, rotate_ids);
      if (!done.ok()) return Fail(done.status());
      for (const auto& d : *done) fmt::print("rotated {} index={} dir={}\n", d.id, d.index, d.dir);
      log.info("rotated {} device{} in {}: copy each folder to its device; registry.tsv rewritten", done->size(),
               done->size() == 1 ? "" : "s", rotate_keys);
    }
    if (rotate_coordinator) {
      fedrt::Status st = fedrt::net::RotateCoordinator(rotate_keys);
      if (!st.ok()) return Fail(st);
      fmt::print("rotated coordinator dir={}\n", rotate_keys);
      log.info("new coordinator key and certificate in {}: restart the coordinator to use them", rotate_keys);
    }
    return 0;
  }
  if (add->parsed()) {
    if (count <= 0 || count > kMaxDevices)
      return Usage(fmt::format("--count must be in 1..{}, got {}", kMaxDevices, count));
    if (no_folder(add_keys)) return Usage(fmt::format("keys folder '{}' not found", add_keys));
    auto added = fedrt::net::AddDevices(add_keys, static_cast<uint32_t>(count), add_prefix);
    if (!added.ok()) return Fail(added.status());
    for (const auto& d : *added) fmt::print("added {} index={} dir={}\n", d.id, d.index, d.dir);
    log.info("added {} device{} to {}; registry.tsv rewritten", added->size(), added->size() == 1 ? "" : "s", add_keys);
    return 0;
  }
  if (revoke->parsed()) {
    if (no_folder(revoke_keys)) return Usage(fmt::format("keys folder '{}' not found", revoke_keys));
    const double now = static_cast<double>(
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
    auto done = fedrt::net::RevokeDevices(revoke_keys, ids, reason, now);
    if (!done.ok()) return Fail(done.status());
    for (const auto& r : done->revoked) fmt::print("revoked {} reason=\"{}\"\n", r.id, r.reason);
    for (const auto& r : done->already)
      fmt::print("already revoked {} at={} reason=\"{}\"\n", r.id, r.revoked_at, r.reason);
    if (!done->revoked.empty()) log.info("revoked.tsv in {} rewritten", revoke_keys);
    return 0;
  }

  if (out_opt->count() == 0 && devices_opt->count() == 0)
    return Usage("nothing to do: give --out DIR --devices N (a new fleet) or a subcommand: add, revoke, rotate (see --help)");
  if (out_opt->count() == 0 || devices_opt->count() == 0)
    return Usage(fmt::format("a new fleet needs --out DIR and --devices N: {} is missing",
                             out_opt->count() == 0 ? "--out" : "--devices"));
  if (devices <= 0 || devices > kMaxDevices)
    return Usage(fmt::format("--devices must be in 1..{}, got {}", kMaxDevices, devices));
  const std::vector<std::string> old = fedrt::net::FleetFiles(out);
  if (force && !old.empty())
    log.warn("replacing the fleet in {}: {} (its devices must be provisioned again)", out, fmt::join(old, ", "));
  fedrt::Status st = fedrt::net::ProvisionFleet(out, static_cast<uint32_t>(devices), prefix, force);
  if (!st.ok()) return Fail(st);
  log.info("provisioned CA, coordinator and {} devices in {}", devices, out);
  return 0;
}
