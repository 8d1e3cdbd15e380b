/*
 * batch.c - loom_batch: the plain-data token batch of loom_model_decode.
 */
#include <string.h>

#include "model_internal.h"
#include "quant/alloc.h"

loom_status loom_batch_init(loom_batch *b, int32_t capacity, int32_t seq_capacity, loom_error *err) {
    if (!b) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_batch_init: batch is NULL");
    memset(b, 0, sizeof *b);
    if (capacity < 1 || capacity > (1 << 24))
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_batch_init: capacity %d is outside [1, %d]",
                              (int)capacity, 1 << 24);
    if (seq_capacity < 1 || seq_capacity > LOOM_SEQ_MAX)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_batch_init: seq_capacity %d is outside [1, %d]",
                              (int)seq_capacity, LOOM_SEQ_MAX);
    size_t n = (size_t)capacity;
    b->token = loom_malloc(n * sizeof *b->token);
    b->pos = loom_malloc(n * sizeof *b->pos);
    b->n_seq = loom_malloc(n * sizeof *b->n_seq);
    b->seq_id = loom_malloc(n * (size_t)seq_capacity * sizeof *b->seq_id);
    b->logits = loom_malloc(n * sizeof *b->logits);
    if (!b->token || !b->pos || !b->n_seq || !b->seq_id || !b->logits) {
        loom_batch_free(b);
        return loom_error_set(err, LOOM_ERR_NOMEM, "loom_batch_init: out of memory (%d rows)", (int)capacity);
    }
    b->capacity = capacity;
    b->seq_capacity = seq_capacity;
    return LOOM_OK;
}

void loom_batch_free(loom_batch *b) {
    if (!b) return;
    loom_free(b->token);
    loom_free(b->pos);
    loom_free(b->n_seq);
    loom_free(b->seq_id);
    loom_free(b->logits);
    memset(b, 0, sizeof *b);
}

void loom_batch_clear(loom_batch *b) {
    if (b) b->n_tokens = 0;
}

loom_status loom_batch_add(loom_batch *b, int32_t token, int32_t pos, const int32_t *seq_ids, int32_t n_seq,
                           bool logits, loom_error *err) {
    if (!b || !seq_ids) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_batch_add: NULL batch or seq_ids");
    if (n_seq < 1 || n_seq > b->seq_capacity)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_batch_add: %d sequence ids (the batch holds 1..%d per row)",
                              (int)n_seq, (int)b->seq_capacity);
    if (b->n_tokens < 0 || b->n_tokens >= b->capacity)
        return loom_error_set(err, LOOM_ERR_RANGE, "loom_batch_add: the batch is full (%d rows)", (int)b->capacity);
    int32_t i = b->n_tokens;
    b->token[i] = token;
    b->pos[i] = pos;
    b->n_seq[i] = n_seq;
    memcpy(b->seq_id + (size_t)i * (size_t)b->seq_capacity, seq_ids, (size_t)n_seq * sizeof *seq_ids);
    b->logits[i] = logits;
    b->n_tokens = i + 1;
    return LOOM_OK;
}
