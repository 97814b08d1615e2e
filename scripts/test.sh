#!/usr/bin/env bash
# ./fedrt test [--quick] [CTEST ARGS...]: build the presets and run their tests
# (docs/testing.md).
#
#   full (default)  every preset of $FEDRT_TEST_PRESETS (default "release
#                   cortex-m4 cortex-m3 aarch64 armhf debug") and the mixed edge
#                   fleet (examples/edge-fleet/run.sh), then the Debian packages
#                   (tests/install/run_debs.sh); what CI runs (.ci/run).
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
  # Release first (the Cortex-M fleet tests drive its host tools), then the
  # presets whose tests leave the cores idle longest, so the large builds
  # after them fill that time; the debug build last, beside the mixed edge
  # fleet (which needs release, cortex-m4, aarch64 and armhf, and waits on
  # emulators two thirds of its time).
  read -r -a presets <<<"${FEDRT_TEST_PRESETS:-release cortex-m4 cortex-m3 aarch64 armhf debug}"
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

# ctest for PRESET, output to LOG; writes "test_s passed total ok" to RESULT.
run_ctest() {
  local preset="$1" log="$2" result="$3" live="${4:-}" t1 ok=1 line p=0 t=0
  local cmd=(ctest --preset "$preset" --output-on-failure -j "$(test_jobs "$preset")")
  if ((quick)); then
    cmd+=(-L '^(unit|device|cli|quick)$')
  elif [[ "$preset" != release ]]; then
    # Sanitizer and emulated builds: the long statistical runs stay with release.
    cmd+=(-LE statistical)
  fi
  cmd+=("${ctest_args[@]}")
  echo "[fedrt] running: ${cmd[*]}" >"$log"
  t1=$SECONDS
  if [[ "$live" == live ]]; then
    cat "$log"
    (cd "$ROOT" && "${cmd[@]}") 2>&1 | tee -a "$log" || ok=0
  else
    (cd "$ROOT" && "${cmd[@]}") >>"$log" 2>&1 || ok=0
  fi
  # ctest's "N% tests passed, F tests failed out of T" gives the counts.
  line="$(grep -E 'tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1 || true)"
  if [[ "$line" =~ ([0-9]+)\ tests?\ failed\ out\ of\ ([0-9]+) ]]; then
    t=${BASH_REMATCH[2]}
    p=$((t - BASH_REMATCH[1]))
  fi
  echo "$((SECONDS - t1)) $p $t $ok" >"$result"
}

# Builds run one after another in the foreground; each preset's tests run in
# the background as soon as it is built and the previous preset's tests are
# done, so the next build uses the cores the tests leave idle (the release
# and Cortex-M tests mostly wait on sockets and emulators). Builds run at
# nice 15 so that the tests keep the CPU they would have alone. One preset
# (--quick) runs its tests in the foreground. Logs: build/<preset>/ctest.log.
queue="$(mktemp -d "${TMPDIR:-/tmp}/fedrt-test-queue.XXXXXX")"
tester_pid=""
cleanup() {
  [[ -z "$tester_pid" ]] || kill "$tester_pid" 2>/dev/null || true
  rm -f "$stats_before" "$log"
  rm -rf "$queue"
}
trap cleanup EXIT

# Mixed edge fleet: native + qemu-user aarch64/armhf devices (+ Cortex-M4F
# firmware when built) and a TLS coordinator vs the simulator. It needs the
# release, aarch64 and armhf builds, and runs only in the full command
# without ctest arguments, after the tests of the last of those presets (and
# of cortex-m4 when listed). Writes "test_s ok" to $queue/edge-fleet.result.
edge_log="$ROOT/build/edge-fleet.log"
edge_after=""
list=" ${presets[*]} "
if ((quick == 0 && ${#ctest_args[@]} == 0)) \
  && [[ "$list" == *" release "* && "$list" == *" aarch64 "* && "$list" == *" armhf "* ]]; then
  for preset in "${presets[@]}"; do
    case "$preset" in release | aarch64 | armhf | cortex-m4) edge_after="$preset" ;; esac
  done
fi
run_edge_fleet() {
  local t0=$SECONDS ok=1 need
  for need in release aarch64 armhf; do
    if [[ ! -e "$queue/$need.built" ]]; then
      echo "[fedrt] edge fleet not run: preset '$need' did not build" >"$edge_log"
      echo "0 0" >"$queue/edge-fleet.result"
      return 0
    fi
  done
  echo "[fedrt] running: examples/edge-fleet/run.sh (mixed fleet vs simulator)" >"$edge_log"
  "$ROOT/examples/edge-fleet/run.sh" >>"$edge_log" 2>&1 || ok=0
  echo "$((SECONDS - t0)) $ok" >"$queue/edge-fleet.result"
  say "edge fleet done: $( ((ok)) && echo PASS || echo FAIL) in $((SECONDS - t0)) s (log: build/edge-fleet.log)"
}

# The Debian packages (tests/install/run_debs.sh, docs/install.md): CPack in
# the release, aarch64 and armhf builds (scripts/package.sh --no-build), then
# the host package installed with apt in a clean Debian 12 root and the
# device packages with dpkg, their fedrt-device under qemu-user. Runs after
# the edge fleet, with the same builds; about 20 s warm (the bootstrapped
# root and the downloaded .debs are cached in ~/.cache/fedrt). Writes
# "test_s ok" to $queue/debs.result.
debs_log="$ROOT/build/debs.log"
run_deb_check() {
  local t0=$SECONDS ok=1 need
  for need in release aarch64 armhf; do
    if [[ ! -e "$queue/$need.built" ]]; then
      echo "[fedrt] Debian packages not checked: preset '$need' did not build" >"$debs_log"
      echo "0 0" >"$queue/debs.result"
      return 0
    fi
  done
  echo "[fedrt] running: scripts/package.sh --no-build, tests/install/run_debs.sh" >"$debs_log"
  { "$ROOT/scripts/package.sh" --no-build \
      && "$ROOT/tests/install/run_debs.sh" --packages "$ROOT/build/packages" --out "$ROOT/build/debs-test"; } \
    >>"$debs_log" 2>&1 || ok=0
  echo "$((SECONDS - t0)) $ok" >"$queue/debs.result"
  say "Debian packages done: $( ((ok)) && echo PASS || echo FAIL) in $((SECONDS - t0)) s (log: build/debs.log)"
}

tester() {
  local preset
  for preset in "${presets[@]}"; do
    while [[ ! -e "$queue/$preset.built" && ! -e "$queue/$preset.failed" ]]; do sleep 1; done
    if [[ -e "$queue/$preset.built" ]]; then
      run_ctest "$preset" "$ROOT/build/$preset/ctest.log" "$queue/$preset.result"
      read -r ts p t ok <"$queue/$preset.result"
      say "tests of '$preset' done: $p/$t passed in ${ts} s (log: build/$preset/ctest.log)"
    fi
    [[ "$preset" != "$edge_after" ]] || { run_edge_fleet; run_deb_check; }
  done
}
if ((${#presets[@]} > 1)); then
  tester &
  tester_pid=$!
fi
declare -A build_s
for preset in "${presets[@]}"; do
  t0=$SECONDS
  if ! NICE=15 build_preset "$preset"; then
    build_s[$preset]=$((SECONDS - t0))
    touch "$queue/$preset.failed"
    continue
  fi
  build_s[$preset]=$((SECONDS - t0))
  if ((${#presets[@]} > 1)); then
    touch "$queue/$preset.built"
    say "tests of '$preset' queued (they run while the next preset builds)"
  else
    run_ctest "$preset" "$log" "$queue/$preset.result" live
  fi
done
if ((${#presets[@]} > 1)); then
  say "waiting for the queued tests"
  wait "$tester_pid" || true
  tester_pid=""
fi

# Every preset's ctest output, in order, then the tally.
for preset in "${presets[@]}"; do
  if [[ -e "$queue/$preset.failed" ]]; then
    failed+=("$preset (build)")
    n_fail=$((n_fail + 1))
    rows+=("$preset ${build_s[$preset]} 0 0 0")
    continue
  fi
  if ((${#presets[@]} > 1)); then
    echo "==== ctest: $preset (build/$preset/ctest.log) ===="
    cat "$ROOT/build/$preset/ctest.log"
  fi
  ts=0 p=0 t=0 ok=0
  [[ -f "$queue/$preset.result" ]] && read -r ts p t ok <"$queue/$preset.result"
  ((ok)) || failed+=("$preset")
  if ((t > 0)); then
    n_pass=$((n_pass + p))
    n_fail=$((n_fail + t - p))
  elif ((ok == 0)); then
    n_fail=$((n_fail + 1))  # ctest itself failed (no summary)
  fi
  rows+=("$preset ${build_s[$preset]} $ts $p $t")
done

if [[ -n "$edge_after" ]]; then
  echo "==== edge fleet (build/edge-fleet.log) ===="
  cat "$edge_log"
  ts=0 ok=0
  [[ -f "$queue/edge-fleet.result" ]] && read -r ts ok <"$queue/edge-fleet.result"
  rows+=("edge-fleet 0 $ts $ok 1")
  n_pass=$((n_pass + ok))
  n_fail=$((n_fail + 1 - ok))
  ((ok)) || failed+=("edge-fleet")
  echo "==== Debian packages (build/debs.log) ===="
  cat "$debs_log"
  ts=0 ok=0
  [[ -f "$queue/debs.result" ]] && read -r ts ok <"$queue/debs.result"
  rows+=("debs 0 $ts $ok 1")
  n_pass=$((n_pass + ok))
  n_fail=$((n_fail + 1 - ok))
  ((ok)) || failed+=("debs")
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
