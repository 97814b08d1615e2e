#pragma once
// Problem image: agent c's local TD(0) problem as provisioned to a device
// (fedrt-fw). A host tool (fedrt-fw-provision) builds TdOracle<float> from
// the experiment's double problem exactly as fedrt-device builds its oracle
// (cast to float), and writes its tables; the firmware maps them in place
// (no copy, no allocation). Layout, little-endian, 8-byte aligned:
//   ProblemImageHeader | float phi[n_states * dim] | pad to 8 |
//   TdTransition<float> atoms[n_atoms]
// crc32 (IEEE 802.3) covers every byte after the header.

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "fedrt/core/status.h"
#include "fedrt/problems/td_oracle.h"

namespace fedrt::fw {

constexpr uint32_t kProblemImageMagic = 0x49505246u;  // "FRPI"
constexpr uint32_t kProblemImageVersion = 1;
constexpr int kFwMaxDim = 32;  // largest d the firmware accepts

struct ProblemImageHeader {
  uint32_t magic;
  uint32_t version;
  uint32_t total_bytes;       // header + tables
  uint32_t crc32;             // of the bytes after the header
  uint64_t config_fingerprint;  // Hello.config_fingerprint (net::ProblemFingerprint of the experiment)
  uint32_t agent_index;       // c: the coordinator must assign this index (Welcome.device_index)
  uint32_t dim;               // d
  uint32_t n_states;
  uint32_t n_atoms;
  float gamma;                // discount factor
  uint32_t reserved;
};
static_assert(sizeof(ProblemImageHeader) == 48, "problem image header layout");
static_assert(sizeof(problems::TdTransition<float>) == 24, "alias table entry layout");

// Offsets of the two tables after the header.
constexpr size_t ProblemImagePhiOffset() { return sizeof(ProblemImageHeader); }
constexpr size_t ProblemImageAtomsOffset(uint32_t n_states, uint32_t dim) {
  return (sizeof(ProblemImageHeader) + sizeof(float) * size_t(n_states) * dim + 7u) & ~size_t(7);
}

// CRC-32 (IEEE, reflected, as zlib's crc32).
inline uint32_t Crc32(const uint8_t* data, size_t n, uint32_t crc = 0) {
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) {
    crc ^= data[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

// A validated view of an image (pointers into it).
struct ProblemView {
  uint64_t config_fingerprint = 0;
  uint32_t agent_index = 0;
  int dim = 0;
  uint32_t n_states = 0;
  problems::TdOracle<float> oracle;
};

// Validates an image once (magic, version, sizes, CRC, indices, finite
// values) and returns the oracle over its tables. `data` must be 8-aligned
// and outlive the view.
inline Result<ProblemView> ParseProblemImage(const uint8_t* data, size_t size) {
  if (data == nullptr || size < sizeof(ProblemImageHeader))
    return Status::InvalidArgument("problem image: shorter than its header");
  if ((reinterpret_cast<uintptr_t>(data) & 7u) != 0) return Status::InvalidArgument("problem image: not 8-byte aligned");
  ProblemImageHeader h;
  std::memcpy(&h, data, sizeof h);
  if (h.magic != kProblemImageMagic) return Status::InvalidArgument("problem image: bad magic (not provisioned?)");
  if (h.version != kProblemImageVersion) return Status::InvalidArgument("problem image: unsupported version");
  if (h.dim == 0 || h.dim > uint32_t(kFwMaxDim)) return Status::OutOfRange("problem image: dimension out of range");
  if (h.n_states == 0 || h.n_states > 65535u) return Status::OutOfRange("problem image: state count out of range");
  if (h.n_atoms == 0 || h.n_atoms > h.n_states * h.n_states)
    return Status::OutOfRange("problem image: alias table size out of range");
  const size_t atoms_off = ProblemImageAtomsOffset(h.n_states, h.dim);
  const size_t need = atoms_off + sizeof(problems::TdTransition<float>) * h.n_atoms;
  if (h.total_bytes != need || size < need) return Status::InvalidArgument("problem image: size does not match header");
  if (Crc32(data + sizeof h, need - sizeof h) != h.crc32) return Status::DataLoss("problem image: CRC mismatch");
  if (!(h.gamma >= 0.0f && h.gamma < 1.0f)) return Status::OutOfRange("problem image: gamma not in [0, 1)");
  const float* phi = reinterpret_cast<const float*>(data + ProblemImagePhiOffset());
  for (size_t i = 0; i < size_t(h.n_states) * h.dim; ++i)
    if (!(phi[i] - phi[i] == 0.0f)) return Status::InvalidArgument("problem image: non-finite feature");
  const auto* atoms = reinterpret_cast<const problems::TdTransition<float>*>(data + atoms_off);
  for (uint32_t i = 0; i < h.n_atoms; ++i) {
    const auto& a = atoms[i];
    if (a.state >= h.n_states || a.next_state >= h.n_states || a.alias >= h.n_atoms ||
        a.threshold > (uint64_t(1) << 32) || !(a.reward - a.reward == 0.0f))
      return Status::InvalidArgument("problem image: bad alias table entry");
  }
  ProblemView v;
  v.config_fingerprint = h.config_fingerprint;
  v.agent_index = h.agent_index;
  v.dim = static_cast<int>(h.dim);
  v.n_states = h.n_states;
  v.oracle = problems::TdOracle<float>::FromTables(v.dim, h.gamma, phi, atoms, h.n_atoms);
  return v;
}

}  // namespace fedrt::fw
