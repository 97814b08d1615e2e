// The device agent (protocol/device_agent.h) and the chunk cursor
// (protocol/chunk_cursor.h): broadcasts and updates cut into chunks give the
// server the same bits as whole ones; chunks out of order drop the transfer;
// resume offsets skip what the server holds; settled rounds carry the work's
// report.
#include <cstring>
#include <optional>
#include <vector>

#include <gtest/gtest.h>

#include "fedrt/protocol/chunk_cursor.h"
#include "fedrt/protocol/device_agent.h"
#include "session_harness.h"

namespace fedrt::protocol {
namespace {

using session_testing::Fleet;
using session_testing::Sessions;

TEST(ChunkCursor, CutsEverySegmentInOrder) {
  uint8_t a[10], b[3];
  const View<uint8_t> seg[2] = {{a, 10}, {b, 3}};
  ChunkCursor cur;
  cur.start(RoundId{0, 0, 7}, 2, seg, nullptr, 4);
  std::vector<Chunk> got;
  for (Chunk c; cur.next(c);) got.push_back(c);
  ASSERT_EQ(got.size(), 4u);
  const uint32_t seg_of[] = {0, 0, 0, 1};
  const uint64_t off[] = {0, 4, 8, 0};
  const uint32_t len[] = {4, 4, 2, 3};
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].segment, seg_of[i]) << i;
    EXPECT_EQ(got[i].offset, off[i]) << i;
    EXPECT_EQ(got[i].data.size, len[i]) << i;
    EXPECT_EQ(got[i].total, seg[seg_of[i]].size) << i;
    EXPECT_EQ(got[i].data.data, seg[seg_of[i]].data + off[i]) << i;
    EXPECT_EQ(got[i].id.round, 7u);
  }
  EXPECT_FALSE(cur.active());
  EXPECT_EQ(cur.chunks(), 4u);
  EXPECT_EQ(cur.skipped(), 0u);
}

TEST(ChunkCursor, ResumesFromTheOffsetsAndClampsThem) {
  uint8_t a[10], b[5];
  const View<uint8_t> seg[2] = {{a, 10}, {b, 5}};
  const uint64_t from[2] = {6, 0};
  ChunkCursor cur;
  cur.start(RoundId{}, 2, seg, from, 4);
  std::vector<Chunk> got;
  for (Chunk c; cur.next(c);) got.push_back(c);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].segment, 0u);
  EXPECT_EQ(got[0].offset, 6u);
  EXPECT_EQ(got[0].data.size, 4u);
  EXPECT_EQ(got[1].segment, 1u);
  EXPECT_EQ(got[1].offset, 0u);
  EXPECT_EQ(got[2].offset, 4u);
  EXPECT_EQ(got[2].data.size, 1u);
  EXPECT_EQ(cur.skipped(), 6u);
  // A segment the receiver holds whole (an offset past its end) sends nothing.
  const uint64_t held[2] = {99, 5};
  cur.start(RoundId{}, 2, seg, held, 4);
  Chunk c;
  EXPECT_FALSE(cur.next(c));
  EXPECT_EQ(cur.skipped(), 15u);
  EXPECT_FALSE(cur.active());
}

TEST(ChunkCursor, MoreSegmentsThanAnUpdateHoldsCutNothing) {
  uint8_t a[4];
  View<uint8_t> seg[task::kMaxSegments + 1];
  for (auto& v : seg) v = View<uint8_t>{a, 4};
  ChunkCursor cur;
  cur.start(RoundId{}, task::kMaxSegments + 1, seg, nullptr, 4);
  Chunk c;
  EXPECT_FALSE(cur.active());
  EXPECT_FALSE(cur.next(c));
}

// A host with 8-byte messages: every d = 4 update and broadcast travels in
// four chunks. What the agent sends goes to `server` (when set) as agent `c`.
struct TestHost {
  using Session = ClientSession<double>;
  static AgentLimits limits() { return AgentLimits{task::kMaxSegments, 8, 8}; }
  static int Entropy(void*, uint64_t, uint32_t, uint8_t* out, size_t n) {
    std::memset(out, 0x5A, n);
    return 0;
  }
  Arena* session_arena(size_t bytes) {
    arena.reset();
    memory.assign(bytes + 64, 0);
    return &arena.emplace(memory.data(), memory.size());
  }
  void session_opened(Session&, const RoundId&) { ++opened; }
  bool has_saved(const RoundId&) const { return false; }
  uint32_t now_ms() { return clock += 5; }
  Status persist(bool durable) {
    (durable ? durable_saves : commits_saved)++;
    return Status::Ok();
  }
  Status send(const ClientMessage& m) {
    sent.push_back(m.kind);
    if (m.kind == MessageKind::kChunk) chunks.push_back(m.chunk);
    if (server == nullptr) return Status::Ok();
    const Verdict v = server->on_message(c, m, 0);
    return v.ok() ? Status::Ok() : Status(StatusCode::kInvalidArgument, v.why);
  }
  void worked(const RoundId&, const ClientMessage&, bool again, uint32_t) { again ? ++resubmits : ++updates; }
  void masked(const RoundId&) {}
  void settled(const Settled& s) { settles.push_back(s); }
  void broadcast_received(const RoundId&, uint64_t, uint32_t n) { broadcast_chunks += n; }
  void upload_done(const RoundId&, uint32_t n, bool resumed, uint64_t skipped) {
    upload_chunks += n;
    last_resumed = resumed;
    last_skipped = skipped;
  }

  ServerSession* server = nullptr;
  uint32_t c = 0;
  std::vector<uint8_t> memory;
  std::optional<Arena> arena;
  uint32_t clock = 0, opened = 0, durable_saves = 0, commits_saved = 0, updates = 0, resubmits = 0;
  uint32_t broadcast_chunks = 0, upload_chunks = 0;
  bool last_resumed = false;
  uint64_t last_skipped = 0;
  std::vector<MessageKind> sent;
  std::vector<Chunk> chunks;
  std::vector<Settled> settles;
};
using Agent = DeviceAgent<double, kAllFamilies, TestHost>;

// The server's announcement as a header and 8-byte chunks, as the coordinator
// sends it to a device with small frames.
std::vector<ServerMessage> Chunked(const Announcement& a) {
  std::vector<ServerMessage> out(1);
  out[0].kind = MessageKind::kAnnouncement;
  out[0].announcement = a;
  out[0].announcement.model = View<double>{};
  out[0].announcement.model_bytes = 8ull * a.model.size;
  const View<uint8_t> bytes{reinterpret_cast<const uint8_t*>(a.model.data), 8 * a.model.size};
  ChunkCursor cur;
  cur.start(a.id, 1, &bytes, nullptr, 8);
  for (Chunk c; cur.next(c);) {
    out.emplace_back();
    out.back().kind = MessageKind::kChunk;
    out.back().chunk = c;
  }
  return out;
}

TEST(DeviceAgent, ChunkedBroadcastsAndUpdatesGiveTheServerTheSameBits) {
  Fleet f(task::AlgorithmKind::kScaffold);
  Sessions whole(f);  // the reference: whole messages, by hand
  Sessions cut(f);    // its server only; the agents answer it in chunks
  std::vector<TestHost> hosts(Fleet::kAgents);
  std::vector<std::unique_ptr<Agent>> agents;
  for (uint32_t c = 0; c < Fleet::kAgents; ++c) {
    hosts[c].server = &cut.server;
    hosts[c].c = c;
    agents.push_back(std::make_unique<Agent>(hosts[c]));
    agents[c]->assign(&f.task, c, &f.local[c]);
  }
  for (uint32_t t = 0; t < 3; ++t) {
    for (const auto& [c, r] : whole.announce(t)) ASSERT_TRUE(whole.server.on_message(c, r, 0).ok());
    ASSERT_TRUE(cut.server.open_round(t, 0).ok());
    Outgoing out;
    while (cut.server.next_outgoing(out)) {
      ASSERT_EQ(out.kind, MessageKind::kAnnouncement);
      for (const ServerMessage& m : Chunked(cut.server.announcement(out.agent, 0)))
        ASSERT_TRUE(agents[out.agent]->on_message(m).ok());
      while (agents[out.agent]->uploading()) ASSERT_TRUE(agents[out.agent]->send_next_chunk().ok());
    }
    ASSERT_TRUE(whole.server.round_closed());
    ASSERT_TRUE(cut.server.round_closed());
    whole.publish();
    cut.server.publish();
    while (cut.server.next_outgoing(out)) ASSERT_TRUE(agents[out.agent]->on_message(cut.server.message(out, 0)).ok());
    EXPECT_EQ(whole.state(), cut.state()) << "round " << t;
  }
  for (uint32_t c = 0; c < Fleet::kAgents; ++c) {
    const TestHost& h = hosts[c];
    EXPECT_EQ(h.opened, 1u);
    EXPECT_EQ(h.updates, 3u);
    // Scaffold's broadcast (x, c) and update (the two chains' d = 4 float64)
    // are 64 bytes a round: 8 chunks of 8 bytes.
    EXPECT_EQ(h.broadcast_chunks, 3u * 8u);
    EXPECT_EQ(h.upload_chunks, 3u * 8u);
    EXPECT_EQ(h.durable_saves, 3u);  // before each update left
    ASSERT_EQ(h.settles.size(), 3u);
    for (const Settled& s : h.settles) {
      EXPECT_TRUE(s.included);
      EXPECT_TRUE(s.known);
      EXPECT_EQ(s.report.duration_ms, 5u);  // the host's clock moves 5 ms a reading
    }
  }
}

// Agent 0 of a FedAvg fleet on its own host, round 0 open at the server.
class OneAgent : public ::testing::Test {
 protected:
  void SetUp() override {
    agent.assign(&f.task, 0, &f.local[0]);
    ASSERT_TRUE(s.server.open_round(0, 0).ok());
  }
  Fleet f{task::AlgorithmKind::kFedAvg};
  Sessions s{f};
  TestHost host;
  Agent agent{host};
};

TEST_F(OneAgent, AChunkOutOfOrderDropsTheTransfer) {
  const std::vector<ServerMessage> msgs = Chunked(s.server.announcement(0, 0));
  ASSERT_EQ(msgs.size(), 5u);
  ASSERT_TRUE(agent.on_message(msgs[0]).ok());
  EXPECT_FALSE(agent.on_message(msgs[2]).ok());  // bytes 8..16 before 0..8
  EXPECT_FALSE(agent.on_message(msgs[1]).ok());  // the transfer is gone
  EXPECT_TRUE(host.sent.empty());
  // Announced again, it runs.
  for (const ServerMessage& m : msgs) ASSERT_TRUE(agent.on_message(m).ok());
  while (agent.uploading()) ASSERT_TRUE(agent.send_next_chunk().ok());
  EXPECT_EQ(host.updates, 1u);
  EXPECT_EQ(host.chunks.size(), 4u);
}

TEST_F(OneAgent, ResumeOffsetsSkipWhatTheServerHolds) {
  ServerMessage m;
  m.kind = MessageKind::kAnnouncement;
  m.announcement = s.server.announcement(0, 0);
  ASSERT_TRUE(agent.on_message(m).ok());
  while (agent.uploading()) ASSERT_TRUE(agent.send_next_chunk().ok());
  ASSERT_EQ(host.chunks.size(), 4u);
  EXPECT_FALSE(host.last_resumed);
  // Re-announced after a cut: the server holds 16 of the 32 bytes.
  host.chunks.clear();
  m.announcement.resume = true;
  m.announcement.resume_bytes[0] = 16;
  ASSERT_TRUE(agent.on_message(m).ok());
  while (agent.uploading()) ASSERT_TRUE(agent.send_next_chunk().ok());
  ASSERT_EQ(host.chunks.size(), 2u);
  EXPECT_EQ(host.chunks[0].offset, 16u);
  EXPECT_TRUE(host.last_resumed);
  EXPECT_EQ(host.last_skipped, 16u);
  EXPECT_EQ(host.updates, 1u);
  EXPECT_EQ(host.resubmits, 1u);  // the same update, not a second local work
}

TEST(DeviceAgent, RoundMessagesBeforeATaskAreRefused) {
  TestHost host;
  Agent agent(host);
  ServerMessage m;
  m.kind = MessageKind::kRoundResult;
  EXPECT_EQ(agent.on_message(m).code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace fedrt::protocol
