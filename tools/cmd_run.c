/* loom run (placeholder until implemented). */
#include <stdio.h>
#include "commands.h"

int loom_cmd_run(int argc, char **argv) {
    (void)argc; (void)argv;
    fprintf(stderr, "loom run: not implemented yet\n");
    return 1;
}
