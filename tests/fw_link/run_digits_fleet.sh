#!/usr/bin/env bash
# The digits example (examples/digits: softmax regression, d = 650, 20 CSV
# shards) on a mixed fleet: scripts/fleet.sh with native fedrt-device
# processes and Cortex-M4F devices (fedrt-fw-digits under qemu-system-arm, each
# reading its shard from a blob in its flash), against fedrt-sim on the same
# shards. Every round of metrics.csv must agree within float32 round-off:
# the firmware computes its local steps in float32, so (run_fw_link.sh
# --compare-sim) |sqrt(e_fleet) - sqrt(e_sim)| <= ||x_fleet - x_sim||
# <= T H u |x|_inf sqrt(d), u = 2^-24, with |x|_inf <= ||x_t|| <=
# ||x*|| + sqrt(e_t) and ||x*||^2 = e_0 (x_0 = 0); the test and training
# losses within the same bound relative, and the test accuracy within one
# held-out example per round (a prediction at a tie of two classes may flip
# with the rounding). The firmware devices must have sent updates.
#
#   run_digits_fleet.sh --bin HOST_BIN_DIR --elf fedrt-fw-digits.elf --out DIR
#                       [--rounds T] [--native N] [--fw M] [--config EXPERIMENT.toml] [--exact]
# --exact: metrics.csv must equal the simulator's byte for byte (an experiment
# whose updates are exactly zero: experiment_ddp_zero.toml).
# Exit: 0 pass, 1 fail, 77 skipped (host tools or QEMU missing).
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BIN="" ELF="" OUT="" ROUNDS=3 NNATIVE=18 NFW=2 CFG="$ROOT/examples/digits/experiment.toml" EXACT=0
while (($#)); do
  case "$1" in
    --bin) BIN="$2"; shift 2 ;;
    --elf) ELF="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --native) NNATIVE="$2"; shift 2 ;;
    --fw) NFW="$2"; shift 2 ;;
    --config) CFG="$2"; shift 2 ;;
    --exact) EXACT=1; shift ;;
    *) echo "run_digits_fleet.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[[ -n "$BIN" && -n "$ELF" && -n "$OUT" ]] || { echo "run_digits_fleet.sh: --bin, --elf and --out are required" >&2; exit 2; }
for b in fedrt-keys fedrt-coordinator fedrt-device fedrt-sim; do
  [[ -x "$BIN/$b" ]] || { echo "SKIP: $BIN/$b not built (build the release preset first)"; exit 77; }
done
command -v qemu-system-arm >/dev/null || { echo "SKIP: qemu-system-arm not installed"; exit 77; }
[[ -f "$ELF" ]] || { echo "FAIL: firmware '$ELF' missing"; exit 1; }
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$OUT" && mkdir -p "$OUT"

# The experiment with T rounds, its shard paths made absolute (they are relative to the file).
dir="$(cd "$(dirname "$CFG")" && pwd)"
sed -e "s#^rounds *= *[0-9]*#rounds = $ROUNDS#" -e "s#^\(train\|test\) *= *\"\([^/\"][^\"]*\)\"#\1 = \"$dir/\2\"#" \
  "$CFG" >"$OUT/experiment.toml"
SECONDS=0
FEDRT_CORTEX_M4_ELF="$ELF" "$ROOT/scripts/fleet.sh" --config "$OUT/experiment.toml" --native "$NNATIVE" \
  --cortex-m4 "$NFW" --auth psk --bin "$BIN" --out "$OUT" --timeout 300 >"$OUT/fleet.log" 2>&1 \
  || fail "the fleet failed: $(tail -5 "$OUT/fleet.log")"
echo "fleet: $NNATIVE native + $NFW cortex-m4 devices, $ROUNDS rounds per algorithm, ${SECONDS} s"
grep "\[fleet\]   " "$OUT/fleet.log"
for ((i = NNATIVE; i < NNATIVE + NFW; i++)); do
  log="$OUT/logs/$(printf 'dev%04d' "$i").log"
  grep -q -E "update alg=|secagg masked alg=" "$log" || fail "firmware device $i sent no update ($log)"
  # fedrt-fw-digits speaks TLS 1.3 with an X25519 exchange (runtime/fw/fw_mbedtls_config.h).
  id="$(printf 'dev%04d' "$i")"
  grep -q "ready device=$id .*tls=TLSv1.3/X25519" "$OUT/coordinator.log" \
    || fail "$id's session is not TLSv1.3/X25519: $(grep "ready device=$id " "$OUT/coordinator.log" | tail -1)"
  grep -E "\[mps2\] (workspace_need|workspace_hwm|tls_heap_hwm|stack_hwm)" "$log" | tr '\n' ' '
  echo
done
"$BIN/fedrt-sim" --config "$OUT/experiment.toml" --out "$OUT/sim" --no-plot >"$OUT/sim.log" 2>&1 \
  || fail "fedrt-sim failed: $(tail -3 "$OUT/sim.log")"

test_csv="$(sed -n 's#^test *= *"\([^"]*\)".*#\1#p' "$OUT/experiment.toml" | head -1)"
n_test=$(($(grep -c . "$test_csv") - 1))
/usr/bin/python3 - "$OUT/metrics.csv" "$OUT/sim/metrics.csv" "$OUT/experiment.toml" "$OUT/sim/summary.json" "$n_test" <<'PY' \
  || fail "the fleet's metrics are not within float32 round-off of the simulator's"
import csv, json, math, re, sys
def rows(p):
    with open(p) as f:
        return {(r["algorithm"], r["run"], int(r["round"])): r for r in csv.DictReader(f)}
fleet, sim = rows(sys.argv[1]), rows(sys.argv[2])
cfg = open(sys.argv[3]).read()
H = int(re.search(r"^local_steps *= *(\d+)", cfg, re.M).group(1))
d = len(json.load(open(sys.argv[4]))["problem"]["x_star"])
if fleet.keys() != sim.keys() or not fleet:
    print(f"rounds differ: fleet {len(fleet)} rows, simulator {len(sim)} rows"); sys.exit(1)
n_test = int(sys.argv[5])
ok = True
worst = {"error": 0.0, "test_loss": 0.0, "train_loss": 0.0, "accuracy": 0.0}
for alg in sorted({k[0] for k in sim}):
    keys = sorted(k for k in sim if k[0] == alg)
    e0 = float(sim[keys[0]]["error"])
    T = max(k[2] for k in keys)
    top = math.sqrt(e0) + max(math.sqrt(float(sim[k]["error"])) for k in keys)
    bound = T * H * 2.0**-24 * top * math.sqrt(d)
    for k in keys:
        f, s = fleet[k], sim[k]
        de = abs(math.sqrt(float(f["error"])) - math.sqrt(float(s["error"])))
        rel = lambda c: abs(float(f[c]) - float(s[c])) / max(abs(float(s[c])), 1e-300) if not math.isnan(float(s[c])) else 0.0
        da = abs(float(f["test_accuracy"]) - float(s["test_accuracy"]))
        worst["error"] = max(worst["error"], de)
        worst["test_loss"] = max(worst["test_loss"], rel("test_loss"))
        worst["train_loss"] = max(worst["train_loss"], rel("train_loss"))
        worst["accuracy"] = max(worst["accuracy"], da)
        if de > bound or rel("test_loss") > bound or rel("train_loss") > bound or da > 1.0 / n_test + 1e-12:
            print(f"{k}: |sqrt(e) diff| {de:.3e}, test_loss rel {rel('test_loss'):.3e}, train_loss rel "
                  f"{rel('train_loss'):.3e}, accuracy diff {da:.4f} (bound {bound:.3e})"); ok = False
    last = sim[keys[-1]]
    print(f"{alg}: T={T} bound {bound:.2e}; round {T}: error fleet {float(fleet[keys[-1]]['error']):.9e} sim "
          f"{float(last['error']):.9e}, test accuracy fleet {float(fleet[keys[-1]]['test_accuracy']):.4f} sim "
          f"{float(last['test_accuracy']):.4f}")
same = sum(fleet[k]["error"] == sim[k]["error"] for k in sim)
print(f"rows compared={len(sim)} (bit-identical {same}); max |sqrt(e_fleet) - sqrt(e_sim)|={worst['error']:.3e}, "
      f"test_loss rel {worst['test_loss']:.3e}, train_loss rel {worst['train_loss']:.3e}, test accuracy {worst['accuracy']:.4f}")
sys.exit(0 if ok else 1)
PY
if ((EXACT)); then
  cmp "$OUT/metrics.csv" "$OUT/sim/metrics.csv" || fail "metrics.csv differs from the simulator's"
  echo "metrics.csv equals the simulator's byte for byte ($(($(grep -c . "$OUT/metrics.csv") - 1)) rows)"
fi
echo "PASS: the digits fleet with Cortex-M4F devices is within float32 round-off of the simulator"
