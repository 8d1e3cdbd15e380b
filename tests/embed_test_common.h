/* Helpers of the embedding tests (tests/test_*_embed*.c): the synthetic bert and
 * nomic-bert models (loom_synth_write with the bert-bge WordPiece vocab), and a
 * float64 reference forward pass of both encoders written from the architecture
 * description (not from Loom's graph code), reading the F32 weights straight from
 * the GGUF file. Header-only. */
#ifndef LOOM_TEST_EMBED_COMMON_H
#define LOOM_TEST_EMBED_COMMON_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loom_embed.h"
#include "loom_gguf.h"
#include "loom_synth.h"

/* The bert-bge vocabulary (tests/data/vocab, unpacked into the build by CMake). */
static inline const char *et_vocab(void) {
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/tests/data/vocab/ggml-vocab-bert-bge.gguf", LOOM_SOURCE_DIR);
    if (access(buf, R_OK) == 0) return buf;
#ifdef LOOM_VOCAB_DIR
    snprintf(buf, sizeof buf, "%s/ggml-vocab-bert-bge.gguf", LOOM_VOCAB_DIR);
    if (access(buf, R_OK) == 0) return buf;
#endif
    return NULL;
}

/* The test models (tests/data/embed/README.md: the llama.cpp references are of these
 * exact files): dim 64, 2 layers, 4 heads, ffn 128, context 128, seed 1, pooling
 * mean; nomic-bert with rope.freq_base 1000. type "F32" or "F16". */
static inline loom_status et_make_model(const char *arch, const char *type, const char *path, loom_error *err) {
    loom_synth_params p = loom_synth_default_params();
    p.vocab_path = et_vocab();
    p.arch = arch;
    p.dim = 64;
    p.n_layers = 2;
    p.n_heads = 4;
    p.n_kv_heads = 4;
    p.ffn = 128;
    p.n_ctx = 128;
    p.type_name = type;
    p.seed = 1;
    p.rope_base = 1000.0f;
    p.pooling_type = 1;
    p.n_threads = 2;
    if (!p.vocab_path) return loom_error_set(err, LOOM_ERR_NOT_FOUND, "bert-bge vocab not found");
    return loom_synth_write(&p, path, NULL, err);
}

/* FNV-1a 64 of a file's bytes (0 on error). */
static inline uint64_t et_file_hash(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    uint64_t h = 0xcbf29ce484222325ull;
    unsigned char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        for (size_t i = 0; i < n; i++) h = (h ^ buf[i]) * 0x100000001b3ull;
    fclose(f);
    return h;
}

/* ------------------------------------------------------------------ float64 reference */

typedef struct et_ref {
    loom_gguf *g;
    bool nomic;
    int E, L, H, F, ctx;
    double eps, base;
} et_ref;

static inline const float *et_t(const et_ref *r, const char *fmt, int il) {
    char name[96];
    snprintf(name, sizeof name, fmt, il);
    int64_t i = loom_gguf_find_tensor(r->g, name);
    if (i < 0) return NULL;
    if (loom_gguf_tensor(r->g, i)->type != LOOM_TYPE_F32) return NULL;
    return (const float *)loom_gguf_tensor_data(r->g, i);
}

static inline bool et_ref_open(et_ref *r, const char *path) {
    memset(r, 0, sizeof *r);
    loom_error err = {0};
    if (loom_gguf_open(path, NULL, &r->g, &err)) return false;
    loom_gguf_str a;
    if (loom_gguf_get_str(r->g, "general.architecture", &a)) return false;
    r->nomic = a.len == 10 && !memcmp(a.ptr, "nomic-bert", 10);
    const char *an = r->nomic ? "nomic-bert" : "bert";
    char k[128];
    int64_t v;
#define GETI(key, dst) (snprintf(k, sizeof k, "%s." key, an), loom_gguf_get_int(r->g, k, &v) == LOOM_OK ? (dst = (int)v, true) : false)
    bool ok = GETI("embedding_length", r->E) && GETI("block_count", r->L) && GETI("attention.head_count", r->H) &&
              GETI("feed_forward_length", r->F) && GETI("context_length", r->ctx);
#undef GETI
    float f;
    snprintf(k, sizeof k, "%s.attention.layer_norm_epsilon", an);
    r->eps = loom_gguf_get_f32(r->g, k, &f) == LOOM_OK ? f : 1e-12;
    snprintf(k, sizeof k, "%s.rope.freq_base", an);
    r->base = loom_gguf_get_f32(r->g, k, &f) == LOOM_OK ? f : 10000.0;
    return ok;
}

static inline void et_ref_close(et_ref *r) { loom_gguf_close(r->g); }

/* y[o] = sum_i W[o][i] x[i] (+ b[o]); W stored as out rows of `in` floats. */
static inline void et_lin(const float *W, const float *b, const double *x, int in, int out, double *y) {
    for (int o = 0; o < out; o++) {
        double s = b ? b[o] : 0.0;
        for (int i = 0; i < in; i++) s += (double)W[(size_t)o * in + i] * x[i];
        y[o] = s;
    }
}

static inline void et_ln(double *x, int n, const float *w, const float *b, double eps) {
    double m = 0, v = 0;
    for (int i = 0; i < n; i++) m += x[i];
    m /= n;
    for (int i = 0; i < n; i++) v += (x[i] - m) * (x[i] - m);
    v /= n;
    double inv = 1.0 / sqrt(v + eps);
    for (int i = 0; i < n; i++) x[i] = (x[i] - m) * inv * w[i] + b[i];
}

/* Hidden states [n][E] of one sequence (non-causal self-attention over it only).
 * false when a weight is missing or not F32. */
static inline bool et_ref_forward(const et_ref *r, const int32_t *ids, int n, double *out) {
    const int E = r->E, H = r->H, D = E / H, F = r->F;
    const float *tok = et_t(r, "token_embd.weight", 0), *types = et_t(r, "token_types.weight", 0);
    const float *pos = r->nomic ? NULL : et_t(r, "position_embd.weight", 0);
    const float *nw = et_t(r, "token_embd_norm.weight", 0), *nb = et_t(r, "token_embd_norm.bias", 0);
    if (!tok || !nw || !nb || (!r->nomic && !pos)) return false;
    double *x = out;
    double *q = calloc((size_t)n * E, sizeof *q), *k = calloc((size_t)n * E, sizeof *k);
    double *v = calloc((size_t)n * E, sizeof *v), *a = calloc((size_t)n * E, sizeof *a);
    double *t1 = calloc((size_t)3 * E + 2 * F, sizeof *t1), *sc = calloc((size_t)n, sizeof *sc);
    bool ok = q && k && v && a && t1 && sc;
    for (int t = 0; ok && t < n; t++)
        for (int e = 0; e < E; e++) {
            double s = tok[(size_t)ids[t] * E + e];
            if (types) s += types[e];
            if (pos) s += pos[(size_t)t * E + e];
            x[(size_t)t * E + e] = s;
        }
    for (int t = 0; ok && t < n; t++) et_ln(x + (size_t)t * E, E, nw, nb, r->eps);
    for (int il = 0; ok && il < r->L; il++) {
        for (int t = 0; t < n; t++) {
            const double *xt = x + (size_t)t * E;
            if (r->nomic) {
                const float *w = et_t(r, "blk.%d.attn_qkv.weight", il);
                if (!w) { ok = false; break; }
                et_lin(w, NULL, xt, E, 3 * E, t1);
                memcpy(q + (size_t)t * E, t1, (size_t)E * sizeof *t1);
                memcpy(k + (size_t)t * E, t1 + E, (size_t)E * sizeof *t1);
                memcpy(v + (size_t)t * E, t1 + 2 * E, (size_t)E * sizeof *t1);
                /* NEOX rotary: pairs (i, i + D/2) of each head, angle t * base^(-2i/D) */
                for (int h = 0; h < H; h++)
                    for (int i = 0; i < D / 2; i++) {
                        double th = t * pow(r->base, -2.0 * i / D), c = cos(th), s = sin(th);
                        double *qs[2] = {q + (size_t)t * E + h * D, k + (size_t)t * E + h * D};
                        for (int j = 0; j < 2; j++) {
                            double x0 = qs[j][i], x1 = qs[j][i + D / 2];
                            qs[j][i] = x0 * c - x1 * s;
                            qs[j][i + D / 2] = x0 * s + x1 * c;
                        }
                    }
            } else {
                const float *wq = et_t(r, "blk.%d.attn_q.weight", il), *wk = et_t(r, "blk.%d.attn_k.weight", il);
                const float *wv = et_t(r, "blk.%d.attn_v.weight", il);
                if (!wq || !wk || !wv) { ok = false; break; }
                et_lin(wq, et_t(r, "blk.%d.attn_q.bias", il), xt, E, E, q + (size_t)t * E);
                et_lin(wk, et_t(r, "blk.%d.attn_k.bias", il), xt, E, E, k + (size_t)t * E);
                et_lin(wv, et_t(r, "blk.%d.attn_v.bias", il), xt, E, E, v + (size_t)t * E);
            }
        }
        if (!ok) break;
        for (int h = 0; h < H; h++)
            for (int t = 0; t < n; t++) {
                double mx = -INFINITY, sum = 0;
                for (int u = 0; u < n; u++) {
                    double s = 0;
                    for (int d = 0; d < D; d++) s += q[(size_t)t * E + h * D + d] * k[(size_t)u * E + h * D + d];
                    sc[u] = s / sqrt((double)D);
                    if (sc[u] > mx) mx = sc[u];
                }
                for (int u = 0; u < n; u++) sum += (sc[u] = exp(sc[u] - mx));
                for (int d = 0; d < D; d++) {
                    double s = 0;
                    for (int u = 0; u < n; u++) s += sc[u] * v[(size_t)u * E + h * D + d];
                    a[(size_t)t * E + h * D + d] = s / sum;
                }
            }
        const float *wo = et_t(r, "blk.%d.attn_output.weight", il), *bo = et_t(r, "blk.%d.attn_output.bias", il);
        const float *an = et_t(r, "blk.%d.attn_output_norm.weight", il), *anb = et_t(r, "blk.%d.attn_output_norm.bias", il);
        const float *up = et_t(r, "blk.%d.ffn_up.weight", il), *upb = et_t(r, "blk.%d.ffn_up.bias", il);
        const float *gt = et_t(r, "blk.%d.ffn_gate.weight", il), *dn = et_t(r, "blk.%d.ffn_down.weight", il);
        const float *dnb = et_t(r, "blk.%d.ffn_down.bias", il);
        const float *on = et_t(r, "blk.%d.layer_output_norm.weight", il), *onb = et_t(r, "blk.%d.layer_output_norm.bias", il);
        if (!wo || !an || !anb || !up || !dn || !on || !onb || (r->nomic && !gt)) { ok = false; break; }
        for (int t = 0; t < n; t++) {
            double *xt = x + (size_t)t * E, *o = t1, *u = t1 + E, *g = t1 + E + F;
            et_lin(wo, bo, a + (size_t)t * E, E, E, o);
            for (int e = 0; e < E; e++) xt[e] += o[e];
            et_ln(xt, E, an, anb, r->eps);
            et_lin(up, upb, xt, E, F, u);
            if (r->nomic) {
                et_lin(gt, NULL, xt, E, F, g);
                for (int i = 0; i < F; i++) u[i] = g[i] / (1.0 + exp(-g[i])) * u[i];
            } else {
                for (int i = 0; i < F; i++) /* GELU, tanh form (as ggml and Loom) */
                    u[i] = 0.5 * u[i] * (1.0 + tanh(0.7978845608028654 * (u[i] + 0.044715 * u[i] * u[i] * u[i])));
            }
            et_lin(dn, dnb, u, F, E, o);
            for (int e = 0; e < E; e++) xt[e] += o[e];
            et_ln(xt, E, on, onb, r->eps);
        }
    }
    free(q);
    free(k);
    free(v);
    free(a);
    free(t1);
    free(sc);
    return ok;
}

static inline double et_cosine(const float *a, const double *b, int n) {
    double ab = 0, aa = 0, bb = 0;
    for (int i = 0; i < n; i++) {
        ab += a[i] * b[i];
        aa += (double)a[i] * a[i];
        bb += b[i] * b[i];
    }
    return ab / sqrt(aa * bb);
}

#endif
