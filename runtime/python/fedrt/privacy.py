"""The privacy accountant (docs/privacy-accounting.md): Renyi differential privacy of the
Poisson-subsampled Gaussian mechanism at integer orders 2..max_order,
converted to (epsilon, delta), and the noise multiplier for a target epsilon.
Keywords are named as the experiment's [privacy] keys; errors name them.

    >>> fedrt.privacy.epsilon(rate=0.01, noise_multiplier=1.0, rounds=1000, delta=1e-5)["epsilon"]
    >>> fedrt.privacy.noise_multiplier(epsilon=2.0, rate=0.01, rounds=1000, delta=1e-5)
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence, Union

import numpy as np

from . import _fedrt
from ._arrays import real_number

Number = Union[int, float]


def _int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    return int(value)


def _rounds(value: Any) -> int:
    r = _int(value, "rounds")
    if r < 1:
        raise ValueError(f"rounds must be at least 1, got {r}")
    return r


def _max_order(value: Any) -> int:
    m = _int(value, "max_order")
    if not 2 <= m <= 4096:
        raise ValueError(f"max_order must be in [2, 4096], got {m}")
    return m


def _phases(value: Any) -> List[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def epsilon(rate: Union[Number, Sequence[Number]], noise_multiplier: Union[Number, Sequence[Number]],
            rounds: Union[int, Sequence[int]], delta: float = 1e-5, max_order: int = 256) -> Dict[str, Any]:
    """(epsilon, delta) after ``rounds`` rounds at sampling ``rate`` with
    ``noise_multiplier`` (the sum's noise std over the clip norm). Lists of
    equal length describe phases run one after the other. Returns
    ``epsilon`` and ``order`` (classic conversion) and ``epsilon_tight`` and
    ``order_tight`` (the tighter conversion, never above it)."""
    rates, sigmas, counts = _phases(rate), _phases(noise_multiplier), _phases(rounds)
    if not (len(rates) == len(sigmas) == len(counts)):
        raise ValueError(f"rate, noise_multiplier and rounds need one value per phase: got {len(rates)}, "
                         f"{len(sigmas)} and {len(counts)}")
    rates = [real_number(r, "rate") for r in rates]
    sigmas = [real_number(s, "noise_multiplier") for s in sigmas]
    counts = [_rounds(t) for t in counts]
    return _fedrt.privacy_epsilon(rates, sigmas, counts, real_number(delta, "delta"), _max_order(max_order))


def noise_multiplier(epsilon: float, rate: float, rounds: int, delta: float = 1e-5, conversion: str = "classic",
                     max_order: int = 256) -> float:
    """The smallest noise multiplier whose epsilon after ``rounds`` rounds at
    ``rate`` is at most ``epsilon`` at ``delta`` (``conversion``: "classic"
    or "tight"). ValueError when no noise reaches that epsilon."""
    if conversion not in ("classic", "tight"):
        raise ValueError(f"conversion must be 'classic' or 'tight', got {conversion!r}")
    return _fedrt.privacy_noise_multiplier(real_number(epsilon, "epsilon"), real_number(rate, "rate"),
                                           _rounds(rounds), real_number(delta, "delta"), conversion == "tight",
                                           _max_order(max_order))
