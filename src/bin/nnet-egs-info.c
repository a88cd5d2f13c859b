/* nnet-egs-info: count, shapes, storage and label histogram of an example archive. */
#include "egs/egs.h"

static const char *usage =
    "Print a summary of an example archive on stdout: number of examples, input dim, context,\n"
    "frames per example, how inputs are stored, and a histogram of labels (count and total\n"
    "weight per label index). Every input is decoded, so corrupt data is found.\n"
    "\n"
    "Usage:  nnet-egs-info [options] <egs-rspecifier>\n"
    "e.g.:\n"
    "nnet-egs-info ark:egs/egs.1.0.ark\n";

int main(int argc, char **argv) {
    options_parse_args(&argc, argv, usage, NULL, 0, 1, 1);

    struct egs_info info;
    if (egs_info_compute(argv[1], &info)) die("%s", error_get());
    egs_info_print(stdout, &info);
    if (fflush(stdout)) die("cannot write to stdout");
    double mb = info.decoded_bytes / 1e6;
    LOG("Read %lld examples; decoded %.1f MB of input in %.3f s (%.0f MB/s)", info.num_egs, mb,
        info.decode_seconds, info.decode_seconds > 0 ? mb / info.decode_seconds : 0.0);
    long long num = info.num_egs;
    egs_info_release(&info);
    if (num == 0) die("no examples in '%s'", argv[1]);
    return 0;
}
