/* `loom plan` end to end: the JSON plan for stories260K on two simulated 1 MiB
 * devices with 6 GPU layers (expected values worked out by hand: 5 blocks of
 * 181760 bytes, output layer 131328, token embeddings 131072; f = i/6 puts
 * layers 0-2 on gpu0 and 3, 4 and the output layer on gpu1). Skipped when the
 * CLI binary is not built (LOOM_BIN unset or missing). */
#include "test_util.h"

#include <unistd.h>

static char *run(const char *cmd) {
    FILE *p = popen(cmd, "r");
    if (!p) return NULL;
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, p);
    buf[n] = '\0';
    int rc = pclose(p);
    return rc == 0 ? buf : NULL;
}

int main(void) {
    const char *bin = getenv("LOOM_BIN");
    if (!bin || access(bin, X_OK) != 0) {
        printf("test_backend_plan: loom binary not found, skipped\n");
        return test_finish("test_backend_plan");
    }
    char cmd[8192];
    snprintf(cmd, sizeof cmd,
             "env -u LOOM_SIM_DEVICES %s plan %s --sim-devices gpu0=1MiB,gpu1=1MiB --gpu-layers 6 --json", bin,
             test_path("models/stories260K.gguf"));
    char *out = run(cmd);
    CHECK(out != NULL);
    if (out) {
        CHECK(strstr(out, "\"layers\": [{\"index\": 0, \"device\": \"gpu0\"}, {\"index\": 1, \"device\": \"gpu0\"}, "
                          "{\"index\": 2, \"device\": \"gpu0\"}, {\"index\": 3, \"device\": \"gpu1\"}, "
                          "{\"index\": 4, \"device\": \"gpu1\"}]") != NULL);
        CHECK(strstr(out, "\"output\": {\"device\": \"gpu1\"}") != NULL);
        CHECK(strstr(out, "\"input_weights\": 131072") != NULL);
        CHECK(strstr(out, "{\"name\": \"gpu0\", \"weights\": [181760, 181760, 181760, 0, 0, 0]") != NULL);
        CHECK(strstr(out, "{\"name\": \"gpu1\", \"weights\": [0, 0, 0, 181760, 181760, 131328]") != NULL);
        CHECK(strstr(out, "{\"name\": \"CPU\", \"weights\": [0, 0, 0, 0, 0, 0]") != NULL);
    }
    /* no accelerators: everything on the CPU; text mode works */
    snprintf(cmd, sizeof cmd, "env -u LOOM_SIM_DEVICES %s plan %s --gpu-layers 3", bin,
             test_path("models/stories260K.gguf"));
    out = run(cmd);
    CHECK(out && strstr(out, "output  CPU") != NULL);
    /* bad arguments: non-zero exit */
    snprintf(cmd, sizeof cmd, "%s plan %s --sim-devices gpu0=1XB 2>/dev/null", bin,
             test_path("models/stories260K.gguf"));
    CHECK(run(cmd) == NULL);
    snprintf(cmd, sizeof cmd, "%s plan /nonexistent.gguf 2>/dev/null", bin);
    CHECK(run(cmd) == NULL);
    return test_finish("test_backend_plan");
}
