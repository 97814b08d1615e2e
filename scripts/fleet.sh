#!/usr/bin/env bash
# A loopback fleet of mixed devices: provisions keys, starts fedrt-coordinator
# and the devices on 127.0.0.1, waits for the experiment to finish, collects
# the outputs and one log per device, and prints a summary per device kind.
#
#   scripts/fleet.sh --config EXPERIMENT.toml [--native N] [--aarch64 N] [--armhf N]
#                    [--cortex-m4 N] [--out DIR] [--auth psk|cert|mixed]
#                    [--bin DIR] [--aarch64-bin DIR] [--armhf-bin DIR]
#                    [--timeout SECONDS] [--http [ADDRESS:]PORT] [--gateways G] [-- COORDINATOR_ARGS...]
#
# --gateways G: G fedrt-gateway processes between the devices and the
# coordinator, device i behind gateway i mod G (docs/gateways.md); each hands
# the coordinator one aggregate per round (PSK and certificate devices alike).
# --mcu-link serial: the Cortex-M4 devices' UARTs on pseudo-terminals
# served by a gateway's --serial (gateway i mod G, at least one gateway; the
# other devices then go to the coordinator unless --gateways is given), the
# way a board on /dev/ttyACM0 is served; default tcp (QEMU's TCP bridge to the
# coordinator).
#
# Without device counts, an experiment with [data] shards gets one native
# device per shard file.
# Device kinds (agents are numbered in this order: native, aarch64, armhf, cortex-m4):
#   native     build/release/bin/fedrt-device (--devices N is an alias of --native N)
#   aarch64    qemu-aarch64 build/aarch64/bin/fedrt-device (static; ./fedrt build aarch64)
#   armhf      qemu-arm build/armhf/bin/fedrt-device       (static; ./fedrt build armhf)
#   cortex-m4  firmware under qemu-system-arm (see launch_cortex_m4 below); with
#              [data] CSV shards fedrt-fw-digits, its shard as a flash blob
# --http: the coordinator serves its dashboard, JSON and /metrics there
# (docs/dashboard.md; PORT alone: 127.0.0.1; port 0: any free port, its
# address printed as "[fleet] dashboard http://...").
# mixed auth (default unless the experiment's [network] auth is psk or cert):
# even devices use their PSK, odd devices their certificate.
# Outputs: DIR/{metrics.csv,summary.json,model_<algorithm>.npy,coordinator.log,coordinator.db}, the plots
# DIR/{error,loss,accuracy}.png (those the run has data for; scripts/plot_run.py),
# DIR/logs/<id>.log (one per device), DIR/devices.tsv (id, agent index, kind),
# DIR/devices/<id>/ (device state directories).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$ROOT/build/release/bin"
AARCH64_BIN="$ROOT/build/aarch64/bin"
ARMHF_BIN="$ROOT/build/armhf/bin"
CONFIG="" OUT="out/fleet" AUTH="" TIMEOUT=600 HTTP=""
N_NATIVE=0 N_AARCH64=0 N_ARMHF=0 N_CORTEX_M4=0 N_GATEWAYS=0 MCU_LINK=tcp
EXTRA=()

# Exit codes as every fedrt program's (docs/cli.md, "Exit codes"): 0 done,
# 1 the run failed (fail), 2 a usage error (die), the coordinator's own code
# when it stops.
die() { echo "fleet: error: $*" >&2; exit 2; }
fail() { echo "fleet: error: $*" >&2; exit 1; }
count_arg() {  # count_arg FLAG VALUE -> VALUE if a non-negative integer
  [[ "$2" =~ ^[0-9]+$ ]] || die "$1 must be a non-negative integer (got '$2')"
  echo "$((10#$2))"
}
while (($#)); do
  if [[ "$1" == -h || "$1" == --help ]]; then
    sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | grep '^#' | sed 's/^# \{0,1\}//'
    exit 0
  fi
  (($# >= 2)) || [[ "$1" == -- ]] || die "$1 needs a value"
  case "$1" in
    --config) CONFIG="$2"; shift 2 ;;
    --native | --devices) N_NATIVE="$(count_arg "$1" "$2")" || exit 2; shift 2 ;;
    --aarch64) N_AARCH64="$(count_arg "$1" "$2")" || exit 2; shift 2 ;;
    --armhf) N_ARMHF="$(count_arg "$1" "$2")" || exit 2; shift 2 ;;
    --cortex-m4) N_CORTEX_M4="$(count_arg "$1" "$2")" || exit 2; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --auth) AUTH="$2"; shift 2 ;;
    --bin) BIN="$2"; shift 2 ;;
    --aarch64-bin) AARCH64_BIN="$2"; shift 2 ;;
    --armhf-bin) ARMHF_BIN="$2"; shift 2 ;;
    --timeout) TIMEOUT="$2"; shift 2 ;;
    --http) HTTP="$2"; shift 2 ;;
    --gateways) N_GATEWAYS="$(count_arg "$1" "$2")" || exit 2; shift 2 ;;
    --mcu-link) MCU_LINK="$2"; shift 2 ;;
    --) shift; EXTRA=("$@"); break ;;
    *) die "unknown argument '$1'" ;;
  esac
done
DEVICES=$((N_NATIVE + N_AARCH64 + N_ARMHF + N_CORTEX_M4))
[[ -n "$CONFIG" && -f "$CONFIG" ]] || die "--config EXPERIMENT.toml is required (got '${CONFIG}')"
[[ "$TIMEOUT" =~ ^[1-9][0-9]*$ ]] || die "--timeout must be a positive number of seconds (got '$TIMEOUT')"
# Without --auth: what the experiment's [network] auth allows (psk, cert), else mixed.
if [[ -z "$AUTH" ]]; then
  AUTH="$(sed -n '/^\[network\]/,/^\[/{s/^auth *= *"\(psk\|cert\)".*/\1/p}' "$CONFIG" | head -1)"
  AUTH="${AUTH:-mixed}"
fi
case "$AUTH" in psk|cert|mixed) ;; *) die "--auth must be psk, cert or mixed (got '$AUTH')" ;; esac
# Devices' own data ([data] format csv | records, docs/data.md): device i is
# given its shard, data.train with {id} = i, relative to the experiment file.
SHARDS=""
DATA_FORMAT="$(sed -n '/^\[data\]/,/^\[/{s/^format *= *"\([a-z]*\)".*/\1/p}' "$CONFIG" | head -1)"
if [[ "$DATA_FORMAT" == csv || "$DATA_FORMAT" == records ]]; then
  SHARDS="$(sed -n '/^\[data\]/,/^\[/{s/^train *= *"\([^"]*\)".*/\1/p}' "$CONFIG" | head -1)"
  [[ -n "$SHARDS" ]] || die "$CONFIG: [data] format = \"$DATA_FORMAT\" but no train = \"...{id}...\""
  [[ "$SHARDS" == /* ]] || SHARDS="$(cd "$(dirname "$CONFIG")" && pwd)/$SHARDS"
  # Firmware devices read their shard from a flash blob written from the CSV (shard_to_blob.py).
  ((N_CORTEX_M4 == 0)) || [[ "$DATA_FORMAT" == csv ]] \
    || die "cortex-m4 devices take CSV shards (shard_to_blob.py writes their flash blob), not format = \"$DATA_FORMAT\""
fi
MODEL_KIND="$(sed -n '/^\[model\]/,/^\[/{s/^kind *= *"\([a-z_]*\)".*/\1/p}' "$CONFIG" | head -1)"
[[ "$MODEL_KIND" != user ]] || die "$CONFIG: [model] kind = \"user\": fedrt-device has no code for a user model; run devices built on fedrt::Device with it (docs/user-models.md, examples/user-model)"
# No device counts with [data] shards: one native device per shard present ({id} = 0, 1, ...).
if ((DEVICES == 0)) && [[ -n "$SHARDS" ]]; then
  while [[ -f "${SHARDS//\{id\}/$N_NATIVE}" ]]; do N_NATIVE=$((N_NATIVE + 1)); done
  DEVICES=$N_NATIVE
  ((DEVICES == 0)) || echo "[fleet] one native device per shard: $DEVICES devices" >&2
fi
((DEVICES > 0)) || die "no devices: give --native N (or --devices N), --aarch64 N, --armhf N or --cortex-m4 N (or [data] shards)"
for b in fedrt-keys fedrt-coordinator; do
  [[ -x "$BIN/$b" ]] || fail "$BIN/$b not built (./fedrt build)"
done
((N_NATIVE == 0)) || [[ -x "$BIN/fedrt-device" ]] || fail "$BIN/fedrt-device not built (./fedrt build)"

# Emulated Linux boards: a static fedrt-device of the target and qemu-user.
QEMU_AARCH64="" QEMU_ARM=""
if ((N_AARCH64 > 0)); then
  [[ -x "$AARCH64_BIN/fedrt-device" ]] || fail "$AARCH64_BIN/fedrt-device not built (./fedrt build aarch64)"
  QEMU_AARCH64="$(command -v qemu-aarch64)" || fail "qemu-aarch64 not found (apt-get install qemu-user)"
fi
if ((N_ARMHF > 0)); then
  [[ -x "$ARMHF_BIN/fedrt-device" ]] || fail "$ARMHF_BIN/fedrt-device not built (./fedrt build armhf)"
  QEMU_ARM="$(command -v qemu-arm)" || fail "qemu-arm not found (apt-get install qemu-user)"
fi

# ---------------------------------------------------------------------------
# Cortex-M4F firmware devices: fedrt-fw under
# qemu-system-arm -M mps2-an386 with its UART bridged to the coordinator.
#   cortex_m4_check           : fail early (exit 1) if the firmware or QEMU is missing
#   launch_cortex_m4 ID INDEX PORT KEYDIR LOG
#                             : start one instance in the background, echo its PID
# Both are defined in scripts/fleet_cortex_m4.sh (FEDRT_CORTEX_M4_ELF overrides
# build/cortex-m4/bin/fedrt-fw.elf).
source "$ROOT/scripts/fleet_cortex_m4.sh"
# ---------------------------------------------------------------------------
((N_CORTEX_M4 == 0)) || cortex_m4_check

# Kind of agent INDEX (agents are numbered native, aarch64, armhf, cortex-m4).
kind_of() {
  local i="$1"
  if ((i < N_NATIVE)); then echo native
  elif ((i < N_NATIVE + N_AARCH64)); then echo aarch64
  elif ((i < N_NATIVE + N_AARCH64 + N_ARMHF)); then echo armhf
  else echo cortex-m4
  fi
}

mkdir -p "$OUT/devices" "$OUT/logs"
rm -rf "$OUT/keys" "$OUT/coordinator.db" "$OUT/coordinator.db-wal" "$OUT/coordinator.db-shm" "$OUT/coordinator.db.rounds" \
  "$OUT"/devices/* "$OUT"/logs/*.log "$OUT/port" "$OUT"/gw*.port "$OUT/devices.tsv"
"$BIN/fedrt-keys" --out "$OUT/keys" --devices "$DEVICES" >/dev/null || { echo "fleet: error: provisioning failed" >&2; exit 1; }
[[ "$MCU_LINK" == tcp || "$MCU_LINK" == serial ]] || die "--mcu-link must be tcp or serial (got '$MCU_LINK')"
ALL_BEHIND_GATEWAYS=$((N_GATEWAYS > 0))  # every device behind a gateway, or only the microcontrollers
((N_GATEWAYS == 0 && N_CORTEX_M4 > 0)) && [[ "$MCU_LINK" == serial ]] && N_GATEWAYS=1
((N_GATEWAYS == 0 || N_CORTEX_M4 == 0)) || [[ "$MCU_LINK" == serial ]] \
  || die "--gateways with --cortex-m4: the microcontrollers reach their gateway over a serial line (--mcu-link serial)"
if ((N_GATEWAYS > 0)); then
  [[ -x "$BIN/fedrt-gateway" ]] || fail "$BIN/fedrt-gateway not built (./fedrt build)"
  "$BIN/fedrt-keys" gateways --keys "$OUT/keys" --count "$N_GATEWAYS" >/dev/null 2>&1 \
    || { echo "fleet: error: provisioning the gateways failed" >&2; exit 1; }
fi

PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]}" ${COORD_PID:-}; do kill "$p" 2>/dev/null; done
}
trap cleanup EXIT INT TERM

HTTP_ARGS=()
[[ -n "$HTTP" ]] && HTTP_ARGS=(--http "$HTTP")
"$BIN/fedrt-coordinator" --config "$CONFIG" --agents "$DEVICES" --out "$OUT" --keys "$OUT/keys" \
  --state "$OUT/coordinator.db" --listen 127.0.0.1 --port 0 --port-file "$OUT/port" "${HTTP_ARGS[@]}" "${EXTRA[@]}" \
  2> >(tee "$OUT/coordinator.log" | grep --line-buffered -E " (round|refused|rejected|listening|start|finished|dashboard) " >&2) &
COORD_PID=$!
# It listens once the problem is ready (x_star of a large data set takes a
# while): wait as long as it lives, saying so every 10 s.
waited=0
until [[ -s "$OUT/port" ]]; do
  kill -0 "$COORD_PID" 2>/dev/null || break
  sleep 0.1
  waited=$((waited + 1))
  ((waited % 100 == 0)) && echo "[fleet] waiting for the coordinator to listen ($((waited / 10)) s)" >&2
done
if [[ ! -s "$OUT/port" ]]; then
  wait "$COORD_PID"
  RC=$?
  # Its own error line says why (a bad experiment file: 2, as the coordinator's code).
  why="$(grep -m1 'fedrt-coordinator: error: ' "$OUT/coordinator.log" 2>/dev/null | sed 's/^fedrt-coordinator: error: //')"
  echo "fleet: error: the coordinator did not start${why:+: $why} (see $OUT/coordinator.log)" >&2
  ((RC != 0)) || RC=1
  exit "$RC"
fi
PORT="$(cat "$OUT/port")"
echo "[fleet] coordinator on 127.0.0.1:$PORT, starting $DEVICES devices (native $N_NATIVE, aarch64 $N_AARCH64," \
  "armhf $N_ARMHF, cortex-m4 $N_CORTEX_M4; auth $AUTH)" >&2
if [[ -n "$HTTP" ]]; then  # the dashboard's address on a line of its own, near the top
  url=""
  for _ in $(seq 1 50); do
    url="$(grep -m1 -o 'dashboard url=[^ ]*' "$OUT/coordinator.log" 2>/dev/null | cut -d= -f2)"
    [[ -n "$url" ]] && break
    sleep 0.1
  done
  [[ -n "$url" ]] && echo "[fleet] dashboard $url" >&2
fi

# Microcontrollers on serial lines start first: their gateways serve the lines QEMU made.
declare -A GATEWAY_LINES=()
if [[ "$MCU_LINK" == serial ]]; then
  for ((i = 0; i < DEVICES; i++)); do
    [[ "$(kind_of "$i")" == cortex-m4 ]] || continue
    id="$(printf 'dev%04d' "$i")"
    pid="$(launch_cortex_m4 "$id" "$i" pty "$OUT/keys/devices/$id" "$OUT/logs/$id.log")" \
      || { echo "fleet: error: starting $id (cortex-m4) failed" >&2; exit 1; }
    PIDS+=("$pid")
    line="$(cortex_m4_pty "$OUT/logs/$id.log")" || fail "$id: QEMU made no pseudo-terminal (see $OUT/logs/$id.log)"
    GATEWAY_LINES[$((i % N_GATEWAYS))]+=" --serial $line"
  done
fi
GATEWAY_PORTS=()
for ((g = 0; g < N_GATEWAYS; g++)); do
  gid="$(printf 'gw%02d' "$g")"
  # shellcheck disable=SC2086  # the --serial PATH pairs, one word each
  "$BIN/fedrt-gateway" --coordinator "127.0.0.1:$PORT" --id "$gid" --keys "$OUT/keys/gateways/$gid" --port 0 \
    --port-file "$OUT/$gid.port" ${GATEWAY_LINES[$g]:-} 2>"$OUT/logs/$gid.log" &
  PIDS+=($!)
  for _ in $(seq 1 100); do [[ -s "$OUT/$gid.port" ]] && break; sleep 0.1; done
  [[ -s "$OUT/$gid.port" ]] || fail "gateway $gid did not start (see $OUT/logs/$gid.log)"
  GATEWAY_PORTS+=("$(cat "$OUT/$gid.port")")
done
((N_GATEWAYS == 0)) || echo "[fleet] $N_GATEWAYS gateways on ports ${GATEWAY_PORTS[*]}" >&2

for ((i = 0; i < DEVICES; i++)); do
  id="$(printf 'dev%04d' "$i")"
  kind="$(kind_of "$i")"
  dir="$OUT/keys/devices/$id"
  log="$OUT/logs/$id.log"
  printf '%s\t%d\t%s\n' "$id" "$i" "$kind" >>"$OUT/devices.tsv"
  [[ "$kind" == cortex-m4 && "$MCU_LINK" == serial ]] && continue  # already on its gateway's line
  if [[ "$kind" == cortex-m4 ]]; then
    pid="$(launch_cortex_m4 "$id" "$i" "$PORT" "$dir" "$log")" || { echo "fleet: error: starting $id (cortex-m4) failed" >&2; exit 1; }
    PIDS+=("$pid")
    continue
  fi
  mode="$AUTH"
  [[ "$mode" == mixed ]] && mode=$([[ $((i % 2)) == 0 ]] && echo psk || echo cert)
  if [[ "$mode" == psk ]]; then
    cred=(--key "$dir/device.psk")
  else
    cred=(--cert "$dir/device.crt" --key "$dir/device.key" --ca "$dir/ca.crt")
  fi
  case "$kind" in
    native) launch=("$BIN/fedrt-device") ;;
    aarch64) launch=("$QEMU_AARCH64" "$AARCH64_BIN/fedrt-device") ;;
    armhf) launch=("$QEMU_ARM" "$ARMHF_BIN/fedrt-device") ;;
  esac
  data=()
  [[ -z "$SHARDS" ]] || data=(--data "${SHARDS//\{id\}/$i}")
  target="$PORT"
  ((ALL_BEHIND_GATEWAYS == 0)) || target="${GATEWAY_PORTS[$((i % N_GATEWAYS))]}"
  "${launch[@]}" --coordinator "127.0.0.1:$target" --id "$id" "${cred[@]}" "${data[@]}" \
    --state "$OUT/devices/$id" 2>"$log" &
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
# Devices exit on the coordinator's shutdown message; give them a moment
# (emulated ones are slower).
for _ in $(seq 1 100); do
  alive=0
  for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
  ((alive)) || break
  sleep 0.1
done
if ((RC != 0)); then
  echo "fleet: error: coordinator exited with status $RC (see $OUT/coordinator.log)" >&2
  exit "$RC"
fi

# Per kind: devices, how many were sampled (computed at least one update),
# how many took part (committed at least one included update), and the min /
# max number of rounds a device reported. Under partial participation a
# device may never be sampled; one that computed updates and never had one
# included is what the warning below is about.
echo "[fleet] devices by kind (rounds = updates the coordinator included, from each device's log):" >&2
PARTICIPATION_OK=1
for kind in native aarch64 armhf cortex-m4; do
  n=0 sampled=0 took=0 min="" max=0
  while IFS=$'\t' read -r id _ k; do
    [[ "$k" == "$kind" ]] || continue
    n=$((n + 1))
    r="$(grep -c ' committed .* included=true' "$OUT/logs/$id.log" 2>/dev/null)" || r=0
    u="$(grep -c ' update alg=' "$OUT/logs/$id.log" 2>/dev/null)" || u=0
    ((u > 0 || r > 0)) && sampled=$((sampled + 1))
    ((r > 0)) && took=$((took + 1))
    [[ -z "$min" ]] || ((r < min)) && min=$r
    ((r > max)) && max=$r
  done <"$OUT/devices.tsv"
  ((n > 0)) || continue
  ((took == sampled)) || PARTICIPATION_OK=0
  printf '[fleet]   %-9s devices=%d sampled=%d took_part=%d rounds_reported min=%d max=%d\n' \
    "$kind" "$n" "$sampled" "$took" "$min" "$max" >&2
done
# Devices the coordinator refused (a bad shard in its copy or the device's, a task it cannot run): the run went on without them.
grep -o 'refused device=[^ ]* index=[0-9]* stage=\(data\|task\) reason=.*' "$OUT/coordinator.log" 2>/dev/null \
  | sed 's/^refused device=/[fleet] refused /' >&2
PLOTS=""
for f in error.png loss.png accuracy.png; do [[ -f "$OUT/$f" ]] && PLOTS+=",$f"; done
echo "[fleet] done: $OUT/{metrics.csv,summary.json,model_*.npy$PLOTS,coordinator.log,coordinator.db} and $OUT/logs/*.log" >&2
if ((PARTICIPATION_OK == 0)); then
  echo "fleet: warning: some devices computed updates but never had one included (see $OUT/logs)" >&2
fi
