#!/usr/bin/env bash
# Runs the device API example: a coordinator, three fedrt-device processes and
# fedrt-example-device-api as device 0, all on loopback over TLS (PSK).
#   examples/device-api/run.sh [--bin DIR] [--out DIR]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BIN="$ROOT/build/release/bin" OUT="out/device-api"
while (($#)); do
  (($# >= 2)) || { echo "device-api: error: $1 needs a value" >&2; exit 2; }
  case "$1" in
    --bin) BIN="$2" ;;
    --out) OUT="$2" ;;
    *) echo "device-api: error: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift 2
done
EX="$ROOT/examples/device-api"
for b in fedrt-coordinator fedrt-device fedrt-keys fedrt-example-device-api; do
  [[ -x "$BIN/$b" ]] || { echo "device-api: error: $BIN/$b not built (cmake --build ... --target $b)" >&2; exit 1; }
done
rm -rf "$OUT" && mkdir -p "$OUT"
"$BIN/fedrt-keys" --out "$OUT/keys" --devices 4 > "$OUT/keys.log"
"$BIN/fedrt-coordinator" --config "$EX/experiment.toml" --keys "$OUT/keys" --state "$OUT/coordinator.db" \
  --out "$OUT/results" --listen 127.0.0.1 --port 0 --port-file "$OUT/port" --no-plot 2> "$OUT/coordinator.log" &
CO=$!
trap 'kill $CO 2>/dev/null || true' EXIT
for _ in $(seq 300); do [[ -s "$OUT/port" ]] && break; sleep 0.1; done
PORT="$(cat "$OUT/port")"
for i in 1 2 3; do
  id="dev000$i"
  "$BIN/fedrt-device" --coordinator "127.0.0.1:$PORT" --id "$id" --key "$OUT/keys/devices/$id/device.psk" \
    --state "$OUT/$id" --data "$EX/shards/device-$i.csv" 2> "$OUT/$id.log" &
done
"$BIN/fedrt-example-device-api" "127.0.0.1:$PORT" dev0000 "$OUT/keys/devices/dev0000/device.psk" \
  "$EX/shards/device-0.csv" "$OUT/dev0000"
wait $CO
echo "coordinator: $OUT/results/metrics.csv"
