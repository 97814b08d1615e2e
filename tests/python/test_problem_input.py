"""Arrays of the wrong shape or dtype, NaN, negative sizes and bad labels
raise ValueError / TypeError naming the argument."""

import numpy as np
import pytest

import fedrt

A = np.stack([np.eye(2)] * 3)
B = np.ones((3, 2))


@pytest.mark.parametrize("make, exc, pattern", [
    (lambda: fedrt.LinearSystem(np.ones((3, 2)), B), ValueError, "abar must be 3-dimensional"),
    (lambda: fedrt.LinearSystem(np.ones((3, 2, 3)), B), ValueError, "abar .* must be square"),
    (lambda: fedrt.LinearSystem(A, np.ones((2, 2))), ValueError, r"bbar has shape \(2, 2\): dimension 0 must be 3"),
    (lambda: fedrt.LinearSystem(A.astype(complex), B), TypeError, "abar must hold real numbers"),
    (lambda: fedrt.LinearSystem(A > 0, B), TypeError, "abar must hold real numbers"),
    (lambda: fedrt.LinearSystem([["a"]], B), TypeError, "abar must hold real numbers"),
    (lambda: fedrt.LinearSystem(A, np.where(B > 0, np.nan, B)), ValueError, r"bbar holds a non-finite value \(nan\) at index \(0, 0\)"),
    (lambda: fedrt.LinearSystem(A, B, sigma_a=-1), ValueError, "sigma_a must be a finite number"),
    (lambda: fedrt.LinearSystem(A, B, sigma_b=[1, 2]), ValueError, r"sigma_b has shape \(2,\)"),
    (lambda: fedrt.LinearSystem(A, B, sigma_b=[1, -2, 0]), ValueError, "sigma_b must not be negative"),
    (lambda: fedrt.Garnet(agents=-5), ValueError, "agents must be positive"),
    (lambda: fedrt.Garnet(dim=0), ValueError, "dim must be positive"),
    (lambda: fedrt.Garnet(states=2.5), TypeError, "states must be an integer"),
    (lambda: fedrt.Garnet(gamma=1.0), ValueError, "gamma must be a finite number in"),
    (lambda: fedrt.Garnet(heterogeneity="medium"), ValueError, "heterogeneity must be"),
    (lambda: fedrt.Garnet(seed=-1), ValueError, "seed must be in"),
    (lambda: fedrt.GaussianMixture(points=-3), ValueError, "points must be positive"),
    (lambda: fedrt.GaussianMixture(own_weight=1.5), ValueError, "own_weight"),
    (lambda: fedrt.LeastSquaresData(np.ones((4, 2)), [np.ones(4)]), TypeError, "x must be a non-empty list"),
    (lambda: fedrt.LeastSquaresData([np.ones((4, 2))], [np.ones(3)]), ValueError, r"y\[0\] has shape \(3,\)"),
    (lambda: fedrt.LeastSquaresData([np.ones((4, 2)), np.ones((4, 3))], [np.ones(4)] * 2), ValueError,
     r"x\[1\] has shape \(4, 3\): dimension 1 must be 2"),
    (lambda: fedrt.LeastSquaresData([np.ones((4, 2))], [np.ones(4)] * 2), ValueError, "one 1-D array per agent"),
    (lambda: fedrt.LeastSquaresData([np.full((4, 2), np.inf)], [np.ones(4)]), ValueError, r"x\[0\] holds a non-finite"),
    (lambda: fedrt.LeastSquaresData([np.ones((0, 2))], [np.ones(0)]), ValueError, r"x\[0\] is empty"),
    (lambda: fedrt.LeastSquaresData([np.ones((4, 2))], [np.ones(4)], intercept=1), TypeError, "intercept must be"),
    (lambda: fedrt.LogisticData([np.ones((2, 2))], [np.array([0.0, 2.0])]), ValueError, r"y\[0\]\[1\] = 2.0: logistic"),
    (lambda: fedrt.SoftmaxData([np.ones((2, 2))], [np.array([0, 3])], classes=3), ValueError, r"y\[0\]\[1\] = 3.0"),
    (lambda: fedrt.SoftmaxData([np.ones((2, 2))], [np.array([0, 1])], classes=-3), ValueError, "classes must be positive"),
    (lambda: fedrt.GmmData([np.ones((5, 2))], components=2, init=np.ones((3, 2))), ValueError, r"init has shape \(3, 2\)"),
    (lambda: fedrt.theory.fedlsa_bias((A, B), -0.1, 10, 5), ValueError, "step must be"),
    (lambda: fedrt.theory.fedlsa_bias("A", 0.1, 10, 5), TypeError, "system must be"),
    (lambda: fedrt.run({}, problem=42), TypeError, "problem must be a fedrt problem"),
])
def test_bad_problem_input(make, exc, pattern):
    with pytest.raises(exc, match=pattern):
        make()


def test_singular_system_is_a_value_error():
    with pytest.raises(ValueError, match="singular"):
        fedrt.run({"run": {"rounds": 1}}, problem=fedrt.LinearSystem(np.zeros((2, 2, 2)), np.ones((2, 2))))


def test_bad_bundle_file(tmp_path):
    bad = tmp_path / "b.txt"
    bad.write_text("abar 3 1 2 2\n1 0 0 nan\nbbar 2 1 2\n1 1\n")
    with pytest.raises(ValueError, match="non-finite"):
        fedrt.load_bundle(bad)
    with pytest.raises(FileNotFoundError):
        fedrt.load_bundle(tmp_path / "none.txt")
