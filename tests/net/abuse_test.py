#!/usr/bin/env python3
"""Acceptance (issue 19, abuse limits): honest devices train through an attack.

Runs the same loopback experiment twice with scripts/fleet.sh (DEVICES native
fedrt-device processes, PSK): once quiet, once while this script attacks the
coordinator from the moment every device has registered until the run ends:
  - a handshake flood: two processes opening TCP connections, sending bytes
    that are not TLS, and closing them, as fast as they can;
  - SLOW slow connections that trickle one byte of a TLS record header every
    half second and are reopened when the coordinator drops them.
The experiment sets max_handshakes = 128, so the flood keeps the coordinator
at its cap of handshakes in progress the whole time.

Checks:
  - both runs finish; every round of both aggregated all DEVICES updates;
  - the attacked run's metrics.csv equals the quiet run's (same seed: same
    errors round by round), apart from wall-clock columns;
  - the coordinator's lines about refused or dropped connections add at most
    4 kB per second to its log during the attack;
  - the coordinator's peak resident memory (VmHWM) under attack stays within
    the quiet run's plus max_handshakes connections of 64 KiB each.
Prints the attack's size and the median round latency of both runs.

  abuse_test.py --bin DIR --out DIR [--devices N] [--slow N]
"""
import argparse
import csv
import multiprocessing
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAX_HANDSHAKES = 128
ROUNDS = 1000
# Each run (quiet, attacked) takes about 12 s on a quiet 2-core machine; ctest stops the test at 300 s.
RUN_LIMIT_S = 130
EXPERIMENT = """
[problem]
kind = "garnet"
heterogeneity = "high"
agents = {agents}
[algorithm]
names = ["scafflsa"]
local_steps = 20
[run]
rounds = {rounds}
seed = 11
[network]
auth = "psk"
deadline_ms = 60000
start_timeout_ms = 120000
max_handshakes = {max_handshakes}
"""
REFUSAL_LINE = re.compile(r"coordinator (refused peer|dropped peer|refusals key|accept error)")
WALL_CLOCK = re.compile(r"(time|latency|_ms|_s$|seconds)", re.I)


def fail(msg):
    print("abuse_test: FAIL: " + msg)
    print("0 passed, 1 failed")
    sys.exit(1)


def flood(port, stop):
    n = 0
    while not stop.is_set():
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=1)
            s.send(b"\x00garbage, not a TLS record\r\n")
            s.close()
            n += 1
        except OSError:
            time.sleep(0.001)
    return n


def flood_process(port, stop, counter):
    counter.value = flood(port, stop)


def slow_connections(port, count, stop, stats):
    """COUNT connections that send one byte of a TLS handshake record header every 0.5 s."""
    header = b"\x16\x03\x01\x02\x00"
    socks = {}
    while not stop.is_set():
        for i in range(count):
            s = socks.get(i)
            try:
                if s is None:
                    s = socket.create_connection(("127.0.0.1", port), timeout=1)
                    s.setblocking(False)
                    socks[i] = s
                    stats["opened"] += 1
                s.send(header[stats["sent"] % len(header):][:1])
                stats["sent"] += 1
            except OSError:
                if s is not None:
                    s.close()
                socks.pop(i, None)
        stop.wait(0.5)
    for s in socks.values():
        s.close()


def peak_rss_kb(pid):
    try:
        for line in open("/proc/%d/status" % pid):
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def coordinator_pid(out):
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmd = open("/proc/%s/cmdline" % pid).read().split("\0")
            except OSError:
                continue
            if cmd and cmd[0].endswith("fedrt-coordinator") and any(out in a for a in cmd):
                return int(pid)
    return None


def run_fleet(a, cfg, out, attack):
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    log = os.path.join(out, "coordinator.log")
    fleet = subprocess.Popen([os.path.join(ROOT, "scripts", "fleet.sh"), "--config", cfg, "--native", str(a.devices),
                              "--out", out, "--bin", a.bin, "--auth", "psk", "--timeout", "300"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True)
    end = time.time() + 120
    pid, port = None, None
    while time.time() < end and fleet.poll() is None:
        text = open(log).read() if os.path.exists(log) else ""
        m = re.search(r"listening address=127\.0\.0\.1:(\d+)", text)
        if m and "start devices=%d of %d" % (a.devices, a.devices) in text:
            port, pid = int(m.group(1)), coordinator_pid(out)
            break
        time.sleep(0.05)
    if port is None:
        os.killpg(fleet.pid, signal.SIGKILL)
        fail("%s: the devices did not all register (see %s)" % (out, log))
    res = {"pid": pid}
    stop_t, stop_p = threading.Event(), multiprocessing.Event()
    procs, counters, slow = [], [], {"opened": 0, "sent": 0}
    size0, t0 = os.path.getsize(log), time.time()  # all devices registered: the attack starts
    if attack:
        # The flood processes are spawned, not forked, and before the slow
        # connections' thread starts: a child forked while that thread holds a
        # lock of the C library (inside getaddrinfo, say) can hang in it forever.
        ctx = multiprocessing.get_context("spawn")
        stop_p = ctx.Event()
        for _ in range(2):
            c = ctx.Value("q", 0)
            p = ctx.Process(target=flood_process, args=(port, stop_p, c), daemon=True)
            p.start()
            procs.append(p)
            counters.append(c)
        t = threading.Thread(target=slow_connections, args=(port, a.slow, stop_t, slow), daemon=True)
        t.start()
    peak, end = 0, time.time() + RUN_LIMIT_S
    while fleet.poll() is None:
        peak = max(peak, peak_rss_kb(pid))
        if time.time() > end:  # say where it stood rather than be killed silently by ctest
            stop_t.set()
            stop_p.set()
            os.killpg(fleet.pid, signal.SIGKILL)  # fleet.sh, the coordinator and the devices
            text = open(log, errors="replace").read().splitlines()
            fail("%s: the fleet did not finish within %d s; the coordinator's last log lines:\n%s"
                 % (out, RUN_LIMIT_S, "\n".join(text[-40:])))
        time.sleep(0.1)
    res["attack_s"] = time.time() - t0
    with open(log, errors="replace") as f:  # the log's lines about refused or dropped connections, during the attack
        f.seek(size0)
        res["refusal_bytes"] = sum(len(l) for l in f if REFUSAL_LINE.search(l))
    if attack:
        stop_t.set()
        stop_p.set()
        t.join(5)
        for p in procs:
            p.join(10)
            if p.is_alive():
                p.kill()
                fail("a flood process did not stop within 10 s of being told to")
        res["flood"] = sum(c.value for c in counters)
        res["slow"] = slow
    if fleet.returncode != 0:
        fail("%s: the fleet failed (rc %d, see %s)" % (out, fleet.returncode, log))
    res["peak_kb"] = peak
    text = open(log).read()
    rounds = re.findall(r"round alg=\S+ run=\d+ round=\d+ agents=(\d+)/(\d+) .*latency_ms=([\d.]+)", text)
    res["rounds"] = rounds
    res["refusal_summaries"] = re.findall(r"refusals key=(\S+) count=(\d+)", text)
    with open(os.path.join(out, "metrics.csv")) as f:
        rows = list(csv.DictReader(f))
    res["metrics"] = [{k: v for k, v in r.items() if not WALL_CLOCK.search(k)} for r in rows]
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--devices", type=int, default=50)
    ap.add_argument("--slow", type=int, default=300)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    cfg = os.path.join(a.out, "experiment.toml")
    with open(cfg, "w") as f:
        f.write(EXPERIMENT.format(agents=a.devices, max_handshakes=MAX_HANDSHAKES, rounds=ROUNDS))
    quiet = run_fleet(a, cfg, os.path.join(a.out, "quiet"), False)
    attacked = run_fleet(a, cfg, os.path.join(a.out, "attacked"), True)

    for name, r in (("quiet", quiet), ("attacked", attacked)):
        if len(r["rounds"]) != ROUNDS or any(int(x) != a.devices or int(y) != a.devices for x, y, _ in r["rounds"]):
            fail("%s run: rounds %s, expected %d rounds of %d/%d updates" % (name, r["rounds"], ROUNDS, a.devices, a.devices))
    if quiet["metrics"] != attacked["metrics"]:
        fail("the attacked run's metrics differ from the quiet run's:\n%s\n%s" % (quiet["metrics"], attacked["metrics"]))
    if attacked["flood"] < 1000:
        fail("the flood made only %d connections: it did not test anything" % attacked["flood"])
    rate = attacked["refusal_bytes"] / attacked["attack_s"]
    if rate > 4000:
        fail("the coordinator logged %.0f B/s of refusals under attack" % rate)
    bound = quiet["peak_kb"] + MAX_HANDSHAKES * 64
    if attacked["peak_kb"] > bound:
        fail("peak RSS under attack %d kB, above the quiet run's %d kB plus %d handshakes of 64 KiB"
             % (attacked["peak_kb"], quiet["peak_kb"], MAX_HANDSHAKES))
    q = statistics.median(float(l) for _, _, l in quiet["rounds"])
    t = statistics.median(float(l) for _, _, l in attacked["rounds"])
    print("abuse: %d devices, %d rounds each run; attack of %.1f s: %d flood connections (%.0f/s), %d slow connections "
          "opened (%d of them at a time), refusals summarized %s"
          % (a.devices, ROUNDS, attacked["attack_s"], attacked["flood"], attacked["flood"] / attacked["attack_s"],
             attacked["slow"]["opened"], a.slow, attacked["refusal_summaries"][:4]))
    print("abuse: every round aggregated %d/%d updates in both runs; metrics.csv equal (%d rows)"
          % (a.devices, a.devices, len(quiet["metrics"])))
    print("abuse: the coordinator logged %.0f B/s of refusals under attack; peak RSS %d kB quiet, %d kB attacked "
          "(bound %d kB)" % (rate, quiet["peak_kb"], attacked["peak_kb"], bound))
    print("abuse: median round latency %.1f ms quiet, %.1f ms attacked (%+.0f%%)" % (q, t, 100 * (t - q) / q))
    print("1 passed, 0 failed")


if __name__ == "__main__":
    main()
