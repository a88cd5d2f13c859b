#!/usr/bin/env bash
# Kill-and-resume campaign (by hand; docs/RELIABILITY.md "Killed runs resume"): for each method, one
# run to the end as the reference, then N runs each killed with SIGKILL (the whole session: the
# recipe, its runner, its jobs, mpirun and its ranks) at a uniformly random time within the
# reference's wall time (drawn again, from the shorter time, if the run ends before it), resumed the way a user would (--stage = the newest iteration's model; if
# the recipe answers "resume with --stage K", once more with K), and final.mdl compared byte for byte
# with the reference. One line per kill, then one summary line per method.
#
# Usage: tests/reliability/kill-resume.sh [--kills N] [--seed S] [--work DIR] METHOD...
#   METHOD: average agreement elastic parle (steps/train.sh --averaging) or
#           mpi-params mpi-gradients mpi-elastic mpi-parle (steps/train_mpi.sh --mode)
# e.g.:   nice -n 19 tests/reliability/kill-resume.sh --kills 20 average agreement elastic parle
# Needs the programs on PATH (bin/ and utils/). The task: 3 Gaussian classes in 8 dimensions,
# 2 jobs, 4 iterations; each run takes seconds.
set -u
kills=20 seed=1 work=/tmp/kill-resume
while [ $# -gt 0 ]; do
    case $1 in
        --kills) kills=$2; shift 2 ;;
        --seed) seed=$2; shift 2 ;;
        --work) work=$2; shift 2 ;;
        -*) echo "$0: unknown option $1" 1>&2; exit 2 ;;
        *) break ;;
    esac
done
[ $# -ge 1 ] || { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' 1>&2; exit 2; }
top=$(cd "$(dirname "$0")/../.." && pwd)
export PATH="$top/bin:$top/utils:$PATH"
mkdir -p "$work" && cd "$work" || exit 1
ln -sfn $top/steps steps; ln -sfn $top/utils utils
RANDOM=$seed

if [ ! -f egs/combine.egs ]; then
    . "$top/tests/prog/gauss3-task.sh"
    gauss3_task 5 1.5 || { echo "$0: get_egs.sh failed (egs.log)"; exit 1; }
fi

recipe() { # METHOD: the command line of a run into directory $dir (stage appended by the caller)
    local common="--num-epochs 2 --minibatch-size 16 --initial-learning-rate 0.003 --final-learning-rate 0.001 --max-models-combine 3"
    case $1 in
        average|agreement|elastic) echo "steps/train.sh $common --averaging $1" ;;
        parle) echo "steps/train.sh $common --averaging parle --parle-inner-steps 3" ;;
        mpi-params|mpi-gradients) echo "steps/train_mpi.sh $common --num-jobs 2 --mode ${1#mpi-} --average-every 4" ;;
        mpi-elastic|mpi-parle) echo "steps/train_mpi.sh $common --num-jobs 2 --mode ${1#mpi-} --average-every 4 --parle-inner-steps 5" ;;
        *) echo "$0: unknown method $1" 1>&2; exit 2 ;;
    esac
}
# The iteration a killed run's directory resumes from: the newest x.mdl (-1 if none).
resume_stage() {
    local d=$1 x best=-1 f
    for f in $d/[0-9]*.mdl; do
        x=$(basename $f .mdl); [[ $x =~ ^[0-9]+$ ]] || continue
        [ $x -gt $best ] && best=$x
    done
    echo $best
}
now() { date +%s.%N; }

for m in "$@"; do
    cmd=$(recipe $m) || exit 2
    rm -rf ref.$m
    t0=$(now)
    $cmd egs nnet.config ref.$m >ref.$m.log 2>&1 || { echo "$m: the reference run failed (ref.$m.log)"; continue; }
    wall=$(awk -v a=$t0 -v b=$(now) 'BEGIN { printf "%.2f", b - a }')
    same=0 asked=0 failed=0 misses=0
    stages=
    k=0
    while [ $k -lt $kills ]; do
        d=run.$m
        rm -rf $d
        at=$(awk -v w=$wall -v r=$RANDOM 'BEGIN { printf "%.2f", w * r / 32768 }')
        t0=${EPOCHREALTIME/./}
        deadline=$((t0 + $(awk -v t=$at 'BEGIN { printf "%d", t * 1e6 }')))
        setsid $cmd egs nnet.config $d >$d.kill.log 2>&1 &
        pid=$!
        disown $pid
        # Wait until the kill time, or until the run ends by itself: then the wall time to draw
        # from was too long (the machine's load changes) and this kill is drawn again.
        while kill -0 $pid 2>/dev/null && [ ${EPOCHREALTIME/./} -lt $deadline ]; do sleep 0.02; done
        if ! kill -0 $pid 2>/dev/null; then
            wall=$(awk -v us=$(( ${EPOCHREALTIME/./} - t0 )) 'BEGIN { printf "%.2f", 0.95 * us / 1e6 }')
            misses=$((misses + 1))
            continue
        fi
        k=$((k + 1))
        # The whole session: setsid made the recipe a session leader, its pid is the session id.
        pkill -KILL -s $pid 2>/dev/null
        while kill -0 $pid 2>/dev/null; do sleep 0.05; done
        sleep 0.2; pkill -KILL -s $pid 2>/dev/null
        doing=$(grep -o 'iteration [0-9]* /\|combining\|done' $d.kill.log | tail -n 1 | tr -d ' /')
        stage=$(resume_stage $d)
        $cmd --stage $stage egs nnet.config $d >$d.resume.log 2>&1; rc=$?
        used=$stage
        again=$(grep -o 'resume with --stage [0-9-]*' $d.resume.log | awk '{print $4}' | tail -n 1)
        if [ $rc -ne 0 ] && [ -n "$again" ]; then
            asked=$((asked + 1)); used="$stage->$again"
            $cmd --stage $again egs nnet.config $d >>$d.resume.log 2>&1; rc=$?
        fi
        if [ $rc -eq 0 ] && cmp -s ref.$m/final.mdl $d/final.mdl; then
            same=$((same + 1)); verdict=identical
        else
            failed=$((failed + 1)); verdict="DIFFERENT (resume exit $rc)"
            cp -r $d $d.failed.$k; cp $d.kill.log $d.resume.log $d.failed.$k/
        fi
        echo "$m kill $k at ${at}s (${doing:-start}): resumed --stage $used: $verdict"
        stages="$stages $stage"
    done
    echo "SUMMARY $m: $same of $kills identical ($asked resumed at the stage the recipe named), kill times drawn from 0..${wall}s ($misses redrawn: the run had ended), stages:$stages"
done
