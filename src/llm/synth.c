/* Synthetic llama GGUF files: streaming emitter (header + infos first, then
 * tensors generated and quantized chunk by chunk on worker threads). */
#include "loom_synth.h"
#include "loom_gguf.h"
#include "quant/alloc.h"
#include "gguf/file_out.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SYN_ALIGN 32u
#define SYN_MAX_THREADS 64
#define SYN_CHUNK_ELEMS ((int64_t)1 << 22) /* elements generated per chunk */

loom_synth_params loom_synth_default_params(void) {
    loom_synth_params p;
    memset(&p, 0, sizeof p);
    p.n_ctx = 4096;
    p.type_name = "F32";
    p.seed = 1;
    p.rope_base = 10000.0f;
    p.rms_eps = 1e-5f;
    p.pooling_type = 1;
    p.norm_eps = 1e-12f;
    return p;
}

/* ------------------------------------------------------------ type scheme */

static bool name_is(const char *a, const char *b) {
    for (; *a && *b; a++, b++) {
        char x = *a, y = *b;
        if (x >= 'a' && x <= 'z') x = (char)(x - 32);
        if (y >= 'a' && y <= 'z') y = (char)(y - 32);
        if (x != y) return false;
    }
    return *a == *b;
}

/* Resolve a scheme name: base type and whether it is a _K_M mix (Q4_K_M, Q5_K_M: llama.cpp's
 * rule for both is the base K type with Q6_K for output.weight and for attn_v / ffn_down in
 * the layers use_more_bits picks). */
static bool scheme_parse(const char *type_name, loom_type *base, bool *mix) {
    if (!type_name) return false;
    if (name_is(type_name, "Q4_K_M") || name_is(type_name, "Q5_K_M")) {
        *base = name_is(type_name, "Q4_K_M") ? LOOM_TYPE_Q4_K : LOOM_TYPE_Q5_K;
        *mix = true;
        return true;
    }
    loom_type t;
    if (!loom_type_from_name(type_name, &t)) return false;
    const loom_type_info *ti = loom_type_get((uint32_t)t);
    if (!ti || !ti->can_quantize || t == LOOM_TYPE_Q8_K || t == LOOM_TYPE_Q8_1) return false;
    *base = t;
    *mix = false;
    return true;
}

/* llama_ftype number written as general.file_type. */
static uint32_t scheme_file_type(loom_type base, bool mix) {
    if (mix) return base == LOOM_TYPE_Q5_K ? 17 : 15; /* MOSTLY_Q5_K_M, MOSTLY_Q4_K_M */
    switch (base) {
    case LOOM_TYPE_F32: return 0;
    case LOOM_TYPE_F16: return 1;
    case LOOM_TYPE_Q4_0: return 2;
    case LOOM_TYPE_Q4_1: return 3;
    case LOOM_TYPE_Q8_0: return 7;
    case LOOM_TYPE_Q5_0: return 8;
    case LOOM_TYPE_Q5_1: return 9;
    case LOOM_TYPE_Q2_K: return 10;
    case LOOM_TYPE_Q3_K: return 12;  /* Q3_K_M */
    case LOOM_TYPE_Q4_K: return 14;  /* Q4_K_S */
    case LOOM_TYPE_Q5_K: return 16;  /* Q5_K_S */
    case LOOM_TYPE_Q6_K: return 18;
    case LOOM_TYPE_BF16: return 32;
    case LOOM_TYPE_MXFP4: return 38;
    case LOOM_TYPE_IQ4_NL: return 25;
    case LOOM_TYPE_IQ4_XS: return 30;
    default: return 1024;            /* unknown */
    }
}

/* Layer index from "blk.N.", -1 otherwise. */
static int64_t layer_of(const char *name) {
    if (strncmp(name, "blk.", 4) != 0) return -1;
    const char *p = name + 4;
    int64_t v = 0;
    if (*p < '0' || *p > '9') return -1;
    while (*p >= '0' && *p <= '9') {
        if (v > (INT64_MAX - 9) / 10) return -1;
        v = v * 10 + (*p++ - '0');
    }
    return *p == '.' ? v : -1;
}

static bool use_more_bits(int64_t i, int64_t n) {
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

static loom_type fallback_type(loom_type t, int64_t ne0) {
    const loom_type_info *ti = loom_type_get((uint32_t)t);
    if (ti && ne0 % ti->block_size == 0) return t;
    if (ti && ti->block_size == 256 && ne0 % 32 == 0) { /* llama.cpp's llama-quant.cpp fallbacks */
        switch (t) {
        case LOOM_TYPE_Q6_K: return LOOM_TYPE_Q8_0;
        case LOOM_TYPE_Q5_K: return LOOM_TYPE_Q5_1;
        case LOOM_TYPE_IQ4_XS: return LOOM_TYPE_IQ4_NL;
        case LOOM_TYPE_Q2_K:
        case LOOM_TYPE_Q3_K: return LOOM_TYPE_Q4_0;
        default: return LOOM_TYPE_Q5_0;
        }
    }
    return LOOM_TYPE_F16;
}

loom_status loom_synth_tensor_type(const char *type_name, const char *name, int64_t ne0,
                                   int64_t n_layers, loom_type *out) {
    loom_type base;
    bool mix;
    if (!name || !out || ne0 <= 0 || !scheme_parse(type_name, &base, &mix)) return LOOM_ERR_TYPE;
    size_t len = strlen(name);
    bool is_norm = len >= 11 && !strcmp(name + len - 11, "norm.weight");
    bool is_bias = len >= 5 && !strcmp(name + len - 5, ".bias");
    /* llama.cpp's converter keeps these F32 (and llama-quantize leaves them) */
    bool keep_f32 = !strcmp(name, "position_embd.weight") || !strcmp(name, "token_types.weight");
    if (is_norm || is_bias || keep_f32) {
        *out = LOOM_TYPE_F32;
        return LOOM_OK;
    }
    loom_type t = base;
    if (mix) {
        int64_t il = layer_of(name);
        if (!strcmp(name, "output.weight")) {
            t = LOOM_TYPE_Q6_K;
        } else if (il >= 0 && (strstr(name, ".attn_v.") || strstr(name, ".ffn_down.")) &&
                   use_more_bits(il, n_layers)) {
            t = LOOM_TYPE_Q6_K;
        }
    }
    *out = fallback_type(t, ne0);
    return LOOM_OK;
}

/* ------------------------------------------------------------ random numbers */

static uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Unit-variance, zero-mean sum of four 16-bit uniforms. */
static inline float unit_sample(uint64_t r) {
    uint32_t s = (uint32_t)(r & 0xFFFF) + (uint32_t)((r >> 16) & 0xFFFF) +
                 (uint32_t)((r >> 32) & 0xFFFF) + (uint32_t)(r >> 48);
    /* mean 4*65535/2, variance 4*(65536^2-1)/12 */
    return ((float)s - 131070.0f) * (float)(1.0 / 37837.22703);
}

static void gen_row(float *dst, int64_t n, uint64_t seed, uint64_t tensor, uint64_t row,
                    float mean, float std) {
    uint64_t st = seed ^ (tensor * 0xD1B54A32D192ED03ull) ^ (row * 0x8CB92BA72F3D8DD7ull);
    (void)splitmix64(&st);
    for (int64_t i = 0; i < n; i++) dst[i] = mean + std * unit_sample(splitmix64(&st));
}

/* ------------------------------------------------------------ tensor plan */

typedef struct syn_tensor {
    char name[64];
    uint32_t n_dims;
    int64_t ne[2];
    loom_type type;
    size_t row_bytes;
    uint64_t size, offset;
    float mean, std;
} syn_tensor;

typedef struct syn_plan {
    syn_tensor *t;
    int64_t n, cap;
} syn_plan;

static loom_status plan_add(syn_plan *p, const loom_synth_params *sp, const char *name,
                            uint32_t n_dims, int64_t ne0, int64_t ne1, loom_error *err) {
    if (p->n == p->cap) {
        int64_t cap = p->cap ? p->cap * 2 : 64;
        syn_tensor *nt = loom_realloc(p->t, (size_t)cap * sizeof *nt);
        if (!nt) return loom_error_set(err, LOOM_ERR_NOMEM, "gen: out of memory for tensor list");
        p->t = nt;
        p->cap = cap;
    }
    syn_tensor *t = &p->t[p->n];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->n_dims = n_dims;
    t->ne[0] = ne0;
    t->ne[1] = n_dims > 1 ? ne1 : 1;
    if (loom_synth_tensor_type(sp->type_name, name, ne0, sp->n_layers, &t->type) != LOOM_OK)
        return loom_error_set(err, LOOM_ERR_TYPE, "gen: unknown or unquantizable type '%s'",
                              sp->type_name ? sp->type_name : "(null)");
    if (loom_type_row_bytes(t->type, ne0, &t->row_bytes) != LOOM_OK ||
        t->row_bytes > UINT64_MAX / (uint64_t)t->ne[1])
        return loom_error_set(err, LOOM_ERR_RANGE, "gen: tensor %s: size overflows", name);
    t->size = (uint64_t)t->row_bytes * (uint64_t)t->ne[1];
    size_t nl = strlen(name);
    if (nl >= 5 && !strcmp(name + nl - 5, ".bias")) {
        t->mean = 0.0f;
        t->std = 0.02f;
    } else if (n_dims == 1) {
        t->mean = 1.0f;
        t->std = 0.02f;
    } else {
        t->mean = 0.0f;
        t->std = (float)(1.0 / sqrt((double)ne0));
    }
    p->n++;
    return LOOM_OK;
}

typedef enum syn_arch { SYN_LLAMA = 0, SYN_BERT, SYN_NOMIC } syn_arch;

static syn_arch arch_of(const loom_synth_params *sp) {
    if (sp->arch && !strcmp(sp->arch, "bert")) return SYN_BERT;
    if (sp->arch && !strcmp(sp->arch, "nomic-bert")) return SYN_NOMIC;
    return SYN_LLAMA;
}

/* bert / nomic-bert tensors in the order llama.cpp's converter writes them. */
static loom_status build_plan_encoder(const loom_synth_params *sp, int64_t n_vocab, int64_t n_types,
                                      syn_plan *p, loom_error *err) {
    const bool bert = arch_of(sp) == SYN_BERT;
    int64_t dim = sp->dim, ffn = sp->ffn;
    loom_status st = plan_add(p, sp, "token_embd.weight", 2, dim, n_vocab, err);
    if (st == LOOM_OK && bert) st = plan_add(p, sp, "position_embd.weight", 2, dim, sp->n_ctx, err);
    if (st == LOOM_OK) st = plan_add(p, sp, "token_types.weight", 2, dim, n_types, err);
    if (st == LOOM_OK) st = plan_add(p, sp, "token_embd_norm.weight", 1, dim, 1, err);
    if (st == LOOM_OK) st = plan_add(p, sp, "token_embd_norm.bias", 1, dim, 1, err);
    char nm[64];
#define ADD(suffix, nd, a, b)                                                 \
    do {                                                                      \
        snprintf(nm, sizeof nm, "blk.%lld." suffix, (long long)il);           \
        if (st == LOOM_OK) st = plan_add(p, sp, nm, nd, a, b, err);           \
    } while (0)
    for (int64_t il = 0; il < sp->n_layers && st == LOOM_OK; il++) {
        if (bert) {
            ADD("attn_q.weight", 2, dim, dim);
            ADD("attn_q.bias", 1, dim, 1);
            ADD("attn_k.weight", 2, dim, dim);
            ADD("attn_k.bias", 1, dim, 1);
            ADD("attn_v.weight", 2, dim, dim);
            ADD("attn_v.bias", 1, dim, 1);
            ADD("attn_output.weight", 2, dim, dim);
            ADD("attn_output.bias", 1, dim, 1);
        } else {
            ADD("attn_qkv.weight", 2, dim, 3 * dim);
            ADD("attn_output.weight", 2, dim, dim);
        }
        ADD("attn_output_norm.weight", 1, dim, 1);
        ADD("attn_output_norm.bias", 1, dim, 1);
        ADD("ffn_up.weight", 2, dim, ffn);
        if (bert) ADD("ffn_up.bias", 1, ffn, 1);
        else ADD("ffn_gate.weight", 2, dim, ffn);
        ADD("ffn_down.weight", 2, ffn, dim);
        if (bert) ADD("ffn_down.bias", 1, dim, 1);
        ADD("layer_output_norm.weight", 1, dim, 1);
        ADD("layer_output_norm.bias", 1, dim, 1);
    }
#undef ADD
    return st;
}

static loom_status build_plan(const loom_synth_params *sp, int64_t n_vocab, int64_t n_types, syn_plan *p,
                              loom_error *err) {
    if (arch_of(sp) != SYN_LLAMA) {
        loom_status est = build_plan_encoder(sp, n_vocab, n_types, p, err);
        if (est != LOOM_OK) return est;
        goto offsets;
    }
    int64_t dim = sp->dim, kv_dim = sp->dim / sp->n_heads * sp->n_kv_heads, ffn = sp->ffn;
    loom_status st = plan_add(p, sp, "token_embd.weight", 2, dim, n_vocab, err);
    char nm[64];
#define ADD(suffix, nd, a, b)                                                 \
    do {                                                                      \
        snprintf(nm, sizeof nm, "blk.%lld." suffix, (long long)il);           \
        if (st == LOOM_OK) st = plan_add(p, sp, nm, nd, a, b, err);           \
    } while (0)
    for (int64_t il = 0; il < sp->n_layers && st == LOOM_OK; il++) {
        ADD("attn_norm.weight", 1, dim, 1);
        ADD("attn_q.weight", 2, dim, dim);
        ADD("attn_k.weight", 2, dim, kv_dim);
        ADD("attn_v.weight", 2, dim, kv_dim);
        ADD("attn_output.weight", 2, dim, dim);
        ADD("ffn_norm.weight", 1, dim, 1);
        ADD("ffn_gate.weight", 2, dim, ffn);
        ADD("ffn_down.weight", 2, ffn, dim);
        ADD("ffn_up.weight", 2, dim, ffn);
    }
#undef ADD
    if (st == LOOM_OK) st = plan_add(p, sp, "output_norm.weight", 1, dim, 1, err);
    if (st == LOOM_OK && !sp->tied) st = plan_add(p, sp, "output.weight", 2, dim, n_vocab, err);
    if (st != LOOM_OK) return st;
offsets:;
    uint64_t off = 0;
    for (int64_t i = 0; i < p->n; i++) {
        off = (off + SYN_ALIGN - 1) / SYN_ALIGN * SYN_ALIGN;
        p->t[i].offset = off;
        if (p->t[i].size > UINT64_MAX - off - SYN_ALIGN)
            return loom_error_set(err, LOOM_ERR_RANGE, "gen: data size overflows");
        off += p->t[i].size;
    }
    return LOOM_OK;
}

/* ------------------------------------------------------------ output stream */

typedef struct syn_out {
    FILE *f;
    uint64_t pos;
    bool failed;
    int err_no;
} syn_out;

static void out_bytes(syn_out *o, const void *p, size_t n) {
    if (o->failed || n == 0) return;
    if (fwrite(p, 1, n, o->f) != n) {
        o->failed = true;
        o->err_no = errno;
        return;
    }
    o->pos += n;
}
static void out_u32(syn_out *o, uint32_t v) {
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    out_bytes(o, b, 4);
}
static void out_u64(syn_out *o, uint64_t v) {
    out_u32(o, (uint32_t)v);
    out_u32(o, (uint32_t)(v >> 32));
}
static void out_f32(syn_out *o, float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    out_u32(o, u);
}
static void out_str(syn_out *o, const char *s, uint64_t n) {
    out_u64(o, n);
    out_bytes(o, s, (size_t)n);
}
static void out_pad(syn_out *o) {
    static const uint8_t zeros[SYN_ALIGN];
    uint64_t r = o->pos % SYN_ALIGN;
    if (r) out_bytes(o, zeros, (size_t)(SYN_ALIGN - r));
}
static void kv_key(syn_out *o, const char *key, loom_gguf_vtype t) {
    out_str(o, key, strlen(key));
    out_u32(o, (uint32_t)t);
}
static void kv_u32(syn_out *o, const char *key, uint32_t v) {
    kv_key(o, key, LOOM_GGUF_U32);
    out_u32(o, v);
}
static void kv_f32(syn_out *o, const char *key, float v) {
    kv_key(o, key, LOOM_GGUF_F32);
    out_f32(o, v);
}
static void kv_string(syn_out *o, const char *key, const char *v) {
    kv_key(o, key, LOOM_GGUF_STRING);
    out_str(o, v, strlen(v));
}

static uint64_t vtype_size(loom_gguf_vtype t) {
    switch (t) {
    case LOOM_GGUF_U8: case LOOM_GGUF_I8: case LOOM_GGUF_BOOL: return 1;
    case LOOM_GGUF_U16: case LOOM_GGUF_I16: return 2;
    case LOOM_GGUF_U32: case LOOM_GGUF_I32: case LOOM_GGUF_F32: return 4;
    case LOOM_GGUF_U64: case LOOM_GGUF_I64: case LOOM_GGUF_F64: return 8;
    default: return 0;
    }
}

/* Copy KV i of src verbatim (re-serialised from the reader's view). */
static loom_status copy_kv(syn_out *o, const loom_gguf *src, int64_t i, loom_error *err) {
    const char *key = loom_gguf_kv_key(src, i);
    loom_gguf_vtype t = loom_gguf_kv_type(src, i);
    loom_status st = LOOM_OK;
    if (t == LOOM_GGUF_STRING) {
        loom_gguf_str s;
        st = loom_gguf_kv_str(src, i, &s);
        if (st == LOOM_OK) {
            kv_key(o, key, t);
            out_str(o, s.ptr, s.len);
        }
    } else if (t == LOOM_GGUF_ARRAY) {
        loom_gguf_vtype et = loom_gguf_kv_array_type(src, i);
        uint64_t n = loom_gguf_kv_array_len(src, i);
        kv_key(o, key, t);
        out_u32(o, (uint32_t)et);
        out_u64(o, n);
        if (et == LOOM_GGUF_STRING) {
            for (uint64_t j = 0; j < n && st == LOOM_OK; j++) {
                loom_gguf_str s;
                st = loom_gguf_kv_arr_str(src, i, j, &s);
                if (st == LOOM_OK) out_str(o, s.ptr, s.len);
            }
        } else {
            loom_gguf_vtype et2;
            const void *data;
            uint64_t n2;
            st = loom_gguf_kv_arr(src, i, &et2, &data, &n2);
            if (st == LOOM_OK && (et2 != et || n2 != n || vtype_size(et) == 0)) st = LOOM_ERR_FORMAT;
            if (st == LOOM_OK) out_bytes(o, data, (size_t)(n * vtype_size(et)));
        }
    } else {
        uint8_t raw[8];
        uint64_t sz = vtype_size(t);
        switch (t) {
        case LOOM_GGUF_U8: st = loom_gguf_get_u8(src, key, (uint8_t *)raw); break;
        case LOOM_GGUF_I8: st = loom_gguf_get_i8(src, key, (int8_t *)raw); break;
        case LOOM_GGUF_BOOL: { bool b; st = loom_gguf_get_bool(src, key, &b); raw[0] = b ? 1 : 0; break; }
        case LOOM_GGUF_U16: { uint16_t v; st = loom_gguf_get_u16(src, key, &v); memcpy(raw, &v, 2); break; }
        case LOOM_GGUF_I16: { int16_t v; st = loom_gguf_get_i16(src, key, &v); memcpy(raw, &v, 2); break; }
        case LOOM_GGUF_U32: { uint32_t v; st = loom_gguf_get_u32(src, key, &v); memcpy(raw, &v, 4); break; }
        case LOOM_GGUF_I32: { int32_t v; st = loom_gguf_get_i32(src, key, &v); memcpy(raw, &v, 4); break; }
        case LOOM_GGUF_F32: { float v; st = loom_gguf_get_f32(src, key, &v); memcpy(raw, &v, 4); break; }
        case LOOM_GGUF_U64: { uint64_t v; st = loom_gguf_get_u64(src, key, &v); memcpy(raw, &v, 8); break; }
        case LOOM_GGUF_I64: { int64_t v; st = loom_gguf_get_i64(src, key, &v); memcpy(raw, &v, 8); break; }
        case LOOM_GGUF_F64: { double v; st = loom_gguf_get_f64(src, key, &v); memcpy(raw, &v, 8); break; }
        default: st = LOOM_ERR_FORMAT; break;
        }
        if (st == LOOM_OK) {
            kv_key(o, key, t);
            out_bytes(o, raw, (size_t)sz); /* little-endian host */
        }
    }
    if (st != LOOM_OK)
        return loom_error_set(err, st, "gen: cannot copy vocab key '%s' (%s)", key,
                              loom_status_name(st));
    return LOOM_OK;
}

/* ------------------------------------------------------------ workers */

typedef struct syn_job {
    const syn_tensor *t;
    uint64_t tensor_index, seed;
    int64_t row0, row1; /* rows of this worker (absolute) */
    int64_t chunk_row0;
    uint8_t *out;       /* chunk buffer */
    float *scratch;     /* ne0 floats */
    const uint8_t *pool;/* pool mode: pool_blocks quantized blocks to draw from */
    uint64_t pool_blocks;
    loom_status st;
} syn_job;

static void *worker(void *arg) {
    syn_job *j = arg;
    const syn_tensor *t = j->t;
    const loom_type_info *ti = loom_type_get((uint32_t)t->type);
    for (int64_t r = j->row0; r < j->row1 && j->st == LOOM_OK; r++) {
        uint8_t *dst = j->out + (size_t)(r - j->chunk_row0) * t->row_bytes;
        if (j->pool) {
            /* every block drawn uniformly from the pool (per-row stream) */
            uint64_t st = j->seed ^ (j->tensor_index * 0xD1B54A32D192ED03ull) ^
                          ((uint64_t)r * 0x8CB92BA72F3D8DD7ull) ^ 0x5851F42D4C957F2Dull;
            int64_t nb = t->ne[0] / ti->block_size;
            for (int64_t b = 0; b < nb; b++) {
                uint64_t k = splitmix64(&st) % j->pool_blocks;
                memcpy(dst + (size_t)b * ti->block_bytes, j->pool + k * ti->block_bytes, ti->block_bytes);
            }
        } else {
            gen_row(j->scratch, t->ne[0], j->seed, j->tensor_index, (uint64_t)r, t->mean, t->std);
            j->st = loom_quantize_row(t->type, j->scratch, dst, t->ne[0]);
        }
    }
    return NULL;
}

static int online_cpus(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
    if (n > SYN_MAX_THREADS) n = SYN_MAX_THREADS;
    return (int)n;
}

/* Fill rows [r0, r1) of t into out (row r at out + (r - r0) * row_bytes) on nth threads. */
static loom_status run_rows(const syn_tensor *t, uint64_t ti, uint64_t seed, int nth, int64_t r0,
                            int64_t r1, uint8_t *out, float **scratch, const uint8_t *pool,
                            uint64_t pool_blocks) {
    int64_t nr = r1 - r0;
    int use = nth < nr ? nth : (int)nr;
    syn_job jobs[SYN_MAX_THREADS];
    pthread_t tids[SYN_MAX_THREADS];
    bool started[SYN_MAX_THREADS] = {false};
    for (int k = 0; k < use; k++) {
        jobs[k] = (syn_job){t, ti, seed, r0 + nr * k / use, r0 + nr * (k + 1) / use, r0,
                            out, scratch[k], pool, pool_blocks, LOOM_OK};
        if (k > 0) started[k] = pthread_create(&tids[k], NULL, worker, &jobs[k]) == 0;
    }
    if (use > 0) worker(&jobs[0]);
    for (int k = 1; k < use; k++) {
        if (started[k]) pthread_join(tids[k], NULL);
        else worker(&jobs[k]); /* thread creation failed: do it here */
    }
    for (int k = 0; k < use; k++)
        if (jobs[k].st != LOOM_OK) return jobs[k].st;
    return LOOM_OK;
}

/* Pools of quantized blocks, one per (type, ne0) (the std is 1/sqrt(ne0)). */
#define SYN_POOL_ELEMS ((int64_t)1 << 20)
#define SYN_POOL_ROW 256
#define SYN_MAX_POOLS 32
typedef struct syn_pool {
    loom_type type;
    int64_t ne0;
    uint8_t *blocks;
    uint64_t n_blocks;
} syn_pool;

static loom_status get_pool(syn_pool *pools, int *n_pools, const syn_tensor *t, uint64_t seed,
                            int nth, float **scratch, const syn_pool **out, loom_error *err) {
    *out = NULL;
    for (int i = 0; i < *n_pools; i++)
        if (pools[i].type == t->type && pools[i].ne0 == t->ne[0]) {
            *out = &pools[i];
            return LOOM_OK;
        }
    if (*n_pools == SYN_MAX_POOLS) return LOOM_OK; /* caller quantizes exactly */
    syn_tensor pt = *t;
    pt.ne[0] = SYN_POOL_ROW;
    pt.ne[1] = SYN_POOL_ELEMS / SYN_POOL_ROW;
    if (loom_type_row_bytes(pt.type, SYN_POOL_ROW, &pt.row_bytes) != LOOM_OK)
        return loom_error_set(err, LOOM_ERR_INTERNAL, "gen: no pool for %s", loom_type_name(t->type));
    uint8_t *blocks = loom_malloc(pt.row_bytes * (size_t)pt.ne[1]);
    if (!blocks) return loom_error_set(err, LOOM_ERR_NOMEM, "gen: out of memory for a block pool");
    /* pool ids live above every tensor index */
    uint64_t id = ((uint64_t)1 << 40) + ((uint64_t)t->type << 32) + (uint64_t)t->ne[0];
    loom_status st = run_rows(&pt, id, seed, nth, 0, pt.ne[1], blocks, scratch, NULL, 0);
    if (st != LOOM_OK) {
        loom_free(blocks);
        return loom_error_set(err, st, "gen: quantizing a %s block pool failed (%s)",
                              loom_type_name(t->type), loom_status_name(st));
    }
    const loom_type_info *ti = loom_type_get((uint32_t)t->type);
    pools[*n_pools] = (syn_pool){t->type, t->ne[0], blocks,
                                 (uint64_t)(SYN_POOL_ELEMS / ti->block_size)};
    *out = &pools[(*n_pools)++];
    return LOOM_OK;
}

/* Generate and write tensor ti's data. */
static loom_status write_tensor(syn_out *o, const syn_tensor *t, uint64_t ti, uint64_t seed,
                                int nth, uint8_t *chunk, int64_t chunk_rows, float **scratch,
                                const syn_pool *pool, loom_error *err) {
    for (int64_t r0 = 0; r0 < t->ne[1]; r0 += chunk_rows) {
        int64_t r1 = r0 + chunk_rows < t->ne[1] ? r0 + chunk_rows : t->ne[1];
        loom_status st = run_rows(t, ti, seed, nth, r0, r1, chunk, scratch,
                                  pool ? pool->blocks : NULL, pool ? pool->n_blocks : 0);
        if (st != LOOM_OK)
            return loom_error_set(err, st, "gen: quantizing %s to %s failed (%s)", t->name,
                                  loom_type_name(t->type), loom_status_name(st));
        out_bytes(o, chunk, (size_t)(r1 - r0) * t->row_bytes);
        if (o->failed) return LOOM_ERR_IO;
    }
    return LOOM_OK;
}

/* ------------------------------------------------------------ main entry */

loom_status loom_synth_write(const loom_synth_params *sp, const char *path,
                             loom_synth_result *result, loom_error *err) {
    if (!sp || !path || !sp->vocab_path)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "gen: missing params, output path or vocab path");
    if (sp->dim <= 0 || sp->n_layers <= 0 || sp->n_heads <= 0 || sp->n_kv_heads <= 0 ||
        sp->ffn <= 0 || sp->n_ctx <= 0 || sp->dim > (1 << 20) || sp->ffn > (1 << 22) ||
        sp->n_layers > 4096 || sp->n_ctx > UINT32_MAX)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG,
                              "gen: dim, layers, heads, kv-heads, ffn and ctx must be positive "
                              "(dim <= 2^20, ffn <= 2^22, layers <= 4096)");
    if (sp->dim % sp->n_heads != 0 || sp->n_heads % sp->n_kv_heads != 0)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG,
                              "gen: dim (%lld) must be a multiple of heads (%lld) and heads a "
                              "multiple of kv-heads (%lld)", (long long)sp->dim,
                              (long long)sp->n_heads, (long long)sp->n_kv_heads);
    loom_type base;
    bool mix;
    if (!scheme_parse(sp->type_name, &base, &mix))
        return loom_error_set(err, LOOM_ERR_TYPE, "gen: unknown or unquantizable type '%s'",
                              sp->type_name ? sp->type_name : "(null)");

    loom_gguf *voc = NULL;
    loom_status st = loom_gguf_open(sp->vocab_path, NULL, &voc, err);
    if (st != LOOM_OK) return st;
    int64_t ki = loom_gguf_find_key(voc, "tokenizer.ggml.tokens");
    if (ki < 0 || loom_gguf_kv_type(voc, ki) != LOOM_GGUF_ARRAY ||
        loom_gguf_kv_array_type(voc, ki) != LOOM_GGUF_STRING) {
        loom_gguf_close(voc);
        return loom_error_set(err, LOOM_ERR_NOT_FOUND,
                              "gen: %s has no string array tokenizer.ggml.tokens", sp->vocab_path);
    }
    uint64_t n_vocab = loom_gguf_kv_array_len(voc, ki);
    if (n_vocab == 0 || n_vocab > (1u << 24)) {
        loom_gguf_close(voc);
        return loom_error_set(err, LOOM_ERR_FORMAT, "gen: vocab size %llu out of range",
                              (unsigned long long)n_vocab);
    }

    const syn_arch arch = arch_of(sp);
    if (sp->arch && arch == SYN_LLAMA && strcmp(sp->arch, "llama")) {
        loom_gguf_close(voc);
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "gen: unknown architecture '%s' (llama, bert, nomic-bert)",
                              sp->arch);
    }
    if (arch != SYN_LLAMA && (sp->n_kv_heads != sp->n_heads || sp->pooling_type < -1 || sp->pooling_type > 3)) {
        loom_gguf_close(voc);
        return loom_error_set(err, LOOM_ERR_INVALID_ARG,
                              "gen: %s needs kv-heads == heads and a pooling type in -1..3", sp->arch);
    }
    /* token types: the vocab's tokenizer.ggml.token_type_count, else 2 (written then) */
    uint32_t n_types = 2;
    bool vocab_has_types = loom_gguf_get_u32(voc, "tokenizer.ggml.token_type_count", &n_types) == LOOM_OK;
    if (!vocab_has_types || n_types < 1 || n_types > 64) n_types = 2;

    syn_plan plan = {0};
    st = build_plan(sp, (int64_t)n_vocab, (int64_t)n_types, &plan, err);
    FILE *f = NULL;
    loom_file_out fout = {0};
    uint8_t *chunk = NULL;
    float *scratch[SYN_MAX_THREADS] = {0};
    int nth = sp->n_threads > 0 ? sp->n_threads : online_cpus();
    if (nth > SYN_MAX_THREADS) nth = SYN_MAX_THREADS;
    syn_out o = {0};
    syn_pool pools[SYN_MAX_POOLS];
    int n_pools = 0;
    if (st != LOOM_OK) goto done;

    /* Chunk buffer sized for the largest tensor's chunk. */
    size_t chunk_bytes = 0;
    int64_t max_ne0 = 0;
    for (int64_t i = 0; i < plan.n; i++) {
        const syn_tensor *t = &plan.t[i];
        int64_t rows = SYN_CHUNK_ELEMS / t->ne[0];
        if (rows < 1) rows = 1;
        if (rows > t->ne[1]) rows = t->ne[1];
        if ((size_t)rows * t->row_bytes > chunk_bytes) chunk_bytes = (size_t)rows * t->row_bytes;
        if (t->ne[0] > max_ne0) max_ne0 = t->ne[0];
    }
    if (max_ne0 < SYN_POOL_ROW) max_ne0 = SYN_POOL_ROW;
    chunk = loom_malloc(chunk_bytes ? chunk_bytes : 1);
    for (int k = 0; k < nth && chunk; k++) {
        scratch[k] = loom_malloc((size_t)max_ne0 * sizeof(float));
        if (!scratch[k]) break;
    }
    if (!chunk || !scratch[nth - 1]) {
        st = loom_error_set(err, LOOM_ERR_NOMEM, "gen: out of memory for %zu-byte chunk buffers",
                            chunk_bytes);
        goto done;
    }

    st = loom_file_out_open(&fout, path, "gen", err);
    if (st != LOOM_OK) goto done;
    f = fout.f;
    setvbuf(f, NULL, _IOFBF, 1 << 20);
    o.f = f;

    /* Header and KVs. */
    int64_t n_tok_kv = 0;
    for (int64_t i = 0; i < loom_gguf_kv_count(voc); i++)
        if (!strncmp(loom_gguf_kv_key(voc, i), "tokenizer.", 10)) n_tok_kv++;
    uint32_t file_type = scheme_file_type(base, mix);
    if (arch != SYN_LLAMA) {
        const char *an = arch == SYN_BERT ? "bert" : "nomic-bert";
        int n_own = 11 + (arch == SYN_NOMIC) + (sp->pooling_type >= 0) + !vocab_has_types;
        char k[96];
        out_u32(&o, 0x46554747u);
        out_u32(&o, 3);
        out_u64(&o, (uint64_t)plan.n);
        out_u64(&o, (uint64_t)(n_own + n_tok_kv));
        kv_string(&o, "general.architecture", an);
        kv_string(&o, "general.name", "loom-synthetic");
        kv_u32(&o, "general.file_type", file_type);
#define KEY(suffix) (snprintf(k, sizeof k, "%s." suffix, an), k)
        kv_u32(&o, KEY("context_length"), (uint32_t)sp->n_ctx);
        kv_u32(&o, KEY("embedding_length"), (uint32_t)sp->dim);
        kv_u32(&o, KEY("feed_forward_length"), (uint32_t)sp->ffn);
        kv_u32(&o, KEY("block_count"), (uint32_t)sp->n_layers);
        kv_u32(&o, KEY("attention.head_count"), (uint32_t)sp->n_heads);
        kv_f32(&o, KEY("attention.layer_norm_epsilon"), sp->norm_eps > 0 ? sp->norm_eps : 1e-12f);
        kv_key(&o, KEY("attention.causal"), LOOM_GGUF_BOOL);
        out_bytes(&o, "\0", 1);
        if (sp->pooling_type >= 0) kv_u32(&o, KEY("pooling_type"), (uint32_t)sp->pooling_type);
        if (arch == SYN_NOMIC) kv_f32(&o, KEY("rope.freq_base"), sp->rope_base > 0 ? sp->rope_base : 10000.0f);
        kv_u32(&o, KEY("vocab_size"), (uint32_t)n_vocab);
#undef KEY
        if (!vocab_has_types) kv_u32(&o, "tokenizer.ggml.token_type_count", n_types);
    } else {
    const int n_own_kv = 13;
    out_u32(&o, 0x46554747u);
    out_u32(&o, 3);
    out_u64(&o, (uint64_t)plan.n);
    out_u64(&o, (uint64_t)(n_own_kv + n_tok_kv));
    kv_string(&o, "general.architecture", "llama");
    kv_string(&o, "general.name", "loom-synthetic");
    kv_u32(&o, "general.file_type", file_type);
    kv_u32(&o, "llama.context_length", (uint32_t)sp->n_ctx);
    kv_u32(&o, "llama.embedding_length", (uint32_t)sp->dim);
    kv_u32(&o, "llama.block_count", (uint32_t)sp->n_layers);
    kv_u32(&o, "llama.feed_forward_length", (uint32_t)sp->ffn);
    kv_u32(&o, "llama.attention.head_count", (uint32_t)sp->n_heads);
    kv_u32(&o, "llama.attention.head_count_kv", (uint32_t)sp->n_kv_heads);
    kv_u32(&o, "llama.rope.dimension_count", (uint32_t)(sp->dim / sp->n_heads));
    kv_f32(&o, "llama.rope.freq_base", sp->rope_base > 0 ? sp->rope_base : 10000.0f);
    kv_f32(&o, "llama.attention.layer_norm_rms_epsilon", sp->rms_eps > 0 ? sp->rms_eps : 1e-5f);
    kv_u32(&o, "llama.vocab_size", (uint32_t)n_vocab);
    }
    for (int64_t i = 0; i < loom_gguf_kv_count(voc) && st == LOOM_OK; i++)
        if (!strncmp(loom_gguf_kv_key(voc, i), "tokenizer.", 10)) st = copy_kv(&o, voc, i, err);
    if (st != LOOM_OK) goto done;

    /* Tensor infos. */
    for (int64_t i = 0; i < plan.n; i++) {
        const syn_tensor *t = &plan.t[i];
        out_str(&o, t->name, strlen(t->name));
        out_u32(&o, t->n_dims);
        for (uint32_t d = 0; d < t->n_dims; d++) out_u64(&o, (uint64_t)t->ne[d]);
        out_u32(&o, (uint32_t)t->type);
        out_u64(&o, t->offset);
    }
    out_pad(&o);
    uint64_t data_start = o.pos;

    /* Data. */
    uint64_t n_params = 0;
    for (int64_t i = 0; i < plan.n && st == LOOM_OK && !o.failed; i++) {
        const syn_tensor *t = &plan.t[i];
        out_pad(&o);
        if (!o.failed && o.pos - data_start != t->offset) {
            st = loom_error_set(err, LOOM_ERR_INTERNAL, "gen: %s at data offset %llu, planned %llu",
                                t->name, (unsigned long long)(o.pos - data_start),
                                (unsigned long long)t->offset);
            break;
        }
        int64_t rows = SYN_CHUNK_ELEMS / t->ne[0];
        if (rows < 1) rows = 1;
        const syn_pool *pool = NULL;
        const loom_type_info *tinfo = loom_type_get((uint32_t)t->type);
        if (!sp->exact && tinfo->is_quantized && t->n_dims == 2 && t->ne[0] % SYN_POOL_ROW == 0 &&
            t->ne[0] * t->ne[1] >= SYN_POOL_ELEMS / 4) {
            st = get_pool(pools, &n_pools, t, sp->seed, nth, scratch, &pool, err);
            if (st != LOOM_OK) break;
        }
        st = write_tensor(&o, t, (uint64_t)i, sp->seed, nth, chunk, rows, scratch, pool, err);
        n_params += (uint64_t)t->ne[0] * (uint64_t)t->ne[1];
    }
    if (st == LOOM_OK) out_pad(&o);
    if (st == LOOM_OK && !o.failed && (fflush(f) != 0 || ferror(f))) {
        o.failed = true;
        o.err_no = errno ? errno : EIO;
    }
    if ((st == LOOM_OK || st == LOOM_ERR_IO) && o.failed) {
        st = loom_error_set(err, LOOM_ERR_IO, "gen: write to %s failed at byte %llu: %s", path,
                            (unsigned long long)o.pos, strerror(o.err_no));
        goto done;
    }
    if (st == LOOM_OK && result) {
        result->n_vocab = (int64_t)n_vocab;
        result->n_tensors = plan.n;
        result->n_params = n_params;
        result->data_bytes = o.pos - data_start;
        result->file_bytes = o.pos;
        result->file_type = file_type;
    }

done:
    /* the target is replaced only by a complete file; on failure only the temporary goes */
    if (f && st == LOOM_OK) st = loom_file_out_commit(&fout, "gen", err);
    else loom_file_out_abort(&fout);
    for (int k = 0; k < SYN_MAX_THREADS; k++) loom_free(scratch[k]);
    for (int k = 0; k < n_pools; k++) loom_free(pools[k].blocks);
    loom_free(chunk);
    loom_free(plan.t);
    loom_gguf_close(voc);
    return st;
}
