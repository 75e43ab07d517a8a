/* llama_util.h: helpers of examples/llama.c (errors, layouts, GGUF metadata, sampling, token
 * printing, id lists), on the public API only. */
#ifndef LLAMA_UTIL_H
#define LLAMA_UTIL_H

#include <wick.h>

/* ---- errors: an example program prints why and exits 1 */
void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void ck(wk_status s, const char *what); /* dies with the status and wk_last_error() */
#define CK(call) ck((call), #call)
double now_s(void); /* monotonic seconds */

/* ---- layouts */
wk_layout lay(int32_t rank, const int64_t *dims); /* contiguous */
wk_layout lay1(int64_t a);
wk_layout lay2(int64_t a, int64_t b);
wk_layout lay3(int64_t a, int64_t b, int64_t c);
/* A strided view: rank dims with the given strides (elements) and offset. */
wk_layout view(int32_t rank, const int64_t *dims, const int64_t *strides, int64_t offset);

/* ---- GGUF metadata */
/* An integer key of any integer type; def when absent (required: dies). */
int64_t meta_int(const wk_gguf *g, const char *key, int64_t def, int required);
/* An f32 or f64 key; def when absent. */
double meta_float(const wk_gguf *g, const char *key, double def);
/* The tensor's index; -1 when absent (required: dies). */
int64_t find_tensor(const wk_gguf *g, const char *name, int required);

/* ---- sampling */
uint64_t rng_next(uint64_t *st); /* splitmix64 */
double rng_uniform(uint64_t *st); /* [0, 1) */
uint32_t argmax(const float *x, int64_t n); /* the first maximum */
/* temp <= 0: greedy. Else softmax(logits / temp) restricted to the smallest set of most likely
 * tokens whose probability reaches top_p (nucleus), renormalised, drawn with rng. */
uint32_t sample(const float *logits, int64_t n, double temp, double top_p, uint64_t *rng);

/* ---- tokens */
/* Prints id, and its string from tokenizer.ggml.tokens (kv pair tokens_kv, or -1: none). */
void print_token(const wk_gguf *g, int64_t tokens_kv, uint32_t id);
/* Token ids separated by spaces or commas (malloc'ed); *n gets the count. */
uint32_t *parse_ids(const char *s, int64_t *n);

#endif
