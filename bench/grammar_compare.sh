#!/usr/bin/env bash
# Constrained vs unconstrained generation, Loom and llama.cpp side by side, interleaved.
#   bench/grammar_compare.sh MODEL.gguf [N_TOKENS] [REPS] [THREADS]
# Needs LLAMA_COMPLETION (path to llama.cpp's llama-completion; default
# /work/llama/src/build/bin/llama-completion) and LOOM (default build/bin/loom).
# Each repetition runs, in this order: loom, loom --json-schema S, llama, llama -j S
# with the same prompt, seed and thread count, and prints per-token sampling time
# (llama.cpp: "sampling time" of common_perf_print; Loom: the "sampling:" line of
# loom run, grammar included) and per-token generation time.
set -euo pipefail
model=${1:?usage: $0 MODEL.gguf [N_TOKENS] [REPS] [THREADS]}
n=${2:-128}; reps=${3:-3}; th=${4:-1}
loom=${LOOM:-build/bin/loom}
llama=${LLAMA_COMPLETION:-/work/llama/src/build/bin/llama-completion}
# a schema whose documents outlast the token budget (so both sides generate N tokens under the grammar)
schema='{"type":"object","properties":{"items":{"type":"array","items":{"type":"string","maxLength":12},"minItems":500}},"required":["items"]}'
printf "%-14s %4s %12s %12s\n" run rep "sample ms/t" "gen ms/t"
for r in $(seq 1 "$reps"); do
  for mode in loom loom-json llama llama-json; do
    case $mode in
      loom|loom-json)
        args=(run "$model" -p "Describe the image:" -n "$n" --seed 1 -t "$th" --no-display-prompt)
        [ "$mode" = loom-json ] && args+=(--json-schema "$schema")
        err=$("$loom" "${args[@]}" 2>&1 >/dev/null)
        ntok=$(sed -n 's/^generation: \([0-9]*\) tokens in \([0-9.]*\) ms.*/\1/p' <<<"$err")
        gms=$(sed -n 's/^generation: \([0-9]*\) tokens in \([0-9.]*\) ms.*/\2/p' <<<"$err")
        sms=$(sed -n 's/^sampling: \([0-9.]*\) ms.*/\1/p' <<<"$err")
        ;;
      llama|llama-json)
        args=(-m "$model" -p "Describe the image:" -n "$n" --seed 1 -t "$th" -no-cnv)
        [ "$mode" = llama-json ] && args+=(-j "$schema")
        err=$("$llama" "${args[@]}" 2>&1 >/dev/null </dev/null)
        sms=$(sed -n 's/.*sampling time = *\([0-9.]*\) ms.*/\1/p' <<<"$err")
        gms=$(sed -n 's/.* eval time = *\([0-9.]*\) ms \/ *\([0-9]*\) runs.*/\1/p' <<<"$err" | tail -1)
        ntok=$(sed -n 's/.* eval time = *\([0-9.]*\) ms \/ *\([0-9]*\) runs.*/\2/p' <<<"$err" | tail -1)
        ;;
    esac
    awk -v m="$mode" -v r="$r" -v s="$sms" -v g="$gms" -v t="$ntok" \
      'BEGIN { printf "%-14s %4d %12.3f %12.2f   (%d tokens)\n", m, r, s / t, g / t, t }'
  done
done
