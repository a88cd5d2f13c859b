#!/usr/bin/env bash
# steps/align.sh (Kaldi's steps/nnet2/align.sh): forced alignment of a data directory's transcripts
# with a trained model: nnet-forward (pseudo-log-likelihoods with the model directory's priors,
# pdf_counts.vec) | align-mapped (the Viterbi path through the transcript's words, lexicon and
# HMMs of <lang-dir>, as decode-word-loop's), in --nj jobs through --cmd. Writes
# <ali-dir>/ali.JOB.{ark,scp}, <ali-dir>/labels.scp (all utterances, sorted: get_egs.sh's
# labels, one pdf-id per frame) and <ali-dir>/num_pdfs. A flat start without any model:
# align-equal (see README "Alignments without Kaldi").
# Begin configuration section.
nj=4
cmd=utils/run.pl
acoustic_scale=1.0
self_loop_prob=0.5
class_frame_counts=   # default: <model-dir>/pdf_counts.vec
model=                # default: <model-dir>/final.mdl
# End configuration section.
echo "$0 $*"
help_message="Usage: $0 [options] <data-dir> <lang-dir> <model-dir> <ali-dir>
e.g.: $0 --nj 4 data/train_cmvn data/lang exp/nnet exp/nnet_ali
<data-dir> needs feats.scp (the features the model was trained on) and text; <model-dir>
final.mdl and pdf_counts.vec (analyze-counts of the training labels).
Options:
  --nj <n>                      jobs (default: 4)
  --cmd <runner>                utils/run.pl | utils/queue.pl | utils/slurm.pl (default: utils/run.pl)
  --acoustic-scale <s>          of the pseudo-log-likelihoods (default: 1.0)
  --self-loop-prob <p>          HMM self-loop probability (default: 0.5)
  --class-frame-counts <file>   priors (default: <model-dir>/pdf_counts.vec)
  --model <file>                the model (default: <model-dir>/final.mdl)"
. "$(dirname "$0")/lib/args.sh"
args_want $# 4
data=$1 lang=$2 srcdir=$3 dir=$4
[ -z "$class_frame_counts" ] && class_frame_counts=$srcdir/pdf_counts.vec
[ -z "$model" ] && model=$srcdir/final.mdl
for f in $data/feats.scp $data/text $lang/words.txt $lang/lexicon.txt $lang/phone_pdfs.txt \
         $model $class_frame_counts; do
    [ -f $f ] || { echo "$0: no such file $f"; exit 1; }
done
mkdir -p $dir/log || exit 1
n=$(wc -l < $data/feats.scp)
[ $nj -gt $n ] && nj=$n
split=$dir/split$nj
rm -rf $split; mkdir -p $split
for j in $(seq $nj); do
    awk -v j=$j -v n=$nj '(NR - 1) % n == j - 1' $data/feats.scp > $split/feats.$j.scp
done
$cmd JOB=1:$nj $dir/log/align.JOB.log \
    nnet-forward --apply-log=true --class-frame-counts=$class_frame_counts $model \
        scp:$split/feats.JOB.scp ark:- \| \
    align-mapped --acoustic-scale=$acoustic_scale --self-loop-prob=$self_loop_prob $lang ark:- \
        ark:$data/text ark,scp:$(cd $dir && pwd)/ali.JOB.ark,$dir/ali.JOB.scp || \
    { echo "$0: alignment failed (logs $dir/log/align.*.log)"; exit 1; }
for j in $(seq $nj); do cat $dir/ali.$j.scp; done | LC_ALL=C sort > $dir/labels.scp
rm -rf $split
got=$(wc -l < $dir/labels.scp)
max=$(awk '{ for (i = 2; i <= NF; i++) if ($i + 1 > m) m = $i + 1 } END { print m }' $lang/phone_pdfs.txt)
echo $max > $dir/num_pdfs
failed=$(cat $dir/log/align.*.log | grep -c "not aligned")
echo "$0: aligned $got of $n utterances of $data ($failed failed: logs $dir/log/align.*.log); labels in $dir/labels.scp"
[ $got -gt 0 ] || exit 1
