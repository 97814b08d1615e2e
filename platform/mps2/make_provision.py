#!/usr/bin/env python3
"""Write a per-device provisioning blob for fedrt firmware on mps2 (layout in
platform/mps2/provision.h). QEMU loads it with
  -device loader,file=BLOB,addr=0x00017000   (qemu-run.sh --provision BLOB; 0x0001F000
                                              for the large layout, read from the ELF)
"""
import argparse
import pathlib
import secrets
import struct
import sys
import zlib

MAGIC = 0x56505246
VERSION = 1
HEADER = struct.Struct("<IHHII")        # magic, version, header_size, payload_size, crc32
V1 = struct.Struct("<I32sB3s32s32sQ")   # device_index, device_id, psk_len, reserved, psk, entropy_seed, experiment_seed
CAPACITY = 4096


def build(device_index, device_id, psk, seed, experiment_seed, extension=b""):
    ident = device_id.encode()
    if not 1 <= len(ident) <= 32:
        raise ValueError(f"device id must be 1..32 bytes, got {len(ident)}")
    if not 1 <= len(psk) <= 32:
        raise ValueError(f"PSK must be 1..32 bytes, got {len(psk)}")
    if len(seed) != 32:
        raise ValueError(f"entropy seed must be 32 bytes, got {len(seed)}")
    payload = V1.pack(device_index, ident, len(psk), b"\0\0\0", psk, seed, experiment_seed) + extension
    blob = HEADER.pack(MAGIC, VERSION, HEADER.size, len(payload), zlib.crc32(payload)) + payload
    if len(blob) > CAPACITY:
        raise ValueError(f"blob is {len(blob)} bytes, the region holds {CAPACITY}")
    return blob


def hex_bytes(name, text):
    try:
        return bytes.fromhex(text)
    except ValueError:
        raise SystemExit(f"make_provision: --{name} is not hex: {text!r}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="blob file to write")
    ap.add_argument("--index", type=int, required=True, help="device index c in the experiment")
    ap.add_argument("--id", required=True, help="device id = TLS PSK identity (1..32 bytes)")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--psk-hex", help="pre-shared key, hex")
    g.add_argument("--psk-file", help="file holding the PSK as hex (as written by fedrt-keys)")
    ap.add_argument("--seed-hex", help="32-byte entropy seed, hex (default: 32 fresh random bytes from the host)")
    ap.add_argument("--experiment-seed", type=int, default=0, help="experiment seed (u64)")
    ap.add_argument("--extension", help="file appended after the fixed fields (application data)")
    a = ap.parse_args()
    if a.index < 0 or a.index >= 2**32:
        raise SystemExit("make_provision: --index must be in [0, 2^32)")
    if a.psk_file:
        psk = hex_bytes("psk-file", pathlib.Path(a.psk_file).read_text().strip())
    else:
        psk = hex_bytes("psk-hex", a.psk_hex)
    if a.seed_hex:
        seed = hex_bytes("seed-hex", a.seed_hex)
    else:
        seed = secrets.token_bytes(32)
    ext = pathlib.Path(a.extension).read_bytes() if a.extension else b""
    try:
        blob = build(a.index, a.id, psk, seed, a.experiment_seed % 2**64, ext)
    except ValueError as e:
        raise SystemExit(f"make_provision: {e}")
    pathlib.Path(a.out).write_bytes(blob)
    return 0


if __name__ == "__main__":
    sys.exit(main())
