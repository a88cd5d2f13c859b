#!/usr/bin/env bash
# utils/run.pl: arrays, Kaldi's log header/footer, JOB substitution, escaped metacharacters,
# failures named, --max-jobs-run, Kaldi's one-job-per-GPU rule for --gpu.
. "$(dirname "$0")/lib.sh"
run=$PARNET_TOP/utils/run.pl

# max_overlap FILE: the most "+" lines not yet matched by "-" lines (jobs running at once).
max_overlap() { awk '/^\+/ { c++; if (c > m) m = c } /^-/ { c-- } END { print m + 0 }' "$1"; }

expect_status "array of 4" 0 $run JOB=1:4 log/a.JOB.log echo job JOB \| tr j J
ok=true
for j in 1 2 3 4; do [ "$(sed -n 4p log/a.$j.log)" = "Job $j" ] || ok=false; done
expect_eq "array outputs, JOB in command and log name" $ok true
expect_eq "header: command" "$(sed -n 1p log/a.3.log)" "# echo job 3 | tr j J"
expect_eq "header: Started at" "$(sed -n 2p log/a.3.log | grep -c '^# Started at ')" 1
expect_eq "header: #" "$(sed -n 3p log/a.3.log)" "#"
expect_eq "footer: Accounting" \
    "$(tail -n 2 log/a.3.log | head -n 1 | grep -Ec '^# Accounting: time=[0-9]+ threads=1$')" 1
expect_eq "footer: Ended" \
    "$(tail -n 1 log/a.3.log | grep -Ec '^# Ended \(code 0\) at .*, elapsed time [0-9]+ seconds$')" 1

# Recipes escape pipes and redirections, quote '&&', and use $[JOB+n] (steps/get_egs.sh).
expect_status "escaped > and &&" 0 $run JOB=1:2 log/e.JOB.log \
    echo s=\$[JOB+10] \> out.JOB '&&' cat out.JOB
expect_eq "escaped > and && output" "$(cat out.2) $(sed -n 4p log/e.1.log)" "s=12 s=11"
expect_status "argument with spaces stays one argument" 0 $run log/q.log echo "a  b" c
expect_eq "argument with spaces output" "$(sed -n 4p log/q.log)" "a  b c"

# One failing job of three: non-zero, and the failed log is named.
expect_status "failing job -> non-zero" 1 $run JOB=1:3 log/f.JOB.log test JOB -ne 2
expect_err "failure names the failed log" "^run\.pl:   log/f\.2\.log$"
expect_err "failure summary" "^run\.pl: 1 / 3 failed, log is in log/f\.\*\.log$"
expect_eq "only the failed job is named" "$(grep -c 'f\.[13]\.log' err)" 0
expect_eq "failed job's footer" "$(tail -n 1 log/f.2.log | grep -c '^# Ended (code 1) at')" 1
expect_status "single failing job" 1 $run log/one.log false
expect_err "single failure names its log" "log is in log/one\.log$"
expect_status "signalled job -> non-zero" 1 $run log/sig.log kill -9 \$\$
expect_eq "signal in the footer" "$(tail -n 1 log/sig.log | grep -c '^# Ended (code 0; signal 9)')" 1

# --max-jobs-run: never more jobs at once than allowed (and the limit is actually used).
expect_status "--max-jobs-run 2" 0 $run --max-jobs-run 2 JOB=1:5 log/m.JOB.log \
    echo + \>\> ev2 \; sleep 0.4 \; echo - \>\> ev2
expect_eq "at most 2 at once" "$(max_overlap ev2)" 2
expect_status "-tc 1" 0 $run -tc 1 JOB=1:3 log/n.JOB.log \
    echo + \>\> ev1 \; sleep 0.2 \; echo - \>\> ev1
expect_eq "at most 1 at once" "$(max_overlap ev1)" 1
expect_eq "all jobs ran" "$(grep -c + ev2) $(grep -c + ev1)" "5 3"

# --gpu N > 0 (Kaldi): one job per GPU that nvidia-smi -L lists; one at a time when it lists none,
# even for fewer jobs than CPUs (the 1.4 x CPUs allowance is for CPU jobs only). A stand-in
# nvidia-smi first on PATH makes this independent of the machine's GPUs.
mkdir -p fake0 fake2
printf '#!/bin/sh\nexit 9\n' >fake0/nvidia-smi
printf '#!/bin/sh\necho "GPU 0: Fake (UUID: a)"\necho "GPU 1: Fake (UUID: b)"\n' >fake2/nvidia-smi
chmod +x fake0/nvidia-smi fake2/nvidia-smi
PATH=$PWD/fake0:$PATH expect_status "--gpu 1, no GPU counted" 0 $run --gpu 1 JOB=1:2 log/g.JOB.log \
    echo + \>\> evg0 \; sleep 0.4 \; echo - \>\> evg0
expect_eq "GPU jobs one at a time" "$(max_overlap evg0)" 1
expect_err "says why" "^run\.pl: cannot count the GPUs"
PATH=$PWD/fake2:$PATH expect_status "--gpu 1, two GPUs" 0 $run --gpu 1 JOB=1:4 log/h.JOB.log \
    echo + \>\> evg2 \; sleep 0.4 \; echo - \>\> evg2
expect_eq "one job per GPU" "$(max_overlap evg2)" 2
PATH=$PWD/fake0:$PATH expect_status "--gpu 1 --max-jobs-run 2" 0 $run --gpu 1 --max-jobs-run 2 \
    JOB=1:3 log/i.JOB.log echo + \>\> evg3 \; sleep 0.4 \; echo - \>\> evg3
expect_eq "an explicit --max-jobs-run wins" "$(max_overlap evg3)" 2
expect_status "--gpu 0 is a CPU job" 0 $run --gpu 0 JOB=1:2 log/k.JOB.log true
expect_status "bad --gpu" 1 $run --gpu x log/x.log true

# Usage errors.
expect_status "array without JOB in the log name" 1 $run JOB=1:2 log/nojob.log true
expect_err "names the problem" "lacks 'JOB'"
expect_status "bad range" 1 $run JOB=3:2 log/x.JOB.log true
expect_status "unknown option" 1 $run --no-such-option 1 log/x.log true
expect_status "queue options are accepted" 0 $run --mem 2G --num-threads 2 -V JOB=1:1 log/o.JOB.log true

# Issue 29: an argument holding both ' and ", and a log name with ', reach bash correctly.
expect_status "both quotes in an argument" 0 run.pl q.log echo "it's \"quoted\""
expect_eq "the argument as given" "$(grep -v '^#' q.log)" "it's \"quoted\""
expect_status "a log name with '" 0 run.pl JOB=1:2 "it's.JOB.log" echo "a'b\"JOB"
expect_eq "the log with ' written" "$(grep -v '^#' "it's.2.log")" "a'b\"2"
