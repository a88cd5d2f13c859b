#!/usr/bin/python3
"""Synthesises the espeak-digits corpus: digit strings and command phrases spoken by eSpeak NG
voices (English accents x voice variants, each speaker with its own rate, pitch and pitch range),
passed through a per-speaker channel (band limits, gain) and per-utterance noise (white, pink or
brown at 5-30 dB SNR), with frame-level phone-state labels from the synthesizer's own phoneme
timing (espeak-synth-align).

Three parts, so that synthesis can be spread over jobs (run.sh runs them through --cmd):
  --part plan     draws every speaker and utterance from --seed into local/utts.tsv (one line per
                  utterance: everything its synthesis needs)
  --part synth    --job k of --nj n: synthesises chunks k, k+n, k+2n, ... of --chunk consecutive
                  utterances (one synthesizer process per chunk, so that its 22.05 kHz audio
                  never piles up), writes wav/<utt>.wav and local/segs/<chunk>.txt (the phone
                  segments on the 16 kHz timeline)
  --part finish   the lexicon and phone set from the training segments, then the data directories
  --part all      the three in turn, one job (the default)
eSpeak NG carries state from one utterance to the next inside a process (its pitch flutter, say),
so an utterance's audio depends on its chunk, whose bounds the plan fixes (local/chunks): the
corpus is byte-identical whatever --nj (and, with chunks of 1000, the same as the one-process
synthesis of the first version of this script for corpora of up to 1000 utterances). Nothing holds the corpus: each part streams over its files (finish
keeps the lexicon, the phone set and one utterance's segments).

Writes, under <data-dir>:
  local/utts.tsv, local/segs.*.txt, local/{train,test}.ctm (16 kHz timeline)
  wav/*.wav                    16 kHz 16-bit mono (the corpus)
  {train,test}/{wav.scp,text,utt2spk,spk2utt,spk2voice,labels.txt,num_frames}
      labels.txt: "<utt> <pdf> <pdf> ..." one phone-state per 10 ms frame (25 ms window,
      snip-edges), the state of the phone under the frame's centre; each phone split into 3
      equal-duration states
  lang/{phones.txt,words.txt,lexicon.txt,phone_pdfs.txt,num_pdfs}
      lexicon.txt: word -> phones, every pronunciation eSpeak produced in the training data
      phone_pdfs.txt: "<phone> <pdf0> <pdf1> <pdf2>", pdf = 3 * phone-index + state (sil = 0)

Training and test speakers use disjoint voice variants (so disjoint voices); accents are shared,
so the lexicon from the training data covers the test data. Everything is drawn from --seed.
Sizes: --num-train-speakers x --utts-per-speaker, or --train-hours H (the corpus ladder):
speakers of 64 utterances enough for about H hours of training speech, and a test set of
--num-test-speakers x 16 utterances drawn from its own stream of the seed, the same at every
size. Where the training speakers outnumber the (accent, variant) voices, voices are reused with
another rate, pitch, range and channel (a voice is used at most ceil(speakers / voices) times).
"""
import argparse
import itertools
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
# --train-hours: utterances per speaker, and the mean utterance length measured on the corpus
# (1.14 s at --seed 0) that turns hours into speakers
LADDER_UTTS_PER_SPEAKER = 64
LADDER_TEST_UTTS = 16
MEAN_UTT_SECONDS = 1.14


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


def write_atomic(path, lines):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        for line in lines:
            f.write(line)
    os.replace(tmp, path)


# ---- plan ----

def voice_sequence(rng, pairs, n):
    """n (accent, variant) voices: distinct while they last, then the voices again in rounds."""
    if n <= len(pairs):
        return rng.sample(pairs, n)
    out = []
    while len(out) < n:
        out += rng.sample(pairs, min(len(pairs), n - len(out)))
    return out


def draw_speakers(rng, set_name, n, vs, width):
    pairs = [(acc, v) for acc in ACCENTS for v in vs]
    if not pairs:
        sys.exit(f"{sys.argv[0]}: no {set_name} voices")
    spk = []
    for i, (acc, v) in enumerate(voice_sequence(rng, pairs, n)):
        channel = dict(hp=rng.randint(60, 300), lp=rng.randint(3400, 7600), gain=rng.uniform(-12, 0))
        spk.append((set_name, f"{set_name[:2]}{i:0{width}d}", f"{acc}+{v}", rng.randint(130, 210),
                    rng.randint(25, 75), rng.randint(20, 80), channel))
    return spk


def draw_utts(rng, speakers, per_speaker):
    """The speakers' utterances, in order (a generator: the plan is written as it is drawn)."""
    for set_name, spk, voice, rate, pitch, prange, ch in speakers:
        for j in range(per_speaker):
            yield (set_name, spk, f"{spk}-{j:03d}", prompt(rng), voice,
                   max(100, rate + rng.randint(-15, 15)), pitch, prange, ch,
                   rng.uniform(0.05, 0.35), rng.uniform(0.05, 0.35),
                   rng.choice(["white", "pink", "brown"]), rng.uniform(5, 30),
                   rng.randrange(1 << 30))


def plan(a, d):
    """Draws the corpus from the seed into local/utts.tsv and the speaker tables."""
    rng = random.Random(a.seed)
    var = variants()
    rng.shuffle(var)
    n_test_var = max(1, len(var) // 5)
    test_var, train_var = sorted(var[:n_test_var]), sorted(var[n_test_var:])
    if a.train_hours:
        # the ladder: the test set from its own stream, the same at every size
        n_train = max(1, round(a.train_hours * 3600 / MEAN_UTT_SECONDS / LADDER_UTTS_PER_SPEAKER))
        per_train, per_test = LADDER_UTTS_PER_SPEAKER, LADDER_TEST_UTTS
        rng_test = random.Random(a.seed * 1000003 + 1)
    else:
        n_train, per_train, per_test = a.num_train_speakers, a.utts_per_speaker, a.utts_per_speaker
        rng_test = rng   # the draws of the first version of this script, in its order
        pairs = len(ACCENTS) * len(train_var)
        if n_train > pairs:
            sys.exit(f"{sys.argv[0]}: only {pairs} train voices, asked for {n_train} "
                     "(--train-hours reuses voices)")
    width = max(3, len(str(max(n_train, a.num_test_speakers) - 1)))
    train_spk = draw_speakers(rng, "train", n_train, train_var, width)
    test_spk = draw_speakers(rng_test, "test", a.num_test_speakers, test_var, width)
    utts = itertools.chain(draw_utts(rng, train_spk, per_train),
                           draw_utts(rng_test, test_spk, per_test))
    num_utts = len(train_spk) * per_train + len(test_spk) * per_test
    write_atomic(os.path.join(d, "local/chunks"), [f"{-(-num_utts // a.chunk)} {a.chunk}\n"])
    write_atomic(os.path.join(d, "local/utts.tsv"), (
        f"{u[0]}\t{u[1]}\t{u[2]}\t{u[4]}\t{u[5]}\t{u[6]}\t{u[7]}\t{u[8]['hp']}\t{u[8]['lp']}\t"
        f"{u[8]['gain']!r}\t{u[9]!r}\t{u[10]!r}\t{u[11]}\t{u[12]!r}\t{u[13]}\t{' '.join(u[3])}\n"
        for u in utts))
    for set_name, spk in (("train", train_spk), ("test", test_spk)):
        sd = os.path.join(d, set_name)
        write_atomic(os.path.join(sd, "spk2voice"), (
            f"{sp[1]} {sp[2]} rate={sp[3]} pitch={sp[4]} range={sp[5]} "
            f"hp={sp[6]['hp']} lp={sp[6]['lp']} gain={sp[6]['gain']:.1f}\n" for sp in spk))
    reuse = -(-n_train // (len(ACCENTS) * len(train_var)))
    log(f"planned {num_utts} utterances ({n_train} training and {a.num_test_speakers} test "
        f"speakers, {len(train_var)}/{len(test_var)} voice variants"
        + (f", each training voice used up to {reuse} times)" if reuse > 1 else ")"))


def read_plan(d):
    """The utterances of local/utts.tsv, in order, as dicts (a generator)."""
    with open(os.path.join(d, "local/utts.tsv")) as f:
        for line in f:
            p = line.rstrip("\n").split("\t")
            yield dict(set=p[0], spk=p[1], utt=p[2], voice=p[3], rate=int(p[4]), pitch=int(p[5]),
                       range=int(p[6]), hp=int(p[7]), lp=int(p[8]), gain=float(p[9]),
                       pre=float(p[10]), post=float(p[11]), noise=p[12], snr=float(p[13]),
                       useed=int(p[14]), words=p[15].split())


# ---- synth ----

def synth_chunk(a, d, chunk, raw, out):
    """Synthesises chunk (plan dicts), adds channel and noise, writes the 16 kHz WAVs and one
    line of segments per utterance to out; removes the synthesizer's audio."""
    lst, ctm = os.path.join(raw, "synth.list"), os.path.join(raw, "raw.ctm")
    write_atomic(lst, (f"{u['utt']} {u['voice']} {u['rate']} {u['pitch']} {u['range']} "
                       f"{' '.join(u['words'])}\n" for u in chunk))
    subprocess.run([a.synth, "--print-args=false", lst, raw, ctm], check=True)
    segs = {}
    with open(ctm) as f:
        for line in f:
            utt, _, start, dur, phone, word, widx = line.split()
            segs.setdefault(utt, []).append((float(start), float(dur), phone, word, int(widx)))
    for u in chunk:
        utt = u["utt"]
        rawwav, tmp = os.path.join(raw, utt + ".wav"), os.path.join(raw, utt + ".16k.wav")
        subprocess.run(["sox", "-R", "-D", "-V1", rawwav, "-r", str(RATE_OUT), "-b", "16", tmp,
                        "highpass", str(u["hp"]), "lowpass", str(u["lp"]),
                        "pad", f"{u['pre']:.4f}", f"{u['post']:.4f}"], check=True)
        _, x = read_wav(tmp)
        os.remove(tmp)
        os.remove(rawwav)
        x = x.astype(float) * 10 ** (u["gain"] / 20)
        nrng = np.random.default_rng(u["useed"])
        nz = coloured_noise(nrng, len(x), u["noise"])
        p_sig = np.mean(x[x != 0] ** 2) if np.any(x != 0) else 1.0
        nz *= np.sqrt(p_sig / 10 ** (u["snr"] / 10) / max(np.mean(nz ** 2), 1e-12))
        y = np.clip(np.round(x + nz), -32768, 32767)
        write_wav(os.path.join(d, "wav", utt + ".wav"), y)
        # Shift the alignment by the leading pad; the pads are silence.
        pre = u["pre"]
        s = [(0.0, pre, "sil", "<sil>", 0)]
        s += [(st + pre, du, ph, w, i) for st, du, ph, w, i in segs[utt]]
        end = s[-1][0] + s[-1][1]
        s.append((end, len(y) / RATE_OUT - end, "sil", "<sil>", 0))
        out.write(f"{utt} {len(y)}" + "".join(f" {st!r} {du!r} {ph} {w} {i}" for st, du, ph, w, i
                                              in s) + "\n")


def read_chunks(d):
    with open(os.path.join(d, "local/chunks")) as f:
        n, size = f.read().split()
    return int(n), int(size)


def synth(a, d):
    num_chunks, size = read_chunks(d)
    mine = [c for c in range(num_chunks) if c % a.nj == a.job - 1]
    raw = os.path.join(d, f"local/raw.{a.job}")
    os.makedirs(raw, exist_ok=True)
    os.makedirs(os.path.join(d, "local/segs"), exist_ok=True)
    chunk, c = [], 0
    for n, u in enumerate(read_plan(d)):
        c = n // size
        if c in mine:
            chunk.append(u)
        if chunk and (n + 1) % size == 0:
            write_chunk(a, d, c, chunk, raw)
            chunk = []
    if chunk:
        write_chunk(a, d, c, chunk, raw)
    os.rmdir(raw)


def write_chunk(a, d, c, chunk, raw):
    path = os.path.join(d, f"local/segs/{c}.txt")
    with open(path + ".tmp", "w") as out:
        synth_chunk(a, d, chunk, raw, out)
    os.replace(path + ".tmp", path)
    for f in os.listdir(raw):
        os.remove(os.path.join(raw, f))
    log(f"job {a.job}: chunk {c}, {len(chunk)} utterances")


# ---- finish ----

def read_segs(d):
    """(utt, num_samples, segments) in plan order, from the chunks' files (a generator)."""
    for c in range(read_chunks(d)[0]):
        with open(os.path.join(d, f"local/segs/{c}.txt")) as f:
            for line in f:
                p = line.split()
                segs = [(float(p[i]), float(p[i + 1]), p[i + 2], p[i + 3], int(p[i + 4]))
                        for i in range(2, len(p), 5)]
                yield p[0], int(p[1]), segs


def write_lang(d, phones, lex):
    phone_list = ["sil"] + sorted(phones)
    pidx = {p: i for i, p in enumerate(phone_list)}
    write_atomic(os.path.join(d, "lang/phones.txt"), (f"{p} {i}\n" for p, i in pidx.items()))
    write_atomic(os.path.join(d, "lang/phone_pdfs.txt"), (
        p + "".join(f" {STATES * i + s}" for s in range(STATES)) + "\n" for p, i in pidx.items()))
    write_atomic(os.path.join(d, "lang/num_pdfs"), [f"{STATES * len(phone_list)}\n"])
    write_atomic(os.path.join(d, "lang/words.txt"), (
        f"{w} {i + 1}\n" for i, w in enumerate(sorted(set(DIGITS + COMMANDS)))))
    write_atomic(os.path.join(d, "lang/lexicon.txt"), (
        f"{w} {' '.join(ps)}\n" for w, ps in sorted(lex)))
    return pidx


def frame_labels(s, nsamp, pidx):
    """One phone-state per frame: the state of the phone under the frame's centre."""
    nfr = 1 + (nsamp - FRAME_LEN) // FRAME_SHIFT
    centres = (np.arange(nfr) * FRAME_SHIFT + FRAME_LEN / 2) / RATE_OUT
    starts = np.array([seg[0] for seg in s])
    seg_of = np.clip(np.searchsorted(starts, centres, side="right") - 1, 0, len(s) - 1)
    labels, unknown = [], 0
    for t in range(nfr):
        st, du, ph, _, _ = s[seg_of[t]]
        if ph not in pidx:
            unknown += 1
            ph = "sil"
        state = min(STATES - 1, int(STATES * (centres[t] - st) / du)) if du > 0 else 0
        labels.append(STATES * pidx[ph] + state)
    return labels, unknown


def finish(a, d):
    # Lexicon: each word's phone sequence, word by word, from the training alignments.
    lex, phones = set(), set()
    for u, (utt, _, s) in zip(read_plan(d), read_segs(d)):
        if u["set"] != "train":
            continue
        prons = {}
        for _, _, ph, w, i in s:
            if i > 0:
                phones.add(ph)
                prons.setdefault(i, (w, []))[1].append(ph)
        for w, ps in prons.values():
            lex.add((w, tuple(ps)))
    pidx = write_lang(d, phones, lex)
    out = {}
    for set_name in ("train", "test"):
        sd = os.path.join(d, set_name)
        out[set_name] = {n: open(os.path.join(sd if n != "ctm" else os.path.join(d, "local"),
                                              n if n != "ctm" else f"{set_name}.ctm") + ".tmp", "w")
                         for n in ("wav.scp", "text", "utt2spk", "labels.txt", "num_frames",
                                   "ctm")}
    # spk2utt: a plan lists each speaker's utterances together, speakers in sorted order
    for set_name in out:
        out[set_name]["spk2utt"] = open(os.path.join(d, set_name, "spk2utt.tmp"), "w")
    unknown = {"train": 0, "test": 0}
    seconds, count, last_spk = 0.0, 0, None
    plan_iter = read_plan(d)
    for utt, nsamp, s in read_segs(d):
        u = next(plan_iter)
        assert u["utt"] == utt, (u["utt"], utt)
        o = out[u["set"]]
        o["wav.scp"].write(f"{utt} {os.path.abspath(os.path.join(d, 'wav', utt + '.wav'))}\n")
        o["text"].write(f"{utt} {' '.join(u['words'])}\n")
        o["utt2spk"].write(f"{utt} {u['spk']}\n")
        if u["spk"] != last_spk:
            o["spk2utt"].write(("" if o["spk2utt"].tell() == 0 else "\n") + u["spk"])
            last_spk = u["spk"]
        o["spk2utt"].write(" " + utt)
        labels, unk = frame_labels(s, nsamp, pidx)
        unknown[u["set"]] += unk
        o["labels.txt"].write(utt + "".join(f" {v}" for v in labels) + "\n")
        o["num_frames"].write(f"{utt} {len(labels)}\n")
        for st, du, ph, w, _ in s:
            o["ctm"].write(f"{utt} 1 {st:.4f} {du:.4f} {ph} {w}\n")
        seconds += nsamp / RATE_OUT
        count += 1
    for set_name, o in out.items():
        if o["spk2utt"].tell():
            o["spk2utt"].write("\n")
        for fh in o.values():
            fh.close()
            os.replace(fh.name, fh.name[:-4])
        if unknown[set_name]:
            log(f"warning: {unknown[set_name]} {set_name} frames had a phone unseen in training "
                "(as sil)")
    log(f"{count} utterances, {seconds / 60:.1f} minutes of audio, {len(pidx)} phones, "
        f"{STATES * len(pidx)} phone states, {len(lex)} pronunciations")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--num-train-speakers", type=int, default=48)
    ap.add_argument("--num-test-speakers", type=int, default=10)
    ap.add_argument("--utts-per-speaker", type=int, default=16)
    ap.add_argument("--train-hours", type=float, default=0,
                    help="the ladder: about this many hours of training speech (speakers of "
                    f"{LADDER_UTTS_PER_SPEAKER} utterances; the test set the same at every size)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--part", choices=("plan", "synth", "finish", "all"), default="all")
    ap.add_argument("--nj", type=int, default=1, help="synthesis jobs (--part synth, all)")
    ap.add_argument("--job", type=int, default=1, help="this job, 1..nj (--part synth)")
    ap.add_argument("--chunk", type=int, default=1000,
                    help="utterances synthesised by one process (--part plan, all)")
    ap.add_argument("--synth", default="espeak-synth-align")
    ap.add_argument("data")
    a = ap.parse_args()
    if a.nj < 1 or not 1 <= a.job <= a.nj or a.chunk < 1:
        ap.error("need --nj >= 1, 1 <= --job <= --nj and --chunk >= 1")
    d = a.data
    for sub in ("local", "wav", "train", "test", "lang"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    if a.part in ("plan", "all"):
        plan(a, d)
    if a.part == "all":
        for job in range(1, a.nj + 1):
            a.job = job
            synth(a, d)
    elif a.part == "synth":
        synth(a, d)
    if a.part in ("finish", "all"):
        finish(a, d)


if __name__ == "__main__":
    main()
