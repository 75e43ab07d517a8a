/* tokenizer_vocab_test.c: the example tokenizer (examples/tokenizer.h) against llama.cpp's own
 * vocabulary tests (models/ggml-vocab-NAME.gguf with .gguf.inp and .gguf.out, fetched by
 * tools/fetch_llama_vocab.sh), read as llama.cpp's tests/test-tokenizer-0.cpp reads them:
 *   - the .inp file holds the inputs separated by "\n__ggml_vocab_test__\n"; line i of the .out
 *     file (spaces stripped at both ends) holds the expected ids of input i, space-separated;
 *   - each input is tokenized with add_special = false and parse_special = false, and must give
 *     exactly those ids (the expected ids come from Hugging Face's tokenizers, through
 *     llama.cpp's tests/test-tokenizer-0.py);
 *   - decoding those ids (llama.cpp's detokenize without its BPE space clean-up) must give back
 *     the input byte for byte: every kind read here is lossless (byte fallback, or GPT-2's byte
 *     characters). How many inputs the clean-up changes is printed.
 * --spm-roundtrip adds llama.cpp's tests/test-tokenizer-1-spm.cpp checks: every token decoded,
 * encoded again with special tokens parsed and decoded gives the same text; every code point
 * (but surrogates and U+40000..U+E0000) encodes and decodes to itself.
 * --unsupported WORDS: loading must fail with a message that holds WORDS.
 *   tokenizer_vocab_test VOCAB.gguf [--spm-roundtrip] [--unsupported WORDS]
 * Exit 0 when every check passes, 1 otherwise, 77 (skip) when VOCAB.gguf is not there. */
#include "tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SKIP 77

static char *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, len = 0;
    char *p = malloc(cap + 1);
    size_t k;
    while (p && (k = fread(p + len, 1, cap - len, f)) > 0) {
        len += k;
        if (len == cap) {
            char *q = realloc(p, 2 * cap + 1);
            if (!q) {
                free(p);
                p = NULL;
                break;
            }
            p = q;
            cap *= 2;
        }
    }
    fclose(f);
    if (p) {
        p[len] = '\0';
        *n = len;
    }
    return p;
}

static void print_ids(const char *what, const int32_t *ids, size_t n)
{
    printf("    %s:", what);
    for (size_t i = 0; i < n; i++)
        printf(" %d", ids[i]);
    printf("\n");
}

/* The ids of line (up to its end), space-separated. */
static size_t parse_line(const char *s, const char *end, int32_t *ids, size_t cap)
{
    size_t n = 0;
    while (s < end) {
        while (s < end && (*s == ' ' || *s == '\r' || *s == '\t'))
            s++;
        if (s >= end)
            break;
        char *e;
        const long v = strtol(s, &e, 10);
        if (e == s || e > end)
            return (size_t)-1;
        if (n < cap)
            ids[n] = (int32_t)v;
        n++;
        s = e;
    }
    return n;
}

/* 1 when decoding ids (special tokens shown, with or without the clean-up) gives text. */
static int decodes_to(const tok_vocab *v, const int32_t *ids, size_t n, int clean, const char *text,
                      size_t tn)
{
    size_t dl;
    char *d = tok_decode(v, ids, n, 1, clean, &dl);
    const int same = d && dl == tn && !memcmp(d, text, tn);
    free(d);
    return same;
}

static int run_files(const tok_vocab *v, const char *path)
{
    char inp[4096], outp[4096];
    snprintf(inp, sizeof inp, "%s.inp", path);
    snprintf(outp, sizeof outp, "%s.out", path);
    size_t ni, no;
    char *in = read_file(inp, &ni), *out = read_file(outp, &no);
    if (!in || !out) {
        printf("FAIL: cannot read %s or %s\n", inp, outp);
        free(in);
        free(out);
        return 1;
    }
    static const char sep[] = "\n__ggml_vocab_test__\n";
    const size_t sl = sizeof sep - 1;
    int tests = 0, fails = 0, round_fails = 0, cleaned = 0;
    const char *ip = in, *op = out;
    while (ip < in + ni) {
        const char *e = strstr(ip, sep);
        const size_t len = e ? (size_t)(e - ip) : (size_t)(in + ni - ip);
        if (op >= out + no) {
            printf("FAIL: %s has fewer lines than %s has inputs\n", outp, inp);
            fails++;
            break;
        }
        const char *oe = memchr(op, '\n', (size_t)(out + no - op));
        if (!oe)
            oe = out + no;
        int32_t want[4096];
        const size_t nw = parse_line(op, oe, want, 4096);
        int32_t *got = NULL;
        size_t ng = 0;
        char err[256];
        tests++;
        if (nw == (size_t)-1 || nw > 4096) {
            printf("FAIL: test %d: bad line in %s\n", tests, outp);
            fails++;
        } else if (tok_encode(v, ip, len, 0, 0, &got, &ng, err, sizeof err)) {
            printf("FAIL: test %d: %s\n", tests, err);
            fails++;
        } else if (ng != nw || memcmp(got, want, ng * sizeof *got)) {
            printf("FAIL: test %d: '%.*s'\n", tests, (int)len, ip);
            print_ids("expected", want, nw);
            print_ids("got     ", got, ng);
            fails++;
        } else if (!decodes_to(v, got, ng, 0, ip, len)) {
            printf("FAIL: test %d: the ids do not decode to '%.*s'\n", tests, (int)len, ip);
            round_fails++;
        } else {
            cleaned += !decodes_to(v, got, ng, 1, ip, len);
        }
        free(got);
        op = oe + 1;
        ip = e ? e + sl : in + ni;
    }
    printf("%s: %d inputs, %d with other ids than llama.cpp's, %d not decoded back (%d changed by "
           "the space clean-up)\n", path, tests, fails, round_fails, cleaned);
    free(in);
    free(out);
    return fails || round_fails || tests == 0;
}

static size_t utf8_put(char *b, uint32_t cp)
{
    if (cp < 0x80) {
        b[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        b[0] = (char)(0xC0 | (cp >> 6));
        b[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        b[0] = (char)(0xE0 | (cp >> 12));
        b[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        b[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    b[0] = (char)(0xF0 | (cp >> 18));
    b[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    b[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    b[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* 1 when text encoded (special tokens parsed) and decoded again differs from text. */
static int round_trip_fails(const tok_vocab *v, const char *text, size_t n)
{
    int32_t *ids = NULL;
    size_t ni = 0, dl = 0;
    char err[256];
    if (tok_encode(v, text, n, 0, 1, &ids, &ni, err, sizeof err))
        return 1;
    char *d = tok_decode(v, ids, ni, 1, 1, &dl);
    const int bad = !d || dl != n || memcmp(d, text, n);
    free(d);
    free(ids);
    return bad;
}

/* llama.cpp's test-tokenizer-1-spm: tokens and code points round-trip. */
static int spm_roundtrip(const tok_vocab *v)
{
    int token_fails = 0, cp_fails = 0, cps = 0;
    for (int32_t i = 0; i < tok_vocab_size(v); i++) {
        size_t n;
        char *s = tok_decode(v, &i, 1, 1, 1, &n);
        if (!s || round_trip_fails(v, s, n)) {
            if (token_fails++ < 5)
                printf("FAIL: token %d ('%s') does not round-trip\n", i, s ? s : "?");
        }
        free(s);
    }
    for (uint32_t cp = 0; cp < 0x110000; cp++) {
        /* as llama.cpp: no surrogates, not the unassigned planes; U+2581 decodes to a space */
        if ((cp >= 0xD800 && cp <= 0xDFFF) || (cp >= 0x40000 && cp <= 0xE0000) || cp == 0x2581)
            continue;
        char b[4];
        cps++;
        if (round_trip_fails(v, b, utf8_put(b, cp)) && cp_fails++ < 5)
            printf("FAIL: code point U+%04X does not round-trip\n", cp);
    }
    printf("spm round trip: %d of %d tokens and %d of %d code points fail\n", token_fails,
           tok_vocab_size(v), cp_fails, cps);
    return token_fails || cp_fails;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: tokenizer_vocab_test VOCAB.gguf [--spm-roundtrip] "
                        "[--unsupported WORDS]\n");
        return 2;
    }
    const char *path = argv[1], *unsupported = NULL;
    int spm = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--spm-roundtrip"))
            spm = 1;
        else if (!strcmp(argv[i], "--unsupported") && i + 1 < argc)
            unsupported = argv[++i];
        else
            return 2;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        printf("skip: %s is not there (tools/fetch_llama_vocab.sh fetches it; no network?)\n",
               path);
        return SKIP;
    }
    fclose(f);
    wk_gguf *g = NULL;
    if (wk_gguf_open(&g, path) != WK_OK) {
        printf("FAIL: %s: %s\n", path, wk_last_error());
        return 1;
    }
    tok_vocab *v = NULL;
    char err[256] = "";
    const clock_t t0 = clock();
    const int rc = tok_vocab_load(&v, g, err, sizeof err);
    wk_gguf_close(g);
    if (unsupported) {
        const int ok = rc != 0 && strstr(err, unsupported) != NULL;
        printf("%s: %s (expected a refusal naming \"%s\")\n", ok ? "ok" : "FAIL",
               rc ? err : "loaded", unsupported);
        tok_vocab_free(v);
        return ok ? 0 : 1;
    }
    if (rc) {
        printf("FAIL: %s: %s\n", path, err);
        return 1;
    }
    printf("%s: %s, loaded in %.0f ms\n", path, tok_vocab_describe(v),
           1e3 * (double)(clock() - t0) / CLOCKS_PER_SEC);
    int bad = run_files(v, path);
    if (spm)
        bad |= spm_roundtrip(v);
    tok_vocab_free(v);
    return bad;
}
