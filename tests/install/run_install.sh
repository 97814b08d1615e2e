#!/usr/bin/env bash
# `cmake --install` of a host build into a scratch prefix, then the installed
# programs and an out-of-tree CMake project on the installed C++ device
# library (tests/install/consumer; docs/install.md).
# Usage: run_install.sh --build BUILD_DIR --out SCRATCH_DIR
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="" out=""
while (($#)); do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "run_install.sh: unknown argument '$1' (expected --build DIR --out DIR)" >&2; exit 2 ;;
  esac
done
[[ -n "$build" && -n "$out" ]] || { echo "run_install.sh: --build and --out are required" >&2; exit 2; }
fail() { echo "FAIL: $*" >&2; exit 1; }

rm -rf "$out"
mkdir -p "$out"
prefix="$out/prefix"
cmake --install "$build" --prefix "$prefix" >"$out/install.log"

for p in fedrt-sim fedrt-data fedrt-privacy fedrt-keys fedrt-status fedrt-coordinator fedrt-device; do
  [[ -x "$prefix/bin/$p" ]] || fail "$prefix/bin/$p was not installed"
  "$prefix/bin/$p" --help >/dev/null || fail "$p --help failed"
done
for f in lib/libfedrt_device.a include/fedrt/device.h lib/cmake/fedrt/fedrt-config.cmake \
         lib/systemd/system/fedrt-coordinator.service lib/systemd/system/fedrt-device@.service \
         share/fedrt/device.env.example share/doc/fedrt/device-api.md; do
  [[ -f "$prefix/$f" ]] || fail "$f was not installed"
done
# The units name the programs of this prefix.
grep -q "^ExecStart=$prefix/bin/fedrt-coordinator " "$prefix/lib/systemd/system/fedrt-coordinator.service" \
  || fail "fedrt-coordinator.service does not run $prefix/bin/fedrt-coordinator"
# The units as systemd reads them (an instance of the device template).
if command -v systemd-analyze >/dev/null; then
  units="$out/units"
  mkdir -p "$units"
  cp "$prefix/lib/systemd/system/"*.service "$units/"
  cp "$units/fedrt-device@.service" "$units/fedrt-device@dev0000.service"
  verify="$(systemd-analyze verify "$units/fedrt-coordinator.service" "$units/fedrt-device@dev0000.service" 2>&1)" \
    || fail "systemd-analyze verify: $verify"
  [[ -z "$verify" ]] || fail "systemd-analyze verify warns: $verify"
fi
# Nothing of the build tree or the tests.
if compgen -G "$prefix/bin/*test*" >/dev/null; then fail "tests were installed"; fi

"$prefix/bin/fedrt-keys" --out "$out/keys" --devices 1 --log-level warn

# The installed fedrt-sim draws with the installed plot script (found next to
# the program), not the source tree's: FEDRT_PYTHON is a stand-in that records
# which script it was given.
[[ -f "$prefix/share/fedrt/plot_run.py" ]] || fail "share/fedrt/plot_run.py was not installed"
printf '#!/bin/sh\necho "$1" >"%s"\n' "$out/plot-script" >"$out/python-spy"
chmod +x "$out/python-spy"
(unset FEDRT_PLOT_SCRIPT; FEDRT_PYTHON="$out/python-spy" "$prefix/bin/fedrt-sim" \
   --config "$here/../../examples/scafflsa-fig1/experiment.toml" --rounds 2 --runs 1 \
   --out "$out/sim" >"$out/sim.log" 2>&1) || { cat "$out/sim.log" >&2; fail "installed fedrt-sim failed"; }
[[ "$(cat "$out/plot-script" 2>/dev/null)" == "$prefix/share/fedrt/plot_run.py" ]] \
  || fail "installed fedrt-sim plotted with '$(cat "$out/plot-script" 2>/dev/null)', not $prefix/share/fedrt/plot_run.py"

# The consumer, configured with nothing but the prefix.
cmake -S "$here/consumer" -B "$out/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >"$out/consumer-configure.log" \
  || { cat "$out/consumer-configure.log" >&2; fail "the consumer did not configure"; }
cmake --build "$out/consumer" >"$out/consumer-build.log" \
  || { cat "$out/consumer-build.log" >&2; fail "the consumer did not build"; }
"$out/consumer/consumer" "$out/keys/devices/dev0000/device.psk"
echo "install: programs, library, headers, CMake package, units in $prefix; consumer ok"
