/* llama.c: a decoder for GGUF files of the Llama family as llama.cpp writes them (llama, qwen2,
 * qwen3, gemma2, gemma3: what each changes is in llama_arch.c), on wick's public API only
 * (include/wick.h). Runs unchanged on the CPU, CUDA and ROCm (--device).
 *
 * Build: with the project (cmake/examples.cmake) -> build/wick_llama.
 * Run:   wick_llama MODEL.gguf --prompt "Once upon a time" -n 32 [--device cuda:0]
 *                   [--temp 0.8 --top-p 0.95 --seed 7]          (default: greedy)
 *        wick_llama MODEL.gguf --chat --prompt "Why is the sky blue?" [--system TEXT]
 *        wick_llama MODEL.gguf --prompt-ids "1 15043 29892" -n 32  (token ids in)
 *        wick_llama MODEL.gguf --prompt-ids IDS --force IDS --logits OUT.f32
 *                   (the test mode: logits of every prompt position, then of every teacher-forced
 *                    decode step, as raw little-endian f32 rows of the vocabulary size)
 *                   [--logits-prompt last]  (of the prompt's last position only: the prefill
 *                    that generation and --bench run, whose last block's MLP sees one row)
 *        wick_llama MODEL.gguf --bench 512,128 [--reps 3]       (prefill / decode tokens/s)
 *                   [--depth 4096]         (both after 4096 tokens in the cache, llama-bench -d)
 *                   [--profile 1]          (and the time per op of one prefill and decode step)
 *        wick_llama MODEL.gguf ... --devices cuda:0,cuda:1       (tensor parallel: any mode)
 *
 * The model (llama.cpp's LLM_ARCH_LLAMA):
 *   x = token_embd[ids]
 *   per block: h = rms_norm(x) * attn_norm; q, k, v = h Wq^T, h Wk^T, h Wv^T;
 *              q, k rotated by rope; k, v appended to the KV cache;
 *              grouped-query attention of q over the cache (causal, q k^T scaled by 1/sqrt(hd));
 *              x += attn Wo^T;  h = rms_norm(x) * ffn_norm;  x += (silu(h Wg^T) * h Wu^T) Wd^T
 *   logits = (rms_norm(x) * output_norm) Wout^T   (Wout = token_embd when `output` is absent)
 * Rope: llama.cpp's converter permutes the rows of Wq and Wk (HF's "rotate halves" layout) so that
 * ggml's NORMAL rope mode applies, which rotates ADJACENT pairs (x[2i], x[2i+1]) by pos * theta_i,
 * theta_i = base^(-2i/head_dim) (divided by rope_freqs[i] when that tensor exists, Llama 3.1;
 * positions divided by llama.rope.scaling.factor under "linear" scaling).
 * That is wick's rope_i (interleaved), not wick_rope (halves): docs/llama.md. The other families
 * keep Hugging Face's rows and rotate halves (wk_rope), and add their own steps in functions of
 * their own: qkv_family (Qwen2's biases, q/k norms), attention_family (Gemma's soft-capping and
 * sliding windows), post_norm, embed_scale, softcap (Gemma), GEGLU in mlp_part.
 * Tensor parallel (--devices A,B,...; llama_model.h, docs/llama.md): each device (rank) holds a
 * share of the heads, of the ffn columns and of the vocabulary; the products of Wo and Wd are
 * partial sums, added over the ranks by wk_comm_all_reduce (include/wick_comm.h). This one
 * thread issues every rank's ops in turn, the all_reduces of all ranks in one group.
 * Rope and the cache write are one op per block (wk_rope_kv_append: q and k rotated with the
 * full position tables, rope(k) and v written into the cache rows of their positions), the
 * attention one more (wk_decode_attention, the query scale applied there). Decode steps (one
 * token) read the token, its position and the attention's key count from a small device buffer
 * (step_upload): the embedding, wk_rope_kv_append and wk_decode_attention_lens read them there,
 * so on GPUs the first step is captured as a graph per device (the all_reduces included) and
 * every later step is one replay of each (--graph 0: issued op by op; the logits are the same
 * bits either way).
 * Text in and out: examples/llama_text.c (the file's tokenizer, examples/tokenizer.h; its chat
 * format, examples/chat_template.h); generated text goes to stdout as the tokens come, until an
 * end-of-generation token (--ignore-eos: never) or -n tokens; the rest (prompt ids, generated
 * ids, speeds) to stderr.
 * Every weight matrix stays in its file type (F32, F16, BF16 or a GGML block type) as raw bytes
 * on the device and is used through wk_qmatmul / wk_qembedding; activations are f32.
 * Defaults (docs/llama.md, "Precision"): on GPUs (every backend but the CPU, simt included) the
 * products of more than 8 rows (prefill) run in f16 with f32 accumulation (--gemm-dtype), and
 * the KV cache is f16 (--kv-dtype; f32 for Gemma 2/3, whose soft-capping and windows take the
 * composed attention); on the CPU both are f32. `--gemm-dtype f32 --kv-dtype f32` is the exact
 * path everywhere (the tests' bounds assume it).
 * Each residual add is fused with the norm that follows it (wk_add_rms_norm: the next block's
 * attn_norm, the ffn_norm, or output_norm after the last block), and the gate with the up
 * projection (wk_binary SWIGLU); in decode steps of block-quantized weights (at most 8 tokens)
 * the norm also makes the int8 activations that the products after it read (wk_add_rms_norm_act,
 * wk_qmatmul_act: no quantization per product). --fuse 0 runs each as its separate ops (the
 * same bits). */
#include "llama_model.h"
#include "llama_text.h"
#include "llama_util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------------ the forward pass */
/* The dtype a product of `rows` rows reads x in: --gemm-dtype (f16 by default on GPUs) for
 * more than 8 rows (prefill), else f32 (decode steps: the matrix-vector kernels, whose
 * quantized paths round x to 8-bit blocks themselves). */
static wk_dtype act_dtype(const model *m, int64_t rows)
{
    return rows > 8 ? m->gemm_dt : WK_DTYPE_F32;
}

/* Whether W's product reads int8 activations made by the producer `bit` (QACT_NORM, QACT_GLU,
 * QACT_ATTN: --qact): a block type (not F32/F16/BF16) at rows <= 8 (the products that quantize
 * x), with --fuse. */
static int reads_act(const model *m, const qweight *w, int64_t rows, int bit)
{
    return m->fuse && (m->qact & bit) && rows <= 8 && w->w && wk_qtype_block_elems(w->qt) > 1 &&
           w->k % 32 == 0;
}

/* out (rows, W.n) f32 = x (rows, W.k) @ W^T; lx may be any layout of x. x is f32, or already
 * act_dtype(rows). With a 16-bit act_dtype the product reads x rounded to that type and rounds
 * its output to it: on a GPU the weights are then dequantized to it and the GEMM runs on its
 * tensor cores (f32 accumulation); the output comes back as f32, or stays in that type with
 * narrow (for a consumer that widens it to f32 itself: the same values, half the bytes). act:
 * x's int8 activations (wk_add_rms_norm_act) or NULL; where reads_act, the product takes them
 * (wk_qmatmul_act: the bits of wk_qmatmul on x, without quantizing x again). */
static wk_storage *linear_out(const model *m, const wk_storage *x, const wk_layout *lx,
                              const qweight *w, const wk_storage *act, int narrow)
{
    wk_storage *out = NULL, *xc = NULL, *oc = NULL;
    const int64_t rows = wk_layout_elem_count(lx) / w->k;
    const wk_dtype dt = act_dtype(m, rows);
    char label[64]; /* for --profile: the product's shape and type */
    snprintf(label, sizeof label, "wk_qmatmul %s %lldx%lld", wk_qtype_name(w->qt),
             (long long)w->n, (long long)w->k);
    if (act && dt == WK_DTYPE_F32 && reads_act(m, w, rows, QACT_ALL)) {
        CKL(label, wk_qmatmul_act(&out, dt, act, rows, w->w, w->qt, w->n, w->k));
        return out;
    }
    if (dt == WK_DTYPE_F32) {
        CKL(label, wk_qmatmul(&out, x, lx, w->w, w->qt, w->n, w->k));
        return out;
    }
    const wk_layout lc = lay(lx->rank, lx->dims), lo = lay2(rows, w->n);
    if (wk_storage_dtype(x) != dt)
        CK(wk_to_dtype(&xc, x, lx, dt));
    CKL(label, wk_qmatmul(&oc, xc ? xc : x, xc ? &lc : lx, w->w, w->qt, w->n, w->k));
    wk_storage_free(xc);
    if (narrow)
        return oc;
    CK(wk_to_dtype(&out, oc, &lo, WK_DTYPE_F32));
    wk_storage_free(oc);
    return out;
}

static wk_storage *linear(const model *m, const wk_storage *x, const wk_layout *lx,
                          const qweight *w, const wk_storage *act)
{
    return linear_out(m, x, lx, w, act, 0);
}

static wk_storage *rmsnorm(const wk_storage *x, const wk_layout *lx, const wk_storage *alpha,
                           int64_t dim, float eps)
{
    wk_storage *out = NULL;
    const wk_layout la = lay1(dim);
    CK(wk_rms_norm(&out, x, lx, alpha, &la, eps));
    return out;
}

static wk_storage *binary(wk_op op, const wk_storage *a, const wk_storage *b, const wk_layout *l)
{
    wk_storage *out = NULL;
    CK(wk_binary(&out, op, a, l, b, l));
    return out;
}

/* Gemma: the embeddings times sqrt(dim) (an f32 factor, as llama.cpp); nothing otherwise. */
static void embed_scale(const model *m, wk_storage **x, int64_t T)
{
    if (!m->fam.embd_scale)
        return;
    wk_storage *y = NULL;
    const wk_layout lx = lay2(T, m->dim);
    CK(wk_affine(&y, *x, &lx, (double)sqrtf((float)m->dim), 0.0));
    wk_storage_free(*x);
    *x = y;
}

/* x (n elements) -> c tanh(x / c), c = cap; frees x. */
static wk_storage *softcap(wk_storage *x, int64_t n, double cap)
{
    wk_storage *t = NULL, *y = NULL;
    const wk_layout l = lay1(n);
    CK(wk_affine(&t, x, &l, 1.0 / cap, 0.0));
    wk_storage_free(x);
    CK(wk_unary(&y, WK_OP_TANH, t, &l));
    wk_storage_free(t);
    CK(wk_affine(&t, y, &l, cap, 0.0));
    wk_storage_free(y);
    return t;
}

/* Columns [off, off + width) of a row-major (T, stride) activation: a view, no copy. */
typedef struct cols {
    const wk_storage *s;
    int64_t off, stride;
} cols;

/* Steps of at most this many tokens use the fused wk_decode_attention on GPUs with an f32 cache;
 * longer ones (prefill) the composed attention there, whose matmuls use the GEMM for many
 * queries at once. The CPU's fused op takes any number of queries (key tiles with an online
 * softmax, the scores never materialised), so there every step uses it; and so does a 16-bit
 * cache on GPUs, whose q, k and v of one 16-bit dtype take the op's matrix-unit kernels (for
 * prefill its flash kernel: head size 64 or 128, 64 queries or more). */
#define FUSED_ATTN_MAX_T 16

/* Whether the fused op serves T queries (where nothing of Gemma's is needed; above). */
static int fused_serves(const model *m, int64_t T)
{
    return T <= FUSED_ATTN_MAX_T || m->kv_dt != WK_DTYPE_F32 ||
           wk_device_backend(m->dev) == WK_BACKEND_CPU;
}

/* (1, H, T, hd) view of the columns c of a (T, stride) activation: H heads of hd. */
static wk_layout heads(const model *m, cols c, int64_t T, int64_t H)
{
    const int64_t d[4] = {1, H, T, m->hd}, s[4] = {T * c.stride, m->hd, c.stride, 1};
    return view(4, d, s, c.off);
}

/* (1, KV, n, hd) view of a block's cache (KV, ctx, hd): rows [k0, k0 + n) of every kv head. */
static wk_layout cache_rows(const model *m, int64_t k0, int64_t n)
{
    const int64_t d[4] = {1, m->n_kv, n, m->hd};
    const int64_t s[4] = {m->n_kv * m->ctx * m->hd, m->ctx * m->hd, m->hd, 1};
    return view(4, d, s, k0 * m->hd);
}

/* One op for the step's rope and cache write: q and k (columns of (T, stride) activations) rotated
 * at positions p .. p+T-1 (rope_i; rope, halves, for the NEOX families: Qwen, Gemma, whose
 * converters do not permute Wq/Wk), rope(k) and v written into block b's cache rows p.. in the
 * cache's dtype. p: the step's device position (step[1]; decode, so a captured graph serves every
 * step) when from_step, else m->pos. Gemma 3's local blocks use their own tables. Returns rope(q)
 * (1, H, T, hd) in the cache's dtype (the attention's query), unscaled (the attention applies
 * attn_scale). */
static wk_storage *rope_kv(model *m, block *b, cols q, cols k, cols v, int64_t T, int from_step)
{
    const int own = b->swa && m->lcos;
    const wk_layout lq = heads(m, q, T, m->n_head), lk = heads(m, k, T, m->n_kv);
    const wk_layout lv = heads(m, v, T, m->n_kv), lc = cache_rows(m, 0, m->ctx);
    const wk_layout lt = lay2(m->ctx, m->hd / 2);
    const int64_t nd[1] = {1}, ns[1] = {1};
    const wk_layout lp = view(1, nd, ns, 1);
    wk_storage *qr = NULL;
    CK(wk_rope_kv_append(&qr, !m->fam.rope_neox, q.s, &lq, k.s, &lk, v.s, &lv,
                         own ? m->lcos : m->cos, &lt, own ? m->lsin : m->sin, &lt, b->kc, &lc,
                         b->vc, &lc, from_step ? m->step : NULL, from_step ? &lp : NULL, m->pos));
    return qr;
}

/* The fused attention of T new queries qr (1, H, T, hd) (rotated, the cache's dtype) over rows
 * [k0, L) of block b's cache, causal (query t at position L - T + t). Returns (H, T, hd) in the
 * cache's dtype; frees qr. */
static wk_storage *attention_fused(const model *m, const block *b, wk_storage *qr, int64_t T,
                                   int64_t k0, int64_t L)
{
    const int64_t qd[4] = {1, m->n_head, T, m->hd};
    const wk_layout lq = lay(4, qd), lc = cache_rows(m, k0, L - k0);
    wk_storage *o = NULL;
    CK(wk_decode_attention(&o, qr, &lq, b->kc, &lc, b->vc, &lc, (float)m->attn_scale, 1));
    wk_storage_free(qr);
    return o;
}

/* The attention of T new queries (qr (H, T, hd), rotated, the cache's dtype) over rows [k0, L)
 * of block b's cache, composed of q * attn_scale (wk_affine), matmul, soft-cap (c > 0:
 * c tanh(s / c), through wk_affine, tanh, wk_affine), mask, softmax and matmul (GPU prefill with
 * an f32 cache, and what the fused op lacks): query t (position pos+t) sees keys j with
 * 0 <= pos+t - j and, with a window W > 0, pos+t - j < W. With a 16-bit cache q and the cache's
 * rows [k0, L) are converted to f32 first (wk_matmul takes one dtype; the scores stay f32).
 * Returns (H, T, hd) f32; frees qr. */
static wk_storage *attention_composed(model *m, block *b, wk_storage *qr, int64_t T, int64_t L,
                                      int64_t k0, int64_t W, double cap)
{
    const int64_t KV = m->n_kv, hd = m->hd, G = m->n_head / KV, n = L - k0;
    const wk_layout lq = lay3(KV, G * T, hd), ls = lay3(KV, G * T, n);
    wk_storage *o = NULL, *qs = NULL, *sc = NULL, *p = NULL, *k32 = NULL, *v32 = NULL;
    const wk_storage *kc = b->kc, *vc = b->vc;
    int64_t hs = m->ctx * hd, off = k0 * hd; /* a kv head's stride and row k0 in kc, vc */
    if (m->kv_dt != WK_DTYPE_F32) {
        const int64_t d[3] = {KV, n, hd}, s[3] = {hs, hd, 1};
        const wk_layout lr = view(3, d, s, off);
        CK(wk_to_dtype(&k32, b->kc, &lr, WK_DTYPE_F32));
        CK(wk_to_dtype(&v32, b->vc, &lr, WK_DTYPE_F32));
        CK(wk_to_dtype(&qs, qr, &lq, WK_DTYPE_F32));
        wk_storage_free(qr);
        qr = qs;
        kc = k32;
        vc = v32;
        hs = n * hd;
        off = 0;
    }
    CK(wk_affine(&qs, qr, &lq, m->attn_scale, 0.0));
    wk_storage_free(qr);
    /* scores (KV, G*T, n) = q (KV, G*T, hd) @ K^T (KV, hd, n) */
    const int64_t kd[3] = {KV, hd, n}, ks[3] = {hs, 1, hd};
    const wk_layout lkt = view(3, kd, ks, off);
    CK(wk_matmul(&sc, qs, &lq, kc, &lkt));
    wk_storage_free(qs);
    if (cap > 0)
        sc = softcap(sc, KV * G * T * n, cap);
    if (T > 1) { /* query t sees keys k0 + j with pos+t - W < k0 + j <= pos+t */
        float *mask = malloc((size_t)(T * n) * sizeof *mask);
        wk_storage *ms = NULL, *masked = NULL;
        if (!mask)
            die("out of memory");
        for (int64_t i = 0; i < T; i++)
            for (int64_t j = 0; j < n; j++) {
                const int64_t back = m->pos + i - (k0 + j); /* how far the key lies back */
                mask[i * n + j] = back >= 0 && (!W || back < W) ? 0.0f : -INFINITY;
            }
        CK(wk_storage_from_host(&ms, m->dev, WK_DTYPE_F32, mask, (size_t)(T * n)));
        free(mask);
        const int64_t d4[4] = {KV, G, T, n}, s4[4] = {0, 0, n, 1};
        const wk_layout l4 = lay(4, d4), lm = view(4, d4, s4, 0);
        CK(wk_binary(&masked, WK_OP_ADD, sc, &l4, ms, &lm));
        wk_storage_free(ms);
        wk_storage_free(sc);
        sc = masked;
    }
    CK(wk_softmax_last_dim(&p, sc, &ls));
    wk_storage_free(sc);
    /* o (KV, G*T, hd) = p (KV, G*T, n) @ V (KV, n, hd) */
    const int64_t vd[3] = {KV, n, hd}, vs[3] = {hs, hd, 1};
    const wk_layout lvv = view(3, vd, vs, off);
    CK(wk_matmul(&o, p, &ls, vc, &lvv));
    wk_storage_free(p);
    wk_storage_free(k32);
    wk_storage_free(v32);
    return o;
}

/* Gemma's attention of T new queries (qr (H, T, hd), rotated) over the first L rows of block
 * b's cache, for the features the fused op lacks: on a local block query t (position pos+t)
 * sees only keys j with pos+t - j < W (the window, W = fam.swa), and with soft-capping the
 * scores become c tanh(s / c) before the softmax. Keys before k0 = pos+1-W are outside every
 * query's window and are not read. Where the window binds no query beyond that and nothing is
 * capped (one-token steps, prompts within the window) this is the fused op over rows [k0, L)
 * (where fused_serves); else the composed attention. Returns (H, T, hd); frees qr. */
static wk_storage *attention_family(model *m, block *b, wk_storage *qr, int64_t T, int64_t L)
{
    const int64_t W = b->swa ? m->fam.swa : 0;
    const int64_t k0 = W && m->pos + 1 > W ? m->pos + 1 - W : 0;
    const double cap = m->fam.attn_softcap;
    const int binds = W && T > 1 && m->pos + T > W; /* a later query's window starts after k0 */
    if (cap == 0 && !binds && fused_serves(m, T))
        return attention_fused(m, b, qr, T, k0, L);
    return attention_composed(m, b, qr, T, L, k0, W, cap);
}

/* One decode step (T = 1) of block b with the position in device memory (m->step): rope and
 * the cache write of row pos in one op, then the fused attention over the first step[2] =
 * pos + 1 rows. Returns (H, 1, hd) = (1, H*hd) in the cache's dtype. */
static wk_storage *attention_step(model *m, block *b, cols q, cols k, cols v)
{
    wk_storage *qr = rope_kv(m, b, q, k, v, 1, 1), *o = NULL;
    const int64_t qd[4] = {1, m->n_head, 1, m->hd}, nd[1] = {1}, ns[1] = {1};
    const wk_layout lq = lay(4, qd), lc = cache_rows(m, 0, m->ctx), ln = view(1, nd, ns, 2);
    CK(wk_decode_attention_lens(&o, qr, &lq, b->kc, &lc, b->vc, &lc, m->step, &ln,
                                (float)m->attn_scale, 1));
    wk_storage_free(qr);
    return o;
}

/* Attention of block b for T new tokens whose q, k, v are (T, H*hd), (T, KV*hd), (T, KV*hd)
 * column views: appends k and v to the cache at m->pos and returns (T, H*hd) in the dtype that
 * the output projection's product reads (act_dtype). act non-NULL: returns NULL and *act = the
 * int8 activations of that (T, H*hd) (wk_quantize_act straight from the attention's output, in
 * the cache's dtype: one op where the conversion and the product's own quantization were two;
 * the same values, as every 16-bit value is exact in f32). */
static wk_storage *attention(model *m, block *b, cols q, cols k, cols v, int64_t T,
                             wk_storage **act)
{
    const int64_t H = m->n_head, hd = m->hd, L = m->pos + T; /* keys after this step */
    wk_storage *o = NULL, *ot = NULL;
    if (T == 1 && !m->fam.host_pos) {
        o = attention_step(m, b, q, k, v);
    } else {
        wk_storage *qr = rope_kv(m, b, q, k, v, T, 0);
        if (m->fam.host_pos) /* sliding windows, soft-capping */
            o = attention_family(m, b, qr, T, L);
        else if (fused_serves(m, T))
            o = attention_fused(m, b, qr, T, 0, L);
        else
            o = attention_composed(m, b, qr, T, L, 0, 0, 0.0);
    }
    const wk_dtype dt = act_dtype(m, T);
    const int64_t od[3] = {T, H, hd}, os[3] = {hd, T * hd, 1};
    const wk_layout lo = view(3, od, os, 0);
    if (act && hd % 32 == 0) { /* rows (t, h) of hd: the bytes of the (T, H*hd) activations */
        CK(wk_quantize_act(act, o, &lo));
        wk_storage_free(o);
        return NULL;
    }
    if (T == 1 && wk_storage_dtype(o) == dt) /* (H, 1, hd) is (1, H*hd) already */
        return o;
    /* (H, T, hd) -> (T, H, hd) in dt, one pass (T = 1, a 16-bit cache: the conversion alone) */
    CK(wk_to_dtype(&ot, o, &lo, dt));
    wk_storage_free(o);
    return ot;
}

/* x (T, n) + bias read from element off of b (broadcast over the rows); frees x. */
static wk_storage *add_bias(wk_storage *x, int64_t T, int64_t n, const wk_storage *bias,
                            int64_t off)
{
    wk_storage *y = NULL;
    const int64_t d[2] = {T, n}, st[2] = {0, 1};
    const wk_layout lx = lay2(T, n), lb = view(2, d, st, off);
    CK(wk_binary(&y, WK_OP_ADD, x, &lx, bias, &lb));
    wk_storage_free(x);
    return y;
}

/* Whether a block's output projection (Wo, Wd) of T rows may hand its 16-bit product output
 * straight to the residual add (with --fuse and 16-bit products: wk_add_rms_norm widens it
 * exactly, the bits of the f32 round trip): not under tensor parallelism (the all_reduce sums
 * f32) nor before a family's post-norm (post, which takes f32). */
static int narrow_residual(const model *m, const wk_storage *post, int64_t T)
{
    return m->fuse && act_dtype(m, T) != WK_DTYPE_F32 && m->nranks == 1 && !post;
}

/* rms_norm over each head of the (T, heads * hd) columns c, weight w (hd): contiguous. */
static wk_storage *head_norm(const model *m, cols c, int64_t T, int64_t heads,
                             const wk_storage *w)
{
    const int64_t d[3] = {T, heads, m->hd}, st[3] = {c.stride, m->hd, 1};
    const wk_layout lc = view(3, d, st, c.off);
    return rmsnorm(c.s, &lc, w, m->hd, m->eps);
}

/* What a family changes in the projections q, k, v of T tokens before rope: Qwen2's biases
 * (added to the product(s) *q (stacked: one add over the q|k|v row), *k, *v, which are replaced),
 * then Qwen3's and Gemma 3's per-head norms of q and k (new storages *qn, *kn, which the column
 * views then read). */
static void qkv_family(const model *m, const block *b, int64_t T, wk_storage **q,
                       wk_storage **k, wk_storage **v, cols *cq, cols *ck, cols *cv,
                       wk_storage **qn, wk_storage **kn)
{
    const int64_t qd = m->n_head * m->hd, kvd = m->n_kv * m->hd;
    if (b->bqkv && !*k) { /* stacked: q, k, v are columns of one (T, qd + 2 kvd) product */
        *q = add_bias(*q, T, qd + 2 * kvd, b->bqkv, 0);
        cq->s = ck->s = cv->s = *q;
    } else if (b->bqkv) {
        *q = add_bias(*q, T, qd, b->bqkv, 0);
        *k = add_bias(*k, T, kvd, b->bqkv, qd);
        *v = add_bias(*v, T, kvd, b->bqkv, qd + kvd);
        cq->s = *q;
        ck->s = *k;
        cv->s = *v;
    }
    if (b->q_norm) {
        *qn = head_norm(m, *cq, T, m->n_head, b->q_norm);
        *kn = head_norm(m, *ck, T, m->n_kv, b->k_norm);
        *cq = (cols){*qn, 0, qd};
        *ck = (cols){*kn, 0, kvd};
    }
}

/* The attention half of one transformer block on h (T, dim) = rms_norm(x) * attn_norm: attention
 * over this rank's heads, times this rank's columns of Wo. Returns (T, dim): the block's
 * attention output on one device, this rank's partial sum of it under tensor parallelism. */
static wk_storage *attn_part(model *m, block *b, const wk_storage *h, int64_t T)
{
    const int64_t qd = m->n_head * m->hd, kvd = m->n_kv * m->hd;
    const wk_layout lx = lay2(T, m->dim);
    /* With --fuse and 16-bit products (prefill) into a cache of that dtype, q, k and v stay in
     * it: the rope + cache op widens them to f32 itself (its tables are f32) and rounds the
     * rotated values to that dtype once, which is what the f32 round trip gave (the same bits).
     * Not under a family's biases or head norms, which take f32. */
    const wk_dtype dt = act_dtype(m, T);
    const int narrow = m->fuse && dt != WK_DTYPE_F32 && m->kv_dt == dt && !b->bqkv && !b->q_norm;
    wk_storage *q = linear_out(m, h, &lx, &b->wq, m->ha, narrow), *k = NULL, *v = NULL;
    cols cq = {q, 0, qd}, ck_ = {q, qd, qd + 2 * kvd}, cv = {q, qd + kvd, qd + 2 * kvd};
    if (b->wk.w) { /* not stacked */
        k = linear_out(m, h, &lx, &b->wk, m->ha, narrow);
        v = linear_out(m, h, &lx, &b->wv, m->ha, narrow);
        ck_ = (cols){k, 0, kvd};
        cv = (cols){v, 0, kvd};
    } else {
        cq.stride = qd + 2 * kvd;
    }
    wk_storage *qn = NULL, *kn = NULL;
    qkv_family(m, b, T, &q, &k, &v, &cq, &ck_, &cv, &qn, &kn);
    wk_storage *oa = NULL; /* the output projection's int8 activations, where it reads them */
    wk_storage *a =
        attention(m, b, cq, ck_, cv, T, reads_act(m, &b->wo, T, QACT_ATTN) ? &oa : NULL);
    wk_storage_free(q);
    wk_storage_free(k);
    wk_storage_free(v);
    wk_storage_free(qn);
    wk_storage_free(kn);
    const wk_layout la = lay2(T, qd);
    wk_storage *o = linear_out(m, a, &la, &b->wo, oa, narrow_residual(m, b->post_attn_norm, T));
    /* (a is NULL when oa is set) */
    wk_storage_free(a);
    wk_storage_free(oa);
    return o;
}

/* The MLP half on h (T, dim) = rms_norm(x1) * ffn_norm: (silu(h Wg^T) * h Wu^T) Wd^T over this
 * rank's ffn columns (gelu for Gemma). Returns (T, dim) (a partial sum, as attn_part). */
static wk_storage *mlp_part(model *m, block *b, const wk_storage *h, int64_t T)
{
    const int64_t F = b->ffn;
    const wk_layout lx = lay2(T, m->dim);
    /* With --fuse and 16-bit products (prefill), gate and up stay in that dtype: the gated op
     * widens them to f32 and rounds its output to the type that the down projection reads,
     * which is what the f32 round trip gave (the same bits, a third of the bytes). */
    const int narrow = m->fuse && act_dtype(m, T) != WK_DTYPE_F32;
    wk_storage *g = linear_out(m, h, &lx, &b->wg, m->ha, narrow), *u = NULL, *gu = NULL;
    const int64_t gd[2] = {T, F}, gs[2] = {b->wu.w ? F : 2 * F, 1};
    const wk_layout lg = view(2, gd, gs, 0), lu = view(2, gd, gs, b->wu.w ? 0 : F);
    if (b->wu.w)
        u = linear_out(m, h, &lx, &b->wu, m->ha, narrow);
    const wk_layout lf = lay2(T, F);
    const wk_op gop = m->fam.geglu ? WK_OP_GEGLU : WK_OP_SWIGLU;
    wk_storage *ga = NULL; /* the down projection's int8 activations, where it reads them */
    if (reads_act(m, &b->wd, T, QACT_GLU)) { /* silu(gate) * up and its activations in one op */
        CK(wk_binary_act(&ga, gop, g, &lg, u ? u : g, &lu));
    } else if (m->fuse) { /* silu(gate) * up in one op (Gemma: gelu) */
        CK(wk_binary(&gu, gop, g, &lg, u ? u : g, &lu));
    } else {
        wk_storage *sg = NULL;
        CK(wk_unary(&sg, m->fam.geglu ? WK_OP_GELU : WK_OP_SILU, g, &lg));
        CK(wk_binary(&gu, WK_OP_MUL, sg, &lf, u ? u : g, &lu));
        wk_storage_free(sg);
    }
    wk_storage_free(g);
    wk_storage_free(u);
    wk_storage *d = linear_out(m, gu, &lf, &b->wd, ga, narrow_residual(m, b->post_ffn_norm, T));
    /* (gu is NULL when ga is set) */
    wk_storage_free(gu);
    wk_storage_free(ga);
    return d;
}

/* The model on every device: r[i] is rank i (n = 1: the whole model on one device). */
typedef struct llama {
    model *r;
    int n;
    int graph;      /* decode steps replay captured graphs (GPUs, --graph 1) */
    int dev_argmax; /* greedy decoding: the graph also takes the logits' argmax (one rank) */
    float *lg;      /* forward's logits on the host, kept for the next call */
    size_t lg_cap;  /* floats of lg */
} llama;

/* p[i] (count f32 on rank i's device) <- the sum over ranks of p[i], on every rank: one
 * all_reduce per rank, queued together by this one thread (a group), so that no rank's call
 * waits for a peer that this thread has not reached yet. On GPUs it is queued on each device's
 * stream after the ops that made p[i]; on the CPU it has finished when group_end returns. */
static void all_reduce(llama *L, wk_storage **p, size_t count)
{
    if (L->n == 1)
        return;
    CK(wk_comm_group_start());
    for (int i = 0; i < L->n; i++)
        CK(wk_comm_all_reduce(L->r[i].comm, p[i], 0, p[i], 0, count, WK_REDUCE_SUM));
    CK(wk_comm_group_end());
}

/* The weight of norm k of rank m: 2l the attn_norm of block l, 2l + 1 its ffn_norm, 2 n_layer
 * the output_norm. */
static const wk_storage *norm_weight(const model *m, int64_t k)
{
    return k == 2 * m->n_layer ? m->out_norm : k % 2 ? m->b[k / 2].ffn_norm : m->b[k / 2].attn_norm;
}

/* The first product that reads norm k's output: the stacked Wq|Wk|Wv (or Wq) of block k / 2 for
 * an attn_norm, Wg (or Wg|Wu) for an ffn_norm, the output for the output_norm. */
static const qweight *norm_reader(const model *m, int64_t k)
{
    return k == 2 * m->n_layer ? &m->out : k % 2 ? &m->b[k / 2].wg : &m->b[k / 2].wq;
}

/* On every rank: x[i] <- x[i] + p[i] and h[i] <- rms_norm(x[i]) * norm k (norm_weight); p[i]
 * and the old x[i], h[i] freed. One op (wk_add_rms_norm), or with --fuse 0 the add then the
 * norm (the same bits). Where the next product reads int8 activations (reads_act), the op also
 * makes them (wk_add_rms_norm_act: m->ha), so that product does not quantize h itself. */
static void add_norm(llama *L, wk_storage **x, wk_storage **p, wk_storage **h, int64_t k,
                     int64_t T)
{
    for (int i = 0; i < L->n; i++) {
        model *m = &L->r[i];
        const wk_layout lx = lay2(T, m->dim), la = lay1(m->dim);
        wk_storage *y = NULL, *hn = NULL;
        wk_storage_free(m->ha);
        m->ha = NULL;
        if (reads_act(m, norm_reader(m, k), T, QACT_NORM)) {
            CK(wk_add_rms_norm_act(&y, &hn, &m->ha, x[i], &lx, p[i], &lx, norm_weight(m, k), &la,
                                   m->eps));
        } else if (m->fuse) {
            CK(wk_add_rms_norm(&y, &hn, x[i], &lx, p[i], &lx, norm_weight(m, k), &la, m->eps));
        } else {
            y = binary(WK_OP_ADD, x[i], p[i], &lx);
            hn = rmsnorm(y, &lx, norm_weight(m, k), m->dim, m->eps);
        }
        wk_storage_free(x[i]);
        wk_storage_free(p[i]);
        wk_storage_free(h[i]);
        x[i] = y;
        p[i] = NULL;
        h[i] = hn;
    }
}

/* Gemma's post-norms: p[i] <- rms_norm(p[i]) * w(block) on every rank, after the all_reduce
 * (the norm needs the whole sum); nothing for the other families. */
static void post_norm(llama *L, wk_storage **p, int64_t l, int ffn, int64_t T)
{
    for (int i = 0; i < L->n; i++) {
        const model *m = &L->r[i];
        const block *b = &m->b[l];
        const wk_storage *w = ffn ? b->post_ffn_norm : b->post_attn_norm;
        if (!w)
            return;
        const wk_layout lx = lay2(T, m->dim);
        wk_storage *y = rmsnorm(p[i], &lx, w, m->dim, m->eps);
        wk_storage_free(p[i]);
        p[i] = y;
    }
}

/* s (T, n) f32 -> a new (keep, n) storage of its last keep rows; frees s. */
static wk_storage *last_rows(wk_storage *s, int64_t T, int64_t n, int64_t keep)
{
    const int64_t d[2] = {keep, n}, st[2] = {n, 1};
    const wk_layout l = view(2, d, st, (T - keep) * n);
    wk_storage *y = NULL;
    CK(wk_to_dtype(&y, s, &l, WK_DTYPE_F32));
    wk_storage_free(s);
    return y;
}

/* One transformer block, every rank: x[i] (T, dim) is each rank's copy of the residual stream
 * (equal on every rank), h[i] = rms_norm(x[i]) * attn_norm of block l; on return x[i] has the
 * block added and h[i] is normed for what follows (the next block's attn_norm, or output_norm
 * after the last block). keep < T (the last block of a step whose logits are wanted for its
 * last keep tokens only): the attention runs on all T tokens (their keys and values go into the
 * cache), then x and the attention's output are cut to their last keep rows, so the MLP, the
 * norms and the logits run on those rows alone (as llama.cpp does: each row's values are the
 * same as without the cut). The ranks' ops are issued in turn by this thread; on GPUs they run
 * concurrently, each device on its own stream. */
static void block_forward(llama *L, int64_t l, wk_storage **x, wk_storage **h, wk_storage **p,
                          int64_t T, int64_t keep)
{
    const int64_t dim = L->r[0].dim;
    for (int i = 0; i < L->n; i++)
        p[i] = attn_part(&L->r[i], &L->r[i].b[l], h[i], T);
    all_reduce(L, p, (size_t)(T * dim));
    if (keep < T) {
        for (int i = 0; i < L->n; i++) {
            x[i] = last_rows(x[i], T, dim, keep);
            p[i] = last_rows(p[i], T, dim, keep);
        }
        T = keep;
    }
    post_norm(L, p, l, 0, T);
    add_norm(L, x, p, h, 2 * l + 1, T);
    for (int i = 0; i < L->n; i++)
        p[i] = mlp_part(&L->r[i], &L->r[i].b[l], h[i], T);
    all_reduce(L, p, (size_t)(T * dim));
    post_norm(L, p, l, 1, T);
    add_norm(L, x, p, h, 2 * l + 2, T);
}

/* Rank m's logits (rows, out.n) of the last `rows` of h (T, dim) = rms_norm(x) * output_norm,
 * on its device: the columns [v0, v0 + out.n) of the whole vocabulary's. */
static wk_storage *logits_dev(const model *m, const wk_storage *h, int64_t T, int64_t rows)
{
    const int64_t d[2] = {rows, m->dim}, s[2] = {m->dim, 1};
    const wk_layout lh = view(2, d, s, (T - rows) * m->dim);
    wk_storage *lg = linear(m, h, &lh, &m->out, rows == T ? m->ha : NULL);
    if (m->fam.final_softcap > 0) /* Gemma 2 */
        lg = softcap(lg, rows * m->out.n, m->fam.final_softcap);
    return lg;
}

/* Copies rank m's logits lg (rows, out.n) into their columns of logits (rows, vocab), host. */
static void logits_part(const model *m, const wk_storage *lg, int64_t rows, float *logits)
{
    const int64_t nv = m->out.n;
    if (nv == m->vocab || rows == 1) {
        CK(wk_storage_to_host(logits + m->v0, (size_t)(rows * nv), lg));
        return;
    }
    float *part = malloc((size_t)(rows * nv) * sizeof *part);
    if (!part)
        die("out of memory");
    CK(wk_storage_to_host(part, (size_t)(rows * nv), lg));
    for (int64_t r = 0; r < rows; r++)
        memcpy(logits + r * m->vocab + m->v0, part + r * nv, (size_t)nv * sizeof *part);
    free(part);
}

/* Writes {id, pos, pos + 1} into every rank's step: the inputs of a decode step that the
 * step's ops read from device memory (never captured: a graph replays the ops that read it). */
static void step_upload(llama *L, uint32_t id)
{
    for (int i = 0; i < L->n; i++) {
        model *m = &L->r[i];
        const uint32_t v[3] = {id, (uint32_t)m->pos, (uint32_t)(m->pos + 1)};
        wk_storage *t = NULL;
        CK(wk_storage_from_host(&t, m->dev, WK_DTYPE_U32, v, 3));
        CK(wk_copy2d(m->step, t, 1, 3, 3, 3, 0, 0));
        wk_storage_free(t);
    }
}

/* The blocks on T tokens, every rank: h[i] (keep, dim) = rms_norm(x) * output_norm of the last
 * keep rows of rank i's residual stream x after the last block (keep <= T; block_forward).
 * T = 1 (decode) reads the token, its position and the key count from step (written by
 * step_upload); longer steps take ids and m->pos from the host. x and p: scratch arrays of L->n. */
static void forward_blocks(llama *L, const uint32_t *ids, int64_t T, int64_t keep, wk_storage **h,
                           wk_storage **x, wk_storage **p)
{
    const int64_t nd[1] = {1}, ns[1] = {1};
    const wk_layout li = lay1(T), lid = view(1, nd, ns, 0);
    for (int i = 0; i < L->n; i++) { /* every rank embeds the tokens itself */
        model *m = &L->r[i];
        wk_storage *sid = NULL;
        if (T == 1) {
            CK(wk_qembedding(&x[i], WK_DTYPE_F32, m->step, &lid, m->embd.w, m->embd.qt,
                             m->vocab, m->dim));
        } else {
            CK(wk_storage_from_host(&sid, m->dev, WK_DTYPE_U32, ids, (size_t)T));
            CK(wk_qembedding(&x[i], WK_DTYPE_F32, sid, &li, m->embd.w, m->embd.qt, m->vocab,
                             m->dim));
            wk_storage_free(sid);
        }
        embed_scale(m, &x[i], T);
    }
    for (int i = 0; i < L->n; i++) {
        model *m = &L->r[i];
        const wk_layout lx = lay2(T, m->dim);
        h[i] = rmsnorm(x[i], &lx, norm_weight(m, 0), m->dim, m->eps);
        wk_storage_free(m->ha); /* block 0's products quantize h themselves */
        m->ha = NULL;
    }
    const int64_t nl = L->r[0].n_layer;
    for (int64_t l = 0; l < nl; l++)
        block_forward(L, l, x, h, p, T, l == nl - 1 ? keep : T);
    for (int i = 0; i < L->n; i++) {
        wk_storage_free(x[i]);
        x[i] = NULL;
    }
}

/* A decode step as graph replays, one graph per rank (GPUs): the first call captures the
 * step's ops (embedding to logits) on every rank's device at once, the all_reduces included
 * (NCCL records its kernels into the captures), every call replays them. The step's inputs are
 * in each rank's m->step, so the graphs serve every position. Returns 1 with each rank's
 * m->glogits written by the replays, or 0 when the devices have no graphs (then L->graph is
 * cleared and steps run eagerly). */
static int decode_replay(llama *L)
{
    if (!L->r[0].graph) {
        for (int i = 0; i < L->n; i++) {
            const wk_status st = wk_graph_begin(L->r[i].dev);
            if (st == WK_ERR_NOT_SUPPORTED && i == 0) {
                fprintf(stderr, "llama: %s: %s; decode steps run eagerly\n",
                        wk_device_name(L->r[i].dev), wk_last_error());
                L->graph = 0;
                return 0;
            }
            CK(st);
        }
        wk_storage **h = calloc((size_t)(3 * L->n), sizeof *h), **x = h + L->n, **p = x + L->n;
        if (!h)
            die("out of memory");
        forward_blocks(L, NULL, 1, 1, h, x, p);
        for (int i = 0; i < L->n; i++) {
            L->r[i].glogits = logits_dev(&L->r[i], h[i], 1, 1);
            if (L->dev_argmax && L->n == 1) {
                const int32_t dim1 = 1;
                const wk_layout ll = lay2(1, L->r[i].vocab);
                CK(wk_reduce(&L->r[i].gtoken, WK_OP_ARGMAX, L->r[i].glogits, &ll, &dim1, 1));
            }
            wk_storage_free(h[i]);
            wk_storage_free(L->r[i].ha);
            L->r[i].ha = NULL;
        }
        free(h);
        for (int i = 0; i < L->n; i++)
            CK(wk_graph_end(L->r[i].dev, &L->r[i].graph));
    }
    for (int i = 0; i < L->n; i++)
        CK(wk_graph_launch(L->r[i].graph));
    return 1;
}

/* Feeds T tokens at positions pos..pos+T-1 and returns their logits on the host: all T rows
 * (all_rows) or the last row only; (rows * vocab) floats in L->lg, valid until the next call.
 * One buffer for every call: a fresh 0.5 MB one per decode step cost the step its pages'
 * faults and unmapping, about 0.1 ms of a 3 ms step on an H100. */
static const float *forward(llama *L, const uint32_t *ids, int64_t T, int all_rows)
{
    const model *m0 = &L->r[0];
    if (T <= 0 || m0->pos + T > m0->ctx)
        die("context full: %lld + %lld tokens > %lld (raise --ctx)", (long long)m0->pos,
            (long long)T, (long long)m0->ctx);
    for (int64_t t = 0; t < T; t++)
        if ((int64_t)ids[t] >= m0->vocab)
            die("token id %u is outside the vocabulary (%lld)", ids[t], (long long)m0->vocab);
    const int64_t rows = all_rows ? T : 1;
    if ((size_t)(rows * m0->vocab) > L->lg_cap) {
        free(L->lg);
        L->lg_cap = (size_t)(rows * m0->vocab);
        L->lg = malloc(L->lg_cap * sizeof *L->lg);
        if (!L->lg)
            die("out of memory");
    }
    float *logits = L->lg;
    if (T == 1)
        step_upload(L, ids[0]);
    if (T == 1 && L->graph && decode_replay(L)) {
        for (int i = 0; i < L->n; i++) {
            logits_part(&L->r[i], L->r[i].glogits, 1, logits);
            L->r[i].pos += 1;
        }
        return logits;
    }
    wk_storage **h = calloc((size_t)(3 * L->n), sizeof *h), **x = h + L->n, **p = x + L->n;
    if (!h)
        die("out of memory");
    forward_blocks(L, ids, T, rows, h, x, p);
    for (int i = 0; i < L->n; i++) {
        wk_storage *lg = logits_dev(&L->r[i], h[i], rows, rows);
        logits_part(&L->r[i], lg, rows, logits);
        wk_storage_free(lg);
        wk_storage_free(h[i]);
        wk_storage_free(L->r[i].ha);
        L->r[i].ha = NULL;
        L->r[i].pos += T;
    }
    free(h);
    return logits;
}

/* The greedy token after id: the first maximum of its logits. With one rank replaying a graph
 * that takes the argmax on the device (dev_argmax), 4 bytes come back instead of the logits;
 * else the logits do (forward) and the host takes it. Either way the first maximum: the device's
 * argmax and llama_util's agree wherever no logit is NaN. */
static uint32_t next_greedy(llama *L, uint32_t id)
{
    model *m = &L->r[0];
    if (L->n == 1 && L->dev_argmax && L->graph && m->pos + 1 <= m->ctx && id < m->vocab) {
        step_upload(L, id);
        if (decode_replay(L)) {
            uint32_t next = 0;
            CK(wk_storage_to_host(&next, 1, m->gtoken));
            m->pos += 1;
            return next;
        }
    }
    return argmax(forward(L, &id, 1, 0), m->vocab);
}

typedef struct opts {
    const char *path, *device, *devices, *force, *logits;
    llama_prompt prompt;
    int64_t n_gen, ctx, bench_pp, bench_tg, bench_depth, reps;
    int graph, fuse, ignore_eos, profile;
    int gemm_dt, kv_dt; /* a wk_dtype, or -1: the default for the device (main, model_load) */
    double temp, top_p;
    uint64_t seed;
    int qact; /* --qact: QACT_* bits */
    int logits_last; /* --logits-prompt last */
} opts;

static _Noreturn void usage(void)
{
    fprintf(stderr,
            "usage: wick_llama MODEL.gguf [--device cpu|cuda:N|rocm:N] [--prompt TEXT] [-n N]\n"
            "                  [--chat [--system TEXT]]    the prompt as a chat turn\n"
            "                  [--prompt-ids IDS]          token ids instead of text\n"
            "                  [--ignore-eos]              go on past end-of-generation tokens\n"
            "                  [--devices D0,D1,...]       tensor parallel over these devices\n"
            "                  [--temp T] [--top-p P] [--seed S] [--ctx N]\n"
            "                  [--force IDS --logits FILE]   teacher-forced logits (tests)\n"
            "                  [--logits-prompt all|last]    with --logits: every prompt row\n"
            "                                  (default) or the last one, as generation runs it\n"
            "                  [--bench PP,TG] [--reps R]    prefill/decode tokens/s\n"
            "                  [--depth N]     with --bench: both measured after N tokens in the\n"
            "                                  cache (filled first, not timed)\n"
            "                  [--gemm-dtype f32|f16|bf16]   the type of prefill's products\n"
            "                                  (more than 8 rows; default f16 on GPUs, f32 on cpu)\n"
            "                  [--kv-dtype f32|f16|bf16]     the KV cache's type (default f16 on\n"
            "                                  GPUs, f32 on cpu and for gemma2/gemma3)\n"
            "                  [--graph 1|0]   decode steps as graph replays on GPUs (default 1)\n"
            "                  [--fuse 1|0]    add + rms_norm, silu * up as one op each (default 1)\n"
            "                  [--qact LIST]   with --fuse, decode's int8 activations made by: norm,\n"
            "                                  glu, attn (comma list), all (default) or none\n"
            "                  [--profile 1]   with --bench: time per op of one prefill and one\n"
            "                                  decode step (devices synchronised around each op)\n"
            "IDS: token ids separated by spaces or commas. Default: greedy, 32 tokens, cpu.\n"
            "--gemm-dtype f32 --kv-dtype f32: every product and the cache in f32 (the exact path).\n"
            "Text goes through the file's tokenizer (BOS as it asks, special tokens such as\n"
            "<|im_start|> parsed); generated text is written to stdout as it comes.\n");
    exit(2);
}

/* The value of --logits-prompt: all (0) or last (1). */
static int prompt_rows(const char *v)
{
    if (!strcmp(v, "all") || !strcmp(v, "last"))
        return v[0] == 'l';
    fprintf(stderr, "--logits-prompt: '%s' is not all or last\n", v);
    exit(2);
}

/* The value of --qact: a comma list of norm, glu, attn; all; none. */
static int qact_parse(const char *v)
{
    if (!strcmp(v, "all"))
        return QACT_ALL;
    int bits = 0;
    char buf[64];
    snprintf(buf, sizeof buf, "%s", v);
    for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
        if (!strcmp(t, "norm"))
            bits |= QACT_NORM;
        else if (!strcmp(t, "glu"))
            bits |= QACT_GLU;
        else if (!strcmp(t, "attn"))
            bits |= QACT_ATTN;
        else if (strcmp(t, "none")) {
            fprintf(stderr, "wick_llama: --qact %s: expected norm, glu, attn, all or none\n", v);
            usage();
        }
    }
    return bits;
}

/* The value of --gemm-dtype or --kv-dtype: f32, f16 or bf16. */
static int float_dtype(const char *opt, const char *v)
{
    if (!strcmp(v, "f32"))
        return WK_DTYPE_F32;
    if (!strcmp(v, "f16"))
        return WK_DTYPE_F16;
    if (!strcmp(v, "bf16"))
        return WK_DTYPE_BF16;
    fprintf(stderr, "wick_llama: %s %s: expected f32, f16 or bf16\n", opt, v);
    usage();
}

static opts parse_args(int argc, char **argv)
{
    opts o = {NULL, "cpu", NULL, NULL, NULL, {NULL, NULL, NULL, 0}, 32, 0, 0, 0, 0, 3, 1, 1, 0, 0,
              -1, -1, 0.0, 1.0, 1, QACT_ALL, 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (a[0] != '-') {
            o.path = a;
            continue;
        }
        if (!strcmp(a, "--chat") || !strcmp(a, "--ignore-eos")) { /* flags without a value */
            if (a[2] == 'c')
                o.prompt.chat = 1;
            else
                o.ignore_eos = 1;
            continue;
        }
        if (!v)
            usage();
        i++;
        if (!strcmp(a, "--device")) o.device = v;
        else if (!strcmp(a, "--devices")) o.devices = v;
        else if (!strcmp(a, "--prompt")) o.prompt.text = v;
        else if (!strcmp(a, "--prompt-ids")) o.prompt.ids = v;
        else if (!strcmp(a, "--system")) o.prompt.system = v;
        else if (!strcmp(a, "--force")) o.force = v;
        else if (!strcmp(a, "--logits")) o.logits = v;
        else if (!strcmp(a, "--logits-prompt")) o.logits_last = prompt_rows(v);
        else if (!strcmp(a, "-n")) o.n_gen = atoll(v);
        else if (!strcmp(a, "--ctx")) o.ctx = atoll(v);
        else if (!strcmp(a, "--temp")) o.temp = atof(v);
        else if (!strcmp(a, "--top-p")) o.top_p = atof(v);
        else if (!strcmp(a, "--seed")) o.seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--reps")) o.reps = atoll(v);
        else if (!strcmp(a, "--graph")) o.graph = atoi(v);
        else if (!strcmp(a, "--fuse")) o.fuse = atoi(v);
        else if (!strcmp(a, "--qact")) o.qact = qact_parse(v);
        else if (!strcmp(a, "--profile")) o.profile = atoi(v);
        else if (!strcmp(a, "--gemm-dtype")) o.gemm_dt = float_dtype(a, v);
        else if (!strcmp(a, "--kv-dtype")) o.kv_dt = float_dtype(a, v);
        else if (!strcmp(a, "--depth")) o.bench_depth = atoll(v);
        else if (!strcmp(a, "--bench")) {
            long long pp = 0, tg = 0;
            if (sscanf(v, "%lld,%lld", &pp, &tg) != 2 || pp <= 0 || tg <= 0)
                usage();
            o.bench_pp = pp;
            o.bench_tg = tg;
        } else
            usage();
    }
    if (!o.path || o.n_gen < 0 || o.reps <= 0 || o.top_p <= 0 || o.top_p > 1 ||
        o.bench_depth < 0)
        usage();
    if (o.bench_depth > 0 && !o.bench_pp) {
        fprintf(stderr, "wick_llama: --depth goes with --bench\n");
        usage();
    }
    if (o.prompt.ids && (o.prompt.text || o.prompt.chat)) {
        fprintf(stderr, "wick_llama: --prompt-ids goes without --prompt and --chat\n");
        usage();
    }
    if (o.prompt.system && !o.prompt.chat) {
        fprintf(stderr, "wick_llama: --system goes with --chat\n");
        usage();
    }
    if (!o.prompt.ids && !o.prompt.text)
        o.prompt.text = ""; /* BOS alone, where the vocabulary adds one */
    return o;
}

/* ------------------------------------------------------------------ modes */
static void set_pos(llama *L, int64_t pos)
{
    for (int i = 0; i < L->n; i++)
        L->r[i].pos = pos;
}

/* Test mode: logits of every prompt position (or of the last, --logits-prompt last), then of
 * each forced token in turn. */
static void run_logits(llama *L, const opts *o, llama_text *tx)
{
    const model *m = &L->r[0];
    int64_t np = 0, nf = 0;
    uint32_t *p = text_prompt(tx, &o->prompt, &np), *f = parse_ids(o->force ? o->force : "", &nf);
    FILE *fp = fopen(o->logits, "wb");
    if (!fp)
        die("cannot write %s", o->logits);
    const float *lg = forward(L, p, np, !o->logits_last);
    const int64_t rows = o->logits_last ? 1 : np;
    if (fwrite(lg, sizeof *lg, (size_t)(rows * m->vocab), fp) != (size_t)(rows * m->vocab))
        die("write failed: %s", o->logits);
    for (int64_t i = 0; i < nf; i++) {
        lg = forward(L, &f[i], 1, 0);
        if (fwrite(lg, sizeof *lg, (size_t)m->vocab, fp) != (size_t)m->vocab)
            die("write failed: %s", o->logits);
    }
    if (fclose(fp) != 0)
        die("write failed: %s", o->logits);
    printf("wrote %lld x %lld logits to %s\n", (long long)(rows + nf), (long long)m->vocab,
           o->logits);
    free(p);
    free(f);
}

/* Generation: the prompt's tokens, then up to -n sampled ones, each written as text as it comes
 * (stdout) until an end-of-generation token; ids and speeds on stderr. */
static void generate(llama *L, const opts *o, llama_text *tx)
{
    const model *m = &L->r[0];
    int64_t np = 0, n = 0;
    uint32_t *p = text_prompt(tx, &o->prompt, &np);
    uint64_t rng = o->seed;
    double t0 = now_s(); /* the times include choosing the token */
    uint32_t id = sample(forward(L, p, np, 0), m->vocab, o->temp, o->top_p, &rng);
    const double t_pre = now_s() - t0;
    double t_dec = 0;
    uint32_t *out = malloc((size_t)(o->n_gen + 1) * sizeof *out);
    if (!out)
        die("out of memory");
    while (n < o->n_gen) {
        out[n++] = id;
        if (!o->ignore_eos && text_is_eog(tx, id))
            break;
        text_put(tx, id);
        if (n == o->n_gen)
            break;
        t0 = now_s();
        id = o->temp <= 0 ? next_greedy(L, id)
                          : sample(forward(L, &id, 1, 0), m->vocab, o->temp, o->top_p, &rng);
        t_dec += now_s() - t0;
    }
    text_end(tx);
    fprintf(stderr, "ids:");
    for (int64_t i = 0; i < n; i++)
        fprintf(stderr, " %u", out[i]);
    free(out);
    fprintf(stderr, "\nprefill: %lld tokens in %.1f ms (%.1f tokens/s)\n", (long long)np,
            1e3 * t_pre, (double)np / t_pre);
    if (n > 1)
        fprintf(stderr, "decode: %lld tokens in %.1f ms (%.2f tokens/s)\n", (long long)(n - 1),
                1e3 * t_dec, (double)(n - 1) / t_dec);
    free(p);
}

/* Bench mode: the cache filled with `depth` tokens ids[0 .. depth) at positions 0.. (not timed),
 * in steps of at most 512 tokens (llama-bench's default micro-batch); positions then = depth. */
static void fill_depth(llama *L, const uint32_t *ids, int64_t depth)
{
    set_pos(L, 0);
    for (int64_t p = 0; p < depth; p += 512)
        forward(L, ids + p, depth - p < 512 ? depth - p : 512, 0);
}

/* Bench mode, measured as llama-bench does (-p PP -n TG -d DEPTH): per repetition the cache
 * filled with --depth random tokens (none by default; not timed), then a prefill of PP random
 * tokens after them (pp) and, from the same depth again, TG single-token steps (tg); one
 * warm-up repetition, the mean over --reps. */
static void bench(llama *L, const opts *o)
{
    const model *m = &L->r[0];
    const int64_t depth = o->bench_depth;
    uint64_t rng = o->seed;
    uint32_t *ids = malloc((size_t)(depth + o->bench_pp) * sizeof *ids), *pp_ids = ids + depth;
    if (!ids)
        die("out of memory");
    for (int64_t i = 0; i < depth + o->bench_pp; i++)
        ids[i] = (uint32_t)(rng_next(&rng) % (uint64_t)m->vocab);
    double pp = 0, tg = 0, pp2 = 0, tg2 = 0;
    for (int64_t r = -1; r < o->reps; r++) { /* r = -1: warm-up */
        fill_depth(L, ids, depth);
        double t0 = now_s();
        forward(L, pp_ids, o->bench_pp, 0);
        const double tp = (double)o->bench_pp / (now_s() - t0);
        set_pos(L, depth);
        uint32_t id = pp_ids[0];
        t0 = now_s();
        for (int64_t i = 0; i < o->bench_tg; i++)
            id = next_greedy(L, id);
        const double tt = (double)o->bench_tg / (now_s() - t0);
        if (r >= 0) {
            pp += tp;
            pp2 += tp * tp;
            tg += tt;
            tg2 += tt * tt;
        }
    }
    if (o->profile) { /* one prefill and one decode step, op by op (no graph replay) */
        wk_device **devs = malloc((size_t)L->n * sizeof *devs);
        if (!devs)
            die("out of memory");
        for (int i = 0; i < L->n; i++)
            devs[i] = L->r[i].dev;
        const int graph = L->graph;
        char title[96];
        L->graph = 0;
        fill_depth(L, ids, depth);
        prof_on(devs, L->n);
        forward(L, pp_ids, o->bench_pp, 0);
        prof_off();
        snprintf(title, sizeof title, "prefill of %lld tokens at position %lld",
                 (long long)o->bench_pp, (long long)depth);
        prof_print(title);
        uint32_t id = pp_ids[0];
        prof_on(devs, L->n);
        forward(L, &id, 1, 0);
        prof_off();
        snprintf(title, sizeof title, "decode step at position %lld",
                 (long long)(depth + o->bench_pp));
        prof_print(title);
        L->graph = graph;
        free(devs);
    }
    const double n = (double)o->reps;
    pp /= n;
    tg /= n;
    char at[48] = "";
    if (depth > 0)
        snprintf(at, sizeof at, " at depth %lld", (long long)depth);
    printf("bench: pp%lld %.2f ± %.2f tokens/s, tg%lld %.2f ± %.2f tokens/s%s (%lld reps, %s)\n",
           (long long)o->bench_pp, pp, sqrt(fmax(0.0, pp2 / n - pp * pp)), (long long)o->bench_tg,
           tg, sqrt(fmax(0.0, tg2 / n - tg * tg)), at, (long long)o->reps,
           L->n > 1 ? o->devices : wk_device_name(m->dev));
    free(ids);
}

/* Opens the devices of --devices (a comma list) or --device: *n of them, malloc'ed. */
static wk_device **open_devices(const opts *o, int *n)
{
    const char *list = o->devices ? o->devices : o->device;
    *n = 1;
    for (const char *c = list; *c; c++)
        *n += *c == ',';
    wk_device **devs = calloc((size_t)*n, sizeof *devs);
    char *buf = malloc(strlen(list) + 1);
    if (!devs || !buf)
        die("out of memory");
    strcpy(buf, list);
    char *spec = buf;
    for (int i = 0; i < *n; i++) {
        char *end = strchr(spec, ',');
        if (end)
            *end = '\0';
        if (!*spec)
            die("--devices %s: an empty device name", list);
        wk_status st = wk_device_open(&devs[i], spec);
        if (st != WK_OK)
            die("device %s: %s: %s", spec, wk_status_string(st), wk_last_error());
        spec = end ? end + 1 : spec; /* (end is NULL after the last name) */
    }
    free(buf);
    return devs;
}

int main(int argc, char **argv)
{
    const opts o = parse_args(argc, argv);
    wk_gguf *g = NULL;
    int n = 0;
    wk_device **devs = open_devices(&o, &n);
    CK(wk_gguf_open(&g, o.path));
    int64_t ctx = o.ctx;
    if (ctx <= 0 && o.bench_pp > 0) /* --profile: a decode step after depth + the prefill */
        ctx = o.bench_depth + o.bench_pp + o.bench_tg;
    llama L = {calloc((size_t)n, sizeof(model)), n, 0, 0, NULL, 0};
    wk_comm **comms = calloc((size_t)n, sizeof *comms);
    if (!L.r || !comms)
        die("out of memory");
    if (n > 1)
        CK(wk_comm_init_all(comms, devs, n, 0));
    const double t0 = now_s();
    /* the default products: f16 on GPUs (tensor cores, f32 accumulation), f32 on the CPU,
     * whose products of block types round x to 8-bit blocks anyway */
    const int gpu = wk_device_backend(devs[0]) != WK_BACKEND_CPU;
    for (int i = 0; i < n; i++) {
        model_load(&L.r[i], g, devs[i], ctx, i, n, o.kv_dt);
        L.r[i].gemm_dt = o.gemm_dt >= 0 ? (wk_dtype)o.gemm_dt : gpu ? WK_DTYPE_F16 : WK_DTYPE_F32;
        L.r[i].fuse = o.fuse;
        L.r[i].qact = o.qact;
        L.r[i].comm = comms[i];
    }
    const model *m = &L.r[0];
    /* graphs: GPUs, one or several (the CPU runs ops at the call; a GPU without graphs falls
     * back to eager steps at the first one) */
    L.graph = o.graph;
    L.dev_argmax = o.bench_pp > 0 || (!o.logits && o.temp <= 0); /* greedy: bench, generate */
    for (int i = 0; i < n; i++)
        if (wk_device_backend(devs[i]) == WK_BACKEND_CPU)
            L.graph = 0;
    if (L.graph && m->fam.host_pos) {
        fprintf(stderr, "llama: %s attention (sliding window, soft-capping) takes host positions: "
                "decode steps run eagerly\n", m->fam.name);
        L.graph = 0;
    }
    char where[256];
    if (n > 1)
        snprintf(where, sizeof where, "%s (tensor parallel, %s)", o.devices,
                 wk_comm_transport(comms[0]));
    else
        snprintf(where, sizeof where, "%s", wk_device_name(m->dev));
    fprintf(stderr,
            "llama: %s on %s: %s, dim %lld, %lld blocks, %lld heads (%lld kv) of %lld, ffn %lld, "
            "vocab %lld, ctx %lld, weights %s, products %s, kv cache %s, decode %s, %s, "
            "loaded in %.2f s\n",
            o.path, where, m->fam.name, (long long)m->dim, (long long)m->n_layer,
            (long long)(m->n_head * n), (long long)(m->n_kv * n), (long long)m->hd,
            (long long)m->n_ff, (long long)m->vocab, (long long)m->ctx,
            wk_qtype_name(m->b[0].wq.qt), wk_dtype_name(m->gemm_dt), wk_dtype_name(m->kv_dt),
            L.graph ? "graph replay" : "eager",
            !o.fuse          ? "unfused"
            : m->fam.geglu   ? "fused add+norm(+int8), geglu"
                             : "fused add+norm(+int8), swiglu",
            now_s() - t0);
    llama_text tx;
    if (o.bench_pp > 0) {
        bench(&L, &o);
    } else {
        text_open(&tx, g);
        if (o.logits)
            run_logits(&L, &o, &tx);
        else
            generate(&L, &o, &tx);
        text_close(&tx);
    }
    for (int i = 0; i < n; i++) {
        model_free(&L.r[i]);
        wk_comm_destroy(comms[i]);
        wk_device_close(devs[i]);
    }
    free(L.r);
    free(L.lg);
    free(comms);
    free(devs);
    wk_gguf_close(g);
    return 0;
}
