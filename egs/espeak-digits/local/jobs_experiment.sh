#!/usr/bin/env bash
# The paper's experiment on speech (Povey et al. 2014; issue 14 item 5): N jobs in {1, 2, 4, 8} x
# {plain SGD, NG-SGD} with parameter averaging at an equal number of samples seen (the same
# epochs; 2 iterations per epoch at every N, each job's archive 1/(2N) of the data), three seeds
# each; frame accuracy and WER on the held-out voices, mean +- s.d. over the seeds, in
# $dir/results.md. Needs run.sh through stage 6 (data, features, the decoder settings chosen on
# the validation utterances, which every model here reuses).
#   egs/espeak-digits/local/jobs_experiment.sh [--jobs "1 2 4 8"] [--seeds "1 2 3"] [--num-epochs 6]
cd "$(dirname "$0")/.."
. ./path.sh

# Begin configuration section.
stage=0
cmd=utils/run.pl
jobs="1 2 4 8"
seeds="1 2 3"
num_epochs=6
minibatch_size=128
ng_lr="--initial-learning-rate 0.008 --final-learning-rate 0.0008"
sgd_lr="--initial-learning-rate 0.002 --final-learning-rate 0.0002"
data=data
exp=exp
dir=exp/jobs_experiment
# End configuration section.
. utils/parse_options.sh || exit 1
set -e -o pipefail
mkdir -p $dir
for f in $data/train_cmvn/feats.scp $data/test_cmvn/feats.scp $exp/nnet/pdf_counts.vec \
         $exp/nnet/decode_valid/best; do
    [ -f $f ] || { echo "$0: no $f: run ./run.sh --stage 0 (through stage 6) first" >&2; exit 1; }
done
read as wip _ < $exp/nnet/decode_valid/best
num_pdfs=$(cat $data/lang/num_pdfs)
frames=$(feat-to-len scp:$data/train_cmvn/feats.scp 2>/dev/null)

if [ $stage -le 0 ]; then
    for n in $jobs; do
        steps/get_egs.sh --cmd "$cmd" --num-jobs $n --left-context 5 --right-context 5 \
            --samples-per-iter $(( (frames + 2 * n - 1) / (2 * n) )) --num-utts-subset 40 \
            $data/train_cmvn $dir/egs$n > $dir/egs$n.log 2>&1
    done
    nnet-get-egs --left-context=5 --right-context=5 scp:$data/test_cmvn/feats.scp \
        scp:$data/test_cmvn/labels.scp ark:$dir/test.egs 2>/dev/null
fi

if [ $stage -le 1 ]; then
    echo "jobs kind seed frame_acc wer seconds" > $dir/runs.txt
    for n in $jobs; do
        for kind in sgd ng; do
            cfg=conf/nnet.config lr=$ng_lr
            [ $kind = sgd ] && cfg=conf/nnet_sgd.config lr=$sgd_lr
            for seed in $seeds; do
                d=$dir/${kind}_n${n}_s$seed
                rm -rf $d
                mkdir -p $d
                sed "s/NUM_PDFS/$num_pdfs/g" $cfg > $d/nnet.config
                t0=$(date +%s)
                acc=failed wer=failed
                if steps/train.sh --cmd "$cmd" --num-jobs $n --num-epochs $num_epochs --srand $seed \
                    --minibatch-size $minibatch_size $lr $dir/egs$n $d/nnet.config $d >$d.log 2>&1; then
                    nnet-compute-prob $d/final.mdl ark:$dir/test.egs 2>$d/compute_prob_test.log >/dev/null
                    acc=$(grep -o 'accuracy is [0-9.]*' $d/compute_prob_test.log | awk '{printf "%.2f", $3 * 100}')
                    nnet-forward --apply-log=true --class-frame-counts=$exp/nnet/pdf_counts.vec \
                        $d/final.mdl scp:$data/test_cmvn/feats.scp ark:- 2>/dev/null | \
                    decode-word-loop --acoustic-scale=$as --word-insertion-penalty=$wip $data/lang \
                        ark:- ark,t:- 2>$d/decode.log | \
                        utils/int2sym.pl -f 2- $data/lang/words.txt > $d/hyp.txt
                    wer=$(compute-wer --text --mode=present ark:$data/test/text ark:$d/hyp.txt \
                        2>/dev/null | awk '/^%WER/ {print $2}')
                fi
                echo "$n $kind $seed $acc $wer $(( $(date +%s) - t0 ))" | tee -a $dir/runs.txt
            done
        done
    done
fi

if [ $stage -le 2 ]; then
    {
        echo "| jobs | update | frame acc % (mean ± s.d.) | WER % (mean ± s.d.) | seeds | wall s per run |"
        echo "|---|---|---|---|---|---|"
        awk 'NR > 1 && $4 != "failed" { k = $1 " " $2; n[k]++; a[k] += $4; aa[k] += $4 * $4;
                 w[k] += $5; ww[k] += $5 * $5; t[k] += $6 }
             END { for (k in n) { split(k, f, " ");
                 sa = n[k] > 1 ? sqrt((aa[k] - a[k] * a[k] / n[k]) / (n[k] - 1)) : 0;
                 sw = n[k] > 1 ? sqrt((ww[k] - w[k] * w[k] / n[k]) / (n[k] - 1)) : 0;
                 printf "| %d | %s | %.2f ± %.2f | %.2f ± %.2f | %d | %.0f |\n", f[1],
                     f[2] == "ng" ? "NG-SGD" : "SGD", a[k] / n[k], sa, w[k] / n[k], sw, n[k],
                     t[k] / n[k] } }' $dir/runs.txt | sort -t'|' -k2,2n -k3,3
    } > $dir/results.md
    cat $dir/results.md
fi
