/* wordpiece.h: BERT's uncased WordPiece tokenizer in C (examples/wordpiece.c), what Hugging Face
 * `tokenizers` does for bert-base-uncased-style models (BertNormalizer with clean_text,
 * handle_chinese_chars, strip_accents and lowercase; BertPreTokenizer; WordPiece with "##"
 * continuations, [UNK], at most 100 characters a word; [CLS] ... [SEP] around the result). No
 * dependency beyond the C library; Unicode facts from examples/unicode_tables.h. */
#ifndef WICK_WORDPIECE_H
#define WICK_WORDPIECE_H

#include <stddef.h>
#include <stdint.h>

typedef struct wp_vocab wp_vocab;

/* *out: vocab.txt loaded (one token a line; the id is the line number). Returns 0, or -1 with a
 * message in err (cap bytes). */
int wp_vocab_load(wp_vocab **out, const char *path, char *err, int cap);
void wp_vocab_free(wp_vocab *v);
int32_t wp_vocab_size(const wp_vocab *v);
/* The id of token s, or -1. */
int32_t wp_vocab_find(const wp_vocab *v, const char *s, int len);

/* ids <- [CLS] tokens of text [SEP], truncated to max_len ids in all (max_len >= 2: the tokens
 * past max_len - 2 are dropped, [SEP] stays last). text: n bytes of UTF-8 (NUL bytes allowed;
 * clean_text removes them); bytes that are not valid UTF-8 are read as U+FFFD, which clean_text
 * removes too. The special tokens [PAD] [UNK] [CLS] [SEP] [MASK] written in the text become their
 * ids, as in `tokenizers`. Returns the number of ids, or -1 if the vocabulary lacks [CLS], [SEP]
 * or [UNK], or memory runs out. */
int wp_encode(const wp_vocab *v, const char *text, size_t n, int32_t *ids, int max_len);

#endif
