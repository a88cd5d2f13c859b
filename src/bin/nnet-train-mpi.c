/* nnet-train-mpi: synchronous data-parallel training under mpirun/srun (sync.h: train_sync).
 * The only MPI (and NCCL) code of parnet: this file is compiled with mpicc and -DHAVE_MPI=1 and
 * hands train_sync an all-reduce; the library never links against MPI. */
#include <limits.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "train/momentum.h"
#include "train/sync.h"

#if HAVE_CUDA
#include <cuda_runtime.h>
#include <nccl.h>
#endif

static const char *usage =
    "Train a neural network on N MPI ranks at once, each rank on its own examples (JOB in the\n"
    "egs-rspecifier becomes rank + 1, as Kaldi numbers jobs from 1).\n"
    "  --mode=params: each rank runs SGD on its own copy; the copies are averaged every\n"
    "    --average-every minibatches and at the end (local SGD, as Su & Chen). Use N x the\n"
    "    single-process learning rate, as with Kaldi's parameter averaging.\n"
    "  --mode=gradients: every minibatch the ranks' steps are summed and applied by all\n"
    "    (synchronous SGD on N x minibatch-size examples at the same learning rate).\n"
    "  --gaf-microbatches=M (implies gradients mode): gradient agreement filtering across\n"
    "    ranks, as nnet-train's GAF. One update per M minibatches per rank: the N x M\n"
    "    microgradients (M per rank; M=1: each rank's minibatch is one microbatch) are gathered\n"
    "    and offered in rank order, rank 0's M first; the same --gaf-threshold/-fusion/-on rule\n"
    "    then keeps those that agree, on every rank alike (N=1: nnet-train --gaf-microbatches=M).\n"
    "    The gather moves N x M x the parameters per rank per update.\n"
    "  --mode=elastic: EASGD (all-reduce form): local SGD on each replica at the single-worker\n"
    "    rate; every --average-every (tau) minibatches delta = alpha (x - c), x -= delta,\n"
    "    c += sum of delta over ranks (--elastic-alpha, default 0.9/N). The model is the\n"
    "    centre c. EAMSGD's momentum: Nesterov 0.99 unless --momentum is given.\n"
    "  --mode=parle: Parle as ucla-vision/parle: inner steps coupled to each rank's anchor by\n"
    "    gamma, an EMA z of the inner iterates (never reset), and every --parle-inner-steps (L)\n"
    "    minibatches two all-reduces and an outer momentum step from the last inner iterate\n"
    "    toward z and the mean x~ (coupling rho); gamma, rho are multiples of the learning rate,\n"
    "    grow by (1 + 0.5/nb) every L steps up to caps. The model is x~. Nesterov 0.9 in both\n"
    "    loops unless --momentum is given. Use the single-worker rate in both modes.\n"
    "--momentum/--nesterov/--weight-decay apply in every mode (momentum.h).\n"
    "Natural-gradient state stays local to each rank: in gradients mode each rank preconditions\n"
    "its own gradient before the sum. Ranks stop together when the first archive ends. Rank 0\n"
    "writes the model. --use-gpu=yes (make CUDA=1): one GPU per rank (the local rank modulo the\n"
    "visible GPUs), the parameter blocks all-reduced on the device with NCCL; the ranks either\n"
    "all run on GPUs or all on the CPU. The last line on stderr is log-prob-per-frame=X.\n"
    "Usage:  mpirun -np N nnet-train-mpi [options] <model-in> <egs-rspecifier> <model-out>\n"
    "e.g.:   mpirun -np 4 nnet-train-mpi --average-every=8 1.mdl ark:egs.JOB.0.ark 2.mdl\n"
    "        mpirun -np 2 nnet-train-mpi --use-gpu=yes 1.mdl ark:egs.JOB.0.ark 2.mdl\n"
    "        srun --mpi=pmix --kill-on-bad-exit=1 -n 4 nnet-train-mpi 1.mdl ark:e.JOB.ark 2.mdl\n";

struct mpi_ctx {
    MPI_Comm comm;
#if HAVE_CUDA
    ncclComm_t nccl;
    int have_nccl;
#endif
};

static int mpi_allreduce(void *ctx, void *data, size_t count, enum comm_type type,
                         enum comm_op op, int device) {
    struct mpi_ctx *c = ctx;
#if HAVE_CUDA
    if (device == MATRIX_GPU) {
        ASSERT(c->have_nccl && type == COMM_FLOAT && op == COMM_SUM);
        ncclResult_t r = ncclAllReduce(data, data, count, ncclFloat, ncclSum, c->nccl, 0);
        if (r != ncclSuccess) return error_set("ncclAllReduce: %s", ncclGetErrorString(r));
        cudaError_t e = cudaStreamSynchronize(0);
        if (e != cudaSuccess) return error_set("ncclAllReduce: %s", cudaGetErrorString(e));
        return 0;
    }
#endif
    ASSERT(device == MATRIX_CPU);
    MPI_Datatype t = type == COMM_FLOAT    ? MPI_FLOAT
                     : type == COMM_DOUBLE ? MPI_DOUBLE
                                           : MPI_INT64_T;
    size_t elem = type == COMM_FLOAT ? sizeof(float) : 8;
    MPI_Op o = op == COMM_SUM ? MPI_SUM : op == COMM_MIN ? MPI_MIN : MPI_MAX;
    for (size_t done = 0; done < count;) { /* MPI counts are int */
        int n = count - done > INT_MAX ? INT_MAX : (int)(count - done);
        int rc = MPI_Allreduce(MPI_IN_PLACE, (char *)data + done * elem, n, t, o, c->comm);
        if (rc != MPI_SUCCESS) {
            char msg[MPI_MAX_ERROR_STRING];
            int len = 0;
            MPI_Error_string(rc, msg, &len);
            return error_set("MPI_Allreduce: %s", msg);
        }
        done += (size_t)n;
    }
    return 0;
}

/* --use-gpu on every rank, one GPU per rank on a node (matrix_select_device_rank: the local
 * rank modulo the visible GPUs first). The ranks must agree: NCCL all-reduces device buffers,
 * MPI host ones. If some rank cannot have a GPU, "yes"/"wait" fail on every rank (the lowest
 * failing rank says why, one line) and "optional" puts every rank on the CPU. 0 or 1 (exit). */
static int select_devices(const char *use_gpu, int rank) {
    MPI_Comm node;
    int local = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    MPI_Comm_free(&node);
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int bad = matrix_select_device_rank(use_gpu, local) ? rank : size, first_bad = size;
    MPI_Allreduce(&bad, &first_bad, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first_bad < size) {
        if (rank == first_bad)
            log_message(LOG_LEVEL_ERROR, __func__, __FILE__, __LINE__, "rank %d: %s", rank,
                        error_get());
        return 1;
    }
    int on_gpu = matrix_default_device == MATRIX_GPU, all_gpu = 0;
    MPI_Allreduce(&on_gpu, &all_gpu, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (on_gpu && !all_gpu) { /* only with "optional": some rank got no GPU */
        WARN("rank %d: --use-gpu=%s: another rank has no GPU; every rank runs on the CPU", rank,
             use_gpu);
        matrix_default_device = MATRIX_CPU;
    }
    return 0;
}

#if HAVE_CUDA
static int nccl_setup(struct mpi_ctx *c, int rank, int size) {
    ncclUniqueId id;
    if (rank == 0 && ncclGetUniqueId(&id) != ncclSuccess) memset(&id, 0, sizeof id);
    MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, c->comm);
    ncclResult_t r = ncclCommInitRank(&c->nccl, size, id, rank);
    if (r != ncclSuccess) return error_set("ncclCommInitRank: %s", ncclGetErrorString(r));
    c->have_nccl = 1;
    return 0;
}
#endif

/* An error only this rank knows of: a collective exit would hang the others, so abort the job. */
#define die_alone(...) \
    do { \
        log_message(LOG_LEVEL_ERROR, __func__, __FILE__, __LINE__, __VA_ARGS__); \
        MPI_Abort(MPI_COMM_WORLD, 1); \
        exit(1); \
    } while (0)

/* A copy of spec with every "JOB" replaced by job. */
static char *replace_job(const char *spec, int job) {
    char num[16];
    int nlen = snprintf(num, sizeof num, "%d", job);
    char *out = xmalloc(strlen(spec) * (size_t)nlen + 1), *p = out;
    for (const char *s = spec; *s;) {
        if (!strncmp(s, "JOB", 3)) {
            memcpy(p, num, (size_t)nlen);
            p += nlen;
            s += 3;
        } else {
            *p++ = *s++;
        }
    }
    *p = 0;
    return out;
}

int main(int argc, char **argv) {
    /* momentum (-1: by mode), GAF's update size, Parle's scoping, the state files */
    float momentum = -1;
    const char *nesterov = "auto", *gaf_scale = "accepted";
    int nb = 0, step_offset = 0;
    const char *state_in = "", *state_out = "";
    struct train_sync_options o;
    train_sync_options_default(&o);
    int binary = 1, num_threads = 1, srand_seed = 0;
    float max_change = NNET_DEFAULT_MAX_CHANGE_GLOBAL;
    const char *mode = "", *fusion = "halving", *gaf_on = "gradient";
    const char *precision = "fp32";
    const char *use_gpu = "no";
    struct option_spec specs[] = {
        {"mode", OPT_STRING, &mode,
         "params: average the parameters every --average-every minibatches (local SGD); "
         "gradients: sum the ranks' steps every minibatch (synchronous SGD)"},
        {"average-every", OPT_INT, &o.average_every,
         "Minibatches between parameter averages in params mode (0: only at the end)"},
        {"check-sync", OPT_BOOL, &o.check_sync,
         "After every exchange, check that all ranks hold bitwise the same parameters"},
        {"minibatch-size", OPT_INT, &o.train.minibatch_size, "Examples per minibatch per rank"},
        {"srand", OPT_INT, &srand_seed, "Seed for the random draws of training (+ rank)"},
        {"num-threads", OPT_INT, &num_threads, "threads for the matrix work, per rank"},
        MATRIX_PRECISION_OPTION(precision),
        {"use-gpu", OPT_STRING, &use_gpu,
         "yes|no|optional|wait: each rank on a GPU (make CUDA=1), one per rank by local rank; "
         "the all-reduces then go through NCCL on the device"},
        {"minibatches-per-phase", OPT_INT, &o.train.progress_every,
         "Log progress (rank 0) every this many minibatches (0: never)"},
        {"max-change", OPT_FLOAT, &max_change,
         "Global max-change: largest norm of one minibatch's whole step (Kaldi's 2.0; 0: no limit)"},
        {"binary", OPT_BOOL, &binary, "Write the model in binary mode"},
        {"gaf-microbatches", OPT_INT, &o.train.gaf_microbatches,
         "GAF across ranks: minibatches per rank per update (0: off; implies gradients mode)"},
        {"gaf-threshold", OPT_FLOAT, &o.train.gaf_threshold,
         "GAF: largest cosine distance 1-cos accepted (0.97: cos >= 0.03; >= 2 accepts all)"},
        {"gaf-fusion", OPT_STRING, &fusion,
         "GAF: halving (G=(G+g)/2, the reference code) or mean (uniform mean of the accepted)"},
        {"gaf-on", OPT_STRING, &gaf_on,
         "GAF: filter raw gradients (gradient; NaturalGradientAffine then trains as plain SGD) or "
         "each minibatch's preconditioned step (step)"},
        {"gaf-scale", OPT_STRING, &gaf_scale,
         "GAF: size of an applied update: accepted (number agreed x lr x fusion: tau >= 2 and "
         "mean fusion = SGD on the union) or one (lr x fusion, the reference's step_GAF)"},
        /* momentum and weight decay (momentum.h); Parle and EASGD */
        {"momentum", OPT_FLOAT, &momentum,
         "Heavy-ball momentum as Kaldi nnet3 (-1: by mode: 0; parle 0.9, elastic 0.99)"},
        {"nesterov", OPT_STRING, &nesterov,
         "true|false|auto: Nesterov's form of --momentum (auto: true in parle and elastic)"},
        {"weight-decay", OPT_FLOAT, &o.train.weight_decay,
         "L2: the step gains -lambda x frames x lr x theta (PyTorch's weight_decay; 0: off)"},
        {"elastic-alpha", OPT_FLOAT, &o.elastic_alpha,
         "elastic: alpha of the exchange every --average-every minibatches (0: 0.9 / N)"},
        {"parle-inner-steps", OPT_INT, &o.parle_inner_steps, "parle: L, minibatches per exchange"},
        {"parle-gamma", OPT_FLOAT, &o.parle_gamma,
         "parle: initial gamma-coupling of the inner iterate to the anchor (x learning rate)"},
        {"parle-rho", OPT_FLOAT, &o.parle_rho,
         "parle: initial rho-coupling to the mean, before the reference's factor L x N"},
        {"parle-gamma-max", OPT_FLOAT, &o.parle_gamma_max, "parle: cap on gamma"},
        {"parle-rho-max", OPT_FLOAT, &o.parle_rho_max, "parle: cap on rho"},
        {"parle-ema", OPT_FLOAT, &o.parle_ema, "parle: EMA factor alpha of z"},
        {"parle-minibatches-per-epoch", OPT_INT, &nb,
         "parle: nb of the scoping (1 + 0.5/nb)^(t/L), per rank (0: no scoping)"},
        {"parle-step-offset", OPT_INT, &step_offset,
         "parle: inner steps taken before this pass (the scoping counter's start)"},
        {"parle-scope-per-step", OPT_INT, &o.parle_scope_per_step,
         "parle: scoping counter's advance per inner step (0: the network's parameter tensors, "
         "2 per updatable component, as the reference code; 1: the README's t/L)"},
        {"state-in", OPT_STRING, &state_in,
         "Each rank's optimiser state from the previous pass (JOB = rank + 1): velocity, and "
         "the replica, anchor, EMA, t in elastic/parle modes"},
        {"state-out", OPT_STRING, &state_out, "Write each rank's state at the end (JOB = rank + 1)"},
    };
    int num_specs = sizeof specs / sizeof specs[0];
    options_parse(&argc, argv, usage, specs, num_specs);
    if (argc != 4) options_usage_exit(usage, specs, num_specs);
    if (!*mode) mode = o.train.gaf_microbatches > 0 ? "gradients" : "params";
    if (!strcmp(mode, "params")) o.mode = TRAIN_SYNC_PARAMS;
    else if (!strcmp(mode, "gradients")) o.mode = TRAIN_SYNC_STEPS;
    else if (!strcmp(mode, "elastic")) o.mode = TRAIN_SYNC_ELASTIC;
    else if (!strcmp(mode, "parle")) o.mode = TRAIN_SYNC_PARLE;
    else die("--mode must be params, gradients, elastic or parle, not '%s'", mode);
    int replica = o.mode == TRAIN_SYNC_ELASTIC || o.mode == TRAIN_SYNC_PARLE;
    o.train.momentum = momentum >= 0 ? momentum
                       : o.mode == TRAIN_SYNC_PARLE ? 0.9f
                       : o.mode == TRAIN_SYNC_ELASTIC ? 0.99f
                                                      : 0;
    if (!strcmp(nesterov, "auto")) o.train.nesterov = replica && o.train.momentum > 0;
    else if (!strcmp(nesterov, "true") || !strcmp(nesterov, "false"))
        o.train.nesterov = *nesterov == 't';
    else die("--nesterov='%s': expected true, false or auto", nesterov);
    if (momentum_check(o.train.momentum, o.train.nesterov, o.train.weight_decay))
        die("%s", error_get());
    o.parle_minibatches_per_epoch = nb;
    o.parle_step_offset = step_offset;
    if (o.mode == TRAIN_SYNC_PARLE &&
        (o.parle_inner_steps < 1 || !(o.parle_gamma >= 0) || !(o.parle_rho >= 0) ||
         !(o.parle_gamma_max >= 0) || !(o.parle_rho_max >= 0) ||
         !(o.parle_ema >= 0 && o.parle_ema < 1) || nb < 0 || step_offset < 0 ||
         o.parle_scope_per_step < 0))
        die("parle: --parle-inner-steps must be at least 1, --parle-scope-per-step, the "
            "couplings and caps not negative, --parle-ema in [0, 1), --parle-minibatches-per-"
            "epoch and --parle-step-offset not negative");
    if (o.mode == TRAIN_SYNC_ELASTIC && (o.average_every < 1 || !(o.elastic_alpha >= 0)))
        die("elastic: --average-every (tau) must be at least 1 and --elastic-alpha not negative");
    if (o.train.gaf_microbatches < 0 || !(o.train.gaf_threshold >= 0))
        die("--gaf-microbatches and --gaf-threshold must not be negative");
    if (o.train.gaf_microbatches > 0 && o.mode != TRAIN_SYNC_STEPS)
        die("--gaf-microbatches needs --mode=gradients (the ranks apply one common update)");
    if (!strcmp(fusion, "halving")) o.train.gaf_fusion = GAF_FUSION_HALVING;
    else if (!strcmp(fusion, "mean")) o.train.gaf_fusion = GAF_FUSION_MEAN;
    else die("--gaf-fusion='%s': expected halving or mean", fusion);
    if (!strcmp(gaf_scale, "accepted") || !strcmp(gaf_scale, "one"))
        o.train.gaf_unit_scale = *gaf_scale == 'o';
    else die("--gaf-scale='%s': expected accepted or one", gaf_scale);
    if (!strcmp(gaf_on, "gradient") || !strcmp(gaf_on, "step"))
        o.train.gaf_on_steps = *gaf_on == 's';
    else die("--gaf-on='%s': expected gradient or step", gaf_on);
    if (o.train.minibatch_size < 1) die("--minibatch-size must be at least 1");
    if (o.average_every < 0) die("--average-every must be at least 0");
    o.train.srand = (uint64_t)srand_seed;
    matrix_set_num_threads(num_threads);
    if (matrix_set_precision(precision)) die("%s", error_get());

    MPI_Init(&argc, &argv);
    struct mpi_ctx ctx = {.comm = MPI_COMM_WORLD};
    struct train_comm comm = {.ctx = &ctx, .allreduce = mpi_allreduce};
    MPI_Comm_rank(MPI_COMM_WORLD, &comm.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &comm.size);
    if (select_devices(use_gpu, comm.rank)) {
        MPI_Finalize();
        return 1;
    }
#if HAVE_CUDA
    if (matrix_default_device == MATRIX_GPU && nccl_setup(&ctx, comm.rank, comm.size))
        die_alone("rank %d: %s", comm.rank, error_get());
    if (matrix_set_precision(precision)) die_alone("rank %d: %s", comm.rank, error_get());
#endif
    char *egs = replace_job(argv[2], comm.rank + 1);
    char *state_rx = *state_in ? replace_job(state_in, comm.rank + 1) : NULL;
    char *state_wx = *state_out ? replace_job(state_out, comm.rank + 1) : NULL;
    o.state_rxfilename = state_rx;
    o.state_wxfilename = state_wx;
    struct nnet *n = nnet_read_file(argv[1]);
    int read_ok = n != NULL;
    MPI_Allreduce(MPI_IN_PLACE, &read_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!read_ok) { /* every rank leaves, the ones that failed say why */
        if (!n)
            log_message(LOG_LEVEL_ERROR, __func__, __FILE__, __LINE__,
                        "rank %d: cannot read model '%s': %s", comm.rank, argv[1], error_get());
        nnet_free(n);
        free(egs);
        free(state_rx);
        free(state_wx);
        MPI_Finalize();
        return 1;
    }
    if (max_change > 0) nnet_set_max_change(n, max_change);
    if (o.train.gaf_microbatches > 0 && comm.size * o.train.gaf_microbatches < 2) {
        if (comm.rank == 0)
            log_message(LOG_LEVEL_ERROR, __func__, __FILE__, __LINE__,
                        "GAF needs at least 2 microbatches per update: %d rank(s) x "
                        "--gaf-microbatches=%d", comm.size, o.train.gaf_microbatches);
        nnet_free(n);
        free(egs);
        free(state_rx);
        free(state_wx);
        MPI_Finalize();
        return 1;
    }
    if (comm.rank == 0)
        LOG("%d ranks, mode %s, exchange every %d minibatches, %d examples per minibatch per "
            "rank, %d parameters", comm.size, mode,
            o.mode == TRAIN_SYNC_STEPS   ? 1
            : o.mode == TRAIN_SYNC_PARLE ? o.parle_inner_steps
                                         : o.average_every,
            o.train.minibatch_size, nnet_num_params(n));
    if (comm.rank == 0 && (o.train.momentum > 0 || o.train.weight_decay > 0))
        LOG("momentum %g%s, weight decay %g", o.train.momentum,
            o.train.nesterov ? " (Nesterov)" : "", o.train.weight_decay);
    if (comm.rank == 0 && o.train.gaf_microbatches > 0)
        LOG("GAF on %s: %d microbatches per update (%d per rank), threshold %g, %s fusion",
            o.train.gaf_on_steps ? "steps" : "raw gradients",
            comm.size * o.train.gaf_microbatches, o.train.gaf_microbatches,
            o.train.gaf_threshold, fusion);

    struct train_sync_stats st;
    int ok = train_sync(n, egs, &o, &comm, &st) == 0; /* the same on every rank */
    if (!ok) log_message(LOG_LEVEL_ERROR, __func__, __FILE__, __LINE__, "%s", error_get());
    if (ok && st.total.num_egs == 0) {
        if (comm.rank == 0) WARN("no examples in '%s' (on some rank): nothing trained", argv[2]);
        ok = 0;
    }
    if (ok && comm.rank == 0 && nnet_write_file(n, argv[3], binary)) {
        log_message(LOG_LEVEL_ERROR, __func__, __FILE__, __LINE__, "cannot write '%s': %s",
                    argv[3], error_get());
        ok = 0;
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (ok && comm.rank == 0) {
        const struct train_stats *t = &st.total;
        double loop = st.local.seconds > 0 ? st.local.seconds : 1e-9;
        LOG("Trained on %lld examples (%lld frames, %lld minibatches over %d ranks, %lld steps "
            "skipped) in %.1f s, %.0f frames/s; accuracy %.4f", t->num_egs, t->num_frames,
            t->num_minibatches, comm.size, t->num_skipped, t->seconds,
            t->num_frames / (t->seconds > 0 ? t->seconds : 1), t->correct / t->weight);
        LOG("Exchanges (rank 0): %lld all-reduces of the %s, %.3f MB of payload per rank, "
            "%.3f s (%.1f%% of the loop); %.3f s (%.1f%%) in the per-minibatch flag all-reduce",
            st.num_exchanges,
            o.mode == TRAIN_SYNC_PARAMS      ? "parameters"
            : o.mode == TRAIN_SYNC_ELASTIC   ? "elastic differences"
            : o.mode == TRAIN_SYNC_PARLE     ? "EMAs and anchors"
            : o.train.gaf_microbatches > 0 ? "gathered microgradients"
                                             : "steps",
            st.exchange_bytes / 1e6, st.exchange_seconds, 100 * st.exchange_seconds / loop,
            st.flag_seconds, 100 * st.flag_seconds / loop);
        if (o.mode == TRAIN_SYNC_PARLE)
            LOG("Parle: %lld outer steps; scoping counter t=%lld, gamma %.4g, rho %.4g at the end",
                t->outer_steps, st.parle_steps, st.parle_gamma, st.parle_rho);
        if (o.check_sync)
            LOG("Checked: all %d ranks held bitwise the same parameters after each of the %lld "
                "exchanges", comm.size, st.num_exchanges);
        if (o.train.gaf_microbatches > 0)
            LOG("GAF: %lld steps, %lld skipped (nothing agreed), %lld updates; accept rate %.4f "
                "(%lld of %lld microbatches after the first of each step)", t->gaf_steps,
                t->gaf_skipped, t->num_updates,
                t->gaf_offered ? (double)t->gaf_accepted / t->gaf_offered : 0.0, t->gaf_accepted,
                t->gaf_offered);
        nnet_log_max_change_stats(n); /* rank 0's steps */
        if (st.num_stopped_early)
            LOG("%lld rank(s) stopped with examples left (the shortest archive ends the pass)",
                st.num_stopped_early);
        LOG("[this line is to be parsed by a script:] log-prob-per-frame=%.6f",
            t->objf / t->weight);
    }
    nnet_free(n);
    free(egs);
    free(state_rx);
    free(state_wx);
#if HAVE_CUDA
    if (ctx.have_nccl) ncclCommDestroy(ctx.nccl);
#endif
    MPI_Finalize();
    return ok ? 0 : 1;
}
