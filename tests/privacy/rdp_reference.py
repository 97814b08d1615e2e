#!/usr/bin/env python3
"""The expected values of tests/privacy/rdp_accountant_test.cc, computed
independently of the C++ accountant: A_alpha summed term by term (all
alpha + 1 binomial terms, no rewriting) in 60-digit arithmetic with mpmath
(Debian: python3-mpmath), then both conversions to (epsilon, delta) of
docs/privacy-accounting.md. Prints one line per setting:

    name  classic_epsilon classic_order  tight_epsilon tight_order  [rdp at listed orders]

    python3 tests/privacy/rdp_reference.py
"""
import mpmath as mp

mp.mp.dps = 60


def rdp_step(q, sigma, alpha):
    """RDP at integer order alpha of one Poisson-subsampled Gaussian step."""
    q, sigma = mp.mpf(q), mp.mpf(sigma)
    a = mp.fsum(mp.binomial(alpha, k) * (1 - q) ** (alpha - k) * q ** k * mp.exp(mp.mpf(k * k - k) / (2 * sigma ** 2))
                for k in range(alpha + 1))
    return mp.log(a) / (alpha - 1)


def epsilon(phases, delta, orders):
    delta = mp.mpf(delta)
    best_c, best_t = None, None
    for alpha in orders:
        rdp = mp.fsum(t * rdp_step(q, s, alpha) for q, s, t in phases)
        c = rdp + mp.log(1 / delta) / (alpha - 1)
        t = rdp + mp.log(mp.mpf(alpha - 1) / alpha) - (mp.log(delta) + mp.log(alpha)) / (alpha - 1)
        t = max(t, mp.mpf(0))
        if best_c is None or c < best_c[0]:
            best_c = (c, alpha)
        if best_t is None or t < best_t[0]:
            best_t = (t, alpha)
    return best_c, best_t


SETTINGS = [
    # name, phases (rate, noise multiplier, rounds), delta, orders, orders whose single-step RDP is printed
    ("published", [("1e-5", "1.0", 10), ("1e-4", "3.0", 4)], "1e-5", range(2, 33), [2, 23, 24]),
    ("plain_gaussian", [("1", "2.0", 5)], "1e-5", range(2, 257), [2, 17]),
    ("dp_fedavg", [("0.01", "1.0", 1000)], "1e-5", range(2, 257), [2, 8, 32]),
    ("tiny_sigma", [("0.1", "0.1", 10)], "1e-5", range(2, 257), [2, 256]),
]

if __name__ == "__main__":
    for name, phases, delta, orders, listed in SETTINGS:
        (c, ca), (t, ta) = epsilon(phases, delta, orders)
        q, s, _ = phases[0]
        rdps = " ".join(f"rdp({q},{s},{a})={mp.nstr(rdp_step(q, s, a), 15)}" for a in listed)
        print(f"{name}  {mp.nstr(c, 15)} {ca}  {mp.nstr(t, 15)} {ta}  {rdps}")
