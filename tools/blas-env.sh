# Sourced by recipes (egs/*/path.sh) and benchmarks: OpenBLAS 0.3.21 (Debian 12) does not recognise
# recent Xeons and falls back to its generic "Prescott" kernels, about 4x slower than the AVX-512
# ones here. OpenBLAS picks its kernel when it loads, from OPENBLAS_CORETYPE; set it to what the CPU
# supports unless the user already chose one. The test suite passes with each setting.
if [ -z "${OPENBLAS_CORETYPE:-}" ] && [ -r /proc/cpuinfo ]; then
    if grep -qw avx512f /proc/cpuinfo && grep -qw avx512bw /proc/cpuinfo; then
        export OPENBLAS_CORETYPE=SKYLAKEX
    elif grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then
        export OPENBLAS_CORETYPE=HASWELL
    fi
fi
# parnet runs OpenBLAS single-threaded under its own threads (src/matrix/cpu-blas.c), but a
# process whose environment does not say so gets OpenBLAS's thread pool at load, whose idle
# threads spin for ~0.1 s: 0.14 CPU-s of nnet-copy-egs's 0.43 on 96 000 examples, and 1-8% of
# nnet-train's rate on 2 cores beside a `nnet-shuffle-egs |` that spins (docs/BENCHMARKS.md,
# "Example archives"). The setting is read when the library loads, so it has to come from here.
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
