#!/usr/bin/env python3
"""Scale on one machine (docs/gateways.md): a fedrt-coordinator, G
fedrt-gateway processes and fedrt-swarm processes holding N devices (each
its own TLS 1.3 PSK session with X25519 and the real protocol) on
loopback, Garnet d = 8, SCAFFLSA, H = 10, full participation. Cases are
"flat:N" (every device at the coordinator) and "gwG:N" (device i behind
gateway i mod G). Per case it prints the time until every device took the
task, round time (the coordinator's `round ... latency_ms=` lines), the
peak resident memory (VmHWM) of the coordinator and of the largest
gateway, and the bytes the coordinator's sockets took in and gave out per
round (the round lines' rx_bytes and tx_bytes: TLS records from and to all
its peers while the round was open, its results included), and the swarm's
memory per device. A case whose estimated memory does not fit this machine
is reported as skipped, not run.

usage: gateway_scale_bench.py [--bin build/release/bin] [--cases flat:10000,gw5:10000,gw5:50000]
                              [--rounds 5] [--connect-rate 400] [--work DIR] [--keep]
"""

import argparse
import math
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

# A swarm process holds at most this many devices (one socket each): the
# machine's open-file limit is per process.
DEVICES_PER_SWARM = 16000
# Estimated peak bytes per device over all processes (swarm ~20 KB, its
# TLS peer ~18 KB at the coordinator or a gateway, the Garnet instance in
# every swarm and the coordinator ~6 KB each), with room to spare.
BYTES_PER_DEVICE = 100_000


def available_bytes():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def hwm_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def wait_file(path, proc, timeout_s):
    end = time.time() + timeout_s
    while time.time() < end:
        if os.path.exists(path):
            text = open(path).read()
            if text.endswith("\n"):
                return text.strip()
        if proc.poll() is not None:
            return None
        time.sleep(0.05)
    return None


def experiment(n, rounds):
    return (f'[problem]\nkind = "garnet"\nheterogeneity = "high"\nagents = {n}\nnoise_free = true\n'
            f'[algorithm]\nnames = ["scafflsa"]\nlocal_steps = 10\n[run]\nrounds = {rounds}\nseed = 1\n'
            '[network]\nauth = "psk"\ndeadline_ms = 300000\nquorum = 1.0\nstart_timeout_ms = 900000\n')


def run_case(args, gateways, n, work):
    bin_dir = args.bin
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    keys = os.path.join(work, "keys")
    log = lambda name: open(os.path.join(work, name), "w")
    subprocess.run([f"{bin_dir}/fedrt-keys", "--out", keys, "--devices", str(n)], check=True,
                   stdout=log("keys.log"), stderr=subprocess.STDOUT)
    if gateways:
        subprocess.run([f"{bin_dir}/fedrt-keys", "gateways", "--keys", keys, "--count", str(gateways)], check=True,
                       stdout=log("keys-gw.log"), stderr=subprocess.STDOUT)
    with open(os.path.join(work, "experiment.toml"), "w") as f:
        f.write(experiment(n, args.rounds))
    procs = []
    t0 = time.time()
    co = subprocess.Popen([f"{bin_dir}/fedrt-coordinator", "--config", os.path.join(work, "experiment.toml"),
                           "--keys", keys, "--state", os.path.join(work, "state.db"), "--listen", "127.0.0.1",
                           "--port", "0", "--port-file", os.path.join(work, "port"), "--out",
                           os.path.join(work, "out"), "--no-plot"], stdout=log("coordinator.log"),
                          stderr=subprocess.STDOUT)
    procs.append(co)
    try:
        port = wait_file(os.path.join(work, "port"), co, 600)
        if port is None:
            raise RuntimeError("the coordinator did not start (coordinator.log)")
        addresses = [f"127.0.0.1:{port}"]
        gws = []
        if gateways:
            addresses = []
            for g in range(gateways):
                gid = f"gw{g:02d}"
                pf = os.path.join(work, gid + ".port")
                p = subprocess.Popen([f"{bin_dir}/fedrt-gateway", "--coordinator", f"127.0.0.1:{port}", "--id", gid,
                                      "--keys", os.path.join(keys, "gateways", gid), "--port", "0",
                                      "--port-file", pf], stdout=log(gid + ".log"), stderr=subprocess.STDOUT)
                procs.append(p)
                gws.append(p)
                gp = wait_file(pf, p, 60)
                if gp is None:
                    raise RuntimeError(f"{gid} did not start ({gid}.log)")
                addresses.append(f"127.0.0.1:{gp}")
        k = math.ceil(n / DEVICES_PER_SWARM)
        swarms = []
        for s in range(k):
            first, count = s * n // k, (s + 1) * n // k - s * n // k
            p = subprocess.Popen([f"{bin_dir}/fedrt-swarm", "--coordinator", ",".join(addresses), "--keys", keys,
                                  "--first", str(first), "--count", str(count), "--connect-rate",
                                  str(args.connect_rate / k), "--give-up-ms", "600000"],
                                 stdout=log(f"swarm{s}.out"), stderr=log(f"swarm{s}.log"))
            procs.append(p)
            swarms.append(p)
        co_hwm, gw_hwm = 0, [0] * len(gws)
        end = time.time() + args.timeout
        while co.poll() is None and time.time() < end:
            co_hwm = max(co_hwm, hwm_kib(co.pid))
            for i, p in enumerate(gws):
                gw_hwm[i] = max(gw_hwm[i], hwm_kib(p.pid))
            time.sleep(0.2)
        if co.poll() is None:
            raise RuntimeError(f"the run did not end within {args.timeout} s")
        for p in swarms + gws:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
        if co.returncode != 0:
            raise RuntimeError(f"the coordinator exited with {co.returncode} (coordinator.log)")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    text = open(os.path.join(work, "coordinator.log")).read()
    rounds = [dict(re.findall(r" (latency_ms|rx_bytes|tx_bytes|agents)=(\S+)", line))
              for line in text.splitlines() if " round alg=" in line]
    if len(rounds) != args.rounds:
        raise RuntimeError(f"{len(rounds)} round lines of {args.rounds} (coordinator.log)")
    stamp = lambda line: time.mktime(time.strptime(line[:19], "%Y-%m-%dT%H:%M:%S")) + float(line[19:23])
    lines = text.splitlines()
    first_line = next(l for l in lines if l[:4].isdigit())
    start_line = next(l for l in lines if " coordinator start devices=" in l)
    summaries = []
    for s in range(len(swarms)):
        out = open(os.path.join(work, f"swarm{s}.out")).read()
        m = dict(re.findall(r"(\w+)=(\S+)", out.strip().splitlines()[-1])) if out.strip() else {}
        if m.get("failed", "1") != "0":
            raise RuntimeError(f"swarm {s}: {out.strip() or 'no summary'} (swarm{s}.log)")
        summaries.append(m)
    lat = [float(r["latency_ms"]) for r in rounds]
    rx = [int(r["rx_bytes"]) for r in rounds]
    tx = [int(r["tx_bytes"]) for r in rounds]
    return {
        "connect_s": stamp(start_line) - stamp(first_line),
        "round_ms_mean": sum(lat) / len(lat), "round_ms_max": max(lat),
        "agents": rounds[-1]["agents"],
        "co_mib": co_hwm / 1024, "gw_mib": max(gw_hwm) / 1024 if gw_hwm else None,
        "rx": sum(rx) / len(rx), "tx": sum(tx) / len(tx),
        "swarm_kib": max(float(m["per_device_peak_bytes"]) for m in summaries) / 1024,
        "swarms": len(swarms), "wall_s": time.time() - t0,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--bin", default=os.path.join(here, "..", "build", "release", "bin"))
    ap.add_argument("--cases", default="flat:10000,gw5:10000,gw5:50000")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--connect-rate", type=float, default=400.0, help="handshakes started per second, all swarms")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per case")
    ap.add_argument("--work", default=None)
    ap.add_argument("--keep", action="store_true", help="keep the work folder (logs)")
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # inherited: one socket per device
    work = args.work or tempfile.mkdtemp(prefix="fedrt-gateway-scale-")
    cases = []
    for c in args.cases.split(","):
        kind, n = c.split(":")
        gateways = 0 if kind == "flat" else int(kind[2:])
        cases.append((c, gateways, int(n)))
    print(f"\nGarnet d=8, SCAFFLSA, H=10, {args.rounds} rounds, full participation; devices in fedrt-swarm "
          f"(TLS 1.3 PSK + X25519 each), loopback, {os.cpu_count()} cores, open-file limit {hard}\n")
    print("| case | devices | gateways | all ready s | round ms mean | round ms max | coordinator peak MiB "
          "| largest gateway peak MiB | coordinator rx bytes/round | coordinator tx bytes/round | swarm KiB/device |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    sys.stdout.flush()
    failed = 0
    for name, gateways, n in cases:
        need, avail = n * BYTES_PER_DEVICE, available_bytes()
        if gateways == 0 and n + 64 > hard:
            print(f"| {name} | {n} | - | skipped: the coordinator needs {n} sockets, the open-file limit is {hard} |")
            continue
        if need > avail:
            print(f"| {name} | {n} | {gateways} | skipped: needs about {need >> 30} GiB, {avail >> 30} GiB available |")
            continue
        print(f"[gateway-scale] {name}: {n} devices, {gateways} gateways ...", file=sys.stderr, flush=True)
        try:
            r = run_case(args, gateways, n, os.path.join(work, name.replace(":", "-")))
        except (RuntimeError, subprocess.CalledProcessError) as e:
            print(f"| {name} | {n} | {gateways} | failed: {e} (logs in {work}) |")
            failed += 1
            args.keep = True
            continue
        gw = f"{r['gw_mib']:.1f}" if r["gw_mib"] is not None else "-"
        print(f"| {name} | {n} | {gateways or '-'} | {r['connect_s']:.1f} | {r['round_ms_mean']:.1f} | "
              f"{r['round_ms_max']:.1f} | {r['co_mib']:.1f} | {gw} | {r['rx']:.0f} | {r['tx']:.0f} | "
              f"{r['swarm_kib']:.1f} |", flush=True)
        print(f"[gateway-scale] {name}: agents={r['agents']} swarm processes={r['swarms']} wall {r['wall_s']:.0f} s",
              file=sys.stderr, flush=True)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"\nlogs in {work}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
