// [problem] coordinator_generates = false (README.md, "The coordinator
// generates no data"): a coordinator that does not generate the agents'
// synthetic data. It needs
// from the data only d and the initial iterate; that holds for generated
// least squares and logistic regression (x_0 = 0), and not for the other
// kinds, which are refused here with the reason.
#include <fmt/format.h>

#include "fedrt/config/experiment.h"
#include "fedrt/task/names.h"

namespace fedrt::config {

Status ValidateCoordinatorGenerates(const ExperimentConfig& c) {
  if (c.opt.coordinator_generates) return Status::Ok();
  auto bad = [](const std::string& why) {
    return Status(StatusCode::kInvalidArgument, "problem.coordinator_generates = false " + why);
  };
  if (c.data.own())
    return bad(fmt::format("is for generated problems: the devices' own shards ([data] format = \"{}\") are not "
                           "generated; a coordinator without them takes data.coordinator_reads_shards = false",
                           c.data.format));
  if (!c.opt.data.empty())
    return bad(fmt::format("is for generated problems: problem.data '{}' is read from files, not generated", c.opt.data));
  switch (c.problem) {
    case task::ProblemKind::kLeastSquares:
    case task::ProblemKind::kLogistic:
      return Status::Ok();
    case task::ProblemKind::kGarnet:
      return bad("is not available for problem.kind = \"garnet\": its initial iterate theta* + (1, ..., 1) needs "
                 "the generated MDPs (theta* solves the agents' averaged system)");
    case task::ProblemKind::kBundle:
      return bad("is for generated problems: problem.kind = \"file\" reads an array bundle");
    case task::ProblemKind::kGmm:
      return bad("is not available for problem.kind = \"gmm\": the coordinator's EM evaluation needs the generated "
                 "points (generated lsq and logistic problems only)");
    default:
      return bad(fmt::format("is for generated lsq and logistic problems, not for '{}'", task::ProblemKindName(c.problem)));
  }
}

}  // namespace fedrt::config
