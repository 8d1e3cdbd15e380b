/* UTF-8 helpers, Python character classes and full case mappings for the
 * template engine (tables: tpl_unicode_tables.c, generated from Python). */
#include <string.h>

#include "tpl.h"
#include "tpl_unicode_tables.h"

uint32_t tpl_utf8_decode(const char *s, size_t n, size_t *adv) {
    const unsigned char *p = (const unsigned char *)s;
    if (n == 0) { *adv = 1; return 0xFFFD; }
    unsigned c = p[0];
    if (c < 0x80) { *adv = 1; return c; }
    int len;
    uint32_t cp, min;
    if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1F; min = 0x80; }
    else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0F; min = 0x800; }
    else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07; min = 0x10000; }
    else { *adv = 1; return 0xFFFD; }
    if ((size_t)len > n) { *adv = 1; return 0xFFFD; }
    for (int i = 1; i < len; i++) {
        if ((p[i] & 0xC0) != 0x80) { *adv = 1; return 0xFFFD; }
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) { *adv = 1; return 0xFFFD; }
    *adv = (size_t)len;
    return cp;
}

bool tpl_utf8_valid(const char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        if ((unsigned char)s[i] < 0x80) { i++; continue; }
        size_t adv;
        uint32_t cp = tpl_utf8_decode(s + i, n - i, &adv);
        if (cp == 0xFFFD && adv == 1) {
            /* a literal U+FFFD is 3 bytes; adv 1 means an invalid sequence */
            return false;
        }
        i += adv;
    }
    return true;
}

static bool in_ranges(const uint32_t (*r)[2], int n, uint32_t cp) {
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (cp < r[mid][0]) hi = mid - 1;
        else if (cp > r[mid][1]) lo = mid + 1;
        else return true;
    }
    return false;
}

bool tpl_is_space(uint32_t cp) { return in_ranges(tpl_space, TPL_SPACE_N, cp); }
bool tpl_is_alpha(uint32_t cp) {
    if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
    return in_ranges(tpl_alpha, TPL_ALPHA_N, cp);
}
bool tpl_is_digit(uint32_t cp) {
    if (cp < 0x80) return cp >= '0' && cp <= '9';
    return in_ranges(tpl_digit, TPL_DIGIT_N, cp);
}
bool tpl_is_decimal(uint32_t cp) {
    if (cp < 0x80) return cp >= '0' && cp <= '9';
    return in_ranges(tpl_decimal, TPL_DECIMAL_N, cp);
}
int tpl_decimal_value(uint32_t cp) {
    if (cp < 0x80) return cp >= '0' && cp <= '9' ? (int)(cp - '0') : -1;
    /* decimal digits come in runs 0..9 (a Unicode stability policy); a range of the
     * table is one or more whole runs */
    int lo = 0, hi = TPL_DECIMAL_N - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (cp < tpl_decimal[mid][0]) hi = mid - 1;
        else if (cp > tpl_decimal[mid][1]) lo = mid + 1;
        else return (int)((cp - tpl_decimal[mid][0]) % 10);
    }
    return -1;
}
bool tpl_is_numeric(uint32_t cp) {
    if (cp < 0x80) return cp >= '0' && cp <= '9';
    return in_ranges(tpl_numeric, TPL_NUMERIC_N, cp);
}
bool tpl_is_printable(uint32_t cp) {
    if (cp < 0x80) return cp >= 0x20 && cp < 0x7F;
    return in_ranges(tpl_printable, TPL_PRINTABLE_N, cp);
}
bool tpl_is_cased(uint32_t cp) { return in_ranges(tpl_cased, TPL_CASED_N, cp); }
bool tpl_is_upper(uint32_t cp) { return in_ranges(tpl_upper, TPL_UPPER_N, cp); }
bool tpl_is_lower(uint32_t cp) { return in_ranges(tpl_lower, TPL_LOWER_N, cp); }
bool tpl_is_word(uint32_t cp) {
    if (cp < 0x80) return (cp | 0x20) - 'a' < 26u || cp - '0' < 10u || cp == '_';
    return tpl_is_alpha(cp) || tpl_is_numeric(cp);
}
static bool is_case_ignorable(uint32_t cp) { return in_ranges(tpl_case_ignorable, TPL_CASE_IGNORABLE_N, cp); }

static int map_case(const int32_t (*runs)[4], int nruns, const uint32_t (*multi)[4], int nmulti, uint32_t cp,
                    uint32_t out[3]) {
    /* multi-character mappings first (few) */
    int lo = 0, hi = nmulti - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (cp < multi[mid][0]) hi = mid - 1;
        else if (cp > multi[mid][0]) lo = mid + 1;
        else {
            int k = 0;
            for (int j = 1; j < 4 && multi[mid][j]; j++) out[k++] = multi[mid][j];
            return k;
        }
    }
    lo = 0;
    hi = nruns - 1;
    int found = -1;
    while (lo <= hi) { /* last run with first <= cp */
        int mid = (lo + hi) / 2;
        if ((uint32_t)runs[mid][0] <= cp) { found = mid; lo = mid + 1; }
        else hi = mid - 1;
    }
    if (found >= 0 && cp <= (uint32_t)runs[found][1] && (cp - (uint32_t)runs[found][0]) % (uint32_t)runs[found][3] == 0) {
        out[0] = (uint32_t)((int32_t)cp + runs[found][2]);
        return 1;
    }
    out[0] = cp;
    return 1;
}

int tpl_to_upper(uint32_t cp, uint32_t out[3]) {
    if (cp < 0x80) { out[0] = (cp >= 'a' && cp <= 'z') ? cp - 32 : cp; return 1; }
    return map_case(tpl_upper_map_runs, TPL_UPPER_MAP_RUNS_N, tpl_upper_map_multi, TPL_UPPER_MAP_MULTI_N, cp, out);
}
int tpl_to_lower(uint32_t cp, uint32_t out[3]) {
    if (cp < 0x80) { out[0] = (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp; return 1; }
    return map_case(tpl_lower_map_runs, TPL_LOWER_MAP_RUNS_N, tpl_lower_map_multi, TPL_LOWER_MAP_MULTI_N, cp, out);
}
static int to_fold(uint32_t cp, uint32_t out[3]) {
    if (cp < 0x80) { out[0] = (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp; return 1; }
    return map_case(tpl_fold_map_runs, TPL_FOLD_MAP_RUNS_N, tpl_fold_map_multi, TPL_FOLD_MAP_MULTI_N, cp, out);
}
int tpl_to_title(uint32_t cp, uint32_t out[3]) {
    if (cp < 0x80) { out[0] = (cp >= 'a' && cp <= 'z') ? cp - 32 : cp; return 1; }
    return map_case(tpl_title_map_runs, TPL_TITLE_MAP_RUNS_N, tpl_title_map_multi, TPL_TITLE_MAP_MULTI_N, cp, out);
}

/* Decoded code points of a string (arena). */
static uint32_t *decode_all(tpl_ctx *c, const tstr *s, size_t *n) {
    uint32_t *cps = tpl_alloc(c, (size_t)s->len * sizeof(uint32_t) + 4);
    if (!cps) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < s->len;) {
        size_t adv;
        cps[k++] = tpl_utf8_decode(s->data + i, s->len - i, &adv);
        i += adv;
    }
    *n = k;
    return cps;
}

/* Python's Final_Sigma context for U+03A3 at index i. */
static bool final_sigma(const uint32_t *cps, size_t n, size_t i) {
    size_t j = i;
    bool before = false;
    while (j > 0) {
        j--;
        if (is_case_ignorable(cps[j])) continue;
        before = tpl_is_cased(cps[j]);
        break;
    }
    if (!before) return false;
    for (j = i + 1; j < n; j++) {
        if (is_case_ignorable(cps[j])) continue;
        return !tpl_is_cased(cps[j]);
    }
    return true;
}

static int lower_at(const uint32_t *cps, size_t n, size_t i, uint32_t out[3]) {
    if (cps[i] == 0x3A3) {
        out[0] = final_sigma(cps, n, i) ? 0x3C2 : 0x3C3;
        return 1;
    }
    return tpl_to_lower(cps[i], out);
}

static int put_cps(tpl_ctx *c, tbuf *b, const uint32_t *m, int k) {
    char enc[4];
    for (int j = 0; j < k; j++)
        if (tb_put(c, b, enc, loom_utf8_encode(m[j], (unsigned char *)enc)) < 0) return -1;
    return 0;
}

static bool jtitle_sep(uint32_t cp) {
    return cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' || tpl_is_space(cp);
}

int tpl_case_convert(tpl_ctx *c, const tstr *s, int mode, tstr **out) {
    tbuf b = {0};
    if (s->ascii && mode != CASE_JTITLE) {
        /* fast path: ASCII maps to ASCII */
        if (tb_put(c, &b, s->data, s->len) < 0) return -1;
        bool prev_cased = false;
        for (size_t i = 0; i < b.n; i++) {
            char ch = b.d[i];
            bool up = ch >= 'A' && ch <= 'Z', lo = ch >= 'a' && ch <= 'z';
            switch (mode) {
            case CASE_UPPER: if (lo) ch = (char)(ch - 32); break;
            case CASE_LOWER: case CASE_FOLD: if (up) ch = (char)(ch + 32); break;
            case CASE_SWAP: if (lo) ch = (char)(ch - 32); else if (up) ch = (char)(ch + 32); break;
            case CASE_CAPITALIZE:
                if (i == 0) { if (lo) ch = (char)(ch - 32); }
                else if (up) ch = (char)(ch + 32);
                break;
            case CASE_TITLE_WORDS:
                if (prev_cased) { if (up) ch = (char)(ch + 32); }
                else if (lo) ch = (char)(ch - 32);
                prev_cased = up || lo;
                break;
            default: break;
            }
            b.d[i] = ch;
        }
        *out = tstr_taint_like(c, &b, s);
        return *out ? 0 : -1;
    }
    size_t n;
    uint32_t *cps = decode_all(c, s, &n);
    if (!cps) return -1;
    uint32_t m[3];
    bool prev_cased = false;
    for (size_t i = 0; i < n; i++) {
        uint32_t cp = cps[i];
        int k = 1;
        m[0] = cp;
        switch (mode) {
        case CASE_UPPER: k = tpl_to_upper(cp, m); break;
        case CASE_LOWER: k = lower_at(cps, n, i, m); break;
        case CASE_FOLD: k = to_fold(cp, m); break; /* full case folding: no context */
        case CASE_SWAP:
            if (tpl_is_upper(cp)) k = lower_at(cps, n, i, m);
            else if (tpl_is_lower(cp)) k = tpl_to_upper(cp, m);
            break;
        case CASE_CAPITALIZE: k = i == 0 ? tpl_to_title(cp, m) : lower_at(cps, n, i, m); break;
        case CASE_TITLE_WORDS:
            k = prev_cased ? lower_at(cps, n, i, m) : tpl_to_title(cp, m);
            prev_cased = tpl_is_cased(cp);
            break;
        case CASE_JTITLE: {
            /* jinja's title filter: re.split(r"([-\s({\[<]+)"), item[0].upper() + item[1:].lower() */
            bool sep = jtitle_sep(cp);
            bool item_start = i == 0 || sep != jtitle_sep(cps[i - 1]);
            k = item_start ? tpl_to_upper(cp, m) : lower_at(cps, n, i, m);
            break;
        }
        default: break;
        }
        if (put_cps(c, &b, m, k) < 0) { tb_free(c, &b); return -1; }
    }
    *out = tstr_taint_like(c, &b, s);
    return *out ? 0 : -1;
}
