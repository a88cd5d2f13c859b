#!/usr/bin/env bash
# PQ storage (issue 12 item 4; docs/EXPERIMENTS.md "Compression keeps every dimension"): on the
# full-size `scaled` (20 dims on scales 1e-3..1e4, 8 classes) and `pixels` (raw Fashion-MNIST)
# sets of tests/prog/robustness_data.py, nnet-get-egs --compress=8bit|16bit|none|zlib: storage,
# archive bytes, worst per-dimension RMS error / s.d.; then on `scaled` the same float examples
# (one get_egs.sh --compress none) re-stored as PQ8 (nnet-copy-egs --compress=8bit) and as CM3
# (bench/restore-egs.c: one range per example, 8bit before PQ), each trained with train.sh's
# defaults; test accuracy. OLD_BIN=<dir> runs the first part with another build's programs too.
#   bench/pq-storage.sh [work-dir]      (from anywhere, after make)
top=$(cd "$(dirname "$0")/.." && pwd)
W=${1:-/tmp/parnet-pq-storage}
export PATH=$top/bin:$top/utils:$PATH
PY=/usr/bin/python3; [ -x $PY ] || PY=python3
cd $top || exit 1
mkdir -p $W
[ -d $W/csv/scaled ] || $PY tests/prog/robustness_data.py $W/csv scaled pixels >/dev/null || exit 1
for d in scaled pixels; do
    [ -f $W/$d/feats.scp ] || utils/csv_to_data.sh $W/csv/$d/train.csv $W/$d >/dev/null 2>&1 || exit 1
    for who in new ${OLD_BIN:+old}; do
        B=$([ $who = old ] && echo $OLD_BIN || echo $top/bin)
        for c in 8bit 16bit none zlib; do
            a=$W/$d.$who.$c.ark
            $B/nnet-get-egs --compress=$c scp:$W/$d/feats.scp scp:$W/$d/labels.scp ark:$a 2>$a.log
            worst=$(sed -n "s/.*worst RMS error \([^ ]*\) of a dimension.*/\1/p" $a.log | tail -n 1)
            echo "$d $who $c: $($B/nnet-egs-info ark:$a 2>/dev/null | grep '^storage'), $(stat -c %s $a) bytes, worst ${worst:-0}$(grep -q 'would destroy' $a.log && echo ' (after a fallback)')"
        done
    done
done
# training: float, PQ8, CM3 from the same float examples
cc -std=c11 -D_GNU_SOURCE -O2 -I$top/src $top/bench/restore-egs.c $top/lib/libparnet.a \
    -ldnnl -lgomp -lopenblas -lfftw3f -lz -lpthread -lm -o $W/restore-egs 2>/dev/null ||
    cc -std=c11 -D_GNU_SOURCE -O2 -I$top/src $top/bench/restore-egs.c $top/lib/libparnet.a \
        -lopenblas -lfftw3f -lz -lpthread -lm -o $W/restore-egs || exit 1
T=$W/train; rm -rf $T; mkdir -p $T
utils/csv_to_data.sh $W/csv/scaled/train.csv $T/data/train >/dev/null 2>&1 || exit 1
utils/csv_to_data.sh $W/csv/scaled/test.csv $T/data/test >/dev/null 2>&1 || exit 1
cat >$T/nnet.config <<CFG
NaturalGradientAffineComponent input-dim=20 output-dim=128
RectifiedLinearComponent dim=128
NaturalGradientAffineComponent input-dim=128 output-dim=128
RectifiedLinearComponent dim=128
NaturalGradientAffineComponent input-dim=128 output-dim=8 param-stddev=0 bias-stddev=0
SoftmaxComponent dim=8
CFG
steps/get_egs.sh --num-jobs 2 --num-utts-subset 300 --compress none $T/data/train $T/egs-float \
    >$T/get_egs.log 2>&1 || exit 1
nnet-get-egs --compress=none scp:$T/data/test/feats.scp scp:$T/data/test/labels.scp ark:$T/test.egs 2>/dev/null
for v in float pq8 cm3; do
    if [ $v != float ]; then
        cp -r $T/egs-float $T/egs-$v
        for f in $T/egs-float/*.ark $T/egs-float/*.egs; do
            if [ $v = cm3 ]; then $W/restore-egs ark:$f ark:$T/egs-$v/$(basename $f) || exit 1
            else nnet-copy-egs --compress=8bit ark:$f ark:$T/egs-$v/$(basename $f) 2>>$T/copy.log || exit 1; fi
        done
    fi
    steps/train.sh --num-jobs 2 $T/egs-$v $T/nnet.config $T/nnet-$v >$T/train-$v.log 2>&1; rc=$?
    acc=none
    [ $rc = 0 ] && acc=$(nnet-compute-prob $T/nnet-$v/final.mdl ark:$T/test.egs 2>&1 | grep -o 'accuracy is [0-9.]*' | awk '{print $3}')
    echo "scaled trained on $v: train.sh exit $rc, test accuracy $acc; $(nnet-egs-info ark:$T/egs-$v/egs.1.0.ark 2>/dev/null | grep '^storage'), $(stat -c %s $T/egs-$v/egs.1.0.ark) bytes$(grep -ho 'diverged at iteration [0-9]*' $T/train-$v.log | head -n 1 | sed 's/^/, /')"
done
