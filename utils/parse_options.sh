# parse_options.sh: sourced by recipes after their defaults are set, as in Kaldi:
#   stage=0; num_jobs=4
#   . utils/parse_options.sh
# Turns "--num-jobs 8" into num_jobs=8 for every variable that already exists; "--config FILE"
# sources FILE first (the command line wins). Stops at the first argument that is not an option.
# "--help" prints $help_message. An option whose variable does not exist is an error.
# Only "--name value" is accepted ("--name=value" is an error, as in Kaldi).
# An option error prints $help_message first and the error last, with the closest option of
# $help_message when one is near ("did you mean --num-jobs?").

# parse_options_error MESSAGE [OPTION]: help, then "$0: MESSAGE", then exit 1.
parse_options_error() {
    [ -n "${help_message:-}" ] && printf "%s\n\n" "$help_message" 1>&2
    local hint=
    if [ -n "${2:-}" ] && [ -n "${help_message:-}" ]; then
        hint=$(printf "%s\n" "$help_message" | grep -o -- '--[a-zA-Z][-a-zA-Z0-9_]*' | sort -u |
            awk -v w="${2#--}" 'function d(a, b,   i, j, la, lb, p, c, r, x) {
                    la = length(a); lb = length(b)
                    for (j = 0; j <= lb; j++) p[j] = j
                    for (i = 1; i <= la; i++) {
                        c[0] = i
                        for (j = 1; j <= lb; j++) {
                            x = p[j - 1] + (substr(a, i, 1) != substr(b, j, 1))
                            if (p[j] + 1 < x) x = p[j] + 1
                            if (c[j - 1] + 1 < x) x = c[j - 1] + 1
                            c[j] = x }
                        for (j = 0; j <= lb; j++) p[j] = c[j] }
                    return p[lb] }
                BEGIN { gsub(/_/, "-", w); lim = int(length(w) / 3); if (lim < 2) lim = 2; best = lim + 1 }
                { o = substr($0, 3); k = d(w, o)
                  if (length(w) >= 3 && length(o) > length(w) && substr(o, 1, length(w)) == w) k = 1
                  if (k < best) { best = k; name = $0 } }
                END { if (name != "") printf " (did you mean %s?)", name }')
    fi
    echo "$0: $1$hint" 1>&2
    exit 1
}

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
            parse_options_error "options to scripts are of the form --name value, not --name=value (got $1)" ;;
        --*)
            name=$(echo "$1" | sed 's/^--//' | sed 's/-/_/g')
            if ! [[ $name =~ ^[a-zA-Z_][a-zA-Z0-9_]*$ ]]; then
                parse_options_error "invalid option $1" "$1"
            fi
            eval '[ -z "${'"$name"'+xxx}" ]' && parse_options_error "invalid option $1" "$1"
            if [ $# -lt 2 ]; then parse_options_error "option $1 needs a value"; fi
            oldval=$(eval echo "\$$name")
            if [ "$oldval" == "true" ] || [ "$oldval" == "false" ]; then
                was_bool=true
            else
                was_bool=false
            fi
            eval "$name=\"\$2\""
            if $was_bool && [[ "$2" != "true" && "$2" != "false" ]]; then
                parse_options_error "expected \"true\" or \"false\" for $1, got \"$2\""
            fi
            if [ "$name" == "cmd" ] && [ -z "$2" ]; then
                echo "$0: empty --cmd" 1>&2; exit 1
            fi
            shift 2 ;;
        *) break ;;
    esac
done

true
