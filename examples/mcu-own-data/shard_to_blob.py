#!/usr/bin/env python3
"""A CSV shard (docs/data.md) as a data blob for a firmware's shard region in
flash (fedrt-fw-digits: qemu-run.sh --shard BLOB loads it at the ELF's
fedrt_shard_block; shard_blob.h reads it in place). Layout, little-endian:
a 32-byte header, the 8 bytes FRTSHARD, u32 version (1), u32 rows, u32 dim
(features per example), u32 payload bytes, u32 CRC-32 (zlib's) of the payload,
u32 zero; then the payload: rows x dim float32 features (row-major) and rows
float32 labels. --binary stores labels 0/1 as -1/+1 (binary logistic
regression), --classes K checks softmax labels 0..K-1. Bad cells stop with
file:line:column (shard_to_c.py's reader)."""
import argparse
import os
import struct
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shard_to_c import read_shard  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--input", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--label", default="label")
    ap.add_argument("--binary", action="store_true")
    ap.add_argument("--classes", type=int, default=0)
    ap.add_argument("--max-bytes", type=int, default=0x40000, help="the shard region's size (default 256 KB)")
    a = ap.parse_args()
    xs, ys = read_shard(a.input, a.label, a.binary, a.classes)
    rows, dim = len(xs), len(xs[0])
    payload = struct.pack(f"<{rows * dim}f", *[v for x in xs for v in x]) + struct.pack(f"<{rows}f", *ys)
    head = b"FRTSHARD" + struct.pack("<6I", 1, rows, dim, len(payload), zlib.crc32(payload), 0)
    if len(head) + len(payload) > a.max_bytes:
        sys.exit(f"{a.input}: {rows} examples of {dim} features take {len(head) + len(payload)} bytes, "
                 f"more than the shard region's {a.max_bytes}")
    with open(a.out, "wb") as o:
        o.write(head + payload)
    print(f"{a.out}: {rows} examples of {dim} features, {len(head) + len(payload)} bytes")


if __name__ == "__main__":
    main()
