#!/usr/bin/env bash
# Example-archive benchmark: archive size and decode speed for each input storage
# (--compress=none|8bit|16bit|zlib) on Fashion-MNIST, against the raw float feature archive, and
# against how fast training consumes examples: nnet-train on 10 000 8-bit examples with the
# egs/fashion-mnist network (when built), and bench/train-proxy.c (the matrix products of one SGD
# step of that network alone, an upper bound on any trainer's speed).
#
# Usage: bench/egs-io.sh [--limit N] [<work-dir>]      (after `make`)
# e.g.:  bench/egs-io.sh /tmp/egs-bench
# Needs Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist). Prints a table; the
# figures in docs/BENCHMARKS.md ("Example archives") come from it.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
export PATH=$top/bin:$PATH
. "$top/tools/blas-env.sh"   # the fast OpenBLAS kernels, as the recipes use
src=${FASHION_MNIST:-/usr/share/datasets/fashion-mnist}
limit=0
if [ "${1:-}" = --limit ]; then limit=$2; shift 2; fi
work=${1:-$(mktemp -d)}
mkdir -p "$work"
for p in nnet-get-egs nnet-egs-info; do
    command -v $p >/dev/null || { echo "$0: $p not built (run make)" >&2; exit 1; }
done

now() { date +%s.%N; }
if [ ! -f "$work/data/feats.scp" ]; then
    python3 "$top/egs/fashion-mnist/local/idx_to_kaldi.py" --limit "$limit" \
        "$src/train-images-idx3-ubyte.gz" "$src/train-labels-idx1-ubyte.gz" "$work/data" >&2
fi
raw=$(stat -c %s "$work/data/feats.ark")
num=$(wc -l <"$work/data/feats.scp")

cc -std=c11 -D_GNU_SOURCE -O2 -I"$top/src" "$top/bench/train-proxy.c" "$top/lib/libparnet.a" \
    -lopenblas -lz -lpthread -lm -o "$work/train-proxy"
train_eps=$("$work/train-proxy" 3 | awk '{print $2}')

printf '%s\n' "Fashion-MNIST train: $num images of 1 x 784; raw float feature archive $raw bytes"
printf '%-6s %12s %9s %11s %12s %13s %14s\n' storage archive-MB vs-float B/value \
    get-egs-s decode-MB/s read+dec-MB/s
for mode in none 8bit 16bit zlib; do
    egs=$work/egs.$mode.ark
    t0=$(now)
    nnet-get-egs --compress=$mode scp:"$work/data/feats.scp" scp:"$work/data/labels.scp" \
        ark:"$egs" 2>"$work/get.$mode.log"
    t1=$(now)
    size=$(stat -c %s "$egs")
    # best of three: the machine may be shared
    best_dec=0 best_wall=0
    for rep in 1 2 3; do
        s0=$(now)
        nnet-egs-info ark:"$egs" >"$work/info.$mode" 2>"$work/info.$mode.log"
        s1=$(now)
        read -r dec wall < <(awk -v w="$(echo "$s1 - $s0" | bc)" \
            '/^input-bytes-decoded/ {b = $2} /^decode-seconds/ {s = $2}
             END {printf "%.1f %.1f\n", b / 1e6 / s, b / 1e6 / w}' "$work/info.$mode")
        best_dec=$(echo "if ($dec > $best_dec) $dec else $best_dec" | bc)
        best_wall=$(echo "if ($wall > $best_wall) $wall else $best_wall" | bc)
    done
    stored=$(awk '/^input-bytes-stored/ {print $2}' "$work/info.$mode")
    values=$(awk '/^input-bytes-decoded/ {print $2 / 4}' "$work/info.$mode")
    printf '%-6s %12.2f %8.2fx %11.3f %12.2f %13.0f %14.0f\n' $mode \
        "$(echo "$size / 1000000" | bc -l)" "$(echo "$raw / $size" | bc -l)" \
        "$(echo "$stored / $values" | bc -l)" \
        "$(echo "$t1 - $t0" | bc)" "$best_dec" "$best_wall"
done
train_mbs=$(echo "$train_eps * 784 * 4 / 1000000" | bc -l)
printf 'trainer proxy: %s examples/s = %.1f MB/s of float input consumed\n' "$train_eps" \
    "$train_mbs"
if command -v nnet-train >/dev/null && command -v nnet-init >/dev/null; then
    nnet-init "$top/egs/fashion-mnist/conf/nnet.config" "$work/0.mdl" 2>/dev/null
    nnet-subset-egs --n=10000 --randomize-order=false ark:"$work/egs.8bit.ark" \
        ark:"$work/sub.ark" 2>/dev/null
    n=$(nnet-egs-info ark:"$work/sub.ark" 2>/dev/null | awk '/^num-examples/ {print $2}')
    t0=$(now)
    nnet-train --minibatch-size=128 "$work/0.mdl" ark:"$work/sub.ark" "$work/1.mdl" 2>"$work/train.log"
    t1=$(now)
    eps=$(echo "$n / ($t1 - $t0)" | bc -l)
    printf 'nnet-train: %.0f examples/s = %.1f MB/s of float input consumed\n' "$eps" \
        "$(echo "$eps * 784 * 4 / 1000000" | bc -l)"
fi
