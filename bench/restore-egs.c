/* bench/pq-storage.sh's helper: copy an example archive re-storing every input under --compress
 * 8bit with example_recompress alone (no PQ encoder), i.e. as 8bit stored one-row examples before
 * PQ: Kaldi CM3, one range per example. Usage: restore-egs <egs-rspecifier> <egs-wspecifier> */
#include "egs/egs.h"

#include <string.h>

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: restore-egs <egs-rspecifier> <egs-wspecifier>\n");
        return 2;
    }
    struct table_reader r;
    struct table_writer w;
    memset(&r, 0, sizeof r);
    memset(&w, 0, sizeof w);
    if (table_reader_open(&r, argv[1], &holder_example) ||
        table_writer_open(&w, argv[2], &holder_example)) {
        fprintf(stderr, "restore-egs: %s\n", error_get());
        return 1;
    }
    struct example eg;
    example_init(&eg);
    int got, rc = 0;
    while ((got = table_reader_next(&r, &eg)) == 1)
        if (example_recompress(&eg, EGS_COMPRESS_8BIT) ||
            table_writer_write(&w, table_reader_key(&r), &eg)) {
            rc = 1;
            break;
        }
    if (got < 0) rc = 1;
    if (rc) fprintf(stderr, "restore-egs: %s\n", error_get());
    example_release(&eg);
    if (table_reader_close(&r)) rc = 1;
    if (rc) table_writer_abort(&w);
    else if (table_writer_close(&w)) rc = 1;
    return rc;
}
