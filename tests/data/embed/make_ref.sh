#!/usr/bin/env bash
# Regenerates the llama.cpp reference embeddings in tests/data/embed/ (README.md).
#   tests/data/embed/make_ref.sh LLAMA_SRC LLAMA_BUILD LOOM_BUILD
# LLAMA_SRC: a llama.cpp checkout (headers), LLAMA_BUILD: its CMake build (static libs),
# LOOM_BUILD: a Loom build (bin/loom writes the synthetic models; vocab/ has the
# unpacked bert-bge vocabulary). Writes into this directory; scratch in $TMPDIR.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$1 build=$2 loom=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
vocab=$loom/vocab/ggml-vocab-bert-bge.gguf

cc -O2 -std=c11 -I"$src/include" -I"$src/ggml/include" "$here/embed_ref.c" -o "$work/embed_ref" \
  "$build/src/libllama.a" "$build/ggml/src/libggml.a" "$build/ggml/src/libggml-cpu.a" \
  "$build/ggml/src/libggml-base.a" -lstdc++ -lgomp -lm -lpthread
ref=$work/embed_ref

# 1. the synthetic models (not committed: test_llm_embed_llamacpp regenerates them and
#    checks these hashes). Same parameters as tests/embed_test_common.h et_make_model.
: > "$here/models.txt"
for arch in bert nomic-bert; do
  for type in F32 F16; do
    m=$work/syn-$arch-$type.gguf
    "$loom/bin/loom" gen --arch $arch --vocab "$vocab" -o "$m" --dim 64 --layers 2 --heads 4 \
      --ffn 128 --ctx 128 --type $type --seed 1 --rope-base 1000 -t 2 >/dev/null
    echo "syn-$arch-$type $(python3 -c "
import sys
h=0xcbf29ce484222325
for b in open(sys.argv[1],'rb').read(): h=((h^b)*0x100000001b3)&0xFFFFFFFFFFFFFFFF
print('%016x'%h)" "$m")" >> "$here/models.txt"
  done
done
# 2. the independent models (committed)
python3 "$here/make_model.py" "$vocab" bert "$here/indep-bert.gguf"
python3 "$here/make_model.py" "$vocab" nomic-bert "$here/indep-nomic-bert.gguf"
python3 "$here/make_model.py" "$vocab" nomic-bert-moe "$here/indep-nomic-bert-moe.gguf"
python3 "$here/make_model.py" "$vocab" jina-bert-v2 "$here/indep-jina-bert-v2.gguf"
python3 "$here/make_model.py" "$vocab" jina-bert-v2-qkn "$here/indep-jina-bert-v2-qkn.gguf"
python3 "$here/make_model.py" "$vocab" jina-bert-v3 "$here/indep-jina-bert-v3.gguf"
python3 "$here/make_model.py" "$vocab" modern-bert "$here/indep-modern-bert.gguf"
python3 "$here/make_model.py" "$vocab" modern-bert-silu "$here/indep-modern-bert-silu.gguf"
python3 "$here/make_model.py" "$vocab" t5encoder "$here/indep-t5encoder.gguf"
python3 "$here/make_model.py" "$vocab" t5encoder-relu "$here/indep-t5encoder-relu.gguf"
for arch in qwen3 llama gemma-embedding llama-embed; do
  python3 "$here/make_model.py" "$vocab" $arch "$here/indep-$arch.gguf"
done

# 3. token sequences: llama.cpp's tokenizer for the texts (bge vocab), fixed ids for the
#    independent models (their vocabulary is the first 2000 tokens)
: > "$here/tokens-bge.txt"
while IFS= read -r t; do
  "$ref" tokenize "$work/syn-bert-F32.gguf" "$t" 2>/dev/null >> "$here/tokens-bge.txt"
done < "$here/texts.txt"
printf '%s\n' 101,1996,1997,102 101,1998,1999,1012,1037,1010,1996,1011,102 101,1045,1055,1062,1063,1064,1065,1066,1067,1068,1069,1070,1071,102 > "$here/tokens-indep.txt"

# 4. references: every model x pooling, all sequences in one llama_decode
mk() { # mk MODEL_FILE NAME TOKENS_FILE [embed|embed1]
  local m=$1 name=$2 toks=$3 mode=${4:-embed}
  mapfile -t seqs < "$toks"
  for p in none mean cls last; do
    "$ref" $mode "$m" $p "$here/$name.$p.bin" "${seqs[@]}" 2>/dev/null
  done
}
for arch in bert nomic-bert; do
  for type in F32 F16; do mk "$work/syn-$arch-$type.gguf" syn-$arch-$type "$here/tokens-bge.txt"; done
done
mk "$here/indep-bert.gguf" indep-bert "$here/tokens-indep.txt"
mk "$here/indep-nomic-bert.gguf" indep-nomic-bert "$here/tokens-indep.txt"
mk "$here/indep-nomic-bert-moe.gguf" indep-nomic-bert-moe "$here/tokens-indep.txt"
mk "$here/indep-jina-bert-v2.gguf" indep-jina-bert-v2 "$here/tokens-indep.txt"
mk "$here/indep-jina-bert-v2-qkn.gguf" indep-jina-bert-v2-qkn "$here/tokens-indep.txt"
mk "$here/indep-jina-bert-v3.gguf" indep-jina-bert-v3 "$here/tokens-indep.txt"
mk "$here/indep-modern-bert.gguf" indep-modern-bert "$here/tokens-indep.txt"
mk "$here/indep-modern-bert-silu.gguf" indep-modern-bert-silu "$here/tokens-indep.txt"
mk "$here/indep-t5encoder.gguf" indep-t5encoder "$here/tokens-indep.txt"
mk "$here/indep-t5encoder-relu.gguf" indep-t5encoder-relu "$here/tokens-indep.txt"
# decoder embedding models: one llama_decode per sequence, F32 K/V cache (README.md)
for arch in qwen3 llama gemma-embedding llama-embed; do
  mk "$here/indep-$arch.gguf" indep-$arch "$here/tokens-indep.txt" embed1
done
# the bundled trained llama (no pooling_type: the pooling is asked for)
mk "$here/../../../models/stories260K.gguf" stories260K "$here/tokens-stories.txt" embed1
echo "done: $(ls "$here"/*.bin | wc -l) reference files"
