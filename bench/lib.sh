# bench/lib.sh: what the training benchmarks share (sourced; defines functions only).
# The networks are written with max-change=0 on every line and the trainers run with
# --max-change=0: the figures measure the step itself (as PyTorch's plain SGD beside it), and stay
# comparable with the figures from before max-change was on by default (README "Safe by default").

median() { sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

# Random examples: enough for `seconds` of training at a generous rate.
make_egs() { # input-dim num-classes count out
    /usr/bin/python3 - "$@" <<'PY'
import random, struct, sys
dim, classes, count, out = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
random.seed(1)
with open(out + ".feats.ark", "wb") as f, open(out + ".labels.ark", "wb") as l:
    for i in range(count):
        key = f"u{i:06d} ".encode()
        row = struct.pack(f"<{dim}f", *[random.gauss(0, 1) for _ in range(dim)])
        f.write(key + b"\0BFM \x04" + struct.pack("<i", 1) + b"\x04" + struct.pack("<i", dim) + row)
        l.write(key + b"\0B\x04" + struct.pack("<i", 1) + b"\x04" + struct.pack("<i", random.randrange(classes)))
PY
    nnet-get-egs --compress=none ark:$4.feats.ark ark:$4.labels.ark ark:$4.egs 2>/dev/null
}

config() { # type dims...
    local type=$1; shift
    local dims=("$@") n=$(($# - 1))
    for ((i = 0; i < n; i++)); do
        echo "$type input-dim=${dims[i]} output-dim=${dims[i+1]} learning-rate=0.0001 max-change=0"
        [ $i -lt $((n - 1)) ] && echo "RectifiedLinearComponent dim=${dims[i+1]}"
    done
    echo "SoftmaxComponent dim=${dims[n]}"
}
