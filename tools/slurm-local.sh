#!/usr/bin/env bash
# slurm-local.sh start|stop|status: a single-node Slurm cluster on this machine, for tests and CI.
#   start   install Debian's slurmctld/slurmd/slurm-client/munge if missing, write a one-node
#           /etc/slurm/slurm.conf (node = this host, all its CPUs, partition "debug"), start munged,
#           slurmctld and slurmd without systemd, wait until the node is idle. Does nothing if the
#           cluster is already up.
#   stop    scontrol shutdown, then kill what is left by PID, and munged if this script started it.
#   status  exit 0 if the node answers and is usable, 3 otherwise.
# Must run as root. Refuses to overwrite a slurm.conf that it did not write (PARNET_FORCE=1 does).
# Notes: no accounting (sacct does not work; finished jobs stay visible to
# scontrol for MinJobAge=3600 s); batch_sched_delay=0 so that jobs start within ~1 s.
set -euo pipefail

conf=/etc/slurm/slurm.conf
marker="# written by parnet tools/slurm-local.sh"
munge_flag=/run/munge/parnet-started

die() { echo "$0: $*" >&2; exit 1; }
. "$(dirname "$0")/local-lib.sh"

pid_alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

node_state() { sinfo -h -o %t 2>/dev/null | head -n 1; }

is_up() {
    pid_alive /run/slurmctld.pid && pid_alive /run/slurmd.pid || return 1
    case $(node_state) in idle*|alloc*|mix*|comp*) return 0 ;; esac
    return 1
}

install_pkgs() {
    command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v sbatch >/dev/null \
        && command -v munged >/dev/null && return 0
    command -v apt-get >/dev/null || die "slurm is not installed and there is no apt-get"
    apt_install_daemons slurmctld slurmd slurm-client munge
}

write_conf() {
    local h=$1
    if [ -e $conf ] && ! grep -qxF "$marker" $conf && [ "${PARNET_FORCE:-0}" != 1 ]; then
        die "$conf exists and was not written by this script (set PARNET_FORCE=1 to replace it)"
    fi
    # The node line as slurmd sees the hardware (sockets, cores, memory), so that the
    # controller does not complain about boundaries and --mem requests can be satisfied.
    local node
    node=$(slurmd -C 2>/dev/null | grep '^NodeName=' | head -n 1) || true
    [ -n "$node" ] || node="NodeName=$h CPUs=$(nproc)"
    node=$(sed "s/^NodeName=[^ ]*/NodeName=$h/" <<<"$node")
    mkdir -p /etc/slurm
    cat > $conf.tmp <<CONF
$marker
ClusterName=parnet
SlurmctldHost=$h
SlurmUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
$(slurm_conf_policy)
$node State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
    mv $conf.tmp $conf
}

start_munge() {
    if [ -s /run/munge/munged.pid ] && kill -0 "$(cat /run/munge/munged.pid)" 2>/dev/null; then
        return 0
    fi
    mkdir -p /run/munge
    chown munge:munge /run/munge
    if [ ! -s /etc/munge/munge.key ]; then
        runuser -u munge -- /usr/sbin/mungekey --create 2>/dev/null ||
            dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 2>/dev/null
        chown munge:munge /etc/munge/munge.key
        chmod 400 /etc/munge/munge.key
    fi
    # munged refuses to run as root ("Logfile is insecure").
    runuser -u munge -- /usr/sbin/munged
    touch $munge_flag
    munge -n | unmunge >/dev/null || die "munge does not work"
}

do_start() {
    [ "$(id -u)" -eq 0 ] || die "must run as root"
    if is_up; then echo "$0: slurm already running"; return 0; fi
    install_pkgs
    local h
    h=$(hostname -s)
    getent hosts "$h" >/dev/null || echo "127.0.0.1 $h" >> /etc/hosts
    mkdir -p /var/spool/slurmctld /var/spool/slurmd /var/log/slurm
    pid_alive /run/slurmctld.pid && pid_alive /run/slurmd.pid || write_conf "$h"
    start_munge
    pid_alive /run/slurmctld.pid || /usr/sbin/slurmctld
    pid_alive /run/slurmd.pid || /usr/sbin/slurmd
    local i st
    for i in $(seq 1 150); do
        st=$(node_state)
        case $st in
            idle*|alloc*|mix*) echo "$0: slurm up (node $h: $st)"; return 0 ;;
            down*|drain*|drng*|fail*) scontrol update NodeName="$h" State=RESUME 2>/dev/null || true ;;
        esac
        sleep 0.2
    done
    sinfo >&2 || true
    tail -n 20 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log >&2 || true
    die "the slurm node did not become idle within 30 s"
}

do_stop() {
    local pids="" f p i alive
    for f in /run/slurmctld.pid /run/slurmd.pid; do
        pid_alive $f && pids="$pids $(cat $f)"
    done
    if [ -n "$pids" ]; then
        scontrol shutdown 2>/dev/null || true
        for i in $(seq 1 100); do
            alive=0
            for p in $pids; do kill -0 "$p" 2>/dev/null && alive=1; done
            [ $alive = 0 ] && break
            sleep 0.1
        done
        for p in $pids; do kill -0 "$p" 2>/dev/null && kill "$p" 2>/dev/null; done
    fi
    if [ -e $munge_flag ] && pid_alive /run/munge/munged.pid; then
        p=$(cat /run/munge/munged.pid)
        kill "$p" 2>/dev/null || true
        for i in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    fi
    rm -f $munge_flag
    echo "$0: slurm stopped"
}

case ${1:-} in
    start) do_start ;;
    stop) do_stop ;;
    status)
        if is_up; then echo "$0: slurm running (node $(node_state))"; exit 0; fi
        echo "$0: slurm not running"; exit 3 ;;
    *) echo "Usage: $0 start|stop|status" >&2; exit 2 ;;
esac
