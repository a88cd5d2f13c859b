# steps/lib/train-progress.sh: the training console (sourced by steps/train.sh after option parsing;
# functions only). One line per iteration, read from the logs the iteration's programs wrote:
#
#   steps/train.sh: iteration 3 / 12, 2 jobs, per-job learning rate 0.0112: train -0.7472 (acc 77.7%),
#       valid -0.4763 (acc 85.6%), clipped 100% of steps (component 4), 1.2 s, ETA 11 s
#
#   train     the objective (log-prob per frame) and accuracy of the training jobs during the
#             iteration ("log-prob-per-frame=" and "accuracy" in log/train.X.J.log), mean over jobs;
#   valid     nnet-compute-prob of the new model on the validation subset (log/compute_prob_valid.X+1.log);
#   clipped   the largest share of steps clipped by max-change in any one component, summed over the
#             jobs (nnet-train's "clipped N of M steps" lines); at 95% or more a WARNING line follows:
#             a limit acting on nearly every step means the learning rate is too high;
#   WARNING lines  how many the jobs' logs hold (e.g. the natural gradient's "Cholesky out of range");
#   ETA       the mean seconds per iteration so far times the iterations left.
# train_progress_summary prints the initial and final objectives and accuracies (nnet-compute-prob's
# logs) and the wall time.

progress_t0=$(date +%s.%N)
progress_iters_done=0
progress_seconds=0

# progress_field LOG: "objective accuracy" from a nnet-compute-prob log ("" when absent).
progress_compute_prob() {
    sed -n 's/.*average probability is \([^ ]*\) and accuracy is \([^ ]*\).*/\1 \2/p' $1 2>/dev/null | tail -n 1
}

# progress_seconds_str S: "0.8 s", "42 s", "3 min 20 s", "2 h 05 min".
progress_seconds_str() {
    awk -v s=$1 'BEGIN { if (s < 9.95) { printf "%.1f s", s; exit }
        s = int(s + 0.5)
        if (s < 60) printf "%d s", s
        else if (s < 3600) printf "%d min %02d s", s / 60, s % 60
        else printf "%d h %02d min", s / 3600, (s % 3600) / 60 }'
}

# train_progress_iteration X NJ LR SECONDS: the console line of iteration X (models x+1 made, the
# jobs' logs in $dir/log), then the clipping warning when due.
train_progress_iteration() {
    local x=$1 nj=$2 lr=$3 secs=$4 logs j train valid clip warnings
    logs=$(for j in $jobs_done; do echo -n "$dir/log/train.$x.$j.log "; done)
    train=$(awk '/log-prob-per-frame=/ { sub(/.*log-prob-per-frame=/, ""); o += $1; no++ }
                 /Trained on .*accuracy/ { a += $NF; na++ }
                 END { if (no) { printf "%.4f", o / no; if (na) printf " (acc %.1f%%)", 100 * a / na } }' $logs 2>/dev/null)
    valid=$(progress_compute_prob $dir/log/compute_prob_valid.$((x + 1)).log |
            awk '{ printf "%.4f (acc %.1f%%)", $1, 100 * $2 }')
    # "Max-change of component 4 (Type, max-change=0.75): clipped 12 of 12 steps" per job: the
    # component with the largest share over the jobs; "global" for the global max-change.
    clip=$(awk '/Max-change of component .*: clipped/ {
                    c = $0; sub(/.*Max-change of component /, "", c); t = c; sub(/ .*/, "", c)
                    sub(/^[0-9]+ \(/, "", t); sub(/,.*/, "", t); type[c] = t
                    n = $0; sub(/.*: clipped /, "", n); split(n, f, " "); k[c] += f[1]; m[c] += f[3] }
                /Global max-change .*: clipped/ {
                    n = $0; sub(/.*: clipped /, "", n); split(n, f, " "); k["global"] += f[1]; m["global"] += f[3]
                    type["global"] = "the global max-change" }
                END { best = ""; for (c in m) if (m[c] > 0 && (best == "" || k[c] / m[c] > k[best] / m[best])) best = c
                      if (best != "") printf "%.1f %d %s %s", 100 * k[best] / m[best], k[best] >= 0.95 * m[best], best, type[best] }' $logs 2>/dev/null)
    warnings=$(cat $logs 2>/dev/null | grep -c '^WARNING')
    progress_iters_done=$((progress_iters_done + 1))
    progress_seconds=$(awk -v a=$progress_seconds -v b=$secs 'BEGIN { print a + b }')
    local eta
    eta=$(progress_seconds_str $(awk -v s=$progress_seconds -v l=$((num_iters - x - 1)) -v n=$progress_iters_done 'BEGIN { print s * l / n }'))
    local line="iteration $x / $num_iters, $nj jobs, per-job learning rate $lr: train ${train:-?}, valid ${valid:-?}"
    set -- $clip
    if [ -z "$clip" ]; then :
    elif [ $1 = 0.0 ]; then line="$line, no step clipped"
    elif [ $3 = global ]; then line="$line, clipped $1% of steps (global max-change)"
    else line="$line, clipped $1% of steps (component $3)"; fi
    [ "$warnings" -gt 0 ] && line="$line, $warnings warnings (log/train.$x.*.log)"
    echo "$0: $line, $(progress_seconds_str $secs), ETA $eta"
    if [ -n "$clip" ] && [ $2 = 1 ]; then
        local what="component $3 (${*:4})"
        [ $3 = global ] && what="the global max-change"
        echo "$0: WARNING: iteration $x: max-change clipped $1% of the steps of $what: the step is limited on nearly every minibatch, so the learning rate ($lr per job) is probably too high; try a lower --initial-learning-rate (logs $dir/log/train.$x.*.log)"
    fi
}

# train_progress_summary: initial and final objectives/accuracies and the wall time.
train_progress_summary() {
    local v0 vf tf
    v0=$(progress_compute_prob $dir/log/compute_prob_valid.0.log)
    vf=$(progress_compute_prob $dir/log/compute_prob_valid.final.log)
    tf=$(progress_compute_prob $dir/log/compute_prob_train.final.log)
    [ -z "$vf" ] && return 0
    set -- $v0 $vf $tf
    awk -v v0="$1" -v a0="$2" -v vf="$3" -v af="$4" -v tf="$5" -v at="$6" -v p="$0" -v w="$(progress_seconds_str $(awk -v a=$progress_t0 -v b=$(date +%s.%N) 'BEGIN { print b - a }'))" 'BEGIN {
        printf "%s: summary: valid objective %.4f -> %.4f, valid accuracy %.1f%% -> %.1f%%", p, v0, vf, 100 * a0, 100 * af
        if (tf != "") printf "; final train objective %.4f (acc %.1f%%)", tf, 100 * at
        printf "; %s\n", w }'
}
