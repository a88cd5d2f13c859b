#!/usr/bin/env bash
# Device check for the GPU backend, for a machine with an NVIDIA GPU (about 10 minutes; the main
# job alone is cut at MAIN_JOB_SECONDS, default 240):
#   1. build with CUDA=1 (for this machine's GPU only: CUDA_ARCH=-arch=native, faster);
#   2. run matrix-gpu-test (every matrix op, cuDNN convolution, pooling and batch norm included,
#      and natgrad, CPU vs GPU, rel err <= 1e-4) and
#      nnet-gpu-test (networks with every component), then t0610 against the CUDA
#      build (t0610 compares the programs' --use-gpu=yes results with the CPU's); a SKIP there
#      is a failure here;
#   3. bench/gpu-mlp: CPU vs GPU parameters after 3 SGD steps, then samples/s and the fraction of
#      the bare cuBLAS sgemm rate for the 440-1024x4-2000 ReLU MLP at minibatch 512 (and the CPU
#      for reference);
#   4. bench/train-step: the whole training step of that network (Affine and
#      NaturalGradientAffine) on the GPU, for the natural gradient's cost there (NG/Affine ratio);
#   5. nnet-train --use-gpu=yes end to end on egs of that shape (reading, copies, the step), as a
#      fraction of the step alone; nnet-train-mpi --use-gpu=yes with 1 and 2 ranks (NCCL);
#   6. the main job (egs/fashion-mnist/run.sh --use-gpu yes) under a time limit, its accuracy
#      (FASHION_MNIST_SRC: the four idx .gz files; default /usr/share/datasets/fashion-mnist).
# Issue 18's checks (t0700, t0556: nnet-train-mpi and the recipes with --use-gpu) run with t0610.
# Results go to stdout and, when $OUT is set, to $OUT/device-check.txt with the logs beside it.
# Exit status 0 only if every step passed.
# Usage: bash tests/gpu/device-check.sh        (env: JOBS, BENCH_SECONDS, CUDA_ARCH, and CFLAGS /
#        LDFLAGS where OpenBLAS and zlib live outside the compiler's default paths)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tools/blas-env.sh   # the CPU figures with the fast OpenBLAS kernels
start=$(date +%s)
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
report=$out/device-check.txt
: >"$report"
jobs=${JOBS:-$(nproc)}
secs=${BENCH_SECONDS:-10}
arch=${CUDA_ARCH:--arch=native}
failed=0

say() { echo "$*" | tee -a "$report"; }
sps() { sed -n 's/^samples_per_sec=\([0-9.]*\).*/\1/p' "$1" 2>/dev/null | tail -n 1; }
fps() { grep -o '[0-9]* frames/s' "$1" 2>/dev/null | tail -n 1 | grep -o '^[0-9]*'; }
step() { say ""; say "=== $* ($(( $(date +%s) - start ))s)"; }
# run NAME LIMIT cmd... : log to $out/NAME.log, record the status
run() {
    local name=$1 limit=$2; shift 2
    timeout "$limit" "$@" >"$out/$name.log" 2>&1
    local rc=$?
    if [ $rc -eq 0 ]; then say "ok: $name"; else
        say "FAILED: $name (exit $rc$([ $rc -eq 124 ] && echo ', timed out after '"$limit"'s'))"
        tail -n 25 "$out/$name.log" | sed 's/^/    /' | tee -a "$report"
        failed=1
    fi
    return $rc
}

step "machine"
{ nvidia-smi --query-gpu=name,driver_version,memory.total,compute_mode --format=csv,noheader \
    || echo "nvidia-smi failed"; } 2>&1 | tee -a "$report"
say "nvcc: $("${CUDA_HOME:-/usr/local/cuda}"/bin/nvcc --version | tail -n 2 | head -n 1)"
say "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-<unset>}, cores: $(nproc)"
# shellcheck disable=SC2086
if ! echo 'int main(void){return 0;}' | cc ${CFLAGS:-} -x c - ${LDFLAGS:-} -lopenblas -lz \
        -o "$out/.deps" 2>"$out/deps.log"
then
    say "FAILED: the C toolchain with OpenBLAS and zlib is missing (tools/install-deps.sh needs"
    say "        Debian's archive): $(head -c 300 "$out/deps.log")"
    exit 1
fi

step "build: make -j$jobs CUDA=1 CUDA_ARCH=$arch all"
run build 300 make -j"$jobs" CUDA=1 CUDA_ARCH="$arch" all || { say "cannot go on"; exit 1; }

step "GPU unit tests (CPU vs GPU: matrix ops, natgrad, networks)"
for t in matrix-gpu-test nnet-gpu-test; do
    run $t 120 build/obj-cuda/tests/$t
    grep -E '^(PASS|FAIL|SKIP) ' "$out/$t.log" | tee -a "$report"
    grep -q '^SKIP ' "$out/$t.log" && { say "FAILED: $t skipped its GPU part"; failed=1; }
done
grep 'using GPU' "$out/matrix-gpu-test.log" | head -n 1 | tee -a "$report"

step "the programs' --use-gpu against the CPU (t0610, t0700, t0556; CUDA=1 build)"
for t in t0610 t0700 t0556; do
    run suite-$t 150 env PARNET_BIN="$PWD/bin" PARNET_UNIT="$PWD/build/obj-cuda/tests" \
        bash tests/run-tests.sh $t
    grep -E '^(FAIL|SKIP) ' "$out/suite-$t.log" | tee -a "$report"
    grep -Eq '^SKIP .*(GPU|gpu)' "$out/suite-$t.log" && { say "FAILED: GPU parts skipped in $t"; failed=1; }
    tail -n 1 "$out/suite-$t.log" | tee -a "$report"
done

step "benchmark: bench/gpu-mlp.c"
ldlibs="-L${CUDA_HOME:-/usr/local/cuda}/lib64 -Wl,-rpath,${CUDA_HOME:-/usr/local/cuda}/lib64"
ldlibs="$ldlibs -lcublas -lcudart -lstdc++ -lopenblas -lz -lpthread -lm"
# shellcheck disable=SC2086
if run bench-build 60 cc -std=c11 -D_GNU_SOURCE -O2 -Wall -Isrc ${CFLAGS:-} bench/gpu-mlp.c \
        lib/libparnet.a ${LDFLAGS:-} $ldlibs -o "$out/gpu-mlp"; then
    mlp="--dims=440,1024,1024,1024,1024,2000 --minibatch=512"
    # shellcheck disable=SC2086
    run compare 90 "$out/gpu-mlp" --use-gpu=yes $mlp --compare-steps=3 &&
        grep -E '^(objf_|max_rel)' "$out/compare.log" | tee -a "$report"
    # shellcheck disable=SC2086
    run bench-gpu $((secs * 2 + 60)) "$out/gpu-mlp" --use-gpu=yes $mlp --seconds="$secs" &&
        grep -E '=' "$out/bench-gpu.log" | grep -v '^LOG' | sed 's/^/gpu: /' | tee -a "$report"
    # shellcheck disable=SC2086
    run bench-cpu $((secs + 60)) "$out/gpu-mlp" --use-gpu=no $mlp --seconds=$((secs / 2)) &&
        grep -E '^(samples_per_sec|sgemm_gflops|fraction)' "$out/bench-cpu.log" |
        sed 's/^/cpu: /' | tee -a "$report"
fi

step "benchmark: bench/train-step.c, Affine and natural gradient on the GPU"
# shellcheck disable=SC2086
if run step-build 60 cc -std=c11 -D_GNU_SOURCE -O2 -Wall -Isrc ${CFLAGS:-} bench/train-step.c \
        lib/libparnet.a ${LDFLAGS:-} $ldlibs -o "$out/train-step"; then
    for type in AffineComponent NaturalGradientAffineComponent; do
        dims=(440 1024 1024 1024 1024 2000)
        for ((i = 0; i < 5; i++)); do
            echo "$type input-dim=${dims[i]} output-dim=${dims[i+1]} learning-rate=0.0001"
            [ $i -lt 4 ] && echo "RectifiedLinearComponent dim=${dims[i+1]}"
        done >"$out/$type.config"
        echo "SoftmaxComponent dim=2000" >>"$out/$type.config"
        run "init-$type" 30 bin/nnet-init "$out/$type.config" "$out/$type.mdl" &&
            run "step-$type" $((secs + 60)) "$out/train-step" "$out/$type.mdl" 512 1 "$secs" yes &&
            say "gpu step $type: $(grep samples_per_sec "$out/step-$type.log")"
    done
    a=$(sps "$out/step-AffineComponent.log"); g=$(sps "$out/step-NaturalGradientAffineComponent.log")
    [ -n "$a" ] && [ -n "$g" ] && say "gpu step NG/Affine time ratio: $(awk -v a="$a" -v g="$g" \
        'BEGIN { printf "%.2f", a / g }') (issue 18's target: <= 1.2)"
fi

step "end to end: nnet-train --use-gpu=yes and nnet-train-mpi --use-gpu=yes (NCCL), mb 512"
# 2 x 10240 random examples of the benchmark's shape (440 dims, 2000 classes), one archive per rank.
# (outside $OUT: ~150 MB that should not travel back)
e2e=$(mktemp -d)
if run e2e-egs 180 python3 - "$e2e" <<'PY'
import os, random, subprocess, sys
out = sys.argv[1]
random.seed(3)
for j in (1, 2):
    with open(f"{out}/e2e.{j}.feats.txt", "w") as f, open(f"{out}/e2e.{j}.labels.txt", "w") as l:
        for i in range(10240):
            x = " ".join(f"{random.gauss(0, 1):.3f}" for _ in range(440))
            f.write(f"u{j}_{i:05d}  [\n  {x} ]\n")
            l.write(f"u{j}_{i:05d} {random.randrange(2000)}\n")
    for cmd in (f"bin/copy-feats ark,t:{out}/e2e.{j}.feats.txt ark:{out}/e2e.{j}.feats.ark",
                f"bin/copy-int-vector ark,t:{out}/e2e.{j}.labels.txt ark:{out}/e2e.{j}.labels.ark",
                f"bin/nnet-get-egs ark:{out}/e2e.{j}.feats.ark ark:{out}/e2e.{j}.labels.ark "
                f"ark:{out}/e2e.{j}.egs"):
        subprocess.run(cmd, shell=True, check=True)
    for t in ("feats.txt", "labels.txt", "feats.ark", "labels.ark"):
        os.remove(f"{out}/e2e.{j}.{t}")
PY
then
    cat "$e2e/e2e.1.egs" "$e2e/e2e.2.egs" >"$e2e/e2e.all.egs"
    for type in AffineComponent NaturalGradientAffineComponent; do
        [ -f "$out/$type.mdl" ] || continue
        # Twice through the 20480 examples (the first pass warms the allocator and the reader).
        run "e2e-$type" 120 bin/nnet-train --use-gpu=yes --minibatch-size=512 "$out/$type.mdl" \
            "ark:cat $e2e/e2e.all.egs $e2e/e2e.all.egs |" "$e2e/out-$type.mdl" || continue
        e=$(fps "$out/e2e-$type.log"); st=$(sps "$out/step-$type.log")
        say "nnet-train --use-gpu=yes $type: $e frames/s end to end; the step alone $st samples/s;" \
            "ratio $(awk -v e="$e" -v s="$st" 'BEGIN { if (s > 0) printf "%.2f", e / s }') (target >= 0.9)"
    done
    if command -v mpirun >/dev/null && [ -x bin/nnet-train-mpi ]; then
        for np in 1 2; do
            run "mpi-$np" 150 mpirun --allow-run-as-root --oversubscribe -np $np bin/nnet-train-mpi \
                --use-gpu=yes --minibatch-size=512 --average-every=8 \
                "$out/NaturalGradientAffineComponent.mdl" "ark:$e2e/e2e.JOB.egs" "$e2e/mpi-$np.mdl" ||
                continue
            say "nnet-train-mpi --use-gpu=yes -np $np (NG, params mode): $(fps "$out/mpi-$np.log")" \
                "frames/s over all ranks; $(grep -o 'using GPU [0-9]*' "$out/mpi-$np.log" | sort |
                uniq -c | tr '\n' ';')"
        done
    else
        say "FAILED: no mpirun or nnet-train-mpi (mpicc) here: nnet-train-mpi --use-gpu not run"
        failed=1
    fi
fi

main_secs=${MAIN_JOB_SECONDS:-240}
step "the main job on the GPU: egs/fashion-mnist/run.sh --use-gpu yes (limit $main_secs s)"
src=${FASHION_MNIST_SRC:-/usr/share/datasets/fashion-mnist}
if [ -f "$src/train-images-idx3-ubyte.gz" ]; then
    rm -rf egs/fashion-mnist/exp/nnet_gpu egs/fashion-mnist/exp/egs_gpu
    run main-job "$main_secs" env PATH="$PWD/bin:$PATH" bash egs/fashion-mnist/run.sh \
        --use-gpu yes --data-src "$src" --dir exp/nnet_gpu --egs-dir exp/egs_gpu &&
        grep 'test accuracy' "$out/main-job.log" | tee -a "$report"
    grep -h 'using GPU' egs/fashion-mnist/exp/nnet_gpu/log/train.0.1.log 2>/dev/null | head -n 1 |
        tee -a "$report"
    cp egs/fashion-mnist/exp/nnet_gpu/log/compute_prob_valid.final.log "$out/" 2>/dev/null
    say "(the CPU's figure for the same job: docs/EXPERIMENTS.md, 'The main job')"
else
    say "FAILED: no Fashion-MNIST at $src (set FASHION_MNIST_SRC): main job not run"; failed=1
fi

step "done"
if [ $failed -eq 0 ]; then say "device check: all steps passed"; else say "device check: FAILED"; fi
rm -rf "$out/.deps" "$out/gpu-mlp" "$out/train-step" "$out"/*.mdl "$e2e"
exit $failed
