/* GBNF parser and byte matcher against hand-computed sets: for each grammar,
 * strings in the language (complete), strict prefixes of sentences (accepted
 * so far, not complete) and strings outside (rejected at some byte), including
 * UTF-8 classes, characters split across calls, escapes and the repetition
 * operators; then the errors (syntax with line/column, undefined rules, left
 * recursion, empty languages, limits). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "loom_grammar.h"
#include "test_util.h"

enum { FULL = 1, PREFIX = 2, REJECT = 3 };

/* Classify s (len bytes) for grammar text gt, feeding the bytes in chunks of
 * `chunk` bytes (0 = all at once) to exercise split characters. */
static int classify(const loom_grammar *g, const char *s, size_t len, size_t chunk) {
    loom_grammar_matcher *m = NULL;
    if (loom_grammar_matcher_new(g, NULL, NULL, &m, NULL) != LOOM_OK) return -1;
    int r = 0;
    size_t i = 0;
    if (chunk == 0) chunk = len ? len : 1;
    while (i < len) {
        size_t n = len - i < chunk ? len - i : chunk;
        loom_error err = {0};
        if (loom_grammar_matcher_accept_bytes(m, s + i, n, &err) != LOOM_OK) {
            r = REJECT;
            break;
        }
        i += n;
    }
    if (!r) r = loom_grammar_matcher_is_accepting(m) ? FULL : PREFIX;
    loom_grammar_matcher_free(m);
    return r;
}

typedef struct tcase {
    const char *s;
    int want;
} tcase;

static void check_grammar(const char *gt, const tcase *cases, int line) {
    loom_grammar *g = NULL;
    loom_error err = {0};
    loom_status st = loom_grammar_new(gt, strlen(gt), NULL, NULL, &g, &err);
    CHECK_MSG(st == LOOM_OK, "line %d: grammar failed: %s", line, err.msg);
    if (st != LOOM_OK) return;
    for (const tcase *c = cases; c->s; c++) {
        size_t len = strlen(c->s);
        for (size_t chunk = 0; chunk <= 3; chunk++) {
            int got = classify(g, c->s, len, chunk);
            CHECK_MSG(got == c->want, "line %d: '%s' (chunk %zu): got %d want %d", line, c->s, chunk, got, c->want);
        }
    }
    loom_grammar_free(g);
}

#define G(text, ...)                                                   \
    do {                                                               \
        static const tcase cs_[] = {__VA_ARGS__, {NULL, 0}};           \
        check_grammar(text, cs_, __LINE__);                            \
    } while (0)

static void languages(void) {
    G("root ::= \"abc\"", {"abc", FULL}, {"ab", PREFIX}, {"", PREFIX}, {"abd", REJECT}, {"abcd", REJECT},
      {"x", REJECT});
    G("root ::= (\"a\" | \"bc\") \"d\"", {"ad", FULL}, {"bcd", FULL}, {"bc", PREFIX}, {"bd", REJECT}, {"acd", REJECT});
    G("root ::= \"a\"? \"b\"* \"c\"+", {"c", FULL}, {"ac", FULL}, {"abbc", FULL}, {"abccc", FULL}, {"bc", FULL},
      {"", PREFIX}, {"ab", PREFIX}, {"ca", REJECT}, {"aa", REJECT}, {"cb", REJECT});
    G("root ::= \"x\"{2,4}", {"x", PREFIX}, {"xx", FULL}, {"xxx", FULL}, {"xxxx", FULL}, {"xxxxx", REJECT});
    G("root ::= \"x\"{3}", {"xx", PREFIX}, {"xxx", FULL}, {"xxxx", REJECT});
    G("root ::= \"x\"{2,} \"y\"", {"xxy", FULL}, {"xxxxxxy", FULL}, {"xy", REJECT}, {"xxxx", PREFIX});
    G("root ::= \"ab\"{0,2} \"c\"", {"c", FULL}, {"abc", FULL}, {"ababc", FULL}, {"abababc", REJECT}, {"abac", REJECT});
    G("root ::= \"a\" \"b\"{0} \"c\"", {"ac", FULL}, {"abc", REJECT});
    G("root ::= (\"a\" \"b\")+ ", {"ab", FULL}, {"abab", FULL}, {"aba", PREFIX}, {"abb", REJECT});
    G("root ::= \"x\"*? \"y\"", {"y", FULL}, {"xy", FULL}, {"xxxy", FULL}); /* stacked operators: (x*)? */
    G("root ::= [a-c] [^a-c]", {"ad", FULL}, {"cz", FULL}, {"da", REJECT}, {"aa", REJECT}, {"a\xc3\xa9", FULL},
      {"a\n", FULL});
    /* negated class over UTF-8: valid scalar values only */
    G("root ::= [^a]", {"b", FULL}, {"\xc3\xa9", FULL}, {"\xc3", PREFIX}, {"a", REJECT}, {"\xff", REJECT},
      {"\xc3\x28", REJECT}, {"\xed\xa0\x80", REJECT}, {"\xc0\x80", REJECT}, {"\xe0\x80\x80", REJECT},
      {"\xf4\x90\x80\x80", REJECT}, {"\xf0\x9f\x98\x80", FULL}, {"\x80", REJECT}, {"\xed\x9f\xbf", FULL});
    /* Greek range U+03B1..U+03C9 */
    G("root ::= [\xce\xb1-\xcf\x89]+", {"\xce\xb1\xce\xb2", FULL}, {"\xce", PREFIX}, {"\xce\xb1\xcf", PREFIX},
      {"a", REJECT}, {"\xce\xb0", REJECT}, {"\xcf\x89", FULL}, {"\xcf\x8a", REJECT});
    /* 3-byte range (hiragana) and 4-byte range (emoticons) */
    G("root ::= [\xe3\x81\x81-\xe3\x82\x9f] [\\U0001F600-\\U0001F64F]", {"\xe3\x81\x81\xf0\x9f\x98\x80", FULL},
      {"\xe3\x82\x9f\xf0\x9f\x99\x8f", FULL}, {"\xe3\x81\x80", REJECT}, {"\xe3\x81\x81\xf0\x9f\x99\x90", REJECT},
      {"\xe3\x81\x81\xf0\x9f", PREFIX});
    /* escapes */
    G("root ::= \"\\x41\\u00e9\\U0001F600\\n\\t\\\"\\\\\\[\\]\\-\"", {"A\xc3\xa9\xf0\x9f\x98\x80\n\t\"\\[]-", FULL},
      {"A\xc3\xa9\xf0\x9f\x98\x80\n\t\"\\[]", PREFIX});
    G("root ::= [\\x00-\\x1f\\]\\-]", {"\x01", FULL}, {"]", FULL}, {"-", FULL}, {" ", REJECT});
    G("root ::= [a-]", {"a", FULL}, {"-", FULL}, {"b", REJECT});
    /* any character, newline included */
    G("root ::= . .", {"\n\xc3\xa9", FULL}, {"ab", FULL}, {"a", PREFIX}, {"abc", REJECT});
    /* comments, newlines inside parentheses and after | */
    G("# a comment\nroot ::= ( # open\n  \"a\"\n  | \"b\" # two\n) x |\n  \"c\"\nx ::= \"!\" # end\n",
      {"a!", FULL}, {"b!", FULL}, {"c", FULL}, {"c!", REJECT}, {"a", PREFIX});
    /* recursion: balanced parentheses */
    G("root ::= \"(\" root \")\" root | \"\"", {"", FULL}, {"()", FULL}, {"(())()", FULL}, {"(()", PREFIX},
      {"())", REJECT});
    /* a grammar of arithmetic (nested rules, classes, repetition) */
    G("root ::= expr\nexpr ::= term ([-+*/] term)*\nterm ::= num | \"(\" expr \")\"\nnum ::= [0-9]+",
      {"1+2", FULL}, {"(1+23)*4", FULL}, {"((7))", FULL}, {"1+", PREFIX}, {"(1", PREFIX}, {"1)", REJECT},
      {"+1", REJECT}, {"1++2", REJECT});
    /* empty alternatives and nullable rules in sequence */
    G("root ::= a b c \"!\"\na ::= \"a\" | \"\"\nb ::= | \"b\"\nc ::= \"c\"?", {"!", FULL}, {"abc!", FULL},
      {"ac!", FULL}, {"b!", FULL}, {"cb!", REJECT});
    /* a language containing only the empty string */
    G("root ::= \"\"", {"", FULL}, {"a", REJECT});
    /* CRLF line ends */
    G("root ::= a\r\na ::= \"x\"\r\n", {"x", FULL});
    /* rule names with digits and dashes; the start rule need not come first */
    G("item-2 ::= \"i\"\nroot ::= item-2 \"-\" item-2", {"i-i", FULL}, {"ii", REJECT});
    G("my_rule ::= \"u\"\nroot ::= my_rule+", {"uu", FULL}, {"", PREFIX}); /* '_' in names: Loom's extension */
}

/* JSON in a llama.cpp-style grammar (written here): accepted and rejected documents. */
static void json_grammar(void) {
    const char *gt =
        "root ::= object\n"
        "value ::= object | array | string | number | (\"true\" | \"false\" | \"null\") ws\n"
        "object ::= \"{\" ws ( string \":\" ws value (\",\" ws string \":\" ws value)* )? \"}\" ws\n"
        "array ::= \"[\" ws ( value (\",\" ws value)* )? \"]\" ws\n"
        "string ::= \"\\\"\" ( [^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4}) )* \"\\\"\" ws\n"
        "number ::= (\"-\"? ([0-9] | [1-9] [0-9]{0,15})) (\".\" [0-9]+)? ([eE] [-+]? [0-9]+)? ws\n"
        "ws ::= | \" \" | \"\\n\" [ \\t]{0,20}\n";
    G(gt, {"{}", FULL}, {"{\"a\": 1}", FULL}, {"{\"a\":[1,2.5e-3,\"x\",true,null,{}]}", FULL},
      {"{\"k\": \"\\u00e9\\n\"}", FULL}, {"{\"\xc3\xa9\": -0.5}", FULL}, {"{\"a\"", PREFIX}, {"{\"a\": [1,", PREFIX},
      {"[]", REJECT}, {"{a:1}", REJECT}, {"{\"a\":01}", REJECT}, {"{\"a\":\"\x01\"}", REJECT},
      {"{\"a\":\"\\x\"}", REJECT}, {"{\"a\":1,}", REJECT}, {"{} {}", REJECT});
}

/* Errors: status and message (line/column or rule name). */
static void expect_error(const char *gt, loom_status want, const char *needle, int line) {
    loom_grammar *g = (loom_grammar *)1;
    loom_error err = {0};
    loom_status st = loom_grammar_new(gt, strlen(gt), NULL, NULL, &g, &err);
    CHECK_MSG(st == want, "line %d: status %s want %s (%s)", line, loom_status_name(st), loom_status_name(want),
              err.msg);
    CHECK_MSG(g == NULL, "line %d: *out not NULL on failure", line);
    CHECK_MSG(strstr(err.msg, needle) != NULL, "line %d: message '%s' lacks '%s'", line, err.msg, needle);
    if (st == LOOM_OK) loom_grammar_free(g);
}
#define E(text, st, needle) expect_error(text, st, needle, __LINE__)

static void errors(void) {
    E("root ::= \"abc", LOOM_ERR_FORMAT, "line 1, column 10: unterminated string");
    E("root ::= [abc", LOOM_ERR_FORMAT, "line 1, column 10: unterminated character class");
    E("root ::= \"a\"\nroot ::= \"b\"", LOOM_ERR_FORMAT, "line 2, column 1: rule 'root' is already defined at line 1");
    E("root ::= x", LOOM_ERR_FORMAT, "line 1, column 10: undefined rule 'x'");
    E("a ::= \"x\"", LOOM_ERR_FORMAT, "no rule named 'root'");
    E("root ::= *", LOOM_ERR_FORMAT, "line 1, column 10: nothing to repeat");
    E("root ::= \"\"*", LOOM_ERR_FORMAT, "nothing to repeat");
    E("root ::= \"\\q\"", LOOM_ERR_FORMAT, "line 1, column 11: unknown escape '\\q'");
    E("root ::= \"\\x4\"", LOOM_ERR_FORMAT, "expecting 2 hex digits");
    E("root ::= \"\\UFFFFFFFF\"", LOOM_ERR_FORMAT, "beyond U+10FFFF");
    E("root ::= [z-a]", LOOM_ERR_FORMAT, "line 1, column 12: empty range");
    E("root ::= \"a\"{3,2}", LOOM_ERR_FORMAT, "max < min");
    E("root ::= \"a\"{2001}", LOOM_ERR_RANGE, "repetition count above 2000");
    E("root ::= \"a\"{1,x}", LOOM_ERR_FORMAT, "expecting '}'");
    E("root ::= (\"a\"", LOOM_ERR_FORMAT, "expecting ')' to close the '(' at line 1, column 10");
    E("root ::= \"a\")", LOOM_ERR_FORMAT, "unbalanced ')'");
    E("root := \"a\"", LOOM_ERR_FORMAT, "line 1, column 6: expecting '::='");
    E("root ::= \"a\"\n  \"b\"", LOOM_ERR_FORMAT, "line 2, column 3: expecting a rule name, got '\"'");
    E("root ::= [^\\x00-\\U0010FFFF]", LOOM_ERR_FORMAT, "character class matches nothing");
    E("root ::= \"\xff\"", LOOM_ERR_FORMAT, "invalid UTF-8");
    E("root ::= <think>", LOOM_ERR_FORMAT, "needs a tokenizer");
    /* left recursion, direct, indirect, through a nullable prefix */
    E("root ::= root \"a\" | \"b\"", LOOM_ERR_FORMAT, "left recursion: root -> root");
    E("root ::= a\na ::= b \"x\" | \"y\"\nb ::= a", LOOM_ERR_FORMAT, "left recursion: a -> b -> a");
    E("root ::= n root \"x\" | \"y\"\nn ::= \"\" | \"z\"", LOOM_ERR_FORMAT, "left recursion: root -> root");
    /* languages without a finite sentence */
    E("root ::= \"x\" root", LOOM_ERR_FORMAT, "the grammar accepts no string");
    E("root ::= \"a\" | b\nb ::= \"b\" b", LOOM_ERR_FORMAT, "rule 'b' (line 2) derives no finite string");
    /* limits */
    E("root ::= ((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((("
      "((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((("
      "((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((\"a\"",
      LOOM_ERR_RANGE, "nested deeper than 256");
    /* NULL arguments */
    loom_grammar *g;
    CHECK(loom_grammar_new(NULL, 3, NULL, NULL, &g, NULL) == LOOM_ERR_INVALID_ARG);
    CHECK(loom_grammar_new("root ::= \"a\"", 12, NULL, NULL, NULL, NULL) == LOOM_ERR_INVALID_ARG);
}

/* A named start rule and an unused rule that would be an error if reachable
 * must still be defined (undefined references are errors anywhere). */
static void roots(void) {
    const char *gt = "a ::= \"x\" b\nb ::= \"y\"\nroot ::= \"r\"";
    loom_grammar *g = NULL;
    loom_error err = {0};
    CHECK(loom_grammar_new(gt, strlen(gt), "a", NULL, &g, &err) == LOOM_OK);
    if (g) {
        CHECK_EQ_INT(classify(g, "xy", 2, 0), FULL);
        CHECK_EQ_INT(classify(g, "r", 1, 0), REJECT);
        loom_grammar_info info;
        loom_grammar_get_info(g, &info);
        CHECK_EQ_INT(info.n_rules, 2); /* root is unreachable from a */
        loom_grammar_free(g);
    }
}

int main(void) {
    languages();
    json_grammar();
    errors();
    roots();
    return test_finish("test_grammar_gbnf");
}
