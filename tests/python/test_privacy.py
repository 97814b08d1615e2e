"""fedrt.privacy: the accountant's answers from Python equal the values of
tests/privacy/rdp_reference.py (60-digit arithmetic), the inverse round-trips,
and bad keywords raise errors that name them."""

import pytest

import fedrt


def test_published_two_phase_example():
    r = fedrt.privacy.epsilon(rate=[1e-5, 1e-4], noise_multiplier=[1.0, 3.0], rounds=[10, 4], delta=1e-5,
                              max_order=32)
    assert r["order_tight"] == 23 and r["order"] == 23
    assert r["epsilon_tight"] == pytest.approx(0.336344063392595, rel=1e-9)
    assert round(r["epsilon_tight"], 3) == 0.336
    assert r["epsilon"] == pytest.approx(0.523318290323845, rel=1e-9)


def test_dp_fedavg_setting_and_inverse():
    r = fedrt.privacy.epsilon(rate=0.01, noise_multiplier=1.0, rounds=1000, delta=1e-5)
    assert (r["epsilon"], r["order"]) == (pytest.approx(2.53834754545892, rel=1e-9), 8)
    for conversion, key in (("classic", "epsilon"), ("tight", "epsilon_tight")):
        sigma = fedrt.privacy.noise_multiplier(epsilon=r[key], rate=0.01, rounds=1000, delta=1e-5,
                                               conversion=conversion)
        assert sigma == pytest.approx(1.0, rel=1e-7)


@pytest.mark.parametrize("call, exc, pattern", [
    (lambda: fedrt.privacy.epsilon(rate=0, noise_multiplier=1.0, rounds=10), ValueError,
     r"rate must be in \(0, 1\], got 0"),
    (lambda: fedrt.privacy.epsilon(rate=0.1, noise_multiplier=-1, rounds=10), ValueError,
     "noise_multiplier must be a finite number >= 0, got -1"),
    (lambda: fedrt.privacy.epsilon(rate=0.1, noise_multiplier=1.0, rounds=0), ValueError,
     "rounds must be at least 1, got 0"),
    (lambda: fedrt.privacy.epsilon(rate=0.1, noise_multiplier=1.0, rounds=2.5), TypeError,
     "rounds must be an integer, got float"),
    (lambda: fedrt.privacy.epsilon(rate=0.1, noise_multiplier=1.0, rounds=10, delta=1.0), ValueError,
     r"delta must be in \(0, 1\), got 1"),
    (lambda: fedrt.privacy.epsilon(rate=[0.1, 0.2], noise_multiplier=1.0, rounds=10), ValueError,
     "one value per phase: got 2, 1 and 1"),
    (lambda: fedrt.privacy.epsilon(rate="high", noise_multiplier=1.0, rounds=10), TypeError,
     "rate must be a number, got str"),
    (lambda: fedrt.privacy.noise_multiplier(epsilon=0, rate=0.1, rounds=10), ValueError,
     "epsilon must be a positive number, got 0"),
    (lambda: fedrt.privacy.noise_multiplier(epsilon=0.01, rate=0.1, rounds=10), ValueError,
     "epsilon 0.01 cannot be reached at delta 1e-05"),
    (lambda: fedrt.privacy.noise_multiplier(epsilon=1.0, rate=0.1, rounds=10, conversion="exact"), ValueError,
     "conversion must be 'classic' or 'tight'"),
])
def test_bad_input_names_the_keyword(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()
