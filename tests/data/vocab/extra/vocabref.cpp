// vocabref: tokenize strings with llama.cpp's vocabulary code (reference data for Loom).
// usage: vocabref VOCAB.gguf IN.inp [--special] [--parse-special] > OUT.out
//        vocabref VOCAB.gguf --facts > OUT.facts   (special ids, flags, EOG set, non-NORMAL attributes)
//        vocabref VOCAB.gguf --pieces > OUT.pieces (hex of llama_token_to_piece(special=false) per token)
// IN.inp: strings each followed by "\n__ggml_vocab_test__\n" (llama.cpp's .inp format).
// Output: one line per string, " id id ..." (llama.cpp's .out format).
#include "llama.h"
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

static void quiet(enum ggml_log_level, const char *, void *) {}

int main(int argc, char ** argv) {
    if (argc < 3) { fprintf(stderr, "usage: %s VOCAB.gguf (IN.inp [--special] [--parse-special] | --facts | --pieces)\n", argv[0]); return 2; }
    bool add_special = false, parse_special = false;
    for (int i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--special")) add_special = true;
        else if (!strcmp(argv[i], "--parse-special")) parse_special = true;
    }
    setvbuf(stdout, nullptr, _IOLBF, 0);
    llama_log_set(quiet, nullptr);
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    llama_model * model = llama_model_load_from_file(argv[1], mp);
    if (!model) { fprintf(stderr, "cannot load %s\n", argv[1]); return 1; }
    const llama_vocab * vocab = llama_model_get_vocab(model);
    if (!strcmp(argv[2], "--facts")) {
        printf("bos %d\neos %d\neot %d\nsep %d\npad %d\nmask %d\n", llama_vocab_bos(vocab), llama_vocab_eos(vocab),
               llama_vocab_eot(vocab), llama_vocab_sep(vocab), llama_vocab_pad(vocab), llama_vocab_mask(vocab));
        printf("fim %d %d %d %d %d %d\n", llama_vocab_fim_pre(vocab), llama_vocab_fim_suf(vocab), llama_vocab_fim_mid(vocab),
               llama_vocab_fim_pad(vocab), llama_vocab_fim_rep(vocab), llama_vocab_fim_sep(vocab));
        printf("add %d %d %d\n", llama_vocab_get_add_bos(vocab), llama_vocab_get_add_eos(vocab), llama_vocab_get_add_sep(vocab));
        const int n = llama_vocab_n_tokens(vocab);
        printf("eog");
        for (int i = 0; i < n; i++) if (llama_vocab_is_eog(vocab, i)) printf(" %d", i);
        printf("\n");
        for (int i = 0; i < n; i++) {
            int a = (int) llama_vocab_get_attr(vocab, i);
            if (a != LLAMA_TOKEN_ATTR_NORMAL) printf("attr %d %d\n", i, a);
        }
        return 0;
    }
    if (!strcmp(argv[2], "--pieces")) {
        const int n = llama_vocab_n_tokens(vocab);
        std::vector<char> buf(1 << 16);
        for (int i = 0; i < n; i++) {
            int r = llama_token_to_piece(vocab, i, buf.data(), (int32_t) buf.size(), 0, false);
            for (int k = 0; k < r; k++) printf("%02x", (unsigned char) buf[k]);
            printf("\n");
        }
        return 0;
    }
    FILE * f = fopen(argv[2], "rb");
    if (!f) { fprintf(stderr, "cannot read %s\n", argv[2]); return 1; }
    std::string data;
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) data.append(buf, n);
    fclose(f);
    const std::string sep = "\n__ggml_vocab_test__\n";
    size_t at = 0;
    while (true) {
        size_t e = data.find(sep, at);
        if (e == std::string::npos) break;
        std::string s = data.substr(at, e - at);
        std::vector<llama_token> ids(s.size() * 2 + 16);
        int r = llama_tokenize(vocab, s.data(), (int32_t) s.size(), ids.data(), (int32_t) ids.size(), add_special, parse_special);
        if (r < 0) { ids.resize(-r); r = llama_tokenize(vocab, s.data(), (int32_t) s.size(), ids.data(), (int32_t) ids.size(), add_special, parse_special); }
        for (int i = 0; i < r; i++) printf(" %d", ids[i]);
        printf("\n");
        at = e + sep.size();
    }
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
