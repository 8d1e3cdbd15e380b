/*
 * llm_graph.h (internal) - building blocks the architecture graphs (llama.c, arch_*.c)
 * share, written only against the public engine API (loom.h): batch inputs and masks,
 * the sliding-window rule, rope per layer, attention with soft-capping and sinks, the
 * mixture-of-experts FFN.
 */
#ifndef LOOM_LLM_GRAPH_H
#define LOOM_LLM_GRAPH_H

#include "model_internal.h"

/* The inputs of one batch. */
typedef struct llm_inputs {
    loom_tensor *tok, *pos, *outs; /* I32 [T], [T], [n_outputs] */
    loom_tensor *masks[LLM_KV_MAX_GROUPS]; /* one mask per cache group (llm_kv_layer_mask) */
    loom_tensor *mask, *mask_swa;  /* unused: kept so arch files read as before the merge */
    loom_tensor *attn_temp;        /* query temperature [1, 1, T] (NULL when off) */
    loom_tensor *seq;              /* recurrent models: each token's sequence, I32 [T] (else NULL) */
} llm_inputs;

/* Token ids, positions, output rows and masks (recorded in b->io when not NULL). */
void llm_graph_inputs(loom_model *m, loom_ctx *ctx, const llm_batch *b, llm_inputs *in);

/* Whether layer il is a sliding-window layer (llama.cpp's set_swa_pattern: with period
 * p, layers il % p < p - 1 slide; p = 0 or 1 is read as "every layer"). */
bool llm_layer_is_swa(const llm_hparams_x *hx, int il);
/* Whether layer il is a chunked-attention layer (llama4: the sliding pattern's layers
 * with hx->n_chunk > 0). */
bool llm_layer_is_chunked(const llm_hparams_x *hx, int il);
/* Whether the query at position pq may not see the key at position pk because of the
 * window (the one place the window rule lives: llama.cpp's LLAMA_SWA_TYPE_STANDARD). */
static inline bool llm_swa_masked(int n_swa, int64_t pq, int64_t pk) { return pq - pk >= n_swa; }

loom_tensor *llm_named(loom_tensor *t, const char *what, int il);
/* dims [off, off + n) of each head of x [d_all, H, T] as [n, H, T] (a strided view) */
loom_tensor *llm_head_part(loom_ctx *ctx, loom_tensor *x, int64_t off, int64_t n);
/* y = W x (+ b) */
loom_tensor *llm_linear(loom_ctx *ctx, loom_tensor *w, loom_tensor *b, loom_tensor *x);
/* The llama attention inputs of x [n_embd, T]: q [Dk, H, T], k [Dk, Hkv, T], v [Dv, Hkv, T]
 * (W x (+ b) each), q and k rms-normed per head when the layer has q_norm / k_norm. */
void llm_llama_qkv(loom_ctx *ctx, const loom_model_hparams *hp, const llm_layer *ly, loom_tensor *x, int64_t T, int il,
                   loom_tensor **q, loom_tensor **k, loom_tensor **v);
/* q [Dk, H, T], k [Dk, Hkv, T], v [Dv, Hkv, T] of x [n_embd, T] from a fused wqkv
 * (+ bqkv; rows q | k | v) or from wq / wk / wv (+ biases), as the layer has them. */
void llm_qkv_any(loom_ctx *ctx, const loom_model_hparams *hp, const llm_layer *ly, loom_tensor *x, int64_t T,
                 loom_tensor **q, loom_tensor **k, loom_tensor **v);
/* The same with the projections clamped to [-clamp, clamp] before the split (llama.cpp's
 * attention.clamp_kqv; 0: none). */
void llm_qkv_clamped(loom_ctx *ctx, const loom_model_hparams *hp, const llm_layer *ly, loom_tensor *x, int64_t T,
                     float clamp, loom_tensor **q, loom_tensor **k, loom_tensor **v);
/* The llama block after attention x (residual r): on the last layer only the rows outs of
 * x and r; h = x + r; returns h + Wdown (silu(Wgate n) * (Wup n)), n = rms_norm(h) * ffn_norm
 * (a layer with a router: the mixture of experts on n, softmax, top-k renormalised). */
/* The dense SwiGLU MLP: Wdown (silu(Wgate x) * (Wup x)) */
/* min(silu(gate), limit) * clamp(up, -limit, limit); limit <= 0: silu(gate) * up */
loom_tensor *llm_swiglu_limited(loom_ctx *ctx, loom_tensor *gate, loom_tensor *up, float limit);
loom_tensor *llm_swiglu_mlp(loom_ctx *ctx, loom_tensor *gate, loom_tensor *up, loom_tensor *down, loom_tensor *x);
/* situ(gate, up) = b tanh(gate / b) sigmoid(gate) * (lb > 0 ? lb tanh(up / lb) : up) (Kimi K3) */
loom_tensor *llm_situ(loom_ctx *ctx, loom_tensor *gate, loom_tensor *up, float b, float lb);

loom_tensor *llm_llama_ffn(loom_ctx *ctx, const loom_model *m, const llm_layer *ly, loom_tensor *x, loom_tensor *r,
                           loom_tensor *outs, int il);
/* logits = Woutput (rms_norm(h) * output_norm) (+ output bias), named result_norm / result_output. */
/* the llama block's norm: rms_norm(x) * w, or (orion: hx.ln_norms) layer_norm(x) * w + b */
loom_tensor *llm_llama_norm(const loom_model *m, loom_ctx *ctx, loom_tensor *x, loom_tensor *w, loom_tensor *b);
loom_tensor *llm_llama_output(const loom_model *m, loom_ctx *ctx, loom_tensor *h);
/* cap * tanh(x / cap) */
loom_tensor *llm_softcap(loom_ctx *ctx, loom_tensor *x, float cap);
/* rope of x [D, heads, T] for layer il: sliding layers use rope.freq_base_swa without
 * scaling; YaRN and the rope attention factor as llama.cpp derives them; factors NULL:
 * the multi-section factors when the model has them. */
loom_tensor *llm_rope(const loom_model *m, loom_ctx *ctx, loom_tensor *x, loom_tensor *pos, int il,
                      loom_tensor *factors);
/* The rope magnitude factor llm_rope passes (llama.cpp's cparams.yarn_attn_factor). */
float llm_rope_attn_factor(const loom_model *m);
/* llm_rope's options, base and frequency scale for layer il. */
void llm_rope_layer(const loom_model *m, int il, loom_tensor *factors, loom_rope_opts *ro, float *base, float *scale);
/* Whether layer il's keys are rotated at all (cohere2's full layers and smollm3's
 * every fourth layer are not). */
bool llm_layer_has_rope(const loom_model *m, int il);
/* The frequency factors of layer il's rope: rope_freqs, phi3's long/short set, or the
 * multi-section factors (made in ctx's input context). */
loom_tensor *llm_layer_rope_factors(const loom_model *m, loom_ctx *ctx, int il);
/* Multi-section rope (qwen2vl / qwen3vl) of text tokens as neox rope with frequency
 * factors: ff[i] (n_rot / 2 of them) 1 where pair i turns, infinity where it does not. */
void llm_mrope_fill(const llm_hparams_x *hx, int n_rot, float *ff);
/* Those factors as an F32 [n_rot / 2] input of ctx; NULL when the model has none. */
loom_tensor *llm_mrope_factors(const loom_model *m, loom_ctx *ctx);
/* Layer il's rotary dims (gemma4's sliding layers have their own; else hp.n_rot). */
int llm_layer_n_rot(const loom_model *m, int il);
/* Where the rotated dims start in layer il's cached key (deepseek2: after the others;
 * else 0). */
int llm_rope_key_offset(const loom_model *m, int il);

/* Whether layer il's recurrent state update runs in place (loom_*_inplace): a real cache
 * (not a dry run) on the CPU, where the state ops run. Else the op's result carries every
 * slot's new state and a copy writes them back. */
bool llm_rs_in_place(const loom_model *m, int il);

/* Past the last layer's attention only the output rows go on: on that layer x and r
 * become their rows in->outs (elsewhere unchanged). */
void llm_last_rows(loom_ctx *ctx, const loom_model *m, const llm_inputs *in, int il, loom_tensor **x, loom_tensor **r);

/* Attention of layer il: stores k [Dk, Hkv, T] and v [Dv, Hkv, T] in the cache, reads the
 * L visible cells and returns [Dv*H, T]. softcap > 0 caps the scaled scores; sinks
 * (F32 [H]) joins the softmax normaliser. mask: in->mask or in->mask_swa. */
loom_tensor *llm_attention(loom_model *m, loom_ctx *ctx, const llm_batch *b, const llm_inputs *in, int il,
                           loom_tensor *q, loom_tensor *k, loom_tensor *v, loom_tensor *mask, float kq_scale,
                           float softcap, loom_tensor *sinks);

typedef enum llm_moe_gating {
    LLM_MOE_SOFTMAX,      /* softmax over all experts, then top-k (qwen3moe) */
    LLM_MOE_TOPK_SOFTMAX, /* top-k of the router logits, softmax over the k (gpt-oss) */
    LLM_MOE_SIGMOID,      /* sigmoid of each router logit, then top-k (DeepSeek V3) */
    LLM_MOE_LLAMA4        /* top-k of the logits; sigmoid weights scale each expert's input */
} llm_moe_gating;

/* Mixture of experts on x [E, T]: the router (ffn_gate_inp, + bias), top-k experts per
 * token (chosen on the probabilities + ly->ffn_exp_probs_b when the layer has that
 * selection bias; weighted by the unbiased ones), each expert's gated FFN through
 * MulmatID (+ per-expert biases), weighted sum. norm_w: weights divided by their sum;
 * w_scale (0 or 1: none) multiplies them after. swiglu_limit > 0: gpt-oss's clamped
 * SwiGLU (alpha 1.702), else silu(gate) * up (experts without ffn_gate_exps:
 * relu(up)^2). As llama.cpp's build_moe_ffn. */
loom_tensor *llm_moe_ffn_ext(loom_ctx *ctx, const llm_layer *ly, loom_tensor *x, int n_expert, int n_used,
                             llm_moe_gating gating, bool norm_w, float w_scale, float swiglu_limit, int il);
/* The same with every option: router_in (NULL: x) is what the router reads (smallthinker:
 * the layer's input before its attention norm); reglu: experts relu(gate) * up. */
typedef struct llm_moe_opts {
    llm_moe_gating gating;
    bool norm_w;
    float w_scale, swiglu_limit;
    loom_tensor *router_in;
    bool reglu;
    float silu_limit; /* step35: min(silu(gate), limit) * clamp(up, -limit, limit) (0: none) */
    bool geglu;       /* grok: gelu(gate) * up, gelu(up) without ffn_gate_exps (llama.cpp's F16 table) */
    bool situ;        /* kimi-k3: b tanh(gate / b) sigmoid(gate) * (lb > 0 ? lb tanh(up / lb) : up) */
    float situ_beta, situ_lb;
    /* grovemoe (llama.cpp's build_moe_ffn for it): choose_sigmoid: the top-k is taken on
     * sigmoid(logits) (the weights stay the gating's probabilities); sel_map (host,
     * [n_expert]): each chosen expert id is replaced by sel_map[id] before its weight is
     * read and the experts' matrices are indexed */
    bool choose_sigmoid;
    const int32_t *sel_map;
} llm_moe_opts;
loom_tensor *llm_moe_ffn_opts(loom_ctx *ctx, const llm_layer *ly, loom_tensor *x, int n_expert, int n_used,
                              const llm_moe_opts *o, int il);
loom_tensor *llm_moe_ffn(loom_ctx *ctx, const llm_layer *ly, loom_tensor *x, int n_expert, int n_used,
                         llm_moe_gating gating, bool norm_w, float swiglu_limit, int il);

#endif
