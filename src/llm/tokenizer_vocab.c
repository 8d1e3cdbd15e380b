/* Tokenizer: vocabulary loading and validation, lookup tables, special-token
 * partitioning, the public tokenize entry point and accessors. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "llm/tokenizer_internal.h"
#include "quant/alloc.h"

/* ------------------------------------------------------------------ hashing */

uint64_t tok_hash_bytes(uint64_t h, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

static uint64_t hash_final(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

static loom_status strmap_init(tok_strmap *m, size_t n) {
    size_t cap = 16;
    while (cap < n * 2) {
        if (cap > SIZE_MAX / 4) return LOOM_ERR_NOMEM;
        cap *= 2;
    }
    m->slots = loom_malloc(cap * sizeof(int32_t));
    if (!m->slots) return LOOM_ERR_NOMEM;
    memset(m->slots, 0xff, cap * sizeof(int32_t));
    m->mask = cap - 1;
    return LOOM_OK;
}

int32_t tok_lookup(const loom_tokenizer *t, const char *s, size_t n) {
    size_t i = (size_t)hash_final(tok_hash_bytes(TOK_HASH_SEED, s, n)) & t->map.mask;
    for (;;) {
        int32_t id = t->map.slots[i];
        if (id < 0) return -1;
        if (t->len[id] == n && memcmp(t->arena + t->off[id], s, n) == 0) return id;
        i = (i + 1) & t->map.mask;
    }
}

static void token_map_insert(loom_tokenizer *t, int32_t id) {
    const char *s = t->arena + t->off[id];
    size_t n = t->len[id];
    size_t i = (size_t)hash_final(tok_hash_bytes(TOK_HASH_SEED, s, n)) & t->map.mask;
    for (;;) {
        int32_t cur = t->map.slots[i];
        if (cur < 0 || (t->len[cur] == n && memcmp(t->arena + t->off[cur], s, n) == 0)) {
            t->map.slots[i] = id; /* later duplicates win */
            return;
        }
        i = (i + 1) & t->map.mask;
    }
}

int32_t tok_merge_rank(const loom_tokenizer *t, const char *a, size_t na, const char *b, size_t nb) {
    if (!t->merge_map.slots) return -1;
    uint64_t h = tok_hash_bytes(TOK_HASH_SEED, a, na);
    h = tok_hash_bytes(h, " ", 1);
    h = tok_hash_bytes(h, b, nb);
    size_t i = (size_t)hash_final(h) & t->merge_map.mask;
    for (;;) {
        int32_t r = t->merge_map.slots[i];
        if (r < 0) return -1;
        const char *m = t->merge_arena + t->merge_off[r];
        if (t->merge_split[r] == na && t->merge_len[r] == na + 1 + nb && memcmp(m, a, na) == 0 &&
            memcmp(m + na + 1, b, nb) == 0)
            return r;
        i = (i + 1) & t->merge_map.mask;
    }
}

static void merge_map_insert(loom_tokenizer *t, int32_t r) {
    const char *s = t->merge_arena + t->merge_off[r];
    size_t n = t->merge_len[r];
    size_t i = (size_t)hash_final(tok_hash_bytes(TOK_HASH_SEED, s, n)) & t->merge_map.mask;
    for (;;) {
        int32_t cur = t->merge_map.slots[i];
        if (cur < 0) {
            t->merge_map.slots[i] = r;
            return;
        }
        if (t->merge_len[cur] == n && memcmp(t->merge_arena + t->merge_off[cur], s, n) == 0)
            return; /* the first (lowest rank) duplicate wins */
        i = (i + 1) & t->merge_map.mask;
    }
}

/* ------------------------------------------------------------------ heap */

static bool bigram_less(const tok_bigram *x, const tok_bigram *y) {
    return x->key < y->key || (x->key == y->key && x->left < y->left);
}

loom_status tok_heap_push(tok_heap *h, tok_bigram b) {
    if (h->n == h->cap) {
        size_t nc = h->cap ? h->cap * 2 : 64;
        if (nc > SIZE_MAX / sizeof(tok_bigram)) return LOOM_ERR_NOMEM;
        tok_bigram *na = loom_realloc(h->a, nc * sizeof(tok_bigram));
        if (!na) return LOOM_ERR_NOMEM;
        h->a = na;
        h->cap = nc;
    }
    size_t i = h->n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!bigram_less(&b, &h->a[p])) break;
        h->a[i] = h->a[p];
        i = p;
    }
    h->a[i] = b;
    return LOOM_OK;
}

bool tok_heap_pop(tok_heap *h, tok_bigram *out) {
    if (h->n == 0) return false;
    *out = h->a[0];
    tok_bigram last = h->a[--h->n];
    size_t i = 0, n = h->n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && bigram_less(&h->a[c + 1], &h->a[c])) c++;
        if (!bigram_less(&h->a[c], &last)) break;
        h->a[i] = h->a[c];
        i = c;
    }
    if (n) h->a[i] = last;
    return true;
}

/* ------------------------------------------------------------------ loading */

void loom_tokenizer_free(loom_tokenizer *t) {
    if (!t) return;
    loom_free(t->arena);
    loom_free(t->off);
    loom_free(t->len);
    loom_free(t->scores);
    loom_free(t->types);
    loom_free(t->map.slots);
    loom_free(t->merge_arena);
    loom_free(t->merge_off);
    loom_free(t->merge_len);
    loom_free(t->merge_split);
    loom_free(t->merge_map.slots);
    loom_free(t->special);
    loom_free(t);
}

static bool str_eq(loom_gguf_str s, const char *lit) {
    size_t n = strlen(lit);
    return s.len == n && memcmp(s.ptr, lit, n) == 0;
}

/* Optional special id: absent -> def; -1 / 0xFFFFFFFF -> -1; else must be < n_vocab. */
static loom_status read_id(const loom_gguf *g, const char *key, int32_t n_vocab, int32_t def, int32_t *out,
                           loom_error *err) {
    int64_t v;
    loom_status st = loom_gguf_get_int(g, key, &v);
    if (st == LOOM_ERR_NOT_FOUND) {
        *out = (def >= 0 && def < n_vocab) ? def : -1;
        return LOOM_OK;
    }
    if (st != LOOM_OK)
        return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: key %s is not an integer", key);
    if (v == -1 || v == 0xFFFFFFFFll) {
        *out = -1;
        return LOOM_OK;
    }
    if (v < 0 || v >= n_vocab)
        return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: %s = %lld out of range (n_vocab %d)", key,
                              (long long)v, (int)n_vocab);
    *out = (int32_t)v;
    return LOOM_OK;
}

static loom_status read_bool(const loom_gguf *g, const char *key, bool def, bool *out, loom_error *err) {
    bool v;
    loom_status st = loom_gguf_get_bool(g, key, &v);
    if (st == LOOM_ERR_NOT_FOUND) {
        *out = def;
        return LOOM_OK;
    }
    if (st != LOOM_OK) return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: key %s is not a bool", key);
    *out = v;
    return LOOM_OK;
}

/* Array key: must be an array of the wanted kind with exactly n elements
 * (n < 0: any length, returned in *len). *idx = -1 when absent. */
static loom_status find_array(const loom_gguf *g, const char *key, int kind /*0 str,1 int,2 float*/,
                              int64_t *idx, uint64_t *len, loom_error *err) {
    int64_t i = loom_gguf_find_key(g, key);
    *idx = i;
    if (i < 0) return LOOM_OK;
    if (loom_gguf_kv_type(g, i) != LOOM_GGUF_ARRAY)
        return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: key %s is not an array", key);
    loom_gguf_vtype et = loom_gguf_kv_array_type(g, i);
    bool ok;
    switch (kind) {
    case 0: ok = et == LOOM_GGUF_STRING; break;
    case 1:
        ok = et == LOOM_GGUF_U8 || et == LOOM_GGUF_I8 || et == LOOM_GGUF_U16 || et == LOOM_GGUF_I16 ||
             et == LOOM_GGUF_U32 || et == LOOM_GGUF_I32 || et == LOOM_GGUF_U64 || et == LOOM_GGUF_I64;
        break;
    default: ok = et == LOOM_GGUF_F32 || et == LOOM_GGUF_F64; break;
    }
    if (!ok)
        return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: key %s has element type %s", key,
                              loom_gguf_vtype_name(et));
    *len = loom_gguf_kv_array_len(g, i);
    return LOOM_OK;
}

static int cmp_special(const void *a, const void *b, const loom_tokenizer *t) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    if (t->len[x] != t->len[y]) return t->len[x] > t->len[y] ? -1 : 1;
    return x < y ? -1 : (x > y);
}

static void sort_specials(loom_tokenizer *t) {
    /* insertion sort (no global state, lists are short): longest text first, then id */
    for (int32_t i = 1; i < t->n_special; i++) {
        int32_t v = t->special[i], j = i - 1;
        while (j >= 0 && cmp_special(&t->special[j], &v, t) > 0) {
            t->special[j + 1] = t->special[j];
            j--;
        }
        t->special[j + 1] = v;
    }
}

static void build_bpe_byte_map(loom_tokenizer *t) {
    for (int i = 0; i < 324; i++) t->bpe_dec[i] = -1;
    int extra = 0;
    for (int b = 0; b < 256; b++) {
        uint32_t cp;
        if ((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)) cp = (uint32_t)b;
        else cp = 256u + (uint32_t)extra++;
        unsigned char u[4];
        size_t n = tok_utf8_encode(cp, u);
        memcpy(t->bpe_enc[b], u, n);
        t->bpe_enc_len[b] = (uint8_t)n;
        t->bpe_dec[cp] = (int16_t)b;
    }
}

static loom_status load_merges(loom_tokenizer *t, const loom_gguf *g, loom_error *err) {
    int64_t idx;
    uint64_t n = 0;
    loom_status st = find_array(g, "tokenizer.ggml.merges", 0, &idx, &n, err);
    if (st) return st;
    if (idx < 0) return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: BPE vocabulary without tokenizer.ggml.merges");
    if (n > INT32_MAX) return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: too many merges (%llu)", (unsigned long long)n);
    size_t total = 0;
    for (uint64_t j = 0; j < n; j++) {
        loom_gguf_str s;
        if (loom_gguf_kv_arr_str(g, idx, j, &s) != LOOM_OK)
            return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: cannot read merge %llu", (unsigned long long)j);
        if (s.len > UINT32_MAX || total > SIZE_MAX - 1 - s.len)
            return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: merge %llu too long", (unsigned long long)j);
        total += s.len + 1;
    }
    t->n_merges = (int32_t)n;
    t->merge_arena = loom_malloc(total ? total : 1);
    t->merge_off = loom_malloc((n ? n : 1) * sizeof(size_t));
    t->merge_len = loom_malloc((n ? n : 1) * sizeof(uint32_t));
    t->merge_split = loom_malloc((n ? n : 1) * sizeof(uint32_t));
    if (!t->merge_arena || !t->merge_off || !t->merge_len || !t->merge_split ||
        strmap_init(&t->merge_map, (size_t)n) != LOOM_OK)
        return loom_error_set(err, LOOM_ERR_NOMEM, "tokenizer: out of memory for %llu merges", (unsigned long long)n);
    size_t pos = 0;
    for (uint64_t j = 0; j < n; j++) {
        loom_gguf_str s;
        loom_gguf_kv_arr_str(g, idx, j, &s);
        const char *sp = s.len > 1 ? memchr(s.ptr + 1, ' ', (size_t)s.len - 1) : NULL;
        if (!sp || (uint64_t)(sp - s.ptr) + 1 >= s.len)
            return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: merge %llu (\"%.*s\") is not \"A B\"",
                                  (unsigned long long)j, (int)(s.len > 64 ? 64 : s.len), s.ptr);
        memcpy(t->merge_arena + pos, s.ptr, (size_t)s.len);
        t->merge_arena[pos + s.len] = 0;
        t->merge_off[j] = pos;
        t->merge_len[j] = (uint32_t)s.len;
        t->merge_split[j] = (uint32_t)(sp - s.ptr);
        pos += (size_t)s.len + 1;
        merge_map_insert(t, (int32_t)j);
    }
    return LOOM_OK;
}

static loom_status select_pre(loom_tokenizer *t, const loom_gguf *g, loom_error *err) {
    loom_gguf_str s;
    loom_status st = loom_gguf_get_str(g, "tokenizer.ggml.pre", &s);
    t->pre = TOK_PRE_GPT2;
    if (st == LOOM_ERR_NOT_FOUND) return LOOM_OK;
    if (st != LOOM_OK) return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: tokenizer.ggml.pre is not a string");
    static const char *gpt2[] = {"default", "gpt2", "gpt-2", NULL};
    static const char *llama3[] = {"llama-bpe", "llama3", "llama-v3", "falcon3", "pixtral", "smaug-bpe", NULL};
    static const char *qwen2[] = {"qwen2", "deepseek-r1-qwen", "stablelm2", "megrez", NULL};
    for (int i = 0; gpt2[i]; i++) if (str_eq(s, gpt2[i])) return LOOM_OK;
    for (int i = 0; llama3[i]; i++) if (str_eq(s, llama3[i])) { t->pre = TOK_PRE_LLAMA3; return LOOM_OK; }
    for (int i = 0; qwen2[i]; i++) if (str_eq(s, qwen2[i])) { t->pre = TOK_PRE_QWEN2; return LOOM_OK; }
    return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "tokenizer: unknown pre-tokenizer \"%.*s\"",
                          (int)(s.len > 64 ? 64 : s.len), s.ptr);
}

static int32_t find_named(const loom_tokenizer *t, const char *const *names) {
    for (int i = 0; names[i]; i++) {
        int32_t id = tok_lookup(t, names[i], strlen(names[i]));
        if (id >= 0 && (t->types[id] == LOOM_TOKEN_CONTROL || t->types[id] == LOOM_TOKEN_USER_DEFINED)) return id;
    }
    return -1;
}

static loom_status build(loom_tokenizer *t, const loom_gguf *g, loom_error *err) {
    loom_gguf_str model;
    loom_status st = loom_gguf_get_str(g, "tokenizer.ggml.model", &model);
    if (st == LOOM_ERR_NOT_FOUND)
        return loom_error_set(err, LOOM_ERR_NOT_FOUND, "tokenizer: no tokenizer.ggml.model key");
    if (st != LOOM_OK) return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: tokenizer.ggml.model is not a string");
    if (str_eq(model, "llama")) t->type = LOOM_VOCAB_SPM;
    else if (str_eq(model, "gpt2")) t->type = LOOM_VOCAB_BPE;
    else
        return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "tokenizer: unsupported tokenizer.ggml.model \"%.*s\"",
                              (int)(model.len > 64 ? 64 : model.len), model.ptr);

    /* tokens */
    int64_t ti;
    uint64_t n = 0;
    if ((st = find_array(g, "tokenizer.ggml.tokens", 0, &ti, &n, err))) return st;
    if (ti < 0) return loom_error_set(err, LOOM_ERR_NOT_FOUND, "tokenizer: no tokenizer.ggml.tokens key");
    if (n == 0 || n > INT32_MAX)
        return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: tokenizer.ggml.tokens has %llu entries",
                              (unsigned long long)n);
    t->n_vocab = (int32_t)n;
    size_t total = 0;
    for (uint64_t j = 0; j < n; j++) {
        loom_gguf_str s;
        if (loom_gguf_kv_arr_str(g, ti, j, &s) != LOOM_OK)
            return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: cannot read token %llu", (unsigned long long)j);
        if (s.len > UINT32_MAX || total > SIZE_MAX - 1 - s.len)
            return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: token %llu too long", (unsigned long long)j);
        total += (size_t)s.len + 1;
    }
    t->arena = loom_malloc(total);
    t->off = loom_malloc(n * sizeof(size_t));
    t->len = loom_malloc(n * sizeof(uint32_t));
    t->types = loom_malloc(n);
    if (!t->arena || !t->off || !t->len || !t->types || strmap_init(&t->map, (size_t)n) != LOOM_OK)
        return loom_error_set(err, LOOM_ERR_NOMEM, "tokenizer: out of memory for %llu tokens", (unsigned long long)n);
    size_t pos = 0;
    for (uint64_t j = 0; j < n; j++) {
        loom_gguf_str s;
        loom_gguf_kv_arr_str(g, ti, j, &s);
        if (s.len) memcpy(t->arena + pos, s.ptr, (size_t)s.len);
        t->arena[pos + s.len] = 0;
        t->off[j] = pos;
        t->len[j] = (uint32_t)s.len;
        if (s.len > t->max_piece) t->max_piece = (size_t)s.len;
        pos += (size_t)s.len + 1;
    }
    if (t->max_piece == 0) t->max_piece = 1;

    /* scores */
    int64_t si;
    uint64_t ns = 0;
    if ((st = find_array(g, "tokenizer.ggml.scores", 2, &si, &ns, err))) return st;
    if (si >= 0) {
        if (ns != n)
            return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: tokenizer.ggml.scores has %llu entries, tokens %llu",
                                  (unsigned long long)ns, (unsigned long long)n);
        t->scores = loom_malloc(n * sizeof(float));
        if (!t->scores) return loom_error_set(err, LOOM_ERR_NOMEM, "tokenizer: out of memory");
        for (uint64_t j = 0; j < n; j++) {
            double v;
            if (loom_gguf_kv_arr_float(g, si, j, &v) != LOOM_OK)
                return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: cannot read score %llu", (unsigned long long)j);
            t->scores[j] = (float)v;
        }
    }

    /* token types */
    int64_t yi;
    uint64_t ny = 0;
    if ((st = find_array(g, "tokenizer.ggml.token_type", 1, &yi, &ny, err))) return st;
    if (yi >= 0 && ny != n)
        return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: tokenizer.ggml.token_type has %llu entries, tokens %llu",
                              (unsigned long long)ny, (unsigned long long)n);
    for (uint64_t j = 0; j < n; j++) {
        int64_t v = LOOM_TOKEN_NORMAL;
        if (yi >= 0) {
            if (loom_gguf_kv_arr_int(g, yi, j, &v) != LOOM_OK || v < 0 || v > LOOM_TOKEN_BYTE)
                return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: token_type[%llu] invalid",
                                      (unsigned long long)j);
        }
        t->types[j] = (uint8_t)v;
    }

    for (int32_t i = 0; i < t->n_vocab; i++) token_map_insert(t, i);

    /* special ids and flags */
    bool spm = t->type == LOOM_VOCAB_SPM;
    if ((st = read_id(g, "tokenizer.ggml.bos_token_id", t->n_vocab, spm ? 1 : -1, &t->bos, err))) return st;
    if ((st = read_id(g, "tokenizer.ggml.eos_token_id", t->n_vocab, spm ? 2 : -1, &t->eos, err))) return st;
    if ((st = read_id(g, "tokenizer.ggml.unknown_token_id", t->n_vocab, spm ? 0 : -1, &t->unk, err))) return st;
    if ((st = read_id(g, "tokenizer.ggml.padding_token_id", t->n_vocab, -1, &t->pad, err))) return st;
    if ((st = read_id(g, "tokenizer.ggml.eot_token_id", t->n_vocab, -2, &t->eot, err))) return st;
    if ((st = read_id(g, "tokenizer.ggml.eom_token_id", t->n_vocab, -2, &t->eom, err))) return st;
    if (loom_gguf_find_key(g, "tokenizer.ggml.eot_token_id") < 0) {
        static const char *names[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                                      "<EOT>", NULL};
        t->eot = find_named(t, names);
    }
    if (loom_gguf_find_key(g, "tokenizer.ggml.eom_token_id") < 0) {
        static const char *names[] = {"<|eom_id|>", NULL};
        t->eom = find_named(t, names);
    }

    if (!spm) {
        if ((st = select_pre(t, g, err))) return st;
        if ((st = load_merges(t, g, err))) return st;
        build_bpe_byte_map(t);
        t->ignore_merges = t->pre == TOK_PRE_LLAMA3;
    }
    bool def_bos = spm || t->pre == TOK_PRE_LLAMA3;
    if ((st = read_bool(g, "tokenizer.ggml.add_bos_token", def_bos, &t->add_bos, err))) return st;
    if ((st = read_bool(g, "tokenizer.ggml.add_eos_token", false, &t->add_eos, err))) return st;
    if ((st = read_bool(g, "tokenizer.ggml.add_space_prefix", spm, &t->add_space_prefix, err))) return st;

    /* byte tokens */
    for (int b = 0; b < 256; b++) {
        if (spm) {
            static const char hex[] = "0123456789ABCDEF";
            char name[6] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
            t->byte_token[b] = tok_lookup(t, name, 6);
        } else {
            t->byte_token[b] = tok_lookup(t, (const char *)t->bpe_enc[b], t->bpe_enc_len[b]);
        }
    }

    /* special tokens, longest first */
    int32_t ns2 = 0;
    for (int32_t i = 0; i < t->n_vocab; i++) {
        uint8_t ty = t->types[i];
        if ((ty == LOOM_TOKEN_CONTROL || ty == LOOM_TOKEN_USER_DEFINED || ty == LOOM_TOKEN_UNKNOWN) && t->len[i] > 0)
            ns2++;
    }
    t->special = loom_malloc(((size_t)ns2 + 1) * sizeof(int32_t));
    if (!t->special) return loom_error_set(err, LOOM_ERR_NOMEM, "tokenizer: out of memory");
    for (int32_t i = 0; i < t->n_vocab; i++) {
        uint8_t ty = t->types[i];
        if ((ty == LOOM_TOKEN_CONTROL || ty == LOOM_TOKEN_USER_DEFINED || ty == LOOM_TOKEN_UNKNOWN) && t->len[i] > 0)
            t->special[t->n_special++] = i;
    }
    sort_specials(t);
    return LOOM_OK;
}

loom_status loom_tokenizer_new_from_gguf(const loom_gguf *g, loom_tokenizer **out, loom_error *err) {
    if (!out) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "tokenizer: out is NULL");
    *out = NULL;
    if (!g) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "tokenizer: gguf is NULL");
    loom_tokenizer *t = loom_calloc(1, sizeof *t);
    if (!t) return loom_error_set(err, LOOM_ERR_NOMEM, "tokenizer: out of memory");
    loom_status st = build(t, g, err);
    if (st != LOOM_OK) {
        loom_tokenizer_free(t);
        return st;
    }
    *out = t;
    return LOOM_OK;
}

/* ------------------------------------------------------------------ tokenize */

typedef struct frag {
    int32_t id; /* -1: raw text */
    size_t off, len;
} frag;

typedef struct frag_list {
    frag *a;
    size_t n, cap;
} frag_list;

static loom_status frag_reserve(frag_list *l, size_t extra) {
    if (l->n + extra <= l->cap) return LOOM_OK;
    size_t nc = l->cap ? l->cap : 16;
    while (nc < l->n + extra) {
        if (nc > SIZE_MAX / 2 / sizeof(frag)) return LOOM_ERR_NOMEM;
        nc *= 2;
    }
    frag *na = loom_realloc(l->a, nc * sizeof(frag));
    if (!na) return LOOM_ERR_NOMEM;
    l->a = na;
    l->cap = nc;
    return LOOM_OK;
}

static const char *find_bytes(const char *h, size_t hn, const char *nd, size_t nn) {
    if (nn == 0 || nn > hn) return NULL;
    const char *end = h + (hn - nn);
    for (const char *p = h; p <= end;) {
        const char *q = memchr(p, nd[0], (size_t)(end - p) + 1);
        if (!q) return NULL;
        if (memcmp(q, nd, nn) == 0) return q;
        p = q + 1;
    }
    return NULL;
}

/* Split raw fragments around occurrences of the special tokens (longest first). */
static loom_status partition(const loom_tokenizer *t, const char *text, size_t len, bool parse_special,
                             frag_list *l) {
    l->n = 0;
    if (len == 0) return LOOM_OK;
    if (frag_reserve(l, 1)) return LOOM_ERR_NOMEM;
    l->a[l->n++] = (frag){-1, 0, len};
    for (int32_t k = 0; k < t->n_special; k++) {
        int32_t id = t->special[k];
        if (!parse_special && t->types[id] != LOOM_TOKEN_USER_DEFINED) continue;
        const char *s = t->arena + t->off[id];
        size_t sn = t->len[id];
        for (size_t i = 0; i < l->n; i++) {
            if (l->a[i].id >= 0) continue;
            frag f = l->a[i];
            const char *p = find_bytes(text + f.off, f.len, s, sn);
            if (!p) continue;
            size_t at = (size_t)(p - text);
            /* replace f with [left], token, [right]; the loop then visits right */
            size_t nl = at - f.off, rn = f.off + f.len - (at + sn);
            size_t add = (nl ? 1 : 0) + 1 + (rn ? 1 : 0);
            if (frag_reserve(l, add)) return LOOM_ERR_NOMEM;
            memmove(&l->a[i + add], &l->a[i + 1], (l->n - i - 1) * sizeof(frag));
            l->n += add - 1;
            size_t w = i;
            if (nl) l->a[w++] = (frag){-1, f.off, nl};
            l->a[w++] = (frag){id, at, sn};
            if (rn) l->a[w++] = (frag){-1, at + sn, rn};
            i = w - 2; /* next iteration examines the right remainder (or the item after) */
        }
    }
    return LOOM_OK;
}

loom_status loom_tokenize(const loom_tokenizer *t, const char *text, size_t len, bool add_bos,
                          bool parse_special, int32_t *ids, int64_t max, int64_t *n_out) {
    if (n_out) *n_out = 0;
    if (!t || !n_out || (!text && len) || max < 0 || (!ids && max > 0)) return LOOM_ERR_INVALID_ARG;
    frag_list l = {0};
    loom_status st = partition(t, text, len, parse_special, &l);
    tok_out out = {ids, max, 0};
    if (st == LOOM_OK) {
        if (add_bos && t->add_bos && t->bos >= 0) tok_emit(&out, t->bos);
        bool prev_special = true;
        for (size_t i = 0; i < l.n && st == LOOM_OK; i++) {
            const frag *f = &l.a[i];
            if (f->id >= 0) {
                tok_emit(&out, f->id);
                prev_special = true;
                continue;
            }
            if (t->type == LOOM_VOCAB_SPM)
                st = tok_spm_fragment(t, text + f->off, f->len, t->add_space_prefix && prev_special, &out);
            else
                st = tok_bpe_fragment(t, text + f->off, f->len, &out);
            prev_special = false;
        }
        if (st == LOOM_OK && add_bos && t->add_eos && t->eos >= 0) tok_emit(&out, t->eos);
    }
    loom_free(l.a);
    if (st != LOOM_OK) return st;
    *n_out = out.n;
    return out.n > max ? LOOM_ERR_RANGE : LOOM_OK;
}

/* ------------------------------------------------------------------ accessors */

int32_t loom_tokenizer_n_vocab(const loom_tokenizer *t) { return t ? t->n_vocab : 0; }
loom_vocab_type loom_tokenizer_type(const loom_tokenizer *t) { return t ? t->type : LOOM_VOCAB_SPM; }
int32_t loom_tokenizer_bos(const loom_tokenizer *t) { return t ? t->bos : -1; }
int32_t loom_tokenizer_eos(const loom_tokenizer *t) { return t ? t->eos : -1; }
int32_t loom_tokenizer_eot(const loom_tokenizer *t) { return t ? t->eot : -1; }
int32_t loom_tokenizer_unk(const loom_tokenizer *t) { return t ? t->unk : -1; }
int32_t loom_tokenizer_pad(const loom_tokenizer *t) { return t ? t->pad : -1; }
bool loom_tokenizer_add_bos(const loom_tokenizer *t) { return t && t->add_bos; }
bool loom_tokenizer_add_eos(const loom_tokenizer *t) { return t && t->add_eos; }
size_t loom_tokenizer_max_piece_len(const loom_tokenizer *t) { return t ? t->max_piece : 0; }

bool loom_tokenizer_is_eog(const loom_tokenizer *t, int32_t id) {
    return t && id >= 0 && (id == t->eos || id == t->eot || id == t->eom);
}

loom_status loom_token_text(const loom_tokenizer *t, int32_t id, const char **text, size_t *len) {
    if (!t || !text || !len) return LOOM_ERR_INVALID_ARG;
    if (id < 0 || id >= t->n_vocab) return LOOM_ERR_RANGE;
    *text = t->arena + t->off[id];
    *len = t->len[id];
    return LOOM_OK;
}

loom_token_type loom_token_get_type(const loom_tokenizer *t, int32_t id) {
    if (!t || id < 0 || id >= t->n_vocab) return LOOM_TOKEN_UNDEFINED;
    return (loom_token_type)t->types[id];
}

float loom_token_score(const loom_tokenizer *t, int32_t id) {
    if (!t || !t->scores || id < 0 || id >= t->n_vocab) return 0.0f;
    return t->scores[id];
}
