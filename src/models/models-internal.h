/* Shared inside src/models only (not part of the module's interface). */
#ifndef PARNET_MODELS_MODELS_INTERNAL_H
#define PARNET_MODELS_MODELS_INTERNAL_H

#include "models/models.h"

/* The end of a combination (nnet-combine, TWA): *work handed to the caller (*work becomes NULL)
 * when its parameters are finite, else NULL with error_set("<what> is not finite"). */
struct nnet *models_take_finite(struct nnet **work, const char *what);

#endif
