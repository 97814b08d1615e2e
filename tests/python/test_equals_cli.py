"""fedrt.run gives the CLI's results: metrics.csv byte for byte (written by
Result.save and formatted from Result.metrics), the same final iterates."""

import numpy as np
import pytest

import fedrt

# (experiment file, the CLI flags, the same overrides) small enough for ctest.
CASES = {
    "lsa": ("examples/scafflsa-fig1/experiment.toml", ["--agents", "20", "--local-steps", "50", "--rounds", "8",
                                                       "--runs", "2"],
            dict(agents=20, local_steps=50, rounds=8, runs=2)),
    "sgd": ("examples/fedrr-logistic/experiment-h10.toml", ["--rounds", "6", "--runs", "2"], dict(rounds=6, runs=2)),
    "em": ("examples/fedem-toy/experiment-vr.toml", ["--rounds", "6", "--runs", "2"], dict(rounds=6, runs=2)),
    # Central DP-FedAvg with adaptive clipping (test_seed): the epsilon and clip columns too.
    "dp_adaptive": ("tests/privacy/data/central_lsq_adaptive.toml", [], dict()),
}


def format_metrics(m):
    """metrics.csv's text from Result.metrics (%.17g, as report/outputs.cc)."""
    cols = list(m)
    lines = [",".join(cols)]
    for i in range(len(m["error"])):
        cells = []
        for c in cols:
            v = m[c][i]
            cells.append(str(v) if c == "algorithm" else (f"{v:.17g}" if m[c].dtype.kind == "f" else str(int(v))))
        lines.append(",".join(cells))
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("case", sorted(CASES))
def test_metrics_and_models_equal_the_cli(case, source, sim, tmp_path):
    path, flags, overrides = CASES[case]
    cli = sim(tmp_path / "cli", "--config", str(source / path), "--threads", "2", *flags)
    res = fedrt.run(source / path, threads=2, **overrides)
    res.save(tmp_path / "py", plot=False)
    expected = (cli / "metrics.csv").read_bytes()
    assert (tmp_path / "py" / "metrics.csv").read_bytes() == expected
    assert format_metrics(res.metrics).encode() == expected
    for alg in res.algorithms:
        cli_model = np.load(cli / f"model_{alg}.npy")
        assert cli_model.shape == res.models[alg].shape
        assert np.array_equal(cli_model, res.models[alg])
        assert (tmp_path / "py" / f"model_{alg}.npy").read_bytes() == (cli / f"model_{alg}.npy").read_bytes()


def test_summary_is_summary_json(source, sim, tmp_path):
    import json

    path, flags, overrides = CASES["lsa"]
    cli = sim(tmp_path / "cli", "--config", str(source / path), *flags)
    res = fedrt.run(source / path, **overrides)
    on_disk = json.loads((cli / "summary.json").read_text())
    for alg in res.algorithms:  # everything but the timings
        for key in ("final_error_mean", "final_error_per_run", "predicted_bias_sq", "bits_up", "agent_steps"):
            assert res.summary["algorithms"][alg][key] == on_disk["algorithms"][alg][key]
    assert res.summary["theta_star"] == on_disk["theta_star"]
    assert np.array_equal(res.theta_star, np.array(on_disk["theta_star"]))


def test_a_dict_equals_its_file_and_threads_do_not_matter(source):
    import tomllib

    path = source / "examples/fedavg-fedprox-lsq/experiment.toml"
    with open(path, "rb") as f:
        tables = tomllib.load(f)
    a = fedrt.run(path, rounds=5, runs=1, threads=1)
    b = fedrt.run(tables, run={"rounds": 5, "runs": 1, "threads": 2})
    for col in a.metrics:
        assert np.array_equal(a.metrics[col], b.metrics[col]), col
    assert b.summary["settings"]["threads"] == 2 and a.summary["settings"]["threads"] == 1


def test_history_holds_every_round(source):
    res = fedrt.run(source / CASES["lsa"][0], history=True, **CASES["lsa"][2])
    for alg in res.algorithms:
        runs = res.history[alg]
        assert len(runs) == 2 and runs[0].shape == (9, 8)
        err = ((runs[0] - res.theta_star) ** 2).sum(axis=1)
        assert np.allclose(err, res.error(alg)[0], rtol=1e-12)
        assert np.array_equal(runs[1][-1], res.models[alg][1])
