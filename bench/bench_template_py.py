#!/usr/bin/env python3
"""Times Python jinja2 (transformers' environment, tests/data/templates/jinja_env.py)
rendering the same synthetic conversation as `loom bench template` (same filler
text generator), for the side-by-side numbers in bench/README.md.
Usage (repository root): python3 bench/bench_template_py.py [TEMPLATE] [--messages N] [--bytes B] [-r RUNS]"""
import argparse
import statistics
import sys
import time

sys.path.insert(0, "tests/data/templates")
from jinja_env import make_env  # noqa: E402

WORDS = ["the", "model", "answers", "quickly", "with", "a", "short", "and", "clear", "reply", "about", "weather",
         "in", "Paris", "today,", "then", "asks", "again."]


def filler(nbytes, seed):
    out, k = [], 0
    while k + 10 < nbytes:
        seed = (seed * 1103515245 + 12345) & 0xFFFFFFFF
        w = WORDS[(seed >> 16) % len(WORDS)] + " "
        out.append(w)
        k += len(w)
    return "".join(out)[:-1] if out else ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("template", nargs="?", default="tests/data/templates/shared/meta-llama-Llama-3.1-8B-Instruct.jinja")
    ap.add_argument("--messages", type=int, default=100)
    ap.add_argument("--bytes", type=int, default=200)
    ap.add_argument("-r", "--runs", type=int, default=200)
    a = ap.parse_args()
    msgs = [{"role": "system" if i == 0 else ("user" if i % 2 else "assistant"), "content": filler(a.bytes, i + 1)}
            for i in range(a.messages)]
    t0 = time.perf_counter()
    tpl = make_env().from_string(open(a.template, encoding="utf-8").read())
    compile_ms = (time.perf_counter() - t0) * 1e3
    times = []
    for i in range(a.runs + 5):
        t0 = time.perf_counter()
        out = tpl.render(messages=msgs, add_generation_prompt=True, bos_token="<|begin_of_text|>", eos_token="<|eot_id|>")
        if i >= 5:
            times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    print("python jinja2 %s: %d messages -> %d bytes; compile %.3f ms; render median %.3f ms p10 %.3f p90 %.3f min %.3f"
          % (a.template, a.messages, len(out.encode()), compile_ms, statistics.median(times), times[len(times) // 10],
             times[len(times) * 9 // 10], times[0]))


if __name__ == "__main__":
    main()
