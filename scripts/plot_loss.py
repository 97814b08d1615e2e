#!/usr/bin/env python3
"""Plot the loss of a fedrt run against rounds: OUTDIR/loss.png.

usage: plot_loss.py OUTDIR

Reads OUTDIR/metrics.csv and OUTDIR/summary.json and writes OUTDIR/loss.png
when metrics.csv has a finite train_loss (the mean over the devices of f_c
at the round's broadcast model, as the devices report it) or test_loss (the
loss of the round's model on the held-out set of [data] test, docs/data.md):
one solid curve per algorithm for the training loss, a dashed one in the
same colour (hollow markers) for the held-out loss, and a black dotted line at the held-out
loss of the centralized model (problem.centralized_test_loss) when
summary.json has it. A log y axis when every value is positive. Every line
has its legend entry. scripts/plot_run.py draws all of a run's plots.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_axes  # noqa: E402  (scripts/ is not a package)
import plot_common  # noqa: E402
import plot_data  # noqa: E402

PROG = "plot_loss.py"
FILE = "loss.png"


def figure(outdir, plt):
    """The loss figure of the run in outdir, or None when it has no finite loss."""
    import numpy as np
    metrics = os.path.join(outdir, "metrics.csv")
    train = plot_data.load_column(metrics, "train_loss", PROG)
    test = plot_data.load_column(metrics, "test_loss", PROG)
    train = train if train is not None and train.has_finite() else None
    test = test if test is not None and test.has_finite() else None
    if train is None and test is None:
        return None
    summary = plot_data.load_summary(os.path.join(outdir, "summary.json"), PROG)

    fig, ax = plt.subplots(figsize=(8, 5))
    colors = {}
    if train is not None:
        colors = plot_axes.draw_means(ax, train, np, lambda alg: "%s, training loss" % alg)
    if test is not None:
        plot_axes.draw_means(ax, test, np, lambda alg: "%s, held-out test loss" % alg,
                             linestyle="--", colors=colors, hollow=True)
    central = summary["problem"].get("centralized_test_loss")
    if test is not None and plot_data.is_number(central):
        ax.axhline(central, color="black", linestyle=":", linewidth=1.4,
                   label="centralized model on the union, held-out test loss (%.3g)" % central)

    values = [v for s in (train, test) if s is not None
              for per in s.values.values() for vals in per.values() for v in vals if v == v]
    if values and min(values) > 0:
        plot_axes.log_axis(ax)
    return plot_axes.finish_rounds_figure(
        fig, ax, "loss (training: mean f_c at the round's broadcast model)"
        if train is not None else "held-out test loss", plot_data.build_title(summary["settings"]))


def plot(outdir, plt):
    """Write OUTDIR/loss.png; returns its path, or None when the run has no finite loss."""
    return plot_common.save(figure(outdir, plt), os.path.join(outdir, FILE), plt, PROG)


if __name__ == "__main__":
    sys.exit(plot_common.main_one(sys.argv, PROG, plot))
