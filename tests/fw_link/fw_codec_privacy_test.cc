// The privacy fields through both codecs (docs/privacy.md): central
// DP-FedAvg's clip and noise, adaptive clipping's announced clip and clip
// indicator, the distributed mechanism's fields; what one decoder rejects,
// the other rejects too. Built on the host with the all-families image's
// nanopb code, as fw_codec_test.cc.
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "fedrt/task/fingerprint.h"
#include "fw_codec_support.h"

namespace fedrt::fw {
namespace {

using namespace codec_test;  // NOLINT: the shared helpers of these tests
using protocol::MessageKind;
using protocol::RoundId;
using protocol::View;

TEST(FwCodec, PrivacyDecodesAsOnTheHost) {
  task::Task t = SampleTask();
  t.privacy.enabled = true;
  t.privacy.clip = 0.375;
  t.privacy.noise_multiplier = 1.25;
  const Verdicts v = DecodeBoth(t);
  ASSERT_TRUE(v.host.ok()) << v.host.message();
  ASSERT_TRUE(v.fw.ok()) << v.fw.message();
  for (const task::Task* d : {&v.host_task, &v.fw_task}) {
    EXPECT_TRUE(d->privacy.enabled);
    EXPECT_EQ(d->privacy.clip, 0.375);
    EXPECT_EQ(d->privacy.noise_multiplier, 1.25);
  }
  EXPECT_EQ(task::TaskFingerprint(v.fw_task), task::TaskFingerprint(t));
  const Verdicts off = DecodeBoth(SampleTask());
  ASSERT_TRUE(off.fw.ok()) << off.fw.message();
  EXPECT_FALSE(off.host_task.privacy.enabled);
  EXPECT_FALSE(off.fw_task.privacy.enabled);
}

// Adaptive clipping (docs/privacy.md): the announcement's clip C_t reaches
// the firmware as the host sent it, and the firmware's clip indicator the
// host; a negative clip and an indicator other than 0, 1, 2 are refused.
TEST(FwCodec, AdaptiveClipTravelsBothWays) {
  static Fixture f;
  const double model[] = {0.5, -1.0};
  protocol::Announcement a;
  a.id = RoundId{0, 0, 4};
  a.local_steps = 5;
  a.model = View<double>{model, 2};
  a.clip = 0.625;
  wire::Envelope env;
  wire::Encode(a, env);
  ASSERT_TRUE(ToNanopb(env, f.env));
  Inbound in;
  ASSERT_TRUE(in.decode(f.env, f.scratch, sizeof f.scratch).ok());
  EXPECT_EQ(in.message().announcement.clip, 0.625);
  f.env.body.announce.clip = -0.5;
  EXPECT_FALSE(in.decode(f.env, f.scratch, sizeof f.scratch).ok());
  a.clip = 0;  // no adaptive clipping: absent, decoded as 0
  wire::Envelope plain;
  wire::Encode(a, plain);
  ASSERT_TRUE(ToNanopb(plain, f.env));
  ASSERT_TRUE(in.decode(f.env, f.scratch, sizeof f.scratch).ok());
  EXPECT_EQ(in.message().announcement.clip, 0.0);

  const uint8_t seg[8] = {};
  protocol::Update u;
  u.id = RoundId{0, 0, 4};
  u.segments = 1;
  u.payload[0] = View<uint8_t>{seg, 8};
  u.clip_indicator = 2;
  ASSERT_TRUE(Encode(u, f.env).ok());
  wire::Envelope uenv;
  ASSERT_TRUE(ToHost(f.env, uenv));
  wire::Inbound host;
  wire::WireError err;
  ASSERT_TRUE(host.decode(uenv, err)) << err.message;
  EXPECT_EQ(host.update().clip_indicator, 2u);
  f.env.body.update.clip_indicator = 3;
  ASSERT_TRUE(ToHost(f.env, uenv));
  EXPECT_FALSE(host.decode(uenv, err));
  EXPECT_NE(err.message.find("clip indicator 3"), std::string::npos) << err.message;
}

// The distributed mechanism's fields (PrivacySpec 4..8) reach the firmware
// as they reach a Linux device; a distributed task without them, or with a
// quorum or variance out of range, is refused by both codecs.
TEST(FwCodec, DistributedPrivacyDecodesAsOnTheHost) {
  task::Task t = SampleTask();
  t.privacy.enabled = true;
  t.privacy.clip = 0.5;
  t.privacy.noise_multiplier = 1.0;
  t.privacy.distributed = true;
  t.privacy.has_test_seed = true;
  t.privacy.device_variance = 1u << 16;
  t.privacy.quorum_ppm = 800000;
  t.privacy.test_seed = 0xdeadbeefu;
  const Verdicts v = DecodeBoth(t);
  ASSERT_TRUE(v.host.ok()) << v.host.message();
  ASSERT_TRUE(v.fw.ok()) << v.fw.message();
  for (const task::Task* d : {&v.host_task, &v.fw_task}) {
    EXPECT_TRUE(d->privacy.distributed);
    EXPECT_TRUE(d->privacy.has_test_seed);
    EXPECT_EQ(d->privacy.device_variance, 1u << 16);
    EXPECT_EQ(d->privacy.quorum_ppm, 800000u);
    EXPECT_EQ(d->privacy.test_seed, 0xdeadbeefu);
  }
  EXPECT_EQ(task::TaskFingerprint(v.fw_task), task::TaskFingerprint(t));
  for (uint32_t bad_ppm : {0u, 1000001u}) {
    task::Task b = t;
    b.privacy.quorum_ppm = bad_ppm;
    const Verdicts vb = DecodeBoth(b);
    EXPECT_FALSE(vb.host.ok()) << "quorum_ppm " << bad_ppm;
    EXPECT_FALSE(vb.fw.ok()) << "quorum_ppm " << bad_ppm;
  }
  task::Task big = t;
  big.privacy.device_variance = (1u << 24) + 1;
  EXPECT_FALSE(DecodeBoth(big).host.ok());
  EXPECT_FALSE(DecodeBoth(big).fw.ok());
}

// The firmware reads a softmax task's classes and intercept (ProblemSpec 13,
// 14) as the host does; its client then refuses the task with the reason.

}  // namespace
}  // namespace fedrt::fw
