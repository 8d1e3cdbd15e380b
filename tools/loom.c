/* `loom` command-line entry point: dispatches to sub-commands. */
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#include "cli_util.h"
#include "commands.h"

#ifndef LOOM_DEFAULT_MODEL
#define LOOM_DEFAULT_MODEL "models/stories260K.gguf"
#endif

const char *loom_default_model_path(void) {
    const char *env = getenv("LOOM_MODEL");
    if (env && *env) return env;
    return LOOM_DEFAULT_MODEL;
}

static void usage(FILE *f) {
    /* exit statuses, uniform over every command (README "CLI") */
    fprintf(f,
            "usage: loom <command> [options]\n"
            "commands:\n"
            "  run [MODEL.gguf] -p PROMPT [-n N]   generate text (default model: bundled stories260K)\n"
            "  eval MODEL.gguf --tokens 1,2,3 --out FILE   write logits of every position\n"
            "  tokenize MODEL.gguf TEXT            print token ids\n"
            "  info FILE.gguf [--json] [--cpu]     describe a GGUF file / the CPU\n"
            "  plan MODEL.gguf [--gpu-layers N ...]   placement and memory plan (dry run)\n"
            "  gen -o OUT.gguf [...]               write a synthetic llama model\n"
            "  bench [kernels | MODEL.gguf] [...]  measure speed\n"
#ifdef LOOM_HAVE_SERVER
            "  serve [--host H] [--port N] [--models DIR] [...]   Ollama and OpenAI HTTP APIs\n"
            "  chat MODEL [--system TEXT] [...]   interactive chat (one answer when stdin is not a terminal)\n"
#endif
            "  template (MODEL.gguf | FILE.jinja) --messages FILE.json   render a chat template\n"
            "  embed MODEL.gguf (TEXT... | --file F | --tokens 1,2,3)   embedding vectors\n"
            "Run `loom <command> --help` for a command's options.\n");
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *cmd = argv[1];
    struct { const char *name; int (*fn)(int, char **); } cmds[] = {
        {"run", loom_cmd_run},         {"eval", loom_cmd_eval}, {"tokenize", loom_cmd_tokenize},
        {"info", loom_cmd_info},       {"plan", loom_cmd_plan}, {"gen", loom_cmd_gen},
        {"bench", loom_cmd_bench},
#ifdef LOOM_HAVE_SERVER
        {"serve", loom_cmd_serve},     {"chat", loom_cmd_chat},
#endif
#ifdef LOOM_HAVE_TEMPLATE
        {"template", loom_cmd_template},
#endif
        {"embed", loom_cmd_embed},
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (!strcmp(cmd, cmds[i].name)) return cli_close_stdout(cmd, cmds[i].fn(argc - 1, argv + 1));
    fprintf(stderr, "loom: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}
