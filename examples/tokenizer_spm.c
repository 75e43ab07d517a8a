/* tokenizer_spm.c: SentencePiece-style encoding of one piece of text (`llama` vocabularies), as
 * llama.cpp's llm_tokenizer_spm_session does it. The caller has already put U+2581 for every
 * space (and the leading space). The text starts as one symbol per UTF-8 character (a byte that
 * cannot start a character is a symbol of its own); every adjacent pair whose concatenation is a
 * token is a candidate, and the candidate of the highest score (ties: the leftmost) is merged,
 * again and again, until no candidate is left. A final symbol that is a token gives that token;
 * any other gives one token per byte: <0xXX>, else the byte as a token, else <unk>. */
#include "tokenizer_impl.h"

#include <stdlib.h>
#include <string.h>

typedef struct sym {
    size_t start, n; /* bytes of the text; n = 0 once merged into the symbol on its left */
    int prev, next;
} sym;

typedef struct bigram {
    int left, right;
    float score;
    size_t size; /* bytes of the pair when it was found */
} bigram;

typedef struct heap {
    bigram *a;
    size_t n, cap;
} heap;

/* a comes out before b: higher score, then the leftmost */
static int before(const bigram *a, const bigram *b)
{
    return a->score > b->score || (a->score == b->score && a->left < b->left);
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

/* Queues (left, right) when their concatenation is a token. */
static int try_pair(const tok_vocab *v, const char *text, const sym *s, heap *h, int left,
                    int right)
{
    if (left < 0 || right < 0)
        return 0;
    const size_t size = s[left].n + s[right].n;
    const int32_t id = tok_find(v, text + s[left].start, size);
    if (id < 0)
        return 0;
    const bigram b = {left, right, v->score[id], size};
    return heap_push(h, b);
}

/* The tokens of byte c: <0xXX>, else the byte itself as a token, else <unk>. */
static int32_t byte_token(const tok_vocab *v, unsigned char c)
{
    static const char hex[] = "0123456789ABCDEF";
    const char name[6] = {'<', '0', 'x', hex[c >> 4], hex[c & 15], '>'};
    int32_t id = tok_find(v, name, 6);
    if (id < 0)
        id = tok_find(v, (const char *)&c, 1);
    return id >= 0 ? id : v->unk;
}

int tok_spm_encode(const tok_vocab *v, const char *text, size_t n, tok_ids *out, char *err,
                   size_t cap)
{
    if (n == 0)
        return 0;
    if (n > (size_t)INT32_MAX) {
        snprintf(err, cap, "text too long (%zu bytes)", n);
        return -1;
    }
    sym *s = malloc(n * sizeof *s);
    heap h = {0};
    int count = 0, rc = 0;
    if (!s)
        goto oom;
    for (size_t off = 0; off < n; count++) {
        size_t len = tok_utf8_len((uint8_t)text[off]);
        if (len > n - off)
            len = n - off;
        s[count] = (sym){off, len, count - 1, off + len == n ? -1 : count + 1};
        off += len;
    }
    for (int i = 1; i < count; i++)
        if (try_pair(v, text, s, &h, i - 1, i))
            goto oom;
    while (h.n) {
        const bigram b = heap_pop(&h);
        sym *l = &s[b.left], *r = &s[b.right];
        if (l->n == 0 || r->n == 0 || l->n + r->n != b.size)
            continue; /* one of them has changed since */
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0)
            s[r->next].prev = b.left;
        if (try_pair(v, text, s, &h, l->prev, b.left) || try_pair(v, text, s, &h, b.left, l->next))
            goto oom;
    }
    for (int i = 0; i != -1 && !rc; i = s[i].next) {
        const int32_t id = tok_find(v, text + s[i].start, s[i].n);
        if (id >= 0) {
            rc = tok_ids_push(out, id);
            continue;
        }
        for (size_t j = 0; j < s[i].n && !rc; j++) {
            const int32_t bt = byte_token(v, (unsigned char)text[s[i].start + j]);
            if (bt < 0) {
                snprintf(err, cap, "the vocabulary has no token for byte 0x%02X and no <unk>",
                         (unsigned char)text[s[i].start + j]);
                free(s);
                free(h.a);
                return -1;
            }
            rc = tok_ids_push(out, bt);
        }
    }
    if (rc)
        goto oom;
    free(s);
    free(h.a);
    return 0;
oom:
    free(s);
    free(h.a);
    snprintf(err, cap, "out of memory");
    return -1;
}
