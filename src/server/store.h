/*
 * store.h (internal) - where model names come from.
 *
 * Loom's own store (--models DIR / LOOM_MODELS, default ~/.loom/models):
 *   - NAME.gguf is the model NAME:latest, NAME:TAG.gguf the model NAME:TAG;
 *   - NAME.json (NAME:TAG.json) is a model made by /api/create or /api/copy:
 *     {"gguf": "/abs/path.gguf", "system": "...", "template": "...",
 *      "parameters": {...Ollama options...}, "license": "..."}.
 * Ollama's store (OLLAMA_MODELS or ~/.ollama/models), read-only: manifests under
 * manifests/<registry>/<namespace>/<name>/<tag> list layers by digest; the layer
 * of media type application/vnd.ollama.image.model is the GGUF (blobs/sha256-<hex>),
 * and its system, params and license layers apply. Its template layer is a Go
 * template: Loom uses the GGUF's own Jinja chat template instead.
 * A name found in both stores is Loom's.
 *
 * Threading: a store is used under its own lock; every function is thread-safe.
 */
#ifndef LOOM_SERVER_STORE_H
#define LOOM_SERVER_STORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "server/request.h"

typedef struct srv_model_info {
    char *name;             /* canonical "name:tag" as listed */
    char *gguf;             /* the GGUF file */
    char *manifest;         /* the Loom .json or Ollama manifest file, or NULL */
    bool ollama;            /* from Ollama's store (read-only) */
    char digest[72];        /* hex sha256 (of the GGUF for .gguf models, else of the manifest) */
    int64_t size;           /* bytes (GGUF + layers) */
    int64_t mtime_ns;
    char *system;           /* default system message or NULL */
    char *template_text;    /* a template override (Jinja) from a Loom manifest, or NULL */
    char *ollama_template;  /* Ollama's Go template layer (shown, not used), or NULL */
    char *license;
    json_t *params;         /* Ollama options object or NULL */
} srv_model_info;

void srv_model_info_free(srv_model_info *m);
/* Deep copy; false on OOM. */
bool srv_model_info_copy(srv_model_info *dst, const srv_model_info *src);

typedef struct srv_store srv_store;

/* loom_dir/ollama_dir may be NULL (none). The Loom directory is created on the
 * first write. */
srv_store *srv_store_new(const char *loom_dir, const char *ollama_dir);
void srv_store_free(srv_store *s);
const char *srv_store_dir(const srv_store *s);

/* Every model, sorted by name (Loom's first on a clash). *out is an array of *n
 * entries; free each with srv_model_info_free and the array with free(). */
bool srv_store_list(srv_store *s, srv_model_info **out, int *n, bool with_digest);
/* Resolve a user's name. 400 for an invalid name, 404 "model 'x' not found". */
bool srv_store_find(srv_store *s, const char *name, srv_model_info *out, bool with_digest, srv_err *e);

/* /api/delete: only Loom's store (Ollama's is read-only: 403). */
bool srv_store_delete(srv_store *s, const char *name, srv_err *e);
/* /api/copy: dst becomes a Loom manifest with the source's GGUF and settings. */
bool srv_store_copy(srv_store *s, const char *src, const char *dst, srv_err *e);
/* /api/create: dst from an existing model (from = a name) or a local GGUF (from =
 * a path to a .gguf file), with optional system / template / parameters / license
 * overriding the source's. */
bool srv_store_create(srv_store *s, const char *dst, const char *from, const char *system,
                      const char *template_text, const json_t *params, const char *license, srv_err *e);

#endif
