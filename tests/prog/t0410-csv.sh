#!/usr/bin/env bash
# utils/csv_to_data.sh: CSV rows into a data directory that nnet-get-egs reads; bad rows rejected.
. "$PARNET_TOP/tests/prog/lib.sh"
csv2data=$PARNET_TOP/utils/csv_to_data.sh
printf 'x1,x2,x3,class\n1.5,2,-3e-1,2\n0,1,2,0\r\n.5,4,5,1\n\n' > good.csv
expect_status "convert a CSV with a header" 0 $csv2data --label-column 4 --header true good.csv data
expect_eq "three rows" "$(wc -l < data/feats.scp) $(wc -l < data/labels.scp)" "3 3"
copy-feats --print-args=false scp:data/feats.scp ark,t:- 2>/dev/null | tr -s ' \n' ' ' > feats.txt
expect_eq "feature values" "$(cat feats.txt)" "row-000002 [ 1.5 2 -0.3 ] row-000003 [ 0 1 2 ] row-000004 [ 0.5 4 5 ] "
expect_eq "labels" "$(copy-int-vector --print-args=false scp:data/labels.scp ark,t:- 2>/dev/null | tr -s ' \n' ' ')" \
    "row-000002 2 row-000003 0 row-000004 1 "
expect_status "the data directory makes examples" 0 nnet-get-egs scp:data/feats.scp scp:data/labels.scp ark:x.egs
expect_err "three examples" "wrote 3 examples"

printf '1,2,0\n1,x,1\n' > bad.csv
expect_status "a non-number is an error" 1 $csv2data --label-column 3 bad.csv bad
expect_err "names the file, line and field" "bad.csv line 2: field 2 \"x\" is not a number"
[ ! -e bad/feats.scp ] && pass "nothing written for a bad file" || fail "partial output written"
printf '1,2,0\n1,2\n' > short.csv
expect_status "a short row is an error" 1 $csv2data --label-column 3 short.csv short
expect_err "says how many fields" "short.csv line 2: expected 3 fields, got 2"
printf '1,2,0.5\n' > badlabel.csv
expect_status "a fractional label is an error" 1 $csv2data --label-column 3 badlabel.csv bl
expect_err "names the label" "label \"0.5\" is not an integer"
expect_status "missing file" 1 $csv2data nosuch.csv d
expect_err "names the missing file" "no such file 'nosuch.csv'"
