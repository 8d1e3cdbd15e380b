/* loom plan (placeholder until implemented). */
#include <stdio.h>
#include "commands.h"

int loom_cmd_plan(int argc, char **argv) {
    (void)argc; (void)argv;
    fprintf(stderr, "loom plan: not implemented yet\n");
    return 1;
}
