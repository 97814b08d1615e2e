// fedrt-bench: the program behind `./fedrt bench`. Prints plain-text tables
// (stdout) of the simulator's TD(0) throughput, the wall time of one full run
// (in-process and as a fedrt-sim child process) and the per-step device kernel
// cost, next to the reference numbers and acceptance targets. Progress lines
// go to stderr. This is a benchmark printout, not a test: it always exits 0
// unless something fails to run.

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "fedrt/algorithms/lsa.h"
#include "fedrt/config/experiment.h"
#include "fedrt/core/arena.h"
#include "fedrt/core/rng.h"
#include "fedrt/problems/expected_oracle.h"
#include "fedrt/problems/garnet.h"
#include "fedrt/problems/td_oracle.h"
#include "fedrt/problems/td_problem.h"
#include "fedrt/sim/simulator.h"
#include "fedrt/sim/td_lanes.h"
#include "bench_table.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using fedrt::Arena;
using fedrt::CounterRng;
using fedrt::RngStream;
using fedrt::algorithms::LsaAlgorithm;
using fedrt::algorithms::LsaAlgorithmName;
using fedrt::algorithms::LsaClient;
using fedrt::algorithms::LsaHyper;
using fedrt::algorithms::RoundPlan;
using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------- references
// SCAFFLSA authors' Python implementation, measured on this machine.
constexpr double kPythonStepsPerSecond = 1e6;  // ~1 us per agent-step
constexpr const char* kPythonRunSeconds = "65-110 s";
// Acceptance targets.
constexpr double kTargetStepsPerSecond = 3e8;  // with 2 threads, lane kernel (issue 16)
constexpr double kTargetRunSeconds = 2.5;      // one full run, N=100, H=10000, T=50

// ---------------------------------------------------------------- settings
struct Sizes {
  // Table 1: simulator throughput.
  int tp_agents = 100;
  long tp_local_steps = 10000;
  long tp_rounds = 20;
  int tp_repeats = 3;
  // Table 2: one full run.
  int run_agents = 100;
  long run_local_steps = 10000;
  long run_rounds = 50;
  // Table 3: per-step kernel.
  uint32_t kernel_steps = 2000000;  // per timed call
  int kernel_repeats = 5;
};

Sizes QuickSizes() {
  Sizes s;
  s.tp_agents = 20;
  s.tp_local_steps = 1000;
  s.tp_rounds = 5;
  s.tp_repeats = 1;
  s.run_agents = 20;
  s.run_local_steps = 1000;
  s.run_rounds = 5;
  s.kernel_steps = 100000;
  s.kernel_repeats = 2;
  return s;
}

constexpr int kDim = 8;
constexpr double kStep = 0.01;
constexpr uint64_t kSeed = 1;

// ---------------------------------------------------------------- output
template <class... Args>
void Progress(fmt::format_string<Args...> f, Args&&... args) {
  std::fputs(("[bench] " + fmt::format(f, std::forward<Args>(args)...) + "\n").c_str(), stderr);
  std::fflush(stderr);
}

using fedrt::bench::Table;
using fedrt::bench::Title;

std::string Rate(double x) { return fmt::format("{:.3e}", x); }
std::string Ns(double x) { return fmt::format("{:.2f}", x); }
std::string Speedup(double x) { return fmt::format("{:.1f}x", x); }
std::string Seconds(double x) { return fmt::format("{:.3f} s", x); }

const char* BuildType() {
#if defined(__SANITIZE_ADDRESS__)
  return "Debug+ASan (sanitizers on: numbers are not representative)";
#elif defined(NDEBUG) && defined(__OPTIMIZE__)
  return "Release (NDEBUG, optimized)";
#elif defined(__OPTIMIZE__)
  return "optimized, assertions on";
#else
  return "Debug (unoptimized: numbers are not representative)";
#endif
}

std::string Compiler() {
#if defined(__clang__)
  return fmt::format("clang {}.{}.{}", __clang_major__, __clang_minor__, __clang_patchlevel__);
#elif defined(__GNUC__)
  return fmt::format("gcc {}.{}.{}", __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__);
#else
  return "unknown compiler";
#endif
}

// ---------------------------------------------------------------- table 1
fedrt::config::ExperimentConfig GarnetHigh(int agents, long local_steps, long rounds, int threads,
                                           const char* kernel = "auto") {
  fedrt::config::ExperimentConfig cfg;
  cfg.problem = fedrt::task::ProblemKind::kGarnet;
  cfg.garnet.heterogeneity = fedrt::problems::Heterogeneity::kHigh;
  cfg.garnet.agents = agents;
  cfg.garnet.dim = kDim;
  cfg.algorithms = {"fedlsa", "scafflsa"};
  cfg.step = kStep;
  cfg.local_steps = local_steps;
  cfg.rounds = rounds;
  cfg.runs = 1;
  cfg.threads = threads;
  cfg.kernel = kernel;
  cfg.seed = kSeed;
  cfg.noise_free = false;
  cfg.plot = false;
  return cfg;
}

struct Throughput {
  int threads = 0;
  const char* kernel = "auto";
  bool concurrent_runs = false;  // whole runs one per thread (else each round's agents on the threads)
  double both = 0.0;             // total agent-steps (both algorithms) / elapsed time of the runs
};

bool RunThroughput(const Sizes& sz, int threads, const char* kernel, Throughput& out) {
  out = Throughput{};
  out.threads = threads;
  out.kernel = kernel;
  double best = std::numeric_limits<double>::infinity();
  uint64_t steps = 0;
  for (int rep = 0; rep < sz.tp_repeats; ++rep) {
    Progress("table 1: kernel={} threads={} repeat {}/{} (N={}, H={}, T={})", kernel, threads, rep + 1, sz.tp_repeats,
             sz.tp_agents, sz.tp_local_steps, sz.tp_rounds);
    auto res = fedrt::sim::RunExperiment(GarnetHigh(sz.tp_agents, sz.tp_local_steps, sz.tp_rounds, threads, kernel));
    if (!res.ok()) {
      std::fprintf(stderr, "fedrt-bench: RunExperiment failed: %s\n", res.status().message());
      return false;
    }
    steps = 0;
    for (const auto& a : res->algorithms) steps += a.agent_steps;
    best = std::min(best, res->run_seconds);
    out.concurrent_runs = res->concurrent_runs;
  }
  out.both = static_cast<double>(steps) / best;
  return true;
}

// ---------------------------------------------------------------- table 2
// Directory of this executable (fedrt-sim is built next to it).
std::optional<fs::path> SelfDir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  return exe.parent_path();
}

struct ChildTiming {
  bool ran = false;
  int exit_code = -1;
  double seconds = 0.0;
  std::string error;
};

// Runs `argv` with stdout/stderr sent to `log`, returns its wall time.
ChildTiming TimeChild(const std::vector<std::string>& argv, const fs::path& log) {
  ChildTiming t;
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = 0;
  const auto t0 = Clock::now();
  const int rc = posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    t.error = fmt::format("posix_spawn: {}", std::strerror(rc));
    return t;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      t.error = fmt::format("waitpid: {}", std::strerror(errno));
      return t;
    }
  }
  t.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  t.ran = true;
  t.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return t;
}

std::string Tail(const fs::path& file, size_t max_chars) {
  std::ifstream in(file);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return s.size() > max_chars ? s.substr(s.size() - max_chars) : s;
}

// ---------------------------------------------------------------- machine check
volatile double g_sink = 0.0;        // keeps the kernels' results observable
std::atomic<uint64_t> g_alu_sink{0};  // same for the ALU loops (written from two threads)

// Seconds of a fixed, dependent integer loop (no memory traffic).
double AluBurn(long iterations) {
  const auto t0 = Clock::now();
  uint64_t x = 1;
  for (long i = 0; i < iterations; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    x ^= x >> 29;
  }
  g_alu_sink.fetch_xor(x, std::memory_order_relaxed);
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// How much of a second core this machine gives right now: 2 x (one loop alone) /
// (two loops at once), best of `repeats`; 2.0 means two full cores, 1.0 one.
double ParallelScaling(long iterations, int repeats) {
  double best = 0.0;
  for (int r = 0; r < repeats; ++r) {
    const double solo = AluBurn(iterations);
    const auto t0 = Clock::now();
    std::thread other([&] { AluBurn(iterations); });
    AluBurn(iterations);
    other.join();
    const double pair = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::max(best, 2.0 * solo / pair);
  }
  return best;
}

// ---------------------------------------------------------------- table 3

// ns per local step of run_local_steps<kDim> (best of `repeats` timed calls).
template <class Oracle>
double KernelNsPerStep(const Oracle& oracle, LsaAlgorithm alg, const double* theta0, uint32_t steps, int repeats) {
  alignas(64) uint8_t mem[1024];
  Arena arena(mem, sizeof(mem));
  LsaHyper<double> hyper;
  hyper.algorithm = alg;
  hyper.step_size = kStep;
  hyper.local_steps = steps;
  LsaClient<double> client = *LsaClient<double>::create(arena, kDim, hyper);
  if (fedrt::algorithms::UsesControlVariate(alg)) {
    double* xi = client.mutable_control_variate();  // non-zero, as after a few rounds
    for (int i = 0; i < kDim; ++i) xi[i] = 1e-3 * (i + 1);
  }
  RoundPlan plan;
  plan.local_steps = steps;
  double best = std::numeric_limits<double>::infinity();
  for (int rep = -1; rep < repeats; ++rep) {  // rep -1: warm-up
    client.begin_round(theta0, plan);
    CounterRng rng(kSeed, 0, 0, static_cast<uint64_t>(rep + 1), RngStream::kLocalSteps);
    const auto t0 = Clock::now();
    client.run_local_steps<kDim>(oracle, rng);
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    double acc = 0;
    for (int i = 0; i < kDim; ++i) acc += client.update()[i];
    g_sink = g_sink + acc;
    if (rep >= 0) best = std::min(best, s);
  }
  return best * 1e9 / static_cast<double>(steps);
}

void Usage(FILE* f) {
  std::fputs(
      "usage: fedrt-bench [--quick] [--help]\n"
      "\n"
      "Benchmarks the fedrt TD(0) simulator and prints plain-text tables on stdout\n"
      "(progress on stderr):\n"
      "  1. simulator throughput (Garnet high heterogeneity, N=100, d=8, H=10000,\n"
      "     eta=0.01, T=20, fedlsa+scafflsa, threads 1 and 2, best of 3)\n"
      "  2. one full run (N=100, H=10000, T=50, threads=2): in-process RunExperiment\n"
      "     and the fedrt-sim binary next to this one as a child process\n"
      "  3. per-step kernel (LsaClient::run_local_steps<8>, single thread)\n"
      "\n"
      "options:\n"
      "  --quick   much smaller sizes (smoke test; numbers are not comparable to the targets)\n"
      "  --help    show this message\n",
      f);
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      quick = true;
    } else if (a == "--help" || a == "-h") {
      Usage(stdout);
      return 0;
    } else {
      std::fprintf(stderr, "fedrt-bench: unknown argument '%s'\n", a.c_str());
      Usage(stderr);
      return 2;
    }
  }
  const Sizes sz = quick ? QuickSizes() : Sizes{};
  const unsigned hw = std::thread::hardware_concurrency();

  std::printf("fedrt bench%s: hardware_concurrency=%u, build=%s, compiler=%s\n", quick ? " --quick" : "", hw,
              BuildType(), Compiler().c_str());
  if (quick) std::puts("(--quick: reduced sizes, numbers are NOT comparable with the targets)");
  Progress("machine check: 1 vs 2 threads of an ALU loop");
  const double scaling = ParallelScaling(quick ? 5000000 : 100000000, quick ? 1 : 3);
  std::printf("machine check: 2 threads of a pure ALU loop run %.2fx as fast as 1 (2.00x = two free cores)%s\n",
              scaling, scaling < 1.6 ? "  <- cores shared/contended now: 2-thread numbers are limited by the machine"
                                     : "");

  // ------------------------------------------------------------ table 1
  Title("Table 1: TD(0) simulator throughput");
  std::printf("Garnet high heterogeneity, N=%d, d=%d, H=%ld, eta=%g, T=%ld, 1 run, best of %d;\n"
              "rate = agent-steps / elapsed time of the runs (SimResult::run_seconds: problem generation excluded)\n\n",
              sz.tp_agents, kDim, sz.tp_local_steps, kStep, sz.tp_rounds, sz.tp_repeats);
  std::vector<Throughput> tp;
  for (const char* kernel : {"scalar", "auto"})  // before and after the lane kernels (docs/architecture.md)
    for (int threads : {1, 2}) {
      Throughput t;
      if (!RunThroughput(sz, threads, kernel, t)) return 1;
      tp.push_back(t);
    }
  {
    Table t({"", "kernel", "threads", "parallel over", "agent-steps/s", "ns/agent-step", "speed-up vs reference"});
    const char* lanes = fedrt::config::TdKernelName(fedrt::sim::ResolveTdKernel(fedrt::config::TdKernel::kAuto));
    for (const auto& r : tp) {
      t.row({"fedrt", std::strcmp(r.kernel, "auto") == 0 ? lanes : r.kernel, std::to_string(r.threads),
             r.threads < 2 ? "-" : r.concurrent_runs ? "runs" : "agents", Rate(r.both), Ns(1e9 / r.both),
             Speedup(r.both / kPythonStepsPerSecond)});
    }
    t.row({"SCAFFLSA authors' Python (measured on this machine)", "-", "-", "-", "~" + Rate(kPythonStepsPerSecond),
           Ns(1e9 / kPythonStepsPerSecond), "1.0x"});
    t.print();
  }
  std::puts("(agent-steps/s: FedLSA's and SCAFFLSA's agent-steps over the elapsed time of their runs, problem generation\n"
            " excluded; ns/agent-step is its inverse, per machine not per core)");
  const double two = tp.back().both;
  std::printf("target: >= 3e8 agent-steps/s with 2 threads   measured: %s agent-steps/s   %s\n", Rate(two).c_str(),
              two >= kTargetStepsPerSecond ? "PASS" : "BELOW");

  // ------------------------------------------------------------ table 2
  Title("Table 2: One full run");
  std::printf("Garnet high heterogeneity, N=%d, d=%d, H=%ld, eta=%g, T=%ld, fedlsa+scafflsa, 1 run, threads=2\n\n",
              sz.run_agents, kDim, sz.run_local_steps, kStep, sz.run_rounds);
  Progress("table 2: in-process RunExperiment (N={}, H={}, T={}, threads=2)", sz.run_agents, sz.run_local_steps,
           sz.run_rounds);
  double inproc = 0.0, alg_wall = 0.0;
  {
    const auto t0 = Clock::now();
    auto res = fedrt::sim::RunExperiment(GarnetHigh(sz.run_agents, sz.run_local_steps, sz.run_rounds, 2));
    inproc = std::chrono::duration<double>(Clock::now() - t0).count();
    if (!res.ok()) {
      std::fprintf(stderr, "fedrt-bench: RunExperiment failed: %s\n", res.status().message());
      return 1;
    }
    alg_wall = res->run_seconds;
  }

  // fedrt-sim as a child process: process start, problem generation, run, outputs.
  ChildTiming child;
  std::string child_note;
  const auto dir = SelfDir();
  const fs::path sim = dir ? *dir / "fedrt-sim" : fs::path();
  std::error_code ec;
  if (!dir || !fs::exists(sim, ec)) {
    child_note = "fedrt-sim not found next to fedrt-bench";
  } else {
    std::string tmpl = (fs::temp_directory_path(ec) / "fedrt-bench-XXXXXX").string();
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) == nullptr) {
      child_note = fmt::format("mkdtemp failed: {}", std::strerror(errno));
    } else {
      const fs::path tmp(buf.data());
      const fs::path out = tmp / "out";
      const fs::path log = tmp / "fedrt-sim.log";
      std::vector<std::string> cmd = {sim.string(),
                                      "--heterogeneity", "high",
                                      "--agents", std::to_string(sz.run_agents),
                                      "--local-steps", std::to_string(sz.run_local_steps),
                                      "--rounds", std::to_string(sz.run_rounds),
                                      "--runs", "1",
                                      "--threads", "2",
                                      "--no-plot",
                                      "--out", out.string()};
      Progress("table 2: child process fedrt-sim (N={}, H={}, T={}, threads=2, --no-plot)", sz.run_agents,
               sz.run_local_steps, sz.run_rounds);
      child = TimeChild(cmd, log);
      if (!child.ran) {
        child_note = child.error;
      } else if (child.exit_code != 0) {
        child_note = fmt::format("fedrt-sim exited with {}", child.exit_code);
        std::fprintf(stderr, "fedrt-bench: fedrt-sim failed (exit %d); its output:\n%s\n", child.exit_code,
                     Tail(log, 2000).c_str());
      }
      fs::remove_all(tmp, ec);
    }
  }
  {
    auto verdict = [&](double s) { return s < kTargetRunSeconds ? "PASS" : "BELOW"; };
    Table t({"", "wall time", "target", "status"});
    t.row({"fedrt RunExperiment, in-process (problem generation included)", Seconds(inproc), "< 2.5 s",
           verdict(inproc)});
    t.row({"  of which the runs (run_seconds)", Seconds(alg_wall), "", ""});
    if (child.ran && child.exit_code == 0) {
      t.row({"fedrt-sim child process (start + run + metrics.csv/summary.json)", Seconds(child.seconds), "< 2.5 s",
             verdict(child.seconds)});
    } else {
      t.row({"fedrt-sim child process (start + run + metrics.csv/summary.json)", "n/a", "< 2.5 s", child_note});
    }
    t.row({"SCAFFLSA authors' Python (one run, measured on this machine)", kPythonRunSeconds, "", "reference"});
    t.print();
  }
  std::puts("(`./fedrt sim` runs the fedrt-sim binary timed above, after the script's own start-up;"
            " --no-plot skips the plots)");

  // ------------------------------------------------------------ table 3
  Title("Table 3: Per-step kernel");
  Progress("table 3: generating the Garnet problem for the kernel");
  fedrt::problems::GarnetConfig g;
  g.agents = quick ? sz.run_agents : 100;
  g.dim = kDim;
  g.heterogeneity = fedrt::problems::Heterogeneity::kHigh;
  g.seed = kSeed;
  auto problem = fedrt::problems::GenerateGarnet(g);
  if (!problem.ok()) {
    std::fprintf(stderr, "fedrt-bench: GenerateGarnet failed: %s\n", problem.status().message());
    return 1;
  }
  const fedrt::problems::TdProblem& p = *problem;
  const int agent = 0;
  const size_t n = static_cast<size_t>(p.n_states);
  std::vector<uint8_t> oracle_mem(sizeof(double) * n * p.dim +
                                  n * n * (sizeof(fedrt::problems::TdTransition<double>) + 24) +
                                  sizeof(double) * (p.dim * p.dim + 2 * p.dim) + 16 * Arena::kAlignment);
  Arena oracle_arena(oracle_mem.data(), oracle_mem.size());
  const std::vector<double> joint = p.joint_law(agent);
  auto td = fedrt::problems::TdOracle<double>::create(oracle_arena, p.dim, p.n_states, p.gamma, p.phi.data(),
                                                      p.reward[agent].data(), joint.data());
  if (!td.ok()) {
    std::fprintf(stderr, "fedrt-bench: TdOracle::create failed: %s\n", td.status().message());
    return 1;
  }
  auto ex = fedrt::problems::ExpectedLsaOracle<double>::create(oracle_arena, p.lsa.dim, p.lsa.abar[agent].data(),
                                                               p.lsa.bbar[agent].data());
  if (!ex.ok()) {
    std::fprintf(stderr, "fedrt-bench: ExpectedLsaOracle::create failed: %s\n", ex.status().message());
    return 1;
  }
  std::vector<double> theta0(kDim);
  for (int i = 0; i < kDim; ++i) theta0[i] = p.lsa.theta_star[i] + 1.0;

  std::printf("single thread, LsaClient<double>::run_local_steps<%d>, agent %d of a Garnet high-heterogeneity "
              "instance\n(%d states, %u alias atoms), %u steps per call, best of %d calls\n\n",
              kDim, agent, p.n_states, td->atoms(), sz.kernel_steps, sz.kernel_repeats);
  struct KernelRow {
    std::string oracle;
    LsaAlgorithm alg;
    double ns;
  };
  std::vector<KernelRow> krows;
  for (LsaAlgorithm alg : {LsaAlgorithm::kFedLsa, LsaAlgorithm::kScaffLsa}) {
    Progress("table 3: TdOracle<double> {}", LsaAlgorithmName(alg));
    krows.push_back({"TdOracle<double> (stochastic, alias table)", alg,
                     KernelNsPerStep(*td, alg, theta0.data(), sz.kernel_steps, sz.kernel_repeats)});
  }
  for (LsaAlgorithm alg : {LsaAlgorithm::kFedLsa, LsaAlgorithm::kScaffLsa}) {
    Progress("table 3: ExpectedLsaOracle<double> {}", LsaAlgorithmName(alg));
    krows.push_back({"ExpectedLsaOracle<double> (noise-free, Abar theta)", alg,
                     KernelNsPerStep(*ex, alg, theta0.data(), sz.kernel_steps, sz.kernel_repeats)});
  }
  {
    Table t({"oracle", "kernel", "ns/step", "steps/s (1 thread)"});
    for (const auto& r : krows) t.row({r.oracle, LsaAlgorithmName(r.alg), Ns(r.ns), Rate(1e9 / r.ns)});
    t.print();
  }
  Progress("done (checksum {:.6g})", static_cast<double>(g_sink));
  return 0;
}
