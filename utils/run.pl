#!/usr/bin/env perl
# run.pl: run a command, or an array of jobs, on this machine, in Kaldi's job-runner interface.
#
#   run.pl [options] [JOB=1:N] log/x.JOB.log command args...
#
# JOB in the log name and the command is replaced by each job number (plain text substitution, as
# in Kaldi and in queue.pl/slurm.pl). Each job runs under bash as "( command ) >>log 2>&1", with
# Kaldi's header and footer lines in its log. Exit status 0 only if every job succeeded; otherwise
# "run.pl: K / M failed, log is in ..." followed by the failed logs, and status 1.
# JOB=a:b may come before or after the options.
# Options: --max-jobs-run N (or -tc N): at most N jobs at once (default: number of CPUs, or of GPUs
#          with --gpu N > 0, raised to the number of jobs when that is below 1.4 x CPUs).
#          --mem, --num-threads, --gpu, --time, --config and other queue options are accepted and
#          ignored, so that recipes can pass the same options to run.pl, queue.pl and slurm.pl.
use strict;
use warnings;
use POSIX ":sys_wait_h";

my $max_jobs_run = -1;
my $using_gpu = 0;
my ($jobname, $jobstart, $jobend) = (undef, 1, 1);
$SIG{__DIE__} = sub { print STDERR $_[0]; exit 1; }; # usage errors: status 1, not errno

sub usage {
    print STDERR "Usage: run.pl [options] [JOB=1:N] log-file command-line arguments...\n" .
                 "e.g.: run.pl JOB=1:4 exp/log/train.JOB.log nnet-train ... egs.JOB.ark ...\n" .
                 "Options: --max-jobs-run N (default: number of CPUs); queue options are ignored.\n";
    exit 1;
}

for my $pass (1, 2) { # JOB=a:b may come before or after the options (Kaldi)
    while (@ARGV >= 2 && $ARGV[0] =~ m/^-/) {
        my $switch = shift @ARGV;
        if ($switch eq "--max-jobs-run" || $switch eq "-tc") {
            $max_jobs_run = shift @ARGV;
            $max_jobs_run =~ m/^\d+$/ && $max_jobs_run > 0
                or die "run.pl: invalid --max-jobs-run '$max_jobs_run'\n";
        } elsif ($switch eq "--gpu") {
            $using_gpu = shift @ARGV;
            $using_gpu =~ m/^\d+$/ or die "run.pl: invalid --gpu '$using_gpu'\n";
        } elsif ($switch eq "-V") {
            # qsub's "export the environment": no argument; local jobs inherit it anyway
        } elsif ($switch =~ m/^--(mem|num-threads|time|config|max-mem|sync|queue|partition)$/ ||
                 $switch =~ m/^-(pe|l|q|sync|hold_jid|p)$/) {
            shift @ARGV; # option with one argument, meaningful only on a cluster
            if ($switch eq "-pe") { shift @ARGV; }
        } else {
            die "run.pl: unknown option '$switch'\n";
        }
    }
    if (@ARGV && $ARGV[0] =~ m/^([\w_][\w\d_]*)=(\d+):(\d+)$/) {
        ($jobname, $jobstart, $jobend) = ($1, $2, $3);
        die "run.pl: invalid job range $ARGV[0]: start must be >= 1 and <= end\n"
            if $jobstart < 1 || $jobstart > $jobend;
        shift @ARGV;
    } elsif (@ARGV && $ARGV[0] =~ m/^([\w_][\w\d_]*)=(\d+)$/) {
        ($jobname, $jobstart, $jobend) = ($1, $2, $2);
        die "run.pl: invalid job number $ARGV[0]: must be >= 1\n" if $jobstart < 1;
        shift @ARGV;
    }
}
usage() if @ARGV < 2;

my $logfile = shift @ARGV;
if (defined $jobname && $jobend > $jobstart && index($logfile, $jobname) < 0) {
    die "run.pl: you are running an array of jobs but the log file '$logfile' lacks '$jobname'\n";
}

# Re-quote the arguments so that bash sees what the caller meant (Kaldi's rules).
my $cmd = "";
foreach my $x (@ARGV) {
    if ($x =~ m/^\S+$/) { $cmd .= $x . " "; }
    elsif ($x =~ m:\":) { $cmd .= "'$x' "; }
    else { $cmd .= "\"$x\" "; }
}
$cmd =~ s/ $//;

if ($max_jobs_run == -1) {
    my $ncpu = `nproc 2>/dev/null` || 1;
    chomp $ncpu;
    $max_jobs_run = $ncpu;
    if ($using_gpu) { # one job per GPU (Kaldi), if we can count them
        my $ngpu = () = `nvidia-smi -L 2>/dev/null` =~ m/^GPU \d+/mg;
        $max_jobs_run = $ngpu if $ngpu > 0;
    }
    my $njobs = $jobend - $jobstart + 1;
    $max_jobs_run = $njobs if $njobs < 1.4 * $ncpu; # Kaldi: a few more than CPUs is fine
}

my %active;   # pid -> job id
my @failed;   # job ids
my $total = $jobend - $jobstart + 1;

sub reap_one {
    my $pid = wait();
    return if $pid <= 0;
    my $status = $?;
    my $jobid = delete $active{$pid};
    push @failed, $jobid if $status != 0;
}

for (my $jobid = $jobstart; $jobid <= $jobend; $jobid++) {
    reap_one() while scalar(keys %active) >= $max_jobs_run;
    my $pid = fork();
    die "run.pl: fork failed: $!\n" unless defined $pid;
    if ($pid == 0) {
        my $this_cmd = $cmd;
        my $this_log = $logfile;
        if (defined $jobname) {
            $this_cmd =~ s/$jobname/$jobid/g;
            $this_log =~ s/$jobname/$jobid/g;
        }
        my $dir = $this_log;
        if ($dir =~ s:/[^/]+$::) { system("mkdir -p '$dir'") == 0 or die "run.pl: cannot make $dir\n"; }
        open(my $fh, ">", $this_log) or die "run.pl: cannot write log file '$this_log': $!\n";
        print $fh "# $this_cmd\n# Started at " . `date` . "#\n";
        close $fh;
        my $start = time();
        my $ret = system("bash", "-c", "( $this_cmd ) >>'$this_log' 2>&1");
        my $lowbits = $ret & 127;
        my $code = $ret >> 8;
        my $elapsed = time() - $start;
        open($fh, ">>", $this_log) or die "run.pl: cannot append to '$this_log'\n";
        print $fh "# Accounting: time=$elapsed threads=1\n";
        my $desc = $lowbits != 0 ? "code $code; signal $lowbits" : "code $code";
        my $date = `date`;
        chomp $date;
        print $fh "# Ended ($desc) at $date, elapsed time $elapsed seconds\n";
        close $fh;
        exit($ret == 0 ? 0 : 1);
    }
    $active{$pid} = $jobid;
}
reap_one() while scalar(keys %active) > 0;

if (@failed) {
    my $logname = $logfile;
    if ($total == 1) {
        $logname =~ s/$jobname/$failed[0]/g if defined $jobname;
        print STDERR "run.pl: job failed, log is in $logname\n";
    } else {
        $logname =~ s/$jobname/*/g;
        print STDERR "run.pl: " . scalar(@failed) . " / $total failed, log is in $logname\n";
        my $shown = 0;
        foreach my $jobid (sort { $a <=> $b } @failed) {
            if (++$shown > 20) { print STDERR "run.pl:   ...\n"; last; }
            (my $l = $logfile) =~ s/$jobname/$jobid/g;
            print STDERR "run.pl:   $l\n";
        }
    }
    exit 1;
}
exit 0;
