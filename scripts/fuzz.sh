#!/usr/bin/env bash
# ./fedrt fuzz [SECONDS] [TARGET...] (docs/fuzzing.md): builds the fuzz preset's
# libFuzzer targets (clang-14, ASan + UBSan), runs each for SECONDS (default
# 60) on a scratch corpus build/fuzz/corpus/<name> seeded from the committed
# tests/fuzz/corpus/<name> (new inputs never go into the sources), crash
# artifacts into build/fuzz/crashes/<name>/, logs into build/fuzz/logs/, and
# prints a table. Exits 1 when any target crashed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$ROOT/build/fuzz"
JOBS="$(nproc 2>/dev/null || echo 2)"
say() { echo "[fuzz] $*"; }
err() { echo "[fuzz] error: $*" >&2; }

usage() {
  cat <<'USAGE'
usage: ./fedrt fuzz [SECONDS] [TARGET...]
  SECONDS   per target (default 60)
  TARGET    names from tests/fuzz.cmake (default: all): frame wire_messages fw_messages codec
            secagg chunk experiment csv_shard record_shard array_bundle
Builds preset fuzz (build/fuzz), runs each <name>_fuzzer with -print_final_stats=1 on
build/fuzz/corpus/<name> (seeded from tests/fuzz/corpus/<name>), crash inputs into
build/fuzz/crashes/<name>/; ends with a table and exits 1 if anything crashed.
USAGE
}

seconds=60
if [[ "${1:-}" == -h || "${1:-}" == --help ]]; then
  usage
  exit 0
fi
if [[ "${1:-}" =~ ^[0-9]+$ ]]; then
  seconds="$1"
  shift
fi
wanted=("$@")

for tool in clang-14 clang++-14; do
  command -v "$tool" >/dev/null 2>&1 || { err "$tool not found: ./fedrt setup installs clang-14 and libclang-rt-14-dev"; exit 2; }
done
if [[ ! -f "$BUILD/CMakeCache.txt" || ! -f "$BUILD/build.ninja" ]]; then
  # The host's mbedTLS 3.6 and the firmware's nanopb decoder (target fw_messages) are built from the fetched sources.
  "$ROOT/scripts/fetch_sources.sh" || { err "fetching the Debian source packages failed (scripts/fetch_sources.sh)"; exit 2; }
  say "configuring preset 'fuzz' -> build/fuzz"
  (cd "$ROOT" && cmake --preset fuzz) || { err "cmake configure failed for preset 'fuzz'"; exit 2; }
fi
say "building the fuzz targets with $JOBS jobs"
(cd "$ROOT" && cmake --build --preset fuzz -j "$JOBS") || { err "build failed for preset 'fuzz'"; exit 2; }

list="$BUILD/fuzz_targets.txt"
[[ -f "$list" ]] || { err "$list missing: reconfigure build/fuzz"; exit 2; }
declare -a names exes
while read -r name exe _corpus; do
  [[ -n "$name" ]] || continue
  if ((${#wanted[@]} > 0)); then
    keep=0
    for w in "${wanted[@]}"; do [[ "$w" == "$name" ]] && keep=1; done
    ((keep)) || continue
  fi
  names+=("$name")
  exes+=("$exe")
done <"$list"
if ((${#wanted[@]} > 0 && ${#names[@]} != ${#wanted[@]})); then
  err "unknown target among: ${wanted[*]} (known: $(cut -d' ' -f1 "$list" | tr '\n' ' '))"
  exit 2
fi

mkdir -p "$BUILD/logs"
rows=()
crashed=0
for i in "${!names[@]}"; do
  name="${names[$i]}"
  exe="$BUILD/bin/${exes[$i]}"
  corpus="$BUILD/corpus/$name"
  crashes="$BUILD/crashes/$name"
  log="$BUILD/logs/$name.log"
  mkdir -p "$corpus" "$crashes"
  # Seeds into the scratch corpus (what earlier runs found there stays).
  cp -n "$ROOT/tests/fuzz/corpus/$name"/* "$corpus"/ 2>/dev/null || true
  marker="$BUILD/logs/.$name.start"
  touch "$marker"
  say "$name: ${seconds}s (log build/fuzz/logs/$name.log)"
  rc=0
  (cd "$BUILD" && ASAN_OPTIONS="detect_leaks=1" UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    "$exe" -max_total_time="$seconds" -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$crashes/" "$corpus") >"$log" 2>&1 || rc=$?
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
  rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)"
  files="$(find "$corpus" -type f | wc -l)"
  found="$(find "$crashes" -type f -newer "$marker" | wc -l)"
  rm -f "$marker"
  if ((rc != 0 && found == 0)); then found=1; fi  # died without an artifact: still a failure
  if ((found > 0)); then
    crashed=1
    err "$name crashed (exit $rc): see build/fuzz/logs/$name.log and build/fuzz/crashes/$name/"
  fi
  rows+=("$(printf '%-14s %12s %10s %8s %8s' "$name" "${execs:-?}" "${rate:-?}" "$files" "$found")")
done

echo
printf '%-14s %12s %10s %8s %8s\n' target executions exec/s corpus crashes
for r in "${rows[@]}"; do echo "$r"; done
if ((crashed)); then
  err "crashes found: reproduce with build/fuzz/bin/<name>_fuzzer <crash file>; docs/fuzzing.md says how to keep one"
  exit 1
fi
