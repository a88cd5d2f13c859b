# steps/lib/args.sh: the start every recipe shares, sourced without arguments (so that it parses
# the recipe's own "$@") after the configuration section and $help_message: ./path.sh when there
# is one, then the options (utils/parse_options.sh shifts them out of "$@"). The recipe then
# checks its positional arguments with
#   args_want $# N [MAX]    N (to MAX) of them, else $help_message on stderr and exit 1.
[ -f ./path.sh ] && . ./path.sh
. utils/parse_options.sh || exit 1

args_want() {
    [ "$1" -ge "$2" ] && [ "$1" -le "${3:-$2}" ] && return 0
    echo "$help_message" 1>&2
    exit 1
}
