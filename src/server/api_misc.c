/*
 * api_misc.c - the model-management and operations endpoints: /api/tags, /api/show,
 * /api/ps, /api/delete, /api/copy, /api/create, /api/pull|push (refused),
 * /v1/models,
 * /health and /metrics.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "loom_embed.h"
#include "quant/alloc.h"
#include "server/server_internal.h"

void srv_respond_json(srv_response *out, int status, json_t *j) {
    srv_buf_clear(&out->body);
    out->status = status;
    out->content_type = "application/json; charset=utf-8";
    if (j) srv_json_append(&out->body, j);
    json_decref(j);
}

/* ------------------------------------------------------------------ GGUF details */

typedef struct gguf_meta {
    json_t *details;        /* {parent_model, format, family, families, parameter_size, quantization_level} */
    int64_t n_params;
    bool fim;
} gguf_meta;

static int most_common_type(const loom_gguf *g) {
    int64_t count[LOOM_TYPE_COUNT] = {0};
    for (int64_t i = 0; i < loom_gguf_tensor_count(g); i++) {
        const loom_gguf_tensor_info *ti = loom_gguf_tensor(g, i);
        if (ti->n_dims >= 2 && (int)ti->type < LOOM_TYPE_COUNT) count[ti->type] += (int64_t)ti->size;
    }
    int best = 0;
    for (int t = 1; t < LOOM_TYPE_COUNT; t++)
        if (count[t] > count[best]) best = t;
    return best;
}

static json_t *details_of(const loom_gguf *g, int64_t *n_params_out) {
    loom_gguf_str arch = {"", 0};
    loom_gguf_get_str(g, "general.architecture", &arch);
    char fam[64];
    snprintf(fam, sizeof fam, "%.*s", (int)(arch.len < 63 ? arch.len : 63), arch.ptr);
    int64_t n_params = 0;
    if (loom_gguf_get_int(g, "general.parameter_count", &n_params) || n_params <= 0) {
        n_params = 0;
        for (int64_t i = 0; i < loom_gguf_tensor_count(g); i++) {
            const loom_gguf_tensor_info *ti = loom_gguf_tensor(g, i);
            int64_t e = 1;
            for (uint32_t d = 0; d < ti->n_dims; d++) e *= ti->ne[d];
            n_params += e;
        }
    }
    char ps[32];
    srv_human_number((uint64_t)n_params, ps, sizeof ps);
    int64_t ft;
    const char *q = loom_gguf_get_int(g, "general.file_type", &ft) == LOOM_OK ? loom_gguf_file_type_name(ft) : NULL;
    if (!q || !strcmp(q, "unknown")) q = loom_type_name((loom_type)most_common_type(g));
    if (n_params_out) *n_params_out = n_params;
    return json_pack("{s:s,s:s,s:s,s:[s],s:s,s:s}", "parent_model", "", "format", "gguf", "family", fam, "families",
                     fam, "parameter_size", ps, "quantization_level", q);
}

/* Details of a GGUF (opened each time: the header only, mapped). */
static bool gguf_meta_get(const char *path, gguf_meta *m) {
    memset(m, 0, sizeof *m);
    loom_gguf *g = NULL;
    if (loom_gguf_open(path, NULL, &g, NULL)) return false;
    m->details = details_of(g, &m->n_params);
    int64_t v;
    m->fim = !loom_gguf_get_int(g, "tokenizer.ggml.fim_pre_token_id", &v) ||
             !loom_gguf_get_int(g, "tokenizer.ggml.prefix_token_id", &v);
    loom_gguf_close(g);
    return m->details != NULL;
}

static json_t *empty_details(void) {
    return json_pack("{s:s,s:s,s:s,s:[],s:s,s:s}", "parent_model", "", "format", "gguf", "family", "", "families",
                     "parameter_size", "", "quantization_level", "");
}

/* ------------------------------------------------------------------ /api/tags, /v1/models */

static const char *owner_of(const char *name, char *buf, size_t n) {
    const char *slash = strrchr(name, '/');
    if (!slash) return "library";
    const char *start = name;
    const char *prev = NULL;
    for (const char *p = name; p < slash; p++)
        if (*p == '/') prev = p;
    if (prev) start = prev + 1;
    snprintf(buf, n, "%.*s", (int)(slash - start), start);
    return buf;
}

/* A model as GET /v1/models lists it: OpenAI's fields {id, object, created, owned_by}
 * and Anthropic's {type: "model", id, display_name, created_at (RFC 3339)}, which the
 * two SDKs read from the same path (each ignores the other's). */
static json_t *v1_model(const char *name, int64_t mtime_ns) {
    char own[128], ts[40];
    return json_pack("{s:s,s:s,s:I,s:s,s:s,s:s,s:s}", "id", name, "object", "model", "created",
                     (json_int_t)(mtime_ns / 1000000000), "owned_by", owner_of(name, own, sizeof own), "type", "model",
                     "display_name", name, "created_at", srv_rfc3339nano(mtime_ns / 1000000000 * 1000000000, true, ts));
}

void srv_api_tags(loom_server *s, srv_response *out, bool openai) {
    srv_model_info *v = NULL;
    int n = 0;
    if (!srv_store_list(s->store, &v, &n, !openai)) {
        srv_api_error(out, openai ? SRV_API_OAI_CHAT : SRV_API_CHAT, 500, "out of memory listing the models");
        return;
    }
    json_t *arr = json_array();
    for (int i = 0; i < n; i++) {
        char ts[40];
        if (openai) {
            json_array_append_new(arr, v1_model(v[i].name, v[i].mtime_ns));
        } else {
            gguf_meta gm;
            json_t *det = gguf_meta_get(v[i].gguf, &gm) ? gm.details : empty_details();
            json_array_append_new(arr, json_pack("{s:s,s:s,s:s,s:I,s:s,s:o}", "name", v[i].name, "model", v[i].name,
                                                 "modified_at", srv_rfc3339nano(v[i].mtime_ns, false, ts), "size",
                                                 (json_int_t)v[i].size, "digest", v[i].digest, "details", det));
        }
        srv_model_info_free(&v[i]);
    }
    loom_free(v);
    if (openai) { /* Anthropic's page fields too: one page, has_more false */
        size_t na = json_array_size(arr);
        json_t *first = na ? json_object_get(json_array_get(arr, 0), "id") : NULL;
        json_t *last = na ? json_object_get(json_array_get(arr, na - 1), "id") : NULL;
        srv_respond_json(out, 200, json_pack("{s:s,s:o,s:b,s:O,s:O}", "object", "list", "data", arr, "has_more", 0,
                                             "first_id", first ? first : json_null(), "last_id",
                                             last ? last : json_null()));
    }
    else srv_respond_json(out, 200, json_pack("{s:o}", "models", arr));
}

void srv_api_model_get(loom_server *s, const char *name, srv_response *out) {
    srv_model_info m;
    srv_err e = {0};
    if (!srv_store_find(s->store, name, &m, false, &e)) {
        srv_api_error_e(out, SRV_API_OAI_CHAT, &e);
        return;
    }
    srv_respond_json(out, 200, v1_model(name, m.mtime_ns));
    srv_model_info_free(&m);
}

/* ------------------------------------------------------------------ /api/show */

static json_t *kv_value(const loom_gguf *g, int64_t i, bool verbose) {
    loom_gguf_vtype t = loom_gguf_kv_type(g, i);
    if (t == LOOM_GGUF_STRING) {
        loom_gguf_str s;
        if (loom_gguf_kv_str(g, i, &s)) return json_null();
        return srv_json_text(s.ptr, (size_t)s.len);
    }
    if (t == LOOM_GGUF_BOOL) {
        int64_t v;
        return loom_gguf_kv_int(g, i, &v) == LOOM_OK ? json_boolean(v) : json_null();
    }
    if (t == LOOM_GGUF_F32 || t == LOOM_GGUF_F64) {
        double v;
        if (loom_gguf_kv_float(g, i, &v)) return json_null();
        if (t == LOOM_GGUF_F32) { /* shortest decimal that gives the float back */
            char buf[32];
            for (int p = 6; p <= 9; p++) {
                snprintf(buf, sizeof buf, "%.*g", p, v);
                if ((float)strtod(buf, NULL) == (float)v) break;
            }
            v = strtod(buf, NULL);
        }
        return json_real(v);
    }
    if (t == LOOM_GGUF_ARRAY) {
        uint64_t n = loom_gguf_kv_array_len(g, i);
        if (!verbose && n > 64) return json_null();
        loom_gguf_vtype et = loom_gguf_kv_array_type(g, i);
        json_t *a = json_array();
        for (uint64_t j = 0; j < n; j++) {
            if (et == LOOM_GGUF_STRING) {
                loom_gguf_str s;
                json_array_append_new(a, loom_gguf_kv_arr_str(g, i, j, &s) ? json_null() : srv_json_text(s.ptr, (size_t)s.len));
            } else if (et == LOOM_GGUF_F32 || et == LOOM_GGUF_F64) {
                double d;
                json_array_append_new(a, loom_gguf_kv_arr_float(g, i, j, &d) ? json_null() : json_real(d));
            } else {
                int64_t d;
                json_array_append_new(a, loom_gguf_kv_arr_int(g, i, j, &d) ? json_null() : json_integer(d));
            }
        }
        return a;
    }
    int64_t v;
    return loom_gguf_kv_int(g, i, &v) == LOOM_OK ? json_integer(v) : json_null();
}

/* Ollama's "parameters" text: one "name value" line per option. */
static void params_text(const json_t *params, srv_buf *b) {
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)params, k, v) {
        json_t *items = json_is_array(v) ? json_incref(v) : json_pack("[O]", v);
        for (size_t i = 0; i < json_array_size(items); i++) {
            json_t *x = json_array_get(items, i);
            char *txt = json_dumps(x, JSON_ENCODE_ANY | JSON_COMPACT);
            srv_buf_printf(b, "%-30s %s\n", k, txt ? txt : "");
            free(txt);
        }
        json_decref(items);
    }
}

static void append_triple(srv_buf *b, const char *kw, const char *text) {
    srv_buf_printf(b, "%s \"\"\"", kw);
    srv_buf_puts(b, text);
    srv_buf_puts(b, "\"\"\"\n");
}

void srv_api_show(loom_server *s, const srv_request *rq, srv_response *out) {
    srv_err e = {0};
    json_t *body = srv_json_parse(rq->body, rq->body_len, &s->lim, &e);
    if (!body) {
        srv_api_error(out, SRV_API_CHAT, e.status, e.msg);
        return;
    }
    const json_t *mn = json_object_get(body, "model");
    if (!json_is_string(mn) || !json_string_length(mn)) mn = json_object_get(body, "name");
    bool verbose = json_is_true(json_object_get(body, "verbose"));
    if (!json_is_string(mn) || !json_string_length(mn)) {
        json_decref(body);
        srv_api_error(out, SRV_API_CHAT, 400, "model is required");
        return;
    }
    snprintf(out->model, sizeof out->model, "%s", json_string_value(mn));
    srv_model_info m;
    if (!srv_store_find(s->store, json_string_value(mn), &m, false, &e)) {
        json_decref(body);
        srv_api_error(out, SRV_API_CHAT, e.status, e.msg);
        return;
    }
    json_decref(body);
    loom_gguf *g = NULL;
    loom_error err = {0};
    if (loom_gguf_open(m.gguf, NULL, &g, &err)) {
        srv_model_info_free(&m);
        srv_api_error(out, SRV_API_CHAT, 500, err.msg);
        return;
    }
    json_t *mi = json_object();
    for (int64_t i = 0; i < loom_gguf_kv_count(g); i++)
        json_object_set_new(mi, loom_gguf_kv_key(g, i), kv_value(g, i, verbose));
    int64_t n_params = 0;
    json_t *details = details_of(g, &n_params);
    if (!json_object_get(mi, "general.parameter_count")) json_object_set_new(mi, "general.parameter_count", json_integer(n_params));
    loom_gguf_str ct;
    char *gguf_tmpl = NULL;
    if (loom_gguf_get_str(g, "tokenizer.chat_template", &ct) == LOOM_OK) {
        gguf_tmpl = loom_malloc(ct.len + 1);
        if (gguf_tmpl) memcpy(gguf_tmpl, ct.ptr, ct.len), gguf_tmpl[ct.len] = 0;
    }
    int64_t v;
    bool fim = !loom_gguf_get_int(g, "tokenizer.ggml.fim_pre_token_id", &v) ||
               !loom_gguf_get_int(g, "tokenizer.ggml.prefix_token_id", &v);
    loom_gguf_str ga = {"", 0};
    char arch[64] = "";
    if (loom_gguf_get_str(g, "general.architecture", &ga) == LOOM_OK && ga.len < sizeof arch)
        memcpy(arch, ga.ptr, ga.len), arch[ga.len] = 0;
    const bool embedding = loom_embed_gguf_supported(g);
    loom_gguf_close(g);

    const char *tmpl = m.template_text ? m.template_text : gguf_tmpl;
    const char *source = m.template_text ? "manifest" : gguf_tmpl ? "gguf:tokenizer.chat_template" : "none";
    json_t *caps = json_array();
    json_array_append_new(caps, json_string(embedding ? "embedding" : "completion"));
    if (tmpl && strstr(tmpl, "tools")) json_array_append_new(caps, json_string("tools"));
    if (fim) json_array_append_new(caps, json_string("insert"));
    if (srv_template_thinks(tmpl)) json_array_append_new(caps, json_string("thinking"));

    srv_buf mf = {0}, pt = {0};
    srv_buf_printf(&mf, "# Modelfile generated by \"loom serve\" (/api/show)\n# To build a new Modelfile based on "
                   "this, replace FROM with:\n# FROM %s\n\nFROM %s\n", m.name, m.gguf);
    if (tmpl) append_triple(&mf, "TEMPLATE", tmpl);
    if (m.system) append_triple(&mf, "SYSTEM", m.system);
    if (m.params) {
        params_text(m.params, &pt);
        const char *k;
        json_t *pv;
        json_object_foreach(m.params, k, pv) {
            json_t *items = json_is_array(pv) ? json_incref(pv) : json_pack("[O]", pv);
            for (size_t i = 0; i < json_array_size(items); i++) {
                char *txt = json_dumps(json_array_get(items, i), JSON_ENCODE_ANY | JSON_COMPACT);
                srv_buf_printf(&mf, "PARAMETER %s %s\n", k, txt ? txt : "");
                free(txt);
            }
            json_decref(items);
        }
    }
    if (m.license) append_triple(&mf, "LICENSE", m.license);

    json_t *j = json_object();
    if (m.license) json_object_set_new(j, "license", json_string(m.license));
    json_object_set_new(j, "modelfile", srv_json_text(mf.data ? mf.data : "", mf.len));
    if (pt.len) json_object_set_new(j, "parameters", srv_json_text(pt.data, pt.len));
    json_object_set_new(j, "template", tmpl ? srv_json_text(tmpl, strlen(tmpl)) : json_string(""));
    json_object_set_new(j, "template_source", json_string(source));
    if (m.ollama_template) json_object_set_new(j, "ollama_template", srv_json_text(m.ollama_template, strlen(m.ollama_template)));
    if (m.system) json_object_set_new(j, "system", srv_json_text(m.system, strlen(m.system)));
    json_object_set_new(j, "details", details ? details : empty_details());
    json_object_set_new(j, "model_info", mi);
    json_object_set_new(j, "capabilities", caps);
    char ts[40];
    json_object_set_new(j, "modified_at", json_string(srv_rfc3339nano(m.mtime_ns, false, ts)));
    srv_respond_json(out, 200, j);
    srv_buf_free(&mf);
    srv_buf_free(&pt);
    loom_free(gguf_tmpl);
    srv_model_info_free(&m);
}

/* ------------------------------------------------------------------ /api/ps */

void srv_api_ps(loom_server *s, srv_response *out) {
    srv_ps_entry *v = NULL;
    int n = 0;
    if (!srv_models_ps(s->models, &v, &n)) {
        srv_api_error(out, SRV_API_CHAT, 500, "out of memory");
        return;
    }
    json_t *arr = json_array();
    for (int i = 0; i < n; i++) {
        gguf_meta gm;
        json_t *det = gguf_meta_get(v[i].info.gguf, &gm) ? gm.details : empty_details();
        char ts[40];
        /* "never" expires: Ollama shows a date far in the future */
        int64_t exp = v[i].expires_ns == INT64_MAX ? INT64_MAX - 1 : v[i].expires_ns;
        char digest[72];
        snprintf(digest, sizeof digest, "%s", v[i].info.digest);
        if (!digest[0]) { /* the store caches digests: the first /api/ps of a model pays for it */
            srv_model_info m;
            srv_err e = {0};
            if (srv_store_find(s->store, v[i].info.name, &m, true, &e)) {
                snprintf(digest, sizeof digest, "%s", m.digest);
                srv_model_info_free(&m);
            }
        }
        json_array_append_new(arr, json_pack("{s:s,s:s,s:I,s:s,s:o,s:s,s:I,s:i,s:i}", "name", v[i].info.name, "model",
                                             v[i].info.name, "size", (json_int_t)v[i].mem, "digest", digest, "details",
                                             det, "expires_at", srv_rfc3339nano(exp, false, ts), "size_vram",
                                             (json_int_t)v[i].mem_accel, "context_length", v[i].n_ctx, "parallel",
                                             v[i].n_slots));
    }
    srv_ps_free(v, n);
    srv_respond_json(out, 200, json_pack("{s:o}", "models", arr));
}

/* ------------------------------------------------------------------ store operations */

/* A minimal Modelfile: FROM, SYSTEM, TEMPLATE, LICENSE ("""multi-line""" or one
 * line) and PARAMETER name value lines. */
static bool parse_modelfile(const char *mf, char **from, char **system, char **tmpl, char **license, json_t *params,
                            srv_err *e) {
    const char *p = mf;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') p++;
        if (!*p) break;
        if (*p == '#') {
            while (*p && *p != '\n') p++;
            continue;
        }
        const char *kw = p;
        while (*p && !isspace((unsigned char)*p)) p++;
        size_t kl = (size_t)(p - kw);
        while (*p == ' ' || *p == '\t') p++;
        char *val = NULL;
        if (!strncmp(p, "\"\"\"", 3)) {
            const char *end = strstr(p + 3, "\"\"\"");
            if (!end) {
                srv_err_set(e, 400, "modelfile: unterminated \"\"\"");
                return false;
            }
            val = loom_malloc((size_t)(end - p - 3) + 1);
            if (val) memcpy(val, p + 3, (size_t)(end - p - 3)), val[end - p - 3] = 0;
            p = end + 3;
        } else {
            const char *end = p;
            while (*end && *end != '\n') end++;
            size_t n = (size_t)(end - p);
            while (n && isspace((unsigned char)p[n - 1])) n--;
            val = loom_malloc(n + 1);
            if (val) memcpy(val, p, n), val[n] = 0;
            p = end;
        }
        if (!val) {
            srv_err_set(e, 500, "out of memory");
            return false;
        }
        char **dst = NULL;
        if (kl == 4 && !strncasecmp(kw, "FROM", 4)) dst = from;
        else if (kl == 6 && !strncasecmp(kw, "SYSTEM", 6)) dst = system;
        else if (kl == 8 && !strncasecmp(kw, "TEMPLATE", 8)) dst = tmpl;
        else if (kl == 7 && !strncasecmp(kw, "LICENSE", 7)) dst = license;
        if (dst) {
            loom_free(*dst);
            *dst = val;
            continue;
        }
        if (kl == 9 && !strncasecmp(kw, "PARAMETER", 9)) {
            char *sp = val;
            while (*sp && !isspace((unsigned char)*sp)) sp++;
            char *v = sp;
            while (*v && isspace((unsigned char)*v)) v++;
            *sp = 0;
            json_t *jv = json_loads(v, JSON_DECODE_ANY, NULL);
            if (!jv) jv = json_string(v);
            if (!strcmp(val, "stop")) {
                json_t *arr = json_object_get(params, "stop");
                if (!json_is_array(arr)) {
                    arr = json_array();
                    json_object_set_new(params, "stop", arr);
                }
                json_array_append_new(arr, jv);
            } else {
                json_object_set_new(params, val, jv);
            }
            loom_free(val);
            continue;
        }
        loom_free(val);
        srv_err_set(e, 400, "modelfile: unknown command '%.*s'", (int)kl, kw);
        return false;
    }
    return true;
}

static const char *name_field(const json_t *b) {
    const json_t *v = json_object_get(b, "model");
    if (!json_is_string(v) || !json_string_length(v)) v = json_object_get(b, "name");
    return json_is_string(v) && json_string_length(v) ? json_string_value(v) : NULL;
}

static char *str_field(const json_t *b, const char *k) {
    const json_t *v = json_object_get(b, k);
    return json_is_string(v) ? loom_strdup(json_string_value(v)) : NULL;
}

void srv_api_store_op(loom_server *s, const srv_request *rq, const char *op, srv_response *out) {
    srv_err e = {0};
    json_t *b = srv_json_parse(rq->body, rq->body_len, &s->lim, &e);
    if (!b) {
        srv_api_error(out, SRV_API_CHAT, e.status, e.msg);
        return;
    }
    if (!strcmp(op, "pull") || !strcmp(op, "push")) {
        const char *n = name_field(b);
        srv_buf msg = {0};
        srv_buf_printf(&msg, "loom serve has no model registry: %s '%s' is not possible. Put GGUF files in the model "
                       "directory (--models / LOOM_MODELS), or pull with Ollama: Loom reads Ollama's store",
                       op, n ? n : "");
        srv_api_error(out, SRV_API_CHAT, 501, msg.data ? msg.data : "no registry");
        srv_buf_free(&msg);
        json_decref(b);
        return;
    }
    bool ok = false;
    if (!strcmp(op, "delete")) {
        const char *n = name_field(b);
        if (!n) srv_err_set(&e, 400, "model is required");
        else {
            snprintf(out->model, sizeof out->model, "%s", n);
            ok = srv_store_delete(s->store, n, &e);
            if (ok) srv_models_unload(s->models, n);
        }
        if (ok) {
            out->status = 200;
            srv_buf_clear(&out->body);
        }
    } else if (!strcmp(op, "copy")) {
        const json_t *src = json_object_get(b, "source"), *dst = json_object_get(b, "destination");
        if (!json_is_string(src) || !json_is_string(dst) || !json_string_length(src) || !json_string_length(dst))
            srv_err_set(&e, 400, "\"source\" and \"destination\" are required");
        else ok = srv_store_copy(s->store, json_string_value(src), json_string_value(dst), &e);
        if (ok) {
            out->status = 200;
            srv_buf_clear(&out->body);
        }
    } else if (!strcmp(op, "create")) {
        const char *n = name_field(b);
        char *from = str_field(b, "from"), *system = str_field(b, "system"), *tmpl = str_field(b, "template");
        char *license = NULL;
        const json_t *lic = json_object_get(b, "license");
        if (json_is_string(lic)) license = loom_strdup(json_string_value(lic));
        else if (json_is_array(lic) && json_is_string(json_array_get(lic, 0))) license = loom_strdup(json_string_value(json_array_get(lic, 0)));
        json_t *params = json_object();
        const json_t *pj = json_object_get(b, "parameters");
        if (json_is_object(pj)) json_object_update(params, (json_t *)pj);
        const json_t *mf = json_object_get(b, "modelfile");
        const json_t *files = json_object_get(b, "files");
        if (!n) srv_err_set(&e, 400, "model is required");
        else if (json_is_string(mf) && !parse_modelfile(json_string_value(mf), &from, &system, &tmpl, &license, params, &e)) {
        } else if (files && !json_is_null(files) && !from) {
            srv_err_set(&e, 400, "creating from uploaded blobs (\"files\") is not supported: give \"from\" (a model "
                        "name or the path of a GGUF file on the server)");
        } else if (json_is_string(json_object_get(b, "quantize")) || json_is_string(json_object_get(b, "quantization"))) {
            srv_err_set(&e, 400, "quantize is not supported by loom serve");
        } else {
            if (tmpl && srv_is_go_template(tmpl) && strcmp(tmpl, "{{ .Prompt }}")) {
                srv_err_set(&e, 400, "the template is a Go template (Ollama's syntax); Loom uses Jinja chat templates");
            } else {
                srv_options chk;
                srv_options_defaults(&chk);
                if (srv_options_parse(params, &s->lim, &chk, &e))
                    ok = srv_store_create(s->store, n, from, system, tmpl, params, license, &e);
                srv_options_free(&chk);
            }
        }
        if (n) snprintf(out->model, sizeof out->model, "%s", n);
        loom_free(from);
        loom_free(system);
        loom_free(tmpl);
        loom_free(license);
        json_decref(params);
        if (ok) {
            const json_t *stream = json_object_get(b, "stream");
            bool st = !json_is_false(stream);
            srv_buf_clear(&out->body);
            out->status = 200;
            if (st) {
                out->content_type = "application/x-ndjson";
                srv_buf_puts(&out->body, "{\"status\":\"writing manifest\"}\n{\"status\":\"success\"}\n");
            } else {
                out->content_type = "application/json; charset=utf-8";
                srv_buf_puts(&out->body, "{\"status\":\"success\"}");
            }
        }
    }
    if (!ok) srv_api_error(out, SRV_API_CHAT, e.status ? e.status : 500, e.msg);
    json_decref(b);
}

/* ------------------------------------------------------------------ operations */

void srv_api_health(loom_server *s, srv_response *out) {
    if (srv_models_loading(s->models) > 0)
        srv_respond_json(out, 503, json_pack("{s:s}", "status", "loading"));
    else
        srv_respond_json(out, 200, json_pack("{s:s}", "status", "ok"));
}

void srv_api_metrics(loom_server *s, srv_response *out) {
    srv_buf *b = &out->body;
    srv_buf_clear(b);
    out->status = 200;
    out->content_type = "text/plain; version=0.0.4; charset=utf-8";
    srv_metrics *m = &s->metrics;
    srv_buf_puts(b, "# HELP loom_requests_total HTTP requests answered, by status code.\n"
                    "# TYPE loom_requests_total counter\n");
    static const struct {
        const char *code;
        size_t off;
    } codes[] = {{"200", offsetof(srv_metrics, req_200)}, {"400", offsetof(srv_metrics, req_400)},
                 {"404", offsetof(srv_metrics, req_404)}, {"413", offsetof(srv_metrics, req_413)},
                 {"499", offsetof(srv_metrics, req_499)}, {"500", offsetof(srv_metrics, req_500)},
                 {"503", offsetof(srv_metrics, req_503)}, {"other", offsetof(srv_metrics, req_other)}};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        srv_buf_printf(b, "loom_requests_total{status=\"%s\"} %llu\n", codes[i].code,
                       (unsigned long long)atomic_load((atomic_ullong *)((char *)m + codes[i].off)));
    srv_buf_printf(b, "# HELP loom_requests_in_flight Requests being answered now.\n# TYPE loom_requests_in_flight gauge\n"
                      "loom_requests_in_flight %lld\n", (long long)atomic_load(&m->in_flight));
    srv_buf_printf(b, "# HELP loom_prompt_tokens_total Prompt tokens evaluated (cached prefixes excluded).\n"
                      "# TYPE loom_prompt_tokens_total counter\nloom_prompt_tokens_total %llu\n",
                   (unsigned long long)atomic_load(&m->tokens_prompt));
    srv_buf_printf(b, "# HELP loom_generated_tokens_total Tokens generated.\n# TYPE loom_generated_tokens_total counter\n"
                      "loom_generated_tokens_total %llu\n", (unsigned long long)atomic_load(&m->tokens_gen));
    srv_buf_printf(b, "# HELP loom_model_loads_total Models loaded.\n# TYPE loom_model_loads_total counter\n"
                      "loom_model_loads_total %llu\n", (unsigned long long)atomic_load(&m->loads));
    srv_buf_printf(b, "# HELP loom_model_load_seconds_total Time spent loading models.\n"
                      "# TYPE loom_model_load_seconds_total counter\nloom_model_load_seconds_total %.6f\n",
                   (double)atomic_load(&m->load_ns_total) / 1e9);
    srv_ps_entry *v = NULL;
    int n = 0;
    srv_models_ps(s->models, &v, &n);
    srv_buf_printf(b, "# HELP loom_models_loaded Models loaded now.\n# TYPE loom_models_loaded gauge\n"
                      "loom_models_loaded %d\n", n);
    srv_buf_puts(b, "# HELP loom_queue_depth Requests waiting for a slot.\n# TYPE loom_queue_depth gauge\n");
    for (int i = 0; i < n; i++) srv_buf_printf(b, "loom_queue_depth{model=\"%s\"} %d\n", v[i].info.name, v[i].st.queued);
    srv_buf_puts(b, "# HELP loom_slots_active Slots generating or reading a prompt.\n# TYPE loom_slots_active gauge\n");
    for (int i = 0; i < n; i++) srv_buf_printf(b, "loom_slots_active{model=\"%s\"} %d\n", v[i].info.name, v[i].st.active);
    srv_buf_puts(b, "# HELP loom_slots_total Slots of each loaded model.\n# TYPE loom_slots_total gauge\n");
    for (int i = 0; i < n; i++) srv_buf_printf(b, "loom_slots_total{model=\"%s\"} %d\n", v[i].info.name, v[i].st.n_slots);
    srv_buf_puts(b, "# HELP loom_tokens_per_second Generated tokens per second over the last 10 s.\n"
                    "# TYPE loom_tokens_per_second gauge\n");
    for (int i = 0; i < n; i++) srv_buf_printf(b, "loom_tokens_per_second{model=\"%s\"} %.3f\n", v[i].info.name, v[i].st.gen_tps);
    srv_buf_puts(b, "# HELP loom_decode_steps_total Decode steps (one batch each) of each loaded model.\n"
                    "# TYPE loom_decode_steps_total counter\n");
    for (int i = 0; i < n; i++) srv_buf_printf(b, "loom_decode_steps_total{model=\"%s\"} %llu\n", v[i].info.name,
                                               (unsigned long long)v[i].st.steps);
    srv_buf_puts(b, "# HELP loom_decode_batch_tokens_total Tokens decoded in those steps (prompt chunks and generating slots).\n"
                    "# TYPE loom_decode_batch_tokens_total counter\n");
    for (int i = 0; i < n; i++) srv_buf_printf(b, "loom_decode_batch_tokens_total{model=\"%s\"} %llu\n", v[i].info.name,
                                               (unsigned long long)v[i].st.batch_rows);
    srv_buf_puts(b, "# HELP loom_decode_streams_total Generating slots summed over the steps that had any "
                    "(divide by loom_decode_generating_steps_total: streams decoded together).\n"
                    "# TYPE loom_decode_streams_total counter\n");
    for (int i = 0; i < n; i++) srv_buf_printf(b, "loom_decode_streams_total{model=\"%s\"} %llu\n", v[i].info.name,
                                               (unsigned long long)v[i].st.gen_rows);
    srv_buf_puts(b, "# HELP loom_decode_generating_steps_total Steps with at least one generating slot.\n"
                    "# TYPE loom_decode_generating_steps_total counter\n");
    for (int i = 0; i < n; i++) srv_buf_printf(b, "loom_decode_generating_steps_total{model=\"%s\"} %llu\n", v[i].info.name,
                                               (unsigned long long)v[i].st.gen_steps);
    srv_buf_puts(b, "# HELP loom_decode_max_mixed_prompt_tokens Most prompt tokens fed in one step that also decoded "
                    "generating slots (bounded by loom_decode_prompt_chunk_tokens).\n"
                    "# TYPE loom_decode_max_mixed_prompt_tokens gauge\n");
    for (int i = 0; i < n; i++) srv_buf_printf(b, "loom_decode_max_mixed_prompt_tokens{model=\"%s\"} %d\n", v[i].info.name,
                                               v[i].st.max_mixed_prompt);
    srv_buf_puts(b, "# HELP loom_decode_prompt_chunk_tokens Prompt tokens per step while other slots generate.\n"
                    "# TYPE loom_decode_prompt_chunk_tokens gauge\n");
    for (int i = 0; i < n; i++) srv_buf_printf(b, "loom_decode_prompt_chunk_tokens{model=\"%s\"} %d\n", v[i].info.name,
                                               v[i].st.prompt_chunk);
    srv_buf_puts(b, "# HELP loom_model_memory_bytes Planned memory of each loaded model.\n"
                    "# TYPE loom_model_memory_bytes gauge\n");
    for (int i = 0; i < n; i++) srv_buf_printf(b, "loom_model_memory_bytes{model=\"%s\"} %llu\n", v[i].info.name,
                                               (unsigned long long)v[i].mem);
    srv_ps_free(v, n);
}
