/*
 * http.c - the HTTP/1.1 transport on libmicrohttpd: one thread per connection
 * (poll-based, so descriptors above FD_SETSIZE work), bodies up to max_body (413
 * beyond, checked on Content-Length before reading), slow uploads cut off, CORS
 * headers, and streaming bodies through a content-reader callback that blocks on
 * the generation's eventfd and the client's socket: a client that disconnects is
 * seen at once (POLLRDHUP) and its generation is cancelled, freeing the slot at
 * the engine's next step.
 */
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "quant/alloc.h"
#include "server/server_internal.h"

typedef struct conn_ctx {
    int64_t t0;
    srv_buf body;
    bool too_large, answered;
} conn_ctx;

typedef struct stream_ctx {
    loom_server *s;
    srv_stream *st;
    srv_buf pending;
    int fd;
    bool ended, gone;
} stream_ctx;

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    stream_ctx *x = cls;
    for (;;) {
        if (x->pending.len) {
            size_t n = x->pending.len < max ? x->pending.len : max;
            memcpy(buf, x->pending.data, n);
            srv_buf_consume(&x->pending, n);
            return (ssize_t)n;
        }
        if (x->ended) return MHD_CONTENT_READER_END_OF_STREAM;
        if (srv_stream_next(x->st, &x->pending) == 0) x->ended = true;
        if (x->pending.oom) {
            x->gone = false;
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        if (x->pending.len || x->ended) continue;
        struct pollfd p[2] = {{.fd = srv_stream_fd(x->st), .events = POLLIN}, {.fd = x->fd, .events = POLLRDHUP}};
        int r = poll(p, x->fd >= 0 ? 2 : 1, 1000);
        if (r > 0 && (p[0].revents & POLLIN)) {
            uint64_t v;
            ssize_t rr = read(p[0].fd, &v, sizeof v);
            (void)rr;
        }
        if (r > 0 && x->fd >= 0 && (p[1].revents & (POLLRDHUP | POLLHUP | POLLERR))) {
            x->gone = true;
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
    }
}

static void stream_free(void *cls) {
    stream_ctx *x = cls;
    srv_stream_close(x->st, x->gone || !x->ended);
    srv_buf_free(&x->pending);
    atomic_fetch_sub(&x->s->metrics.in_flight, 1);
    loom_free(x);
}

static const char *k_allow_headers =
    "Authorization, Content-Type, User-Agent, Accept, X-Requested-With, X-Stainless-Lang, "
    "X-Stainless-Package-Version, X-Stainless-OS, X-Stainless-Arch, X-Stainless-Retry-Count, "
    "X-Stainless-Runtime, X-Stainless-Runtime-Version, X-Stainless-Async, X-Stainless-Helper-Method, "
    "X-Stainless-Poll-Helper, X-Stainless-Custom-Poll-Interval, X-Stainless-Timeout";

static void add_cors(struct MHD_Connection *c, struct MHD_Response *r, const char *origin, bool preflight) {
    if (!origin) return;
    MHD_add_response_header(r, "Access-Control-Allow-Origin", origin);
    MHD_add_response_header(r, "Vary", "Origin");
    if (preflight) {
        MHD_add_response_header(r, "Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS");
        const char *rh = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Access-Control-Request-Headers");
        MHD_add_response_header(r, "Access-Control-Allow-Headers", rh && *rh ? rh : k_allow_headers);
        MHD_add_response_header(r, "Access-Control-Max-Age", "43200");
    }
}

static enum MHD_Result queue_body(struct MHD_Connection *c, int status, const char *ctype, const char *data,
                                  size_t len, const char *origin, const char *allow, bool preflight) {
    struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)data, MHD_RESPMEM_MUST_COPY);
    if (!r) return MHD_NO;
    if (ctype && len) MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    if (allow) MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
    if (status == 503) MHD_add_response_header(r, "x-should-retry", "false");
    add_cors(c, r, origin, preflight);
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result too_large(loom_server *s, struct MHD_Connection *c, const char *url, const char *method,
                                 conn_ctx *cc) {
    char msg[160];
    snprintf(msg, sizeof msg, "{\"error\":\"request body too large (the limit is %zu bytes)\"}", s->p.max_body);
    cc->answered = true;
    srv_log_request(s, method, url, 413, NULL, 0, 0, srv_mono_ns() - cc->t0);
    return queue_body(c, 413, "application/json; charset=utf-8", msg, strlen(msg), NULL, NULL, false);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_size, void **con_cls) {
    (void)version;
    loom_server *s = cls;
    conn_ctx *cc = *con_cls;
    if (!cc) {
        cc = loom_calloc(1, sizeof *cc);
        if (!cc) return MHD_NO;
        cc->t0 = srv_mono_ns();
        *con_cls = cc;
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl) {
            char *end;
            errno = 0;
            unsigned long long n = strtoull(cl, &end, 10);
            if (errno || *end || n > s->p.max_body) return too_large(s, c, url, method, cc);
        }
        return MHD_YES;
    }
    if (cc->answered) {
        *upload_size = 0;
        return MHD_YES;
    }
    if (*upload_size) {
        if (!cc->too_large) {
            if (cc->body.len + *upload_size > s->p.max_body || !srv_buf_append(&cc->body, upload_data, *upload_size))
                cc->too_large = true;
        }
        *upload_size = 0;
        if (srv_mono_ns() - cc->t0 > (int64_t)s->p.timeout_s * 4 * 1000000000) {
            cc->answered = true;
            srv_log_request(s, method, url, 408, NULL, 0, 0, srv_mono_ns() - cc->t0);
            const char *m = "{\"error\":\"the request body arrived too slowly\"}";
            return queue_body(c, 408, "application/json; charset=utf-8", m, strlen(m), NULL, NULL, false);
        }
        return MHD_YES;
    }
    if (cc->too_large) return too_large(s, c, url, method, cc);
    cc->answered = true;

    const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
    srv_request rq = {.method = method, .path = url, .body = cc->body.data ? cc->body.data : "",
                      .body_len = cc->body.len, .origin = origin};
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    srv_conn conn = {.fd = ci ? ci->connect_fd : -1};
    srv_response out;
    atomic_fetch_add(&s->metrics.in_flight, 1);
    srv_handle(s, &rq, &conn, &out);
    bool allowed = origin && srv_origin_allowed(s, origin);
    if (out.stream) {
        stream_ctx *x = loom_calloc(1, sizeof *x);
        struct MHD_Response *r = x ? MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, stream_reader, x,
                                                                      stream_free)
                                   : NULL;
        if (!r) {
            loom_free(x);
            srv_response_free(&out); /* closes the stream (cancels) */
            atomic_fetch_sub(&s->metrics.in_flight, 1);
            return MHD_NO;
        }
        x->s = s;
        x->st = out.stream;
        x->fd = conn.fd;
        out.stream = NULL;
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, out.content_type);
        MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
        add_cors(c, r, allowed ? origin : NULL, false);
        enum MHD_Result ret = MHD_queue_response(c, (unsigned)out.status, r);
        MHD_destroy_response(r); /* stream_free runs when MHD is done with it */
        srv_response_free(&out);
        return ret;
    }
    enum MHD_Result ret = MHD_YES;
    if (out.status != 499) /* 499: the client is gone, nothing to send */
        ret = queue_body(c, out.status, out.content_type, out.body.data ? out.body.data : "", out.body.len,
                         allowed ? origin : NULL, out.allow, out.cors_preflight);
    else
        ret = MHD_NO;
    srv_log_request(s, method, url, out.status, out.model, out.prompt_tokens, out.eval_tokens, srv_mono_ns() - cc->t0);
    atomic_fetch_sub(&s->metrics.in_flight, 1);
    srv_response_free(&out);
    return ret;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode tc) {
    (void)cls, (void)c, (void)tc;
    conn_ctx *cc = *con_cls;
    if (!cc) return;
    srv_buf_free(&cc->body);
    loom_free(cc);
    *con_cls = NULL;
}

loom_status srv_http_start(loom_server *s, loom_error *err) {
    if (s->mhd) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "the server is already listening");
    struct addrinfo hints, *ai = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    char port[16];
    snprintf(port, sizeof port, "%d", s->p.port);
    const char *host = s->host;
    char h6[256];
    size_t hl = strlen(host);
    if (hl > 2 && host[0] == '[' && host[hl - 1] == ']') { /* [::1] */
        snprintf(h6, sizeof h6, "%.*s", (int)(hl - 2), host + 1);
        host = h6;
    }
    int rc = getaddrinfo(*host ? host : NULL, port, &hints, &ai);
    if (rc || !ai) return loom_error_set(err, LOOM_ERR_IO, "cannot resolve the address '%s': %s", s->host, gai_strerror(rc));
    struct sockaddr_storage sa;
    memcpy(&sa, ai->ai_addr, ai->ai_addrlen);
    bool v6 = ai->ai_family == AF_INET6;
    freeaddrinfo(ai);

    /* one socket and one eventfd per connection: raise the descriptor limit */
    struct rlimit rl;
    if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    unsigned limit = (unsigned)(s->p.max_queue + s->p.parallel * s->p.max_loaded + 64);
    if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY && limit > rl.rlim_cur / 2 - 32)
        limit = rl.rlim_cur > 128 ? (unsigned)(rl.rlim_cur / 2 - 32) : 32;
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
    if (v6) flags |= MHD_USE_IPv6;
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, (uint16_t)s->p.port, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)s->p.timeout_s, MHD_OPTION_CONNECTION_LIMIT, limit,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_THREAD_STACK_SIZE, (size_t)(4u << 20),
        MHD_OPTION_LISTENING_ADDRESS_REUSE, 1u, MHD_OPTION_END);
    if (!d)
        return loom_error_set(err, LOOM_ERR_IO, "cannot listen on %s:%d (in use, or not an address of this machine?)",
                              s->host, s->p.port);
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = di ? di->port : s->p.port;
    s->mhd = d;
    return LOOM_OK;
}

void srv_http_stop(loom_server *s) {
    if (!s->mhd) return;
    MHD_stop_daemon(s->mhd);
    s->mhd = NULL;
}
