/* Tokenizer loading: reads the tokenizer.ggml.* keys of a GGUF, validates
 * them, and applies llama.cpp's vocabulary rules: per-model defaults for the
 * special ids and flags, the pre-tokenizer's defaults, the override of
 * control-looking tokens that the file types USER_DEFINED/NORMAL, the
 * end-of-generation set, and the per-model lstrip/rstrip attributes. */
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/tokenizer_internal.h"
#include "quant/alloc.h"

static bool str_eq(loom_gguf_str s, const char *lit) {
    size_t n = strlen(lit);
    return s.len == n && memcmp(s.ptr, lit, n) == 0;
}

static const char *fname(const loom_gguf *g) {
    const char *p = loom_gguf_path(g);
    return (p && p[0]) ? p : "<memory>";
}

/* Array key of the wanted kind (0 string, 1 integer, 2 float or integer). *idx = -1 when absent. */
static loom_status find_array(const loom_gguf *g, const char *key, int kind, int64_t *idx, uint64_t *len,
                              loom_gguf_vtype *et_out, loom_error *err) {
    int64_t i = loom_gguf_find_key(g, key);
    *idx = i;
    if (i < 0) return LOOM_OK;
    if (loom_gguf_kv_type(g, i) != LOOM_GGUF_ARRAY)
        return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: %s: key %s is not an array", fname(g), key);
    loom_gguf_vtype et = loom_gguf_kv_array_type(g, i);
    bool is_int = et == LOOM_GGUF_U8 || et == LOOM_GGUF_I8 || et == LOOM_GGUF_U16 || et == LOOM_GGUF_I16 ||
                  et == LOOM_GGUF_U32 || et == LOOM_GGUF_I32 || et == LOOM_GGUF_U64 || et == LOOM_GGUF_I64;
    bool ok;
    switch (kind) {
    case 0: ok = et == LOOM_GGUF_STRING; break;
    case 1: ok = is_int; break;
    default: ok = is_int || et == LOOM_GGUF_F32 || et == LOOM_GGUF_F64; break;
    }
    if (!ok)
        return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: %s: key %s has element type %s", fname(g), key,
                              loom_gguf_vtype_name(et));
    *len = loom_gguf_kv_array_len(g, i);
    if (et_out) *et_out = et;
    return LOOM_OK;
}

/* Special id key: absent -> keep *id; not an integer -> error; outside
 * [0, n_vocab) -> keep *id (llama.cpp warns "bad special token" and keeps the
 * default), except for BOS and EOS (strict): -1 / 0xFFFFFFFF mean none, any
 * other value outside the vocabulary is an error naming the key, since every
 * prompt and every generation depends on them. */
static loom_status read_id(const loom_gguf *g, const char *key, int32_t n_vocab, bool strict, int32_t *id,
                           loom_error *err) {
    int64_t v;
    loom_status st = loom_gguf_get_int(g, key, &v);
    if (st == LOOM_ERR_NOT_FOUND) return LOOM_OK;
    if (st != LOOM_OK)
        return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: %s: key %s is not an integer", fname(g), key);
    if (v >= 0 && v < n_vocab) *id = (int32_t)v;
    else if (strict && (v == -1 || v == 0xFFFFFFFFll)) *id = -1;
    else if (strict)
        return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: %s: %s = %lld is outside the vocabulary (%d tokens)",
                              fname(g), key, (long long)v, (int)n_vocab);
    return LOOM_OK;
}

static loom_status read_bool(const loom_gguf *g, const char *key, bool *out, loom_error *err) {
    bool v;
    loom_status st = loom_gguf_get_bool(g, key, &v);
    if (st == LOOM_ERR_NOT_FOUND) return LOOM_OK;
    if (st != LOOM_OK)
        return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: %s: key %s is not a bool", fname(g), key);
    *out = v;
    return LOOM_OK;
}

static void copy_name(char *dst, size_t cap, loom_gguf_str s) {
    size_t n = s.len < cap - 1 ? (size_t)s.len : cap - 1;
    memcpy(dst, s.ptr, n);
    dst[n] = 0;
}

static loom_status load_merges(loom_tokenizer *t, const loom_gguf *g, loom_error *err) {
    int64_t idx;
    uint64_t n = 0;
    loom_status st = find_array(g, "tokenizer.ggml.merges", 0, &idx, &n, NULL, err);
    if (st) return st;
    if (idx < 0) {
        if (!strcmp(t->pre_name, "kimi-k2")) return LOOM_OK; /* Kimi-K2 has no merges */
        return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: %s: BPE vocabulary (tokenizer.ggml.model \"%s\") "
                              "without tokenizer.ggml.merges", fname(g), t->model_name);
    }
    if (n > INT32_MAX)
        return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: %s: too many merges (%llu)", fname(g),
                              (unsigned long long)n);
    size_t total = 0;
    for (uint64_t j = 0; j < n; j++) {
        loom_gguf_str s;
        if (loom_gguf_kv_arr_str(g, idx, j, &s) != LOOM_OK)
            return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: %s: cannot read merge %llu", fname(g),
                                  (unsigned long long)j);
        if (s.len > UINT32_MAX || total > SIZE_MAX - 1 - s.len)
            return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: %s: merge %llu too long", fname(g),
                                  (unsigned long long)j);
        total += s.len + 1;
    }
    t->n_merges = (int32_t)n;
    t->merge_arena = loom_malloc(total ? total : 1);
    t->merge_off = loom_malloc((n ? n : 1) * sizeof(size_t));
    t->merge_len = loom_malloc((n ? n : 1) * sizeof(uint32_t));
    t->merge_split = loom_malloc((n ? n : 1) * sizeof(uint32_t));
    if (!t->merge_arena || !t->merge_off || !t->merge_len || !t->merge_split)
        return loom_error_set(err, LOOM_ERR_NOMEM, "tokenizer: out of memory for %llu merges", (unsigned long long)n);
    size_t pos = 0;
    for (uint64_t j = 0; j < n; j++) {
        loom_gguf_str s;
        loom_gguf_kv_arr_str(g, idx, j, &s);
        const char *sp = s.len > 1 ? memchr(s.ptr + 1, ' ', (size_t)s.len - 1) : NULL;
        if (!sp)
            return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: %s: merge %llu (\"%.*s\") is not \"A B\"", fname(g),
                                  (unsigned long long)j, (int)(s.len > 64 ? 64 : s.len), s.ptr);
        if (s.len) memcpy(t->merge_arena + pos, s.ptr, (size_t)s.len);
        t->merge_arena[pos + s.len] = 0;
        t->merge_off[j] = pos;
        t->merge_len[j] = (uint32_t)s.len;
        t->merge_split[j] = (uint32_t)(sp - s.ptr);
        pos += (size_t)s.len + 1;
    }
    /* the merges are indexed in tok_build_pairs (by token-id pair, or by text when not closed) */
    return LOOM_OK;
}

static loom_status load_charsmap(loom_tokenizer *t, const loom_gguf *g, loom_error *err) {
    int64_t idx = loom_gguf_find_key(g, "tokenizer.ggml.precompiled_charsmap");
    if (idx < 0) return LOOM_OK;
    loom_gguf_vtype et;
    const void *data;
    uint64_t n;
    if (loom_gguf_kv_type(g, idx) != LOOM_GGUF_ARRAY || loom_gguf_kv_arr(g, idx, &et, &data, &n) != LOOM_OK ||
        (et != LOOM_GGUF_U8 && et != LOOM_GGUF_I8))
        return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: %s: tokenizer.ggml.precompiled_charsmap is not a "
                              "byte array", fname(g));
    if (n < 4 || n > (uint64_t)1 << 30)
        return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: %s: tokenizer.ggml.precompiled_charsmap has %llu bytes",
                              fname(g), (unsigned long long)n);
    /* copy into 4-byte aligned memory: the XCDA is read as uint32 */
    t->charsmap = loom_malloc((size_t)n + 4);
    if (!t->charsmap) return loom_error_set(err, LOOM_ERR_NOMEM, "tokenizer: out of memory");
    memcpy(t->charsmap, data, (size_t)n);
    t->charsmap_size = (size_t)n;
    uint32_t blob = (uint32_t)t->charsmap[0] | (uint32_t)t->charsmap[1] << 8 | (uint32_t)t->charsmap[2] << 16 |
                    (uint32_t)t->charsmap[3] << 24;
    if ((uint64_t)blob + 4 >= n || blob % 4)
        return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: %s: precompiled_charsmap XCDA size %u out of bounds "
                              "(%llu bytes)", fname(g), blob, (unsigned long long)n);
    /* little-endian file data; convert in place on big-endian hosts */
    uint32_t *xc = (uint32_t *)(void *)(t->charsmap + 4);
    for (size_t i = 0; i < blob / 4; i++) {
        const uint8_t *b = t->charsmap + 4 + i * 4;
        xc[i] = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    }
    t->xcda = xc;
    t->xcda_size = blob / 4;
    t->repl = (const char *)t->charsmap + 4 + blob;
    t->repl_size = (size_t)n - 4 - blob;
    return LOOM_OK;
}

static int32_t find_text(const loom_tokenizer *t, const char *s) { return tok_lookup(t, s, strlen(s)); }

/* The first token of `names` present in the vocabulary becomes *id (when
 * unset) and is made a control token, as llama.cpp does for "control-looking"
 * tokens the file types otherwise. */
static void detect(loom_tokenizer *t, int32_t *id, const char *const *names) {
    if (*id >= 0) return;
    for (int i = 0; names[i]; i++) {
        int32_t x = find_text(t, names[i]);
        if (x >= 0) {
            *id = x;
            t->attr[x] |= TOK_ATTR_CONTROL;
            return;
        }
    }
}

static bool has_sub(const char *s, const char *sub) { return strstr(s, sub) != NULL; }

static void set_attr(loom_tokenizer *t, const char *text, unsigned a, bool on) {
    int32_t id = find_text(t, text);
    if (id < 0) return;
    if (on) t->attr[id] |= (uint16_t)a;
    else t->attr[id] &= (uint16_t)~a;
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static loom_status eog_add(loom_tokenizer *t, int32_t id) {
    if (id < 0) return LOOM_OK;
    for (int32_t i = 0; i < t->n_eog; i++) if (t->eog[i] == id) return LOOM_OK;
    int32_t *n = loom_realloc(t->eog, (size_t)(t->n_eog + 1) * sizeof(int32_t));
    if (!n) return LOOM_ERR_NOMEM;
    t->eog = n;
    t->eog[t->n_eog++] = id;
    return LOOM_OK;
}

static void eog_remove(loom_tokenizer *t, int32_t id) {
    for (int32_t i = 0; i < t->n_eog; i++)
        if (t->eog[i] == id) {
            t->eog[i] = t->eog[--t->n_eog];
            return;
        }
}

static bool eog_has_text(const loom_tokenizer *t, const char *s, int32_t *id) {
    for (int32_t i = 0; i < t->n_eog; i++) {
        int32_t x = t->eog[i];
        if (t->len[x] == strlen(s) && memcmp(t->arena + t->off[x], s, t->len[x]) == 0) {
            if (id) *id = x;
            return true;
        }
    }
    return false;
}

static loom_status special_rules(loom_tokenizer *t, const loom_gguf *g) {
    static const char *const eot_names[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                                            "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]",
                                            "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",
                                            "<end_of_utterance>", NULL};
    static const char *const eom_names[] = {"<|eom_id|>", NULL};
    static const char *const fim_pre[] = {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",
                                          "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "begin\xEF\xBD\x9C>", "<PRE>",
                                          "\xE2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>", NULL};
    static const char *const fim_suf[] = {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
                                          "<\xEF\xBD\x9C" "fim\xE2\x96\x81hole\xEF\xBD\x9C>", "<SUF>",
                                          "\xE2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>", NULL};
    static const char *const fim_mid[] = {"<|fim_middle|>", "<fim-middle>", "<fim_middle>",
                                          "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "end\xEF\xBD\x9C>", "<MID>",
                                          "\xE2\x96\x81<MID>", "<|code_middle|>", "<|middle|>", NULL};
    static const char *const fim_pad[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]", NULL};
    static const char *const fim_rep[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>", NULL};
    static const char *const fim_sep[] = {"<|file_sep|>", NULL};
    static const char *const eog_names[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>",
                                            "<|flush|>", "<|calls|>", "<end_of_turn>", "<|endoftext|>", "</s>",
                                            "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
                                            "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
                                            "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",
                                            "[e~[", NULL};
    detect(t, &t->eot, eot_names);
    detect(t, &t->eom, eom_names);
    detect(t, &t->fim_pre, fim_pre);
    detect(t, &t->fim_suf, fim_suf);
    detect(t, &t->fim_mid, fim_mid);
    detect(t, &t->fim_pad, fim_pad);
    detect(t, &t->fim_rep, fim_rep);
    detect(t, &t->fim_sep, fim_sep);

    /* control tokens named "unused..." are unused */
    for (int32_t i = 0; i < t->n_vocab; i++)
        if ((t->attr[i] & TOK_ATTR_CONTROL) && strstr(t->arena + t->off[i], "unused")) t->attr[i] |= TOK_ATTR_UNUSED;

    /* end-of-generation set */
    if (eog_add(t, t->fim_pad) || eog_add(t, t->fim_rep) || eog_add(t, t->fim_sep)) return LOOM_ERR_NOMEM;
    for (int i = 0; eog_names[i]; i++) {
        int32_t x = find_text(t, eog_names[i]);
        if (x < 0) continue;
        if (eog_add(t, x)) return LOOM_ERR_NOMEM;
        t->attr[x] |= TOK_ATTR_CONTROL;
    }
    /* gpt-oss: these are always rendered (and always parsed) */
    static const char *const oss[] = {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>", NULL};
    for (int i = 0; oss[i]; i++) {
        int32_t x = find_text(t, oss[i]);
        if (x >= 0) t->attr[x] = TOK_ATTR_USER_DEFINED;
    }
    if (eog_add(t, t->eos) || eog_add(t, t->eot) || eog_add(t, t->eom)) return LOOM_ERR_NOMEM;
    /* o200k_harmony / solar-open: <|end|> ends a message, not the generation */
    int32_t end_id = -1;
    bool has_end = eog_has_text(t, "<|end|>", &end_id);
    bool has_return = eog_has_text(t, "<|return|>", NULL);
    bool has_call = eog_has_text(t, "<|call|>", NULL) || eog_has_text(t, "<|calls|>", NULL);
    bool has_flush = eog_has_text(t, "<|flush|>", NULL);
    if ((has_return && has_call && has_end) || (has_call && has_flush && has_end)) {
        eog_remove(t, end_id);
        t->attr[end_id] = TOK_ATTR_USER_DEFINED;
    }
    /* Gemma 4 / PaddleOCR: </s> is ordinary text */
    int32_t s_id = -1;
    if (eog_has_text(t, "<|tool_response>", NULL) && eog_has_text(t, "</s>", &s_id)) {
        eog_remove(t, s_id);
        t->attr[s_id] = TOK_ATTR_NORMAL;
    }
    if (t->n_eog > 1) qsort(t->eog, (size_t)t->n_eog, sizeof(int32_t), cmp_i32); /* eog may be NULL when empty */

    /* special tokens list (needed below for phi-3) */
    loom_status st = tok_build_special(t);
    if (st) return st;

    /* per-model attributes llama.cpp sets by name */
    char name[128] = "", arch[64] = "";
    loom_gguf_str s;
    if (loom_gguf_get_str(g, "general.name", &s) == LOOM_OK) copy_name(name, sizeof name, s);
    if (loom_gguf_get_str(g, "general.architecture", &s) == LOOM_OK) copy_name(arch, sizeof arch, s);
    for (char *p = name; *p; p++) *p = (char)tolower((unsigned char)*p);
    if (has_sub(t->pre_name, "jina-v2-de") || has_sub(t->pre_name, "jina-v2-es") ||
        has_sub(t->pre_name, "jina-v2-code") || has_sub(arch, "nomic-bert-moe") || has_sub(arch, "jina-bert-v3")) {
        set_attr(t, "<mask>", TOK_ATTR_LSTRIP, true);
    } else if (has_sub(name, "phi-3") || has_sub(name, "phi3")) {
        for (int32_t i = 0; i < t->n_special; i++) t->attr[t->special[i]] |= TOK_ATTR_RSTRIP;
        set_attr(t, "</s>", TOK_ATTR_RSTRIP, true);
        set_attr(t, "<unk>", TOK_ATTR_RSTRIP, false);
        set_attr(t, "<s>", TOK_ATTR_RSTRIP, false);
        set_attr(t, "<|endoftext|>", TOK_ATTR_RSTRIP, false);
    } else if (has_sub(name, "modern-bert")) {
        set_attr(t, "[MASK]", TOK_ATTR_LSTRIP, true);
    }
    return LOOM_OK;
}

static void build_bpe_byte_map(loom_tokenizer *t) {
    for (int i = 0; i < 324; i++) t->bpe_dec[i] = -1;
    int extra = 0;
    for (int b = 0; b < 256; b++) {
        uint32_t cp;
        if ((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)) cp = (uint32_t)b;
        else cp = 256u + (uint32_t)extra++;
        unsigned char u[4];
        size_t n = loom_utf8_encode(cp, u);
        memcpy(t->bpe_enc[b], u, n);
        t->bpe_enc_len[b] = (uint8_t)n;
        t->bpe_dec[cp] = (int16_t)b;
    }
}

loom_status tok_load(loom_tokenizer *t, const loom_gguf *g, loom_error *err) {
    tok_unicode_init();
    loom_gguf_str model, pre = {0};
    loom_status st = loom_gguf_get_str(g, "tokenizer.ggml.model", &model);
    if (st == LOOM_ERR_NOT_FOUND)
        return loom_error_set(err, LOOM_ERR_NOT_FOUND, "tokenizer: %s: no tokenizer.ggml.model key", fname(g));
    if (st != LOOM_OK)
        return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: %s: tokenizer.ggml.model is not a string", fname(g));
    st = loom_gguf_get_str(g, "tokenizer.ggml.pre", &pre);
    if (st != LOOM_OK && st != LOOM_ERR_NOT_FOUND)
        return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: %s: tokenizer.ggml.pre is not a string", fname(g));
    copy_name(t->model_name, sizeof t->model_name, model);
    if (pre.ptr) copy_name(t->pre_name, sizeof t->pre_name, pre);

    int32_t d_bos = -1, d_eos = -1, d_unk = -1, d_sep = -1, d_pad = -1, d_mask = -1;
    bool whitespace_model = false;
    if (str_eq(model, "llama")) {
        t->type = LOOM_VOCAB_SPM;
        d_bos = 1; d_eos = 2; d_unk = 0;
        t->add_space_prefix = true;
        t->add_bos = true;
    } else if (str_eq(model, "bert")) {
        t->type = LOOM_VOCAB_WPM;
        d_bos = 101; d_unk = 100; d_sep = 102; d_pad = 0; d_mask = 103;
        t->add_bos = true;
        t->add_sep = true;
        t->clean_spaces = true;
    } else if (str_eq(model, "gpt2") || str_eq(model, "whitespace") || str_eq(model, "gemma4") ||
               str_eq(model, "hybriddna")) {
        t->type = LOOM_VOCAB_BPE;
        whitespace_model = str_eq(model, "whitespace");
        t->dna = str_eq(model, "hybriddna");
        if (str_eq(model, "gemma4")) {
            snprintf(t->pre_name, sizeof t->pre_name, "gemma4");
        } else {
            d_bos = 11; d_eos = 11;
        }
    } else if (str_eq(model, "t5")) {
        t->type = LOOM_VOCAB_UGM;
        d_eos = 1; d_unk = 2; d_pad = 0;
        t->add_eos = true;
        t->escape_ws = true;
    } else if (str_eq(model, "rwkv")) {
        t->type = LOOM_VOCAB_RWKV;
    } else if (str_eq(model, "plamo2")) {
        t->type = LOOM_VOCAB_PLAMO2;
        d_bos = 1; d_eos = 2; d_unk = 0; d_pad = 3;
    } else if (str_eq(model, "none") || str_eq(model, "no_vocab")) {
        return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "tokenizer: %s: the model has no vocabulary "
                              "(tokenizer.ggml.model = \"%s\")", fname(g), t->model_name);
    } else {
        return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "tokenizer: %s: unsupported tokenizer.ggml.model \"%s\" "
                              "(supported: llama, gpt2, gemma4, whitespace, hybriddna, bert, t5, rwkv, plamo2)", fname(g),
                              t->model_name);
    }
    if (t->type == LOOM_VOCAB_BPE) {
        t->pre = tok_pre_find(t->pre_name, strlen(t->pre_name));
        if (!t->pre)
            return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "tokenizer: %s: unknown pre-tokenizer tokenizer.ggml.pre "
                                  "\"%s\" (tokenizer.ggml.model \"%s\")", fname(g), t->pre_name, t->model_name);
        unsigned f = t->pre->flags;
        if (whitespace_model && !(f & TOK_PRE_F_WHITESPACE))
            return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "tokenizer: %s: tokenizer.ggml.model \"whitespace\" with "
                                  "tokenizer.ggml.pre \"%s\" is not supported", fname(g), t->pre_name);
        t->escape_ws = (f & TOK_PRE_F_ESCAPE_WS) != 0;
        t->clean_spaces = !(f & TOK_PRE_F_NO_CLEAN);
        t->ignore_merges = (f & TOK_PRE_F_IGNORE_MERGES) != 0;
        t->add_bos = (f & TOK_PRE_F_ADD_BOS) != 0;
        t->add_sep = (f & TOK_PRE_F_ADD_SEP) != 0;
        t->byte_encode = !(f & TOK_PRE_F_RAW);
        if (f & TOK_PRE_F_NO_BOS_ID) d_bos = -1;
    }
    t->lowercase = !(t->type == LOOM_VOCAB_BPE && (t->pre->flags & TOK_PRE_F_WHITESPACE));
    if ((st = read_bool(g, "tokenizer.ggml.add_space_prefix", &t->add_space_prefix, err))) return st;
    if ((st = read_bool(g, "tokenizer.ggml.remove_extra_whitespaces", &t->remove_extra_ws, err))) return st;

    /* tokens */
    int64_t ti;
    uint64_t n = 0;
    if ((st = find_array(g, "tokenizer.ggml.tokens", 0, &ti, &n, NULL, err))) return st;
    if (ti < 0) return loom_error_set(err, LOOM_ERR_NOT_FOUND, "tokenizer: %s: no tokenizer.ggml.tokens key", fname(g));
    if (n == 0 || n > INT32_MAX)
        return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: %s: tokenizer.ggml.tokens has %llu entries", fname(g),
                              (unsigned long long)n);
    t->n_vocab = (int32_t)n;
    size_t total = 0;
    for (uint64_t j = 0; j < n; j++) {
        loom_gguf_str s;
        if (loom_gguf_kv_arr_str(g, ti, j, &s) != LOOM_OK)
            return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: %s: cannot read token %llu", fname(g),
                                  (unsigned long long)j);
        size_t l = s.len ? (size_t)s.len : 24; /* "[EMPTY_n]" */
        if (s.len > UINT32_MAX / 2 || total > SIZE_MAX - 1 - l)
            return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: %s: token %llu too long", fname(g),
                                  (unsigned long long)j);
        total += l + 1;
    }
    t->arena = loom_malloc(total);
    t->off = loom_malloc(n * sizeof(size_t));
    t->len = loom_malloc(n * sizeof(uint32_t));
    t->types = loom_malloc(n);
    t->attr = loom_malloc(n * sizeof(uint16_t));
    if (!t->arena || !t->off || !t->len || !t->types || !t->attr || tok_strmap_init(&t->map, (size_t)n) != LOOM_OK)
        return loom_error_set(err, LOOM_ERR_NOMEM, "tokenizer: out of memory for %llu tokens", (unsigned long long)n);
    size_t pos = 0;
    for (uint64_t j = 0; j < n; j++) {
        loom_gguf_str s;
        loom_gguf_kv_arr_str(g, ti, j, &s);
        size_t l;
        if (s.len) {
            memcpy(t->arena + pos, s.ptr, (size_t)s.len);
            l = (size_t)s.len;
        } else {
            /* llama.cpp renames empty tokens */
            l = (size_t)snprintf(t->arena + pos, 25, "[EMPTY_%llu]", (unsigned long long)j);
        }
        t->arena[pos + l] = 0;
        t->off[j] = pos;
        t->len[j] = (uint32_t)l;
        if (l > t->max_token_len) t->max_token_len = l;
        pos += l + 1;
    }

    /* scores: float or integer, at least one per token */
    int64_t si;
    uint64_t ns = 0;
    loom_gguf_vtype set;
    if ((st = find_array(g, "tokenizer.ggml.scores", 2, &si, &ns, &set, err))) return st;
    if (si >= 0) {
        if (ns < n)
            return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: %s: tokenizer.ggml.scores has %llu entries for "
                                  "%llu tokens", fname(g), (unsigned long long)ns, (unsigned long long)n);
        t->scores = loom_malloc(n * sizeof(float));
        if (!t->scores) return loom_error_set(err, LOOM_ERR_NOMEM, "tokenizer: out of memory");
        bool fl = set == LOOM_GGUF_F32 || set == LOOM_GGUF_F64;
        for (uint64_t j = 0; j < n; j++) {
            double v = 0;
            int64_t iv = 0;
            loom_status s2 = fl ? loom_gguf_kv_arr_float(g, si, j, &v) : loom_gguf_kv_arr_int(g, si, j, &iv);
            if (s2 != LOOM_OK)
                return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: %s: cannot read score %llu", fname(g),
                                      (unsigned long long)j);
            t->scores[j] = fl ? (float)v : (float)iv;
        }
    }

    /* token types */
    int64_t yi;
    uint64_t ny = 0;
    if ((st = find_array(g, "tokenizer.ggml.token_type", 1, &yi, &ny, NULL, err))) return st;
    if (yi >= 0 && ny < n)
        return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: %s: tokenizer.ggml.token_type has %llu entries for "
                              "%llu tokens", fname(g), (unsigned long long)ny, (unsigned long long)n);
    for (uint64_t j = 0; j < n; j++) {
        int64_t v = LOOM_TOKEN_NORMAL;
        if (yi >= 0 && loom_gguf_kv_arr_int(g, yi, j, &v) != LOOM_OK)
            return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: %s: cannot read token_type[%llu]", fname(g),
                                  (unsigned long long)j);
        if (v < 0 || v > LOOM_TOKEN_BYTE)
            return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: %s: token_type[%llu] = %lld is not a token type "
                                  "(0..6)", fname(g), (unsigned long long)j, (long long)v);
        t->types[j] = (uint8_t)v;
        static const uint16_t map[7] = {0, TOK_ATTR_NORMAL, TOK_ATTR_UNKNOWN, TOK_ATTR_CONTROL, TOK_ATTR_USER_DEFINED,
                                        TOK_ATTR_UNUSED, TOK_ATTR_BYTE};
        t->attr[j] = map[v];
    }
    for (int32_t i = 0; i < t->n_vocab; i++) tok_map_insert_token(t, i); /* later duplicates win */
    t->dna_oov = t->dna ? tok_lookup(t, "<oov>", 5) : -1;

    if (t->type == LOOM_VOCAB_BPE) {
        if ((st = load_merges(t, g, err))) return st;
        build_bpe_byte_map(t);
    }
    if (t->type == LOOM_VOCAB_UGM && (st = load_charsmap(t, g, err))) return st;

    /* special ids: per-model defaults (disabled when out of range), then the keys */
    int32_t nv = t->n_vocab;
#define DEF(x) ((x) >= 0 && (x) < nv ? (x) : -1)
    t->bos = DEF(d_bos); t->eos = DEF(d_eos); t->unk = DEF(d_unk); t->sep = DEF(d_sep);
    t->pad = DEF(d_pad); t->mask = DEF(d_mask);
#undef DEF
    t->eot = t->eom = t->cls = -1;
    t->fim_pre = t->fim_suf = t->fim_mid = t->fim_pad = t->fim_rep = t->fim_sep = -1;
    struct { const char *key; int32_t *id; } ids[] = {
        {"tokenizer.ggml.bos_token_id", &t->bos},         {"tokenizer.ggml.eos_token_id", &t->eos},
        {"tokenizer.ggml.eot_token_id", &t->eot},         {"tokenizer.ggml.eom_token_id", &t->eom},
        {"tokenizer.ggml.unknown_token_id", &t->unk},     {"tokenizer.ggml.seperator_token_id", &t->sep},
        {"tokenizer.ggml.padding_token_id", &t->pad},     {"tokenizer.ggml.mask_token_id", &t->mask},
        {"tokenizer.ggml.cls_token_id", &t->cls},         {"tokenizer.ggml.fim_pre_token_id", &t->fim_pre},
        {"tokenizer.ggml.fim_suf_token_id", &t->fim_suf}, {"tokenizer.ggml.fim_mid_token_id", &t->fim_mid},
        {"tokenizer.ggml.fim_pad_token_id", &t->fim_pad}, {"tokenizer.ggml.fim_rep_token_id", &t->fim_rep},
        {"tokenizer.ggml.fim_sep_token_id", &t->fim_sep}, {"tokenizer.ggml.prefix_token_id", &t->fim_pre},
        {"tokenizer.ggml.suffix_token_id", &t->fim_suf},  {"tokenizer.ggml.middle_token_id", &t->fim_mid},
    };
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        if ((st = read_id(g, ids[i].key, nv, i < 2, ids[i].id, err))) return st;

    /* tokens never to sample (MiniMax: added tokens without embeddings); llama.cpp's rule:
     * an INT32 array, out-of-range ids dropped */
    const int64_t ks = loom_gguf_find_key(g, "tokenizer.ggml.suppress_tokens");
    if (ks >= 0) {
        loom_gguf_vtype et;
        const void *data;
        uint64_t n;
        if (loom_gguf_kv_type(g, ks) != LOOM_GGUF_ARRAY || loom_gguf_kv_arr(g, ks, &et, &data, &n) ||
            et != LOOM_GGUF_I32)
            return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: %s: key 'tokenizer.ggml.suppress_tokens' must be an "
                                  "INT32 array", fname(g));
        if (n > (uint64_t)nv + 1024)
            return loom_error_set(err, LOOM_ERR_FORMAT, "tokenizer: %s: 'tokenizer.ggml.suppress_tokens' holds %llu ids "
                                  "for %d tokens", fname(g), (unsigned long long)n, nv);
        t->suppress = n ? loom_malloc((size_t)n * sizeof(int32_t)) : NULL;
        if (n && !t->suppress) return loom_error_set(err, LOOM_ERR_NOMEM, "tokenizer: out of memory");
        for (uint64_t i = 0; i < n; i++) {
            int32_t id;
            memcpy(&id, (const char *)data + i * sizeof id, sizeof id);
            if (id >= 0 && id < nv) t->suppress[t->n_suppress++] = id;
        }
    }
    /* Chameleon: its image tokens (ids 4..8195) are never output (llama.cpp's chameleon
     * graph sets their logits to -FLT_MAX; Loom suppresses them when sampling) */
    loom_gguf_str arch;
    if (loom_gguf_get_str(g, "general.architecture", &arch) == LOOM_OK && arch.len == 9 &&
        !memcmp(arch.ptr, "chameleon", 9) && nv > 8196) {
        int32_t *ns = loom_realloc(t->suppress, ((size_t)t->n_suppress + 8192) * sizeof(int32_t));
        if (!ns) return loom_error_set(err, LOOM_ERR_NOMEM, "tokenizer: out of memory");
        t->suppress = ns;
        for (int32_t id = 4; id < 8196; id++) t->suppress[t->n_suppress++] = id;
    }

    if ((st = read_bool(g, "tokenizer.ggml.add_bos_token", &t->add_bos, err))) return st;
    if ((st = read_bool(g, "tokenizer.ggml.add_eos_token", &t->add_eos, err))) return st;
    if ((st = read_bool(g, "tokenizer.ggml.add_sep_token", &t->add_sep, err))) return st;
    if (t->type == LOOM_VOCAB_BPE && (t->pre->flags & TOK_PRE_F_FORCE_BOS)) t->add_bos = true;
    if ((st = read_bool(g, "tokenizer.ggml.normalizer.lowercase", &t->lowercase, err))) return st;
    t->strip_accents = t->lowercase;
    if ((st = read_bool(g, "tokenizer.ggml.normalizer.strip_accents", &t->strip_accents, err))) return st;

    if ((st = special_rules(t, g))) return loom_error_set(err, st, "tokenizer: out of memory");

    /* byte fallback tokens */
    for (int b = 0; b < 256; b++) {
        int32_t id = -1;
        if (t->type == LOOM_VOCAB_BPE && t->byte_encode) {
            id = tok_lookup(t, (const char *)t->bpe_enc[b], t->bpe_enc_len[b]);
        } else {
            static const char hex[] = "0123456789ABCDEF";
            char nm[6] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
            id = tok_lookup(t, nm, 6);
            if (id < 0 && t->type != LOOM_VOCAB_BPE && t->type != LOOM_VOCAB_PLAMO2) {
                char c = (char)b;
                id = tok_lookup(t, &c, 1); /* SPM/UGM fall back to the byte itself */
            }
        }
        t->byte_token[b] = id;
    }

    if (t->type == LOOM_VOCAB_SPM) {
        bool used[256] = {false};
        for (int32_t i = 0; i < t->n_vocab; i++)
            if (t->len[i] >= 2)
                for (uint32_t k = 0; k < t->len[i]; k++) used[(unsigned char)t->arena[t->off[i] + k]] = true;
        for (int b = 0; b < 128; b++) t->solo[b] = !used[b];
    }

    char why[256] = "";
    switch (t->type) {
    case LOOM_VOCAB_BPE: st = tok_bpe_init(t, why, sizeof why); break;
    case LOOM_VOCAB_UGM: st = tok_ugm_init(t, why, sizeof why); break;
    case LOOM_VOCAB_RWKV: st = tok_rwkv_init(t, why, sizeof why); break;
    case LOOM_VOCAB_PLAMO2: st = tok_plamo2_init(t, why, sizeof why); break;
    default: st = LOOM_OK; break;
    }
    if (st != LOOM_OK)
        return loom_error_set(err, st, "tokenizer: %s: %s (tokenizer.ggml.model \"%s\", tokenizer.ggml.pre \"%s\")",
                              fname(g), why[0] ? why : loom_status_name(st), t->model_name, t->pre_name);
    return LOOM_OK;
}
