/* Internal declarations of the template engine (src/template): arena, strings
 * with content spans, the value model, the syntax tree and the render context.
 * Files: tpl_value.c (values, Python str/repr/==/<), tpl_unicode.c (UTF-8, case
 * maps, character classes), tpl_lexer.c, tpl_parser.c, tpl_eval.c (statements,
 * expressions), tpl_call.c (calls, macros, attributes), tpl_filters.c (filters and
 * tests), tpl_methods.c (str/dict/list methods, globals, str.format, %, strftime),
 * tpl_json.c (tojson, JSON input, float repr), tpl_api.c (public API). */
#ifndef LOOM_TPL_H
#define LOOM_TPL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "llm/utf8.h" /* loom_utf8_encode */
#include "loom_template.h"

/* ------------------------------------------------------------------ arena */

typedef struct tpl_chunk {
    struct tpl_chunk *next;
    size_t size, used;
    /* data follows, max-aligned */
} tpl_chunk;

typedef struct tpl_arena {
    tpl_chunk *head;
    size_t total;  /* bytes obtained from malloc */
    size_t limit;  /* 0: unlimited */
} tpl_arena;

void *tpl_arena_alloc(tpl_arena *a, size_t n); /* zeroed; NULL on limit or malloc failure */
void tpl_arena_free(tpl_arena *a);

/* ------------------------------------------------------------------ strings */

typedef struct tspan {
    uint32_t a, b; /* [a, b) byte offsets */
} tspan;

/* Immutable string: UTF-8 bytes (NUL-terminated, may contain NUL), content spans. */
typedef struct tstr {
    uint32_t len;
    uint32_t nspan;
    uint32_t nchars;  /* code points; UINT32_MAX until computed */
    uint8_t ascii;    /* all bytes < 0x80 */
    tspan *spans;
    char data[];
} tstr;

/* ------------------------------------------------------------------ values */

typedef enum tv_kind {
    TV_UNDEF = 0,
    TV_NONE,
    TV_BOOL,
    TV_INT,
    TV_FLOAT,
    TV_STR,
    TV_LIST,   /* sub: list kind */
    TV_DICT,
    TV_NS,     /* jinja2 namespace */
    TV_MACRO,  /* macro or call-block caller */
    TV_FUNC,   /* builtin function or bound method */
    TV_LOOP,   /* loop context */
    TV_CYCLER,
    TV_JOINER
} tv_kind;

/* TV_LIST sub-kinds: what Python type the sequence is. */
enum {
    LK_LIST = 0,
    LK_TUPLE,
    LK_GEN,     /* generator (map/select/...): consumable, always true, no len */
    LK_REVITER, /* list_reverseiterator */
    LK_KEYS,    /* dict_keys */
    LK_VALUES,  /* dict_values */
    LK_ITEMS,   /* dict_items */
    LK_RANGE,
    LK_GROUP    /* groupby's (grouper, list) named tuple */
};

/* TV_UNDEF sub-kinds. */
enum {
    U_MISSING = 0, /* internal: argument not given */
    U_NAME,        /* 'x' is undefined */
    U_ATTR,        /* 'dict object' has no attribute 'x' */
    U_ITEM,        /* list object has no element 5 */
    U_HINT,        /* fixed message */
    U_UNSAFE       /* SecurityError when used */
};

struct tlist;
struct tdict;
struct tns;
struct tmacro;
struct tfunc;
struct tloop;
struct tobj;

typedef struct tval {
    uint8_t k;   /* tv_kind */
    uint8_t sub; /* list kind / undefined kind */
    uint16_t x;  /* undefined: kind of the object (tv_kind | list kind << 8 folded) */
    uint32_t y;
    union {
        bool b;
        int64_t i;
        double f;
        tstr *s;
        struct tlist *l;
        struct tdict *d;
        struct tns *ns;
        struct tmacro *m;
        struct tfunc *fn;
        struct tloop *lp;
        struct tobj *o;
        const void *p;
    } u;
} tval;

typedef struct tlist {
    uint32_t n;
    uint32_t pos;   /* generators: items before pos are consumed */
    uint32_t depth; /* nesting depth of containers inside (1 = flat) */
    int64_t r0, r1, r2; /* range(start, stop, step) for printing */
    tval *v;
} tlist;

typedef struct tdict {
    uint32_t n, cap;
    uint32_t depth;
    tval *keys, *vals;
    uint32_t *index; /* open addressing (slot = entry + 1), built when n > 8 */
    uint32_t icap;
} tdict;

typedef struct tns {
    tdict *attrs;
} tns;

typedef struct tobj { /* cycler / joiner state */
    tval *items;
    uint32_t n, pos;
    bool used;
    tstr *sep;
} tobj;

struct tnode;
struct tscope;

typedef struct tmacro {
    const struct tnode *def;     /* S_MACRO or S_CALLBLOCK node */
    struct tscope *closure;      /* scope where it was defined */
    const tstr *name;            /* "caller" for call blocks */
    bool autoescape;             /* autoescape where it was defined: its body's {{ }} */
} tmacro;

typedef struct tfunc {
    uint16_t id;  /* builtin id (F_* in tpl_methods.c) */
    tval self;    /* bound object (TV_UNDEF for globals) */
} tfunc;

typedef struct tloop {
    const tval *items;
    int64_t n;
    int64_t i;       /* index0 */
    int depth0;
    const struct tnode *node; /* the for statement (recursive loops) */
    struct tscope *scope;     /* scope the loop was started from */
    tval changed_last;
    bool has_changed;
} tloop;

/* ------------------------------------------------------------------ syntax tree */

typedef enum tn_kind {
    /* expressions */
    E_CONST = 1, E_NAME, E_GETATTR, E_GETITEM, E_SLICE, E_CALL, E_FILTER, E_TEST,
    E_BIN, E_CONCAT, E_NEG, E_POS, E_NOT, E_AND, E_OR, E_COMPARE, E_COND,
    E_LIST, E_TUPLE, E_DICT, E_NSREF,
    /* statements */
    S_BODY, S_TEXT, S_OUTPUT, S_IF, S_FOR, S_SET, S_SETBLOCK, S_MACRO, S_CALLBLOCK,
    S_FILTERBLOCK, S_WITH, S_BREAK, S_CONTINUE, S_SCOPE, S_FAIL
} tn_kind;

enum { OP_ADD = 1, OP_SUB, OP_MUL, OP_DIV, OP_FLOORDIV, OP_MOD, OP_POW };
enum { CMP_EQ = 1, CMP_NE, CMP_LT, CMP_LE, CMP_GT, CMP_GE, CMP_IN, CMP_NOTIN };

/* node flags */
enum {
    NF_SOFT = 1,       /* filter/test inside if/cond-expr: unknown names fail at run time */
    NF_RECURSIVE = 2,  /* for ... recursive */
    NF_CALLER = 4,     /* macro body references caller */
    NF_VARARGS = 8,    /* ... varargs */
    NF_KWARGS = 16,    /* ... kwargs */
    NF_USES_LOOP = 32, /* for body references `loop` */
    NF_FOLDSLICE = 64  /* expression jinja2 may constant-fold, holding a slice subscript */
};

typedef struct tnode {
    uint8_t kind, op;
    uint16_t flags;
    uint32_t line, col;
    struct tnode *a, *b, *c, *d, *e;
    struct tnode **kids;   /* args / items / statements / elif tests / targets */
    struct tnode **kids2;  /* kwarg values / dict values / elif bodies / with values */
    const tstr **names;    /* kwarg names / macro params */
    uint8_t *ops;          /* compare operators */
    uint32_t nkids, nkids2;
    uint32_t sym;          /* E_NAME, S_MACRO name, E_NSREF namespace */
    int fid;               /* filter / test id (-1: unknown) */
    const tstr *str;       /* text, attribute / filter / test / macro name */
    tval cv;               /* E_CONST */
} tnode;

/* ------------------------------------------------------------------ template */

struct loom_template {
    tpl_arena arena;    /* tree, constants, symbols */
    tnode *root;
    const tstr **syms;  /* symbol id -> name */
    uint32_t nsyms, capsyms;
    uint32_t *sym_hash; /* open addressing: symbol id + 1 */
    uint32_t sym_hcap;
    int *sym_global;    /* symbol id -> builtin global id (or -1) */
    loom_template_limits lim;
};

/* well-known symbols, interned first in every template */
enum { SYM_LOOP = 0, SYM_CALLER, SYM_VARARGS, SYM_KWARGS, SYM_MESSAGES, SYM_TOOLS,
       SYM_ADD_GEN, SYM_BOS, SYM_EOS, SYM_FIRST_FREE };

uint32_t tpl_intern(loom_template *t, const char *s, size_t n, bool *ok);
int tpl_find_sym(const loom_template *t, const char *s, size_t n); /* -1 if absent */

/* ------------------------------------------------------------------ render context */

typedef struct tbuf {
    char *d;
    size_t n, cap;
    tspan *sp;
    size_t nsp, spcap;
} tbuf;

typedef struct tvar {
    uint32_t sym;
    tval v;
} tvar;

typedef struct tscope {
    struct tscope *parent;
    tvar *vars;
    uint32_t n, cap;
} tscope;

/* Python exception names used as message prefixes. */
typedef enum tpl_exc {
    X_SYNTAX = 0, X_ASSERT, X_UNDEFINED, X_TYPE, X_VALUE, X_ZERODIV, X_OVERFLOW, X_SECURITY,
    X_RUNTIME, X_TEMPLATE, X_LIMIT, X_INDEX, X_KEY, X_ATTRIBUTE, X_MEMORY, X_FILTERARG
} tpl_exc;

typedef struct tpl_ctx {
    const loom_template *t;
    tpl_arena ar;
    tscope *root, *scope;
    tbuf *out;
    const tnode *pos;         /* node being evaluated (error location) */
    int depth, calls;
    uint64_t steps, iters;
    size_t heap;              /* bytes held by tbufs */
    uintptr_t stack_base;     /* address of a local at the render's entry */
    loom_template_limits lim;
    struct { int year, month, day, hour, minute, second; } now;
    bool folding;             /* evaluating as jinja2's optimizer would (as_const) */
    bool autoescape;          /* inside {% autoescape true %} (eval_ctx.autoescape) */
    /* error */
    bool failed;
    loom_status st;
    uint32_t eline, ecol;
    char emsg[LOOM_ERROR_MSG_MAX];
} tpl_ctx;

/* Fail with a Python-style exception message at c->pos (or at node when given). Returns -1. */
int tpl_fail(tpl_ctx *c, tpl_exc x, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
int tpl_failv(tpl_ctx *c, tpl_exc x, const char *fmt, va_list ap);
int tpl_oom(tpl_ctx *c);
void *tpl_alloc(tpl_ctx *c, size_t n); /* arena; fails the render on limit */

/* ---- tbuf (malloc'd, bounded by max_output, accounted in c->heap) */
int tb_put(tpl_ctx *c, tbuf *b, const char *s, size_t n);
int tb_putc(tpl_ctx *c, tbuf *b, char ch);
int tb_puts(tpl_ctx *c, tbuf *b, const char *s);
int tb_printf(tpl_ctx *c, tbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
int tb_put_taint(tpl_ctx *c, tbuf *b, const char *s, size_t n);  /* whole range is content */
int tb_put_str(tpl_ctx *c, tbuf *b, const tstr *s);               /* keeps s's spans */
int tb_put_sub(tpl_ctx *c, tbuf *b, const tstr *s, size_t a, size_t e); /* bytes [a,e) */
int tb_mark(tpl_ctx *c, tbuf *b, size_t a, size_t e);             /* mark [a,e) as content */
tstr *tb_finish(tpl_ctx *c, tbuf *b); /* copies into the arena, frees b; NULL on failure */
void tb_free(tpl_ctx *c, tbuf *b);

/* ---- strings */
tstr *tstr_new(tpl_ctx *c, const char *s, size_t n);          /* render arena */
tstr *tstr_new_taint(tpl_ctx *c, const char *s, size_t n, bool taint);
tstr *tstr_static(tpl_arena *a, const char *s, size_t n);      /* template arena */
tstr *tstr_sub(tpl_ctx *c, const tstr *s, size_t a, size_t e); /* byte range, keeps spans */
tstr *tstr_concat(tpl_ctx *c, const tstr *x, const tstr *y); /* keeps both strings' spans */
tstr *tstr_taint_like(tpl_ctx *c, tbuf *b, const tstr *src);   /* finish b; whole content if src has spans */
bool tstr_eq(const tstr *s, const char *lit);
uint32_t tstr_nchars(tstr *s);
size_t tstr_byte_at(const tstr *s, int64_t cp); /* byte offset of code point cp (clamped) */
extern const tstr tpl_empty_str;

/* ---- values */
static inline tval tv_none(void) { tval v = {0}; v.k = TV_NONE; return v; }
static inline tval tv_bool(bool b) { tval v = {0}; v.k = TV_BOOL; v.u.b = b; return v; }
static inline tval tv_int(int64_t i) { tval v = {0}; v.k = TV_INT; v.u.i = i; return v; }
static inline tval tv_float(double f) { tval v = {0}; v.k = TV_FLOAT; v.u.f = f; return v; }
static inline tval tv_str(tstr *s) { tval v = {0}; v.k = TV_STR; v.u.s = s; return v; }
/* markupsafe.Markup: a TV_STR with sub = 1 (from |safe, |escape); Markup + str escapes the str */
static inline tval tv_markup(tstr *s) { tval v = tv_str(s); v.sub = 1; return v; }
static inline bool tv_is_markup(tval v) { return v.k == TV_STR && v.sub == 1; }
static inline tval tv_missing(void) { tval v = {0}; v.k = TV_UNDEF; v.sub = U_MISSING; return v; }
static inline bool tv_is_missing(tval v) { return v.k == TV_UNDEF && v.sub == U_MISSING; }
tval tv_list(tlist *l, int kind);
tval tv_undef_name(const tstr *name);
tval tv_undef_attr(tpl_ctx *c, tval obj, const tstr *name);
tval tv_undef_item(tpl_ctx *c, tval obj, tval key);
tval tv_undef_hint(tpl_ctx *c, const char *hint);
tval tv_unsafe(tpl_ctx *c, tval obj, const tstr *name);
int tpl_undef_fail(tpl_ctx *c, tval u); /* raise the UndefinedError an undefined carries */

tlist *tl_new(tpl_ctx *c, uint32_t n);   /* n slots, n items */
int tl_finish_depth(tpl_ctx *c, tlist *l); /* compute depth; fails past the limit */
tdict *td_new(tpl_ctx *c, uint32_t cap);
int td_set(tpl_ctx *c, tdict *d, tval k, tval v); /* insert or replace (hashable keys) */
int td_find(tpl_ctx *c, const tdict *d, tval k, uint32_t *idx); /* 1 found, 0 not, -1 error */
const tval *td_get_cstr(const tdict *d, const char *key);
bool tv_hashable(tval v);

bool tv_truthy(tval v);
const char *tv_type_name(tval v);        /* Python type name: "str", "dict", "NoneType", ... */
int tv_eq(tpl_ctx *c, tval a, tval b, bool *res);
int tv_lt(tpl_ctx *c, tval a, tval b, bool *res); /* a < b, TypeError when unordered */
int tv_cmp_op(tpl_ctx *c, int op, tval a, tval b, bool *res);
int tv_contains(tpl_ctx *c, tval container, tval item, bool *res);
int tv_str_of(tpl_ctx *c, tval v, tstr **out);    /* Python str() */
int tv_write_str(tpl_ctx *c, tbuf *b, tval v);    /* append str(v) */
int tv_write_repr(tpl_ctx *c, tbuf *b, tval v, int depth); /* append repr(v) */
int tv_len(tpl_ctx *c, tval v, int64_t *n);       /* len(); TypeError when none */
/* Items of an iterable (list kinds, dict keys, str chars, undefined = empty).
 * Generators are consumed. TypeError "'int' object is not iterable" otherwise. */
int tv_iter(tpl_ctx *c, tval v, const tval **items, int64_t *n);
int tv_to_list(tpl_ctx *c, tval v, tval *out); /* list(v) */
tval tv_float_to_int_exact(double f, bool *ok);
int tv_num(tval v, double *f, int64_t *i, bool *is_int); /* 0 if not a number */
void tpl_format_float(double f, char *buf, size_t cap);  /* Python repr(float) */

/* ---- unicode (tpl_unicode.c) */
uint32_t tpl_utf8_decode(const char *s, size_t n, size_t *adv); /* U+FFFD on error, adv >= 1 */
bool tpl_utf8_valid(const char *s, size_t n);
bool tpl_is_space(uint32_t cp);     /* str.isspace */
bool tpl_is_alpha(uint32_t cp);     /* str.isalpha */
bool tpl_is_digit(uint32_t cp);     /* str.isdigit */
bool tpl_is_decimal(uint32_t cp);   /* str.isdecimal */
bool tpl_is_numeric(uint32_t cp);   /* str.isnumeric */
bool tpl_is_printable(uint32_t cp); /* str.isprintable */
int tpl_decimal_value(uint32_t cp); /* unicodedata.decimal, -1 if none */
bool tpl_is_cased(uint32_t cp);
bool tpl_is_upper(uint32_t cp);
bool tpl_is_lower(uint32_t cp);
bool tpl_is_word(uint32_t cp);      /* re \w */
/* full case mappings: write up to 3 code points, return count */
int tpl_to_upper(uint32_t cp, uint32_t out[3]);
int tpl_to_lower(uint32_t cp, uint32_t out[3]);
int tpl_to_title(uint32_t cp, uint32_t out[3]);
enum { CASE_UPPER, CASE_LOWER, CASE_TITLE_WORDS, CASE_CAPITALIZE, CASE_SWAP, CASE_JTITLE, CASE_FOLD };
int tpl_case_convert(tpl_ctx *c, const tstr *s, int mode, tstr **out);

/* ---- lexer / parser */
typedef enum tk_kind {
    TK_EOF = 0, TK_DATA, TK_VAR_BEGIN, TK_VAR_END, TK_BLOCK_BEGIN, TK_BLOCK_END,
    TK_NAME, TK_STRING, TK_INT, TK_FLOAT, TK_OP
} tk_kind;

typedef struct ttoken {
    uint8_t kind;
    uint8_t op;        /* operator code for TK_OP (its first char, or a 2-char code) */
    uint32_t line, col;
    const char *s;     /* source text (names/ops) */
    uint32_t n;
    tstr *str;         /* TK_DATA, TK_STRING value */
    int64_t ival;
    double fval;
    bool big;          /* integer literal beyond int64 */
} ttoken;

typedef struct tpl_err {
    loom_status st;
    uint32_t line, col;
    char msg[LOOM_ERROR_MSG_MAX];
} tpl_err;

/* Tokenize normalized source into *toks (template arena). */
int tpl_lex(loom_template *t, const char *src, size_t n, ttoken **toks, size_t *ntoks, tpl_err *e);
int tpl_parse(loom_template *t, const ttoken *toks, size_t ntoks, tpl_err *e);

/* operator codes for two-char operators in ttoken.op */
enum { OPC_FLOORDIV = 1, OPC_POW, OPC_EQ, OPC_NE, OPC_GE, OPC_LE };

/* ---- evaluation (tpl_eval.c / tpl_call.c) */
int tpl_render_root(tpl_ctx *c, tbuf *out);
int tpl_eval(tpl_ctx *c, const tnode *n, tval *out);
int tpl_eval_output(tpl_ctx *c, const tnode *n, tval *out); /* a {{ }} expression */
bool tpl_filter_takes_context(const tstr *name); /* map, select...: never constant-folded */
int tpl_html_escape(tpl_ctx *c, tval v, tval *out); /* markupsafe.escape: Markup stays, else escaped Markup */
int tpl_write_output(tpl_ctx *c, tval v);            /* {{ }}: escaped first under autoescape */
int tpl_exec_body(tpl_ctx *c, const tnode *body); /* 0 ok, 1 break, 2 continue, -1 error */
tscope *tpl_scope_new(tpl_ctx *c, tscope *parent);
int tpl_scope_set(tpl_ctx *c, tscope *s, uint32_t sym, tval v);
const tval *tpl_scope_find(const tscope *s, uint32_t sym);
int tpl_lookup(tpl_ctx *c, uint32_t sym, tval *out);
int tpl_capture(tpl_ctx *c, const tnode *body, tscope *scope, tstr **out); /* render body to a string */

/* call arguments, evaluated */
typedef struct targs {
    tval *pos;
    uint32_t npos;
    const tstr **kwn;
    tval *kwv;
    uint32_t nkw;
} targs;

int tpl_eval_args(tpl_ctx *c, const tnode *call, targs *a); /* args of E_CALL/E_FILTER/E_TEST */
/* Bind args to a fixed signature: out[i] = positional i, keyword names[i], or
 * tv_missing(). fname names the callee in messages. */
int tpl_bind(tpl_ctx *c, const char *fname, const targs *a, const char *const *names, int n, tval *out);
int tpl_call_value(tpl_ctx *c, tval fn, const targs *a, tval *out);
int tpl_getattr(tpl_ctx *c, tval obj, const tstr *name, tval *out);
int tpl_getitem(tpl_ctx *c, tval obj, tval key, tval *out);
int tpl_call_macro(tpl_ctx *c, const tmacro *m, const targs *a, tval caller, tval *out);
int tpl_arith(tpl_ctx *c, int op, tval a, tval b, tval *out);
int tpl_step(tpl_ctx *c);
/* Charge work proportional to the data an operation touches (bytes / 128, items...)
 * against max_steps, so that a step costs bounded time whatever its operands. */
int tpl_charge(tpl_ctx *c, uint64_t units);
#define TPL_BYTES_PER_STEP 128
int tpl_loop_call(tpl_ctx *c, tloop *lp, const targs *a, tval *out);

/* ---- builtins (tpl_methods.c) */
int tpl_global_id(const char *name, size_t n);                       /* -1 if none */
int tpl_method_id(tval obj, const tstr *name, bool *unsafe);          /* -1 if none */
int tpl_call_builtin(tpl_ctx *c, int id, tval self, const targs *a, tval *out);
int tpl_str_format(tpl_ctx *c, const tstr *fmt, bool markup, const targs *a, tval *out);  /* str.format */
int tpl_percent_format(tpl_ctx *c, const tstr *fmt, bool markup, tval args, tval *out);   /* str % args */
int tpl_escape(tpl_ctx *c, tbuf *b, const tstr *s); /* markupsafe.escape appended to b */
int tpl_escape_val(tpl_ctx *c, tval v, bool force, tval *out); /* escape(v) as Markup */
int tpl_strip(tpl_ctx *c, const tstr *s, tval chars, int which, tval *out);  /* which: 1 l, 2 r, 3 both */
int tpl_split(tpl_ctx *c, const tstr *s, tval sep, int64_t maxsplit, bool right, tval *out);
int tpl_replace(tpl_ctx *c, const tstr *s, const tstr *old, const tstr *nw, int64_t count, tval *out);

/* ---- filters and tests (tpl_filters.c) */
int tpl_filter_id(const char *name, size_t n);
int tpl_test_id(const char *name, size_t n);
int tpl_apply_filter(tpl_ctx *c, int fid, const tstr *name, tval v, const targs *a, tval *out);
int tpl_apply_test(tpl_ctx *c, int tid, const tstr *name, tval v, const targs *a, bool *out);
int tpl_filter_by_name(tpl_ctx *c, tval name, tval v, const targs *a, tval *out); /* map('upper') */
int tpl_test_by_name(tpl_ctx *c, tval name, tval v, const targs *a, bool *out);   /* select('odd') */

/* ---- JSON (tpl_json.c) */
typedef struct tjson_opts {
    bool ensure_ascii, sort_keys;
    const char *indent; size_t indent_len; bool has_indent;
    const char *item_sep; size_t item_sep_len;
    const char *key_sep; size_t key_sep_len;
} tjson_opts;
int tpl_tojson(tpl_ctx *c, tbuf *b, tval v, const tjson_opts *o, int depth);
/* Convert a jansson value; taint marks strings as content. */
struct json_t;
int tpl_from_json(tpl_ctx *c, struct json_t *j, int taint, int depth, tval *out);

#define TPL_MAX_CONTAINER_DEPTH 1000

/* C stack the evaluator and parser may use below their entry point (recursion is
 * also bounded by node counts; this bounds it in bytes whatever the frame sizes):
 * renders need about this much plus ~1 MiB of thread stack. Sanitizer builds have
 * much larger frames. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TPL_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TPL_SANITIZED 1
#endif
#endif
#ifdef TPL_SANITIZED
#define TPL_MAX_STACK ((size_t)4 << 20)
#else
#define TPL_MAX_STACK ((size_t)1 << 20)
#endif
static inline size_t tpl_stack_used(uintptr_t base) {
    char here;
    uintptr_t p = (uintptr_t)&here;
    return base > p ? (size_t)(base - p) : (size_t)(p - base);
}

#endif /* LOOM_TPL_H */
