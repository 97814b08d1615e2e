#include "fedrt/device/state.h"

#include <fcntl.h>
#include <sys/uio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <array>
#include <cstring>
#include <filesystem>
#include <sstream>

#include <fmt/format.h>

#include "fedrt/task/fingerprint.h"

namespace fedrt::net {

namespace {

constexpr const char* kMagic = "fedrt-device-state";
constexpr int kVersion = 4;  // 3: the same with a byte-wise FNV-1a checksum of the state
constexpr size_t kHeaderBytes = 256;  // one text line, NUL-padded
constexpr uint64_t kMaxState = uint64_t{64} << 30;  // a sanity bound on a header's size field (64-bit: a 32-bit size_t cannot hold it); the file bounds it too

std::string PathOf(const std::string& dir) { return dir + "/session.state"; }

// What a slot's header says, everything but the checksum.
std::string Fields(int version, uint64_t seq, const SavedSession& s, size_t n) {
  return fmt::format("{} {} {} {:016x} {} {} {} {} {} {}", kMagic, version, seq, s.fingerprint, s.algorithm, s.run,
                     s.agent, s.pending ? 1 : 0, s.pending_round, n);
}

// FNV-1a of the header fields, then of the state: byte by byte (version 3) or
// the state's word-wise StateDigest (version 4; byte-wise hashing cost a
// device about 30 ms per save at d = 10^6).
uint64_t Checksum(int version, const std::string& fields, const uint8_t* state, size_t n) {
  task::Fnv1a h;
  h.bytes(fields.data(), fields.size());
  if (version == 3) {
    h.bytes(state, n);
  } else {
    const uint64_t d = StateDigest(state, n);
    h.bytes(&d, sizeof d);
  }
  return h.value();
}

// A slot is the header line (NUL-padded to kHeaderBytes), then the state bytes.
std::array<uint8_t, kHeaderBytes> SlotHeader(uint64_t seq, const SavedSession& s, const uint8_t* state, size_t n) {
  const std::string fields = Fields(kVersion, seq, s, n);
  const std::string line = fmt::format("{} {:016x}\n", fields, Checksum(kVersion, fields, state, n));
  std::array<uint8_t, kHeaderBytes> out{};
  std::memcpy(out.data(), line.data(), std::min(line.size(), kHeaderBytes));
  return out;
}

// Writes slot `k` (header and state, without copying the state) at its place.
bool WriteSlot(int fd, size_t k, size_t slot_bytes, uint64_t seq, const SavedSession& s, const uint8_t* state,
               size_t n) {
  std::array<uint8_t, kHeaderBytes> header = SlotHeader(seq, s, state, n);
  iovec v[2] = {{header.data(), header.size()}, {const_cast<uint8_t*>(state), n}};
  return ::pwritev(fd, v, 2, static_cast<off_t>(k * slot_bytes)) == static_cast<ssize_t>(slot_bytes);
}

// Parses the slot at `p` (of `avail` bytes); false if it is not an intact copy.
bool ParseSlot(const uint8_t* p, size_t avail, uint64_t* seq, SavedSession* s) {
  if (avail < kHeaderBytes) return false;
  const char* h = reinterpret_cast<const char*>(p);
  const std::string line(h, strnlen(h, kHeaderBytes));
  std::istringstream in(line);
  std::string magic, fp, sum;
  int version = 0, pending = 0;
  size_t n = 0;
  if (!(in >> magic >> version >> *seq >> fp >> s->algorithm >> s->run >> s->agent >> pending >> s->pending_round >> n >>
        sum) ||
      magic != kMagic || (version != kVersion && version != 3) || n > kMaxState || avail < kHeaderBytes + n)
    return false;
  s->fingerprint = std::strtoull(fp.c_str(), nullptr, 16);
  s->pending = pending != 0;
  s->state.assign(p + kHeaderBytes, p + kHeaderBytes + n);
  return std::strtoull(sum.c_str(), nullptr, 16) == Checksum(version, Fields(version, *seq, *s, n), s->state.data(), n);
}

std::vector<uint8_t> ReadAll(const std::string& path, bool* exists) {
  std::vector<uint8_t> bytes;
  const int fd = ::open(path.c_str(), O_RDONLY);
  *exists = fd >= 0;
  if (fd < 0) return bytes;
  uint8_t buf[65536];
  for (ssize_t r; (r = ::read(fd, buf, sizeof buf)) > 0;) bytes.insert(bytes.end(), buf, buf + r);
  ::close(fd);
  return bytes;
}

}  // namespace

Result<std::optional<SavedSession>> LoadSavedSession(const std::string& dir) {
  if (dir.empty()) return std::optional<SavedSession>();
  const std::string path = PathOf(dir);
  bool exists = false;
  const std::vector<uint8_t> bytes = ReadAll(path, &exists);
  if (!exists) return std::optional<SavedSession>();  // first start
  std::optional<SavedSession> best;
  uint64_t best_seq = 0;
  SavedSession first;
  uint64_t seq = 0;
  if (ParseSlot(bytes.data(), bytes.size(), &seq, &first)) {
    best = first;
    best_seq = seq;
  }
  // Slot 1 starts where slot 0 ends; slot 0's header gives its size even if its state is torn.
  const size_t slot_bytes = kHeaderBytes + (best ? best->state.size() : 0);
  if (best && bytes.size() >= 2 * slot_bytes) {
    SavedSession second;
    if (ParseSlot(bytes.data() + slot_bytes, bytes.size() - slot_bytes, &seq, &second) && seq > best_seq) best = second;
  } else if (!best && bytes.size() >= 2 * kHeaderBytes) {  // slot 0 torn: find slot 1 from the file's size
    const size_t half = bytes.size() / 2;
    SavedSession second;
    if (bytes.size() % 2 == 0 && ParseSlot(bytes.data() + half, half, &seq, &second)) best = second;
  }
  if (!best)
    return Status(StatusCode::kDataLoss,
                  fmt::format("state file '{}' is damaged: no intact copy (remove it to start fresh)", path));
  return best;
}

// Two slots, written in turn: a power cut while one is written leaves the
// other intact. A slot overwrites blocks already allocated, so a durable save
// costs one fdatasync and no journal commit; a session of another size starts
// a new file (written to a temporary, synced and renamed).
Status SaveSession(const std::string& dir, const SavedSession& s, bool durable) {
  return SaveSession(dir, s, s.state.data(), s.state.size(), durable);
}

Status SaveSession(const std::string& dir, const SavedSession& s, const uint8_t* state, size_t n, bool durable) {
  if (dir.empty()) return Status::Ok();
  const std::string path = PathOf(dir);
  const size_t slot_bytes = kHeaderBytes + n;
  int fd = ::open(path.c_str(), O_RDWR);
  struct stat st {};
  if (fd >= 0 && ::fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) == 2 * slot_bytes) {
    uint8_t h[2][kHeaderBytes];
    uint64_t seq[2] = {0, 0};
    for (int k = 0; k < 2; ++k) {
      SavedSession ignored;
      if (::pread(fd, h[k], kHeaderBytes, static_cast<off_t>(k * slot_bytes)) == static_cast<ssize_t>(kHeaderBytes)) {
        // Only the sequence number matters here; an unparsable header counts as 0.
        std::istringstream in(std::string(reinterpret_cast<const char*>(h[k]), strnlen(reinterpret_cast<const char*>(h[k]), kHeaderBytes)));
        std::string magic;
        int version = 0;
        if (!(in >> magic >> version >> seq[k]) || magic != kMagic) seq[k] = 0;
      }
    }
    const int target = seq[0] <= seq[1] ? 0 : 1;  // overwrite the older copy
    bool ok = WriteSlot(fd, static_cast<size_t>(target), slot_bytes, std::max(seq[0], seq[1]) + 1, s, state, n);
    ok = ok && (!durable || ::fdatasync(fd) == 0);
    ::close(fd);
    if (!ok) return Status(StatusCode::kDataLoss, fmt::format("cannot write state file '{}'", path));
    return Status::Ok();
  }
  if (fd >= 0) ::close(fd);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::string tmp = path + ".tmp";
  fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return Status(StatusCode::kUnavailable, fmt::format("cannot write state file '{}'", tmp));
  // Slot 0, then slot 1 all zeros until the next save.
  bool ok = WriteSlot(fd, 0, slot_bytes, 1, s, state, n) && ::ftruncate(fd, static_cast<off_t>(2 * slot_bytes)) == 0;
  ok = ok && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) return Status(StatusCode::kDataLoss, fmt::format("short write to state file '{}'", tmp));
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return Status(StatusCode::kDataLoss, fmt::format("cannot replace state file '{}'", path));
  return Status::Ok();
}

uint64_t StateDigest(const uint8_t* p, size_t n) {
  constexpr uint64_t kOffset = 14695981039346656037ull, kPrime = 1099511628211ull;
  uint64_t lane[4] = {kOffset, kOffset ^ 1, kOffset ^ 2, kOffset ^ 3};
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int k = 0; k < 4; ++k) {
      uint64_t w;
      std::memcpy(&w, p + i + 8 * k, 8);
      lane[k] = (lane[k] ^ w) * kPrime;
    }
  for (; i < n; ++i) lane[0] = (lane[0] ^ p[i]) * kPrime;
  uint64_t h = kOffset;
  for (uint64_t v : lane) h = (h ^ v) * kPrime;
  return (h ^ n) * kPrime;
}

}  // namespace fedrt::net
