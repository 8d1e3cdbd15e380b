/*
 * arch.h (internal) - the architectures of arch_*.c (see arch.c for the table).
 */
#ifndef LOOM_LLM_ARCH_H
#define LOOM_LLM_ARCH_H

#include "llm_graph.h"

/* rope.scaling.yarn_beta_fast / yarn_beta_slow / yarn_log_multiplier */
loom_status llm_arch_yarn_keys(const loom_gguf *g, const loom_model_hparams *hp, llm_hparams_x *hx,
                               loom_error *err);
/* Layer il's attention.head_count_kv entry (the key may be one value or one per layer)
 * into *hkv: 0 (a layer without attention) or the model's n_head_kv (other counts are
 * LOOM_ERR_UNSUPPORTED, naming the layer). */
loom_status llm_arch_layer_kv_heads(const loom_gguf *g, const loom_model_hparams *hp, int il, int64_t *hkv,
                                    loom_error *err);
/* The five ssm.* keys (conv_kernel, inner_size, state_size, time_step_rank,
 * group_count), all required, into v[0..4]. */
loom_status llm_arch_ssm_keys(const loom_gguf *g, const char *arch, int64_t v[5], loom_error *err);
/* MoE keys: expert_count, expert_used_count, expert_feed_forward_length (required). */
loom_status llm_arch_moe_keys(const loom_gguf *g, const loom_model_hparams *hp, llm_hparams_x *hx,
                              loom_error *err);
/* attention.sliding_window_pattern as llama.cpp reads it: a scalar period (def when absent
 * or an array, which llama.cpp ignores), in [0, 4096]. */
loom_status llm_arch_swa_period(const loom_gguf *g, const loom_model_hparams *hp, int def, int64_t *p,
                                loom_error *err);
/* attention.sliding_window (required or not, default def) and sliding_window_pattern
 * (llm_arch_swa_period, default period); a window < 1 is an error naming the key. */
loom_status llm_arch_swa_keys(const loom_gguf *g, const loom_model_hparams *hp, llm_hparams_x *hx, bool required,
                              int64_t def, int period, loom_error *err);
/* Key ki (named key) of g: one boolean or integer per layer (hp->n_layer of them, or n_alt
 * when n_alt > 0): sets bit il of bits where layer il's is non-zero (bits holds 64 words;
 * others unchanged). LOOM_ERR_FORMAT naming the key for another type or count. */
loom_status llm_arch_layer_flags(const loom_gguf *g, const loom_model_hparams *hp, int64_t ki, const char *key,
                                 int n_alt, uint64_t *bits, loom_error *err);
/* The sliding layers from attention.sliding_window_pattern (swa_listed bits): a period p
 * (layer il slides iff p == 0 or il % p < p - 1) or one boolean / integer per layer;
 * absent: none (llama.cpp's reading for muse-glimmer and mellum). The window is the
 * caller's. */
loom_status llm_arch_swa_layers(const loom_gguf *g, const loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);

/* rope.dimension_sections (required; 3 or 4 counts of rotary pairs, a t/h/w section, at
 * most head_dim pairs): multi-section rope, interleaved (qwen3vl) or not. */
loom_status llm_arch_mrope_keys(const loom_gguf *g, const loom_model_hparams *hp, llm_hparams_x *hx, bool interleaved,
                                loom_error *err);

/* DeepSeek-style experts (deepseek2, glm4moe): leading_dense_block_count,
 * expert_shared_count, expert_group_count (> 1 unsupported), expert_weights_scale / _norm,
 * expert_gating_func (absent or 0: def_gating, 1 softmax or 2 sigmoid). */
loom_status llm_ds_moe_keys(const loom_gguf *g, const loom_model_hparams *hp, llm_hparams_x *hx, int def_gating,
                            loom_error *err);
/* The router's keys: expert_weights_scale, expert_weights_norm, expert_gating_func (absent
 * or 0: def_gating; 1 softmax or 2 sigmoid, others LOOM_ERR_UNSUPPORTED) into hx. */
loom_status llm_arch_router_keys(const loom_gguf *g, const loom_model_hparams *hp, llm_hparams_x *hx, int def_gating,
                                 loom_error *err);
/* Layer il's FFN weights: a SwiGLU MLP on the leading dense layers; else router (+
 * exp_probs_b), experts and shared experts (n_ff_exp * expert_shared_count wide). */
void llm_ds_bind_ffn(const loom_backend *be, const loom_model_hparams *hp, const llm_hparams_x *hx, llm_layer *L,
                     int il, loom_error *err, loom_status *st);
/* That FFN on n [E, T]. */
loom_tensor *llm_ds_ffn(loom_ctx *ctx, const llm_hparams_x *hx, const llm_layer *ly, loom_tensor *n, int il);

loom_status llm_glm4_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_glm4_bind(loom_model *m, loom_error *err);
loom_tensor *llm_glm4_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
loom_status llm_glm4moe_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_glm4moe_bind(loom_model *m, loom_error *err);
loom_tensor *llm_glm4moe_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
loom_status llm_llama4_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_llama4_bind(loom_model *m, loom_error *err);
loom_tensor *llm_llama4_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
loom_status llm_gemma4_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_gemma4_bind(loom_model *m, loom_error *err);
loom_tensor *llm_gemma4_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
/* [n_pl, T, n_layer]: gemma3n / gemma4 per-layer inputs of the batch's tokens tok (h0:
 * the scaled embeddings [n_embd, T]; m->hx.n_embd_pl and m->pl_* set). */
loom_tensor *llm_gemma_per_layer_inputs(const loom_model *m, loom_ctx *ctx, loom_tensor *tok, loom_tensor *h0);
loom_status llm_gemma3n_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_gemma3n_bind(loom_model *m, loom_error *err);
loom_tensor *llm_gemma3n_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
loom_status llm_ernie45moe_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_ernie45moe_bind(loom_model *m, loom_error *err);
loom_status llm_exaone4_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_exaone4_bind(loom_model *m, loom_error *err);
loom_tensor *llm_exaone4_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
loom_status llm_stablelm_bind(loom_model *m, loom_error *err);
loom_tensor *llm_stablelm_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
loom_status llm_qwen35_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_qwen35_bind(loom_model *m, loom_error *err);
loom_tensor *llm_qwen35_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
loom_status llm_olmoe_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_olmoe_bind(loom_model *m, loom_error *err);
loom_tensor *llm_olmoe_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);

loom_status llm_mellum_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_qwen3moe_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_qwen3moe_bind(loom_model *m, loom_error *err);
loom_tensor *llm_qwen3moe_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);

loom_status llm_phi3_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_phi3_bind(loom_model *m, loom_error *err);
loom_tensor *llm_phi3_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);

/* arch_phi2.c: phi2, and the LayerNorm pieces starcoder2 shares: output_norm.bias (and
 * output.bias when output_bias), the GELU MLP with biases, the LayerNorm output head. */
loom_status llm_ln_bind_io(loom_model *m, bool output_bias, loom_error *err);
/* llm_ln_bind_io and every layer's LayerNorm block: attn_norm (+ bias), q/k/v (fused or
 * not, with their biases), attn_output (+ bias), ffn_norm (+ bias) when ffn_norm,
 * ffn_up / ffn_down with biases. */
loom_status llm_ln_bind(loom_model *m, bool output_bias, bool ffn_norm, loom_error *err);
loom_tensor *llm_ln_gelu_mlp(loom_ctx *ctx, const llm_layer *ly, loom_tensor *n);
loom_tensor *llm_ln_output(const loom_model *m, loom_ctx *ctx, loom_tensor *h);
loom_status llm_ln_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_phi2_bind(loom_model *m, loom_error *err);
loom_status llm_gptneox_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_gptneox_bind(loom_model *m, loom_error *err);
loom_tensor *llm_gptneox_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
loom_tensor *llm_phi2_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
loom_status llm_starcoder2_bind(loom_model *m, loom_error *err);
loom_tensor *llm_starcoder2_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
loom_status llm_cohere_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_cohere_bind(loom_model *m, loom_error *err);
loom_tensor *llm_cohere_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
loom_status llm_qwen2moe_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_qwen2moe_bind(loom_model *m, loom_error *err);
loom_tensor *llm_qwen2moe_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
loom_status llm_deepseek2_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_minicpm3_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_deepseek2_bind(loom_model *m, loom_error *err);
loom_tensor *llm_deepseek2_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
loom_status llm_olmo_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_olmo_bind(loom_model *m, loom_error *err);
loom_tensor *llm_olmo_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
loom_status llm_olmo2_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_olmo2_bind(loom_model *m, loom_error *err);
loom_tensor *llm_olmo2_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
loom_status llm_graniteswa_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_graniteswa_bind(loom_model *m, loom_error *err);
loom_status llm_granite_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_granitemoe_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_granite_bind(loom_model *m, loom_error *err);
loom_status llm_minicpm_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_minicpm_bind(loom_model *m, loom_error *err);
loom_tensor *llm_granite_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
loom_status llm_granitehybrid_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_granitehybrid_bind(loom_model *m, loom_error *err);
loom_status llm_lfm2_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_lfm2_bind(loom_model *m, loom_error *err);
loom_tensor *llm_lfm2_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
loom_status llm_falcon_bind(loom_model *m, loom_error *err);
loom_status llm_gpt2_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_gpt2_bind(loom_model *m, loom_error *err);
loom_tensor *llm_gpt2_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
loom_status llm_plamo2_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_plamo2_bind(loom_model *m, loom_error *err);
loom_tensor *llm_plamo2_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
/* arch_kimi.c */
loom_status llm_kimi_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_kimi_bind(loom_model *m, loom_error *err);
loom_tensor *llm_kimik3_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
loom_tensor *llm_kimi_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
/* arch_step35.c */
/* block_count with the MTP layers (the trunk's n_layer + nextn_predict_layers) */
int llm_arch_n_layer_all(const loom_gguf *g, const loom_model_hparams *hp);
/* Layer il's value of a per-layer float key (one number for all layers, or an F32 array of
 * n_layer or n_all values); absent: 0. Out of [0, 1e6) or another length: LOOM_ERR_FORMAT. */
loom_status llm_arch_layer_float(const loom_gguf *g, const loom_model_hparams *hp, int n_all, const char *key, int il,
                                 float *out, loom_error *err);
loom_status llm_step35_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_step35_bind(loom_model *m, loom_error *err);
loom_tensor *llm_step35_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
loom_status llm_hyv3_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_hyv3_bind(loom_model *m, loom_error *err);
loom_status llm_laguna_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_laguna_bind(loom_model *m, loom_error *err);
/* arch_mimo2.c */
loom_status llm_mimo2_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_mimo2_bind(loom_model *m, loom_error *err);
loom_tensor *llm_mimo2_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
loom_status llm_plamo3_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_dbrx_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_dbrx_bind(loom_model *m, loom_error *err);
loom_tensor *llm_dbrx_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
loom_status llm_dsa_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_dsa_bind(loom_model *m, loom_error *err);
/* attention.indexer.head_count / key_length / top_k (required, checked) into hx->dsa_*. */
loom_status llm_dsa_indexer_keys(const loom_gguf *g, const loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_dots3_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_dots3_bind(loom_model *m, loom_error *err);
loom_tensor *llm_dots3_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
/* deepseek32 / glm-dsa attention of layer il (arch_dsa.c): x the attention norm's output,
 * qr the q LoRA latent, q [kv_lora + n_rot, H, T] and k [kv_lora + n_rot, 1, T] the
 * absorbed query and latent key, v [kv_lora, 1, T]; returns [kv_lora * H, T] over the
 * indexer's top_k keys. *sel_prev: the last indexer layer's key mask (set by an indexer
 * layer, read by a glm-dsa shared layer; NULL before the first layer). */
loom_tensor *llm_dsa_attention(loom_model *m, loom_ctx *ctx, const llm_batch *b, const llm_inputs *in, int il,
                               loom_tensor *x, loom_tensor *qr, loom_tensor *q, loom_tensor *k, loom_tensor *v,
                               float kq_scale, loom_tensor **sel_prev);
/* Queries per chunk of the indexer's scores for T queries over L keys and heads indexer
 * heads (at most four chunks; LOOM_DSA_SCORE_FLOATS, see arch_dsa.c). */
int64_t llm_dsa_chunk(int64_t L, int64_t heads, int64_t T);
/* Whether layer il reuses the previous indexer layer's keys (glm-dsa's shared layers). */
static inline bool llm_dsa_shared(const llm_hparams_x *hx, int il) {
    return il >= 0 && il < 4096 && (hx->dsa_shared[il / 64] >> (il % 64)) & 1;
}
loom_status llm_minimax01_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_minimax01_bind(loom_model *m, loom_error *err);
loom_tensor *llm_minimax01_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
loom_status llm_cogvlm_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_cogvlm_bind(loom_model *m, loom_error *err);
loom_status llm_chameleon_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_chameleon_bind(loom_model *m, loom_error *err);
loom_tensor *llm_chameleon_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
loom_status llm_grovemoe_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_grok_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_grok_bind(loom_model *m, loom_error *err);
loom_tensor *llm_grok_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
/* arch_openelm.c */
loom_status llm_openelm_bind(loom_model *m, loom_error *err);
loom_tensor *llm_openelm_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
/* arch_muse.c: muse-glimmer, talkie */
loom_status llm_muse_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_muse_bind(loom_model *m, loom_error *err);
loom_tensor *llm_muse_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
loom_status llm_afmoe_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_afmoe_bind(loom_model *m, loom_error *err);
loom_tensor *llm_afmoe_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
loom_status llm_smallthinker_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_smallthinker_bind(loom_model *m, loom_error *err);
loom_tensor *llm_smallthinker_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
/* arch_alibi.c: bloom, mpt, jais; llm_alibi_keys sets the max bias (attention.max_alibi_bias,
 * def when absent; out of [0, 64] is LOOM_ERR_FORMAT) and turns rope off. */
loom_status llm_alibi_keys(const loom_gguf *g, const loom_model_hparams *hp, llm_hparams_x *hx, double def,
                           loom_error *err);
loom_status llm_bloom_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_mpt_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_jais_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_bloom_bind(loom_model *m, loom_error *err);
loom_status llm_mpt_bind(loom_model *m, loom_error *err);
loom_status llm_jais_bind(loom_model *m, loom_error *err);
loom_tensor *llm_alibi_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
loom_status llm_falconh1_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_falconh1_bind(loom_model *m, loom_error *err);
loom_tensor *llm_falconh1_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
loom_status llm_nemotronh_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_nemotronh_bind(loom_model *m, loom_error *err);
loom_tensor *llm_nemotronh_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
/* arch_deci.c */
loom_status llm_deci_bind(loom_model *m, loom_error *err);
loom_tensor *llm_deci_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
/* arch_bitnet.c */
loom_status llm_bitnet_bind(loom_model *m, loom_error *err);
loom_tensor *llm_bitnet_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
/* arch_rwkv.c: rwkv6, rwkv7 */
loom_status llm_rwkv6_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_rwkv6_bind(loom_model *m, loom_error *err);
loom_tensor *llm_rwkv6_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
loom_status llm_rwkv7_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_rwkv7_bind(loom_model *m, loom_error *err);
loom_tensor *llm_rwkv7_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
loom_status llm_arwkv7_bind(loom_model *m, loom_error *err);
loom_status llm_rwkv6qwen2_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_rwkv6qwen2_bind(loom_model *m, loom_error *err);
loom_tensor *llm_rwkv6qwen2_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
loom_tensor *llm_arwkv7_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
/* arch_mamba.c: mamba, mamba2 and jamba */
loom_status llm_mamba_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_mamba_bind(loom_model *m, loom_error *err);
loom_tensor *llm_mamba_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);
/* the Mamba-2 mixer (arch_mamba2.c): keys into hx, layer il's weights and state sizes,
 * its graph on x [E, T] */
loom_status llm_mamba2_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
void llm_mamba2_bind(loom_model *m, int il, loom_error *err, loom_status *st);
loom_tensor *llm_mamba2_layer(loom_model *m, loom_ctx *ctx, const llm_inputs *in, int il, loom_tensor *x);
loom_status llm_gemma1_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_gemma2_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_gemma3_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_gemma_bind(loom_model *m, loom_error *err);
loom_tensor *llm_gemma_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);

loom_tensor *llm_mistral3_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);

loom_status llm_gptoss_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
loom_status llm_gptoss_bind(loom_model *m, loom_error *err);
loom_tensor *llm_gptoss_build(loom_model *m, loom_ctx *ctx, const llm_batch *b);

#endif
