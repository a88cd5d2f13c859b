# steps/lib/train-common.sh: the parts steps/train.sh and steps/train_mpi.sh share (sourced after
# option parsing; functions only, nothing runs when it is sourced).

# train_read_egs_info EGS_DIR: checks that get_egs.sh's outputs are there and sets
# iters_per_epoch, egs_jobs, num_jobs (when empty: the jobs the examples were cut for),
# frames_per_eg (1 for directories made before it was recorded), minibatch_egs (examples per
# minibatch: --minibatch-size counts labelled frames, so minibatch_size / frames_per_eg when every
# frame of an example is trained on) and num_iters (= num_epochs x iters_per_epoch). Exits 1 with
# a "$0: ..." message on a problem.
train_read_egs_info() {
    local egs=$1 f
    for f in $egs/info/iters_per_epoch $egs/info/num_jobs $egs/valid_diagnostic.egs \
             $egs/train_diagnostic.egs $egs/combine.egs; do
        [ ! -f $f ] && echo "$0: no such file $f" && exit 1
    done
    iters_per_epoch=$(cat $egs/info/iters_per_epoch)
    egs_jobs=$(cat $egs/info/num_jobs)
    [ -z "$num_jobs" ] && num_jobs=$egs_jobs
    if [ $num_jobs -gt $egs_jobs ]; then
        echo "$0: --num-jobs $num_jobs but the examples in $egs were cut for $egs_jobs jobs"; exit 1
    fi
    frames_per_eg=1
    [ -f $egs/info/frames_per_eg ] && frames_per_eg=$(cat $egs/info/frames_per_eg)
    minibatch_egs=$(( (minibatch_size + frames_per_eg / 2) / frames_per_eg ))
    [ $minibatch_egs -lt 1 ] && minibatch_egs=1
    num_iters=$((num_epochs * iters_per_epoch))
}

# train_combine [METHOD]: DIR/final.mdl from the last max_models_combine models of the run (fewer
# when it is shorter) with nnet-combine (--method=METHOD when given), or, with --combine false, the
# last model itself; a combination of a network with BatchNorm gets its statistics recomputed
# (train_recompute_stats). Uses dir, egs_dir, num_iters, cmd, combine, max_models_combine and
# minibatch_egs. Exits 1 on a failure.
train_combine() {
    local first=$((num_iters - max_models_combine + 1)) models x
    [ $first -lt 1 ] && first=1
    if $combine; then
        models=$(for x in $(seq $first $num_iters); do echo -n "$dir/$x.mdl "; done)
        echo "$0: combining the last $((num_iters - first + 1)) models into final.mdl${1:+ ($1)}"
        $cmd $dir/log/combine.log \
            nnet-combine ${1:+--method=$1} $models ark:$egs_dir/combine.egs $dir/final.mdl || exit 1
        train_recompute_stats "$cmd" $dir/log/recompute_stats.final.log \
            $egs_dir $minibatch_egs $dir/final.mdl || exit 1
    else
        cp $dir/$num_iters.mdl $dir/final.mdl.tmp && mv $dir/final.mdl.tmp $dir/final.mdl
    fi
}

# train_recompute_stats CMD LOG EGS_DIR MINIBATCH MODEL: for a network with BatchNorm, its stored
# statistics recomputed from EGS_DIR/train_diagnostic.egs (nnet-recompute-stats, MINIBATCH
# examples per forward, as in training) and MODEL replaced when that is done; for any other
# network nothing. A combination of models (an average of checkpoints, TWA, nnet-combine) keeps
# averaged or borrowed statistics, not those of the combined network. An empty EGS_DIR: a
# warning for a network with BatchNorm. Returns 1 on a failure.
train_recompute_stats() {
    local cmd=$1 log=$2 egs=$3 mb=$4 mdl=$5
    nnet-info $mdl 2>/dev/null | grep -q '^component .*: BatchNormComponent' || return 0
    if [ -z "$egs" ]; then
        echo "$0: warning: $mdl has BatchNorm, whose stored statistics a combination of models does not recompute: give --egs-dir (nnet-recompute-stats)" 1>&2
        return 0
    fi
    $cmd $log nnet-recompute-stats --minibatch-size=$mb $mdl ark:$egs/train_diagnostic.egs $mdl.tmp &&
        mv $mdl.tmp $mdl
}

# train_cleanup DIR NUM_ITERS KEEP: removes the intermediate models DIR/1.mdl .. DIR/(NUM_ITERS-1).mdl
# except every 10th and the last KEEP (with their block momentum X.bmuf and running average X.avg.mdl), and the replicas (*.rep.mdl).
train_cleanup() {
    local dir=$1 n=$2 keep=$3 x
    echo "$0: removing intermediate models (every 10th and the last are kept)"
    for x in $(seq 1 $((n - 1))); do
        [ $((x % 10)) -ne 0 ] && [ $x -lt $((n - keep + 1)) ] && rm -f $dir/$x.mdl $dir/$x.bmuf $dir/$x.avg.mdl
    done
    rm -f $dir/*.rep.mdl
}

# train_check_transform_fits CONFIG: the feature transform goes in front of CONFIG as a line of its
# own; a graph config (docs/COMPONENTS.md "Residual connections") whose descriptors name `input`
# would read the features around it, so that is refused here with a "$0: ..." message (exit 1).
train_check_transform_fits() {
    if grep -v '^[[:space:]]*#' $1 | grep -Eq '(^|[[:space:]])input=(.*[(,[:space:]])?input([,)[:space:]]|$)'; then
        echo "$0: $1 reads 'input' in an input= descriptor, which would bypass the feature transform put in front of it: put the FixedAffineComponent in the config yourself (with a name, read instead of 'input'), or pass --feature-transform none"
        exit 1
    fi
}
