/* textout.c - stop strings with hold-back (see textout.h). */
#include "server/textout.h"

#include <string.h>

void srv_textout_init(srv_textout *t, char *const *stop, int n_stop) {
    memset(t, 0, sizeof *t);
    t->stop = stop;
    t->n_stop = n_stop;
    t->hit = -1;
}

/* Longest suffix of s[0..n) that is a proper prefix of pat (the start of a stop
 * string that the next tokens may complete). */
static size_t partial_suffix(const char *s, size_t n, const char *pat) {
    size_t pl = strlen(pat);
    size_t max = pl - 1 < n ? pl - 1 : n;
    for (size_t k = max; k > 0; k--)
        if (!memcmp(s + n - k, pat, k)) return k;
    return 0;
}

bool srv_textout_push(srv_textout *t, const char *p, size_t n, srv_buf *out) {
    if (t->stopped) return false;
    if (!srv_buf_append(&t->pending, p, n)) {
        out->oom = true;
        return false;
    }
    const char *s = t->pending.data;
    size_t len = t->pending.len;
    /* the earliest complete stop string wins */
    size_t cut = len;
    int hit = -1;
    for (int i = 0; i < t->n_stop; i++) {
        size_t sl = strlen(t->stop[i]);
        if (!sl || sl > len) continue;
        const char *f = memmem(s, len, t->stop[i], sl);
        if (f && (size_t)(f - s) < cut) {
            cut = (size_t)(f - s);
            hit = i;
        }
    }
    if (hit >= 0) {
        t->hit = hit;
        srv_buf_append(out, s, cut);
        srv_buf_clear(&t->pending);
        t->stopped = true;
        return true;
    }
    size_t hold = 0;
    for (int i = 0; i < t->n_stop; i++) {
        size_t h = partial_suffix(s, len, t->stop[i]);
        if (h > hold) hold = h;
    }
    size_t emit = srv_utf8_complete_prefix(s, len - hold);
    srv_buf_append(out, s, emit);
    srv_buf_consume(&t->pending, emit);
    return false;
}

void srv_textout_flush(srv_textout *t, srv_buf *out) {
    if (!t->stopped && t->pending.len) srv_buf_append(out, t->pending.data, t->pending.len);
    srv_buf_clear(&t->pending);
}

void srv_textout_free(srv_textout *t) { srv_buf_free(&t->pending); }
