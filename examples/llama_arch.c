/* llama_arch.c: the model families of examples/llama.c — what each architecture that
 * llama.cpp's converter writes (general.architecture) changes in the Llama block, and the
 * family's own metadata keys. As llama.cpp 0c1e570 reads them (src/models/<arch>.cpp,
 * src/llama-model.cpp; docs/llama.md, "Families"):
 *   llama   the base: rope on adjacent pairs (the converter permutes Wq/Wk rows), SwiGLU.
 *   qwen2   + biases on q, k, v; NEOX rope (halves: the converter does not permute Qwen's rows).
 *   qwen3   + per-head RMSNorm of q and k before rope (attn_q_norm, attn_k_norm); NEOX rope.
 *   gemma2  NEOX rope; GEGLU (gelu, tanh approximation); embeddings times sqrt(dim); norms of each
 *           sublayer's output (post_attention_norm, post_ffw_norm) before its residual add;
 *           attention and final logits soft-capped (c tanh(x / c)); every other block (the even
 *           ones, by default) attends to a sliding window of the last sliding_window keys; the
 *           output matrix is token_embd.
 *   gemma3  gemma2's block with q/k norms and no soft-capping (a final cap only when the file
 *           has the key); local blocks (5 of every 6 by default) with a window and their own rope
 *           base (rope.freq_base_swa, default 10000) and no rope scaling; global blocks with
 *           rope.freq_base and the file's linear rope scaling.
 * Gemma's RMSNorm multiplies by (1 + w): the converter writes w + 1 into the GGUF (conversion/
 * gemma.py, every *norm.weight), so the file's weights are used as they are. */
#include "llama_model.h"
#include "llama_util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *arch_key(const model *m, const char *key)
{
    static char buf[128];
    snprintf(buf, sizeof buf, "%s.%s", m->fam.name, key);
    return buf;
}

void family_read(model *m, const wk_gguf *g)
{
    family *f = &m->fam;
    memset(f, 0, sizeof *f);
    strcpy(f->name, "llama");
    const int64_t ai = wk_gguf_find_key(g, "general.architecture");
    if (ai >= 0) { /* absent: a Llama file of the first GGUF writers */
        wk_gguf_value v;
        const char *s;
        uint64_t len;
        CK(wk_gguf_kv_value(&v, g, ai));
        CK(wk_gguf_get_string(&s, &len, v));
        static const struct { const char *name; arch_id id; } known[] = {
            {"llama", ARCH_LLAMA}, {"qwen2", ARCH_QWEN2}, {"qwen3", ARCH_QWEN3},
            {"gemma2", ARCH_GEMMA2}, {"gemma3", ARCH_GEMMA3}};
        int found = 0;
        for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
            if (strlen(known[i].name) == len && !memcmp(s, known[i].name, len)) {
                f->id = known[i].id;
                strcpy(f->name, known[i].name);
                found = 1;
            }
        if (!found)
            die("general.architecture is \"%.*s\": this example runs llama, qwen2, qwen3, gemma2 "
                "and gemma3", (int)len, s);
    }
    const int gemma = f->id == ARCH_GEMMA2 || f->id == ARCH_GEMMA3;
    f->rope_neox = f->id != ARCH_LLAMA;
    f->qkv_bias = f->id == ARCH_QWEN2;
    f->qk_norm = f->id == ARCH_QWEN3 || f->id == ARCH_GEMMA3;
    f->post_norms = f->geglu = f->embd_scale = gemma;
    f->tied = f->id == ARCH_GEMMA2;
    if (f->id == ARCH_GEMMA2) { /* llama.cpp's defaults when the keys are absent */
        f->attn_softcap = meta_float(g, arch_key(m, "attn_logit_softcapping"), 50.0);
        f->final_softcap = meta_float(g, arch_key(m, "final_logit_softcapping"), 30.0);
        f->swa = meta_int(g, arch_key(m, "attention.sliding_window"), 4096, 0);
    }
    if (f->id == ARCH_GEMMA3) {
        f->final_softcap = meta_float(g, arch_key(m, "final_logit_softcapping"), 0.0);
        f->swa = meta_int(g, arch_key(m, "attention.sliding_window"), 0, 0);
    }
    if (f->attn_softcap < 0 || f->final_softcap < 0 || f->swa < 0)
        die("%s: negative soft-capping or sliding window", f->name);
    f->host_pos = f->swa > 0 || f->attn_softcap > 0;
}

void family_finish(model *m, const wk_gguf *g)
{
    const family *f = &m->fam;
    m->attn_scale = 1.0 / sqrt((double)m->hd);
    /* Gemma 2 and 3 scale q by query_pre_attn_scalar^-1/2, which GGUF files do not carry:
     * llama.cpp takes head_dim, except for the 27B models (46 and 62 blocks), whose scalar is
     * dim / heads (the values of the Hugging Face configs). */
    if ((f->id == ARCH_GEMMA2 && m->n_layer == 46) || (f->id == ARCH_GEMMA3 && m->n_layer == 62))
        m->attn_scale = 1.0 / sqrt((double)(m->dim / m->n_head));
    m->lrope_base = meta_float(g, arch_key(m, "rope.freq_base_swa"),
                               f->id == ARCH_GEMMA3 ? 10000.0 : m->rope_base);
    m->lrope_scale = f->id == ARCH_GEMMA3 ? 1.0 : m->rope_scale;
}

int family_block_is_swa(const model *m, const wk_gguf *g, int64_t l)
{
    if (m->fam.swa <= 0)
        return 0;
    const char *key = arch_key(m, "attention.sliding_window_pattern");
    const int64_t i = wk_gguf_find_key(g, key);
    int64_t n = m->fam.id == ARCH_GEMMA2 ? 2 : 6; /* llama.cpp's defaults */
    if (i >= 0) {
        wk_gguf_value v, e;
        CK(wk_gguf_kv_value(&v, g, i));
        if (wk_gguf_value_type(v) == WK_GGUF_TYPE_ARRAY) { /* one bool per block */
            wk_gguf_type et;
            uint64_t count;
            int b = 0;
            CK(wk_gguf_array_info(&et, &count, v));
            if (et != WK_GGUF_TYPE_BOOL || count != (uint64_t)m->n_layer)
                die("%s: expected %lld bools", key, (long long)m->n_layer);
            CK(wk_gguf_array_elem(&e, v, (uint64_t)l));
            CK(wk_gguf_get_bool(&b, e));
            return b;
        }
        n = meta_int(g, key, n, 1);
    }
    /* a pattern of n: blocks l with l % n < n - 1 are local, every n-th global (n = 0: all
     * local) */
    return n == 0 || l % n < n - 1;
}
