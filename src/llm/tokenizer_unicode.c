/* Unicode helpers for the tokenizers: general-category flags (two-level table
 * built once from the generated range table), White_Space, simple lowercase,
 * first code point of NFD, and UTF-8 decoding (strict, and llama.cpp's lax
 * rules) / encoding. */
#include <pthread.h>
#include <string.h>

#include "llm/tokenizer_internal.h"

extern const uint32_t loom_uni_cat_ranges[][2];
extern const size_t loom_uni_cat_ranges_count;
extern const uint32_t loom_uni_lower[][2];
extern const size_t loom_uni_lower_count;
extern const uint32_t loom_uni_nfd[][3];
extern const size_t loom_uni_nfd_count;

/* Category byte per code point: stage1[cp >> 7] selects a 128-entry block. */
#define BLK_SHIFT 7
#define BLK (1u << BLK_SHIFT)
#define N_BLK_MAX 256
static uint8_t g_stage1[0x110000 >> BLK_SHIFT];
static uint8_t g_stage2[N_BLK_MAX][BLK];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void build_tables(void) {
    static uint8_t blk[BLK];
    size_t r = 0, n_blk = 0;
    for (uint32_t b = 0; b < (0x110000u >> BLK_SHIFT); b++) {
        for (uint32_t k = 0; k < BLK; k++) {
            uint32_t cp = (b << BLK_SHIFT) | k;
            while (r + 1 < loom_uni_cat_ranges_count && loom_uni_cat_ranges[r + 1][0] <= cp) r++;
            blk[k] = (uint8_t)loom_uni_cat_ranges[r][1];
        }
        size_t j = 0;
        while (j < n_blk && memcmp(g_stage2[j], blk, BLK) != 0) j++;
        if (j == n_blk) {
            /* the generator's data has 237 distinct blocks for Unicode 15.1 */
            if (n_blk == N_BLK_MAX) j = 0; /* unreachable with the shipped tables */
            else memcpy(g_stage2[n_blk++], blk, BLK);
        }
        g_stage1[b] = (uint8_t)j;
    }
}

bool tok_cp_is_space(uint32_t cp) {
    if (cp <= 0x20) return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D);
    if (cp < 0x85) return false;
    switch (cp) {
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F:
    case 0x3000:
        return true;
    default:
        return cp >= 0x2000 && cp <= 0x200A;
    }
}

static const uint8_t g_ascii_cat[128] = {
    /* 0x00-0x1F control */
    0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
    0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
    /*  sp    !     "     #     $     %     &     '     (     )     *     +     ,     -     .     / */
    0x08, 0x20, 0x20, 0x20, 0x40, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x40, 0x20, 0x20, 0x20, 0x20,
    /*  0-9                                                        :     ;     <     =     >     ? */
    0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x20, 0x20, 0x40, 0x40, 0x40, 0x20,
    /*  @     A-O */
    0x20, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04,
    /*  P-Z                                                              [     \     ]     ^     _ */
    0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x20, 0x20, 0x20, 0x40, 0x20,
    /*  `     a-o */
    0x40, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04,
    /*  p-z                                                              {     |     }     ~    DEL */
    0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x20, 0x40, 0x20, 0x40, 0x80,
};

unsigned tok_cp_flags(uint32_t cp) {
    if (cp < 0x80) return g_ascii_cat[cp] | (tok_cp_is_space(cp) ? TOK_CP_WHITESPACE : 0u);
    if (cp >= 0x110000) return 0;
    pthread_once(&g_once, build_tables);
    unsigned f = g_stage2[g_stage1[cp >> BLK_SHIFT]][cp & (BLK - 1)];
    return f | (tok_cp_is_space(cp) ? TOK_CP_WHITESPACE : 0u);
}

void tok_unicode_init(void) { pthread_once(&g_once, build_tables); }

uint32_t tok_cp_tolower(uint32_t cp) {
    if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
    size_t lo = 0, hi = loom_uni_lower_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (loom_uni_lower[mid][0] < cp) lo = mid + 1;
        else hi = mid;
    }
    return (lo < loom_uni_lower_count && loom_uni_lower[lo][0] == cp) ? loom_uni_lower[lo][1] : cp;
}

uint32_t tok_cp_nfd_first(uint32_t cp) {
    if (cp < 0xC0) return cp;
    size_t lo = 0, hi = loom_uni_nfd_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (loom_uni_nfd[mid][1] < cp) lo = mid + 1;
        else hi = mid;
    }
    return (lo < loom_uni_nfd_count && loom_uni_nfd[lo][0] <= cp) ? loom_uni_nfd[lo][2] : cp;
}

size_t tok_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp) {
    unsigned char c = s[0];
    *cp = 0xFFFFFFFFu;
    if (c < 0x80) { *cp = c; return 1; }
    size_t need;
    uint32_t v, min;
    if (c >= 0xC2 && c <= 0xDF) { need = 2; v = c & 0x1F; min = 0x80; }
    else if (c >= 0xE0 && c <= 0xEF) { need = 3; v = c & 0x0F; min = 0x800; }
    else if (c >= 0xF0 && c <= 0xF4) { need = 4; v = c & 0x07; min = 0x10000; }
    else return 1;
    if (n < need) return 1;
    for (size_t i = 1; i < need; i++) {
        if ((s[i] & 0xC0) != 0x80) return 1;
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 1;
    *cp = v;
    return need;
}

size_t tok_utf8_decode_lax(const unsigned char *s, size_t n, uint32_t *cp) {
    unsigned char c = s[0];
    if (c < 0x80) { *cp = c; return 1; }
    size_t need;
    uint32_t v;
    if (!(c & 0x40)) { *cp = TOK_CP_INVALID; return 1; } /* continuation byte */
    if (!(c & 0x20)) { need = 2; v = c & 0x1F; }
    else if (!(c & 0x10)) { need = 3; v = c & 0x0F; }
    else if (!(c & 0x08)) { need = 4; v = c & 0x07; }
    else { *cp = TOK_CP_INVALID; return 1; }
    if (n < need) { *cp = TOK_CP_INVALID; return 1; }
    for (size_t i = 1; i < need; i++) {
        if ((s[i] & 0xC0) != 0x80) { *cp = TOK_CP_INVALID; return 1; }
        v = (v << 6) | (s[i] & 0x3F);
    }
    *cp = v;
    return need;
}

size_t loom_utf8_encode(uint32_t cp, unsigned char *out) {
    if (cp < 0x80) { out[0] = (unsigned char)cp; return 1; }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xC0 | (cp >> 6));
        out[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xE0 | (cp >> 12));
        out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    if (cp > 0x10FFFF) { /* llama.cpp cannot encode these either; use U+FFFD */
        out[0] = 0xEF; out[1] = 0xBF; out[2] = 0xBD;
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | (cp >> 18));
    out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

size_t tok_cps_from_utf8(const char *text, size_t len, uint32_t *cps) {
    const unsigned char *u = (const unsigned char *)text;
    size_t n = 0;
    for (size_t off = 0; off < len;) {
        uint32_t cp;
        off += tok_utf8_decode_lax(u + off, len - off, &cp);
        cps[n++] = cp == TOK_CP_INVALID ? 0xFFFDu : cp;
    }
    return n;
}

bool tok_cp_is_han(uint32_t cp) {
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
           (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
           (cp >= 0x2CEB0 && cp <= 0x2EBEF) || (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}
