# Writes the example's four CSV shards (binary labels, 3 features, a covariate
# shift per device): deterministic formulas, no randomness.
import math
for c in range(4):
    with open(f"shards/device-{c}.csv", "w") as f:
        f.write("temperature,vibration,current,label\n")
        for j in range(24 + 4 * c):
            t = round(math.sin(0.9 * j + 1.7 * c) + 0.3 * c, 4)
            v = round(math.cos(1.1 * j - c), 4)
            i = round(math.sin(0.37 * j * j + c), 4)
            y = 1 if t - 0.8 * v + 0.4 * i + 0.3 * math.sin(7.0 * j + c) > 0.2 else 0
            f.write(f"{t},{v},{i},{y}\n")
