/* loom info FILE.gguf [--json] | loom info --cpu | loom info --archs
 *
 * Describes a GGUF file: header facts, metadata (arrays summarised), tensor table,
 * totals by type and by layer, parameter count, file type and the architecture's
 * main hyperparameters. --json prints the same as one JSON object. Any error:
 * exit status 1 and one line on stderr. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "cpu/kernels.h"
#include "loom_backend.h"
#include "loom_gguf.h"
#include "loom_model.h"

#define INFO_ARR_ITEMS 5      /* array items shown */
#define INFO_STR_TEXT 60      /* string bytes shown in text mode */
#define INFO_ARR_STR_JSON 64  /* string bytes per array item in JSON mode */

/* Hyperparameter keys (after "<arch>.") shown when present. */
static const char *const k_hparams[] = {
    "block_count", "context_length", "embedding_length", "feed_forward_length",
    "attention.head_count", "attention.head_count_kv", "attention.key_length",
    "attention.value_length", "rope.dimension_count", "rope.freq_base",
    "attention.layer_norm_rms_epsilon", "attention.layer_norm_epsilon", "vocab_size",
    "expert_count", "expert_used_count",
};

/* ------------------------------------------------------------ output helpers */

/* Length of a valid UTF-8 sequence starting at s (n bytes left), or 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    size_t len;
    uint32_t cp;
    if (c < 0x80) return 1;
    if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1F; }
    else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0F; }
    else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07; }
    else return 0;
    if (len > n) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

/* Print bytes as a quoted JSON string (also used in text mode). Invalid UTF-8
 * bytes are written as \u00XX. At most max bytes of input are shown (0 = all);
 * a cut adds "...". */
static void put_str(FILE *f, const char *p, uint64_t len, uint64_t max) {
    const unsigned char *s = (const unsigned char *)p;
    bool cut = max && len > max;
    uint64_t n = cut ? max : len;
    fputc('"', f);
    for (uint64_t i = 0; i < n;) {
        unsigned c = s[i];
        if (c == '"' || c == '\\') { fputc('\\', f); fputc((int)c, f); i++; continue; }
        if (c == '\n') { fputs("\\n", f); i++; continue; }
        if (c == '\t') { fputs("\\t", f); i++; continue; }
        if (c == '\r') { fputs("\\r", f); i++; continue; }
        if (c < 0x20 || c == 0x7F) { fprintf(f, "\\u%04x", c); i++; continue; }
        size_t l = utf8_len(s + i, (size_t)(len - i));
        if (l == 0) { fprintf(f, "\\u%04x", c); i++; continue; }
        if (i + l > n) { cut = true; break; } /* do not split a character */
        fwrite(s + i, 1, l, f);
        i += l;
    }
    if (cut) fputs("...", f);
    fputc('"', f);
}

static void put_double(FILE *f, double v) {
    if (isnan(v) || isinf(v)) fputs("null", f);
    else fprintf(f, "%.9g", v);
}

/* One scalar value (or array element j of KV i when arr). */
static void put_value(FILE *f, const loom_gguf *g, int64_t i, bool arr, uint64_t j,
                      uint64_t max_str) {
    loom_gguf_vtype t = arr ? loom_gguf_kv_array_type(g, i) : loom_gguf_kv_type(g, i);
    int64_t iv;
    double dv;
    loom_gguf_str s;
    if (t == LOOM_GGUF_STRING) {
        if ((arr ? loom_gguf_kv_arr_str(g, i, j, &s) : loom_gguf_kv_str(g, i, &s)) == LOOM_OK)
            put_str(f, s.ptr, s.len, max_str);
        else fputs("null", f);
    } else if (t == LOOM_GGUF_F32 || t == LOOM_GGUF_F64) {
        if ((arr ? loom_gguf_kv_arr_float(g, i, j, &dv) : loom_gguf_kv_float(g, i, &dv)) == LOOM_OK)
            put_double(f, dv);
        else fputs("null", f);
    } else if (t == LOOM_GGUF_BOOL) {
        const void *data;
        uint8_t b = 0;
        if (arr) {
            if (loom_gguf_kv_arr(g, i, NULL, &data, NULL) == LOOM_OK) b = ((const uint8_t *)data)[j];
        } else {
            bool bv = false;
            loom_gguf_get_bool(g, loom_gguf_kv_key(g, i), &bv);
            b = bv;
        }
        fputs(b ? "true" : "false", f);
    } else if (t == LOOM_GGUF_U64) {
        /* may exceed int64: read the raw value */
        uint64_t u = 0;
        if (arr) {
            const void *data;
            if (loom_gguf_kv_arr(g, i, NULL, &data, NULL) == LOOM_OK) {
                const uint8_t *p = (const uint8_t *)data + j * 8;
                for (int k = 7; k >= 0; k--) u = (u << 8) | p[k];
            }
        } else {
            loom_gguf_get_u64(g, loom_gguf_kv_key(g, i), &u);
        }
        fprintf(f, "%" PRIu64, u);
    } else {
        if ((arr ? loom_gguf_kv_arr_int(g, i, j, &iv) : loom_gguf_kv_int(g, i, &iv)) == LOOM_OK)
            fprintf(f, "%" PRId64, iv);
        else fputs("null", f);
    }
}

/* ------------------------------------------------------------ aggregation */

typedef struct group {
    char name[LOOM_GGUF_MAX_NAME];
    int64_t n_tensors;
    uint64_t n_params, bytes;
} group;

static uint64_t tensor_params(const loom_gguf_tensor_info *ti) {
    return (uint64_t)ti->ne[0] * (uint64_t)ti->ne[1] * (uint64_t)ti->ne[2] * (uint64_t)ti->ne[3];
}

/* "blk.N" for block tensors, else the first dotted component. */
static void layer_of(const char *name, char *out, size_t size) {
    size_t n;
    if (strncmp(name, "blk.", 4) == 0) {
        const char *d = strchr(name + 4, '.');
        n = d ? (size_t)(d - name) : strlen(name);
    } else {
        const char *d = strchr(name, '.');
        n = d ? (size_t)(d - name) : strlen(name);
    }
    if (n >= size) n = size - 1;
    memcpy(out, name, n);
    out[n] = '\0';
}

static group *group_add(group *gs, int64_t *n, const char *name, const loom_gguf_tensor_info *ti) {
    for (int64_t k = 0; k < *n; k++)
        if (strcmp(gs[k].name, name) == 0) {
            gs[k].n_tensors++;
            gs[k].n_params += tensor_params(ti);
            gs[k].bytes += ti->size;
            return gs;
        }
    group *e = &gs[(*n)++];
    snprintf(e->name, sizeof e->name, "%s", name);
    e->n_tensors = 1;
    e->n_params = tensor_params(ti);
    e->bytes = ti->size;
    return gs;
}

static void human(char *buf, size_t size, double v) {
    if (v >= 1e9) snprintf(buf, size, "%.2fB", v / 1e9);
    else if (v >= 1e6) snprintf(buf, size, "%.2fM", v / 1e6);
    else if (v >= 1e3) snprintf(buf, size, "%.1fK", v / 1e3);
    else snprintf(buf, size, "%.0f", v);
}

/* ------------------------------------------------------------ printing */

static void print_shape(FILE *f, const loom_gguf_tensor_info *ti, bool json) {
    fputc('[', f);
    for (uint32_t d = 0; d < ti->n_dims; d++)
        fprintf(f, "%s%" PRId64, d ? (json ? ", " : " x ") : "", ti->ne[d]);
    fputc(']', f);
}

static int print_text(FILE *f, const loom_gguf *g, const char *arch, bool has_ft, int64_t ft,
                      group *types, int64_t n_types, group *layers, int64_t n_layers,
                      uint64_t n_params, uint64_t n_bytes) {
    char h[32];
    fprintf(f, "file:         %s\n", loom_gguf_path(g));
    fprintf(f, "GGUF version: %" PRIu32 "\n", loom_gguf_version(g));
    fprintf(f, "alignment:    %" PRIu32 "\n", loom_gguf_alignment(g));
    fprintf(f, "data offset:  %" PRIu64 "\n", loom_gguf_data_offset(g));
    fprintf(f, "file size:    %" PRIu64 "\n", loom_gguf_file_size(g));
    fprintf(f, "architecture: %s\n", arch[0] ? arch : "(none)");
    if (has_ft) fprintf(f, "file type:    %" PRId64 " (%s)\n", ft, loom_gguf_file_type_name(ft));
    else fprintf(f, "file type:    (not set)\n");
    human(h, sizeof h, (double)n_params);
    fprintf(f, "parameters:   %" PRIu64 " (%s)\n", n_params, h);
    fprintf(f, "tensor bytes: %" PRIu64 "\n", n_bytes);

    if (arch[0]) {
        bool any = false;
        for (size_t k = 0; k < sizeof k_hparams / sizeof k_hparams[0]; k++) {
            char key[LOOM_GGUF_MAX_NAME + 64];
            snprintf(key, sizeof key, "%s.%s", arch, k_hparams[k]);
            int64_t i = loom_gguf_find_key(g, key);
            if (i < 0 || loom_gguf_kv_type(g, i) == LOOM_GGUF_ARRAY) continue;
            if (!any) fprintf(f, "\nhyperparameters (%s):\n", arch);
            any = true;
            fprintf(f, "  %-34s ", k_hparams[k]);
            put_value(f, g, i, false, 0, INFO_STR_TEXT);
            fputc('\n', f);
        }
    }

    fprintf(f, "\nmetadata (%" PRId64 " keys):\n", loom_gguf_kv_count(g));
    for (int64_t i = 0; i < loom_gguf_kv_count(g); i++) {
        loom_gguf_vtype t = loom_gguf_kv_type(g, i);
        fprintf(f, "  %-40s ", loom_gguf_kv_key(g, i));
        if (t == LOOM_GGUF_ARRAY) {
            uint64_t n = loom_gguf_kv_array_len(g, i);
            fprintf(f, "%s[%" PRIu64 "] ", loom_gguf_vtype_name(loom_gguf_kv_array_type(g, i)), n);
            fputc('[', f);
            for (uint64_t j = 0; j < n && j < INFO_ARR_ITEMS; j++) {
                if (j) fputs(", ", f);
                put_value(f, g, i, true, j, 24);
            }
            if (n > INFO_ARR_ITEMS) fputs(", ...", f);
            fputc(']', f);
        } else {
            fprintf(f, "%-6s ", loom_gguf_vtype_name(t));
            put_value(f, g, i, false, 0, INFO_STR_TEXT);
        }
        fputc('\n', f);
    }

    fprintf(f, "\ntensors (%" PRId64 "):\n", loom_gguf_tensor_count(g));
    if (loom_gguf_tensor_count(g) > 0)
        fprintf(f, "  %5s  %-36s %-8s %-24s %12s %12s\n", "#", "name", "type", "shape", "bytes", "offset");
    for (int64_t i = 0; i < loom_gguf_tensor_count(g); i++) {
        const loom_gguf_tensor_info *ti = loom_gguf_tensor(g, i);
        char shape[128];
        int o = 0;
        for (uint32_t d = 0; d < ti->n_dims && o < (int)sizeof shape; d++)
            o += snprintf(shape + o, sizeof shape - (size_t)o, "%s%" PRId64, d ? " x " : "", ti->ne[d]);
        fprintf(f, "  %5" PRId64 "  %-36s %-8s %-24s %12" PRIu64 " %12" PRIu64 "\n", i, ti->name,
                loom_type_name(ti->type), shape, ti->size, ti->offset);
    }
    if (n_types) {
        fprintf(f, "\ntotals by type:\n");
        for (int64_t k = 0; k < n_types; k++) {
            human(h, sizeof h, (double)types[k].n_params);
            fprintf(f, "  %-8s %5" PRId64 " tensors %14" PRIu64 " params (%s) %14" PRIu64 " bytes\n",
                    types[k].name, types[k].n_tensors, types[k].n_params, h, types[k].bytes);
        }
        fprintf(f, "\ntotals by layer:\n");
        for (int64_t k = 0; k < n_layers; k++)
            fprintf(f, "  %-20s %5" PRId64 " tensors %14" PRIu64 " params %14" PRIu64 " bytes\n",
                    layers[k].name, layers[k].n_tensors, layers[k].n_params, layers[k].bytes);
    }
    return ferror(f) ? 1 : 0;
}

static void json_groups(FILE *f, const char *field, const group *gs, int64_t n) {
    fprintf(f, ",\"%s\":[", field);
    for (int64_t k = 0; k < n; k++) {
        fprintf(f, "%s{\"name\":", k ? "," : "");
        put_str(f, gs[k].name, strlen(gs[k].name), 0);
        fprintf(f, ",\"n_tensors\":%" PRId64 ",\"n_params\":%" PRIu64 ",\"bytes\":%" PRIu64 "}",
                gs[k].n_tensors, gs[k].n_params, gs[k].bytes);
    }
    fputc(']', f);
}

static int print_json(FILE *f, const loom_gguf *g, const char *arch, bool has_ft, int64_t ft,
                      group *types, int64_t n_types, group *layers, int64_t n_layers,
                      uint64_t n_params, uint64_t n_bytes) {
    fputs("{\"file\":", f);
    put_str(f, loom_gguf_path(g), strlen(loom_gguf_path(g)), 0);
    fprintf(f, ",\"version\":%" PRIu32 ",\"alignment\":%" PRIu32 ",\"data_offset\":%" PRIu64
               ",\"file_size\":%" PRIu64,
            loom_gguf_version(g), loom_gguf_alignment(g), loom_gguf_data_offset(g),
            loom_gguf_file_size(g));
    fputs(",\"architecture\":", f);
    if (arch[0]) put_str(f, arch, strlen(arch), 0);
    else fputs("null", f);
    if (has_ft) fprintf(f, ",\"file_type\":{\"id\":%" PRId64 ",\"name\":\"%s\"}", ft, loom_gguf_file_type_name(ft));
    else fputs(",\"file_type\":null", f);
    fprintf(f, ",\"n_params\":%" PRIu64 ",\"tensor_bytes\":%" PRIu64, n_params, n_bytes);
    fputs(",\"hyperparameters\":{", f);
    if (arch[0]) {
        bool first = true;
        for (size_t k = 0; k < sizeof k_hparams / sizeof k_hparams[0]; k++) {
            char key[LOOM_GGUF_MAX_NAME + 64];
            snprintf(key, sizeof key, "%s.%s", arch, k_hparams[k]);
            int64_t i = loom_gguf_find_key(g, key);
            if (i < 0 || loom_gguf_kv_type(g, i) == LOOM_GGUF_ARRAY) continue;
            fprintf(f, "%s\"%s\":", first ? "" : ",", k_hparams[k]);
            first = false;
            put_value(f, g, i, false, 0, 0);
        }
    }
    fprintf(f, "},\"n_kv\":%" PRId64 ",\"metadata\":[", loom_gguf_kv_count(g));
    for (int64_t i = 0; i < loom_gguf_kv_count(g); i++) {
        loom_gguf_vtype t = loom_gguf_kv_type(g, i);
        fputs(i ? ",{\"key\":" : "{\"key\":", f);
        const char *key = loom_gguf_kv_key(g, i);
        put_str(f, key, strlen(key), 0);
        fprintf(f, ",\"type\":\"%s\"", loom_gguf_vtype_name(t));
        if (t == LOOM_GGUF_ARRAY) {
            uint64_t n = loom_gguf_kv_array_len(g, i);
            fprintf(f, ",\"elem_type\":\"%s\",\"len\":%" PRIu64 ",\"first\":[",
                    loom_gguf_vtype_name(loom_gguf_kv_array_type(g, i)), n);
            for (uint64_t j = 0; j < n && j < INFO_ARR_ITEMS; j++) {
                if (j) fputc(',', f);
                put_value(f, g, i, true, j, INFO_ARR_STR_JSON);
            }
            fputc(']', f);
        } else {
            fputs(",\"value\":", f);
            put_value(f, g, i, false, 0, 0);
        }
        fputc('}', f);
    }
    fprintf(f, "],\"n_tensors\":%" PRId64 ",\"tensors\":[", loom_gguf_tensor_count(g));
    for (int64_t i = 0; i < loom_gguf_tensor_count(g); i++) {
        const loom_gguf_tensor_info *ti = loom_gguf_tensor(g, i);
        fputs(i ? ",{\"name\":" : "{\"name\":", f);
        put_str(f, ti->name, strlen(ti->name), 0);
        fprintf(f, ",\"type\":\"%s\",\"shape\":", loom_type_name(ti->type));
        print_shape(f, ti, true);
        fprintf(f, ",\"bytes\":%" PRIu64 ",\"offset\":%" PRIu64 "}", ti->size, ti->offset);
    }
    fputc(']', f);
    json_groups(f, "totals_by_type", types, n_types);
    json_groups(f, "totals_by_layer", layers, n_layers);
    fputs("}\n", f);
    return ferror(f) ? 1 : 0;
}

static int info_cpu(void) {
    char buf[1024] = {0};
    loom_kernels_describe(buf, sizeof buf);
    printf("%s\n", buf);
    return fflush(stdout) == 0 ? 0 : 1;
}

static void put_mib(FILE *f, uint64_t b) { fprintf(f, "%.0f MiB", (double)b / 1048576.0); }

/* loom info --devices [--json]: the devices loom would use (LOOM_VK_DEVICES selects
 * Vulkan devices; unset = real GPUs only). */
static int info_devices(bool json, const char *vk_devices) {
    loom_backend_params p = loom_backend_default_params();
    cli_vk_env(&p.vk_devices, &p.vk_flags);
    p.vk_loader = cli_vk_loader();
    if (vk_devices) p.vk_devices = vk_devices;
    loom_device_info dev[32];
    int n = 0;
    loom_error err = {0};
    if (loom_devices_list(&p, dev, 32, &n, &err)) {
        fprintf(stderr, "loom info: %s\n", err.msg);
        return err.status == LOOM_ERR_INVALID_ARG ? 2 : 1;
    }
    if (json) {
        fputs("{\"devices\":[", stdout);
        for (int i = 0; i < n; i++) {
            const loom_device_info *d = &dev[i];
            printf("%s{\"name\":", i ? "," : "");
            put_str(stdout, d->name, strlen(d->name), 0);
            fputs(",\"id\":", stdout);
            put_str(stdout, d->id, strlen(d->id), 0);
            printf(",\"type\":\"%s\",\"vk_index\":%d,\"used\":%s,\"total_bytes\":%" PRIu64
                   ",\"free_bytes\":%" PRIu64 ",\"driver\":",
                   d->type, d->vk_index, d->used ? "true" : "false", d->total_bytes, d->free_bytes);
            put_str(stdout, d->driver, strlen(d->driver), 0);
            fputs(",\"note\":", stdout);
            put_str(stdout, d->note, strlen(d->note), 0);
            fputc('}', stdout);
        }
        fputs("]}\n", stdout);
    } else {
        printf("%-3s %-5s %-36s %-11s %12s %12s  %s\n", "#", "used", "device", "type", "total", "free", "notes");
        for (int i = 0; i < n; i++) {
            const loom_device_info *d = &dev[i];
            char idx[16] = "-";
            if (d->vk_index >= 0) snprintf(idx, sizeof idx, "vk%d", d->vk_index);
            printf("%-3s %-5s %-36.36s %-11s ", idx, d->used ? "yes" : "no", d->name, d->type);
            char t[32], fr[32];
            snprintf(t, sizeof t, "%.0f MiB", (double)d->total_bytes / 1048576.0);
            snprintf(fr, sizeof fr, "%.0f MiB", (double)d->free_bytes / 1048576.0);
            printf("%12s %12s  %s", t, fr, d->note);
            if (d->id[0]) printf(" [%s]", d->id);
            if (d->driver[0]) printf(" (%s)", d->driver);
            putchar('\n');
        }
        (void)put_mib;
    }
    return fflush(stdout) == 0 ? 0 : 1;
}

static void usage(FILE *f) {
    fprintf(f, "usage: loom info FILE.gguf [--json]\n"
               "       loom info --cpu\n"
               "       loom info --archs\n"
               "       loom info --devices [--vk-devices all|none|0,1] [--json]\n"
               "Describe a GGUF file (metadata, tensors, totals), the CPU kernels chosen, or the\n"
               "devices (CPU, Vulkan GPUs with memory; LOOM_VK_DEVICES=all also lists software ones\n"
               "as used), or the model architectures Loom runs (general.architecture values).\n");
}

int loom_cmd_info(int argc, char **argv) {
    const char *path = NULL;
    bool json = false, cpu = false, devices = false;
    const char *vk_devices = NULL;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--json")) json = true;
        else if (!strcmp(argv[a], "--cpu")) cpu = true;
        else if (!strcmp(argv[a], "--archs")) {
            printf("%s\n", loom_model_architectures());
            return fflush(stdout) == 0 ? 0 : 1;
        }
        else if (!strcmp(argv[a], "--devices")) devices = true;
        else if (!strcmp(argv[a], "--vk-devices")) {
            if (a + 1 >= argc) {
                fprintf(stderr, "loom info: --vk-devices needs a value\n");
                return 2;
            }
            vk_devices = argv[++a];
        }
        else if (!strcmp(argv[a], "-h") || !strcmp(argv[a], "--help")) { usage(stdout); return 0; }
        else if (argv[a][0] == '-' && argv[a][1]) {
            fprintf(stderr, "loom info: unknown option '%s'\n", argv[a]);
            return 2;
        } else if (!path) path = argv[a];
        else {
            fprintf(stderr, "loom info: more than one file given ('%s')\n", argv[a]);
            return 2;
        }
    }
    if (devices && !path) return info_devices(json, vk_devices);
    if (cpu && !path) return info_cpu();
    if (!path) {
        fprintf(stderr, "loom info: no file given (usage: loom info FILE.gguf [--json] | --cpu)\n");
        return 2;
    }
    loom_gguf *g = NULL;
    loom_error err = {0};
    if (loom_gguf_open(path, NULL, &g, &err) != LOOM_OK) {
        fprintf(stderr, "loom info: %s\n", err.msg);
        return 1;
    }
    char arch[LOOM_GGUF_MAX_NAME] = "";
    loom_gguf_str s;
    if (loom_gguf_get_str(g, "general.architecture", &s) == LOOM_OK) {
        size_t n = s.len < sizeof arch - 1 ? (size_t)s.len : sizeof arch - 1;
        memcpy(arch, s.ptr, n);
        arch[n] = '\0';
        if (strlen(arch) != n) arch[0] = '\0'; /* embedded NUL: ignore */
    }
    int64_t ft = 0;
    bool has_ft = loom_gguf_get_int(g, "general.file_type", &ft) == LOOM_OK;

    int64_t nt = loom_gguf_tensor_count(g);
    group *types = calloc(nt ? (size_t)nt : 1, sizeof *types);
    group *layers = calloc(nt ? (size_t)nt : 1, sizeof *layers);
    if (!types || !layers) {
        free(types);
        free(layers);
        loom_gguf_close(g);
        fprintf(stderr, "loom info: out of memory\n");
        return 1;
    }
    int64_t n_types = 0, n_layers = 0;
    uint64_t n_params = 0, n_bytes = 0;
    for (int64_t i = 0; i < nt; i++) {
        const loom_gguf_tensor_info *ti = loom_gguf_tensor(g, i);
        char lname[LOOM_GGUF_MAX_NAME];
        layer_of(ti->name, lname, sizeof lname);
        group_add(types, &n_types, loom_type_name(ti->type), ti);
        group_add(layers, &n_layers, lname, ti);
        n_params += tensor_params(ti);
        n_bytes += ti->size;
    }
    int rc = json ? print_json(stdout, g, arch, has_ft, ft, types, n_types, layers, n_layers, n_params, n_bytes)
                  : print_text(stdout, g, arch, has_ft, ft, types, n_types, layers, n_layers, n_params, n_bytes);
    if (fflush(stdout) != 0) rc = 1;
    if (rc) fprintf(stderr, "loom info: writing the output failed\n");
    if (cpu && rc == 0 && !json) {
        printf("\ncpu: ");
        fflush(stdout);
        rc = info_cpu();
    }
    free(types);
    free(layers);
    loom_gguf_close(g);
    return rc;
}
