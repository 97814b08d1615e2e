// The SCAFFLSA authors' Garnet instance (tests/data/garnet_low_N100.txt),
// loaded once per test binary for the tests of td_fixture_test.cc (every
// preset, ARM boards included) and td_noise_free_test.cc (host presets).
// One named class, not per file: gtest wants one fixture class per suite.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fedrt/problems/array_bundle.h"
#include "fedrt/problems/td_problem.h"

namespace fedrt::test {

inline const std::string kFixture = std::string(FEDRT_TEST_DATA) + "/garnet_low_N100.txt";

class GarnetFixture : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto b = problems::ArrayBundle::load(kFixture);
    ASSERT_TRUE(b.ok()) << b.status().message();
    bundle_ = new problems::ArrayBundle(b.take());
    auto p = problems::TdProblem::from_bundle(*bundle_);
    ASSERT_TRUE(p.ok()) << p.status().message();
    problem_ = new problems::TdProblem(p.take());
  }
  static void TearDownTestSuite() {
    delete problem_;
    delete bundle_;
    problem_ = nullptr;
    bundle_ = nullptr;
  }
  static const problems::NdArray& Array(const std::string& name) {
    auto it = bundle_->get(name, {});
    if (it.ok()) return **it;
    for (const std::vector<long>& shape : std::vector<std::vector<long>>{{-1}, {-1, -1}, {-1, -1, -1}}) {
      auto r = bundle_->get(name, shape);
      if (r.ok()) return **r;
    }
    ADD_FAILURE() << "missing " << name;
    static problems::NdArray empty;
    return empty;
  }
  // max |x - y| / max(|y|_inf) over a whole array.
  static double RelErr(const double* x, const double* y, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; ++i) {
      num = std::max(num, std::abs(x[i] - y[i]));
      den = std::max(den, std::abs(y[i]));
    }
    return num / den;
  }
  // The reference's own Abar_c, bbar_c, theta_c and theta_star.
  static problems::LsaSystem ReferenceSystem() {
    problems::LsaSystem l;
    l.dim = 8;
    const auto &a = Array("Abar_c"), &b = Array("bbar_c"), &tc = Array("theta_c"), &ts = Array("thetalim");
    for (int c = 0; c < 100; ++c) {
      l.abar.push_back(Eigen::Map<const problems::MatrixRM>(a.values.data() + c * 64, 8, 8));
      l.bbar.push_back(Eigen::Map<const Eigen::VectorXd>(b.values.data() + c * 8, 8));
      l.theta_c.push_back(Eigen::Map<const Eigen::VectorXd>(tc.values.data() + c * 8, 8));
    }
    l.theta_star = Eigen::Map<const Eigen::VectorXd>(ts.values.data(), 8);
    return l;
  }
  static inline problems::ArrayBundle* bundle_ = nullptr;
  static inline problems::TdProblem* problem_ = nullptr;
};

}  // namespace fedrt::test
