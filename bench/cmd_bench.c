/* loom bench: `loom bench kernels [...]` measures the CPU kernels; anything else
 * (a MODEL.gguf, or nothing) goes to the model benchmark. */
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "commands.h"

int loom_cmd_bench(int argc, char **argv) {
    /* argv[0] is "bench" when called from tools/loom.c; skip it if present */
    if (argc > 0 && argv[0] && strcmp(argv[0], "bench") == 0) {
        argc--;
        argv++;
    }
    if (argc > 0 && argv[0] && strcmp(argv[0], "kernels") == 0) return loom_bench_kernels(argc, argv);
    return loom_bench_model(argc, argv);
}
