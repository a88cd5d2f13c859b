#!/usr/bin/env python3
"""Independent reference for compute-fbank-feats / compute-mfcc-feats (tests/prog/t0910).

Written from Kaldi's definitions (feat/feature-window.cc, mel-computations.cc, feature-fbank.cc,
feature-mfcc.cc, matrix-functions.cc ComputeDctMatrix), in float64 with numpy's FFT, not from
parnet's C code.

  feat_reference.py make-wavs DIR      writes the test signals (sine, chirp, silence, ...) and wav.scp
  feat_reference.py check KIND ARK WAVSCP [--opt=value ...]
      recomputes every utterance of WAVSCP with the options and compares with the text archive ARK
      (written by the program under test) to 1e-3 relative (|a - b| <= 1e-3 max(1, |b|)).
"""
import math
import struct
import sys
import wave

import numpy as np

FLT_EPS = float(np.finfo(np.float32).eps)


def write_wav(path, rate, chans):
    data = np.stack(chans, axis=1) if len(chans) > 1 else chans[0][:, None]
    data = np.clip(np.round(data), -32768, 32767).astype('<i2')
    with wave.open(path, 'wb') as w:
        w.setnchannels(data.shape[1])
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(data.tobytes())


def make_wavs(d):
    rs = np.random.RandomState(7)
    lines = []
    def add(name, rate, chans):
        write_wav(f'{d}/{name}.wav', rate, chans)
        lines.append(f'{name} {d}/{name}.wav')
    t = np.arange(16000) / 16000.0
    # The sine and the chirp carry faint noise (+-200 of 32768): without it the mel bins far from the
    # tone hold only float32 FFT round-off (~1e-7 of the peak), whose logarithm no two float
    # implementations (Kaldi's included) agree on to 1e-3.
    floor = lambda n: rs.randint(-200, 201, n)
    add('sine', 16000, [8000 * np.sin(2 * math.pi * 440 * t) + floor(len(t))])
    t2 = np.arange(int(1.2 * 16000)) / 16000.0
    f0, f1, dur = 100.0, 6000.0, 1.2  # linear chirp: phase = 2 pi (f0 t + (f1 - f0) t^2 / (2 dur))
    add('chirp', 16000, [2000 * np.sin(2 * math.pi * (f0 * t2 + (f1 - f0) * t2 ** 2 / (2 * dur)))
                         + floor(len(t2))])
    add('silence', 16000, [np.zeros(8000)])
    add('noisy', 16000, [3000 * np.sin(2 * math.pi * 1234 * t[:7000]) + rs.randint(-300, 301, 7000)])
    t8 = np.arange(6000) / 8000.0
    add('sine8k', 8000, [5000 * np.sin(2 * math.pi * 700 * t8) + floor(len(t8))])
    add('stereo', 16000, [4000 * np.sin(2 * math.pi * 300 * t[:5000]) + floor(5000),
                          7000 * np.sin(2 * math.pi * 2500 * t[:5000]) + floor(5000)])
    with open(f'{d}/wav.scp', 'w') as f:
        f.write('\n'.join(lines) + '\n')


def read_wav(path):
    with wave.open(path, 'rb') as w:
        n, c, rate = w.getnframes(), w.getnchannels(), w.getframerate()
        x = np.frombuffer(w.readframes(n), dtype='<i2').astype(np.float64).reshape(n, c)
    return x.T, rate


def parse_opts(kind, args):
    o = dict(sample_frequency=16000.0, frame_length=25.0, frame_shift=10.0, dither=1.0,
             preemphasis_coefficient=0.97, remove_dc_offset=True, window_type='povey',
             round_to_power_of_two=True, blackman_coeff=0.42, snip_edges=True, num_mel_bins=23,
             low_freq=20.0, high_freq=0.0, use_energy=(kind == 'mfcc'), energy_floor=0.0,
             raw_energy=True, use_log_fbank=True, use_power=True, num_ceps=13,
             cepstral_lifter=22.0, channel=-1, subtract_mean=False)
    for a in args:
        k, v = a[2:].split('=', 1)
        k = k.replace('-', '_')
        cur = o[k]
        if isinstance(cur, bool):
            o[k] = v in ('true', '1', 'True')
        elif isinstance(cur, int):
            o[k] = int(v)
        elif isinstance(cur, float):
            o[k] = float(v)
        else:
            o[k] = v
    return o


def mel(f):
    return 1127.0 * np.log(1.0 + np.asarray(f, dtype=np.float64) / 700.0)


def features(kind, x, o):
    fs = o['sample_frequency']
    size = int(np.float32(fs) * np.float32(0.001) * np.float32(o['frame_length']))
    shift = int(np.float32(fs) * np.float32(0.001) * np.float32(o['frame_shift']))
    padded = 1 << (size - 1).bit_length() if o['round_to_power_of_two'] else size
    n = len(x)
    if o['snip_edges']:
        nf = 0 if n < size else 1 + (n - size) // shift
        starts = [f * shift for f in range(nf)]
    else:
        nf = (n + shift // 2) // shift
        starts = [f * shift + shift // 2 - size // 2 for f in range(nf)]
    i = np.arange(size, dtype=np.float64)
    a = 2 * math.pi / (size - 1)
    wt = o['window_type']
    if wt == 'hanning':
        win = 0.5 - 0.5 * np.cos(a * i)
    elif wt == 'sine':
        win = np.sin(0.5 * a * i)
    elif wt == 'hamming':
        win = 0.54 - 0.46 * np.cos(a * i)
    elif wt == 'povey':
        win = (0.5 - 0.5 * np.cos(a * i)) ** 0.85
    elif wt == 'rectangular':
        win = np.ones(size)
    elif wt == 'blackman':
        b = o['blackman_coeff']
        win = b - 0.5 * np.cos(a * i) + (0.5 - b) * np.cos(2 * a * i)
    # mel banks: triangles on the mel scale at FFT bins 0 .. padded/2 - 1
    nb = o['num_mel_bins']
    nyq = 0.5 * fs
    hi = o['high_freq'] if o['high_freq'] > 0 else nyq + o['high_freq']
    ml, mh = mel(o['low_freq']), mel(hi)
    d = (mh - ml) / (nb + 1)
    fft_mel = mel(np.arange(padded // 2) * fs / padded)
    banks = np.zeros((nb, padded // 2 + 1))
    for b in range(nb):
        l, c, r = ml + b * d, ml + (b + 1) * d, ml + (b + 2) * d
        up = (fft_mel - l) / (c - l)
        down = (r - fft_mel) / (r - c)
        w = np.where(fft_mel <= c, up, down)
        w[(fft_mel <= l) | (fft_mel >= r)] = 0
        banks[b, :padded // 2] = w
    out = []
    for s in starts:
        idx = np.arange(s, s + size)
        while np.any((idx < 0) | (idx >= n)):
            idx = np.where(idx < 0, -idx - 1, idx)
            idx = np.where(idx >= n, 2 * n - 1 - idx, idx)
        fr = x[idx].astype(np.float64)
        if o['remove_dc_offset']:
            fr = fr - fr.mean()
        raw_e = math.log(max(np.dot(fr, fr), FLT_EPS))
        k = o['preemphasis_coefficient']
        fr = np.concatenate([[fr[0] - k * fr[0]], fr[1:] - k * fr[:-1]])
        fr = fr * win
        e = raw_e if o['raw_energy'] else math.log(max(np.dot(fr, fr), FLT_EPS))
        if o['energy_floor'] > 0:
            e = max(e, math.log(o['energy_floor']))
        spec = np.abs(np.fft.rfft(fr, padded)) ** 2
        if kind == 'fbank' and not o['use_power']:
            spec = np.sqrt(spec)
        m = banks @ spec
        if kind == 'fbank':
            v = np.log(np.maximum(m, FLT_EPS)) if o['use_log_fbank'] else m
            if o['use_energy']:
                v = np.concatenate([[e], v])
        else:
            lm = np.log(np.maximum(m, FLT_EPS))
            K = o['num_ceps']
            dct = np.zeros((K, nb))
            for kk in range(K):
                norm = math.sqrt(1.0 / nb) if kk == 0 else math.sqrt(2.0 / nb)
                dct[kk] = norm * np.cos(math.pi / nb * (np.arange(nb) + 0.5) * kk)
            v = dct @ lm
            Q = o['cepstral_lifter']
            if Q != 0:
                v = v * (1.0 + 0.5 * Q * np.sin(math.pi * np.arange(K) / Q))
            if o['use_energy']:
                v[0] = e
        out.append(v)
    f = np.array(out).reshape(len(out), -1)
    if o['subtract_mean'] and len(out):
        f = f - f.mean(axis=0)
    return f


def read_text_ark(path):
    mats, key, rows = {}, None, None
    for line in open(path):
        t = line.split()
        if not t:
            continue
        if key is None:
            key, t = t[0], t[1:]
            assert t and t[0] == '[', line
            t, rows = t[1:], []
        end = bool(t) and t[-1] == ']'
        if end:
            t = t[:-1]
        if t:
            rows.append([float(v) for v in t])
        if end:
            mats[key] = np.array(rows)
            key = None
    return mats


def check(kind, ark, wavscp, args):
    o = parse_opts(kind, args)
    got = read_text_ark(ark)
    n_checked = 0
    worst = 0.0
    for line in open(wavscp):
        utt, path = line.split()
        x, rate = read_wav(path)
        if rate != o['sample_frequency']:
            continue
        ch = max(o['channel'], 0)
        if ch >= x.shape[0]:
            if utt in got:
                print(f'FAIL {kind} {" ".join(args)}: {utt} has no channel {ch} but has output')
                return 1
            continue
        want = features(kind, x[ch], o)
        if utt not in got:
            print(f'FAIL {kind} {" ".join(args)}: utterance {utt} missing from the output')
            return 1
        g = got[utt]
        if g.shape != want.shape:
            print(f'FAIL {kind} {" ".join(args)}: {utt}: shape {g.shape}, expected {want.shape}')
            return 1
        err = np.abs(g - want) / np.maximum(1.0, np.abs(want))
        worst = max(worst, float(err.max()))
        if err.max() > 1e-3:
            r, c = np.unravel_index(np.argmax(err), err.shape)
            print(f'FAIL {kind} {" ".join(args)}: {utt}: frame {r} dim {c}: {g[r, c]} vs '
                  f'reference {want[r, c]}')
            return 1
        n_checked += 1
    if n_checked == 0:
        print(f'FAIL {kind} {" ".join(args)}: nothing checked')
        return 1
    print(f'PASS {kind} {" ".join(args)}: {n_checked} utterances, worst relative error '
          f'{worst:.2e}')
    return 0


if __name__ == '__main__':
    if sys.argv[1] == 'make-wavs':
        make_wavs(sys.argv[2])
    else:
        sys.exit(check(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]))
