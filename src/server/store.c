/* store.c - Loom's model directory and Ollama's store, read-only (see store.h). */
#include "server/store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "quant/alloc.h"
#include "server/util.h"

#define OLLAMA_REGISTRY "registry.ollama.ai"
#define OLLAMA_MT_MODEL "application/vnd.ollama.image.model"

typedef struct digest_entry {
    char *path;
    int64_t size, mtime_ns;
    char hex[65];
    struct digest_entry *next;
} digest_entry;

struct srv_store {
    char *loom_dir;
    char *ollama_dir;
    pthread_mutex_t mu;
    digest_entry *digests;
};

void srv_model_info_free(srv_model_info *m) {
    if (!m) return;
    loom_free(m->name);
    loom_free(m->gguf);
    loom_free(m->manifest);
    loom_free(m->system);
    loom_free(m->template_text);
    loom_free(m->ollama_template);
    loom_free(m->license);
    json_decref(m->params);
    memset(m, 0, sizeof *m);
}

static char *dup_or_null(const char *s, bool *ok) {
    if (!s) return NULL;
    char *d = loom_strdup(s);
    if (!d) *ok = false;
    return d;
}

bool srv_model_info_copy(srv_model_info *d, const srv_model_info *s) {
    bool ok = true;
    memset(d, 0, sizeof *d);
    d->name = dup_or_null(s->name, &ok);
    d->gguf = dup_or_null(s->gguf, &ok);
    d->manifest = dup_or_null(s->manifest, &ok);
    d->ollama = s->ollama;
    memcpy(d->digest, s->digest, sizeof d->digest);
    d->size = s->size;
    d->mtime_ns = s->mtime_ns;
    d->system = dup_or_null(s->system, &ok);
    d->template_text = dup_or_null(s->template_text, &ok);
    d->ollama_template = dup_or_null(s->ollama_template, &ok);
    d->license = dup_or_null(s->license, &ok);
    d->params = s->params ? json_deep_copy(s->params) : NULL;
    if (s->params && !d->params) ok = false;
    if (!ok) srv_model_info_free(d);
    return ok;
}

srv_store *srv_store_new(const char *loom_dir, const char *ollama_dir) {
    srv_store *s = loom_calloc(1, sizeof *s);
    if (!s) return NULL;
    bool ok = true;
    s->loom_dir = loom_dir && *loom_dir ? dup_or_null(loom_dir, &ok) : NULL;
    s->ollama_dir = ollama_dir && *ollama_dir ? dup_or_null(ollama_dir, &ok) : NULL;
    pthread_mutex_init(&s->mu, NULL);
    if (!ok) {
        srv_store_free(s);
        return NULL;
    }
    return s;
}

void srv_store_free(srv_store *s) {
    if (!s) return;
    for (digest_entry *d = s->digests, *n; d; d = n) {
        n = d->next;
        loom_free(d->path);
        loom_free(d);
    }
    loom_free(s->loom_dir);
    loom_free(s->ollama_dir);
    pthread_mutex_destroy(&s->mu);
    loom_free(s);
}

const char *srv_store_dir(const srv_store *s) { return s->loom_dir; }

static int64_t mtime_ns(const struct stat *st) {
    return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

/* sha256 of a file, cached by (path, size, mtime). */
static bool file_digest(srv_store *s, const char *path, char hex[65]) {
    struct stat st;
    if (stat(path, &st)) return false;
    pthread_mutex_lock(&s->mu);
    for (digest_entry *d = s->digests; d; d = d->next)
        if (!strcmp(d->path, path) && d->size == (int64_t)st.st_size && d->mtime_ns == mtime_ns(&st)) {
            memcpy(hex, d->hex, 65);
            pthread_mutex_unlock(&s->mu);
            return true;
        }
    pthread_mutex_unlock(&s->mu);
    if (!srv_sha256_file(path, hex)) return false;
    digest_entry *d = loom_calloc(1, sizeof *d);
    if (d && (d->path = loom_strdup(path))) {
        d->size = (int64_t)st.st_size;
        d->mtime_ns = mtime_ns(&st);
        memcpy(d->hex, hex, 65);
        pthread_mutex_lock(&s->mu);
        d->next = s->digests;
        s->digests = d;
        pthread_mutex_unlock(&s->mu);
    } else {
        loom_free(d);
    }
    return true;
}

static char *read_file(const char *path, size_t max, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    srv_buf b = {0};
    char tmp[8192];
    size_t n;
    while ((n = fread(tmp, 1, sizeof tmp, f)) > 0) {
        if (b.len + n > max || !srv_buf_append(&b, tmp, n)) {
            srv_buf_free(&b);
            fclose(f);
            return NULL;
        }
    }
    fclose(f);
    if (!b.data && !srv_buf_append(&b, "", 0)) return NULL;
    if (len) *len = b.len;
    return b.data;
}

static char *path_join(const char *a, const char *b) {
    size_t n = strlen(a) + strlen(b) + 2;
    char *p = loom_malloc(n);
    if (p) snprintf(p, n, "%s/%s", a, b);
    return p;
}

static char *json_str_field(const json_t *o, const char *k) {
    const json_t *v = json_object_get(o, k);
    return json_is_string(v) ? srv_json_strdup(v, NULL) : NULL;
}

/* ---------------------------------------------------------------- Loom's store */

/* NAME[:TAG] <-> file base name: the tag "latest" is implicit. */
static void loom_base_name(const char *canon, char *out, size_t n) {
    const char *c = strrchr(canon, ':');
    if (c && !strcmp(c + 1, "latest")) snprintf(out, n, "%.*s", (int)(c - canon), canon);
    else snprintf(out, n, "%s", canon);
}

/* Fill m from a Loom manifest (NAME.json). */
static bool load_loom_manifest(srv_store *s, const char *path, srv_model_info *m) {
    size_t len;
    char *txt = read_file(path, 64u << 20, &len);
    if (!txt) return false;
    json_t *j = json_loadb(txt, len, 0, NULL);
    loom_free(txt);
    if (!json_is_object(j)) {
        json_decref(j);
        return false;
    }
    char *gguf = json_str_field(j, "gguf");
    if (!gguf) {
        json_decref(j);
        return false;
    }
    if (gguf[0] != '/') {
        char *abs = path_join(s->loom_dir, gguf);
        loom_free(gguf);
        gguf = abs;
    }
    m->gguf = gguf;
    m->manifest = loom_strdup(path);
    m->system = json_str_field(j, "system");
    m->template_text = json_str_field(j, "template");
    m->license = json_str_field(j, "license");
    const json_t *p = json_object_get(j, "parameters");
    if (json_is_object(p)) m->params = json_deep_copy(p);
    json_decref(j);
    return m->gguf != NULL;
}

static bool loom_entry(srv_store *s, const char *file, srv_model_info *m, bool with_digest) {
    size_t fl = strlen(file);
    bool is_gguf = fl > 5 && !strcmp(file + fl - 5, ".gguf");
    bool is_json = fl > 5 && !strcmp(file + fl - 5, ".json");
    if ((!is_gguf && !is_json) || file[0] == '.') return false;
    char base[300];
    snprintf(base, sizeof base, "%.*s", (int)(fl - 5), file);
    char canon[300];
    if (!srv_name_canonical(base, canon, sizeof canon) || strchr(base, '/')) return false;
    char *path = path_join(s->loom_dir, file);
    struct stat st;
    if (!path || stat(path, &st) || !S_ISREG(st.st_mode)) {
        loom_free(path);
        return false;
    }
    memset(m, 0, sizeof *m);
    m->name = loom_strdup(canon);
    m->mtime_ns = mtime_ns(&st);
    if (is_gguf) {
        m->gguf = path;
        m->size = (int64_t)st.st_size;
        if (with_digest && !file_digest(s, path, m->digest)) m->digest[0] = 0;
    } else {
        bool ok = load_loom_manifest(s, path, m);
        loom_free(path);
        struct stat gs;
        if (!ok || stat(m->gguf, &gs)) {
            srv_model_info_free(m);
            return false;
        }
        m->size = (int64_t)gs.st_size;
        if (with_digest && !file_digest(s, m->manifest, m->digest)) m->digest[0] = 0;
    }
    if (!m->name || !m->gguf) {
        srv_model_info_free(m);
        return false;
    }
    return true;
}

/* ---------------------------------------------------------------- Ollama's store */

/* Split a name into registry host, namespace, model and tag with Ollama's defaults. */
static bool ollama_parts(const char *name, char *host, char *ns, char *model, char *tag, size_t n) {
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s", name);
    char *c = strrchr(tmp, ':');
    char *slash = strrchr(tmp, '/');
    if (c && (!slash || c > slash)) {
        *c = 0;
        snprintf(tag, n, "%s", c + 1);
    } else {
        snprintf(tag, n, "latest");
    }
    char *parts[3];
    int np = 0;
    for (char *p = tmp, *q; np < 3; p = q + 1) {
        parts[np++] = p;
        q = strchr(p, '/');
        if (!q) break;
        *q = 0;
    }
    if (strchr(parts[np - 1], '/')) return false;
    snprintf(host, n, "%s", np == 3 ? parts[0] : OLLAMA_REGISTRY);
    snprintf(ns, n, "%s", np >= 2 ? parts[np - 2] : "library");
    snprintf(model, n, "%s", parts[np - 1]);
    return true;
}

static void ollama_display(const char *host, const char *ns, const char *model, const char *tag, char *out,
                           size_t n) {
    if (!strcmp(host, OLLAMA_REGISTRY) && !strcmp(ns, "library")) snprintf(out, n, "%s:%s", model, tag);
    else if (!strcmp(host, OLLAMA_REGISTRY)) snprintf(out, n, "%s/%s:%s", ns, model, tag);
    else snprintf(out, n, "%s/%s/%s:%s", host, ns, model, tag);
}

static char *blob_path(const srv_store *s, const char *digest) {
    /* "sha256:<64 hex>" -> blobs/sha256-<hex> */
    if (strncmp(digest, "sha256:", 7) || strlen(digest) != 71) return NULL;
    for (const char *p = digest + 7; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) return NULL;
    size_t n = strlen(s->ollama_dir) + 100;
    char *p = loom_malloc(n);
    if (p) snprintf(p, n, "%s/blobs/sha256-%s", s->ollama_dir, digest + 7);
    return p;
}

static bool load_ollama_manifest(srv_store *s, const char *path, const char *display, srv_model_info *m,
                                 bool with_digest) {
    size_t len;
    char *txt = read_file(path, 4u << 20, &len);
    if (!txt) return false;
    json_t *j = json_loadb(txt, len, 0, NULL);
    loom_free(txt);
    const json_t *layers = json_object_get(j, "layers");
    if (!json_is_array(layers)) {
        json_decref(j);
        return false;
    }
    memset(m, 0, sizeof *m);
    m->ollama = true;
    m->name = loom_strdup(display);
    m->manifest = loom_strdup(path);
    const json_t *cfg = json_object_get(j, "config");
    if (json_is_integer(json_object_get(cfg, "size"))) m->size += json_integer_value(json_object_get(cfg, "size"));
    for (size_t i = 0; i < json_array_size(layers); i++) {
        const json_t *l = json_array_get(layers, i);
        const json_t *mt = json_object_get(l, "mediaType"), *dg = json_object_get(l, "digest");
        if (!json_is_string(mt) || !json_is_string(dg)) continue;
        if (json_is_integer(json_object_get(l, "size"))) m->size += json_integer_value(json_object_get(l, "size"));
        char *bp = blob_path(s, json_string_value(dg));
        if (!bp) continue;
        const char *t = json_string_value(mt);
        if (!strcmp(t, OLLAMA_MT_MODEL)) {
            if (!m->gguf) m->gguf = bp, bp = NULL;
        } else if (!strcmp(t, "application/vnd.ollama.image.system")) {
            loom_free(m->system);
            m->system = read_file(bp, 1u << 20, NULL);
        } else if (!strcmp(t, "application/vnd.ollama.image.template")) {
            loom_free(m->ollama_template);
            m->ollama_template = read_file(bp, 1u << 20, NULL);
        } else if (!strcmp(t, "application/vnd.ollama.image.license")) {
            loom_free(m->license);
            m->license = read_file(bp, 1u << 20, NULL);
        } else if (!strcmp(t, "application/vnd.ollama.image.params")) {
            size_t pl;
            char *pt = read_file(bp, 1u << 20, &pl);
            json_t *pj = pt ? json_loadb(pt, pl, 0, NULL) : NULL;
            loom_free(pt);
            if (json_is_object(pj)) {
                json_decref(m->params);
                m->params = pj;
            } else {
                json_decref(pj);
            }
        }
        loom_free(bp);
    }
    json_decref(j);
    struct stat st;
    if (!m->name || !m->gguf || stat(m->gguf, &st) || stat(path, &st)) {
        srv_model_info_free(m);
        return false;
    }
    m->mtime_ns = mtime_ns(&st);
    if (with_digest && !file_digest(s, path, m->digest)) m->digest[0] = 0;
    return true;
}

/* ---------------------------------------------------------------- listing */

typedef struct info_vec {
    srv_model_info *v;
    int n, cap;
    bool oom;
} info_vec;

static void vec_push(info_vec *iv, srv_model_info *m) {
    for (int i = 0; i < iv->n; i++)
        if (!strcmp(iv->v[i].name, m->name)) {
            /* Loom's entries come first and win over Ollama's; a Loom manifest wins
             * over a GGUF of the same name (as in srv_store_find) */
            if (!m->ollama && m->manifest && !iv->v[i].ollama && !iv->v[i].manifest) {
                srv_model_info_free(&iv->v[i]);
                iv->v[i] = *m;
            } else {
                srv_model_info_free(m);
            }
            return;
        }
    if (iv->n == iv->cap) {
        int cap = iv->cap ? 2 * iv->cap : 16;
        srv_model_info *v = loom_realloc(iv->v, (size_t)cap * sizeof *v);
        if (!v) {
            iv->oom = true;
            srv_model_info_free(m);
            return;
        }
        iv->v = v, iv->cap = cap;
    }
    iv->v[iv->n++] = *m;
}

static void list_ollama(srv_store *s, info_vec *iv, bool with_digest) {
    char root[PATH_MAX];
    snprintf(root, sizeof root, "%s/manifests", s->ollama_dir);
    DIR *d1 = opendir(root);
    if (!d1) return;
    struct dirent *h, *n, *mdl, *t;
    while ((h = readdir(d1))) {
        if (h->d_name[0] == '.') continue;
        char p1[PATH_MAX];
        if (snprintf(p1, sizeof p1, "%s/%s", root, h->d_name) >= (int)sizeof p1) continue;
        DIR *d2 = opendir(p1);
        if (!d2) continue;
        while ((n = readdir(d2))) {
            if (n->d_name[0] == '.') continue;
            char p2[PATH_MAX];
            if (snprintf(p2, sizeof p2, "%s/%s", p1, n->d_name) >= (int)sizeof p2) continue;
            DIR *d3 = opendir(p2);
            if (!d3) continue;
            while ((mdl = readdir(d3))) {
                if (mdl->d_name[0] == '.') continue;
                char p3[PATH_MAX];
                if (snprintf(p3, sizeof p3, "%s/%s", p2, mdl->d_name) >= (int)sizeof p3) continue;
                DIR *d4 = opendir(p3);
                if (!d4) continue;
                while ((t = readdir(d4))) {
                    if (t->d_name[0] == '.') continue;
                    char p4[PATH_MAX], disp[600];
                    if (snprintf(p4, sizeof p4, "%s/%s", p3, t->d_name) >= (int)sizeof p4) continue;
                    ollama_display(h->d_name, n->d_name, mdl->d_name, t->d_name, disp, sizeof disp);
                    if (!srv_name_valid(disp, NULL, 0)) continue;
                    srv_model_info m;
                    if (load_ollama_manifest(s, p4, disp, &m, with_digest)) vec_push(iv, &m);
                }
                closedir(d4);
            }
            closedir(d3);
        }
        closedir(d2);
    }
    closedir(d1);
}

static int cmp_info(const void *a, const void *b) {
    return strcmp(((const srv_model_info *)a)->name, ((const srv_model_info *)b)->name);
}

bool srv_store_list(srv_store *s, srv_model_info **out, int *n, bool with_digest) {
    info_vec iv = {0};
    if (s->loom_dir) {
        DIR *d = opendir(s->loom_dir);
        struct dirent *de;
        while (d && (de = readdir(d))) {
            srv_model_info m;
            if (loom_entry(s, de->d_name, &m, with_digest)) vec_push(&iv, &m);
        }
        if (d) closedir(d);
    }
    if (s->ollama_dir) list_ollama(s, &iv, with_digest);
    if (iv.n) qsort(iv.v, (size_t)iv.n, sizeof *iv.v, cmp_info);
    *out = iv.v;
    *n = iv.n;
    return !iv.oom;
}

bool srv_store_find(srv_store *s, const char *name, srv_model_info *out, bool with_digest, srv_err *e) {
    char why[128], canon[300];
    memset(out, 0, sizeof *out);
    if (!srv_name_valid(name, why, sizeof why)) {
        srv_err_set(e, 400, "invalid model name '%s': %s", name, why);
        return false;
    }
    srv_name_canonical(name, canon, sizeof canon);
    if (s->loom_dir && !strchr(canon, '/')) {
        char base[300], file[320];
        loom_base_name(canon, base, sizeof base);
        static const char *const ext[] = {".json", ".gguf"}; /* a manifest overrides a GGUF of its name */
        for (int i = 0; i < 2; i++) {
            snprintf(file, sizeof file, "%s%s", base, ext[i]);
            if (loom_entry(s, file, out, with_digest)) return true;
            snprintf(file, sizeof file, "%s%s", canon, ext[i]); /* "NAME:latest.gguf" */
            if (strcmp(base, canon) && loom_entry(s, file, out, with_digest)) {
                loom_free(out->name);
                out->name = loom_strdup(canon);
                return true;
            }
        }
    }
    if (s->ollama_dir) {
        char host[300], ns[300], model[300], tag[300], path[PATH_MAX], disp[1300];
        if (ollama_parts(canon, host, ns, model, tag, 300)) {
            snprintf(path, sizeof path, "%s/manifests/%s/%s/%s/%s", s->ollama_dir, host, ns, model, tag);
            ollama_display(host, ns, model, tag, disp, sizeof disp);
            if (load_ollama_manifest(s, path, disp, out, with_digest)) return true;
        }
    }
    if (!e->status) e->code = "model_not_found"; /* OpenAI's code */
    srv_err_set(e, 404, "model '%s' not found", name);
    return false;
}

/* ---------------------------------------------------------------- writes */

static bool writable_name(const srv_store *s, const char *name, char *base, size_t n, srv_err *e) {
    char why[128], canon[300];
    if (!srv_name_valid(name, why, sizeof why)) {
        srv_err_set(e, 400, "invalid model name '%s': %s", name, why);
        return false;
    }
    if (!s->loom_dir) {
        srv_err_set(e, 500, "no model directory (--models DIR / LOOM_MODELS)");
        return false;
    }
    srv_name_canonical(name, canon, sizeof canon);
    if (strchr(canon, '/')) {
        srv_err_set(e, 400, "'%s': names with a namespace belong to Ollama's store, which Loom does not write",
                    name);
        return false;
    }
    loom_base_name(canon, base, n);
    return true;
}

static bool ensure_dir(const char *dir, srv_err *e) {
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", dir);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(tmp, 0755) && errno != EEXIST) break;
        *p = '/';
    }
    if (mkdir(tmp, 0755) && errno != EEXIST) {
        srv_err_set(e, 500, "cannot create the model directory %s: %s", dir, strerror(errno));
        return false;
    }
    return true;
}

bool srv_store_delete(srv_store *s, const char *name, srv_err *e) {
    srv_model_info m;
    if (!srv_store_find(s, name, &m, false, e)) return false;
    if (m.ollama) {
        srv_model_info_free(&m);
        srv_err_set(e, 403, "'%s' is in Ollama's store, which Loom reads but never changes: delete it with "
                    "`ollama rm`", name);
        return false;
    }
    const char *victim = m.manifest ? m.manifest : m.gguf;
    bool ok = unlink(victim) == 0;
    if (!ok) srv_err_set(e, 500, "deleting %s: %s", victim, strerror(errno));
    srv_model_info_free(&m);
    return ok;
}

static bool write_manifest(srv_store *s, const char *base, const srv_model_info *src, const char *system,
                           const char *tmpl, const json_t *params, const char *license, srv_err *e) {
    if (!ensure_dir(s->loom_dir, e)) return false;
    json_t *j = json_object();
    json_object_set_new(j, "gguf", json_string(src->gguf));
    const char *sys = system ? system : src->system;
    const char *tp = tmpl ? tmpl : src->template_text;
    const char *lic = license ? license : src->license;
    if (sys) json_object_set_new(j, "system", json_string(sys));
    if (tp) json_object_set_new(j, "template", json_string(tp));
    if (lic) json_object_set_new(j, "license", json_string(lic));
    json_t *pm = src->params ? json_deep_copy(src->params) : json_object();
    if (params && json_is_object(params)) json_object_update(pm, (json_t *)params);
    if (json_object_size(pm)) json_object_set(j, "parameters", pm);
    json_decref(pm);
    char path[PATH_MAX], tmp[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s.json", s->loom_dir, base);
    snprintf(tmp, sizeof tmp, "%s/.%s.json.tmp", s->loom_dir, base);
    int rc = json_dump_file(j, tmp, JSON_INDENT(2));
    json_decref(j);
    if (rc || rename(tmp, path)) {
        unlink(tmp);
        srv_err_set(e, 500, "writing %s failed", path);
        return false;
    }
    return true;
}

bool srv_store_copy(srv_store *s, const char *src, const char *dst, srv_err *e) {
    char base[300];
    if (!writable_name(s, dst, base, sizeof base, e)) return false;
    srv_model_info m;
    if (!srv_store_find(s, src, &m, false, e)) return false;
    bool ok = write_manifest(s, base, &m, NULL, NULL, NULL, NULL, e);
    srv_model_info_free(&m);
    return ok;
}

bool srv_store_create(srv_store *s, const char *dst, const char *from, const char *system, const char *tmpl,
                      const json_t *params, const char *license, srv_err *e) {
    char base[300];
    if (!writable_name(s, dst, base, sizeof base, e)) return false;
    if (!from || !*from) {
        srv_err_set(e, 400, "\"from\" is required: a model name or the path of a GGUF file");
        return false;
    }
    srv_model_info m;
    memset(&m, 0, sizeof m);
    size_t fl = strlen(from);
    if (from[0] == '/' || (fl > 5 && !strcmp(from + fl - 5, ".gguf"))) {
        char real[PATH_MAX];
        struct stat st;
        if (!realpath(from, real) || stat(real, &st) || !S_ISREG(st.st_mode)) {
            srv_err_set(e, 400, "'%s' is not a readable GGUF file", from);
            return false;
        }
        unsigned char magic[4] = {0};
        FILE *f = fopen(real, "rb");
        bool gguf = f && fread(magic, 1, 4, f) == 4 && !memcmp(magic, "GGUF", 4);
        if (f) fclose(f);
        if (!gguf) {
            srv_err_set(e, 400, "'%s' is not a GGUF file", from);
            return false;
        }
        m.gguf = loom_strdup(real);
    } else if (!srv_store_find(s, from, &m, false, e)) {
        return false;
    }
    bool ok = m.gguf && write_manifest(s, base, &m, system, tmpl, params, license, e);
    srv_model_info_free(&m);
    return ok;
}
