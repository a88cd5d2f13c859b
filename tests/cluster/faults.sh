#!/usr/bin/env bash
# The fault tests of the multi-node cluster (tools/cluster-local.sh), run by hand, as root, from
# a scratch directory (not part of `make test`; t0512 is CI's share of them):
#   cd $(mktemp -d) && PARNET_TOP=/path/to/parnet bash /path/to/parnet/tests/cluster/faults.sh [PART...]
# Parts (default all): recipes, policies, mpi, straggler, fs, espeak. Each prints PASS/FAIL lines and its
# measurements; docs/RELIABILITY.md ("Across machines") has the figures of the last run.
#   recipes    train.sh (4 jobs on 3 nodes) and train_mpi.sh (ranks on 3 nodes) give final
#              models byte-identical to the same runs on this host.
#   policies   a node killed mid-iteration under --on-job-failure average and stop; stop keeps
#              the previous model and --stage resumes to the fault-free final model.
#   mpi        a rank's link cut during nnet-train-mpi's all-reduces: every rank exits with the
#              watchdog's error within --comm-timeout, no model written, the last one intact.
#   straggler  one node limited to 3% of a CPU: the iteration's wall time with and without it,
#              and with the mitigation (--straggler-backup 2), which keeps the model.
#   espeak     egs/espeak-digits (tiny) with every stage's jobs on the cluster: the same final
#              model as on this host.
#   fs         the file server paused 8 s and 25 s, and its link limited to 2 Mbit/s, during a
#              run: the run completes with the fault-free final model, every job accounted for.
top=${PARNET_TOP:?set PARNET_TOP to the repository}
. "$top/tests/prog/lib.sh"
export PATH=$top/bin:$top/utils:$PATH
. "$top/tests/prog/cluster-lib.sh"
parts=${*:-recipes policies mpi straggler fs espeak}
cluster_lock
cluster_egs 4 160
slurm="utils/slurm.pl --config $top/conf/slurm.conf"
cluster_train utils/run.pl ref >ref.log 2>&1 || { fail "reference run"; exit 1; }
cluster_start 3
# wait_log PATTERN 'GLOB': until a line matches in one of the files GLOB names (expanded anew
# each time: the logs appear while it waits); at most 60 s.
wait_log() { local i; for i in $(seq 600); do grep -qs "$1" $2 && return 0; sleep 0.1; done; return 1; }
node_of() { sed -n 's/^# Running on //p' "$1" | head -n 1; }

# A 3-class problem for nnet-train-mpi: 3 ranks x 6000 examples (a few seconds of all-reduces).
mpi_egs() {
    [ -d megs ] && return
    mkdir -p megs/info
    (cd megs && cluster_egs 3 6000 >/dev/null 2>&1 && cp -r egs/* . && rm -rf egs)
}

part_recipes() {
    expect_status "train.sh across 3 nodes" 0 cluster_train "$slurm" clu0
    expect_same "train.sh: final.mdl identical to this host's" ref/final.mdl clu0/final.mdl
    expect_eq "train.sh: the 4 jobs of iteration 0 on 3 hosts" \
        "$(grep -h '^# Running on' clu0/log/train.0.*.log | sort -u | wc -l)" 3
    mpi_egs
    local o="--num-epochs 1 --minibatch-size 32 --average-every 4 --combine false --initial-learning-rate 0.02 --final-learning-rate 0.01"
    expect_status "train_mpi.sh on this host (mpirun)" 0 steps/train_mpi.sh $o megs nnet.config mref
    expect_status "train_mpi.sh, sbatch -N3: ranks on 3 nodes" 0 steps/train_mpi.sh --launcher sbatch \
        --launcher-opts "-N 3" $o megs nnet.config mclu
    expect_same "train_mpi.sh: final.mdl identical to this host's" mref/final.mdl mclu/final.mdl
    expect_eq "train_mpi.sh: each iteration one MPI job on 3 nodes" \
        "$(scontrol -o show jobs | grep 'JobName=wrap' | grep -c 'NodeList=pn\[1-3\]')" 2
}

part_policies() {
    local t
    for p in average stop; do
        # Each time a fresh cluster: the node killed before is down.
        "$ctl" stop >/dev/null 2>&1; cluster_start 3
        cluster_slow_shim pn2 '*/2.*.mdl' 60
        PATH=$PWD/shim:$PATH cluster_train "$slurm" pol-$p --on-job-failure $p >pol-$p.log 2>&1 &
        local trainer=$!
        wait_log '^# Running on pn2' "pol-$p/log/train.1.*.log"
        "$ctl" kill-node pn2 >/dev/null; t=$SECONDS
        wait $trainer; local rc=$?
        echo "# --on-job-failure $p: train.sh ended $((SECONDS - t)) s after the kill, status $rc"
        if [ $p = average ]; then
            expect_eq "average: completes" $rc 0
            expect_eq "average: says which jobs it left out" \
                "$(grep -Ec 'iteration 1: job\(s\) [0-9 ]+ failed .*averaging the [0-9] that finished' pol-$p.log)" 1
            grep 'averaging the' pol-$p.log | sed 's/^/    /'
        else
            expect_eq "stop: exit 1" $rc 1
            expect_eq "stop: one error naming the jobs and the stage" \
                "$(grep -Ec 'training iteration 1 failed: job\(s\) [0-9 ]+ of 4 .*resume with --stage 1' pol-$p.log)" 1
            expect_same "stop: 1.mdl intact" ref/1.mdl pol-$p/1.mdl
            expect_eq "stop: no 2.mdl" "$(ls pol-$p/2.mdl 2>&1 | grep -c 'No such')" 1
            expect_status "stop: --stage 1 resumes on the nodes left" 0 cluster_train "$slurm" pol-$p --stage 1
            expect_same "stop: after the resume, final.mdl is the fault-free one" ref/final.mdl pol-$p/final.mdl
        fi
    done
}

part_mpi() {
    "$ctl" stop >/dev/null 2>&1; cluster_start 3   # every node up (a part before may have killed one)
    mpi_egs
    nnet-init --srand=1 nnet.config m0.mdl 2>/dev/null
    local timeout=10 t rc
    # 3 ranks on 3 nodes, an all-reduce of the steps every minibatch (gradients mode).
    srun --mpi=pmix --kill-on-bad-exit=1 -N 3 -n 3 nnet-train-mpi --mode=gradients --minibatch-size=8 \
        --comm-timeout=$timeout m0.mdl "ark:megs/egs.JOB.0.ark" m1.mdl >mpi.out 2>mpi.err &
    local launcher=$!
    sleep 2
    local victim=pn3   # rank 2 (srun -N 3 -n 3: one rank per node, in order)
    "$ctl" isolate "$victim" >/dev/null; t=$SECONDS
    wait $launcher; rc=$?
    echo "# mpi: $victim's link cut; srun ended $((SECONDS - t)) s later with status $rc"
    expect_eq "mpi: the launcher fails" "$((rc != 0))" 1
    expect_eq "mpi: within the timeout plus Slurm's node timeout (6 s) and 10 s" "$((SECONDS - t <= timeout + 16))" 1
    local n
    n=$(grep -c 'all-reduce [0-9]* ([0-9]* bytes): a rank or its network is gone' mpi.err)
    expect_eq "mpi: the watchdog's error on the ranks that could still report ($n)" "$((n >= 1))" 1
    grep -h 'has not completed\|error' mpi.err | head -n 5 | sed 's/^/    /'
    expect_eq "mpi: no model written" "$(ls m1.mdl 2>&1 | grep -c 'No such')" 1
    "$ctl" connect "$victim" >/dev/null
    # The isolated rank itself: its log is local to its node, so read it there.
    "$ctl" stop >/dev/null 2>&1; cluster_start 3
}

# The training step's wall time of iteration 0 in DIR: first job start to last job end
# (slurm.pl's begin_time/end_time lines), backups included.
train_wall() {
    cat $1/log/train.0.*.log | awk -F= '/^# Accounting: begin_time=/ { if (!b || $2 < b) b = $2 }
        /^# Accounting: end_time=/ { if ($2 > e) e = $2 } END { print e - b }'
}

part_straggler() {
    mkdir -p strag && cd strag || return
    cluster_egs 4 4000 1 >/dev/null 2>&1
    # Enough compute per job (seconds) for a CPU limit to show.
    printf '%s\n' "NaturalGradientAffineComponent input-dim=8 output-dim=512" "RectifiedLinearComponent dim=512" \
        "NaturalGradientAffineComponent input-dim=512 output-dim=512" "RectifiedLinearComponent dim=512" \
        "NaturalGradientAffineComponent input-dim=512 output-dim=3" "SoftmaxComponent dim=3" > nnet.config
    local t0 normal slow backup
    t0=$SECONDS; cluster_train "$slurm" s-normal >/dev/null 2>&1; normal=$((SECONDS - t0))
    "$ctl" throttle pn3 3 >/dev/null
    t0=$SECONDS; cluster_train "$slurm" s-slow >/dev/null 2>&1; slow=$((SECONDS - t0))
    t0=$SECONDS; cluster_train "$slurm" s-backup --straggler-backup 2 --straggler-backup-opts "-x HOST" >s-backup.log 2>&1; backup=$((SECONDS - t0))
    "$ctl" unthrottle pn3 >/dev/null
    echo "# straggler (pn3 at 3% of a CPU): training step of the iteration $(train_wall s-normal) s without it," \
         "$(train_wall s-slow) s with it, $(train_wall s-backup) s with --straggler-backup 2;" \
         "whole runs $normal / $slow / $backup s"
    grep 'starting a backup' s-backup.log | sed 's/^/    /'
    expect_same "straggler: the same model, only later" s-normal/final.mdl s-slow/final.mdl
    expect_same "straggler backup: the same model" s-normal/final.mdl s-backup/final.mdl
    expect_eq "straggler backup: a backup was started" "$(grep -c 'starting a backup' s-backup.log)" 1
    cd ..
}

part_fs() {
    cluster_train "$slurm" fs-pause >fs-pause.log 2>&1 &
    local trainer=$! rc t
    wait_log '^# Running on' 'fs-pause/log/train.0.*.log'
    "$ctl" fs-pause >/dev/null; sleep 8; "$ctl" fs-resume >/dev/null
    wait $trainer; rc=$?
    expect_eq "fs paused 8 s: the run completes" $rc 0
    expect_same "fs paused: final.mdl is the fault-free one" ref/final.mdl fs-pause/final.mdl
    expect_eq "fs paused: every job's log ends with status 0" \
        "$(grep -L 'with status 0$' fs-pause/log/train.*.log | wc -l)" 0
    "$ctl" fs-slow 2000 >/dev/null
    t=$SECONDS
    expect_status "fs at 2 Mbit/s: the run completes" 0 cluster_train "$slurm" fs-slow
    "$ctl" fs-fast >/dev/null
    echo "# fs at 2 Mbit/s: $((SECONDS - t)) s for the run"
    expect_same "fs slow: final.mdl is the fault-free one" ref/final.mdl fs-slow/final.mdl
    # Longer than sshfs's keep-alive (3 x 5 s): the mounts drop their connection and reconnect;
    # what was in flight fails with an I/O error, the job fails, and the policy reruns it.
    cluster_train "$slurm" fs-long >fs-long.log 2>&1 &
    trainer=$!
    wait_log '^# Running on' 'fs-long/log/train.0.*.log'
    "$ctl" fs-pause >/dev/null; sleep 25; "$ctl" fs-resume >/dev/null
    wait $trainer; rc=$?
    echo "# fs paused 25 s: train.sh status $rc; $(grep -c rerunning fs-long.log) rerun line(s)"
    grep -h 'failed\|rerunning' fs-long.log | head -n 4 | sed 's/^/    /'
    expect_eq "fs paused 25 s: the run completes" $rc 0
    expect_same "fs paused 25 s: final.mdl is the fault-free one" ref/final.mdl fs-long/final.mdl
}

part_espeak() {
    local r=$top/egs/espeak-digits o="--size tiny --num-epochs 2"
    expect_status "espeak-digits on this host (run.pl)" 0 $r/run.sh $o \
        --data $PWD/es-l/data --exp $PWD/es-l/exp --feat-dir $PWD/es-l/fbank
    expect_status "espeak-digits on the cluster (slurm.pl)" 0 $r/run.sh $o \
        --cmd "utils/slurm.pl --config $top/conf/slurm.conf" \
        --data $PWD/es-c/data --exp $PWD/es-c/exp --feat-dir $PWD/es-c/fbank
    expect_same "espeak-digits: final.mdl identical to this host's" es-l/exp/nnet/final.mdl es-c/exp/nnet/final.mdl
    local hosts
    hosts=$(cat es-c/exp/make_fbank/*.log es-c/exp/nnet/log/train.*.log | sed -n 's/^# Running on //p' | sort -u | wc -l)
    expect_eq "espeak-digits: features and training jobs ran on more than one node ($hosts)" "$((hosts >= 2))" 1
}

for p in $parts; do echo "## $p"; part_$p; done
"$ctl" stop >/dev/null 2>&1
