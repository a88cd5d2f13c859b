#!/usr/bin/env python3
"""Convert Fashion-MNIST IDX files (as shipped by Debian's dataset-fashion-mnist) into Kaldi data
directories: feats.ark/feats.scp (one 1 x 784 float matrix per image, pixels scaled to [0, 1]) and
labels.ark/labels.scp (one int32 vector of length 1 per image).

Usage: idx_to_kaldi.py [--limit N] [--valid N] [--seed S] [--shifts K] [--flips] <images.idx.gz> <labels.idx.gz> <out-dir> [<valid-dir>]

With <valid-dir>, a seeded random --valid images (default 5000) go there and the rest to <out-dir>.
--shifts K adds, to <out-dir> only, K copies of each image translated by a seeded random offset of
up to 2 pixels in each direction (keys <key>-s1 .. <key>-sK), a standard augmentation for
Fashion-MNIST; the held-out directory never gets shifted copies. --flips also mirrors each shifted
copy left-right with probability 1/2 (drawn after its shift, so that without --flips the copies are
the same as before the option existed).
The archives are written byte for byte in Kaldi's binary format (layouts in src/io/io.h):
  key SP \\0B "FM " \\x04 int32(rows) \\x04 int32(cols) float32 data
  key SP \\0B \\x04 int32(count) then \\x04 int32 per element (Kaldi's BasicVectorHolder)
and every scp line points just after "key ", as Kaldi's ark,scp writer does.
Files are written under temporary names and renamed when complete.
"""
import array
import gzip
import os
import random
import struct
import sys


def read_idx(path, magic_expected):
    with gzip.open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        sys.exit(f"idx_to_kaldi.py: '{path}': truncated header")
    magic, count = struct.unpack(">ii", data[:8])
    if magic != magic_expected:
        sys.exit(f"idx_to_kaldi.py: '{path}': bad magic {magic:#x}, expected {magic_expected:#x}")
    if magic == 0x803:
        rows, cols = struct.unpack(">ii", data[8:16])
        need = 16 + count * rows * cols
        if len(data) != need:
            sys.exit(f"idx_to_kaldi.py: '{path}': size {len(data)}, expected {need}")
        return count, rows * cols, data[16:]
    if len(data) != 8 + count:
        sys.exit(f"idx_to_kaldi.py: '{path}': size {len(data)}, expected {8 + count}")
    return count, 1, data[8:]


def shifted(pixels, i, dim, dx, dy):
    """Image i (28 x 28 bytes) translated by (dx, dy), zero-filled."""
    side = int(round(dim ** 0.5))
    src = pixels[i * dim:(i + 1) * dim]
    out = bytearray(dim)
    for y in range(side):
        sy = y - dy
        if 0 <= sy < side:
            x0, x1 = max(0, dx), min(side, side + dx)
            out[y * side + x0:y * side + x1] = src[sy * side + x0 - dx:sy * side + x1 - dx]
    return bytes(out)


def mirrored(image, dim):
    """The image (side x side bytes) mirrored left-right."""
    side = int(round(dim ** 0.5))
    return b"".join(image[y * side:(y + 1) * side][::-1] for y in range(side))


def write_dir(out_dir, prefix, indices, pixels, dim, labels, shifts=0, seed=0, flips=False):
    os.makedirs(out_dir, exist_ok=True)
    scale = [b / 255.0 for b in range(256)]
    feats_ark = os.path.join(out_dir, "feats.ark")
    labels_ark = os.path.join(out_dir, "labels.ark")
    feats_scp, labels_scp = [], []
    rng = random.Random(seed + 1)
    items = []
    for i in indices:
        items.append((f"{prefix}-{i:05d}", i, pixels[i * dim:(i + 1) * dim]))
        for k in range(1, shifts + 1):
            dx, dy = 0, 0
            while dx == 0 and dy == 0:
                dx, dy = rng.randint(-2, 2), rng.randint(-2, 2)
            image = shifted(pixels, i, dim, dx, dy)
            if flips and rng.random() < 0.5:
                image = mirrored(image, dim)
            items.append((f"{prefix}-{i:05d}-s{k}", i, image))
    with open(feats_ark + ".tmp", "wb") as fa, open(labels_ark + ".tmp", "wb") as la:
        for name, i, image in items:
            key = name.encode()
            fa.write(key + b" ")
            feats_scp.append(f"{key.decode()} {os.path.abspath(feats_ark)}:{fa.tell()}\n")
            row = array.array("f", (scale[b] for b in image))
            if sys.byteorder != "little":
                row.byteswap()
            fa.write(b"\0BFM \x04" + struct.pack("<i", 1) + b"\x04" + struct.pack("<i", dim))
            fa.write(row.tobytes())
            la.write(key + b" ")
            labels_scp.append(f"{key.decode()} {os.path.abspath(labels_ark)}:{la.tell()}\n")
            la.write(b"\0B\x04" + struct.pack("<i", 1) + b"\x04" + struct.pack("<i", labels[i]))
    os.replace(feats_ark + ".tmp", feats_ark)
    os.replace(labels_ark + ".tmp", labels_ark)
    for name, lines in (("feats.scp", feats_scp), ("labels.scp", labels_scp)):
        path = os.path.join(out_dir, name)
        with open(path + ".tmp", "w") as f:
            f.writelines(lines)
        os.replace(path + ".tmp", path)


def main(argv):
    limit, valid, seed, shifts, flips = 0, 5000, 777, 0, False
    args = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--flips":
            flips = True
            i += 1
            continue
        if a in ("--limit", "--valid", "--seed", "--shifts") and i + 1 < len(argv):
            val = int(argv[i + 1])
            if a == "--limit":
                limit = val
            elif a == "--valid":
                valid = val
            elif a == "--shifts":
                shifts = val
            else:
                seed = val
            i += 2
            continue
        if a.startswith("--"):
            sys.exit(f"idx_to_kaldi.py: unknown option {a}\n{__doc__}")
        args.append(a)
        i += 1
    if len(args) not in (3, 4):
        sys.exit(__doc__)
    images, labels_path, out_dir = args[:3]
    count, dim, pixels = read_idx(images, 0x803)
    lcount, _, labels = read_idx(labels_path, 0x801)
    if lcount != count:
        sys.exit(f"idx_to_kaldi.py: {count} images but {lcount} labels")
    n = min(count, limit) if limit > 0 else count
    prefix = os.path.basename(out_dir.rstrip("/"))
    order = list(range(n))
    if len(args) == 4:
        if valid >= n:
            sys.exit(f"idx_to_kaldi.py: --valid {valid} leaves no training images out of {n}")
        rng = random.Random(seed)
        held = set(rng.sample(order, valid))
        write_dir(args[3], prefix, [k for k in order if k in held], pixels, dim, labels)
        order = [k for k in order if k not in held]
    write_dir(out_dir, prefix, order, pixels, dim, labels, shifts, seed, flips)
    print(f"idx_to_kaldi.py: wrote {len(order) * (1 + shifts)} images to {out_dir}"
          + (f" and {valid} to {args[3]}" if len(args) == 4 else ""), file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
