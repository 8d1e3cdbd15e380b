#!/usr/bin/env python3
"""Writes one synthetic vocabulary per pre-tokenizer into OUTDIR, for the
reference vectors in pre/ (see README.md): the tokens, types and merges of
ggml-vocab-gpt-2.gguf (byte-level pre-tokenizers) or ggml-vocab-gemma-4.gguf
(the raw-UTF-8 ones: sarvam-moe, whitespace) with tokenizer.ggml.pre set to
the name. tests/test_llm_tokenizer_pre.c builds the same vocabularies in
memory. Usage (gguf-py from llama.cpp on PYTHONPATH):
    python3 make_pre_vocabs.py VOCAB_DIR OUTDIR"""
import sys
from gguf import GGUFReader, GGUFWriter

PRE = ("default minicpm5 llama3 deepseek-llm deepseek-coder deepseek-v3 youtu falcon mpt starcoder gpt-2 jais-2 "
       "sarvam-moe jina-v1-en whitespace refact command-r qwen2 qwen35 stablelm2 olmo dbrx smaug-bpe poro-chat glm4 "
       "viking jais tekken smollm codeshell bloom gpt3-finnish exaone exaone-moe chameleon minerva-7b megrez gpt-4o "
       "granite-embed-multi-97m tiny_aya superbpe trillion granite-docling bailingmoe seed-coder hunyuan "
       "hunyuan-dense joyai-llm kimi-k2 grok-2 afmoe laguna minimax-m2 solar-open mellum2").split()
RAW = {"sarvam-moe": "gpt2", "whitespace": "whitespace"}


def strings(r, key):
    f = r.fields[key]
    return [bytes(f.parts[i]) for i in f.data]


def ints(r, key):
    f = r.fields[key]
    return [int(f.parts[i][0]) for i in f.data]


def main():
    vdir, out = sys.argv[1], sys.argv[2]
    src = {}
    for name in ("gpt-2", "gemma-4"):
        r = GGUFReader("%s/ggml-vocab-%s.gguf" % (vdir, name))
        src[name] = (strings(r, "tokenizer.ggml.tokens"), ints(r, "tokenizer.ggml.token_type"),
                     strings(r, "tokenizer.ggml.merges"))
    for pre in PRE:
        base = "gemma-4" if pre in RAW else "gpt-2"
        toks, types, merges = src[base]
        w = GGUFWriter("%s/pre-%s.gguf" % (out, pre), "gpt2")
        w.add_name("synthetic")
        w.add_string("tokenizer.ggml.model", RAW.get(pre, "gpt2"))
        w.add_string("tokenizer.ggml.pre", pre)
        w.add_array("tokenizer.ggml.tokens", toks)
        w.add_array("tokenizer.ggml.token_type", types)
        w.add_array("tokenizer.ggml.merges", merges)
        w.add_uint32("tokenizer.ggml.bos_token_id", 2 if base == "gemma-4" else 50256)
        w.add_uint32("tokenizer.ggml.eos_token_id", 1 if base == "gemma-4" else 50256)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()


if __name__ == "__main__":
    main()
