/* loom serve [--host H] [--port N] [--models DIR] [--parallel N] [--max-queue N] [--ctx N]
 *            [--keep-alive DUR] [-t N] [--gpu-layers N ...]
 *
 * The Ollama and OpenAI HTTP APIs (see include/loom_server.h and docs/server.md).
 * Environment: LOOM_HOST (host:port, default 127.0.0.1:11434), LOOM_MODELS,
 * LOOM_ORIGINS, OLLAMA_MODELS. Starts at once; models load on first use. SIGINT or
 * SIGTERM stops it (running requests end with an error, models are unloaded). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_util.h"
#include "commands.h"
#include "loom_server.h"
#include "model_opts.h"
#include "server/util.h"

static volatile sig_atomic_t g_stop;
static void on_signal(int sig) {
    (void)sig;
    g_stop = 1;
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: loom serve [options]\n"
            "  --host HOST[:PORT]     address to bind (default 127.0.0.1; env LOOM_HOST=host:port)\n"
            "  --port N               port (default 11434)\n"
            "  --models DIR           Loom's model directory: NAME.gguf is the model NAME\n"
            "                         (default $LOOM_MODELS or ~/.loom/models)\n"
            "  --ollama-models DIR    Ollama's store, read-only (default $OLLAMA_MODELS or\n"
            "                         ~/.ollama/models; 'none' to ignore it)\n"
            "  --parallel N           requests decoded together per model (slots, default 4)\n"
            "  --max-queue N          requests waiting per model beyond the slots (default 512; then 503)\n"
            "  --ctx N                context per slot (num_ctx, default 4096 capped at the model's)\n"
            "  --keep-alive DUR       how long an idle model stays loaded (default 5m; -1 = forever)\n"
            "  --max-loaded N         models loaded at once (default 3)\n"
            "  --max-memory BYTES     total of the loaded models' memory plans (default 90%% of RAM;\n"
            "                         suffixes K, M, G)\n"
            "  --origins LIST         extra CORS origins, comma-separated (env LOOM_ORIGINS)\n"
            "  --max-body BYTES       request body limit (default 32M; 413 beyond)\n"
            "  --timeout S            idle connection timeout in seconds (default 30)\n"
            "  --quiet                no request log\n"
            "%s",
            model_opts_help());
}

static bool parse_size(const char *s, uint64_t *out) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || v < 0) return false;
    double mul = 1;
    if (*end == 'k' || *end == 'K') mul = 1024, end++;
    else if (*end == 'm' || *end == 'M') mul = 1024.0 * 1024, end++;
    else if (*end == 'g' || *end == 'G') mul = 1024.0 * 1024 * 1024, end++;
    if (*end == 'i' || *end == 'I') end++;
    if (*end == 'b' || *end == 'B') end++;
    if (*end) return false;
    *out = (uint64_t)(v * mul);
    return true;
}

/* "host", "host:port", ":port", "http://host:port", "[::1]:port". */
static bool parse_host(const char *in, char *host, size_t hn, int *port) {
    const char *p = in;
    if (!strncmp(p, "http://", 7)) p += 7;
    else if (!strncmp(p, "https://", 8)) p += 8;
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s", p);
    char *slash = strchr(tmp, '/');
    if (slash) *slash = 0;
    char *colon = NULL;
    if (tmp[0] == '[') {
        char *rb = strchr(tmp, ']');
        if (!rb) return false;
        colon = rb[1] == ':' ? rb + 1 : NULL;
        if (rb[1] && rb[1] != ':') return false;
    } else {
        colon = strrchr(tmp, ':');
        if (colon && strchr(tmp, ':') != colon) colon = NULL; /* bare IPv6 without brackets */
    }
    if (colon) {
        long long v;
        if (!cli_parse_ll(colon + 1, 0, 65535, &v)) return false;
        *port = (int)v;
        *colon = 0;
    }
    snprintf(host, hn, "%s", tmp[0] ? tmp : "127.0.0.1");
    return true;
}

int loom_cmd_serve(int argc, char **argv) {
    model_opts o;
    model_opts_init(&o);
    loom_server_params p = loom_server_default_params();
    o.p.flash_attn = p.model.flash_attn; /* the server's default: on */
    /* the environment (the library reads none of it) */
    const char *env_models = getenv("LOOM_MODELS"), *env_ollama = getenv("OLLAMA_MODELS");
    if (env_models && *env_models) p.models_dir = env_models;
    if (env_ollama && *env_ollama) p.ollama_dir = env_ollama;
    const char *env_origins = getenv("LOOM_ORIGINS");
    if (env_origins && *env_origins) p.origins = env_origins;
    char host[300] = "127.0.0.1";
    int port = 11434;
    const char *env_host = getenv("LOOM_HOST");
    if (env_host && *env_host && !parse_host(env_host, host, sizeof host, &port)) {
        fprintf(stderr, "loom serve: LOOM_HOST='%s' is not host[:port]\n", env_host);
        return 2;
    }
    bool port_set = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = model_opts_parse(&o, argc, argv, &i, "loom serve");
        if (r < 0) return 2;
        if (r > 0) continue;
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool ok = true;
        long long lv = 0;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--host") && v) {
            int hp = port;
            ok = parse_host(v, host, sizeof host, &hp), i++;
            port = hp;
        } else if (!strcmp(a, "--port") && v) {
            ok = cli_parse_ll(v, 0, 65535, &lv), i++;
            port = (int)lv;
            port_set = true;
        } else if (!strcmp(a, "--models") && v) {
            p.models_dir = v, i++;
        } else if (!strcmp(a, "--ollama-models") && v) {
            p.ollama_dir = strcmp(v, "none") ? v : "", i++;
        } else if (!strcmp(a, "--parallel") && v) {
            ok = cli_parse_ll(v, 1, 256, &lv), i++;
            p.parallel = (int)lv;
        } else if (!strcmp(a, "--max-queue") && v) {
            ok = cli_parse_ll(v, 1, 1 << 20, &lv), i++;
            p.max_queue = (int)lv;
        } else if (!strcmp(a, "--keep-alive") && v) {
            int64_t ns;
            ok = srv_parse_duration(v, &ns), i++;
            p.keep_alive_ns = ns < 0 ? -1 : ns;
        } else if (!strcmp(a, "--max-loaded") && v) {
            ok = cli_parse_ll(v, 1, 1024, &lv), i++;
            p.max_loaded = (int)lv;
        } else if (!strcmp(a, "--max-memory") && v) {
            ok = parse_size(v, &p.max_memory), i++;
        } else if (!strcmp(a, "--max-body") && v) {
            uint64_t b;
            ok = parse_size(v, &b) && b > 0, i++;
            p.max_body = (size_t)b;
        } else if (!strcmp(a, "--timeout") && v) {
            ok = cli_parse_ll(v, 1, 86400, &lv), i++;
            p.timeout_s = (int)lv;
        } else if (!strcmp(a, "--origins") && v) {
            p.origins = v, i++;
        } else if (!strcmp(a, "--quiet")) {
            p.quiet = true;
        } else {
            fprintf(stderr, "loom serve: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        }
        if (!ok) {
            fprintf(stderr, "loom serve: bad value for %s: '%s'\n", a, v);
            return 2;
        }
    }
    (void)port_set;
    p.host = host;
    p.port = port;
    if (model_opts_finish(&o, "loom serve")) return 2;
    p.model = o.p;
    p.n_ctx = o.ctx_set ? o.p.n_ctx : 0;
    p.model.n_ctx = 0;
    loom_error err = {0};
    loom_server *s = NULL;
    if (loom_server_new(&p, &s, &err) || loom_server_listen(s, &err)) {
        fprintf(stderr, "loom serve: %s\n", err.msg);
        loom_server_free(s);
        return err.status == LOOM_ERR_INVALID_ARG ? 2 : 1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    const char *md = p.models_dir;
    fprintf(stderr, "loom serve: listening on http://%s%s%s:%d (models: %s%s; parallel %d, queue %d)\n",
            strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "", loom_server_port(s),
            md ? md : "~/.loom/models", p.ollama_dir && !*p.ollama_dir ? "" : " + Ollama's store", p.parallel,
            p.max_queue);
    fflush(stderr);
    while (!g_stop) usleep(100 * 1000);
    fprintf(stderr, "loom serve: stopping\n");
    loom_server_free(s);
    return 0;
}
