#!/usr/bin/env bash
# Runs the user-model example: a coordinator and one process holding six
# fedrt::Device objects (one thread each) that train the two-layer network of
# model.h on their own shards, over TLS on loopback.
#   examples/user-model/run.sh [--bin DIR] [--out DIR] [--check]
# --check (ctest): exit 1 unless, for every algorithm, the devices' mean
# training loss (metrics.csv train_loss: mean of f_c at the broadcast model)
# falls below half its first value by the last round, and its mean over each
# block of 5 rounds is at most the previous block's.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BIN="$ROOT/build/release/bin" OUT="out/user-model" CHECK=0
while (($#)); do
  case "$1" in
    --check) CHECK=1; shift; continue ;;
    --bin) BIN="${2:?--bin needs a value}" ;;
    --out) OUT="${2:?--out needs a value}" ;;
    *) echo "user-model: error: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift 2
done
EX="$ROOT/examples/user-model"
for b in fedrt-coordinator fedrt-keys fedrt-example-user-model; do
  [[ -x "$BIN/$b" ]] || { echo "user-model: error: $BIN/$b not built (cmake --build ... --target $b)" >&2; exit 1; }
done
rm -rf "$OUT" && mkdir -p "$OUT"
"$BIN/fedrt-keys" --out "$OUT/keys" --devices 6 > "$OUT/keys.log"
"$BIN/fedrt-coordinator" --config "$EX/experiment.toml" --keys "$OUT/keys" --state "$OUT/coordinator.db" \
  --out "$OUT/results" --listen 127.0.0.1 --port 0 --port-file "$OUT/port" --no-plot 2> "$OUT/coordinator.log" &
CO=$!
trap 'kill $CO 2>/dev/null || true' EXIT
for _ in $(seq 300); do [[ -s "$OUT/port" ]] && break; sleep 0.1; done
[[ -s "$OUT/port" ]] || { echo "user-model: error: the coordinator did not start:" >&2; cat "$OUT/coordinator.log" >&2; exit 1; }
"$BIN/fedrt-example-user-model" "127.0.0.1:$(cat "$OUT/port")" "$OUT/keys" "$EX/shards/device-{id}.csv" 6
wait $CO
M="$OUT/results/metrics.csv"
echo "coordinator: $M"
# Per algorithm: train_loss of the first round, every 5th round and the last.
awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) col[$i] = i; next }
  $(col["round"]) >= 1 { a = $(col["algorithm"]); r = $(col["round"]); l = $(col["train_loss"])
    if (!(a in first)) { first[a] = l; order[++n] = a }
    last[a] = l; lastr[a] = r; b = int((r - 1) / 5); sum[a, b] += l; cnt[a, b]++; nb[a] = b + 1 }
  END { bad = 0
    for (k = 1; k <= n; ++k) { a = order[k]; line = ""
      for (b = 0; b < nb[a]; ++b) { m = sum[a, b] / cnt[a, b]; line = line sprintf(" %.4f", m)
        if (b > 0 && m > prev + 1e-12) bad = 1; prev = m }
      if (!(last[a] < 0.5 * first[a])) bad = 1
      printf "%-10s train_loss round 1 %.4f, round %d %.4f; means of 5 rounds:%s\n", a, first[a], lastr[a], last[a], line }
    exit bad }' "$M" && ok=1 || ok=0
if ((CHECK)); then
  ((ok)) || { echo "user-model: FAIL: the training loss did not fall as required" >&2; exit 1; }
  echo "user-model: the training loss fell below half its first value, block by block, for every algorithm"
fi
