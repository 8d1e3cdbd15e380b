/*
 * file_out.h (internal) - write a file atomically: the bytes go to a temporary file
 * in the target's directory, which is renamed over the target only when everything
 * was written and closed without error. A failure (or an abort) removes only the
 * temporary file: an existing file at the path is never truncated or deleted, and a
 * path that exists but is not a regular file (a device such as /dev/full, a FIFO, a
 * directory, a symbolic link) is refused before anything is created.
 *
 * Used by every library function that writes a named file (the GGUF writer,
 * loom_synth_write). The temporary name is "<dir>/.<base>.loom-tmp-<pid>-<n>",
 * created with O_EXCL and mode 0666 (less the umask), like fopen(path, "wb").
 * Not thread-safe per object; distinct objects may be used concurrently.
 */
#ifndef LOOM_GGUF_FILE_OUT_H
#define LOOM_GGUF_FILE_OUT_H

#include <stdio.h>

#include "loom_base.h"

typedef struct loom_file_out {
    FILE *f;        /* write through this (buffered stdio) */
    char *path;     /* target */
    char *tmp;      /* temporary file */
} loom_file_out;

/* Check the target and create the temporary file. LOOM_ERR_INVALID_ARG when path
 * exists and is not a regular file, LOOM_ERR_IO when the directory is not writable,
 * LOOM_ERR_NOMEM. what names the writer in messages ("gen", "gguf writer"). On
 * failure nothing is left behind and o is zeroed. */
loom_status loom_file_out_open(loom_file_out *o, const char *path, const char *what, loom_error *err);
/* Flush, close and check the temporary file, then rename it over the target. On any
 * failure the temporary file is removed and the target left as it was; o is released
 * either way. */
loom_status loom_file_out_commit(loom_file_out *o, const char *what, loom_error *err);
/* Close and remove the temporary file (the target is untouched). NULL-safe; safe on
 * a zeroed or already released o. */
void loom_file_out_abort(loom_file_out *o);

#endif
