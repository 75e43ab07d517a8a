/* tokenizer.c: text to tokens and back (tokenizer.h), as llama.cpp's llama_vocab::impl tokenize
 * and detokenize do it:
 *   encode: the text is cut at the special tokens written in it (tokenizer_st_partition: each
 *           special token in turn, longest first, is found in every piece of plain text left;
 *           control and unknown tokens only with parse_special, user-defined ones always; a token
 *           marked lstrip / rstrip swallows the spaces before / after it); each plain piece goes
 *           to the kind's encoder (SentencePiece: with U+2581 for spaces and a leading one after
 *           the start or a special token; BPE: tokenizer_bpe.c); BOS / EOS around it with
 *           add_special, as the vocabulary says;
 *   decode: the pieces of the tokens joined, then (BPE, clean_spaces) llama.cpp's three
 *           clean-up passes over the result;
 *   stream: pieces written as they come, whole UTF-8 characters only. */
#include "tokenizer_impl.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ UTF-8 */
size_t tok_utf8_len(uint8_t first)
{
    static const uint8_t len[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return len[first >> 4];
}

int32_t tok_utf8_decode(const unsigned char *s, size_t n, size_t *len)
{
    const unsigned char c = s[0];
    uint32_t cp, min;
    size_t k;
    if (c < 0x80) {
        *len = 1;
        return c;
    }
    if (c >= 0xC2 && c <= 0xDF) {
        k = 2, cp = c & 0x1F, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        k = 3, cp = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        k = 4, cp = c & 0x07, min = 0x10000;
    } else {
        return -1;
    }
    if (n < k)
        return -1;
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return -1;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return -1;
    *len = k;
    return (int32_t)cp;
}

/* ------------------------------------------------------------------ special tokens */
/* A piece of the input: plain text [off, off + len), or a token (tok >= 0). */
typedef struct frag {
    int32_t tok;
    size_t off, len;
} frag;

typedef struct frags {
    frag *p;
    size_t n, cap;
} frags;

static int frags_push(frags *f, int32_t tok, size_t off, size_t len)
{
    if (f->n == f->cap) {
        const size_t cap = f->cap ? 2 * f->cap : 16;
        frag *p = realloc(f->p, cap * sizeof *p);
        if (!p)
            return -1;
        f->p = p;
        f->cap = cap;
    }
    f->p[f->n++] = (frag){tok, off, len};
    return 0;
}

static const char *find(const char *h, size_t hn, const char *s, size_t sn)
{
    if (sn == 0 || sn > hn)
        return NULL;
    for (const char *p = h; (p = memchr(p, s[0], hn - (size_t)(p - h) - sn + 1)) != NULL; p++)
        if (!memcmp(p, s, sn))
            return p;
    return NULL;
}

/* Cuts the text piece (off, len) at every occurrence of special token id, into out. */
static int cut(const tok_vocab *v, const char *text, size_t off, size_t len, int32_t id, frags *out)
{
    size_t tl;
    const char *t = tok_text(v, id, &tl);
    const uint16_t a = v->attr[id];
    for (;;) {
        const char *m = find(text + off, len, t, tl);
        if (!m)
            return len ? frags_push(out, -1, off, len) : 0;
        const size_t at = (size_t)(m - text);
        size_t left = at - off;
        if (a & TOK_ATTR_LSTRIP)
            while (left > 0 && isspace((unsigned char)text[off + left - 1]))
                left--;
        if (left > 0 && frags_push(out, -1, off, left))
            return -1;
        if (frags_push(out, id, 0, 0))
            return -1;
        size_t roff = at + tl, rlen = off + len - roff;
        if (a & TOK_ATTR_RSTRIP)
            while (rlen > 0 && isspace((unsigned char)text[roff])) {
                roff++;
                rlen--;
            }
        if (rlen == 0)
            return 0;
        off = roff;
        len = rlen;
    }
}

/* The text cut at its special tokens (llama.cpp's tokenizer_st_partition). */
static int partition(const tok_vocab *v, const char *text, size_t n, int parse_special, frags *f)
{
    frags g = {0};
    if (n && frags_push(f, -1, 0, n))
        return -1;
    for (int32_t k = 0; k < v->n_special; k++) {
        const int32_t id = v->special[k];
        if (!parse_special && (v->attr[id] & (TOK_ATTR_CONTROL | TOK_ATTR_UNKNOWN)))
            continue;
        g.n = 0;
        for (size_t i = 0; i < f->n; i++) {
            const frag x = f->p[i];
            if (x.tok >= 0 ? frags_push(&g, x.tok, 0, 0) : cut(v, text, x.off, x.len, id, &g)) {
                free(g.p);
                return -1;
            }
        }
        const frags t = *f;
        *f = g;
        g = t;
    }
    free(g.p);
    return 0;
}

/* ------------------------------------------------------------------ encode */
static int encode_spm(const tok_vocab *v, const char *text, const frags *f, tok_ids *out,
                      char *err, size_t cap)
{
    tok_buf b = {0};
    int prev_special = 1, rc = 0; /* a leading space at the start and after a special token */
    for (size_t i = 0; i < f->n && !rc; i++) {
        const frag x = f->p[i];
        if (x.tok >= 0) {
            rc = tok_ids_push(out, x.tok);
            prev_special = 1;
            continue;
        }
        b.n = 0;
        if (v->add_space_prefix && prev_special)
            rc = tok_buf_put(&b, "\xe2\x96\x81", 3);
        for (size_t j = 0; j < x.len && !rc; j++)
            rc = text[x.off + j] == ' ' ? tok_buf_put(&b, "\xe2\x96\x81", 3)
                                        : tok_buf_put(&b, text + x.off + j, 1);
        if (rc) {
            snprintf(err, cap, "out of memory");
            break;
        }
        rc = tok_spm_encode(v, b.p, b.n, out, err, cap);
        prev_special = 0;
    }
    free(b.p);
    return rc;
}

int tok_encode(const tok_vocab *v, const char *text, size_t n, int add_special, int parse_special,
               int32_t **ids, size_t *n_ids, char *err, size_t cap)
{
    frags f = {0};
    tok_ids out = {0};
    if (err && cap)
        err[0] = '\0';
    int rc = partition(v, text, n, parse_special, &f);
    if (rc)
        snprintf(err, cap, "out of memory");
    if (!rc && add_special && v->add_bos && v->bos >= 0 && tok_ids_push(&out, v->bos))
        rc = -1;
    if (!rc && v->kind == TOK_KIND_SPM) {
        rc = encode_spm(v, text, &f, &out, err, cap);
    } else {
        for (size_t i = 0; i < f.n && !rc; i++)
            rc = f.p[i].tok >= 0 ? tok_ids_push(&out, f.p[i].tok)
                                 : tok_bpe_encode(v, text + f.p[i].off, f.p[i].len, &out, err, cap);
    }
    if (!rc && add_special && v->add_eos && v->eos >= 0 && tok_ids_push(&out, v->eos))
        rc = -1;
    free(f.p);
    if (rc) {
        if (err && cap && !err[0])
            snprintf(err, cap, "out of memory");
        free(out.p);
        return -1;
    }
    *ids = out.p ? out.p : malloc(sizeof(int32_t));
    *n_ids = out.n;
    if (!*ids) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ decode */
/* llama.cpp's clean-up of decoded BPE text, three passes in place; returns the new length. */
static size_t clean_spaces(char *text, size_t total)
{
    /* 1: " ?", " !", " .", " ," lose the space */
    size_t n = total, t = total ? 1 : 0;
    for (size_t i = 1; i < n; i++) {
        const char x = text[i];
        if (text[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ','))
            t--;
        text[t++] = x;
    }
    /* 2: " ' " loses both spaces */
    n = t;
    t = t ? 1 : 0;
    for (size_t i = 1; i < n; i++) {
        const char x = text[i];
        if (x == '\'' && i + 1 < n && text[i - 1] == ' ' && text[i + 1] == ' ') {
            t--;
            text[++i] = '\0';
        }
        text[t++] = x;
    }
    /* 3: " 's", " 'm", " 're", " 've" lose the space */
    n = t;
    t = t ? 1 : 0;
    for (size_t i = 1; i < n; i++) {
        const char x = text[i];
        if (text[i - 1] == ' ' && x == '\'' && i + 1 < n) {
            const char x1 = text[i + 1];
            if (x1 == 's' || x1 == 'm')
                t--;
            else if (i + 2 < n && (x1 == 'r' || x1 == 'v') && text[i + 2] == 'e')
                t--;
        }
        text[t++] = x;
    }
    return t;
}

char *tok_decode(const tok_vocab *v, const int32_t *ids, size_t n, int special, int clean,
                 size_t *len)
{
    tok_buf b = {0};
    int strip = v->add_space_prefix; /* one leading space of the first piece */
    if (tok_buf_put(&b, "", 0))
        return NULL;
    for (size_t i = 0; i < n; i++) {
        size_t pl;
        const char *p = tok_piece(v, ids[i], special, &pl);
        if (!p) {
            free(b.p);
            return NULL;
        }
        if (strip && pl && p[0] == ' ') {
            p++;
            pl--;
        }
        strip = 0;
        if (tok_buf_put(&b, p, pl)) {
            free(b.p);
            return NULL;
        }
    }
    if (clean && v->clean_spaces)
        b.n = clean_spaces(b.p, b.n);
    b.p[b.n] = '\0';
    *len = b.n;
    return b.p;
}

/* ------------------------------------------------------------------ streaming */
/* How many bytes a character starting with c has (1 for a byte that starts none). */
static int char_len(unsigned char c)
{
    return c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 1;
}

void tok_stream_put(tok_stream *s, const char *piece, size_t len, FILE *f)
{
    for (size_t i = 0; i < len; i++) {
        const unsigned char c = (unsigned char)piece[i];
        if (s->n > 0 && (c & 0xC0) != 0x80) /* the held character will not complete */
            tok_stream_flush(s, f);
        if (s->n == 0 && char_len(c) == 1) {
            fputc(c, f);
            continue;
        }
        s->held[s->n++] = c;
        if (s->n == char_len(s->held[0]))
            tok_stream_flush(s, f);
    }
    fflush(f);
}

void tok_stream_flush(tok_stream *s, FILE *f)
{
    if (s->n)
        fwrite(s->held, 1, (size_t)s->n, f);
    s->n = 0;
}
