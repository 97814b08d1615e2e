#include "fedrt/keys/gateways.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <mbedtls/platform_util.h>

#include "fedrt/keys/provision.h"
#include "private_file.h"

namespace fedrt::net {

namespace fs = std::filesystem;

std::string GatewayId(uint32_t g) { return fmt::format("gw{:02}", g); }

Result<std::vector<std::string>> ProvisionGateways(const std::string& keys, uint32_t count) {
  if (count == 0 || count > 4096) return Status(StatusCode::kInvalidArgument, fmt::format("--count must be in 1..4096, got {}", count));
  auto devices = LoadRegistry((fs::path(keys) / "registry.tsv").string());
  if (!devices.ok()) return devices.status();
  TlsRandom rng;
  FEDRT_TRY(rng.init("fedrt-keys-gateways"));
  std::string table = "# id\tpsk_hex\tdevices (secret: keep on the coordinator only)\n";
  std::vector<std::string> dirs;
  for (uint32_t g = 0; g < count; ++g) {
    const std::string id = GatewayId(g);
    const fs::path dir = fs::path(keys) / "gateways" / id;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return Status(StatusCode::kInternal, fmt::format("cannot create '{}': {}", dir.string(), ec.message()));
    fs::permissions(dir.parent_path(), fs::perms::owner_all, ec);
    fs::permissions(dir, fs::perms::owner_all, ec);
    unsigned char psk[32];
    if (mbedtls_ctr_drbg_random(rng.drbg(), psk, sizeof psk) != 0)
      return Status(StatusCode::kInternal, std::string("PSK generation failed"));
    const std::string hex = BytesToHex(psk, sizeof psk);
    mbedtls_platform_zeroize(psk, sizeof psk);
    std::string registry = "# id\tindex\tpsk_hex (the devices behind gateway " + id + ")\n", ids;
    for (const RegistryEntry& e : *devices) {
      if (e.index % count != g) continue;
      registry += fmt::format("{}\t{}\t{}\n", e.id, e.index, BytesToHex(e.psk.data(), e.psk.size()));
      ids += (ids.empty() ? "" : ",") + e.id;
    }
    FEDRT_TRY(ReplacePrivateFile((dir / "gateway.psk").string(), hex + "\n"));
    FEDRT_TRY(ReplacePrivateFile((dir / "registry.tsv").string(), registry));
    // Devices in certificate mode: the fleet's CA, and a server certificate like the coordinator's.
    std::ifstream ca_in(fs::path(keys) / "ca.crt");
    if (!ca_in) return Status(StatusCode::kNotFound, fmt::format("{}/ca.crt: not found (fedrt-keys --out makes it)", keys));
    std::stringstream ca;
    ca << ca_in.rdbuf();
    FEDRT_TRY(ReplacePrivateFile((dir / "ca.crt").string(), ca.str()));
    FEDRT_TRY(IssueServerCertificate(keys, dir.string(), "gateway"));
    table += fmt::format("{}\t{}\t{}\n", id, hex, ids);
    dirs.push_back(dir.string());
  }
  FEDRT_TRY(ReplacePrivateFile((fs::path(keys) / "gateways.tsv").string(), table));
  return dirs;
}

Result<std::vector<GatewayEntry>> LoadGateways(const std::string& path) {
  std::vector<GatewayEntry> out;
  std::ifstream in(path);
  if (!in) return out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string id, hex, devices;
    std::getline(fields, id, '\t');
    std::getline(fields, hex, '\t');
    std::getline(fields, devices, '\t');
    bool ok = false;
    SecretBytes psk = HexToSecret(hex, &ok);
    if (id.empty() || id.size() > 63 || !ok || psk.size() < 16)
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("{}:{}: expected id<TAB>psk_hex (16..64 bytes)<TAB>device ids", path, n));
    GatewayEntry e{id, std::move(psk), {}};
    std::istringstream list(devices);
    for (std::string d; std::getline(list, d, ',');)
      if (!d.empty()) e.devices.push_back(d);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace fedrt::net
