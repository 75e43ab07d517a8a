/* minilm_tokens_test.c VOCAB FIXTURE: examples/wordpiece.c against Hugging Face `tokenizers`.
 * FIXTURE (tests/models/minilm_tokens.txt, made by tests/models/make_token_fixture.py) holds per
 * line a sentence in hex and the ids `tokenizers` gives it (truncated at 256); every sentence
 * must give exactly those ids. Exits 77 (skipped) when VOCAB is missing (the model not fetched). */
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
    wp_vocab_free(v);
    printf("%d sentences, %d differ from Hugging Face tokenizers\n", n, bad);
    return bad || n < 30 ? 1 : 0;
}
