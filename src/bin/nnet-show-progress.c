/* nnet-show-progress: how much each updatable component changed between two models (Kaldi's
 * nnet-show-progress, without its gradient part). */
#include "nnet/nnet.h"

#include <stdlib.h>

static const char usage[] =
    "Print the change of the parameters between two models of the same structure, one value per\n"
    "updatable component: the norm of the difference, and that norm relative to the first model's.\n"
    "A component whose relative change stays near 0 is not learning; one near 1 or above per\n"
    "iteration is moving too fast (the learning rate or max-change).\n"
    "Usage:  nnet-show-progress [options] <old-model-in> <new-model-in>\n"
    "e.g.:\n"
    " nnet-show-progress exp/nnet/1.mdl exp/nnet/2.mdl\n";

int main(int argc, char **argv) {
    options_parse_args(&argc, argv, usage, NULL, 0, 2, 2);
    struct nnet *a = nnet_read_file(argv[1]);
    if (!a) die("cannot read '%s': %s", argv[1], error_get());
    struct nnet *b = nnet_read_file(argv[2]);
    if (!b) die("cannot read '%s': %s", argv[2], error_get());
    int num = nnet_num_updatable(a) > 0 ? nnet_num_updatable(a) : 1;
    double *diff = xcalloc(num, sizeof *diff), *rel = xcalloc(num, sizeof *rel);
    if (nnet_param_change(a, b, diff, rel))
        die("'%s' does not have the structure of '%s': %s", argv[2], argv[1], error_get());
    printf("Parameter differences per layer are [");
    for (int k = 0; k < nnet_num_updatable(a); k++) printf(" %g", diff[k]);
    printf(" ]\nRelative parameter differences per layer are [");
    for (int k = 0; k < nnet_num_updatable(a); k++) printf(" %g", rel[k]);
    printf(" ]\n");
    free(diff);
    free(rel);
    nnet_free(a);
    nnet_free(b);
    if (fflush(stdout) || ferror(stdout)) die("error writing to stdout");
    return 0;
}
