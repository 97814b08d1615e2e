#!/usr/bin/env python3
"""Plot the error curves of a fedrt-sim experiment.

usage: plot_error.py OUTDIR

Reads OUTDIR/metrics.csv (columns: algorithm,run,round,error,... one row per
algorithm, run and round; round 0 is the initial error) and OUTDIR/summary.json
(keys "settings" and "algorithms"), and writes OUTDIR/error.png: the mean error
(train_loss when no row has an error, as for a user model)
over runs versus communication round for every algorithm (log y axis), a
mean +/- std band when there are several runs, and a dashed line at the
predicted bias^2 of each algorithm that has one, and dotted lines at the
optional "plot_lines" levels of an algorithm ([{"label": ..., "value": ...}]).
With a test_accuracy column it also writes OUTDIR/accuracy.png
(scripts/plot_accuracy.py).
"""

import csv
import json
import math
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_accuracy  # noqa: E402  (scripts/ is not a package)
import plot_common  # noqa: E402

PROG = "plot_error.py"
REQUIRED_COLUMNS = ("algorithm", "run", "round", "error")


def fail(msg, code=1):
    plot_common.fail(PROG, msg, code)


def load_metrics(path, column="error"):
    """Return ({algorithm: {round: [column per run]}}, {algorithm: set(runs)}, order)."""
    data = {}
    runs = {}
    order = []
    try:
        with open(path, newline="") as fh:
            reader = csv.reader(fh)  # plain rows: DictReader's dict per row was most of the load time
            header = next(reader, None)
            if header is None:
                fail("%s is empty" % path)
            header = [c.strip() for c in header]
            missing = [c for c in REQUIRED_COLUMNS if c not in header]
            if missing:
                fail("%s: header lacks column(s) %s (header: %s)"
                     % (path, ", ".join(missing), ",".join(header)))
            i_alg, i_run, i_round, i_val = (header.index(c) for c in ("algorithm", "run", "round", column))
            for lineno, row in enumerate(reader, start=2):
                try:
                    alg = row[i_alg].strip()
                    run = row[i_run].strip()
                    rnd = int(float(row[i_round]))
                    err = float(row[i_val])
                except (IndexError, ValueError) as exc:
                    if not any(v.strip() for v in row):
                        continue  # blank line (never parses)
                    fail("%s:%d: malformed row (%s): %r" % (path, lineno, exc, row))
                if not alg:
                    fail("%s:%d: empty algorithm name" % (path, lineno))
                if alg not in data:
                    data[alg] = {}
                    runs[alg] = set()
                    order.append(alg)
                data[alg].setdefault(rnd, []).append(err)
                runs[alg].add(run)
    except OSError as exc:
        fail("cannot read %s: %s" % (path, exc))
    except csv.Error as exc:
        fail("%s: malformed CSV: %s" % (path, exc))
    if not data:
        fail("%s has a header but no data rows" % path)
    return data, runs, order


def load_summary(path):
    try:
        with open(path) as fh:
            summary = json.load(fh)
    except OSError as exc:
        fail("cannot read %s: %s" % (path, exc))
    except ValueError as exc:
        fail("%s is not valid JSON: %s" % (path, exc))
    if not isinstance(summary, dict):
        fail("%s: top level must be a JSON object" % path)
    settings = summary.get("settings", {})
    algorithms = summary.get("algorithms", {})
    if not isinstance(settings, dict):
        fail("%s: 'settings' must be an object" % path)
    if not isinstance(algorithms, dict):
        fail("%s: 'algorithms' must be an object" % path)
    return settings, algorithms


def mean_std(per_round, np):
    """Mean and std over runs of every round's values (NaN ignored; NaN where a round has no finite value)."""
    width = max(len(v) for v in per_round)
    if all(len(v) == width for v in per_round):
        table = np.array(per_round, dtype=float)
    else:  # runs that ended early: pad with NaN, which the nan-statistics skip
        table = np.full((len(per_round), width), np.nan)
        for i, v in enumerate(per_round):
            table[i, :len(v)] = v
    # One call over the (round, run) table: per-round calls took seconds at 10^4 rounds.
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(table, axis=1)
        std = np.nanstd(table, axis=1)
    none = ~np.isfinite(table).any(axis=1)
    mean[none] = np.nan
    std[none] = np.nan
    return mean, std


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def fmt_num(v):
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "%g" % v
    return str(v)


PROBLEM_NAMES = {
    "garnet": "Garnet TD(0)",
    "garnet_td0": "Garnet TD(0)",
    "garnet-td0": "Garnet TD(0)",
    "td0": "TD(0)",
    "lsa": "Linear SA",
    "synthetic": "Synthetic LSA",
    "synthetic_lsa": "Synthetic LSA",
}


def named(v):
    """A settings value may be a plain value or an object with a name."""
    if isinstance(v, dict):
        for key in ("name", "kind", "type"):
            if key in v:
                return v[key]
        return None
    return v


def build_title(settings):
    if isinstance(settings.get("title"), str) and settings["title"].strip():
        return settings["title"].strip()
    parts = []
    problem = named(settings.get("problem"))
    if problem is not None:
        parts.append(PROBLEM_NAMES.get(str(problem).lower(), str(problem)))
    het = named(settings.get("heterogeneity"))
    if het is not None:
        if isinstance(het, str):
            parts.append("%s heterogeneity" % het)
        else:
            parts.append("heterogeneity %s" % fmt_num(het))
    for key, sym in (("agents", "N"), ("local_steps", "H"), ("step", "η")):
        v = named(settings.get(key))
        if v is not None:
            parts.append("%s=%s" % (sym, fmt_num(v)))
    return ", ".join(parts) if parts else "fedrt experiment"


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        sys.stderr.write("usage: %s OUTDIR\n" % PROG)
        return 0 if len(argv) == 2 else 2
    outdir = argv[1]
    if not os.path.isdir(outdir):
        fail("%s is not a directory" % outdir, 2)
    metrics_path = os.path.join(outdir, "metrics.csv")
    summary_path = os.path.join(outdir, "summary.json")
    for p in (metrics_path, summary_path):
        if not os.path.isfile(p):
            fail("missing %s" % p, 2)

    data, runs, order = load_metrics(metrics_path)
    settings, algorithms = load_summary(summary_path)
    with open(summary_path) as fh:
        error_label = json.load(fh).get("error_label") or "‖θ_t − θ*‖²"
    if not any(math.isfinite(e) for alg in data.values() for errs in alg.values() for e in errs):
        # No error metric (a user model, docs/user-models.md): the devices' reported training loss.
        with open(metrics_path, newline="") as fh:
            has_train = "train_loss" in (csv.DictReader(fh).fieldnames or [])
        if has_train:
            data, runs, order = load_metrics(metrics_path, "train_loss")
            error_label = "train_loss (mean f_c at the broadcast model, devices' reports)"

    plt = plot_common.import_matplotlib(PROG)
    import numpy as np

    # Floor for the lower edge of the std band so the log axis stays sensible.
    positives = [e for alg in data.values() for errs in alg.values()
                 for e in errs if math.isfinite(e) and e > 0]
    floor = 0.5 * min(positives) if positives else 1e-300

    fig, ax = plt.subplots(figsize=(8, 5))
    plotted = 0
    for alg in order:
        rounds = np.array(sorted(data[alg]))
        mean, std = mean_std([data[alg][r] for r in rounds], np)
        nruns = len(runs[alg])
        label = alg if nruns <= 1 else "%s (%d runs)" % (alg, nruns)
        (line,) = ax.plot(rounds, mean, label=label, linewidth=1.6)
        plotted += 1
        color = line.get_color()
        if nruns > 1:
            lo = np.maximum(mean - std, floor)
            hi = mean + std
            ax.fill_between(rounds, lo, hi, color=color, alpha=0.2, linewidth=0)
        info = algorithms.get(alg)
        bias = info.get("predicted_bias_sq") if isinstance(info, dict) else None
        if is_number(bias) and bias > 0:
            ax.axhline(bias, color=color, linestyle="--", linewidth=1.2,
                       label="%s predicted bias²" % alg)
        # Optional reference levels of a family, e.g. the error of a Polyak-Ruppert
        # average: "plot_lines": [{"label": ..., "value": ...}], dotted.
        lines = info.get("plot_lines") if isinstance(info, dict) else None
        if isinstance(lines, list):
            for ref in lines:
                if isinstance(ref, dict) and is_number(ref.get("value")) and ref["value"] > 0:
                    ax.axhline(ref["value"], color=color, linestyle=":", linewidth=1.4,
                               label="%s %s" % (alg, ref.get("label", "")))

    for alg in algorithms:
        if alg not in data:
            sys.stderr.write("%s: warning: algorithm %r is in summary.json but not in "
                             "metrics.csv; not plotted\n" % (PROG, alg))

    if plotted == 0:
        fail("nothing to plot")

    ax.set_yscale("log")
    ax.set_xlabel("communication round")
    ax.set_ylabel(error_label)
    ax.set_title(build_title(settings))
    ax.grid(True, which="major", alpha=0.4)
    ax.grid(True, which="minor", alpha=0.15)
    ax.legend(loc="best", fontsize="small")
    fig.tight_layout()

    out_path = os.path.join(outdir, "error.png")
    try:
        fig.savefig(out_path, dpi=120)
    except OSError as exc:
        fail("cannot write %s: %s" % (out_path, exc))
    plt.close(fig)
    print("wrote %s" % out_path)
    # Held-out test accuracy (runs with a [data] test file): accuracy.png.
    acc_path = plot_accuracy.plot(outdir, plt)
    if acc_path:
        print("wrote %s" % acc_path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
