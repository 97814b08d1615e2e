// fedrt-sim: the in-process simulator. Runs one or several federated LSA
// algorithms on one problem for R runs and writes metrics.csv, summary.json
// and error.png to --out.

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "fedrt/log/log.h"
#include "fedrt/sim/experiment.h"
#include "fedrt/report/outputs.h"
#include "fedrt/sim/simulator.h"

using namespace fedrt;
using namespace fedrt::sim;

namespace {

int Fail(const std::string& what) {
  std::fprintf(stderr, "fedrt-sim: error: %s\n", what.c_str());
  return 2;
}

// Progress: a rewritten line on a terminal, one line per finished run otherwise.
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
  CLI::App app{
      "fedrt-sim: the in-process federated simulator. Families: LSA / TD(0) (FedLSA, SCAFFLSA, SCAFFLSA-H1), "
      "optimisation on least squares / logistic regression (FedAvg, Scaffold, FedProx and their Federated "
      "Richardson-Romberg versions), EM on Gaussian mixtures (FedEM, naive FedEM, VR-FedEM); uplink compression "
      "(dithering, rounding, with memory), partial participation and SecAgg+. Same experiment files, same "
      "iterates as ./fedrt fleet"};
  app.set_version_flag("--version", "fedrt-sim 0.1.0");
  std::string config_path, problem, problem_file, heterogeneity, algorithm, out;
  int agents = 0, threads = 0;
  double step = 0, comm_prob = 0, participation = 0;
  long local_steps = 0, rounds = 0, runs = 0;
  uint64_t seed = 0, problem_seed = 0;
  bool noise_free = false, no_plot = false;
  app.add_option("--config", config_path, "TOML experiment file (flags override its keys)");
  app.add_option("--problem", problem, "problem: garnet | file | lsq | logistic | gmm");
  app.add_option("--problem-file", problem_file, "array-bundle file of a federated TD(0) problem");
  app.add_option("--heterogeneity", heterogeneity, "Garnet heterogeneity: low | high");
  app.add_option("--agents", agents, "number of agents N");
  app.add_option("--algorithm", algorithm, "comma-separated: fedlsa,scafflsa,scafflsa-prob (garnet/file); fedavg,scaffold,fedprox,fedprox-exact and "
                 "<name>-rr (lsq/logistic); fedem,fedem-naive,vr-fedem (gmm)");
  app.add_option("--step", step, "step size eta");
  app.add_option("--local-steps", local_steps, "local steps H per round");
  app.add_option("--comm-prob", comm_prob, "communication probability p of scafflsa-prob (default 1/H)");
  app.add_option("--participation", participation, "probability q that an agent takes part in a round");
  app.add_option("--rounds", rounds, "communication rounds T");
  app.add_option("--runs", runs, "independent runs R");
  app.add_flag("--noise-free", noise_free, "expected-operator oracle (returns Abar_c, bbar_c exactly)");
  app.add_option("--seed", seed, "seed of every random stream");
  app.add_option("--problem-seed", problem_seed, "seed of the generated problem (default: --seed)");
  app.add_option("--threads", threads, "worker threads (0 = all cores); results do not depend on it");
  app.add_option("--out", out, "output directory");
  app.add_flag("--no-plot", no_plot, "do not draw error.png");
  std::string log_level = "info";
  log::AddLevelFlag(app, log_level);
  // Federated optimisation family (--problem lsq | logistic).
  std::string opt_data;
  long opt_batch = 0;
  double opt_prox_mu = 0;
  bool opt_rr = false;
  app.add_option("--data", opt_data, "lsq/logistic data: a directory of per-agent CSV files (y,x_1..x_d) or one CSV "
                                     "with an agent column (agent,y,x_1..x_d)");
  app.add_option("--batch", opt_batch, "lsq/logistic: samples per stochastic gradient (0 = full gradient)");
  app.add_option("--prox-mu", opt_prox_mu, "FedProx weight mu of (mu/2)||x - x_t||^2");
  double opt_cov = 0, opt_concept = 0, opt_qskew = 0, opt_l2 = 0, opt_noise = 0;
  long opt_samples = 0;
  app.add_option("--covariate-shift", opt_cov, "lsq/logistic synthetic data: covariate shift strength (0 = none)");
  app.add_option("--concept-shift", opt_concept, "lsq/logistic synthetic data: concept shift strength (0 = none)");
  app.add_option("--quantity-skew", opt_qskew, "lsq/logistic synthetic data: quantity skew strength (0 = none)");
  app.add_option("--samples", opt_samples, "lsq/logistic synthetic data: mean samples per agent");
  app.add_option("--noise", opt_noise, "lsq synthetic data: label noise std");
  app.add_option("--l2", opt_l2, "logistic: L2 weight lambda");
  app.add_flag("--rr", opt_rr, "also run each algorithm wrapped in Federated Richardson-Romberg (<name>-rr)");
  // Compression (every LSA / EM uplink) and the federated EM family (--problem gmm).
  std::string cx_quantizer;
  uint32_t cx_levels = 0, cx_bits = 0;
  double cx_clip = 0, em_step = 0;
  bool cx_cv = false, cx_down = false, cx_elias = false;
  long em_inner = 0, em_points = 0;
  app.add_option("--quantizer", cx_quantizer, "uplink compression: none | dither | rounding");
  app.add_option("--levels", cx_levels, "dither: number of levels s");
  app.add_flag("--elias-gamma", cx_elias, "dither: Elias-gamma code the levels on the wire");
  app.add_option("--bits", cx_bits, "rounding: bits b per coordinate");
  app.add_option("--clip", cx_clip, "rounding: public clip c (values outside [-c, c] are clipped)");
  app.add_flag("--compress-cv", cx_cv, "compressed differences with control variates Q(g_c - V_c) (DIANA / FedEM V_c)");
  app.add_flag("--compress-downlink", cx_down, "also compress the broadcast (LSA and optimisation families; not gmm)");
  app.add_option("--inner-iters", em_inner, "vr-fedem: SPIDER cycle length k_in");
  app.add_option("--em-step", em_step, "gmm: FedEM step gamma in (0, 1]");
  app.add_option("--points", em_points, "gmm: data points per agent");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  if (Status lv = log::SetLevel(log_level); !lv.ok()) return Fail(lv.message());
  ExperimentConfig cfg;
  if (!config_path.empty()) {
    Status st = LoadExperimentToml(config_path, cfg);
    if (!st.ok()) return Fail(st.message());
  }
  auto given = [&](const char* name) { return app.count(name) > 0; };
  if (given("--problem")) {
    auto k = ParseProblemKind(problem);
    if (!k.ok()) return Fail(std::string("--problem: ") + k.status().message());
    cfg.problem = *k;
  }
  if (given("--problem-file")) {
    cfg.problem_file = problem_file;
    if (!given("--problem")) cfg.problem = ProblemKind::kFile;
  }
  if (given("--heterogeneity")) {
    auto h = ParseHeterogeneity(heterogeneity);
    if (!h.ok()) return Fail(std::string("--heterogeneity: ") + h.status().message());
    cfg.garnet.heterogeneity = *h;
  }
  if (given("--agents")) {
    cfg.garnet.agents = agents;
    cfg.agents_set = true;
  }
  if (given("--algorithm")) {
    auto a = ParseAlgorithms(algorithm);
    if (!a.ok()) return Fail(std::string("--algorithm: ") + a.status().message());
    cfg.algorithms = *a;
    cfg.algorithms_set = true;
  }
  if (given("--step")) cfg.step = step;
  if (given("--local-steps")) cfg.local_steps = local_steps;
  if (given("--comm-prob")) cfg.comm_prob = comm_prob;
  if (given("--participation")) cfg.participation = participation;
  if (given("--rounds")) cfg.rounds = rounds;
  if (given("--runs")) cfg.runs = runs;
  if (given("--noise-free")) cfg.noise_free = noise_free;
  if (given("--seed")) cfg.seed = seed;
  if (given("--problem-seed")) cfg.problem_seed = problem_seed;
  if (given("--threads")) cfg.threads = threads;
  if (given("--out")) cfg.out = out;
  if (no_plot) cfg.plot = false;
  if (given("--data")) cfg.opt.data = opt_data;
  if (given("--batch")) cfg.opt.batch = opt_batch;
  if (given("--batch")) cfg.gmm.batch = opt_batch;  // gmm: mini-batch of local statistics
  if (given("--quantizer")) {
    auto k = ParseQuantizerKind(cx_quantizer);
    if (!k.ok()) return Fail(std::string("--quantizer: ") + k.status().message());
    cfg.compression.quantizer.kind = *k;
  }
  if (given("--levels")) cfg.compression.quantizer.levels = cx_levels;
  if (given("--elias-gamma")) cfg.compression.quantizer.elias_gamma = cx_elias;
  if (given("--bits")) cfg.compression.quantizer.bits = cx_bits;
  if (given("--clip")) cfg.compression.quantizer.clip = cx_clip;
  if (given("--compress-cv")) cfg.compression.control_variates = cx_cv;
  if (given("--compress-downlink")) cfg.compression.downlink = cx_down;
  if (given("--inner-iters")) cfg.gmm.inner_iters = em_inner;
  if (given("--em-step")) cfg.gmm.em_step = em_step;
  if (given("--points")) cfg.gmm.points = em_points;
  if (given("--prox-mu")) cfg.opt.prox_mu = opt_prox_mu;
  if (given("--rr")) cfg.opt.rr = opt_rr;
  if (given("--covariate-shift")) cfg.opt.covariate_shift = opt_cov;
  if (given("--concept-shift")) cfg.opt.concept_shift = opt_concept;
  if (given("--quantity-skew")) cfg.opt.quantity_skew = opt_qskew;
  if (given("--samples")) cfg.opt.samples = opt_samples;
  if (given("--noise")) cfg.opt.noise = opt_noise;
  if (given("--l2")) cfg.opt.l2 = opt_l2;
  ApplyFamilyDefaults(cfg);  // e.g. fedavg,scaffold for lsq when no algorithm is named

  Status valid = Validate(cfg);
  if (!valid.ok()) return Fail(valid.message());

  Progress progress(cfg, log::Get("fedrt-sim").should_log(spdlog::level::info));
  SimOptions opt;
  opt.on_round = [&](const RoundEvent& e) { progress.on_round(e); };
  auto result = RunExperiment(cfg, opt);
  progress.finish();
  if (!result.ok()) return Fail(result.status().message());

  Status plot_status;
  Status st = report::WriteOutputs(*result, cfg.out, &plot_status);
  if (!st.ok()) return Fail(st.message());
  if (!plot_status.ok()) log::Get("fedrt-sim").warn("no error.png: {}", plot_status.message());

  std::printf("%s, N=%d, eta=%g, H=%ld, T=%ld, runs=%ld, threads=%d\n", result->problem.description.c_str(),
              result->problem.agents, cfg.step, cfg.local_steps, cfg.rounds, cfg.runs,
              result->threads);
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
  std::printf("outputs: %s/{metrics.csv,summary.json%s}\n", cfg.out.c_str(), plot_status.ok() && cfg.plot ? ",error.png" : "");
  return 0;
}
