"""Fixtures of the Python module's tests (run by ctest: tests/python/CMakeLists.txt
sets FEDRT_SIM, FEDRT_SOURCE and PYTHONPATH)."""

import os
import subprocess
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def source() -> Path:
    return Path(os.environ.get("FEDRT_SOURCE", Path(__file__).resolve().parents[2]))


@pytest.fixture(scope="session")
def sim():
    """Runs fedrt-sim with the given arguments into `out` and returns out."""
    binary = os.environ.get("FEDRT_SIM")
    if not binary:
        pytest.skip("FEDRT_SIM is not set (run these tests with ctest)")

    def run(out: Path, *args: str) -> Path:
        subprocess.run([binary, *args, "--out", str(out), "--no-plot", "--log-level", "warn"], check=True,
                       stdout=subprocess.DEVNULL)
        return out

    return run
