/* loom bench: `loom bench kernels [...]` measures the CPU kernels, `loom bench
 * template [...]` chat-template rendering, `loom bench tokenizer [...]` the
 * tokenizer, `loom bench grammar [...]` constrained sampling, `loom bench serve
 * [...]` loads an HTTP server (bench/bench_serve.c); anything else (a
 * MODEL.gguf, or nothing) goes to the model benchmark. */
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
    if (argc > 0 && argv[0] && strcmp(argv[0], "serve") == 0) return loom_bench_serve(argc, argv);
    if (argc > 0 && argv[0] && strcmp(argv[0], "grammar") == 0) return loom_bench_grammar(argc, argv);
#ifdef LOOM_HAVE_TEMPLATE
    if (argc > 0 && argv[0] && strcmp(argv[0], "template") == 0) return loom_bench_template(argc, argv);
#endif
    if (argc > 0 && argv[0] && strcmp(argv[0], "vk") == 0) return loom_bench_vk(argc, argv);
    if (argc > 0 && argv[0] && strcmp(argv[0], "tokenizer") == 0) return loom_bench_tokenizer(argc, argv);
    return loom_bench_model(argc, argv);
}
