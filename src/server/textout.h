/*
 * textout.h (internal) - the text a generation shows: stop strings cut from the
 * output, with the text that may begin a stop string held back until it is known
 * not to be one, and incomplete UTF-8 never handed out. Plain data; one per
 * generation; not thread-safe.
 */
#ifndef LOOM_SERVER_TEXTOUT_H
#define LOOM_SERVER_TEXTOUT_H

#include "server/util.h"

typedef struct srv_textout {
    char *const *stop;  /* borrowed; n_stop strings */
    int n_stop;
    srv_buf pending;    /* produced but not yet handed out */
    bool stopped;       /* a stop string was found: everything after it is dropped */
    int hit;            /* which one (an index into stop), -1 before */
} srv_textout;

void srv_textout_init(srv_textout *t, char *const *stop, int n_stop);
/* Add n bytes of generated text. Appends what is now safe to show to out and
 * returns true when a stop string completed (the text before it is appended, the
 * stop string and anything after it are dropped). false from then on adds nothing.
 * On OOM out->oom is set. */
bool srv_textout_push(srv_textout *t, const char *p, size_t n, srv_buf *out);
/* Generation ended without a stop string: hand out what was held back. */
void srv_textout_flush(srv_textout *t, srv_buf *out);
void srv_textout_free(srv_textout *t);

#endif
