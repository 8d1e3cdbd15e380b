#!/usr/bin/env python3
"""Write a synthetic NVFP4 llama GGUF (random weights) for speed tests, laid out as
llama.cpp's converter writes NVFP4 checkpoints (ModelOpt): the seven matrices of every
layer NVFP4 (64-value blocks: four UE4M3 sub-block scales near 1, random codes), each
with its per-tensor scale2 as "<name>.scale" (F32 [1], 1 / (2.9 sqrt(n_in)): rows near
unit variance / sqrt(n_in)); token_embd and output F16, norms F32. TinyLlama's shape by
default (22 blocks, n_embd 2048, 32 heads / 4 KV heads, FFN 5632); tokenizer.* keys
copied from a vocab GGUF (default tests/data/vocab/ggml-vocab-llama-spm.gguf).
`loom gen` cannot write NVFP4 (Loom has no NVFP4 quantizer; the converter only repacks).

Usage: bench/gen_nvfp4.py -o /tmp/x.gguf [--layers 22] [--vocab-file F]
Uses tests/data/arch/make_indep.py's writer (pure Python; ~2 minutes, ~800 MB).
"""
import argparse
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "data", "arch"))
import make_indep as mi  # noqa: E402
from make_model import T_U32  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-o", required=True)
    ap.add_argument("--layers", type=int, default=22)
    ap.add_argument("--vocab-file", default=os.path.join(HERE, "..", "tests", "data", "vocab", "ggml-vocab-llama-spm.gguf"))
    args = ap.parse_args()
    E, NL, H, HKV, F = 2048, args.layers, 32, 4, 5632
    D = E // H
    m = mi.Model("llama", 1, mi.GGML_F16)
    mi.common(m, E, NL, H, HKV, F, 4096, 1e-5, None, 39)  # general.file_type: LLAMA_FTYPE_MOSTLY_NVFP4
    m.kv("rope.dimension_count", T_U32, D)
    NV = mi.n_vocab_of(args.vocab_file)
    tab = bytes(0x36 + (b % 5) for b in range(256))  # scale bytes 0x36..0x3A: 0.75..1.25 (x 1/2)

    def nv(name, n_in, n_out):
        nb = n_in * n_out // 64
        ba = bytearray(os.urandom(nb * 36))
        sc = os.urandom(nb * 4).translate(tab)
        for j in range(4):
            ba[j::36] = sc[j::4]
        m.tensors.append((name, [n_in, n_out], mi.GGML_NVFP4, bytes(ba)))
        m.add_vals(name.replace(".weight", ".scale"), [1.0 / (2.9 * n_in ** 0.5)], [1])

    def f16(name, dims, std):
        n = dims[0] * dims[1]
        vals = [((b / 255.0) * 2 - 1) * std for b in os.urandom(65536)]
        blk = struct.pack("<%de" % len(vals), *vals)
        m.tensors.append((name, dims, mi.GGML_F16, (blk * (n // 65536 + 1))[: 2 * n]))

    f16("token_embd.weight", [E, NV], 1.0)
    for i in range(NL):
        b = "blk.%d." % i
        m.norm(b + "attn_norm.weight", E)
        nv(b + "attn_q.weight", E, E)
        nv(b + "attn_k.weight", E, HKV * D)
        nv(b + "attn_v.weight", E, HKV * D)
        nv(b + "attn_output.weight", E, E)
        m.norm(b + "ffn_norm.weight", E)
        nv(b + "ffn_gate.weight", E, F)
        nv(b + "ffn_up.weight", E, F)
        nv(b + "ffn_down.weight", F, E)
    m.norm("output_norm.weight", E)
    f16("output.weight", [E, NV], E ** -0.5)
    m.write(args.vocab_file, args.o)


if __name__ == "__main__":
    main()
