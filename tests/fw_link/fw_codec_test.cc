// The firmware's nanopb codec (runtime/src/fw/nanopb_codec.cc) against the host's
// protobuf-lite codec (runtime/src/wire/protobuf_codec.cc): the same .proto mapping
// both ways. What the coordinator encodes, the firmware decodes to the same
// task and round messages; what the firmware encodes, the coordinator
// decodes to the same messages; and a task one decoder rejects, the other
// rejects too. Built on the host with the all-families image's nanopb code.
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <pb_decode.h>
#include <pb_encode.h>

#include "fedrt/task/fingerprint.h"
#include "fedrt/fw/nanopb_codec.h"
#include "fedrt/wire/protobuf_codec.h"
#include "fw_codec_support.h"

namespace fedrt::fw {
namespace {

using namespace codec_test;  // NOLINT: the shared helpers of these tests
using protocol::MessageKind;
using protocol::RoundId;
using protocol::View;

TEST(FwCodec, TaskDecodesAsOnTheHost) {
  const task::Task t = SampleTask();
  const Verdicts v = DecodeBoth(t);
  ASSERT_TRUE(v.host.ok()) << v.host.message();
  ASSERT_TRUE(v.fw.ok()) << v.fw.message();
  EXPECT_EQ(task::TaskFingerprint(v.fw_task), task::TaskFingerprint(t));
  EXPECT_EQ(task::TaskFingerprint(v.fw_task), task::TaskFingerprint(v.host_task));
  EXPECT_EQ(task::ProblemFingerprint(v.fw_task.problem), task::ProblemFingerprint(t.problem));
  EXPECT_EQ(v.fw_task.num_algorithms, 3u);
  EXPECT_TRUE(v.fw_task.algorithms[1].rr);
  EXPECT_EQ(v.fw_task.hyper.burn_in, 11u);
  EXPECT_EQ(v.fw_task.secagg.neighbours, 4u);
  EXPECT_EQ(v.fw_task.compression.quantizer.bits, 12u);
  EXPECT_DOUBLE_EQ(v.fw_task.compression.quantizer.clip, 2.5);
  EXPECT_DOUBLE_EQ(v.fw_task.participation, 0.8);
  EXPECT_EQ(v.fw_task.runs, 2u);
}

// Task.privacy (field 10): the firmware image that runs FedAvg decodes the
// clip its devices apply, as the host does; a task without it stays off.
TEST(FwCodec, SoftmaxTaskDecodesAsOnTheHost) {
  task::Task t = SampleTask();
  t.problem.kind = task::ProblemKind::kSoftmax;
  t.problem.classes = 4;
  t.problem.intercept = true;
  t.problem.dim = 4 * (5 + 1);
  t.problem.own_data = true;
  t.num_algorithms = 2;
  const Verdicts v = DecodeBoth(t);
  ASSERT_TRUE(v.host.ok()) << v.host.message();
  ASSERT_TRUE(v.fw.ok()) << v.fw.message();
  EXPECT_EQ(v.fw_task.problem.kind, task::ProblemKind::kSoftmax);
  EXPECT_EQ(v.fw_task.problem.classes, 4u);
  EXPECT_TRUE(v.fw_task.problem.intercept);
  EXPECT_EQ(task::TaskFingerprint(v.fw_task), task::TaskFingerprint(v.host_task));
}

// The two wire profiles (task/limits.h): broadcasts and updates travel in
// chunks, so a task beyond the microcontroller profile's d decodes on both
// sides; what still travels in one frame (an LSA round result, a SecAgg+
// masked input) and the device's memory are its client's to refuse in
// TaskReply (runtime/src/fw/client.cc).
TEST(FwCodec, ATaskBeyondTheImagesFramesDecodesOnBoth) {
  task::Task t = SampleTask();
  t.problem.dim = 4096;
  EXPECT_EQ(fw::MaxModelDim(), task::kMaxDim);  // this image's RoundResult bound is the profile's (runtime/wire/fedrt.options)
  const Verdicts v = DecodeBoth(t);
  EXPECT_TRUE(v.host.ok()) << v.host.message();
  ASSERT_TRUE(v.fw.ok()) << v.fw.message();
  EXPECT_EQ(v.fw_task.problem.dim, 4096u);
  EXPECT_EQ(task::TaskFingerprint(v.fw_task), task::TaskFingerprint(v.host_task));
}

TEST(FwCodec, RejectsTheTasksTheHostRejects) {
  const std::vector<std::pair<const char*, std::function<void(task::Task&)>>> bad = {
      {"dimension 0", [](task::Task& t) { t.problem.dim = 0; }},
      {"dimension above kMaxLinuxStreamDim", [](task::Task& t) { t.problem.dim = task::kMaxLinuxStreamDim + 1; }},
      {"no agents", [](task::Task& t) { t.problem.agents = 0; }},
      {"unknown problem kind", [](task::Task& t) { t.problem.kind = static_cast<task::ProblemKind>(9); }},
      {"unknown algorithm", [](task::Task& t) { t.algorithms[0].kind = static_cast<task::AlgorithmKind>(42); }},
      {"family mismatch", [](task::Task& t) { t.algorithms[0].kind = task::AlgorithmKind::kFedLsa; }},
      {"no algorithm", [](task::Task& t) { t.num_algorithms = 0; }},
      {"zero step", [](task::Task& t) { t.hyper.step = 0; }},
      {"NaN step", [](task::Task& t) { t.hyper.step = std::nan(""); }},
      {"no local steps", [](task::Task& t) { t.hyper.local_steps = 0; }},
      {"NaN noise", [](task::Task& t) { t.problem.synthetic.noise = std::nan(""); }},
      {"participation 0", [](task::Task& t) { t.participation = 0; }},
      {"secagg without rounding", [](task::Task& t) { t.compression.quantizer.kind = compression::QuantizerKind::kDither; t.compression.quantizer.levels = 4; }},
      {"no rounds", [](task::Task& t) { t.rounds = 0; }},
      {"privacy clip 0", [](task::Task& t) { t.privacy.enabled = true; t.privacy.clip = 0.0; t.privacy.noise_multiplier = 1.0; }},
      {"privacy negative noise", [](task::Task& t) { t.privacy.enabled = true; t.privacy.clip = 1.0; t.privacy.noise_multiplier = -0.5; }},
      {"privacy NaN clip", [](task::Task& t) { t.privacy.enabled = true; t.privacy.clip = std::nan(""); t.privacy.noise_multiplier = 1.0; }},
      {"rounding with 0 bits", [](task::Task& t) { t.compression.quantizer.bits = 0; }},
      {"softmax classes that do not divide d", [](task::Task& t) {
         t.problem.kind = task::ProblemKind::kSoftmax;
         t.problem.classes = 3;  // d = 7 in the sample task
       }},
      {"gmm sizes", [](task::Task& t) {
         t.problem.kind = task::ProblemKind::kGmm;
         t.num_algorithms = 1;
         t.algorithms[0] = {task::AlgorithmKind::kFedEm, false};
         t.problem.gmm.components = 2;
         t.problem.gmm.data_dim = 2;  // G (1 + p) = 6, not 7
       }},
  };
  for (const auto& [what, mutate] : bad) {
    task::Task t = SampleTask();
    mutate(t);
    const Verdicts v = DecodeBoth(t);
    EXPECT_FALSE(v.host.ok()) << what;
    EXPECT_FALSE(v.fw.ok()) << what << " (the firmware accepted what the host rejects)";
    EXPECT_NE(std::string(v.fw.message()), "") << what;
    // One check (task/check.h) behind both codecs: the same reason, word for word.
    EXPECT_NE(std::string(v.host.message()).find(v.fw.message()), std::string::npos)
        << what << ": host \"" << v.host.message() << "\", firmware \"" << v.fw.message() << "\"";
  }
}

TEST(FwCodec, AnnouncementAndResultDecodeAsOnTheHost) {
  static Fixture f;
  const double model[] = {1.5, -2.25, 0.0, 3e-7, 1e10};
  protocol::Announcement a;
  a.id = RoundId{2, 1, 17};
  a.kind = protocol::WorkKind::kLocalWork;
  a.local_steps = 123;
  a.report = true;
  a.deadline_ms = 4567;
  a.model = View<double>{model, 5};
  a.secagg = protocol::SecAggRound{true, 0xABCDEF0123ull, 77, 10, 4, 3, 6};
  wire::Envelope env;
  wire::Encode(a, env);
  ASSERT_TRUE(ToNanopb(env, f.env));
  Inbound in;
  ASSERT_TRUE(in.decode(f.env, f.scratch, sizeof f.scratch).ok());
  ASSERT_EQ(in.message().kind, MessageKind::kAnnouncement);
  const protocol::Announcement& b = in.message().announcement;
  EXPECT_EQ(b.id, a.id);
  EXPECT_EQ(in.message().id(), a.id);
  EXPECT_EQ(b.local_steps, 123u);
  EXPECT_TRUE(b.report);
  EXPECT_EQ(b.deadline_ms, 4567u);
  ASSERT_EQ(b.model.size, 5u);
  for (uint32_t i = 0; i < 5; ++i) EXPECT_EQ(b.model[i], model[i]);
  EXPECT_TRUE(b.secagg.enabled);
  EXPECT_EQ(b.secagg.round_id, 0xABCDEF0123ull);
  EXPECT_EQ(b.secagg.n, 10u);
  EXPECT_EQ(b.secagg.k, 4u);
  EXPECT_EQ(b.secagg.t, 3u);
  EXPECT_EQ(b.secagg.id, 6u);

  // A NaN broadcast and an unknown kind are rejected where they are decoded.
  const double nan_model[] = {1.0, std::nan("")};
  a.model = View<double>{nan_model, 2};
  wire::Envelope bad;
  wire::Encode(a, bad);
  ASSERT_TRUE(ToNanopb(bad, f.env));
  EXPECT_FALSE(in.decode(f.env, f.scratch, sizeof f.scratch).ok());
  f.env.body.announce.model[1] = 0.0;
  f.env.body.announce.kind = 7;
  EXPECT_FALSE(in.decode(f.env, f.scratch, sizeof f.scratch).ok());

  protocol::RoundResult r{RoundId{0, 0, 3}, true, View<double>{model, 4}};
  wire::Envelope renv;
  wire::Encode(r, renv);
  ASSERT_TRUE(ToNanopb(renv, f.env));
  ASSERT_TRUE(in.decode(f.env, f.scratch, sizeof f.scratch).ok());
  ASSERT_EQ(in.message().kind, MessageKind::kRoundResult);
  EXPECT_EQ(in.message().result.id, r.id);
  EXPECT_TRUE(in.message().result.included);
  ASSERT_EQ(in.message().result.model.size, 4u);
  EXPECT_EQ(in.message().result.model[3], 3e-7);
}

// One check (protocol/message_check.h) behind both decoders: a server
// message the protocol refuses is refused by the host's and the firmware's
// codec with the same reason.
TEST(FwCodec, RejectsTheServerMessagesTheHostRejects) {
  static Fixture f;
  const double nan_model[] = {1.0, std::nan("")};
  const double inf_model[] = {std::numeric_limits<double>::infinity()};
  const uint8_t byte = 7;
  std::vector<std::pair<const char*, wire::Envelope>> bad;
  {
    protocol::Announcement a;
    a.id = RoundId{0, 0, 3};
    a.local_steps = 1;
    a.model = View<double>{nan_model, 2};
    bad.emplace_back("a NaN broadcast", wire::Envelope{});
    wire::Encode(a, bad.back().second);
    a.model = View<double>{inf_model, 1};
    a.model_bytes = 64;  // a chunked header that also carries a value
    bad.emplace_back("a chunked header with a value", wire::Envelope{});
    wire::Encode(a, bad.back().second);
    a.model = View<double>{};
    a.model_bytes = 63;  // not whole float64 values
    bad.emplace_back("a chunked header of 63 bytes", wire::Envelope{});
    wire::Encode(a, bad.back().second);
  }
  {
    protocol::Chunk c{RoundId{0, 0, 3}, 2, 0, 8, View<uint8_t>{&byte, 1}};
    bad.emplace_back("a chunk of segment 2", wire::Envelope{});
    wire::Encode(c, bad.back().second);
    c.segment = 0;
    c.data = View<uint8_t>{};
    bad.emplace_back("a chunk without data", wire::Envelope{});
    wire::Encode(c, bad.back().second);
  }
  {
    protocol::RoundResult r{RoundId{0, 0, 3}, true, View<double>{inf_model, 1}};
    bad.emplace_back("an infinite round result", wire::Envelope{});
    wire::Encode(r, bad.back().second);
  }
  for (const auto& [what, env] : bad) {
    wire::Inbound host;
    wire::WireError err;
    EXPECT_FALSE(host.decode(env, err)) << what;
    ASSERT_TRUE(ToNanopb(env, f.env)) << what;
    Inbound fw;
    const Status st = fw.decode(f.env, f.scratch, sizeof f.scratch);
    EXPECT_FALSE(st.ok()) << what << " (the firmware accepted what the host rejects)";
    EXPECT_EQ(err.message, std::string(st.message())) << what;
  }
}

TEST(FwCodec, SecAggPhasesDecodeAsOnTheHost) {
  static Fixture f;
  Inbound in;
  secagg::Advertise ads[3];
  for (uint32_t i = 0; i < 3; ++i) {
    ads[i].id = 10 + i;
    for (uint32_t k = 0; k < secagg::kKeyBytes; ++k) {
      ads[i].c_pk[k] = static_cast<uint8_t>(i * 31 + k);
      ads[i].s_pk[k] = static_cast<uint8_t>(i * 17 + 3 * k);
    }
  }
  wire::Envelope env;
  wire::Encode(protocol::SecAggKeysMsg{RoundId{1, 0, 4}, View<secagg::Advertise>{ads, 3}}, env);
  ASSERT_TRUE(ToNanopb(env, f.env));
  ASSERT_TRUE(in.decode(f.env, f.scratch, sizeof f.scratch).ok());
  ASSERT_EQ(in.message().kind, MessageKind::kSecAggKeys);
  ASSERT_EQ(in.message().keys.peers.size, 3u);
  EXPECT_EQ(in.message().keys.peers[2].id, 12u);
  EXPECT_EQ(std::memcmp(in.message().keys.peers[1].s_pk, ads[1].s_pk, secagg::kKeyBytes), 0);
  f.env.body.secagg_keys.peers[0].c_pk.size = 31;  // a short key
  EXPECT_FALSE(in.decode(f.env, f.scratch, sizeof f.scratch).ok());

  secagg::ShareCiphertext cts[2];
  for (uint32_t i = 0; i < 2; ++i) {
    cts[i].from = 5 + i;
    for (size_t k = 0; k < sizeof cts[i].ct; ++k) cts[i].ct[k] = static_cast<uint8_t>(k + i);
    for (size_t k = 0; k < sizeof cts[i].tag; ++k) cts[i].tag[k] = static_cast<uint8_t>(200 - k);
  }
  wire::Envelope senv;
  wire::Encode(protocol::SecAggSharesMsg{RoundId{1, 0, 4}, View<secagg::ShareCiphertext>{cts, 2}}, /*incoming=*/true, senv);
  ASSERT_TRUE(ToNanopb(senv, f.env));
  ASSERT_TRUE(in.decode(f.env, f.scratch, sizeof f.scratch).ok());
  ASSERT_EQ(in.message().kind, MessageKind::kSecAggSharesIn);
  ASSERT_EQ(in.message().shares.shares.size, 2u);
  EXPECT_EQ(in.message().shares.shares[1].from, 6u);
  EXPECT_EQ(std::memcmp(in.message().shares.shares[1].ct, cts[1].ct, sizeof cts[1].ct), 0);
  EXPECT_EQ(std::memcmp(in.message().shares.shares[0].tag, cts[0].tag, sizeof cts[0].tag), 0);

  const uint32_t survivors[] = {3, 5, 8};
  wire::Envelope uenv;
  wire::Encode(protocol::SecAggUnmaskRequestMsg{RoundId{1, 0, 4}, View<uint32_t>{survivors, 3}}, uenv);
  ASSERT_TRUE(ToNanopb(uenv, f.env));
  ASSERT_TRUE(in.decode(f.env, f.scratch, sizeof f.scratch).ok());
  ASSERT_EQ(in.message().kind, MessageKind::kSecAggUnmaskRequest);
  ASSERT_EQ(in.message().unmask_request.survivors.size, 3u);
  EXPECT_EQ(in.message().unmask_request.survivors[2], 8u);
  // Too little scratch for the SecAgg+ tables is an error, not an overflow.
  ASSERT_TRUE(ToNanopb(senv, f.env));
  EXPECT_FALSE(in.decode(f.env, f.scratch, 16).ok());
}

TEST(FwCodec, DeviceMessagesDecodeOnTheHost) {
  static Fixture f;
  wire::Inbound host;
  wire::WireError err;
  wire::Envelope env;

  const uint8_t seg0[] = {1, 2, 3, 4, 5}, seg1[] = {9, 8, 7};
  protocol::Update u;
  u.id = RoundId{3, 1, 9};
  u.encoding = protocol::Encoding::kCodec;
  u.segments = 2;
  u.payload[0] = View<uint8_t>{seg0, 5};
  u.payload[1] = View<uint8_t>{seg1, 3};
  u.sample_count = 4242;
  ASSERT_TRUE(Encode(u, f.env).ok());
  ASSERT_TRUE(ToHost(f.env, env));
  ASSERT_TRUE(host.decode(env, err)) << err.message;
  ASSERT_EQ(host.kind(), MessageKind::kUpdate);
  EXPECT_EQ(host.update().id, u.id);
  EXPECT_EQ(host.update().encoding, protocol::Encoding::kCodec);
  ASSERT_EQ(host.update().segments, 2u);
  EXPECT_EQ(host.update().payload[1].size, 3u);
  EXPECT_EQ(std::memcmp(host.update().payload[0].data, seg0, 5), 0);
  EXPECT_EQ(host.update().sample_count, 4242u);
  // A segment over the image's bound is an error, not a truncation.
  std::vector<uint8_t> big(MaxSegmentBytes() + 1, 0);
  u.payload[0] = View<uint8_t>{big.data(), static_cast<uint32_t>(big.size())};
  EXPECT_EQ(Encode(u, f.env).code(), StatusCode::kResourceExhausted);

  protocol::SecAggAdvertiseMsg a;
  a.id = RoundId{0, 2, 5};
  for (uint32_t k = 0; k < secagg::kKeyBytes; ++k) a.keys.c_pk[k] = a.keys.s_pk[31 - k] = static_cast<uint8_t>(k);
  ASSERT_TRUE(Encode(a, f.env).ok());
  ASSERT_TRUE(ToHost(f.env, env));
  ASSERT_TRUE(host.decode(env, err)) << err.message;
  ASSERT_EQ(host.kind(), MessageKind::kSecAggAdvertise);
  EXPECT_EQ(host.advertise().id, a.id);
  EXPECT_EQ(std::memcmp(host.advertise().keys.s_pk, a.keys.s_pk, secagg::kKeyBytes), 0);

  secagg::ShareCiphertext ct;
  ct.to = 7;
  for (size_t k = 0; k < sizeof ct.ct; ++k) ct.ct[k] = static_cast<uint8_t>(3 * k);
  ASSERT_TRUE(Encode(protocol::SecAggSharesMsg{a.id, View<secagg::ShareCiphertext>{&ct, 1}}, f.env).ok());
  ASSERT_TRUE(ToHost(f.env, env));
  ASSERT_TRUE(host.decode(env, err)) << err.message;
  ASSERT_EQ(host.kind(), MessageKind::kSecAggShares);
  ASSERT_EQ(host.shares().shares.size, 1u);
  EXPECT_EQ(host.shares().shares[0].to, 7u);
  EXPECT_EQ(std::memcmp(host.shares().shares[0].ct, ct.ct, sizeof ct.ct), 0);

  const uint32_t masked[] = {0xFFFFFFFFu, 0, 12345};
  ASSERT_TRUE(Encode(protocol::SecAggMaskedMsg{a.id, View<uint32_t>{masked, 3}, {}}, f.env).ok());
  ASSERT_TRUE(ToHost(f.env, env));
  ASSERT_TRUE(host.decode(env, err)) << err.message;
  ASSERT_EQ(host.kind(), MessageKind::kSecAggMasked);
  ASSERT_EQ(host.masked().masked.size, 3u);
  EXPECT_EQ(host.masked().masked[0], 0xFFFFFFFFu);

  secagg::UnmaskShare sh;
  sh.about = 4;
  sh.kind = secagg::ShareKind::kMaskKey;
  sh.x = 9;
  for (uint32_t k = 0; k < secagg::kKeyBytes; ++k) sh.share[k] = static_cast<uint8_t>(k ^ 0x5A);
  ASSERT_TRUE(Encode(protocol::SecAggUnmaskMsg{a.id, View<secagg::UnmaskShare>{&sh, 1}}, f.env).ok());
  ASSERT_TRUE(ToHost(f.env, env));
  ASSERT_TRUE(host.decode(env, err)) << err.message;
  ASSERT_EQ(host.kind(), MessageKind::kSecAggUnmask);
  ASSERT_EQ(host.unmask().shares.size, 1u);
  EXPECT_EQ(host.unmask().shares[0].about, 4u);
  EXPECT_EQ(host.unmask().shares[0].kind, secagg::ShareKind::kMaskKey);
  EXPECT_EQ(host.unmask().shares[0].x, 9u);
  EXPECT_EQ(std::memcmp(host.unmask().shares[0].share, sh.share, secagg::kKeyBytes), 0);
}

// Chunked transfer (docs/architecture.md): the coordinator's chunked
// announcement (model_bytes, resume offsets, no model) and its chunks decode
// on the firmware as on the host; the firmware's chunked update header and
// chunks decode on the host.
TEST(FwCodec, ChunkedBroadcastAndUpdateDecodeAsOnTheHost) {
  static Fixture f;
  Inbound in;
  protocol::Announcement a;
  a.id = RoundId{1, 0, 6};
  a.local_steps = 5;
  a.model_bytes = 32768;
  a.resume = true;
  a.resume_bytes[0] = 4096;
  a.resume_bytes[1] = 0;
  wire::Envelope env;
  wire::Encode(a, env);
  ASSERT_TRUE(ToNanopb(env, f.env));
  ASSERT_TRUE(in.decode(f.env, f.scratch, sizeof f.scratch).ok());
  ASSERT_EQ(in.message().kind, MessageKind::kAnnouncement);
  EXPECT_EQ(in.message().announcement.model_bytes, 32768u);
  EXPECT_EQ(in.message().announcement.model.size, 0u);
  EXPECT_TRUE(in.message().announcement.resume);
  EXPECT_EQ(in.message().announcement.resume_bytes[0], 4096u);
  // Inline values next to model_bytes, or bytes that are not whole float64 values: rejected.
  f.env.body.announce.model_count = 1;
  EXPECT_FALSE(in.decode(f.env, f.scratch, sizeof f.scratch).ok());
  f.env.body.announce.model_count = 0;
  f.env.body.announce.model_bytes = 32767;
  EXPECT_FALSE(in.decode(f.env, f.scratch, sizeof f.scratch).ok());

  std::vector<uint8_t> data(MaxChunkData());
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7);
  wire::Envelope cenv;
  wire::Encode(protocol::Chunk{a.id, 0, 1024, 32768, View<uint8_t>{data.data(), static_cast<uint32_t>(data.size())}}, cenv);
  ASSERT_TRUE(ToNanopb(cenv, f.env));
  ASSERT_TRUE(in.decode(f.env, f.scratch, sizeof f.scratch).ok());
  ASSERT_EQ(in.message().kind, MessageKind::kChunk);
  EXPECT_EQ(in.message().id(), a.id);
  EXPECT_EQ(in.message().chunk.offset, 1024u);
  EXPECT_EQ(in.message().chunk.total, 32768u);
  ASSERT_EQ(in.message().chunk.data.size, data.size());
  EXPECT_EQ(std::memcmp(in.message().chunk.data.data, data.data(), data.size()), 0);
  // A chunk the firmware's frame cannot hold is undecodable (nanopb bound), not truncated.
  data.resize(MaxChunkData() + 8);
  wire::Encode(protocol::Chunk{a.id, 0, 0, 32768, View<uint8_t>{data.data(), static_cast<uint32_t>(data.size())}}, cenv);
  EXPECT_FALSE(ToNanopb(cenv, f.env));

  wire::Inbound host;
  wire::WireError err;
  protocol::Update u;
  u.id = a.id;
  u.segments = 1;
  u.chunked = true;
  u.payload_bytes[0] = 32768;
  u.sample_count = 10;
  ASSERT_TRUE(Encode(u, f.env).ok());
  ASSERT_TRUE(ToHost(f.env, env));
  ASSERT_TRUE(host.decode(env, err)) << err.message;
  ASSERT_EQ(host.kind(), MessageKind::kUpdate);
  EXPECT_TRUE(host.update().chunked);
  EXPECT_EQ(host.update().segments, 1u);
  EXPECT_EQ(host.update().payload_bytes[0], 32768u);
  EXPECT_EQ(host.update().sample_count, 10u);
  data.resize(ChunkBytesFor(fedrt_wire_Envelope_size));
  ASSERT_TRUE(Encode(protocol::Chunk{u.id, 0, 2048, 32768, View<uint8_t>{data.data(), static_cast<uint32_t>(data.size())}},
                     f.env).ok());
  ASSERT_TRUE(ToHost(f.env, env));
  ASSERT_TRUE(host.decode(env, err)) << err.message;
  ASSERT_EQ(host.kind(), MessageKind::kChunk);
  EXPECT_EQ(host.chunk().offset, 2048u);
  EXPECT_EQ(host.chunk().data.size, data.size());
  EXPECT_EQ(std::memcmp(host.chunk().data.data, data.data(), data.size()), 0);
}

// The chunk an image names in Hello: what its frame holds of Chunk.data, a
// multiple of 8, at most the nanopb bound, at least kMinChunkBytes or none.
TEST(FwCodec, ChunkSizeFollowsTheFrame) {
  EXPECT_EQ(ChunkBytesFor(fedrt_wire_Envelope_size), task::kMcuChunkBytes);  // this image: the nanopb bound
  EXPECT_EQ(MaxChunkData(), task::kMcuChunkBytes);
  const size_t overhead = fedrt_wire_Chunk_size - MaxChunkData() + 5;
  EXPECT_EQ(ChunkBytesFor(overhead + 600), 600u);
  EXPECT_EQ(ChunkBytesFor(overhead + 607), 600u);
  EXPECT_EQ(ChunkBytesFor(overhead + 256), 256u);
  EXPECT_EQ(ChunkBytesFor(overhead + 255), 0u);
  // The longest chunk of an image fits its frame.
  std::vector<uint8_t> data(ChunkBytesFor(overhead + 600), 0xFF);
  static fedrt_wire_Envelope env;
  ASSERT_TRUE(Encode(protocol::Chunk{RoundId{0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFEu}, 1, ~0ull >> 1, ~0ull,
                                     View<uint8_t>{data.data(), static_cast<uint32_t>(data.size())}},
                     env).ok());
  std::vector<uint8_t> buf(overhead + 600);
  pb_ostream_t s = pb_ostream_from_buffer(buf.data(), buf.size());
  EXPECT_TRUE(pb_encode(&s, fedrt_wire_Envelope_fields, &env)) << PB_GET_ERROR(&s);
}

}  // namespace
}  // namespace fedrt::fw
