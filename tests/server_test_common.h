/* Helpers of the server tests (tests/test_server_*.c): test models, an in-process
 * server on a free port, a small HTTP/1.1 client over a socket (with chunked
 * transfer decoding), and running the `loom` CLI. Header-only. */
#ifndef LOOM_TEST_SERVER_COMMON_H
#define LOOM_TEST_SERVER_COMMON_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "loom_gguf.h"
#include "loom_server.h"
#include "test_util.h"

extern char **environ;

/* A ChatML chat template (Qwen's form without tools): what the test model carries. */
#define TEST_CHATML_TEMPLATE                                                                       \
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] " \
    "+ '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"

/* Copy src (all keys and tensors) to dst, adding tokenizer.chat_template = tmpl. */
static inline bool test_make_chat_model(const char *src, const char *dst, const char *tmpl) {
    loom_gguf *g = NULL;
    loom_error err = {0};
    if (loom_gguf_open(src, NULL, &g, &err)) {
        fprintf(stderr, "open %s: %s\n", src, err.msg);
        return false;
    }
    loom_gguf_writer *w = NULL;
    bool ok = loom_gguf_writer_new(&w) == LOOM_OK;
    for (int64_t i = 0; ok && i < loom_gguf_kv_count(g); i++) {
        const char *k = loom_gguf_kv_key(g, i);
        if (!strcmp(k, "general.alignment") || !strcmp(k, "tokenizer.chat_template")) continue;
        ok = loom_gguf_writer_copy_kv(w, g, i) == LOOM_OK;
    }
    if (ok && tmpl) ok = loom_gguf_writer_add_str(w, "tokenizer.chat_template", tmpl, strlen(tmpl)) == LOOM_OK;
    for (int64_t i = 0; ok && i < loom_gguf_tensor_count(g); i++) {
        const loom_gguf_tensor_info *ti = loom_gguf_tensor(g, i);
        ok = loom_gguf_writer_add_tensor(w, ti->name, ti->type, ti->n_dims, ti->ne, loom_gguf_tensor_data(g, i)) ==
             LOOM_OK;
    }
    if (ok && loom_gguf_writer_write_file(w, dst, &err)) {
        fprintf(stderr, "write %s: %s\n", dst, err.msg);
        ok = false;
    }
    loom_gguf_writer_free(w);
    loom_gguf_close(g);
    return ok;
}

static inline bool test_copy_file(const char *src, const char *dst) {
    FILE *a = fopen(src, "rb"), *b = fopen(dst, "wb");
    bool ok = a && b;
    char buf[1 << 16];
    size_t n;
    while (ok && (n = fread(buf, 1, sizeof buf, a)) > 0) ok = fwrite(buf, 1, n, b) == n;
    if (a) fclose(a);
    if (b && fclose(b)) ok = false;
    return ok;
}

/* A temporary directory with models/stories.gguf and models/tiny.gguf (+ template). */
static inline bool test_make_models(char *dir, size_t n) {
    snprintf(dir, n, "/tmp/loom-srvtest-XXXXXX");
    if (!mkdtemp(dir)) return false;
    char p[512], q[512];
    snprintf(p, sizeof p, "%s/models", dir);
    if (mkdir(p, 0755)) return false;
    snprintf(q, sizeof q, "%s/models/stories.gguf", dir);
    if (!test_copy_file(test_path("models/stories260K.gguf"), q)) return false;
    snprintf(q, sizeof q, "%s/models/tiny.gguf", dir);
    return test_make_chat_model(test_path("models/stories260K.gguf"), q, TEST_CHATML_TEMPLATE);
}

static inline void test_rm_rf(const char *dir) {
    char cmd[600];
    if (strncmp(dir, "/tmp/loom-srvtest-", 18)) return;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) {
    }
}

/* Parameters of an in-process test server: 127.0.0.1, a free port, models from
 * dir/models, no Ollama store, one thread, quiet unless LOOM_TEST_SERVER_LOG is set. */
static inline loom_server_params test_server_params(const char *dir, int parallel, int max_queue) {
    static char models[512];
    snprintf(models, sizeof models, "%s/models", dir);
    loom_server_params p = loom_server_default_params();
    p.port = 0;
    p.models_dir = models;
    p.ollama_dir = "";
    p.parallel = parallel;
    p.max_queue = max_queue;
    p.quiet = getenv("LOOM_TEST_SERVER_LOG") == NULL;
    p.model.n_threads = 1;
    return p;
}

static inline loom_server *test_server_start_p(const loom_server_params *p) {
    loom_server *s = NULL;
    loom_error err = {0};
    if (loom_server_new(p, &s, &err) || loom_server_listen(s, &err)) {
        fprintf(stderr, "server: %s\n", err.msg);
        loom_server_free(s);
        return NULL;
    }
    return s;
}

static inline loom_server *test_server_start(const char *dir, int parallel, int max_queue) {
    loom_server_params p = test_server_params(dir, parallel, max_queue);
    return test_server_start_p(&p);
}

/* ------------------------------------------------------------------ HTTP client */

typedef struct test_http {
    int status;
    char *headers;      /* raw header block */
    char *body;         /* decoded (chunked transfer removed), NUL-terminated */
    size_t body_len;
} test_http;

static inline void test_http_free(test_http *r) {
    free(r->headers);
    free(r->body);
    memset(r, 0, sizeof *r);
}

static inline int test_connect(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a)) {
        close(fd);
        return -1;
    }
    return fd;
}

static inline bool test_send_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p += w, n -= (size_t)w;
    }
    return true;
}

/* Send a request (Connection: close). extra_headers: "Name: value\r\n..." or NULL. */
static inline int test_http_send(int port, const char *method, const char *path, const char *body,
                                 const char *extra_headers) {
    int fd = test_connect(port);
    if (fd < 0) return -1;
    size_t bl = body ? strlen(body) : 0;
    char head[1024];
    int hn = snprintf(head, sizeof head,
                      "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%s%s%s"
                      "Content-Length: %zu\r\n\r\n",
                      method, path, body ? "Content-Type: application/json\r\n" : "",
                      extra_headers ? extra_headers : "", "", bl);
    if (!test_send_all(fd, head, (size_t)hn) || (bl && !test_send_all(fd, body, bl))) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Read everything until the server closes; split headers; de-chunk. */
static inline bool test_http_read(int fd, test_http *r) {
    memset(r, 0, sizeof *r);
    size_t cap = 1 << 16, len = 0;
    char *raw = malloc(cap);
    for (;;) {
        if (len + 4096 > cap) raw = realloc(raw, cap *= 2);
        ssize_t n = recv(fd, raw + len, cap - len - 1, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        len += (size_t)n;
    }
    raw[len] = 0;
    char *sep = strstr(raw, "\r\n\r\n");
    if (!sep || sscanf(raw, "HTTP/1.%*d %d", &r->status) != 1) {
        free(raw);
        return false;
    }
    r->headers = strndup(raw, (size_t)(sep - raw));
    const char *b = sep + 4;
    size_t bl = len - (size_t)(b - raw);
    r->body = malloc(bl + 1);
    if (strcasestr(r->headers, "transfer-encoding: chunked")) {
        size_t o = 0;
        const char *p = b, *end = b + bl;
        while (p < end) {
            char *e;
            unsigned long cs = strtoul(p, &e, 16);
            const char *crlf = strstr(p, "\r\n");
            if (!crlf || cs == 0) break;
            p = crlf + 2;
            if (p + cs > end) cs = (size_t)(end - p);
            memcpy(r->body + o, p, cs);
            o += cs;
            p += cs + 2;
            (void)e;
        }
        r->body_len = o;
    } else {
        memcpy(r->body, b, bl);
        r->body_len = bl;
    }
    r->body[r->body_len] = 0;
    free(raw);
    return true;
}

static inline bool test_http_do(int port, const char *method, const char *path, const char *body,
                                const char *extra_headers, test_http *r) {
    int fd = test_http_send(port, method, path, body, extra_headers);
    if (fd < 0) {
        memset(r, 0, sizeof *r);
        return false;
    }
    bool ok = test_http_read(fd, r);
    close(fd);
    return ok;
}

/* Header value (case-insensitive name) or NULL; copies into buf. */
static inline const char *test_http_header(const test_http *r, const char *name, char *buf, size_t n) {
    if (!r->headers) return NULL;
    size_t nl = strlen(name);
    for (const char *p = r->headers; p && *p;) {
        const char *eol = strstr(p, "\r\n");
        size_t ll = eol ? (size_t)(eol - p) : strlen(p);
        if (ll > nl && !strncasecmp(p, name, nl) && p[nl] == ':') {
            const char *v = p + nl + 1;
            while (*v == ' ') v++;
            snprintf(buf, n, "%.*s", (int)(ll - (size_t)(v - p)), v);
            return buf;
        }
        p = eol ? eol + 2 : NULL;
    }
    return NULL;
}

/* ------------------------------------------------------------------ processes */

/* Run argv, capture stdout (malloc'ed); returns the exit status or -1. */
static inline int test_run_capture(char *const argv[], char **out) {
    test_clean_env(); /* the child CLI must not see a developer's or CI's LOOM_* settings */
    int pfd[2];
    if (pipe(pfd)) return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
    posix_spawn_file_actions_addclose(&fa, pfd[0]);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(pfd[1]);
    if (rc) {
        close(pfd[0]);
        return -1;
    }
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    ssize_t n;
    while ((n = read(pfd[0], buf + len, cap - len - 1)) > 0) {
        len += (size_t)n;
        if (len + 1 >= cap) buf = realloc(buf, cap *= 2);
    }
    buf[len] = 0;
    close(pfd[0]);
    int st;
    waitpid(pid, &st, 0);
    *out = buf;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Run argv with stdout and stderr on /dev/null (for programs that leave daemons
 * holding their output, like tmux's server); returns the exit status or -1. */
static inline int test_run_quiet(char *const argv[]) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc) return -1;
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* `loom run MODEL -p PROMPT --temp 0 -n N`: the generated text (prompt echo and the
 * final newline removed), malloc'ed, or NULL. */
/* `loom run` greedy with flash attention, the server's default (same arithmetic). */
static inline char *test_loom_run_greedy(const char *model, const char *prompt, int n) {
    const char *bin = getenv("LOOM_BIN");
    if (!bin) return NULL;
    char nb[16];
    snprintf(nb, sizeof nb, "%d", n);
    char *argv[] = {(char *)bin, "run", (char *)model, "-p", (char *)prompt, "--temp", "0", "-n", nb, "-t", "1", "-fa", NULL};
    char *out = NULL;
    if (test_run_capture(argv, &out) != 0) {
        free(out);
        return NULL;
    }
    size_t pl = strlen(prompt), ol = strlen(out);
    if (ol < pl + 1 || strncmp(out, prompt, pl) || out[ol - 1] != '\n') {
        free(out);
        return NULL;
    }
    out[ol - 1] = 0;
    memmove(out, out + pl, ol - pl);
    return out;
}

#endif
