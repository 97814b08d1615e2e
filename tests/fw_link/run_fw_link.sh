#!/usr/bin/env bash
# Firmware link test (tests/fw_link): a coordinator, firmware devices and
# native fedrt-device processes run tests/fw_link/experiment.toml over TLS.
# Firmware devices are fedrt-fw (or fedrt-fw-lsa) under qemu-system-arm
# (--elf), each with its problem image (fedrt-fw-provision) in its data
# partition, or the same client on the host over TCP (--host-client,
# default fedrt-fw-host). Devices get the task from the coordinator. With
# --mode corrupt-record or bad-frames, firmware device 0 talks through
# fw-link-relay, which tampers with its link once; the device must log the
# rejection with a status and still complete the federation.
#
# --compare-sim runs fedrt-sim on the same experiment and compares every
# round's global iterate. The error is e_t = ||theta_t - theta*||^2, so
# |sqrt(e_t^fleet) - sqrt(e_t^sim)| <= ||theta_t^fleet - theta_t^sim||: the
# iterates of a fleet with float32 firmware devices and of the double
# simulator may differ only by float32 round-off. Bound: per round a firmware
# agent's H local steps each round theta (entries O(|theta|)) to float32
# (unit round-off u = 2^-24 = 6e-8); the error of a step persists through the
# later ones (contractions), so agent c's result is off by at most about
# H u |theta|_2 and the average by the fraction of firmware agents of that;
# over T rounds these add up: |d theta_T| <= T H u |theta|_inf sqrt(d). For
# the test experiments (T = 8, H <= 200, d <= 8, |theta|_inf < 4) that is
# 1.1e-3: the check uses FW_SIM_BOUND (default 1.1e-3) and prints the largest
# deviation (measured: at most 1.6e-5). A stochastic gradient's residual
# a^T theta - y is a dot product of d float terms: its rounding moves a step
# by about eta sqrt(d) u |a|_inf^2 |theta|_inf (random rounding errors; d
# times that at worst), below the u |theta| of the bound while
# eta sqrt(d) |a|_inf^2 < 1: experiment_d4096.toml has eta = 2e-4, d = 4096,
# |a|_inf < 5, T = 3, H = 5 and |theta|_inf < 1, so its ctest sets
# FW_SIM_BOUND = 5.8e-5. A quantized uplink could in principle
# flip a quantization decision (probability about deviation / level width per
# coordinate, none in these seeded runs); such a flip would exceed the bound.
# Native devices run in double and equal the simulator bit for bit: a fleet
# with --fw 0 must match exactly (the check then asks for 0).
#
#   run_fw_link.sh --bin HOST_BIN_DIR --out DIR [--elf fedrt-fw.elf --machine mps2-an386]
#                  [--host-client fedrt-fw-host|fedrt-fw-host-lsa]
#                  [--fw N] [--native M] [--mode none|corrupt-record|bad-frames|huge-frame] [--compare-sim]
#                  [--config EXPERIMENT.toml]   (default: tests/fw_link/experiment.toml)
#                  [--expect-refusal REGEX] [--workspace-bytes N] [--expect-chunks REGEX]
#                  [--tls VERSION/GROUP]   (default TLSv1.3/X25519)
#                  [--link tcp|pty] [--line-noise N[@AFTER]] [--reset-at-round R]
#                  [--kill-coordinator-at-round R] [--gateway]
# --expect-refusal: every firmware device must refuse the task in TaskReply
# with a reason matching REGEX and exit with an error, the coordinator must log
# the refusal and finish the experiment with the native devices alone.
# --workspace-bytes: the host client's workspace (fedrt-fw-host only).
# --expect-chunks: every firmware device must have taken each round's
# broadcast in chunks (its log line "broadcast alg=A run=R round=T bytes=B
# chunks=N" matching REGEX) and sent each round's update in chunks ("update
# chunks ..."): one of each per round of every algorithm.
# --tls: the session every device must have, as the coordinator names it
# (TLSv1.3/none: psk_ke, for an experiment with psk_forward_secrecy = false).
# --link pty: every firmware device's link is a pseudo-terminal the
# coordinator serves with --serial, no TCP bridge (QEMU's -serial pty, whose
# path QEMU prints; fedrt-fw-host --serial-pty); the native devices stay on
# TCP. The firmware devices start first, then the coordinator on their lines.
# --line-noise N[@AFTER] (pty, host client): device 0 writes N garbage bytes
# onto its line once, after AFTER bytes of its own; the coordinator must
# discard them, log it, and resynchronise on the next ClientHello.
# --reset-at-round R (pty, QEMU): once device 0 committed round R, its board is
# reset (QEMU's system_reset, the reset button): the firmware boots afresh and
# starts a new session on the same line, which the coordinator must take over
# from the old one without a human (its iterates then differ from the
# simulator's: a reboot loses the device's state, so no --compare-sim).
# --gateway (with --link pty): the firmware devices' lines are served by a
# fedrt-gateway (gw00, docs/gateways.md) instead of the coordinator: each
# device registers at the gateway over its serial line and reaches the
# coordinator only inside the gateway's aggregates; the native devices stay
# on the coordinator's TCP port.
# --kill-coordinator-at-round R: once device 0 committed round R the
# coordinator is killed (SIGKILL) and started again on the same state db, port
# and lines; every device must resume (device 0 from a session the new
# coordinator never had, which its alert record ends).
# Exit: 0 pass, 1 fail, 77 skipped (host tools or QEMU missing).
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
CFG="$HERE/experiment.toml"
BIN="" OUT="" ELF="" MACHINE="mps2-an386" NFW=1 NNATIVE=1 MODE=none COMPARE=0 TIMEOUT=240 HOST_CLIENT=fedrt-fw-host REFUSAL="" WORKSPACE=() CHUNKS="" TLS_WANT="TLSv1.3/X25519"
LINK=tcp NOISE="" RESET_AT="" KILL_AT="" GATEWAY=0
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
    --host-client) HOST_CLIENT="$2"; shift 2 ;;
    --expect-refusal) REFUSAL="$2"; shift 2 ;;
    --workspace-bytes) WORKSPACE=(--workspace-bytes "$2"); shift 2 ;;
    --tls) TLS_WANT="$2"; shift 2 ;;
    --expect-chunks) CHUNKS="$2"; shift 2 ;;
    --link) LINK="$2"; shift 2 ;;
    --gateway) GATEWAY=1; shift ;;
    --line-noise) NOISE="$2"; shift 2 ;;
    --reset-at-round) RESET_AT="$2"; shift 2 ;;
    --kill-coordinator-at-round) KILL_AT="$2"; shift 2 ;;
    *) echo "run_fw_link.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[[ -n "$BIN" && -n "$OUT" ]] || { echo "run_fw_link.sh: --bin and --out are required" >&2; exit 2; }
[[ "$GATEWAY" == 0 || "$LINK" == pty ]] || { echo "run_fw_link.sh: --gateway needs --link pty" >&2; exit 2; }
[[ "$LINK" == tcp || "$LINK" == pty ]] || { echo "run_fw_link.sh: --link must be tcp or pty, got '$LINK'" >&2; exit 2; }
[[ "$LINK" == tcp && -n "$NOISE" ]] && { echo "run_fw_link.sh: --line-noise needs --link pty" >&2; exit 2; }
[[ "$LINK" == pty && "$MODE" != none ]] && { echo "run_fw_link.sh: --mode $MODE relays TCP: not with --link pty" >&2; exit 2; }
[[ -n "$NOISE" && -n "$ELF" ]] && { echo "run_fw_link.sh: --line-noise is written by fedrt-fw-host, not under QEMU" >&2; exit 2; }
[[ -n "$RESET_AT" && ( -z "$ELF" || "$LINK" != pty ) ]] && { echo "run_fw_link.sh: --reset-at-round needs --elf and --link pty" >&2; exit 2; }
need=(fedrt-keys fedrt-coordinator fedrt-device fedrt-fw-provision fw-link-relay)
[[ -z "$ELF" ]] && need+=("$HOST_CLIENT")
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
if ((GATEWAY)); then  # gw00 may speak for every device (the coordinator reads gateways.tsv at its start)
  "$BIN/fedrt-keys" gateways --keys "$OUT/keys" --count 1 >/dev/null 2>&1 || fail "fedrt-keys gateways"
fi
SERIAL=()  # --link pty: the coordinator's --serial PATH of every firmware device
start_coordinator() {  # the same port again when it restarts (--kill-coordinator-at-round)
  rm -f "$OUT/port"
  "$BIN/fedrt-coordinator" --config "$CFG" --agents "$N" --out "$OUT/run" --keys "$OUT/keys" \
    --state "$OUT/coordinator.db" --listen 127.0.0.1 --port "${PORT:-0}" --port-file "$OUT/port" \
    "${COORD_SERIAL[@]}" 2>>"$OUT/coordinator.log" &
  COORD=$!
  PIDS+=("$COORD")
  for _ in $(seq 100); do [[ -s "$OUT/port" ]] && break; sleep 0.1; done
  [[ -s "$OUT/port" ]] || fail "coordinator did not start: $(tail -3 "$OUT/coordinator.log")"
  PORT="$(cat "$OUT/port")"
}
# Firmware device i on its link: TCP to $PORT (through fw-link-relay with --mode), or a pseudo-terminal.
start_firmware() {
  local i="$1" id psk port link_args=() path=""
  id="$(printf 'dev%04d' "$i")"
  psk="$OUT/keys/devices/$id/device.psk"
  "$BIN/fedrt-fw-provision" --config "$CFG" --agents "$N" --index "$i" --out "$OUT/$id.img" 2>>"$OUT/provision.log" \
    || fail "provisioning $id: $(tail -1 "$OUT/provision.log")"
  port="${PORT:-}"
  if [[ "$MODE" != none && $i == 0 ]]; then
    "$BIN/fw-link-relay" --coordinator "127.0.0.1:$PORT" --mode "$MODE" --keys "$OUT/keys" \
      --port-file "$OUT/relay.port" 2>"$OUT/relay.log" &
    PIDS+=($!)
    for _ in $(seq 100); do [[ -s "$OUT/relay.port" ]] && break; sleep 0.1; done
    port="$(cat "$OUT/relay.port")"
  fi
  if [[ -n "$ELF" ]]; then
    "$ROOT/platform/mps2/make_provision.py" --out "$OUT/$id.blob" --index "$i" --id "$id" \
      --psk-hex "$(tr -d ' \n' <"$psk")" >>"$OUT/provision.log" 2>&1 \
      || fail "make_provision.py $id"
    [[ "$LINK" == pty ]] && link_args=(--serial1 pty) || link_args=(--serial1 "tcp:127.0.0.1:$port,reconnect=1")
    [[ -n "$RESET_AT" && $i == 0 ]] && link_args+=(--monitor "$OUT/$id.monitor")
    "$ROOT/platform/mps2/qemu-run.sh" --machine "$MACHINE" --timeout "$TIMEOUT" --provision "$OUT/$id.blob" \
      --data "$OUT/$id.img" "${link_args[@]}" "$ELF" >"$OUT/$id.log" 2>&1 &
  else
    if [[ "$LINK" == pty ]]; then
      link_args=(--serial-pty "$OUT/$id.pty")
      [[ -n "$NOISE" && $i == 0 ]] && link_args+=(--line-noise "$NOISE")
    else
      link_args=(--coordinator "127.0.0.1:$port")
    fi
    "$BIN/$HOST_CLIENT" "${link_args[@]}" --id "$id" --key "$psk" --problem "$OUT/$id.img" \
      --handshake-timeout-ms 3000 "${WORKSPACE[@]}" 2>"$OUT/$id.log" &
  fi
  FW_PIDS+=($!)
  PIDS+=($!)
  [[ "$LINK" == pty ]] || return 0
  # QEMU prints "char device redirected to /dev/pts/N (label serial1)"; fedrt-fw-host writes the path to a file.
  for _ in $(seq 100); do
    if [[ -n "$ELF" ]]; then
      path="$(sed -n 's/.*char device redirected to \([^ ]*\) (label serial1).*/\1/p' "$OUT/$id.log" | head -1)"
    else
      [[ -s "$OUT/$id.pty" ]] && path="$(cat "$OUT/$id.pty")"
    fi
    [[ -n "$path" ]] && break
    sleep 0.1
  done
  [[ -n "$path" ]] || fail "$id: no pseudo-terminal ($(tail -2 "$OUT/$id.log"))"
  SERIAL+=(--serial "$path")
}

if [[ "$LINK" == pty ]]; then
  for ((i = 0; i < NFW; i++)); do start_firmware "$i"; done
  COORD_SERIAL=()
  ((GATEWAY)) || COORD_SERIAL=("${SERIAL[@]}")
  start_coordinator
  if ((GATEWAY)); then  # the lines are the gateway's
    "$BIN/fedrt-gateway" --coordinator "127.0.0.1:$PORT" --id gw00 --keys "$OUT/keys/gateways/gw00" --port 0 \
      --port-file "$OUT/gw00.port" "${SERIAL[@]}" 2>"$OUT/gw00.log" &
    PIDS+=($!)
    for _ in $(seq 100); do [[ -s "$OUT/gw00.port" ]] && break; sleep 0.1; done
    [[ -s "$OUT/gw00.port" ]] || fail "gateway did not start: $(tail -3 "$OUT/gw00.log")"
  fi
else
  COORD_SERIAL=()
  start_coordinator
  for ((i = 0; i < NFW; i++)); do start_firmware "$i"; done
fi
if [[ -n "$RESET_AT" ]]; then  # the reset button of device 0's board, once it committed round RESET_AT
  (for _ in $(seq 1200); do
     grep -q "committed alg=0 run=0 round=$RESET_AT " "$OUT/dev0000.log" && break
     sleep 0.05
   done
   /usr/bin/python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"system_reset\n"); time.sleep(0.2)' \
     "$OUT/dev0000.monitor" && echo "reset dev0000's board after round $RESET_AT" >"$OUT/reset.log") &
fi
for ((i = NFW; i < N; i++)); do
  id="$(printf 'dev%04d' "$i")"
  "$BIN/fedrt-device" --coordinator "127.0.0.1:$PORT" --id "$id" --key "$OUT/keys/devices/$id/device.psk" \
    2>"$OUT/$id.log" &
  PIDS+=($!)
done

SECONDS=0
while kill -0 "$COORD" 2>/dev/null; do
  ((SECONDS > TIMEOUT)) && fail "coordinator still running after ${TIMEOUT} s"
  if [[ -n "$KILL_AT" ]] && grep -q "committed alg=0 run=0 round=$KILL_AT " "$OUT/dev0000.log"; then
    kill -9 "$COORD"; wait "$COORD" 2>/dev/null
    echo "run_fw_link.sh: coordinator killed after dev0000 committed round $KILL_AT" >>"$OUT/coordinator.log"
    KILL_AT="" && start_coordinator
  fi
  sleep 0.05
done
wait "$COORD" || fail "coordinator exited with an error: $(tail -3 "$OUT/coordinator.log")"
rc_all=0 rc_any=0
for p in "${FW_PIDS[@]}"; do
  if wait "$p"; then rc_any=1; else rc_all=1; fi
done
if [[ -n "$REFUSAL" ]]; then
  ((rc_any == 0)) || fail "a firmware device exited without error though it should refuse the task"
  for ((i = 0; i < NFW; i++)); do
    id="$(printf 'dev%04d' "$i")"
    grep -E "refused task reason=.*($REFUSAL)" "$OUT/$id.log" | head -1 | grep . \
      || fail "$id did not refuse the task with a reason matching '$REFUSAL'"
    grep -q "refused device=$id .*stage=task" "$OUT/coordinator.log" || fail "the coordinator did not log $id's refusal"
  done
else
  ((rc_all == 0)) || fail "a firmware device exited with an error (logs in $OUT)"
fi

rounds="$(sed -n 's/^rounds *= *\([0-9]*\).*/\1/p' "$CFG")"
nalgs="$(sed -n 's/^names *= *\[\(.*\)\].*/\1/p' "$CFG" | tr ',' '\n' | grep -c .)"  # rounds of every algorithm
done_rounds="$(sed -n 's/.*finished rounds=\([0-9]*\).*/\1/p' "$OUT/coordinator.log" | tail -1)"
# FedEM's initial exchange of V_{0,c} is one more round per run.
((${done_rounds:-0} >= rounds * nalgs)) || fail "coordinator did not finish $rounds rounds of $nalgs algorithms"
first=0
[[ -n "$REFUSAL" ]] && first=$NFW  # the refusing firmware devices take no part
for ((i = first; i < N; i++)); do
  id="$(printf 'dev%04d' "$i")"
  grep -q -E "update alg=|secagg masked alg=" "$OUT/$id.log" || fail "$id sent no update"  # plain or SecAgg+ round
  grep -q "shutdown reason=" "$OUT/$id.log" || fail "$id did not see the coordinator's shutdown"
done
# The TLS of each session, as the coordinator names it: TLS 1.3 with an X25519 exchange
# (psk_dhe_ke) for the Linux devices and the firmware alike, unless --tls says otherwise
# (runtime/fw/fw_mbedtls_config.h, docs/security.md, "TLS"). A relayed device's session ends at the relay.
for ((i = first; i < N; i++)); do
  id="$(printf 'dev%04d' "$i")"
  [[ "$MODE" != none && $i == 0 ]] && continue
  want="$TLS_WANT"
  grep -q "ready device=$id .*tls=$want" "$OUT/coordinator.log" \
    || fail "$id's session is not $want: $(grep "ready device=$id " "$OUT/coordinator.log" | tail -1)"
done
for ((i = 0; i < NFW; i++)); do
  id="$(printf 'dev%04d' "$i")"
  grep -E "tls_heap_hwm|workspace_hwm|tls_heap_max_bytes" "$OUT/$id.log" | tail -3
  if ((GATEWAY)); then  # registered at the gateway over its serial line, up at the coordinator through gw00
    grep -q "registered device=$id .*peer=serial:/" "$OUT/gw00.log" \
      || fail "$id did not register at the gateway over its serial line: $(grep "device=$id " "$OUT/gw00.log" | tail -1)"
    grep -q "ready device=$id .*via=gw00" "$OUT/coordinator.log" || fail "$id did not come up through gw00"
    grep "ready device=$id " "$OUT/coordinator.log" | tail -1
    grep -m2 -E "partial round=" "$OUT/gw00.log"
  elif [[ "$LINK" == pty ]]; then  # registered through the coordinator's --serial line, not TCP
    grep -q "registered device=$id .*peer=serial:/" "$OUT/coordinator.log" \
      || fail "$id did not register over its serial line: $(grep "registered device=$id " "$OUT/coordinator.log" | tail -1)"
    grep "registered device=$id " "$OUT/coordinator.log" | tail -1
  fi
done
if [[ -n "$RESET_AT" ]]; then
  grep -q "reset dev0000" "$OUT/reset.log" 2>/dev/null || fail "dev0000's board was not reset"
  (($(grep -c "boot build=" "$OUT/dev0000.log") == 2)) || fail "dev0000 did not boot twice"
  grep -E "disconnected device=dev0000 .*reason=the device started a new session on the line" "$OUT/coordinator.log" \
    | grep . || fail "the coordinator did not take dev0000's new session over the old one"
  (($(grep -c "registered device=dev0000 .*peer=serial:" "$OUT/coordinator.log") >= 2)) \
    || fail "dev0000 did not register again after its reset"
  grep -E "boot build=|connected|handshake failed" "$OUT/dev0000.log" | tail -4
fi
if grep -q "coordinator killed after" "$OUT/coordinator.log"; then
  grep -q "resume state=" "$OUT/coordinator.log" || fail "the coordinator did not resume from its state db"
  for ((i = 0; i < N; i++)); do
    id="$(printf 'dev%04d' "$i")"
    sed -n '/coordinator killed after/,$p' "$OUT/coordinator.log" | grep "registered device=$id .*pending=alg" >/dev/null \
      || fail "$id did not come back to the restarted coordinator with its pending round"
  done
  sed -n '/coordinator killed after/,$p' "$OUT/coordinator.log" | grep "registered device=dev0000 " | cut -c1-160
  grep -E "rejected TLS record|coordinator closed|connected" "$OUT/dev0000.log" | tail -3
fi
if [[ -n "$NOISE" ]]; then
  grep -q "line noise: " "$OUT/dev0000.log" || fail "dev0000 wrote no line noise"
  grep -m2 -E "serial line=serial:[^ ]+ session=[0-9]+ starts on a ClientHello after [0-9]+ discarded bytes" \
    "$OUT/coordinator.log" || fail "the coordinator did not report discarding the line noise"
  grep "line noise: " "$OUT/dev0000.log"
fi
if [[ -n "$CHUNKS" ]]; then
  for ((i = 0; i < NFW; i++)); do
    id="$(printf 'dev%04d' "$i")"
    down="$(grep -c -E "broadcast alg=[0-9]+ run=[0-9]+ round=[0-9]+ .*$CHUNKS" "$OUT/$id.log")"
    up="$(grep -c "update chunks alg=" "$OUT/$id.log")"
    ((down == rounds * nalgs)) || fail "$id took $down broadcasts in chunks matching '$CHUNKS', not $((rounds * nalgs))"
    ((up == rounds * nalgs)) || fail "$id sent $up updates in chunks, not $((rounds * nalgs))"
    grep -E "broadcast alg=|update chunks alg=|chunks_(in|out)" "$OUT/$id.log" | tail -4
  done
fi
case "$MODE" in
  corrupt-record)
    grep -q "corrupted TLS record" "$OUT/relay.log" || fail "the relay corrupted nothing"
    grep -q "rejected TLS record: DATA_LOSS" "$OUT/dev0000.log" || fail "dev0000 did not report the rejected record"
    grep "rejected TLS record" "$OUT/dev0000.log" | head -1 ;;
  bad-frames)
    grep -q "undecodable frame" "$OUT/relay.log" || fail "the relay injected nothing"
    grep -q "rejected frame: DATA_LOSS: undecodable" "$OUT/dev0000.log" || fail "dev0000 did not reject the undecodable frame"
    grep -q "rejected frame: OUT_OF_RANGE: frame of 20000 bytes" "$OUT/dev0000.log" \
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
  bound="${FW_SIM_BOUND:-1.1e-3}"
  ((NFW == 0)) && bound=0
  /usr/bin/python3 - "$OUT/run/metrics.csv" "$OUT/sim/metrics.csv" "$bound" <<'EOF' || fail "fleet iterates not within the float32 bound of the simulator's"
import csv, math, sys
def rows(p):
    with open(p) as f:
        return {(r["algorithm"], r["run"], r["round"]): float(r["error"]) for r in csv.DictReader(f)}
fleet, sim, bound = rows(sys.argv[1]), rows(sys.argv[2]), float(sys.argv[3])
if fleet.keys() != sim.keys() or not fleet:
    print(f"rounds differ: fleet {len(fleet)} rows, simulator {len(sim)} rows"); sys.exit(1)
dev = {k: abs(math.sqrt(fleet[k]) - math.sqrt(sim[k])) for k in fleet}
worst = max(dev, key=dev.get)
rel = max(abs(fleet[k] - sim[k]) / sim[k] for k in fleet if sim[k] > 0)
last = max(fleet, key=lambda k: (k[0], int(k[1]), int(k[2])))
print(f"fleet vs simulator: {len(fleet)} rounds, max |sqrt(e_fleet) - sqrt(e_sim)| = {dev[worst]:.3e} "
      f"(round {worst[2]} of {worst[0]}; bound {bound:g}), max relative error difference {rel:.3e}, "
      f"final error fleet {fleet[last]:.6g} simulator {sim[last]:.6g}")
def clips(p):  # adaptive clipping: the coordinator's clip, from the devices' indicators, in double on both sides
    with open(p) as f:
        return {(r["algorithm"], r["run"], r["round"]): r["clip"] for r in csv.DictReader(f) if "clip" in r}
cf, cs = clips(sys.argv[1]), clips(sys.argv[2])
if cf != cs:
    print("clip columns differ: " + ", ".join(f"{k}: fleet {cf.get(k)} simulator {cs.get(k)}" for k in sorted(cs) if cf.get(k) != cs[k]))
    sys.exit(1)
if cf:
    print(f"clip column equal in {len(cf)} rows: round 0 {cs[('fedavg', '0', '0')]}, last {cs[last]}")
sys.exit(0 if dev[worst] <= bound else 1)
EOF
fi
if [[ -n "$REFUSAL" ]]; then
  echo "PASS: $NFW firmware devices refused the task ('$REFUSAL'), $NNATIVE native devices ran $rounds rounds"
else
  echo "PASS: $NFW firmware ($LINK${NOISE:+, line noise $NOISE}) + $NNATIVE native devices, mode $MODE, $rounds rounds"
fi
