#!/usr/bin/env bash
# Bad audio: each case is a one-line warning naming the utterance and the reason, the good
# utterances still come out, and the exit status is 1 only when nothing was processed.
. "$(dirname "$0")/lib.sh"
python3 - <<'PY'
import struct, math
def wav(data, rate=16000, chans=1, bits=16, tag=1, data_size=None, extra=b''):
    fmt = struct.pack('<HHIIHH', tag, chans, rate, rate * chans * bits // 8, chans * bits // 8, bits)
    n = len(data) if data_size is None else data_size
    body = b'WAVE' + b'fmt ' + struct.pack('<I', len(fmt)) + fmt + extra + b'data' + struct.pack('<I', n) + data
    return b'RIFF' + struct.pack('<I', 4 + len(body)) + body
pcm = b''.join(struct.pack('<h', int(3000 * math.sin(i / 5.0))) for i in range(4000))
open('good.wav', 'wb').write(wav(pcm, extra=b'LIST' + struct.pack('<I', 5) + b'abcde\0'))
open('trunc-header.wav', 'wb').write(wav(pcm)[:30])
open('no-data-chunk.wav', 'wb').write(wav(pcm)[:36])
open('8bit.wav', 'wb').write(wav(bytes(4000), bits=8))
open('float.wav', 'wb').write(wav(bytes(16000), bits=32, tag=3))
open('empty-data.wav', 'wb').write(wav(b''))
open('half-sample.wav', 'wb').write(wav(b'\x01'))
open('short-data.wav', 'wb').write(wav(pcm, data_size=len(pcm) + 1000))
open('not-riff.wav', 'wb').write(b'OggS' + bytes(100))
open('empty.wav', 'wb').write(b'')
open('too-short.wav', 'wb').write(wav(pcm[:200]))
PY
cat > wav.scp <<'SCP'
a-good good.wav
b-trunc trunc-header.wav
c-nodata no-data-chunk.wav
d-8bit 8bit.wav
e-float float.wav
f-zero empty-data.wav
g-half half-sample.wav
h-missing missing.wav
i-notriff not-riff.wav
j-empty empty.wav
k-pipefail false |
l-short short-data.wav
m-tooshort too-short.wav
SCP
expect_status "good utterances processed despite bad ones" 0 \
    compute-mfcc-feats --dither=0 scp:wav.scp ark,t:out.txt
expect_eq "only the readable ones are written" "$(grep -o '^[a-z]-[a-z0-9]*' out.txt | tr '\n' ' ')" \
    "a-good l-short "
expect_err "truncated header" "utterance 'b-trunc': 'trunc-header.wav' at byte 30: truncated WAVE header"
expect_err "no data chunk" "utterance 'c-nodata': .*truncated WAVE header \(no 'data' chunk\)"
expect_err "8-bit refused" "utterance 'd-8bit': .*unsupported sample format: 8-bit \(only 16-bit PCM\)"
expect_err "float refused" "utterance 'e-float': .*unsupported WAVE format tag 3"
expect_err "zero samples" "utterance 'f-zero': .*WAVE file with no samples"
expect_err "half a sample is zero samples" "utterance 'g-half': .*WAVE file with no samples"
expect_err "missing file" "utterance 'h-missing': cannot open 'missing.wav': No such file"
expect_err "not RIFF" "utterance 'i-notriff': .*not a RIFF/WAVE file"
expect_err "empty file" "utterance 'j-empty': .*empty file"
expect_err "failed command" "utterance 'k-pipefail': .*false"
expect_err "short data chunk: a warning, the samples kept" "expected 9000 bytes of audio, read only 8000"
expect_err "too short for a frame" "utterance 'm-tooshort': 100 samples are too few for one frame"
expect_err "summary" "Done 2 out of 13 utterances"
expect_eq "one line per bad utterance" "$(grep -c "utterance '[b-km]-" err)" 11

grep -v good wav.scp | grep -v short-data > bad.scp
expect_status "nothing processed: exit 1" 1 compute-fbank-feats scp:bad.scp ark:x.ark
expect_err "summary when nothing was done" "Done 0 out of 11 utterances"
expect_status "missing wav.scp" 1 compute-fbank-feats scp:nonexistent.scp ark:x.ark
expect_err "names the scp" "nonexistent.scp"

# An archive of WAVE files (Kaldi's wav-copy output): a bad entry ends the table with an error.
{ printf 'u1 '; cat good.wav; printf 'u2 '; cat good.wav; } > good.ark
expect_status "archive of WAVE files" 0 compute-mfcc-feats --dither=0 ark:good.ark ark:y.ark
expect_err "both archive entries" "Done 2 out of 2"
{ printf 'u1 '; cat good.wav; printf 'u2 '; cat trunc-header.wav; } > bad.ark
expect_status "bad archive entry" 1 compute-mfcc-feats --dither=0 ark:bad.ark ark:z.ark
expect_err "names key and reason" "key 'u2': .*truncated WAVE header"
if [ -e z.ark ]; then fail "no output left after a failed table"; else pass "no output left after a failed table"; fi

# Issue 29: WAVE objects in an archive must give their exact size. A streamed size (0 or
# 0xFFFFFFFF), one larger than the RIFF object, or an odd one swallowed the next utterances (or
# the first byte of the next key) with exit 0; each is now one ERROR naming the key.
python3 - <<'PY'
import struct, math
pcm = b''.join(struct.pack('<h', int(3000 * math.sin(i / 5.0))) for i in range(1600))
def wav(data, data_size=None):
    fmt = struct.pack('<HHIIHH', 1, 1, 16000, 32000, 2, 16)
    n = len(data) if data_size is None else data_size
    body = b'WAVE' + b'fmt ' + struct.pack('<I', len(fmt)) + fmt + b'data' + struct.pack('<I', n) + data
    return b'RIFF' + struct.pack('<I', len(body)) + body
def ark(name, size):
    with open(name, 'wb') as f:
        f.write(b'u1 ' + wav(pcm, size) + b'u2 ' + wav(pcm) + b'u3 ' + wav(pcm))
ark('good.wav.ark', None)
ark('zero.wav.ark', 0)
ark('ffff.wav.ark', 0xFFFFFFFF)
ark('big.wav.ark', 1000000)
ark('odd.wav.ark', len(pcm) - 1)
PY
expect_status "a WAVE archive" 0 compute-fbank-feats --dither=0 ark:good.wav.ark ark,t:good.fb
expect_eq "three utterances" "$(grep -c '\[' good.fb)" 3
for c in zero ffff big odd; do
    echo keep >o.fb
    expect_status "WAVE archive, data size $c" 1 compute-fbank-feats --dither=0 ark:$c.wav.ark ark,t:o.fb
    expect_err "data size $c: one ERROR naming the key" "^ERROR .*$c\.wav\.ark.*key 'u1'.*'data' chunk size"
    expect_eq "data size $c: one ERROR line" "$(grep -c '^ERROR' err)" 1
    expect_eq "data size $c: the output untouched" "$(cat o.fb)" keep
done
expect_status "--num-mel-bins=10^8" 1 compute-fbank-feats --num-mel-bins=100000000 ark:good.wav.ark ark:o.fb
expect_err "--num-mel-bins limit named" "\-\-num-mel-bins=100000000: must be from 3 to 1024"
