/* train_sync_options: defaults, and nnet-train-mpi's option groups (train.h). */
#include "update/update.h"
#include "train/train.h"

#include <string.h>

void train_sync_options_default(struct train_sync_options *o) {
    memset(o, 0, sizeof *o);
    train_options_default(&o->train);
    o->mode = TRAIN_SYNC_PARAMS;
    o->average_every = 8;
    o->check_sync = 0;
    o->elastic_alpha = 0;
    o->parle_inner_steps = 25;
    o->parle_gamma = 0.01f;
    o->parle_rho = 0.01f;
    o->parle_gamma_max = 1;
    o->parle_rho_max = 10;
    o->parle_ema = 0.75f;
    o->parle_minibatches_per_epoch = 0;
    o->parle_step_offset = 0;
    o->parle_scope_per_step = 0;
    o->bmuf = (struct bmuf_options){.momentum = -1, .learning_rate = 1, .nesterov = 1};
    o->group_size = 1;
}

int train_sync_cli_register(struct train_sync_cli *c, struct train_sync_options *o,
                            struct option_spec *specs) {
    memset(c, 0, sizeof *c);
    train_sync_options_default(o);
    c->o = o;
    c->mode = "";
    c->state_in = c->state_out = "";
    int n = 0;
    OPTION("mode", OPT_STRING, &c->mode,
           "params: average the parameters every --average-every minibatches (local SGD); "
           "gradients: sum the ranks' steps every minibatch (synchronous SGD)");
    OPTION("average-every", OPT_INT, &o->average_every,
           "Minibatches between parameter averages in params mode (0: only at the end)");
    OPTION("check-sync", OPT_BOOL, &o->check_sync,
           "After every exchange, check that all ranks hold bitwise the same parameters");
    /* train_cli_register resets o->train to its defaults: keep the mode's defaults above */
    n += train_cli_register(&c->train, &o->train,
                            TRAIN_CLI_COMMON | TRAIN_CLI_GAF | TRAIN_CLI_MOMENTUM, 1, specs + n);
    /* Parle and EASGD */
    OPTION("elastic-alpha", OPT_FLOAT, &o->elastic_alpha,
           "elastic: alpha of the exchange every --average-every minibatches (0: 0.9 / N)");
    OPTION("parle-inner-steps", OPT_INT, &o->parle_inner_steps,
           "parle: L, minibatches per exchange");
    OPTION("parle-gamma", OPT_FLOAT, &o->parle_gamma,
           "parle: initial gamma-coupling of the inner iterate to the anchor (x learning rate)");
    OPTION("parle-rho", OPT_FLOAT, &o->parle_rho,
           "parle: initial rho-coupling to the mean, before the reference's factor L x N");
    OPTION("parle-gamma-max", OPT_FLOAT, &o->parle_gamma_max, "parle: cap on gamma");
    OPTION("parle-rho-max", OPT_FLOAT, &o->parle_rho_max, "parle: cap on rho");
    OPTION("parle-ema", OPT_FLOAT, &o->parle_ema, "parle: EMA factor alpha of z");
    OPTION("parle-minibatches-per-epoch", OPT_INT, &c->nb,
           "parle: nb of the scoping (1 + 0.5/nb)^(t/L), per rank (0: no scoping)");
    OPTION("parle-step-offset", OPT_INT, &c->step_offset,
           "parle: inner steps taken before this pass (the scoping counter's start)");
    OPTION("parle-scope-per-step", OPT_INT, &o->parle_scope_per_step,
           "parle: scoping counter's advance per inner step (0: the network's parameter tensors, "
           "2 per updatable component, as the reference code; 1: the README's t/L)");
    OPTION("state-in", OPT_STRING, &c->state_in,
           "Each rank's optimiser state from the previous pass (JOB = rank + 1): velocity, and "
           "the replica, anchor, EMA, t in elastic/parle modes");
    OPTION("state-out", OPT_STRING, &c->state_out,
           "Write each rank's state at the end (JOB = rank + 1)");
    /* params mode: block momentum, post-local SGD, hierarchical averaging (train.h) */
    n += bmuf_cli_register(&c->bmuf, &o->bmuf, specs + n);
    OPTION("warmup-steps", OPT_INT, &c->warmup_steps,
           "params: post-local SGD: the run's first W minibatches apply the mean of the ranks' "
           "steps (synchronous), local SGD after (0: off)");
    OPTION("minibatch-offset", OPT_INT, &c->minibatch_offset,
           "params: minibatches per rank trained in earlier passes (for --warmup-steps)");
    OPTION("group-size", OPT_INT, &o->group_size,
           "params: hierarchical averaging: groups of G consecutive ranks (a node) average every "
           "--group-average-every minibatches (1: off; G must divide the ranks)");
    OPTION("group-average-every", OPT_INT, &o->group_average_every,
           "params: minibatches between the averages within a group (with --group-size)");
    ASSERT(n <= TRAIN_SYNC_CLI_MAX_SPECS);
    return n;
}

int train_sync_cli_check(struct train_sync_cli *c) {
    struct train_sync_options *o = c->o;
    struct train_options *t = &o->train;
    if (!*c->mode) c->mode = t->gaf_microbatches > 0 ? "gradients" : "params";
    if (!strcmp(c->mode, "params")) o->mode = TRAIN_SYNC_PARAMS;
    else if (!strcmp(c->mode, "gradients")) o->mode = TRAIN_SYNC_STEPS;
    else if (!strcmp(c->mode, "elastic")) o->mode = TRAIN_SYNC_ELASTIC;
    else if (!strcmp(c->mode, "parle")) o->mode = TRAIN_SYNC_PARLE;
    else
        return error_set("--mode must be params, gradients, elastic or parle, not '%s'",
                         c->mode);
    int replica = o->mode == TRAIN_SYNC_ELASTIC || o->mode == TRAIN_SYNC_PARLE;
    if (t->momentum < 0)
        t->momentum = o->mode == TRAIN_SYNC_PARLE     ? 0.9f
                      : o->mode == TRAIN_SYNC_ELASTIC ? 0.99f
                                                      : 0;
    const char *nesterov = c->train.nesterov;
    if (!strcmp(nesterov, "auto")) t->nesterov = replica && t->momentum > 0;
    else if (!strcmp(nesterov, "true") || !strcmp(nesterov, "false"))
        t->nesterov = *nesterov == 't';
    else return error_set("--nesterov='%s': expected true, false or auto", nesterov);
    if (momentum_check(t->momentum, t->nesterov, t->weight_decay)) return -1;
    o->parle_minibatches_per_epoch = c->nb;
    o->parle_step_offset = c->step_offset;
    if (o->mode == TRAIN_SYNC_PARLE &&
        (o->parle_inner_steps < 1 || !(o->parle_gamma >= 0) || !(o->parle_rho >= 0) ||
         !(o->parle_gamma_max >= 0) || !(o->parle_rho_max >= 0) ||
         !(o->parle_ema >= 0 && o->parle_ema < 1) || c->nb < 0 || c->step_offset < 0 ||
         o->parle_scope_per_step < 0))
        return error_set("parle: --parle-inner-steps must be at least 1, --parle-scope-per-step, "
                         "the couplings and caps not negative, --parle-ema in [0, 1), "
                         "--parle-minibatches-per-epoch and --parle-step-offset not negative");
    if (o->mode == TRAIN_SYNC_ELASTIC && (o->average_every < 1 || !(o->elastic_alpha >= 0)))
        return error_set("elastic: --average-every (tau) must be at least 1 and --elastic-alpha "
                         "not negative");
    if (train_cli_check(&c->train)) return -1;
    if (t->gaf_microbatches > 0 && o->mode != TRAIN_SYNC_STEPS)
        return error_set("--gaf-microbatches needs --mode=gradients (the ranks apply one common "
                         "update)");
    if (o->average_every < 0) return error_set("--average-every must be at least 0");
    if (bmuf_cli_check(&c->bmuf)) return -1;
    o->bmuf_state_rxfilename = *c->bmuf.state_in ? c->bmuf.state_in : NULL;
    o->bmuf_state_wxfilename = *c->bmuf.state_out ? c->bmuf.state_out : NULL;
    o->warmup_steps = c->warmup_steps;
    o->minibatch_offset = c->minibatch_offset;
    if (c->warmup_steps < 0 || c->minibatch_offset < 0)
        return error_set("--warmup-steps and --minibatch-offset must not be negative");
    if (o->group_size < 1) return error_set("--group-size must be at least 1");
    if (o->group_size > 1 && o->group_average_every < 1)
        return error_set("--group-size=%d needs --group-average-every of at least 1",
                         o->group_size);
    if (o->group_size == 1 && o->group_average_every != 0)
        return error_set("--group-average-every needs --group-size above 1");
    if (o->mode != TRAIN_SYNC_PARAMS &&
        (o->bmuf.on || o->warmup_steps > 0 || o->group_size > 1))
        return error_set("--bmuf, --warmup-steps and --group-size need --mode=params");
    return 0;
}

void train_sync_log_start(const struct train_sync_cli *c, int size, const struct nnet *n) {
    const struct train_sync_options *o = c->o;
    const struct train_options *t = &o->train;
    LOG("%d ranks, mode %s, exchange every %d minibatches, %d examples per minibatch per rank, "
        "%d parameters", size, c->mode,
        o->mode == TRAIN_SYNC_STEPS   ? 1
        : o->mode == TRAIN_SYNC_PARLE ? o->parle_inner_steps
                                      : o->average_every,
        t->minibatch_size, nnet_num_params(n));
    if (o->bmuf.on)
        LOG("block momentum %g (%s), block learning rate %g, from %s",
            bmuf_resolve_momentum(&o->bmuf, size), o->bmuf.nesterov ? "Nesterov" : "classic",
            o->bmuf.learning_rate,
            o->bmuf_state_rxfilename ? o->bmuf_state_rxfilename : "zero momentum");
    if (o->warmup_steps > 0 || o->group_size > 1)
        LOG("post-local SGD: %lld synchronous minibatches (%lld before this pass); groups of %d "
            "ranks averaging every %d minibatches", o->warmup_steps, o->minibatch_offset,
            o->group_size, o->group_average_every);
    if (t->momentum > 0 || t->weight_decay > 0)
        LOG("momentum %g%s, weight decay %g", t->momentum, t->nesterov ? " (Nesterov)" : "",
            t->weight_decay);
    if (t->gaf_microbatches > 0)
        LOG("GAF on %s: %d microbatches per update (%d per rank), threshold %g, %s fusion",
            t->gaf_on_steps ? "steps" : "raw gradients", size * t->gaf_microbatches,
            t->gaf_microbatches, t->gaf_threshold, c->train.gaf_fusion);
}

void train_sync_log_summary(const struct train_sync_options *o,
                            const struct train_sync_stats *st, int size, struct nnet *n) {
    const struct train_stats *t = &st->total;
    double loop = st->local.seconds > 0 ? st->local.seconds : 1e-9;
    LOG("Trained on %lld examples (%lld frames, %lld minibatches over %d ranks, %lld steps "
        "skipped) in %.1f s, %.0f frames/s; accuracy %.4f", t->num_egs, t->num_frames,
        t->num_minibatches, size, t->num_skipped, t->seconds,
        t->num_frames / (t->seconds > 0 ? t->seconds : 1), t->correct / t->weight);
    LOG("Exchanges (rank 0): %lld all-reduces of the %s, %.3f MB of payload per rank, "
        "%.3f s (%.1f%% of the loop); %.3f s (%.1f%%) in the per-minibatch flag all-reduce",
        st->num_exchanges, train_sync_exchanged(o), st->exchange_bytes / 1e6,
        st->exchange_seconds, 100 * st->exchange_seconds / loop, st->flag_seconds,
        100 * st->flag_seconds / loop);
    if (o->mode == TRAIN_SYNC_PARLE)
        LOG("Parle: %lld outer steps; scoping counter t=%lld, gamma %.4g, rho %.4g at the end",
            t->outer_steps, st->parle_steps, st->parle_gamma, st->parle_rho);
    if (o->check_sync)
        LOG("Checked: all %d ranks held bitwise the same parameters after each of the %lld "
            "exchanges", size, st->num_exchanges);
    if (o->train.gaf_microbatches > 0)
        LOG("GAF: %lld steps, %lld skipped (nothing agreed), %lld updates; accept rate %.4f "
            "(%lld of %lld microbatches after the first of each step)", t->gaf_steps,
            t->gaf_skipped, t->num_updates,
            t->gaf_offered ? (double)t->gaf_accepted / t->gaf_offered : 0.0, t->gaf_accepted,
            t->gaf_offered);
    nnet_log_max_change_stats(n); /* rank 0's steps */
    if (st->num_stopped_early)
        LOG("%lld rank(s) stopped with examples left (the shortest archive ends the pass)",
            st->num_stopped_early);
    LOG("[this line is to be parsed by a script:] log-prob-per-frame=%.6f",
        t->objf / t->weight);
}
