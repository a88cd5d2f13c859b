#!/usr/bin/env bash
# Kaldi-style parallel training with parameter averaging (steps/nnet2/train_pnorm_simple.sh):
# each iteration runs num_jobs `nnet-shuffle-egs | nnet-train` jobs through $cmd, each on its own
# archive, then averages their models; the last models are combined into final.mdl.
#
# Learning rates: the effective rate decays geometrically from --initial-learning-rate to
# --final-learning-rate over the run; each job trains with num_jobs x the effective rate, because
# averaging N models that each moved by lr*g moves the average by about (lr/N)*sum(g).
# Iteration 0 keeps the best job's model instead of the average (Kaldi).
# Every model is written atomically by the programs; rerun with --stage N to resume at iteration N.

# Begin configuration section.
cmd=utils/run.pl
stage=-1
num_epochs=4
num_jobs=            # default: the number of jobs the examples were cut for
minibatch_size=128
initial_learning_rate=0.01
final_learning_rate=0.001
shuffle_buffer_size=5000
num_threads=1
max_models_combine=10
combine=true         # false: final.mdl is the last model
cleanup=true         # remove intermediate models (every 10th and the last are kept)
srand=0
train_opts=          # extra options for nnet-train
average_opts=        # extra options for nnet-average
# End configuration section.

echo "$0 $*"
help_message="Usage: $0 [options] <egs-dir> <nnet-config> <exp-dir>
e.g.: $0 --num-jobs 2 --num-epochs 4 exp/nnet/egs conf/nnet.config exp/nnet
Options:
  --cmd <runner>                 job runner: utils/run.pl, utils/queue.pl, utils/slurm.pl
  --stage <n>                    resume at iteration n (-1: initialise the model) (default: -1)
  --num-epochs <n>               passes over the data (default: 4)
  --num-jobs <n>                 parallel jobs (default: as the examples were cut)
  --minibatch-size <n>           (default: 128)
  --initial-learning-rate <r>    effective learning rate at the start (default: 0.01)
  --final-learning-rate <r>      effective learning rate at the end (default: 0.001)
  --shuffle-buffer-size <n>      nnet-shuffle-egs buffer per job (default: 5000)
  --num-threads <n>              BLAS threads per job (default: 1)
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

# Per-job learning rate of iteration x: num_jobs * initial * (final/initial)^(x/num_iters).
learning_rate() {
    awk -v x=$1 -v n=$num_iters -v i=$initial_learning_rate -v f=$final_learning_rate -v j=$num_jobs \
        'BEGIN { printf "%.6g\n", j * i * exp(x * log(f / i) / n) }'
}

if [ $stage -le -1 ]; then
    [ ! -f $config ] && echo "$0: no such file $config" && exit 1
    echo "$0: initialising the model from $config"
    $cmd $dir/log/init.log \
        nnet-init --srand=$srand $config - \| \
        nnet-copy --learning-rate=$(learning_rate 0) - $dir/0.mdl || exit 1
fi

echo "$0: $num_iters iterations ($num_epochs epochs x $iters_per_epoch), $num_jobs jobs"
for x in $(seq 0 $((num_iters - 1))); do
    if [ $stage -le $x ]; then
        [ ! -f $dir/$x.mdl ] && echo "$0: missing $dir/$x.mdl (resume from an earlier stage)" && exit 1
        # Diagnostics of the model this iteration starts from, in the background.
        $cmd $dir/log/compute_prob_valid.$x.log \
            nnet-compute-prob $dir/$x.mdl ark:$egs_dir/valid_diagnostic.egs &
        $cmd $dir/log/compute_prob_train.$x.log \
            nnet-compute-prob $dir/$x.mdl ark:$egs_dir/train_diagnostic.egs &

        echo "$0: iteration $x / $num_iters, learning rate $(learning_rate $x)"
        archive=$((x % iters_per_epoch))
        $cmd JOB=1:$num_jobs $dir/log/train.$x.JOB.log \
            nnet-shuffle-egs --buffer-size=$shuffle_buffer_size --srand=$((srand + x)) \
                ark:$egs_dir/egs.JOB.$archive.ark ark:- \| \
            nnet-train --minibatch-size=$minibatch_size --srand=$((srand + x)) \
                --num-threads=$num_threads $train_opts $dir/$x.mdl ark:- $dir/$((x + 1)).JOB.mdl \
            || { echo "$0: training iteration $x failed"; exit 1; }

        next_lr=$(learning_rate $((x + 1)))
        if [ $x -eq 0 ]; then
            # Iteration 0: keep the job with the best training objective (Kaldi).
            best=1 best_objf=-1e30
            for j in $(seq $num_jobs); do
                objf=$(grep -o 'log-prob-per-frame=[^ ]*' $dir/log/train.$x.$j.log | tail -n 1 | cut -d= -f2)
                [ -z "$objf" ] && echo "$0: no objective in $dir/log/train.$x.$j.log" && exit 1
                if awk -v a=$objf -v b=$best_objf 'BEGIN { exit !(a > b) }'; then best=$j; best_objf=$objf; fi
            done
            echo "$0: iteration 0: keeping job $best (log-prob-per-frame $best_objf)"
            $cmd $dir/log/average.$x.log \
                nnet-copy --learning-rate=$next_lr $dir/$((x + 1)).$best.mdl $dir/$((x + 1)).mdl || exit 1
        else
            models=$(for j in $(seq $num_jobs); do echo -n "$dir/$((x + 1)).$j.mdl "; done)
            $cmd $dir/log/average.$x.log \
                nnet-average $average_opts $models - \| \
                nnet-copy --learning-rate=$next_lr - $dir/$((x + 1)).mdl || exit 1
        fi
        rm -f $dir/$((x + 1)).*.mdl
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
