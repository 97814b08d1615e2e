// The simulator's MPI calls (docs/architecture.md, "MPI"): start, the ranks'
// one collective (sizes, then the bytes), finalize.
#include "fedrt/sim/mpi_ranks.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <thread>

#include <fmt/format.h>
#include <mpi.h>

namespace fedrt::sim {

namespace {

Status MpiError(const char* what, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int n = 0;
  MPI_Error_string(code, text, &n);
  return Status(StatusCode::kUnavailable, fmt::format("MPI: {} failed: {}", what, std::string(text, n)));
}

// Waits for a nonblocking collective, sleeping between polls (10 us, doubling
// to 1 ms): a blocking MPI call spins, and a rank waiting for slower ranks
// would take a core from them when ranks share cores (--oversubscribe) or a
// machine is busy. A round's local work takes milliseconds, so the latency
// added is small.
int Wait(MPI_Request& request) {
  auto pause = std::chrono::microseconds(10);
  for (;;) {
    int done = 0;
    if (int rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE); rc != MPI_SUCCESS) return rc;
    if (done != 0) return MPI_SUCCESS;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }
}

}  // namespace

std::string MpiRanks::Library() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int n = 0;
  MPI_Get_library_version(text, &n);
  std::string s(text, n);
  if (const size_t cut = s.find_first_of(",\n"); cut != std::string::npos) s.resize(cut);
  return s;
}

Status MpiRanks::Start(int* argc, char*** argv, std::unique_ptr<MpiRanks>& out) {
  out.reset();
  if (!MpiLaunched()) return Status::Ok();
  // The worker pool's threads never call MPI; only the main thread does.
  int provided = 0;
  if (int rc = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided); rc != MPI_SUCCESS)
    return MpiError("MPI_Init_thread", rc);
  std::unique_ptr<MpiRanks> r(new MpiRanks());
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  r->rank_ = static_cast<uint32_t>(rank);
  r->size_ = static_cast<uint32_t>(size);
  out = std::move(r);
  return Status::Ok();
}

MpiRanks::~MpiRanks() { MPI_Finalize(); }

Status MpiRanks::allgather(const std::vector<uint8_t>& mine, std::vector<uint8_t>& all, std::vector<size_t>& offsets) {
  unsigned long long n = mine.size();
  std::vector<unsigned long long> sizes(size_);
  MPI_Request request;
  int rc = MPI_Iallgather(&n, 1, MPI_UNSIGNED_LONG_LONG, sizes.data(), 1, MPI_UNSIGNED_LONG_LONG, MPI_COMM_WORLD, &request);
  if (rc == MPI_SUCCESS) rc = Wait(request);
  if (rc != MPI_SUCCESS) return MpiError("MPI_Iallgather", rc);
  offsets.assign(size_ + 1, 0);
  for (uint32_t r = 0; r < size_; ++r) offsets[r + 1] = offsets[r] + sizes[r];
  // MPI counts are ints: every rank sees the same sizes, so every rank stops here alike.
  if (offsets[size_] > static_cast<size_t>(INT_MAX))
    return Status(StatusCode::kResourceExhausted,
                  fmt::format("the agents' messages of one step are {} bytes, above MPI_Allgatherv's 2 GiB: fewer agents "
                              "or a smaller model per run",
                              offsets[size_]));
  std::vector<int> counts(size_), displs(size_);
  for (uint32_t r = 0; r < size_; ++r) {
    counts[r] = static_cast<int>(sizes[r]);
    displs[r] = static_cast<int>(offsets[r]);
  }
  all.resize(offsets[size_] + 1);  // + 1: a valid pointer when everything is empty
  static const uint8_t kNothing = 0;
  rc = MPI_Iallgatherv(mine.empty() ? &kNothing : mine.data(), static_cast<int>(n), MPI_BYTE, all.data(),
                       counts.data(), displs.data(), MPI_BYTE, MPI_COMM_WORLD, &request);
  if (rc == MPI_SUCCESS) rc = Wait(request);
  if (rc != MPI_SUCCESS) return MpiError("MPI_Iallgatherv", rc);
  all.resize(offsets[size_]);
  return Status::Ok();
}

}  // namespace fedrt::sim
