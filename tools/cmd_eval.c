/* loom eval (placeholder until implemented). */
#include <stdio.h>
#include "commands.h"

int loom_cmd_eval(int argc, char **argv) {
    (void)argc; (void)argv;
    fprintf(stderr, "loom eval: not implemented yet\n");
    return 1;
}
