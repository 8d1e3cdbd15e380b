/* Small helpers shared by the CLI sub-commands. */
#include "cli_util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

bool cli_parse_ll(const char *s, long long lo, long long hi, long long *out) {
    if (!s || !*s) return false;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

bool cli_parse_double(const char *s, double *out) {
    if (!s || !*s) return false;
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v)) return false;
    *out = v;
    return true;
}
