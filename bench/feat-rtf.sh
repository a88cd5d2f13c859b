#!/usr/bin/env bash
# Front-end speed: real-time factor of compute-mfcc-feats and compute-fbank-feats on one core
# (taskset -c 0), Kaldi's default options (dither on, 25 ms / 10 ms frames, 512-point FFT).
#
# Usage: bench/feat-rtf.sh [--seconds S] [--repeats N] [<work-dir>]      (after `make`)
# e.g.:  bench/feat-rtf.sh --seconds 300 --repeats 5 /tmp/feat-bench
# Makes S seconds (default 300) of 16 kHz audio in 10 files (tones, chirps and noise; the front
# end's cost does not depend on the content), then runs each program N times (default 5),
# interleaved, writing the features to /dev/null through a pipe. Prints, per program, the median
# wall time, the median CPU time (user + sys) and the real-time factors audio / time. On a loaded
# machine the CPU-time figure is the one to read (wall time includes waiting for a core).
# The figures in docs/BENCHMARKS.md ("Speech front-end") come from it.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
export PATH=$top/bin:$PATH
secs=300 reps=5
while [ $# -gt 0 ]; do
    case $1 in
        --seconds) secs=$2; shift 2 ;;
        --repeats) reps=$2; shift 2 ;;
        *) break ;;
    esac
done
work=${1:-$(mktemp -d)}
mkdir -p "$work"
for p in compute-mfcc-feats compute-fbank-feats; do
    command -v $p >/dev/null || { echo "$0: $p not built (run make)" >&2; exit 1; }
done
python3 - "$work" "$secs" <<'PY'
import math, random, struct, sys, wave
work, secs = sys.argv[1], float(sys.argv[2])
random.seed(1)
n = int(secs * 16000 / 10)
with open(f'{work}/wav.scp', 'w') as scp:
    for u in range(10):
        f0 = 100 + 300 * u
        pcm = bytearray()
        for i in range(n):
            t = i / 16000.0
            x = 3000 * math.sin(2 * math.pi * (f0 * t + 40 * t * t)) + random.randint(-500, 500)
            pcm += struct.pack('<h', int(x))
        with wave.open(f'{work}/u{u}.wav', 'wb') as w:
            w.setnchannels(1); w.setsampwidth(2); w.setframerate(16000); w.writeframes(bytes(pcm))
        scp.write(f'u{u} {work}/u{u}.wav\n')
PY
audio=$(python3 -c "print($(( secs * 16000 / 10 * 10 )) / 16000)")
echo "audio: $audio s in 10 files; load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores"
: > "$work/times"
for r in $(seq "$reps"); do
    for p in compute-mfcc-feats compute-fbank-feats; do
        /usr/bin/time -f "$p %e %U %S" -a -o "$work/times" \
            taskset -c 0 $p --print-args=false "scp:$work/wav.scp" ark:- 2>/dev/null >/dev/null
    done
done
python3 - "$work/times" "$audio" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip() and not l.startswith('Command')]
audio = float(sys.argv[2])
print(f'{"program":22s} {"wall s":>8s} {"cpu s":>8s} {"RTF wall":>9s} {"RTF cpu":>9s}')
for p in ('compute-mfcc-feats', 'compute-fbank-feats'):
    w = statistics.median(float(r[1]) for r in rows if r[0] == p)
    c = statistics.median(float(r[2]) + float(r[3]) for r in rows if r[0] == p)
    print(f'{p:22s} {w:8.3f} {c:8.3f} {audio / w:8.0f}x {audio / max(c, 1e-9):8.0f}x')
PY
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
