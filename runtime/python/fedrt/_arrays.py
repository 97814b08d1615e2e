"""Checks of numpy arguments: each error names the argument and what is wrong."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

import numpy as np


def real_array(value: Any, name: str, ndim: int, shape: Optional[Sequence[Optional[int]]] = None,
               what: str = "") -> np.ndarray:
    """``value`` as a C-contiguous float64 array of rank ``ndim``; ``shape``
    entries that are not None must match. Raises TypeError for a dtype that is
    not real numbers, ValueError for a wrong shape or a non-finite value."""
    try:
        a = np.asarray(value)
    except Exception as e:  # ragged lists and the like
        raise ValueError(f"{name} is not an array: {e}") from None
    if a.dtype.kind not in "fiu":
        raise TypeError(f"{name} must hold real numbers (float or int), got dtype {a.dtype}")
    if a.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional{' (' + what + ')' if what else ''}, got shape {a.shape}")
    if shape is not None:
        for k, (got, want) in enumerate(zip(a.shape, shape)):
            if want is not None and got != want:
                raise ValueError(f"{name} has shape {a.shape}: dimension {k} must be {want}"
                                 f"{' (' + what + ')' if what else ''}")
    if a.size == 0:
        raise ValueError(f"{name} is empty (shape {a.shape})")
    a = np.ascontiguousarray(a, dtype=np.float64)
    bad = ~np.isfinite(a)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"{name} holds a non-finite value ({a[idx]}) at index {idx if len(idx) > 1 else idx[0]}")
    return a


def positive_int(value: Any, name: str) -> int:
    """A positive integer (numpy integers accepted); TypeError / ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if value <= 0:
        raise ValueError(f"{name} must be positive, got {value}")
    return int(value)


def seed_int(value: Any, name: str = "seed") -> int:
    """A seed: an integer in [0, 2^64)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if not 0 <= value < 2**63:
        raise ValueError(f"{name} must be in [0, 2^63), got {value}")
    return int(value)


def real_number(value: Any, name: str, low: float = -np.inf, high: float = np.inf,
                low_open: bool = False, high_open: bool = False) -> float:
    """A finite real number in the given range; TypeError / ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    x = float(value)
    ok = np.isfinite(x) and (x > low if low_open else x >= low) and (x < high if high_open else x <= high)
    if not ok:
        lo, hi = ("(" if low_open else "[") + f"{low:g}", f"{high:g}" + (")" if high_open else "]")
        raise ValueError(f"{name} must be a finite number in {lo}, {hi}, got {value}")
    return x


def per_agent(value: Any, name: str, agents: int) -> np.ndarray:
    """A scalar or one value per agent, as an array of ``agents`` non-negative numbers."""
    a = np.asarray(value)
    if a.ndim == 0:
        a = np.full(agents, real_number(value, name, low=0.0))
    a = real_array(a, name, 1, (agents,), "one value per agent")
    if (a < 0).any():
        raise ValueError(f"{name} must not be negative (agent {int(np.argmax(a < 0))}: {a[a < 0][0]})")
    return a


def shards(xs: Any, ys: Any, name_x: str, name_y: str) -> Tuple[list, int]:
    """Per-agent examples (a list of 2-D arrays with the same column count) and
    labels (a list of 1-D arrays, one label per example; None: no labels)."""
    if isinstance(xs, np.ndarray) or not isinstance(xs, Sequence) or len(xs) == 0:
        raise TypeError(f"{name_x} must be a non-empty list with one 2-D array per agent")
    out, p = [], None
    if ys is not None and (isinstance(ys, np.ndarray) or not isinstance(ys, Sequence) or len(ys) != len(xs)):
        raise ValueError(f"{name_y} must be a list with one 1-D array per agent ({len(xs)} agents in {name_x})")
    for c, x in enumerate(xs):
        x = real_array(x, f"{name_x}[{c}]", 2, (None, p), "examples x features, the same features for every agent")
        p = x.shape[1]
        y = None
        if ys is not None:
            y = real_array(ys[c], f"{name_y}[{c}]", 1, (x.shape[0],), f"one label per row of {name_x}[{c}]")
        out.append((x, y))
    return out, p
