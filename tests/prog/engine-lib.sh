# Shared body of the job-engine tests t0510 (Slurm) and t0520 (Grid Engine); sourced after lib.sh.
# engine_up NAME UPDOWN: take the engine's test lock, start the engine unless it is up (remember
# that we did), or print SKIP and exit when its packages cannot be installed here.
# engine_checks RUNNER CONF THREADS_VAR: the runner's checks. engine_down: stop what we started.

max_overlap() { awk '/^\+/ { c++; if (c > m) m = c } /^-/ { c-- } END { print m + 0 }' "$1"; }

engine_up() {
    engine_name=$1 engine_ctl=$2 engine_started=false
    # Tests of several checkouts may share this machine: one user of the engine at a time, so that
    # nobody stops it under somebody else's jobs.
    exec 9>"/tmp/parnet-$engine_name-test.lock"
    flock -w 600 9 || { fail "$engine_name: test lock /tmp/parnet-$engine_name-test.lock busy"; exit 1; }
    if "$engine_ctl" status >/dev/null 2>&1; then
        echo "# $engine_name already running: using it, leaving it up"
        return 0
    fi
    local t0=$SECONDS
    # 9>&-: the daemons must not inherit the lock, or one left up by a killed run holds it forever.
    if "$engine_ctl" start 9>&- >start.log 2>&1; then
        engine_started=true
        pass "$engine_name starts ($((SECONDS - t0)) s)"
        return 0
    fi
    if [ "$(id -u)" -ne 0 ] || grep -Eq 'not installed|apt-get install .* failed' start.log; then
        echo "SKIP $engine_name: cannot install or start it here (needs root and Debian's packages):"
        sed 's/^/    /' start.log | tail -n 5
        exit 0
    fi
    fail "$engine_name: $engine_ctl start failed"
    sed 's/^/    /' start.log | tail -n 10
    exit 1
}

engine_down() { # process names that must be gone afterwards
    $engine_started || return 0
    local t0=$SECONDS left
    "$engine_ctl" stop >stop.log 2>&1
    left=$(for p in "$@"; do pgrep -x "$p"; done)
    expect_eq "$engine_name stops, no daemon left ($((SECONDS - t0)) s)" "$left" ""
    "$engine_ctl" status >/dev/null 2>&1
    expect_eq "$engine_name status after stop" $? 3
}

engine_checks() {
    local runner=$1 conf=$2 threads_var=$3 name
    name=$(basename "$runner")

    # The array of the issue, with the conf file CI uses.
    expect_status "$name: array of 2, escaped pipe" 0 \
        $runner --config "$conf" JOB=1:2 log/x.JOB.log echo a JOB \| tr a b
    expect_eq "$name: array outputs" "$(sed -n 4p log/x.1.log) $(sed -n 4p log/x.2.log)" "b 1 b 2"
    expect_eq "$name: header" "$(sed -n 1,3p log/x.2.log | sed 's/ at .*/ at/; s/on .*/on/')" \
        "$(printf '# Running on\n# Started at\n# echo a 2 | tr a b')"
    expect_eq "$name: footer Accounting" \
        "$(grep -Ec '^# Accounting: time=[0-9]+ threads=1$' log/x.2.log)" 1
    expect_eq "$name: footer Finished" \
        "$(tail -n 1 log/x.2.log | grep -Ec '^# Finished at .* with status 0$')" 1
    expect_eq "$name: job script kept" "$(ls log/q/x.sh 2>&1)" "log/q/x.sh"

    # The caller's PATH reaches the job (recipes put bin/ on PATH).
    mkdir -p mybin
    printf '#!/bin/sh\necho "hello from mybin $1"\n' > mybin/parnet-hello
    chmod +x mybin/parnet-hello
    PATH=$PWD/mybin:$PATH expect_status "$name: PATH reaches the job" 0 \
        $runner --config "$conf" JOB=3:4 log/p.JOB.log parnet-hello JOB
    expect_eq "$name: program from the caller's PATH ran" "$(sed -n 4p log/p.4.log)" "hello from mybin 4"

    # Escaped redirection, '&&' and $[JOB+n], as in steps/get_egs.sh.
    expect_status "$name: escaped > and &&" 0 \
        $runner --config "$conf" JOB=1:2 log/e.JOB.log echo s=\$[JOB+10] \> out.JOB '&&' cat out.JOB
    expect_eq "$name: escaped > and && output" "$(cat out.2 2>&1) $(sed -n 4p log/e.1.log)" "s=12 s=11"

    # A failing task fails the runner, which names its log (and only that one).
    expect_status "$name: failing task -> non-zero" 1 \
        $runner --config "$conf" JOB=1:3 log/f.JOB.log test JOB -ne 2
    expect_err "$name: failure names the failed log" "log/f\.2\.log: status 1"
    expect_eq "$name: only the failed log is named" "$(grep -c 'f\.[13]\.log' err)" 0
    expect_eq "$name: failed task's footer" \
        "$(tail -n 1 log/f.2.log | grep -c 'with status 1$')" 1

    # Built-in defaults (no conf/ here), options from the config, --max-jobs-run.
    expect_status "$name: no config file, built-in defaults" 0 $runner log/d.log echo defaults
    expect_eq "$name: built-in defaults output" "$(sed -n 4p log/d.log)" "defaults"
    expect_status "$name: --num-threads 2 --mem 100M" 0 \
        $runner --config "$conf" --num-threads 2 --mem 100M log/t.log echo threads=\$$threads_var
    expect_eq "$name: 2 slots given" "$(sed -n 4p log/t.log)" "threads=2"
    expect_eq "$name: threads=2 in the footer" "$(grep -Ec '^# Accounting: time=[0-9]+ threads=2$' log/t.log)" 1
    expect_status "$name: --max-jobs-run 1" 0 $runner --config "$conf" --max-jobs-run 1 \
        JOB=1:3 log/m.JOB.log echo + \>\> ev \; sleep 0.3 \; echo - \>\> ev
    expect_eq "$name: one job at a time" "$(max_overlap ev) $(grep -c + ev)" "1 3"
    expect_status "$name: option the config does not define" 1 \
        $runner --config "$conf" --no-such-option 1 log/n.log true
    expect_err "$name: names the option" "option --no-such-option is not defined"
}

# engine_recipe RUNNER CONF: a short steps/train.sh (one epoch on a slice of Fashion-MNIST) with
# every job submitted through the runner; examples are made locally with run.pl first.
engine_recipe() {
    local runner=$1 conf=$2 name
    name=$(basename "$runner")
    local recipe=$PARNET_TOP/egs/fashion-mnist
    mkdir -p recipe && cd recipe || return
    cp -r "$recipe/local" "$recipe/conf" "$recipe/path.sh" .
    ln -s "$PARNET_TOP/steps" steps
    ln -s "$PARNET_TOP/utils" utils
    local/prepare_data.sh --limit 1200 data >prep.log 2>&1 &&
        steps/get_egs.sh --num-jobs 2 --samples-per-iter 1000 --valid-data-dir data/valid \
            --num-utts-subset 100 data/train exp/egs >egs.log 2>&1
    expect_eq "$name recipe: examples made" $? 0
    expect_status "$name: steps/train.sh through the runner" 0 steps/train.sh \
        --cmd "$runner --config $conf" --num-epochs 1 --minibatch-size 32 \
        --initial-learning-rate 0.004 --final-learning-rate 0.002 exp/egs conf/nnet.config exp/nnet
    local acc
    acc=$(grep -o 'accuracy is [0-9.]*' exp/nnet/log/compute_prob_valid.final.log 2>/dev/null | awk '{print $3}')
    if awk -v a="${acc:-0}" 'BEGIN { exit !(a > 0.5) }'; then pass "$name recipe: valid accuracy $acc"
    else fail "$name recipe: valid accuracy '$acc'"; fi
    expect_eq "$name recipe: job logs written by the engine" "$(grep -l '^# Running on' exp/nnet/log/train.0.*.log | wc -l)" 2
    cd ..
}
