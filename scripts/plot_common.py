"""What the plot scripts share: importing matplotlib for files (Agg backend),
a one-line error, the checks on OUTDIR, saving a figure, and the command
line of a script that writes one plot. Imported by scripts/plot_error.py,
scripts/plot_loss.py, scripts/plot_accuracy.py and scripts/plot_run.py,
never the other way round.
"""

import os
import sys


def fail(prog, msg, code=1):
    sys.stderr.write("%s: error: %s\n" % (prog, msg))
    sys.exit(code)


def import_matplotlib(prog):
    """Import matplotlib with the Agg backend.

    If the current interpreter lacks matplotlib (e.g. a pyenv python first on
    PATH), re-run this script with the Debian interpreter, which has
    python3-matplotlib.
    """
    try:
        import matplotlib
    except ImportError:
        system_python = "/usr/bin/python3"
        if (os.path.exists(system_python)
                and os.path.realpath(sys.executable) != os.path.realpath(system_python)
                and not os.environ.get("FEDRT_PLOT_REEXEC")):
            os.environ["FEDRT_PLOT_REEXEC"] = "1"
            os.execv(system_python, [system_python] + sys.argv)
        fail(prog, "matplotlib is not available for %s; install python3-matplotlib "
             "(scripts/setup.sh) or run with /usr/bin/python3" % sys.executable)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def check_outdir(prog, outdir):
    """Exit 2 with a clear message unless outdir holds metrics.csv and summary.json."""
    if not os.path.isdir(outdir):
        fail(prog, "%s is not a directory" % outdir, 2)
    for name in ("metrics.csv", "summary.json"):
        if not os.path.isfile(os.path.join(outdir, name)):
            fail(prog, "missing %s" % os.path.join(outdir, name), 2)


def save(fig, path, plt, prog):
    """Write fig to path (None: nothing to write); returns path or None."""
    if fig is None:
        return None
    try:
        fig.savefig(path, dpi=120)
    except OSError as exc:
        fail(prog, "cannot write %s: %s" % (path, exc))
    finally:
        plt.close(fig)
    return path


def main_one(argv, prog, plot):
    """`prog OUTDIR`: write one plot with plot(outdir, plt); exit 0 also when the run has nothing for it."""
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        sys.stderr.write("usage: %s OUTDIR\n" % prog)
        return 0 if len(argv) == 2 else 2
    check_outdir(prog, argv[1])
    out = plot(argv[1], import_matplotlib(prog))
    print("wrote %s" % out if out else "%s: nothing to plot in %s" % (prog, argv[1]))
    return 0
