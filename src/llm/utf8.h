/* The UTF-8 encoder of Loom, shared by the tokenizer (src/llm), the chat templates
 * (src/template) and anything above src/llm: one copy, with a loom_ name because it
 * is a global symbol of the library (see CMakeLists.txt, libloom). */
#ifndef LOOM_UTF8_H
#define LOOM_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Writes code point cp as UTF-8 to out (room for 4 bytes) and returns the byte
 * count (1 to 4). Surrogates (U+D800..U+DFFF) get their 3-byte forms; cp > 0x10FFFF
 * cannot be encoded and is written as U+FFFD (3 bytes), as llama.cpp does. */
size_t loom_utf8_encode(uint32_t cp, unsigned char *out);

#endif
