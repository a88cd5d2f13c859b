/* Shared inside src/egs only (not part of the module's interface). */
#ifndef PARNET_EGS_EGS_INTERNAL_H
#define PARNET_EGS_EGS_INTERNAL_H

#include "egs/egs.h"

/* The rest of an example after its <InputFrames> token, its labels already in eg: the input,
 * <LeftContext>, the optional <SpkInfo> and </NnetExample>. 0, or -1 (kin_error); eg may then
 * hold part of the example (the caller releases it). */
int example_read_tail(struct kin *in, int binary, struct example *eg);

/* Bytes a binary int32 takes (size byte + 4), and a binary label (int32 + float): what bounds a
 * count read from a file by the bytes left. */
#define EGS_BIN_INT32 5
#define EGS_BIN_LABEL 10
/* A count of items read from in, each taking at least bytes_each bytes: 0, or -1 (kin_error) when
 * it is negative, more than the bytes left can hold, or past IO_MAX_ELEMENTS / 2. */
int egs_check_count(struct kin *in, int64_t count, int64_t bytes_each, const char *what);

/* Free the input (any storage), leaving eg->storage FLOAT and rows = cols = 0. */
void example_input_release(struct example *eg);
/* PQ in the archive (egs.h): after the "PQ " token. Binary only. 0, or -1 (kin_error/error_set);
 * on error eg may hold part of the input (the caller releases it). */
int egs_pq_read(struct kin *in, struct example *eg);
int egs_pq_write(struct kout *out, const struct example *eg);
/* Decode rows [row0, row0 + n) of a PQ input into dst (stride floats per row). */
void egs_pq_decode_rows(const struct example *eg, int row0, int n, float *dst, int stride);
/* PQ version 2's lossless coding of rows x cols 8-bit codes (pq-code.c): egs_pq_code returns the
 * byte count and a malloc'ed buffer in *out; egs_pq_uncode fills x (rows * cols bytes) from n
 * coded bytes: 0, or -1 (error_set) when the data is corrupt or truncated. */
/* The bytes of eg's PQ input in an archive (header and codes; not the table). */
size_t egs_pq_stored_bytes(const struct example *eg);
size_t egs_pq_code(const unsigned char *x, int rows, int cols, unsigned char **out);
int egs_pq_uncode(const unsigned char *in, size_t n, int rows, int cols, unsigned char *x);

#endif
