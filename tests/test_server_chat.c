/* `loom chat` driven as a person would: in a tmux pane (send-keys, capture-pane) it
 * shows a prompt, streams answers equal to the server's answer to the same /api/chat
 * request, takes """ multi-line input, /set parameter, /show, /clear, stops an answer
 * on Ctrl-C and keeps running, and leaves on /bye. Without a terminal on stdin it
 * answers one message. Needs tmux (Debian: tmux; `make deps-test`). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"
#include "server_test_common.h"

static char g_sock[64];

static int tmux(const char *a1, const char *a2, const char *a3, const char *a4, const char *a5, const char *a6) {
    char *argv[12] = {"tmux", "-L", g_sock};
    int n = 3;
    const char *a[] = {a1, a2, a3, a4, a5, a6};
    for (int i = 0; i < 6 && a[i]; i++) argv[n++] = (char *)a[i];
    argv[n] = NULL;
    return test_run_quiet(argv);
}

static char *capture(void) {
    char *argv[] = {"tmux", "-L", g_sock, "capture-pane", "-p", "-J", "-S", "-300", "-t", "chat", NULL};
    char *o = NULL;
    test_run_capture(argv, &o);
    return o;
}

static void keys(const char *k, bool enter) {
    char *argv[] = {"tmux", "-L", g_sock, "send-keys", "-t", "chat", "-l", (char *)k, NULL};
    test_run_quiet(argv);
    if (enter) {
        char *argv2[] = {"tmux", "-L", g_sock, "send-keys", "-t", "chat", "Enter", NULL};
        test_run_quiet(argv2);
    }
}

static void key(const char *name) {
    char *argv[] = {"tmux", "-L", g_sock, "send-keys", "-t", "chat", (char *)name, NULL};
    test_run_quiet(argv);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Wait until the pane holds `needle` at least `count` times. */
static bool wait_for(const char *needle, int count, double limit) {
    double t0 = now_s();
    while (now_s() - t0 < limit) {
        char *p = capture();
        int c = 0;
        for (const char *q = p ? strstr(p, needle) : NULL; q; q = strstr(q + 1, needle)) c++;
        free(p);
        if (c >= count) return true;
        usleep(50 * 1000);
    }
    char *p = capture();
    fprintf(stderr, "pane (waiting for %d x '%s'):\n%s\n", count, needle, p ? p : "");
    free(p);
    return false;
}

/* Wait until the chat shows an empty prompt (the last line is ">>>"). */
static bool wait_prompt(double limit) {
    double t0 = now_s();
    while (now_s() - t0 < limit) {
        char *p = capture();
        size_t n = p ? strlen(p) : 0;
        while (n && (p[n - 1] == '\n' || p[n - 1] == ' ')) n--;
        bool ok = n >= 3 && !strncmp(p + n - 3, ">>>", 3) && (n == 3 || p[n - 4] == '\n');
        free(p);
        if (ok) return true;
        usleep(50 * 1000);
    }
    return false;
}

static int count_of(const char *needle) {
    char *p = capture();
    int c = 0;
    for (const char *q = p ? strstr(p, needle) : NULL; q; q = strstr(q + 1, needle)) c++;
    free(p);
    return c;
}

typedef struct acc {
    char text[8192];
    size_t n;
} acc;

static bool on_write(const char *data, size_t len, void *user) {
    acc *a = user;
    /* NDJSON lines: collect message.content */
    char *copy = strndup(data, len);
    for (char *line = strtok(copy, "\n"); line; line = strtok(NULL, "\n")) {
        json_t *j = json_loads(line, 0, NULL);
        const json_t *c = json_object_get(json_object_get(j, "message"), "content");
        if (json_is_string(c) && a->n + json_string_length(c) < sizeof a->text) {
            memcpy(a->text + a->n, json_string_value(c), json_string_length(c));
            a->n += json_string_length(c);
            a->text[a->n] = 0;
        }
        json_decref(j);
    }
    free(copy);
    return true;
}

/* The server's answer to a conversation (temperature 0, num_predict n). */
static void expected_answer(loom_server *s, const char *messages, int n, acc *a) {
    memset(a, 0, sizeof *a);
    char body[2048];
    snprintf(body, sizeof body, "{\"model\":\"tiny\",\"messages\":%s,\"options\":{\"temperature\":0,\"num_predict\":%d}}",
             messages, n);
    int status = 0;
    CHECK(loom_server_call(s, "POST", "/api/chat", body, strlen(body), &status, on_write, NULL, a) == LOOM_OK);
    CHECK(status == 200 && a->n > 0);
}

/* The first line of the answer (the pane wraps and trims trailing spaces). */
static void first_line(const char *t, char *out, size_t n) {
    size_t i = 0;
    while (t[i] && t[i] != '\n' && i + 1 < n && i < 40) out[i] = t[i], i++;
    while (i && out[i - 1] == ' ') i--;
    out[i] = 0;
}

int main(void) {
    const char *bin = getenv("LOOM_BIN");
    char *ver = NULL;
    char *vargv[] = {"tmux", "-V", NULL};
    if (!bin || test_run_capture(vargv, &ver) != 0) {
        fprintf(stderr, "test_server_chat: needs tmux (Debian: apt-get install tmux; `make deps-test`) and LOOM_BIN\n");
        free(ver);
        CHECK(false);
        return test_finish("test_server_chat");
    }
    printf("%s", ver);
    free(ver);
    snprintf(g_sock, sizeof g_sock, "loomtest-%d", (int)getpid());
    char dir[256];
    CHECK(test_make_models(dir, sizeof dir));
    loom_server *s = test_server_start(dir, 1, 8);
    CHECK(s != NULL);
    if (!s) return test_finish("test_server_chat");
    acc a1, a2;
    expected_answer(s, "[{\"role\":\"user\",\"content\":\"Once upon a time\"}]", 12, &a1);
    json_t *hist = json_pack("[{s:s,s:s},{s:s,s:s},{s:s,s:s}]", "role", "user", "content", "Once upon a time", "role",
                             "assistant", "content", a1.text, "role", "user", "content", "line one\nline two");
    char *hs = json_dumps(hist, JSON_COMPACT);
    expected_answer(s, hs, 12, &a2);
    free(hs);
    json_decref(hist);

    /* one message from a pipe */
    char cmd[1200], model[600];
    snprintf(model, sizeof model, "%s/models/tiny.gguf", dir);
    snprintf(cmd, sizeof cmd, "printf 'Once upon a time\\n' | '%s' chat '%s' --temp 0 -n 12 -t 1", bin, model);
    char *shargv[] = {"sh", "-c", cmd, NULL};
    char *out = NULL;
    CHECK(test_run_capture(shargv, &out) == 0);
    size_t ol = out ? strlen(out) : 0;
    CHECK_MSG(out && ol == a1.n + 1 && !strncmp(out, a1.text, a1.n) && out[ol - 1] == '\n', "piped: '%s' want '%s'",
              out ? out : "", a1.text);
    free(out);

    /* interactive, in tmux */
    snprintf(cmd, sizeof cmd, "'%s' chat '%s' --temp 0 -n 12 -t 1; echo CHAT-EXITED-$?; sleep 30", bin, model);
    CHECK(tmux("new-session", "-d", "-s", "chat", "-x", "200") == 0);
    tmux("set-option", "-g", "history-limit", "5000", NULL, NULL);
    char *argv[] = {"tmux", "-L", g_sock, "send-keys", "-t", "chat", cmd, "Enter", NULL};
    test_run_quiet(argv);
    CHECK(wait_for(">>> ", 1, 20));
    char l1[64], l2[64];
    first_line(a1.text, l1, sizeof l1);
    first_line(a2.text, l2, sizeof l2);

    keys("Once upon a time", true);
    CHECK(wait_for(">>> ", 2, 20));
    CHECK_MSG(count_of(l1) >= 1, "answer '%s' not shown", l1);

    /* multi-line input */
    keys("\"\"\"", true);
    CHECK(wait_for("... ", 1, 10));
    keys("line one", true);
    keys("line two\"\"\"", true);
    CHECK(wait_for(">>> ", 3, 20));
    CHECK_MSG(count_of(l2) >= 1, "multi-line answer '%s' not shown", l2);

    keys("/set parameter num_predict 3", true);
    CHECK(wait_for("Set parameter 'num_predict' to '3'", 1, 10));
    keys("/show", true);
    CHECK(wait_for("architecture", 1, 10));
    CHECK(wait_for("llama", 1, 10));
    keys("/clear", true);
    CHECK(wait_for("Cleared session context", 1, 10));

    /* Ctrl-C stops a long answer and the chat goes on */
    keys("/set parameter num_predict 200000", true);
    keys("/set parameter num_ctx 32768", true);
    keys("/set parameter num_batch 16", true);
    CHECK(wait_for("Set parameter 'num_batch'", 1, 10));
    CHECK(wait_prompt(10));
    int prompts_before = count_of(">>> ");
    keys("Once upon a time", true);
    usleep(800 * 1000);
    key("C-c");
    double t0 = now_s();
    CHECK(wait_for(">>> ", prompts_before + 1, 10)); /* typing reuses the prompt line; ^C prints a new one */
    printf("Ctrl-C: prompt back after %.2f s\n", now_s() - t0);
    CHECK(count_of("^C") >= 1);
    keys("/set parameter num_predict 12", true);
    keys("/set parameter num_ctx 2048", true);
    int l1_before = count_of(l1), prompts_now = count_of(">>> ");
    keys("Once upon a time", true);
    CHECK(wait_for(l1, l1_before + 1, 30));
    CHECK(wait_for(">>> ", prompts_now + 1, 30));
    /* Ctrl-C at the prompt does not quit */
    key("C-c");
    CHECK(wait_for("Use Ctrl + d or /bye to exit.", 1, 10));
    { char *pp = capture(); if (getenv("LOOM_TEST_SHOW_PANE")) printf("PANE:\n%s\n", pp); free(pp); }
    keys("/bye", true);
    CHECK(wait_for("CHAT-EXITED-0", 1, 20));
    tmux("kill-server", NULL, NULL, NULL, NULL, NULL);
    loom_server_free(s);
    test_rm_rf(dir);
    return test_finish("test_server_chat");
}
