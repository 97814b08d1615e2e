#!/usr/bin/env bash
# Runs COMMAND as K MPI ranks on this machine with Open MPI's mpirun:
#   scripts/mpirun_local.sh K COMMAND [ARGS...]
# More ranks than cores is allowed (--oversubscribe); as root Open MPI wants
# OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM); the shared-memory transport (vader) runs
# without its single-copy mechanism (CMA/ptrace), which containers often
# forbid. `./fedrt sim --ranks K` and the ctest label `mpi` run through here.
# Extra mpirun options: FEDRT_MPIRUN_ARGS (split on spaces).
set -euo pipefail

if (($# < 2)) || ! [[ "$1" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: $0 K COMMAND [ARGS...]  (K >= 1 ranks)" >&2
  exit 2
fi
ranks="$1"
shift
if ! command -v mpirun >/dev/null 2>&1; then
  echo "[fedrt] error: mpirun not found: install openmpi-bin and libopenmpi-dev (scripts/setup.sh)" >&2
  exit 127
fi
if ((EUID == 0)); then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
read -r -a extra <<<"${FEDRT_MPIRUN_ARGS:-}"
exec mpirun -np "$ranks" --oversubscribe --mca btl self,vader --mca btl_vader_single_copy_mechanism none \
  "${extra[@]}" "$@"
