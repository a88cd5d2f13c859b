#!/usr/bin/env bash
# utils/lib/JobQueue.pm without an engine: a stand-in engine ("local.pl", below) whose submit
# command runs the job script's tasks on this machine. Checks what queue.pl and slurm.pl share
# (options and config flags, JOB substitution, the job script's log header/footer and sync files,
# waiting, the failure report) without starting Slurm or Grid Engine (those are t0510, t0520).
. "$(dirname "$0")/lib.sh"

cat >local.pl <<PERL
use strict;
use warnings;
use lib "$PARNET_TOP/utils/lib";
use JobQueue;
my \$default_config = <<'CONF';
command bash $PWD/submit.sh
option mem=* -m \$0
option num_threads=* -n \$0
option gpu=0
option gpu=* -g \$0
option max_jobs_run=*
default gpu=0
CONF
my %engine = (
    name => "local.pl", config_file => "conf/local.conf", default_config => \$default_config,
    task_var => "LOCAL_TASK_ID", times => 0, sync_subdir => "", skip_opts => {},
    raw_flag => sub { my (\$sw, \$argv) = @_; return "\$sw " . shift(@\$argv); },
    submit => sub {
        my (\$s) = @_;
        my \$range = \$s->{array} ? "\$s->{array}[0] \$s->{array}[1]" : "0 0";
        return "\$s->{command} \$range " . JobQueue::sq(\$s->{script}) . " \$s->{flags} \$s->{raw}";
    },
    parse_id => sub { return \$_[0] =~ m/^Submitted (\d+)/m ? \$1 : undef; },
    poll => sub { return ("alive", {}); },
    cancel => sub { return "true"; },
    transient => sub { return 0; },
);
JobQueue::main(\\%engine, @ARGV);
PERL
# submit.sh FIRST LAST SCRIPT FLAGS...: runs the tasks in the background, records the flags.
cat >submit.sh <<'SH'
first=$1 last=$2 script=$3; shift 3
echo "$*" >>flags
if [ "$first" = 0 ]; then bash "$script" >/dev/null 2>&1 &
else for t in $(seq "$first" "$last"); do LOCAL_TASK_ID=$t bash "$script" >/dev/null 2>&1 & done; fi
echo "Submitted 42"
SH
q="perl local.pl"

expect_status "array of 3" 0 $q --mem 2G JOB=1:3 log/a.JOB.log echo job JOB \| tr j J
expect_eq "JOB in command and log name" "$(sed -n 4p log/a.2.log)" "Job 2"
expect_eq "header" "$(sed -n 3p log/a.2.log)" "# echo job 2 | tr j J"
expect_eq "footer" "$(tail -n 1 log/a.2.log | grep -Ec '^# Finished at .* with status 0$')" 1
expect_eq "config flags from the options" "$(tail -n 1 flags)" "-m 2G"
expect_status "single job" 0 $q --num-threads 3 -x y log/one.log echo "a  b"
expect_eq "argument with spaces stays one" "$(sed -n 4p log/one.log)" "a  b"
expect_eq "threads in the footer" "$(grep -c '^# Accounting: time=[0-9]* threads=3$' log/one.log)" 1
expect_eq "raw flags passed on" "$(tail -n 1 flags)" "-n 3 -x y"
expect_status "--gpu 1" 0 $q --gpu 1 log/g.log true
expect_eq "gpu flag" "$(tail -n 1 flags)" "-g 1"

expect_status "one of three fails" 1 $q JOB=1:3 log/f.JOB.log test JOB -ne 2
expect_err "summary" "^local\.pl: 1 / 3 failed, log is in log/f\.\*\.log$"
expect_err "the failed log and why" "^local\.pl:   log/f\.2\.log: status 1$"
expect_status "single failure" 1 $q log/s.log false
expect_err "single failure names its log" "^local\.pl: job failed \(status 1\), log is in log/s\.log$"

expect_status "option the config lacks" 1 $q --no-such 1 log/x.log true
expect_err "names it" "option --no-such is not defined in the config"
expect_status "bad range" 1 $q JOB=3:2 log/x.JOB.log true
expect_err "names the range" "invalid job range"
expect_status "array into one log" 1 $q JOB=1:2 log/x.log true
expect_err "names the problem" "lacks 'JOB'"
expect_status "non-integer --max-jobs-run" 1 $q --max-jobs-run x JOB=1:2 log/x.JOB.log true
expect_err "names the option" "--max-jobs-run must be"
expect_status "usage" 1 $q log/x.log
expect_err "usage line" "^Usage: local\.pl "
