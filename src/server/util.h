/*
 * util.h (internal) - small helpers of the server module: a growable byte buffer,
 * clocks and RFC 3339 timestamps, Go duration strings, SHA-256, model-name
 * validation, glob matching and UTF-8 checks. Pure functions; thread-safe.
 */
#ifndef LOOM_SERVER_UTIL_H
#define LOOM_SERVER_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- growable byte buffer (always NUL-terminated when data != NULL) */
typedef struct srv_buf {
    char *data;
    size_t len, cap;
    bool oom; /* a failed append: the buffer keeps what it had */
} srv_buf;

bool srv_buf_reserve(srv_buf *b, size_t extra);
bool srv_buf_append(srv_buf *b, const void *p, size_t n);
bool srv_buf_puts(srv_buf *b, const char *s);
bool srv_buf_printf(srv_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Drop the first n bytes. */
void srv_buf_consume(srv_buf *b, size_t n);
void srv_buf_clear(srv_buf *b); /* len = 0, memory kept */
void srv_buf_free(srv_buf *b);

/* ---- clocks */
int64_t srv_now_ns(void);      /* CLOCK_REALTIME, ns since the Unix epoch */
int64_t srv_mono_ns(void);     /* CLOCK_MONOTONIC */

/* Go's time.RFC3339Nano: "2006-01-02T15:04:05.999999999Z07:00" (fraction without
 * trailing zeros, omitted when zero). utc: "Z"; else the local offset "+02:00".
 * out must hold 40 bytes. Returns out. */
char *srv_rfc3339nano(int64_t unix_ns, bool utc, char *out);

/* Go duration strings (time.ParseDuration: "300ms", "-1.5h", "1h30m", "0") plus
 * a bare number meaning seconds. Returns false on junk or overflow. */
bool srv_parse_duration(const char *s, int64_t *ns);

/* ---- SHA-256 (FIPS 180-4) */
typedef struct srv_sha256 {
    uint32_t h[8];
    uint64_t n;           /* bytes hashed */
    unsigned char blk[64];
    size_t fill;
} srv_sha256;
void srv_sha256_init(srv_sha256 *c);
void srv_sha256_update(srv_sha256 *c, const void *data, size_t n);
void srv_sha256_final(srv_sha256 *c, unsigned char out[32]);
/* Hex digest of a file (65 bytes incl. NUL); false on an I/O error. */
bool srv_sha256_file(const char *path, char hex[65]);
void srv_hex(const unsigned char *p, size_t n, char *out); /* 2n chars + NUL */

/* ---- names */
/* A model name as users write it: [host/][namespace/]name[:tag]. Allowed: ASCII
 * letters, digits, '_', '-', '.', at most one ':' (the tag) and '/' between
 * non-empty parts; no part "." or ".."; no leading '/', '.', '-'; total length
 * 1..255. On failure writes a reason into why (why_size bytes). */
bool srv_name_valid(const char *name, char *why, size_t why_size);
/* Canonical form: name with ":latest" when no tag is given (out_size bytes). */
bool srv_name_canonical(const char *name, char *out, size_t out_size);

/* Glob match where '*' matches any run of characters (case-sensitive). */
bool srv_glob_match(const char *pattern, const char *s);

/* Length of the longest prefix of s[0..n) that is complete UTF-8 (an incomplete
 * multi-byte sequence at the end is excluded; invalid bytes count as complete). */
size_t srv_utf8_complete_prefix(const char *s, size_t n);

/* Whether s[0..n) is only spaces, tabs, CR and LF (true for n == 0). */
bool srv_all_space(const char *s, size_t n);

/* An id "<prefix>_<16 hex digits>" from a splitmix64 stream (*state advances). */
void srv_make_id(uint64_t *state, const char *prefix, char *out, size_t out_size);

/* Human-readable parameter count as Ollama prints it: "8.0B", "494.03M", "260K". */
void srv_human_number(uint64_t n, char *out, size_t out_size);

#endif
