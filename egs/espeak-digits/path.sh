# Puts parnet's programs and scripts on PATH for the recipe (sourced by run.sh and the steps).
PARNET_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# PARNET_BIN (set by `make test`, e.g. to the sanitizer build's build/san/bin) wins over bin/.
export PATH=${PARNET_BIN:-$PARNET_ROOT/bin}:$PARNET_ROOT/utils:$PATH
export LC_ALL=C
. $PARNET_ROOT/tools/blas-env.sh
