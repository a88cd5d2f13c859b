# steps/lib/train-checks.sh: checks of the recipes' option values, made before any job runs
# (sourced; functions only). Each prints one line "$0: --option value: must be ..." and exits 1.

# check_positive_number OPTION VALUE: a finite number > 0 (not nan, inf, 0, -1 or '').
check_positive_number() {
    if ! awk -v v="$2" 'BEGIN { exit !(v ~ /^[+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$/ && v + 0 > 0 && v + 0 < 1e30) }'; then
        echo "$0: --$1 '$2': must be a positive finite number" 1>&2; exit 1
    fi
}
# check_number_in OPTION VALUE LO HI: a finite number with LO <= value <= HI.
check_number_in() {
    if ! awk -v v="$2" -v lo="$3" -v hi="$4" 'BEGIN { exit !(v ~ /^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$/ && v + 0 >= lo && v + 0 <= hi) }'; then
        echo "$0: --$1 '$2': must be a number from $3 to $4" 1>&2; exit 1
    fi
}
# check_int OPTION VALUE MIN: an integer >= MIN (at most 9 digits: no shell overflow).
check_int() {
    if ! [[ $2 =~ ^[0-9]{1,9}$ ]] || [ "$2" -lt "$3" ]; then
        echo "$0: --$1 '$2': must be an integer of at least $3" 1>&2; exit 1
    fi
}
# train_check_common: the options steps/train.sh and steps/train_mpi.sh share.
train_check_common() {
    check_int num-epochs "$num_epochs" 1
    [ -n "$num_jobs" ] && check_int num-jobs "$num_jobs" 1
    check_int minibatch-size "$minibatch_size" 1
    check_positive_number initial-learning-rate "$initial_learning_rate"
    check_positive_number final-learning-rate "$final_learning_rate"
    check_int shuffle-buffer-size "$shuffle_buffer_size" 1
    check_int num-threads "$num_threads" 1
    check_int max-models-combine "$max_models_combine" 1
    case $stage in -1|[0-9]|[0-9]*[0-9]) check_int stage "${stage#-}" 0 ;;
        *) echo "$0: --stage '$stage': must be -1 or an iteration number" 1>&2; exit 1 ;; esac
    case $combine in true|false) ;; *) echo "$0: --combine '$combine': must be true or false" 1>&2; exit 1 ;; esac
    case $cleanup in true|false) ;; *) echo "$0: --cleanup '$cleanup': must be true or false" 1>&2; exit 1 ;; esac
}
