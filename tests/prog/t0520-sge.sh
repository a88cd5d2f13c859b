#!/usr/bin/env bash
# utils/queue.pl on a real single-node Grid Engine (tools/sge-local.sh): arrays, logs, PATH, escaped
# metacharacters, a failing task, options. Starts Grid Engine if it is not up and stops it
# afterwards (the qmaster takes ~10 s to exit).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/engine-lib.sh"

engine_up gridengine "$PARNET_TOP/tools/sge-local.sh"
engine_checks "$PARNET_TOP/utils/queue.pl" "$PARNET_TOP/conf/queue.conf" NSLOTS
engine_recipe "$PARNET_TOP/utils/queue.pl" "$PARNET_TOP/conf/queue.conf"
engine_down sge_qmaster sge_execd
