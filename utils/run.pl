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
# Options: --max-jobs-run N (or -tc N): at most N jobs at once. Default (Kaldi's rule): without
#          --gpu, the number of CPUs, raised to the number of jobs when that is below 1.4 x CPUs;
#          with --gpu N > 0, one job per GPU (nvidia-smi -L), or one at a time when the GPUs
#          cannot be counted, so that two jobs never share a GPU.
#          --mem, --num-threads, --time, --config and other queue options are accepted and
#          ignored, so that recipes can pass the same options to run.pl, queue.pl and slurm.pl.
# The command line, the quoting of the arguments and the failure report are utils/lib/JobQueue.pm's,
# shared with queue.pl and slurm.pl.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/lib";
use JobQueue;

$SIG{__DIE__} = sub { print STDERR $_[0]; exit 1; }; # usage errors: status 1, not errno

my $usage = "Usage: run.pl [options] [JOB=1:N] log-file command-line arguments...\n" .
            "e.g.: run.pl JOB=1:4 exp/log/train.JOB.log nnet-train ... egs.JOB.ark ...\n" .
            "Options: --max-jobs-run N (default: number of CPUs; with --gpu 1, of GPUs);\n" .
            "         queue options are ignored.\n";

# Queue flags meaningful only on a cluster: taken off the command line with their arguments.
my %flag_args = ("-V" => 0, "-pe" => 2, "-l" => 1, "-q" => 1, "-hold_jid" => 1, "-p" => 1);
my $skip_flag = sub {
    my ($sw, $argv) = @_;
    die "run.pl: unknown option '$sw'\n" unless exists $flag_args{$sw};
    splice(@$argv, 0, $flag_args{$sw});
    return ();
};
my $job = JobQueue::parse_args("run.pl", $usage, $skip_flag, @ARGV);
my %known = map { $_ => 1 } qw(max_jobs_run gpu mem num_threads time max_mem sync queue partition);
foreach my $name (keys %{$job->{cli}}) {
    (my $opt = "--$name") =~ s/_/-/g;
    die "run.pl: unknown option '$opt'\n" unless $known{$name};
}
my $using_gpu = $job->{cli}{gpu} || 0;
my ($tasks, $logof) = JobQueue::task_logs($job);
my $max_jobs_run = $job->{cli}{max_jobs_run} || default_max_jobs($using_gpu, scalar(@$tasks));

# Kaldi's default: one job per GPU for GPU jobs (a GPU in exclusive mode takes one process, and
# two training jobs sharing one would both crawl); CPUs otherwise, with a few extra jobs allowed
# rather than leaving a short tail.
sub default_max_jobs {
    my ($gpu, $njobs) = @_;
    if ($gpu) {
        my $ngpu = () = `nvidia-smi -L 2>/dev/null` =~ m/^GPU \d+/mg;
        return $ngpu if $ngpu > 0;
        print STDERR "run.pl: cannot count the GPUs (nvidia-smi -L); running one GPU job at a time\n";
        return 1;
    }
    my $ncpu = `nproc 2>/dev/null` || 1;
    chomp $ncpu;
    $ncpu = 1 unless $ncpu =~ m/^\d+$/ && $ncpu > 0;
    return $njobs if $njobs > $ncpu && $njobs < 1.4 * $ncpu;
    return $ncpu;
}

# One job: its log's header, the command under bash, the footer. Exits with 0 or 1.
sub run_job {
    my ($jobid) = @_;
    my $cmd = $job->{cmd};
    $cmd =~ s/$job->{jobname}/$jobid/g if $jobid ne "";
    my $log = $logof->{$jobid};
    my $dir = $log;
    if ($dir =~ s:/[^/]+$::) { system("mkdir", "-p", $dir) == 0 or die "run.pl: cannot make $dir\n"; }
    open(my $fh, ">", $log) or die "run.pl: cannot write log file '$log': $!\n";
    print $fh "# $cmd\n# Started at " . `date` . "#\n";
    close $fh;
    my $start = time();
    my $ret = system("bash", "-c", "( $cmd ) >>" . JobQueue::sq($log) . " 2>&1");
    my ($lowbits, $code, $elapsed) = ($ret & 127, $ret >> 8, time() - $start);
    open($fh, ">>", $log) or die "run.pl: cannot append to '$log'\n";
    print $fh "# Accounting: time=$elapsed threads=1\n";
    my $desc = $lowbits != 0 ? "code $code; signal $lowbits" : "code $code";
    my $date = `date`;
    chomp $date;
    print $fh "# Ended ($desc) at $date, elapsed time $elapsed seconds\n";
    close $fh;
    exit($ret == 0 ? 0 : 1);
}

my %active;   # pid -> job id
my @failed;   # job ids
sub reap_one {
    my $pid = wait();
    return if $pid <= 0;
    my $jobid = delete $active{$pid};
    push @failed, $jobid if $? != 0;
}

foreach my $jobid (@$tasks) {
    reap_one() while scalar(keys %active) >= $max_jobs_run;
    my $pid = fork();
    die "run.pl: fork failed: $!\n" unless defined $pid;
    run_job($jobid) if $pid == 0;
    $active{$pid} = $jobid;
}
reap_one() while scalar(keys %active) > 0;

exit 0 unless @failed;
JobQueue::report_failures("run.pl", $job, scalar(@$tasks), \@failed, $logof, {});
exit 1;
