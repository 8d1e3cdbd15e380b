/*
 * ops_ssm.c - CPU kernels of the recurrent-layer ops (scalar: they are the reference;
 * the work is per channel / per head and sequence, split across threads).
 */
#include <math.h>
#include <string.h>

#include "cpu/kernels.h"
#include "cpu/ops.h"

void loom_cpu_op_softplus(const loom_compute_params *p, loom_tensor *dst) {
    const loom_tensor *a = dst->src[0];
    const int64_t n0 = a->ne[0], rows = loom_nelements(a) / (n0 ? n0 : 1);
    int64_t r0, r1;
    loom_cpu_split(rows, p->ith, p->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t i1 = r % a->ne[1], i2 = (r / a->ne[1]) % a->ne[2], i3 = r / (a->ne[1] * a->ne[2]);
        const char *src = (const char *)a->data + i1 * a->nb[1] + i2 * a->nb[2] + i3 * a->nb[3];
        float *out = (float *)loom_row_ptr(dst, i1, i2, i3);
        for (int64_t i = 0; i < n0; i++) {
            const float x = *(const float *)(src + i * a->nb[0]);
            out[i] = x > 20.0f ? x : logf(1.0f + expf(x)); /* as llama.cpp's op_softplus */
        }
    }
}

void loom_cpu_op_exp(const loom_compute_params *p, loom_tensor *dst) {
    const loom_tensor *a = dst->src[0];
    const int64_t n0 = a->ne[0], rows = loom_nelements(a) / (n0 ? n0 : 1);
    int64_t r0, r1;
    loom_cpu_split(rows, p->ith, p->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t i1 = r % a->ne[1], i2 = (r / a->ne[1]) % a->ne[2], i3 = r / (a->ne[1] * a->ne[2]);
        const char *src = (const char *)a->data + i1 * a->nb[1] + i2 * a->nb[2] + i3 * a->nb[3];
        float *out = (float *)loom_row_ptr(dst, i1, i2, i3);
        for (int64_t i = 0; i < n0; i++) out[i] = expf(*(const float *)(src + i * a->nb[0]));
    }
}

void loom_cpu_op_xielu(const loom_compute_params *p, loom_tensor *dst) {
    const loom_tensor *a = dst->src[0];
    const float an = loom_get_op_param_f32(dst, 0), ap = loom_get_op_param_f32(dst, 1);
    const float beta = loom_get_op_param_f32(dst, 2), eps = loom_get_op_param_f32(dst, 3);
    const int64_t n0 = a->ne[0], rows = loom_nelements(a) / (n0 ? n0 : 1);
    int64_t r0, r1;
    loom_cpu_split(rows, p->ith, p->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t i1 = r % a->ne[1], i2 = (r / a->ne[1]) % a->ne[2], i3 = r / (a->ne[1] * a->ne[2]);
        const char *src = (const char *)a->data + i1 * a->nb[1] + i2 * a->nb[2] + i3 * a->nb[3];
        float *out = (float *)loom_row_ptr(dst, i1, i2, i3);
        for (int64_t i = 0; i < n0; i++) {
            const float x = *(const float *)(src + i * a->nb[0]);
            out[i] = x > 0.0f ? ap * x * x + beta * x : (expm1f(fminf(x, eps)) - x) * an + beta * x;
        }
    }
}

/* slot of token t, or -1 (and the op fails) when out of range */
static int64_t slot_of(const loom_tensor *seq, int64_t t, int64_t S) {
    const int32_t s = ((const int32_t *)seq->data)[t];
    return s >= 0 && s < S ? s : -1;
}

/* every token's slot in range, else the op fails (LOOM_ERR_INVALID_ARG) */
static bool slots_ok(const loom_compute_params *p, const loom_tensor *seq, int64_t T, int64_t S) {
    for (int64_t t = 0; t < T; t++)
        if (slot_of(seq, t, S) < 0) {
            loom_cpu_fail(p, LOOM_ERR_INVALID_ARG);
            return false;
        }
    return true;
}

/* The (slot, head) work of a state update: every slot, each copied into the result after
 * the outputs, or in place (the constructor's op param 15) the slots with a token,
 * ascending, updated where `state` holds them (so a decode step of one sequence in a
 * cache of many touches one slot's state, once). */
#define REC_IP_MAX_SLOTS 256
typedef struct rec_items {
    bool ip;
    int64_t n;                       /* slots worked on */
    int32_t list[REC_IP_MAX_SLOTS]; /* in place: those slots */
} rec_items;

static bool rec_items_init(const loom_compute_params *p, const loom_tensor *dst, const loom_tensor *seq, int64_t T,
                           int64_t S, rec_items *it) {
    it->ip = loom_get_op_param_i32(dst, 15) != 0;
    it->n = S;
    if (!it->ip) return true;
    if (S > REC_IP_MAX_SLOTS) { /* the constructor refuses it */
        loom_cpu_fail(p, LOOM_ERR_INTERNAL);
        return false;
    }
    uint8_t seen[REC_IP_MAX_SLOTS] = {0};
    for (int64_t t = 0; t < T; t++) seen[((const int32_t *)seq->data)[t]] = 1; /* in range: slots_ok */
    it->n = 0;
    for (int64_t s = 0; s < S; s++)
        if (seen[s]) it->list[it->n++] = (int32_t)s;
    return true;
}

/* Head h of item slot i's state: in `state` (in place) or its copy in the result (ns),
 * copied there first. */
static float *rec_state(const rec_items *it, int64_t i, int64_t h, int64_t H, size_t per, const loom_tensor *st,
                        float *ns, int64_t *slot) {
    const int64_t s = it->ip ? it->list[i] : i;
    float *src = (float *)st->data + ((size_t)s * (size_t)H + (size_t)h) * per;
    *slot = s;
    if (it->ip) return src;
    float *M = ns + ((size_t)s * (size_t)H + (size_t)h) * per;
    memcpy(M, src, per * sizeof(float));
    return M;
}

void loom_cpu_op_ssm_conv(const loom_compute_params *p, loom_tensor *dst) {
    const loom_tensor *x = dst->src[0], *w = dst->src[1], *st = dst->src[2], *seq = dst->src[3];
    const int64_t C = x->ne[0], T = x->ne[1], K = w->ne[0], S = st->ne[1];
    if (!slots_ok(p, seq, T, S)) return;
    float *y = (float *)dst->data;       /* [C, T] */
    float *ns = y + (size_t)C * (size_t)T; /* [(K-1) * C, S] */
    const size_t sstride = st->nb[1] / sizeof(float); /* a slot's state columns may be a view's */
    const float *ss = (const float *)st->data;
    float win[16], wc[16];
    if (K > 16) { /* the constructor refuses it */
        loom_cpu_fail(p, LOOM_ERR_UNSUPPORTED);
        return;
    }
    int64_t c0, c1;
    loom_cpu_split(C, p->ith, p->nth, &c0, &c1);
    for (int64_t c = c0; c < c1; c++) {
        /* channel c's taps as floats (F32, F16 or BF16 weights) */
        const size_t o = (size_t)c * (size_t)K;
        for (int64_t k = 0; k < K; k++)
            wc[k] = w->type == LOOM_TYPE_F32   ? ((const float *)w->data)[o + (size_t)k]
                    : w->type == LOOM_TYPE_F16 ? loom_fp16_to_fp32(((const uint16_t *)w->data)[o + (size_t)k])
                                               : loom_bf16_to_fp32(((const uint16_t *)w->data)[o + (size_t)k]);
        /* every slot's history of channel c moves to the result first */
        for (int64_t s = 0; s < S; s++)
            memcpy(ns + ((size_t)s * (size_t)C + (size_t)c) * (size_t)(K - 1),
                   ss + (size_t)s * sstride + (size_t)c * (size_t)(K - 1), (size_t)(K - 1) * sizeof(float));
        for (int64_t t = 0; t < T; t++) {
            const int64_t s = slot_of(seq, t, S);
            float *h = ns + ((size_t)s * (size_t)C + (size_t)c) * (size_t)(K - 1);
            memcpy(win, h, (size_t)(K - 1) * sizeof(float));
            win[K - 1] = ((const float *)((const char *)x->data + t * x->nb[1]))[c];
            float acc = 0.0f;
            for (int64_t k = 0; k < K; k++) acc += wc[k] * win[k];
            y[(size_t)t * (size_t)C + (size_t)c] = acc;
            memcpy(h, win + 1, (size_t)(K - 1) * sizeof(float));
        }
    }
}

size_t loom_cpu_work_size_gated_delta(const loom_tensor *dst, int nth) {
    const int64_t Dk = dst->src[0]->ne[0];
    return (size_t)nth * ((size_t)(3 * Dk) * sizeof(float) + 64);
}

/* x / max(|x|, eps) into out (llama.cpp's ggml_l2_norm: the sum in double) */
static void l2n(const float *x, int64_t n, float eps, float *out) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) sum += (double)x[i] * (double)x[i];
    const float scale = 1.0f / fmaxf(sqrtf((float)sum), eps);
    for (int64_t i = 0; i < n; i++) out[i] = x[i] * scale;
}

void loom_cpu_op_gated_delta(const loom_compute_params *p, loom_tensor *dst) {
    const loom_tensor *qk = dst->src[0], *v = dst->src[1], *g = dst->src[2], *beta = dst->src[3];
    const loom_tensor *st = dst->src[4], *seq = dst->src[5];
    const int64_t Dk = qk->ne[0], Hk = qk->ne[1] / 2, T = qk->ne[2], Dv = v->ne[0], Hv = v->ne[1], S = st->ne[1];
    const float eps = loom_get_op_param_f32(dst, 0), scale = 1.0f / sqrtf((float)Dk);
    rec_items it;
    if (!slots_ok(p, seq, T, S) || !rec_items_init(p, dst, seq, T, S, &it)) return;
    float *out = (float *)dst->data;                /* [Dv * Hv, T] */
    float *ns = out + (size_t)(Dv * Hv) * (size_t)T; /* [Dv * Dk * Hv, S] (not in place) */
    const size_t per = (size_t)(Dv * Dk);
    const loom_kernels *kt = loom_kernels_get();
    float *qn = (float *)((char *)p->wdata + (size_t)p->ith * ((size_t)(3 * Dk) * sizeof(float) + 64));
    float *kn = qn + Dk, *dk = kn + Dk;
    const bool per_key = g->ne[0] == Dk && g->ne[1] == Hv && g->ne[2] == T; /* KDA: a decay per key dim */
    int64_t r0, r1;
    loom_cpu_split(Hv * it.n, p->ith, p->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t h = r % Hv, hk = h % Hk;
        int64_t s;
        float *M = rec_state(&it, r / Hv, h, Hv, per, st, ns, &s);
        for (int64_t t = 0; t < T; t++) {
            if (slot_of(seq, t, S) != s) continue;
            const char *qkt = (const char *)qk->data + t * qk->nb[2];
            l2n((const float *)(qkt + hk * qk->nb[1]), Dk, eps, qn);
            l2n((const float *)(qkt + (Hk + hk) * qk->nb[1]), Dk, eps, kn);
            const float *vt = (const float *)((const char *)v->data + t * v->nb[2] + h * v->nb[1]);
            const float *gt = (const float *)g->data + (per_key ? (size_t)(t * Hv + h) * (size_t)Dk : (size_t)(t * Hv + h));
            const float decay = per_key ? 1.0f : expf(gt[0]);
            if (per_key)
                for (int64_t i = 0; i < Dk; i++) dk[i] = expf(gt[i]);
            const float b = ((const float *)beta->data)[t * Hv + h];
            float *o = out + (size_t)t * (size_t)(Dv * Hv) + (size_t)h * (size_t)Dv;
            for (int64_t j = 0; j < Dv; j++) { /* the level's f32 helpers (the scalar table: the reference) */
                float *row = M + (size_t)j * (size_t)Dk;
                if (per_key)
                    for (int64_t i = 0; i < Dk; i++) row[i] *= dk[i];
                else
                    kt->scale_f32(Dk, row, decay);
                const float d = (vt[j] - kt->dot_f32(Dk, row, kn)) * b;
                kt->axpy_f32(Dk, d, kn, row);
                o[j] = kt->dot_f32(Dk, row, qn) * scale;
            }
        }
    }
}

/* softplus as loom_cpu_op_softplus (llama.cpp's: x itself above 20) */
static float softplus1(float x) { return x > 20.0f ? x : logf(1.0f + expf(x)); }

void loom_cpu_op_ssm_scan(const loom_compute_params *p, loom_tensor *dst) {
    const loom_tensor *x = dst->src[0], *dt = dst->src[1], *A = dst->src[2], *bc = dst->src[3];
    const loom_tensor *st = dst->src[4], *seq = dst->src[5];
    const int64_t Dh = x->ne[0], H = x->ne[1], T = x->ne[2], N = bc->ne[0], G = bc->ne[1] / 2, S = st->ne[1];
    rec_items it;
    if (!slots_ok(p, seq, T, S) || !rec_items_init(p, dst, seq, T, S, &it)) return;
    float *out = (float *)dst->data;               /* [Dh * H, T] */
    float *ns = out + (size_t)(Dh * H) * (size_t)T; /* [N * Dh * H, S] (not in place) */
    const size_t per = (size_t)(N * Dh);            /* one head's state */
    const float *a = (const float *)A->data;
    const bool per_state = loom_tensor_nelements(A) != H; /* Mamba-1: A [N, H] */
    const loom_kernels *kt = loom_kernels_get();
    int64_t r0, r1;
    loom_cpu_split(H * it.n, p->ith, p->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t h = r % H, g = h / (H / G);
        int64_t s;
        float *M = rec_state(&it, r / H, h, H, per, st, ns, &s);
        for (int64_t t = 0; t < T; t++) {
            if (slot_of(seq, t, S) != s) continue;
            const float d = softplus1(((const float *)dt->data)[t * H + h]);
            const float dA = per_state ? 0.0f : expf(d * a[h]);
            const float *ah = a + h * N;
            const float *xt = (const float *)((const char *)x->data + t * x->nb[2] + h * x->nb[1]);
            const float *bt = (const float *)((const char *)bc->data + t * bc->nb[2] + g * bc->nb[1]);
            const float *ct = (const float *)((const char *)bc->data + t * bc->nb[2] + (G + g) * bc->nb[1]);
            float *o = out + (size_t)t * (size_t)(Dh * H) + (size_t)h * (size_t)Dh;
            for (int64_t i = 0; i < Dh; i++) {
                float *si = M + (size_t)i * (size_t)N;
                const float xd = xt[i] * d;
                float y = 0.0f;
                if (per_state) {
                    for (int64_t n = 0; n < N; n++) {
                        si[n] = si[n] * expf(d * ah[n]) + bt[n] * xd;
                        y += si[n] * ct[n];
                    }
                } else { /* the level's f32 helpers (the scalar table: the reference) */
                    kt->scale_f32(N, si, dA);
                    kt->axpy_f32(N, xd, bt, si);
                    y = kt->dot_f32(N, si, ct);
                }
                o[i] = y;
            }
        }
    }
}

size_t loom_cpu_work_size_rwkv_wkv7(const loom_tensor *dst, int nth) {
    const int64_t D = dst->src[2]->ne[0];
    return (size_t)nth * ((size_t)D * sizeof(float) + 64);
}

void loom_cpu_op_rwkv_wkv7(const loom_compute_params *p, loom_tensor *dst) {
    const loom_tensor *tr = dst->src[0], *tw = dst->src[1], *tk = dst->src[2], *tv = dst->src[3];
    const loom_tensor *ta = dst->src[4], *tb = dst->src[5], *st = dst->src[6], *seq = dst->src[7];
    const int64_t D = tk->ne[0], H = tk->ne[1], T = tk->ne[2], S = st->ne[1];
    rec_items it;
    if (!slots_ok(p, seq, T, S) || !rec_items_init(p, dst, seq, T, S, &it)) return;
    float *out = (float *)dst->data;              /* [D * H, T] */
    float *ns = out + (size_t)(D * H) * (size_t)T; /* [D * D * H, S] (not in place) */
    const size_t per = (size_t)(D * D);            /* one head's state */
    float *dec = (float *)((char *)p->wdata + (size_t)p->ith * ((size_t)D * sizeof(float) + 64));
    int64_t r0, r1;
    loom_cpu_split(H * it.n, p->ith, p->nth, &r0, &r1);
    for (int64_t rr = r0; rr < r1; rr++) {
        const int64_t h = rr % H;
        int64_t s;
        float *M = rec_state(&it, rr / H, h, H, per, st, ns, &s);
        for (int64_t t = 0; t < T; t++) {
            if (slot_of(seq, t, S) != s) continue;
#define WKV_ROW(tt) ((const float *)((const char *)(tt)->data + t * (tt)->nb[2] + h * (tt)->nb[1]))
            const float *r = WKV_ROW(tr), *w = WKV_ROW(tw), *k = WKV_ROW(tk), *v = WKV_ROW(tv);
            const float *a = WKV_ROW(ta), *b = WKV_ROW(tb);
#undef WKV_ROW
            for (int64_t j = 0; j < D; j++) dec[j] = expf(w[j]);
            float *o = out + (size_t)t * (size_t)(D * H) + (size_t)h * (size_t)D;
            for (int64_t i = 0; i < D; i++) {
                float *row = M + (size_t)i * (size_t)D;
                float sa = 0.0f;
                for (int64_t j = 0; j < D; j++) sa += a[j] * row[j];
                float y = 0.0f;
                for (int64_t j = 0; j < D; j++) {
                    row[j] = row[j] * dec[j] + v[i] * k[j] + sa * b[j];
                    y += row[j] * r[j];
                }
                o[i] = y;
            }
        }
    }
}

size_t loom_cpu_work_size_rwkv_wkv6(const loom_tensor *dst, int nth) {
    const int64_t D = dst->src[0]->ne[0];
    return (size_t)nth * ((size_t)D * sizeof(float) + 64);
}

void loom_cpu_op_rwkv_wkv6(const loom_compute_params *p, loom_tensor *dst) {
    const loom_tensor *tk = dst->src[0], *tv = dst->src[1], *tr = dst->src[2], *tu = dst->src[3];
    const loom_tensor *tw = dst->src[4], *st = dst->src[5], *seq = dst->src[6];
    const int64_t D = tk->ne[0], H = tk->ne[1], T = tk->ne[2], S = st->ne[1];
    rec_items it;
    if (!slots_ok(p, seq, T, S) || !rec_items_init(p, dst, seq, T, S, &it)) return;
    float *out = (float *)dst->data;              /* [D * H, T] */
    float *ns = out + (size_t)(D * H) * (size_t)T; /* [D * D * H, S] (not in place) */
    const size_t per = (size_t)(D * D);
    float *dec = (float *)((char *)p->wdata + (size_t)p->ith * ((size_t)D * sizeof(float) + 64));
    int64_t r0, r1;
    loom_cpu_split(H * it.n, p->ith, p->nth, &r0, &r1);
    for (int64_t rr = r0; rr < r1; rr++) {
        const int64_t h = rr % H;
        int64_t s;
        float *M = rec_state(&it, rr / H, h, H, per, st, ns, &s);
        const float *u = (const float *)tu->data + h * D;
        for (int64_t t = 0; t < T; t++) {
            if (slot_of(seq, t, S) != s) continue;
#define WKV_ROW(tt) ((const float *)((const char *)(tt)->data + t * (tt)->nb[2] + h * (tt)->nb[1]))
            const float *k = WKV_ROW(tk), *v = WKV_ROW(tv), *r = WKV_ROW(tr), *w = WKV_ROW(tw);
#undef WKV_ROW
            for (int64_t i = 0; i < D; i++) dec[i] = expf(-expf(w[i]));
            float *o = out + (size_t)t * (size_t)(D * H) + (size_t)h * (size_t)D;
            for (int64_t j = 0; j < D; j++) o[j] = 0.0f;
            for (int64_t i = 0; i < D; i++) { /* over key dims, as llama.cpp accumulates */
                float *row = M + (size_t)i * (size_t)D;
                const float ki = k[i], ri = r[i], ui = u[i], di = dec[i];
                for (int64_t j = 0; j < D; j++) {
                    const float kv = v[j] * ki;
                    o[j] += (kv * ui + row[j]) * ri;
                    row[j] = row[j] * di + kv;
                }
            }
        }
    }
}
