#!/usr/bin/env bash
# ./fedrt test [--quick] [CTEST ARGS...]: build the presets and run their tests
# (docs/testing.md).
#
#   full (default)  every preset of $FEDRT_TEST_PRESETS (default "release debug
#                   aarch64 armhf cortex-m4 cortex-m3"), then the mixed edge fleet
#                   (examples/edge-fleet/run.sh); what CI runs (.ci/run).
#   --quick         the inner loop while working: the release preset, built
#                   incrementally, and its tests labelled quick (unit, device
#                   and protocol tests, the CLI checks and a small fleet).
#
# Extra arguments go to ctest (then the edge fleet is not run). Ends with a
# table of build and test seconds per preset (also build/test-times.tsv, and a
# line per preset appended to build/test-times-history.tsv), ccache's hit rate
# for this run, and "N passed, N failed".
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/presets.sh
source "$ROOT/scripts/presets.sh"

quick=0
ctest_args=()
for a in "$@"; do
  case "$a" in
    --quick) quick=1 ;;
    *) ctest_args+=("$a") ;;
  esac
done

if ((quick)); then
  presets=(release)
else
  read -r -a presets <<<"${FEDRT_TEST_PRESETS:-release debug aarch64 armhf cortex-m4 cortex-m3}"
fi
if ((${#presets[@]} == 0)); then
  err "FEDRT_TEST_PRESETS is empty; nothing to test"
  exit 2
fi

# Test slots per preset (FEDRT_TEST_JOBS overrides): the release tests mostly
# wait on processes and sockets (about 55% of 2 cores busy at -j2), so they get
# one slot more than the cores; the sanitizer and emulated passes keep the
# cores busy and get one slot per core.
test_jobs() {
  if [[ -n "${FEDRT_TEST_JOBS:-}" ]]; then
    echo "$FEDRT_TEST_JOBS"
  elif [[ "$1" == release ]]; then
    echo $((JOBS + 1))
  else
    echo "$JOBS"
  fi
}

# ccache's counters as "key value" lines (empty without ccache).
ccache_stats() {
  command -v ccache >/dev/null 2>&1 && ccache --print-stats 2>/dev/null || true
}
# Hits and misses between two snapshots: "hits misses".
ccache_delta() {
  awk -F'\t' '
    FNR == NR { before[$1] = $2; next }
    { after[$1] = $2 }
    END {
      hits = (after["direct_cache_hit"] - before["direct_cache_hit"]) \
           + (after["preprocessed_cache_hit"] - before["preprocessed_cache_hit"])
      print hits, after["cache_miss"] - before["cache_miss"]
    }' "$1" "$2"
}

t_start=$SECONDS
t_setup=$SECONDS
ensure_setup
setup_s=$((SECONDS - t_setup))
mkdir -p "$ROOT/build"
stats_before="$(mktemp "${TMPDIR:-/tmp}/fedrt-ccache.XXXXXX")"
log="$(mktemp "${TMPDIR:-/tmp}/fedrt-ctest.XXXXXX")"
trap 'rm -f "$stats_before" "$log"' EXIT
ccache_stats >"$stats_before"

failed=()
n_pass=0
n_fail=0
rows=()  # preset build_s test_s passed total
for preset in "${presets[@]}"; do
  t0=$SECONDS
  if ! build_preset "$preset"; then
    failed+=("$preset (build)")
    n_fail=$((n_fail + 1))
    rows+=("$preset $((SECONDS - t0)) 0 0 0")
    continue
  fi
  ctest_cmd=(ctest --preset "$preset" --output-on-failure -j "$(test_jobs "$preset")")
  if ((quick)); then
    ctest_cmd+=(-L '^(unit|device|cli|quick)$')
  elif [[ "$preset" != release ]]; then
    # Sanitizer and emulated builds: the long statistical runs stay with release.
    ctest_cmd+=(-LE statistical)
  fi
  ctest_cmd+=("${ctest_args[@]}")
  say "running: ${ctest_cmd[*]}"
  ok=1
  t1=$SECONDS
  if ! (cd "$ROOT" && "${ctest_cmd[@]}") | tee "$log"; then
    failed+=("$preset")
    ok=0
  fi
  t2=$SECONDS
  # Tally ctest's "N% tests passed, F tests failed out of T" for the final line.
  line="$(grep -E 'tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1 || true)"
  p=0 t=0
  if [[ "$line" =~ ([0-9]+)\ tests?\ failed\ out\ of\ ([0-9]+) ]]; then
    t=${BASH_REMATCH[2]}
    p=$((t - BASH_REMATCH[1]))
    n_fail=$((n_fail + BASH_REMATCH[1]))
    n_pass=$((n_pass + p))
  elif ((ok == 0)); then
    n_fail=$((n_fail + 1))  # ctest itself failed (no summary)
  fi
  rows+=("$preset $((t1 - t0)) $((t2 - t1)) $p $t")
done

# Mixed edge fleet: native + qemu-user aarch64/armhf devices (+ Cortex-M4F
# firmware when built) and a TLS coordinator vs the simulator; needs these
# three builds, and runs only in the full command without ctest arguments.
list=" ${presets[*]} "
if ((quick == 0 && ${#ctest_args[@]} == 0)) \
  && [[ "$list" == *" release "* && "$list" == *" aarch64 "* && "$list" == *" armhf "* ]]; then
  say "running: examples/edge-fleet/run.sh (mixed fleet vs simulator)"
  t0=$SECONDS
  ok=1
  "$ROOT/examples/edge-fleet/run.sh" || ok=0
  rows+=("edge-fleet 0 $((SECONDS - t0)) $ok 1")
  n_pass=$((n_pass + ok))
  n_fail=$((n_fail + 1 - ok))
  ((ok)) || failed+=("edge-fleet")
fi

# Where the time went: a table, build/test-times.tsv for this run, and one line
# per preset appended to build/test-times-history.tsv (a trend across runs).
total_s=$((SECONDS - t_start))
mode=full
((quick)) && mode=quick
commit="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
stamp="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
tsv="$ROOT/build/test-times.tsv"
history="$ROOT/build/test-times-history.tsv"
{
  printf 'preset\tbuild_s\ttest_s\tpassed\ttests\n'
  printf 'setup\t%s\t0\t0\t0\n' "$setup_s"
  for r in "${rows[@]}"; do printf '%s\t%s\t%s\t%s\t%s\n' $r; done
  printf 'total\t%s\t\t%s\t%s\n' "$total_s" "$n_pass" "$((n_pass + n_fail))"
} >"$tsv"
[[ -f "$history" ]] || printf 'date\tcommit\tmode\tpreset\tbuild_s\ttest_s\tpassed\ttests\n' >"$history"
for r in "${rows[@]}"; do
  # shellcheck disable=SC2086
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$stamp" "$commit" "$mode" $r >>"$history"
done
printf '%s\t%s\t%s\ttotal\t%s\t\t\t\n' "$stamp" "$commit" "$mode" "$total_s" >>"$history"

say "times (build/test-times.tsv; history in build/test-times-history.tsv):"
awk -F'\t' 'NR == 1 { printf "  %-12s %8s %8s %12s\n", "preset", "build s", "tests s", "passed/tests"; next }
  $1 == "total" { printf "  %-12s %8s %8s %12s\n", "total", $2 " wall", "", $4 "/" $5; next }
  $1 == "setup" { printf "  %-12s %8s\n", "setup", $2; next }
  { printf "  %-12s %8s %8s %12s\n", $1, $2, $3, $4 "/" $5 }' "$tsv"

if command -v ccache >/dev/null 2>&1; then
  stats_after="$(mktemp "${TMPDIR:-/tmp}/fedrt-ccache.XXXXXX")"
  ccache_stats >"$stats_after"
  read -r hits misses < <(ccache_delta "$stats_before" "$stats_after")
  rm -f "$stats_after"
  if ((hits + misses > 0)); then
    say "ccache: $hits hits, $misses misses, hit rate $((100 * hits / (hits + misses)))% ($(ccache -k cache_dir))"
  else
    say "ccache: no compilations in this run ($(ccache -k cache_dir))"
  fi
else
  say "ccache: not installed (scripts/setup.sh installs it)"
fi

((${#failed[@]} == 0)) || err "tests failed for: ${failed[*]}"
say "all presets (${presets[*]}) and checks:"
echo "$n_pass passed, $n_fail failed"
((${#failed[@]} == 0)) || exit 1
