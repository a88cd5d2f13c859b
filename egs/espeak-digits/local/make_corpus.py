#!/usr/bin/python3
"""Synthesises the espeak-digits corpus: digit strings and command phrases spoken by eSpeak NG
voices (English accents x voice variants, each speaker with its own rate, pitch and pitch range),
passed through a per-speaker channel (band limits, gain) and per-utterance noise (white, pink or
brown at 5-30 dB SNR), with frame-level phone-state labels from the synthesizer's own phoneme
timing (espeak-synth-align).

Writes, under <data-dir>:
  local/synth.list, local/raw/*.wav (22.05 kHz), local/{train,test}.ctm (16 kHz timeline)
  wav/*.wav                    16 kHz 16-bit mono (the corpus)
  {train,test}/{wav.scp,text,utt2spk,spk2utt,labels.txt,num_frames}
      labels.txt: "<utt> <pdf> <pdf> ..." one phone-state per 10 ms frame (25 ms window,
      snip-edges), the state of the phone under the frame's centre; each phone split into 3
      equal-duration states
  lang/{phones.txt,words.txt,lexicon.txt,phone_pdfs.txt,num_pdfs}
      lexicon.txt: word -> phones, every pronunciation eSpeak produced in the training data
      phone_pdfs.txt: "<phone> <pdf0> <pdf1> <pdf2>", pdf = 3 * phone-index + state (sil = 0)

Training and test speakers use disjoint voice variants (so disjoint voices); accents are shared,
so the lexicon from the training data covers the test data. Everything is drawn from --seed.
"""
import argparse
import os
import random
import subprocess
import sys
import wave

import numpy as np

DIGITS = "zero one two three four five six seven eight nine oh".split()
COMMANDS = ("yes no stop go left right up down on off start pause play next back open close "
            "help cancel save delete call home menu select repeat forward louder quieter "
            "enter clear record").split()
ACCENTS = ["en-us", "en", "en-gb-scotland", "en-gb-x-rp", "en-gb-x-gbclan",
           "en-gb-x-gbcwmd", "en-029", "en-us-nyc"]
RATE_OUT = 16000
FRAME_SHIFT, FRAME_LEN = 160, 400
STATES = 3


def log(msg):
    print(f"{os.path.basename(sys.argv[0])}: {msg}", file=sys.stderr, flush=True)


def variants():
    """Voice variants of the installed espeak-ng-data, minus whispers and names with spaces."""
    out = subprocess.run(["espeak-ng", "--voices=variant"], check=True, capture_output=True,
                         text=True).stdout.splitlines()[1:]
    names = []
    for line in out:
        f = line.split()
        path = f[4] if len(f) > 4 else ""
        if not path.startswith("!v/"):
            continue
        name = path[3:]
        if " " in name or "whisper" in name.lower() or name in ("Demonic",):
            continue
        names.append(name)
    return sorted(set(names))


def prompt(rng):
    if rng.random() < 0.5:
        return [rng.choice(DIGITS) for _ in range(rng.randint(2, 6))]
    return [rng.choice(COMMANDS) for _ in range(rng.randint(1, 3))]


def read_wav(path):
    with wave.open(path, "rb") as w:
        assert w.getsampwidth() == 2 and w.getnchannels() == 1
        return w.getframerate(), np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")


def write_wav(path, x):
    tmp = path + ".tmp"
    with wave.open(tmp, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE_OUT)
        w.writeframes(x.astype("<i2").tobytes())
    os.replace(tmp, path)


def coloured_noise(rng, n, kind):
    white = rng.standard_normal(n)
    if kind == "white":
        return white
    spec = np.fft.rfft(white)
    f = np.arange(len(spec), dtype=float)
    f[0] = 1.0
    spec /= np.sqrt(f) if kind == "pink" else f
    return np.fft.irfft(spec, n)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--num-train-speakers", type=int, default=48)
    ap.add_argument("--num-test-speakers", type=int, default=10)
    ap.add_argument("--utts-per-speaker", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--synth", default="espeak-synth-align")
    ap.add_argument("data")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    d = a.data
    for sub in ("local/raw", "wav", "train", "test", "lang"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)

    var = variants()
    rng.shuffle(var)
    n_test_var = max(1, len(var) // 5)
    test_var, train_var = sorted(var[:n_test_var]), sorted(var[n_test_var:])
    speakers = []  # (set, spk, voice, rate, pitch, range, channel)
    for set_name, n, vs in (("train", a.num_train_speakers, train_var),
                            ("test", a.num_test_speakers, test_var)):
        pairs = [(acc, v) for acc in ACCENTS for v in vs]
        if n > len(pairs):
            sys.exit(f"{sys.argv[0]}: only {len(pairs)} {set_name} voices, asked for {n}")
        for i, (acc, v) in enumerate(rng.sample(pairs, n)):
            channel = dict(hp=rng.randint(60, 300), lp=rng.randint(3400, 7600),
                           gain=rng.uniform(-12, 0))
            speakers.append((set_name, f"{set_name[:2]}{i:03d}", f"{acc}+{v}",
                             rng.randint(130, 210), rng.randint(25, 75), rng.randint(20, 80),
                             channel))
    utts = []  # (set, spk, utt, words, voice, rate, pitch, range, channel, pre, post, noise, snr)
    for set_name, spk, voice, rate, pitch, prange, channel in speakers:
        for j in range(a.utts_per_speaker):
            utts.append((set_name, spk, f"{spk}-{j:03d}", prompt(rng), voice,
                         max(100, rate + rng.randint(-15, 15)), pitch, prange, channel,
                         rng.uniform(0.05, 0.35), rng.uniform(0.05, 0.35),
                         rng.choice(["white", "pink", "brown"]), rng.uniform(5, 30),
                         rng.randrange(1 << 30)))
    with open(os.path.join(d, "local/synth.list"), "w") as f:
        for u in utts:
            f.write(f"{u[2]} {u[4]} {u[5]} {u[6]} {u[7]} {' '.join(u[3])}\n")
    log(f"synthesising {len(utts)} utterances ({a.num_train_speakers} training and "
        f"{a.num_test_speakers} test speakers, {len(train_var)}/{len(test_var)} voice variants)")
    subprocess.run([a.synth, "--print-args=false", os.path.join(d, "local/synth.list"),
                    os.path.join(d, "local/raw"), os.path.join(d, "local/raw.ctm")], check=True)
    segs = {}
    with open(os.path.join(d, "local/raw.ctm")) as f:
        for line in f:
            utt, _, start, dur, phone, word, widx = line.split()
            segs.setdefault(utt, []).append((float(start), float(dur), phone, word, int(widx)))

    log("channel, noise and 16 kHz resampling (sox)")
    lengths, ctm = {}, {"train": [], "test": []}
    for (set_name, spk, utt, words, voice, rate, pitch, prange, ch, pre, post, noise, snr,
         useed) in utts:
        raw = os.path.join(d, "local/raw", utt + ".wav")
        tmp = os.path.join(d, "local/raw", utt + ".16k.wav")
        subprocess.run(["sox", "-R", "-D", "-V1", raw, "-r", str(RATE_OUT), "-b", "16", tmp,
                        "highpass", str(ch["hp"]), "lowpass", str(ch["lp"]),
                        "pad", f"{pre:.4f}", f"{post:.4f}"], check=True)
        _, x = read_wav(tmp)
        os.remove(tmp)
        x = x.astype(float) * 10 ** (ch["gain"] / 20)
        nrng = np.random.default_rng(useed)
        nz = coloured_noise(nrng, len(x), noise)
        p_sig = np.mean(x[x != 0] ** 2) if np.any(x != 0) else 1.0
        nz *= np.sqrt(p_sig / 10 ** (snr / 10) / max(np.mean(nz ** 2), 1e-12))
        y = np.clip(np.round(x + nz), -32768, 32767)
        write_wav(os.path.join(d, "wav", utt + ".wav"), y)
        lengths[utt] = len(y)
        # Shift the alignment by the leading pad; the pads are silence.
        s = [(0.0, pre, "sil", "<sil>", 0)]
        s += [(st + pre, du, ph, w, i) for st, du, ph, w, i in segs[utt]]
        end = s[-1][0] + s[-1][1]
        s.append((end, len(y) / RATE_OUT - end, "sil", "<sil>", 0))
        ctm[set_name].append((utt, s))

    # Lexicon: each word's phone sequence, word by word, from the training alignments.
    lex, phones = set(), set()
    for utt, s in ctm["train"]:
        prons = {}
        for _, _, ph, w, i in s:
            if i > 0:
                phones.add(ph)
                prons.setdefault(i, (w, []))[1].append(ph)
        for w, ps in prons.values():
            lex.add((w, tuple(ps)))
    phone_list = ["sil"] + sorted(phones)
    pidx = {p: i for i, p in enumerate(phone_list)}
    with open(os.path.join(d, "lang/phones.txt"), "w") as f:
        for p, i in pidx.items():
            f.write(f"{p} {i}\n")
    with open(os.path.join(d, "lang/phone_pdfs.txt"), "w") as f:
        for p, i in pidx.items():
            f.write(p + "".join(f" {STATES * i + s}" for s in range(STATES)) + "\n")
    with open(os.path.join(d, "lang/num_pdfs"), "w") as f:
        f.write(f"{STATES * len(phone_list)}\n")
    with open(os.path.join(d, "lang/words.txt"), "w") as f:
        for i, w in enumerate(sorted(set(DIGITS + COMMANDS))):
            f.write(f"{w} {i + 1}\n")
    with open(os.path.join(d, "lang/lexicon.txt"), "w") as f:
        for w, ps in sorted(lex):
            f.write(f"{w} {' '.join(ps)}\n")

    for set_name in ("train", "test"):
        sd = os.path.join(d, set_name)
        su = [u for u in utts if u[0] == set_name]
        with open(os.path.join(sd, "wav.scp"), "w") as f:
            for u in su:
                f.write(f"{u[2]} {os.path.abspath(os.path.join(d, 'wav', u[2] + '.wav'))}\n")
        with open(os.path.join(sd, "text"), "w") as f:
            for u in su:
                f.write(f"{u[2]} {' '.join(u[3])}\n")
        with open(os.path.join(sd, "utt2spk"), "w") as f:
            for u in su:
                f.write(f"{u[2]} {u[1]}\n")
        with open(os.path.join(sd, "spk2utt"), "w") as f:
            for spk in sorted({u[1] for u in su}):
                f.write(spk + "".join(" " + u[2] for u in su if u[1] == spk) + "\n")
        with open(os.path.join(sd, "spk2voice"), "w") as f:
            for sp in speakers:
                if sp[0] == set_name:
                    f.write(f"{sp[1]} {sp[2]} rate={sp[3]} pitch={sp[4]} range={sp[5]} "
                            f"hp={sp[6]['hp']} lp={sp[6]['lp']} gain={sp[6]['gain']:.1f}\n")
        lab_f = open(os.path.join(sd, "labels.txt"), "w")
        nf_f = open(os.path.join(sd, "num_frames"), "w")
        ctm_f = open(os.path.join(d, f"local/{set_name}.ctm"), "w")
        unknown = 0
        for utt, s in ctm[set_name]:
            nfr = 1 + (lengths[utt] - FRAME_LEN) // FRAME_SHIFT
            centres = (np.arange(nfr) * FRAME_SHIFT + FRAME_LEN / 2) / RATE_OUT
            starts = np.array([seg[0] for seg in s])
            seg_of = np.clip(np.searchsorted(starts, centres, side="right") - 1, 0, len(s) - 1)
            labels = []
            for t in range(nfr):
                st, du, ph, _, _ = s[seg_of[t]]
                if ph not in pidx:
                    unknown += 1
                    ph = "sil"
                state = min(STATES - 1, int(STATES * (centres[t] - st) / du)) if du > 0 else 0
                labels.append(STATES * pidx[ph] + state)
            lab_f.write(utt + "".join(f" {v}" for v in labels) + "\n")
            nf_f.write(f"{utt} {nfr}\n")
            for st, du, ph, w, _ in s:
                ctm_f.write(f"{utt} 1 {st:.4f} {du:.4f} {ph} {w}\n")
        for fh in (lab_f, nf_f, ctm_f):
            fh.close()
        if unknown:
            log(f"warning: {unknown} {set_name} frames had a phone unseen in training (as sil)")
    hours = sum(lengths.values()) / RATE_OUT / 3600
    log(f"{len(utts)} utterances, {hours * 60:.1f} minutes of audio, {len(phone_list)} phones, "
        f"{STATES * len(phone_list)} phone states, {len(lex)} pronunciations")


if __name__ == "__main__":
    main()
