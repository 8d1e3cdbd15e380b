/* loom_synth: synthetic llama GGUF files. Each file is read back with the GGUF
 * reader; keys, shapes and types are checked against hand-written expectations
 * and the dequantized weights against the documented distribution (float64
 * statistics computed here). */
#include "loom_gguf.h"
#include "loom_synth.h"
#include "test_util.h"

#include <unistd.h>

#define VOCAB "tests/data/vocab/ggml-vocab-llama-spm.gguf"

static char g_path[256];

static const char *tmp_path(const char *tag) {
    snprintf(g_path, sizeof g_path, "/tmp/loom_test_synth_%ld_%s.gguf", (long)getpid(), tag);
    return g_path;
}

static loom_synth_params tiny(const char *type) {
    loom_synth_params p = loom_synth_default_params();
    p.vocab_path = test_path(VOCAB);
    p.dim = 256;
    p.n_layers = 2;
    p.n_heads = 4;
    p.n_kv_heads = 2;
    p.ffn = 512;
    p.type_name = type;
    p.seed = 42;
    p.n_threads = 2;
    return p;
}

static uint32_t get_u32(const loom_gguf *g, const char *key) {
    uint32_t v = 0xFFFFFFFFu;
    CHECK_MSG(loom_gguf_get_u32(g, key, &v) == LOOM_OK, "key %s", key);
    return v;
}

/* Every tokenizer.* KV of the vocab file is present in g with identical content. */
static void check_tokenizer_copied(const loom_gguf *voc, const loom_gguf *g) {
    int n_tok = 0;
    for (int64_t i = 0; i < loom_gguf_kv_count(voc); i++) {
        const char *key = loom_gguf_kv_key(voc, i);
        if (strncmp(key, "tokenizer.", 10) != 0) continue;
        n_tok++;
        int64_t j = loom_gguf_find_key(g, key);
        CHECK_MSG(j >= 0, "missing %s", key);
        if (j < 0) continue;
        loom_gguf_vtype t = loom_gguf_kv_type(voc, i);
        CHECK_EQ_INT(loom_gguf_kv_type(g, j), t);
        if (t == LOOM_GGUF_STRING) {
            loom_gguf_str a, b;
            CHECK(loom_gguf_kv_str(voc, i, &a) == LOOM_OK && loom_gguf_kv_str(g, j, &b) == LOOM_OK &&
                  a.len == b.len && !memcmp(a.ptr, b.ptr, a.len));
        } else if (t == LOOM_GGUF_ARRAY) {
            loom_gguf_vtype et = loom_gguf_kv_array_type(voc, i);
            uint64_t n = loom_gguf_kv_array_len(voc, i);
            CHECK_EQ_INT(loom_gguf_kv_array_type(g, j), et);
            CHECK_EQ_INT(loom_gguf_kv_array_len(g, j), n);
            int bad = 0;
            if (et == LOOM_GGUF_STRING) {
                for (uint64_t k = 0; k < n; k++) {
                    loom_gguf_str a, b;
                    if (loom_gguf_kv_arr_str(voc, i, k, &a) || loom_gguf_kv_arr_str(g, j, k, &b) ||
                        a.len != b.len || memcmp(a.ptr, b.ptr, a.len))
                        bad++;
                }
            } else {
                for (uint64_t k = 0; k < n; k++) {
                    double a = 0, b = 1;
                    int64_t ia = 0, ib = 1;
                    if (et == LOOM_GGUF_F32 || et == LOOM_GGUF_F64) {
                        if (loom_gguf_kv_arr_float(voc, i, k, &a) || loom_gguf_kv_arr_float(g, j, k, &b) ||
                            memcmp(&a, &b, sizeof a))
                            bad++;
                    } else if (loom_gguf_kv_arr_int(voc, i, k, &ia) ||
                               loom_gguf_kv_arr_int(g, j, k, &ib) || ia != ib) {
                        bad++;
                    }
                }
            }
            CHECK_MSG(bad == 0, "%s: %d elements differ", key, bad);
        } else if (t == LOOM_GGUF_F32 || t == LOOM_GGUF_F64) {
            double a = 0, b = 1;
            CHECK(loom_gguf_kv_float(voc, i, &a) == LOOM_OK && loom_gguf_kv_float(g, j, &b) == LOOM_OK &&
                  a == b);
        } else if (t == LOOM_GGUF_BOOL) {
            bool a = false, b = true;
            CHECK(loom_gguf_get_bool(voc, key, &a) == LOOM_OK && loom_gguf_get_bool(g, key, &b) == LOOM_OK &&
                  a == b);
        } else {
            int64_t a = 0, b = 1;
            CHECK(loom_gguf_kv_int(voc, i, &a) == LOOM_OK && loom_gguf_kv_int(g, j, &b) == LOOM_OK && a == b);
        }
    }
    CHECK(n_tok >= 5); /* model, tokens, scores, token_type, bos id ... */
}

/* Expected tensor type for the tiny model (2 layers) per scheme, written by hand:
 * Q4_K_M with n = 2: n/8 = 0, 7n/8 = 1 -> layer 1 gets Q6_K for attn_v/ffn_down. */
static loom_type expected_type(const char *scheme, const char *name, int layer) {
    if (strstr(name, "norm")) return LOOM_TYPE_F32;
    loom_type t;
    if (!strcmp(scheme, "Q4_K_M") || !strcmp(scheme, "Q5_K_M")) {
        if (!strcmp(name, "output.weight")) return LOOM_TYPE_Q6_K;
        if (layer == 1 && (strstr(name, "attn_v") || strstr(name, "ffn_down"))) return LOOM_TYPE_Q6_K;
        return strcmp(scheme, "Q4_K_M") ? LOOM_TYPE_Q5_K : LOOM_TYPE_Q4_K;
    }
    CHECK(loom_type_from_name(scheme, &t));
    return t;
}

/* Mean and standard deviation (float64) of a dequantized tensor. */
static bool tensor_stats(const loom_gguf *g, int64_t ti, double *mean, double *sd, double *maxabs_dev) {
    const loom_gguf_tensor_info *t = loom_gguf_tensor(g, ti);
    int64_t ne0 = t->ne[0], rows = t->ne[1] * t->ne[2] * t->ne[3];
    size_t rb = 0;
    if (loom_type_row_bytes(t->type, ne0, &rb) != LOOM_OK) return false;
    const uint8_t *data = loom_gguf_tensor_data(g, ti);
    float *row = malloc((size_t)ne0 * sizeof(float));
    if (!data || !row) {
        free(row);
        return false;
    }
    double s = 0, s2 = 0, mx = 0;
    for (int64_t r = 0; r < rows; r++) {
        if (loom_dequantize_row(t->type, data + (size_t)r * rb, row, ne0) != LOOM_OK) {
            free(row);
            return false;
        }
        for (int64_t i = 0; i < ne0; i++) {
            s += row[i];
            s2 += (double)row[i] * row[i];
        }
    }
    double n = (double)ne0 * (double)rows;
    *mean = s / n;
    *sd = sqrt(s2 / n - *mean * *mean);
    for (int64_t r = 0; r < rows && r < 64; r++) {
        loom_dequantize_row(t->type, data + (size_t)r * rb, row, ne0);
        for (int64_t i = 0; i < ne0; i++)
            if (fabs(row[i] - *mean) > mx) mx = fabs(row[i] - *mean);
    }
    *maxabs_dev = mx;
    free(row);
    return true;
}

static void check_model(const char *scheme, uint32_t file_type, bool tied) {
    loom_synth_params p = tiny(scheme);
    p.tied = tied;
    const char *path = tmp_path(scheme);
    loom_error err = {0};
    loom_synth_result res;
    loom_status st = loom_synth_write(&p, path, &res, &err);
    CHECK_MSG(st == LOOM_OK, "%s: %s", scheme, err.msg);
    if (st != LOOM_OK) return;

    loom_gguf *g = NULL, *voc = NULL;
    CHECK_MSG(loom_gguf_open(path, NULL, &g, &err) == LOOM_OK, "%s: %s", scheme, err.msg);
    CHECK(loom_gguf_open(test_path(VOCAB), NULL, &voc, &err) == LOOM_OK);
    if (!g || !voc) goto out;

    loom_gguf_str s;
    CHECK(loom_gguf_get_str(g, "general.architecture", &s) == LOOM_OK && s.len == 5 && !memcmp(s.ptr, "llama", 5));
    CHECK_EQ_INT(get_u32(g, "general.file_type"), file_type);
    CHECK_EQ_INT(get_u32(g, "llama.block_count"), 2);
    CHECK_EQ_INT(get_u32(g, "llama.embedding_length"), 256);
    CHECK_EQ_INT(get_u32(g, "llama.feed_forward_length"), 512);
    CHECK_EQ_INT(get_u32(g, "llama.attention.head_count"), 4);
    CHECK_EQ_INT(get_u32(g, "llama.attention.head_count_kv"), 2);
    CHECK_EQ_INT(get_u32(g, "llama.context_length"), 4096);
    CHECK_EQ_INT(get_u32(g, "llama.rope.dimension_count"), 64);
    CHECK_EQ_INT(get_u32(g, "llama.vocab_size"), 32000); /* llama SPM vocab */
    float f = 0;
    CHECK(loom_gguf_get_f32(g, "llama.rope.freq_base", &f) == LOOM_OK && f == 10000.0f);
    CHECK(loom_gguf_get_f32(g, "llama.attention.layer_norm_rms_epsilon", &f) == LOOM_OK && f == 1e-5f);
    CHECK_EQ_INT(loom_gguf_kv_array_len(g, loom_gguf_find_key(g, "tokenizer.ggml.tokens")), 32000);
    check_tokenizer_copied(voc, g);

    /* Tensors: names, shapes, types, statistics. */
    struct { const char *name; int64_t ne0, ne1; int nd; } shapes[] = {
        {"attn_norm.weight", 256, 1, 1}, {"attn_q.weight", 256, 256, 2},
        {"attn_k.weight", 256, 128, 2},  {"attn_v.weight", 256, 128, 2},
        {"attn_output.weight", 256, 256, 2}, {"ffn_norm.weight", 256, 1, 1},
        {"ffn_gate.weight", 256, 512, 2}, {"ffn_up.weight", 256, 512, 2},
        {"ffn_down.weight", 512, 256, 2},
    };
    CHECK_EQ_INT(loom_gguf_tensor_count(g), tied ? 20 : 21);
    CHECK_EQ_INT(res.n_tensors, tied ? 20 : 21);
    CHECK_EQ_INT(res.n_vocab, 32000);
    CHECK_EQ_INT(res.file_bytes, loom_gguf_file_size(g));
    uint64_t params = 0;
    for (int64_t i = 0; i < loom_gguf_tensor_count(g); i++) {
        const loom_gguf_tensor_info *t = loom_gguf_tensor(g, i);
        params += (uint64_t)(t->ne[0] * t->ne[1]);
    }
    CHECK_EQ_INT(res.n_params, params);
    CHECK_EQ_INT(loom_gguf_find_tensor(g, "output.weight") >= 0, !tied);

    for (int layer = -1; layer < 2; layer++) {
        int n_items = layer < 0 ? 3 : 9;
        for (int k = 0; k < n_items; k++) {
            char name[96];
            int64_t ne0, ne1;
            int nd;
            if (layer < 0) {
                const char *nm[3] = {"token_embd.weight", "output_norm.weight", "output.weight"};
                if (k == 2 && tied) continue;
                snprintf(name, sizeof name, "%s", nm[k]);
                ne0 = 256;
                ne1 = k == 1 ? 1 : 32000;
                nd = k == 1 ? 1 : 2;
            } else {
                snprintf(name, sizeof name, "blk.%d.%s", layer, shapes[k].name);
                ne0 = shapes[k].ne0;
                ne1 = shapes[k].ne1;
                nd = shapes[k].nd;
            }
            int64_t ti = loom_gguf_find_tensor(g, name);
            CHECK_MSG(ti >= 0, "%s: missing %s", scheme, name);
            if (ti < 0) continue;
            const loom_gguf_tensor_info *t = loom_gguf_tensor(g, ti);
            CHECK_EQ_INT(t->n_dims, nd);
            CHECK_EQ_INT(t->ne[0], ne0);
            CHECK_EQ_INT(t->ne[1], ne1);
            loom_type want = expected_type(scheme, name, layer);
            CHECK_MSG(t->type == want, "%s: %s is %s, want %s", scheme, name,
                      loom_type_name(t->type), loom_type_name(want));
            double mean = 0, sd = 0, mx = 0;
            CHECK_MSG(tensor_stats(g, ti, &mean, &sd, &mx), "%s: cannot dequantize %s", scheme, name);
            double n = (double)ne0 * (double)ne1;
            if (nd == 1) {
                /* 1 + 0.02 z: mean 1, sd 0.02 (n = 256: 5-sigma bounds on both) */
                CHECK_MSG(fabs(mean - 1.0) < 5 * 0.02 / sqrt(n), "%s %s mean %g", scheme, name, mean);
                CHECK_MSG(fabs(sd / 0.02 - 1.0) < 0.25, "%s %s sd %g", scheme, name, sd);
            } else {
                double want_sd = 1.0 / sqrt((double)ne0);
                /* sampling error of the sd is ~1/sqrt(2n) (<0.4%); 4-bit rounding adds < 1% */
                CHECK_MSG(fabs(sd / want_sd - 1.0) < 0.03, "%s %s sd %g want %g", scheme, name, sd, want_sd);
                CHECK_MSG(fabs(mean) < 5 * want_sd / sqrt(n) + 0.01 * want_sd, "%s %s mean %g", scheme,
                          name, mean);
                /* the law is bounded by 2*sqrt(3) sd; quantized values stay close to it */
                CHECK_MSG(mx <= 2 * sqrt(3.0) * want_sd * 1.15, "%s %s max |x| %g", scheme, name, mx);
                CHECK_MSG(mx >= 2.0 * want_sd, "%s %s max |x| %g (no tails?)", scheme, name, mx);
            }
        }
    }
out:
    loom_gguf_close(g);
    loom_gguf_close(voc);
    unlink(path);
}

static bool files_equal(const char *a, const char *b) {
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    bool eq = fa && fb;
    while (eq) {
        char ba[65536], bb[65536];
        size_t na = fread(ba, 1, sizeof ba, fa), nb = fread(bb, 1, sizeof bb, fb);
        if (na != nb || memcmp(ba, bb, na)) eq = false;
        if (na == 0) break;
    }
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return eq;
}

static void check_determinism(void) {
    char a[256], b[256], c[256];
    loom_error err = {0};
    loom_synth_params p = tiny("Q8_0");
    p.n_layers = 1;
    snprintf(a, sizeof a, "%s", tmp_path("det_a"));
    snprintf(b, sizeof b, "%s", tmp_path("det_b"));
    snprintf(c, sizeof c, "%s", tmp_path("det_c"));
    p.n_threads = 1;
    CHECK(loom_synth_write(&p, a, NULL, &err) == LOOM_OK);
    p.n_threads = 3; /* values depend on (seed, tensor, row) only */
    CHECK(loom_synth_write(&p, b, NULL, &err) == LOOM_OK);
    p.seed = 43;
    CHECK(loom_synth_write(&p, c, NULL, &err) == LOOM_OK);
    CHECK(files_equal(a, b));
    CHECK(!files_equal(a, c));
    unlink(a);
    unlink(b);
    unlink(c);
}

static void check_scheme(void) {
    loom_type t;
    /* Q4_K_M for 22 layers: n/8 = 2, 7n/8 = 19, (i - 2) % 3 == 2 -> written out by hand */
    const int more[22] = {1, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 1, 1};
    for (int i = 0; i < 22; i++) {
        char nm[64];
        snprintf(nm, sizeof nm, "blk.%d.attn_v.weight", i);
        CHECK(loom_synth_tensor_type("Q4_K_M", nm, 2048, 22, &t) == LOOM_OK);
        CHECK_MSG(t == (more[i] ? LOOM_TYPE_Q6_K : LOOM_TYPE_Q4_K), "layer %d attn_v %s", i, loom_type_name(t));
        snprintf(nm, sizeof nm, "blk.%d.ffn_down.weight", i);
        CHECK(loom_synth_tensor_type("q4_k_m", nm, 5632, 22, &t) == LOOM_OK);
        CHECK_MSG(t == (more[i] ? LOOM_TYPE_Q6_K : LOOM_TYPE_Q4_K), "layer %d ffn_down %s", i, loom_type_name(t));
        snprintf(nm, sizeof nm, "blk.%d.attn_q.weight", i);
        CHECK(loom_synth_tensor_type("Q4_K_M", nm, 2048, 22, &t) == LOOM_OK && t == LOOM_TYPE_Q4_K);
        snprintf(nm, sizeof nm, "blk.%d.ffn_norm.weight", i);
        CHECK(loom_synth_tensor_type("Q4_K_M", nm, 2048, 22, &t) == LOOM_OK && t == LOOM_TYPE_F32);
    }
    for (int i = 0; i < 22; i++) { /* Q5_K_M: the same layers as Q4_K_M, Q5_K elsewhere */
        char nm[64];
        snprintf(nm, sizeof nm, "blk.%d.ffn_down.weight", i);
        CHECK(loom_synth_tensor_type("Q5_K_M", nm, 5632, 22, &t) == LOOM_OK);
        CHECK_MSG(t == (more[i] ? LOOM_TYPE_Q6_K : LOOM_TYPE_Q5_K), "layer %d ffn_down %s", i, loom_type_name(t));
        snprintf(nm, sizeof nm, "blk.%d.ffn_up.weight", i);
        CHECK(loom_synth_tensor_type("q5_k_m", nm, 2048, 22, &t) == LOOM_OK && t == LOOM_TYPE_Q5_K);
    }
    CHECK(loom_synth_tensor_type("Q5_K_M", "output.weight", 2048, 22, &t) == LOOM_OK && t == LOOM_TYPE_Q6_K);
    CHECK(loom_synth_tensor_type("Q4_K_M", "output.weight", 2048, 22, &t) == LOOM_OK && t == LOOM_TYPE_Q6_K);
    CHECK(loom_synth_tensor_type("Q4_K_M", "token_embd.weight", 2048, 22, &t) == LOOM_OK && t == LOOM_TYPE_Q4_K);
    CHECK(loom_synth_tensor_type("Q4_0", "output.weight", 2048, 22, &t) == LOOM_OK && t == LOOM_TYPE_Q4_0);
    /* fallbacks for rows that are not whole blocks */
    CHECK(loom_synth_tensor_type("Q4_K", "blk.0.ffn_down.weight", 544, 2, &t) == LOOM_OK && t == LOOM_TYPE_Q5_0);
    CHECK(loom_synth_tensor_type("Q6_K", "blk.0.ffn_down.weight", 544, 2, &t) == LOOM_OK && t == LOOM_TYPE_Q8_0);
    CHECK(loom_synth_tensor_type("Q4_K_M", "blk.1.ffn_down.weight", 544, 2, &t) == LOOM_OK && t == LOOM_TYPE_Q8_0);
    CHECK(loom_synth_tensor_type("Q4_K", "blk.0.ffn_down.weight", 100, 2, &t) == LOOM_OK && t == LOOM_TYPE_F16);
    CHECK(loom_synth_tensor_type("IQ4_XS", "blk.0.ffn_down.weight", 544, 2, &t) == LOOM_OK && t == LOOM_TYPE_IQ4_NL);
    /* llama.cpp (llama-quant.cpp, node-llama-cpp 3.21.1's bundle): Q5_K -> Q5_1, Q2_K / Q3_K -> Q4_0 */
    CHECK(loom_synth_tensor_type("Q5_K", "blk.0.ffn_down.weight", 544, 2, &t) == LOOM_OK && t == LOOM_TYPE_Q5_1);
    CHECK(loom_synth_tensor_type("Q5_K_M", "blk.0.ffn_up.weight", 544, 2, &t) == LOOM_OK && t == LOOM_TYPE_Q5_1);
    CHECK(loom_synth_tensor_type("Q2_K", "blk.0.ffn_down.weight", 544, 2, &t) == LOOM_OK && t == LOOM_TYPE_Q4_0);
    CHECK(loom_synth_tensor_type("Q3_K", "blk.0.ffn_down.weight", 544, 2, &t) == LOOM_OK && t == LOOM_TYPE_Q4_0);
    CHECK(loom_synth_tensor_type("Q4_0", "blk.0.ffn_down.weight", 100, 2, &t) == LOOM_OK && t == LOOM_TYPE_F16);
    CHECK(loom_synth_tensor_type("F32", "blk.0.ffn_down.weight", 100, 2, &t) == LOOM_OK && t == LOOM_TYPE_F32);
    CHECK(loom_synth_tensor_type("Q9_Z", "output.weight", 256, 2, &t) == LOOM_ERR_TYPE);
    CHECK(loom_synth_tensor_type("IQ2_XXS", "output.weight", 256, 2, &t) == LOOM_ERR_TYPE);
    CHECK(loom_synth_tensor_type(NULL, "output.weight", 256, 2, &t) == LOOM_ERR_TYPE);
}

static void check_fallback_file(void) {
    /* ffn 544: ffn_down rows are 544 long (not a multiple of 256) */
    loom_synth_params p = tiny("Q4_K");
    p.ffn = 544;
    p.n_layers = 1;
    const char *path = tmp_path("fallback");
    loom_error err = {0};
    CHECK_MSG(loom_synth_write(&p, path, NULL, &err) == LOOM_OK, "%s", err.msg);
    loom_gguf *g = NULL;
    if (loom_gguf_open(path, NULL, &g, &err) == LOOM_OK) {
        const loom_gguf_tensor_info *t = loom_gguf_tensor(g, loom_gguf_find_tensor(g, "blk.0.ffn_down.weight"));
        CHECK(t && t->type == LOOM_TYPE_Q5_0 && t->ne[0] == 544 && t->ne[1] == 256);
        t = loom_gguf_tensor(g, loom_gguf_find_tensor(g, "blk.0.ffn_up.weight"));
        CHECK(t && t->type == LOOM_TYPE_Q4_K && t->ne[0] == 256 && t->ne[1] == 544);
        loom_gguf_close(g);
    } else {
        CHECK_MSG(false, "%s", err.msg);
    }
    unlink(path);
}

static void check_errors(void) {
    loom_error err = {0};
    char path[256];
    snprintf(path, sizeof path, "%s", tmp_path("err"));
    loom_synth_params p = tiny("Q4_0");
    p.n_heads = 3; /* 256 % 3 != 0 */
    CHECK(loom_synth_write(&p, path, NULL, &err) == LOOM_ERR_INVALID_ARG && err.msg[0]);
    CHECK(access(path, F_OK) != 0);
    p = tiny("Q4_0");
    p.n_kv_heads = 3; /* 4 % 3 != 0 */
    loom_error_clear(&err);
    CHECK(loom_synth_write(&p, path, NULL, &err) == LOOM_ERR_INVALID_ARG);
    p = tiny("Q4_0");
    p.dim = 0;
    CHECK(loom_synth_write(&p, path, NULL, NULL) == LOOM_ERR_INVALID_ARG);
    p = tiny("NOPE");
    loom_error_clear(&err);
    CHECK(loom_synth_write(&p, path, NULL, &err) == LOOM_ERR_TYPE && strstr(err.msg, "NOPE"));
    p = tiny("Q4_0");
    p.vocab_path = "/nonexistent/vocab.gguf";
    CHECK(loom_synth_write(&p, path, NULL, NULL) != LOOM_OK);
    CHECK(access(path, F_OK) != 0);
    p = tiny("Q4_0");
    loom_error_clear(&err);
    CHECK(loom_synth_write(&p, "/nonexistent_dir/x.gguf", NULL, &err) == LOOM_ERR_IO && err.msg[0]);
    CHECK(loom_synth_write(NULL, path, NULL, NULL) == LOOM_ERR_INVALID_ARG);
    CHECK(loom_synth_write(&p, NULL, NULL, NULL) == LOOM_ERR_INVALID_ARG);
    /* a vocab file without tokenizer.ggml.tokens: a synthetic model with none?
       every real vocab has one; use a file that is GGUF but has no tokenizer
       (written here by hand: header with 0 tensors, 0 KVs) */
    char vpath[256];
    snprintf(vpath, sizeof vpath, "%s", tmp_path("novocab"));
    FILE *f = fopen(vpath, "wb");
    if (f) {
        const uint8_t hdr[24] = {'G', 'G', 'U', 'F', 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
        fwrite(hdr, 1, sizeof hdr, f);
        fclose(f);
        p.vocab_path = vpath;
        loom_error_clear(&err);
        CHECK(loom_synth_write(&p, path, NULL, &err) == LOOM_ERR_NOT_FOUND);
        CHECK(access(path, F_OK) != 0);
        unlink(vpath);
    }
}

int main(void) {
    check_scheme();
    check_errors();
    check_model("F32", 0, false);
    check_model("F16", 1, false);
    check_model("BF16", 32, false);
    check_model("Q4_0", 2, false);
    check_model("Q8_0", 7, true);
    check_model("Q4_K", 14, false);
    check_model("Q6_K", 18, false);
    check_model("Q4_K_M", 15, false);
    check_model("Q5_K_M", 17, false);
    check_model("IQ4_NL", 25, false);
    check_model("IQ4_XS", 30, true);
    check_determinism();
    check_fallback_file();
    return test_finish("test_llm_synth");
}
