#!/usr/bin/env bash
# A loopback fleet: provisions keys, starts fedrt-coordinator and N
# fedrt-device processes on 127.0.0.1, waits for the experiment to finish and
# collects the outputs and per-device logs in --out.
#
#   scripts/fleet.sh --config EXPERIMENT.toml --devices N [--out DIR] [--auth psk|cert|mixed]
#                    [--bin DIR] [--timeout SECONDS] [-- COORDINATOR_ARGS...]
#
# mixed (default): even devices use their PSK, odd devices their certificate.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$ROOT/build/release/bin"
CONFIG="" DEVICES="" OUT="out/fleet" AUTH="mixed" TIMEOUT=600
EXTRA=()
while (($#)); do
  case "$1" in
    --config) CONFIG="$2"; shift 2 ;;
    --devices) DEVICES="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --auth) AUTH="$2"; shift 2 ;;
    --bin) BIN="$2"; shift 2 ;;
    --timeout) TIMEOUT="$2"; shift 2 ;;
    --) shift; EXTRA=("$@"); break ;;
    *) echo "fleet: error: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[[ -n "$CONFIG" && -f "$CONFIG" ]] || { echo "fleet: error: --config EXPERIMENT.toml is required (got '${CONFIG}')" >&2; exit 2; }
[[ "$DEVICES" =~ ^[1-9][0-9]*$ ]] || { echo "fleet: error: --devices must be a positive integer (got '${DEVICES}')" >&2; exit 2; }
case "$AUTH" in psk|cert|mixed) ;; *) echo "fleet: error: --auth must be psk, cert or mixed (got '$AUTH')" >&2; exit 2 ;; esac
for b in fedrt-keys fedrt-coordinator fedrt-device; do
  [[ -x "$BIN/$b" ]] || { echo "fleet: error: $BIN/$b not built (./fedrt build)" >&2; exit 2; }
done

mkdir -p "$OUT/devices"
rm -rf "$OUT/keys" "$OUT/coordinator.db" "$OUT/coordinator.db-wal" "$OUT/coordinator.db-shm" "$OUT"/devices/*.state "$OUT/port"
"$BIN/fedrt-keys" --out "$OUT/keys" --devices "$DEVICES" >/dev/null || { echo "fleet: error: provisioning failed" >&2; exit 1; }

PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]}" ${COORD_PID:-}; do kill "$p" 2>/dev/null; done
}
trap cleanup EXIT INT TERM

"$BIN/fedrt-coordinator" --config "$CONFIG" --agents "$DEVICES" --out "$OUT" --keys "$OUT/keys" \
  --state "$OUT/coordinator.db" --listen 127.0.0.1 --port 0 --port-file "$OUT/port" "${EXTRA[@]}" \
  2> >(tee "$OUT/coordinator.log" | grep --line-buffered -E " (round|refused|rejected|listening|start|finished) " >&2) &
COORD_PID=$!
for _ in $(seq 1 300); do
  [[ -s "$OUT/port" ]] && break
  kill -0 "$COORD_PID" 2>/dev/null || break
  sleep 0.1
done
if [[ ! -s "$OUT/port" ]]; then
  wait "$COORD_PID"
  echo "fleet: error: the coordinator did not start (see $OUT/coordinator.log)" >&2
  exit 1
fi
PORT="$(cat "$OUT/port")"
echo "[fleet] coordinator on 127.0.0.1:$PORT, starting $DEVICES devices (auth $AUTH)" >&2

for ((i = 0; i < DEVICES; i++)); do
  id="$(printf 'dev%04d' "$i")"
  dir="$OUT/keys/devices/$id"
  mode="$AUTH"
  [[ "$mode" == mixed ]] && mode=$([[ $((i % 2)) == 0 ]] && echo psk || echo cert)
  if [[ "$mode" == psk ]]; then
    cred=(--key "$dir/device.psk")
  else
    cred=(--cert "$dir/device.crt" --key "$dir/device.key" --ca "$dir/ca.crt")
  fi
  "$BIN/fedrt-device" --coordinator "127.0.0.1:$PORT" --id "$id" "${cred[@]}" --config "$CONFIG" \
    --agents "$DEVICES" --state "$OUT/devices/$id.state" 2>"$OUT/devices/$id.log" &
  PIDS+=($!)
done

# Wait for the coordinator (bounded by --timeout).
SECONDS=0
while kill -0 "$COORD_PID" 2>/dev/null; do
  if ((SECONDS > TIMEOUT)); then
    echo "fleet: error: timeout after ${TIMEOUT}s" >&2
    exit 1
  fi
  sleep 0.2
done
wait "$COORD_PID"
RC=$?
COORD_PID=""
# Devices exit on the coordinator's shutdown message; give them a moment.
for _ in $(seq 1 50); do
  alive=0
  for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
  ((alive)) || break
  sleep 0.1
done
if ((RC != 0)); then
  echo "fleet: error: coordinator exited with status $RC (see $OUT/coordinator.log)" >&2
  exit "$RC"
fi
echo "[fleet] done: $OUT/{metrics.csv,summary.json,error.png,coordinator.log,coordinator.db} and $OUT/devices/*.log" >&2
