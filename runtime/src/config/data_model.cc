// [data] and [model] of an experiment file (docs/data.md): which model the
// agents train and where each agent's examples come from.
#include <cmath>
#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "fedrt/config/experiment.h"
#include "fedrt/data/shard.h"
#include "table_reader.h"

namespace fedrt::config {
namespace {

// An array of numbers (integers or floats) under `key`, if present.
Status ReadNumbers(const toml::table& t, const char* key, const std::string& path, std::vector<double>& out) {
  const toml::node* n = t.get(key);
  if (n == nullptr) return Status::Ok();
  const toml::array* arr = n->as_array();
  if (arr == nullptr) return Status::Invalid(fmt::format("{}:{}: 'model.{}' must be an array of numbers", path, n->source().begin.line, key));
  out.clear();
  for (const auto& e : *arr) {
    auto v = e.value<double>();
    if (!v || !std::isfinite(*v))
      return Status::Invalid(fmt::format("{}:{}: 'model.{}' element {} is not a finite number", path, e.source().begin.line, key,
                             out.size() + 1));
    out.push_back(*v);
  }
  return Status::Ok();
}

std::string Resolve(const std::string& base, const std::string& p) {
  if (p.empty() || base.empty() || std::filesystem::path(p).is_absolute()) return p;
  return (std::filesystem::path(base) / p).string();
}

// [data] coordinator_reads_shards = false and [model] features: what the
// coordinator needs to run without the devices' shards (docs/data.md).
Status CheckShardsAtCoordinator(const toml::table& model, const std::string& path, const ExperimentConfig& cfg) {
  const DataSettings& d = cfg.data;
  const bool has_features = model.contains("features");
  if (d.coordinator_reads_shards) {
    if (has_features)
      return Status::Invalid(fmt::format("{}: model.features is for [data] coordinator_reads_shards = false (otherwise the "
                             "dimension comes from the shards)", path));
    return Status::Ok();
  }
  if (!d.own())
    return Status::Invalid(fmt::format("{}: data.coordinator_reads_shards = false needs the devices' own data (data.format = "
                           "\"csv\" or \"records\"); a coordinator that does not generate a generated problem's "
                           "data takes problem.coordinator_generates = false", path));
  if (!cfg.agents_set)
    return Status::Invalid(fmt::format("{}: data.coordinator_reads_shards = false: the coordinator does not count the shards, "
                           "set [problem] agents = N (the number of devices)", path));
  if (d.model == "td0")
    return Status::Invalid(fmt::format("{}: data.coordinator_reads_shards = false is not available for td0: its initial iterate "
                           "theta* + (1, ..., 1) needs every agent's transitions", path));
  if (d.model == "user") {
    if (has_features) return Status::Invalid(fmt::format("{}: model.features: a user model's size is model.dim", path));
    return Status::Ok();
  }
  if (d.model == "gmm") {  // no data at the coordinator: no k-means++ seeding, and p is not in any header
    if (!has_features || d.features <= 0 || d.features > 1024)
      return Status::Invalid(fmt::format("{}: data.coordinator_reads_shards = false with model.kind = \"gmm\": set [model] "
                             "features = p (the shards' columns, 1 to 1024): the coordinator reads no shard to learn it",
                             path));
    if (d.user_init.empty())
      return Status::Invalid(fmt::format("{}: data.coordinator_reads_shards = false with model.kind = \"gmm\": set [model] init "
                             "(the G means, G p numbers): the default k-means++ seeding needs every agent's points",
                             path));
    if (d.user_init.size() != static_cast<size_t>(d.components * d.features))
      return Status::Invalid(fmt::format("{}: model.init has {} numbers, G p = {} x {} = {} (the G means, component-major)", path,
                             d.user_init.size(), d.components, d.features, d.components * d.features));
    return Status::Ok();
  }
  if (has_features && (d.features <= 0 || d.features > static_cast<long>(task::kMaxLinuxDim)))
    return Status::Invalid(fmt::format("{}: model.features must be in [1, {}], got {}", path, task::kMaxLinuxDim, d.features));
  if (!has_features && d.test.empty())
    return Status::Invalid(fmt::format("{}: data.coordinator_reads_shards = false: the coordinator needs the model's dimension, "
                           "set [model] features = p (feature columns per example) or give a data.test file", path));
  return Status::Ok();
}

// [model] kind = "gmm" (docs/data.md, "Gaussian mixtures"): on shards it
// takes components = G and optionally init (G means), no label; a generated
// mixture keeps its [gmm] table and takes neither.
Status CheckGmmModel(const toml::table& data, const toml::table& model, const std::string& path,
                     const ExperimentConfig& cfg) {
  const DataSettings& d = cfg.data;
  if (d.model != "gmm") return Status::Ok();
  if (!d.own()) {
    if (model.contains("components") || model.contains("init"))
      return Status::Invalid(fmt::format("{}: model.components and model.init are for a Gaussian mixture on the devices' shards "
                             "([data] format = \"csv\" or \"records\"); a generated mixture takes [gmm] components",
                             path));
    return Status::Ok();
  }
  if (!model.contains("components"))
    return Status::Invalid(fmt::format("{}: model.components is missing: a Gaussian mixture on shards needs the number of "
                           "components G (1 to {})", path, 64));
  if (d.components < 1 || d.components > 64)
    return Status::Invalid(fmt::format("{}: model.components must be in [1, 64], got {}", path, d.components));
  if (!d.user_init.empty() && d.user_init.size() % static_cast<size_t>(d.components) != 0)
    return Status::Invalid(fmt::format("{}: model.init has {} numbers, not a multiple of model.components = {} (the G means, "
                           "component-major: G p numbers)", path, d.user_init.size(), d.components));
  if (data.contains("label"))
    return Status::Invalid(fmt::format("{}: data.label: a Gaussian mixture has no label, every CSV column is a feature (remove "
                           "data.label)", path));
  return Status::Ok();
}

}  // namespace

Status ReadDataModel(const toml::table& data, const toml::table& model, const std::string& base,
                     const std::string& path, ExperimentConfig& cfg) {
  {
    TableReader r(model, "model", path);
    FEDRT_TRY(r.read("kind", cfg.data.model));
    if (model.contains("l2")) cfg.opt.l2_set = true;
    FEDRT_TRY(r.read("l2", cfg.opt.l2));
    FEDRT_TRY(r.read("gamma", cfg.garnet.gamma));  // td0: the discount factor
    FEDRT_TRY(r.read("classes", cfg.data.classes));
    bool intercept = true;
    const bool has_intercept = model.contains("intercept");
    FEDRT_TRY(r.read("intercept", intercept));
    if (has_intercept) cfg.data.intercept = intercept;
    FEDRT_TRY(r.read("dim", cfg.data.user_dim));
    FEDRT_TRY(r.read("features", cfg.data.features));
    FEDRT_TRY(r.read("components", cfg.data.components));
    FEDRT_TRY(ReadNumbers(model, "init", path, cfg.data.user_init));
    r.known("init");
    FEDRT_TRY(r.check_unknown());
    const std::string& k = cfg.data.model;
    const bool user = k == "user";
    if (model.contains("dim") != user || (model.contains("init") && !user && k != "gmm"))
      return Status::Invalid(fmt::format("{}: model.dim {}", path,
                             user ? "is missing: a user model needs its parameter count d"
                                  : "and model.init are for [model] kind = \"user\" (init: also \"gmm\") only"));
    if (model.contains("components") && k != "gmm")
      return Status::Invalid(fmt::format("{}: model.components is a setting of [model] kind = \"gmm\" (the number of mixture "
                             "components G), not of '{}'", path, k));
    if (user && (cfg.data.user_dim <= 0 || cfg.data.user_dim > task::kMaxLinuxDim))
      return Status::Invalid(fmt::format("{}: model.dim must be in [1, {}], got {}", path, task::kMaxLinuxDim, cfg.data.user_dim));
    if (user && !cfg.data.user_init.empty() && cfg.data.user_init.size() != static_cast<size_t>(cfg.data.user_dim))
      return Status::Invalid(fmt::format("{}: model.init has {} numbers, model.dim is {}", path, cfg.data.user_init.size(),
                             cfg.data.user_dim));
    if (k == "least_squares") cfg.problem = task::ProblemKind::kLeastSquares;
    else if (k == "logistic") cfg.problem = task::ProblemKind::kLogistic;
    else if (k == "softmax") cfg.problem = task::ProblemKind::kSoftmax;
    else if (k == "td0") cfg.problem = task::ProblemKind::kGarnet;
    else if (k == "gmm") cfg.problem = task::ProblemKind::kGmm;
    else if (k == "user") cfg.problem = task::ProblemKind::kUser, cfg.garnet.dim = cfg.data.user_dim;
    else if (!k.empty())
      return Status::Invalid(fmt::format("{}: model.kind '{}' unknown (least_squares, logistic, softmax, td0, gmm or user)", path, k));
  }
  TableReader r(data, "data", path);
  FEDRT_TRY(r.read("format", cfg.data.format));
  FEDRT_TRY(r.read("train", cfg.data.train));
  FEDRT_TRY(r.read("test", cfg.data.test));
  FEDRT_TRY(r.read("label", cfg.data.label));
  FEDRT_TRY(r.read("coordinator_reads_shards", cfg.data.coordinator_reads_shards));
  FEDRT_TRY(r.check_unknown());
  cfg.data.train = Resolve(base, cfg.data.train);
  cfg.data.test = Resolve(base, cfg.data.test);
  if (cfg.data.format != "generated" && cfg.data.format != "csv" && cfg.data.format != "records")
    return Status::Invalid(fmt::format("{}: data.format '{}' unknown (csv, records or generated)", path, cfg.data.format));
  if (cfg.data.model == "softmax") {
    if (model.contains("classes") && (cfg.data.classes < 2 || cfg.data.classes > 1024))
      return Status::Invalid(fmt::format("{}: model.classes = {}: softmax regression needs the number of classes K, 2 to 1024 "
                             "(labels are 0..K-1)", path, cfg.data.classes));
    if (!(cfg.opt.l2 > 0))
      return Status::Invalid(fmt::format("{}: model.l2 = {}: softmax regression needs l2 > 0 (without it the weights are unbounded "
                             "and x_star does not exist)", path, cfg.opt.l2));
    if (!cfg.data.own())
      return Status::Invalid(fmt::format("{}: model.kind = \"softmax\" trains on shards: set [data] format = \"csv\" or \"records\"", path));
  } else if (cfg.data.classes != 0) {
    return Status::Invalid(fmt::format("{}: model.classes is a setting of model.kind = \"softmax\"", path));
  } else if (cfg.data.intercept) {
    if (cfg.data.model != "least_squares" && cfg.data.model != "logistic")
      return Status::Invalid(fmt::format("{}: model.intercept is a setting of least_squares, logistic and softmax models", path));
    if (!cfg.data.own())
      return Status::Invalid(fmt::format("{}: model.intercept adds a constant feature to the examples of [data] shards: set "
                             "data.format = \"csv\" or \"records\"", path));
  }
  FEDRT_TRY(CheckGmmModel(data, model, path, cfg));
  FEDRT_TRY(CheckShardsAtCoordinator(model, path, cfg));
  if (!cfg.data.own()) {
    if (cfg.data.model == "user")
      return Status::Invalid(fmt::format("{}: [model] kind = \"user\" trains on the devices' own data: set data.format and data.train", path));
    if (!cfg.data.train.empty()) return Status::Invalid(fmt::format("{}: data.train needs data.format = \"csv\" or \"records\"", path));
    return Status::Ok();
  }
  if (cfg.data.model != "least_squares" && cfg.data.model != "logistic" && cfg.data.model != "softmax" &&
      cfg.data.model != "td0" && cfg.data.model != "gmm" && cfg.data.model != "user")
    return Status::Invalid(fmt::format(
        "{}: data.format = \"{}\" needs [model] kind = \"least_squares\", \"logistic\", \"softmax\", \"td0\", "
        "\"gmm\" or \"user\" (got '{}')",
        path, cfg.data.format, cfg.data.model));
  if (cfg.data.model == "user" && !cfg.data.test.empty())
    return Status::Invalid(fmt::format("{}: data.test: the coordinator cannot score a user model (it has no code for it)", path));
  if (cfg.data.model == "td0") {  // transitions (phi(s), reward, phi(s')) from files: no array bundle
    cfg.problem = task::ProblemKind::kBundle;
    if (!cfg.data.test.empty())
      return Status::Invalid(fmt::format("{}: data.test is scored by least_squares, logistic and softmax models, not by td0", path));
    if (cfg.noise_free) return Status::Invalid(fmt::format("{}: problem.noise_free needs a generated TD(0) problem, not transitions", path));
  }
  if (cfg.data.train.empty()) return Status::Invalid(fmt::format("{}: data.train is missing (e.g. \"shards/device-{{id}}.csv\")", path));
  if (!cfg.agents_set) {  // the shards present, numbered from 0
    uint32_t n = 0;
    std::error_code ec;
    while (n < (1u << 20) && std::filesystem::exists(data::ShardPath(cfg.data.train, n), ec)) ++n;
    if (n == 0)
      return Status::Invalid(fmt::format("{}: data.train: no shard '{}' (to count the agents, the coordinator and the simulator "
                             "read every shard; a coordinator without the devices' data takes [data] "
                             "coordinator_reads_shards = false and [problem] agents = N)",
                             path, data::ShardPath(cfg.data.train, 0)));
    cfg.garnet.agents = n;
  }
  if (cfg.garnet.agents > 1 && cfg.data.train.find("{id}") == std::string::npos)
    return Status::Invalid(fmt::format("{}: data.train '{}' has no {{id}}: every agent would read the same file", path, cfg.data.train));
  return Status::Ok();
}

}  // namespace fedrt::config
