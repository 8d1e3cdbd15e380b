/* Memory plan accuracy: the dry-run plan of loom_model_open (weights + KV cache +
 * graph estimate, read with loom_backend_memory_get) against the process's measured
 * peak RSS growth (VmHWM after - VmRSS before, peak reset through
 * /proc/self/clear_refs) for open + load + a full-context prompt.
 *
 * Each measurement runs in a fresh child process (fork) so code pages, heap
 * arenas and the page cache state are the same for every configuration. The plan
 * has one term the dry run cannot know: a fixed overhead F (library code pages
 * faulted in, the graph context's node arena, thread stacks, heap bookkeeping),
 * measured here as growth - plan at a tiny context (32). The test asserts that
 * plan + F is within 5% of the growth at n_ctx 512 for stories260K. It also prints
 * the decomposition of the growth with the REAL report (weights + cache + graph
 * of the loaded model + 2 x the KQ mask, which lives both in the model's host
 * staging buffer and in the graph's uncounted input tensor) - docs/reliability.md.
 * The same is asserted for a synthetic dim-512 8-layer F32 model (110 MB in /tmp,
 * weights dominate; LOOM_MEMPLAN_SYNTH=0 skips it). The RSS checks are skipped under
 * sanitizers (shadow memory and quarantine make RSS meaningless) and where
 * /proc/self/status is missing; the MoE graph-estimate check (check_moe_estimate) runs
 * everywhere. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "loom_model.h"
#include "loom_synth.h"
#include "test_util.h"

typedef struct measure {
    int ok;
    char msg[256];
    uint64_t plan_w, plan_c, plan_g;  /* dry run */
    uint64_t real_w, real_c, real_g;  /* report after the prompt */
    long rss0_kb, hwm_kb;
} measure;

static long status_kb(const char *key) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t kl = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, kl) && line[kl] == ':') v = atol(line + kl + 1);
    if (f) fclose(f);
    return v;
}

static void report(loom_model *m, uint64_t *w, uint64_t *c, uint64_t *g) {
    loom_backend_memory mem;
    *w = *c = *g = 0;
    if (loom_backend_memory_get(loom_model_backend(m), &mem)) return;
    *w = mem.input_weights.size;
    for (int d = 0; d < mem.n_devices; d++) {
        for (int l = 0; l < mem.devices[d].n_layers; l++) {
            *w += mem.devices[d].weights[l].size;
            *c += mem.devices[d].cache[l].size;
        }
        *g += mem.devices[d].graph.size;
    }
    loom_backend_memory_free(&mem);
}

static void child(const char *path, int n_ctx, bool fa, measure *out) {
    loom_model_params p = loom_model_default_params();
    p.path = path;
    p.n_ctx = n_ctx;
    p.n_batch = n_ctx;
    p.n_threads = 1;
    p.flash_attn = fa;
    p.dry_run = true;
    loom_model *m = NULL;
    loom_error e = {0};
    if (loom_model_open(&p, &m, &e)) {
        snprintf(out->msg, sizeof out->msg, "dry run: %.200s", e.msg);
        return;
    }
    report(m, &out->plan_w, &out->plan_c, &out->plan_g);
    loom_model_close(m);
    int32_t *toks = malloc(sizeof *toks * (size_t)n_ctx);
    if (!toks) return;
    for (int i = 0; i < n_ctx; i++) toks[i] = 1 + (i * 7) % 500;
    malloc_trim(0);
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (f) {
        fputs("5", f); /* reset VmHWM to the current RSS */
        fclose(f);
    }
    out->rss0_kb = status_kb("VmRSS");
    p.dry_run = false;
    if (loom_model_open(&p, &m, &e) || loom_model_eval(m, toks, n_ctx, false, &e)) {
        snprintf(out->msg, sizeof out->msg, "run: %.200s", e.msg);
        loom_model_close(m);
        free(toks);
        return;
    }
    out->hwm_kb = status_kb("VmHWM");
    report(m, &out->real_w, &out->real_c, &out->real_g);
    loom_model_close(m);
    free(toks);
    out->ok = out->rss0_kb > 0 && out->hwm_kb > 0;
    if (!out->ok) snprintf(out->msg, sizeof out->msg, "no VmRSS/VmHWM in /proc/self/status");
}

static bool measure_in_child(const char *path, int n_ctx, bool fa, measure *out) {
    memset(out, 0, sizeof *out);
    int fd[2];
    if (pipe(fd)) return false;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return false;
    if (pid == 0) {
        close(fd[0]);
        measure m;
        memset(&m, 0, sizeof m);
        child(path, n_ctx, fa, &m);
        ssize_t w = write(fd[1], &m, sizeof m);
        _exit(w == (ssize_t)sizeof m ? 0 : 1);
    }
    close(fd[1]);
    ssize_t r = read(fd[0], out, sizeof *out);
    close(fd[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    return r == (ssize_t)sizeof *out && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static double kib(uint64_t b) { return (double)b / 1024.0; }

/* Measures path at ctx 32 (fixed overhead) and n_ctx; asserts that plan + F and
 * the real decomposition are both within 5% of the growth. */
static void check_model(const char *label, const char *path, int n_ctx, bool fa, double plan_hi) {
    measure small, big;
    bool ok1 = measure_in_child(path, 32, fa, &small), ok2 = measure_in_child(path, n_ctx, fa, &big);
    CHECK_MSG(ok1 && small.ok, "%s ctx 32: %s", label, small.msg);
    CHECK_MSG(ok2 && big.ok, "%s ctx %d: %s", label, n_ctx, big.msg);
    if (!(ok1 && small.ok && ok2 && big.ok)) return;
    double g_small = (double)(small.hwm_kb - small.rss0_kb) * 1024.0;
    double g_big = (double)(big.hwm_kb - big.rss0_kb) * 1024.0;
    double plan_small = (double)(small.plan_w + small.plan_c + small.plan_g);
    double plan_big = (double)(big.plan_w + big.plan_c + big.plan_g);
    double fixed = g_small - plan_small;
    double pred = plan_big + fixed, err = (pred - g_big) / g_big;
    /* the decomposition with the real report: mask = n_ctx x n_batch F32, twice */
    double mask_small = 2.0 * 32 * 32 * 4, mask_big = 2.0 * n_ctx * n_ctx * 4;
    double real_small = (double)(small.real_w + small.real_c + small.real_g);
    double real_big = (double)(big.real_w + big.real_c + big.real_g);
    double fixed_real = g_small - real_small - mask_small;
    double err_real = (real_big + mask_big + fixed_real - g_big) / g_big;
    printf("%s, n_ctx %d: plan weights %.0f + cache %.0f + graph %.0f KiB + fixed %.0f KiB = %.0f KiB; "
           "RSS growth %.0f KiB; error %+.2f%%\n",
           label, n_ctx, kib(big.plan_w), kib(big.plan_c), kib(big.plan_g), fixed / 1024, pred / 1024,
           g_big / 1024, 100 * err);
    printf("  real report: weights %.0f + cache %.0f + graph %.0f KiB + 2 masks %.0f KiB + fixed %.0f KiB "
           "-> error %+.2f%%\n",
           kib(big.real_w), kib(big.real_c), kib(big.real_g), mask_big / 1024, fixed_real / 1024,
           100 * err_real);
    CHECK_MSG(err >= -0.05 && err <= plan_hi, "%s: plan vs RSS error %+.2f%%", label, 100 * err);
    CHECK_MSG(err_real >= -0.05 && err_real <= 0.05, "%s: real report vs RSS error %+.2f%%", label,
              100 * err_real);
    CHECK(fixed > 0 && fixed < 8.0 * 1024 * 1024);
}

static uint64_t graph_bytes(loom_model *m) {
    uint64_t w, c, g;
    report(m, &w, &c, &g);
    return g;
}

/* The dry-run graph estimate against the graph the real open reserves (no RSS: runs
 * under sanitizers too) for mixture-of-experts models whose expert products and routed
 * sums dominate the graph: 16 experts, 8 used, expert FFN 64 at dim 512, so that the
 * down projection and its routing-weighted copy [dim, 8, T] (2 x 8 MiB) outgrow
 * gate/up/product, and the expert products' work area (the activations converted per
 * (slot, token) pair: 8 MiB) is the largest work user. The estimate is meant as an upper
 * bound (docs/reliability.md); measured +4.8 % / +13.2 % (qwen3moe without / with flash
 * attention) and +7.2 % / +6.0 % (gpt-oss); without the expert work term and the weighted
 * copy it was -35 % with flash attention (mutation-checked). */
static void check_moe_estimate(void) {
    static const char *const archs[] = {"qwen3moe", "gpt-oss"};
    char path[128];
    snprintf(path, sizeof path, "/tmp/loom_test_memplan_moe_%d.gguf", (int)getpid());
    for (size_t a = 0; a < sizeof archs / sizeof archs[0]; a++) {
        loom_synth_arch_params sp = loom_synth_arch_default_params();
        sp.arch = archs[a];
        sp.vocab_path = test_path("models/stories260K.gguf");
        sp.dim = 512;
        sp.n_layers = 2;
        sp.ffn = 64;
        sp.n_experts = 16;
        sp.n_experts_used = 8;
        loom_error err = {0};
        loom_status st = loom_synth_arch_write(&sp, path, &err);
        CHECK_MSG(st == LOOM_OK, "%s: %s", archs[a], err.msg);
        if (st) continue;
        for (int fa = 0; fa < 2; fa++) {
            loom_model_params p = loom_model_default_params();
            p.path = path;
            p.n_ctx = p.n_batch = 512;
            p.n_threads = 2;
            p.flash_attn = fa;
            p.dry_run = true;
            loom_model *m = NULL;
            uint64_t plan = 0, real = 0;
            st = loom_model_open(&p, &m, &err);
            CHECK_MSG(st == LOOM_OK, "%s dry run: %s", archs[a], err.msg);
            if (st == LOOM_OK) {
                plan = graph_bytes(m);
                loom_model_close(m);
            }
            p.dry_run = false;
            st = loom_model_open(&p, &m, &err);
            CHECK_MSG(st == LOOM_OK, "%s: %s", archs[a], err.msg);
            if (st == LOOM_OK) {
                real = graph_bytes(m);
                loom_model_close(m);
            }
            if (!plan || !real) continue;
            const double e = ((double)plan - (double)real) / (double)real;
            printf("%s (16 experts, 8 used), flash attention %s: graph estimate %.0f KiB, reserved %.0f KiB, %+.1f%%\n",
                   archs[a], fa ? "on" : "off", kib(plan), kib(real), 100 * e);
            CHECK_MSG(e >= -0.005 && e <= 0.25, "%s fa %d: graph estimate %+.1f%% of the reserved graph", archs[a], fa,
                      100 * e);
        }
    }
    unlink(path);
}

/* The same for models with Mamba mixers or RWKV-7 layers (tests/data/arch independent
 * files), whose projections, convolution and scan results the estimate counts per layer:
 * it must not fall below the reserved graph. These files are 32 wide, so the inputs the
 * estimate adds for the RSS plan (the KQ masks, 3 MiB with flash attention at 512 x
 * 1024 cells) outweigh their layers: measured +20% (jamba, granitehybrid, no flash
 * attention) to +280% (jamba with it), mamba / mamba2 +60% / +72% (no masks), rwkv7
 * (128 wide) +27%, rwkv6 +49%. And the DSA files (deepseek32, glm-dsa, dots3note), whose
 * indexer products [cells, 16 heads, queries] dominate: +6.0% to +13.8% (without the
 * indexer term -60% to -93%). */
static void check_recurrent_estimate(void) {
    static const char *const files[] = {"mamba", "mamba2", "jamba", "granitehybrid-dense", "rwkv7", "rwkv6",
                                        "deepseek32", "glm-dsa", "dots3note"};
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        char path[160];
        snprintf(path, sizeof path, "tests/data/arch/indep-%s.gguf", files[f]);
        for (int fa = 0; fa < 2; fa++) {
            loom_model_params p = loom_model_default_params();
            p.path = test_path(path);
            p.n_ctx = p.n_batch = 512;
            p.n_seq_max = 2;
            p.n_threads = 2;
            p.flash_attn = fa;
            p.dry_run = true;
            loom_model *m = NULL;
            loom_error err = {0};
            uint64_t plan = 0, real = 0;
            loom_status st = loom_model_open(&p, &m, &err);
            CHECK_MSG(st == LOOM_OK, "%s dry run: %s", files[f], err.msg);
            if (st == LOOM_OK) {
                plan = graph_bytes(m);
                loom_model_close(m);
            }
            p.dry_run = false;
            st = loom_model_open(&p, &m, &err);
            CHECK_MSG(st == LOOM_OK, "%s: %s", files[f], err.msg);
            if (st == LOOM_OK) {
                real = graph_bytes(m);
                loom_model_close(m);
            }
            if (!plan || !real) continue;
            const double e = ((double)plan - (double)real) / (double)real;
            printf("%s, flash attention %s: graph estimate %.0f KiB, reserved %.0f KiB, %+.1f%%\n", files[f],
                   fa ? "on" : "off", kib(plan), kib(real), 100 * e);
            CHECK_MSG(e >= -0.005, "%s fa %d: graph estimate %+.1f%% of the reserved graph", files[f], fa, 100 * e);
        }
    }
}

/* Looped layers (nanbeige num_loops: the 2 blocks of indep-nanbeige-loop run 3 times,
 * each run with its own cache): run j's cache of block i lives on block i's device and
 * counts as that block's cache, in the dry run as in the real open. Block 0 on the CPU,
 * block 1 on a simulated accelerator: each holds 3 layers of K and V, 1 KV head of 12,
 * 256 cells, F16 = 3 * 2 * 12 * 256 * 2 bytes. */
static void check_looped_cache(void) {
    loom_sim_device d[1];
    int nd = 0;
    CHECK(loom_sim_devices_parse("gpu0=64MiB", d, 1, &nd, NULL) == LOOM_OK);
    const uint64_t want = 3ull * 2 * 12 * 256 * 2;
    for (int dry = 0; dry < 2; dry++) {
        loom_model_params p = loom_model_default_params();
        p.path = test_path("tests/data/arch/indep-nanbeige-loop.gguf");
        p.n_ctx = p.n_batch = 256;
        p.n_threads = 2;
        p.flash_attn = true;
        p.dry_run = dry;
        p.sim_devices = d;
        p.n_sim_devices = nd;
        p.n_gpu_layers = 1;
        loom_model *m = NULL;
        loom_error err = {0};
        loom_status st = loom_model_open(&p, &m, &err);
        CHECK_MSG(st == LOOM_OK, "looped file (dry run %d): %s", dry, err.msg);
        if (st) continue;
        loom_backend_memory mem;
        CHECK(loom_backend_memory_get(loom_model_backend(m), &mem) == LOOM_OK);
        CHECK(mem.n_devices == 2);
        for (int dv = 0; dv < mem.n_devices && dv < 2; dv++) {
            uint64_t c = 0;
            for (int l = 0; l < mem.devices[dv].n_layers; l++) c += mem.devices[dv].cache[l].size;
            printf("looped file, dry run %d: %s cache %llu bytes (want %llu)\n", dry, mem.devices[dv].name,
                   (unsigned long long)c, (unsigned long long)want);
            CHECK_MSG(c == want, "looped file, dry run %d: %s cache %llu bytes, want %llu", dry, mem.devices[dv].name,
                      (unsigned long long)c, (unsigned long long)want);
        }
        loom_backend_memory_free(&mem);
        loom_model_close(m);
    }
}

/* Quantized caches (turned by loom_hadamard: the turned q, k, v and outputs are graph
 * tensors too): the estimate stays above the reserved graph. indep-llama-kvrot, heads of
 * 128, Q8_0 / Q4_0 caches with flash attention: measured +89% (a 128-wide file: the
 * inputs the estimate adds for the RSS plan dominate); the reserved graph is 3931 KiB
 * turned or not (kv_rotate = -1): the turned tensors reuse the layer's arena */
static void check_quantized_cache_estimate(void) {
    const loom_type ts[] = {LOOM_TYPE_Q8_0, LOOM_TYPE_Q4_0};
    for (int i = 0; i < 2; i++) {
        uint64_t plan = 0, real = 0;
        for (int dry = 1; dry >= 0; dry--) {
            loom_model_params p = loom_model_default_params();
            p.path = test_path("tests/data/arch/indep-llama-kvrot.gguf");
            p.n_ctx = p.n_batch = 512;
            p.n_seq_max = 2;
            p.n_threads = 2;
            p.flash_attn = true;
            p.cache_type = ts[i];
            p.dry_run = dry;
            loom_model *m = NULL;
            loom_error err = {0};
            loom_status st = loom_model_open(&p, &m, &err);
            CHECK_MSG(st == LOOM_OK, "kvrot %s (dry %d): %s", loom_type_name(ts[i]), dry, err.msg);
            if (st) continue;
            *(dry ? &plan : &real) = graph_bytes(m);
            loom_model_close(m);
        }
        if (!plan || !real) continue;
        const double e = ((double)plan - (double)real) / (double)real;
        printf("kvrot, %s cache: graph estimate %.0f KiB, reserved %.0f KiB, %+.1f%%\n", loom_type_name(ts[i]),
               kib(plan), kib(real), 100 * e);
        CHECK_MSG(e >= -0.005, "kvrot %s: graph estimate %+.1f%% of the reserved graph", loom_type_name(ts[i]), 100 * e);
    }
}

int main(void) {
    check_moe_estimate();
    check_quantized_cache_estimate();
    check_recurrent_estimate();
    check_looped_cache();
#if defined(LOOM_SANITIZE) || defined(LOOM_TSAN)
    (void)check_model;
    return test_finish_part("test_llm_memplan", "RSS is not meaningful under sanitizers (shadow memory)");
#else
    if (status_kb("VmRSS") <= 0) return test_finish_part("test_llm_memplan", "no VmRSS in /proc/self/status");
    check_model("stories260K", test_path("models/stories260K.gguf"), 512, false, 0.05);
    const char *env = getenv("LOOM_MEMPLAN_SYNTH");
    if (!env || *env != '0') {
        char path[128];
        snprintf(path, sizeof path, "/tmp/loom_test_memplan_%d.gguf", (int)getpid());
        loom_synth_params sp = loom_synth_default_params();
        sp.vocab_path = test_path("models/stories260K.gguf");
        sp.dim = 512;
        sp.n_layers = 8;
        sp.n_heads = 8;
        sp.n_kv_heads = 8;
        sp.ffn = 1536;
        sp.n_ctx = 512;
        sp.type_name = "F32";
        sp.n_threads = 2;
        loom_error err = {0};
        CHECK_MSG(loom_synth_write(&sp, path, NULL, &err) == LOOM_OK, "%s", err.msg);
        check_model("synthetic dim 512 x 8 layers F32", path, 512, false, 0.05);
        unlink(path);
        /* F16 weights with flash attention (no score matrices): the largest part of the
         * graph memory is the prompt products' work area (activations converted to F16
         * and, on levels with packed activations, k-major float panels: 4.5 MiB here) */
        sp.n_layers = 4;
        sp.type_name = "F16";
        CHECK_MSG(loom_synth_write(&sp, path, NULL, &err) == LOOM_OK, "%s", err.msg);
        check_model("synthetic dim 512 x 4 layers F16, flash attention", path, 512, true, 0.05);
        unlink(path);
        /* Q4_0: repacked at load on every x86 level but scalar (weights in the process's
         * buffer, norms copied): the plan and the real report against RSS for a repacked
         * file. (The 2 MiB page-cache folios that made a 1.1B file's mapped norms cost
         * 72 MiB, docs/reliability.md, cost about 1 MiB at this size, within the checks.)
         * With 15 MiB of weights the graph estimate's slack above the reserved graph (an
         * upper bound by design: 5 MiB here) is 6 % of the total, so the plan may be up to
         * 10 % above. */
        sp.n_layers = 8;
        sp.type_name = "Q4_0";
        CHECK_MSG(loom_synth_write(&sp, path, NULL, &err) == LOOM_OK, "%s", err.msg);
        check_model("synthetic dim 512 x 8 layers Q4_0 (repacked)", path, 512, false, 0.10);
        unlink(path);
    }
    return test_finish_part("test_llm_memplan", env && *env == '0' ? "LOOM_MEMPLAN_SYNTH=0: the synthetic model was not checked" : NULL);
#endif
}
