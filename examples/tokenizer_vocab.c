/* tokenizer_vocab.c: a GGUF file's vocabulary read into a tok_vocab (tokenizer_impl.h), with the
 * defaults, attributes and special ids llama.cpp's llama_vocab::impl::load gives it:
 *   - tokenizer.ggml.model: llama (SentencePiece), gpt2 (byte-level BPE), gemma4 (BPE on UTF-8);
 *     any other kind is refused, naming it;
 *   - tokenizer.ggml.tokens (strings; an empty one is renamed [EMPTY_i]), .scores (f32 or i32),
 *     .token_type (i32: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte),
 *     .merges (BPE: "first second", rank = index; the first of equal pairs wins);
 *   - bos/eos/eot/eom/unknown_token_id (an id out of range keeps the default), add_bos_token,
 *     add_eos_token, add_space_prefix; the end-of-turn and fill-in-the-middle tokens llama.cpp
 *     recognises by text become control tokens, and the end-of-generation set is built as there.
 * Every array is checked for type and count before it is read. */
#include "tokenizer_impl.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static int fail(char *err, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && cap)
        vsnprintf(err, cap, fmt, ap);
    va_end(ap);
    return -1;
}

/* ------------------------------------------------------------------ small containers */
int tok_buf_put(tok_buf *b, const void *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p)
            return -1;
        b->p = p;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
    return 0;
}

int tok_ids_push(tok_ids *o, int32_t id)
{
    if (o->n == o->cap) {
        const size_t cap = o->cap ? 2 * o->cap : 64;
        int32_t *p = realloc(o->p, cap * sizeof *p);
        if (!p)
            return -1;
        o->p = p;
        o->cap = cap;
    }
    o->p[o->n++] = id;
    return 0;
}

uint32_t tok_hash(const void *s, size_t n, uint32_t h)
{
    const unsigned char *p = s;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

/* Room for n entries at most half full. */
static int map_init(tok_map *m, size_t n)
{
    size_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    m->slot = calloc(cap, sizeof *m->slot);
    m->mask = (uint32_t)(cap - 1);
    return m->slot ? 0 : -1;
}

const char *tok_text(const tok_vocab *v, int32_t id, size_t *len)
{
    *len = v->len[id];
    return v->arena + v->off[id];
}

int32_t tok_find(const tok_vocab *v, const char *s, size_t n)
{
    const uint32_t mask = v->tokens.mask;
    for (uint32_t i = tok_hash(s, n, TOK_HASH_SEED) & mask;; i = (i + 1) & mask) {
        const uint32_t e = v->tokens.slot[i];
        if (!e)
            return -1;
        const int32_t id = (int32_t)(e - 1);
        if (v->len[id] == n && memcmp(v->arena + v->off[id], s, n) == 0)
            return id;
    }
}

/* Token id's text is the map's key; a later id with the same text replaces an earlier one. */
static void map_token(tok_vocab *v, int32_t id)
{
    const char *s = v->arena + v->off[id];
    for (uint32_t i = tok_hash(s, v->len[id], TOK_HASH_SEED) & v->tokens.mask;;
         i = (i + 1) & v->tokens.mask) {
        const uint32_t e = v->tokens.slot[i];
        if (!e || (v->len[e - 1] == v->len[id] &&
                   memcmp(v->arena + v->off[e - 1], s, v->len[id]) == 0)) {
            v->tokens.slot[i] = (uint32_t)id + 1;
            return;
        }
    }
}

static uint32_t pair_hash(const char *a, size_t na, const char *b, size_t nb)
{
    return tok_hash(b, nb, tok_hash(a, na, TOK_HASH_SEED) * 31u + 7u);
}

int32_t tok_find_pair(const tok_vocab *v, const char *a, size_t na, const char *b, size_t nb)
{
    if (!v->merges.slot)
        return -1;
    for (uint32_t i = pair_hash(a, na, b, nb) & v->merges.mask;; i = (i + 1) & v->merges.mask) {
        const uint32_t e = v->merges.slot[i];
        if (!e)
            return -1;
        const uint32_t r = e - 1;
        const char *s = v->marena + v->moff[r];
        if (v->msplit[r] == na && v->mlen[r] - v->msplit[r] - 1 == nb && memcmp(s, a, na) == 0 &&
            memcmp(s + na + 1, b, nb) == 0)
            return (int32_t)r;
    }
}

/* Merge r is the map's key (first, second); an equal earlier pair keeps its rank. */
static void map_merge(tok_vocab *v, uint32_t r)
{
    const char *s = v->marena + v->moff[r];
    const size_t na = v->msplit[r], nb = v->mlen[r] - na - 1;
    if (tok_find_pair(v, s, na, s + na + 1, nb) >= 0)
        return;
    const uint32_t mask = v->merges.mask;
    for (uint32_t i = pair_hash(s, na, s + na + 1, nb) & mask;; i = (i + 1) & mask)
        if (!v->merges.slot[i]) {
            v->merges.slot[i] = r + 1;
            return;
        }
}

/* ------------------------------------------------------------------ metadata */
/* The array of key (elements of type et, at least min of them); -1 with err when it is absent
 * (required) or malformed; 1 when absent and optional. */
static int get_array(wk_gguf_value *out, uint64_t *count, const wk_gguf *g, const char *key,
                     wk_gguf_type et, wk_gguf_type et2, uint64_t min, int required, char *err,
                     size_t cap)
{
    const int64_t k = wk_gguf_find_key(g, key);
    if (k < 0)
        return required ? fail(err, cap, "the file has no %s", key) : 1;
    wk_gguf_type t;
    if (wk_gguf_kv_value(out, g, k) != WK_OK || wk_gguf_array_info(&t, count, *out) != WK_OK ||
        (t != et && t != et2))
        return fail(err, cap, "%s is not an array of %s", key, wk_gguf_type_name(et));
    if (*count < min)
        return fail(err, cap, "%s has %llu elements, fewer than the %llu tokens", key,
                    (unsigned long long)*count, (unsigned long long)min);
    return 0;
}

/* The string of key: *s, *n (not NUL-terminated); 0, or -1 when absent or not a string. */
static int get_string(const char **s, uint64_t *n, const wk_gguf *g, const char *key)
{
    const int64_t k = wk_gguf_find_key(g, key);
    wk_gguf_value v;
    if (k < 0 || wk_gguf_kv_value(&v, g, k) != WK_OK || wk_gguf_get_string(s, n, v) != WK_OK)
        return -1;
    return 0;
}

/* *b <- the bool of key when it is there and a bool (else *b unchanged). */
static void get_bool(int *b, const wk_gguf *g, const char *key)
{
    const int64_t k = wk_gguf_find_key(g, key);
    wk_gguf_value v;
    int x;
    if (k >= 0 && wk_gguf_kv_value(&v, g, k) == WK_OK && wk_gguf_get_bool(&x, v) == WK_OK)
        *b = x;
}

/* The unsigned integer of key (any integer type, as llama.cpp's get_key converts), or -1 when
 * absent, negative or not an integer. */
static int64_t get_uint(const wk_gguf *g, const char *key)
{
    const int64_t k = wk_gguf_find_key(g, key);
    wk_gguf_value v;
    if (k < 0 || wk_gguf_kv_value(&v, g, k) != WK_OK)
        return -1;
    union { uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32;
            uint64_t u64; int64_t i64; } x;
    switch (wk_gguf_value_type(v)) {
    case WK_GGUF_TYPE_U8: return wk_gguf_get_u8(&x.u8, v) ? -1 : (int64_t)x.u8;
    case WK_GGUF_TYPE_I8: return wk_gguf_get_i8(&x.i8, v) ? -1 : (int64_t)x.i8;
    case WK_GGUF_TYPE_U16: return wk_gguf_get_u16(&x.u16, v) ? -1 : (int64_t)x.u16;
    case WK_GGUF_TYPE_I16: return wk_gguf_get_i16(&x.i16, v) ? -1 : (int64_t)x.i16;
    case WK_GGUF_TYPE_U32: return wk_gguf_get_u32(&x.u32, v) ? -1 : (int64_t)x.u32;
    case WK_GGUF_TYPE_I32: return wk_gguf_get_i32(&x.i32, v) ? -1 : (int64_t)x.i32;
    case WK_GGUF_TYPE_U64:
        return wk_gguf_get_u64(&x.u64, v) || x.u64 > INT64_MAX ? -1 : (int64_t)x.u64;
    case WK_GGUF_TYPE_I64: return wk_gguf_get_i64(&x.i64, v) ? -1 : (int64_t)x.i64;
    default: return -1;
    }
}

/* *id <- key's id when it is in [0, n); a default out of range becomes -1 (none). */
static void get_special(int32_t *id, const wk_gguf *g, const char *key, int32_t n)
{
    if (*id >= n)
        *id = -1;
    const int64_t x = get_uint(g, key);
    if (x >= 0 && x < n)
        *id = (int32_t)x;
}

/* ------------------------------------------------------------------ tokens */
static int read_tokens(tok_vocab *v, const wk_gguf *g, char *err, size_t cap)
{
    wk_gguf_value arr, e;
    uint64_t count = 0;
    if (get_array(&arr, &count, g, "tokenizer.ggml.tokens", WK_GGUF_TYPE_STRING,
                  WK_GGUF_TYPE_STRING, 1, 1, err, cap))
        return -1;
    if (count > INT32_MAX / 2)
        return fail(err, cap, "tokenizer.ggml.tokens: %llu tokens is too many",
                    (unsigned long long)count);
    v->n = (int32_t)count;
    v->off = malloc(count * sizeof *v->off);
    v->len = malloc(count * sizeof *v->len);
    v->score = calloc(count, sizeof *v->score);
    v->attr = malloc(count * sizeof *v->attr);
    tok_buf a = {0};
    if (!v->off || !v->len || !v->score || !v->attr)
        return fail(err, cap, "out of memory");
    for (uint64_t i = 0; i < count; i++) {
        const char *s;
        uint64_t n;
        char empty[32];
        if (wk_gguf_array_elem(&e, arr, i) != WK_OK || wk_gguf_get_string(&s, &n, e) != WK_OK) {
            free(a.p);
            return fail(err, cap, "tokenizer.ggml.tokens[%llu] is unreadable",
                        (unsigned long long)i);
        }
        if (n == 0) { /* as llama.cpp: an empty token is renamed */
            n = (uint64_t)snprintf(empty, sizeof empty, "[EMPTY_%llu]", (unsigned long long)i);
            s = empty;
        }
        if (n > UINT32_MAX / 2 || a.n + n + 1 > UINT32_MAX) {
            free(a.p);
            return fail(err, cap, "tokenizer.ggml.tokens: the texts are too long");
        }
        v->off[i] = (uint32_t)a.n;
        v->len[i] = (uint32_t)n;
        if (tok_buf_put(&a, s, n) || tok_buf_put(&a, "", 1)) {
            free(a.p);
            return fail(err, cap, "out of memory");
        }
    }
    v->arena = a.p;
    if (map_init(&v->tokens, count))
        return fail(err, cap, "out of memory");
    for (int32_t i = 0; i < v->n; i++)
        map_token(v, i);
    return 0;
}

/* Scores (f32 or i32) and token types (i32): optional; all normal without types. */
static int read_scores_types(tok_vocab *v, const wk_gguf *g, char *err, size_t cap)
{
    wk_gguf_value arr;
    uint64_t count;
    const void *data;
    const uint64_t n = (uint64_t)v->n;
    int r = get_array(&arr, &count, g, "tokenizer.ggml.scores", WK_GGUF_TYPE_F32, WK_GGUF_TYPE_I32,
                      n, 0, err, cap);
    if (r < 0)
        return -1;
    if (r == 0) {
        wk_gguf_type t;
        if (wk_gguf_array_info(&t, &count, arr) != WK_OK || wk_gguf_array_data(&data, arr) != WK_OK)
            return fail(err, cap, "tokenizer.ggml.scores is unreadable");
        for (uint64_t i = 0; i < n; i++) {
            if (t == WK_GGUF_TYPE_F32) {
                memcpy(&v->score[i], (const char *)data + 4 * i, 4);
            } else {
                int32_t x;
                memcpy(&x, (const char *)data + 4 * i, 4);
                v->score[i] = (float)x;
            }
        }
    }
    r = get_array(&arr, &count, g, "tokenizer.ggml.token_type", WK_GGUF_TYPE_I32, WK_GGUF_TYPE_I32,
                  n, 0, err, cap);
    if (r < 0)
        return -1;
    static const uint16_t attr_of_type[7] = {0, TOK_ATTR_NORMAL, TOK_ATTR_UNKNOWN, TOK_ATTR_CONTROL,
                                             TOK_ATTR_USER_DEFINED, TOK_ATTR_UNUSED, TOK_ATTR_BYTE};
    if (r == 0 && wk_gguf_array_data(&data, arr) != WK_OK)
        return fail(err, cap, "tokenizer.ggml.token_type is unreadable");
    for (uint64_t i = 0; i < n; i++) {
        int32_t t = 1;
        if (r == 0)
            memcpy(&t, (const char *)data + 4 * i, 4);
        v->attr[i] = t >= 0 && t < 7 ? attr_of_type[t] : 0; /* other values: undefined */
    }
    return 0;
}

static int read_merges(tok_vocab *v, const wk_gguf *g, char *err, size_t cap)
{
    wk_gguf_value arr, e;
    uint64_t count;
    if (get_array(&arr, &count, g, "tokenizer.ggml.merges", WK_GGUF_TYPE_STRING,
                  WK_GGUF_TYPE_STRING, 0, 1, err, cap))
        return -1;
    if (count > INT32_MAX / 2)
        return fail(err, cap, "tokenizer.ggml.merges: %llu merges is too many",
                    (unsigned long long)count);
    v->n_merges = (int32_t)count;
    v->moff = malloc((count + 1) * sizeof *v->moff);
    v->mlen = malloc((count + 1) * sizeof *v->mlen);
    v->msplit = malloc((count + 1) * sizeof *v->msplit);
    if (!v->moff || !v->mlen || !v->msplit || map_init(&v->merges, count))
        return fail(err, cap, "out of memory");
    tok_buf a = {0};
    for (uint64_t i = 0; i < count; i++) {
        const char *s;
        uint64_t n;
        if (wk_gguf_array_elem(&e, arr, i) != WK_OK || wk_gguf_get_string(&s, &n, e) != WK_OK ||
            n > UINT32_MAX / 2 || a.n + n + 1 > UINT32_MAX) {
            free(a.p);
            return fail(err, cap, "tokenizer.ggml.merges[%llu] is unreadable",
                        (unsigned long long)i);
        }
        const char *sp = n > 1 ? memchr(s + 1, ' ', n - 1) : NULL; /* as llama.cpp: from byte 1 */
        v->moff[i] = (uint32_t)a.n;
        v->mlen[i] = (uint32_t)n;
        v->msplit[i] = sp ? (uint32_t)(sp - s) : UINT32_MAX;
        if (tok_buf_put(&a, s, n) || tok_buf_put(&a, "", 1)) {
            free(a.p);
            return fail(err, cap, "out of memory");
        }
    }
    v->marena = a.p ? a.p : calloc(1, 1);
    if (!v->marena)
        return fail(err, cap, "out of memory");
    for (uint32_t r = 0; r < (uint32_t)count; r++)
        if (v->msplit[r] != UINT32_MAX) /* a merge without a space can never apply */
            map_merge(v, r);
    return 0;
}

/* ------------------------------------------------------------------ kinds and special tokens */
/* The kind of tokenizer.ggml.model and its defaults (llama.cpp's load); -1 naming it when this
 * example has no tokenizer of that kind. */
static int read_kind(tok_vocab *v, const wk_gguf *g, char *model, size_t mcap, char *err,
                     size_t cap)
{
    const char *s;
    uint64_t n;
    if (get_string(&s, &n, g, "tokenizer.ggml.model"))
        return fail(err, cap, "the file has no tokenizer (tokenizer.ggml.model)");
    snprintf(model, mcap, "%.*s", (int)(n < 64 ? n : 64), s);
    v->bos = v->eos = v->eot = v->eom = v->unk = -1;
    if (!strcmp(model, "llama")) {
        v->kind = TOK_KIND_SPM;
        v->bos = 1;
        v->eos = 2;
        v->unk = 0;
        v->add_space_prefix = 1;
        v->add_bos = 1;
        return 0;
    }
    if (!strcmp(model, "gpt2") || !strcmp(model, "gemma4")) {
        v->kind = TOK_KIND_BPE;
        if (!strcmp(model, "gpt2"))
            v->bos = v->eos = 11;
        v->clean_spaces = 1;
        v->byte_encode = 1;
        return 0;
    }
    static const char *const names[][2] = {
        {"bert", "WordPiece"}, {"t5", "Unigram"}, {"rwkv", "RWKV"}, {"plamo2", "PLaMo-2"},
        {"hybriddna", "DNA k-mer BPE"}, {"whitespace", "whitespace BPE"}, {"no_vocab", "none"},
        {"none", "none"}, {"test", "test"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(model, names[i][0]))
            return fail(err, cap,
                        "tokenizer.ggml.model '%s' (%s) is not supported by this example's "
                        "tokenizer (supported: llama, gpt2, gemma4)", model, names[i][1]);
    return fail(err, cap, "tokenizer.ggml.model '%s' is unknown (supported: llama, gpt2, gemma4)",
                model);
}

/* The texts llama.cpp recognises special tokens by (llama-vocab.cpp, 0c1e570). BAR is U+FF5C
 * (DeepSeek's fullwidth bar), SP U+2581. */
#define BAR "\xef\xbd\x9c"
#define SP "\xe2\x96\x81"
static const char *const eot_texts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
    "<EOT>", "_<EOT>", "[EOT]", "<" BAR "end" SP "of" SP "sentence" BAR ">", "<end_of_utterance>",
    NULL};
static const char *const eom_texts[] = {"<|eom_id|>", NULL};
static const char *const fim_pre_texts[] = {
    "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<" BAR "fim" SP "begin" BAR ">", "<PRE>",
    SP "<PRE>", "<|code_prefix|>", "<|prefix|>", NULL};
static const char *const fim_suf_texts[] = {
    "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<" BAR "fim" SP "hole" BAR ">", "<SUF>",
    SP "<SUF>", "<|code_suffix|>", "<|suffix|>", NULL};
static const char *const fim_mid_texts[] = {
    "<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<" BAR "fim" SP "end" BAR ">", "<MID>",
    SP "<MID>", "<|code_middle|>", "<|middle|>", NULL};
static const char *const fim_pad_texts[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>",
                                            "[PAD]", NULL};
static const char *const fim_rep_texts[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>",
                                            "<REPO>", "<reponame>", NULL};
static const char *const fim_sep_texts[] = {"<|file_sep|>", NULL};
static const char *const eog_texts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<" BAR "end" SP "of" SP "sentence" BAR ">", "[e~[", NULL};
#undef BAR
#undef SP

/* Text order of two tokens (bytes, then length), as llama.cpp's std::map of texts. */
static int text_cmp(const tok_vocab *v, int32_t a, int32_t b)
{
    const size_t na = v->len[a], nb = v->len[b];
    const int c = memcmp(v->arena + v->off[a], v->arena + v->off[b], na < nb ? na : nb);
    return c ? c : (na > nb) - (na < nb);
}

/* *id <- the first token (in the order of the texts, as llama.cpp walks its map) whose text is
 * in list, when *id is none; that token becomes a control token. */
static void detect(tok_vocab *v, int32_t *id, const char *const *list)
{
    int32_t best = -1;
    for (int i = 0; list[i]; i++) {
        const int32_t t = tok_find(v, list[i], strlen(list[i]));
        if (t >= 0 && (best < 0 || text_cmp(v, t, best) < 0))
            best = t;
    }
    if (*id < 0 && best >= 0) {
        *id = best;
        v->attr[best] |= TOK_ATTR_CONTROL;
    }
}

static int add_eog(tok_vocab *v, int32_t id)
{
    if (id < 0)
        return 0;
    for (int32_t i = 0; i < v->n_eog; i++)
        if (v->eog[i] == id)
            return 0;
    int32_t *p = realloc(v->eog, (size_t)(v->n_eog + 1) * sizeof *p);
    if (!p)
        return -1;
    v->eog = p;
    v->eog[v->n_eog++] = id;
    return 0;
}

/* Whether an end-of-generation token has text s. */
static int eog_has(const tok_vocab *v, const char *s)
{
    const int32_t t = tok_find(v, s, strlen(s));
    return t >= 0 && tok_is_eog(v, t);
}

/* Takes the token of text s out of the end-of-generation set; its attribute becomes attr. */
static void eog_drop(tok_vocab *v, const char *s, uint16_t attr)
{
    const int32_t t = tok_find(v, s, strlen(s));
    for (int32_t i = 0; t >= 0 && i < v->n_eog; i++)
        if (v->eog[i] == t) {
            v->eog[i] = v->eog[--v->n_eog];
            v->attr[t] = attr;
            return;
        }
}

/* Special ids, add_bos/add_eos, the end-of-turn and fill-in-the-middle tokens by text, unused
 * control tokens, and the end-of-generation set. */
static int read_specials(tok_vocab *v, const wk_gguf *g, char *err, size_t cap)
{
    const int32_t n = v->n;
    get_special(&v->bos, g, "tokenizer.ggml.bos_token_id", n);
    get_special(&v->eos, g, "tokenizer.ggml.eos_token_id", n);
    get_special(&v->eot, g, "tokenizer.ggml.eot_token_id", n);
    get_special(&v->eom, g, "tokenizer.ggml.eom_token_id", n);
    get_special(&v->unk, g, "tokenizer.ggml.unknown_token_id", n);
    int32_t fim[6] = {-1, -1, -1, -1, -1, -1};
    static const char *const fim_keys[6] = {
        "tokenizer.ggml.fim_pre_token_id", "tokenizer.ggml.fim_suf_token_id",
        "tokenizer.ggml.fim_mid_token_id", "tokenizer.ggml.fim_pad_token_id",
        "tokenizer.ggml.fim_rep_token_id", "tokenizer.ggml.fim_sep_token_id"};
    for (int i = 0; i < 6; i++)
        get_special(&fim[i], g, fim_keys[i], n);
    get_bool(&v->add_bos, g, "tokenizer.ggml.add_bos_token");
    get_bool(&v->add_eos, g, "tokenizer.ggml.add_eos_token");
    if (v->force_bos)
        v->add_bos = 1;
    detect(v, &v->eot, eot_texts);
    detect(v, &v->eom, eom_texts);
    static const char *const *const fim_texts[6] = {fim_pre_texts, fim_suf_texts, fim_mid_texts,
                                                    fim_pad_texts, fim_rep_texts, fim_sep_texts};
    for (int i = 0; i < 6; i++)
        detect(v, &fim[i], fim_texts[i]);
    for (int32_t i = 0; i < n; i++) /* control tokens named "unused" are unused */
        if ((v->attr[i] & TOK_ATTR_CONTROL) && strstr(v->arena + v->off[i], "unused"))
            v->attr[i] |= TOK_ATTR_UNUSED;
    int bad = add_eog(v, fim[3]) || add_eog(v, fim[4]) || add_eog(v, fim[5]);
    for (int i = 0; eog_texts[i]; i++) {
        const int32_t t = tok_find(v, eog_texts[i], strlen(eog_texts[i]));
        if (t >= 0) {
            bad |= add_eog(v, t);
            v->attr[t] |= TOK_ATTR_CONTROL;
        }
    }
    static const char *const shown[] = {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"};
    for (size_t i = 0; i < sizeof shown / sizeof shown[0]; i++) { /* gpt-oss: always shown */
        const int32_t t = tok_find(v, shown[i], strlen(shown[i]));
        if (t >= 0)
            v->attr[t] = TOK_ATTR_USER_DEFINED;
    }
    bad |= add_eog(v, v->eos) || add_eog(v, v->eot) || add_eog(v, v->eom);
    if (bad)
        return fail(err, cap, "out of memory");
    /* as llama.cpp: <|end|> ends no generation beside <|return|> and <|call|> (gpt-oss) or
     * <|calls|> and <|flush|> (solar-open); </s> none beside <|tool_response> or <|plamo:eos|> */
    if ((eog_has(v, "<|return|>") && eog_has(v, "<|call|>")) ||
        (eog_has(v, "<|calls|>") && eog_has(v, "<|flush|>")))
        eog_drop(v, "<|end|>", TOK_ATTR_USER_DEFINED);
    if (eog_has(v, "<|tool_response>") || eog_has(v, "<|plamo:eos|>"))
        eog_drop(v, "</s>", TOK_ATTR_NORMAL);
    return 0;
}

/* Control, user-defined and unknown tokens, longest text first (ties by id): the order the
 * special-token partition tries them in. */
typedef struct len_id {
    uint32_t len;
    int32_t id;
} len_id;

static int by_len_desc(const void *pa, const void *pb)
{
    const len_id *a = pa, *b = pb;
    if (a->len != b->len)
        return a->len < b->len ? 1 : -1;
    return (a->id > b->id) - (a->id < b->id);
}

static int build_special(tok_vocab *v)
{
    len_id *l = malloc((size_t)v->n * sizeof *l);
    v->special = malloc((size_t)v->n * sizeof *v->special);
    if (!l || !v->special) {
        free(l);
        return -1;
    }
    int32_t k = 0;
    for (int32_t i = 0; i < v->n; i++)
        if (v->attr[i] & (TOK_ATTR_CONTROL | TOK_ATTR_USER_DEFINED | TOK_ATTR_UNKNOWN))
            l[k++] = (len_id){v->len[i], i};
    qsort(l, (size_t)k, sizeof *l, by_len_desc);
    for (int32_t i = 0; i < k; i++)
        v->special[i] = l[i].id;
    v->n_special = k;
    free(l);
    return 0;
}

/* Phi-3 (general.name holds "phi-3" or "phi3"): special tokens and </s> swallow the spaces
 * after them, except <unk>, <s> and <|endoftext|> (llama.cpp's per-model attributes). */
static void phi3_attributes(tok_vocab *v, const wk_gguf *g)
{
    const char *s;
    uint64_t n;
    char name[256];
    if (get_string(&s, &n, g, "general.name"))
        return;
    snprintf(name, sizeof name, "%.*s", (int)(n < 255 ? n : 255), s);
    for (char *c = name; *c; c++)
        *c = (char)tolower((unsigned char)*c);
    if (!strstr(name, "phi-3") && !strstr(name, "phi3"))
        return;
    for (int32_t i = 0; i < v->n_special; i++)
        v->attr[v->special[i]] |= TOK_ATTR_RSTRIP;
    int32_t t = tok_find(v, "</s>", 4);
    if (t >= 0)
        v->attr[t] |= TOK_ATTR_RSTRIP;
    static const char *const keep[] = {"<unk>", "<s>", "<|endoftext|>"};
    for (int i = 0; i < 3; i++)
        if ((t = tok_find(v, keep[i], strlen(keep[i]))) >= 0)
            v->attr[t] &= (uint16_t)~TOK_ATTR_RSTRIP;
}

/* ------------------------------------------------------------------ pieces */
/* Appends the bytes of BPE token text s (GPT-2's characters) to b; a character that stands for
 * no byte is kept as its UTF-8 (llama.cpp writes an [UNK_BYTE_...] marker there). */
static int byte_decode(tok_buf *b, const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t l;
        const int32_t cp = tok_utf8_decode((const unsigned char *)s + i, n - i, &l);
        const int byte = cp >= 0 ? tok_char_byte((uint32_t)cp) : -1;
        if (cp < 0)
            l = 1;
        if (byte >= 0) {
            const char c = (char)byte;
            if (tok_buf_put(b, &c, 1))
                return -1;
        } else if (tok_buf_put(b, s + i, l)) {
            return -1;
        }
        i += l;
    }
    return 0;
}

/* Appends s with each U+2581 as a space. */
static int unescape_spaces(tok_buf *b, const char *s, size_t n)
{
    size_t start = 0;
    for (size_t i = 0; i + 3 <= n; i++)
        if (!memcmp(s + i, "\xe2\x96\x81", 3)) {
            if (tok_buf_put(b, s + start, i - start) || tok_buf_put(b, " ", 1))
                return -1;
            start = i + 3;
            i += 2;
        }
    return tok_buf_put(b, s + start, n - start);
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                          : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Token id's piece with special tokens shown (llama.cpp's token_to_piece, special = true). */
static int piece_of(const tok_vocab *v, int32_t id, tok_buf *b)
{
    size_t n;
    const char *s = tok_text(v, id, &n);
    const uint16_t a = v->attr[id];
    if (a & (TOK_ATTR_UNKNOWN | TOK_ATTR_CONTROL | TOK_ATTR_USER_DEFINED))
        return tok_buf_put(b, s, n);
    if (a & TOK_ATTR_NORMAL) {
        if (v->kind == TOK_KIND_SPM || v->escape_spaces)
            return unescape_spaces(b, s, n);
        return byte_decode(b, s, n);
    }
    if (a & TOK_ATTR_BYTE) { /* <0xHH> */
        if (n == 6 && !memcmp(s, "<0x", 3) && s[5] == '>' && hexval(s[3]) >= 0 &&
            hexval(s[4]) >= 0) {
            const char c = (char)(hexval(s[3]) * 16 + hexval(s[4]));
            return tok_buf_put(b, &c, 1);
        }
        return tok_buf_put(b, s, n);
    }
    return 0; /* undefined or unused: nothing */
}

static int build_pieces(tok_vocab *v)
{
    tok_buf b = {0};
    v->poff = malloc((size_t)v->n * sizeof *v->poff);
    v->plen = malloc((size_t)v->n * sizeof *v->plen);
    if (!v->poff || !v->plen)
        return -1;
    for (int32_t i = 0; i < v->n; i++) {
        const size_t start = b.n;
        if (piece_of(v, i, &b) || b.n > UINT32_MAX / 2) {
            free(b.p);
            return -1;
        }
        v->poff[i] = (uint32_t)start;
        v->plen[i] = (uint32_t)(b.n - start);
    }
    v->pieces = b.p ? b.p : calloc(1, 1);
    return v->pieces ? 0 : -1;
}

const char *tok_piece(const tok_vocab *v, int32_t id, int special, size_t *len)
{
    if (id < 0 || id >= v->n)
        return NULL;
    if (!special && (v->attr[id] & (TOK_ATTR_UNKNOWN | TOK_ATTR_CONTROL))) {
        *len = 0;
        return "";
    }
    *len = v->plen[id];
    return v->pieces + v->poff[id];
}

/* ------------------------------------------------------------------ load */
int tok_vocab_load(tok_vocab **out, const wk_gguf *g, char *err, size_t cap)
{
    *out = NULL;
    tok_vocab *v = calloc(1, sizeof *v);
    if (!v)
        return fail(err, cap, "out of memory");
    char model[65], pre[65] = "";
    const char *s;
    uint64_t n;
    int rc = read_kind(v, g, model, sizeof model, err, cap);
    if (!rc && !get_string(&s, &n, g, "tokenizer.ggml.pre"))
        snprintf(pre, sizeof pre, "%.*s", (int)(n < 64 ? n : 64), s);
    if (!strcmp(model, "gemma4")) /* as llama.cpp: the model names its pre-tokenizer */
        snprintf(pre, sizeof pre, "gemma4");
    if (!rc)
        rc = read_tokens(v, g, err, cap);
    if (!rc)
        rc = read_scores_types(v, g, err, cap);
    if (!rc && v->kind == TOK_KIND_BPE) {
        rc = read_merges(v, g, err, cap);
        if (!rc)
            rc = tok_pre_new(v, pre, err, cap);
    }
    if (!rc) {
        get_bool(&v->add_space_prefix, g, "tokenizer.ggml.add_space_prefix");
        rc = read_specials(v, g, err, cap);
    }
    if (!rc && (build_special(v) || build_pieces(v)))
        rc = fail(err, cap, "out of memory");
    if (rc) {
        tok_vocab_free(v);
        return -1;
    }
    phi3_attributes(v, g);
    if (v->kind == TOK_KIND_SPM)
        snprintf(v->describe, sizeof v->describe, "llama (SentencePiece), %d tokens", v->n);
    else
        snprintf(v->describe, sizeof v->describe,
                 "%s (BPE, pre-tokenizer '%s'), %d tokens, %d merges", model,
                 pre[0] ? pre : "default", v->n, v->n_merges);
    *out = v;
    return 0;
}

void tok_vocab_free(tok_vocab *v)
{
    if (!v)
        return;
    free(v->arena);
    free(v->off);
    free(v->len);
    free(v->score);
    free(v->attr);
    free(v->pieces);
    free(v->poff);
    free(v->plen);
    free(v->tokens.slot);
    free(v->marena);
    free(v->moff);
    free(v->mlen);
    free(v->msplit);
    free(v->merges.slot);
    free(v->special);
    free(v->eog);
    tok_pre_free(v->pre);
    free(v);
}

int32_t tok_vocab_size(const tok_vocab *v) { return v->n; }
const char *tok_vocab_describe(const tok_vocab *v) { return v->describe; }
int32_t tok_bos(const tok_vocab *v) { return v->bos; }
int32_t tok_eos(const tok_vocab *v) { return v->eos; }
int tok_adds_bos(const tok_vocab *v) { return v->add_bos && v->bos >= 0; }

int tok_is_eog(const tok_vocab *v, int32_t id)
{
    for (int32_t i = 0; i < v->n_eog; i++)
        if (v->eog[i] == id)
            return 1;
    return 0;
}
