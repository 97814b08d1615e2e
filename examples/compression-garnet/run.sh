#!/usr/bin/env bash
# Sweeps bits per coordinate and compression control variates; writes
# table.md and bits_vs_error.png next to this file.
# Usage: examples/compression-garnet/run.sh [OUT_DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
sim="$root/build/release/bin/fedrt-sim"
out="${1:-$root/out/compression-garnet}"
[[ -x "$sim" ]] || { echo "run.sh: build first (./fedrt build)" >&2; exit 1; }
mkdir -p "$out"
run() {  # run NAME ARGS...
  local name="$1"; shift
  "$sim" --config "$here/experiment.toml" --no-plot --out "$out/$name" "$@" > "$out/$name.txt" 2>/dev/null
}
run raw --quantizer none --compress-cv=false
for b in 8 4 2; do
  run "round${b}_cv" --bits "$b"
  "$sim" --config "$here/experiment.toml" --no-plot --out "$out/round${b}_nocv" --bits "$b" \
    --compress-cv=false > "$out/round${b}_nocv.txt" 2>/dev/null
done
for s in 7 1; do
  run "dither${s}_cv" --quantizer dither --levels "$s"
  "$sim" --config "$here/experiment.toml" --no-plot --out "$out/dither${s}_nocv" --quantizer dither --levels "$s" \
    --compress-cv=false > "$out/dither${s}_nocv.txt" 2>/dev/null
done
PY=python3; [[ -x /usr/bin/python3 ]] && PY=/usr/bin/python3
"$PY" "$here/table.py" "$out" "$here" | tee "$here/table.md"
