"""Reading a run's outputs for the plot scripts: one column of metrics.csv
per algorithm and round, summary.json, the mean and std over runs, and the
title the run's settings give.
Imported by scripts/plot_error.py, scripts/plot_loss.py and
scripts/plot_accuracy.py; it draws nothing.
"""

import csv
import json
import math
import warnings

import plot_common

KEY_COLUMNS = ("algorithm", "run", "round")


def header(path, prog):
    """The column names of metrics.csv at `path` (stripped)."""
    try:
        with open(path, newline="") as fh:
            row = next(csv.reader(fh), None)
    except OSError as exc:
        plot_common.fail(prog, "cannot read %s: %s" % (path, exc))
    if row is None:
        plot_common.fail(prog, "%s is empty" % path)
    return [c.strip() for c in row]


class Series:
    """One metrics.csv column: values[algorithm][round] = [value per run], runs[algorithm] = set of runs."""

    def __init__(self):
        self.values, self.runs, self.order = {}, {}, []

    def has_finite(self):
        return any(math.isfinite(v) for per in self.values.values() for vals in per.values() for v in vals)


def load_column(path, column, prog):
    """The column `column` of metrics.csv; None when the header lacks it."""
    names = header(path, prog)
    missing = [c for c in KEY_COLUMNS if c not in names]
    if missing:
        plot_common.fail(prog, "%s: header lacks column(s) %s (header: %s)"
                         % (path, ", ".join(missing), ",".join(names)))
    if column not in names:
        return None
    i_alg, i_run, i_round, i_val = (names.index(c) for c in KEY_COLUMNS + (column,))
    s = Series()
    try:
        with open(path, newline="") as fh:
            reader = csv.reader(fh)  # plain rows: DictReader's dict per row was most of the load time
            next(reader, None)
            for lineno, row in enumerate(reader, start=2):
                try:
                    alg = row[i_alg].strip()
                    run = row[i_run].strip()
                    rnd = int(float(row[i_round]))
                    val = float(row[i_val])
                except (IndexError, ValueError) as exc:
                    if not any(v.strip() for v in row):
                        continue  # blank line
                    plot_common.fail(prog, "%s:%d: malformed row (%s): %r" % (path, lineno, exc, row))
                if not alg:
                    plot_common.fail(prog, "%s:%d: empty algorithm name" % (path, lineno))
                if alg not in s.values:
                    s.values[alg], s.runs[alg] = {}, set()
                    s.order.append(alg)
                s.values[alg].setdefault(rnd, []).append(val)
                s.runs[alg].add(run)
    except csv.Error as exc:
        plot_common.fail(prog, "%s: malformed CSV: %s" % (path, exc))
    if not s.values:
        plot_common.fail(prog, "%s has a header but no data rows" % path)
    return s


def load_summary(path, prog):
    """summary.json as a dict, with 'settings' and 'algorithms' checked to be objects."""
    try:
        with open(path) as fh:
            summary = json.load(fh)
    except OSError as exc:
        plot_common.fail(prog, "cannot read %s: %s" % (path, exc))
    except ValueError as exc:
        plot_common.fail(prog, "%s is not valid JSON: %s" % (path, exc))
    if not isinstance(summary, dict):
        plot_common.fail(prog, "%s: top level must be a JSON object" % path)
    for key in ("settings", "algorithms", "problem"):
        if summary.get(key) is None:
            summary[key] = {}
        elif not isinstance(summary[key], dict):
            plot_common.fail(prog, "%s: '%s' must be an object" % (path, key))
    return summary


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


def curve(series, alg, np):
    """(rounds, mean, std) of one algorithm, rounds without a finite value left out."""
    rounds = np.array(sorted(series.values[alg]))
    mean, std = mean_std([series.values[alg][r] for r in rounds], np)
    keep = np.isfinite(mean)
    return rounds[keep], mean[keep], std[keep]


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
    "softmax": "softmax regression",
    "user": "user model",
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
