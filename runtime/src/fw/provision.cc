#include "fedrt/fw/provision.h"

#include <cstring>
#include <string>

#include "fedrt/task/fingerprint.h"
#include "fedrt/core/arena.h"
#include "fedrt/fw/problem_image.h"
#include "fedrt/problems/td_oracle.h"

namespace fedrt::fw {

namespace {

// Header + zeroed tables of the given sizes; the caller fills the tables.
std::vector<uint8_t> Blank(ProblemImageHeader& h) {
  h.magic = kProblemImageMagic;
  h.version = kProblemImageVersion;
  h.total_bytes = static_cast<uint32_t>(ProblemImageBytes(h.kind, h.rows, h.dim, h.aux));
  return std::vector<uint8_t>(h.total_bytes, 0);
}

void PutFloats(std::vector<uint8_t>& img, size_t offset, const double* v, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const float f = static_cast<float>(v[i]);
    std::memcpy(img.data() + offset + sizeof(float) * i, &f, sizeof f);
  }
}

Result<std::vector<uint8_t>> Seal(ProblemImageHeader& h, std::vector<uint8_t> img) {
  h.crc32 = Crc32(img.data() + sizeof h, img.size() - sizeof h);
  std::memcpy(img.data(), &h, sizeof h);
  // Round trip through the firmware's own validation (8-aligned copy).
  std::vector<uint64_t> aligned((img.size() + 7) / 8);
  std::memcpy(aligned.data(), img.data(), img.size());
  auto v = ParseProblemImage(reinterpret_cast<const uint8_t*>(aligned.data()), img.size());
  if (!v.ok()) return Status(v.status().code(), std::string("the image fails validation: ") + v.status().message());
  return img;
}

}  // namespace

Result<std::vector<uint8_t>> MakeProblemImage(const problems::Instance& instance, uint32_t agent) {
  const task::ProblemSpec& spec = instance.problem();
  if (agent >= instance.agents())
    return Status(StatusCode::kOutOfRange,
                  "agent " + std::to_string(agent) + " outside 0.." + std::to_string(instance.agents() - 1));
  ProblemImageHeader h{};
  h.problem_fingerprint = task::ProblemFingerprint(spec);
  h.agent_index = agent;
  h.kind = static_cast<uint32_t>(spec.kind);
  const int c = static_cast<int>(agent);
  if (const problems::TdProblem* td = instance.td()) {
    if (spec.garnet.noise_free)
      return Status::FailedPrecondition("the firmware samples TD(0) transitions; the task is noise_free");
    const size_t n = static_cast<size_t>(td->n_states);
    std::vector<uint8_t> mem(sizeof(double) * n * td->dim + n * n * (sizeof(problems::TdTransition<float>) + 24) +
                             8 * Arena::kAlignment);
    Arena arena(mem.data(), mem.size());
    const std::vector<double> joint = td->joint_law(c);
    auto o = problems::TdOracle<float>::create(arena, td->dim, td->n_states, td->gamma, td->phi.data(),
                                               td->reward[c].data(), joint.data());
    if (!o.ok()) return o.status();
    h.dim = static_cast<uint32_t>(td->dim);
    h.rows = static_cast<uint32_t>(td->n_states);
    h.aux = o->atoms();
    h.gamma = o->gamma();
    std::vector<uint8_t> img = Blank(h);
    std::memcpy(img.data() + ProblemImageTableOffset(), o->features(), sizeof(float) * n * td->dim);
    std::memcpy(img.data() + ProblemImageSecondOffset(h.rows, h.dim), o->alias_table(),
                sizeof(problems::TdTransition<float>) * h.aux);
    return Seal(h, std::move(img));
  }
  if (const problems::FedDataset* fed = instance.fed()) {
    const auto& x = fed->x[c];  // n_c x d, row-major
    const auto& y = fed->y[c];
    h.dim = static_cast<uint32_t>(fed->dim);
    h.rows = static_cast<uint32_t>(x.rows());
    std::vector<uint8_t> img = Blank(h);
    PutFloats(img, ProblemImageTableOffset(), x.data(), static_cast<size_t>(x.size()));
    PutFloats(img, ProblemImageSecondOffset(h.rows, h.dim), y.data(), static_cast<size_t>(y.size()));
    return Seal(h, std::move(img));
  }
  if (const problems::GmmData* gmm = instance.gmm()) {
    h.dim = static_cast<uint32_t>(gmm->p);
    h.rows = gmm->m;
    h.aux = static_cast<uint32_t>(gmm->G);
    std::vector<uint8_t> img = Blank(h);
    PutFloats(img, ProblemImageTableOffset(), gmm->points[agent].data(), gmm->points[agent].size());
    return Seal(h, std::move(img));
  }
  return Status::Internal("the instance holds no problem");
}

}  // namespace fedrt::fw
