/* Options shared by `loom run` and `loom eval` (model/device/cache flags). */
#ifndef LOOM_TOOLS_MODEL_OPTS_H
#define LOOM_TOOLS_MODEL_OPTS_H

#include "loom_model.h"

#define MODEL_OPTS_MAX_SPLIT 16
#define MODEL_OPTS_MAX_SIM 16

typedef struct model_opts {
    loom_model_params p;
    float split[MODEL_OPTS_MAX_SPLIT];
    loom_sim_device sim[MODEL_OPTS_MAX_SIM];
    bool ctx_set, batch_set;
} model_opts;

void model_opts_init(model_opts *o);
/* Try to consume argv[*i] (and its value). Returns 1 if consumed, 0 if not a
 * model option, -1 on a bad value (message printed to stderr with prog). */
int model_opts_parse(model_opts *o, int argc, char **argv, int *i, const char *prog);
/* Help text for the shared options. */
const char *model_opts_help(void);
/* Parse "1,2,3" into ints; returns count or -1 on error; *out malloc'ed. */
int parse_int_list(const char *s, int32_t **out);

#endif
