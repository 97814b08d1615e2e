"""fedrt: federated learning from Python, on the simulator of fedrt-sim.

The same engine, experiments and results as ``./fedrt sim`` (docs/python.md):

    >>> import fedrt
    >>> res = fedrt.run("examples/scafflsa-fig1/experiment.toml", rounds=10, threads=2)
    >>> res.metrics["error"][:3]
    >>> res.summary["algorithms"]["scafflsa"]["final_error_mean"]

An experiment is a TOML file's path or a dict with exactly the file's tables
and keys; keyword arguments override single keys (``rounds=10``) or whole
tables (``algorithm={"step": 0.1}``).
"""

from . import privacy, theory
from .experiment import Experiment, experiment_keys, load
from .problems import (Garnet, GaussianMixture, GmmData, LeastSquaresData, LinearSystem, LogisticData, Problem,
                       SoftmaxData, TdProblem, load_bundle)
from .result import Result, Round, run

__all__ = ["Experiment", "Garnet", "GaussianMixture", "GmmData", "LeastSquaresData", "LinearSystem", "LogisticData",
           "Problem", "Result", "Round", "SoftmaxData", "TdProblem", "experiment_keys", "load", "load_bundle", "privacy",
           "run", "theory"]
