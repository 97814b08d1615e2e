// fedrt-data: prepares devices' own data (docs/data.md, "Splitting"):
//   split    one CSV into per-device shards (Dirichlet over labels, or IID)
//            and an optional held-out test file;
//   convert  a CSV shard into the binary record format.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "fedrt/data/shard.h"
#include "fedrt/cli/parse.h"
#include "fedrt/data/split.h"

namespace {

using fedrt::Status;
namespace data = fedrt::data;

int Fail(const Status& st, int rc = fedrt::cli::kRunFailed) {
  std::fprintf(stderr, "fedrt-data: error: %s\n", st.message());
  return rc;
}

// A missing --input is a usage error (2, docs/cli.md, "Exit codes"); what is in it, the work's.
bool Missing(const std::string& input, int* rc) {
  std::error_code ec;
  if (std::filesystem::exists(input, ec)) return false;
  *rc = Fail(Status(fedrt::StatusCode::kNotFound, "--input: '" + input + "' not found"), fedrt::cli::kUsageError);
  return true;
}

struct SplitFlags {
  std::string input, label = "label", out, format = "csv";
  uint32_t devices = 10;
  double alpha = 0.3, test_fraction = 0.0;
  bool iid = false;
  uint64_t min_examples = 1, seed = 1;
};

int Split(const SplitFlags& f) {
  if (int rc = 0; Missing(f.input, &rc)) return rc;
  auto all = data::ReadCsvShard(f.input, f.label, data::LabelKind::kReal);
  if (!all.ok()) return Fail(all.status());
  // The held-out test rows first (a uniform draw), then the devices' split of the rest.
  std::vector<uint64_t> order(all->count());
  for (uint64_t j = 0; j < order.size(); ++j) order[j] = j;
  std::mt19937_64 rng(f.seed ^ 0x7e57ull);
  std::shuffle(order.begin(), order.end(), rng);
  const uint64_t n_test = static_cast<uint64_t>(f.test_fraction * static_cast<double>(order.size()) + 0.5);
  std::vector<uint64_t> test(order.begin(), order.begin() + static_cast<long>(n_test));
  std::vector<uint64_t> train(order.begin() + static_cast<long>(n_test), order.end());
  std::sort(test.begin(), test.end());
  std::sort(train.begin(), train.end());
  const data::Shard pool = data::SubShard(*all, train);
  auto parts = f.iid ? data::UniformSplit(pool.count(), f.devices, f.seed)
                     : data::DirichletSplit(pool.y, f.devices, f.alpha, f.min_examples, f.seed);
  if (!parts.ok()) return Fail(parts.status());
  std::error_code ec;
  std::filesystem::create_directories(f.out, ec);
  if (ec) return Fail(Status(fedrt::StatusCode::kNotFound, fmt::format("{}: {}", f.out, ec.message())));
  const bool rec = f.format == "records";
  std::map<double, int> classes;
  for (double y : pool.y) classes[y] = 0;
  std::printf("device  examples  per label (%s)\n", fmt::format("{}", fmt::join([&] {
                std::vector<std::string> v;
                for (auto& [y, n] : classes) v.push_back(fmt::format("{}", y));
                return v;
              }(), " ")).c_str());
  for (uint32_t i = 0; i < f.devices; ++i) {
    const data::Shard s = data::SubShard(pool, (*parts)[i]);
    const std::string path = (std::filesystem::path(f.out) / fmt::format("device-{}.{}", i, rec ? "rec" : "csv")).string();
    Status st = rec ? data::WriteRecordShard(path, s) : data::WriteCsvShard(path, s, f.label);
    if (!st.ok()) return Fail(st);
    std::map<double, int> h = classes;
    for (double y : s.y) ++h[y];
    std::string row;
    for (auto& [y, n] : h) row += fmt::format(" {}", n);
    std::printf("%6u  %8llu %s\n", i, static_cast<unsigned long long>(s.count()), row.c_str());
  }
  if (n_test > 0) {
    const std::string path = (std::filesystem::path(f.out) / "test.csv").string();
    Status st = data::WriteCsvShard(path, data::SubShard(*all, test), f.label);
    if (!st.ok()) return Fail(st);
    std::printf("test    %8llu  %s\n", static_cast<unsigned long long>(n_test), path.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fedrt-data: per-device shards of a data set (docs/data.md)"};
  app.require_subcommand(1);
  SplitFlags sf;
  CLI::App* split = app.add_subcommand("split", "split one CSV (header row, a label column) into device-{id} shards");
  split->add_option("--input", sf.input, "the data set: CSV with a header row")->required();
  split->add_option("--label", sf.label, "the label column")->capture_default_str();
  split->add_option("--devices", sf.devices, "N: shards device-0 .. device-(N-1)")->capture_default_str();
  split->add_option("--alpha", sf.alpha, "Dirichlet concentration over labels (small = each device sees few labels)")
      ->capture_default_str();
  split->add_flag("--iid", sf.iid, "uniform split instead of Dirichlet over labels");
  split->add_option("--min-examples", sf.min_examples, "redraw until every device holds at least this many")
      ->capture_default_str();
  split->add_option("--test-fraction", sf.test_fraction, "share of the examples held out in OUT/test.csv")
      ->check(CLI::Range(0.0, 0.9))->capture_default_str();
  split->add_option("--seed", sf.seed, "seed of the split")->capture_default_str();
  split->add_option("--format", sf.format, "shard format")->check(CLI::IsMember({"csv", "records"}))->capture_default_str();
  split->add_option("--out", sf.out, "output directory")->required();
  std::string in, out, label = "label";
  CLI::App* convert = app.add_subcommand("convert", "a CSV shard to the binary record format");
  convert->add_option("--input", in, "CSV shard")->required();
  convert->add_option("--label", label, "the label column")->capture_default_str();
  convert->add_option("--out", out, "record file to write")->required();
  if (int rc = 0; !fedrt::cli::Parse(app, argc, argv, &rc)) return rc;
  if (*split) return Split(sf);
  if (int rc = 0; Missing(in, &rc)) return rc;
  auto s = data::ReadCsvShard(in, label, data::LabelKind::kReal);
  if (!s.ok()) return Fail(s.status());
  Status st = data::WriteRecordShard(out, *s);
  if (!st.ok()) return Fail(st);
  std::printf("%s: %llu records of %u features + label\n", out.c_str(), static_cast<unsigned long long>(s->count()), s->dim);
  return 0;
}
