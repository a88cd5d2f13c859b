#!/usr/bin/env bash
# compute-cmvn-stats / apply-cmvn / splice-feats: the statistics layout (2 x (D+1) doubles) and
# the normalisation maths against sums done here in Python; per utterance, per speaker, global.
. "$(dirname "$0")/lib.sh"
cat > ark.py <<'PY'
import random, sys
def read(path):
    mats, key, rows = {}, None, None
    for line in open(path):
        t = line.split()
        if not t: continue
        if key is None:
            key, t, rows = t[0], t[2:], []
        end = bool(t) and t[-1] == ']'
        if end: t = t[:-1]
        if t: rows.append([float(v) for v in t])
        if end: mats[key] = rows; key = None
    return mats
def write(path, mats):
    with open(path, 'w') as f:
        for k, rows in mats.items():
            f.write(k + '  [\n' + ' \n'.join('  ' + ' '.join(repr(v) for v in r) for r in rows) + ' ]\n')
PY
python3 - <<'PY'
import random, sys
sys.path.insert(0, '.')
import ark
random.seed(3)
utts = {'s1-a': 5, 's1-b': 7, 's2-a': 4, 's2-b': 1, 's3-a': 6}
mats = {u: [[round(random.gauss(10 * j, 1 + j), 3) for j in range(3)] for _ in range(n)]
        for u, n in utts.items()}
ark.write('feats.txt', mats)
open('utt2spk', 'w').write(''.join(f'{u} {u[:2]}\n' for u in utts))
open('spk2utt', 'w').write('s1 s1-a s1-b\ns2 s2-a s2-b\ns3 s3-a\n')
PY
copy-feats ark:feats.txt ark,scp:feats.ark,feats.scp 2>/dev/null

check() { # name, python expression over stats S (key -> rows) and feats F; prints ok/bad
    if python3 -c "import sys; sys.path.insert(0, '.'); import ark
S = ark.read('$2'); F = ark.read('feats.txt')
$3" >pyout 2>&1 && grep -q '^ok$' pyout; then pass "$1"; else fail "$1"; cat pyout | head -5; fi
}
expect_status "per-utterance stats" 0 compute-cmvn-stats scp:feats.scp ark,t:utt.txt
expect_err "final log" "Done accumulating CMVN stats for 5 utterances"
check "per-utterance stats: sums, sums of squares, count, 0" utt.txt '
ok = sorted(S) == sorted(F)
for k, rows in F.items():
    s = S[k]; D = len(rows[0])
    ok &= len(s) == 2 and len(s[0]) == D + 1 and s[0][D] == len(rows) and s[1][D] == 0
    for j in range(D):
        ok &= abs(s[0][j] - sum(r[j] for r in rows)) < 1e-6 * (1 + abs(s[0][j]))
        ok &= abs(s[1][j] - sum(r[j] ** 2 for r in rows)) < 1e-6 * (1 + abs(s[1][j]))
print("ok" if ok else "bad")'
compute-cmvn-stats scp:feats.scp ark:utt.ark 2>/dev/null
expect_eq "binary stats are DM (double) matrices" "$(head -c 11 utt.ark | tail -c 6 | od -An -c | tr -d ' ')" '\0BDM004'

expect_status "per-speaker stats" 0 compute-cmvn-stats --spk2utt=ark:spk2utt scp:feats.scp \
    ark,scp:spk.ark,spk.scp
expect_err "per-speaker log" "for 3 speakers; 5 utterances processed"
copy-feats ark:spk.ark ark,t:spk.txt 2>/dev/null
check "per-speaker stats pool the speaker's utterances" spk.txt '
ok = sorted(S) == ["s1", "s2", "s3"]
for spk, s in S.items():
    rows = [r for u, m in F.items() if u[:2] == spk for r in m]
    ok &= s[0][3] == len(rows) and all(abs(s[0][j] - sum(r[j] for r in rows)) < 1e-4 for j in range(3))
print("ok" if ok else "bad")'

expect_status "apply-cmvn means and variances per speaker" 0 apply-cmvn --norm-vars=true \
    --utt2spk=ark:utt2spk scp:spk.scp scp:feats.scp ark,t:norm.txt
expect_err "apply log" "Applied cepstral mean and variance normalization to 5 utterances, errors on 0"
check "normalised: (x - mean) / sqrt(E[x^2] - mean^2) of the speaker" norm.txt '
ok = sorted(S) == sorted(F)
for spk in ["s1", "s2", "s3"]:
    us = [u for u in F if u[:2] == spk]
    rows = [r for u in us for r in F[u]]
    n = len(rows)
    for j in range(3):
        m = sum(r[j] for r in rows) / n
        v = sum(r[j] ** 2 for r in rows) / n - m * m
        for u in us:
            for r, o in zip(F[u], S[u]):
                ok &= abs((r[j] - m) / v ** 0.5 - o[j]) < 1e-4
print("ok" if ok else "bad")'
apply-cmvn --utt2spk=ark:utt2spk scp:spk.scp scp:feats.scp ark,t:mean.txt 2>/dev/null
check "means only: x - mean" mean.txt '
ok = True
for u in F:
    rows = [r for v in F if v[:2] == u[:2] for r in F[v]]
    for j in range(3):
        m = sum(r[j] for r in rows) / len(rows)
        ok &= all(abs(r[j] - m - o[j]) < 1e-4 for r, o in zip(F[u], S[u]))
print("ok" if ok else "bad")'

expect_status "per-utterance apply (no utt2spk)" 0 apply-cmvn --norm-vars=true ark:utt.ark \
    ark:feats.ark ark,t:un.txt
expect_err "flooring a one-frame utterance's variance" "flooring cepstral variance"
expect_status "global stats to a file" 0 compute-cmvn-stats --binary=false scp:feats.scp global.mat
expect_eq "global count" "$(sed -n 2p global.mat | awk '{print $4}')" 23
expect_status "apply global stats" 0 apply-cmvn global.mat scp:feats.scp ark:g.ark

# errors
grep -v '^s3' utt2spk > utt2spk.part
expect_status "an utterance without a speaker is skipped" 0 apply-cmvn --utt2spk=ark:utt2spk.part \
    scp:spk.scp scp:feats.scp ark:p.ark
expect_err "names it" "No normalization statistics available for key s3-a"
expect_status "norm-vars without norm-means" 1 apply-cmvn --norm-means=false --norm-vars=true \
    ark:utt.ark ark:feats.ark ark:x.ark
expect_err "Kaldi's message" "cannot normalize the variance but not the mean"
splice-feats --left-context=1 --right-context=0 ark:feats.ark ark:wide.ark 2>/dev/null
expect_status "dimension mismatch" 1 apply-cmvn ark:utt.ark ark:wide.ark ark:x.ark
expect_err "names file, utterance and both dims" "'ark:wide.ark': key 's1-a': dimension mismatch: cmvn stats have dimension 3 and features have dimension 6"
if [ -e x.ark ]; then fail "no output after a failure"; else pass "no output after a failure"; fi
printf 's1 s1-a nope\n' > spk2utt.bad
expect_status "spk2utt naming a missing utterance" 0 compute-cmvn-stats --spk2utt=ark:spk2utt.bad \
    scp:feats.scp ark:x2.ark
expect_err "warns" "Did not find features for utterance nope"

# splice-feats: rows t-L..t+R, edges repeated
expect_status "splice" 0 splice-feats --left-context=2 --right-context=1 ark:feats.ark ark,t:sp.txt
check "spliced rows with clamped edges" sp.txt '
ok = True
for u, rows in F.items():
    T = len(rows)
    for t in range(T):
        want = [v for k in range(-2, 2) for v in rows[min(max(t + k, 0), T - 1)]]
        ok &= len(S[u][t]) == 12 and all(abs(a - b) < 1e-4 for a, b in zip(S[u][t], want))
print("ok" if ok else "bad")'
expect_eq "default context 4+1+4" "$(splice-feats ark:feats.ark ark:- 2>/dev/null | feat-to-dim ark:- - 2>/dev/null)" 27
