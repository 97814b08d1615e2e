"""Bad settings raise ValueError / TypeError / FileNotFoundError naming what
is wrong; nothing crashes the interpreter."""

import math

import numpy as np
import pytest

import fedrt

SMALL = {"problem": {"agents": 4}, "algorithm": {"local_steps": 5}, "run": {"rounds": 2}}


@pytest.mark.parametrize("overrides, exc, pattern", [
    (dict(rounds=-3), ValueError, "rounds must be positive"),
    (dict(rounds=0), ValueError, "rounds"),
    (dict(step=math.nan), ValueError, "step must be a positive number"),
    (dict(step=-0.1), ValueError, "step"),
    (dict(agents=-2), ValueError, "agents"),
    (dict(participation=1.5), ValueError, "participation"),
    (dict(rounds="ten"), ValueError, r"'run\.rounds' must be an integer"),
    (dict(rounds=2.5), ValueError, r"'run\.rounds' must be an integer"),
    (dict(rounds=None), TypeError, r"run\.rounds is None"),
    (dict(rounds=object()), TypeError, r"run\.rounds has type object"),
    (dict(roundz=3), ValueError, r"unknown setting 'roundz' \(did you mean rounds"),
    (dict(run={"roundz": 3}), ValueError, r"unknown key 'run\.roundz'"),
    (dict(names=["fedlsa", "nope"]), ValueError, "unknown algorithm 'nope'"),
    (dict(rounds=2**70), ValueError, r"run\.rounds = .* does not fit in 64 bits"),
    (dict(agents=10**12), ValueError, r"'problem\.agents' = 1000000000000 is too large \(at most 2147483647\)"),
])
def test_bad_override(overrides, exc, pattern):
    with pytest.raises(exc, match=pattern):
        fedrt.run(SMALL, **overrides)


def test_errors_name_the_python_keyword_not_the_flag():
    with pytest.raises(ValueError) as e:
        fedrt.run(SMALL, rounds=-1)
    assert str(e.value).startswith("rounds must be positive, got -1"), str(e.value)
    with pytest.raises(ValueError) as e:
        fedrt.run(SMALL, local_steps=0)
    assert "local_steps must be positive" in str(e.value) and "--" not in str(e.value), str(e.value)


def test_bad_tables():
    with pytest.raises(ValueError, match="unknown top-level key or table 'runs'"):
        fedrt.load({"runs": {"rounds": 3}})
    with pytest.raises(ValueError, match=r"'run' must be a table"):
        fedrt.load({"run": 3})
    with pytest.raises(TypeError, match="keys must be strings"):
        fedrt.load({"run": {1: 3}})
    with pytest.raises(TypeError, match="experiment must be a TOML file's path or a dict"):
        fedrt.load(42)


def test_shared_keys():
    assert fedrt.load(SMALL, seed=7)  # run.seed, as --seed
    with pytest.raises(ValueError, match="problem.seed"):
        fedrt.load(SMALL, problem={"seed": -1})


def test_clip_is_the_compression_clip_unless_the_experiment_has_a_privacy_clip():
    from fedrt.experiment import _tables_of
    assert _tables_of("clip", SMALL) == ["compression"]  # as --clip
    assert _tables_of("clip", dict(SMALL, privacy={"clip": 1.0})) == ["privacy"]


def test_numpy_values_are_plain_values():
    exp = fedrt.load(SMALL, rounds=np.int64(3), step=np.float64(0.01), names=np.array(["fedlsa"]))
    assert exp.rounds == 3 and exp.algorithms == ["fedlsa"]


def test_missing_and_malformed_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="no-such.toml"):
        fedrt.load(tmp_path / "no-such.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[run]\nrounds = = 3\n")
    with pytest.raises(ValueError, match=r"bad.toml:2"):
        fedrt.load(bad)
    typo = tmp_path / "typo.toml"
    typo.write_text("[run]\nrounds = 3\nrundz = 2\n")
    with pytest.raises(ValueError, match=r"unknown key 'run.rundz' \(line 3\)"):
        fedrt.load(typo)


def test_a_failed_run_leaves_the_module_usable():
    with pytest.raises(FileNotFoundError, match="/nonexistent/bundle.txt"):
        fedrt.run(SMALL, problem={"kind": "file", "file": "/nonexistent/bundle.txt"})
    assert fedrt.run(SMALL).metrics["round"].max() == 2
