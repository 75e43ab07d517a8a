/* llama_text.h: text in and out for examples/llama.c: the prompt from --prompt TEXT (tokenized
 * with the file's tokenizer, examples/tokenizer.h; --chat wraps it in the file's chat format,
 * examples/chat_template.h) or from --prompt-ids IDS, and generated tokens streamed as text.
 * Errors print why and exit, as the rest of the example does. */
#ifndef LLAMA_TEXT_H
#define LLAMA_TEXT_H

#include "tokenizer.h"

#include <stdint.h>
#include <wick.h>

typedef struct llama_text {
    tok_vocab *vocab;   /* NULL when the file's tokenizer is missing or not supported */
    char why[256];      /* then: the reason */
    tok_stream stream;
    int64_t tokens_kv;  /* tokenizer.ggml.tokens (for printing ids without a tokenizer), or -1 */
    const wk_gguf *g;
} llama_text;

/* What the prompt is made of (the command line). */
typedef struct llama_prompt {
    const char *text;   /* --prompt, or NULL */
    const char *ids;    /* --prompt-ids, or NULL */
    const char *system; /* --system, or NULL */
    int chat;           /* --chat */
} llama_prompt;

/* Loads the tokenizer of g (keeping the reason when there is none). */
void text_open(llama_text *t, const wk_gguf *g);
void text_close(llama_text *t);
/* The prompt's token ids (malloc'ed, *n of them; at least one, else it dies). Text is tokenized
 * with BOS as the vocabulary asks and special tokens parsed; --chat first applies the file's chat
 * template. Prints the prompt's size on stderr. */
uint32_t *text_prompt(llama_text *t, const llama_prompt *p, int64_t *n);
/* 1 if id ends generation (EOS, end of turn) by the vocabulary; 0 without one. */
int text_is_eog(const llama_text *t, uint32_t id);
/* Writes the text of generated token id to stdout as it comes (whole UTF-8 characters; without a
 * tokenizer: the id and its vocabulary string). */
void text_put(llama_text *t, uint32_t id);
/* Ends the output: what is held, and a newline. */
void text_end(llama_text *t);

#endif
