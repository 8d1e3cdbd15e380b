/*
 * loom_sampler.h - choose the next token from a row of logits.
 *
 * Pipeline, applied in this order on every call of loom_sampler_sample:
 *   1. penalties over the last `penalty_last_n` accepted tokens, per token t
 *      seen c > 0 times in the window:
 *        repetition:  l = l > 0 ? l / repeat_penalty : l * repeat_penalty
 *        frequency/presence:  l -= c * freq_penalty + presence_penalty
 *      NaN logits are no candidates at all: NaN never wins (the rule of
 *      loom_model_argmax too), nor are suppressed tokens (loom_sampler_suppress);
 *      when no candidate is left, sample fails;
 *   2. temperature <= 0 (or top_k == 1): greedy, the arg-max (ties: lowest id);
 *   3. top-k: keep the k largest logits (ties: lower id first); k <= 0 = off;
 *   4. top-p: p_i = softmax(l) over the survivors; keep the smallest prefix of
 *      the sorted candidates whose cumulative probability is >= top_p
 *      (top_p >= 1 = off; at least one kept);
 *   5. min-p: keep candidates with p_i >= min_p * max_j p_j, i.e.
 *      l_i >= l_max + log(min_p) (min_p <= 0 = off);
 *   6. temperature: p = softmax(l / temperature) over the survivors, and one
 *      token is drawn with the sampler's RNG.
 * Steps 4 and 5 use the logits before temperature (as llama.cpp does).
 *
 * RNG: xoshiro256** (Blackman & Vigna), state seeded from `seed` by splitmix64;
 * a uniform double in [0,1) is (next() >> 11) * 2^-53. The same params, seed and
 * call sequence give the same tokens on every platform with IEEE float.
 *
 * Memory and threading: all scratch (candidate arrays, the penalty window and
 * per-token counts, O(n_vocab)) is allocated by loom_sampler_new; sample and
 * accept never allocate. A sampler belongs to one thread at a time.
 */
#ifndef LOOM_SAMPLER_H
#define LOOM_SAMPLER_H

#include "loom_base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct loom_sampler_params {
    float temperature;      /* default 0.8; <= 0 = greedy */
    int32_t top_k;          /* default 40; <= 0 = off */
    float top_p;            /* default 0.95; >= 1 = off; must be >= 0 */
    float min_p;            /* default 0.05; <= 0 = off; must be <= 1 */
    float repeat_penalty;   /* default 1.0 (off); must be > 0 */
    float freq_penalty;     /* default 0 */
    float presence_penalty; /* default 0 */
    int32_t penalty_last_n; /* window of accepted tokens for penalties; default 64; 0 = off */
    uint64_t seed;          /* RNG seed; default 0x5EED */
} loom_sampler_params;

typedef struct loom_sampler loom_sampler;

/* The defaults listed above. */
loom_sampler_params loom_sampler_default_params(void);

/* Create a sampler for a vocabulary of n_vocab tokens (params NULL = defaults).
 * LOOM_ERR_INVALID_ARG for n_vocab <= 0, out NULL or a parameter out of its
 * documented range (NaN included; the message names the parameter, its value and
 * the accepted range); LOOM_ERR_NOMEM. *out is NULL on failure. err may be NULL. */
loom_status loom_sampler_new(const loom_sampler_params *params, int32_t n_vocab, loom_sampler **out,
                             loom_error *err);
void loom_sampler_free(loom_sampler *s); /* NULL is a no-op */

/* Pick a token from logits[0..n_vocab). Does not record it: call
 * loom_sampler_accept with the token actually used. LOOM_ERR_INVALID_ARG for
 * NULL arguments and when every logit is NaN (*out untouched then). */
loom_status loom_sampler_sample(loom_sampler *s, const float *logits, int32_t *out);

/* Tokens sample never picks from now on (they are no candidates, as NaN logits; a
 * model's loom_tokenizer_suppressed list), replacing any earlier set; n = 0 clears it;
 * ids outside [0, n_vocab) are ignored. Allocates here, never in sample.
 * LOOM_ERR_INVALID_ARG (s NULL, n < 0, ids NULL with n > 0), LOOM_ERR_NOMEM. */
loom_status loom_sampler_suppress(loom_sampler *s, const int32_t *ids, int32_t n);

/* Append a token to the penalty window (prompt tokens may be accepted too, but
 * with a constraint attached use loom_sampler_accept_prompt for them).
 * LOOM_ERR_RANGE if token is outside [0, n_vocab); with a constraint, its
 * accept's error (the token is then not recorded). */
loom_status loom_sampler_accept(loom_sampler *s, int32_t token);

/* Clear the penalty window, re-seed the RNG with params.seed and reset an
 * attached constraint. */
void loom_sampler_reset(loom_sampler *s);
/* Re-seed only the RNG. */
void loom_sampler_set_seed(loom_sampler *s, uint64_t seed);

/* ---- constraints (e.g. a grammar; see loom_grammar.h for loom_sampler_set_grammar)
 *
 * A constraint decides which tokens may be sampled. With one attached,
 * loom_sampler_sample behaves exactly as if every token it rejects had been
 * removed from the vocabulary before step 1 (penalties, greedy, top-k, top-p,
 * min-p and temperature then see only the allowed tokens; the RNG is used as
 * without a constraint). It asks `allowed` about the best candidates first and
 * calls `fill_mask` only when too few of them are allowed for top-k (or top-k is
 * off). Returns LOOM_ERR_NOT_FOUND when no token is allowed.
 * loom_sampler_accept calls `accept` first (its error is returned and the token
 * is not recorded); loom_sampler_reset calls `reset`. */
typedef struct loom_sampler_constraint {
    void *user;
    /* 1 when token may be sampled, 0 when not, or -(loom_status) on failure. */
    int (*allowed)(void *user, int32_t token);
    /* The allowed set as a bitmap of n_bits bits (bit t & 63 of mask[t >> 6]). */
    loom_status (*fill_mask)(void *user, uint64_t *mask, int32_t n_bits);
    loom_status (*accept)(void *user, int32_t token);
    void (*reset)(void *user);
} loom_sampler_constraint;

/* Attach a constraint (copied; c->user is borrowed) or detach it (c NULL).
 * LOOM_ERR_INVALID_ARG (s NULL, a NULL callback), LOOM_ERR_NOMEM. Allocates the
 * mask scratch here, never in sample. */
loom_status loom_sampler_set_constraint(loom_sampler *s, const loom_sampler_constraint *c);

/* Record a prompt token for the penalties only (an attached constraint does not
 * see it). LOOM_ERR_RANGE if token is outside [0, n_vocab). */
loom_status loom_sampler_accept_prompt(loom_sampler *s, int32_t token);

/* The candidates of the last sample call after all filters, sorted by
 * probability (descending, ties: lower id): *ids and *probs (final
 * probabilities, summing to 1) stay valid until the next sample call. Returns
 * their count (1 for greedy, 0 before the first call). */
int32_t loom_sampler_last_candidates(const loom_sampler *s, const int32_t **ids, const float **probs);

#ifdef __cplusplus
}
#endif
#endif /* LOOM_SAMPLER_H */
