#!/usr/bin/env perl
# Maps integer ids to symbols (Kaldi utils/int2sym.pl): int2sym.pl [-f field-range] symtab [input]
# field-range: "2-" (from field 2), "1-3", "2"; default all fields. Unknown ids are an error.
use strict; use warnings;
my ($lo, $hi) = (1, 1e9);
if (@ARGV && $ARGV[0] eq '-f') {
    shift; my $r = shift;
    if ($r =~ /^(\d+)-(\d*)$/) { ($lo, $hi) = ($1, $2 eq '' ? 1e9 : $2); }
    elsif ($r =~ /^(\d+)$/) { ($lo, $hi) = ($1, $1); }
    else { die "int2sym.pl: bad field range '$r'\n"; }
}
@ARGV >= 1 or die "Usage: int2sym.pl [-f field-range] <symtab> [input]\n";
my $symtab = shift;
open(my $f, '<', $symtab) or die "int2sym.pl: cannot open $symtab: $!\n";
my %sym;
while (<$f>) { my @a = split; next unless @a; @a == 2 or die "int2sym.pl: bad line in $symtab: $_"; $sym{$a[1]} = $a[0]; }
close $f;
while (<>) {
    my @a = split;
    for (my $i = $lo - 1; $i < @a && $i < $hi; $i++) {
        defined $sym{$a[$i]} or die "int2sym.pl: id '$a[$i]' not in $symtab (line $.)\n";
        $a[$i] = $sym{$a[$i]};
    }
    print join(' ', @a), "\n";
}
