#!/usr/bin/env bash
# Device check for the GPU backend, for a machine with an NVIDIA GPU (at most ~8 minutes):
#   1. build with CUDA=1 (for this machine's GPU only: CUDA_ARCH=-arch=native, faster);
#   2. run matrix-gpu-test (every matrix op and natgrad, CPU vs GPU, rel err <= 1e-4) and
#      nnet-gpu-test (networks with every component), then t0610 against the CUDA
#      build (t0610 compares the programs' --use-gpu=yes results with the CPU's); a SKIP there
#      is a failure here;
#   3. bench/gpu-mlp: CPU vs GPU parameters after 3 SGD steps, then samples/s and the fraction of
#      the bare cuBLAS sgemm rate for the 440-1024x4-2000 ReLU MLP at minibatch 512 (and the CPU
#      for reference);
#   4. bench/train-step: the whole training step of that network (Affine and
#      NaturalGradientAffine) on the GPU, for the natural gradient's cost there.
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

step "the programs' --use-gpu against the CPU (t0610, CUDA=1 build)"
run suite 150 env PARNET_BIN="$PWD/bin" PARNET_UNIT="$PWD/build/obj-cuda/tests" \
    bash tests/run-tests.sh t0610
grep -E '^(FAIL|SKIP) ' "$out/suite.log" | tee -a "$report"
grep -q '^SKIP ' "$out/suite.log" && { say "FAILED: GPU parts skipped in t0610"; failed=1; }
tail -n 1 "$out/suite.log" | tee -a "$report"

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
fi

step "done"
if [ $failed -eq 0 ]; then say "device check: all steps passed"; else say "device check: FAILED"; fi
rm -f "$out/.deps" "$out/gpu-mlp" "$out/train-step" "$out"/*.mdl
exit $failed
