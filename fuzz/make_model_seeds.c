/* Writes the seed files of fuzz/corpus/model: tiny llama models (random weights)
 * generated with loom_synth from the stories260K vocabulary, one with and one
 * without the tokenizer.* keys. Not part of the build; run from the repository root:
 *   cmake --build build
 *   cc -std=c11 -D_GNU_SOURCE -Iinclude fuzz/make_model_seeds.c build/libloom_llm.a \
 *      build/libloom_backend.a build/libloom_cpu.a build/libloom_core.a build/libloom_gguf.a \
 *      build/libloom_quant.a -lpthread -lm -o /tmp/make_model_seeds
 *   /tmp/make_model_seeds fuzz/corpus/model
 */
#include <stdio.h>
#include <string.h>

#include "loom_gguf.h"
#include "loom_synth.h"

/* Copy src to dst, dropping the tokenizer.* keys when strip is set. */
static int rewrite(const char *src, const char *dst, int strip) {
    loom_gguf *g = NULL;
    loom_error err = {0};
    if (loom_gguf_open(src, NULL, &g, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    loom_gguf_writer *w = NULL;
    int bad = loom_gguf_writer_new(&w) != LOOM_OK;
    for (int64_t i = 0; !bad && i < loom_gguf_kv_count(g); i++) {
        const char *k = loom_gguf_kv_key(g, i);
        if (strip && !strncmp(k, "tokenizer.", 10)) continue;
        bad = loom_gguf_writer_copy_kv(w, g, i) != LOOM_OK;
    }
    for (int64_t i = 0; !bad && i < loom_gguf_tensor_count(g); i++) {
        const loom_gguf_tensor_info *ti = loom_gguf_tensor(g, i);
        bad = loom_gguf_writer_add_tensor(w, ti->name, ti->type, ti->n_dims, ti->ne,
                                          loom_gguf_tensor_data(g, i)) != LOOM_OK;
    }
    if (!bad && loom_gguf_writer_write_file(w, dst, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        bad = 1;
    }
    loom_gguf_writer_free(w);
    loom_gguf_close(g);
    return bad;
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "fuzz/corpus/model";
    const char *tmp = "/tmp/loom_model_seed.gguf";
    static const struct { const char *name, *type; int tied, strip; } seeds[] = {
        {"seed_tiny_q4_0_tied.gguf", "Q4_0", 1, 0},
        {"seed_tiny_f16_notok.gguf", "F16", 0, 1},
        {"seed_tiny_q8_0_notok.gguf", "Q8_0", 1, 1},
    };
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        loom_synth_params p = loom_synth_default_params();
        p.vocab_path = "models/stories260K.gguf";
        p.dim = 32;
        p.n_layers = 2;
        p.n_heads = 4;
        p.n_kv_heads = 2;
        p.ffn = 64;
        p.n_ctx = 64;
        p.type_name = seeds[i].type;
        p.tied = seeds[i].tied;
        p.n_threads = 1;
        loom_error err = {0};
        if (loom_synth_write(&p, tmp, NULL, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, seeds[i].name);
        if (rewrite(tmp, path, seeds[i].strip)) return 1;
    }
    remove(tmp);
    return 0;
}
