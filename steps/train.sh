#!/usr/bin/env bash
# Kaldi-style parallel training with parameter averaging (steps/nnet2/train_pnorm_simple.sh):
# each iteration runs num_jobs `nnet-shuffle-egs | nnet-train` jobs through $cmd, each on its own
# archive, then averages their models; the last models are combined into final.mdl.
#
# Learning rates: the effective rate decays geometrically from --initial-learning-rate to
# --final-learning-rate over the run; each job trains with num_jobs x the effective rate, because
# averaging N models that each moved by lr*g moves the average by about (lr/N)*sum(g).
# Iteration 0 keeps the best job's model instead of the average (Kaldi).
# Every model is written atomically by the programs; rerun with --stage N to resume at iteration N
# (elastic and parle also need each job's replica N.j.rep.mdl; when they are missing the run says
# which stage to resume from). One run per directory: $dir/.lock (steps/lib/lock.sh) names the
# run holding it; a killed run's lock is taken over. Option values are checked before any job.
#
# Safety (Kaldi nnet3's defaults; README "Safe by default"): nnet-train clips with its default
# global max-change (2.0) and the components' default max-changes; iteration 0 trains with half the
# minibatch and max-change/sqrt(2) (Kaldi nnet3). After every iteration the validation objective of
# the new model is checked: when it is not finite, or falls clearly below the initial model's
# (by more than max(0.5, 0.25 |initial|)), the run stops with exit 1 and a "diverged" message, or,
# with --on-divergence backoff, reruns that iteration from the previous model at half the learning
# rate (at most --max-backoffs times; the halving then holds for the rest of the run). The run
# never ends 0 with a final model whose validation objective is below the initial model's.
# Kaldi's ramp of jobs: with --num-jobs-initial / --num-jobs-final the number of jobs grows
# linearly over the run (int(0.5 + ji + (jf - ji) x / num_iters)), each job trains with the
# current jobs x the effective rate, and job j of iteration x reads archive number
# (archives so far + j - 1) mod (jobs x iters-per-epoch) of the egs directory, so every archive is
# used in turn; num_iters = 2 num_epochs x archives / (ji + jf). Not with elastic or parle.
# With --feature-transform (default: the egs directory's feature_transform.mat when get_egs.sh
# made one, "none": off) the network starts with FixedAffineComponent matrix=<that file>.
# Examples of several labelled frames (get_egs.sh --frames-per-eg, Kaldi get_egs2's layout):
# --eg-frames all trains on every frame of each example, in minibatches of
# minibatch-size / frames-per-eg examples (so --minibatch-size still counts frames; nnet3's way);
# --eg-frames one trains on one frame of each example per iteration (nnet-copy-egs --frame), frame
# (k / archives) mod frames-per-eg for the k-th archive read, so an epoch (every frame once) takes
# frames-per-eg times the iterations (nnet2's train_*_accel2.sh). Which by measurement:
# docs/EXPERIMENTS.md "Speech at scale".
#
# Averaging methods (--averaging; papers and modules: docs/ARCHITECTURE.md, "src/train"):
#   average    the plain average of the jobs' models (Kaldi).
#   agreement  jobs whose change since $x.mdl disagrees with the consensus change (cosine distance
#              > --agreement-threshold) are left out of the average (nnet-average
#              --agreement-threshold); not in the literature, measured in docs/history/*-experiments.md.
#   elastic    EASGD, periodic form with one exchange per iteration: each job keeps its own replica
#              x_j (x.j.rep.mdl); after training, the centre moves x~ <- x~ + alpha sum_j (x_j - x~)
#              (nnet-average --elastic-alpha) and each replica is pulled x_j <- x_j - alpha (x_j - x~).
#              $x.mdl is the centre; alpha = --elastic-alpha (default 0.9 / num_jobs, beta = 0.9).
#   parle      Parle: each replica runs Entropy-SGD inner loops (--parle-inner-steps L, coupling
#              gamma-coupling to its own outer iterate) and is elastically pulled toward the centre
#              $x.mdl (the mean of the replicas) after every outer step; both couplings are scoped:
#              c(x) = min(cap, c0 (1 + scoping)^x), growing over the run as in the reference code.
#   bmuf       block momentum on the averaged update (BMUF, Chen & Huo, ICASSP 2016; DiLoCo's outer
#              Nesterov SGD is the same rule: src/update/update.h derives it): with S = $x.mdl, the
#              model the jobs start from, and A their average, m <- eta m + zeta (A - S) and the
#              next model is the global model plus m (classic), or plus (1 + eta) m (Nesterov: the
#              jobs start from the look-ahead). --block-momentum eta (default 1 - 1/num_jobs),
#              --block-learning-rate zeta (default 1), --block-nesterov (default true): the paper's
#              recommendation. m lives in $dir/$x.bmuf beside $x.mdl (nnet-average --bmuf checks
#              it against the model, num_jobs and the Nesterov flag, so --stage resumes it, never
#              from zero). Block momentum amplifies a steady update zeta / (1 - eta) times, so
#              each job trains at num_jobs (1 - eta) / zeta x the effective rate (1 x at the
#              defaults: the single-job rate) instead of num_jobs x.
#   Iteration 0 keeps the best job only for average, agreement and bmuf (m starts at zero after it).
#   elastic and parle here are parnet's file-based APPROXIMATIONS (one exchange per iteration
#   through model files, the inner mean reset every outer step, absolute couplings, no momentum):
#   they run without MPI. The published algorithms are steps/train_mpi.sh --mode elastic|parle
#   (README, issue 20).
# Hierarchical averaging (--hierarchical-period K > 1; PyTorch's HierarchicalModelAverager over
# iterations; --averaging average only): every K-th iteration all jobs are averaged as usual; on
# the others, the jobs that ran on the same node (the "# Running on HOST" line that queue.pl and
# slurm.pl put in each job's log) are averaged among themselves and each job carries on from its
# node's average ($x.$j.rep.mdl), so only models within a node are exchanged; $x.mdl is then the
# average of all jobs all the same (for the diagnostics and the divergence check). When a log
# names no host (run.pl), that iteration averages all jobs, with a warning.
# Model averages beside final.mdl, for decoding on request (the recipes' --model avg|best):
# --average-period P: final.avg.mdl is a running average of the iteration models (icefall's
# model_avg, here over iterations): the mean of $x.mdl for x = S + P, S + 2P, ... (S =
# --average-start, default 0), kept as $x.avg.mdl at those x (so that --stage resumes it), the
# k-th being nnet-average --weights=(k-1):1 of the previous one and $x.mdl. nnet-train
# --average-period does the same inside one job, every P minibatches.
# --average-best N: final.best.mdl is the average of the N iteration models still on disk with the
# best validation objective (ESPnet's average_nbest_models; steps/average_best.sh).
# --offline-window W (HWA): final.mdl is the average of the last W synchronised models
# ($((num_iters-W+1)).mdl .. $num_iters.mdl) instead of the combination (steps/hwa.sh does the same
# over a finished directory). --combine-method twa combines with TWA instead of per-layer weights.

# Begin configuration section.
cmd=utils/run.pl
stage=-1
num_epochs=4
num_jobs=            # default: the number of jobs the examples were cut for
num_jobs_initial=    # Kaldi's ramp (default: --num-jobs)
num_jobs_final=      # (default: --num-jobs)
minibatch_size=128   # labelled frames per minibatch
eg_frames=all        # all | one: frames of a multi-frame example trained on per iteration
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
averaging=average    # average | agreement | elastic | parle | bmuf
block_momentum=      # bmuf: eta in [0, 1) (default: 1 - 1/num_jobs)
block_learning_rate=1 # bmuf: zeta > 0
block_nesterov=true  # bmuf: Nesterov block momentum (false: classic)
agreement_threshold=1.0
elastic_alpha=       # default 0.9 / num_jobs
parle_inner_steps=25
parle_gamma0=0.01    # Entropy-SGD coupling of the inner iterate, per inner step
parle_rho0=0.01      # elastic coupling to the centre, per outer step
parle_scoping=0.5    # couplings grow by this factor per iteration ...
parle_gamma_max=0.3  # ... up to these caps
parle_rho_max=0.5
offline_window=0     # HWA: average the last W synchronised models into final.mdl (0: off)
average_period=0     # running average of every P-th iteration model: final.avg.mdl (0: off)
average_start=0      # ... of the models after iteration S
average_best=0       # final.best.mdl: the average of the N best iteration models (0: off)
hierarchical_period=0 # K > 1: all jobs averaged every K-th iteration, within nodes otherwise
on_divergence=stop   # stop | backoff
max_backoffs=3       # backoff: at most this many halvings of the learning rate
use_gpu=no           # yes|no|wait|optional: nnet-train on a GPU (make CUDA=1); the runner gets --gpu 1
feature_transform=   # default: \$egs_dir/feature_transform.mat if present; none: no transform
on_job_failure=rerun # rerun | average | stop (steps/lib/train-jobs.sh)
max_job_retries=2    # rerun: at most this many more attempts of a failed job
min_jobs_done=       # average: at least this many jobs must finish (default: half, rounded up)
straggler_backup=0   # F > 0: back up a job still running F x as long as the first half took
straggler_backup_opts= # runner options for a backup, HOST = the straggler's host ("-x HOST": slurm.pl)
realign_times=       # fractions of the run (0..1) at which to realign the data and remake the examples
realign_data=        # with --realign-times: the training data dir (feats.scp, text, labels.scp)
realign_lang=        # with --realign-times: the lang dir (decode-word-loop's)
realign_nj=4         # alignment jobs
# End configuration section.

echo "$0 $*"
help_message="Usage: $0 [options] <egs-dir> <nnet-config> <exp-dir>
e.g.: $0 --num-jobs 2 --num-epochs 4 exp/nnet/egs conf/nnet.config exp/nnet
Options:
  --cmd <runner>                 job runner: utils/run.pl, utils/queue.pl, utils/slurm.pl
  --stage <n>                    resume at iteration n (-1: initialise the model) (default: -1)
  --num-epochs <n>               passes over the data (default: 4)
  --num-jobs <n>                 parallel jobs (default: as the examples were cut)
  --num-jobs-initial <n>         ramp: jobs at the start (default: --num-jobs)
  --num-jobs-final <n>           ramp: jobs at the end (default: --num-jobs)
  --minibatch-size <n>           labelled frames per minibatch (default: 128)
  --eg-frames <all|one>          with examples of several frames: train on all of them, or on
                                 one per iteration, another each pass (nnet2's --frame)
                                 (default: all)
  --initial-learning-rate <r>    effective learning rate at the start (default: 0.01)
  --final-learning-rate <r>      effective learning rate at the end (default: 0.001)
  --shuffle-buffer-size <n>      nnet-shuffle-egs buffer per job (default: 5000)
  --num-threads <n>              threads per job for the matrix work (default: 1)
  --max-models-combine <n>       models combined into final.mdl (default: 10)
  --combine <true|false>         nnet-combine the last models (default: true)
  --cleanup <true|false>         remove intermediate models at the end (default: true)
  --averaging <method>           average|agreement|elastic|parle|bmuf (default: average)
  --block-momentum <eta>         bmuf: block momentum in [0, 1) (default: 1 - 1/num-jobs)
  --block-learning-rate <zeta>   bmuf: block learning rate (default: 1)
  --block-nesterov <true|false>  bmuf: Nesterov block momentum (default: true)
  --agreement-threshold <t>      job-level agreement: largest cosine distance kept (default: 1.0)
  --elastic-alpha <a>            EASGD alpha (default: 0.9 / num-jobs)
  --parle-inner-steps <L>        Parle: inner steps per outer step (default: 25)
  --offline-window <W>           HWA: final.mdl = average of the last W models (default: 0, off)
  --average-period <P>           final.avg.mdl: running average of every P-th model (default: 0, off)
  --average-start <S>            ... of the models after iteration S (default: 0)
  --average-best <N>             final.best.mdl: average of the N best models (default: 0, off)
  --hierarchical-period <K>      average all jobs every K-th iteration, the jobs of each node
                                 (from the runner's logs) on the others (default: 0, off)
  --combine-method <m>           per-layer|twa (default: per-layer)
  --on-divergence <stop|backoff> on a diverged iteration: stop (exit 1) or rerun it from the
                                 previous model at half the learning rate (default: stop)
  --max-backoffs <n>             at most this many backoffs (default: 3)
  --use-gpu <yes|no|wait|optional> train on GPUs: the training jobs get --gpu 1 from the
                                 runner (run.pl: one job per GPU) and nnet-train --use-gpu=<v>
                                 (default: no)
  --feature-transform <file|none> FixedAffine matrix put in front of the network (default:
                                 the egs directory's feature_transform.mat when present)
  --on-job-failure <policy>      when training jobs fail (a lost node, a killed job): rerun
                                 them (same final model), average the jobs that finished, or
                                 stop with one error; --stage resumes (default: rerun)
  --max-job-retries <n>          rerun: attempts after the first (default: 2)
  --min-jobs-done <n>            average: jobs that must finish (default: half, rounded up)
  --straggler-backup <F>         start a backup copy of a job still running F times as long as
                                 the first half of the jobs took; the first copy to finish
                                 wins, the model is the same (default: 0, off)
  --straggler-backup-opts <opts> runner options for the backup copy, HOST replaced by the
                                 straggler's host (slurm.pl: \"-x HOST\"; default: none)
  --realign-times <list>         nnet2's realignment: at these fractions of the run (e.g.
                                 \"0.33 0.66\") realign --realign-data with the current model
                                 (steps/align.sh, --realign-lang) and remake the examples with
                                 get_egs.sh's options (default: none)
  --realign-data <dir>           the training data directory (feats.scp, text, labels.scp)
  --realign-lang <dir>           its lang directory (words.txt, lexicon.txt, phone_pdfs.txt)
  --realign-nj <n>               alignment jobs (default: 4)"

. "$(dirname "$0")/lib/args.sh"
args_want $# 3
egs_dir=$1 config=$2 dir=$3
set -o pipefail
. steps/lib/train-checks.sh
train_check_common
check_int offline-window "$offline_window" 0
check_int max-backoffs "$max_backoffs" 0
check_number_in agreement-threshold "$agreement_threshold" 0 2
[ -n "$elastic_alpha" ] && check_number_in elastic-alpha "$elastic_alpha" 0 1
for o in parle_gamma0 parle_rho0 parle_gamma_max parle_rho_max; do
    check_number_in ${o//_/-} "${!o}" 0 1e6
done
check_number_in parle-scoping "$parle_scoping" 0 100
check_int parle-inner-steps "$parle_inner_steps" 1

# As Kaldi's recipes: the training jobs ask the runner for a GPU each, nnet-train for the device.
case $use_gpu in
    no) gpu_queue_opts= ;;
    yes|wait|optional) gpu_queue_opts="--gpu 1" ;;
    *) echo "$0: --use-gpu must be yes, no, wait or optional, not '$use_gpu'" && exit 1 ;;
esac
# A build without CUDA (bin/ is the same on every node) cannot train on a GPU anywhere: say so now,
# not after initialising (nnet-train selects the device before it reads anything).
if [ $use_gpu = yes ] || [ $use_gpu = wait ]; then
    why=$(nnet-train --print-args=false --use-gpu=$use_gpu /dev/null ark:/dev/null /dev/null 2>&1 | grep -o 'built without CUDA.*')
    [ -n "$why" ] && echo "$0: --use-gpu $use_gpu: parnet was $why; use --use-gpu no (or optional)" && exit 1
fi

. steps/lib/train-common.sh
. steps/lib/train-jobs.sh
. steps/lib/train-progress.sh
. steps/lib/train-realign.sh
train_read_egs_info $egs_dir
[ -z "$num_jobs_initial" ] && num_jobs_initial=$num_jobs
[ -z "$num_jobs_final" ] && num_jobs_final=$num_jobs
ramp=false
[ $num_jobs_initial -ne $num_jobs ] || [ $num_jobs_final -ne $num_jobs ] && ramp=true
for n in $num_jobs_initial $num_jobs_final; do
    if [ $n -lt 1 ] || [ $n -gt $egs_jobs ]; then
        echo "$0: --num-jobs-initial/--num-jobs-final $n: must lie in 1..$egs_jobs (the jobs the examples were cut for)"; exit 1
    fi
done
num_archives=$((egs_jobs * iters_per_epoch))
num_passes=$num_epochs   # over the archives
case $eg_frames in
    all) ;;
    one) # an epoch passes frames_per_eg times over the archives, one frame each time
         if [ $frames_per_eg -gt 1 ]; then
             num_passes=$((num_epochs * frames_per_eg)); minibatch_egs=$minibatch_size
         fi ;;
    *) echo "$0: --eg-frames $eg_frames: expected all or one"; exit 1 ;;
esac
if $ramp; then
    case $averaging in elastic|parle|bmuf)
        echo "$0: --num-jobs-initial/--num-jobs-final do not apply to --averaging $averaging"; exit 1 ;;
    esac
    num_iters=$(( 2 * num_passes * num_archives / (num_jobs_initial + num_jobs_final) ))
else
    num_iters=$((num_passes * iters_per_epoch))
fi
[ $num_iters -lt 1 ] && echo "$0: no iterations (num_epochs=$num_epochs)" && exit 1
# The egs-rspecifier of jobs reading <archive-file>, k archives having been read before (with the
# ramp, every job of an iteration takes the frame of the iteration's first archive):
# --eg-frames one puts nnet-copy-egs --frame in front.
egs_pipe() {   # <archive-file> <k>
    if [ $eg_frames = one ] && [ $frames_per_eg -gt 1 ]; then
        echo "ark:nnet-copy-egs --frame=$(( ($2 / num_archives) % frames_per_eg )) ark:$1 ark:- |"
    else
        echo "ark:$1"
    fi
}
case $on_divergence in stop|backoff) ;;
    *) echo "$0: --on-divergence $on_divergence: expected stop or backoff"; exit 1 ;;
esac
case $averaging in average|agreement|elastic|parle|bmuf) ;;
    *) echo "$0: --averaging $averaging: expected average, agreement, elastic, parle or bmuf" 1>&2; exit 1 ;;
esac
# bmuf: eta, and the per-job rate's factor num_jobs (1 - eta) / zeta (num_jobs elsewhere)
job_rate_factor=1
if [ $averaging = bmuf ]; then
    [ -z "$block_momentum" ] && block_momentum=$(awk -v n=$num_jobs 'BEGIN { printf "%.6g", 1 - 1 / n }')
    awk -v e="$block_momentum" 'BEGIN { exit !(e ~ /^[0-9.]+([eE][-+]?[0-9]+)?$/ && e + 0 < 1) }' ||
        { echo "$0: --block-momentum '$block_momentum': must lie in [0, 1)" 1>&2; exit 1; }
    awk -v z="$block_learning_rate" 'BEGIN { exit !(z ~ /^[0-9.]+([eE][-+]?[0-9]+)?$/ && z + 0 > 0) }' ||
        { echo "$0: --block-learning-rate '$block_learning_rate': must be positive" 1>&2; exit 1; }
    case $block_nesterov in true|false) ;;
        *) echo "$0: --block-nesterov '$block_nesterov': expected true or false" 1>&2; exit 1 ;;
    esac
    [ $on_job_failure = average ] && { echo "$0: --on-job-failure average does not apply to --averaging bmuf (the block momentum is for num_jobs jobs): use rerun or stop" 1>&2; exit 1; }
    job_rate_factor=$(awk -v e=$block_momentum -v z=$block_learning_rate 'BEGIN { printf "%.6g", (1 - e) / z }')
fi
train_jobs_check_opts
[ -z "$elastic_alpha" ] && elastic_alpha=$(awk -v n=$num_jobs 'BEGIN { printf "%.6g", 0.9 / n }')
[[ "$average_period$average_start$average_best$hierarchical_period" =~ ^[0-9]+$ ]] ||
    { echo "$0: --average-period, --average-start, --average-best and --hierarchical-period must be numbers >= 0" 1>&2; exit 1; }
if [ $hierarchical_period -gt 0 ]; then
    [ $hierarchical_period -lt 2 ] && { echo "$0: --hierarchical-period $hierarchical_period: must be at least 2 (1: every iteration, the plain average)" 1>&2; exit 1; }
    [ $averaging != average ] && { echo "$0: --hierarchical-period needs --averaging average" 1>&2; exit 1; }
fi
if [ $offline_window -gt $num_iters ]; then
    echo "$0: --offline-window $offline_window exceeds the $num_iters iterations"; exit 1
fi
realign_check
# One run per directory (a second one would overwrite the first's models): steps/lib/lock.sh.
. steps/lib/lock.sh
LOCK_ARGS="$*" dir_lock $dir
mkdir -p $dir/log
echo $num_iters > $dir/num_iters
echo $num_jobs > $dir/num_jobs

# Jobs of iteration x (the ramp; else num_jobs), and the archives used before iteration x.
jobs_at() {
    awk -v x=$1 -v n=$num_iters -v i=$num_jobs_initial -v f=$num_jobs_final \
        'BEGIN { print int(0.5 + i + (f - i) * x / n) }'
}
archives_before() {
    awk -v x=$1 -v n=$num_iters -v i=$num_jobs_initial -v f=$num_jobs_final \
        'BEGIN { s = 0; for (k = 0; k < x; k++) s += int(0.5 + i + (f - i) * k / n); print s }'
}
# Per-job learning rate of iteration x: jobs_at(x) * initial * (final/initial)^(x/num_iters), times
# the backoff scale ($dir/lr_scale, 1 unless a divergence halved it) and, for bmuf, (1 - eta) / zeta
# (at every iteration: iteration 0's kept job then trains as a single job would).
lr_scale=1
[ -f $dir/lr_scale ] && [ $stage -ge 0 ] && lr_scale=$(cat $dir/lr_scale)
learning_rate() {
    awk -v x=$1 -v n=$num_iters -v i=$initial_learning_rate -v f=$final_learning_rate -v j=$(jobs_at $1) \
        -v s=$lr_scale -v b=$job_rate_factor \
        'BEGIN { printf "%.6g\n", b * s * j * i * exp(x * log(f / i) / n) }'
}
# The validation objective in a nnet-compute-prob log ("nan"/"inf" when not finite).
valid_objf() {
    grep -o 'average probability is [^ ]*' $1 | tail -n 1 | awk '{print $4}'
}
# 0 (true) if objective $1 is not finite or clearly below the initial objective $2.
diverged() {
    awk -v o="$1" -v i="$2" 'BEGIN {
        if (o !~ /^-?[0-9.]+([eE][-+]?[0-9]+)?$/) exit 0
        m = 0.25 * (i < 0 ? -i : i); if (m < 0.5) m = 0.5
        exit !(o + 0 < i - m) }'
}

if [ $stage -le -1 ]; then
    [ ! -f $config ] && echo "$0: no such file $config" && exit 1
    # The labels get_egs.sh saw against the network's output dim, before anything starts.
    . steps/lib/data-checks.sh
    odim=$(nnet_config_output_dim $config)
    if [ -n "$odim" ] && [ -f $egs_dir/info/num_pdfs ] && [ $(cat $egs_dir/info/num_pdfs) -gt $odim ]; then
        echo "$0: the examples in $egs_dir have labels up to $(( $(cat $egs_dir/info/num_pdfs) - 1 )) ($egs_dir/info/num_pdfs) but $config's output dim is $odim: labels must be pdf-ids below it"
        exit 1
    fi
    [ -z "$feature_transform" ] && [ -f $egs_dir/feature_transform.mat ] && \
        feature_transform=$egs_dir/feature_transform.mat
    init_config=$config
    if [ -n "$feature_transform" ] && [ "$feature_transform" != none ]; then
        [ ! -f $feature_transform ] && echo "$0: no such file $feature_transform" && exit 1
        first=$(grep -v '^[[:space:]]*\(#\|$\)' $config | head -n 1 | awk '{print $1}')
        tdim=$(( $(feat-to-dim $feature_transform - 2>/dev/null) - 1 ))
        fdim=$(cat $egs_dir/info/feat_dim 2>/dev/null)
        line="FixedAffineComponent matrix=$feature_transform"
        init_config=$dir/init.config   # not nnet.config: a recipe may keep its own config there
        case $first in FixedAffine*) ;; *) train_check_transform_fits $config ;; esac
        case $first in
        FixedAffine*)
            echo "$0: $config already starts with a FixedAffine line: not adding $feature_transform"
            init_config=$config ;;
        Splice*)
            if [ "$tdim" = "$fdim" ]; then
                { echo "$line"; cat $config; } > $init_config
            else   # a transform of spliced frames (LDA) goes after the splicing
                awk -v l="$line" '{ print } !done && $1 ~ /^Splice/ { print l; done = 1 }' $config > $init_config
            fi ;;
        *)  { echo "$line"; cat $config; } > $init_config ;;
        esac
        [ $init_config != $config ] && echo "$0: normalising inputs with $feature_transform (FixedAffineComponent, input dim $tdim)"
    fi
    echo "$0: initialising the model from $init_config"
    rm -f $dir/lr_scale
    # The examples' context (get_egs.sh): a network that reads further fails here, naming its line.
    ctx_opts=
    for side in left right; do
        if [ -f $egs_dir/info/${side}_context ]; then
            ctx_opts="$ctx_opts --$side-context=$(cat $egs_dir/info/${side}_context)"
        fi
    done
    if ! $cmd $dir/log/init.log \
        nnet-init --srand=$srand$ctx_opts $init_config - \| \
        nnet-copy --learning-rate=$(learning_rate 0) - $dir/0.mdl; then
        # nnet-init's reason, naming the user's file and line (not the generated init.config's).
        msg=$(grep -o "config '$init_config': line [0-9]*: .*" $dir/log/init.log | head -n 1)
        if [ -n "$msg" ]; then
            n=${msg#*: line }; n=${n%%:*}
            added=$(grep -n -F -x "$line" $init_config 2>/dev/null | head -n 1 | cut -d: -f1)
            [ $init_config != $config ] && [ -n "$added" ] && [ $n -gt $added ] && n=$((n - 1))
            echo "$0: $config line $n: ${msg#*: line *: } (log $dir/log/init.log)"
        else
            echo "$0: initialising the model failed: $(grep ERROR $dir/log/init.log | tail -n 1) (log $dir/log/init.log)"
        fi
        exit 1
    fi
fi
[ -f $dir/0.mdl ] || { echo "$0: no $dir/0.mdl (run from --stage -1)"; exit 1; }
if [ ! -f $dir/log/compute_prob_valid.0.log ] || [ -z "$(valid_objf $dir/log/compute_prob_valid.0.log)" ]; then
    $cmd $dir/log/compute_prob_valid.0.log \
        nnet-compute-prob $dir/0.mdl ark:$egs_dir/valid_diagnostic.egs || exit 1
fi
initial_objf=$(valid_objf $dir/log/compute_prob_valid.0.log)
[ -z "$initial_objf" ] && echo "$0: no validation objective in $dir/log/compute_prob_valid.0.log" 1>&2 && exit 1
echo "$0: validation objective of the initial model: $initial_objf (accuracy $(progress_compute_prob $dir/log/compute_prob_valid.0.log | awk '{ printf "%.1f%%", 100 * $2 }'))"

if $ramp; then
    echo "$0: $num_iters iterations ($num_passes passes over $num_archives archives), jobs ramping $num_jobs_initial -> $num_jobs_final, $averaging"
else
    echo "$0: $num_iters iterations ($num_passes passes x $iters_per_epoch), $num_jobs jobs, $averaging"
fi
# hierarchical_nodes X "JOBS" LR: the jobs' models averaged per node into X+1.J.rep.mdl (the next
# iteration's starts), or nothing, with a warning, when a log names no host.
hierarchical_nodes() {
    local x=$1 jobs=$2 lr=$3 j h
    declare -A node=()
    for j in $jobs; do
        h=$(sed -n 's/^# Running on //p' $dir/log/train.$x.$j.log 2>/dev/null | head -n 1)
        if [ -z "$h" ]; then
            echo "$0: WARNING: iteration $x: $dir/log/train.$x.$j.log names no host (run.pl?): averaging all jobs (flat) instead of within nodes"
            return 0
        fi
        node[$h]="${node[$h]} $j"
    done
    echo "$0: iteration $x: averaging within ${#node[@]} node(s): $(for h in "${!node[@]}"; do echo -n "$h:$(echo ${node[$h]} | tr ' ' ,) "; done)"
    for h in "${!node[@]}"; do
        local models= first=
        for j in ${node[$h]}; do models="$models $dir/$((x + 1)).$j.mdl"; first=${first:-$j}; done
        $cmd $dir/log/average_node.$x.$first.log \
            nnet-average $average_opts $models - \| \
            nnet-copy --learning-rate=$lr - $dir/$((x + 1)).$first.rep.mdl || return 1
        for j in ${node[$h]}; do
            [ $j = $first ] || { cp $dir/$((x + 1)).$first.rep.mdl $dir/$((x + 1)).$j.rep.mdl.tmp &&
                mv $dir/$((x + 1)).$j.rep.mdl.tmp $dir/$((x + 1)).$j.rep.mdl; } || return 1
        done
    done
}
# A scoped coupling: min(cap, c0 (1 + s)^x).
scoped() {
    awk -v c=$1 -v s=$parle_scoping -v x=$2 -v m=$3 'BEGIN { v = c * exp(x * log(1 + s)); printf "%.6g\n", v < m ? v : m }'
}
# bmuf resumed at iteration x >= 2: its state must be there and fit $x.mdl and num_jobs, checked
# (a dry run of the update) before any job trains.
if [ $averaging = bmuf ] && [ $stage -ge 2 ] && [ $stage -lt $num_iters ]; then
    [ -f $dir/$stage.bmuf ] || { echo "$0: no $dir/$stage.bmuf (the block momentum beside $stage.mdl): resume from an earlier --stage" 1>&2; exit 1; }
    nnet-average --bmuf --previous-model=$dir/$stage.mdl --block-nesterov=$block_nesterov \
        --block-state-in=$dir/$stage.bmuf --block-state-out=$dir/bmuf-check.tmp \
        $(for j in $(seq $num_jobs); do echo -n "$dir/$stage.mdl "; done) $dir/bmuf-check.tmp.mdl \
        2>$dir/log/bmuf_check.$stage.log ||
        { echo "$0: $(grep ERROR $dir/log/bmuf_check.$stage.log | tail -n 1 | sed 's/^ERROR ([^ ]*) //')" 1>&2; rm -f $dir/bmuf-check.tmp*; exit 1; }
    rm -f $dir/bmuf-check.tmp*
fi
replicas=false
case $averaging in elastic|parle) replicas=true ;; esac
num_backoffs=0
x=0
while [ $x -lt $num_iters ]; do
    if [[ " $realign_iters " == *" $x "* ]]; then   # --realign-times
        if [ $stage -le $x ]; then
            realign $x $(nnet-info $dir/$x.mdl 2>/dev/null | awk '$1 == "output-dim" { print $2 }')
            $cmd $dir/log/compute_prob_valid.realign.$x.log \
                nnet-compute-prob $dir/$x.mdl ark:$egs_dir/valid_diagnostic.egs || exit 1
            initial_objf=$(valid_objf $dir/log/compute_prob_valid.realign.$x.log)
        else
            egs_dir=$dir/egs_realign_$x
        fi
    fi
    if [ $stage -le $x ]; then
        [ ! -f $dir/$x.mdl ] && echo "$0: missing $dir/$x.mdl (resume from an earlier stage)" && exit 1
        # Diagnostics of the model this iteration starts from, in the background (its validation
        # objective was computed when it was made, for the divergence check).
        $cmd $dir/log/compute_prob_train.$x.log \
            nnet-compute-prob $dir/$x.mdl ark:$egs_dir/train_diagnostic.egs &

        nj=$(jobs_at $x)
        iter_t0=$(date +%s.%N)
        archive=$((x % iters_per_epoch))
        egs_in=$(egs_pipe $egs_dir/egs.JOB.$archive.ark $((x * egs_jobs)))
        if $ramp; then   # job j reads archive (archives so far + j - 1) mod num_archives
            mkdir -p $dir/egs
            before=$(archives_before $x)
            for j in $(seq $nj); do
                k=$(( (before + j - 1) % num_archives ))
                ln -sf $(cd $egs_dir && pwd)/egs.$((k % egs_jobs + 1)).$((k / egs_jobs)).ark $dir/egs/$x.$j.ark
            done
            egs_in=$(egs_pipe $dir/egs/$x.JOB.ark $before)
        fi
        start=$dir/$x.mdl extra_opts=
        # Iteration 0: half the minibatch and the global max-change / sqrt(2) (Kaldi nnet3).
        # (before $train_opts, so that a --max-change there holds for iteration 0 too).
        ramp_opts=
        [ $x -eq 0 ] && ramp_opts="--minibatch-size=$(( (minibatch_egs + 1) / 2 )) --max-change=1.41421"
        if $replicas; then
            # Each job continues its own replica; the centre stands in for them only at iteration 0
            # (where they start from it). Later a missing replica means iteration x-1 did not
            # finish (killed between the centre's update and the replicas' pulls): resuming from the
            # centre would silently train a different model.
            for j in $(seq $nj); do
                [ -f $dir/$x.$j.rep.mdl ] && continue
                if [ $x -gt 0 ]; then
                    echo "$0: missing $dir/$x.$j.rep.mdl (job $j's replica): iteration $((x - 1)) did not finish; resume with --stage $((x - 1))" 1>&2
                    exit 1
                fi
                cp $dir/$x.mdl $dir/$x.$j.rep.mdl.tmp && mv $dir/$x.$j.rep.mdl.tmp $dir/$x.$j.rep.mdl || exit 1
            done
            start=$dir/$x.JOB.rep.mdl
        fi
        # Hierarchical: each job carries on from its node's average when there is one.
        if [ $hierarchical_period -gt 0 ] && [ -n "$(train_jobs_present $nj $dir/$x.JOB.rep.mdl)" ]; then
            for j in $(seq $nj); do
                [ -f $dir/$x.$j.rep.mdl ] || cp $dir/$x.mdl $dir/$x.$j.rep.mdl || exit 1
            done
            start=$dir/$x.JOB.rep.mdl
        fi
        if [ $averaging = parle ]; then
            extra_opts="--entropy-inner-steps=$parle_inner_steps --entropy-coupling=$(scoped $parle_gamma0 $x $parle_gamma_max) --proximal-model=$dir/$x.mdl --proximal-coupling=$(scoped $parle_rho0 $x $parle_rho_max)"
        fi
        train_jobs_run $x $nj $dir/$((x + 1)).JOB.mdl \
            nnet-shuffle-egs --buffer-size=$shuffle_buffer_size --srand=$((srand + x)) \
                "$egs_in" ark:- \| \
            nnet-train --use-gpu=$use_gpu --minibatch-size=$minibatch_egs --srand=$((srand + x)) \
                --num-threads=$num_threads $ramp_opts $train_opts $extra_opts $start ark:- $dir/$((x + 1)).JOB.mdl

        next_lr=$(learning_rate $((x + 1)))
        models=$(for j in $jobs_done; do echo -n "$dir/$((x + 1)).$j.mdl "; done)
        if [ $averaging = elastic ]; then
            # EASGD: the centre moves toward the replicas, each replica toward the old centre.
            $cmd $dir/log/average.$x.log \
                nnet-average --elastic-alpha=$elastic_alpha --elastic-center=$dir/$x.mdl $models - \| \
                nnet-copy --learning-rate=$next_lr - $dir/$((x + 1)).mdl || exit 1
            w=$(awk -v a=$elastic_alpha 'BEGIN { printf "%.6g:%.6g", 1 - a, a }')
            $cmd JOB=1:$nj $dir/log/pull.$x.JOB.log \
                nnet-average --weights=$w $dir/$((x + 1)).JOB.mdl $dir/$x.mdl - \| \
                nnet-copy --learning-rate=$next_lr - $dir/$((x + 1)).JOB.rep.mdl || exit 1
        elif [ $averaging = parle ]; then
            # Parle: the centre is the mean of the replicas; the replicas carry on.
            $cmd $dir/log/average.$x.log \
                nnet-average $average_opts $models - \| \
                nnet-copy --learning-rate=$next_lr - $dir/$((x + 1)).mdl || exit 1
            $cmd JOB=1:$nj $dir/log/pull.$x.JOB.log \
                nnet-copy --learning-rate=$next_lr $dir/$((x + 1)).JOB.mdl $dir/$((x + 1)).JOB.rep.mdl || exit 1
        elif [ $x -eq 0 ]; then
            # Iteration 0: keep the job with the best training objective (Kaldi).
            best=1 best_objf=-1e30
            for j in $jobs_done; do
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
            if [ $averaging = bmuf ]; then
                # m of iteration x: zero after iteration 0 (one job kept), else $x.bmuf, which
                # must be there (a resumed run never restarts the momentum from zero)
                state_in=
                if [ $x -gt 1 ]; then
                    [ -f $dir/$x.bmuf ] || { echo "$0: no $dir/$x.bmuf (the block momentum beside $x.mdl): resume from an earlier --stage" 1>&2; exit 1; }
                    state_in="--block-state-in=$dir/$x.bmuf"
                fi
                opts="$opts --bmuf --previous-model=$dir/$x.mdl --block-momentum=$block_momentum --block-learning-rate=$block_learning_rate --block-nesterov=$block_nesterov $state_in --block-state-out=$dir/$((x + 1)).bmuf"
            fi
            $cmd $dir/log/average.$x.log \
                nnet-average $opts $models - \| \
                nnet-copy --learning-rate=$next_lr - $dir/$((x + 1)).mdl || exit 1
        fi
        if [ $hierarchical_period -gt 0 ] && [ $x -gt 0 ] && [ $(( (x + 1) % hierarchical_period )) -ne 0 ]; then
            hierarchical_nodes $x "$jobs_done" $next_lr || exit 1
        fi
        # The divergence check on the new model's validation objective.
        $cmd $dir/log/compute_prob_valid.$((x + 1)).log \
            nnet-compute-prob $dir/$((x + 1)).mdl ark:$egs_dir/valid_diagnostic.egs || exit 1
        objf=$(valid_objf $dir/log/compute_prob_valid.$((x + 1)).log)
        if [ -z "$objf" ]; then
            echo "$0: no validation objective in $dir/log/compute_prob_valid.$((x + 1)).log" 1>&2; exit 1
        fi
        if diverged "$objf" "$initial_objf"; then
            lr=$(learning_rate $x)
            if [ $on_divergence = backoff ] && [ $num_backoffs -lt $max_backoffs ]; then
                num_backoffs=$((num_backoffs + 1))
                lr_scale=$(awk -v s=$lr_scale 'BEGIN { printf "%.6g", s / 2 }')
                echo $lr_scale > $dir/lr_scale
                echo "$0: iteration $x diverged (learning rate $lr, validation objective $objf vs $initial_objf at the start): backoff $num_backoffs of $max_backoffs, rerunning it from $x.mdl at half the rate"
                rm -f $dir/$((x + 1)).mdl $dir/$((x + 1)).*.mdl $dir/$((x + 1)).bmuf
                nnet-copy --learning-rate=$(learning_rate $x) $dir/$x.mdl $dir/$x.mdl 2>$dir/log/backoff.$x.$num_backoffs.log || exit 1
                continue
            fi
            echo "$0: training diverged at iteration $x (per-job learning rate $lr): the validation objective went to $objf from $initial_objf at the start. Try a lower --initial-learning-rate / --final-learning-rate (e.g. a tenth), keep --max-change on (nnet-train's default 2.0, via --train-opts), normalise the inputs (get_egs.sh's feature transform), or --on-divergence backoff" 1>&2
            rm -f $dir/$((x + 1)).mdl
            exit 1
        fi
        train_progress_iteration $x $nj $(learning_rate $x) $(awk -v a=$iter_t0 -v b=$(date +%s.%N) 'BEGIN { print b - a }')
        rm -f $models $dir/$x.*.rep.mdl $dir/egs/$x.*.ark  # the jobs' models, however many jobs
        # The running average: the k-th snapshot (k - 1):1 with the (k - 1)-th.
        y=$((x + 1))
        if [ $average_period -gt 0 ] && [ $y -gt $average_start ] && [ $(( (y - average_start) % average_period )) -eq 0 ]; then
            k=$(( (y - average_start) / average_period ))
            if [ $k -eq 1 ]; then
                cp $dir/$y.mdl $dir/$y.avg.mdl.tmp && mv $dir/$y.avg.mdl.tmp $dir/$y.avg.mdl || exit 1
            else
                prev=$dir/$((y - average_period)).avg.mdl
                [ -f $prev ] || { echo "$0: no $prev (the running average so far): resume from an earlier --stage" 1>&2; exit 1; }
                $cmd $dir/log/running_average.$y.log \
                    nnet-average --weights=$((k - 1)):1 $prev $dir/$y.mdl $dir/$y.avg.mdl || exit 1
            fi
        fi
    fi
    x=$((x + 1))
done
wait

if [ $stage -le $num_iters ]; then
    if [ $offline_window -gt 0 ]; then
        models=$(for x in $(seq $((num_iters - offline_window + 1)) $num_iters); do echo -n "$dir/$x.mdl "; done)
        echo "$0: HWA: final.mdl is the average of the last $offline_window models"
        $cmd $dir/log/hwa.log nnet-average $models $dir/final.mdl || exit 1
        train_recompute_stats "$cmd" $dir/log/recompute_stats.final.log \
            $egs_dir $minibatch_egs $dir/final.mdl || exit 1
    else
        train_combine $combine_method
    fi
    $cmd $dir/log/compute_prob_valid.final.log \
        nnet-compute-prob $dir/final.mdl ark:$egs_dir/valid_diagnostic.egs || exit 1
    final_objf=$(valid_objf $dir/log/compute_prob_valid.final.log)
    if awk -v o="$final_objf" -v i="$initial_objf" 'BEGIN { exit !(o !~ /^-?[0-9.]+([eE][-+]?[0-9]+)?$/ || o + 0 < i + 0) }'; then
        echo "$0: training diverged: the final model's validation objective $final_objf is worse than the initial model's $initial_objf; final.mdl removed. Try a lower --initial-learning-rate, or normalise the inputs" 1>&2
        rm -f $dir/final.mdl
        exit 1
    fi
    $cmd $dir/log/compute_prob_train.final.log \
        nnet-compute-prob $dir/final.mdl ark:$egs_dir/train_diagnostic.egs || exit 1
    if [ $average_period -gt 0 ]; then
        last=$(( average_start + (num_iters - average_start) / average_period * average_period ))
        if [ $last -gt $average_start ] && [ -f $dir/$last.avg.mdl ]; then
            echo "$0: final.avg.mdl: the running average of $(( (last - average_start) / average_period )) models (every $average_period from $average_start)"
            cp $dir/$last.avg.mdl $dir/final.avg.mdl.tmp && mv $dir/final.avg.mdl.tmp $dir/final.avg.mdl || exit 1
            train_recompute_stats "$cmd" $dir/log/recompute_stats.final_avg.log \
                $egs_dir $minibatch_egs $dir/final.avg.mdl || exit 1
            $cmd $dir/log/compute_prob_valid.final_avg.log \
                nnet-compute-prob $dir/final.avg.mdl ark:$egs_dir/valid_diagnostic.egs || exit 1
        else
            echo "$0: --average-period $average_period: no model to average after iteration $average_start"
        fi
    fi
    if [ $average_best -gt 0 ]; then
        steps/average_best.sh --cmd "$cmd" --num $average_best --egs-dir $egs_dir \
            --minibatch-size $minibatch_egs $dir $dir/final.best.mdl || exit 1
        $cmd $dir/log/compute_prob_valid.final_best.log \
            nnet-compute-prob $dir/final.best.mdl ark:$egs_dir/valid_diagnostic.egs || exit 1
    fi
fi

if $cleanup; then
    keep=$max_models_combine
    [ $offline_window -gt $keep ] && keep=$offline_window
    train_cleanup $dir $num_iters $keep
fi
train_progress_summary
echo "$0: done; final model $dir/final.mdl"
