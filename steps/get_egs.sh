#!/usr/bin/env bash
# Copyright: parnet authors. Kaldi-style (steps/nnet2/get_egs.sh): turns a data directory into
# shuffled example archives for parallel training.
#
# Input: <data-dir> with feats.scp (Kaldi features) and labels.scp (int32 vectors, one pdf-id per
# frame), optionally utt2spk; the contract is in --help and README "Bring your own data". Every
# check (the files, frame counts against label counts, the label range against --num-pdfs, the
# subset sizes against the data) is done before any job starts (steps/lib/data-checks.sh).
# Output in <egs-dir>:
#   egs.JOB.ITER.ark            JOB = 1..num_jobs, ITER = 0..iters_per_epoch-1, shuffled
#   valid_diagnostic.egs, train_diagnostic.egs, combine.egs (one labelled frame per example)
#   info/{num_jobs,iters_per_epoch,samples_per_iter,num_frames,feat_dim,left_context,right_context,
#         frames_per_eg}
#   (and num_jobs_nnet, iters_per_epoch, samples_per_iter at the top level, as Kaldi)
#
# The training examples have Kaldi get_egs2.sh's layout: --frames-per-eg consecutive labelled
# frames (default 8) sharing one block of context, so the context is stored once per 8 frames
# instead of once per frame (bytes per labelled frame: docs/BENCHMARKS.md "Speech at scale").
# --samples-per-iter counts labelled frames, so an archive holds what one job trains on in one
# iteration whatever the corpus size (Kaldi's frames_per_iter). Nothing holds the corpus in memory:
# --nj nnet-get-egs jobs each read a share of the utterances in sorted order (their labels read
# forward from a sorted list, "scp,s,cs:") and deal their examples at random over all archives; each
# archive is then shuffled through a buffer of --shuffle-buffer-size examples (nnet-shuffle-egs
# --buffer-size); the validation and training-subset utterances are drawn by reservoir sampling.
# No program's memory grows with the corpus. Everything is drawn from
# --srand: the same inputs and options give byte-identical archives.

# Begin configuration section.
cmd=utils/run.pl
stage=0
left_context=0
right_context=0
samples_per_iter=200000   # labelled frames per job per iteration (per archive)
num_jobs=4                # number of parallel training jobs the archives are cut for
frames_per_eg=8           # labelled frames per training example, sharing their context (Kaldi
                          # get_egs2.sh); at most the longest utterance (1 for one-frame data)
nj=4                      # nnet-get-egs jobs
shuffle_buffer_size=10000 # examples held by each archive's shuffle
num_utts_subset=300       # utterances held out for validation (and as a training subset)
num_frames_diagnostic=4000
num_frames_combine=10000
valid_data_dir=           # if set, validation examples come from this directory instead
compress=8bit             # none | 8bit | 16bit | zlib
feature_transform=meanvar # meanvar | lda | none: normalising transform for train.sh
srand=0
num_pdfs=                 # labels must lie in 0..num_pdfs-1 (default: the output dim of --nnet-config)
nnet_config=              # the network config, for --num-pdfs
# End configuration section.

echo "$0 $*"
# The options as given, recorded in <egs-dir>/info/options (train.sh --realign-times remakes the
# examples with them).
egs_options=$(n=$#; i=0; for a in "$@"; do i=$((i + 1)); [ $i -le $((n - 2)) ] && printf '%q ' "$a"; done)
help_message="Usage: $0 [options] <data-dir> <egs-dir>
e.g.: $0 --num-jobs 2 --samples-per-iter 20000 --nnet-config conf/nnet.config data/train exp/nnet/egs
<data-dir> holds (Kaldi's formats; utils/validate_data_dir.sh --no-text checks a directory):
  feats.scp    <utt> <rxfilename>: a feature matrix per utterance (frames x dim), e.g. from
               steps/make_fbank.sh, steps/make_mfcc.sh or Kaldi's copy-feats
  labels.scp   <utt> <rxfilename>: an int32 vector per utterance, one pdf-id per frame (as many
               labels as the utterance has frames), 0 <= pdf-id < the network's output dim.
               From a Kaldi alignment (transition-ids), e.g.:
                 ali-to-pdf exp/tri3_ali/final.mdl 'ark:gunzip -c exp/tri3_ali/ali.*.gz |' ark,scp:data/train/labels.ark,data/train/labels.scp
               (ali-to-post on top gives Kaldi's posterior form; parnet reads the pdf-ids),
               or from parnet's steps/align.sh, or one class per utterance (utils/csv_to_data.sh)
  utt2spk      (optional) for utils/subset_data_dir.sh and the CMVN scripts
Before any job starts it checks: the keys, frames against labels per utterance, the label range
(against --num-pdfs), the utterances against --num-utts-subset (at most a quarter of them).
Options:
  --cmd <runner>              job runner (default: utils/run.pl)
  --stage <n>                 resume from stage n (default: 0)
  --left-context <n>          frames of left context per example (default: 0)
  --right-context <n>         frames of right context per example (default: 0)
  --samples-per-iter <n>      labelled frames per job per iteration, i.e. per archive
                              (default: 200000)
  --num-jobs <n>              number of training jobs (archives per iteration) (default: 4)
  --frames-per-eg <n>         labelled frames per training example, sharing their context as in
                              Kaldi's get_egs2.sh; cut to the longest utterance (default: 8)
  --nj <n>                    nnet-get-egs jobs over shares of the utterances (default: 4)
  --shuffle-buffer-size <n>   examples each archive's shuffle holds in memory (default: 10000)
  --num-utts-subset <n>       utterances held out for diagnostics (default: 300)
  --valid-data-dir <dir>      take validation examples from this data directory instead
  --compress <mode>           none|8bit|16bit|zlib (default: 8bit). none: floats as given;
                              zlib: lossless (deflated floats); 8bit/16bit: examples of <= 8
                              rows or of several frames in parnet's PQ (a range per input
                              dimension shared by the examples, 255/65535 steps each; 8-bit
                              multi-frame ones coded losslessly), other ones in Kaldi's CM (8bit,
                              per-column ranges) or CM2 (16bit, one range); kaldi: what Kaldi
                              nnet2 writes (CM, or CM2 up to 8 rows), readable by Kaldi in any
                              layout (about 1.7x the bytes of 8bit). nnet-get-egs
                              measures the error per dimension and falls back to a finer mode
                              (warning) when it exceeds 0.1 of a dimension's standard deviation
  --num-pdfs <n>              the network's output dim: a label outside 0..n-1 is an error before
                              any job starts (default: the output dim of --nnet-config; without
                              either, the largest label + 1 is recorded in <egs-dir>/info/num_pdfs)
  --nnet-config <file>        the network config train.sh will get, for --num-pdfs
  --feature-transform <type>  meanvar|lda|none: nnet-get-feature-transform on the training
                              features into <egs-dir>/feature_transform.mat, which train.sh puts
                              in front of the network (lda: on frames spliced with the context,
                              after the config's SpliceComponent) (default: meanvar)"

. "$(dirname "$0")/lib/args.sh"
. steps/lib/data-checks.sh
args_want $# 2
data=$1 dir=$2
set -o pipefail

for f in $data/feats.scp $data/labels.scp; do
    [ ! -f $f ] && echo "$0: no such file $f" && exit 1
done
if [ -n "$valid_data_dir" ]; then
    for f in $valid_data_dir/feats.scp $valid_data_dir/labels.scp; do
        [ ! -f $f ] && echo "$0: no such file $f" && exit 1
    done
fi
if [ -z "$num_pdfs" ] && [ -n "$nnet_config" ]; then
    [ ! -f $nnet_config ] && echo "$0: no such file $nnet_config (--nnet-config)" && exit 1
    num_pdfs=$(nnet_config_output_dim $nnet_config)
    [ -z "$num_pdfs" ] && echo "$0: $nnet_config: no output dim found (no dim= or output-dim= on its last line); give --num-pdfs" && exit 1
fi
if [ -n "$num_pdfs" ] && ! [[ $num_pdfs =~ ^[1-9][0-9]*$ ]]; then
    echo "$0: --num-pdfs '$num_pdfs': expected a number >= 1"; exit 1
fi
ctx="--left-context=$left_context --right-context=$right_context"

# Every check before any job starts (and before the egs directory is made).
if [ $stage -le 0 ]; then
    tmp=$(mktemp) || exit 1
    data_check $data "$num_pdfs" $tmp || { rm -f $tmp; exit 1; }
    read num_utts data_frames min_label max_label < $tmp
    if [ -n "$valid_data_dir" ]; then
        data_check $valid_data_dir "${num_pdfs:-}" $tmp || { rm -f $tmp; exit 1; }
        read n x y m < $tmp
        [ $m -gt $max_label ] && max_label=$m
    fi
    rm -f $tmp
    if [ -z "$valid_data_dir" ] && [ $num_utts -lt $((4 * num_utts_subset)) ]; then
        q=$((num_utts / 4)); [ $q -lt 1 ] && q=1
        echo "$0: $data has $num_utts labelled utterances, too few for --num-utts-subset $num_utts_subset (utterances held out for validation): use at most a quarter of them (--num-utts-subset $q) or give --valid-data-dir"
        exit 1
    fi
    train_utts=$num_utts
    [ -z "$valid_data_dir" ] && train_utts=$((num_utts - num_utts_subset))
    if [ $train_utts -lt $nj ]; then
        echo "$0: $train_utts training utterances, fewer than --nj $nj nnet-get-egs jobs: use --nj $train_utts"; exit 1
    fi
    mkdir -p $dir/info
    echo ${num_pdfs:-$((max_label + 1))} > $dir/info/num_pdfs
fi
mkdir -p $dir/log $dir/info
pdf_opt=
[ -n "$num_pdfs" ] && pdf_opt="--num-pdfs=$num_pdfs"   # nnet-get-egs checks them again

if [ $stage -le 0 ]; then
    echo "$0: choosing validation and training-subset utterances"
    # drawn by reservoir sampling: memory for the lists drawn, not for the corpus
    if [ -n "$valid_data_dir" ]; then
        awk '{print $1}' $valid_data_dir/feats.scp > $dir/valid_uttlist
    else
        awk '{print $1}' $data/feats.scp | utils/sample_lines.pl --srand $srand $num_utts_subset \
            > $dir/valid_uttlist
    fi
    awk '{print $1}' $data/feats.scp | utils/sample_lines.pl --srand $((srand + 1)) \
        --exclude $dir/valid_uttlist $num_utts_subset > $dir/train_subset_uttlist
fi

valid_src=$data
[ -n "$valid_data_dir" ] && valid_src=$valid_data_dir

if [ $stage -le 1 ]; then
    echo "$0: writing diagnostic and combination examples"
    # the subsets' own label lists, so that nnet-get-egs indexes those, not the corpus's
    $cmd $dir/log/create_valid_subset.log \
        utils/filter_scp.pl $dir/valid_uttlist $valid_src/feats.scp \> $dir/valid_feats.scp '&&' \
        utils/filter_scp.pl $dir/valid_uttlist $valid_src/labels.scp \> $dir/valid_labels.scp '&&' \
        nnet-get-egs $ctx $pdf_opt --compress=$compress scp:$dir/valid_feats.scp scp:$dir/valid_labels.scp \
            ark:$dir/valid_all.egs || exit 1
    $cmd $dir/log/create_train_subset.log \
        utils/filter_scp.pl $dir/train_subset_uttlist $data/feats.scp \> $dir/train_subset_feats.scp '&&' \
        utils/filter_scp.pl $dir/train_subset_uttlist $data/labels.scp \> $dir/train_subset_labels.scp '&&' \
        nnet-get-egs $ctx $pdf_opt --compress=$compress scp:$dir/train_subset_feats.scp \
            scp:$dir/train_subset_labels.scp ark:$dir/train_subset_all.egs || exit 1
    $cmd $dir/log/create_diagnostic.log \
        nnet-subset-egs --n=$num_frames_diagnostic --srand=$srand ark:$dir/valid_all.egs \
            ark:$dir/valid_diagnostic.egs '&&' \
        nnet-subset-egs --n=$num_frames_diagnostic --srand=$srand ark:$dir/train_subset_all.egs \
            ark:$dir/train_diagnostic.egs '&&' \
        cat $dir/valid_all.egs $dir/train_subset_all.egs \| \
        nnet-subset-egs --n=$num_frames_combine --srand=$srand ark:- ark:$dir/combine.egs || exit 1
    rm $dir/valid_all.egs $dir/train_subset_all.egs $dir/{valid,train_subset}_{feats,labels}.scp
fi

if [ $stage -le 2 ]; then
    # Count labelled frames: with one label per frame this is the total feature length.
    read num_frames max_len < <(feat-to-len scp:$data/feats.scp ark,t:- 2>/dev/null | \
        awk '{n += $2; if ($2 > m) m = $2} END {print n, m}') && [ -n "$max_len" ] \
        || { echo "$0: feat-to-len failed"; exit 1; }
    feat_dim=$(feat-to-dim scp:$data/feats.scp - 2>/dev/null) || { echo "$0: feat-to-dim failed"; exit 1; }
    if [ $frames_per_eg -gt $max_len ]; then
        echo "$0: the longest utterance has $max_len frames: --frames-per-eg $max_len instead of $frames_per_eg"
        frames_per_eg=$max_len
    fi
    iters_per_epoch=$(awk -v f=$num_frames -v s=$samples_per_iter -v j=$num_jobs \
        'BEGIN { n = int(f / (s * j) + 0.5); if (n < 1) n = 1; print n }')
    echo $num_frames > $dir/info/num_frames
    echo $feat_dim > $dir/info/feat_dim
    echo $left_context > $dir/info/left_context
    echo $right_context > $dir/info/right_context
    echo $num_jobs > $dir/info/num_jobs
    echo $iters_per_epoch > $dir/info/iters_per_epoch
    echo $samples_per_iter > $dir/info/samples_per_iter
    echo $frames_per_eg > $dir/info/frames_per_eg
    echo "$egs_options" > $dir/info/options
    cp $dir/info/num_jobs $dir/num_jobs_nnet
    cp $dir/info/iters_per_epoch $dir/iters_per_epoch
    cp $dir/info/samples_per_iter $dir/samples_per_iter
    echo "$0: $num_frames frames of dimension $feat_dim; $num_jobs jobs x $iters_per_epoch iterations per epoch; $frames_per_eg labelled frames per example"
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

frames_per_eg=$(cat $dir/info/frames_per_eg 2>/dev/null || echo 1)
num_archives=$((num_jobs * iters_per_epoch))

if [ $stage -le 3 ]; then
    echo "$0: making examples of $frames_per_eg frames in $nj jobs, dealt over $num_archives archives"
    # Archive a = 1..num_archives is egs.JOB.ITER.ark with JOB = (a-1) % num_jobs + 1 and
    # ITER = (a-1) / num_jobs; job k writes its share of archive a to egs_orig.k.a.ark.
    # Streaming, as Kaldi's get_egs2.sh: each job reads its utterances in sorted order and their
    # labels forward from the sorted list ("scp,s,cs": one object in memory, no index), so no
    # program holds an index of the corpus. The order carries no bias: nnet-copy-egs deals the examples at random over all
    # archives, and each archive is shuffled below.
    utils/filter_scp.pl --exclude $dir/valid_uttlist $data/feats.scp | \
        LC_ALL=C sort -S 4M -T $dir > $dir/train_feats.scp
    LC_ALL=C sort -S 4M -T $dir $data/labels.scp > $dir/labels.scp
    mkdir -p $dir/split$nj
    for k in $(seq $nj); do
        awk -v k=$k -v n=$nj '(NR - 1) % n == k - 1' $dir/train_feats.scp > $dir/split$nj/feats.$k.scp
    done
    [ -s $dir/split$nj/feats.$nj.scp ] || { echo "$0: fewer training utterances than --nj $nj"; exit 1; }
    orig_list=
    for a in $(seq $num_archives); do orig_list="$orig_list ark:$dir/egs_orig.JOB.$a.ark"; done
    $cmd JOB=1:$nj $dir/log/get_egs.JOB.log \
        nnet-get-egs $ctx $pdf_opt --num-frames=$frames_per_eg --compress=$compress \
            scp:$dir/split$nj/feats.JOB.scp scp,s,cs:$dir/labels.scp ark:- \| \
        nnet-copy-egs --random=true --srand=\$[JOB+$srand] ark:- $orig_list || exit 1
    rm -r $dir/train_feats.scp $dir/labels.scp $dir/split$nj
fi

if [ $stage -le 4 ]; then
    echo "$0: shuffling each archive through a buffer of $shuffle_buffer_size examples"
    pieces=
    for k in $(seq $nj); do pieces="$pieces $dir/egs_orig.$k.JOB.ark"; done
    $cmd JOB=1:$num_archives $dir/log/shuffle.JOB.log \
        cat $pieces \| \
        nnet-shuffle-egs --buffer-size=$shuffle_buffer_size --srand=\$[JOB+$srand] ark:- \
            ark:$dir/egs.\$[\(JOB-1\)%$num_jobs+1].\$[\(JOB-1\)/$num_jobs].ark '&&' \
        rm $pieces || exit 1
fi

echo "$0: finished making examples in $dir"
