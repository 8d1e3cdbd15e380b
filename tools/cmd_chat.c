/* loom chat MODEL [options]
 *
 * An interactive chat like `ollama run`, in-process on the same engine as
 * `loom serve` (loom_server_call with /api/chat requests): the answer streams as it
 * is generated; `"""` starts and ends multi-line input; /bye, /clear,
 * /set parameter NAME VALUE, /set system TEXT, /show, /help; Ctrl-C stops the
 * current answer (not the program), Ctrl-D or /bye leaves. When stdin is not a
 * terminal it reads the whole of stdin as one message and answers once.
 * MODEL is a name from the model stores (as for `loom serve`) or a .gguf file. */
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_util.h"
#include "commands.h"
#include "loom_server.h"
#include "model_opts.h"

static volatile sig_atomic_t g_interrupt;
static void on_sigint(int sig) {
    (void)sig;
    g_interrupt = 1;
}

/* Ctrl-C's handler. Reads of the user's input run without SA_RESTART, so Ctrl-C at the
 * prompt makes them return EINTR; everything else (streaming the answer to stdout, above
 * all) runs with it: a write interrupted by Ctrl-C is restarted instead of failing with
 * EINTR, which would set stdout's error flag and make the chat exit with "error writing
 * standard output" at /bye (seen in CI when the signal landed inside a write). */
static void sigint_restart(bool restart) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sa.sa_flags = restart ? SA_RESTART : 0;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: loom chat MODEL [options]\n"
            "  MODEL                  a model name (--models DIR, Ollama's store) or a .gguf file\n"
            "  --system TEXT          system message\n"
            "  --models DIR           Loom's model directory (default $LOOM_MODELS or ~/.loom/models)\n"
            "  --temp T, --top-k K, --top-p P, --min-p P, --seed S, -n N (num_predict),\n"
            "  --repeat-penalty R     sampling options (as /set parameter)\n"
            "  --parallel N           slots (default 1)\n"
            "%s"
            "In the chat: \"\"\" starts/ends multi-line input; /set parameter NAME VALUE; /set system TEXT;\n"
            "/show; /clear; /bye. Ctrl-C stops an answer. Without a terminal on stdin: one answer.\n",
            model_opts_help());
}

typedef struct chat {
    loom_server *srv;
    char *model;
    json_t *messages;
    json_t *options;
    char *system;
    bool interactive;
} chat;

/* the NDJSON stream: print message.content as it comes, keep the whole answer */
typedef struct stream_state {
    char *line;
    size_t len, cap;
    char *answer;
    size_t alen, acap;
    char err[512];
    bool done, wrote;
    bool thinking;          /* inside a "Thinking..." block (as `ollama run` shows it) */
} stream_state;

static bool grow(char **p, size_t *cap, size_t need) {
    if (need <= *cap) return true;
    size_t c = *cap ? *cap : 256;
    while (c < need) c *= 2;
    char *n = realloc(*p, c);
    if (!n) return false;
    *p = n;
    *cap = c;
    return true;
}

static void handle_line(stream_state *st, const char *line, size_t n) {
    json_t *j = json_loadb(line, n, JSON_ALLOW_NUL, NULL);
    if (!j) return;
    const json_t *e = json_object_get(j, "error");
    if (json_is_string(e)) snprintf(st->err, sizeof st->err, "%s", json_string_value(e));
    /* thinking (message.thinking) is shown as `ollama run` does: "Thinking...", the
     * text, "...done thinking." before the answer; it is not kept in the history */
    const json_t *th = json_object_get(json_object_get(j, "message"), "thinking");
    if (json_is_string(th) && json_string_length(th)) {
        if (!st->thinking) fputs("Thinking...\n", stdout);
        st->thinking = true;
        fwrite(json_string_value(th), 1, json_string_length(th), stdout);
        fflush(stdout);
        st->wrote = true;
    }
    const json_t *c = json_object_get(json_object_get(j, "message"), "content");
    if (st->thinking && ((json_is_string(c) && json_string_length(c)) || json_is_true(json_object_get(j, "done")))) {
        fputs("\n...done thinking.\n\n", stdout);
        st->thinking = false;
    }
    if (json_is_string(c) && json_string_length(c)) {
        size_t cl = json_string_length(c);
        if (fwrite(json_string_value(c), 1, cl, stdout) != cl) st->err[0] = st->err[0] ? st->err[0] : '!';
        fflush(stdout);
        st->wrote = true;
        if (grow(&st->answer, &st->acap, st->alen + cl + 1)) {
            memcpy(st->answer + st->alen, json_string_value(c), cl);
            st->alen += cl;
            st->answer[st->alen] = 0;
        }
    }
    if (json_is_true(json_object_get(j, "done"))) st->done = true;
    json_decref(j);
}

static bool on_write(const char *data, size_t len, void *user) {
    stream_state *st = user;
    if (!grow(&st->line, &st->cap, st->len + len + 1)) return false;
    memcpy(st->line + st->len, data, len);
    st->len += len;
    size_t start = 0;
    for (size_t i = 0; i < st->len; i++)
        if (st->line[i] == '\n') {
            handle_line(st, st->line + start, i - start);
            start = i + 1;
        }
    memmove(st->line, st->line + start, st->len - start);
    st->len -= start;
    return true;
}

static bool on_stop(void *user) {
    (void)user;
    return g_interrupt != 0;
}

/* POST /api/chat with the history; returns 0 ok, 1 error, 3 interrupted. */
static int ask(chat *c, const char *text, bool load_only) {
    json_t *msgs = json_deep_copy(c->messages);
    if (!load_only) json_array_append_new(msgs, json_pack("{s:s,s:s}", "role", "user", "content", text));
    if (c->system && !load_only) {
        json_t *withsys = json_array();
        json_array_append_new(withsys, json_pack("{s:s,s:s}", "role", "system", "content", c->system));
        json_array_extend(withsys, msgs);
        json_decref(msgs);
        msgs = withsys;
    }
    json_t *req = json_pack("{s:s,s:o,s:b,s:O}", "model", c->model, "messages", msgs, "stream", 1, "options", c->options);
    char *body = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    if (!body) return 1;
    stream_state st = {0};
    int status = 0;
    g_interrupt = 0;
    loom_status rc = loom_server_call(c->srv, "POST", "/api/chat", body, strlen(body), &status, on_write, on_stop, &st);
    free(body);
    if (st.len) handle_line(&st, st.line, st.len);
    int ret = 0;
    if (rc == LOOM_ERR_CANCELLED || g_interrupt) {
        ret = 3;
        if (st.wrote) fputc('\n', stdout);
    } else if (status != 200 || st.err[0]) {
        if (st.wrote) fputc('\n', stdout);
        fprintf(stderr, "Error: %s\n", st.err[0] ? st.err : "request failed");
        ret = 1;
    } else if (!load_only) {
        fputs("\n", stdout);
        if (c->interactive) fputs("\n", stdout);
        json_array_append_new(c->messages, json_pack("{s:s,s:s}", "role", "user", "content", text));
        json_array_append_new(c->messages, json_pack("{s:s,s:s%}", "role", "assistant", "content",
                                                     st.answer ? st.answer : "", st.alen));
    }
    fflush(stdout);
    free(st.line);
    free(st.answer);
    g_interrupt = 0;
    return ret;
}

static bool set_parameter(chat *c, const char *name, const char *value) {
    static const char *const ints[] = {"num_ctx", "num_predict", "top_k", "seed", "repeat_last_n", "num_keep",
                                       "num_thread", "num_batch", "num_gpu", NULL};
    static const char *const floats[] = {"temperature", "top_p", "min_p", "repeat_penalty", "presence_penalty",
                                         "frequency_penalty", NULL};
    for (int i = 0; ints[i]; i++)
        if (!strcmp(name, ints[i])) {
            long long v;
            if (!cli_parse_ll(value, -2, 1LL << 40, &v)) return false;
            json_object_set_new(c->options, name, json_integer(v));
            return true;
        }
    for (int i = 0; floats[i]; i++)
        if (!strcmp(name, floats[i])) {
            double v;
            if (!cli_parse_double(value, &v)) return false;
            json_object_set_new(c->options, name, json_real(v));
            return true;
        }
    if (!strcmp(name, "stop")) {
        json_t *a = json_object_get(c->options, "stop");
        if (!json_is_array(a)) {
            a = json_array();
            json_object_set_new(c->options, "stop", a);
        }
        json_array_append_new(a, json_string(value));
        return true;
    }
    return false;
}

static bool on_show_write(const char *data, size_t len, void *user) {
    char **acc = user;
    size_t old = *acc ? strlen(*acc) : 0;
    char *n = realloc(*acc, old + len + 1);
    if (!n) return false;
    memcpy(n + old, data, len);
    n[old + len] = 0;
    *acc = n;
    return true;
}

static const char *jstr(const json_t *v) { return json_is_string(v) ? json_string_value(v) : ""; }

static void show(chat *c) {
    char *body = NULL;
    json_t *req = json_pack("{s:s}", "model", c->model);
    char *rb = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    int status = 0;
    loom_server_call(c->srv, "POST", "/api/show", rb, strlen(rb), &status, on_show_write, NULL, &body);
    free(rb);
    json_t *j = body ? json_loads(body, 0, NULL) : NULL;
    free(body);
    const json_t *d = json_object_get(j, "details");
    printf("  Model\n");
    printf("    %-20s %s\n", "name", c->model);
    printf("    %-20s %s\n", "architecture", jstr(json_object_get(d, "family")));
    printf("    %-20s %s\n", "parameters", jstr(json_object_get(d, "parameter_size")));
    printf("    %-20s %s\n", "quantization", jstr(json_object_get(d, "quantization_level")));
    printf("    %-20s %s\n", "template", jstr(json_object_get(j, "template_source")));
    printf("  Parameters\n");
    const char *k;
    json_t *v;
    json_object_foreach(c->options, k, v) {
        char *t = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        printf("    %-20s %s\n", k, t ? t : "");
        free(t);
    }
    if (c->system) printf("  System\n    %s\n", c->system);
    printf("  Conversation: %zu messages\n\n", json_array_size(c->messages));
    json_decref(j);
}

/* Read one user message (handles """ blocks). NULL at EOF. */
static char *read_message(bool interactive, bool *interrupted) {
    *interrupted = false;
    size_t cap = 0, len = 0;
    char *msg = NULL;
    bool multi = false;
    for (;;) {
        if (interactive) {
            fputs(multi ? "... " : ">>> ", stdout);
            fflush(stdout);
        }
        char *line = NULL;
        size_t lcap = 0;
        errno = 0;
        sigint_restart(false);
        ssize_t n = getline(&line, &lcap, stdin);
        const int read_errno = errno;
        sigint_restart(true);
        errno = read_errno;
        if (n < 0) {
            free(line);
            if (errno == EINTR || g_interrupt) {
                g_interrupt = 0;
                clearerr(stdin);
                *interrupted = true;
                free(msg);
                return NULL;
            }
            if (msg && len) return msg; /* EOF inside a block: take what there is */
            free(msg);
            return NULL;
        }
        if (n && line[n - 1] == '\n') line[--n] = 0;
        const char *part = line;
        size_t pn = (size_t)n;
        bool end = !multi;
        if (!multi && !strncmp(line, "\"\"\"", 3)) {
            multi = true;
            part += 3, pn -= 3;
            end = false;
            if (pn >= 3 && !strcmp(part + pn - 3, "\"\"\"")) pn -= 3, end = true;
        } else if (multi && pn >= 3 && !strcmp(part + pn - 3, "\"\"\"")) {
            pn -= 3;
            end = true;
        }
        if (!grow(&msg, &cap, len + pn + 2)) {
            free(line);
            free(msg);
            return NULL;
        }
        if (len && multi) msg[len++] = '\n';
        memcpy(msg + len, part, pn);
        len += pn;
        msg[len] = 0;
        free(line);
        if (end) return msg;
    }
}

int loom_cmd_chat(int argc, char **argv) {
    model_opts o;
    model_opts_init(&o);
    loom_server_params p = loom_server_default_params();
    o.p.flash_attn = p.model.flash_attn; /* the server's default: on */
    /* the environment (the library reads none of it) */
    const char *env_models = getenv("LOOM_MODELS"), *env_ollama = getenv("OLLAMA_MODELS");
    if (env_models && *env_models) p.models_dir = env_models;
    if (env_ollama && *env_ollama) p.ollama_dir = env_ollama;
    p.parallel = 1;
    p.quiet = true;
    p.keep_alive_ns = -1;
    const char *model = NULL, *system = NULL;
    json_t *options = json_object();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = model_opts_parse(&o, argc, argv, &i, "loom chat");
        if (r < 0) return 2;
        if (r > 0) continue;
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        chat tmp = {.options = options};
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            json_decref(options);
            return 0;
        } else if (!strcmp(a, "--system") && v) {
            system = v, i++;
        } else if (!strcmp(a, "--models") && v) {
            p.models_dir = v, i++;
        } else if (!strcmp(a, "--parallel") && v) {
            long long n;
            if (!cli_parse_ll(v, 1, 256, &n)) goto bad;
            p.parallel = (int)n, i++;
        } else if ((!strcmp(a, "--temp") || !strcmp(a, "--temperature")) && v) {
            if (!set_parameter(&tmp, "temperature", v)) goto bad;
            i++;
        } else if (!strcmp(a, "--top-k") && v) {
            if (!set_parameter(&tmp, "top_k", v)) goto bad;
            i++;
        } else if (!strcmp(a, "--top-p") && v) {
            if (!set_parameter(&tmp, "top_p", v)) goto bad;
            i++;
        } else if (!strcmp(a, "--min-p") && v) {
            if (!set_parameter(&tmp, "min_p", v)) goto bad;
            i++;
        } else if (!strcmp(a, "--seed") && v) {
            if (!set_parameter(&tmp, "seed", v)) goto bad;
            i++;
        } else if (!strcmp(a, "--repeat-penalty") && v) {
            if (!set_parameter(&tmp, "repeat_penalty", v)) goto bad;
            i++;
        } else if ((!strcmp(a, "-n") || !strcmp(a, "--num-predict")) && v) {
            if (!set_parameter(&tmp, "num_predict", v)) goto bad;
            i++;
        } else if (a[0] != '-' && !model) {
            model = a;
        } else {
            fprintf(stderr, "loom chat: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            json_decref(options);
            return 2;
        }
        continue;
    bad:
        fprintf(stderr, "loom chat: bad value for %s: '%s'\n", a, v);
        json_decref(options);
        return 2;
    }
    if (!model) {
        fprintf(stderr, "loom chat: which model? (loom chat MODEL)\n");
        usage(stderr);
        json_decref(options);
        return 2;
    }
    if (o.ctx_set) json_object_set_new(options, "num_ctx", json_integer(o.p.n_ctx));
    if (model_opts_finish(&o, "loom chat")) return 2;
    p.model = o.p;
    p.model.n_ctx = 0;
    /* a .gguf path: its directory is the model store and its base name the model */
    char dir[4096], name[512];
    size_t ml = strlen(model);
    struct stat st;
    if (ml > 5 && !strcmp(model + ml - 5, ".gguf") && !stat(model, &st)) {
        const char *slash = strrchr(model, '/');
        if (slash) snprintf(dir, sizeof dir, "%.*s", (int)(slash - model), model);
        else snprintf(dir, sizeof dir, ".");
        snprintf(name, sizeof name, "%.*s", (int)(ml - 5 - (slash ? (size_t)(slash + 1 - model) : 0)),
                 slash ? slash + 1 : model);
        p.models_dir = dir;
        p.ollama_dir = "";
        model = name;
    }
    loom_error err = {0};
    chat c = {0};
    c.model = (char *)model;
    c.messages = json_array();
    c.options = options;
    c.system = system ? strdup(system) : NULL;
    c.interactive = isatty(STDIN_FILENO);
    if (loom_server_new(&p, &c.srv, &err)) {
        fprintf(stderr, "loom chat: %s\n", err.msg);
        json_decref(options);
        json_decref(c.messages);
        free(c.system);
        return 1;
    }
    sigint_restart(true); /* reads of the input switch it off (sigint_restart) */
    int rc = 0;
    if (ask(&c, NULL, true) == 1) { /* load the model (and report a bad name) first */
        rc = 1;
        goto out;
    }
    if (!c.interactive) {
        size_t cap = 0, len = 0;
        char *text = NULL;
        char buf[4096];
        size_t n;
        sigint_restart(false); /* Ctrl-C while reading piped input ends the input */
        while ((n = fread(buf, 1, sizeof buf, stdin)) > 0) {
            if (!grow(&text, &cap, len + n + 1)) break;
            memcpy(text + len, buf, n);
            len += n;
        }
        sigint_restart(true);
        while (len && (text[len - 1] == '\n' || text[len - 1] == '\r')) len--;
        if (text) text[len] = 0;
        int r = ask(&c, text ? text : "", false);
        rc = r == 1 ? 1 : 0;
        free(text);
        goto out;
    }
    for (;;) {
        bool intr;
        char *msg = read_message(true, &intr);
        if (!msg) {
            if (intr) {
                fputs("\nUse Ctrl + d or /bye to exit.\n", stdout);
                continue;
            }
            fputc('\n', stdout);
            break;
        }
        if (!strcmp(msg, "/bye") || !strcmp(msg, "/exit")) {
            free(msg);
            break;
        }
        if (!strcmp(msg, "/clear")) {
            json_array_clear(c.messages);
            puts("Cleared session context");
        } else if (!strncmp(msg, "/set parameter ", 15)) {
            char pname[64] = {0};
            const char *rest = msg + 15;
            const char *sp = strchr(rest, ' ');
            if (sp && (size_t)(sp - rest) < sizeof pname) {
                memcpy(pname, rest, (size_t)(sp - rest));
                while (*sp == ' ') sp++;
                if (set_parameter(&c, pname, sp)) printf("Set parameter '%s' to '%s'\n", pname, sp);
                else printf("Couldn't set parameter '%s' to '%s'\n", pname, sp);
            } else {
                puts("Usage: /set parameter NAME VALUE");
            }
        } else if (!strncmp(msg, "/set system ", 12)) {
            free(c.system);
            c.system = strdup(msg + 12);
            puts("Set system message.");
        } else if (!strcmp(msg, "/show") || !strncmp(msg, "/show ", 6)) {
            show(&c);
        } else if (!strcmp(msg, "/?") || !strcmp(msg, "/help")) {
            puts("Available Commands:\n  /set parameter NAME VALUE   Set a parameter (temperature, top_k, seed, num_ctx ...)\n"
                 "  /set system TEXT            Set the system message\n  /show                       Show model "
                 "information\n  /clear                      Clear the session context\n  /bye                        Exit\n"
                 "  /?, /help                   Help\n\nUse \"\"\" to begin a multi-line message.\n");
        } else if (msg[0] == '/' && msg[1] != '/') {
            printf("Unknown command '%s'. Type /? for help\n", msg);
        } else if (*msg) {
            ask(&c, msg, false);
        }
        free(msg);
    }
out:
    loom_server_free(c.srv);
    json_decref(c.messages);
    json_decref(c.options);
    free(c.system);
    return rc;
}
