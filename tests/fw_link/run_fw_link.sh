#!/usr/bin/env bash
# Firmware link test (tests/fw_link): a coordinator, firmware devices and
# native fedrt-device processes run tests/fw_link/experiment.toml over TLS.
# Firmware devices are fedrt-fw under qemu-system-arm (--elf) or the same
# client on the host over TCP (fedrt-fw-host). With --mode corrupt-record or
# bad-frames, firmware device 0 talks through fw-link-relay, which tampers
# with its link once; the device must log the rejection with a status and
# still complete the federation.
#
#   run_fw_link.sh --bin HOST_BIN_DIR --out DIR [--elf fedrt-fw.elf --machine mps2-an386]
#                  [--fw N] [--native M] [--mode none|corrupt-record|bad-frames|huge-frame] [--compare-sim]
#                  [--config EXPERIMENT.toml]   (default: tests/fw_link/experiment.toml)
# Exit: 0 pass, 1 fail, 77 skipped (host tools or QEMU missing).
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
CFG="$HERE/experiment.toml"
BIN="" OUT="" ELF="" MACHINE="mps2-an386" NFW=1 NNATIVE=1 MODE=none COMPARE=0 TIMEOUT=240
while (($#)); do
  case "$1" in
    --bin) BIN="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --elf) ELF="$2"; shift 2 ;;
    --machine) MACHINE="$2"; shift 2 ;;
    --fw) NFW="$2"; shift 2 ;;
    --native) NNATIVE="$2"; shift 2 ;;
    --mode) MODE="$2"; shift 2 ;;
    --compare-sim) COMPARE=1; shift ;;
    --config) CFG="$2"; shift 2 ;;
    *) echo "run_fw_link.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[[ -n "$BIN" && -n "$OUT" ]] || { echo "run_fw_link.sh: --bin and --out are required" >&2; exit 2; }
need=(fedrt-keys fedrt-coordinator fedrt-device fedrt-fw-provision fw-link-relay)
[[ -z "$ELF" ]] && need+=(fedrt-fw-host)
((COMPARE)) && need+=(fedrt-sim)
for b in "${need[@]}"; do
  [[ -x "$BIN/$b" ]] || { echo "SKIP: $BIN/$b not built (build the release preset first)"; exit 77; }
done
if [[ -n "$ELF" ]]; then
  [[ -f "$ELF" ]] || { echo "run_fw_link.sh: firmware '$ELF' missing" >&2; exit 1; }
  command -v qemu-system-arm >/dev/null || { echo "SKIP: qemu-system-arm not installed"; exit 77; }
fi

N=$((NFW + NNATIVE))
rm -rf "$OUT" && mkdir -p "$OUT"
PIDS=()
FW_PIDS=()
# qemu-run.sh runs QEMU under timeout(1), which puts itself in its own process
# group: stop the firmware by signalling that child (it forwards to QEMU).
cleanup() {
  local p
  for p in "${FW_PIDS[@]}"; do pkill -TERM -P "$p" 2>/dev/null; done
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$BIN/fedrt-keys" --out "$OUT/keys" --devices "$N" >/dev/null || fail "fedrt-keys"
"$BIN/fedrt-coordinator" --config "$CFG" --agents "$N" --out "$OUT/run" --keys "$OUT/keys" \
  --state "$OUT/coordinator.db" --listen 127.0.0.1 --port 0 --port-file "$OUT/port" 2>"$OUT/coordinator.log" &
COORD=$!
PIDS+=("$COORD")
for _ in $(seq 100); do [[ -s "$OUT/port" ]] && break; sleep 0.1; done
[[ -s "$OUT/port" ]] || fail "coordinator did not start: $(tail -3 "$OUT/coordinator.log")"
PORT="$(cat "$OUT/port")"

for ((i = 0; i < NFW; i++)); do
  id="$(printf 'dev%04d' "$i")"
  psk="$OUT/keys/devices/$id/device.psk"
  "$BIN/fedrt-fw-provision" --config "$CFG" --agents "$N" --index "$i" --out "$OUT/$id.img" 2>>"$OUT/provision.log" \
    || fail "provisioning $id: $(tail -1 "$OUT/provision.log")"
  port="$PORT"
  if [[ "$MODE" != none && $i == 0 ]]; then
    "$BIN/fw-link-relay" --coordinator "127.0.0.1:$PORT" --mode "$MODE" --keys "$OUT/keys" \
      --port-file "$OUT/relay.port" 2>"$OUT/relay.log" &
    PIDS+=($!)
    for _ in $(seq 100); do [[ -s "$OUT/relay.port" ]] && break; sleep 0.1; done
    port="$(cat "$OUT/relay.port")"
  fi
  if [[ -n "$ELF" ]]; then
    "$ROOT/platform/mps2/make_provision.py" --out "$OUT/$id.blob" --index "$i" --id "$id" \
      --psk-hex "$(tr -d ' \n' <"$psk")" --extension "$OUT/$id.img" >>"$OUT/provision.log" 2>&1 \
      || fail "make_provision.py $id"
    "$ROOT/platform/mps2/qemu-run.sh" --machine "$MACHINE" --timeout "$TIMEOUT" --provision "$OUT/$id.blob" \
      --serial1 "tcp:127.0.0.1:$port,reconnect=1" "$ELF" >"$OUT/$id.log" 2>&1 &
  else
    "$BIN/fedrt-fw-host" --coordinator "127.0.0.1:$port" --id "$id" --key "$psk" --problem "$OUT/$id.img" \
      --handshake-timeout-ms 3000 2>"$OUT/$id.log" &
  fi
  FW_PIDS+=($!)
  PIDS+=($!)
done
for ((i = NFW; i < N; i++)); do
  id="$(printf 'dev%04d' "$i")"
  "$BIN/fedrt-device" --coordinator "127.0.0.1:$PORT" --id "$id" --key "$OUT/keys/devices/$id/device.psk" \
    --config "$CFG" --agents "$N" 2>"$OUT/$id.log" &
  PIDS+=($!)
done

SECONDS=0
while kill -0 "$COORD" 2>/dev/null; do
  ((SECONDS > TIMEOUT)) && fail "coordinator still running after ${TIMEOUT} s"
  sleep 0.5
done
wait "$COORD" || fail "coordinator exited with an error: $(tail -3 "$OUT/coordinator.log")"
rc_all=0
for p in "${FW_PIDS[@]}"; do wait "$p" || rc_all=1; done
((rc_all == 0)) || fail "a firmware device exited with an error (logs in $OUT)"

rounds="$(sed -n 's/^rounds *= *\([0-9]*\).*/\1/p' "$CFG")"
nalgs="$(sed -n 's/^names *= *\[\(.*\)\].*/\1/p' "$CFG" | tr ',' '\n' | grep -c .)"  # rounds of every algorithm
grep -q "finished rounds=$((rounds * nalgs))" "$OUT/coordinator.log" || fail "coordinator did not finish $rounds rounds"
for ((i = 0; i < N; i++)); do
  id="$(printf 'dev%04d' "$i")"
  grep -q -E "update alg=|secagg masked alg=" "$OUT/$id.log" || fail "$id sent no update"  # plain or SecAgg+ round
  grep -q "shutdown reason=" "$OUT/$id.log" || fail "$id did not see the coordinator's shutdown"
done
for ((i = 0; i < NFW; i++)); do
  id="$(printf 'dev%04d' "$i")"
  grep -E "tls_heap_hwm|tls_heap_max_bytes" "$OUT/$id.log" | tail -1
done
case "$MODE" in
  corrupt-record)
    grep -q "corrupted TLS record" "$OUT/relay.log" || fail "the relay corrupted nothing"
    grep -q "rejected TLS record: DATA_LOSS" "$OUT/dev0000.log" || fail "dev0000 did not report the rejected record"
    grep "rejected TLS record" "$OUT/dev0000.log" | head -1 ;;
  bad-frames)
    grep -q "undecodable frame" "$OUT/relay.log" || fail "the relay injected nothing"
    grep -q "rejected frame: DATA_LOSS: undecodable" "$OUT/dev0000.log" || fail "dev0000 did not reject the undecodable frame"
    grep -q "rejected frame: OUT_OF_RANGE: frame of 5000 bytes" "$OUT/dev0000.log" \
      || fail "dev0000 did not reject the oversized frame"
    grep "rejected frame" "$OUT/dev0000.log" ;;
  huge-frame)
    grep -q "frame header of 1000000 bytes" "$OUT/relay.log" || fail "the relay injected nothing"
    grep -q "rejected frame: OUT_OF_RANGE: frame of 1000000 bytes.*new session" "$OUT/dev0000.log" \
      || fail "dev0000 did not reject the 1 MB frame by starting a new session"
    grep "rejected frame" "$OUT/dev0000.log" ;;
esac
if ((COMPARE)); then
  "$BIN/fedrt-sim" --config "$CFG" --agents "$N" --out "$OUT/sim" >"$OUT/sim.log" 2>&1 || fail "fedrt-sim"
  /usr/bin/python3 - "$OUT/run/summary.json" "$OUT/sim/summary.json" <<'EOF' || fail "final error not within 2x of the simulator"
import json, sys
def final(p):
    s = json.load(open(p))
    algs = s.get("algorithms", s)
    vals = [v["final_error_mean"] for v in (algs.values() if isinstance(algs, dict) else algs) if isinstance(v, dict) and "final_error_mean" in v]
    return vals[0]
fleet, sim = final(sys.argv[1]), final(sys.argv[2])
print(f"final error: fleet {fleet:.6g}, simulator {sim:.6g}, ratio {fleet / sim:.4f}")
sys.exit(0 if fleet <= 2 * sim else 1)
EOF
fi
echo "PASS: $NFW firmware + $NNATIVE native devices, mode $MODE, $rounds rounds"
