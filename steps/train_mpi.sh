#!/usr/bin/env bash
# Training with frequent averaging over MPI (local SGD, as Su & Chen, arXiv 1507.01239, and PR-SGD,
# Yu et al., AAAI 2019, arXiv 1807.06629): the shape and options of steps/train.sh, but each
# iteration is ONE MPI job of num_jobs ranks (nnet-train-mpi), rank r reading
# egs.<r+1>.<archive>.ark, instead of num_jobs separate jobs and an averaging step. --mode params
# averages the ranks' parameters every --average-every minibatches (0: once, at the end of the
# iteration, i.e. train.sh's averaging); --mode gradients sums the ranks' steps every minibatch
# (synchronous SGD).
# --mode elastic runs EASGD/EAMSGD (exchange every --average-every = tau minibatches, alpha
# --elastic-alpha, default 0.9/N; Nesterov momentum 0.99 unless --momentum); --mode parle runs
# Parle as ucla-vision/parle (--parle-inner-steps L = 25, gamma/rho scoped with nb = the
# minibatches per epoch per rank, Nesterov 0.9 in both loops unless --momentum); both exchange by
# all-reduce inside nnet-train-mpi, and each rank's replica, EMA, velocities and Parle's counter
# are carried from one iteration to the next in $dir/state/<iter>.<rank+1> (--state-in/-out), so
# the run computes what one long MPI job would. --momentum/--nesterov/--weight-decay apply in
# every mode (with --carry-state true the velocity is carried in params/gradients modes too).
# --stage N resumes at iteration N; with carried states, each rank's state/N.<rank+1> must be
# there (else the run names the stage to resume from). One run per directory ($dir/.lock,
# steps/lib/lock.sh); option values are checked before anything runs.
#
# Params mode after the paper (docs/AVERAGING.md): --bmuf true puts
# block momentum on every average (nnet-train-mpi --bmuf: --block-momentum, default 1 - 1/N;
# --block-learning-rate 1; --block-nesterov true), m carried from iteration to iteration in
# $dir/<iter>.bmuf (a resumed run reads it; its absence is an error), the per-rank rate
# num_jobs (1 - eta) / zeta x the effective rate; --warmup-steps W makes the run's first W
# minibatches per rank synchronous (post-local SGD; the count runs across iterations, read back
# from the logs); --group-size G --group-average-every Kg averages groups of G consecutive
# ranks (a node, where the launcher places ranks node by node) every Kg minibatches.
#
# Learning rates: the effective rate decays geometrically from --initial-learning-rate to
# --final-learning-rate over the run. In params mode each rank trains with num_jobs x the effective
# rate (as train.sh); in gradients mode with the effective rate itself, since the summed step
# already covers num_jobs x minibatch-size examples; in elastic and parle modes with the effective
# (single-worker) rate, as the papers run them. There is no iteration-0 "best job" special
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
mode=params          # params | gradients | elastic | parle
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
momentum=            # heavy-ball momentum (empty: by mode: 0; elastic 0.99; parle 0.9)
nesterov=auto        # true | false | auto (auto: true in elastic and parle modes)
weight_decay=0       # L2 (PyTorch's weight_decay)
elastic_alpha=0      # elastic: 0 = 0.9 / num_jobs
parle_inner_steps=25 # parle: L
parle_opts=          # parle: more nnet-train-mpi --parle-* options (e.g. --parle-gamma 0.03)
use_gpu=no           # yes|no|wait|optional: each rank on a GPU, NCCL all-reduces (make CUDA=1)
carry_state=auto     # carry each rank's optimiser state across iterations (auto: elastic, parle)
bmuf=false           # params: block momentum on every average (BMUF / DiLoCo's outer Nesterov)
block_momentum=      # bmuf: eta in [0, 1) (default: 1 - 1/num_jobs)
block_learning_rate=1 # bmuf: zeta
block_nesterov=true  # bmuf: Nesterov block momentum
warmup_steps=0       # params: post-local SGD, the first W minibatches per rank synchronous
group_size=1         # params: hierarchical averaging in groups of G ranks (1: off) ...
group_average_every=0 # ... every this many minibatches
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
  --mode <m>                     params|gradients|elastic|parle (default: params)
  --average-every <k>            params mode: minibatches between averages, 0 = end only (default: 8)
  --minibatch-size <n>           labelled frames per rank's minibatch (default: 128)
  --initial-learning-rate <r>    effective learning rate at the start (default: 0.01)
  --final-learning-rate <r>      effective learning rate at the end (default: 0.001)
  --shuffle-buffer-size <n>      nnet-shuffle-egs buffer per rank (default: 5000)
  --num-threads <n>              threads per rank for the matrix work (default: 1)
  --max-models-combine <n>       models combined into final.mdl (default: 10)
  --combine <true|false>         nnet-combine the last models (default: true)
  --cleanup <true|false>         remove intermediate models at the end (default: true)
  --momentum <mu>                heavy-ball momentum (default: 0; elastic 0.99; parle 0.9)
  --nesterov <true|false|auto>   Nesterov's form (default: auto = true in elastic and parle)
  --weight-decay <lambda>        L2 weight decay (default: 0)
  --elastic-alpha <a>            elastic: exchange alpha (default: 0 = 0.9 / num-jobs)
  --parle-inner-steps <L>        parle: minibatches between exchanges (default: 25)
  --carry-state <true|false|auto> carry optimiser state across iterations (auto: elastic, parle)
  --bmuf <true|false>            params: block momentum on every average (default: false)
  --block-momentum <eta>         bmuf: in [0, 1) (default: 1 - 1/num-jobs)
  --block-learning-rate <zeta>   bmuf: (default: 1)
  --block-nesterov <true|false>  bmuf: Nesterov block momentum (default: true)
  --warmup-steps <W>             params: post-local SGD, first W minibatches synchronous (default: 0)
  --group-size <G>               params: hierarchical averaging in groups of G ranks (default: 1, off)
  --group-average-every <Kg>     minibatches between the groups' averages
  --use-gpu <yes|no|wait|optional> each rank on its own GPU (by local rank), parameters all-
                                 reduced with NCCL; srun/sbatch get --gpus-per-task=1 (default: no)"

. "$(dirname "$0")/lib/args.sh"
args_want $# 3
egs_dir=$1 config=$2 dir=$3
set -o pipefail
. steps/lib/train-checks.sh
train_check_common
check_int average-every "$average_every" 0
check_int parle-inner-steps "$parle_inner_steps" 1
check_number_in elastic-alpha "$elastic_alpha" 0 1
check_number_in weight-decay "$weight_decay" 0 1
[ -n "$momentum" ] && check_number_in momentum "$momentum" 0 0.999999

case $mode in params|gradients|elastic|parle) ;;
    *) echo "$0: --mode must be params, gradients, elastic or parle" && exit 1;; esac
case $carry_state in true|false) ;; auto) carry_state=false
    { [ $mode = elastic ] || [ $mode = parle ]; } && carry_state=true ;;
    *) echo "$0: --carry-state must be true, false or auto" && exit 1;; esac
case $use_gpu in
    no) gpu_launch_opts= ;;
    yes|wait|optional) gpu_launch_opts="--gpus-per-task=1" ;;
    *) echo "$0: --use-gpu must be yes, no, wait or optional, not '$use_gpu'" && exit 1 ;;
esac
case $launcher in
    mpirun|srun|sbatch) command -v $launcher >/dev/null || { echo "$0: $launcher not found"; exit 1; } ;;
    *) echo "$0: --launcher must be mpirun, srun or sbatch" && exit 1 ;;
esac
command -v nnet-train-mpi >/dev/null || { echo "$0: nnet-train-mpi not found (built only where mpicc is)"; exit 1; }
. steps/lib/train-common.sh
train_read_egs_info $egs_dir
[ $num_iters -lt 1 ] && echo "$0: no iterations (num_epochs=$num_epochs)" && exit 1
# One run per directory (steps/lib/lock.sh).
. steps/lib/lock.sh
LOCK_ARGS="$*" dir_lock $dir
mkdir -p $dir/log
echo $num_iters > $dir/num_iters
echo $num_jobs > $dir/num_jobs

# Per-rank learning rate of iteration x: scale * initial * (final/initial)^(x/num_iters).
rate_scale=$num_jobs
[ $mode != params ] && rate_scale=1
after_opts=
if [ $mode = params ]; then
    case $bmuf in true|false) ;; *) echo "$0: --bmuf must be true or false"; exit 1 ;; esac
    if $bmuf; then
        [ -z "$block_momentum" ] && block_momentum=$(awk -v n=$num_jobs 'BEGIN { printf "%.6g", 1 - 1 / n }')
        rate_scale=$(awk -v n=$num_jobs -v e="$block_momentum" -v z="$block_learning_rate" \
            'BEGIN { if (!(e >= 0 && e < 1 && z > 0)) exit 1; printf "%.6g", n * (1 - e) / z }') ||
            { echo "$0: --block-momentum '$block_momentum' must lie in [0, 1) and --block-learning-rate '$block_learning_rate' be positive"; exit 1; }
        after_opts="--bmuf --block-momentum=$block_momentum --block-learning-rate=$block_learning_rate --block-nesterov=$block_nesterov"
    fi
    [ $group_size -gt 1 ] && after_opts="$after_opts --group-size=$group_size --group-average-every=$group_average_every"
elif $bmuf || [ $warmup_steps != 0 ] || [ $group_size != 1 ]; then
    echo "$0: --bmuf, --warmup-steps and --group-size need --mode params"; exit 1
fi
# Minibatches per rank trained before iteration x (post-local SGD's count), from the logs.
minibatches_before() {
    local k n=0 t
    for k in $(seq 0 $(($1 - 1))); do
        t=$(grep -o '([0-9]* frames, [0-9]* minibatches over' $dir/log/train.$k.log 2>/dev/null | tail -n 1 | awk '{print $3}')
        [ -z "$t" ] && { echo "$0: no minibatch count in $dir/log/train.$k.log (for --warmup-steps)" >&2; return 1; }
        n=$((n + t / num_jobs))
    done
    echo $n
}
# Options of the update for every iteration; Parle's nb: minibatches per epoch per rank.
samples_per_iter=$(cat $egs_dir/info/samples_per_iter 2>/dev/null || echo 0)
update_opts="--nesterov=$nesterov --weight-decay=$weight_decay"
[ -n "$momentum" ] && update_opts="$update_opts --momentum=$momentum"
case $mode in
    elastic) update_opts="$update_opts --elastic-alpha=$elastic_alpha" ;;
    parle) update_opts="$update_opts --parle-inner-steps=$parle_inner_steps \
        --parle-minibatches-per-epoch=$(( iters_per_epoch * ((samples_per_iter + minibatch_size - 1) / minibatch_size) )) $parle_opts" ;;
esac
$carry_state && mkdir -p $dir/state
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
        srun) srun --mpi=pmix --kill-on-bad-exit=1 -n $num_jobs $gpu_launch_opts $launcher_opts "$@" >$log 2>&1 ;;
        sbatch) sbatch --wait -n $num_jobs -o $log $gpu_launch_opts $launcher_opts \
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
        train_check_transform_fits $config
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
     "$([ $mode = params ] || [ $mode = elastic ] && echo "(exchange every $average_every minibatches)")" \
     "$([ $mode = parle ] && echo "(exchange every $parle_inner_steps minibatches)")"
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
        [ $x -eq 0 ] && ramp_opts="--minibatch-size=$(( (minibatch_egs + 1) / 2 )) --max-change=1.41421"
        # JOB in the egs-rspecifier becomes each rank's job number (rank + 1).
        state_opts=
        if $carry_state; then
            # Each rank's state after iteration x-1 must be there: starting without it would
            # silently train a different model.
            for j in $(seq $num_jobs); do
                if [ $x -gt 0 ] && [ ! -f $dir/state/$x.$j ]; then
                    echo "$0: missing $dir/state/$x.$j (rank $j's optimiser state): iteration $((x - 1)) did not finish; resume with --stage $((x - 1))" 1>&2
                    exit 1
                fi
            done
            state_opts="--state-out=$dir/state/$((x + 1)).JOB"
            [ $x -gt 0 ] && state_opts="$state_opts --state-in=$dir/state/$x.JOB"
        fi
        if $bmuf; then   # m of iteration x: zero at 0, else $x.bmuf, which must be there
            if [ $x -gt 0 ]; then
                [ -f $dir/$x.bmuf ] || { echo "$0: no $dir/$x.bmuf (the block momentum beside $x.mdl): resume from an earlier --stage"; exit 1; }
                state_opts="$state_opts --block-state-in=$dir/$x.bmuf"
            fi
            state_opts="$state_opts --block-state-out=$dir/$((x + 1)).bmuf"
        fi
        if [ $warmup_steps -gt 0 ]; then
            before=$(minibatches_before $x) || exit 1
            state_opts="$state_opts --warmup-steps=$warmup_steps --minibatch-offset=$before"
        fi
        launch $dir/log/train.$x.log \
            nnet-train-mpi --use-gpu=$use_gpu --mode=$mode --average-every=$average_every $update_opts $after_opts $state_opts \
                --minibatch-size=$minibatch_egs --srand=$((srand + x)) --num-threads=$num_threads \
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
    train_combine
    $cmd $dir/log/compute_prob_valid.final.log \
        nnet-compute-prob $dir/final.mdl ark:$egs_dir/valid_diagnostic.egs || exit 1
    $cmd $dir/log/compute_prob_train.final.log \
        nnet-compute-prob $dir/final.mdl ark:$egs_dir/train_diagnostic.egs || exit 1
fi

if $cleanup; then
    train_cleanup $dir $num_iters $max_models_combine
    if $carry_state; then
        for x in $(seq 1 $((num_iters - 1))); do rm -f $dir/state/$x.*; done
    fi
fi
echo "$0: done; final model $dir/final.mdl"
