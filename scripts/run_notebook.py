#!/usr/bin/env python3
"""Run a Jupyter notebook's code cells headlessly, in order, in one namespace.

usage: run_notebook.py NOTEBOOK.ipynb [--write OUT.ipynb]

Each cell's printed output and the matplotlib figures it leaves open become
the cell's outputs (text and PNG); with --write the executed notebook is saved.
The working directory is the notebook's folder, as in Jupyter. Exits 1 naming
the cell whose code raised. Needs no Jupyter: numpy, matplotlib and fedrt on
the path (./fedrt python scripts/run_notebook.py ...).
"""

import base64
import contextlib
import io
import json
import os
import sys
import traceback


def run(path, write=None):
    os.environ.setdefault("MPLBACKEND", "Agg")
    import matplotlib.pyplot as plt

    with open(path) as f:
        nb = json.load(f)
    here = os.getcwd()
    os.chdir(os.path.dirname(os.path.abspath(path)))
    namespace = {"__name__": "__main__"}
    count = 0
    try:
        for index, cell in enumerate(nb["cells"]):
            if cell["cell_type"] != "code":
                continue
            count += 1
            source = "".join(cell["source"])
            out = io.StringIO()
            try:
                with contextlib.redirect_stdout(out):
                    exec(compile(source, f"{path}, cell {index}", "exec"), namespace)
            except Exception:
                sys.stdout.write(out.getvalue())
                traceback.print_exc()
                sys.stderr.write(f"run_notebook.py: error: code cell {count} (cell {index}) of {path} raised\n")
                return 1
            outputs = []
            if out.getvalue():
                outputs.append({"name": "stdout", "output_type": "stream", "text": out.getvalue().splitlines(True)})
            for num in plt.get_fignums():
                png = io.BytesIO()
                plt.figure(num).savefig(png, format="png", dpi=80, bbox_inches="tight")
                outputs.append({"output_type": "display_data", "metadata": {},
                                "data": {"image/png": base64.b64encode(png.getvalue()).decode("ascii"),
                                         "text/plain": ["<Figure>"]}})
            plt.close("all")
            cell["outputs"] = outputs
            cell["execution_count"] = count
            sys.stdout.write(out.getvalue())
    finally:
        os.chdir(here)
    if write:
        with open(write, "w") as f:
            json.dump(nb, f, indent=1)
            f.write("\n")
    return 0


def main(argv):
    if len(argv) not in (2, 4) or (len(argv) == 4 and argv[2] != "--write"):
        sys.stderr.write(__doc__)
        return 2
    return run(argv[1], argv[3] if len(argv) == 4 else None)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
