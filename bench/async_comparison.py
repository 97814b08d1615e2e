#!/usr/bin/env python3
"""Synchronous vs buffered asynchronous FedAvg on devices that come and go
(docs/async.md, "A worked comparison"), in the spirit of FedBuff's Figure 2.

A synthetic 10-class data set (20 features, class means drawn once, unit
Gaussian noise, features scaled from 0.05 to 2; numpy, fixed seed) is split over N devices by fedrt-data
(Dirichlet alpha = 0.5 over labels, 5 % held out), and fedrt-sim trains
softmax regression with FedAvg under [devices]: speeds lognormal(0, 0.7)
samples/s, bandwidth lognormal(1, 0.5) Mbit/s, diurnal availability. Cases:
  sync      participation q, rounds wait for their slowest member
  sync-dl   the same with a deadline (late members dropped)
  async     FedBuff: concurrency C, buffer K, staleness exponent 0.5
Per case it prints the virtual time to the target test accuracy, the
updates and bytes spent until then, and the final accuracy, and writes
async_comparison.png (test accuracy against virtual hours).

usage: async_comparison.py [--bin build/release/bin] [--devices 1000] [--target 0.65]
                           [--sync-rounds 300] [--async-steps 3000] [--step 0.05]
                           [--work DIR] [--plot async_comparison.png]
"""

import argparse
import csv
import os
import shutil
import subprocess
import sys
import tempfile

STEP = 0.05

COMMON = """
[data]
format = "csv"
train = "split/device-{{id}}.csv"
test = "split/test.csv"
label = "label"

[model]
kind = "softmax"
classes = 10
intercept = true
l2 = 1e-4

[algorithm]
names = ["fedavg"]
step = {step}
local_steps = 20
batch = 16
{algorithm}

[participation]
rate = {rate}

[run]
rounds = {rounds}
seed = 1
plot = false
out = "{out}"

[devices]
speed = {{ distribution = "lognormal", mu = 0.0, sigma = 0.7 }}
bandwidth_mbps = {{ distribution = "lognormal", mu = 1.0, sigma = 0.5 }}
availability = "diurnal"
{devices}
"""


def make_data(path, examples, seed=7):
    import numpy as np
    rng = np.random.default_rng(seed)
    means = rng.normal(0.0, 0.6, size=(10, 20))
    y = rng.integers(0, 10, size=examples)
    # Features on scales from 0.05 to 2 (ill-conditioned): the first gradient
    # steps do not point at the best classifier, many steps are needed.
    scales = np.exp(rng.uniform(np.log(0.05), np.log(2.0), size=20))
    x = (means[y] + rng.normal(0.0, 1.0, size=(examples, 20))) * scales
    with open(path, "w") as f:
        f.write(",".join(["f%d" % i for i in range(20)] + ["label"]) + "\n")
        for row, label in zip(x, y):
            f.write(",".join("%.6g" % v for v in row) + ",%d\n" % label)


def run_case(sim, work, name, algorithm, rate, rounds, devices):
    out = os.path.join(work, "out-" + name)
    cfg = os.path.join(work, name + ".toml")
    with open(cfg, "w") as f:
        f.write(COMMON.format(step=STEP, algorithm=algorithm, rate=rate, rounds=rounds, out=out, devices=devices))
    r = subprocess.run([sim, "--config", cfg], cwd=work, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("%s failed:\n%s%s" % (name, r.stdout, r.stderr))
    rows = list(csv.DictReader(open(os.path.join(out, "metrics.csv"))))
    return rows


def summarize(rows, target):
    updates = bytes_ = 0
    hit = None
    for r in rows:
        updates += int(r["agents"])
        bytes_ += (int(r["bits_up"]) + int(r["bits_down"])) // 8
        if hit is None and float(r["test_accuracy"]) >= target:
            hit = (float(r["time_s"]), int(r["round"]), updates, bytes_)
    last = rows[-1]
    return hit, float(last["test_accuracy"]), float(last["time_s"]), updates, bytes_


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--bin", default=os.path.join(here, "build", "release", "bin"))
    ap.add_argument("--devices", type=int, default=1000)
    ap.add_argument("--examples-per-device", type=int, default=60)
    ap.add_argument("--target", type=float, default=0.65)
    ap.add_argument("--sync-rounds", type=int, default=300)
    ap.add_argument("--async-steps", type=int, default=3000)
    ap.add_argument("--work")
    ap.add_argument("--plot", default="async_comparison.png")
    ap.add_argument("--step", type=float, default=0.05, help="eta of the local steps")
    a = ap.parse_args()
    global STEP
    STEP = a.step
    work = a.work or tempfile.mkdtemp(prefix="fedrt-async-")
    os.makedirs(work, exist_ok=True)
    data = os.path.join(work, "data.csv")
    make_data(data, a.devices * a.examples_per_device)
    split = os.path.join(work, "split")
    shutil.rmtree(split, ignore_errors=True)
    subprocess.run([os.path.join(a.bin, "fedrt-data"), "split", "--input", data, "--devices", str(a.devices),
                    "--alpha", "0.5", "--min-examples", "10", "--test-fraction", "0.05", "--seed", "1",
                    "--out", split], check=True, capture_output=True)
    sim = os.path.join(a.bin, "fedrt-sim")
    # Sync samples q N of the online devices; async keeps C = 100 training.
    q = 100.0 / a.devices
    cases = [
        ("sync", "", q, a.sync_rounds, ""),
        ("sync-dl", "", q, a.sync_rounds, "deadline_s = 900"),
        ("async", 'mode = "async"\nbuffer = 10\nconcurrency = 100\nmax_staleness = 50\nstaleness_exponent = 0.5',
         1.0, a.async_steps, ""),
    ]
    results = {}
    for name, alg, rate, rounds, dev in cases:
        results[name] = run_case(sim, work, name, alg, rate, rounds, dev)
    print("| case | rounds or steps | virtual h to %.0f %% | updates to target | MB to target | final accuracy | "
          "virtual h in all | updates in all | MB in all |" % (100 * a.target))
    print("|---|---|---|---|---|---|---|---|---|")
    for name, _, _, rounds, _ in cases:
        hit, acc, total_s, updates, b = summarize(results[name], a.target)
        h = ("%.1f" % (hit[0] / 3600), "%d" % hit[2], "%.1f" % (hit[3] / 1e6)) if hit else ("not reached",) * 3
        print("| %s | %d | %s | %s | %s | %.3f | %.1f | %d | %.1f |" % (name, rounds, h[0], h[1], h[2], acc,
                                                                     total_s / 3600, updates, b / 1e6))
    sys.path.insert(0, os.path.join(here, "scripts"))
    from plot_common import import_matplotlib
    plt = import_matplotlib("async_comparison")
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, _, _, _, _ in cases:
        rows = results[name]
        ax.plot([float(r["time_s"]) / 3600 for r in rows], [float(r["test_accuracy"]) for r in rows], label=name)
    ax.axhline(a.target, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("virtual time (hours; devices online from about 22:00)")
    ax.set_ylabel("test accuracy")
    ax.set_title("FedAvg on %d devices: synchronous vs buffered asynchronous" % a.devices)
    ax.legend()
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(a.plot)), exist_ok=True)
    fig.savefig(a.plot, dpi=110)
    print("plot: %s (work: %s)" % (a.plot, work))


if __name__ == "__main__":
    main()
