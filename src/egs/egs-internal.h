/* Shared inside src/egs only (not part of the module's interface). */
#ifndef PARNET_EGS_EGS_INTERNAL_H
#define PARNET_EGS_EGS_INTERNAL_H

#include "egs/egs.h"

/* The rest of an example after its <InputFrames> token, its labels already in eg: the input,
 * <LeftContext>, the optional <SpkInfo> and </NnetExample>. 0, or -1 (kin_error); eg may then
 * hold part of the example (the caller releases it). */
int example_read_tail(struct kin *in, int binary, struct example *eg);

#endif
