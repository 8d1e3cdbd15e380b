/* Small helpers shared by the CLI sub-commands (tools/ and bench/). */
#ifndef LOOM_TOOLS_CLI_UTIL_H
#define LOOM_TOOLS_CLI_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whole-string base-10 integer in [lo, hi]; false on junk, overflow or range. */
bool cli_parse_ll(const char *s, long long lo, long long hi, long long *out);
/* Whole-string finite floating-point number; false otherwise. */
bool cli_parse_double(const char *s, double *out);

/* Read a whole file (at most max bytes) into a malloc'ed NUL-terminated buffer;
 * NULL with a message in why (why[0] must be 0 on entry) on failure. */
char *cli_read_file(const char *path, size_t max, size_t *len, char *why, size_t why_cap);
/* Vulkan settings from the environment (the library reads no environment variable):
 * LOOM_VK_DEVICES (all | none | index list; unset = real GPUs only) into *devices,
 * (see also cli_vk_loader)
 * LOOM_VK_VALIDATE=1, LOOM_VK_INT8=force|off and LOOM_VK_STAGING=1 as LOOM_VK_* flags
 * added to *flags. */
void cli_vk_env(const char **devices, unsigned *flags);
/* LOOM_VK_LOADER: the Vulkan loader library to open instead of libvulkan.so.1 (NULL if unset). */
const char *cli_vk_loader(void);

/* Whole-string unsigned decimal 0..2^64-1: digits only (no sign, no spaces, no
 * overflow). False otherwise. */
bool cli_parse_u64(const char *s, uint64_t *out);
/* A --seed value: "-1" = random (*random = true), else cli_parse_u64. False (refused)
 * for anything else: other negatives, values >= 2^64, junk. */
bool cli_parse_seed(const char *s, uint64_t *seed, bool *random);

/* The flash-attention switch, as llama.cpp's `-fa [on|off|auto]`: v one of on, enabled,
 * true, 1 (*on = true), off, disabled, false, 0 (*on = false), auto, -1 (*on = true:
 * every Loom backend and architecture has the fused attention kernel). False, *on
 * untouched, for anything else (NULL included): the caller treats a bare `-fa` as on
 * and v as the next argument. */
bool cli_parse_flash_attn(const char *v, bool *on);

/* "1.10 B", "24.6 M", "5.3 K" or "812" (SI prefixes for counts such as parameters). */
void cli_format_count(char *buf, size_t size, uint64_t n);
/* "1.50 GiB", "3.2 MiB", "12.0 KiB" or "100 B". */
void cli_format_bytes(char *buf, size_t size, uint64_t n);

/* Exit statuses of every `loom` command. */
enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_ERROR = 1,    /* a runtime failure (I/O, model, memory, a failed write) */
    CLI_EXIT_USAGE = 2,    /* bad arguments (unknown option, value out of range) */
    CLI_EXIT_NO_FIT = 3    /* loom plan: the plan does not fit the devices / host memory */
};

/* Flush and close stdout, checking every write the command made through it; on a
 * failure prints "loom CMD: error writing standard output: REASON" and returns
 * CLI_EXIT_ERROR when rc was CLI_EXIT_OK, else rc. */
int cli_close_stdout(const char *cmd, int rc);
/* True when stdout has seen a write error (a command may stop early). */
bool cli_stdout_failed(void);

#endif
