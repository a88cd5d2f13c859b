# steps/lib/train-jobs.sh: steps/train.sh's training jobs of one iteration, what happens when some
# of them fail (a lost node, a killed job, a full disk), and backups for stragglers: sourced after
# option parsing; functions only.
#
# train_jobs_run X NJ OUT CMD... runs CMD through "$cmd JOB=1:NJ $dir/log/train.X.JOB.log", each
# job j writing OUT with JOB replaced by j (removed first). A job counts as done when its model
# exists: programs rename a model into place only when it is complete, so a job lost after that
# point has done its work. On return, jobs_done holds the done jobs' numbers. When some are not
# done, --on-job-failure decides:
#   rerun    (default) run each failed job again, alone, up to --max-job-retries times; a job is
#            deterministic (its seed, archive and model are fixed), so the iteration's models, and
#            the final model, are what they would have been without the failure. The failed
#            attempt's log is kept as train.X.J.log.failed-K.
#   average  go on with the jobs that finished, as nnet3 keeps only the successful jobs' models,
#            if at least --min-jobs-done of them did (default: half, rounded up).
#   stop     exit 1 with one message naming the failed jobs' logs and the --stage to resume at.
# In every case the iteration's input model X.mdl is untouched (models are renamed into place
# when complete), so `--stage X` reruns the iteration.
# How soon a lost job is noticed is the runner's affair: utils/slurm.pl sees Slurm mark the task
# NODE_FAIL once the controller declares its node down (SlurmdTimeout; 300 s by default, 6 s on
# tools/cluster-local.sh), run.pl sees its child exit.
#
# Stragglers (--straggler-backup F > 0; default 0, off): while the jobs run, once half of them
# have finished, a job still running F times as long as the slowest of that half took gets a
# backup: the same job (same archive, seed and model in, so the same bytes out) submitted again
# on its own, its log train.X.J.backup.log; the first copy to finish provides the model (and,
# if the backup, the log train.X.J.log), and once every model is there the rest are cancelled (the runner gets SIGTERM; slurm.pl and
# queue.pl cancel their jobs). The final model is the same as without the straggler; the cost is
# the duplicate work (MapReduce's backup tasks, Dean & Ghemawat, OSDI 2004).
# --straggler-backup-opts: runner options for the backup, HOST replaced by the straggler's host
# (its log's "# Running on"), so that the backup avoids it: "-x HOST" for slurm.pl (sbatch
# --exclude); without it the scheduler may put the backup on the slow node itself.

# The jobs of 1..NJ whose model (OUT with JOB replaced) exists.
train_jobs_present() {
    local nj=$1 out=$2 j
    for j in $(seq $nj); do [ -f ${out//JOB/$j} ] && echo -n "$j "; done
}

# train_jobs_watch X NJ OUT CMD...: the runner of all jobs in the background, with backups for
# stragglers; returns the runner's status, or 0 when every model arrived (backups included).
train_jobs_watch() {
    local x=$1 nj=$2 out=$3; shift 3
    local t0=$SECONDS half_s= j n pids= runner rc
    declare -A backup=()
    # setsid: the runner and its local children form a group that one signal ends.
    setsid $cmd $gpu_queue_opts JOB=1:$nj $dir/log/train.$x.JOB.log "$@" &
    runner=$!
    while kill -0 $runner 2>/dev/null; do
        n=$(train_jobs_present $nj $out | wc -w)
        [ $n -eq $nj ] && break
        [ -z "$half_s" ] && [ $n -ge $(( (nj + 1) / 2 )) ] && half_s=$((SECONDS - t0))
        if [ -n "$half_s" ] && awk -v t=$((SECONDS - t0)) -v h=$half_s -v f=$straggler_backup \
               'BEGIN { exit !(t >= f * (h > 1 ? h : 1)) }'; then
            for j in $(seq $nj); do
                [ -f ${out//JOB/$j} ] || [ -n "${backup[$j]:-}" ] && continue
                local host opts
                host=$(sed -n 's/^# Running on //p' $dir/log/train.$x.$j.log 2>/dev/null | head -n 1)
                opts=${straggler_backup_opts//HOST/${host:-none}}
                echo "$0: iteration $x: job $j still running on ${host:-?} after $((SECONDS - t0)) s ($straggler_backup x the $half_s s of the first half): starting a backup${opts:+ ($opts)}"
                setsid $cmd $gpu_queue_opts $opts JOB=$j:$j $dir/log/train.$x.JOB.backup.log "$@" &
                backup[$j]=$!
                pids="$pids $!"
            done
        fi
        sleep 0.5
    done
    if [ $(train_jobs_present $nj $out | wc -w) -eq $nj ]; then
        for j in $runner $pids; do kill -TERM -- -$j 2>/dev/null; done
        wait 2>/dev/null
        # Where the backup won, its log becomes the job's (the iteration reads objectives there);
        # the straggler's stays as train.X.J.log.straggler.
        local log
        for j in "${!backup[@]}"; do
            log=$dir/log/train.$x.$j.log
            if grep -q 'with status 0$' ${log%.log}.backup.log 2>/dev/null && ! grep -q 'with status 0$' $log 2>/dev/null; then
                mv $log $log.straggler 2>/dev/null; mv ${log%.log}.backup.log $log
            fi
        done
        return 0
    fi
    wait $runner; rc=$?
    for j in $pids; do kill -TERM -- -$j 2>/dev/null; done
    wait 2>/dev/null
    return $rc
}

train_jobs_run() {
    local x=$1 nj=$2 out=$3; shift 3
    local j try missing n_done need log rc
    for j in $(seq $nj); do rm -f ${out//JOB/$j}; done
    if awk -v f=$straggler_backup 'BEGIN { exit !(f > 0) }'; then
        train_jobs_watch $x $nj $out "$@"; rc=$?
    else
        $cmd $gpu_queue_opts JOB=1:$nj $dir/log/train.$x.JOB.log "$@"; rc=$?
    fi
    [ $rc -eq 0 ] && { jobs_done=$(train_jobs_present $nj $out); return 0; }
    for try in $(seq 0 $max_job_retries); do
        jobs_done=$(train_jobs_present $nj $out)
        missing=$(for j in $(seq $nj); do [[ " $jobs_done" == *" $j "* ]] || echo -n "$j "; done)
        [ -z "$missing" ] && return 0
        [ $on_job_failure = rerun ] && [ $try -lt $max_job_retries ] || break
        echo "$0: iteration $x: job(s) ${missing% } failed; rerunning them (retry $((try + 1)) of $max_job_retries)"
        for j in $missing; do
            log=$dir/log/train.$x.$j.log
            [ -f $log ] && mv $log $log.failed-$((try + 1))
            # JOB=j:j keeps the job's own number (its archive and output) under the runner.
            $cmd $gpu_queue_opts JOB=$j:$j $dir/log/train.$x.JOB.log "$@" &
        done
        wait
    done
    n_done=$(wc -w <<<"$jobs_done")
    need=$min_jobs_done
    [ -z "$need" ] && need=$(( (nj + 1) / 2 ))
    if [ $on_job_failure = average ] && [ $n_done -ge $need ]; then
        echo "$0: iteration $x: job(s) ${missing% } failed (logs $dir/log/train.$x.J.log); averaging the $n_done that finished"
        return 0
    fi
    local why="--on-job-failure $on_job_failure"
    [ $on_job_failure = average ] && why="$why: only $n_done of $nj finished, fewer than $need"
    [ $on_job_failure = rerun ] && why="$why, after $max_job_retries retries"
    echo "$0: training iteration $x failed: job(s) ${missing% } of $nj (logs $dir/log/train.$x.J.log; $why); $dir/$x.mdl is intact: resume with --stage $x"
    exit 1
}

# Checks the options: exits 1 with a message on a bad value.
train_jobs_check_opts() {
    case $on_job_failure in rerun|average|stop) ;;
        *) echo "$0: --on-job-failure $on_job_failure: expected rerun, average or stop"; exit 1 ;;
    esac
    [[ $max_job_retries =~ ^[0-9]+$ ]] || { echo "$0: --max-job-retries '$max_job_retries': expected a number"; exit 1; }
    [ -z "$min_jobs_done" ] || [[ $min_jobs_done =~ ^[1-9][0-9]*$ ]] ||
        { echo "$0: --min-jobs-done '$min_jobs_done': expected a number >= 1"; exit 1; }
    [[ $straggler_backup =~ ^[0-9]+(\.[0-9]+)?$ ]] && { [ "$straggler_backup" = 0 ] ||
        awk -v f=$straggler_backup 'BEGIN { exit !(f >= 1) }'; } ||
        { echo "$0: --straggler-backup '$straggler_backup': expected 0 (off) or a factor >= 1"; exit 1; }
    if [ $on_job_failure = average ]; then
        case $averaging in elastic|parle)
            echo "$0: --on-job-failure average does not apply to --averaging $averaging (each job carries its own replica): use rerun or stop"; exit 1 ;;
        esac
    fi
}
