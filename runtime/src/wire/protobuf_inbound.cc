// Decoding a round message (fedrt/wire/protobuf_codec.h, Inbound): the
// fields into the protocol's structs, refusing what breaks the Linux limits
// (task/limits.h), then the protocol's checks (protocol/message_check.h).
#include <cmath>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "fedrt/protocol/message_check.h"
#include "fedrt/wire/protobuf_codec.h"

namespace fedrt::wire {

using protocol::MessageKind;
using protocol::View;

namespace {

template <class M>
protocol::RoundId IdOf(const M& m) {
  return protocol::RoundId{m.algorithm_index(), m.run(), m.round()};
}

template <class M>
protocol::WorkReport DecodeReport(const M& m) {
  protocol::WorkReport r;
  if (!m.has_report()) return r;
  r.loss_before = m.report().loss_before();
  r.loss_after = m.report().loss_after();
  r.duration_ms = m.report().duration_ms();
  r.examples = m.report().examples();
  return r;
}

}  // namespace

void Inbound::build_device() {
  protocol::ClientMessage& m = device_;
  m = protocol::ClientMessage{};
  m.kind = kind_;
  switch (kind_) {
    case MessageKind::kUpdate: m.update = update_; break;
    case MessageKind::kChunk: m.chunk = chunk_; break;
    case MessageKind::kSecAggAdvertise: m.advertise = advertise_; break;
    case MessageKind::kSecAggShares: m.shares = shares_; break;
    case MessageKind::kSecAggMasked: m.masked = masked_; break;
    case MessageKind::kSecAggCheck: m.check = check_; break;
    case MessageKind::kSecAggUnmask: m.unmask = unmask_; break;
    default: m.kind = MessageKind::kNone; break;
  }
}

void Inbound::build_coordinator() {
  protocol::ServerMessage& m = server_;
  m = protocol::ServerMessage{};
  m.kind = kind_;
  switch (kind_) {
    case MessageKind::kAnnouncement: m.announcement = announcement_; break;
    case MessageKind::kChunk: m.chunk = chunk_; break;
    case MessageKind::kRoundResult: m.result = result_; break;
    case MessageKind::kSecAggKeys: m.keys = keys_; break;
    case MessageKind::kSecAggSharesIn: m.shares = shares_; break;
    case MessageKind::kSecAggUnmaskRequest: m.unmask_request = unmask_request_; break;
    case MessageKind::kSecAggChecks: m.checks = check_; break;
    default: m.kind = MessageKind::kNone; break;
  }
}

// The fields, then the protocol's checks of the message (protocol/message_check.h).
bool Inbound::decode(const Envelope& env, WireError& error) {
  device_.kind = MessageKind::kNone;
  server_.kind = MessageKind::kNone;
  if (!map(env, error)) return false;
  build_device();  // once per message: the checks and the sessions read these
  build_coordinator();
  const protocol::MessageFault f =
      server_.kind != MessageKind::kNone ? protocol::Check(server_) : protocol::Check(device_);
  if (!f) return true;
  kind_ = device_.kind = server_.kind = MessageKind::kNone;
  const ErrorReason reason = f.kind == protocol::MessageFault::Kind::kNonFinite ? ERROR_NON_FINITE
                             : f.kind == protocol::MessageFault::Kind::kChunk   ? ERROR_CHUNK
                                                                                : ERROR_MALFORMED;
  error = {reason, f.why};
  return false;
}

bool Inbound::map(const Envelope& env, WireError& error) {
  kind_ = MessageKind::kNone;
  auto fail = [&](ErrorReason r, std::string m) {
    error = {r, std::move(m)};
    return false;
  };
  auto key = [](const std::string& in, uint8_t* out) {
    if (in.size() != secagg::kKeyBytes) return false;
    std::memcpy(out, in.data(), secagg::kKeyBytes);
    return true;
  };
  switch (env.body_case()) {
    case Envelope::kAnnounce: {
      const RoundAnnouncement& a = env.announce();
      if (a.kind() > static_cast<uint32_t>(protocol::WorkKind::kInitialStatistic))
        return fail(ERROR_MALFORMED, fmt::format("announcement of unknown kind {}", a.kind()));
      if (a.model_size() > static_cast<int>(task::kMaxLinuxBroadcastScalars))
        return fail(ERROR_DIMENSION, fmt::format("broadcast of {} values (at most {})", a.model_size(), task::kMaxLinuxBroadcastScalars));
      announcement_ = protocol::Announcement{};
      announcement_.id = IdOf(a);
      announcement_.kind = static_cast<protocol::WorkKind>(a.kind());
      announcement_.local_steps = a.local_steps();
      announcement_.report = a.report();
      announcement_.deadline_ms = a.deadline_ms();
      announcement_.model = View<double>{a.model().data(), static_cast<uint32_t>(a.model_size())};
      announcement_.model_version = a.model_version();
      announcement_.model_bytes = a.model_bytes();
      if (!(a.clip() >= 0 && std::isfinite(a.clip())))
        return fail(ERROR_MALFORMED, fmt::format("announcement with clip {} (adaptive clipping: finite, > 0)", a.clip()));
      announcement_.clip = a.clip();
      if (!(a.weight() >= 0 && a.weight() <= 1))
        return fail(ERROR_MALFORMED, fmt::format("announcement with staleness weight {} (in (0, 1], or absent)", a.weight()));
      announcement_.weight = a.weight();
      if (a.resume_bytes_size() != 0 && a.resume_bytes_size() != static_cast<int>(task::kMaxSegments))
        return fail(ERROR_MALFORMED, fmt::format("announcement with {} resume offsets", a.resume_bytes_size()));
      announcement_.resume = a.resume_bytes_size() > 0;
      for (int k = 0; k < a.resume_bytes_size(); ++k) announcement_.resume_bytes[k] = a.resume_bytes(k);
      if (a.delta_size() > static_cast<int>(task::kMaxSegments) || (a.has_delta() != (a.delta_size() > 0)))
        return fail(ERROR_MALFORMED, fmt::format("announcement with {} model delta segments (has_delta {})", a.delta_size(),
                                                 a.has_delta()));
      announcement_.has_delta = a.has_delta();
      announcement_.delta_base = a.delta_base();
      for (int k = 0; k < a.delta_size(); ++k) {
        const std::string& p = a.delta(k);
        // Every chain's delta is codec bytes, never empty; Encode stops at the
        // first empty segment, so one here would re-encode as another message
        // (the round-trip property of tests/fuzz/wire_messages_fuzz.cc, seed
        // tests/fuzz/corpus/wire_messages/announce_empty_delta; docs/fuzzing.md).
        if (p.empty()) return fail(ERROR_MALFORMED, fmt::format("model delta segment {} is empty", k));
        if (p.size() > task::kMaxLinuxSegmentBytes)
          return fail(ERROR_DIMENSION, fmt::format("model delta segment of {} bytes (at most {})", p.size(),
                                                   task::kMaxLinuxSegmentBytes));
        announcement_.delta[k] = View<uint8_t>{reinterpret_cast<const uint8_t*>(p.data()), static_cast<uint32_t>(p.size())};
      }
      if (a.has_secagg()) {
        const SecAggParams& p = a.secagg();
        announcement_.secagg = protocol::SecAggRound{true, p.round_id(), p.graph_seed(), p.n(), p.k(), p.t(), p.id()};
      }
      kind_ = MessageKind::kAnnouncement;
      return true;
    }
    case Envelope::kUpdate: {
      const Update& u = env.update();
      if (u.encoding() > static_cast<uint32_t>(protocol::Encoding::kRawFloat32))
        return fail(ERROR_MALFORMED, fmt::format("update with unknown encoding {}", u.encoding()));
      const bool chunked = u.payload_bytes_size() > 0;
      if (chunked && u.payload_size() > 0)
        return fail(ERROR_MALFORMED, "update with both inline payloads and chunked payload sizes");
      const int segments = chunked ? u.payload_bytes_size() : u.payload_size();
      if (segments == 0 || segments > static_cast<int>(task::kMaxSegments))
        return fail(ERROR_MALFORMED, fmt::format("update with {} payload segments (1..{})", segments, task::kMaxSegments));
      update_ = protocol::Update{};
      update_.id = IdOf(u);
      update_.encoding = static_cast<protocol::Encoding>(u.encoding());
      update_.segments = static_cast<uint32_t>(segments);
      update_.chunked = chunked;
      for (int k = 0; k < u.payload_bytes_size(); ++k) update_.payload_bytes[k] = u.payload_bytes(k);
      for (int k = 0; k < u.payload_size(); ++k) {
        const std::string& p = u.payload(k);
        if (p.size() > task::kMaxLinuxSegmentBytes)
          return fail(ERROR_DIMENSION, fmt::format("payload segment of {} bytes (at most {})", p.size(), task::kMaxLinuxSegmentBytes));
        update_.payload[k] = View<uint8_t>{reinterpret_cast<const uint8_t*>(p.data()), static_cast<uint32_t>(p.size())};
      }
      update_.sample_count = u.sample_count();
      if (u.clip_indicator() > 2)
        return fail(ERROR_MALFORMED, fmt::format("update with clip indicator {} (0, 1 or 2)", u.clip_indicator()));
      update_.clip_indicator = static_cast<uint8_t>(u.clip_indicator());
      update_.report = DecodeReport(u);
      kind_ = MessageKind::kUpdate;
      return true;
    }
    case Envelope::kChunk: {
      const Chunk& c = env.chunk();
      if (c.data().size() > task::kChunkBytes)
        return fail(ERROR_CHUNK, fmt::format("chunk of {} bytes (at most {})", c.data().size(), task::kChunkBytes));
      chunk_ = protocol::Chunk{};
      chunk_.id = IdOf(c);
      chunk_.segment = c.segment();
      chunk_.offset = c.offset();
      chunk_.total = c.total();
      chunk_.data = View<uint8_t>{reinterpret_cast<const uint8_t*>(c.data().data()), static_cast<uint32_t>(c.data().size())};
      kind_ = MessageKind::kChunk;
      return true;
    }
    case Envelope::kResult: {
      const RoundResult& r = env.result();
      if (r.model_size() > static_cast<int>(task::kMaxLinuxDim))
        return fail(ERROR_DIMENSION, fmt::format("round result model of {} values (at most {})", r.model_size(), task::kMaxLinuxDim));
      result_ = protocol::RoundResult{IdOf(r), r.included(), View<double>{r.model().data(), static_cast<uint32_t>(r.model_size())}};
      kind_ = MessageKind::kRoundResult;
      return true;
    }
    case Envelope::kSecaggAdvertise: {
      const SecAggAdvertise& a = env.secagg_advertise();
      advertise_ = protocol::SecAggAdvertiseMsg{};
      advertise_.id = IdOf(a);
      if (!key(a.c_pk(), advertise_.keys.c_pk) || !key(a.s_pk(), advertise_.keys.s_pk))
        return fail(ERROR_MALFORMED, "SecAggAdvertise keys must be 32 bytes");
      kind_ = MessageKind::kSecAggAdvertise;
      return true;
    }
    case Envelope::kSecaggKeys: {
      const SecAggKeys& k = env.secagg_keys();
      ads_.assign(static_cast<size_t>(k.peers_size()), secagg::Advertise{});
      for (int i = 0; i < k.peers_size(); ++i) {
        ads_[i].id = k.peers(i).id();
        if (!key(k.peers(i).c_pk(), ads_[i].c_pk) || !key(k.peers(i).s_pk(), ads_[i].s_pk))
          return fail(ERROR_MALFORMED, "SecAggKeys: keys must be 32 bytes");
      }
      keys_ = protocol::SecAggKeysMsg{IdOf(k), View<secagg::Advertise>{ads_.data(), static_cast<uint32_t>(ads_.size())}};
      kind_ = MessageKind::kSecAggKeys;
      return true;
    }
    case Envelope::kSecaggShares:
    case Envelope::kSecaggSharesIn: {
      const bool incoming = env.body_case() == Envelope::kSecaggSharesIn;
      const auto& list = incoming ? env.secagg_shares_in().shares() : env.secagg_shares().shares();
      cts_.assign(static_cast<size_t>(list.size()), secagg::ShareCiphertext{});
      for (int i = 0; i < list.size(); ++i) {
        const SecAggCiphertext& w = list.Get(i);
        // The peer is the sender (incoming) or the recipient; the other end is
        // filled in by the session that knows it.
        if (!secagg::UnpackShareCiphertext(w.ciphertext().data(), w.ciphertext().size(), incoming ? w.peer() : 0,
                                           incoming ? 0 : w.peer(), cts_[i]))
          return fail(ERROR_MALFORMED, fmt::format("share ciphertext of {} bytes, expected {}", w.ciphertext().size(),
                                                   secagg::kShareWireBytes));
      }
      shares_ = protocol::SecAggSharesMsg{incoming ? IdOf(env.secagg_shares_in()) : IdOf(env.secagg_shares()),
                                          View<secagg::ShareCiphertext>{cts_.data(), static_cast<uint32_t>(cts_.size())}};
      kind_ = incoming ? MessageKind::kSecAggSharesIn : MessageKind::kSecAggShares;
      return true;
    }
    case Envelope::kSecaggMasked: {
      const SecAggMasked& m = env.secagg_masked();
      if (m.masked_size() > static_cast<int>(task::kMaxLinuxMaskedScalars))
        return fail(ERROR_DIMENSION, fmt::format("masked input of {} values (at most {})", m.masked_size(), task::kMaxLinuxMaskedScalars));
      masked_ = protocol::SecAggMaskedMsg{IdOf(m), View<uint32_t>{m.masked().data(), static_cast<uint32_t>(m.masked_size())}, {}};
      masked_.report = DecodeReport(m);
      kind_ = MessageKind::kSecAggMasked;
      return true;
    }
    case Envelope::kSecaggUnmaskRequest: {
      const SecAggUnmaskRequest& r = env.secagg_unmask_request();
      unmask_request_ = protocol::SecAggUnmaskRequestMsg{
          IdOf(r), View<uint32_t>{r.survivors().data(), static_cast<uint32_t>(r.survivors_size())}};
      kind_ = MessageKind::kSecAggUnmaskRequest;
      return true;
    }
    case Envelope::kSecaggCheck:
    case Envelope::kSecaggChecks: {
      const bool incoming = env.body_case() == Envelope::kSecaggChecks;
      const auto& list = incoming ? env.secagg_checks().tags() : env.secagg_check().tags();
      tags_.assign(static_cast<size_t>(list.size()), secagg::ConsistencyTag{});
      for (int i = 0; i < list.size(); ++i) {
        const SecAggTag& w = list.Get(i);
        if (w.tag().size() != secagg::kTagBytes)
          return fail(ERROR_MALFORMED, fmt::format("consistency tag of {} bytes, expected {}", w.tag().size(), secagg::kTagBytes));
        // The peer is the sender (incoming) or the recipient; the session fills in the other end.
        (incoming ? tags_[i].from : tags_[i].to) = w.peer();
        std::memcpy(tags_[i].tag, w.tag().data(), secagg::kTagBytes);
      }
      check_ = protocol::SecAggCheckMsg{incoming ? IdOf(env.secagg_checks()) : IdOf(env.secagg_check()),
                                        View<secagg::ConsistencyTag>{tags_.data(), static_cast<uint32_t>(tags_.size())}};
      kind_ = incoming ? MessageKind::kSecAggChecks : MessageKind::kSecAggCheck;
      return true;
    }
    case Envelope::kSecaggUnmask: {
      const SecAggUnmask& u = env.secagg_unmask();
      unmask_shares_.assign(static_cast<size_t>(u.shares_size()), secagg::UnmaskShare{});
      for (int i = 0; i < u.shares_size(); ++i) {
        const SecAggShare& w = u.shares(i);
        if (w.kind() < 1 || w.kind() > 2 || w.x() < 1 || w.x() > 255 || !key(w.share(), unmask_shares_[i].share))
          return fail(ERROR_MALFORMED, "unmask share needs kind 1 or 2, x in [1, 255] and 32 bytes");
        unmask_shares_[i].about = w.about();
        unmask_shares_[i].kind = static_cast<secagg::ShareKind>(w.kind());
        unmask_shares_[i].x = static_cast<uint8_t>(w.x());
      }
      unmask_ = protocol::SecAggUnmaskMsg{
          IdOf(u), View<secagg::UnmaskShare>{unmask_shares_.data(), static_cast<uint32_t>(unmask_shares_.size())}};
      kind_ = MessageKind::kSecAggUnmask;
      return true;
    }
    default:
      return fail(ERROR_MALFORMED, fmt::format("message type {} is not a round message", static_cast<int>(env.body_case())));
  }
}

}  // namespace fedrt::wire
