/* Entry points of `loom bench` (bench/cmd_bench.c dispatches). argv[0] is the
 * sub-command word ("kernels") or the model path. Return the process exit status. */
#ifndef LOOM_BENCH_H
#define LOOM_BENCH_H

int loom_bench_kernels(int argc, char **argv); /* bench/bench_kernels.c */
int loom_bench_model(int argc, char **argv);   /* bench/bench_model.c */

#endif
