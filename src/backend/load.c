/* loom_backend_load: parallel chunked reads of every file tensor into all of its
 * targets, with progress, cancellation and I/O errors (contract §4). */
#include "backend/backend_internal.h"
#include "backend/fault.h"
#include "backend/vulkan/vk.h"
#include "quant/alloc.h"
#include "quant/repack.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#define LOAD_CHUNK (128u * 1024u)

typedef struct load_job {
    loom_backend *be;
    const char *path;
    loom_progress_cb cb;
    void *user;
    atomic_long next;           /* next file tensor to take */
    atomic_uint_least64_t done; /* bytes read */
    uint64_t total;
    atomic_int stop;            /* set on the first error or cancellation */
    pthread_mutex_t mu;
    loom_error err;             /* first error (under mu) */
} load_job;

static void job_fail(load_job *j, loom_status s, const char *msg) {
    pthread_mutex_lock(&j->mu);
    loom_error_set(&j->err, s, "%s", msg);
    pthread_mutex_unlock(&j->mu);
    atomic_store(&j->stop, 1);
}

static bool should_stop(load_job *j) {
    return atomic_load(&j->stop) || atomic_load(&j->be->cancel);
}

/* Read n bytes at off fully; returns bytes read (< n on EOF), or -1 with errno. */
static long long read_full(int fd, void *buf, size_t n, uint64_t off) {
    size_t got = 0;
    while (got < n) {
        if (loom_fault_read_should_fail()) {
            errno = EIO;
            return -1;
        }
        ssize_t r = pread(fd, (char *)buf + got, n - got, (off_t)(off + got));
        if (r < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (r == 0) break;
        got += (size_t)r;
    }
    return (long long)got;
}

/* Rearrange a fully read CPU weight into the interleaved layout (quant/repack.h),
 * one 16-row group at a time through a scratch copy. False (job failed) on NOMEM. */
static bool repack_weight(load_job *j, be_weight *w) {
    size_t rb = 0;
    if (loom_type_row_bytes(w->t.type, w->t.ne[0], &rb) != LOOM_OK || rb > SIZE_MAX / LOOM_REPACK_ROWS) {
        char msg[LOOM_ERROR_MSG_MAX];
        snprintf(msg, sizeof msg, "tensor '%s': cannot repack", w->name);
        job_fail(j, LOOM_ERR_INTERNAL, msg);
        return false;
    }
    const size_t gb = rb * LOOM_REPACK_ROWS;
    unsigned char *tmp = loom_malloc(gb);
    if (!tmp) {
        char msg[LOOM_ERROR_MSG_MAX];
        snprintf(msg, sizeof msg, "tensor '%s': out of memory repacking (%zu bytes)", w->name, gb);
        job_fail(j, LOOM_ERR_NOMEM, msg);
        return false;
    }
    unsigned char *data = w->t.data;
    /* every row of the tensor (a 3-D expert tensor [K, M, E] is E matrices of M rows, M a
     * multiple of 16: its groups never straddle two experts) */
    const int64_t nrows = w->t.ne[1] * w->t.ne[2] * w->t.ne[3];
    for (int64_t g = 0; g < nrows / LOOM_REPACK_ROWS; g++) {
        memcpy(tmp, data + (size_t)g * gb, gb);
        (void)loom_repack_rows(w->t.type, w->t.ne[0], LOOM_REPACK_ROWS, tmp, data + (size_t)g * gb);
    }
    loom_free(tmp);
    return true;
}

/* One worker's staged uploads to Vulkan devices (created on first use). */
typedef struct worker_up {
    loom_vk_uploader *up[LOOM_BE_MAX_DEVICES];
} worker_up;

/* Copy a chunk into a weight on device dev; false (job failed) on an error. */
static bool put_chunk(load_job *j, worker_up *wu, be_weight *w, uint64_t off, const void *src, size_t n) {
    loom_device *dv = &j->be->devices[w->dev];
    loom_status st = LOOM_OK;
    if (loom_device_is_host(dv)) {
        memcpy((char *)w->t.data + off, src, n);
        return true;
    }
    if (!wu->up[w->dev]) st = loom_vk_uploader_new(dv->vk, &wu->up[w->dev]);
    if (!st) st = loom_vk_upload(wu->up[w->dev], (char *)w->t.data + off, src, n);
    if (st) {
        char msg[LOOM_ERROR_MSG_MAX];
        snprintf(msg, sizeof msg, "tensor '%s': upload to %s failed (%s)", w->name, dv->name, loom_status_name(st));
        job_fail(j, st, msg);
        return false;
    }
    return true;
}

static void load_tensor(load_job *j, worker_up *wu, int fd, unsigned char *buf, int64_t f) {
    loom_backend *be = j->be;
    const loom_gguf_tensor_info *ti = loom_gguf_tensor(be->gguf, f);
    int64_t t0 = be->tgt_start[f], t1 = be->tgt_start[f + 1];
    if (t0 == t1) return; /* nothing placed from this tensor */
    bool need_read = false;
    for (int64_t k = t0; k < t1; k++)
        if (!be->w[be->tgt[k]].mapped) need_read = true;
    for (uint64_t off = 0; off < ti->size; off += LOAD_CHUNK) {
        if (should_stop(j)) return;
        size_t n = (size_t)(ti->size - off < LOAD_CHUNK ? ti->size - off : LOAD_CHUNK);
        if (need_read) {
            /* a single CPU target is read in place (no staging copy) */
            be_weight *w0 = &be->w[be->tgt[t0]];
            const bool direct = t1 - t0 == 1 && w0->dev == 0 && !w0->mapped;
            unsigned char *dst = direct ? (unsigned char *)w0->t.data + off : buf;
            long long r = read_full(fd, dst, n, ti->file_offset + off);
            if (r < 0) {
                char msg[LOOM_ERROR_MSG_MAX];
                snprintf(msg, sizeof msg, "tensor '%s': read failed at file offset %llu (%zu bytes): %s",
                         ti->name, (unsigned long long)(ti->file_offset + off), n, strerror(errno));
                job_fail(j, LOOM_ERR_IO, msg);
                return;
            }
            if ((size_t)r < n) {
                char msg[LOOM_ERROR_MSG_MAX];
                snprintf(msg, sizeof msg,
                         "tensor '%s': short read at file offset %llu: got %lld of %zu bytes (file truncated?)",
                         ti->name, (unsigned long long)(ti->file_offset + off), r, n);
                job_fail(j, LOOM_ERR_IO, msg);
                return;
            }
            for (int64_t k = t0; k < t1 && !direct; k++) {
                be_weight *w = &be->w[be->tgt[k]];
                if (!w->mapped && !put_chunk(j, wu, w, off, buf, n)) return;
            }
        } else {
            /* mapped: fault the pages in now so compute does not pay for them; one
             * MADV_POPULATE_READ call per chunk is much cheaper than a fault per page */
            const volatile unsigned char *src =
                (const volatile unsigned char *)be->w[be->tgt[t0]].t.data + off;
            bool populated = false;
#if defined(__linux__) && defined(MADV_POPULATE_READ)
            {
                uintptr_t a0 = (uintptr_t)src & ~(uintptr_t)4095, a1 = (uintptr_t)src + n;
                populated = madvise((void *)a0, (size_t)(a1 - a0), MADV_POPULATE_READ) == 0;
            }
#endif
            if (!populated) {
                unsigned char acc = 0;
                for (size_t b = 0; b < n; b += 4096) acc ^= src[b];
                (void)acc;
            }
        }
        uint64_t d = atomic_fetch_add(&j->done, (uint64_t)n) + n;
        if (j->cb && !j->cb(d, j->total, j->user)) atomic_store(&be->cancel, 1);
    }
    if (should_stop(j)) return;
    for (int64_t k = t0; k < t1; k++) {
        be_weight *w = &be->w[be->tgt[k]];
        if (w->repack && !repack_weight(j, w)) return;
    }
}

static void *load_worker(void *arg) {
    load_job *j = arg;
    int fd = open(j->path, O_RDONLY | O_CLOEXEC);
    unsigned char *buf = loom_malloc(LOAD_CHUNK);
    if (fd < 0 || !buf) {
        char msg[LOOM_ERROR_MSG_MAX];
        snprintf(msg, sizeof msg, "%.400s: cannot open for loading: %s", j->path,
                 fd < 0 ? strerror(errno) : "out of memory");
        job_fail(j, fd < 0 ? LOOM_ERR_IO : LOOM_ERR_NOMEM, msg);
    } else {
        worker_up wu;
        memset(&wu, 0, sizeof wu);
        for (;;) {
            if (should_stop(j)) break;
            long f = atomic_fetch_add(&j->next, 1);
            if (f >= j->be->n_file) break;
            load_tensor(j, &wu, fd, buf, f);
        }
        /* submit what is staged (dropped when the load stopped) */
        for (int d = 0; d < LOOM_BE_MAX_DEVICES; d++) {
            if (!wu.up[d]) continue;
            loom_status st = loom_vk_uploader_done(wu.up[d], !should_stop(j));
            if (st) {
                char msg[LOOM_ERROR_MSG_MAX];
                snprintf(msg, sizeof msg, "upload to %s failed (%s)", j->be->devices[d].name, loom_status_name(st));
                job_fail(j, st, msg);
            }
        }
    }
    loom_free(buf);
    if (fd >= 0) close(fd);
    return NULL;
}

loom_status loom_backend_load(loom_backend *be, loom_progress_cb cb, void *user, loom_error *err) {
    if (!be) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "load: NULL backend");
    if (be->failed)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "load: the backend failed to allocate its weights");
    if (be->dry_run) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "load: dry-run backend");
    load_job j;
    memset(&j, 0, sizeof j);
    j.be = be;
    j.path = loom_gguf_path(be->gguf);
    j.cb = cb;
    j.user = user;
    atomic_init(&j.next, 0);
    atomic_init(&j.done, 0);
    atomic_init(&j.stop, 0);
    uint64_t fs = loom_gguf_file_size(be->gguf), doff = loom_gguf_data_offset(be->gguf);
    j.total = fs > doff ? fs - doff : 0;
    pthread_mutex_init(&j.mu, NULL);
    atomic_store(&be->cancel, 0);
    be->loaded = false;

    int64_t n = be->n_threads;
    if (n > be->n_file) n = be->n_file;
    if (n < 1) n = 1;
    pthread_t *th = loom_calloc((size_t)n, sizeof *th);
    int64_t started = 0;
    if (th)
        for (int64_t i = 1; i < n; i++) {
            if (pthread_create(&th[i], NULL, load_worker, &j)) break;
            started = i;
        }
    load_worker(&j); /* the caller's thread is worker 0 */
    for (int64_t i = 1; i <= started; i++) pthread_join(th[i], NULL);
    loom_free(th);
    pthread_mutex_destroy(&j.mu);

    loom_status s = j.err.status;
    if (s) {
        loom_error_set(err, s, "%s", j.err.msg);
    } else if (atomic_load(&be->cancel)) {
        s = loom_error_set(err, LOOM_ERR_CANCELLED, "load cancelled after %llu of %llu bytes",
                           (unsigned long long)atomic_load(&j.done), (unsigned long long)j.total);
    } else {
        be->loaded = true;
    }
    atomic_store(&be->cancel, 0);
    return s;
}

void loom_backend_cancel(loom_backend *be) {
    if (be) atomic_store(&be->cancel, 1);
}
