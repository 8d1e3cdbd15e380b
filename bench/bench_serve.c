/* loom bench serve --model NAME [--url http://127.0.0.1:11434] [--clients 8]
 *                  [--requests 3] [-n 128] [--prompt-words 64] [--json]
 *
 * A load generator for OpenAI-compatible servers (`loom serve`, llama-server): each
 * of --clients threads sends --requests streaming POST /v1/completions one after the
 * other (temperature 0, max_tokens n, a prompt of --prompt-words words, different
 * per client), after one untimed warm-up request per client. It reports the
 * aggregate generation rate (generated tokens of all clients / wall time of the
 * timed phase), the time to first token (request sent -> first text chunk; median
 * and max) and the per-stream rate. Tokens are counted from the usage chunk
 * (stream_options.include_usage) when the server sends one, else one per text
 * chunk. Plain sockets and HTTP/1.1 (chunked transfer decoded); no other
 * dependency. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "cli_util.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

typedef struct bconf {
    char host[256];
    int port;
    const char *model;
    int clients, requests, n, words;
} bconf;

typedef struct breq {
    double ttft, dur;
    int tokens;
    bool ok;
} breq;

typedef struct bclient {
    const bconf *c;
    int id;
    breq *res;      /* [requests] */
    breq warm;
    pthread_barrier_t *bar;
} bclient;

static const char *const k_words[] = {"the", "little", "girl", "saw", "a", "big", "red", "ball", "in", "park",
                                      "and", "she", "was", "very", "happy", "to", "play", "with", "her", "friend"};

static int dial(const bconf *c) {
    struct addrinfo hints = {0}, *ai = NULL;
    hints.ai_socktype = SOCK_STREAM;
    char port[16];
    snprintf(port, sizeof port, "%d", c->port);
    if (getaddrinfo(c->host, port, &hints, &ai) || !ai) return -1;
    int fd = socket(ai->ai_family, SOCK_STREAM, 0);
    if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen)) {
        close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    return fd;
}

/* Incremental chunked-transfer decoding of the body into SSE events. */
typedef struct sse_state {
    char line[1 << 16];
    size_t ll;
    double t0, ttft;
    int chunks, usage_tokens;
    bool done;
} sse_state;

static void sse_byte(sse_state *s, char c) {
    if (c != '\n') {
        if (s->ll + 1 < sizeof s->line) s->line[s->ll++] = c;
        return;
    }
    s->line[s->ll] = 0;
    if (!strncmp(s->line, "data: ", 6)) {
        const char *d = s->line + 6;
        if (!strcmp(d, "[DONE]")) {
            s->done = true;
        } else {
            const char *t = strstr(d, "\"text\":\"");
            if (t && t[8] != '"') {
                if (!s->chunks) s->ttft = now_s() - s->t0;
                s->chunks++;
            }
            const char *u = strstr(d, "\"completion_tokens\":");
            if (u) s->usage_tokens = atoi(u + 20);
        }
    }
    s->ll = 0;
}

static bool one_request(const bconf *c, int client, int r, breq *out) {
    memset(out, 0, sizeof *out);
    char prompt[8192];
    size_t o = 0;
    for (int i = 0; i < c->words && o + 16 < sizeof prompt; i++)
        o += (size_t)snprintf(prompt + o, sizeof prompt - o, "%s%s", i ? " " : "", k_words[(i * 7 + client * 3 + r) % 20]);
    char body[9000];
    int bl = snprintf(body, sizeof body,
                      "{\"model\":\"%s\",\"prompt\":\"%s\",\"max_tokens\":%d,\"temperature\":0,\"stream\":true,"
                      "\"stream_options\":{\"include_usage\":true}}",
                      c->model, prompt, c->n);
    char head[512];
    int hl = snprintf(head, sizeof head,
                      "POST /v1/completions HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
                      "Content-Length: %d\r\nConnection: close\r\n\r\n", c->host, c->port, bl);
    sse_state *s = calloc(1, sizeof *s);
    if (!s) return false;
    s->t0 = now_s();
    int fd = dial(c);
    bool ok = fd >= 0 && send(fd, head, (size_t)hl, MSG_NOSIGNAL) == hl && send(fd, body, (size_t)bl, MSG_NOSIGNAL) == bl;
    /* headers, then chunked body */
    char buf[16384];
    size_t hb = 0;
    bool in_body = false, chunked = false;
    char hdr[4096];
    long chunk_left = -1; /* -1: reading a size line */
    char sizeline[32];
    size_t sl = 0;
    int status = 0;
    while (ok && !s->done) {
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        for (ssize_t i = 0; i < n; i++) {
            char ch = buf[i];
            if (!in_body) {
                if (hb + 1 < sizeof hdr) hdr[hb++] = ch;
                if (hb >= 4 && !memcmp(hdr + hb - 4, "\r\n\r\n", 4)) {
                    hdr[hb] = 0;
                    in_body = true;
                    sscanf(hdr, "HTTP/1.%*d %d", &status);
                    chunked = strcasestr(hdr, "transfer-encoding: chunked") != NULL;
                }
                continue;
            }
            if (!chunked) {
                sse_byte(s, ch);
                continue;
            }
            if (chunk_left < 0) { /* size line */
                if (ch == '\n') {
                    sizeline[sl] = 0;
                    chunk_left = strtol(sizeline, NULL, 16);
                    sl = 0;
                    if (chunk_left == 0) s->done = true;
                } else if (ch != '\r' && sl + 1 < sizeof sizeline) {
                    sizeline[sl++] = ch;
                }
            } else if (chunk_left > 0) {
                sse_byte(s, ch);
                chunk_left--;
            } else if (ch == '\n') { /* CRLF after the chunk */
                chunk_left = -1;
            }
        }
    }
    if (fd >= 0) close(fd);
    out->dur = now_s() - s->t0;
    out->ttft = s->ttft;
    out->tokens = s->usage_tokens ? s->usage_tokens : s->chunks;
    out->ok = ok && status == 200 && s->chunks > 0;
    free(s);
    return out->ok;
}

static void *client_main(void *arg) {
    bclient *b = arg;
    one_request(b->c, b->id, -1, &b->warm); /* warm-up: loads the model, fills caches */
    pthread_barrier_wait(b->bar);
    for (int r = 0; r < b->c->requests; r++) one_request(b->c, b->id, r, &b->res[r]);
    return NULL;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static bool parse_url(const char *u, bconf *c) {
    if (!strncmp(u, "http://", 7)) u += 7;
    const char *colon = strrchr(u, ':');
    const char *slash = strchr(u, '/');
    size_t hl = colon ? (size_t)(colon - u) : slash ? (size_t)(slash - u) : strlen(u);
    if (!hl || hl >= sizeof c->host) return false;
    memcpy(c->host, u, hl);
    c->host[hl] = 0;
    c->port = colon ? atoi(colon + 1) : 80;
    return c->port > 0;
}

int loom_bench_serve(int argc, char **argv) {
    bconf c = {.port = 11434, .clients = 8, .requests = 3, .n = 128, .words = 64};
    snprintf(c.host, sizeof c.host, "127.0.0.1");
    bool json = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long x;
        if (!strcmp(a, "--url") && v) {
            if (!parse_url(v, &c)) goto bad;
            i++;
        } else if (!strcmp(a, "--model") && v) {
            c.model = v, i++;
        } else if (!strcmp(a, "--clients") && v && cli_parse_ll(v, 1, 1024, &x)) {
            c.clients = (int)x, i++;
        } else if (!strcmp(a, "--requests") && v && cli_parse_ll(v, 1, 100000, &x)) {
            c.requests = (int)x, i++;
        } else if (!strcmp(a, "-n") && v && cli_parse_ll(v, 1, 1 << 20, &x)) {
            c.n = (int)x, i++;
        } else if (!strcmp(a, "--prompt-words") && v && cli_parse_ll(v, 1, 1000, &x)) {
            c.words = (int)x, i++;
        } else if (!strcmp(a, "--json")) {
            json = true;
        } else {
            goto bad;
        }
        continue;
    bad:
        fprintf(stderr, "usage: loom bench serve --model NAME [--url http://127.0.0.1:11434] [--clients 8] "
                        "[--requests 3] [-n 128] [--prompt-words 64] [--json]\n(bad or unknown option '%s')\n", a);
        return 2;
    }
    if (!c.model) {
        fprintf(stderr, "loom bench serve: --model NAME is required\n");
        return 2;
    }
    bclient *cl = calloc((size_t)c.clients, sizeof *cl);
    pthread_t *th = calloc((size_t)c.clients, sizeof *th);
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)c.clients + 1);
    for (int i = 0; i < c.clients; i++) {
        cl[i] = (bclient){.c = &c, .id = i, .bar = &bar};
        cl[i].res = calloc((size_t)c.requests, sizeof *cl[i].res);
        pthread_create(&th[i], NULL, client_main, &cl[i]);
    }
    pthread_barrier_wait(&bar);
    double t0 = now_s();
    for (int i = 0; i < c.clients; i++) pthread_join(th[i], NULL);
    double wall = now_s() - t0;
    int n_req = c.clients * c.requests, ok = 0;
    long tokens = 0;
    double *ttft = calloc((size_t)n_req, sizeof *ttft), *rate = calloc((size_t)n_req, sizeof *rate);
    for (int i = 0; i < c.clients; i++)
        for (int r = 0; r < c.requests; r++) {
            const breq *q = &cl[i].res[r];
            if (!q->ok) continue;
            ttft[ok] = q->ttft;
            rate[ok] = q->dur > q->ttft ? (q->tokens - 1) / (q->dur - q->ttft) : 0;
            tokens += q->tokens;
            ok++;
        }
    qsort(ttft, (size_t)ok, sizeof *ttft, cmp_d);
    qsort(rate, (size_t)ok, sizeof *rate, cmp_d);
    double agg = wall > 0 ? tokens / wall : 0;
    double ttft_med = ok ? ttft[ok / 2] : 0, ttft_max = ok ? ttft[ok - 1] : 0, rate_med = ok ? rate[ok / 2] : 0;
    if (json)
        printf("{\"url\":\"http://%s:%d\",\"model\":\"%s\",\"clients\":%d,\"requests\":%d,\"ok\":%d,\"n\":%d,"
               "\"prompt_words\":%d,\"tokens\":%ld,\"wall_s\":%.3f,\"agg_tps\":%.2f,\"ttft_median_ms\":%.1f,"
               "\"ttft_max_ms\":%.1f,\"stream_tps_median\":%.2f}\n",
               c.host, c.port, c.model, c.clients, n_req, ok, c.n, c.words, tokens, wall, agg, ttft_med * 1e3,
               ttft_max * 1e3, rate_med);
    else
        printf("%d clients x %d requests (%d ok), %ld tokens in %.2f s: aggregate %.2f tok/s; time to first token "
               "median %.0f ms (max %.0f ms); per stream median %.2f tok/s\n",
               c.clients, c.requests, ok, tokens, wall, agg, ttft_med * 1e3, ttft_max * 1e3, rate_med);
    for (int i = 0; i < c.clients; i++) free(cl[i].res);
    free(cl);
    free(th);
    free(ttft);
    free(rate);
    pthread_barrier_destroy(&bar);
    return ok == n_req ? 0 : 1;
}
