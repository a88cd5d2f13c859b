# scaling-model.awk: docs/SCALING.md's model evaluated on the constants bench/cluster-scaling.sh
# prints ("key value" lines): seconds per iteration and speedup over one job at N = 1, 8, 64,
# 256 for file averaging (steps/train.sh), and MPI ring and tree all-reduce (steps/train_mpi.sh).
#   awk -f bench/scaling-model.awk [-v S=200000 -v b=128 -v k=8 -v L=1 -v B=... -v beta=...
#       -v alpha=... -v ns="1 8 64 256"] constants.txt      (ns: the node counts; 1 must come first)
# S examples per job per iteration (Kaldi nnet2's samples_per_iter), minibatches of b examples,
# parameters averaged every k minibatches; L the scheduler's latency per step (s). B and beta
# default to the measured 2-node figures (fs_read_Bps; the 2-node all-reduce fit); giving them
# answers "what if the network were faster".
function ceil_log2(n,   r) { r = 0; while ((2 ^ r) < n) r++; return r }
function t_file(n) {
    return 2 * L + S * c + n * S * e / B + 2 * n * M / B + a + n * M / B + n * M / R + M / B
}
function t_ar(n, kind) {
    if (n == 1) return 0
    if (kind == "ring") return 2 * (n - 1) * alpha + 2 * (n - 1) / n * M / beta
    return 2 * ceil_log2(n) * (alpha + M / beta)
}
function t_mpi(n, kind) { return L + S * c + n * S * e / B + (S / (b * k)) * t_ar(n, kind) }
{ v[$1] = $2 }
END {
    if (S == "") S = 200000
    if (b == "") b = 128
    if (k == "") k = 8
    if (L == "") L = 1
    M = v["model_bytes"]; R = v["average_rate_Bps"]; a = v["average_fixed_s"]
    c = v["train_s_per_example"]; e = v["egs_bytes_each"]
    if (B == "") B = v["fs_read_Bps"]
    if (alpha == "") alpha = v["fit_alpha_s"]
    if (beta == "") beta = v["fit_beta_Bps"]
    printf "| N | file averaging: s/iter | speedup | MPI ring: s/iter | speedup | MPI tree: s/iter | speedup |\n"
    printf "|---|---|---|---|---|---|---|\n"
    if (ns == "") ns = "1 8 64 256"
    m = split(ns, nn, " ")
    for (i = 1; i <= m; i++) {
        n = nn[i]
        printf "| %d | %.0f | %.1f | %.0f | %.1f | %.0f | %.1f |\n", n,
            t_file(n), n * t_file(1) / t_file(n), t_mpi(n, "ring"), n * t_mpi(1, "ring") / t_mpi(n, "ring"),
            t_mpi(n, "tree"), n * t_mpi(1, "tree") / t_mpi(n, "tree")
    }
}
