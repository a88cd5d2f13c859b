#!/usr/bin/env bash
# Prints a table of validation and training objective and accuracy per iteration of a training
# directory (from log/compute_prob_{valid,train}.ITER.log, as written by steps/train.sh), and writes
# <exp-dir>/report.png with gnuplot when it is installed.
#   steps/report.sh [--png true|false] <exp-dir>
png=true
echo "$0 $*" >&2
help_message="Usage: $0 [--png true|false] <exp-dir>
e.g.: $0 exp/nnet"
. "$(dirname "$0")/lib/args.sh"
args_want $# 1
dir=$1
[ -d $dir/log ] || { echo "$0: no such directory $dir/log" 1>&2; exit 1; }

field() { # file, key ("average probability is" / "accuracy is")
    [ -f "$1" ] && grep -o "$2 [-0-9.e+]*" "$1" | tail -n 1 | awk '{print $NF}'
}
table=$dir/report.txt
{
    printf "%-6s %12s %10s %12s %10s\n" iter valid-logp valid-acc train-logp train-acc
    iters=$(ls $dir/log/compute_prob_valid.*.log 2>/dev/null | sed 's:.*compute_prob_valid\.\(.*\)\.log:\1:' \
        | grep -v final | sort -n)
    for x in $iters final; do
        v=$dir/log/compute_prob_valid.$x.log t=$dir/log/compute_prob_train.$x.log
        [ -f $v ] || continue
        printf "%-6s %12s %10s %12s %10s\n" $x "$(field $v 'average probability is')" \
            "$(field $v 'accuracy is')" "$(field $t 'average probability is')" "$(field $t 'accuracy is')"
    done
} > $table.tmp && mv $table.tmp $table
cat $table
[ $(wc -l < $table) -gt 1 ] || { echo "$0: no diagnostics found in $dir/log" 1>&2; exit 1; }

if $png; then
    if ! command -v gnuplot >/dev/null; then
        echo "$0: gnuplot not found; no plot (apt-get install gnuplot-nox)" 1>&2
        exit 0
    fi
    grep -v -e '^iter' -e '^final' $table > $dir/report.dat
    gnuplot <<GP || { echo "$0: gnuplot failed" 1>&2; exit 1; }
set terminal png size 900,400
set output "$dir/report.png.tmp"
set multiplot layout 1,2 title "$dir"
set xlabel "iteration"
set key bottom right
set title "log-probability per frame"
plot "$dir/report.dat" using 1:2 with linespoints title "valid", "" using 1:4 with linespoints title "train"
set title "accuracy"
plot "$dir/report.dat" using 1:3 with linespoints title "valid", "" using 1:5 with linespoints title "train"
unset multiplot
GP
    mv $dir/report.png.tmp $dir/report.png
    rm -f $dir/report.dat
    echo "$0: wrote $dir/report.png" 1>&2
fi
