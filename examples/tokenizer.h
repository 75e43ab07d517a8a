/* tokenizer.h: the tokenizer of a GGUF file (examples/tokenizer*.c), what llama.cpp's
 * src/llama-vocab.cpp does with the same metadata, on wick's public GGUF reader only:
 *   - `llama` (SentencePiece): pieces merged by score, U+2581 for spaces, a leading space,
 *     byte fallback to <0xXX> tokens;
 *   - `gpt2` (byte-level BPE): the pre-tokenizer regexes of the file's tokenizer.ggml.pre
 *     (examples/tokenizer_pre.c, PCRE2), bytes mapped to GPT-2's printable characters, merges
 *     applied by rank;
 *   - `gemma4`: BPE on raw UTF-8 with U+2581 for spaces and <0xXX> byte fallback.
 * Special tokens (control, user-defined) written in the text are cut out first, as llama.cpp's
 * tokenizer_st_partition does. Any other tokenizer kind (bert, t5, rwkv, ...) is refused with a
 * message naming it. Every count and id read from the file is checked: a malformed vocabulary
 * is an error, never an out-of-bounds access. */
#ifndef WICK_TOKENIZER_H
#define WICK_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <wick.h>

typedef struct tok_vocab tok_vocab;

/* *out: the tokenizer of the open file g (copies what it needs: g may be closed after). Returns
 * 0, or -1 with the reason in err (cap bytes), e.g. "tokenizer.ggml.model 'bert' (WordPiece) is
 * not supported". */
int tok_vocab_load(tok_vocab **out, const wk_gguf *g, char *err, size_t cap);
void tok_vocab_free(tok_vocab *v); /* NULL is a no-op */

int32_t tok_vocab_size(const tok_vocab *v);
/* "llama (SentencePiece)", "gpt2 (byte-level BPE, pre 'llama-bpe')", ... */
const char *tok_vocab_describe(const tok_vocab *v);
int32_t tok_bos(const tok_vocab *v); /* -1 when the vocabulary has none */
int32_t tok_eos(const tok_vocab *v);
int tok_adds_bos(const tok_vocab *v); /* tokenizer.ggml.add_bos_token, or the kind's default */
/* 1 if generation ends at id: EOS, EOT, EOM and the end-of-turn tokens llama.cpp names by text
 * (<|eot_id|>, <|im_end|>, <|end|>, <end_of_turn>, <|endoftext|>, ...). */
int tok_is_eog(const tok_vocab *v, int32_t id);
/* The id of the token whose text is exactly s (n bytes), or -1. */
int32_t tok_find(const tok_vocab *v, const char *s, size_t n);

/* *ids (malloc'ed, *n_ids of them) <- the tokens of text (n bytes, any bytes). add_special: BOS
 * (and EOS) as the vocabulary asks; parse_special: control tokens written in the text become
 * their ids (user-defined tokens always do). Returns 0, or -1 with the reason in err. */
int tok_encode(const tok_vocab *v, const char *text, size_t n, int add_special, int parse_special,
               int32_t **ids, size_t *n_ids, char *err, size_t cap);

/* The bytes of token id as generated text (*len of them, not NUL-terminated; valid while v
 * lives): byte tokens give their byte, SentencePiece's U+2581 a space, GPT-2's byte characters
 * their bytes; control and unknown tokens give "" unless special. NULL for an id out of range. */
const char *tok_piece(const tok_vocab *v, int32_t id, int special, size_t *len);

/* The text of ids as llama.cpp's llama_detokenize gives it (remove_special false): the pieces
 * joined, one leading space dropped where the vocabulary adds one, and with clean (BPE
 * vocabularies whose pre-tokenizer asks for it) the space before ? ! . , and in " 's" " 'm" " 're"
 * " 've" and around " ' " removed. Malloc'ed, NUL-terminated (*len bytes before the NUL); NULL on
 * out of memory or an id out of range. */
char *tok_decode(const tok_vocab *v, const int32_t *ids, size_t n, int special, int clean,
                 size_t *len);

/* Streaming output: pieces go in as they are generated; what comes out is whole UTF-8
 * characters, a character split over several tokens (byte fallback) held until complete. */
typedef struct tok_stream {
    unsigned char held[4];
    int n;
} tok_stream;
/* Writes the complete characters of held + piece to f, keeps an incomplete tail. Bytes that
 * can never start or continue a character are written as they are. */
void tok_stream_put(tok_stream *s, const char *piece, size_t len, FILE *f);
/* Writes what is held (an incomplete character at the end of generation) and clears it. */
void tok_stream_flush(tok_stream *s, FILE *f);

#endif
