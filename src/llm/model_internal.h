/*
 * model_internal.h (internal) - the model object shared by model.c, llama.c,
 * kvcache.c and generate.c. Not part of the public API.
 */
#ifndef LOOM_LLM_MODEL_INTERNAL_H
#define LOOM_LLM_MODEL_INTERNAL_H

#include <stdatomic.h>

#include "loom_model.h"

/* Weights of one repeating layer (borrowed from the backend; NULL = absent). */
typedef struct llm_layer {
    loom_tensor *attn_norm;
    loom_tensor *wq, *wk, *wv, *wo;
    loom_tensor *bq, *bk, *bv, *bo;   /* optional biases */
    loom_tensor *q_norm, *k_norm;     /* qwen3 */
    loom_tensor *q_norm_b, *k_norm_b; /* mpt: LayerNorms of all of q / k (weights q_norm / k_norm) */
    loom_tensor *ffn_act;             /* mpt: AWQ activation scales, the MLP's activation / ffn_act */
    loom_tensor *attn_gate;           /* afmoe: sigmoid(Wgate x) gates the attention output before Wo */
    loom_tensor *ffn_norm_exps;       /* arctic: the experts' own norm (of the layer input) */
    loom_tensor *q_norm_post, *k_norm_post; /* hunyuan: the same per-head norms after rope */
    loom_tensor *attn_sub_norm, *ffn_sub_norm; /* bitnet: norms before Wo and before Wdown */
    bool xielu_on;                    /* apertus: the MLP is Wdown xielu(Wup x) with these */
    float xielu[4];                   /* alpha_n, alpha_p, beta, eps (as the file stores them) */
    loom_tensor *rope_freqs;          /* optional */
    loom_tensor *ffn_norm;
    loom_tensor *ffn_gate, *ffn_up, *ffn_down;
    /* other architectures (arch_*.c) */
    loom_tensor *wqkv, *bqkv;                   /* phi3: fused q|k|v rows */
    loom_tensor *attn_post_norm, *ffn_post_norm; /* gemma2/3 */
    loom_tensor *rope_long, *rope_short;        /* phi3 LongRoPE (per-layer copies) */
    loom_tensor *sinks;                         /* gpt-oss attention sinks [n_head] */
    loom_tensor *ffn_gate_inp, *ffn_gate_inp_b; /* MoE router [E, n_expert] */
    loom_tensor *ffn_gate_exps, *ffn_up_exps, *ffn_down_exps;   /* [.., .., n_expert] */
    loom_tensor *ffn_gate_exps_b, *ffn_up_exps_b, *ffn_down_exps_b;
    loom_tensor *attn_norm_b, *ffn_norm_b, *ffn_up_b, *ffn_down_b; /* LayerNorm / MLP biases (phi2, starcoder2) */
    loom_tensor *ffn_gate_b;                                        /* falcon_h1's optional gate bias */
    loom_tensor *attn_norm_2, *attn_norm_2_b;                       /* Falcon-40B: attention's own LayerNorm */
    /* deepseek2 (multi-head latent attention, shared experts) */
    loom_tensor *wq_a, *q_a_norm, *wq_b, *wkv_a_mqa, *kv_a_norm, *wk_b, *wv_b, *wkv_b;
    loom_tensor *ffn_exp_probs_b;                        /* expert selection bias [n_expert] */
    loom_tensor *ffn_gate_shexp, *ffn_up_shexp, *ffn_down_shexp;
    loom_tensor *ffn_gate_inp_shexp;                     /* qwen2moe: the shared expert's gate [n_embd] */
    /* gemma4: per-layer input (gate, projection, norm), output scale, layer shapes */
    loom_tensor *pl_inp_gate, *pl_proj, *pl_post_norm, *out_scale;
    /* gemma4 experts beside the MLP: router input scale, norms, fused gate|up */
    loom_tensor *ffn_gate_inp_s, *ffn_pre_norm_2, *ffn_post_norm_1, *ffn_post_norm_2, *ffn_gate_up_exps;
    /* gemma3n: AltUp (predict / correct coefficients, router), LAuReL */
    loom_tensor *altup_correct_coef, *altup_correct_scale, *altup_predict_coef, *altup_router, *altup_router_norm;
    loom_tensor *laurel_l, *laurel_r, *laurel_post_norm;
    /* qwen35 gated delta net: z gate, conv kernel, dt bias, A, beta / alpha projections, norm, out;
     * qwen3next: beta | alpha fused per key head (ssm_ba), or q, k, v, z per key head (ssm_in,
     * older files) in place of wqkv and ssm_z */
    loom_tensor *ssm_z, *ssm_conv, *ssm_dt, *ssm_a, *ssm_beta, *ssm_alpha, *ssm_norm, *ssm_out, *ssm_ba, *ssm_in;
    /* Kimi's KDA (arch_kimi.c): the k / v convolutions (ssm_conv: q's), decay and output-gate LoRAs */
    loom_tensor *ssm_conv_k, *ssm_conv_v, *ssm_f_a, *ssm_f_b, *ssm_g_a, *ssm_g_b;
    /* deepseek32: the lightning indexer (q from the q LoRA latent, k with a LayerNorm, head weights) */
    loom_tensor *idx_wq_b, *idx_wk, *idx_k_norm, *idx_k_norm_b, *idx_proj;
    /* kimi-k3: cross-layer residual scores, the latent experts' projections and norm */
    loom_tensor *attn_res_score, *ffn_res_score, *ffn_routed_down, *ffn_routed_up, *ffn_routed_norm;
    /* Mamba-2 (with ssm_in, ssm_conv, ssm_dt, ssm_a, ssm_norm, ssm_out): conv bias, skip D */
    loom_tensor *ssm_conv_b, *ssm_d;
    /* Mamba-1 (ssm_dt is then the dt projection): x projection to dt | B | C, dt bias,
     * optional RMS norm weights of dt, B and C (Jamba) */
    loom_tensor *ssm_x, *ssm_dt_b, *ssm_dt_norm, *ssm_b_norm, *ssm_c_norm;
    /* RWKV-7 (arch_rwkv.c): time mix (decay, in-context learning rate, value-residual and
     * gate LoRAs w/a/v/g 0-1-2, the six fused lerps, k_k, k_a, r_k, projections, group
     * norm, output) and channel mix (lerp, key, value) */
    struct {
        loom_tensor *w0, *w1, *w2, *a0, *a1, *a2, *v0, *v1, *v2, *g1, *g2, *lerp, *k_k, *k_a, *r_k;
        loom_tensor *key, *value, *recept, *ln, *ln_b, *out, *cm_lerp_k, *cm_key, *cm_value;
        /* RWKV-6: the data-dependent lerp (lerp_x, w1 [E, 5 D5], w2 [D5, E, 5], lerp fused
         * [E, 1, 1, 5] or the five separate lerp5 w, k, v, r, g), bonus first [D, H],
         * decay and its LoRA, gate; channel mix receptance and its lerp */
        loom_tensor *lerp_x, *lerp5[5], *first, *decay, *decay_w1, *decay_w2, *gate, *cm_lerp_r, *cm_recept;
    } rwkv;
    int n_head, n_head_kv, n_ff, head_dim, n_rot; /* this layer's (0: the model's) */
    float clamp_exp, clamp_shexp; /* step35: SwiGLU limits of the experts / the other MLPs (0: none) */
    /* grouped expert routing (expert_group_count > 1): the router first keeps the
     * n_groups_used groups of experts with the best two scores each (llm_moe_ffn_ext);
     * group_eye: the host identity [n_groups x n_groups] it picks rows from */
    int n_groups, n_groups_used;
    const float *group_eye;
    /* grovemoe: the adjugate ("chunk") experts, one per group of experts [.., .., n_chunk] */
    loom_tensor *ffn_gate_chexps, *ffn_up_chexps, *ffn_down_chexps;
} llm_layer;

/* ---- KV cache (contract §7): cells with a position and a set of sequence ids.
 *
 * Layer types. Model code sets m->kv_types[il] (calloc'd [n_layer] next to m->layers;
 * all zero = full causal attention) before llm_kv_init:
 *   window W > 0: sliding window, a token at position p sees cached positions q with
 *                 q >= p - W (contract §7.5: masked iff q < p - W; llama.cpp's n_swa
 *                 counts the token itself: W = n_swa - 1 gives its masks);
 *   chunk C > 0:  chunked attention (masked iff q < p - p % C).
 * Layers of one (window, chunk) type share a cell group (at most LLM_KV_MAX_GROUPS);
 * a sliding-window group keeps window + n_batch cells per sequence (older cells of a
 * sequence are dropped after each decode), other groups n_seq_max * n_ctx cells.
 *
 * Graph building, every call per layer index (llama.c):
 *   loom_tensor *masks[LLM_KV_MAX_GROUPS];
 *   llm_kv_build_masks(ctx, kv, reserve, masks, io);          once per graph
 *   llm_kv_put(ctx, kv, il, k_cur, v_cur, store);              this batch's K/V
 *   llm_kv_get(ctx, kv, il, &K, &V);                          the visible cells
 *   mask = llm_kv_layer_mask(kv, masks, il);                  that layer's mask
 * llm_kv_prepare (generate.c) places a batch (a slot per group, mask ranges) first. */
#define LLM_KV_MAX_GROUPS 2

typedef struct llm_kv_layer_type {
    int32_t window; /* 0 = full history */
    int32_t chunk;  /* 0 = no chunks */
    /* not part of the type (groups): this layer's K/V shape, 0 = the model's head_dim_k,
     * head_dim_v, n_head_kv; share > 0: the layer reads layer share - 1's cache (same
     * type) and has none of its own (gemma4's shared KV layers) */
    int32_t dk, dv, hkv, share;
    /* rs_conv, rs_ssm > 0: a recurrent layer (qwen35's gated delta net) with no K/V:
     * floats of its convolution and delta-rule states per sequence slot */
    int32_t rs_conv, rs_ssm;
    /* nokv: a layer that keeps nothing per token (nemotron_h's MLP-only layers);
     * attn with rs_*: a layer with both states and K/V (falcon_h1's parallel blocks) */
    int32_t nokv, attn;
    /* kdsa > 0: the last kdsa dims of each K row are a DSA indexer key (deepseek32, glm-dsa,
     * dots3note), not read by the attention; a shift turns its first n_rot dims too */
    int32_t kdsa;
    /* vlat: V holds the first dv dims of each K row (MLA's latent, stored once more):
     * a quantized cache turns V with K's blocks, as llama.cpp's view of its turned K */
    int32_t vlat;
} llm_kv_layer_type;

/* Host metadata of one cell group (pure data, kvcells.c; no backend needed). */
typedef struct llm_kv_cells {
    int64_t n;         /* cells */
    int64_t pad;       /* cache padding (mask ranges are rounded to it) */
    int n_seq;         /* sequence ids 0..n_seq-1 */
    int nw;            /* 64-bit words of a cell's sequence set */
    int32_t window, chunk;
    bool alibi;        /* ALiBi: a visible key's mask value is -|p - q| (else 0) */
    int32_t *pos;      /* [n] position, -1 = empty */
    int32_t *tok;      /* [n] token id of the cell (prefix reuse) */
    uint64_t *seq;     /* [n * nw] sequence sets */
    int64_t used;      /* non-empty cells */
    /* placement of the current batch (llm_kv_cells_place) */
    int64_t loc;       /* first of T contiguous cells the batch writes */
    int64_t start, L;  /* visible range [start, start + L) */
} llm_kv_cells;

loom_status llm_kv_cells_init(llm_kv_cells *c, int64_t n, int n_seq, int64_t pad, int32_t window,
                              int32_t chunk, loom_error *err);
void llm_kv_cells_free(llm_kv_cells *c);
void llm_kv_cells_clear(llm_kv_cells *c);
static inline bool llm_kv_cell_has(const llm_kv_cells *c, int64_t i, int s) {
    return (c->seq[i * c->nw + (s >> 6)] >> (s & 63)) & 1u;
}
bool llm_kv_cell_empty(const llm_kv_cells *c, int64_t i);
/* Largest / smallest position of seq s (-1 when none); tokens of s. */
int32_t llm_kv_cells_pos_max(const llm_kv_cells *c, int s);
int32_t llm_kv_cells_pos_min(const llm_kv_cells *c, int s);
int64_t llm_kv_cells_count(const llm_kv_cells *c, int s);
/* One pass for the sequences in want (bitset of nw words): pos_max[s] (-1 when none)
 * and count[s] for each of them (entries of other sequences untouched). */
void llm_kv_cells_seq_stats(const llm_kv_cells *c, const uint64_t *want, int32_t *pos_max, int32_t *count);
/* First cell of T contiguous free cells, or -1. */
int64_t llm_kv_cells_find(const llm_kv_cells *c, int64_t T);
/* Write the batch's rows into cells [loc, loc+T) (positions and sequence sets). */
void llm_kv_cells_apply(llm_kv_cells *c, const loom_batch *b, int64_t loc);
/* Undo llm_kv_cells_apply (the cells become empty). */
void llm_kv_cells_unapply(llm_kv_cells *c, int64_t loc, int64_t T);
/* Visible range for batch b placed at loc: min..max cells holding any of the batch's
 * sequences (and the batch's own cells), min rounded down and max + 1 up to pad. */
void llm_kv_cells_range(const llm_kv_cells *c, const loom_batch *b, int64_t loc, int64_t *start,
                        int64_t *L);
/* Mask [L, tpad] (row i = batch row i; rows >= T are padding, all -inf) of a batch
 * already applied, visible range [start, start + L). */
void llm_kv_cells_mask(const llm_kv_cells *c, const loom_batch *b, int64_t start, int64_t L,
                       int64_t tpad, float *out);
/* Sequence edits (metadata only). */
void llm_kv_cells_seq_remove(llm_kv_cells *c, int s, int32_t p0, int32_t p1);
void llm_kv_cells_seq_copy(llm_kv_cells *c, int src, int dst, int32_t p0, int32_t p1);
void llm_kv_cells_seq_keep(llm_kv_cells *c, int s);
/* Sliding window: drop the cells of s that no later token of s can see (positions
 * below pos_max(s) + 1 - window). */
void llm_kv_cells_seq_evict(llm_kv_cells *c, int s);
/* Compaction plan: moves (src[i] -> dst[i], i < *n_moves) that leave the used cells
 * contiguous from 0 in their order. src/dst need c->n entries. Metadata is not changed
 * (llm_kv_cells_move does it). */
void llm_kv_cells_compact_plan(const llm_kv_cells *c, int64_t *src, int64_t *dst, int64_t *n_moves);
void llm_kv_cells_move(llm_kv_cells *c, const int64_t *src, const int64_t *dst, int64_t n_moves);
/* Count the cells of s with positions in [p0, p1) (p1 < 0 = to the end). */
int64_t llm_kv_cells_count_range(const llm_kv_cells *c, int s, int32_t p0, int32_t p1);
void llm_kv_cell_set(llm_kv_cells *c, int64_t i, int s);
void llm_kv_cell_unset(llm_kv_cells *c, int64_t i, int s);

/* One group's tensors and metadata. */
typedef struct llm_kv_group {
    llm_kv_cells cells;
    int n_layers;           /* layers in the group (with a cache of their own) */
    int64_t dk, dv, hkv;    /* K/V shape of the group's layers (one per group) */
    float *mask;            /* host staging of the current mask (mask_cap floats) */
    size_t mask_cap;
} llm_kv_group;

#define LLM_KV_ROT_MIN 4   /* blocks below 64: kv_rotate = 1 only (tests) */
#define LLM_KV_ROT_MAX 512

typedef struct llm_kv_cache {
    loom_ctx *ctx;          /* long-lived context that owns K/V (Layer(i) => Cache[i]) */
    int n_layer;
    int n_seq, n_ctx, n_batch;
    loom_type type;
    int64_t dk, dv, hkv;    /* the model's; a layer's: ldk / ldv / lhkv (groups hold layers of one
                               window type, their K/V shapes may differ: deci's per-layer GQA) */
    int32_t *ldk, *ldv, *lhkv; /* [n_layer] each layer's K/V shape (0 for a layer without K/V) */
    loom_cache_config cfg;
    int n_groups;
    llm_kv_group grp[LLM_KV_MAX_GROUPS];
    int *layer_group;       /* [n_layer] */
    int *share;             /* [n_layer] layer whose K/V a layer uses (itself, or its source) */
    int n_recurrent;        /* recurrent layers (layer_group -1, no K/V): their states */
    loom_tensor **rs_conv, **rs_ssm; /* [n_layer] F32 [floats per slot, n_seq] or NULL */
    loom_tensor **k;        /* [n_layer] K [dk, hkv, cells of its group] */
    loom_tensor **v;        /* [n_layer] V [cells, dv, hkv] (permuted) or [dv, hkv, cells] */
    int64_t cells;          /* cells of the largest group */
    uint64_t epoch;         /* bumped whenever a graph moved or copied cells */
    /* Quantized caches (Q8_0 / Q4_0) store keys and values turned by an orthonormal
     * Walsh-Hadamard matrix H (H = H^T = H^-1), as llama.cpp does (attn_rot_k / _v):
     * scores and outputs are unchanged, (Hq).(Hk) = q.k and H sum p Hv = sum p v, while
     * the rotation spreads outlier channels over the block that is quantized. Per group,
     * 0 = none, else the block size: K the largest power of two >= 64 dividing a head
     * (at most LLM_KV_ROT_MAX), V 64; only where every layer of the group has the same
     * head width, a multiple of 64 (llm_kv_choose_rotation; loom_model_params.kv_rotate
 * -1 turns it off, 1 on for any cache type and heads whose width is a multiple of 4,
 * blocks from 4: tests, with F32 caches the logits must not move). */
    int rot_k[LLM_KV_MAX_GROUPS], rot_v[LLM_KV_MAX_GROUPS];
} llm_kv_cache;

/* Handles into a built graph to what changes from one decode step to the next, so
 * generate.c can compute the same graph again (no build, no plan) with new inputs. */
typedef struct llm_graph_io {
    loom_tensor *tok, *pos, *outs; /* input leafs */
    loom_tensor *mask[LLM_KV_MAX_GROUPS]; /* the F32 input leaf of each group's mask */
    loom_tensor **store;           /* [4 * n_layer]: per layer the K view, K copy, V view, V copy */
    loom_tensor *attn_temp;        /* the query temperature leaf [1, 1, T] (or NULL) */
    loom_tensor *seq;              /* recurrent models: each row's sequence I32 [T] (or NULL) */
} llm_graph_io;

/* What one forward graph evaluates. */
typedef struct llm_batch {
    int n_tokens;           /* T */
    const loom_batch *rows; /* token, position, sequences of each row (NULL in reserve mode) */
    int n_outputs;          /* rows whose logits are computed */
    const int32_t *out_ids; /* [n_outputs] indices into the batch (NULL in reserve mode) */
    bool reserve;           /* worst case: whole cache visible, inputs uninitialised */
    llm_graph_io *io;       /* filled by the builder when not NULL */
} llm_batch;

/* Hyperparameters beyond loom_model_hparams, for the architectures of arch_*.c (0 = off). */
typedef struct llm_hparams_x {
    int n_expert, n_expert_used, n_ff_exp;  /* MoE */
    /* grovemoe: experts per group (each group shares a chunk expert of n_ff_chexp), the
     * chunk branch's scale */
    int n_group_experts, n_ff_chexp;
    float expert_group_scale;
    /* deepseek2: leading dense layers, shared experts, router, latent attention */
    int n_dense_lead, n_expert_shared, q_lora, kv_lora, head_dim_k_mla, head_dim_v_mla;
    bool expert_weights_norm, mla;          /* mla: split attn_k_b / attn_v_b (absorbed) */
    float expert_weights_scale;
    int expert_gating;                      /* 0 softmax, 1 sigmoid */
    bool yarn_mscale_all;                   /* deepseek2: llama.cpp's mscale = mscale_all_dim rule */
    int n_ff_shexp;                         /* qwen2moe: shared expert width */
    int n_swa;               /* attention.sliding_window (0: no sliding layers) */
    int swa_period;          /* sliding layers: il % period < period - 1 (llama.cpp's rule) */
    float rope_base_swa;     /* rope.freq_base_swa (sliding layers) */
    float rope_scale_swa;    /* freq scale of sliding layers (1: no scaling) */
    float attn_softcap;      /* attn_logit_softcapping */
    float final_softcap;     /* final_logit_softcapping */
    float q_scale;           /* query scale before attention (then kq scale 1); 0: 1/sqrt(Dk) on kq */
    float embd_scale;        /* input embeddings * embd_scale (0: none) */
    int n_ctx_orig;          /* rope.scaling.original_context_length (0: n_ctx_train) */
    float rope_attn_factor;  /* rope.scaling.attn_factor (default 1) */
    bool yarn;               /* rope.scaling.type == yarn */
    float yarn_log_mul;      /* rope.scaling.yarn_log_multiplier (0: none) */
    float yarn_beta_fast, yarn_beta_slow;
    bool yarn_ext_set;       /* grok: rope.scaling.yarn_ext_factor given (else 1 with YaRN, 0 without) */
    float yarn_ext;          /* that ext factor; 0 keeps yarn_attn_key as the rope magnitude factor */
    float yarn_attn_key;     /* grok: rope.scaling.yarn_attn_factor (used only when yarn_ext_set and 0) */
    bool longrope;           /* phi3 rope_factors_long/short present */
    float attn_temp_scale;   /* mistral3 / llama4 query temperature (0: off) */
    int attn_temp_floor;     /* attention.temperature_length */
    float swiglu_limit;      /* gpt-oss clamped SwiGLU limit (0: plain SwiGLU) */
    float attn_value_scale;  /* mimo2: attention.value_scale (1: none) */
    float residual_scale;    /* granite: block outputs * residual_scale before the add (0: none) */
    float logit_scale;       /* granite: logits / logit_scale; command-r/cohere2: logits * logit_scale
                                (each as llama.cpp; 0: none) */
    float kq_scale;          /* granite attention.scale (0: 1/sqrt(Dk)) */
    float clamp_kqv;         /* olmo attention.clamp_kqv: q, k, v clamped to [-c, c] (0: none) */
    bool par_res;            /* gptneox use_parallel_residual */
    bool swin_norm;          /* chameleon: the RMS norms after the attention and the MLP */
    int loop_layers;         /* nanbeige num_loops > 1: the file's block_count layers, run
                                num_loops times (hp.n_layer = loop_layers * num_loops) */
    bool loop_norm;          /* ... with output_norm applied between the loops */
    bool ln_norms;           /* orion: the llama block's norms are LayerNorms with biases */
    bool swa_rope_plain;     /* mellum: sliding layers rotate without YaRN (ext factor 0, magnitude 1) */
    int no_rope_step;        /* smollm3: layers il with (il + 1) % step == 0 have no rope (0: none) */
    int mrope;               /* qwen2vl / qwen3vl multi-section rope: 0 none, 1 sections, 2 interleaved */
    bool swa_listed;         /* sliding layers given one by one (gemma4): swa_bits */
    uint64_t swa_bits[64];   /* bit il: layer il slides (LLM layers <= 4096) */
    uint64_t nope_bits[64];  /* bit il: layer il has no rope (granite_swa's attention.rope_pattern) */
    int n_embd_pl;           /* gemma4 embedding_length_per_layer_input (0: none) */
    int n_kv_from_start;     /* gemma4: layers >= this share an earlier layer's cache (n_layer: none) */
    int head_dim_swa, n_rot_swa; /* gemma4 sliding layers' head dim and rotary dims */
    int n_expert_groups, n_group_used; /* expert_group_count / _used_count (0: no groups) */
    int ssm_conv_k, ssm_dk, ssm_hv, ssm_hk; /* qwen35 delta net: conv kernel, head dim, value / key heads */
    int ssm_inner, ssm_n, ssm_g; /* Mamba-2: inner size, state size, groups (heads: ssm_hv) */
    int ssm_dt_rank;         /* Mamba-1: rank of the dt projection (inner, state: as Mamba-2's) */
    bool ssm_dt_b_c_rms;     /* Mamba-1 ssm.dt_b_c_rms (Falcon-Mamba): RMS norms of dt, B and C */
    int rwkv_head;           /* RWKV wkv.head_size (0: not RWKV) */
    int rwkv_lora[4];        /* RWKV-7 LoRA ranks: decay, iclr, value residual mix, gate; RWKV-6:
                                time_mix_extra_dim, time_decay_extra_dim */
    int rwkv_rescale;        /* RWKV-6 rescale_every_n_layers (0: none): h halves after those layers */
    int rwkv_kv_heads;       /* rwkv6qwen2: key / value heads (GQA; 0: as many as the heads) */
    int dsa_heads, dsa_dim, dsa_top_k; /* deepseek32 / glm-dsa indexer: heads, head width, keys kept (0: no DSA) */
    int dsa_rope_mode;       /* the indexer's rope (deepseek32 neox, glm-dsa normal) */
    int kv_lora_swa, head_dim_k_mla_swa, head_dim_v_mla_swa; /* dots3note's window layers' latent */
    uint64_t dsa_shared[64]; /* bit il: layer il reuses the previous indexer layer's keys (glm-dsa) */
    int n_expert_latent;     /* kimi-k3: experts run in this latent width (expert_latent_length; 0: n_embd) */
    int attn_res_bs;         /* kimi-k3 attn_res.block_size: cross-layer residual checkpoints (0: none) */
    float situ_beta, situ_lb; /* kimi-k3 situ activation: activation.situ_beta / situ_linear_beta */
    float kda_lower;         /* bailingmoe3: kda.gate_lower_bound (< 0): log decay = lower sigmoid(...) */
    bool rope_off;           /* granite rope.scaling.finetuned false: no layer rotates (NoPE) */
    int max_pos;             /* gpt2, starcoder: learned positions 0..max_pos-1 (0: no limit) */
    uint64_t recr_bits[64];  /* bit il: layer il is recurrent */
    int rope_sections[4];    /* rope.dimension_sections (t, h, w, e pairs) */
    int n_chunk;             /* llama4 chunked attention: chunk size of the swa_period layers (0: none) */
    float attn_temp_offset;  /* llama4: temperature of floor((pos + offset) / floor) */
    int moe_step;            /* llama4 interleave_moe_layer_step */
    bool qk_l2;              /* llama4: weightless RMS norm of q and k after rope */
    float alibi_bias;        /* ALiBi max_bias (bloom, mpt, jais, refact, Baichuan 13B; 0: none): the
                                masks carry -|distance|, each head adds slope(h) times it */
} llm_hparams_x;

struct llm_arch;

struct loom_model {
    loom_backend *be;
    loom_model_hparams hp;
    int n_ctx, n_batch;
    bool dry_run;

    loom_tensor *tok_embd, *output_norm, *output;
    loom_tensor *output_norm_b, *output_b; /* phi2, starcoder2 (NULL elsewhere) */
    loom_tensor *output_res_score;         /* kimi-k3: the final cross-layer residual mix's scores */
    loom_tensor *pos_embd;                 /* gpt2, starcoder: learned positions [E, rows] */
    loom_tensor *pl_tok_embd, *pl_model_proj, *pl_proj_norm; /* gemma3n / gemma4 per-layer inputs */
    loom_tensor *altup_proj, *altup_unembd_proj;             /* gemma3n [E, E, n_altup - 1] */
    llm_layer *layers;

    llm_kv_layer_type *kv_types; /* [n_layer] attention type of each layer (see above) */
    llm_kv_cache kv;
    int n_seq_max;
    bool ctx_shift;
    int32_t n_keep;

    /* host scratch (grown rarely; decode steps reuse it) */
    int32_t *out_ids;       /* [n_batch] */
    int32_t *row_out;       /* [n_batch] batch row -> logits row of the last decode, -1 */
    int32_t n_rows;         /* rows of the last successful loom_model_decode, 0 = none */
    loom_batch eb;          /* loom_model_eval's rows (capacity n_batch, one sequence) */
    float *logits;          /* logits_cap floats */
    size_t logits_cap;
    int n_logits;

    loom_tokenizer *tok;    /* built on first loom_model_tokenizer */

    loom_eval_cb eval_cb;
    void *eval_user;
    atomic_bool cancel;

    /* The last single-token decode graph, kept for the next step while the visible
     * history L stays the same (generate.c); ctx NULL when there is none. */
    struct {
        loom_ctx *ctx;
        loom_tensor *logits;
        int64_t T, n_out, start[LLM_KV_MAX_GROUPS], L[LLM_KV_MAX_GROUPS];
        llm_graph_io io; /* io.store allocated at open */
    } dec;

    /* architecture (arch.c) and its extra hyperparameters */
    const struct llm_arch *arch;
    llm_hparams_x hx;
    float *attn_temp;       /* host scratch of the query temperatures (n_batch floats) */
    float *group_eye;       /* identity [n_expert_groups^2] for grouped routing, or NULL */
    int32_t *chunk_map;     /* grovemoe: expert -> its group's chunk expert [n_expert], or NULL */
    float *shift_kernel;    /* RWKV token shift: ssm_conv taps (1, 0) per channel [2, n_embd], or NULL */
    loom_tensor *tok_norm, *tok_norm_b; /* RWKV: LayerNorm of the embeddings (token_embd_norm) */
    int32_t *seq_host;      /* recurrent models: host scratch of each row's sequence (n_batch) */
    float *mrope_ff;        /* multi-section rope of text tokens as frequency factors (n_rot / 2
                               floats, llm_mrope_fill) or NULL */
};

/* An architecture: name, rope mode, its extra keys, weight binding and graph. */
typedef struct llm_arch {
    const char *name;
    loom_rope_mode rope_mode;
    /* extra keys after the common ones (NULL: none) */
    loom_status (*hparams)(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
    loom_status (*bind)(loom_model *m, loom_error *err);
    loom_tensor *(*build)(loom_model *m, loom_ctx *ctx, const llm_batch *b);
    /* recurrent layers only (Mamba): attention.head_count and feed_forward_length may be
     * 0 or absent; hp's head fields then hold 1 and are unused */
    bool no_attn;
} llm_arch;

/* arch.c: the architecture called name, or NULL; the supported names for messages. */
const llm_arch *llm_arch_find(const char *name);
const char *llm_arch_names(void);
int llm_arch_count(void);

/* model.c key and tensor helpers for arch_*.c. Keys are "<arch>.<key>". */
loom_status llm_get_int_key(const loom_gguf *g, const char *arch, const char *key, bool required,
                            int64_t def, int64_t *out, loom_error *err);
/* Element il of a per-layer integer array key (n_layer values), or the key's single
 * value, or def when absent. */
loom_status llm_get_layer_int(const loom_gguf *g, const char *arch, const char *key, int il, int n_layer, int64_t def,
                              int64_t *out, loom_error *err);
loom_status llm_get_float_key(const loom_gguf *g, const char *arch, const char *key, double def,
                              double *out, bool *present, loom_error *err);
/* The tensor name (printf fmt with the layer il) of shape [ne0, ne1, ne2] (ne2 = 1 for 2-D),
 * NULL when absent and not required; *st set (once) on a missing or misshapen tensor. */
loom_tensor *llm_bind_tensor(const loom_backend *be, bool required, int64_t ne0, int64_t ne1, int64_t ne2,
                             loom_error *err, loom_status *st, const char *fmt, int il);
/* Sets hp->n_vocab from token_embd.weight and binds tok_embd, output_norm and output
 * (the first error, naming the tensor, is returned). */
loom_status llm_bind_embd_output(loom_model *m, loom_error *err);
/* The same with the final norm named norm_name (lfm2: "token_embd_norm.weight"; NULL:
 * none, olmo's norm has no weights). */
loom_status llm_bind_embd_output_norm(loom_model *m, const char *norm_name, loom_error *err);
/* Layer il's attn_q/k/v.weight ([n_embd, n_head * head_dim_k], [n_embd, n_head_kv * head_dim_k],
 * [n_embd, n_head_kv * head_dim_v]), required; llm_bind_attn: attn_norm.weight, those and
 * attn_output.weight; llm_bind_qk_norm: attn_q/k_norm.weight [head_dim_k]. Errors as llm_bind_tensor. */
void llm_bind_attn_qkv(const loom_backend *be, const loom_model_hparams *hp, llm_layer *L, int il, loom_error *err,
                       loom_status *st);
/* Layer il's attention weights as the file has them: a fused attn_qkv.weight
 * [n_embd, q + k + v rows] (+ optional attn_qkv.bias), or attn_q/k/v.weight with
 * optional biases; then attn_output.weight and its bias (required when bo_required).
 * Errors as llm_bind_tensor. */
void llm_bind_attn_any(const loom_backend *be, const loom_model_hparams *hp, llm_layer *L, int il, bool bo_required,
                       loom_error *err, loom_status *st);
/* Only its q|k|v part: attn_qkv (+ optional bias), else attn_q/k/v (+ optional biases), as
 * llama.cpp's create_tensor_qkv. */
void llm_bind_qkv_any(const loom_backend *be, const loom_model_hparams *hp, llm_layer *L, int il, loom_error *err,
                      loom_status *st);
void llm_bind_attn(const loom_backend *be, const loom_model_hparams *hp, llm_layer *L, int il, loom_error *err,
                   loom_status *st);
/* Layer il's router [E, NE] and experts ffn_{gate,up}_exps [E, FE, NE], ffn_down_exps
 * [FE, E, NE] (all required). */
void llm_bind_experts(const loom_backend *be, llm_layer *L, int il, int64_t E, int64_t FE, int64_t NE, loom_error *err,
                      loom_status *st);
/* The same, or gate and up fused per expert in ffn_gate_up_exps [E, 2 FE, NE] (gate rows
 * first; llama.cpp's create_tensor_gate_up_exps) when the file has it; builds must go
 * through llm_moe_ffn_opts, which reads either. */
void llm_bind_experts_fusable(const loom_backend *be, llm_layer *L, int il, int64_t E, int64_t FE, int64_t NE,
                              loom_error *err, loom_status *st);
/* Layer il's shared expert ffn_{gate,up}_shexp [E, FS], ffn_down_shexp [FS, E] (required). */
void llm_bind_shared_expert(const loom_backend *be, llm_layer *L, int il, int64_t E, int64_t FS, loom_error *err,
                            loom_status *st);
/* Llama-3 rope frequency factors blk.N.rope_freqs.weight (optional; F32 [>= n_rot / 2])
 * into L->rope_freqs, setting hp->has_rope_freqs. */
void llm_bind_rope_freqs(const loom_backend *be, loom_model_hparams *hp, llm_layer *L, int il, loom_error *err,
                         loom_status *st);
/* LongRoPE: rope_factors_long / _short.weight [n_rot / 2] (both or neither, F32) into
 * L->rope_long / rope_short. */
void llm_bind_longrope(const loom_backend *be, const loom_model_hparams *hp, llm_layer *L, int il, loom_error *err,
                       loom_status *st);
void llm_bind_qk_norm(const loom_backend *be, const loom_model_hparams *hp, llm_layer *L, int il, bool required,
                      loom_error *err, loom_status *st);
/* Whether name is "blk.<N>.<one of the n names>" (N decimal digits). */
bool llm_blk_tensor_in(const char *name, const char *const *names, size_t n);
/* llm_graph.c: query temperatures of the T positions pos into host (mistral3). */
void llm_attn_temp_fill(const loom_model *m, const int32_t *pos, int T, float *host);
/* The llama family's weights (llama.c). */
loom_status llm_bind_llama(loom_model *m, loom_error *err);

/* kvcache.c */
/* n_ctx tokens per sequence, n_seq sequences, batches up to n_batch; types [n_layer]
 * (NULL = all full). */
/* Layer il's K/V shape: key width, value width, KV heads. */
/* The backend layer (device placement, memory accounting) of graph layer il: the file's
 * block il, or for looped files (hx.loop_layers) the block whose weights layer il runs:
 * its cache lives beside them. */
static inline int llm_dev_layer(const loom_backend *be, int il) {
    const int nb = loom_backend_block_count(be);
    return nb > 0 && il >= nb ? il % nb : il;
}

/* x turned by the Hadamard matrix of size n (loom_hadamard; 0: x itself), per n
 * consecutive elements (n divides a head: each head turned alone); x F32 (the shift
 * reads quantized or turned keys back as F32 rows), any strides, the result contiguous. */
loom_tensor *llm_kv_rotate(loom_ctx *ctx, int n, loom_tensor *x);
/* ... with layer il's K rotation (queries and keys) / V rotation (values, and the
 * attention output turned back) */
static inline int llm_kv_rot_k_size(const llm_kv_cache *kv, int il) {
    return il >= 0 && il < kv->n_layer && kv->layer_group && kv->layer_group[il] >= 0 ? kv->rot_k[kv->layer_group[il]] : 0;
}
static inline int llm_kv_rot_v_size(const llm_kv_cache *kv, int il) {
    return il >= 0 && il < kv->n_layer && kv->layer_group && kv->layer_group[il] >= 0 ? kv->rot_v[kv->layer_group[il]] : 0;
}
static inline loom_tensor *llm_kv_rot_k(loom_ctx *ctx, const llm_kv_cache *kv, int il, loom_tensor *x) {
    return llm_kv_rotate(ctx, llm_kv_rot_k_size(kv, il), x);
}
static inline loom_tensor *llm_kv_rot_v(loom_ctx *ctx, const llm_kv_cache *kv, int il, loom_tensor *x) {
    return llm_kv_rotate(ctx, llm_kv_rot_v_size(kv, il), x);
}

static inline void llm_kv_layer_dims(const llm_kv_cache *kv, int il, int64_t *dk, int64_t *dv, int64_t *hkv) {
    *dk = kv->ldk[il];
    *dv = kv->ldv[il];
    *hkv = kv->lhkv[il];
}
/* Sets kv->rot_k / rot_v after llm_kv_init (loom_model_params.kv_rotate: 0 quantized
 * caches, -1 none, 1 every cache, blocks from 4). */
void llm_kv_choose_rotation(llm_kv_cache *kv, const llm_kv_layer_type *types, int mode);
loom_status llm_kv_init(llm_kv_cache *kv, loom_backend *be, const loom_model_hparams *hp,
                        const llm_kv_layer_type *types, int n_ctx, int n_seq, int n_batch,
                        loom_type type, loom_error *err);
void llm_kv_free(llm_kv_cache *kv);
void llm_kv_clear(llm_kv_cache *kv);
/* Place a checked batch: per group a slot of T contiguous cells (compacting the group
 * with a graph when none is free or holes widen the range; LOOM_ERR_CONTEXT_FULL when
 * even that finds none), metadata applied, ranges and host masks computed. On error
 * nothing is applied (a compaction may have happened: same contents, other cells). */
loom_status llm_kv_prepare(llm_kv_cache *kv, loom_backend *be, const loom_batch *b, loom_error *err);
/* Undo the metadata of the last llm_kv_prepare (failed compute). */
void llm_kv_unprepare(llm_kv_cache *kv, const loom_batch *b);
/* host[r] = the sequence of batch row r (recurrent models take each row in one;
 * llm_graph.c). */
void llm_seq_fill(const loom_model *m, const loom_batch *rows, int32_t *host);
/* Recurrent states (seq.c): slot dst (-1: all) of every recurrent layer := slot src's
 * (src < 0: zeros). */
loom_status llm_rs_copy(loom_model *m, int32_t src, int32_t dst, loom_error *err);

/* After a successful decode: sliding-window groups drop what no later token sees. */
void llm_kv_commit(llm_kv_cache *kv, const loom_batch *b);
/* Reserve mode: every group's slot at its end, the whole cache visible. */
void llm_kv_prepare_reserve(llm_kv_cache *kv, int T);
void llm_kv_put(loom_ctx *ctx, llm_kv_cache *kv, int il, loom_tensor *k_cur, loom_tensor *v_cur,
                loom_tensor **store);
/* Byte offsets in layer il's K and V of the cell views llm_kv_put writes at cell loc. */
void llm_kv_store_offsets(const llm_kv_cache *kv, int il, int64_t loc, size_t *k_off, size_t *v_off);
void llm_kv_get(loom_ctx *ctx, llm_kv_cache *kv, int il, loom_tensor **k, loom_tensor **v);
/* The mask input of every group (F32 leaf into io->mask when io; cast to the config's
 * type). T rows padded to mask_batch_padding. */
void llm_kv_build_masks(loom_ctx *ctx, llm_kv_cache *kv, int T, bool reserve,
                        loom_tensor **masks, llm_graph_io *io);
static inline loom_tensor *llm_kv_layer_mask(const llm_kv_cache *kv, loom_tensor *const *masks, int il) {
    return masks[kv->layer_group[il]];
}
size_t llm_kv_mask_floats(const llm_kv_cache *kv, int g, int T);
/* Copy the K/V of cells src[i] -> dst[i] of group g (one graph per bounded batch). */
loom_status llm_kv_copy_cells(llm_kv_cache *kv, loom_backend *be, int g, const int64_t *src,
                              const int64_t *dst, int64_t n, loom_error *err);
/* Compact group g (moves + metadata). */
loom_status llm_kv_defrag(llm_kv_cache *kv, loom_backend *be, int g, loom_error *err);

/* llama.c: builds the graph of one batch and returns the logits [n_vocab, n_outputs]
 * (poison on error: check loom_ctx_status). Forwards KV copies into ctx itself. */
loom_tensor *llm_build_llama(loom_model *m, loom_ctx *ctx, const llm_batch *b);

/* model.c */
/* Index of the first largest of n values (NaN never wins; 0 when x[0] is NaN or no
 * value exceeds -inf); -1 for n <= 0. */
int32_t llm_argmax_f32(const float *x, int32_t n);
loom_status llm_load_hparams(const loom_backend *be, loom_model_hparams *hp, llm_hparams_x *hx,
                             const llm_arch **arch, loom_error *err);
loom_status llm_bind_weights(loom_model *m, loom_error *err);

/* generate.c: run one checked batch (T <= n_batch) and store the logits of the rows
 * that ask for them at row logit_row.. of m->logits (which must have room). */
loom_status llm_decode_rows(loom_model *m, const loom_batch *b, int logit_row, loom_error *err);
/* Check a batch against the cache (errors of loom_model_decode); nothing changes. */
loom_status llm_check_batch(const loom_model *m, const loom_batch *b, const char *who, loom_error *err);
/* Free the kept single-token decode graph, if any (before the backend closes, or
 * when the cache or callbacks change). */
void llm_decode_drop(loom_model *m);
/* Build and reserve the worst-case graph (n_batch tokens, full context). */
loom_status llm_reserve(loom_model *m, loom_error *err);

#endif
