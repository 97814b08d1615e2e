"""Problems from numpy arrays and the generators' parameters (docs/python.md).

Pass one to :func:`fedrt.run` as ``problem=``: it replaces the experiment's
[problem], [data] and [model] tables (and [gmm]'s generator keys), and the
experiment keeps its algorithms, participation, compression and run settings.
Arrays reach the simulator through the same checks and code as the equivalent
files (array bundles, CSV shards), so a problem built here gives the same
iterates as the same numbers read from a file.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from . import _fedrt
from ._arrays import per_agent, positive_int, real_array, real_number, seed_int, shards

from ._problem import ARRAYS_NAME, Problem  # noqa: F401  (fedrt.problems.Problem is public)


class _Bundle(Problem):
    """A problem held as an array bundle (tests/data/README.md, "Array bundles")."""

    def _tables(self):
        return {"problem": {"kind": "file"}}

    def arrays(self) -> Dict[str, np.ndarray]:
        """The bundle's arrays by their file names."""
        return {k: v.copy() for k, v in self._bundle().items()}

    def save(self, path: "str | os.PathLike[str]") -> str:
        """Writes the array-bundle file that ``problem.kind = "file"`` reads (and
        ``./fedrt fleet`` devices with --data); returns its path."""
        path = os.fspath(path)
        with open(path, "w") as f:
            f.write(_fedrt.bundle_text(self._bundle()))
        return path

    @property
    def theta_star(self) -> np.ndarray:
        """theta_star = (sum_c Abar_c)^{-1} sum_c bbar_c."""
        return _fedrt.lsa_system(self._bundle())["theta_star"]


class LinearSystem(_Bundle):
    """A federated linear system (docs/algorithms.md 1.1): agent c samples
    A_c(Z) = Abar_c + sigma_a[c] G and b_c(Z) = bbar_c + sigma_b[c] g, with G
    and g standard Gaussian, and the algorithms solve
    (1/N) sum_c Abar_c theta = (1/N) sum_c bbar_c.

    ``abar``: (N, d, d); ``bbar``: (N, d); ``sigma_a``, ``sigma_b``: a number
    or one per agent (0: the expected operator itself, deterministic).
    """

    def __init__(self, abar: Any, bbar: Any, sigma_a: Any = 0.0, sigma_b: Any = 0.0):
        a = real_array(abar, "abar", 3, what="N x d x d, one matrix per agent")
        if a.shape[1] != a.shape[2]:
            raise ValueError(f"abar has shape {a.shape}: each agent's matrix must be square (N x d x d)")
        n, d = a.shape[0], a.shape[1]
        b = real_array(bbar, "bbar", 2, (n, d), "N x d, as abar")
        self._arrays = {"abar": a, "bbar": b, "sigma_a": per_agent(sigma_a, "sigma_a", n),
                        "sigma_b": per_agent(sigma_b, "sigma_b", n)}
        self.agents, self.dim = n, d

    def _bundle(self):
        return self._arrays

    def __repr__(self) -> str:
        return f"LinearSystem(N={self.agents}, d={self.dim})"


class TdProblem(_Bundle):
    """Federated TD(0) with linear features (docs/algorithms.md 1.2): shared
    ``features`` phi (S, d), ``policy`` pi (S, A) and discount ``gamma``; per
    agent ``rewards`` r_c (N, S) and transition ``kernels`` P_c(s'|s,a) (N, S, A, S)."""

    def __init__(self, gamma: float, features: Any, policy: Any, rewards: Any, kernels: Any):
        phi = real_array(features, "features", 2, what="states x d")
        s = phi.shape[0]
        pi = real_array(policy, "policy", 2, (s, None), "states x actions")
        r = real_array(rewards, "rewards", 2, (None, s), "agents x states")
        k = real_array(kernels, "kernels", 4, (r.shape[0], s, pi.shape[1], s), "agents x states x actions x states")
        g = real_number(gamma, "gamma", 0.0, 1.0, high_open=True)
        self._arrays = {"gamma": np.array(g), "feat_map": phi, "policy": pi, "rewards": r, "tr_kernels": k}
        self.agents, self.dim, self.states, self.actions = r.shape[0], phi.shape[1], s, pi.shape[1]

    def _bundle(self):
        return self._arrays

    def system(self) -> LinearSystem:
        """The expected operators Abar_c, bbar_c as a noise-free LinearSystem."""
        s = _fedrt.lsa_system(self._arrays)
        return LinearSystem(s["abar"], s["bbar"])

    def __repr__(self) -> str:
        return f"TdProblem(N={self.agents}, states={self.states}, actions={self.actions}, d={self.dim})"


def load_bundle(path: "str | os.PathLike[str]") -> "TdProblem | LinearSystem":
    """The problem of an array-bundle file (TD(0) primitives or a linear system)."""
    a = _fedrt.read_bundle(os.fspath(path))
    if "abar" in a or "bbar" in a:
        return LinearSystem(a.get("abar"), a.get("bbar"), a.get("sigma_a", 0.0), a.get("sigma_b", 0.0))
    missing = [k for k in ("gamma", "feat_map", "policy", "rewards", "tr_kernels") if k not in a]
    if missing:
        raise ValueError(f"{os.fspath(path)}: no array {', '.join(missing)} (a TD(0) bundle needs gamma, feat_map, "
                         f"policy, rewards, tr_kernels; a linear system abar and bbar)")
    return TdProblem(float(a["gamma"]), a["feat_map"], a["policy"], a["rewards"], a["tr_kernels"])


class Garnet(Problem):
    """Generated Garnet MDPs (docs/algorithms.md 1.3), the SCAFFLSA paper's
    benchmark; ``seed`` None uses the run's seed, as problem.seed does."""

    def __init__(self, agents: int = 100, states: int = 30, actions: int = 2, branching: int = 2, dim: int = 8,
                 gamma: float = 0.95, epsilon: float = 0.02, heterogeneity: str = "low", seed: Optional[int] = None):
        if heterogeneity not in ("low", "high"):
            raise ValueError(f"heterogeneity must be 'low' or 'high', got {heterogeneity!r}")
        self.settings = {"kind": "garnet", "agents": positive_int(agents, "agents"),
                         "states": positive_int(states, "states"), "actions": positive_int(actions, "actions"),
                         "branching": positive_int(branching, "branching"), "dim": positive_int(dim, "dim"),
                         "gamma": real_number(gamma, "gamma", 0.0, 1.0, high_open=True),
                         "epsilon": real_number(epsilon, "epsilon", 0.0), "heterogeneity": heterogeneity}
        if seed is not None:
            self.settings["seed"] = seed_int(seed)
        self.agents, self.dim = agents, dim

    def _tables(self):
        return {"problem": dict(self.settings)}

    def td_problem(self, seed: int = 1) -> TdProblem:
        """The generated instance's arrays (``seed``: the run seed, used when
        this Garnet has none) as a TdProblem."""
        from .experiment import load
        a = _fedrt.td_arrays(load({"run": {"seed": seed}}, problem=self)._native)
        return TdProblem(a["gamma"], a["features"], a["policy"], a["rewards"], a["kernels"])

    def __repr__(self) -> str:
        return f"Garnet({', '.join(f'{k}={v!r}' for k, v in self.settings.items() if k != 'kind')})"


class _Shards(Problem):
    """Per-agent examples held in memory, read as [data] shards are (docs/data.md)."""

    kind = ""

    def __init__(self, x: Sequence[Any], y: Optional[Sequence[Any]], model: Dict[str, Any]):
        self._data, self.features = shards(x, y, "x", "y")
        self.agents = len(self._data)
        self._model = model

    def _tables(self):
        return {"model": {"kind": self.kind, **self._model},
                "data": {"format": "csv", "train": ARRAYS_NAME + " {id}"}, "problem": {"agents": self.agents}}

    def _shards(self):
        return self._data

    def save_csv(self, folder: "str | os.PathLike[str]", label: str = "label") -> str:
        """Writes one CSV shard per agent, ``folder/agent-{id}.csv`` (features
        x1..xp, then ``label``; 17 significant digits), the files that
        ``[data] train = "agent-{id}.csv"`` reads; returns the pattern."""
        folder = os.fspath(folder)
        os.makedirs(folder, exist_ok=True)
        for c, (x, y) in enumerate(self._data):
            cols = [f"x{j + 1}" for j in range(x.shape[1])] + ([label] if y is not None else [])
            rows = x if y is None else np.column_stack([x, y])
            np.savetxt(os.path.join(folder, f"agent-{c}.csv"), rows, fmt="%.17g", delimiter=",",
                       header=",".join(cols), comments="")
        return os.path.join(folder, "agent-{id}.csv")


def _intercept(value: Optional[bool]) -> Dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, bool):
        raise TypeError(f"intercept must be True or False, got {type(value).__name__}")
    return {"intercept": value}


class LeastSquaresData(_Shards):
    """Least squares on each agent's (X_c, y_c) (docs/algorithms.md 1.4):
    f_c(x) = (1/(2 n_c)) ||X_c x - y_c||^2 (+ (l2/2)||x||^2 with l2 set);
    ``intercept`` appends a constant feature."""

    kind = "least_squares"

    def __init__(self, x: Sequence[Any], y: Sequence[Any], intercept: Optional[bool] = None):
        super().__init__(x, y, _intercept(intercept))


class LogisticData(_Shards):
    """L2-regularised logistic regression on each agent's (X_c, y_c), labels
    0/1 or -1/+1: f_c(x) = (1/n_c) sum_j log(1 + exp(-y_j a_j^T x)) + (l2/2)||x||^2."""

    kind = "logistic"

    def __init__(self, x: Sequence[Any], y: Sequence[Any], intercept: Optional[bool] = None):
        super().__init__(x, y, _intercept(intercept))
        for c, (_, labels) in enumerate(self._data):
            bad = ~np.isin(labels, (-1.0, 0.0, 1.0))
            if bad.any():
                j = int(np.argmax(bad))
                raise ValueError(f"y[{c}][{j}] = {labels[j]}: logistic labels are 0/1 or -1/+1")


class SoftmaxData(_Shards):
    """Multinomial logistic regression with ``classes`` K (labels 0..K-1) on
    each agent's (X_c, y_c), z = (a, 1) unless ``intercept`` is False."""

    kind = "softmax"

    def __init__(self, x: Sequence[Any], y: Sequence[Any], classes: int, intercept: Optional[bool] = None):
        k = positive_int(classes, "classes")
        super().__init__(x, y, {"classes": k, **_intercept(intercept)})
        for c, (_, labels) in enumerate(self._data):
            bad = (labels != np.round(labels)) | (labels < 0) | (labels >= k)
            if bad.any():
                j = int(np.argmax(bad))
                raise ValueError(f"y[{c}][{j}] = {labels[j]}: softmax labels are the integers 0..{k - 1}")


class GmmData(_Shards):
    """A Gaussian mixture with ``components`` G fitted to each agent's points
    (n_c, p) (docs/algorithms.md 1.5); ``init``: G initial means (G, p), default
    k-means++ seeding."""

    kind = "gmm"

    def __init__(self, points: Sequence[Any], components: int, init: Any = None):
        g = positive_int(components, "components")
        super().__init__(points, None, {"components": g})
        if init is not None:
            self._model["init"] = real_array(init, "init", 2, (g, self.features), "components x features").ravel().tolist()


class GaussianMixture(Problem):
    """Generated Gaussian-mixture data (docs/algorithms.md 1.5): each of
    ``agents`` holds ``points`` points in R^``data_dim`` of ``components``
    Gaussians, a share ``own_weight`` from its own component; ``seed`` None
    uses the run's seed."""

    _KEYS = ("components", "data_dim", "points", "own_weight", "separation")

    def __init__(self, agents: int = 20, components: int = 2, data_dim: int = 2, points: int = 500,
                 own_weight: float = 0.9, separation: float = 4.0, seed: Optional[int] = None):
        self.problem = {"kind": "gmm", "agents": positive_int(agents, "agents")}
        if seed is not None:
            self.problem["seed"] = seed_int(seed)
        self.gmm = {"components": positive_int(components, "components"), "data_dim": positive_int(data_dim, "data_dim"),
                    "points": positive_int(points, "points"),
                    "own_weight": real_number(own_weight, "own_weight", 0.0, 1.0),
                    "separation": real_number(separation, "separation", 0.0)}
        self.agents = agents

    def _tables(self):
        return {"problem": dict(self.problem), "gmm": dict(self.gmm)}

    def points(self, seed: int = 1) -> List[np.ndarray]:
        """Every agent's generated points, (points, data_dim) each."""
        from .experiment import load
        return list(_fedrt.gmm_points(load({"run": {"seed": seed}}, problem=self)._native))
