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

/* Append x to v, whose storage holds *cap elements (grown as needed). */
void io_int32_vec_push(struct int32_vec *v, int *cap, int32_t x);
/* Append the integer written in w (text mode), or -1 (kin_error naming w; v released). */
int io_int32_vec_push_word(struct kin *in, struct int32_vec *v, int *cap, const char *w);
/* Kaldi's BasicVectorHolder<int32> after the header: binary, a count then every element with its
 * own size byte; text, the integers to the end of the line. v is released first. */
int io_read_basic_int32_vector(struct kin *in, int binary, struct int32_vec *v);

/* Pairs gathered in any order, then sorted into a struct token_map: token_map_read, an scp, an
 * archive's index for random access. */
struct token_pairs {
    struct token_pair {
        char *key, *value;
    } *p;
    int n, cap;
};
/* Append a pair; b takes both strings. */
void token_pairs_add(struct token_pairs *b, char *key, char *value);
/* Sort b's pairs into m (b is left empty; m holds them all, to token_map_release). With name, a key
 * twice is -1 (error_set "'name': key 'k' appears twice"). */
int token_pairs_sort(struct token_pairs *b, struct token_map *m, const char *name);

/* Reposition a plain-file input (KIN_FILE) at an absolute byte offset. */
int kin_seek(struct kin *in, int64_t offset);

#endif
