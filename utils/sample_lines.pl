#!/usr/bin/env perl
# sample_lines.pl [--srand N] [--exclude FILE] K [file...]: K lines drawn uniformly at random
# (all of them if there are fewer), printed in their input order; reproducible for a seed. Lines
# whose first field is the first field of a line of FILE are skipped. Streams (reservoir
# sampling): memory holds K lines (and FILE's keys), whatever the input's length.
use strict;
use warnings;
my ($srand, $exclude) = (0, undef);
while (@ARGV && $ARGV[0] =~ /^--/) {
    my $opt = shift;
    die "$0: $opt needs a value\n" unless @ARGV;
    if ($opt eq "--srand") { $srand = shift; }
    elsif ($opt eq "--exclude") { $exclude = shift; }
    else { die "$0: unknown option $opt\n"; }
}
my $k = shift;
die "Usage: $0 [--srand N] [--exclude FILE] K [file...]\n"
    unless defined $k && $k =~ /^\d+$/;
my %skip;
if (defined $exclude) {
    open(my $f, "<", $exclude) or die "$0: cannot open $exclude: $!\n";
    while (<$f>) { my ($key) = split; $skip{$key} = 1 if defined $key; }
    close $f;
}
srand($srand);
my (@kept, @order);   # the reservoir: lines and their input positions
my $n = 0;
while (my $line = <>) {
    my ($key) = split ' ', $line;
    next if defined $key && $skip{$key};
    if ($n < $k) {
        push @kept, $line;
        push @order, $n;
    } else {
        my $j = int(rand($n + 1));
        if ($j < $k) { $kept[$j] = $line; $order[$j] = $n; }
    }
    $n++;
}
print map { $kept[$_] } sort { $order[$a] <=> $order[$b] } 0 .. $#kept;
