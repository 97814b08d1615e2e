"""What the plot scripts share: importing matplotlib for files (Agg backend)
and a one-line error. Imported by scripts/plot_error.py and
scripts/plot_accuracy.py, never the other way round.
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
