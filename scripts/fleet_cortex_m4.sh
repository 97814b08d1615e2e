# Cortex-M4F firmware devices for scripts/fleet.sh: fedrt-fw (every family;
# or fedrt-fw-lsa) under qemu-system-arm -M mps2-an386, its UART1 bridged to
# the coordinator over TCP. The task comes from the coordinator; the device's
# data is its problem image. Sourced by fleet.sh; uses its ROOT, BIN, CONFIG,
# DEVICES, TIMEOUT die() and fail(). Per device: OUT/logs/<id>.img (problem image,
# fedrt-fw-provision: agent <index>'s data of the experiment, loaded into the
# firmware's data partition) and OUT/logs/<id>.blob (provisioning block: id,
# PSK, fresh entropy seed). With [data] shards (SHARDS set by fleet.sh) the
# firmware is fedrt-fw-digits, whose data is its own CSV shard: OUT/logs/<id>.shard
# (examples/mcu-own-data/shard_to_blob.py, labels as the task's model reads
# them) is loaded into its flash shard region instead of a problem image.
#   FEDRT_CORTEX_M4_ELF   firmware (default build/cortex-m4/bin/fedrt-fw.elf, with shards
#                         fedrt-fw-digits.elf; ./fedrt build cortex-m4)

if [[ -n "${SHARDS:-}" ]]; then
  CORTEX_M4_ELF="${FEDRT_CORTEX_M4_ELF:-$ROOT/build/cortex-m4/bin/fedrt-fw-digits.elf}"
else
  CORTEX_M4_ELF="${FEDRT_CORTEX_M4_ELF:-$ROOT/build/cortex-m4/bin/fedrt-fw.elf}"
fi

cortex_m4_check() {
  [[ -f "$CORTEX_M4_ELF" ]] || fail "--cortex-m4: $CORTEX_M4_ELF not built (./fedrt build cortex-m4)"
  [[ -n "${SHARDS:-}" || -x "$BIN/fedrt-fw-provision" ]] || fail "--cortex-m4: $BIN/fedrt-fw-provision not built (./fedrt build)"
  command -v qemu-system-arm >/dev/null || fail "--cortex-m4: qemu-system-arm not found (apt-get install qemu-system-arm)"
  [[ "$AUTH" != cert ]] || die "--cortex-m4: the firmware authenticates with its PSK only (use --auth psk or mixed)"
}

# launch_cortex_m4 ID INDEX PORT KEYDIR LOG: provisions and starts one
# firmware instance in the background (output to LOG), echoes its PID. PORT
# "pty": its UART on a pseudo-terminal (a gateway's --serial line; the path
# from cortex_m4_pty LOG) instead of a TCP bridge to 127.0.0.1:PORT.
launch_cortex_m4() {
  local id="$1" index="$2" port="$3" keydir="$4" log="$5"
  local base="${log%.log}" data
  if [[ -n "${SHARDS:-}" ]]; then  # own data: the device's CSV shard as a flash blob
    local label classes model args=()
    label="$(sed -n '/^\[data\]/,/^\[/{s/^label *= *"\([^"]*\)".*/\1/p}' "$CONFIG" | head -1)"
    model="$(sed -n '/^\[model\]/,/^\[/{s/^kind *= *"\([a-z_]*\)".*/\1/p}' "$CONFIG" | head -1)"
    classes="$(sed -n '/^\[model\]/,/^\[/{s/^classes *= *\([0-9]*\).*/\1/p}' "$CONFIG" | head -1)"
    [[ "$model" == logistic ]] && args+=(--binary)
    [[ "$model" == softmax ]] && args+=(--classes "$classes")
    "$ROOT/examples/mcu-own-data/shard_to_blob.py" --input "${SHARDS//\{id\}/$index}" --out "$base.shard" \
      --label "${label:-label}" "${args[@]}" >"$log" 2>&1 || return 1
    data=(--shard "$base.shard")
  else
    "$BIN/fedrt-fw-provision" --config "$CONFIG" --agents "$DEVICES" --index "$index" --out "$base.img" \
      2>"$log" || return 1
    data=(--data "$base.img")
  fi
  "$ROOT/platform/mps2/make_provision.py" --out "$base.blob" --index "$index" --id "$id" \
    --psk-hex "$(tr -d ' \n' <"$keydir/device.psk")" >>"$log" 2>&1 || return 1
  # SIGTERM to the echoed PID (fleet.sh's cleanup) must reach QEMU: qemu-run.sh
  # runs it under timeout(1), in timeout's own process group, so the wrapper
  # signals qemu-run.sh's child (timeout forwards the signal to QEMU).
  bash -c 'c=; trap "pkill -TERM -P \$c; kill \$c" TERM; "$@" & c=$!; wait $c' fedrt-fw-"$id" \
    "$ROOT/platform/mps2/qemu-run.sh" --machine mps2-an386 --timeout "$TIMEOUT" --provision "$base.blob" \
    "${data[@]}" --serial1 "$([[ "$port" == pty ]] && echo pty || echo "tcp:127.0.0.1:$port,reconnect=1")" \
    "$CORTEX_M4_ELF" >>"$log" 2>&1 </dev/null &
  echo $!
}

# cortex_m4_pty LOG: the pseudo-terminal QEMU put the UART on (it prints
# "char device redirected to /dev/pts/N (label serial1)"); fails after 10 s.
cortex_m4_pty() {
  local log="$1" path=""
  for _ in $(seq 100); do
    path="$(sed -n 's/.*char device redirected to \([^ ]*\) (label serial1).*/\1/p' "$log" | head -1)"
    [[ -n "$path" ]] && { echo "$path"; return 0; }
    sleep 0.1
  done
  return 1
}
