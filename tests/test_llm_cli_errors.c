/* The CLI's failure behaviour (issue #14 items 1, 2, 6, 8), through the binary:
 *  - `loom gen -o`: never destroys what is at the path (a special file is refused
 *    with exit 2 and survives; a failed run leaves an existing file intact and no
 *    temporary behind; a successful run replaces it);
 *  - every command checks its writes: stdout on /dev/full gives exit 1 and a message
 *    (run, plan --json, eval --greedy, info, tokenize, gen);
 *  - one tensor-split parser and check: non-finite, negative, overflowing, all-zero
 *    and malformed splits exit 2 with a message, in run, eval and plan alike;
 *  - --seed: -1 and 0..2^64-1 accepted, everything else refused (exit 2);
 *    --repeat-penalty 0 names the parameter and its range; gen prints a readable
 *    parameter count and no doubled prefix; /proc files are reported as special.
 * Needs the CLI (LOOM_BIN, set by ctest); exit 77 otherwise. */
#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "loom_gguf.h"
#include "test_util.h"

static const char *g_bin;
static char g_out[1 << 16];

/* Run `loom ARGS` with stderr captured (stdout to /dev/null unless redirected in args). */
static int loom(const char *args) {
    char cmd[16384];
    snprintf(cmd, sizeof cmd, "'%s' 2>&1 %s", g_bin, args); /* stderr to the pipe first */
    return test_run(cmd, g_out, sizeof g_out);
}

static char g_dir[256];

/* Entries of g_dir other than the ones named (temporaries left behind). */
static int stray_files(const char *keep1, const char *keep2) {
    DIR *d = opendir(g_dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, keep1) &&
            strcmp(e->d_name, keep2)) {
            fprintf(stderr, "  stray file: %s\n", e->d_name);
            n++;
        }
    closedir(d);
    return n;
}

static bool file_is(const char *path, const char *content) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    char buf[256];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return strcmp(buf, content) == 0;
}

static void test_gen(const char *vocab) {
    char args[8192], path[512];
    snprintf(path, sizeof path, "%s/out.gguf", g_dir);
    const char *shape = "--dim 64 --layers 1 --heads 4 --kv-heads 2 --ffn 128 --type Q8_0 -t 1";
    /* special files are refused before anything is written, and survive */
    const char *specials[] = {"/dev/null", "/dev/full", g_dir};
    for (int i = 0; i < 3; i++) {
        snprintf(args, sizeof args, "gen --vocab '%s' %s -o '%s'", vocab, shape, specials[i]);
        CHECK_MSG(loom(args) == 2, "gen -o %s: %s", specials[i], g_out);
        CHECK_MSG(strstr(g_out, "not a regular file") != NULL, "%s", g_out);
        struct stat st;
        CHECK(stat(specials[i], &st) == 0);
        if (i < 2) CHECK(S_ISCHR(st.st_mode));
    }
    /* a symbolic link is not followed (and not replaced) */
    char link[512];
    snprintf(link, sizeof link, "%s/link.gguf", g_dir);
    CHECK(symlink("/dev/null", link) == 0);
    snprintf(args, sizeof args, "gen --vocab '%s' %s -o '%s'", vocab, shape, link);
    CHECK_EQ_INT(loom(args), 2);
    struct stat lst;
    CHECK(lstat(link, &lst) == 0 && S_ISLNK(lst.st_mode));
    unlink(link);

    /* an existing file survives a failed generation (the vocab is missing: the
     * failure comes after the output was considered) and nothing is left behind */
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f) {
        fputs("precious", f);
        fclose(f);
    }
    snprintf(args, sizeof args, "gen --vocab /nonexistent.gguf %s -o '%s'", shape, path);
    CHECK_EQ_INT(loom(args), 1);
    CHECK(file_is(path, "precious"));
    CHECK_EQ_INT(stray_files("out.gguf", ""), 0);
    /* an unwritable directory: exit 1, the message names the path */
    snprintf(args, sizeof args, "gen --vocab '%s' %s -o /nonexistent-dir/x.gguf", vocab, shape);
    CHECK_EQ_INT(loom(args), 1);
    CHECK_MSG(strstr(g_out, "/nonexistent-dir/x.gguf") != NULL, "%s", g_out);

    /* success replaces the file; the summary has a readable parameter count and one
     * "loom gen:" prefix at most */
    snprintf(args, sizeof args, "gen --vocab '%s' %s -o '%s'", vocab, shape, path);
    CHECK_MSG(loom(args) == 0, "%s", g_out);
    CHECK(!file_is(path, "precious"));
    CHECK_EQ_INT(stray_files("out.gguf", ""), 0);
    CHECK_MSG(strstr(g_out, " M params") != NULL && strstr(g_out, "0.000 B") == NULL, "%s", g_out);
    loom_gguf *g = NULL;
    CHECK(loom_gguf_open(path, NULL, &g, NULL) == LOOM_OK);
    loom_gguf_close(g);
    snprintf(args, sizeof args, "gen --vocab '%s' %s --type NOPE -o '%s'", vocab, shape, path);
    CHECK_EQ_INT(loom(args), 2);
    CHECK_MSG(strstr(g_out, "gen: gen:") == NULL && strstr(g_out, "loom gen: ") == g_out, "%s", g_out);
    unlink(path);
}

static void test_stdout_full(const char *model, const char *vocab) {
    char args[8192], path[512];
    snprintf(path, sizeof path, "%s/full.gguf", g_dir);
    const char *cases[] = {
        "run '%s' -p hi -n 4 --temp 0",
        "plan '%s' --json",
        "plan '%s'",
        "eval '%s' --tokens 1,2,3 --greedy 3",
        "info '%s'",
        "info '%s' --json",
        "tokenize '%s' 'Once upon a time'",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char c[512];
        snprintf(c, sizeof c, cases[i], model);
        snprintf(args, sizeof args, "%s >/dev/full", c);
        CHECK_MSG(loom(args) == 1, "loom %s: exit status not 1 (%s)", args, g_out);
        CHECK_MSG(strstr(g_out, "standard output") || strstr(g_out, "writing"), "loom %s: %s", args, g_out);
        /* and to /dev/null it works */
        snprintf(args, sizeof args, "%s >/dev/null", c);
        CHECK_MSG(loom(args) == 0, "loom %s: %s", args, g_out);
    }
    snprintf(args, sizeof args, "gen --vocab '%s' --dim 64 --layers 1 --heads 4 --kv-heads 2 --ffn 128 -t 1 -o '%s' >/dev/full",
             vocab, path);
    CHECK_MSG(loom(args) == 1, "gen summary to /dev/full: %s", g_out);
    unlink(path);
    /* eval --out: a special file is a bad argument; an existing file is replaced whole */
    snprintf(args, sizeof args, "eval '%s' --tokens 1,2 --out /dev/full", model);
    CHECK_EQ_INT(loom(args), 2);
}

static void test_split(const char *model) {
    const char *bad[] = {"3e38,3e38", "1e39,1", "nan,1", "inf,1", "-1,2", "0,0", "1,abc", "1,,2", "", "1,2,"};
    const char *cmds[] = {"run '%s' -p x -n 1 --sim-devices gpu0=1GiB,gpu1=1GiB --gpu-layers 3 --tensor-split '%s'",
                          "eval '%s' --tokens 1 --sim-devices gpu0=1GiB,gpu1=1GiB --gpu-layers 3 --tensor-split '%s'",
                          "plan '%s' --sim-devices gpu0=1GiB,gpu1=1GiB --gpu-layers 3 --tensor-split '%s'"};
    char args[8192];
    for (size_t c = 0; c < 3; c++)
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            snprintf(args, sizeof args, cmds[c], model, bad[i]);
            CHECK_MSG(loom(args) == 2, "loom %s: %s", args, g_out);
            CHECK_MSG(strstr(g_out, "tensor split") != NULL, "loom %s: %s", args, g_out);
        }
    /* the overflow names the problem */
    snprintf(args, sizeof args, cmds[2], model, "3e38,3e38");
    loom(args);
    CHECK_MSG(strstr(g_out, "overflow") != NULL, "%s", g_out);
    /* good splits work in all three (',' and '/' separators) */
    const char *good[] = {"3,1", "1/1", "0,1"};
    for (size_t c = 0; c < 3; c++)
        for (size_t i = 0; i < 3; i++) {
            snprintf(args, sizeof args, cmds[c], model, good[i]);
            CHECK_MSG(loom(args) == 0, "loom %s: %s", args, g_out);
        }
}

static void test_misc(const char *model) {
    char args[8192];
    const char *ok[] = {"-1", "0", "18446744073709551615"};
    for (int i = 0; i < 3; i++) {
        snprintf(args, sizeof args, "run '%s' -p x -n 2 --seed %s", model, ok[i]);
        CHECK_MSG(loom(args) == 0, "--seed %s: %s", ok[i], g_out);
    }
    const char *bad[] = {"-2", "18446744073709551616", "12345678901234567890123", "' 5'", "+5", "1e3", "''"};
    for (int i = 0; i < 7; i++) {
        snprintf(args, sizeof args, "run '%s' -p x -n 2 --seed %s", model, bad[i]);
        CHECK_MSG(loom(args) == 2, "--seed %s accepted: %s", bad[i], g_out);
        CHECK_MSG(strstr(g_out, "2^64-1") != NULL, "%s", g_out);
    }
    snprintf(args, sizeof args, "run '%s' -p x -n 2 --repeat-penalty 0", model);
    CHECK_EQ_INT(loom(args), 2);
    CHECK_MSG(strstr(g_out, "repeat_penalty") && strstr(g_out, "> 0"), "%s", g_out);
    snprintf(args, sizeof args, "run '%s' -p x -n 2 --min-p 2", model);
    CHECK_EQ_INT(loom(args), 2);
    CHECK_MSG(strstr(g_out, "min_p") && strstr(g_out, "<= 1"), "%s", g_out);
    snprintf(args, sizeof args, "run '%s' -p x -t 5000", model);
    CHECK_EQ_INT(loom(args), 2);
    CHECK_MSG(strstr(g_out, "[0, 1024]") != NULL, "%s", g_out);
    /* a quantized KV cache without flash attention: refused with the reason before loading
     * (serve turns flash attention on by default, so only --no-flash-attn reaches it there) */
    const char *nofa[] = {"run '%s' -p x -n 2 -fa off --cache-type q8_0", "run '%s' -p x -n 2 -fa --no-flash-attn --cache-type q4_0",
                          "serve --host 256.0.0.1 --port 9 --no-flash-attn --cache-type q8_0",
                          "eval '%s' --tokens 1 --flash-attn false --cache-type q8_0"};
    for (int i = 0; i < 4; i++) {
        snprintf(args, sizeof args, nofa[i], model);
        CHECK_MSG(loom(args) == 2, "%s: %s", args, g_out);
        CHECK_MSG(strstr(g_out, "needs flash attention") != NULL, "%s: %s", args, g_out);
    }
    /* /proc files have no size: said so, not "empty" */
    CHECK_EQ_INT(loom("info /proc/self/status"), 1);
    CHECK_MSG(strstr(g_out, "no size") && !strstr(g_out, "empty"), "%s", g_out);
    CHECK_EQ_INT(loom("run /proc/self/status -p x"), 1);
    CHECK_MSG(strstr(g_out, "no size") != NULL, "%s", g_out);
}

int main(void) {
    g_bin = test_cli();
    if (!g_bin) return test_skip("test_llm_cli_errors", TEST_NO_CLI);
    snprintf(g_dir, sizeof g_dir, "/tmp/loom_test_cli_errors_%d", (int)getpid());
    CHECK(mkdir(g_dir, 0755) == 0);
    char model[4200], vocab[4200]; /* test_path returns a static buffer: copy */
    snprintf(model, sizeof model, "%s", test_path("models/stories260K.gguf"));
    snprintf(vocab, sizeof vocab, "%s", test_path("tests/data/vocab/ggml-vocab-llama-spm.gguf"));
    test_gen(vocab);
    test_stdout_full(model, vocab);
    test_split(model);
    test_misc(model);
    rmdir(g_dir);
    return test_finish("test_llm_cli_errors");
}
