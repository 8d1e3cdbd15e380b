/* loom template (MODEL.gguf | FILE.jinja) --messages FILE.json [--case NAME]
 *               [--tools FILE.json] [--no-generation-prompt] [--var NAME=JSON]...
 *               [--bos S] [--eos S] [--now 2024-07-26T12:00:00] [--tokens]
 *               [--template FILE.jinja]
 *
 * Renders a conversation with a chat template and writes the text to stdout
 * exactly (no newline added). FILE.json is a conversation object ("messages",
 * optional "tools", "add_generation_prompt", "kwargs") or an array of named cases
 * like ../shared/templates/conversations.json (--case picks one; a single case is
 * picked without it). With a GGUF the template is tokenizer.chat_template (or the
 * documented fallback when the model has none; --template FILE overrides it) and
 * bos_token / eos_token are the vocabulary's BOS / EOS texts; --bos / --eos
 * override them (for a .jinja file they default to ""). --now fixes the clock of
 * strftime_now. --tokens (needs a GGUF) prints the token ids instead, space
 * separated on one line: special tokens are parsed only in the template's own
 * text, never inside message content.
 * Exit status: 0 ok; 1 render error (stderr: the template's message on the first
 * line, its location on the second) or runtime error; 2 bad arguments. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "commands.h"
#include "loom_gguf.h"
#include "loom_template.h"
#include "loom_tokenizer.h"

static void usage(FILE *f) {
    fprintf(f, "usage: loom template (MODEL.gguf | FILE.jinja) --messages FILE.json [--case NAME]\n"
               "                     [--tools FILE.json] [--no-generation-prompt] [--var NAME=JSON]...\n"
               "                     [--bos S] [--eos S] [--now YYYY-MM-DDTHH:MM:SS] [--tokens]\n"
               "                     [--template FILE.jinja]\n");
}

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0;
    char *b = malloc(cap + 1);
    while (b) {
        size_t r = fread(b + len, 1, cap - len, f);
        len += r;
        if (len < cap) break;
        char *nb = cap < SIZE_MAX / 4 ? realloc(b, cap * 2 + 1) : NULL;
        if (!nb) { free(b); b = NULL; break; }
        b = nb;
        cap *= 2;
    }
    if (b && ferror(f)) { free(b); b = NULL; }
    fclose(f);
    if (b) { b[len] = 0; *n = len; }
    return b;
}

static bool ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

static bool parse_now(const char *s, loom_template_time *t) {
    memset(t, 0, sizeof *t);
    char sep = 0;
    int n = sscanf(s, "%d-%d-%d%c%d:%d:%d", &t->year, &t->month, &t->day, &sep, &t->hour, &t->minute, &t->second);
    if (n == 3) return t->month >= 1 && t->month <= 12 && t->day >= 1 && t->day <= 31;
    if (n < 6 || (sep != 'T' && sep != ' ')) return false;
    return t->month >= 1 && t->month <= 12 && t->day >= 1 && t->day <= 31 && t->hour >= 0 && t->hour <= 23 &&
           t->minute >= 0 && t->minute <= 59 && t->second >= 0 && t->second <= 60;
}

int loom_cmd_template(int argc, char **argv) {
    const char *model = NULL, *messages = NULL, *case_name = NULL, *tools = NULL, *bos = NULL, *eos = NULL,
               *now_s = NULL, *tpl_file = NULL;
    bool no_gen = false, tokens = false;
    const char **vars = calloc((size_t)argc + 1, sizeof(char *));
    int nvars = 0;
    if (!vars) return 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); free(vars); return 0; }
        else if (!strcmp(a, "--messages") && has) messages = argv[++i];
        else if (!strcmp(a, "--case") && has) case_name = argv[++i];
        else if (!strcmp(a, "--tools") && has) tools = argv[++i];
        else if (!strcmp(a, "--no-generation-prompt")) no_gen = true;
        else if (!strcmp(a, "--var") && has) vars[nvars++] = argv[++i];
        else if (!strcmp(a, "--bos") && has) bos = argv[++i];
        else if (!strcmp(a, "--eos") && has) eos = argv[++i];
        else if (!strcmp(a, "--now") && has) now_s = argv[++i];
        else if (!strcmp(a, "--tokens")) tokens = true;
        else if (!strcmp(a, "--template") && has) tpl_file = argv[++i];
        else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "loom template: unknown or incomplete option %s\n", a);
            usage(stderr);
            free(vars);
            return 2;
        } else if (!model) model = a;
        else {
            fprintf(stderr, "loom template: unexpected argument %s\n", a);
            usage(stderr);
            free(vars);
            return 2;
        }
    }
    int rc = 2;
    char *conv_src = NULL, *tools_src = NULL, *tpl_src_buf = NULL, *out_json = NULL;
    json_t *doc = NULL, *conv = NULL, *work = NULL;
    loom_gguf *g = NULL;
    loom_tokenizer *tok = NULL;
    loom_template *t = NULL;
    loom_template_result res = {0};
    int32_t *ids = NULL;
    loom_error err = {0};
    loom_template_time now;
    if (!model || !messages) {
        fprintf(stderr, "loom template: %s\n", !model ? "missing MODEL.gguf or FILE.jinja" : "missing --messages FILE.json");
        usage(stderr);
        goto done;
    }
    if (now_s && !parse_now(now_s, &now)) {
        fprintf(stderr, "loom template: --now %s: expected YYYY-MM-DDTHH:MM:SS\n", now_s);
        goto done;
    }
    /* the conversation */
    size_t n = 0;
    if (!(conv_src = slurp(messages, &n))) {
        fprintf(stderr, "loom template: cannot read %s\n", messages);
        goto done;
    }
    json_error_t je;
    if (!(doc = json_loadb(conv_src, n, JSON_ALLOW_NUL, &je))) {
        fprintf(stderr, "loom template: %s:%d:%d: %s\n", messages, je.line, je.column, je.text);
        goto done;
    }
    if (json_is_array(doc)) {
        size_t idx;
        json_t *c;
        json_array_foreach(doc, idx, c) {
            json_t *nm = json_object_get(c, "name");
            if (case_name ? (nm && json_is_string(nm) && !strcmp(json_string_value(nm), case_name)) : json_array_size(doc) == 1) {
                conv = c;
                break;
            }
        }
        if (!conv) {
            if (case_name) fprintf(stderr, "loom template: %s: no case named '%s'\n", messages, case_name);
            else fprintf(stderr, "loom template: %s holds %zu cases: pick one with --case NAME\n", messages, json_array_size(doc));
            goto done;
        }
    } else if (json_is_object(doc)) {
        conv = doc;
    } else {
        fprintf(stderr, "loom template: %s: expected a conversation object or an array of cases\n", messages);
        goto done;
    }
    if (!json_is_object(conv) || !json_object_get(conv, "messages")) {
        fprintf(stderr, "loom template: %s: the conversation has no \"messages\"\n", messages);
        goto done;
    }
    work = json_deep_copy(conv);
    if (!work) { rc = 1; goto done; }
    conv = work;
    json_object_del(conv, "name");
    if (tools) {
        size_t tn;
        json_t *tj;
        if (!(tools_src = slurp(tools, &tn))) { fprintf(stderr, "loom template: cannot read %s\n", tools); goto done; }
        if (!(tj = json_loadb(tools_src, tn, JSON_ALLOW_NUL, &je))) {
            fprintf(stderr, "loom template: %s:%d:%d: %s\n", tools, je.line, je.column, je.text);
            goto done;
        }
        json_object_set_new(conv, "tools", tj);
    }
    if (no_gen) json_object_set_new(conv, "add_generation_prompt", json_false());
    for (int i = 0; i < nvars; i++) {
        const char *eq = strchr(vars[i], '=');
        if (!eq || eq == vars[i]) {
            fprintf(stderr, "loom template: --var %s: expected NAME=JSON\n", vars[i]);
            goto done;
        }
        json_t *v = json_loads(eq + 1, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
        if (!v) {
            fprintf(stderr, "loom template: --var %s: value is not JSON (%s)\n", vars[i], je.text);
            goto done;
        }
        json_t *kw = json_object_get(conv, "kwargs");
        if (!kw || !json_is_object(kw)) {
            kw = json_object();
            json_object_set_new(conv, "kwargs", kw);
        }
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(eq - vars[i]), vars[i]);
        json_object_set_new(kw, name, v);
    }
    if (!(out_json = json_dumps(conv, JSON_COMPACT | JSON_ENCODE_ANY))) { rc = 1; goto done; }
    /* the template */
    const char *src = NULL;
    size_t src_len = 0;
    rc = 1;
    bool is_gguf = ends_with(model, ".gguf");
    if (is_gguf) {
        if (loom_gguf_open(model, NULL, &g, &err) != LOOM_OK) {
            fprintf(stderr, "loom template: %s\n", err.msg);
            goto done;
        }
        if (loom_tokenizer_new_from_gguf(g, &tok, &err) != LOOM_OK) {
            if (tokens || !bos || !eos) {
                fprintf(stderr, "loom template: %s: %s\n", model, err.msg);
                goto done;
            }
            loom_error_clear(&err);
        }
        if (!tpl_file) {
            if (loom_template_source_from_gguf(g, NULL, &src, &src_len, &err) != LOOM_OK) {
                if (err.status != LOOM_ERR_NOT_FOUND) {
                    fprintf(stderr, "loom template: %s\n", err.msg);
                    goto done;
                }
                src = loom_template_fallback_source();
                src_len = strlen(src);
                loom_error_clear(&err);
            }
        }
    } else if (tokens) {
        fprintf(stderr, "loom template: --tokens needs a MODEL.gguf (its vocabulary)\n");
        rc = 2;
        goto done;
    }
    if (!is_gguf || tpl_file) {
        const char *path = tpl_file ? tpl_file : model;
        if (!(tpl_src_buf = slurp(path, &src_len))) {
            fprintf(stderr, "loom template: cannot read %s\n", path);
            rc = 2;
            goto done;
        }
        src = tpl_src_buf;
    }
    if (loom_template_compile(src, src_len, NULL, &t, &err) != LOOM_OK) {
        /* err.msg is "template:LINE:COL: Kind: message" */
        const char *m = err.msg;
        unsigned line = 0, col = 0;
        int off = 0;
        if (sscanf(m, "template:%u:%u: %n", &line, &col, &off) == 2 && off > 0) m += off;
        fprintf(stderr, "%s\n", m);
        if (line) fprintf(stderr, "loom template: at %s:%u:%u\n", tpl_file ? tpl_file : model, line, col);
        goto done;
    }
    loom_template_params p = {0};
    p.bos_token = bos;
    p.eos_token = eos;
    p.now = now_s ? &now : NULL;
    loom_status st;
    int32_t nids = 0;
    if (tokens) {
        st = loom_template_render_tokens(t, tok, out_json, strlen(out_json), &p, &ids, &nids, &res, &err);
    } else {
        if (!bos) p.bos_token = "";
        if (!eos) p.eos_token = "";
        char *bos_buf = NULL, *eos_buf = NULL;
        if (tok) { /* the vocabulary's texts */
            const char *tx;
            size_t tl;
            if (!bos && loom_token_text(tok, loom_tokenizer_bos(tok), &tx, &tl) == LOOM_OK && (bos_buf = malloc(tl + 1))) {
                memcpy(bos_buf, tx, tl);
                bos_buf[tl] = 0;
                p.bos_token = bos_buf;
            }
            if (!eos && loom_token_text(tok, loom_tokenizer_eos(tok), &tx, &tl) == LOOM_OK && (eos_buf = malloc(tl + 1))) {
                memcpy(eos_buf, tx, tl);
                eos_buf[tl] = 0;
                p.eos_token = eos_buf;
            }
        }
        st = loom_template_render_json(t, out_json, strlen(out_json), &p, &res, &err);
        free(bos_buf);
        free(eos_buf);
    }
    if (st != LOOM_OK) {
        if (res.error[0]) {
            fprintf(stderr, "%s\n", res.error);
            if (res.error_line > 0)
                fprintf(stderr, "loom template: at %s:%d:%d\n", tpl_file ? tpl_file : model, res.error_line, res.error_column);
        } else {
            fprintf(stderr, "loom template: %s\n", err.msg);
        }
        goto done;
    }
    if (tokens) {
        for (int32_t i = 0; i < nids; i++) printf(i ? " %d" : "%d", ids[i]);
        putchar('\n');
    } else {
        fwrite(res.text, 1, res.len, stdout);
    }
    rc = (fflush(stdout) == 0 && !ferror(stdout)) ? 0 : 1;
    if (rc) fprintf(stderr, "loom template: writing the output failed\n");
done:
    free(ids);
    loom_template_result_free(&res);
    loom_template_free(t);
    loom_tokenizer_free(tok);
    loom_gguf_close(g);
    free(out_json);
    json_decref(work);
    json_decref(doc);
    free(conv_src);
    free(tools_src);
    free(tpl_src_buf);
    free(vars);
    return rc;
}
