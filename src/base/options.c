/* Kaldi's ParseOptions in C: a table of options, --name=value syntax, --config files. */
#include "base/base.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int parse_bool(const char *s, int *out) {
    if (!strcmp(s, "true") || !strcmp(s, "t") || !strcmp(s, "1")) *out = 1;
    else if (!strcmp(s, "false") || !strcmp(s, "f") || !strcmp(s, "0")) *out = 0;
    else return error_set("invalid boolean '%s' (use true or false)", s);
    return 0;
}

int parse_int(const char *s, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno || v < INT_MIN || v > INT_MAX)
        return error_set("invalid integer '%s'", s);
    *out = (int)v;
    return 0;
}

int parse_double(const char *s, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || *end || errno == ERANGE || !isfinite(v)) return error_set("invalid number '%s'", s);
    *out = v;
    return 0;
}

int parse_float(const char *s, float *out) {
    double v;
    if (parse_double(s, &v)) return -1;
    if (fabs(v) > 3.4e38) return error_set("number '%s' out of float range", s);
    *out = (float)v;
    return 0;
}

int parse_float_list(const char *s, float min_value, float **out, int *num) {
    int n = 1;
    for (const char *p = s; *p; p++) n += *p == ':';
    float *v = xmalloc((size_t)n * sizeof *v);
    const char *item = s;
    for (int k = 0; k < n; k++) {
        const char *end = strchr(item, ':');
        size_t len = end ? (size_t)(end - item) : strlen(item);
        char buf[64];
        int bad = len == 0 || len >= sizeof buf;
        if (!bad) {
            memcpy(buf, item, len);
            buf[len] = 0;
            bad = parse_float(buf, &v[k]) || !(v[k] >= min_value);
        }
        if (bad) {
            free(v);
            return error_set("item %d ('%.*s') of '%s' is not a number >= %g", k + 1, (int)len,
                             item, s, min_value);
        }
        item = end ? end + 1 : item + len;
    }
    *out = v;
    *num = n;
    return 0;
}

/* Built-in options every program shares. */
static int opt_help, opt_print_args = 1;
static const char *opt_config;

static const struct option_spec builtin_specs[] = {
    {"config", OPT_STRING, &opt_config, "Configuration file of --name=value lines"},
    {"help", OPT_BOOL, &opt_help, "Print this help message"},
    {"print-args", OPT_BOOL, &opt_print_args, "Echo the command line to stderr"},
    {"verbose", OPT_INT, &log_verbose, "Verbose level (higher is more logging)"},
};
#define NUM_BUILTINS ((int)(sizeof builtin_specs / sizeof builtin_specs[0]))

static const char *type_name(enum option_type t) {
    switch (t) {
    case OPT_BOOL: return "bool";
    case OPT_INT: return "int";
    case OPT_FLOAT: return "float";
    case OPT_DOUBLE: return "double";
    default: return "string";
    }
}

static void print_default(FILE *f, const struct option_spec *s) {
    switch (s->type) {
    case OPT_BOOL: fprintf(f, "%s", *(int *)s->value ? "true" : "false"); break;
    case OPT_INT: fprintf(f, "%d", *(int *)s->value); break;
    case OPT_FLOAT: fprintf(f, "%g", *(float *)s->value); break;
    case OPT_DOUBLE: fprintf(f, "%g", *(double *)s->value); break;
    default: {
        const char *v = *(const char **)s->value;
        fprintf(f, "\"%s\"", v ? v : "");
    }
    }
}

static void print_usage(const char *usage, const struct option_spec *specs, int n) {
    fprintf(stderr, "\n%s\n", usage);
    fprintf(stderr, "Options:\n");
    for (int i = 0; i < n; i++) {
        fprintf(stderr, "  --%-24s : %s (%s, default = ", specs[i].name, specs[i].help,
                type_name(specs[i].type));
        print_default(stderr, &specs[i]);
        fprintf(stderr, ")\n");
    }
    fprintf(stderr, "\nStandard options:\n");
    for (int i = 0; i < NUM_BUILTINS; i++)
        fprintf(stderr, "  --%-24s : %s (%s)\n", builtin_specs[i].name, builtin_specs[i].help,
                type_name(builtin_specs[i].type));
    fprintf(stderr, "\n");
}

void options_usage_exit(const char *usage, const struct option_spec *specs, int num_specs) {
    print_usage(usage, specs, num_specs);
    exit(2);
}

static const struct option_spec *find_spec(const char *name, size_t len,
                                           const struct option_spec *specs, int n) {
    for (int i = 0; i < n; i++)
        if (strlen(specs[i].name) == len && !strncmp(specs[i].name, name, len)) return &specs[i];
    for (int i = 0; i < NUM_BUILTINS; i++)
        if (strlen(builtin_specs[i].name) == len && !strncmp(builtin_specs[i].name, name, len))
            return &builtin_specs[i];
    return NULL;
}

/* Levenshtein distance between a[0..la) and b[0..lb) (option names: short). */
static int edit_distance(const char *a, size_t la, const char *b, size_t lb) {
    int row[128];
    if (lb >= sizeof row / sizeof row[0]) return INT_MAX;
    for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[lb];
}

/* The option name closest to name (edit distance, a prefix counting as close), or NULL when none
 * is within a third of the name's length (at least 2). */
static const char *closest_option(const char *name, const struct option_spec *specs, int n) {
    const char *best = NULL;
    size_t len = strlen(name);
    int best_d = (int)(len / 3 > 2 ? len / 3 : 2) + 1;
    for (int i = 0; i < n + NUM_BUILTINS; i++) {
        const char *o = i < n ? specs[i].name : builtin_specs[i - n].name;
        size_t lo = strlen(o);
        int d = edit_distance(name, len, o, lo);
        if (len >= 3 && lo > len && !strncmp(o, name, len)) d = 1; /* an abbreviation */
        if (d < best_d) best_d = d, best = o;
    }
    return best;
}

/* Set one option from "name[=value]" (no leading dashes). Returns 0, or -1 with error_set. */
static int set_option(const char *arg, const struct option_spec *specs, int n) {
    const char *eq = strchr(arg, '=');
    size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
    /* Kaldi treats '_' and '-' alike in option names. */
    char name[128];
    if (len == 0 || len >= sizeof name) return error_set("invalid option '--%s'", arg);
    for (size_t i = 0; i < len; i++) name[i] = arg[i] == '_' ? '-' : arg[i];
    name[len] = '\0';
    const struct option_spec *s = find_spec(name, len, specs, n);
    if (!s) {
        const char *close = closest_option(name, specs, n);
        if (close) return error_set("unknown option '--%s' (did you mean --%s?)", name, close);
        return error_set("unknown option '--%s'", name);
    }
    const char *value = eq ? eq + 1 : NULL;
    if (!value) {
        if (s->type != OPT_BOOL) return error_set("option '--%s' needs a value (--%s=...)", name, name);
        *(int *)s->value = 1;
        return 0;
    }
    int rc = 0;
    switch (s->type) {
    case OPT_BOOL: rc = parse_bool(value, (int *)s->value); break;
    case OPT_INT: rc = parse_int(value, (int *)s->value); break;
    case OPT_FLOAT: rc = parse_float(value, (float *)s->value); break;
    case OPT_DOUBLE: rc = parse_double(value, (double *)s->value); break;
    case OPT_STRING: *(const char **)s->value = value; break;
    }
    if (rc) return error_wrap("option '--%s': ", name);
    return 0;
}

/* A config file's lines hold its string options' values for the rest of the program: kept
 * reachable here for as long as it runs (they are never freed, and are not leaks). */
static char **config_lines;
static size_t num_config_lines;

static char *keep_config_line(const char *line) {
    config_lines = xrealloc(config_lines, (num_config_lines + 1) * sizeof *config_lines);
    return config_lines[num_config_lines++] = xstrdup(line);
}

static int read_config(const char *path, const struct option_spec *specs, int n) {
    FILE *f = fopen(path, "r");
    if (!f) return error_set("cannot open config file '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        return error_set("cannot read config file '%s': is a directory", path);
    }
    char line[4096];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        char *p = line, *end;
        while (*p == ' ' || *p == '\t') p++;
        end = p + strlen(p);
        while (end > p && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t'))
            *--end = '\0';
        if (!*p) continue;
        if (strncmp(p, "--", 2)) {
            fclose(f);
            return error_set("config file '%s' line %d: expected --name=value, got '%s'", path,
                             lineno, p);
        }
        if (set_option(keep_config_line(p + 2), specs, n)) {
            fclose(f);
            return error_wrap("config file '%s' line %d: ", path, lineno);
        }
    }
    fclose(f);
    return 0;
}

static void print_args(int argc, char **argv) {
    char buf[8192];
    size_t used = 0;
    for (int i = 0; i < argc && used < sizeof buf - 4; i++) {
        int quote = strpbrk(argv[i], " \t|;&<>()$*?'\"") != NULL;
        used += snprintf(buf + used, sizeof buf - used, quote ? "'%s' " : "%s ", argv[i]);
    }
    if (used > sizeof buf - 1) used = sizeof buf - 1;
    if (used && buf[used - 1] == ' ') used--;
    buf[used] = '\0';
    fprintf(stderr, "%s\n", buf);
}

void options_parse(int *argc, char **argv, const char *usage, const struct option_spec *specs,
                   int num_specs) {
    log_set_program(argv[0]);
    /* Every program's outputs are renamed into place only when it exits with status 0. */
    tempfile_commit_at_exit();
    int orig_argc = *argc, out = 1, ended = 0;
    char **orig = xmalloc(sizeof(char *) * (orig_argc + 1));
    memcpy(orig, argv, sizeof(char *) * orig_argc);
    /* --config is read first so that command-line options win, as in Kaldi. */
    for (int i = 1; i < orig_argc; i++) {
        if (!strcmp(argv[i], "--")) break;
        if (!strncmp(argv[i], "--config=", 9)) {
            if (read_config(argv[i] + 9, specs, num_specs)) {
                fprintf(stderr, "%s: %s\n", log_program(), error_get());
                exit(2);
            }
        }
    }
    for (int i = 1; i < orig_argc; i++) {
        char *a = argv[i];
        if (!ended && !strcmp(a, "--")) {
            ended = 1;
            continue;
        }
        if (!ended && a[0] == '-' && a[1] == '-' && a[2]) {
            if (!strncmp(a, "--config=", 9)) continue;
            if (set_option(a + 2, specs, num_specs)) {
                /* The usage first, the error last (Kaldi): the line the user needs is at the
                 * bottom of the terminal. */
                print_usage(usage, specs, num_specs);
                fprintf(stderr, "%s: %s\n", log_program(), error_get());
                exit(2);
            }
            continue;
        }
        if (!ended && a[0] == '-' && a[1] && a[1] != '-') {
            print_usage(usage, specs, num_specs);
            fprintf(stderr, "%s: unknown option '%s' (options are --name=value)\n", log_program(), a);
            exit(2);
        }
        argv[out++] = a;
    }
    if (opt_help) {
        print_usage(usage, specs, num_specs);
        exit(0);
    }
    if (opt_print_args) print_args(orig_argc, orig);
    free(orig);
    *argc = out;
}

void options_check_limits(const struct option_spec *specs, int num_specs,
                          const struct option_limit *limits, int num_limits) {
    for (int l = 0; l < num_limits; l++) {
        const struct option_spec *sp = NULL;
        for (int i = 0; i < num_specs && !sp; i++)
            if (!strcmp(specs[i].name, limits[l].name)) sp = &specs[i];
        ASSERT(sp && (sp->type == OPT_INT || sp->type == OPT_FLOAT || sp->type == OPT_DOUBLE));
        double v = sp->type == OPT_INT     ? *(const int *)sp->value
                   : sp->type == OPT_FLOAT ? *(const float *)sp->value
                                           : *(const double *)sp->value;
        if (!(v >= limits[l].min && v <= limits[l].max))
            die("--%s=%.15g: must be from %.15g to %.15g", sp->name, v, limits[l].min,
                limits[l].max);
    }
}

void options_parse_args(int *argc, char **argv, const char *usage,
                        const struct option_spec *specs, int num_specs, int min_args,
                        int max_args) {
    options_parse(argc, argv, usage, specs, num_specs);
    int n = *argc - 1;
    if (n < min_args || (max_args >= 0 && n > max_args)) options_usage_exit(usage, specs, num_specs);
}
