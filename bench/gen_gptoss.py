#!/usr/bin/env python3
"""Write a synthetic gpt-oss GGUF (random weights, MXFP4 experts) for speed tests.

`loom gen --arch gpt-oss` writes tiny F32 models (head size 16, everything in memory);
this streams a full-size one in pure Python (no numpy): gpt-oss-20b's shape by
default (24 blocks, n_embd 2880, 64 query heads / 8 KV heads of 64, 32 experts, 4
used, expert FFN 2880, vocab 201,088), experts MXFP4, the other matrices (attention,
token_embd, output) Q8_0, norms / biases / sinks / router F32 (the router as
llama.cpp's converter keeps it). The tokenizer.* keys are copied from a vocab GGUF
(default tests/data/vocab/ggml-vocab-qwen2.gguf, 151,936 tokens) and padded with
control tokens "<|pad_N|>" up to --vocab tokens.

Weight bytes are random blocks drawn from a small pool (the values only have to be
finite and of a sane scale: MXFP4 exponent 2^-8, Q8_0 scale ~ 2/(127 sqrt(n_embd))).

Usage: bench/gen_gptoss.py -o /tmp/x.gguf [--layers 24] [--vocab 201088] [--vocab-file F]
"""
import argparse
import os
import random
import struct
import sys

T_F32, T_Q8_0, T_MXFP4 = 0, 8, 39
BLOCK = {T_F32: (1, 4), T_Q8_0: (32, 34), T_MXFP4: (32, 17)}
ALIGN = 32


def gguf_kvs(path):
    """(key, vtype, raw value bytes) of every KV of a GGUF file."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"GGUF":
        sys.exit(f"{path}: not a GGUF file")
    _ver, _nt, nkv = struct.unpack_from("<IQQ", data, 4)
    off = 24
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

    def skip_val(t, o):
        if t in sizes:
            return o + sizes[t]
        if t == 8:
            (n,) = struct.unpack_from("<Q", data, o)
            return o + 8 + n
        if t == 9:
            et, n = struct.unpack_from("<IQ", data, o)
            o += 12
            if et in sizes:
                return o + n * sizes[et]
            for _ in range(n):
                o = skip_val(et, o)
            return o
        sys.exit(f"{path}: bad KV type {t}")

    out = []
    for _ in range(nkv):
        (kl,) = struct.unpack_from("<Q", data, off)
        key = data[off + 8 : off + 8 + kl].decode()
        off += 8 + kl
        (t,) = struct.unpack_from("<I", data, off)
        off += 4
        end = skip_val(t, off)
        out.append((key, t, data[off:end]))
        off = end
    return out


def s_str(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


class KV:
    def __init__(self):
        self.items = []

    def raw(self, key, t, val):
        self.items.append(s_str(key) + struct.pack("<I", t) + val)

    def u32(self, key, v):
        self.raw(key, 4, struct.pack("<I", v))

    def f32(self, key, v):
        self.raw(key, 6, struct.pack("<f", v))

    def str(self, key, v):
        self.raw(key, 8, s_str(v))


def pad_array(t, raw, extra, elem_fn, elem_type):
    et, n = struct.unpack_from("<IQ", raw, 0)
    assert et == elem_type
    body = b"".join(elem_fn(i) for i in range(extra))
    return struct.pack("<IQ", et, n + extra) + raw[12:] + body, n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--embd", type=int, default=2880)
    ap.add_argument("--heads", type=int, default=64)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--experts", type=int, default=32)
    ap.add_argument("--experts-used", type=int, default=4)
    ap.add_argument("--ffn", type=int, default=2880)
    ap.add_argument("--vocab", type=int, default=201088)
    ap.add_argument("--vocab-file", default=os.path.join(os.path.dirname(__file__), "..", "tests", "data", "vocab",
                                                        "ggml-vocab-qwen2.gguf"))
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    E, NL, H, HKV, D, NE, NU, FE = a.embd, a.layers, a.heads, a.kv_heads, a.head_dim, a.experts, a.experts_used, a.ffn

    kv = KV()
    kv.str("general.architecture", "gpt-oss")
    kv.str("general.name", "loom-synth-gpt-oss")
    kv.u32("general.file_type", 38)  # MOSTLY_MXFP4_MOE
    p = "gpt-oss."
    kv.u32(p + "context_length", 131072)
    kv.u32(p + "embedding_length", E)
    kv.u32(p + "block_count", NL)
    kv.u32(p + "feed_forward_length", FE)
    kv.u32(p + "attention.head_count", H)
    kv.u32(p + "attention.head_count_kv", HKV)
    kv.f32(p + "attention.layer_norm_rms_epsilon", 1e-5)
    kv.u32(p + "attention.key_length", D)
    kv.u32(p + "attention.value_length", D)
    kv.u32(p + "rope.dimension_count", D)
    kv.f32(p + "rope.freq_base", 150000.0)
    kv.u32(p + "attention.sliding_window", 128)
    kv.str(p + "rope.scaling.type", "yarn")
    kv.f32(p + "rope.scaling.factor", 32.0)
    kv.u32(p + "rope.scaling.original_context_length", 4096)
    kv.u32(p + "expert_count", NE)
    kv.u32(p + "expert_used_count", NU)
    kv.u32(p + "expert_feed_forward_length", FE)
    n_vocab = None
    for key, t, raw in gguf_kvs(a.vocab_file):
        if not key.startswith("tokenizer."):
            continue
        if key == "tokenizer.ggml.tokens":
            et, n = struct.unpack_from("<IQ", raw, 0)
            extra = max(0, a.vocab - n)
            raw, n = pad_array(t, raw, extra, lambda i, n=n: s_str(f"<|pad_{i}|>"), 8)
            n_vocab = n + extra
        elif key == "tokenizer.ggml.token_type":
            et, n = struct.unpack_from("<IQ", raw, 0)
            raw, _ = pad_array(t, raw, max(0, a.vocab - n), lambda i: struct.pack("<i", 3), 5)
        elif key == "tokenizer.ggml.scores":
            et, n = struct.unpack_from("<IQ", raw, 0)
            raw, _ = pad_array(t, raw, max(0, a.vocab - n), lambda i: struct.pack("<f", 0.0), 6)
        kv.raw(key, t, raw)
    if n_vocab is None:
        sys.exit(f"{a.vocab_file}: no tokenizer.ggml.tokens")

    # tensors: (name, dims, type, kind)
    ts = [("token_embd.weight", [E, n_vocab], T_Q8_0, "mat")]
    HQ, HK = H * D, HKV * D
    for il in range(NL):
        b = f"blk.{il}."
        ts += [(b + "attn_norm.weight", [E], T_F32, "norm"),
               (b + "attn_q.weight", [E, HQ], T_Q8_0, "mat"), (b + "attn_k.weight", [E, HK], T_Q8_0, "mat"),
               (b + "attn_v.weight", [E, HK], T_Q8_0, "mat"),
               (b + "attn_q.bias", [HQ], T_F32, "bias"), (b + "attn_k.bias", [HK], T_F32, "bias"),
               (b + "attn_v.bias", [HK], T_F32, "bias"),
               (b + "attn_output.weight", [HQ, E], T_Q8_0, "mat"), (b + "attn_output.bias", [E], T_F32, "bias"),
               (b + "attn_sinks.weight", [H], T_F32, "bias"),
               (b + "post_attention_norm.weight", [E], T_F32, "norm"),
               (b + "ffn_gate_inp.weight", [E, NE], T_F32, "router"), (b + "ffn_gate_inp.bias", [NE], T_F32, "bias"),
               (b + "ffn_gate_exps.weight", [E, FE, NE], T_MXFP4, "mat"),
               (b + "ffn_up_exps.weight", [E, FE, NE], T_MXFP4, "mat"),
               (b + "ffn_down_exps.weight", [FE, E, NE], T_MXFP4, "mat"),
               (b + "ffn_gate_exps.bias", [FE, NE], T_F32, "bias"), (b + "ffn_up_exps.bias", [FE, NE], T_F32, "bias"),
               (b + "ffn_down_exps.bias", [E, NE], T_F32, "bias")]
    ts += [("output_norm.weight", [E], T_F32, "norm"), ("output.weight", [E, n_vocab], T_Q8_0, "mat")]

    def nbytes(dims, t):
        n = 1
        for d in dims:
            n *= d
        be, bb = BLOCK[t]
        assert dims[0] % be == 0
        return n // be * bb

    infos, off = [], 0
    for name, dims, t, _k in ts:
        infos.append(s_str(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims) +
                     struct.pack("<IQ", t, off))
        off += (nbytes(dims, t) + ALIGN - 1) // ALIGN * ALIGN

    # pools of random blocks (1 MiB-ish), rows are slices of them at random block offsets
    def pool(t):
        out = bytearray()
        if t == T_MXFP4:
            for _ in range(65536):
                out += bytes([120]) + rnd.randbytes(16)  # scale 2^(120-128): |w| <= 12/256
        else:
            d = struct.pack("<e", 2.0 / (127.0 * E ** 0.5))
            for _ in range(32768):
                out += d + bytes((rnd.randrange(-127, 128)) & 0xFF for _ in range(32))
        return bytes(out)

    pools = {T_MXFP4: pool(T_MXFP4), T_Q8_0: pool(T_Q8_0)}

    with open(a.out, "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, len(ts), len(kv.items)))
        for it in kv.items:
            f.write(it)
        for it in infos:
            f.write(it)
        pos = f.tell()
        f.write(b"\0" * ((ALIGN - pos % ALIGN) % ALIGN))
        written = 0
        for name, dims, t, kind in ts:
            nb = nbytes(dims, t)
            n = nb // 4 if t == T_F32 else 0
            if t == T_F32:
                if kind == "norm":
                    buf = struct.pack("<f", 1.0) * n
                elif kind == "router":
                    buf = b"".join(struct.pack("<f", rnd.gauss(0, 1) / E ** 0.5) for _ in range(n))
                else:
                    buf = b"".join(struct.pack("<f", rnd.gauss(0, 0.1)) for _ in range(n))
                f.write(buf)
            else:
                pl = pools[t]
                bb = BLOCK[t][1]
                pblocks = len(pl) // bb
                left = nb
                while left:
                    start = rnd.randrange(pblocks // 2) * bb
                    take = min(left, len(pl) - start)
                    take -= take % bb
                    f.write(pl[start:start + take])
                    left -= take
            f.write(b"\0" * ((ALIGN - nb % ALIGN) % ALIGN))
            written += nb
        print(f"{a.out}: {len(ts)} tensors, vocab {n_vocab}, {f.tell() / 1e9:.2f} GB")


if __name__ == "__main__":
    main()
