/* Embedding models against llama.cpp (tests/data/embed/, made by make_ref.sh with
 * embed_ref.c against llama.h; README.md there): for the synthetic bert / nomic-bert
 * models (F32 and F16, regenerated here bit for bit: their FNV-1a hashes are in
 * models.txt) and the independently made indep-*.gguf files, every pooling (none,
 * mean, cls, last) of the same sequences decoded together: pooled vectors within
 * cosine 0.9999 of llama.cpp's, token-level hidden states within nrmse 1e-3. Also
 * Loom's tokenization of texts.txt equals llama.cpp's (tokens-bge.txt).
 * The decoder embedding models indep-{qwen3,llama,gemma-embedding,llama-embed}.gguf: llama.cpp
 * decoded each sequence alone with an F32 K/V cache, so the tolerances are tight
 * (measured: nrmse <= 7.4e-7, pooled 1 - cosine <= 5.2e-12), with and without
 * flash attention (Loom's fused attention rounds K/V to F16: nrmse <= 6.4e-6). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "embed_test_common.h"
#include "loom_model.h"
#include "gguf_variant.h"
#include "test_util.h"

#define MAXSEQ 8
#define MAXTOK 256

typedef struct seqs {
    int n;
    int32_t len[MAXSEQ];
    int32_t ids[MAXSEQ][MAXTOK];
} seqs;

static bool read_seqs(const char *rel, seqs *s) {
    FILE *f = fopen(test_path(rel), "r");
    if (!f) return false;
    char line[8192];
    s->n = 0;
    while (s->n < MAXSEQ && fgets(line, sizeof line, f)) {
        int n = 0;
        for (char *p = line; *p && *p != '\n' && n < MAXTOK;) {
            s->ids[s->n][n++] = (int32_t)strtol(p, &p, 10);
            if (*p == ',') p++;
        }
        if (n) s->len[s->n++] = n;
    }
    fclose(f);
    return s->n > 0;
}

/* int32 n, int32 E, float32 [n][E] */
static float *read_ref(const char *name, const char *pool, int *n, int *E) {
    char rel[256];
    snprintf(rel, sizeof rel, "tests/data/embed/%s.%s.bin", name, pool);
    FILE *f = fopen(test_path(rel), "rb");
    if (!f) return NULL;
    int32_t h[2];
    float *v = NULL;
    if (fread(h, 4, 2, f) == 2 && h[0] > 0 && h[1] > 0 && h[0] < 100000 && h[1] < 100000) {
        v = malloc((size_t)h[0] * h[1] * sizeof *v);
        if (v && fread(v, 4, (size_t)h[0] * h[1], f) != (size_t)h[0] * h[1]) {
            free(v);
            v = NULL;
        }
        *n = h[0];
        *E = h[1];
    }
    fclose(f);
    return v;
}

static double g_min_cos = 1.0, g_max_nrmse = 0.0;
/* jina-bert-v2 / v3, modern-bert (GELU through llama.cpp's F16 table, as nomic-bert-moe:
 * a flip where summation orders differ moves one element by a table step): measured
 * nrmse 1.8e-7 .. 6.3e-6, modern-bert with flash attention 1.4e-5 (its last-token vector
 * 1 - 2.5e-9); nomic-bert-moe's tolerances */
#define JINA_NRMSE 5e-5
#define JINA_COS (1 - 1e-8)

static void check_model_tol(const char *path, const char *name, const seqs *s, bool fa, double tol_nrmse,
                            double tol_cos) {
    static const char *const pools[4] = {"none", "mean", "cls", "last"};
    const int32_t *ptr[MAXSEQ];
    int total = 0;
    for (int i = 0; i < s->n; i++) {
        ptr[i] = s->ids[i];
        total += s->len[i];
    }
    for (int pi = 0; pi < 4; pi++) {
        int n = 0, E = 0;
        float *ref = read_ref(name, pools[pi], &n, &E);
        CHECK_MSG(ref != NULL, "%s.%s.bin missing or short", name, pools[pi]);
        if (!ref) continue;
        loom_embed_params p = loom_embed_default_params();
        p.path = path;
        p.n_threads = 2;
        p.flash_attn = fa;
        loom_pooling_from_name(pools[pi], &p.pooling);
        loom_embedder *e = NULL;
        loom_error err = {0};
        CHECK_MSG(loom_embed_open(&p, &e, &err) == LOOM_OK, "%s: %s", name, err.msg);
        if (!e) {
            free(ref);
            continue;
        }
        CHECK_EQ_INT(E, loom_embed_n_embd(e));
        CHECK_EQ_INT(n, pi == 0 ? total : s->n);
        size_t cnt = (size_t)(pi == 0 ? total : s->n) * (size_t)loom_embed_n_embd(e);
        float *out = calloc(cnt, sizeof *out);
        CHECK_MSG(loom_embed_compute(e, ptr, s->len, s->n, false, out, cnt, &err) == LOOM_OK, "%s", err.msg);
        if (E == loom_embed_n_embd(e) && n == (pi == 0 ? total : s->n)) {
            if (pi == 0) {
                double se = 0, sr = 0;
                for (size_t i = 0; i < cnt; i++) {
                    se += ((double)out[i] - ref[i]) * ((double)out[i] - ref[i]);
                    sr += (double)ref[i] * ref[i];
                }
                double nr = sqrt(se / sr);
                printf("%-22s none: token-level nrmse %.3g%s\n", name, nr, fa ? " (flash attention)" : "");
                if (nr > g_max_nrmse) g_max_nrmse = nr;
                CHECK_MSG(nr <= tol_nrmse, "%s nrmse %g (fa %d)", name, nr, fa);
            } else {
                double mc = 1.0;
                for (int i = 0; i < n; i++) {
                    double r64[4096];
                    for (int c = 0; c < E && c < 4096; c++) r64[c] = ref[(size_t)i * E + c];
                    double cs = et_cosine(out + (size_t)i * E, r64, E);
                    if (cs < mc) mc = cs;
                    CHECK_MSG(cs >= tol_cos, "%s %s seq %d cosine %.15f (fa %d)", name, pools[pi], i, cs, fa);
                }
                printf("%-22s %-4s: min cosine %.9f (1 - %.2g)%s\n", name, pools[pi], mc, 1 - mc,
                       fa ? " (flash attention)" : "");
                if (mc < g_min_cos) g_min_cos = mc;
            }
        }
        free(out);
        free(ref);
        loom_embed_close(e);
    }
}

static void check_model(const char *path, const char *name, const seqs *s) {
    check_model_tol(path, name, s, false, 1e-3, 0.9999);
}

/* The independent models with one thing wrong: open fails with the status and a
 * message naming the key or tensor. */
static void bad_files(void) {
    static const struct {
        const char *file, *what;
        gguf_change c;
        loom_status want;
        const char *needle;
    } bad[] = {
        {"qwen3", "no pooling type: a generative model", {.drop = "qwen3.pooling_type"}, LOOM_ERR_UNSUPPORTED,
         "not an embedding model"},
        {"qwen3", "value length", {.u32_key = "qwen3.attention.value_length", .u32_val = 8}, LOOM_ERR_UNSUPPORTED,
         "value_length"},
        {"gemma-embedding", "no window", {.drop = "gemma-embedding.attention.sliding_window"}, LOOM_ERR_NOT_FOUND,
         "gemma-embedding.attention.sliding_window"},
        {"gemma-embedding", "dense widths", {.u32_key = "gemma-embedding.dense_2_feat_out", .u32_val = 40},
         LOOM_ERR_FORMAT, "do not chain"},
        {"gemma-embedding", "dense weights without widths", {.drop = "gemma-embedding.dense_2_feat_out"},
         LOOM_ERR_FORMAT, "dense"},
        {"gemma-embedding", "missing dense_3", {.drop = "dense_3.weight"}, LOOM_ERR_NOT_FOUND, "dense_3.weight"},
        {"jina-bert-v2", "an ALiBi max bias out of range", {.u32_key = "jina-bert-v2.attention.max_alibi_bias",
         .u32_val = 100}, LOOM_ERR_FORMAT, "jina-bert-v2.attention.max_alibi_bias = 100"},
        {"jina-bert-v2", "missing MLP down bias", {.drop = "blk.1.ffn_down.bias"}, LOOM_ERR_NOT_FOUND,
         "blk.1.ffn_down.bias"},
        {"jina-bert-v2-qkn", "missing layer output norm", {.drop = "blk.0.layer_output_norm.bias"}, LOOM_ERR_NOT_FOUND,
         "blk.0.layer_output_norm.bias"},
        {"modern-bert", "an ungated ReLU", {.str_key = "modern-bert.hidden_activation", .str_val = "relu"},
         LOOM_ERR_UNSUPPORTED, "hidden_activation 'relu'"},
        {"modern-bert", "layer 1 without its attention norm", {.drop = "blk.1.attn_norm.weight"}, LOOM_ERR_NOT_FOUND,
         "blk.1.attn_norm.weight"},
        {"nomic-bert-moe", "missing experts", {.drop = "blk.1.ffn_up_exps.weight"}, LOOM_ERR_NOT_FOUND,
         "blk.1.ffn_up_exps.weight"},
        {"nomic-bert-moe", "no expert count", {.drop = "nomic-bert-moe.expert_count"}, LOOM_ERR_NOT_FOUND,
         "nomic-bert-moe.expert_count"},
        {"t5encoder", "no bucket count", {.drop = "t5encoder.attention.relative_buckets_count"}, LOOM_ERR_NOT_FOUND,
         "t5encoder.attention.relative_buckets_count"},
        {"t5encoder", "two buckets", {.u32_key = "t5encoder.attention.relative_buckets_count", .u32_val = 2},
         LOOM_ERR_FORMAT, "relative_buckets_count"},
        {"t5encoder", "no epsilon", {.drop = "t5encoder.attention.layer_norm_rms_epsilon"}, LOOM_ERR_NOT_FOUND,
         "t5encoder.attention.layer_norm_rms_epsilon"},
        {"t5encoder", "no position bias on layer 0", {.drop = "enc.blk.0.attn_rel_b.weight"}, LOOM_ERR_NOT_FOUND,
         "enc.blk.0.attn_rel_b.weight"},
        {"t5encoder-relu", "missing output norm", {.drop = "enc.output_norm.weight"}, LOOM_ERR_NOT_FOUND,
         "enc.output_norm.weight"},
    };
    char tmp[128];
    snprintf(tmp, sizeof tmp, "/tmp/loom_test_embed_bad_%ld.gguf", (long)getpid());
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char rel[128], src[4096];
        snprintf(rel, sizeof rel, "tests/data/embed/indep-%s.gguf", bad[i].file);
        snprintf(src, sizeof src, "%s", test_path(rel));
        CHECK_MSG(gguf_variant(src, tmp, &bad[i].c), "%s: writing the variant", bad[i].what);
        loom_embed_params p = loom_embed_default_params();
        p.path = tmp;
        p.n_threads = 1;
        loom_embedder *e = NULL;
        loom_error err = {0};
        loom_status s = loom_embed_open(&p, &e, &err);
        CHECK_MSG(s == bad[i].want && !e && strstr(err.msg, bad[i].needle),
                  "%s: status %s, message '%s' (want %s naming '%s')", bad[i].what, loom_status_name(s), err.msg,
                  loom_status_name(bad[i].want), bad[i].needle);
        loom_embed_close(e);
    }
    unlink(tmp);
    /* an embedding file given to the generative API says what it is */
    static const char *const emb[] = {"indep-t5encoder", "indep-bert", "indep-modern-bert"};
    for (int i = 0; i < 3; i++) {
        char rel[128], src[4096];
        snprintf(rel, sizeof rel, "tests/data/embed/%s.gguf", emb[i]);
        snprintf(src, sizeof src, "%s", test_path(rel));
        loom_model_params mp = loom_model_default_params();
        mp.path = src;
        mp.n_threads = 1;
        loom_model *m = NULL;
        loom_error err = {0};
        loom_status s = loom_model_open(&mp, &m, &err);
        CHECK_MSG(s == LOOM_ERR_UNSUPPORTED && !m && strstr(err.msg, "is an embedding model"),
                  "%s through loom_model_open: %s '%s'", emb[i], loom_status_name(s), err.msg);
        loom_model_close(m);
    }
}

int main(void) {
    if (!et_vocab()) return test_skip("test_llm_embed_llamacpp", "bert-bge vocab missing (tests/data/vocab)");
    seqs bge, indep;
    CHECK(read_seqs("tests/data/embed/tokens-bge.txt", &bge));
    CHECK(read_seqs("tests/data/embed/tokens-indep.txt", &indep));
    FILE *mf = fopen(test_path("tests/data/embed/models.txt"), "r");
    CHECK(mf != NULL);
    char name[64], hash[32];
    bool first = true;
    while (mf && fscanf(mf, "%63s %31s", name, hash) == 2) {
        /* syn-<arch>-<type> */
        char arch[32] = "", type[8] = "";
        const char *dash = strrchr(name, '-');
        if (strncmp(name, "syn-", 4) || !dash) continue;
        snprintf(arch, sizeof arch, "%.*s", (int)(dash - name - 4), name + 4);
        snprintf(type, sizeof type, "%s", dash + 1);
        char path[256];
        snprintf(path, sizeof path, "/tmp/loom_test_embed_ref_%ld_%s.gguf", (long)getpid(), name);
        loom_error err = {0};
        CHECK_MSG(et_make_model(arch, type, path, &err) == LOOM_OK, "%s", err.msg);
        char got[32];
        snprintf(got, sizeof got, "%016llx", (unsigned long long)et_file_hash(path));
        CHECK_MSG(!strcmp(got, hash), "%s regenerated with hash %s, the references are of %s", name, got, hash);
        if (first) { /* Loom's tokenization = llama.cpp's */
            first = false;
            loom_embed_params p = loom_embed_default_params();
            p.path = path;
            loom_embedder *e = NULL;
            CHECK(loom_embed_open(&p, &e, &err) == LOOM_OK);
            FILE *tf = fopen(test_path("tests/data/embed/texts.txt"), "r");
            char line[1024];
            for (int i = 0; e && tf && fgets(line, sizeof line, tf) && i < bge.n; i++) {
                line[strcspn(line, "\n")] = 0;
                int32_t ids[MAXTOK], n = 0;
                CHECK(loom_embed_tokenize(e, line, strlen(line), false, ids, MAXTOK, &n, &err) == LOOM_OK);
                CHECK_MSG(n == bge.len[i] && !memcmp(ids, bge.ids[i], (size_t)n * sizeof *ids),
                          "text %d tokenizes differently", i);
            }
            if (tf) fclose(tf);
            loom_embed_close(e);
        }
        check_model(path, name, &bge);
        unlink(path);
    }
    if (mf) fclose(mf);
    char ip[4096]; /* test_path's buffer is reused by check_model */
    snprintf(ip, sizeof ip, "%s", test_path("tests/data/embed/indep-bert.gguf"));
    check_model(ip, "indep-bert", &indep);
    snprintf(ip, sizeof ip, "%s", test_path("tests/data/embed/indep-nomic-bert.gguf"));
    check_model(ip, "indep-nomic-bert", &indep);
    /* nomic-bert-moe: GELU through llama.cpp's F16 table, whose rounding flips on a few
     * inputs (measured nrmse 2e-5, 1 - cosine 3.1e-9) */
    snprintf(ip, sizeof ip, "%s", test_path("tests/data/embed/indep-nomic-bert-moe.gguf"));
    check_model_tol(ip, "indep-nomic-bert-moe", &indep, false, 5e-5, 1 - 1e-8);
    check_model_tol(ip, "indep-nomic-bert-moe", &indep, true, 5e-5, 1 - 1e-8);
    /* jina-bert-v2 (ALiBi, GEGLU; q/k LayerNorms, attn_norm_2, a separate gate),
     * jina-bert-v3 (rope, fused q|k|v, GELU MLP) and modern-bert (pre-norm, GEGLU or
     * SwiGLU, symmetric window layers with their own rope base) */
    static const char *const jina[] = {"indep-jina-bert-v2", "indep-jina-bert-v2-qkn", "indep-jina-bert-v3",
                                       "indep-modern-bert", "indep-modern-bert-silu"};
    for (int i = 0; i < 5; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "tests/data/embed/%s.gguf", jina[i]);
        snprintf(ip, sizeof ip, "%s", test_path(rel));
        check_model_tol(ip, jina[i], &indep, false, JINA_NRMSE, JINA_COS);
        check_model_tol(ip, jina[i], &indep, true, JINA_NRMSE, JINA_COS);
    }
    static const char *const dec[] = {"indep-qwen3", "indep-llama", "indep-gemma-embedding", "indep-llama-embed"};
    for (int i = 0; i < 4; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "tests/data/embed/%s.gguf", dec[i]);
        snprintf(ip, sizeof ip, "%s", test_path(rel));
        check_model_tol(ip, dec[i], &indep, false, 2e-6, 1 - 1e-10);
        check_model_tol(ip, dec[i], &indep, true, 2e-5, 1 - 1e-9);
    }
    /* t5encoder (relative position buckets, no rope, no 1/sqrt(D); flan-T5's gated GELU
     * through llama.cpp's F16 table, or T5's ReLU; layer 2 of the -relu file with a bias
     * of its own): llama.cpp runs them through llama_encode. Flash attention does not
     * apply (the bias is per head): the same graph both ways. */
    static const char *const t5[] = {"indep-t5encoder", "indep-t5encoder-relu"};
    for (int i = 0; i < 2; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "tests/data/embed/%s.gguf", t5[i]);
        snprintf(ip, sizeof ip, "%s", test_path(rel));
        check_model_tol(ip, t5[i], &indep, false, JINA_NRMSE, JINA_COS);
        check_model_tol(ip, t5[i], &indep, true, JINA_NRMSE, JINA_COS);
    }
    /* a trained generative llama (no pooling_type): every pooling asked for */
    seqs st;
    CHECK(read_seqs("tests/data/embed/tokens-stories.txt", &st));
    snprintf(ip, sizeof ip, "%s", test_path("models/stories260K.gguf"));
    check_model_tol(ip, "stories260K", &st, false, 2e-6, 1 - 1e-10);
    check_model_tol(ip, "stories260K", &st, true, 2e-5, 1 - 1e-9);
    bad_files();
    printf("overall: min cosine %.9f, max token-level nrmse %.3g\n", g_min_cos, g_max_nrmse);
    return test_finish("test_llm_embed_llamacpp");
}
