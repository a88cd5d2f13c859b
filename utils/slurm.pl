#!/usr/bin/env perl
# slurm.pl: run a command, or an array of jobs, on Slurm (sbatch), in Kaldi's job-runner
# interface; waits for the jobs and exits 0 only if all of them succeeded.
#
#   slurm.pl [options] [JOB=1:N] log/x.JOB.log command args...
#
# Options: --config FILE (default conf/slurm.conf, else the built-in defaults below), --mem M,
# --num-threads N, --gpu N, --max-jobs-run N (or -tc N), --time T, and any option the config
# defines; other single-dash flags (-p PARTITION ...) go to sbatch as they are.
# Arrays are one sbatch --array=a-b[%max-jobs-run] job. The job script is logdir/q/<base>.sh;
# sbatch's own output goes to logdir/q/<base>.log.
# Waiting does not use sbatch --wait (its poll interval grows to 32 s, and with a short MinJobAge
# it can lose a failure): squeue is polled for the job's existence, and each
# task's status is read from the sync file its script writes (or its log's footer).
# Details of the config, the job script and the waiting: utils/lib/JobQueue.pm.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/lib";
use JobQueue;

# Kaldi's defaults, less the partitions ("-p shared", "-p gpu": the default partition is used) and
# with --export=ALL: with --export=PATH slurmd loads the login environment, ~1 s per task; and with
# --no-requeue: a task lost with its node is reported failed (NODE_FAIL), for the recipe to decide
# (steps/train.sh --on-job-failure), rather than silently requeued by Slurm (JobRequeue=1).
my $default_config = <<'CONF';
command sbatch --export=ALL --ntasks-per-node=1 --no-requeue
option time=* --time $0
option mem=* --mem-per-cpu $0
option mem=0
option num_threads=* --cpus-per-task $0
option num_threads=1 --cpus-per-task 1
option max_jobs_run=*
default gpu=0
option gpu=0
option gpu=* --gres=gpu:$0
CONF

# Job states after which a task's script will never write its sync file.
my %killed = map { $_ => 1 } qw(CANCELLED TIMEOUT NODE_FAIL OUT_OF_MEMORY PREEMPTED BOOT_FAIL
                                DEADLINE);

my %engine = (
    name => "slurm.pl",
    config_file => "conf/slurm.conf",
    default_config => $default_config,
    task_var => "SLURM_ARRAY_TASK_ID",
    times => 1,
    sync_subdir => "",
    skip_opts => {},
    raw_flag => sub {
        my ($sw, $argv, $cli) = @_;
        return "" if $sw eq "-V"; # sbatch exports the environment by itself
        if ($sw eq "-pe") {       # GridEngine's "-pe smp N": N threads
            my ($a, $b) = splice(@$argv, 0, 2);
            die "slurm.pl: -pe needs two arguments\n" unless defined $b && $b =~ m/^\d+$/;
            $cli->{num_threads} = $b;
            return "";
        }
        my $arg = shift @$argv;
        return "$sw " . JobQueue::sq($arg);
    },
    submit => sub {
        my ($s) = @_;
        my $cmd = "$s->{command} $s->{flags} $s->{raw} --open-mode=append -o " .
                  JobQueue::sq($s->{qlog});
        if ($s->{array}) {
            $cmd .= " --array=$s->{array}[0]-$s->{array}[1]";
            $cmd .= "%$s->{max_jobs_run}" if defined $s->{max_jobs_run};
        }
        return "$cmd " . JobQueue::sq($s->{script});
    },
    parse_id => sub {
        my ($out) = @_;
        return $1 if $out =~ m/Submitted batch job (\d+)/;
        return $1 if $out =~ m/^(\d+)(?:;\S*)?\s*$/m; # sbatch --parsable
        return undef;
    },
    poll => sub {
        my ($id) = @_;
        my ($rc, $out) = JobQueue::run_capture("squeue -h -j $id -o %T");
        if ($rc == 0 && $out =~ m/\S/) {
            return ("alive", {});
        }
        if (!($rc == 0 || $out =~ m/Invalid job id/i)) {
            return ("unknown", {});
        }
        # Gone from the queue: tasks killed by Slurm will not write their status.
        my %dead;
        my ($rc2, $show) = JobQueue::run_capture("scontrol -o show job $id");
        if ($rc2 == 0) {
            foreach my $line (split /\n/, $show) {
                my ($st) = $line =~ m/\bJobState=(\S+)/;
                next unless defined $st && $killed{$st};
                my ($task) = $line =~ m/\bArrayTaskId=(\d+)\b/;
                my ($why) = $line =~ m/\bReason=(\S+)/;
                my $msg = "Slurm job $id ended $st" . (defined $why && $why ne "None" ? " ($why)" : "");
                $dead{defined $task ? $task : ""} = $msg;
            }
        }
        return ("gone", \%dead);
    },
    cancel => sub { return "scancel $_[0]"; },
    transient => sub {
        return $_[0] =~ m/Socket timed out|Unable to contact|try again|temporarily|slurm_load/i;
    },
);

JobQueue::main(\%engine, @ARGV);
