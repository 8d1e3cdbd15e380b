/* Calls (arguments, macros, callables), attribute and item access with jinja2's
 * sandbox rules (obj.attr tries the Python attribute, then obj['attr'];
 * obj[key] tries the item, then the attribute for string keys; mutating methods
 * are unsafe), and Python arithmetic. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpl.h"

int tpl_loop_call(tpl_ctx *c, tloop *lp, const targs *a, tval *out);

/* ------------------------------------------------------------------ arguments */

int tpl_eval_args(tpl_ctx *c, const tnode *call, targs *a) {
    memset(a, 0, sizeof *a);
    uint32_t np = call->nkids, nk = call->nkids2;
    tval dyn = {0}, dynkw = {0};
    const tval *dyn_items = NULL;
    int64_t ndyn = 0;
    if (call->c) {
        if (tpl_eval(c, call->c, &dyn) < 0) return -1;
        c->pos = call;
        if (tv_iter(c, dyn, &dyn_items, &ndyn) < 0) return -1;
    }
    if (call->d) {
        if (tpl_eval(c, call->d, &dynkw) < 0) return -1;
        c->pos = call;
        if (dynkw.k != TV_DICT) return tpl_fail(c, X_TYPE, "argument after ** must be a mapping, not %s", tv_type_name(dynkw));
    }
    uint32_t ndk = dynkw.k == TV_DICT ? dynkw.u.d->n : 0;
    if (np + ndyn) {
        a->pos = tpl_alloc(c, (np + (size_t)ndyn) * sizeof(tval));
        if (!a->pos) return -1;
    }
    for (uint32_t i = 0; i < np; i++)
        if (tpl_eval(c, call->kids[i], &a->pos[i]) < 0) return -1;
    for (int64_t i = 0; i < ndyn; i++) a->pos[np + i] = dyn_items[i];
    a->npos = np + (uint32_t)ndyn;
    if (nk + ndk) {
        a->kwn = tpl_alloc(c, (nk + ndk) * sizeof(tstr *));
        a->kwv = tpl_alloc(c, (nk + ndk) * sizeof(tval));
        if (!a->kwn || !a->kwv) return -1;
    }
    for (uint32_t i = 0; i < nk; i++) {
        a->kwn[i] = call->names[i];
        if (tpl_eval(c, call->kids2[i], &a->kwv[i]) < 0) return -1;
    }
    for (uint32_t i = 0; i < ndk; i++) {
        if (dynkw.u.d->keys[i].k != TV_STR) return tpl_fail(c, X_TYPE, "keywords must be strings");
        a->kwn[nk + i] = dynkw.u.d->keys[i].u.s;
        a->kwv[nk + i] = dynkw.u.d->vals[i];
    }
    a->nkw = nk + ndk;
    c->pos = call;
    return 0;
}

int tpl_bind(tpl_ctx *c, const char *fname, const targs *a, const char *const *names, int n, tval *out) {
    for (int i = 0; i < n; i++) out[i] = tv_missing();
    if (a->npos > (uint32_t)n)
        return tpl_fail(c, X_TYPE, "%s() takes at most %d argument%s (%u given)", fname, n, n == 1 ? "" : "s", a->npos);
    for (uint32_t i = 0; i < a->npos; i++) out[i] = a->pos[i];
    for (uint32_t k = 0; k < a->nkw; k++) {
        int j;
        for (j = 0; j < n; j++)
            if (tstr_eq(a->kwn[k], names[j])) break;
        if (j == n)
            return tpl_fail(c, X_TYPE, "%s() got an unexpected keyword argument '%.*s'", fname,
                            (int)(a->kwn[k]->len > 60 ? 60 : a->kwn[k]->len), a->kwn[k]->data);
        if (!tv_is_missing(out[j])) return tpl_fail(c, X_TYPE, "%s() got multiple values for argument '%s'", fname, names[j]);
        out[j] = a->kwv[k];
    }
    return 0;
}

/* ------------------------------------------------------------------ macros */

int tpl_call_macro(tpl_ctx *c, const tmacro *m, const targs *a, tval caller, tval *out) {
    const tnode *def = m->def;
    uint32_t np = def->nkids;
    const char *mname = m->name->data;
    if (++c->calls > c->lim.max_recursion) {
        c->calls--;
        return tpl_fail(c, X_LIMIT, "the template recurses deeper than max_recursion (%d)", c->lim.max_recursion);
    }
    tscope *s = tpl_scope_new(c, m->closure);
    bool *bound = tpl_alloc(c, np + 1);
    if (!s || !bound) { c->calls--; return -1; }
    int rc = -1;
    /* positional */
    uint32_t npos = a->npos < np ? a->npos : np;
    for (uint32_t i = 0; i < npos; i++) {
        if (tpl_scope_set(c, s, def->kids[i]->sym, a->pos[i]) < 0) goto done;
        bound[i] = true;
    }
    if (a->npos > np && !(def->flags & NF_VARARGS)) {
        tpl_fail(c, X_TYPE, "macro '%s' takes not more than %u argument(s)", mname, np);
        goto done;
    }
    /* keywords */
    tdict *extra_kw = NULL;
    for (uint32_t k = 0; k < a->nkw; k++) {
        uint32_t j;
        bool placed = false;
        for (j = npos; j < np; j++) {
            if (def->kids[j]->str->len == a->kwn[k]->len && !memcmp(def->kids[j]->str->data, a->kwn[k]->data, a->kwn[k]->len)) {
                if (!bound[j]) {
                    if (tpl_scope_set(c, s, def->kids[j]->sym, a->kwv[k]) < 0) goto done;
                    bound[j] = true;
                    placed = true;
                }
                break;
            }
        }
        if (placed) continue;
        if (tstr_eq(a->kwn[k], "caller") && (def->flags & NF_CALLER) && tv_is_missing(caller)) {
            caller = a->kwv[k];
            continue;
        }
        if (def->flags & NF_KWARGS) {
            if (!extra_kw && !(extra_kw = td_new(c, 4))) goto done;
            if (td_set(c, extra_kw, tv_str((tstr *)a->kwn[k]), a->kwv[k]) < 0) goto done;
            continue;
        }
        if (tstr_eq(a->kwn[k], "caller"))
            tpl_fail(c, X_TYPE, "macro '%s' was invoked with two values for the special caller argument. This is most likely a bug.", mname);
        else
            tpl_fail(c, X_TYPE, "macro '%s' takes no keyword argument '%.*s'", mname, (int)(a->kwn[k]->len > 60 ? 60 : a->kwn[k]->len),
                     a->kwn[k]->data);
        goto done;
    }
    if (!tv_is_missing(caller) && !(def->flags & NF_CALLER) && !(def->flags & NF_KWARGS)) {
        tpl_fail(c, X_TYPE, "macro '%s' was invoked with two values for the special caller argument. This is most likely a bug.", mname);
        goto done;
    }
    {
        tscope *saved = c->scope;
        c->scope = s;
        /* defaults, evaluated in the macro scope at call time */
        for (uint32_t j = 0; j < np; j++) {
            if (bound[j]) continue;
            tval v;
            if (def->kids2[j]) {
                if (tpl_eval(c, def->kids2[j], &v) < 0) { c->scope = saved; goto done; }
            } else {
                char hint[128];
                snprintf(hint, sizeof hint, "parameter '%.*s' was not provided", (int)(def->kids[j]->str->len > 60 ? 60 : def->kids[j]->str->len),
                         def->kids[j]->str->data);
                v = tv_undef_hint(c, hint);
            }
            if (tpl_scope_set(c, s, def->kids[j]->sym, v) < 0) { c->scope = saved; goto done; }
        }
        c->scope = saved;
    }
    if (def->flags & NF_CALLER) {
        tval cv = tv_is_missing(caller) ? tv_undef_hint(c, "No caller defined") : caller;
        if (tpl_scope_set(c, s, SYM_CALLER, cv) < 0) goto done;
    }
    if (def->flags & NF_VARARGS) {
        uint32_t nx = a->npos > np ? a->npos - np : 0;
        tlist *l = tl_new(c, nx);
        if (!l) goto done;
        for (uint32_t i = 0; i < nx; i++) l->v[i] = a->pos[np + i];
        if (tl_finish_depth(c, l) < 0 || tpl_scope_set(c, s, SYM_VARARGS, tv_list(l, LK_TUPLE)) < 0) goto done;
    }
    if (def->flags & NF_KWARGS) {
        if (!extra_kw && !(extra_kw = td_new(c, 4))) goto done;
        tval kv = {0};
        kv.k = TV_DICT;
        kv.u.d = extra_kw;
        if (tpl_scope_set(c, s, SYM_KWARGS, kv) < 0) goto done;
    }
    {
        /* the body's {{ }} escape as where the macro was defined; the result is
         * Markup when the call happens under autoescape (jinja2's Macro.__call__) */
        tstr *res;
        bool call_ae = c->autoescape;
        c->autoescape = m->autoescape;
        int r = tpl_capture(c, def->b, s, &res);
        c->autoescape = call_ae;
        if (r != 0) goto done;
        *out = tv_str(res);
        out->sub = call_ae;
        rc = 0;
    }
done:
    c->calls--;
    return rc;
}

int tpl_call_value(tpl_ctx *c, tval fn, const targs *a, tval *out) {
    switch (fn.k) {
    case TV_MACRO: return tpl_call_macro(c, fn.u.m, a, tv_missing(), out);
    case TV_FUNC: return tpl_call_builtin(c, fn.u.fn->id, fn.u.fn->self, a, out);
    case TV_LOOP: return tpl_loop_call(c, fn.u.lp, a, out);
    case TV_JOINER: {
        tobj *o = fn.u.o;
        if (a->npos || a->nkw) return tpl_fail(c, X_TYPE, "Joiner.__call__() takes 1 positional argument");
        if (!o->used) { o->used = true; *out = tv_str((tstr *)&tpl_empty_str); }
        else *out = tv_str(o->sep);
        return 0;
    }
    case TV_UNDEF: return tpl_undef_fail(c, fn);
    default: return tpl_fail(c, X_TYPE, "'%s' object is not callable", tv_type_name(fn));
    }
}

/* ------------------------------------------------------------------ attributes */

static int bound_method(tpl_ctx *c, int id, tval self, tval *out) {
    tfunc *f = tpl_alloc(c, sizeof(tfunc));
    if (!f) return -1;
    f->id = (uint16_t)id;
    f->self = self;
    *out = (tval){0};
    out->k = TV_FUNC;
    out->u.fn = f;
    return 0;
}

static bool is_dunder(const tstr *name) {
    return name->len >= 4 && name->data[0] == '_' && name->data[1] == '_' && name->data[name->len - 1] == '_' &&
           name->data[name->len - 2] == '_';
}

static int loop_attr(tpl_ctx *c, tval obj, const tstr *name, tval *out) {
    tloop *lp = obj.u.lp;
    const char *s = name->data;
    if (!strcmp(s, "index")) *out = tv_int(lp->i + 1);
    else if (!strcmp(s, "index0")) *out = tv_int(lp->i);
    else if (!strcmp(s, "revindex")) *out = tv_int(lp->n - lp->i);
    else if (!strcmp(s, "revindex0")) *out = tv_int(lp->n - lp->i - 1);
    else if (!strcmp(s, "first")) *out = tv_bool(lp->i == 0);
    else if (!strcmp(s, "last")) *out = tv_bool(lp->i == lp->n - 1);
    else if (!strcmp(s, "length")) *out = tv_int(lp->n);
    else if (!strcmp(s, "depth")) *out = tv_int(lp->depth0 + 1);
    else if (!strcmp(s, "depth0")) *out = tv_int(lp->depth0);
    else if (!strcmp(s, "previtem")) *out = lp->i > 0 ? lp->items[lp->i - 1] : tv_undef_hint(c, "there is no previous item");
    else if (!strcmp(s, "nextitem")) *out = lp->i + 1 < lp->n ? lp->items[lp->i + 1] : tv_undef_hint(c, "there is no next item");
    else {
        bool unsafe;
        int id = tpl_method_id(obj, name, &unsafe);
        if (id >= 0) return bound_method(c, id, obj, out);
        *out = tv_undef_attr(c, obj, name);
    }
    return 0;
}

int tpl_getattr(tpl_ctx *c, tval obj, const tstr *name, tval *out) {
    if (obj.k == TV_UNDEF) return tpl_undef_fail(c, obj);
    if (is_dunder(name)) { *out = tv_unsafe(c, obj, name); return 0; }
    bool unsafe = false;
    int id;
    switch (obj.k) {
    case TV_NS: {
        const tdict *d = obj.u.ns->attrs;
        uint32_t idx;
        int f = td_find(c, d, tv_str((tstr *)name), &idx);
        if (f < 0) return -1;
        *out = f ? d->vals[idx] : tv_undef_attr(c, obj, name);
        return 0;
    }
    case TV_LOOP: return loop_attr(c, obj, name, out);
    case TV_MACRO:
        if (tstr_eq(name, "name")) { *out = tv_str((tstr *)obj.u.m->name); return 0; }
        if (tstr_eq(name, "catch_kwargs")) { *out = tv_bool(obj.u.m->def->flags & NF_KWARGS); return 0; }
        if (tstr_eq(name, "catch_varargs")) { *out = tv_bool(obj.u.m->def->flags & NF_VARARGS); return 0; }
        if (tstr_eq(name, "caller")) { *out = tv_bool(obj.u.m->def->flags & NF_CALLER); return 0; }
        if (tstr_eq(name, "arguments")) {
            const tnode *d = obj.u.m->def;
            tlist *l = tl_new(c, d->nkids);
            if (!l) return -1;
            for (uint32_t i = 0; i < d->nkids; i++) l->v[i] = tv_str((tstr *)d->kids[i]->str);
            *out = tv_list(l, LK_TUPLE);
            return 0;
        }
        *out = tv_undef_attr(c, obj, name);
        return 0;
    case TV_CYCLER:
        if (tstr_eq(name, "current")) { *out = obj.u.o->items[obj.u.o->pos]; return 0; }
        break;
    case TV_LIST:
        if (obj.sub == LK_GROUP) {
            if (tstr_eq(name, "grouper")) { *out = obj.u.l->v[0]; return 0; }
            if (tstr_eq(name, "list")) { *out = obj.u.l->v[1]; return 0; }
        }
        break;
    case TV_BOOL: case TV_INT: case TV_FLOAT: {
        /* numbers.Number's data attributes (bool is an int) */
        bool fl = obj.k == TV_FLOAT;
        int64_t iv = obj.k == TV_BOOL ? obj.u.b : obj.k == TV_INT ? obj.u.i : 0;
        if (tstr_eq(name, "real")) { *out = fl ? obj : tv_int(iv); return 0; }
        if (tstr_eq(name, "imag")) { *out = fl ? tv_float(0.0) : tv_int(0); return 0; }
        if (!fl && tstr_eq(name, "numerator")) { *out = tv_int(iv); return 0; }
        if (!fl && tstr_eq(name, "denominator")) { *out = tv_int(1); return 0; }
        break;
    }
    default: break;
    }
    id = tpl_method_id(obj, name, &unsafe);
    if (unsafe) { *out = tv_unsafe(c, obj, name); return 0; }
    if (id >= 0) return bound_method(c, id, obj, out);
    if (obj.k == TV_DICT) {
        uint32_t idx;
        int f = td_find(c, obj.u.d, tv_str((tstr *)name), &idx);
        if (f < 0) return -1;
        if (f) { *out = obj.u.d->vals[idx]; return 0; }
    }
    *out = tv_undef_attr(c, obj, name);
    return 0;
}

int tpl_getitem(tpl_ctx *c, tval obj, tval key, tval *out) {
    if (obj.k == TV_UNDEF) return tpl_undef_fail(c, obj);
    if (key.k == TV_UNDEF && obj.k == TV_DICT) {
        /* Undefined is hashable: a plain miss */
        *out = tv_undef_item(c, obj, key);
        return 0;
    }
    switch (obj.k) {
    case TV_DICT:
        if (tv_hashable(key)) {
            uint32_t idx;
            int f = td_find(c, obj.u.d, key, &idx);
            if (f < 0) return -1;
            if (f) { *out = obj.u.d->vals[idx]; return 0; }
        }
        break;
    case TV_LIST:
        if (obj.sub == LK_LIST || obj.sub == LK_TUPLE || obj.sub == LK_RANGE || obj.sub == LK_GROUP) {
            if (key.k == TV_INT || key.k == TV_BOOL) {
                int64_t i = key.k == TV_BOOL ? key.u.b : key.u.i, n = obj.u.l->n;
                if (i < 0) i += n;
                if (i >= 0 && i < n) { *out = obj.u.l->v[i]; return 0; }
                *out = tv_undef_item(c, obj, key);
                return 0;
            }
        }
        break;
    case TV_STR:
        if (key.k == TV_INT || key.k == TV_BOOL) {
            tstr *s = obj.u.s;
            if (!s->ascii && tpl_charge(c, s->len / 32) < 0) return -1; /* a UTF-8 walk */
            int64_t i = key.k == TV_BOOL ? key.u.b : key.u.i, n = tstr_nchars(s);
            if (i < 0) i += n;
            if (i >= 0 && i < n) {
                size_t a = tstr_byte_at(s, i), e = a < s->len ? a + 1 : a; /* to the next code point */
                while (e < s->len && ((unsigned char)s->data[e] & 0xC0) == 0x80) e++;
                tstr *r = tstr_sub(c, s, a, e);
                if (!r) return -1;
                *out = tv_str(r);
                out->sub = obj.sub;
                return 0;
            }
            *out = tv_undef_item(c, obj, key);
            return 0;
        }
        break;
    default: break;
    }
    if (key.k == TV_STR) {
        /* jinja2 falls back to the attribute for string keys */
        tval v;
        if (obj.k == TV_DICT) {
            bool unsafe = false;
            int id = tpl_method_id(obj, key.u.s, &unsafe);
            if (unsafe) { *out = tv_unsafe(c, obj, key.u.s); return 0; }
            if (id >= 0) return bound_method(c, id, obj, out);
            *out = tv_undef_attr(c, obj, key.u.s);
            return 0;
        }
        if (tpl_getattr(c, obj, key.u.s, &v) < 0) return -1;
        *out = v;
        return 0;
    }
    *out = tv_undef_item(c, obj, key);
    return 0;
}

/* ------------------------------------------------------------------ arithmetic */

static const char *opname(int op) {
    switch (op) {
    case OP_ADD: return "+";
    case OP_SUB: return "-";
    case OP_MUL: return "*";
    case OP_DIV: return "/";
    case OP_FLOORDIV: return "//";
    case OP_MOD: return "%";
    default: return "** or pow()";
    }
}

static bool is_intlike(tval v) { return v.k == TV_INT || v.k == TV_BOOL; }
static int64_t ival(tval v) { return v.k == TV_BOOL ? v.u.b : v.u.i; }

static int repeat(tpl_ctx *c, tval seq, int64_t times, tval *out) {
    if (times < 0) times = 0;
    if (seq.k == TV_STR) {
        tstr *s = seq.u.s;
        if (times && s->len && (uint64_t)times > c->lim.max_output / s->len)
            return tpl_fail(c, X_LIMIT, "a string exceeds max_output (%zu bytes)", c->lim.max_output);
        tstr *r;
        if (!s->nspan) { /* fill by doubling */
            size_t total = (size_t)times * s->len;
            char *tmp = total ? malloc(total) : NULL;
            if (total && !tmp) return tpl_fail(c, X_MEMORY, "out of memory");
            if (total) {
                memcpy(tmp, s->data, s->len);
                for (size_t done = s->len; done < total;) {
                    size_t k = done < total - done ? done : total - done;
                    memcpy(tmp + done, tmp, k);
                    done += k;
                }
            }
            r = tstr_new(c, tmp ? tmp : "", total);
            free(tmp);
        } else {
            tbuf b = {0};
            for (int64_t i = 0; i < times; i++)
                if (tb_put_str(c, &b, s) < 0) { tb_free(c, &b); return -1; }
            r = tb_finish(c, &b);
        }
        if (!r) return -1;
        *out = tv_str(r);
        out->sub = seq.sub;
        return 0;
    }
    tlist *l = seq.u.l;
    if (times && l->n && (uint64_t)times * l->n > (uint64_t)c->lim.max_iterations)
        return tpl_fail(c, X_LIMIT, "a list would exceed max_iterations (%" PRId64 ") items", c->lim.max_iterations);
    tlist *r = tl_new(c, (uint32_t)(times * l->n));
    if (!r) return -1;
    for (int64_t i = 0; i < times; i++) memcpy(r->v + i * l->n, l->v, l->n * sizeof(tval));
    if (tl_finish_depth(c, r) < 0) return -1;
    *out = tv_list(r, seq.sub == LK_TUPLE ? LK_TUPLE : LK_LIST);
    return 0;
}

static int ipow(tpl_ctx *c, int64_t b, int64_t e, tval *out) {
    int64_t r = 1;
    while (e > 0) {
        if (e & 1) {
            if (__builtin_mul_overflow(r, b, &r)) goto ovf;
        }
        e >>= 1;
        if (e && __builtin_mul_overflow(b, b, &b)) goto ovf;
    }
    *out = tv_int(r);
    return 0;
ovf:
    return tpl_fail(c, X_OVERFLOW, "integer overflow (Loom's template integers are 64-bit)");
}

int tpl_arith(tpl_ctx *c, int op, tval a, tval b, tval *out) {
    if (a.k == TV_UNDEF) return tpl_undef_fail(c, a);
    if (b.k == TV_UNDEF) return tpl_undef_fail(c, b);
    bool an = a.k == TV_INT || a.k == TV_BOOL || a.k == TV_FLOAT, bn = b.k == TV_INT || b.k == TV_BOOL || b.k == TV_FLOAT;
    if (an && bn) {
        bool ints = is_intlike(a) && is_intlike(b);
        double x = a.k == TV_FLOAT ? a.u.f : (double)ival(a), y = b.k == TV_FLOAT ? b.u.f : (double)ival(b);
        int64_t i = ints ? ival(a) : 0, j = ints ? ival(b) : 0, r;
        switch (op) {
        case OP_ADD:
            if (!ints) { *out = tv_float(x + y); return 0; }
            if (__builtin_add_overflow(i, j, &r)) break;
            *out = tv_int(r);
            return 0;
        case OP_SUB:
            if (!ints) { *out = tv_float(x - y); return 0; }
            if (__builtin_sub_overflow(i, j, &r)) break;
            *out = tv_int(r);
            return 0;
        case OP_MUL:
            if (!ints) { *out = tv_float(x * y); return 0; }
            if (__builtin_mul_overflow(i, j, &r)) break;
            *out = tv_int(r);
            return 0;
        case OP_DIV:
            if (y == 0) return tpl_fail(c, X_ZERODIV, ints ? "division by zero" : "float division by zero");
            *out = tv_float(x / y);
            return 0;
        case OP_FLOORDIV:
        case OP_MOD:
            if (ints) {
                if (j == 0) return tpl_fail(c, X_ZERODIV, op == OP_MOD ? "integer modulo by zero" : "integer division or modulo by zero");
                if (i == INT64_MIN && j == -1) {
                    if (op == OP_MOD) { *out = tv_int(0); return 0; }
                    break;
                }
                int64_t q = i / j, m = i % j;
                if (m != 0 && ((m < 0) != (j < 0))) { q--; m += j; }
                *out = tv_int(op == OP_MOD ? m : q);
                return 0;
            } else {
                if (y == 0) return tpl_fail(c, X_ZERODIV, op == OP_MOD ? "float modulo" : "float floor division by zero");
                double mod = fmod(x, y), div = (x - mod) / y, fd;
                if (mod != 0) {
                    if ((y < 0) != (mod < 0)) { mod += y; div -= 1.0; }
                } else {
                    mod = copysign(0.0, y);
                }
                if (div != 0) {
                    fd = floor(div);
                    if (div - fd > 0.5) fd += 1.0;
                } else {
                    fd = copysign(0.0, x / y);
                }
                *out = tv_float(op == OP_MOD ? mod : fd);
                return 0;
            }
        case OP_POW:
            if (ints && j >= 0) return ipow(c, i, j, out);
            if (x == 0 && y < 0) return tpl_fail(c, X_ZERODIV, "0.0 cannot be raised to a negative power");
            *out = tv_float(pow(x, y));
            return 0;
        default: break;
        }
        return tpl_fail(c, X_OVERFLOW, "integer overflow (Loom's template integers are 64-bit)");
    }
    if (op == OP_ADD) {
        if (a.k == TV_STR && b.k == TV_STR && (a.sub || b.sub)) { /* Markup: escape the plain operand */
            tbuf buf = {0};
            int rc = a.sub ? tb_put_str(c, &buf, a.u.s) : tpl_escape(c, &buf, a.u.s);
            if (rc == 0) rc = b.sub ? tb_put_str(c, &buf, b.u.s) : tpl_escape(c, &buf, b.u.s);
            if (rc < 0) { tb_free(c, &buf); return -1; }
            tstr *s = tb_finish(c, &buf);
            if (!s) return -1;
            *out = tv_markup(s);
            return 0;
        }
        if (a.k == TV_STR && b.k == TV_STR) {
            if (b.u.s->len == 0) { *out = a; return 0; }
            if (a.u.s->len == 0) { *out = b; return 0; }
            tstr *s = tstr_concat(c, a.u.s, b.u.s);
            if (!s) return -1;
            *out = tv_str(s);
            return 0;
        }
        if (a.k == TV_STR) return tpl_fail(c, X_TYPE, "can only concatenate str (not \"%s\") to str", tv_type_name(b));
        if (a.k == TV_LIST && (a.sub == LK_LIST || a.sub == LK_TUPLE)) {
            int fa = a.sub, fb = b.k == TV_LIST ? (b.sub == LK_GROUP ? LK_TUPLE : b.sub) : -1;
            if (fa != fb)
                return tpl_fail(c, X_TYPE, "can only concatenate %s (not \"%s\") to %s", tv_type_name(a), tv_type_name(b),
                                tv_type_name(a));
            tlist *x = a.u.l, *y = b.u.l;
            tlist *l = tl_new(c, x->n + y->n);
            if (!l) return -1;
            memcpy(l->v, x->v, x->n * sizeof(tval));
            memcpy(l->v + x->n, y->v, y->n * sizeof(tval));
            if (tl_finish_depth(c, l) < 0) return -1;
            *out = tv_list(l, fa);
            return 0;
        }
    }
    if (op == OP_MUL) {
        bool aseq = a.k == TV_STR || (a.k == TV_LIST && (a.sub == LK_LIST || a.sub == LK_TUPLE));
        bool bseq = b.k == TV_STR || (b.k == TV_LIST && (b.sub == LK_LIST || b.sub == LK_TUPLE));
        if (aseq && is_intlike(b)) return repeat(c, a, ival(b), out);
        if (bseq && is_intlike(a)) return repeat(c, b, ival(a), out);
        if (aseq) return tpl_fail(c, X_TYPE, "can't multiply sequence by non-int of type '%s'", tv_type_name(b));
        if (bseq) return tpl_fail(c, X_TYPE, "can't multiply sequence by non-int of type '%s'", tv_type_name(a));
    }
    if (op == OP_MOD && a.k == TV_STR) return tpl_percent_format(c, a.u.s, a.sub == 1, b, out);
    if (op == OP_POW)
        return tpl_fail(c, X_TYPE, "unsupported operand type(s) for ** or pow(): '%s' and '%s'", tv_type_name(a), tv_type_name(b));
    return tpl_fail(c, X_TYPE, "unsupported operand type(s) for %s: '%s' and '%s'", opname(op), tv_type_name(a), tv_type_name(b));
}
