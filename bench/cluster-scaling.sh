#!/usr/bin/env bash
# The constants of docs/SCALING.md's model, measured on tools/cluster-local.sh's namespace cluster
# (run as root from a scratch directory; starts and stops its own cluster of --nodes nodes), and
# the model's communication and averaging predictions checked against the cluster:
#   model bytes M; nnet-average's rate (k models -> 1, local files); the shared filesystem's
#   bandwidth (sshfs) from 1 node and from several at once; the averaging step run on a node over
#   the network filesystem (measured vs predicted); the example reading rate over sshfs; the
#   per-example training compute; MPI all-reduce time per call between 2..P nodes for Open MPI's
#   ring and reduce+broadcast (tree) algorithms, the latency and bandwidth fitted on 2 nodes and
#   the other node counts predicted.
#   bench/cluster-scaling.sh [--nodes 8]
# Prints "key value" lines and Markdown tables. Timings on this 2-core VM are noisy (other jobs
# share it): every figure is the median of 3 runs.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
nodes=8
[ "${1:-}" = --nodes ] && nodes=$2
export PATH=$top/bin:$top/utils:$PATH LC_ALL=C
. "$top/tools/blas-env.sh"
ctl=$top/tools/cluster-local.sh
exec 9>/tmp/parnet-slurm-test.lock
flock -w 900 9 || { echo "lock busy" >&2; exit 1; }
"$ctl" status >/dev/null 2>&1 && { echo "$0: a cluster is already running" >&2; exit 1; }
"$ctl" start --nodes "$nodes" --shared "$PWD" 9>&- || exit 1
trap '"$ctl" stop >/dev/null 2>&1' EXIT
eval "$("$ctl" env)"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
on() { local n=$1; shift; "$ctl" exec "$n" bash -c "cd '$PWD' && export PATH='$PATH' && $*"; }
now() { date +%s.%N; }
med() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
# time3 CMD: median wall seconds of 3 runs of CMD (a bash -c string)
time3() { local i t0; for i in 1 2 3; do t0=$(now); bash -c "$1" >/dev/null 2>&1; echo "$(now) - $t0" | bc; done | med; }

# A Kaldi-sized network: 440 inputs (40 x 11 frames), 3 hidden layers of 1024, 2000 outputs.
cat > big.config <<'CFG'
NaturalGradientAffineComponent input-dim=440 output-dim=1024
RectifiedLinearComponent dim=1024
NaturalGradientAffineComponent input-dim=1024 output-dim=1024
RectifiedLinearComponent dim=1024
NaturalGradientAffineComponent input-dim=1024 output-dim=1024
RectifiedLinearComponent dim=1024
NaturalGradientAffineComponent input-dim=1024 output-dim=2000
SoftmaxComponent dim=2000
CFG
nnet-init --srand=1 big.config m.1.mdl 2>/dev/null
for k in 2 3 4 5 6 7 8; do cp m.1.mdl m.$k.mdl; done
M=$(stat -c %s m.1.mdl)
echo "model_bytes $M"

# nnet-average, local files (page cache): t(k) = a + k M / R.
for k in 2 4 8; do
    t=$(time3 "nnet-average $(seq -s ' ' -f 'm.%g.mdl' 1 $k) avg.mdl")
    echo "average_local_k${k}_s $t"
    eval avg_$k=$t
done
R_avg=$(echo "6 * $M / ($avg_8 - $avg_2)" | bc -l)
a_avg=$(echo "$avg_2 - 2 * $M / $R_avg" | bc -l)
printf 'average_rate_Bps %.4g\naverage_fixed_s %.3g\n' "$R_avg" "$a_avg"

# The shared filesystem from the nodes: 64 MB written, then a fresh 64 MB read (written by the
# host, so no node has it cached), one node, then all at once.
dd if=/dev/urandom of=blob bs=1M count=64 status=none
fsw=$(time3 "$ctl exec pn1 dd if=/dev/zero of=$PWD/w.pn1 bs=1M count=64 conv=fsync status=none")
for i in 1 2 3; do cp blob r.$i; done
fsr=$(for i in 1 2 3; do t0=$(now); "$ctl" exec pn1 dd if=$PWD/r.$i of=/dev/null bs=1M status=none; echo "$(now) - $t0" | bc; done | med)
B_w=$(echo "64 * 1048576 / $fsw" | bc -l); B_r=$(echo "64 * 1048576 / $fsr" | bc -l)
printf 'fs_write_Bps %.4g\nfs_read_Bps %.4g\n' "$B_w" "$B_r"
for p in 2 4 $nodes; do
    [ $p -gt $nodes ] && continue
    for j in $(seq $p); do cp blob q.$p.$j; done
    t0=$(now)
    for j in $(seq $p); do "$ctl" exec pn$j dd if=$PWD/q.$p.$j of=/dev/null bs=1M status=none & done
    wait
    printf 'fs_read_aggregate_p%d_Bps %.4g\n' $p "$(echo "$p * 64 * 1048576 / ($(now) - $t0)" | bc -l)"
done

# The averaging step as train.sh runs it: on a node, k models on the shared filesystem.
for k in 2 4 8; do
    for j in $(seq $k); do cp m.1.mdl s.$k.$j.mdl; done
    t=$(time3 "$ctl exec pn1 bash -c 'cd $PWD && $top/bin/nnet-average $(seq -s ' ' -f "s.$k.%g.mdl" 1 $k) s.avg.$k.mdl'")
    pred=$(echo "$a_avg + $k * $M / $B_r + $k * $M / $R_avg + $M / $B_w" | bc -l)
    printf 'average_on_node_k%d_s %.3f predicted %.3f\n' $k "$t" "$pred"
done

# Examples: 20000 of 440 dims, read over sshfs on a node (nnet-copy-egs to /dev/null); then the
# training compute per example on the host (nnet-train, minibatch 128, 1 thread).
python3 - <<'PY'
import random
random.seed(1)
with open("f.txt", "w") as f, open("l.txt", "w") as l:
    for i in range(20000):
        f.write(f"u{i:06d} [\n " + " ".join(f"{random.gauss(0, 1):.3f}" for _ in range(440)) + " ]\n")
        l.write(f"u{i:06d} {i % 2000}\n")
PY
copy-feats ark,t:f.txt ark:f.ark 2>/dev/null && copy-int-vector ark,t:l.txt ark:l.ark 2>/dev/null
nnet-get-egs ark:f.ark ark:l.ark ark:big.egs 2>/dev/null
rm -f f.txt l.txt f.ark l.ark
E=$(stat -c %s big.egs)
t=$(time3 "$ctl exec pn2 $top/bin/nnet-copy-egs ark:$PWD/big.egs ark:/dev/null")
printf 'egs_bytes_each %.0f\negs_read_per_s %.4g\n' "$(echo "$E / 20000" | bc -l)" "$(echo "20000 / $t" | bc -l)"
t=$(time3 "nnet-train --minibatch-size=128 m.1.mdl ark:big.egs t.mdl")
printf 'train_s_per_example %.4g\n' "$(echo "$t / 20000" | bc -l)"

# MPI all-reduce between p nodes, one rank each, for both algorithms.
mpicc -O2 -o allreduce "$top/bench/allreduce.c" || exit 1
for alg in 4:ring 2:tree; do
    for p in 2 4 $nodes; do
        [ $p -gt $nodes ] && continue
        OMPI_MCA_coll_tuned_use_dynamic_rules=1 OMPI_MCA_coll_tuned_allreduce_algorithm=${alg%%:*} \
            timeout 300 sbatch --wait -N $p -n $p -o ar.${alg#*:}.$p.out --wrap "mpirun ./allreduce $((16 << 20))" >/dev/null
        awk -v a=${alg#*:} -v p=$p '{ printf "allreduce_%s_p%d_%dB_s %s\n", a, p, $1, $2 }' ar.${alg#*:}.$p.out
    done
done
# The latency and bandwidth fitted on 2 nodes (ring: T = 2 alpha + M / beta), and the other node
# counts predicted from them, against what was measured.
cat ar.*.out >/dev/null 2>&1 || exit 0
alpha=$(awk '$1 == 4 { print $2 / 2 }' ar.ring.2.out)
beta=$(awk -v a=$alpha '$1 == 16777216 { print $1 / ($2 - 2 * a) }' ar.ring.2.out)
printf 'fit_alpha_s %.4g\nfit_beta_Bps %.4g\n' "$alpha" "$beta"
echo "| all-reduce | N | 4 B measured | predicted | 16 MB measured | predicted |"
echo "|---|---|---|---|---|---|"
for alg in ring tree; do
    for p in 2 4 $nodes; do
        [ -f ar.$alg.$p.out ] || continue
        awk -v alg=$alg -v p=$p -v a=$alpha -v b=$beta '
            function pred(m) { if (alg == "ring") return 2 * (p - 1) * a + 2 * (p - 1) / p * m / b
                               l = 0; while (2 ^ l < p) l++; return 2 * l * (a + m / b) }
            $1 == 4 { s4 = $2 } $1 == 16777216 { s16 = $2 }
            END { printf "| %s | %d | %.3g ms | %.3g ms | %.0f ms | %.0f ms |\n", alg, p, s4 * 1e3, pred(4) * 1e3, s16 * 1e3, pred(16777216) * 1e3 }' ar.$alg.$p.out
    done
done
