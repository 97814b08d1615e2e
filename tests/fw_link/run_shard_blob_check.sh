#!/usr/bin/env bash
# fedrt-fw-digits refuses a bad shard region at boot, before it connects:
# with no blob loaded it stops with "no shard blob", with one byte of a
# valid blob's payload flipped with "shard blob CRC mismatch", and exits 1
# both times (examples/mcu-own-data/shard_blob.c; no coordinator needed).
#   run_shard_blob_check.sh --elf fedrt-fw-digits.elf --shard SHARD.csv --classes K --out DIR
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
ELF="" SHARD="" CLASSES=0 OUT=""
while (($#)); do
  case "$1" in
    --elf) ELF="$2"; shift 2 ;;
    --shard) SHARD="$2"; shift 2 ;;
    --classes) CLASSES="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    *) echo "run_shard_blob_check.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
command -v qemu-system-arm >/dev/null || { echo "SKIP: qemu-system-arm not installed"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$OUT" && mkdir -p "$OUT"
"$ROOT/platform/mps2/make_provision.py" --out "$OUT/dev.blob" --index 0 --id dev0000 \
  --psk-hex 000102030405060708090a0b0c0d0e0f >/dev/null || fail "make_provision.py"
"$ROOT/examples/mcu-own-data/shard_to_blob.py" --input "$SHARD" --classes "$CLASSES" --out "$OUT/shard.bin" \
  || fail "shard_to_blob.py"
/usr/bin/python3 -c "import sys; b = bytearray(open(sys.argv[1], 'rb').read()); b[100] ^= 1; open(sys.argv[2], 'wb').write(b)" \
  "$OUT/shard.bin" "$OUT/corrupt.bin" || fail "corrupting the blob"
run() {  # run NAME [--shard BLOB]: the firmware's console in OUT/NAME.log; must exit 1
  local name="$1" rc
  shift
  "$ROOT/platform/mps2/qemu-run.sh" --machine mps2-an386 --timeout 20 --provision "$OUT/dev.blob" "$@" "$ELF" \
    >"$OUT/$name.log" 2>&1
  rc=$?
  ((rc == 1)) || fail "$name: exit code $rc, expected 1 ($(tail -2 "$OUT/$name.log"))"
}
run none
grep -q "shard region: no shard blob" "$OUT/none.log" || fail "without a blob: $(grep error "$OUT/none.log")"
run corrupt --shard "$OUT/corrupt.bin"
grep -q "shard region: shard blob CRC mismatch" "$OUT/corrupt.log" || fail "corrupted blob: $(grep error "$OUT/corrupt.log")"
grep -h "error:" "$OUT/none.log" "$OUT/corrupt.log"
echo "PASS: fedrt-fw-digits refuses a missing or corrupted shard blob at boot"
