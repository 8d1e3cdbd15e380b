/* Template evaluator: statements (output, if, for with loop/else/filter/recursive,
 * set, block set, macro, call block, filter block, with, break/continue, scoped
 * blocks) and expressions, with jinja2's scoping: for-loop iterations, macros,
 * with/filter/set blocks and call bodies get their own scope; if does not.
 * Bounded by max_steps, max_iterations, max_recursion and a fixed C recursion depth. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "tpl.h"

#define TPL_MAX_EVAL_DEPTH 3000

int tpl_step(tpl_ctx *c) {
    if (++c->steps > (uint64_t)c->lim.max_steps)
        return tpl_fail(c, X_LIMIT, "the render exceeds max_steps (%" PRId64 " evaluation steps)", c->lim.max_steps);
    return 0;
}

int tpl_charge(tpl_ctx *c, uint64_t units) {
    c->steps += units;
    if (c->steps > (uint64_t)c->lim.max_steps)
        return tpl_fail(c, X_LIMIT, "the render exceeds max_steps (%" PRId64 " evaluation steps)", c->lim.max_steps);
    return 0;
}

/* ------------------------------------------------------------------ scopes */

tscope *tpl_scope_new(tpl_ctx *c, tscope *parent) {
    tscope *s = tpl_alloc(c, sizeof(tscope));
    if (s) s->parent = parent;
    return s;
}

int tpl_scope_set(tpl_ctx *c, tscope *s, uint32_t sym, tval v) {
    if (s->n > 16 && tpl_charge(c, s->n / 16) < 0) return -1;
    for (uint32_t i = 0; i < s->n; i++)
        if (s->vars[i].sym == sym) { s->vars[i].v = v; return 0; }
    if (s->n == s->cap) {
        uint32_t nc = s->cap ? s->cap * 2 : 4;
        tvar *nv = tpl_alloc(c, nc * sizeof(tvar));
        if (!nv) return -1;
        if (s->n) memcpy(nv, s->vars, s->n * sizeof(tvar));
        s->vars = nv;
        s->cap = nc;
    }
    s->vars[s->n].sym = sym;
    s->vars[s->n].v = v;
    s->n++;
    return 0;
}

const tval *tpl_scope_find(const tscope *s, uint32_t sym) {
    for (; s; s = s->parent)
        for (uint32_t i = 0; i < s->n; i++)
            if (s->vars[i].sym == sym) return &s->vars[i].v;
    return NULL;
}

int tpl_lookup(tpl_ctx *c, uint32_t sym, tval *out) {
    const tval *v = NULL;
    uint64_t scanned = 0;
    for (const tscope *s = c->scope; s && !v; s = s->parent) {
        scanned += s->n;
        for (uint32_t i = 0; i < s->n; i++)
            if (s->vars[i].sym == sym) { v = &s->vars[i].v; break; }
    }
    if (scanned > 16 && tpl_charge(c, scanned / 16) < 0) return -1;
    if (v) { *out = *v; return 0; }
    int g = c->t->sym_global[sym];
    if (g >= 0) {
        tfunc *f = tpl_alloc(c, sizeof(tfunc));
        if (!f) return -1;
        f->id = (uint16_t)g;
        *out = (tval){0};
        out->k = TV_FUNC;
        out->u.fn = f;
        return 0;
    }
    *out = tv_undef_name(c->t->syms[sym]);
    return 0;
}

/* ------------------------------------------------------------------ assignment */

static int assign(tpl_ctx *c, const tnode *target, tval v) {
    switch (target->kind) {
    case E_NAME: return tpl_scope_set(c, c->scope, target->sym, v);
    case E_NSREF: {
        const tval *ns = tpl_scope_find(c->scope, target->sym);
        if (!ns || ns->k != TV_NS) {
            c->pos = target;
            return tpl_fail(c, X_RUNTIME, "cannot assign attribute on non-namespace object");
        }
        return td_set(c, ns->u.ns->attrs, tv_str((tstr *)target->str), v);
    }
    case E_TUPLE: {
        const tval *items;
        int64_t n;
        c->pos = target;
        if (v.k == TV_UNDEF && v.sub != U_UNSAFE) return tpl_undef_fail(c, v);
        if (v.k != TV_LIST && v.k != TV_STR && v.k != TV_DICT && v.k != TV_UNDEF && v.k != TV_LOOP)
            return tpl_fail(c, X_TYPE, "cannot unpack non-iterable %s object", tv_type_name(v));
        if (tv_iter(c, v, &items, &n) < 0) return -1;
        if (n < (int64_t)target->nkids)
            return tpl_fail(c, X_VALUE, "not enough values to unpack (expected %u, got %" PRId64 ")", target->nkids, n);
        if (n > (int64_t)target->nkids)
            return tpl_fail(c, X_VALUE, "too many values to unpack (expected %u)", target->nkids);
        for (uint32_t i = 0; i < target->nkids; i++)
            if (assign(c, target->kids[i], items[i]) < 0) return -1;
        return 0;
    }
    default: c->pos = target; return tpl_fail(c, X_SYNTAX, "can't assign to this expression");
    }
}

/* ------------------------------------------------------------------ capture */

int tpl_capture(tpl_ctx *c, const tnode *body, tscope *scope, tstr **out) {
    tbuf b = {0};
    tbuf *saved_out = c->out;
    tscope *saved_scope = c->scope;
    c->out = &b;
    c->scope = scope;
    int r = tpl_exec_body(c, body);
    c->out = saved_out;
    c->scope = saved_scope;
    if (r != 0) {
        tb_free(c, &b);
        return r;
    }
    *out = tb_finish(c, &b);
    return *out ? 0 : -1;
}

/* {{ }} and the other places jinja2 writes a value through finalize: under
 * autoescape a value that is not Markup is escaped first. */
int tpl_write_output(tpl_ctx *c, tval v) {
    if (c->autoescape && !tv_is_markup(v) && tpl_html_escape(c, v, &v) < 0) return -1;
    return tv_write_str(c, c->out, v);
}

/* Apply a filter chain (E_FILTER nodes, innermost operand NULL) to v. */
static int apply_chain(tpl_ctx *c, const tnode *f, tval v, tval *out) {
    if (!f) { *out = v; return 0; }
    tval inner;
    if (apply_chain(c, f->a, v, &inner) < 0) return -1;
    targs a = {0};
    if (tpl_eval_args(c, f, &a) < 0) return -1;
    c->pos = f;
    return tpl_apply_filter(c, f->fid, f->str, inner, &a, out);
}

/* ------------------------------------------------------------------ for loops */

static int run_loop(tpl_ctx *c, const tnode *n, tval iterable, int depth0, tscope *outer);

static int loop_recurse(tpl_ctx *c, tloop *lp, tval iterable, tval *out) {
    if (!(lp->node->flags & NF_RECURSIVE))
        return tpl_fail(c, X_TYPE, "The loop must have the 'recursive' marker to be called recursively.");
    if (++c->calls > c->lim.max_recursion)
        return tpl_fail(c, X_LIMIT, "the template recurses deeper than max_recursion (%d)", c->lim.max_recursion);
    tbuf b = {0};
    tbuf *saved = c->out;
    c->out = &b;
    int r = run_loop(c, lp->node, iterable, lp->depth0 + 1, lp->scope);
    c->out = saved;
    c->calls--;
    if (r < 0) { tb_free(c, &b); return -1; }
    tstr *s = tb_finish(c, &b);
    if (!s) return -1;
    *out = tv_str(s);
    return 0;
}

int tpl_loop_call(tpl_ctx *c, tloop *lp, const targs *a, tval *out) {
    if (a->npos != 1 || a->nkw) return tpl_fail(c, X_TYPE, "loop() takes exactly one argument");
    return loop_recurse(c, lp, a->pos[0], out);
}

static int run_loop(tpl_ctx *c, const tnode *n, tval iterable, int depth0, tscope *outer) {
    const tval *items;
    int64_t cnt;
    c->pos = n->b;
    if (iterable.k == TV_UNDEF && iterable.sub == U_UNSAFE) return tpl_undef_fail(c, iterable);
    if (tv_iter(c, iterable, &items, &cnt) < 0) return -1;
    tscope *saved = c->scope;
    if (n->c) { /* loop filter: for x in xs if cond */
        tval *keep = tpl_alloc(c, (size_t)cnt * sizeof(tval) + 1);
        tscope *ts = tpl_scope_new(c, outer);
        if (!keep || !ts) return -1;
        int64_t k = 0;
        c->scope = ts;
        for (int64_t i = 0; i < cnt; i++) {
            ts->n = 0;
            tval cond;
            if (assign(c, n->a, items[i]) < 0 || tpl_eval(c, n->c, &cond) < 0) { c->scope = saved; return -1; }
            if (tv_truthy(cond)) keep[k++] = items[i];
        }
        c->scope = saved;
        items = keep;
        cnt = k;
    }
    if (cnt == 0) {
        if (!n->e) return 0;
        tscope *es = tpl_scope_new(c, outer);
        if (!es) return -1;
        c->scope = es;
        int r = tpl_exec_body(c, n->e);
        c->scope = saved;
        return r < 0 ? -1 : 0;
    }
    tloop *lp = tpl_alloc(c, sizeof(tloop));
    tscope *s = tpl_scope_new(c, outer);
    if (!lp || !s) return -1;
    lp->items = items;
    lp->n = cnt;
    lp->depth0 = depth0;
    lp->node = n;
    lp->scope = outer;
    tval lv = {0};
    lv.k = TV_LOOP;
    lv.u.lp = lp;
    int r = 0;
    for (int64_t i = 0; i < cnt; i++) {
        if (++c->iters > (uint64_t)c->lim.max_iterations) {
            c->pos = n;
            c->scope = saved;
            return tpl_fail(c, X_LIMIT, "the render exceeds max_iterations (%" PRId64 " loop iterations)", c->lim.max_iterations);
        }
        lp->i = i;
        s->n = 0;
        c->scope = s;
        if (assign(c, n->a, items[i]) < 0 || tpl_scope_set(c, s, SYM_LOOP, lv) < 0) { r = -1; break; }
        r = tpl_exec_body(c, n->d);
        if (r < 0) break;
        if (r == 1) { r = 0; break; }
        r = 0;
    }
    c->scope = saved;
    return r;
}

/* ------------------------------------------------------------------ statements */

static int exec_stmt(tpl_ctx *c, const tnode *n);

int tpl_exec_body(tpl_ctx *c, const tnode *body) {
    if (!body) return 0;
    if (body->kind != S_BODY) return exec_stmt(c, body);
    for (uint32_t i = 0; i < body->nkids; i++) {
        int r = exec_stmt(c, body->kids[i]);
        if (r) return r;
    }
    return 0;
}

static int exec_stmt(tpl_ctx *c, const tnode *n) {
    c->pos = n;
    if (tpl_step(c) < 0) return -1;
    if (++c->depth > TPL_MAX_EVAL_DEPTH || tpl_stack_used(c->stack_base) > TPL_MAX_STACK) {
        c->pos = n;
        c->depth--;
        return tpl_fail(c, X_LIMIT, "the template nests or recurses too deeply");
    }
    int r = 0;
    tval v;
    switch (n->kind) {
    case S_BODY: r = tpl_exec_body(c, n); break;
    case S_TEXT: r = tb_put(c, c->out, n->str->data, n->str->len); break;
    case S_OUTPUT:
        if (tpl_eval_output(c, n->a, &v) < 0) { r = -1; break; }
        if (v.k == TV_UNDEF && v.sub == U_MISSING) break;
        r = tpl_write_output(c, v);
        break;
    case S_IF: {
        if (tpl_eval(c, n->a, &v) < 0) { r = -1; break; }
        if (tv_truthy(v)) { r = tpl_exec_body(c, n->b); break; }
        bool done = false;
        for (uint32_t i = 0; i < n->nkids && !done; i++) {
            if (tpl_eval(c, n->kids[i], &v) < 0) { r = -1; done = true; break; }
            if (tv_truthy(v)) { r = tpl_exec_body(c, n->kids2[i]); done = true; }
        }
        if (!done && n->c) r = tpl_exec_body(c, n->c);
        break;
    }
    case S_FOR:
        if (tpl_eval(c, n->b, &v) < 0) { r = -1; break; }
        r = run_loop(c, n, v, 0, c->scope);
        break;
    case S_SET:
        if (tpl_eval(c, n->b, &v) < 0) { r = -1; break; }
        r = assign(c, n->a, v);
        break;
    case S_SETBLOCK: {
        tscope *s = tpl_scope_new(c, c->scope);
        tstr *str;
        if (!s) { r = -1; break; }
        r = tpl_capture(c, n->b, s, &str);
        if (r) break;
        v = tv_str(str);
        v.sub = c->autoescape; /* (Markup if autoescape else identity)(concat(body)) */
        if (apply_chain(c, n->c, v, &v) < 0) { r = -1; break; }
        r = assign(c, n->a, v);
        break;
    }
    case S_MACRO: {
        tmacro *m = tpl_alloc(c, sizeof(tmacro));
        if (!m) { r = -1; break; }
        m->def = n;
        m->closure = c->scope;
        m->name = n->str;
        m->autoescape = c->autoescape;
        v = (tval){0};
        v.k = TV_MACRO;
        v.u.m = m;
        r = tpl_scope_set(c, c->scope, n->sym, v);
        break;
    }
    case S_CALLBLOCK: {
        tmacro *m = tpl_alloc(c, sizeof(tmacro));
        if (!m) { r = -1; break; }
        m->def = n;
        m->closure = c->scope;
        m->name = n->str;
        m->autoescape = c->autoescape;
        tval caller = {0};
        caller.k = TV_MACRO;
        caller.u.m = m;
        const tnode *call = n->a;
        tval fn;
        if (tpl_eval(c, call->a, &fn) < 0) { r = -1; break; }
        targs a = {0};
        if (tpl_eval_args(c, call, &a) < 0) { r = -1; break; }
        c->pos = call;
        if (fn.k == TV_MACRO) {
            if (tpl_call_macro(c, fn.u.m, &a, caller, &v) < 0) { r = -1; break; }
        } else {
            /* pass caller as a keyword argument */
            targs b = a;
            b.kwn = tpl_alloc(c, (a.nkw + 1) * sizeof(tstr *));
            b.kwv = tpl_alloc(c, (a.nkw + 1) * sizeof(tval));
            if (!b.kwn || !b.kwv) { r = -1; break; }
            if (a.nkw) { memcpy(b.kwn, a.kwn, a.nkw * sizeof(tstr *)); memcpy(b.kwv, a.kwv, a.nkw * sizeof(tval)); }
            b.kwn[a.nkw] = c->t->syms[SYM_CALLER];
            b.kwv[a.nkw] = caller;
            b.nkw++;
            if (tpl_call_value(c, fn, &b, &v) < 0) { r = -1; break; }
        }
        r = tpl_write_output(c, v);
        break;
    }
    case S_FILTERBLOCK: {
        tscope *s = tpl_scope_new(c, c->scope);
        tstr *str;
        if (!s) { r = -1; break; }
        r = tpl_capture(c, n->b, s, &str);
        if (r) break;
        v = tv_str(str);
        v.sub = c->autoescape;
        if (apply_chain(c, n->a, v, &v) < 0) { r = -1; break; }
        r = tpl_write_output(c, v);
        break;
    }
    case S_WITH: {
        tscope *s = tpl_scope_new(c, c->scope);
        tval *vals = tpl_alloc(c, (n->nkids + 1) * sizeof(tval));
        if (!s || !vals) { r = -1; break; }
        for (uint32_t i = 0; i < n->nkids && r == 0; i++)
            if (tpl_eval(c, n->kids2[i], &vals[i]) < 0) r = -1;
        if (r) break;
        tscope *saved = c->scope;
        c->scope = s;
        for (uint32_t i = 0; i < n->nkids && r == 0; i++)
            if (assign(c, n->kids[i], vals[i]) < 0) r = -1;
        if (!r) r = tpl_exec_body(c, n->b);
        c->scope = saved;
        break;
    }
    case S_BREAK: r = 1; break;
    case S_CONTINUE: r = 2; break;
    case S_SCOPE: {
        bool ae = c->autoescape;
        if (n->op == 1) { /* {% autoescape EXPR %}: eval_ctx.autoescape for the block */
            if (tpl_eval(c, n->a, &v) < 0) { r = -1; break; }
            c->autoescape = tv_truthy(v);
        }
        tscope *s = tpl_scope_new(c, c->scope);
        if (!s) { c->autoescape = ae; r = -1; break; }
        tscope *saved = c->scope;
        c->scope = s;
        r = tpl_exec_body(c, n->b);
        c->scope = saved;
        c->autoescape = ae;
        break;
    }
    case S_FAIL:
        c->pos = n;
        r = tpl_fail(c, X_TYPE, "%s", n->str->data);
        break;
    default:
        c->pos = n;
        r = tpl_fail(c, X_RUNTIME, "internal: unknown statement");
        break;
    }
    c->depth--;
    return r;
}

int tpl_render_root(tpl_ctx *c, tbuf *out) {
    c->out = out;
    c->scope = c->root;
    int r = tpl_exec_body(c, c->t->root);
    return r < 0 ? -1 : 0;
}

/* ------------------------------------------------------------------ expressions */

static int eval_seq(tpl_ctx *c, const tnode *n, int kind, tval *out) {
    tlist *l = tl_new(c, n->nkids);
    if (!l) return -1;
    for (uint32_t i = 0; i < n->nkids; i++)
        if (tpl_eval(c, n->kids[i], &l->v[i]) < 0) return -1;
    if (tl_finish_depth(c, l) < 0) return -1;
    *out = tv_list(l, kind);
    return 0;
}

static int eval_slice(tpl_ctx *c, tval obj, const tnode *sl, tval *out) {
    tval parts[3];
    const tnode *pn[3] = {sl->a, sl->b, sl->c};
    int64_t iv[3] = {0, 0, 0};
    bool given[3];
    for (int i = 0; i < 3; i++) {
        given[i] = false;
        if (!pn[i]) continue;
        if (tpl_eval(c, pn[i], &parts[i]) < 0) return -1;
        if (parts[i].k == TV_NONE) continue;
        if (parts[i].k == TV_UNDEF) return tpl_undef_fail(c, parts[i]);
        c->pos = sl;
        if (parts[i].k != TV_INT && parts[i].k != TV_BOOL)
            return tpl_fail(c, X_TYPE, "slice indices must be integers or None or have an __index__ method");
        iv[i] = parts[i].k == TV_BOOL ? parts[i].u.b : parts[i].u.i;
        given[i] = true;
    }
    c->pos = sl;
    if (obj.k == TV_UNDEF) return tpl_undef_fail(c, obj);
    bool is_str = obj.k == TV_STR;
    bool is_seq = obj.k == TV_LIST && (obj.sub == LK_LIST || obj.sub == LK_TUPLE || obj.sub == LK_RANGE || obj.sub == LK_GROUP);
    /* jinja2 compiles a slice to Python's own subscription, so slicing anything but a
     * sequence raises; only a slice its optimizer folds (eval_folded) goes through
     * environment.getitem, which turns the TypeError into Undefined */
    if (!is_str && !is_seq) {
        if (c->folding) {
            *out = tv_undef_hint(c, "object is not subscriptable by a slice");
            return 0;
        }
        if (obj.k == TV_DICT) return tpl_fail(c, X_TYPE, "unhashable type: 'slice'");
        return tpl_fail(c, X_TYPE, "'%s' object is not subscriptable", tv_type_name(obj));
    }
    int64_t step = given[2] ? iv[2] : 1;
    if (step == 0) return tpl_fail(c, X_VALUE, "slice step cannot be zero");
    int64_t len = is_str ? (int64_t)tstr_nchars(obj.u.s) : (int64_t)obj.u.l->n;
    if (is_str && !obj.u.s->ascii && tpl_charge(c, obj.u.s->len / 32) < 0) return -1; /* a UTF-8 walk */
    int64_t start, stop;
    if (step > 0) {
        start = given[0] ? iv[0] : 0;
        stop = given[1] ? iv[1] : len;
        if (start < 0) { start += len; if (start < 0) start = 0; } else if (start > len) start = len;
        if (stop < 0) { stop += len; if (stop < 0) stop = 0; } else if (stop > len) stop = len;
    } else {
        start = given[0] ? iv[0] : len - 1;
        stop = given[1] ? iv[1] : -1 - len;
        if (start < 0) { start += len; if (start < 0) start = -1; } else if (start >= len) start = len - 1;
        if (stop < 0) { stop += len; if (stop < 0) stop = -1; } else if (stop >= len) stop = len - 1;
    }
    int64_t cnt = step > 0 ? (stop > start ? (stop - start + step - 1) / step : 0)
                           : (stop < start ? (start - stop - 1) / (-step) + 1 : 0);
    if (is_str) {
        tstr *s = obj.u.s;
        if (step == 1) {
            size_t a = tstr_byte_at(s, start), e = tstr_byte_at(s, start + cnt);
            tstr *r = tstr_sub(c, s, a, e);
            if (!r) return -1;
            *out = tv_str(r);
            out->sub = obj.sub;
            return 0;
        }
        /* byte offsets of every code point */
        uint32_t nc = tstr_nchars(s);
        uint32_t *offs = tpl_alloc(c, ((size_t)nc + 1) * sizeof(uint32_t));
        if (!offs) return -1;
        uint32_t k = 0;
        for (uint32_t i = 0; i < s->len; i++)
            if (((unsigned char)s->data[i] & 0xC0) != 0x80) offs[k++] = i;
        offs[nc] = s->len;
        tbuf b = {0};
        for (int64_t j = 0, i = start; j < cnt; j++, i += step)
            if (tb_put_sub(c, &b, s, offs[i], offs[i + 1]) < 0) { tb_free(c, &b); return -1; }
        tstr *r = tb_finish(c, &b);
        if (!r) return -1;
        *out = tv_str(r);
        out->sub = obj.sub;
        return 0;
    }
    tlist *l = tl_new(c, (uint32_t)cnt);
    if (!l) return -1;
    for (int64_t j = 0, i = start; j < cnt; j++, i += step) l->v[j] = obj.u.l->v[i];
    if (tl_finish_depth(c, l) < 0) return -1;
    if (obj.sub == LK_RANGE) {
        l->r0 = obj.u.l->r0 + start * obj.u.l->r2;
        l->r2 = obj.u.l->r2 * step;
        l->r1 = l->r0 + cnt * l->r2;
    }
    *out = tv_list(l, obj.sub == LK_GROUP ? LK_TUPLE : obj.sub);
    return 0;
}

static int eval_call(tpl_ctx *c, const tnode *n, tval *out) {
    const tnode *callee = n->a;
    if (callee->kind == E_GETATTR) {
        tval obj;
        if (tpl_eval(c, callee->a, &obj) < 0) return -1;
        c->pos = callee;
        if (obj.k == TV_UNDEF) return tpl_undef_fail(c, obj);
        bool unsafe = false;
        int id = tpl_method_id(obj, callee->str, &unsafe);
        if (unsafe) {
            tval u = tv_unsafe(c, obj, callee->str);
            return tpl_undef_fail(c, u);
        }
        if (id >= 0) {
            targs a = {0};
            if (tpl_eval_args(c, n, &a) < 0) return -1;
            c->pos = n;
            return tpl_call_builtin(c, id, obj, &a, out);
        }
        tval fn;
        if (tpl_getattr(c, obj, callee->str, &fn) < 0) return -1;
        targs a = {0};
        if (tpl_eval_args(c, n, &a) < 0) return -1;
        c->pos = n;
        return tpl_call_value(c, fn, &a, out);
    }
    tval fn;
    if (tpl_eval(c, callee, &fn) < 0) return -1;
    targs a = {0};
    if (tpl_eval_args(c, n, &a) < 0) return -1;
    c->pos = n;
    return tpl_call_value(c, fn, &a, out);
}

/* jinja2's optimizer cannot fold this node (nodes.Impossible): only seen while
 * c->folding, and eval_folded discards the failure */
static int not_constant(tpl_ctx *c) { return tpl_fail(c, X_RUNTIME, "not a constant expression"); }

bool tpl_filter_takes_context(const tstr *name) {
    static const char *const ctx[] = {"map", "random", "reject", "rejectattr", "select", "selectattr"};
    for (size_t i = 0; i < sizeof ctx / sizeof ctx[0]; i++)
        if (tstr_eq(name, ctx[i])) return true;
    return false;
}

static int eval_plain(tpl_ctx *c, const tnode *n, tval *out) {
    c->pos = n;
    if (tpl_step(c) < 0) return -1;
    if (++c->depth > TPL_MAX_EVAL_DEPTH || tpl_stack_used(c->stack_base) > TPL_MAX_STACK) {
        c->pos = n;
        c->depth--;
        return tpl_fail(c, X_LIMIT, "the template nests or recurses too deeply");
    }
    int r = 0;
    tval a, b;
    switch (n->kind) {
    case E_CONST: *out = n->cv; break;
    case E_NAME: r = c->folding ? not_constant(c) : tpl_lookup(c, n->sym, out); break;
    case E_GETATTR:
        if ((r = tpl_eval(c, n->a, &a)) < 0) break;
        c->pos = n;
        r = tpl_getattr(c, a, n->str, out);
        break;
    case E_GETITEM:
        if ((r = tpl_eval(c, n->a, &a)) < 0) break;
        if (n->b->kind == E_SLICE) { r = eval_slice(c, a, n->b, out); break; }
        if ((r = tpl_eval(c, n->b, &b)) < 0) break;
        c->pos = n;
        r = tpl_getitem(c, a, b, out);
        break;
    case E_CALL: r = c->folding ? not_constant(c) : eval_call(c, n, out); break;
    case E_FILTER: {
        if (c->folding && (n->fid < 0 || tpl_filter_takes_context(n->str))) { r = not_constant(c); break; }
        if ((r = tpl_eval(c, n->a, &a)) < 0) break;
        targs args = {0};
        if ((r = tpl_eval_args(c, n, &args)) < 0) break;
        c->pos = n;
        r = tpl_apply_filter(c, n->fid, n->str, a, &args, out);
        break;
    }
    case E_TEST: {
        if (c->folding && n->fid < 0) { r = not_constant(c); break; }
        if ((r = tpl_eval(c, n->a, &a)) < 0) break;
        targs args = {0};
        if ((r = tpl_eval_args(c, n, &args)) < 0) break;
        c->pos = n;
        bool res;
        r = tpl_apply_test(c, n->fid, n->str, a, &args, &res);
        if (r == 0) *out = tv_bool(res);
        break;
    }
    case E_BIN:
        if ((r = tpl_eval(c, n->a, &a)) < 0 || (r = tpl_eval(c, n->b, &b)) < 0) break;
        c->pos = n;
        r = tpl_arith(c, n->op, a, b, out);
        break;
    case E_CONCAT: {
        /* under autoescape jinja2 joins with markup_join: once a part is Markup, the
         * rest are escaped and the result is Markup */
        tval *parts = c->autoescape ? tpl_alloc(c, ((size_t)n->nkids + 1) * sizeof(tval)) : NULL;
        if (c->autoescape && !parts) { r = -1; break; }
        bool mk = false;
        tbuf buf = {0};
        for (uint32_t i = 0; i < n->nkids && r == 0; i++) {
            if ((r = tpl_eval(c, n->kids[i], &a)) < 0) break;
            c->pos = n;
            if (parts) { parts[i] = a; mk |= tv_is_markup(a); continue; }
            r = tv_write_str(c, &buf, a);
        }
        for (uint32_t i = 0; parts && i < n->nkids && r == 0; i++) {
            a = parts[i];
            if (mk && tpl_html_escape(c, a, &a) < 0) { r = -1; break; }
            r = tv_write_str(c, &buf, a);
        }
        if (r < 0) { tb_free(c, &buf); break; }
        tstr *s = tb_finish(c, &buf);
        if (!s) { r = -1; break; }
        *out = tv_str(s);
        out->sub = mk;
        break;
    }
    case E_NEG:
    case E_POS:
        if ((r = tpl_eval(c, n->a, &a)) < 0) break;
        c->pos = n;
        if (a.k == TV_UNDEF) { r = tpl_undef_fail(c, a); break; }
        if (a.k == TV_BOOL) a = tv_int(a.u.b);
        if (a.k == TV_INT) {
            if (n->kind == E_NEG && a.u.i == INT64_MIN) { r = tpl_fail(c, X_OVERFLOW, "integer overflow (64-bit integers)"); break; }
            *out = tv_int(n->kind == E_NEG ? -a.u.i : a.u.i);
        } else if (a.k == TV_FLOAT) {
            *out = tv_float(n->kind == E_NEG ? -a.u.f : a.u.f);
        } else {
            r = tpl_fail(c, X_TYPE, "bad operand type for unary %c: '%s'", n->kind == E_NEG ? '-' : '+', tv_type_name(a));
        }
        break;
    case E_NOT:
        if ((r = tpl_eval(c, n->a, &a)) < 0) break;
        *out = tv_bool(!tv_truthy(a));
        break;
    case E_AND:
        if ((r = tpl_eval(c, n->a, &a)) < 0) break;
        if (!tv_truthy(a)) { *out = a; break; }
        r = tpl_eval(c, n->b, out);
        break;
    case E_OR:
        if ((r = tpl_eval(c, n->a, &a)) < 0) break;
        if (tv_truthy(a)) { *out = a; break; }
        r = tpl_eval(c, n->b, out);
        break;
    case E_COMPARE: {
        if ((r = tpl_eval(c, n->a, &a)) < 0) break;
        bool res = true;
        for (uint32_t i = 0; i < n->nkids; i++) {
            if ((r = tpl_eval(c, n->kids[i], &b)) < 0) break;
            c->pos = n;
            if ((r = tv_cmp_op(c, n->ops[i], a, b, &res)) < 0) break;
            if (!res) break;
            a = b;
        }
        if (r == 0) *out = tv_bool(res);
        break;
    }
    case E_COND:
        if ((r = tpl_eval(c, n->b, &a)) < 0) break;
        if (tv_truthy(a)) r = tpl_eval(c, n->a, out);
        else if (n->c) r = tpl_eval(c, n->c, out);
        else if (c->folding) r = not_constant(c);
        else {
            char hint[160];
            snprintf(hint, sizeof hint,
                     "the inline if-expression on line %u evaluated to false and no else section was defined.", n->line);
            *out = tv_undef_hint(c, hint);
        }
        break;
    case E_LIST: r = eval_seq(c, n, LK_LIST, out); break;
    case E_TUPLE: r = eval_seq(c, n, LK_TUPLE, out); break;
    case E_DICT: {
        tdict *d = td_new(c, n->nkids);
        if (!d) { r = -1; break; }
        for (uint32_t i = 0; i < n->nkids; i++) {
            if ((r = tpl_eval(c, n->kids[i], &a)) < 0 || (r = tpl_eval(c, n->kids2[i], &b)) < 0) break;
            c->pos = n->kids[i];
            if (!tv_hashable(a)) { r = tpl_fail(c, X_TYPE, "unhashable type: '%s'", tv_type_name(a)); break; }
            if ((r = td_set(c, d, a, b)) < 0) break;
        }
        if (r == 0) { *out = (tval){0}; out->k = TV_DICT; out->u.d = d; }
        break;
    }
    default:
        c->pos = n;
        r = c->folding ? not_constant(c) : tpl_fail(c, X_RUNTIME, "internal: cannot evaluate this node");
        break;
    }
    c->depth--;
    return r < 0 ? -1 : 0;
}

/* markupsafe / jinja2 has_safe_repr: what the optimizer may turn into a constant */
static bool safe_repr(tval v, int depth) {
    if (depth > 64) return false;
    switch (v.k) {
    case TV_NONE: case TV_BOOL: case TV_INT: case TV_FLOAT: case TV_STR: return true;
    case TV_LIST:
        if (v.sub != LK_LIST && v.sub != LK_TUPLE && v.sub != LK_RANGE) return false;
        for (uint32_t i = 0; v.sub != LK_RANGE && i < v.u.l->n; i++)
            if (!safe_repr(v.u.l->v[i], depth + 1)) return false;
        return true;
    case TV_DICT:
        for (uint32_t i = 0; i < v.u.d->n; i++)
            if (!safe_repr(v.u.d->keys[i], depth + 1) || !safe_repr(v.u.d->vals[i], depth + 1)) return false;
        return true;
    default: return false;
    }
}

/* An expression holding a slice subscript, evaluated as jinja2 compiles it. Its
 * optimizer replaces every constant subexpression whose value has a safe repr by
 * that value (nodes.*.as_const, where a subscript goes through environment.getitem:
 * slicing a non-sequence gives Undefined); a {{ }} expression that is constant as a
 * whole is printed from its constant value whatever it is. Everything else runs as
 * Python code, where slicing a non-sequence raises TypeError. So: try n as a
 * constant; keep the value when it qualifies, else evaluate n normally (its
 * children get the same treatment). Costs at most depth x size steps. */
static int eval_folded(tpl_ctx *c, const tnode *n, tval *out, bool output_root) {
    c->folding = true;
    int r = eval_plain(c, n, out);
    c->folding = false;
    if (r == 0 && (output_root || safe_repr(*out, 0))) return 0;
    if (r < 0) {
        if (c->st == LOOM_ERR_RANGE || c->st == LOOM_ERR_NOMEM) return -1; /* limits are not Impossible */
        c->failed = false;
        c->st = LOOM_OK;
        c->emsg[0] = 0;
    }
    return eval_plain(c, n, out);
}

int tpl_eval(tpl_ctx *c, const tnode *n, tval *out) {
    if ((n->flags & NF_FOLDSLICE) && !c->folding) return eval_folded(c, n, out, false);
    return eval_plain(c, n, out);
}

int tpl_eval_output(tpl_ctx *c, const tnode *n, tval *out) {
    if ((n->flags & NF_FOLDSLICE) && !c->folding) return eval_folded(c, n, out, true);
    return eval_plain(c, n, out);
}
