#!/usr/bin/env bash
# Runs the FedEM toy grid and draws fedem_toy.png and vr_fedem.png next to
# this file. Usage (from anywhere): examples/fedem-toy/run.sh [OUT_DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
sim="$root/build/release/bin/fedrt-sim"
out="${1:-$root/out/fedem-toy}"
[[ -x "$sim" ]] || { echo "run.sh: build first (./fedrt build)" >&2; exit 1; }
mkdir -p "$out"
run() {  # run NAME ARGS...
  local name="$1"; shift
  "$sim" --config "$here/experiment.toml" --no-plot --out "$out/$name" "$@" > "$out/$name.txt" 2>/dev/null
}
for het in homogeneous heterogeneous; do
  w=0.5; [[ $het == heterogeneous ]] && w=0.9
  tmp="$out/$het.toml"
  sed "s/^own_weight = .*/own_weight = $w/" "$here/experiment.toml" > "$tmp"
  for p in 1 0.5 0.1; do
    "$sim" --config "$tmp" --participation "$p" --no-plot --out "$out/${het}_p$p" > "$out/${het}_p$p.txt" 2>/dev/null
  done
done
# VR-FedEM vs FedEM with mini-batched local statistics (b = 10 of 300), p = 1.
"$sim" --config "$here/experiment-vr.toml" --no-plot --out "$out/minibatch" > "$out/minibatch.txt" 2>/dev/null
run fullpass --participation 1 --algorithm fedem
PY=python3; [[ -x /usr/bin/python3 ]] && PY=/usr/bin/python3
"$PY" "$here/plot.py" "$out" "$here"
