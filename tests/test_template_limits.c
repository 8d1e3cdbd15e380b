/* Hostile and broken templates: each must end with an error status, a message
 * naming line:column, in well under a second of CPU time and with bounded memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "loom_template.h"
#include "test_util.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define LOOM_TEST_SANITIZED 1
#endif
#endif
#if defined(LOOM_SANITIZE) || defined(LOOM_TSAN) || defined(__SANITIZE_ADDRESS__) || defined(LOOM_TEST_SANITIZED)
#define TIME_LIMIT 5.0 /* sanitizers slow everything down several times */
#else
#define TIME_LIMIT 1.0
#endif

static const char *conv = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";

/* CPU time of this thread: what a hostile template costs, independent of machine load */
static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Compile + render src; expect failure with status st and a message starting with prefix. */
static void expect_fail(const char *name, const char *src, size_t len, const loom_template_limits *lim, loom_status st,
                        const char *prefix, int line) {
    double t0 = now_s();
    loom_template *t = NULL;
    loom_error err = {0};
    loom_template_result r = {0};
    loom_status got = loom_template_compile(src, len, lim, &t, &err);
    const char *msg = err.msg;
    int eline = 0;
    if (got == LOOM_OK) {
        got = loom_template_render_json(t, conv, strlen(conv), NULL, &r, &err);
        msg = r.error;
        eline = r.error_line;
        CHECK_MSG(got != LOOM_OK || r.text != NULL, "%s: success without text", name);
    } else {
        unsigned l = 0, c = 0;
        int off = 0;
        if (sscanf(err.msg, "template:%u:%u: %n", &l, &c, &off) == 2 && off) {
            msg = err.msg + off;
            eline = (int)l;
            CHECK_MSG(c > 0, "%s: no column in %s", name, err.msg);
        }
    }
    double dt = now_s() - t0;
    CHECK_MSG(got == st, "%s: status %s, want %s (%s)", name, loom_status_name(got), loom_status_name(st), msg);
    CHECK_MSG(!strncmp(msg, prefix, strlen(prefix)), "%s: message [%s], want prefix [%s]", name, msg, prefix);
    CHECK_MSG(line == 0 ? eline > 0 : eline == line, "%s: error line %d (want %d)", name, eline, line);
    CHECK_MSG(dt < TIME_LIMIT, "%s: took %.3f s", name, dt);
    printf("  %-28s %.3f s  %s\n", name, dt, msg);
    loom_template_result_free(&r);
    loom_template_free(t);
}

static char *repeat3(const char *a, int n, const char *mid, const char *b, size_t *len) {
    size_t la = strlen(a), lm = strlen(mid), lb = strlen(b);
    char *s = malloc(la * (size_t)n + lm + lb * (size_t)n + 1);
    size_t k = 0;
    for (int i = 0; i < n; i++, k += la) memcpy(s + k, a, la);
    memcpy(s + k, mid, lm);
    k += lm;
    for (int i = 0; i < n; i++, k += lb) memcpy(s + k, b, lb);
    s[k] = 0;
    *len = k;
    return s;
}

#define EXPECT(name, src, st, prefix, line) expect_fail(name, src, strlen(src), NULL, st, prefix, line)

int main(void) {
    /* loops and ranges */
    EXPECT("range(10**9)", "{% for i in range(10**9) %}{% endfor %}", LOOM_ERR_INVALID_ARG,
           "OverflowError: Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).", 1);
    EXPECT("nested range loops", "{% for i in range(100000) %}\n{% for j in range(100000) %}{% endfor %}{% endfor %}",
           LOOM_ERR_RANGE, "LimitError: the render exceeds max_iterations", 2);
    /* recursion */
    EXPECT("unbounded recursion", "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", LOOM_ERR_RANGE,
           "LimitError: the template recurses deeper than max_recursion (100)", 1);
    EXPECT("exponential recursion", "{% macro f(n) %}{% if n > 0 %}{{ f(n-1) }}{{ f(n-1) }}{% endif %}{% endmacro %}{{ f(60) }}",
           LOOM_ERR_RANGE, "LimitError: the render ", 1);
    EXPECT("recursive loop", "{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}", LOOM_ERR_RANGE,
           "LimitError: the template recurses deeper than max_recursion", 1);
    /* nesting */
    size_t len;
    char *s = repeat3("{% if true %}", 5000, "x", "{% endif %}", &len);
    expect_fail("5000 nested ifs", s, len, NULL, LOOM_ERR_RANGE, "LimitError: the template nests deeper than max_depth (256)", 1);
    free(s);
    s = repeat3("(", 20000, "1", ")", &len);
    char *w = malloc(len + 8);
    snprintf(w, len + 8, "{{ %s }}", s);
    expect_fail("20000 parentheses", w, strlen(w), NULL, LOOM_ERR_FORMAT, "TemplateSyntaxError: brackets nested too deep", 1);
    free(w);
    free(s);
    s = repeat3("not ", 100000, "x", "", &len);
    w = malloc(len + 8);
    snprintf(w, len + 8, "{{ %s }}", s);
    expect_fail("100000 nots", w, strlen(w), NULL, LOOM_ERR_RANGE, "LimitError: the template nests deeper than max_depth", 1);
    free(w);
    free(s);
    s = repeat3("1+", 100000, "1", "", &len);
    w = malloc(len + 8);
    snprintf(w, len + 8, "{{ %s }}", s);
    expect_fail("100000-term sum", w, strlen(w), NULL, LOOM_ERR_RANGE, "LimitError: the template nests or recurses too deeply", 1);
    free(w);
    free(s);
    EXPECT("deep containers", "{% set ns = namespace(x=[]) %}{% for i in range(100000) %}{% set ns.x = [ns.x] %}{% endfor %}",
           LOOM_ERR_RANGE, "LimitError: containers nested deeper than 1000", 1);
    /* size */
    /* printf-style widths: digits from the template saturate (found by fuzz_template: signed overflow) */
    EXPECT("%-format 20-digit width", "{{ \"%77777777777777777777d\" % 1 }}", LOOM_ERR_RANGE,
           "LimitError: format width too large", 1);
    EXPECT("%-format '*' width", "{{ \"%*d\" % (-9223372036854775807 - 1, 1) }}", LOOM_ERR_RANGE,
           "LimitError: format width too large", 1);
    EXPECT("x * 10**10", "{{ \"x\" * 10**10 }}", LOOM_ERR_RANGE, "LimitError: a string exceeds max_output", 1);
    EXPECT("[1] * 10**9", "{{ [1] * 10**9 }}", LOOM_ERR_RANGE, "LimitError: a list would exceed max_iterations", 1);
    EXPECT("output flood", "{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}", LOOM_ERR_RANGE,
           "LimitError: a string or the output exceeds max_output", 1);
    EXPECT("quadratic string growth", "{% set ns = namespace(s='') %}\n{% for i in range(100000) %}{% set ns.s = ns.s + 'xxxxxxxxxx' %}{% endfor %}",
           LOOM_ERR_RANGE, "LimitError: the render needs more than max_memory", 2);
    EXPECT("width bomb", "{{ '{:>999999}'.format('x') * 100 }}", LOOM_ERR_RANGE, "LimitError: a string exceeds max_output", 1);
    /* work per step is charged: big operands cannot make a step arbitrarily expensive
     * (sanitizer builds run these ~25x slower: they use a tenth of the step budget) */
    loom_template_limits work = {0};
#if defined(LOOM_SANITIZE) || defined(LOOM_TSAN) || defined(__SANITIZE_ADDRESS__) || defined(LOOM_TEST_SANITIZED)
    work.max_steps = 2000000;
#endif
#undef EXPECT
#define EXPECT(name, src, st, prefix, line) expect_fail(name, src, strlen(src), &work, st, prefix, line)
    EXPECT("substring test on 30 MB", "{% set s = 'a' * 30000000 %}{% for i in range(100000) %}{% if 'b' in s %}{% endif %}{% endfor %}",
           LOOM_ERR_RANGE, "LimitError: the render exceeds max_steps", 1);
    EXPECT("membership in 100k list", "{% set l = range(100000) | list %}{% for i in range(100000) %}{% if -1 in l %}{% endif %}{% endfor %}",
           LOOM_ERR_RANGE, "LimitError: the render exceeds max_steps", 1);
    EXPECT("UTF-8 indexing of 20 MB", "{% set s = '\xc3\xa9' * 10000000 %}{% for i in range(100000) %}{{ s[5000000] }}{% endfor %}",
           LOOM_ERR_RANGE, "LimitError: the render exceeds max_steps", 1);
    EXPECT("find in 30 MB", "{% set s = 'a' * 30000000 %}{% for i in range(100000) %}{{ s.find('b') }}{% endfor %}",
           LOOM_ERR_RANGE, "LimitError: the render exceeds max_steps", 1);
    EXPECT("sorting 100k items", "{% set l = range(100000) | list %}{% for i in range(10000) %}{% set x = l | sort %}{% endfor %}",
           LOOM_ERR_RANGE, "LimitError: the render ", 1);
    {
        /* 20000 variables, then lookups of a missing name; 100000 distinct names */
        size_t cap = 20000 * 24 + 200, k = 0;
        char *big = malloc(cap);
        for (int i = 0; i < 20000; i++) k += (size_t)snprintf(big + k, cap - k, "{%% set v%d = 1 %%}", i);
        k += (size_t)snprintf(big + k, cap - k, "{%% for i in range(100000) %%}{{ nope }}{%% endfor %%}");
        expect_fail("lookups among 20000 vars", big, k, &work, LOOM_ERR_RANGE, "LimitError: the render exceeds max_steps", 1);
        free(big);
        cap = 100000 * 16;
        big = malloc(cap);
        k = 0;
        for (int i = 0; i < 100000; i++) k += (size_t)snprintf(big + k, cap - k, "{{ a%d }}", i);
        double t0 = now_s();
        loom_template *tt = NULL;
        loom_error e2 = {0};
        CHECK(loom_template_compile(big, k, NULL, &tt, &e2) == LOOM_OK);
        double dt = now_s() - t0;
        CHECK_MSG(dt < TIME_LIMIT, "100000 distinct names compile in %.3f s", dt);
        printf("  %-28s %.3f s  compiled\n", "100000 distinct names", dt);
        loom_template_free(tt);
        free(big);
    }
#undef EXPECT
#define EXPECT(name, src, st, prefix, line) expect_fail(name, src, strlen(src), NULL, st, prefix, line)
    /* caller-chosen limits */
    loom_template_limits small = {0};
    small.max_output = 100;
    const char *big = "{% for i in range(50) %}{{ i }} {% endfor %}";
    expect_fail("max_output 100", big, strlen(big), &small, LOOM_ERR_RANGE, "LimitError: a string or the output exceeds max_output (100 bytes)", 1);
    small.max_output = 0;
    small.max_steps = 1000;
    const char *busy = "{% for i in range(2000) %}{{ i }}{% endfor %}";
    expect_fail("max_steps 1000", busy, strlen(busy), &small, LOOM_ERR_RANGE, "LimitError: the render exceeds max_steps (1000", 1);
    small.max_steps = 0;
    small.max_iterations = 10;
    expect_fail("max_iterations 10", big, strlen(big), &small, LOOM_ERR_RANGE, "LimitError: the render exceeds max_iterations (10 ", 1);
    small.max_iterations = 0;
    small.max_recursion = 3;
    const char *rec = "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(2) }}|{{ f(5) }}";
    expect_fail("max_recursion 3", rec, strlen(rec), &small, LOOM_ERR_RANGE, "LimitError: the template recurses deeper than max_recursion (3)", 1);
    /* errors carry positions */
    EXPECT("syntax error position", "ok\n  {{ 1 + }}", LOOM_ERR_FORMAT, "TemplateSyntaxError: unexpected 'end of print statement'", 2);
    EXPECT("unclosed block", "{% for x in y %}\n{% if x %}", LOOM_ERR_FORMAT,
           "TemplateSyntaxError: Unexpected end of template. Jinja was looking for the following tags: 'elif' or 'else' or 'endif'. The innermost block that needs to be closed is 'if'.", 2);
    EXPECT("unknown filter", "\n\n{{ x | frob }}", LOOM_ERR_FORMAT, "TemplateAssertionError: No filter named 'frob'.", 3);
    EXPECT("raise_exception", "a\nb{{ raise_exception('nope') }}", LOOM_ERR_INVALID_ARG, "TemplateError: nope", 2);
    EXPECT("undefined", "{{ messages[0].content.nope.deeper }}", LOOM_ERR_INVALID_ARG,
           "UndefinedError: 'str object' has no attribute 'nope'", 1);
    EXPECT("unterminated string", "{{ 'abc }}", LOOM_ERR_FORMAT, "TemplateSyntaxError: unexpected char \"'\" at 3", 1);
    EXPECT("unterminated comment", "x {# abc", LOOM_ERR_FORMAT, "TemplateSyntaxError: Missing end of comment tag", 1);
    EXPECT("unterminated raw", "{% raw %} abc", LOOM_ERR_FORMAT, "TemplateSyntaxError: Missing end of raw directive", 1);
    EXPECT("bad char", "{{ a $ b }}", LOOM_ERR_FORMAT, "TemplateSyntaxError: unexpected char '$' at 5", 1);
    EXPECT("mismatched bracket", "{{ (a] }}", LOOM_ERR_FORMAT, "TemplateSyntaxError: unexpected ']', expected ')'", 1);
    /* invalid UTF-8 and NUL */
    loom_template *t = NULL;
    loom_error err = {0};
    CHECK(loom_template_compile("a\xff", 2, NULL, &t, &err) == LOOM_ERR_FORMAT && t == NULL);
    CHECK(loom_template_compile("a\0b{{ 1 }}", 10, NULL, &t, &err) == LOOM_OK);
    loom_template_result r = {0};
    CHECK(loom_template_render_json(t, conv, strlen(conv), NULL, &r, &err) == LOOM_OK && r.len == 4 && !memcmp(r.text, "a\0b1", 4));
    loom_template_result_free(&r);
    /* bad conversations are argument errors */
    CHECK(loom_template_render_json(t, "{\"messages\": [", 14, NULL, &r, &err) == LOOM_ERR_INVALID_ARG && r.text == NULL);
    CHECK_MSG(strstr(r.error, "conversation JSON:1:") != NULL, "%s", r.error);
    CHECK(loom_template_render_json(t, "[]", 2, NULL, &r, &err) == LOOM_ERR_INVALID_ARG);
    CHECK(loom_template_render_json(t, "{\"kwargs\": {}}", 14, NULL, &r, &err) == LOOM_ERR_INVALID_ARG);
    loom_template_free(t);
    CHECK(loom_template_compile(NULL, 0, NULL, &t, &err) == LOOM_ERR_INVALID_ARG && t == NULL);
    loom_template_free(NULL);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("peak RSS %ld MiB\n", ru.ru_maxrss / 1024);
#if !defined(LOOM_SANITIZE) && !defined(LOOM_TSAN) && !defined(LOOM_TEST_SANITIZED) && !defined(__SANITIZE_ADDRESS__)
    CHECK_MSG(ru.ru_maxrss / 1024 < 400, "peak RSS %ld MiB", ru.ru_maxrss / 1024);
#endif
    return test_finish("test_template_limits");
}
