#!/usr/bin/env python3
"""Deterministic ~1 MB of mixed text for the tokenizer benchmark
(bench/README.md): English prose (the repository's Markdown), C source (the
repository's src/), multilingual text (Chinese, Japanese, Korean, Russian,
Greek, Arabic, Hindi, Thai sentences below), numbers and dates, emoji, and
whitespace/punctuation runs, interleaved in chunks. Usage:
    python3 bench/gen_tok_text.py [SIZE_BYTES] > tok_text.txt"""
import glob
import os
import random
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
MULTI = [
    "我想在苹果公司工作一千三百一十四天，然后去北京看看长城。今天天气很好，我们一起去公园散步吧。",
    "日本語のテキストを正しくトークン化するのは難しい。東京は日本の首都で、人口は約千四百万人です。",
    "한국어 텍스트도 처리해야 합니다. 서울은 대한민국의 수도이며 한강이 흐릅니다.",
    "Привет! Как дела? Москва — столица России, а Санкт-Петербург был основан в 1703 году.",
    "Η Αθήνα είναι η πρωτεύουσα της Ελλάδας και μία από τις αρχαιότερες πόλεις του κόσμου.",
    "مرحبا بالعالم! القاهرة هي عاصمة مصر وأكبر مدنها، ويبلغ عدد سكانها نحو عشرين مليون نسمة.",
    "नमस्ते दुनिया! दिल्ली भारत की राजधानी है और यमुना नदी के किनारे बसी है।",
    "สวัสดีครับ กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย",
    "Ça va très bien, merci ! L'été dernier, nous sommes allés à Zürich et à São Paulo.",
    "Über die Brücke gehen größere Mädchen; Straße, Fußgänger, Äpfel und Öl.",
]
EMOJI = "🦙🚀😀😂👍🏽❤️‍🔥🇺🇸✅🎉🙏👨‍👩‍👧‍👦🌍🔥💯"


def main():
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 20
    rnd = random.Random(20)
    prose = "".join(open(p, encoding="utf-8").read() for p in sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))))
    prose += open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    code = "".join(open(p, encoding="utf-8").read() for p in sorted(glob.glob(os.path.join(ROOT, "src", "*", "*.c")))
                   if "unicode_tables" not in p)
    out, n = [], 0
    while n < size:
        k = rnd.random()
        if k < 0.40:
            i = rnd.randrange(max(1, len(prose) - 2000))
            s = prose[i:i + rnd.randint(200, 2000)]
        elif k < 0.70:
            i = rnd.randrange(max(1, len(code) - 2000))
            s = code[i:i + rnd.randint(200, 2000)]
        elif k < 0.85:
            s = " ".join(rnd.choice(MULTI) for _ in range(rnd.randint(1, 4))) + "\n"
        elif k < 0.95:
            s = " ".join(rnd.choice([str(rnd.randint(0, 10 ** rnd.randint(1, 12))), "%d.%02d" % (rnd.randint(0, 9999), rnd.randint(0, 99)),
                                     "2026-%02d-%02d" % (rnd.randint(1, 12), rnd.randint(1, 28)), rnd.choice(EMOJI) * rnd.randint(1, 3)])
                         for _ in range(rnd.randint(5, 30))) + "\n"
        else:
            s = rnd.choice(["\n\n\n", "    ", "\t\t", " " * rnd.randint(2, 40), "...", "!!!", "---\n", "\r\n"]) * rnd.randint(1, 10)
        out.append(s)
        n += len(s.encode("utf-8"))
    text = "".join(out).encode("utf-8")[:size]
    while text and (text[-1] & 0xC0) == 0x80:  # do not end inside a character
        text = text[:-1]
    if text and text[-1] >= 0xC0:
        text = text[:-1]
    sys.stdout.buffer.write(text)


if __name__ == "__main__":
    main()
