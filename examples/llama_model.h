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
    /* What some families add (NULL where the family has none; llama_arch.c):
     * bqkv: the q|k|v biases of this rank's rows, f32 (qn + 2 kvn) (Qwen2);
     * q_norm, k_norm: per-head RMSNorm weights, f32 (head_dim) (Qwen3, Gemma 3);
     * post_attn_norm, post_ffn_norm: norms of each sublayer's output before the residual add,
     * f32 (dim) (Gemma 2, Gemma 3). */
    wk_storage *bqkv, *q_norm, *k_norm, *post_attn_norm, *post_ffn_norm;
    int swa;                          /* a sliding-window (local) block */
    /* When Wq, Wk, Wv share a type they are stacked into one matrix in wq (rows qd + 2 kvd;
     * wk.w and wv.w NULL), and likewise Wg, Wu into wg (2 ffn rows; wu.w NULL): one qmatmul
     * instead of three (two), whose outputs are read through column views. */
    qweight wq, wk, wv, wo, wg, wu, wd;
    int64_t ffn;                      /* this rank's ffn columns (wg/wu rows, wd columns) */
    wk_storage *kc, *vc;              /* KV cache: model.kv_dt (n_kv, ctx, head_dim) */
} block;

/* The architecture (general.architecture) and what it changes in the Llama block
 * (llama_arch.c; docs/llama.md, "Families"). */
typedef enum arch_id { ARCH_LLAMA, ARCH_QWEN2, ARCH_QWEN3, ARCH_GEMMA2, ARCH_GEMMA3 } arch_id;
typedef struct family {
    arch_id id;
    char name[16];          /* general.architecture: also the prefix of its metadata keys */
    int rope_neox;          /* rope rotates halves (x[i], x[i + hd/2]): wk_rope; else wk_rope_i */
    int qkv_bias, qk_norm, post_norms;
    int geglu;              /* the gate is gelu (tanh approximation), not silu */
    int embd_scale;         /* the embeddings are multiplied by sqrt(dim) */
    int tied;               /* the output matrix is always token_embd (Gemma 2) */
    double attn_softcap;    /* scores s -> c tanh(s / c) before the softmax; 0: none */
    double final_softcap;   /* the same on the logits; 0: none */
    int64_t swa;            /* the sliding window of local blocks (keys, the query's included);
                             * 0: every block global */
    int host_pos;           /* decode steps need host positions (windows, soft-capping): no
                             * graph replay, no device-position attention_step */
} family;

typedef struct model {
    family fam;
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
    wk_storage *cos, *sin;            /* rope tables: f32 (ctx, hd/2), row p for position p */
    /* the local (sliding-window) blocks' tables when their rope differs (Gemma 3's own base,
     * no scaling), else NULL: those blocks use cos, sin */
    wk_storage *lcos, *lsin;
    double lrope_base, lrope_scale;   /* the local blocks' rope (= rope_base, rope_scale but in
                                       * Gemma 3, and where <arch>.rope.freq_base_swa says) */
    double attn_scale;                /* the query scale: 1/sqrt(hd), or Gemma's (applied by
                                       * the attention, not by the rope tables) */
    int64_t n_ff;                     /* the network's ffn width */
    /* Decode steps (one token) take their position from device memory, so that one captured
     * graph serves every step: step = {token id, pos, pos + 1} (u32), written before each step
     * (the embedding reads the id, wk_rope_kv_append the position, the attention the key
     * count). */
    wk_storage *step;
    wk_graph *graph;                  /* the captured decode step (--graph), or NULL */
    wk_storage *glogits;              /* the logits that the graph's replays write */
    wk_storage *gtoken;               /* their first maximum (u32), when the graph has it */
    int64_t pos;                      /* tokens in the KV cache */
    wk_dtype gemm_dt;                 /* --gemm-dtype: the products of more than 8 rows (f16
                                       * by default on GPUs, f32 on the CPU) */
    wk_dtype kv_dt;                   /* --kv-dtype: the KV cache's (f16 by default on GPUs,
                                       * f32 on the CPU and for Gemma) */
    int fuse;                         /* --fuse: add + rms_norm and silu * up as one op each,
                                       * and decode's int8 activations made by the norm */
    wk_storage *ha;                   /* the int8 activations of the current h (wk_add_rms_norm_act)
                                       * when the product after the norm reads them, else NULL */
    int qact;                         /* --qact: which ops make decode's int8 activations */
} model;
enum { QACT_NORM = 1, QACT_GLU = 2, QACT_ATTN = 4, QACT_ALL = 7 };

/* llama_arch.c: fills m->fam from general.architecture and the family's metadata keys; dies
 * naming an architecture this example does not run. */
void family_read(model *m, const wk_gguf *g);
/* After the hyperparameters (dim, heads, hd, blocks, rope) are read: m->attn_scale and the
 * local blocks' rope (lrope_base, lrope_scale). */
void family_finish(model *m, const wk_gguf *g);
/* "<arch>.<key>" for the model's architecture (a static buffer: use before the next call). */
const char *arch_key(const model *m, const char *key);
/* Whether block l is a sliding-window block (the family's pattern, or the file's
 * <arch>.attention.sliding_window_pattern). */
int family_block_is_swa(const model *m, const wk_gguf *g, int64_t l);

/* Reads hyperparameters and rank `rank` of `nranks` of the weights onto dev; ctx <= 0 means
 * llama.context_length (capped at 4096). kv_dt: the KV cache's dtype (a wk_dtype: f32, f16 or
 * bf16), or -1 for the default: f16 on GPU devices (any backend but the CPU), f32 on the CPU
 * and for the families whose attention is composed (fam.host_pos: Gemma's soft-capping and
 * windows). Dies with the reason when the file is not a Llama model this example runs, or when
 * its shapes do not split nranks ways. */
void model_load(model *m, const wk_gguf *g, wk_device *dev, int64_t ctx, int rank, int nranks,
                int kv_dt);
void model_free(model *m);

#endif
