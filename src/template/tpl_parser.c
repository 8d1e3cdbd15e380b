/* Template parser: tokens -> tree, following jinja2's parser (statements, the
 * expression grammar and its precedence, tests with a bare argument, filter
 * chains, call arguments, slices, assignment targets). Unknown filters/tests are
 * compile errors except inside an if-statement or inline if (jinja2's "soft"
 * frames), where they fail only when reached. Nesting is bounded by max_depth. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpl.h"

typedef struct parser {
    loom_template *t;
    const ttoken *tk;
    size_t n, i;
    tpl_err *e;
    int depth, max_depth;
    bool soft;
    int loop_depth;          /* for-loop bodies we are inside (break/continue) */
    tnode *macros[64];       /* macro / call-block bodies being parsed */
    int nmacros;
    const ttoken *tags[4200]; /* statements being parsed (for error messages) */
    int ntags;
    const char *const *ends[4200]; /* end tags being looked for */
    int nends;
    uintptr_t stack_base;
} parser;

/* jinja2's message for an unknown tag (name) or an unexpected end (name NULL) */
static void ut_eof_message(parser *P, const ttoken *name, const char *const *extra_end, char *buf, size_t cap) {
    size_t k = 0;
    if (name) k += (size_t)snprintf(buf + k, cap - k, "TemplateSyntaxError: Encountered unknown tag '%.*s'.", (int)(name->n > 60 ? 60 : name->n), name->s);
    else k += (size_t)snprintf(buf + k, cap - k, "TemplateSyntaxError: Unexpected end of template.");
    int ne = P->nends < 4200 ? P->nends : 4200, nt = P->ntags < 4200 ? P->ntags : 4200;
    const char *const *looking = extra_end ? extra_end : (ne ? P->ends[ne - 1] : NULL);
    if (looking && k < cap) {
        bool expected = false;
        for (int i = 0; i < ne && name; i++)
            for (int j = 0; P->ends[i][j]; j++)
                if (strlen(P->ends[i][j]) == name->n && !memcmp(P->ends[i][j], name->s, name->n)) expected = true;
        char list[256];
        size_t q = 0;
        for (int j = 0; looking[j] && q < sizeof list; j++) q += (size_t)snprintf(list + q, sizeof list - q, "%s'%s'", j ? " or " : "", looking[j]);
        if (expected)
            k += (size_t)snprintf(buf + k, cap - k, " You probably made a nesting mistake. Jinja is expecting this tag, but currently looking for %s.", list);
        else if (k < cap)
            k += (size_t)snprintf(buf + k, cap - k, " Jinja was looking for the following tags: %s.", list);
    }
    if (nt && k < cap) {
        const ttoken *t = P->tags[nt - 1];
        snprintf(buf + k, cap - k, " The innermost block that needs to be closed is '%.*s'.", (int)(t->n > 60 ? 60 : t->n), t->s);
    }
}

static int pfail(parser *P, const ttoken *at, loom_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static int pfail(parser *P, const ttoken *at, loom_status st, const char *fmt, ...) {
    if (P->e->st != LOOM_OK) return -1;
    if (!at) at = &P->tk[P->i < P->n ? P->i : P->n - 1];
    P->e->st = st;
    P->e->line = at->line;
    P->e->col = at->col;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(P->e->msg, sizeof P->e->msg, fmt, ap);
    va_end(ap);
    return -1;
}

static const ttoken *cur(parser *P) { return &P->tk[P->i]; }
static const ttoken *look(parser *P) { return &P->tk[P->i + 1 < P->n ? P->i + 1 : P->n - 1]; }
static const ttoken *adv(parser *P) {
    const ttoken *t = &P->tk[P->i];
    if (P->i + 1 < P->n) P->i++;
    return t;
}

static bool tk_name(const ttoken *t, const char *w) {
    size_t k = strlen(w);
    return t->kind == TK_NAME && t->n == k && memcmp(t->s, w, k) == 0;
}
static bool tk_op(const ttoken *t, int op) { return t->kind == TK_OP && t->op == op; }

static void describe(const ttoken *t, char *buf, size_t cap) {
    switch (t->kind) {
    case TK_EOF: snprintf(buf, cap, "end of template"); break;
    case TK_BLOCK_END: snprintf(buf, cap, "end of statement block"); break;
    case TK_VAR_END: snprintf(buf, cap, "end of print statement"); break;
    case TK_BLOCK_BEGIN: snprintf(buf, cap, "begin of statement block"); break;
    case TK_VAR_BEGIN: snprintf(buf, cap, "begin of print statement"); break;
    case TK_DATA: snprintf(buf, cap, "template data / text"); break;
    case TK_STRING: snprintf(buf, cap, "string"); break;
    case TK_INT: snprintf(buf, cap, "integer"); break;
    case TK_FLOAT: snprintf(buf, cap, "float"); break;
    default: snprintf(buf, cap, "%.*s", (int)(t->n > 60 ? 60 : t->n), t->s); break;
    }
}

static int unexpected(parser *P) {
    char d[80];
    const ttoken *t = cur(P);
    describe(t, d, sizeof d);
    if (t->kind == TK_EOF) return pfail(P, t, LOOM_ERR_FORMAT, "TemplateSyntaxError: unexpected end of template");
    return pfail(P, t, LOOM_ERR_FORMAT, "TemplateSyntaxError: unexpected '%s'", d);
}

static int expect_fail(parser *P, const char *what) {
    char d[80];
    const ttoken *t = cur(P);
    describe(t, d, sizeof d);
    if (t->kind == TK_EOF)
        return pfail(P, t, LOOM_ERR_FORMAT, "TemplateSyntaxError: unexpected end of template, expected '%s'.", what);
    return pfail(P, t, LOOM_ERR_FORMAT, "TemplateSyntaxError: expected token '%s', got '%s'", what, d);
}

static int expect_op(parser *P, int op, const char *what) {
    if (!tk_op(cur(P), op)) return expect_fail(P, what);
    adv(P);
    return 0;
}
static int expect_kind(parser *P, int kind, const char *what) {
    if (cur(P)->kind != kind) return expect_fail(P, what);
    adv(P);
    return 0;
}
static int expect_word(parser *P, const char *w) {
    if (!tk_name(cur(P), w)) return expect_fail(P, w);
    adv(P);
    return 0;
}

static tnode *node(parser *P, int kind, const ttoken *at) {
    tnode *n = tpl_arena_alloc(&P->t->arena, sizeof(tnode));
    if (!n) { pfail(P, at, LOOM_ERR_NOMEM, "out of memory"); return NULL; }
    n->kind = (uint8_t)kind;
    n->line = at->line;
    n->col = at->col;
    n->fid = -1;
    return n;
}

/* growable node arrays */
typedef struct nvec {
    tnode **v;
    uint32_t n, cap;
} nvec;

static int nv_push(parser *P, nvec *v, tnode *x) {
    if (v->n == v->cap) {
        uint32_t nc = v->cap ? v->cap * 2 : 4;
        tnode **nn = tpl_arena_alloc(&P->t->arena, nc * sizeof(tnode *));
        if (!nn) return pfail(P, NULL, LOOM_ERR_NOMEM, "out of memory");
        if (v->n) memcpy(nn, v->v, v->n * sizeof(tnode *));
        v->v = nn;
        v->cap = nc;
    }
    v->v[v->n++] = x;
    return 0;
}

static int enter(parser *P) {
    if (++P->depth > P->max_depth || tpl_stack_used(P->stack_base) > TPL_MAX_STACK)
        return pfail(P, NULL, LOOM_ERR_RANGE, "LimitError: the template nests deeper than max_depth (%d)", P->max_depth);
    return 0;
}
#define ENTER() do { if (enter(P) < 0) return NULL; } while (0)
#define LEAVE(x) do { P->depth--; return (x); } while (0)

static tnode *parse_expression(parser *P, bool with_condexpr);
static tnode *parse_tuple(parser *P, bool simplified, bool with_condexpr, const char *extra_end, bool explicit_paren,
                          bool with_ns);
static tnode *parse_primary(parser *P, bool with_ns);
static tnode *parse_postfix(parser *P, tnode *n);
static tnode *parse_filter_expr(parser *P, tnode *n);
static tnode *parse_unary(parser *P, bool with_filter);
static tnode *subparse(parser *P, const char *const *end_tokens);

static uint32_t intern(parser *P, const char *s, size_t n) {
    bool ok;
    uint32_t id = tpl_intern(P->t, s, n, &ok);
    if (!ok) pfail(P, NULL, LOOM_ERR_NOMEM, "out of memory");
    return id;
}

static void note_name_load(parser *P, uint32_t sym) {
    uint16_t f = sym == SYM_CALLER ? NF_CALLER : sym == SYM_VARARGS ? NF_VARARGS : sym == SYM_KWARGS ? NF_KWARGS : 0;
    if (!f) return;
    for (int i = 0; i < P->nmacros; i++) P->macros[i]->flags |= f;
}

/* ---- call arguments: ( args, k=v, *a, **kw ) */
static int parse_call_args(parser *P, tnode *n) {
    const ttoken *lp = cur(P);
    if (expect_op(P, '(', "(") < 0) return -1;
    nvec args = {0}, kwv = {0};
    const tstr **kwn = NULL;
    uint32_t nkw = 0, kwcap = 0;
    bool require_comma = false;
    while (!tk_op(cur(P), ')')) {
        if (require_comma) {
            if (expect_op(P, ',', ",") < 0) return -1;
            if (tk_op(cur(P), ')')) break;
        }
        if (tk_op(cur(P), '*')) {
            if (n->c || n->d) return pfail(P, lp, LOOM_ERR_FORMAT, "TemplateSyntaxError: invalid syntax for function call expression");
            adv(P);
            if (!(n->c = parse_expression(P, true))) return -1;
        } else if (tk_op(cur(P), OPC_POW)) {
            if (n->d) return pfail(P, lp, LOOM_ERR_FORMAT, "TemplateSyntaxError: invalid syntax for function call expression");
            adv(P);
            if (!(n->d = parse_expression(P, true))) return -1;
        } else if (cur(P)->kind == TK_NAME && tk_op(look(P), '=')) {
            if (n->d) return pfail(P, lp, LOOM_ERR_FORMAT, "TemplateSyntaxError: invalid syntax for function call expression");
            const ttoken *kt = adv(P);
            adv(P);
            tnode *v = parse_expression(P, true);
            if (!v) return -1;
            if (nkw == kwcap) {
                uint32_t nc = kwcap ? kwcap * 2 : 4;
                const tstr **nn = tpl_arena_alloc(&P->t->arena, nc * sizeof(tstr *));
                if (!nn) return pfail(P, NULL, LOOM_ERR_NOMEM, "out of memory");
                if (nkw) memcpy(nn, kwn, nkw * sizeof(tstr *));
                kwn = nn;
                kwcap = nc;
            }
            kwn[nkw] = tstr_static(&P->t->arena, kt->s, kt->n);
            if (!kwn[nkw]) return pfail(P, NULL, LOOM_ERR_NOMEM, "out of memory");
            nkw++;
            if (nv_push(P, &kwv, v) < 0) return -1;
        } else {
            if (n->c || n->d || nkw)
                return pfail(P, lp, LOOM_ERR_FORMAT, "TemplateSyntaxError: invalid syntax for function call expression");
            tnode *v = parse_expression(P, true);
            if (!v || nv_push(P, &args, v) < 0) return -1;
        }
        require_comma = true;
    }
    if (expect_op(P, ')', ")") < 0) return -1;
    n->kids = args.v;
    n->nkids = args.n;
    n->kids2 = kwv.v;
    n->nkids2 = kwv.n;
    n->names = kwn;
    return 0;
}

static tnode *parse_call(parser *P, tnode *callee) {
    tnode *n = node(P, E_CALL, cur(P));
    if (!n) return NULL;
    n->a = callee;
    if (parse_call_args(P, n) < 0) return NULL;
    return n;
}

/* dotted name after | or is */
static const tstr *dotted_name(parser *P) {
    const ttoken *t = cur(P);
    if (t->kind != TK_NAME) { expect_fail(P, "name"); return NULL; }
    const char *start = t->s;
    const char *end = t->s + t->n;
    adv(P);
    while (tk_op(cur(P), '.')) {
        adv(P);
        if (cur(P)->kind != TK_NAME) { expect_fail(P, "name"); return NULL; }
        end = cur(P)->s + cur(P)->n;
        adv(P);
    }
    /* the source between is exactly "a.b.c" when written without spaces; rebuild otherwise */
    char buf[256];
    size_t k = 0;
    for (const char *p = start; p < end && k < sizeof buf - 1; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n') buf[k++] = *p;
    const tstr *s = tstr_static(&P->t->arena, buf, k);
    if (!s) pfail(P, NULL, LOOM_ERR_NOMEM, "out of memory");
    return s;
}

static tnode *parse_filter(parser *P, tnode *operand, bool start_inline) {
    while (tk_op(cur(P), '|') || start_inline) {
        if (!start_inline) adv(P);
        const ttoken *at = cur(P);
        const tstr *name = dotted_name(P);
        if (!name) return NULL;
        tnode *f = node(P, E_FILTER, at);
        if (!f) return NULL;
        f->a = operand;
        f->str = name;
        f->fid = tpl_filter_id(name->data, name->len);
        if (P->soft) f->flags |= NF_SOFT;
        if (f->fid < 0 && !P->soft) {
            pfail(P, at, LOOM_ERR_FORMAT, "TemplateAssertionError: No filter named '%.*s'.", (int)name->len, name->data);
            return NULL;
        }
        if (tk_op(cur(P), '(') && parse_call_args(P, f) < 0) return NULL;
        operand = f;
        start_inline = false;
    }
    return operand;
}

static tnode *parse_test(parser *P, tnode *operand) {
    const ttoken *is = adv(P);
    bool negated = false;
    if (tk_name(cur(P), "not")) { adv(P); negated = true; }
    const ttoken *at = cur(P);
    const tstr *name = dotted_name(P);
    if (!name) return NULL;
    tnode *t = node(P, E_TEST, is);
    if (!t) return NULL;
    t->a = operand;
    t->str = name;
    t->fid = tpl_test_id(name->data, name->len);
    if (P->soft) t->flags |= NF_SOFT;
    if (t->fid < 0 && !P->soft) {
        pfail(P, at, LOOM_ERR_FORMAT, "TemplateAssertionError: No test named '%.*s'.", (int)name->len, name->data);
        return NULL;
    }
    const ttoken *c = cur(P);
    if (tk_op(c, '(')) {
        if (parse_call_args(P, t) < 0) return NULL;
    } else if ((c->kind == TK_NAME || c->kind == TK_STRING || c->kind == TK_INT || c->kind == TK_FLOAT ||
                tk_op(c, '(') || tk_op(c, '[') || tk_op(c, '{')) &&
               !tk_name(c, "else") && !tk_name(c, "or") && !tk_name(c, "and")) {
        if (tk_name(c, "is")) {
            pfail(P, c, LOOM_ERR_FORMAT, "TemplateSyntaxError: You cannot chain multiple tests with is");
            return NULL;
        }
        tnode *arg = parse_primary(P, false);
        if (!arg || !(arg = parse_postfix(P, arg))) return NULL;
        t->kids = tpl_arena_alloc(&P->t->arena, sizeof(tnode *));
        if (!t->kids) { pfail(P, NULL, LOOM_ERR_NOMEM, "out of memory"); return NULL; }
        t->kids[0] = arg;
        t->nkids = 1;
    }
    if (negated) {
        tnode *n = node(P, E_NOT, is);
        if (!n) return NULL;
        n->a = t;
        return n;
    }
    return t;
}

static tnode *parse_subscribed(parser *P) {
    const ttoken *at = cur(P);
    tnode *args[3] = {NULL, NULL, NULL};
    if (tk_op(cur(P), ':')) {
        adv(P);
    } else {
        tnode *e = parse_expression(P, true);
        if (!e) return NULL;
        if (!tk_op(cur(P), ':')) return e;
        adv(P);
        args[0] = e;
    }
    if (!tk_op(cur(P), ':') && !tk_op(cur(P), ']') && !tk_op(cur(P), ',')) {
        if (!(args[1] = parse_expression(P, true))) return NULL;
    }
    if (tk_op(cur(P), ':')) {
        adv(P);
        if (!tk_op(cur(P), ']') && !tk_op(cur(P), ',')) {
            if (!(args[2] = parse_expression(P, true))) return NULL;
        }
    }
    tnode *s = node(P, E_SLICE, at);
    if (!s) return NULL;
    s->a = args[0];
    s->b = args[1];
    s->c = args[2];
    return s;
}

static tnode *parse_subscript(parser *P, tnode *obj) {
    const ttoken *t = adv(P);
    if (tk_op(t, '.')) {
        const ttoken *a = adv(P);
        if (a->kind == TK_NAME) {
            tnode *g = node(P, E_GETATTR, t);
            if (!g) return NULL;
            g->a = obj;
            g->str = tstr_static(&P->t->arena, a->s, a->n);
            if (!g->str) { pfail(P, NULL, LOOM_ERR_NOMEM, "out of memory"); return NULL; }
            return g;
        }
        if (a->kind != TK_INT) {
            pfail(P, a, LOOM_ERR_FORMAT, "TemplateSyntaxError: expected name or number");
            return NULL;
        }
        tnode *k = node(P, E_CONST, a);
        tnode *g = node(P, E_GETITEM, t);
        if (!k || !g) return NULL;
        k->cv = tv_int(a->ival);
        g->a = obj;
        g->b = k;
        return g;
    }
    /* '[' */
    nvec args = {0};
    while (!tk_op(cur(P), ']')) {
        if (args.n && expect_op(P, ',', ",") < 0) return NULL;
        if (tk_op(cur(P), ']')) break; /* jinja2 would fail later; accept trailing comma */
        tnode *s = parse_subscribed(P);
        if (!s || nv_push(P, &args, s) < 0) return NULL;
    }
    if (expect_op(P, ']', "]") < 0) return NULL;
    tnode *g = node(P, E_GETITEM, t);
    if (!g) return NULL;
    g->a = obj;
    if (args.n == 1) {
        g->b = args.v[0];
    } else {
        tnode *tu = node(P, E_TUPLE, t);
        if (!tu) return NULL;
        tu->kids = args.v;
        tu->nkids = args.n;
        g->b = tu;
    }
    return g;
}

static tnode *parse_postfix(parser *P, tnode *n) {
    for (;;) {
        const ttoken *t = cur(P);
        if (tk_op(t, '.') || tk_op(t, '[')) n = parse_subscript(P, n);
        else if (tk_op(t, '(')) n = parse_call(P, n);
        else break;
        if (!n) return NULL;
    }
    return n;
}

static tnode *parse_filter_expr(parser *P, tnode *n) {
    for (;;) {
        const ttoken *t = cur(P);
        if (tk_op(t, '|')) n = parse_filter(P, n, false);
        else if (tk_name(t, "is")) n = parse_test(P, n);
        else if (tk_op(t, '(')) n = parse_call(P, n);
        else break;
        if (!n) return NULL;
    }
    return n;
}

static tnode *parse_list(parser *P) {
    const ttoken *at = adv(P);
    nvec items = {0};
    while (!tk_op(cur(P), ']')) {
        if (items.n && expect_op(P, ',', ",") < 0) return NULL;
        if (tk_op(cur(P), ']')) break;
        tnode *e = parse_expression(P, true);
        if (!e || nv_push(P, &items, e) < 0) return NULL;
    }
    if (expect_op(P, ']', "]") < 0) return NULL;
    tnode *l = node(P, E_LIST, at);
    if (!l) return NULL;
    l->kids = items.v;
    l->nkids = items.n;
    return l;
}

static tnode *parse_dict(parser *P) {
    const ttoken *at = adv(P);
    nvec keys = {0}, vals = {0};
    while (!tk_op(cur(P), '}')) {
        if (keys.n && expect_op(P, ',', ",") < 0) return NULL;
        if (tk_op(cur(P), '}')) break;
        tnode *k = parse_expression(P, true);
        if (!k || expect_op(P, ':', ":") < 0) return NULL;
        tnode *v = parse_expression(P, true);
        if (!v || nv_push(P, &keys, k) < 0 || nv_push(P, &vals, v) < 0) return NULL;
    }
    if (expect_op(P, '}', "}") < 0) return NULL;
    tnode *d = node(P, E_DICT, at);
    if (!d) return NULL;
    d->kids = keys.v;
    d->kids2 = vals.v;
    d->nkids = d->nkids2 = keys.n;
    return d;
}

static tnode *parse_primary(parser *P, bool with_ns) {
    ENTER();
    const ttoken *t = cur(P);
    tnode *n = NULL;
    if (t->kind == TK_NAME) {
        adv(P);
        if (tk_name(t, "true") || tk_name(t, "True") || tk_name(t, "false") || tk_name(t, "False")) {
            if ((n = node(P, E_CONST, t))) n->cv = tv_bool(t->s[0] == 't' || t->s[0] == 'T');
        } else if (tk_name(t, "none") || tk_name(t, "None")) {
            if ((n = node(P, E_CONST, t))) n->cv = tv_none();
        } else if (with_ns && tk_op(cur(P), '.')) {
            adv(P);
            const ttoken *a = cur(P);
            if (a->kind != TK_NAME) { expect_fail(P, "name"); LEAVE(NULL); }
            adv(P);
            if ((n = node(P, E_NSREF, t))) {
                n->sym = intern(P, t->s, t->n);
                n->str = tstr_static(&P->t->arena, a->s, a->n);
                if (!n->str) { pfail(P, NULL, LOOM_ERR_NOMEM, "out of memory"); LEAVE(NULL); }
            }
        } else if ((n = node(P, E_NAME, t))) {
            n->sym = intern(P, t->s, t->n);
            n->str = P->t->syms[n->sym];
        }
    } else if (t->kind == TK_STRING) {
        adv(P);
        const tstr *s = t->str;
        if (cur(P)->kind == TK_STRING) { /* adjacent literals concatenate */
            size_t total = s->len;
            size_t j = P->i;
            while (P->tk[j].kind == TK_STRING) total += P->tk[j++].str->len;
            char *buf = malloc(total + 1);
            if (!buf) { pfail(P, t, LOOM_ERR_NOMEM, "out of memory"); LEAVE(NULL); }
            size_t k = 0;
            memcpy(buf, s->data, s->len);
            k = s->len;
            while (cur(P)->kind == TK_STRING) {
                memcpy(buf + k, cur(P)->str->data, cur(P)->str->len);
                k += cur(P)->str->len;
                adv(P);
            }
            s = tstr_static(&P->t->arena, buf, k);
            free(buf);
            if (!s) { pfail(P, t, LOOM_ERR_NOMEM, "out of memory"); LEAVE(NULL); }
        }
        if ((n = node(P, E_CONST, t))) n->cv = tv_str((tstr *)s);
    } else if (t->kind == TK_INT) {
        adv(P);
        if (t->big) {
            pfail(P, t, LOOM_ERR_UNSUPPORTED, "OverflowError: integer literal %.*s does not fit in 64 bits", (int)(t->n > 40 ? 40 : t->n), t->s);
            LEAVE(NULL);
        }
        if ((n = node(P, E_CONST, t))) n->cv = tv_int(t->ival);
    } else if (t->kind == TK_FLOAT) {
        adv(P);
        if ((n = node(P, E_CONST, t))) n->cv = tv_float(t->fval);
    } else if (tk_op(t, '(')) {
        adv(P);
        n = parse_tuple(P, false, true, NULL, true, false);
        if (n && expect_op(P, ')', ")") < 0) n = NULL;
    } else if (tk_op(t, '[')) {
        n = parse_list(P);
    } else if (tk_op(t, '{')) {
        n = parse_dict(P);
    } else {
        unexpected(P);
    }
    if (n && n->kind == E_NAME) note_name_load(P, n->sym);
    LEAVE(n);
}

static tnode *parse_unary(parser *P, bool with_filter) {
    ENTER();
    const ttoken *t = cur(P);
    tnode *n;
    if (tk_op(t, '-') || tk_op(t, '+')) {
        adv(P);
        tnode *x = parse_unary(P, false);
        if (!x) LEAVE(NULL);
        if (!(n = node(P, tk_op(t, '-') ? E_NEG : E_POS, t))) LEAVE(NULL);
        n->a = x;
    } else {
        n = parse_primary(P, false);
    }
    if (n) n = parse_postfix(P, n);
    if (n && with_filter) n = parse_filter_expr(P, n);
    LEAVE(n);
}

static tnode *binop(parser *P, int op, const ttoken *at, tnode *l, tnode *r) {
    tnode *n = node(P, E_BIN, at);
    if (!n) return NULL;
    n->op = (uint8_t)op;
    n->a = l;
    n->b = r;
    return n;
}

static tnode *parse_pow(parser *P) {
    ENTER();
    tnode *l = parse_unary(P, true);
    while (l && tk_op(cur(P), OPC_POW)) {
        const ttoken *at = adv(P);
        tnode *r = parse_unary(P, true);
        l = r ? binop(P, OP_POW, at, l, r) : NULL;
    }
    LEAVE(l);
}

static tnode *parse_math2(parser *P) {
    ENTER();
    tnode *l = parse_pow(P);
    for (;;) {
        if (!l) break;
        const ttoken *t = cur(P);
        int op = tk_op(t, '*') ? OP_MUL : tk_op(t, '/') ? OP_DIV : tk_op(t, OPC_FLOORDIV) ? OP_FLOORDIV : tk_op(t, '%') ? OP_MOD : 0;
        if (!op) break;
        adv(P);
        tnode *r = parse_pow(P);
        l = r ? binop(P, op, t, l, r) : NULL;
    }
    LEAVE(l);
}

static tnode *parse_concat(parser *P) {
    ENTER();
    const ttoken *at = cur(P);
    tnode *first = parse_math2(P);
    if (!first || !tk_op(cur(P), '~')) LEAVE(first);
    nvec args = {0};
    if (nv_push(P, &args, first) < 0) LEAVE(NULL);
    while (tk_op(cur(P), '~')) {
        adv(P);
        tnode *x = parse_math2(P);
        if (!x || nv_push(P, &args, x) < 0) LEAVE(NULL);
    }
    tnode *n = node(P, E_CONCAT, at);
    if (!n) LEAVE(NULL);
    n->kids = args.v;
    n->nkids = args.n;
    LEAVE(n);
}

static tnode *parse_math1(parser *P) {
    ENTER();
    tnode *l = parse_concat(P);
    for (;;) {
        if (!l) break;
        const ttoken *t = cur(P);
        int op = tk_op(t, '+') ? OP_ADD : tk_op(t, '-') ? OP_SUB : 0;
        if (!op) break;
        adv(P);
        tnode *r = parse_concat(P);
        l = r ? binop(P, op, t, l, r) : NULL;
    }
    LEAVE(l);
}

static tnode *parse_compare(parser *P) {
    ENTER();
    const ttoken *at = cur(P);
    tnode *e = parse_math1(P);
    if (!e) LEAVE(NULL);
    nvec ops = {0};
    uint8_t opv[64];
    for (;;) {
        const ttoken *t = cur(P);
        int op = 0;
        if (tk_op(t, OPC_EQ)) op = CMP_EQ;
        else if (tk_op(t, OPC_NE)) op = CMP_NE;
        else if (tk_op(t, '<')) op = CMP_LT;
        else if (tk_op(t, OPC_LE)) op = CMP_LE;
        else if (tk_op(t, '>')) op = CMP_GT;
        else if (tk_op(t, OPC_GE)) op = CMP_GE;
        if (op) adv(P);
        else if (tk_name(t, "in")) { adv(P); op = CMP_IN; }
        else if (tk_name(t, "not") && tk_name(look(P), "in")) { adv(P); adv(P); op = CMP_NOTIN; }
        else break;
        if (ops.n >= 64) { pfail(P, t, LOOM_ERR_RANGE, "LimitError: too many chained comparisons"); LEAVE(NULL); }
        tnode *r = parse_math1(P);
        if (!r || nv_push(P, &ops, r) < 0) LEAVE(NULL);
        opv[ops.n - 1] = (uint8_t)op;
    }
    if (!ops.n) LEAVE(e);
    tnode *n = node(P, E_COMPARE, at);
    if (!n) LEAVE(NULL);
    n->a = e;
    n->kids = ops.v;
    n->nkids = ops.n;
    n->ops = tpl_arena_alloc(&P->t->arena, ops.n);
    if (!n->ops) { pfail(P, NULL, LOOM_ERR_NOMEM, "out of memory"); LEAVE(NULL); }
    memcpy(n->ops, opv, ops.n);
    LEAVE(n);
}

static tnode *parse_not(parser *P) {
    ENTER();
    if (tk_name(cur(P), "not")) {
        const ttoken *at = adv(P);
        tnode *x = parse_not(P);
        if (!x) LEAVE(NULL);
        tnode *n = node(P, E_NOT, at);
        if (n) n->a = x;
        LEAVE(n);
    }
    LEAVE(parse_compare(P));
}

static tnode *parse_and(parser *P) {
    ENTER();
    tnode *l = parse_not(P);
    while (l && tk_name(cur(P), "and")) {
        const ttoken *at = adv(P);
        tnode *r = parse_not(P);
        tnode *n = r ? node(P, E_AND, at) : NULL;
        if (n) { n->a = l; n->b = r; }
        l = n;
    }
    LEAVE(l);
}

static tnode *parse_or(parser *P) {
    ENTER();
    tnode *l = parse_and(P);
    while (l && tk_name(cur(P), "or")) {
        const ttoken *at = adv(P);
        tnode *r = parse_and(P);
        tnode *n = r ? node(P, E_OR, at) : NULL;
        if (n) { n->a = l; n->b = r; }
        l = n;
    }
    LEAVE(l);
}

/* Does an inline `if` follow at this bracket level before the expression ends? (jinja2 compiles
 * the whole conditional expression in a soft frame.) */
static bool inline_if_ahead(parser *P) {
    int depth = 0;
    for (size_t j = P->i; j < P->n; j++) {
        const ttoken *t = &P->tk[j];
        if (t->kind == TK_EOF || t->kind == TK_VAR_END || t->kind == TK_BLOCK_END) return false;
        if (t->kind == TK_OP) {
            if (t->op == '(' || t->op == '[' || t->op == '{') depth++;
            else if (t->op == ')' || t->op == ']' || t->op == '}') {
                if (depth == 0) return false;
                depth--;
            } else if (depth == 0 && (t->op == ',' || t->op == ':')) return false;
        } else if (depth == 0 && tk_name(t, "if")) return true;
    }
    return false;
}

static tnode *parse_condexpr(parser *P) {
    ENTER();
    const ttoken *at = cur(P);
    bool was_soft = P->soft;
    if (!was_soft && inline_if_ahead(P)) P->soft = true;
    tnode *e1 = parse_or(P);
    while (e1 && tk_name(cur(P), "if")) {
        adv(P);
        tnode *e2 = parse_or(P);
        tnode *e3 = NULL;
        if (!e2) { e1 = NULL; break; }
        if (tk_name(cur(P), "else")) {
            adv(P);
            if (!(e3 = parse_condexpr(P))) { e1 = NULL; break; }
        }
        tnode *n = node(P, E_COND, at);
        if (!n) { e1 = NULL; break; }
        n->a = e1;
        n->b = e2;
        n->c = e3;
        e1 = n;
        at = cur(P);
    }
    P->soft = was_soft;
    LEAVE(e1);
}

static tnode *parse_expression(parser *P, bool with_condexpr) {
    return with_condexpr ? parse_condexpr(P) : parse_or(P);
}

static bool is_tuple_end(parser *P, const char *extra) {
    const ttoken *t = cur(P);
    if (t->kind == TK_VAR_END || t->kind == TK_BLOCK_END || tk_op(t, ')')) return true;
    return extra && tk_name(t, extra);
}

static tnode *parse_tuple(parser *P, bool simplified, bool with_condexpr, const char *extra_end, bool explicit_paren,
                          bool with_ns) {
    ENTER();
    const ttoken *at = cur(P);
    nvec args = {0};
    bool is_tuple = false;
    for (;;) {
        if (args.n && expect_op(P, ',', ",") < 0) LEAVE(NULL);
        if (is_tuple_end(P, extra_end)) break;
        tnode *e = simplified ? parse_primary(P, with_ns) : parse_expression(P, with_condexpr);
        if (!e || nv_push(P, &args, e) < 0) LEAVE(NULL);
        if (tk_op(cur(P), ',')) is_tuple = true;
        else break;
    }
    if (!is_tuple) {
        if (args.n) LEAVE(args.v[0]);
        if (!explicit_paren) {
            char d[80];
            describe(cur(P), d, sizeof d);
            pfail(P, cur(P), LOOM_ERR_FORMAT, "TemplateSyntaxError: Expected an expression, got '%s'", d);
            LEAVE(NULL);
        }
    }
    tnode *n = node(P, E_TUPLE, at);
    if (!n) LEAVE(NULL);
    n->kids = args.v;
    n->nkids = args.n;
    LEAVE(n);
}

static bool can_assign(const tnode *n) {
    if (n->kind == E_NAME || n->kind == E_NSREF) return true;
    if (n->kind == E_TUPLE) {
        for (uint32_t i = 0; i < n->nkids; i++)
            if (!can_assign(n->kids[i]) || n->kids[i]->kind == E_NSREF) return false;
        return true;
    }
    return false;
}

static tnode *parse_assign_target(parser *P, bool with_tuple, bool name_only, const char *extra_end, bool with_ns) {
    tnode *t;
    if (name_only) {
        const ttoken *tk = cur(P);
        if (tk->kind != TK_NAME) { expect_fail(P, "name"); return NULL; }
        adv(P);
        if (!(t = node(P, E_NAME, tk))) return NULL;
        t->sym = intern(P, tk->s, tk->n);
        t->str = P->t->syms[t->sym];
        return t;
    }
    t = with_tuple ? parse_tuple(P, true, true, extra_end, false, with_ns) : parse_primary(P, with_ns);
    if (!t) return NULL;
    if (!can_assign(t)) {
        const char *what = t->kind == E_CONST ? "const" : t->kind == E_TUPLE ? "tuple" : t->kind == E_LIST ? "list" : "expression";
        pfail(P, NULL, LOOM_ERR_FORMAT, "TemplateSyntaxError: can't assign to '%s'", what);
        return NULL;
    }
    return t;
}

/* ---------------------------------------------------------------- statements */

static tnode *parse_statements(parser *P, const char *const *end_tokens, bool drop_needle) {
    if (tk_op(cur(P), ':')) adv(P);
    if (expect_kind(P, TK_BLOCK_END, "end of statement block") < 0) return NULL;
    tnode *body = subparse(P, end_tokens);
    if (!body) return NULL;
    if (cur(P)->kind == TK_EOF) {
        char msg[LOOM_ERROR_MSG_MAX];
        ut_eof_message(P, NULL, end_tokens, msg, sizeof msg);
        pfail(P, cur(P), LOOM_ERR_FORMAT, "%s", msg);
        return NULL;
    }
    if (drop_needle) adv(P);
    return body;
}

static tnode *parse_signature(parser *P, tnode *n) {
    if (expect_op(P, '(', "(") < 0) return NULL;
    nvec params = {0}, defs = {0};
    bool any_default = false;
    while (!tk_op(cur(P), ')')) {
        if (params.n && expect_op(P, ',', ",") < 0) return NULL;
        tnode *p = parse_assign_target(P, false, true, NULL, false);
        if (!p) return NULL;
        tnode *d = NULL;
        if (tk_op(cur(P), '=')) {
            adv(P);
            if (!(d = parse_expression(P, true))) return NULL;
            any_default = true;
        } else if (any_default) {
            pfail(P, NULL, LOOM_ERR_FORMAT, "TemplateSyntaxError: non-default argument follows default argument");
            return NULL;
        }
        if (nv_push(P, &params, p) < 0 || nv_push(P, &defs, d) < 0) return NULL;
    }
    if (expect_op(P, ')', ")") < 0) return NULL;
    n->kids = params.v;
    n->kids2 = defs.v;
    n->nkids = n->nkids2 = params.n;
    return n;
}

typedef struct saved_ctx {
    bool soft;
    int loop_depth;
} saved_ctx;

static saved_ctx inner_frame(parser *P, bool keep_loop) {
    saved_ctx s = {P->soft, P->loop_depth};
    P->soft = false;
    if (!keep_loop) P->loop_depth = 0;
    return s;
}
static void restore(parser *P, saved_ctx s) {
    P->soft = s.soft;
    P->loop_depth = s.loop_depth;
}

static tnode *parse_for(parser *P, const ttoken *at) {
    tnode *n = node(P, S_FOR, at);
    if (!n) return NULL;
    if (!(n->a = parse_assign_target(P, true, false, "in", false))) return NULL;
    if (expect_word(P, "in") < 0) return NULL;
    if (!(n->b = parse_tuple(P, false, false, "recursive", false, false))) return NULL;
    saved_ctx s = inner_frame(P, true);
    if (tk_name(cur(P), "if")) {
        adv(P);
        if (!(n->c = parse_expression(P, true))) return NULL;
    }
    if (tk_name(cur(P), "recursive")) { adv(P); n->flags |= NF_RECURSIVE; }
    static const char *const body_end[] = {"endfor", "else", NULL};
    P->loop_depth++;
    n->d = parse_statements(P, body_end, false);
    P->loop_depth--;
    if (!n->d) return NULL;
    const ttoken *t = adv(P);
    if (tk_name(t, "else")) {
        static const char *const else_end[] = {"endfor", NULL};
        if (!(n->e = parse_statements(P, else_end, true))) return NULL;
    }
    restore(P, s);
    return n;
}

static tnode *parse_if(parser *P, const ttoken *at) {
    tnode *n = node(P, S_IF, at);
    if (!n) return NULL;
    bool was_soft = P->soft;
    P->soft = true;
    nvec etests = {0}, ebodies = {0};
    static const char *const ends[] = {"elif", "else", "endif", NULL};
    if (!(n->a = parse_tuple(P, false, false, NULL, false, false))) return NULL;
    if (!(n->b = parse_statements(P, ends, false))) return NULL;
    for (;;) {
        const ttoken *t = adv(P);
        if (tk_name(t, "elif")) {
            tnode *test = parse_tuple(P, false, false, NULL, false, false);
            if (!test) return NULL;
            tnode *body = parse_statements(P, ends, false);
            if (!body || nv_push(P, &etests, test) < 0 || nv_push(P, &ebodies, body) < 0) return NULL;
            continue;
        }
        if (tk_name(t, "else")) {
            static const char *const endif[] = {"endif", NULL};
            if (!(n->c = parse_statements(P, endif, true))) return NULL;
        }
        break;
    }
    n->kids = etests.v;
    n->kids2 = ebodies.v;
    n->nkids = n->nkids2 = etests.n;
    P->soft = was_soft;
    return n;
}

static tnode *parse_macro_like(parser *P, tnode *n, const char *end) {
    if (P->nmacros >= (int)(sizeof P->macros / sizeof P->macros[0])) {
        pfail(P, NULL, LOOM_ERR_RANGE, "LimitError: macros nested too deep");
        return NULL;
    }
    const char *ends[] = {end, NULL};
    saved_ctx s = inner_frame(P, false);
    P->macros[P->nmacros++] = n;
    n->b = parse_statements(P, ends, true);
    P->nmacros--;
    restore(P, s);
    return n->b ? n : NULL;
}

static tnode *parse_statement(parser *P) {
    const ttoken *t = cur(P);
    if (t->kind != TK_NAME) {
        pfail(P, t, LOOM_ERR_FORMAT, "TemplateSyntaxError: tag name expected");
        return NULL;
    }
    if (enter(P) < 0) return NULL;
    tnode *n = NULL;
    adv(P);
    bool known = true;
    if (P->ntags < (int)(sizeof P->tags / sizeof P->tags[0])) P->tags[P->ntags] = t;
    P->ntags++;
    if (tk_name(t, "for")) {
        n = parse_for(P, t);
    } else if (tk_name(t, "if")) {
        n = parse_if(P, t);
    } else if (tk_name(t, "set")) {
        tnode *target = parse_assign_target(P, true, false, NULL, true);
        if (!target) goto out;
        if (tk_op(cur(P), '=')) {
            adv(P);
            if (!(n = node(P, S_SET, t))) goto out;
            n->a = target;
            if (!(n->b = parse_tuple(P, false, true, NULL, false, false))) n = NULL;
        } else {
            if (!(n = node(P, S_SETBLOCK, t))) goto out;
            n->a = target;
            saved_ctx s = inner_frame(P, true);
            if (tk_op(cur(P), '|') && !(n->c = parse_filter(P, NULL, false))) { n = NULL; goto out; }
            static const char *const ends[] = {"endset", NULL};
            if (!(n->b = parse_statements(P, ends, true))) n = NULL;
            restore(P, s);
        }
    } else if (tk_name(t, "macro")) {
        tnode *name = parse_assign_target(P, false, true, NULL, false);
        if (!name || !(n = node(P, S_MACRO, t))) goto out;
        n->sym = name->sym;
        n->str = name->str;
        if (!parse_signature(P, n)) { n = NULL; goto out; }
        n = parse_macro_like(P, n, "endmacro");
    } else if (tk_name(t, "call")) {
        if (!(n = node(P, S_CALLBLOCK, t))) goto out;
        if (tk_op(cur(P), '(')) {
            if (!parse_signature(P, n)) { n = NULL; goto out; }
        }
        tnode *call = parse_expression(P, true);
        if (!call) { n = NULL; goto out; }
        if (call->kind != E_CALL) {
            pfail(P, t, LOOM_ERR_FORMAT, "TemplateSyntaxError: expected call");
            n = NULL;
            goto out;
        }
        n->a = call;
        n->str = tstr_static(&P->t->arena, "caller", 6);
        n = parse_macro_like(P, n, "endcall");
    } else if (tk_name(t, "filter")) {
        if (!(n = node(P, S_FILTERBLOCK, t))) goto out;
        saved_ctx s = inner_frame(P, true);
        if (!(n->a = parse_filter(P, NULL, true))) { n = NULL; goto out; }
        static const char *const ends[] = {"endfilter", NULL};
        if (!(n->b = parse_statements(P, ends, true))) n = NULL;
        restore(P, s);
    } else if (tk_name(t, "with")) {
        if (!(n = node(P, S_WITH, t))) goto out;
        nvec targets = {0}, values = {0};
        while (cur(P)->kind != TK_BLOCK_END) {
            if (targets.n && expect_op(P, ',', ",") < 0) { n = NULL; goto out; }
            tnode *tg = parse_assign_target(P, true, false, NULL, false);
            if (!tg || expect_op(P, '=', "=") < 0) { n = NULL; goto out; }
            tnode *v = parse_expression(P, true);
            if (!v || nv_push(P, &targets, tg) < 0 || nv_push(P, &values, v) < 0) { n = NULL; goto out; }
        }
        n->kids = targets.v;
        n->kids2 = values.v;
        n->nkids = n->nkids2 = targets.n;
        saved_ctx s = inner_frame(P, true);
        static const char *const ends[] = {"endwith", NULL};
        if (!(n->b = parse_statements(P, ends, true))) n = NULL;
        restore(P, s);
    } else if (tk_name(t, "break") || tk_name(t, "continue")) {
        if (P->loop_depth == 0) {
            pfail(P, t, LOOM_ERR_FORMAT, "TemplateSyntaxError: '%s' outside loop", tk_name(t, "break") ? "break" : "continue");
            goto out;
        }
        n = node(P, tk_name(t, "break") ? S_BREAK : S_CONTINUE, t);
    } else if (tk_name(t, "generation") || tk_name(t, "autoescape") || tk_name(t, "block")) {
        bool gen = tk_name(t, "generation"), blk = tk_name(t, "block");
        if (!(n = node(P, S_SCOPE, t))) goto out;
        if (tk_name(t, "autoescape")) {
            if (!(n->a = parse_expression(P, true))) { n = NULL; goto out; }
            n->op = 1; /* an autoescape block: n->a is its value */
        } else if (blk) {
            if (cur(P)->kind != TK_NAME) { expect_fail(P, "name"); n = NULL; goto out; }
            adv(P);
            if (tk_name(cur(P), "scoped")) adv(P);
            if (tk_name(cur(P), "required")) adv(P);
        }
        const char *end = gen ? "endgeneration" : blk ? "endblock" : "endautoescape";
        const char *ends[] = {end, NULL};
        saved_ctx s = inner_frame(P, !gen);
        if (!(n->b = parse_statements(P, ends, true))) { n = NULL; goto out; }
        restore(P, s);
        if (blk && cur(P)->kind == TK_NAME) adv(P);
    } else if (tk_name(t, "print")) {
        if (!(n = node(P, S_BODY, t))) goto out;
        nvec outs = {0};
        while (cur(P)->kind != TK_BLOCK_END) {
            if (outs.n && expect_op(P, ',', ",") < 0) { n = NULL; goto out; }
            tnode *e = parse_expression(P, true);
            tnode *o = e ? node(P, S_OUTPUT, t) : NULL;
            if (!o) { n = NULL; goto out; }
            o->a = e;
            if (nv_push(P, &outs, o) < 0) { n = NULL; goto out; }
        }
        n->kids = outs.v;
        n->nkids = outs.n;
    } else if (tk_name(t, "include") || tk_name(t, "import") || tk_name(t, "from") || tk_name(t, "extends")) {
        /* parsed, but there is no loader: fails when executed, as jinja2 does */
        if (!(n = node(P, S_FAIL, t))) goto out;
        n->str = tstr_static(&P->t->arena, "no loader for this environment specified", 40);
        while (cur(P)->kind != TK_BLOCK_END && cur(P)->kind != TK_EOF) adv(P);
    } else {
        known = false;
        P->ntags--;
        char msg[LOOM_ERROR_MSG_MAX];
        ut_eof_message(P, t, NULL, msg, sizeof msg);
        pfail(P, t, LOOM_ERR_FORMAT, "%s", msg);
    }
out:
    if (known) P->ntags--;
    P->depth--;
    return n;
}

static bool at_end_token(parser *P, const char *const *end_tokens) {
    if (!end_tokens) return false;
    for (int i = 0; end_tokens[i]; i++)
        if (tk_name(cur(P), end_tokens[i])) return true;
    return false;
}

static tnode *subparse(parser *P, const char *const *end_tokens) {
    const ttoken *at = cur(P);
    if (enter(P) < 0) return NULL;
    nvec body = {0};
    tnode *res = NULL;
    if (end_tokens) {
        if (P->nends < (int)(sizeof P->ends / sizeof P->ends[0])) P->ends[P->nends] = end_tokens;
        P->nends++;
    }
    while (cur(P)->kind != TK_EOF) {
        const ttoken *t = cur(P);
        if (t->kind == TK_DATA) {
            adv(P);
            tnode *d = node(P, S_TEXT, t);
            if (!d) goto out;
            d->str = t->str;
            if (nv_push(P, &body, d) < 0) goto out;
        } else if (t->kind == TK_VAR_BEGIN) {
            adv(P);
            tnode *e = parse_tuple(P, false, true, NULL, false, false);
            if (!e) goto out;
            tnode *o = node(P, S_OUTPUT, t);
            if (!o) goto out;
            o->a = e;
            if (nv_push(P, &body, o) < 0) goto out;
            if (expect_kind(P, TK_VAR_END, "end of print statement") < 0) goto out;
        } else if (t->kind == TK_BLOCK_BEGIN) {
            adv(P);
            if (at_end_token(P, end_tokens)) break;
            tnode *s = parse_statement(P);
            if (!s || nv_push(P, &body, s) < 0) goto out;
            if (expect_kind(P, TK_BLOCK_END, "end of statement block") < 0) goto out;
        } else {
            unexpected(P);
            goto out;
        }
    }
    res = node(P, S_BODY, at);
    if (res) {
        res->kids = body.v;
        res->nkids = body.n;
    }
out:
    if (end_tokens) P->nends--;
    P->depth--;
    return res;
}

/* Sets NF_FOLDSLICE on the expressions jinja2's optimizer may fold (nodes.*.as_const:
 * literals, operators, attribute / item access, filters and tests without the render
 * context; never names or calls) that hold a slice subscript. An expression that
 * needs a name on every path (messages[1:]) can never fold and is not marked, so it
 * costs nothing. Returns FM_* bits for n. Operator chains (1+1+...) make trees deeper
 * than the parser's nesting limit: past the evaluator's own depth limit nothing can
 * run, so the walk stops there. */
#define FOLD_MARK_MAX_DEPTH 3200
enum { FM_SLICE = 1, FM_MAYFOLD = 2 };
static int mark_fold_slices(tnode *n, int depth) {
    if (!n) return FM_MAYFOLD;
    if (depth > FOLD_MARK_MAX_DEPTH) return 0;
    int ka = mark_fold_slices(n->a, depth + 1), kb = mark_fold_slices(n->b, depth + 1);
    int kc = mark_fold_slices(n->c, depth + 1), kd = mark_fold_slices(n->d, depth + 1);
    int ke = mark_fold_slices(n->e, depth + 1);
    int has = (ka | kb | kc | kd | ke) & FM_SLICE, all = ka & kb & kc & kd & ke & FM_MAYFOLD;
    for (uint32_t i = 0; i < n->nkids; i++) {
        int k = mark_fold_slices(n->kids[i], depth + 1);
        has |= k & FM_SLICE;
        all &= k;
    }
    for (uint32_t i = 0; n->kids2 && i < n->nkids2; i++) {
        int k = mark_fold_slices(n->kids2[i], depth + 1);
        has |= k & FM_SLICE;
        all &= k;
    }
    if (n->kind == E_GETITEM && n->b && n->b->kind == E_SLICE) has = FM_SLICE;
    bool may;
    switch (n->kind) {
    case E_CONST: may = true; break;
    case E_NAME: case E_CALL: case E_NSREF: may = false; break;
    case E_COND: /* as_const evaluates the test, then one branch */
        may = (kb & FM_MAYFOLD) && ((ka | kc) & FM_MAYFOLD);
        break;
    case E_AND: case E_OR: may = ka & FM_MAYFOLD; break; /* the right side may go unevaluated */
    case E_FILTER: case E_TEST:
        may = all && n->fid >= 0 && (n->kind == E_TEST || !tpl_filter_takes_context(n->str));
        break;
    default: may = n->kind < S_BODY && all; break;
    }
    if (has && may && n->kind != E_SLICE && n->kind != E_CONST) n->flags |= NF_FOLDSLICE;
    return has | (may ? FM_MAYFOLD : 0);
}

int tpl_parse(loom_template *t, const ttoken *toks, size_t ntoks, tpl_err *e) {
    parser P = {0};
    char stack_marker;
    P.stack_base = (uintptr_t)&stack_marker;
    P.t = t;
    P.tk = toks;
    P.n = ntoks;
    P.e = e;
    P.max_depth = t->lim.max_depth;
    tnode *root = subparse(&P, NULL);
    if (!root) {
        if (e->st == LOOM_OK) pfail(&P, NULL, LOOM_ERR_FORMAT, "TemplateSyntaxError: invalid template");
        return -1;
    }
    if (cur(&P)->kind != TK_EOF) {
        /* an end tag with no opening block, e.g. {% endif %} at top level */
        const ttoken *tt = cur(&P);
        return pfail(&P, tt, LOOM_ERR_FORMAT, "TemplateSyntaxError: Encountered unknown tag '%.*s'.",
                     (int)(tt->n > 60 ? 60 : tt->n), tt->s);
    }
    mark_fold_slices(root, 0);
    t->root = root;
    return 0;
}
