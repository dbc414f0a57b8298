/* ================================================================================================================
   5. The pilot model (spec §3.3) and the mis-prediction cache (§3.6)
   ================================================================================================================ */
/* The pilot predicts, per sample, the K_max×10 block vectors (mlsys_offload_blocks_label) from three inputs: the
   sample after embedding (x_e), the network's AFM (x_a) and its basic type (0 CNN, 1 RNN/LSTM, 2 transformer).
     h_e = LReLU(W_e x_e + b_e) ∈ R^d,  h_a = LReLU(W_a x_a + b_a) ∈ R^d,
     expert t (only t = nn_type runs): [h_e; h_a] → LReLU → h → LReLU → h → LReLU → d_out = z,
     ŷ = W_o z + b_o ∈ R^{k_max·10} (log1p space; decode y = max(0, round(expm1(ŷ)))).
   Parameters, flat, in this order (matrices row-major, [out][in]): W_e [d][e_proj+2], b_e [d], W_a [d][afm_dim],
   b_a [d]; for t = 0, 1, 2: W1 [h][2d], b1 [h], W2 [h][h], b2 [h], W3 [d_out][h], b3 [d_out]; W_o [k_max·10][d_out],
   b_o [k_max·10]. Init (seeded): weights uniform in ±sqrt(6 / ((1 + leaky²)·fan_in)) (He/Kaiming-uniform for
   LeakyReLU) for the layers followed by LReLU, ±sqrt(3 / fan_in) for the linear output layer; biases 0.
   Loss of one sample: (1/(k_max·10)) Σ_i w_i (ŷ_i − log1p(label_i))², w_i = w_rows on element 0 of each block
   (the row count), 1 elsewhere. Training: plain SGD on the minibatch mean.
   Threads: a model holds its own scratch, so forward, features, loss, grad and train on ONE model must not run
   concurrently (forward allocates nothing); distinct models are independent. */
typedef struct {
  int e_proj;       /* random projection width of the pooled embedding: 32 */
  int d;            /* input-feature layer width: 16 */
  int h;            /* hidden width of each expert MLP: 32 */
  int d_out;        /* expert output width: 32 */
  int k_max;        /* blocks predicted: 16 */
  int afm_full;     /* 0: compact AFM features (11 numbers), 1: full (afm_rows_max × 9, log1p dims) */
  int afm_rows_max; /* full mode: 256 */
  float leaky;      /* LeakyReLU slope for x < 0: 0.01 (must be in (0, 1]) */
  float lr;         /* SGD learning rate: 0.01 */
  float w_rows;     /* loss weight on element 0 of each block: 4 */
  uint64_t seed;    /* weights, projection and shuffling: 1 (so seeds 0 and 1 give the same model) */
} mlsys_offload_pilot_cfg;  /* zero = defaults (field by field) */

#define MLSYS_OFFLOAD_PILOT_MAX_DIM 4096          /* e_proj, d, h, d_out, k_max */
#define MLSYS_OFFLOAD_PILOT_MAX_ROWS 65536        /* afm_rows_max */
#define MLSYS_OFFLOAD_PILOT_MAX_PARAMS (1u << 26) /* 256 MB of weights; larger configs are MLSYS_ERR_TOO_BIG */
#define MLSYS_OFFLOAD_PILOT_VERSION 1u            /* of the model file */

typedef struct mlsys_offload_pilot mlsys_offload_pilot;
/* MLSYS_ERR_ARG for a negative or out-of-range field (named), MLSYS_ERR_TOO_BIG above MAX_PARAMS. */
MLSYS_DEF mlsys_status mlsys_offload_pilot_create(const mlsys_offload_pilot_cfg *cfg, mlsys_offload_pilot **out);
MLSYS_DEF void mlsys_offload_pilot_free(mlsys_offload_pilot *m);          /* NULL is fine */
MLSYS_DEF size_t mlsys_offload_pilot_nparams(const mlsys_offload_pilot *m);
/* The configuration with every default filled in (what the model file stores). */
MLSYS_DEF mlsys_offload_pilot_cfg mlsys_offload_pilot_config(const mlsys_offload_pilot *m);
/* x_e (e_proj + 2 floats): the mean over the n_tok rows of emb[n_tok][emb_dim], times a Gaussian projection P
   [emb_dim][e_proj] with entries N(0, 1/emb_dim) (a function of (seed, emb_dim) only, so the file does not store it;
   it is cached in the model for the last emb_dim), then log1p(n_tok), log1p(n_tok·emb_dim·4) (fp32 bytes).
   n_tok = 0 gives a zero projection. Accumulates in double. */
MLSYS_DEF void mlsys_offload_pilot_features(const mlsys_offload_pilot *m, const float *emb, int n_tok, int emb_dim, float *x_e);
/* AFM features from rows (section 1): compact: log1p of the 9 column sums, log1p(#rows that are not all zero),
   log1p(#all-zero rows, the control-flow rows); full: afm_rows_max rows (zero-padded or truncated) of
   [idiom[0..5], log1p(dim[0..2])]. Negative entries count as 0. afm_dim is 11 or afm_rows_max·9. */
MLSYS_DEF int mlsys_offload_pilot_afm_dim(const mlsys_offload_pilot *m);
MLSYS_DEF void mlsys_offload_pilot_afm_features(const mlsys_offload_pilot *m, const mlsys_offload_sig *afm, int n_rows, float *x_a);
/* Raw output ŷ (k_max·10 floats, log1p space). Allocation-free. An nn_type outside 0..2 fills ŷ with NaN and sets
   MLSYS_ERR_ARG. */
MLSYS_DEF void mlsys_offload_pilot_forward(const mlsys_offload_pilot *m, const float *x_e, const float *x_a, int nn_type, float *yhat);
/* pred[i] = max(0, round(expm1(ŷ_i))) (half away from zero; NaN gives 0, above INT32_MAX gives INT32_MAX). The
   number of blocks is the first k with pred[10k] = 0. */
MLSYS_DEF void mlsys_offload_pilot_decode(const mlsys_offload_pilot *m, const float *yhat, int32_t *pred);
/* One SGD epoch over n samples (x_e [n][e_proj+2], x_a [n][afm_dim], nn_type [n], labels [n][k_max·10]: the
   integers of mlsys_offload_blocks_label, as floats, ≥ 0), shuffled with the pilot's own rng, in minibatches of
   `batch` (the last one shorter). Returns the mean over the epoch of each sample's loss before its update, or NaN
   with MLSYS_ERR_ARG on bad arguments (n or batch < 1, an nn_type outside 0..2, a negative or non-finite label). */
MLSYS_DEF float mlsys_offload_pilot_train_epoch(mlsys_offload_pilot *m, int n, const float *x_e, const float *x_a,
                                                const int *nn_type, const float *labels, int batch);
/* Loss of one sample (NaN with MLSYS_ERR_ARG on bad arguments) and its gradient d loss / d parameter (flat order
   above; grad has nparams floats, zero for the experts that did not run). */
MLSYS_DEF float mlsys_offload_pilot_loss(const mlsys_offload_pilot *m, const float *x_e, const float *x_a, int nn_type, const float *label);
MLSYS_DEF mlsys_status mlsys_offload_pilot_grad(mlsys_offload_pilot *m, const float *x_e, const float *x_a, int nn_type,
                                                const float *label, float *grad);
MLSYS_DEF float *mlsys_offload_pilot_params(mlsys_offload_pilot *m);   /* flat, nparams; writable */
/* Model file (spec §2.3(f)), little-endian: "MLSYSPLT", u32 version, u32 MLSYS_OFFLOAD_CATALOG_VERSION (labels
   depend on the idiom table), i32 e_proj, d, h, d_out, k_max, afm_full, afm_rows_max, f32 leaky, lr, w_rows,
   u64 seed, u64 nparams, nparams × f32 weights, u32 CRC-32C (mlsys_crc32c) of every byte before it. Loading
   rebuilds the projection and reseeds the shuffling rng from the seed (a loaded model trains like a new one
   with those weights). Errors: MLSYS_ERR_PARSE naming the problem (truncated, bad magic, CRC mismatch, a config
   field out of range, nparams not matching the config, trailing bytes, a non-finite weight), MLSYS_ERR_UNSUPPORTED
   (another file or catalogue version), MLSYS_ERR_TOO_BIG; source names the buffer in messages. Save writes
   path.tmp, then renames it. */
MLSYS_DEF mlsys_status mlsys_offload_pilot_save(const mlsys_offload_pilot *m, const char *path);
MLSYS_DEF mlsys_status mlsys_offload_pilot_load(const char *path, mlsys_offload_pilot **out);
MLSYS_DEF mlsys_status mlsys_offload_pilot_load_mem(const void *buf, size_t len, const char *source, mlsys_offload_pilot **out);

/* Mis-prediction cache (§3.6): when a sample's decoded pilot output equals one recorded for a mis-predicted case,
   the runtime uses that case's correct blocks. A hash map from k_max·10 int32 (the prediction) to k_max·10 int32
   (the true label); keys compare exactly. */
typedef struct mlsys_offload_mcache mlsys_offload_mcache;
MLSYS_DEF mlsys_status mlsys_offload_mcache_create(int k_max, mlsys_offload_mcache **out);   /* 1..MAX_DIM */
MLSYS_DEF void mlsys_offload_mcache_free(mlsys_offload_mcache *c);                          /* NULL is fine */
/* Insert, or overwrite the value of an existing key. MLSYS_ERR_NOMEM leaves the cache as it was. */
MLSYS_DEF mlsys_status mlsys_offload_mcache_put(mlsys_offload_mcache *c, const int32_t *pred, const int32_t *truth);
/* The stored value (valid until the next put or free), or NULL if absent. */
MLSYS_DEF const int32_t *mlsys_offload_mcache_get(const mlsys_offload_mcache *c, const int32_t *pred);
MLSYS_DEF size_t mlsys_offload_mcache_size(const mlsys_offload_mcache *c);
