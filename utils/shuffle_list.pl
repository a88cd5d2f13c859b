#!/usr/bin/env perl
# shuffle_list.pl [--srand N] [file...]: print the lines in a random order, reproducible for a seed.
use strict;
use warnings;
my $srand = 0;
if (@ARGV >= 2 && $ARGV[0] eq "--srand") { shift; $srand = shift; }
srand($srand);
my @lines = <>;
for (my $i = @lines - 1; $i > 0; $i--) {
    my $j = int(rand($i + 1));
    @lines[$i, $j] = @lines[$j, $i];
}
print @lines;
