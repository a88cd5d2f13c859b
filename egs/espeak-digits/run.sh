#!/usr/bin/env bash
# espeak-digits: a hybrid acoustic model on speech synthesised here (local/make_corpus.py: digit
# strings and command words spoken by eSpeak NG voices with channel and noise variation; the
# test voices are not in training). Kaldi's shape: data -> log-mel filterbanks -> per-speaker CMVN
# -> examples with +-5 frames of context (the network's Splice) and phone-state targets from the
# synthesizer's alignment -> NG-SGD with parameter averaging (steps/train.sh through --cmd) ->
# final combination -> priors from the training label counts -> pseudo-likelihoods -> Viterbi
# word-loop decoding -> frame accuracy and WER on the held-out voices.
#   egs/espeak-digits/run.sh [--stage N] [--cmd utils/run.pl] [--num-jobs 2] [--size default|tiny|5h]
#                            [--precision fp32|bf16] [--srand N] [--dir exp/nnet]
# Set-up on a fresh machine: tools/install-deps.sh; make -j2 (builds espeak-synth-align).
cd "$(dirname "$0")"
. ./path.sh
. ./cmd.sh

# Begin configuration section.
stage=0
stop_stage=7         # the last stage to run
cmd=$train_cmd       # cmd.sh
nj=2                 # synthesis, feature-extraction and example jobs
num_jobs=2           # training jobs (parameter averaging)
num_epochs=          # default: 6; 3 on the ladder (--size <H>h)
size=default         # default | large (96 training speakers) | tiny (40 utterances, for CI) |
                     # <H>h: the corpus ladder, about H hours of training speech (1h, 5h, 20h),
                     # the same 160 test utterances at every size
seed=0               # of the corpus (stage 0)
srand=0              # of training (steps/train.sh --srand: initialisation and example order)
precision=fp32       # of the layer products in training: bf16 needs AMX or AVX512-BF16 (oneDNN)
samples_per_iter=    # labelled frames per job per iteration; default: 20000, 100000 on the ladder
frames_per_eg=8      # labelled frames per training example (get_egs.sh; 1: one per example)
minibatch_size=128
initial_learning_rate=0.008
final_learning_rate=0.0008
train_opts=          # extra options for steps/train.sh (e.g. "--averaging agreement"; its own
                     # --train-opts there would replace the one that carries --precision)
nnet_config=conf/nnet.config   # or conf/nnet_tdnn.config: a time-delay network (docs/COMPONENTS.md)
acoustic_scales="0.05 0.1 0.2"     # decoder settings tried on the validation utterances
word_insertion_penalties="0 2 4 6 8"
acoustic_scale=0.1                 # used when stage 6 (tuning) has not run
word_insertion_penalty=0
beam=16
data=data
exp=exp
feat_dir=fbank      # feature and label archives
dir=                # the model and its decodes (default: $exp/nnet); stages 4-7 only, so that
                    # several trainings can share one corpus and one set of examples
model=final          # the model stages 5-7 use: final | avg (final.avg.mdl, train.sh
                     # --average-period) | best (final.best.mdl, train.sh --average-best)
# End configuration section.
help_message="Usage: $0 [options]
e.g.: $0 --stage 0 --cmd utils/run.pl --num-jobs 2
Options:
  --stage <n>          resume at stage n (0 corpus, 1 features, 2 CMVN and labels, 3 examples,
                       4 training, 5 priors, 6 decoder tuning on validation utterances,
                       7 decoding and scoring the test voices) (default: 0)
  --stop-stage <n>     the last stage to run (default: 7)
  --cmd <runner>       utils/run.pl | utils/queue.pl | utils/slurm.pl (default: utils/run.pl)
  --num-jobs <n>       training jobs averaged each iteration (default: 2)
  --num-epochs <n>     (default: 6; 3 with --size <H>h)
  --frames-per-eg <n>  labelled frames per example, sharing their context (default: 8)
  --samples-per-iter <n>  labelled frames per job and iteration (default: 20000; 100000 with
                       --size <H>h, so that an iteration's fixed costs stay small)
  --nj <n>             synthesis, feature and example jobs through --cmd (default: 2)
  --size <s>           default | large (twice the training speakers) | tiny | <H>h: about H
                       hours of training speech, the same test set at every size (default: default)
  --seed <n>           of the corpus synthesis, stage 0 (default: 0)
  --srand <n>          of training, stage 4 (default: 0)
  --precision <p>      fp32 | bf16: of the layer products in training (default: fp32)
  --nnet-config <f>    the network (default: conf/nnet.config; conf/nnet_tdnn.config: a
                       time-delay network). Not --config: parse_options.sh reads that as shell
  --dir <dir>          model and decoding directory (default: \$exp/nnet)
  --model <m>          final | avg | best: decode with final.mdl, the running average
                       final.avg.mdl or the best-N average final.best.mdl (train.sh's
                       --average-period / --average-best in --train-opts) (default: final)
  --acoustic-scales <list>            tried on the validation data (default: \"0.05 0.1 0.2\")
  --word-insertion-penalties <list>   tried on the validation data (default: \"0 2 4 6 8\")"
. utils/parse_options.sh || exit 1
set -e -o pipefail
case $model in final) mdl=final.mdl ;; avg|best) mdl=final.$model.mdl ;;
    *) echo "$0: --model $model: expected final, avg or best"; exit 1 ;; esac
start=$(date +%s)

case $size in
    default) corpus_opts="--num-train-speakers 48 --num-test-speakers 10 --utts-per-speaker 16" ;;
    large) corpus_opts="--num-train-speakers 96 --num-test-speakers 10 --utts-per-speaker 16" ;;
    tiny) corpus_opts="--num-train-speakers 6 --num-test-speakers 2 --utts-per-speaker 5"
          num_utts_subset=6 ;;
    *h) awk -v h="${size%h}" 'BEGIN { exit !(h ~ /^[0-9]+(\.[0-9]+)?$/ && h > 0) }' || \
            { echo "$0: --size $size: expected default, large, tiny or <hours>h" >&2; exit 1; }
        corpus_opts="--train-hours ${size%h} --num-test-speakers 10"
        : ${num_epochs:=3} ${samples_per_iter:=100000} ;;
    *) echo "$0: unknown --size '$size'" >&2; exit 1 ;;
esac
: ${num_utts_subset:=40} ${num_epochs:=6} ${samples_per_iter:=20000}
: ${dir:=$exp/nnet}
egs_dir=$exp/egs
mkdir -p $feat_dir
feat_dir=$(cd $feat_dir && pwd)   # scp files name the archives by absolute path

if [ $stage -le 0 ] && [ $stop_stage -ge 0 ]; then
    echo "$0: stage 0: synthesising the corpus in $data ($size) in $nj jobs"
    rm -rf $data
    mkdir -p $exp/make_corpus
    local/make_corpus.py --part plan $corpus_opts --seed $seed $data 2>$exp/make_corpus/plan.log
    $cmd JOB=1:$nj $exp/make_corpus/synth.JOB.log \
        local/make_corpus.py --part synth --nj $nj --job JOB $data
    local/make_corpus.py --part finish $data 2>$exp/make_corpus/finish.log
    tail -n 1 $exp/make_corpus/finish.log
fi

if [ $stage -le 1 ] && [ $stop_stage -ge 1 ]; then
    echo "$0: stage 1: log-mel filterbank features and per-speaker CMVN statistics"
    for x in train test; do
        utils/validate_data_dir.sh --no-feats --no-spk-sort $data/$x
        steps/make_fbank.sh --nj $nj --cmd "$cmd" --fbank-config conf/fbank.conf \
            $data/$x $exp/make_fbank $feat_dir
        steps/compute_cmvn_stats.sh $data/$x $exp/make_fbank $feat_dir
    done
fi

if [ $stage -le 2 ] && [ $stop_stage -ge 2 ]; then
    echo "$0: stage 2: CMVN-normalised features and phone-state labels"
    for x in train test; do
        mkdir -p $data/${x}_cmvn
        cp $data/$x/{text,utt2spk,spk2utt} $data/${x}_cmvn/
        # utt2spk read forward ("s,cs": feats.scp and utt2spk are sorted, stage 1 validated
        # them), not held: no program's memory grows with the corpus
        $cmd $exp/make_fbank/apply_cmvn_$x.log \
            apply-cmvn --utt2spk=ark,s,cs:$data/$x/utt2spk scp:$data/$x/cmvn.scp \
                scp:$data/$x/feats.scp ark,scp:$feat_dir/fbank_cmvn_$x.ark,$data/${x}_cmvn/feats.scp
        copy-int-vector ark,t:$data/$x/labels.txt \
            ark,scp:$feat_dir/labels_$x.ark,$data/${x}_cmvn/labels.scp 2>$exp/make_fbank/labels_$x.log
        # The labels were cut for the same frames (25 ms, 10 ms shift, snip-edges). An utterance
        # without features (its audio could not be read: compute-fbank-feats warned), without
        # labels, or whose label count differs from its frame count is left out of ${x}_cmvn,
        # named once here; the rest go on.
        d=$data/${x}_cmvn
        feat-to-len scp:$d/feats.scp ark,t:- 2>/dev/null | sort -S 4M > $d/feat_lens
        join -a 1 -a 2 -e none -o 0,1.2,2.2 <(sort -S 4M $data/$x/num_frames) $d/feat_lens | \
            awk -v p="$0" -v x=$x -v out=$d/dropped '
                $2 != $3 { n++; print p ": WARNING: leaving out " x " utterance " $1 ": " \
                    ($3 == "none" ? "no features (unreadable audio?)" : $2 == "none" ? \
                     "no labels" : $2 " labels for " $3 " frames") > "/dev/stderr"; next }
                { print $1 }
                END { printf "%d %d\n", n, NR > out }' > $d/uttlist
        read dropped total < $d/dropped
        if [ $dropped -gt 0 ]; then
            echo "$0: WARNING: left out $dropped of $total $x utterances" >&2
            for f in feats.scp labels.scp text utt2spk; do
                utils/filter_scp.pl $d/uttlist $d/$f > $d/$f.tmp && mv $d/$f.tmp $d/$f
            done
            utils/utt2spk_to_spk2utt.pl $d/utt2spk > $d/spk2utt
        fi
        [ -s $d/uttlist ] || { echo "$0: no usable $x utterances" >&2; exit 1; }
    done
fi

if [ $stage -le 3 ] && [ $stop_stage -ge 3 ]; then
    echo "$0: stage 3: examples with +-5 frames of context"
    steps/get_egs.sh --cmd "$cmd" --nj $nj --num-jobs $num_jobs --samples-per-iter $samples_per_iter \
        --frames-per-eg $frames_per_eg \
        --left-context 5 --right-context 5 --num-utts-subset $num_utts_subset \
        --num-pdfs $(cat $data/lang/num_pdfs) $data/train_cmvn $egs_dir
fi

if [ $stage -le 4 ] && [ $stop_stage -ge 4 ]; then
    echo "$0: stage 4: NG-SGD with $num_jobs jobs and parameter averaging"
    num_pdfs=$(cat $data/lang/num_pdfs)
    mkdir -p $dir
    sed "s/NUM_PDFS/$num_pdfs/g" $nnet_config > $dir/nnet.config
    steps/train.sh --cmd "$cmd" --num-jobs $num_jobs --num-epochs $num_epochs \
        --minibatch-size $minibatch_size --initial-learning-rate $initial_learning_rate \
        --final-learning-rate $final_learning_rate --srand $srand \
        --train-opts "--precision=$precision" $train_opts $egs_dir $dir/nnet.config $dir
fi

if [ $stage -le 5 ] && [ $stop_stage -ge 5 ]; then
    echo "$0: stage 5: priors from the training label counts"
    labels=$data/train_cmvn/labels.scp   # or the last realignment's (train.sh --realign-times)
    [ -f $dir/data_realign_last ] && labels=$(cat $dir/data_realign_last)/labels.scp
    analyze-counts --counts-dim=$(cat $data/lang/num_pdfs) --binary=false \
        scp:$labels $dir/pdf_counts.vec 2>$dir/log/analyze_counts.log
fi

if [ $stage -le 6 ] && [ $stop_stage -ge 6 ]; then
    # The acoustic scale and the word insertion penalty are chosen on the validation utterances
    # (held-out utterances of the training speakers, left out of training by get_egs.sh), then
    # applied to the test voices.
    echo "$0: stage 6: tuning the decoder on the validation utterances"
    vdir=$dir/decode_valid
    mkdir -p $vdir/log
    utils/filter_scp.pl $egs_dir/valid_uttlist $data/train_cmvn/feats.scp > $vdir/feats.scp
    utils/filter_scp.pl $egs_dir/valid_uttlist $data/train/text > $vdir/text
    $cmd $vdir/log/nnet_forward.log \
        nnet-forward --apply-log=true --class-frame-counts=$dir/pdf_counts.vec $dir/$mdl \
            scp:$vdir/feats.scp ark:$vdir/loglikes.ark
    local/score.sh --acoustic-scales "$acoustic_scales" --word-insertion-penalties \
        "$word_insertion_penalties" --beam $beam $vdir/text $data/lang ark:$vdir/loglikes.ark $vdir
    rm $vdir/loglikes.ark
fi

if [ $stage -le 7 ] && [ $stop_stage -ge 7 ]; then
    echo "$0: stage 7: decoding the held-out voices"
    # The setting chosen on the validation utterances: best_wer ends in .../wer_<lmwt>_<penalty>.
    if [ -f $dir/decode_valid/best_wer ]; then
        best=$(awk '{ print $NF }' $dir/decode_valid/best_wer); best=${best##*/wer_}
        acoustic_scale=$(awk -v l=${best%_*} 'BEGIN { printf "%g", 1 / l }')
        word_insertion_penalty=${best##*_}
    fi
    ddir=$dir/decode_test
    mkdir -p $ddir/log
    nnet-get-egs --left-context=5 --right-context=5 scp:$data/test_cmvn/feats.scp \
        scp:$data/test_cmvn/labels.scp ark:$ddir/test.egs 2>$ddir/log/test_egs.log
    nnet-compute-prob $dir/$mdl ark:$ddir/test.egs 2>$ddir/log/compute_prob_test.log >/dev/null
    t0=$(date +%s.%N)
    $cmd $ddir/log/decode.log \
        nnet-forward --apply-log=true --class-frame-counts=$dir/pdf_counts.vec $dir/$mdl \
            scp:$data/test_cmvn/feats.scp ark:- \| \
        decode-word-loop --acoustic-scale=$acoustic_scale --beam=$beam \
            --word-insertion-penalty=$word_insertion_penalty $data/lang ark:- ark,t:$ddir/hyp.int
    t1=$(date +%s.%N)
    # Scored as Kaldi's local/score.sh lays it out: wer_<lmwt>_<penalty> and best_wer.
    lmwt=$(awk -v a=$acoustic_scale 'BEGIN { printf "%.10g", 1 / a }')
    mkdir -p $ddir/scoring
    rm -f $ddir/wer_* $ddir/best_wer
    utils/int2sym.pl -f 2- $data/lang/words.txt $ddir/hyp.int > $ddir/scoring/$lmwt.$word_insertion_penalty.txt
    compute-wer --text --mode=present ark:$data/test/text ark:$ddir/scoring/$lmwt.$word_insertion_penalty.txt \
        > $ddir/wer_${lmwt}_$word_insertion_penalty
    grep -H WER $ddir/wer_* | utils/best_wer.sh > $ddir/best_wer
    acc=$(grep -o 'accuracy is [0-9.]*' $ddir/log/compute_prob_test.log | awk '{print $3}')
    rtf=$(grep -o '(CPU [0-9.e-]*)' $ddir/log/decode.log | tr -d '()' | awk '{print $2}')
    # The real-time factor of the whole decode (the network's forward pass included, wall time)
    # over the audio (10 ms frames), beside the decoder's own.
    audio=$(awk '{ n += $2 } END { print n * 0.01 }' $data/test/num_frames)
    rtf_all=$(awk -v a=$audio -v t0=$t0 -v t1=$t1 'BEGIN { printf "%.3g", (a > 0 ? (t1 - t0) / a : 0) }')
    printf "%s: held-out voices: frame accuracy %.2f%% (%d phone states), %s\n" "$0" \
        "$(echo "$acc * 100" | bc -l)" "$(cat $data/lang/num_pdfs)" "$(sed 's/ [^ ]*$//' $ddir/best_wer)"
    echo "$0: decoding with --acoustic-scale=$acoustic_scale" \
        "--word-insertion-penalty=$word_insertion_penalty: real-time factor $rtf_all (forward pass and" \
        "decoding, wall, $audio s of audio), the decoder's own $rtf (CPU); total $(( $(date +%s) - start )) s"
fi
