"""Running an experiment and what it returns (the files fedrt-sim writes, as
Python objects)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from . import _fedrt
from .experiment import Experiment, ExperimentLike, load


@dataclass(frozen=True)
class Round:
    """One finished round, as the callback of :func:`run` sees it."""

    algorithm: str
    run: int            # 0-based run index
    round: int          # 1..T
    error: float        # the family's error metric at the new global iterate
    model: np.ndarray   # the new global iterate (a copy)


class Result:
    """The results of :func:`run`.

    - ``summary``: the dict that summary.json holds (settings, seeds, the
      problem, per-algorithm statistics);
    - ``metrics``: metrics.csv's columns as numpy arrays (one row per
      algorithm, run and round, round 0 being the initial iterate);
    - ``models``: per algorithm, the final iterates of every run, shape (runs, d);
    - ``theta_star``: the exact solution (None when the problem has none);
    - ``history``: with ``run(..., history=True)``, per algorithm and run the
      iterates of every round, shape (rounds + 1, d).
    """

    def __init__(self, native: Any, experiment: Experiment):
        self._native = native
        self.experiment = experiment
        self.summary: Dict[str, Any] = json.loads(native.summary_json())
        self.metrics: Dict[str, np.ndarray] = dict(native.metrics())
        self.models: Dict[str, np.ndarray] = dict(native.models())
        self.theta_star: Optional[np.ndarray] = native.theta_star()
        self.history: Dict[str, List[np.ndarray]] = dict(native.history())

    @property
    def algorithms(self) -> List[str]:
        """The algorithms in the order they ran."""
        return list(self.models)

    def error(self, algorithm: str) -> np.ndarray:
        """The error metric of ``algorithm`` as an array (runs, rounds + 1);
        NaN after a run that the callback ended early."""
        if algorithm not in self.models:
            raise KeyError(f"no algorithm {algorithm!r} in this result (ran: {', '.join(self.algorithms)})")
        m = self.metrics
        sel = m["algorithm"] == algorithm
        runs, rounds = m["run"][sel], m["round"][sel]
        out = np.full((int(runs.max()) + 1, int(self.summary["settings"]["rounds"]) + 1), np.nan)
        out[runs, rounds] = m["error"][sel]
        return out

    def to_pandas(self):  # -> pandas.DataFrame
        """metrics.csv as a pandas DataFrame (needs pandas: Debian's python3-pandas)."""
        try:
            import pandas as pd
        except ImportError as e:
            raise ImportError("to_pandas() needs pandas (Debian: apt-get install python3-pandas)") from e
        return pd.DataFrame(self.metrics)

    def save(self, out: Optional[str] = None, plot: bool = True) -> str:
        """Writes metrics.csv, summary.json, model_<algorithm>.npy and, with
        ``plot``, the plots (error.png, loss.png, accuracy.png: those the run
        has data for) to ``out`` (default: the experiment's run.out),
        exactly as fedrt-sim does; returns the folder."""
        folder = os.fspath(out) if out is not None else self.experiment.out
        self.plot_error = self._native.save(folder, plot)
        return folder

    def __repr__(self) -> str:
        finals = ", ".join(f"{a}: {s['final_error_mean']:.4g}" for a, s in self.summary["algorithms"].items())
        return f"Result({self.experiment.source}; final error {finals})"


def run(experiment: ExperimentLike, /, *, problem: Any = None,
        callback: Optional[Callable[[Round], Optional[bool]]] = None, history: bool = False,
        **overrides: Any) -> Result:
    """Runs every algorithm of ``experiment`` for run.runs runs on the
    simulator (as ``fedrt-sim --config``) and returns the :class:`Result`.

    ``experiment``, ``problem`` and ``overrides`` are those of :func:`load`
    (``problem``: a problem object from arrays or a generator); ``threads=N``
    sets the worker threads (results do not depend on it). ``callback(round)``
    is called after every round with a :class:`Round`; returning False ends
    that run (its rows so far are kept), raising stops everything and
    propagates. The GIL is released while the simulator works; Ctrl-C stops
    it at the end of the round.
    """
    exp = load(experiment, problem=problem, **overrides)
    cb = None
    if callback is not None:
        if not callable(callback):
            raise TypeError(f"callback must be callable, got {type(callback).__name__}")
        cb = lambda alg, run_, rnd, err, model: callback(Round(alg, run_, rnd, err, model))  # noqa: E731
    return Result(_fedrt.run(exp._native, cb, history), exp)
