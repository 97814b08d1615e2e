# Sourced by the mpi ctest scripts: exits 77 (ctest SKIP_RETURN_CODE) with a
# reason when this build of fedrt-sim ($sim) or this machine has no MPI.
if [[ "$("$sim" --version)" == *"MPI: none"* ]]; then
  echo "SKIP: this build of fedrt-sim has no MPI (CMake found none; install libopenmpi-dev and reconfigure)"
  exit 77
fi
if ! command -v mpirun >/dev/null 2>&1; then
  echo "SKIP: mpirun not found (install openmpi-bin)"
  exit 77
fi
