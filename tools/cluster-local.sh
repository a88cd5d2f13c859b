#!/usr/bin/env bash
# cluster-local.sh: an N-node Slurm cluster on this one machine, each node a Linux network + UTS +
# mount namespace with its own hostname and address, for tests of what crosses machines.
#
#   start [--nodes N] [--names a,b,c] [--shared DIR]   bring it up (default 3 nodes pn1..pnN,
#                                      DIR the current directory); refused while a cluster is up
#   stop                               stop everything it started (daemons, mounts, namespaces,
#                                      bridge, cgroups); works from any state, also after a kill
#   status                             exit 0 and print the nodes' states if it is up, 3 if not
#   env                                print the exports a login shell needs (eval "$(... env)")
#   exec NODE CMD...                   run CMD on NODE (its network, hostname and mounts)
# Faults (tests): kill-node NODE (its processes killed, its link down), isolate NODE / connect
#   NODE (link down / up, processes kept), throttle NODE PERCENT / unthrottle NODE (a cgroup CPU
#   quota), fs-pause / fs-resume (the file server's processes stopped / continued), fs-slow
#   KBIT / fs-fast (a token-bucket rate limit on the file server's link; this kernel has no netem).
#
# Layout: a bridge pnbr0 (10.228.0.254/24, the host, which is the login node and the Slurm
# controller's machine); a file-server namespace pnfs (10.228.0.250) running sshd; node i at
# 10.228.0.i. Every node mounts DIR from the file server with sshfs (SFTP over ssh, FUSE) at the
# same path, so jobs cd to the directory the recipe runs in, and runs its own munged and slurmd.
# The host reads and writes DIR directly (it is the file server's disk); the nodes go through the
# network filesystem with its caching. Programs (bin/, steps/, utils/) are read from the host's
# filesystem on every node: only the experiment directory is written during training.
# slurmctld runs on the host on port 6917 (slurmd 6918): tools/slurm-local.sh's single-node
# Slurm (6817/6818, /etc/slurm) can run beside it. State, configs and logs: /run/parnet-cluster
# (PARNET_CLUSTER_STATE); nothing under /etc is changed. Not needed: a PID namespace (a node's
# processes are found by its network namespace, `ip netns pids`).
set -uo pipefail

S=${PARNET_CLUSTER_STATE:-/run/parnet-cluster}
net=10.228.0
bridge=pnbr0
nsp=parnet-c-            # network namespace prefix
ctld_port=6917 slurmd_port=6918
me=$(basename "$0")

die() { echo "$me: $*" >&2; exit 1; }
. "$(dirname "$0")/local-lib.sh"
log() { echo "$me: $*"; }
export SLURM_CONF=$S/slurm.conf

# ---- small helpers ----
nodes() { cat "$S/nodes" 2>/dev/null; }
node_index() { grep -nx "$1" "$S/nodes" 2>/dev/null | cut -d: -f1; }
ns_pids() { ip netns pids "$nsp$1" 2>/dev/null; }
holder() { cat "$S/node/$1.pid" 2>/dev/null; }
pid_alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
node_ok() { [ -n "$(node_index "$1")" ] || die "no node '$1' (nodes: $(nodes | tr '\n' ' '))"; }

install_pkgs() {
    local p missing=()
    for p in slurmctld slurmd sinfo munged sshd sshfs ssh-keygen; do
        command -v $p >/dev/null || missing+=($p)
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    die "not installed: ${missing[*]} (tools/install-deps.sh --engines installs Slurm, munge, sshfs and openssh-server)"
}

# The largest cluster this machine holds: ~100 MB of memory per node (slurmd, munged, sshfs and
# a job's working set), and addresses 1..249 of the bridge.
max_nodes() {
    local kb
    kb=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)
    local n=$((kb / 102400))
    [ $n -gt 249 ] && n=249
    echo $n
}

# Anything a cluster leaves: our namespaces, the bridge, daemons from our state directory.
leftovers() {
    ip netns list 2>/dev/null | awk '{print $1}' | grep "^$nsp" | tr '\n' ' '
    ip link show $bridge >/dev/null 2>&1 && echo -n "bridge $bridge "
    ip -o link show 2>/dev/null | grep -q ': pnv[0-9]*@' && echo -n "links pnv* "
    pid_alive "$S/run/slurmctld.pid" && echo -n "slurmctld "
    pid_alive "$S/munge/host.pid" && echo -n "munged "
    [ -e "$S/state" ] && echo -n "state $S "
    true
}

is_up() {
    [ "$(cat "$S/state" 2>/dev/null)" = running ] || return 1
    pid_alive "$S/run/slurmctld.pid" || return 1
    sinfo -h -o %t >/dev/null 2>&1
}

# ---- start ----
parse_start() {
    n_nodes=3 names= shared=$PWD
    while [ $# -gt 0 ]; do
        case $1 in
            --nodes) n_nodes=${2:-}; shift 2 || die "--nodes needs a value" ;;
            --names) names=${2:-}; shift 2 || die "--names needs a value" ;;
            --shared) shared=${2:-}; shift 2 || die "--shared needs a value" ;;
            *) die "start: unknown option '$1' (--nodes N, --names a,b,c, --shared DIR)" ;;
        esac
    done
    [ -n "$names" ] && n_nodes=$(tr ',' '\n' <<<"$names" | grep -c .)
    [[ $n_nodes =~ ^[0-9]+$ ]] && [ "$n_nodes" -ge 1 ] || die "--nodes '$n_nodes': expected a number >= 1"
    local max
    max=$(max_nodes)
    [ "$n_nodes" -le "$max" ] || die "--nodes $n_nodes: this machine holds at most $max (about 100 MB of memory each, $(awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo) MB available; at most 249 addresses)"
    [ -z "$names" ] && names=$(seq -s, -f 'pn%g' 1 "$n_nodes")
    local h n seen=" "
    h=$(hostname -s)
    for n in ${names//,/ }; do
        [[ $n =~ ^[a-z][a-z0-9-]{0,30}$ ]] || die "node name '$n': expected a lower-case letter, then letters, digits or '-' (at most 31)"
        case "$seen" in *" $n "*) die "node name '$n' given twice" ;; esac
        [ "$n" = "$h" ] && die "node name '$n' clashes with this host's name (the login node)"
        [ "$n" = pnfs ] && die "node name '$n' clashes with the file server's name"
        if getent hosts "$n" >/dev/null; then
            die "node name '$n' clashes with an existing host ($(getent hosts "$n" | head -n 1 | tr -s ' '))"
        fi
        seen="$seen$n "
    done
    [ -d "$shared" ] || die "--shared $shared: no such directory"
    shared=$(cd "$shared" && pwd -P)
    case $shared in /|/proc*|/sys*|/dev*|/run|/etc*|/usr*) die "--shared $shared: not a directory to share" ;; esac
    case $shared/ in "$S"/*) die "--shared $shared: inside the cluster's state directory" ;; esac
}

check_free() {
    ip -4 addr show | grep -q " $net\." && die "addresses $net.0/24 are already in use on this host ($(ip -4 -o addr show | grep " $net\." | awk '{print $2}' | head -n 1))"
    ss -ltnH "( sport = :$ctld_port )" | grep -q . && die "port $ctld_port (slurmctld) is in use"
    true
}

write_slurm_conf() {
    local hw h i=0 n
    h=$(hostname -s)
    hw=$(slurmd -C 2>/dev/null | grep '^NodeName=' | head -n 1 | sed 's/^NodeName=[^ ]* //')
    [ -n "$hw" ] || hw="CPUs=$(nproc)"
    {
        echo "# written by parnet tools/cluster-local.sh"
        cat <<CONF
ClusterName=parnetc
SlurmctldHost=$h($net.254)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$S/run/munge/munge.socket
StateSaveLocation=$S/ctld
SlurmdSpoolDir=$S/spool/%n
SlurmctldPidFile=$S/run/slurmctld.pid
SlurmdPidFile=$S/run/slurmd.pid
SlurmctldLogFile=$S/log/slurmctld.log
SlurmdLogFile=$S/log/slurmd.%n.log
SlurmdTimeout=6
MessageTimeout=5
KillWait=5
CONF
        slurm_conf_policy
        while read -r n; do
            i=$((i + 1))
            echo "NodeName=$n NodeHostname=$n NodeAddr=$net.$i $hw State=UNKNOWN"
        done < "$S/nodes"
        echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
    } > "$S/slurm.conf"
}

# Keys: munge's (one per cluster, as on a real one), the file server's host key, root's login key.
make_keys() {
    mkdir -p "$S/munge" "$S/ssh"
    dd if=/dev/urandom of="$S/munge/munge.key" bs=1024 count=1 status=none
    chown -R munge:munge "$S/munge"
    chmod 700 "$S/munge"
    chmod 400 "$S/munge/munge.key"
    ssh-keygen -q -t ed25519 -N '' -f "$S/ssh/host_key" -C pnfs || return 1
    ssh-keygen -q -t ed25519 -N '' -f "$S/ssh/id" -C parnet-cluster || return 1
    cp "$S/ssh/id.pub" "$S/ssh/authorized_keys"
    echo "pnfs,$net.250 $(cut -d' ' -f1,2 "$S/ssh/host_key.pub")" > "$S/ssh/known_hosts"
    cat > "$S/ssh/config" <<CONF
Host pnfs
    HostName $net.250
    User root
    IdentityFile $S/ssh/id
    UserKnownHostsFile $S/ssh/known_hosts
    StrictHostKeyChecking yes
    BatchMode yes
    ServerAliveInterval 5
    ServerAliveCountMax 3
CONF
    cat > "$S/ssh/sshd_config" <<CONF
ListenAddress $net.250
HostKey $S/ssh/host_key
PidFile $S/run/sshd.pid
AuthorizedKeysFile $S/ssh/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
Subsystem sftp internal-sftp
ClientAliveInterval 5
ClientAliveCountMax 3
LogLevel ERROR
CONF
}

start_munged() { # name socket-dir: munged as user munge, its files in $S/munge
    mkdir -p "$2"
    chown munge:munge "$2"
    runuser -u munge -- /usr/sbin/munged --socket="$2/munge.socket" --key-file="$S/munge/munge.key" \
        --pid-file="$S/munge/$1.pid" --log-file="$S/munge/$1.log" --seed-file="$S/munge/$1.seed"
}

add_ns() { # name index: a namespace with eth0 at $net.index on the bridge
    local ns=$nsp$1 v=pnv$2
    ip netns add "$ns" || return 1
    ip link add $v type veth peer name eth0 netns "$ns" || return 1
    ip link set $v master $bridge up || return 1
    ip -n "$ns" addr add "$net.$2/24" dev eth0 || return 1
    ip -n "$ns" link set eth0 up || return 1
    ip -n "$ns" link set lo up
}

# The node's own view, run inside its namespaces by start_node: hostname, /etc/hosts naming every
# node, a private runtime directory, /tmp and /dev/shm, the shared directory over sshfs, munged,
# slurmd; then it
# stays as the node's holder process (exec/nsenter enter the node through its PID).
node_init() {
    local n=$1 shared=$2
    hostname "$n" || return 1
    mount --bind "$S/hosts" /etc/hosts || return 1
    mount -t tmpfs -o mode=755 tmpfs "$S/run" || return 1
    # The programs are read from the host's disk; a checkout under /tmp (a clone in a temporary
    # directory) would be hidden by the node's own /tmp below, so it is carried over.
    local top under_tmp=false
    top=$(cd "$(dirname "$0")/.." && pwd) || return 1
    case $top/ in /tmp/* | /dev/shm/*) under_tmp=true ;; esac
    if $under_tmp; then mkdir -p "$S/run/top" && mount --bind "$top" "$S/run/top" || return 1; fi
    # Each node its own /tmp and /dev/shm, as separate machines have (Slurm's PMIx plugin and
    # Open MPI keep per-node session files there); the shared directory may lie under /tmp.
    mount -t tmpfs -o mode=1777,size=2g tmpfs /tmp || return 1
    mount -t tmpfs -o mode=1777,size=1g tmpfs /dev/shm || return 1
    if $under_tmp; then mkdir -p "$top" && mount --bind "$S/run/top" "$top" || return 1; fi
    mkdir -p "$shared" || return 1
    # Close-to-open as NFS gives it: sshfs's own directory/attribute cache off, the kernel's
    # attribute and entry caches kept short (1 s) as NFS's actimeo would be.
    sshfs -F "$S/ssh/config" "pnfs:$shared" "$shared" \
        -o reconnect,dir_cache=no,attr_timeout=1,entry_timeout=1,negative_timeout=0,allow_other || return 1
    start_munged "$n" "$S/run/munge" || return 1
    /usr/sbin/slurmd -f "$S/slurm.conf" -N "$n" || return 1
    echo ready
    exec sleep infinity
}

start_node() { # name index shared
    local n=$1 i=$2 shared=$3
    add_ns "$n" "$i" || return 1
    # setsid: the node's processes must not belong to the caller's session or process group.
    # nsenter, not `ip netns exec`, which remounts /sys (slurmd needs the host's cgroup mounts).
    mkdir -p "$S/spool/$n"
    setsid nsenter --net="/run/netns/$nsp$n" unshare --uts --mount --propagation private \
        bash "$0" __node_init "$n" "$shared" </dev/null >"$S/log/node.$n.log" 2>&1 &
    echo $! > "$S/node/$n.pid"
}

wait_nodes() {
    local t0=$SECONDS n st bad
    while [ $((SECONDS - t0)) -lt 40 ]; do
        bad=0
        for n in $(nodes); do
            grep -qx ready "$S/log/node.$n.log" 2>/dev/null || { bad=1; kill -0 "$(holder $n)" 2>/dev/null || { echo "node $n failed to start: $(tail -n 1 "$S/log/node.$n.log")"; return 1; }; }
        done
        if [ $bad = 0 ]; then
            st=$(sinfo -h -N -o '%N %t' 2>/dev/null | awk '$2 !~ /^(idle|alloc|mix)/' | head -n 1)
            [ -z "$st" ] && [ -n "$(sinfo -h -N -o %N 2>/dev/null)" ] && return 0
        fi
        sleep 0.2
    done
    echo "nodes not idle within 40 s: $(sinfo -h -N -o '%N:%t' 2>/dev/null | tr '\n' ' ')"
    return 1
}

do_start() {
    [ "$(id -u)" -eq 0 ] || die "must run as root"
    parse_start "$@"
    if is_up; then die "a cluster is already running ($(nodes | tr '\n' ' ')); stop it first"; fi
    local left
    left=$(leftovers)
    if [ -n "$left" ]; then
        do_stop >/dev/null 2>&1
        die "found the leftovers of a cluster that was not stopped ($left); removed them: run start again"
    fi
    install_pkgs
    check_free
    local t0=$SECONDS err
    mkdir -p "$S"/{run,log,node,ctld,spool}
    echo starting > "$S/state"
    tr ',' '\n' <<<"$names" > "$S/nodes"
    echo "$shared" > "$S/shared"
    # From here on a failure removes whatever was started.
    err=$(start_all 2>&1) || {
        rm -rf "$S.failed" && cp -r "$S/log" "$S.failed" 2>/dev/null
        do_stop >/dev/null 2>&1
        die "start failed, nothing left running (logs in $S.failed): $(tail -n 1 <<<"$err")"
    }
    echo running > "$S/state"
    log "$n_nodes nodes up in $((SECONDS - t0)) s: $(sinfo -h -N -o '%N' | tr '\n' ' ')(shared $shared over sshfs from pnfs)"
    log "on this shell: eval \"\$($0 env)\""
}

start_all() {
    local i=0 n
    { echo "127.0.0.1 localhost"; echo "$net.254 $(hostname -s)"; echo "$net.250 pnfs"
      while read -r n; do i=$((i + 1)); echo "$net.$i $n"; done < "$S/nodes"; } > "$S/hosts"
    write_slurm_conf
    make_keys || return 1
    ip link add $bridge type bridge || return 1
    ip addr add "$net.254/24" dev $bridge && ip link set $bridge up || return 1
    add_ns pnfs 250 || return 1
    mkdir -p /run/sshd
    ip netns exec ${nsp}pnfs /usr/sbin/sshd -f "$S/ssh/sshd_config" || return 1
    start_munged host "$S/run/munge" || return 1
    /usr/sbin/slurmctld -f "$S/slurm.conf" || return 1
    i=0
    for n in $(nodes); do
        i=$((i + 1))
        start_node "$n" $i "$shared" || return 1
    done
    wait_nodes
}

# ---- stop ----
do_stop() {
    local ns p i f
    [ "$(id -u)" -eq 0 ] || die "must run as root"
    if pid_alive "$S/run/slurmctld.pid"; then
        scancel --quiet -u root >/dev/null 2>&1 || true
        p=$(cat "$S/run/slurmctld.pid")
        scontrol shutdown slurmctld >/dev/null 2>&1 || kill "$p" 2>/dev/null
        for i in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$p" 2>/dev/null
    fi
    # Every process of every node and of the file server, found by its network namespace.
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$nsp"); do
        p=$(ip netns pids "$ns" 2>/dev/null)
        [ -n "$p" ] && kill -CONT $p 2>/dev/null && kill -9 $p 2>/dev/null
    done
    for f in "$S"/node/*.pid; do [ -s "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; done
    pid_alive "$S/munge/host.pid" && kill "$(cat "$S/munge/host.pid")" 2>/dev/null
    for i in $(seq 50); do
        [ -z "$(for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$nsp"); do ip netns pids $ns; done)" ] && break
        sleep 0.1
    done
    # A namespace lives on, unnamed, while its sockets wait out their timeouts (a dead node's TCP
    # connections); its veth would too: delete the links, and end those sockets where ss can.
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$nsp"); do
        ip netns exec "$ns" ss -K >/dev/null 2>&1
        ip netns del "$ns"
    done
    for f in $(ip -o link show 2>/dev/null | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }' | grep '^pnv[0-9]*$'); do
        ip link del "$f" 2>/dev/null
    done
    ip link del $bridge 2>/dev/null
    for f in /sys/fs/cgroup/cpu/parnet-cluster-*; do [ -d "$f" ] && rmdir "$f" 2>/dev/null; done
    rm -rf "$S"
    log "cluster stopped"
}

# ---- status, env, exec, faults ----
do_status() {
    if is_up; then
        log "running: $(sinfo -h -N -o '%N:%t' | tr '\n' ' ')(shared $(cat "$S/shared"))"
        return 0
    fi
    local left
    left=$(leftovers)
    if [ -n "$left" ]; then log "not running; leftovers: $left(stop removes them)"; else log "not running"; fi
    return 3
}

do_env() {
    is_up || die "no cluster is running"
    echo "export SLURM_CONF=$S/slurm.conf"
    # Open MPI: the cluster's network only (the host also has its own interfaces).
    echo "export OMPI_MCA_btl_tcp_if_include=$net.0/24 OMPI_MCA_oob_tcp_if_include=$net.0/24"
}

do_exec() {
    local n=$1; shift
    node_ok "$n"
    local p
    p=$(pgrep_holder "$n")
    [ -n "$p" ] || die "node $n is not running"
    exec nsenter -t "$p" -n -u -m "$@"
}

# The PID of the node's `sleep infinity` (node_init's exec), the process whose namespaces are the node's.
pgrep_holder() {
    local p
    for p in $(ns_pids "$1"); do
        [ "$(cat /proc/$p/comm 2>/dev/null)" = sleep ] && [ "$(tr '\0' ' ' </proc/$p/cmdline)" = "sleep infinity " ] && { echo $p; return; }
    done
}

link_set() { node_ok "$1"; ip link set pnv$(node_index "$1") "$2"; }

do_throttle() {
    node_ok "$1"
    local cg=/sys/fs/cgroup/cpu/parnet-cluster-$1 p
    [[ ${2:-} =~ ^[0-9]+$ ]] && [ "$2" -ge 1 ] || die "throttle $1: expected a percentage of one CPU, got '${2:-}'"
    [ -d /sys/fs/cgroup/cpu ] || die "no cgroup v1 cpu controller at /sys/fs/cgroup/cpu"
    mkdir -p "$cg"
    echo 100000 > "$cg/cpu.cfs_period_us"
    echo $(($2 * 1000)) > "$cg/cpu.cfs_quota_us"
    # Every process of the node; their children (new jobs) inherit the group.
    for p in $(ns_pids "$1"); do echo "$p" > "$cg/cgroup.procs" 2>/dev/null; done
    log "node $1 limited to $2% of one CPU"
}

do_unthrottle() {
    node_ok "$1"
    local cg=/sys/fs/cgroup/cpu/parnet-cluster-$1 p
    [ -d "$cg" ] || return 0
    for p in $(cat "$cg/cgroup.procs"); do echo "$p" > /sys/fs/cgroup/cpu/cgroup.procs 2>/dev/null; done
    rmdir "$cg"
}

case ${1:-} in
    start) shift; do_start "$@" ;;
    stop) do_stop ;;
    status) do_status ;;
    env) do_env ;;
    exec) [ $# -ge 3 ] || die "usage: exec NODE CMD..."; shift; do_exec "$@" ;;
    kill-node)
        [ $# -eq 2 ] || die "usage: kill-node NODE"
        link_set "$2" down
        p=$(ns_pids "$2"); [ -n "$p" ] && kill -9 $p
        log "node $2 killed (link down, $(wc -w <<<"$p") processes)" ;;
    isolate) [ $# -eq 2 ] || die "usage: isolate NODE"; link_set "$2" down && log "node $2: link down" ;;
    connect) [ $# -eq 2 ] || die "usage: connect NODE"; link_set "$2" up && log "node $2: link up" ;;
    throttle) [ $# -eq 3 ] || die "usage: throttle NODE PERCENT"; do_throttle "$2" "$3" ;;
    unthrottle) [ $# -eq 2 ] || die "usage: unthrottle NODE"; do_unthrottle "$2" ;;
    fs-pause) p=$(ns_pids pnfs); [ -n "$p" ] && kill -STOP $p && log "file server paused" ;;
    fs-resume) p=$(ns_pids pnfs); [ -n "$p" ] && kill -CONT $p && log "file server resumed" ;;
    fs-slow)
        [[ ${2:-} =~ ^[0-9]+$ ]] || die "usage: fs-slow KBIT"
        ip netns exec ${nsp}pnfs tc qdisc replace dev eth0 root tbf rate "${2}kbit" burst 32kbit latency 10s &&
            log "file server's link limited to $2 kbit/s" ;;
    fs-fast) ip netns exec ${nsp}pnfs tc qdisc del dev eth0 root 2>/dev/null; log "file server's link unlimited" ;;
    __node_init) shift; node_init "$@" ;;
    *) echo "Usage: $me start [--nodes N] [--names a,b,c] [--shared DIR] | stop | status | env | exec NODE CMD... | kill-node NODE | isolate NODE | connect NODE | throttle NODE PCT | unthrottle NODE | fs-pause | fs-resume | fs-slow KBIT | fs-fast" >&2
       exit 2 ;;
esac
