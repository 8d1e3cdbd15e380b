/* Public API of the template engine (include/loom_template.h): compile, render a
 * conversation given as JSON, tokenize with special tokens recognised only
 * outside content spans, and the GGUF / fallback helpers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "tpl.h"

static const char fallback_src[] =
    "{%- for message in messages -%}"
    "{%- if not loop.first %}{{ '\\n' }}{% endif -%}"
    "{%- if message.content is string -%}{{ message.content }}"
    "{%- elif message.content is iterable and message.content is not mapping -%}"
    "{%- for part in message.content if part is mapping and part.type == 'text' -%}{{ part.text }}{%- endfor -%}"
    "{%- endif -%}"
    "{%- endfor -%}";

const char *loom_template_fallback_source(void) { return fallback_src; }

/* ------------------------------------------------------------------ symbols */

static uint32_t name_hash(const char *s, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

static bool sym_rehash(loom_template *t, uint32_t cap) {
    uint32_t *h = tpl_arena_alloc(&t->arena, (size_t)cap * sizeof(uint32_t));
    if (!h) return false;
    for (uint32_t i = 0; i < t->nsyms; i++) {
        uint32_t j = name_hash(t->syms[i]->data, t->syms[i]->len) & (cap - 1);
        while (h[j]) j = (j + 1) & (cap - 1);
        h[j] = i + 1;
    }
    t->sym_hash = h;
    t->sym_hcap = cap;
    return true;
}

int tpl_find_sym(const loom_template *t, const char *s, size_t n) {
    if (!t->sym_hcap) return -1;
    uint32_t j = name_hash(s, n) & (t->sym_hcap - 1);
    for (; t->sym_hash[j]; j = (j + 1) & (t->sym_hcap - 1)) {
        const tstr *x = t->syms[t->sym_hash[j] - 1];
        if (x->len == n && !memcmp(x->data, s, n)) return (int)(t->sym_hash[j] - 1);
    }
    return -1;
}

/* symbol id of a name, adding it (ids are dense, in first-seen order) */
uint32_t tpl_intern(loom_template *t, const char *s, size_t n, bool *ok) {
    *ok = true;
    int found = tpl_find_sym(t, s, n);
    if (found >= 0) return (uint32_t)found;
    if (t->nsyms == t->capsyms) {
        uint32_t nc = t->capsyms ? t->capsyms * 2 : 32;
        const tstr **ns = tpl_arena_alloc(&t->arena, nc * sizeof(tstr *));
        if (!ns) { *ok = false; return 0; }
        if (t->nsyms) memcpy(ns, t->syms, t->nsyms * sizeof(tstr *));
        t->syms = ns;
        t->capsyms = nc;
    }
    const tstr *name = tstr_static(&t->arena, s, n);
    if (!name) { *ok = false; return 0; }
    t->syms[t->nsyms++] = name;
    if ((t->nsyms + 1) * 2 > t->sym_hcap) {
        if (!sym_rehash(t, t->sym_hcap ? t->sym_hcap * 2 : 64)) { *ok = false; return 0; }
    } else {
        uint32_t j = name_hash(s, n) & (t->sym_hcap - 1);
        while (t->sym_hash[j]) j = (j + 1) & (t->sym_hcap - 1);
        t->sym_hash[j] = t->nsyms;
    }
    return t->nsyms - 1;
}

/* ------------------------------------------------------------------ compile */

static void fill_limits(loom_template_limits *l, const loom_template_limits *in) {
    if (in) *l = *in;
    else memset(l, 0, sizeof *l);
    if (l->max_depth <= 0) l->max_depth = 256;
    if (l->max_recursion <= 0) l->max_recursion = 100;
    if (l->max_iterations <= 0) l->max_iterations = 1000000;
    if (l->max_steps <= 0) l->max_steps = 20000000;
    if (l->max_output == 0) l->max_output = (size_t)32 << 20;
    if (l->max_output > ((size_t)1 << 31)) l->max_output = (size_t)1 << 31;
    if (l->max_memory == 0) l->max_memory = (size_t)128 << 20;
    if (l->max_depth > 4096) l->max_depth = 4096;
}

loom_status loom_template_compile(const char *src, size_t len, const loom_template_limits *limits,
                                  loom_template **out, loom_error *err) {
    if (out) *out = NULL;
    if (!src || !out) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_template_compile: NULL argument");
    if (len > ((size_t)1 << 30)) return loom_error_set(err, LOOM_ERR_RANGE, "template source too large (%zu bytes)", len);
    if (!tpl_utf8_valid(src, len)) return loom_error_set(err, LOOM_ERR_FORMAT, "template source is not valid UTF-8");
    loom_template *t = calloc(1, sizeof *t);
    if (!t) return loom_error_set(err, LOOM_ERR_NOMEM, "out of memory compiling a template");
    fill_limits(&t->lim, limits);
    t->arena.limit = t->lim.max_memory;
    static const char *const wk[] = {"loop", "caller", "varargs", "kwargs", "messages", "tools",
                                     "add_generation_prompt", "bos_token", "eos_token"};
    bool ok = true;
    for (size_t i = 0; i < sizeof wk / sizeof wk[0] && ok; i++) tpl_intern(t, wk[i], strlen(wk[i]), &ok);
    tpl_err e;
    memset(&e, 0, sizeof e);
    ttoken *toks = NULL;
    size_t ntoks = 0;
    if (!ok) { e.st = LOOM_ERR_NOMEM; snprintf(e.msg, sizeof e.msg, "out of memory"); }
    else if (tpl_lex(t, src, len, &toks, &ntoks, &e) == 0) tpl_parse(t, toks, ntoks, &e);
    if (e.st == LOOM_OK && !t->root) { e.st = LOOM_ERR_FORMAT; snprintf(e.msg, sizeof e.msg, "invalid template"); }
    if (e.st == LOOM_OK) {
        t->sym_global = tpl_arena_alloc(&t->arena, (t->nsyms + 1) * sizeof(int));
        if (!t->sym_global) { e.st = LOOM_ERR_NOMEM; snprintf(e.msg, sizeof e.msg, "out of memory"); }
        else
            for (uint32_t i = 0; i < t->nsyms; i++) t->sym_global[i] = tpl_global_id(t->syms[i]->data, t->syms[i]->len);
    }
    if (e.st != LOOM_OK) {
        loom_error_set(err, e.st, "template:%u:%u: %s", e.line, e.col, e.msg);
        loom_template_free(t);
        return e.st;
    }
    *out = t;
    return LOOM_OK;
}

void loom_template_free(loom_template *t) {
    if (!t) return;
    tpl_arena_free(&t->arena);
    free(t);
}

loom_status loom_template_source_from_gguf(const loom_gguf *g, const char *name, const char **src, size_t *len,
                                           loom_error *err) {
    if (!g || !src || !len) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_template_source_from_gguf: NULL argument");
    char key[256];
    if (name) snprintf(key, sizeof key, "tokenizer.chat_template.%s", name);
    else snprintf(key, sizeof key, "tokenizer.chat_template");
    if (loom_gguf_find_key(g, key) < 0) return loom_error_set(err, LOOM_ERR_NOT_FOUND, "%s: no key %s", loom_gguf_path(g) ? loom_gguf_path(g) : "gguf", key);
    loom_gguf_str s;
    loom_status st = loom_gguf_get_str(g, key, &s);
    if (st != LOOM_OK) return loom_error_set(err, LOOM_ERR_FORMAT, "%s: key %s is not a string", loom_gguf_path(g) ? loom_gguf_path(g) : "gguf", key);
    *src = s.ptr;
    *len = (size_t)s.len;
    return LOOM_OK;
}

/* ------------------------------------------------------------------ render */

static bool plain_role(const char *s, size_t n) {
    if (n == 0 || n > 64) return false;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-'))
            return false;
    }
    return true;
}

/* messages: every string is content except a plain-word role */
static int messages_value(tpl_ctx *c, json_t *j, tval *out) {
    if (!json_is_array(j)) return tpl_from_json(c, j, 1, 0, out);
    size_t n = json_array_size(j);
    tlist *l = tl_new(c, (uint32_t)n);
    if (!l) return -1;
    for (size_t i = 0; i < n; i++) {
        json_t *m = json_array_get(j, i);
        if (!json_is_object(m)) {
            if (tpl_from_json(c, m, 1, 1, &l->v[i]) < 0) return -1;
            continue;
        }
        tdict *d = td_new(c, (uint32_t)json_object_size(m) + 1);
        if (!d) return -1;
        const char *key;
        json_t *val;
        json_object_foreach(m, key, val) {
            tstr *ks = tstr_new(c, key, strlen(key));
            if (!ks) return -1;
            tval v;
            if (!strcmp(key, "role") && json_is_string(val) && plain_role(json_string_value(val), json_string_length(val))) {
                tstr *rs = tstr_new(c, json_string_value(val), json_string_length(val));
                if (!rs) return -1;
                v = tv_str(rs);
            } else if (tpl_from_json(c, val, 1, 2, &v) < 0) return -1;
            if (td_set(c, d, tv_str(ks), v) < 0) return -1;
        }
        l->v[i] = (tval){0};
        l->v[i].k = TV_DICT;
        l->v[i].u.d = d;
    }
    if (tl_finish_depth(c, l) < 0) return -1;
    *out = tv_list(l, LK_LIST);
    return 0;
}

static int set_var(tpl_ctx *c, const char *name, tval v) {
    int sym = tpl_find_sym(c->t, name, strlen(name));
    if (sym < 0) return 0; /* the template never names it */
    return tpl_scope_set(c, c->root, (uint32_t)sym, v);
}

static void result_fail(loom_template_result *r, tpl_ctx *c, loom_error *err) {
    if (c->eline) loom_error_set(err, c->st, "template:%u:%u: %s", c->eline, c->ecol, c->emsg);
    else loom_error_set(err, c->st, "%s", c->emsg);
    r->error_line = (int)c->eline;
    r->error_column = (int)c->ecol;
    snprintf(r->error, sizeof r->error, "%s", c->emsg);
}

loom_status loom_template_render_json(const loom_template *t, const char *json, size_t len,
                                      const loom_template_params *params, loom_template_result *r, loom_error *err) {
    if (!t || !json || !r) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_template_render_json: NULL argument");
    memset(r, 0, sizeof *r);
    json_error_t je;
    json_t *root = json_loadb(json, len, JSON_ALLOW_NUL, &je);
    if (!root) {
        r->error_line = 0;
        snprintf(r->error, sizeof r->error, "conversation JSON:%d:%d: %s", je.line, je.column, je.text);
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "%s", r->error);
    }
    loom_status st = loom_template_render_jansson(t, root, params, r, err);
    json_decref(root);
    return st;
}

loom_status loom_template_render_jansson(const loom_template *t, const struct json_t *conversation,
                                         const loom_template_params *params, loom_template_result *r, loom_error *err) {
    if (!t || !conversation || !r) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_template_render_jansson: NULL argument");
    memset(r, 0, sizeof *r);
    json_t *root = (json_t *)conversation;
    loom_status st = LOOM_OK;
    if (!json_is_object(root)) {
        snprintf(r->error, sizeof r->error, "conversation JSON: expected an object with \"messages\"");
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "%s", r->error);
    }
    json_t *jm = json_object_get(root, "messages"), *jt = json_object_get(root, "tools"),
           *jg = json_object_get(root, "add_generation_prompt"), *jk = json_object_get(root, "kwargs");
    if (!jm || (jk && !json_is_object(jk))) {
        snprintf(r->error, sizeof r->error, "conversation JSON: %s", !jm ? "no \"messages\"" : "\"kwargs\" must be an object");
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "%s", r->error);
    }
    tpl_ctx *c = calloc(1, sizeof *c);
    if (!c) return loom_error_set(err, LOOM_ERR_NOMEM, "out of memory rendering a template");
    char stack_marker;
    c->stack_base = (uintptr_t)&stack_marker;
    c->t = t;
    c->lim = t->lim;
    c->ar.limit = t->lim.max_memory;
    if (params && params->now) {
        c->now.year = params->now->year;
        c->now.month = params->now->month;
        c->now.day = params->now->day;
        c->now.hour = params->now->hour;
        c->now.minute = params->now->minute;
        c->now.second = params->now->second;
    } else {
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        c->now.year = tm.tm_year + 1900;
        c->now.month = tm.tm_mon + 1;
        c->now.day = tm.tm_mday;
        c->now.hour = tm.tm_hour;
        c->now.minute = tm.tm_min;
        c->now.second = tm.tm_sec;
    }
    if (c->now.month < 1 || c->now.month > 12 || c->now.day < 1 || c->now.day > 31 || c->now.hour < 0 ||
        c->now.hour > 23 || c->now.minute < 0 || c->now.minute > 59 || c->now.second < 0 || c->now.second > 60) {
        free(c);
        snprintf(r->error, sizeof r->error, "invalid time for strftime_now");
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "%s", r->error);
    }
    tbuf out = {0};
    int rc = 0;
    c->root = tpl_scope_new(c, NULL);
    if (!c->root) rc = -1;
    tval v;
    if (!rc) rc = messages_value(c, jm, &v);
    if (!rc) rc = tpl_scope_set(c, c->root, SYM_MESSAGES, v);
    if (!rc && jt) {
        rc = tpl_from_json(c, jt, 1, 0, &v);
        if (!rc) rc = tpl_scope_set(c, c->root, SYM_TOOLS, v);
    }
    if (!rc) {
        if (jg) rc = tpl_from_json(c, jg, 0, 0, &v);
        else v = tv_bool(true);
        if (!rc) rc = tpl_scope_set(c, c->root, SYM_ADD_GEN, v);
    }
    for (int k = 0; k < 2 && !rc; k++) {
        const char *s = params ? (k ? params->eos_token : params->bos_token) : NULL;
        tstr *ts = tstr_new(c, s ? s : "", s ? strlen(s) : 0);
        if (!ts) rc = -1;
        else rc = tpl_scope_set(c, c->root, k ? SYM_EOS : SYM_BOS, tv_str(ts));
    }
    if (!rc && jk) {
        const char *key;
        json_t *val;
        json_object_foreach(jk, key, val) {
            if (tpl_from_json(c, val, 0, 0, &v) < 0 || set_var(c, key, v) < 0) { rc = -1; break; }
        }
    }
    if (!rc) rc = tpl_render_root(c, &out);
    if (rc) {
        if (!c->failed) tpl_fail(c, X_RUNTIME, "render failed");
        result_fail(r, c, err);
        st = c->st;
        tb_free(c, &out);
    } else {
        r->text = malloc(out.n + 1);
        r->spans = out.nsp ? malloc(out.nsp * sizeof(loom_template_span)) : NULL;
        if (!r->text || (out.nsp && !r->spans)) {
            free(r->text);
            free(r->spans);
            r->text = NULL;
            r->spans = NULL;
            snprintf(r->error, sizeof r->error, "MemoryError: out of memory");
            st = loom_error_set(err, LOOM_ERR_NOMEM, "out of memory copying the rendered text");
        } else {
            if (out.n) memcpy(r->text, out.d, out.n);
            r->text[out.n] = 0;
            r->len = out.n;
            for (size_t i = 0; i < out.nsp; i++) {
                r->spans[i].start = out.sp[i].a;
                r->spans[i].end = out.sp[i].b;
            }
            r->n_spans = out.nsp;
        }
        tb_free(c, &out);
    }
    tpl_arena_free(&c->ar);
    free(c);
    return st;
}

void loom_template_result_free(loom_template_result *r) {
    if (!r) return;
    free(r->text);
    free(r->spans);
    memset(r, 0, sizeof *r);
}

/* ------------------------------------------------------------------ tokenize */

typedef struct special {
    const char *text;
    size_t len;
    int32_t id;
} special;

static int cmp_special(const void *a, const void *b) {
    const special *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int r = memcmp(x->text, y->text, n);
    if (r) return r;
    if (x->len != y->len) return x->len < y->len ? -1 : 1; /* a prefix sorts first */
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Longest special token that is a prefix of s[0, n): narrow the sorted range one byte at a
 * time (entries in the range share the prefix seen so far; exact-length ones come first). */
static const special *match_special(const special *sp, size_t nsp, const char *s, size_t n) {
    size_t lo = 0, hi = nsp;
    const special *best = NULL;
    for (size_t k = 0; lo < hi; k++) {
        while (lo < hi && sp[lo].len == k) {
            if (!best || best->len < k) best = &sp[lo];
            lo++;
        }
        if (k >= n || lo >= hi) break;
        unsigned char b = (unsigned char)s[k];
        size_t a = lo, z = hi; /* first entry with byte k >= b */
        while (a < z) {
            size_t m = a + (z - a) / 2;
            if ((unsigned char)sp[m].text[k] < b) a = m + 1;
            else z = m;
        }
        size_t e = a, f = hi; /* first entry with byte k > b */
        while (e < f) {
            size_t m = e + (f - e) / 2;
            if ((unsigned char)sp[m].text[k] <= b) e = m + 1;
            else f = m;
        }
        lo = a;
        hi = e;
    }
    return best;
}

typedef struct idvec {
    int32_t *v;
    int32_t n, cap;
} idvec;

static loom_status tokenize_fragment(const loom_tokenizer *tok, const char *s, size_t n, idvec *ids, loom_error *err) {
    if (n == 0) return LOOM_OK;
    int32_t got = 0;
    loom_status st = loom_tokenize(tok, s, n, false, false, ids->v ? ids->v + ids->n : NULL, ids->cap - ids->n, &got, NULL);
    if (st == LOOM_ERR_RANGE && got > ids->cap - ids->n) {
        if (got > INT32_MAX - 1024 - ids->n) return loom_error_set(err, LOOM_ERR_RANGE, "the rendered chat has too many tokens");
        int32_t need = ids->n + got + 1024;
        int32_t *nv = realloc(ids->v, (size_t)need * sizeof(int32_t));
        if (!nv) return loom_error_set(err, LOOM_ERR_NOMEM, "out of memory tokenizing");
        ids->v = nv;
        ids->cap = need;
        st = loom_tokenize(tok, s, n, false, false, ids->v + ids->n, ids->cap - ids->n, &got, err);
    }
    if (st != LOOM_OK) return loom_error_set(err, st, "tokenizing the rendered chat failed (%s)", loom_status_name(st));
    ids->n += got;
    return LOOM_OK;
}

static loom_status push_id(idvec *ids, int32_t id, loom_error *err) {
    if (ids->n == ids->cap) {
        if (ids->cap > INT32_MAX / 2) return loom_error_set(err, LOOM_ERR_RANGE, "the rendered chat has too many tokens");
        int32_t nc = ids->cap ? ids->cap * 2 : 256;
        int32_t *nv = realloc(ids->v, (size_t)nc * sizeof(int32_t));
        if (!nv) return loom_error_set(err, LOOM_ERR_NOMEM, "out of memory tokenizing");
        ids->v = nv;
        ids->cap = nc;
    }
    ids->v[ids->n++] = id;
    return LOOM_OK;
}

loom_status loom_template_tokenize(const loom_tokenizer *tok, const char *text, size_t len,
                                   const loom_template_span *spans, size_t n_spans, bool add_bos, int32_t **ids_out,
                                   int32_t *n_out, loom_error *err) {
    if (ids_out) *ids_out = NULL;
    if (n_out) *n_out = 0;
    if (!tok || (!text && len) || !ids_out || !n_out || (n_spans && !spans))
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_template_tokenize: NULL argument");
    for (size_t i = 0; i < n_spans; i++)
        if (spans[i].start > spans[i].end || spans[i].end > len || (i && spans[i].start < spans[i - 1].end))
            return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_template_tokenize: span %zu [%zu, %zu) out of order or range", i,
                                  spans[i].start, spans[i].end);
    /* the vocabulary's special tokens, bucketed by first byte, longest first */
    int32_t nv = loom_tokenizer_n_vocab(tok);
    special *sp = NULL;
    size_t nsp = 0, capsp = 0;
    for (int32_t id = 0; id < nv; id++) {
        loom_token_type ty = loom_token_get_type(tok, id);
        if (ty != LOOM_TOKEN_CONTROL && ty != LOOM_TOKEN_UNKNOWN) continue;
        const char *tx;
        size_t tl;
        if (loom_token_text(tok, id, &tx, &tl) != LOOM_OK || tl == 0) continue;
        if (nsp == capsp) {
            size_t nc = capsp ? capsp * 2 : 64;
            special *ns = realloc(sp, nc * sizeof(special));
            if (!ns) { free(sp); return loom_error_set(err, LOOM_ERR_NOMEM, "out of memory tokenizing"); }
            sp = ns;
            capsp = nc;
        }
        sp[nsp].text = tx;
        sp[nsp].len = tl;
        sp[nsp].id = id;
        nsp++;
    }
    if (nsp) qsort(sp, nsp, sizeof(special), cmp_special);
    bool starts[256] = {false};
    for (size_t i = 0; i < nsp; i++) starts[(unsigned char)sp[i].text[0]] = true;
    idvec ids = {0};
    loom_status st = LOOM_OK;
    size_t i = 0, frag = 0, si = 0;
    while (i < len && st == LOOM_OK) {
        while (si < n_spans && spans[si].end <= i) si++;
        if (si < n_spans && spans[si].start <= i) { i = spans[si].end; continue; }
        size_t limit = si < n_spans ? spans[si].start : len; /* a special token must end by here */
        const special *hit = starts[(unsigned char)text[i]] ? match_special(sp, nsp, text + i, limit - i) : NULL;
        if (!hit) { i++; continue; }
        st = tokenize_fragment(tok, text + frag, i - frag, &ids, err);
        if (st == LOOM_OK) st = push_id(&ids, hit->id, err);
        i += hit->len;
        frag = i;
    }
    if (st == LOOM_OK) st = tokenize_fragment(tok, text + frag, len - frag, &ids, err);
    free(sp);
    if (st == LOOM_OK && add_bos && loom_tokenizer_add_bos(tok)) {
        int32_t bos = loom_tokenizer_bos(tok);
        if (bos >= 0 && (ids.n == 0 || ids.v[0] != bos)) {
            st = push_id(&ids, bos, err);
            if (st == LOOM_OK) {
                memmove(ids.v + 1, ids.v, (size_t)(ids.n - 1) * sizeof(int32_t));
                ids.v[0] = bos;
            }
        }
    }
    if (st != LOOM_OK) {
        free(ids.v);
        return st;
    }
    if (!ids.v) ids.v = malloc(sizeof(int32_t));
    *ids_out = ids.v;
    *n_out = ids.n;
    return LOOM_OK;
}

static char *token_string(const loom_tokenizer *tok, int32_t id) {
    const char *tx = "";
    size_t tl = 0;
    if (id >= 0 && loom_token_text(tok, id, &tx, &tl) != LOOM_OK) { tx = ""; tl = 0; }
    char *s = malloc(tl + 1);
    if (!s) return NULL;
    memcpy(s, tx, tl);
    s[tl] = 0;
    return s;
}

loom_status loom_template_render_tokens(const loom_template *t, const loom_tokenizer *tok, const char *json, size_t len,
                                        const loom_template_params *params, int32_t **ids, int32_t *n_ids,
                                        loom_template_result *result, loom_error *err) {
    if (!t || !tok || !json || !ids || !n_ids) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_template_render_tokens: NULL argument");
    *ids = NULL;
    *n_ids = 0;
    loom_template_params p = {0};
    if (params) p = *params;
    char *bos = NULL, *eos = NULL;
    if (!p.bos_token) p.bos_token = bos = token_string(tok, loom_tokenizer_bos(tok));
    if (!p.eos_token) p.eos_token = eos = token_string(tok, loom_tokenizer_eos(tok));
    loom_template_result local = {0};
    loom_template_result *r = result ? result : &local;
    loom_status st = (!p.bos_token || !p.eos_token) ? loom_error_set(err, LOOM_ERR_NOMEM, "out of memory")
                                                   : loom_template_render_json(t, json, len, &p, r, err);
    free(bos);
    free(eos);
    if (st == LOOM_OK) st = loom_template_tokenize(tok, r->text, r->len, r->spans, r->n_spans, true, ids, n_ids, err);
    if (!result) loom_template_result_free(&local);
    return st;
}
