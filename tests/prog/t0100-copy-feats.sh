#!/usr/bin/env bash
# copy-feats: byte-exact binary copies, ark,scp offsets, text output, pipes, errors.
. "$(dirname "$0")/lib.sh"

python3 - <<'PY'
import struct
def fm(rows):
    r, c = len(rows), len(rows[0])
    b = b'\0BFM \x04' + struct.pack('<i', r) + b'\x04' + struct.pack('<i', c)
    for row in rows: b += struct.pack('<%df' % c, *row)
    return b
open('a.ark', 'wb').write(b'utt1 ' + fm([[1, 2, 3], [4, 5, 6]]) +
                          b'utt2 ' + fm([[0.5, -1, 2.25]] * 10))
open('ints.ark', 'wb').write(b'u ' + fm([[float(i - 40) for i in range(8)]] * 12))
PY

expect_status "binary archive copy succeeds" 0 copy-feats ark:a.ark ark:b.ark
expect_same "binary copy is byte-identical" a.ark b.ark
expect_err "final log line" 'LOG \(copy-feats.*Copied 2 feature matrices\.'

expect_status "ark,scp write" 0 copy-feats ark:a.ark ark,scp:c.ark,c.scp
expect_eq "scp offsets point after 'key '" "$(cat c.scp)" "$(printf 'utt1 c.ark:5\nutt2 c.ark:49')"
expect_status "read back through scp" 0 copy-feats scp:c.scp ark:d.ark
expect_same "scp read gives the same data" a.ark d.ark

expect_status "text output" 0 copy-feats ark:a.ark ark,t:a.txt
expect_eq "text format" "$(head -n 3 a.txt)" "$(printf 'utt1  [\n  1 2 3 \n  4 5 6 ]')"
expect_status "text input back to binary" 0 copy-feats ark:a.txt ark:e.ark
expect_same "text round trip" a.ark e.ark

expect_status "input pipe" 0 copy-feats "ark:cat a.ark |" "ark:| gzip -c > f.gz"
gunzip -c f.gz > f.ark
expect_same "through both pipes" a.ark f.ark

expect_status "compress 2-byte-integer" 0 copy-feats --compress=true --compression-method=4 \
    ark:ints.ark ark:ints.cm.ark
expect_eq "CM2 token written" "$(head -c 8 ints.cm.ark | tail -c 4)" "CM2 "
expect_status "decompress" 0 copy-feats ark:ints.cm.ark ark:ints.back.ark
expect_same "integers survive 2-byte compression exactly" ints.ark ints.back.ark
expect_status "compress auto (CM for 10 rows)" 0 copy-feats --compress=true ark:a.ark ark:g.ark
expect_eq "CM token for utt2" "$(grep -c -a 'utt2 .BCM ' g.ark)" 1

head -c 60 a.ark > trunc.ark
expect_status "truncated archive fails" 1 copy-feats ark:trunc.ark ark:h.ark
expect_err "one line naming the file and saying truncated" "^ERROR .*trunc\.ark.*truncated"
expect_eq "exactly one ERROR line" "$(grep -c '^ERROR' err)" 1
expect_eq "no output left behind on failure" "$(ls -a | grep -c 'h\.ark')" 0

expect_status "missing input file" 1 copy-feats ark:nonexistent.ark ark:h.ark
expect_err "missing file named" "nonexistent\.ark"
expect_status "unknown option" 2 copy-feats --no-such-option ark:a.ark ark:h.ark
expect_status "wrong argument count" 2 copy-feats ark:a.ark
expect_status "bad compression method" 2 copy-feats --compress=true --compression-method=9 \
    ark:a.ark ark:h.ark
: > empty.ark
expect_status "nothing copied is a failure" 1 copy-feats ark:empty.ark ark:h.ark
expect_status "failing input command" 1 copy-feats "ark:cat a.ark; exit 3 |" ark:h.ark
expect_err "command status reported" "status 3"
