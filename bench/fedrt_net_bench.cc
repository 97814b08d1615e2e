// fedrt-net-bench: load benchmark of the real system on loopback. Starts a
// fedrt-coordinator process and N authenticated device sessions (PSK, TLS
// 1.3) driven by the real device code (device/driver.h RunDevice, one thread
// per device, many devices per process), runs a few rounds, and prints
// handshakes per second, round latency and the coordinator's memory:
// baseline (code, and each provisioned device's registry entry), per
// connection (TLS session and its record buffers, docs/scale.md) and the
// aggregation state (LsaServer: 2 d doubles, independent of N).
//
//   fedrt-net-bench [--devices 1000,5000] [--rounds 3] [--no-forward-secrecy]
//
// Devices offer psk_dhe_ke (PSK + X25519), which the coordinator picks unless
// --no-forward-secrecy sets network.psk_forward_secrecy = false (psk_ke:
// no X25519 on either side, docs/tls.md).

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <mbedtls/ctr_drbg.h>

#include "fedrt/device/driver.h"
#include "fedrt/tls/tls.h"
#include "fedrt/problems/instance.h"
#include "fedrt/config/experiment.h"
#include "fedrt/cli/parse.h"
#include "fedrt/config/task_builder.h"

using namespace fedrt;
namespace fs = std::filesystem;

namespace {

long ProcKb(pid_t pid, const char* key) {
  std::ifstream in(fmt::format("/proc/{}/status", pid));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) return std::atol(line.c_str() + std::strlen(key));
  }
  return -1;
}

std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct DeviceThread {
  net::DeviceOptions opt;
  pthread_t tid{};
  Status status = Status::Ok();
};

void* DeviceMain(void* arg) {
  auto* d = static_cast<DeviceThread*>(arg);
  d->status = net::RunDevice(d->opt);
  return nullptr;
}

struct Row {
  int n = 0;
  double handshake_s = 0, handshakes_per_s = 0;
  double round_ms_mean = 0, round_ms_max = 0;
  long base_kb = 0, connected_kb = 0, peak_kb = 0;
  int failed = 0;
};

int RunOne(const std::string& bin_dir, const fs::path& work, int n, int rounds, bool forward_secrecy, Row& row) {
  fs::remove_all(work);
  fs::create_directories(work / "keys");
  // Registry of N PSK devices (the microcontroller path; no certificates needed).
  net::TlsRandom rng;
  if (!rng.init("fedrt-net-bench").ok()) return 1;
  std::string reg;
  std::vector<std::string> psk_files(n);
  for (int i = 0; i < n; ++i) {
    unsigned char k[32];
    mbedtls_ctr_drbg_random(rng.drbg(), k, sizeof k);
    const std::string hex = net::BytesToHex(k, sizeof k);
    const std::string id = fmt::format("dev{:05d}", i);
    reg += fmt::format("{}\t{}\t{}\n", id, i, hex);
    psk_files[i] = (work / "keys" / (id + ".psk")).string();
    std::ofstream(psk_files[i]) << hex << "\n";
  }
  std::ofstream(work / "keys" / "registry.tsv") << reg;
  const std::string cfg = fmt::format(
      "[problem]\nkind = \"garnet\"\nheterogeneity = \"high\"\nagents = {}\nnoise_free = true\n"
      "[algorithm]\nnames = [\"scafflsa\"]\nlocal_steps = 10\n[run]\nrounds = {}\nseed = 1\n"
      "[network]\nauth = \"psk\"\ndeadline_ms = 120000\nstart_timeout_ms = 300000\npsk_forward_secrecy = {}\n",
      n, rounds, forward_secrecy);
  std::ofstream(work / "experiment.toml") << cfg;

  const pid_t co = fork();
  if (co == 0) {
    const int fd = ::open((work / "coordinator.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    dup2(fd, 1);
    const std::string b = bin_dir + "/fedrt-coordinator";
    const std::string c = (work / "experiment.toml").string(), k = (work / "keys").string(),
                      s = (work / "state.db").string(), pf = (work / "port").string(), o = (work / "out").string();
    execl(b.c_str(), b.c_str(), "--config", c.c_str(), "--keys", k.c_str(), "--state", s.c_str(), "--port", "0",
          "--port-file", pf.c_str(), "--out", o.c_str(), "--no-plot", static_cast<char*>(nullptr));
    _exit(127);
  }
  int port = 0;
  for (int i = 0; i < 600 && port == 0; ++i) {
    const std::string s = Slurp(work / "port");
    if (!s.empty() && s.back() == '\n') port = std::stoi(s);
    else std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (port == 0) {
    std::fprintf(stderr, "coordinator did not start:\n%s\n", Slurp(work / "coordinator.log").c_str());
    kill(co, SIGKILL);
    waitpid(co, nullptr, 0);
    return 1;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  row.base_kb = ProcKb(co, "VmRSS:");

  // The devices share one problem instance (built as each device would from the task).
  config::ExperimentConfig exp;
  if (!config::LoadExperimentToml((work / "experiment.toml").string(), exp).ok()) return 1;
  auto task = config::MakeTask(exp);
  if (!task.ok()) return 1;
  auto instance = problems::Instance::Build(*task, {});
  if (!instance.ok()) return 1;
  net::DeviceHooks hooks;
  hooks.instance = instance->get();
  std::vector<DeviceThread> devs(static_cast<size_t>(n));
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    auto& d = devs[static_cast<size_t>(i)];
    d.opt.port = static_cast<uint16_t>(port);
    d.opt.id = fmt::format("dev{:05d}", i);
    d.opt.credentials.identity = d.opt.id;
    d.opt.credentials.psk_file = psk_files[static_cast<size_t>(i)];
    d.opt.quiet = true;
    d.opt.hooks = &hooks;
    d.opt.give_up_ms = 120000;
    pthread_create(&d.tid, &attr, DeviceMain, &d);
  }
  // All registered: the coordinator logs "start devices=N of N".
  const fs::path log = work / "coordinator.log";
  for (int i = 0; i < 6000; ++i) {
    if (Slurp(log).find("coordinator start devices=") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  row.handshake_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  {  // Every device registered, or the start timeout with fewer: count those as failed.
    const std::string text = Slurp(log);
    const auto p = text.find("coordinator start devices=");
    if (p != std::string::npos) {
      const int started = std::atoi(text.c_str() + p + std::strlen("coordinator start devices="));
      if (started < n)
        std::fprintf(stderr, "[net-bench] N=%d: only %d devices registered before the start timeout\n", n, started);
      row.failed = std::max(0, n - started);
    }
  }
  row.handshakes_per_s = n / row.handshake_s;
  row.connected_kb = ProcKb(co, "VmRSS:");
  long hwm = 0;
  int st = 0;
  for (;;) {
    const long h = ProcKb(co, "VmHWM:");
    if (h > 0) hwm = h;
    if (waitpid(co, &st, WNOHANG) == co) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  row.peak_kb = hwm;
  int errors = 0;  // devices that ended with an error (those never registered among them)
  for (auto& d : devs) {
    pthread_join(d.tid, nullptr);
    if (!d.status.ok()) ++errors;
  }
  row.failed = std::max(row.failed, errors);
  pthread_attr_destroy(&attr);
  // Round latency from the coordinator's per-round log lines.
  std::istringstream in(Slurp(log));
  std::string line;
  int k = 0;
  while (std::getline(in, line)) {
    const auto p = line.find("latency_ms=");
    if (line.find(" round alg=") == std::string::npos || p == std::string::npos) continue;
    const double ms = std::atof(line.c_str() + p + 11);
    row.round_ms_mean += ms;
    row.round_ms_max = std::max(row.round_ms_max, ms);
    ++k;
  }
  if (k > 0) row.round_ms_mean /= k;
  row.n = n;
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 && k == rounds ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes = {1000, 5000};
  int rounds = 3;
  bool no_forward_secrecy = false;
  CLI::App app{"fedrt-net-bench: one coordinator and N devices over TLS on loopback (a table per N)", "fedrt-net-bench"};
  app.add_option("--devices", sizes, "fleet sizes, comma-separated")->delimiter(',')->check(CLI::Range(1, 1000000));
  app.add_option("--rounds", rounds, "rounds per fleet")->check(CLI::Range(1, 1000000));
  app.add_flag("--no-forward-secrecy", no_forward_secrecy, "plain PSK handshakes (no ECDHE)");
  if (int rc = 0; !fedrt::cli::Parse(app, argc, argv, &rc)) return rc;
  const bool forward_secrecy = !no_forward_secrecy;
  rlimit nofile{};
  getrlimit(RLIMIT_NOFILE, &nofile);
  nofile.rlim_cur = nofile.rlim_max;
  setrlimit(RLIMIT_NOFILE, &nofile);  // inherited by the coordinator
  const std::string bin_dir = fs::canonical("/proc/self/exe").parent_path().string();
  const fs::path work = fs::temp_directory_path() / fmt::format("fedrt-net-bench-{}", getpid());
  const int d = 8;
  std::printf("\nnetwork load: real coordinator process, N %s TLS 1.3 device sessions (real device code, one thread each),\n"
              "Garnet d=%d, SCAFFLSA, H=10, %d rounds, loopback. Memory is the coordinator's resident set.\n",
              forward_secrecy ? "PSK + X25519" : "PSK", d, rounds);
  std::printf("%7s %10s %12s %14s %13s %12s %14s %12s %16s %14s %7s\n", "N", "connect s", "handshakes/s",
              "round ms mean", "round ms max", "base MiB", "connected MiB", "peak MiB", "per-conn KiB", "aggr. state B",
              "failed");
  std::fflush(stdout);
  for (int n : sizes) {
    if (n <= 0 || static_cast<rlim_t>(n) + 64 > nofile.rlim_cur) {
      std::fprintf(stderr, "fedrt-net-bench: %d devices need more file descriptors (limit %lu)\n", n,
                   static_cast<unsigned long>(nofile.rlim_cur));
      return 2;
    }
    Row r;
    std::fprintf(stderr, "[net-bench] N=%d: coordinator process + %d device sessions (threads) on 127.0.0.1 ...\n", n, n);
    if (RunOne(bin_dir, work / std::to_string(n), n, rounds, forward_secrecy, r) != 0) {
      std::fprintf(stderr, "fedrt-net-bench: run with N=%d failed (logs in %s)\n", n,
                   (work / std::to_string(n)).c_str());
      return 1;
    }
    const double per_conn = static_cast<double>(r.connected_kb - r.base_kb) / r.n;
    std::printf("%7d %10.2f %12.0f %14.1f %13.1f %12.1f %14.1f %12.1f %16.1f %14d %7d\n", r.n, r.handshake_s,
                r.handshakes_per_s, r.round_ms_mean, r.round_ms_max, r.base_kb / 1024.0, r.connected_kb / 1024.0,
                r.peak_kb / 1024.0, per_conn, 2 * d * 8, r.failed);
    std::fflush(stdout);
  }
  std::printf("base = after startup (code, and per provisioned device its registry entry, PSK and dashboard row);\n"
              "connected - base = TLS sessions (2048-byte records once the handshake ends) and connection state;\n"
              "aggr. state = LsaServer theta + running sum (2 d doubles), the same for every N; peak - connected =\n"
              "per-connection outgoing frames during a round. docs/scale.md explains each part.\n");
  fs::remove_all(work);
  return 0;
}
