# JobQueue.pm: the engine-independent part of utils/queue.pl (Grid Engine) and utils/slurm.pl
# (Slurm): Kaldi's runner command line, the config file, the job script, submission, waiting and
# the final report. Each runner passes a table describing its engine to JobQueue::main().
#
#   X.pl [options] [JOB=a:b] log/x.JOB.log command args...
#
# Options: --config FILE (default conf/queue.conf or conf/slurm.conf if present, else built-in
# defaults); --NAME VALUE for every NAME the config defines (mem, num-threads, gpu, max-jobs-run,
# time in the defaults; "-" becomes "_"); -tc N = --max-jobs-run N; other single-dash flags go to
# the submit command as they are (-pe takes two arguments, -V none; -sync is ignored).
#
# Config lines: "command <submit command and flags>", "option NAME=VALUE <flags>" (used when the
# option has that value), "option NAME=* <flags with $0>" (any other value, substituted for $0),
# "default NAME=VALUE"; "#" starts a comment line. An option the config does not name is fatal.
#
# The job script logdir/q/<base>.sh cds to the caller's directory, sets the caller's PATH, sources
# ./path.sh if there is one, substitutes the task number for JOB in the command and the log name,
# writes the log header (# Running on, # Started at, # <command>), runs the command under bash with
# its output appended to the log, then the footer (# Accounting: time=S threads=T, # Finished at
# <date> with status N) and finally the status into the sync file <syncdir>/done.<pid>[.<task>].
#
# Waiting: the sync files are polled (0.1 s growing to 1 s); every few seconds the engine is asked
# whether the job still exists. Once it does not, a task without a sync file is accepted from its
# log's "with status N" footer, or failed after a grace period (shared filesystems can lag).
# Exit status 0 only if every task finished with status 0; otherwise the failed logs are named.
# INT/TERM/HUP cancel the submitted job (qdel/scancel).
package JobQueue;

use strict;
use warnings;
use Cwd qw(getcwd);
use File::Basename qw(basename dirname);
use File::Path qw(make_path);
use Time::HiRes qw(sleep time);

my $grace_s = 60;          # wait this long for the sync file of a job the engine no longer knows
my $engine_poll_s = 3;     # ask the engine about the job this often
our $submit_time;          # when the job was submitted (epoch seconds)

# Single-quote a string for bash.
sub sq {
    my ($s) = @_;
    $s =~ s/'/'\\''/g;
    return "'$s'";
}

# Kaldi's re-quoting of the command's arguments: no whitespace -> as is; contains a double quote
# -> single quotes; otherwise double quotes. Escaped metacharacters (\| \> '&&') thus reach bash.
# An argument holding both quote characters (where Kaldi's rule gives bash a syntax error) is
# single-quoted with its single quotes escaped: it reaches the program as it was given.
sub join_command {
    my @out;
    foreach my $x (@_) {
        if ($x =~ m/'/ && $x =~ m/"/) { push @out, sq($x); }
        elsif ($x =~ m/^\S+$/) { push @out, $x; }
        elsif ($x =~ m/"/) { push @out, "'$x'"; }
        else { push @out, "\"$x\""; }
    }
    return join(" ", @out);
}

# Parse a config's text into {command, rules => {name => {value => flags}}, defaults => {}}.
sub parse_config {
    my ($text, $source, $prog) = @_;
    my %c = (command => undef, rules => {}, defaults => {});
    my $n = 0;
    foreach my $line (split /\n/, $text) {
        $n++;
        next if $line =~ m/^\s*(#|$)/;
        $line =~ s/\s+$//;
        if ($line =~ m/^command\s+(.+)$/) {
            $c{command} = $1;
        } elsif ($line =~ m/^option\s+(\w+)=(\S+)(?:\s+(.*))?$/) {
            $c{rules}{$1}{$2} = defined $3 ? $3 : "";
        } elsif ($line =~ m/^default\s+(\w+)=(\S+)$/) {
            $c{defaults}{$1} = $2;
        } else {
            die "$prog: $source:$n: cannot parse config line '$line'\n";
        }
    }
    die "$prog: $source: no 'command' line\n" unless defined $c{command};
    return \%c;
}

# Flags for the submit command from the command-line options and the config's defaults.
sub option_flags {
    my ($conf, $cli, $source, $prog, $skip) = @_;
    my %vals = (%{$conf->{defaults}}, %$cli);
    my @flags;
    foreach my $name (sort keys %vals) {
        my $val = $vals{$name};
        my $rules = $conf->{rules}{$name};
        (my $opt = "--$name") =~ s/_/-/g;
        die "$prog: option $opt is not defined in the config ($source)\n" unless defined $rules;
        my $flags;
        if (exists $rules->{$val}) {
            $flags = $rules->{$val};
        } elsif (exists $rules->{'*'}) {
            ($flags = $rules->{'*'}) =~ s/\$0/$val/g;
        } else {
            die "$prog: value '$val' of $opt is not allowed by the config ($source)\n";
        }
        push @flags, $flags if $flags ne "" && !($skip && $skip->{$name});
    }
    return join(" ", @flags);
}

sub read_file {
    my ($f) = @_;
    open(my $fh, "<", $f) or return undef;
    local $/;
    my $s = <$fh>;
    close $fh;
    return $s;
}

# The last "with status N" of a log's last lines, or undef.
sub log_status {
    my ($log) = @_;
    my $s = read_file($log);
    return undef unless defined $s;
    my @lines = split /\n/, $s;
    splice(@lines, 0, @lines - 10) if @lines > 10;
    my $st;
    foreach (@lines) { $st = $1 if m/^# Finished at .* with status (-?\d+)$/; }
    return $st;
}

sub job_script {
    my (%a) = @_;
    my $s = "#!/bin/bash\n";
    $s .= "# $a{prog} job script for: $a{cmd}\n";
    $s .= "cd " . sq($a{cwd}) . " || exit 1\n";
    $s .= "export PATH=" . sq($ENV{PATH}) . "\n";
    $s .= "[ -f ./path.sh ] && . ./path.sh\n";
    $s .= "__cmd=" . sq($a{cmd}) . "\n";
    $s .= "__log=" . sq($a{log}) . "\n";
    $s .= "__sync=" . sq($a{sync}) . "\n";
    if (defined $a{jobname}) {
        my $j = $a{jobname};
        $s .= "__task=\${$a{task_var}}\n";
        $s .= "__cmd=\${__cmd//$j/\$__task}\n";
        $s .= "__log=\${__log//$j/\$__task}\n";
        $s .= "__sync=\$__sync.\$__task\n";
    }
    $s .= <<'EOF';
mkdir -p "$(dirname "$__log")"
{ echo "# Running on $(hostname)"; echo "# Started at $(date)"; printf '# %s\n' "$__cmd"; } >"$__log"
__t1=$(date +%s)
( eval "$__cmd" ) >>"$__log" 2>&1
__ret=$?
__t2=$(date +%s)
{
EOF
    if ($a{times}) {
        $s .= "  echo \"# Accounting: begin_time=\$__t1\"\n";
        $s .= "  echo \"# Accounting: end_time=\$__t2\"\n";
    }
    $s .= "  echo \"# Accounting: time=\$((__t2 - __t1)) threads=$a{threads}\"\n";
    $s .= <<'EOF';
  echo "# Finished at $(date) with status $__ret"
} >>"$__log"
echo $__ret >"$__sync.tmp" && mv -f "$__sync.tmp" "$__sync"
exit $__ret
EOF
    return $s;
}

# Run a shell command line, returning (exit status, combined output).
sub run_capture {
    my ($cmdline) = @_;
    my $out = `$cmdline 2>&1`;
    my $rc = $? == -1 ? 127 : ($? & 127 ? 128 + ($? & 127) : $? >> 8);
    return ($rc, defined $out ? $out : "");
}

# ---- the runner command line (shared with utils/run.pl) ----

# Parse [options] [JOB=a:b] log-file command... into a hash: cli (--NAME VALUE, "-" in NAME
# becomes "_"; -tc N is max_jobs_run), raw (the single-dash flags raw_flag returned), config,
# jobname/jobstart/jobend, logfile, cmd (the command re-quoted by join_command). raw_flag(switch,
# \@argv, \%cli) takes a single-dash flag's arguments off @argv and returns the flags to pass on.
# Usage errors die with "$prog: <reason>" (status 1); too few arguments print $usage.
sub parse_args {
    my ($prog, $usage, $raw_flag, @argv) = @_;
    my (%cli, @raw, $config, $jobname, $jobstart, $jobend);
    for my $pass (1, 2) { # JOB=a:b may come before or after the options (Kaldi)
        while (@argv >= 2 && $argv[0] =~ m/^-/) {
            my $sw = shift @argv;
            if ($sw eq "--config") {
                $config = shift @argv;
            } elsif ($sw eq "-tc") {
                $cli{max_jobs_run} = shift @argv;
            } elsif ($sw =~ m/^--([a-zA-Z][\w-]*)$/) {
                (my $name = $1) =~ s/-/_/g;
                my $val = shift @argv;
                die "$prog: bad value '$val' for $sw\n" unless $val =~ m/^[\w.:,\/=+@%-]+$/;
                $cli{$name} = $val;
            } elsif ($sw eq "-sync") {
                shift @argv; # we always wait for the jobs ourselves
            } else {
                push @raw, $raw_flag->($sw, \@argv, \%cli);
            }
        }
        if (@argv && $argv[0] =~ m/^([\w_][\w\d_]*)=(\d+):(\d+)$/) {
            ($jobname, $jobstart, $jobend) = ($1, $2, $3);
            shift @argv;
        } elsif (@argv && $argv[0] =~ m/^([\w_][\w\d_]*)=(\d+)$/) {
            ($jobname, $jobstart, $jobend) = ($1, $2, $2);
            shift @argv;
        } elsif (@argv && $argv[0] =~ m/^[\w_][\w\d_]*=/) {
            die "$prog: bad job range '$argv[0]' (expected e.g. JOB=1:4)\n";
        }
    }
    if (@argv < 2) { print STDERR $usage; exit 1; }
    if (defined $jobname) {
        die "$prog: invalid job range $jobname=$jobstart:$jobend (need 1 <= start <= end)\n"
            if $jobstart < 1 || $jobstart > $jobend;
    }
    foreach my $n (qw(max_jobs_run num_threads gpu)) {
        (my $opt = "--$n") =~ s/_/-/g;
        die "$prog: $opt must be a non-negative integer, got '$cli{$n}'\n"
            if defined $cli{$n} && $cli{$n} !~ m/^\d+$/;
    }
    die "$prog: --max-jobs-run must be >= 1\n" if defined $cli{max_jobs_run} && $cli{max_jobs_run} < 1;
    my $logfile = shift @argv;
    if (defined $jobname && $jobend > $jobstart && index($logfile, $jobname) < 0) {
        die "$prog: you are running an array of jobs but the log file '$logfile' lacks '$jobname'\n";
    }
    return {cli => \%cli, raw => \@raw, config => $config, jobname => $jobname,
            jobstart => $jobstart, jobend => $jobend, logfile => $logfile,
            cmd => join_command(@argv)};
}

# The task keys ("" for a single job, else the job numbers) and each one's log name.
sub task_logs {
    my ($job) = @_;
    my @tasks = defined $job->{jobname} ? ($job->{jobstart} .. $job->{jobend}) : ("");
    my %logof;
    foreach my $t (@tasks) {
        (my $l = $job->{logfile}) =~ s/$job->{jobname}/$t/g if $t ne "";
        $logof{$t} = $t ne "" ? $l : $job->{logfile};
    }
    return (\@tasks, \%logof);
}

# Kaldi's failure report on stderr: one job -> "job failed[ (why)], log is in LOG"; an array ->
# "K / N failed, log is in PATTERN" and the failed logs (at most 20), each with ": why" when the
# runner knows it. $why->{task} may be missing.
sub report_failures {
    my ($prog, $job, $n, $failed, $logof, $why) = @_;
    if ($n == 1) {
        my $k = $failed->[0];
        my $w = defined $why->{$k} ? " ($why->{$k})" : "";
        print STDERR "$prog: job failed$w, log is in $logof->{$k}\n";
        return;
    }
    (my $pattern = $job->{logfile}) =~ s/$job->{jobname}/*/g;
    print STDERR "$prog: " . scalar(@$failed) . " / $n failed, log is in $pattern\n";
    my $shown = 0;
    foreach my $k (sort { $a <=> $b } @$failed) {
        if (++$shown > 20) { print STDERR "$prog:   ...\n"; last; }
        my $w = defined $why->{$k} ? ": $why->{$k}" : "";
        print STDERR "$prog:   $logof->{$k}$w\n";
    }
}

# ---- the engine-independent steps of queue.pl and slurm.pl ----

# The config: --config FILE, else the engine's config file if present, else its built-in text.
sub load_config {
    my ($e, $config, $prog) = @_;
    my ($text, $src);
    if (defined $config) {
        ($text, $src) = (read_file($config), $config);
    } elsif (-f $e->{config_file}) {
        ($text, $src) = (read_file($e->{config_file}), $e->{config_file});
    } else {
        ($text, $src) = ($e->{default_config}, "built-in defaults");
    }
    die "$prog: cannot read config '$src'\n" unless defined $text;
    return (parse_config($text, $src, $prog), $src);
}

# Writes logdir/q/<base>.sh (write, then rename) and clears each task's sync file and stale log.
# Returns {script, qlog, syncof => {task => sync file}}.
sub prepare_files {
    my ($e, $job, $tasks, $logof, $threads, $prog) = @_;
    my ($logfile, $jobname) = ($job->{logfile}, $job->{jobname});
    my $logdir = dirname($logfile);
    die "$prog: the log directory may not depend on $jobname ($logfile)\n"
        if defined $jobname && index($logdir, $jobname) >= 0;
    my $base = basename($logfile);
    $base =~ s/\.?$jobname//g if defined $jobname;
    $base =~ s/\.log$//;
    $base = "job" if $base eq "";
    my $qdir = "$logdir/q";
    my $syncdir = $e->{sync_subdir} eq "" ? $qdir : "$qdir/$e->{sync_subdir}";
    make_path($syncdir) unless -d $syncdir;
    die "$prog: cannot create $syncdir\n" unless -d $syncdir;
    my $script = "$qdir/$base.sh";
    my $syncbase = "$syncdir/done.$$";
    my %syncof;
    foreach my $k (@$tasks) {
        $syncof{$k} = $k ne "" ? "$syncbase.$k" : $syncbase;
        unlink($syncof{$k});
        unlink($logof->{$k}); # a stale footer must not be taken for this run's
    }
    make_path($logdir) unless -d $logdir;

    my $tmp = "$script.tmp.$$"; # runners with the same log name may run at once
    open(my $sfh, ">", $tmp) or die "$prog: cannot write $script: $!\n";
    print $sfh job_script(prog => $prog, cwd => getcwd(), cmd => $job->{cmd}, log => $logfile,
                          sync => $syncbase, jobname => $jobname, task_var => $e->{task_var},
                          times => $e->{times}, threads => $threads);
    close($sfh) or die "$prog: cannot write $script: $!\n";
    chmod(0755, $tmp);
    rename($tmp, $script) or die "$prog: cannot rename to $script: $!\n";
    return {script => $script, qlog => "$qdir/$base.log", syncof => \%syncof};
}

# Runs the submit command, retrying when the engine is briefly unreachable; returns the job id
# or exits 1 with the command and its output.
sub submit_job {
    my ($e, $submit, $prog) = @_;
    $JobQueue::submit_time = time();
    my ($rc, $out);
    for my $try (1 .. 3) {
        ($rc, $out) = run_capture($submit);
        last if $rc == 0 || !$e->{transient}->($out) || $try == 3;
        print STDERR "$prog: submission failed (will retry): $out";
        sleep(3 * $try);
    }
    if ($rc != 0) {
        print STDERR "$prog: error submitting jobs (status $rc):\n$submit\n$out";
        exit 1;
    }
    my $id = $e->{parse_id}->($out);
    if (!defined $id) {
        print STDERR "$prog: cannot find the job id in the output of:\n$submit\n$out";
        exit 1;
    }
    return $id;
}

# Waits until every task has a status (its sync file, or once the engine no longer knows the
# job, its log's footer) or a reason it will never have one (the engine's word, or the grace
# period ran out). Returns (\%status, \%reason).
sub wait_tasks {
    my ($e, $id, $tasks, $logof, $f) = @_;
    my %pending = map { $_ => 1 } @$tasks;
    my (%status, %reason);
    my $delay = 0.1;
    my $next_poll = time() + 1;
    my $gone_since;
    my $take = sub { # a status read: the task is done
        my ($k, $st) = @_;
        $status{$k} = $st;
        delete $pending{$k};
        unlink($f->{syncof}{$k});
    };
    while (%pending) {
        foreach my $k (keys %pending) {
            next unless -e $f->{syncof}{$k};
            my $s = read_file($f->{syncof}{$k});
            $take->($k, $1) if defined $s && $s =~ m/^(-?\d+)\s*$/;
        }
        last unless %pending;
        if (time() >= $next_poll) {
            my ($state, $dead) = $e->{poll}->($id);
            foreach my $k (keys %$dead) {
                next unless $pending{$k};
                $reason{$k} = $dead->{$k};
                delete $pending{$k};
            }
            if ($state eq "gone") {
                $gone_since = time() unless defined $gone_since;
                foreach my $k (keys %pending) {
                    my $st = log_status($logof->{$k});
                    $take->($k, $st) if defined $st;
                }
                if (time() - $gone_since > $grace_s) {
                    foreach my $k (keys %pending) {
                        $reason{$k} = "job $id ended without writing its status (see $f->{qlog})";
                    }
                    %pending = ();
                }
            } else {
                undef $gone_since;
            }
            $next_poll = time() + ($state eq "gone" ? 1 : $engine_poll_s);
        }
        sleep($delay);
        $delay = $delay * 1.2 > 1 ? 1 : $delay * 1.2;
    }
    return (\%status, \%reason);
}

# %e: name (queue.pl), config_file, default_config, task_var, times (bool), sync_subdir,
#     submit(\%s) -> shell command line, parse_id(output) -> id, poll(id) -> ("alive"|"gone"|
#     "unknown", {task => reason for tasks that died without finishing}), cancel(id) -> command,
#     transient(output) -> bool (worth retrying the submission), raw_flag(switch, \@ARGV) -> flags,
#     skip_opts: options handled by the engine itself rather than by config flags.
sub main {
    my ($e, @argv) = @_;
    my $prog = $e->{name};
    local $SIG{__DIE__} = sub { print STDERR $_[0]; exit 1; }; # usage errors: status 1
    my $usage = "Usage: $prog [options] [JOB=1:N] log-file command-line arguments...\n" .
                "e.g.: $prog --mem 2G JOB=1:4 exp/log/train.JOB.log nnet-train ... egs.JOB.ark ...\n" .
                "Options: --config FILE (default $e->{config_file}), --mem M, --num-threads N,\n" .
                "         --gpu N, --max-jobs-run N, --time T, and any other the config defines.\n";
    my $job = parse_args($prog, $usage, $e->{raw_flag}, @argv);
    my ($conf, $conf_src) = load_config($e, $job->{config}, $prog);
    my $opt_flags = option_flags($conf, $job->{cli}, $conf_src, $prog, $e->{skip_opts});
    my %vals = (%{$conf->{defaults}}, %{$job->{cli}});
    my $threads = defined $vals{num_threads} ? $vals{num_threads} : 1;

    my ($tasks, $logof) = task_logs($job);
    my $f = prepare_files($e, $job, $tasks, $logof, $threads, $prog);
    my $id = submit_job($e, $e->{submit}->({
        command => $conf->{command}, flags => $opt_flags, raw => join(" ", @{$job->{raw}}),
        qlog => $f->{qlog}, script => $f->{script},
        array => defined $job->{jobname} ? [$job->{jobstart}, $job->{jobend}] : undef,
        max_jobs_run => $vals{max_jobs_run},
    }), $prog);

    my $cancelled = 0;
    my $on_signal = sub {
        my ($sig) = @_;
        return if $cancelled++;
        system($e->{cancel}->($id) . " >/dev/null 2>&1");
        print STDERR "$prog: caught SIG$sig, cancelled job $id\n";
        exit($sig eq "INT" ? 130 : $sig eq "HUP" ? 129 : 143);
    };
    local $SIG{INT} = $on_signal;
    local $SIG{TERM} = $on_signal;
    local $SIG{HUP} = $on_signal;

    my ($status, $reason) = wait_tasks($e, $id, $tasks, $logof, $f);
    if (%$reason) { # the job may still sit in the queue (e.g. in an error state)
        system($e->{cancel}->($id) . " >/dev/null 2>&1");
    }
    my @failed = grep { defined $reason->{$_} || $status->{$_} != 0 } @$tasks;
    exit 0 unless @failed;
    my %why = map { ($_ => defined $reason->{$_} ? $reason->{$_} : "status $status->{$_}") }
              @failed;
    report_failures($prog, $job, scalar(@$tasks), \@failed, $logof, \%why);
    exit 1;
}

1;
