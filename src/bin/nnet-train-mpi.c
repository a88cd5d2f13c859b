/* nnet-train-mpi: synchronous data-parallel training under mpirun/srun (train.h: train_sync).
 * The only MPI code of parnet: this file is compiled with mpicc and -DHAVE_MPI=1 and hands
 * train_sync an all-reduce (MPI on the host, the matrix layer's device communicator for GPU
 * buffers); the library never links against MPI. */
#include <limits.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "train/train.h"

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
    "--momentum/--nesterov/--weight-decay apply in every mode (update.h).\n"
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
    struct matrix_device_comm *device; /* GPU buffers' sums; NULL when the ranks use CPUs */
};

static int mpi_allreduce_now(struct mpi_ctx *c, void *data, size_t count, enum comm_type type,
                             enum comm_op op, int device) {
    if (type == COMM_FLOAT && op == COMM_SUM) { /* where data is on the GPU, summed there */
        int rc = matrix_device_comm_sum(c->device, data, count, device);
        if (rc != 1) return rc;
    }
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

static void mpi_bcast(void *ctx, void *buf, int bytes) {
    MPI_Bcast(buf, bytes, MPI_BYTE, 0, ((struct mpi_ctx *)ctx)->comm);
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

/* An error only this rank knows of: a collective exit would hang the others, so abort the job. */
#define die_alone(...) \
    do { \
        log_message(LOG_LEVEL_ERROR, __func__, __FILE__, __LINE__, __VA_ARGS__); \
        MPI_Abort(MPI_COMM_WORLD, 1); \
        exit(1); \
    } while (0)
#define log_error(...) log_message(LOG_LEVEL_ERROR, __func__, __FILE__, __LINE__, __VA_ARGS__)

/* The ranks: every rank's communicator, its group's (hierarchical averaging), and their device
 * communicators. */
struct ranks {
    struct mpi_ctx ctx, group_ctx;
    struct train_comm comm, group;
};

/* After MPI_Init: the communicators, then threads, device (one GPU per rank on a node) and
 * precision by one matrix-layer call the ranks agree on. 0, or 1 after the error was said once. */
static int ranks_open(struct ranks *k, int group_size, const struct matrix_cli *mc,
                      double timeout) {
    memset(k, 0, sizeof *k);
    k->ctx = (struct mpi_ctx){.comm = MPI_COMM_WORLD, .timeout = timeout};
    k->comm = (struct train_comm){.ctx = &k->ctx, .allreduce = mpi_allreduce};
    MPI_Comm_rank(MPI_COMM_WORLD, &k->comm.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &k->comm.size);
    k->ctx.rank = k->comm.rank;
    k->group_ctx = k->ctx;
    k->group = (struct train_comm){.ctx = &k->group_ctx, .allreduce = mpi_allreduce};
    if (group_size > 1) {
        if (k->comm.size % group_size) {
            if (k->comm.rank == 0)
                log_error("--group-size=%d: must divide the %d ranks", group_size, k->comm.size);
            return 1;
        }
        MPI_Comm_split(MPI_COMM_WORLD, k->comm.rank / group_size, k->comm.rank,
                       &k->group_ctx.comm);
        MPI_Comm_rank(k->group_ctx.comm, &k->group.rank);
        MPI_Comm_size(k->group_ctx.comm, &k->group.size);
        k->comm.group = &k->group;
    }
    int dev = matrix_cli_apply_ranks(mc, k->comm.rank, node_rank(), mpi_all_min, NULL);
    if (dev) {
        if (dev < 0) log_error("rank %d: %s", k->comm.rank, error_get());
        return 1;
    }
    if (matrix_device_comm_new(&k->ctx.device, k->comm.rank, k->comm.size, mpi_bcast, &k->ctx))
        die_alone("rank %d: %s", k->comm.rank, error_get());
    if (k->comm.group && matrix_device_comm_new(&k->group_ctx.device, k->group.rank,
                                                k->group.size, mpi_bcast, &k->group_ctx))
        die_alone("rank %d: the group's NCCL communicator: %s", k->comm.rank, error_get());
    return 0;
}

static void ranks_close(struct ranks *k) {
    matrix_device_comm_free(k->ctx.device);
    matrix_device_comm_free(k->group_ctx.device);
    if (k->comm.group) MPI_Comm_free(&k->group_ctx.comm);
}

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

/* Every rank reads the model (they agree), trains, rank 0 writes: 1 on every rank if all went
 * well, else 0 (each failing rank said why). */
static int train(struct train_sync_cli *c, const struct ranks *k, const char *model_in,
                 const char *egs_spec, const char *model_out) {
    struct train_sync_options *o = c->o;
    const struct train_comm *comm = &k->comm;
    struct nnet *n = nnet_read_file(model_in);
    int ok = 0, read_ok = n != NULL;
    watchdog_arm(k->ctx.timeout, 1, "rank %d: the start (every rank reads its model)", comm->rank);
    MPI_Allreduce(MPI_IN_PLACE, &read_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    watchdog_disarm();
    if (!read_ok) { /* every rank leaves, the ones that failed say why */
        if (!n) log_error("rank %d: cannot read model '%s': %s", comm->rank, model_in, error_get());
        nnet_free(n);
        return 0;
    }
    if (c->train.max_change > 0) nnet_set_max_change(n, c->train.max_change);
    if (o->train.gaf_microbatches > 0 && comm->size * o->train.gaf_microbatches < 2) {
        if (comm->rank == 0)
            log_error("GAF needs at least 2 microbatches per update: %d rank(s) x "
                      "--gaf-microbatches=%d", comm->size, o->train.gaf_microbatches);
        nnet_free(n);
        return 0;
    }
    if (comm->rank == 0) train_sync_log_start(c, comm->size, n);
    char *egs = replace_job(egs_spec, comm->rank + 1);
    struct train_sync_stats st;
    ok = train_sync(n, egs, o, comm, &st) == 0; /* the same on every rank */
    free(egs);
    if (!ok) log_error("%s", error_get());
    if (ok && st.total.num_egs == 0) {
        if (comm->rank == 0) WARN("no examples in '%s' (on some rank): nothing trained", egs_spec);
        ok = 0;
    }
    if (ok && comm->rank == 0 && nnet_write_file(n, model_out, c->train.binary)) {
        log_error("cannot write '%s': %s", model_out, error_get());
        ok = 0;
    }
    watchdog_arm(k->ctx.timeout, 1, "rank %d: the end (rank 0 writes the model)", comm->rank);
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    watchdog_disarm();
    if (ok && comm->rank == 0) train_sync_log_summary(o, &st, comm->size, n);
    nnet_free(n);
    return ok;
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
    options_parse_args(&argc, argv, usage, specs, num_specs, 3, 3);
    if (train_sync_cli_check(&c)) die("%s", error_get());

    MPI_Init(&argc, &argv);
    struct ranks k;
    if (ranks_open(&k, o.group_size, &c.train.mc, comm_timeout)) {
        MPI_Finalize();
        return 1;
    }
    int job = k.comm.rank + 1;
    char *state_rx = *c.state_in ? replace_job(c.state_in, job) : NULL;
    char *state_wx = *c.state_out ? replace_job(c.state_out, job) : NULL;
    o.state_rxfilename = state_rx;
    o.state_wxfilename = state_wx;
    int ok = train(&c, &k, argv[1], argv[2], argv[3]);
    free(state_rx);
    free(state_wx);
    ranks_close(&k);
    watchdog_arm(comm_timeout, ok ? 0 : 1, "rank %d: MPI_Finalize", k.comm.rank);
    MPI_Finalize();
    return ok ? 0 : 1;
}
