// LSA client cores in float on the microcontroller: FedLSA and SCAFFLSA
// local TD(0) steps on the small federated problem of lsa_scenario.h, against
// the host's double-precision run of the same code (gen_expected.cc), plus
// SCAFFLSA's invariant sum_c xi_c = 0 (full participation, no compression).

#include "fw_check.h"
#include "lsa_scenario.h"

namespace {

// Host reference (double, cast to float): see gen_expected.cc.
const float kFedLsa[fwtest::kDim] = {2.023377895e+00f, 1.874427676e+00f, 1.192268372e+00f, 8.442212343e-01f,
                                     1.701308608e+00f, 2.023377895e+00f, 1.874427676e+00f, 1.192268372e+00f};
const float kScaffLsa[fwtest::kDim] = {2.013679981e+00f, 1.885389566e+00f, 1.182973266e+00f, 8.648468852e-01f,
                                       1.692249179e+00f, 2.013679981e+00f, 1.885389566e+00f, 1.182973266e+00f};
// float vs double after 150 contractive steps of size 0.5 on entries of size
// ~2: a few float ulps (2.4e-7 each) per entry; measured 5e-7 on the host in
// float. 2e-5 leaves room for a different summation order, not for a wrong step.
constexpr float kTol = 2e-5f;

void CheckRun(fedrt::algorithms::LsaAlgorithm alg, const float* want) {
  const fwtest::Outcome o = fwtest::Run<float>(alg);
  FW_CHECK(o.ok);
  for (int i = 0; i < fwtest::kDim; ++i) FW_CHECK_NEAR(o.theta[i], want[i], kTol);
  if (fedrt::algorithms::UsesControlVariate(alg)) {
    // |sum_c xi_c| is round-off only: xi_c ~ 1/(eta H) * O(1) = O(0.1).
    FW_CHECK(o.xi_sum_max_abs < 1e-5f);
  } else {
    FW_CHECK(o.xi_sum_max_abs == 0.0f);
  }
}

}  // namespace

int main() {
  CheckRun(fedrt::algorithms::LsaAlgorithm::kFedLsa, kFedLsa);
  CheckRun(fedrt::algorithms::LsaAlgorithm::kScaffLsa, kScaffLsa);
  // The two algorithms really differ (the test would not notice a swapped core otherwise).
  FW_CHECK(kFedLsa[3] - kScaffLsa[3] > 100 * kTol || kScaffLsa[3] - kFedLsa[3] > 100 * kTol);
  return fw_result("lsa_test");
}
