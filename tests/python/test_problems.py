"""Problems from numpy arrays give the iterates of the same numbers read from
files, and the generators' arrays give the generated problem's iterates."""

import numpy as np
import pytest

import fedrt

LSA = {"algorithm": {"names": ["fedlsa", "scafflsa"], "step": 0.05, "local_steps": 20}, "run": {"rounds": 6, "runs": 2}}


def same_metrics(a, b):
    assert a.metrics.keys() == b.metrics.keys()
    for col in a.metrics:
        assert np.array_equal(a.metrics[col], b.metrics[col], equal_nan=a.metrics[col].dtype.kind == "f"), col
    for alg in a.models:
        assert np.array_equal(a.models[alg], b.models[alg]), alg


def random_system(n=6, d=3, seed=0):
    rng = np.random.default_rng(seed)
    abar = np.stack([np.eye(d) + 0.3 * rng.standard_normal((d, d)) for _ in range(n)])
    return abar, rng.standard_normal((n, d))


def test_garnet_arrays_equal_the_generated_garnet():
    g = fedrt.Garnet(agents=12, heterogeneity="high", seed=4)
    same_metrics(fedrt.run(LSA, problem=g), fedrt.run(LSA, problem=g.td_problem()))


def test_td_arrays_equal_the_bundle_file(source):
    path = source / "tests/data/garnet_low_N100.txt"
    td = fedrt.load_bundle(path)
    assert (td.agents, td.dim, td.states, td.actions) == (100, 8, 30, 2)
    from_file = fedrt.run(LSA, problem={"kind": "file", "file": str(path)})
    same_metrics(from_file, fedrt.run(LSA, problem=td))
    assert np.array_equal(from_file.theta_star, td.theta_star)


@pytest.mark.parametrize("sigma", [0.0, 0.3])
def test_linear_system_arrays_equal_its_bundle_file(tmp_path, sigma):
    abar, bbar = random_system()
    ls = fedrt.LinearSystem(abar, bbar, sigma_a=sigma, sigma_b=sigma / 2)
    path = ls.save(tmp_path / "system.txt")
    again = fedrt.load_bundle(path)
    for k, v in ls.arrays().items():
        assert np.array_equal(v, again.arrays()[k]), k
    same_metrics(fedrt.run(LSA, problem={"kind": "file", "file": path}), fedrt.run(LSA, problem=ls))


def test_noise_free_fedlsa_follows_its_predicted_bias_and_scafflsa_removes_it():
    # Deterministic FedLSA: theta_T - theta* = Gbar^T (theta_0 - theta*) + bias_T exactly
    # (docs/algorithms.md 6); theta_0 = theta* + 1.
    abar, bbar = random_system(n=5, d=4, seed=1)
    ls = fedrt.LinearSystem(abar, bbar)
    eta, H, T = 0.05, 10, 8
    res = fedrt.run(LSA, problem=ls, step=eta, local_steps=H, rounds=T, runs=1, history=True)
    theory = fedrt.theory.fedlsa_bias(ls, eta, H, T)
    gs = [np.linalg.matrix_power(np.eye(4) - eta * a, H) for a in abar]
    gbar = np.mean(gs, axis=0)
    predicted = np.linalg.matrix_power(gbar, T) @ np.ones(4) + theory["after_rounds"]
    got = res.models["fedlsa"][0] - res.theta_star
    assert np.allclose(got, predicted, rtol=1e-9, atol=1e-12)
    assert np.allclose(theory["theta_star"], np.linalg.solve(abar.sum(0), bbar.sum(0)), rtol=1e-12)
    long = fedrt.run(LSA, problem=ls, step=eta, local_steps=H, rounds=400, runs=1)
    assert long.error("scafflsa")[0, -1] < 1e-20  # control variates: the exact solution
    assert long.error("fedlsa")[0, -1] == pytest.approx(np.sum(theory["stationary"] ** 2), rel=1e-6)


def test_linear_system_noise_has_the_stated_variance():
    # One local step of FedLSA from theta_0 = theta* + 1 (H = 1, T = 1): theta_1
    # deviates from the noise-free step by -eta mean_c s_c e_c, s_c^2 =
    # sigma_a^2 ||theta_0||^2 + sigma_b^2, e_c ~ N(0, I): variance eta^2 mean_c(s_c^2) / N
    # per coordinate. 400 runs x 3 coordinates: the sample variance's relative sd
    # is sqrt(2 / 1200) = 4%; the tolerance 15% is 3.7 sd.
    abar, bbar = random_system(n=4, d=3, seed=2)
    sa, sb = np.array([0.5, 1.0, 0.0, 2.0]), np.array([1.0, 0.0, 0.5, 1.5])
    exp = {"algorithm": {"names": ["fedlsa"], "step": 0.1, "local_steps": 1}, "run": {"rounds": 1, "runs": 400}}
    noisy = fedrt.run(exp, problem=fedrt.LinearSystem(abar, bbar, sa, sb)).models["fedlsa"]
    exact = fedrt.run(exp, problem=fedrt.LinearSystem(abar, bbar)).models["fedlsa"]
    assert np.all(exact == exact[0])  # no noise: every run the same
    theta0 = fedrt.LinearSystem(abar, bbar).theta_star + 1.0
    s2 = sa**2 * (theta0 @ theta0) + sb**2
    predicted = 0.1**2 * s2.mean() / 4
    dev = noisy - exact[0]
    assert abs(dev.mean()) < 4 * np.sqrt(predicted / dev.size)
    assert dev.var() == pytest.approx(predicted, rel=0.15)


def lsq_arrays(seed=0, n_agents=4, p=3):
    rng = np.random.default_rng(seed)
    xs = [rng.standard_normal((int(rng.integers(8, 20)), p)) for _ in range(n_agents)]
    truth = rng.standard_normal(p)
    ys = [x @ truth + 0.1 * rng.standard_normal(len(x)) for x in xs]
    return xs, ys


SGD = {"algorithm": {"names": ["fedavg", "scaffold"], "step": 0.05, "local_steps": 5, "batch": 2},
       "run": {"rounds": 5, "runs": 2}}


@pytest.mark.parametrize("kind", ["least_squares", "logistic", "softmax"])
def test_data_arrays_equal_their_csv_shards(tmp_path, kind):
    xs, ys = lsq_arrays()
    if kind == "least_squares":
        data = fedrt.LeastSquaresData(xs, ys, intercept=True)
        model = {"kind": kind, "intercept": True}
    elif kind == "logistic":
        ys = [(y > 0).astype(float) for y in ys]
        data = fedrt.LogisticData(xs, ys)
        model = {"kind": kind, "l2": 0.1}
    else:
        ys = [np.digitize(y, [-0.5, 0.5]).astype(np.int64) for y in ys]
        data = fedrt.SoftmaxData(xs, ys, classes=3)
        model = {"kind": kind, "classes": 3, "l2": 0.1}
    pattern = data.save_csv(tmp_path / "shards")
    files = dict(SGD, data={"format": "csv", "train": pattern}, model=model)
    arrays = dict(SGD, model={"l2": 0.1}) if kind != "least_squares" else SGD
    same_metrics(fedrt.run(files), fedrt.run(arrays, problem=data, l2=0.1) if kind != "least_squares"
                 else fedrt.run(arrays, problem=data))


def test_softmax_without_classes_counts_them_from_the_shards(tmp_path, caplog):
    # The module reads every shard, as the simulator does, so model.classes may be left out (docs/data.md).
    xs, ys = lsq_arrays()
    ys = [np.digitize(y, [-0.5, 0.5]).astype(np.int64) for y in ys]
    assert max(int(y.max()) for y in ys) == 2
    files = dict(SGD, data={"format": "csv", "train": fedrt.SoftmaxData(xs, ys, classes=3).save_csv(tmp_path / "s")})
    with caplog.at_level("INFO", logger="fedrt"):
        counted = fedrt.run(dict(files, model={"kind": "softmax", "l2": 0.1}))
    assert "model.classes = 3: counted from the labels (the largest is 2) of the 4 shards" in caplog.text
    same_metrics(counted, fedrt.run(dict(files, model={"kind": "softmax", "classes": 3, "l2": 0.1})))


def test_gmm_arrays_equal_their_csv_shards(tmp_path):
    mix = fedrt.GaussianMixture(agents=5, points=40, seed=3)
    pts = mix.points()
    assert len(pts) == 5 and all(p.shape == (40, 2) for p in pts)
    data = fedrt.GmmData(pts, components=2)
    pattern = data.save_csv(tmp_path / "gmm")
    exp = {"algorithm": {"names": ["fedem"]}, "run": {"rounds": 5}}
    files = dict(exp, data={"format": "csv", "train": pattern}, model={"kind": "gmm", "components": 2})
    same_metrics(fedrt.run(files), fedrt.run(exp, problem=data))
    generated = fedrt.run(exp, problem=mix)
    assert generated.summary["problem"]["agents"] == 5


def test_a_problem_replaces_the_files_problem(source):
    # The Fig. 1 file's [problem] (100 Garnet agents) gives way to the arrays.
    abar, bbar = random_system(n=3, d=2)
    res = fedrt.run(source / "examples/scafflsa-fig1/experiment.toml", problem=fedrt.LinearSystem(abar, bbar),
                    rounds=3, runs=1, local_steps=5)
    assert res.summary["problem"]["agents"] == 3 and res.models["scafflsa"].shape == (1, 2)


def test_theory_fixed_points_match_numpy():
    xs, ys = lsq_arrays(seed=5)
    a, b = fedrt.theory.least_squares_system(xs, ys)
    eta, s, mu = 0.05, 7, 2.0
    ss = [sum(np.linalg.matrix_power(np.eye(3) - eta * ac, l) for l in range(s)) for ac in a]
    want = np.linalg.solve(np.mean([ac @ sc for ac, sc in zip(a, ss)], 0), np.mean([sc @ bc for sc, bc in zip(ss, b)], 0))
    assert np.allclose(fedrt.theory.fedavg_fixed_point((a, b), eta, s), want, rtol=1e-10)
    ps = [np.linalg.inv(np.eye(3) + ac / mu) for ac in a]
    want = np.linalg.solve(np.eye(3) - np.mean(ps, 0), np.mean([pc @ bc for pc, bc in zip(ps, b)], 0) / mu)
    assert np.allclose(fedrt.theory.fedprox_fixed_point((a, b), mu), want, rtol=1e-10)
    ols = np.linalg.solve(a.mean(0), b.mean(0))
    assert np.allclose(fedrt.theory.fedavg_fixed_point((a, b), eta, 1), ols, rtol=1e-10)
