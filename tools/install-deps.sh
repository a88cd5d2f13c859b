#!/usr/bin/env bash
# Installs, with apt-get, what parnet needs to build and test. Safe to re-run: it installs only what
# is missing and runs `apt-get update` only when something is.
#   tools/install-deps.sh            build + tests (compiler, OpenBLAS, zlib, clang for fuzzing, ...)
#   tools/install-deps.sh --bench    also the benchmark peers (python3-torch)
#   tools/install-deps.sh --mpi      also Open MPI (nnet-train-mpi; libpmix2 for srun --mpi=pmix)
set -euo pipefail

pkgs=(make gcc libopenblas-dev zlib1g-dev clang libclang-rt-14-dev python3 gawk bc perl gzip
      dataset-fashion-mnist gnuplot-nox)
for arg in "$@"; do
    case $arg in
        --bench) pkgs+=(python3-torch python3-numpy) ;;
        --mpi) pkgs+=(openmpi-bin libopenmpi-dev libpmix2) ;;
        *) echo "$0: unknown option '$arg'" >&2; exit 2 ;;
    esac
done

missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "$0: all ${#pkgs[@]} packages already installed"
    exit 0
fi
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "$0: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "$0: done"
