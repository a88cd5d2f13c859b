# The synthetic task of the training tests: Gaussian classes in a few dimensions, one vector per
# utterance, written as Kaldi text archives. Imported by the tests' python snippets:
#   import sys, os; sys.path.insert(0, os.environ["PARNET_TOP"] + "/tests/prog")
#   from gauss import Gauss
#   g = Gauss(seed=7, spread=1.5, dim=8)      # class means drawn with this spread, unit noise
#   g.write("train", g.utts("tr", 1200))       # train.feats.txt, train.labels.txt; keys tr0000...
# Utterance i is of class i % classes; its noise is drawn when utts() makes it, so the vectors a
# seed gives do not depend on how they are split into files afterwards.
import random


class Gauss:
    def __init__(self, seed, spread, dim, classes=3):
        random.seed(seed)
        self.classes = classes
        self.means = [[random.gauss(0, spread) for _ in range(dim)] for _ in range(classes)]

    def utts(self, prefix, n):
        """n (key, vector, class) of keys prefix0000, prefix0001, ..."""
        return [(f"{prefix}{i:04d}", [m + random.gauss(0, 1) for m in self.means[i % self.classes]],
                 i % self.classes) for i in range(n)]

    def write(self, stem, utts):
        """stem.feats.txt and stem.labels.txt (feats.txt and labels.txt when stem is "")"""
        pre = stem + "." if stem else ""
        with open(pre + "feats.txt", "w") as f, open(pre + "labels.txt", "w") as l:
            for key, x, c in utts:
                f.write(f"{key}  [\n  " + " ".join(f"{v:.5f}" for v in x) + " ]\n")
                l.write(f"{key} {c}\n")
