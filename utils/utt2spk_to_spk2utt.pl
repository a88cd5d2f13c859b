#!/usr/bin/env perl
# utils/utt2spk_to_spk2utt.pl (Kaldi's): "<utt> <spk>" lines -> "<spk> <utt> <utt> ..." lines,
# speakers in the order they first appear, their utterances in input order.
# e.g.: utils/utt2spk_to_spk2utt.pl data/train/utt2spk > data/train/spk2utt
use strict;
use warnings;
my (@order, %utts);
while (my $line = <>) {
    my @f = split(' ', $line);
    next unless @f;
    @f == 2 or die "utt2spk_to_spk2utt.pl: $ARGV line $.: expected '<utt> <spk>', got: $line";
    my ($u, $s) = @f;
    push @order, $s unless exists $utts{$s};
    push @{$utts{$s}}, $u;
}
print "$_ @{$utts{$_}}\n" for @order;
