/* Small helpers shared by the CLI sub-commands (tools/ and bench/). */
#ifndef LOOM_TOOLS_CLI_UTIL_H
#define LOOM_TOOLS_CLI_UTIL_H

#include <stdbool.h>

/* Whole-string base-10 integer in [lo, hi]; false on junk, overflow or range. */
bool cli_parse_ll(const char *s, long long lo, long long hi, long long *out);
/* Whole-string finite floating-point number; false otherwise. */
bool cli_parse_double(const char *s, double *out);

#endif
