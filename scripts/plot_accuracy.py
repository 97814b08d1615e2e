#!/usr/bin/env python3
"""Plot held-out test accuracy against rounds for a fedrt run.

usage: plot_accuracy.py OUTDIR

Reads OUTDIR/metrics.csv (with a test_accuracy column: experiments with a
[data] test file, docs/data.md) and OUTDIR/summary.json, and writes
OUTDIR/accuracy.png: the mean test accuracy over runs versus round for every
algorithm, and a dashed line at the centralized model's accuracy
(problem.centralized_test_accuracy: x_star trained on the union of the
shards) when summary.json has it. scripts/plot_error.py calls plot() after
error.png, so the simulator's and the fleet's outputs get both plots.
Exit status 0 also when there is nothing to plot (no test_accuracy column).
"""

import csv
import json
import math
import os
import sys

PROG = "plot_accuracy.py"


def load_accuracy(path):
    """Return ({algorithm: {round: [accuracy per run]}}, order), or (None, []) without the column."""
    data, order = {}, []
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        if "test_accuracy" not in (reader.fieldnames or []):
            return None, []
        for row in reader:
            alg = row["algorithm"]
            if alg not in data:
                data[alg] = {}
                order.append(alg)
            try:
                acc = float(row["test_accuracy"])
            except ValueError:
                continue
            if math.isfinite(acc):
                data[alg].setdefault(int(row["round"]), []).append(acc)
    return data, order


def plot(outdir, plt):
    """Write OUTDIR/accuracy.png with `plt` (matplotlib.pyplot); returns its path or None."""
    data, order = load_accuracy(os.path.join(outdir, "metrics.csv"))
    if not data or not any(data[a] for a in order):
        return None
    with open(os.path.join(outdir, "summary.json")) as fh:
        summary = json.load(fh)
    problem = summary.get("problem") or {}
    centralized = problem.get("centralized_test_accuracy")
    fig, ax = plt.subplots(figsize=(8, 5))
    for alg in order:
        rounds = sorted(data[alg])
        mean = [100.0 * sum(data[alg][r]) / len(data[alg][r]) for r in rounds]
        ax.plot(rounds, mean, label="%s (final %.2f %%)" % (alg, mean[-1]))
    if isinstance(centralized, (int, float)) and math.isfinite(centralized):
        ax.axhline(100.0 * centralized, color="black", linestyle="--",
                   label="centralized softmax on the union (%.2f %%)" % (100.0 * centralized))
    ax.set_xlabel("communication round")
    ax.set_ylabel("held-out test accuracy (%)")
    lows = [100.0 * min(v) for a in order for v in data[a].values() if v]
    ax.set_ylim(max(0.0, min(lows + [80.0]) - 2.0), 100.0)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right")
    desc = problem.get("description")
    if desc:
        desc = desc.split(" from ")[0]
        ax.set_title(desc if len(desc) < 90 else desc[:87] + "...", fontsize=9)
    fig.tight_layout()
    out = os.path.join(outdir, "accuracy.png")
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        sys.stderr.write("usage: %s OUTDIR\n" % PROG)
        return 0 if len(argv) == 2 else 2
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import plot_common
    out = plot(argv[1], plot_common.import_matplotlib(PROG))
    if out:
        print("wrote %s" % out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
