// llama_tok_bench: llama.cpp's tokenizer throughput, measured like `loom bench tokenizer`
// (vocabulary loaded once, the whole file tokenized REPS times as one prompt without
// special-token parsing, median time). Our code against llama.h; not built by CMake
// (bench/tokenizer_vs_llama.sh builds it against a llama.cpp build tree).
// usage: llama_tok_bench VOCAB.gguf TEXT [REPS]   -> one JSON line
#include "llama.h"
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

static void quiet(enum ggml_log_level, const char *, void *) {}

int main(int argc, char ** argv) {
    if (argc < 3) { fprintf(stderr, "usage: %s VOCAB.gguf TEXT [REPS]\n", argv[0]); return 2; }
    int reps = argc > 3 ? atoi(argv[3]) : 5;
    llama_log_set(quiet, nullptr);
    llama_backend_init();
    FILE * f = fopen(argv[2], "rb");
    if (!f) return 1;
    std::string text;
    char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
    fclose(f);
    auto t0 = std::chrono::steady_clock::now();
    llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    llama_model * model = llama_model_load_from_file(argv[1], mp);
    if (!model) return 1;
    const llama_vocab * vocab = llama_model_get_vocab(model);
    double t_load = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::vector<llama_token> ids(text.size() + 16);
    std::vector<double> ts;
    int nt = 0;
    for (int r = 0; r < reps; r++) {
        auto a = std::chrono::steady_clock::now();
        nt = llama_tokenize(vocab, text.data(), (int32_t) text.size(), ids.data(), (int32_t) ids.size(), false, false);
        ts.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
        if (nt < 0) return 1;
    }
    std::sort(ts.begin(), ts.end());
    double med = ts[ts.size() / 2];
    unsigned long long h = 1469598103934665603ull;
    for (int i = 0; i < nt; i++) { h ^= (unsigned) ids[i]; h *= 1099511628211ull; }
    printf("{\"vocab\": \"%s\", \"bytes\": %zu, \"tokens\": %d, \"load_s\": %.6f, \"tokenize_s\": %.6f, "
           "\"tokens_per_s\": %.0f, \"ids_hash\": \"%016llx\", \"reps\": %d}\n",
           argv[1], text.size(), nt, t_load, med, nt / med, h, reps);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
