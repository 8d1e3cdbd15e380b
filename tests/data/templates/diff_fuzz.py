#!/usr/bin/env python3
"""Differential fuzzing of Loom's template engine against Python's jinja2 (a
developer tool, not a CI test: its cases are random). Each case is rendered by
jinja2 in transformers' chat-template environment (jinja_env.py) and by
`loom template`; a case fails when one side renders and the other raises, or both
render different text. Error messages are compared only with --messages.

Usage (from the repository root, after building; needs jinja2 3.1):
  python3 tests/data/templates/diff_fuzz.py [--mode stmt|value|conv|all] [--seed N]
          [--count N] [--loom build/bin/loom] [--messages] [--jobs N]

Modes:
  stmt   random statements and expressions (loops, macros, filters, tests,
         methods, slices, whitespace control) over a fixed context
  value  one filter / method / operator applied to random JSON values (unicode,
         control characters, big and odd floats, nesting)
  conv   the real templates of corpus/ and shared/ on random conversations
         (system / developer, list-of-parts content, tool calls with object or
         string arguments, tool results, reasoning_content, tools, kwargs)

Known, accepted differences (not reported): the address and function name in a
generator's repr, bound methods' repr, integers past 64 bits (Loom raises
OverflowError), generators that jinja2 never iterates (Loom's filters are eager,
so a filter that would fail lazily fails at once), pprint's line wrapping and
dict sorting, the wordwrap / urlize / random filters, str.encode.
Session 28's first run (stmt 12,500, value 12,000, conv 6,000 cases) found the
slice, truncate, casefold, istitle, expandtabs, isprintable, number-attribute,
Unicode-digit, '%d', xmlattr and format-spec differences now in features.json;
conv found none (text and raise_exception messages all equal).
"""
import argparse
import concurrent.futures as cf
import glob
import json
import os
import random
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from jinja_env import render_case, render_source  # noqa: E402

SKIP = re.compile(r"generator object|object at 0x|built-in method|wordwrap|urlize|random|encode\(|pprint|OverflowError|\*\* |"
                  r"integer overflow", re.I)

# ------------------------------------------------------------------ stmt mode
CTX = {"n": 7, "f": 2.5, "z": 0, "neg": -3, "s": "Hello World", "e": [], "u": "héllo wörld ß", "w": "  a b\tc \n",
       "csv": "a,b,,c", "none_v": None, "t": True, "fl": False, "l": [3, 1, 2], "lf": [1.5, -2, 3],
       "ls": ["b", "A", "c", "a"], "ln": [[1, 2], [3]], "d": {"b": 2, "a": 1, "c": {"x": [1, 2.5, None, True, "s"]}},
       "ed": {}, "users": [{"name": "bob", "age": 30, "role": "admin"}, {"name": "Alice", "age": 25, "role": "user"},
                           {"name": "carol", "age": 35, "role": "user", "x": None}],
       "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
                    {"role": "assistant", "content": None,
                     "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"a": 1}}}]},
                    {"role": "tool", "content": "42"}]}
NAMES = list(CTX) + ["undef", "x", "y", "ns", "loop"]
STRS = ["''", "'a'", "'Hello'", "' x '", "'a,b'", "'é'", "'ß'", "'世界'", "'l'", "'o'", "'\\n'", "'%s-%d'", "'{} {}'",
        "'abc'", "'A B'", "'1'", "'2.5'", "'-3'", "' 42 '", "'true'", "'<b>x</b> & y'"]
NUMS = ["0", "1", "2", "3", "-1", "7", "0.5", "2.0", "1e3", "-2.5", "10", "1.25", "100"]
ATTRS = ["a", "b", "c", "x", "name", "age", "role", "content", "upper", "items", "0", "1", "length", "real",
         "function", "arguments"]
METHODS = ["upper()", "lower()", "strip()", "lstrip()", "rstrip()", "split()", "split(',')", "split(' ', 1)",
           "startswith('H')", "endswith('d')", "replace('l', 'L')", "title()", "capitalize()", "find('o')",
           "count('l')", "strip('H')", "isdigit()", "isalpha()", "isspace()", "format(1, 'x')", "join(['1', '2'])",
           "splitlines()", "rsplit(',', 1)", "partition(' ')", "zfill(5)", "center(11)", "ljust(8)", "swapcase()",
           "casefold()", "index('o')", "rfind('l')", "expandtabs()", "removeprefix('He')", "isprintable()",
           "get('a')", "get('zz', 0)", "items()", "keys()", "values()", "copy()", "pop('a')", "update({})",
           "index(1)", "count(1)", "append(1)", "pop()", "sort()"]
FILTERS = ["upper", "lower", "title", "capitalize", "trim", "length", "count", "first", "last", "list", "join",
           "join(', ')", "join('|', attribute='name')", "default('x')", "default('x', true)", "d(5)", "int", "int(9)",
           "float", "string", "abs", "round", "round(1)", "round(0, 'floor')", "sort", "sort(reverse=true)",
           "sort(attribute='age')", "reverse", "unique", "min", "max", "max(attribute='age')", "sum",
           "sum(attribute='age')", "map(attribute='name')", "map('upper')", "select('odd')", "reject('even')",
           "selectattr('age', 'gt', 26)", "rejectattr('role', 'equalto', 'user')", "groupby('role')", "batch(2)",
           "slice(2)", "dictsort", "dictsort(by='value')", "items", "tojson", "tojson(indent=2)", "replace('a', 'b')",
           "truncate(5)", "truncate(9, true, '..', 0)", "wordcount", "center(9)", "indent(2)", "indent(2, true)",
           "e", "safe", "striptags", "urlencode", "xmlattr", "filesizeformat", "attr('name')", "format(1)",
           "int(0, 16)", "first|upper", "items|list", "title|replace(' ', '_')", "min(attribute='age')"]
TESTS = ["defined", "undefined", "none", "string", "number", "integer", "float", "mapping", "sequence", "iterable",
         "boolean", "true", "false", "odd", "even", "divisibleby(3)", "eq(3)", "ne(3)", "gt(2)", "lt(2)",
         "in([1, 2, 'a'])", "sameas(none)", "lower", "upper", "callable", "escaped", "filter", "test"]
BINOPS = ["+", "-", "*", "/", "//", "%", "~", "==", "!=", "<", ">", "<=", ">=", "in", "not in", "and", "or"]


class StmtGen:
    def __init__(self, r):
        self.r, self.loopvars = r, []

    def atom(self, d):
        r, k = self.r, self.r.random()
        if k < 0.30:
            return r.choice(NAMES + self.loopvars * 3)
        if k < 0.45:
            return r.choice(STRS)
        if k < 0.60:
            return r.choice(NUMS)
        if k < 0.66:
            return r.choice(["none", "None", "true", "false", "True", "False"])
        if k < 0.76 and d > 0:
            return "[" + ", ".join(self.expr(d - 1) for _ in range(r.randint(0, 3))) + "]"
        if k < 0.82 and d > 0:
            return "{" + ", ".join("%s: %s" % (r.choice(STRS[:6] + ["1"]), self.expr(d - 1))
                                   for _ in range(r.randint(0, 2))) + "}"
        if k < 0.90 and d > 0:
            return "(" + self.expr(d - 1) + ")"
        return r.choice(NAMES)

    def postfix(self, d):
        r = self.r
        e = self.atom(d)
        for _ in range(r.choice([0, 0, 0, 1, 1, 2])):
            k = r.random()
            if k < 0.25:
                e += "." + r.choice(ATTRS)
            elif k < 0.45:
                e += "[" + (self.expr(d - 1) if d > 0 else r.choice(NUMS[:5] + STRS[:4])) + "]"
            elif k < 0.6:
                p = [r.choice(["", "1", "-1", "2", "0", "-2", "10"]) for _ in range(3)]
                e += "[" + p[0] + ":" + p[1] + (":" + p[2] if r.random() < 0.4 else "") + "]"
            else:
                e += "." + r.choice(METHODS)
        k = r.random()
        if k < 0.35:
            for _ in range(r.randint(1, 2)):
                e += "|" + r.choice(FILTERS)
        elif k < 0.45:
            e = "%s is %s%s" % (e, r.choice(["", "not "]), r.choice(TESTS))
        return e

    def expr(self, d=2):
        r, k = self.r, self.r.random()
        if k < 0.55 or d <= 0:
            return self.postfix(max(d, 0))
        if k < 0.85:
            return "%s %s %s" % (self.postfix(d - 1), r.choice(BINOPS), self.postfix(d - 1))
        if k < 0.92:
            return "%s if %s else %s" % (self.postfix(d - 1), self.expr(d - 1), self.postfix(d - 1))
        return "not " + self.postfix(d - 1)

    def tag(self, body):
        r = self.r
        return "{%" + r.choice(["", "", "", "-", "+"]) + " " + body + " " + r.choice(["", "", "-"]) + "%}"

    def text(self):
        return self.r.choice(["", "a", " ", "\n", "  \n", "x\n  ", "\n\n", " b ", "|", "\t"])

    def block(self, d):
        r, out = self.r, []
        for _ in range(r.randint(1, 4)):
            k = r.random()
            out.append(self.text())
            if k < 0.40 or d <= 0:
                out.append("{{" + r.choice(["", "-"]) + " " + self.expr(2) + " " + r.choice(["", "-"]) + "}}")
            elif k < 0.55:
                out.append(self.tag("if " + self.expr(2)) + self.block(d - 1))
                if r.random() < 0.3:
                    out.append(self.tag("elif " + self.expr(1)) + self.block(d - 1))
                if r.random() < 0.4:
                    out.append(self.tag("else") + self.block(d - 1))
                out.append(self.tag("endif"))
            elif k < 0.70:
                v = r.choice(["x", "y", "item", "m"])
                it = r.choice(["l", "ls", "users", "messages", "d", "d.items()", "s", "range(3)", "e", "lf", "ln",
                               "d|dictsort", "users|groupby('role')", self.expr(1)])
                lv = [v, "loop.index", "loop.index0", "loop.first", "loop.last", "loop.length", "loop.revindex",
                      "loop.previtem", "loop.nextitem", "loop.cycle('a', 'b')", "loop.changed(%s)" % v]
                self.loopvars += lv
                body = self.block(d - 1)
                if r.random() < 0.15:
                    body += self.tag("if loop.index > 1") + self.tag(r.choice(["break", "continue"])) + self.tag("endif")
                del self.loopvars[-len(lv):]
                hdr = "for %s in %s" % (v, it) + (" if " + self.expr(1) if r.random() < 0.2 else "")
                out.append(self.tag(hdr) + body)
                if r.random() < 0.2:
                    out.append(self.tag("else") + self.block(d - 1))
                out.append(self.tag("endfor"))
            elif k < 0.78:
                out.append(self.tag("set %s = %s" % (r.choice(["x", "y", "a", "n", "s"]), self.expr(2))))
            elif k < 0.82:
                out.append(self.tag("set ns = namespace(c=0)") + self.tag("for i in l") + self.tag("set ns.c = ns.c + i")
                           + self.tag("endfor") + "{{ ns.c }}")
            elif k < 0.86:
                out.append(self.tag("set y") + self.block(d - 1) + self.tag("endset") + "[{{ y }}]")
            elif k < 0.92:
                out.append(self.tag("macro mm(a, b=%s)" % r.choice(NUMS[:4] + STRS[:3])) + "<{{ a }}|{{ b }}>"
                           + ("{{ caller() }}" if r.random() < 0.5 else "") + self.tag("endmacro"))
                if r.random() < 0.5:
                    out.append("{{ mm(%s) }}" % self.expr(1))
                else:
                    out.append(self.tag("call mm(%s)" % self.expr(1)) + self.block(d - 1) + self.tag("endcall"))
            else:
                out.append(self.tag("filter " + r.choice(["upper", "trim", "replace('a', 'b')", "indent(2)", "title"]))
                           + self.block(d - 1) + self.tag("endfilter"))
            out.append(self.text())
        return "".join(out)


def gen_stmt(r):
    g = StmtGen(r)
    src = g.block(2) if r.random() < 0.7 else "{{ " + g.expr(3) + " }}"
    return src, {"messages": CTX["messages"], "kwargs": {k: v for k, v in CTX.items() if k != "messages"}}


# ------------------------------------------------------------------ value mode
CH = ["a", "B", "z", " ", "\n", "\t", "'", '"', "\\", "é", "ß", "İ", "ǅ", "ﬁ", "世", "😀", "\x01", "\x7f", "\u2028",
      "\u00a0", "<", ">", "&", "%", "{", "}", "-", "_", ".", "0", "9", "/", "=", "ŉ", "ΐ", "Σ", "ς", "ẞ", "\r", "\x0b",
      "\x1c", "\u3000", "\u200b", "Ⅻ", "²", "٣"]
FLOATS = [0.0, -0.0, 0.1, 1.5, -2.25, 1e16, 1e15, 123456789.125, 1e-5, 1e-4, 0.0001234, 1e22, 1.7976931348623157e308,
          5e-324, 1 / 3, 100.0, -1e-7, 1e21, 9.999999999999999e20]
INTS = [0, 1, -1, 7, 42, 2 ** 31, -2 ** 31, 2 ** 53, 2 ** 63 - 1, -2 ** 63, 10 ** 15, 255, 3]
VEXPRS = ["v", "v|tojson", "v|tojson(indent=2)", "v|tojson(sort_keys=true)", "v|string", "v|length", "v|list",
          "v|first", "v|last", "v|sort", "v|unique|list", "v|min", "v|max", "v|sum", "v|join(',')",
          "v|map('string')|join('|')", "v|reverse|list", "v|dictsort", "v|items|list", "v|int", "v|float", "v|round(2)",
          "v|abs", "v|trim", "v|upper", "v|lower", "v|title", "v|capitalize", "v|replace('a', 'X')", "v|center(20)",
          "v|wordcount", "v|urlencode", "v|escape", "v|striptags", "v|indent(2)", "v|truncate(6)", "v|count",
          "v == w", "v < w", "v in w", "v ~ w", "v + w", "v * 2", "v is string", "v is mapping", "v is sequence",
          "v.strip()", "v.split()", "v.title()", "v.swapcase()", "v.casefold()", "v.isalnum()", "v.isnumeric()",
          "v.istitle()", "v.isprintable()", "v.splitlines()", "v.expandtabs(4)", "v.center(9, '*')", "v.zfill(6)",
          "v.items()|list", "v.get('a')", "v[0]", "v[-1]", "v[1:]", "v[::-1]", "v|batch(2)|list", "v|slice(2)|list",
          "v|map(attribute='a')|list", "v|groupby(0)|list", "'%s'|format(v)", "'%r'|format(v)", "'%d'|format(v)",
          "'%.2f'|format(v)", "'{}'.format(v)", "'{!r}'.format(v)", "'{:>8}'.format(v)", "'{:,}'.format(v)",
          "'{:05}'.format(v)", "(v, w)", "{'k': v}", "v|xmlattr", "v|filesizeformat", "v|forceescape", "v // 2",
          "v % 3", "v / 3", "-v", "v|round(1, 'floor')"]


def rval(r, d=0):
    k = r.random()
    if k < 0.2:
        return "".join(r.choice(CH) for _ in range(r.choice([0, 1, 2, 3, 5, 8, 12])))
    if k < 0.32:
        return r.choice(INTS)
    if k < 0.44:
        return r.choice(FLOATS)
    if k < 0.5:
        return r.choice([None, True, False])
    if d > 2:
        return "k"
    if k < 0.75:
        return [rval(r, d + 1) for _ in range(r.randint(0, 4))]
    return {("".join(r.choice(CH) for _ in range(r.randint(0, 5))) or "k"): rval(r, d + 1) for _ in range(r.randint(0, 4))}


def gen_value(r):
    src = "{{ " + r.choice(VEXPRS) + " }}"
    if r.random() < 0.2:
        src = "{% for x in v %}[{{ x }}|{{ loop.index }}]{% else %}E{% endfor %}"
    return src, {"messages": [], "kwargs": {"v": rval(r), "w": rval(r)}}


# ------------------------------------------------------------------ conv mode
WORDS = ["Hello", "world", "what's", "the", "weather", "in", "Paris?", "<think>", "</think>", "\n", "\n\n", "  ", "é",
         "日本", "😀", "{", "}", "\"quoted\"", "'single'", "\\", "<|im_end|>", "[INST]", "<tool_call>", "1.5", "null",
         "\t", "<b>", "&amp;", "%s", "{{ x }}", "{% if %}"]


def gen_conv(r, templates):
    def simple():
        return " ".join(r.choice(WORDS[:8]) for _ in range(r.randint(1, 4)))

    def text():
        s = "".join(r.choice(WORDS) + r.choice(["", " ", " ", "\n"]) for _ in range(r.choice([0, 1, 2, 4, 8, 15])))
        if r.random() < 0.15:
            s = " " + s + " \n"
        if r.random() < 0.1:
            s = "<think>" + simple() + "</think>" + simple()
        return s

    def jval(d=0):
        k = r.random()
        if k < 0.3:
            return simple()
        if k < 0.45:
            return r.choice([0, 1, -7, 42, 10 ** 12])
        if k < 0.55:
            return r.choice([1.5, 0.1, -2.25, 1e-7, 3.0])
        if k < 0.62:
            return r.choice([True, False, None])
        if d > 2:
            return "x"
        if k < 0.8:
            return [jval(d + 1) for _ in range(r.randint(0, 3))]
        return {r.choice(["a", "b", "city", "unit"]): jval(d + 1) for _ in range(r.randint(0, 3))}

    def content():
        k = r.random()
        if k < 0.75:
            return text()
        if k < 0.9:
            return [{"type": "text", "text": text()} for _ in range(r.randint(1, 3))]
        return None if k < 0.95 else ""

    def tool_call(i):
        args = {r.choice(["city", "unit", "n", "query"]): jval() for _ in range(r.randint(0, 3))}
        if r.random() < 0.25:
            args = json.dumps(args, ensure_ascii=r.random() < 0.5)
        tc = {"type": "function", "function": {"name": r.choice(["get_weather", "search", "calc"]), "arguments": args}}
        if r.random() < 0.8:
            tc["id"] = "call_%d%s" % (i, r.choice(["", "abc", "XYZ123456"]))
        return tc

    def tool():
        props = {}
        for _ in range(r.randint(0, 3)):
            p = {"type": r.choice(["string", "integer", "number", "boolean", "array", "object"])}
            if r.random() < 0.6:
                p["description"] = simple()
            if r.random() < 0.2:
                p["enum"] = ["a", "b"]
            props[r.choice(["city", "unit", "n", "query", "a"])] = p
        fn = {"name": r.choice(["get_weather", "search", "calc"]), "parameters": {"type": "object", "properties": props}}
        if r.random() < 0.8:
            fn["description"] = simple()
        if props and r.random() < 0.6:
            fn["parameters"]["required"] = list(props)[:r.randint(1, len(props))]
        return {"type": "function", "function": fn}

    msgs = []
    if r.random() < 0.5:
        msgs.append({"role": r.choice(["system", "system", "developer"]), "content": content()})
    turns = r.randint(1, 4)
    for t in range(turns):
        msgs.append({"role": "user", "content": content()})
        if t == turns - 1 and r.random() < 0.6:
            break
        m = {"role": "assistant", "content": content()}
        if r.random() < 0.2:
            m["reasoning_content"] = simple()
        if r.random() < 0.3:
            m["tool_calls"] = [tool_call(2 * t + j) for j in range(r.randint(1, 2))]
            if r.random() < 0.5:
                m["content"] = None if r.random() < 0.5 else ""
            msgs.append(m)
            for tc in m["tool_calls"]:
                tm = {"role": "tool", "content": simple() if r.random() < 0.7 else json.dumps(jval())}
                if "id" in tc and r.random() < 0.8:
                    tm["tool_call_id"] = tc["id"]
                if r.random() < 0.5:
                    tm["name"] = tc["function"]["name"]
                msgs.append(tm)
            if r.random() < 0.5:
                msgs.append({"role": "assistant", "content": text()})
        else:
            msgs.append(m)
    if r.random() < 0.1:
        r.shuffle(msgs)
    case = {"messages": msgs, "add_generation_prompt": r.random() < 0.7}
    if r.random() < 0.4:
        case["tools"] = [tool() for _ in range(r.randint(1, 3))]
    kw = {}
    if r.random() < 0.3:
        kw["enable_thinking"] = r.random() < 0.5
    if r.random() < 0.1:
        kw["reasoning_effort"] = r.choice(["low", "medium", "high"])
    if r.random() < 0.05:
        kw["tools_in_user_message"] = r.random() < 0.5
    if r.random() < 0.05:
        kw["builtin_tools"] = ["code_interpreter", "brave_search"]
    if r.random() < 0.05:
        kw["documents"] = [{"title": "Doc", "text": simple()}]
    if kw:
        case["kwargs"] = kw
    return open(r.choice(templates), encoding="utf-8").read(), case


# ------------------------------------------------------------------ driver
def python_side(src, conv):
    if "bos" in conv:  # conv mode: transformers' render_case
        return render_case(src, conv)
    kw = dict(conv["kwargs"])
    if conv["messages"]:
        kw["messages"] = conv["messages"]
    return render_source(src, kw)


def loom_side(loom, src, conv):
    with tempfile.TemporaryDirectory() as d:
        tp, cp = os.path.join(d, "t.jinja"), os.path.join(d, "c.json")
        with open(tp, "w", encoding="utf-8") as f:
            f.write(src)
        body = {k: v for k, v in conv.items() if k != "bos"}
        with open(cp, "w", encoding="utf-8") as f:
            json.dump(body, f, ensure_ascii=False)
        args = [loom, "template", tp, "--messages", cp, "--now", "2024-07-26T12:00:00"]
        if "bos" in conv:
            args += ["--bos", "<s>", "--eos", "</s>"]
        p = subprocess.run(args, capture_output=True, timeout=60)
        if p.returncode == 0:
            return "out", p.stdout.decode("utf-8", "surrogateescape")
        return "err", p.stderr.decode("utf-8", "replace").split("\n", 1)[0]


def one(job):
    mode, seed, loom, templates = job
    r = random.Random(seed)
    if mode == "stmt":
        src, conv = gen_stmt(r)
    elif mode == "value":
        src, conv = gen_value(r)
    else:
        src, conv = gen_conv(r, templates)
        conv["bos"] = True
    py = python_side(src, conv)
    lo = loom_side(loom, src, conv)
    return seed, src, conv, py, lo


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mode", default="all", choices=["stmt", "value", "conv", "all"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=500)
    ap.add_argument("--loom", default="build/bin/loom")
    ap.add_argument("--messages", action="store_true", help="also report differing error messages")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    a = ap.parse_args()
    templates = sorted(glob.glob(os.path.join(HERE, "corpus", "*.jinja")) + glob.glob(os.path.join(HERE, "shared", "*.jinja")))
    modes = ["stmt", "value", "conv"] if a.mode == "all" else [a.mode]
    jobs = [(m, a.seed * 1000003 + i, a.loom, templates) for m in modes for i in range(a.count)]
    bad = 0
    with cf.ThreadPoolExecutor(a.jobs) as ex:
        for seed, src, conv, py, lo in ex.map(one, jobs):
            if py[0] == "out" and lo == py:
                continue
            if py[0] == "err" and lo[0] == "err" and (not a.messages or py[1] in lo[1]):
                continue
            if SKIP.search(src) or SKIP.search(py[1]) or SKIP.search(lo[1]):
                continue
            bad += 1
            print(json.dumps({"seed": seed, "template": src[:2000], "python": py, "loom": lo}, ensure_ascii=False))
    print("%d cases, %d differences" % (len(jobs), bad), file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
