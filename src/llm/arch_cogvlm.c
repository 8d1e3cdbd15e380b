/*
 * arch_cogvlm.c - CogVLM's language model (general.architecture "cogvlm": CogVLM /
 * CogAgent GGUFs), as llama.cpp's cogvlm graph for text tokens: the llama block with a
 * fused q | k | v (multi-head attention) and neox rope with ggml_rope's defaults (base
 * 10000, no scaling: rope.freq_base and rope_freqs are not applied, as llama.cpp), a SwiGLU
 * MLP. The visual expert weights (visexp_*), which image tokens use, are required and
 * bound, as llama.cpp loads them; text input never reads them (images are not supported).
 *
 *   per layer: x = rms_norm(h) * attn_norm; q | k | v = Wqkv x; h += Wo attn(rope(q),
 *     rope(k), v); h += Wdown (silu(Wgate n) * Wup n), n = rms_norm(h) * ffn_norm
 *   logits = Woutput (rms_norm(h) * output_norm)
 */
#include "arch.h"

loom_status llm_cogvlm_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    (void)g;
    if (hp->n_head_kv != hp->n_head || hp->head_dim_k != hp->head_dim_v || hp->n_rot != hp->head_dim_k)
        return loom_error_set(err, LOOM_ERR_UNSUPPORTED,
                              "model: %s needs head_count_kv == head_count and rope over the whole head (%d, %d; %d, %d)",
                              hp->arch, hp->n_head_kv, hp->n_head, hp->n_rot, hp->head_dim_k);
    /* ggml_rope: base 10000, scale 1, no YaRN, whatever the file says */
    hp->rope_base = 10000.0f;
    hp->rope_freq_scale = 1.0f;
    hx->yarn = false;
    hx->rope_attn_factor = 1.0f;
    return LOOM_OK;
}

loom_status llm_cogvlm_bind(loom_model *m, loom_error *err) {
    loom_status st = llm_bind_llama(m, err); /* the llama block, q | k | v fused */
    const loom_backend *be = m->be;
    const loom_model_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, C = (int64_t)hp->n_head * hp->head_dim_k, F = hp->n_ff;
    m->hp.has_rope_freqs = false;
    for (int il = 0; il < hp->n_layer && !st; il++) {
        m->layers[il].rope_freqs = NULL; /* loaded, not applied (ggml_rope) */
        if (!m->layers[il].wqkv)
            st = loom_error_set(err, LOOM_ERR_NOT_FOUND, "model: tensor 'blk.%d.attn_qkv.weight' is missing", il);
        /* the visual expert (image tokens only): checked, not used */
        llm_bind_tensor(be, true, E, 3 * C, 1, err, &st, "blk.%d.vis_attn_qkv.weight", il);
        llm_bind_tensor(be, true, C, E, 1, err, &st, "blk.%d.vis_attn_output.weight", il);
        llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.vis_gate.weight", il);
        llm_bind_tensor(be, true, F, E, 1, err, &st, "blk.%d.vis_down.weight", il);
        llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.vis_up.weight", il);
    }
    return st;
}
