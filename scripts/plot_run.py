#!/usr/bin/env python3
"""Draw every plot a fedrt run's outputs have data for, one file per quantity.

usage: plot_run.py OUTDIR

From OUTDIR/metrics.csv and OUTDIR/summary.json: error.png when the error
column has a finite value (scripts/plot_error.py), loss.png when train_loss
or test_loss has one (scripts/plot_loss.py), accuracy.png when test_accuracy
has one (scripts/plot_accuracy.py), time.png when time_s has one (the
virtual clock, scripts/plot_time.py). A plot of a quantity this run lacks,
left by an earlier run in OUTDIR, is removed: it would describe other data.
Prints "wrote PATH" per file, or that there is nothing to plot when the
run has none of the quantities (exit status 0); exit status 2 for a bad
OUTDIR, 1 for an unreadable metrics.csv or summary.json. fedrt-sim and fedrt-coordinator run
it after writing their outputs (runtime/src/report/outputs.cc).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_accuracy  # noqa: E402  (scripts/ is not a package)
import plot_common  # noqa: E402
import plot_error  # noqa: E402
import plot_loss  # noqa: E402
import plot_time  # noqa: E402

PROG = "plot_run.py"
PLOTS = (plot_error, plot_loss, plot_accuracy, plot_time)


def plot_all(outdir, plt):
    """Write each plot the run has data for; returns the paths written."""
    written = []
    for module in PLOTS:
        path = module.plot(outdir, plt)
        stale = os.path.join(outdir, module.FILE)
        if path:
            written.append(path)
        elif os.path.isfile(stale):
            os.remove(stale)
            print("removed %s (an earlier run's: this run has no data for it)" % stale)
    return written


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        sys.stderr.write("usage: %s OUTDIR\n" % PROG)
        return 0 if len(argv) == 2 else 2
    plot_common.check_outdir(PROG, argv[1])
    written = plot_all(argv[1], plot_common.import_matplotlib(PROG))
    for path in written:
        print("wrote %s" % path)
    if not written:  # not a failure: e.g. a coordinator without the shards whose devices report no loss
        print("%s: nothing to plot: %s has no finite error, train_loss, test_loss or test_accuracy"
              % (PROG, os.path.join(argv[1], "metrics.csv")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
