# steps/lib/make-feats.sh: steps/make_fbank.sh and steps/make_mfcc.sh but for their configuration
# section (sourced without arguments after it, with kind=fbank|mfcc; the program is
# compute-<kind>-feats, its options --<kind>-config): the usage, the options, and Kaldi's layout
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
    for j in $(seq $nj); do cat $featdir/raw_${kind}_$name.$j.scp; done | LC_ALL=C sort -S 4M > $data/feats.scp
    rm -rf $split $data/.backup_feats.scp
    local got=$(wc -l < $data/feats.scp)
    [ $got -lt $n ] && echo "$0: WARNING: $((n - got)) of $n recordings gave no features (the logs $logdir/make_${kind}_$name.*.log say why); utils/fix_data_dir.sh $data leaves them out"
    echo "$0: Succeeded creating $kind features for $name ($got utterances)"
}

echo "$0 $*"
help_message="Usage: $0 [options] <data-dir> [<log-dir> [<$kind-dir>]]
e.g.: $0 --nj 4 --cmd utils/run.pl data/train exp/make_$kind/train $kind
<log-dir> defaults to <data-dir>/log, <$kind-dir> to <data-dir>/data.
Options:
  --$kind-config <file>   compute-$kind-feats options (default: conf/$kind.conf when it exists)
  --nj <n>                 jobs (default: 4)
  --cmd <runner>           utils/run.pl | utils/queue.pl | utils/slurm.pl (default: utils/run.pl)"
. "$(dirname "$0")/lib/args.sh"
args_want $# 1 3
prog=compute-$kind-feats config_var=${kind}_config
config=${!config_var}
[ -f "$config" ] || { [ "$config" = conf/$kind.conf ] && config=; }
make_feats "$@"
