"""Test accuracy against epsilon for DP-FedAvg on 1000 devices (README.md).

For each target epsilon it asks the accountant for the noise multiplier that
reaches it after the experiment's rounds at its sampling rate, runs the
experiment with that noise for each mechanism, and the non-private run
beside them; then writes sweep.csv, table.md (the README's table),
accuracy_vs_epsilon.png and accuracy_rounds.png into --out.

    ./fedrt python examples/digits-dp/sweep.py                 # the README's figures
    ./fedrt python examples/digits-dp/sweep.py --runs 1 --epsilons 2 --rounds 50
"""

import argparse
import csv
import os
import sys
import time
import tomllib

import numpy as np

import fedrt

HERE = os.path.dirname(os.path.abspath(__file__))
EXPERIMENT = os.path.join(HERE, "experiment.toml")
PLOT_SCRIPTS = os.path.join(HERE, "..", "..", "scripts")


def final_accuracy(res):
    """Per run, the test accuracy at the last round that ran."""
    m = res.metrics
    out = []
    for r in sorted(set(int(x) for x in m["run"])):
        sel = m["run"] == r
        rounds = m["round"][sel]
        out.append(float(m["test_accuracy"][sel][np.argmax(rounds)]))
    return np.array(out)


def accuracy_curve(res):
    """Mean test accuracy over the runs at each round."""
    m = res.metrics
    rounds = sorted(set(int(x) for x in m["round"]))
    return rounds, [float(np.mean(m["test_accuracy"][m["round"] == t])) for t in rounds]


def run_one(label, target, privacy, extra, args, rows, curves, runs=None):
    t0 = time.time()
    res = fedrt.run(EXPERIMENT, privacy=privacy, rounds=args.rounds, runs=runs or args.runs, threads=args.threads,
                    **extra)
    acc = final_accuracy(res)
    alg = res.summary["algorithms"]["fedavg"]
    spent = alg.get("epsilon")
    spent = float("inf") if spent is None else spent  # JSON has no infinity: null
    rows.append({"mechanism": label, "epsilon_target": target, "runs": len(acc),
                 "rounds_run": int(res.metrics["round"].max()),
                 "noise_multiplier": privacy.get("noise_multiplier", 0.0), "epsilon_spent": spent,
                 "accuracy_mean": float(acc.mean()), "accuracy_std": float(acc.std(ddof=1)) if len(acc) > 1 else 0.0})
    curves[(label, rows[-1]["epsilon_target"])] = accuracy_curve(res)
    print(f"{label:12s} epsilon {rows[-1]['epsilon_target']!s:>4}  sigma {rows[-1]['noise_multiplier']:.5g}  "
          f"spent {spent:.4g}  accuracy {acc.mean():.4f} +- {rows[-1]['accuracy_std']:.4f}  "
          f"({time.time() - t0:.1f} s)", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--epsilons", default="1,2,4,8", help="target epsilons, comma-separated (default 1,2,4,8)")
    ap.add_argument("--mechanisms", default="central,distributed", help="central, distributed or both")
    ap.add_argument("--rounds", type=int, default=200, help="rounds T (default 200, the experiment's)")
    ap.add_argument("--runs", type=int, default=3, help="independent runs per setting (default 3)")
    ap.add_argument("--distributed-runs", type=int, default=1,
                    help="runs per distributed setting (default 1: SecAgg+'s key agreements make a round ~1.7 s)")
    ap.add_argument("--threads", type=int, default=0, help="simulator threads (0 = all cores)")
    ap.add_argument("--delta", type=float, default=1e-5, help="delta (default 1e-5)")
    ap.add_argument("--bits", type=int, default=20, help="distributed: the SecAgg+ group's bits (default 20)")
    ap.add_argument("--out", default="out/digits-dp-sweep", help="output folder (default out/digits-dp-sweep)")
    args = ap.parse_args()
    try:
        epsilons = [float(e) for e in args.epsilons.split(",")]
    except ValueError:
        ap.error(f"--epsilons: expected numbers separated by commas, got {args.epsilons!r}")
    mechanisms = args.mechanisms.split(",")
    for m in mechanisms:
        if m not in ("central", "distributed"):
            ap.error(f"--mechanisms: unknown mechanism {m!r} (central, distributed)")
    os.makedirs(args.out, exist_ok=True)

    with open(EXPERIMENT, "rb") as f:
        rate = tomllib.load(f)["participation"]["rate"]
    rows, curves = [], {}
    run_one("none", float("inf"), {"mechanism": "none"}, {}, args, rows, curves)
    # Clipping alone (no noise, no privacy): what the clip costs by itself.
    run_one("clip only", float("inf"), {"mechanism": "central", "noise_multiplier": 0.0}, {}, args, rows, curves)
    for mech in mechanisms:
        # Distributed: SecAgg+ sums the devices' noised integers in Z_2^bits (docs/privacy-distributed.md).
        extra = ({"compression": {"secure_aggregation": True, "quantizer": "rounding", "bits": args.bits}}
                 if mech == "distributed" else {})
        for eps in epsilons:
            sigma = fedrt.privacy.noise_multiplier(epsilon=eps, rate=rate, rounds=args.rounds, delta=args.delta)
            privacy = {"mechanism": mech, "noise_multiplier": sigma, "delta": args.delta, "epsilon_budget": eps}
            run_one(mech, eps, privacy, extra, args, rows, curves,
                    runs=args.distributed_runs if mech == "distributed" else args.runs)

    write_outputs(args, rows, curves, rate)


def write_outputs(args, rows, curves, rate):
    with open(os.path.join(args.out, "sweep.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    lines = ["| mechanism | target epsilon | noise multiplier | epsilon spent | rounds | runs | test accuracy (mean +- std) |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        spread = f" +- {100 * r['accuracy_std']:.1f}" if r["runs"] > 1 else ""
        lines.append(f"| {r['mechanism']} | {r['epsilon_target']} | {r['noise_multiplier']:.5g} | "
                     f"{r['epsilon_spent']:.4g} | {r['rounds_run']} | {r['runs']} | {100 * r['accuracy_mean']:.1f} %{spread} |")
    with open(os.path.join(args.out, "table.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))

    sys.path.insert(0, PLOT_SCRIPTS)
    from plot_common import import_matplotlib
    plt = import_matplotlib("sweep.py")
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    plain = rows[0]["accuracy_mean"]
    ax.axhline(100 * plain, color="0.3", linestyle="--", label=f"non-private ({100 * plain:.1f} %)")
    clipped = rows[1]["accuracy_mean"]
    ax.axhline(100 * clipped, color="0.6", linestyle=":", label=f"clipped, no noise ({100 * clipped:.1f} %)")
    for mech, marker in (("central", "o"), ("distributed", "s")):
        pts = [r for r in rows if r["mechanism"] == mech]
        if pts:
            ax.errorbar([r["epsilon_target"] for r in pts], [100 * r["accuracy_mean"] for r in pts],
                        yerr=[100 * r["accuracy_std"] for r in pts], marker=marker, capsize=3, label=mech)
    ax.set_xscale("log", base=2)
    targets = sorted({r["epsilon_target"] for r in rows if r["epsilon_target"] != float("inf")})
    ax.set_xticks(targets, [f"{e:g}" for e in targets])
    ax.set_xlabel("epsilon (delta = %g)" % args.delta)
    ax.set_ylabel("test accuracy after %d rounds (%%)" % args.rounds)
    ax.set_title("DP-FedAvg, digits, 1000 devices, q = %g" % rate)
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "accuracy_vs_epsilon.png"), dpi=120)

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for (mech, eps), (rounds, acc) in curves.items():
        label = {"none": "non-private"}.get(mech, mech) if eps == float("inf") else f"{mech}, epsilon {eps:g}"
        ax.plot(rounds, [100 * a for a in acc], label=label, linestyle="-" if mech != "distributed" else ":")
    ax.set_xlabel("round")
    ax.set_ylabel("test accuracy (%), mean over the runs")
    ax.set_ylim(0, 100)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "accuracy_rounds.png"), dpi=120)
    print("outputs:", os.path.join(args.out, "{sweep.csv,table.md,accuracy_vs_epsilon.png,accuracy_rounds.png}"))


if __name__ == "__main__":
    main()
