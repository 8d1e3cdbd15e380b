/* loom info (placeholder until implemented). */
#include <stdio.h>
#include "commands.h"

int loom_cmd_info(int argc, char **argv) {
    (void)argc; (void)argv;
    fprintf(stderr, "loom info: not implemented yet\n");
    return 1;
}
