/* `loom plan` end to end: the JSON plan for stories260K on two simulated devices with
 * 6 GPU layers (expected values worked out by hand: 5 blocks of 181760 bytes, output
 * layer 131328, token embeddings 131072; f = i/6 puts layers 0-2 on gpu0 and 3, 4 and
 * the output layer on gpu1), the "fits" verdict per device and overall with exit
 * status 3 when the plan does not fit (devices against their free memory, the CPU
 * against the host's available memory), and bad arguments (exit 2). Skipped (exit
 * 77) when the CLI binary is not built. */
#include "test_util.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

static char g_out[65536];

static int run(const char *cmd) {
    g_out[0] = 0;
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t n = fread(g_out, 1, sizeof g_out - 1, p);
    g_out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The number after "key": at or after from; -1 if absent. */
static double num_after(const char *from, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *s = from ? strstr(from, pat) : NULL;
    return s ? strtod(s + strlen(pat), NULL) : -1;
}

/* Device object of the JSON by name (its '{'), or NULL. */
static const char *device(const char *name) {
    char pat[64];
    snprintf(pat, sizeof pat, "{\"name\": \"%s\"", name);
    return strstr(g_out, pat);
}

/* "fits" of a device agrees with need <= free; returns the verdict. */
static bool check_device(const char *name) {
    const char *d = device(name);
    CHECK_MSG(d != NULL, "no device %s in %s", name, g_out);
    if (!d) return false;
    double need = num_after(d, "need_bytes"), fr = num_after(d, "free_bytes");
    const char *f = strstr(d, "\"fits\": ");
    CHECK(need >= 0 && fr >= 0 && f != NULL);
    if (!f) return false;
    bool fits = strncmp(f + 8, "true", 4) == 0;
    CHECK_MSG(fits == (need <= fr), "%s: fits %d, need %.0f, free %.0f", name, (int)fits, need, fr);
    return fits;
}

static bool overall_fits(void) {
    /* the overall verdict is the last "fits" of the document */
    const char *last = NULL;
    for (const char *p = strstr(g_out, "\"fits\": "); p; p = strstr(p + 1, "\"fits\": ")) last = p;
    CHECK(last != NULL);
    return last && strncmp(last + 8, "true", 4) == 0;
}

int main(void) {
    const char *bin = getenv("LOOM_BIN");
    if (!bin || access(bin, X_OK) != 0) return test_skip("test_backend_plan", TEST_NO_CLI);
    const char *model = test_path("models/stories260K.gguf");
    char cmd[8192];
    /* 1) 1 MiB devices: placement as worked out by hand; the KV cache and graph do not
     *    fit in 1 MiB, so the plan does not fit: exit 3, fits false */
    snprintf(cmd, sizeof cmd,
             "env -u LOOM_SIM_DEVICES %s plan %s --sim-devices gpu0=1MiB,gpu1=1MiB --gpu-layers 6 --json", bin, model);
    CHECK_EQ_INT(run(cmd), 3);
    CHECK(strstr(g_out, "\"layers\": [{\"index\": 0, \"device\": \"gpu0\"}, {\"index\": 1, \"device\": \"gpu0\"}, "
                        "{\"index\": 2, \"device\": \"gpu0\"}, {\"index\": 3, \"device\": \"gpu1\"}, "
                        "{\"index\": 4, \"device\": \"gpu1\"}]") != NULL);
    CHECK(strstr(g_out, "\"output\": {\"device\": \"gpu1\"}") != NULL);
    CHECK(strstr(g_out, "\"input_weights\": 131072") != NULL);
    CHECK(strstr(g_out, "{\"name\": \"gpu0\", \"weights\": [181760, 181760, 181760, 0, 0, 0]") != NULL);
    CHECK(strstr(g_out, "{\"name\": \"gpu1\", \"weights\": [0, 0, 0, 181760, 181760, 131328]") != NULL);
    CHECK(strstr(g_out, "{\"name\": \"CPU\", \"weights\": [0, 0, 0, 0, 0, 0]") != NULL);
    CHECK(!check_device("gpu0"));
    CHECK(!check_device("gpu1"));
    CHECK(check_device("CPU"));
    CHECK(!overall_fits());
    CHECK_EQ_INT((int64_t)num_after(device("gpu0"), "free_bytes"), 1 << 20);

    /* 2) 1 GiB devices: everything fits, exit 0 */
    snprintf(cmd, sizeof cmd,
             "env -u LOOM_SIM_DEVICES %s plan %s --sim-devices gpu0=1GiB,gpu1=1GiB --gpu-layers 6 --json", bin, model);
    CHECK_MSG(run(cmd) == 0, "%s", g_out);
    CHECK(check_device("gpu0") && check_device("gpu1") && check_device("CPU"));
    CHECK(overall_fits());

    /* 3) the CPU alone with a context far beyond the host (2^24 tokens, flash attention
     *    off: ~714 GiB of KV cache and graph, the [kv x tokens] scores included): flagged
     *    against the available memory, exit 3. The default (flash attention on) plans no
     *    score matrices: under a quarter of that (~58 GiB, the cache and the fused
     *    kernel's tiles) */
    snprintf(cmd, sizeof cmd, "env -u LOOM_SIM_DEVICES %s plan %s --ctx 16777216 --json", bin, model);
    run(cmd);
    const double need_fa = num_after(device("CPU"), "need_bytes");
    snprintf(cmd, sizeof cmd, "env -u LOOM_SIM_DEVICES %s plan %s --ctx 16777216 -fa off --json", bin, model);
    int rc = run(cmd);
    double need = num_after(device("CPU"), "need_bytes");
    CHECK_MSG(need > 500.0 * 1073741824.0, "CPU need %.0f", need);
    CHECK_MSG(need_fa > 0 && need_fa < need / 4, "CPU need with flash attention %.0f, without %.0f", need_fa, need);
    bool fits = check_device("CPU");
    CHECK_EQ_INT(rc, fits ? 0 : 3);
    CHECK_EQ_INT(fits, overall_fits());
    /* the text table says so too */
    snprintf(cmd, sizeof cmd, "env -u LOOM_SIM_DEVICES %s plan %s --ctx 16777216 --no-flash-attn", bin, model);
    CHECK_EQ_INT(run(cmd), fits ? 0 : 3);
    CHECK_MSG(strstr(g_out, fits ? "plan: fits" : "plan: DOES NOT FIT") != NULL, "%s", g_out);

    /* 4) no accelerators, text mode */
    snprintf(cmd, sizeof cmd, "env -u LOOM_SIM_DEVICES %s plan %s --gpu-layers 3", bin, model);
    CHECK_EQ_INT(run(cmd), 0);
    CHECK(strstr(g_out, "output  CPU") != NULL && strstr(g_out, "plan: fits") != NULL);
    /* LOOM_SIM_DEVICES is the CLI's: honoured when --sim-devices is absent */
    snprintf(cmd, sizeof cmd, "LOOM_SIM_DEVICES=gpu7=1GiB %s plan %s --gpu-layers 6 --json", bin, model);
    CHECK_EQ_INT(run(cmd), 0);
    CHECK(device("gpu7") != NULL);
    /* ... and an explicit empty --sim-devices overrides it */
    snprintf(cmd, sizeof cmd, "LOOM_SIM_DEVICES=gpu7=1GiB %s plan %s --sim-devices '' --gpu-layers 6 --json", bin,
             model);
    CHECK_EQ_INT(run(cmd), 0);
    CHECK(device("gpu7") == NULL);

    /* 5) bad arguments: exit 2 with a message naming the problem */
    snprintf(cmd, sizeof cmd, "%s plan %s --sim-devices gpu0=1XB 2>&1", bin, model);
    CHECK_EQ_INT(run(cmd), 2);
    snprintf(cmd, sizeof cmd, "%s plan %s --ctx 0 2>&1", bin, model);
    CHECK_EQ_INT(run(cmd), 2);
    CHECK_MSG(strstr(g_out, "[1, 16777216]") != NULL, "%s", g_out);
    snprintf(cmd, sizeof cmd, "%s plan /nonexistent.gguf 2>/dev/null", bin);
    CHECK_EQ_INT(run(cmd), 1);
    /* --parallel N: the cache holds N sequences of --ctx tokens: N times the bytes of one
     *    (256 tokens are a multiple of the padding), "parallel": N in the JSON */
    double c1 = -1, c4 = -1;
    snprintf(cmd, sizeof cmd, "env -u LOOM_SIM_DEVICES %s plan %s --ctx 256 --json", bin, model);
    if (run(cmd) == 0) {
        const char *c = strstr(g_out, "\"cache\": [");
        c1 = c ? strtod(c + 10, NULL) : -1;
        CHECK_EQ_INT((int64_t)num_after(g_out, "parallel"), 1);
    }
    snprintf(cmd, sizeof cmd, "env -u LOOM_SIM_DEVICES %s plan %s --ctx 256 --parallel 4 --json", bin, model);
    if (run(cmd) == 0) {
        const char *c = strstr(g_out, "\"cache\": [");
        c4 = c ? strtod(c + 10, NULL) : -1;
        CHECK_EQ_INT((int64_t)num_after(g_out, "parallel"), 4);
    }
    CHECK_MSG(c1 > 0 && c4 == 4 * c1, "layer 0 cache: %.0f with 1 sequence, %.0f with 4", c1, c4);
    snprintf(cmd, sizeof cmd, "%s plan %s --parallel 0 2>&1", bin, model);
    CHECK_EQ_INT(run(cmd), 2);
    return test_finish("test_backend_plan");
}
