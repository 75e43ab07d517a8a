/* tokenizer_pre.c: the pre-tokenizers of byte-level BPE vocabularies, one per value of
 * tokenizer.ggml.pre that llama.cpp knows (src/llama-vocab.cpp, llama.cpp 0c1e570), with PCRE2
 * (Debian's libpcre2-dev; UTF mode, Unicode properties) in place of llama.cpp's own splitters.
 *
 * A pre-tokenizer is a list of regexes applied in turn: each splits every piece so far into its
 * matches and the gaps between them (Hugging Face's Split pre-tokenizer, behaviour Isolated, in a
 * Sequence). The regexes are those of the models' tokenizer.json files, as llama.cpp lists them;
 * where llama.cpp rewrote one for std::regex (case-insensitive groups, \p{Lu}/\p{Ll} classes,
 * possessive quantifiers) the original is used, since PCRE2 has those features. A zero-length
 * match splits without making a word. Each regex sees one piece at a time: lookarounds stop at
 * the piece's ends. Besides the regexes, each value sets the flags llama.cpp sets for it:
 * whether decoding cleans spaces, whether a whole word found in the vocabulary skips the merges
 * (ignore_merges), whether BOS is added, and (gemma4, sarvam-moe) U+2581 for spaces on raw UTF-8
 * instead of GPT-2's byte characters. */
#include "tokenizer_impl.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

enum {
    PRE_KEEP_SPACES = 1 << 0,   /* clean_spaces = false */
    PRE_IGNORE_MERGES = 1 << 1, /* a word that is a token is that token */
    PRE_ADD_BOS = 1 << 2,       /* add_bos = true (before add_bos_token is read) */
    PRE_NO_BOS = 1 << 3,        /* no BOS token (chatglm, glm4) */
    PRE_RAW = 1 << 4,           /* raw UTF-8 words with U+2581 for spaces, <0xXX> byte fallback */
    PRE_NEWLINE_WORDS = 1 << 5, /* gemma4: a word of newlines that is a token is that token */
    PRE_FORCE_BOS = 1 << 6,     /* BOS whatever add_bos_token says (gemma4) */
};

/* The regexes, in groups shared by several pre values. */
#define RE_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"
#define RE_CONTRACTIONS "(?i:'s|'t|'re|'ve|'m|'ll|'d)"
#define RE_LLAMA3                                                                                  \
    RE_CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"   \
                    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RE_QWEN2                                                                                   \
    RE_CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"        \
                    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RE_UPPER "[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]"
#define RE_LOWER "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]"
#define RE_GPT4O                                                                                   \
    "[^\\r\\n\\p{L}\\p{N}]?" RE_UPPER "*" RE_LOWER "+" RE_CONTRACTIONS "?|"                        \
    "[^\\r\\n\\p{L}\\p{N}]?" RE_UPPER "+" RE_LOWER "*" RE_CONTRACTIONS "?|"                        \
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RE_DEEPSEEK3_MAIN                                                                          \
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?"           \
    "[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RE_CJK_KANA "[\xe4\xb8\x80-\xe9\xbe\xa5\xe3\x81\x80-\xe3\x82\x9f\xe3\x82\xa0-\xe3\x83\xbf]+"
#define RE_POR0                                                                                    \
    " ?[^(\\s|.,!?\xe2\x80\xa6\xe3\x80\x82\xef\xbc\x8c\xe3\x80\x81\xe0\xa5\xa4\xdb\x94\xd8\x8c)]+"
#define RE_NEWLINES "[^\\n]+|[\\n]+"

typedef struct pre_def {
    const char *names; /* the tokenizer.ggml.pre values, '|'-separated */
    unsigned flags;
    const char *re[7]; /* NULL-terminated */
} pre_def;

static const pre_def pre_defs[] = {
    {"llama3|llama-v3|llama-bpe|falcon3|falcon-h1|pixtral|midm-2.0|lfm2|jina-v5-nano",
     PRE_IGNORE_MERGES | PRE_ADD_BOS, {RE_LLAMA3}},
    {"dbrx|smaug-bpe", 0, {RE_LLAMA3}},
    {"chatglm-bpe", PRE_NO_BOS, {RE_LLAMA3}},
    {"glm4|glm5", PRE_NO_BOS | PRE_IGNORE_MERGES, {RE_LLAMA3}},
    {"jais-2", 0,
     {RE_CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
      "\\s*[\\r\\n]+|\\s{512}(?!\\S)|\\s{256}(?!\\S)|\\s{128}(?!\\S)|\\s{64}(?!\\S)|"
      "\\s{32}(?!\\S)|\\s{16}(?!\\S)|\\s{8}(?!\\S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}"}},
    {"deepseek-llm", PRE_KEEP_SPACES,
     {"[\\r\\n]",
      "\\s?[A-Za-z\xc2\xb5\xc3\x80-\xc3\x96\xc3\x98-\xc3\xb6\xc3\xb8-\xc6\xba\xc6\xbc-\xc6\xbf"
      "\xc7\x84-\xca\x93\xca\x95-\xca\xaf\xcd\xb0-\xcd\xb3\xcd\xb6\xcd\xb7\xcd\xbb-\xcd\xbd\xcd\xbf"
      "\xce\x86\xce\x88-\xce\x8a\xce\x8c\xce\x8e-\xce\xa1\xce\xa3-\xcf\xb5\xcf\xb7-\xd2\x81"
      "\xd2\x8a-\xd4\xaf\xd4\xb1-\xd5\x96\xe1\x82\xa0-\xe1\x83\x85\xe1\x8e\xa0-\xe1\x8f\xb5"
      "\xe1\x8f\xb8-\xe1\x8f\xbd\xe1\xb2\x90-\xe1\xb2\xba\xe1\xb2\xbd-\xe1\xb2\xbf\xe1\xb4\x80-"
      "\xe1\xb4\xab\xe1\xb5\xab-\xe1\xb5\xb7\xe1\xb5\xb9-\xe1\xb6\x9a\xe1\xb8\x80-\xe1\xbc\x95"
      "\xe1\xbc\x98-\xe1\xbc\x9d\xe1\xbc\xa0-\xe1\xbd\x85\xe1\xbd\x88-\xe1\xbd\x8d\xe1\xbd\x90-"
      "\xe1\xbd\x97\xe1\xbd\x99\xe1\xbd\x9b\xe1\xbd\x9d\xe1\xbd\x9f-\xe1\xbd\xbd\xe1\xbe\x80-"
      "\xe1\xbe\xb4\xe1\xbe\xb6-\xe1\xbe\xbc\xe1\xbe\xbe\xe1\xbf\x82-\xe1\xbf\x84\xe1\xbf\x86-"
      "\xe1\xbf\x8c\xe1\xbf\x90-\xe1\xbf\x93\xe1\xbf\x96-\xe1\xbf\x9b\xe1\xbf\xa0-\xe1\xbf\xac"
      "\xe1\xbf\xb2-\xe1\xbf\xb4\xe1\xbf\xb6-\xe1\xbf\xbc\xe2\x84\x82\xe2\x84\x87\xe2\x84\x8a-"
      "\xe2\x84\x93\xe2\x84\x95\xe2\x84\x99-\xe2\x84\x9d\xe2\x84\xa4\xe2\x84\xa6\xe2\x84\xa8"
      "\xe2\x84\xaa-\xe2\x84\xad\xe2\x84\xaf-\xe2\x84\xb4\xe2\x84\xb9\xe2\x84\xbc-\xe2\x84\xbf"
      "\xe2\x85\x85-\xe2\x85\x89\xe2\x85\x8e\xe2\x86\x83\xe2\x86\x84\xe2\xb0\x80-\xe2\xb1\xbb"
      "\xe2\xb1\xbe-\xe2\xb3\xa4\xe2\xb3\xab-\xe2\xb3\xae\xe2\xb3\xb2\xe2\xb3\xb3\xea\x99\x80-"
      "\xea\x99\xad\xea\x9a\x80-\xea\x9a\x9b\xea\x9c\xa2-\xea\x9d\xaf\xea\x9d\xb1-\xea\x9e\x87"
      "\xea\x9e\x8b-\xea\x9e\x8e\xea\xad\xb0-\xea\xae\xbf\xef\xac\x80-\xef\xac\x86\xef\xac\x93-"
      "\xef\xac\x97\xef\xbc\xa1-\xef\xbc\xba\xef\xbd\x81-\xef\xbd\x9a\xf0\x90\x90\x80-\xf0\x90\x91"
      "\x8f\xf0\x90\x92\xb0-\xf0\x90\x93\x93\xf0\x90\x93\x98-\xf0\x90\x93\xbb\xf0\x90\xb2\x80-"
      "\xf0\x90\xb2\xb2\xf0\x90\xb3\x80-\xf0\x90\xb3\xb2\xf0\x91\xa2\xa0-\xf0\x91\xa3\x9f"
      "\xf0\x9e\xa4\x80-\xf0\x9e\xa5\x83]+",
      "\\s?[!-/:-~\xef\xbc\x81-\xef\xbc\x8f\xef\xbc\x9a-\xef\xbd\x9e\xe2\x80\x98-\xe2\x80\x9f"
      "\xe3\x80\x80-\xe3\x80\x82]+",
      "\\s+$",
      "[\xe4\xb8\x80-\xe9\xbe\xa5\xe0\xa0\x80-\xe4\xb8\x80\xea\xb0\x80-\xed\x9f\xbf]+",
      "\\p{N}+"}},
    {"deepseek-v3|hunyuan-dense|joyai-llm|hy_v4", PRE_KEEP_SPACES,
     {"\\p{N}{1,3}", RE_CJK_KANA, RE_DEEPSEEK3_MAIN}},
    {"spark2_5", PRE_KEEP_SPACES,
     {"\\p{N}{1,3}", RE_CJK_KANA,
      "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?"
      "[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+|[\\r\\n]|\\s+(?!\\S)|\\s+",
      "\\p{N}"}},
    {"deepseek-coder", PRE_KEEP_SPACES,
     {"[\\r\\n]", "\\s?\\p{L}+", "\\s?\\p{P}+",
      "[\xe4\xb8\x80-\xe9\xbe\xa5\xe0\xa0\x80-\xe4\xb8\x80\xea\xb0\x80-\xed\x9f\xbf]+", "\\p{N}"}},
    {"falcon", 0,
     {"[\\p{P}\\$\\+<=>\\^~\\|`]+",
      "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
      "[0-9][0-9][0-9]"}},
    {"starcoder|refact|codeshell|exaone|minerva-7b|mellum2", 0, {"\\p{N}", RE_GPT2}},
    {"command-r|smollm", PRE_KEEP_SPACES, {"\\p{N}", RE_GPT2}},
    {"gpt-2|phi-2|jina-es|jina-de|gigachat|jina-v2-es|jina-v2-de|a.x-4.0|mellum|modern-bert|mpt|"
     "olmo|jais|exaone4", 0, {RE_GPT2}},
    {"trillion|granite-docling", PRE_KEEP_SPACES, {RE_GPT2}},
    {"qwen2|deepseek-r1-qwen|kormo|f2llmv2|hunyuan|solar-open|grok-2", PRE_KEEP_SPACES, {RE_QWEN2}},
    {"stablelm2|megrez", 0, {RE_QWEN2}},
    {"qwen35", PRE_KEEP_SPACES,
     {RE_CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+"
                      "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}},
    {"poro-chat", PRE_KEEP_SPACES, {RE_POR0}},
    {"bloom|gpt3-finnish", 0, {RE_POR0}},
    {"viking", PRE_KEEP_SPACES, {RE_POR0, "\\p{N}"}},
    {"tekken", PRE_KEEP_SPACES | PRE_IGNORE_MERGES | PRE_ADD_BOS,
     {"[^\\r\\n\\p{L}\\p{N}]?" RE_UPPER "*" RE_LOWER "+|"
      "[^\\r\\n\\p{L}\\p{N}]?" RE_UPPER "+" RE_LOWER "*|"
      "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}},
    {"chameleon", PRE_KEEP_SPACES | PRE_ADD_BOS,
     {"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\\t\\n]|    |  )", "\\p{N}",
      "[\\p{P}!-/:-@\\[-`{-~]",
      "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"}},
    {"gpt-4o|llama4|kanana2|talkie|minimax-m2", PRE_KEEP_SPACES, {RE_GPT4O}},
    {"tiny_aya|cohere2moe", PRE_KEEP_SPACES,
     {"\\d{1,3}(?=(?:\\d{3})*\\b)",
      "[^\\r\\n\\p{L}\\p{N}]?" RE_UPPER "*" RE_LOWER "+" RE_CONTRACTIONS "?|[^\\r\\n\\p{L}\\p{N}]?"
      RE_UPPER "+" RE_LOWER "*" RE_CONTRACTIONS "?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|"
      "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}},
    {"superbpe", PRE_KEEP_SPACES, {"\\p{N}+", "(?=(\\d{3})+(?!\\d))"}},
    {"bailingmoe|bailingmoe2|llada-moe", PRE_KEEP_SPACES,
     {"'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*|"
      "\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"}},
    {"seed-coder", PRE_KEEP_SPACES,
     {RE_CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|"
                      "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}},
    {"ufakzeka", PRE_KEEP_SPACES,
     {"[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
      "\\s+(?!\\S)|\\s+"}},
    {"laguna", PRE_KEEP_SPACES, {RE_NEWLINES, RE_QWEN2}},
    {"exaone-moe", 0,
     {RE_CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}|"
                      " ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"}},
    {"youtu", PRE_KEEP_SPACES | PRE_IGNORE_MERGES,
     {"[\xea\xb0\x80-\xed\x9e\xa3\xe3\x84\xb1-\xe3\x86\x8e]+|[\xef\xbc\x81\xe2\x80\xa6\xe2\x80\x9c"
      "\xe2\x80\x9d\xe2\x80\x98\xe2\x80\x99\xe2\x80\x94\xef\xbc\x9a\xef\xbc\x9b\xef\xbc\x8c\xe3\x80"
      "\x81-\xe3\x80\xbf\xef\xb8\xb0-\xef\xb9\x8f]+|[\xe3\x84\x85-\xe3\x84\xaf]+|" RE_CJK_KANA,
      "[^\\r\\n\\p{L}\\p{N}]?" RE_UPPER "*" RE_LOWER "+" RE_CONTRACTIONS "?|[^\\r\\n\\p{L}\\p{N}]?"
      RE_UPPER "+" RE_LOWER "*" RE_CONTRACTIONS "?|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|"
      "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}},
    {"minicpm5", PRE_IGNORE_MERGES,
     {"\\p{N}{1,3}",
      RE_CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}+| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
                      "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}},
    {"gemma4|granite-embed-multi-311m", PRE_RAW | PRE_NEWLINE_WORDS | PRE_FORCE_BOS, {RE_NEWLINES}},
    {"sarvam-moe", PRE_RAW | PRE_KEEP_SPACES, {RE_NEWLINES}},
    {"default", 0,
     {"[\\p{P}\\$\\+<=>\\^~\\|]+",
      "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)", "\\p{N}+",
      "[0-9][0-9][0-9]"}},
};

/* Values llama.cpp knows whose pre-tokenizer is not a list of regexes (custom splitters, or
 * encoders that add a separator): refused by name. */
static const char *const unsupported = "kimi-k2|afmoe|whitespace|jina-v1-en|jina-v2-code|"
                                       "roberta-bpe|granite-embed-multi-97m";

struct tok_pre {
    int n;
    pcre2_code *re[7];
};

/* 1 if name is one of the '|'-separated names in list. */
static int listed(const char *list, const char *name)
{
    const size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *bar = strchr(p, '|');
        const size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && !memcmp(p, name, n))
            return 1;
        if (!bar)
            break;
        p = bar + 1;
    }
    return 0;
}

void tok_pre_free(tok_pre *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->n; i++)
        pcre2_code_free(p->re[i]);
    free(p);
}

int tok_pre_new(tok_vocab *v, const char *pre, char *err, size_t cap)
{
    const char *name = pre[0] ? pre : "default"; /* llama.cpp: a missing value is "default" */
    const pre_def *d = NULL;
    for (size_t i = 0; i < sizeof pre_defs / sizeof pre_defs[0] && !d; i++)
        if (listed(pre_defs[i].names, name))
            d = &pre_defs[i];
    if (!d) {
        snprintf(err, cap, "tokenizer.ggml.pre '%s' is %s", name,
                 listed(unsupported, name) ? "not supported by this example's tokenizer"
                                           : "unknown");
        return -1;
    }
    tok_pre *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    for (int i = 0; i < 7 && d->re[i]; i++) {
        int code;
        PCRE2_SIZE at;
        p->re[i] = pcre2_compile((PCRE2_SPTR)d->re[i], PCRE2_ZERO_TERMINATED,
                                 PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &code, &at, NULL);
        if (!p->re[i]) {
            PCRE2_UCHAR msg[160];
            pcre2_get_error_message(code, msg, sizeof msg);
            snprintf(err, cap, "pre-tokenizer '%s', regex %d: %s at offset %zu", name, i,
                     (const char *)msg, (size_t)at);
            tok_pre_free(p);
            return -1;
        }
        p->n = i + 1;
    }
    v->pre = p;
    v->clean_spaces = !(d->flags & PRE_KEEP_SPACES);
    v->ignore_merges = !!(d->flags & PRE_IGNORE_MERGES);
    if (d->flags & PRE_ADD_BOS)
        v->add_bos = 1;
    if (d->flags & PRE_NO_BOS)
        v->bos = -1;
    v->force_bos = !!(d->flags & PRE_FORCE_BOS);
    v->byte_encode = !(d->flags & PRE_RAW);
    v->escape_spaces = !!(d->flags & PRE_RAW);
    v->newline_words = !!(d->flags & PRE_NEWLINE_WORDS);
    return 0;
}

int tok_pre_compile_all(char *err, size_t cap)
{
    int n = 0;
    for (size_t i = 0; i < sizeof pre_defs / sizeof pre_defs[0]; i++) {
        for (int j = 0; j < 7 && pre_defs[i].re[j]; j++) {
            int code;
            PCRE2_SIZE at;
            pcre2_code *re = pcre2_compile((PCRE2_SPTR)pre_defs[i].re[j], PCRE2_ZERO_TERMINATED,
                                           PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &code,
                                           &at, NULL);
            if (!re) {
                snprintf(err, cap, "%s: regex %d does not compile (offset %zu)",
                         pre_defs[i].names, j, (size_t)at);
                return -1;
            }
            pcre2_code_free(re);
            n++;
        }
    }
    return n;
}

/* A list of pieces (byte offset, length) of the text. */
typedef struct spans {
    size_t *p; /* off, len pairs */
    size_t n, cap;
} spans;

static int spans_push(spans *s, size_t off, size_t len)
{
    if (s->n == s->cap) {
        const size_t cap = s->cap ? 2 * s->cap : 64;
        size_t *p = realloc(s->p, 2 * cap * sizeof *p);
        if (!p)
            return -1;
        s->p = p;
        s->cap = cap;
    }
    s->p[2 * s->n] = off;
    s->p[2 * s->n + 1] = len;
    s->n++;
    return 0;
}

/* Appends to out the matches of re in the piece text[off, off + len) and the gaps between them
 * (zero-length matches split without a piece). Iterates as Perl does: after an empty match, the
 * next try is a non-empty match at the same place, else the search goes on one character later. */
static int split_one(const pcre2_code *re, pcre2_match_data *md, const char *text, size_t off,
                     size_t len, spans *out, char *err, size_t cap)
{
    const PCRE2_SPTR s = (PCRE2_SPTR)(text + off);
    size_t pos = 0, last = 0;
    uint32_t opts = 0;
    while (pos <= len) {
        const int rc = pcre2_match(re, s, len, pos, opts | PCRE2_NO_UTF_CHECK, md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH) {
            if (!opts)
                break;
            if (pos >= len) /* the empty match was at the end */
                break;
            pos += tok_utf8_len((uint8_t)text[off + pos]);
            opts = 0;
            continue;
        }
        if (rc < 0) {
            PCRE2_UCHAR msg[160];
            pcre2_get_error_message(rc, msg, sizeof msg);
            snprintf(err, cap, "pre-tokenizer: %s", (const char *)msg);
            return -1;
        }
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        const size_t ms = ov[0], me = ov[1];
        if (ms > last && spans_push(out, off + last, ms - last))
            goto oom;
        if (me > ms && spans_push(out, off + ms, me - ms))
            goto oom;
        last = me;
        pos = me;
        opts = me == ms ? PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED : 0;
    }
    if (last < len && spans_push(out, off + last, len - last))
        goto oom;
    return 0;
oom:
    snprintf(err, cap, "out of memory");
    return -1;
}

int tok_pre_split(const tok_pre *p, const char *text, size_t n,
                  int (*word)(void *ctx, const char *s, size_t n), void *ctx, char *err,
                  size_t cap)
{
    spans a = {0}, b = {0};
    int rc = 0;
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    if (!md || spans_push(&a, 0, n)) {
        snprintf(err, cap, "out of memory");
        rc = -1;
    }
    for (int r = 0; r < p->n && !rc; r++) {
        b.n = 0;
        for (size_t i = 0; i < a.n && !rc; i++)
            rc = split_one(p->re[r], md, text, a.p[2 * i], a.p[2 * i + 1], &b, err, cap);
        const spans t = a;
        a = b;
        b = t;
    }
    for (size_t i = 0; i < a.n && !rc; i++)
        if (a.p[2 * i + 1] > 0 && word(ctx, text + a.p[2 * i], a.p[2 * i + 1]))
            rc = -1;
    pcre2_match_data_free(md);
    free(a.p);
    free(b.p);
    return rc;
}
