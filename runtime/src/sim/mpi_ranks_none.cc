// A build without MPI (CMake found none): fedrt-sim runs as one process and
// refuses to run as a rank of an MPI launch.
#include "fedrt/sim/mpi_ranks.h"

namespace fedrt::sim {

std::string MpiRanks::Library() { return "none"; }

Status MpiRanks::Start(int*, char***, std::unique_ptr<MpiRanks>& out) {
  out.reset();
  if (!MpiLaunched()) return Status::Ok();
  return Status(StatusCode::kUnimplemented,
                std::string("started by an MPI launcher, but this build of fedrt-sim has no MPI (CMake found no MPI when "
                            "it was configured: install libopenmpi-dev and openmpi-bin, scripts/setup.sh, and configure "
                            "again); run it without mpirun"));
}

MpiRanks::~MpiRanks() = default;

Status MpiRanks::allgather(const std::vector<uint8_t>&, std::vector<uint8_t>&, std::vector<size_t>&) {
  return Status::Unimplemented("this build has no MPI");
}

}  // namespace fedrt::sim
