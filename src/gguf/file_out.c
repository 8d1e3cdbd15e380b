/* Atomic file output (see file_out.h). */
#include "gguf/file_out.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "quant/alloc.h"

static atomic_uint g_tmp_counter;

static void release(loom_file_out *o) {
    loom_free(o->path);
    loom_free(o->tmp);
    memset(o, 0, sizeof *o);
}

loom_status loom_file_out_open(loom_file_out *o, const char *path, const char *what, loom_error *err) {
    if (!o) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "%s: NULL output", what);
    memset(o, 0, sizeof *o);
    if (!path || !*path) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "%s: empty output path", what);
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISREG(st.st_mode))
            return loom_error_set(err, LOOM_ERR_INVALID_ARG,
                                  "%s: refusing to write %s: it exists and is not a regular file (%s)", what,
                                  path,
                                  S_ISDIR(st.st_mode)   ? "a directory"
                                  : S_ISLNK(st.st_mode) ? "a symbolic link"
                                  : S_ISCHR(st.st_mode) ? "a character device"
                                  : S_ISBLK(st.st_mode) ? "a block device"
                                  : S_ISFIFO(st.st_mode) ? "a FIFO"
                                                         : "a special file");
    } else if (errno != ENOENT) {
        return loom_error_set(err, LOOM_ERR_IO, "%s: cannot inspect %s: %s", what, path, strerror(errno));
    }
    size_t n = strlen(path);
    const char *slash = strrchr(path, '/');
    size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
    const char *base = path + dir_len;
    o->path = loom_malloc(n + 1);
    o->tmp = loom_malloc(n + 64);
    if (!o->path || !o->tmp) {
        release(o);
        return loom_error_set(err, LOOM_ERR_NOMEM, "%s: out of memory", what);
    }
    memcpy(o->path, path, n + 1);
    for (int attempt = 0;; attempt++) {
        unsigned k = atomic_fetch_add(&g_tmp_counter, 1u);
        snprintf(o->tmp, n + 64, "%.*s.%s.loom-tmp-%ld-%u", (int)dir_len, path, base, (long)getpid(), k);
        int fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) {
            o->f = fdopen(fd, "wb");
            if (!o->f) {
                int e = errno;
                close(fd);
                unlink(o->tmp);
                release(o);
                return loom_error_set(err, LOOM_ERR_NOMEM, "%s: cannot open a stream: %s", what, strerror(e));
            }
            return LOOM_OK;
        }
        if (errno != EEXIST || attempt >= 100) {
            int e = errno;
            loom_error_set(err, LOOM_ERR_IO, "%s: cannot create a temporary file next to %s: %s", what, path,
                           strerror(e));
            release(o);
            return LOOM_ERR_IO;
        }
    }
}

loom_status loom_file_out_commit(loom_file_out *o, const char *what, loom_error *err) {
    if (!o || !o->f) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "%s: no open output", what);
    int e = 0;
    if (fflush(o->f) != 0 || ferror(o->f)) e = errno ? errno : EIO;
    if (fclose(o->f) != 0 && !e) e = errno ? errno : EIO;
    o->f = NULL;
    if (e) {
        unlink(o->tmp);
        loom_error_set(err, LOOM_ERR_IO, "%s: writing %s failed: %s", what, o->path, strerror(e));
        release(o);
        return LOOM_ERR_IO;
    }
    if (rename(o->tmp, o->path) != 0) {
        e = errno;
        unlink(o->tmp);
        loom_error_set(err, LOOM_ERR_IO, "%s: cannot move the finished file to %s: %s", what, o->path,
                       strerror(e));
        release(o);
        return LOOM_ERR_IO;
    }
    release(o);
    return LOOM_OK;
}

void loom_file_out_abort(loom_file_out *o) {
    if (!o) return;
    if (o->f) fclose(o->f);
    if (o->tmp) unlink(o->tmp);
    release(o);
}
