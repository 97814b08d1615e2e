// Key and certificate writing with mbedTLS's own x509write API: the CA, the
// coordinator and the devices of a keys folder (keys_provision.h).

#include "fedrt/keys/provision.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <mbedtls/bignum.h>
#include <mbedtls/ecp.h>
#include <mbedtls/oid.h>
#include <mbedtls/pk.h>
#include <mbedtls/platform_util.h>
#include <mbedtls/x509_crt.h>

#include "private_file.h"

namespace fedrt::net {

namespace {

namespace fs = std::filesystem;

constexpr const char* kCaName = "CN=fedrt-ca,O=fedrt";
constexpr uint32_t kMaxIndex = 999999999;  // serial 100 + index fits an int

struct Key {
  mbedtls_pk_context pk;
  Key() { mbedtls_pk_init(&pk); }
  ~Key() { mbedtls_pk_free(&pk); }
  Key(const Key&) = delete;
  Key& operator=(const Key&) = delete;
};

struct Cert {
  mbedtls_x509_crt crt;
  Cert() { mbedtls_x509_crt_init(&crt); }
  ~Cert() { mbedtls_x509_crt_free(&crt); }
  Cert(const Cert&) = delete;
  Cert& operator=(const Cert&) = delete;
};

// What signs a device's certificate.
struct Issuer {
  Key key;
  std::string name;  // its subject, as mbedtls_x509write_crt_set_issuer_name reads it
  std::string pem;   // its certificate, copied to every device folder
};

Status GenKey(Key& key, TlsRandom& rng, std::string& pem) {
  int rc = mbedtls_pk_setup(&key.pk, mbedtls_pk_info_from_type(MBEDTLS_PK_ECKEY));
  if (rc == 0)
    rc = mbedtls_ecp_gen_key(MBEDTLS_ECP_DP_SECP256R1, mbedtls_pk_ec(key.pk), mbedtls_ctr_drbg_random, rng.drbg());
  std::vector<unsigned char> buf(4096);
  if (rc == 0) rc = mbedtls_pk_write_key_pem(&key.pk, buf.data(), buf.size());
  if (rc != 0) return Status(StatusCode::kInternal, "key generation: " + TlsErrorString(rc));
  pem = reinterpret_cast<const char*>(buf.data());
  mbedtls_platform_zeroize(buf.data(), buf.size());  // the private key's only other copy
  return Status::Ok();
}

Status MakeCert(Key& subject, Key& issuer, const std::string& subject_name, const std::string& issuer_name,
                int serial, bool is_ca, TlsRandom& rng, std::string& pem) {
  mbedtls_x509write_cert crt;
  mbedtls_x509write_crt_init(&crt);
  mbedtls_x509write_crt_set_version(&crt, MBEDTLS_X509_CRT_VERSION_3);
  mbedtls_x509write_crt_set_md_alg(&crt, MBEDTLS_MD_SHA256);
  mbedtls_x509write_crt_set_subject_key(&crt, &subject.pk);
  mbedtls_x509write_crt_set_issuer_key(&crt, &issuer.pk);
  int rc = mbedtls_x509write_crt_set_subject_name(&crt, subject_name.c_str());
  if (rc == 0) rc = mbedtls_x509write_crt_set_issuer_name(&crt, issuer_name.c_str());
  // The serial as big-endian bytes, leading zeros dropped (a positive INTEGER: serials are < 2^31).
  unsigned char sn[4] = {static_cast<unsigned char>(serial >> 24), static_cast<unsigned char>(serial >> 16),
                         static_cast<unsigned char>(serial >> 8), static_cast<unsigned char>(serial)};
  size_t skip = 0;
  while (skip < 3 && sn[skip] == 0 && sn[skip + 1] < 0x80) ++skip;
  if (rc == 0) rc = mbedtls_x509write_crt_set_serial_raw(&crt, sn + skip, sizeof sn - skip);
  if (rc == 0) rc = mbedtls_x509write_crt_set_validity(&crt, "20240101000000", "20491231235959");
  if (rc == 0) rc = mbedtls_x509write_crt_set_basic_constraints(&crt, is_ca ? 1 : 0, is_ca ? 0 : -1);
  if (rc == 0)
    rc = mbedtls_x509write_crt_set_key_usage(
        &crt, is_ca ? (MBEDTLS_X509_KU_KEY_CERT_SIGN | MBEDTLS_X509_KU_CRL_SIGN) : MBEDTLS_X509_KU_DIGITAL_SIGNATURE);
  std::vector<unsigned char> buf(4096);
  if (rc == 0) rc = mbedtls_x509write_crt_pem(&crt, buf.data(), buf.size(), mbedtls_ctr_drbg_random, rng.drbg());
  mbedtls_x509write_crt_free(&crt);
  if (rc != 0) return Status(StatusCode::kInternal, fmt::format("certificate '{}': {}", subject_name, TlsErrorString(rc)));
  pem = reinterpret_cast<const char*>(buf.data());
  return Status::Ok();
}

Status MakeDir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status(StatusCode::kPermissionDenied, fmt::format("cannot create '{}': {}", dir.string(), ec.message()));
  fs::permissions(dir, fs::perms::owner_all, ec);
  return Status::Ok();
}

std::string DeviceId(const std::string& prefix, uint32_t index) { return fmt::format("{}{:04d}", prefix, index); }

// A serial for a reissued certificate: random in [2^30, 2^31), above every
// first-issue serial (100 + index), so old and new certificates differ.
Status RandomSerial(TlsRandom& rng, int& serial) {
  uint32_t r = 0;
  if (mbedtls_ctr_drbg_random(rng.drbg(), reinterpret_cast<unsigned char*>(&r), sizeof r) != 0)
    return Status(StatusCode::kInternal, std::string("serial generation failed"));
  serial = static_cast<int>((1u << 30) | (r & ((1u << 30) - 1)));
  return Status::Ok();
}

Status CheckPrefix(const std::string& prefix) {
  for (char c : prefix)
    if (c == '/' || c == '\\' || static_cast<unsigned char>(c) <= ' ' || c == ',' || c == '=')
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("device id prefix '{}' holds a space, a control character or one of / \\ , =", prefix));
  return Status::Ok();
}

// Device `id`'s folder (key, certificate, CA certificate, PSK); returns its
// registry line. `rotate`: the folder exists and each file is replaced
// atomically, the certificate with a random serial (keys rotate).
Result<std::string> WriteDevice(const fs::path& keys, const std::string& id, uint32_t index, Issuer& ca,
                                TlsRandom& rng, bool rotate = false) {
  const fs::path dir = keys / "devices" / id;
  if (!rotate) FEDRT_TRY(MakeDir(dir));
  Key k;
  std::string key_pem, crt_pem;
  FEDRT_TRY(GenKey(k, rng, key_pem));
  int serial = 100 + static_cast<int>(index);
  if (rotate) FEDRT_TRY(RandomSerial(rng, serial));
  FEDRT_TRY(MakeCert(k, ca.key, fmt::format("CN={},O=fedrt", id), ca.name, serial, false, rng, crt_pem));
  unsigned char psk[32];
  if (mbedtls_ctr_drbg_random(rng.drbg(), psk, sizeof psk) != 0)
    return Status(StatusCode::kInternal, std::string("PSK generation failed"));
  const std::string hex = BytesToHex(psk, sizeof psk);
  mbedtls_platform_zeroize(psk, sizeof psk);
  auto write = rotate ? ReplacePrivateFile : WritePrivateFile;
  FEDRT_TRY(write((dir / "device.key").string(), key_pem));
  FEDRT_TRY(write((dir / "device.crt").string(), crt_pem));
  FEDRT_TRY(write((dir / "ca.crt").string(), ca.pem));
  FEDRT_TRY(write((dir / "device.psk").string(), hex + "\n"));
  return fmt::format("{}\t{}\t{}\n", id, index, hex);
}

// The CA of an existing folder: its key must match its certificate, and its
// subject becomes the issuer name of the new certificates.
Status LoadIssuer(const fs::path& keys, Issuer& ca, TlsRandom& rng) {
  const std::string key_path = (keys / "ca.key").string(), crt_path = (keys / "ca.crt").string();
  int rc = mbedtls_pk_parse_keyfile(&ca.key.pk, key_path.c_str(), nullptr, mbedtls_ctr_drbg_random, rng.drbg());
  if (rc != 0) return Status(StatusCode::kNotFound, fmt::format("CA key '{}': {}", key_path, TlsErrorString(rc)));
  Cert cert;
  rc = mbedtls_x509_crt_parse_file(&cert.crt, crt_path.c_str());
  if (rc != 0) return Status(StatusCode::kNotFound, fmt::format("CA certificate '{}': {}", crt_path, TlsErrorString(rc)));
  if (mbedtls_pk_check_pair(&cert.crt.pk, &ca.key.pk, mbedtls_ctr_drbg_random, rng.drbg()) != 0)
    return Status(StatusCode::kFailedPrecondition, fmt::format("'{}' is not the key of '{}'", key_path, crt_path));
  for (const mbedtls_x509_name* n = &cert.crt.subject; n != nullptr && n->oid.p != nullptr; n = n->next) {
    const char* attr = nullptr;
    if (mbedtls_oid_get_attr_short_name(&n->oid, &attr) != 0)
      return Status(StatusCode::kFailedPrecondition,
                    fmt::format("CA certificate '{}': its subject has an attribute mbedTLS cannot name", crt_path));
    std::string value;
    for (size_t i = 0; i < n->val.len; ++i) {
      const char c = static_cast<char>(n->val.p[i]);
      if (c == '\\' || c == '\0')
        return Status(StatusCode::kFailedPrecondition,
                      fmt::format("CA certificate '{}': its subject cannot be written back", crt_path));
      if (c == ',') value += '\\';
      value += c;
    }
    ca.name += fmt::format("{}{}={}", ca.name.empty() ? "" : ",", attr, value);
  }
  auto pem = ReadWholeFile(crt_path);
  if (!pem.ok()) return pem.status();
  ca.pem = pem.take();
  return Status::Ok();
}

}  // namespace

std::vector<std::string> FleetFiles(const std::string& out_dir) {
  const fs::path out(out_dir);
  std::vector<std::string> found;
  std::error_code ec;
  for (const char* f : {"ca.key", "ca.crt", "coordinator.key", "coordinator.crt", "registry.tsv", "revoked.tsv"})
    if (fs::exists(out / f, ec)) found.emplace_back(f);
  size_t folders = 0;
  if (fs::is_directory(out / "devices", ec))
    for (const auto& e : fs::directory_iterator(out / "devices", ec))
      if (e.is_directory(ec)) ++folders;
  if (folders > 0) found.push_back(fmt::format("{} device folder{}", folders, folders == 1 ? "" : "s"));
  return found;
}

Status ProvisionFleet(const std::string& out_dir, uint32_t devices, const std::string& prefix, bool replace) {
  const fs::path out(out_dir);
  FEDRT_TRY(CheckPrefix(prefix));
  const std::vector<std::string> old = FleetFiles(out_dir);
  if (!old.empty() && !replace)
    return Status(StatusCode::kAlreadyExists,
                  fmt::format("'{}' already holds a fleet ({}); a new CA would leave its devices with credentials "
                              "the coordinator no longer accepts. Add devices with 'fedrt-keys add --keys {}', or "
                              "give --force to replace the whole fleet",
                              out_dir, fmt::join(old, ", "), out_dir));
  if (!old.empty()) {
    std::error_code ec;
    fs::remove_all(out / "devices", ec);  // stale device folders would hold the old CA's credentials
    if (ec) return Status(StatusCode::kInternal, fmt::format("cannot remove '{}': {}", (out / "devices").string(), ec.message()));
  }
  FEDRT_TRY(MakeDir(out));
  FEDRT_TRY(MakeDir(out / "devices"));
  TlsRandom rng;
  FEDRT_TRY(rng.init("fedrt-keys"));
  Issuer ca;
  ca.name = kCaName;
  std::string ca_key_pem;
  FEDRT_TRY(GenKey(ca.key, rng, ca_key_pem));
  FEDRT_TRY(MakeCert(ca.key, ca.key, ca.name, ca.name, 1, true, rng, ca.pem));
  FEDRT_TRY(WritePrivateFile((out / "ca.key").string(), ca_key_pem));
  FEDRT_TRY(WritePrivateFile((out / "ca.crt").string(), ca.pem));
  {
    Key k;
    std::string key_pem, crt_pem;
    FEDRT_TRY(GenKey(k, rng, key_pem));
    FEDRT_TRY(MakeCert(k, ca.key, "CN=fedrt-coordinator,O=fedrt", ca.name, 2, false, rng, crt_pem));
    FEDRT_TRY(WritePrivateFile((out / "coordinator.key").string(), key_pem));
    FEDRT_TRY(WritePrivateFile((out / "coordinator.crt").string(), crt_pem));
  }
  std::string registry = "# id\tindex\tpsk_hex (secret: keep on the coordinator only)\n";
  for (uint32_t i = 0; i < devices; ++i) {
    auto line = WriteDevice(out, DeviceId(prefix, i), i, ca, rng);
    if (!line.ok()) return line.status();
    registry += *line;
  }
  std::error_code ec;
  fs::remove(out / "revoked.tsv", ec);  // an earlier fleet's: its ids would name these devices
  return ReplacePrivateFile((out / "registry.tsv").string(), registry);
}

std::string RegistryPrefix(const std::vector<RegistryEntry>& entries) {
  std::string common;
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string& id = entries[i].id;
    const std::string tail = fmt::format("{:04d}", entries[i].index);
    if (id.size() < tail.size() || id.compare(id.size() - tail.size(), tail.size(), tail) != 0) return "dev";
    const std::string p = id.substr(0, id.size() - tail.size());
    if (i == 0) common = p;
    else if (p != common) return "dev";
  }
  return entries.empty() || !CheckPrefix(common).ok() ? "dev" : common;
}

Result<std::vector<NewDevice>> AddDevices(const std::string& keys_dir, uint32_t count, const std::string& prefix_in) {
  const fs::path keys(keys_dir);
  const std::string registry_path = (keys / "registry.tsv").string();
  std::error_code ec;
  if (!fs::is_directory(keys, ec))
    return Status(StatusCode::kNotFound, fmt::format("keys folder '{}' not found (create one with --out)", keys_dir));
  auto registry = LoadRegistry(registry_path);
  if (!registry.ok()) return registry.status();
  auto text = ReadWholeFile(registry_path);
  if (!text.ok()) return text.status();
  const std::string prefix = prefix_in.empty() ? RegistryPrefix(*registry) : prefix_in;
  FEDRT_TRY(CheckPrefix(prefix));

  uint64_t next = 0;
  std::set<std::string> ids;
  for (const RegistryEntry& e : *registry) {
    next = std::max<uint64_t>(next, uint64_t{e.index} + 1);
    ids.insert(e.id);
  }
  if (count == 0 || next + count - 1 > kMaxIndex)
    return Status(StatusCode::kOutOfRange,
                  fmt::format("cannot add {} devices after agent index {} (largest index: {})", count, next, kMaxIndex));
  std::vector<NewDevice> added;
  for (uint32_t k = 0; k < count; ++k) {
    NewDevice d;
    d.index = static_cast<uint32_t>(next + k);
    d.id = DeviceId(prefix, d.index);
    d.dir = (keys / "devices" / d.id).string();
    if (ids.count(d.id) != 0)
      return Status(StatusCode::kAlreadyExists, fmt::format("device id '{}' is already in '{}'", d.id, registry_path));
    if (fs::exists(d.dir, ec))
      return Status(StatusCode::kAlreadyExists,
                    fmt::format("'{}' already exists but '{}' does not list {} (left by an earlier fleet or a failed "
                                "add?): move it away first",
                                d.dir, registry_path, d.id));
    added.push_back(std::move(d));
  }

  Issuer ca;
  TlsRandom rng;
  FEDRT_TRY(rng.init("fedrt-keys add"));
  FEDRT_TRY(LoadIssuer(keys, ca, rng));
  std::string updated = *text;
  if (!updated.empty() && updated.back() != '\n') updated += '\n';
  for (const NewDevice& d : added) {
    auto line = WriteDevice(keys, d.id, d.index, ca, rng);
    if (!line.ok()) return line.status();
    updated += *line;
  }
  // Last: the coordinator learns of the devices once their folders are whole.
  FEDRT_TRY(ReplacePrivateFile(registry_path, updated));
  return added;
}

Result<RevokeOutcome> RevokeDevices(const std::string& keys_dir, const std::vector<std::string>& ids,
                                    const std::string& reason, double now) {
  const fs::path keys(keys_dir);
  const std::string registry_path = (keys / "registry.tsv").string();
  if (ids.empty()) return Status(StatusCode::kInvalidArgument, std::string("no device id to revoke"));
  auto registry = LoadRegistry(registry_path);
  if (!registry.ok()) return registry.status();
  std::set<std::string> known;
  for (const RegistryEntry& e : *registry) known.insert(e.id);
  std::string unknown;
  for (const std::string& id : ids)
    if (known.count(id) == 0) unknown += fmt::format("{}'{}'", unknown.empty() ? "" : ", ", id);
  if (!unknown.empty())
    return Status(StatusCode::kNotFound,
                  fmt::format("unknown device id {} (not in '{}'): nothing revoked", unknown, registry_path));

  const std::string path = (keys / "revoked.tsv").string();
  auto list = ReadRevocations(path);
  if (!list.ok()) return list.status();
  RevokeOutcome out;
  std::set<std::string> seen;
  for (const std::string& id : ids) {
    if (!seen.insert(id).second) continue;  // named twice on the command line
    auto it = std::find_if(list->begin(), list->end(), [&](const Revocation& r) { return r.id == id; });
    if (it != list->end()) {
      out.already.push_back(*it);
      continue;
    }
    list->push_back(Revocation{id, now, CleanReason(reason)});
    out.revoked.push_back(list->back());
  }
  if (!out.revoked.empty()) FEDRT_TRY(WriteRevocations(path, *list));
  return out;
}

Result<std::vector<NewDevice>> RotateDevices(const std::string& keys_dir, const std::vector<std::string>& ids) {
  const fs::path keys(keys_dir);
  const std::string registry_path = (keys / "registry.tsv").string();
  if (ids.empty()) return Status(StatusCode::kInvalidArgument, std::string("no device id to rotate"));
  auto registry = LoadRegistry(registry_path);
  if (!registry.ok()) return registry.status();
  auto text = ReadWholeFile(registry_path);
  if (!text.ok()) return text.status();
  std::vector<NewDevice> out;
  std::string unknown;
  std::error_code ec;
  for (const std::string& id : ids) {
    auto it = std::find_if(registry->begin(), registry->end(), [&](const RegistryEntry& e) { return e.id == id; });
    if (it == registry->end()) {
      unknown += fmt::format("{}'{}'", unknown.empty() ? "" : ", ", id);
      continue;
    }
    if (std::any_of(out.begin(), out.end(), [&](const NewDevice& d) { return d.id == id; })) continue;
    NewDevice d{id, it->index, (keys / "devices" / id).string()};
    if (!fs::is_directory(d.dir, ec))
      return Status(StatusCode::kNotFound, fmt::format("'{}' is in '{}' but its folder '{}' is missing: nothing rotated",
                                                       id, registry_path, d.dir));
    out.push_back(std::move(d));
  }
  if (!unknown.empty())
    return Status(StatusCode::kNotFound,
                  fmt::format("unknown device id {} (not in '{}'): nothing rotated", unknown, registry_path));
  Issuer ca;
  TlsRandom rng;
  FEDRT_TRY(rng.init("fedrt-keys rotate"));
  FEDRT_TRY(LoadIssuer(keys, ca, rng));
  std::map<std::string, std::string> lines;  // id -> its new registry line
  for (const NewDevice& d : out) {
    auto line = WriteDevice(keys, d.id, d.index, ca, rng, /*rotate=*/true);
    if (!line.ok()) return line.status();
    lines[d.id] = *line;
  }
  // The registry with the rotated devices' lines replaced, comments and order kept.
  std::string updated, line;
  std::istringstream in(*text);
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string id;
    ls >> id;
    auto it = line.empty() || line[0] == '#' ? lines.end() : lines.find(id);
    updated += it != lines.end() ? it->second : line + "\n";
  }
  FEDRT_TRY(ReplacePrivateFile(registry_path, updated));
  return out;
}

Status IssueServerCertificate(const std::string& keys_dir, const std::string& dir, const std::string& name) {
  const fs::path keys(keys_dir), out(dir);
  Issuer ca;
  TlsRandom rng;
  FEDRT_TRY(rng.init("fedrt-keys server certificate"));
  FEDRT_TRY(LoadIssuer(keys, ca, rng));
  Key k;
  std::string key_pem, crt_pem;
  int serial = 0;
  FEDRT_TRY(GenKey(k, rng, key_pem));
  FEDRT_TRY(RandomSerial(rng, serial));
  FEDRT_TRY(MakeCert(k, ca.key, "CN=fedrt-coordinator,O=fedrt", ca.name, serial, false, rng, crt_pem));
  FEDRT_TRY(ReplacePrivateFile((out / (name + ".key")).string(), key_pem));
  return ReplacePrivateFile((out / (name + ".crt")).string(), crt_pem);
}

Status RotateCoordinator(const std::string& keys_dir) { return IssueServerCertificate(keys_dir, keys_dir, "coordinator"); }

}  // namespace fedrt::net
