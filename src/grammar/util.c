/* Small helpers of the grammar module: a growable string and UTF-8 encoding. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "grammar/grammar_internal.h"
#include "quant/alloc.h"

static bool sb_reserve(sbuf *b, size_t extra) {
    if (b->oom) return false;
    if (b->n + extra + 1 <= b->cap) return true;
    size_t nc = b->cap ? b->cap : 256;
    while (nc < b->n + extra + 1) {
        if (nc > ((size_t)1 << 40)) {
            b->oom = true;
            return false;
        }
        nc *= 2;
    }
    char *p = loom_realloc(b->p, nc);
    if (!p) {
        b->oom = true;
        return false;
    }
    b->p = p;
    b->cap = nc;
    return true;
}

void sb_putn(sbuf *b, const char *s, size_t n) {
    if (!n || !sb_reserve(b, n)) return;
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

void sb_puts(sbuf *b, const char *s) { sb_putn(b, s, strlen(s)); }

void sb_putc(sbuf *b, char c) { sb_putn(b, &c, 1); }

void sb_printf(sbuf *b, const char *fmt, ...) {
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof tmp) {
        sb_putn(b, tmp, (size_t)n);
        return;
    }
    if (!sb_reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)n;
}

void sb_free(sbuf *b) {
    loom_free(b->p);
    memset(b, 0, sizeof *b);
}
