#!/usr/bin/env bash
# feat-to-dim and feat-to-len: dims and lengths, per key and total.
. "$(dirname "$0")/lib.sh"

python3 - <<'PY'
import struct
def fm(r, c):
    return b'\0BFM \x04' + struct.pack('<i', r) + b'\x04' + struct.pack('<i', c) + b'\0' * (4 * r * c)
open('a.ark', 'wb').write(b'utt1 ' + fm(7, 13) + b'utt2 ' + fm(5, 13))
open('one.mat', 'wb').write(fm(3, 4))
PY

expect_status "feat-to-dim to stdout" 0 feat-to-dim ark:a.ark -
expect_eq "dim of the first matrix" "$(cat out)" 13
expect_status "feat-to-dim per key" 0 feat-to-dim ark:a.ark ark,t:dims.txt
expect_eq "per-key dims (Kaldi int32 text form)" "$(cat dims.txt)" "$(printf 'utt1 13 \nutt2 13 ')"
expect_status "feat-to-dim of a single matrix file" 0 feat-to-dim one.mat -
expect_eq "single file dim" "$(cat out)" 4
expect_status "feat-to-len total" 0 feat-to-len ark:a.ark
expect_eq "total rows" "$(cat out)" 12
expect_status "feat-to-len per key" 0 feat-to-len "ark:cat a.ark |" ark,t:-
expect_eq "lengths" "$(cat out)" "$(printf 'utt1 7 \nutt2 5 ')"
expect_status "feat-to-len binary int32 archive" 0 feat-to-len ark:a.ark ark:lens.ark
expect_eq "binary int32 entry" "$(od -An -tx1 lens.ark | tr -d ' \n')" \
    "757474312000420407000000757474322000420405000000"
: > empty.ark
expect_status "feat-to-dim of an empty archive" 1 feat-to-dim ark:empty.ark -
expect_status "feat-to-len of an empty archive" 1 feat-to-len ark:empty.ark
expect_status "feat-to-dim usage" 2 feat-to-dim ark:a.ark
