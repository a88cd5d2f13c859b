/* Shared inside src/egs only (not part of the module's interface). */
#ifndef PARNET_EGS_EGS_INTERNAL_H
#define PARNET_EGS_EGS_INTERNAL_H

#include "egs/egs.h"

/* The rest of an example after its <InputFrames> token, its labels already in eg: the input,
 * <LeftContext>, the optional <SpkInfo> and </NnetExample>. 0, or -1 (kin_error); eg may then
 * hold part of the example (the caller releases it). */
int example_read_tail(struct kin *in, int binary, struct example *eg);

/* Free the input (any storage), leaving eg->storage FLOAT and rows = cols = 0. */
void example_input_release(struct example *eg);
/* PQ in the archive (egs.h): after the "PQ " token. Binary only. 0, or -1 (kin_error/error_set);
 * on error eg may hold part of the input (the caller releases it). */
int egs_pq_read(struct kin *in, struct example *eg);
int egs_pq_write(struct kout *out, const struct example *eg);
/* Decode rows [row0, row0 + n) of a PQ input into dst (stride floats per row). */
void egs_pq_decode_rows(const struct example *eg, int row0, int n, float *dst, int stride);

#endif
