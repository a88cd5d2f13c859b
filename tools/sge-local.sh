#!/usr/bin/env bash
# sge-local.sh start|stop|status: a single-node Grid Engine (Debian gridengine-*, Son of Grid Engine
# 8.1.9) on this machine, for tests and CI.
#   start   install gridengine-master/exec/client if missing (debconf preseeded), start sge_qmaster
#           without systemd, let root submit jobs, schedule every second, define the submit host,
#           an "smp" parallel environment and the queue all.q (one slot per CPU), start sge_execd,
#           wait until the queue accepts jobs. Does nothing if it is already up.
#   stop    qconf -ke all; qconf -km (the qmaster takes ~10 s to exit), then kill leftovers by PID.
#   status  exit 0 if the queue is usable, 3 otherwise.
# Must run as root. Clients need SGE_ROOT=/var/lib/gridengine SGE_CELL=default (utils/queue.pl
# sets them when they are unset).
# Traps handled here: 127.0.0.1 reverse-resolves to "localhost", not to
# the host name (fixed with host_aliases); min_uid 1000 rejects root's jobs; the queue's default
# load threshold stops it on a busy machine; the init script's
# "stop" does nothing (wrong PID file), and a second "start" launches a second qmaster.
set -euo pipefail

export SGE_ROOT=/var/lib/gridengine SGE_CELL=default
common=$SGE_ROOT/$SGE_CELL/common
qmaster_pid=/var/spool/gridengine/qmaster/qmaster.pid
execd_pid=/var/run/gridengine/execd.pid

die() { echo "$0: $*" >&2; exit 1; }
. "$(dirname "$0")/local-lib.sh"

# quiet cmd...: run cmd, show its output only if it fails.
quiet() {
    local out
    out=$("$@" 2>&1) || { echo "$out" >&2; die "failed: $*"; }
}

pid_alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# The queue instance on this host is up when qstat -f lists it with no state flags
# (a trailing "au", "d", "E" ... means unavailable).
queue_ready() { qstat -f -q all.q 2>/dev/null | grep -Eq "^all\.q@\S+ +\S+ +\S+ +\S+ +lx-amd64 *$"; }

is_up() { pid_alive $qmaster_pid && pid_alive $execd_pid && queue_ready; }

install_pkgs() {
    [ -x /usr/sbin/sge_qmaster ] || [ -x /usr/lib/gridengine/sge_qmaster ] || command -v sge_qmaster \
        >/dev/null || local need=1
    [ -x /usr/sbin/sge_execd ] || [ -x /usr/lib/gridengine/sge_execd ] || command -v sge_execd \
        >/dev/null || local need=1
    command -v qsub >/dev/null || local need=1
    [ -d $common ] || local need=1
    [ -n "${need:-}" ] || return 0
    command -v apt-get >/dev/null || die "gridengine is not installed and there is no apt-get"
    local h p
    h=$(hostname)
    # The master's postinst creates the cell (init_cluster) from these answers.
    for p in gridengine-common gridengine-master gridengine-exec gridengine-client; do
        printf '%s shared/gridengineconfig boolean true\n' $p
        printf '%s shared/gridenginecell string default\n' $p
        printf '%s shared/gridenginemaster string %s\n' $p "$h"
    done | debconf-set-selections
    apt_install_daemons gridengine-master gridengine-exec gridengine-client
    [ -d $common ] || die "$common missing after install (debconf answers not taken?)"
}

configure_master() {
    local h=$1 t
    t=$(mktemp -d)
    # root may run jobs (default min_uid/min_gid 1000 rejects uid 0); no mailer; the accounting
    # file (qacct, read by queue.pl for killed jobs) is flushed every second, not every 15 s.
    qconf -sconf global | sed -e 's/^min_uid .*/min_uid 0/' -e 's/^min_gid .*/min_gid 0/' \
        -e 's#^mailer .*#mailer /bin/true#' -e 's/flush_time=[0-9:]*/flush_time=00:00:01/' \
        > $t/global
    quiet qconf -Mconf $t/global
    # Schedule every second and right after submit/finish (the default is every 15 s); no
    # artificial load added per dispatched job (it delays the next dispatch).
    qconf -ssconf | sed -e 's/^schedule_interval .*/schedule_interval 0:0:1/' \
        -e 's/^flush_submit_sec .*/flush_submit_sec 1/' \
        -e 's/^flush_finish_sec .*/flush_finish_sec 1/' \
        -e 's/^job_load_adjustments .*/job_load_adjustments NONE/' \
        -e 's/^load_adjustment_decay_time .*/load_adjustment_decay_time 0:0:0/' > $t/sched
    quiet qconf -Msconf $t/sched
    qconf -ss 2>/dev/null | grep -qx "$h" || quiet qconf -as "$h"
    if ! qconf -spl 2>/dev/null | grep -qx smp; then
        cat > $t/smp <<'PE'
pe_name            smp
slots              999
user_lists         NONE
xuser_lists        NONE
start_proc_args    NONE
stop_proc_args     NONE
allocation_rule    $pe_slots
control_slaves     TRUE
job_is_first_task  TRUE
urgency_slots      min
accounting_summary FALSE
qsort_args         NONE
PE
        quiet qconf -Ap $t/smp
    fi
    if ! qconf -sql 2>/dev/null | grep -qx all.q; then
        # qconf -aq only works through an editor: the "editor" edits the template in place.
        cat > $t/ed.sh <<ED
#!/bin/sh
sed -i -e 's/^qname .*/qname all.q/' -e 's/^hostlist .*/hostlist $h/' -e 's/^slots .*/slots $(nproc)/' \
    -e 's#^shell .*#shell /bin/bash#' -e 's/^pe_list .*/pe_list smp/' "\$1"
ED
        chmod +x $t/ed.sh
        EDITOR=$t/ed.sh quiet qconf -aq
    fi
    # By default a queue stops taking jobs ("a" alarm state) when np_load_avg exceeds 1.75: on a
    # busy 2-core CI machine that stalls every test. One slot per CPU is the only limit we want.
    [ "$(qconf -sq all.q | awk '$1 == "load_thresholds" {print $2}')" = NONE ] ||
        quiet qconf -rattr queue load_thresholds NONE all.q
    rm -rf $t
}

do_start() {
    [ "$(id -u)" -eq 0 ] || die "must run as root"
    if is_up; then echo "$0: gridengine already running"; return 0; fi
    install_pkgs
    local h ip r i
    h=$(hostname)
    getent hosts "$h" >/dev/null || echo "127.0.0.1 $h" >> /etc/hosts
    if ! pid_alive $qmaster_pid; then
        # SGE insists that the forward and reverse lookups agree; here the host name maps to
        # 127.0.0.1, whose reverse name is "localhost". Alias one to the other (before the qmaster
        # starts) instead of editing /etc/hosts.
        ip=$(getent hosts "$h" | awk '{print $1; exit}')
        r=$(getent hosts "$ip" | awk '{print $2; exit}')
        if [ -n "$r" ] && [ "$r" != "$h" ]; then
            echo "$h $r" > $common/host_aliases
            chown sgeadmin:sgeadmin $common/host_aliases
        fi
        echo "$h" > $common/act_qmaster
        mkdir -p /var/run/gridengine
        chown sgeadmin:sgeadmin /var/run/gridengine
        quiet /etc/init.d/gridengine-master start
    fi
    for i in $(seq 1 150); do qconf -sh >/dev/null 2>&1 && break; sleep 0.2; done
    qconf -sh >/dev/null 2>&1 || die "sge_qmaster does not answer"
    configure_master "$h"
    pid_alive $execd_pid || quiet /etc/init.d/gridengine-exec start
    for i in $(seq 1 150); do
        if queue_ready; then echo "$0: gridengine up (queue all.q@$h)"; return 0; fi
        sleep 0.2
    done
    qstat -f >&2 || true
    die "the queue all.q did not become usable within 30 s"
}

do_stop() {
    local pids="" f p i alive
    for f in $execd_pid $qmaster_pid; do pid_alive $f && pids="$pids $(cat $f)"; done
    # Also any qmaster/execd that lost its PID file (e.g. a second init-script start).
    for p in $(pgrep -x sge_qmaster || true) $(pgrep -x sge_execd || true); do
        case " $pids " in *" $p "*) ;; *) pids="$pids $p" ;; esac
    done
    if [ -z "$pids" ]; then echo "$0: gridengine not running"; return 0; fi
    qconf -ke all >/dev/null 2>&1 || true
    qconf -km >/dev/null 2>&1 || true
    for i in $(seq 1 200); do
        alive=0
        for p in $pids; do kill -0 "$p" 2>/dev/null && alive=1; done
        [ $alive = 0 ] && break
        sleep 0.1
    done
    for p in $pids; do kill -0 "$p" 2>/dev/null && kill "$p" 2>/dev/null; done
    echo "$0: gridengine stopped"
}

case ${1:-} in
    start) do_start ;;
    stop) do_stop ;;
    status)
        if is_up; then echo "$0: gridengine running"; exit 0; fi
        echo "$0: gridengine not running"; exit 3 ;;
    *) echo "Usage: $0 start|stop|status" >&2; exit 2 ;;
esac
