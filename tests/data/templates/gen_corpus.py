#!/usr/bin/env python3
"""Writes corpus_expected.json: for every template in shared/ and corpus/ and every
case of shared/conversations.json and conversations_extra.json, what Python's
jinja2 renders in transformers' environment (bos_token "<s>", eos_token "</s>",
clock 2024-07-26 12:00:00): {"len": bytes, "fnv64": FNV-1a 64 of the UTF-8 text}
or {"err": "ExceptionType: message"}. Hashes keep the file small; to see a text,
render it with jinja_env.render_case.

Usage: python3 tests/data/templates/gen_corpus.py > tests/data/templates/corpus_expected.json"""
import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
from jinja_env import render_case  # noqa: E402


def fnv64(b):
    h = 0xcbf29ce484222325
    for x in b:
        h = ((h ^ x) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def main():
    convs = []
    for f in ("shared/conversations.json", "conversations_extra.json"):
        convs += json.load(open(os.path.join(here, f), encoding="utf-8"))
    out = {}
    for d in ("shared", "corpus"):
        for f in sorted(os.listdir(os.path.join(here, d))):
            if not f.endswith(".jinja"):
                continue
            src = open(os.path.join(here, d, f), encoding="utf-8").read()
            res = {}
            for c in convs:
                kind, val = render_case(src, c)
                if kind == "out":
                    b = val.encode("utf-8")
                    res[c["name"]] = {"len": len(b), "fnv64": fnv64(b)}
                else:
                    res[c["name"]] = {"err": val}
            out[d + "/" + f] = res
    json.dump(out, sys.stdout, ensure_ascii=False, indent=0, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
