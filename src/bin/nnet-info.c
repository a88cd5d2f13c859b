/* nnet-info: print a network's dims, contexts, parameter count and components (as Kaldi's
 * nnet-am-info / raw-nnet-info), with the name and input of those that have them. */
#include "nnet/nnet.h"

static const char usage[] =
    "Print information about a neural network: dims, contexts, parameters, components.\n"
    "Usage:  nnet-info [options] <model-in>\n"
    "e.g.:\n"
    " nnet-info 1.mdl\n";

int main(int argc, char **argv) {
    int print_lrs = 0;
    struct option_spec specs[] = {
        {"print-learning-rates", OPT_BOOL, &print_lrs,
         "Print only the learning rates of the updatable components, colon-separated"},
    };
    int num_specs = (int)(sizeof specs / sizeof specs[0]);
    options_parse_args(&argc, argv, usage, specs, num_specs, 1, 1);
    const char *model_in = argv[1];

    struct nnet *n = nnet_read_file(model_in);
    if (!n) die("cannot read '%s': %s", model_in, error_get());
    int num = nnet_num_components(n);
    if (print_lrs) {
        const char *sep = "";
        for (int i = 0; i < num; i++) {
            const struct component *c = nnet_component(n, i);
            if (!c->ops->updatable) continue;
            printf("%s%g", sep, c->learning_rate);
            sep = ":";
        }
        printf("\n");
    } else {
        printf("num-components %d\n", num);
        printf("num-updatable-components %d\n", nnet_num_updatable(n));
        printf("left-context %d\n", nnet_left_context(n));
        printf("right-context %d\n", nnet_right_context(n));
        printf("input-dim %d\n", nnet_input_dim(n));
        printf("output-dim %d\n", nnet_output_dim(n));
        printf("parameter-dim %d\n", nnet_num_params(n));
        char buf[1024];
        for (int i = 0; i < num; i++) {
            component_info(nnet_component(n, i), buf, sizeof buf);
            const char *name = nnet_component_name(n, i), *input = nnet_component_input(n, i);
            printf("component %d : %s%s%s%s%s%s\n", i, buf, name || input ? ";" : "",
                   name ? " name=" : "", name ? name : "", input ? " input=" : "",
                   input ? input : "");
        }
    }
    nnet_free(n);
    if (fflush(stdout) || ferror(stdout)) die("error writing to stdout");
    return 0;
}
