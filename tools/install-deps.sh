#!/usr/bin/env bash
# Installs, with apt-get, what parnet needs to build and test. Safe to re-run: it installs only what
# is missing and runs `apt-get update` only when something is.
#   tools/install-deps.sh            build + tests (compiler, OpenBLAS, oneDNN, zlib, clang for
#                                    fuzzing, ...)
#   tools/install-deps.sh --bench    also the benchmark peers (python3-torch)
#   tools/install-deps.sh --mpi      also Open MPI (nnet-train-mpi; libpmix2 for srun --mpi=pmix)
#   tools/install-deps.sh --engines  also Slurm and Grid Engine, for tools/slurm-local.sh and
#                                    tools/sge-local.sh (tests t0510, t0520; CI), and sshfs and
#                                    sshd for tools/cluster-local.sh (t0512). No daemon is
#                                    started: those scripts start and stop them.
set -euo pipefail

pkgs=(make gcc libopenblas-dev libdnnl-dev zlib1g-dev clang libclang-rt-14-dev valgrind python3 gawk bc perl
      gzip dataset-fashion-mnist gnuplot-nox python3-numpy python3-sklearn)
# src/feat: the FFT (FFTW3, single precision); the front-end test's independent reference (numpy).
pkgs+=(libfftw3-dev)
# The speech corpus of egs/espeak-digits: eSpeak NG (espeak-synth-align links libespeak-ng) and sox.
pkgs+=(espeak-ng libespeak-ng-dev sox)
engines=false
for arg in "$@"; do
    case $arg in
        --bench) pkgs+=(python3-torch python3-numpy) ;;
        --mpi) pkgs+=(openmpi-bin libopenmpi-dev libpmix2) ;;
        --engines)
            engines=true
            pkgs+=(slurmctld slurmd slurm-client munge gridengine-master gridengine-exec
                   gridengine-client)
            # tools/cluster-local.sh: the nodes share the experiment directory over sshfs.
            pkgs+=(sshfs openssh-server openssh-client) ;;
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
if $engines; then
    # gridengine's postinst creates the cell from these answers (no questions asked).
    h=$(hostname)
    for p in gridengine-common gridengine-master gridengine-exec gridengine-client; do
        printf '%s shared/gridengineconfig boolean true\n' $p
        printf '%s shared/gridenginecell string default\n' $p
        printf '%s shared/gridenginemaster string %s\n' $p "$h"
    done | $SUDO debconf-set-selections
fi
# Package scripts must not start daemons (no systemd in CI; the engines' scripts start them).
made_policy=false
if $engines && [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
    $SUDO chmod +x /usr/sbin/policy-rc.d
    made_policy=true
fi
rc=0
$SUDO apt-get update -qq || rc=$?
[ $rc -eq 0 ] && { $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || rc=$?; }
$made_policy && $SUDO rm -f /usr/sbin/policy-rc.d
[ $rc -eq 0 ] || { echo "$0: apt-get failed (status $rc)" >&2; exit $rc; }
echo "$0: done"
