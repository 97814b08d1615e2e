#include "fedrt/sim/rank_exchange.h"

#include <cstring>

#include <fmt/format.h>

#include "fedrt/config/experiment.h"
#include "fedrt/task/fingerprint.h"
#include "fedrt/config/task_builder.h"

namespace fedrt::sim {

Result<uint64_t> ExperimentFingerprint(const config::ExperimentConfig& cfg) {
  auto task = config::MakeTask(cfg);
  if (!task.ok()) return task.status();
  task::Fnv1a h;
  h.u64(task::TaskFingerprint(*task));
  h.u64(task->problem.agents);
  h.f64(cfg.secagg.dropout);
  h.u64(cfg.noise_free ? 1 : 0);
  return h.value();
}

AgentRange RangeOf(uint32_t agents, uint32_t ranks, uint32_t rank) {
  const uint32_t base = agents / ranks, extra = agents % ranks;
  AgentRange r;
  r.lo = rank * base + (rank < extra ? rank : extra);
  r.hi = r.lo + base + (rank < extra ? 1 : 0);
  return r;
}

namespace {

// Frame: kind u8 | status code u8 | value u64 | text (u32 length, bytes) | body (u64 length, bytes).
enum Kind : uint8_t { kMessages = 1, kFail = 2, kStart = 3, kDone = 4, kBuilt = 5 };
const char* KindName(uint8_t k) {
  switch (k) {
    case kMessages: return "round messages";
    case kFail: return "a failure";
    case kStart: return "the start agreement";
    case kDone: return "the end agreement";
    case kBuilt: return "the instance built";
    default: return "an unknown frame";
  }
}

template <class T>
void Put(std::vector<uint8_t>& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof v);
  std::memcpy(out.data() + at, &v, sizeof v);
}

}  // namespace

struct RankChannel::Frame {
  uint8_t kind = 0;
  StatusCode code = StatusCode::kOk;
  uint64_t value = 0;
  std::string text;
  size_t body = 0, body_size = 0;  // in the gathered bytes
};

Status RankChannel::collect(uint8_t kind, const std::vector<uint8_t>& body, uint64_t value, const Status& error,
                            std::vector<Frame>& frames, std::vector<uint8_t>& all, std::vector<size_t>& offsets) {
  if (broken()) return failure_;
  std::vector<uint8_t> mine;
  const std::string text = error.message();
  mine.reserve(32 + text.size() + body.size());
  Put<uint8_t>(mine, kind);
  Put<uint8_t>(mine, static_cast<uint8_t>(error.code()));
  Put<uint64_t>(mine, value);
  Put<uint32_t>(mine, static_cast<uint32_t>(text.size()));
  mine.insert(mine.end(), text.begin(), text.end());
  Put<uint64_t>(mine, body.size());
  mine.insert(mine.end(), body.begin(), body.end());
  Status st = ex_.allgather(mine, all, offsets);
  if (!st.ok()) {
    failure_ = st;
    return failure_;
  }
  const uint32_t k = size();
  frames.assign(k, Frame{});
  for (uint32_t r = 0; r < k; ++r) {
    const uint8_t* p = all.data() + offsets[r];
    const size_t n = offsets[r + 1] - offsets[r];
    Frame& f = frames[r];
    uint32_t text_size = 0;
    uint64_t body_size = 0;
    bool ok = n >= 14;
    if (ok) {
      f.kind = p[0];
      f.code = static_cast<StatusCode>(p[1]);
      std::memcpy(&f.value, p + 2, 8);
      std::memcpy(&text_size, p + 10, 4);
      ok = n >= 22 + static_cast<size_t>(text_size);
    }
    if (ok) {
      f.text.assign(reinterpret_cast<const char*>(p + 14), text_size);
      std::memcpy(&body_size, p + 14 + text_size, 8);
      f.body = offsets[r] + 22 + text_size;
      f.body_size = static_cast<size_t>(body_size);
      ok = body_size == n - 22 - text_size;
    }
    if (!ok) {
      failure_ = Status(StatusCode::kInternal, fmt::format("rank {} of {} sent a malformed frame of {} bytes", r, k, n));
      return failure_;
    }
  }
  for (uint32_t r = 0; r < k; ++r)
    if (frames[r].kind == kFail) {
      failure_ = Status(frames[r].code == StatusCode::kOk ? StatusCode::kUnknown : frames[r].code,
                        fmt::format("rank {} of {}: {}", r, k, frames[r].text));
      return failure_;
    }
  for (uint32_t r = 0; r < k; ++r)
    if (frames[r].kind != kind) {
      failure_ = Status(StatusCode::kInternal, fmt::format("ranks out of step: rank {} of {} sent {} while this rank sent {}",
                                                           r, k, KindName(frames[r].kind), KindName(kind)));
      return failure_;
    }
  return Status::Ok();
}

Status RankChannel::messages(const std::vector<uint8_t>& mine, uint64_t samples_mine, std::vector<uint8_t>& all,
                             std::vector<size_t>& offsets, uint64_t& samples) {
  std::vector<Frame> frames;
  std::vector<uint8_t> raw;
  std::vector<size_t> raw_offsets;
  FEDRT_TRY(collect(kMessages, mine, samples_mine, Status::Ok(), frames, raw, raw_offsets));
  size_t total = 0;
  for (const Frame& f : frames) total += f.body_size;
  all.resize(total);
  offsets.assign(frames.size() + 1, 0);
  samples = 0;
  for (size_t r = 0; r < frames.size(); ++r) {
    if (frames[r].body_size > 0) std::memcpy(all.data() + offsets[r], raw.data() + frames[r].body, frames[r].body_size);
    offsets[r + 1] = offsets[r] + frames[r].body_size;
    samples += frames[r].value;
  }
  return Status::Ok();
}

Status RankChannel::fail(const Status& error) {
  if (broken()) return failure_;
  std::vector<Frame> frames;
  std::vector<uint8_t> raw;
  std::vector<size_t> offsets;
  const Status st = collect(kFail, {}, 0, error.ok() ? Status(StatusCode::kUnknown, std::string("failed")) : error,
                            frames, raw, offsets);
  return st.ok() ? error : st;
}

Status RankChannel::agree_start(const Status& parsed, uint64_t fingerprint, const std::string& source) {
  std::vector<Frame> frames;
  std::vector<uint8_t> raw;
  std::vector<size_t> offsets;
  const std::vector<uint8_t> body(source.begin(), source.end());
  FEDRT_TRY(collect(kStart, body, fingerprint, parsed, frames, raw, offsets));
  const uint32_t k = size();
  auto source_of = [&](uint32_t r) {
    return std::string(reinterpret_cast<const char*>(raw.data() + frames[r].body), frames[r].body_size);
  };
  for (uint32_t r = 0; r < k; ++r)
    if (frames[r].code != StatusCode::kOk) {
      failure_ = Status(frames[r].code, fmt::format("rank {} of {} (experiment '{}'): {}", r, k, source_of(r), frames[r].text));
      return failure_;
    }
  for (uint32_t r = 1; r < k; ++r)
    if (frames[r].value != frames[0].value) {
      failure_ = Status(StatusCode::kFailedPrecondition,
                        fmt::format("rank {} of {} read a different experiment from '{}' than rank 0 from '{}' (task "
                                    "fingerprints {:016x} and {:016x}): every rank must run the same experiment",
                                    r, k, source_of(r), source_of(0), frames[r].value, frames[0].value));
      return failure_;
    }
  return Status::Ok();
}

Status RankChannel::built() {
  if (broken()) return failure_;
  std::vector<Frame> frames;
  std::vector<uint8_t> raw;
  std::vector<size_t> offsets;
  return collect(kBuilt, {}, 0, Status::Ok(), frames, raw, offsets);
}

Status RankChannel::agree_done(const Status& mine) {
  if (broken()) return failure_;
  if (!mine.ok()) return fail(mine);
  std::vector<Frame> frames;
  std::vector<uint8_t> raw;
  std::vector<size_t> offsets;
  return collect(kDone, {}, 0, Status::Ok(), frames, raw, offsets);
}

}  // namespace fedrt::sim
