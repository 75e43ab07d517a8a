/* chat_template.c: see chat_template.h. The marker tests and the texts written follow llama.cpp's
 * src/llama-chat.cpp (llm_chat_detect_template, llm_chat_apply_template) for these formats. */
#include "chat_template.h"

#include <stdlib.h>
#include <string.h>

static const char *const names[] = {
    [CHAT_UNKNOWN] = "unknown",         [CHAT_CHATML] = "chatml",
    [CHAT_LLAMA3] = "llama3",           [CHAT_MISTRAL_V1] = "mistral-v1",
    [CHAT_MISTRAL_V3] = "mistral-v3",   [CHAT_MISTRAL_V3_TEKKEN] = "mistral-v3-tekken",
    [CHAT_MISTRAL_V7] = "mistral-v7",   [CHAT_LLAMA2] = "llama2",
    [CHAT_LLAMA2_SYS] = "llama2-sys",   [CHAT_LLAMA2_STRIP] = "llama2-sys-strip",
    [CHAT_GEMMA] = "gemma",             [CHAT_PHI3] = "phi3",
};

const char *chat_format_name(chat_format f)
{
    return f >= 0 && (size_t)f < sizeof names / sizeof names[0] ? names[f] : "?";
}

/* 1 if the n bytes at t hold s. */
static int has(const char *t, size_t n, const char *s)
{
    const size_t k = strlen(s);
    for (size_t i = 0; i + k <= n; i++)
        if (!memcmp(t + i, s, k))
            return 1;
    return 0;
}

chat_format chat_detect(const char *t, size_t n, const char **other)
{
    *other = "unrecognised";
    if (has(t, n, "<|im_start|>")) {
        if (has(t, n, "<|im_sep|>"))
            *other = "phi4";
        else if (has(t, n, "<end_of_utterance>"))
            *other = "smolvlm";
        else
            return CHAT_CHATML;
        return CHAT_UNKNOWN;
    }
    if ((n >= 7 && !memcmp(t, "mistral", 7)) || has(t, n, "[INST]")) {
        if (has(t, n, "[SYSTEM_PROMPT]"))
            return CHAT_MISTRAL_V7;
        if (has(t, n, "' [INST] ' + system_message") || has(t, n, "[AVAILABLE_TOOLS]")) {
            if (has(t, n, " [INST]"))
                return CHAT_MISTRAL_V1;
            if (has(t, n, "\"[INST]\""))
                return CHAT_MISTRAL_V3_TEKKEN;
            return CHAT_MISTRAL_V3;
        }
        if (has(t, n, "content.strip()"))
            return CHAT_LLAMA2_STRIP;
        if (has(t, n, "bos_token + '[INST]")) {
            *other = "llama2-sys-bos";
            return CHAT_UNKNOWN;
        }
        return has(t, n, "<<SYS>>") ? CHAT_LLAMA2_SYS : CHAT_LLAMA2;
    }
    if (has(t, n, "<|assistant|>") && has(t, n, "<|end|>"))
        return CHAT_PHI3;
    /* formats llama.cpp tests before Gemma's and Llama 3's markers */
    static const char *const before[][3] = {
        {"[gMASK]<sop>", NULL, "chatglm4"},   {"<|assistant|>", "<|user|>", "glmedge / falcon3"},
        {"<|user|>", "<|endoftext|>", "zephyr"}, {"bos_token + message['role']", NULL, "monarch"}};
    for (size_t i = 0; i < sizeof before / sizeof before[0]; i++)
        if (has(t, n, before[i][0]) && (!before[i][1] || has(t, n, before[i][1]))) {
            *other = before[i][2];
            return CHAT_UNKNOWN;
        }
    if (has(t, n, "<start_of_turn>"))
        return CHAT_GEMMA;
    if (has(t, n, "<|start_header_id|>") && has(t, n, "<|end_header_id|>"))
        return CHAT_LLAMA3;
    return CHAT_UNKNOWN;
}

/* A grown string. */
typedef struct str {
    char *p;
    size_t n, cap;
    int oom;
} str;

static void put(str *s, const char *t, size_t k)
{
    if (s->oom)
        return;
    if (s->n + k + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 256;
        while (cap < s->n + k + 1)
            cap *= 2;
        char *p = realloc(s->p, cap);
        if (!p) {
            s->oom = 1;
            return;
        }
        s->p = p;
        s->cap = cap;
    }
    memcpy(s->p + s->n, t, k);
    s->n += k;
    s->p[s->n] = '\0';
}

static void puts_(str *s, const char *t) { put(s, t, strlen(t)); }

/* t without leading and trailing whitespace (llama.cpp's trim: space, \t \n \v \f \r). */
static void put_trimmed(str *s, const char *t)
{
    size_t a = 0, b = strlen(t);
    while (a < b && strchr(" \t\n\v\f\r", t[a]))
        a++;
    while (b > a && strchr(" \t\n\v\f\r", t[b - 1]))
        b--;
    put(s, t + a, b - a);
}

char *chat_apply(chat_format f, const char *sys, const char *user)
{
    str s = {0};
    puts_(&s, "");
    switch (f) {
    case CHAT_CHATML:
        if (sys) {
            puts_(&s, "<|im_start|>system\n");
            puts_(&s, sys);
            puts_(&s, "<|im_end|>\n");
        }
        puts_(&s, "<|im_start|>user\n");
        puts_(&s, user);
        puts_(&s, "<|im_end|>\n<|im_start|>assistant\n");
        break;
    case CHAT_LLAMA3:
        if (sys) {
            puts_(&s, "<|start_header_id|>system<|end_header_id|>\n\n");
            put_trimmed(&s, sys);
            puts_(&s, "<|eot_id|>");
        }
        puts_(&s, "<|start_header_id|>user<|end_header_id|>\n\n");
        put_trimmed(&s, user);
        puts_(&s, "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
        break;
    case CHAT_MISTRAL_V7:
        if (sys) {
            puts_(&s, "[SYSTEM_PROMPT] ");
            puts_(&s, sys);
            puts_(&s, "[/SYSTEM_PROMPT]");
        }
        puts_(&s, "[INST] ");
        puts_(&s, user);
        puts_(&s, "[/INST]");
        break;
    case CHAT_MISTRAL_V1:
    case CHAT_MISTRAL_V3:
    case CHAT_MISTRAL_V3_TEKKEN:
        puts_(&s, f == CHAT_MISTRAL_V1 ? " [INST] " : f == CHAT_MISTRAL_V3 ? "[INST] " : "[INST]");
        if (sys) {
            puts_(&s, sys);
            puts_(&s, "\n\n");
        }
        puts_(&s, user);
        puts_(&s, f == CHAT_MISTRAL_V1 ? " [/INST]" : "[/INST]");
        break;
    case CHAT_LLAMA2:
    case CHAT_LLAMA2_SYS:
    case CHAT_LLAMA2_STRIP:
        puts_(&s, "[INST] ");
        if (sys) {
            puts_(&s, f == CHAT_LLAMA2 ? "" : "<<SYS>>\n");
            if (f == CHAT_LLAMA2_STRIP)
                put_trimmed(&s, sys);
            else
                puts_(&s, sys);
            puts_(&s, f == CHAT_LLAMA2 ? "\n" : "\n<</SYS>>\n\n");
        }
        if (f == CHAT_LLAMA2_STRIP)
            put_trimmed(&s, user);
        else
            puts_(&s, user);
        puts_(&s, " [/INST]");
        break;
    case CHAT_GEMMA: /* no system turn: the system message opens the user's */
        puts_(&s, "<start_of_turn>user\n");
        if (sys) {
            put_trimmed(&s, sys);
            puts_(&s, "\n\n");
        }
        put_trimmed(&s, user);
        puts_(&s, "<end_of_turn>\n<start_of_turn>model\n");
        break;
    case CHAT_PHI3:
        if (sys) {
            puts_(&s, "<|system|>\n");
            puts_(&s, sys);
            puts_(&s, "<|end|>\n");
        }
        puts_(&s, "<|user|>\n");
        puts_(&s, user);
        puts_(&s, "<|end|>\n<|assistant|>\n");
        break;
    default:
        free(s.p);
        return NULL;
    }
    if (s.oom) {
        free(s.p);
        return NULL;
    }
    return s.p;
}
