/* tokenizer_bpe.c: byte-level BPE encoding of one piece of text (`gpt2` and `gemma4`
 * vocabularies), as llama.cpp's llm_tokenizer_bpe_session does it:
 *   1. bytes that are not valid UTF-8 become U+FFFD, one per byte (llama.cpp's
 *      unicode_cpts_from_utf8); gemma4: each space becomes U+2581;
 *   2. the pre-tokenizer (tokenizer_pre.c) cuts the text into words;
 *   3. gpt2: each byte of a word becomes GPT-2's printable character for it (bytes_to_unicode);
 *   4. per word: with ignore_merges, a word that is a token is that token; else the word starts
 *      as one symbol per character, and the adjacent pair of the lowest merge rank (ties: the
 *      leftmost) is merged until no pair has a rank;
 *   5. a final symbol that is a token gives it; any other gives its bytes' tokens where those
 *      exist (gpt2: the byte as a one-byte token; gemma4: <0xXX>), else nothing. */
#include "tokenizer_impl.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ GPT-2's byte characters */
/* Bytes 33..126, 161..172 and 174..255 stand for themselves; the others, in order, for
 * U+0100 onwards (0..32 -> U+0100..U+0120, 127..160 -> U+0121..U+0142, 173 -> U+0143). */
static uint32_t byte_cp(uint8_t b)
{
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174)
        return b;
    if (b <= 32)
        return 256u + b;
    if (b <= 160)
        return 162u + b;
    return 323; /* 173 */
}

size_t tok_byte_char(uint8_t b, char out[2])
{
    const uint32_t cp = byte_cp(b);
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    out[0] = (char)(0xC0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
}

int tok_char_byte(uint32_t cp)
{
    if ((cp >= 33 && cp <= 126) || (cp >= 161 && cp <= 172) || (cp >= 174 && cp <= 255))
        return (int)cp;
    if (cp >= 256 && cp <= 288)
        return (int)(cp - 256);
    if (cp >= 289 && cp <= 322)
        return (int)(cp - 162);
    return cp == 323 ? 173 : -1;
}

/* ------------------------------------------------------------------ merges */
typedef struct sym {
    size_t start, n; /* bytes of the word; n = 0 once merged into the symbol on its left */
    int prev, next;
} sym;

typedef struct bigram {
    int left, right;
    int32_t rank;
    size_t ln, rn; /* the sizes of left and right when the pair was found */
} bigram;

typedef struct heap {
    bigram *a;
    size_t n, cap;
} heap;

static int before(const bigram *a, const bigram *b) /* lower rank, then the leftmost */
{
    return a->rank < b->rank || (a->rank == b->rank && a->left < b->left);
}

static int heap_push(heap *h, bigram x)
{
    if (h->n == h->cap) {
        const size_t cap = h->cap ? 2 * h->cap : 64;
        bigram *p = realloc(h->a, cap * sizeof *p);
        if (!p)
            return -1;
        h->a = p;
        h->cap = cap;
    }
    size_t i = h->n++;
    while (i > 0 && before(&x, &h->a[(i - 1) / 2])) {
        h->a[i] = h->a[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->a[i] = x;
    return 0;
}

static bigram heap_pop(heap *h)
{
    const bigram top = h->a[0], x = h->a[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && before(&h->a[c + 1], &h->a[c]))
            c++;
        if (!before(&h->a[c], &x))
            break;
        h->a[i] = h->a[c];
        i = c;
    }
    if (h->n)
        h->a[i] = x;
    return top;
}

typedef struct word_ctx {
    const tok_vocab *v;
    tok_ids *out;
    tok_buf enc;  /* the word in GPT-2's characters */
    sym *s;       /* symbols of the current word */
    size_t cap;
    heap h;
    int oom;
} word_ctx;

static int add_pair(word_ctx *c, const char *w, int left, int right)
{
    if (left < 0 || right < 0)
        return 0;
    const sym *l = &c->s[left], *r = &c->s[right];
    const int32_t rank = tok_find_pair(c->v, w + l->start, l->n, w + r->start, r->n);
    if (rank < 0)
        return 0;
    const bigram b = {left, right, rank, l->n, r->n};
    return heap_push(&c->h, b);
}

static int is_newlines(const char *w, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (w[i] != '\n')
            return 0;
    return 1;
}

/* The tokens of one word w (n bytes, already in GPT-2's characters for gpt2). */
static int encode_word(word_ctx *c, const char *w, size_t n)
{
    const tok_vocab *v = c->v;
    if (n > (size_t)INT32_MAX / 2)
        return -1;
    if (n > c->cap) {
        sym *p = realloc(c->s, n * sizeof *p);
        if (!p)
            return -1;
        c->s = p;
        c->cap = n;
    }
    int count = 0;
    size_t off = 0;
    if ((v->ignore_merges || (v->newline_words && is_newlines(w, n))) && tok_find(v, w, n) >= 0) {
        c->s[count++] = (sym){0, n, -1, -1};
        off = n;
    }
    while (off < n) {
        size_t len = tok_utf8_len((uint8_t)w[off]);
        if (len > n - off)
            len = n - off;
        c->s[count] = (sym){off, len, count - 1, off + len == n ? -1 : count + 1};
        off += len;
        count++;
    }
    c->h.n = 0;
    for (int i = 1; i < count; i++)
        if (add_pair(c, w, i - 1, i))
            return -1;
    while (c->h.n) {
        const bigram b = heap_pop(&c->h);
        sym *l = &c->s[b.left], *r = &c->s[b.right];
        if (l->n == 0 || r->n == 0 || l->n != b.ln || r->n != b.rn)
            continue; /* outdated: one of them has changed since */
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0)
            c->s[r->next].prev = b.left;
        if (add_pair(c, w, l->prev, b.left) || add_pair(c, w, b.left, l->next))
            return -1;
    }
    for (int i = 0; i < count; i++) {
        if (c->s[i].n == 0)
            continue;
        const char *t = w + c->s[i].start;
        const int32_t id = tok_find(v, t, c->s[i].n);
        if (id >= 0) {
            if (tok_ids_push(c->out, id))
                return -1;
            continue;
        }
        for (size_t j = 0; j < c->s[i].n; j++) { /* bytes that are tokens; the others are lost */
            static const char hex[] = "0123456789ABCDEF";
            const unsigned char b = (unsigned char)t[j];
            const char name[6] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
            const int32_t bt = v->byte_encode ? tok_find(v, t + j, 1) : tok_find(v, name, 6);
            if (bt >= 0 && tok_ids_push(c->out, bt))
                return -1;
        }
    }
    return 0;
}

static int on_word(void *ctx, const char *s, size_t n)
{
    word_ctx *c = ctx;
    if (!c->v->byte_encode) {
        c->oom = encode_word(c, s, n) != 0;
        return c->oom ? -1 : 0;
    }
    c->enc.n = 0;
    for (size_t i = 0; i < n; i++) {
        char u[2];
        const size_t k = tok_byte_char((uint8_t)s[i], u);
        if (tok_buf_put(&c->enc, u, k)) {
            c->oom = 1;
            return -1;
        }
    }
    c->oom = encode_word(c, c->enc.p, c->enc.n) != 0;
    return c->oom ? -1 : 0;
}

/* text with invalid UTF-8 bytes as U+FFFD and (escape) spaces as U+2581, into b. */
static int prepare(tok_buf *b, const char *text, size_t n, int escape)
{
    size_t i = 0;
    while (i < n) {
        size_t len;
        if (tok_utf8_decode((const unsigned char *)text + i, n - i, &len) < 0) {
            if (tok_buf_put(b, "\xef\xbf\xbd", 3))
                return -1;
            i++;
        } else if (escape && text[i] == ' ') {
            if (tok_buf_put(b, "\xe2\x96\x81", 3))
                return -1;
            i++;
        } else {
            if (tok_buf_put(b, text + i, len))
                return -1;
            i += len;
        }
    }
    return tok_buf_put(b, "", 0);
}

int tok_bpe_encode(const tok_vocab *v, const char *text, size_t n, tok_ids *out, char *err,
                   size_t cap)
{
    tok_buf t = {0};
    word_ctx c = {v, out, {0}, NULL, 0, {0}, 0};
    int rc = 0;
    if (prepare(&t, text, n, v->escape_spaces)) {
        snprintf(err, cap, "out of memory");
        rc = -1;
    } else if (tok_pre_split(v->pre, t.p, t.n, on_word, &c, err, cap)) {
        if (c.oom)
            snprintf(err, cap, "out of memory");
        rc = -1;
    }
    free(t.p);
    free(c.enc.p);
    free(c.s);
    free(c.h.a);
    return rc;
}
