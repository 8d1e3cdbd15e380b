#!/usr/bin/env python3
"""Tokenizer benchmark, Loom against llama.cpp, side by side (bench/README.md).

For every vocabulary: the 1 MB mixed text of bench/gen_tok_text.py is tokenized
(one prompt, no special-token parsing) by
  - in-process: `loom bench tokenizer` and bench/ref/llama_tok_bench.cpp (built
    here against the llama.cpp build tree), vocabulary loaded once, tokenize
    timed alone;
  - end to end: `loom tokenize V --file F --no-special` and llama.cpp's
    `llama-tokenize -m V -f F --ids --no-parse-special --no-escape` (process
    start, vocabulary load, tokenize, printing the ids).
Runs are interleaved (loom, llama, loom, llama, ...) ROUNDS times and medians
reported, since the machine is shared. The ids of both are compared (hash).

usage: python3 bench/tokenizer_vs_llama.py [--llama DIR] [--rounds N] [--build build] [VOCAB ...]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
VOCABS = ["llama-spm", "phi-3", "gpt-2", "llama-bpe", "qwen2", "qwen35", "bert-bge", "command-r", "deepseek-llm",
          "deepseek-coder", "falcon", "gemma-4", "gpt-neox", "mpt", "starcoder", "refact", "nomic-bert-moe", "baichuan"]


def vocab_path(build, name, tmp, llama_models):
    for d in (os.path.join(ROOT, "tests/data/vocab"), os.path.join(build, "vocab"), llama_models):
        p = os.path.join(d, "ggml-vocab-%s.gguf" % name)
        if os.path.exists(p):
            return p
    return None


def run_json(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def run_wall(cmd):
    t = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    dt = time.perf_counter() - t
    if r.returncode != 0:
        raise RuntimeError("%s failed" % cmd)
    ids = r.stdout.decode().replace("[", " ").replace("]", " ").replace(",", " ").split()
    return dt, ids


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--llama", default=os.environ.get("LLAMA_DIR", "/work/llama/src"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--no-e2e", action="store_true")
    ap.add_argument("vocabs", nargs="*")
    a = ap.parse_args()
    loom = os.path.join(a.build, "bin", "loom")
    lt = os.path.join(a.llama, "build", "bin", "llama-tokenize")
    tmp = tempfile.mkdtemp(prefix="loom-tokbench-")
    bench = os.path.join(tmp, "llama_tok_bench")
    lb = os.path.join(a.llama, "build")
    subprocess.run(["g++", "-O2", "-std=c++17", "-I" + os.path.join(a.llama, "include"),
                    "-I" + os.path.join(a.llama, "ggml/include"), os.path.join(ROOT, "bench/ref/llama_tok_bench.cpp"),
                    "-o", bench, os.path.join(lb, "src/libllama.a"), os.path.join(lb, "ggml/src/libggml.a"),
                    os.path.join(lb, "ggml/src/libggml-cpu.a"), os.path.join(lb, "ggml/src/libggml-base.a"),
                    "-lpthread", "-fopenmp", "-ldl"], check=True)
    text = os.path.join(tmp, "text.txt")
    with open(text, "wb") as f:
        f.write(subprocess.run([sys.executable, os.path.join(ROOT, "bench/gen_tok_text.py")], capture_output=True,
                               check=True).stdout)
    rows = []
    for name in a.vocabs or VOCABS:
        v = vocab_path(a.build, name, tmp, os.path.join(a.llama, "models"))
        if not v:
            print("%s: vocabulary not found, skipped" % name, file=sys.stderr)
            continue
        lo, ll, le, lle = [], [], [], []
        same = True
        for _ in range(a.rounds):
            jl = run_json([loom, "bench", "tokenizer", v, "--file", text, "-r", "1", "--json"])
            jr = run_json([bench, v, text, "1"])
            lo.append(jl["tokenize_s"])
            ll.append(jr["tokenize_s"])
            same = same and jl["ids_hash"] == jr["ids_hash"] and jl["tokens"] == jr["tokens"]
            if not a.no_e2e:
                d1, ids1 = run_wall([loom, "tokenize", v, "--file", text, "--no-special", "--no-bos"])
                d2, ids2 = run_wall([lt, "-m", v, "-f", text, "--ids", "--log-disable", "--no-parse-special",
                                     "--no-escape", "--no-bos"])
                le.append(d1)
                lle.append(d2)
                same = same and ids1 == ids2
        n = jl["tokens"]
        r = {"vocab": name, "tokens": n, "loom_s": statistics.median(lo), "llama_s": statistics.median(ll),
             "same_ids": same}
        if le:
            r["loom_e2e_s"] = statistics.median(le)
            r["llama_e2e_s"] = statistics.median(lle)
        rows.append(r)
        print(json.dumps(r), file=sys.stderr)
    print("| vocabulary | tokens | Loom tok/s | llama.cpp tok/s | Loom / llama.cpp | end to end Loom s | llama-tokenize s | same ids |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        print("| %s | %d | %.2fM | %.2fM | %.1fx | %s | %s | %s |" % (
            r["vocab"], r["tokens"], r["tokens"] / r["loom_s"] / 1e6, r["tokens"] / r["llama_s"] / 1e6,
            r["llama_s"] / r["loom_s"], "%.2f" % r["loom_e2e_s"] if "loom_e2e_s" in r else "-",
            "%.2f" % r["llama_e2e_s"] if "llama_e2e_s" in r else "-", "yes" if r["same_ids"] else "NO"))


if __name__ == "__main__":
    main()
