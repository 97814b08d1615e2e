// fedrt-privacy: the privacy accountant from the command line (docs/privacy-accounting.md):
//   epsilon  (epsilon, delta) after rounds of the subsampled Gaussian mechanism;
//   noise    the smallest noise multiplier that reaches a target epsilon.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "fedrt/cli/parse.h"
#include "fedrt/privacy/rdp_accountant.h"

namespace {

namespace privacy = fedrt::privacy;
using fedrt::Status;

// The accountant names its parameters as the [privacy] keys and Python do;
// here they are flags. Exit 2 for a value out of range, 1 for an answer that
// does not exist (docs/cli.md, "Exit codes").
int Fail(const Status& st) {
  std::string msg = st.message();
  static const std::pair<const char*, const char*> kFlags[] = {
      {"noise_multiplier", "--noise-multiplier"}, {"rate", "--rate"},   {"rounds", "--rounds"},
      {"delta", "--delta"},                       {"epsilon", "--epsilon"}};
  for (const auto& [key, flag] : kFlags) {
    const std::string k = key;
    if (msg.compare(0, k.size(), k) == 0 && (msg.size() == k.size() || msg[k.size()] == ' ')) {
      msg = flag + msg.substr(k.size());
      break;
    }
  }
  std::fprintf(stderr, "fedrt-privacy: error: %s\n", msg.c_str());
  return st.code() == fedrt::StatusCode::kInvalidArgument ? fedrt::cli::kUsageError : 1;
}

std::vector<int> OrdersUpTo(int max_order) {
  std::vector<int> orders;
  for (int a = 2; a <= max_order; ++a) orders.push_back(a);
  return orders;
}

// `x` rounded up to 6 significant digits (a noise multiplier never printed below the answer, to the solver's 1e-9).
double RoundUp6(double x) {
  if (!(x > 0.0)) return x;
  const double scale = std::pow(10.0, 5 - static_cast<int>(std::floor(std::log10(x))));
  return std::ceil(x * scale * (1.0 - 1e-9)) / scale;  // 1e-9: below the solver's own tolerance
}

struct Flags {
  std::vector<double> rate, noise;
  std::vector<uint64_t> rounds;
  double delta = 1e-5, epsilon = 0.0;
  int max_order = 256;
};

int EpsilonMode(const Flags& f) {
  if (f.rate.size() != f.noise.size() || f.rate.size() != f.rounds.size())
    return Fail(Status::Invalid(fmt::format("one value per phase needed in --rate, --noise-multiplier and --rounds; "
                                            "got {}, {} and {}", f.rate.size(), f.noise.size(), f.rounds.size())));
  std::vector<privacy::Phase> phases;
  uint64_t total = 0;
  for (size_t i = 0; i < f.rate.size(); ++i) {
    phases.push_back({f.rate[i], f.noise[i], f.rounds[i]});
    total += f.rounds[i];
  }
  auto r = privacy::Epsilon(phases, f.delta, OrdersUpTo(f.max_order));
  if (!r.ok()) return Fail(r.status());
  std::printf("rounds         %llu\n", static_cast<unsigned long long>(total));
  std::printf("delta          %g\n", f.delta);
  std::printf("orders         2..%d\n", f.max_order);
  if (r->order == 0) {  // no order has finite RDP: a noise multiplier of 0
    std::printf("epsilon        inf (no order has finite RDP)\nepsilon_tight  inf\n");
    return 0;
  }
  std::printf("epsilon        %.6g (RDP, classic conversion, order %d)\n", r->epsilon, r->order);
  std::printf("epsilon_tight  %.6g (RDP, tight conversion, order %d)\n", r->epsilon_tight, r->order_tight);
  return 0;
}

int NoiseMode(const Flags& f) {
  if (f.rate.size() != 1 || f.rounds.size() != 1)
    return Fail(Status::Invalid("noise takes one --rate and one --rounds"));
  const std::vector<int> orders = OrdersUpTo(f.max_order);
  std::string answers;  // both answers first: an error prints nothing on stdout
  for (auto c : {privacy::Conversion::kClassic, privacy::Conversion::kTight}) {
    const bool classic = c == privacy::Conversion::kClassic;
    auto s = privacy::NoiseMultiplierFor(f.epsilon, f.rate[0], f.rounds[0], f.delta, c, orders);
    if (!s.ok()) return Fail(s.status());
    const double sigma = RoundUp6(*s);
    auto e = privacy::Epsilon({{f.rate[0], sigma, f.rounds[0]}}, f.delta, orders);
    if (!e.ok()) return Fail(e.status());
    answers += fmt::format("{:<23} {:.6g} ({} {:.6g} at order {})\n",
                           classic ? "noise_multiplier" : "noise_multiplier_tight", sigma, classic ? "epsilon" : "epsilon_tight", classic ? e->epsilon : e->epsilon_tight,
                           classic ? e->order : e->order_tight);
  }
  std::printf("rounds                  %llu at rate %g\n", static_cast<unsigned long long>(f.rounds[0]), f.rate[0]);
  std::printf("delta                   %g\n", f.delta);
  std::printf("orders                  2..%d\n", f.max_order);
  std::printf("%s", answers.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fedrt-privacy: RDP accountant of the subsampled Gaussian mechanism (docs/privacy-accounting.md)"};
  app.require_subcommand(1);
  Flags f;
  CLI::App* eps = app.add_subcommand("epsilon", "epsilon after rounds at a rate and noise multiplier");
  eps->add_option("--rate", f.rate, "q: each device's chance of taking part in a round (phases: q1,q2,...)")
      ->delimiter(',');
  eps->add_option("--noise-multiplier", f.noise, "sigma: noise std over the clip norm (phases: s1,s2,...)")
      ->delimiter(',');
  eps->add_option("--rounds", f.rounds, "T: rounds (phases: T1,T2,...)")->delimiter(',');
  eps->add_option("--delta", f.delta, "delta of (epsilon, delta)")->capture_default_str();
  eps->add_option("--max-order", f.max_order, "RDP orders 2..N")->check(CLI::Range(2, 4096))->capture_default_str();
  CLI::App* noise = app.add_subcommand("noise", "the smallest noise multiplier for epsilon after T rounds at rate q");
  noise->add_option("--epsilon", f.epsilon, "the target epsilon");
  noise->add_option("--rate", f.rate, "q: each device's chance of taking part in a round");
  noise->add_option("--rounds", f.rounds, "T: rounds");
  noise->add_option("--delta", f.delta, "delta of (epsilon, delta)")->capture_default_str();
  noise->add_option("--max-order", f.max_order, "RDP orders 2..N")->check(CLI::Range(2, 4096))->capture_default_str();
  if (int rc = 0; !fedrt::cli::Parse(app, argc, argv, &rc)) return rc;
  // Required flags are checked after parsing, so that a mistyped one is
  // reported as such ("did you mean") rather than as a missing one.
  CLI::App* mode = *eps ? eps : noise;
  for (const char* flag : *eps ? std::vector<const char*>{"--rate", "--noise-multiplier", "--rounds"}
                               : std::vector<const char*>{"--epsilon", "--rate", "--rounds"})
    if (mode->count(flag) == 0) return Fail(Status::Invalid(fmt::format("{} needs {}", mode->get_name(), flag)));
  return *eps ? EpsilonMode(f) : NoiseMode(f);
}
