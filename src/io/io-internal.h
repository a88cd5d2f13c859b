/* Helpers shared by the io sources; not part of the public contract. */
#ifndef PARNET_IO_IO_INTERNAL_H
#define PARNET_IO_IO_INTERNAL_H

#include "io/io.h"

/* (Re)initialise a host matrix; 0 x 0 (no storage) when either dimension is zero. */
void io_matrix_host(struct matrix *m, int rows, int cols);

/* 0 if `bytes` more bytes can exist in the stream (checked when its size is known), else -1. */
int io_check_bytes(struct kin *in, uint64_t bytes, const char *what);
/* Read `bytes` bytes into a new malloc'd buffer; with an unknown stream size and a large request
 * the buffer grows only as data arrives. NULL (error_set) on truncation. */
unsigned char *io_read_alloc(struct kin *in, size_t bytes, const char *what);

/* Reposition a plain-file input (KIN_FILE) at an absolute byte offset. */
int kin_seek(struct kin *in, int64_t offset);

#endif
