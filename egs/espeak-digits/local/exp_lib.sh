# local/exp_lib.sh: what the experiment scripts of this setup (jobs_experiment.sh, claim_bmuf.sh)
# share; sourced after their configuration section, whose data, exp, dir, beam, acoustic_scales
# and word_insertion_penalties it uses.

# exp_check_data: what the experiments start from (run.sh through stage 5) is there.
exp_check_data() {
    local f
    for f in $data/train_cmvn/feats.scp $data/train/text $data/test_cmvn/feats.scp \
             $data/test/text $exp/nnet/pdf_counts.vec $data/lang/num_pdfs; do
        [ -f $f ] || { echo "$0: no $f: run ./run.sh (through stage 5) first" >&2; exit 1; }
    done
}

# exp_valid_test <egs-dir>: $dir/valid, the utterances get_egs.sh held out for validation in
# <egs-dir> (features and text), and $dir/test.egs, every frame of the test voices.
exp_valid_test() {
    mkdir -p $dir/valid
    utils/filter_scp.pl $1/valid_uttlist $data/train_cmvn/feats.scp > $dir/valid/feats.scp
    utils/filter_scp.pl $1/valid_uttlist $data/train/text > $dir/valid/text
    nnet-get-egs --left-context=5 --right-context=5 scp:$data/test_cmvn/feats.scp \
        scp:$data/test_cmvn/labels.scp ark:$dir/test.egs.tmp 2>$dir/test_egs.log
    mv $dir/test.egs.tmp $dir/test.egs
}

# exp_decode <run-dir>: the decoder settings of <run-dir>/final.mdl chosen on the validation
# utterances (the lowest WER over acoustic_scales x word_insertion_penalties, the first on a tie;
# the grid in <run-dir>/decode/grid), then the test voices decoded with them: compute-wer's
# output in <run-dir>/decode/wer, the frame accuracy in decode/compute_prob_test.log. Sets the
# caller's as and wip.
exp_decode() {
    local d=$1 m=$1/final.mdl w
    mkdir -p $d/decode
    nnet-forward --apply-log=true --class-frame-counts=$exp/nnet/pdf_counts.vec $m \
        scp:$dir/valid/feats.scp ark:$d/decode/valid_loglikes.ark 2>$d/decode/forward_valid.log
    : > $d/decode/grid
    for as in $acoustic_scales; do
        for wip in $word_insertion_penalties; do
            decode-word-loop --acoustic-scale=$as --beam=$beam --word-insertion-penalty=$wip \
                $data/lang ark:$d/decode/valid_loglikes.ark ark,t:- 2>>$d/decode/decode_valid.log | \
                utils/int2sym.pl -f 2- $data/lang/words.txt > $d/decode/valid_hyp.txt
            w=$(compute-wer --text --mode=present ark:$dir/valid/text ark:$d/decode/valid_hyp.txt \
                2>/dev/null | awk '/^%WER/ {print $2}')
            echo "$as $wip $w" >> $d/decode/grid
        done
    done
    rm $d/decode/valid_loglikes.ark $d/decode/valid_hyp.txt
    read as wip w < <(sort -g -k3 -s $d/decode/grid | head -1)
    nnet-forward --apply-log=true --class-frame-counts=$exp/nnet/pdf_counts.vec $m \
        scp:$data/test_cmvn/feats.scp ark:- 2>$d/decode/forward_test.log | \
    decode-word-loop --acoustic-scale=$as --beam=$beam --word-insertion-penalty=$wip $data/lang \
        ark:- ark,t:- 2>$d/decode/decode_test.log | \
        utils/int2sym.pl -f 2- $data/lang/words.txt > $d/decode/hyp.txt
    compute-wer --text --mode=present ark:$data/test/text ark:$d/decode/hyp.txt \
        > $d/decode/wer 2>/dev/null
    nnet-compute-prob $m ark:$dir/test.egs 2>$d/decode/compute_prob_test.log >/dev/null
}
