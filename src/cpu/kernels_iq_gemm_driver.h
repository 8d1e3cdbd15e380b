/*
 * kernels_iq_gemm_driver.h (internal) - the loops shared by the IQ / TQ prompt tiles
 * (kernels_iq_gemm_avx2.c, kernels_iq_gemm_avx512vnni.c and the files that include them
 * with other instruction sets): per 64-column chunk and group of up to IQG_R weight rows,
 * the including file's IQG_ROWS(R, unit, ...) computes the outputs; this picks the
 * instantiation for R rows and TQ (unit scales) or not, and is the gemm entry
 * IQG_FN(loom_gemm_iq) (kernels.h gemm contract; declines other types, fewer than
 * IQG_MIN_COLS columns and k not a multiple of 256). Include once, after IQG_ROWS.
 */
static void iqg_rows_any(int R, bool unit, loom_iqg_prep_fn prep, size_t bb, float post, int64_t nb,
                         const uint8_t *row, size_t ws, const void *a, size_t as, float *c, size_t ldc, int64_t i,
                         int64_t jc, int64_t jn) {
#define ROWS(RR, U) IQG_ROWS(RR, U, prep, bb, post, nb, row, ws, a, as, c, ldc, i, jc, jn)
    if (unit) {
        switch (R) {
        case 4: ROWS(4, true); break;
        case 3: ROWS(3, true); break;
        case 2: ROWS(2, true); break;
        default: ROWS(1, true); break;
        }
    } else {
        switch (R) {
        case 4: ROWS(4, false); break;
        case 3: ROWS(3, false); break;
        case 2: ROWS(2, false); break;
        default: ROWS(1, false); break;
        }
    }
#undef ROWS
}

bool IQG_FN(loom_gemm_iq)(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                          size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    loom_iqg_prep_fn prep;
    size_t bb;
    float post;
    if (!loom_iqg_type(wt, &prep, &bb, &post) || j1 - j0 < IQG_MIN_COLS || k % QK_K != 0) return false;
    const bool unit = wt == LOOM_TYPE_TQ1_0 || wt == LOOM_TYPE_TQ2_0; /* every scale 1 */
    const int64_t nb = k / QK_K;
    for (int64_t jc = j0; jc < j1; jc += IQG_CHUNK) {
        const int64_t jn = j1 - jc < IQG_CHUNK ? j1 - jc : IQG_CHUNK;
        for (int64_t i = i0; i < i1; i += IQG_R) {
            const int R = i1 - i < IQG_R ? (int)(i1 - i) : IQG_R;
            iqg_rows_any(R, unit, prep, bb, post, nb, (const uint8_t *)w + (size_t)i * ws, ws, a, as, c, ldc, i, jc, jn);
        }
    }
    return true;
}
