#!/usr/bin/env python3
"""Scale table (docs/architecture.md, "MPI"): Garnet TD(0) fleets of N
simulated agents, 1% participation, H = 100, d = 8, SCAFFLSA, run by
fedrt-sim in one process and as 2 MPI ranks (scripts/mpirun_local.sh).
Prints, per (N, ranks), the time per round (the algorithm's wall time over
its rounds, problem generation excluded), the whole command's wall time and
the peak resident memory of the largest rank. A size whose estimated memory
does not fit this machine is reported as skipped, not run.

usage: scale_bench.py FEDRT_SIM [--agents N ...] [--rounds T] [--ranks K ...]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

# Peak bytes per Garnet agent of one rank (30 states, d = 8), measured at
# N = 10^5 and 10^6 (2.9 KB; docs/architecture.md, "MPI"): the whole problem
# is built on every rank, so this does not shrink with more ranks.
BYTES_PER_AGENT = 3_200


def available_bytes():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def run(sim, agents, rounds, ranks, out):
    args = [sim, "--heterogeneity", "high", "--agents", str(agents), "--participation", "0.01",
            "--local-steps", "100", "--rounds", str(rounds), "--runs", "1", "--algorithm", "scafflsa",
            "--threads", "1" if ranks > 1 else "0", "--no-plot", "--out", out]
    # Each rank's peak appended to a file: through mpirun, stderr lines can be lost.
    rss_file = os.path.join(out, "maxrss.txt")
    timed = ["/usr/bin/time", "-a", "-o", rss_file, "-f", "fedrt-scale-maxrss-kb %M"] + args
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cmd = timed if ranks == 1 else [os.path.join(root, "scripts", "mpirun_local.sh"), str(ranks)] + timed
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"N={agents} ranks={ranks} failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    with open(rss_file) as f:
        rss = [int(line.split()[1]) for line in f if line.startswith("fedrt-scale-maxrss-kb")]
    with open(os.path.join(out, "summary.json")) as f:
        summary = json.load(f)
    alg = summary["algorithms"]["scafflsa"]
    if not rss:  # /usr/bin/time's line lost in the launcher's output
        print(f"[bench] N={agents} ranks={ranks}: no peak memory reported", file=sys.stderr)
    return alg["wall_seconds"] / rounds, wall, max(rss, default=0) * 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sim")
    ap.add_argument("--agents", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--ranks", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=20)
    a = ap.parse_args()
    have_mpi = shutil.which("mpirun") is not None
    print("\nScale: Garnet TD(0), 30 states, d=8, SCAFFLSA, participation 1%, H=100, "
          f"T={a.rounds}, 1 run")
    print("=" * 78)
    header = f"{'N':>9}  {'ranks':>5}  {'ms/round':>9}  {'command s':>9}  {'peak MB/rank':>12}  note"
    print(header)
    print("-" * len(header))
    for n in a.agents:
        for k in a.ranks:
            if k > 1 and not have_mpi:
                print(f"{n:>9}  {k:>5}  {'-':>9}  {'-':>9}  {'-':>12}  skipped: mpirun not found")
                continue
            need = BYTES_PER_AGENT * n * k
            if need > 0.8 * available_bytes():
                print(f"{n:>9}  {k:>5}  {'-':>9}  {'-':>9}  {'-':>12}  skipped: needs about "
                      f"{need / 2**30:.0f} GiB ({k} x {BYTES_PER_AGENT // 1000} KB per agent), "
                      f"{available_bytes() / 2**30:.0f} GiB available")
                continue
            print(f"[bench] N={n} ranks={k}", file=sys.stderr, flush=True)
            with tempfile.TemporaryDirectory() as out:
                per_round, wall, rss = run(a.sim, n, a.rounds, k, out)
            print(f"{n:>9}  {k:>5}  {per_round * 1e3:>9.2f}  {wall:>9.1f}  {rss / 2**20:>12.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
