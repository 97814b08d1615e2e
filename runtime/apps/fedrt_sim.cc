// fedrt-sim: the in-process simulator. Runs one or several federated LSA
// algorithms on one problem for R runs and writes metrics.csv, summary.json,
// model_<algorithm>.npy and the plots (error.png, loss.png, accuracy.png) to --out. Under mpirun, every process
// is one rank of the same simulation (docs/architecture.md, "MPI"): rank 0
// writes the outputs and prints, the others are silent.

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <new>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "fedrt/config/class_count.h"
#include "fedrt/config/experiment_flags.h"
#include "fedrt/log/log.h"
#include "fedrt/config/experiment.h"
#include "fedrt/report/outputs.h"
#include "fedrt/sim/mpi_ranks.h"
#include "fedrt/cli/parse.h"
#include "fedrt/sim/simulator.h"

using namespace fedrt;
using namespace fedrt::sim;
using namespace fedrt::config;
using namespace fedrt::task;

namespace {

// Prints the error; the exit code is 2 for what the experiment asked for, 1
// for a run that failed (docs/cli.md, "Exit codes").
int Fail(const std::string& what, int rc = cli::kUsageError) {
  std::fprintf(stderr, "fedrt-sim: error: %s\n", what.c_str());
  return rc;
}

// Progress: a rewritten line on a terminal, one line per finished run otherwise.
// With short rounds several runs go at once (calls serialised, runs interleaved).
class Progress {
 public:
  Progress(const ExperimentConfig& c, bool show)
      : cfg_(c), tty_(show && isatty(STDERR_FILENO) != 0), start_(Clock::now()) {
    total_ = static_cast<double>(c.algorithms.size()) * c.runs * c.rounds;
  }
  void on_round(const RoundEvent& e) {
    ++done_;
    const bool run_done = e.round == cfg_.rounds;
    const auto now = Clock::now();
    if (tty_) {
      if (!run_done && now - last_ < std::chrono::milliseconds(100)) return;
      last_ = now;
      const double elapsed = std::chrono::duration<double>(now - start_).count();
      const double eta = done_ > 0 ? elapsed * (total_ - done_) / done_ : 0.0;
      std::fprintf(stderr, "\r\033[K%-13s run %ld/%ld  round %ld/%ld  error %.3e  [%3.0f%%]  ETA %.0fs",
                   e.algorithm.c_str(), e.run + 1, cfg_.runs, e.round, cfg_.rounds, e.error,
                   100.0 * done_ / total_, eta);
      std::fflush(stderr);
    } else if (run_done) {
      const double elapsed = std::chrono::duration<double>(now - start_).count();
      log::Get("fedrt-sim").info("{} run {}/{} done: final error {:.6e} ({:.1f} s elapsed)", e.algorithm, e.run + 1,
                                 cfg_.runs, e.error, elapsed);
    }
  }
  void finish() {
    if (tty_) std::fprintf(stderr, "\r\033[K");
  }

 private:
  using Clock = std::chrono::steady_clock;
  const ExperimentConfig& cfg_;
  bool tty_;
  Clock::time_point start_, last_{};
  double total_ = 1, done_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  std::unique_ptr<MpiRanks> mpi;
  if (Status st = MpiRanks::Start(&argc, &argv, mpi); !st.ok())
    return MpiLaunchRank() > 0 ? cli::kRunFailed : Fail(st.message(), cli::kRunFailed);  // said once, by rank 0
  std::optional<RankChannel> ranks;
  if (mpi) ranks.emplace(*mpi);
  const bool quiet = ranks && ranks->rank() != 0;  // only rank 0 prints and writes
  CLI::App app{
      "fedrt-sim: the in-process federated simulator. Families: LSA / TD(0) (FedLSA, SCAFFLSA, SCAFFLSA-H1), "
      "optimisation on least squares / logistic regression (FedAvg, Scaffold, FedProx and their Federated "
      "Richardson-Romberg versions), EM on Gaussian mixtures (FedEM, naive FedEM, VR-FedEM); uplink compression "
      "(dithering, rounding, with memory), partial participation and SecAgg+. Same experiment files, same "
      "iterates as ./fedrt fleet"};
  app.set_version_flag("--version", "fedrt-sim 0.1.0 (MPI: " + MpiRanks::Library() + ")");
  ExperimentFlags flags;
  AddExperimentFlags(app, flags);
  std::string log_level = "info";
  log::AddLevelFlag(app, log_level);
  uint32_t gateways = 0;
  app.add_option("--gateways", gateways,
                 "put the agents behind G gateways (agent c behind gateway c mod G), each aggregating its agents' "
                 "updates into one partial sum per round, as ./fedrt fleet --gateways does: the same results "
                 "(docs/gateways.md); not with MPI ranks")
      ->check(CLI::Range(0u, 1u << 20));
  Status parsed;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return quiet ? 0 : app.exit(e);  // --help, --version: every rank stops
    parsed = Status(StatusCode::kInvalidArgument, cli::UsageMessage(app, e, argc, argv));
  }
  if (parsed.ok()) parsed = log::SetLevel(quiet ? "off" : log_level);
  ExperimentConfig cfg;
  if (parsed.ok()) parsed = ExperimentFromFlags(app, flags, cfg);
  if (parsed.ok()) {  // softmax without model.classes: the simulator reads every shard, so it counts K
    auto counted = CountClasses(cfg, true);
    if (!counted.ok()) parsed = counted.status();
    else if (!counted->empty()) log::Get("fedrt-sim").info("{}", *counted);
  }
  if (parsed.ok()) parsed = Validate(cfg);
  if (parsed.ok() && gateways > 0 && ranks)
    parsed = Status::InvalidArgument("--gateways: not with MPI ranks (run one process)");
  if (!ranks && !parsed.ok()) return Fail(parsed.message());
  if (ranks) {  // every rank must run the same experiment, or none runs
    uint64_t fingerprint = 0;
    if (parsed.ok()) {
      auto f = ExperimentFingerprint(cfg);
      if (f.ok()) fingerprint = *f;
      else parsed = f.status();
    }
    Status agreed = ranks->agree_start(parsed, fingerprint, flags.config.empty() ? "(command line)" : flags.config);
    if (!agreed.ok()) return quiet ? cli::kUsageError : Fail(agreed.message());
  }
  if (!cfg.opt.coordinator_generates)  // the same file drives ./fedrt fleet
    log::Get("fedrt-sim").info("problem.coordinator_generates = false concerns fedrt-coordinator only: the simulator "
                               "trains every agent, so it generates their data and reports the error against x_star");

  Progress progress(cfg, !quiet && log::Get("fedrt-sim").should_log(spdlog::level::info));
  SimOptions opt;
  opt.ranks = ranks ? &*ranks : nullptr;
  opt.gateways = gateways;
  const bool dp_test_seed = cfg.privacy.on() && cfg.privacy.test_seed.has_value();
  opt.on_round = [&](const RoundEvent& e) {
    progress.on_round(e);
    if (dp_test_seed)  // every round, so no excerpt of the log hides it (docs/privacy.md)
      log::Get("fedrt-sim").warn("{} run {} round {}: privacy.test_seed is set: the noise is reproducible and the run "
                                 "is NOT private",
                                 e.algorithm, e.run, e.round);
    return Status::Ok();
  };
  opt.on_round_any_thread = true;
  std::optional<Result<SimResult>> run;
  bool started = false;
  opt.started = &started;
  try {  // the only exception the host code lets through: memory running out
    run.emplace(RunExperiment(cfg, opt));
  } catch (const std::bad_alloc&) {  // a valid experiment this machine cannot hold: the run failed
    progress.finish();
    started = true;
    run.emplace(Status(StatusCode::kResourceExhausted,
                       fmt::format("out of memory: the simulator holds every agent's data and state (problem.dim = {}, "
                                   "{} agents; a dense least-squares or logistic problem needs about agents x samples "
                                   "x d x 8 bytes); reduce problem.dim, problem.samples or problem.agents",
                                   cfg.garnet.dim, cfg.garnet.agents)));
  }
  progress.finish();
  Result<SimResult>& result = *run;
  const int failed = started ? cli::kRunFailed : cli::kUsageError;
  if (ranks) {  // every rank finished, or every rank reports the first failure
    Status done = ranks->agree_done(result.ok() ? Status::Ok() : result.status());
    if (!done.ok()) return quiet ? failed : Fail(done.message(), failed);
    if (quiet) return 0;
  }
  if (!result.ok()) return Fail(result.status().message(), failed);

  Status plot_status;
  Status st = report::WriteOutputs(*result, cfg.out, &plot_status);
  if (!st.ok()) return Fail(st.message(), cli::kRunFailed);
  if (!plot_status.ok()) log::Get("fedrt-sim").warn("no plots: {}", plot_status.message());

  std::printf("%s, N=%d, eta=%g, H=%ld, T=%ld, runs=%ld, threads=%d%s\n", result->problem.description.c_str(),
              result->problem.agents, cfg.step, cfg.local_steps, cfg.rounds, cfg.runs, result->threads,
              ranks ? fmt::format(", ranks={}", ranks->size()).c_str()
                    : (result->concurrent_runs ? " (one run per thread)" : ""));
  std::printf("%-14s %16s %16s %18s %10s %16s\n", "algorithm", "final error", "std", "predicted bias^2", "wall s",
              "agent-steps/s");
  for (const AlgorithmResult& a : result->algorithms) {
    double mean = 0, sq = 0;
    for (auto& e : a.error) mean += e.back();
    mean /= static_cast<double>(a.error.size());
    for (auto& e : a.error) sq += (e.back() - mean) * (e.back() - mean);
    const double sd = a.error.size() > 1 ? std::sqrt(sq / static_cast<double>(a.error.size() - 1)) : 0.0;
    std::printf("%-14s %16.6e %16.3e %18s %10.3f %16.3e\n", a.name.c_str(), mean, sd,
                a.predicted_bias_sq ? fmt::format("{:.6e}", *a.predicted_bias_sq).c_str() : "-", a.wall_seconds,
                a.wall_seconds > 0 ? static_cast<double>(a.agent_steps) / a.wall_seconds : 0.0);
  }
  for (const AlgorithmResult& a : result->algorithms) {  // DP-FedAvg: the guarantee, and why a run stopped early
    if (!a.extra.contains("epsilon")) continue;
    const std::string effective = a.extra.contains("effective_noise_multiplier")
                                      ? fmt::format(" (effective {:.6g})", a.extra["effective_noise_multiplier"].get<double>())
                                      : std::string();
    std::string adaptive;  // adaptive clipping: the quantile and each run's final clip
    if (a.extra.contains("final_clip")) {
      adaptive = fmt::format(", adaptive toward quantile {:g}, final", *cfg.privacy.adaptive_quantile);
      for (const auto& f : a.extra["final_clip"]) adaptive += fmt::format(" {:.6g}", f.get<double>());
    }
    std::printf("%-14s epsilon %.6g at delta %g (%s DP-FedAvg, noise_multiplier %g%s, clip %g%s%s)\n", a.name.c_str(),
                a.extra["epsilon"].get<double>(), cfg.privacy.delta, cfg.privacy.mechanism.c_str(),
                cfg.privacy.noise_multiplier, effective.c_str(), cfg.privacy.clip, adaptive.c_str(),
                dp_test_seed ? "; test_seed: NOT private" : "");
    if (a.extra.contains("privacy_stop"))
      for (const auto& why : a.extra["privacy_stop"]) log::Get("fedrt-sim").warn("{} {}", a.name, why.get<std::string>());
  }
  std::string plots;
  if (plot_status.ok() && cfg.plot)
    for (const std::string& f : report::PlotFiles(cfg.out)) plots += "," + f;
  std::printf("outputs: %s/{metrics.csv,summary.json,model_*.npy%s}\n", cfg.out.c_str(), plots.c_str());
  return 0;
}
