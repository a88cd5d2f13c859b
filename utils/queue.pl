#!/usr/bin/env perl
# queue.pl: run a command, or an array of jobs, on Grid Engine (qsub), in Kaldi's job-runner
# interface; waits for the jobs and exits 0 only if all of them succeeded.
#
#   queue.pl [options] [JOB=1:N] log/x.JOB.log command args...
#
# Options: --config FILE (default conf/queue.conf, else the built-in defaults below), --mem M,
# --num-threads N, --gpu N, --max-jobs-run N (or -tc N), --time T, and any option the config
# defines; -pe, -V, -q ... go to qsub as they are. Arrays are submitted as one qsub -t a-b job.
# The job script is logdir/q/<base>.sh and qsub's own output goes to logdir/q/<base>.log.
# Details of the config, the job script and the waiting: utils/lib/JobQueue.pm.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/lib";
use JobQueue;
use Time::Local qw(timelocal);

my %month = (Jan => 0, Feb => 1, Mar => 2, Apr => 3, May => 4, Jun => 5, Jul => 6, Aug => 7,
             Sep => 8, Oct => 9, Nov => 10, Dec => 11);

# Kaldi's defaults, less ram_free (not a standard complex) and plus --time.
my $default_config = <<'CONF';
command qsub -v PATH -cwd -S /bin/bash -j y -l arch=*64*
option mem=* -l mem_free=$0
option mem=0
option num_threads=* -pe smp $0
option num_threads=1
option max_jobs_run=* -tc $0
option time=* -l h_rt=$0
default gpu=0
option gpu=0
option gpu=* -l gpu=$0 -q '*.q'
CONF

# Debian's clients work without these, other installations need them.
if (!defined $ENV{SGE_ROOT} && -d "/var/lib/gridengine/default") {
    $ENV{SGE_ROOT} = "/var/lib/gridengine";
    $ENV{SGE_CELL} = "default" unless defined $ENV{SGE_CELL};
}

my %engine = (
    name => "queue.pl",
    config_file => "conf/queue.conf",
    default_config => $default_config,
    task_var => "SGE_TASK_ID",
    times => 0,
    sync_subdir => "sync",
    raw_flag => sub {
        my ($sw, $argv) = @_;
        return $sw if $sw eq "-V";
        if ($sw eq "-pe") {
            my ($a, $b) = splice(@$argv, 0, 2);
            die "queue.pl: -pe needs two arguments\n" unless defined $b;
            return "-pe " . JobQueue::sq($a) . " " . JobQueue::sq($b);
        }
        my $arg = shift @$argv;
        return "$sw " . JobQueue::sq($arg);
    },
    submit => sub {
        my ($s) = @_;
        my $cmd = "$s->{command} $s->{flags} $s->{raw} -o " . JobQueue::sq($s->{qlog});
        $cmd .= " -t $s->{array}[0]-$s->{array}[1]" if $s->{array};
        return "$cmd " . JobQueue::sq($s->{script});
    },
    parse_id => sub {
        my ($out) = @_;
        return $1 if $out =~ m/Your job(?:-array)? (\d+)/;
        return $1 if $out =~ m/^(\d+)(?:\.\S*)?\s*$/m; # qsub -terse
        return undef;
    },
    poll => sub {
        my ($id) = @_;
        my ($rc, $out) = JobQueue::run_capture("qstat -j $id");
        if ($out =~ m/do not exist/) {
            # Gone: tasks that Grid Engine killed (qdel, h_rt, ...) will not write their status.
            # qacct knows them once the accounting file is flushed (sge-local.sh: within 1 s).
            my %dead;
            my ($rc2, $acct) = JobQueue::run_capture("qacct -j $id");
            if ($rc2 == 0) {
                foreach my $rec (split /\n=+\n/, $acct) {
                    my ($task) = $rec =~ m/^taskid\s+(\d+)/m;
                    my ($failed) = $rec =~ m/^failed\s+(\d+.*?)\s*$/m;
                    my ($exit) = $rec =~ m/^exit_status\s+(\d+)/m;
                    next unless defined $failed && $failed !~ m/^0\b/;
                    # Job numbers restart when the spool is recreated: skip older namesakes.
                    my ($mon, $d, $hh, $mm, $ss, $y) =
                        $rec =~ m/^qsub_time\s+\w+\s+(\w+)\s+(\d+)\s+(\d+):(\d+):(\d+)\s+(\d+)/m;
                    next if defined $y && exists $month{$mon} &&
                        timelocal($ss, $mm, $hh, $d, $month{$mon}, $y) < $JobQueue::submit_time - 60;
                    $task = "" unless defined $task; # "taskid undefined": not an array
                    $dead{$task} = "Grid Engine: failed $failed" .
                                   (defined $exit ? ", exit_status $exit" : "");
                }
            }
            return ("gone", \%dead);
        }
        return ("unknown", {}) if $rc != 0;
        # Tasks in the error state (Eqw: e.g. the directory or shell is missing) never run.
        my %dead;
        while ($out =~ m/^error reason\s+(\d+):\s*(.*)$/mg) {
            $dead{$1} = "Grid Engine error: $2";
        }
        if (%dead && $out !~ m/^job-array tasks:/m) { # not an array: one task, key ""
            %dead = ("" => (values %dead)[0]);
        }
        return ("alive", \%dead);
    },
    cancel => sub { return "qdel $_[0]"; },
    transient => sub { return $_[0] =~ m/qmaster|commlib|gdi|failed receiving|try again/i; },
);

JobQueue::main(\%engine, @ARGV);
