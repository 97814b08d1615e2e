#!/usr/bin/env bash
# The C API against the C++ device (tests/fw_link/fw_link.cmake): N devices
# train on their own CSV shards (docs/data.md) with a real fedrt-coordinator,
# twice: (A) every device is fedrt-device --data SHARD; (B) device 0 is
# c_api_test, a C99 program that drives the C API's poll loop over an
# in-memory transport (fedrt/mcu_device.h), the others are fedrt-device.
# Every round of B must match A: the error e_t = ||x_t - x*||^2 within the
# float32 bound of run_fw_link.sh --compare-sim (|sqrt(e_B) - sqrt(e_A)| <=
# ||x_B - x_A|| <= T H u |x|_inf sqrt(d) = 1.1e-3 for T = 8, H <= 200,
# d <= 8, |x|_inf < 4; here T = 8, H = 10, d = 5, or d = 18 for softmax
# regression with K = 3 classes of p = 5 features and an intercept: 8.1e-5
# at |x|_inf < 4), and the device's reported
# training loss (train_loss) within the same relative bound. The C device
# runs in float32 and differs by rounding only; its samples come in place,
# through the pull callback or by fedrt_feed (--samples), and a small
# transport queue (--queue) makes it wait for room to write and for bytes.
# With --elf, device 0 is instead a firmware image built on the C API with
# its shard in flash (examples/mcu-own-data: fedrt-fw-own under
# qemu-system-arm, UART1 bridged to TCP); --shards then names the shards the
# image was built from (device-0.csv is the one in its flash).
#
#   run_c_api.sh --bin HOST_BIN_DIR --out DIR [--model least_squares|logistic|softmax]
#                [--samples inplace|pull|feed] [--queue BYTES]
#                [--elf FEDRT_FW_OWN.elf --machine mps2-an386 --shards DIR]
#                [--expect-refusal REGEX [--bad-label]]
# --expect-refusal: the C device gets its shard without the last feature
# column (with --bad-label: with the label of its second example set to 3,
# not a class of the 3-class softmax task, nor a binary label); it must
# refuse the task in TaskReply with a reason matching REGEX
# and exit with an error, and the coordinator must log the refusal and finish
# with the other devices (no comparison then).
# Exit: 0 pass, 1 fail, 77 skipped (host tools missing).
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BIN="" OUT="" MODEL=least_squares SAMPLES=feed QUEUE=64 N=3 TIMEOUT=180 ELF="" MACHINE=mps2-an386 SHARDS="" REFUSAL=""
BAD_LABEL=0
while (($#)); do
  case "$1" in
    --bin) BIN="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --model) MODEL="$2"; shift 2 ;;
    --samples) SAMPLES="$2"; shift 2 ;;
    --queue) QUEUE="$2"; shift 2 ;;
    --elf) ELF="$2"; shift 2 ;;
    --machine) MACHINE="$2"; shift 2 ;;
    --shards) SHARDS="$2"; shift 2 ;;
    --expect-refusal) REFUSAL="$2"; shift 2 ;;
    --bad-label) BAD_LABEL=1; shift ;;
    *) echo "run_c_api.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[[ -n "$BIN" && -n "$OUT" ]] || { echo "run_c_api.sh: --bin and --out are required" >&2; exit 2; }
need=(fedrt-keys fedrt-coordinator fedrt-device)
[[ -z "$ELF" ]] && need+=(c_api_test)
for b in "${need[@]}"; do
  [[ -x "$BIN/$b" ]] || { echo "SKIP: $BIN/$b not built (build the release preset first)"; exit 77; }
done
if [[ -n "$ELF" ]]; then
  [[ -f "$ELF" && -d "$SHARDS" ]] || { echo "run_c_api.sh: --elf needs the firmware and --shards" >&2; exit 1; }
  command -v qemu-system-arm >/dev/null || { echo "SKIP: qemu-system-arm not installed"; exit 77; }
fi
rm -rf "$OUT" && mkdir -p "$OUT/shards"
PIDS=()
FW_PIDS=()
# qemu-run.sh runs QEMU under timeout(1) in its own process group: signal its child.
cleanup() {
  local p
  for p in "${FW_PIDS[@]}"; do pkill -TERM -P "$p" 2>/dev/null; done
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

# Shards: d = 5 features with a per-device shift, fixed seed (the same code
# wrote examples/mcu-own-data/shards).
if [[ -n "$SHARDS" ]]; then
  cp "$SHARDS"/device-*.csv "$OUT/shards/" || fail "copying $SHARDS"
  N="$(ls "$OUT/shards"/device-*.csv | wc -l)"
else
/usr/bin/python3 - "$OUT/shards" "$N" "$MODEL" <<'PY' || fail "writing shards"
import math, random, sys
out, n, model = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rng = random.Random(7)
theta = [1.0, -2.0, 0.5, 3.0, -1.0]
for c in range(n):
    with open(f"{out}/device-{c}.csv", "w") as f:
        f.write("f0,f1,label,f2,f3,f4\n")
        for _ in range(30 + 7 * c):
            x = [rng.gauss(0.3 * c, 1.0) for _ in theta]
            z = sum(a * b for a, b in zip(theta, x))
            if model == "logistic":
                y = 1 if rng.random() < 1 / (1 + math.exp(-z)) else 0
            elif model == "softmax":  # K = 3 classes: the largest of three noisy scores
                s = [z, -z + 2.0 * x[1], x[0] - x[3]]
                s = [v + rng.gauss(0.0, 1.0) for v in s]
                y = s.index(max(s))
            else:
                y = z + rng.gauss(0.0, 0.5)
            f.write(",".join(repr(v) for v in x[:2] + [y] + x[2:]) + "\n")
PY
fi
cat >"$OUT/experiment.toml" <<TOML
[experiment]
name = "c-api-$MODEL"
[data]
format = "csv"
train = "shards/device-{id}.csv"
label = "label"
[model]
kind = "$MODEL"
l2 = 0.01
$([[ "$MODEL" == softmax ]] && echo "classes = 3")
$([[ "$MODEL" == least_squares ]] && echo "intercept = true  # ridge (l2) with an intercept: d = p + 1")
[algorithm]
names = ["fedavg", "scaffold"]
step = 0.05
local_steps = 10
batch = 4
[run]
rounds = 8
seed = 3
[network]
deadline_ms = 30000
start_timeout_ms = 60000
quorum = 1.0
TOML
"$BIN/fedrt-keys" --out "$OUT/keys" --devices "$N" >/dev/null || fail "fedrt-keys"

# One federation: $1 = run directory, $2 = 1 when device 0 is the C device.
federate() {
  local dir="$1" c_dev="$2" i id
  mkdir -p "$dir"
  "$BIN/fedrt-coordinator" --config "$OUT/experiment.toml" --out "$dir/run" --keys "$OUT/keys" \
    --state "$dir/coordinator.db" --listen 127.0.0.1 --port 0 --port-file "$dir/port" 2>"$dir/coordinator.log" &
  local co=$!
  PIDS+=("$co")
  for _ in $(seq 100); do [[ -s "$dir/port" ]] && break; sleep 0.1; done
  [[ -s "$dir/port" ]] || fail "coordinator did not start: $(tail -3 "$dir/coordinator.log")"
  local port devs=()
  port="$(cat "$dir/port")"
  for ((i = 0; i < N; i++)); do
    id="$(printf 'dev%04d' "$i")"
    if ((c_dev && i == 0)) && [[ -n "$ELF" ]]; then
      "$ROOT/platform/mps2/make_provision.py" --out "$dir/$id.blob" --index "$i" --id "$id" \
        --psk-hex "$(tr -d ' \n' <"$OUT/keys/devices/$id/device.psk")" >>"$dir/provision.log" 2>&1 \
        || fail "make_provision.py $id"
      "$ROOT/platform/mps2/qemu-run.sh" --machine "$MACHINE" --timeout "$TIMEOUT" --provision "$dir/$id.blob" \
        --serial1 "tcp:127.0.0.1:$port,reconnect=1" "$ELF" >"$dir/$id.log" 2>&1 &
      FW_PIDS+=($!)
    elif ((c_dev && i == 0)); then
      local shard="$OUT/shards/device-$i.csv"
      if [[ -n "$REFUSAL" ]] && ((BAD_LABEL)); then  # example 1's label (column 3) is 3
        shard="$dir/bad-label-device-$i.csv"
        awk -F, -v OFS=, 'NR == 3 { $3 = 3 } { print }' "$OUT/shards/device-$i.csv" >"$shard"
      elif [[ -n "$REFUSAL" ]]; then  # one feature fewer than the task's model
        shard="$dir/short-device-$i.csv"
        cut -d, -f1-5 "$OUT/shards/device-$i.csv" >"$shard"
      fi
      "$BIN/c_api_test" --coordinator "127.0.0.1:$port" --id "$id" --key "$OUT/keys/devices/$id/device.psk" \
        --data "$shard" --samples "$SAMPLES" --queue "$QUEUE" \
        $([[ "$MODEL" == logistic ]] && echo --binary) $([[ "$MODEL" == softmax ]] && echo --max-dim 18) \
        2>"$dir/$id.log" &
    else
      "$BIN/fedrt-device" --coordinator "127.0.0.1:$port" --id "$id" --key "$OUT/keys/devices/$id/device.psk" \
        --data "$OUT/shards/device-$i.csv" 2>"$dir/$id.log" &
    fi
    devs+=($!)
    PIDS+=($!)
  done
  SECONDS=0
  while kill -0 "$co" 2>/dev/null; do
    ((SECONDS > TIMEOUT)) && fail "coordinator still running after ${TIMEOUT} s ($dir)"
    sleep 0.2
  done
  wait "$co" || fail "coordinator exited with an error: $(tail -3 "$dir/coordinator.log")"
  for i in "${!devs[@]}"; do
    if ((c_dev && i == 0)) && [[ -n "$REFUSAL" ]]; then
      wait "${devs[$i]}" && fail "the C device exited without error though it should refuse the task"
      continue
    fi
    wait "${devs[$i]}" || fail "device $i exited with an error: $(tail -3 "$dir/dev000$i.log")"
  done
}

if [[ -n "$REFUSAL" ]]; then
  federate "$OUT/c" 1
  log="$OUT/c/dev0000.log"
  grep -E "refused task reason=.*($REFUSAL)" "$log" | head -1 | grep . \
    || fail "the C device did not refuse the task with a reason matching '$REFUSAL'"
  grep -q "refused device=dev0000 .*stage=task" "$OUT/c/coordinator.log" || fail "the coordinator did not log the refusal"
  grep -q "finished rounds=" "$OUT/c/coordinator.log" || fail "the coordinator did not finish without the C device"
  grep "refused device=dev0000" "$OUT/c/coordinator.log" | head -1
  echo "PASS: the C device refused the task and the federation finished without it"
  exit 0
fi
federate "$OUT/cpp" 0
federate "$OUT/c" 1
log="$OUT/c/dev0000.log"
grep -q "update alg=" "$log" || fail "the C device sent no update"
grep -q "shutdown reason=" "$log" || fail "the C device did not see the coordinator's shutdown"
if [[ -n "$ELF" ]]; then
  grep -E "boot capi|\[mps2\] (workspace|tls_heap|rounds|stack)" "$log"
  SAMPLES=flash QUEUE=UART
else
grep "c_api_test: dev0000" "$log"
fi
case "$SAMPLES" in
  feed) grep -q "fed=1" "$log" || fail "the C device was never asked for samples (FEDRT_NEED_SAMPLE)" ;;
  pull) grep -q -E "pulled=[1-9]" "$log" || fail "the C device's sample callback was never called" ;;
esac
if [[ "$QUEUE" != UART ]] && ((QUEUE < 256)); then  # TLS records are larger than the queue: the device must have waited for room
  grep -q -E "need_write=[1-9]" "$log" || fail "a ${QUEUE}-byte queue never made the device wait to write"
fi
/usr/bin/python3 - "$OUT/c/run/metrics.csv" "$OUT/cpp/run/metrics.csv" "${C_API_BOUND:-1.1e-3}" <<'PY' || fail "the C device's fleet is not within the float32 bound of the C++ fleet"
import csv, math, sys
def rows(p):
    with open(p) as f:
        return {(r["algorithm"], r["run"], r["round"]): r for r in csv.DictReader(f)}
c, cpp, bound = rows(sys.argv[1]), rows(sys.argv[2]), float(sys.argv[3])
if c.keys() != cpp.keys() or not c:
    print(f"rounds differ: C fleet {len(c)} rows, C++ fleet {len(cpp)} rows"); sys.exit(1)
dev = max(abs(math.sqrt(float(c[k]["error"])) - math.sqrt(float(cpp[k]["error"]))) for k in c)
def rel(a, b):  # rounds without reports (NaN) must be so in both fleets
    a, b = float(a), float(b)
    if math.isnan(a) or math.isnan(b):
        return 0.0 if math.isnan(a) and math.isnan(b) else math.inf
    return abs(a - b) / max(abs(b), 1e-300)
loss = max(rel(c[k]["train_loss"], cpp[k]["train_loss"]) for k in c)
reported = sum(not math.isnan(float(c[k]["train_loss"])) for k in c)
same = sum(c[k]["error"] == cpp[k]["error"] for k in c)
last = max(c, key=lambda k: (k[0], int(k[2])))
print(f"rounds compared={len(c)} max |sqrt(e_C) - sqrt(e_C++)|={dev:.3e} max train_loss relative difference={loss:.3e} over {reported} rounds "
      f"(bound {bound:g}); bit-identical rows={same}; last {last[0]} error C={c[last]['error']} C++={cpp[last]['error']}")
sys.exit(0 if dev <= bound and loss <= bound and reported > 0 else 1)
PY
echo "PASS: the C API device matches the C++ device ($MODEL, samples $SAMPLES, transport $QUEUE)"
