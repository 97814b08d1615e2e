#!/usr/bin/env python3
"""qemu-run.sh forwards signals to QEMU, and an idle firmware lets QEMU sleep.

Usage: qemu_signal_test.py QEMU-RUN-COMMAND... FIRMWARE.elf

Starts the firmware (which waits on UART1 that nobody writes to) under
qemu-run.sh, measures QEMU's host CPU use over 2 s of that wait (/proc
utime + stime: a polling UART driver keeps a host core busy, WFI on the RX
interrupt does not), then sends SIGTERM to qemu-run.sh only and checks that
QEMU exits too (timeout(1) used to move QEMU out of reach).
"""
import os
import signal
import subprocess
import sys
import time


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def find_qemu(root):
    todo = [root]
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() == "qemu-system-arm":
                    return pid
        except OSError:
            pass
        todo.extend(children(pid))
    return None


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def main():
    cmd = sys.argv[1:]
    if len(cmd) < 2:
        sys.exit("usage: qemu_signal_test.py QEMU-RUN-COMMAND... FIRMWARE.elf")
    runner = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    qemu = None
    for _ in range(100):
        qemu = find_qemu(runner.pid)
        if qemu:
            break
        time.sleep(0.1)
    if not qemu:
        runner.kill()
        sys.exit("FAIL: no qemu-system-arm process under qemu-run.sh")
    time.sleep(1.0)  # boot, reach the UART wait
    c0, t0 = cpu_seconds(qemu), time.monotonic()
    time.sleep(2.0)
    c1, t1 = cpu_seconds(qemu), time.monotonic()
    share = (c1 - c0) / (t1 - t0)
    print(f"idle firmware: QEMU host CPU {100 * share:.1f}% of a core")
    runner.send_signal(signal.SIGTERM)
    try:
        runner.wait(timeout=15)
    except subprocess.TimeoutExpired:
        runner.kill()
        sys.exit("FAIL: qemu-run.sh did not exit within 15 s of SIGTERM")
    deadline = time.monotonic() + 5
    while alive(qemu) and time.monotonic() < deadline:
        time.sleep(0.1)
    if alive(qemu):
        os.kill(qemu, signal.SIGKILL)
        sys.exit(f"FAIL: QEMU (pid {qemu}) still running after qemu-run.sh got SIGTERM")
    print(f"qemu-run.sh exited with {runner.returncode} and QEMU is gone")
    # A polling driver spins a core whenever the host gives it one; WFI uses ~1%.
    if share > 0.5:
        sys.exit(f"FAIL: an idle firmware used {100 * share:.1f}% of a host core (expected WFI)")
    print("PASS")


if __name__ == "__main__":
    main()
