#!/usr/bin/env perl
# utils/spk2utt_to_utt2spk.pl (Kaldi's): "<spk> <utt> <utt> ..." lines -> "<utt> <spk>" lines.
# e.g.: utils/spk2utt_to_utt2spk.pl data/train/spk2utt > data/train/utt2spk
use strict;
use warnings;
while (my $line = <>) {
    my @f = split(' ', $line);
    next unless @f;
    @f >= 2 or die "spk2utt_to_utt2spk.pl: $ARGV line $.: a speaker without utterances: $line";
    my $s = shift @f;
    print "$_ $s\n" for @f;
}
