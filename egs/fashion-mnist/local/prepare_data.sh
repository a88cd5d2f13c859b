#!/usr/bin/env bash
# Fashion-MNIST from Debian's dataset-fashion-mnist into Kaldi data directories:
#   data/train (55 000 images), data/valid (5 000, a fixed-seed random subset of the 60 000 training
#   images), data/test (10 000). Each holds feats.scp (1 x 784 matrices, pixels in [0, 1]) and
#   labels.scp (int32 vectors of length 1, the class 0..9).
# Options: --limit N uses only the first N training and N/6 test images (for quick tests;
#          --full-test true keeps all 10 000 test images even then);
#          --shifts K adds K randomly shifted copies (up to 2 pixels) of each training image;
#          --flips true mirrors each of those copies left-right with probability 1/2.
limit=0
full_test=false
shifts=0
flips=false
src=/usr/share/datasets/fashion-mnist
seed=777
. utils/parse_options.sh || exit 1
[ $# -ne 1 ] && echo "Usage: $0 [--limit N] [--shifts K] [--flips true|false] [--src DIR] <data-dir>" && echo "e.g.: $0 data" && exit 1
data=$1
for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz \
         t10k-labels-idx1-ubyte.gz; do
    [ ! -f $src/$f ] && echo "$0: no such file $src/$f (apt-get install dataset-fashion-mnist)" && exit 1
done
valid=5000
test_limit=0
if [ $limit -gt 0 ]; then
    valid=$((limit / 12))
    test_limit=$((limit / 6))
fi
$full_test && test_limit=0
flip_opt=
$flips && flip_opt=--flips
python3 local/idx_to_kaldi.py --limit $limit --valid $valid --seed $seed --shifts $shifts $flip_opt \
    $src/train-images-idx3-ubyte.gz $src/train-labels-idx1-ubyte.gz $data/train $data/valid || exit 1
python3 local/idx_to_kaldi.py --limit $test_limit \
    $src/t10k-images-idx3-ubyte.gz $src/t10k-labels-idx1-ubyte.gz $data/test || exit 1
for d in train valid test; do
    echo "$0: $data/$d: $(wc -l < $data/$d/feats.scp) images"
done
