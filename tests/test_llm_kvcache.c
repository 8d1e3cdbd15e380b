/* KV cache (contract §7): sizes and accounting, Put layout (K [dk,hkv,cells];
 * PermutedV [cells,dv,hkv] without flash attention, [dv,hkv,cells] with it), Get
 * views, causal mask contents and padding. Uses the internal cache API on a
 * backend opened on the bundled model (only its config/placement are used). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/model_internal.h"
#include "test_util.h"

static void run(bool fa) {
    loom_backend_params bp = loom_backend_default_params();
    bp.flash_attn = fa;
    loom_backend *be = NULL;
    loom_error err = {0};
    CHECK(loom_backend_open(test_path("models/stories260K.gguf"), &bp, &be, &err) == LOOM_OK);
    if (!be) return;
    loom_model_hparams hp = {0};
    hp.n_layer = 2;
    hp.head_dim_k = 4;
    hp.head_dim_v = 3;
    hp.n_head_kv = 2;
    llm_kv_cache kv;
    CHECK(llm_kv_init(&kv, be, &hp, NULL, 40, 1, 8, LOOM_TYPE_F32, &err) == LOOM_OK);
    int pad = fa ? 256 : 32;
    CHECK_EQ_INT(kv.cells, fa ? 256 : 64);
    CHECK_EQ_INT(kv.n_groups, 1);
    CHECK_EQ_INT(kv.grp[0].cells.n, kv.cells);
    CHECK_EQ_INT(kv.cfg.permuted_v, !fa);

    /* cache bytes are accounted per layer */
    loom_backend_memory mem;
    if (loom_backend_memory_get(be, &mem) == LOOM_OK) {
        uint64_t per = (uint64_t)kv.cells * (4 * 2 + 3 * 2) * 4;
        CHECK_EQ_INT(mem.devices[0].cache[0].size, per);
        CHECK_EQ_INT(mem.devices[0].cache[1].size, per);
        CHECK_EQ_INT(mem.devices[0].cache[2].size, 0);
        loom_backend_memory_free(&mem);
    }

    /* Put T=3 tokens at cell 5 of layer 1: k(d,h,t) = 100t + 10h + d, v = -(...) */
    enum { T = 3, LOC = 5 };
    float kd[4 * 2 * T], vd[3 * 2 * T];
    for (int t = 0; t < T; t++)
        for (int h = 0; h < 2; h++) {
            for (int d = 0; d < 4; d++) kd[(t * 2 + h) * 4 + d] = (float)(100 * t + 10 * h + d + 1);
            for (int d = 0; d < 3; d++) vd[(t * 2 + h) * 3 + d] = -(float)(100 * t + 10 * h + d + 1);
        }
    loom_ctx *ctx = NULL;
    CHECK(loom_backend_ctx_new(be, 0, &ctx, &err) == LOOM_OK);
    if (ctx) {
        int64_t kne[3] = {4, 2, T}, vne[3] = {3, 2, T};
        loom_tensor *k = loom_from_f32(loom_ctx_input(ctx), kd, 4 * 2 * T, 3, kne);
        loom_tensor *v = loom_from_f32(loom_ctx_input(ctx), vd, 3 * 2 * T, 3, vne);
        loom_tensor *store[4] = {0};
        kv.grp[0].cells.loc = LOC;
        kv.grp[0].cells.start = 0;
        kv.grp[0].cells.L = pad;
        llm_kv_put(ctx, &kv, 1, k, v, store);
        CHECK(store[0] && store[1] && store[2] && store[3]);
        loom_tensor *kc, *vc;
        llm_kv_get(ctx, &kv, 1, &kc, &vc);
        CHECK_EQ_INT(loom_tensor_ne(kc, 0), 4);
        CHECK_EQ_INT(loom_tensor_ne(kc, 1), 2);
        CHECK_EQ_INT(loom_tensor_ne(kc, 2), pad);
        if (fa) {
            CHECK_EQ_INT(loom_tensor_ne(vc, 0), 3);
            CHECK_EQ_INT(loom_tensor_ne(vc, 2), pad);
        } else {
            CHECK_EQ_INT(loom_tensor_ne(vc, 0), pad);
            CHECK_EQ_INT(loom_tensor_ne(vc, 1), 3);
            CHECK_EQ_INT(loom_tensor_ne(vc, 2), 2);
        }
        loom_tensor *kcopy = loom_cont(ctx, kc), *vcopy = loom_cont(ctx, vc);
        loom_ctx_forward(ctx, kcopy);
        loom_ctx_forward(ctx, vcopy);
        loom_tensor *outs[2] = {kcopy, vcopy};
        loom_status s = loom_ctx_compute(ctx, 2, outs);
        CHECK_MSG(s == LOOM_OK, "compute: %s", loom_ctx_error(ctx));
        float *K = calloc((size_t)4 * 2 * pad, sizeof *K), *V = calloc((size_t)3 * 2 * pad, sizeof *V);
        if (!s) {
            CHECK(loom_tensor_read_f32(kcopy, K, (size_t)4 * 2 * pad) == LOOM_OK);
            CHECK(loom_tensor_read_f32(vcopy, V, (size_t)3 * 2 * pad) == LOOM_OK);
            int bad = 0;
            for (int c = 0; c < pad; c++)
                for (int h = 0; h < 2; h++) {
                    int t = c - LOC;
                    bool in = t >= 0 && t < T;
                    for (int d = 0; d < 4; d++) {
                        float want = in ? (float)(100 * t + 10 * h + d + 1) : 0.0f;
                        bad += K[(c * 2 + h) * 4 + d] != want;
                    }
                    for (int d = 0; d < 3; d++) {
                        float want = in ? -(float)(100 * t + 10 * h + d + 1) : 0.0f;
                        float got = fa ? V[(c * 2 + h) * 3 + d] : V[(h * 3 + d) * pad + c];
                        bad += got != want;
                    }
                }
            CHECK_EQ_INT(bad, 0);
        }
        /* The same graph computed again, its copies retargeted to cells [LOC2, LOC2+T)
         * (loom_view_set_offset on the four store handles) with new values: the new
         * cells get them, the old ones keep theirs, no rebuild. */
        enum { LOC2 = 9 };
        size_t k_off, v_off;
        llm_kv_store_offsets(&kv, 1, LOC2, &k_off, &v_off);
        CHECK(loom_view_set_offset(store[0], k_off) == LOOM_OK);
        CHECK(loom_view_set_offset(store[1], k_off) == LOOM_OK);
        CHECK(loom_view_set_offset(store[2], v_off) == LOOM_OK);
        CHECK(loom_view_set_offset(store[3], v_off) == LOOM_OK);
        /* a move that would leave the cache is refused and changes nothing */
        CHECK(loom_view_set_offset(store[0], (size_t)1 << 40) == LOOM_ERR_SHAPE);
        float kd2[4 * 2 * T], vd2[3 * 2 * T];
        for (int i = 0; i < 4 * 2 * T; i++) kd2[i] = 1000.0f + (float)i;
        for (int i = 0; i < 3 * 2 * T; i++) vd2[i] = -1000.0f - (float)i;
        CHECK(loom_tensor_write(k, kd2, sizeof kd2) == LOOM_OK);
        CHECK(loom_tensor_write(v, vd2, sizeof vd2) == LOOM_OK);
        s = loom_ctx_compute(ctx, 2, outs);
        CHECK_MSG(s == LOOM_OK, "compute again: %s", loom_ctx_error(ctx));
        if (!s && pad >= LOC2 + T) {
            CHECK(loom_tensor_read_f32(kcopy, K, (size_t)4 * 2 * pad) == LOOM_OK);
            CHECK(loom_tensor_read_f32(vcopy, V, (size_t)3 * 2 * pad) == LOOM_OK);
            int bad = 0;
            for (int c = 0; c < pad; c++)
                for (int h = 0; h < 2; h++) {
                    int t = c - LOC, t2 = c - LOC2;
                    bool in = t >= 0 && t < T, in2 = t2 >= 0 && t2 < T;
                    for (int d = 0; d < 4; d++) {
                        float want = in2 ? kd2[(t2 * 2 + h) * 4 + d] : in ? (float)(100 * t + 10 * h + d + 1) : 0.0f;
                        bad += K[(c * 2 + h) * 4 + d] != want;
                    }
                    for (int d = 0; d < 3; d++) {
                        float want = in2 ? vd2[(t2 * 2 + h) * 3 + d] : in ? -(float)(100 * t + 10 * h + d + 1) : 0.0f;
                        float got = fa ? V[(c * 2 + h) * 3 + d] : V[(h * 3 + d) * pad + c];
                        bad += got != want;
                    }
                }
            CHECK_EQ_INT(bad, 0);
        }
        CHECK(pad >= LOC2 + T);
        free(K);
        free(V);
        loom_ctx_free(ctx);
    }

    /* mask: after tokens 0..2, tokens at positions 3, 4 see cells 0..3 and 0..4 (the
     * batch lands in cells 3, 4); the range is one padding; padded rows all -INF */
    ctx = NULL;
    CHECK(loom_backend_ctx_new(be, 0, &ctx, &err) == LOOM_OK);
    if (ctx) {
        llm_kv_clear(&kv);
        loom_batch b;
        CHECK(loom_batch_init(&b, 4, 1, &err) == LOOM_OK);
        int32_t s0 = 0;
        for (int i = 0; i < 3; i++) loom_batch_add(&b, 1, i, &s0, 1, false, &err);
        CHECK(llm_kv_prepare(&kv, be, &b, &err) == LOOM_OK);
        loom_batch_clear(&b);
        for (int i = 3; i < 5; i++) loom_batch_add(&b, 1, i, &s0, 1, true, &err);
        CHECK(llm_kv_prepare(&kv, be, &b, &err) == LOOM_OK);
        CHECK_EQ_INT(kv.grp[0].cells.loc, 3);
        int64_t L = kv.grp[0].cells.L;
        CHECK_EQ_INT(L, pad);
        CHECK_EQ_INT(kv.grp[0].cells.start, 0);
        size_t nf = llm_kv_mask_floats(&kv, 0, 2);
        CHECK_EQ_INT(nf, (size_t)L * (fa ? 64 : 2));
        loom_tensor *mt[LLM_KV_MAX_GROUPS];
        llm_kv_build_masks(ctx, &kv, 2, false, mt, NULL);
        CHECK_EQ_INT(loom_tensor_type(mt[0]), fa ? LOOM_TYPE_F16 : LOOM_TYPE_F32);
        CHECK_EQ_INT(loom_tensor_ne(mt[0], 0), L);
        CHECK_EQ_INT(loom_tensor_ne(mt[0], 1), fa ? 64 : 2);
        const float *host = kv.grp[0].mask;
        int bad = 0;
        for (int64_t i = 0; i < (fa ? 64 : 2); i++)
            for (int64_t j = 0; j < L; j++) {
                bool vis = i < 2 && j <= 3 + i;
                float v = host[i * L + j];
                bad += vis ? v != 0.0f : !(isinf(v) && v < 0);
            }
        CHECK_EQ_INT(bad, 0);
        loom_batch_free(&b);
        loom_ctx_free(ctx);
    }
    llm_kv_free(&kv);

    /* quantized caches need flash attention */
    loom_error_clear(&err);
    hp.head_dim_k = hp.head_dim_v = 32;
    loom_status s = llm_kv_init(&kv, be, &hp, NULL, 40, 1, 8, LOOM_TYPE_Q8_0, &err);
    CHECK_EQ_INT(s, fa ? LOOM_OK : LOOM_ERR_UNSUPPORTED);
    if (!s) llm_kv_free(&kv);
    loom_error_clear(&err);
    CHECK_EQ_INT(llm_kv_init(&kv, be, &hp, NULL, 40, 1, 8, LOOM_TYPE_Q4_K, &err), LOOM_ERR_UNSUPPORTED);
    loom_backend_close(be);
}

int main(void) {
    run(false);
    run(true);
    return test_finish("test_llm_kvcache");
}
