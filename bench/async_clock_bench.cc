// The virtual clock at fleet scale (docs/async.md, "Scale of the virtual
// clock"): N simulated devices (default 100,000) with diurnal availability,
// as the built-in pattern and as a trace file of one online interval per
// device and day, under buffered asynchronous jobs (concurrency C). The
// schedule runs alone (no local work: each job costs its device's
// download, n examples at its speed and upload, as the simulator charges
// them), so the table shows what the clock itself costs: events and
// decisions per second of wall time, the clock's and the schedule's memory,
// and the process's peak resident memory.
//
//   fedrt-clock-bench [--devices 100000] [--days 7] [--concurrency 1000] [--examples 320]

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "bench_table.h"
#include "fedrt/sim/async_schedule.h"
#include "fedrt/sim/device_clock.h"

namespace {

using fedrt::sim::AsyncSchedule;
using fedrt::sim::DeviceClock;

long PeakRssKib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

struct Outcome {
  double build_s = 0, run_s = 0, virtual_days = 0;
  uint64_t events = 0, decisions = 0, arrivals = 0, lost = 0;
  size_t clock_bytes = 0, schedule_bytes = 0;
};

Outcome Run(const fedrt::config::DevicesSettings& d, uint32_t n, double days, uint32_t concurrency, uint64_t examples) {
  Outcome o;
  const auto t0 = std::chrono::steady_clock::now();
  auto clock = DeviceClock::Build(d, n, 1);
  if (!clock.ok()) {
    std::fprintf(stderr, "fedrt-clock-bench: %s\n", clock.status().message());
    std::exit(1);
  }
  const auto t1 = std::chrono::steady_clock::now();
  AsyncSchedule s;
  s.init(*clock, concurrency, 1, 0);
  const double end = days * DeviceClock::kDay;
  while (true) {
    const AsyncSchedule::Decision x = s.next();
    if (x.kind == AsyncSchedule::Decision::Kind::kEnd || x.t > end) break;
    ++o.decisions;
    if (x.kind == AsyncSchedule::Decision::Kind::kDispatch) {
      const uint32_t c = x.agent;  // a d = 100 model down and up, n examples of work
      s.cost(c, clock->job_s(c, 800, examples, 800));
    } else if (x.kind == AsyncSchedule::Decision::Kind::kArrive) {
      ++o.arrivals;
    } else if (x.kind == AsyncSchedule::Decision::Kind::kAbandon) {
      ++o.lost;
    }
  }
  const auto t2 = std::chrono::steady_clock::now();
  o.build_s = std::chrono::duration<double>(t1 - t0).count();
  o.run_s = std::chrono::duration<double>(t2 - t1).count();
  o.events = s.events();
  o.virtual_days = s.now() / DeviceClock::kDay;
  o.clock_bytes = clock->bytes();
  o.schedule_bytes = s.bytes();
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("fedrt-clock-bench: the virtual clock of buffered asynchronous rounds at fleet scale");
  uint32_t n = 100000, concurrency = 1000;
  double days = 7;
  uint64_t examples = 320;
  app.add_option("--devices", n, "simulated devices");
  app.add_option("--days", days, "virtual days to run");
  app.add_option("--concurrency", concurrency, "jobs out at once");
  app.add_option("--examples", examples, "examples one job reads (local steps x batch)");
  CLI11_PARSE(app, argc, argv);

  fedrt::config::DevicesSettings d;
  d.present = true;
  d.speed = {fedrt::config::Distribution::Kind::kLognormal, 1.0, 0.0, 0.7};
  d.bandwidth_mbps = {fedrt::config::Distribution::Kind::kLognormal, 1.0, 1.0, 0.5};
  d.availability = "diurnal";
  // The same pattern written out as a trace: one interval per device and day.
  auto pattern = DeviceClock::Build(d, n, 1);
  const std::string trace = (std::filesystem::temp_directory_path() / "fedrt-clock-bench-trace.csv").string();
  {
    std::ofstream f(trace);
    f << "device,start_s,end_s\n";
    for (uint32_t c = 0; c < n; ++c)
      for (double t = 0; t < (days + 1) * DeviceClock::kDay;) {
        const double on = pattern->next_online(c, t);
        if (on == DeviceClock::kNever || on >= (days + 1) * DeviceClock::kDay) break;
        const double off = pattern->online_until(c, on);
        f << c << ',' << fmt::format("{:.3f}", on) << ',' << fmt::format("{:.3f}", off) << '\n';
        t = off;
      }
  }
  const uint64_t trace_bytes = std::filesystem::file_size(trace);
  std::printf("fedrt-clock-bench: %u devices, diurnal availability, %.0f virtual days, concurrency %u, %llu examples "
              "per job\n\n",
              n, days, concurrency, static_cast<unsigned long long>(examples));
  fedrt::bench::Table t({"availability", "build s", "run s", "events", "events/s", "decisions/s", "jobs done",
                         "jobs lost", "virtual days", "clock MiB", "schedule MiB"});
  for (int k = 0; k < 2; ++k) {
    fedrt::config::DevicesSettings run = d;
    if (k == 1) run.availability = trace;
    const Outcome o = Run(run, n, days, concurrency, examples);
    t.row({k == 0 ? "diurnal pattern" : fmt::format("trace ({:.1f} MB)", trace_bytes / 1e6), fmt::format("{:.2f}", o.build_s),
           fmt::format("{:.2f}", o.run_s), fmt::format("{}", o.events), fmt::format("{:.3g}", o.events / o.run_s),
           fmt::format("{:.3g}", o.decisions / o.run_s), fmt::format("{}", o.arrivals), fmt::format("{}", o.lost),
           fmt::format("{:.2f}", o.virtual_days), fmt::format("{:.1f}", o.clock_bytes / 1048576.0),
           fmt::format("{:.1f}", o.schedule_bytes / 1048576.0)});
  }
  t.print();
  std::printf("\npeak resident memory of this process: %.1f MiB\n", PeakRssKib() / 1024.0);
  std::filesystem::remove(trace);
  return 0;
}
