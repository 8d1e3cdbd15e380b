/* Private tokenizer state shared by src/llm/tokenizer*.c.
 *
 * The behaviour reproduced is llama.cpp's (src/llama-vocab.cpp, src/unicode.cpp
 * of the bundled checkout): same vocabulary types, pre-tokenizer regexes,
 * special-token rules and fallbacks, so that every GGUF tokenizes to the ids
 * the model was trained with. The code is our own. */
#ifndef LOOM_TOKENIZER_INTERNAL_H
#define LOOM_TOKENIZER_INTERNAL_H

#include <string.h>

#include "loom_tokenizer.h"
#include "utf8.h" /* loom_utf8_encode */

/* ------------------------------------------------------------------ unicode */
/* Category flags (one bit per major general category) as llama.cpp's
 * unicode_cpt_flags, plus White_Space. 0 for code points >= 0x110000. */
enum {
    TOK_CP_UNDEFINED = 0x01, /* Cn */
    TOK_CP_NUMBER = 0x02,    /* N* */
    TOK_CP_LETTER = 0x04,    /* L* */
    TOK_CP_SEPARATOR = 0x08, /* Z* */
    TOK_CP_MARK = 0x10,      /* M* */
    TOK_CP_PUNCT = 0x20,     /* P* */
    TOK_CP_SYMBOL = 0x40,    /* S* */
    TOK_CP_CONTROL = 0x80,   /* Cc Cf Co Cs */
    TOK_CP_WHITESPACE = 0x100
};
#define TOK_CP_INVALID 0xFFFFFFFFu
unsigned tok_cp_flags(uint32_t cp);
bool tok_cp_is_space(uint32_t cp); /* White_Space */
uint32_t tok_cp_tolower(uint32_t cp);
uint32_t tok_cp_nfd_first(uint32_t cp);
bool tok_cp_is_han(uint32_t cp);
void tok_unicode_init(void);
/* Strict decode: invalid/truncated/overlong/surrogate -> length 1, *cp = TOK_CP_INVALID. */
size_t tok_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);
/* llama.cpp's decoder: lead byte gives the length, continuation bytes are
 * checked, nothing else (overlong forms and surrogates pass); failure -> 1
 * byte and TOK_CP_INVALID. */
size_t tok_utf8_decode_lax(const unsigned char *s, size_t n, uint32_t *cp);
/* Lax decode of len bytes into cps (room for len entries), invalid -> U+FFFD;
 * returns the count. */
size_t tok_cps_from_utf8(const char *text, size_t len, uint32_t *cps);
/* Length implied by a lead byte (llama-style, 1 for continuation bytes). */
static inline size_t tok_utf8_lead_len(unsigned char c) {
    static const uint8_t tab[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return tab[c >> 4];
}

/* ------------------------------------------------------------------ growable buffers */
typedef struct tok_buf {
    void *p;
    size_t cap; /* bytes */
} tok_buf;
/* Ensure room for n bytes (contents kept). LOOM_ERR_NOMEM on failure. */
loom_status tok_buf_reserve(tok_buf *b, size_t n);
void tok_buf_free(tok_buf *b);

/* ------------------------------------------------------------------ trie */
/* Byte trie over a fixed key set; children of a node are contiguous and
 * sorted by label. value = -1 when no key ends at the node. */
typedef struct tok_trie {
    int32_t *first;   /* first child index (children are first..first+nchild-1) */
    uint16_t *nchild;
    int32_t *value;
    uint8_t *label;   /* label of node i (edge from its parent) */
    int32_t n_nodes;
    int32_t root_child[256]; /* direct index of the root's children, -1 if none */
} tok_trie;
/* Build from n keys (keys[i], lens[i]) with values vals[i]; a key given twice
 * keeps the value of its first occurrence. Empty keys are ignored. */
loom_status tok_trie_build(tok_trie *t, const char *const *keys, const uint32_t *lens, const int32_t *vals,
                           int32_t n);
void tok_trie_free(tok_trie *t);
static inline int32_t tok_trie_child(const tok_trie *t, int32_t node, unsigned char c) {
    if (node == 0) return t->root_child[c];
    int32_t lo = t->first[node], hi = lo + t->nchild[node];
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (t->label[mid] < c) lo = mid + 1;
        else hi = mid;
    }
    return (lo < t->first[node] + t->nchild[node] && t->label[lo] == c) ? lo : -1;
}

/* ------------------------------------------------------------------ pre-tokenizer */
typedef struct tok_regex tok_regex;
/* Compile one pre-tokenizer regex. Uses llama.cpp's convention: a pattern
 * containing \p{N|L|P|M|S|Lu|Ll|Lt|Lm|Lo} runs over "collapsed" symbols (ASCII
 * kept, other code points replaced by one byte per category, non-ASCII
 * whitespace by \v), any other pattern over code points (non-ASCII whitespace
 * by \v); classes are ECMAScript with the C locale. */
loom_status tok_regex_compile(const char *pattern, tok_regex **out, char *why, size_t why_size);
void tok_regex_free(tok_regex *r);
bool tok_regex_collapsed(const tok_regex *r);
/* Symbol of a code point in the two modes. */
uint32_t tok_sym_collapsed(uint32_t cp);
static inline uint32_t tok_sym_wide(uint32_t cp) { return (cp > 0x7F && tok_cp_is_space(cp)) ? 0x0B : cp; }

typedef struct tok_scratch tok_scratch;

/* Offsets: lengths (in code points) of consecutive pieces of the text. */
typedef struct tok_offs {
    uint32_t *a;
    size_t n, cap;
} tok_offs;
loom_status tok_offs_push(tok_offs *o, uint32_t len);

/* Split every piece of `in` with the regex (std::regex_iterator semantics:
 * matches and the text between them become pieces), appending to out. sym are
 * the symbols of the whole text in the regex's mode. */
loom_status tok_regex_split(const tok_regex *r, const uint32_t *sym, const tok_offs *in, tok_offs *out,
                            tok_scratch *sc);

typedef enum tok_split_kind {
    TOK_SPLIT_REGEX = 0,
    TOK_SPLIT_GPT2,
    TOK_SPLIT_LLAMA3,
    TOK_SPLIT_QWEN2,
    TOK_SPLIT_QWEN35,
    TOK_SPLIT_KIMI_K2,
    TOK_SPLIT_AFMOE_DIGITS,
    TOK_SPLIT_NEWLINES,
    TOK_SPLIT_DIGITS3 /* superbpe's (?=(\d{3})+(?!\d)): same pieces as the regex, in linear time */
} tok_split_kind;
/* The hand-written splitters llama.cpp uses instead of std::regex for these
 * exact pattern strings (they differ from the regex in corner cases, which we
 * reproduce). */
tok_split_kind tok_split_kind_of(const char *pattern);
loom_status tok_split_custom(tok_split_kind k, const uint32_t *cps, const tok_offs *in, tok_offs *out);

/* Pre-tokenizer definition (data): the regexes and the vocabulary flags a
 * tokenizer.ggml.pre name selects. */
enum {
    TOK_PRE_F_IGNORE_MERGES = 1u << 0, /* whole word looked up before merging */
    TOK_PRE_F_ADD_BOS = 1u << 1,       /* default add_bos_token = true */
    TOK_PRE_F_NO_CLEAN = 1u << 2,      /* clean_up_tokenization_spaces off */
    TOK_PRE_F_RAW = 1u << 3,           /* no GPT-2 byte encoding; <0xNN> byte tokens */
    TOK_PRE_F_ESCAPE_WS = 1u << 4,     /* spaces -> U+2581 before splitting */
    TOK_PRE_F_NO_BOS_ID = 1u << 5,     /* default BOS id: none */
    TOK_PRE_F_ADD_SEP = 1u << 6,       /* default add_sep_token = true */
    TOK_PRE_F_GEMMA4 = 1u << 7,        /* all-newline words looked up whole */
    TOK_PRE_F_FORCE_BOS = 1u << 8,     /* add_bos forced on (Gemma 4 workaround) */
    TOK_PRE_F_WHITESPACE = 1u << 9     /* "whitespace" model: split on whitespace first */
};
#define TOK_PRE_MAX_REGEX 8
typedef struct tok_pre_def {
    const char *id;                       /* llama.cpp's pre-type name, e.g. "llama3" */
    const char *const *names;             /* tokenizer.ggml.pre values, NULL-terminated */
    const char *regex[TOK_PRE_MAX_REGEX]; /* applied in order, NULL-terminated */
    unsigned flags;
} tok_pre_def;
/* Definition for a tokenizer.ggml.pre value (NULL if unknown). "" gives the default. */
const tok_pre_def *tok_pre_find(const char *name, size_t len);
const tok_pre_def *tok_pre_table(size_t *n);

/* ------------------------------------------------------------------ token attributes (llama_token_attr) */
enum {
    TOK_ATTR_UNKNOWN = 1 << 0,
    TOK_ATTR_UNUSED = 1 << 1,
    TOK_ATTR_NORMAL = 1 << 2,
    TOK_ATTR_CONTROL = 1 << 3,
    TOK_ATTR_USER_DEFINED = 1 << 4,
    TOK_ATTR_BYTE = 1 << 5,
    TOK_ATTR_NORMALIZED = 1 << 6,
    TOK_ATTR_LSTRIP = 1 << 7,
    TOK_ATTR_RSTRIP = 1 << 8,
    TOK_ATTR_SINGLE_WORD = 1 << 9
};

/* Open-addressing string -> index table (indices into an external string list). */
typedef struct tok_slot {
    int32_t id;   /* -1 = empty */
    uint32_t tag; /* high bits of the hash: most misses need no string compare */
} tok_slot;
typedef struct tok_strmap {
    tok_slot *slots;
    size_t mask; /* capacity - 1 (power of two) */
} tok_strmap;

struct loom_tokenizer {
    loom_vocab_type type;
    const tok_pre_def *pre; /* BPE: the pre-tokenizer */
    char model_name[48], pre_name[64];
    int32_t n_vocab;
    char *arena;     /* all token texts, each followed by a NUL */
    size_t *off;     /* text of token i: arena + off[i], length len[i] */
    uint32_t *len;
    float *scores;   /* NULL if the file has none */
    uint8_t *types;  /* loom_token_type per token as in the file */
    uint16_t *attr;  /* TOK_ATTR_* after llama.cpp's overrides */
    tok_strmap map;  /* text -> token id (later duplicates win) */

    /* BPE merges: "A B" strings; rank = index. */
    int32_t n_merges;
    char *merge_arena;
    size_t *merge_off;
    uint32_t *merge_len;   /* full "A B" length */
    uint32_t *merge_split; /* length of A */
    tok_strmap merge_map;
    /* When every merge's parts and result are tokens ("closed" merges, true of
     * real vocabularies), merges are looked up by token-id pair: */
    struct tok_pair_slot *pair_slots; /* (left id, right id) -> rank, merged id */
    size_t pair_mask;
    int32_t byte_sym[256];            /* byte-level BPE: token id of the mapped byte, -1 if none */

    /* compiled pre-tokenizer (BPE) */
    int n_split;
    tok_split_kind split_kind[TOK_PRE_MAX_REGEX];
    tok_regex *split_rx[TOK_PRE_MAX_REGEX];
    bool need_collapsed, need_wide;

    /* special tokens: CONTROL/USER_DEFINED/UNKNOWN ids, longest text first;
     * special_rank[id] = position in that list or -1 */
    int32_t *special;
    int32_t n_special;
    int32_t *special_rank;
    tok_trie special_trie;

    int32_t bos, eos, eot, eom, unk, sep, pad, mask, cls;
    int32_t fim_pre, fim_suf, fim_mid, fim_pad, fim_rep, fim_sep;
    int32_t *eog;    /* sorted end-of-generation ids */
    int32_t n_eog;
    int32_t *suppress; /* tokenizer.ggml.suppress_tokens (in range, in file order) */
    int32_t n_suppress;
    bool add_bos, add_eos, add_sep, add_space_prefix, ignore_merges, clean_spaces;
    bool remove_extra_ws, escape_ws, byte_encode, lowercase, strip_accents;
    bool dna;        /* tokenizer.ggml.model "hybriddna": <dna>...</dna> spans become 6-mer tokens */
    int32_t dna_oov; /* its <oov> token; k-mer tokens after it end in U+E000 (not rendered) */
    size_t max_piece;   /* longest rendered piece */
    size_t max_token_len; /* longest token text */

    int32_t byte_token[256];       /* byte fallback ids; -1 if none */
    bool solo[256];                /* SPM: ASCII byte in no token of 2+ bytes (a symbol that never merges) */
    unsigned char bpe_enc[256][2]; /* GPT-2 byte -> unicode code point as UTF-8 */
    uint8_t bpe_enc_len[256];
    int16_t bpe_dec[324];          /* code point (< 324) -> byte, -1 if unmapped */

    /* UGM (T5 / XLM-R unigram) */
    uint8_t *charsmap;   /* tokenizer.ggml.precompiled_charsmap (owned copy) */
    size_t charsmap_size;
    const uint32_t *xcda;
    size_t xcda_size;
    const char *repl;
    size_t repl_size;
    tok_trie ugm_trie;   /* NORMAL/USER_DEFINED/UNUSED tokens */
    tok_trie ugm_user;   /* USER_DEFINED tokens */
    double ugm_unk_score;

    /* RWKV / PLaMo-2 */
    tok_trie piece_trie; /* RWKV: unescaped token bytes; PLaMo-2: token texts */
    char *rwkv_arena;    /* RWKV: unescaped texts */
    size_t *rwkv_off;
    uint32_t *rwkv_len;
    int32_t *plamo_score; /* PLaMo-2: round(score * 1e4) per token, INT32_MIN if not finite */
};

typedef struct tok_pair_slot {
    uint64_t key; /* (uint64)left << 32 | right; UINT64_MAX = empty */
    int32_t rank, id;
} tok_pair_slot;
/* Rank of merging token ids (a, b) (-1 if none), *merged = the result's id. */
static inline int32_t tok_pair_rank(const loom_tokenizer *t, int32_t a, int32_t b, int32_t *merged) {
    uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    size_t i = (size_t)(h >> 20) & t->pair_mask;
    for (;;) {
        const tok_pair_slot *s = &t->pair_slots[i];
        if (s->key == key) { *merged = s->id; return s->rank; }
        if (s->key == UINT64_MAX) return -1;
        i = (i + 1) & t->pair_mask;
    }
}
loom_status tok_build_pairs(loom_tokenizer *t);

/* ---- hashing / lookup (tokenizer_vocab.c) */
uint64_t tok_hash_bytes(uint64_t h, const char *s, size_t n);
#define TOK_HASH_SEED 1469598103934665603ull
loom_status tok_strmap_init(tok_strmap *m, size_t n);
/* Insert token id / merge rank r into its map (tokens: a later duplicate
 * replaces; merges: the first stays). */
void tok_map_insert_token(loom_tokenizer *t, int32_t id);
void tok_map_insert_merge(loom_tokenizer *t, int32_t r);
/* Token id of exactly these bytes, -1 if none. */
int32_t tok_lookup(const loom_tokenizer *t, const char *s, size_t n);
/* Rank of merge (a, b), -1 if none. */
int32_t tok_merge_rank(const loom_tokenizer *t, const char *a, size_t na, const char *b, size_t nb);

/* ---- loading (tokenizer_load.c) */
loom_status tok_load(loom_tokenizer *t, const loom_gguf *g, loom_error *err);
loom_status tok_build_special(loom_tokenizer *t);

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
    uint32_t key; /* smaller pops first. SPM: tok_score_key(score); BPE: rank */
    int32_t left, right;
    uint32_t size; /* bytes of the merged text when queued */
} tok_bigram;
/* Order-reversing map of a float score to uint32 (higher score -> smaller key). */
static inline uint32_t tok_score_key(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    u = (u & 0x80000000u) ? ~u : (u | 0x80000000u); /* ascending with f */
    return ~u;
}
typedef struct tok_heap {
    tok_bigram *a;
    size_t n, cap;
} tok_heap;
loom_status tok_heap_push(tok_heap *h, tok_bigram b);
bool tok_heap_pop(tok_heap *h, tok_bigram *out);

/* Symbol of the merge loops (linked list over one buffer). */
typedef struct tok_sym {
    int32_t prev, next;
    size_t off; /* byte offset into the working buffer */
    size_t n;   /* bytes; 0 = merged away */
} tok_sym;

/* Per-call scratch memory (freed by tok_scratch_free). */
struct tok_scratch {
    tok_buf text;   /* working text */
    tok_buf text2;
    tok_buf cps;    /* uint32 code points */
    tok_buf sym_c;  /* collapsed symbols */
    tok_buf sym_w;  /* wide symbols */
    tok_buf syms;   /* tok_sym */
    tok_buf bt;     /* regex backtrack stack */
    tok_buf misc;
    tok_buf misc2;
    tok_offs offs[2];
    tok_heap heap;
};
void tok_scratch_free(tok_scratch *s);

/* ---- algorithms: each tokenizes one raw fragment (no special tokens inside). */
loom_status tok_spm_fragment(const loom_tokenizer *t, const char *text, size_t len, bool space_prefix,
                             tok_out *out, tok_scratch *sc);
loom_status tok_bpe_fragment(const loom_tokenizer *t, const char *text, size_t len, tok_out *out, tok_scratch *sc);
loom_status tok_wpm_fragment(const loom_tokenizer *t, const char *text, size_t len, tok_out *out, tok_scratch *sc);
loom_status tok_ugm_fragment(const loom_tokenizer *t, const char *text, size_t len, tok_out *out, tok_scratch *sc);
loom_status tok_rwkv_fragment(const loom_tokenizer *t, const char *text, size_t len, tok_out *out);
loom_status tok_plamo2_fragment(const loom_tokenizer *t, const char *text, size_t len, tok_out *out,
                                tok_scratch *sc);
/* set-up of the model-specific structures (after the vocabulary is loaded) */
loom_status tok_bpe_init(loom_tokenizer *t, char *why, size_t why_size);
loom_status tok_ugm_init(loom_tokenizer *t, char *why, size_t why_size);
loom_status tok_rwkv_init(loom_tokenizer *t, char *why, size_t why_size);
loom_status tok_plamo2_init(loom_tokenizer *t, char *why, size_t why_size);
/* RWKV token text unescaping (\t \n \r \xHH \\); returns the length written
 * (out has room for n bytes). */
size_t tok_rwkv_unescape(const char *s, size_t n, char *out);

#endif
