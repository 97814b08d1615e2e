// Writes the seed corpora of the fuzz targets whose inputs are binary
// messages (docs/fuzzing.md), with the project's own encoders:
//   fuzz_make_corpus <dir>   -> <dir>/{frame,wire_messages,fw_messages,chunk,secagg,record_shard,array_bundle,
//                               gateway_link}/
// The committed files in tests/fuzz/corpus came from it; rerun it after a
// wire format change. Valid inputs and a few near-valid ones (truncated, one
// field off).
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fedrt/compression/payload.h"
#include "fedrt/data/shard.h"
#include "fedrt/problems/array_bundle.h"
#include "fedrt/wire/gateway_codec.h"
#include "fedrt/wire/protobuf_codec.h"

using namespace fedrt;
using namespace fedrt::protocol;

namespace {

std::filesystem::path g_root;

void Put(const std::string& target, const std::string& name, const std::string& bytes) {
  const auto dir = g_root / target;
  std::filesystem::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary) << bytes;
}
std::string Ser(const wire::Envelope& env) { return env.SerializeAsString(); }
std::string Len16(const std::string& s) { return {char(s.size() >> 8), char(s.size() & 0xFF)}; }

task::Task SmallTask() {
  task::Task t;
  t.problem.kind = task::ProblemKind::kLeastSquares;
  t.problem.agents = 2;
  t.problem.dim = 8;
  t.num_algorithms = 1;
  t.algorithms[0] = task::AlgorithmChoice{task::AlgorithmKind::kFedAvg, false};
  t.hyper.step = 0.05;
  t.hyper.local_steps = 5;
  t.hyper.batch = 2;
  t.rounds = 4;
  return t;
}

// One envelope of each round message, and a Hello and a Welcome.
std::vector<std::pair<std::string, wire::Envelope>> Messages() {
  std::vector<std::pair<std::string, wire::Envelope>> out;
  static const double model[4] = {0.5, -1.25, 3.0, 0.0};
  static uint8_t bytes[128];
  for (int i = 0; i < 128; ++i) bytes[i] = static_cast<uint8_t>(i * 37 + 1);
  const RoundId id{0, 1, 2};
  auto add = [&](const char* name, auto fill) {
    wire::Envelope env;
    fill(env);
    out.emplace_back(name, env);
  };
  add("hello", [](wire::Envelope& e) {
    e.mutable_hello()->set_protocol_version(wire::kProtocolVersion);
    e.mutable_hello()->set_device_id("dev-0001");
    e.mutable_hello()->set_platform("linux-x86_64");
    e.mutable_hello()->set_max_chunk_bytes(1024);
    e.mutable_hello()->set_heartbeats(true);
  });
  add("welcome", [](wire::Envelope& e) {
    e.mutable_welcome()->set_protocol_version(wire::kProtocolVersion);
    e.mutable_welcome()->set_num_devices(2);
    e.mutable_welcome()->set_heartbeat_ms(15000);
    wire::EncodeTask(SmallTask(), e.mutable_welcome()->mutable_task());
  });
  add("announce", [&](wire::Envelope& e) {
    Announcement a;
    a.id = id;
    a.local_steps = 5;
    a.model = View<double>{model, 4};
    a.secagg = SecAggRound{true, 7, 9, 3, 2, 2, 1};
    wire::Encode(a, e);
  });
  add("announce_chunked", [&](wire::Envelope& e) {
    Announcement a;
    a.id = id;
    a.model_bytes = 64;
    a.resume = true;
    wire::Encode(a, e);
  });
  add("update", [&](wire::Envelope& e) {
    Update u;
    u.id = id;
    u.segments = 1;
    u.payload[0] = View<uint8_t>{bytes, 32};
    u.sample_count = 10;
    u.report.loss_before = 1.5;
    wire::Encode(u, e);
  });
  add("update_header", [&](wire::Envelope& e) {
    Update u;
    u.id = id;
    u.segments = 2;
    u.chunked = true;
    u.payload_bytes[0] = u.payload_bytes[1] = 64;
    wire::Encode(u, e);
  });
  add("chunk", [&](wire::Envelope& e) { wire::Encode(Chunk{id, 0, 16, 64, View<uint8_t>{bytes, 16}}, e); });
  add("result", [&](wire::Envelope& e) { wire::Encode(RoundResult{id, true, View<double>{model, 4}}, e); });
  secagg::Advertise ads[2];
  for (int i = 0; i < 2; ++i) {
    ads[i].id = static_cast<uint32_t>(i);
    std::memcpy(ads[i].c_pk, bytes + i, secagg::kKeyBytes);
    std::memcpy(ads[i].s_pk, bytes + 16 + i, secagg::kKeyBytes);
  }
  add("advertise", [&](wire::Envelope& e) { wire::Encode(SecAggAdvertiseMsg{id, ads[0]}, e); });
  add("keys", [&](wire::Envelope& e) { wire::Encode(SecAggKeysMsg{id, View<secagg::Advertise>{ads, 2}}, e); });
  secagg::ShareCiphertext cts[2];
  for (int i = 0; i < 2; ++i) {
    cts[i].from = 1 + i;
    cts[i].to = 2 - i;
    std::memcpy(cts[i].ct, bytes, sizeof(cts[i].ct));
  }
  add("shares", [&](wire::Envelope& e) { wire::Encode(SecAggSharesMsg{id, View<secagg::ShareCiphertext>{cts, 2}}, false, e); });
  add("shares_in", [&](wire::Envelope& e) { wire::Encode(SecAggSharesMsg{id, View<secagg::ShareCiphertext>{cts, 2}}, true, e); });
  static const uint32_t words[3] = {1, 0xFFFFFFFFu, 12345};
  add("masked", [&](wire::Envelope& e) { wire::Encode(SecAggMaskedMsg{id, View<uint32_t>{words, 3}, {}}, e); });
  add("unmask_request", [&](wire::Envelope& e) { wire::Encode(SecAggUnmaskRequestMsg{id, View<uint32_t>{words, 2}}, e); });
  secagg::UnmaskShare us[2];
  us[0].about = 1;
  us[0].x = 2;
  us[1].about = 2;
  us[1].kind = secagg::ShareKind::kMaskKey;
  us[1].x = 3;
  add("unmask", [&](wire::Envelope& e) { wire::Encode(SecAggUnmaskMsg{id, View<secagg::UnmaskShare>{us, 2}}, e); });
  secagg::ConsistencyTag tags[2];
  for (int i = 0; i < 2; ++i) {
    tags[i].from = 1 + i;
    tags[i].to = 2 - i;
    std::memcpy(tags[i].tag, bytes + i, sizeof(tags[i].tag));
  }
  add("check", [&](wire::Envelope& e) { wire::Encode(SecAggCheckMsg{id, View<secagg::ConsistencyTag>{tags, 2}}, false, e); });
  add("checks", [&](wire::Envelope& e) { wire::Encode(SecAggCheckMsg{id, View<secagg::ConsistencyTag>{tags, 2}}, true, e); });
  add("heartbeat", [](wire::Envelope& e) { e.mutable_heartbeat(); });
  return out;
}

// The field number of the envelope's body (wire_messages_fuzz.cc: byte % 20 + 1).
uint8_t Selector(const wire::Envelope& env) { return static_cast<uint8_t>(static_cast<int>(env.body_case()) - 1); }
// The message body alone: the envelope minus its tag and length.
std::string Body(const wire::Envelope& env) {
  const std::string s = Ser(env);
  size_t i = 0;
  for (int varints = 0; varints < 2; ++varints) {  // the tag, then the length
    while (i < s.size() && (static_cast<uint8_t>(s[i]) & 0x80)) ++i;
    ++i;
  }
  return s.substr(i);
}

void Wire() {
  const auto msgs = Messages();
  for (const auto& [name, env] : msgs) {
    Put("wire_messages", name, std::string(1, char(Selector(env))) + Body(env));
    const bool to_device = name != "hello" && name != "update" && name != "update_header" && name != "advertise" &&
                           name != "shares" && name != "masked" && name != "unmask" && name != "check" &&
                           name != "heartbeat";
    if (to_device) Put("fw_messages", name, Ser(env));
  }
  // Near-valid: a key one byte short, a truncated task.
  std::string keys = Body(msgs[9].second);
  Put("wire_messages", "keys_truncated", std::string(1, char(Selector(msgs[9].second))) + keys.substr(0, keys.size() - 1));
  std::string welcome = Ser(msgs[1].second);
  Put("fw_messages", "welcome_truncated", welcome.substr(0, welcome.size() / 2));
  // Frames: a stream of three, cut in 7-byte pieces; one split mid-header; a length over the maximum.
  std::string stream(1, char(6));
  for (int i : {0, 2, 7}) stream += wire::EncodeFrame(msgs[i].second);
  Put("frame", "three_frames", stream);
  Put("frame", "partial", std::string(1, char(0)) + wire::EncodeFrame(msgs[4].second).substr(0, 9));
  Put("frame", "too_large", std::string("\x03\x7f\xff\xff\xff\x00", 6));
  Put("frame", "empty_envelope", std::string("\x01\x00\x00\x00\x00", 5));
}

// Records [agent][len16][envelope] for chunk_fuzz.cc: a header and its chunks.
std::string Record(uint32_t agent, const wire::Envelope& env) {
  const std::string s = Ser(env);
  return std::string(1, char(agent)) + Len16(s) + s;
}

void Chunks() {
  const RoundId id{0, 0, 0};
  std::vector<uint8_t> raw(64);
  for (int i = 0; i < 8; ++i) {
    const double v = 0.25 * (i - 3);
    std::memcpy(&raw[8 * i], &v, 8);
  }
  auto stream = [&](uint8_t mode, uint32_t segments, const std::vector<uint8_t>& seg, uint32_t piece, Encoding enc,
                    bool both_agents) {
    std::string out(1, char(mode));
    for (uint32_t agent = 0; agent < (both_agents ? 2u : 1u); ++agent) {
      Update h;
      h.id = id;
      h.encoding = enc;
      h.segments = segments;
      h.chunked = true;
      for (uint32_t k = 0; k < segments; ++k) h.payload_bytes[k] = seg.size();
      wire::Envelope env;
      wire::Encode(h, env);
      out += Record(agent, env);
      for (uint32_t k = 0; k < segments; ++k)
        for (uint32_t off = 0; off < seg.size(); off += piece) {
          const uint32_t n = std::min<uint32_t>(piece, static_cast<uint32_t>(seg.size()) - off);
          wire::Envelope c;
          wire::Encode(Chunk{id, k, off, seg.size(), View<uint8_t>{seg.data() + off, n}}, c);
          out += Record(agent, c);
        }
    }
    return out;
  };
  Put("chunk", "raw_two_agents", stream(0, 1, raw, 16, Encoding::kRawFloat64, true));
  Put("chunk", "raw_rr", stream(2, 2, raw, 24, Encoding::kRawFloat64, false));
  // Coded: the dithering codec's bytes of the same vector.
  compression::QuantizerSpec q;
  q.kind = compression::QuantizerKind::kDither;
  q.levels = 4;
  double v[8], dec[8];
  std::memcpy(v, raw.data(), 64);
  CounterRng rng(1);
  std::vector<uint8_t> coded(256);
  auto n = compression::Encode<double>(q, v, 8, rng, coded.data(), coded.size(), dec);
  coded.resize(n.ok() ? *n : 0);
  Put("chunk", "dither_two_agents", stream(1, 1, coded, 5, Encoding::kCodec, true));
  // Near-valid: the second chunk before the first (a refusal, then the rest).
  std::string s = stream(0, 1, raw, 32, Encoding::kRawFloat64, false);
  Put("chunk", "raw_truncated", s.substr(0, s.size() - 7));
}

// Scripts for secagg_fuzz.cc: [n, k, t, d, bits, seed] then (op, device) pairs.
void SecAgg() {
  auto round = [](uint8_t nb, uint8_t kb, uint8_t tb, uint32_t n, uint32_t masked_upto, bool forge) {
    std::string s{char(nb), char(kb), char(tb), char(3), char(7), char(5)};
    auto all = [&](uint32_t upto) {
      for (uint32_t u = 0; u < upto; ++u) s += std::string{char(0), char(u)};
    };
    all(n);
    s += std::string{char(5), 0};
    if (forge) s += std::string{char(3), char(1), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    all(n);
    s += std::string{char(6), 0};
    all(masked_upto);
    s += std::string{char(7), 0};
    all(masked_upto);
    s += std::string{char(11), 0};
    return s;
  };
  Put("secagg", "honest_n3", round(0, 1, 0, 3, 3, false));
  Put("secagg", "dropout_n4", round(1, 1, 1, 4, 3, false));
  Put("secagg", "sparse_n5", round(2, 0, 0, 5, 5, false));
  Put("secagg", "forged_masked_n3", round(0, 1, 0, 3, 3, true));
}

void Records() {
  data::Shard s;
  s.dim = 2;
  s.x = {0.5, -1.0, 2.0, 0.25, 0.0, 1.0};
  s.y = {1.0, -1.0, 1.0};
  const auto tmp = std::filesystem::temp_directory_path() / ("fedrt-make-corpus-" + std::to_string(::getpid()) + ".rec");
  if (!data::WriteRecordShard(tmp.string(), s).ok()) return;
  std::ifstream in(tmp, std::ios::binary);
  const std::string rec((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove(tmp);
  Put("record_shard", "binary_3x2", std::string(1, char(1)) + rec);  // kind 1: binary labels
  Put("record_shard", "real_3x2", std::string(1, char(0)) + rec);
  Put("record_shard", "truncated", std::string(1, char(0)) + rec.substr(0, rec.size() - 5));
  std::string huge = rec;
  for (int i = 16; i < 24; ++i) huge[i] = '\x7f';  // the count claims far more records than the file holds
  Put("record_shard", "huge_count", std::string(1, char(0)) + huge);
  Put("record_shard", "class_k3", std::string(1, char(2 | (2 << 2))) + rec);  // kind 2, K = 3: -1 is no class
}

void Bundles() {
  problems::ArrayBundle b("corpus");
  (void)b.add(problems::NdArray{"gamma", {}, {0.95}, 0});
  (void)b.add(problems::NdArray{"phi", {2, 3}, {0.1, 0.2, 0.3, -1, 1e-300, 2.5e10}, 0});
  (void)b.add(problems::NdArray{"v", {3}, {1, 2, 3}, 0});
  Put("array_bundle", "three_arrays", b.text());
  Put("array_bundle", "comments", "# a comment\ngamma 0\n0.5\nm 2 2 2\n1 2\n3 4\n");
  Put("array_bundle", "short_values", "m 2 2 2\n1 2 3\n");
  Put("array_bundle", "duplicate", "a 1 1\n1\na 1 1\n2\n");
  Put("array_bundle", "huge_shape", "a 2 4294967295 4294967295\n1\n");
}

// The gateway link (tests/fuzz/gateway_link_fuzz.cc: FedAvg, 4 agents, d = 8):
// a partial of agents 0 and 1 in both modes, a masked sum, a basis, a verdict.
void GatewayLink() {
  auto rec = [](const wire::GatewayEnvelope& ge) { const std::string s = ge.SerializeAsString(); return Len16(s) + s; };
  Partial p;
  p.id = RoundId{0, 0, 0};
  p.members = {0, 1};
  p.reports.resize(2);
  p.samples = {4, 4};
  p.bits_up = 1024;
  p.sums.push_back(PartialSum{8, {0.5, -0.25, 1e-3, 0, 2, -2, 0.125, 3, 0, 0, 1e-20, 0, 0, 0, 0, 0}});
  wire::GatewayEnvelope raw;
  wire::Encode(p, raw.mutable_partial());
  Put("gateway_link", "partial_raw", std::string(1, '\0') + rec(raw));
  Partial q = p;
  q.sums = {PartialSum{8, {}}};  // the core's sum is zero: the integers carry the round
  q.integer_sums = {0, 255, 510, 3, 100, 200, 7, 9};
  wire::GatewayEnvelope integer;
  wire::Encode(q, integer.mutable_partial());
  Put("gateway_link", "partial_integer", std::string(1, '\1') + rec(integer));
  Partial r = p;
  r.members = {2, 3};
  wire::GatewayEnvelope both;
  wire::Encode(r, both.mutable_partial());
  Put("gateway_link", "two_partials_closing", std::string(1, '\0') + rec(raw) + rec(both) + rec(raw));
  MaskedSum m;
  m.members = {0};
  m.reports.resize(1);
  m.sum = {1, 2, 3, 4, 5, 6, 7, 8};
  wire::GatewayEnvelope ms;
  wire::Encode(m, ms.mutable_masked_sum());
  RoundBasis b;
  b.state.assign(8, 0.25);
  b.down_delta.resize(1);
  b.deadline_ms = 500;
  wire::GatewayEnvelope gr;
  wire::Encode(b, gr.mutable_round());
  RoundVerdict v;
  v.included = {0, 1};
  wire::GatewayEnvelope res;
  wire::Encode(v, res.mutable_result());
  Put("gateway_link", "basis_masked_verdict", std::string(1, '\0') + rec(gr) + rec(ms) + rec(res));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_corpus <corpus dir>\n");
    return 2;
  }
  g_root = argv[1];
  Wire();
  Chunks();
  SecAgg();
  Records();
  Bundles();
  GatewayLink();
  std::printf("corpora written under %s\n", argv[1]);
  return 0;
}
