#!/usr/bin/env python3
"""Plot the error of a fedrt run against rounds: OUTDIR/error.png.

usage: plot_error.py OUTDIR

Reads OUTDIR/metrics.csv (columns algorithm,run,round,error,...; round 0 is
the initial error) and OUTDIR/summary.json, and writes OUTDIR/error.png: the
mean error over runs versus communication round for every algorithm (log y
axis, a marker per algorithm), a +/- 1 std band when there are several runs,
a dashed line at the predicted bias² of each algorithm that has one, and
dotted lines at the optional "plot_lines" levels of an algorithm
([{"label": ..., "value": ...}]); every line has its legend entry. A run
without a finite error (a user model) has no error.png: its loss is in
loss.png (scripts/plot_loss.py). scripts/plot_run.py draws all of a run's plots.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_axes  # noqa: E402  (scripts/ is not a package)
import plot_common  # noqa: E402
import plot_data  # noqa: E402

PROG = "plot_error.py"
FILE = "error.png"


def figure(outdir, plt):
    """The error figure of the run in outdir, or None when no error is finite."""
    import numpy as np
    series = plot_data.load_column(os.path.join(outdir, "metrics.csv"), "error", PROG)
    if series is None:
        plot_common.fail(PROG, "%s has no 'error' column" % os.path.join(outdir, "metrics.csv"))
    if not series.has_finite():
        return None
    summary = plot_data.load_summary(os.path.join(outdir, "summary.json"), PROG)
    algorithms = summary["algorithms"]
    for alg in algorithms:
        if alg not in series.values:
            sys.stderr.write("%s: warning: algorithm %r is in summary.json but not in "
                             "metrics.csv; not plotted\n" % (PROG, alg))

    fig, ax = plt.subplots(figsize=(8, 5))
    colors = plot_axes.draw_means(ax, series, np, lambda alg: alg)
    for alg, color in colors.items():
        info = algorithms.get(alg) if isinstance(algorithms.get(alg), dict) else {}
        bias = info.get("predicted_bias_sq")
        if plot_data.is_number(bias) and bias > 0:
            ax.axhline(bias, color=color, linestyle="--", linewidth=1.2,
                       label="%s: predicted bias² (theory, where its curve levels off)" % alg)
        # Reference levels of a family, e.g. the error of a Polyak-Ruppert average: dotted.
        for ref in info.get("plot_lines") or []:
            if isinstance(ref, dict) and plot_data.is_number(ref.get("value")) and ref["value"] > 0:
                ax.axhline(ref["value"], color=color, linestyle=":", linewidth=1.4,
                           label="%s: %s" % (alg, ref.get("label") or "reference level"))

    plot_axes.log_axis(ax)
    return plot_axes.finish_rounds_figure(fig, ax, summary.get("error_label") or "‖θ_t − θ*‖²",
                                          plot_data.build_title(summary["settings"]))


def plot(outdir, plt):
    """Write OUTDIR/error.png; returns its path, or None when the run has no finite error."""
    return plot_common.save(figure(outdir, plt), os.path.join(outdir, FILE), plt, PROG)


if __name__ == "__main__":
    sys.exit(plot_common.main_one(sys.argv, PROG, plot))
