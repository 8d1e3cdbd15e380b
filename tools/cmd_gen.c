/* loom gen: write a synthetic llama GGUF (random weights, real tokenizer). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_util.h"
#include "commands.h"
#include "loom_synth.h"

static void gen_usage(FILE *f) {
    fprintf(f,
            "usage: loom gen --vocab VOCAB.gguf -o OUT.gguf [options]\n"
            "  --vocab FILE     GGUF whose tokenizer.* keys are copied (required)\n"
            "  -o, --out FILE   output path (required)\n"
            "  --dim N          embedding length (default 2048)\n"
            "  --layers N       blocks (default 22)\n"
            "  --heads N        attention heads (default 32)\n"
            "  --kv-heads N     key/value heads (default 4)\n"
            "  --ffn N          feed-forward length (default 5632)\n"
            "  --ctx N          context_length key (default 4096)\n"
            "  --type T         F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K Q4_K Q5_K\n"
            "                   Q6_K MXFP4 IQ4_NL IQ4_XS, or the mixes Q4_K_M, Q5_K_M (default Q4_0)\n"
            "  --seed S         random seed (default 1)\n"
            "  --tied           no output.weight (token_embd is reused)\n"
            "  --exact          quantize every row (slow); default draws each block of a\n"
            "                   big matrix from a pool of 2^20 quantized random values\n"
            "  -t, --threads N  quantizing threads (default: online CPUs)\n"
            "  --arch A         llama (default), bert or nomic-bert (embedding encoders:\n"
            "                   kv-heads = heads, use a WordPiece vocab)\n"
            "  --pooling P      bert/nomic-bert pooling_type: none, mean (default), cls, last\n"
            "  --rope-base F    rope.freq_base (llama, nomic-bert; default 10000)\n"
            "  --arch A         (others) a tiny F32 model of another architecture (--vocab,\n"
            "                   -o, --seed; --dim, --layers, --ffn (expert FFN for MoE),\n"
            "                   --experts, --experts-used resize it): %s\n", loom_synth_arch_names());
}

static int parse_i64(const char *opt, const char *s, int64_t lo, int64_t hi, int64_t *out) {
    long long v = 0;
    if (!cli_parse_ll(s, lo, hi, &v)) {
        fprintf(stderr, "loom gen: %s needs an integer in [%lld, %lld], got '%s'\n", opt,
                (long long)lo, (long long)hi, s ? s : "");
        return -1;
    }
    *out = v;
    return 0;
}

int loom_cmd_gen(int argc, char **argv) {
    loom_synth_params p = loom_synth_default_params();
    p.dim = 2048;
    p.n_layers = 22;
    p.n_heads = 32;
    p.n_kv_heads = 4;
    p.ffn = 5632;
    p.type_name = "Q4_0";
    const char *out = NULL, *arch = NULL;
    bool dim_set = false, layers_set = false, ffn_set = false;
    int64_t experts = 0, experts_used = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int64_t x = 0;
        int rc = 0;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            gen_usage(stdout);
            return 0;
        } else if (!strcmp(a, "--tied")) {
            p.tied = true;
            continue;
        } else if (!strcmp(a, "--exact")) {
            p.exact = true;
            continue;
        }
        if (!v) {
            fprintf(stderr, "loom gen: %s needs a value (or is unknown)\n", a);
            gen_usage(stderr);
            return 2;
        }
        if (!strcmp(a, "--vocab")) p.vocab_path = v;
        else if (!strcmp(a, "-o") || !strcmp(a, "--out")) out = v;
        else if (!strcmp(a, "--type")) p.type_name = v;
        else if (!strcmp(a, "--arch")) p.arch = arch = v;
        else if (!strcmp(a, "--rope-base")) {
            double d;
            if (!cli_parse_double(v, &d) || !(d > 1 && d < 1e12)) {
                fprintf(stderr, "loom gen: --rope-base needs a number > 1, got '%s'\n", v);
                return 2;
            }
            p.rope_base = (float)d;
        }
        else if (!strcmp(a, "--pooling")) {
            static const char *const pn[] = {"none", "mean", "cls", "last"};
            p.pooling_type = -2;
            for (int k = 0; k < 4; k++)
                if (!strcmp(v, pn[k])) p.pooling_type = k;
            if (p.pooling_type < 0) {
                fprintf(stderr, "loom gen: --pooling needs none, mean, cls or last, got '%s'\n", v);
                return 2;
            }
        }
        else if (!strcmp(a, "--dim")) rc = parse_i64(a, v, 1, 1 << 20, &p.dim), dim_set = true;
        else if (!strcmp(a, "--layers")) rc = parse_i64(a, v, 1, 4096, &p.n_layers), layers_set = true;
        else if (!strcmp(a, "--experts")) rc = parse_i64(a, v, 1, 4096, &experts);
        else if (!strcmp(a, "--experts-used")) rc = parse_i64(a, v, 1, 4096, &experts_used);
        else if (!strcmp(a, "--heads")) rc = parse_i64(a, v, 1, 1 << 20, &p.n_heads);
        else if (!strcmp(a, "--kv-heads")) rc = parse_i64(a, v, 1, 1 << 20, &p.n_kv_heads);
        else if (!strcmp(a, "--ffn")) rc = parse_i64(a, v, 1, 1 << 22, &p.ffn), ffn_set = true;
        else if (!strcmp(a, "--ctx")) rc = parse_i64(a, v, 1, (int64_t)1 << 31, &p.n_ctx);
        else if (!strcmp(a, "--seed")) {
            if (!cli_parse_u64(v, &p.seed)) {
                fprintf(stderr, "loom gen: --seed needs an integer in [0, 2^64-1], got '%s'\n", v);
                return 2;
            }
        } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            rc = parse_i64(a, v, 1, 64, &x);
            p.n_threads = (int)x;
        } else {
            fprintf(stderr, "loom gen: unknown option '%s'\n", a);
            gen_usage(stderr);
            return 2;
        }
        if (rc) return 2;
        i++;
    }
    if (!p.vocab_path || !out) {
        fprintf(stderr, "loom gen: --vocab and -o are required\n");
        gen_usage(stderr);
        return 2;
    }
    /* bert / nomic-bert (and llama) are written by loom_synth_write below */
    if (arch && strcmp(arch, "llama") && strcmp(arch, "bert") && strcmp(arch, "nomic-bert")) {
        loom_synth_arch_params ap = loom_synth_arch_default_params();
        ap.arch = arch;
        ap.vocab_path = p.vocab_path;
        ap.seed = p.seed;
        if (dim_set) ap.dim = p.dim;
        if (layers_set) ap.n_layers = p.n_layers;
        if (ffn_set) ap.ffn = p.ffn;
        ap.n_experts = experts;
        ap.n_experts_used = experts_used;
        loom_error aerr = {0};
        loom_status ast = loom_synth_arch_write(&ap, out, &aerr);
        if (ast != LOOM_OK) {
            fprintf(stderr, "loom %s%s\n", strncmp(aerr.msg, "gen: ", 5) ? "gen: " : "", aerr.msg);
            return ast == LOOM_ERR_INVALID_ARG ? 2 : 1;
        }
        printf("wrote %s: %s (F32, seed %llu)\n", out, arch, (unsigned long long)p.seed);
        return 0;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    loom_synth_result r;
    loom_error err = {0};
    if (p.arch && strcmp(p.arch, "llama")) p.n_kv_heads = p.n_heads; /* encoders: no grouped heads */
    loom_status st = loom_synth_write(&p, out, &r, &err);
    if (st != LOOM_OK) {
        /* the library's messages start with "gen: " already */
        fprintf(stderr, "loom %s%s\n", strncmp(err.msg, "gen: ", 5) ? "gen: " : "", err.msg);
        return st == LOOM_ERR_INVALID_ARG || st == LOOM_ERR_TYPE ? 2 : 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    char params[32], size[32];
    cli_format_count(params, sizeof params, r.n_params);
    cli_format_bytes(size, sizeof size, r.file_bytes);
    printf("wrote %s: %s dim %lld, %lld layers, %lld/%lld heads, ffn %lld, vocab %lld, %s%s\n"
           "  %lld tensors, %s params, %s, file_type %u, %.1f s\n",
           out, p.arch ? p.arch : "llama", (long long)p.dim, (long long)p.n_layers, (long long)p.n_heads,
           (long long)p.n_kv_heads, (long long)p.ffn, (long long)r.n_vocab, p.type_name,
           p.tied ? ", tied output" : "", (long long)r.n_tensors, params, size, r.file_type, s);
    return 0;
}
