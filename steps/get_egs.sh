#!/usr/bin/env bash
# Copyright: parnet authors. Kaldi-style (steps/nnet2/get_egs.sh): turns a data directory into
# shuffled example archives for parallel training.
#
# Input: <data-dir> with feats.scp (Kaldi features) and labels.scp (int32 vectors, one label per
# frame), optionally utt2spk.
# Output in <egs-dir>:
#   egs.JOB.ITER.ark            JOB = 1..num_jobs, ITER = 0..iters_per_epoch-1, shuffled
#   valid_diagnostic.egs, train_diagnostic.egs, combine.egs
#   info/{num_jobs,iters_per_epoch,samples_per_iter,num_frames,feat_dim,left_context,right_context}
#   (and num_jobs_nnet, iters_per_epoch, samples_per_iter at the top level, as Kaldi)

# Begin configuration section.
cmd=utils/run.pl
stage=0
left_context=0
right_context=0
samples_per_iter=200000   # examples per job per iteration
num_jobs=4                # number of parallel training jobs the archives are cut for
num_utts_subset=300       # utterances held out for validation (and as a training subset)
num_frames_diagnostic=4000
num_frames_combine=10000
valid_data_dir=           # if set, validation examples come from this directory instead
compress=8bit             # none | 8bit | 16bit | zlib
feature_transform=meanvar # meanvar | lda | none: normalising transform for train.sh
srand=0
# End configuration section.

echo "$0 $*"
help_message="Usage: $0 [options] <data-dir> <egs-dir>
e.g.: $0 --num-jobs 2 --samples-per-iter 20000 data/train exp/nnet/egs
Options:
  --cmd <runner>              job runner (default: utils/run.pl)
  --stage <n>                 resume from stage n (default: 0)
  --left-context <n>          frames of left context per example (default: 0)
  --right-context <n>         frames of right context per example (default: 0)
  --samples-per-iter <n>      examples per job per iteration (default: 200000)
  --num-jobs <n>              number of training jobs (archives per iteration) (default: 4)
  --num-utts-subset <n>       utterances held out for diagnostics (default: 300)
  --valid-data-dir <dir>      take validation examples from this data directory instead
  --compress <mode>           none|8bit|16bit|zlib (default: 8bit). none: floats as given;
                              zlib: lossless (deflated floats); 8bit/16bit: examples of <= 8
                              rows in parnet's PQ (a range per input dimension shared by the
                              examples, 255/65535 steps each), longer ones in Kaldi's CM (8bit,
                              per-column ranges) or CM2 (16bit, one range). nnet-get-egs
                              measures the error per dimension and falls back to a finer mode
                              (warning) when it exceeds 0.1 of a dimension's standard deviation
  --feature-transform <type>  meanvar|lda|none: nnet-get-feature-transform on the training
                              features into <egs-dir>/feature_transform.mat, which train.sh puts
                              in front of the network (lda: on frames spliced with the context,
                              after the config's SpliceComponent) (default: meanvar)"

[ -f ./path.sh ] && . ./path.sh
. utils/parse_options.sh || exit 1

if [ $# != 2 ]; then
    echo "$help_message" 1>&2
    exit 1
fi
data=$1
dir=$2
set -o pipefail

for f in $data/feats.scp $data/labels.scp; do
    [ ! -f $f ] && echo "$0: no such file $f" && exit 1
done
if [ -n "$valid_data_dir" ]; then
    for f in $valid_data_dir/feats.scp $valid_data_dir/labels.scp; do
        [ ! -f $f ] && echo "$0: no such file $f" && exit 1
    done
fi
mkdir -p $dir/log $dir/info
ctx="--left-context=$left_context --right-context=$right_context"

if [ $stage -le 0 ]; then
    echo "$0: choosing validation and training-subset utterances"
    awk '{print $1}' $data/feats.scp | utils/shuffle_list.pl --srand $srand > $dir/all_utts
    if [ -n "$valid_data_dir" ]; then
        awk '{print $1}' $valid_data_dir/feats.scp > $dir/valid_uttlist
    else
        head -n $num_utts_subset $dir/all_utts > $dir/valid_uttlist
    fi
    grep -v -x -F -f $dir/valid_uttlist $dir/all_utts | head -n $num_utts_subset \
        > $dir/train_subset_uttlist
    rm $dir/all_utts
fi

valid_src=$data
[ -n "$valid_data_dir" ] && valid_src=$valid_data_dir

if [ $stage -le 1 ]; then
    echo "$0: writing diagnostic and combination examples"
    $cmd $dir/log/create_valid_subset.log \
        utils/filter_scp.pl $dir/valid_uttlist $valid_src/feats.scp \> $dir/valid_feats.scp '&&' \
        nnet-get-egs $ctx --compress=$compress scp:$dir/valid_feats.scp scp:$valid_src/labels.scp \
            ark:$dir/valid_all.egs || exit 1
    $cmd $dir/log/create_train_subset.log \
        utils/filter_scp.pl $dir/train_subset_uttlist $data/feats.scp \> $dir/train_subset_feats.scp '&&' \
        nnet-get-egs $ctx --compress=$compress scp:$dir/train_subset_feats.scp scp:$data/labels.scp \
            ark:$dir/train_subset_all.egs || exit 1
    $cmd $dir/log/create_diagnostic.log \
        nnet-subset-egs --n=$num_frames_diagnostic --srand=$srand ark:$dir/valid_all.egs \
            ark:$dir/valid_diagnostic.egs '&&' \
        nnet-subset-egs --n=$num_frames_diagnostic --srand=$srand ark:$dir/train_subset_all.egs \
            ark:$dir/train_diagnostic.egs '&&' \
        cat $dir/valid_all.egs $dir/train_subset_all.egs \| \
        nnet-subset-egs --n=$num_frames_combine --srand=$srand ark:- ark:$dir/combine.egs || exit 1
    rm $dir/valid_all.egs $dir/train_subset_all.egs $dir/valid_feats.scp $dir/train_subset_feats.scp
fi

if [ $stage -le 2 ]; then
    # Count labelled frames: with one label per frame this is the total feature length.
    num_frames=$(feat-to-len scp:$data/feats.scp ark,t:- 2>/dev/null | awk '{n += $2} END {print n}') \
        || { echo "$0: feat-to-len failed"; exit 1; }
    feat_dim=$(feat-to-dim scp:$data/feats.scp - 2>/dev/null) || { echo "$0: feat-to-dim failed"; exit 1; }
    iters_per_epoch=$(awk -v f=$num_frames -v s=$samples_per_iter -v j=$num_jobs \
        'BEGIN { n = int(f / (s * j) + 0.5); if (n < 1) n = 1; print n }')
    echo $num_frames > $dir/info/num_frames
    echo $feat_dim > $dir/info/feat_dim
    echo $left_context > $dir/info/left_context
    echo $right_context > $dir/info/right_context
    echo $num_jobs > $dir/info/num_jobs
    echo $iters_per_epoch > $dir/info/iters_per_epoch
    echo $samples_per_iter > $dir/info/samples_per_iter
    cp $dir/info/num_jobs $dir/num_jobs_nnet
    cp $dir/info/iters_per_epoch $dir/iters_per_epoch
    cp $dir/info/samples_per_iter $dir/samples_per_iter
    echo "$0: $num_frames frames of dimension $feat_dim; $num_jobs jobs x $iters_per_epoch iterations per epoch"
    rm -f $dir/feature_transform.mat
    case $feature_transform in
        none) ;;
        meanvar)
            $cmd $dir/log/feature_transform.log \
                nnet-get-feature-transform scp:$data/feats.scp $dir/feature_transform.mat || exit 1 ;;
        lda)
            $cmd $dir/log/feature_transform.log \
                nnet-get-feature-transform --type=lda $ctx scp:$data/feats.scp scp:$data/labels.scp \
                    $dir/feature_transform.mat || exit 1 ;;
        *) echo "$0: --feature-transform $feature_transform: expected meanvar, lda or none"; exit 1 ;;
    esac
    [ -f $dir/feature_transform.mat ] && echo "$0: wrote $dir/feature_transform.mat ($feature_transform)"
fi
iters_per_epoch=$(cat $dir/info/iters_per_epoch) || exit 1

if [ $stage -le 3 ]; then
    echo "$0: making examples and splitting them among $num_jobs jobs"
    egs_list=
    for j in $(seq $num_jobs); do egs_list="$egs_list ark:$dir/egs_orig.$j.ark"; done
    utils/filter_scp.pl --exclude $dir/valid_uttlist $data/feats.scp > $dir/train_feats.scp
    $cmd $dir/log/get_egs.log \
        nnet-get-egs $ctx --compress=$compress scp:$dir/train_feats.scp scp:$data/labels.scp ark:- \| \
        nnet-copy-egs ark:- $egs_list || exit 1
    rm $dir/train_feats.scp
fi

if [ $stage -le 4 ]; then
    echo "$0: cutting each job's examples into $iters_per_epoch archives and shuffling them"
    iter_list=
    for n in $(seq 0 $((iters_per_epoch - 1))); do iter_list="$iter_list ark:$dir/egs_tmp.JOB.$n.ark"; done
    $cmd JOB=1:$num_jobs $dir/log/split_egs.JOB.log \
        nnet-copy-egs --random=true --srand=JOB ark:$dir/egs_orig.JOB.ark $iter_list || exit 1
    for n in $(seq 0 $((iters_per_epoch - 1))); do
        $cmd JOB=1:$num_jobs $dir/log/shuffle.$n.JOB.log \
            nnet-shuffle-egs --srand=\$[JOB+$num_jobs*$n] ark:$dir/egs_tmp.JOB.$n.ark \
                ark:$dir/egs.JOB.$n.ark '&&' rm $dir/egs_tmp.JOB.$n.ark || exit 1
    done
    rm $dir/egs_orig.*.ark
fi

echo "$0: finished making examples in $dir"
