#!/usr/bin/env bash
# utils/slurm.pl on a real single-node Slurm (tools/slurm-local.sh): arrays, logs, PATH, escaped
# metacharacters, a failing task, options. Starts Slurm if it is not up and stops it afterwards.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/engine-lib.sh"

engine_up slurm "$PARNET_TOP/tools/slurm-local.sh"
engine_checks "$PARNET_TOP/utils/slurm.pl" "$PARNET_TOP/conf/slurm.conf" SLURM_CPUS_PER_TASK
engine_recipe "$PARNET_TOP/utils/slurm.pl" "$PARNET_TOP/conf/slurm.conf"
engine_down slurmctld slurmd
