#!/usr/bin/env bash
# local/realign_experiment.sh: how close training from a flat start with realignment gets to
# training on the synthesizer's alignments (issue 32). One corpus (run.sh stages 0-2), then per
# seed: (synth) run.sh stages 3-7 on the synthesizer's labels; (flat) labels from align-equal,
# train.sh --realign-times 0.5 (realigned with the half-trained model, examples remade), priors
# from the realigned labels, the same decoding. Reports test frame accuracy (against the
# synthesizer's labels), WER, and the agreement of the final training alignment with the
# synthesizer's, per seed, in <exp>/realign_results.txt.
#   local/realign_experiment.sh [--size default] [--seeds "1 2 3"] [--num-epochs 6] <work-dir>
size=default
seeds="1 2 3"
num_epochs=
realign_times=0.5
. utils/parse_options.sh || exit 1
[ $# = 1 ] || { echo "Usage: $0 [--size s] [--seeds \"1 2 3\"] [--num-epochs n] [--realign-times t] <work-dir>" 1>&2; exit 1; }
cd "$(dirname "$0")/.." && . ./path.sh
w=$1; mkdir -p $w; w=$(cd $w && pwd)
set -e -o pipefail
ep=${num_epochs:+--num-epochs $num_epochs}
run=./run.sh
$run --size $size --stop-stage 3 --data $w/data --exp $w/exp --feat-dir $w/fbank > $w/corpus.log 2>&1
# The flat-start data: the same directories, the training labels from align-equal.
mkdir -p $w/flat/train_cmvn
for d in lang test test_cmvn train; do ln -sfn $w/data/$d $w/flat/$d; done
cp $w/data/train_cmvn/{feats.scp,text,utt2spk,spk2utt} $w/flat/train_cmvn/
align-equal $w/data/lang scp:$w/flat/train_cmvn/feats.scp ark:$w/flat/train_cmvn/text \
    ark,scp:$w/flat/train_cmvn/labels.ark,$w/flat/train_cmvn/labels.scp 2>$w/flat/align_equal.log
agree() {   # <labels.scp>: frame agreement with the synthesizer's training labels
    copy-int-vector scp:$1 ark,t:- 2>/dev/null | awk -v ref=$w/data/train/labels.txt '
        BEGIN { while ((getline l < ref) > 0) { n = split(l, f, " "); r[f[1]] = l } }
        { split(r[$1], f, " "); for (i = 2; i <= NF; i++) { t++; c += ($i == f[i]) } }
        END { printf "%.4f", c / t }'
}
echo "kind seed test_frame_acc wer train_ali_agreement" > $w/realign_results.txt
echo "flat 0 - - $(agree $w/flat/train_cmvn/labels.scp)" >> $w/realign_results.txt
$run --size $size --stage 3 --stop-stage 3 --data $w/flat --exp $w/flat_exp --feat-dir $w/fbank > $w/flat_egs.log 2>&1
for s in $seeds; do
    $run --size $size $ep --stage 4 --srand $s --data $w/data --exp $w/exp --feat-dir $w/fbank \
        --dir $w/exp/synth_$s > $w/synth_$s.log 2>&1
    r=$(grep 'held-out voices: frame accuracy' $w/synth_$s.log | sed 's/.*frame accuracy \([0-9.]*\)%.*%WER \([0-9.]*\).*/\1 \2/')
    echo "synth $s $r $(agree $w/data/train_cmvn/labels.scp)" >> $w/realign_results.txt
    $run --size $size $ep --stage 4 --srand $s --data $w/flat --exp $w/flat_exp --feat-dir $w/fbank \
        --dir $w/flat_exp/flat_$s --train-opts "--realign-times $realign_times --realign-data $w/flat/train_cmvn --realign-lang $w/data/lang --realign-nj 2" \
        > $w/flat_$s.log 2>&1
    r=$(grep 'held-out voices: frame accuracy' $w/flat_$s.log | sed 's/.*frame accuracy \([0-9.]*\)%.*%WER \([0-9.]*\).*/\1 \2/')
    echo "flat+realign $s $r $(agree $(cat $w/flat_exp/flat_$s/data_realign_last)/labels.scp)" >> $w/realign_results.txt
    cat $w/realign_results.txt
done
