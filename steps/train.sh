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
#
# Averaging methods (--averaging; reference/averaging-methods.md):
#   average    the plain average of the jobs' models (Kaldi).
#   agreement  jobs whose change since $x.mdl disagrees with the consensus change (cosine distance
#              > --agreement-threshold) are left out of the average (nnet-average
#              --agreement-threshold); not in the literature, measured in docs/EXPERIMENTS.md.
#   elastic    EASGD, periodic form with one exchange per iteration: each job keeps its own replica
#              x_j (x.j.rep.mdl); after training, the centre moves x~ <- x~ + alpha sum_j (x_j - x~)
#              (nnet-average --elastic-alpha) and each replica is pulled x_j <- x_j - alpha (x_j - x~).
#              $x.mdl is the centre; alpha = --elastic-alpha (default 0.9 / num_jobs, beta = 0.9).
#   parle      Parle: each replica runs Entropy-SGD inner loops (--parle-inner-steps L, coupling
#              gamma-coupling to its own outer iterate) and is elastically pulled toward the centre
#              $x.mdl (the mean of the replicas) after every outer step; both couplings are scoped:
#              c(x) = min(cap, c0 (1 + scoping)^x), growing over the run as in the reference code.
#   Iteration 0 keeps the best job only for average and agreement.
#   elastic and parle here are parnet's file-based APPROXIMATIONS (one exchange per iteration
#   through model files, the inner mean reset every outer step, absolute couplings, no momentum):
#   they run without MPI. The published algorithms are steps/train_mpi.sh --mode elastic|parle
#   (README, issue 20).
# --offline-window W (HWA): final.mdl is the average of the last W synchronised models
# ($((num_iters-W+1)).mdl .. $num_iters.mdl) instead of the combination (steps/hwa.sh does the same
# over a finished directory). --combine-method twa combines with TWA instead of per-layer weights.

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
combine_method=per-layer  # per-layer | twa
averaging=average    # average | agreement | elastic | parle
agreement_threshold=1.0
elastic_alpha=       # default 0.9 / num_jobs
parle_inner_steps=25
parle_gamma0=0.01    # Entropy-SGD coupling of the inner iterate, per inner step
parle_rho0=0.01      # elastic coupling to the centre, per outer step
parle_scoping=0.5    # couplings grow by this factor per iteration ...
parle_gamma_max=0.3  # ... up to these caps
parle_rho_max=0.5
offline_window=0     # HWA: average the last W synchronised models into final.mdl (0: off)
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
  --num-threads <n>              threads per job for the matrix work (default: 1)
  --max-models-combine <n>       models combined into final.mdl (default: 10)
  --combine <true|false>         nnet-combine the last models (default: true)
  --cleanup <true|false>         remove intermediate models at the end (default: true)
  --averaging <method>           average|agreement|elastic|parle (default: average)
  --agreement-threshold <t>      job-level agreement: largest cosine distance kept (default: 1.0)
  --elastic-alpha <a>            EASGD alpha (default: 0.9 / num-jobs)
  --parle-inner-steps <L>        Parle: inner steps per outer step (default: 25)
  --offline-window <W>           HWA: final.mdl = average of the last W models (default: 0, off)
  --combine-method <m>           per-layer|twa (default: per-layer)"

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
case $averaging in average|agreement|elastic|parle) ;;
    *) echo "$0: --averaging $averaging: expected average, agreement, elastic or parle"; exit 1 ;;
esac
[ -z "$elastic_alpha" ] && elastic_alpha=$(awk -v n=$num_jobs 'BEGIN { printf "%.6g", 0.9 / n }')
if [ $offline_window -gt $num_iters ]; then
    echo "$0: --offline-window $offline_window exceeds the $num_iters iterations"; exit 1
fi
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

echo "$0: $num_iters iterations ($num_epochs epochs x $iters_per_epoch), $num_jobs jobs, $averaging"
# A scoped coupling: min(cap, c0 (1 + s)^x).
scoped() {
    awk -v c=$1 -v s=$parle_scoping -v x=$2 -v m=$3 'BEGIN { v = c * exp(x * log(1 + s)); printf "%.6g\n", v < m ? v : m }'
}
replicas=false
case $averaging in elastic|parle) replicas=true ;; esac
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
        start=$dir/$x.mdl extra_opts=
        if $replicas; then
            # Each job continues its own replica (the centre for the first iteration).
            for j in $(seq $num_jobs); do
                [ -f $dir/$x.$j.rep.mdl ] || cp $dir/$x.mdl $dir/$x.$j.rep.mdl || exit 1
            done
            start=$dir/$x.JOB.rep.mdl
        fi
        if [ $averaging = parle ]; then
            extra_opts="--entropy-inner-steps=$parle_inner_steps --entropy-coupling=$(scoped $parle_gamma0 $x $parle_gamma_max) --proximal-model=$dir/$x.mdl --proximal-coupling=$(scoped $parle_rho0 $x $parle_rho_max)"
        fi
        $cmd JOB=1:$num_jobs $dir/log/train.$x.JOB.log \
            nnet-shuffle-egs --buffer-size=$shuffle_buffer_size --srand=$((srand + x)) \
                ark:$egs_dir/egs.JOB.$archive.ark ark:- \| \
            nnet-train --minibatch-size=$minibatch_size --srand=$((srand + x)) \
                --num-threads=$num_threads $train_opts $extra_opts $start ark:- $dir/$((x + 1)).JOB.mdl \
            || { echo "$0: training iteration $x failed"; exit 1; }

        next_lr=$(learning_rate $((x + 1)))
        models=$(for j in $(seq $num_jobs); do echo -n "$dir/$((x + 1)).$j.mdl "; done)
        if [ $averaging = elastic ]; then
            # EASGD: the centre moves toward the replicas, each replica toward the old centre.
            $cmd $dir/log/average.$x.log \
                nnet-average --elastic-alpha=$elastic_alpha --elastic-center=$dir/$x.mdl $models - \| \
                nnet-copy --learning-rate=$next_lr - $dir/$((x + 1)).mdl || exit 1
            w=$(awk -v a=$elastic_alpha 'BEGIN { printf "%.6g:%.6g", 1 - a, a }')
            $cmd JOB=1:$num_jobs $dir/log/pull.$x.JOB.log \
                nnet-average --weights=$w $dir/$((x + 1)).JOB.mdl $dir/$x.mdl - \| \
                nnet-copy --learning-rate=$next_lr - $dir/$((x + 1)).JOB.rep.mdl || exit 1
        elif [ $averaging = parle ]; then
            # Parle: the centre is the mean of the replicas; the replicas carry on.
            $cmd $dir/log/average.$x.log \
                nnet-average $average_opts $models - \| \
                nnet-copy --learning-rate=$next_lr - $dir/$((x + 1)).mdl || exit 1
            $cmd JOB=1:$num_jobs $dir/log/pull.$x.JOB.log \
                nnet-copy --learning-rate=$next_lr $dir/$((x + 1)).JOB.mdl $dir/$((x + 1)).JOB.rep.mdl || exit 1
        elif [ $x -eq 0 ]; then
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
            opts=$average_opts
            [ $averaging = agreement ] && \
                opts="$opts --agreement-threshold=$agreement_threshold --previous-model=$dir/$x.mdl"
            $cmd $dir/log/average.$x.log \
                nnet-average $opts $models - \| \
                nnet-copy --learning-rate=$next_lr - $dir/$((x + 1)).mdl || exit 1
        fi
        rm -f $dir/$((x + 1)).?.mdl $dir/$((x + 1)).??.mdl $dir/$x.*.rep.mdl
    fi
done
wait

if [ $stage -le $num_iters ]; then
    first=$((num_iters - max_models_combine + 1))
    [ $first -lt 1 ] && first=1
    if [ $offline_window -gt 0 ]; then
        models=$(for x in $(seq $((num_iters - offline_window + 1)) $num_iters); do echo -n "$dir/$x.mdl "; done)
        echo "$0: HWA: final.mdl is the average of the last $offline_window models"
        $cmd $dir/log/hwa.log nnet-average $models $dir/final.mdl || exit 1
    elif $combine; then
        models=$(for x in $(seq $first $num_iters); do echo -n "$dir/$x.mdl "; done)
        echo "$0: combining the last $((num_iters - first + 1)) models into final.mdl ($combine_method)"
        $cmd $dir/log/combine.log \
            nnet-combine --method=$combine_method $models ark:$egs_dir/combine.egs $dir/final.mdl || exit 1
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
    keep=$max_models_combine
    [ $offline_window -gt $keep ] && keep=$offline_window
    for x in $(seq 1 $((num_iters - 1))); do
        [ $((x % 10)) -ne 0 ] && [ $x -lt $((num_iters - keep + 1)) ] && rm -f $dir/$x.mdl
    done
    rm -f $dir/*.rep.mdl
fi
echo "$0: done; final model $dir/final.mdl"
