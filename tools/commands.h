/* Sub-commands of the `loom` CLI. Each returns the process exit status. */
#ifndef LOOM_TOOLS_COMMANDS_H
#define LOOM_TOOLS_COMMANDS_H

int loom_cmd_info(int argc, char **argv);     /* tools/cmd_info.c */
int loom_cmd_run(int argc, char **argv);      /* tools/cmd_run.c */
int loom_cmd_eval(int argc, char **argv);     /* tools/cmd_eval.c */
int loom_cmd_tokenize(int argc, char **argv); /* tools/cmd_tokenize.c */
int loom_cmd_plan(int argc, char **argv);     /* tools/cmd_plan.c */
int loom_cmd_gen(int argc, char **argv);      /* tools/cmd_gen.c */
int loom_cmd_bench(int argc, char **argv);    /* bench/cmd_bench.c */
int loom_cmd_serve(int argc, char **argv);    /* tools/cmd_serve.c (LOOM_HAVE_SERVER) */
int loom_cmd_chat(int argc, char **argv);     /* tools/cmd_chat.c (LOOM_HAVE_SERVER) */
int loom_cmd_template(int argc, char **argv); /* tools/cmd_template.c */
int loom_cmd_embed(int argc, char **argv);    /* tools/cmd_embed.c */

/* Path of the bundled default model (models/stories260K.gguf next to the build,
 * or LOOM_MODEL from the environment). */
const char *loom_default_model_path(void);

#endif
