/* Status names and error values. */
#include "loom_base.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *loom_status_name(loom_status s) {
    switch (s) {
    case LOOM_OK: return "LOOM_OK";
    case LOOM_ERR_INVALID_ARG: return "LOOM_ERR_INVALID_ARG";
    case LOOM_ERR_FORMAT: return "LOOM_ERR_FORMAT";
    case LOOM_ERR_IO: return "LOOM_ERR_IO";
    case LOOM_ERR_NOMEM: return "LOOM_ERR_NOMEM";
    case LOOM_ERR_SHAPE: return "LOOM_ERR_SHAPE";
    case LOOM_ERR_TYPE: return "LOOM_ERR_TYPE";
    case LOOM_ERR_UNSUPPORTED: return "LOOM_ERR_UNSUPPORTED";
    case LOOM_ERR_CANCELLED: return "LOOM_ERR_CANCELLED";
    case LOOM_ERR_RANGE: return "LOOM_ERR_RANGE";
    case LOOM_ERR_CONTEXT_FULL: return "LOOM_ERR_CONTEXT_FULL";
    case LOOM_ERR_NOT_FOUND: return "LOOM_ERR_NOT_FOUND";
    case LOOM_ERR_INTERNAL: return "LOOM_ERR_INTERNAL";
    case LOOM_ERR_RESOURCE: return "LOOM_ERR_RESOURCE";
    }
    return "LOOM_ERR_UNKNOWN";
}

loom_status loom_error_set(loom_error *err, loom_status status, const char *fmt, ...) {
    if (!err || err->status != LOOM_OK) return status;
    err->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return status;
}

void loom_error_clear(loom_error *err) {
    if (!err) return;
    err->status = LOOM_OK;
    err->msg[0] = '\0';
}
