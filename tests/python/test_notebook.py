"""examples/python/scafflsa_fig1.ipynb runs headless (scripts/run_notebook.py,
quick sizes) and shows what it claims: SCAFFLSA below FedLSA, FedLSA at its
predicted bias once the start is forgotten."""

import json
import os
import subprocess
import sys


def test_notebook_runs_and_shows_the_bias(source, tmp_path):
    out = tmp_path / "executed.ipynb"
    env = dict(os.environ, FEDRT_NOTEBOOK_QUICK="1", MPLBACKEND="Agg")
    proc = subprocess.run([sys.executable, str(source / "scripts/run_notebook.py"),
                           str(source / "examples/python/scafflsa_fig1.ipynb"), "--write", str(out)],
                          env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    nb = json.loads(out.read_text())
    images = [o for c in nb["cells"] if c["cell_type"] == "code" for o in c["outputs"] if "image/png" in o.get("data", {})]
    assert len(images) == 2  # Figure 1 and the sweep
    rows = [line.split() for line in proc.stdout.splitlines() if line.strip().startswith(("1.00e-01",))]
    eta, fedlsa, scafflsa, predicted = map(float, rows[-1])
    assert eta == 0.1
    assert scafflsa < fedlsa / 5
    assert abs(fedlsa - predicted) < 0.3 * predicted
