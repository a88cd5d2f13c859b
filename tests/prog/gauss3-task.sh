# The small training task several tests and tests/reliability/kill-resume.sh share (sourced):
# gauss3_task SEED SPREAD makes, in the current directory, 3 Gaussian classes in 8 dimensions
# (class means drawn with standard deviation SPREAD, unit noise; 800 training and 150 validation
# vectors) as data/{train,valid}, examples for 2 jobs of 200 per archive in egs/ (get_egs.sh, log
# in egs.log) and nnet.config (8-16-3, ReLU). Needs steps/ and utils/ in the current directory and
# the programs on PATH. Status 1 if get_egs.sh failed.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"   # text_data_dir, mlp_config
gauss3_task() {
    local seed=$1 spread=$2 d
    python3 - "$seed" "$spread" <<'PY'
import os, random, sys
random.seed(int(sys.argv[1]))
means = [[random.gauss(0, float(sys.argv[2])) for _ in range(8)] for _ in range(3)]
def write(d, n):
    os.makedirs(d, exist_ok=True)
    with open(d + "/feats.txt", "w") as f, open(d + "/labels.txt", "w") as l:
        for i in range(n):
            c = i % 3
            f.write(f"u{i:04d}  [\n  " + " ".join(f"{m + random.gauss(0, 1):.5f}" for m in means[c]) + " ]\n")
            l.write(f"u{i:04d} {c}\n")
write("data/train", 800)
write("data/valid", 150)
PY
    for d in train valid; do
        text_data_dir data/$d/ data/$d
    done
    mlp_config 8 16 3 Affine Affine learning-rate=0.01 'param-stddev=0 bias-stddev=0' >nnet.config
    steps/get_egs.sh --num-jobs 2 --samples-per-iter 200 --valid-data-dir data/valid --num-utts-subset 100 \
        data/train egs >egs.log 2>&1
}
