#!/usr/bin/env python3
"""Plot held-out test accuracy against rounds for a fedrt run: OUTDIR/accuracy.png.

usage: plot_accuracy.py OUTDIR

Reads OUTDIR/metrics.csv (with a test_accuracy column: experiments with a
[data] test file, docs/data.md) and OUTDIR/summary.json, and writes
OUTDIR/accuracy.png: the mean test accuracy over runs versus round for every
algorithm (a marker per algorithm), and a dashed line at the centralized
model's accuracy (problem.centralized_test_accuracy: x_star trained on the
union of the shards) when summary.json has it. Exit status 0 also when there
is nothing to plot (no test_accuracy column). scripts/plot_run.py draws all
of a run's plots.
"""

import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_axes  # noqa: E402  (scripts/ is not a package)
import plot_common  # noqa: E402
import plot_data  # noqa: E402

PROG = "plot_accuracy.py"
FILE = "accuracy.png"


def figure(outdir, plt):
    """The accuracy figure of the run in outdir, or None without a finite test_accuracy."""
    import numpy as np
    series = plot_data.load_column(os.path.join(outdir, "metrics.csv"), "test_accuracy", PROG)
    if series is None or not series.has_finite():
        return None
    for per in series.values.values():  # in per cent
        for vals in per.values():
            vals[:] = [100.0 * v for v in vals]
    summary = plot_data.load_summary(os.path.join(outdir, "summary.json"), PROG)
    problem = summary["problem"]

    def label(alg):
        _, mean, _ = plot_data.curve(series, alg, np)
        return "%s (final %.2f %%)" % (alg, mean[-1])

    fig, ax = plt.subplots(figsize=(8, 5))
    plot_axes.draw_means(ax, series, np, label)
    centralized = problem.get("centralized_test_accuracy")
    if plot_data.is_number(centralized):
        ax.axhline(100.0 * centralized, color="black", linestyle="--",
                   label="centralized softmax on the union (%.2f %%)" % (100.0 * centralized))
    plot_axes.round_axis(ax)
    ax.set_xlabel("communication round")
    ax.set_ylabel("held-out test accuracy (%)")
    lows = [min(v) for per in series.values.values() for v in per.values() if v and math.isfinite(min(v))]
    ax.set_ylim(max(0.0, min(lows + [80.0]) - 2.0), 100.0)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best")  # where it covers the fewest points (a diverged curve lies low)
    desc = problem.get("description")
    if desc:
        desc = desc.split(" from ")[0]
        ax.set_title(desc if len(desc) < 90 else desc[:87] + "...", fontsize=9)
    fig.tight_layout()
    return fig


def plot(outdir, plt):
    """Write OUTDIR/accuracy.png; returns its path, or None without a finite test_accuracy."""
    return plot_common.save(figure(outdir, plt), os.path.join(outdir, FILE), plt, PROG)


if __name__ == "__main__":
    sys.exit(plot_common.main_one(sys.argv, PROG, plot))
