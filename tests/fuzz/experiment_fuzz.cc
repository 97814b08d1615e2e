// libFuzzer target: the experiment loader (runtime/src/config/experiment.cc:
// toml++'s parser, then LoadExperimentTable and its validation), which reads
// the operator's experiment file and, through the coordinator, decides what
// every device is sent. Input: the file's text, parsed in memory
// (toml::parse, as ParseExperimentFile does for a file), then validated and
// made into the task (config::Validate, MakeTask) as the drivers do; relative
// paths in it resolve against a directory that does not exist. Properties:
// - no out-of-bounds access or undefined behaviour (ASan, UBSan), and no
//   exception other than toml++'s parse_error (which ParseExperimentFile
//   turns into a Status) escapes;
// - every rejection (parse, LoadExperimentTable, Validate, MakeTask)
//   carries a non-empty message.
#include <cstdint>
#include <string_view>

#include <toml++/toml.h>

#include "fuzz_util.h"
#include "fedrt/config/experiment_toml.h"
#include "fedrt/config/task_builder.h"

using namespace fedrt;
using fedrt::fuzz::RequireMessage;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  toml::table root;
  try {
    root = toml::parse(text, std::string_view("fuzz.toml"));
  } catch (const toml::parse_error& err) {
    RequireMessage(std::string(err.description()).c_str(), "toml::parse");
    return 0;
  }
  config::ExperimentConfig cfg;
  Status st = config::LoadExperimentTable(root, "fuzz.toml", "fedrt-fuzz-no-such-dir", cfg);
  if (!st.ok()) {
    RequireMessage(st.message(), "LoadExperimentTable");
    return 0;
  }
  // What the drivers do next with a file that loads: validate it, make the task.
  st = config::Validate(cfg);
  if (!st.ok()) {
    RequireMessage(st.message(), "Validate");
    return 0;
  }
  auto task = config::MakeTask(cfg);
  if (!task.ok()) RequireMessage(task.status().message(), "MakeTask");
  return 0;
}
