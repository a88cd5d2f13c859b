#!/usr/bin/env bash
# One data set of tests/prog/robustness_data.py through the user's path with parnet's defaults:
# utils/csv_to_data.sh -> steps/get_egs.sh -> steps/train.sh (a config in the README's shape:
# NaturalGradientAffine + ReLU, zero-initialised output layer) -> nnet-compute-prob on test.csv.
#   robustness_run.sh [--precision fp32|bf16] [--srand N] <csv-dir> <work-dir> [train.sh options]
# --precision: of the layer products in training (nnet-train --precision; default fp32);
# --srand: train.sh's seed (initialisation and example order; default 0, train.sh's own).
# Prints "accuracy=A majority=M" on stdout (test set); exits with train.sh's status.
# Runs from the repository root (steps/, utils/ and bin/ on PATH).
set -o pipefail
precision=fp32 srand=0
while [ $# -gt 0 ]; do
    case $1 in
        --precision) precision=$2; shift 2 ;;
        --srand) srand=$2; shift 2 ;;
        *) break ;;
    esac
done
[ $# -ge 2 ] || { echo "Usage: $0 [--precision fp32|bf16] [--srand N] <csv-dir> <work-dir> [train.sh options]" >&2; exit 1; }
csv=$1 work=$2
shift 2
mkdir -p $work || exit 1
utils/csv_to_data.sh $csv/train.csv $work/data/train >$work/prep.log 2>&1 || exit 1
utils/csv_to_data.sh $csv/test.csv $work/data/test >>$work/prep.log 2>&1 || exit 1
n=$(wc -l < $csv/train.csv)
dim=$(head -n 1 $csv/train.csv | awk -F, '{print NF - 1}')
classes=$(cat $csv/train.csv $csv/test.csv | cut -d, -f1 | sort -n | tail -n 1)
classes=$((classes + 1))
subset=$((n / 10)); [ $subset -gt 300 ] && subset=300
hidden=${HIDDEN:-128}
cat > $work/nnet.config <<CFG
NaturalGradientAffineComponent input-dim=$dim output-dim=$hidden
RectifiedLinearComponent dim=$hidden
NaturalGradientAffineComponent input-dim=$hidden output-dim=$hidden
RectifiedLinearComponent dim=$hidden
NaturalGradientAffineComponent input-dim=$hidden output-dim=$classes param-stddev=0 bias-stddev=0
SoftmaxComponent dim=$classes
CFG
steps/get_egs.sh --num-jobs 2 --num-utts-subset $subset $work/data/train $work/egs \
    >$work/get_egs.log 2>&1 || { echo "robustness_run.sh: get_egs.sh failed ($work/get_egs.log)"; exit 1; }
steps/train.sh --num-jobs 2 --srand $srand --train-opts "--precision=$precision" "$@" $work/egs $work/nnet.config $work/nnet >$work/train.log 2>&1
rc=$?
if [ $rc -eq 0 ]; then
    nnet-get-egs scp:$work/data/test/feats.scp scp:$work/data/test/labels.scp ark:$work/test.egs \
        2>$work/test_egs.log || exit 1
    nnet-compute-prob $work/nnet/final.mdl ark:$work/test.egs 2>$work/test_prob.log >/dev/null || exit 1
    acc=$(grep -o 'accuracy is [0-9.]*' $work/test_prob.log | awk '{print $3}')
else
    acc=none
fi
maj=$(cut -d, -f1 $csv/test.csv | sort | uniq -c | sort -rn | head -n 1 | awk -v n=$(wc -l < $csv/test.csv) '{printf "%.4f", $1 / n}')
echo "accuracy=$acc majority=$maj"
exit $rc
