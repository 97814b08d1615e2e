#!/usr/bin/env bash
# FedAvg and Scaffold on the heterogeneous least-squares problem of
# examples/fedavg-fedprox-lsq with a compressed uplink: raw float64, random
# dithering (s = 4, 2, 1) with and without compression control variates,
# 8-bit stochastic rounding, and a compressed downlink. Writes table.md.
# Usage: examples/compression-lsq/run.sh [OUT_DIR]   (SIM=path/to/fedrt-sim to override)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
sim="${SIM:-$root/build/release/bin/fedrt-sim}"
out="${1:-$root/out/compression-lsq}"
[[ -x "$sim" ]] || { echo "run.sh: build first (./fedrt build)" >&2; exit 1; }
mkdir -p "$out"
run() {  # run NAME ARGS...
  local name="$1"; shift
  "$sim" --config "$root/examples/fedavg-fedprox-lsq/experiment.toml" --algorithm fedavg,scaffold --rounds 600 \
    --no-plot --out "$out/$name" "$@" > "$out/$name.txt" 2>/dev/null
}
run raw
run dither4 --quantizer dither --levels 4
run dither4_cv --quantizer dither --levels 4 --compress-cv
run dither2_cv --quantizer dither --levels 2 --compress-cv
run dither1 --quantizer dither --levels 1  # Scaffold diverges (see README)
run round8_cv --quantizer rounding --bits 8 --clip 4 --compress-cv
run dither4_cv_down --quantizer dither --levels 4 --compress-cv --compress-downlink
PY=python3; [[ -x /usr/bin/python3 ]] && PY=/usr/bin/python3
"$PY" - "$out" <<'PYEOF' | tee "$here/table.md"
import json, sys
out = sys.argv[1]
rows = [("raw", "raw float64"), ("dither4", "dither s=4"), ("dither4_cv", "dither s=4 + CV"),
        ("dither2_cv", "dither s=2 + CV"), ("dither1", "dither s=1"), ("round8_cv", "rounding 8 bits, clip 4 + CV"),
        ("dither4_cv_down", "dither s=4 + CV, downlink too")]
print("| uplink | FedAvg bits/agent/round | FedAvg ‖x_T − x_FA‖/‖x_FA‖ | Scaffold bits/agent/round | Scaffold ‖x_T − x*‖² |")
print("|---|---|---|---|---|")
for key, label in rows:
    s = json.load(open(f"{out}/{key}/summary.json"))
    a, b = s["algorithms"]["fedavg"], s["algorithms"]["scaffold"]
    def bits(alg):
        with open(f"{out}/{key}/metrics.csv") as f:
            next(f)
            for line in f:
                name, run, rnd, err, agents, up, down = line.strip().split(",")
                if name == alg and rnd == "1":
                    return int(up) // int(agents)
    print(f"| {label} | {bits('fedavg')} | {a['final_rel_diff_from_fixed_point']:.2e} | "
          f"{bits('scaffold')} | {b['final_error_mean']:.2e} |")
PYEOF
