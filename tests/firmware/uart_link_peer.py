#!/usr/bin/env python3
"""Host peer of uart_link_test: a TCP server on 127.0.0.1 that QEMU's UART1
connects to (qemu-run.sh --serial1 tcp:127.0.0.1:PORT); sends a length-prefixed
payload, checks the firmware's answer (bytes XOR 0x5A + CRC-32) and returns
the firmware's exit code (0 only if both sides passed).

  uart_link_peer.py QEMU_RUN_CMD... FIRMWARE.elf
"""
import random
import socket
import struct
import subprocess
import sys
import zlib


def recv_exact(conn, n):
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise ConnectionError(f"link closed after {len(data)} of {n} bytes")
        data += chunk
    return data


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    *runner, elf = sys.argv[1:]
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    srv.settimeout(30)
    port = srv.getsockname()[1]
    qemu = subprocess.Popen(runner + ["--serial1", f"tcp:127.0.0.1:{port}", elf])
    ok = False
    try:
        conn, _ = srv.accept()
        conn.settimeout(30)
        payload = bytes(random.Random(6).getrandbits(8) for _ in range(1500))
        conn.sendall(struct.pack(">I", len(payload)) + payload)
        answer = recv_exact(conn, len(payload) + 4)
        want = bytes(b ^ 0x5A for b in payload) + struct.pack(">I", zlib.crc32(payload))
        ok = answer == want
        if not ok:
            print("uart_link_peer: the firmware's answer differs from the expected bytes", file=sys.stderr)
        rc = qemu.wait(timeout=60)
        conn.close()
    except (OSError, ConnectionError, subprocess.TimeoutExpired) as e:
        print(f"uart_link_peer: {e}", file=sys.stderr)
        qemu.kill()
        qemu.wait()
        return 1
    print(f"uart_link_peer: 1500 bytes over UART1, answer {'ok' if ok else 'WRONG'}, firmware exit {rc}")
    return rc if ok else 1


if __name__ == "__main__":
    sys.exit(main())
