/* Decimal number ranges as GBNF (the JSON Schema converter's integer and number
 * bounds): alternatives matching exactly the decimal spellings (no leading
 * zeros) of the numbers in a range. */
#include <stdio.h>
#include <string.h>

#include "grammar/grammar_internal.h"

#define INT_DIGITS 16 /* unbounded integers: at most this many digits */


/* Decimal digits of v (no leading zeros). */
static int u64str(uint64_t v, char *s) { return snprintf(s, 24, "%llu", (unsigned long long)v); }

static void digit_class(sbuf *o, char a, char b) {
    if (a == b) sb_printf(o, "[%c]", a);
    else sb_printf(o, "[%c-%c]", a, b);
}

/* Same-length decimal strings x <= y (d digits). */
static void same_len(sbuf *o, const char *x, const char *y, int d) {
    int i = 0;
    while (i < d && x[i] == y[i]) i++;
    if (i == d) {
        sb_putc(o, '"');
        sb_putn(o, x, (size_t)d);
        sb_putc(o, '"');
        return;
    }
    if (i > 0) {
        sb_putc(o, '"');
        sb_putn(o, x, (size_t)i);
        sb_puts(o, "\" ");
    }
    int rest = d - i - 1;
    if (rest == 0) {
        digit_class(o, x[i], y[i]);
        return;
    }
    const char *xs = x + i + 1, *ys = y + i + 1;
    bool xzero = true, ynine = true;
    for (int k = 0; k < rest; k++) {
        if (xs[k] != '0') xzero = false;
        if (ys[k] != '9') ynine = false;
    }
    char lo = x[i], hi = y[i];
    bool first = true;
    sb_putc(o, '(');
    if (!xzero) {
        char nines[24];
        memset(nines, '9', (size_t)rest);
        sb_printf(o, "\"%c\" ", x[i]);
        same_len(o, xs, nines, rest);
        lo = (char)(lo + 1);
        first = false;
    }
    if (!ynine) hi = (char)(hi - 1);
    if (lo <= hi) {
        if (!first) sb_puts(o, " | ");
        digit_class(o, lo, hi);
        sb_printf(o, " [0-9]{%d}", rest);
        first = false;
    }
    if (!ynine) {
        char zeros[24];
        memset(zeros, '0', (size_t)rest);
        if (!first) sb_puts(o, " | ");
        sb_printf(o, "\"%c\" ", y[i]);
        same_len(o, zeros, ys, rest);
    }
    sb_putc(o, ')');
}

/* Decimal numbers without leading zeros in [a, b]; unbounded: [a, inf) cut at
 * INT_DIGITS digits (or the digits of a). Emits alternatives. */
void uint_range(sbuf *o, uint64_t a, uint64_t b, bool unbounded) {
    char sa[24], sb_[24];
    int da = u64str(a, sa), db;
    if (unbounded) {
        db = da > INT_DIGITS ? da : INT_DIGITS;
    } else {
        db = u64str(b, sb_);
    }
    bool first = true;
    for (int d = da; d <= db; d++) {
        char lo[24], hi[24];
        if (d == da) memcpy(lo, sa, (size_t)d + 1);
        else lo[0] = '1', memset(lo + 1, '0', (size_t)d - 1), lo[d] = 0;
        if (!unbounded && d == db) memcpy(hi, sb_, (size_t)d + 1);
        else memset(hi, '9', (size_t)d), hi[d] = 0;
        if (!first) sb_puts(o, " | ");
        first = false;
        if (unbounded && d > da) { /* every longer number at once */
            if (db - 1 == da) sb_printf(o, "[1-9] [0-9]{%d}", da);
            else sb_printf(o, "[1-9] [0-9]{%d,%d}", da, db - 1);
            break;
        }
        same_len(o, lo, hi, d);
    }
}

/* Integers in [lo, hi] (either side may be open). Returns false if empty. */
bool int_range(sbuf *o, int64_t lo, int64_t hi, bool has_lo, bool has_hi) {
    bool any = false;
    /* non-negative part */
    if (!has_hi || hi >= 0) {
        uint64_t a = has_lo && lo > 0 ? (uint64_t)lo : 0;
        if (!has_hi || (uint64_t)hi >= a) {
            sb_putc(o, '(');
            uint_range(o, a, has_hi ? (uint64_t)hi : 0, !has_hi);
            sb_putc(o, ')');
            any = true;
        }
    }
    /* negative part: magnitudes [m_lo, m_hi] */
    if (!has_lo || lo < 0) {
        uint64_t m_lo = has_hi && hi < 0 ? (uint64_t)(-(hi + 1)) + 1 : 1;
        uint64_t m_hi = has_lo ? (uint64_t)(-(lo + 1)) + 1 : 0;
        if (!has_lo || m_hi >= m_lo) {
            if (any) sb_puts(o, " | ");
            sb_puts(o, "\"-\" (");
            uint_range(o, m_lo, m_hi, !has_lo);
            sb_putc(o, ')');
            any = true;
        }
    }
    return any;
}

/* Decimal numbers (no exponent) whose magnitude m = I + f (integer part I,
 * fraction f) lies between lm (exclusive if lex) and hm (exclusive if hex;
 * unbounded: no upper bound). Emits alternatives; false if none. */
bool magnitude_range(sbuf *o, uint64_t lm, bool lex, uint64_t hm, bool hex, bool unbounded) {
    static const char *const frac_any = "( \".\" [0-9]{1,16} )?";
    static const char *const frac_pos = "\".\" [0-9]{0,15} [1-9]";
    static const char *const frac_zero = "( \".\" [0]{1,16} )?";
    bool any = false;
    if (!unbounded && lm > hm) return false;
    if (!unbounded && lm == hm) {
        if (lex || hex) return false;
        sb_printf(o, "\"%llu\" %s", (unsigned long long)lm, frac_zero);
        return true;
    }
    /* I == lm */
    sb_printf(o, "\"%llu\" %s", (unsigned long long)lm, lex ? frac_pos : frac_any);
    any = true;
    /* lm < I < hm, or lm < I when unbounded */
    if (unbounded || hm - lm >= 2) {
        sb_puts(o, " | (");
        uint_range(o, lm + 1, unbounded ? 0 : hm - 1, unbounded);
        sb_printf(o, ") %s", frac_any);
    }
    /* I == hm */
    if (!unbounded && !hex) sb_printf(o, " | \"%llu\" %s", (unsigned long long)hm, frac_zero);
    return any;
}

