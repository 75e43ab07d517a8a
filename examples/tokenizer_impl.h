/* tokenizer_impl.h: the inside of examples/tokenizer*.c (the vocabulary, its hash tables, the
 * pre-tokenizer), shared by those files only; programs include tokenizer.h. */
#ifndef WICK_TOKENIZER_IMPL_H
#define WICK_TOKENIZER_IMPL_H

#include "tokenizer.h"

#include <stdint.h>

/* Token attributes, as llama.cpp's llama_token_attr (bits; tokenizer.ggml.token_type gives one). */
enum {
    TOK_ATTR_UNKNOWN = 1 << 0,
    TOK_ATTR_UNUSED = 1 << 1,
    TOK_ATTR_NORMAL = 1 << 2,
    TOK_ATTR_CONTROL = 1 << 3,
    TOK_ATTR_USER_DEFINED = 1 << 4,
    TOK_ATTR_BYTE = 1 << 5,
    TOK_ATTR_LSTRIP = 1 << 7,
    TOK_ATTR_RSTRIP = 1 << 8,
};

typedef enum tok_kind { TOK_KIND_SPM, TOK_KIND_BPE } tok_kind;

/* A grown byte string. */
typedef struct tok_buf {
    char *p;
    size_t n, cap;
} tok_buf;
int tok_buf_put(tok_buf *b, const void *s, size_t n); /* 0, or -1 out of memory */

/* Open addressing over byte strings: slots hold entry indices (+1; 0 is empty). */
typedef struct tok_map {
    uint32_t *slot;
    uint32_t mask;
} tok_map;
uint32_t tok_hash(const void *s, size_t n, uint32_t h); /* FNV-1a, continuing from h */
#define TOK_HASH_SEED 2166136261u

/* The pre-tokenizer of a byte-level BPE vocabulary: its regexes (PCRE2), applied in turn, each
 * splitting every piece so far into matches and the gaps between them. */
typedef struct tok_pre tok_pre;

struct tok_vocab {
    tok_kind kind;
    char describe[256];
    int32_t n;
    char *arena;          /* the token texts, each NUL-terminated */
    uint32_t *off, *len;  /* token id -> its text in arena */
    float *score;
    uint16_t *attr;
    char *pieces;         /* token id -> its piece (tok_piece with special) */
    uint32_t *poff, *plen;
    tok_map tokens;       /* text -> id (a later duplicate wins, as llama.cpp's map) */
    /* merges (BPE): "first second" strings, split at the first space after byte 0 */
    char *marena;
    uint32_t *moff, *mlen, *msplit;
    int32_t n_merges;
    tok_map merges;       /* (first, second) -> rank */
    int32_t *special;     /* control / user-defined / unknown ids, longest text first */
    int32_t n_special;
    int32_t bos, eos, eot, eom, unk;
    int32_t *eog;         /* end-of-generation ids */
    int32_t n_eog;
    int add_bos, add_eos, add_space_prefix, clean_spaces, escape_spaces, ignore_merges;
    int byte_encode;      /* GPT-2's byte-to-character mapping (gpt2), not raw UTF-8 (gemma4) */
    int newline_words;    /* gemma4: a word of newlines only is one token when the vocab has it */
    int force_bos;        /* gemma4: BOS whatever add_bos_token says (as llama.cpp) */
    tok_pre *pre;
};

int32_t tok_find_pair(const tok_vocab *v, const char *a, size_t na, const char *b, size_t nb);
const char *tok_text(const tok_vocab *v, int32_t id, size_t *len);

/* A list of token ids being built. */
typedef struct tok_ids {
    int32_t *p;
    size_t n, cap;
} tok_ids;
int tok_ids_push(tok_ids *o, int32_t id); /* 0, or -1 out of memory */

/* Encoders of one piece of text (no special tokens inside): append to out; 0 or -1 (err). */
int tok_spm_encode(const tok_vocab *v, const char *text, size_t n, tok_ids *out, char *err,
                   size_t cap);
int tok_bpe_encode(const tok_vocab *v, const char *text, size_t n, tok_ids *out, char *err,
                   size_t cap);

/* GPT-2's byte <-> character mapping: out <- the UTF-8 of byte b's character (returns its
 * length, 1 or 2), and the byte of code point cp (-1 when cp is no byte's character). */
size_t tok_byte_char(uint8_t b, char out[2]);
int tok_char_byte(uint32_t cp);
/* UTF-8: the length of a character from its first byte, as llama.cpp counts (1 for a
 * continuation byte); and a strict decoder: the code point at s (n > 0 bytes) and its length,
 * or -1 when s does not start with a valid character. */
size_t tok_utf8_len(uint8_t first);
int32_t tok_utf8_decode(const unsigned char *s, size_t n, size_t *len);

/* Pre-tokenizers (examples/tokenizer_pre.c). tok_pre_new: for a `pre` value, the regexes and the
 * flags llama.cpp sets for it (clean_spaces, ignore_merges, add_bos, ...) on v; -1 with err when
 * the value is unknown or needs a pre-tokenizer this example lacks. */
int tok_pre_new(tok_vocab *v, const char *pre, char *err, size_t cap);
void tok_pre_free(tok_pre *p);
/* Compiles every regex of every pre value (a check for tests): how many, or -1 with err. */
int tok_pre_compile_all(char *err, size_t cap);
/* Calls word(ctx, s, n) for each word of text (n bytes of valid UTF-8), in order. Returns 0,
 * or -1 with err (PCRE2 failed, or word returned -1). */
int tok_pre_split(const tok_pre *p, const char *text, size_t n,
                  int (*word)(void *ctx, const char *s, size_t n), void *ctx, char *err,
                  size_t cap);

#endif
