/* loom gen (placeholder until implemented). */
#include <stdio.h>
#include "commands.h"

int loom_cmd_gen(int argc, char **argv) {
    (void)argc; (void)argv;
    fprintf(stderr, "loom gen: not implemented yet\n");
    return 1;
}
