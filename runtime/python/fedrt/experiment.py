"""Experiments: a TOML file or a dict of its tables, with keyword overrides.

The tables and keys are those of the experiment files (README.md,
"Experiment files"); the file's own reader checks them, so an unknown key, a
wrong type or a value out of range raises the same message as fedrt-sim,
as a ValueError or TypeError.
"""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from collections.abc import Mapping
from typing import Any, Dict, List, Optional, Union

from . import _fedrt
from ._problem import ARRAYS_NAME, Problem

ExperimentLike = Union[str, "os.PathLike[str]", Mapping, "Experiment"]

# Keys found in several tables: the tables a bare keyword sets when the
# experiment has the key in none of them (as the command-line flag of the same
# name does: --seed is run.seed, --batch both mini-batches); when it has the key
# in some, those. seed always means run.seed (problem.seed takes a table dict);
# clip is compression.clip, as --clip, unless the experiment has privacy.clip.
_DEFAULT_TABLES = {"seed": ("run",), "batch": ("algorithm", "gmm"), "l2": ("problem",), "gamma": ("problem",),
                   "dim": ("problem",), "components": ("gmm",), "clip": ("compression",)}

_KEYS: Optional[Dict[str, List[str]]] = None


def experiment_keys() -> Dict[str, List[str]]:
    """Every table of an experiment file and the keys it accepts."""
    global _KEYS
    if _KEYS is None:
        _KEYS = {t: list(k) for t, k in _fedrt.experiment_keys().items()}
    return {t: list(k) for t, k in _KEYS.items()}


def _plain(value: Any, where: str) -> Any:
    """numpy scalars and arrays, tuples and paths as the plain values TOML holds."""
    item = getattr(value, "item", None)
    if hasattr(value, "dtype") and hasattr(value, "tolist"):
        return value.tolist() if getattr(value, "ndim", 0) else item()
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"{where}: keys must be strings, got {k!r}")
            out[k] = _plain(v, f"{where}.{k}" if where else k)
        return out
    return value


# A flag the simulator's checks name (--local-steps) is a keyword here (local_steps).
_FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9-]*)")


def _load_native(*args: Any) -> Any:
    """_fedrt.load_experiment, its errors in Python's words: "rounds must be
    positive", not the command line's "--rounds must be positive"."""
    try:
        return _fedrt.load_experiment(*args)
    except ValueError as e:
        raise ValueError(_FLAG.sub(lambda m: m.group(1).replace("-", "_"), str(e))) from None


def _tables_of(key: str, base: Mapping) -> List[str]:
    """The tables a bare keyword ``key`` sets (``base``: the experiment's tables)."""
    keys = experiment_keys()
    tables = [t for t, names in keys.items() if key in names]
    if len(tables) == 1:
        return tables
    if len(tables) > 1:
        present = [t for t in tables if isinstance(base.get(t), Mapping) and key in base[t]]
        if key in _DEFAULT_TABLES:
            return list(_DEFAULT_TABLES[key]) if key == "seed" or not present else present
        if len(present) == 1:
            return present
        raise ValueError(f"{key!r} is a key of " + " and ".join(f"[{t}]" for t in tables) +
                         f": say which, e.g. {tables[0]}={{{key!r}: ...}}")
    known = sorted({k for names in keys.values() for k in names} | set(keys))
    close = difflib.get_close_matches(key, known, n=3)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    raise ValueError(f"unknown setting {key!r}{hint}; settings are the experiment file's keys, or a table "
                     f"name with a dict (tables: {', '.join(sorted(keys))})")


def _overrides(overrides: Mapping, base: Mapping) -> Dict[str, Dict[str, Any]]:
    """Keyword overrides as {table: {key: value}}: a table name with a dict
    replaces that table's keys; any other name is a key of the table that
    has it (see _DEFAULT_TABLES for the few that two tables share)."""
    tables = experiment_keys()
    out: Dict[str, Dict[str, Any]] = {}
    for name, value in overrides.items():
        if name in tables and isinstance(value, Mapping):
            out.setdefault(name, {}).update(_plain(value, name))
        else:
            for table in _tables_of(name, base):
                out.setdefault(table, {})[name] = _plain(value, f"{table}.{name}")
    return out


def _file_tables(path: str) -> Mapping:
    """The tables of a TOML file, to see which of them hold a shared key (the
    C++ reader reads the file itself and reports its errors)."""
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError):
        return {}


class Experiment:
    """An experiment read and validated: its settings as fedrt-sim sees them.

    Build one with :func:`load`; :func:`run` accepts it, a path or a dict.
    """

    def __init__(self, native: Any, source: str):
        self._native = native
        self.source = source

    algorithms = property(lambda self: list(self._native.algorithms), doc="Algorithm names, e.g. ['fedlsa', 'scafflsa'].")
    rounds = property(lambda self: self._native.rounds, doc="T, communication rounds per run.")
    runs = property(lambda self: self._native.runs, doc="R, independent runs.")
    agents = property(lambda self: self._native.agents, doc="N, agents (for problems read from files: as written).")
    problem = property(lambda self: self._native.problem, doc="Problem kind: garnet, file, lsq, logistic, gmm, ...")
    out = property(lambda self: self._native.out, doc="run.out, where Result.save() writes by default.")

    def __repr__(self) -> str:
        return (f"Experiment({self.source}: problem={self.problem}, algorithms={self.algorithms}, "
                f"rounds={self.rounds}, runs={self.runs})")


# What a problem object replaces: these tables, and [gmm]'s generator keys.
_PROBLEM_TABLES = ("problem", "data", "model")
_GMM_GENERATOR_KEYS = ("components", "data_dim", "points", "own_weight", "separation")


def _merge(base: Dict[str, Any], over: Mapping) -> Dict[str, Any]:
    for k, v in over.items():
        if isinstance(v, Mapping) and isinstance(base.get(k), dict):
            _merge(base[k], v)
        else:
            base[k] = dict(v) if isinstance(v, Mapping) else v
    return base


def _with_problem(tables: Mapping, problem: Any) -> Dict[str, Any]:
    """The experiment's tables with the problem's in place of its own."""
    out = {k: dict(v) if isinstance(v, Mapping) else v for k, v in tables.items() if k not in _PROBLEM_TABLES}
    if isinstance(out.get("gmm"), dict):
        for k in _GMM_GENERATOR_KEYS:
            out["gmm"].pop(k, None)
    return _merge(out, problem._tables())


def load(experiment: ExperimentLike, /, *, problem: Any = None, **overrides: Any) -> Experiment:
    """Reads and validates an experiment.

    ``experiment`` is a TOML file's path (relative paths inside it resolve
    against its folder) or a dict ``{table: {key: value}}`` with the file's
    tables and keys (relative paths resolve against the working directory).
    ``problem`` is a problem object of fedrt.problems (arrays, or a
    generator's parameters), which replaces the experiment's [problem], [data]
    and [model] tables; or, as a dict, overrides of the [problem] table.
    ``overrides`` set single keys (``rounds=10``, ``step=0.01``) or tables
    (``run={"rounds": 10}``); a key that two tables share (``seed``) means the
    command-line flag's table (run.seed), the other needs a table dict.
    """
    if isinstance(problem, Mapping):
        overrides["problem"], problem = problem, None
    elif problem is not None and not isinstance(problem, Problem):
        raise TypeError(f"problem must be a fedrt problem (e.g. fedrt.LinearSystem) or a dict of [problem] keys, "
                        f"got {type(problem).__name__}")
    if isinstance(experiment, Experiment):
        if overrides or problem is not None:
            raise TypeError("overrides and problem need the experiment's file or dict, not a loaded Experiment")
        return experiment
    if isinstance(experiment, (str, os.PathLike)):
        path = os.fspath(experiment)
        if problem is None:
            over = _overrides(overrides, _file_tables(path) if overrides else {})
            return Experiment(_load_native(path, {}, over), path)
        if not os.path.exists(path):
            raise FileNotFoundError(f"experiment file '{path}' not found")
        try:
            with open(path, "rb") as f:
                tables = tomllib.load(f)
        except tomllib.TOMLDecodeError as e:
            raise ValueError(f"{path}: {e}") from None
        source, base_dir = path, os.path.dirname(path)
    elif isinstance(experiment, Mapping):
        tables = _plain(experiment, "")
        source, base_dir = "experiment dict", ""
        if problem is None:
            return Experiment(_load_native(None, tables, _overrides(overrides, tables)), "dict")
    else:
        raise TypeError(f"experiment must be a TOML file's path or a dict of its tables, got {type(experiment).__name__}")
    tables = _with_problem(tables, problem)
    native = _load_native(None, tables, _overrides(overrides, tables), source, base_dir, problem._bundle(),
                                    problem._shards(), ARRAYS_NAME)
    return Experiment(native, source if source != "experiment dict" else "dict")
