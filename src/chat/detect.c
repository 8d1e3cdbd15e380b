/*
 * detect.c - which output syntax a chat template implies.
 *
 * A template shows the model's syntax where it renders an assistant message that has
 * tool calls (and, for reasoning models, where it renders or opens the thinking), so the
 * markers it contains identify the family. The rules run from the most specific marker
 * to the most generic one; the first that matches wins. They mirror what llama.cpp's and
 * Ollama's chat-format detection look for (facts about the families, not their code).
 */
#include <string.h>

#include "chat_internal.h"

static bool has(const char *t, size_t n, const char *needle) { return chat_find(t, n, needle) != NULL; }

loom_chat_syntax loom_chat_detect(const char *t, size_t n) {
    loom_chat_syntax s = {LOOM_CHAT_FORMAT_PLAIN, LOOM_CHAT_THINKING_NONE, NULL, NULL};
    if (!t || !n) return s;

    /* Thinking markers. */
    if (has(t, n, "<seed:think>")) s.thinking = LOOM_CHAT_THINKING_SEED;
    else if (has(t, n, "<|START_THINKING|>")) s.thinking = LOOM_CHAT_THINKING_COMMAND_R7B;
    else if (has(t, n, "[THINK]")) s.thinking = LOOM_CHAT_THINKING_MISTRAL;
    else if (has(t, n, "<think>") || has(t, n, "</think>")) s.thinking = LOOM_CHAT_THINKING_THINK_TAGS;

    /* Tool-call syntax, most specific first. */
    if (has(t, n, "<|channel|>") && has(t, n, "<|message|>")) {
        s.format = LOOM_CHAT_FORMAT_HARMONY;
        s.thinking = LOOM_CHAT_THINKING_HARMONY;
    } else if (has(t, n, "[TOOL_CALLS]")) {
        s.format = LOOM_CHAT_FORMAT_MISTRAL;
    } else if (has(t, n, "tool\xe2\x96\x81" "calls\xe2\x96\x81" "begin")) { /* <｜tool▁calls▁begin｜> */
        /* R1 writes "function<｜tool▁sep｜>name" and fences the arguments as ```json */
        s.format = has(t, n, "```json") ? LOOM_CHAT_FORMAT_DEEPSEEK_R1 : LOOM_CHAT_FORMAT_DEEPSEEK_V3_1;
    } else if (has(t, n, "<|tool_calls_section_begin|>")) {
        s.format = LOOM_CHAT_FORMAT_KIMI_K2;
    } else if (has(t, n, "<minimax:tool_call>")) {
        s.format = LOOM_CHAT_FORMAT_MINIMAX;
    } else if (has(t, n, "<|START_ACTION|>")) {
        s.format = LOOM_CHAT_FORMAT_COMMAND_R7B;
    } else if (has(t, n, "<|tool_call|>")) {
        s.format = LOOM_CHAT_FORMAT_GRANITE;
    } else if (has(t, n, ">>>all")) {
        s.format = LOOM_CHAT_FORMAT_FUNCTIONARY_V3_2;
    } else if (has(t, n, "<arg_key>")) {
        s.format = LOOM_CHAT_FORMAT_GLM;
    } else if ((has(t, n, "<function=") || has(t, n, "<function=\"")) && has(t, n, "<parameter=")) {
        s.format = LOOM_CHAT_FORMAT_XML_FUNCTION;
    } else if (has(t, n, "<function=")) {
        s.format = LOOM_CHAT_FORMAT_FUNCTIONARY_V3_1;
    } else if (has(t, n, "<tool_calls>")) {
        s.format = LOOM_CHAT_FORMAT_JSON_ARRAY_TAG;
        s.open_tag = "<tool_calls>";
        s.close_tag = "</tool_calls>";
    } else if (has(t, n, "<TOOLCALL>")) {
        s.format = LOOM_CHAT_FORMAT_JSON_ARRAY_TAG;
        s.open_tag = "<TOOLCALL>";
        s.close_tag = "</TOOLCALL>";
    } else if (has(t, n, "<|tool_call_start|>")) {
        s.format = LOOM_CHAT_FORMAT_JSON_ARRAY_TAG;
        s.open_tag = "<|tool_call_start|>";
        s.close_tag = "<|tool_call_end|>";
    } else if (has(t, n, "<tool_call>")) {
        s.format = LOOM_CHAT_FORMAT_HERMES;
    } else if (has(t, n, "<|python_tag|>") || has(t, n, "ipython") ||
               (has(t, n, "<|start_header_id|>") && has(t, n, "\"parameters\""))) {
        s.format = LOOM_CHAT_FORMAT_LLAMA3;
    }
    return s;
}

const char *loom_chat_format_name(loom_chat_format f) {
    static const char *const names[LOOM_CHAT_FORMAT_COUNT] = {
        "plain", "hermes", "llama3", "mistral", "deepseek-r1", "deepseek-v3.1", "granite",
        "functionary-v3.1", "functionary-v3.2", "command-r7b", "harmony", "xml-function", "glm",
        "minimax", "kimi-k2", "json-array-tag"};
    return (unsigned)f < LOOM_CHAT_FORMAT_COUNT ? names[f] : "?";
}

const char *loom_chat_thinking_name(loom_chat_thinking t) {
    switch (t) {
    case LOOM_CHAT_THINKING_NONE: return "none";
    case LOOM_CHAT_THINKING_THINK_TAGS: return "think";
    case LOOM_CHAT_THINKING_MISTRAL: return "mistral";
    case LOOM_CHAT_THINKING_COMMAND_R7B: return "command-r7b";
    case LOOM_CHAT_THINKING_SEED: return "seed";
    case LOOM_CHAT_THINKING_HARMONY: return "harmony";
    }
    return "?";
}

void loom_chat_thinking_tags(loom_chat_thinking t, const char **open, const char **close) {
    const char *o = NULL, *c = NULL;
    switch (t) {
    case LOOM_CHAT_THINKING_THINK_TAGS: o = "<think>"; c = "</think>"; break;
    case LOOM_CHAT_THINKING_MISTRAL: o = "[THINK]"; c = "[/THINK]"; break;
    case LOOM_CHAT_THINKING_COMMAND_R7B: o = "<|START_THINKING|>"; c = "<|END_THINKING|>"; break;
    case LOOM_CHAT_THINKING_SEED: o = "<seed:think>"; c = "</seed:think>"; break;
    default: break;
    }
    if (open) *open = o;
    if (close) *close = c;
}
