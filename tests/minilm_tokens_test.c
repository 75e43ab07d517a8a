/* minilm_tokens_test.c VOCAB FIXTURE: examples/wordpiece.c against Hugging Face `tokenizers`.
 * FIXTURE (tests/models/minilm_tokens.txt, made by tests/models/make_token_fixture.py) holds per
 * line a sentence in hex and the ids `tokenizers` gives it (truncated at 256); every sentence
 * must give exactly those ids. Then 3000 strings of random bytes (mostly invalid UTF-8, NULs,
 * lone continuation bytes, truncated sequences) and random code points must encode without a
 * fault (run under ASan by `make asan`) into [CLS] ... [SEP] of at most max_len valid ids.
 * Exits 77 (skipped) when VOCAB is missing (the model not fetched). */
#include "wordpiece.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: minilm_tokens_test VOCAB FIXTURE\n");
        return 2;
    }
    char err[256];
    wp_vocab *v = NULL;
    if (wp_vocab_load(&v, argv[1], err, sizeof err) != 0) {
        printf("skip: %s (the model is fetched by the minilm_model test; no network?)\n", err);
        return 77;
    }
    FILE *f = fopen(argv[2], "r");
    if (!f) {
        printf("FAIL: cannot open %s\n", argv[2]);
        return 1;
    }
    static char line[1 << 16], text[1 << 15];
    static int32_t want[1024], got[1024];
    int n = 0, bad = 0;
    while (fgets(line, sizeof line, f)) {
        char *tab = strchr(line, '\t');
        if (!tab)
            continue;
        *tab = '\0';
        size_t len = 0;
        if (strcmp(line, "-") != 0)
            for (char *p = line; p[0] && p[1]; p += 2) {
                unsigned b;
                sscanf(p, "%2x", &b);
                text[len++] = (char)b;
            }
        text[len] = '\0';
        int nw = 0;
        for (char *p = strtok(tab + 1, " \n"); p && nw < 1024; p = strtok(NULL, " \n"))
            want[nw++] = atoi(p);
        int ng = wp_encode(v, text, len, got, 256);
        n++;
        if (ng != nw || memcmp(got, want, sizeof *got * (size_t)nw) != 0) {
            bad++;
            printf("FAIL sentence %d \"%.60s\": %d ids, want %d\n  got: ", n, text, ng, nw);
            for (int i = 0; i < ng && i < 40; i++)
                printf(" %d", got[i]);
            printf("\n want:");
            for (int i = 0; i < nw && i < 40; i++)
                printf(" %d", want[i]);
            printf("\n");
        }
    }
    fclose(f);
    printf("%d sentences, %d differ from Hugging Face tokenizers\n", n, bad);
    /* hostile input */
    uint32_t x = 42;
    int rbad = 0;
    for (int it = 0; it < 3000; it++) {
        size_t len = 0, want_len = (size_t)(it % 300);
        while (len < want_len) {
            x = x * 1664525u + 1013904223u;
            uint32_t r = x >> 8;
            if (it % 3 == 0) { /* raw bytes */
                text[len++] = (char)r;
            } else { /* a random code point, UTF-8 encoded, sometimes cut short */
                uint32_t c = it % 3 == 1 ? r % 0x3000 : r % 0x110000;
                char u[4];
                int k = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
                for (int j = k - 1; j > 0; j--, c >>= 6)
                    u[j] = (char)(0x80 | (c & 0x3F));
                u[0] = (char)(k == 1 ? c : k == 2 ? 0xC0 | c : k == 3 ? 0xE0 | c : 0xF0 | c);
                if ((r & 31) == 0)
                    k--;
                for (int j = 0; j < k && len < want_len; j++)
                    text[len++] = u[j];
            }
        }
        int max_len = 2 + it % 40;
        int ng = wp_encode(v, text, len, got, max_len);
        int ok = ng >= 2 && ng <= max_len && got[0] == wp_vocab_find(v, "[CLS]", 5) &&
                 got[ng - 1] == wp_vocab_find(v, "[SEP]", 5);
        for (int i = 0; ok && i < ng; i++)
            ok = got[i] >= 0 && got[i] < wp_vocab_size(v);
        if (!ok && rbad++ < 5)
            printf("FAIL random input %d (%zu bytes, max_len %d): %d ids\n", it, len, max_len, ng);
    }
    printf("3000 random inputs, %d misencoded\n", rbad);
    wp_vocab_free(v);
    return bad || rbad || n < 30 ? 1 : 0;
}
