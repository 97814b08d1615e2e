#include "fedrt/config/experiment.h"
#include "fedrt/config/experiment_toml.h"

#include <cmath>
#include <filesystem>
#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "fedrt/config/td_kernel.h"
#include "table_reader.h"

namespace fedrt::config {

using algorithms::LsaAlgorithm;

Result<std::vector<std::string>> ParseAlgorithms(const std::string& list) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string::npos) comma = list.size();
    std::string name = list.substr(pos, comma - pos);
    while (!name.empty() && name.front() == ' ') name.erase(name.begin());
    while (!name.empty() && name.back() == ' ') name.pop_back();
    if (name.empty())
      return Status(StatusCode::kInvalidArgument, fmt::format("algorithm list '{}' has an empty name", list));
    out.push_back(name);
    pos = comma + 1;
  }
  std::set<std::string> seen(out.begin(), out.end());
  if (seen.size() != out.size())
    return Status(StatusCode::kInvalidArgument, fmt::format("algorithm list '{}' names an algorithm twice", list));
  return out;
}

std::string AlgorithmList(const std::vector<std::string>& algs) {
  std::string s;
  for (const auto& a : algs) s += (s.empty() ? "" : ",") + a;
  return s;
}

std::vector<std::string> KnownAlgorithms(task::ProblemKind kind) {
  switch (kind) {
    case task::ProblemKind::kGarnet:
    case task::ProblemKind::kBundle:
      return {"fedlsa", "scafflsa", "scafflsa-prob"};
    case task::ProblemKind::kLeastSquares:
      return {"fedavg", "scaffold", "fedprox", "fedprox-exact",
              "fedavg-rr", "scaffold-rr", "fedprox-rr", "fedprox-exact-rr"};
    case task::ProblemKind::kLogistic:
    case task::ProblemKind::kSoftmax:
    case task::ProblemKind::kUser:
      return {"fedavg", "scaffold", "fedprox", "fedavg-rr", "scaffold-rr", "fedprox-rr"};
    case task::ProblemKind::kGmm:
      return {"fedem", "fedem-naive", "vr-fedem"};
  }
  return {};
}

std::vector<std::string> DefaultAlgorithms(task::ProblemKind kind) {
  switch (kind) {
    case task::ProblemKind::kGarnet:
    case task::ProblemKind::kBundle:
      return {"fedlsa", "scafflsa"};
    case task::ProblemKind::kLeastSquares:
    case task::ProblemKind::kLogistic:
    case task::ProblemKind::kSoftmax:
    case task::ProblemKind::kUser:
      return {"fedavg", "scaffold"};
    case task::ProblemKind::kGmm:
      return {"fedem", "fedem-naive"};
  }
  return {};
}

void ApplyFamilyDefaults(ExperimentConfig& config) {
  if (!config.algorithms_set) config.algorithms = DefaultAlgorithms(config.problem);
}

Result<LsaAlgorithm> LsaAlgorithmFromName(const std::string& name) {
  for (LsaAlgorithm a : {LsaAlgorithm::kFedLsa, LsaAlgorithm::kScaffLsa, LsaAlgorithm::kScaffLsaProb})
    if (name == algorithms::LsaAlgorithmName(a)) return a;
  return Status(StatusCode::kInvalidArgument, fmt::format("unknown algorithm '{}' for federated LSA", name));
}

Result<problems::Heterogeneity> ParseHeterogeneity(const std::string& s) {
  if (s == "low") return problems::Heterogeneity::kLow;
  if (s == "high") return problems::Heterogeneity::kHigh;
  return Status(StatusCode::kInvalidArgument, fmt::format("unknown heterogeneity '{}' (expected low or high)", s));
}

Result<task::ProblemKind> ParseProblemKind(const std::string& s) {
  if (s == "garnet") return task::ProblemKind::kGarnet;
  if (s == "file") return task::ProblemKind::kBundle;
  if (s == "lsq") return task::ProblemKind::kLeastSquares;
  if (s == "logistic") return task::ProblemKind::kLogistic;
  if (s == "gmm") return task::ProblemKind::kGmm;
  return Status(StatusCode::kInvalidArgument,
                fmt::format("unknown problem '{}' (expected garnet, file, lsq, logistic or gmm)", s));
}


Status ParseExperimentFile(const std::string& path, toml::table& root) {
  if (!std::filesystem::exists(path))
    return Status(StatusCode::kNotFound, fmt::format("experiment file '{}' not found", path));
  try {
    root = toml::parse_file(path);
  } catch (const toml::parse_error& err) {
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("{}:{}:{}: {}", path, err.source().begin.line, err.source().begin.column,
                              err.description()));
  }
  return Status::Ok();
}

Status LoadExperimentToml(const std::string& path, ExperimentConfig& cfg) {
  toml::table root;
  FEDRT_TRY(ParseExperimentFile(path, root));
  return LoadExperimentTable(root, path, std::filesystem::path(path).parent_path().string(), cfg);
}

std::map<std::string, std::vector<std::string>> ExperimentKeys() {
  std::map<std::string, std::set<std::string>> keys;
  ExperimentConfig cfg;
  KeyCollector collect(&keys);
  (void)LoadExperimentTable(toml::table{}, "schema", "", cfg);  // an empty file reads (and so names) every key
  std::map<std::string, std::vector<std::string>> out;
  for (auto& [table, names] : keys) out[table].assign(names.begin(), names.end());
  return out;
}

Status LoadExperimentTable(const toml::table& root, const std::string& path, const std::string& base_dir,
                           ExperimentConfig& cfg) {
  const std::filesystem::path base(base_dir);
  // [network] is read by the coordinator and devices (coordinator/network_config.cc).
  static const std::set<std::string> kTables = {"problem", "algorithm", "participation", "run", "experiment",
                                                "network", "compression", "gmm", "data", "model", "privacy",
                                                "robustness", "devices"};
  for (auto& [k, v] : root) {
    if (kTables.count(std::string(k.str())) && !v.is_table())
      return Status(StatusCode::kInvalidArgument, fmt::format("{}: '{}' must be a table ([{}] and its keys){}", path,
                                                              k.str(), k.str(), LineSuffix(v)));
    if (!kTables.count(std::string(k.str()))) {
      const std::string near = ClosestName(std::string(k.str()), kTables);
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("{}: unknown top-level key or table '{}'{}{}; expected tables "
                                "[experiment], [problem], [algorithm], [participation], [run], [compression], [gmm], [data], [model], [network], [privacy], [robustness], [devices]",
                                path, k.str(), LineSuffix(v), near.empty() ? "" : fmt::format("; did you mean [{}]?", near)));
    }
  }
  static const toml::table kEmpty;
  auto table = [&](const char* name) -> const toml::table& {
    const toml::table* t = root[name].as_table();
    return t ? *t : kEmpty;
  };

  {  // [experiment]: free-form description
    TableReader r(table("experiment"), "experiment", path);
    std::string ignored;
    FEDRT_TRY(r.read("name", ignored));
    FEDRT_TRY(r.read("description", ignored));
    FEDRT_TRY(r.check_unknown());
  }
  {
    TableReader r(table("problem"), "problem", path);
    std::string kind, het, file;
    FEDRT_TRY(r.read("kind", kind));
    if (!kind.empty()) {
      auto k = ParseProblemKind(kind);
      if (!k.ok()) return Status(StatusCode::kInvalidArgument, fmt::format("{}: problem.kind: {}", path, k.status().message()));
      cfg.problem = *k;
    }
    FEDRT_TRY(r.read("file", file));
    if (!file.empty()) {
      std::filesystem::path fp(file);
      cfg.problem_file = fp.is_absolute() || base.empty() ? file : (base / fp).string();
      if (kind.empty()) cfg.problem = task::ProblemKind::kBundle;  // like --problem-file without --problem
    }
    FEDRT_TRY(r.read("heterogeneity", het));
    if (!het.empty()) {
      auto h = ParseHeterogeneity(het);
      if (!h.ok())
        return Status(StatusCode::kInvalidArgument, fmt::format("{}: problem.heterogeneity: {}", path, h.status().message()));
      cfg.garnet.heterogeneity = *h;
    }
    if (table("problem").contains("agents")) cfg.agents_set = true;
    FEDRT_TRY(r.read("agents", cfg.garnet.agents));
    FEDRT_TRY(r.read("states", cfg.garnet.n_states));
    FEDRT_TRY(r.read("actions", cfg.garnet.n_actions));
    FEDRT_TRY(r.read("branching", cfg.garnet.branching));
    FEDRT_TRY(r.read("dim", cfg.garnet.dim));
    FEDRT_TRY(r.read("gamma", cfg.garnet.gamma));
    FEDRT_TRY(r.read("epsilon", cfg.garnet.epsilon));
    FEDRT_TRY(r.read("noise_free", cfg.noise_free));
    // optimisation family (lsq / logistic)
    FEDRT_TRY(r.read("samples", cfg.opt.samples));
    FEDRT_TRY(r.read("covariate_shift", cfg.opt.covariate_shift));
    FEDRT_TRY(r.read("concept_shift", cfg.opt.concept_shift));
    FEDRT_TRY(r.read("quantity_skew", cfg.opt.quantity_skew));
    FEDRT_TRY(r.read("noise", cfg.opt.noise));
    if (table("problem").contains("l2")) cfg.opt.l2_set = true;
    FEDRT_TRY(r.read("l2", cfg.opt.l2));
    FEDRT_TRY(r.read("coordinator_generates", cfg.opt.coordinator_generates));
    std::string data;
    FEDRT_TRY(r.read("data", data));
    if (!data.empty()) {
      std::filesystem::path dp(data);
      cfg.opt.data = dp.is_absolute() || base.empty() ? data : (base / dp).string();
    }
    uint64_t ps = 0;
    const bool has_seed = table("problem").contains("seed");
    FEDRT_TRY(r.read("seed", ps));
    if (has_seed) cfg.problem_seed = ps;
    FEDRT_TRY(r.check_unknown());
  }
  {
    TableReader r(table("algorithm"), "algorithm", path);
    std::optional<std::string> names;
    FEDRT_TRY(r.read_list("names", names));
    if (names) {
      cfg.algorithms_set = true;
      auto a = ParseAlgorithms(*names);
      if (!a.ok()) return Status(StatusCode::kInvalidArgument, fmt::format("{}: algorithm.names: {}", path, a.status().message()));
      cfg.algorithms = *a;
    }
    FEDRT_TRY(r.read("step", cfg.step));
    FEDRT_TRY(r.read("local_steps", cfg.local_steps));
    double p = -1;
    const bool has_p = table("algorithm").contains("comm_prob");
    FEDRT_TRY(r.read("comm_prob", p));
    if (has_p) cfg.comm_prob = p;
    // optimisation family (lsq / logistic)
    FEDRT_TRY(r.read("batch", cfg.opt.batch));
    FEDRT_TRY(r.read("prox_mu", cfg.opt.prox_mu));
    FEDRT_TRY(r.read("rr", cfg.opt.rr));
    FEDRT_TRY(r.read("server_step", cfg.opt.server_step));
    long burn_in = -1;
    const bool has_burn_in = table("algorithm").contains("burn_in");
    FEDRT_TRY(r.read("burn_in", burn_in));
    if (has_burn_in) cfg.opt.burn_in = burn_in;
    FEDRT_TRY(ReadAsyncKeys(r, table("algorithm"), cfg.async));
    FEDRT_TRY(r.check_unknown());
  }
  {
    TableReader r(table("participation"), "participation", path);
    FEDRT_TRY(r.read("rate", cfg.participation));
    FEDRT_TRY(r.check_unknown());
  }
  {
    TableReader r(table("run"), "run", path);
    FEDRT_TRY(r.read("rounds", cfg.rounds));
    FEDRT_TRY(r.read("runs", cfg.runs));
    FEDRT_TRY(r.read("seed", cfg.seed));
    FEDRT_TRY(r.read("threads", cfg.threads));
    FEDRT_TRY(r.read("kernel", cfg.kernel));
    std::string out;
    FEDRT_TRY(r.read("out", out));
    if (!out.empty()) cfg.out = out;
    FEDRT_TRY(r.read("plot", cfg.plot));
    FEDRT_TRY(r.check_unknown());
  }
  {  // [compression]: the uplink codec (docs/algorithms.md 4)
    TableReader r(table("compression"), "compression", path);
    std::string kind;
    FEDRT_TRY(r.read("quantizer", kind));
    if (!kind.empty()) {
      auto k = ParseQuantizerKind(kind);
      if (!k.ok())
        return Status(StatusCode::kInvalidArgument, fmt::format("{}: compression.quantizer: {}", path, k.status().message()));
      cfg.compression.quantizer.kind = *k;
    }
    FEDRT_TRY(r.read("levels", cfg.compression.quantizer.levels));
    FEDRT_TRY(r.read("elias_gamma", cfg.compression.quantizer.elias_gamma));
    FEDRT_TRY(r.read("bits", cfg.compression.quantizer.bits));
    FEDRT_TRY(r.read("clip", cfg.compression.quantizer.clip));
    FEDRT_TRY(r.read("control_variates", cfg.compression.control_variates));
    FEDRT_TRY(r.read("downlink", cfg.compression.downlink));
    FEDRT_TRY(r.read("secure_aggregation", cfg.secagg.enabled));
    FEDRT_TRY(r.read("secagg_neighbours", cfg.secagg.neighbours));
    FEDRT_TRY(r.read("secagg_dropout", cfg.secagg.dropout));
    FEDRT_TRY(r.check_unknown());
  }
  {  // [privacy]: DP-FedAvg (docs/privacy.md)
    TableReader r(table("privacy"), "privacy", path);
    const toml::table& t = table("privacy");
    FEDRT_TRY(r.read("mechanism", cfg.privacy.mechanism));
    FEDRT_TRY(r.read("clip", cfg.privacy.clip));
    FEDRT_TRY(r.read("noise_multiplier", cfg.privacy.noise_multiplier));
    FEDRT_TRY(r.read("delta", cfg.privacy.delta));
    FEDRT_TRY(r.read("quorum", cfg.privacy.quorum));
    FEDRT_TRY(r.read("device_variance", cfg.privacy.device_variance));
    double budget = 0, quantile = 0;
    uint64_t test_seed = 0;
    FEDRT_TRY(r.read("epsilon_budget", budget));
    FEDRT_TRY(r.read("adaptive_quantile", quantile));
    FEDRT_TRY(r.read("test_seed", test_seed));
    if (t.contains("epsilon_budget")) cfg.privacy.epsilon_budget = budget;
    if (t.contains("adaptive_quantile")) cfg.privacy.adaptive_quantile = quantile;
    if (t.contains("test_seed")) cfg.privacy.test_seed = test_seed;
    FEDRT_TRY(r.check_unknown());
  }
  {  // [robustness]: the server's bound on updates (docs/security.md)
    TableReader r(table("robustness"), "robustness", path);
    FEDRT_TRY(r.read("max_update_norm", cfg.robustness.max_update_norm));
    FEDRT_TRY(r.check_unknown());
  }
  FEDRT_TRY(ReadDataModel(table("data"), table("model"), base.string(), path, cfg));
  FEDRT_TRY(ReadDevices(table("devices"), root.contains("devices"), base.string(), path, cfg.devices));
  {  // [gmm]: Gaussian mixture and federated EM (docs/algorithms.md 1.5, 5)
    TableReader r(table("gmm"), "gmm", path);
    FEDRT_TRY(r.read("components", cfg.gmm.components));
    FEDRT_TRY(r.read("data_dim", cfg.gmm.data_dim));
    FEDRT_TRY(r.read("points", cfg.gmm.points));
    FEDRT_TRY(r.read("own_weight", cfg.gmm.own_weight));
    FEDRT_TRY(r.read("separation", cfg.gmm.separation));
    FEDRT_TRY(r.read("em_step", cfg.gmm.em_step));
    FEDRT_TRY(r.read("inner_iters", cfg.gmm.inner_iters));
    FEDRT_TRY(r.read("batch", cfg.gmm.batch));
    FEDRT_TRY(r.check_unknown());
    if (cfg.problem == task::ProblemKind::kGmm && cfg.data.own()) {  // the mixture comes from the shards
      for (const char* key : {"components", "data_dim", "points", "own_weight", "separation"})
        if (table("gmm").contains(key))
          return Status(StatusCode::kInvalidArgument,
                        fmt::format("{}: gmm.{} generates a mixture; with [data] shards the data are the devices' "
                                    "(G is [model] components, p the shards' column count)", path, key));
      cfg.gmm.components = static_cast<int>(cfg.data.components);
      if (cfg.data.features > 0) cfg.gmm.data_dim = static_cast<int>(cfg.data.features);
    }
  }
  return Status::Ok();
}

Status Validate(const ExperimentConfig& c) {
  auto bad = [](std::string m) { return Status(StatusCode::kInvalidArgument, std::move(m)); };
  if (!(c.step > 0.0) || !std::isfinite(c.step)) return bad(fmt::format("--step must be a positive number, got {}", c.step));
  if (c.local_steps <= 0) return bad(fmt::format("--local-steps must be positive, got {}", c.local_steps));
  if (c.local_steps > (1L << 30)) return bad(fmt::format("--local-steps {} is too large (max 2^30)", c.local_steps));
  if (c.rounds <= 0) return bad(fmt::format("--rounds must be positive, got {}", c.rounds));
  if (c.runs <= 0) return bad(fmt::format("--runs must be positive, got {}", c.runs));
  if (c.data.model == "softmax" && c.data.own() && c.data.classes == 0)  // not counted (config/class_count.h)
    return bad("model.classes is missing: softmax regression needs the number of classes K (labels 0..K-1); set [model] "
               "classes = K");
  if (c.threads < 0) return bad(fmt::format("--threads must be >= 0 (0 = all cores), got {}", c.threads));
  if (TdKernel k; !ParseTdKernel(c.kernel.c_str(), k))
    return bad(fmt::format("run.kernel (or --kernel) must be auto, scalar, portable or avx2, got '{}'", c.kernel));
  if (!(c.participation > 0.0 && c.participation <= 1.0))
    return bad(fmt::format("--participation must be in (0, 1], got {}", c.participation));
  if (c.comm_prob && !(*c.comm_prob > 0.0 && *c.comm_prob <= 1.0))
    return bad(fmt::format("--comm-prob must be in (0, 1], got {}", *c.comm_prob));
  if (c.algorithms.empty()) return bad("algorithm.names (or --algorithm): at least one algorithm is needed");
  {
    const std::vector<std::string> known = KnownAlgorithms(c.problem);
    for (const std::string& a : c.algorithms) {
      if (std::find(known.begin(), known.end(), a) == known.end())
        return bad(fmt::format("algorithm.names (or --algorithm): unknown algorithm '{}' for this problem (known: {})", a,
                               AlgorithmList(known)));
    }
  }
  if (c.problem == task::ProblemKind::kBundle && c.problem_file.empty() && !c.data.own())
    return bad("--problem file needs --problem-file F (an array bundle)");
  if (c.problem == task::ProblemKind::kBundle && c.data.own() && !(c.garnet.gamma >= 0.0 && c.garnet.gamma < 1.0))
    return bad(fmt::format("model.gamma must be in [0, 1), got {}", c.garnet.gamma));
  if (c.problem == task::ProblemKind::kGarnet) {
    if (c.garnet.agents <= 0) return bad(fmt::format("--agents must be positive, got {}", c.garnet.agents));
    if (c.garnet.n_states < 2) return bad("problem.states must be at least 2");
    if (c.garnet.dim <= 0) return bad("problem.dim must be positive");
    if (c.garnet.branching < 1 || c.garnet.branching > c.garnet.n_states)
      return bad("problem.branching must be in [1, states]");
    if (!(c.garnet.gamma >= 0.0 && c.garnet.gamma < 1.0)) return bad("problem.gamma must be in [0, 1)");
  }
  if (c.problem == task::ProblemKind::kLeastSquares || c.problem == task::ProblemKind::kLogistic ||
      c.problem == task::ProblemKind::kSoftmax || c.problem == task::ProblemKind::kUser) {
    const OptSettings& o = c.opt;
    if (o.data.empty()) {
      if (c.garnet.agents <= 0) return bad(fmt::format("--agents must be positive, got {}", c.garnet.agents));
      if (c.garnet.dim <= 0) return bad(fmt::format("problem.dim must be positive, got {}", c.garnet.dim));
      if (o.samples <= 0) return bad(fmt::format("problem.samples must be positive, got {}", o.samples));
    }
    if (!(o.covariate_shift >= 0) || !(o.concept_shift >= 0) || !(o.quantity_skew >= 0) || !(o.noise >= 0))
      return bad("problem.covariate_shift, concept_shift, quantity_skew and noise must be >= 0");
    if (!(o.l2 >= 0) || !std::isfinite(o.l2)) return bad(fmt::format("problem.l2 must be >= 0, got {}", o.l2));
    if (o.batch < 0) return bad(fmt::format("--batch must be >= 0 (0 = full gradient), got {}", o.batch));
    if (!(o.prox_mu > 0) || !std::isfinite(o.prox_mu))
      return bad(fmt::format("--prox-mu must be a positive number, got {}", o.prox_mu));
    if (!(o.server_step > 0) || !std::isfinite(o.server_step))
      return bad(fmt::format("algorithm.server_step must be a positive number, got {}", o.server_step));
    if (o.burn_in && (*o.burn_in < 0 || *o.burn_in >= c.rounds))
      return bad(fmt::format("algorithm.burn_in must be in [0, rounds), got {}", *o.burn_in));
  }
  FEDRT_TRY(ValidateCoordinatorGenerates(c));
  FEDRT_TRY(ValidateCompressionEm(c));
  FEDRT_TRY(ValidateSecAgg(c));
  FEDRT_TRY(ValidatePrivacy(c));
  FEDRT_TRY(ValidateAsyncDevices(c));
  if (!(c.robustness.max_update_norm >= 0.0) || !std::isfinite(c.robustness.max_update_norm))
    return bad(fmt::format("robustness.max_update_norm must be a positive number (0: the task's default), got {}",
                           c.robustness.max_update_norm));
  if (c.out.empty()) return bad("--out must name a directory");
  return Status::Ok();
}

}  // namespace fedrt::config
