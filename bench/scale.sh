#!/usr/bin/env bash
# bench/scale.sh: how the speech recipe's costs grow with the data (issue 27). Runs
# egs/espeak-digits/run.sh on the corpus ladder (--size <H>h: about H hours of training speech,
# the same test set at every size), one stage at a time, and prints per stage and size: wall and
# CPU seconds (the stage's processes, all of them), the peak RSS of its largest process, the bytes
# it left on disk, and the 1-minute load average before and after (the machine may be shared: CPU
# seconds are what to compare then); then each stage's growth exponent (the least-squares slope of
# log CPU seconds on log hours), the RSS growth from the smallest size to the largest, and the
# training throughput (frames/s per nnet-train job, from their logs) at each size. Every figure
# of one table comes from one run of this script. Then the throughput paired: the last training
# iteration's first job of the smallest and the largest size rerun in alternation
# (--paired-rounds, default 3; 0: none), the median of the rounds' ratios.
#   bench/scale.sh [--quick] [--sizes "1h 5h 20h"] [--dir bench-scale] [--nj 2] [--num-jobs 2]
#                  [--run-opts "--num-epochs 4"] [--paired-rounds 3]
# --quick: the ladder 0.02h 0.04h 0.08h with one epoch (a few minutes: a check of the machinery,
# not of the exponents, which small sizes blur with fixed costs).
# Output: the table on stdout and in <dir>/scale.md, one row per stage and size in <dir>/scale.tsv.
set -e -o pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
sizes="1h 5h 20h"
dir=bench-scale
nj=2
num_jobs=2
run_opts=
paired_rounds=3
quick=false
while [ $# -gt 0 ]; do
    case $1 in
        --quick) quick=true; shift ;;
        --sizes) sizes=$2; shift 2 ;;
        --dir) dir=$2; shift 2 ;;
        --nj) nj=$2; shift 2 ;;
        --num-jobs) num_jobs=$2; shift 2 ;;
        --run-opts) run_opts=$2; shift 2 ;;
        --paired-rounds) paired_rounds=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "$0: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
done
if $quick; then
    [ "$sizes" = "1h 5h 20h" ] && sizes="0.02h 0.04h 0.08h"
    run_opts="--num-epochs 1 --acoustic-scales 0.1 --word-insertion-penalties 0 $run_opts"
fi
mkdir -p $dir
dir=$(cd $dir && pwd)
stages="0 1 2 3 4 5 6 7"
names=(synthesis features cmvn+labels examples training priors tuning decoding)
tsv=$dir/scale.tsv
echo -e "size\tstage\tname\thours\twall_s\tcpu_s\tmaxrss_kb\tbytes\tload_before\tload_after" > $tsv

# measure <log> <command...>: runs it; prints "wall cpu maxrss_kb" (CPU and RSS over every process
# it waited for: getrusage(RUSAGE_CHILDREN) of a parent that waits for all of them).
measure() {
    local log=$1; shift
    /usr/bin/python3 - "$log" "$@" <<'PY'
import resource, subprocess, sys, time
log, cmd = sys.argv[1], sys.argv[2:]
t0 = time.time()
with open(log, "w") as f:
    rc = subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT)
wall = time.time() - t0
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{wall:.1f} {ru.ru_utime + ru.ru_stime:.1f} {ru.ru_maxrss}")
sys.exit(rc)
PY
}
load1() { cut -d' ' -f1 /proc/loadavg; }

# What stage N leaves on disk, in bytes.
stage_bytes() { # stage data exp feat
    local d=$2 e=$3 f=$4
    case $1 in
        0) du -sb $d/wav $d/train $d/test $d/lang $d/local ;;
        1) du -sb $f/raw_fbank_* $f/cmvn_* ;;
        2) du -sb $f/fbank_cmvn_* $f/labels_* ;;
        3) du -sb $e/egs ;;
        4) du -sb --exclude='decode_*' $e/nnet ;;
        5) du -sb $e/nnet/pdf_counts.vec ;;
        6) du -sb $e/nnet/decode_valid ;;
        7) du -sb $e/nnet/decode_test ;;
    esac 2>/dev/null | awk '{s += $1} END {print s + 0}'
}

echo "bench/scale.sh: sizes $sizes, --nj $nj --num-jobs $num_jobs $run_opts; $(nproc) CPUs" \
     "($(lscpu | sed -n 's/^Model name: *//p')); $(date -u +%Y-%m-%d)" | tee $dir/scale.md
for size in $sizes; do
    base=$dir/$size
    mkdir -p $base
    for st in $stages; do
        before=$(load1)
        if ! m=$(measure $base/stage$st.log nice -n 19 $top/egs/espeak-digits/run.sh \
                --size $size --stage $st --stop-stage $st --nj $nj --num-jobs $num_jobs $run_opts \
                --data $base/data --exp $base/exp --feat-dir $base/fbank --dir $base/exp/nnet); then
            echo "$0: $size stage $st failed: $base/stage$st.log" >&2; exit 1
        fi
        hours=$(awk '{n += $2} END {printf "%.3f", n / 360000}' $base/data/train/num_frames)
        bytes=$(stage_bytes $st $base/data $base/exp $base/fbank)
        read wall cpu rss <<< "$m"
        echo -e "$size\t$st\t${names[$st]}\t$hours\t$wall\t$cpu\t$rss\t$bytes\t$before\t$(load1)" >> $tsv
        echo "bench/scale.sh: $size stage $st (${names[$st]}): wall $wall s, CPU $cpu s, max RSS $rss kB, $bytes bytes" >&2
    done
    # nnet-train's own rate: frames over seconds inside the training jobs
    grep -ho 'Trained on .* frames, .* in [0-9.]* s' $base/exp/nnet/log/train.*.log | \
        awk -v s=$size '{gsub(/[(,]/, " "); for (i = 1; i <= NF; i++) { if ($i == "frames") f += $(i - 1);
            if ($i == "s") t += $(i - 1) } } END { printf "%s\t%.0f\t%.1f\n", s, f, t }' >> $dir/throughput.tsv
done

# Paired throughput: the last training iteration's first job of the smallest and of the largest
# size, rerun in alternation (--paired-rounds times, into a scratch model), so that a machine whose
# speed drifts during the ladder (a shared host's does, by 10-20% over minutes) affects both alike.
first=${sizes%% *} last=${sizes##* }
: > $dir/paired.tsv
if [ $paired_rounds -gt 0 ] && [ "$first" != "$last" ]; then
    for r in $(seq $paired_rounds); do
        for s in $first $last; do
            log=$(ls $dir/$s/exp/nnet/log/train.*.1.log | sort -t. -k2 -n | tail -n 1)
            cmd=$(head -n 1 $log | sed 's/^# //; s| [^ ]*$| '$dir/paired.mdl'|')
            rate=$(PATH=$top/bin:$PATH bash -c "$cmd" 2>&1 | grep -o 'in [0-9.]* s, [0-9]* frames/s' | awk '{print $4}')
            echo -e "$r\t$s\t$rate" >> $dir/paired.tsv
            echo "bench/scale.sh: paired round $r, $s: $rate frames/s" >&2
        done
    done
    rm -f $dir/paired.mdl
fi

/usr/bin/python3 - $tsv $dir/throughput.tsv $dir/paired.tsv <<'PY' | tee -a $dir/scale.md
import collections, math, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])][1:]
tp = {l.split("\t")[0]: l.split() for l in open(sys.argv[2])}
sizes = list(dict.fromkeys(r[0] for r in rows))
by = collections.defaultdict(dict)
for r in rows:
    by[(r[1], r[2])][r[0]] = r
print("\n| stage | " + " | ".join(f"{s} ({by[('0', 'synthesis')][s][3]} h): wall / CPU s, RSS MB, MB on disk"
                                   for s in sizes) + " | CPU exponent | RSS growth |")
print("|---|" + "---|" * len(sizes) + "---|---|")
def slope(xs, ys):
    lx, ly = [math.log(x) for x in xs], [math.log(max(y, 0.05)) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    den = sum((a - mx) ** 2 for a in lx)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / den if den else float("nan")
for (st, name), d in by.items():
    cells = [f"{float(d[s][4]):.0f} / {float(d[s][5]):.0f}, {int(d[s][6]) / 1024:.0f}, "
             f"{int(d[s][7]) / 1e6:.1f}" for s in sizes]
    hours = [float(d[s][3]) for s in sizes]
    cpu = [float(d[s][5]) for s in sizes]
    rss = [int(d[s][6]) for s in sizes]
    print(f"| {st} {name} | " + " | ".join(cells) +
          f" | {slope(hours, cpu):.2f} | {100 * (rss[-1] / rss[0] - 1):+.0f}% |")
loads = [float(r[8]) for r in rows] + [float(r[9]) for r in rows]
print(f"\n1-minute load average during the run: {min(loads):.1f} .. {max(loads):.1f} "
      f"(mean {sum(loads) / len(loads):.1f})")
# frames/s inside the jobs (wall: under load it falls with the load) and frames per CPU second of
# the whole training stage (diagnostics, averaging and combination included)
rate = {}
for s in sizes:
    if s in tp:
        f, t = float(tp[s][1]), float(tp[s][2])
        c = float(by[("4", "training")][s][5])
        rate[s] = (f / t, f / c)
        print(f"training throughput at {s}: {f / t:.0f} frames/s per nnet-train job "
              f"({f:.0f} frames in {t:.0f} job-seconds); {f / c:.0f} frames per CPU second "
              "of the training stage")
if len(sizes) > 1 and sizes[0] in rate and sizes[-1] in rate:
    print(f"throughput {sizes[-1]} / {sizes[0]}: {rate[sizes[-1]][0] / rate[sizes[0]][0]:.3f} "
          f"(per job, wall), {rate[sizes[-1]][1] / rate[sizes[0]][1]:.3f} (per CPU second)")
paired = collections.defaultdict(dict)
for l in open(sys.argv[3]):
    r, s, v = l.split("\t")
    if v.strip():
        paired[r][s] = float(v)
pr = [d[sizes[-1]] / d[sizes[0]] for d in paired.values() if sizes[0] in d and sizes[-1] in d]
if pr:
    pr.sort()
    med = pr[len(pr) // 2] if len(pr) % 2 else (pr[len(pr) // 2 - 1] + pr[len(pr) // 2]) / 2
    print(f"paired throughput {sizes[-1]} / {sizes[0]} (the last iteration's job rerun in "
          f"alternation, {len(pr)} rounds): median {med:.3f}, rounds "
          + ", ".join(f"{x:.3f}" for x in pr))
total = {s: sum(float(by[k][s][4]) for k in by) for s in sizes}
tcpu = {s: sum(float(by[k][s][5]) for k in by) for s in sizes}
print("end to end: " + ", ".join(f"{s} {total[s] / 60:.1f} min wall, {tcpu[s] / 60:.1f} min CPU"
                                 for s in sizes))
PY
