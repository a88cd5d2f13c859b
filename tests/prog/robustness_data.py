#!/usr/bin/env python3
"""Data sets of different shape and scale for the robustness suite (tests/prog/t0620) and
bench/robustness.sh: each is written as <out>/<name>/{train,test}.csv, label in column 1.

  digits       sklearn's bundled 8x8 digits: 1797 x 64, 10 classes, integer features 0..16
  wine         sklearn's wine: 178 x 13, 3 classes, features from ~0.1 to ~1700
  cancer       sklearn's breast cancer: 569 x 30, 2 classes, features from ~1e-3 to ~4000
  scaled       Gaussian mixture, 20 dims scaled by 1e-3 ... 1e4 (log-spaced), 8 classes
  offset       Gaussian mixture, 16 dims, unit spread around a common offset of 1e4, 6 classes
  classes1000  Gaussian mixture, 32 dims, 1000 classes
  pixels       raw Fashion-MNIST pixels 0..255 (Debian's dataset-fashion-mnist), 784 dims, 10 classes

Usage: robustness_data.py [--small] <out-dir> [name ...]   (--small: fewer rows, for CI)
"""
import gzip, os, sys
import numpy as np

def split(x, y, rng, test_frac=0.25):
    idx = rng.permutation(len(y))
    n_test = int(len(y) * test_frac)
    return x[idx[n_test:]], y[idx[n_test:]], x[idx[:n_test]], y[idx[:n_test]]

def mixture(rng, n, dim, classes, spread=1.0, sep=3.0):
    centres = rng.normal(0, sep, (classes, dim))
    y = rng.integers(0, classes, n)
    x = centres[y] + rng.normal(0, spread, (n, dim))
    return x, y

def make(name, small, rng):
    if name in ("digits", "wine", "cancer"):
        from sklearn import datasets
        d = {"digits": datasets.load_digits, "wine": datasets.load_wine,
             "cancer": datasets.load_breast_cancer}[name]()
        return d.data.astype(np.float64), d.target
    if name == "scaled":
        x, y = mixture(rng, 4000 if small else 30000, 20, 8, sep=1.5)
        return x * np.logspace(-3, 4, 20), y
    if name == "offset":
        x, y = mixture(rng, 3000 if small else 20000, 16, 6, sep=1.0)
        return x + 1e4, y
    if name == "classes1000":
        x, y = mixture(rng, 12000 if small else 40000, 32, 1000, spread=0.5, sep=1.0)
        return x, y
    if name == "pixels":
        src = "/usr/share/datasets/fashion-mnist"
        n = 4000 if small else 20000
        with gzip.open(os.path.join(src, "train-images-idx3-ubyte.gz")) as f:
            x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784)[:n]
        with gzip.open(os.path.join(src, "train-labels-idx1-ubyte.gz")) as f:
            y = np.frombuffer(f.read(), np.uint8, offset=8)[:n]
        return x.astype(np.float64), y.astype(np.int64)
    raise SystemExit("robustness_data.py: unknown data set '%s'" % name)

ALL = ["digits", "wine", "cancer", "scaled", "offset", "classes1000", "pixels"]

def main(argv):
    small = "--small" in argv
    argv = [a for a in argv if a != "--small"]
    if not argv:
        sys.exit(__doc__)
    out, names = argv[0], argv[1:] or ALL
    for name in names:
        rng = np.random.default_rng(12)
        x, y = make(name, small, rng)
        xtr, ytr, xte, yte = split(x, y, rng)
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        for part, xs, ys in (("train", xtr, ytr), ("test", xte, yte)):
            with open(os.path.join(d, part + ".csv"), "w") as f:
                for xi, yi in zip(xs, ys):
                    f.write("%d,%s\n" % (yi, ",".join("%.7g" % v for v in xi)))
        maj = np.bincount(yte).max() / len(yte)
        print("%s: %d train, %d test, %d dims, %d classes, majority %.4f"
              % (name, len(ytr), len(yte), x.shape[1], int(y.max()) + 1, maj))

if __name__ == "__main__":
    main(sys.argv[1:])
