// The credential files of the TLS layer: hex PSK files and the fleet's
// registry (keys/registry.tsv), decoded into zeroized storage (tls/tls.h).
#include "fedrt/tls/tls.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <mbedtls/platform_util.h>

namespace fedrt::net {

namespace {

int Nibble(char ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
  return -1;
}

// Appends the bytes `hex` spells to `out` (false on an odd length or a non-hex digit).
template <class Bytes>
bool DecodeHex(const std::string& hex, Bytes& out) {
  if (hex.size() % 2 != 0) return false;
  out.reserve(hex.size() / 2);  // one allocation: no copy left behind by growth
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    const int hi = Nibble(hex[i]), lo = Nibble(hex[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out.push_back(static_cast<uint8_t>(hi * 16 + lo));
  }
  return true;
}

}  // namespace

std::vector<uint8_t> HexToBytes(const std::string& hex, bool* ok) {
  std::vector<uint8_t> out;
  *ok = DecodeHex(hex, out);
  return out;
}

SecretBytes HexToSecret(const std::string& hex, bool* ok) {
  SecretBytes out;
  *ok = DecodeHex(hex, out);
  return out;
}

std::string BytesToHex(const uint8_t* data, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += fmt::format("{:02x}", data[i]);
  return s;
}

Result<SecretBytes> LoadPskFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status(StatusCode::kNotFound, fmt::format("cannot read PSK file '{}'", path));
  std::string hex;
  in >> hex;
  bool ok = false;
  SecretBytes bytes = HexToSecret(hex, &ok);
  mbedtls_platform_zeroize(hex.data(), hex.size());
  if (!ok || bytes.size() < 16 || bytes.size() > 64)
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("PSK file '{}' must hold 16..64 bytes as hex on one line", path));
  return bytes;
}

Result<std::vector<RegistryEntry>> LoadRegistry(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status(StatusCode::kNotFound, fmt::format("cannot read device registry '{}'", path));
  std::vector<RegistryEntry> out;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    RegistryEntry e;
    std::string hex;
    long index = -1;
    if (!(ls >> e.id >> index >> hex) || index < 0) {
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("{}:{}: expected 'id index psk_hex'", path, lineno));
    }
    bool ok = false;
    e.psk = HexToSecret(hex, &ok);
    mbedtls_platform_zeroize(hex.data(), hex.size());
    if (!ok || e.psk.size() < 16)
      return Status(StatusCode::kInvalidArgument, fmt::format("{}:{}: bad PSK hex", path, lineno));
    e.index = static_cast<uint32_t>(index);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace fedrt::net
