/* Private tokenizer state shared by src/llm/tokenizer*.c. */
#ifndef LOOM_TOKENIZER_INTERNAL_H
#define LOOM_TOKENIZER_INTERNAL_H

#include "loom_tokenizer.h"

typedef enum tok_pre {
    TOK_PRE_GPT2 = 0,
    TOK_PRE_LLAMA3 = 1,
    TOK_PRE_QWEN2 = 2
} tok_pre;

/* Open-addressing string -> index table (indices into an external string list). */
typedef struct tok_strmap {
    int32_t *slots;   /* -1 = empty */
    size_t mask;      /* capacity - 1 (power of two) */
} tok_strmap;

struct loom_tokenizer {
    loom_vocab_type type;
    tok_pre pre;
    int32_t n_vocab;
    char *arena;          /* all token texts, each followed by a NUL */
    size_t *off;          /* text of token i: arena + off[i], length len[i] */
    uint32_t *len;
    float *scores;        /* NULL if the file has none */
    uint8_t *types;       /* loom_token_type per token */
    tok_strmap map;       /* text -> token id (later duplicates win) */

    /* BPE merges: "A B" strings; rank = index. */
    int32_t n_merges;
    char *merge_arena;
    size_t *merge_off;
    uint32_t *merge_len;  /* full "A B" length */
    uint32_t *merge_split;/* length of A */
    tok_strmap merge_map;

    int32_t *special;     /* CONTROL/USER_DEFINED/UNKNOWN ids, longest text first */
    int32_t n_special;

    int32_t bos, eos, eot, eom, unk, pad;
    bool add_bos, add_eos, add_space_prefix, ignore_merges;
    size_t max_piece;

    int32_t byte_token[256];      /* SPM <0xNN> ids / BPE single mapped-byte ids; -1 if none */
    unsigned char bpe_enc[256][2];/* GPT-2 byte -> unicode code point as UTF-8 */
    uint8_t bpe_enc_len[256];
    int16_t bpe_dec[324];         /* code point (< 324) -> byte, -1 if unmapped */
};

/* ---- hashing / lookup (tokenizer_vocab.c) */
uint64_t tok_hash_bytes(uint64_t h, const char *s, size_t n);
#define TOK_HASH_SEED 1469598103934665603ull
/* Token id of exactly these bytes, -1 if none. */
int32_t tok_lookup(const loom_tokenizer *t, const char *s, size_t n);
/* Rank of merge (a, b), -1 if none. */
int32_t tok_merge_rank(const loom_tokenizer *t, const char *a, size_t na, const char *b, size_t nb);

/* ---- output collector */
typedef struct tok_out {
    int32_t *ids;
    int64_t max;
    int64_t n;
} tok_out;
static inline void tok_emit(tok_out *o, int32_t id) {
    if (o->n < o->max) o->ids[o->n] = id;
    o->n++;
}

/* ---- min-heap of candidate merges keyed by (key, left) (tokenizer_vocab.c) */
typedef struct tok_bigram {
    double key;   /* SPM: -score; BPE: rank */
    int32_t left, right;
    size_t size;  /* bytes of the merged text when queued */
} tok_bigram;
typedef struct tok_heap {
    tok_bigram *a;
    size_t n, cap;
} tok_heap;
loom_status tok_heap_push(tok_heap *h, tok_bigram b);
bool tok_heap_pop(tok_heap *h, tok_bigram *out);

/* Symbol of the merge loops (linked list over one buffer). */
typedef struct tok_sym {
    int32_t prev, next;
    size_t off;   /* byte offset into the working buffer */
    size_t n;     /* bytes; 0 = merged away */
} tok_sym;

/* ---- algorithms. Both tokenize one raw fragment (no special tokens inside). */
loom_status tok_spm_fragment(const loom_tokenizer *t, const char *text, size_t len, bool space_prefix,
                             tok_out *out);
loom_status tok_bpe_fragment(const loom_tokenizer *t, const char *text, size_t len, tok_out *out);

/* ---- unicode helpers (tokenizer_unicode.c) */
enum { TOK_CP_LETTER = 1, TOK_CP_NUMBER = 2, TOK_CP_SPACE = 4 };
/* Flags of a code point (TOK_CP_*); 0 for "other". */
unsigned tok_cp_flags(uint32_t cp);
/* Decode one UTF-8 sequence at s (n > 0 bytes available): returns its byte
 * length (1..4) and the code point; an invalid/truncated/overlong/surrogate
 * sequence yields length 1 and *cp = 0xFFFFFFFF (flags 0). */
size_t tok_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);
/* Length implied by a lead byte (llama-style, 1 for continuation bytes). */
static inline size_t tok_utf8_lead_len(unsigned char c) {
    static const uint8_t tab[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return tab[c >> 4];
}
size_t tok_utf8_encode(uint32_t cp, unsigned char *out); /* out has room for 4 */

#endif
