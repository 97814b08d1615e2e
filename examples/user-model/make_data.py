# Writes the example's shards and the network's initial weights (fixed seed).
# Points uniform in [-1.5, 1.5]^2, label 1 inside the unit circle: no line
# separates the classes, a hidden layer does. Device c holds the points whose
# angle lies in its own 90-degree sector, rotated by 60 degrees per device,
# so the devices see different parts of the plane (covariate shift).
import math
import random

rng = random.Random(7)
DEVICES, POINTS, HIDDEN = 6, 60, 8
for c in range(DEVICES):
    lo = math.radians(60 * c)
    rows = []
    while len(rows) < POINTS:
        x1, x2 = rng.uniform(-1.5, 1.5), rng.uniform(-1.5, 1.5)
        a = (math.atan2(x2, x1) - lo) % (2 * math.pi)
        if a < math.pi / 2:
            rows.append((round(x1, 4), round(x2, 4), 1 if x1 * x1 + x2 * x2 < 1.0 else 0))
    with open(f"shards/device-{c}.csv", "w") as f:
        f.write("x1,x2,label\n")
        for r in rows:
            f.write(f"{r[0]},{r[1]},{r[2]}\n")
# x_0: W1 (HIDDEN x 2) and w2 (HIDDEN) ~ N(0, 0.5^2), biases 0 (layout: model.cc).
init = [round(rng.gauss(0, 0.5), 4) for _ in range(2 * HIDDEN)] + [0.0] * HIDDEN
init += [round(rng.gauss(0, 0.5), 4) for _ in range(HIDDEN)] + [0.0]
print("init = [" + ", ".join(str(v) for v in init) + "]")
