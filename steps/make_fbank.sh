#!/usr/bin/env bash
# steps/make_fbank.sh (Kaldi's): log-mel filterbank features of a data directory's wav.scp with
# compute-fbank-feats in --nj jobs through --cmd, written as Kaldi does (steps/lib/make-feats.sh).
# Begin configuration section.
nj=4
cmd=utils/run.pl
fbank_config=conf/fbank.conf   # options for compute-fbank-feats (none if the file does not exist)
# End configuration section.
kind=fbank
. steps/lib/make-feats.sh # the usage, the options and the jobs
