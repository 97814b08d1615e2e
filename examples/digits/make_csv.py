#!/usr/bin/env python3
"""Write data/digits.csv from scikit-learn's handwritten digits.

usage: make_csv.py [OUT.csv]   (default: data/digits.csv next to this script)

For regeneration only (the CSV is shipped; no test runs this). Needs Debian's
python3-sklearn (apt-get install -y python3-sklearn), run with /usr/bin/python3.
1797 images of 8x8 pixels, 10 classes; each pixel (0..16) is divided by 16,
so features are in [0, 1]. Columns p0..p63 (row-major pixels), then label.
The data set is scikit-learn's copy of the UCI optical recognition of
handwritten digits test set, distributed under scikit-learn's BSD-3-Clause
licence (see README.md).
"""

import os
import sys

from sklearn.datasets import load_digits


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    out = argv[1] if len(argv) > 1 else os.path.join(here, "data", "digits.csv")
    digits = load_digits()
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    with open(out, "w") as fh:
        fh.write(",".join(["p%d" % i for i in range(64)] + ["label"]) + "\n")
        for pixels, label in zip(digits.data, digits.target):
            fh.write(",".join("%.17g" % (float(v) / 16.0) for v in pixels) + ",%d\n" % label)
    print("%s: %d examples, 64 features, labels 0..9" % (out, len(digits.target)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
