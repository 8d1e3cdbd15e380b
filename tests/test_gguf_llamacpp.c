/* Files made by llama.cpp (tests/data/llamacpp/, README there): every tensor of every
 * file, read by Loom's GGUF reader, has the type and element count llama.cpp's reader
 * gave, and dequantizes with Loom's reference dequantizer (loom_dequantize_row, row by
 * row) to exactly the float32 values of ggml's own dequantizer (FNV-1a 64 of the bits
 * of every value, dumped by gen_ref.c). So a block layout Loom and its own quantizer
 * both got wrong cannot pass. The IQ/TQ types llama-quantize writes only with an
 * importance matrix are checked on blocks ggml quantized (iq-blocks.txt, gen_iq.c).
 * Types Loom has no dequantizer for are listed, not compared; every type Loom can
 * dequantize must be covered by the data. The F32 model the files were quantized from is regenerated
 * (tests/llamacpp_ref.h) and must hash as llama.cpp read it. */
#include <ctype.h>
#include <stdint.h>
#include <unistd.h>

#include "llamacpp_ref.h"
#include "loom_gguf.h"
#include "test_util.h"

typedef struct ref_line {
    char file[96], tensor[96], type[16];
    long long n;
    unsigned long long hash;
} ref_line;

static bool same_type_name(const char *ggml, const char *loom) {
    for (; *ggml && *loom; ggml++, loom++)
        if (toupper((unsigned char)*ggml) != toupper((unsigned char)*loom)) return false;
    return !*ggml && !*loom;
}

/* iq-blocks.txt (gen_iq.c): blocks of every IQ/TQ type quantized by ggml, with the
 * hash of ggml's dequantization; Loom's must be bit-identical. Counts into covered[]. */
static int hexval(int c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; }

static void check_iq_blocks(int *covered) {
    FILE *f = fopen(test_path(REF_DIR "/iq-blocks.txt"), "r");
    CHECK_MSG(f != NULL, "missing %s/iq-blocks.txt", REF_DIR);
    if (!f) return;
    static char line[1 << 15];
    int n_types = 0;
    while (fgets(line, sizeof line, f)) {
        char name[16], *p = line;
        long long n = 0;
        int used = 0;
        if (sscanf(p, "%15s %lld %n", name, &n, &used) != 2) continue;
        p += used;
        loom_type t;
        CHECK_MSG(loom_type_from_name(name, &t), "iq-blocks.txt: unknown type %s", name);
        const loom_type_info *ti = loom_type_get((uint32_t)t);
        size_t bytes = 0;
        CHECK(ti && loom_type_row_bytes(t, n, &bytes) == LOOM_OK);
        if (!ti || n <= 0 || n > 65536) continue;
        uint8_t *raw = malloc(bytes ? bytes : 1);
        float *y = malloc((size_t)n * sizeof *y);
        CHECK(raw && y);
        size_t k = 0;
        for (; raw && k < bytes && hexval(p[0]) >= 0 && hexval(p[1]) >= 0; k++, p += 2)
            raw[k] = (uint8_t)(hexval(p[0]) * 16 + hexval(p[1]));
        unsigned long long want = 0;
        CHECK_MSG(k == bytes && sscanf(p, " %llx", &want) == 1, "iq-blocks.txt %s: %zu of %zu bytes", name, k, bytes);
        if (raw && y && k == bytes) {
            CHECK_MSG(ti->can_dequantize && loom_dequantize_row(t, raw, y, n) == LOOM_OK, "%s: dequantize failed", name);
            uint64_t h = ref_hash_f32(y, n);
            CHECK_MSG(h == want, "iq-blocks.txt %s: dequantized values differ from ggml's (hash %016llx, ggml %016llx)",
                      name, (unsigned long long)h, want);
            if (h == want) covered[t]++, n_types++;
        }
        free(raw);
        free(y);
    }
    fclose(f);
    printf("  iq-blocks.txt: %d types bit-identical to ggml's dequantizer\n", n_types);
}

/* Loom's IQ4_NL / IQ4_XS quantizer (no importance matrix) against llama-quantize's: the
 * IQ file's IQ4 tensors, quantized by Loom from the regenerated F32 model, block by
 * block. Reports the share of identical blocks; requires it to be (nearly) all. */
static void check_iq4_quantizer(const char *f32_path) {
    loom_gguf *gf = NULL, *gq = NULL;
    CHECK(loom_gguf_open(f32_path, NULL, &gf, NULL) == LOOM_OK);
    CHECK(loom_gguf_open(test_path(REF_DIR "/ref-iq4_nl-iq4_xs-iq3_s.gguf"), NULL, &gq, NULL) == LOOM_OK);
    long long blocks[LOOM_TYPE_COUNT] = {0}, same[LOOM_TYPE_COUNT] = {0};
    for (int64_t i = 0; gf && gq && i < loom_gguf_tensor_count(gq); i++) {
        const loom_gguf_tensor_info *tq = loom_gguf_tensor(gq, i);
        if (tq->type != LOOM_TYPE_IQ4_NL && tq->type != LOOM_TYPE_IQ4_XS) continue;
        int64_t fi = loom_gguf_find_tensor(gf, tq->name);
        CHECK_MSG(fi >= 0, "F32 model: no %s", tq->name);
        if (fi < 0) continue;
        const loom_gguf_tensor_info *tf = loom_gguf_tensor(gf, fi);
        const int64_t n = tq->ne[0] * tq->ne[1] * tq->ne[2] * tq->ne[3];
        const loom_type_info *ti = loom_type_get((uint32_t)tq->type);
        float *x = malloc((size_t)tf->size);
        uint8_t *want = malloc((size_t)tq->size), *got = malloc((size_t)tq->size);
        CHECK(x && want && got && tf->type == LOOM_TYPE_F32 && tf->size == (uint64_t)n * 4);
        if (x && want && got && loom_gguf_read_tensor(gf, fi, 0, x, tf->size, NULL) == LOOM_OK &&
            loom_gguf_read_tensor(gq, i, 0, want, tq->size, NULL) == LOOM_OK) {
            CHECK(loom_quantize_row(tq->type, x, got, n) == LOOM_OK);
            for (uint64_t b = 0; b < tq->size / ti->block_bytes; b++) {
                blocks[tq->type]++;
                same[tq->type] += !memcmp(got + b * ti->block_bytes, want + b * ti->block_bytes, ti->block_bytes);
            }
        }
        free(x);
        free(want);
        free(got);
    }
    loom_gguf_close(gf);
    loom_gguf_close(gq);
    static const loom_type ts[] = {LOOM_TYPE_IQ4_NL, LOOM_TYPE_IQ4_XS};
    for (int k = 0; k < 2; k++) {
        loom_type t = ts[k];
        printf("  Loom's %s quantizer: %lld of %lld blocks identical to llama-quantize's\n", loom_type_name(t), same[t],
               blocks[t]);
        CHECK_MSG(blocks[t] > 0 && same[t] == blocks[t], "%s quantizer: %lld of %lld blocks differ from llama-quantize",
                  loom_type_name(t), blocks[t] - same[t], blocks[t]);
    }
}

int main(void) {
    char f32_path[128];
    snprintf(f32_path, sizeof f32_path, "/tmp/loom_test_ref_f32_%d.gguf", (int)getpid());
    static char vocab[4200];
    snprintf(vocab, sizeof vocab, "%s", test_path("models/stories260K.gguf"));
    CHECK(ref_write_f32(vocab, f32_path) == 0);
    FILE *f = fopen(test_path(REF_DIR "/dequant.txt"), "r");
    CHECK_MSG(f != NULL, "missing %s/dequant.txt", REF_DIR);
    if (!f) return test_finish("test_gguf_llamacpp");

    char cur[96] = "";
    loom_gguf *g = NULL;
    int n_files = 0, n_lines = 0, n_compared = 0, n_file_tensors = 0, n_seen_in_file = 0;
    long long n_values = 0;
    int skipped_by_type[LOOM_TYPE_COUNT] = {0}, covered[LOOM_TYPE_COUNT] = {0};
    ref_line r;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "%95s %95s %15s %lld %llx", r.file, r.tensor, r.type, &r.n, &r.hash) != 5) continue;
        n_lines++;
        if (strcmp(r.file, cur)) {
            if (g) CHECK_MSG(n_seen_in_file == n_file_tensors, "%s: %d tensors, %d in the reference", cur,
                             n_file_tensors, n_seen_in_file);
            loom_gguf_close(g);
            g = NULL;
            snprintf(cur, sizeof cur, "%s", r.file);
            char path[4300];
            if (!strcmp(r.file, "ref-f32.gguf")) snprintf(path, sizeof path, "%s", f32_path);
            else snprintf(path, sizeof path, "%s", test_path(REF_DIR "/"));
            if (strcmp(r.file, "ref-f32.gguf")) strncat(path, r.file, sizeof path - strlen(path) - 1);
            loom_error e = {0};
            loom_gguf_params gp = {.no_mmap = true};
            CHECK_MSG(loom_gguf_open(path, &gp, &g, &e) == LOOM_OK, "%s: %s", r.file, e.msg);
            n_file_tensors = g ? (int)loom_gguf_tensor_count(g) : 0;
            n_seen_in_file = 0;
            n_files++;
        }
        if (!g) continue;
        n_seen_in_file++;
        int64_t ti = loom_gguf_find_tensor(g, r.tensor);
        CHECK_MSG(ti >= 0, "%s: no tensor %s", r.file, r.tensor);
        if (ti < 0) continue;
        const loom_gguf_tensor_info *t = loom_gguf_tensor(g, ti);
        const loom_type_info *tinfo = loom_type_get((uint32_t)t->type);
        CHECK_MSG(tinfo && same_type_name(r.type, tinfo->name), "%s %s: Loom reads type %s, llama.cpp %s", r.file,
                  r.tensor, tinfo ? tinfo->name : "?", r.type);
        int64_t n = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
        CHECK_MSG(n == r.n, "%s %s: %lld elements, llama.cpp %lld", r.file, r.tensor, (long long)n, r.n);
        if (!tinfo || n != r.n) continue;
        if (!tinfo->can_dequantize) {
            skipped_by_type[t->type]++;
            continue;
        }
        uint8_t *raw = malloc((size_t)t->size);
        float *y = malloc((size_t)n * sizeof *y);
        CHECK(raw && y);
        if (raw && y && loom_gguf_read_tensor(g, ti, 0, raw, t->size, NULL) == LOOM_OK) {
            size_t row_bytes = 0;
            CHECK(loom_type_row_bytes(t->type, t->ne[0], &row_bytes) == LOOM_OK);
            int64_t rows = n / t->ne[0];
            bool ok = true;
            for (int64_t i = 0; i < rows && ok; i++)
                ok = loom_dequantize_row(t->type, raw + (size_t)i * row_bytes, y + i * t->ne[0], t->ne[0]) ==
                     LOOM_OK;
            CHECK_MSG(ok, "%s %s: dequantize failed", r.file, r.tensor);
            uint64_t h = ref_hash_f32(y, n);
            if (h != r.hash) {
                /* say which row first differs from... the hash alone cannot; name the tensor */
                CHECK_MSG(0, "%s %s (%s): dequantized values differ from ggml's (hash %016llx, llama.cpp %016llx)",
                          r.file, r.tensor, tinfo->name, (unsigned long long)h, r.hash);
            } else {
                n_compared++;
                n_values += n;
                covered[t->type]++;
            }
        }
        free(raw);
        free(y);
    }
    fclose(f);
    if (g) CHECK_MSG(n_seen_in_file == n_file_tensors, "%s: %d tensors, %d in the reference", cur, n_file_tensors,
                     n_seen_in_file);
    loom_gguf_close(g);
    check_iq4_quantizer(f32_path);
    unlink(f32_path);
    check_iq_blocks(covered);
    CHECK(n_files >= 10 && n_lines > 150);
    /* every type the files hold that Loom can dequantize was compared; the ones Loom
     * claims to read and llama-quantize can write are all present */
    static const loom_type must[] = {LOOM_TYPE_F32,  LOOM_TYPE_F16,  LOOM_TYPE_BF16, LOOM_TYPE_Q4_0, LOOM_TYPE_Q4_1,
                                     LOOM_TYPE_Q5_0, LOOM_TYPE_Q5_1, LOOM_TYPE_Q8_0, LOOM_TYPE_Q2_K, LOOM_TYPE_Q3_K,
                                     LOOM_TYPE_Q4_K, LOOM_TYPE_Q5_K, LOOM_TYPE_Q6_K, LOOM_TYPE_MXFP4,
                                     LOOM_TYPE_IQ2_XXS, LOOM_TYPE_IQ2_XS, LOOM_TYPE_IQ2_S, LOOM_TYPE_IQ3_XXS,
                                     LOOM_TYPE_IQ3_S, LOOM_TYPE_IQ1_S, LOOM_TYPE_IQ1_M, LOOM_TYPE_IQ4_NL,
                                     LOOM_TYPE_IQ4_XS, LOOM_TYPE_TQ1_0, LOOM_TYPE_TQ2_0};
    for (size_t i = 0; i < sizeof must / sizeof must[0]; i++)
        CHECK_MSG(covered[must[i]] > 0, "no llama.cpp-made %s tensor compared", loom_type_name(must[i]));
    printf("  %d files, %d tensors bit-identical to ggml's dequantizer (%lld values)\n", n_files, n_compared,
           n_values);
    for (int t = 0; t < LOOM_TYPE_COUNT; t++)
        if (skipped_by_type[t])
            printf("  not compared: %d %s tensor(s) (Loom has no %s dequantizer; read and size-checked only)\n",
                   skipped_by_type[t], loom_type_name((loom_type)t), loom_type_name((loom_type)t));
    return test_finish("test_gguf_llamacpp");
}
