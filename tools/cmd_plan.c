/* loom plan MODEL.gguf [--gpu-layers N] [--tensor-split a,b,...] [--sim-devices spec]
 *                      [--ctx N] [--batch N] [--parallel N] [-fa on|off] [--json]
 *
 * Opens the model as a dry-run backend (nothing allocated, no weight read) and
 * prints where every layer lives and the memory table per device (weights /
 * cache / graph). Cache and graph come from the model code's planning hook
 * (loom_model_plan: the cache exactly, the graph as an estimate).
 * Exit status: 0 the plan fits, 3 it does not (a device's need exceeds its free
 * memory, or the CPU's exceeds the host's available memory: said in the table and
 * as "fits": false in the JSON), 1 an error (one line on stderr), 2 bad usage. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "loom_backend.h"
#include "loom_model.h"
#include "model_opts.h"

#define PLAN_MAX_SPLIT LOOM_TENSOR_SPLIT_MAX
#define PLAN_MAX_SIM 16

typedef struct plan_opts {
    const char *model;
    int gpu_layers;
    float split[PLAN_MAX_SPLIT];
    int n_split;
    loom_sim_device sims[PLAN_MAX_SIM];
    int n_sims;
    bool have_sims;
    long long n_ctx, n_batch, n_par;
    bool flash_attn, json;
    const char *vk_devices;
} plan_opts;

static void usage(FILE *f) {
    fprintf(f,
            "usage: loom plan MODEL.gguf [--gpu-layers N] [--tensor-split a,b,...]\n"
            "                 [--sim-devices gpu0=512MiB,...] [--vk-devices all|none|0,1] [--ctx N] [--batch N]\n"
            "                 [--parallel N] [-fa on|off] [--json]\n"
            "-fa, --flash-attn [on|off|auto]: fused attention, as run/bench/serve (default on;\n"
            "--no-flash-attn = -fa off: the plan then holds the [kv x tokens] score matrices).\n"
            "--parallel N: the KV cache holds N sequences of --ctx tokens each (default 1).\n"
            "Dry run: prints the device of every layer and the memory per device, allocating nothing.\n"
            "--sim-devices defaults to $LOOM_SIM_DEVICES.\n");
}

static bool parse_ll(const char *s, long long lo, long long hi, long long *out) {
    return cli_parse_ll(s, lo, hi, out);
}

static void human(char *buf, size_t n, uint64_t b) {
    if (b >= (1ull << 30)) snprintf(buf, n, "%.2f GiB", (double)b / (double)(1ull << 30));
    else if (b >= (1ull << 20)) snprintf(buf, n, "%.2f MiB", (double)b / (double)(1ull << 20));
    else if (b >= 1024) snprintf(buf, n, "%.2f KiB", (double)b / 1024.0);
    else snprintf(buf, n, "%" PRIu64 " B", b);
}

static uint64_t sum_mem(const loom_memory *m, int n) {
    uint64_t s = 0;
    for (int i = 0; i < n; i++) s += m[i].size;
    return s;
}

/* What device d needs in the plan (the CPU also holds the input weights) and what it
 * can give: an accelerator its free memory at open, the CPU the host's available
 * memory (MemAvailable). */
static uint64_t dev_need(const loom_backend_memory *m, int d) {
    const loom_device_memory *dm = &m->devices[d];
    uint64_t need = sum_mem(dm->weights, dm->n_layers) + sum_mem(dm->cache, dm->n_layers) + dm->graph.size;
    if (dm->kind == LOOM_DEVICE_CPU) need += m->input_weights.size;
    return need;
}
static bool dev_fits(const loom_backend_memory *m, int d) { return dev_need(m, d) <= m->devices[d].free_bytes; }
static bool plan_fits(const loom_backend_memory *m) {
    for (int d = 0; d < m->n_devices; d++)
        if (!dev_fits(m, d)) return false;
    return true;
}

static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static void print_json(FILE *f, const plan_opts *o, const loom_backend *be, const loom_backend_memory *m) {
    int blocks = loom_backend_block_count(be);
    fprintf(f, "{\"parallel\": %lld, \"layers\": [", o->n_par);
    for (int i = 0; i < blocks; i++) {
        fprintf(f, "%s{\"index\": %d, \"device\": ", i ? ", " : "", i);
        json_str(f, loom_backend_device_name(be, loom_backend_layer_device(be, i)));
        fputc('}', f);
    }
    fprintf(f, "], \"output\": {\"device\": ");
    json_str(f, loom_backend_device_name(be, loom_backend_layer_device(be, blocks)));
    fprintf(f, "}, \"memory\": {\"input_weights\": %" PRIu64 ", \"devices\": [", m->input_weights.size);
    for (int d = 0; d < m->n_devices; d++) {
        const loom_device_memory *dm = &m->devices[d];
        fprintf(f, "%s{\"name\": ", d ? ", " : "");
        json_str(f, dm->name);
        fprintf(f, ", \"weights\": [");
        for (int i = 0; i < dm->n_layers; i++) fprintf(f, "%s%" PRIu64, i ? ", " : "", dm->weights[i].size);
        fprintf(f, "], \"cache\": [");
        for (int i = 0; i < dm->n_layers; i++) fprintf(f, "%s%" PRIu64, i ? ", " : "", dm->cache[i].size);
        fprintf(f, "], \"graph\": %" PRIu64 ", \"total_bytes\": %" PRIu64 ", \"free_bytes\": %" PRIu64
                   ", \"need_bytes\": %" PRIu64 ", \"fits\": %s}",
                dm->graph.size, dm->total_bytes, dm->free_bytes, dev_need(m, d), dev_fits(m, d) ? "true" : "false");
    }
    fprintf(f, "]}, \"fits\": %s}\n", plan_fits(m) ? "true" : "false");
}

static void print_text(FILE *f, const plan_opts *o, const loom_backend *be, const loom_backend_memory *m) {
    int blocks = loom_backend_block_count(be);
    char a[32], b[32], c[32], t[32];
    fprintf(f, "model: %s (arch %s, %d blocks)\n", o->model, loom_backend_arch(be), blocks);
    fprintf(f, "gpu layers: %d   flash attention: %s   ctx: %lld   batch: %lld   parallel: %lld\n", o->gpu_layers,
            o->flash_attn ? "on" : "off", o->n_ctx, o->n_batch, o->n_par);
    fprintf(f, "devices:");
    for (int d = 0; d < m->n_devices; d++) {
        human(a, sizeof a, m->devices[d].total_bytes);
        fprintf(f, "%s %s (%s)", d ? "," : "", m->devices[d].name, a);
    }
    fprintf(f, "\n\nlayer   device\n");
    for (int i = 0; i < blocks; i++)
        fprintf(f, "%-7d %s\n", i, loom_backend_device_name(be, loom_backend_layer_device(be, i)));
    fprintf(f, "output  %s\n\n", loom_backend_device_name(be, loom_backend_layer_device(be, blocks)));

    fprintf(f, "%-16s %14s %14s %14s %14s\n", "device", "weights", "cache", "graph", "total");
    uint64_t tw = m->input_weights.size, tc = 0, tg = 0;
    human(a, sizeof a, m->input_weights.size);
    fprintf(f, "%-16s %14s %14s %14s %14s\n", "input (CPU)", a, "-", "-", a);
    for (int d = 0; d < m->n_devices; d++) {
        const loom_device_memory *dm = &m->devices[d];
        uint64_t w = sum_mem(dm->weights, dm->n_layers), ca = sum_mem(dm->cache, dm->n_layers);
        tw += w;
        tc += ca;
        tg += dm->graph.size;
        human(a, sizeof a, w);
        human(b, sizeof b, ca);
        human(c, sizeof c, dm->graph.size);
        uint64_t tot = w + ca + dm->graph.size;
        human(t, sizeof t, tot);
        (void)tot;
        fprintf(f, "%-16s %14s %14s %14s %14s%s\n", dm->name, a, b, c, t, dev_fits(m, d) ? "" : "  DOES NOT FIT");
    }
    human(a, sizeof a, tw);
    human(b, sizeof b, tc);
    human(c, sizeof c, tg);
    human(t, sizeof t, tw + tc + tg);
    fprintf(f, "%-16s %14s %14s %14s %14s\n", "total", a, b, c, t);
    /* the verdict: every device against its free memory (the CPU: input weights too,
     * against the host's available memory) */
    fputc('\n', f);
    for (int d = 0; d < m->n_devices; d++) {
        const loom_device_memory *dm = &m->devices[d];
        human(a, sizeof a, dev_need(m, d));
        human(b, sizeof b, dm->free_bytes);
        fprintf(f, "%-16s needs %s of %s %s: %s\n", dm->name, a, b,
                dm->kind == LOOM_DEVICE_CPU ? "available host memory" : "free", dev_fits(m, d) ? "fits" : "DOES NOT FIT");
    }
    fprintf(f, "plan: %s\n", plan_fits(m) ? "fits" : "DOES NOT FIT (exit status 3)");
}

int loom_cmd_plan(int argc, char **argv) {
    plan_opts o;
    memset(&o, 0, sizeof o);
    o.n_ctx = 2048;
    o.n_batch = 512;
    o.n_par = 1;
    o.flash_attn = true; /* as loom run / bench / serve */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long n;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--json")) {
            o.json = true;
        } else if (!strcmp(a, "--flash-attn") || !strcmp(a, "-fa")) {
            o.flash_attn = true;
            if (cli_parse_flash_attn(v, &o.flash_attn)) i++;
        } else if (!strcmp(a, "--no-flash-attn")) {
            o.flash_attn = false;
        } else if (!strcmp(a, "--gpu-layers") || !strcmp(a, "-ngl")) {
            if (!parse_ll(v, -1, 1 << 20, &n)) {
                fprintf(stderr, "loom plan: %s needs an integer in [-1, %d], got '%s'\n", a, 1 << 20, v ? v : "");
                return 2;
            }
            o.gpu_layers = (int)n;
            i++;
        } else if (!strcmp(a, "--ctx") || !strcmp(a, "-c")) {
            if (!parse_ll(v, 1, 1LL << 24, &o.n_ctx)) {
                fprintf(stderr, "loom plan: %s needs an integer in [1, %d], got '%s'\n", a, 1 << 24, v ? v : "");
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--parallel") || !strcmp(a, "-np")) {
            if (!parse_ll(v, 1, LOOM_SEQ_MAX, &o.n_par)) {
                fprintf(stderr, "loom plan: %s needs an integer in [1, %d], got '%s'\n", a, LOOM_SEQ_MAX, v ? v : "");
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--batch") || !strcmp(a, "-b")) {
            if (!parse_ll(v, 1, 1LL << 20, &o.n_batch)) {
                fprintf(stderr, "loom plan: %s needs an integer in [1, %d], got '%s'\n", a, 1 << 20, v ? v : "");
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--tensor-split") || !strcmp(a, "-ts")) {
            loom_error e = {0};
            if (!v) goto bad_value;
            if (loom_tensor_split_parse(v, o.split, PLAN_MAX_SPLIT, &o.n_split, &e)) {
                fprintf(stderr, "loom plan: %s\n", e.msg);
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--vk-devices")) {
            if (!v) goto bad_value;
            o.vk_devices = v;
            i++;
        } else if (!strcmp(a, "--sim-devices")) {
            loom_error e = {0};
            if (!v) goto bad_value;
            if (loom_sim_devices_parse(v, o.sims, PLAN_MAX_SIM, &o.n_sims, &e)) {
                fprintf(stderr, "loom plan: %s\n", e.msg);
                return 2;
            }
            o.have_sims = true;
            i++;
        } else if (a[0] == '-') {
            fprintf(stderr, "loom plan: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        } else if (!o.model) {
            o.model = a;
        } else {
            fprintf(stderr, "loom plan: unexpected argument '%s'\n", a);
            return 2;
        }
        continue;
    bad_value:
        fprintf(stderr, "loom plan: option %s needs a valid value\n", a);
        return 2;
    }
    if (!o.model) {
        usage(stderr);
        return 2;
    }

    loom_backend_params p = loom_backend_default_params();
    p.dry_run = true;
    p.n_gpu_layers = o.gpu_layers;
    p.tensor_split = o.n_split ? o.split : NULL;
    p.n_tensor_split = o.n_split;
    p.flash_attn = o.flash_attn;
    p.no_mmap = true; /* a plan reads only the header */
    cli_vk_env(&p.vk_devices, &p.vk_flags);
    p.vk_loader = cli_vk_loader();
    if (o.vk_devices) p.vk_devices = o.vk_devices;
    /* --sim-devices (an explicit empty spec means "no accelerators"), else the
     * environment's LOOM_SIM_DEVICES: the CLI reads it, the library never does */
    if (!o.have_sims && cli_env_sim_devices(o.sims, PLAN_MAX_SIM, &o.n_sims, "loom plan")) return 2;
    if (o.n_sims > 0) {
        p.sim_devices = o.sims;
        p.n_sim_devices = o.n_sims;
    }
    loom_backend *be = NULL;
    loom_error err = {0};
    loom_status s = loom_backend_open(o.model, &p, &be, &err);
    if (s) {
        fprintf(stderr, "loom plan: %s\n", err.msg);
        loom_backend_close(be);
        return 1;
    }
    /* The model code accounts its KV cache (exact) and worst-case graph (estimated
     * in dry-run mode) for o.n_ctx / o.n_batch. */
    {
        loom_error perr = {0};
        s = loom_model_plan(be, o.n_ctx, o.n_batch, (int32_t)o.n_par, LOOM_TYPE_F16, &perr);
        if (s && s != LOOM_ERR_NOMEM) {
            fprintf(stderr, "loom plan: %s\n", perr.msg[0] ? perr.msg : loom_status_name(s));
            loom_backend_close(be);
            return 1;
        }
    }

    loom_backend_memory m;
    s = loom_backend_memory_get(be, &m);
    if (s) {
        fprintf(stderr, "loom plan: out of memory\n");
        loom_backend_close(be);
        return 1;
    }
    if (o.json) print_json(stdout, &o, be, &m);
    else print_text(stdout, &o, be, &m);
    bool fits = plan_fits(&m);
    loom_backend_memory_free(&m);
    loom_backend_close(be);
    return fits ? CLI_EXIT_OK : CLI_EXIT_NO_FIT;
}
