# steps/lib/lock.sh: one run per experiment directory (sourced; functions only).
#
# dir_lock DIR takes DIR/.lock, a directory made with mkdir (atomic on local and NFS filesystems),
# holding "owner": host, pid, the pid's start time (/proc/PID/stat field 22, so that a reused pid
# is not taken for the owner) and the command line. It is released when the script exits (an EXIT
# trap; kill -9 leaves it behind). When DIR/.lock is already there:
#   - its owner is on this host and no longer running: the lock is stale (a killed run); it is
#     taken over, with a note saying whose it was;
#   - otherwise: one line "DIR is in use by another run (host H, pid P, started T: CMD)" and exit 1.
#     A lock left by a run on another host that died cannot be checked from here; the message says
#     to remove DIR/.lock once that run is known to be gone.

# The start time of pid $1 in clock ticks since boot, or nothing if it is not running.
lock_start_time() {
    [ -r /proc/$1/stat ] || return 0
    sed 's/^.*) //' /proc/$1/stat 2>/dev/null | awk '{ print $20 }'
}

dir_lock() {
    local dir=$1 lock=$1/.lock host pid start cmd stale
    host=$(hostname)
    mkdir -p "$dir" || exit 1
    local try
    for try in 1 2 3; do
        if mkdir "$lock" 2>/dev/null; then
            printf '%s %s %s %s\n' "$host" $$ "$(lock_start_time $$)" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$lock/owner.tmp" &&
                printf '%s\n' "$0 $LOCK_ARGS" >>"$lock/owner.tmp" && mv "$lock/owner.tmp" "$lock/owner" || exit 1
            DIR_LOCK=$lock
            trap 'dir_unlock' EXIT
            return 0
        fi
        if [ ! -f "$lock/owner" ]; then   # being taken right now, or a run killed while taking it
            sleep 1
            if [ ! -f "$lock/owner" ] && [ -d "$lock" ]; then
                local age=$(( $(date +%s) - $(stat -c %Y "$lock" 2>/dev/null || date +%s) ))
                if [ $age -ge 2 ]; then rmdir "$lock" 2>/dev/null || rm -rf "$lock"; fi
            fi
            continue
        fi
        read -r h p s t <"$lock/owner"
        cmd=$(sed -n 2p "$lock/owner")
        stale=false
        if [ "$h" = "$host" ]; then
            if ! kill -0 "$p" 2>/dev/null; then stale=true
            elif [ -n "$s" ] && [ "$(lock_start_time $p)" != "$s" ]; then stale=true; fi
        fi
        if $stale; then
            echo "$0: taking over the stale lock $lock of pid $p on $h (started $t), no longer running" 1>&2
            # Move it aside first, so that two runs finding the same stale lock do not both take it.
            mv "$lock" "$lock.stale.$$" 2>/dev/null && rm -rf "$lock.stale.$$"
            continue
        fi
        echo "$0: $dir is in use by another run (host $h, pid $p, started $t: $cmd); wait for it to finish or stop it (if it is gone, remove $lock)" 1>&2
        exit 1
    done
    echo "$0: could not take the lock $lock" 1>&2
    exit 1
}

dir_unlock() {
    [ -n "${DIR_LOCK:-}" ] || return 0
    # Only our own lock: the owner line names this pid.
    if [ -f "$DIR_LOCK/owner" ] && [ "$(awk 'NR == 1 { print $2 }' "$DIR_LOCK/owner")" = $$ ]; then
        rm -rf "$DIR_LOCK"
    fi
    DIR_LOCK=
}
