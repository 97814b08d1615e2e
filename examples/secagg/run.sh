#!/usr/bin/env bash
# Secure aggregation on the uplink (examples/secagg/experiment.toml):
#   secure   the file as is (SecAgg+ in every round)
#   plain    secure_aggregation = false, same quantizer and seeds
#   drop20   2 of the 10 agents vanish after sharing keys, every round
#   drop60   6 of 10 vanish (more than n - t = 4): every round fails safely
# then checks that secure and plain have bit-identical iterates.
# Usage: examples/secagg/run.sh [OUT_DIR] (about a minute; X25519 dominates)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
sim="${FEDRT_SIM:-$root/build/release/bin/fedrt-sim}"
out="${1:-$root/out/secagg}"
[[ -x "$sim" ]] || { echo "run.sh: build first (./fedrt build)" >&2; exit 1; }
mkdir -p "$out"
cp "$here/experiment.toml" "$out/secure.toml"
sed 's/^secure_aggregation = true/secure_aggregation = false/' "$here/experiment.toml" > "$out/plain.toml"
{ cat "$here/experiment.toml"; echo "secagg_dropout = 0.2"; } > "$out/drop20.toml"
{ sed 's/^rounds = 50/rounds = 5/' "$here/experiment.toml"; echo "secagg_dropout = 0.6"; } > "$out/drop60.toml"
for v in secure plain drop20 drop60; do
  "$sim" --config "$out/$v.toml" --no-plot --threads 1 --out "$out/$v" > "$out/$v.txt" 2>/dev/null
done
PY=python3; [[ -x /usr/bin/python3 ]] && PY=/usr/bin/python3
"$PY" - "$out" <<'PYEOF'
import csv, json, sys
out = sys.argv[1]
def load(v):
    rows = list(csv.DictReader(open(f"{out}/{v}/metrics.csv")))
    return rows, json.load(open(f"{out}/{v}/summary.json"))
res = {v: load(v) for v in ("secure", "plain", "drop20", "drop60")}
print(f"{'run':8} {'algorithm':9} {'final error':>12} {'agents/round':>12} {'uplink bits/round':>18} {'failed rounds':>13}")
for v, (rows, summ) in res.items():
    for alg in ("fedlsa", "scafflsa"):
        r = [x for x in rows if x["algorithm"] == alg]
        last = r[-1]
        failed = summ["algorithms"][alg].get("secagg_failed_rounds", "-")
        print(f"{v:8} {alg:9} {float(last['error']):12.6e} {last['agents']:>12} {int(last['bits_up']):18d} {str(failed):>13}")
key = lambda rows: [(x["algorithm"], x["round"], x["error"]) for x in rows]
same = key(res["secure"][0]) == key(res["plain"][0])
print("secure vs plain: error column identical to the last digit in every round:", "yes" if same else "NO")
why = res["drop60"][1]["algorithms"]["fedlsa"].get("secagg_first_failure")
print("drop60 first failure:", why)
sys.exit(0 if same else 1)
PYEOF
