#!/usr/bin/env bash
# compute-fbank-feats / compute-mfcc-feats at --dither=0 against an independent float64 reference
# written from Kaldi's definitions (feat_reference.py: sine, chirp, silence, noise, 8 kHz, stereo),
# for every window type and the options that change the numbers; then dither and pipes.
. "$(dirname "$0")/lib.sh"
ref=$TESTS/prog/feat_reference.py
py=
for p in python3 /usr/bin/python3; do
    if "$p" -c 'import numpy' 2>/dev/null; then py=$p; break; fi
done
if [ -z "$py" ]; then fail "numpy is needed for the reference (tools/install-deps.sh)"; exit 1; fi
"$py" "$ref" make-wavs "$PWD" || fail "making the test signals"

check() { # kind, options...
    local kind=$1; shift
    if compute-$kind-feats --print-args=false "$@" scp:wav.scp ark,t:o.txt 2>err; then
        "$py" "$ref" check "$kind" o.txt wav.scp "$@"
    else
        fail "compute-$kind-feats $*: exit status $?"; tail -n 3 err
    fi
}
check mfcc --dither=0
check fbank --dither=0
check fbank --dither=0 --use-energy=true --raw-energy=false --window-type=hamming \
    --snip-edges=false --round-to-power-of-two=false --num-mel-bins=40 --low-freq=64 \
    --high-freq=-400 --use-power=false
check mfcc --dither=0 --window-type=blackman --num-ceps=20 --num-mel-bins=30 --cepstral-lifter=0 \
    --energy-floor=1.0 --remove-dc-offset=false --preemphasis-coefficient=0 --frame-length=20 \
    --frame-shift=8
check fbank --dither=0 --use-log-fbank=false --window-type=hanning --sample-frequency=8000 \
    --num-mel-bins=15 --high-freq=3700
check mfcc --dither=0 --window-type=rectangular --use-energy=false --subtract-mean=true
check mfcc --dither=0 --window-type=sine --channel=1 --snip-edges=false --raw-energy=false
check fbank --dither=0 --use-energy=true --energy-floor=2.5 --frame-length=32 --frame-shift=12.5

# Hand-checked values: silence at --dither=0 has log-energy log(FLT_EPSILON) = -15.942385 in c0,
# and every log mel energy is log(FLT_EPSILON), so the other cepstra are 0.
compute-mfcc-feats --dither=0 "scp:grep silence wav.scp |" ark,t:s.txt 2>err
expect_eq "silence: c0 = log(FLT_EPSILON)" "$(sed -n 2p s.txt | awk '{print $1}')" "-15.94238"
expect_eq "silence: c1..c12 = 0" \
    "$(sed -n 2p s.txt | awk '{ok = 1; for (i = 2; i <= 13; i++) if ($i > 1e-4 || $i < -1e-4) ok = 0; print ok}')" 1
expect_eq "frames (1 + (8000 - 400) / 160)" "$(sed -n '2,$p' s.txt | wc -l)" 48

# Default options: 13 MFCCs, 23 fbanks; the number of frames of 1 s of audio is 98.
expect_status "mfcc defaults" 0 compute-mfcc-feats scp:wav.scp ark:m.ark
expect_err "Kaldi's final log line" 'Done 5 out of 6 utterances\.'
expect_err "the 8 kHz file is refused by name" "Failed to compute features for utterance sine8k: .*8000"
expect_eq "mfcc dim" "$(feat-to-dim ark:m.ark - 2>/dev/null)" 13
expect_eq "frames of 1 s" "$(feat-to-len 'ark:m.ark' ark,t:- 2>/dev/null | awk '$1 == "sine" {print $2}')" 98
compute-fbank-feats scp:wav.scp ark:f.ark 2>/dev/null
expect_eq "fbank dim" "$(feat-to-dim ark:f.ark - 2>/dev/null)" 23

# Dither: seeded per utterance (same output every run, and whatever the order of the scp).
compute-mfcc-feats scp:wav.scp ark:d1.ark 2>/dev/null
tac wav.scp > rev.scp
compute-mfcc-feats "scp:grep -v stereo rev.scp |" ark:d2.ark 2>/dev/null
compute-mfcc-feats "scp:grep chirp wav.scp |" ark,t:d3.txt 2>/dev/null
copy-feats "ark:d1.ark" "ark,t:d1.txt" 2>/dev/null
expect_same "dithered output is reproducible" m.ark d1.ark
awk '/^chirp/,/\]$/' d1.txt > d1.chirp.txt
expect_same "an utterance's dither does not depend on the others" d1.chirp.txt d3.txt
compute-mfcc-feats --seed=5 "scp:grep chirp wav.scp |" ark,t:d4.txt 2>/dev/null
if cmp -s d3.txt d4.txt; then fail "--seed changes the dither"; else pass "--seed changes the dither"; fi
compute-mfcc-feats --dither=0 "scp:grep chirp wav.scp |" ark,t:d5.txt 2>/dev/null
if cmp -s d3.txt d5.txt; then fail "dither changes the features"; else pass "dither changes the features"; fi

# wav.scp entries as pipes (sox writes a streamed WAVE with an unknown length), ark,scp output.
printf 'p1 cat sine.wav |\np2 sox -t wav chirp.wav -t wav - |\n' > pipe.scp
expect_status "pipes in wav.scp" 0 compute-mfcc-feats --dither=0 scp:pipe.scp ark,scp:p.ark,p.scp
expect_eq "both piped utterances" "$(cut -d' ' -f1 p.scp | tr '\n' ' ')" "p1 p2 "
compute-mfcc-feats --dither=0 "scp:grep -E '^(sine|chirp) ' wav.scp |" ark,t:q.txt 2>/dev/null
copy-feats scp:p.scp ark,t:p.txt 2>/dev/null
expect_eq "piped audio gives the same features" "$(sed 's/^p1 /sine /; s/^p2 /chirp /' p.txt | md5sum)" \
    "$(md5sum < q.txt)"
if grep -q 'truncated file' err; then fail "no truncation warning for sox's streamed length"; else
    pass "no truncation warning for sox's streamed length"; fi
expect_status "usage error" 2 compute-mfcc-feats scp:wav.scp
expect_status "bad option value" 1 compute-fbank-feats --window-type=kaiser scp:wav.scp ark:x.ark
expect_err "names the bad window" "invalid --window-type 'kaiser'"
