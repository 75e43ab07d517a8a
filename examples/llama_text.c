/* llama_text.c: see llama_text.h. */
#include "llama_text.h"

#include "chat_template.h"
#include "llama_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void text_open(llama_text *t, const wk_gguf *g)
{
    memset(t, 0, sizeof *t);
    t->g = g;
    t->tokens_kv = wk_gguf_find_key(g, "tokenizer.ggml.tokens");
    if (tok_vocab_load(&t->vocab, g, t->why, sizeof t->why))
        t->vocab = NULL;
    else
        fprintf(stderr, "llama: tokenizer: %s\n", tok_vocab_describe(t->vocab));
}

void text_close(llama_text *t)
{
    tok_vocab_free(t->vocab);
    t->vocab = NULL;
}

/* The prompt text, in the file's chat format when asked for (malloc'ed). */
static char *prompt_text(const llama_text *t, const llama_prompt *p)
{
    if (!p->chat) {
        char *s = malloc(strlen(p->text) + 1);
        if (!s)
            die("out of memory");
        return strcpy(s, p->text);
    }
    const char *tmpl, *other;
    uint64_t len;
    const int64_t k = wk_gguf_find_key(t->g, "tokenizer.chat_template");
    wk_gguf_value v;
    if (k < 0 || wk_gguf_kv_value(&v, t->g, k) != WK_OK ||
        wk_gguf_get_string(&tmpl, &len, v) != WK_OK)
        die("--chat: the file declares no chat template (tokenizer.chat_template)");
    const chat_format f = chat_detect(tmpl, (size_t)len, &other);
    if (f == CHAT_UNKNOWN)
        die("--chat: the file's chat template is not one this example writes (it looks %s; "
            "known: chatml, llama3, mistral, llama2, gemma, phi3)", other);
    char *s = chat_apply(f, p->system, p->text);
    if (!s)
        die("out of memory");
    fprintf(stderr, "llama: chat format %s\n", chat_format_name(f));
    return s;
}

uint32_t *text_prompt(llama_text *t, const llama_prompt *p, int64_t *n)
{
    uint32_t *ids = NULL;
    if (p->ids) {
        ids = parse_ids(p->ids, n);
    } else {
        if (!t->vocab)
            die("--prompt needs the file's tokenizer: %s (give --prompt-ids instead)", t->why);
        char *s = prompt_text(t, p), err[256];
        int32_t *tok = NULL;
        size_t nt = 0;
        if (tok_encode(t->vocab, s, strlen(s), 1, 1, &tok, &nt, err, sizeof err))
            die("tokenizing the prompt: %s", err);
        const int32_t bos = tok_bos(t->vocab);
        if (tok_adds_bos(t->vocab) && nt >= 2 && tok[1] == bos)
            fprintf(stderr, "llama: warning: the prompt starts with BOS twice (the vocabulary adds "
                            "one and the text has one)\n");
        free(s);
        ids = malloc((nt ? nt : 1) * sizeof *ids);
        if (!ids)
            die("out of memory");
        for (size_t i = 0; i < nt; i++)
            ids[i] = (uint32_t)tok[i];
        free(tok);
        *n = (int64_t)nt;
    }
    if (*n == 0)
        die("empty prompt: give --prompt TEXT or --prompt-ids IDS");
    fprintf(stderr, "llama: prompt: %lld tokens:", (long long)*n);
    for (int64_t i = 0; i < *n && i < 64; i++)
        fprintf(stderr, " %u", ids[i]);
    fprintf(stderr, "%s\n", *n > 64 ? " ..." : "");
    return ids;
}

int text_is_eog(const llama_text *t, uint32_t id)
{
    return t->vocab && id <= INT32_MAX && tok_is_eog(t->vocab, (int32_t)id);
}

void text_put(llama_text *t, uint32_t id)
{
    size_t len;
    const char *s = t->vocab && id <= INT32_MAX ? tok_piece(t->vocab, (int32_t)id, 0, &len) : NULL;
    if (s) {
        tok_stream_put(&t->stream, s, len, stdout);
        return;
    }
    putchar(' ');
    print_token(t->g, t->tokens_kv, id);
    fflush(stdout);
}

void text_end(llama_text *t)
{
    tok_stream_flush(&t->stream, stdout);
    putchar('\n');
    fflush(stdout);
}
