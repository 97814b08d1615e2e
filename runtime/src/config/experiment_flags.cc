#include "fedrt/config/experiment_flags.h"

#include "fedrt/config/compression_em.h"

namespace fedrt::config {

void AddExperimentFlags(CLI::App& app, ExperimentFlags& f) {
  app.add_option("--config", f.config, "TOML experiment file (flags override its keys)");
  app.add_option("--problem", f.problem, "problem.kind: garnet | file | lsq | logistic | gmm");
  app.add_option("--problem-file", f.problem_file, "problem.file: array-bundle file of a federated TD(0) problem");
  app.add_option("--heterogeneity", f.heterogeneity, "problem.heterogeneity (Garnet): low | high");
  app.add_option("--agents", f.agents, "problem.agents: number of agents N");
  app.add_option("--algorithm", f.algorithm,
                 "algorithm.names, comma-separated: fedlsa,scafflsa,scafflsa-prob (garnet/file); fedavg,scaffold,"
                 "fedprox,fedprox-exact and <name>-rr (lsq/logistic); fedem,fedem-naive,vr-fedem (gmm)");
  app.add_option("--step", f.step, "algorithm.step: step size eta");
  app.add_option("--local-steps", f.local_steps, "algorithm.local_steps: local steps H per round");
  app.add_option("--comm-prob", f.comm_prob, "algorithm.comm_prob: communication probability p of scafflsa-prob (default 1/H)");
  app.add_option("--participation", f.participation, "participation.rate: probability q that an agent takes part in a round");
  app.add_option("--rounds", f.rounds, "run.rounds: communication rounds T");
  app.add_option("--runs", f.runs, "run.runs: independent runs R");
  app.add_flag("--noise-free", f.noise_free, "problem.noise_free: expected-operator oracle (Abar_c, bbar_c exactly)");
  app.add_option("--seed", f.seed, "run.seed: seed of every random stream");
  app.add_option("--problem-seed", f.problem_seed, "problem.seed: seed of the generated problem (default: --seed)");
  app.add_option("--threads", f.threads, "run.threads: worker threads (0 = all cores); results do not depend on it");
  app.add_option("--kernel", f.kernel,
                 "run.kernel: TD(0) local steps in SIMD lanes of agents (auto, avx2, portable) or one by one "
                 "(scalar); results do not depend on it");
  app.add_option("--out", f.out,
                 "run.out: output directory (metrics.csv, summary.json, model_<algorithm>.npy, error.png/loss.png/accuracy.png), relative "
                 "to the working directory (paths inside the experiment file are relative to the file)");
  app.add_flag("--no-plot", f.no_plot, "do not draw the plots (error.png, loss.png, accuracy.png)");
  // Federated optimisation family (lsq | logistic).
  app.add_option("--data", f.data, "problem.data (lsq/logistic): a directory of per-agent CSV files (y,x_1..x_d) or "
                                   "one CSV with an agent column (agent,y,x_1..x_d)");
  app.add_option("--batch", f.batch, "algorithm.batch / gmm.batch: samples per stochastic gradient or EM statistic "
                                     "(0 = full)");
  app.add_option("--prox-mu", f.prox_mu, "algorithm.prox_mu: FedProx weight mu of (mu/2)||x - x_t||^2");
  app.add_option("--covariate-shift", f.covariate_shift, "problem.covariate_shift (synthetic lsq/logistic, 0 = none)");
  app.add_option("--concept-shift", f.concept_shift, "problem.concept_shift (synthetic lsq/logistic, 0 = none)");
  app.add_option("--quantity-skew", f.quantity_skew, "problem.quantity_skew (synthetic lsq/logistic, 0 = none)");
  app.add_option("--samples", f.samples, "problem.samples: mean samples per agent (synthetic lsq/logistic)");
  app.add_option("--noise", f.noise, "problem.noise: label noise std (synthetic lsq)");
  app.add_option("--l2", f.l2, "problem.l2: L2 weight lambda (logistic, softmax; least squares: ridge)");
  app.add_flag("--rr", f.rr, "algorithm.rr: also run each algorithm in Federated Richardson-Romberg (<name>-rr)");
  // Compression (every uplink) and the federated EM family (gmm).
  app.add_option("--quantizer", f.quantizer, "compression.quantizer: none | dither | rounding");
  app.add_option("--levels", f.levels, "compression.levels: dithering levels s");
  app.add_flag("--elias-gamma", f.elias_gamma, "compression.elias_gamma: Elias-gamma code the levels on the wire");
  app.add_option("--bits", f.bits, "compression.bits: rounding bits b per coordinate");
  app.add_option("--clip", f.clip, "compression.clip: public rounding clip c (values outside [-c, c] are clipped)");
  app.add_flag("--compress-cv", f.compress_cv,
               "compression.control_variates: compressed differences Q(g_c - V_c) (DIANA / FedEM V_c)");
  app.add_flag("--compress-downlink", f.compress_downlink,
               "compression.downlink: also compress the broadcast (every family; simulator and Linux devices)");
  app.add_option("--inner-iters", f.inner_iters, "gmm.inner_iters: VR-FedEM SPIDER cycle length k_in");
  app.add_option("--em-step", f.em_step, "gmm.em_step: FedEM step gamma in (0, 1]");
  app.add_option("--points", f.points, "gmm.points: data points per agent");
}

Status ExperimentFromFlags(const CLI::App& app, const ExperimentFlags& f, ExperimentConfig& cfg) {
  auto bad = [](const char* flag, const Status& st) {
    return Status(StatusCode::kInvalidArgument, std::string(flag) + ": " + st.message());
  };
  if (!f.config.empty()) FEDRT_TRY(LoadExperimentToml(f.config, cfg));
  auto given = [&](const char* name) { return app.count(name) > 0; };
  if (given("--problem")) {
    auto k = ParseProblemKind(f.problem);
    if (!k.ok()) return bad("--problem", k.status());
    cfg.problem = *k;
  }
  if (given("--problem-file")) {
    cfg.problem_file = f.problem_file;
    if (!given("--problem")) cfg.problem = task::ProblemKind::kBundle;
  }
  if (given("--heterogeneity")) {
    auto h = ParseHeterogeneity(f.heterogeneity);
    if (!h.ok()) return bad("--heterogeneity", h.status());
    cfg.garnet.heterogeneity = *h;
  }
  if (given("--agents")) {
    cfg.garnet.agents = f.agents;
    cfg.agents_set = true;
  }
  if (given("--algorithm")) {
    auto a = ParseAlgorithms(f.algorithm);
    if (!a.ok()) return bad("--algorithm", a.status());
    cfg.algorithms = *a;
    cfg.algorithms_set = true;
  }
  if (given("--step")) cfg.step = f.step;
  if (given("--local-steps")) cfg.local_steps = f.local_steps;
  if (given("--comm-prob")) cfg.comm_prob = f.comm_prob;
  if (given("--participation")) cfg.participation = f.participation;
  if (given("--rounds")) cfg.rounds = f.rounds;
  if (given("--runs")) cfg.runs = f.runs;
  if (given("--noise-free")) cfg.noise_free = f.noise_free;
  if (given("--seed")) cfg.seed = f.seed;
  if (given("--problem-seed")) cfg.problem_seed = f.problem_seed;
  if (given("--threads")) cfg.threads = f.threads;
  if (given("--kernel")) cfg.kernel = f.kernel;
  if (given("--out")) cfg.out = f.out;
  if (f.no_plot) cfg.plot = false;
  if (given("--data")) cfg.opt.data = f.data;
  if (given("--batch")) {
    cfg.opt.batch = f.batch;
    cfg.gmm.batch = f.batch;  // gmm: mini-batch of local statistics
  }
  if (given("--quantizer")) {
    auto k = ParseQuantizerKind(f.quantizer);
    if (!k.ok()) return bad("--quantizer", k.status());
    cfg.compression.quantizer.kind = *k;
  }
  if (given("--levels")) cfg.compression.quantizer.levels = f.levels;
  if (given("--elias-gamma")) cfg.compression.quantizer.elias_gamma = f.elias_gamma;
  if (given("--bits")) cfg.compression.quantizer.bits = f.bits;
  if (given("--clip")) cfg.compression.quantizer.clip = f.clip;
  if (given("--compress-cv")) cfg.compression.control_variates = f.compress_cv;
  if (given("--compress-downlink")) cfg.compression.downlink = f.compress_downlink;
  if (given("--inner-iters")) cfg.gmm.inner_iters = f.inner_iters;
  if (given("--em-step")) cfg.gmm.em_step = f.em_step;
  if (given("--points")) cfg.gmm.points = f.points;
  if (given("--prox-mu")) cfg.opt.prox_mu = f.prox_mu;
  if (given("--rr")) cfg.opt.rr = f.rr;
  if (given("--covariate-shift")) cfg.opt.covariate_shift = f.covariate_shift;
  if (given("--concept-shift")) cfg.opt.concept_shift = f.concept_shift;
  if (given("--quantity-skew")) cfg.opt.quantity_skew = f.quantity_skew;
  if (given("--samples")) cfg.opt.samples = f.samples;
  if (given("--noise")) cfg.opt.noise = f.noise;
  if (given("--l2")) cfg.opt.l2 = f.l2, cfg.opt.l2_set = true;
  ApplyFamilyDefaults(cfg);  // e.g. fedavg,scaffold for lsq when no algorithm is named
  return Status::Ok();
}

}  // namespace fedrt::config
