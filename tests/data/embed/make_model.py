#!/usr/bin/env python3
"""make_model.py - small embedding-model GGUF files made independently of Loom's
synthetic-model writer (src/llm/synth.c): plain Python (no numpy), the tensor order
and names of llama.cpp's converter (convert_hf_to_gguf.py, BertModel /
NomicBertModel / Qwen3Model / LlamaModel / EmbeddingGemma: HF state-dict order),
its keys, Gaussian weights from Python's random module, and the first NV tokens of
the bert-bge WordPiece vocabulary (the tests give token ids, so the vocabulary only
has to load).

  make_model.py VOCAB.gguf bert|nomic-bert|nomic-bert-moe|qwen3|llama|gemma-embedding|llama-embed|jina-bert-v2|jina-bert-v2-qkn|jina-bert-v3|modern-bert|modern-bert-silu OUT.gguf [NV DIM CTX]

nomic-bert-moe (nomic-embed-text-v2-moe's layout): 4 layers, every 2nd (1 and 3) a
mixture of 4 GELU experts (top 2, no biases, softmax router), the others GELU MLPs with
biases; fused attn_qkv with bias, attn_output bias; pooling mean.

Decoder embedding models: qwen3 (pooling last, causal, GQA 4/2 heads with
key_length 16 != dim/heads, q/k norms, rope neox base 1e6, tied output), llama
(pooling mean, causal, GQA, Q/K/V biases, rope normal base 1000), gemma-embedding
(pooling mean, non-causal, 2 layers with sliding_window_pattern 2: layer 0 a
symmetric window of 6 (|i - j| <= 3), layer 1 full; rope base 1e6 full / 10000
window; gemma norms stored with their +1; dense_2 [dim -> 2 dim] and dense_3
[2 dim -> dim] after pooling), llama-embed (llama-embed-nemotron's layout: llama
without biases, pooling mean, attention.causal false: bidirectional).

jina-bert-v2 (jina-embeddings-v2-base-en's layout: ALiBi instead of positions, no
position_embd; Q/K/V with biases; a GEGLU MLP: ffn_up [dim, 2 ffn] without bias, the
first half through GELU times the second, ffn_down with bias; pooling mean; 2 heads).
jina-bert-v2-qkn (the optional pieces llama.cpp loads: LayerNorms over all of q and of k
with biases, attn_norm_2 (a second residual LayerNorm), a separate ffn_gate with ffn_up
and its bias (gelu(gate) * up); dim 48 in 3 heads, so ALiBi's second slope series
applies; pooling cls).

jina-bert-v3 (jina-embeddings-v3's base model, the XLM-RoBERTa converter's layout for it:
fused attn_qkv with bias (mixer.Wqkv), neox rope (rope.freq_base 20000), no position
embeddings, a GELU MLP with biases, tokenizer.ggml.token_type_count 1 with one token
type row; pooling mean; 4 heads).

modern-bert (ModernBERT's layout: pre-LayerNorms without biases, none before layer 0's
attention, fused attn_qkv and attn_output without biases, a GEGLU MLP (ffn_up 2 ffn
wide), a final output_norm; neox rope with rope.freq_base 160000 on the global layers and
rope.freq_base_swa 10000 on the window layers; sliding_window 6 (symmetric: |i - j| <=
3) with sliding_window_pattern 3: layers 1 and 2 of 3 slide, layer 0 is global; pooling
mean). modern-bert-silu: hidden_activation "silu" (SwiGLU, as IBM Granite Embedding R2),
pooling cls.

Used for tests/data/embed/indep-*.gguf (README.md); F32 tensors, alignment 32.
"""
import random
import struct
import sys

NV = 2000          # vocabulary rows kept (ids 0..1999: [PAD], [unused*], [CLS]=101, [SEP]=102 ...)
DIM, LAYERS, HEADS, FFN, CTX = 32, 2, 2, 64, 64

# ---- GGUF reading (only what the vocabulary file needs) ----
T_U8, T_I8, T_U16, T_I16, T_U32, T_I32, T_F32, T_BOOL, T_STR, T_ARR, T_U64, T_I64, T_F64 = range(13)
FMT = {T_U8: "B", T_I8: "b", T_U16: "H", T_I16: "h", T_U32: "I", T_I32: "i", T_F32: "f", T_BOOL: "?",
       T_U64: "Q", T_I64: "q", T_F64: "d"}


def read_kvs(path):
    f = open(path, "rb").read()
    assert f[:4] == b"GGUF"
    o = 8
    _nt, nk = struct.unpack_from("<QQ", f, o)
    o += 16

    def rstr(o):
        n = struct.unpack_from("<Q", f, o)[0]
        return f[o + 8:o + 8 + n], o + 8 + n

    def rval(t, o):
        if t == T_STR:
            return rstr(o)
        if t == T_ARR:
            et, n = struct.unpack_from("<IQ", f, o)
            o += 12
            vals = []
            for _ in range(n):
                v, o = rval(et, o)
                vals.append(v)
            return (et, vals), o
        sz = struct.calcsize(FMT[t])
        return struct.unpack_from("<" + FMT[t], f, o)[0], o + sz

    kvs = []
    for _ in range(nk):
        k, o = rstr(o)
        t = struct.unpack_from("<I", f, o)[0]
        o += 4
        v, o = rval(t, o)
        kvs.append((k.decode(), t, v))
    return kvs


# ---- GGUF writing ----
def wstr(s):
    b = s if isinstance(s, bytes) else s.encode()
    return struct.pack("<Q", len(b)) + b


def wval(t, v):
    if t == T_STR:
        return wstr(v)
    if t == T_ARR:
        et, vals = v
        return struct.pack("<IQ", et, len(vals)) + b"".join(wval(et, x) for x in vals)
    return struct.pack("<" + FMT[t], v)


def main():
    global NV, DIM, FFN, CTX
    vocab, arch, out = sys.argv[1], sys.argv[2], sys.argv[3]
    if len(sys.argv) == 7:  # smaller files (the fuzzer's seeds)
        NV, DIM, CTX = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
        FFN = 2 * DIM
    if arch in ("qwen3", "llama", "gemma-embedding", "llama-embed"):
        return decoder(vocab, arch, out)
    if arch == "nomic-bert-moe":
        return nomic_moe(vocab, out)
    if arch in ("jina-bert-v2", "jina-bert-v2-qkn"):
        return jina(vocab, out, arch.endswith("qkn"))
    if arch == "jina-bert-v3":
        return jina3(vocab, out)
    if arch in ("modern-bert", "modern-bert-silu"):
        return modern(vocab, out, arch.endswith("silu"))
    if arch in ("t5encoder", "t5encoder-relu"):
        return t5encoder(vocab, out, arch.endswith("relu"))
    nomic = arch == "nomic-bert"
    rng = random.Random(20240601 + (1 if nomic else 0))
    kvs = [("general.architecture", T_STR, arch), ("general.type", T_STR, "model"),
           ("general.name", T_STR, "indep-" + arch)]
    a = arch + "."
    kvs += [(a + "block_count", T_U32, LAYERS), (a + "context_length", T_U32, CTX),
            (a + "embedding_length", T_U32, DIM), (a + "feed_forward_length", T_U32, FFN),
            (a + "attention.head_count", T_U32, HEADS), (a + "attention.layer_norm_epsilon", T_F32, 1e-12),
            ("general.file_type", T_U32, 0), (a + "attention.causal", T_BOOL, False),
            (a + "pooling_type", T_U32, 2 if not nomic else 1)]
    if nomic:
        kvs.append((a + "rope.freq_base", T_F32, 1000.0))
    for k, t, v in read_kvs(vocab):
        if not k.startswith("tokenizer."):
            continue
        if t == T_ARR and len(v[1]) > NV:
            v = (v[0], v[1][:NV])
        kvs.append((k, t, v))

    def gauss(n, std, mean=0.0):
        return [rng.gauss(mean, std) for _ in range(n)]

    tensors = []  # (name, dims, values)

    def add(name, dims, std, mean=0.0):
        n = 1
        for d in dims:
            n *= d
        tensors.append((name, dims, gauss(n, std, mean)))

    add("token_embd.weight", [DIM, NV], 1.0)
    if not nomic:
        add("position_embd.weight", [DIM, CTX], 0.5)
    add("token_types.weight", [DIM, 2], 0.5)
    add("token_embd_norm.weight", [DIM], 0.1, 1.0)
    add("token_embd_norm.bias", [DIM], 0.1)
    w = DIM ** -0.5
    for i in range(LAYERS):
        b = "blk.%d." % i
        if nomic:
            add(b + "attn_qkv.weight", [DIM, 3 * DIM], w)
        else:
            for x in ("q", "k", "v"):
                add(b + "attn_%s.weight" % x, [DIM, DIM], w)
                add(b + "attn_%s.bias" % x, [DIM], 0.1)
        add(b + "attn_output.weight", [DIM, DIM], w)
        if not nomic:
            add(b + "attn_output.bias", [DIM], 0.1)
        add(b + "attn_output_norm.weight", [DIM], 0.1, 1.0)
        add(b + "attn_output_norm.bias", [DIM], 0.1)
        if nomic:
            add(b + "ffn_gate.weight", [DIM, FFN], w)
        add(b + "ffn_up.weight", [DIM, FFN], w)
        if not nomic:
            add(b + "ffn_up.bias", [FFN], 0.1)
        add(b + "ffn_down.weight", [FFN, DIM], FFN ** -0.5)
        if not nomic:
            add(b + "ffn_down.bias", [DIM], 0.1)
        add(b + "layer_output_norm.weight", [DIM], 0.1, 1.0)
        add(b + "layer_output_norm.bias", [DIM], 0.1)

    write(out, kvs, tensors)


def vocab_kvs(vocab):
    kvs = []
    for k, t, v in read_kvs(vocab):
        if not k.startswith("tokenizer."):
            continue
        if t == T_ARR and len(v[1]) > NV:
            v = (v[0], v[1][:NV])
        kvs.append((k, t, v))
    return kvs


def jina(vocab, out, qkn):
    arch = "jina-bert-v2"
    dim, heads = (DIM * 3 // 2, 3) if qkn else (DIM, HEADS)
    rng = random.Random(20261207 + (1 if qkn else 0))
    a = arch + "."
    kvs = [("general.architecture", T_STR, arch), ("general.type", T_STR, "model"),
           ("general.name", T_STR, "indep-" + arch),
           (a + "block_count", T_U32, LAYERS), (a + "context_length", T_U32, CTX),
           (a + "embedding_length", T_U32, dim), (a + "feed_forward_length", T_U32, FFN),
           (a + "attention.head_count", T_U32, heads), (a + "attention.layer_norm_epsilon", T_F32, 1e-12),
           ("general.file_type", T_U32, 0), (a + "attention.causal", T_BOOL, False),
           (a + "pooling_type", T_U32, 2 if qkn else 1)] + vocab_kvs(vocab)
    tensors = []

    def add(name, dims, std, mean=0.0):
        n = 1
        for d in dims:
            n *= d
        tensors.append((name, dims, [rng.gauss(mean, std) for _ in range(n)]))

    add("token_embd.weight", [dim, NV], 1.0)
    add("token_types.weight", [dim, 2], 0.5)
    add("token_embd_norm.weight", [dim], 0.1, 1.0)
    add("token_embd_norm.bias", [dim], 0.1)
    w = dim ** -0.5
    for i in range(LAYERS):
        b = "blk.%d." % i
        for x in ("q", "k", "v"):
            add(b + "attn_%s.weight" % x, [dim, dim], w)
            add(b + "attn_%s.bias" % x, [dim], 0.1)
        if qkn:
            for x in ("q", "k"):
                add(b + "attn_%s_norm.weight" % x, [dim], 0.1, 1.0)
                add(b + "attn_%s_norm.bias" % x, [dim], 0.1)
        add(b + "attn_output.weight", [dim, dim], w)
        add(b + "attn_output.bias", [dim], 0.1)
        add(b + "attn_output_norm.weight", [dim], 0.1, 1.0)
        add(b + "attn_output_norm.bias", [dim], 0.1)
        if qkn:
            add(b + "attn_norm_2.weight", [dim], 0.1, 1.0)
            add(b + "attn_norm_2.bias", [dim], 0.1)
            add(b + "ffn_gate.weight", [dim, FFN], w)
            add(b + "ffn_up.weight", [dim, FFN], w)
            add(b + "ffn_up.bias", [FFN], 0.1)
        else:
            add(b + "ffn_up.weight", [dim, 2 * FFN], w)
        add(b + "ffn_down.weight", [FFN, dim], FFN ** -0.5)
        add(b + "ffn_down.bias", [dim], 0.1)
        add(b + "layer_output_norm.weight", [dim], 0.1, 1.0)
        add(b + "layer_output_norm.bias", [dim], 0.1)
    write(out, kvs, tensors)


def jina3(vocab, out):
    arch, heads = "jina-bert-v3", 4
    rng = random.Random(20261208)
    a = arch + "."
    kvs = [("general.architecture", T_STR, arch), ("general.type", T_STR, "model"),
           ("general.name", T_STR, "indep-" + arch),
           (a + "block_count", T_U32, LAYERS), (a + "context_length", T_U32, CTX),
           (a + "embedding_length", T_U32, DIM), (a + "feed_forward_length", T_U32, FFN),
           (a + "attention.head_count", T_U32, heads), (a + "attention.layer_norm_epsilon", T_F32, 1e-5),
           (a + "rope.freq_base", T_F32, 20000.0),
           ("general.file_type", T_U32, 0), (a + "attention.causal", T_BOOL, False),
           (a + "pooling_type", T_U32, 1)] + vocab_kvs(vocab)
    kvs = [kv for kv in kvs if kv[0] != "tokenizer.ggml.token_type_count"]
    kvs.append(("tokenizer.ggml.token_type_count", T_U32, 1))
    tensors = []

    def add(name, dims, std, mean=0.0):
        n = 1
        for d in dims:
            n *= d
        tensors.append((name, dims, [rng.gauss(mean, std) for _ in range(n)]))

    add("token_embd.weight", [DIM, NV], 1.0)
    add("token_types.weight", [DIM, 1], 0.5)
    add("token_embd_norm.weight", [DIM], 0.1, 1.0)
    add("token_embd_norm.bias", [DIM], 0.1)
    w = DIM ** -0.5
    for i in range(LAYERS):
        b = "blk.%d." % i
        add(b + "attn_qkv.weight", [DIM, 3 * DIM], w)
        add(b + "attn_qkv.bias", [3 * DIM], 0.1)
        add(b + "attn_output.weight", [DIM, DIM], w)
        add(b + "attn_output.bias", [DIM], 0.1)
        add(b + "attn_output_norm.weight", [DIM], 0.1, 1.0)
        add(b + "attn_output_norm.bias", [DIM], 0.1)
        add(b + "ffn_up.weight", [DIM, FFN], w)
        add(b + "ffn_up.bias", [FFN], 0.1)
        add(b + "ffn_down.weight", [FFN, DIM], FFN ** -0.5)
        add(b + "ffn_down.bias", [DIM], 0.1)
        add(b + "layer_output_norm.weight", [DIM], 0.1, 1.0)
        add(b + "layer_output_norm.bias", [DIM], 0.1)
    write(out, kvs, tensors)


def modern(vocab, out, silu):
    arch, heads, nl = "modern-bert", 4, 3
    rng = random.Random(20261209 + (1 if silu else 0))
    a = arch + "."
    kvs = [("general.architecture", T_STR, arch), ("general.type", T_STR, "model"),
           ("general.name", T_STR, "indep-" + arch),
           (a + "block_count", T_U32, nl), (a + "context_length", T_U32, CTX),
           (a + "embedding_length", T_U32, DIM), (a + "feed_forward_length", T_U32, FFN),
           (a + "attention.head_count", T_U32, heads), (a + "attention.layer_norm_epsilon", T_F32, 1e-5),
           (a + "rope.freq_base", T_F32, 160000.0), (a + "rope.freq_base_swa", T_F32, 10000.0),
           (a + "attention.sliding_window", T_U32, 6), (a + "attention.sliding_window_pattern", T_U32, 3),
           (a + "rope.scaling.type", T_STR, "none"),
           ("general.file_type", T_U32, 0), (a + "attention.causal", T_BOOL, False),
           (a + "pooling_type", T_U32, 2 if silu else 1)] + vocab_kvs(vocab)
    if silu:
        kvs.append((a + "hidden_activation", T_STR, "silu"))
    tensors = []

    def add(name, dims, std, mean=0.0):
        n = 1
        for d in dims:
            n *= d
        tensors.append((name, dims, [rng.gauss(mean, std) for _ in range(n)]))

    add("token_embd.weight", [DIM, NV], 1.0)
    add("token_embd_norm.weight", [DIM], 0.1, 1.0)
    w = DIM ** -0.5
    for i in range(nl):
        b = "blk.%d." % i
        if i:
            add(b + "attn_norm.weight", [DIM], 0.1, 1.0)
        add(b + "attn_qkv.weight", [DIM, 3 * DIM], w)
        add(b + "attn_output.weight", [DIM, DIM], w)
        add(b + "ffn_norm.weight", [DIM], 0.1, 1.0)
        add(b + "ffn_up.weight", [DIM, 2 * FFN], w)
        add(b + "ffn_down.weight", [FFN, DIM], FFN ** -0.5)
    add("output_norm.weight", [DIM], 0.1, 1.0)
    write(out, kvs, tensors)


def nomic_moe(vocab, out):
    arch, NL, NE, NU = "nomic-bert-moe", 4, 4, 2
    rng = random.Random(20261210)
    a = arch + "."
    kvs = [("general.architecture", T_STR, arch), ("general.type", T_STR, "model"),
           ("general.name", T_STR, "indep-" + arch)]
    kvs += [(a + "block_count", T_U32, NL), (a + "context_length", T_U32, CTX),
            (a + "embedding_length", T_U32, DIM), (a + "feed_forward_length", T_U32, FFN),
            (a + "attention.head_count", T_U32, HEADS), (a + "attention.layer_norm_epsilon", T_F32, 1e-5),
            ("general.file_type", T_U32, 0), (a + "attention.causal", T_BOOL, False),
            (a + "pooling_type", T_U32, 1), (a + "rope.freq_base", T_F32, 10000.0),
            (a + "expert_count", T_U32, NE), (a + "moe_every_n_layers", T_U32, 2),
            (a + "expert_used_count", T_U32, NU)]
    kvs += vocab_kvs(vocab)
    tensors = []

    def add(name, dims, std, mean=0.0):
        n = 1
        for d in dims:
            n *= d
        tensors.append((name, dims, [rng.gauss(mean, std) for _ in range(n)]))

    add("token_embd.weight", [DIM, NV], 1.0)
    add("token_types.weight", [DIM, 2], 0.5)
    add("token_embd_norm.weight", [DIM], 0.1, 1.0)
    add("token_embd_norm.bias", [DIM], 0.1)
    w = DIM ** -0.5
    for i in range(NL):
        b = "blk.%d." % i
        add(b + "attn_qkv.weight", [DIM, 3 * DIM], w)
        add(b + "attn_qkv.bias", [3 * DIM], 0.1)
        add(b + "attn_output.weight", [DIM, DIM], w)
        add(b + "attn_output.bias", [DIM], 0.1)
        add(b + "attn_output_norm.weight", [DIM], 0.1, 1.0)
        add(b + "attn_output_norm.bias", [DIM], 0.1)
        if i % 2 == 1:
            add(b + "ffn_gate_inp.weight", [DIM, NE], w)
            add(b + "ffn_up_exps.weight", [DIM, FFN, NE], w)
            add(b + "ffn_down_exps.weight", [FFN, DIM, NE], FFN ** -0.5)
        else:
            add(b + "ffn_up.weight", [DIM, FFN], w)
            add(b + "ffn_up.bias", [FFN], 0.1)
            add(b + "ffn_down.weight", [FFN, DIM], FFN ** -0.5)
            add(b + "ffn_down.bias", [DIM], 0.1)
        add(b + "layer_output_norm.weight", [DIM], 0.1, 1.0)
        add(b + "layer_output_norm.bias", [DIM], 0.1)
    write(out, kvs, tensors)


def decoder(vocab, arch, out):
    """Decoder-style embedding models (qwen3 / llama / gemma-embedding)."""
    gemma = arch == "gemma-embedding"
    rng = random.Random({"qwen3": 20261207, "llama": 20261208, "gemma-embedding": 20261209,
                         "llama-embed": 20261210}[arch])
    lemb = arch == "llama-embed"  # llama-embed-nemotron: llama without biases, bidirectional
    heads, kv_heads = 4, 2
    hd = 16 if arch not in ("llama", "llama-embed") else DIM // heads
    a = arch + "."
    kvs = [("general.architecture", T_STR, arch), ("general.type", T_STR, "model"),
           ("general.name", T_STR, "indep-" + arch)]
    kvs += [(a + "block_count", T_U32, LAYERS), (a + "context_length", T_U32, CTX),
            (a + "embedding_length", T_U32, DIM), (a + "feed_forward_length", T_U32, FFN),
            (a + "attention.head_count", T_U32, heads), (a + "attention.head_count_kv", T_U32, kv_heads),
            (a + "attention.layer_norm_rms_epsilon", T_F32, 1e-6), ("general.file_type", T_U32, 0)]
    if arch not in ("llama", "llama-embed"):
        kvs += [(a + "attention.key_length", T_U32, hd), (a + "attention.value_length", T_U32, hd),
                (a + "rope.freq_base", T_F32, 1000000.0)]
    else:
        kvs += [(a + "rope.freq_base", T_F32, 1000.0), (a + "rope.dimension_count", T_U32, hd)]
    if lemb:
        kvs.append((a + "attention.causal", T_BOOL, False))
    kvs.append((a + "pooling_type", T_U32, 3 if arch == "qwen3" else 1))
    if gemma:
        kvs += [(a + "attention.sliding_window", T_U32, 6), (a + "attention.sliding_window_pattern", T_U32, 2),
                (a + "dense_2_feat_in", T_U32, DIM), (a + "dense_2_feat_out", T_U32, 2 * DIM),
                (a + "dense_3_feat_in", T_U32, 2 * DIM), (a + "dense_3_feat_out", T_U32, DIM)]
    kvs += vocab_kvs(vocab)
    tensors = []

    def add(name, dims, std, mean=0.0):
        n = 1
        for d in dims:
            n *= d
        tensors.append((name, dims, [rng.gauss(mean, std) for _ in range(n)]))

    add("token_embd.weight", [DIM, NV], 1.0 if not gemma else 0.3)
    w = DIM ** -0.5
    for i in range(LAYERS):
        b = "blk.%d." % i
        add(b + "attn_norm.weight", [DIM], 0.1, 1.0)
        add(b + "attn_q.weight", [DIM, heads * hd], w)
        add(b + "attn_k.weight", [DIM, kv_heads * hd], w)
        add(b + "attn_v.weight", [DIM, kv_heads * hd], w)
        if arch == "llama":
            add(b + "attn_q.bias", [heads * hd], 0.1)
            add(b + "attn_k.bias", [kv_heads * hd], 0.1)
            add(b + "attn_v.bias", [kv_heads * hd], 0.1)
        add(b + "attn_output.weight", [heads * hd, DIM], (heads * hd) ** -0.5)
        if arch not in ("llama", "llama-embed"):
            add(b + "attn_q_norm.weight", [hd], 0.1, 1.0)
            add(b + "attn_k_norm.weight", [hd], 0.1, 1.0)
        if gemma:
            add(b + "post_attention_norm.weight", [DIM], 0.1, 1.0)
        add(b + "ffn_norm.weight", [DIM], 0.1, 1.0)
        add(b + "ffn_gate.weight", [DIM, FFN], w)
        add(b + "ffn_up.weight", [DIM, FFN], w)
        add(b + "ffn_down.weight", [FFN, DIM], FFN ** -0.5)
        if gemma:
            add(b + "post_ffw_norm.weight", [DIM], 0.1, 1.0)
    add("output_norm.weight", [DIM], 0.1, 1.0)
    if gemma:
        add("dense_2.weight", [DIM, 2 * DIM], w)
        add("dense_3.weight", [2 * DIM, DIM], (2 * DIM) ** -0.5)
    write(out, kvs, tensors)


def t5encoder(vocab, out, relu):
    """t5encoder (llama.cpp's T5 encoder stack, as its converter writes T5EncoderModel /
    the encoder of T5ForConditionalGeneration): enc.* names, RMS norms, no biases, a
    relative position bias [heads, buckets] on layer 0 (the -relu file: on layer 2 too,
    which then uses its own), flan-T5's gated GELU MLP (ffn_gate; the -relu file: T5's
    ReLU MLP, no gate), 3 layers, 2 heads of 24 (key_length != dim / heads), 32 buckets
    (-relu: 8, so distances past 2 take the logarithmic buckets), pooling mean (-relu:
    none written: llama.cpp's default, none)."""
    arch, heads, hd, nl = "t5encoder", 2, 24, 3
    nb = 8 if relu else 32
    rng = random.Random(20261211 + (1 if relu else 0))
    a = arch + "."
    kvs = [("general.architecture", T_STR, arch), ("general.type", T_STR, "model"),
           ("general.name", T_STR, "indep-" + arch + ("-relu" if relu else "")),
           (a + "block_count", T_U32, nl), (a + "context_length", T_U32, CTX),
           (a + "embedding_length", T_U32, DIM), (a + "feed_forward_length", T_U32, FFN),
           (a + "attention.head_count", T_U32, heads), (a + "attention.key_length", T_U32, hd),
           (a + "attention.value_length", T_U32, hd), (a + "attention.layer_norm_rms_epsilon", T_F32, 1e-6),
           (a + "attention.relative_buckets_count", T_U32, nb), ("general.file_type", T_U32, 0)]
    if not relu:
        kvs.append((a + "pooling_type", T_U32, 1))
    kvs += vocab_kvs(vocab)
    tensors = []

    def add(name, dims, std, mean=0.0):
        n = 1
        for d in dims:
            n *= d
        tensors.append((name, dims, [rng.gauss(mean, std) for _ in range(n)]))

    add("token_embd.weight", [DIM, NV], 1.0)
    w = DIM ** -0.5
    for i in range(nl):
        b = "enc.blk.%d." % i
        add(b + "attn_norm.weight", [DIM], 0.1, 1.0)
        if i == 0 or (relu and i == 2):
            add(b + "attn_rel_b.weight", [heads, nb], 0.5)
        add(b + "attn_q.weight", [DIM, heads * hd], w)
        add(b + "attn_k.weight", [DIM, heads * hd], w)
        add(b + "attn_v.weight", [DIM, heads * hd], w)
        add(b + "attn_o.weight", [heads * hd, DIM], (heads * hd) ** -0.5)
        add(b + "ffn_norm.weight", [DIM], 0.1, 1.0)
        if not relu:
            add(b + "ffn_gate.weight", [DIM, FFN], w)
        add(b + "ffn_up.weight", [DIM, FFN], w)
        add(b + "ffn_down.weight", [FFN, DIM], FFN ** -0.5)
    add("enc.output_norm.weight", [DIM], 0.1, 1.0)
    write(out, kvs, tensors)


def write(out, kvs, tensors):
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for k, t, v in kvs:
        head += wstr(k) + struct.pack("<I", t) + wval(t, v)
    off = 0
    data = b""
    for name, dims, vals in tensors:
        head += wstr(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        head += struct.pack("<IQ", 0, off)
        blob = struct.pack("<%df" % len(vals), *vals)
        pad = (-len(blob)) % 32
        data += blob + b"\0" * pad
        off += len(blob) + pad
    head += b"\0" * ((-len(head)) % 32)
    with open(out, "wb") as fo:
        fo.write(head + data)


if __name__ == "__main__":
    main()
