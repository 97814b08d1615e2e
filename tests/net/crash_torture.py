#!/usr/bin/env python3
"""Acceptance (issue 19, crash torture): SIGKILL at any moment loses nothing.

Runs one loopback experiment twice with the same seed (DEVICES native
fedrt-device processes, PSK; Scaffold on least squares with half of the
devices sampled per round, so the coordinator keeps per-round samples and
every device keeps control variates):
  - undisturbed;
  - tortured: the coordinator is SIGKILLed KILLS times and restarted on the
    same state db each time. Each life ends one of three ways, in a shuffled
    order: an outside SIGKILL after a random delay of up to MAX_LIFE seconds
    (half of the lives), a SIGKILL inside its n-th round commit before
    SQLite's COMMIT (--crash-in-commit n, n random in 1..3; a quarter), or
    one just after that commit, before any device hears the result
    (--crash-after-commit n; a quarter). Meanwhile DEVICE_KILLS times a random device
    is SIGKILLed and restarted on its state directory.

Checks: the tortured run's rounds (every column but the wall-clock
closed_at), its round vectors (global iterate and server state) and round
members (but their timings and byte counts), its metrics.csv (but wall-clock
columns) and every device's sequence of committed states (the digests the
devices log) equal the undisturbed run's.

  crash_torture.py --bin DIR --test-bin DIR --out DIR [--kills N] [--device-kills N]
                   [--devices N] [--rounds N] [--seed N] [--max-life S]
"""
import argparse
import csv
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time

EXPERIMENT = """
[problem]
kind = "lsq"
dim = 6
agents = {agents}
[algorithm]
names = ["scaffold"]
step = 0.05
local_steps = 200
[participation]
rate = 0.5
[run]
rounds = {rounds}
runs = 1
seed = {seed}
[network]
auth = "psk"
deadline_ms = 120000
start_timeout_ms = 120000
"""
WALL_CLOCK = re.compile(r"(time|latency|_ms|_s$|seconds)", re.I)
COMMITTED = re.compile(r"committed alg=(\d+) run=(\d+) round=(\S+) included=(\S+) state=([0-9a-f]+)")
TIMEOUT_S = 600


def fail(msg):
    print("crash_torture: FAIL: " + msg)
    print("0 passed, 1 failed")
    sys.exit(1)


class Fleet:
    """A coordinator (restartable) and its devices in DIR."""

    def __init__(self, a, out):
        self.a, self.out = a, out
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        self.cfg = os.path.join(out, "experiment.toml")
        with open(self.cfg, "w") as f:
            f.write(EXPERIMENT.format(agents=a.devices, rounds=a.rounds, seed=a.seed))
        subprocess.run([os.path.join(a.bin, "fedrt-keys"), "--out", self.keys(), "--devices", str(a.devices)],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.port = None
        self.devices = {}
        self.lives = 0

    def keys(self):
        return os.path.join(self.out, "keys")

    def device_id(self, i):
        return "dev%04d" % i

    def start_coordinator(self, hook=None):
        """A new life of the coordinator on the same state db; returns once it listens."""
        self.lives += 1
        port_file = os.path.join(self.out, "port")
        if os.path.exists(port_file):
            os.remove(port_file)
        args = [os.path.join(self.a.test_bin, "fedrt-test-coordinator"), "--config", self.cfg,
                "--out", os.path.join(self.out, "out"), "--keys", self.keys(),
                "--state", os.path.join(self.out, "coordinator.db"), "--listen", "127.0.0.1",
                "--port", str(self.port or 0), "--port-file", port_file, "--no-plot"]
        if hook:
            args += list(hook)
        log = open(os.path.join(self.out, "coordinator.log"), "a")
        log.write("### life %d %s\n" % (self.lives, " ".join(hook or ["(no hook)"])))
        log.flush()
        self.co = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        end = time.time() + 30
        while time.time() < end and self.co.poll() is None:
            text = open(port_file).read() if os.path.exists(port_file) else ""
            if text.endswith("\n"):
                self.port = int(text)
                return
            time.sleep(0.01)
        if self.co.poll() is None or self.co.returncode != 0:
            self.co.kill()
            fail("%s: the coordinator did not listen (life %d; see coordinator.log)" % (self.out, self.lives))

    def start_device(self, i):
        d = self.device_id(i)
        log = open(os.path.join(self.out, d + ".log"), "a")
        self.devices[i] = subprocess.Popen(
            [os.path.join(self.a.bin, "fedrt-device"), "--coordinator", "127.0.0.1:%d" % self.port, "--id", d,
             "--state", os.path.join(self.out, d), "--key", os.path.join(self.keys(), "devices", d, "device.psk"),
             "--give-up-ms", "120000"], stdout=log, stderr=subprocess.STDOUT)

    def kill_all(self):
        for p in list(self.devices.values()) + [self.co]:
            if p.poll() is None:
                p.kill()
                p.wait()


def torture_devices(fleet, count, stop, rng, done):
    """COUNT times: SIGKILL a random device after a random pause and restart it at once."""
    while done[0] < count and not stop.wait(rng.uniform(0.02, 0.2)):
        i = rng.randrange(fleet.a.devices)
        p = fleet.devices[i]
        if p.poll() is not None:
            continue  # it finished: the run is ending
        p.send_signal(signal.SIGKILL)
        p.wait()
        fleet.start_device(i)
        done[0] += 1


def hook(way, rng):
    """The coordinator flags that end a life the way drawn (none for the outside SIGKILL or the last life)."""
    return ["--crash-" + way, str(rng.randint(1, 3))] if way in ("in-commit", "after-commit") else None


def run(a, out, kills, device_kills):
    """The experiment in OUT with KILLS coordinator lives ended by SIGKILL and DEVICE_KILLS device kills."""
    rng, dev_rng = random.Random(a.seed * 7919 + kills), random.Random(a.seed * 104729 + device_kills)
    # How each life ends: a quarter inside a commit, a quarter right after one, the rest from outside, shuffled.
    plan = ["in-commit", "after-commit"] * ((kills + 3) // 4)
    plan = plan[:kills] + ["outside"] * max(0, kills - len(plan))
    rng.shuffle(plan)
    draw = lambda n: "last" if n >= kills else plan[n]
    ways = {"outside": 0, "in-commit": 0, "after-commit": 0}
    fleet = Fleet(a, out)
    way = draw(0)
    fleet.start_coordinator(hook(way, rng))
    for i in range(a.devices):
        fleet.start_device(i)
    stop, dev_done = threading.Event(), [0]
    t = threading.Thread(target=torture_devices, args=(fleet, device_kills, stop, dev_rng, dev_done))
    t.start()
    end = time.time() + TIMEOUT_S
    try:
        while True:
            if way == "outside":
                deadline = time.time() + rng.uniform(0.0, a.max_life)
                while fleet.co.poll() is None and time.time() < deadline:
                    time.sleep(0.005)
                if fleet.co.poll() is None:
                    fleet.co.send_signal(signal.SIGKILL)
            try:
                rc = fleet.co.wait(timeout=max(1, end - time.time()))
            except subprocess.TimeoutExpired:
                fail("%s: the run did not finish in %d s (see coordinator.log)" % (out, TIMEOUT_S))
            if way == "last":
                if rc != 0:
                    fail("%s: the last coordinator exited with %d (see coordinator.log)" % (out, rc))
                break
            if rc == 0:
                fail("%s: the run finished after %d of %d coordinator kills: give it more rounds"
                     % (out, sum(ways.values()), kills))
            if rc != -signal.SIGKILL:
                fail("%s: the coordinator exited with %d, not by SIGKILL (see coordinator.log)" % (out, rc))
            ways[way] += 1
            way = draw(sum(ways.values()))
            fleet.start_coordinator(hook(way, rng))
    finally:
        stop.set()
        t.join()
        for p in fleet.devices.values():  # they stop on the coordinator's shutdown message
            try:  # (but one restarted as the run ended waits for a coordinator that is gone)
                p.wait(timeout=3)
            except subprocess.TimeoutExpired:
                pass
        fleet.kill_all()
    return fleet, ways, dev_done[0]


def rows(db, sql):
    con = sqlite3.connect(db)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def snapshot(out):
    """What must not depend on the crashes: the db's history, metrics.csv, the devices' committed states."""
    db = os.path.join(out, "coordinator.db")
    cols = [r[1] for r in rows(db, "PRAGMA table_info(rounds)") if r[1] != "closed_at"]
    snap = {
        "rounds": rows(db, "SELECT %s FROM rounds ORDER BY algorithm, run, round" % ", ".join(cols)),
        "vectors": rows(db, "SELECT algorithm, run, round, kind, data FROM round_vectors "
                            "ORDER BY algorithm, run, round, kind"),
        "members": rows(db, "SELECT algorithm, run, round, device_index, examples, loss_before, loss_after "
                            "FROM round_members ORDER BY algorithm, run, round, device_index"),
    }
    with open(os.path.join(out, "out", "metrics.csv")) as f:
        snap["metrics"] = [{k: v for k, v in r.items() if not WALL_CLOCK.search(k)} for r in csv.DictReader(f)]
    states = {}
    for name in sorted(os.listdir(out)):
        if not re.fullmatch(r"dev\d+\.log", name):
            continue
        seq = {}
        for m in COMMITTED.finditer(open(os.path.join(out, name), errors="replace").read()):
            key = m.group(1, 2, 3)
            if key in seq and seq[key] != m.group(4, 5):
                fail("%s: %s committed round %s twice with different states" % (out, name, key))
            seq[key] = m.group(4, 5)
        states[name[:-4]] = seq
    snap["devices"] = states
    return snap


def compare(quiet, tortured):
    for k in ("rounds", "vectors", "members", "metrics"):
        if quiet[k] != tortured[k]:
            n = min(len(quiet[k]), len(tortured[k]))
            first = next((i for i in range(n) if quiet[k][i] != tortured[k][i]), n)
            fail("%s differ at row %d of %d/%d:\n  quiet:    %s\n  tortured: %s" % (
                k, first, len(quiet[k]), len(tortured[k]), quiet[k][first] if first < len(quiet[k]) else "-",
                tortured[k][first] if first < len(tortured[k]) else "-"))
    for d, seq in quiet["devices"].items():
        other = tortured["devices"].get(d, {})
        if seq != other:
            diff = sorted(k for k in set(seq) | set(other) if seq.get(k) != other.get(k))
            fail("device %s: committed states differ at rounds %s" % (d, diff[:5]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True, help="fedrt-device, fedrt-keys")
    ap.add_argument("--test-bin", required=True, help="fedrt-test-coordinator")
    ap.add_argument("--out", required=True)
    ap.add_argument("--kills", type=int, default=10, help="coordinator lives ended by SIGKILL")
    ap.add_argument("--device-kills", type=int, default=10)
    ap.add_argument("--devices", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=0, help="default: 50 per coordinator kill, at least 100")
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--max-life", type=float, default=0.3, help="an outside kill comes within this many seconds")
    a = ap.parse_args()
    a.rounds = a.rounds or max(100, 50 * a.kills)
    os.makedirs(a.out, exist_ok=True)
    t0 = time.time()
    quiet_fleet, _, _ = run(a, os.path.join(a.out, "quiet"), 0, 0)
    quiet = snapshot(quiet_fleet.out)
    t1 = time.time()
    fleet, ways, dev = run(a, os.path.join(a.out, "tortured"), a.kills, a.device_kills)
    tortured = snapshot(fleet.out)
    t2 = time.time()
    if len(quiet["rounds"]) != a.rounds:
        fail("the undisturbed run committed %d rounds, not %d" % (len(quiet["rounds"]), a.rounds))
    if dev < a.device_kills:
        fail("the run ended after %d of %d device kills: give it more rounds" % (dev, a.device_kills))
    compare(quiet, tortured)
    resumed = open(os.path.join(fleet.out, "coordinator.log"), errors="replace").read().count("resume state=")
    restored = sum(open(os.path.join(fleet.out, n), errors="replace").read().count("restored alg=")
                   for n in os.listdir(fleet.out) if n.endswith(".log") and n.startswith("dev"))
    print("crash_torture: %d devices, %d rounds: undisturbed run %.1f s, tortured run %.1f s" % (
        a.devices, a.rounds, t1 - t0, t2 - t1))
    print("crash_torture: coordinator SIGKILLed %d times (%d from outside at random, %d inside a commit, %d right "
          "after one), %d resumes from the db; %d device kills, %d device restores" % (
              sum(ways.values()), ways["outside"], ways["in-commit"], ways["after-commit"], resumed, dev, restored))
    print("crash_torture: rounds, round vectors, members, metrics.csv and every device's committed states equal "
          "the undisturbed run's (%d rounds, %d vectors, %d member rows)" % (
              len(tortured["rounds"]), len(tortured["vectors"]), len(tortured["members"])))
    print("1 passed, 0 failed")


if __name__ == "__main__":
    main()
