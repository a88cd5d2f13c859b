# parse_options.sh: sourced by recipes after their defaults are set, as in Kaldi:
#   stage=0; num_jobs=4
#   . utils/parse_options.sh
# Turns "--num-jobs 8" into num_jobs=8 for every variable that already exists; "--config FILE"
# sources FILE first (the command line wins). Stops at the first argument that is not an option.
# "--help" prints $help_message. An option whose variable does not exist is an error.
# Only "--name value" is accepted ("--name=value" is an error, as in Kaldi).

for ((argpos = 1; argpos < $#; argpos++)); do
    if [ "${!argpos}" == "--config" ]; then
        argpos_plus1=$((argpos + 1))
        config=${!argpos_plus1}
        [ ! -r "$config" ] && echo "$0: missing config '$config'" 1>&2 && exit 1
        . "$config"
    fi
done

while true; do
    [ -z "${1:-}" ] && break
    case "$1" in
        --help|-h)
            if [ -z "${help_message:-}" ]; then echo "$0: no help message." 1>&2; fi
            printf "%s\n" "${help_message:-}" 1>&2
            exit 0 ;;
        --*=*)
            echo "$0: options to scripts are of the form --name value, not --name=value (got $1)" 1>&2
            exit 1 ;;
        --*)
            name=$(echo "$1" | sed 's/^--//' | sed 's/-/_/g')
            if ! [[ $name =~ ^[a-zA-Z_][a-zA-Z0-9_]*$ ]]; then
                echo "$0: invalid option $1" 1>&2; exit 1
            fi
            eval '[ -z "${'"$name"'+xxx}" ]' && echo "$0: invalid option $1" 1>&2 && exit 1
            if [ $# -lt 2 ]; then echo "$0: option $1 needs a value" 1>&2; exit 1; fi
            oldval=$(eval echo "\$$name")
            if [ "$oldval" == "true" ] || [ "$oldval" == "false" ]; then
                was_bool=true
            else
                was_bool=false
            fi
            eval "$name=\"\$2\""
            if $was_bool && [[ "$2" != "true" && "$2" != "false" ]]; then
                echo "$0: expected \"true\" or \"false\" for $1, got \"$2\"" 1>&2
                exit 1
            fi
            if [ "$name" == "cmd" ] && [ -z "$2" ]; then
                echo "$0: empty --cmd" 1>&2; exit 1
            fi
            shift 2 ;;
        *) break ;;
    esac
done

true
