#pragma once
// MpiRanks: this fedrt-sim process as one rank of an MPI launch (mpirun,
// srun), the only code of fedrt that calls MPI (runtime/src/sim/mpi_ranks.cc;
// builds without MPI get runtime/src/sim/mpi_ranks_none.cc, which refuses an
// MPI launch). Host code, linked into fedrt-sim only.

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "fedrt/sim/rank_exchange.h"

namespace fedrt::sim {

// Whether an MPI launcher started this process (Open MPI, PMIx or PMI set these).
inline bool MpiLaunched() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (std::getenv(v) != nullptr) return true;
  return false;
}

// This process's rank as the launcher set it (0 when not launched by MPI):
// known before MPI starts, or in a build without MPI.
inline int MpiLaunchRank() {
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
    if (const char* r = std::getenv(v)) return std::atoi(r);
  return 0;
}

class MpiRanks final : public RankExchange {
 public:
  // The MPI library this build uses ("Open MPI v4.1.4, ..."), or "none".
  static std::string Library();
  // Under an MPI launcher: initialises MPI and sets `out`; otherwise leaves
  // it empty. An error when launched by MPI but built without it.
  static Status Start(int* argc, char*** argv, std::unique_ptr<MpiRanks>& out);
  ~MpiRanks() override;  // MPI_Finalize

  uint32_t rank() const override { return rank_; }
  uint32_t size() const override { return size_; }
  Status allgather(const std::vector<uint8_t>& mine, std::vector<uint8_t>& all, std::vector<size_t>& offsets) override;

 private:
  MpiRanks() = default;
  uint32_t rank_ = 0, size_ = 1;
};

}  // namespace fedrt::sim
