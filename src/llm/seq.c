/*
 * seq.c - per-sequence cache operations (public loom_model_seq_* API).
 * Stub implementations while the multi-sequence cache is being built.
 */
#include "model_internal.h"

#define STUB(name) loom_error_set(err, LOOM_ERR_UNSUPPORTED, name ": not implemented yet")

loom_status loom_model_decode(loom_model *m, const loom_batch *b, loom_error *err) {
    (void)m, (void)b;
    return STUB("loom_model_decode");
}
const float *loom_model_batch_logits(const loom_model *m, int32_t i) {
    (void)m, (void)i;
    return NULL;
}
int32_t loom_model_batch_argmax(const loom_model *m, int32_t i) {
    const float *l = loom_model_batch_logits(m, i);
    return l ? llm_argmax_f32(l, m->hp.n_vocab) : -1;
}
loom_status loom_model_seq_remove(loom_model *m, int32_t seq, int32_t p0, int32_t p1, loom_error *err) {
    (void)m, (void)seq, (void)p0, (void)p1;
    return STUB("loom_model_seq_remove");
}
loom_status loom_model_seq_copy(loom_model *m, int32_t src, int32_t dst, int32_t p0, int32_t p1, loom_error *err) {
    (void)m, (void)src, (void)dst, (void)p0, (void)p1;
    return STUB("loom_model_seq_copy");
}
loom_status loom_model_seq_keep(loom_model *m, int32_t seq, loom_error *err) {
    (void)m, (void)seq;
    return STUB("loom_model_seq_keep");
}
loom_status loom_model_seq_shift(loom_model *m, int32_t seq, int32_t p0, int32_t p1, int32_t delta,
                                 loom_error *err) {
    (void)m, (void)seq, (void)p0, (void)p1, (void)delta;
    return STUB("loom_model_seq_shift");
}
int32_t loom_model_seq_pos_max(const loom_model *m, int32_t seq) {
    return m && seq == 0 && m->n_past > 0 ? m->n_past - 1 : -1;
}
int32_t loom_model_seq_pos_min(const loom_model *m, int32_t seq) {
    return m && seq == 0 && m->n_past > 0 ? 0 : -1;
}
int32_t loom_model_seq_n_tokens(const loom_model *m, int32_t seq) {
    return m && seq == 0 ? m->n_past : 0;
}
loom_status loom_model_seq_context_shift(loom_model *m, int32_t seq, int32_t n_keep, int32_t *n_discarded,
                                         loom_error *err) {
    (void)m, (void)seq, (void)n_keep;
    if (n_discarded) *n_discarded = 0;
    return STUB("loom_model_seq_context_shift");
}
loom_status loom_model_seq_reuse_prefix(loom_model *m, int32_t seq, const int32_t *tokens, int32_t n,
                                        int32_t *n_cached, loom_error *err) {
    (void)m, (void)seq, (void)tokens, (void)n;
    if (n_cached) *n_cached = 0;
    return STUB("loom_model_seq_reuse_prefix");
}
int loom_model_n_seq_max(const loom_model *m) { return m ? 1 : 0; }
