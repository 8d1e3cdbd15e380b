/* String indexing and slicing by code point (Jinja / Python semantics) on strings that
 * mix 1-, 2-, 3- and 4-byte UTF-8 characters at every alignment against 8-byte words
 * (the engine counts code points a word at a time): s[i], s[-i], s[a:b] and the
 * length against code points decoded here, byte by byte. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom_template.h"
#include "test_util.h"

/* "conversation" JSON is unused by these templates */
static const char *conv = "{\"messages\":[]}";

static char *render(const char *src) {
    loom_template *t = NULL;
    loom_error err = {0};
    loom_template_result r = {0};
    char *out = NULL;
    if (loom_template_compile(src, strlen(src), NULL, &t, &err) == LOOM_OK &&
        loom_template_render_json(t, conv, strlen(conv), NULL, &r, &err) == LOOM_OK && r.text)
        out = strdup(r.text);
    else
        fprintf(stderr, "  render failed: %s %s\n", err.msg, r.error);
    loom_template_result_free(&r);
    loom_template_free(t);
    return out;
}

int main(void) {
    /* characters of each width: a (1), é (2), € (3), 😀 (4) */
    static const char *const ch[] = {"a", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80"};
    char s[512], src[1024], want[64];
    size_t off[128];
    for (int pattern = 0; pattern < 24; pattern++) {
        /* a string of 37 characters whose widths follow a pattern-dependent sequence */
        size_t n = 0, len = 0;
        unsigned x = 2463534242u + (unsigned)pattern * 7919u;
        for (; n < 37; n++) {
            x ^= x << 13, x ^= x >> 17, x ^= x << 5;
            const char *c = ch[pattern < 4 ? (unsigned)pattern : x % 4];
            off[n] = len;
            memcpy(s + len, c, strlen(c));
            len += strlen(c);
        }
        off[n] = len;
        s[len] = 0;
        snprintf(src, sizeof src, "{%% set s = '%s' %%}{{ s | length }}", s);
        char *got = render(src);
        CHECK_MSG(got && atoi(got) == (int)n, "pattern %d: length %s, want %zu", pattern, got ? got : "(null)", n);
        free(got);
        for (int i = -(int)n; i < (int)n; i++) {
            size_t k = (size_t)(i < 0 ? i + (int)n : i);
            snprintf(src, sizeof src, "{%% set s = '%s' %%}[{{ s[%d] }}]", s, i);
            snprintf(want, sizeof want, "[%.*s]", (int)(off[k + 1] - off[k]), s + off[k]);
            got = render(src);
            CHECK_MSG(got && !strcmp(got, want), "pattern %d: s[%d] = %s, want %s", pattern, i, got ? got : "(null)",
                      want);
            free(got);
        }
        for (int a = 0; a <= (int)n; a += 3)
            for (int b = a; b <= (int)n; b += 5) {
                snprintf(src, sizeof src, "{%% set s = '%s' %%}[{{ s[%d:%d] }}]", s, a, b);
                char w[600];
                snprintf(w, sizeof w, "[%.*s]", (int)(off[b] - off[a]), s + off[a]);
                got = render(src);
                CHECK_MSG(got && !strcmp(got, w), "pattern %d: s[%d:%d] = %s, want %s", pattern, a, b,
                          got ? got : "(null)", w);
                free(got);
            }
    }
    return test_finish("test_template_utf8_index");
}
