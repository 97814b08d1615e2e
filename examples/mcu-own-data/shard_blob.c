/* The shard blob in flash (shard_blob.h). */
#include "shard_blob.h"

#include <string.h>

#include "provision.h" /* fedrt_crc32 */

enum { kHeaderBytes = 32, kVersion = 1 };

static uint32_t u32_at(const uint8_t* p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

const char* fedrt_shard_open(const void* block, size_t block_size, fedrt_shard_view* out) {
  const uint8_t* b = (const uint8_t*)block;
  uint32_t rows, dim, payload;
  if (block_size < kHeaderBytes || memcmp(b, "FRTSHARD", 8) != 0) return "no shard blob (magic FRTSHARD missing)";
  if (u32_at(b + 8) != kVersion) return "shard blob of an unknown version";
  rows = u32_at(b + 12);
  dim = u32_at(b + 16);
  payload = u32_at(b + 20);
  if (rows == 0 || dim == 0) return "the shard blob holds no examples";
  if ((uint64_t)rows * (dim + 1u) * 4u != payload || payload > block_size - kHeaderBytes)
    return "the shard blob's sizes do not match its payload or exceed the region";
  if (fedrt_crc32(b + kHeaderBytes, payload) != u32_at(b + 24)) return "shard blob CRC mismatch (corrupted)";
  out->features = (const float*)(const void*)(b + kHeaderBytes);
  out->labels = out->features + (size_t)rows * dim;
  out->rows = rows;
  out->dim = dim;
  return NULL;
}
