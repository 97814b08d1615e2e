#!/usr/bin/env bash
# Mixed edge fleet check (issue 6, acceptance line 2, Linux part): SCAFFLSA on
# Garnet (d = 8) with a coordinator over TLS and native + emulated aarch64 +
# emulated armhf devices; then the same experiment in the simulator. Prints
# both final errors and their ratio; exits 1 unless
#   - every device's log shows it took part (at least one included update), and
#   - fleet final error <= 2 x simulator final error.
#
#   examples/edge-fleet/run.sh [--native N] [--aarch64 N] [--armhf N] [--cortex-m4 N]
#                              [--bin DIR] [--out DIR]
#
# Needs the presets release, aarch64 and armhf built (./fedrt build <preset>);
# Cortex-M4F firmware devices also need the cortex-m4 preset (fedrt-fw.elf)
# and fedrt-fw-provision in the host bin directory (--bin, default build/release/bin).
# Defaults: 2 native, 8 aarch64, 2 armhf devices, 4 cortex-m4 when the
# firmware is built (else 0), out/edge-fleet.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CONFIG="$ROOT/examples/edge-fleet/experiment.toml"
N_NATIVE=2 N_AARCH64=8 N_ARMHF=2 N_CORTEX_M4=auto OUT="out/edge-fleet"  # relative to the repo root
BIN="$ROOT/build/release/bin"
while (($#)); do
  (($# >= 2)) || { echo "edge-fleet: error: $1 needs a value" >&2; exit 2; }
  case "$1" in
    --native) N_NATIVE="$2" ;;
    --aarch64) N_AARCH64="$2" ;;
    --armhf) N_ARMHF="$2" ;;
    --cortex-m4) N_CORTEX_M4="$2" ;;
    --bin) BIN="$2" ;;
    --out) OUT="$2" ;;
    *) echo "edge-fleet: error: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift 2
done
if [[ "$N_CORTEX_M4" == auto ]]; then
  N_CORTEX_M4=0
  if [[ -f "$ROOT/build/cortex-m4/bin/fedrt-fw.elf" && -x "$BIN/fedrt-fw-provision" ]] \
    && command -v qemu-system-arm >/dev/null; then
    N_CORTEX_M4=4
  fi
fi
for n in "$N_NATIVE" "$N_AARCH64" "$N_ARMHF" "$N_CORTEX_M4"; do
  [[ "$n" =~ ^[0-9]+$ ]] || { echo "edge-fleet: error: device counts must be non-negative integers (got '$n')" >&2; exit 2; }
done
AGENTS=$((N_NATIVE + N_AARCH64 + N_ARMHF + N_CORTEX_M4))
[[ "$OUT" == /* ]] || OUT="$(pwd)/$OUT"
cd "$ROOT" || exit 2
[[ "$OUT" != "$ROOT"/* ]] || OUT="${OUT#"$ROOT"/}"
SIM="$BIN/fedrt-sim"
[[ -x "$SIM" ]] || { echo "edge-fleet: error: $SIM not built (./fedrt build release)" >&2; exit 2; }

echo "[edge-fleet] fleet: $N_NATIVE native + $N_AARCH64 aarch64 (qemu-aarch64) + $N_ARMHF armhf (qemu-arm)" \
  "+ $N_CORTEX_M4 cortex-m4 (qemu-system-arm, float) devices"
"$ROOT/scripts/fleet.sh" --config "$CONFIG" --native "$N_NATIVE" --aarch64 "$N_AARCH64" --armhf "$N_ARMHF" \
  --cortex-m4 "$N_CORTEX_M4" --bin "$BIN" --out "$OUT/fleet" --timeout 900 \
  || { echo "edge-fleet: error: the fleet failed (logs in $OUT/fleet)" >&2; exit 1; }

echo "[edge-fleet] simulator: the same experiment file, --agents $AGENTS"
"$SIM" --config "$CONFIG" --agents "$AGENTS" --no-plot --out "$OUT/sim" >"$OUT/sim.log" 2>&1 \
  || { cat "$OUT/sim.log" >&2; echo "edge-fleet: error: fedrt-sim failed" >&2; exit 1; }

/usr/bin/env python3 - "$OUT" <<'PY'
import csv, json, os, re, sys
out = sys.argv[1]
fleet = json.load(open(os.path.join(out, "fleet", "summary.json")))["algorithms"]["scafflsa"]
sim = json.load(open(os.path.join(out, "sim", "summary.json")))["algorithms"]["scafflsa"]
fe, se = fleet["final_error_mean"], sim["final_error_mean"]
ratio = fe / se if se > 0 else float("inf")
kinds = {}
missing = []
for row in csv.reader(open(os.path.join(out, "fleet", "devices.tsv")), delimiter="\t"):
    dev, _, kind = row
    log = open(os.path.join(out, "fleet", "logs", dev + ".log")).read()
    rounds = len(re.findall(r" committed .* included=true", log))
    kinds.setdefault(kind, []).append(rounds)
    if rounds == 0:
        missing.append(dev)
for kind, r in kinds.items():
    print("[edge-fleet] %-8s devices=%d rounds included per device: min=%d max=%d" % (kind, len(r), min(r), max(r)))
print("[edge-fleet] scafflsa final error: fleet=%.6g simulator=%.6g ratio=%.4f (must be <= 2)" % (fe, se, ratio))
ok = ratio <= 2.0 and not missing
if missing:
    print("[edge-fleet] devices without an included update: " + " ".join(missing))
print("[edge-fleet] " + ("PASS" if ok else "FAIL"))
sys.exit(0 if ok else 1)
PY
