/* Allocation failure walks over the library paths the model walk
 * (test_llm_fault_alloc) does not reach: building each test vocabulary's tokenizer
 * and tokenizing/detokenizing with it, the sampler, the GGUF writer (to memory and
 * back through the reader) and the synthetic-model writer. For every N the call
 * sequence fails with LOOM_ERR_NOMEM (or another non-internal status with a
 * message where the API has one) or succeeds with the reference result; ASan (the
 * sanitizer build) checks every failure path for leaks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loom_gguf.h"
#include "loom_sampler.h"
#include "loom_synth.h"
#include "loom_tokenizer.h"
#include "quant/alloc.h"
#include "test_util.h"

typedef struct result {
    loom_status s;
    char msg[LOOM_ERROR_MSG_MAX];
    uint64_t digest; /* of the successful output */
} result;

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static const char *g_vocab;

static void seq_tokenizer(result *r) {
    loom_error e = {0};
    loom_gguf *g = NULL;
    loom_tokenizer *t = NULL;
    r->digest = 1469598103934665603ull;
    loom_status s = loom_gguf_open(g_vocab, NULL, &g, &e);
    if (!s) s = loom_tokenizer_new_from_gguf(g, &t, &e);
    if (!s) {
        const char *text = "Hello world! Once upon a time, 12345 \xe2\x80\x94 caf\xc3\xa9 <s> \xf0\x9f\x98\x80";
        int32_t ids[128];
        int32_t n = 0;
        s = loom_tokenize(t, text, strlen(text), true, true, ids, 128, &n, NULL);
        if (s) loom_error_set(&e, s, "tokenize");
        char out[512];
        size_t len = 0;
        if (!s) s = loom_detokenize(t, ids, n, 0, out, sizeof out, &len);
        if (s) loom_error_set(&e, s, "detokenize");
        if (!s) {
            r->digest = fnv(fnv(r->digest, ids, (size_t)n * sizeof *ids), out, len);
        }
    }
    loom_tokenizer_free(t);
    loom_gguf_close(g);
    r->s = s;
    snprintf(r->msg, sizeof r->msg, "%s", e.msg);
}

static void seq_sampler(result *r) {
    loom_sampler_params p = loom_sampler_default_params();
    p.repeat_penalty = 1.1f;
    p.seed = 42;
    loom_sampler *s = NULL;
    float logits[1000];
    for (int i = 0; i < 1000; i++) logits[i] = (float)((i * 7919) % 1000) / 100.0f;
    r->digest = 1469598103934665603ull;
    loom_status st = loom_sampler_new(&p, 1000, &s, NULL);
    for (int k = 0; !st && k < 8; k++) {
        int32_t tok = -1;
        st = loom_sampler_sample(s, logits, &tok);
        if (!st) st = loom_sampler_accept(s, tok);
        r->digest = fnv(r->digest, &tok, sizeof tok);
    }
    loom_sampler_free(s);
    r->s = st;
    snprintf(r->msg, sizeof r->msg, "sampler: %s", loom_status_name(st));
}

static void seq_writer(result *r) {
    loom_gguf_writer *w = NULL;
    void *img = NULL;
    size_t size = 0;
    loom_error e = {0};
    loom_gguf *g = NULL;
    r->digest = 1469598103934665603ull;
    loom_status s = loom_gguf_writer_new(&w);
    const char *strs[3] = {"a", "bb", "ccc"};
    float data[64];
    for (int i = 0; i < 64; i++) data[i] = (float)i;
    int64_t ne[2] = {32, 2};
    if (!s) s = loom_gguf_writer_add_str(w, "general.architecture", "llama", 5);
    if (!s) s = loom_gguf_writer_add_u32(w, "k.u32", 7);
    if (!s) s = loom_gguf_writer_add_arr_str(w, "k.strs", strs, NULL, 3);
    if (!s) s = loom_gguf_writer_add_arr(w, "k.f32", LOOM_GGUF_F32, data, 64);
    if (!s) s = loom_gguf_writer_add_tensor(w, "t0", LOOM_TYPE_F32, 2, ne, data);
    if (!s) s = loom_gguf_writer_write_memory(w, &img, &size, &e);
    if (!s) s = loom_gguf_open_memory(img, size, &g, &e);
    if (!s) r->digest = fnv(r->digest, img, size);
    loom_gguf_close(g);
    free(img);
    loom_gguf_writer_free(w);
    r->s = s;
    snprintf(r->msg, sizeof r->msg, "%s", e.msg[0] ? e.msg : loom_status_name(s));
}

static char g_synth_path[128];

static void seq_synth(result *r) {
    loom_synth_params p = loom_synth_default_params();
    p.vocab_path = test_path("models/stories260K.gguf");
    p.dim = 32;
    p.n_layers = 1;
    p.n_heads = 2;
    p.n_kv_heads = 1;
    p.ffn = 64;
    p.n_ctx = 64;
    p.type_name = "Q4_K_M";
    p.n_threads = 1;
    loom_error e = {0};
    loom_synth_result res;
    memset(&res, 0, sizeof res);
    /* an existing file at the path must survive any failure (issue #14 item 1: the
     * output used to be truncated on open and removed on failure) */
    FILE *f = fopen(g_synth_path, "wb");
    if (f) {
        fputs("previous contents", f);
        fclose(f);
    }
    r->s = loom_synth_write(&p, g_synth_path, &res, &e);
    r->digest = res.file_bytes;
    snprintf(r->msg, sizeof r->msg, "%s", e.msg);
    if (r->s != LOOM_OK) {
        char buf[64] = {0};
        f = fopen(g_synth_path, "rb");
        size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f) fclose(f);
        buf[n] = 0;
        CHECK_MSG(!strcmp(buf, "previous contents"), "synth failure (%s) damaged the existing file", r->msg);
    }
}

static void walk(const char *name, void (*seq)(result *)) {
    result ref, r;
    long c0 = loom_alloc_count();
    seq(&ref);
    long total = loom_alloc_count() - c0;
    CHECK_MSG(ref.s == LOOM_OK, "%s clean run: %s", name, ref.msg);
    long failed = 0, ok = 0;
    for (long k = 1; k <= total; k++) {
        loom_alloc_fail_at(k);
        seq(&r);
        loom_alloc_fail_at(0);
        if (r.s == LOOM_OK) {
            ok++;
            CHECK_MSG(r.digest == ref.digest, "%s: allocation %ld failed, different result", name, k);
        } else {
            failed++;
            CHECK_MSG(r.s != LOOM_ERR_INTERNAL && r.msg[0], "%s: allocation %ld: %s '%s'", name, k,
                      loom_status_name(r.s), r.msg);
        }
    }
    printf("%s: %ld allocations, %ld failed cleanly, %ld recovered\n", name, total, failed, ok);
}

int main(void) {
    if (!loom_fault_injection_enabled()) return test_skip("test_llm_fault_alloc_misc", TEST_NO_FAULT_INJECTION);
    /* SPM, byte-level BPE (three pre-tokenizers), RWKV, PLaMo-2 in tests/data/vocab; WordPiece
     * from the copies CMake unpacks (the big Gemma 4 / unigram vocabularies would make the walk slow) */
    static const char *vocabs[] = {"llama-spm", "phi-3", "gpt-2", "llama-bpe", "qwen2", "synth-rwkv", "synth-plamo2",
                                   "bert-bge"};
    static char path[4200];
    for (int i = 0; i < (int)(sizeof vocabs / sizeof vocabs[0]); i++) {
        snprintf(path, sizeof path, "%s", test_path("tests/data/vocab/ggml-vocab-"));
        size_t l = strlen(path);
        snprintf(path + l, sizeof path - l, "%s.gguf", vocabs[i]);
#ifdef LOOM_VOCAB_DIR
        if (access(path, R_OK) != 0) snprintf(path, sizeof path, "%s/ggml-vocab-%s.gguf", LOOM_VOCAB_DIR, vocabs[i]);
#endif
        g_vocab = path;
        char name[64];
        snprintf(name, sizeof name, "tokenizer %s", vocabs[i]);
        walk(name, seq_tokenizer);
    }
    walk("sampler", seq_sampler);
    walk("gguf writer", seq_writer);
    snprintf(g_synth_path, sizeof g_synth_path, "/tmp/loom_test_fault_synth_%d.gguf", (int)getpid());
    walk("synth", seq_synth);
    unlink(g_synth_path);
    /* and nothing was left behind: no temporaries of the synth output in /tmp */
    char cmd[256], out[256];
    snprintf(cmd, sizeof cmd, "ls -a /tmp | grep -c 'loom_test_fault_synth_%d.gguf.loom-tmp'", (int)getpid());
    test_run(cmd, out, sizeof out);
    CHECK_MSG(atoi(out) == 0, "%s temporaries left in /tmp", out);
    return test_finish("test_llm_fault_alloc_misc");
}
