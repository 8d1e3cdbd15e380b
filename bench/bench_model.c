/* loom bench MODEL.gguf: prompt processing and generation speed (llama-bench
 * style), load time, peak RSS, and tg against the memory-bandwidth bound
 * measured in the same run. See bench/README.md for the method. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include "model_opts.h"

#include "cli_util.h"
#include "bench.h"
#include "commands.h"
#include "loom_gguf.h"
#include "loom_model.h"

#define BM_MAX_REPS 1000
#define BM_MAX_THREADS 256
#define BM_MAX_DEPTH (1 << 24) /* the largest n_ctx a model accepts */

static double bm_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void bm_usage(FILE *f) {
    fprintf(f,
            "usage: loom bench [MODEL.gguf] [options]   (default: the bundled model)\n"
            "  -p N            prompt tokens for the pp test (default 512; 0 skips it)\n"
            "  --parallel N    N sequences: N prompts of -p tokens (packed into -b batches), then\n"
            "                  N tokens per decode step;\n"
            "                  rates are aggregate (\"parallel\": N and tg_tps_per_seq in --json)\n"
            "  -n N            generated tokens for the tg test (default 128; 0 skips it)\n"
            "  -b N            batch size for pp (default 512)\n"
            "  -t N            threads (default: the model's default, physical cores)\n"
            "  -r N            repetitions (default 3)\n"
            "  -d, --n-depth N  depth: N tokens already in the cache before each pp and tg test\n"
            "                  (filled once by -b batches, not timed; llama-bench -d)\n"
            "  -fa, --flash-attn [on|off|auto]  flash attention (default: on, as llama-bench's\n"
            "                  auto; -fa off / --no-flash-attn: matmul, softmax, matmul)\n"
            "  --cache-type T  KV cache type: f16 (default), f32, q8_0, q4_0 (q*: flash attention); also\n"
            "                  -ctk T / -ctv T (Loom has one type for K and V: they must agree)\n"
            "  -ngl, --gpu-layers N  trailing layers on accelerators (Vulkan: LOOM_VK_DEVICES / --vk-devices)\n"
            "  --vk-devices LIST   Vulkan devices: all, none or indices (default: the GPUs)\n"
            "  --gpu-bw GBPS    device memory bandwidth for the tg bound when layers are offloaded\n"
            "                  (default: the CPU bandwidth measured here)\n"
            "  --no-mmap       read the weights instead of mapping the file (also -mmp 0)\n"
            "  --bw-mib N      bandwidth buffer in MiB (default 1024; 0 skips the bandwidth test)\n"
            "  --json          one JSON object instead of the table\n");
}

static int bm_int(const char *opt, const char *s, long lo, long hi, int *out) {
    long long v = 0;
    if (!cli_parse_ll(s, lo, hi, &v)) {
        fprintf(stderr, "loom bench: %s needs an integer in [%ld, %ld], got '%s'\n", opt, lo, hi,
                s ? s : "");
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* ------------------------------------------------------------ peak RSS */

static uint64_t bm_peak_rss(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (f) {
        char line[256];
        unsigned long long kb = 0;
        bool found = false;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "VmHWM: %llu kB", &kb) == 1) {
                found = true;
                break;
            }
        fclose(f);
        if (found) return (uint64_t)kb * 1024u;
    }
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0) return (uint64_t)ru.ru_maxrss * 1024u; /* kB on Linux */
    return 0;
}

/* A "Name: N kB" field of /proc/self/status in bytes, 0 if unreadable. */
static uint64_t bm_status_bytes(const char *field) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return 0;
    char line[256];
    size_t fl = strlen(field);
    unsigned long long kb = 0;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, field, fl) && line[fl] == ':' && sscanf(line + fl + 1, " %llu", &kb) == 1)
            break;
    fclose(f);
    return (uint64_t)kb * 1024u;
}

/* A "Name: N kB" field of /proc/meminfo in bytes, 0 if unreadable. */
static uint64_t bm_meminfo_bytes(const char *field) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    size_t fl = strlen(field);
    unsigned long long kb = 0;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, field, fl) && line[fl] == ':' && sscanf(line + fl + 1, " %llu", &kb) == 1) break;
    fclose(f);
    return (uint64_t)kb * 1024u;
}

/* Reset VmHWM to the current RSS (Linux >= 4.0); false if not permitted. */
static bool bm_reset_peak(void) {
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f) return false;
    bool ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok;
}

/* ------------------------------------------------------------ bandwidth */

/* Best-of-5 multi-threaded streaming read bandwidth over `mib` MiB, in bytes/s
 * (0 when skipped or the buffer cannot be allocated). */
static double bm_bandwidth(int mib, int nth) {
    if (mib <= 0) return 0;
    size_t bytes = (size_t)mib << 20;
    void *mem = NULL;
    if (posix_memalign(&mem, (size_t)2 << 20, bytes) != 0) return 0;
#ifdef MADV_HUGEPAGE
    madvise(mem, bytes, MADV_HUGEPAGE);
#endif
    double best = loom_bench_read_bandwidth(mem, bytes, nth, 5, true);
    free(mem);
    return best;
}

/* ------------------------------------------------------------ statistics */

static void bm_stats(const double *x, int n, double *mean, double *sd) {
    double s = 0;
    for (int i = 0; i < n; i++) s += x[i];
    *mean = n ? s / n : 0;
    double v = 0;
    for (int i = 0; i < n; i++) v += (x[i] - *mean) * (x[i] - *mean);
    *sd = n > 1 ? sqrt(v / (n - 1)) : 0;
}

static uint64_t bm_rng(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}


/* ------------------------------------------------------------ main */

/* --parallel: per repetition, the prompts of n_par sequences (each its own tokens,
 * packed together into batches of n_batch rows), then n_gen steps decoding one token of every sequence in one
 * batch. Rates are aggregate (all sequences' tokens per second). */
static int bm_parallel(loom_model *m, const int32_t *toks, int n_prompt, int n_gen, int n_par, int reps, double *pp,
                       double *tg, loom_error *err) {
    int nb = loom_model_n_batch(m), nv = loom_model_n_vocab(m);
    loom_batch b;
    if (loom_batch_init(&b, nb, 1, err)) return 1;
    int32_t *next = calloc((size_t)n_par, sizeof *next);
    int rc = next ? 0 : 1;
    for (int r = -1; r < reps && !rc; r++) { /* r = -1: warm-up with short runs */
        int np = r < 0 && n_prompt > 8 ? 8 : n_prompt, ng = r < 0 && n_gen > 4 ? 4 : n_gen;
        loom_model_reset(m);
        double t0 = bm_now();
        /* prompts: rows of consecutive sequences packed into batches of up to n_batch
         * (as a server feeds several new requests at once) */
        for (int32_t s = 0; s < n_par; s++) next[s] = toks[s % (n_prompt + 1)];
        int64_t total = (int64_t)n_par * np, done = 0;
        while (done < total && !rc) {
            loom_batch_clear(&b);
            int64_t T = total - done < nb ? total - done : nb;
            for (int64_t k = 0; k < T; k++) {
                int32_t s = (int32_t)((done + k) / np);
                int i = (int)((done + k) % np);
                int32_t t = (int32_t)(((int64_t)toks[i] + 7 * s) % nv);
                loom_batch_add(&b, t, i, &s, 1, i == np - 1, err);
            }
            rc = loom_model_decode(m, &b, err) != LOOM_OK;
            for (int64_t k = 0; k < T && !rc; k++)
                if ((done + k) % np == np - 1) next[(done + k) / np] = loom_model_batch_argmax(m, (int32_t)k);
            done += T;
        }
        if (r >= 0 && n_prompt > 0) pp[r] = (double)n_par * n_prompt / (bm_now() - t0);
        t0 = bm_now();
        for (int i = 0; i < ng && !rc; i++) {
            loom_batch_clear(&b);
            for (int32_t s = 0; s < n_par; s++) loom_batch_add(&b, next[s] < 0 ? 1 : next[s], np + i, &s, 1, true, err);
            rc = loom_model_decode(m, &b, err) != LOOM_OK;
            for (int32_t s = 0; s < n_par && !rc; s++) next[s] = loom_model_batch_argmax(m, s);
        }
        if (r >= 0 && n_gen > 0) tg[r] = (double)n_par * n_gen / (bm_now() - t0);
    }
    free(next);
    loom_batch_free(&b);
    return rc;
}

int loom_bench_model(int argc, char **argv) {
    const char *path = NULL;
    int n_prompt = 512, n_gen = 128, n_batch = 512, n_threads = 0, reps = 3, bw_mib = 1024, ngl = 0, gpu_bw = 0;
    int n_par = 0; /* --parallel N: N sequences, prompts first, then N rows per decode step */
    bool json = false, fa = true, no_mmap = false;
    int depth = 0;                         /* -d: tokens in the cache before each test */
    loom_type cache_type = LOOM_TYPE_F16;  /* --cache-type / -ctk / -ctv */
    const char *ctk = NULL, *ctv = NULL;
    const char *vk_devices = NULL;
    unsigned vk_flags = 0;
    cli_vk_env(&vk_devices, &vk_flags);
    /* argv[0] is the model path or the first option (see bench.h) */
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            bm_usage(stdout);
            return 0;
        } else if (!strcmp(a, "--json")) {
            json = true;
        } else if (!strcmp(a, "-fa") || !strcmp(a, "--flash-attn")) {
            fa = true;
            if (cli_parse_flash_attn(v, &fa)) i++;
        } else if (!strcmp(a, "--no-flash-attn")) {
            fa = false;
        } else if (!strcmp(a, "-d") || !strcmp(a, "--n-depth")) {
            rc = bm_int(a, v, 0, BM_MAX_DEPTH, &depth), i++;
        } else if (!strcmp(a, "--cache-type") || !strcmp(a, "-ctk") || !strcmp(a, "-ctv")) {
            loom_type t;
            if (!v || !loom_type_from_name(v, &t) ||
                (t != LOOM_TYPE_F16 && t != LOOM_TYPE_F32 && t != LOOM_TYPE_Q8_0 && t != LOOM_TYPE_Q4_0)) {
                fprintf(stderr, "loom bench: %s must be f16, f32, q8_0 or q4_0 (got '%s')\n", a, v ? v : "");
                return 2;
            }
            if (!strcmp(a, "-ctv")) ctv = v;
            else ctk = v;
            cache_type = t, i++;
        } else if (!strcmp(a, "-p")) {
            rc = bm_int(a, v, 0, 1 << 20, &n_prompt), i++;
        } else if (!strcmp(a, "-n")) {
            rc = bm_int(a, v, 0, 1 << 20, &n_gen), i++;
        } else if (!strcmp(a, "-b")) {
            rc = bm_int(a, v, 1, 1 << 20, &n_batch), i++;
        } else if (!strcmp(a, "-t")) {
            rc = bm_int(a, v, 1, BM_MAX_THREADS, &n_threads), i++;
        } else if (!strcmp(a, "--parallel") || !strcmp(a, "-np")) {
            rc = bm_int(a, v, 1, LOOM_SEQ_MAX, &n_par), i++;
        } else if (!strcmp(a, "-r")) {
            rc = bm_int(a, v, 1, BM_MAX_REPS, &reps), i++;
        } else if (!strcmp(a, "--no-mmap")) {
            no_mmap = true;
        } else if (!strcmp(a, "-mmp")) { /* llama-bench's spelling: -mmp 0 = --no-mmap */
            int on = 1;
            rc = bm_int(a, v, 0, 1, &on), i++;
            no_mmap = on == 0;
        } else if (!strcmp(a, "--bw-mib")) {
            rc = bm_int(a, v, 0, 1 << 20, &bw_mib), i++;
        } else if (!strcmp(a, "-ngl") || !strcmp(a, "--gpu-layers")) {
            rc = bm_int(a, v, 0, 1 << 20, &ngl), i++;
        } else if (!strcmp(a, "--gpu-bw")) {
            rc = bm_int(a, v, 1, 1 << 24, &gpu_bw), i++;
        } else if (!strcmp(a, "--vk-devices")) {
            if (!v) rc = 1;
            vk_devices = v, i++;
        } else if (a[0] == '-' || path) {
            fprintf(stderr, "loom bench: unexpected argument '%s'\n", a);
            bm_usage(stderr);
            return 2;
        } else {
            path = a;
        }
        if (rc) return 2;
    }
    if (!path) path = loom_default_model_path();
    if (ctk && ctv && strcmp(ctk, ctv) != 0) {
        fprintf(stderr, "loom bench: -ctk %s and -ctv %s differ; Loom has one KV cache type for K and V\n", ctk,
                ctv);
        return 2;
    }
    if (depth > 0 && n_par > 0) {
        fprintf(stderr, "loom bench: -d (depth) and --parallel cannot be combined\n");
        return 2;
    }

    loom_model_params mp = loom_model_default_params();
    mp.path = path;
    int ctx = n_prompt > n_gen + 1 ? n_prompt : n_gen + 1;
    if (n_par > 0) ctx = n_prompt + n_gen + 1; /* each sequence: its prompt, then its tokens */
    ctx += depth;                               /* <= 2^24 + 2^20 + 1: no overflow */
    mp.n_ctx = ctx < 16 ? 16 : ctx;
    mp.n_batch = n_par > n_batch ? n_par : n_batch;
    mp.n_seq_max = n_par > 0 ? n_par : 1;
    mp.n_threads = n_threads;
    mp.flash_attn = fa;
    mp.no_mmap = no_mmap;
    mp.cache_type = cache_type;
    mp.n_gpu_layers = ngl;
    mp.vk_devices = vk_devices;
    mp.vk_flags = vk_flags;
    mp.vk_loader = cli_vk_loader();
    /* the environment the CLI honours (the library reads none) */
    static loom_sim_device sims[MODEL_OPTS_MAX_SIM];
    int n_sims = 0;
    if (cli_env_sim_devices(sims, MODEL_OPTS_MAX_SIM, &n_sims, "loom bench")) return 2;
    mp.sim_devices = n_sims ? sims : NULL;
    mp.n_sim_devices = n_sims;
    mp.no_repack = cli_env_no_repack();
    mp.kv_rotate = cli_env_kv_rotate();
    loom_error err = {0};
    loom_model *m = NULL;

    /* The memory plan (dry run: weights + KV cache + graph, nothing allocated), to be
     * compared with the peak RSS growth of the real run below. */
    uint64_t plan_bytes = 0, kv_plan_bytes = 0, graph_plan_bytes = 0;
    {
        loom_model_params dp = mp;
        dp.dry_run = true;
        loom_model *dm = NULL;
        if (loom_model_open(&dp, &dm, &err) != LOOM_OK) {
            fprintf(stderr, "loom bench: %s\n", err.msg);
            return 1;
        }
        /* beyond the model's trained context: measured anyway, as llama-bench does (the
         * cost of attention does not depend on what the model makes of those positions),
         * with a warning */
        int32_t n_ctx_train = loom_model_get_hparams(dm)->n_ctx_train;
        if (depth > 0 && n_ctx_train > 0 && mp.n_ctx > n_ctx_train)
            fprintf(stderr,
                    "loom bench: warning: depth %d + %d test tokens = %d exceeds the model's context length %d "
                    "(%s.context_length); timing it anyway\n",
                    depth, mp.n_ctx - depth, mp.n_ctx, (int)n_ctx_train, loom_model_get_hparams(dm)->arch);
        loom_backend_memory mem;
        if (loom_backend_memory_get(loom_model_backend(dm), &mem) == LOOM_OK) {
            plan_bytes = loom_backend_memory_total(&mem);
            for (int d = 0; d < mem.n_devices; d++)
                for (int l = 0; l < mem.devices[d].n_layers; l++) kv_plan_bytes += mem.devices[d].cache[l].size;
            for (int d = 0; d < mem.n_devices; d++) graph_plan_bytes += mem.devices[d].graph.size;
            loom_backend_memory_free(&mem);
        }
        loom_model_close(dm);
        /* a cache that cannot fit the memory available now is refused before anything is
         * allocated (an overcommitted allocation would be killed mid-fill instead) */
        uint64_t avail = bm_meminfo_bytes("MemAvailable");
        if (depth > 0 && avail > 0 && kv_plan_bytes + graph_plan_bytes > avail) {
            fprintf(stderr,
                    "loom bench: depth %d: the KV cache (%s, %d tokens) and compute buffers need %.1f MiB, "
                    "only %.1f MiB of memory is available; use a smaller -d or a quantized --cache-type\n",
                    depth, loom_type_name(cache_type), mp.n_ctx,
                    (double)(kv_plan_bytes + graph_plan_bytes) / 1048576.0, (double)avail / 1048576.0);
            return 1;
        }
    }
    bool peak_reset = bm_reset_peak();
    uint64_t rss0 = bm_status_bytes("VmRSS");

    double t0 = bm_now();
    if (loom_model_open(&mp, &m, &err) != LOOM_OK) {
        fprintf(stderr, "loom bench: %s\n", err.msg);
        if (depth > 0)
            fprintf(stderr, "loom bench: (context of %d tokens for depth %d: KV cache %.1f MiB planned)\n", mp.n_ctx,
                    depth, (double)kv_plan_bytes / 1048576.0);
        return 1;
    }
    double load_s = bm_now() - t0;

    const loom_gguf *g = loom_model_gguf(m);
    const loom_model_hparams *hp = loom_model_get_hparams(m);
    uint64_t model_bytes = 0, n_params = 0, embd_bytes = 0, expert_bytes = 0;
    /* MoE: a token reads only the experts it is routed to (expert_used_count of
     * expert_count) of the stacked expert tensors ("*_exps.*") */
    uint32_t n_exp = 0, n_exp_used = 0;
    char key[96];
    snprintf(key, sizeof key, "%s.expert_count", hp->arch);
    if (loom_gguf_get_u32(g, key, &n_exp) != LOOM_OK) n_exp = 0;
    snprintf(key, sizeof key, "%s.expert_used_count", hp->arch);
    if (loom_gguf_get_u32(g, key, &n_exp_used) != LOOM_OK || n_exp_used > n_exp) n_exp_used = n_exp;
    for (int64_t i = 0; i < loom_gguf_tensor_count(g); i++) {
        const loom_gguf_tensor_info *t = loom_gguf_tensor(g, i);
        model_bytes += t->size;
        if (n_exp > 0 && strstr(t->name, "_exps.")) expert_bytes += t->size;
        n_params += (uint64_t)(t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]);
        if (!strcmp(t->name, "token_embd.weight")) embd_bytes = t->size;
    }
    /* Weight bytes read per generated token: everything once, except the embedding
     * table of which one row is read (unless it doubles as the output matrix). */
    uint64_t weight_bytes_tok = model_bytes;
    if (!hp->tied_output && hp->n_vocab > 0)
        weight_bytes_tok = model_bytes - embd_bytes + embd_bytes / (uint64_t)hp->n_vocab;
    /* plus the KV cache read by attention: average context depth + (n_gen+1)/2, K and V
     * of the cache type (bytes per element: f32 4, f16 2, q8_0 34/32, q4_0 18/32) */
    double kv_elt = cache_type == LOOM_TYPE_F32 ? 4.0 : cache_type == LOOM_TYPE_Q8_0 ? 34.0 / 32
                  : cache_type == LOOM_TYPE_Q4_0 ? 18.0 / 32 : 2.0;
    double kv_bytes_tok = (double)hp->n_layer * hp->n_head_kv * (hp->head_dim_k + hp->head_dim_v) * kv_elt *
                          (depth + (n_gen + 1) / 2.0);
    if (n_exp > 0) weight_bytes_tok -= expert_bytes - expert_bytes / n_exp * n_exp_used;
    double bytes_tok = (double)weight_bytes_tok + kv_bytes_tok;

    int n_vocab = loom_model_n_vocab(m);
    int ntok = n_prompt > n_gen ? n_prompt : n_gen;
    int32_t *toks = malloc(((size_t)ntok + 1) * sizeof *toks);
    int32_t *dtoks = depth > 0 ? malloc((size_t)depth * sizeof *dtoks) : NULL;
    double *pp = calloc((size_t)reps, sizeof *pp), *tg = calloc((size_t)reps, sizeof *tg);
    if (!toks || !pp || !tg || (depth > 0 && !dtoks)) {
        fprintf(stderr, "loom bench: out of memory\n");
        free(toks), free(dtoks), free(pp), free(tg);
        loom_model_close(m);
        return 1;
    }
    uint64_t rs = 1234;
    for (int i = 0; i <= ntok; i++) toks[i] = (int32_t)(bm_rng(&rs) % (uint64_t)n_vocab);
    for (int i = 0; i < depth; i++) dtoks[i] = (int32_t)(bm_rng(&rs) % (uint64_t)n_vocab);

    int rc = 0;
    /* warm-up: one token (touches every weight page), then forget it */
    if (loom_model_eval(m, toks, 1, false, &err) != LOOM_OK) goto fail;
    if (n_prompt > 0) {
        /* then the whole prompt, as llama-bench's warm-up prompt run does (since it
         * replaced its 32-token one): the first batch of a size touches its compute
         * memory (a first-touch page fault per page, zeroed by the kernel), which the
         * timed runs would otherwise pay in their first repetition (1.1B Q4_0 pp512, 2
         * threads, a 32-token warm-up: repetitions 165.6 209.8 209.0 177.7 t/s; the
         * side-by-side script runs one repetition per run) */
        loom_model_reset(m);
        if (loom_model_eval(m, toks, n_prompt, false, &err) != LOOM_OK) goto fail;
    }
    if (n_par > 0) {
        if (bm_parallel(m, toks, n_prompt, n_gen, n_par, reps, pp, tg, &err)) goto fail;
        goto measured;
    }
    /* depth: the cache is filled once (in -b batches, not timed); every test then
     * starts from it, the tokens after the depth removed (llama-bench restores a
     * saved state: the same cache contents) */
    if (depth > 0) {
        loom_model_reset(m);
        if (loom_model_eval(m, dtoks, depth, false, &err) != LOOM_OK) goto fail;
    }
    for (int r = 0; r < reps; r++) {
        if (n_prompt > 0) {
            if (depth > 0) {
                if (loom_model_seq_remove(m, 0, depth, -1, &err) != LOOM_OK) goto fail;
            } else {
                loom_model_reset(m);
            }
            t0 = bm_now();
            if (loom_model_eval(m, toks, n_prompt, false, &err) != LOOM_OK) goto fail;
            pp[r] = n_prompt / (bm_now() - t0);
        }
        if (n_gen > 0) {
            if (depth > 0) {
                if (loom_model_seq_remove(m, 0, depth, -1, &err) != LOOM_OK) goto fail;
            } else {
                loom_model_reset(m);
            }
            int32_t tok = toks[0];
            t0 = bm_now();
            for (int i = 0; i < n_gen; i++) {
                if (loom_model_eval(m, &tok, 1, false, &err) != LOOM_OK) goto fail;
                tok = loom_model_argmax(m, -1);
                if (tok < 0) tok = toks[i + 1];
            }
            tg[r] = n_gen / (bm_now() - t0);
        }
    }
measured:;
    uint64_t peak_rss = bm_peak_rss(); /* before the bandwidth buffer */
    /* growth of the peak over the RSS before open (meaningful when the peak was reset) */
    uint64_t rss_growth = peak_reset && peak_rss > rss0 ? peak_rss - rss0 : 0;
    double plan_err = rss_growth ? (double)plan_bytes / (double)rss_growth - 1.0 : 0.0;
    int bw_threads = n_threads > 0 ? n_threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (bw_threads < 1) bw_threads = 1;
    if (bw_threads > BM_MAX_THREADS) bw_threads = BM_MAX_THREADS;
    double bw = bm_bandwidth(bw_mib, bw_threads);

    double pp_m, pp_sd, tg_m, tg_sd;
    bm_stats(pp, n_prompt > 0 ? reps : 0, &pp_m, &pp_sd);
    bm_stats(tg, n_gen > 0 ? reps : 0, &tg_m, &tg_sd);
    /* offloaded layers: the bound is the device's bandwidth when given (--gpu-bw) */
    if (ngl > 0 && gpu_bw > 0) bw = (double)gpu_bw * 1e9;
    double bound = bw > 0 && bytes_tok > 0 ? bw / bytes_tok : 0;
    int64_t ft64 = 1024;
    (void)loom_gguf_get_int(g, "general.file_type", &ft64);
    uint32_t ft = ft64 >= 0 && ft64 < 1024 ? (uint32_t)ft64 : 1024;
    const char *ftname = loom_gguf_file_type_name(ft);
    if (!strcmp(ftname, "unknown")) { /* no or unknown file_type: name the biggest tensor's type */
        uint64_t biggest = 0;
        for (int64_t i = 0; i < loom_gguf_tensor_count(g); i++) {
            const loom_gguf_tensor_info *t = loom_gguf_tensor(g, i);
            if (t->size > biggest) {
                biggest = t->size;
                ftname = loom_type_name(t->type);
            }
        }
    }
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;

    if (json) {
        printf("{\"model\": \"");
        for (const char *c = base; *c; c++) {
            if (*c == '"' || *c == '\\') putchar('\\');
            if ((unsigned char)*c >= 0x20) putchar(*c);
        }
        printf("\", \"arch\": \"%s\", \"file_type\": \"%s\", \"n_params\": %llu, "
               "\"model_bytes\": %llu, \"n_threads\": %d, \"flash_attn\": %s, \"n_prompt\": %d, "
               "\"n_gen\": %d, \"n_batch\": %d, \"reps\": %d, \"gpu_layers\": %d, \"parallel\": %d, "
               "\"tg_tps_per_seq\": %.4f, ",
               hp->arch, ftname, (unsigned long long)n_params,
               (unsigned long long)model_bytes, n_threads, fa ? "true" : "false", n_prompt, n_gen,
               loom_model_n_batch(m), reps, ngl, n_par > 0 ? n_par : 1, tg_m / (n_par > 0 ? n_par : 1));
        printf("\"pp_tps\": %.4f, \"pp_tps_stddev\": %.4f, \"tg_tps\": %.4f, \"tg_tps_stddev\": %.4f, "
               "\"load_s\": %.4f, \"peak_rss_bytes\": %llu, \"bandwidth_gbs\": %.3f, "
               "\"bytes_per_token\": %.0f, \"tg_bound_tps\": %.4f, \"tg_fraction_of_bound\": %.4f, ",
               pp_m, pp_sd, tg_m, tg_sd, load_s, (unsigned long long)peak_rss, bw / 1e9, bytes_tok,
               bound, bound > 0 ? tg_m / bound : 0.0);
        /* cache_type in llama-bench's spelling (type_k: "f16", "q8_0") */
        char ctn[16];
        snprintf(ctn, sizeof ctn, "%s", loom_type_name(cache_type));
        for (char *c = ctn; *c; c++)
            if (*c >= 'A' && *c <= 'Z') *c = (char)(*c - 'A' + 'a');
        /* n_past_end: tokens of sequence 0 after the last test (depth + n_gen after tg) */
        printf("\"depth\": %d, \"cache_type\": \"%s\", \"n_ctx\": %d, \"kv_cache_bytes\": %llu, "
               "\"n_past_end\": %d, ",
               depth, ctn, loom_model_n_ctx(m), (unsigned long long)kv_plan_bytes,
               loom_model_n_past(m));
        printf("\"plan_bytes\": %llu, \"rss_growth_bytes\": %llu, \"plan_error\": %.4f, ",
               (unsigned long long)plan_bytes, (unsigned long long)rss_growth, plan_err);
        printf("\"pp_samples\": [");
        for (int r = 0; r < reps && n_prompt > 0; r++) printf("%s%.4f", r ? ", " : "", pp[r]);
        printf("], \"tg_samples\": [");
        for (int r = 0; r < reps && n_gen > 0; r++) printf("%s%.4f", r ? ", " : "", tg[r]);
        printf("]}\n");
    } else {
        char thr[16];
        if (n_threads > 0) snprintf(thr, sizeof thr, "%d", n_threads);
        else snprintf(thr, sizeof thr, "auto");
        printf("| model | size | params | threads | fa | test | t/s |\n");
        printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
        char at[32] = "";
        if (depth > 0) snprintf(at, sizeof at, " @ d%d", depth);
        if (n_prompt > 0)
            printf("| %s %s | %.2f MiB | %.2f M | %s | %d | pp%d%s | %.2f ± %.2f |\n", hp->arch,
                   ftname, (double)model_bytes / 1048576.0, (double)n_params / 1e6, thr,
                   fa ? 1 : 0, n_prompt, at, pp_m, pp_sd);
        if (n_gen > 0)
            printf("| %s %s | %.2f MiB | %.2f M | %s | %d | tg%d%s | %.2f ± %.2f |\n", hp->arch,
                   ftname, (double)model_bytes / 1048576.0, (double)n_params / 1e6, thr,
                   fa ? 1 : 0, n_gen, at, tg_m, tg_sd);
        if (depth > 0 || cache_type != LOOM_TYPE_F16)
            printf("\ncontext %d tokens, KV cache %s, %.1f MiB\n", loom_model_n_ctx(m),
                   loom_type_name(cache_type), (double)kv_plan_bytes / 1048576.0);
        if (n_par > 0)
            printf("\nparallel %d: %d sequences, each a %d-token prompt then %d tokens decoded together; "
                   "t/s are aggregate (per sequence tg %.2f t/s)\n",
                   n_par, n_par, n_prompt, n_gen, tg_m / n_par);
        printf("\nload %.3f s, peak RSS %.1f MiB, %d repetition%s\n", load_s,
               (double)peak_rss / 1048576.0, reps, reps == 1 ? "" : "s");
        if (ngl > 0) {
            loom_backend *be = loom_model_backend(m);
            int on = 0, dev = 0;
            for (int l = 0; l <= loom_backend_block_count(be); l++)
                if (loom_backend_layer_device(be, l) > 0) on++, dev = loom_backend_layer_device(be, l);
            printf("gpu layers %d of %d on %s%s\n", on, loom_backend_block_count(be) + 1,
                   on ? loom_backend_device_name(be, dev) : "no accelerator",
                   gpu_bw > 0 ? "" : " (tg bound below: the CPU bandwidth; --gpu-bw sets the device's)");
        }
        if (rss_growth) {
            /* the plan is the worst case: logits for every row of a batch (loom eval, a
             * caller asking for each row); these runs ask for one row per sequence, so
             * the rest of that tensor is planned but never touched (with flash attention
             * nothing else reuses its pages; without, the score matrices do) */
            const int nb = loom_model_n_batch(m), rows = n_par > 0 ? n_par : 1;
            const double unused = nb > rows ? 4.0 * loom_model_n_vocab(m) * (nb - rows) : 0.0;
            printf("memory plan %.1f MiB vs peak RSS growth %.1f MiB (%+.1f%%; the plan's logits for all %d rows "
                   "of a batch, %.1f MiB of which these runs never ask for, included)\n",
                   (double)plan_bytes / 1048576.0, (double)rss_growth / 1048576.0, 100.0 * plan_err, nb,
                   unused / 1048576.0);
        }
        if (bw > 0) {
            if (ngl > 0 && gpu_bw > 0) printf("device bandwidth %.2f GB/s (--gpu-bw)\n", bw / 1e9);
            else
                printf("read bandwidth %.2f GB/s (%d threads, %d MiB buffer, best of 5)\n", bw / 1e9,
                       bw_threads, bw_mib);
            printf("bytes per token %.2f MiB -> tg bound %.2f t/s", bytes_tok / 1048576.0, bound);
            if (n_gen > 0) printf(", tg = %.1f%% of bound", 100.0 * tg_m / bound);
            printf("\n");
        }
    }
    goto done;
fail:
    fprintf(stderr, "loom bench: %s\n", err.msg);
    rc = 1;
done:
    free(toks);
    free(dtoks);
    free(pp);
    free(tg);
    loom_model_close(m);
    return rc;
}
