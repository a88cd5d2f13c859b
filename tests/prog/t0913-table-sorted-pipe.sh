#!/usr/bin/env bash
# ark,s,cs: random access into archives that come through a pipe, as Kaldi recipes use them,
# and into files and scp lists read forward (s,cs: no index held)
# (CMVN stats and features read by key from a command's output).
. "$(dirname "$0")/lib.sh"
python3 - <<'PY'
import random
random.seed(5)
with open('feats.txt', 'w') as f:
    for s in range(1, 5):
        for u in 'abc':
            n = random.randint(2, 6)
            f.write(f'spk{s}-{u}  [\n' + ' \n'.join('  ' + ' '.join(f'{random.gauss(0, 3):.4f}' for _ in range(4)) for _ in range(n)) + ' ]\n')
            open('utt2spk', 'a').write(f'spk{s}-{u} spk{s}\n')
    open('spk2utt', 'w').write(''.join(f'spk{s} spk{s}-a spk{s}-b spk{s}-c\n' for s in range(1, 5)))
PY
copy-feats ark:feats.txt ark,scp:feats.ark,feats.scp 2>/dev/null
compute-cmvn-stats --spk2utt=ark:spk2utt scp:feats.scp ark,scp:cmvn.ark,cmvn.scp 2>/dev/null

# Stats through a pipe, looked up by speaker in sorted order.
apply-cmvn --utt2spk=ark:utt2spk scp:cmvn.scp scp:feats.scp ark:ref.ark 2>/dev/null
expect_status "stats from a pipe with ark,s,cs" 0 apply-cmvn --utt2spk=ark:utt2spk \
    "ark,s,cs:cat cmvn.ark | cat |" scp:feats.scp ark:piped.ark
expect_same "same result as from the file" ref.ark piped.ark
expect_status "stats from a pipe without s/cs (held in memory)" 0 apply-cmvn \
    --utt2spk=ark:utt2spk "ark:cat cmvn.ark |" scp:feats.scp ark:piped2.ark
expect_same "same result, unsorted access" ref.ark piped2.ark

# Features through a pipe, random access by utterance (compute-cmvn-stats --spk2utt).
expect_status "features from a pipe with ark,s,cs" 0 compute-cmvn-stats --spk2utt=ark:spk2utt \
    "ark,s,cs:apply-cmvn --utt2spk=ark:utt2spk scp:cmvn.scp scp:feats.scp ark:- |" ark,t:st.txt
compute-cmvn-stats --spk2utt=ark:spk2utt ark:ref.ark ark,t:st.ref.txt 2>/dev/null
expect_same "stats of the normalised features through the pipe" st.ref.txt st.txt
expect_eq "normalised means are zero" \
    "$(awk 'NR % 3 == 2 {for (i = 1; i < 5; i++) if ($i > 1e-3 || $i < -1e-3) bad = 1} END {print bad + 0}' st.txt)" 0

# A missing key with s: the lookup does not read the rest of the stream (the spk2utt names
# spk0, before every key, and spk9, after them; both are just missing).
printf 'spk0 spk0-a\nspk2 spk2-a spk2-b\nspk9 spk9-a\n' > spk2utt.gaps
expect_status "missing keys in a sorted stream" 0 compute-cmvn-stats --spk2utt=ark:spk2utt.gaps \
    "ark,s,cs:cat feats.ark |" ark,t:gaps.txt
expect_err "names the missing ones" "Did not find features for utterance spk0-a"
expect_eq "speaker found" "$(grep -c '^spk2 ' gaps.txt)" 1

# Errors: unsorted archive with s, out-of-order lookups with cs.
printf 'spk1 spk1-c spk1-a\n' > spk2utt.unsorted
expect_status "cs with lookups out of order" 1 compute-cmvn-stats --spk2utt=ark:spk2utt.unsorted \
    "ark,s,cs:cat feats.ark |" ark:x.ark
expect_err "names the rule and both keys" "cs option was given but keys are not asked for in sorted order \('spk1-a' after 'spk1-c'\)"
expect_status "the same without cs works" 0 compute-cmvn-stats --spk2utt=ark:spk2utt.unsorted \
    "ark,s:cat feats.ark |" ark:x.ark
python3 -c "
t = open('feats.txt').read().split(' ]\n')
open('unsorted.txt', 'w').write(' ]\n'.join(reversed([x for x in t if x.strip()])) + ' ]\n')"
printf 'spk9 spk9-a\n' > spk2utt.late
expect_status "s on an unsorted archive" 1 compute-cmvn-stats --spk2utt=ark:spk2utt.late \
    "ark,s,cs:copy-feats ark:unsorted.txt ark:- |" ark:y.ark
expect_err "says it is not sorted" "the s option was given but the archive is not sorted"
expect_status "an unsorted stream without s is read into memory" 0 compute-cmvn-stats \
    --spk2utt=ark:spk2utt "ark:copy-feats ark:unsorted.txt ark:- |" ark,t:uns.txt
compute-cmvn-stats --spk2utt=ark:spk2utt ark:feats.ark ark,t:uns.ref.txt 2>/dev/null
expect_same "and gives the same stats" uns.ref.txt uns.txt

# s,cs on a file archive and on an scp: read forward, not indexed; the same results, and the same
# rules (a lookup out of order is an error, as it could not be served without an index).
expect_status "scp,s,cs: compute-cmvn-stats reads the scp forward" 0 compute-cmvn-stats \
    --spk2utt=ark:spk2utt scp,s,cs:feats.scp ark:fwd.ark
expect_same "same stats as the indexed scp" cmvn.ark fwd.ark
expect_status "ark,s,cs on a file: utt2spk read forward" 0 apply-cmvn --utt2spk=ark,s,cs:utt2spk \
    scp:cmvn.scp scp:feats.scp ark:fwd2.ark
expect_same "same features as with utt2spk held" ref.ark fwd2.ark
expect_status "scp,s,cs with lookups out of order" 1 compute-cmvn-stats \
    --spk2utt=ark:spk2utt.unsorted scp,s,cs:feats.scp ark:x.ark
expect_err "names the rule and both keys (scp)" "cs option was given but keys are not asked for in sorted order \('spk1-a' after 'spk1-c'\)"
expect_status "missing keys in a sorted scp" 0 compute-cmvn-stats --spk2utt=ark:spk2utt.gaps \
    scp,s,cs:feats.scp ark,t:gaps2.txt
expect_same "the same as from the sorted stream" gaps.txt gaps2.txt
printf 'spk1-a spk1\nspk1-b spk1\nspk1-c spk1\nspk2-b spk2\nspk2-a spk2\n' > utt2spk.unsorted
expect_status "ark,s,cs on an unsorted file" 1 apply-cmvn --utt2spk=ark,s,cs:utt2spk.unsorted \
    scp:cmvn.scp scp:feats.scp ark:z.ark
expect_err "says it is not sorted (file)" "the s option was given but the archive is not sorted \('spk2-a' after 'spk2-b'\)"
