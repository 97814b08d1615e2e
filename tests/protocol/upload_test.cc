// Chunked updates at the server session (docs/architecture.md, "Chunked
// transfer"): the same sums as whole updates for raw and coded payloads, the
// four refused chunk faults, an update cut off at the deadline taken back
// exactly, and a resumed update counted once. The fleet's tests
// (tests/net/chunked_fleet_test.cc) run the same over TLS.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "session_harness.h"

namespace fedrt::protocol {
namespace {

using session_testing::Fleet;
using session_testing::Sessions;
using task::AlgorithmKind;

Update Header(const Update& u) {
  Update h = u;
  h.chunked = true;
  for (uint32_t k = 0; k < u.segments; ++k) {
    h.payload_bytes[k] = u.payload[k].size;
    h.payload[k] = View<uint8_t>{};
  }
  return h;
}

// Segment by segment, `piece` bytes at a time.
std::vector<Chunk> Cut(const Update& u, uint32_t piece) {
  std::vector<Chunk> out;
  for (uint32_t k = 0; k < u.segments; ++k)
    for (uint32_t off = 0; off < u.payload[k].size; off += piece) {
      const uint32_t n = std::min(piece, u.payload[k].size - off);
      out.push_back(Chunk{u.id, k, off, u.payload[k].size, View<uint8_t>{u.payload[k].data + off, n}});
    }
  return out;
}

void SendChunked(Sessions& s, uint32_t agent, const Update& u, uint32_t piece) {
  ASSERT_TRUE(s.server.on_update(agent, Header(u), 0).ok());
  for (const Chunk& c : Cut(u, piece)) {
    const Verdict v = s.server.on_chunk(agent, c, 0);
    ASSERT_TRUE(v.ok()) << v.why;
  }
}

struct ChunkCase {
  const char* name;
  AlgorithmKind kind;
  bool rr;      // Fed-RR: two segments
  bool dither;  // coded payloads (decoded once whole) instead of raw values (summed as they arrive)
};

class ChunkedUpdates : public ::testing::TestWithParam<ChunkCase> {};

TEST_P(ChunkedUpdates, GiveTheSameBitsAsWholeUpdates) {
  const ChunkCase p = GetParam();
  Fleet f(p.kind, p.rr);
  if (p.dither) f.dither(/*memory=*/true);
  Sessions whole(f), chunked(f);
  for (uint32_t t = 0; t < 4; ++t) {
    auto a = whole.announce(t), b = chunked.announce(t);
    ASSERT_EQ(a.size(), Fleet::kAgents);
    for (auto& [c, r] : a) ASSERT_TRUE(whole.server.on_update(c, r.update, 0).ok());
    for (auto& [c, r] : b) SendChunked(chunked, c, r.update, p.dither ? 3 : 8);
    ASSERT_TRUE(whole.server.round_closed() && chunked.server.round_closed());
    EXPECT_EQ(whole.state(), chunked.state()) << "round " << t;
    EXPECT_EQ(whole.server.commit().bits_up, chunked.server.commit().bits_up);
    whole.publish();
    chunked.publish();
  }
}

INSTANTIATE_TEST_SUITE_P(Families, ChunkedUpdates,
                         ::testing::Values(ChunkCase{"fedavg_raw", AlgorithmKind::kFedAvg, false, false},
                                           ChunkCase{"scaffold_raw", AlgorithmKind::kScaffold, false, false},
                                           ChunkCase{"fedavg_rr_raw", AlgorithmKind::kFedAvg, true, false},
                                           ChunkCase{"scaffold_dither", AlgorithmKind::kScaffold, false, true}),
                         [](const ::testing::TestParamInfo<ChunkCase>& i) { return std::string(i.param.name); });

// Out of order, duplicated, past the announced size, another total: each is
// refused with its reason and changes nothing; the genuine chunks then give
// the round it would have had without the faults.
TEST(ChunkFaults, AreRefusedWithTheReasonAndTheRoundIsUnchanged) {
  Fleet f(AlgorithmKind::kScaffold);
  Sessions clean(f), faulty(f);
  auto a = clean.announce(0), b = faulty.announce(0);
  for (auto& [c, r] : a) ASSERT_TRUE(clean.server.on_update(c, r.update, 0).ok());
  const Update& u = b[0].second.update;
  const uint32_t agent = b[0].first;
  ASSERT_TRUE(faulty.server.on_update(agent, Header(u), 0).ok());
  const std::vector<Chunk> chunks = Cut(u, 16);
  ASSERT_GE(chunks.size(), 3u);
  auto refused = [&](Chunk c, const std::string& why) {
    const Verdict v = faulty.server.on_chunk(agent, c, 0);
    EXPECT_EQ(v.refusal, Refusal::kChunk) << why;
    EXPECT_NE(v.why.find(why), std::string::npos) << v.why;
  };
  refused(chunks[1], "chunk out of order: bytes from 16 of segment 0, expected 0 of segment 0");
  ASSERT_TRUE(faulty.server.on_chunk(agent, chunks[0], 0).ok());
  refused(chunks[0], "duplicate chunk: bytes [0, 16) of segment 0 were already taken");
  // From where it should start, but longer than what is left.
  refused(Chunk{u.id, 0, 16, u.payload[0].size, View<uint8_t>{u.payload[0].data, u.payload[0].size}},
          "chunk past the announced size");
  Chunk other = chunks[1];
  other.total += 8;
  refused(other, "disagrees with the announced size");
  EXPECT_EQ(faulty.server.upload_received(agent), 16u);
  for (size_t i = 1; i < chunks.size(); ++i) ASSERT_TRUE(faulty.server.on_chunk(agent, chunks[i], 0).ok());
  const Verdict again = faulty.server.on_chunk(agent, chunks[1], 0);
  EXPECT_EQ(again.refusal, Refusal::kDuplicate) << again.why;  // the update is whole: any chunk is a duplicate
  for (size_t i = 1; i < b.size(); ++i) ASSERT_TRUE(faulty.server.on_update(b[i].first, b[i].second.update, 0).ok());
  ASSERT_TRUE(faulty.server.round_closed());
  EXPECT_EQ(clean.state(), faulty.state());
  EXPECT_EQ(clean.server.commit().bits_up, faulty.server.commit().bits_up);
}

// An update cut off and not resumed before the deadline: the values it had
// added are taken back, so the round equals one where the agent sent nothing.
TEST(ChunkedUpdates, CutOffAtTheDeadlineIsTakenBackExactly) {
  for (AlgorithmKind kind : {AlgorithmKind::kFedAvg, AlgorithmKind::kScaffold}) {
    Fleet f(kind);
    Sessions silent(f, 1000, 0.5), cut(f, 1000, 0.5);
    auto a = silent.announce(0), b = cut.announce(0);
    for (size_t i = 1; i < a.size(); ++i) ASSERT_TRUE(silent.server.on_update(a[i].first, a[i].second.update, 0).ok());
    const std::vector<Chunk> chunks = Cut(b[0].second.update, 8);
    ASSERT_TRUE(cut.server.on_update(b[0].first, Header(b[0].second.update), 0).ok());
    for (size_t i = 0; i < chunks.size() / 2; ++i) ASSERT_TRUE(cut.server.on_chunk(b[0].first, chunks[i], 0).ok());
    for (size_t i = 1; i < b.size(); ++i) ASSERT_TRUE(cut.server.on_update(b[i].first, b[i].second.update, 0).ok());
    silent.server.tick(1000);
    cut.server.tick(1000);
    ASSERT_TRUE(silent.server.round_closed() && cut.server.round_closed());
    EXPECT_EQ(cut.server.commit().members, silent.server.commit().members);
    EXPECT_EQ(cut.server.commit().members.size(), Fleet::kAgents - 1);
    EXPECT_EQ(silent.state(), cut.state());
    const Verdict late = cut.server.on_chunk(b[0].first, chunks.back(), 1001);
    EXPECT_EQ(late.refusal, Refusal::kStaleRound) << late.why;
  }
}

// A device disconnected mid-upload is re-announced the round with the bytes
// the server holds; it sends the rest and its update counts once.
TEST(ChunkedUpdates, ResumeAfterAReconnectCountsTheUpdateOnce) {
  Fleet f(AlgorithmKind::kFedAvg, /*rr=*/true);
  Sessions whole(f), resumed(f);
  auto a = whole.announce(0), b = resumed.announce(0);
  for (auto& [c, r] : a) ASSERT_TRUE(whole.server.on_update(c, r.update, 0).ok());
  const uint32_t agent = b[2].first;
  const std::vector<Chunk> chunks = Cut(b[2].second.update, 8);
  const size_t half = chunks.size() / 2 + 1;  // into the second segment
  ASSERT_TRUE(resumed.server.on_update(agent, Header(b[2].second.update), 0).ok());
  for (size_t i = 0; i < half; ++i) ASSERT_TRUE(resumed.server.on_chunk(agent, chunks[i], 0).ok());
  resumed.server.set_connected(agent, false, 0);
  resumed.server.set_connected(agent, true, 0);
  Outgoing out;
  ASSERT_TRUE(resumed.server.next_outgoing(out));
  EXPECT_EQ(out.agent, agent);
  const Announcement again = resumed.server.announcement(agent, 0);
  ASSERT_TRUE(again.resume);
  const uint64_t seg0 = b[2].second.update.payload[0].size;
  EXPECT_EQ(again.resume_bytes[0], seg0);
  EXPECT_EQ(again.resume_bytes[0] + again.resume_bytes[1], 8 * half);
  ClientMessage r;
  ASSERT_TRUE(resumed.clients[agent].on_announce(again, r).ok());  // the pending update, sent again
  ASSERT_EQ(r.kind, MessageKind::kUpdate);
  ASSERT_TRUE(resumed.server.on_update(agent, Header(r.update), 0).ok());
  for (const Chunk& c : Cut(r.update, 8)) {
    if (c.offset + c.data.size <= again.resume_bytes[c.segment]) continue;  // held already
    const Verdict v = resumed.server.on_chunk(agent, c, 0);
    ASSERT_TRUE(v.ok()) << v.why;
  }
  for (auto& [c, u] : b) {
    if (c == agent) continue;
    ASSERT_TRUE(resumed.server.on_update(c, u.update, 0).ok());
  }
  ASSERT_TRUE(resumed.server.round_closed());
  EXPECT_EQ(resumed.server.commit().members.size(), Fleet::kAgents);
  EXPECT_EQ(whole.state(), resumed.state());
  EXPECT_EQ(whole.server.commit().bits_up, resumed.server.commit().bits_up);
}

}  // namespace
}  // namespace fedrt::protocol

namespace fedrt::protocol {
namespace {

// The journal is reused from update to update: after a reset the old bytes
// are out of reach even where the file still holds them.
TEST(UploadJournal, ReadsBackWhatWasTakenAndNothingBeyondAfterAReset) {
  UploadJournal j;
  std::vector<uint8_t> a(40000), b(100), got(40000);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>(i * 7);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(255 - i);
  ASSERT_TRUE(j.append(a.data(), 16320).ok());
  ASSERT_TRUE(j.append(a.data() + 16320, a.size() - 16320).ok());
  ASSERT_EQ(j.size(), a.size());
  ASSERT_TRUE(j.read(0, got.data(), a.size()).ok());
  EXPECT_EQ(got, a);
  ASSERT_TRUE(j.reset().ok());
  EXPECT_EQ(j.size(), 0u);
  ASSERT_TRUE(j.append(b.data(), b.size()).ok());
  std::vector<uint8_t> back(b.size());
  ASSERT_TRUE(j.read(0, back.data(), back.size()).ok());
  EXPECT_EQ(back, b);
  EXPECT_EQ(j.read(50, back.data(), 51).code(), StatusCode::kOutOfRange) << "the previous update's bytes are gone";
}

}  // namespace
}  // namespace fedrt::protocol
