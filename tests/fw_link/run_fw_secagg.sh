#!/usr/bin/env bash
# Firmware devices in secure-aggregation rounds: the same fleet
# (coordinator, firmware devices, native fedrt-device) runs
# tests/fw_link/experiment_secagg.toml twice through run_fw_link.sh, with
# secure_aggregation = true (every uplink a SecAgg+ input, the coordinator sees
# only masked vectors and their sum) and = false (plain rounding payloads,
# same quantizer and draws). Every device computes its integers x_u the same
# way in both runs (the firmware's float arithmetic too), so the runs differ
# only in how the coordinator turns them into theta_{t+1}: the sum S
# then Delta S / m - clip (secure) against the mean of the m decoded
# Delta x_u - clip in double (plain), a few ulps apart per round. The model
# error of every round must agree to 1e-12 relative: observed about 3e-16,
# while one integer off by one on one coordinate of one device moves theta by
# Delta / m = (2 clip / (2^16 - 1)) / 4 ~ 1.5e-5, about 1e-6 of the error,
# six orders above the tolerance. (The ulp-level difference in theta_t could
# flip a stochastic rounding only with probability ~1e-12 per coordinate; the
# draws are seeded, so this run is deterministic either way.) Every device
# must be in every round.
#
#   run_fw_secagg.sh --bin HOST_BIN_DIR --out DIR [run_fw_link.sh options: --elf, --machine, --fw, --native]
# Exit: 0 pass, 1 fail, 77 skipped.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="" ARGS=() NFW=1
while (($#)); do
  case "$1" in
    --out) OUT="$2"; shift 2 ;;
    --fw) NFW="$2"; ARGS+=("$1" "$2"); shift 2 ;;
    --config) echo "run_fw_secagg.sh: the config is tests/fw_link/experiment_secagg.toml" >&2; exit 2 ;;
    *) ARGS+=("$1"); shift ;;
  esac
done
[[ -n "$OUT" ]] || { echo "run_fw_secagg.sh: --out is required" >&2; exit 2; }
rm -rf "$OUT" && mkdir -p "$OUT"
SECURE="$HERE/experiment_secagg.toml"
PLAIN="$OUT/experiment_plain.toml"
sed 's/^secure_aggregation *= *true/secure_aggregation = false/' "$SECURE" >"$PLAIN"
grep -q '^secure_aggregation = false' "$PLAIN" || { echo "FAIL: could not derive the plain config"; exit 1; }

for mode in secure plain; do
  cfg="$SECURE"
  [[ $mode == plain ]] && cfg="$PLAIN"
  "$HERE/run_fw_link.sh" "${ARGS[@]}" --out "$OUT/$mode" --config "$cfg" --compare-sim
  rc=$?
  ((rc == 0)) || exit "$rc"
done

fail() { echo "FAIL: $*"; exit 1; }
# The firmware devices (dev0000 ..) log their SecAgg+ phases; fedrt-device logs a secure round as "update".
for ((i = 0; i < NFW; i++)); do
  id="$(printf 'dev%04d' "$i")"
  f="$OUT/secure/$id.log"
  grep -q "secagg masked alg=" "$f" || fail "$id sent no masked input (logs in $OUT/secure)"
  grep -q "update alg=" "$f" && fail "$id sent a plain Update in a secure run"
done
grep -q "secagg_failed" "$OUT/secure/coordinator.log" && fail "a secure round failed: $(grep secagg_failed "$OUT/secure/coordinator.log" | head -1)"

/usr/bin/python3 - "$OUT/secure/run/metrics.csv" "$OUT/plain/run/metrics.csv" "$(ls "$OUT"/secure/dev*.log | wc -l)" <<'PY' || fail "secure and plain runs differ"
import csv, sys
def rows(p):
    with open(p) as f:
        return {(r["algorithm"], r["run"], r["round"]): r for r in csv.DictReader(f)}
sec, pla = rows(sys.argv[1]), rows(sys.argv[2])
if sec.keys() != pla.keys() or not sec:
    print(f"rounds differ: secure {sorted(sec)} plain {sorted(pla)}"); sys.exit(1)
same = sum(sec[k]["error"] == pla[k]["error"] for k in sec)
rel = {k: abs(float(sec[k]["error"]) - float(pla[k]["error"])) / abs(float(pla[k]["error"])) for k in sec}
agents = {sec[k]["agents"] for k in sec if k[2] != "0"}
print(f"secure vs plain: rounds={len(sec)} bit-identical errors={same}/{len(sec)} max rel diff={max(rel.values()):.3e} agents per round={sorted(agents)} "
      f"final errors={[sec[k]['error'] for k in sorted(sec) if int(k[2]) == max(int(j[2]) for j in sec if j[0] == k[0])]}")
bad = [k for k in sec if (k[2] != "0" and sec[k]["agents"] != sys.argv[3]) or rel[k] > 1e-12 or sec[k]["agents"] != pla[k]["agents"]]
for k in bad[:5]:
    print(f"  {k}: secure error={sec[k]['error']} agents={sec[k]['agents']}, plain error={pla[k]['error']} agents={pla[k]['agents']}")
sys.exit(1 if bad else 0)
PY
echo "PASS: secure aggregation with firmware devices equals the plain run (every device, every round)"
