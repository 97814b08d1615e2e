#!/usr/bin/env python3
"""Writes the example's shards: 8 devices, 200 points each in R^2, drawn from
three unit-variance Gaussian clusters with device-specific proportions
(non-IID), as shards/device-{id}.csv with a header and no label column.
Standard library only; the fixed seed gives the same files every time."""
import os
import random

MEANS = [(-4.0, 0.0), (2.0, 3.5), (2.0, -3.5)]
DEVICES, POINTS, SEED = 8, 200, 2024


def main():
    rng = random.Random(SEED)
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "shards")
    os.makedirs(out, exist_ok=True)
    for d in range(DEVICES):
        # Each device sees mostly one cluster (its own, d mod 3), some of a second, little of the third.
        own, second = d % 3, (d + 1) % 3
        weights = [0.0, 0.0, 0.0]
        weights[own] = 0.7
        weights[second] = 0.25
        weights[3 - own - second] = 0.05
        with open(os.path.join(out, "device-%d.csv" % d), "w") as f:
            f.write("sensor_a,sensor_b\n")
            for _ in range(POINTS):
                g = rng.choices(range(3), weights)[0]
                x = MEANS[g][0] + rng.gauss(0.0, 1.0)
                y = MEANS[g][1] + rng.gauss(0.0, 1.0)
                f.write("%.6f,%.6f\n" % (x, y))


if __name__ == "__main__":
    main()
