/* libFuzzer target: the chat-output parser (include/loom_chat.h). The first byte picks
 * the syntax (format, thinking), the second whether the prompt opened a thinking block;
 * the rest is model output, pushed in pieces whose lengths come from the data itself
 * (so splits land everywhere). Checks: no crash/UB/leak (ASan+UBSan), every call has a
 * name and a JSON object as arguments, the concatenated deltas equal the totals, and
 * content + thinking + arguments never exceed what went in by more than the generated
 * ids and JSON re-encoding can add. The detector also runs on the input as a template. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom_chat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2 || size > 1 << 16) return 0;
    loom_chat_syntax det = loom_chat_detect((const char *)data, size);
    (void)det;
    loom_chat_parser_params pp = loom_chat_parser_default_params();
    pp.syntax.format = (loom_chat_format)(data[0] % LOOM_CHAT_FORMAT_COUNT);
    pp.syntax.thinking = (loom_chat_thinking)((data[0] >> 5) % 6);
    if (pp.syntax.format == LOOM_CHAT_FORMAT_JSON_ARRAY_TAG) {
        pp.syntax.open_tag = "<tool_calls>";
        pp.syntax.close_tag = "</tool_calls>";
    }
    pp.prompt = (data[1] & 1) ? "<think>\n" : ((data[1] & 2) ? ">>>" : "");
    pp.prompt_len = strlen(pp.prompt);
    pp.parse_tools = !(data[1] & 4);
    pp.parse_thinking = !(data[1] & 8);
    loom_chat_parser *p = NULL;
    if (loom_chat_parser_new(&pp, &p, NULL) != LOOM_OK) abort();
    const char *s = (const char *)data + 2;
    size_t n = size - 2, i = 0;
    size_t nc = 0, nt = 0;
    int32_t ncalls = 0;
    loom_chat_delta d;
    while (i < n) {
        size_t k = 1 + (unsigned char)s[i] % 7; /* piece length from the data */
        if (k > n - i) k = n - i;
        if (loom_chat_parser_push(p, s + i, k, &d, NULL) != LOOM_OK) abort();
        nc += d.content_len, nt += d.thinking_len, ncalls += d.n_calls;
        for (int32_t c = 0; c < d.n_calls; c++)
            if (!d.calls[c].name[0] || d.calls[c].arguments[0] != '{') abort();
        i += k;
    }
    if (loom_chat_parser_finish(p, &d, NULL) != LOOM_OK) abort();
    nc += d.content_len, nt += d.thinking_len, ncalls += d.n_calls;
    loom_chat_delta all;
    loom_chat_parser_result(p, &all);
    if (all.content_len != nc || all.thinking_len != nt || all.n_calls != ncalls) abort();
    if (nc + nt > n) abort(); /* text out never exceeds text in */
    loom_chat_parser_free(p);
    return 0;
}
