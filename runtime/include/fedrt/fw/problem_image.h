#pragma once
// Problem image: agent c's local data as provisioned to a firmware device
// (docs/architecture.md, "The task travels": a device that cannot regenerate
// its data holds it). The host tool fedrt-fw-provision builds the task's
// problem exactly as every other driver does (problems::Instance, in double)
// and writes agent c's part in float; the firmware maps it in place (no copy,
// no allocation) and builds the oracle the task needs over it. Kinds:
//   TD(0) (garnet, file):   float phi[rows * dim] | pad to 8 | TdTransition<float> atoms[aux]
//                           (rows = states, aux = alias table entries, gamma)
//   least squares/logistic: float x[rows * dim] (row-major) | float y[rows]
//                           (rows = n_c samples; logistic labels are -1 or +1)
//   Gaussian mixture:       float y[rows * dim] (rows = m_c points, dim = p, aux = G)
// Little-endian, 8-byte aligned; crc32 (IEEE 802.3) covers every byte after
// the header. problem_fingerprint is task::ProblemFingerprint of the task's
// problem: Hello carries it and the coordinator refuses another experiment.

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "fedrt/task/limits.h"
#include "fedrt/task/task.h"
#include "fedrt/core/status.h"
#include "fedrt/problems/td_oracle.h"

namespace fedrt::fw {

constexpr uint32_t kProblemImageMagic = 0x49505246u;  // "FRPI"
constexpr uint32_t kProblemImageVersion = 2;
constexpr uint32_t kProblemImageMaxRows = 1u << 24;

struct ProblemImageHeader {
  uint32_t magic;
  uint32_t version;
  uint32_t total_bytes;           // header + tables
  uint32_t crc32;                 // of the bytes after the header
  uint64_t problem_fingerprint;   // Hello.provisioned_problem
  uint32_t agent_index;           // c: the coordinator must assign this index (Welcome.device_index)
  uint32_t kind;                  // task::ProblemKind
  uint32_t dim;                   // feature dimension d (GMM: data dimension p)
  uint32_t rows;                  // states, samples or points
  uint32_t aux;                   // TD: alias table entries; GMM: components G; else 0
  float gamma;                    // TD: discount factor; else 0
  uint32_t reserved[4];
};
static_assert(sizeof(ProblemImageHeader) == 64, "problem image header layout");
static_assert(sizeof(problems::TdTransition<float>) == 24, "alias table entry layout");

constexpr bool IsTdKind(uint32_t kind) {
  return kind == static_cast<uint32_t>(task::ProblemKind::kGarnet) ||
         kind == static_cast<uint32_t>(task::ProblemKind::kBundle);
}

// Byte offsets of the tables after the header, and the image size.
constexpr size_t ProblemImageTableOffset() { return sizeof(ProblemImageHeader); }
constexpr size_t ProblemImageSecondOffset(uint32_t rows, uint32_t dim) {
  return (sizeof(ProblemImageHeader) + sizeof(float) * size_t(rows) * dim + 7u) & ~size_t(7);
}
constexpr size_t ProblemImageBytes(uint32_t kind, uint32_t rows, uint32_t dim, uint32_t aux) {
  return IsTdKind(kind) ? ProblemImageSecondOffset(rows, dim) + sizeof(problems::TdTransition<float>) * size_t(aux)
         : kind == static_cast<uint32_t>(task::ProblemKind::kGmm)
             ? ProblemImageSecondOffset(rows, dim)
             : ProblemImageSecondOffset(rows, dim) + sizeof(float) * size_t(rows);
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
  uint64_t problem_fingerprint = 0;
  uint32_t agent_index = 0;
  task::ProblemKind kind = task::ProblemKind::kGarnet;
  int dim = 0;
  uint32_t rows = 0;
  uint32_t aux = 0;
  float gamma = 0.0f;
  const float* table = nullptr;   // phi, x or the GMM points
  const float* labels = nullptr;  // y (least squares, logistic)
  const problems::TdTransition<float>* atoms = nullptr;
};

namespace internal {
inline bool AllFinite(const float* v, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (!(v[i] - v[i] == 0.0f)) return false;
  return true;
}
}  // namespace internal

// Validates an image once (magic, version, kind, sizes, CRC, indices, finite
// values) and returns the view. `data` must be 8-aligned and outlive the view.
inline Result<ProblemView> ParseProblemImage(const uint8_t* data, size_t size) {
  if (data == nullptr || size < sizeof(ProblemImageHeader))
    return Status::InvalidArgument("problem image: shorter than its header");
  if ((reinterpret_cast<uintptr_t>(data) & 7u) != 0) return Status::InvalidArgument("problem image: not 8-byte aligned");
  ProblemImageHeader h;
  std::memcpy(&h, data, sizeof h);
  if (h.magic != kProblemImageMagic) return Status::InvalidArgument("problem image: bad magic (not provisioned?)");
  if (h.version != kProblemImageVersion) return Status::InvalidArgument("problem image: unsupported version");
  if (h.kind > static_cast<uint32_t>(task::ProblemKind::kGmm)) return Status::InvalidArgument("problem image: unknown kind");
  const bool td = IsTdKind(h.kind), gmm = h.kind == static_cast<uint32_t>(task::ProblemKind::kGmm);
  // d is bounded by the partition (a device's memory refuses the task if need be), not by a frame.
  if (h.dim == 0 || h.dim > task::kMaxLinuxStreamDim) return Status::OutOfRange("problem image: dimension out of range");
  if (h.rows == 0 || h.rows > (td ? 65535u : kProblemImageMaxRows)) return Status::OutOfRange("problem image: row count out of range");
  if (td && (h.aux == 0 || uint64_t(h.aux) > uint64_t(h.rows) * h.rows))
    return Status::OutOfRange("problem image: alias table size out of range");
  if (gmm && (h.aux == 0 || h.aux > 64)) return Status::OutOfRange("problem image: component count out of range");
  if (!td && !gmm && h.aux != 0) return Status::InvalidArgument("problem image: unexpected table");
  if (uint64_t(h.rows) * h.dim * sizeof(float) > size || uint64_t(h.aux) * sizeof(problems::TdTransition<float>) > size)
    return Status::InvalidArgument("problem image: tables larger than the data partition");
  const size_t need = ProblemImageBytes(h.kind, h.rows, h.dim, h.aux);
  if (h.total_bytes != need || size < need) return Status::InvalidArgument("problem image: size does not match header");
  if (Crc32(data + sizeof h, need - sizeof h) != h.crc32) return Status::DataLoss("problem image: CRC mismatch");
  ProblemView v;
  v.problem_fingerprint = h.problem_fingerprint;
  v.agent_index = h.agent_index;
  v.kind = static_cast<task::ProblemKind>(h.kind);
  v.dim = static_cast<int>(h.dim);
  v.rows = h.rows;
  v.aux = h.aux;
  v.gamma = h.gamma;
  v.table = reinterpret_cast<const float*>(data + ProblemImageTableOffset());
  if (!internal::AllFinite(v.table, size_t(h.rows) * h.dim)) return Status::InvalidArgument("problem image: non-finite value");
  const uint8_t* second = data + ProblemImageSecondOffset(h.rows, h.dim);
  if (td) {
    if (!(h.gamma >= 0.0f && h.gamma < 1.0f)) return Status::OutOfRange("problem image: gamma not in [0, 1)");
    v.atoms = reinterpret_cast<const problems::TdTransition<float>*>(second);
    for (uint32_t i = 0; i < h.aux; ++i) {
      const auto& a = v.atoms[i];
      if (a.state >= h.rows || a.next_state >= h.rows || a.alias >= h.aux || a.threshold > (uint64_t(1) << 32) ||
          !(a.reward - a.reward == 0.0f))
        return Status::InvalidArgument("problem image: bad alias table entry");
    }
  } else if (!gmm) {
    v.labels = reinterpret_cast<const float*>(second);
    if (!internal::AllFinite(v.labels, h.rows)) return Status::InvalidArgument("problem image: non-finite label");
    if (h.kind == static_cast<uint32_t>(task::ProblemKind::kLogistic))
      for (uint32_t i = 0; i < h.rows; ++i)
        if (v.labels[i] != 1.0f && v.labels[i] != -1.0f)
          return Status::InvalidArgument("problem image: a logistic label is not -1 or +1");
  }
  return v;
}

}  // namespace fedrt::fw
