"""Result.to_pandas: a DataFrame of metrics.csv with pandas, a clear
ImportError without it."""

import numpy as np
import pytest

import fedrt


def test_to_pandas():
    res = fedrt.run({"problem": {"agents": 4}, "algorithm": {"local_steps": 5}, "run": {"rounds": 2}})
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="python3-pandas"):
            res.to_pandas()
        return
    df = res.to_pandas()
    assert list(df.columns) == list(res.metrics)
    assert np.array_equal(df["error"].to_numpy(), res.metrics["error"])
