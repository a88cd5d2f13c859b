#!/usr/bin/env python3
"""Symmetric label noise, as the GAF reference (flip_labels): a fraction of the utterances, drawn
with a fixed seed, get a uniformly chosen WRONG class. Reads Kaldi text int vectors ("key c") on
stdin, writes the noisy ones on stdout and the flipped keys with their true and new classes to
the file given.
Usage: copy-int-vector scp:labels.scp ark,t:- | flip_labels.py --fraction 0.4 --seed 1
           --classes 10 flipped.txt | copy-int-vector ark,t:- ark,scp:noisy.ark,noisy.scp"""
import argparse
import random
import sys

p = argparse.ArgumentParser()
p.add_argument("--fraction", type=float, required=True)
p.add_argument("--seed", type=int, default=1)
p.add_argument("--classes", type=int, default=10)
p.add_argument("flipped")
a = p.parse_args()
if not 0 <= a.fraction < 1:
    sys.exit("flip_labels.py: --fraction must lie in [0, 1)")
rows = [line.split() for line in sys.stdin if line.strip()]
for r in rows:
    if len(r) != 2:
        sys.exit(f"flip_labels.py: expected 'key class', got {' '.join(r)!r}")
rng = random.Random(a.seed)
flip = set(rng.sample(range(len(rows)), int(a.fraction * len(rows))))
with open(a.flipped, "w") as f:
    for i, (key, c) in enumerate(rows):
        c = int(c)
        if i in flip:
            new = rng.choice([k for k in range(a.classes) if k != c])
            f.write(f"{key} {c} {new}\n")
            c = new
        print(f"{key} {c}")
