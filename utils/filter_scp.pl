#!/usr/bin/env perl
# filter_scp.pl [--exclude] <id-list> [<scp>...]: print the lines of scp whose first field is in
# (or with --exclude, not in) the first field of id-list, in scp order (Kaldi's utils/filter_scp.pl).
use strict;
use warnings;
my $exclude = 0;
if (@ARGV && $ARGV[0] eq "--exclude") { $exclude = 1; shift; }
@ARGV >= 1 or die "Usage: filter_scp.pl [--exclude] <id-list> [<scp>...]\n";
my $idlist = shift;
open(my $f, "<", $idlist) or die "filter_scp.pl: cannot open '$idlist': $!\n";
my %seen;
while (<$f>) { my @a = split; $seen{$a[0]} = 1 if @a; }
close $f;
while (<>) {
    my @a = split;
    next unless @a;
    print if ($exclude xor defined $seen{$a[0]});
}
