#!/usr/bin/env bash
# Issue 15, case by case: outputs commit only on success (die, empty input, SIGTERM, SIGINT),
# directories where files are expected, the nnet-combine dimension message (a use-after-free
# before), label ranges, NaN/Inf, option messages, structure differences named.
. "$(dirname "$0")/lib.sh"

# no temporary ".name.XXXXXX" left in the current directory
no_temps() {
    local left; left=$(ls -A | grep -E '^\..+\.[A-Za-z0-9]{6}$' || true)
    if [ -z "$left" ]; then pass "$1: no temporary left"; else fail "$1: left $left"; rm -f $left; fi
}

printf 'u1  [\n  1 2\n  3 4\n  5 6 ]\nu2  [\n  7 8\n  9 10 ]\n' >f.txt
copy-feats ark,t:f.txt ark:f.ark 2>/dev/null
printf 'u1 0 1 1\nu2 1 0\n' >ali.txt
cat >m3.config <<'CFG'
AffineComponent input-dim=3 output-dim=2 learning-rate=0.01
SoftmaxComponent dim=2
CFG
cat >m2.config <<'CFG'
AffineComponent input-dim=2 output-dim=2 learning-rate=0.01
SoftmaxComponent dim=2
CFG
cat >m2b.config <<'CFG'
AffineComponent input-dim=2 output-dim=3 learning-rate=0.01
SoftmaxComponent dim=3
CFG
nnet-init m3.config m3.mdl 2>/dev/null
nnet-init m2.config m2.mdl 2>/dev/null
nnet-init --srand=2 m2.config m2x.mdl 2>/dev/null
nnet-init m2b.config m2b.mdl 2>/dev/null
nnet-get-egs --compress=none ark:f.ark ark,t:ali.txt ark:egs.ark 2>/dev/null
echo "precious" >keep; cp keep out.ark; cp keep out.mdl

# A program that dies after opening its output: the old output stays, no temporary is left.
expect_status "nnet-forward dimension mismatch fails" 1 nnet-forward m3.mdl ark:f.ark ark:out.ark
expect_err "names file, key and dims" "'ark:f.ark': key 'u1': feature dimension 2, the network expects 3"
expect_same "nnet-forward: old output untouched" keep out.ark
no_temps "nnet-forward"

# nnet-combine with examples of another dimension: the message is right (it read freed memory)
expect_status "nnet-combine egs dim mismatch fails" 1 nnet-combine m3.mdl m3.mdl ark:egs.ark out.mdl
expect_err "names the dimensions" "examples have input dimension 2, the network expects 3"
expect_same "nnet-combine: old model untouched" keep out.mdl

# Empty input: exit 1, and the existing output is not replaced by an empty file.
: >empty.ark
expect_status "copy-feats empty archive" 1 copy-feats ark:empty.ark ark:out.ark
expect_same "copy-feats empty: old output untouched" keep out.ark
expect_status "copy-int-vector empty archive" 1 copy-int-vector ark:empty.ark ark:out.ark
expect_same "copy-int-vector empty: old output untouched" keep out.ark
expect_status "nnet-get-egs empty features" 1 nnet-get-egs ark:empty.ark ark,t:ali.txt ark:out.ark
expect_same "nnet-get-egs empty: old output untouched" keep out.ark
expect_status "nnet-forward empty features" 1 nnet-forward m2.mdl ark:empty.ark ark:out.ark
expect_same "nnet-forward empty: old output untouched" keep out.ark
expect_status "ark,scp: empty" 1 copy-feats ark:empty.ark ark,scp:out.ark,out.scp
expect_same "ark,scp empty: old archive untouched" keep out.ark
if [ ! -e out.scp ]; then pass "ark,scp empty: no scp made"; else fail "ark,scp empty: scp made"; fi
no_temps "empty inputs"

# A directory where a file is expected says so.
mkdir adir
expect_status "directory as archive" 1 copy-feats ark:adir ark:out.ark
expect_err "archive: is a directory" "cannot open 'adir': is a directory"
expect_same "directory archive: old output untouched" keep out.ark
expect_status "directory as model" 1 nnet-info adir
expect_err "model: is a directory" "'adir': is a directory"
expect_status "directory as network config" 1 nnet-init adir out.mdl
expect_err "config: is a directory" "'adir': is a directory"
expect_status "directory as --config" 2 nnet-init --config=adir m2.config out.mdl
expect_err "--config: is a directory" "config file 'adir': is a directory"
expect_status "directory as output" 1 copy-feats ark:f.ark ark:adir
expect_err "output: is a directory" "cannot write 'adir': is a directory"

# SIGTERM and SIGINT while the output is open: the temporary goes, the old output stays. A
# signal the caller already ignores (nohup; or SIGINT for a background job of a non-interactive
# shell, when this suite itself runs in the background) stays ignored: the program then finishes.
sig_ignored() { # signal number: 1 if this shell was started with it ignored
    local mask; mask=$(awk '/^SigIgn:/ {print $2}' /proc/$$/status)
    [ $(( (16#$mask >> ($1 - 1)) & 1 )) -eq 1 ]
}
set -m # job control: the background job gets its own process group and SIGINT is not ignored
for sig in TERM INT; do
    num=$(kill -l $sig) ignored=0
    sig_ignored "$num" && ignored=1
    copy-feats "ark:(cat f.ark; sleep $((ignored ? 2 : 20))) |" ark:out.ark 2>/dev/null &
    pid=$!
    for i in $(seq 300); do ls -A | grep -q '^\.out\.ark\.' && break; sleep 0.1; done
    kill -$sig -- -$pid
    wait $pid; rc=$?
    if [ $ignored = 1 ]; then
        expect_eq "SIG$sig ignored by the caller: stays ignored, the copy finishes" "$rc" 0
        expect_same "SIG$sig ignored: the output committed" f.ark out.ark
        cp keep out.ark
    else
        expect_eq "SIG$sig: killed by the signal" "$rc" "$((128 + num))"
        expect_same "SIG$sig: old output untouched" keep out.ark
    fi
    no_temps "SIG$sig"
done
set +m

# Success still commits: ark,scp outputs both land.
expect_status "copy-feats ark,scp" 0 copy-feats ark:f.ark ark,scp:new.ark,new.scp
expect_eq "ark,scp committed" "$(cut -d' ' -f1 new.scp | tr '\n' ' ')" "u1 u2 "
expect_status "the scp reads" 0 copy-feats scp:new.scp ark,t:new.txt
no_temps "success"

# Labels are checked: negative always, >= --num-pdfs when given.
printf 'u1 0 -1 1\nu2 1 0\n' >neg.txt
expect_status "negative label" 1 nnet-get-egs ark:f.ark ark,t:neg.txt ark:out.ark
expect_err "negative label named" "labels 'ark,t:neg.txt': key 'u1': label -1 at frame 1 is negative"
printf 'u1 0 1 2147483647\nu2 1 0\n' >big.txt
expect_status "label too large" 1 nnet-get-egs --num-pdfs=2 ark:f.ark ark,t:big.txt ark:out.ark
expect_err "large label named" "key 'u1': label 2147483647 at frame 2 is out of range \[0, 2\)"
expect_same "bad labels: old output untouched" keep out.ark
expect_status "labels in range" 0 nnet-get-egs --num-pdfs=2 ark:f.ark ark,t:ali.txt ark:ok.egs

# NaN and Inf: rejected where used, warned about where only copied.
printf 'u1  [\n  1 2\n  nan 4 ]\nu2  [\n  7 inf ]\n' >nan.txt
expect_status "copy-feats copies NaN" 0 copy-feats ark,t:nan.txt ark:nan.ark
expect_err "copy-feats warns with the key" "WARNING .*key 'u1': 1 NaN or Inf values"
expect_status "nnet-forward rejects NaN" 1 nnet-forward m2.mdl ark:nan.ark ark:out.ark
expect_err "nnet-forward names key and place" "key 'u1': non-finite value \(NaN\) at row 1, column 0"
expect_status "nnet-get-egs rejects NaN" 1 nnet-get-egs ark:nan.ark ark,t:ali.txt ark:out.ark
expect_err "nnet-get-egs names key" "features 'ark:nan.ark': key 'u1': non-finite value"
nnet-copy-egs ark:egs.ark ark,t:egs.txt 2>/dev/null
awk 'NR == 1 { sub(/\[ *$/, "["); } { print } ' egs.txt |
    awk '!done && /^ +[-0-9]/ { $1 = "nan"; done = 1; print "  " $0; next } { print }' >nanegs.txt
expect_status "nnet-compute-prob rejects NaN egs" 1 nnet-compute-prob m2.mdl ark,t:nanegs.txt
expect_err "compute-prob names the example" "key 'u1-0'.*non-finite value"
expect_status "nnet-combine rejects NaN egs" 1 nnet-combine m2.mdl m2x.mdl ark,t:nanegs.txt out.mdl
expect_err "combine names the example" "key 'u1-0'.*non-finite value"
expect_same "NaN: old outputs untouched" keep out.mdl

# Option errors name the option and value.
expect_status "--num-frames=0" 1 nnet-get-egs --num-frames=0 ark:f.ark ark,t:ali.txt ark:out.ark
expect_err "--num-frames named" "\-\-num-frames=0: must be from 1 to 10000"
expect_status "--left-context=-3" 1 nnet-get-egs --left-context=-3 ark:f.ark ark,t:ali.txt ark:out.ark
expect_err "--left-context named" "\-\-left-context=-3: must be from 0 to 1000"
expect_status "nnet-combine --minibatch-size=0" 1 nnet-combine --minibatch-size=0 m2.mdl m2.mdl ark:egs.ark out.mdl
expect_err "--minibatch-size named" "\-\-minibatch-size=0: must be from 1 to 1048576"

# Structure differences are named: which component, which dimension, which files.
expect_status "nnet-average different structure" 1 nnet-average m2.mdl m2b.mdl out.mdl
expect_err "average names component and dim" "model 'm2b.mdl' does not have the structure of 'm2.mdl': component 0 \(AffineComponent\) has output-dim 3, not 2"
expect_status "nnet-combine different structure" 1 nnet-combine m2.mdl m2b.mdl ark:egs.ark out.mdl
expect_err "combine names files and dim" "model 'm2b.mdl' does not have the structure of 'm2.mdl': component 0 \(AffineComponent\) has output-dim 3"
expect_same "structure: old model untouched" keep out.mdl
no_temps "all"

# Disk full: the write error is reported (here at the final flush) and the status is 1.
expect_status "disk full" 1 copy-feats ark:f.ark ark:/dev/full
expect_err "disk full named" "cannot write 'ark:/dev/full': write error on '/dev/full': No space left on device"

# Issue 29, output path kinds. A symbolic link is written through (the link stays, its target gets
# the new content); an existing file keeps its mode; a hard-linked file is refused (a rename
# would break the link) and keeps its content; one file given twice as an output is an error;
# a 254-byte name works (the temporary's name is shortened to fit NAME_MAX).
echo old >target.ark; chmod 640 target.ark; ln -s target.ark link.ark
expect_status "write through a symlink" 0 copy-feats ark:f.ark ark:link.ark
[ -L link.ark ] && pass "the symlink stays a symlink" || fail "link.ark replaced by a regular file"
expect_same "the symlink's target has the new content" f.ark target.ark
expect_eq "the target keeps its mode" "$(stat -c %a target.ark)" 640
echo old >hard.ark; ln hard.ark hard2.ark
expect_status "a hard-linked output" 1 copy-feats ark:f.ark ark:hard.ark
expect_err "hard links named" "cannot write 'hard.ark': it has 2 hard links"
expect_eq "hard-linked file untouched" "$(cat hard2.ark)" old
expect_status "ark,scp:x,x" 1 copy-feats ark:f.ark ark,scp:x,x
expect_err "same file twice named" "cannot write 'x': the same file is already an output"
[ ! -e x ] && pass "ark,scp:x,x writes nothing" || fail "ark,scp:x,x left x"
egs_two() { nnet-get-egs ark:f.ark ark,t:ali.txt ark:two.egs 2>/dev/null; nnet-copy-egs ark:two.egs ark:o.egs ark:./o.egs; }
expect_status "nnet-copy-egs with one output twice" 1 egs_two
expect_err "two spellings of one output" "the same file is already an output"
long=$(printf 'n%.0s' $(seq 254))
expect_status "a 254-byte file name" 0 copy-feats ark:f.ark ark:$long
expect_same "the long name has the output" f.ark $long
rm -f $long
# A failed rename at exit undoes the renames made before it: all outputs or none (here the scp's
# directory is removed while the program reads its input).
mkdir -p d1 d2; echo old >d1/o.ark
( copy-feats "ark:sleep 1; cat f.ark |" ark,scp:d1/o.ark,d2/o.scp >out 2>err; echo $? >rc ) & sleep 0.4; rm -rf d2; wait
expect_eq "a failed rename at exit: exit 1" "$(cat rc)" 1
expect_err "the failed rename named" "cannot rename .*d2/\.o\.scp"
expect_eq "the archive renamed before it is rolled back" "$(cat d1/o.ark)" old
[ -z "$(ls -A d1 | grep -v '^o.ark$')" ] && pass "no temporary or backup left in d1" || fail "left in d1: $(ls -A d1)"
no_temps "path kinds"

# Issue 29, messages: a bad utt2spk line counts its tokens (it said "got 0": read after the free);
# speakers matching no utterance say so (not "no features").
printf 'u1 A B\n' >u2s.bad
compute-cmvn-stats ark:f.ark st.ark 2>/dev/null
expect_status "utt2spk with two speakers on a line" 1 apply-cmvn --utt2spk=ark:u2s.bad ark:st.ark ark:f.ark ark:o.ark
expect_err "the token count" "key 'u1': .*expected one token on the line, got 2"
printf 'sZ nobody\n' >s2u.none
expect_status "spk2utt matching no utterance" 1 compute-cmvn-stats --spk2utt=ark:s2u.none ark:f.ark ark:o.ark
expect_err "no utterance of the speakers named" "no utterance of 'ark:s2u.none' has features in 'ark:f.ark'"
