/* Reader tests on real files: models/stories260K.gguf and the vocab-only files.
 * Expected values come from the published model description (tests/data, shared/README)
 * and from an independent hand count of the file layout, not from the reader. */
#include "loom_gguf.h"
#include "test_util.h"

#include <pthread.h>
#include <stdint.h>

static bool str_eq(loom_gguf_str s, const char *lit) {
    return s.len == strlen(lit) && memcmp(s.ptr, lit, s.len) == 0;
}

static void check_u32(const loom_gguf *g, const char *key, uint32_t want) {
    uint32_t v = 0;
    loom_status s = loom_gguf_get_u32(g, key, &v);
    CHECK_MSG(s == LOOM_OK && v == want, "%s: status %d value %u, want %u", key, (int)s, v, want);
}

/* Reads the whole file for the independent byte comparison. */
static uint8_t *slurp(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return b;
}

static void check_stories(const loom_gguf *g, const uint8_t *file, size_t file_size, bool mapped) {
    CHECK_EQ_INT(loom_gguf_version(g), 3);
    CHECK_EQ_INT(loom_gguf_alignment(g), 32);
    CHECK_EQ_INT(loom_gguf_file_size(g), 1185376);
    /* tensor infos end at byte 14152; aligned up to 32 -> 14176 */
    CHECK_EQ_INT(loom_gguf_data_offset(g), 14176);
    CHECK_EQ_INT(loom_gguf_kv_count(g), 19);
    CHECK_EQ_INT(loom_gguf_tensor_count(g), 48);

    loom_gguf_str s = {0};
    CHECK(loom_gguf_get_str(g, "general.architecture", &s) == LOOM_OK && str_eq(s, "llama"));
    check_u32(g, "llama.block_count", 5);
    check_u32(g, "llama.embedding_length", 64);
    check_u32(g, "llama.feed_forward_length", 172);
    check_u32(g, "llama.attention.head_count", 8);
    check_u32(g, "llama.attention.head_count_kv", 4);
    check_u32(g, "llama.context_length", 2048);
    check_u32(g, "tokenizer.ggml.padding_token_id", 0xFFFFFFFFu);
    float eps = 0;
    CHECK(loom_gguf_get_f32(g, "llama.attention.layer_norm_rms_epsilon", &eps) == LOOM_OK);
    CHECK_NEAR(eps, 1e-5, 1e-10);
    CHECK(loom_gguf_find_key(g, "llama.rope.freq_base") == -1);
    CHECK(loom_gguf_get_u32(g, "llama.rope.freq_base", NULL) == LOOM_ERR_NOT_FOUND);

    /* first KV is the token array */
    CHECK(strcmp(loom_gguf_kv_key(g, 0), "tokenizer.ggml.tokens") == 0);
    CHECK(loom_gguf_kv_type(g, 0) == LOOM_GGUF_ARRAY);
    CHECK(loom_gguf_kv_array_type(g, 0) == LOOM_GGUF_STRING);
    CHECK_EQ_INT(loom_gguf_kv_array_len(g, 0), 512);
    CHECK(loom_gguf_kv_arr_str(g, 0, 0, &s) == LOOM_OK && str_eq(s, "<unk>"));
    CHECK(loom_gguf_kv_arr_str(g, 0, 1, &s) == LOOM_OK && str_eq(s, "<s>"));
    CHECK(loom_gguf_kv_arr_str(g, 0, 2, &s) == LOOM_OK && str_eq(s, "</s>"));
    CHECK(loom_gguf_kv_arr_str(g, 0, 512, &s) == LOOM_ERR_RANGE);
    loom_gguf_vtype et;
    const void *data = (const void *)1;
    uint64_t len = 0;
    CHECK(loom_gguf_get_arr(g, "tokenizer.ggml.tokens", &et, &data, &len) == LOOM_OK);
    CHECK(et == LOOM_GGUF_STRING && len == 512 && data == NULL);
    int64_t tt = loom_gguf_find_key(g, "tokenizer.ggml.token_type");
    CHECK(tt == 2);
    int64_t v = -1;
    CHECK(loom_gguf_kv_arr_int(g, tt, 0, &v) == LOOM_OK && v == 2);
    CHECK(loom_gguf_kv_arr_int(g, tt, 1, &v) == LOOM_OK && v == 3);
    CHECK(loom_gguf_kv_arr_float(g, tt, 1, NULL) == LOOM_ERR_TYPE);
    CHECK(loom_gguf_kv_arr_str(g, tt, 1, &s) == LOOM_ERR_TYPE);
    int64_t sc = loom_gguf_find_key(g, "tokenizer.ggml.scores");
    double d = -1;
    CHECK(loom_gguf_kv_arr_float(g, sc, 0, &d) == LOOM_OK && d == 0.0);
    CHECK(loom_gguf_kv_arr(g, sc, &et, &data, &len) == LOOM_OK && et == LOOM_GGUF_F32 && len == 512);

    /* tensors: names, shapes, offsets as laid out in the file */
    const loom_gguf_tensor_info *t0 = loom_gguf_tensor(g, 0);
    CHECK(t0 && strcmp(t0->name, "token_embd.weight") == 0);
    CHECK(t0 && t0->type == LOOM_TYPE_F32 && t0->n_dims == 2 && t0->ne[0] == 64 &&
          t0->ne[1] == 512 && t0->ne[2] == 1 && t0->ne[3] == 1);
    CHECK(t0 && t0->size == 64 * 512 * 4 && t0->offset == 0 && t0->file_offset == 14176);
    int64_t dn = loom_gguf_find_tensor(g, "blk.0.ffn_down.weight");
    CHECK(dn == 9);
    const loom_gguf_tensor_info *td = loom_gguf_tensor(g, dn);
    CHECK(td && td->ne[0] == 172 && td->ne[1] == 64 && td->offset == 355840 && td->size == 172 * 64 * 4);
    CHECK(loom_gguf_find_tensor(g, "nope") == -1);
    CHECK(loom_gguf_tensor(g, 48) == NULL && loom_gguf_tensor(g, -1) == NULL);
    const loom_gguf_tensor_info *tl = loom_gguf_tensor(g, 47);
    CHECK(tl && strcmp(tl->name, "blk.4.ffn_norm.weight") == 0 &&
          tl->file_offset + tl->size == 1185376);

    /* every tensor's bytes: read_tensor (and the mapping) equal the raw file bytes */
    uint64_t total = 0;
    for (int64_t i = 0; i < loom_gguf_tensor_count(g); i++) {
        const loom_gguf_tensor_info *ti = loom_gguf_tensor(g, i);
        total += (uint64_t)ti->ne[0] * (uint64_t)ti->ne[1];
        void *buf = malloc(ti->size);
        loom_error err = {0};
        CHECK(loom_gguf_read_tensor(g, i, 0, buf, ti->size, &err) == LOOM_OK);
        CHECK(memcmp(buf, file + ti->file_offset, ti->size) == 0);
        const void *p = loom_gguf_tensor_data(g, i);
        if (mapped)
            CHECK(p && memcmp(p, file + ti->file_offset, ti->size) == 0);
        else
            CHECK(p == NULL);
        free(buf);
    }
    (void)file_size;
    /* 260K parameters: 2*64*512 + 64 + 5*(64*64*2 + 64*32*2 + 3*64*172 + 2*64) */
    CHECK_EQ_INT(total, 2 * 64 * 512 + 64 + 5 * (64 * 64 * 2 + 64 * 32 * 2 + 3 * 64 * 172 + 2 * 64));

    /* partial reads and range errors */
    float f2[2];
    loom_error err = {0};
    CHECK(loom_gguf_read_tensor(g, 1, 8, f2, 8, &err) == LOOM_OK);
    CHECK(memcmp(f2, file + loom_gguf_tensor(g, 1)->file_offset + 8, 8) == 0);
    CHECK(loom_gguf_read_tensor(g, 1, 250, f2, 8, &err) == LOOM_ERR_RANGE);
    CHECK(strstr(err.msg, "output_norm.weight") != NULL);
    loom_error_clear(&err);
    CHECK(loom_gguf_read_tensor(g, 48, 0, f2, 4, &err) == LOOM_ERR_RANGE);
}

/* Concurrent read_tensor calls on one handle (pread is thread-safe). */
typedef struct rd_job {
    const loom_gguf *g;
    const uint8_t *file;
    int start, bad;
} rd_job;

static void *rd_worker(void *arg) {
    rd_job *j = arg;
    for (int rep = 0; rep < 3; rep++)
        for (int64_t i = j->start; i < loom_gguf_tensor_count(j->g); i += 2) {
            const loom_gguf_tensor_info *ti = loom_gguf_tensor(j->g, i);
            uint8_t *buf = malloc(ti->size);
            if (!buf || loom_gguf_read_tensor(j->g, i, 0, buf, ti->size, NULL) != LOOM_OK ||
                memcmp(buf, j->file + ti->file_offset, ti->size) != 0)
                j->bad++;
            free(buf);
        }
    return NULL;
}

static void test_threads(const char *path, const uint8_t *file) {
    loom_gguf_params p = {.no_mmap = true};
    loom_gguf *g = NULL;
    CHECK(loom_gguf_open(path, &p, &g, NULL) == LOOM_OK);
    if (!g) return;
    pthread_t th[4];
    rd_job jobs[4];
    for (int k = 0; k < 4; k++) {
        jobs[k] = (rd_job){g, file, k % 2, 0};
        CHECK(pthread_create(&th[k], NULL, rd_worker, &jobs[k]) == 0);
    }
    for (int k = 0; k < 4; k++) {
        pthread_join(th[k], NULL);
        CHECK_EQ_INT(jobs[k].bad, 0);
    }
    loom_gguf_close(g);
}

int main(void) {
    const char *path = test_path("models/stories260K.gguf");
    size_t fsz = 0;
    uint8_t *file = slurp(path, &fsz);
    CHECK(file != NULL && fsz == 1185376);
    if (!file) return test_finish("test_gguf_read");

    loom_gguf *g = NULL;
    loom_error err = {0};
    loom_status st = loom_gguf_open(path, NULL, &g, &err);
    CHECK_MSG(st == LOOM_OK, "%s", err.msg);
    if (g) {
        check_stories(g, file, fsz, true);
        CHECK(strcmp(loom_gguf_path(g), path) == 0);
        loom_gguf_close(g);
    }

    loom_gguf_params p = {.no_mmap = true};
    g = NULL;
    st = loom_gguf_open(path, &p, &g, &err);
    CHECK_MSG(st == LOOM_OK, "%s", err.msg);
    if (g) {
        check_stories(g, file, fsz, false);
        loom_gguf_close(g);
    }

    g = NULL;
    st = loom_gguf_open_memory(file, fsz, &g, &err);
    CHECK_MSG(st == LOOM_OK, "%s", err.msg);
    if (g) {
        check_stories(g, file, fsz, true);
        CHECK(strcmp(loom_gguf_path(g), "") == 0);
        loom_gguf_close(g);
    }
    test_threads(path, file);
    free(file);

    /* vocab-only files: no tensors; data offset past the end is fine then */
    static const struct { const char *file, *arch; uint64_t n_tokens; uint32_t n_layer; } vocab[] = {
        {"tests/data/vocab/ggml-vocab-gpt-2.gguf", "gpt2", 50257, 12},
        {"tests/data/vocab/ggml-vocab-llama-bpe.gguf", "llama", 128256, 32},
        {"tests/data/vocab/ggml-vocab-llama-spm.gguf", "llama", 32000, 32},
        {"tests/data/vocab/ggml-vocab-phi-3.gguf", "phi3", 32064, 32},
        {"tests/data/vocab/ggml-vocab-qwen2.gguf", "qwen2", 151936, 32},
    };
    for (size_t k = 0; k < sizeof vocab / sizeof vocab[0]; k++) {
        for (int mode = 0; mode < 2; mode++) {
            loom_gguf_params vp = {.no_mmap = mode == 1};
            g = NULL;
            loom_error_clear(&err);
            st = loom_gguf_open(test_path(vocab[k].file), &vp, &g, &err);
            CHECK_MSG(st == LOOM_OK, "%s: %s", vocab[k].file, err.msg);
            if (!g) continue;
            loom_gguf_str s;
            CHECK(loom_gguf_get_str(g, "general.architecture", &s) == LOOM_OK && str_eq(s, vocab[k].arch));
            char key[64];
            snprintf(key, sizeof key, "%s.block_count", vocab[k].arch);
            check_u32(g, key, vocab[k].n_layer);
            CHECK_EQ_INT(loom_gguf_tensor_count(g), 0);
            int64_t ti = loom_gguf_find_key(g, "tokenizer.ggml.tokens");
            CHECK(ti >= 0 && loom_gguf_kv_array_len(g, ti) == vocab[k].n_tokens);
            /* the last token string must lie inside the file */
            loom_gguf_str last;
            CHECK(loom_gguf_kv_arr_str(g, ti, vocab[k].n_tokens - 1, &last) == LOOM_OK && last.len > 0);
            loom_gguf_close(g);
        }
    }

    /* open failures name the file */
    g = (loom_gguf *)1;
    loom_error_clear(&err);
    CHECK(loom_gguf_open("no/such/file.gguf", NULL, &g, &err) == LOOM_ERR_IO);
    CHECK(g == NULL && strstr(err.msg, "no/such/file.gguf") != NULL);
    loom_error_clear(&err);
    CHECK(loom_gguf_open("tests", NULL, &g, &err) == LOOM_ERR_IO);
    CHECK(loom_gguf_open(NULL, NULL, &g, NULL) == LOOM_ERR_INVALID_ARG);
    loom_gguf_close(NULL);
    return test_finish("test_gguf_read");
}
