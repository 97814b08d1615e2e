"""The base of fedrt's problem objects (fedrt.problems), apart from them so
that fedrt.experiment can recognise a problem without importing
fedrt.problems, which builds generated instances through fedrt.experiment.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

import numpy as np

ARRAYS_NAME = "numpy arrays"


class Problem:
    """Base of the problems; subclasses say which tables and arrays they stand for."""

    def _tables(self) -> Dict[str, Dict[str, Any]]:
        raise NotImplementedError

    def _bundle(self) -> Optional[Dict[str, np.ndarray]]:
        return None

    def _shards(self) -> Optional[list]:
        return None
