/* The template value model: arena, strings with content spans, output buffers,
 * lists/dicts, and Python's truthiness, ==, <, in, len, iteration, str() and repr(). */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpl.h"

/* ------------------------------------------------------------------ arena */

#define CHUNK_HDR ((sizeof(tpl_chunk) + 15) & ~(size_t)15)
#define CHUNK_MIN ((size_t)64 << 10)

void *tpl_arena_alloc(tpl_arena *a, size_t n) {
    if (n > SIZE_MAX / 2) return NULL;
    n = (n + 15) & ~(size_t)15;
    if (n == 0) n = 16;
    tpl_chunk *h = a->head;
    if (!h || h->size - h->used < n) {
        size_t sz = n > CHUNK_MIN / 4 ? n : (a->total / 4 > CHUNK_MIN ? (a->total / 4 > ((size_t)4 << 20) ? ((size_t)4 << 20) : a->total / 4) : CHUNK_MIN);
        if (sz < n) sz = n;
        if (a->limit && a->total + sz + CHUNK_HDR > a->limit) {
            /* near the limit: a chunk of exactly what is asked, if it still fits */
            if (a->total + n + CHUNK_HDR > a->limit) return NULL;
            sz = n;
        }
        tpl_chunk *nc = malloc(CHUNK_HDR + sz);
        if (!nc) return NULL;
        nc->size = sz;
        nc->used = 0;
        a->total += CHUNK_HDR + sz;
        if (h && n > CHUNK_MIN / 4) { /* a big block: keep the current chunk for small ones */
            nc->next = h->next;
            h->next = nc;
        } else {
            nc->next = h;
            a->head = nc;
        }
        h = nc;
    }
    void *p = (char *)h + CHUNK_HDR + h->used;
    h->used += n;
    memset(p, 0, n);
    return p;
}

void tpl_arena_free(tpl_arena *a) {
    tpl_chunk *h = a->head;
    while (h) {
        tpl_chunk *nx = h->next;
        free(h);
        h = nx;
    }
    a->head = NULL;
    a->total = 0;
}

/* ------------------------------------------------------------------ errors */

static const char *const exc_names[] = {
    "TemplateSyntaxError", "TemplateAssertionError", "UndefinedError", "TypeError", "ValueError",
    "ZeroDivisionError", "OverflowError", "SecurityError", "TemplateRuntimeError", "TemplateError",
    "LimitError", "IndexError", "KeyError", "AttributeError", "MemoryError", "FilterArgumentError"};

int tpl_failv(tpl_ctx *c, tpl_exc x, const char *fmt, va_list ap) {
    if (c->failed) return -1;
    c->failed = true;
    switch (x) {
    case X_LIMIT: c->st = LOOM_ERR_RANGE; break;
    case X_MEMORY: c->st = LOOM_ERR_NOMEM; break;
    case X_ASSERT: c->st = LOOM_ERR_FORMAT; break;
    case X_SYNTAX: c->st = LOOM_ERR_FORMAT; break;
    default: c->st = LOOM_ERR_INVALID_ARG; break;
    }
    if (x == X_RUNTIME && fmt && !strncmp(fmt, "No filter", 9)) c->st = LOOM_ERR_FORMAT;
    if (x == X_RUNTIME && fmt && !strncmp(fmt, "No test", 7)) c->st = LOOM_ERR_FORMAT;
    c->eline = c->pos ? c->pos->line : 0;
    c->ecol = c->pos ? c->pos->col : 0;
    int k = snprintf(c->emsg, sizeof c->emsg, "%s: ", exc_names[x]);
    if (k < 0) k = 0;
    if ((size_t)k < sizeof c->emsg) vsnprintf(c->emsg + k, sizeof c->emsg - (size_t)k, fmt, ap);
    return -1;
}

int tpl_fail(tpl_ctx *c, tpl_exc x, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tpl_failv(c, x, fmt, ap);
    va_end(ap);
    return -1;
}

int tpl_oom(tpl_ctx *c) {
    if (c->ar.limit && c->ar.total + c->heap >= c->ar.limit / 2)
        return tpl_fail(c, X_LIMIT, "the render needs more than max_memory (%zu bytes)", c->lim.max_memory);
    return tpl_fail(c, X_MEMORY, "out of memory");
}

void *tpl_alloc(tpl_ctx *c, size_t n) {
    void *p = tpl_arena_alloc(&c->ar, n);
    if (!p) {
        if (c->ar.limit && c->ar.total + c->heap + n + CHUNK_HDR + 16 > c->ar.limit)
            tpl_fail(c, X_LIMIT, "the render needs more than max_memory (%zu bytes)", c->lim.max_memory);
        else
            tpl_fail(c, X_MEMORY, "out of memory");
    }
    return p;
}

/* ------------------------------------------------------------------ tbuf */

static int tb_reserve(tpl_ctx *c, tbuf *b, size_t add) {
    if (add > c->lim.max_output || b->n > c->lim.max_output - add)
        return tpl_fail(c, X_LIMIT, "a string or the output exceeds max_output (%zu bytes)", c->lim.max_output);
    size_t need = b->n + add + 1;
    if (need <= b->cap) return 0;
    size_t nc = b->cap ? b->cap : 64;
    while (nc < need) nc = nc > SIZE_MAX / 2 ? need : nc * 2;
    if (c->lim.max_memory && c->heap + (nc - b->cap) + c->ar.total > c->lim.max_memory)
        return tpl_fail(c, X_LIMIT, "the render needs more than max_memory (%zu bytes)", c->lim.max_memory);
    char *nd = realloc(b->d, nc);
    if (!nd) return tpl_fail(c, X_MEMORY, "out of memory");
    c->heap += nc - b->cap;
    b->d = nd;
    b->cap = nc;
    return 0;
}

int tb_put(tpl_ctx *c, tbuf *b, const char *s, size_t n) {
    if (n == 0) return 0;
    if (tb_reserve(c, b, n) < 0) return -1;
    memcpy(b->d + b->n, s, n);
    b->n += n;
    b->d[b->n] = 0;
    return 0;
}

int tb_putc(tpl_ctx *c, tbuf *b, char ch) { return tb_put(c, b, &ch, 1); }
int tb_puts(tpl_ctx *c, tbuf *b, const char *s) { return tb_put(c, b, s, strlen(s)); }

int tb_printf(tpl_ctx *c, tbuf *b, const char *fmt, ...) {
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k < 0) return 0;
    return tb_put(c, b, tmp, (size_t)k < sizeof tmp ? (size_t)k : sizeof tmp - 1);
}

int tb_mark(tpl_ctx *c, tbuf *b, size_t a, size_t e) {
    if (e <= a) return 0;
    if (b->nsp && b->sp[b->nsp - 1].b >= a) { /* merge with the previous span */
        if (e > b->sp[b->nsp - 1].b) b->sp[b->nsp - 1].b = (uint32_t)e;
        return 0;
    }
    if (b->nsp == b->spcap) {
        size_t nc = b->spcap ? b->spcap * 2 : 8;
        tspan *ns = realloc(b->sp, nc * sizeof(tspan));
        if (!ns) return tpl_fail(c, X_MEMORY, "out of memory");
        c->heap += (nc - b->spcap) * sizeof(tspan);
        b->sp = ns;
        b->spcap = nc;
    }
    b->sp[b->nsp].a = (uint32_t)a;
    b->sp[b->nsp].b = (uint32_t)e;
    b->nsp++;
    return 0;
}

int tb_put_taint(tpl_ctx *c, tbuf *b, const char *s, size_t n) {
    size_t a = b->n;
    if (tb_put(c, b, s, n) < 0) return -1;
    return tb_mark(c, b, a, b->n);
}

int tb_put_sub(tpl_ctx *c, tbuf *b, const tstr *s, size_t a, size_t e) {
    size_t base = b->n;
    if (tb_put(c, b, s->data + a, e - a) < 0) return -1;
    for (uint32_t i = 0; i < s->nspan; i++) {
        size_t x = s->spans[i].a, y = s->spans[i].b;
        if (y <= a || x >= e) continue;
        if (x < a) x = a;
        if (y > e) y = e;
        if (tb_mark(c, b, base + x - a, base + y - a) < 0) return -1;
    }
    return 0;
}

int tb_put_str(tpl_ctx *c, tbuf *b, const tstr *s) {
    if (!s->nspan) return tb_put(c, b, s->data, s->len);
    return tb_put_sub(c, b, s, 0, s->len);
}

void tb_free(tpl_ctx *c, tbuf *b) {
    c->heap -= b->cap + b->spcap * sizeof(tspan);
    free(b->d);
    free(b->sp);
    memset(b, 0, sizeof *b);
}

static void scan_ascii(tstr *s) {
    const unsigned char *p = (const unsigned char *)s->data;
    bool ascii = true;
    for (uint32_t i = 0; i < s->len; i++)
        if (p[i] >= 0x80) { ascii = false; break; }
    s->ascii = ascii;
    s->nchars = ascii ? s->len : UINT32_MAX;
}

tstr *tb_finish(tpl_ctx *c, tbuf *b) {
    if (tpl_charge(c, 1 + b->n / TPL_BYTES_PER_STEP) < 0) { tb_free(c, b); return NULL; }
    tstr *s = tpl_alloc(c, sizeof(tstr) + b->n + 1 + b->nsp * sizeof(tspan) + 8);
    if (!s) { tb_free(c, b); return NULL; }
    s->len = (uint32_t)b->n;
    if (b->n) memcpy(s->data, b->d, b->n);
    s->data[b->n] = 0;
    if (b->nsp) {
        size_t off = (sizeof(tstr) + b->n + 1 + 7) & ~(size_t)7;
        s->spans = (tspan *)((char *)s + off);
        memcpy(s->spans, b->sp, b->nsp * sizeof(tspan));
        s->nspan = (uint32_t)b->nsp;
    }
    scan_ascii(s);
    tb_free(c, b);
    return s;
}

/* ------------------------------------------------------------------ strings */

const tstr tpl_empty_str = {0, 0, 0, 1, NULL};

tstr *tstr_new_taint(tpl_ctx *c, const char *src, size_t n, bool taint) {
    if (n > c->lim.max_output) {
        tpl_fail(c, X_LIMIT, "a string exceeds max_output (%zu bytes)", c->lim.max_output);
        return NULL;
    }
    if (tpl_charge(c, 1 + n / TPL_BYTES_PER_STEP) < 0) return NULL;
    tstr *s = tpl_alloc(c, sizeof(tstr) + n + 1 + (taint ? sizeof(tspan) + 8 : 0));
    if (!s) return NULL;
    s->len = (uint32_t)n;
    if (n) memcpy(s->data, src, n);
    s->data[n] = 0;
    if (taint && n) {
        size_t off = (sizeof(tstr) + n + 1 + 7) & ~(size_t)7;
        s->spans = (tspan *)((char *)s + off);
        s->spans[0].a = 0;
        s->spans[0].b = (uint32_t)n;
        s->nspan = 1;
    }
    scan_ascii(s);
    return s;
}

tstr *tstr_new(tpl_ctx *c, const char *src, size_t n) { return tstr_new_taint(c, src, n, false); }

/* Template constants are shared by concurrent renders: every lazily cached field
 * (nchars) is filled here, so renders never write to them. */
tstr *tstr_static(tpl_arena *a, const char *src, size_t n) {
    if (n > UINT32_MAX - 64) return NULL;
    tstr *s = tpl_arena_alloc(a, sizeof(tstr) + n + 1);
    if (!s) return NULL;
    s->len = (uint32_t)n;
    if (n) memcpy(s->data, src, n);
    s->data[n] = 0;
    scan_ascii(s);
    tstr_nchars(s);
    return s;
}

/* a string of n bytes with room for nspan spans, in the arena */
static tstr *tstr_alloc(tpl_ctx *c, size_t n, uint32_t nspan) {
    if (n > c->lim.max_output) {
        tpl_fail(c, X_LIMIT, "a string exceeds max_output (%zu bytes)", c->lim.max_output);
        return NULL;
    }
    if (tpl_charge(c, 1 + n / TPL_BYTES_PER_STEP) < 0) return NULL;
    size_t off = (sizeof(tstr) + n + 1 + 7) & ~(size_t)7;
    tstr *s = tpl_alloc(c, off + (size_t)nspan * sizeof(tspan));
    if (!s) return NULL;
    s->len = (uint32_t)n;
    if (nspan) s->spans = (tspan *)((char *)s + off);
    return s;
}

static void add_span(tstr *s, size_t a, size_t b) {
    if (b <= a) return;
    if (s->nspan && s->spans[s->nspan - 1].b >= a) {
        if (b > s->spans[s->nspan - 1].b) s->spans[s->nspan - 1].b = (uint32_t)b;
        return;
    }
    s->spans[s->nspan].a = (uint32_t)a;
    s->spans[s->nspan].b = (uint32_t)b;
    s->nspan++;
}

static void copy_spans(tstr *dst, size_t base, const tstr *s, size_t a, size_t e) {
    for (uint32_t i = 0; i < s->nspan; i++) {
        size_t x = s->spans[i].a, y = s->spans[i].b;
        if (y <= a || x >= e) continue;
        add_span(dst, base + (x < a ? a : x) - a, base + (y > e ? e : y) - a);
    }
}

tstr *tstr_sub(tpl_ctx *c, const tstr *s, size_t a, size_t e) {
    if (a == 0 && e == s->len) return (tstr *)s;
    if (!s->nspan) return tstr_new(c, s->data + a, e - a);
    tstr *r = tstr_alloc(c, e - a, s->nspan);
    if (!r) return NULL;
    memcpy(r->data, s->data + a, e - a);
    r->data[e - a] = 0;
    copy_spans(r, 0, s, a, e);
    scan_ascii(r);
    return r;
}

tstr *tstr_concat(tpl_ctx *c, const tstr *x, const tstr *y) {
    if ((size_t)x->len + y->len > c->lim.max_output) {
        tpl_fail(c, X_LIMIT, "a string exceeds max_output (%zu bytes)", c->lim.max_output);
        return NULL;
    }
    tstr *r = tstr_alloc(c, (size_t)x->len + y->len, x->nspan + y->nspan);
    if (!r) return NULL;
    memcpy(r->data, x->data, x->len);
    memcpy(r->data + x->len, y->data, y->len);
    r->data[r->len] = 0;
    copy_spans(r, 0, x, 0, x->len);
    copy_spans(r, x->len, y, 0, y->len);
    r->ascii = x->ascii && y->ascii;
    r->nchars = r->ascii ? r->len : UINT32_MAX;
    return r;
}

tstr *tstr_taint_like(tpl_ctx *c, tbuf *b, const tstr *src) {
    if (src && src->nspan) {
        b->nsp = 0;
        if (tb_mark(c, b, 0, b->n) < 0) { tb_free(c, b); return NULL; }
    }
    return tb_finish(c, b);
}

bool tstr_eq(const tstr *s, const char *lit) {
    size_t n = strlen(lit);
    return s->len == n && memcmp(s->data, lit, n) == 0;
}

uint32_t tstr_nchars(tstr *s) {
    if (s->nchars != UINT32_MAX) return s->nchars;
    uint32_t k = 0;
    for (uint32_t i = 0; i < s->len; i++)
        if (((unsigned char)s->data[i] & 0xC0) != 0x80) k++;
    s->nchars = k;
    return k;
}

/* Code points (bytes that are not UTF-8 continuation bytes 10xxxxxx) in 8 bytes. */
static inline unsigned u8_starts8(const unsigned char *p) {
    uint64_t w;
    memcpy(&w, p, 8);
    const uint64_t cont = (w >> 7) & ~(w >> 6) & UINT64_C(0x0101010101010101);
    return 8u - (unsigned)((cont * UINT64_C(0x0101010101010101)) >> 56);
}

size_t tstr_byte_at(const tstr *s, int64_t cp) {
    if (cp <= 0) return 0;
    if (s->ascii) return cp >= (int64_t)s->len ? s->len : (size_t)cp;
    if (s->nchars != UINT32_MAX && cp >= (int64_t)s->nchars) return s->len;
    const unsigned char *d = (const unsigned char *)s->data;
    int64_t k = 0;
    size_t i = 0;
    /* whole 8-byte words while the code point lies beyond them (a word that ends in the
     * middle of a character only moves the count: the byte scan below resumes there) */
    while (i + 8 <= s->len) {
        unsigned n = u8_starts8(d + i);
        if (k + n > cp) break;
        k += n;
        i += 8;
    }
    for (; i < s->len; i++) {
        if ((d[i] & 0xC0) != 0x80) {
            if (k == cp) return i;
            k++;
        }
    }
    return s->len;
}

/* ------------------------------------------------------------------ constructors */

tval tv_list(tlist *l, int kind) {
    tval v = {0};
    v.k = TV_LIST;
    v.sub = (uint8_t)kind;
    v.u.l = l;
    return v;
}

static uint16_t obj_code(tval v) { return (uint16_t)(v.k | (v.k == TV_LIST ? v.sub << 8 : 0)); }

tval tv_undef_name(const tstr *name) {
    tval v = {0};
    v.k = TV_UNDEF;
    v.sub = U_NAME;
    v.u.p = name;
    return v;
}

tval tv_undef_attr(tpl_ctx *c, tval obj, const tstr *name) {
    (void)c;
    tval v = {0};
    v.k = TV_UNDEF;
    v.sub = U_ATTR;
    v.x = obj_code(obj);
    v.u.p = name;
    return v;
}

tval tv_undef_item(tpl_ctx *c, tval obj, tval key) {
    if (key.k == TV_STR) return tv_undef_attr(c, obj, key.u.s);
    tval v = {0};
    v.k = TV_UNDEF;
    v.sub = U_ITEM;
    v.x = obj_code(obj);
    tbuf b = {0};
    if (tv_write_repr(c, &b, key, 0) == 0) v.u.p = tb_finish(c, &b);
    else tb_free(c, &b);
    return v;
}

tval tv_undef_hint(tpl_ctx *c, const char *hint) {
    tval v = {0};
    v.k = TV_UNDEF;
    v.sub = U_HINT;
    v.u.p = tstr_new(c, hint, strlen(hint));
    return v;
}

tval tv_unsafe(tpl_ctx *c, tval obj, const tstr *name) {
    tval v = {0};
    v.k = TV_UNDEF;
    v.sub = U_UNSAFE;
    char msg[256];
    snprintf(msg, sizeof msg, "access to attribute '%.*s' of '%s' object is unsafe.", (int)(name->len > 64 ? 64 : name->len),
             name->data, tv_type_name(obj));
    v.u.p = tstr_new(c, msg, strlen(msg));
    return v;
}

static const char *code_type_repr(uint16_t code, char *buf, size_t cap) {
    tval t = {0};
    t.k = (uint8_t)(code & 0xFF);
    t.sub = (uint8_t)(code >> 8);
    if (t.k == TV_NONE) return "None";
    const char *n = tv_type_name(t);
    if (t.k == TV_NS) snprintf(buf, cap, "jinja2.utils.Namespace object");
    else if (t.k == TV_LOOP) snprintf(buf, cap, "jinja2.runtime.LoopContext object");
    else if (t.k == TV_MACRO) snprintf(buf, cap, "jinja2.runtime.Macro object");
    else if (t.k == TV_CYCLER) snprintf(buf, cap, "jinja2.utils.Cycler object");
    else if (t.k == TV_JOINER) snprintf(buf, cap, "jinja2.utils.Joiner object");
    else if (t.k == TV_LIST && t.sub == LK_GROUP) snprintf(buf, cap, "jinja2.filters._GroupTuple object");
    else snprintf(buf, cap, "%s object", n);
    return buf;
}

int tpl_undef_fail(tpl_ctx *c, tval u) {
    const tstr *s = u.u.p;
    char tb[96];
    switch (u.sub) {
    case U_NAME:
        return tpl_fail(c, X_UNDEFINED, "'%.*s' is undefined", s ? (int)s->len : 0, s ? s->data : "");
    case U_ATTR:
        return tpl_fail(c, X_UNDEFINED, "'%s' has no attribute '%.*s'", code_type_repr(u.x, tb, sizeof tb),
                        s ? (int)(s->len > 200 ? 200 : s->len) : 0, s ? s->data : "");
    case U_ITEM:
        return tpl_fail(c, X_UNDEFINED, "%s has no element %.*s", code_type_repr(u.x, tb, sizeof tb),
                        s ? (int)(s->len > 200 ? 200 : s->len) : 0, s ? s->data : "");
    case U_HINT: return tpl_fail(c, X_UNDEFINED, "%s", s ? s->data : "undefined");
    case U_UNSAFE: return tpl_fail(c, X_SECURITY, "%s", s ? s->data : "unsafe");
    default: return tpl_fail(c, X_UNDEFINED, "missing value");
    }
}

/* ------------------------------------------------------------------ lists and dicts */

tlist *tl_new(tpl_ctx *c, uint32_t n) {
    if (tpl_charge(c, 1 + n / 8) < 0) return NULL;
    tlist *l = tpl_alloc(c, sizeof(tlist) + (size_t)n * sizeof(tval));
    if (!l) return NULL;
    l->n = n;
    l->depth = 1;
    l->v = (tval *)(l + 1);
    return l;
}

static uint32_t val_depth(tval v) {
    if (v.k == TV_LIST) return v.u.l->depth;
    if (v.k == TV_DICT) return v.u.d->depth;
    return 0;
}

int tl_finish_depth(tpl_ctx *c, tlist *l) {
    uint32_t d = 0;
    for (uint32_t i = 0; i < l->n; i++) {
        uint32_t x = val_depth(l->v[i]);
        if (x > d) d = x;
    }
    l->depth = d + 1;
    if (l->depth > TPL_MAX_CONTAINER_DEPTH)
        return tpl_fail(c, X_LIMIT, "containers nested deeper than %d", TPL_MAX_CONTAINER_DEPTH);
    return 0;
}

tdict *td_new(tpl_ctx *c, uint32_t cap) {
    tdict *d = tpl_alloc(c, sizeof(tdict));
    if (!d) return NULL;
    if (cap < 4) cap = 4;
    d->keys = tpl_alloc(c, (size_t)cap * sizeof(tval));
    d->vals = tpl_alloc(c, (size_t)cap * sizeof(tval));
    if (!d->keys || !d->vals) return NULL;
    d->cap = cap;
    d->depth = 1;
    return d;
}

bool tv_hashable(tval v) {
    if (v.k == TV_DICT) return false;
    if (v.k == TV_LIST) {
        if (v.sub != LK_TUPLE && v.sub != LK_GROUP && v.sub != LK_GEN && v.sub != LK_REVITER && v.sub != LK_RANGE)
            return false;
        if (v.sub == LK_TUPLE || v.sub == LK_GROUP)
            for (uint32_t i = 0; i < v.u.l->n; i++)
                if (!tv_hashable(v.u.l->v[i])) return false;
    }
    return true;
}

static uint64_t mix(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return h;
}

static uint64_t tv_hash(tval v) {
    switch (v.k) {
    case TV_NONE: return 0x1234567;
    case TV_BOOL: return mix((uint64_t)v.u.b);
    case TV_INT: return mix((uint64_t)v.u.i);
    case TV_FLOAT: {
        double f = v.u.f;
        if (f == floor(f) && fabs(f) < 9.2e18) return mix((uint64_t)(int64_t)f);
        uint64_t bits;
        memcpy(&bits, &f, 8);
        return mix(bits);
    }
    case TV_STR: {
        uint64_t h = 1469598103934665603ULL;
        for (uint32_t i = 0; i < v.u.s->len; i++) h = (h ^ (unsigned char)v.u.s->data[i]) * 1099511628211ULL;
        return h;
    }
    case TV_LIST:
        if (v.sub == LK_TUPLE || v.sub == LK_GROUP) {
            uint64_t h = 0x345678;
            for (uint32_t i = 0; i < v.u.l->n; i++) h = mix(h * 1000003 ^ tv_hash(v.u.l->v[i]));
            return h;
        }
        return mix((uint64_t)(uintptr_t)v.u.l);
    default: return mix((uint64_t)(uintptr_t)v.u.p);
    }
}

static int td_index_insert(tdict *d, uint32_t idx) {
    uint64_t h = tv_hash(d->keys[idx]);
    uint32_t m = d->icap - 1, j = (uint32_t)h & m;
    while (d->index[j]) j = (j + 1) & m;
    d->index[j] = idx + 1;
    return 0;
}

static int td_reindex(tpl_ctx *c, tdict *d) {
    uint32_t ic = 16;
    while (ic < d->n * 2 + 2) ic *= 2;
    uint32_t *ix = tpl_alloc(c, (size_t)ic * sizeof(uint32_t));
    if (!ix) return -1;
    d->index = ix;
    d->icap = ic;
    for (uint32_t i = 0; i < d->n; i++) td_index_insert(d, i);
    return 0;
}

int td_find(tpl_ctx *c, const tdict *d, tval k, uint32_t *idx) {
    if (k.k == TV_STR && k.u.s->len > TPL_BYTES_PER_STEP && tpl_charge(c, k.u.s->len / TPL_BYTES_PER_STEP) < 0) return -1;
    if (d->index) {
        uint32_t m = d->icap - 1, j = (uint32_t)tv_hash(k) & m;
        while (d->index[j]) {
            uint32_t e = d->index[j] - 1;
            bool eq;
            if (tv_eq(c, d->keys[e], k, &eq) < 0) return -1;
            if (eq) { *idx = e; return 1; }
            j = (j + 1) & m;
        }
        return 0;
    }
    for (uint32_t i = 0; i < d->n; i++) {
        bool eq;
        if (d->keys[i].k == TV_STR && k.k == TV_STR) {
            eq = d->keys[i].u.s->len == k.u.s->len && memcmp(d->keys[i].u.s->data, k.u.s->data, k.u.s->len) == 0;
        } else if (tv_eq(c, d->keys[i], k, &eq) < 0) return -1;
        if (eq) { *idx = i; return 1; }
    }
    return 0;
}

int td_set(tpl_ctx *c, tdict *d, tval k, tval v) {
    uint32_t idx;
    int f = td_find(c, d, k, &idx);
    if (f < 0) return -1;
    if (f) {
        d->vals[idx] = v;
    } else {
        if (d->n == d->cap) {
            uint32_t nc = d->cap * 2;
            tval *nk = tpl_alloc(c, (size_t)nc * sizeof(tval)), *nv = tpl_alloc(c, (size_t)nc * sizeof(tval));
            if (!nk || !nv) return -1;
            memcpy(nk, d->keys, d->n * sizeof(tval));
            memcpy(nv, d->vals, d->n * sizeof(tval));
            d->keys = nk;
            d->vals = nv;
            d->cap = nc;
        }
        d->keys[d->n] = k;
        d->vals[d->n] = v;
        d->n++;
        if (d->index) {
            if (d->n * 2 > d->icap) { if (td_reindex(c, d) < 0) return -1; }
            else td_index_insert(d, d->n - 1);
        } else if (d->n > 8) {
            if (td_reindex(c, d) < 0) return -1;
        }
    }
    uint32_t vd = val_depth(v) + 1;
    if (vd > d->depth) d->depth = vd;
    if (d->depth > TPL_MAX_CONTAINER_DEPTH)
        return tpl_fail(c, X_LIMIT, "containers nested deeper than %d", TPL_MAX_CONTAINER_DEPTH);
    return 0;
}

const tval *td_get_cstr(const tdict *d, const char *key) {
    for (uint32_t i = 0; i < d->n; i++)
        if (d->keys[i].k == TV_STR && tstr_eq(d->keys[i].u.s, key)) return &d->vals[i];
    return NULL;
}

/* ------------------------------------------------------------------ predicates */

bool tv_truthy(tval v) {
    switch (v.k) {
    case TV_UNDEF: case TV_NONE: return false;
    case TV_BOOL: return v.u.b;
    case TV_INT: return v.u.i != 0;
    case TV_FLOAT: return v.u.f != 0.0;
    case TV_STR: return v.u.s->len != 0;
    case TV_LIST:
        if (v.sub == LK_GEN || v.sub == LK_REVITER) return true;
        return v.u.l->n != 0;
    case TV_DICT: return v.u.d->n != 0;
    default: return true;
    }
}

const char *tv_type_name(tval v) {
    switch (v.k) {
    case TV_UNDEF: return "Undefined";
    case TV_NONE: return "NoneType";
    case TV_BOOL: return "bool";
    case TV_INT: return "int";
    case TV_FLOAT: return "float";
    case TV_STR: return "str";
    case TV_LIST:
        switch (v.sub) {
        case LK_TUPLE: return "tuple";
        case LK_GEN: return "generator";
        case LK_REVITER: return "list_reverseiterator";
        case LK_KEYS: return "dict_keys";
        case LK_VALUES: return "dict_values";
        case LK_ITEMS: return "dict_items";
        case LK_RANGE: return "range";
        case LK_GROUP: return "_GroupTuple";
        default: return "list";
        }
    case TV_DICT: return "dict";
    case TV_NS: return "Namespace";
    case TV_MACRO: return "Macro";
    case TV_FUNC: return "builtin_function_or_method";
    case TV_LOOP: return "LoopContext";
    case TV_CYCLER: return "Cycler";
    case TV_JOINER: return "Joiner";
    default: return "object";
    }
}

int tv_num(tval v, double *f, int64_t *i, bool *is_int) {
    switch (v.k) {
    case TV_BOOL: *i = v.u.b; *f = v.u.b; *is_int = true; return 1;
    case TV_INT: *i = v.u.i; *f = (double)v.u.i; *is_int = true; return 1;
    case TV_FLOAT: *f = v.u.f; *i = 0; *is_int = false; return 1;
    default: return 0;
    }
}

/* -1/0/1, or 2 when unordered (NaN) */
static int num_cmp(tval a, tval b) {
    double fa = 0, fb = 0;
    int64_t ia = 0, ib = 0;
    bool ai = false, bi = false;
    tv_num(a, &fa, &ia, &ai);
    tv_num(b, &fb, &ib, &bi);
    if (ai && bi) return ia < ib ? -1 : ia > ib;
    if (!ai && !bi) {
        if (isnan(fa) || isnan(fb)) return 2;
        return fa < fb ? -1 : fa > fb;
    }
    int sign = 1;
    int64_t iv = ai ? ia : ib;
    double fv = ai ? fb : fa;
    if (!ai) sign = -1; /* computed as int vs float, flip */
    if (isnan(fv)) return 2;
    int r;
    if (fv >= 9223372036854775808.0) r = -1;
    else if (fv < -9223372036854775808.0) r = 1;
    else {
        double fl = floor(fv);
        int64_t fi = (int64_t)fl;
        if (iv < fi) r = -1;
        else if (iv > fi) r = 1;
        else r = fv > fl ? -1 : 0;
    }
    return r * sign;
}

static bool is_num(tval v) { return v.k == TV_BOOL || v.k == TV_INT || v.k == TV_FLOAT; }

static bool seq_family_eq(tval a, tval b) {
    int fa = (a.sub == LK_GROUP) ? LK_TUPLE : a.sub, fb = (b.sub == LK_GROUP) ? LK_TUPLE : b.sub;
    return fa == fb;
}

static int eq_depth(tpl_ctx *c, tval a, tval b, bool *res, int depth) {
    if (depth > TPL_MAX_CONTAINER_DEPTH + 8) return tpl_fail(c, X_LIMIT, "comparison nests too deep");
    *res = false;
    if (is_num(a) && is_num(b)) { *res = num_cmp(a, b) == 0; return 0; }
    if (a.k != b.k) return 0;
    switch (a.k) {
    case TV_UNDEF: case TV_NONE: *res = true; return 0;
    case TV_STR:
        if (a.u.s->len == b.u.s->len && a.u.s->len > TPL_BYTES_PER_STEP && tpl_charge(c, a.u.s->len / TPL_BYTES_PER_STEP) < 0) return -1;
        *res = a.u.s == b.u.s || (a.u.s->len == b.u.s->len && memcmp(a.u.s->data, b.u.s->data, a.u.s->len) == 0);
        return 0;
    case TV_LIST: {
        if (!seq_family_eq(a, b)) return 0;
        if (a.sub == LK_GEN || a.sub == LK_REVITER) { *res = a.u.l == b.u.l; return 0; }
        tlist *x = a.u.l, *y = b.u.l;
        if (x == y) { *res = true; return 0; }
        if (a.sub == LK_KEYS || a.sub == LK_ITEMS) { /* set-like */
            if (x->n != y->n) return 0;
            for (uint32_t i = 0; i < x->n; i++) {
                bool found = false;
                for (uint32_t j = 0; j < y->n && !found; j++)
                    if (eq_depth(c, x->v[i], y->v[j], &found, depth + 1) < 0) return -1;
                if (!found) return 0;
            }
            *res = true;
            return 0;
        }
        if (a.sub == LK_VALUES) return 0; /* dict_values compare by identity */
        if (x->n != y->n) return 0;
        if (tpl_charge(c, x->n / 2) < 0) return -1;
        for (uint32_t i = 0; i < x->n; i++) {
            bool e;
            if (eq_depth(c, x->v[i], y->v[i], &e, depth + 1) < 0) return -1;
            if (!e) return 0;
        }
        *res = true;
        return 0;
    }
    case TV_DICT: {
        tdict *x = a.u.d, *y = b.u.d;
        if (x == y) { *res = true; return 0; }
        if (x->n != y->n) return 0;
        if (tpl_charge(c, x->n / 8) < 0) return -1;
        for (uint32_t i = 0; i < x->n; i++) {
            uint32_t j;
            int f = td_find(c, y, x->keys[i], &j);
            if (f < 0) return -1;
            if (!f) return 0;
            bool e;
            if (eq_depth(c, x->vals[i], y->vals[j], &e, depth + 1) < 0) return -1;
            if (!e) return 0;
        }
        *res = true;
        return 0;
    }
    default: *res = a.u.p == b.u.p; return 0;
    }
}

int tv_eq(tpl_ctx *c, tval a, tval b, bool *res) { return eq_depth(c, a, b, res, 0); }

static const char *op_sym(int op) {
    switch (op) {
    case CMP_LT: return "<";
    case CMP_LE: return "<=";
    case CMP_GT: return ">";
    case CMP_GE: return ">=";
    default: return "?";
    }
}

/* ordering comparison op in {LT, LE, GT, GE} */
static int ord_cmp(tpl_ctx *c, int op, tval a, tval b, bool *res, int depth) {
    if (a.k == TV_UNDEF) return tpl_undef_fail(c, a);
    if (b.k == TV_UNDEF) return tpl_undef_fail(c, b);
    int r;
    if (is_num(a) && is_num(b)) {
        r = num_cmp(a, b);
        if (r == 2) { *res = false; return 0; }
    } else if (a.k == TV_STR && b.k == TV_STR) {
        size_t n = a.u.s->len < b.u.s->len ? a.u.s->len : b.u.s->len;
        if (n > TPL_BYTES_PER_STEP && tpl_charge(c, n / TPL_BYTES_PER_STEP) < 0) return -1;
        r = memcmp(a.u.s->data, b.u.s->data, n);
        r = r < 0 ? -1 : r > 0 ? 1 : (a.u.s->len < b.u.s->len ? -1 : a.u.s->len > b.u.s->len);
    } else if (a.k == TV_LIST && b.k == TV_LIST && seq_family_eq(a, b) &&
               (a.sub == LK_LIST || a.sub == LK_TUPLE || a.sub == LK_GROUP)) {
        if (depth > TPL_MAX_CONTAINER_DEPTH + 8) return tpl_fail(c, X_LIMIT, "comparison nests too deep");
        tlist *x = a.u.l, *y = b.u.l;
        uint32_t n = x->n < y->n ? x->n : y->n;
        for (uint32_t i = 0; i < n; i++) {
            bool e;
            if (eq_depth(c, x->v[i], y->v[i], &e, depth + 1) < 0) return -1;
            if (!e) return ord_cmp(c, op, x->v[i], y->v[i], res, depth + 1);
        }
        r = x->n < y->n ? -1 : x->n > y->n;
    } else {
        return tpl_fail(c, X_TYPE, "'%s' not supported between instances of '%s' and '%s'", op_sym(op),
                        tv_type_name(a), tv_type_name(b));
    }
    switch (op) {
    case CMP_LT: *res = r < 0; break;
    case CMP_LE: *res = r <= 0; break;
    case CMP_GT: *res = r > 0; break;
    default: *res = r >= 0; break;
    }
    return 0;
}

int tv_lt(tpl_ctx *c, tval a, tval b, bool *res) { return ord_cmp(c, CMP_LT, a, b, res, 0); }

int tv_cmp_op(tpl_ctx *c, int op, tval a, tval b, bool *res) {
    switch (op) {
    case CMP_EQ: return tv_eq(c, a, b, res);
    case CMP_NE: if (tv_eq(c, a, b, res) < 0) return -1; *res = !*res; return 0;
    case CMP_IN: return tv_contains(c, b, a, res);
    case CMP_NOTIN: if (tv_contains(c, b, a, res) < 0) return -1; *res = !*res; return 0;
    default: return ord_cmp(c, op, a, b, res, 0);
    }
}

int tv_contains(tpl_ctx *c, tval con, tval item, bool *res) {
    *res = false;
    switch (con.k) {
    case TV_UNDEF:
        if (con.sub == U_UNSAFE) return tpl_undef_fail(c, con);
        return 0;
    case TV_STR:
        if (item.k != TV_STR)
            return tpl_fail(c, X_TYPE, "'in <string>' requires string as left operand, not %s", tv_type_name(item));
        if (item.u.s->len == 0) { *res = true; return 0; }
        if (tpl_charge(c, con.u.s->len / TPL_BYTES_PER_STEP) < 0) return -1;
        *res = item.u.s->len <= con.u.s->len &&
               memmem(con.u.s->data, con.u.s->len, item.u.s->data, item.u.s->len) != NULL;
        return 0;
    case TV_DICT: {
        if (!tv_hashable(item)) return tpl_fail(c, X_TYPE, "unhashable type: '%s'", tv_type_name(item));
        uint32_t idx;
        int f = td_find(c, con.u.d, item, &idx);
        if (f < 0) return -1;
        *res = f == 1;
        return 0;
    }
    case TV_LIST: {
        tlist *l = con.u.l;
        uint32_t start = (con.sub == LK_GEN || con.sub == LK_REVITER) ? l->pos : 0;
        if (tpl_charge(c, (l->n - start) / 2) < 0) return -1;
        for (uint32_t i = start; i < l->n; i++) {
            bool e;
            if (tv_eq(c, l->v[i], item, &e) < 0) return -1;
            if (e) {
                if (con.sub == LK_GEN || con.sub == LK_REVITER) l->pos = i + 1;
                *res = true;
                return 0;
            }
        }
        if (con.sub == LK_GEN || con.sub == LK_REVITER) l->pos = l->n;
        return 0;
    }
    case TV_NS:
    case TV_NONE:
    case TV_BOOL:
    case TV_INT:
    case TV_FLOAT:
    case TV_MACRO:
    case TV_FUNC:
    case TV_CYCLER:
    case TV_JOINER:
        return tpl_fail(c, X_TYPE, "argument of type '%s' is not iterable", tv_type_name(con));
    default: return tpl_fail(c, X_TYPE, "argument of type '%s' is not iterable", tv_type_name(con));
    }
}

int tv_len(tpl_ctx *c, tval v, int64_t *n) {
    switch (v.k) {
    case TV_UNDEF:
        if (v.sub == U_UNSAFE) return tpl_undef_fail(c, v);
        *n = 0;
        return 0;
    case TV_STR: *n = tstr_nchars(v.u.s); return 0;
    case TV_LIST:
        if (v.sub == LK_GEN || v.sub == LK_REVITER) break;
        *n = v.u.l->n;
        return 0;
    case TV_DICT: *n = v.u.d->n; return 0;
    case TV_LOOP: *n = v.u.lp->n; return 0;
    default: break;
    }
    return tpl_fail(c, X_TYPE, "object of type '%s' has no len()", tv_type_name(v));
}

int tv_iter(tpl_ctx *c, tval v, const tval **items, int64_t *n) {
    switch (v.k) {
    case TV_UNDEF:
        if (v.sub == U_UNSAFE) return tpl_undef_fail(c, v);
        *items = NULL;
        *n = 0;
        return 0;
    case TV_LIST: {
        tlist *l = v.u.l;
        if (v.sub == LK_GEN || v.sub == LK_REVITER) {
            *items = l->v + l->pos;
            *n = l->n - l->pos;
            l->pos = l->n;
            return 0;
        }
        *items = l->v;
        *n = l->n;
        return 0;
    }
    case TV_DICT: *items = v.u.d->keys; *n = v.u.d->n; return 0;
    case TV_STR: {
        tstr *s = v.u.s;
        uint32_t nc = tstr_nchars(s);
        tval *arr = tpl_alloc(c, (size_t)nc * sizeof(tval) + 1);
        if (!arr) return -1;
        size_t i = 0;
        for (uint32_t k = 0; k < nc; k++) {
            size_t adv = 1;
            if (!s->ascii) tpl_utf8_decode(s->data + i, s->len - i, &adv);
            tstr *ch = tstr_sub(c, s, i, i + adv);
            if (!ch) return -1;
            arr[k] = tv_str(ch);
            i += adv;
        }
        *items = arr;
        *n = nc;
        return 0;
    }
    case TV_LOOP: *items = v.u.lp->items; *n = v.u.lp->n; return 0;
    default: break;
    }
    return tpl_fail(c, X_TYPE, "'%s' object is not iterable", tv_type_name(v));
}

int tv_to_list(tpl_ctx *c, tval v, tval *out) {
    const tval *it;
    int64_t n;
    if (tv_iter(c, v, &it, &n) < 0) return -1;
    tlist *l = tl_new(c, (uint32_t)n);
    if (!l) return -1;
    if (n) memcpy(l->v, it, (size_t)n * sizeof(tval));
    if (tl_finish_depth(c, l) < 0) return -1;
    *out = tv_list(l, LK_LIST);
    return 0;
}

/* ------------------------------------------------------------------ str() / repr() */

void tpl_format_float(double f, char *buf, size_t cap) {
    if (isnan(f)) { snprintf(buf, cap, "nan"); return; }
    if (isinf(f)) { snprintf(buf, cap, f < 0 ? "-inf" : "inf"); return; }
    if (f == 0) { snprintf(buf, cap, signbit(f) ? "-0.0" : "0.0"); return; }
    /* shortest digits that round-trip */
    char tmp[40];
    int prec;
    for (prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, f);
        if (strtod(tmp, NULL) == f) break;
    }
    /* tmp = [-]d.ddde[+-]XX : split digits and exponent */
    char digits[24];
    int nd = 0, exp10;
    const char *p = tmp;
    bool neg = false;
    if (*p == '-') { neg = true; p++; }
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9') digits[nd++] = *p;
    exp10 = atoi(p + 1);
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    digits[nd] = 0;
    int decpt = exp10 + 1; /* value = 0.digits * 10^decpt */
    char *o = buf;
    size_t left = cap;
#define EMIT(...) do { int k_ = snprintf(o, left, __VA_ARGS__); if (k_ < 0 || (size_t)k_ >= left) return; o += k_; left -= (size_t)k_; } while (0)
    if (neg) EMIT("-");
    if (decpt > 16 || decpt < -3) {
        EMIT("%c", digits[0]);
        if (nd > 1) EMIT(".%s", digits + 1);
        int e = decpt - 1;
        EMIT("e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
    } else if (decpt <= 0) {
        EMIT("0.");
        for (int i = 0; i < -decpt; i++) EMIT("0");
        EMIT("%s", digits);
    } else if (decpt >= nd) {
        EMIT("%s", digits);
        for (int i = nd; i < decpt; i++) EMIT("0");
        EMIT(".0");
    } else {
        EMIT("%.*s.%s", decpt, digits, digits + decpt);
    }
#undef EMIT
}

static int write_str_repr(tpl_ctx *c, tbuf *b, const tstr *s) {
    bool has_sq = memchr(s->data, '\'', s->len) != NULL, has_dq = memchr(s->data, '"', s->len) != NULL;
    char q = (has_sq && !has_dq) ? '"' : '\'';
    size_t start = b->n;
    if (tb_putc(c, b, q) < 0) return -1;
    for (size_t i = 0; i < s->len;) {
        unsigned char ch = (unsigned char)s->data[i];
        char esc[16];
        if (ch < 0x80) {
            i++;
            if (ch == '\\' || ch == (unsigned char)q) { esc[0] = '\\'; esc[1] = (char)ch; if (tb_put(c, b, esc, 2) < 0) return -1; }
            else if (ch == '\n') { if (tb_put(c, b, "\\n", 2) < 0) return -1; }
            else if (ch == '\r') { if (tb_put(c, b, "\\r", 2) < 0) return -1; }
            else if (ch == '\t') { if (tb_put(c, b, "\\t", 2) < 0) return -1; }
            else if (ch < 0x20 || ch == 0x7F) { snprintf(esc, sizeof esc, "\\x%02x", ch); if (tb_puts(c, b, esc) < 0) return -1; }
            else if (tb_putc(c, b, (char)ch) < 0) return -1;
            continue;
        }
        size_t adv;
        uint32_t cp = tpl_utf8_decode(s->data + i, s->len - i, &adv);
        if (tpl_is_printable(cp)) {
            if (tb_put(c, b, s->data + i, adv) < 0) return -1;
        } else {
            if (cp < 0x100) snprintf(esc, sizeof esc, "\\x%02x", cp);
            else if (cp < 0x10000) snprintf(esc, sizeof esc, "\\u%04x", cp);
            else snprintf(esc, sizeof esc, "\\U%08x", cp);
            if (tb_puts(c, b, esc) < 0) return -1;
        }
        i += adv;
    }
    if (tb_putc(c, b, q) < 0) return -1;
    if (s->nspan) return tb_mark(c, b, start, b->n);
    return 0;
}

static int write_seq(tpl_ctx *c, tbuf *b, const tval *v, uint32_t n, const char *open, const char *close,
                     bool tuple1, int depth) {
    if (tb_puts(c, b, open) < 0) return -1;
    for (uint32_t i = 0; i < n; i++) {
        if (i && tb_put(c, b, ", ", 2) < 0) return -1;
        if (tv_write_repr(c, b, v[i], depth + 1) < 0) return -1;
    }
    if (tuple1 && n == 1 && tb_putc(c, b, ',') < 0) return -1;
    return tb_puts(c, b, close);
}

static int write_dict(tpl_ctx *c, tbuf *b, const tdict *d, int depth) {
    if (tb_putc(c, b, '{') < 0) return -1;
    for (uint32_t i = 0; i < d->n; i++) {
        if (i && tb_put(c, b, ", ", 2) < 0) return -1;
        if (tv_write_repr(c, b, d->keys[i], depth + 1) < 0 || tb_put(c, b, ": ", 2) < 0 ||
            tv_write_repr(c, b, d->vals[i], depth + 1) < 0)
            return -1;
    }
    return tb_putc(c, b, '}');
}

static int write_common(tpl_ctx *c, tbuf *b, tval v, int depth) {
    char tmp[64];
    if (depth > TPL_MAX_CONTAINER_DEPTH + 8) return tb_puts(c, b, "...");
    switch (v.k) {
    case TV_NONE: return tb_put(c, b, "None", 4);
    case TV_BOOL: return v.u.b ? tb_put(c, b, "True", 4) : tb_put(c, b, "False", 5);
    case TV_INT: return tb_printf(c, b, "%" PRId64, v.u.i);
    case TV_FLOAT: tpl_format_float(v.u.f, tmp, sizeof tmp); return tb_puts(c, b, tmp);
    case TV_LIST: {
        tlist *l = v.u.l;
        switch (v.sub) {
        case LK_TUPLE: case LK_GROUP: return write_seq(c, b, l->v, l->n, "(", ")", true, depth);
        case LK_KEYS: return write_seq(c, b, l->v, l->n, "dict_keys([", "])", false, depth);
        case LK_VALUES: return write_seq(c, b, l->v, l->n, "dict_values([", "])", false, depth);
        case LK_ITEMS: return write_seq(c, b, l->v, l->n, "dict_items([", "])", false, depth);
        case LK_RANGE:
            if (l->r2 == 1) return tb_printf(c, b, "range(%" PRId64 ", %" PRId64 ")", l->r0, l->r1);
            return tb_printf(c, b, "range(%" PRId64 ", %" PRId64 ", %" PRId64 ")", l->r0, l->r1, l->r2);
        case LK_GEN: return tb_puts(c, b, "<generator object at 0x7f0000000000>");
        case LK_REVITER: return tb_puts(c, b, "<list_reverseiterator object at 0x7f0000000000>");
        default: return write_seq(c, b, l->v, l->n, "[", "]", false, depth);
        }
    }
    case TV_DICT: return write_dict(c, b, v.u.d, depth);
    case TV_NS:
        if (tb_puts(c, b, "<Namespace ") < 0 || write_dict(c, b, v.u.ns->attrs, depth + 1) < 0) return -1;
        return tb_putc(c, b, '>');
    case TV_MACRO:
        return tb_printf(c, b, "<Macro '%.*s'>", (int)(v.u.m->name->len > 100 ? 100 : v.u.m->name->len),
                         v.u.m->name->data);
    case TV_LOOP: return tb_printf(c, b, "<LoopContext %" PRId64 "/%" PRId64 ">", v.u.lp->i + 1, v.u.lp->n);
    case TV_FUNC: return tb_puts(c, b, "<built-in method>");
    case TV_CYCLER: return tb_puts(c, b, "<jinja2.utils.Cycler object at 0x7f0000000000>");
    case TV_JOINER: return tb_puts(c, b, "<jinja2.utils.Joiner object at 0x7f0000000000>");
    default: return 0;
    }
}

int tv_write_str(tpl_ctx *c, tbuf *b, tval v) {
    if (v.k == TV_STR) return tb_put_str(c, b, v.u.s);
    if (v.k == TV_UNDEF) return 0;
    return write_common(c, b, v, 0);
}

int tv_write_repr(tpl_ctx *c, tbuf *b, tval v, int depth) {
    if (tv_is_markup(v)) {
        if (tb_puts(c, b, "Markup(") < 0 || write_str_repr(c, b, v.u.s) < 0) return -1;
        return tb_putc(c, b, ')');
    }
    if (v.k == TV_STR) return write_str_repr(c, b, v.u.s);
    if (v.k == TV_UNDEF) return tb_put(c, b, "Undefined", 9);
    return write_common(c, b, v, depth);
}

int tv_str_of(tpl_ctx *c, tval v, tstr **out) {
    if (v.k == TV_STR) { *out = v.u.s; return 0; }
    if (v.k == TV_UNDEF) { *out = (tstr *)&tpl_empty_str; return 0; }
    tbuf b = {0};
    if (tv_write_str(c, &b, v) < 0) { tb_free(c, &b); return -1; }
    *out = tb_finish(c, &b);
    return *out ? 0 : -1;
}

/* ------------------------------------------------------------------ markupsafe */

int tpl_escape(tpl_ctx *c, tbuf *b, const tstr *s) {
    size_t start = b->n;
    for (uint32_t i = 0; i < s->len; i++) {
        const char *e = NULL;
        switch (s->data[i]) {
        case '&': e = "&amp;"; break;
        case '<': e = "&lt;"; break;
        case '>': e = "&gt;"; break;
        case '"': e = "&#34;"; break;
        case '\'': e = "&#39;"; break;
        default: break;
        }
        if (e ? tb_puts(c, b, e) < 0 : tb_putc(c, b, s->data[i]) < 0) return -1;
    }
    if (s->nspan) return tb_mark(c, b, start, b->n);
    return 0;
}

int tpl_escape_val(tpl_ctx *c, tval v, bool force, tval *out) {
    if (tv_is_markup(v) && !force) { *out = v; return 0; }
    tstr *s;
    if (tv_str_of(c, v, &s) < 0) return -1;
    tbuf b = {0};
    if (tpl_escape(c, &b, s) < 0) { tb_free(c, &b); return -1; }
    tstr *r = tb_finish(c, &b);
    if (!r) return -1;
    *out = tv_markup(r);
    return 0;
}
