#!/usr/bin/env bash
# Run one fedrt firmware ELF under qemu-system-arm (mps2-an385 / mps2-an386)
# and return its exit code (semihosting SYS_EXIT_EXTENDED). Used as
# CMAKE_CROSSCOMPILING_EMULATOR by the cortex-m toolchains, so ctest appends
# the ELF (and any test arguments) after the options below.
#
#   qemu-run.sh --machine mps2-an386 [--timeout SEC] [--icount] [--provision BLOB]
#               [--data IMAGE] [--shard BLOB] [--serial1 CHARDEV] [--monitor SOCKET]
#               [--] FIRMWARE.elf [ARG...]
#
#   --timeout SEC      kill QEMU after SEC seconds (default 60; exit code 124;
#                      0 = no limit, e.g. for fedrt-fw in a long fleet run)
#   --icount           -icount shift=0: 1 ns of virtual time per instruction
#                      (deterministic instruction counts for benchmarks)
#   --provision BLOB   load a provisioning blob (make_provision.py) at the
#                      firmware's fedrt_provision_block (0x00017000, or the
#                      address its ELF names: 0x0001F000 for the 128 KB layout)
#   --data IMAGE       load a data partition (fedrt-fw-provision's problem
#                      image) at fedrt_data_block (0x00200000, mps2-common.ld)
#   --shard BLOB       load a device's shard (examples/mcu-own-data/shard_to_blob.py)
#                      at the firmware's fedrt_shard_block (its linker script's shard
#                      region in flash: fedrt-fw-digits, 0x000BF000)
#   --serial1 CHARDEV  UART1 (the coordinator link), e.g. tcp:127.0.0.1:7000, or
#                      pty: a pseudo-terminal for `fedrt-coordinator --serial`,
#                      whose path QEMU prints first on standard output:
#                      "char device redirected to /dev/pts/N (label serial1)"
#   --monitor SOCKET   QEMU's monitor on this unix socket (default: none), e.g. for
#                      "system_reset", a board's reset button (tests/fw_link)
# ARGs are passed to the firmware as its semihosting command line.
set -euo pipefail

machine="" timeout_s=60 icount=0 provision="" data="" shard="" serial1="" monitor=""
while (($#)); do
  case "$1" in
    --machine) machine="${2:?--machine needs a value}"; shift 2 ;;
    --timeout) timeout_s="${2:?--timeout needs seconds}"; shift 2 ;;
    --icount) icount=1; shift ;;
    --provision) provision="${2:?--provision needs a file}"; shift 2 ;;
    --data) data="${2:?--data needs a file}"; shift 2 ;;
    --shard) shard="${2:?--shard needs a file}"; shift 2 ;;
    --serial1) serial1="${2:?--serial1 needs a chardev}"; shift 2 ;;
    --monitor) monitor="${2:?--monitor needs a socket path}"; shift 2 ;;
    --) shift; break ;;
    -*) echo "qemu-run.sh: unknown option '$1'" >&2; exit 2 ;;
    *) break ;;
  esac
done
elf="${1:-}"
[[ -n "$machine" ]] || { echo "qemu-run.sh: --machine is required (mps2-an385 or mps2-an386)" >&2; exit 2; }
[[ -n "$elf" ]] || { echo "qemu-run.sh: no firmware ELF given" >&2; exit 2; }
[[ -f "$elf" ]] || { echo "qemu-run.sh: firmware '$elf' does not exist" >&2; exit 2; }
shift

semi="enable=on,target=native"
for a in "$(basename "$elf")" "$@"; do semi+=",arg=$a"; done

mon=none
[[ -n "$monitor" ]] && mon="unix:$monitor,server=on,wait=off"
cmd=(qemu-system-arm -M "$machine" -nographic -monitor "$mon" -semihosting-config "$semi")
((icount)) && cmd+=(-icount shift=0)
if [[ -n "$serial1" ]]; then
  cmd+=(-serial stdio -serial "$serial1")
fi
# Where the ELF's linker script put a region (0x... of symbol $1), else $2.
symbol_addr() {
  local a
  a="$(arm-none-eabi-nm "$elf" 2>/dev/null | awk -v s="$1" '$3 == s {print $1; exit}')"
  [[ -n "$a" ]] && echo "0x$a" || echo "$2"
}
if [[ -n "$provision" ]]; then
  [[ -f "$provision" ]] || { echo "qemu-run.sh: provisioning blob '$provision' does not exist" >&2; exit 2; }
  cmd+=(-device "loader,file=$provision,addr=$(symbol_addr fedrt_provision_block 0x00017000),force-raw=on")
fi
if [[ -n "$data" ]]; then
  [[ -f "$data" ]] || { echo "qemu-run.sh: data image '$data' does not exist" >&2; exit 2; }
  cmd+=(-device "loader,file=$data,addr=$(symbol_addr fedrt_data_block 0x00200000),force-raw=on")
fi
if [[ -n "$shard" ]]; then
  [[ -f "$shard" ]] || { echo "qemu-run.sh: shard blob '$shard' does not exist" >&2; exit 2; }
  at="$(symbol_addr fedrt_shard_block "")"
  [[ -n "$at" ]] || { echo "qemu-run.sh: $(basename "$elf") has no shard region (fedrt_shard_block)" >&2; exit 2; }
  cmd+=(-device "loader,file=$shard,addr=$at,force-raw=on")
fi
cmd+=(-kernel "$elf")

# timeout --foreground stays in our process group (without it, timeout(1)
# moves to a group of its own, so signalling this script's group or this
# script left QEMU running). A signal to this script is forwarded to timeout,
# which forwards it to QEMU; we then wait for QEMU to be gone.
rc=0
timeout --foreground --kill-after=5 "$timeout_s" "${cmd[@]}" </dev/null &
child=$!
signalled=0
forward() { signalled=$2; kill -"$1" "$child" 2>/dev/null || true; }
trap 'forward TERM 143' TERM
trap 'forward INT 130' INT
trap 'forward HUP 129' HUP
wait "$child" || rc=$?
# wait returns > 128 when a trapped signal interrupted it: wait for timeout
# (and QEMU) to exit, keeping its status.
while ((rc > 128)) && kill -0 "$child" 2>/dev/null; do
  rc=0
  wait "$child" || rc=$?
done
# QEMU exits with 0 on SIGTERM: report the signal instead.
((signalled)) && rc=$signalled
if ((rc == 124)); then
  echo "qemu-run.sh: $(basename "$elf") did not exit within ${timeout_s} s (killed)" >&2
fi
exit "$rc"
