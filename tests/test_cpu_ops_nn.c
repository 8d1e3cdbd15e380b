/* nn ops on the CPU engine: mul_mat (every weight type, broadcast, strided/permuted
 * operands, thread-count independence), mul_mat_id, argsort/top_k, top_k_mask, and the sticky
 * errors of the nn op constructors. References are float64 code in this file. */
#include "cpu/kernels.h"
#include "nn_test_common.h"

/* ---------------------------------------------------------------- mul_mat */

/* Weights quantized from random floats; wdq receives the dequantised values. */
static loom_tensor *make_weight(loom_ctx *ctx, loom_type t, int64_t K, int64_t M, int64_t A2, int64_t A3,
                                float *wdq) {
    size_t rb = 0;
    if (loom_type_row_bytes(t, K, &rb) != LOOM_OK) return NULL;
    int64_t rows = M * A2 * A3;
    unsigned char *q = (unsigned char *)malloc(rb * (size_t)rows);
    float *src = fmalloc((size_t)K);
    for (int64_t r = 0; r < rows; r++) {
        fill_rnd(src, (size_t)K, 1.0f);
        if (loom_quantize_row(t, src, q + (size_t)r * rb, K) != LOOM_OK) {
            free(q);
            free(src);
            return NULL;
        }
        loom_dequantize_row(t, q + (size_t)r * rb, wdq + (size_t)r * (size_t)K, K);
    }
    int64_t ne[4] = {K, M, A2, A3};
    loom_tensor *w = loom_from_bytes(loom_ctx_input(ctx), t, q, rb * (size_t)rows, 4, ne);
    free(q);
    free(src);
    return w;
}

/* ref[i,j,k,l] = sum_d w[d,i,k/r2,l/r3] * x[d,j,k,l] (all contiguous). */
static void ref_mul_mat(const float *w, const float *x, double *ref, int64_t K, int64_t M, int64_t A2, int64_t A3,
                        int64_t N, int64_t B2, int64_t B3) {
    for (int64_t l = 0; l < B3; l++)
        for (int64_t k = 0; k < B2; k++)
            for (int64_t j = 0; j < N; j++)
                for (int64_t i = 0; i < M; i++) {
                    const float *wr = w + (((l / (B3 / A3)) * A2 + k / (B2 / A2)) * M + i) * K;
                    const float *xr = x + ((l * B2 + k) * N + j) * K;
                    double s = 0;
                    for (int64_t d = 0; d < K; d++) s += (double)wr[d] * (double)xr[d];
                    ref[((l * B2 + k) * N + j) * M + i] = s;
                }
}

/* NMSE bound from the activation format the kernel table uses for this weight type. */
static double mm_bound(loom_type wt) {
    loom_type vdt = loom_kernels_get()->dot[wt].vec_dot_type;
    switch (vdt) {
    case LOOM_TYPE_F32: return 1e-11;
    /* expected values (many outputs) are ~30x below these; with a handful of
     * outputs the ratio fluctuates, hence the margin */
    case LOOM_TYPE_F16: return 2e-6;  /* x rounded to half: ~3e-8 */
    case LOOM_TYPE_BF16: return 1e-4; /* ~2e-6 */
    default: return 5e-4;             /* 8-bit activations: ~1.5e-5 */
    }
}

static double run_mul_mat(loom_type t, int64_t K, int64_t M, int64_t N, int64_t A2, int64_t A3, int64_t B2,
                          int64_t B3, int nth) {
    loom_ctx *ctx = nn_ctx(nth, false);
    size_t nw = (size_t)(K * M * A2 * A3), nx = (size_t)(K * N * B2 * B3), no = (size_t)(M * N * B2 * B3);
    float *wdq = fmalloc(nw), *x = fmalloc(nx), *out = fmalloc(no);
    double *ref = dmalloc(no);
    fill_rnd(x, nx, 1.0f);
    loom_tensor *w = make_weight(ctx, t, K, M, A2, A3, wdq);
    double e = 1e30;
    if (w) {
        loom_tensor *y = loom_mul_mat(ctx, w, nn_f32(ctx, x, K, N, B2, B3));
        loom_status s = nn_run(ctx, y, out, no);
        CHECK_MSG(s == LOOM_OK, "%s: %s", loom_type_name(t), loom_ctx_error(ctx));
        CHECK_EQ_INT(loom_tensor_ne(y, 0), M);
        CHECK_EQ_INT(loom_tensor_ne(y, 1), N);
        if (s == LOOM_OK) {
            ref_mul_mat(wdq, x, ref, K, M, A2, A3, N, B2, B3);
            e = nmse(out, ref, no);
        }
    } else {
        CHECK_MSG(0, "cannot quantize %s", loom_type_name(t));
    }
    loom_ctx_free(ctx);
    free(wdq);
    free(x);
    free(out);
    free(ref);
    return e;
}

static void test_mul_mat_types(void) {
    static const loom_type types[] = {LOOM_TYPE_F32,  LOOM_TYPE_F16,  LOOM_TYPE_BF16, LOOM_TYPE_Q4_0,
                                      LOOM_TYPE_Q4_1, LOOM_TYPE_Q5_0, LOOM_TYPE_Q5_1, LOOM_TYPE_Q8_0,
                                      LOOM_TYPE_Q2_K, LOOM_TYPE_Q3_K, LOOM_TYPE_Q4_K, LOOM_TYPE_Q5_K,
                                      LOOM_TYPE_Q6_K, LOOM_TYPE_MXFP4};
    static const int64_t Ns[] = {1, 2, 7};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        loom_type t = types[ti];
        int64_t bs = loom_type_get(t)->block_size;
        int64_t unit = bs < 32 ? 32 : bs; /* K must hold whole activation blocks too */
        if (bs < 256 && loom_kernels_get()->dot[t].vec_dot_type == LOOM_TYPE_Q8_K) unit = 256;
        const int64_t Ks[2] = {unit, unit * (unit >= 256 ? 3 : 9)};
        for (int ki = 0; ki < 2; ki++)
            for (size_t ni = 0; ni < sizeof Ns / sizeof Ns[0]; ni++) {
                int64_t M = ni == 2 ? 1 : 13; /* M = 1 with N = 7: still >= 7 samples for the nmse */
                double e = run_mul_mat(t, Ks[ki], M, Ns[ni], 1, 1, 1, 1, 2);
                CHECK_MSG(e <= mm_bound(t), "mul_mat %s K=%lld M=%lld N=%lld nmse %g > %g", loom_type_name(t),
                          (long long)Ks[ki], (long long)M, (long long)Ns[ni], e, mm_bound(t));
            }
    }
    /* larger N (column blocks, remainder tiles) on a few types */
    static const loom_type big[] = {LOOM_TYPE_F32, LOOM_TYPE_Q8_0, LOOM_TYPE_Q4_K, LOOM_TYPE_F16, LOOM_TYPE_BF16};
    for (size_t ti = 0; ti < sizeof big / sizeof big[0]; ti++) {
        int64_t K = big[ti] == LOOM_TYPE_Q4_K ? 256 : 64;
        double e = run_mul_mat(big[ti], K, 33, 64, 1, 1, 1, 1, 3);
        CHECK_MSG(e <= mm_bound(big[ti]), "N=64 %s nmse %g", loom_type_name(big[ti]), e);
        e = run_mul_mat(big[ti], K, 67, 300, 1, 1, 1, 1, 2);
        CHECK_MSG(e <= mm_bound(big[ti]), "N=300 %s nmse %g", loom_type_name(big[ti]), e);
    }
    /* broadcast over dims 2 and 3 */
    CHECK(run_mul_mat(LOOM_TYPE_F32, 32, 5, 3, 2, 3, 4, 6, 2) <= 1e-11);
    CHECK(run_mul_mat(LOOM_TYPE_Q8_0, 64, 9, 2, 2, 1, 6, 2, 3) <= mm_bound(LOOM_TYPE_Q8_0));
    CHECK(run_mul_mat(LOOM_TYPE_F16, 32, 7, 1, 1, 2, 3, 4, 1) <= mm_bound(LOOM_TYPE_F16));
}

/* Permuted a (K-cache-like F16 [D, Hkv, L] viewed as [D, L, Hkv]) times permuted
 * b (q [D, H, T] viewed as [D, T, H]), GQA H = 2*Hkv; plus a strided b view. */
static void test_mul_mat_strided(void) {
    const int64_t D = 64, Hkv = 2, L = 37, H = 4, T = 5;
    loom_ctx *ctx = nn_ctx(3, false);
    float *kc = fmalloc((size_t)(D * Hkv * L)), *q = fmalloc((size_t)(D * H * T));
    fill_rnd(kc, (size_t)(D * Hkv * L), 1.0f);
    fill_rnd(q, (size_t)(D * H * T), 1.0f);
    round_f16(kc, (size_t)(D * Hkv * L));
    loom_tensor *K = loom_permute(ctx, nn_f16(ctx, kc, D, Hkv, L, 1), 0, 2, 1, 3);
    loom_tensor *Q = loom_permute(ctx, nn_f32(ctx, q, D, H, T, 1), 0, 2, 1, 3);
    loom_tensor *y = loom_mul_mat_full_prec(ctx, K, Q); /* [L, T, H] */
    size_t no = (size_t)(L * T * H);
    float *out = fmalloc(no);
    double *ref = dmalloc(no);
    CHECK_EQ_INT(nn_run(ctx, y, out, no), LOOM_OK);
    for (int64_t h = 0; h < H; h++)
        for (int64_t t = 0; t < T; t++)
            for (int64_t l = 0; l < L; l++) {
                double s = 0;
                for (int64_t d = 0; d < D; d++)
                    s += (double)kc[(l * Hkv + h / (H / Hkv)) * D + d] * (double)q[(t * H + h) * D + d];
                ref[(h * T + t) * L + l] = s;
            }
    double e = nmse(out, ref, no);
    CHECK_MSG(e <= mm_bound(LOOM_TYPE_F16), "attention-like F16 nmse %g", e);
    loom_ctx_free(ctx);

    /* strided b rows: [K, N] view of a [K+5, N] tensor; Q4_0 weights */
    ctx = nn_ctx(2, false);
    const int64_t Kd = 64, N = 6, M = 11;
    float *big = fmalloc((size_t)((Kd + 5) * N)), *wdq = fmalloc((size_t)(Kd * M));
    fill_rnd(big, (size_t)((Kd + 5) * N), 1.0f);
    loom_tensor *W = make_weight(ctx, LOOM_TYPE_Q4_0, Kd, M, 1, 1, wdq);
    loom_tensor *bt = nn_f32(ctx, big, Kd + 5, N, 1, 1);
    int64_t args[3] = {Kd, (int64_t)loom_tensor_nb(bt, 1), N};
    loom_tensor *bv = loom_view(ctx, bt, 0, 3, args);
    y = loom_mul_mat(ctx, W, bv);
    float *o2 = fmalloc((size_t)(M * N));
    double *r2 = dmalloc((size_t)(M * N));
    CHECK_EQ_INT(nn_run(ctx, y, o2, (size_t)(M * N)), LOOM_OK);
    for (int64_t j = 0; j < N; j++)
        for (int64_t i = 0; i < M; i++) {
            double s = 0;
            for (int64_t d = 0; d < Kd; d++) s += (double)wdq[i * Kd + d] * (double)big[j * (Kd + 5) + d];
            r2[j * M + i] = s;
        }
    e = nmse(o2, r2, (size_t)(M * N));
    CHECK_MSG(e <= mm_bound(LOOM_TYPE_Q4_0), "strided b nmse %g", e);
    loom_ctx_free(ctx);
    free(kc);
    free(q);
    free(out);
    free(ref);
    free(big);
    free(wdq);
    free(o2);
    free(r2);
}

/* Same inputs on 1, 2 and 3 threads give bit-identical results (F16 / BF16 at N = 19:
 * the packed-activation path on levels that have it). */
static void test_mul_mat_threads(void) {
    static const loom_type types[] = {LOOM_TYPE_F32, LOOM_TYPE_Q4_K, LOOM_TYPE_Q8_0, LOOM_TYPE_F16, LOOM_TYPE_BF16};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const int64_t K = 256, M = 45, N = 19;
        float *res[3];
        for (int nth = 1; nth <= 3; nth++) {
            uint64_t saved = g_rng;
            loom_ctx *ctx = nn_ctx(nth, false);
            float *wdq = fmalloc((size_t)(K * M)), *x = fmalloc((size_t)(K * N));
            loom_tensor *w = make_weight(ctx, types[ti], K, M, 1, 1, wdq);
            fill_rnd(x, (size_t)(K * N), 1.0f);
            res[nth - 1] = fmalloc((size_t)(M * N));
            CHECK_EQ_INT(nn_run(ctx, loom_mul_mat(ctx, w, nn_f32(ctx, x, K, N, 1, 1)), res[nth - 1], (size_t)(M * N)),
                         LOOM_OK);
            loom_ctx_free(ctx);
            free(wdq);
            free(x);
            if (nth < 3) g_rng = saved;
        }
        CHECK(memcmp(res[0], res[1], (size_t)(M * N) * 4) == 0);
        CHECK(memcmp(res[0], res[2], (size_t)(M * N) * 4) == 0);
        for (int i = 0; i < 3; i++) free(res[i]);
    }
}

/* ---------------------------------------------------------------- mul_mat_id */

static void run_mul_mat_id(loom_type t, int64_t B1, int nth) {
    const int64_t K = 64, N = 9, E = 5, S = 4, T = 6;
    loom_ctx *ctx = nn_ctx(nth, false);
    float *wdq = fmalloc((size_t)(K * N * E)), *x = fmalloc((size_t)(K * B1 * T));
    loom_tensor *w = make_weight(ctx, t, K, N, E, 1, wdq);
    fill_rnd(x, (size_t)(K * B1 * T), 1.0f);
    int32_t ids[4 * 6];
    for (int i = 0; i < S * T; i++) ids[i] = (int32_t)(rnd_u() * (double)E);
    ids[0] = ids[1] = 3; /* a repeated expert */
    int64_t ine[2] = {S, T};
    loom_tensor *idt = loom_from_i32(loom_ctx_input(ctx), ids, (size_t)(S * T), 2, ine);
    loom_tensor *y = loom_mul_mat_id(ctx, w, nn_f32(ctx, x, K, B1, T, 1), idt);
    size_t no = (size_t)(N * S * T);
    float *out = fmalloc(no);
    double *ref = dmalloc(no);
    loom_status st = nn_run(ctx, y, out, no);
    CHECK_MSG(st == LOOM_OK, "%s", loom_ctx_error(ctx));
    for (int64_t tt = 0; tt < T; tt++)
        for (int64_t s = 0; s < S; s++)
            for (int64_t i = 0; i < N; i++) {
                int32_t ex = ids[tt * S + s];
                double acc = 0;
                for (int64_t d = 0; d < K; d++)
                    acc += (double)wdq[(ex * N + i) * K + d] * (double)x[(tt * B1 + s % B1) * K + d];
                ref[(tt * S + s) * N + i] = acc;
            }
    double e = nmse(out, ref, no);
    CHECK_MSG(e <= mm_bound(t), "mul_mat_id %s B1=%lld nmse %g", loom_type_name(t), (long long)B1, e);
    loom_ctx_free(ctx);

    /* an out-of-range expert id is a compute error, not a crash */
    ctx = nn_ctx(nth, false);
    w = make_weight(ctx, t, K, N, E, 1, wdq);
    ids[5] = (int32_t)E;
    idt = loom_from_i32(loom_ctx_input(ctx), ids, (size_t)(S * T), 2, ine);
    y = loom_mul_mat_id(ctx, w, nn_f32(ctx, x, K, B1, T, 1), idt);
    CHECK_EQ_INT(nn_run(ctx, y, out, no), LOOM_ERR_RANGE);
    loom_ctx_free(ctx);
    free(wdq);
    free(x);
    free(out);
    free(ref);
}

/* ---------------------------------------------------------------- argsort / top_k */

static void test_argsort(void) {
    const int64_t n = 37, rows = 5;
    float v[37 * 5];
    int32_t vi[37 * 5];
    for (int i = 0; i < n * rows; i++) {
        v[i] = (float)(int)(rnd_u() * 6.0) - 2.5f; /* many ties */
        vi[i] = (int32_t)(rnd_u() * 7.0) - 3;
    }
    v[3] = -INFINITY;
    v[4] = INFINITY;
    for (int is_i32 = 0; is_i32 < 2; is_i32++)
        for (int desc = 0; desc < 2; desc++)
            for (int nth = 1; nth <= 3; nth += 2) {
                loom_ctx *ctx = nn_ctx(nth, false);
                int64_t ne[2] = {n, rows};
                loom_tensor *a = is_i32 ? loom_from_i32(loom_ctx_input(ctx), vi, (size_t)(n * rows), 2, ne)
                                        : loom_from_f32(loom_ctx_input(ctx), v, (size_t)(n * rows), 2, ne);
                int32_t out[37 * 5];
                CHECK_EQ_INT(nn_run(ctx, loom_argsort(ctx, a, desc), (float *)out, (size_t)(n * rows)), LOOM_OK);
                /* stable reference: rank(i) = #{j : v[j] before v[i] or (equal and j < i)} */
                int bad = 0;
                for (int64_t r = 0; r < rows; r++)
                    for (int64_t i = 0; i < n; i++) {
                        double x = is_i32 ? vi[r * n + i] : v[r * n + i];
                        int64_t rank = 0;
                        for (int64_t j = 0; j < n; j++) {
                            double y = is_i32 ? vi[r * n + j] : v[r * n + j];
                            if ((desc ? y > x : y < x) || (y == x && j < i)) rank++;
                        }
                        if (out[r * n + rank] != i) bad++;
                    }
                CHECK_MSG(bad == 0, "argsort i32=%d desc=%d nth=%d: %d misplaced", is_i32, desc, nth, bad);
                loom_ctx_free(ctx);
            }
    /* top_k: indices of the k largest, descending, as a strided view */
    loom_ctx *ctx = nn_ctx(2, false);
    int64_t ne[2] = {n, rows};
    float u[37 * 5];
    for (int i = 0; i < n * rows; i++) u[i] = (float)rnd_u(); /* distinct with overwhelming probability */
    loom_tensor *a = loom_from_f32(loom_ctx_input(ctx), u, (size_t)(n * rows), 2, ne);
    loom_tensor *tk = loom_top_k(ctx, a, 4);
    CHECK_EQ_INT(loom_tensor_ne(tk, 0), 4);
    CHECK_EQ_INT(loom_tensor_ne(tk, 1), rows);
    CHECK(!loom_tensor_is_contiguous(tk));
    CHECK_EQ_INT(loom_tensor_nb(tk, 1), n * 4);
    int32_t o[4 * 5];
    CHECK_EQ_INT(nn_run(ctx, loom_cont(ctx, tk), (float *)o, 4 * rows), LOOM_OK);
    for (int64_t r = 0; r < rows; r++) {
        bool used[37] = {0};
        for (int k = 0; k < 4; k++) {
            int best = -1;
            for (int j = 0; j < n; j++)
                if (!used[j] && (best < 0 || u[r * n + j] > u[r * n + best])) best = j;
            used[best] = true;
            CHECK_EQ_INT(o[r * 4 + k], best);
        }
    }
    loom_ctx_free(ctx);
}

/* top_k_mask against the rank rule: key j of row t is kept iff fewer than k finite
 * candidates v_i = score + mask rank before it (v_i > v_j, or equal with i < j), or the
 * row has at most k candidates; rows t >= T copy the mask */
static void run_top_k_mask(int64_t L, int64_t T, int64_t Tp, int k, bool f16, int nth) {
    float *sc = malloc((size_t)(L * T) * sizeof *sc), *mk = malloc((size_t)(L * Tp) * sizeof *mk);
    float *out = malloc((size_t)(L * Tp) * sizeof *out);
    uint16_t *mh = malloc((size_t)(L * Tp) * sizeof *mh), *oh = malloc((size_t)(L * Tp) * sizeof *oh);
    for (int64_t i = 0; i < L * T; i++) sc[i] = (float)(int)(rnd_u() * 9.0) - 4.0f; /* many ties */
    sc[3] = NAN;
    for (int64_t t = 0; t < Tp; t++)
        for (int64_t j = 0; j < L; j++) {
            const double u = rnd_u();
            mk[t * L + j] = j > L - 1 - 2 * t ? -INFINITY : u < 0.2 ? -INFINITY : u < 0.4 ? -0.5f : 0.0f;
            mh[t * L + j] = loom_fp32_to_fp16(mk[t * L + j]);
        }
    loom_ctx *ctx = nn_ctx(nth, false);
    int64_t ne_s[2] = {L, T}, ne_m[2] = {L, Tp};
    loom_tensor *s = loom_from_f32(loom_ctx_input(ctx), sc, (size_t)(L * T), 2, ne_s);
    loom_tensor *m = f16 ? loom_from_bytes(loom_ctx_input(ctx), LOOM_TYPE_F16, mh, (size_t)(L * Tp) * 2, 2, ne_m)
                         : loom_from_f32(loom_ctx_input(ctx), mk, (size_t)(L * Tp), 2, ne_m);
    loom_tensor *y = loom_top_k_mask(ctx, s, m, k);
    CHECK_EQ_INT(loom_tensor_type(y), f16 ? LOOM_TYPE_F16 : LOOM_TYPE_F32);
    CHECK_EQ_INT(nn_run(ctx, y, f16 ? (float *)oh : out, f16 ? (size_t)(L * Tp / 2) : (size_t)(L * Tp)), LOOM_OK);
    if (f16)
        for (int64_t i = 0; i < L * Tp; i++) out[i] = loom_fp16_to_fp32(oh[i]);
    int bad = 0, kept_rows = 0;
    for (int64_t t = 0; t < Tp; t++) {
        int64_t nf = 0;
        for (int64_t j = 0; j < L && t < T; j++) nf += isfinite(sc[t * L + j] + mk[t * L + j]);
        for (int64_t j = 0; j < L; j++) {
            float want = mk[t * L + j];
            if (t < T && nf > k) {
                const float vj = sc[t * L + j] + mk[t * L + j];
                int64_t rank = 0;
                for (int64_t i = 0; i < L; i++) {
                    const float vi = sc[t * L + i] + mk[t * L + i];
                    rank += isfinite(vi) && (vi > vj || (vi == vj && i < j));
                }
                if (!isfinite(vj) || rank >= k) want = -INFINITY;
            }
            const float got = out[t * L + j];
            bad += !(got == want || (isinf(got) && isinf(want) && got < 0 && want < 0));
        }
        kept_rows += t < T && nf > k;
    }
    CHECK_MSG(bad == 0, "top_k_mask L=%lld T=%lld k=%d f16=%d nth=%d: %d wrong", (long long)L, (long long)T, k, f16, nth,
              bad);
    CHECK_MSG(kept_rows > 0 || k >= L, "top_k_mask L=%lld k=%d: no row selects", (long long)L, k);
    loom_ctx_free(ctx);
    free(sc);
    free(mk);
    free(out);
    free(mh);
    free(oh);
}

static void test_top_k_mask(void) {
    run_top_k_mask(23, 5, 8, 4, false, 1);
    run_top_k_mask(23, 5, 8, 4, true, 3);
    run_top_k_mask(23, 5, 8, 40, false, 2); /* more than the candidates: the mask */
    run_top_k_mask(301, 7, 8, 37, false, 3); /* long rows through the selection */
    run_top_k_mask(300, 3, 4, 1, true, 2);
}

/* ---------------------------------------------------------------- sticky errors */

/* hadamard against the float64 product with H_n[r][c] = (-1)^popcount(r & c) / sqrt(n),
 * block by block; a strided view (rows 2*ne0 apart) when strided; applying it twice
 * gives x back (H is its own inverse). Measured: max |err| / max |y| at most 1.0e-7
 * (n = 2 to 4096), twice 9.8e-8 */
static void run_hadamard(int64_t ne0, int64_t rows, int n, bool strided, int nth) {
    const int64_t stride = strided ? 2 * ne0 : ne0, total = stride * rows;
    float *x = malloc((size_t)total * sizeof *x), *out = malloc((size_t)(ne0 * rows) * sizeof *out);
    float *back = malloc((size_t)(ne0 * rows) * sizeof *back);
    for (int64_t i = 0; i < total; i++) x[i] = (float)(2.0 * rnd_u() - 1.0) * (i % 17 == 3 ? 20.0f : 1.0f);
    loom_ctx *ctx = nn_ctx(nth, false);
    int64_t ne_x[2] = {stride, rows};
    loom_tensor *xt = loom_from_f32(loom_ctx_input(ctx), x, (size_t)total, 2, ne_x);
    if (strided) {
        int64_t args[3] = {ne0, (int64_t)(stride * sizeof(float)), rows};
        xt = loom_view(ctx, xt, 0, 3, args);
    }
    loom_tensor *y = loom_hadamard(ctx, xt, n);
    CHECK_EQ_INT(nn_run(ctx, y, out, (size_t)(ne0 * rows)), LOOM_OK);
    loom_ctx_free(ctx);
    ctx = nn_ctx(nth, false);
    int64_t ne_y[2] = {ne0, rows};
    loom_tensor *yt = loom_from_f32(loom_ctx_input(ctx), out, (size_t)(ne0 * rows), 2, ne_y);
    CHECK_EQ_INT(nn_run(ctx, loom_hadamard(ctx, yt, n), back, (size_t)(ne0 * rows)), LOOM_OK);
    loom_ctx_free(ctx);
    double err = 0, mx = 0, err2 = 0, mx2 = 0;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t b = 0; b < ne0; b += n)
            for (int64_t i = 0; i < n; i++) {
                double want = 0;
                for (int64_t j = 0; j < n; j++) {
                    const double h = __builtin_popcountll((unsigned long long)(i & j)) & 1 ? -1.0 : 1.0;
                    want += h * x[r * stride + b + j];
                }
                want /= sqrt((double)n);
                err = fmax(err, fabs(out[r * ne0 + b + i] - want));
                mx = fmax(mx, fabs(want));
                const double xi = x[r * stride + b + i];
                err2 = fmax(err2, fabs(back[r * ne0 + b + i] - xi));
                mx2 = fmax(mx2, fabs(xi));
            }
    printf("hadamard ne0=%lld n=%d: rel err %.2g, twice %.2g\n", (long long)ne0, n, err / mx, err2 / mx2);
    CHECK_MSG(err <= 3e-7 * mx, "hadamard ne0=%lld n=%d strided=%d nth=%d: max err %.3g of %.3g", (long long)ne0, n,
              strided, nth, err, mx);
    CHECK_MSG(err2 <= 3e-7 * mx2, "hadamard twice ne0=%lld n=%d: max err %.3g of %.3g", (long long)ne0, n, err2, mx2);
    free(x);
    free(out);
    free(back);
}

static void test_hadamard(void) {
    run_hadamard(2, 5, 2, false, 1);
    run_hadamard(12, 7, 4, true, 3);     /* three blocks per row, strided rows */
    run_hadamard(128, 9, 64, false, 2);  /* the V blocks of a 128-wide head */
    run_hadamard(192, 4, 64, true, 3);   /* MLA-like widths: 64-blocks */
    run_hadamard(512, 3, 512, false, 2);
    run_hadamard(4096, 2, 4096, false, 1);
}

static loom_ctx *g_ectx;
static loom_tensor *T4(loom_type t, int64_t a, int64_t b, int64_t c, int64_t d) {
    int64_t ne[4] = {a, b, c, d};
    return loom_zeros(loom_ctx_input(g_ectx), t, 4, ne);
}
#define EXPECT_ERR(expr, st)                                                                          \
    do {                                                                                              \
        g_ectx = nn_ctx(1, false);                                                                    \
        loom_tensor *r_ = (expr);                                                                     \
        CHECK_MSG(r_ != NULL && loom_tensor_is_poison(r_), "%s not poison", #expr);                   \
        CHECK_MSG(loom_ctx_status(g_ectx) == (st), "%s: status %d (%s)", #expr,                      \
                  (int)loom_ctx_status(g_ectx), loom_ctx_error(g_ectx));                              \
        /* ops on the poison stay poison */                                                           \
        CHECK(loom_tensor_is_poison(loom_mul_mat(g_ectx, r_, r_)));                                   \
        loom_ctx_free(g_ectx);                                                                        \
    } while (0)

static void test_errors(void) {
    loom_tensor *n = NULL;
    EXPECT_ERR(loom_mul_mat(g_ectx, T4(LOOM_TYPE_F32, 8, 3, 1, 1), T4(LOOM_TYPE_F32, 9, 2, 1, 1)), LOOM_ERR_SHAPE);
    EXPECT_ERR(loom_mul_mat(g_ectx, T4(LOOM_TYPE_F32, 8, 3, 1, 1), T4(LOOM_TYPE_F16, 8, 2, 1, 1)), LOOM_ERR_TYPE);
    EXPECT_ERR(loom_mul_mat(g_ectx, T4(LOOM_TYPE_I32, 8, 3, 1, 1), T4(LOOM_TYPE_F32, 8, 2, 1, 1)), LOOM_ERR_TYPE);
    EXPECT_ERR(loom_mul_mat(g_ectx, T4(LOOM_TYPE_F32, 8, 3, 2, 1), T4(LOOM_TYPE_F32, 8, 2, 3, 1)), LOOM_ERR_SHAPE);
    EXPECT_ERR(loom_mul_mat(g_ectx, loom_transpose(g_ectx, T4(LOOM_TYPE_F32, 8, 8, 1, 1)),
                            T4(LOOM_TYPE_F32, 8, 2, 1, 1)),
               LOOM_ERR_SHAPE);
    EXPECT_ERR(loom_mul_mat(g_ectx, n, T4(LOOM_TYPE_F32, 8, 2, 1, 1)), LOOM_ERR_INVALID_ARG);
    EXPECT_ERR(loom_mul_mat_id(g_ectx, T4(LOOM_TYPE_F32, 8, 3, 4, 1), T4(LOOM_TYPE_F32, 8, 2, 5, 1),
                               T4(LOOM_TYPE_I32, 4, 6, 1, 1)),
               LOOM_ERR_SHAPE); /* ids.ne1 != b.ne2 */
    EXPECT_ERR(loom_mul_mat_id(g_ectx, T4(LOOM_TYPE_F32, 8, 3, 4, 1), T4(LOOM_TYPE_F32, 8, 3, 5, 1),
                               T4(LOOM_TYPE_I32, 4, 5, 1, 1)),
               LOOM_ERR_SHAPE); /* S % B1 */
    EXPECT_ERR(loom_mul_mat_id(g_ectx, T4(LOOM_TYPE_F32, 8, 3, 4, 1), T4(LOOM_TYPE_F32, 8, 1, 5, 1),
                               T4(LOOM_TYPE_F32, 4, 5, 1, 1)),
               LOOM_ERR_TYPE);
    EXPECT_ERR(loom_argsort(g_ectx, T4(LOOM_TYPE_F16, 8, 3, 1, 1), false), LOOM_ERR_TYPE);
    EXPECT_ERR(loom_top_k(g_ectx, T4(LOOM_TYPE_F32, 8, 3, 1, 1), 9), LOOM_ERR_SHAPE);
    EXPECT_ERR(loom_top_k(g_ectx, T4(LOOM_TYPE_F32, 8, 3, 1, 1), 0), LOOM_ERR_SHAPE);
    EXPECT_ERR(loom_hadamard(g_ectx, T4(LOOM_TYPE_F16, 8, 3, 1, 1), 8), LOOM_ERR_TYPE);
    EXPECT_ERR(loom_hadamard(g_ectx, T4(LOOM_TYPE_F32, 12, 3, 1, 1), 8), LOOM_ERR_SHAPE); /* 8 does not divide 12 */
    EXPECT_ERR(loom_hadamard(g_ectx, T4(LOOM_TYPE_F32, 12, 3, 1, 1), 6), LOOM_ERR_SHAPE); /* not a power of two */
    EXPECT_ERR(loom_hadamard(g_ectx, T4(LOOM_TYPE_F32, 8, 3, 1, 1), 1), LOOM_ERR_SHAPE);
    EXPECT_ERR(loom_hadamard(g_ectx, T4(LOOM_TYPE_F32, 8192, 1, 1, 1), 8192), LOOM_ERR_SHAPE);
    EXPECT_ERR(loom_hadamard(g_ectx, loom_permute(g_ectx, T4(LOOM_TYPE_F32, 8, 8, 1, 1), 1, 0, 2, 3), 8), LOOM_ERR_SHAPE);
    EXPECT_ERR(loom_top_k_mask(g_ectx, T4(LOOM_TYPE_F32, 8, 3, 1, 1), T4(LOOM_TYPE_F16, 8, 4, 1, 1), 0), LOOM_ERR_SHAPE);
    EXPECT_ERR(loom_top_k_mask(g_ectx, T4(LOOM_TYPE_F32, 8, 5, 1, 1), T4(LOOM_TYPE_F16, 8, 4, 1, 1), 2), LOOM_ERR_SHAPE);
    EXPECT_ERR(loom_top_k_mask(g_ectx, T4(LOOM_TYPE_F32, 9, 3, 1, 1), T4(LOOM_TYPE_F32, 8, 4, 1, 1), 2), LOOM_ERR_SHAPE);
    EXPECT_ERR(loom_top_k_mask(g_ectx, T4(LOOM_TYPE_F16, 8, 3, 1, 1), T4(LOOM_TYPE_F16, 8, 4, 1, 1), 2), LOOM_ERR_TYPE);
    EXPECT_ERR(loom_top_k_mask(g_ectx, T4(LOOM_TYPE_F32, 8, 3, 1, 1), T4(LOOM_TYPE_I32, 8, 4, 1, 1), 2), LOOM_ERR_TYPE);
    EXPECT_ERR(loom_rope(g_ectx, T4(LOOM_TYPE_F32, 8, 2, 3, 1), T4(LOOM_TYPE_I32, 3, 1, 1, 1), 5, 1e4f, 1, NULL),
               LOOM_ERR_SHAPE); /* odd n_dims */
    EXPECT_ERR(loom_rope(g_ectx, T4(LOOM_TYPE_F32, 8, 2, 3, 1), T4(LOOM_TYPE_I32, 3, 1, 1, 1), 10, 1e4f, 1, NULL),
               LOOM_ERR_SHAPE); /* n_dims > ne0 */
    EXPECT_ERR(loom_rope(g_ectx, T4(LOOM_TYPE_F32, 8, 2, 3, 1), T4(LOOM_TYPE_I32, 4, 1, 1, 1), 8, 1e4f, 1, NULL),
               LOOM_ERR_SHAPE); /* positions length */
    EXPECT_ERR(loom_rope(g_ectx, T4(LOOM_TYPE_F32, 8, 2, 3, 1), T4(LOOM_TYPE_F32, 3, 1, 1, 1), 8, 1e4f, 1, NULL),
               LOOM_ERR_TYPE);
    EXPECT_ERR(loom_rope(g_ectx, T4(LOOM_TYPE_Q8_0, 32, 2, 3, 1), T4(LOOM_TYPE_I32, 3, 1, 1, 1), 8, 1e4f, 1, NULL),
               LOOM_ERR_TYPE);
    EXPECT_ERR(loom_im2col(g_ectx, T4(LOOM_TYPE_F32, 3, 3, 2, 4), T4(LOOM_TYPE_F32, 8, 8, 3, 1), 1, 1, 0, 0, 1, 1,
                           LOOM_TYPE_F32),
               LOOM_ERR_SHAPE); /* IC mismatch */
    EXPECT_ERR(loom_conv2d(g_ectx, T4(LOOM_TYPE_F32, 9, 3, 2, 4), T4(LOOM_TYPE_F32, 8, 8, 2, 1), 1, 1, 0, 0, 1, 1),
               LOOM_ERR_SHAPE); /* kernel wider than input */
    EXPECT_ERR(loom_conv2d(g_ectx, T4(LOOM_TYPE_F32, 3, 3, 2, 4), T4(LOOM_TYPE_F32, 8, 8, 2, 1), 0, 1, 0, 0, 1, 1),
               LOOM_ERR_SHAPE); /* stride 0 */
    EXPECT_ERR(loom_avg_pool2d(g_ectx, T4(LOOM_TYPE_F32, 4, 4, 2, 1), 0, 1, 0), LOOM_ERR_INVALID_ARG);
    EXPECT_ERR(loom_avg_pool2d(g_ectx, T4(LOOM_TYPE_F32, 4, 4, 2, 1), 6, 1, 0), LOOM_ERR_SHAPE);
    EXPECT_ERR(loom_flash_attn(g_ectx, T4(LOOM_TYPE_F32, 16, 2, 3, 1), T4(LOOM_TYPE_F16, 16, 10, 2, 1),
                               T4(LOOM_TYPE_F16, 16, 10, 2, 1), NULL, 1.0f),
               LOOM_ERR_SHAPE); /* H=3 % Hkv=2 */
    EXPECT_ERR(loom_flash_attn(g_ectx, T4(LOOM_TYPE_F32, 16, 2, 4, 1), T4(LOOM_TYPE_F16, 16, 10, 2, 1),
                               T4(LOOM_TYPE_F16, 16, 10, 2, 1), T4(LOOM_TYPE_F16, 10, 1, 1, 1), 1.0f),
               LOOM_ERR_SHAPE); /* mask rows < T */
    EXPECT_ERR(loom_flash_attn(g_ectx, T4(LOOM_TYPE_F32, 16, 2, 4, 1), T4(LOOM_TYPE_F16, 16, 10, 2, 1),
                               T4(LOOM_TYPE_F16, 16, 11, 2, 1), NULL, 1.0f),
               LOOM_ERR_SHAPE); /* v length */
    {
        /* v TRANSPOSED ([12, 16, 2] cache, first 10 cells, seen as [16, 10, 2]) is accepted */
        g_ectx = nn_ctx(1, false);
        loom_tensor *w = T4(LOOM_TYPE_F16, 12, 16, 2, 1);
        int64_t wa[5] = {10, (int64_t)loom_tensor_nb(w, 1), 16, (int64_t)loom_tensor_nb(w, 2), 2};
        loom_tensor *ok = loom_flash_attn(g_ectx, T4(LOOM_TYPE_F32, 16, 2, 4, 1), T4(LOOM_TYPE_F16, 16, 10, 2, 1),
                                          loom_transpose(g_ectx, loom_view(g_ectx, w, 0, 5, wa)), NULL, 1.0f);
        CHECK(ok != NULL && !loom_tensor_is_poison(ok) && loom_tensor_ne(ok, 0) == 16 && loom_tensor_ne(ok, 1) == 4);
        /* strided elements that are not a transpose: every other F16 of [2, 16, 10, 2]
         * as [16, 10, 2] (nb0 = 4 bytes, nb1 = 64) is rejected */
        loom_tensor *x = T4(LOOM_TYPE_F16, 2, 16, 10, 2);
        int64_t xa[7] = {1,  (int64_t)loom_tensor_nb(x, 1), 16, (int64_t)loom_tensor_nb(x, 2), 10,
                         (int64_t)loom_tensor_nb(x, 3), 2};
        loom_tensor *vs = loom_permute(g_ectx, loom_view(g_ectx, x, 0, 7, xa), 3, 0, 1, 2);
        CHECK(vs && loom_tensor_ne(vs, 0) == 16 && loom_tensor_nb(vs, 0) == 4);
        loom_tensor *bad = loom_flash_attn(g_ectx, T4(LOOM_TYPE_F32, 16, 2, 4, 1), T4(LOOM_TYPE_F16, 16, 10, 2, 1), vs,
                                           NULL, 1.0f);
        CHECK(bad && loom_tensor_is_poison(bad) && loom_ctx_status(g_ectx) == LOOM_ERR_SHAPE);
        loom_ctx_free(g_ectx);
    }
    EXPECT_ERR(loom_sdpa(g_ectx, T4(LOOM_TYPE_F32, 16, 4, 2, 1), T4(LOOM_TYPE_F16, 16, 2, 10, 1),
                         T4(LOOM_TYPE_F16, 16, 2, 10, 1), NULL, 1.0f),
               LOOM_ERR_SHAPE); /* non-flash needs PermutedV [L, Dv, Hkv] */
    EXPECT_ERR(loom_sdpa(g_ectx, T4(LOOM_TYPE_F32, 16, 4, 2, 1), T4(LOOM_TYPE_F16, 15, 2, 10, 1),
                         T4(LOOM_TYPE_F16, 10, 16, 2, 1), NULL, 1.0f),
               LOOM_ERR_SHAPE); /* Dk mismatch */
}

int main(void) {
    test_mul_mat_types();
    test_mul_mat_strided();
    test_mul_mat_threads();
    run_mul_mat_id(LOOM_TYPE_F32, 1, 2);
    run_mul_mat_id(LOOM_TYPE_Q8_0, 4, 3);
    run_mul_mat_id(LOOM_TYPE_Q4_0, 2, 1);
    test_argsort();
    test_top_k_mask();
    test_hadamard();
    test_errors();
    return test_finish("test_cpu_ops_nn");
}
