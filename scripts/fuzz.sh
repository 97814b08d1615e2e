#!/usr/bin/env bash
# ./fedrt fuzz [SECONDS | --runs N] [--keep] [TARGET...] (docs/fuzzing.md): builds
# the fuzz preset's libFuzzer targets (clang-14, ASan + UBSan), runs each for
# SECONDS (default 60) or N executions on a scratch corpus
# build/fuzz/corpus/<name> seeded from the committed tests/fuzz/corpus/<name>,
# crash artifacts into build/fuzz/crashes/<name>/, logs into build/fuzz/logs/,
# and prints a table. --keep merges what the run found into the committed
# archive tests/fuzz/kept/<name>.tar.xz (libFuzzer -merge=1 keeps only inputs
# that add coverage), which ctest replays. Exits 1 when any target crashed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$ROOT/build/fuzz"
JOBS="$(nproc 2>/dev/null || echo 2)"
say() { echo "[fuzz] $*"; }
err() { echo "[fuzz] error: $*" >&2; }

usage() {
  cat <<'USAGE'
usage: ./fedrt fuzz [SECONDS | --runs N] [--keep] [TARGET...]
  SECONDS   per target (default 60)
  --runs N  per target: N executions instead of a time (e.g. 10000000)
  --keep    merge the inputs that add coverage into tests/fuzz/kept/<name>.tar.xz (replayed by ctest)
  TARGET    names from tests/fuzz.cmake (default: all): frame wire_messages fw_messages codec
            secagg chunk experiment csv_shard record_shard array_bundle
Builds preset fuzz (build/fuzz), runs each <name>_fuzzer with -print_final_stats=1 on
build/fuzz/corpus/<name> (seeded from tests/fuzz/corpus/<name>), crash inputs into
build/fuzz/crashes/<name>/; ends with a table and exits 1 if anything crashed.
USAGE
}

seconds=60 runs=0 keep=0
wanted=()
while (($#)); do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --runs)
      [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || { err "--runs needs a positive number of executions (got '${2:-}')"; exit 2; }
      runs="$2" seconds=0
      shift 2 ;;
    --keep) keep=1; shift ;;
    -*) err "unknown option '$1' (see --help)"; exit 2 ;;
    *)
      if [[ "$1" =~ ^[0-9]+$ && ${#wanted[@]} -eq 0 && $runs -eq 0 ]]; then seconds="$1"; else wanted+=("$1"); fi
      shift ;;
  esac
done

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
    selected=0
    for w in "${wanted[@]}"; do [[ "$w" == "$name" ]] && selected=1; done
    ((selected)) || continue
  fi
  names+=("$name")
  exes+=("$exe")
done <"$list"
if ((${#wanted[@]} > 0 && ${#names[@]} != ${#wanted[@]})); then
  err "unknown target among: ${wanted[*]} (known: $(cut -d' ' -f1 "$list" | tr '\n' ' '))"
  exit 2
fi

mkdir -p "$BUILD/logs"
# The shard targets write each input to a scratch file: on a tmpfs that costs
# microseconds, on a disk it is writeback (about 50x fewer executions).
if [[ -z "${TMPDIR:-}" && -d /dev/shm && -w /dev/shm ]]; then
  TMPDIR="$(mktemp -d /dev/shm/fedrt-fuzz.XXXXXX)"
  export TMPDIR
  trap 'rm -rf "$TMPDIR"' EXIT
fi
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
  kept_tar="$ROOT/tests/fuzz/kept/$name.tar.xz"
  [[ -f "$kept_tar" ]] && tar -xJf "$kept_tar" -C "$corpus" --skip-old-files
  marker="$BUILD/logs/.$name.start"
  touch "$marker"
  if ((runs > 0)); then say "$name: $runs executions (log build/fuzz/logs/$name.log)"; else say "$name: ${seconds}s (log build/fuzz/logs/$name.log)"; fi
  rc=0
  (cd "$BUILD" && ASAN_OPTIONS="detect_leaks=1" UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    "$exe" -max_total_time="$seconds" -runs="$((runs > 0 ? runs : -1))" -timeout=10 -print_final_stats=1 \
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
  kept=""
  if ((keep && found == 0)); then
    # The archive holds what earlier runs kept; -merge=1 adds the inputs of
    # this run's corpus that reach coverage the archive (or the seeds) lack.
    merged="$(mktemp -d)"
    [[ -f "$kept_tar" ]] && tar -xJf "$kept_tar" -C "$merged"
    before="$(find "$merged" -type f | wc -l)"
    if (cd "$BUILD" && "$exe" -merge=1 "$merged" "$corpus") >>"$log" 2>&1; then
      for f in "$ROOT/tests/fuzz/corpus/$name"/*; do rm -f "$merged/$(basename "$f")"; done  # seeds stay in the sources
      mkdir -p "$ROOT/tests/fuzz/kept"
      (cd "$merged" && find . -type f -printf '%P\n' | LC_ALL=C sort |
        tar -cJf "$kept_tar.new" --owner=0 --group=0 --numeric-owner --mtime=@0 -T -) && mv "$kept_tar.new" "$kept_tar"
      kept="+$(($(find "$merged" -type f | wc -l) - before))"
    else
      err "$name: merging into $kept_tar failed (see the log)"
    fi
    rm -rf "$merged"
  fi
  rows+=("$(printf '%-14s %12s %10s %8s %8s %6s' "$name" "${execs:-?}" "${rate:-?}" "$files" "$found" "${kept:--}")")
done

echo
printf '%-14s %12s %10s %8s %8s %6s\n' target executions exec/s corpus crashes kept
for r in "${rows[@]}"; do echo "$r"; done
if ((crashed)); then
  err "crashes found: reproduce with build/fuzz/bin/<name>_fuzzer <crash file>; docs/fuzzing.md says how to keep one"
  exit 1
fi
