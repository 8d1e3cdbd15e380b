/* Writes the small seed files of fuzz/corpus/gguf with the Loom GGUF writer.
 * Not part of the build; run from the repository root:
 *   cmake --build build --target loom_gguf
 *   cc -std=c11 -Iinclude fuzz/make_seeds.c build/libloom_gguf.a build/libloom_quant.a -lm -o /tmp/make_seeds
 *   /tmp/make_seeds fuzz/corpus/gguf
 */
#include <stdio.h>
#include <string.h>

#include "loom_gguf.h"

static int write(loom_gguf_writer *w, const char *dir, const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    loom_error err = {0};
    if (loom_gguf_writer_write_file(w, path, &err) != LOOM_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    loom_gguf_writer_free(w);
    return 0;
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "fuzz/corpus/gguf";
    int rc = 0;
    loom_gguf_writer *w;

    /* 1: every value type, arrays, three tensor types */
    loom_gguf_writer_new(&w);
    loom_gguf_writer_add_str(w, "general.architecture", "llama", 5);
    loom_gguf_writer_add_u8(w, "t.u8", 1);
    loom_gguf_writer_add_i8(w, "t.i8", -1);
    loom_gguf_writer_add_u16(w, "t.u16", 2);
    loom_gguf_writer_add_i16(w, "t.i16", -2);
    loom_gguf_writer_add_u32(w, "llama.block_count", 1);
    loom_gguf_writer_add_i32(w, "t.i32", -3);
    loom_gguf_writer_add_u64(w, "t.u64", 4);
    loom_gguf_writer_add_i64(w, "t.i64", -4);
    loom_gguf_writer_add_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    loom_gguf_writer_add_f64(w, "t.f64", 0.5);
    loom_gguf_writer_add_bool(w, "t.bool", true);
    int32_t ai[4] = {1, 2, 3, 4};
    float af[2] = {0.25f, -1.0f};
    loom_gguf_writer_add_arr(w, "t.ai32", LOOM_GGUF_I32, ai, 4);
    loom_gguf_writer_add_arr(w, "t.af32", LOOM_GGUF_F32, af, 2);
    const char *toks[4] = {"<unk>", "<s>", "</s>", "a"};
    loom_gguf_writer_add_arr_str(w, "tokenizer.ggml.tokens", toks, NULL, 4);
    float f[16] = {0};
    uint8_t q[68] = {0};
    int64_t ne1[2] = {4, 4}, ne2[2] = {32, 2}, ne3[1] = {32};
    loom_gguf_writer_add_tensor(w, "token_embd.weight", LOOM_TYPE_F32, 2, ne1, f);
    loom_gguf_writer_add_tensor(w, "blk.0.attn_q.weight", LOOM_TYPE_Q8_0, 2, ne2, q);
    loom_gguf_writer_add_tensor(w, "blk.0.attn_k.weight", LOOM_TYPE_Q4_0, 1, ne3, q);
    rc |= write(w, dir, "seed_types.gguf");

    /* 2: alignment 64, string arrays with odd bytes, 4-d tensor */
    loom_gguf_writer_new(&w);
    loom_gguf_writer_set_alignment(w, 64);
    const char *s2[3] = {"", "\xe4\xb8\xad", "q\"\\"};
    loom_gguf_writer_add_arr_str(w, "tokenizer.ggml.merges", s2, NULL, 3);
    loom_gguf_writer_add_arr(w, "t.empty", LOOM_GGUF_U8, NULL, 0);
    int64_t ne4[4] = {2, 1, 2, 2};
    uint16_t h[8] = {0};
    loom_gguf_writer_add_tensor(w, "x", LOOM_TYPE_F16, 4, ne4, h);
    loom_gguf_writer_add_tensor(w, "y", LOOM_TYPE_BF16, 1, ne4, h);
    rc |= write(w, dir, "seed_align64.gguf");

    /* 3: the metadata of stories260K with two small tensors */
    loom_gguf *g = NULL;
    loom_error err = {0};
    if (loom_gguf_open("models/stories260K.gguf", NULL, &g, &err) == LOOM_OK) {
        loom_gguf_writer_new(&w);
        for (int64_t i = 0; i < loom_gguf_kv_count(g); i++) loom_gguf_writer_copy_kv(w, g, i);
        for (int64_t i = 0; i < loom_gguf_tensor_count(g); i++) {
            const loom_gguf_tensor_info *ti = loom_gguf_tensor(g, i);
            if (ti->size <= 256)
                loom_gguf_writer_add_tensor(w, ti->name, ti->type, ti->n_dims, ti->ne,
                                            loom_gguf_tensor_data(g, i));
            if (i > 12) break;
        }
        rc |= write(w, dir, "seed_stories_meta.gguf");
        loom_gguf_close(g);
    } else {
        fprintf(stderr, "%s\n", err.msg);
        rc = 1;
    }
    return rc;
}
