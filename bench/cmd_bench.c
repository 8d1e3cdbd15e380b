/* loom bench (placeholder until implemented). */
#include <stdio.h>
#include "commands.h"

int loom_cmd_bench(int argc, char **argv) {
    (void)argc; (void)argv;
    fprintf(stderr, "loom bench: not implemented yet\n");
    return 1;
}
