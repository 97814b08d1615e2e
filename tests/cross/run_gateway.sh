#!/usr/bin/env bash
# The static fedrt-gateway of an ARM preset (aarch64, armhf) under qemu-user
# between the host's coordinator and 4 host devices (docs/gateways.md): the
# run's metrics.csv must be fedrt-sim's, every device up through the gateway,
# one partial handed up per round and algorithm.
#   run_gateway.sh --emulator QEMU --gateway ARM_BIN/fedrt-gateway --host-bin HOST_BIN_DIR --out DIR
# Exit: 0 pass, 1 fail, 77 skipped (the host build or the emulator missing).
set -uo pipefail
EMU="" GW="" BIN="" OUT=""
while (($#)); do
  case "$1" in
    --emulator) EMU="$2"; shift 2 ;;
    --gateway) GW="$2"; shift 2 ;;
    --host-bin) BIN="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    *) echo "run_gateway.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
for p in fedrt-coordinator fedrt-device fedrt-keys fedrt-sim; do
  [[ -x "$BIN/$p" ]] || { echo "SKIP: $BIN/$p not built (./fedrt build release)"; exit 77; }
done
[[ -x "$EMU" ]] || { echo "SKIP: no emulator '$EMU'"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$OUT" && mkdir -p "$OUT" && cd "$OUT" || exit 1
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null' EXIT
"$BIN/fedrt-keys" --out keys --devices 4 >/dev/null 2>&1 || fail "fedrt-keys"
"$BIN/fedrt-keys" gateways --keys keys --count 1 >/dev/null 2>&1 || fail "fedrt-keys gateways"
cat >exp.toml <<'TOML'
[problem]
kind = "lsq"
agents = 4
dim = 5
[algorithm]
names = ["fedavg", "scaffold"]
step = 0.05
local_steps = 10
[participation]
rate = 0.75
[run]
rounds = 5
runs = 1
seed = 3
[network]
deadline_ms = 30000
quorum = 1.0
TOML
"$BIN/fedrt-coordinator" --config exp.toml --keys keys --state c.db --out out --port 0 --port-file port --no-plot \
  2>coordinator.log &
COORD=$!
PIDS+=("$COORD")
for _ in $(seq 100); do [[ -s port ]] && break; sleep 0.1; done
[[ -s port ]] || fail "coordinator did not start: $(tail -2 coordinator.log)"
"$EMU" "$GW" --coordinator "127.0.0.1:$(cat port)" --id gw00 --keys keys/gateways/gw00 --port 0 --port-file gw.port \
  2>gateway.log &
PIDS+=($!)
for _ in $(seq 300); do [[ -s gw.port ]] && break; sleep 0.1; done
[[ -s gw.port ]] || fail "gateway did not start: $(tail -2 gateway.log)"
for i in 0 1 2 3; do
  id="$(printf 'dev%04d' "$i")"
  "$BIN/fedrt-device" --coordinator "127.0.0.1:$(cat gw.port)" --id "$id" --key "keys/devices/$id/device.psk" 2>"$id.log" &
  PIDS+=($!)
done
SECONDS=0
while kill -0 "$COORD" 2>/dev/null; do
  ((SECONDS > 120)) && fail "coordinator still running after 120 s"
  sleep 0.1
done
wait "$COORD" || fail "coordinator exited with an error: $(tail -2 coordinator.log)"
"$BIN/fedrt-sim" --config exp.toml --out sim --no-plot >sim.log 2>&1 || fail "fedrt-sim"
cmp out/metrics.csv sim/metrics.csv || fail "metrics.csv differs from the simulator's"
(($(grep -c " via=gw00 " coordinator.log) == 4)) || fail "not every device came up through the gateway"
(($(grep -c "partial round=" gateway.log) >= 10)) || fail "the gateway handed up fewer partials than rounds"
file "$GW" | grep -q "statically linked" || fail "$GW is not a static executable"
echo "PASS: static $(file -b "$GW" | cut -d, -f2 | sed 's/^ //') fedrt-gateway under $(basename "$EMU"): metrics.csv equals fedrt-sim's ($(($(wc -l <out/metrics.csv) - 1)) rows), $(grep -c "partial round=" gateway.log) partials"
