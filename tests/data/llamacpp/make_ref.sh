#!/usr/bin/env bash
# Regenerates tests/data/llamacpp/ (see README.md) with llama.cpp's tools.
#   tests/data/llamacpp/make_ref.sh LLAMA_SRC LLAMA_BUILD LOOM_BUILD
# LLAMA_SRC: a llama.cpp checkout (headers), LLAMA_BUILD: its CMake build (static libs,
# bin/llama-quantize), LOOM_BUILD: a Loom build (bin/test_llm_llamacpp writes the F32
# model). Run from anywhere; writes into this directory; scratch in $TMPDIR.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$1 build=$2 loom=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cc -O2 -std=c11 -I"$src/include" -I"$src/ggml/include" "$here/gen_ref.c" -o "$work/gen_ref" \
  "$build/src/libllama.a" "$build/ggml/src/libggml.a" "$build/ggml/src/libggml-cpu.a" \
  "$build/ggml/src/libggml-base.a" -lstdc++ -lgomp -lm -lpthread
gen=$work/gen_ref
cc -O2 -std=c11 -I"$src/ggml/include" "$here/gen_iq.c" -o "$work/gen_iq" \
  "$build/ggml/src/libggml.a" "$build/ggml/src/libggml-cpu.a" "$build/ggml/src/libggml-base.a" \
  -lstdc++ -lgomp -lm -lpthread
"$work/gen_iq" >"$here/iq-blocks.txt"
quant=$build/bin/llama-quantize

# 1. the F32 model (not committed: the tests regenerate it bit for bit)
"$loom/bin/test_llm_llamacpp" --write-f32 "$work/ref-f32.gguf"

# 2. llama-quantize, one file per block-type family (--pure: no k-quant mixture; rows
#    of 64 are not K-quant blocks, so those tensors fall back as llama-quantize decides)
q() { # q OUT TYPE [llama-quantize options...]
  local out=$1 type=$2; shift 2
  "$quant" "$@" "$work/ref-f32.gguf" "$here/$out" "$type" 1 >"$work/$out.log" 2>&1
}
q ref-f16.gguf                 F16       --pure
q ref-q4_0.gguf                Q4_0      --pure
q ref-q4_1.gguf                Q4_1      --pure
q ref-q5_1.gguf                Q5_1      --pure
q ref-q2_k-q3_k.gguf           Q2_K      --pure --tensor-type blk.1.ffn_down=q3_k
q ref-q4_k-q5_k.gguf           Q4_K      --pure --tensor-type blk.1.ffn_down=q5_k
q ref-q6_k-bf16.gguf           Q6_K      --pure --token-embedding-type bf16
q ref-mxfp4.gguf               MXFP4_MOE --pure
q ref-iq4_nl-iq4_xs-iq3_s.gguf IQ4_NL    --pure --tensor-type blk.0.ffn_down=iq4_xs --tensor-type blk.1.ffn_down=iq3_s

# 3. the token sequence (llama.cpp's tokenizer, with BOS)
text="Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends."
ids=$("$gen" tokenize "$work/ref-f32.gguf" "$text" 2>/dev/null)
echo "$ids" >"$here/tokens.txt"

# 4. dequantized values (hash per tensor) of every file, the F32 model first
(cd "$work" && "$gen" dequant ref-f32.gguf) >"$here/dequant.txt"
(cd "$here" && "$gen" dequant ref-*.gguf) >>"$here/dequant.txt"

# 5. logits: the F32 model (llama.cpp's default F16 KV cache, and an F32 cache), the
#    F16 model with an F32 cache; every quantized file's nrmse against the F32 logits
"$gen" logits "$work/ref-f32.gguf" "$ids" "$here/logits-f32.bin" 2>/dev/null
"$gen" logits "$work/ref-f32.gguf" "$ids" "$here/logits-f32-c32.bin" f32 2>/dev/null
"$gen" logits "$here/ref-f16.gguf" "$ids" "$here/logits-f16-c32.bin" f32 2>/dev/null
: >"$here/nrmse.txt"
for f in "$here"/ref-*.gguf; do
  b=$(basename "$f")
  "$gen" logits "$f" "$ids" "$work/$b.logits" 2>/dev/null
  echo "$b $("$gen" nrmse "$here/logits-f32.bin" "$work/$b.logits")" >>"$here/nrmse.txt"
done
echo "done: $(du -cb "$here"/*.gguf "$here"/*.bin | tail -n 1)"
