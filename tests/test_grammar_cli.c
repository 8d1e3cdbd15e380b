/* `loom run` with --grammar / --grammar-file / --json-schema / --json and
 * --no-display-prompt on the bundled stories260K model: the printed text is in
 * the language (JSON checked with jansson's parser), bad grammars and schemas
 * exit with status 2 and a message with the position, conflicting options too.
 * Needs LOOM_BIN (set by ctest). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"

static const char *g_bin;

/* Run argv-style command through the shell; stdout -> out, stderr -> err. */
static int run(const char *args, char *out, size_t cap, char *err, size_t ecap) {
    char cmd[8192], errf[128];
    snprintf(errf, sizeof errf, "/tmp/loom_grammar_cli_%d.err", (int)getpid());
    snprintf(cmd, sizeof cmd, "%s run %s %s 2>%s", g_bin, test_path("models/stories260K.gguf"), args, errf);
    FILE *f = popen(cmd, "r");
    if (!f) return -1;
    size_t n = fread(out, 1, cap - 1, f);
    out[n] = 0;
    int st = pclose(f);
    FILE *e = fopen(errf, "r");
    size_t m = e ? fread(err, 1, ecap - 1, e) : 0;
    err[m] = 0;
    if (e) fclose(e);
    unlink(errf);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The output minus the final newline loom run adds. */
static size_t body_len(const char *out) {
    size_t n = strlen(out);
    return n && out[n - 1] == '\n' ? n - 1 : n;
}

int main(void) {
    g_bin = getenv("LOOM_BIN");
    if (!g_bin || access(g_bin, X_OK)) {
        printf("LOOM_BIN not set or not executable\n");
        CHECK(0);
        return test_finish("test_grammar_cli");
    }
    static char out[1 << 16], err[1 << 14];
    /* --json: one JSON object, nothing else (any object is unbounded: a run may
     * also end at -n, with a prefix of one) */
    int complete = 0;
    for (int seed = 1; seed <= 4; seed++) {
        char a[256];
        snprintf(a, sizeof a, "--json --temp 1 --seed %d -n 200 --no-display-prompt -p 'Once upon a time'", seed);
        CHECK_EQ_INT(run(a, out, sizeof out, err, sizeof err), 0);
        CHECK(strstr(err, "grammar included") != NULL);
        if (strstr(err, "[stopped: grammar complete]")) {
            json_error_t je;
            json_t *j = json_loadb(out, body_len(out), 0, &je);
            CHECK_MSG(j && json_is_object(j), "seed %d: not a JSON object (%s): '%s'", seed, je.text, out);
            json_decref(j);
            complete++;
        } else { /* cut by -n: a prefix of an object */
            CHECK_MSG(!strstr(err, "[stopped:"), "seed %d: '%s'", seed, err);
            CHECK(out[0] == '{');
        }
    }
    printf("--json: %d of 4 runs complete\n", complete);
    /* --json-schema FILE and inline */
    char path[128];
    snprintf(path, sizeof path, "/tmp/loom_grammar_cli_%d.json", (int)getpid());
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":10},"
              "\"n\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":9}},\"required\":[\"name\",\"n\"]}",
              f);
        fclose(f);
        char a[512];
        snprintf(a, sizeof a, "--json-schema %s --temp 1 --seed 5 -n 400 --no-display-prompt", path);
        CHECK_EQ_INT(run(a, out, sizeof out, err, sizeof err), 0);
        json_t *j = json_loadb(out, body_len(out), 0, NULL);
        CHECK_MSG(j && json_is_string(json_object_get(j, "name")) && json_is_integer(json_object_get(j, "n")),
                  "'%s'", out);
        if (j) {
            long long n = json_integer_value(json_object_get(j, "n"));
            CHECK(n >= 1 && n <= 9);
        }
        json_decref(j);
        unlink(path);
    }
    CHECK_EQ_INT(run("--json-schema '{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"maxItems\":3}' --temp 1 "
                     "--seed 2 -n 300 --no-display-prompt",
                     out, sizeof out, err, sizeof err),
                 0);
    json_t *j = json_loadb(out, body_len(out), 0, NULL);
    CHECK_MSG(j && json_is_array(j) && json_array_size(j) <= 3, "'%s'", out);
    json_decref(j);
    /* --grammar: exactly a sentence; the prompt is echoed unless --no-display-prompt */
    CHECK_EQ_INT(run("--grammar 'root ::= \"yes\" | \"no\"' --temp 1 --seed 9 -n 50 --no-display-prompt -p Hi", out,
                     sizeof out, err, sizeof err),
                 0);
    CHECK_MSG(!strcmp(out, "yes\n") || !strcmp(out, "no\n"), "'%s'", out);
    CHECK_EQ_INT(run("--grammar 'root ::= \" yes\" | \" no\"' --temp 1 --seed 9 -n 50 -p Hi", out, sizeof out, err,
                     sizeof err),
                 0);
    CHECK_MSG(!strcmp(out, "Hi yes\n") || !strcmp(out, "Hi no\n"), "'%s'", out);
    /* without a grammar, --no-display-prompt leaves the prompt out */
    CHECK_EQ_INT(run("--temp 0 -n 8 -p 'Once upon a time' --no-display-prompt", out, sizeof out, err, sizeof err), 0);
    CHECK(strncmp(out, "Once upon a time", 16) != 0);
    /* errors: exit status 2, the position or the keyword in the message */
    CHECK_EQ_INT(run("--grammar 'root ::= \"a' -n 5", out, sizeof out, err, sizeof err), 2);
    CHECK_MSG(strstr(err, "line 1, column 10: unterminated string") != NULL, "'%s'", err);
    CHECK_EQ_INT(run("--grammar-file /nonexistent/g.gbnf -n 5", out, sizeof out, err, sizeof err), 2);
    CHECK_MSG(strstr(err, "cannot open '/nonexistent/g.gbnf'") != NULL, "'%s'", err);
    CHECK_EQ_INT(run("--json-schema '{\"not\":{}}' -n 5", out, sizeof out, err, sizeof err), 2);
    CHECK_MSG(strstr(err, "unsupported keyword 'not' at (root)") != NULL, "'%s'", err);
    CHECK_EQ_INT(run("--json-schema '{\"type\":' -n 5", out, sizeof out, err, sizeof err), 2);
    CHECK_MSG(strstr(err, "line 1, column") != NULL, "'%s'", err);
    CHECK_EQ_INT(run("--json --grammar 'root ::= \"a\"' -n 5", out, sizeof out, err, sizeof err), 2);
    CHECK_MSG(strstr(err, "use only one of") != NULL, "'%s'", err);
    CHECK_EQ_INT(run("--grammar 'root ::= \"\\u2603\"' -n 5 --no-display-prompt", out, sizeof out, err, sizeof err), 0);
    CHECK_MSG(!strcmp(out, "\xe2\x98\x83\n"), "'%s'", out); /* spelled with byte tokens */
    return test_finish("test_grammar_cli");
}
