// fedrt-model-bench: what large models cost on a loopback fleet (issue
// "Large models", the benchmark): for each d and N, a real fedrt-coordinator
// and N fedrt-device processes over TLS run FedAvg on ridge least squares
// (two samples each, one local step on one of them, so the round is transfer,
// not work) and the table gives the median round time, the model bytes moved per round (the
// broadcast down and the updates up, from metrics.csv), their rate through
// TLS, the coordinator's peak RSS, and the same machine's ChaCha20-Poly1305
// throughput measured here over 2048-byte records (the suite and record size
// fedrt-device negotiates: ECDHE-PSK, max_fragment_length 2048), so the rate
// reads as a fraction of the cipher's. The
// coordinator runs with problem.coordinator_generates = false (the devices
// generate the data, the coordinator holds none), so its RSS is the
// protocol's; --coordinator-generates measures it holding every agent's data
// too, as it does to report the error.
//
//   fedrt-model-bench [--dims 1024,8192,65536] [--devices 10] [--rounds 12] [--coordinator-generates] [--keep DIR]

#include <mbedtls/chachapoly.h>

#include <chrono>
#include <cstring>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "fleet_procs.h"

namespace fs = std::filesystem;
using namespace fedrt::bench;

namespace {

// The record size fedrt-device asks for (runtime/src/tls/tls.cc, kDeviceMaxFragment).
constexpr size_t kRecordBytes = 2048;

// Seals `total` bytes in kRecordBytes records with seal(seq, in, out) (each with a TLS record's
// 13 bytes of additional data and an 8-byte sequence number in its nonce), bytes per second.
template <class Seal>
double SealBytesPerSecond(size_t total, Seal seal) {
  std::vector<unsigned char> in(kRecordBytes, 0x5a), out(kRecordBytes);
  const auto t0 = std::chrono::steady_clock::now();
  size_t done = 0;
  for (uint64_t seq = 0; done < total; ++seq, done += in.size()) seal(seq, in, out);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return static_cast<double>(done) / s;
}

// ChaCha20-Poly1305, bytes per second: the cipher of fedrt-device's TLS 1.3 sessions.
double ChachaBytesPerSecond(size_t total) {
  mbedtls_chachapoly_context ctx;
  mbedtls_chachapoly_init(&ctx);
  unsigned char key[32];
  for (int i = 0; i < 32; ++i) key[i] = static_cast<unsigned char>(i + 1);
  mbedtls_chachapoly_setkey(&ctx, key);
  unsigned char nonce[12] = {0}, aad[13] = {0}, tag[16];
  const double rate = SealBytesPerSecond(total, [&](uint64_t seq, const auto& in, auto& out) {
    std::memcpy(nonce + 4, &seq, 8);
    mbedtls_chachapoly_encrypt_and_tag(&ctx, in.size(), nonce, aad, sizeof aad, in.data(), out.data(), tag);
  });
  mbedtls_chachapoly_free(&ctx);
  return rate;
}

// MemAvailable (free pages plus the page cache the kernel can drop).
double AvailableBytes() {
  std::istringstream in(Slurp("/proc/meminfo"));
  for (std::string key; in >> key;) {
    double kb = 0;
    in >> kb;
    if (key == "MemAvailable:") return kb * 1024.0;
    in.ignore(256, '\n');
  }
  return static_cast<double>(sysconf(_SC_AVPHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

struct Row {
  double median_ms = 0, p99_ms = 0, bytes = 0;
  long rss_kb = 0;
  bool ok = false;
};

Row Measure(const std::string& bin, const fs::path& work, int d, int n, int rounds, bool coordinator_generates,
            bool forward_secrecy) {
  const std::string cfg = fmt::format(
      "[problem]\nkind = \"lsq\"\nagents = {}\ndim = {}\nsamples = 2\nl2 = 0.1\ncoordinator_generates = {}\n"
      "[algorithm]\nnames = [\"fedavg\"]\nstep = 0.0001\nlocal_steps = 1\nbatch = 1\n"
      "[run]\nrounds = {}\nseed = 1\n[network]\ndeadline_ms = 120000\nstart_timeout_ms = 120000\n"
      "psk_forward_secrecy = {}\n",
      n, d, coordinator_generates, rounds, forward_secrecy);
  Row r;
  const FleetRun run = RunFleet(bin, work, cfg, n, /*device_state=*/false, "fedrt-model-bench", 1800);
  if (run.log.empty()) return r;
  std::vector<double> ms;
  std::istringstream in(run.log);
  for (std::string line; std::getline(in, line);) {
    if (line.find(" coordinator round alg=") == std::string::npos) continue;
    const std::string round = Word(line, "round");
    if (round == "1" || round == "2") continue;  // connections and allocations warming up
    ms.push_back(Field(line, "latency_ms"));
  }
  // metrics.csv: algorithm,run,round,error,agents,bits_up,bits_down,...; rounds 3.. as above.
  std::istringstream csv(Slurp(work / "out" / "metrics.csv"));
  std::string line;
  std::getline(csv, line);
  double bits = 0;
  int rows = 0;
  while (std::getline(csv, line)) {
    std::vector<std::string> f;
    std::istringstream cells(line);
    for (std::string c; std::getline(cells, c, ',');) f.push_back(c);
    if (f.size() < 7 || std::stoi(f[2]) < 3) continue;
    bits += std::stod(f[5]) + std::stod(f[6]);
    ++rows;
  }
  r.median_ms = Quantile(ms, 0.5);
  r.p99_ms = Quantile(ms, 0.99);
  r.bytes = rows > 0 ? bits / 8.0 / rows : 0.0;
  r.rss_kb = run.coordinator_rss_kb;
  r.ok = !ms.empty() && rows > 0;
  return r;
}

std::vector<int> Ints(const std::string& list) {
  std::vector<int> out;
  std::istringstream in(list);
  for (std::string x; std::getline(in, x, ',');) out.push_back(std::stoi(x));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fedrt-model-bench: round time, model bytes through TLS, coordinator RSS and the cipher's own "
               "throughput for large models on a loopback fleet"};
  std::string dims = "10000,100000,1000000,10000000", devices = "10,100";
  int rounds = 6;
  std::string keep;
  bool coordinator_generates = false;
  app.add_option("--dims", dims,
                 "model dimensions d, comma-separated (above 2040 the models travel in chunks; Linux devices take "
                 "FedAvg up to d = 2^27, task/limits.h)");
  app.add_option("--devices", devices, "device counts N, comma-separated");
  app.add_option("--rounds", rounds, "rounds per run (rounds 1 and 2 left out)")->check(CLI::Range(4, 10000));
  app.add_flag("--coordinator-generates", coordinator_generates,
               "the coordinator generates every agent's data too (N x 2 samples x d), to report the error");
  app.add_option("--keep", keep, "keep the runs' files in this directory");
  bool no_forward_secrecy = false;
  app.add_flag("--no-forward-secrecy", no_forward_secrecy,
               "network.psk_forward_secrecy = false: TLS 1.3 psk_ke (the PSK alone) instead of psk_dhe_ke "
               "(with an X25519 exchange)");
  CLI11_PARSE(app, argc, argv);
  const std::string bin = fs::canonical("/proc/self/exe").parent_path().string();
  const fs::path work =
      keep.empty() ? fs::temp_directory_path() / fmt::format("fedrt-model-bench-{}", getpid()) : fs::path(keep);
  const bool fs_on = !no_forward_secrecy;
  const char* cipher_name = "ChaCha20-Poly1305";
  const double cipher = ChachaBytesPerSecond(size_t{256} << 20);
  std::printf("large models on loopback: FedAvg, ridge least squares, 2 samples per device, 1 local step on 1, fedrt-device "
              "processes over TLS 1.3 (%s, %s, 2048-byte records), %d rounds per run (rounds 1-2 left out); the coordinator "
              "%s\n",
              fs_on ? "psk_dhe_ke" : "psk_ke", cipher_name, rounds, coordinator_generates ? "generates every agent's data (problem.coordinator_generates = true)"
                                            : "holds no agent's data (problem.coordinator_generates = false)");
  std::printf("%s on this machine, one core, %zu-byte records: %.1f MB/s\n", cipher_name, kRecordBytes, cipher / 1e6);
  std::printf("%8s %5s %10s %10s %12s %10s %10s %14s %14s %11s %13s\n", "d", "N", "median ms", "p99 ms", "MB/round",
              "MB/s", "of cipher", "coord RSS MB", "RSS B/coord", "budget MB", "RSS-budget MB");
  int failed = 0;
  for (int d : Ints(dims)) {
    for (int n : Ints(devices)) {
      // The devices run on this machine too: each holds its state (about 100 bytes per coordinate for
      // FedAvg), its data (16) and its buffers: a peak near 130 bytes per coordinate. A row that would
      // not fit in MemAvailable is skipped rather than swapping.
      const double need = static_cast<double>(n) * (130.0 * d + 30e6) + 400.0 * d;
      const double avail = AvailableBytes();
      if (need > 0.9 * avail) {
        std::printf("%8d %5d  skipped: the devices would need about %.1f GB, this machine has %.1f GB available\n", d, n,
                    need / 1e9, avail / 1e9);
        continue;
      }
      std::fprintf(stderr, "[model-bench] d=%d N=%d ...\n", d, n);
      const Row r = Measure(bin, work / fmt::format("d{}-n{}", d, n), d, n, rounds, coordinator_generates, fs_on);
      if (!r.ok) {
        ++failed;
        std::printf("%8d %5d  failed (see above)\n", d, n);
        continue;
      }
      const double rate = r.bytes / (r.median_ms / 1e3);
      const double budget = 64.0 * d + 65536.0 * n;  // 8 float64 d-vectors and 64 KiB per connection
      const double rss = r.rss_kb * 1024.0;
      std::printf("%8d %5d %10.2f %10.2f %12.3f %10.1f %9.1f%% %14.1f %14.2f %11.1f %13.1f\n", d, n, r.median_ms,
                  r.p99_ms, r.bytes / 1e6, rate / 1e6, 100.0 * rate / cipher, rss / 1e6, rss / d, budget / 1e6,
                  (rss - budget) / 1e6);
    }
  }
  std::printf("MB/round: payload bytes of the broadcast (N x 8 d down) and the updates (N x 8 d up), framing and TLS\n"
              "records not counted; MB/s = MB/round / median round; of cipher = that rate over one core's rate of the suite's cipher\n"
              "(every byte is sealed once and opened once, by processes sharing the machine's cores);\n"
              "B/coord = the coordinator's peak RSS over d; budget = 8 d-vectors of float64 and 64 KiB per\n"
              "connection (64 d + 65536 N bytes), the large-models issue's target.\n%s\n",
              coordinator_generates
                  ? "The coordinator generated every agent's data to report the error (N x 2 samples x d doubles,\n"
                    "64 N bytes per coordinate); without --coordinator-generates it holds none."
                  : "The coordinator generated no agent's data (problem.coordinator_generates = false: error = nan,\n"
                    "the model in model_fedavg.npy), so its RSS is the protocol's: the server state with the\n"
                    "aggregate's exact sums, the round's messages and the connections' buffers.");
  if (keep.empty()) fs::remove_all(work);
  return failed == 0 ? 0 : 1;
}
