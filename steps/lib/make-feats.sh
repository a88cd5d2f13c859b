# steps/lib/make-feats.sh: what steps/make_fbank.sh and steps/make_mfcc.sh share (sourced after
# their option parsing, with kind=fbank|mfcc and prog=compute-<kind>-feats): Kaldi's layout
#   <data-dir>/wav.scp -> <feat-dir>/raw_<kind>_<name>.JOB.{ark,scp} in --nj jobs through --cmd,
#   logs <log-dir>/make_<kind>_<name>.JOB.log, <data-dir>/feats.scp their union, sorted.
# Utterances whose audio cannot be read are skipped by the program with a warning; they are
# counted here and left for utils/fix_data_dir.sh, as Kaldi does.
make_feats() {
    local data=$1 logdir=${2:-$1/log} featdir=${3:-$1/data} name j
    [ -f $data/wav.scp ] || { echo "$0: no such file $data/wav.scp"; exit 1; }
    [ -f $data/segments ] && { echo "$0: $data/segments: segmented recordings are not supported (one utterance per wav.scp line)"; exit 1; }
    [ -z "$config" ] || [ -f $config ] || { echo "$0: no such file $config"; exit 1; }
    name=$(basename $data)
    mkdir -p $logdir $featdir || exit 1
    featdir=$(cd $featdir && pwd)
    local n=$(wc -l < $data/wav.scp)
    [ $n -ge $nj ] || { echo "$0: $data has $n recordings, fewer than --nj $nj"; exit 1; }
    local split=$data/split_wav$nj
    rm -rf $split; mkdir -p $split
    for j in $(seq $nj); do
        awk -v j=$j -v n=$nj '(NR - 1) % n == j - 1' $data/wav.scp > $split/wav.$j.scp
    done
    [ -f $data/feats.scp ] && mv $data/feats.scp $data/.backup_feats.scp
    local opts=
    [ -n "$config" ] && opts="--config=$config"
    $cmd JOB=1:$nj $logdir/make_${kind}_$name.JOB.log \
        $prog $opts scp:$split/wav.JOB.scp \
            ark,scp:$featdir/raw_${kind}_$name.JOB.ark,$featdir/raw_${kind}_$name.JOB.scp || \
        { echo "$0: $prog failed (logs $logdir/make_${kind}_$name.*.log)"; exit 1; }
    for j in $(seq $nj); do cat $featdir/raw_${kind}_$name.$j.scp; done | LC_ALL=C sort > $data/feats.scp
    rm -rf $split $data/.backup_feats.scp
    local got=$(wc -l < $data/feats.scp)
    [ $got -lt $n ] && echo "$0: WARNING: $((n - got)) of $n recordings gave no features (the logs $logdir/make_${kind}_$name.*.log say why); utils/fix_data_dir.sh $data leaves them out"
    echo "$0: Succeeded creating $kind features for $name ($got utterances)"
}
