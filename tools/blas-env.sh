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
