#!/usr/bin/env bash
# steps/make_mfcc.sh (Kaldi's): MFCC features of a data directory's wav.scp with
# compute-mfcc-feats in --nj jobs through --cmd, written as Kaldi does (steps/lib/make-feats.sh).
# Begin configuration section.
nj=4
cmd=utils/run.pl
mfcc_config=conf/mfcc.conf   # options for compute-mfcc-feats (none if the file does not exist)
# End configuration section.
kind=mfcc
. steps/lib/make-feats.sh # the usage, the options and the jobs
