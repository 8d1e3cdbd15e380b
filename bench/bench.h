/* Entry points of `loom bench` (bench/cmd_bench.c dispatches). argv[0] is the
 * sub-command word ("kernels") or the model path. Return the process exit status. */
#ifndef LOOM_BENCH_H
#define LOOM_BENCH_H

int loom_bench_kernels(int argc, char **argv); /* bench/bench_kernels.c */
int loom_bench_model(int argc, char **argv);   /* bench/bench_model.c */
int loom_bench_serve(int argc, char **argv);   /* bench/bench_serve.c: a load generator for HTTP servers */
int loom_bench_grammar(int argc, char **argv); /* bench/bench_grammar.c */
int loom_bench_template(int argc, char **argv); /* bench/bench_template.c */
int loom_bench_vk(int argc, char **argv);      /* bench/bench_vk.c */
int loom_bench_tokenizer(int argc, char **argv); /* bench/bench_tokenizer.c */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
/* Streaming read bandwidth in bytes/s (bench/bench_bw.c): the best of `passes`
 * passes of nth threads, each summing a contiguous slice of buf. First an untimed
 * pass: writes the buffer when touch (fresh memory), else reads it. 0 on bad args. */
double loom_bench_read_bandwidth(uint8_t *buf, size_t bytes, int nth, int passes, bool touch);

#endif
