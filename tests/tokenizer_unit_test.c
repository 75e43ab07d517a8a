/* tokenizer_unit_test.c: the example tokenizer (examples/tokenizer.h) and chat formats
 * (examples/chat_template.h) on small vocabularies written here, every expected value worked out
 * by hand from the rules llama.cpp's llama-vocab.cpp and llama-chat.cpp follow:
 *   - SentencePiece: the pair of the higher score merges first; the leading U+2581; <0xXX> byte
 *     fallback; special tokens with parse_special and without; BOS; Phi-3's rstrip;
 *   - byte-level BPE: the pair of the lower rank merges first; GPT-2's byte characters; the
 *     pre-tokenizer's words; decoding with and without the space clean-up; every pre-tokenizer
 *     regex compiles;
 *   - streaming: a character split over two tokens comes out whole, once;
 *   - bad vocabularies: every malformed array, an unknown or unsupported kind or pre-tokenizer,
 *     special ids out of range: a clear error (or the default), never a crash;
 *   - chat: format detection from template text, and the exact prompt text of each format.
 * Runs offline (no downloaded file). */
#include "chat_template.h"
#include "testlib.h"
#include "tokenizer_impl.h" /* tok_pre_compile_all */

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[256];

/* A vocabulary file: the tokens, scores (or none), types (or none), merges (or none), then
 * extra kv pairs through fn. */
typedef struct spec {
    const char *model, *pre, *name;
    const char *const *tokens;
    int n;
    const float *scores;
    const int32_t *types;
    const char *const *merges;
    int n_merges;
    int bos; /* -1: no key */
} spec;

static tok_vocab *load_spec(const spec *s, void (*extra)(wk_gguf_writer *), char *err, size_t cap)
{
    char path[512];
    snprintf(path, sizeof path, "%s/vocab.gguf", dir);
    wk_gguf_writer *w = NULL;
    if (wk_gguf_writer_new(&w) != WK_OK)
        return NULL;
    if (s->model)
        wk_gguf_writer_add_string(w, "tokenizer.ggml.model", s->model, strlen(s->model));
    if (s->pre)
        wk_gguf_writer_add_string(w, "tokenizer.ggml.pre", s->pre, strlen(s->pre));
    if (s->name)
        wk_gguf_writer_add_string(w, "general.name", s->name, strlen(s->name));
    if (s->tokens)
        wk_gguf_writer_add_array(w, "tokenizer.ggml.tokens", WK_GGUF_TYPE_STRING, s->tokens,
                                 (uint64_t)s->n);
    if (s->scores)
        wk_gguf_writer_add_array(w, "tokenizer.ggml.scores", WK_GGUF_TYPE_F32, s->scores,
                                 (uint64_t)s->n);
    if (s->types)
        wk_gguf_writer_add_array(w, "tokenizer.ggml.token_type", WK_GGUF_TYPE_I32, s->types,
                                 (uint64_t)s->n);
    if (s->merges)
        wk_gguf_writer_add_array(w, "tokenizer.ggml.merges", WK_GGUF_TYPE_STRING, s->merges,
                                 (uint64_t)s->n_merges);
    if (s->bos >= 0) {
        const uint32_t b = (uint32_t)s->bos;
        wk_gguf_writer_add(w, "tokenizer.ggml.bos_token_id", WK_GGUF_TYPE_U32, &b);
    }
    if (extra)
        extra(w);
    const wk_status st = wk_gguf_writer_write(w, path, 3);
    wk_gguf_writer_free(w);
    wk_gguf *g = NULL;
    if (st != WK_OK || wk_gguf_open(&g, path) != WK_OK) {
        TEST_CHECK(0, "writing %s: %s", path, wk_last_error());
        return NULL;
    }
    tok_vocab *v = NULL;
    err[0] = '\0';
    if (tok_vocab_load(&v, g, err, cap))
        v = NULL;
    wk_gguf_close(g);
    return v;
}

/* encode text; compare with want (nw ids). */
static void expect_ids(const tok_vocab *v, const char *text, int add_special, int parse_special,
                       const int32_t *want, size_t nw, const char *what)
{
    int32_t *ids = NULL;
    size_t n = 0;
    char err[256];
    if (!TEST_CHECK(tok_encode(v, text, strlen(text), add_special, parse_special, &ids, &n, err,
                               sizeof err) == 0, "%s: %s", what, err))
        return;
    int same = n == nw && (n == 0 || !memcmp(ids, want, n * sizeof *ids));
    if (!TEST_CHECK(same, "%s: '%s' gave %zu ids", what, text, n)) {
        for (size_t i = 0; i < n; i++)
            printf(" %d", ids[i]);
        printf("\n");
    }
    free(ids);
}

static void expect_text(const tok_vocab *v, const int32_t *ids, size_t n, int clean,
                        const char *want, const char *what)
{
    size_t len = 0;
    char *s = tok_decode(v, ids, n, 1, clean, &len);
    TEST_CHECK(s && len == strlen(want) && !memcmp(s, want, len), "%s: decoded '%s', want '%s'",
               what, s ? s : "(null)", want);
    free(s);
}

/* ------------------------------------------------------------------ SentencePiece */
/* 0 <unk>, 1 <s>, 2 </s>, 3.. byte tokens <0x00>..<0xFF>, then pieces */
enum { SP_U = 259, SP_A, SP_B, SP_UA, SP_AB, SP_X, SP_N };
static const char *sp_tokens[SP_N];
static float sp_scores[SP_N];
static int32_t sp_types[SP_N];
static char sp_bytes[256][8];

static void sp_vocab(float score_ua, float score_ab)
{
    sp_tokens[0] = "<unk>";
    sp_tokens[1] = "<s>";
    sp_tokens[2] = "</s>";
    sp_types[0] = 2;
    sp_types[1] = sp_types[2] = 3;
    for (int b = 0; b < 256; b++) {
        snprintf(sp_bytes[b], sizeof sp_bytes[b], "<0x%02X>", b);
        sp_tokens[3 + b] = sp_bytes[b];
        sp_types[3 + b] = 6;
    }
    static const char *const pieces[] = {"\xe2\x96\x81", "a", "b", ("\xe2\x96\x81" "a"), "ab", "x"};
    for (int i = SP_U; i < SP_N; i++) {
        sp_tokens[i] = pieces[i - SP_U];
        sp_types[i] = 1;
        sp_scores[i] = -5.0f;
    }
    sp_scores[SP_UA] = score_ua;
    sp_scores[SP_AB] = score_ab;
}

static void test_spm(void)
{
    char err[256];
    sp_vocab(-1.0f, -2.0f);
    spec s = {"llama", NULL, NULL, sp_tokens, SP_N, sp_scores, sp_types, NULL, 0, -1};
    tok_vocab *v = load_spec(&s, NULL, err, sizeof err);
    if (!TEST_CHECK(v != NULL, "spm vocabulary: %s", err))
        return;
    /* "ab" -> "▁ab": ▁a (-1) beats ab (-2); "▁ab" is no token: [▁a, b] */
    expect_ids(v, "ab", 0, 0, (const int32_t[]){SP_UA, SP_B}, 2, "spm higher score first");
    /* add_special: BOS (llama's default add_bos), id 1 by default */
    expect_ids(v, "ab", 1, 0, (const int32_t[]){1, SP_UA, SP_B}, 3, "spm BOS");
    /* "é" (C3 A9): no piece: the byte tokens 3 + 0xC3, 3 + 0xA9 after ▁ */
    expect_ids(v, "\xc3\xa9", 0, 0, (const int32_t[]){SP_U, 3 + 0xC3, 3 + 0xA9}, 3,
               "spm byte fallback");
    /* a written control token: with parse_special its id, and a leading ▁ after it */
    expect_ids(v, "x</s>a", 0, 1, (const int32_t[]){SP_U, SP_X, 2, SP_UA}, 4, "spm special");
    /* without parse_special "</s>" is text: bytes < / s > */
    expect_ids(v, "</s>", 0, 0,
               (const int32_t[]){SP_U, 3 + '<', 3 + '/', 3 + 's', 3 + '>'}, 5, "spm no special");
    /* the empty text: nothing, or BOS alone */
    expect_ids(v, "", 0, 0, NULL, 0, "spm empty");
    expect_ids(v, "", 1, 0, (const int32_t[]){1}, 1, "spm empty + BOS");
    /* decoding drops the one leading space, joins bytes */
    expect_text(v, (const int32_t[]){SP_UA, SP_B}, 2, 1, "ab", "spm decode");
    expect_text(v, (const int32_t[]){SP_U, 3 + 0xC3, 3 + 0xA9, SP_U, SP_X}, 5, 1, "\xc3\xa9 x",
                "spm decode bytes");
    expect_text(v, (const int32_t[]){1, SP_UA}, 2, 1, "<s> a", "spm decode special shown");
    size_t len;
    const char *p = tok_piece(v, 1, 0, &len);
    TEST_CHECK(p && len == 0, "a control token's piece is empty unless special");
    TEST_CHECK(tok_piece(v, SP_N, 1, &len) == NULL, "an id past the vocabulary has no piece");
    TEST_CHECK(tok_is_eog(v, 2) && !tok_is_eog(v, SP_A), "</s> (eos 2) ends generation");
    tok_vocab_free(v);

    /* ab (0) now beats ▁a (-1): [▁, ab] */
    sp_vocab(-1.0f, 0.0f);
    v = load_spec(&s, NULL, err, sizeof err);
    if (TEST_CHECK(v != NULL, "%s", err))
        expect_ids(v, "ab", 0, 0, (const int32_t[]){SP_U, SP_AB}, 2, "spm score order");
    tok_vocab_free(v);

    /* Phi-3 (by general.name): control tokens swallow the spaces after them */
    s.name = "Phi3 mini";
    v = load_spec(&s, NULL, err, sizeof err);
    if (TEST_CHECK(v != NULL, "%s", err))
        expect_ids(v, "</s>  a", 0, 1, (const int32_t[]){2, SP_UA}, 2, "phi-3 rstrip");
    tok_vocab_free(v);
    s.name = NULL;
    v = load_spec(&s, NULL, err, sizeof err);
    if (TEST_CHECK(v != NULL, "%s", err))
        expect_ids(v, "</s>  a", 0, 1, (const int32_t[]){2, SP_U, SP_U, SP_UA}, 4, "no rstrip");
    tok_vocab_free(v);
}

/* ------------------------------------------------------------------ byte-level BPE */
/* GPT-2's characters: 'Ġ' (U+0120) is the space, 'Ċ' (U+010A) the newline */
#define G "\xc4\xa0"
static const char *const bpe_tokens[] = {"a", "b", "c", G, "ab", G "a", G "ab", "<|endoftext|>",
                                         ",", "'", "s", G "c", "\xc4\x8a"};
enum { B_A, B_B, B_C, B_SP, B_AB, B_SPA, B_SPAB, B_EOT, B_COMMA, B_APOS, B_S, B_SPC, B_NL, B_N };
static const int32_t bpe_types[B_N] = {1, 1, 1, 1, 1, 1, 1, 3, 1, 1, 1, 1, 1};

static void test_bpe(void)
{
    char err[256];
    const char *const merges[] = {"a b", G " a", G " ab", G " c"};
    spec s = {"gpt2", "gpt-2", NULL, bpe_tokens, B_N, NULL, bpe_types, merges, 4, -1};
    tok_vocab *v = load_spec(&s, NULL, err, sizeof err);
    if (!TEST_CHECK(v != NULL, "bpe vocabulary: %s", err))
        return;
    /* " ab" is one word "Ġab": a+b (rank 0) first, then Ġ+ab (rank 2) */
    expect_ids(v, " ab", 0, 0, (const int32_t[]){B_SPAB}, 1, "bpe lower rank first");
    /* "ab c": words "ab" and " c" */
    expect_ids(v, "ab c", 0, 0, (const int32_t[]){B_AB, B_SPC}, 2, "bpe words");
    /* "a's": the contraction "'s" is a word of its own: "a", "'", "s" (no merges) */
    expect_ids(v, "a's", 0, 0, (const int32_t[]){B_A, B_APOS, B_S}, 3, "bpe contraction");
    /* a written control token with parse_special */
    expect_ids(v, "a<|endoftext|>", 0, 1, (const int32_t[]){B_A, B_EOT}, 2, "bpe special");
    expect_ids(v, "a\n", 0, 0, (const int32_t[]){B_A, B_NL}, 2, "bpe newline byte");
    /* decoding: GPT-2's characters back to bytes; the clean-up drops the space before ',' and in
     * " 's" (llama.cpp's clean_spaces), only when asked for */
    expect_text(v, (const int32_t[]){B_A, B_SP, B_COMMA, B_SP, B_APOS, B_S}, 6, 1, "a,'s",
                "bpe clean-up");
    expect_text(v, (const int32_t[]){B_A, B_SP, B_COMMA, B_SP, B_APOS, B_S}, 6, 0, "a , 's",
                "bpe raw decode");
    expect_text(v, (const int32_t[]){B_SPAB, B_NL}, 2, 1, " ab\n", "bpe no leading strip");
    tok_vocab_free(v);

    /* every pre-tokenizer's regexes compile in PCRE2 (the vocabulary tests use only some) */
    const int nre = tok_pre_compile_all(err, sizeof err);
    TEST_CHECK(nre >= 60, "%d regexes compile: %s", nre, nre < 0 ? err : "");

    /* the ranks reversed: Ġ+a (rank 0) first, then Ġa+b has no merge */
    const char *const merges2[] = {G " a", "a b"};
    s.merges = merges2;
    s.n_merges = 2;
    v = load_spec(&s, NULL, err, sizeof err);
    if (TEST_CHECK(v != NULL, "%s", err))
        expect_ids(v, " ab", 0, 0, (const int32_t[]){B_SPA, B_B}, 2, "bpe rank order");
    tok_vocab_free(v);

    /* llama3's pre-tokenizer (ignore_merges, add_bos): a whole word that is a token is it, even
     * without the merges that build it */
    s.pre = "llama-bpe";
    s.merges = merges;
    s.n_merges = 0;
    s.bos = B_EOT;
    v = load_spec(&s, NULL, err, sizeof err);
    if (TEST_CHECK(v != NULL, "%s", err)) {
        expect_ids(v, " ab", 0, 0, (const int32_t[]){B_SPAB}, 1, "ignore_merges");
        expect_ids(v, " ab", 1, 0, (const int32_t[]){B_EOT, B_SPAB}, 2, "llama3 adds BOS");
        TEST_CHECK(tok_adds_bos(v) && tok_bos(v) == B_EOT, "llama3: BOS from the file");
    }
    tok_vocab_free(v);
}

/* ------------------------------------------------------------------ streaming */
static void test_stream(void)
{
    char buf[64] = {0};
    FILE *f = fmemopen(buf, sizeof buf, "w");
    if (!TEST_CHECK(f != NULL, "fmemopen"))
        return;
    tok_stream s = {{0}, 0};
    tok_stream_put(&s, "a\xc3", 2, f); /* 'a', then half of é */
    TEST_CHECK(!strcmp(buf, "a") && s.n == 1, "the first byte of a character is held: '%s'", buf);
    tok_stream_put(&s, "\xa9", 1, f);
    TEST_CHECK(!strcmp(buf, "a\xc3\xa9") && s.n == 0, "the character comes out whole");
    tok_stream_put(&s, "\xf0\x9f", 2, f); /* half of an emoji, then a plain byte */
    tok_stream_put(&s, "b", 1, f);
    TEST_CHECK(!strcmp(buf, "a\xc3\xa9\xf0\x9f" "b"),
               "a character that cannot complete is written");
    tok_stream_put(&s, "\xe2\x96", 2, f);
    tok_stream_flush(&s, f);
    fclose(f);
    TEST_CHECK(!strcmp(buf, "a\xc3\xa9\xf0\x9f" "b\xe2\x96") && s.n == 0,
               "flush writes what is held");
}

/* ------------------------------------------------------------------ bad vocabularies */
static void add_bad_scores(wk_gguf_writer *w)
{
    const float sc[2] = {0, 0};
    wk_gguf_writer_add_array(w, "tokenizer.ggml.scores", WK_GGUF_TYPE_F32, sc, 2);
}
static void add_bad_types(wk_gguf_writer *w)
{
    const float t[3] = {1, 1, 1};
    wk_gguf_writer_add_array(w, "tokenizer.ggml.token_type", WK_GGUF_TYPE_F32, t, 3);
}
static void add_int_tokens(wk_gguf_writer *w)
{
    const int32_t t[3] = {1, 2, 3};
    wk_gguf_writer_add_array(w, "tokenizer.ggml.tokens", WK_GGUF_TYPE_I32, t, 3);
}
static void add_eos_far(wk_gguf_writer *w)
{
    const uint32_t e = 1000000;
    wk_gguf_writer_add(w, "tokenizer.ggml.eos_token_id", WK_GGUF_TYPE_U32, &e);
}

static void expect_refusal(const spec *s, void (*extra)(wk_gguf_writer *), const char *words)
{
    char err[256];
    tok_vocab *v = load_spec(s, extra, err, sizeof err);
    TEST_CHECK(v == NULL && strstr(err, words), "refused with \"%s\": got \"%s\"", words,
               v ? "(loaded)" : err);
    tok_vocab_free(v);
}

static void test_bad(void)
{
    static const char *const three[] = {"a", "b", ""};
    spec s = {"llama", NULL, NULL, three, 3, NULL, NULL, NULL, 0, -1};
    expect_refusal(&s, add_bad_scores, "tokenizer.ggml.scores has 2 elements, fewer than the 3");
    expect_refusal(&s, add_bad_types, "tokenizer.ggml.token_type is not an array of i32");
    spec none = {"llama", NULL, NULL, NULL, 0, NULL, NULL, NULL, 0, -1};
    expect_refusal(&none, add_int_tokens, "tokenizer.ggml.tokens is not an array of string");
    expect_refusal(&none, NULL, "the file has no tokenizer.ggml.tokens");
    spec nomodel = {NULL, NULL, NULL, three, 3, NULL, NULL, NULL, 0, -1};
    expect_refusal(&nomodel, NULL, "the file has no tokenizer (tokenizer.ggml.model)");
    spec t5 = {"t5", NULL, NULL, three, 3, NULL, NULL, NULL, 0, -1};
    expect_refusal(&t5, NULL, "tokenizer.ggml.model 't5' (Unigram) is not supported");
    spec odd = {"sentencepiece2", NULL, NULL, three, 3, NULL, NULL, NULL, 0, -1};
    expect_refusal(&odd, NULL, "tokenizer.ggml.model 'sentencepiece2' is unknown");
    spec nomerges = {"gpt2", "gpt-2", NULL, three, 3, NULL, NULL, NULL, 0, -1};
    expect_refusal(&nomerges, NULL, "the file has no tokenizer.ggml.merges");
    static const char *const m[] = {"a b"};
    spec pre = {"gpt2", "my-new-pre", NULL, three, 3, NULL, NULL, m, 1, -1};
    expect_refusal(&pre, NULL, "tokenizer.ggml.pre 'my-new-pre' is unknown");
    pre.pre = "kimi-k2";
    expect_refusal(&pre, NULL, "tokenizer.ggml.pre 'kimi-k2' is not supported");

    /* ids out of range in the file: BOS and EOS keep llama's defaults (1, 2) */
    char err[256];
    s.bos = 7;
    tok_vocab *v = load_spec(&s, add_eos_far, err, sizeof err);
    if (TEST_CHECK(v != NULL, "%s", err)) {
        TEST_EQ_INT(tok_bos(v), 1);
        TEST_EQ_INT(tok_eos(v), 2);
        size_t len;
        const char *p = tok_piece(v, 2, 1, &len); /* the empty token is renamed */
        TEST_CHECK(p && len == 9 && !memcmp(p, "[EMPTY_2]", 9), "empty token renamed");
        /* no piece and no byte token: <unk> (0, llama's default) for each byte of "▁z" */
        expect_ids(v, "z", 0, 0, (const int32_t[]){0, 0, 0, 0}, 4, "unk for bytes");
    }
    tok_vocab_free(v);
}

/* ------------------------------------------------------------------ chat formats */
static void expect_chat(chat_format f, const char *sys, const char *user, const char *want)
{
    char *s = chat_apply(f, sys, user);
    TEST_CHECK(s && !strcmp(s, want), "%s: got '%s'", chat_format_name(f), s ? s : "(null)");
    free(s);
}

static void test_chat(void)
{
    const char *other;
    static const struct {
        const char *tmpl;
        chat_format f;
    } det[] = {
        {"{% for m in messages %}<|im_start|>{{ m.role }}\n", CHAT_CHATML},
        {"{{ '<|start_header_id|>' + role + '<|end_header_id|>\n\n' }}", CHAT_LLAMA3},
        {"{{ bos_token }}[INST] {{ m }} [/INST]", CHAT_LLAMA2},
        {"[INST] <<SYS>>\n{{ s }}\n<</SYS>>", CHAT_LLAMA2_SYS},
        {"{{ '[SYSTEM_PROMPT]' }}[INST]", CHAT_MISTRAL_V7},
        {"[AVAILABLE_TOOLS] {{ '[INST]' }}", CHAT_MISTRAL_V3},
        {"<start_of_turn>user\n", CHAT_GEMMA},
        {"<|user|>\n{{ m }}<|end|>\n<|assistant|>\n", CHAT_PHI3},
        {"<|im_start|>x<|im_sep|>", CHAT_UNKNOWN},
        {"Hello {{ messages }}", CHAT_UNKNOWN},
    };
    for (size_t i = 0; i < sizeof det / sizeof det[0]; i++)
        TEST_CHECK(chat_detect(det[i].tmpl, strlen(det[i].tmpl), &other) == det[i].f,
                   "detect template %zu as %s", i, chat_format_name(det[i].f));
    chat_detect("<|im_start|>x<|im_sep|>", 23, &other);
    TEST_CHECK(!strcmp(other, "phi4"), "phi4 named: %s", other);
    expect_chat(CHAT_CHATML, "S", "Hi",
                "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
                "<|im_start|>assistant\n");
    expect_chat(CHAT_LLAMA3, NULL, " Hi \n",
                "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
                "<|start_header_id|>assistant<|end_header_id|>\n\n");
    expect_chat(CHAT_GEMMA, "Be brief.", "Hi",
                "<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\n");
    expect_chat(CHAT_MISTRAL_V1, "S", "Hi", " [INST] S\n\nHi [/INST]");
    expect_chat(CHAT_MISTRAL_V3, NULL, "Hi", "[INST] Hi[/INST]");
    expect_chat(CHAT_MISTRAL_V3_TEKKEN, NULL, "Hi", "[INST]Hi[/INST]");
    expect_chat(CHAT_MISTRAL_V7, "S", "Hi", "[SYSTEM_PROMPT] S[/SYSTEM_PROMPT][INST] Hi[/INST]");
    expect_chat(CHAT_LLAMA2_SYS, "S", "Hi", "[INST] <<SYS>>\nS\n<</SYS>>\n\nHi [/INST]");
    expect_chat(CHAT_LLAMA2, "S", "Hi", "[INST] S\nHi [/INST]");
    expect_chat(CHAT_PHI3, NULL, "Hi", "<|user|>\nHi<|end|>\n<|assistant|>\n");
    TEST_CHECK(chat_apply(CHAT_UNKNOWN, NULL, "Hi") == NULL, "no prompt for an unknown format");
}

int main(void)
{
    snprintf(dir, sizeof dir, "%s/wick-tok-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_spm();
    test_bpe();
    test_stream();
    test_bad();
    test_chat();
    char path[512];
    snprintf(path, sizeof path, "%s/vocab.gguf", dir);
    unlink(path);
    rmdir(dir);
    return testlib_summary();
}
