/*
 * vk_ops.c - which nodes the Vulkan device runs (loom_vk_supports) and how each is
 * recorded (vk_record_node): kernel choice, bindings, push constants, workgroups.
 *
 * Kernels (src/backend/vulkan/shaders): MUL_MAT (matrix x vector for <= 8 columns,
 * 64 x 64 tiles otherwise; float path = dequantize + F32 activations, int8-dot path =
 * activations quantized to 8 bits first, chosen when the device reports accelerated
 * integer dot products or LOOM_VK_FORCE_INT8), MUL_MAT_ID, GET_ROWS, RMS_NORM / NORM,
 * ROPE, SOFT_MAX, FLASH_ATTN (+ split-K combine), ADD/SUB/MUL/DIV, the unary ops,
 * SUM_ROWS/MEAN, HADAMARD, DUP/CPY (plain types, F32 -> Q8_0/Q4_0, byte copies). Everything
 * else runs on the CPU (the scheduler copies at the boundary).
 *
 * Operands larger than one binding window: a MUL_MAT weight is split into row ranges
 * (one dispatch each), a MUL_MAT_ID expert tensor into expert ranges and a GET_ROWS
 * table into row ranges (each dispatch handles the ids that fall in its range).
 */
#include "backend/vulkan/vk_internal.h"

#include <math.h>
#include <string.h>

#define MMV_MAX_N 8
#define FA_DMAX 512
#define FA_TILE 128

enum { U_NEG, U_SCALE, U_SQR, U_SQRT, U_SIN, U_COS, U_TANH, U_SIGMOID, U_SILU, U_RELU, U_GELU, U_QGELU, U_CLAMP };

/* ---------------------------------------------------------------- shader tables */

enum { FAM_MMV, FAM_MM, FAM_GETROWS, FAM_MMID, FAM_MMVQ, FAM_MMQ, FAM_MMVQD, FAM_MMQD };

#define SHADERS_FOR(FAM)                                                                                   \
    switch (t) {                                                                                           \
    case LOOM_TYPE_Q4_0: return VKS_##FAM##_Q4_0;                                                          \
    case LOOM_TYPE_Q4_1: return VKS_##FAM##_Q4_1;                                                          \
    case LOOM_TYPE_Q5_0: return VKS_##FAM##_Q5_0;                                                          \
    case LOOM_TYPE_Q5_1: return VKS_##FAM##_Q5_1;                                                          \
    case LOOM_TYPE_Q8_0: return VKS_##FAM##_Q8_0;                                                          \
    case LOOM_TYPE_Q2_K: return VKS_##FAM##_Q2_K;                                                          \
    case LOOM_TYPE_Q3_K: return VKS_##FAM##_Q3_K;                                                          \
    case LOOM_TYPE_Q4_K: return VKS_##FAM##_Q4_K;                                                          \
    case LOOM_TYPE_Q5_K: return VKS_##FAM##_Q5_K;                                                          \
    case LOOM_TYPE_Q6_K: return VKS_##FAM##_Q6_K;                                                          \
    case LOOM_TYPE_MXFP4: return VKS_##FAM##_MXFP4;                                                        \
    default: break;                                                                                        \
    }

static int shader_for(int fam, loom_type t) {
    switch (fam) {
    case FAM_MMV:
        if (t == LOOM_TYPE_F32) return VKS_MMV_F32;
        if (t == LOOM_TYPE_F16) return VKS_MMV_F16;
        if (t == LOOM_TYPE_BF16) return VKS_MMV_BF16;
        SHADERS_FOR(MMV)
        break;
    case FAM_MM:
        if (t == LOOM_TYPE_F32) return VKS_MM_F32;
        if (t == LOOM_TYPE_F16) return VKS_MM_F16;
        if (t == LOOM_TYPE_BF16) return VKS_MM_BF16;
        SHADERS_FOR(MM)
        break;
    case FAM_GETROWS:
        if (t == LOOM_TYPE_F32) return VKS_GET_ROWS_F32;
        if (t == LOOM_TYPE_F16) return VKS_GET_ROWS_F16;
        if (t == LOOM_TYPE_BF16) return VKS_GET_ROWS_BF16;
        if (t == LOOM_TYPE_I32) return VKS_GET_ROWS_I32;
        SHADERS_FOR(GET_ROWS)
        break;
    case FAM_MMID:
        if (t == LOOM_TYPE_F32) return VKS_MMID_F32;
        if (t == LOOM_TYPE_F16) return VKS_MMID_F16;
        if (t == LOOM_TYPE_BF16) return VKS_MMID_BF16;
        SHADERS_FOR(MMID)
        break;
    case FAM_MMVQ: SHADERS_FOR(MMVQ) break;
    case FAM_MMQ: SHADERS_FOR(MMQ) break;
    case FAM_MMVQD: SHADERS_FOR(MMVQD) break;
    case FAM_MMQD: SHADERS_FOR(MMQD) break;
    }
    return -1;
}

static bool is_plain_float(loom_type t) { return t == LOOM_TYPE_F32 || t == LOOM_TYPE_F16 || t == LOOM_TYPE_BF16; }
static bool is_plain(loom_type t) { return is_plain_float(t) || t == LOOM_TYPE_I32; }

/* ---------------------------------------------------------------- helpers */

static size_t span(const loom_tensor *t) { return loom_tensor_span(t); }

static bool fits(const loom_vk_dev *d, const loom_tensor *t) { return span(t) <= vk_window_span(d); }

static bool u32_ok(uint64_t v) { return v <= UINT32_MAX; }

static bool strides_ok(const loom_tensor *t) {
    for (int i = 0; i < 4; i++)
        if (!u32_ok(t->nb[i]) || !u32_ok((uint64_t)t->ne[i])) return false;
    return true;
}

static void set_bind(vk_disp *x, int i, const loom_tensor *t, bool w) {
    x->p[i] = t->data;
    x->n[i] = span(t);
    x->w[i] = w;
}

static float f32_of(const loom_tensor *t, int i) { return loom_get_op_param_f32(t, i); }
static uint32_t fbits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* ---------------------------------------------------------------- MUL_MAT */

static bool use_int8(const loom_vk_dev *d, const loom_tensor *a) {
    const int64_t bs = loom_blck_size(a->type);
    return d->int8_path && loom_type_is_quantized(a->type) && shader_for(FAM_MMVQ, a->type) >= 0 &&
           a->ne[0] % (bs > 32 ? bs : 32) == 0;
}

#define Q8_BLOCK 44 /* quantize_q8.comp: float d, so0, so1; int8 q[32] */

static size_t q8_bytes(const loom_tensor *a, const loom_tensor *b) {
    return (size_t)(a->ne[0] / 32) * Q8_BLOCK * (size_t)loom_nrows(b);
}

static bool mm_supported(const loom_vk_dev *d, const loom_tensor *t) {
    const loom_tensor *a = t->src[0], *b = t->src[1];
    if (shader_for(FAM_MMV, a->type) < 0 || b->type != LOOM_TYPE_F32 || (a->flags & LOOM_TF_REPACKED)) return false;
    if (!loom_tensor_is_contiguous_rows(a) || b->nb[0] != 4) return false;
    if (!strides_ok(a) || !strides_ok(b) || !strides_ok(t) || !fits(d, b) || !fits(d, t)) return false;
    if (b->ne[2] * b->ne[3] > 65535 || t->ne[1] > 65535 * 64) return false;
    if (!fits(d, a)) { /* split into row ranges of a 2-D weight */
        if (a->ne[2] * a->ne[3] != 1 || a->nb[1] > vk_window_span(d)) return false;
    }
    if (use_int8(d, a) && q8_bytes(a, b) > vk_window_span(d)) return false;
    return true;
}

static bool rec_mul_mat(vk_rec *r, loom_tensor *t) {
    loom_vk_dev *d = r->d;
    const loom_tensor *a = t->src[0], *b = t->src[1];
    const int64_t K = a->ne[0], M = a->ne[1], N = b->ne[1];
    const bool i8 = use_int8(d, a);
    const bool vec = N <= MMV_MAX_N;
    const void *bq = NULL;
    size_t q8_row = (size_t)(K / 32) * Q8_BLOCK;
    /* the CPU's activation format for the type: Q8_K (256-blocks) for K-quants, Q8_1 for
     * Q4_1/Q5_1, else Q8_0 */
    const int q8_mode = loom_type_get((uint32_t)a->type)->block_size == 256             ? 2
                        : (a->type == LOOM_TYPE_Q4_1 || a->type == LOOM_TYPE_Q5_1) ? 1
                                                                                    : 0;
    if (i8 && r->q8_src == b && r->q8_mode == q8_mode) {
        bq = r->work; /* a sibling quantized this activation already */
    } else if (i8) { /* activations -> 8-bit blocks in the scratch */
        size_t need = q8_bytes(a, b);
        if (!r->work || r->work_size < need)
            return vk_fail(r, LOOM_ERR_INTERNAL, "device %s: work area too small for the int8 path", d->name);
        vk_disp q = {.shader = VKS_QUANTIZE_Q8};
        set_bind(&q, 0, b, false);
        q.p[4] = r->work;
        q.n[4] = need;
        q.w[4] = true;
        if (!vk_bind(r, &q)) return false;
        uint64_t nblk = (uint64_t)(K / 32) * (uint64_t)loom_nrows(b);
        uint32_t pc[] = {(uint32_t)K, (uint32_t)N, (uint32_t)b->ne[2], (uint32_t)nblk, (uint32_t)b->nb[1],
                         (uint32_t)b->nb[2], (uint32_t)b->nb[3], q.off[0], q.off[4], (uint32_t)q8_mode};
        memcpy(q.pc, pc, sizeof pc);
        vk_groups_1d(nblk, 256, q.groups);
        if (!vk_dispatch(r, &q)) return false;
        bq = r->work;
        r->q8_src = b;
        r->q8_mode = q8_mode;
    }
    const int fam = i8 ? (vec ? (d->dot4 ? FAM_MMVQD : FAM_MMVQ) : (d->dot4 ? FAM_MMQD : FAM_MMQ))
                       : (vec ? FAM_MMV : FAM_MM);
    const int shader = shader_for(fam, a->type);
    /* rows of a per dispatch: all, or as many as one window holds */
    int64_t per = M;
    if (!fits(d, a)) {
        per = (int64_t)(vk_window_span(d) / a->nb[1]);
        if (per > 64) per = per / 64 * 64;
        if (per < 1) return vk_fail(r, LOOM_ERR_UNSUPPORTED, "device %s: a weight row exceeds the binding range", d->name);
    }
    for (int64_t row0 = 0; row0 < M; row0 += per) {
        const int64_t rows = M - row0 < per ? M - row0 : per;
        vk_disp x = {.shader = shader};
        x.p[0] = (const char *)a->data + (size_t)row0 * a->nb[1];
        x.n[0] = per == M ? span(a) : (size_t)(rows - 1) * a->nb[1] + loom_row_size(a);
        if (i8) {
            x.p[1] = bq;
            x.n[1] = q8_bytes(a, b);
        } else {
            set_bind(&x, 1, b, false);
        }
        set_bind(&x, 4, t, true);
        if (!vk_bind(r, &x)) return false;
        uint32_t pc[28] = {(uint32_t)K,
                           (uint32_t)M,
                           (uint32_t)N,
                           (uint32_t)b->ne[2],
                           (uint32_t)(b->ne[2] / a->ne[2]),
                           (uint32_t)(b->ne[3] / a->ne[3]),
                           (uint32_t)a->nb[1],
                           (uint32_t)a->nb[2],
                           (uint32_t)a->nb[3],
                           (uint32_t)b->nb[1],
                           (uint32_t)b->nb[2],
                           (uint32_t)b->nb[3],
                           (uint32_t)t->nb[1],
                           (uint32_t)t->nb[2],
                           (uint32_t)t->nb[3],
                           x.off[0],
                           x.off[1],
                           x.off[4],
                           (uint32_t)row0,
                           (uint32_t)rows};
        pc[26] = (uint32_t)q8_row;
        memcpy(x.pc, pc, sizeof pc);
        const uint32_t slices = (uint32_t)(b->ne[2] * b->ne[3]);
        if (vec) { /* 8 rows per workgroup (mul_mat_vec*.comp) */
            vk_groups_1d((uint64_t)rows, 8, x.groups);
        } else {
            x.groups[0] = (uint32_t)((rows + 63) / 64);
            x.groups[1] = (uint32_t)((N + 63) / 64);
        }
        x.groups[2] = slices;
        if (!vk_dispatch(r, &x)) return false;
    }
    return true;
}

/* ---------------------------------------------------------------- MUL_MAT_ID */

static bool mmid_supported(const loom_vk_dev *d, const loom_tensor *t) {
    const loom_tensor *a = t->src[0], *b = t->src[1], *ids = t->src[2];
    if (shader_for(FAM_MMID, a->type) < 0 || b->type != LOOM_TYPE_F32 || ids->type != LOOM_TYPE_I32) return false;
    if (!loom_tensor_is_contiguous_rows(a) || b->nb[0] != 4 || ids->nb[0] != 4) return false;
    if (!strides_ok(a) || !strides_ok(b) || !strides_ok(t) || !strides_ok(ids)) return false;
    if (!fits(d, b) || !fits(d, t) || !fits(d, ids) || ids->ne[0] * ids->ne[1] > 65535) return false;
    if (!fits(d, a) && a->nb[2] > vk_window_span(d)) return false;
    return true;
}

static bool rec_mul_mat_id(vk_rec *r, loom_tensor *t) {
    loom_vk_dev *d = r->d;
    const loom_tensor *a = t->src[0], *b = t->src[1], *ids = t->src[2];
    const int64_t E = a->ne[2];
    int64_t per = E;
    if (!fits(d, a)) per = (int64_t)(vk_window_span(d) / a->nb[2]);
    for (int64_t e0 = 0; e0 < E; e0 += per) {
        const int64_t ne = E - e0 < per ? E - e0 : per;
        vk_disp x = {.shader = shader_for(FAM_MMID, a->type), .flag = true};
        x.p[0] = (const char *)a->data + (size_t)e0 * a->nb[2];
        x.n[0] = per == E ? span(a) : (size_t)ne * a->nb[2];
        set_bind(&x, 1, b, false);
        set_bind(&x, 2, ids, false);
        set_bind(&x, 4, t, true);
        if (!vk_bind(r, &x)) return false;
        uint32_t pc[28] = {(uint32_t)a->ne[0], (uint32_t)a->ne[1], 0, 1, 1, 1, (uint32_t)a->nb[1], (uint32_t)a->nb[2], 0,
                           (uint32_t)b->nb[1], (uint32_t)b->nb[2], 0, (uint32_t)t->nb[1], (uint32_t)t->nb[2], 0,
                           x.off[0], x.off[1], x.off[4], (uint32_t)e0, (uint32_t)ne, x.off[2], (uint32_t)ids->nb[0],
                           (uint32_t)ids->nb[1], (uint32_t)E, (uint32_t)b->ne[1], (uint32_t)ids->ne[0], 0, 0};
        memcpy(x.pc, pc, sizeof pc);
        vk_groups_1d((uint64_t)a->ne[1], 8, x.groups);
        x.groups[2] = (uint32_t)(ids->ne[0] * ids->ne[1]);
        if (!vk_dispatch(r, &x)) return false;
    }
    return true;
}

/* ---------------------------------------------------------------- GET_ROWS */

static bool get_rows_supported(const loom_vk_dev *d, const loom_tensor *t) {
    const loom_tensor *a = t->src[0], *ids = t->src[1];
    if (shader_for(FAM_GETROWS, a->type) < 0 || ids->type != LOOM_TYPE_I32) return false;
    if (!loom_tensor_is_contiguous_rows(a) || !strides_ok(a) || !strides_ok(ids) || !strides_ok(t)) return false;
    if (!fits(d, ids) || !fits(d, t) || t->nb[0] != 4) return false;
    if (!loom_type_is_quantized(a->type) ? false : a->ne[0] % 16 != 0) return false;
    if (!fits(d, a) && (a->ne[2] * a->ne[3] != 1 || a->nb[1] > vk_window_span(d))) return false;
    return loom_nrows(t) <= (int64_t)65535 * 65535;
}

static bool rec_get_rows(vk_rec *r, loom_tensor *t) {
    loom_vk_dev *d = r->d;
    const loom_tensor *a = t->src[0], *ids = t->src[1];
    const int64_t R = a->ne[1];
    int64_t per = R;
    if (!fits(d, a)) per = (int64_t)(vk_window_span(d) / a->nb[1]);
    for (int64_t r0 = 0; r0 < R; r0 += per) {
        const int64_t nr = R - r0 < per ? R - r0 : per;
        vk_disp x = {.shader = shader_for(FAM_GETROWS, a->type), .flag = true};
        x.p[0] = (const char *)a->data + (size_t)r0 * a->nb[1];
        x.n[0] = per == R ? span(a) : (size_t)(nr - 1) * a->nb[1] + loom_row_size(a);
        set_bind(&x, 1, ids, false);
        set_bind(&x, 4, t, true);
        if (!vk_bind(r, &x)) return false;
        const int64_t nrows = loom_nrows(t);
        uint32_t pc[20] = {(uint32_t)t->ne[0], (uint32_t)t->ne[1], (uint32_t)t->ne[2], (uint32_t)R,
                           (uint32_t)a->nb[1], (uint32_t)a->nb[2], (uint32_t)a->nb[3], (uint32_t)ids->nb[0],
                           (uint32_t)ids->nb[1], (uint32_t)ids->nb[2], (uint32_t)t->nb[1], (uint32_t)t->nb[2],
                           (uint32_t)t->nb[3], x.off[0], x.off[1], x.off[4],
                           (uint32_t)r0, (uint32_t)(r0 + nr), (uint32_t)nrows, 0};
        memcpy(x.pc, pc, sizeof pc);
        vk_groups_1d((uint64_t)nrows, 1, x.groups);
        if (!vk_dispatch(r, &x)) return false;
    }
    return true;
}

/* ---------------------------------------------------------------- element-wise */

static void ne_nb(uint32_t *o, const loom_tensor *t, bool nb) {
    for (int i = 0; i < 4; i++) o[i] = nb ? (uint32_t)t->nb[i] : (uint32_t)t->ne[i];
}

static bool rec_binary(vk_rec *r, loom_tensor *t) {
    const loom_tensor *a = t->src[0], *b = t->src[1];
    vk_disp x = {.shader = VKS_BINARY};
    set_bind(&x, 0, a, false);
    set_bind(&x, 1, b, false);
    set_bind(&x, 4, t, true);
    if (!vk_bind(r, &x)) return false;
    uint32_t *pc = x.pc;
    ne_nb(pc + 0, t, false);
    ne_nb(pc + 4, a, true);
    ne_nb(pc + 8, b, true);
    ne_nb(pc + 12, b, false);
    ne_nb(pc + 16, t, true);
    pc[20] = x.off[0];
    pc[21] = x.off[1];
    pc[22] = x.off[4];
    pc[23] = t->op == LOOM_OP_ADD ? 0u : t->op == LOOM_OP_SUB ? 1u : t->op == LOOM_OP_MUL ? 2u : 3u;
    pc[24] = (uint32_t)a->type;
    pc[25] = (uint32_t)b->type;
    pc[26] = (uint32_t)t->type;
    pc[27] = (uint32_t)loom_nelements(t);
    vk_groups_1d((uint64_t)loom_nelements(t), 256, x.groups);
    return vk_dispatch(r, &x);
}

static int unary_code(loom_op op) {
    switch (op) {
    case LOOM_OP_NEG: return U_NEG;
    case LOOM_OP_SCALE: return U_SCALE;
    case LOOM_OP_SQR: return U_SQR;
    case LOOM_OP_SQRT: return U_SQRT;
    case LOOM_OP_SIN: return U_SIN;
    case LOOM_OP_COS: return U_COS;
    case LOOM_OP_TANH: return U_TANH;
    case LOOM_OP_SIGMOID: return U_SIGMOID;
    case LOOM_OP_SILU: return U_SILU;
    case LOOM_OP_RELU: return U_RELU;
    case LOOM_OP_GELU: return U_GELU;
    case LOOM_OP_QUICK_GELU: return U_QGELU;
    case LOOM_OP_CLAMP: return U_CLAMP;
    default: return -1;
    }
}

static bool rec_unary(vk_rec *r, loom_tensor *t) {
    const loom_tensor *a = t->src[0], *g = t->op == LOOM_OP_SILU ? t->src[1] : NULL;
    vk_disp x = {.shader = VKS_UNARY};
    set_bind(&x, 0, a, false);
    if (g) set_bind(&x, 1, g, false);
    set_bind(&x, 4, t, true);
    if (!vk_bind(r, &x)) return false;
    uint32_t *pc = x.pc;
    ne_nb(pc + 0, t, false);
    ne_nb(pc + 4, a, true);
    ne_nb(pc + 8, t, true);
    if (g) ne_nb(pc + 12, g, true);
    pc[16] = x.off[0];
    pc[17] = x.off[4];
    pc[18] = x.off[1];
    pc[19] = (uint32_t)unary_code(t->op);
    pc[20] = (uint32_t)a->type;
    pc[21] = (uint32_t)t->type;
    pc[22] = g ? 1u : 0u;
    pc[23] = (uint32_t)loom_nelements(t);
    pc[24] = fbits(f32_of(t, 0));
    pc[25] = fbits(f32_of(t, 1));
    vk_groups_1d((uint64_t)loom_nelements(t), 256, x.groups);
    return vk_dispatch(r, &x);
}

static bool rec_copy(vk_rec *r, loom_tensor *t) {
    const loom_tensor *a = t->src[0];
    const int64_t n = loom_nelements(t);
    if (a->type == t->type && loom_tensor_is_contiguous(a) && loom_tensor_is_contiguous(t)) {
        const size_t bytes = loom_tensor_nbytes(t);
        vk_disp x = {.shader = VKS_COPY_BYTES};
        x.p[0] = a->data;
        x.n[0] = bytes;
        x.p[4] = t->data;
        x.n[4] = bytes;
        x.w[4] = true;
        if (!vk_bind(r, &x)) return false;
        const bool words = x.off[0] % 4 == 0 && x.off[4] % 4 == 0 && bytes % 4 == 0;
        uint32_t pc[4] = {x.off[0], x.off[4], (uint32_t)bytes, words ? 1u : 0u};
        memcpy(x.pc, pc, sizeof pc);
        vk_groups_1d(words ? bytes / 4 : bytes, 256, x.groups);
        return vk_dispatch(r, &x);
    }
    const bool quant = loom_type_is_quantized(t->type);
    vk_disp x = {.shader = quant ? (t->type == LOOM_TYPE_Q8_0 ? VKS_CPY_Q8_0 : VKS_CPY_Q4_0) : VKS_CPY};
    set_bind(&x, 0, a, false);
    set_bind(&x, 4, t, true);
    if (!vk_bind(r, &x)) return false;
    uint32_t *pc = x.pc;
    ne_nb(pc + 0, a, false);
    ne_nb(pc + 4, a, true);
    ne_nb(pc + 8, t, false);
    ne_nb(pc + 12, t, true);
    pc[16] = x.off[0];
    pc[17] = x.off[4];
    pc[18] = (uint32_t)a->type;
    if (quant) {
        pc[19] = (uint32_t)(n / 32);
        vk_groups_1d((uint64_t)(n / 32), 256, x.groups);
    } else {
        pc[19] = (uint32_t)t->type;
        pc[20] = (uint32_t)n;
        vk_groups_1d((uint64_t)n, 256, x.groups);
    }
    return vk_dispatch(r, &x);
}

static bool copy_supported(const loom_vk_dev *d, const loom_tensor *t) {
    const loom_tensor *a = t->src[0];
    if (!fits(d, a) || !fits(d, t) || !strides_ok(a) || !strides_ok(t)) return false;
    if (a->type == t->type && loom_tensor_is_contiguous(a) && loom_tensor_is_contiguous(t)) return true;
    if (is_plain(a->type) && is_plain(t->type)) return (a->type == LOOM_TYPE_I32) == (t->type == LOOM_TYPE_I32);
    if ((t->type == LOOM_TYPE_Q8_0 || t->type == LOOM_TYPE_Q4_0) && is_plain_float(a->type))
        return t->ne[0] % 32 == 0 && t->nb[0] == loom_type_size(t->type);
    return false;
}

/* ---------------------------------------------------------------- rows: norm, softmax, sums */

static bool rec_norm(vk_rec *r, loom_tensor *t) {
    const loom_tensor *a = t->src[0], *w = t->op == LOOM_OP_RMS_NORM ? t->src[1] : NULL;
    vk_disp x = {.shader = VKS_NORM};
    set_bind(&x, 0, a, false);
    if (w) set_bind(&x, 1, w, false);
    set_bind(&x, 4, t, true);
    if (!vk_bind(r, &x)) return false;
    const int64_t rows = loom_nrows(t);
    uint32_t pc[17] = {(uint32_t)t->ne[0], (uint32_t)t->ne[1], (uint32_t)t->ne[2], (uint32_t)rows, (uint32_t)a->nb[0],
                       (uint32_t)a->nb[1], (uint32_t)a->nb[2], (uint32_t)a->nb[3], (uint32_t)t->nb[1],
                       (uint32_t)t->nb[2], (uint32_t)t->nb[3], x.off[0], x.off[1], x.off[4],
                       t->op == LOOM_OP_RMS_NORM ? 1u : 0u, w ? 1u : 0u, fbits(f32_of(t, 0))};
    memcpy(x.pc, pc, sizeof pc);
    vk_groups_1d((uint64_t)rows, 1, x.groups);
    return vk_dispatch(r, &x);
}

/* ALiBi's slope series for max_bias over n_head heads (loom_alibi_slope: slope(h) =
 * m0^(h+1) for h < nlog2, else m1^(2 (h - nlog2) + 1)) into pc[0..2]: m0, m1, nlog2 (0:
 * none, every slope 1). */
static void alibi_pc(float max_bias, int64_t n_head, uint32_t *pc) {
    pc[0] = pc[1] = fbits(1.0f);
    pc[2] = 0;
    if (!(max_bias > 0.0f) || n_head < 1) return;
    int64_t n = 1;
    while (n * 2 <= n_head) n *= 2;
    pc[0] = fbits(powf(2.0f, -max_bias / (float)n));
    pc[1] = fbits(powf(2.0f, -(max_bias / 2.0f) / (float)n));
    pc[2] = (uint32_t)n;
}

static bool rec_softmax(vk_rec *r, loom_tensor *t) {
    const loom_tensor *a = t->src[0], *m = t->src[1];
    vk_disp x = {.shader = VKS_SOFTMAX};
    set_bind(&x, 0, a, false);
    if (m) set_bind(&x, 1, m, false);
    set_bind(&x, 4, t, true);
    if (!vk_bind(r, &x)) return false;
    const int64_t rows = loom_nrows(t);
    uint32_t pc[25] = {(uint32_t)t->ne[0], (uint32_t)t->ne[1], (uint32_t)t->ne[2], (uint32_t)rows,
                       (uint32_t)a->nb[0], (uint32_t)a->nb[1], (uint32_t)a->nb[2], (uint32_t)a->nb[3],
                       m ? (uint32_t)m->nb[1] : 0, m ? (uint32_t)m->nb[2] : 0, m ? (uint32_t)m->nb[3] : 0,
                       m ? (uint32_t)m->ne[2] : 1, m ? (uint32_t)m->ne[3] : 1, (uint32_t)t->nb[1], (uint32_t)t->nb[2],
                       (uint32_t)t->nb[3], x.off[0], x.off[1], x.off[4], m ? 1u : 0u,
                       m ? (uint32_t)m->type : 0u, fbits(f32_of(t, 0))};
    alibi_pc(m ? f32_of(t, 1) : 0.0f, t->ne[2], pc + 22);
    memcpy(x.pc, pc, sizeof pc);
    vk_groups_1d((uint64_t)rows, 1, x.groups);
    return vk_dispatch(r, &x);
}

static bool rec_sum_rows(vk_rec *r, loom_tensor *t) {
    const loom_tensor *a = t->src[0];
    vk_disp x = {.shader = VKS_SUM_ROWS};
    set_bind(&x, 0, a, false);
    set_bind(&x, 4, t, true);
    if (!vk_bind(r, &x)) return false;
    const int64_t rows = loom_nrows(t);
    uint32_t pc[16] = {(uint32_t)a->ne[0], (uint32_t)t->ne[1], (uint32_t)t->ne[2], (uint32_t)rows,
                       (uint32_t)a->nb[0], (uint32_t)a->nb[1], (uint32_t)a->nb[2], (uint32_t)a->nb[3],
                       (uint32_t)t->nb[1], (uint32_t)t->nb[2], (uint32_t)t->nb[3], x.off[0], x.off[4],
                       t->op == LOOM_OP_MEAN ? 1u : 0u, (uint32_t)a->type, (uint32_t)t->type};
    memcpy(x.pc, pc, sizeof pc);
    vk_groups_1d((uint64_t)rows, 1, x.groups);
    return vk_dispatch(r, &x);
}

static bool rec_hadamard(vk_rec *r, loom_tensor *t) {
    const loom_tensor *a = t->src[0];
    const uint32_t n = (uint32_t)loom_get_op_param_i32(t, 0);
    vk_disp x = {.shader = VKS_HADAMARD};
    set_bind(&x, 0, a, false);
    set_bind(&x, 4, t, true);
    if (!vk_bind(r, &x)) return false;
    const int64_t rows = loom_nrows(t);
    const uint32_t blocks = (uint32_t)(t->ne[0] / n);
    uint32_t pc[14] = {(uint32_t)t->ne[1], (uint32_t)t->ne[2], (uint32_t)rows, blocks,
                       (uint32_t)a->nb[1], (uint32_t)a->nb[2], (uint32_t)a->nb[3], (uint32_t)t->nb[1],
                       (uint32_t)t->nb[2], (uint32_t)t->nb[3], x.off[0], x.off[4],
                       n, fbits((float)(1.0 / sqrt((double)n)))};
    memcpy(x.pc, pc, sizeof pc);
    vk_groups_1d((uint64_t)rows * blocks, 1, x.groups);
    return vk_dispatch(r, &x);
}

/* ---------------------------------------------------------------- ROPE */

static bool rec_rope(vk_rec *r, loom_tensor *t) {
    const loom_tensor *a = t->src[0], *pos = t->src[1], *ff = t->src[2];
    const int n_dims = loom_get_op_param_i32(t, 0), mode = loom_get_op_param_i32(t, 1);
    const int orig_ctx = loom_get_op_param_i32(t, 2);
    const double base = f32_of(t, 3), freq_scale = f32_of(t, 4), ext = f32_of(t, 5), attn = f32_of(t, 6);
    const double beta_fast = f32_of(t, 7), beta_slow = f32_of(t, 8);
    /* YaRN ramp and magnitude, as the CPU kernel computes them (double) */
    double mscale = attn, lo = 0.0, hi = 0.0;
    if (ext != 0.0) {
        const double two_ln_base = 2.0 * log(base);
        lo = floor((double)n_dims * log((double)orig_ctx / (beta_fast * 2.0 * M_PI)) / two_ln_base);
        if (lo < 0.0) lo = 0.0;
        hi = ceil((double)n_dims * log((double)orig_ctx / (beta_slow * 2.0 * M_PI)) / two_ln_base);
        if (hi > (double)(n_dims - 1)) hi = (double)(n_dims - 1);
        mscale *= 1.0 + 0.1 * log(1.0 / freq_scale);
    }
    vk_disp x = {.shader = VKS_ROPE};
    set_bind(&x, 0, a, false);
    set_bind(&x, 1, pos, false);
    if (ff) set_bind(&x, 2, ff, false);
    set_bind(&x, 4, t, true);
    if (!vk_bind(r, &x)) return false;
    const uint64_t n = (uint64_t)((a->ne[0] + 1) / 2) * (uint64_t)(a->ne[1] * a->ne[2]);
    uint32_t pc[26] = {(uint32_t)a->ne[0], (uint32_t)a->ne[1], (uint32_t)a->ne[2], (uint32_t)n, (uint32_t)a->nb[1],
                       (uint32_t)a->nb[2], (uint32_t)t->nb[1], (uint32_t)t->nb[2], x.off[0], x.off[1], x.off[2],
                       x.off[4], (uint32_t)n_dims, mode == LOOM_ROPE_NEOX ? 1u : 0u, ff ? 1u : 0u, (uint32_t)a->type,
                       fbits((float)base), fbits((float)freq_scale), fbits((float)ext), fbits((float)mscale),
                       fbits((float)lo), fbits((float)hi)};
    memcpy(x.pc, pc, sizeof pc);
    vk_groups_1d(n, 256, x.groups);
    return vk_dispatch(r, &x);
}

/* ---------------------------------------------------------------- FLASH_ATTN */

static int fa_shader(loom_type t) {
    switch (t) {
    case LOOM_TYPE_F32: return VKS_FA_F32;
    case LOOM_TYPE_F16: return VKS_FA_F16;
    case LOOM_TYPE_BF16: return VKS_FA_BF16;
    case LOOM_TYPE_Q8_0: return VKS_FA_Q8_0;
    case LOOM_TYPE_Q4_0: return VKS_FA_Q4_0;
    default: return -1;
    }
}

/* Split-K: chunks of keys per (head, token) when there are few of those. */
static void fa_chunks(const loom_tensor *t, int64_t *n_chunks, int64_t *chunk_len) {
    const loom_tensor *q = t->src[0], *k = t->src[1];
    const int64_t items = q->ne[1] * q->ne[2], L = k->ne[1];
    int64_t want = items >= 128 ? 1 : (128 + items - 1) / items;
    int64_t maxc = (L + 255) / 256;
    int64_t nc = want < maxc ? want : maxc;
    if (nc < 1) nc = 1;
    if (nc > 64) nc = 64;
    *chunk_len = (L + nc - 1) / nc;
    *n_chunks = (L + *chunk_len - 1) / *chunk_len;
}

static size_t fa_work(const loom_tensor *t) {
    int64_t nc, cl;
    fa_chunks(t, &nc, &cl);
    if (nc <= 1) return 0;
    return (size_t)(t->src[0]->ne[1] * t->src[0]->ne[2] * nc) * (size_t)(t->src[2]->ne[0] + 2) * sizeof(float);
}

static bool fa_supported(const loom_vk_dev *d, const loom_tensor *t) {
    const loom_tensor *q = t->src[0], *k = t->src[1], *v = t->src[2], *m = t->src[3];
    if (q->type != LOOM_TYPE_F32 || k->type != v->type || fa_shader(k->type) < 0) return false;
    const loom_tensor *sk = t->src[4]; /* sinks F32 [H] (loom_flash_attn_ext) */
    if (sk && (sk->type != LOOM_TYPE_F32 || !fits(d, sk) || !loom_tensor_is_contiguous(sk))) return false;
    if (q->ne[0] > FA_DMAX || v->ne[0] > FA_DMAX || q->nb[0] != 4) return false;
    if (loom_type_is_quantized(k->type) && (q->ne[0] % 32 || v->ne[0] % 32 || !loom_tensor_is_contiguous_rows(v)))
        return false;
    if (!loom_tensor_is_contiguous_rows(k)) return false;
    if (!strides_ok(q) || !strides_ok(k) || !strides_ok(v) || !strides_ok(t)) return false;
    if (!fits(d, q) || !fits(d, k) || !fits(d, v) || !fits(d, t) || (m && !fits(d, m))) return false;
    if (m && (m->type != LOOM_TYPE_F16 && m->type != LOOM_TYPE_F32)) return false;
    if (m && m->nb[0] != loom_type_size(m->type)) return false;
    if (q->ne[2] > 65535 || q->ne[1] > 65535 || fa_work(t) > vk_window_span(d)) return false;
    return true;
}

static bool rec_flash_attn(vk_rec *r, loom_tensor *t) {
    loom_vk_dev *d = r->d;
    const loom_tensor *q = t->src[0], *k = t->src[1], *v = t->src[2], *m = t->src[3];
    int64_t nc, cl;
    fa_chunks(t, &nc, &cl);
    const size_t pw = fa_work(t);
    if (nc > 1 && (!r->work || r->work_size < pw))
        return vk_fail(r, LOOM_ERR_INTERNAL, "device %s: work area too small for flash attention", d->name);
    vk_disp x = {.shader = fa_shader(k->type)};
    set_bind(&x, 0, q, false);
    set_bind(&x, 1, k, false);
    set_bind(&x, 2, v, false);
    if (m) set_bind(&x, 3, m, false);
    const loom_tensor *sk = t->src[4];
    if (sk && nc == 1) set_bind(&x, 5, sk, false); /* with split-K the combine reads them */
    if (nc > 1) {
        x.p[4] = r->work;
        x.n[4] = pw;
        x.w[4] = true;
        r->q8_src = NULL; /* the partials overwrite the work area */
    } else {
        set_bind(&x, 4, t, true);
    }
    if (!vk_bind(r, &x)) return false;
    const int64_t H = q->ne[2], T = q->ne[1];
    const bool v_rows = loom_tensor_is_contiguous_rows(v);
    uint32_t pc[31] = {(uint32_t)q->ne[0], (uint32_t)v->ne[0], (uint32_t)T, (uint32_t)H, (uint32_t)k->ne[1],
                       (uint32_t)(H / k->ne[2]), (uint32_t)q->nb[1], (uint32_t)q->nb[2], (uint32_t)k->nb[1],
                       (uint32_t)k->nb[2], (uint32_t)v->nb[0], (uint32_t)v->nb[1], (uint32_t)v->nb[2],
                       m ? (uint32_t)m->nb[1] : 0, x.off[0], x.off[1], x.off[2], x.off[3], x.off[4], m ? 1u : 0u,
                       m ? (uint32_t)m->type : 0u, (uint32_t)nc, (uint32_t)cl, v_rows ? 1u : 0u,
                       fbits(f32_of(t, 0)), fbits(f32_of(t, 1)), sk && nc == 1 ? 1u : 0u,
                       sk && nc == 1 ? x.off[5] : 0u};
    alibi_pc(m ? f32_of(t, 2) : 0.0f, H, pc + 28);
    memcpy(x.pc, pc, sizeof pc);
    x.groups[0] = (uint32_t)H;
    x.groups[1] = (uint32_t)T;
    x.groups[2] = (uint32_t)nc;
    if (!vk_dispatch(r, &x)) return false;
    if (nc == 1) return true;
    vk_disp c = {.shader = VKS_FA_COMBINE};
    c.p[0] = r->work;
    c.n[0] = pw;
    set_bind(&c, 4, t, true);
    if (sk) set_bind(&c, 1, sk, false);
    if (!vk_bind(r, &c)) return false;
    uint32_t pc2[7] = {(uint32_t)v->ne[0], (uint32_t)H, (uint32_t)nc, c.off[0], c.off[4], sk ? 1u : 0u,
                       sk ? c.off[1] : 0u};
    memcpy(c.pc, pc2, sizeof pc2);
    c.groups[0] = (uint32_t)H;
    c.groups[1] = (uint32_t)T;
    c.groups[2] = 1;
    return vk_dispatch(r, &c);
}

/* ---------------------------------------------------------------- dispatch */

static bool all_fit(const loom_vk_dev *d, const loom_tensor *t) {
    if (!fits(d, t) || !strides_ok(t)) return false;
    for (int k = 0; k < LOOM_MAX_SRC; k++)
        if (t->src[k] && (!fits(d, t->src[k]) || !strides_ok(t->src[k]))) return false;
    return true;
}

bool loom_vk_supports(const loom_vk_dev *d, const loom_tensor *t) {
    if (t->op == LOOM_OP_NONE || t->op == LOOM_OP_VIEW) return true;
    if (t->flags & LOOM_TF_POISON) return false;
    switch (t->op) {
    case LOOM_OP_MUL_MAT: return mm_supported(d, t);
    case LOOM_OP_MUL_MAT_ID: return mmid_supported(d, t);
    case LOOM_OP_GET_ROWS: return get_rows_supported(d, t);
    case LOOM_OP_ADD: case LOOM_OP_SUB: case LOOM_OP_MUL: case LOOM_OP_DIV:
        return all_fit(d, t) && is_plain_float(t->src[0]->type) && is_plain_float(t->src[1]->type) &&
               is_plain_float(t->type) && loom_nelements(t) <= UINT32_MAX;
    case LOOM_OP_NEG: case LOOM_OP_SCALE: case LOOM_OP_SQR: case LOOM_OP_SQRT: case LOOM_OP_SIN:
    case LOOM_OP_COS: case LOOM_OP_TANH: case LOOM_OP_SIGMOID: case LOOM_OP_SILU: case LOOM_OP_RELU:
    case LOOM_OP_GELU: case LOOM_OP_QUICK_GELU: case LOOM_OP_CLAMP:
        if (t->op == LOOM_OP_SILU && t->src[1] && t->src[1]->type != LOOM_TYPE_F32) return false;
        if (t->op == LOOM_OP_GELU && loom_get_op_param_f32(t, 0) != 0.0f) return false; /* gelu_f16 */
        return all_fit(d, t) && is_plain_float(t->src[0]->type) && is_plain_float(t->type) &&
               loom_nelements(t) <= UINT32_MAX;
    case LOOM_OP_DUP: case LOOM_OP_CPY: return copy_supported(d, t) && loom_nelements(t) <= UINT32_MAX;
    case LOOM_OP_RMS_NORM: case LOOM_OP_NORM:
        if (t->src[0]->type != LOOM_TYPE_F32 || t->type != LOOM_TYPE_F32 || t->nb[0] != 4) return false;
        if (t->op == LOOM_OP_RMS_NORM && t->src[1] && (t->src[1]->type != LOOM_TYPE_F32 || t->src[1]->nb[0] != 4))
            return false;
        return all_fit(d, t);
    case LOOM_OP_SOFT_MAX:
        if (t->src[0]->type != LOOM_TYPE_F32 || t->nb[0] != 4) return false;
        if (t->src[2]) return false; /* attention sinks: CPU only */
        if (t->src[1] && ((t->src[1]->type != LOOM_TYPE_F32 && t->src[1]->type != LOOM_TYPE_F16) ||
                          t->src[1]->nb[0] != loom_type_size(t->src[1]->type)))
            return false;
        return all_fit(d, t);
    case LOOM_OP_SUM_ROWS: case LOOM_OP_MEAN:
        return all_fit(d, t) && is_plain_float(t->src[0]->type) && is_plain_float(t->type);
    case LOOM_OP_ROPE:
        return all_fit(d, t) && (t->type == LOOM_TYPE_F32 || t->type == LOOM_TYPE_F16) &&
               t->src[0]->nb[0] == loom_type_size(t->type) && loom_tensor_is_contiguous(t) &&
               loom_nelements(t) <= UINT32_MAX;
    case LOOM_OP_FLASH_ATTN: return fa_supported(d, t);
    case LOOM_OP_HADAMARD:
        return all_fit(d, t) && loom_get_op_param_i32(t, 0) <= 1024 &&
               loom_nrows(t) * (t->ne[0] / loom_get_op_param_i32(t, 0)) <= UINT32_MAX;
    default: return false;
    }
}

size_t loom_vk_work_size(const loom_vk_dev *d, loom_tensor *const *nodes, int64_t n) {
    size_t mx = 0;
    for (int64_t i = 0; i < n; i++) {
        const loom_tensor *t = nodes[i];
        size_t w = 0;
        if (t->op == LOOM_OP_MUL_MAT && use_int8(d, t->src[0])) w = q8_bytes(t->src[0], t->src[1]);
        else if (t->op == LOOM_OP_FLASH_ATTN) w = fa_work(t);
        if (w > mx) mx = w;
    }
    return mx;
}

bool vk_record_node(vk_rec *r, loom_tensor *t) {
    if (!t->data) return vk_fail(r, LOOM_ERR_INTERNAL, "device %s: node %s has no memory", r->d->name, t->name);
    for (int k = 0; k < LOOM_MAX_SRC; k++)
        if (t->src[k] && !t->src[k]->data && loom_tensor_nbytes(t->src[k]))
            return vk_fail(r, LOOM_ERR_INTERNAL, "device %s: an input of %s has no memory", r->d->name, t->name);
    switch (t->op) {
    case LOOM_OP_MUL_MAT: return rec_mul_mat(r, t);
    case LOOM_OP_MUL_MAT_ID: return rec_mul_mat_id(r, t);
    case LOOM_OP_GET_ROWS: return rec_get_rows(r, t);
    case LOOM_OP_ADD: case LOOM_OP_SUB: case LOOM_OP_MUL: case LOOM_OP_DIV: return rec_binary(r, t);
    case LOOM_OP_DUP: case LOOM_OP_CPY: return rec_copy(r, t);
    case LOOM_OP_RMS_NORM: case LOOM_OP_NORM: return rec_norm(r, t);
    case LOOM_OP_SOFT_MAX: return rec_softmax(r, t);
    case LOOM_OP_SUM_ROWS: case LOOM_OP_MEAN: return rec_sum_rows(r, t);
    case LOOM_OP_ROPE: return rec_rope(r, t);
    case LOOM_OP_FLASH_ATTN: return rec_flash_attn(r, t);
    case LOOM_OP_HADAMARD: return rec_hadamard(r, t);
    default:
        if (unary_code(t->op) >= 0) return rec_unary(r, t);
        return vk_fail(r, LOOM_ERR_UNSUPPORTED, "device %s: op %s is not supported", r->d->name, loom_op_name(t->op));
    }
}
