/* Every template in tests/data/templates/shared (the copy of ../shared/templates)
 * and every case of its conversations.json renders byte for byte to
 * expected/<template>__<case>.out, or fails with exactly the message in the .err
 * file; bos_token "<s>", eos_token "</s>", strftime_now at 2024-07-26 12:00:00. */
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom_template.h"
#include "test_util.h"

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)sz + 1);
    if (b && fread(b, 1, (size_t)sz, f) != (size_t)sz) { free(b); b = NULL; }
    fclose(f);
    if (b) { b[sz] = 0; *n = (size_t)sz; }
    return b;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(void) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", test_path("tests/data/templates/shared"));
    char path[8192];
    snprintf(path, sizeof path, "%s/conversations.json", dir);
    json_error_t je;
    json_t *cases = json_load_file(path, 0, &je);
    CHECK_MSG(cases != NULL, "%s: %s", path, je.text);
    if (!cases) return test_finish("test_template_shared");
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    char *names[256];
    int nn = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) && nn < 256) {
        size_t l = strlen(e->d_name);
        if (l > 6 && !strcmp(e->d_name + l - 6, ".jinja")) names[nn++] = strdup(e->d_name);
    }
    if (d) closedir(d);
    qsort(names, (size_t)nn, sizeof(char *), cmp_str);
    loom_template_time now = {2024, 7, 26, 12, 0, 0};
    loom_template_params p = {"<s>", "</s>", &now};
    int n_out = 0, n_err = 0;
    for (int i = 0; i < nn; i++) {
        size_t sl;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        char *src = slurp(path, &sl);
        CHECK(src != NULL);
        if (!src) continue;
        loom_template *t = NULL;
        loom_error err = {0};
        CHECK_MSG(loom_template_compile(src, sl, NULL, &t, &err) == LOOM_OK, "%s: %s", names[i], err.msg);
        names[i][strlen(names[i]) - 6] = 0;
        size_t ci;
        json_t *c;
        json_array_foreach(cases, ci, c) {
            if (!t) break;
            const char *cn = json_string_value(json_object_get(c, "name"));
            char *js = json_dumps(c, JSON_COMPACT);
            loom_template_result r = {0};
            loom_status st = loom_template_render_json(t, js, strlen(js), &p, &r, &err);
            size_t wl;
            snprintf(path, sizeof path, "%s/expected/%s__%s.out", dir, names[i], cn);
            char *want = slurp(path, &wl);
            if (want) {
                CHECK_MSG(st == LOOM_OK && r.len == wl && !memcmp(r.text, want, wl), "%s / %s: %s", names[i], cn,
                          st == LOOM_OK ? "text differs" : r.error);
                n_out++;
            } else {
                snprintf(path, sizeof path, "%s/expected/%s__%s.err", dir, names[i], cn);
                want = slurp(path, &wl);
                CHECK_MSG(want != NULL, "%s / %s: no expected file", names[i], cn);
                if (want) {
                    while (wl && (want[wl - 1] == '\n' || want[wl - 1] == '\r')) want[--wl] = 0;
                    CHECK_MSG(st != LOOM_OK && !strcmp(r.error, want), "%s / %s: got [%s], want error [%s]", names[i], cn,
                              st == LOOM_OK ? "success" : r.error, want);
                    CHECK(st == LOOM_ERR_INVALID_ARG && r.error_line > 0 && r.error_column > 0);
                    n_err++;
                }
            }
            /* the pre-parsed entry point renders the same */
            loom_template_result r2 = {0};
            loom_status st2 = loom_template_render_jansson(t, c, &p, &r2, &err);
            CHECK_MSG(st2 == st && (st != LOOM_OK ? !strcmp(r.error, r2.error) : (r.len == r2.len && !memcmp(r.text, r2.text, r.len))),
                      "%s / %s: render_jansson differs", names[i], cn);
            loom_template_result_free(&r2);
            free(want);
            free(js);
            loom_template_result_free(&r);
        }
        loom_template_free(t);
        free(src);
        free(names[i]);
    }
    printf("shared: %d templates, %d exact texts, %d expected errors\n", nn, n_out, n_err);
    CHECK(nn >= 12 && n_out + n_err == nn * (int)json_array_size(cases));
    json_decref(cases);
    return test_finish("test_template_shared");
}
