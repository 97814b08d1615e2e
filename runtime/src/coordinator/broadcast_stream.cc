#include "fedrt/coordinator/broadcast_stream.h"

#include <memory>

#include "fedrt/protocol/chunk_cursor.h"
#include "fedrt/wire/protobuf_codec.h"

namespace fedrt::net {

bool CutAnnouncement(protocol::Announcement& a, uint32_t limit) {
  const uint64_t total = 8ull * a.model.size;
  if (total <= limit) return false;
  a.model_bytes = total;
  a.model = protocol::View<double>{};
  return true;
}

Connection::Source BroadcastChunks(const protocol::RoundId& id, uint64_t total, uint32_t limit,
                                   std::function<const double*(const protocol::RoundId&)> model,
                                   std::function<void(uint64_t bytes)> sent) {
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "chunks are the model's little-endian float64 bytes");
  const double* first = model(id);
  const protocol::View<uint8_t> bytes{reinterpret_cast<const uint8_t*>(first), static_cast<uint32_t>(total)};
  auto cursor = std::make_shared<protocol::ChunkCursor>();
  cursor->start(id, 1, &bytes, nullptr, limit);
  return [id, cursor, model = std::move(model), sent = std::move(sent)](wire::Envelope& next) {
    const double* m = model(id);
    if (m == nullptr) return false;
    cursor->repoint(reinterpret_cast<const uint8_t*>(m));
    protocol::Chunk c;
    if (!cursor->next(c)) return false;
    wire::Encode(c, next);
    sent(next.ByteSizeLong() + 4);
    return true;
  };
}

}  // namespace fedrt::net
