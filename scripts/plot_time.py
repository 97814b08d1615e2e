#!/usr/bin/env python3
"""Plot a fedrt run against virtual time: OUTDIR/time.png.

usage: plot_time.py OUTDIR

For a run with the virtual clock (metrics.csv has a time_s column:
[devices] or algorithm.mode = "async", docs/async.md): the test accuracy
when the run has one, else the error (log y axis), against the virtual
time (seconds, minutes or hours) at the end of each round or server step, one curve per algorithm
and run (runs after the first fainter). Runs without time_s have no
time.png. scripts/plot_run.py draws all of a run's plots.
"""

import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_axes  # noqa: E402  (scripts/ is not a package)
import plot_common  # noqa: E402
import plot_data  # noqa: E402

PROG = "plot_time.py"
FILE = "time.png"


def figure(outdir, plt):
    """The time figure of the run in outdir, or None without a time_s column."""
    metrics = os.path.join(outdir, "metrics.csv")
    time = plot_data.load_column(metrics, "time_s", PROG)
    if time is None or not time.has_finite():
        return None
    quantity, label, log = "test_accuracy", "test accuracy", False
    series = plot_data.load_column(metrics, quantity, PROG)
    if series is None or not series.has_finite():
        quantity, log = "error", True
        series = plot_data.load_column(metrics, quantity, PROG)
        summary = plot_data.load_summary(os.path.join(outdir, "summary.json"), PROG)
        label = summary.get("error_label") or "error"
    if series is None or not series.has_finite():
        return None
    longest = max((t for per in time.values.values() for vals in per.values() for t in vals if math.isfinite(t)),
                  default=0.0)
    unit, scale = ("seconds", 1.0) if longest < 600 else ("minutes", 60.0) if longest < 3 * 3600 else ("hours", 3600.0)
    fig, ax = plt.subplots(figsize=(8, 5))
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for k, alg in enumerate(time.order):
        color = cycle[k % len(cycle)]
        runs = len(time.runs[alg])  # a round's values are its runs' in file order (run 0 first)
        for j in range(runs):
            pts = []
            for rnd in sorted(time.values[alg]):
                t = time.values[alg][rnd][j] if j < len(time.values[alg][rnd]) else float("nan")
                vals = series.values.get(alg, {}).get(rnd, [])
                v = vals[j] if j < len(vals) else float("nan")
                if math.isfinite(t) and math.isfinite(v) and (v > 0 or not log):
                    pts.append((t / scale, v))
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], color=color, alpha=1.0 if j == 0 else 0.35,
                        label=alg if j == 0 else None)
    if log:
        plot_axes.log_axis(ax)
    ax.set_xlabel("virtual time (%s)" % unit)
    ax.set_ylabel(label)
    ax.set_title("against the virtual clock (docs/async.md)")
    ax.legend()
    fig.tight_layout()
    return fig


def plot(outdir, plt):
    """Write OUTDIR/time.png; returns its path, or None when the run has no time_s."""
    return plot_common.save(figure(outdir, plt), os.path.join(outdir, FILE), plt, PROG)


if __name__ == "__main__":
    sys.exit(plot_common.main_one(sys.argv, PROG, plot))
