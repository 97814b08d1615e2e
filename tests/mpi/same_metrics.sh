#!/usr/bin/env bash
# ctest (label mpi): fedrt-sim under K MPI ranks writes the same metrics.csv,
# byte for byte, as the single-process run, for every K given.
#   same_metrics.sh FEDRT_SIM WORK_DIR "K1 K2 ..." FEDRT_SIM_ARGS...
# Exit 77 (ctest SKIP_RETURN_CODE) when this build or machine has no MPI.
set -uo pipefail
sim="$1" work="$2" ranks="$3"
shift 3
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mpirun_local="$here/../../scripts/mpirun_local.sh"

source "$here/mpi_available.sh"

rm -rf "$work"
mkdir -p "$work"
if ! "$sim" "$@" --out "$work/single" --no-plot >"$work/single.log" 2>&1; then
  cat "$work/single.log"
  echo "FAIL: the single-process run failed"
  exit 1
fi
status=0
for k in $ranks; do
  out="$work/ranks$k"
  start=$(date +%s%N)
  if ! "$mpirun_local" "$k" "$sim" "$@" --out "$out" --no-plot >"$out.log" 2>"$out.err"; then
    cat "$out.log" "$out.err"
    echo "FAIL: $k ranks: fedrt-sim failed"
    status=1
    continue
  fi
  ms=$((($(date +%s%N) - start) / 1000000))
  if ! cmp "$work/single/metrics.csv" "$out/metrics.csv"; then
    echo "FAIL: $k ranks: metrics.csv differs from the single-process run"
    status=1
  elif [[ ! -f "$out/summary.json" ]]; then
    echo "FAIL: $k ranks: no summary.json"
    status=1
  elif (($(grep -c '^algorithm ' "$out.log") != 1)); then
    cat "$out.log"
    echo "FAIL: $k ranks: the summary was not printed exactly once (rank 0 only)"
    status=1
  else
    echo "ok: $k ranks: metrics.csv identical ($(wc -l <"$out/metrics.csv") lines, ${ms} ms)"
  fi
done
exit $status
