/* nnet-train-mpi: synchronous data-parallel training under mpirun/srun (sync.h: train_sync).
 * The only MPI (and NCCL) code of parnet: this file is compiled with mpicc and -DHAVE_MPI=1 and
 * hands train_sync an all-reduce; the library never links against MPI. */
#include <limits.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

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
    "    --bmuf: block momentum on every average (BMUF; DiLoCo's outer Nesterov): m <- eta m +\n"
    "    zeta (average - block start), eta = --block-momentum (auto: 1 - 1/N), zeta =\n"
    "    --block-learning-rate; use the single-process rate (the momentum amplifies N x);\n"
    "    m carried between passes in --block-state-in/-out (one file, rank 0 writes it).\n"
    "    --warmup-steps=W: post-local SGD, the run's first W minibatches synchronous (the mean\n"
    "    of the ranks' steps), --minibatch-offset of them in earlier passes.\n"
    "    --group-size=G --group-average-every=Kg: hierarchical averaging, groups of G\n"
    "    consecutive ranks (a node, ranks placed by node) every Kg minibatches, all ranks every\n"
    "    --average-every.\n"
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
    double timeout; /* --comm-timeout: seconds an all-reduce may take (0: no limit) */
    int rank;
    long long calls;
#if HAVE_CUDA
    ncclComm_t nccl;
    int have_nccl;
#endif
};

static int mpi_allreduce_now(struct mpi_ctx *c, void *data, size_t count, enum comm_type type,
                             enum comm_op op, int device);

/* Every all-reduce under the --comm-timeout deadline: a rank whose peer or network is gone would
 * otherwise wait forever (TCP sees nothing from a peer that went silent). Each rank's own
 * watchdog ends it, so all ranks exit within the timeout whatever the launcher does. */
static int mpi_allreduce(void *ctx, void *data, size_t count, enum comm_type type,
                         enum comm_op op, int device) {
    struct mpi_ctx *c = ctx;
    size_t elem = type == COMM_FLOAT ? sizeof(float) : 8;
    if (watchdog_arm(c->timeout, 1,
                     "rank %d: all-reduce %lld (%zu bytes): a rank or its network is gone, or a "
                     "rank is slower than --comm-timeout; the all-reduce",
                     c->rank, ++c->calls, count * elem))
        return -1;
    int rc = mpi_allreduce_now(c, data, count, type, op, device);
    watchdog_disarm();
    return rc;
}

static int mpi_allreduce_now(struct mpi_ctx *c, void *data, size_t count, enum comm_type type,
                             enum comm_op op, int device) {
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

/* The minimum of x over the ranks (matrix_cli_apply_ranks' agreement). */
static int mpi_all_min(void *ctx, int x) {
    int min = x;
    MPI_Allreduce(&x, &min, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return min;
}

/* This rank's place among the ranks on its node. */
static int node_rank(void) {
    MPI_Comm node;
    int local = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    MPI_Comm_free(&node);
    return local;
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
    struct train_sync_options o;
    struct train_sync_cli c;
    struct option_spec specs[TRAIN_SYNC_CLI_MAX_SPECS];
    int num_specs = train_sync_cli_register(&c, &o, specs);
    double comm_timeout = 300;
    ASSERT(num_specs < TRAIN_SYNC_CLI_MAX_SPECS);
    specs[num_specs++] = (struct option_spec){
        "comm-timeout", OPT_DOUBLE, &comm_timeout,
        "Seconds an all-reduce may wait (for the slowest rank's compute as well as the network) "
        "before every rank exits with an error; bounds the wait when a rank or its network is "
        "gone (0: wait forever)"};
    options_parse(&argc, argv, usage, specs, num_specs);
    if (argc != 4) options_usage_exit(usage, specs, num_specs);
    if (train_sync_cli_check(&c)) die("%s", error_get());

    MPI_Init(&argc, &argv);
    struct mpi_ctx ctx = {.comm = MPI_COMM_WORLD, .timeout = comm_timeout};
    struct train_comm comm = {.ctx = &ctx, .allreduce = mpi_allreduce};
    MPI_Comm_rank(MPI_COMM_WORLD, &comm.rank);
    ctx.rank = comm.rank;
    MPI_Comm_size(MPI_COMM_WORLD, &comm.size);
    /* hierarchical averaging: the ranks of this rank's group, a communicator of their own */
    struct mpi_ctx group_ctx = ctx;
    struct train_comm group = {.ctx = &group_ctx, .allreduce = mpi_allreduce};
    if (o.group_size > 1) {
        if (comm.size % o.group_size) {
            if (comm.rank == 0)
                log_message(LOG_LEVEL_ERROR, __func__, __FILE__, __LINE__,
                            "--group-size=%d: must divide the %d ranks", o.group_size, comm.size);
            MPI_Finalize();
            return 1;
        }
        MPI_Comm_split(MPI_COMM_WORLD, comm.rank / o.group_size, comm.rank, &group_ctx.comm);
        MPI_Comm_rank(group_ctx.comm, &group.rank);
        MPI_Comm_size(group_ctx.comm, &group.size);
        comm.group = &group;
    }
    /* threads, one GPU per rank on a node (--use-gpu), the precision: the ranks agree */
    int dev = matrix_cli_apply_ranks(&c.train.mc, comm.rank, node_rank(), mpi_all_min, NULL);
    if (dev) {
        if (dev < 0)
            log_message(LOG_LEVEL_ERROR, __func__, __FILE__, __LINE__, "rank %d: %s", comm.rank,
                        error_get());
        MPI_Finalize();
        return 1;
    }
#if HAVE_CUDA
    if (matrix_default_device == MATRIX_GPU && nccl_setup(&ctx, comm.rank, comm.size))
        die_alone("rank %d: %s", comm.rank, error_get());
    if (matrix_default_device == MATRIX_GPU && comm.group &&
        nccl_setup(&group_ctx, group.rank, group.size))
        die_alone("rank %d: the group's NCCL communicator: %s", comm.rank, error_get());
#endif
    char *egs = replace_job(argv[2], comm.rank + 1);
    char *state_rx = *c.state_in ? replace_job(c.state_in, comm.rank + 1) : NULL;
    char *state_wx = *c.state_out ? replace_job(c.state_out, comm.rank + 1) : NULL;
    o.state_rxfilename = state_rx;
    o.state_wxfilename = state_wx;
    struct nnet *n = nnet_read_file(argv[1]);
    int ok = 0, read_ok = n != NULL;
    watchdog_arm(ctx.timeout, 1, "rank %d: the start (every rank reads its model)", comm.rank);
    MPI_Allreduce(MPI_IN_PLACE, &read_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    watchdog_disarm();
    if (!read_ok) { /* every rank leaves, the ones that failed say why */
        if (!n)
            log_message(LOG_LEVEL_ERROR, __func__, __FILE__, __LINE__,
                        "rank %d: cannot read model '%s': %s", comm.rank, argv[1], error_get());
        goto done;
    }
    if (c.train.max_change > 0) nnet_set_max_change(n, c.train.max_change);
    if (o.train.gaf_microbatches > 0 && comm.size * o.train.gaf_microbatches < 2) {
        if (comm.rank == 0)
            log_message(LOG_LEVEL_ERROR, __func__, __FILE__, __LINE__,
                        "GAF needs at least 2 microbatches per update: %d rank(s) x "
                        "--gaf-microbatches=%d", comm.size, o.train.gaf_microbatches);
        goto done;
    }
    if (comm.rank == 0)
        LOG("%d ranks, mode %s, exchange every %d minibatches, %d examples per minibatch per "
            "rank, %d parameters", comm.size, c.mode,
            o.mode == TRAIN_SYNC_STEPS   ? 1
            : o.mode == TRAIN_SYNC_PARLE ? o.parle_inner_steps
                                         : o.average_every,
            o.train.minibatch_size, nnet_num_params(n));
    if (comm.rank == 0 && o.bmuf.on)
        LOG("block momentum %g (%s), block learning rate %g, from %s",
            bmuf_resolve_momentum(&o.bmuf, comm.size), o.bmuf.nesterov ? "Nesterov" : "classic",
            o.bmuf.learning_rate,
            o.bmuf_state_rxfilename ? o.bmuf_state_rxfilename : "zero momentum");
    if (comm.rank == 0 && (o.warmup_steps > 0 || o.group_size > 1))
        LOG("post-local SGD: %lld synchronous minibatches (%lld before this pass); groups of %d "
            "ranks averaging every %d minibatches", o.warmup_steps, o.minibatch_offset,
            o.group_size, o.group_average_every);
    if (comm.rank == 0 && (o.train.momentum > 0 || o.train.weight_decay > 0))
        LOG("momentum %g%s, weight decay %g", o.train.momentum,
            o.train.nesterov ? " (Nesterov)" : "", o.train.weight_decay);
    if (comm.rank == 0 && o.train.gaf_microbatches > 0)
        LOG("GAF on %s: %d microbatches per update (%d per rank), threshold %g, %s fusion",
            o.train.gaf_on_steps ? "steps" : "raw gradients",
            comm.size * o.train.gaf_microbatches, o.train.gaf_microbatches,
            o.train.gaf_threshold, c.train.gaf_fusion);

    struct train_sync_stats st;
    ok = train_sync(n, egs, &o, &comm, &st) == 0; /* the same on every rank */
    if (!ok) log_message(LOG_LEVEL_ERROR, __func__, __FILE__, __LINE__, "%s", error_get());
    if (ok && st.total.num_egs == 0) {
        if (comm.rank == 0) WARN("no examples in '%s' (on some rank): nothing trained", argv[2]);
        ok = 0;
    }
    if (ok && comm.rank == 0 && nnet_write_file(n, argv[3], c.train.binary)) {
        log_message(LOG_LEVEL_ERROR, __func__, __FILE__, __LINE__, "cannot write '%s': %s",
                    argv[3], error_get());
        ok = 0;
    }
    watchdog_arm(ctx.timeout, 1, "rank %d: the end (rank 0 writes the model)", comm.rank);
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    watchdog_disarm();
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
done:
    nnet_free(n);
    free(egs);
    free(state_rx);
    free(state_wx);
#if HAVE_CUDA
    if (ctx.have_nccl) ncclCommDestroy(ctx.nccl);
    if (group_ctx.have_nccl) ncclCommDestroy(group_ctx.nccl);
#endif
    if (comm.group) MPI_Comm_free(&group_ctx.comm);
    watchdog_arm(ctx.timeout, ok ? 0 : 1, "rank %d: MPI_Finalize", comm.rank);
    MPI_Finalize();
    return ok ? 0 : 1;
}
