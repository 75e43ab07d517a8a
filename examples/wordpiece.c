/* wordpiece.c: BERT's uncased WordPiece tokenizer (see wordpiece.h). Three steps, as in Hugging
 * Face `tokenizers`:
 *   1. normalize, code point by code point: drop NUL, U+FFFD and category C* except \t \n \r;
 *      whitespace becomes ' '; CJK ideographs get a space on each side; then NFD with
 *      nonspacing marks removed, then lower case (the table of examples/unicode_tables.h;
 *      Hangul syllables decomposed arithmetically);
 *   2. pre-tokenize: split on whitespace; each punctuation character (ASCII punctuation or
 *      category P*) is a word of its own;
 *   3. WordPiece: per word, greedy longest match from the left, later pieces prefixed "##"; a
 *      word with a piece not in the vocabulary, or longer than 100 characters, is [UNK]. */
#include "wordpiece.h"
#include "unicode_tables.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WP_MAX_WORD_CHARS 100

struct wp_vocab {
    char *text;       /* the file, each line NUL-terminated */
    const char **tok; /* id -> token */
    int32_t n;
    int32_t *slots;   /* open addressing: id or -1 */
    uint32_t mask;
    int32_t cls, sep, unk;
};

static uint32_t hash(const char *s, int len)
{
    uint32_t h = 2166136261u;
    for (int i = 0; i < len; i++)
        h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h;
}

int32_t wp_vocab_find(const wp_vocab *v, const char *s, int len)
{
    for (uint32_t i = hash(s, len) & v->mask;; i = (i + 1) & v->mask) {
        int32_t id = v->slots[i];
        if (id < 0)
            return -1;
        if ((int)strlen(v->tok[id]) == len && memcmp(v->tok[id], s, (size_t)len) == 0)
            return id;
    }
}

int32_t wp_vocab_size(const wp_vocab *v) { return v->n; }

void wp_vocab_free(wp_vocab *v)
{
    if (!v)
        return;
    free(v->text);
    free(v->tok);
    free(v->slots);
    free(v);
}

int wp_vocab_load(wp_vocab **out, const char *path, char *err, int cap)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, (size_t)cap, "cannot open %s", path);
        return -1;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    wp_vocab *v = calloc(1, sizeof *v);
    if (v)
        v->text = malloc((size_t)(size > 0 ? size : 0) + 1);
    if (!v || !v->text || (size > 0 && fread(v->text, 1, (size_t)size, f) != (size_t)size)) {
        fclose(f);
        wp_vocab_free(v);
        snprintf(err, (size_t)cap, "cannot read %s", path);
        return -1;
    }
    fclose(f);
    v->text[size] = '\0';
    int32_t lines = 0;
    for (long i = 0; i < size; i++)
        lines += v->text[i] == '\n';
    lines += size > 0 && v->text[size - 1] != '\n';
    uint32_t nslots = 1;
    while (nslots < 2u * (uint32_t)lines + 2)
        nslots *= 2;
    v->tok = malloc(sizeof *v->tok * (size_t)(lines ? lines : 1));
    v->slots = malloc(sizeof *v->slots * nslots);
    if (!v->tok || !v->slots) {
        wp_vocab_free(v);
        snprintf(err, (size_t)cap, "out of memory");
        return -1;
    }
    memset(v->slots, 0xff, sizeof *v->slots * nslots);
    v->mask = nslots - 1;
    char *p = v->text;
    for (int32_t id = 0; id < lines; id++) {
        char *e = strchr(p, '\n');
        if (e)
            *e = '\0';
        size_t len = strlen(p);
        if (len && p[len - 1] == '\r')
            p[--len] = '\0';
        v->tok[id] = p;
        v->n = id + 1;
        if (wp_vocab_find(v, p, (int)len) < 0) { /* the first of duplicate lines wins */
            uint32_t i = hash(p, (int)len) & v->mask;
            while (v->slots[i] >= 0)
                i = (i + 1) & v->mask;
            v->slots[i] = id;
        }
        p = e ? e + 1 : p + len;
    }
    v->cls = wp_vocab_find(v, "[CLS]", 5);
    v->sep = wp_vocab_find(v, "[SEP]", 5);
    v->unk = wp_vocab_find(v, "[UNK]", 5);
    *out = v;
    return 0;
}

/* ------------------------------------------------------------------ Unicode facts */
static int in_ranges(const uint32_t (*r)[2], int n, uint32_t cp)
{
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (cp < r[mid][0])
            hi = mid - 1;
        else if (cp > r[mid][1])
            lo = mid + 1;
        else
            return 1;
    }
    return 0;
}
#define N_OF(a) ((int)(sizeof a / sizeof a[0]))

/* Rust's char::is_whitespace (the White_Space property). */
static int is_ws(uint32_t c)
{
    return (c >= 9 && c <= 13) || c == 32 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

static int is_other(uint32_t c) { return in_ranges(uc_other, N_OF(uc_other), c); }

static int is_punct(uint32_t c)
{
    if (c < 128)
        return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
               (c >= 123 && c <= 126);
    return in_ranges(uc_punct, N_OF(uc_punct), c);
}

static int is_cjk(uint32_t c)
{
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
           (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
           (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

/* out <- c with accents stripped and lower-cased (0 to 3 code points); returns the count. */
static int fold(uint32_t c, uint32_t out[3])
{
    if (c >= 0xAC00 && c <= 0xD7A3) { /* Hangul: L V (T), none of them Mn, none with a lower case */
        uint32_t s = c - 0xAC00, t = s % 28;
        out[0] = 0x1100 + s / (21 * 28);
        out[1] = 0x1161 + (s % (21 * 28)) / 28;
        out[2] = 0x11A7 + t;
        return t ? 3 : 2;
    }
    int lo = 0, hi = N_OF(uc_fold) - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (c < uc_fold[mid][0]) {
            hi = mid - 1;
        } else if (c > uc_fold[mid][0]) {
            lo = mid + 1;
        } else {
            int n = 0;
            for (int k = 1; k <= 3 && uc_fold[mid][k]; k++)
                out[n++] = uc_fold[mid][k];
            return n;
        }
    }
    out[0] = c;
    return 1;
}

/* Next code point of s (advancing *i); an invalid sequence reads as U+FFFD, one byte consumed. */
static uint32_t next_cp(const uint8_t *s, size_t n, size_t *i)
{
    uint8_t b = s[*i];
    int len = b < 0x80 ? 1 : (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : (b & 0xF8) == 0xF0 ? 4 : 0;
    if (len == 0 || *i + (size_t)len > n) {
        (*i)++;
        return 0xFFFD;
    }
    uint32_t c = len == 1 ? b : b & (0x7Fu >> len);
    for (int k = 1; k < len; k++) {
        if ((s[*i + (size_t)k] & 0xC0) != 0x80) {
            (*i)++;
            return 0xFFFD;
        }
        c = (c << 6) | (s[*i + (size_t)k] & 0x3Fu);
    }
    static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (c < min[len] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) {
        (*i)++;
        return 0xFFFD;
    }
    *i += (size_t)len;
    return c;
}

static int put_utf8(char *o, uint32_t c)
{
    if (c < 0x80) {
        o[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        o[0] = (char)(0xC0 | (c >> 6));
        o[1] = (char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        o[0] = (char)(0xE0 | (c >> 12));
        o[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        o[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (c >> 18));
    o[1] = (char)(0x80 | ((c >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((c >> 6) & 0x3F));
    o[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}

/* ------------------------------------------------------------------ encoding */
typedef struct wp_out {
    int32_t *ids;
    int n, cap; /* cap: room for tokens (max_len - 2) */
} wp_out;

static void emit(wp_out *o, int32_t id)
{
    if (o->n < o->cap)
        o->ids[o->n++] = id;
}

/* One word of nc code points w: its WordPiece ids. buf holds 4 * WP_MAX_WORD_CHARS + 8 bytes. */
static void word_pieces(const wp_vocab *v, const uint32_t *w, int nc, char *buf, wp_out *o)
{
    if (nc > WP_MAX_WORD_CHARS) {
        emit(o, v->unk);
        return;
    }
    int32_t tmp[WP_MAX_WORD_CHARS];
    int nt = 0, start = 0;
    while (start < nc) {
        int32_t found = -1;
        int end = nc;
        for (; end > start; end--) {
            int len = 0;
            if (start > 0) {
                buf[0] = '#';
                buf[1] = '#';
                len = 2;
            }
            for (int k = start; k < end; k++)
                len += put_utf8(buf + len, w[k]);
            if ((found = wp_vocab_find(v, buf, len)) >= 0)
                break;
        }
        if (found < 0) {
            emit(o, v->unk);
            return;
        }
        tmp[nt++] = found;
        start = end;
    }
    for (int k = 0; k < nt; k++)
        emit(o, tmp[k]);
}

/* The words of text[0..n) (no special tokens inside) into o. */
static int encode_span(const wp_vocab *v, const char *text, size_t n, wp_out *o)
{
    /* normalized text: at most 3 code points per input byte (a CJK char: space, char, space;
     * a fold: 3) */
    uint32_t *cps = malloc(sizeof *cps * (3 * n + 1));
    char buf[4 * WP_MAX_WORD_CHARS + 8];
    if (!cps)
        return -1;
    int nc = 0;
    for (size_t i = 0; i < n;) {
        uint32_t c = next_cp((const uint8_t *)text, n, &i);
        if (c == 0 || c == 0xFFFD || (c != '\t' && c != '\n' && c != '\r' && is_other(c)))
            continue;
        if (is_ws(c)) {
            cps[nc++] = ' ';
        } else if (is_cjk(c)) {
            uint32_t f[3];
            int k = fold(c, f);
            cps[nc++] = ' ';
            for (int j = 0; j < k; j++)
                cps[nc++] = f[j];
            cps[nc++] = ' ';
        } else {
            nc += fold(c, cps + nc);
        }
    }
    for (int i = 0; i < nc && o->n < o->cap;) {
        if (is_ws(cps[i])) {
            i++;
            continue;
        }
        if (is_punct(cps[i])) {
            word_pieces(v, cps + i, 1, buf, o);
            i++;
            continue;
        }
        int j = i;
        while (j < nc && !is_ws(cps[j]) && !is_punct(cps[j]))
            j++;
        word_pieces(v, cps + i, j - i, buf, o);
        i = j;
    }
    free(cps);
    return 0;
}

/* The special tokens, matched verbatim in the raw text before normalization (as `tokenizers`
 * matches its added tokens). */
static const char *const wp_special[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};

int wp_encode(const wp_vocab *v, const char *text, size_t n, int32_t *ids, int max_len)
{
    if (v->cls < 0 || v->sep < 0 || v->unk < 0 || max_len < 2)
        return -1;
    wp_out o = {ids + 1, 0, max_len - 2};
    ids[0] = v->cls;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        int32_t sid = -1;
        size_t slen = 0;
        for (int k = 0; k < 5 && i < n && text[i] == '['; k++) {
            slen = strlen(wp_special[k]);
            if (slen <= n - i && memcmp(text + i, wp_special[k], slen) == 0 &&
                (sid = wp_vocab_find(v, wp_special[k], (int)slen)) >= 0)
                break;
        }
        if (sid < 0 && i < n)
            continue;
        if (encode_span(v, text + start, i - start, &o) != 0)
            return -1;
        if (sid >= 0) {
            emit(&o, sid);
            i += slen - 1;
            start = i + 1;
        }
    }
    ids[1 + o.n] = v->sep;
    return o.n + 2;
}
