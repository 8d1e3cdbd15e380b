#!/usr/bin/env python3
"""Writes three small synthetic vocabularies for the tokenizer types no test
vocabulary of llama.cpp covers: ggml-vocab-synth-rwkv.gguf (RWKV "world"
style: the 256 single bytes plus words, escaped as the converter does),
ggml-vocab-synth-plamo2.gguf (PLaMo-2: control tokens, the 256 <0xNN> byte
tokens, scored pieces that overlap so that the best path matters) and
ggml-vocab-synth-hybriddna.gguf (HybriDNA: a byte-level BPE vocabulary with a
few merges, <dna> </dna> <oov>, and the 6-mers over A, C, G with the U+E000
marker; T-containing k-mers are missing on purpose, they become <oov>).
Usage: PYTHONPATH=<llama.cpp>/gguf-py python3 make_synth_vocabs.py OUTDIR"""
import sys
from gguf import GGUFWriter

WORDS = ["the", " the", "The", "th", "he", "e", " ", "  ", "   ", "\n", "\n\n", "\t", "ing", " and", "and", "Hello",
         " world", "world", "wor", "ld", "ab", "abc", "abcd", "bc", "bcd", "cd", "a b", "1", "12", "123", "2023",
         "\u4f60\u597d", "\u4f60", "\u597d\u7684", "\u3053\u3093\u306b\u3061\u306f", "caf\u00e9", "\u00e9t\u00e9",
         "\U0001f600", "<|endoftext|>", "'s", "n't", " don", "..."]


def rwkv_escape(b: bytes) -> str:
    try:
        s = b.decode("utf-8")
        if all(0x20 <= ord(c) < 0x7F or ord(c) >= 0xA0 for c in s):
            return s.replace("\\", "\\\\")
    except UnicodeDecodeError:
        pass
    out = []
    for x in b:
        if x == 0x5C:
            out.append("\\\\")
        elif x == 0x09:
            out.append("\\t")
        elif x == 0x0A:
            out.append("\\n")
        elif x == 0x0D:
            out.append("\\r")
        elif 0x20 <= x < 0x7F:
            out.append(chr(x))
        else:
            out.append("\\x%02x" % x)
    return "".join(out)


def write(path, model, toks, types, scores=None, ids=None):
    w = GGUFWriter(path, "gpt2")
    w.add_name("synthetic " + model)
    w.add_string("tokenizer.ggml.model", model)
    w.add_array("tokenizer.ggml.tokens", toks)
    w.add_array("tokenizer.ggml.token_type", types)
    if scores is not None:
        w.add_array("tokenizer.ggml.scores", scores)
    for k, v in (ids or {}).items():
        w.add_uint32("tokenizer.ggml.%s_token_id" % k, v)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    out = sys.argv[1]
    toks = [rwkv_escape(bytes([b])) for b in range(256)] + [rwkv_escape(w.encode()) for w in WORDS if len(w.encode()) > 1]
    toks.append("\\xe4\\xbd")  # a partial UTF-8 sequence, escaped
    write("%s/ggml-vocab-synth-rwkv.gguf" % out, "rwkv", toks, [1] * len(toks))

    toks = ["<|plamo:unk|>", "<|plamo:bos|>", "<|plamo:eos|>", "<|plamo:pad|>"]
    types = [2, 3, 3, 3]
    scores = [0.0] * 4
    for b in range(256):
        toks.append("<0x%02X>" % b)
        types.append(6)
        scores.append(0.0)
    for i, w in enumerate(WORDS):
        toks.append(w)
        types.append(1)
        scores.append(-((i * 37) % 11) / 3.0 - 0.5 * len(w))
    write("%s/ggml-vocab-synth-plamo2.gguf" % out, "plamo2", toks, types, scores,
          {"bos": 1, "eos": 2, "unknown": 0, "padding": 3})
    hybriddna(out)


def gpt2_bytes():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


def hybriddna(out):
    enc = gpt2_bytes()
    toks = [enc[b] for b in range(256)]
    merges = []
    for a, b in [("h", "e"), ("l", "l"), ("he", "ll"), ("hell", "o"), ("\u0120", "w"), ("o", "r"), ("\u0120w", "or"),
                 ("\u0120wor", "l"), ("\u0120worl", "d"), ("A", "C"), ("G", "T"), ("AC", "GT"), ("d", "na")]:
        merges.append(a + " " + b)
        toks.append(a + b)
    toks.append("na")
    merges.insert(0, "n a")
    types = [1] * len(toks)
    for t, ty in (("<dna>", 1), ("</dna>", 1), ("<oov>", 3)):
        toks.append(t)
        types.append(ty)
    import itertools
    for k in itertools.product("ACG", repeat=6):
        toks.append("".join(k) + "\ue000")
        types.append(1)
    w = GGUFWriter("%s/ggml-vocab-synth-hybriddna.gguf" % out, "gpt2")
    w.add_name("synthetic hybriddna")
    w.add_string("tokenizer.ggml.model", "hybriddna")
    w.add_string("tokenizer.ggml.pre", "gpt-2")
    w.add_array("tokenizer.ggml.tokens", toks)
    w.add_array("tokenizer.ggml.token_type", types)
    w.add_array("tokenizer.ggml.merges", merges)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
