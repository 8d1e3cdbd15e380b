#!/usr/bin/env python3
"""Writes extra.inp: test strings for every vocabulary, in llama.cpp's .inp
format (each string followed by "\\n__ggml_vocab_test__\\n"). The strings are
chosen to hit the corners of the tokenizers: emoji and ZWJ sequences, CJK,
combining marks, digits of many scripts, whitespace runs (ASCII and Unicode),
code, contractions, special-token look-alikes, unassigned code points, and
invalid UTF-8. The .out files next to it were produced by llama.cpp (see
README.md). Deterministic; run: python3 make_inp.py > extra.inp"""
import sys

S = []
def add(s):
    S.append(s.encode("utf-8") if isinstance(s, str) else s)

# plain text and spacing
for s in ["", " ", "  ", "\t", "\n", "\r\n", " \n \n", "\n\n\n\n", "\t\t\n\t", "a", " a", "  a", "a  ", "a \n b",
          "Hello world", "hello  world", "Hello\u00a0world", "Hello\u3000world", "x\u2009y\u200bz", "tab\tsep\tvalue",
          "line1\r\nline2\r\n\r\n", "trailing spaces   ", "   leading spaces", " " * 40 + "x", "\n" * 20 + "x",
          " \t \n\u00a0\u2028\u2029\u0085x", "a\u000bb\u000cc\u001cd\u001fe"]:
    add(s)
# words, case, contractions
for s in ["I'm you're he'll she'd it's we've THEY'RE I'LL WE'D", "don't DON'T Don'T o'clock", "rock 'n' roll",
          "it\u2019s curly\u2019s", "'s 't 're 've 'm 'll 'd", "''''", "The QUICK brown FoX", "camelCaseWord and snake_case_word",
          "HTTPServerError XMLHttpRequest iPhone eBay", "ǅemal ǈubljana ǋ", "Straße İstanbul ſ K ﬁnance", "ΑΒΓ αβγ ΣΊΣΥΦΟΣ",
          "Привет, как дела?", "שלום עולם", "مرحبا بالعالم", "Բարեւ Ձեզ", "გამარჯობა", "ᏣᎳᎩ ᎦᏬᏂᎯᏍᏗ"]:
    add(s)
# combining marks and scripts with marks
for s in ["e\u0301 a\u0300 o\u0308", "cafe\u0301 caf\u00e9", "\u0915\u094d\u0937\u093f \u0928\u092e\u0938\u094d\u0924\u0947",
          "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35\u0e04\u0e23\u0e31\u0e1a", "\u0643\u064e\u062a\u064e\u0628\u064e",
          "x\u0332\u0333y", "\u1100\u1161\u11a8", "Z\u0351\u0364\u0360a\u0489l\u0335g\u0321o", "\u0301\u0302 leading marks"]:
    add(s)
# CJK
for s in ["我想在apple工作1314151天～", "日本語のテキストとカタカナ、ひらがな。", "한국어 텍스트 입니다", "中文，标点！“引号”",
          "𠀀𠀁𪚥 ext-B", "ｆｕｌｌｗｉｄｔｈ　ＡＢＣ　１２３", "〇一二三四五六七八九十", "ｶﾀｶﾅ ﾊﾝｶｸ", "㐀㐁 ext-A 豈 compat"]:
    add(s)
# emoji
for s in ["🦙", "🚀 (normal) 😶‍🌫️ (multiple emojis concatenated) ✅", "👍🏽👨‍👩‍👧‍👦🏳️‍🌈", "🇺🇸🇯🇵🇫🇷", "❤️‍🔥 ☺️ ©️ ®",
          "1️⃣ #️⃣ *️⃣", "😀😁😂🤣😃😄😅😆😉😊😋😎😍😘", "a🦙b c 🦙 d"]:
    add(s)
# numbers
for s in ["3", "33", "333", "3333", "33333", "333333", "3333333", "1234567890123", "1,234,567.89", "-0.5e-10",
          "3.14159 2.71828", "v1.2.3-rc4", "2024-01-31T12:34:56Z", "٠١٢٣٤٥٦٧٨٩ ۱۲۳", "१२३४५", "１２３４５", "²³¹ ½ ¼ Ⅻ ⅷ ①②",
          "0x1F 0b1010 0o777", "100%", "$1,000,000", "a1b2c3", "12abc34def"]:
    add(s)
# code
add("def f(x):\n    return x**2  # square\n\n\nprint(f(3))\n")
add("int main(void) {\n\tprintf(\"%d\\n\", 42);\n\treturn 0;\n}\n")
add('{"key": [1, 2.5, "v\\u00e9"], "nested": {"a": null, "b": true}}')
add("<html><body class=\"x\">&amp; &lt;tag&gt;</body></html>")
add("SELECT * FROM t WHERE a >= 10 AND b <> 'x';")
add("    if (a && b || !c) { x += y << 2; } // done")
add("foo.bar_baz->qux::quux(...)")
add("```python\nimport os\n```")
add("$ ls -la | grep '\\.txt$' > out.log 2>&1")
add("\\n\\t\\\\ escapes \\x41")
# punctuation runs
for s in ["...", "!!!???", "—–-", "«»„“”‘’", "()[]{}<>", "@#$%^&*_+=~`|\\/", ". , ! ?", "a.b,c!d?e", "Hello , world !",
          "i.e. e.g. U.S.A.", "…。，、।۔،", "(hello|world)", "word(s) [x] {y}"]:
    add(s)
# special-token look-alikes (as text without parse_special; as tokens with it)
for s in ["<s>", "</s>", "<unk>", "<pad>", "<|endoftext|>", "<|im_start|>user\nhi<|im_end|>\n",
          "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>", "<start_of_turn>user\nhi<end_of_turn>",
          "[CLS] hello [SEP]", "[MASK] <mask> [UNK]", " <|endoftext|> ", "a</s>b", "<s> hello </s>", "hello <|end|>  world",
          "<|user|>\nQuestion<|end|>\n<|assistant|>", "<|assistant|> answer", "<|system|>sys<|end|>", "<bos><eos>",
          "<|tool_response>x<tool_response|>", "<|channel|>analysis<|message|>", "<fim_prefix>a<fim_suffix>b<fim_middle>",
          "<|fim_prefix|>x<|fim_suffix|>", "<0x0A><0x41>", "▁hello ▁▁world", "##ing ##s"]:
    add(s)
# unusual code points
for s in ["\u0378\u0379 unassigned", "\ue000\uf8ff private", "\ufffe\uffff nonchar", "\U0010ffff\U000e0001", "\ufeffBOM text",
          "\u200d\u200c\u2060 joiners", "\u00ad soft\u00adhyphen", "\u0000nul\u0000", "\x01\x02\x7f controls",
          "\u2028\u2029 seps", "\U0001d400\U0001d41a math", "\U00010400\U00010428 deseret", "\u00b5\u00c0\u00ff\u0100\u017f"]:
    add(s)
# long inputs
add("a" * 300)
add("ab" * 200)
add("supercalifragilisticexpialidocious" * 8)
add(" ".join(["word"] * 100))
add("🦙" * 50)
add("9" * 200)
add("!" * 100)
# invalid UTF-8 (not "\\xf5\\x80\\x80\\x80": llama.cpp aborts on code points above U+10FFFF)
for b in [b"\xff", b"\xc3", b"\x80abc", b"abc\xc3", b"\xe2\x82", b"\xe2\x82 x", b"\xc0\x80", b"\xed\xa0\x80",
          b"\xf8\x88\x80\x80\x80", b"a\xffb\xfec", b"\xf0\x9f\xa6", b"\xf0\x9f\xa6\x99\xf0\x9f",
          b"caf\xe9", b"\xc3\xa9\xa9", b" \xe2\x96\x81 ", b"\xef\xbb\xbf\xff", b"\x00\xff\x00"]:
    add(b)

out = sys.stdout.buffer
for s in S:
    out.write(s + b"\n__ggml_vocab_test__\n")
