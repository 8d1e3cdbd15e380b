#!/usr/bin/env bash
# Embeddings/s of `loom embed` and llama.cpp's `llama-embedding` on the same GGUF file,
# inputs and threads, runs interleaved; prints each run and the medians.
#   bench/embed_vs_llama.sh LOOM_BIN LLAMA_EMBEDDING MODEL.gguf INPUTS.txt [THREADS] [RUNS]
# INPUTS.txt: one input per line. Both tools pack the inputs into batches of 512 tokens
# (llama-embedding -b 512 -ub 512; loom's default batch = the context, 512 for BERT)
# and print every vector. Wall time of the whole process (load, tokenize, compute,
# print); loom also reports its compute time (--verbose).
set -euo pipefail
loom=$1 llama=$2 model=$3 inputs=$4 th=${5:-2} runs=${6:-5}
n=$(grep -c . "$inputs")
t_loom=() t_llama=() t_comp=()
now() { date +%s.%N; }
for r in $(seq "$runs"); do
  a=$(now)
  "$llama" -m "$model" -f "$inputs" -t "$th" -b 512 -ub 512 --no-warmup >/dev/null 2>/tmp/embed_bench_llama.log
  b=$(now)
  "$loom" embed "$model" --file "$inputs" -t "$th" --verbose >/dev/null 2>/tmp/embed_bench_loom.log
  c=$(now)
  tl=$(echo "$b - $a" | bc -l); to=$(echo "$c - $b" | bc -l)
  comp=$(sed -n 's/.* in \([0-9.]*\) ms:.*/\1/p' /tmp/embed_bench_loom.log)
  t_llama+=("$tl"); t_loom+=("$to"); t_comp+=("$comp")
  printf 'run %d: llama-embedding %.3f s, loom %.3f s (compute %s ms)\n' "$r" "$tl" "$to" "$comp"
done
med() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
ml=$(med "${t_llama[@]}"); mo=$(med "${t_loom[@]}"); mc=$(med "${t_comp[@]}")
printf 'median wall: llama-embedding %.3f s (%.1f embeddings/s), loom %.3f s (%.1f embeddings/s), ratio %.2fx; loom compute %.0f ms (%.1f embeddings/s)\n' \
  "$ml" "$(echo "$n / $ml" | bc -l)" "$mo" "$(echo "$n / $mo" | bc -l)" "$(echo "$ml / $mo" | bc -l)" "$mc" "$(echo "$n * 1000 / $mc" | bc -l)"
