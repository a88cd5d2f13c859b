# What tools/slurm-local.sh, tools/sge-local.sh and tools/cluster-local.sh share (sourced). Each
# script defines die MESSAGE itself.

# apt_install_daemons PKG... : apt-get install the packages of a batch system (after an update
# where the first try fails). A policy-rc.d stops the package scripts from starting daemons (there
# is no systemd: the calling script starts them itself); dies if the install fails.
apt_install_daemons() {
    local pkgs="$*" made_policy=false rc=0
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
        chmod +x /usr/sbin/policy-rc.d
        made_policy=true
    fi
    echo "$0: installing $pkgs"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq --no-install-recommends $pkgs >/dev/null ||
        { apt-get update -qq && apt-get install -y -qq --no-install-recommends $pkgs >/dev/null; } ||
        rc=$?
    $made_policy && rm -f /usr/sbin/policy-rc.d
    [ $rc -eq 0 ] || die "apt-get install $pkgs failed"
}

# slurm_conf_policy : the slurm.conf lines both local Slurm clusters use: Linux process tracking,
# no task plugin and no accounting, cores as the unit of allocation, jobs started at once, finished
# jobs kept visible for an hour, nodes back in service when they answer again, no MPI plugin
# unless asked, no mail
slurm_conf_policy() {
    cat <<'CONF'
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerParameters=batch_sched_delay=0
MinJobAge=3600
ReturnToService=2
MpiDefault=none
MailProg=/bin/true
CONF
}
