/* nnet-average's methods as tables (models.h), and block momentum over files. */
#include "models/models.h"

#include <stdio.h>
#include <string.h>

struct nnet *average_bmuf_files(const char *const *rxfilenames, int num, const float *weights,
                                const char *previous_rxfilename, const struct bmuf_options *o,
                                const char *state_in, const char *state_out) {
    struct nnet *start = nnet_read_file(previous_rxfilename), *avg = NULL;
    if (!start) return error_wrap("cannot read model '%s': ", previous_rxfilename), NULL;
    struct vector s = nnet_params(start), m;
    vector_init(&m, s.dim);
    float eta = bmuf_resolve_momentum(o, num);
    if (state_in && *state_in && bmuf_state_read(state_in, &m, num, o->nesterov)) goto fail;
    if (!(avg = average_model_files(rxfilenames, num, weights))) goto fail;
    if (nnet_check_same_structure(start, avg)) {
        error_wrap("model '%s' does not have the structure of '%s': ", rxfilenames[0],
                   previous_rxfilename);
        goto fail;
    }
    struct vector a = nnet_params(avg);
    bmuf_update(&s, &m, &a, eta, o->learning_rate, o->nesterov);
    if (!vector_is_finite(&s)) {
        error_set("the block-momentum update is not finite");
        goto fail;
    }
    if (state_out && bmuf_state_write(state_out, &m, num, eta, o->learning_rate, o->nesterov))
        goto fail;
    nnet_free(avg);
    vector_release(&m);
    return start;
fail:
    nnet_free(avg);
    nnet_free(start);
    vector_release(&m);
    return NULL;
}

/* ---- the methods ---- */

static int plain_wanted(const struct average_request *r) { return 1; }
static int plain_check(const struct average_request *r) {
    if (*r->previous) return error_set("--previous-model needs --agreement-threshold or --bmuf");
    return 0;
}
static struct nnet *plain_run(const struct average_request *r, char *summary, size_t size) {
    snprintf(summary, size, "Averaged %d models", r->num);
    return average_model_files(r->models, r->num, r->weights);
}
static const struct average_method plain = {"plain", plain_wanted, plain_check, plain_run};

static int agreement_wanted(const struct average_request *r) { return r->tau >= 0; }
static int agreement_check(const struct average_request *r) {
    if (!*r->previous) return error_set("--agreement-threshold needs --previous-model");
    return 0;
}
static struct nnet *agreement_run(const struct average_request *r, char *summary, size_t size) {
    int kept = 0;
    struct nnet *n = average_model_files_agreement(r->models, r->num, r->weights, r->previous,
                                                   r->tau, &kept);
    snprintf(summary, size, "Averaged %d of %d models (job-level agreement, threshold %g)", kept,
             r->num, r->tau);
    return n;
}
static const struct average_method agreement = {"agreement", agreement_wanted, agreement_check,
                                                agreement_run};

static int elastic_wanted(const struct average_request *r) {
    return r->alpha != 0 || *r->center;
}
static int elastic_check(const struct average_request *r) {
    if (!(r->alpha > 0) || !*r->center)
        return error_set("--elastic-alpha (> 0) and --elastic-center go together");
    if (r->alpha * r->num > 1) return error_set("--elastic-alpha must lie in [0, 1/num-models]");
    if (r->weights) return error_set("--weights does not apply to --elastic-alpha");
    return 0;
}
static struct nnet *elastic_run(const struct average_request *r, char *summary, size_t size) {
    snprintf(summary, size, "Moved the centre '%s' by alpha=%g toward %d models", r->center,
             r->alpha, r->num);
    return average_elastic_center_files(r->center, r->models, r->num, r->alpha);
}
static const struct average_method elastic = {"elastic", elastic_wanted, elastic_check,
                                              elastic_run};

static int bmuf_wanted(const struct average_request *r) { return r->bmuf.on; }
static int bmuf_check(const struct average_request *r) {
    if (!*r->previous)
        return error_set("--bmuf needs --previous-model (the model the jobs started from)");
    if (!*r->bmuf_state_out) return error_set("--bmuf needs --block-state-out");
    return 0;
}
static struct nnet *bmuf_run(const struct average_request *r, char *summary, size_t size) {
    float eta = bmuf_resolve_momentum(&r->bmuf, r->num);
    snprintf(summary, size, "Block momentum over %d models (eta %g, zeta %g, %s, from %s)",
             r->num, eta, r->bmuf.learning_rate, r->bmuf.nesterov ? "Nesterov" : "classic",
             *r->bmuf_state_in ? r->bmuf_state_in : "zero momentum");
    return average_bmuf_files(r->models, r->num, r->weights, r->previous, &r->bmuf,
                              r->bmuf_state_in, r->bmuf_state_out);
}
static const struct average_method bmuf = {"bmuf", bmuf_wanted, bmuf_check, bmuf_run};

const struct average_method *const average_methods[] = {&agreement, &elastic, &bmuf, &plain,
                                                        NULL};

const struct average_method *average_method_select(const struct average_request *r) {
    const struct average_method *chosen = NULL;
    for (int i = 0; average_methods[i]; i++) {
        const struct average_method *m = average_methods[i];
        if (m == &plain && chosen) break;
        if (!m->wanted(r)) continue;
        if (chosen) {
            error_set("the options of %s and %s exclude each other", chosen->name, m->name);
            return NULL;
        }
        chosen = m;
    }
    return chosen->check(r) ? NULL : chosen;
}
