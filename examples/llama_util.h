/* llama_util.h: helpers of examples/llama.c (errors, layouts, GGUF metadata, sampling, token
 * printing, id lists), on the public API only. */
#ifndef LLAMA_UTIL_H
#define LLAMA_UTIL_H

#include <wick.h>

/* ---- errors: an example program prints why and exits 1 */
void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void ck(wk_status s, const char *what); /* dies with the status and wk_last_error() */
/* Every call through CK is timed while a profile is on (prof_on): under its function's name, or
 * under `label` with CKL. */
#define CK(call) CKL(NULL, call)
#define CKL(label, call)                      \
    do {                                      \
        const double t_ = prof_begin();       \
        ck((call), #call);                    \
        prof_end(t_, (label), #call);         \
    } while (0)
double now_s(void); /* monotonic seconds */

/* ---- --profile: wall time per op while on, the devices synchronised before and after each
 * call (so on a GPU each op's time is its kernels' time plus one launch, and nothing overlaps);
 * never while a graph is being captured. */
void prof_on(wk_device *const *devs, int n); /* starts a profile (clears the last one) */
void prof_off(void);
/* Prints the profile of the calls since prof_on: per op, calls, total ms, share, us per call. */
void prof_print(const char *title);
double prof_begin(void);
void prof_end(double t0, const char *label, const char *call);

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
