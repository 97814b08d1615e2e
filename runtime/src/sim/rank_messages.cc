#include "fedrt/sim/rank_messages.h"

#include <cstring>
#include <type_traits>

#include <fmt/format.h>

namespace fedrt::sim {

using protocol::ClientMessage;
using protocol::MessageKind;

namespace {

static_assert(std::is_trivially_copyable_v<secagg::Advertise> && std::is_trivially_copyable_v<secagg::ShareCiphertext> &&
                  std::is_trivially_copyable_v<secagg::UnmaskShare> &&
                  std::is_trivially_copyable_v<secagg::ConsistencyTag> && std::is_trivially_copyable_v<protocol::WorkReport>,
              "messages are packed as their bytes");

// Record: agent u32 | kind u8 | round id (3 x u32) | the kind's fields.
class Writer {
 public:
  explicit Writer(std::vector<uint8_t>& out) : out_(out) {}
  void raw(const void* p, size_t n) {
    const size_t at = out_.size();
    out_.resize(at + n);
    if (n > 0) std::memcpy(out_.data() + at, p, n);
  }
  template <class T>
  void put(const T& v) { raw(&v, sizeof v); }
  template <class T>
  void array(const protocol::View<T>& v) {
    put<uint32_t>(v.size);
    raw(v.data, sizeof(T) * v.size);
  }
  void id(const protocol::RoundId& id) {
    put(id.algorithm);
    put(id.run);
    put(id.round);
  }

 private:
  std::vector<uint8_t>& out_;
};

class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), end_(p + n) {}
  bool ok() const { return ok_; }
  size_t remaining() const { return static_cast<size_t>(end_ - p_); }
  const uint8_t* take(size_t n) {
    if (!ok_ || static_cast<size_t>(end_ - p_) < n) {
      ok_ = false;
      return nullptr;
    }
    const uint8_t* at = p_;
    p_ += n;
    return at;
  }
  template <class T>
  T get() {
    T v{};
    if (const uint8_t* at = take(sizeof v)) std::memcpy(&v, at, sizeof v);
    return v;
  }
  // An array into aligned storage.
  template <class T>
  protocol::View<T> array(std::vector<T>& store) {
    const uint32_t n = get<uint32_t>();
    const uint8_t* at = take(sizeof(T) * static_cast<size_t>(n));
    if (at == nullptr) return {};
    store.resize(n);
    if (n > 0) std::memcpy(store.data(), at, sizeof(T) * n);
    return protocol::View<T>{store.data(), n};
  }
  protocol::RoundId id() {
    protocol::RoundId r;
    r.algorithm = get<uint32_t>();
    r.run = get<uint32_t>();
    r.round = get<uint32_t>();
    return r;
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
  bool ok_ = true;
};

}  // namespace

Status RankMessages::put(uint32_t agent, const ClientMessage& m) {
  Writer w(mine_);
  w.put(agent);
  w.put(static_cast<uint8_t>(m.kind));
  switch (m.kind) {
    case MessageKind::kNone: break;
    case MessageKind::kUpdate: {
      const protocol::Update& u = m.update;
      if (u.chunked) return Status::Internal("simulator: a chunked update cannot cross ranks");
      if (u.segments > task::kMaxSegments) return Status::Internal("simulator: an update with too many segments");
      w.id(u.id);
      w.put(static_cast<uint8_t>(u.encoding));
      w.put(u.segments);
      for (uint32_t k = 0; k < u.segments; ++k) w.array(u.payload[k]);
      w.put(u.sample_count);
      w.put(u.report);
      break;
    }
    case MessageKind::kSecAggAdvertise:
      w.id(m.advertise.id);
      w.put(m.advertise.keys);
      break;
    case MessageKind::kSecAggShares:
      w.id(m.shares.id);
      w.array(m.shares.shares);
      break;
    case MessageKind::kSecAggMasked:
      w.id(m.masked.id);
      w.array(m.masked.masked);
      w.put(m.masked.report);
      break;
    case MessageKind::kSecAggCheck:
      w.id(m.check.id);
      w.array(m.check.tags);
      break;
    case MessageKind::kSecAggUnmask:
      w.id(m.unmask.id);
      w.array(m.unmask.shares);
      break;
    default: return Status::Internal("simulator: an agent message of a kind the ranks do not exchange");
  }
  return Status::Ok();
}

Status RankMessages::exchange(RankChannel& channel, uint32_t agents, uint64_t samples_mine, uint64_t& samples,
                              const Feed& feed) {
  FEDRT_TRY(channel.messages(mine_, samples_mine, all_, offsets_, samples));
  const uint32_t k = channel.size();
  std::vector<AgentRange> ranges(k);
  std::vector<size_t> cursor(k);
  for (uint32_t r = 0; r < k; ++r) {
    ranges[r] = RangeOf(agents, k, r);
    cursor[r] = offsets_[r];
  }
  auto broken = [&](uint32_t r, const char* what) {
    return Status(StatusCode::kInternal, fmt::format("rank {} of {} sent {}", r, k, what));
  };
  for (uint32_t agent : order_) {
    uint32_t r = 0;
    while (r + 1 < k && !ranges[r].owns(agent)) ++r;
    Reader in(all_.data() + cursor[r], offsets_[r + 1] - cursor[r]);
    const uint32_t who = in.get<uint32_t>();
    const auto kind = static_cast<MessageKind>(in.get<uint8_t>());
    if (!in.ok()) return broken(r, fmt::format("no message for agent {}", agent).c_str());
    if (who != agent) return broken(r, fmt::format("agent {}'s message where agent {}'s was due", who, agent).c_str());
    ClientMessage m;
    m.kind = kind;
    switch (kind) {
      case MessageKind::kNone: break;
      case MessageKind::kUpdate: {
        protocol::Update& u = m.update;
        u.id = in.id();
        u.encoding = static_cast<protocol::Encoding>(in.get<uint8_t>());
        u.segments = in.get<uint32_t>();
        if (u.segments > task::kMaxSegments) return broken(r, "an update with too many segments");
        for (uint32_t s = 0; s < u.segments; ++s) {
          const uint32_t n = in.get<uint32_t>();
          const uint8_t* at = in.take(n);
          u.payload[s] = protocol::View<uint8_t>{at, at != nullptr ? n : 0};
        }
        u.sample_count = in.get<uint64_t>();
        u.report = in.get<protocol::WorkReport>();
        break;
      }
      case MessageKind::kSecAggAdvertise:
        m.advertise.id = in.id();
        m.advertise.keys = in.get<secagg::Advertise>();
        break;
      case MessageKind::kSecAggShares:
        m.shares.id = in.id();
        m.shares.shares = in.array(cts_);
        break;
      case MessageKind::kSecAggMasked:
        m.masked.id = in.id();
        m.masked.masked = in.array(words_);
        m.masked.report = in.get<protocol::WorkReport>();
        break;
      case MessageKind::kSecAggCheck:
        m.check.id = in.id();
        m.check.tags = in.array(tags_);
        break;
      case MessageKind::kSecAggUnmask:
        m.unmask.id = in.id();
        m.unmask.shares = in.array(unmask_);
        break;
      default: return broken(r, "a message of an unknown kind");
    }
    if (!in.ok()) return broken(r, fmt::format("a truncated message of agent {}", agent).c_str());
    cursor[r] = offsets_[r + 1] - static_cast<size_t>(in.remaining());
    FEDRT_TRY(feed(agent, m));
  }
  for (uint32_t r = 0; r < k; ++r)
    if (cursor[r] != offsets_[r + 1]) return broken(r, "messages no agent was due to send");
  order_.clear();
  mine_.clear();
  return Status::Ok();
}

}  // namespace fedrt::sim
