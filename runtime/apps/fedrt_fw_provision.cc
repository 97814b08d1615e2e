// fedrt-fw-provision: writes the problem image of agent c for the firmware
// (runtime/include/fedrt/fw/problem_image.h, fedrt/fw/provision.h): the
// experiment's problem built exactly as the coordinator and every device
// build it (config::MakeTask, config::BuildInstance), agent c's part in
// float, and the problem's fingerprint. The firmware maps the image from its
// data partition (platform/mps2/qemu-run.sh --data) or fedrt-fw-host reads it
// (--problem). TD(0) (garnet, file), least squares, logistic regression and
// Gaussian mixtures; the task itself comes from the coordinator.

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "fedrt/config/experiment.h"
#include "fedrt/task/names.h"
#include "fedrt/config/class_count.h"
#include "fedrt/config/task_builder.h"
#include "fedrt/fw/problem_image.h"
#include "fedrt/cli/parse.h"
#include "fedrt/fw/provision.h"

using namespace fedrt;

namespace {
// 2: the experiment file or a flag does not do; 1: the image was not written (docs/cli.md, "Exit codes").
int Fail(const std::string& what, int rc = cli::kUsageError) {
  std::fprintf(stderr, "fedrt-fw-provision: error: %s\n", what.c_str());
  return rc;
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fedrt-fw-provision: the problem image (local data) of one firmware device"};
  std::string config_file, out;
  int agents = 0;
  long index = -1;
  app.add_option("--config", config_file, "TOML experiment file (the same file as the coordinator)")->required();
  app.add_option("--agents", agents, "number of agents N (overrides problem.agents, as for the coordinator)");
  app.add_option("--index", index, "agent index c the coordinator assigns to this device (its registry line)")
      ->required();
  app.add_option("--out", out, "output file (problem image)")->required();
  if (int rc = 0; !cli::Parse(app, argc, argv, &rc)) return rc;

  config::ExperimentConfig cfg;
  Status st = config::LoadExperimentToml(config_file, cfg);
  if (!st.ok()) return Fail(st.message());
  if (app.count("--agents")) {
    cfg.garnet.agents = agents;
    cfg.agents_set = true;
  }
  auto counted = config::CountClasses(cfg, true);  // softmax without model.classes: K from the shards' labels
  if (!counted.ok()) return Fail(counted.status().message());
  if (!counted->empty()) std::fprintf(stderr, "fedrt-fw-provision: %s\n", counted->c_str());
  st = config::Validate(cfg);
  if (!st.ok()) return Fail(st.message());
  auto task = config::MakeTask(cfg);
  if (!task.ok()) return Fail(task.status().message());
  auto inst = config::BuildInstance(cfg);
  if (!inst.ok()) return Fail(inst.status().message());
  if (index < 0 || index >= static_cast<long>((*inst)->agents()))
    return Fail("--index " + std::to_string(index) + " is outside 0.." + std::to_string((*inst)->agents() - 1));
  auto img = fw::MakeProblemImage(**inst, static_cast<uint32_t>(index));
  if (!img.ok()) return Fail(img.status().message());
  std::ofstream f(out, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(img->data()), static_cast<std::streamsize>(img->size()));
  if (!f) return Fail("cannot write '" + out + "'", cli::kRunFailed);
  fw::ProblemImageHeader h;
  std::memcpy(&h, img->data(), sizeof h);
  std::fprintf(stderr,
               "fedrt-fw-provision: %s: agent %ld, %s, d=%u, %u rows, %u bytes, problem %016llx\n", out.c_str(), index,
               task::ProblemKindName(static_cast<task::ProblemKind>(h.kind)), h.dim, h.rows, h.total_bytes,
               static_cast<unsigned long long>(h.problem_fingerprint));
  return 0;
}
