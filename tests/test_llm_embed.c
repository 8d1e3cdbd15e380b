/* Embedding models (loom_embed.h) against a float64 reference forward pass
 * (tests/embed_test_common.h) on synthetic bert and nomic-bert models:
 * token-level hidden states (pooling none), pooled vectors (mean, cls, last),
 * normalization, batched == single, several graphs == one, tokenization
 * ([CLS] ... [SEP], truncation) and the error values. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "embed_test_common.h"
#include "loom_model.h"
#include "test_util.h"

#define NSEQ 3
static const int32_t k_len[NSEQ] = {5, 17, 9};
static int32_t g_ids[NSEQ][17];
static const int32_t *g_seqs[NSEQ] = {g_ids[0], g_ids[1], g_ids[2]};

static void make_ids(void) {
    uint32_t s = 12345;
    for (int i = 0; i < NSEQ; i++)
        for (int j = 0; j < k_len[i]; j++) {
            s = s * 1664525u + 1013904223u;
            g_ids[i][j] = j == 0 ? 101 : j == k_len[i] - 1 ? 102 : 1000 + (int32_t)(s >> 8) % 29000;
        }
}

static bool g_fa;

static loom_embedder *open_e(const char *path, loom_pooling pool, int n_ctx, int n_batch) {
    loom_embed_params p = loom_embed_default_params();
    p.flash_attn = g_fa;
    p.path = path;
    p.pooling = pool;
    p.n_ctx = n_ctx;
    p.n_batch = n_batch;
    p.n_threads = 2;
    loom_embedder *e = NULL;
    loom_error err = {0};
    if (loom_embed_open(&p, &e, &err)) fprintf(stderr, "open %s: %s\n", path, err.msg);
    return e;
}

static double nrmse(const float *x, const double *ref, size_t n) {
    double se = 0, sr = 0;
    for (size_t i = 0; i < n; i++) {
        se += (x[i] - ref[i]) * (x[i] - ref[i]);
        sr += ref[i] * ref[i];
    }
    return sqrt(se / sr);
}

static void test_arch(const char *arch) {
    char path[256];
    snprintf(path, sizeof path, "/tmp/loom_test_embed_%ld_%s.gguf", (long)getpid(), arch);
    loom_error err = {0};
    CHECK_MSG(et_make_model(arch, "F32", path, &err) == LOOM_OK, "%s", err.msg);

    /* the reference, per sequence */
    et_ref r;
    CHECK(et_ref_open(&r, path));
    const int E = r.E;
    int total = 0;
    for (int i = 0; i < NSEQ; i++) total += k_len[i];
    double *ref = calloc((size_t)total * E, sizeof *ref);
    for (int i = 0, off = 0; i < NSEQ; off += k_len[i++]) CHECK(et_ref_forward(&r, g_ids[i], k_len[i], ref + (size_t)off * E));
    et_ref_close(&r);

    /* the file's pooling (mean) and sizes */
    loom_embedder *e = open_e(path, LOOM_POOLING_UNSPECIFIED, 0, 0);
    CHECK(e != NULL);
    if (!e) {
        free(ref);
        return;
    }
    loom_error_clear(&err);
    CHECK_EQ_INT(loom_embed_pooling(e), LOOM_POOLING_MEAN);
    loom_error_clear(&err);
    CHECK_EQ_INT(loom_embed_n_embd(e), 64);
    loom_error_clear(&err);
    CHECK_EQ_INT(loom_embed_n_ctx(e), 128);
    CHECK(!strcmp(loom_embed_arch(e), arch));
    loom_embed_close(e);

    /* token level: every hidden state, all sequences in one call (one graph) */
    e = open_e(path, LOOM_POOLING_NONE, 0, 0);
    float *hid = calloc((size_t)total * E, sizeof *hid);
    loom_error_clear(&err);
    CHECK(loom_embed_compute(e, g_seqs, k_len, NSEQ, false, hid, (size_t)total * E, &err) == LOOM_OK);
    double nr = nrmse(hid, ref, (size_t)total * E);
    printf("%s: token-level nrmse vs float64 %.3g\n", arch, nr);
    CHECK_MSG(nr <= 1e-5, "%s nrmse %g", arch, nr);
    /* batched == single */
    float *one = calloc((size_t)17 * E, sizeof *one);
    double maxd = 0;
    for (int i = 0, off = 0; i < NSEQ; off += k_len[i++]) {
        loom_error_clear(&err);
        CHECK(loom_embed_compute(e, &g_seqs[i], &k_len[i], 1, false, one, (size_t)17 * E, &err) == LOOM_OK);
        for (int j = 0; j < k_len[i] * E; j++) {
            double d = fabs(one[j] - hid[(size_t)off * E + j]);
            if (d > maxd) maxd = d;
        }
    }
    printf("%s: batched vs single max |diff| %.3g\n", arch, maxd);
    CHECK_MSG(maxd <= 1e-5, "%g", maxd);
    /* normalized token vectors */
    loom_error_clear(&err);
    CHECK(loom_embed_compute(e, g_seqs, k_len, NSEQ, true, hid, (size_t)total * E, &err) == LOOM_OK);
    for (int t = 0; t < total; t++) {
        double ss = 0;
        for (int c = 0; c < E; c++) ss += (double)hid[(size_t)t * E + c] * hid[(size_t)t * E + c];
        CHECK_NEAR(ss, 1.0, 1e-5);
    }
    loom_embed_close(e);
    /* the same with flash attention */
    g_fa = true;
    e = open_e(path, LOOM_POOLING_NONE, 0, 0);
    CHECK(e && loom_embed_compute(e, g_seqs, k_len, NSEQ, false, hid, (size_t)total * E, &err) == LOOM_OK);
    nr = nrmse(hid, ref, (size_t)total * E);
    printf("%s: token-level nrmse vs float64 (flash attention) %.3g\n", arch, nr);
    CHECK_MSG(nr <= 1e-5, "%s nrmse %g (flash attention)", arch, nr);
    loom_embed_close(e);
    g_fa = false;

    /* pooled: mean / cls / last, in one graph and in graphs of one sequence each
     * (n_batch = n_ctx = 17) */
    const loom_pooling pools[3] = {LOOM_POOLING_MEAN, LOOM_POOLING_CLS, LOOM_POOLING_LAST};
    for (int pi = 0; pi < 3; pi++)
        for (int small = 0; small < 2; small++) {
            e = open_e(path, pools[pi], small ? 17 : 0, small ? 17 : 0);
            CHECK(e != NULL);
            if (!e) continue;
            float out[NSEQ * 64];
            loom_error_clear(&err);
            CHECK(loom_embed_compute(e, g_seqs, k_len, NSEQ, true, out, NSEQ * 64, &err) == LOOM_OK);
            for (int i = 0, off = 0; i < NSEQ; off += k_len[i++]) {
                double want[64] = {0};
                for (int c = 0; c < E; c++) {
                    if (pools[pi] == LOOM_POOLING_MEAN) {
                        for (int t = 0; t < k_len[i]; t++) want[c] += ref[(size_t)(off + t) * E + c] / k_len[i];
                    } else {
                        int t = pools[pi] == LOOM_POOLING_CLS ? 0 : k_len[i] - 1;
                        want[c] = ref[(size_t)(off + t) * E + c];
                    }
                }
                double cs = et_cosine(out + i * E, want, E), ss = 0;
                for (int c = 0; c < E; c++) ss += (double)out[i * E + c] * out[i * E + c];
                CHECK_MSG(cs >= 0.99999, "%s %s seq %d cosine %.9f", arch, loom_pooling_name(pools[pi]), i, cs);
                CHECK_NEAR(ss, 1.0, 1e-5);
            }
            loom_embed_close(e);
        }
    free(one);
    free(hid);
    free(ref);

    /* errors and tokenization */
    e = open_e(path, LOOM_POOLING_UNSPECIFIED, 16, 0);
    CHECK(e != NULL);
    if (e) {
        float out[64 * 2];
        loom_error_clear(&err);
        CHECK_EQ_INT(loom_embed_compute(e, g_seqs + 1, k_len + 1, 1, true, out, 64, &err), LOOM_ERR_CONTEXT_FULL);
        CHECK(strstr(err.msg, "17 tokens") != NULL);
        int32_t bad[3] = {101, 30522, 102}, nb = 3;
        const int32_t *bs = bad;
        loom_error_clear(&err);
        CHECK_EQ_INT(loom_embed_compute(e, &bs, &nb, 1, true, out, 64, &err), LOOM_ERR_RANGE);
        CHECK_MSG(strstr(err.msg, "30522") != NULL, "%s", err.msg);
        int32_t zero = 0;
        loom_error_clear(&err);
        CHECK_EQ_INT(loom_embed_compute(e, g_seqs, &zero, 1, true, out, 64, &err), LOOM_ERR_INVALID_ARG);
        loom_error_clear(&err);
        CHECK_EQ_INT(loom_embed_compute(e, g_seqs, k_len, 1, true, out, 63, &err), LOOM_ERR_INVALID_ARG);
        loom_error_clear(&err);
        CHECK_EQ_INT(loom_embed_compute(e, g_seqs, k_len, 0, true, out, 64, &err), LOOM_ERR_INVALID_ARG);
        loom_embed_cancel(e);
        loom_error_clear(&err);
        CHECK_EQ_INT(loom_embed_compute(e, g_seqs, k_len, 1, true, out, 64, &err), LOOM_ERR_CANCELLED);
        loom_error_clear(&err);
        CHECK_EQ_INT(loom_embed_compute(e, g_seqs, k_len, 1, true, out, 64, &err), LOOM_OK); /* consumed */

        int32_t ids[64], n = 0;
        loom_error_clear(&err);
        CHECK(loom_embed_tokenize(e, "hello world", 11, false, ids, 64, &n, &err) == LOOM_OK);
        CHECK_EQ_INT(n, 4);
        CHECK(n == 4 && ids[0] == 101 && ids[1] == 7592 && ids[2] == 2088 && ids[3] == 102);
        const char *lng = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen";
        loom_error_clear(&err);
        CHECK_EQ_INT(loom_embed_tokenize(e, lng, strlen(lng), false, ids, 64, &n, &err), LOOM_ERR_CONTEXT_FULL);
        CHECK(strstr(err.msg, "(16)") != NULL);
        loom_error_clear(&err);
        CHECK(loom_embed_tokenize(e, lng, strlen(lng), true, ids, 64, &n, &err) == LOOM_OK);
        CHECK(n == 16 && ids[0] == 101 && ids[15] == 102 && ids[14] != 102);
        loom_error_clear(&err);
        CHECK_EQ_INT(loom_embed_tokenize(e, "hello world", 11, false, ids, 3, &n, &err), LOOM_ERR_RANGE);
        loom_embed_close(e);
    }
    /* bert's positions end at context_length */
    if (!strcmp(arch, "bert")) {
        loom_embed_params p = loom_embed_default_params();
        p.path = path;
        p.n_ctx = 129;
        loom_embedder *x = NULL;
        loom_error_clear(&err);
        CHECK_EQ_INT(loom_embed_open(&p, &x, &err), LOOM_ERR_INVALID_ARG);
        CHECK_MSG(x == NULL && strstr(err.msg, "128"), "%s", err.msg);
    }
    /* a generative open of an embedding model fails cleanly */
    loom_model_params mp = loom_model_default_params();
    mp.path = path;
    loom_model *m = NULL;
    loom_error_clear(&err);
    CHECK_EQ_INT(loom_model_open(&mp, &m, &err), LOOM_ERR_UNSUPPORTED);
    CHECK(m == NULL);
    unlink(path);
}

int main(void) {
    if (!et_vocab()) return test_skip("test_llm_embed", "bert-bge vocab missing (tests/data/vocab)");
    make_ids();
    test_arch("bert");
    test_arch("nomic-bert");

    /* an embed open of a generative model fails cleanly */
    loom_embed_params p = loom_embed_default_params();
    p.path = test_path("models/stories260K.gguf");
    loom_embedder *e = NULL;
    loom_error err = {0};
    loom_error_clear(&err);
    CHECK_EQ_INT(loom_embed_open(&p, &e, &err), LOOM_ERR_UNSUPPORTED);
    CHECK(e == NULL && strstr(err.msg, "llama"));
    p.path = NULL;
    loom_error_clear(&err);
    CHECK_EQ_INT(loom_embed_open(&p, &e, &err), LOOM_ERR_INVALID_ARG);
    loom_pooling pl;
    CHECK(loom_pooling_from_name("cls", &pl) && pl == LOOM_POOLING_CLS);
    CHECK(!loom_pooling_from_name("max", &pl));
    return test_finish("test_llm_embed");
}
