#!/bin/sh
# Interleaved comparison of `loom serve` and llama.cpp's `llama-server` on the same GGUF
# file and thread count, with the same load: `loom bench serve` (concurrent streaming
# /v1/completions clients) against each server in turn, ROUNDS times.
#
#   bench/serve_vs_llama.sh MODEL.gguf [ROUNDS=3] [CLIENTS=8] [N=32] [REQUESTS=1] [THREADS=2]
#
# Env: LOOM (default build/bin/loom), LLAMA_SERVER (default
# /work/llama/src/build/bin/llama-server), PORT_BASE (default 18200), LLAMA_EXTRA (more
# llama-server options, e.g. "-nr" where its repacked/AMX kernels fault on the CPU).
# loom serve: --parallel CLIENTS --ctx 512 -t THREADS (the first, untimed request of each
# client loads the model); llama-server: -np CLIENTS -c CLIENTS*512 -t THREADS (timed
# once /health answers), its other options at their defaults. Prints one JSON line per
# run (loom bench serve --json) tagged with the server, then nothing else: take medians.
set -eu
MODEL=$1
ROUNDS=${2:-3}
CLIENTS=${3:-8}
N=${4:-32}
REQ=${5:-1}
THREADS=${6:-2}
LOOM=${LOOM:-build/bin/loom}
LLAMA_SERVER=${LLAMA_SERVER:-/work/llama/src/build/bin/llama-server}
PB=${PORT_BASE:-18200}
DIR=$(mktemp -d /tmp/loom-bench-serve-XXXXXX)
ln -s "$(readlink -f "$MODEL")" "$DIR/m.gguf"
trap 'rm -rf "$DIR"' EXIT

wait_health() { # url
  i=0
  while [ $i -lt 1200 ]; do
    if curl -sf "$1/health" >/dev/null 2>&1; then return 0; fi
    sleep 0.5
    i=$((i + 1))
  done
  return 1
}

r=1
while [ "$r" -le "$ROUNDS" ]; do
  port=$((PB + 2 * r))
  "$LOOM" serve --port $port --models "$DIR" --ollama-models none --parallel "$CLIENTS" --ctx 512 \
    -t "$THREADS" --quiet 2>"$DIR/loom.log" &
  pid=$!
  wait_health "http://127.0.0.1:$port"
  printf '{"server":"loom","round":%d,"result":' "$r"
  "$LOOM" bench serve --url "http://127.0.0.1:$port" --model m --clients "$CLIENTS" --requests "$REQ" -n "$N" \
    --json | tr -d '\n'
  printf '}\n'
  kill "$pid"
  wait "$pid" 2>/dev/null || true

  port=$((port + 1))
  "$LLAMA_SERVER" -m "$DIR/m.gguf" -np "$CLIENTS" -c $((CLIENTS * 512)) -t "$THREADS" --host 127.0.0.1 \
    --port $port ${LLAMA_EXTRA:-} >"$DIR/llama.log" 2>&1 &
  pid=$!
  wait_health "http://127.0.0.1:$port"
  printf '{"server":"llama-server","round":%d,"result":' "$r"
  "$LOOM" bench serve --url "http://127.0.0.1:$port" --model m --clients "$CLIENTS" --requests "$REQ" -n "$N" \
    --json | tr -d '\n'
  printf '}\n'
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  r=$((r + 1))
done
