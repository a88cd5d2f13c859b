# steps/lib/train-realign.sh: nnet2's --realign-times for steps/train.sh (sourced after option
# parsing; functions only). At each realignment iteration x the training data (--realign-data:
# feats.scp, text and the labels.scp the examples were made from) is realigned with x.mdl
# (steps/align.sh through --realign-lang, priors from the current labels), the examples are made
# again with the options get_egs.sh recorded in <egs-dir>/info/options into $dir/egs_realign_x,
# and training goes on from x.mdl on them. Validation examples come from the realigned labels too
# (with get_egs.sh --valid-data-dir, that directory's labels are not realigned); the divergence
# check's reference becomes x.mdl's objective on the new validation examples.

# realign_iterations: the iteration numbers of --realign-times (fractions of the run in (0, 1)).
realign_iterations() {
    local t
    for t in ${realign_times//,/ }; do   # "0.33 0.66" or "0.33,0.66" (one word through a recipe's --train-opts)
        awk -v t=$t -v n=$num_iters 'BEGIN { if (!(t > 0 && t < 1)) exit 1; x = int(t * n + 0.5); if (x < 1) x = 1; print x }' ||
            { echo "$0: --realign-times $t: expected fractions of the run between 0 and 1" 1>&2; return 1; }
    done
}

# realign_check: the options, before anything starts.
realign_check() {
    [ -z "$realign_times" ] && return 0
    local f
    for f in $realign_data/feats.scp $realign_data/text $realign_data/labels.scp $realign_lang/lexicon.txt \
             $egs_dir/info/options; do
        [ -f $f ] || { echo "$0: --realign-times needs $f (--realign-data, --realign-lang; examples made by get_egs.sh)"; exit 1; }
    done
    realign_iters=$(realign_iterations) || exit 1
}

# realign X ODIM: realigns with X.mdl, remakes the examples into $dir/egs_realign_X; sets egs_dir.
realign() {
    local x=$1 odim=$2 ali=$dir/ali_realign_$1 data=$dir/data_realign_$1 labels
    labels=$realign_data/labels.scp
    [ -f $dir/data_realign_last ] && labels=$(cat $dir/data_realign_last)/labels.scp
    echo "$0: iteration $x: realigning $realign_data with $x.mdl (steps/align.sh, logs $ali/log)"
    mkdir -p $ali $data || exit 1
    analyze-counts --counts-dim=$odim --binary=false scp:$labels $ali/pdf_counts.vec 2>$ali/analyze_counts.log || \
        { echo "$0: analyze-counts failed ($ali/analyze_counts.log)"; exit 1; }
    steps/align.sh --cmd "$cmd" --nj $realign_nj --model $dir/$x.mdl \
        --class-frame-counts $ali/pdf_counts.vec $realign_data $realign_lang $dir $ali > $ali/align.out || \
        { tail -n 1 $ali/align.out; exit 1; }
    tail -n 1 $ali/align.out
    local f
    for f in feats.scp text utt2spk spk2utt; do [ -f $realign_data/$f ] && cp $realign_data/$f $data/; done
    cp $ali/labels.scp $data/labels.scp
    # the same options as the examples were made with (recorded by get_egs.sh)
    eval steps/get_egs.sh --cmd "\"$cmd\"" $(cat $egs_dir/info/options) $data $dir/egs_realign_$x \
        > $dir/log/get_egs_realign.$x.log 2>&1 || \
        { echo "$0: get_egs.sh on the realigned labels failed: $(tail -n 1 $dir/log/get_egs_realign.$x.log) (log $dir/log/get_egs_realign.$x.log)"; exit 1; }
    [ "$(cat $dir/egs_realign_$x/info/iters_per_epoch)" = "$(cat $egs_dir/info/iters_per_epoch)" ] || \
        { echo "$0: the realigned examples have another number of iterations per epoch"; exit 1; }
    echo $data > $dir/data_realign_last
    egs_dir=$dir/egs_realign_$x
    echo "$0: iteration $x: training on the realigned examples $egs_dir"
}
