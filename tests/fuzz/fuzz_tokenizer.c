/* fuzz_tokenizer.c: the llama example's tokenizer (examples/tokenizer.h) on fuzzer-made GGUF
 * vocabularies and texts. Input: one byte of flags (bit 0 add_special, bit 1 parse_special), a
 * 16-bit little-endian text length T, T bytes of text (fewer if the input ends), then the rest as
 * a GGUF file (opened with wk_gguf_open on an in-memory file). When the file opens and its
 * vocabulary loads, the text is encoded, decoded (with and without the clean-up) and streamed.
 * Contracts checked besides memory safety (ASan/UBSan): a refused vocabulary gives a message;
 * an encoded text has only ids inside the vocabulary; every id has a piece and the ids decode;
 * an encode that fails says why. */
#include "fuzz.h"

#include "tokenizer.h"

#include <string.h>

static FILE *g_null;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_cap_allocations((size_t)64 << 20);
    g_null = fopen("/dev/null", "w");
    if (!g_null)
        abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz f = fz_make(data, size);
    const uint8_t flags = fz_u8(&f);
    size_t tlen = fz_u16(&f);
    if (tlen > fz_left(&f))
        tlen = fz_left(&f);
    const char *text = (const char *)data + f.pos;
    const size_t file_at = f.pos + tlen;
    const char *path = fuzz_memfile(data + file_at, size - file_at);
    if (!path)
        return 0;
    wk_gguf *g = NULL;
    if (wk_gguf_open(&g, path) != WK_OK)
        return 0;
    tok_vocab *v = NULL;
    char err[256] = "";
    if (tok_vocab_load(&v, g, err, sizeof err)) {
        FUZZ_CHECK(v == NULL && err[0], "a refused vocabulary gives a message and no handle");
        wk_gguf_close(g);
        return 0;
    }
    wk_gguf_close(g); /* the vocabulary keeps its own copies */
    const int32_t n = tok_vocab_size(v);
    int32_t *ids = NULL;
    size_t ni = 0;
    err[0] = '\0';
    if (tok_encode(v, text, tlen, flags & 1, (flags >> 1) & 1, &ids, &ni, err, sizeof err) == 0) {
        tok_stream st = {{0}, 0};
        for (size_t i = 0; i < ni; i++) {
            FUZZ_CHECK(ids[i] >= 0 && ids[i] < n, "id %d outside the vocabulary of %d", ids[i], n);
            size_t len;
            const char *p = tok_piece(v, ids[i], 0, &len);
            FUZZ_CHECK(p != NULL, "id %d has no piece", ids[i]);
            tok_stream_put(&st, p, len, g_null);
        }
        tok_stream_flush(&st, g_null);
        for (int clean = 0; clean < 2; clean++) {
            size_t dl;
            char *d = tok_decode(v, ids, ni, clean, clean, &dl);
            FUZZ_CHECK(d != NULL && strlen(d) <= dl, "the ids decode");
            free(d);
        }
        free(ids);
    } else {
        FUZZ_CHECK(err[0], "a failed encode says why");
    }
    tok_vocab_free(v);
    return 0;
}
