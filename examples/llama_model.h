/* llama_model.h: the weights and state of examples/llama.c, one `model` per device (rank).
 * On one device a model holds the whole network. With --devices A,B,... (tensor parallel,
 * Megatron-style; docs/llama.md) rank r of R holds:
 *   - query heads [r H/R, (r+1) H/R) and kv heads [r KV/R, (r+1) KV/R): the rows of Wq, Wk, Wv
 *     of those heads, the columns of Wo of those heads (row-parallel), its slice of the KV cache;
 *   - a block-aligned range of the ffn columns: those rows of Wg and Wu, those columns of Wd;
 *   - a range of the vocabulary: those rows of the output matrix (its logits columns);
 *   - the token embedding and every norm weight whole (replicated).
 * The products of Wo and Wd are then partial sums over the ranks, summed by an all_reduce. */
#ifndef LLAMA_MODEL_H
#define LLAMA_MODEL_H

#include <wick.h>
#include <wick_comm.h>

typedef struct qweight {   /* W (n, k) as raw GGUF bytes in a u8 storage */
    wk_storage *w;
    wk_qtype qt;
    int64_t n, k;
} qweight;

typedef struct block {
    wk_storage *attn_norm, *ffn_norm; /* f32 (dim) */
    /* When Wq, Wk, Wv share a type they are stacked into one matrix in wq (rows qd + 2 kvd;
     * wk.w and wv.w NULL), and likewise Wg, Wu into wg (2 ffn rows; wu.w NULL): one qmatmul
     * instead of three (two), whose outputs are read through column views. */
    qweight wq, wk, wv, wo, wg, wu, wd;
    int64_t ffn;                      /* this rank's ffn columns (wg/wu rows, wd columns) */
    wk_storage *kc, *vc;              /* KV cache: f32 (n_kv, ctx, head_dim) */
} block;

typedef struct model {
    wk_device *dev;
    wk_comm *comm;                    /* NULL on one device */
    int rank, nranks;
    /* n_head and n_kv are this rank's heads; dim, hd, vocab, ctx those of the network */
    int64_t dim, n_layer, n_head, n_kv, hd, vocab, ctx;
    float eps;
    double rope_base, rope_scale;     /* angle = pos * rope_scale * theta_i */
    qweight embd, out;                /* out: rows [v0, v0 + out.n) of the output matrix */
    int64_t v0;
    wk_storage *out_norm;
    block *b;
    wk_storage *cos, *sin;            /* rope tables: f32 (ctx, hd/2) */
    wk_storage *qcos, *qsin;          /* the same times 1/sqrt(hd): rope(q) / sqrt(hd) at once */
    /* Decode steps (one token) take their position from device memory, so that one captured
     * graph serves every step: step = {token id, pos, pos + 1} (u32), written before each step;
     * rope_rows (ctx, 4 * hd/2) = the rows of cos | sin | qcos | qsin side by side, of which a
     * step gathers row pos (rows: that (1, 4 * hd/2) row, alive during a step). */
    wk_storage *step, *rope_rows, *rows;
    wk_graph *graph;                  /* the captured decode step (--graph), or NULL */
    wk_storage *glogits;              /* the logits that the graph's replays write */
    int64_t pos;                      /* tokens in the KV cache */
    wk_dtype gemm_dt;                 /* --gemm-dtype: f32 (default), f16 or bf16 */
    int fuse;                         /* --fuse: add + rms_norm and silu * up as one op each */
} model;

/* Reads hyperparameters and rank `rank` of `nranks` of the weights onto dev; ctx <= 0 means
 * llama.context_length (capped at 4096). Dies with the reason when the file is not a Llama
 * model this example runs, or when its shapes do not split nranks ways. */
void model_load(model *m, const wk_gguf *g, wk_device *dev, int64_t ctx, int rank, int nranks);
void model_free(model *m);

#endif
