/* Unicode helpers for the tokenizer: category lookup (generated range tables)
 * and strict UTF-8 decode/encode. */
#include "llm/tokenizer_internal.h"

extern const uint32_t loom_uni_letter_ranges[][2];
extern const size_t loom_uni_letter_ranges_count;
extern const uint32_t loom_uni_number_ranges[][2];
extern const size_t loom_uni_number_ranges_count;

static bool in_ranges(const uint32_t (*r)[2], size_t n, uint32_t cp) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp < r[mid][0]) hi = mid;
        else if (cp > r[mid][1]) lo = mid + 1;
        else return true;
    }
    return false;
}

/* Unicode White_Space property. */
static bool is_white_space(uint32_t cp) {
    if (cp <= 0x20) return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D);
    switch (cp) {
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F:
    case 0x3000:
        return true;
    default:
        return cp >= 0x2000 && cp <= 0x200A;
    }
}

unsigned tok_cp_flags(uint32_t cp) {
    if (cp < 0x80) {
        if ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z') return TOK_CP_LETTER;
        if (cp >= '0' && cp <= '9') return TOK_CP_NUMBER;
        return is_white_space(cp) ? TOK_CP_SPACE : 0;
    }
    if (cp > 0x10FFFF) return 0;
    if (is_white_space(cp)) return TOK_CP_SPACE;
    if (in_ranges(loom_uni_letter_ranges, loom_uni_letter_ranges_count, cp)) return TOK_CP_LETTER;
    if (in_ranges(loom_uni_number_ranges, loom_uni_number_ranges_count, cp)) return TOK_CP_NUMBER;
    return 0;
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

size_t tok_utf8_encode(uint32_t cp, unsigned char *out) {
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
    out[0] = (unsigned char)(0xF0 | (cp >> 18));
    out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}
