/* util.c - byte buffer, clocks, RFC 3339, Go durations, SHA-256, names, globs. */
#include "server/util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "quant/alloc.h"

/* ------------------------------------------------------------------ buffer */

bool srv_buf_reserve(srv_buf *b, size_t extra) {
    if (b->oom) return false;
    if (extra > SIZE_MAX / 2 - b->len) {
        b->oom = true;
        return false;
    }
    size_t need = b->len + extra + 1;
    if (need <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need) cap *= 2;
    char *d = loom_realloc(b->data, cap);
    if (!d) {
        b->oom = true;
        return false;
    }
    b->data = d;
    b->cap = cap;
    return true;
}

bool srv_buf_append(srv_buf *b, const void *p, size_t n) {
    if (!srv_buf_reserve(b, n)) return false;
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = 0;
    return true;
}

bool srv_buf_puts(srv_buf *b, const char *s) { return srv_buf_append(b, s, strlen(s)); }

bool srv_buf_printf(srv_buf *b, const char *fmt, ...) {
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return false;
    if ((size_t)n < sizeof tmp) return srv_buf_append(b, tmp, (size_t)n);
    if (!srv_buf_reserve(b, (size_t)n)) return false;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return true;
}

void srv_buf_consume(srv_buf *b, size_t n) {
    if (n >= b->len) {
        b->len = 0;
    } else {
        memmove(b->data, b->data + n, b->len - n);
        b->len -= n;
    }
    if (b->data) b->data[b->len] = 0;
}

void srv_buf_clear(srv_buf *b) {
    b->len = 0;
    if (b->data) b->data[0] = 0;
}

void srv_buf_free(srv_buf *b) {
    loom_free(b->data);
    memset(b, 0, sizeof *b);
}

/* ------------------------------------------------------------------ clocks */

int64_t srv_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t srv_mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

char *srv_rfc3339nano(int64_t unix_ns, bool utc, char *out) {
    int64_t sec = unix_ns / 1000000000, frac = unix_ns % 1000000000;
    if (frac < 0) {
        frac += 1000000000;
        sec--;
    }
    time_t t = (time_t)sec;
    struct tm tm;
    long off = 0;
    if (utc) {
        gmtime_r(&t, &tm);
    } else {
        localtime_r(&t, &tm);
        off = tm.tm_gmtoff;
    }
    size_t n = strftime(out, 40, "%Y-%m-%dT%H:%M:%S", &tm);
    if (frac) {
        char f[16];
        snprintf(f, sizeof f, ".%09lld", (long long)frac);
        size_t fl = strlen(f);
        while (fl > 1 && f[fl - 1] == '0') f[--fl] = 0;
        memcpy(out + n, f, fl + 1);
        n += fl;
    }
    if (utc || off == 0) {
        /* Go prints "Z" for UTC only; a local zone at offset 0 is "+00:00" unless it is UTC */
        if (utc) {
            out[n++] = 'Z';
            out[n] = 0;
            return out;
        }
    }
    char sign = off < 0 ? '-' : '+';
    if (off < 0) off = -off;
    snprintf(out + n, 40 - n, "%c%02ld:%02ld", sign, off / 3600, (off / 60) % 60);
    return out;
}

/* time.ParseDuration: [-+]?([0-9]*(\.[0-9]*)?[a-z]+)+, or "0". */
bool srv_parse_duration(const char *s, int64_t *ns) {
    if (!s || !*s) return false;
    const char *p = s;
    bool neg = false;
    if (*p == '-' || *p == '+') neg = *p++ == '-';
    if (!strcmp(p, "0")) {
        *ns = 0;
        return true;
    }
    /* a bare number: seconds (Ollama's OLLAMA_KEEP_ALIVE convention) */
    {
        char *end;
        errno = 0;
        double v = strtod(p, &end);
        if (end != p && !*end && !errno && isfinite(v) && (isdigit((unsigned char)*p) || *p == '.')) {
            double x = v * 1e9;
            if (x > 9.2e18) return false;
            *ns = (int64_t)(neg ? -x : x);
            return true;
        }
    }
    if (!*p) return false;
    double total = 0;
    while (*p) {
        if (!(isdigit((unsigned char)*p) || *p == '.')) return false;
        const char *q = p;
        double whole = 0, frac = 0, scale = 1;
        bool digits = false;
        while (isdigit((unsigned char)*q)) whole = whole * 10 + (*q++ - '0'), digits = true;
        if (*q == '.') {
            q++;
            while (isdigit((unsigned char)*q)) frac = frac * 10 + (*q++ - '0'), scale *= 10, digits = true;
        }
        if (!digits) return false;
        const char *u = q;
        while (*q && !isdigit((unsigned char)*q) && *q != '.') q++;
        size_t ul = (size_t)(q - u);
        double unit;
        if (ul == 2 && !strncmp(u, "ns", 2)) unit = 1;
        else if (ul == 2 && !strncmp(u, "us", 2)) unit = 1e3;
        else if (ul == 3 && !strncmp(u, "\xc2\xb5s", 3)) unit = 1e3; /* µs (micro sign) */
        else if (ul == 3 && !strncmp(u, "\xce\xbcs", 3)) unit = 1e3; /* μs (Greek mu) */
        else if (ul == 2 && !strncmp(u, "ms", 2)) unit = 1e6;
        else if (ul == 1 && *u == 's') unit = 1e9;
        else if (ul == 1 && *u == 'm') unit = 60e9;
        else if (ul == 1 && *u == 'h') unit = 3600e9;
        else return false;
        total += (whole + frac / scale) * unit;
        if (total > 9.2e18) return false;
        p = q;
    }
    *ns = (int64_t)(neg ? -total : total);
    return true;
}

/* ------------------------------------------------------------------ SHA-256 */

static const uint32_t K256[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static inline uint32_t ror32(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void sha256_block(uint32_t h[8], const unsigned char *p) {
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ror32(w[i - 15], 7) ^ ror32(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ror32(w[i - 2], 17) ^ ror32(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t S1 = ror32(e, 6) ^ ror32(e, 11) ^ ror32(e, 25);
        uint32_t ch = (e & f) ^ (~e & g);
        uint32_t t1 = hh + S1 + ch + K256[i] + w[i];
        uint32_t S0 = ror32(a, 2) ^ ror32(a, 13) ^ ror32(a, 22);
        uint32_t mj = (a & b) ^ (a & c) ^ (b & c);
        uint32_t t2 = S0 + mj;
        hh = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
}

void srv_sha256_init(srv_sha256 *c) {
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(c->h, h0, sizeof h0);
    c->n = 0;
    c->fill = 0;
}

void srv_sha256_update(srv_sha256 *c, const void *data, size_t n) {
    const unsigned char *p = data;
    c->n += n;
    if (c->fill) {
        size_t t = 64 - c->fill < n ? 64 - c->fill : n;
        memcpy(c->blk + c->fill, p, t);
        c->fill += t, p += t, n -= t;
        if (c->fill < 64) return;
        sha256_block(c->h, c->blk);
        c->fill = 0;
    }
    for (; n >= 64; p += 64, n -= 64) sha256_block(c->h, p);
    memcpy(c->blk, p, n);
    c->fill = n;
}

void srv_sha256_final(srv_sha256 *c, unsigned char out[32]) {
    uint64_t bits = c->n * 8;
    unsigned char pad = 0x80;
    srv_sha256_update(c, &pad, 1);
    unsigned char z = 0;
    while (c->fill != 56) srv_sha256_update(c, &z, 1);
    unsigned char len[8];
    for (int i = 0; i < 8; i++) len[i] = (unsigned char)(bits >> (56 - 8 * i));
    srv_sha256_update(c, len, 8);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (unsigned char)(c->h[i] >> 24);
        out[4 * i + 1] = (unsigned char)(c->h[i] >> 16);
        out[4 * i + 2] = (unsigned char)(c->h[i] >> 8);
        out[4 * i + 3] = (unsigned char)c->h[i];
    }
}

void srv_hex(const unsigned char *p, size_t n, char *out) {
    static const char hx[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) out[2 * i] = hx[p[i] >> 4], out[2 * i + 1] = hx[p[i] & 15];
    out[2 * n] = 0;
}

bool srv_sha256_file(const char *path, char hex[65]) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    enum { CHUNK = 1 << 20 };
    unsigned char *buf = loom_malloc(CHUNK);
    if (!buf) {
        close(fd);
        return false;
    }
    srv_sha256 c;
    srv_sha256_init(&c);
    bool ok = true;
    for (;;) {
        ssize_t r = read(fd, buf, CHUNK);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            ok = false;
            break;
        }
        if (r == 0) break;
        srv_sha256_update(&c, buf, (size_t)r);
    }
    loom_free(buf);
    close(fd);
    if (!ok) return false;
    unsigned char d[32];
    srv_sha256_final(&c, d);
    srv_hex(d, 32, hex);
    return true;
}

/* ------------------------------------------------------------------ names */

static void why_set(char *why, size_t n, const char *msg) {
    if (why && n) snprintf(why, n, "%s", msg);
}

bool srv_name_valid(const char *name, char *why, size_t why_size) {
    if (!name || !*name) {
        why_set(why, why_size, "the name is empty");
        return false;
    }
    size_t len = strlen(name);
    if (len > 255) {
        why_set(why, why_size, "the name is longer than 255 bytes");
        return false;
    }
    int colons = 0;
    const char *part = name;
    for (const char *p = name;; p++) {
        char c = *p;
        if (c == '/' || c == ':' || c == 0) {
            size_t pl = (size_t)(p - part);
            if (pl == 0) {
                why_set(why, why_size, "the name has an empty part");
                return false;
            }
            if ((pl == 1 && part[0] == '.') || (pl == 2 && part[0] == '.' && part[1] == '.')) {
                why_set(why, why_size, "the name has a '.' or '..' part");
                return false;
            }
            if (part[0] == '.' || part[0] == '-') {
                why_set(why, why_size, "a part of the name starts with '.' or '-'");
                return false;
            }
            if (c == 0) break;
            if (c == ':') {
                if (++colons > 1) {
                    why_set(why, why_size, "the name has more than one ':'");
                    return false;
                }
            } else if (colons) {
                why_set(why, why_size, "'/' after the tag");
                return false;
            }
            part = p + 1;
            continue;
        }
        if (!(isalnum((unsigned char)c) || c == '_' || c == '-' || c == '.')) {
            why_set(why, why_size, "the name has a character outside [A-Za-z0-9_.-:/]");
            return false;
        }
    }
    return true;
}

bool srv_name_canonical(const char *name, char *out, size_t out_size) {
    if (!srv_name_valid(name, NULL, 0)) return false;
    int n = strchr(name, ':') ? snprintf(out, out_size, "%s", name) : snprintf(out, out_size, "%s:latest", name);
    return n > 0 && (size_t)n < out_size;
}

bool srv_glob_match(const char *pat, const char *s) {
    const char *star = NULL, *ss = NULL;
    while (*s) {
        if (*pat == '*') {
            star = pat++;
            ss = s;
        } else if (*pat == *s) {
            pat++, s++;
        } else if (star) {
            pat = star + 1;
            s = ++ss;
        } else {
            return false;
        }
    }
    while (*pat == '*') pat++;
    return !*pat;
}

size_t srv_utf8_complete_prefix(const char *s, size_t n) {
    /* look back at most 3 bytes for the start of a multi-byte sequence */
    size_t i = n, back = 0;
    while (i > 0 && back < 4) {
        unsigned char c = (unsigned char)s[i - 1];
        if ((c & 0xC0) != 0x80) { /* a lead byte or ASCII */
            size_t need = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
            size_t have = n - (i - 1);
            return have < need ? i - 1 : n;
        }
        i--, back++;
    }
    return n;
}

void srv_human_number(uint64_t b, char *out, size_t n) {
    const double B = 1e9, M = 1e6, K = 1e3;
    double v;
    if (b >= 1000000000ull) {
        v = (double)b / B;
        snprintf(out, n, v == floor(v) ? "%.0fB" : "%.1fB", v);
    } else if (b >= 1000000ull) {
        v = (double)b / M;
        snprintf(out, n, v == floor(v) ? "%.0fM" : "%.2fM", v);
    } else if (b >= 1000ull) {
        snprintf(out, n, "%.0fK", (double)b / K);
    } else {
        snprintf(out, n, "%llu", (unsigned long long)b);
    }
}

bool srv_all_space(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\n' && s[i] != '\t' && s[i] != '\r') return false;
    return true;
}

void srv_make_id(uint64_t *state, const char *prefix, char *out, size_t out_size) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    snprintf(out, out_size, "%s_%016llx", prefix, (unsigned long long)z);
}
