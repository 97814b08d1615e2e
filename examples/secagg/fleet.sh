#!/usr/bin/env bash
# Secure aggregation over the network: examples/secagg/experiment.toml on a
# loopback fleet (fedrt-coordinator + 10 fedrt-device processes over TLS, each
# device running SecAggDevice with CTR-DRBG secrets), then the same file in the
# simulator with secure_aggregation = false. Fails unless the fleet's error
# column equals the plain simulator's to the last digit in every round.
# Usage: examples/secagg/fleet.sh [OUT_DIR]   (FEDRT_BIN: directory of the binaries)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="${FEDRT_BIN:-$root/build/release/bin}"
out="${1:-$root/out/secagg-fleet}"
for b in fedrt-coordinator fedrt-device fedrt-keys fedrt-sim; do
  [[ -x "$bin/$b" ]] || { echo "fleet.sh: $bin/$b missing (./fedrt build, or set FEDRT_BIN)" >&2; exit 1; }
done
mkdir -p "$out"
sed 's/^secure_aggregation = true/secure_aggregation = false/' "$here/experiment.toml" > "$out/plain.toml"
"$bin/fedrt-sim" --config "$out/plain.toml" --no-plot --threads 1 --out "$out/plain" > "$out/plain.txt" 2>/dev/null
"$root/scripts/fleet.sh" --config "$here/experiment.toml" --native 10 --bin "$bin" --out "$out/fleet" \
  > "$out/fleet.txt" 2>&1 || { tail -20 "$out/fleet.txt" >&2; exit 1; }
PY=python3; [[ -x /usr/bin/python3 ]] && PY=/usr/bin/python3
"$PY" - "$out" <<'PYEOF'
import csv, json, re, sys
out = sys.argv[1]
fleet = list(csv.DictReader(open(f"{out}/fleet/metrics.csv")))
plain = list(csv.DictReader(open(f"{out}/plain/metrics.csv")))
summary = json.load(open(f"{out}/fleet/summary.json"))
summ = summary["settings"]
failed = sum(a.get("secagg_failed_rounds", 0) for a in summary["algorithms"].values())
log = open(f"{out}/fleet/coordinator.log").read()
lat = [float(x) for x in re.findall(r"closed_by=secagg \S+ \S+ latency_ms=([0-9.]+)", log)]
print(f"{'run':6} {'algorithm':9} {'final error':>12} {'agents/round':>12} {'uplink bits/round':>18}")
for name, rows in (("fleet", fleet), ("plain", plain)):
    for alg in ("fedlsa", "scafflsa"):
        last = [x for x in rows if x["algorithm"] == alg][-1]
        print(f"{name:6} {alg:9} {float(last['error']):12.6e} {last['agents']:>12} {int(last['bits_up']):18d}")
sa = summ["secure_aggregation"]
print(f"fleet: k = {sa['neighbours_at_full_participation']}, t = {sa['threshold_at_full_participation']}, "
      f"failed rounds = {failed}, rounds = {len(lat)}, "
      f"median round latency = {sorted(lat)[len(lat) // 2]:.0f} ms")
key = lambda rows: [(x["algorithm"], x["round"], x["error"]) for x in rows]
same = key(fleet) == key(plain)
print("fleet (secure) vs simulator (plain): error column identical to the last digit in every round:",
      "yes" if same else "NO")
sys.exit(0 if same else 1)
PYEOF
