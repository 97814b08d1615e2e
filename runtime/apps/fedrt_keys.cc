// fedrt-keys: provisions a fleet with mbedTLS's own key and certificate
// writing: a CA, the coordinator's certificate, and per device a certificate
// (CN = device id), a key and a PSK. Every file is written with mode 0600.
//
//   DIR/ca.crt ca.key coordinator.crt coordinator.key
//   DIR/registry.tsv                 id<TAB>index<TAB>psk_hex (the coordinator's copy)
//   DIR/devices/ID/{ca.crt, device.crt, device.key, device.psk}  (copy to board ID)

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <mbedtls/bignum.h>
#include <mbedtls/ecp.h>
#include <mbedtls/pk.h>
#include <mbedtls/x509_crt.h>
#include <mbedtls/x509_csr.h>

#include "fedrt/log/log.h"
#include "fedrt/net/tls.h"

namespace {

using fedrt::Status;
using fedrt::StatusCode;

Status WritePrivate(const std::filesystem::path& path, const std::string& data) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return Status(StatusCode::kPermissionDenied, fmt::format("cannot write '{}'", path.string()));
  ::fchmod(fd, 0600);
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n <= 0) {
      ::close(fd);
      return Status(StatusCode::kDataLoss, fmt::format("short write to '{}'", path.string()));
    }
    off += static_cast<size_t>(n);
  }
  ::close(fd);
  return Status::Ok();
}

struct Key {
  mbedtls_pk_context pk;
  Key() { mbedtls_pk_init(&pk); }
  ~Key() { mbedtls_pk_free(&pk); }
};

Status GenKey(Key& key, fedrt::net::TlsRandom& rng, std::string& pem) {
  int rc = mbedtls_pk_setup(&key.pk, mbedtls_pk_info_from_type(MBEDTLS_PK_ECKEY));
  if (rc == 0)
    rc = mbedtls_ecp_gen_key(MBEDTLS_ECP_DP_SECP256R1, mbedtls_pk_ec(key.pk), mbedtls_ctr_drbg_random, rng.drbg());
  std::vector<unsigned char> buf(4096);
  if (rc == 0) rc = mbedtls_pk_write_key_pem(&key.pk, buf.data(), buf.size());
  if (rc != 0) return Status(StatusCode::kInternal, "key generation: " + fedrt::net::TlsErrorString(rc));
  pem = reinterpret_cast<const char*>(buf.data());
  return Status::Ok();
}

Status MakeCert(Key& subject, Key& issuer, const std::string& subject_name, const std::string& issuer_name,
                int serial, bool is_ca, fedrt::net::TlsRandom& rng, std::string& pem) {
  mbedtls_x509write_cert crt;
  mbedtls_x509write_crt_init(&crt);
  mbedtls_mpi sn;
  mbedtls_mpi_init(&sn);
  mbedtls_x509write_crt_set_version(&crt, MBEDTLS_X509_CRT_VERSION_3);
  mbedtls_x509write_crt_set_md_alg(&crt, MBEDTLS_MD_SHA256);
  mbedtls_x509write_crt_set_subject_key(&crt, &subject.pk);
  mbedtls_x509write_crt_set_issuer_key(&crt, &issuer.pk);
  int rc = mbedtls_x509write_crt_set_subject_name(&crt, subject_name.c_str());
  if (rc == 0) rc = mbedtls_x509write_crt_set_issuer_name(&crt, issuer_name.c_str());
  if (rc == 0) rc = mbedtls_mpi_lset(&sn, serial);
  if (rc == 0) rc = mbedtls_x509write_crt_set_serial(&crt, &sn);
  if (rc == 0) rc = mbedtls_x509write_crt_set_validity(&crt, "20240101000000", "20491231235959");
  if (rc == 0) rc = mbedtls_x509write_crt_set_basic_constraints(&crt, is_ca ? 1 : 0, is_ca ? 0 : -1);
  if (rc == 0)
    rc = mbedtls_x509write_crt_set_key_usage(
        &crt, is_ca ? (MBEDTLS_X509_KU_KEY_CERT_SIGN | MBEDTLS_X509_KU_CRL_SIGN) : MBEDTLS_X509_KU_DIGITAL_SIGNATURE);
  std::vector<unsigned char> buf(4096);
  if (rc == 0) rc = mbedtls_x509write_crt_pem(&crt, buf.data(), buf.size(), mbedtls_ctr_drbg_random, rng.drbg());
  mbedtls_mpi_free(&sn);
  mbedtls_x509write_crt_free(&crt);
  if (rc != 0)
    return Status(StatusCode::kInternal, fmt::format("certificate '{}': {}", subject_name, fedrt::net::TlsErrorString(rc)));
  pem = reinterpret_cast<const char*>(buf.data());
  return Status::Ok();
}

Status Provision(const std::filesystem::path& out, int devices, const std::string& prefix) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(out / "devices", ec);
  if (ec) return Status(StatusCode::kPermissionDenied, fmt::format("cannot create '{}': {}", out.string(), ec.message()));
  fs::permissions(out, fs::perms::owner_all, ec);
  fs::permissions(out / "devices", fs::perms::owner_all, ec);
  fedrt::net::TlsRandom rng;
  FEDRT_TRY(rng.init("fedrt-keys"));
  const std::string ca_name = "CN=fedrt-ca,O=fedrt";
  Key ca;
  std::string ca_key_pem, ca_pem;
  FEDRT_TRY(GenKey(ca, rng, ca_key_pem));
  FEDRT_TRY(MakeCert(ca, ca, ca_name, ca_name, 1, true, rng, ca_pem));
  FEDRT_TRY(WritePrivate(out / "ca.key", ca_key_pem));
  FEDRT_TRY(WritePrivate(out / "ca.crt", ca_pem));
  {
    Key k;
    std::string key_pem, crt_pem;
    FEDRT_TRY(GenKey(k, rng, key_pem));
    FEDRT_TRY(MakeCert(k, ca, "CN=fedrt-coordinator,O=fedrt", ca_name, 2, false, rng, crt_pem));
    FEDRT_TRY(WritePrivate(out / "coordinator.key", key_pem));
    FEDRT_TRY(WritePrivate(out / "coordinator.crt", crt_pem));
  }
  std::string registry = "# id\tindex\tpsk_hex (secret: keep on the coordinator only)\n";
  for (int i = 0; i < devices; ++i) {
    const std::string id = fmt::format("{}{:04d}", prefix, i);
    const fs::path dir = out / "devices" / id;
    fs::create_directories(dir, ec);
    if (ec) return Status(StatusCode::kPermissionDenied, fmt::format("cannot create '{}'", dir.string()));
    fs::permissions(dir, fs::perms::owner_all, ec);
    Key k;
    std::string key_pem, crt_pem;
    FEDRT_TRY(GenKey(k, rng, key_pem));
    FEDRT_TRY(MakeCert(k, ca, fmt::format("CN={},O=fedrt", id), ca_name, 100 + i, false, rng, crt_pem));
    unsigned char psk[32];
    if (mbedtls_ctr_drbg_random(rng.drbg(), psk, sizeof psk) != 0)
      return Status(StatusCode::kInternal, std::string("PSK generation failed"));
    const std::string hex = fedrt::net::BytesToHex(psk, sizeof psk);
    FEDRT_TRY(WritePrivate(dir / "device.key", key_pem));
    FEDRT_TRY(WritePrivate(dir / "device.crt", crt_pem));
    FEDRT_TRY(WritePrivate(dir / "ca.crt", ca_pem));
    FEDRT_TRY(WritePrivate(dir / "device.psk", hex + "\n"));
    registry += fmt::format("{}\t{}\t{}\n", id, i, hex);
  }
  return WritePrivate(out / "registry.tsv", registry);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fedrt-keys: provision a fleet (CA, coordinator certificate, per-device certificates and PSKs)"};
  std::string out;
  int devices = 0;
  std::string prefix = "dev";
  app.add_option("--out", out, "output directory")->required();
  app.add_option("--devices", devices, "number of devices N (agent indices 0..N-1)")->required();
  app.add_option("--prefix", prefix, "device id prefix (ids are PREFIX0000, PREFIX0001, ...)");
  std::string log_level = "info";
  fedrt::log::AddLevelFlag(app, log_level);
  CLI11_PARSE(app, argc, argv);
  (void)fedrt::log::SetLevel(log_level);  // checked by the flag
  if (devices <= 0 || devices > 100000) {
    fmt::print(stderr, "fedrt-keys: error: --devices must be in 1..100000, got {}\n", devices);
    return 2;
  }
  Status st = Provision(out, devices, prefix);
  if (!st.ok()) {
    fmt::print(stderr, "fedrt-keys: error: {}\n", st.message());
    return 1;
  }
  fedrt::log::Get("fedrt-keys").info("provisioned CA, coordinator and {} devices in {}", devices, out);
  return 0;
}
