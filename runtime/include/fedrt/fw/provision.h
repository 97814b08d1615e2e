#pragma once
// The host side of a firmware device's data (fedrt/fw/problem_image.h): agent
// c's part of a task's problem instance, cast to float, as one problem image.
// Used by fedrt-fw-provision and the tests. Host code.

#include <cstdint>
#include <vector>

#include "fedrt/core/status.h"
#include "fedrt/problems/instance.h"

namespace fedrt::fw {

// The problem image of agent `agent` of `instance`; its fingerprint is that
// of instance.problem() (which covers data read from files), the problem the
// coordinator's task names. TD(0): TdOracle<float>::create over agent c's joint law of (s, s')
// and rewards, exactly as a POSIX device builds its oracle, so the firmware
// samples the same Z_{t,h}^c; least squares and logistic regression: X_c and
// y_c; Gaussian mixture: the m_c points. Fails on a noise-free TD(0) task
// (the firmware samples transitions) and on an agent outside the problem.
Result<std::vector<uint8_t>> MakeProblemImage(const problems::Instance& instance, uint32_t agent);

}  // namespace fedrt::fw
