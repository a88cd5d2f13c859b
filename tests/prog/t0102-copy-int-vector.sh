#!/usr/bin/env bash
# copy-int-vector: Kaldi BasicVectorHolder<int32> archives, binary and text.
. "$(dirname "$0")/lib.sh"

python3 - <<'PY'
import struct
def iv(v):
    return b'\0B\x04' + struct.pack('<i', len(v)) + b''.join(b'\x04' + struct.pack('<i', x) for x in v)
open('ali.ark', 'wb').write(b'utt1 ' + iv([3, 3, 4, -1, 70000]) + b'utt2 ' + iv([]))
# A single-object file in WriteIntegerVector form: size byte, raw count, raw data.
open('one.vec', 'wb').write(b'\0B\x04' + struct.pack('<4i', 3, 1, 2, 3))
PY

expect_status "binary copy" 0 copy-int-vector ark:ali.ark ark:b.ark
expect_same "binary copy is byte-identical" ali.ark b.ark
expect_err "final log line" 'Copied 2 vectors of int32\.'
expect_status "text output" 0 copy-int-vector ark:ali.ark ark,t:-
expect_eq "text form" "$(cat out)" "$(printf 'utt1 3 3 4 -1 70000 \nutt2 ')"
copy-int-vector ark:ali.ark ark,t:ali.txt 2>/dev/null
expect_status "text back to binary" 0 copy-int-vector ark:ali.txt ark:c.ark
expect_same "text round trip" ali.ark c.ark
expect_status "gzip pipe" 0 copy-int-vector ark:ali.ark "ark:| gzip -c > ali.gz"
expect_status "gunzip pipe" 0 copy-int-vector "ark:gunzip -c ali.gz |" ark:d.ark
expect_same "through gzip" ali.ark d.ark
expect_status "single object, text" 0 copy-int-vector --binary=false one.vec -
expect_eq "WriteIntegerVector text" "$(cat out)" "[ 1 2 3 ]"
head -c 20 ali.ark > trunc.ark
expect_status "truncated" 1 copy-int-vector ark:trunc.ark ark:e.ark
expect_err "truncated message" "trunc\.ark.*truncated"
expect_status "unknown option" 2 copy-int-vector --bogus ark:ali.ark ark:e.ark
