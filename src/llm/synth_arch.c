/*
 * synth_arch.c - tiny F32 models of the architectures of arch_*.c (loom_synth.h),
 * with the keys and tensor names llama.cpp's converter writes, for reference tests
 * against llama.cpp. Bytes depend only on (arch, seed): integer PRNG and exact
 * arithmetic (sqrt is correctly rounded), so a test can regenerate a file bit for bit.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom_gguf.h"
#include "loom_synth.h"
#include "quant/alloc.h"

typedef enum { K_MAT, K_EMBD, K_NORM, K_BIAS, K_SINK, K_ROPEF } syn_kind;

typedef struct {
    char name[64];
    int64_t ne[3];
    int nd;
    syn_kind kind;
} syn_t;

typedef struct {
    syn_t t[256];
    int n;
    const char *drop;
} syn_list;

static uint64_t sa_next(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* unit variance: (sum of four uniforms - 2) * sqrt(3), each step exact or correctly rounded */
static double sa_unit(uint64_t *s) {
    double u = 0;
    for (int k = 0; k < 4; k++) u += (double)(sa_next(s) >> 11) * (1.0 / 9007199254740992.0);
    return (u - 2.0) * 1.7320508075688772;
}

static void add_t(syn_list *l, syn_kind kind, int64_t ne0, int64_t ne1, int64_t ne2, const char *fmt, int il) {
    if (l->n >= (int)(sizeof l->t / sizeof l->t[0])) return;
    syn_t *t = &l->t[l->n];
    snprintf(t->name, sizeof t->name, fmt, il);
    if (l->drop && !strcmp(l->drop, t->name)) return;
    t->ne[0] = ne0;
    t->ne[1] = ne1;
    t->ne[2] = ne2;
    t->nd = ne2 > 1 ? 3 : ne1 > 1 ? 2 : 1;
    t->kind = kind;
    l->n++;
}

/* 1/sqrt(n): sqrt and the division are correctly rounded (IEEE 754), so exact everywhere */
static double inv_sqrt(int64_t n) { return 1.0 / sqrt((double)n); }

static void fill(const syn_t *t, uint64_t seed, float *dst) {
    uint64_t s = seed;
    for (const char *p = t->name; *p; p++) s = (s ^ (uint8_t)*p) * 0x100000001b3ull;
    int64_t n = t->ne[0] * t->ne[1] * t->ne[2];
    double sc = inv_sqrt(t->ne[0]);
    for (int64_t i = 0; i < n; i++) {
        double z = sa_unit(&s);
        double v;
        switch (t->kind) {
        case K_MAT: v = z * sc; break;
        case K_EMBD: v = 0.5 * z; break;
        case K_NORM: v = 1.0 + 0.1 * z; break;
        case K_BIAS: v = 0.1 * z; break;
        case K_SINK: v = z; break;
        default: v = 1.0 + (z < 0 ? -z : z); break; /* rope factors in [1, 1 + 2 sqrt 3] */
        }
        dst[i] = (float)v;
    }
}

typedef struct {
    loom_gguf_writer *w;
    const char *arch;
    const char *drop;
    int bad;
} syn_kv;

static bool kv_skip(syn_kv *k, const char *full) { return k->drop && !strcmp(k->drop, full); }

static void kv_u32(syn_kv *k, const char *key, uint32_t v) {
    char full[128];
    snprintf(full, sizeof full, "%s.%s", k->arch, key);
    if (!kv_skip(k, full)) k->bad |= loom_gguf_writer_add_u32(k->w, full, v) != LOOM_OK;
}

static void kv_f32(syn_kv *k, const char *key, float v) {
    char full[128];
    snprintf(full, sizeof full, "%s.%s", k->arch, key);
    if (!kv_skip(k, full)) k->bad |= loom_gguf_writer_add_f32(k->w, full, v) != LOOM_OK;
}

static void kv_str(syn_kv *k, const char *key, const char *v) {
    char full[128];
    snprintf(full, sizeof full, "%s.%s", k->arch, key);
    if (!kv_skip(k, full)) k->bad |= loom_gguf_writer_add_str(k->w, full, v, strlen(v)) != LOOM_OK;
}

loom_synth_arch_params loom_synth_arch_default_params(void) {
    loom_synth_arch_params p;
    memset(&p, 0, sizeof p);
    p.seed = 1;
    return p;
}

const char *loom_synth_arch_names(void) { return "gemma2 gemma3 phi3 phi3-long mistral3 qwen3moe gpt-oss"; }

loom_status loom_synth_arch_write(const loom_synth_arch_params *p, const char *path, loom_error *err) {
    if (!p || !p->arch || !p->vocab_path || !path)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "gen: arch, vocab and output path are required");
    const char *a = p->arch;
    const bool g2 = !strcmp(a, "gemma2"), g3 = !strcmp(a, "gemma3"), phi = !strcmp(a, "phi3"),
               phil = !strcmp(a, "phi3-long"), m3 = !strcmp(a, "mistral3"), qm = !strcmp(a, "qwen3moe"),
               oss = !strcmp(a, "gpt-oss");
    if (!(g2 || g3 || phi || phil || m3 || qm || oss))
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "gen: unknown architecture '%s' (%s)", a,
                              loom_synth_arch_names());
    const char *ga = phil ? "phi3" : a;
    /* shapes: 64 wide, 4 heads of 16, 2 KV heads, window 8 (shorter than the test sequence) */
    const int64_t E = p->dim > 0 ? p->dim : 64, H = E / 16, HKV = H / 2 > 0 ? H / 2 : 1, D = 16;
    const int64_t NL = p->n_layers > 0 ? p->n_layers : g3 ? 6 : 2;
    const int64_t F = p->ffn > 0 ? p->ffn : g3 ? 96 : 128, NE = p->n_experts > 0 ? p->n_experts : qm ? 8 : 4;
    const int64_t NU = p->n_experts_used > 0 ? p->n_experts_used : 2, FE = p->ffn > 0 ? p->ffn : 32, WIN = 8;
    if (E % 64 || E > 65536 || NL > 1024 || F > (1 << 20) || NE > 4096 || NU > NE)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG,
                              "gen: bad shape (dim a multiple of 64 up to 65536, experts_used <= experts)");

    loom_gguf *v = NULL;
    loom_status s = loom_gguf_open(p->vocab_path, NULL, &v, err);
    if (s) return s;
    int64_t ti = loom_gguf_find_key(v, "tokenizer.ggml.tokens");
    int64_t n_vocab = ti >= 0 ? (int64_t)loom_gguf_kv_array_len(v, ti) : 0;
    if (n_vocab <= 0) {
        loom_gguf_close(v);
        return loom_error_set(err, LOOM_ERR_NOT_FOUND, "gen: '%s' has no tokenizer.ggml.tokens", p->vocab_path);
    }
    syn_kv k = {NULL, ga, p->drop, 0};
    if (loom_gguf_writer_new(&k.w)) {
        loom_gguf_close(v);
        return loom_error_set(err, LOOM_ERR_NOMEM, "gen: out of memory");
    }
    k.bad |= loom_gguf_writer_add_str(k.w, "general.architecture", ga, strlen(ga)) != LOOM_OK;
    k.bad |= loom_gguf_writer_add_str(k.w, "general.name", "loom-synth", 10) != LOOM_OK;
    k.bad |= loom_gguf_writer_add_u32(k.w, "general.file_type", 0) != LOOM_OK;
    kv_u32(&k, "context_length", phi || phil ? 131072 : 4096);
    kv_u32(&k, "embedding_length", (uint32_t)E);
    kv_u32(&k, "block_count", (uint32_t)NL);
    kv_u32(&k, "feed_forward_length", (uint32_t)(qm ? 64 : oss ? FE : F));
    kv_u32(&k, "attention.head_count", (uint32_t)H);
    kv_u32(&k, "attention.head_count_kv", (uint32_t)HKV);
    kv_f32(&k, "attention.layer_norm_rms_epsilon", g2 || g3 ? 1e-6f : 1e-5f);
    if (g2 || g3 || qm || oss || m3) {
        kv_u32(&k, "attention.key_length", (uint32_t)D);
        kv_u32(&k, "attention.value_length", (uint32_t)D);
    }
    kv_u32(&k, "rope.dimension_count", (uint32_t)D);
    const int64_t win = p->sliding_window ? p->sliding_window : WIN;
    if (g2) {
        kv_f32(&k, "rope.freq_base", 10000.0f);
        kv_u32(&k, "attention.sliding_window", (uint32_t)win);
        kv_f32(&k, "attn_logit_softcapping", 5.0f); /* small caps so that they matter here */
        kv_f32(&k, "final_logit_softcapping", 3.0f);
    } else if (g3) {
        kv_f32(&k, "rope.freq_base", 1000000.0f);
        kv_f32(&k, "rope.freq_base_swa", 10000.0f);
        kv_u32(&k, "attention.sliding_window", (uint32_t)win);
        kv_str(&k, "rope.scaling.type", "linear");
        kv_f32(&k, "rope.scaling.factor", 8.0f);
    } else if (phi || phil) {
        kv_f32(&k, "rope.freq_base", 10000.0f);
        kv_u32(&k, "attention.sliding_window", 262144); /* written by the converter, ignored */
        kv_u32(&k, "rope.scaling.original_context_length", phil ? 128 : 4096);
        kv_f32(&k, "rope.scaling.attn_factor", 1.1902381f);
    } else if (m3) {
        kv_f32(&k, "rope.freq_base", 1000000.0f);
        kv_str(&k, "rope.scaling.type", "yarn");
        kv_f32(&k, "rope.scaling.factor", 4.0f);
        kv_u32(&k, "rope.scaling.original_context_length", 16);
        kv_f32(&k, "rope.scaling.yarn_beta_fast", 32.0f);
        kv_f32(&k, "rope.scaling.yarn_beta_slow", 1.0f);
        kv_f32(&k, "rope.scaling.yarn_log_multiplier", 1.0f);
        kv_f32(&k, "attention.temperature_scale", 0.1f);
    } else if (qm) {
        kv_f32(&k, "rope.freq_base", 1000000.0f);
    } else if (oss) {
        kv_f32(&k, "rope.freq_base", 150000.0f);
        kv_u32(&k, "attention.sliding_window", (uint32_t)win);
        kv_str(&k, "rope.scaling.type", "yarn");
        kv_f32(&k, "rope.scaling.factor", 4.0f);
        kv_u32(&k, "rope.scaling.original_context_length", 16);
    }
    if (qm || oss) {
        kv_u32(&k, "expert_count", (uint32_t)(p->expert_count ? p->expert_count : NE));
        kv_u32(&k, "expert_used_count", (uint32_t)NU);
        kv_u32(&k, "expert_feed_forward_length", (uint32_t)FE);
    }
    for (int64_t i = 0; i < loom_gguf_kv_count(v) && !k.bad; i++)
        if (!strncmp(loom_gguf_kv_key(v, i), "tokenizer.", 10)) k.bad |= loom_gguf_writer_copy_kv(k.w, v, i) != LOOM_OK;
    loom_gguf_close(v);

    syn_list *l = loom_calloc(1, sizeof *l);
    if (!l) {
        loom_gguf_writer_free(k.w);
        return loom_error_set(err, LOOM_ERR_NOMEM, "gen: out of memory");
    }
    l->drop = p->drop;
    add_t(l, K_EMBD, E, n_vocab, 1, "token_embd.weight", 0);
    if (phi || phil) {
        add_t(l, K_ROPEF, D / 2, 1, 1, "rope_factors_long.weight", 0);
        add_t(l, K_ROPEF, D / 2, 1, 1, "rope_factors_short.weight", 0);
    }
    const int64_t HQ = H * D, HK = HKV * D;
    for (int il = 0; il < NL; il++) {
        add_t(l, K_NORM, E, 1, 1, "blk.%d.attn_norm.weight", il);
        if (phi || phil) {
            add_t(l, K_MAT, E, HQ + 2 * HK, 1, "blk.%d.attn_qkv.weight", il);
        } else {
            add_t(l, K_MAT, E, HQ, 1, "blk.%d.attn_q.weight", il);
            add_t(l, K_MAT, E, HK, 1, "blk.%d.attn_k.weight", il);
            add_t(l, K_MAT, E, HK, 1, "blk.%d.attn_v.weight", il);
        }
        if (oss) {
            add_t(l, K_BIAS, HQ, 1, 1, "blk.%d.attn_q.bias", il);
            add_t(l, K_BIAS, HK, 1, 1, "blk.%d.attn_k.bias", il);
            add_t(l, K_BIAS, HK, 1, 1, "blk.%d.attn_v.bias", il);
        }
        add_t(l, K_MAT, HQ, E, 1, "blk.%d.attn_output.weight", il);
        if (oss) {
            add_t(l, K_BIAS, E, 1, 1, "blk.%d.attn_output.bias", il);
            add_t(l, K_SINK, H, 1, 1, "blk.%d.attn_sinks.weight", il);
        }
        if (g3 || qm) {
            add_t(l, K_NORM, D, 1, 1, "blk.%d.attn_q_norm.weight", il);
            add_t(l, K_NORM, D, 1, 1, "blk.%d.attn_k_norm.weight", il);
        }
        if (g2 || g3 || oss) add_t(l, K_NORM, E, 1, 1, "blk.%d.post_attention_norm.weight", il);
        if (!oss) add_t(l, K_NORM, E, 1, 1, "blk.%d.ffn_norm.weight", il);
        if (qm || oss) {
            add_t(l, K_MAT, E, NE, 1, "blk.%d.ffn_gate_inp.weight", il);
            add_t(l, K_MAT, E, FE, NE, "blk.%d.ffn_gate_exps.weight", il);
            add_t(l, K_MAT, E, FE, NE, "blk.%d.ffn_up_exps.weight", il);
            add_t(l, K_MAT, FE, E, NE, "blk.%d.ffn_down_exps.weight", il);
            if (oss) {
                add_t(l, K_BIAS, NE, 1, 1, "blk.%d.ffn_gate_inp.bias", il);
                add_t(l, K_BIAS, FE, NE, 1, "blk.%d.ffn_gate_exps.bias", il);
                add_t(l, K_BIAS, FE, NE, 1, "blk.%d.ffn_up_exps.bias", il);
                add_t(l, K_BIAS, E, NE, 1, "blk.%d.ffn_down_exps.bias", il);
            }
        } else if (phi || phil) {
            add_t(l, K_MAT, E, 2 * F, 1, "blk.%d.ffn_up.weight", il);
            add_t(l, K_MAT, F, E, 1, "blk.%d.ffn_down.weight", il);
        } else {
            add_t(l, K_MAT, E, F, 1, "blk.%d.ffn_gate.weight", il);
            add_t(l, K_MAT, E, F, 1, "blk.%d.ffn_up.weight", il);
            add_t(l, K_MAT, F, E, 1, "blk.%d.ffn_down.weight", il);
        }
        if (g2 || g3) add_t(l, K_NORM, E, 1, 1, "blk.%d.post_ffw_norm.weight", il);
    }
    add_t(l, K_NORM, E, 1, 1, "output_norm.weight", 0);
    if (!(g2 || g3)) add_t(l, K_MAT, E, n_vocab, 1, "output.weight", 0);

    int64_t maxn = 0;
    for (int i = 0; i < l->n; i++) {
        int64_t n = l->t[i].ne[0] * l->t[i].ne[1] * l->t[i].ne[2];
        if (n > maxn) maxn = n;
    }
    float *buf = loom_malloc((size_t)maxn * sizeof *buf);
    if (!buf) k.bad = 1;
    const uint64_t seed = p->seed ^ 0xcbf29ce484222325ull;
    for (int i = 0; i < l->n && !k.bad; i++) {
        fill(&l->t[i], seed, buf);
        k.bad |= loom_gguf_writer_add_tensor(k.w, l->t[i].name, LOOM_TYPE_F32, (uint32_t)l->t[i].nd, l->t[i].ne, buf) != LOOM_OK;
    }
    loom_free(buf);
    loom_free(l);
    if (k.bad) s = loom_error_set(err, LOOM_ERR_NOMEM, "gen: building the %s model failed", a);
    else s = loom_gguf_writer_write_file(k.w, path, err);
    loom_gguf_writer_free(k.w);
    return s;
}
