/* Options shared by `loom run` and `loom eval` (model/device/cache flags). */
#ifndef LOOM_TOOLS_MODEL_OPTS_H
#define LOOM_TOOLS_MODEL_OPTS_H

#include "loom_model.h"

#define MODEL_OPTS_MAX_SPLIT LOOM_TENSOR_SPLIT_MAX
#define MODEL_OPTS_MAX_SIM 16

typedef struct model_opts {
    loom_model_params p;
    float split[MODEL_OPTS_MAX_SPLIT];
    loom_sim_device sim[MODEL_OPTS_MAX_SIM];
    bool ctx_set, batch_set;
    bool sim_set;               /* --sim-devices given (even empty): the environment is not read */
} model_opts;

void model_opts_init(model_opts *o);
/* Try to consume argv[*i] (and its value). Returns 1 if consumed, 0 if not a
 * model option, -1 on a bad value (message printed to stderr with prog). */
int model_opts_parse(model_opts *o, int argc, char **argv, int *i, const char *prog);
/* After parsing: apply the environment the CLI (not the library) honours:
 * LOOM_SIM_DEVICES when --sim-devices was not given, LOOM_REPACK=0 as --no-repack.
 * Returns -1 (message printed) on a malformed LOOM_SIM_DEVICES. */
int model_opts_finish(model_opts *o, const char *prog);
/* The same environment for callers that fill loom_backend_params / loom_model_params
 * themselves: sims from LOOM_SIM_DEVICES unless have_sims; returns -1 on a bad spec. */
int cli_env_sim_devices(loom_sim_device *sims, int max, int *n, const char *prog);
bool cli_env_no_repack(void);
/* LOOM_KV_ROTATE: 0 -> -1 (off), 1 -> 1 (every cache), unset or else -> 0 (quantized caches) */
int cli_env_kv_rotate(void);
/* Help text for the shared options. */
const char *model_opts_help(void);
/* Parse "1,2,3" into ints; returns count or -1 on error; *out malloc'ed. */
int parse_int_list(const char *s, int32_t **out);

#endif
