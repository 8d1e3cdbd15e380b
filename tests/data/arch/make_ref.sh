#!/usr/bin/env bash
# Regenerates tests/data/arch/ (see README.md) with llama.cpp.
#   tests/data/arch/make_ref.sh LLAMA_SRC LLAMA_BUILD LOOM_BUILD
# LLAMA_SRC: a llama.cpp checkout (headers), LLAMA_BUILD: its CMake build (static libs,
# bin/llama-quantize), LOOM_BUILD: a Loom build (bin/test_llm_arch --write ARCH OUT writes
# the synthetic model exactly as the test regenerates it). Writes into this directory.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$1 build=$2 loom=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

g++ -O2 -x c -std=c11 -I"$src/include" -I"$src/ggml/include" "$here/gen_arch_ref.c" -c -o "$work/gen.o"
g++ -o "$work/gen" "$work/gen.o" "$build/src/libllama.a" "$build/ggml/src/libggml.a" \
  "$build/ggml/src/libggml-cpu.a" "$build/ggml/src/libggml-base.a" -lgomp -lm -lpthread
gen=$work/gen
ids=$(cat "$here/tokens.txt")

: >"$here/hashes.txt"
: >"$here/measured.txt"
run() { # run NAME MODEL: both llama.cpp runs and their difference
  local name=$1 model=$2
  "$gen" logits "$model" "$ids" "$here/$name.default.bin" default 2>"$work/$name.log"
  "$gen" logits "$model" "$ids" "$here/$name.f32.bin" f32 2>>"$work/$name.log"
  echo "$name f32-run vs default: $("$gen" cmp "$here/$name.default.bin" "$here/$name.f32.bin")" >>"$here/measured.txt"
}
for a in qwen3moe phi3 phi3-long gemma2 gemma3 mistral3 gpt-oss; do
  "$loom/bin/test_llm_arch" --write "$a" "$work/$a.gguf"
  echo "$a $("$gen" fnv "$work/$a.gguf")" >>"$here/hashes.txt"
  run "$a" "$work/$a.gguf"
done

# quantized variants by llama-quantize (1 thread); committed with their logits
: >"$here/quantized.txt"
q() { # q ARCH TYPE NAME [options]
  local a=$1 type=$2 name=$3; shift 3
  "$build/bin/llama-quantize" "$@" "$work/$a.gguf" "$here/$name.gguf" "$type" 1 >"$work/$name.qlog" 2>&1
  run "$name" "$here/$name.gguf"
  echo "$name" >>"$here/quantized.txt"
}
if [ "${QUANT:-1}" = 1 ]; then
  q qwen3moe Q8_0      qwen3moe-q8_0
  q qwen3moe Q4_K_M    qwen3moe-q4_k_m
  q gemma2   Q4_K_M    gemma2-q4_k_m
  q phi3     Q8_0      phi3-q8_0
  q gpt-oss  MXFP4_MOE gpt-oss-mxfp4
fi
# models written independently of Loom (make_indep.py, plain Python): committed with their logits
: >"$here/indep.txt"
for a in exaone gemma granite olmo2 phi2 starcoder2 command-r cohere2 deepseek2 deepseek2-lite qwen2moe gemma2 gemma3 phi3 mistral3 qwen3moe gpt-oss \
  mixtral smollm3 internlm2 ernie4_5 seed_oss qwen2vl qwen3vl qwen3vlmoe glm4 olmoe glm4moe llama4 gemma4 gemma4moe gemma3n mistral4 granitemoe ernie4_5-moe exaone4 stablelm stablelm-12b minimax-m2 arcee dots1 chatglm qwen35 qwen35moe qwen3next qwen3next-legacy granitehybrid granitehybrid-dense nemotron_h nemotron_h_moe lfm2 lfm2moe falcon_h1 nemotron falcon falcon-40b gpt2 starcoder bailingmoe2 \
  mamba falcon-mamba mamba2 jamba rwkv7 hunyuan-dense hunyuan-moe minicpm olmo phimoe apertus bitnet gptneox gptneox-seq deci rwkv6 minicpm3 xverse baichuan qwen orion \
  bloom mpt mpt-full jais refact baichuan13 deepseek smallthinker smallthinker-swa afmoe exaone-moe bailingmoe jais2 codeshell dbrx plamo2 deci-gqa \
  maincoder pangu-embedded nanbeige nanbeige-loop nanbeige-loop-skip plamo llama-qkv llama-kvrot chameleon chameleon-swin llama-nvfp4 muse-glimmer talkie qwen3-yarn mellum arctic openelm plamo3 paddleocr hunyuan_vl deepseek2-ocr mimo2 step35 hy_v3 cohere2moe arwkv7 granite_swa granite_swa-dense laguna kimi-linear rwkv6qwen2 bailingmoe3 grok grok2 deepseek32 glm-dsa dots3note kimi-k3 minimax-01 cogvlm grovemoe mistral4-fused granite-qkv baichuan-nopos llama-extras; do
  python3 "$here/make_indep.py" "$here/../../../models/stories260K.gguf" "$a" "$here/indep-$a.gguf"
  run "indep-$a" "$here/indep-$a.gguf"
  if [ "$a" = llama-kvrot ]; then # quantized K/V caches (llama.cpp turns them)
    for c in q8_0 q4_0; do "$gen" logits "$here/indep-$a.gguf" "$ids" "$here/indep-$a.$c.bin" $c 2>>"$work/$a.log"; done
  fi
  case $a in
    gpt-oss) echo "indep-$a 0.85 quantized" ;;
    llama-nvfp4) echo "indep-$a 0.95 f32q" ;; # NVFP4 x Q8 activations, as llama.cpp computes them
    gemma4 | gemma4moe | gemma3n | falcon | falcon-40b | gpt2 | starcoder | gptneox | gptneox-seq | bloom | mpt | mpt-full | codeshell | grok | grok2) echo "indep-$a 0.95 f32gelu" ;; # F32, many GELUs through llama.cpp's F16 table (test_llm_arch.c)
    exaone | gemma | granite | olmo2 | phi2 | starcoder2 | command-r | cohere2 | deepseek2 | deepseek2-lite | qwen2moe | \
      mixtral | smollm3 | internlm2 | ernie4_5 | seed_oss | qwen2vl | qwen3vl | glm4 | olmoe | glm4moe | llama4 | mistral4 | granitemoe | ernie4_5-moe | exaone4 | stablelm | stablelm-12b | minimax-m2 | arcee | dots1 | chatglm | qwen35 | qwen35moe | qwen3next | qwen3next-legacy | granitehybrid | granitehybrid-dense | nemotron_h | nemotron_h_moe | lfm2 | lfm2moe | falcon_h1 | nemotron | bailingmoe2 | \
      mamba | falcon-mamba | mamba2 | jamba | rwkv7 | hunyuan-dense | hunyuan-moe | minicpm | olmo | phimoe | apertus | bitnet | deci | rwkv6 | minicpm3 | xverse | baichuan | qwen | orion | jais | refact | baichuan13 | deepseek | smallthinker | smallthinker-swa | afmoe | exaone-moe | bailingmoe | jais2 | dbrx | plamo2 | deci-gqa | maincoder | pangu-embedded | nanbeige | nanbeige-loop | nanbeige-loop-skip | plamo | llama-qkv | llama-kvrot | chameleon | chameleon-swin | muse-glimmer | talkie | qwen3-yarn | mellum | arctic | openelm | plamo3 | paddleocr | hunyuan_vl | deepseek2-ocr | mimo2 | step35 | hy_v3 | cohere2moe | arwkv7 | granite_swa | granite_swa-dense | laguna | kimi-linear | rwkv6qwen2 | bailingmoe3 | deepseek32 | glm-dsa | dots3note | kimi-k3 | minimax-01 | cogvlm | grovemoe | mistral4-fused | granite-qkv | baichuan-nopos | llama-extras) echo "indep-$a 0.95 f32" ;; # F32 matrices: the tight check applies
    *) echo "indep-$a 0.95 float" ;;
  esac >>"$here/indep.txt"
done
echo "done: $(du -cb "$here"/*.gguf "$here"/*.bin 2>/dev/null | tail -n 1)"
