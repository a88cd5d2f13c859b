#!/usr/bin/env bash
# The robustness table of docs/EXPERIMENTS.md ("Safe by default"): every data set of
# tests/prog/robustness_data.py (the --small sizes of CI by default; --full for the larger ones)
# through the user's path with all of parnet's defaults (tests/prog/robustness_run.sh: csv_to_data,
# get_egs.sh, train.sh, test accuracy), next to a PyTorch baseline on standardised inputs with the
# same network shape and epochs (bench/robustness_torch.py).
#   bench/robustness.sh [--full] [--precision fp32|bf16] [--srand N] [work-dir]
# (from the repository root, after make; --precision and --srand go to robustness_run.sh, for
# parnet's column only: the PyTorch baseline stays fp32 with its own seed)
size=--small run_opts=
while [ $# -gt 0 ]; do
    case $1 in
        --full) size=; shift ;;
        --precision|--srand) run_opts="$run_opts $1 $2"; shift 2 ;;
        *) break ;;
    esac
done
work=${1:-/tmp/parnet-robustness}
top=$(cd "$(dirname "$0")/.." && pwd)
cd $top || exit 1
export PATH=$top/bin:$top/utils:$PATH
PY=/usr/bin/python3; [ -x $PY ] || PY=python3
rm -rf $work && mkdir -p $work
$PY tests/prog/robustness_data.py $size $work/csv > $work/sets.txt || exit 1
printf "| data set | train x dims, classes | majority class | parnet defaults | PyTorch (standardised, Adam) |\n"
printf "|---|---|---|---|---|\n"
while read -r line; do
    name=${line%%:*}
    shape=$(echo "$line" | awk '{ printf "%s x %s, %s", $2, $6, $8 }')
    out=$(bash tests/prog/robustness_run.sh $run_opts $work/csv/$name $work/$name)
    acc=$(echo "$out" | sed -n 's/.*accuracy=\([^ ]*\).*/\1/p')
    maj=$(echo "$out" | sed -n 's/.*majority=\([^ ]*\).*/\1/p')
    torch_acc=$($PY bench/robustness_torch.py $work/csv/$name 2>/dev/null)
    pct() { awk -v a="$1" 'BEGIN { if (a ~ /^[0-9.]+$/) printf "%.1f%%", 100 * a; else printf "%s", a }'; }
    printf "| %s | %s | %s | %s | %s |\n" $name "$shape" $(pct $maj) $(pct $acc) $(pct $torch_acc)
done < $work/sets.txt
