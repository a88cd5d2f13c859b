#!/usr/bin/env bash
# Every parallel-training strategy of parnet on the same data and budget, one table:
# test accuracy, validation log-prob, wall time and model bytes moved through the shared
# filesystem (or MPI). Small by default (--limit 6000 images, 4 epochs, 2 jobs) so that it runs in
# minutes on a 2-core machine; results and commands in docs/history/2026-12-01-experiments.md.
#   egs/fashion-mnist/compare.sh [--limit 6000] [--num-epochs 4] [--stage 0] [--only "name ..."]
# Rows (each a steps/train.sh run, final.mdl = the last model unless the method says otherwise):
#   single        1 job (examples cut for 1 job, the same examples per iteration in total), NG-SGD
#   avg-sgd       2 jobs, plain average, SGD                avg-ng   the same with NG-SGD
#   mpi-local-sgd steps/train_mpi.sh: 2 MPI ranks, parameters averaged every 8 minibatches, NG-SGD
#   mpi-sync-sgd  steps/train_mpi.sh --mode gradients (steps summed every minibatch), SGD: the
#                 control for mpi-gaf (an mpi-gaf step where both ranks agree is one such step)
#   mpi-gaf       mpi-sync-sgd + GAF across ranks (each rank's minibatch one microbatch, tau 0.97)
#                 The mpi-* rows print "not run" where nnet-train-mpi or mpirun is missing.
#   avg-sgd-mb128 avg-sgd with minibatches of 128: GAF's control (a GAF step of 2 x 64 examples
#                 where both agree is exactly one such step)
#   gaf           avg-sgd + GAF on raw gradients (--gaf-microbatches 2, tau 0.97)
#   agreement     avg-ng + job-level agreement (tau 1.0; with 2 jobs it keeps both almost surely)
#   avg-ng4 / agreement4: 4 jobs (examples cut for 4), plain average / agreement (tau 0.45)
#   elastic       EASGD replicas (alpha 0.9/N), NG-SGD
#   parle         Parle replicas (L=5 inner steps, scoped couplings), NG-SGD
#   hwa           avg-ng + --offline-window (half the iterations)
#   combine       avg-ng + per-layer nnet-combine of the last models;  twa: the same with TWA-v
#   noise40-sgd / noise40-mb128 / noise40-gaf: avg-sgd, avg-sgd-mb128 and gaf with 40% symmetric
#                 label noise on the training labels (validation and test labels clean)
#   noise40-mpi-sync / noise40-mpi-gaf: mpi-sync-sgd and mpi-gaf with the same label noise
#   bmuf4         avg-ng4 with block momentum (BMUF: eta 1 - 1/4, zeta 1, Nesterov; each job at the
#                 effective rate; docs/AVERAGING.md); +2 model files per iteration for the state
#   mpi-bmuf      mpi-local-sgd with block momentum on every average (eta 1/2 for 2 ranks)
#   mpi-post-local mpi-local-sgd after a synchronous warm-up (the first 50 minibatches per rank)
cd "$(dirname "$0")"
. ./path.sh

# Begin configuration section.
stage=0
cmd=utils/run.pl
limit=6000
num_epochs=4
minibatch_size=64
initial_learning_rate=0.004
final_learning_rate=0.0004
noise=0.4
# plain SGD needs a smaller rate than NG-SGD (0.004 gave 73% valid, 0.001 81%, 0.0003 75%)
sgd_lr="--initial-learning-rate 0.001 --final-learning-rate 0.0001"
agreement_threshold=0.45
dir=exp/compare
only=             # run only these rows (space-separated names)
# End configuration section.
help_message="Usage: $0 [--limit N] [--num-epochs N] [--stage N] [--only \"rows\"]"
. utils/parse_options.sh || exit 1
set -e -o pipefail
data=$dir/data
mkdir -p $dir

if [ $stage -le 0 ]; then
    echo "$0: preparing $limit images in $data"
    local/prepare_data.sh --limit $limit $data >$dir/prepare.log
    # 40% symmetric label noise on the training labels: a label is replaced, with probability
    # $noise, by a uniformly chosen *other* class (fixed seed).
    rm -rf $data/train_noisy; mkdir -p $data/train_noisy
    cp $data/train/feats.scp $data/train_noisy/
    copy-int-vector scp:$data/train/labels.scp ark,t:- 2>/dev/null | \
        awk -v p=$noise 'BEGIN { srand(17) } { if (rand() < p) { k = int(rand() * 9); $2 = (k >= $2) ? k + 1 : k } print }' | \
        copy-int-vector ark,t:- ark,scp:$PWD/$data/train_noisy/labels.ark,$data/train_noisy/labels.scp 2>/dev/null
fi

ntrain=$(wc -l < $data/train/feats.scp)
spi2=$(( (ntrain + 3) / 4 ))   # 2 jobs x 2 archives per epoch
if [ $stage -le 1 ]; then
    echo "$0: examples ($ntrain training images; $spi2 per job per iteration with 2 jobs)"
    for set in "train egs2 2 $spi2" "train egs1 1 $((2 * spi2))" "train_noisy egs2n 2 $spi2" \
               "train egs4 4 $(( (spi2 + 1) / 2 ))"; do
        set -- $set
        steps/get_egs.sh --num-jobs $3 --samples-per-iter $4 --valid-data-dir $data/valid \
            --num-utts-subset 300 $data/$1 $dir/$2 >$dir/$2.log 2>&1
    done
    nnet-get-egs scp:$data/test/feats.scp scp:$data/test/labels.scp ark:$dir/test.egs 2>/dev/null
fi

table=$dir/results.txt
want() { [ -z "$only" ] || [[ " $only " == *" $1 "* ]]; }
field() { grep -o "$2 [-0-9.e+]*" "$1" | tail -n 1 | awk '{print $NF}'; }
# run NAME EGS CONFIG TRANSFERS [train.sh options]; TRANSFERS: model files read or written per
# iteration, in units of one model file, as a formula in the number of jobs n: each job reads its
# start and writes its model (2n), the average reads n and writes 1 (3n+1); agreement reads the
# previous model and every job twice (4n+2); elastic adds the centre and the replica pulls (6n+2);
# Parle's jobs also read the centre, and replicas are copied (6n+1). Diagnostics and the final
# combination are not counted.
run() {
    local name=$1 egs=$2 config=$3 transfers=$4; shift 4
    want $name || return 0
    local d=$dir/$name t0=$(date +%s.%N)
    rm -rf $d
    steps/train.sh --cmd "$cmd" --num-epochs $num_epochs --minibatch-size $minibatch_size \
        --initial-learning-rate $initial_learning_rate --final-learning-rate $final_learning_rate \
        --cleanup false "$@" $dir/$egs conf/$config $d >$d.log 2>&1 || { echo "$0: $name failed (see $d.log)"; return 1; }
    local secs=$(echo "$(date +%s.%N) - $t0" | bc) N=$(cat $d/num_jobs)
    nnet-compute-prob $d/final.mdl ark:$dir/test.egs 2>$d/log/compute_prob_test.log >/dev/null
    local iters=$(cat $d/num_iters) size=$(stat -c %s $d/final.mdl)
    printf "%-17s %9.2f %11.4f %8.1f %10.1f\n" $name \
        $(echo "$(field $d/log/compute_prob_test.log 'accuracy is') * 100" | bc -l) \
        $(field $d/log/compute_prob_valid.final.log 'average probability is') $secs \
        $(echo "n = $N; ($transfers) * $iters * $size / 1000000" | bc -l) | tee -a $table
}

# run_mpi NAME EGS CONFIG [train_mpi.sh options]: as run(), through steps/train_mpi.sh (one
# mpirun of n ranks per iteration). MB moved: per iteration every rank reads the model, rank 0
# writes the raw model, which nnet-copy reads and writes again (n+3 model files), plus the MPI
# all-reduce payload of all ranks (from the training logs: payload per rank x n).
run_mpi() {
    local name=$1 egs=$2 config=$3; shift 3
    want $name || return 0
    if ! command -v nnet-train-mpi >/dev/null || ! command -v mpirun >/dev/null; then
        printf "%-17s %9s %11s %8s %10s\n" $name "not run" "(no" "MPI" "here)" | tee -a $table
        return 0
    fi
    local d=$dir/$name t0=$(date +%s.%N)
    rm -rf $d
    steps/train_mpi.sh --cmd "$cmd" --num-epochs $num_epochs --minibatch-size $minibatch_size \
        --initial-learning-rate $initial_learning_rate --final-learning-rate $final_learning_rate \
        --cleanup false --combine false "$@" $dir/$egs conf/$config $d >$d.log 2>&1 || { echo "$0: $name failed (see $d.log)"; return 1; }
    local secs=$(echo "$(date +%s.%N) - $t0" | bc) N=$(cat $d/num_jobs)
    nnet-compute-prob $d/final.mdl ark:$dir/test.egs 2>$d/log/compute_prob_test.log >/dev/null
    local iters=$(cat $d/num_iters) size=$(stat -c %s $d/final.mdl)
    local mpi_mb=$(cat $d/log/train.*.log | grep -o '[0-9.]* MB of payload per rank' |
                   awk -v n=$N '{ s += $1 * n } END { printf "%.3f", s }')
    printf "%-17s %9.2f %11.4f %8.1f %10.1f\n" $name \
        $(echo "$(field $d/log/compute_prob_test.log 'accuracy is') * 100" | bc -l) \
        $(field $d/log/compute_prob_valid.final.log 'average probability is') $secs \
        $(echo "($N + 3) * $iters * $size / 1000000 + $mpi_mb" | bc -l) | tee -a $table
}

if [ $stage -le 2 ]; then
    [ -z "$only" ] && rm -f $table
    [ -f $table ] || printf "%-17s %9s %11s %8s %10s\n" method test-acc% valid-logp wall-s MB-moved | tee $table
    half=$num_epochs  # half of the 2 x num_epochs iterations
    run single    egs1 compare-ng.config  3*n+1 --num-jobs 1 --combine false
    run avg-sgd   egs2 compare-sgd.config 3*n+1 $sgd_lr --combine false
    run avg-ng    egs2 compare-ng.config  3*n+1 --combine false
    run_mpi mpi-local-sgd egs2 compare-ng.config --mode params --average-every 8
    run_mpi mpi-sync-sgd egs2 compare-sgd.config $sgd_lr --mode gradients
    run_mpi mpi-gaf   egs2 compare-sgd.config $sgd_lr --mode gradients --train-opts "--gaf-microbatches=1"
    run avg-sgd-mb128 egs2 compare-sgd.config 3*n+1 $sgd_lr --combine false --minibatch-size 128
    run gaf       egs2 compare-sgd.config 3*n+1 $sgd_lr --combine false --train-opts "--gaf-microbatches=2"
    run agreement egs2 compare-ng.config  4*n+2 --combine false --averaging agreement
    run avg-ng4   egs4 compare-ng.config  3*n+1 --combine false
    run agreement4 egs4 compare-ng.config 4*n+2 --combine false --averaging agreement \
        --agreement-threshold $agreement_threshold
    run elastic   egs2 compare-ng.config 6*n+2 --combine false --averaging elastic
    run parle     egs2 compare-ng.config 6*n+1 --combine false --averaging parle --parle-inner-steps 5
    run hwa       egs2 compare-ng.config  3*n+1 --offline-window $half
    run combine   egs2 compare-ng.config  3*n+1 --combine true
    run twa       egs2 compare-ng.config  3*n+1 --combine true --combine-method twa
    run noise40-sgd egs2n compare-sgd.config 3*n+1 $sgd_lr --combine false
    run noise40-mb128 egs2n compare-sgd.config 3*n+1 $sgd_lr --combine false --minibatch-size 128
    run noise40-gaf egs2n compare-sgd.config 3*n+1 $sgd_lr --combine false --train-opts "--gaf-microbatches=2"
    run_mpi noise40-mpi-sync egs2n compare-sgd.config $sgd_lr --mode gradients
    run_mpi noise40-mpi-gaf egs2n compare-sgd.config $sgd_lr --mode gradients \
        --train-opts "--gaf-microbatches=1"
    run bmuf4     egs4 compare-ng.config  3*n+3 --combine false --averaging bmuf
    run_mpi mpi-bmuf egs2 compare-ng.config --mode params --average-every 8 --bmuf true
    run_mpi mpi-post-local egs2 compare-ng.config --mode params --average-every 8 --warmup-steps 50
    echo "$0: table in $table"
fi
