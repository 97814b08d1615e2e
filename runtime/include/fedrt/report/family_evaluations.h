#pragma once
// The three families' evaluations behind Evaluation::Make (internal to the
// report module).

#include <memory>

#include "fedrt/report/evaluation.h"

namespace fedrt::report {

std::unique_ptr<Evaluation> MakeLsaEvaluation(const task::Task& task, const problems::DataFiles& files,
                                              const problems::Instance& instance);
Result<std::unique_ptr<Evaluation>> MakeOptEvaluation(const task::Task& task, const problems::DataFiles& files,
                                                      const problems::Instance& instance);
// An own-data task at a coordinator without the shards (files.read_shards false).
Result<std::unique_ptr<Evaluation>> MakeBlindEvaluation(const task::Task& task, const problems::DataFiles& files,
                                                        const problems::Instance& instance);
std::unique_ptr<Evaluation> MakeUserEvaluation(const task::Task& task, const problems::DataFiles& files);
Result<std::unique_ptr<Evaluation>> MakeEmEvaluation(const task::Task& task, const problems::DataFiles& files,
                                                     const problems::Instance& instance,
                                                     WorkerPool* pool);

// ||x - star||^2 over star's length.
double SquaredDistance(const double* x, const Eigen::VectorXd& star);

}  // namespace fedrt::report
