#!/usr/bin/env perl
# run.pl: run a command, or an array of jobs, on this machine, in Kaldi's job-runner interface.
#
#   run.pl [options] [JOB=1:N] log/x.JOB.log command args...
#
# JOB in the log name and the command is replaced by each job number. Each job runs under bash as
# "( command ) >>log 2>&1", with Kaldi's header and footer lines in its log. Exit status 0 only if
# every job succeeded; otherwise "run.pl: K / M failed, log is in ..." and status 1.
# Options: --max-jobs-run N (or -tc N): at most N jobs at once (default: number of CPUs).
#          --mem, --num-threads, --gpu, --time, --config and other queue options are accepted and
#          ignored, so that recipes can pass the same options to run.pl, queue.pl and slurm.pl.
use strict;
use warnings;
use POSIX ":sys_wait_h";

my $max_jobs_run = -1;
my ($jobname, $jobstart, $jobend) = (undef, 1, 1);

sub usage {
    print STDERR "Usage: run.pl [options] [JOB=1:N] log-file command-line arguments...\n" .
                 "e.g.: run.pl JOB=1:4 exp/log/train.JOB.log nnet-train ... egs.JOB.ark ...\n" .
                 "Options: --max-jobs-run N (default: number of CPUs); queue options are ignored.\n";
    exit 1;
}

while (@ARGV >= 2 && $ARGV[0] =~ m/^-/) {
    my $switch = shift @ARGV;
    if ($switch eq "--max-jobs-run" || $switch eq "-tc") {
        $max_jobs_run = shift @ARGV;
        $max_jobs_run =~ m/^\d+$/ && $max_jobs_run > 0 or die "run.pl: invalid --max-jobs-run '$max_jobs_run'\n";
    } elsif ($switch =~ m/^--(mem|num-threads|gpu|time|config|max-mem|sync|queue|partition)$/ ||
             $switch =~ m/^-(pe|l|q|V|sync|hold_jid)$/) {
        shift @ARGV; # option with one argument, meaningful only on a cluster
        if ($switch eq "-pe") { shift @ARGV; }
    } else {
        die "run.pl: unknown option '$switch'\n";
    }
}

if (@ARGV && $ARGV[0] =~ m/^([\w_][\w\d_]*)=(\d+):(\d+)$/) {
    ($jobname, $jobstart, $jobend) = ($1, $2, $3);
    shift @ARGV;
    die "run.pl: invalid job range $ARGV[0]: start must be >= 1 and <= end\n"
        if $jobstart < 1 || $jobstart > $jobend;
} elsif (@ARGV && $ARGV[0] =~ m/^([\w_][\w\d_]*)=(\d+)$/) {
    ($jobname, $jobstart, $jobend) = ($1, $2, $2);
    shift @ARGV;
}
usage() if @ARGV < 2;

my $logfile = shift @ARGV;
if (defined $jobname && $jobend > $jobstart && $logfile !~ m/$jobname/) {
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
    my $njobs = $jobend - $jobstart + 1;
    $max_jobs_run = $njobs if $njobs < 1.4 * $ncpu; # Kaldi: a few more than CPUs is fine
}

my %active;   # pid -> job id
my $numfail = 0;
my $total = $jobend - $jobstart + 1;

sub reap_one {
    my $pid = wait();
    return if $pid <= 0;
    my $status = $?;
    delete $active{$pid};
    $numfail++ if $status != 0;
}

for (my $jobid = $jobstart; $jobid <= $jobend; $jobid++) {
    reap_one() while scalar(keys %active) >= $max_jobs_run;
    my $pid = fork();
    die "run.pl: fork failed: $!\n" unless defined $pid;
    if ($pid == 0) {
        my $this_cmd = $cmd;
        my $this_log = $logfile;
        if (defined $jobname) {
            $this_cmd =~ s/\b$jobname\b/$jobid/g;
            $this_log =~ s/\b$jobname\b/$jobid/g;
        }
        my $dir = $this_log;
        if ($dir =~ s:/[^/]+$::) { system("mkdir -p '$dir'") == 0 or die "run.pl: cannot make $dir\n"; }
        open(my $fh, ">", $this_log) or die "run.pl: cannot write log file '$this_log': $!\n";
        print $fh "# $this_cmd \n# Started at " . `date`;
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

if ($numfail > 0) {
    my $logname = $logfile;
    $logname =~ s/\b$jobname\b/*/g if defined $jobname;
    if ($total == 1) {
        print STDERR "run.pl: job failed, log is in $logname\n";
    } else {
        print STDERR "run.pl: $numfail / $total failed, log is in $logname\n";
    }
    exit 1;
}
exit 0;
