#!/usr/bin/env bash
# Training with frequent averaging over MPI (local SGD, as Su & Chen; reference/averaging-methods.md
# §3, §4): the shape and options of steps/train.sh, but each iteration is ONE MPI job of num_jobs
# ranks (nnet-train-mpi), rank r reading egs.<r+1>.<archive>.ark, instead of num_jobs separate jobs
# and an averaging step. --mode params averages the ranks' parameters every --average-every
# minibatches (0: once, at the end of the iteration, i.e. train.sh's averaging); --mode gradients
# sums the ranks' steps every minibatch (synchronous SGD).
#
# Learning rates: the effective rate decays geometrically from --initial-learning-rate to
# --final-learning-rate over the run. In params mode each rank trains with num_jobs x the effective
# rate (as train.sh); in gradients mode with the effective rate itself, since the summed step
# already covers num_jobs x minibatch-size examples. There is no iteration-0 "best job" special
# case: the ranks are averaged from the first iteration on. Natural-gradient state is local to each
# rank and restarts every iteration (as with train.sh's jobs).
#
# Launchers (--launcher): mpirun (this machine, -np num_jobs; as root --allow-run-as-root is added,
# and --oversubscribe when num_jobs exceeds the CPUs), srun (inside or outside a Slurm allocation:
# srun --mpi=pmix --kill-on-bad-exit=1 -n num_jobs; needs libpmix2), sbatch (sbatch --wait -n
# num_jobs running mpirun, which takes the allocation from Slurm). Extra launcher options go in
# --launcher-opts (e.g. "--hostfile hosts" or "-p gpu --time 1:00:00").

# Begin configuration section.
cmd=utils/run.pl     # runner for the non-MPI steps (init, diagnostics, combination)
launcher=mpirun      # mpirun | srun | sbatch
launcher_opts=
stage=-1
num_epochs=4
num_jobs=            # ranks; default: the number of jobs the examples were cut for
mode=params          # params | gradients
average_every=8      # params mode: minibatches between averages (0: only at the end)
minibatch_size=128
initial_learning_rate=0.01
final_learning_rate=0.001
shuffle_buffer_size=5000
num_threads=1
max_models_combine=10
combine=true         # false: final.mdl is the last model
cleanup=true         # remove intermediate models (every 10th and the last are kept)
srand=0
train_opts=          # extra options for nnet-train-mpi
# End configuration section.

echo "$0 $*"
help_message="Usage: $0 [options] <egs-dir> <nnet-config> <exp-dir>
e.g.: $0 --num-jobs 4 --average-every 8 --num-epochs 4 exp/nnet/egs conf/nnet.config exp/nnet_mpi
Options:
  --launcher <mpirun|srun|sbatch> how to start the ranks (default: mpirun)
  --launcher-opts <opts>         extra options for the launcher
  --cmd <runner>                 runner for init, diagnostics and combination (default: utils/run.pl)
  --stage <n>                    resume at iteration n (-1: initialise the model) (default: -1)
  --num-epochs <n>               passes over the data (default: 4)
  --num-jobs <n>                 MPI ranks (default: as the examples were cut)
  --mode <params|gradients>      average parameters, or sum steps every minibatch (default: params)
  --average-every <k>            params mode: minibatches between averages, 0 = end only (default: 8)
  --minibatch-size <n>           per rank (default: 128)
  --initial-learning-rate <r>    effective learning rate at the start (default: 0.01)
  --final-learning-rate <r>      effective learning rate at the end (default: 0.001)
  --shuffle-buffer-size <n>      nnet-shuffle-egs buffer per rank (default: 5000)
  --num-threads <n>              threads per rank for the matrix work (default: 1)
  --max-models-combine <n>       models combined into final.mdl (default: 10)
  --combine <true|false>         nnet-combine the last models (default: true)
  --cleanup <true|false>         remove intermediate models at the end (default: true)"

[ -f ./path.sh ] && . ./path.sh
. utils/parse_options.sh || exit 1

if [ $# != 3 ]; then
    echo "$help_message" 1>&2
    exit 1
fi
egs_dir=$1
config=$2
dir=$3
set -o pipefail

for f in $egs_dir/info/iters_per_epoch $egs_dir/info/num_jobs $egs_dir/valid_diagnostic.egs \
         $egs_dir/train_diagnostic.egs $egs_dir/combine.egs; do
    [ ! -f $f ] && echo "$0: no such file $f" && exit 1
done
case $mode in params|gradients) ;; *) echo "$0: --mode must be params or gradients" && exit 1;; esac
case $launcher in
    mpirun|srun|sbatch) command -v $launcher >/dev/null || { echo "$0: $launcher not found"; exit 1; } ;;
    *) echo "$0: --launcher must be mpirun, srun or sbatch" && exit 1 ;;
esac
command -v nnet-train-mpi >/dev/null || { echo "$0: nnet-train-mpi not found (built only where mpicc is)"; exit 1; }
iters_per_epoch=$(cat $egs_dir/info/iters_per_epoch)
egs_jobs=$(cat $egs_dir/info/num_jobs)
[ -z "$num_jobs" ] && num_jobs=$egs_jobs
if [ $num_jobs -gt $egs_jobs ]; then
    echo "$0: --num-jobs $num_jobs but the examples in $egs_dir were cut for $egs_jobs jobs"; exit 1
fi
num_iters=$((num_epochs * iters_per_epoch))
[ $num_iters -lt 1 ] && echo "$0: no iterations (num_epochs=$num_epochs)" && exit 1
mkdir -p $dir/log
echo $num_iters > $dir/num_iters
echo $num_jobs > $dir/num_jobs

# Per-rank learning rate of iteration x: scale * initial * (final/initial)^(x/num_iters).
rate_scale=$num_jobs
[ $mode = gradients ] && rate_scale=1
learning_rate() {
    awk -v x=$1 -v n=$num_iters -v i=$initial_learning_rate -v f=$final_learning_rate -v j=$rate_scale \
        'BEGIN { printf "%.6g\n", j * i * exp(x * log(f / i) / n) }'
}

# launch <log> <program and args...>: start num_jobs ranks of the command, output to log.
launch() {
    local log=$1; shift
    local mpirun_opts=
    [ "$(id -u)" -eq 0 ] && mpirun_opts="--allow-run-as-root"
    [ $num_jobs -gt $(nproc) ] && mpirun_opts="$mpirun_opts --oversubscribe"
    case $launcher in
        mpirun) mpirun $mpirun_opts -np $num_jobs $launcher_opts "$@" >$log 2>&1 ;;
        srun) srun --mpi=pmix --kill-on-bad-exit=1 -n $num_jobs $launcher_opts "$@" >$log 2>&1 ;;
        sbatch) sbatch --wait -n $num_jobs -o $log $launcher_opts \
                    --wrap "mpirun $mpirun_opts $(printf '%q ' "$@")" >/dev/null ;;
    esac
}

if [ $stage -le -1 ]; then
    [ ! -f $config ] && echo "$0: no such file $config" && exit 1
    # The egs directory's normalising transform goes in front, as in steps/train.sh (one-row
    # features; a config that already starts with FixedAffine is left as it is).
    init_config=$config
    if [ -f $egs_dir/feature_transform.mat ] && \
       ! grep -v '^[[:space:]]*\(#\|$\)' $config | head -n 1 | grep -q '^[[:space:]]*\(FixedAffine\|Splice\)'; then
        init_config=$dir/nnet.config
        { echo "FixedAffineComponent matrix=$egs_dir/feature_transform.mat"; cat $config; } > $init_config
        echo "$0: normalising inputs with $egs_dir/feature_transform.mat (FixedAffineComponent)"
    fi
    echo "$0: initialising the model from $init_config"
    $cmd $dir/log/init.log \
        nnet-init --srand=$srand $init_config - \| \
        nnet-copy --learning-rate=$(learning_rate 0) - $dir/0.mdl || exit 1
fi

echo "$0: $num_iters iterations ($num_epochs epochs x $iters_per_epoch), $num_jobs ranks, mode $mode" \
     "$([ $mode = params ] && echo "(average every $average_every minibatches)")"
for x in $(seq 0 $((num_iters - 1))); do
    if [ $stage -le $x ]; then
        [ ! -f $dir/$x.mdl ] && echo "$0: missing $dir/$x.mdl (resume from an earlier stage)" && exit 1
        $cmd $dir/log/compute_prob_valid.$x.log \
            nnet-compute-prob $dir/$x.mdl ark:$egs_dir/valid_diagnostic.egs &
        $cmd $dir/log/compute_prob_train.$x.log \
            nnet-compute-prob $dir/$x.mdl ark:$egs_dir/train_diagnostic.egs &

        echo "$0: iteration $x / $num_iters, learning rate $(learning_rate $x)"
        archive=$((x % iters_per_epoch))
        # Iteration 0: half the minibatch and max-change/sqrt(2) (Kaldi nnet3; before $train_opts).
        ramp_opts=
        [ $x -eq 0 ] && ramp_opts="--minibatch-size=$(( (minibatch_size + 1) / 2 )) --max-change=1.41421"
        # JOB in the egs-rspecifier becomes each rank's job number (rank + 1).
        launch $dir/log/train.$x.log \
            nnet-train-mpi --mode=$mode --average-every=$average_every \
                --minibatch-size=$minibatch_size --srand=$((srand + x)) --num-threads=$num_threads \
                $ramp_opts $train_opts $dir/$x.mdl \
                "ark:nnet-shuffle-egs --buffer-size=$shuffle_buffer_size --srand=\$((JOB + $((srand + x)))) ark:$egs_dir/egs.JOB.$archive.ark ark:- |" \
                $dir/$((x + 1)).raw.mdl \
            || { echo "$0: training iteration $x failed, see $dir/log/train.$x.log"; exit 1; }
        $cmd $dir/log/set_learning_rate.$x.log \
            nnet-copy --learning-rate=$(learning_rate $((x + 1))) $dir/$((x + 1)).raw.mdl \
                $dir/$((x + 1)).mdl || exit 1
        rm -f $dir/$((x + 1)).raw.mdl
    fi
done
wait

if [ $stage -le $num_iters ]; then
    first=$((num_iters - max_models_combine + 1))
    [ $first -lt 1 ] && first=1
    if $combine; then
        models=$(for x in $(seq $first $num_iters); do echo -n "$dir/$x.mdl "; done)
        echo "$0: combining the last $((num_iters - first + 1)) models into final.mdl"
        $cmd $dir/log/combine.log \
            nnet-combine $models ark:$egs_dir/combine.egs $dir/final.mdl || exit 1
    else
        cp $dir/$num_iters.mdl $dir/final.mdl.tmp && mv $dir/final.mdl.tmp $dir/final.mdl
    fi
    $cmd $dir/log/compute_prob_valid.final.log \
        nnet-compute-prob $dir/final.mdl ark:$egs_dir/valid_diagnostic.egs || exit 1
    $cmd $dir/log/compute_prob_train.final.log \
        nnet-compute-prob $dir/final.mdl ark:$egs_dir/train_diagnostic.egs || exit 1
fi

if $cleanup; then
    echo "$0: removing intermediate models (every 10th and the last are kept)"
    for x in $(seq 1 $((num_iters - 1))); do
        [ $((x % 10)) -ne 0 ] && [ $x -lt $((num_iters - max_models_combine + 1)) ] && rm -f $dir/$x.mdl
    done
fi
echo "$0: done; final model $dir/final.mdl"
