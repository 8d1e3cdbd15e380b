/* Pre-tokenizers of the byte-level BPE vocabularies, as data: for every
 * tokenizer.ggml.pre value llama.cpp knows, the list of split regexes it
 * applies (in order; each splits the pieces the previous ones produced) and the
 * vocabulary defaults it implies. The regex strings are the ones llama.cpp
 * uses (from the models' tokenizer.json files); tokenizer_regex.c runs them
 * with llama.cpp's std::regex semantics, except the few exact pattern strings
 * for which llama.cpp runs a hand-written splitter instead: those are
 * reproduced here (tok_split_custom), corner cases included (a code point
 * with no category flags ends a punctuation run, AFMoE's digit grouping keeps
 * the text before a number with its first group, ...). */
#include <stdlib.h>
#include <string.h>

#include "llm/tokenizer_internal.h"

/* ------------------------------------------------------------------ table (data) */

static const char *const k_names_0[] = {"default", NULL};
static const char *const k_names_1[] = {"minicpm5", NULL};
static const char *const k_names_2[] = {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano", NULL};
static const char *const k_names_3[] = {"deepseek-llm", NULL};
static const char *const k_names_4[] = {"deepseek-coder", NULL};
static const char *const k_names_5[] = {"deepseek-v3", NULL};
static const char *const k_names_6[] = {"youtu", NULL};
static const char *const k_names_7[] = {"falcon", NULL};
static const char *const k_names_8[] = {"mpt", NULL};
static const char *const k_names_9[] = {"starcoder", NULL};
static const char *const k_names_10[] = {"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum", "modern-bert", "exaone4", NULL};
static const char *const k_names_11[] = {"jais-2", NULL};
static const char *const k_names_12[] = {"gemma4", "granite-embed-multi-311m", NULL};
static const char *const k_names_13[] = {"sarvam-moe", NULL};
static const char *const k_names_14[] = {"jina-v1-en", "jina-v2-code", "roberta-bpe", NULL};
static const char *const k_names_15[] = {"whitespace", NULL};
static const char *const k_names_16[] = {"refact", NULL};
static const char *const k_names_17[] = {"command-r", NULL};
static const char *const k_names_18[] = {"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", NULL};
static const char *const k_names_19[] = {"qwen35", NULL};
static const char *const k_names_20[] = {"stablelm2", NULL};
static const char *const k_names_21[] = {"olmo", NULL};
static const char *const k_names_22[] = {"dbrx", NULL};
static const char *const k_names_23[] = {"smaug-bpe", NULL};
static const char *const k_names_24[] = {"poro-chat", NULL};
static const char *const k_names_25[] = {"glm4", "chatglm-bpe", NULL};
static const char *const k_names_26[] = {"viking", NULL};
static const char *const k_names_27[] = {"jais", NULL};
static const char *const k_names_28[] = {"tekken", NULL};
static const char *const k_names_29[] = {"smollm", NULL};
static const char *const k_names_30[] = {"codeshell", NULL};
static const char *const k_names_31[] = {"bloom", NULL};
static const char *const k_names_32[] = {"gpt3-finnish", NULL};
static const char *const k_names_33[] = {"exaone", NULL};
static const char *const k_names_34[] = {"exaone-moe", NULL};
static const char *const k_names_35[] = {"chameleon", NULL};
static const char *const k_names_36[] = {"minerva-7b", NULL};
static const char *const k_names_37[] = {"megrez", NULL};
static const char *const k_names_38[] = {"gpt-4o", "llama4", "kanana2", "talkie", NULL};
static const char *const k_names_39[] = {"granite-embed-multi-97m", NULL};
static const char *const k_names_40[] = {"tiny_aya", "cohere2moe", NULL};
static const char *const k_names_41[] = {"superbpe", NULL};
static const char *const k_names_42[] = {"trillion", NULL};
static const char *const k_names_43[] = {"granite-docling", NULL};
static const char *const k_names_44[] = {"bailingmoe", "bailingmoe2", "llada-moe", NULL};
static const char *const k_names_45[] = {"seed-coder", NULL};
static const char *const k_names_46[] = {"hunyuan", NULL};
static const char *const k_names_47[] = {"hunyuan-dense", NULL};
static const char *const k_names_48[] = {"joyai-llm", NULL};
static const char *const k_names_49[] = {"kimi-k2", NULL};
static const char *const k_names_50[] = {"grok-2", NULL};
static const char *const k_names_51[] = {"afmoe", NULL};
static const char *const k_names_52[] = {"laguna", NULL};
static const char *const k_names_53[] = {"minimax-m2", NULL};
static const char *const k_names_54[] = {"solar-open", NULL};
static const char *const k_names_55[] = {"mellum2", NULL};

static const tok_pre_def k_pre[] = {
    {"default", k_names_0, {"[\\p{P}\\$\\+<=>\\^~\\|]+", "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)", "\\p{N}+", "[0-9][0-9][0-9]"}, 0},
    {"minicpm5", k_names_1, {"\\p{N}{1,3}", "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}+| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, TOK_PRE_F_IGNORE_MERGES},
    {"llama3", k_names_2, {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, TOK_PRE_F_IGNORE_MERGES | TOK_PRE_F_ADD_BOS},
    {"deepseek-llm", k_names_3, {"[\r\n]", "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+", "\\s?[!-/:-~！-／：-～‘-‟　-。]+", "\\s+$", "[一-龥ࠀ-一가-퟿]+", "\\p{N}+"}, TOK_PRE_F_NO_CLEAN},
    {"deepseek-coder", k_names_4, {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", "[一-龥ࠀ-一가-퟿]+", "\\p{N}"}, TOK_PRE_F_NO_CLEAN},
    {"deepseek-v3", k_names_5, {"\\p{N}{1,3}", "[一-龥぀-ゟ゠-ヿ]+", "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"}, TOK_PRE_F_NO_CLEAN},
    {"youtu", k_names_6, {"[가-힣ㄱ-ㆎ]+|[！…“”‘’—：；，、-〿︰-﹏]+|[ㄅ-ㄯ]+|[一-龥぀-ゟ゠-ヿ]+", "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, TOK_PRE_F_NO_CLEAN | TOK_PRE_F_IGNORE_MERGES},
    {"falcon", k_names_7, {"[\\p{P}\\$\\+<=>\\^~\\|`]+", "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)", "[0-9][0-9][0-9]"}, 0},
    {"mpt", k_names_8, {"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"}, 0},
    {"starcoder", k_names_9, {"\\p{N}", "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"}, 0},
    {"gpt2", k_names_10, {"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"}, 0},
    {"jais2", k_names_11, {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s{512}(?!\\S)|\\s{256}(?!\\S)|\\s{128}(?!\\S)|\\s{64}(?!\\S)|\\s{32}(?!\\S)|\\s{16}(?!\\S)|\\s{8}(?!\\S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}"}, 0},
    {"gemma4", k_names_12, {"[^\\n]+|[\\n]+"}, TOK_PRE_F_RAW | TOK_PRE_F_ESCAPE_WS | TOK_PRE_F_GEMMA4 | TOK_PRE_F_FORCE_BOS},
    {"sarvam-moe", k_names_13, {"[^\\n]+|[\\n]+"}, TOK_PRE_F_RAW | TOK_PRE_F_ESCAPE_WS | TOK_PRE_F_NO_CLEAN},
    {"roberta-bpe", k_names_14, {"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"}, TOK_PRE_F_ADD_SEP},
    {"whitespace", k_names_15, {"\\S+"}, TOK_PRE_F_RAW | TOK_PRE_F_WHITESPACE},
    {"refact", k_names_16, {"\\p{N}", "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"}, 0},
    {"command-r", k_names_17, {"\\p{N}", "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"}, TOK_PRE_F_NO_CLEAN},
    {"qwen2", k_names_18, {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, TOK_PRE_F_NO_CLEAN},
    {"qwen35", k_names_19, {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, TOK_PRE_F_NO_CLEAN},
    {"stablelm2", k_names_20, {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, 0},
    {"olmo", k_names_21, {"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"}, 0},
    {"dbrx", k_names_22, {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, 0},
    {"smaug", k_names_23, {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, 0},
    {"poro", k_names_24, {" ?[^(\\s|.,!?…。，、।۔،)]+"}, TOK_PRE_F_NO_CLEAN},
    {"chatglm4", k_names_25, {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, TOK_PRE_F_NO_BOS_ID},
    {"viking", k_names_26, {" ?[^(\\s|.,!?…。，、।۔،)]+", "\\p{N}"}, TOK_PRE_F_NO_CLEAN},
    {"jais", k_names_27, {"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"}, 0},
    {"tekken", k_names_28, {"[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, TOK_PRE_F_NO_CLEAN | TOK_PRE_F_IGNORE_MERGES | TOK_PRE_F_ADD_BOS},
    {"smollm", k_names_29, {"\\p{N}", "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"}, TOK_PRE_F_NO_CLEAN},
    {"codeshell", k_names_30, {"\\p{N}", "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"}, 0},
    {"bloom", k_names_31, {" ?[^(\\s|.,!?…。，、।۔،)]+"}, 0},
    {"gpt3-finnish", k_names_32, {" ?[^(\\s|.,!?…。，、।۔،)]+"}, 0},
    {"exaone", k_names_33, {"\\p{N}", "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"}, 0},
    {"exaone-moe", k_names_34, {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"}, 0},
    {"chameleon", k_names_35, {"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\\t\\n]|    |  )", "\\p{N}", "[\\p{P}!-/:-@\\[-`{-~]", "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"}, TOK_PRE_F_ADD_BOS | TOK_PRE_F_NO_CLEAN},
    {"minerva", k_names_36, {"\\p{N}", "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"}, 0},
    {"megrez", k_names_37, {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, 0},
    {"gpt-4o", k_names_38, {"[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, TOK_PRE_F_NO_CLEAN},
    {"granite-emb-multi", k_names_39, {"[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))*((?=[\\p{L}\\p{M}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))+((?=[\\p{L}\\p{M}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, TOK_PRE_F_NO_CLEAN | TOK_PRE_F_IGNORE_MERGES},
    {"tiny-aya", k_names_40, {"\\d{1,3}(?=(?:\\d{3})*\\b)", "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, TOK_PRE_F_NO_CLEAN},
    {"superbpe", k_names_41, {"\\p{N}+", "(?=(\\d{3})+(?!\\d))"}, TOK_PRE_F_NO_CLEAN},
    {"trillion", k_names_42, {"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"}, TOK_PRE_F_NO_CLEAN},
    {"granite-docling", k_names_43, {"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"}, TOK_PRE_F_NO_CLEAN},
    {"bailingmoe", k_names_44, {"'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"}, TOK_PRE_F_NO_CLEAN},
    {"seed-coder", k_names_45, {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, TOK_PRE_F_NO_CLEAN},
    {"hunyuan", k_names_46, {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, TOK_PRE_F_NO_CLEAN},
    {"hunyuan-dense", k_names_47, {"\\p{N}{1,3}", "[一-龥぀-ゟ゠-ヿ]+", "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"}, TOK_PRE_F_NO_CLEAN},
    {"joyai-llm", k_names_48, {"\\p{N}{1,3}", "[一-龥぀-ゟ゠-ヿ]+", "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"}, TOK_PRE_F_NO_CLEAN},
    {"kimi-k2", k_names_49, {"\\p{Han}+"}, TOK_PRE_F_NO_CLEAN},
    {"grok-2", k_names_50, {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, TOK_PRE_F_NO_CLEAN},
    {"afmoe", k_names_51, {"\\p{AFMoE_digits}", "[一-鿿㐀-䶿豈-﫿぀-ゟ゠-ヿ･-ﾟ⼀-⿟เ-๿຀-໿ក-៿က-႟ꩠ-ꩿꧠ-꧿가-힯ᄀ-ᇿ]+", "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, TOK_PRE_F_NO_CLEAN},
    {"laguna", k_names_52, {"[^\\n]+|[\\n]+", "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, TOK_PRE_F_NO_CLEAN},
    {"minimax-m2", k_names_53, {"[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, TOK_PRE_F_NO_CLEAN},
    {"solar-open", k_names_54, {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, TOK_PRE_F_NO_CLEAN},
    {"mellum2", k_names_55, {"\\p{N}", "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"}, 0},
};

const tok_pre_def *tok_pre_table(size_t *n) {
    *n = sizeof k_pre / sizeof k_pre[0];
    return k_pre;
}

const tok_pre_def *tok_pre_find(const char *name, size_t len) {
    if (len == 0) return &k_pre[0]; /* no tokenizer.ggml.pre: llama.cpp uses "default" */
    for (size_t i = 0; i < sizeof k_pre / sizeof k_pre[0]; i++)
        for (const char *const *nm = k_pre[i].names; *nm; nm++)
            if (strlen(*nm) == len && memcmp(*nm, name, len) == 0) return &k_pre[i];
    return NULL;
}

/* ------------------------------------------------------------------ hand-written splitters */

static const char *const k_custom[] = {
    /* TOK_SPLIT_GPT2 */
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
    /* TOK_SPLIT_LLAMA3 (two spellings) */
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    /* TOK_SPLIT_QWEN2 */
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    /* TOK_SPLIT_QWEN35 */
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    /* TOK_SPLIT_KIMI_K2 */
    "\\p{Han}+",
    /* TOK_SPLIT_AFMOE_DIGITS (two patterns) */
    "\\p{AFMoE_digits}",
    "\\d{1,3}(?=(?:\\d{3})*\\b)",
    /* TOK_SPLIT_NEWLINES */
    "[^\\n]+|[\\n]+",
    /* TOK_SPLIT_DIGITS3: llama.cpp runs std::regex here (quadratic on long digit runs); the
     * empty matches fall exactly where a run of ASCII digits of length 3k (k >= 1) begins */
    "(?=(\\d{3})+(?!\\d))",
};
static const tok_split_kind k_custom_kind[] = {TOK_SPLIT_GPT2,    TOK_SPLIT_LLAMA3,       TOK_SPLIT_LLAMA3,
                                               TOK_SPLIT_QWEN2,   TOK_SPLIT_QWEN35,       TOK_SPLIT_KIMI_K2,
                                               TOK_SPLIT_AFMOE_DIGITS, TOK_SPLIT_AFMOE_DIGITS, TOK_SPLIT_NEWLINES,
                                               TOK_SPLIT_DIGITS3};

tok_split_kind tok_split_kind_of(const char *pattern) {
    for (size_t i = 0; i < sizeof k_custom / sizeof k_custom[0]; i++)
        if (strcmp(pattern, k_custom[i]) == 0) return k_custom_kind[i];
    return TOK_SPLIT_REGEX;
}

#define OOR 0xFFFFFFFFu

typedef struct sctx {
    const uint32_t *c;
    size_t ini, end, prev;
    tok_offs *out;
    bool oom;
} sctx;

static inline uint32_t CPT(const sctx *x, size_t pos) { return (pos >= x->ini && pos < x->end) ? x->c[pos] : OOR; }
static inline unsigned FL(const sctx *x, size_t pos) {
    return (pos >= x->ini && pos < x->end) ? tok_cp_flags(x->c[pos]) : 0u;
}
static size_t add(sctx *x, size_t end) {
    size_t len = end - x->prev;
    if (len > 0 && tok_offs_push(x->out, (uint32_t)len) != LOOM_OK) x->oom = true;
    x->prev = end;
    return len;
}

#define F_L TOK_CP_LETTER
#define F_N TOK_CP_NUMBER
#define F_M TOK_CP_MARK
#define F_WS TOK_CP_WHITESPACE

/* 's 't 'm 'd 're 've 'll at pos (case-insensitive when ci); returns its length or 0. */
static size_t contraction(const sctx *x, size_t pos, bool ci) {
    if (CPT(x, pos) != '\'' || pos + 1 >= x->end) return 0;
    uint32_t a = CPT(x, pos + 1);
    if (ci) a = tok_cp_tolower(a);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if (pos + 2 < x->end) {
        uint32_t b = CPT(x, pos + 2);
        if (ci) b = tok_cp_tolower(b);
        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    }
    return 0;
}

/* Whitespace tail shared by the splitters: \s*[\r\n]+ (when rn), \s+(?!\S),
 * \s+, or a single code point. */
static void ws_tail(sctx *x, size_t *pp, bool rn) {
    size_t pos = *pp, nws = 0, last_rn = 0;
    while (FL(x, pos + nws) & F_WS) {
        uint32_t c2 = CPT(x, pos + nws);
        if (rn && (c2 == '\r' || c2 == '\n')) last_rn = pos + nws + 1;
        nws++;
    }
    if (last_rn > 0) {
        pos = last_rn;
        add(x, pos);
    } else if (nws > 1 && CPT(x, pos + nws) != OOR) {
        pos += nws - 1;
        add(x, pos);
    } else if (nws > 0) {
        pos += nws;
        add(x, pos);
    } else {
        add(x, ++pos);
    }
    *pp = pos;
}

static void split_gpt2(sctx *x) {
    for (size_t pos = x->ini; pos < x->end;) {
        const uint32_t cpt = CPT(x, pos);
        const unsigned flags = FL(x, pos);
        size_t k = contraction(x, pos, false);
        if (k) { pos += add(x, pos + k); continue; }
        unsigned f2 = cpt == ' ' ? FL(x, pos + 1) : flags;
        if (f2 & F_L) {
            pos += cpt == ' ';
            while (f2 & F_L) f2 = FL(x, ++pos);
            add(x, pos);
            continue;
        }
        if (f2 & F_N) {
            pos += cpt == ' ';
            while (f2 & F_N) f2 = FL(x, ++pos);
            add(x, pos);
            continue;
        }
        if (!(f2 & (F_WS | F_L | F_N)) && f2) {
            pos += cpt == ' ';
            while (!(f2 & (F_WS | F_L | F_N)) && f2) f2 = FL(x, ++pos);
            add(x, pos);
            continue;
        }
        ws_tail(x, &pos, false);
    }
}

/* Llama 3 (max_digits 3), Qwen2 (1), Qwen3.5 (1, letters take marks). */
static void split_llama3(sctx *x, size_t max_digits, bool marks) {
    const unsigned LM = marks ? (F_L | F_M) : F_L;
    for (size_t pos = x->ini; pos < x->end;) {
        const uint32_t cpt = CPT(x, pos);
        const unsigned flags = FL(x, pos);
        size_t k = contraction(x, pos, true);
        if (k) { pos += add(x, pos + k); continue; }
        /* [^\r\n\p{L}\p{N}]?\p{L}+ */
        if (!(cpt == '\r' || cpt == '\n' || (flags & F_N))) {
            if ((flags & LM) || (FL(x, pos + 1) & LM)) {
                pos++;
                while (FL(x, pos) & LM) pos++;
                add(x, pos);
                continue;
            }
        }
        /* \p{N}{1,max} */
        if (flags & F_N) {
            size_t ini = pos;
            while (FL(x, pos) & F_N) {
                if (++pos - ini >= max_digits) {
                    add(x, pos);
                    ini = pos;
                }
            }
            add(x, pos);
            continue;
        }
        /*  ?[^\s\p{L}\p{N}]+[\r\n]* (flags of the first code point decide) */
        unsigned f2 = cpt == ' ' ? FL(x, pos + 1) : flags;
        const unsigned EX = F_WS | LM | F_N;
        if (!(f2 & EX) && flags) {
            pos += cpt == ' ';
            while (!(f2 & EX) && f2) f2 = FL(x, ++pos);
            uint32_t c2 = CPT(x, pos);
            while (c2 == '\r' || c2 == '\n') c2 = CPT(x, ++pos);
            add(x, pos);
            continue;
        }
        ws_tail(x, &pos, true);
    }
}

static bool letter_not_han(const sctx *x, size_t pos) {
    return (FL(x, pos) & F_L) && !tok_cp_is_han(CPT(x, pos));
}

static void split_kimi_k2(sctx *x) {
    for (size_t pos = x->ini; pos < x->end;) {
        const uint32_t cpt = CPT(x, pos);
        const unsigned flags = FL(x, pos);
        if (tok_cp_is_han(cpt)) {
            while (tok_cp_is_han(CPT(x, pos))) pos++;
            add(x, pos);
            continue;
        }
        bool lead_ok = !(cpt == '\r' || cpt == '\n' || (flags & (F_L | F_N)));
        bool is_letter_pattern = ((flags & F_L) && !tok_cp_is_han(cpt)) || (lead_ok && letter_not_han(x, pos + 1));
        if (is_letter_pattern) {
            bool has_lead = false;
            if (lead_ok) { has_lead = true; pos++; }
            bool has_letters = false;
            while (letter_not_han(x, pos)) { has_letters = true; pos++; }
            if (has_letters || (!has_lead && letter_not_han(x, pos))) {
                if (!has_letters) pos++;
                while (letter_not_han(x, pos)) pos++;
                if (CPT(x, pos) == '\'' && pos + 1 < x->end) {
                    uint32_t a = tok_cp_tolower(CPT(x, pos + 1));
                    if (a == 's' || a == 't' || a == 'm' || a == 'd') {
                        pos += 2;
                    } else if (pos + 2 < x->end) {
                        uint32_t b = tok_cp_tolower(CPT(x, pos + 2));
                        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) pos += 3;
                    }
                }
                add(x, pos);
                continue;
            } else if (has_lead) {
                pos--;
            }
        }
        if (flags & F_N) {
            size_t ini = pos;
            while (FL(x, pos) & F_N) {
                if (++pos - ini >= 3) {
                    add(x, pos);
                    ini = pos;
                }
            }
            add(x, pos);
            continue;
        }
        unsigned f2 = cpt == ' ' ? FL(x, pos + 1) : flags;
        if (!(f2 & (F_WS | F_L | F_N)) && f2) {
            pos += cpt == ' ';
            while (!(f2 & (F_WS | F_L | F_N)) && f2) f2 = FL(x, ++pos);
            uint32_t c2 = CPT(x, pos);
            while (c2 == '\r' || c2 == '\n') c2 = CPT(x, ++pos);
            add(x, pos);
            continue;
        }
        ws_tail(x, &pos, true);
    }
}

static void split_afmoe_digits(sctx *x) {
    for (size_t pos = x->ini; pos < x->end;) {
        if (FL(x, pos) & F_N) {
            size_t start = pos, count = 0;
            while ((FL(x, pos) & F_N) && pos < x->end) { count++; pos++; }
            size_t rem = count % 3, cur = start;
            if (rem > 0) {
                add(x, cur + rem);
                cur += rem;
            }
            while (cur < start + count) {
                add(x, cur + 3);
                cur += 3;
            }
            continue;
        }
        pos++;
    }
    if (x->prev < x->end) add(x, x->end);
}

static void split_newlines(sctx *x) {
    size_t pos = x->ini;
    while (pos < x->end) {
        bool nl = x->c[pos] == '\n';
        size_t s = pos;
        while (pos < x->end && (x->c[pos] == '\n') == nl) pos++;
        if (tok_offs_push(x->out, (uint32_t)(pos - s)) != LOOM_OK) x->oom = true;
    }
}

/* Pieces of std::regex_iterator for (?=(\d{3})+(?!\d)): an empty match at p
 * iff the ASCII digits from p to the end of their run number 3k, k >= 1. */
static void split_digits3(sctx *x) {
    size_t last = x->ini;
    for (size_t p = x->ini; p < x->end;) {
        if (x->c[p] < '0' || x->c[p] > '9') { p++; continue; }
        size_t e = p;
        while (e < x->end && x->c[e] >= '0' && x->c[e] <= '9') e++;
        for (size_t q = p; q + 3 <= e; q++) {
            if ((e - q) % 3) continue;
            if (q > last && tok_offs_push(x->out, (uint32_t)(q - last)) != LOOM_OK) x->oom = true;
            if (tok_offs_push(x->out, 0) != LOOM_OK) x->oom = true;
            last = q;
        }
        p = e;
    }
    if (last < x->end && tok_offs_push(x->out, (uint32_t)(x->end - last)) != LOOM_OK) x->oom = true;
}

loom_status tok_split_custom(tok_split_kind k, const uint32_t *cps, const tok_offs *in, tok_offs *out) {
    size_t start = 0;
    for (size_t i = 0; i < in->n; i++) {
        sctx x = {cps, start, start + in->a[i], start, out, false};
        start = x.end;
        switch (k) {
        case TOK_SPLIT_GPT2: split_gpt2(&x); break;
        case TOK_SPLIT_LLAMA3: split_llama3(&x, 3, false); break;
        case TOK_SPLIT_QWEN2: split_llama3(&x, 1, false); break;
        case TOK_SPLIT_QWEN35: split_llama3(&x, 1, true); break;
        case TOK_SPLIT_KIMI_K2: split_kimi_k2(&x); break;
        case TOK_SPLIT_AFMOE_DIGITS: split_afmoe_digits(&x); break;
        case TOK_SPLIT_NEWLINES: split_newlines(&x); break;
        case TOK_SPLIT_DIGITS3: split_digits3(&x); break;
        default: break;
        }
        if (x.oom) return LOOM_ERR_NOMEM;
    }
    return LOOM_OK;
}
