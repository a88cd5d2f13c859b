#!/usr/bin/env bash
# What the data buys (issue 27 item 5) and how to train on multi-frame examples (item 2): frame
# accuracy and WER on the held-out voices (the same 160 test utterances at every --size <H>h) for
# each size of the corpus ladder, mean +- s.d. over seeds (three at the smaller sizes, one at the
# largest), and for each training variant.
#   egs/espeak-digits/local/scale_experiment.sh [--sizes "1h 5h 20h"] [--seeds "1 2 3"]
#       [--variants "all one"] [--dir exp/scale_experiment]
# Per size: run.sh stages 0-3 once (corpus, features, examples; skipped when $dir/<size>/exp/egs
# is there, e.g. from bench/scale.sh --dir: pass --base <that dir>), then stages 4-7 per seed and
# variant into <size>/exp/nnet_<variant>_s<seed>. Variants: all / one (steps/train.sh --eg-frames:
# every frame of each 8-frame example per iteration, or one of them, another each pass), f1 (the
# layout before issue 27: one labelled frame per example, its own examples in <size>/exp/egs_f1).
# Seeds vary the initialisation and the example order (train.sh --srand); the corpus is the same.
# The table ($dir/results.md) is written from what $dir/runs.txt holds, so a run cut short still
# tabulates its whole runs.
cd "$(dirname "$0")/.."
. ./path.sh

# Begin configuration section.
sizes="1h 5h 20h"
seeds="1 2 3"        # at every size but the last
last_seeds="1"       # at the last (largest) size
variants="all"
base=exp/scale_experiment   # where each size's data/, fbank/ and exp/ live
dir=                 # the results (default: $base)
run_opts=            # extra options for run.sh (stages 4-7)
# End configuration section.
help_message="Usage: $0 [options]
e.g.: $0 --sizes \"1h 5h 20h\" --seeds \"1 2 3\" --variants \"all one f1\"
Options:
  --sizes <list>      corpus ladder sizes (default: \"1h 5h 20h\")
  --seeds <list>      training seeds at each size but the largest (default: \"1 2 3\")
  --last-seeds <list> at the largest size (default: \"1\")
  --variants <list>   all | one | f1 (default: all)
  --base <dir>        each size's data, features and examples (default: exp/scale_experiment)
  --run-opts <opts>   extra run.sh options for training and decoding"
. utils/parse_options.sh || exit 1
set -e -o pipefail
: ${dir:=$base}
mkdir -p $dir $base
runs=$dir/runs.txt
[ -f $runs ] || echo -e "size\thours\tvariant\tseed\tframe_acc\twer\ttrain_wall_s" > $runs

last=$(echo $sizes | awk '{print $NF}')
for size in $sizes; do
    b=$(cd $base && pwd)/$size
    where="--data $b/data --exp $b/exp --feat-dir $b/fbank"
    if [ ! -f $b/exp/egs/info/frames_per_eg ]; then
        ./run.sh --size $size --stop-stage 3 $where > $dir/prepare.$size.log 2>&1 || \
            { echo "$0: run.sh --size $size stages 0-3 failed: $dir/prepare.$size.log"; exit 1; }
    fi
    hours=$(awk '{n += $2} END {printf "%.2f", n / 360000}' $b/data/train/num_frames)
    s_list=$seeds
    [ $size = $last ] && s_list=$last_seeds
    for seed in $s_list; do
        for v in $variants; do
            grep -q -P "^$size\t[^\t]*\t$v\t$seed\t" $runs && continue
            opts=(--train-opts "--eg-frames $v")
            exp=$b/exp
            if [ $v = f1 ]; then
                opts=()
                exp=$b/exp_f1   # its own examples: one labelled frame each
                if [ ! -f $exp/egs/info/frames_per_eg ]; then
                    ./run.sh --size $size --stage 3 --stop-stage 3 --frames-per-eg 1 \
                        --data $b/data --exp $exp --feat-dir $b/fbank > $dir/prepare.$size.f1.log 2>&1
                fi
            fi
            out=$dir/run.$size.$v.$seed.log
            start=$(date +%s)
            ./run.sh --size $size --stage 4 --srand $seed --data $b/data --exp $exp \
                --feat-dir $b/fbank --dir $b/exp/nnet_${v}_s$seed "${opts[@]}" $run_opts > $out 2>&1 || \
                { echo "$0: $size $v seed $seed failed: $out"; exit 1; }
            wall=$(( $(date +%s) - start ))
            acc=$(grep -o 'frame accuracy [0-9.]*' $out | awk '{print $3}')
            wer=$(grep -o '%WER [0-9.]*' $out | tail -n 1 | awk '{print $2}')
            echo -e "$size\t$hours\t$v\t$seed\t$acc\t$wer\t$wall" >> $runs
            echo "$0: $size ($hours h) $v seed $seed: frame accuracy $acc%, WER $wer% ($wall s)"
        done
    done
done

awk -F'\t' 'NR > 1 { k = $1 "\t" $2 "\t" $3; n[k]++; a[k] += $5; a2[k] += $5 * $5; w[k] += $6
        w2[k] += $6 * $6; t[k] += $7; if (!(k in seen)) { seen[k] = 1; order[++m] = k } }
    function sd(s, s2, c) { return c > 1 ? sqrt((s2 - s * s / c) / (c - 1)) : 0 }
    END { print "| size | hours | training | seeds | frame accuracy % | WER % | training+decoding wall s |"
          print "|---|---|---|---|---|---|---|"
          for (i = 1; i <= m; i++) { k = order[i]; split(k, f, "\t"); c = n[k]
              printf "| %s | %s | %s | %d | %.2f ± %.2f | %.2f ± %.2f | %.0f |\n", f[1], f[2], f[3], c,
                  a[k] / c, sd(a[k], a2[k], c), w[k] / c, sd(w[k], w2[k], c), t[k] / c } }' \
    $runs > $dir/results.md
cat $dir/results.md
