// fedrt-fw-provision: writes the problem image of agent c for fedrt-fw
// (runtime/include/fedrt/fw/problem_image.h). It builds TdOracle<float> from
// the experiment's double problem exactly as fedrt-device builds its oracle
// (same joint law mu_c P^pi_c, same alias table construction, values cast to
// float) and stores the tables and the experiment's config fingerprint, so the
// firmware samples the same Z_{t,h}^c as the simulator's agent c.

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "fedrt/core/arena.h"
#include "fedrt/fw/problem_image.h"
#include "fedrt/net/network_config.h"
#include "fedrt/problems/td_oracle.h"
#include "fedrt/sim/experiment.h"
#include "fedrt/sim/simulator.h"

using namespace fedrt;

namespace {
int Fail(const std::string& what) {
  std::fprintf(stderr, "fedrt-fw-provision: error: %s\n", what.c_str());
  return 2;
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fedrt-fw-provision: the problem image of one firmware device"};
  std::string config, out;
  int agents = 0;
  long index = -1;
  app.add_option("--config", config, "TOML experiment file (the same file as the coordinator)")->required();
  app.add_option("--agents", agents, "number of agents N (overrides problem.agents, as for the coordinator)");
  app.add_option("--index", index, "agent index c the coordinator assigns to this device (its registry line)")
      ->required();
  app.add_option("--out", out, "output file (problem image)")->required();
  CLI11_PARSE(app, argc, argv);

  sim::ExperimentConfig cfg;
  Status st = sim::LoadExperimentToml(config, cfg);
  if (!st.ok()) return Fail(st.message());
  if (app.count("--agents")) {
    cfg.garnet.agents = agents;
    cfg.agents_set = true;
  }
  st = sim::Validate(cfg);
  if (!st.ok()) return Fail(st.message());
  if (cfg.noise_free) return Fail("the firmware runs stochastic TD(0) only; the experiment is noise_free");
  auto p = sim::BuildProblem(cfg);
  if (!p.ok()) return Fail(p.status().message());
  const problems::TdProblem& prob = *p;
  if (index < 0 || index >= prob.agents())
    return Fail("--index " + std::to_string(index) + " is outside 0.." + std::to_string(prob.agents() - 1));
  if (prob.dim > fw::kFwMaxDim)
    return Fail("dimension " + std::to_string(prob.dim) + " exceeds the firmware's " + std::to_string(fw::kFwMaxDim));
  const int c = static_cast<int>(index);

  // Same construction as fedrt-device (net/device.cc build_oracle), in float.
  const size_t n = static_cast<size_t>(prob.n_states);
  std::vector<uint8_t> mem(sizeof(double) * n * prob.dim + n * n * (sizeof(problems::TdTransition<float>) + 24) +
                           8 * Arena::kAlignment);
  Arena arena(mem.data(), mem.size());
  const std::vector<double> joint = prob.joint_law(c);
  auto o = problems::TdOracle<float>::create(arena, prob.dim, prob.n_states, prob.gamma, prob.phi.data(),
                                             prob.reward[c].data(), joint.data());
  if (!o.ok()) return Fail(o.status().message());

  fw::ProblemImageHeader h{};
  h.magic = fw::kProblemImageMagic;
  h.version = fw::kProblemImageVersion;
  h.config_fingerprint = net::ProblemFingerprint(cfg);
  h.agent_index = static_cast<uint32_t>(c);
  h.dim = static_cast<uint32_t>(prob.dim);
  h.n_states = static_cast<uint32_t>(prob.n_states);
  h.n_atoms = o->atoms();
  h.gamma = o->gamma();
  const size_t atoms_off = fw::ProblemImageAtomsOffset(h.n_states, h.dim);
  h.total_bytes = static_cast<uint32_t>(atoms_off + sizeof(problems::TdTransition<float>) * h.n_atoms);
  std::vector<uint8_t> img(h.total_bytes, 0);
  std::memcpy(img.data() + fw::ProblemImagePhiOffset(), o->features(), sizeof(float) * n * prob.dim);
  std::memcpy(img.data() + atoms_off, o->alias_table(), sizeof(problems::TdTransition<float>) * h.n_atoms);
  h.crc32 = fw::Crc32(img.data() + sizeof h, img.size() - sizeof h);
  std::memcpy(img.data(), &h, sizeof h);
  // Round trip through the firmware's own validation.
  auto view = fw::ParseProblemImage(img.data(), img.size());
  if (!view.ok()) return Fail(std::string("image fails validation: ") + view.status().message());
  std::ofstream f(out, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(img.data()), static_cast<std::streamsize>(img.size()));
  if (!f) return Fail("cannot write '" + out + "'");
  std::fprintf(stderr, "fedrt-fw-provision: %s: agent %d, d=%u, %u states, %u atoms, %u bytes, fingerprint %016llx\n",
               out.c_str(), c, h.dim, h.n_states, h.n_atoms, h.total_bytes,
               static_cast<unsigned long long>(h.config_fingerprint));
  return 0;
}
