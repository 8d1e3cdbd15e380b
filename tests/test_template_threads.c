/* A compiled template is immutable: four threads render it at once (different
 * conversations, the same template object) and each gets exactly the text a lone
 * render gives. Run under TSan to check for races. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom_template.h"
#include "test_util.h"

static loom_template *g_t;
static char *g_want[4];
static size_t g_want_len[4];
static int g_bad[4];

static void conv(int k, char *buf, size_t cap) {
    snprintf(buf, cap,
             "{\"messages\": [{\"role\": \"system\", \"content\": \"sys %d \\u00e9\"}, {\"role\": \"user\", \"content\": \"hello %d\"}, "
             "{\"role\": \"assistant\", \"content\": \"<think>r%d</think>answer %d\"}, {\"role\": \"user\", \"content\": \"again\"}], "
             "\"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f%d\", \"description\": \"d\", \"parameters\": {}}}]}",
             k, k, k, k, k);
}

static void *worker(void *arg) {
    int k = (int)(intptr_t)arg;
    char js[1024];
    conv(k, js, sizeof js);
    loom_template_time now = {2024, 7, 26, 12, 0, 0};
    loom_template_params p = {"<s>", "</s>", &now};
    for (int it = 0; it < 200; it++) {
        loom_template_result r = {0};
        loom_error err = {0};
        if (loom_template_render_json(g_t, js, strlen(js), &p, &r, &err) != LOOM_OK || r.len != g_want_len[k] ||
            memcmp(r.text, g_want[k], r.len) != 0)
            g_bad[k]++;
        loom_template_result_free(&r);
    }
    return NULL;
}

int main(void) {
    FILE *f = fopen(test_path("tests/data/templates/shared/Qwen-Qwen3-0.6B.jinja"), "rb");
    CHECK(f != NULL);
    if (!f) return test_finish("test_template_threads");
    static char src[1 << 16];
    size_t n = fread(src, 1, sizeof src, f);
    fclose(f);
    loom_error err = {0};
    CHECK(loom_template_compile(src, n, NULL, &g_t, &err) == LOOM_OK);
    if (!g_t) return test_finish("test_template_threads");
    loom_template_time now = {2024, 7, 26, 12, 0, 0};
    loom_template_params p = {"<s>", "</s>", &now};
    for (int k = 0; k < 4; k++) {
        char js[1024];
        conv(k, js, sizeof js);
        loom_template_result r = {0};
        CHECK(loom_template_render_json(g_t, js, strlen(js), &p, &r, &err) == LOOM_OK);
        g_want[k] = r.text;
        g_want_len[k] = r.len;
        r.text = NULL;
        loom_template_result_free(&r);
    }
    CHECK(g_want[0] && g_want[1] && strcmp(g_want[0], g_want[1]) != 0);
    pthread_t th[4];
    for (int k = 0; k < 4; k++) CHECK(pthread_create(&th[k], NULL, worker, (void *)(intptr_t)k) == 0);
    for (int k = 0; k < 4; k++) pthread_join(th[k], NULL);
    for (int k = 0; k < 4; k++) {
        CHECK_MSG(g_bad[k] == 0, "thread %d: %d renders differ", k, g_bad[k]);
        free(g_want[k]);
    }
    loom_template_free(g_t);
    return test_finish("test_template_threads");
}
