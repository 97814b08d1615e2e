"""The plot scripts (scripts/plot_run.py and the one-plot scripts it calls) on
real runs' outputs (tests/data/plots; tests/data/README.md says which): one
file per quantity, at least three labelled ticks on a log axis, whole-number
round ticks, a legend entry for every line, and coinciding curves kept
visible. The assertions read the matplotlib objects (tick labels, legend
texts, markers), not pixels.
"""

import csv
import os
import shutil
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

ROOT = os.environ.get("FEDRT_SOURCE") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPTS = os.path.join(ROOT, "scripts")
DATA = os.path.join(ROOT, "tests", "data", "plots")
sys.path.insert(0, SCRIPTS)
import plot_accuracy  # noqa: E402
import plot_axes  # noqa: E402
import plot_error  # noqa: E402
import plot_loss  # noqa: E402


def run_copy(tmp_path, name, max_round=None):
    """A copy of the fixture folder `name` (under tests/data/plots) in tmp_path, metrics.csv cut after max_round if given."""
    dst = tmp_path / name
    shutil.copytree(os.path.join(DATA, name), dst)
    if max_round is not None:
        with open(dst / "metrics.csv", newline="") as fh:
            rows = list(csv.reader(fh))
        i = rows[0].index("round")
        with open(dst / "metrics.csv", "w", newline="") as fh:
            csv.writer(fh).writerows([rows[0]] + [r for r in rows[1:] if int(r[i]) <= max_round])
    return str(dst)


def plot_run(outdir):
    return subprocess.run([sys.executable, os.path.join(SCRIPTS, "plot_run.py"), outdir],
                          capture_output=True, text=True)


def drawn(fig):
    fig.canvas.draw()
    return fig.axes[0]


def labelled_ticks(ax, axis):
    """(position, text) of the labelled major ticks inside the view."""
    ticks = ax.get_yticklabels() if axis == "y" else ax.get_xticklabels()
    lo, hi = ax.get_ylim() if axis == "y" else ax.get_xlim()
    k = 1 if axis == "y" else 0
    return [(t.get_position()[k], t.get_text()) for t in ticks
            if t.get_text() and min(lo, hi) <= t.get_position()[k] <= max(lo, hi)]


def legend_texts(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]


ALL_FIGURES = [("digits-demo", plot_error), ("digits-demo", plot_loss), ("digits-demo", plot_accuracy),
               ("lsq-40-rounds", plot_error), ("user-model", plot_loss)]


def test_a_loss_only_run_writes_loss_png_and_no_error_png(tmp_path):
    out = run_copy(tmp_path, "user-model")
    res = plot_run(out)
    assert res.returncode == 0, res.stderr
    assert sorted(f for f in os.listdir(out) if f.endswith(".png")) == ["loss.png"]
    assert "wrote %s" % os.path.join(out, "loss.png") in res.stdout


def test_a_run_with_error_loss_and_accuracy_writes_one_file_each(tmp_path):
    out = run_copy(tmp_path, "digits-demo")
    res = plot_run(out)
    assert res.returncode == 0, res.stderr
    assert sorted(f for f in os.listdir(out) if f.endswith(".png")) == ["accuracy.png", "error.png", "loss.png"]


def test_an_earlier_runs_plot_of_a_missing_quantity_is_removed(tmp_path):
    out = run_copy(tmp_path, "user-model")
    with open(os.path.join(out, "error.png"), "w") as fh:
        fh.write("an earlier run's plot")
    res = plot_run(out)
    assert res.returncode == 0, res.stderr
    assert not os.path.exists(os.path.join(out, "error.png"))
    assert "removed %s" % os.path.join(out, "error.png") in res.stdout


@pytest.mark.parametrize("name,module", [("user-model", plot_loss), ("digits-demo", plot_error),
                                         ("digits-demo", plot_loss)])
def test_a_log_axis_over_about_a_decade_has_three_labelled_ticks(tmp_path, name, module):
    ax = drawn(module.figure(run_copy(tmp_path, name), plt))
    assert ax.get_yscale() == "log"
    lo, hi = ax.get_ylim()
    assert hi / lo < 20  # the case the default log axis labels once
    labels = labelled_ticks(ax, "y")
    assert len(labels) >= 3, labels
    for pos, text in labels:  # each label says its own value
        assert float(text.replace("$", "").replace("\\times10^{", "e").replace("}", "")) == pytest.approx(pos)


def test_log_ticks_for_narrow_and_wide_ranges():
    assert plot_axes.log_ticks(0.2, 0.8) == pytest.approx([0.2, 0.3, 0.4, 0.5, 0.6, 0.8])
    assert len(plot_axes.log_ticks(0.95, 1.05)) >= 3
    assert plot_axes.log_ticks(1e-29, 10.0) is None  # powers of ten suffice
    assert plot_axes.tick_label(2e-5) == r"$2\times10^{-5}$"
    assert plot_axes.tick_label(0.25) == "0.25"


@pytest.mark.parametrize("max_round", [3, 20])
@pytest.mark.parametrize("module", [plot_error, plot_loss, plot_accuracy])
def test_a_short_run_has_whole_number_round_ticks(tmp_path, module, max_round):
    ax = drawn(module.figure(run_copy(tmp_path, "digits-demo", max_round), plt))
    labels = labelled_ticks(ax, "x")
    assert len(labels) >= 2, labels
    for pos, text in labels:
        assert pos == int(pos) and text.replace("\u2212", "-") == str(int(pos)), labels


def test_two_identical_curves_are_both_visible(tmp_path):
    ax = drawn(plot_loss.figure(run_copy(tmp_path, "user-model"), plt))
    lines = {ln.get_label().split(",")[0]: ln for ln in ax.get_lines()}
    a, b = lines["fedavg"], lines["fedavg-rr"]
    assert list(a.get_xdata()) == list(b.get_xdata()) and list(a.get_ydata()) == list(b.get_ydata())
    assert a.get_marker() != b.get_marker()
    assert a.get_markevery()[0] != b.get_markevery()[0]  # markers at different rounds
    assert "fedavg-rr, training loss (coincides with fedavg)" in legend_texts(ax)
    assert not any("coincides" in t for t in legend_texts(ax) if not t.startswith("fedavg-rr"))


@pytest.mark.parametrize("name,module", ALL_FIGURES)
def test_every_line_has_a_legend_entry(tmp_path, name, module):
    ax = drawn(module.figure(run_copy(tmp_path, name), plt))
    texts = legend_texts(ax)
    for line in ax.get_lines():
        assert not line.get_label().startswith("_"), "a line without a label"
        assert line.get_label() in texts
    styles = {ln.get_linestyle() for ln in ax.get_lines()}
    legend = ax.get_legend()
    handles = getattr(legend, "legend_handles", None) or legend.legendHandles  # the name before matplotlib 3.7
    assert styles <= {h.get_linestyle() for h in handles}


def test_the_legend_says_what_the_dashed_and_dotted_lines_are(tmp_path):
    dotted = [ln for ln in drawn(plot_error.figure(run_copy(tmp_path, "digits-demo"), plt)).get_lines()
              if ln.get_linestyle() == ":"]
    assert [ln.get_label() for ln in dotted] == [
        "%s: level ||xbar - x*||² of the last round, xbar = mean of x_t after the burn-in" % a
        for a in ("fedavg", "scaffold")]
    dashed = [ln.get_label() for ln in drawn(plot_error.figure(run_copy(tmp_path, "lsq-40-rounds"), plt)).get_lines()
              if ln.get_linestyle() == "--"]
    assert dashed == ["fedavg: predicted bias² (theory, where its curve levels off)",
                      "fedprox-exact: predicted bias² (theory, where its curve levels off)"]


def test_bad_input_is_named(tmp_path):
    res = plot_run(str(tmp_path / "nowhere"))
    assert res.returncode == 2 and "nowhere is not a directory" in res.stderr
    out = run_copy(tmp_path, "user-model")
    with open(os.path.join(out, "metrics.csv"), "w") as fh:
        fh.write("algorithm,run,error\nfedavg,0,1.0\n")
    res = plot_run(out)
    assert res.returncode == 1 and "header lacks column(s) round" in res.stderr
    with open(os.path.join(out, "metrics.csv"), "w") as fh:
        fh.write("algorithm,run,round,error\nfedavg,0,0,nan\n")
    res = plot_run(out)  # nothing failed: the run has nothing to draw
    assert res.returncode == 0 and "nothing to plot" in res.stdout
    assert not any(f.endswith(".png") for f in os.listdir(out))
