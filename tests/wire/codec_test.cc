// The wire codec (runtime/include/fedrt/wire/protobuf_codec.h): every round message
// and the task survive encode -> bytes -> decode unchanged, and what breaks
// a wire limit is rejected with its reason where it is decoded.
#include <cmath>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "fedrt/task/fingerprint.h"
#include "fedrt/wire/protobuf_codec.h"
#include "sample_task.h"

namespace fedrt::wire {
namespace {

using protocol::MessageKind;
using protocol::RoundId;
using protocol::View;

// Serialises and parses `env` as the peer would.
Envelope OverTheWire(const Envelope& env) {
  Envelope back;
  WireError err;
  const std::string frame = EncodeFrame(env);
  FrameDecoder dec;
  dec.feed(reinterpret_cast<const uint8_t*>(frame.data()), frame.size());
  std::string body;
  EXPECT_EQ(dec.next(body, err), 1);
  EXPECT_TRUE(ParseEnvelope(body, back, err)) << err.message;
  return back;
}

using test_support::SampleTask;

TEST(WireCodec, TaskRoundTripsFieldForField) {
  const task::Task t = SampleTask();
  Envelope env;
  Welcome* w = env.mutable_welcome();
  EncodeTask(t, w->mutable_task());
  const Envelope back = OverTheWire(env);
  task::Task u;
  ASSERT_TRUE(DecodeTask(back.welcome().task(), u).ok());
  // Every field the session and the device's data depend on.
  EXPECT_EQ(task::ProblemFingerprint(u.problem), task::ProblemFingerprint(t.problem));
  for (uint32_t a = 0; a < t.num_algorithms; ++a)
    EXPECT_EQ(task::SessionFingerprint(u, a, 1), task::SessionFingerprint(t, a, 1));
  EXPECT_EQ(u.num_algorithms, 3u);
  EXPECT_TRUE(u.algorithms[1].rr);
  EXPECT_EQ(u.hyper.burn_in, 11u);
  EXPECT_EQ(u.compression.downlink, false);
  EXPECT_EQ(u.secagg.neighbours, 4u);
  EXPECT_EQ(u.rounds, 21u);
  EXPECT_EQ(u.runs, 2u);
}

// A softmax task carries its classes and intercept (ProblemSpec fields 13, 14).
TEST(WireCodec, SoftmaxTaskCarriesClassesAndIntercept) {
  task::Task t = SampleTask();
  t.problem.kind = task::ProblemKind::kSoftmax;
  t.problem.classes = 10;
  t.problem.intercept = true;
  t.problem.dim = 10 * (3 + 1);
  t.problem.own_data = true;
  Envelope env;
  EncodeTask(t, env.mutable_welcome()->mutable_task());
  const Envelope back = OverTheWire(env);
  task::Task u;
  ASSERT_TRUE(DecodeTask(back.welcome().task(), u).ok());
  EXPECT_EQ(u.problem.kind, task::ProblemKind::kSoftmax);
  EXPECT_EQ(u.problem.classes, 10u);
  EXPECT_TRUE(u.problem.intercept);
  EXPECT_EQ(task::ProblemFingerprint(u.problem), task::ProblemFingerprint(t.problem));
  task::Task other = t;
  other.problem.intercept = false;
  EXPECT_NE(task::ProblemFingerprint(other.problem), task::ProblemFingerprint(t.problem));
  Task w;
  EncodeTask(t, &w);
  w.mutable_problem()->set_classes(7);  // 7 does not divide d = 40
  EXPECT_NE(std::string(DecodeTask(w, u).message()).find("softmax: the classes do not divide the dimension"),
            std::string::npos);
  w.mutable_problem()->set_classes(1);
  EXPECT_FALSE(DecodeTask(w, u).ok());
}

// A user-model task (docs/user-models.md) travels as kind 6 with its d.
TEST(WireCodec, AUserModelTaskRoundTrips) {
  task::Task t = SampleTask();
  t.problem.kind = task::ProblemKind::kUser;
  t.problem.dim = 33;
  t.problem.own_data = true;
  Task w;
  EncodeTask(t, &w);
  EXPECT_EQ(w.problem().kind(), 6u);
  task::Task u;
  ASSERT_TRUE(DecodeTask(w, u).ok());
  EXPECT_EQ(u.problem.kind, task::ProblemKind::kUser);
  EXPECT_EQ(u.problem.dim, 33u);
  EXPECT_EQ(task::ProblemFingerprint(u.problem), task::ProblemFingerprint(t.problem));
}

TEST(WireCodec, BadTasksAreRefusedWithTheReason) {
  auto refused = [](auto mutate, const char* why) {
    Task w;
    EncodeTask(SampleTask(), &w);
    mutate(w);
    task::Task t;
    const Status st = DecodeTask(w, t);
    EXPECT_FALSE(st.ok()) << why;
    EXPECT_NE(std::string(st.message()).find(why), std::string::npos) << st.message();
  };
  refused([](Task& w) { w.mutable_problem()->set_kind(9); }, "unknown problem kind");
  refused([](Task& w) { w.mutable_problem()->set_dim(task::kMaxLinuxStreamDim + 1); }, "dimension");
  refused([](Task& w) { w.mutable_algorithms(0)->set_kind(1); }, "another family");
  refused([](Task& w) { w.clear_algorithms(); }, "algorithms outside 1..8");
  refused([](Task& w) { w.mutable_hyper()->set_step(std::nan("")); }, "step size");
  refused([](Task& w) { w.mutable_compression()->set_bits(40); }, "bits");
  refused([](Task& w) { w.set_participation(1.5); }, "participation");
}

TEST(WireCodec, RoundMessagesRoundTrip) {
  double model[5] = {1.5, -2, 0.25, 1e-300, 7};
  protocol::Announcement a;
  a.id = RoundId{2, 1, 17};
  a.local_steps = 40;
  a.report = false;
  a.deadline_ms = 1234;
  a.model = View<double>{model, 5};
  a.secagg = protocol::SecAggRound{true, 77, 88, 10, 9, 6, 3};
  Envelope env;
  Encode(a, env);
  Envelope back = OverTheWire(env);
  Inbound in;
  WireError err;
  ASSERT_TRUE(in.decode(back, err)) << err.message;
  ASSERT_EQ(in.kind(), MessageKind::kAnnouncement);
  const protocol::Announcement& b = in.announcement();
  EXPECT_EQ(b.id, a.id);
  EXPECT_EQ(b.local_steps, 40u);
  EXPECT_FALSE(b.report);
  EXPECT_EQ(b.deadline_ms, 1234u);
  ASSERT_EQ(b.model.size, 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(b.model[i], model[i]);
  EXPECT_TRUE(b.secagg.enabled);
  EXPECT_EQ(b.secagg.id, 3u);
  EXPECT_EQ(b.secagg.k, 9u);

  uint8_t p0[3] = {1, 2, 3}, p1[2] = {9, 8};
  protocol::Update u;
  u.id = RoundId{0, 0, protocol::kInitRound};
  u.encoding = protocol::Encoding::kCodec;
  u.segments = 2;
  u.payload[0] = View<uint8_t>{p0, 3};
  u.payload[1] = View<uint8_t>{p1, 2};
  u.sample_count = 5000;
  Envelope ue;
  Encode(u, ue);
  back = OverTheWire(ue);
  ASSERT_TRUE(in.decode(back, err));
  ASSERT_EQ(in.kind(), MessageKind::kUpdate);
  EXPECT_EQ(in.update().id.round, protocol::kInitRound);
  ASSERT_EQ(in.update().segments, 2u);
  EXPECT_EQ(0, std::memcmp(in.update().payload[1].data, p1, 2));
  EXPECT_EQ(in.update().sample_count, 5000u);

  secagg::ShareCiphertext cts[2];
  for (int i = 0; i < 2; ++i) {
    cts[i].from = 4;
    cts[i].to = static_cast<uint32_t>(7 + i);
    for (size_t k = 0; k < secagg::kSharePlainBytes; ++k) cts[i].ct[k] = static_cast<uint8_t>(k + i);
    for (size_t k = 0; k < secagg::kTagBytes; ++k) cts[i].tag[k] = static_cast<uint8_t>(200 - k);
  }
  for (bool incoming : {false, true}) {
    Envelope se;
    Encode(protocol::SecAggSharesMsg{RoundId{1, 0, 3}, View<secagg::ShareCiphertext>{cts, 2}}, incoming, se);
    back = OverTheWire(se);
    ASSERT_TRUE(in.decode(back, err));
    EXPECT_EQ(in.kind(), incoming ? MessageKind::kSecAggSharesIn : MessageKind::kSecAggShares);
    ASSERT_EQ(in.shares().shares.size, 2u);
    const secagg::ShareCiphertext& c = in.shares().shares[1];
    EXPECT_EQ(incoming ? c.from : c.to, incoming ? 4u : 8u);  // the peer the wire names
    EXPECT_EQ(0, std::memcmp(c.ct, cts[1].ct, secagg::kSharePlainBytes));
    EXPECT_EQ(0, std::memcmp(c.tag, cts[1].tag, secagg::kTagBytes));
  }
}

TEST(WireCodec, MessagesBreakingTheLimitsAreRejected) {
  Inbound in;
  WireError err;
  auto rejected = [&](const Envelope& env, ErrorReason want) {
    EXPECT_FALSE(in.decode(OverTheWire(env), err));
    EXPECT_EQ(err.reason, want) << err.message;
    EXPECT_FALSE(err.message.empty());
  };
  Envelope long_model;
  for (uint32_t i = 0; i <= task::kMaxLinuxBroadcastScalars; ++i) long_model.mutable_announce()->add_model(0.0);
  rejected(long_model, ERROR_DIMENSION);
  Envelope nan_model;
  nan_model.mutable_announce()->add_model(std::nan(""));
  rejected(nan_model, ERROR_NON_FINITE);
  Envelope three_segments;
  for (int k = 0; k < 3; ++k) three_segments.mutable_update()->add_payload("x");
  rejected(three_segments, ERROR_MALFORMED);
  Envelope big_segment;
  big_segment.mutable_update()->add_payload(std::string(task::kMaxLinuxSegmentBytes + 1, 'x'));
  rejected(big_segment, ERROR_DIMENSION);
  Envelope short_ct;
  short_ct.mutable_secagg_shares()->add_shares()->set_ciphertext(std::string(88, 'c'));
  rejected(short_ct, ERROR_MALFORMED);
  Envelope bad_share;
  SecAggShare* s = bad_share.mutable_secagg_unmask()->add_shares();
  s->set_kind(3);
  s->set_x(1);
  s->set_share(std::string(32, 's'));
  rejected(bad_share, ERROR_MALFORMED);
  Envelope hello;
  hello.mutable_hello();
  rejected(hello, ERROR_MALFORMED);  // not a round message
}

}  // namespace
}  // namespace fedrt::wire
