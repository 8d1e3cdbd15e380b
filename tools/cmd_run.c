/* loom run [MODEL.gguf] -p PROMPT [-n N] [sampling] [structured output] [model options]
 *
 * Echoes the prompt (unless --no-display-prompt), then streams generated text to
 * stdout (flushed per token). With --grammar/--grammar-file/--json-schema/--json
 * every token is sampled from those the grammar allows, and generation ends when
 * the grammar is complete.
 * A progress bar on stderr while loading (when stderr is a terminal); timings at
 * the end on stderr. Stops at end-of-generation, after -n tokens or when the
 * context is full. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli_util.h"
#include "commands.h"
#include "loom_grammar.h"
#include "loom_sampler.h"
#include "model_opts.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: loom run [MODEL.gguf] -p PROMPT [options]\n"
            "  -p, --prompt TEXT      prompt (default: empty, BOS only)\n"
            "  -n, --n-predict N      tokens to generate (default 256; -1 = until EOS/context full)\n"
            "  --temp T               temperature (default 0.8; 0 = greedy)\n"
            "  --top-k K              (default 40; 0 = off)\n"
            "  --top-p P              (default 0.95; 1 = off)\n"
            "  --min-p P              (default 0.05; 0 = off)\n"
            "  --repeat-penalty R     (default 1.0 = off)\n"
            "  --repeat-last-n N      penalty window (default 64)\n"
            "  --seed S               RNG seed 0..2^64-1 (default or -1: from the clock)\n"
            "  --grammar TEXT         constrain the output to a GBNF grammar (start rule: root)\n"
            "  --grammar-file F       the same, read from a file\n"
            "  --json-schema F|JSON   constrain the output to a JSON Schema (a file, or inline JSON)\n"
            "  --json                 constrain the output to a JSON object\n"
            "  --no-display-prompt    print only the generated text\n"
            "%s"
            "With no MODEL the bundled model is used (%s).\n",
            model_opts_help(), loom_default_model_path());
}

/* Progress bar: called from loader threads; prints when the percentage grows. */
static atomic_int g_last_pct;
static bool progress_cb(uint64_t done, uint64_t total, void *user) {
    (void)user;
    int pct = total ? (int)(done * 100 / total) : 100;
    if (pct > 100) pct = 100;
    int last = atomic_load(&g_last_pct);
    while (pct > last) {
        if (atomic_compare_exchange_weak(&g_last_pct, &last, pct)) {
            char bar[41];
            int fill = pct * 40 / 100;
            for (int i = 0; i < 40; i++) bar[i] = i < fill ? '#' : ' ';
            bar[40] = 0;
            fprintf(stderr, "\rloading [%s] %3d%%", bar, pct);
            break;
        }
    }
    return true;
}

static bool parse_f(const char *s, float *out) {
    double v;
    if (!cli_parse_double(s, &v)) return false;
    *out = (float)v;
    return true;
}

static bool parse_i(const char *s, long lo, long hi, long *out) {
    long long v;
    if (!cli_parse_ll(s, lo, hi, &v)) return false;
    *out = (long)v;
    return true;
}

/* Stream a token's text; false once stdout has failed (full disk, closed pipe). */
static bool emit(loom_detok_stream *ds, int32_t id, char *buf, size_t cap, loom_error *err) {
    size_t n = 0;
    if (loom_detok_stream_push(ds, id, buf, cap, &n) == LOOM_OK && n) fwrite(buf, 1, n, stdout);
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        loom_error_set(err, LOOM_ERR_IO, "writing the text to standard output failed: %s",
                       errno ? strerror(errno) : "write error");
        return false;
    }
    return true;
}

int loom_cmd_run(int argc, char **argv) {
    model_opts o;
    model_opts_init(&o);
    loom_sampler_params sp = loom_sampler_default_params();
    sp.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    const char *model = NULL, *prompt = "";
    long n_predict = 256;
    const char *grammar_text = NULL, *grammar_file = NULL, *schema_arg = NULL;
    bool json_any = false, show_prompt = true;
    int n_constraints = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = model_opts_parse(&o, argc, argv, &i, "loom run");
        if (r < 0) return 2;
        if (r > 0) continue;
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool ok = true;
        long lv = 0;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if ((!strcmp(a, "-p") || !strcmp(a, "--prompt")) && v) {
            prompt = v, i++;
        } else if ((!strcmp(a, "-n") || !strcmp(a, "--n-predict")) && v) {
            ok = parse_i(v, -1, 1L << 30, &n_predict), i++;
        } else if ((!strcmp(a, "--temp") || !strcmp(a, "--temperature")) && v) {
            ok = parse_f(v, &sp.temperature), i++;
        } else if (!strcmp(a, "--top-k") && v) {
            ok = parse_i(v, 0, 1L << 30, &lv), i++;
            sp.top_k = (int32_t)lv;
        } else if (!strcmp(a, "--top-p") && v) {
            ok = parse_f(v, &sp.top_p), i++;
        } else if (!strcmp(a, "--min-p") && v) {
            ok = parse_f(v, &sp.min_p), i++;
        } else if (!strcmp(a, "--repeat-penalty") && v) {
            ok = parse_f(v, &sp.repeat_penalty), i++;
        } else if (!strcmp(a, "--repeat-last-n") && v) {
            ok = parse_i(v, 0, 1L << 20, &lv), i++;
            sp.penalty_last_n = (int32_t)lv;
        } else if (!strcmp(a, "--seed") && v) {
            bool random = false;
            uint64_t seed = 0;
            if (!cli_parse_seed(v, &seed, &random)) {
                fprintf(stderr, "loom run: --seed needs -1 (random) or an integer in [0, 2^64-1], got '%s'\n", v);
                return 2;
            }
            if (!random) sp.seed = seed;
            i++;
        } else if (!strcmp(a, "--grammar") && v) {
            grammar_text = v, i++, n_constraints++;
        } else if (!strcmp(a, "--grammar-file") && v) {
            grammar_file = v, i++, n_constraints++;
        } else if (!strcmp(a, "--json-schema") && v) {
            schema_arg = v, i++, n_constraints++;
        } else if (!strcmp(a, "--json")) {
            json_any = true, n_constraints++;
        } else if (!strcmp(a, "--no-display-prompt")) {
            show_prompt = false;
        } else if (a[0] != '-' && !model) {
            model = a;
        } else {
            fprintf(stderr, "loom run: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        }
        if (!ok) {
            fprintf(stderr, "loom run: bad value for %s: '%s' (%s)\n", a, v,
                    !strcmp(a, "-n") || !strcmp(a, "--n-predict") ? "an integer in [-1, 2^30]"
                    : !strcmp(a, "--top-k")                       ? "an integer in [0, 2^30]"
                    : !strcmp(a, "--repeat-last-n")               ? "an integer in [0, 2^20]"
                                                                  : "a finite number");
            return 2;
        }
    }
    if (!model) model = loom_default_model_path();
    {
        /* sampling parameters out of their ranges are bad arguments (exit 2); the
         * sampler's message names the parameter and its range */
        loom_error serr = {0};
        loom_sampler *probe = NULL;
        if (loom_sampler_new(&sp, 1, &probe, &serr)) {
            fprintf(stderr, "loom run: %s\n", serr.msg);
            return 2;
        }
        loom_sampler_free(probe);
    }
    if (model_opts_finish(&o, "loom run")) return 2;
    if (n_constraints > 1) {
        fprintf(stderr, "loom run: use only one of --grammar, --grammar-file, --json-schema, --json\n");
        return 2;
    }
    /* read the grammar / schema before loading the model: a bad file is a usage error */
    char *gtext = NULL;
    size_t glen = 0;
    bool is_schema = schema_arg != NULL;
    if (grammar_text) {
        glen = strlen(grammar_text);
    } else if (grammar_file || schema_arg) {
        const char *path = grammar_file ? grammar_file : schema_arg;
        const char *q = path;
        while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r') q++;
        if (schema_arg && (*q == '{' || *q == '[' || !strcmp(q, "true"))) { /* inline JSON */
            gtext = strdup(schema_arg);
            glen = gtext ? strlen(gtext) : 0;
        } else {
            char why[512] = "";
            gtext = cli_read_file(path, LOOM_GRAMMAR_MAX_TEXT, &glen, why, sizeof why);
            if (!gtext) {
                fprintf(stderr, "loom run: %s\n", why);
                return 2;
            }
        }
        if (!gtext) {
            fprintf(stderr, "loom run: out of memory\n");
            return 1;
        }
    }
    loom_grammar *grammar = NULL;
    if (grammar_text || gtext || json_any) {
        loom_error gerr = {0};
        loom_status gs;
        if (json_any) gs = loom_grammar_new_json_object(&grammar, &gerr);
        else if (is_schema) gs = loom_grammar_new_json_schema(gtext, glen, &grammar, &gerr);
        else gs = LOOM_OK; /* GBNF: compiled with the model's tokenizer (for <token> references) below */
        if (gs != LOOM_OK) {
            fprintf(stderr, "loom run: %s%s: %s\n", is_schema ? "--json-schema " : "", is_schema ? schema_arg : "",
                    gerr.msg);
            free(gtext);
            return gs == LOOM_ERR_NOMEM ? 1 : 2;
        }
    }

    loom_model_params *p = &o.p;
    p->path = model;
    bool tty = isatty(fileno(stderr));
    if (tty) {
        atomic_store(&g_last_pct, -1);
        p->progress = progress_cb;
    }
    loom_error err = {0};
    loom_model *m = NULL;
    loom_sampler *smp = NULL;
    loom_grammar_vocab *gvocab = NULL;
    loom_grammar_matcher *matcher = NULL;
    int32_t *toks = NULL;
    char *piece = NULL;
    int rc = 1;

    double t0 = now_ms();
    loom_status s = loom_model_open(p, &m, &err);
    if (tty) fprintf(stderr, "\r%60s\r", "");
    if (s) goto fail;
    double t_load = now_ms() - t0;

    const loom_tokenizer *tk;
    if (loom_model_tokenizer(m, &tk, &err)) goto fail;
    if (grammar_text || (gtext && !is_schema)) {
        loom_error gerr = {0};
        loom_status gs = loom_grammar_new(grammar_text ? grammar_text : gtext, glen, NULL, tk, &grammar, &gerr);
        if (gs != LOOM_OK) {
            fprintf(stderr, "loom run: %s%s%s\n", grammar_file ? grammar_file : "", grammar_file ? ": " : "",
                    gerr.msg);
            rc = gs == LOOM_ERR_NOMEM ? 1 : 2;
            goto done;
        }
    }
    int32_t n_tok = 0;
    size_t plen = strlen(prompt);
    s = loom_tokenize(tk, prompt, plen, true, false, NULL, 0, &n_tok, &err);
    if (s && s != LOOM_ERR_RANGE) goto fail;
    loom_error_clear(&err);
    toks = malloc((size_t)(n_tok > 0 ? n_tok : 1) * sizeof *toks + sizeof *toks);
    if (!toks) {
        loom_error_set(&err, LOOM_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if (n_tok > 0 && loom_tokenize(tk, prompt, plen, true, false, toks, n_tok, &n_tok, &err)) goto fail;
    if (n_tok == 0) { /* empty prompt: start from BOS (or token 0) */
        int32_t bos = loom_tokenizer_bos(tk);
        toks[0] = bos >= 0 ? bos : 0;
        n_tok = 1;
    }
    if (n_tok > loom_model_n_ctx(m)) {
        loom_error_set(&err, LOOM_ERR_CONTEXT_FULL, "the prompt has %lld tokens, the context only %d",
                       (long long)n_tok, loom_model_n_ctx(m));
        goto fail;
    }
    if (loom_sampler_new(&sp, loom_model_n_vocab(m), &smp, &err)) goto fail;
    {
        const int32_t *sup;
        const int32_t n_sup = loom_tokenizer_suppressed(tk, &sup); /* tokens the model must not emit */
        if (n_sup > 0 && loom_sampler_suppress(smp, sup, n_sup)) {
            loom_error_set(&err, LOOM_ERR_NOMEM, "out of memory");
            goto fail;
        }
    }
    size_t cap = loom_tokenizer_max_piece_len(tk) + 8;
    piece = malloc(cap);
    if (!piece) {
        loom_error_set(&err, LOOM_ERR_NOMEM, "out of memory");
        goto fail;
    }
    loom_detok_stream ds;
    loom_detok_stream_init(&ds, tk, 0);
    for (int32_t i = 0; i < n_tok; i++) {
        if (show_prompt && !emit(&ds, toks[i], piece, cap, &err)) goto fail;
        loom_sampler_accept_prompt(smp, toks[i]);
    }
    if (!show_prompt) loom_detok_stream_init(&ds, tk, LOOM_DETOK_NO_STRIP); /* generated text as is */
    if (grammar) {
        if (loom_grammar_vocab_new(tk, &gvocab, &err) || loom_grammar_matcher_new(grammar, gvocab, NULL, &matcher, &err))
            goto fail;
        if (loom_sampler_set_grammar(smp, matcher)) {
            loom_error_set(&err, LOOM_ERR_NOMEM, "out of memory");
            goto fail;
        }
    }

    double t1 = now_ms();
    if (loom_model_eval(m, toks, (int)n_tok, false, &err)) goto fail;
    double t_prompt = now_ms() - t1;

    double t2 = now_ms();
    long n_gen = 0;
    const char *why = NULL;
    double t_sample = 0; /* sampling (and the grammar) inside the generation time */
    for (;;) {
        if (n_predict >= 0 && n_gen >= n_predict) break;
        if (matcher && !loom_grammar_matcher_can_continue(matcher)) {
            why = "grammar complete";
            break;
        }
        int32_t next;
        double ts0 = now_ms();
        s = loom_sampler_sample(smp, loom_model_logits(m, -1), &next);
        t_sample += now_ms() - ts0;
        if (s == LOOM_ERR_NOT_FOUND && matcher) {
            loom_error_set(&err, LOOM_ERR_UNSUPPORTED, "no token of the vocabulary can continue the grammar");
            goto fail;
        } else if (s == LOOM_ERR_INVALID_ARG) {
            loom_error_set(&err, LOOM_ERR_FORMAT, "position %d: every logit is NaN (nothing to sample; the "
                           "model's weights or computation produced no numbers)", loom_model_n_past(m));
            goto fail;
        } else if (s) {
            loom_error_set(&err, s, "sampling failed");
            goto fail;
        }
        if (loom_tokenizer_is_eog(tk, next)) {
            why = "end of generation";
            break;
        }
        ts0 = now_ms();
        s = loom_sampler_accept(smp, next);
        t_sample += now_ms() - ts0;
        if (s) {
            loom_error_set(&err, s, "%s", matcher ? loom_grammar_matcher_last_error(matcher) : "accept failed");
            goto fail;
        }
        if (!emit(&ds, next, piece, cap, &err)) goto fail;
        n_gen++;
        if (n_predict >= 0 && n_gen >= n_predict) break;
        s = loom_model_eval(m, &next, 1, false, &err);
        if (s == LOOM_ERR_CONTEXT_FULL) {
            why = "context full";
            loom_error_clear(&err);
            break;
        }
        if (s) goto fail;
    }
    double t_gen = now_ms() - t2;
    size_t nf = 0;
    if (loom_detok_stream_flush(&ds, piece, cap, &nf) == LOOM_OK && nf) fwrite(piece, 1, nf, stdout);
    fputc('\n', stdout);
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        loom_error_set(&err, LOOM_ERR_IO, "writing the text to standard output failed: %s",
                       errno ? strerror(errno) : "write error");
        goto fail;
    }
    if (why) fprintf(stderr, "[stopped: %s]\n", why);
    fprintf(stderr, "load: %.1f ms\n", t_load);
    fprintf(stderr, "prompt: %lld tokens in %.1f ms (%.1f tok/s)\n", (long long)n_tok, t_prompt,
            t_prompt > 0 ? n_tok * 1e3 / t_prompt : 0.0);
    /* generation time covers n_gen - 1 decode steps after the prompt's logits */
    fprintf(stderr, "generation: %ld tokens in %.1f ms (%.1f tok/s)\n", n_gen, t_gen,
            t_gen > 0 ? n_gen * 1e3 / t_gen : 0.0);
    fprintf(stderr, "sampling: %.1f ms (%.3f ms per token)%s\n", t_sample, n_gen > 0 ? t_sample / (double)n_gen : 0.0,
            matcher ? ", grammar included" : "");
    rc = 0;
    goto done;
fail:
    fflush(stdout);
    fprintf(stderr, "loom run: %s: %s\n", loom_status_name(err.status), err.msg);
done:
    free(piece);
    free(toks);
    loom_sampler_free(smp);
    loom_grammar_matcher_free(matcher);
    loom_grammar_vocab_free(gvocab);
    loom_grammar_free(grammar);
    free(gtext);
    loom_model_close(m);
    return rc;
}
