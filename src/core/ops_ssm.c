/*
 * ops_ssm.c - constructors of the recurrent-layer ops (loom.h): softplus (and xIELU,
 * another activation of this generation of models), the causal
 * depthwise convolution, the gated delta rule, the selective scan and RWKV-7's state
 * update over a batch with per-sequence state.
 */
#include <math.h>

#include "core/ctx.h"
#include "core/tensor.h"

loom_tensor *loom_softplus(loom_ctx *ctx, loom_tensor *a) {
    const loom_op op = LOOM_OP_SOFTPLUS;
    if (!loom_op_check(ctx, op, 1, &a)) return loom_ctx_poison(ctx);
    if (a->type != LOOM_TYPE_F32) return loom_ctx_fail(ctx, LOOM_ERR_TYPE, op, a, NULL, "softplus takes F32");
    return loom_new_node(ctx, op, LOOM_TYPE_F32, a->ne, 1, &a);
}

loom_tensor *loom_exp(loom_ctx *ctx, loom_tensor *a) {
    const loom_op op = LOOM_OP_EXP;
    if (!loom_op_check(ctx, op, 1, &a)) return loom_ctx_poison(ctx);
    if (a->type != LOOM_TYPE_F32) return loom_ctx_fail(ctx, LOOM_ERR_TYPE, op, a, NULL, "exp takes F32");
    return loom_new_node(ctx, op, LOOM_TYPE_F32, a->ne, 1, &a);
}

static float softplus_f(float x) { return x > 20.0f ? x : logf(1.0f + expf(x)); }

loom_tensor *loom_xielu(loom_ctx *ctx, loom_tensor *a, float alpha_n, float alpha_p, float beta, float eps) {
    const loom_op op = LOOM_OP_XIELU;
    if (!loom_op_check(ctx, op, 1, &a)) return loom_ctx_poison(ctx);
    if (a->type != LOOM_TYPE_F32) return loom_ctx_fail(ctx, LOOM_ERR_TYPE, op, a, NULL, "xielu takes F32");
    if (!isfinite(alpha_n) || !isfinite(alpha_p) || !isfinite(beta) || !isfinite(eps))
        return loom_ctx_fail(ctx, LOOM_ERR_INVALID_ARG, op, a, NULL, "xielu parameters must be finite");
    loom_tensor *t = loom_new_node(ctx, op, LOOM_TYPE_F32, a->ne, 1, &a);
    loom_set_op_param_f32(t, 0, beta + softplus_f(alpha_n));
    loom_set_op_param_f32(t, 1, softplus_f(alpha_p));
    loom_set_op_param_f32(t, 2, beta);
    loom_set_op_param_f32(t, 3, eps);
    return t;
}

/* rows of a contiguous (ne0 elements apart in memory): the kernels read rows */
static bool rows_ok(const loom_tensor *a) { return a->type == LOOM_TYPE_F32 && a->nb[0] == sizeof(float); }

/* a per-slot state: contiguous F32 [per, S >= 1] */
static bool state_ok(const loom_tensor *st, int64_t per) {
    return st->type == LOOM_TYPE_F32 && loom_tensor_is_contiguous(st) && st->ne[0] == per && st->ne[1] >= 1 &&
           st->ne[2] == 1;
}

static loom_tensor *seq_check(loom_ctx *ctx, loom_op op, loom_tensor *seq, int64_t T) {
    if (seq->type != LOOM_TYPE_I32 || loom_tensor_nelements(seq) != T || !loom_tensor_is_contiguous(seq))
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, seq, NULL, "seq must be contiguous I32 with %lld values",
                             (long long)T);
    return seq;
}

/* The result of a recurrent op: rows x (T outputs + cols per slot of every slot's new
 * state), or in place (ip) rows x T with the states written into `state` itself: op
 * param 15 marks it; at most REC_IP_MAX_SLOTS slots (the kernels list the used ones). */
#define REC_IP_MAX_SLOTS 256
static loom_tensor *rec_node(loom_ctx *ctx, loom_op op, int64_t rows, int64_t T, int64_t cols, loom_tensor *state,
                             int n, loom_tensor **args, bool ip) {
    const int64_t S = state->ne[1];
    if (ip && S > REC_IP_MAX_SLOTS)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, state, NULL, "in place: at most %d state slots (state has %lld)",
                             REC_IP_MAX_SLOTS, (long long)S);
    int64_t ne[4] = {rows, ip ? T : T + cols * S, 1, 1};
    loom_tensor *t = loom_new_node(ctx, op, LOOM_TYPE_F32, ne, n, args);
    if (ip) loom_set_op_param_i32(t, 15, 1);
    return t;
}

loom_tensor *loom_ssm_conv(loom_ctx *ctx, loom_tensor *x, loom_tensor *w, loom_tensor *state, loom_tensor *seq) {
    const loom_op op = LOOM_OP_SSM_CONV;
    loom_tensor *args[4] = {x, w, state, seq};
    if (!loom_op_check(ctx, op, 4, args)) return loom_ctx_poison(ctx);
    const int64_t C = x->ne[0], T = x->ne[1], K = w->ne[0];
    if (!rows_ok(x) || x->ne[2] != 1 || x->ne[3] != 1)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, x, NULL, "x must be F32 [C, T] with contiguous rows");
    if ((w->type != LOOM_TYPE_F32 && w->type != LOOM_TYPE_F16 && w->type != LOOM_TYPE_BF16) ||
        !loom_tensor_is_contiguous(w) || w->ne[1] != C || K < 2 || K > 16 || w->ne[2] != 1)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, w, x,
                             "kernel must be contiguous F32/F16/BF16 [K = 2..16, C = %lld]", (long long)C);
    if (!rows_ok(state) || state->ne[0] != (K - 1) * C || state->ne[1] < 1 || state->ne[2] != 1 ||
        state->ne[3] != 1)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, state, w,
                             "state must be F32 [(K-1) * C = %lld, S] with contiguous columns", (long long)((K - 1) * C));
    if (seq_check(ctx, op, seq, T) != seq) return loom_ctx_poison(ctx);
    const int64_t S = state->ne[1];
    int64_t ne[4] = {C, T + (K - 1) * S, 1, 1};
    return loom_new_node(ctx, op, LOOM_TYPE_F32, ne, 4, args);
}

static loom_tensor *gated_delta(loom_ctx *ctx, loom_tensor *qk, loom_tensor *v, loom_tensor *g, loom_tensor *beta,
                                loom_tensor *state, loom_tensor *seq, float eps, bool ip) {
    const loom_op op = LOOM_OP_GATED_DELTA;
    loom_tensor *args[6] = {qk, v, g, beta, state, seq};
    if (!loom_op_check(ctx, op, 6, args)) return loom_ctx_poison(ctx);
    const int64_t Dk = qk->ne[0], Hk = qk->ne[1] / 2, T = qk->ne[2], Dv = v->ne[0], Hv = v->ne[1];
    if (!rows_ok(qk) || qk->ne[1] % 2 || Hk < 1 || qk->ne[3] != 1)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, qk, NULL, "qk must be F32 [Dk, 2 Hk, T] with contiguous rows");
    if (!rows_ok(v) || v->ne[2] != T || v->ne[3] != 1 || Hv < 1 || Hv % Hk)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, v, qk, "v must be F32 [Dv, Hv, T = %lld], Hv a multiple of %lld",
                             (long long)T, (long long)Hk);
    if (beta->type != LOOM_TYPE_F32 || !loom_tensor_is_contiguous(beta) || beta->ne[0] != Hv || beta->ne[1] != T ||
        beta->ne[2] != 1)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, beta, v, "beta must be contiguous F32 [Hv = %lld, T = %lld]",
                             (long long)Hv, (long long)T);
    /* g: one log decay per head [Hv, T], or one per key dim [Dk, Hv, T] (Kimi's KDA) */
    const bool per_head = g->ne[0] == Hv && g->ne[1] == T && g->ne[2] == 1 && g->ne[3] == 1;
    const bool per_key = g->ne[0] == Dk && g->ne[1] == Hv && g->ne[2] == T && g->ne[3] == 1;
    if (g->type != LOOM_TYPE_F32 || !loom_tensor_is_contiguous(g) || !(per_head || per_key))
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, g, v,
                             "g must be contiguous F32 [Hv = %lld, T = %lld] or [Dk = %lld, Hv, T]", (long long)Hv,
                             (long long)T, (long long)Dk);
    if (!state_ok(state, Dv * Dk * Hv))
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, state, v, "state must be contiguous F32 [Dv * Dk * Hv = %lld, S]",
                             (long long)(Dv * Dk * Hv));
    if (seq_check(ctx, op, seq, T) != seq) return loom_ctx_poison(ctx);
    if (!(eps >= 0.0f) || !isfinite(eps)) return loom_ctx_fail(ctx, LOOM_ERR_INVALID_ARG, op, qk, NULL, "bad eps");
    loom_tensor *t = rec_node(ctx, op, Dv * Hv, T, Dk, state, 6, args, ip);
    if (!loom_tensor_is_poison(t)) loom_set_op_param_f32(t, 0, eps);
    return t;
}

static loom_tensor *ssm_scan(loom_ctx *ctx, loom_tensor *x, loom_tensor *dt, loom_tensor *A, loom_tensor *bc,
                             loom_tensor *state, loom_tensor *seq, bool ip) {
    const loom_op op = LOOM_OP_SSM_SCAN;
    loom_tensor *args[6] = {x, dt, A, bc, state, seq};
    if (!loom_op_check(ctx, op, 6, args)) return loom_ctx_poison(ctx);
    const int64_t Dh = x->ne[0], H = x->ne[1], T = x->ne[2], N = bc->ne[0], G = bc->ne[1] / 2;
    if (!rows_ok(x) || x->ne[3] != 1 || Dh < 1 || H < 1)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, x, NULL, "x must be F32 [Dh, H, T] with contiguous rows");
    if (dt->type != LOOM_TYPE_F32 || !loom_tensor_is_contiguous(dt) || dt->ne[0] != H || dt->ne[1] != T ||
        dt->ne[2] != 1 || dt->ne[3] != 1)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, dt, x, "dt must be contiguous F32 [H = %lld, T = %lld]",
                             (long long)H, (long long)T);
    if (A->type != LOOM_TYPE_F32 || !loom_tensor_is_contiguous(A) ||
        (loom_tensor_nelements(A) != H && (A->ne[0] != N || A->ne[1] != H || A->ne[2] != 1 || A->ne[3] != 1)))
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, A, x,
                             "A must be contiguous F32 with H = %lld values or [N = %lld, H]", (long long)H,
                             (long long)N);
    if (!rows_ok(bc) || bc->ne[1] % 2 || G < 1 || bc->ne[2] != T || bc->ne[3] != 1 || N < 1 || H % G)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, bc, x,
                             "bc must be F32 [N, 2 G, T = %lld] with contiguous rows, H = %lld a multiple of G",
                             (long long)T, (long long)H);
    if (!state_ok(state, N * Dh * H))
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, state, x, "state must be contiguous F32 [N * Dh * H = %lld, S]",
                             (long long)(N * Dh * H));
    if (seq_check(ctx, op, seq, T) != seq) return loom_ctx_poison(ctx);
    return rec_node(ctx, op, Dh * H, T, N, state, 6, args, ip);
}

static loom_tensor *rwkv_wkv7(loom_ctx *ctx, loom_tensor *r, loom_tensor *w, loom_tensor *k, loom_tensor *v,
                              loom_tensor *a, loom_tensor *b, loom_tensor *state, loom_tensor *seq, bool ip) {
    const loom_op op = LOOM_OP_RWKV_WKV7;
    loom_tensor *args[8] = {r, w, k, v, a, b, state, seq};
    if (!loom_op_check(ctx, op, 8, args)) return loom_ctx_poison(ctx);
    const int64_t D = k->ne[0], H = k->ne[1], T = k->ne[2];
    static const char *const names[6] = {"r", "w", "k", "v", "a", "b"};
    for (int i = 0; i < 6; i++)
        if (!rows_ok(args[i]) || args[i]->ne[0] != D || args[i]->ne[1] != H || args[i]->ne[2] != T ||
            args[i]->ne[3] != 1 || D < 1 || H < 1)
            return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, args[i], k,
                                 "%s must be F32 [D = %lld, H = %lld, T = %lld] with contiguous rows", names[i],
                                 (long long)D, (long long)H, (long long)T);
    if (!state_ok(state, D * D * H))
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, state, k, "state must be contiguous F32 [D * D * H = %lld, S]",
                             (long long)(D * D * H));
    if (seq_check(ctx, op, seq, T) != seq) return loom_ctx_poison(ctx);
    return rec_node(ctx, op, D * H, T, D, state, 8, args, ip);
}

static loom_tensor *rwkv_wkv6(loom_ctx *ctx, loom_tensor *k, loom_tensor *v, loom_tensor *r, loom_tensor *u,
                              loom_tensor *w, loom_tensor *state, loom_tensor *seq, bool ip) {
    const loom_op op = LOOM_OP_RWKV_WKV6;
    loom_tensor *args[7] = {k, v, r, u, w, state, seq};
    if (!loom_op_check(ctx, op, 7, args)) return loom_ctx_poison(ctx);
    const int64_t D = k->ne[0], H = k->ne[1], T = k->ne[2];
    loom_tensor *const tok[4] = {k, v, r, w};
    static const char *const names[4] = {"k", "v", "r", "w"};
    for (int i = 0; i < 4; i++)
        if (!rows_ok(tok[i]) || tok[i]->ne[0] != D || tok[i]->ne[1] != H || tok[i]->ne[2] != T ||
            tok[i]->ne[3] != 1 || D < 1 || H < 1)
            return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, tok[i], k,
                                 "%s must be F32 [D = %lld, H = %lld, T = %lld] with contiguous rows", names[i],
                                 (long long)D, (long long)H, (long long)T);
    if (u->type != LOOM_TYPE_F32 || !loom_tensor_is_contiguous(u) || loom_tensor_nelements(u) != D * H)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, u, k, "u must be contiguous F32 with D * H = %lld values",
                             (long long)(D * H));
    if (!state_ok(state, D * D * H))
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, state, k, "state must be contiguous F32 [D * D * H = %lld, S]",
                             (long long)(D * D * H));
    if (seq_check(ctx, op, seq, T) != seq) return loom_ctx_poison(ctx);
    return rec_node(ctx, op, D * H, T, D, state, 7, args, ip);
}

loom_tensor *loom_gated_delta(loom_ctx *ctx, loom_tensor *qk, loom_tensor *v, loom_tensor *g, loom_tensor *beta,
                              loom_tensor *state, loom_tensor *seq, float eps) {
    return gated_delta(ctx, qk, v, g, beta, state, seq, eps, false);
}
loom_tensor *loom_gated_delta_inplace(loom_ctx *ctx, loom_tensor *qk, loom_tensor *v, loom_tensor *g, loom_tensor *beta,
                                      loom_tensor *state, loom_tensor *seq, float eps) {
    return gated_delta(ctx, qk, v, g, beta, state, seq, eps, true);
}
loom_tensor *loom_ssm_scan(loom_ctx *ctx, loom_tensor *x, loom_tensor *dt, loom_tensor *A, loom_tensor *bc,
                           loom_tensor *state, loom_tensor *seq) {
    return ssm_scan(ctx, x, dt, A, bc, state, seq, false);
}
loom_tensor *loom_ssm_scan_inplace(loom_ctx *ctx, loom_tensor *x, loom_tensor *dt, loom_tensor *A, loom_tensor *bc,
                                   loom_tensor *state, loom_tensor *seq) {
    return ssm_scan(ctx, x, dt, A, bc, state, seq, true);
}
loom_tensor *loom_rwkv_wkv7(loom_ctx *ctx, loom_tensor *r, loom_tensor *w, loom_tensor *k, loom_tensor *v,
                            loom_tensor *a, loom_tensor *b, loom_tensor *state, loom_tensor *seq) {
    return rwkv_wkv7(ctx, r, w, k, v, a, b, state, seq, false);
}
loom_tensor *loom_rwkv_wkv7_inplace(loom_ctx *ctx, loom_tensor *r, loom_tensor *w, loom_tensor *k, loom_tensor *v,
                                    loom_tensor *a, loom_tensor *b, loom_tensor *state, loom_tensor *seq) {
    return rwkv_wkv7(ctx, r, w, k, v, a, b, state, seq, true);
}
loom_tensor *loom_rwkv_wkv6(loom_ctx *ctx, loom_tensor *k, loom_tensor *v, loom_tensor *r, loom_tensor *u,
                            loom_tensor *w, loom_tensor *state, loom_tensor *seq) {
    return rwkv_wkv6(ctx, k, v, r, u, w, state, seq, false);
}
loom_tensor *loom_rwkv_wkv6_inplace(loom_ctx *ctx, loom_tensor *k, loom_tensor *v, loom_tensor *r, loom_tensor *u,
                                    loom_tensor *w, loom_tensor *state, loom_tensor *seq) {
    return rwkv_wkv6(ctx, k, v, r, u, w, state, seq, true);
}
