#include "fedrt/sim/simulator.h"

#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "fedrt/analysis/fedlsa_bias.h"
#include "fedrt/core/arena.h"
#include "fedrt/problems/expected_oracle.h"
#include "fedrt/problems/garnet.h"
#include "fedrt/problems/td_oracle.h"
#include "fedrt/sim/opt_simulator.h"
#include "fedrt/sim/worker_pool.h"
#include "compressed_link.h"
#include "fedrt/sim/em_simulator.h"
#include "fedrt/secagg/integer_uplink.h"

namespace fedrt::sim {

using algorithms::IsSampled;
using algorithms::LsaAlgorithm;
using algorithms::LsaClient;
using algorithms::LsaHyper;
using algorithms::LsaServer;
using algorithms::RoundPlan;

Result<problems::TdProblem> BuildProblem(const ExperimentConfig& cfg) {
  if (cfg.problem == ProblemKind::kFile) {
    auto bundle = problems::ArrayBundle::load(cfg.problem_file);
    if (!bundle.ok()) return bundle.status();
    auto p = problems::TdProblem::from_bundle(*bundle);
    if (!p.ok()) return p.status();
    if (cfg.agents_set && cfg.garnet.agents != p->agents()) {
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("--agents {} does not match the {} agents in problem file '{}'", cfg.garnet.agents,
                                p->agents(), cfg.problem_file));
    }
    return p;
  }
  problems::GarnetConfig g = cfg.garnet;
  g.seed = cfg.effective_problem_seed();
  return problems::GenerateGarnet(g);
}

namespace {

constexpr uint64_t kBitsPerScalar = 64;  // uncompressed links: raw float64 payloads
constexpr int kMaxStackDim = 64;  // compressed uplink: per-agent scratch on the stack up to this d
constexpr uint64_t kMinParallelSteps = 1u << 15;  // below this many local steps per round, run on one thread

double SquaredError(const double* theta, const Eigen::VectorXd& star) {
  double e = 0.0;
  for (int i = 0; i < star.size(); ++i) {
    const double d = theta[i] - star[i];
    e += d * d;
  }
  return e;
}

template <int D, class Oracle>
Status RunAlgorithm(const ExperimentConfig& cfg, size_t alg_index, LsaAlgorithm alg, const std::vector<Oracle>& oracles,
                    const Eigen::VectorXd& theta_star, WorkerPool& pool, const SimOptions& opt, AlgorithmResult& res) {
  const int d = static_cast<int>(theta_star.size());
  const uint32_t n = static_cast<uint32_t>(oracles.size());
  const long T = cfg.rounds;
  LsaHyper<double> hyper;
  hyper.algorithm = alg;
  hyper.step_size = cfg.step;
  hyper.local_steps = static_cast<uint32_t>(cfg.local_steps);
  hyper.comm_prob = cfg.effective_comm_prob();

  const size_t per_client = sizeof(double) * 3 * static_cast<size_t>(d) + 2 * Arena::kAlignment;
  std::vector<uint8_t> client_mem(per_client * n + 4096);
  std::vector<uint8_t> server_mem(sizeof(double) * 2 * static_cast<size_t>(d) + 256);
  std::vector<LsaClient<double>> clients(n);
  std::vector<uint32_t> sampled;
  sampled.reserve(n);
  const Eigen::VectorXd theta0 = theta_star + Eigen::VectorXd::Ones(d);
  // Compression (ALGORITHMS.md 4): uplink codecs per agent, optional downlink;
  // xhat is the agents' model when the broadcast is compressed.
  CompressedLinks links;
  std::vector<double> xhat(d), recon(d);
  std::vector<Status> link_errors(n);
  // Shared-scale rounding: agents send b-bit integers and the server sums them
  // (plain, or with secure aggregation) and dequantizes once.
  const bool int_uplink =
      cfg.compression.enabled() && secagg::IntegerUplink::Applies(cfg.compression.quantizer, cfg.compression.control_variates,
                                                                  cfg.participation);
  secagg::IntegerUplink uplink;
  std::vector<uint32_t> reported;
  uint64_t secagg_failed = 0;

  for (long run = 0; run < cfg.runs; ++run) {
    const auto t0 = std::chrono::steady_clock::now();
    FEDRT_TRY(links.init(static_cast<int>(n), d, cfg.compression));
    if (int_uplink) FEDRT_TRY(uplink.init(static_cast<int>(n), d, cfg.compression.quantizer,
                                            cfg.compression.control_variates, cfg.secagg));
    std::copy(theta0.data(), theta0.data() + d, xhat.begin());
    Arena client_arena(client_mem.data(), client_mem.size());
    for (uint32_t c = 0; c < n; ++c) {
      auto cl = LsaClient<double>::create(client_arena, d, hyper);
      clients[c] = *cl;  // sized above: cannot fail
    }
    Arena server_arena(server_mem.data(), server_mem.size());
    LsaServer<double> server = *LsaServer<double>::create(server_arena, d, hyper, theta0.data(), cfg.seed,
                                                          static_cast<uint64_t>(run));
    std::vector<double> err(T + 1);
    std::vector<uint32_t> agents(T + 1, 0);
    std::vector<uint64_t> up(T + 1, 0), down(T + 1, 0);
    std::vector<Eigen::VectorXd> history;
    err[0] = SquaredError(server.global(), theta_star);
    if (opt.keep_theta_history) history.push_back(Eigen::Map<const Eigen::VectorXd>(server.global(), d));

    for (long t = 0; t < T; ++t) {
      const uint32_t round = static_cast<uint32_t>(t);
      const RoundPlan plan = server.start_round(round);
      sampled.clear();
      for (uint32_t c = 0; c < n; ++c)
        if (IsSampled(cfg.seed, static_cast<uint64_t>(run), c, round, cfg.participation)) sampled.push_back(c);
      const double* theta_t = links.downlink() ? xhat.data() : server.global();
      auto local_work = [&](size_t b, size_t e) {
        for (size_t i = b; i < e; ++i) {
          const uint32_t c = sampled[i];
          clients[c].begin_round(theta_t, plan);
          CounterRng rng(cfg.seed, static_cast<uint64_t>(run), c, round, RngStream::kLocalSteps);
          clients[c].template run_local_steps<D>(oracles[c], rng);
          if (links.enabled()) {  // the agent encodes Q(theta_{t,H}^c - theta_t - V_c)
            CounterRng crng(cfg.seed, static_cast<uint64_t>(run), c, round, RngStream::kCompression);
            double sent[kMaxStackDim];
            std::vector<double> sent_heap;
            double* sp = sent;
            if (d > kMaxStackDim) {
              sent_heap.resize(d);
              sp = sent_heap.data();
            }
            link_errors[c] = links.agent_send(c, clients[c].update(), theta_t, crng, sp);
            if (int_uplink && link_errors[c].ok())  // the same draws: x_c, the integers of the payload
              link_errors[c] = uplink.agent_quantize(c, clients[c].update(), theta_t,
                                                     CounterRng(cfg.seed, static_cast<uint64_t>(run), c, round,
                                                                RngStream::kCompression));
            if (link_errors[c].ok()) clients[c].set_sent_update(sp);
          }
        }
      };
      // Waking the workers costs tens of microseconds: small rounds run inline.
      if (static_cast<uint64_t>(sampled.size()) * plan.local_steps >= kMinParallelSteps)
        pool.parallel_for(sampled.size(), local_work);
      else
        local_work(0, sampled.size());
      uint64_t bits_up = 0, bits_down_one = 0, bits_down_protocol = 0;
      const std::vector<uint32_t>* reporters = &sampled;
      if (int_uplink) {
        for (uint32_t c : sampled) FEDRT_TRY(link_errors[c]);
        auto agg = uplink.aggregate(sampled, theta_t, cfg.seed, static_cast<uint64_t>(run), round, recon.data());
        if (!agg.ok()) return agg.status();
        bits_up = agg->bits_up;
        bits_down_protocol = agg->bits_down_extra;
        if (agg->contributors > 0) server.accumulate(recon.data(), static_cast<double>(agg->contributors));
        if (!agg->failure.empty() && secagg_failed++ == 0) res.extra["secagg_first_failure"] = agg->failure;
        reported = std::move(agg->who);  // dropped devices (and all, in a failed round) do not apply the round
        reporters = &reported;
      } else if (links.enabled()) {
        for (uint32_t c : sampled) {  // fixed agent order
          FEDRT_TRY(link_errors[c]);
          auto bits = links.server_receive(c, theta_t, recon.data());
          if (!bits.ok()) return bits.status();
          bits_up += *bits;
          server.accumulate(recon.data());
        }
      } else {
        for (uint32_t c : sampled) server.accumulate(clients[c].update());  // fixed agent order
      }
      server.finish_round();
      if (links.downlink()) {
        auto bits = links.broadcast(server.global(), xhat.data(), cfg.seed, static_cast<uint64_t>(run), round);
        if (!bits.ok()) return bits.status();
        bits_down_one = *bits;
      }
      for (uint32_t c : *reporters) clients[c].apply_global(links.downlink() ? xhat.data() : server.global());
      res.agent_steps += static_cast<uint64_t>(sampled.size()) * plan.local_steps;
      err[t + 1] = SquaredError(server.global(), theta_star);
      agents[t + 1] = static_cast<uint32_t>(reporters->size());
      up[t + 1] = links.enabled() ? bits_up : sampled.size() * d * kBitsPerScalar;
      down[t + 1] = sampled.size() * (links.downlink() ? bits_down_one : d * kBitsPerScalar) + bits_down_protocol;
      if (opt.keep_theta_history) history.push_back(Eigen::Map<const Eigen::VectorXd>(server.global(), d));
      if (opt.on_round) opt.on_round(RoundEvent{alg_index, res.name, run, t + 1, err[t + 1]});
    }
    res.wall_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    res.error.push_back(std::move(err));
    res.agents.push_back(std::move(agents));
    res.bits_up.push_back(std::move(up));
    res.bits_down.push_back(std::move(down));
    res.final_theta.push_back(Eigen::Map<const Eigen::VectorXd>(server.global(), d));
    if (cfg.secagg.enabled) res.extra["secagg_failed_rounds"] = secagg_failed;
    if (opt.keep_theta_history) res.theta_history.push_back(std::move(history));
  }
  return Status::Ok();
}

// Oracles of every agent, carved from one arena (the simulator's "devices").
template <class Oracle>
struct OracleFleet {
  std::vector<uint8_t> memory;
  std::vector<Oracle> oracles;
};

Status BuildTdOracles(const problems::TdProblem& p, OracleFleet<problems::TdOracle<double>>& fleet, int& max_atoms) {
  const size_t n = static_cast<size_t>(p.n_states);
  const size_t per_agent = sizeof(double) * n * p.dim + n * n * (sizeof(problems::TdTransition<double>) + 24) +
                           8 * Arena::kAlignment;
  fleet.memory.assign(per_agent * p.agents(), 0);
  Arena arena(fleet.memory.data(), fleet.memory.size());
  max_atoms = 0;
  for (int c = 0; c < p.agents(); ++c) {
    const std::vector<double> joint = p.joint_law(c);
    auto o = problems::TdOracle<double>::create(arena, p.dim, p.n_states, p.gamma, p.phi.data(), p.reward[c].data(),
                                                joint.data());
    if (!o.ok()) return Status(o.status().code(), fmt::format("agent {}: {}", c, o.status().message()));
    max_atoms = std::max<int>(max_atoms, static_cast<int>(o->atoms()));
    fleet.oracles.push_back(*o);
  }
  return Status::Ok();
}

Status BuildExpectedOracles(const problems::LsaSystem& lsa, OracleFleet<problems::ExpectedLsaOracle<double>>& fleet) {
  const size_t d = static_cast<size_t>(lsa.dim);
  const size_t per_agent = sizeof(double) * (d * d + 2 * d) + 4 * Arena::kAlignment;
  fleet.memory.assign(per_agent * lsa.agents(), 0);
  Arena arena(fleet.memory.data(), fleet.memory.size());
  for (int c = 0; c < lsa.agents(); ++c) {
    auto o = problems::ExpectedLsaOracle<double>::create(arena, lsa.dim, lsa.abar[c].data(), lsa.bbar[c].data());
    if (!o.ok()) return o.status();
    fleet.oracles.push_back(*o);
  }
  return Status::Ok();
}

}  // namespace

Result<SimResult> RunExperiment(const ExperimentConfig& cfg, const SimOptions& opt) {
  FEDRT_TRY(Validate(cfg));
  switch (cfg.problem) {
    case ProblemKind::kGarnet:
    case ProblemKind::kFile:
      return RunLsaExperiment(cfg, opt);
    case ProblemKind::kGmm:
      return RunEmExperiment(cfg, opt);
    case ProblemKind::kLsq:
    case ProblemKind::kLogistic:
      return RunOptExperiment(cfg, opt);
  }
  return Status(StatusCode::kUnimplemented, std::string("unknown problem family"));
}

Result<SimResult> RunLsaExperiment(const ExperimentConfig& cfg, const SimOptions& opt) {
  std::vector<LsaAlgorithm> algs;
  for (const std::string& name : cfg.algorithms) {
    auto a = LsaAlgorithmFromName(name);
    if (!a.ok()) return a.status();
    algs.push_back(*a);
  }
  auto problem = BuildProblem(cfg);
  if (!problem.ok()) return problem.status();
  const problems::TdProblem& p = *problem;
  const problems::LsaSystem& lsa = p.lsa;

  SimResult out;
  out.config = cfg;
  out.problem.agents = lsa.agents();
  out.problem.dim = lsa.dim;
  out.problem.theta_star = lsa.theta_star;
  out.problem.delta_het = analysis::DeltaHet(lsa);
  out.settings = {{"comm_prob", cfg.effective_comm_prob()},
                  {"noise_free", cfg.noise_free},
                  {"aggregation", "uniform mean over the agents that reported"},
                  {"payload", "raw float64, d values per message (framing not counted)"},
                  {"initial_iterate", "theta_star + (1, ..., 1)"}};
  if (cfg.compression.enabled()) {
    out.settings["payload"] = "encoded bytes of the compressed update difference theta_{t,H}^c - theta_t (bits = 8 * bytes)";
    out.settings["compression"] = CompressionSettingsJson(cfg.compression, lsa.dim);
  }
  if (cfg.secagg.enabled)
    out.settings["secure_aggregation"] = secagg::IntegerUplink::Describe(
        cfg.secagg, static_cast<uint32_t>(lsa.agents()), cfg.compression.quantizer.bits);
  if (cfg.problem == ProblemKind::kFile) out.settings["problem_file"] = cfg.problem_file;
  else
    out.settings.update({{"heterogeneity", cfg.garnet.heterogeneity == problems::Heterogeneity::kHigh ? "high" : "low"},
                         {"states", cfg.garnet.n_states},
                         {"actions", cfg.garnet.n_actions},
                         {"branching", cfg.garnet.branching},
                         {"gamma", cfg.garnet.gamma},
                         {"epsilon", cfg.garnet.epsilon}});
  out.problem.description =
      cfg.problem == ProblemKind::kFile
          ? fmt::format("federated TD(0) from '{}'", cfg.problem_file)
          : fmt::format("Garnet TD(0), {} heterogeneity, {} states, {} actions, branching {}, d={}, gamma={}",
                        cfg.garnet.heterogeneity == problems::Heterogeneity::kHigh ? "high" : "low",
                        cfg.garnet.n_states, cfg.garnet.n_actions, cfg.garnet.branching, cfg.garnet.dim,
                        cfg.garnet.gamma);

  const analysis::FedLsaBias bias = analysis::PredictFedLsaBias(lsa, cfg.step, cfg.local_steps, cfg.rounds);
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  WorkerPool pool(cfg.threads > 0 ? cfg.threads : static_cast<int>(hw));
  out.threads = pool.threads();

  OracleFleet<problems::TdOracle<double>> td_fleet;
  OracleFleet<problems::ExpectedLsaOracle<double>> exp_fleet;
  if (cfg.noise_free) {
    FEDRT_TRY(BuildExpectedOracles(lsa, exp_fleet));
  } else {
    FEDRT_TRY(BuildTdOracles(p, td_fleet, out.problem.oracle_atoms_max));
  }

  for (size_t a = 0; a < algs.size(); ++a) {
    const LsaAlgorithm alg = algs[a];
    AlgorithmResult res;
    res.name = algorithms::LsaAlgorithmName(alg);
    Status run_status = DispatchDim(lsa.dim, [&](auto dim_tag) {
      constexpr int D = decltype(dim_tag)::value;
      if (cfg.noise_free) return RunAlgorithm<D>(cfg, a, alg, exp_fleet.oracles, lsa.theta_star, pool, opt, res);
      return RunAlgorithm<D>(cfg, a, alg, td_fleet.oracles, lsa.theta_star, pool, opt, res);
    });
    if (!run_status.ok())
      return Status(run_status.code(), fmt::format("{}: {}", res.name, run_status.message()));
    if (alg == LsaAlgorithm::kFedLsa) {
      if (cfg.participation >= 1.0) {
        res.predicted_bias_sq = bias.after_rounds.squaredNorm();
        res.predicted_bias_sq_stationary = bias.stationary.squaredNorm();
      }
    } else {
      res.predicted_bias_sq = 0.0;  // control variates remove the heterogeneity bias
      res.predicted_bias_sq_stationary = 0.0;
    }
    out.algorithms.push_back(std::move(res));
  }
  return out;
}

}  // namespace fedrt::sim
