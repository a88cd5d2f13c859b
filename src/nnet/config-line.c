/* Config lines "Type key=value ..." as Kaldi nnet2's nnet-init reads them. */
#include "nnet/nnet.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static char *dup_range(const char *s, size_t n) {
    char *r = xmalloc(n + 1);
    memcpy(r, s, n);
    r[n] = 0;
    return r;
}

int config_line_parse(struct config_line *cl, const char *text) {
    memset(cl, 0, sizeof *cl);
    const char *p = text;
    int cap = 0;
    while (*p) {
        while (isspace((unsigned char)*p))
            p++;
        if (!*p) break;
        /* A value runs on over spaces inside parentheses, as nnet3's: input=Sum(a, b). */
        const char *w = p;
        for (int depth = 0; *p && (depth > 0 || !isspace((unsigned char)*p)); p++)
            depth += (*p == '(') - (*p == ')');
        size_t len = (size_t)(p - w);
        if (!cl->type) {
            cl->type = dup_range(w, len);
            continue;
        }
        const char *eq = memchr(w, '=', len);
        if (!eq || eq == w) {
            char *word = dup_range(w, len);
            error_set("expected key=value, got '%s'", word);
            free(word);
            config_line_release(cl);
            return -1;
        }
        char *key = dup_range(w, (size_t)(eq - w));
        for (int i = 0; i < cl->num; i++) {
            if (!strcmp(cl->keys[i], key)) {
                error_set("key '%s' given twice", key);
                free(key);
                config_line_release(cl);
                return -1;
            }
        }
        if (cl->num == cap) {
            cap = cap ? 2 * cap : 8;
            cl->keys = xrealloc(cl->keys, cap * sizeof *cl->keys);
            cl->values = xrealloc(cl->values, cap * sizeof *cl->values);
            cl->used = xrealloc(cl->used, cap * sizeof *cl->used);
        }
        cl->keys[cl->num] = key;
        cl->values[cl->num] = dup_range(eq + 1, len - (size_t)(eq + 1 - w));
        cl->used[cl->num] = 0;
        cl->num++;
    }
    if (!cl->type) return error_set("empty config line");
    return 0;
}

void config_line_release(struct config_line *cl) {
    for (int i = 0; i < cl->num; i++) {
        free(cl->keys[i]);
        free(cl->values[i]);
    }
    free(cl->keys);
    free(cl->values);
    free(cl->used);
    free(cl->type);
    memset(cl, 0, sizeof *cl);
}

static const char *lookup(struct config_line *cl, const char *key) {
    for (int i = 0; i < cl->num; i++) {
        if (!strcmp(cl->keys[i], key)) {
            cl->used[i] = 1;
            return cl->values[i];
        }
    }
    return NULL;
}

int config_get_int(struct config_line *cl, const char *key, int *out) {
    const char *v = lookup(cl, key);
    if (!v) return 0;
    if (parse_int(v, out)) return error_wrap("key '%s': ", key);
    return 1;
}

int config_get_float(struct config_line *cl, const char *key, float *out) {
    const char *v = lookup(cl, key);
    if (!v) return 0;
    if (parse_float(v, out)) return error_wrap("key '%s': ", key);
    return 1;
}

int config_get_string(struct config_line *cl, const char *key, const char **out) {
    const char *v = lookup(cl, key);
    if (!v) return 0;
    if (!*v) return error_set("key '%s': empty value", key);
    *out = v;
    return 1;
}

int config_get_bool(struct config_line *cl, const char *key, int *out) {
    const char *v = lookup(cl, key);
    if (!v) return 0;
    if (!strcmp(v, "true") || !strcmp(v, "1")) *out = 1;
    else if (!strcmp(v, "false") || !strcmp(v, "0")) *out = 0;
    else return error_set("key '%s': expected true or false, got '%s'", key, v);
    return 1;
}

/* Kaldi nnet2 separates a list with ':' (context=-2:0:2), nnet3 with ',' (time-offsets=-2,0,2):
 * either is read. */
int config_get_int_list(struct config_line *cl, const char *key, int **out, int *num) {
    const char *v = lookup(cl, key);
    if (!v) return 0;
    int n = 1;
    for (const char *p = v; *p; p++)
        n += *p == ':' || *p == ',';
    int *list = xmalloc(n * sizeof *list);
    const char *p = v;
    for (int i = 0; i < n; i++) {
        const char *e = strpbrk(p, ":,");
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char *item = dup_range(p, len);
        int bad = parse_int(item, &list[i]);
        free(item);
        if (bad) {
            free(list);
            return error_wrap("key '%s': ", key);
        }
        p = e ? e + 1 : p + len;
    }
    *out = list;
    *num = n;
    return 1;
}

int config_check_unused(const struct config_line *cl) {
    for (int i = 0; i < cl->num; i++)
        if (!cl->used[i]) return error_set("unknown key '%s'", cl->keys[i]);
    return 0;
}
