#!/usr/bin/env bash
# ctest (label mpi): an MPI launch whose ranks do not all read the same
# experiment fails on every rank, with one message (rank 0's) naming the rank
# and the file, and a non-zero exit; it must not hang (the test has a timeout).
#   bad_input.sh FEDRT_SIM WORK_DIR EXPERIMENT.toml
set -uo pipefail
sim="$1" work="$2" config="$3"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mpirun_local="$here/../../scripts/mpirun_local.sh"

source "$here/mpi_available.sh"
rm -rf "$work"
mkdir -p "$work"
cp "$config" "$work/same.toml"
sed -e 's/^rounds *=.*/rounds = 7/' "$config" >"$work/other.toml"
grep -q '^rounds = 7' "$work/other.toml" || { echo "FAIL: $config has no rounds line to change"; exit 1; }

status=0
# expect NAME PATTERN...: rank 1 reads RANK1_CONFIG, the others $work/same.toml.
expect() {
  local name="$1" rank1="$2"
  shift 2
  local log="$work/$name"
  FEDRT_RANK1_CONFIG="$rank1" "$mpirun_local" 2 sh -c \
    'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then c="$FEDRT_RANK1_CONFIG"; else c="$0"; fi; exec "$1" --config "$c" --out "$2" --no-plot' \
    "$work/same.toml" "$sim" "$work/out-$name" >"$log.out" 2>"$log.err"
  local rc=$?
  local errors
  errors=$(grep -c 'fedrt-sim: error' "$log.err")
  if ((rc == 0)); then
    echo "FAIL: $name: the launch succeeded"
    status=1
  elif ((errors != 1)); then
    cat "$log.err"
    echo "FAIL: $name: $errors error lines, expected one (rank 0's)"
    status=1
  else
    local p
    for p in "$@"; do
      if ! grep -q -- "$p" "$log.err"; then
        cat "$log.err"
        echo "FAIL: $name: the message does not say '$p'"
        status=1
        return
      fi
    done
    echo "ok: $name: exit $rc, $(grep 'fedrt-sim: error' "$log.err")"
  fi
  if [[ -e "$work/out-$name/metrics.csv" ]]; then
    echo "FAIL: $name: outputs written"
    status=1
  fi
}
expect missing "$work/missing.toml" "rank 1 of 2" "missing.toml"
expect differs "$work/other.toml" "rank 1 of 2" "other.toml" "same.toml" "different experiment"
exit $status
