# Shared by t0512-cluster.sh and tests/cluster/faults.sh (sourced after lib.sh): the cluster's
# prerequisites and lock, and a small examples directory to train on.
ctl=$PARNET_TOP/tools/cluster-local.sh

# cluster_lock: SKIP (exit 0) where the cluster cannot run; take the single-node Slurm tests'
# lock (t0510/t0511), so that no two Slurm tests run at once; refuse a cluster we did not start.
cluster_lock() {
    if [ "$(id -u)" -ne 0 ] || ! command -v sshfs >/dev/null || ! command -v slurmd >/dev/null ||
       ! command -v sshd >/dev/null || ! ip netns list >/dev/null 2>&1; then
        echo "SKIP $(basename "$0"): needs root, network namespaces, Slurm, sshd and sshfs (tools/install-deps.sh --engines)"
        exit 0
    fi
    exec 9>/tmp/parnet-slurm-test.lock
    flock -w 600 9 || { fail "test lock /tmp/parnet-slurm-test.lock busy"; exit 1; }
    if "$ctl" status >/dev/null 2>&1; then
        fail "a cluster of tools/cluster-local.sh is already running: not touching it"; exit 1
    fi
}

# cluster_start N: a cluster of N nodes sharing the current directory; its environment exported.
cluster_start() {
    local t0=$SECONDS
    if ! "$ctl" start --nodes "$1" --shared "$PWD" 9>&- >start.log 2>&1; then
        fail "cluster-local.sh start"; sed 's/^/    /' start.log | tail -n 5; exit 1
    fi
    trap '"$ctl" stop >/dev/null 2>&1' EXIT  # also when the test fails half-way
    pass "$1-node cluster starts ($((SECONDS - t0)) s)"
    eval "$("$ctl" env)"
}

# cluster_egs JOBS EXAMPLES [ARCHIVES]: egs/ as steps/get_egs.sh leaves it, JOBS jobs x ARCHIVES
# (default 2) archives of EXAMPLES examples each (3 Gaussian classes in 8 dimensions), and
# nnet.config; steps, utils.
cluster_egs() {
    local na=${3:-2}
    python3 - "$1" "$2" "$na" <<'PY'
import random, sys
jobs, n, na = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
random.seed(5)
means = [[random.gauss(0, 1.5) for _ in range(8)] for _ in range(3)]
sets = [(f"{j}.{a}", n) for j in range(1, jobs + 1) for a in range(na)] + [("valid", 150)]
for name, k in sets:
    with open(name + ".feats.txt", "w") as f, open(name + ".labels.txt", "w") as l:
        for i in range(k):
            x = [m + random.gauss(0, 1) for m in means[i % 3]]
            f.write(f"u{name}-{i:05d}  [\n  " + " ".join(f"{v:.5f}" for v in x) + " ]\n")
            l.write(f"u{name}-{i:05d} {i % 3}\n")
PY
    mkdir -p egs/info
    local s j a f
    for s in $(ls *.feats.txt | sed 's/\.feats\.txt$//'); do
        copy-feats ark,t:$s.feats.txt ark:$s.feats.ark 2>/dev/null
        copy-int-vector ark,t:$s.labels.txt ark:$s.labels.ark 2>/dev/null
        nnet-get-egs ark:$s.feats.ark ark:$s.labels.ark ark:$s.egs 2>/dev/null
        rm -f $s.feats.txt $s.labels.txt $s.feats.ark $s.labels.ark
    done
    for j in $(seq "$1"); do for a in $(seq 0 $((na - 1))); do mv $j.$a.egs egs/egs.$j.$a.ark; done; done
    echo $na > egs/info/iters_per_epoch; echo "$1" > egs/info/num_jobs; echo "$2" > egs/info/samples_per_iter
    for f in valid_diagnostic train_diagnostic combine; do cp valid.egs egs/$f.egs; done
    cat > nnet.config <<'CFG'
NaturalGradientAffineComponent input-dim=8 output-dim=16
RectifiedLinearComponent dim=16
NaturalGradientAffineComponent input-dim=16 output-dim=3
SoftmaxComponent dim=3
CFG
    ln -sfn "$PARNET_TOP/steps" steps; ln -sfn "$PARNET_TOP/utils" utils
}

# cluster_slow_shim NODE MODEL_GLOB SECONDS: shim/nnet-train, which on NODE waits SECONDS before
# training when its output model matches MODEL_GLOB, so that a fault lands in the middle of a job
# (the jobs are otherwise over in a fraction of a second); elsewhere the real program runs at once.
cluster_slow_shim() {
    mkdir -p shim
    printf '#!/bin/bash\n[ "$(hostname)" = %s ] && [[ "${@: -1}" == %s ]] && sleep %s\nexec %s "$@"\n' \
        "$1" "$2" "$3" "$(command -v nnet-train)" > shim/nnet-train
    chmod +x shim/nnet-train
}

# cluster_train RUNNER DIR [train.sh options]: one epoch of steps/train.sh.
cluster_train() {
    local runner=$1 dir=$2; shift 2
    steps/train.sh --cmd "$runner" --num-epochs 1 --minibatch-size 16 --initial-learning-rate 0.02 \
        --final-learning-rate 0.01 --cleanup false "$@" egs nnet.config "$dir"
}
