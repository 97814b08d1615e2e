"""The theory fedrt computes (docs/algorithms.md 6), for any linear system:
FedLSA's heterogeneity bias, and the fixed points of deterministic FedAvg and
exact FedProx on least squares."""

from __future__ import annotations

from typing import Any, Dict, Tuple

import numpy as np

from . import _fedrt
from ._arrays import positive_int, real_array, real_number


def _system(system: Any) -> Tuple[np.ndarray, np.ndarray]:
    """(Abar, bbar) of a LinearSystem, a TdProblem, or a pair of arrays."""
    from .problems import LinearSystem, TdProblem

    if isinstance(system, TdProblem):
        system = system.system()
    if isinstance(system, LinearSystem):
        a = system.arrays()
        return a["abar"], a["bbar"]
    if isinstance(system, tuple) and len(system) == 2:
        a = real_array(system[0], "abar", 3, what="N x d x d")
        return a, real_array(system[1], "bbar", 2, (a.shape[0], a.shape[1]), "N x d")
    raise TypeError(f"system must be a LinearSystem, a TdProblem or a pair (abar, bbar), got {type(system).__name__}")


def fedlsa_bias(system: Any, step: float, local_steps: int, rounds: int) -> Dict[str, np.ndarray]:
    """FedLSA's predicted heterogeneity bias with full participation:
    rho = mean_c (I - G_c)(theta_c - theta_star), G_c = (I - eta Abar_c)^H;
    ``after_rounds`` = sum_{s=1}^T Gbar^{T-s} rho and ``stationary`` =
    (I - Gbar)^{-1} rho, so E[theta_T] - theta_star is about
    Gbar^T (theta_0 - theta_star) + after_rounds. Also ``theta_star``."""
    a, b = _system(system)
    return _fedrt.fedlsa_bias(a, b, real_number(step, "step", 0.0, low_open=True),
                              positive_int(local_steps, "local_steps"), positive_int(rounds, "rounds"))


def least_squares_system(x: Any, y: Any, l2: float = 0.0) -> Tuple[np.ndarray, np.ndarray]:
    """Least squares as a linear system: Abar_c = X_c^T X_c / n_c + l2 I,
    bbar_c = X_c^T y_c / n_c, for per-agent lists ``x``, ``y``."""
    from ._arrays import shards

    data, _ = shards(x, y, "x", "y")
    lam = real_number(l2, "l2", 0.0)
    abar = np.stack([xc.T @ xc / len(yc) + lam * np.eye(xc.shape[1]) for xc, yc in data])
    bbar = np.stack([xc.T @ yc / len(yc) for xc, yc in data])
    return abar, bbar


def fedavg_fixed_point(system: Any, step: float, local_steps: int) -> np.ndarray:
    """The limit of deterministic FedAvg on least squares:
    theta = (mean_c A_c S_c)^{-1} mean_c S_c b_c, S_c = sum_{l<H} (I - eta A_c)^l
    (H = 1 gives x_star)."""
    a, b = _system(system)
    return _fedrt.fedavg_fixed_point(a, b, real_number(step, "step", 0.0, low_open=True),
                                     positive_int(local_steps, "local_steps"))


def fedprox_fixed_point(system: Any, mu: float) -> np.ndarray:
    """The limit of FedProx with exact proximal steps on least squares:
    theta = (I - mean_c P_c)^{-1} (1/mu) mean_c P_c b_c, P_c = (I + A_c / mu)^{-1}."""
    a, b = _system(system)
    return _fedrt.fedprox_fixed_point(a, b, real_number(mu, "mu", 0.0, low_open=True))
