#!/usr/bin/env python3
"""The Python module's overhead (docs/python.md): a sweep of short runs
(default 100 runs of N = 10, H = 10, T = 10, FedLSA and SCAFFLSA on Garnet)
through fedrt.run, against the same sweep in one C++ process
(fedrt-sweep-bench). Prints a table; run with ./fedrt python (./fedrt bench
does). usage: python_overhead.py [FEDRT_SWEEP_BENCH] [--experiments K] [--repeat R]
"""

import argparse
import os
import subprocess
import sys
import time

import fedrt


def python_sweep(k, agents, local_steps, rounds, threads):
    t0 = time.perf_counter()
    total = 0
    for i in range(k):
        res = fedrt.run({"problem": {"agents": agents},
                         "algorithm": {"local_steps": local_steps, "step": 0.001 * (1 + i % 50)},
                         "run": {"rounds": rounds, "threads": threads, "plot": False}})
        total += len(res.metrics["error"])
    return time.perf_counter() - t0


def cpp_sweep(binary, k, agents, local_steps, rounds, threads):
    out = subprocess.run([binary, "--experiments", str(k), "--agents", str(agents), "--local-steps",
                          str(local_steps), "--rounds", str(rounds), "--threads", str(threads)],
                         check=True, capture_output=True, text=True).stdout
    return float(out.split("seconds=")[1].split()[0])


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binary", nargs="?", default=os.path.join(here, "..", "build", "release", "bin",
                                                               "fedrt-sweep-bench"))
    ap.add_argument("--experiments", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=5, help="best of R sweeps each")
    args = ap.parse_args()
    rows = []
    for agents, h, t, threads in [(10, 10, 10, 1), (10, 10, 10, 0), (100, 100, 10, 0)]:
        py = min(python_sweep(args.experiments, agents, h, t, threads) for _ in range(args.repeat))
        cpp = min(cpp_sweep(args.binary, args.experiments, agents, h, t, threads) for _ in range(args.repeat))
        rows.append((agents, h, t, threads or os.cpu_count(), cpp, py))
    k = args.experiments
    print(f"\n== Python module overhead: a sweep of {k} runs (Garnet, FedLSA + SCAFFLSA, 1 run each), "
          f"best of {args.repeat} ==")
    print(f"{'N':>5} {'H':>5} {'T':>4} {'threads':>7} {'C++ ms/run':>11} {'Python ms/run':>14} {'ratio':>6}  target")
    for agents, h, t, threads, cpp, py in rows:
        print(f"{agents:5d} {h:5d} {t:4d} {threads:7d} {1e3 * cpp / k:11.3f} {1e3 * py / k:14.3f} {py / cpp:6.2f}"
              f"  {'<= 2x' if (agents, h, t) == (10, 10, 10) else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
