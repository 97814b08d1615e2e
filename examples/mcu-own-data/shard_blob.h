/* A device's shard in a flash region, read in place (shard_to_blob.py writes
 * the blob: a 32-byte header "FRTSHARD", version 1, rows, dim, payload bytes,
 * CRC-32 of the payload; then rows x dim float32 features and rows float32
 * labels). C99, no heap. */
#ifndef FEDRT_SHARD_BLOB_H
#define FEDRT_SHARD_BLOB_H

#include <stddef.h>
#include <stdint.h>

typedef struct fedrt_shard_view {
  const float* features; /* rows x dim, row-major, in the region */
  const float* labels;   /* rows */
  uint32_t rows, dim;
} fedrt_shard_view;

/* Validates the blob at `block` (of `block_size` bytes: magic, version,
 * sizes within the region, CRC) and points `out` into it: NULL on success,
 * else why the region holds no valid shard. */
const char* fedrt_shard_open(const void* block, size_t block_size, fedrt_shard_view* out);

#endif /* FEDRT_SHARD_BLOB_H */
