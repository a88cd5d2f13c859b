#!/usr/bin/env bash
# Priors, pseudo-likelihoods, the word-loop decoder and compute-wer on hand-made cases.
. "$(dirname "$0")/lib.sh"

# ---- analyze-counts and the prior arithmetic ----
printf 'u1 0 0 1 2\nu2 2 2 2 0\n' > ali.txt
expect_status "analyze-counts" 0 analyze-counts --binary=false ark:ali.txt counts.vec
expect_eq "counts" "$(tr -s ' ' < counts.vec)" " [ 3 1 4 ]"
expect_status "counts-dim too small" 1 analyze-counts --counts-dim=2 ark:ali.txt c2.vec
expect_err "label out of range named" "key 'u1': frame 3: label 2 out of range"
# log-posteriors of 2 frames over 3 classes; priors 3/8 1/8 4/8
cat > lp.txt <<'X'
u1  [
  -0.5 -1.5 -2.5
  -3 -0.25 -1 ]
X
# A one-layer network that outputs its input as log-probabilities is not available, so check the
# library arithmetic through nnet-forward on a network whose softmax input is the identity:
cat > id.config <<'X'
AffineComponent input-dim=3 output-dim=3 learning-rate=0 param-stddev=0 bias-stddev=0
SoftmaxComponent dim=3
X
nnet-init id.config id.mdl 2>/dev/null
printf 'u1  [\n  0 0 0 ]\n' > zero.txt
expect_status "nnet-forward with priors" 0 nnet-forward --apply-log=true \
    --class-frame-counts=counts.vec id.mdl ark:zero.txt ark,t:ll.txt
# uniform posterior 1/3: loglike_j = log(1/3) - log(prior_j)
want=$(awk 'BEGIN { printf "%.4f %.4f %.4f", log(1/3)-log(3/8), log(1/3)-log(1/8), log(1/3)-log(4/8) }')
got=$(awk 'NR==2 { printf "%.4f %.4f %.4f", $1, $2, $3 }' ll.txt)
expect_eq "log(post) - log(prior)" "$got" "$want"
expect_status "prior-scale 0.5" 0 nnet-forward --apply-log=true --prior-scale=0.5 \
    --class-frame-counts=counts.vec id.mdl ark:zero.txt ark,t:ll5.txt
want=$(awk 'BEGIN { printf "%.4f", log(1/3)-0.5*log(1/8) }')
expect_eq "prior scale" "$(awk 'NR==2 { printf "%.4f", $2 }' ll5.txt)" "$want"
# A class below the floor is made hopeless (prior 1e10).
expect_status "prior floor" 0 nnet-forward --apply-log=true --prior-floor=0.2 \
    --class-frame-counts=counts.vec id.mdl ark:zero.txt ark,t:llf.txt
expect_err "floored classes counted" "1 of 3 classes have a prior below 0.2"
want=$(awk 'BEGIN { printf "%.3f", log(1/3)-log(1e10) }')
expect_eq "floored class" "$(awk 'NR==2 { printf "%.3f", $2 }' llf.txt)" "$want"
expect_status "priors need apply-log" 1 nnet-forward --class-frame-counts=counts.vec id.mdl \
    ark:zero.txt ark,t:x.txt
printf ' [ 1 2 ]\n' > c2.vec
expect_status "prior dimension mismatch" 1 nnet-forward --apply-log=true \
    --class-frame-counts=c2.vec id.mdl ark:zero.txt ark,t:x.txt
expect_err "mismatch message" "3 outputs but there are 2 priors"
printf ' [ 1 -2 3 ]\n' > cneg.vec
expect_status "negative count" 1 nnet-forward --apply-log=true \
    --class-frame-counts=cneg.vec id.mdl ark:zero.txt ark,t:x.txt
expect_err "negative count named" "cneg.vec': class 1: bad count -2"

# ---- the decoder ----
# Phones of one state each: sil -> pdf 0, A -> 1, B -> 2. Words a = A, b = B, c = A (same
# pronunciation as a, later in the lexicon), ab = A B.
mkdir lang
printf '<eps> 0\na 1\nb 2\nc 3\nab 4\n' > lang/words.txt
printf 'sil 0\nA 1\nB 2\n' > lang/phone_pdfs.txt
printf 'a A\nb B\nc A\n' > lang/lexicon.txt
# Frames: sil, A, A, B. Best path sil(0) A(1) A(2) B(3): acoustic 0, transitions enter sil,
# sil->A (log .5), A loop (log .5), A->B (log .5): log-score 3 log .5 = -2.0794 (-0.5199/frame).
cat > ll1.txt <<'X'
u1  [
  0 -10 -10
  -10 0 -10
  -10 0 -10
  -10 -10 0 ]
X
expect_status "decode a word loop" 0 decode-word-loop --acoustic-scale=1 lang ark:ll1.txt ark,t:h1
expect_eq "best path: a b" "$(cat h1)" "u1 1 2 "
expect_err "hand-computed score" "average log-score per frame -0.5198[56]"
# Tie: a and c have the same pronunciation; the one listed first in the lexicon wins.
expect_eq "tie: lexicon order (a)" "$(cat h1 | awk '{print $2}')" "1"
printf 'c A\nb B\na A\n' > lang/lexicon.txt
decode-word-loop --acoustic-scale=1 lang ark:ll1.txt ark,t:h2 2>/dev/null
expect_eq "tie: lexicon order (c)" "$(cat h2)" "u1 3 2 "
# Tie: A A as one word with a self-loop (log .5) or as two words (exit log .5, re-enter) score
# the same; the self-loop wins. A word bonus (negative penalty) makes the two-word path better.
printf 'a A\nb B\n' > lang/lexicon.txt
cat > ll2.txt <<'X'
u2  [
  -10 0 -10
  -10 0 -10 ]
X
decode-word-loop --acoustic-scale=1 lang ark:ll2.txt ark,t:h3 2>/dev/null
expect_eq "tie: self-loop beats re-entry" "$(cat h3)" "u2 1 "
decode-word-loop --acoustic-scale=1 --word-insertion-penalty=-1 lang ark:ll2.txt ark,t:h4 2>/dev/null
expect_eq "insertion bonus: a a" "$(cat h4)" "u2 1 1 "
decode-word-loop --acoustic-scale=1 --word-insertion-penalty=5 lang ark:ll1.txt ark,t:h5 2>/dev/null
# With a penalty of 5 per word, "a b" (-2.08 - 10) still beats one word over A A B (-10 + ...).
expect_eq "insertion penalty 5: a b" "$(cat h5)" "u1 1 2 "
# Isolated words: one word only. Over sil A A B the best single word is a (B frame costs 10 in
# a's self-loop) or b (two A frames cost 20): a, then silence? sil is allowed after the word:
# sil A A sil -> the last frame scores -10 either way; a wins.
expect_status "isolated" 0 decode-word-loop --acoustic-scale=1 --grammar=isolated lang \
    ark:ll1.txt ark,t:h6
expect_eq "isolated: one word" "$(cat h6)" "u1 1 "
# Too short for any word: two-state phones, one frame, no silence.
printf 'sil 0 0\nA 1 1\nB 2 2\n' > lang/phone_pdfs.txt
printf 'u3  [\n  -10 0 -10 ]\n' > ll3.txt
expect_status "too short: partial" 0 decode-word-loop --silence-phone= lang ark:ll3.txt ark,t:h7
expect_eq "too short: empty hypothesis" "$(cat h7)" "u3 "
expect_err "too short: warned" "key 'u3': no final state reached \(1 frames\)"
expect_status "too short, no partial" 1 decode-word-loop --silence-phone= --allow-partial=false \
    lang ark:ll3.txt ark,t:h8
expect_err "no final state named" "key 'u3'.*no final state reached"
# Bad input.
printf 'a A\nb X\n' > lang/lexicon.txt
expect_status "unknown phone" 1 decode-word-loop lang ark:ll1.txt ark,t:h9
expect_err "unknown phone named" "lexicon.txt' line 2: unknown phone 'X'"
printf 'a A\nb B\n' > lang/lexicon.txt
printf 'u1  [\n  0 0 ]\n' > ll4.txt
expect_status "too few columns" 1 decode-word-loop lang ark:ll4.txt ark,t:h10
expect_err "columns named" "key 'u1'.*pdf 2 but the likelihoods have 2 columns"

# ---- compute-wer ----
printf 'u1 a b c d\nu2 e f\nu3 g\n' > ref.txt
# u1: one substitution (c->x) and one deletion (d); u2: one insertion (z); u3 missing.
printf 'u1 a b x\nu2 e f z\n' > hyp.txt
expect_status "compute-wer present" 0 compute-wer --text --mode=present ark:ref.txt ark:hyp.txt
expect_eq "WER line" "$(head -1 out)" "%WER 50.00 [ 3 / 6, 1 ins, 1 del, 1 sub ] [PARTIAL]"
expect_eq "SER line" "$(sed -n 2p out)" "%SER 100.00 [ 2 / 2 ]"
expect_eq "scored line" "$(sed -n 3p out)" "Scored 2 sentences, 1 not present in hyp."
expect_status "compute-wer all" 0 compute-wer --mode=all ark:ref.txt ark:hyp.txt
expect_eq "missing counts as deletions" "$(head -1 out)" \
    "%WER 57.14 [ 4 / 7, 1 ins, 2 del, 1 sub ] [PARTIAL]"
expect_status "compute-wer strict" 1 compute-wer ark:ref.txt ark:hyp.txt
expect_err "strict names the utterance" "no hypothesis for utterance 'u3'"
printf 'u1 a b c d\nu2 e f\n' > ref2.txt
expect_status "perfect" 0 compute-wer ark:ref2.txt "ark:cat ref2.txt |"
expect_eq "perfect WER" "$(head -1 out)" "%WER 0.00 [ 0 / 6, 0 ins, 0 del, 0 sub ]"
expect_status "bad mode" 1 compute-wer --mode=bogus ark:ref.txt ark:hyp.txt
# Ties split as Kaldi's compute-wer does (its edit distance keeps the counts along the path,
# preferring an insertion, then a deletion, over a substitution of equal cost): figures of
# Kaldi's algorithm on these pairs.
printf 'v1 a b\nv2 a b\nv3 the cat sat on the mat\n' > ref3.txt
printf 'v1 b a\nv2 b c a\nv3 cat the sat on mat the\n' > hyp3.txt
expect_status "compute-wer on ties" 0 compute-wer ark:ref3.txt ark:hyp3.txt
expect_eq "ins/del/sub on ties as Kaldi" "$(head -1 out)" "%WER 90.00 [ 9 / 10, 5 ins, 4 del, 0 sub ]"

# ---- local/score.sh (espeak-digits): Kaldi's layout, ties and grid edges said ----
ln -s $PARNET_TOP/utils utils
mkdir -p sc/lang
printf '<eps> 0\na 1\nb 2\nc 3\n' > sc/lang/words.txt
printf 'sil 0\nA 1\nB 2\n' > sc/lang/phone_pdfs.txt
printf 'a A\nb B\nc A\n' > sc/lang/lexicon.txt
printf 'u1 a b\n' > sc/text
printf 'u1  [\n  0 -9 -9\n  -9 0 -9\n  -9 -9 0 ]\n' > sc/ll.txt
expect_status "local/score.sh" 0 $PARNET_TOP/egs/espeak-digits/local/score.sh --acoustic-scales "0.5 1" \
    --word-insertion-penalties "0 1" sc/text sc/lang ark:sc/ll.txt sc/dec
expect_eq "wer_<lmwt>_<penalty>" "$(cd sc/dec && ls wer_* | tr '\n' ' ')" "wer_1_0 wer_1_1 wer_2_0 wer_2_1 "
expect_eq "best_wer: the first of the lowest, as utils/best_wer.sh" "$(cat sc/dec/best_wer)" "%WER 0.00 [ 0 / 2, 0 ins, 0 del, 0 sub ] sc/dec/wer_1_0"
grep -qx ".*/local/score.sh: 4 settings tie at 0.00%; the first in file order is taken (wer_1_0 wer_1_1 wer_2_0 wer_2_1)" out \
    && pass "ties said" || fail "ties: $(cat out)"
grep -qx ".*/local/score.sh: WARNING: the best --acoustic-scale 1 is the largest tried (0.5 1): try larger values" out \
    && pass "grid edge warned" || fail "edge: $(cat out)"

# ---- alignments without Kaldi: align-equal (flat start), align-mapped, steps/align.sh ----
printf 'u1  [\n  1 2 3\n  1 2 3\n  1 2 3\n  1 2 3\n  1 2 3\n  1 2 3\n  1 2 3\n  1 2 3 ]\n' > sc/feats8.txt
expect_status "align-equal" 0 align-equal sc/lang ark:sc/feats8.txt ark:sc/text ark,t:sc/eq.txt
expect_eq "silence, a, b, silence: 2 frames each" "$(cat sc/eq.txt)" "u1 0 0 1 1 2 2 0 0 "
printf 'u1  [\n  0 -9 -9\n  -9 0 -9\n  -9 0 -9\n  -9 -9 0\n  -9 -9 0\n  0 -9 -9 ]\n' > sc/ll6.txt
expect_status "align-mapped" 0 align-mapped sc/lang ark:sc/ll6.txt ark:sc/text ark,t:sc/fa.txt
expect_eq "the Viterbi path of the transcript" "$(cat sc/fa.txt)" "u1 0 1 1 2 2 0 "
printf 'u1 a zz\n' > sc/bad.txt
expect_status "a word not in words.txt" 1 align-mapped sc/lang ark:sc/ll6.txt ark:sc/bad.txt ark,t:sc/x.txt
expect_err "named" "'ark:sc/bad.txt': key 'u1': word 'zz' is not in words.txt"
printf 'u2 a\n' > sc/other.txt
expect_status "no transcription" 1 align-mapped sc/lang ark:sc/ll6.txt ark:sc/other.txt ark,t:sc/x.txt
expect_err "warned" "key 'u1': no transcription; not aligned"
mkdir -p sc/data sc/model
copy-feats ark:sc/feats8.txt ark,scp:$PWD/sc/data/feats.ark,sc/data/feats.scp 2>/dev/null
cp sc/text sc/data/text; cp id.mdl sc/model/final.mdl; cp counts.vec sc/model/pdf_counts.vec
expect_status "steps/align.sh" 0 $PARNET_TOP/steps/align.sh --nj 1 sc/data sc/lang sc/model sc/ali
grep -q "^.*steps/align.sh: aligned 1 of 1 utterances of sc/data (0 failed: logs sc/ali/log/align.\*.log); labels in sc/ali/labels.scp$" out \
    && pass "says what it aligned" || fail "align.sh: $(tail -n 1 out)"
expect_eq "one label per frame" "$(copy-int-vector scp:sc/ali/labels.scp ark,t:- 2>/dev/null | awk '{ print NF - 1 }')" 8

# Issue 29: a NaN or Inf log-likelihood is refused (it silently dropped words), naming the key and
# the row; an input with nothing decoded is an ERROR.
mkdir lang2; cp lang/words.txt lang2/
printf 'sil 0\nA 1\nB 2\n' > lang2/phone_pdfs.txt; printf 'a A\nb B\n' > lang2/lexicon.txt
echo keep > hn
printf 'u1  [\n  0 -10 -10\n  -10 nan -10\n  -10 0 -10\n  -10 -10 0 ]\n' > lln.txt
expect_status "NaN log-likelihood" 1 decode-word-loop --acoustic-scale=1 lang2 ark:lln.txt ark,t:hn
expect_err "NaN named" "'ark:lln.txt': key 'u1': non-finite value \(NaN\) at row 1, column 1"
expect_eq "NaN: the output untouched" "$(cat hn)" keep
printf 'u1  [\n  0 -10 -10\n  -10 0 -inf ]\n' > lli.txt
expect_status "Inf log-likelihood" 1 decode-word-loop --acoustic-scale=1 lang2 ark:lli.txt ark,t:hn
expect_err "Inf named" "key 'u1': non-finite value \(-Inf\) at row 1, column 2"
expect_status "nothing to decode" 1 decode-word-loop lang2 ark:/dev/null ark,t:hn
expect_err "nothing decoded: one ERROR" "^ERROR .*decoded no utterances from 'ark:/dev/null'"
