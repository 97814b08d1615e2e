// libFuzzer target: chunked uploads at the server session
// (runtime/src/protocol/server_upload.cc, docs/architecture.md "Chunked
// transfer"): Update headers and Chunk messages, decoded by the wire codec
// (runtime/src/wire/protobuf_codec.cc) and taken by ServerSession::on_update /
// on_chunk of an open round of FedAvg on least squares (2 agents, d = 8).
// Input: one byte choosing the task (bit 0: 4-level dithering, coded
// payloads decoded once whole; else raw float64 summed chunk by chunk;
// bit 1: Fed-RR, two segments), then records [agent][length: 2 bytes,
// big-endian][Envelope bytes]. Properties:
// - no out-of-bounds access or undefined behaviour (ASan, UBSan);
// - every refusal (wire decoder or session) carries a non-empty reason;
// - an update completed by its chunks equals the same update sent whole:
//   a twin session that gets the bytes inline accepts it (or drops it as
//   longer than robustness.max_update_norm, as the chunked one did), and when the
//   round closes both sessions hold the same state, bit for bit.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "fedrt/protocol/server_session.h"
#include "fedrt/wire/protobuf_codec.h"

using namespace fedrt;
using namespace fedrt::protocol;
using fedrt::fuzz::Require;
using fedrt::fuzz::RequireMessage;

namespace {

constexpr uint32_t kAgents = 2;
constexpr uint32_t kDim = 8;

bool Init(ServerSession& s, uint8_t mode) {
  ServerOptions so;
  so.task.problem.kind = task::ProblemKind::kLeastSquares;
  so.task.problem.agents = kAgents;
  so.task.problem.dim = kDim;
  so.task.num_algorithms = 1;
  so.task.algorithms[0] = task::AlgorithmChoice{task::AlgorithmKind::kFedAvg, (mode & 2) != 0};
  so.task.hyper.step = 0.05;
  so.task.hyper.local_steps = 5;
  so.task.hyper.batch = 2;
  so.task.rounds = 4;
  if (mode & 1) {
    so.task.compression.quantizer.kind = compression::QuantizerKind::kDither;
    so.task.compression.quantizer.levels = 4;
  }
  static const std::vector<double> zero(kDim, 0.0);
  so.initial = View<double>{zero.data(), kDim};
  if (!s.init(so).ok()) return false;
  for (uint32_t c = 0; c < kAgents; ++c) s.set_connected(c, true, 0);
  return s.open_round(0, 0).ok();
}

bool SameBits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  ServerSession chunked, whole;
  Require(Init(chunked, mode) && Init(whole, mode), "the session's task is refused");
  Update header[kAgents];          // the last header each agent's transfer was taken with
  std::string taken[kAgents];      // the bytes of its chunks taken so far, segments in order
  size_t i = 1;
  while (i + 3 <= size) {
    const uint32_t agent = data[i] % kAgents;
    const size_t len = std::min<size_t>(size - i - 3, size_t(data[i + 1]) << 8 | data[i + 2]);
    const std::string body(reinterpret_cast<const char*>(data + i + 3), len);
    i += 3 + len;
    wire::Envelope env;
    wire::WireError err;
    wire::Inbound in;
    if (!wire::ParseEnvelope(body, env, err) || !in.decode(env, err)) {
      RequireMessage(err.message.c_str(), "wire decoder");
      continue;
    }
    Verdict v;
    if (in.kind() == MessageKind::kUpdate) {
      const Update& u = in.update();
      v = chunked.on_update(agent, u, 0);
      if (!u.chunked) {  // an inline update: the twin gets it too, with the same verdict
        const Verdict w = whole.on_update(agent, u, 0);
        Require(w.ok() == v.ok(), "an inline update's verdict differs between twin sessions", v.why + " / " + w.why);
      } else if (v.ok()) {
        header[agent] = u;
      }
    } else if (in.kind() == MessageKind::kChunk) {
      const Chunk& c = in.chunk();
      v = chunked.on_chunk(agent, c, 0);
      // Its last chunk completes the update even when the update is then
      // dropped as too long: the twin must drop it the same way.
      const bool dropped = v.refusal == Refusal::kOverNorm;
      if (v.ok() || dropped) taken[agent].append(reinterpret_cast<const char*>(c.data.data), c.data.size);
      if ((v.ok() && v.whole) || dropped) {  // the same update, inline, to the twin
        Update u = header[agent];
        u.chunked = false;
        uint64_t at = 0;
        for (uint32_t k = 0; k < u.segments; ++k) {
          Require(at + u.payload_bytes[k] <= taken[agent].size(), "a whole update with fewer bytes than its header");
          u.payload[k] = View<uint8_t>{reinterpret_cast<const uint8_t*>(taken[agent].data()) + at,
                                       static_cast<uint32_t>(u.payload_bytes[k])};
          at += u.payload_bytes[k];
        }
        const Verdict w = whole.on_update(agent, u, 0);
        Require(w.refusal == v.refusal, "the update completed by chunks gets another verdict whole", v.why + " / " + w.why);
      }
    } else {
      continue;
    }
    if (!v.ok()) RequireMessage(v.why.c_str(), "ServerSession");
    if (v.whole || chunked.upload_received(agent) == 0) taken[agent].clear();
  }
  Require(chunked.round_closed() == whole.round_closed(), "twin sessions disagree on the round's close");
  if (chunked.round_closed()) {
    std::vector<double> a, b;
    chunked.export_state(a);
    whole.export_state(b);
    Require(SameBits(a, b), "chunked and whole updates give different states");
  }
  return 0;
}
