#pragma once
// UploadJournal: the bytes of one device's chunked update that the server has
// taken so far, kept in an anonymous temporary file rather than in memory
// (docs/architecture.md, "Chunked transfer"). Raw float64 chunks are
// aggregated as they arrive; when such an update is cut off for good (the
// round closes without it) the journal gives the values back so they can be
// subtracted exactly. Coded chunks are decoded once the update is whole,
// from the journal. Memory: none (pwrite/pread on an unlinked file that the
// journal keeps from update to update: a reset overwrites its blocks rather
// than truncating and reallocating them). Host code.

#include <cstddef>
#include <cstdint>

#include "fedrt/core/status.h"

namespace fedrt::protocol {

class UploadJournal {
 public:
  UploadJournal() = default;
  ~UploadJournal();
  UploadJournal(const UploadJournal&) = delete;
  UploadJournal& operator=(const UploadJournal&) = delete;

  // Empties the journal (the file is created on first use).
  Status reset();
  // Appends `n` bytes.
  Status append(const uint8_t* data, size_t n);
  // Reads bytes [offset, offset + n) into `out`.
  Status read(uint64_t offset, uint8_t* out, size_t n) const;
  uint64_t size() const { return size_; }

 private:
  int fd_ = -1;
  uint64_t size_ = 0;
};

}  // namespace fedrt::protocol
