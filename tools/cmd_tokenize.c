/* loom tokenize (placeholder until implemented). */
#include <stdio.h>
#include "commands.h"

int loom_cmd_tokenize(int argc, char **argv) {
    (void)argc; (void)argv;
    fprintf(stderr, "loom tokenize: not implemented yet\n");
    return 1;
}
