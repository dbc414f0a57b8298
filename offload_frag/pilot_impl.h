/* ================================================================================================================
   5. The pilot model (spec §3.3, §2.3(f)) and the mis-prediction cache (§3.6)
   ================================================================================================================ */
#define MLSYS__OFFLOAD_PILOT_MAGIC "MLSYSPLT"
#define MLSYS__OFFLOAD_PILOT_HDR 72   /* magic 8, versions 8, 7 ints 28, 3 floats 12, seed 8, nparams 8 */

/* Offsets of each parameter group in the flat vector (the order the public header documents). */
typedef struct {
  size_t we, be, wa, ba, w1[3], b1[3], w2[3], b2[3], w3[3], b3[3], wo, bo, n;
} mlsys__offload_pilot_layout;

/* The projection of §3.3 for one embedding width, cached because generating it costs emb_dim·e_proj normals. */
typedef struct {
  float *P;                       /* [dim][e_proj] */
  int dim;
} mlsys__offload_pilot_proj;

struct mlsys_offload_pilot {
  mlsys_offload_pilot_cfg cfg;    /* defaults filled in */
  int xe, xa, ny;                 /* widths of x_e, x_a and ŷ */
  mlsys__offload_pilot_layout L;
  float *p, *g;                   /* parameters; the minibatch gradient */
  float *ws;                      /* all scratch below lives in this one block */
  float *uc, *c;                  /* [2d] pre-activations and [h_e; h_a] */
  float *u1, *a1, *u2, *a2, *u3, *z, *y;
  float *gy, *gz, *g2, *g1, *gc;  /* backward: d loss / d (ŷ, z, a2, a1, c) */
  double *acc;                    /* [e_proj] features' accumulators */
  mlsys__offload_pilot_proj *pc;  /* behind a pointer so const entry points may refill it */
  mlsys_rng rng;                  /* minibatch shuffling */
};

/* Independent streams from one user seed: weights, projection (per width), shuffling. */
#define MLSYS__OFFLOAD_PILOT_S_PROJ 0xD1B54A32D192ED03ull
#define MLSYS__OFFLOAD_PILOT_S_SHUF 0x9E3779B97F4A7C15ull

static const char *mlsys__offload_pilot_field_names[] = {"e_proj", "d", "h", "d_out", "k_max"};

/* Fill defaults (zero fields) and check ranges. strict (a file's config): zero is an error, since the writer always
   stores the resolved values. */
static mlsys_status mlsys__offload_pilot_resolve(const mlsys_offload_pilot_cfg *in, mlsys_offload_pilot_cfg *out, int strict,
                                                 const char *name) {
  static const int dflt[5] = {32, 16, 32, 32, 16};
  int v[5], i;
  mlsys_offload_pilot_cfg c;
  if (in) c = *in;
  else memset(&c, 0, sizeof c);
  v[0] = c.e_proj; v[1] = c.d; v[2] = c.h; v[3] = c.d_out; v[4] = c.k_max;
  for (i = 0; i < 5; i++) {
    if (v[i] == 0 && !strict) v[i] = dflt[i];
    if (v[i] < 1 || v[i] > MLSYS_OFFLOAD_PILOT_MAX_DIM)
      return mlsys_set_error(strict ? MLSYS_ERR_PARSE : MLSYS_ERR_ARG, "%s: %s = %d is outside 1..%d", name,
                             mlsys__offload_pilot_field_names[i], v[i], MLSYS_OFFLOAD_PILOT_MAX_DIM);
  }
  c.e_proj = v[0]; c.d = v[1]; c.h = v[2]; c.d_out = v[3]; c.k_max = v[4];
  if (c.afm_full != 0 && c.afm_full != 1)
    return mlsys_set_error(strict ? MLSYS_ERR_PARSE : MLSYS_ERR_ARG, "%s: afm_full = %d is neither 0 nor 1", name, c.afm_full);
  if (c.afm_rows_max == 0 && !strict) c.afm_rows_max = 256;
  if (c.afm_rows_max < 1 || c.afm_rows_max > MLSYS_OFFLOAD_PILOT_MAX_ROWS)
    return mlsys_set_error(strict ? MLSYS_ERR_PARSE : MLSYS_ERR_ARG, "%s: afm_rows_max = %d is outside 1..%d", name,
                           c.afm_rows_max, MLSYS_OFFLOAD_PILOT_MAX_ROWS);
  if (c.leaky == 0.0f && !strict) c.leaky = 0.01f;
  if (!(c.leaky > 0.0f && c.leaky <= 1.0f))
    return mlsys_set_error(strict ? MLSYS_ERR_PARSE : MLSYS_ERR_ARG, "%s: leaky = %g is outside (0, 1]", name, (double)c.leaky);
  if (c.lr == 0.0f && !strict) c.lr = 0.01f;
  if (!(c.lr > 0.0f && c.lr <= FLT_MAX))
    return mlsys_set_error(strict ? MLSYS_ERR_PARSE : MLSYS_ERR_ARG, "%s: lr = %g is not a positive finite number", name, (double)c.lr);
  if (c.w_rows == 0.0f && !strict) c.w_rows = 4.0f;
  if (!(c.w_rows > 0.0f && c.w_rows <= FLT_MAX))
    return mlsys_set_error(strict ? MLSYS_ERR_PARSE : MLSYS_ERR_ARG, "%s: w_rows = %g is not a positive finite number", name,
                           (double)c.w_rows);
  if (c.seed == 0 && !strict) c.seed = 1;
  if (c.seed == 0) return mlsys_set_error(MLSYS_ERR_PARSE, "%s: seed is 0 (a saved model stores its resolved seed)", name);
  *out = c;
  return MLSYS_OK;
}

/* Parameter offsets and count of a resolved config; uint64 arithmetic (the limits keep it far from overflow). */
static uint64_t mlsys__offload_pilot_layout_of(const mlsys_offload_pilot_cfg *c, mlsys__offload_pilot_layout *L) {
  uint64_t d = (uint64_t)c->d, h = (uint64_t)c->h, o = (uint64_t)c->d_out, ny = (uint64_t)c->k_max * 10u;
  uint64_t xe = (uint64_t)c->e_proj + 2u, xa = c->afm_full ? (uint64_t)c->afm_rows_max * 9u : 11u, n = 0;
  mlsys__offload_pilot_layout l;
  int t;
  memset(&l, 0, sizeof l);
  l.we = (size_t)n; n += d * xe;
  l.be = (size_t)n; n += d;
  l.wa = (size_t)n; n += d * xa;
  l.ba = (size_t)n; n += d;
  for (t = 0; t < 3; t++) {
    l.w1[t] = (size_t)n; n += h * 2u * d;
    l.b1[t] = (size_t)n; n += h;
    l.w2[t] = (size_t)n; n += h * h;
    l.b2[t] = (size_t)n; n += h;
    l.w3[t] = (size_t)n; n += o * h;
    l.b3[t] = (size_t)n; n += o;
  }
  l.wo = (size_t)n; n += ny * o;
  l.bo = (size_t)n; n += ny;
  l.n = (size_t)n;
  if (L) *L = l;
  return n;
}

static void mlsys__offload_pilot_free_parts(mlsys_offload_pilot *m) {
  if (!m) return;
  if (m->pc) mlsys_free(m->pc->P);
  mlsys_free(m->pc);
  mlsys_free(m->p);
  mlsys_free(m->g);
  mlsys_free(m->ws);
  mlsys_free(m->acc);
  mlsys_free(m);
}

/* Allocate a model for a resolved config; weights uninitialised. */
static mlsys_status mlsys__offload_pilot_alloc(const mlsys_offload_pilot_cfg *c, const char *name, mlsys_offload_pilot **out) {
  mlsys_offload_pilot *m;
  uint64_t np = mlsys__offload_pilot_layout_of(c, NULL);
  size_t d = (size_t)c->d, h = (size_t)c->h, o = (size_t)c->d_out, ny = (size_t)c->k_max * 10u, nws;
  float *w;
  *out = NULL;
  if (np > MLSYS_OFFLOAD_PILOT_MAX_PARAMS)
    return mlsys_set_error(MLSYS_ERR_TOO_BIG, "%s: %llu parameters, above the limit of %u", name, (unsigned long long)np,
                           (unsigned)MLSYS_OFFLOAD_PILOT_MAX_PARAMS);
  m = (mlsys_offload_pilot *)mlsys_calloc(1, sizeof *m);
  if (!m) return MLSYS_ERR_NOMEM;
  m->cfg = *c;
  m->xe = c->e_proj + 2;
  m->xa = c->afm_full ? c->afm_rows_max * 9 : 11;
  m->ny = (int)ny;
  mlsys__offload_pilot_layout_of(c, &m->L);
  nws = 2 * (2 * d) + 4 * h + 2 * o + ny + ny + o + 2 * h + 2 * d;
  m->p = (float *)mlsys_alloc((size_t)np, sizeof(float));
  m->g = (float *)mlsys_calloc((size_t)np, sizeof(float));
  m->ws = (float *)mlsys_calloc(nws, sizeof(float));
  m->acc = (double *)mlsys_calloc((size_t)c->e_proj, sizeof(double));
  m->pc = (mlsys__offload_pilot_proj *)mlsys_calloc(1, sizeof *m->pc);
  if (!m->p || !m->g || !m->ws || !m->acc || !m->pc) {
    mlsys__offload_pilot_free_parts(m);
    return MLSYS_ERR_NOMEM;
  }
  w = m->ws;
  m->uc = w; w += 2 * d;
  m->c = w; w += 2 * d;
  m->u1 = w; w += h;
  m->a1 = w; w += h;
  m->u2 = w; w += h;
  m->a2 = w; w += h;
  m->u3 = w; w += o;
  m->z = w; w += o;
  m->y = w; w += ny;
  m->gy = w; w += ny;
  m->gz = w; w += o;
  m->g2 = w; w += h;
  m->g1 = w; w += h;
  m->gc = w; w += 2 * d;
  mlsys_rng_seed(&m->rng, c->seed ^ MLSYS__OFFLOAD_PILOT_S_SHUF);
  *out = m;
  return MLSYS_OK;
}

static void mlsys__offload_pilot_init_layer(mlsys_rng *r, float *W, float *b, int nin, int nout, double gain) {
  double bound = sqrt(gain / (double)nin);
  size_t i, n = (size_t)nin * (size_t)nout;
  for (i = 0; i < n; i++) W[i] = (float)((2.0 * mlsys_rng_uniform(r) - 1.0) * bound);
  for (i = 0; i < (size_t)nout; i++) b[i] = 0.0f;
}

MLSYS_DEF mlsys_status mlsys_offload_pilot_create(const mlsys_offload_pilot_cfg *cfg, mlsys_offload_pilot **out) {
  mlsys_offload_pilot_cfg c;
  mlsys_offload_pilot *m;
  mlsys_status s;
  mlsys_rng r;
  double g;
  int t, d;
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "pilot create: out is NULL");
  *out = NULL;
  if ((s = mlsys__offload_pilot_resolve(cfg, &c, 0, "pilot config")) != MLSYS_OK) return s;
  if ((s = mlsys__offload_pilot_alloc(&c, "pilot config", &m)) != MLSYS_OK) return s;
  /* He/Kaiming-uniform for LeakyReLU layers: Var = 2 / ((1 + a²) fan_in); the linear output layer gets Var = 1/fan_in */
  g = 6.0 / (1.0 + (double)c.leaky * (double)c.leaky);
  d = c.d;
  mlsys_rng_seed(&r, c.seed);
  mlsys__offload_pilot_init_layer(&r, m->p + m->L.we, m->p + m->L.be, m->xe, d, g);
  mlsys__offload_pilot_init_layer(&r, m->p + m->L.wa, m->p + m->L.ba, m->xa, d, g);
  for (t = 0; t < 3; t++) {
    mlsys__offload_pilot_init_layer(&r, m->p + m->L.w1[t], m->p + m->L.b1[t], 2 * d, c.h, g);
    mlsys__offload_pilot_init_layer(&r, m->p + m->L.w2[t], m->p + m->L.b2[t], c.h, c.h, g);
    mlsys__offload_pilot_init_layer(&r, m->p + m->L.w3[t], m->p + m->L.b3[t], c.h, c.d_out, g);
  }
  mlsys__offload_pilot_init_layer(&r, m->p + m->L.wo, m->p + m->L.bo, c.d_out, m->ny, 3.0);
  *out = m;
  return MLSYS_OK;
}

MLSYS_DEF void mlsys_offload_pilot_free(mlsys_offload_pilot *m) { mlsys__offload_pilot_free_parts(m); }

MLSYS_DEF size_t mlsys_offload_pilot_nparams(const mlsys_offload_pilot *m) { return m ? m->L.n : 0; }

MLSYS_DEF mlsys_offload_pilot_cfg mlsys_offload_pilot_config(const mlsys_offload_pilot *m) {
  mlsys_offload_pilot_cfg c;
  if (m) return m->cfg;
  memset(&c, 0, sizeof c);
  return c;
}

MLSYS_DEF float *mlsys_offload_pilot_params(mlsys_offload_pilot *m) { return m ? m->p : NULL; }

/* ---- features ---- */

/* N(0,1) pairs by Box-Muller (both values used, so half the logs of mlsys_rng_normal). */
typedef struct {
  mlsys_rng r;
  double spare;
  int has;
} mlsys__offload_pilot_gauss;

static double mlsys__offload_pilot_gauss_next(mlsys__offload_pilot_gauss *g) {
  double u1, u2, rad;
  if (g->has) {
    g->has = 0;
    return g->spare;
  }
  u1 = 1.0 - mlsys_rng_uniform(&g->r);   /* (0, 1]: log is finite */
  u2 = mlsys_rng_uniform(&g->r);
  rad = sqrt(-2.0 * log(u1));
  g->spare = rad * sin(6.283185307179586 * u2);
  g->has = 1;
  return rad * cos(6.283185307179586 * u2);
}

static void mlsys__offload_pilot_gauss_seed(mlsys__offload_pilot_gauss *g, uint64_t seed, int emb_dim) {
  mlsys_rng_seed(&g->r, seed ^ (MLSYS__OFFLOAD_PILOT_S_PROJ * (uint64_t)(unsigned)emb_dim));
  g->has = 0;
  g->spare = 0.0;
}

static void mlsys__offload_pilot_fill_nan(float *x, int n) {
  int i;
  if (x)
    for (i = 0; i < n; i++) x[i] = NAN;
}

MLSYS_DEF void mlsys_offload_pilot_features(const mlsys_offload_pilot *m, const float *emb, int n_tok, int emb_dim, float *x_e) {
  int E, j, k, t;
  double scale;
  const float *P = NULL;
  mlsys__offload_pilot_gauss gen;
  if (!m || !x_e) {
    mlsys_set_error(MLSYS_ERR_ARG, "pilot features: NULL model or output");
    return;
  }
  E = m->cfg.e_proj;
  if (n_tok < 0 || (n_tok > 0 && (!emb || emb_dim < 1))) {
    mlsys_set_error(MLSYS_ERR_ARG, "pilot features: bad embedding (n_tok %d, emb_dim %d, emb %s)", n_tok, emb_dim,
                    emb ? "given" : "NULL");
    mlsys__offload_pilot_fill_nan(x_e, m->xe);
    return;
  }
  for (j = 0; j < E; j++) m->acc[j] = 0.0;
  if (n_tok > 0) {
    scale = 1.0 / sqrt((double)emb_dim);
    if (m->pc->dim != emb_dim) {
      /* refill the cache; if that allocation fails, the same values are generated on the fly below */
      float *nP = (float *)mlsys_realloc_array(m->pc->P, (size_t)emb_dim * (size_t)E, sizeof(float));
      if (nP) {
        size_t i, n = (size_t)emb_dim * (size_t)E;
        mlsys__offload_pilot_gauss_seed(&gen, m->cfg.seed, emb_dim);
        for (i = 0; i < n; i++) nP[i] = (float)(mlsys__offload_pilot_gauss_next(&gen) * scale);
        m->pc->P = nP;
        m->pc->dim = emb_dim;
      } else {
        mlsys_clear_error();
      }
    }
    if (m->pc->dim == emb_dim) P = m->pc->P;
    else mlsys__offload_pilot_gauss_seed(&gen, m->cfg.seed, emb_dim);
    for (k = 0; k < emb_dim; k++) {
      double mean = 0.0;
      for (t = 0; t < n_tok; t++) mean += (double)emb[(size_t)t * (size_t)emb_dim + (size_t)k];
      mean /= (double)n_tok;
      for (j = 0; j < E; j++) {
        float pv = P ? P[(size_t)k * (size_t)E + (size_t)j] : (float)(mlsys__offload_pilot_gauss_next(&gen) * scale);
        m->acc[j] += (double)pv * mean;
      }
    }
  }
  for (j = 0; j < E; j++) x_e[j] = (float)m->acc[j];
  x_e[E] = (float)log1p((double)n_tok);
  x_e[E + 1] = (float)log1p((double)n_tok * (double)emb_dim * 4.0);
}

MLSYS_DEF int mlsys_offload_pilot_afm_dim(const mlsys_offload_pilot *m) { return m ? m->xa : 0; }

MLSYS_DEF void mlsys_offload_pilot_afm_features(const mlsys_offload_pilot *m, const mlsys_offload_sig *afm, int n_rows, float *x_a) {
  int r, i;
  if (!m || !x_a) {
    mlsys_set_error(MLSYS_ERR_ARG, "pilot AFM features: NULL model or output");
    return;
  }
  if (n_rows < 0 || (n_rows > 0 && !afm)) {
    mlsys_set_error(MLSYS_ERR_ARG, "pilot AFM features: bad AFM (%d rows, rows %s)", n_rows, afm ? "given" : "NULL");
    mlsys__offload_pilot_fill_nan(x_a, m->xa);
    return;
  }
  if (!m->cfg.afm_full) {
    double s[9];
    long nop = 0, ncf = 0;
    memset(s, 0, sizeof s);
    for (r = 0; r < n_rows; r++) {
      int nz = 0;
      for (i = 0; i < MLSYS_OFFLOAD_NIDIOM; i++) {
        nz |= afm[r].idiom[i] != 0;
        if (afm[r].idiom[i] > 0) s[i] += (double)afm[r].idiom[i];
      }
      for (i = 0; i < 3; i++) {
        nz |= afm[r].dim[i] != 0;
        if (afm[r].dim[i] > 0) s[6 + i] += (double)afm[r].dim[i];
      }
      if (nz) nop++;
      else ncf++;
    }
    for (i = 0; i < 9; i++) x_a[i] = (float)log1p(s[i]);
    x_a[9] = (float)log1p((double)nop);
    x_a[10] = (float)log1p((double)ncf);
    return;
  }
  for (r = 0; r < m->cfg.afm_rows_max; r++) {
    float *x = x_a + (size_t)r * 9u;
    if (r < n_rows) {
      for (i = 0; i < MLSYS_OFFLOAD_NIDIOM; i++) x[i] = afm[r].idiom[i] > 0 ? (float)afm[r].idiom[i] : 0.0f;
      for (i = 0; i < 3; i++) x[6 + i] = afm[r].dim[i] > 0 ? (float)log1p((double)afm[r].dim[i]) : 0.0f;
    } else {
      for (i = 0; i < 9; i++) x[i] = 0.0f;
    }
  }
}

/* ---- forward and backward ---- */

/* u = W x + b. Four partial sums: without -ffast-math the compiler may not reorder one sum, and the dependency chain
   of a single accumulator made this the whole cost of a forward pass. */
static void mlsys__offload_pilot_dense(const float *W, const float *b, const float *x, int nin, int nout, float *u) {
  int o, i;
  for (o = 0; o < nout; o++) {
    const float *w = W + (size_t)o * (size_t)nin;
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
    for (i = 0; i + 4 <= nin; i += 4) {
      s0 += w[i] * x[i];
      s1 += w[i + 1] * x[i + 1];
      s2 += w[i + 2] * x[i + 2];
      s3 += w[i + 3] * x[i + 3];
    }
    for (; i < nin; i++) s0 += w[i] * x[i];
    u[o] = b[o] + ((s0 + s1) + (s2 + s3));
  }
}

static void mlsys__offload_pilot_lrelu(const float *u, float *a, int n, float leaky) {
  int i;
  for (i = 0; i < n; i++) a[i] = u[i] > 0.0f ? u[i] : leaky * u[i];
}

/* Accumulate d/dW += go xᵀ and d/db += go; gx = Wᵀ go (when gx is given). */
static void mlsys__offload_pilot_dense_bwd(const float *W, const float *x, int nin, int nout, const float *go, float *GW, float *Gb,
                                           float *gx) {
  int o, i;
  if (gx)
    for (i = 0; i < nin; i++) gx[i] = 0.0f;
  for (o = 0; o < nout; o++) {
    const float *w = W + (size_t)o * (size_t)nin;
    float *gw = GW + (size_t)o * (size_t)nin, g = go[o];
    if (g == 0.0f) continue;
    Gb[o] += g;
    for (i = 0; i < nin; i++) gw[i] += g * x[i];
    if (gx)
      for (i = 0; i < nin; i++) gx[i] += w[i] * g;
  }
}

/* ga ⊙ LReLU'(u), in place (the kink at 0 takes the leaky side). */
static void mlsys__offload_pilot_lrelu_bwd(const float *u, float *g, int n, float leaky) {
  int i;
  for (i = 0; i < n; i++)
    if (!(u[i] > 0.0f)) g[i] *= leaky;
}

/* The forward pass of §3.3 into the model's scratch (m->y holds ŷ). t is 0..2. */
static void mlsys__offload_pilot_fwd(const mlsys_offload_pilot *m, const float *x_e, const float *x_a, int t) {
  const float *p = m->p;
  const mlsys__offload_pilot_layout *L = &m->L;
  int d = m->cfg.d, h = m->cfg.h, o = m->cfg.d_out;
  float a = m->cfg.leaky;
  mlsys__offload_pilot_dense(p + L->we, p + L->be, x_e, m->xe, d, m->uc);
  mlsys__offload_pilot_dense(p + L->wa, p + L->ba, x_a, m->xa, d, m->uc + d);
  mlsys__offload_pilot_lrelu(m->uc, m->c, 2 * d, a);
  mlsys__offload_pilot_dense(p + L->w1[t], p + L->b1[t], m->c, 2 * d, h, m->u1);
  mlsys__offload_pilot_lrelu(m->u1, m->a1, h, a);
  mlsys__offload_pilot_dense(p + L->w2[t], p + L->b2[t], m->a1, h, h, m->u2);
  mlsys__offload_pilot_lrelu(m->u2, m->a2, h, a);
  mlsys__offload_pilot_dense(p + L->w3[t], p + L->b3[t], m->a2, h, o, m->u3);
  mlsys__offload_pilot_lrelu(m->u3, m->z, o, a);
  mlsys__offload_pilot_dense(p + L->wo, p + L->bo, m->z, o, m->ny, m->y);
}

/* Loss of the sample whose forward pass is in scratch; with G, also accumulate scale · d loss / d params into G. */
static double mlsys__offload_pilot_bwd(const mlsys_offload_pilot *m, const float *x_e, const float *x_a, int t, const float *label,
                                       float *G, float scale) {
  const float *p = m->p;
  const mlsys__offload_pilot_layout *L = &m->L;
  int d = m->cfg.d, h = m->cfg.h, o = m->cfg.d_out, ny = m->ny, i;
  float a = m->cfg.leaky;
  double loss = 0.0;
  for (i = 0; i < ny; i++) {
    double w = i % 10 == 0 ? (double)m->cfg.w_rows : 1.0, e = (double)m->y[i] - log1p((double)label[i]);
    loss += w * e * e;
    m->gy[i] = (float)(scale * 2.0 * w * e / (double)ny);
  }
  loss /= (double)ny;
  if (!G) return loss;
  mlsys__offload_pilot_dense_bwd(p + L->wo, m->z, o, ny, m->gy, G + L->wo, G + L->bo, m->gz);
  mlsys__offload_pilot_lrelu_bwd(m->u3, m->gz, o, a);
  mlsys__offload_pilot_dense_bwd(p + L->w3[t], m->a2, h, o, m->gz, G + L->w3[t], G + L->b3[t], m->g2);
  mlsys__offload_pilot_lrelu_bwd(m->u2, m->g2, h, a);
  mlsys__offload_pilot_dense_bwd(p + L->w2[t], m->a1, h, h, m->g2, G + L->w2[t], G + L->b2[t], m->g1);
  mlsys__offload_pilot_lrelu_bwd(m->u1, m->g1, h, a);
  mlsys__offload_pilot_dense_bwd(p + L->w1[t], m->c, 2 * d, h, m->g1, G + L->w1[t], G + L->b1[t], m->gc);
  mlsys__offload_pilot_lrelu_bwd(m->uc, m->gc, 2 * d, a);
  mlsys__offload_pilot_dense_bwd(p + L->we, x_e, m->xe, d, m->gc, G + L->we, G + L->be, NULL);
  mlsys__offload_pilot_dense_bwd(p + L->wa, x_a, m->xa, d, m->gc + d, G + L->wa, G + L->ba, NULL);
  return loss;
}

MLSYS_DEF void mlsys_offload_pilot_forward(const mlsys_offload_pilot *m, const float *x_e, const float *x_a, int nn_type, float *yhat) {
  if (!m || !yhat) {
    mlsys_set_error(MLSYS_ERR_ARG, "pilot forward: NULL model or output");
    return;
  }
  if (!x_e || !x_a || nn_type < 0 || nn_type > 2) {
    mlsys_set_error(MLSYS_ERR_ARG, "pilot forward: %s", !x_e || !x_a ? "NULL features" : "nn_type is not 0, 1 or 2");
    mlsys__offload_pilot_fill_nan(yhat, m->ny);
    return;
  }
  mlsys__offload_pilot_fwd(m, x_e, x_a, nn_type);
  memcpy(yhat, m->y, (size_t)m->ny * sizeof(float));
}

MLSYS_DEF void mlsys_offload_pilot_decode(const mlsys_offload_pilot *m, const float *yhat, int32_t *pred) {
  int i;
  if (!m || !yhat || !pred) return;
  for (i = 0; i < m->ny; i++) {
    double v = expm1((double)yhat[i]);
    if (!(v > 0.0)) pred[i] = 0;   /* NaN too */
    else if (v >= (double)INT32_MAX) pred[i] = INT32_MAX;
    else pred[i] = (int32_t)floor(v + 0.5);
  }
}

/* Argument checks shared by loss, grad and training; NULL on success, else what is wrong. */
static const char *mlsys__offload_pilot_bad_sample(const mlsys_offload_pilot *m, const float *x_e, const float *x_a, int nn_type,
                                                   const float *label) {
  int i;
  if (!x_e || !x_a || !label) return "NULL features or label";
  if (nn_type < 0 || nn_type > 2) return "nn_type is not 0, 1 or 2";
  for (i = 0; i < m->ny; i++)
    if (!(label[i] >= 0.0f && label[i] <= FLT_MAX)) return "a label is negative or not finite";
  return NULL;
}

MLSYS_DEF float mlsys_offload_pilot_loss(const mlsys_offload_pilot *m, const float *x_e, const float *x_a, int nn_type, const float *label) {
  const char *bad;
  if (!m) {
    mlsys_set_error(MLSYS_ERR_ARG, "pilot loss: NULL model");
    return NAN;
  }
  if ((bad = mlsys__offload_pilot_bad_sample(m, x_e, x_a, nn_type, label)) != NULL) {
    mlsys_set_error(MLSYS_ERR_ARG, "pilot loss: %s", bad);
    return NAN;
  }
  mlsys__offload_pilot_fwd(m, x_e, x_a, nn_type);
  return (float)mlsys__offload_pilot_bwd(m, x_e, x_a, nn_type, label, NULL, 1.0f);
}

MLSYS_DEF mlsys_status mlsys_offload_pilot_grad(mlsys_offload_pilot *m, const float *x_e, const float *x_a, int nn_type,
                                                const float *label, float *grad) {
  const char *bad;
  if (!m || !grad) return mlsys_set_error(MLSYS_ERR_ARG, "pilot grad: NULL model or gradient");
  if ((bad = mlsys__offload_pilot_bad_sample(m, x_e, x_a, nn_type, label)) != NULL)
    return mlsys_set_error(MLSYS_ERR_ARG, "pilot grad: %s", bad);
  memset(grad, 0, m->L.n * sizeof(float));
  mlsys__offload_pilot_fwd(m, x_e, x_a, nn_type);
  mlsys__offload_pilot_bwd(m, x_e, x_a, nn_type, label, grad, 1.0f);
  return MLSYS_OK;
}

MLSYS_DEF float mlsys_offload_pilot_train_epoch(mlsys_offload_pilot *m, int n, const float *x_e, const float *x_a,
                                                const int *nn_type, const float *labels, int batch) {
  int *perm, i, b0;
  size_t j, np;
  double total = 0.0;
  float lr;
  if (!m) {
    mlsys_set_error(MLSYS_ERR_ARG, "pilot train: NULL model");
    return NAN;
  }
  if (n < 1 || batch < 1 || !x_e || !x_a || !nn_type || !labels) {
    mlsys_set_error(MLSYS_ERR_ARG, "pilot train: %s", n < 1 ? "no samples" : batch < 1 ? "batch < 1" : "NULL inputs");
    return NAN;
  }
  for (i = 0; i < n; i++) {
    const char *bad = mlsys__offload_pilot_bad_sample(m, x_e, x_a, nn_type[i], labels + (size_t)i * (size_t)m->ny);
    if (bad) {
      mlsys_set_error(MLSYS_ERR_ARG, "pilot train: sample %d: %s", i, bad);
      return NAN;
    }
  }
  perm = (int *)mlsys_alloc((size_t)n, sizeof(int));
  if (!perm) return NAN;
  for (i = 0; i < n; i++) perm[i] = i;
  for (i = n - 1; i > 0; i--) {   /* Fisher-Yates */
    int k = (int)mlsys_rng_below(&m->rng, (uint64_t)i + 1u), tmp = perm[i];
    perm[i] = perm[k];
    perm[k] = tmp;
  }
  np = m->L.n;
  lr = m->cfg.lr;
  for (b0 = 0; b0 < n; b0 += batch) {
    int B = n - b0 < batch ? n - b0 : batch;
    memset(m->g, 0, np * sizeof(float));
    for (i = 0; i < B; i++) {
      int s = perm[b0 + i];
      const float *xe = x_e + (size_t)s * (size_t)m->xe, *xa = x_a + (size_t)s * (size_t)m->xa;
      mlsys__offload_pilot_fwd(m, xe, xa, nn_type[s]);
      total += mlsys__offload_pilot_bwd(m, xe, xa, nn_type[s], labels + (size_t)s * (size_t)m->ny, m->g, 1.0f / (float)B);
    }
    for (j = 0; j < np; j++) m->p[j] -= lr * m->g[j];
  }
  mlsys_free(perm);
  return (float)(total / (double)n);
}

/* ---- model file ---- */

static void mlsys__offload_pilot_wr32(uint8_t *b, uint32_t v) {
  b[0] = (uint8_t)v; b[1] = (uint8_t)(v >> 8); b[2] = (uint8_t)(v >> 16); b[3] = (uint8_t)(v >> 24);
}
static uint32_t mlsys__offload_pilot_rd32(const uint8_t *b) {
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}
static void mlsys__offload_pilot_wr64(uint8_t *b, uint64_t v) {
  mlsys__offload_pilot_wr32(b, (uint32_t)v);
  mlsys__offload_pilot_wr32(b + 4, (uint32_t)(v >> 32));
}
static uint64_t mlsys__offload_pilot_rd64(const uint8_t *b) {
  return (uint64_t)mlsys__offload_pilot_rd32(b) | (uint64_t)mlsys__offload_pilot_rd32(b + 4) << 32;
}
static uint32_t mlsys__offload_pilot_fbits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static float mlsys__offload_pilot_bitsf(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

MLSYS_DEF mlsys_status mlsys_offload_pilot_save(const mlsys_offload_pilot *m, const char *path) {
  const mlsys_offload_pilot_cfg *c;
  size_t len, i;
  uint8_t *b;
  char *tmp;
  FILE *f;
  int ok;
  if (!m || !path) return mlsys_set_error(MLSYS_ERR_ARG, "pilot save: NULL model or path");
  c = &m->cfg;
  len = MLSYS__OFFLOAD_PILOT_HDR + m->L.n * 4 + 4;
  b = (uint8_t *)mlsys_alloc(len, 1);
  tmp = (char *)mlsys_alloc(strlen(path) + 5, 1);
  if (!b || !tmp) {
    mlsys_free(b);
    mlsys_free(tmp);
    return MLSYS_ERR_NOMEM;
  }
  memcpy(b, MLSYS__OFFLOAD_PILOT_MAGIC, 8);
  mlsys__offload_pilot_wr32(b + 8, MLSYS_OFFLOAD_PILOT_VERSION);
  mlsys__offload_pilot_wr32(b + 12, MLSYS_OFFLOAD_CATALOG_VERSION);
  mlsys__offload_pilot_wr32(b + 16, (uint32_t)c->e_proj);
  mlsys__offload_pilot_wr32(b + 20, (uint32_t)c->d);
  mlsys__offload_pilot_wr32(b + 24, (uint32_t)c->h);
  mlsys__offload_pilot_wr32(b + 28, (uint32_t)c->d_out);
  mlsys__offload_pilot_wr32(b + 32, (uint32_t)c->k_max);
  mlsys__offload_pilot_wr32(b + 36, (uint32_t)c->afm_full);
  mlsys__offload_pilot_wr32(b + 40, (uint32_t)c->afm_rows_max);
  mlsys__offload_pilot_wr32(b + 44, mlsys__offload_pilot_fbits(c->leaky));
  mlsys__offload_pilot_wr32(b + 48, mlsys__offload_pilot_fbits(c->lr));
  mlsys__offload_pilot_wr32(b + 52, mlsys__offload_pilot_fbits(c->w_rows));
  mlsys__offload_pilot_wr64(b + 56, c->seed);
  mlsys__offload_pilot_wr64(b + 64, (uint64_t)m->L.n);
  for (i = 0; i < m->L.n; i++) mlsys__offload_pilot_wr32(b + MLSYS__OFFLOAD_PILOT_HDR + 4 * i, mlsys__offload_pilot_fbits(m->p[i]));
  mlsys__offload_pilot_wr32(b + len - 4, mlsys_crc32c(0, b, len - 4));
  strcpy(tmp, path);
  strcat(tmp, ".tmp");
  f = fopen(tmp, "wb");
  if (!f) {
    mlsys_set_error(MLSYS_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
    mlsys_free(b);
    mlsys_free(tmp);
    return MLSYS_ERR_IO;
  }
  ok = fwrite(b, 1, len, f) == len;
  ok = (fclose(f) == 0) && ok;
  if (!ok || rename(tmp, path) != 0) {
    mlsys_set_error(MLSYS_ERR_IO, "%s: cannot write the pilot model: %s", path, strerror(errno));
    remove(tmp);
    mlsys_free(b);
    mlsys_free(tmp);
    return MLSYS_ERR_IO;
  }
  mlsys_free(b);
  mlsys_free(tmp);
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_offload_pilot_load_mem(const void *buf, size_t len, const char *source, mlsys_offload_pilot **out) {
  const uint8_t *b = (const uint8_t *)buf;
  const char *name = source ? source : "pilot model";
  mlsys_offload_pilot_cfg c;
  mlsys_offload_pilot *m;
  mlsys_status s;
  uint64_t np, want_np;
  uint32_t v, crc, want;
  size_t need, i;
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "%s: load without an output", name);
  *out = NULL;
  if (!b && len) return mlsys_set_error(MLSYS_ERR_ARG, "%s: NULL buffer", name);
  if (len < 8 || memcmp(b, MLSYS__OFFLOAD_PILOT_MAGIC, 8) != 0) {
    if (len < 8 && (len == 0 || memcmp(b, MLSYS__OFFLOAD_PILOT_MAGIC, len) == 0))
      return mlsys_set_error(MLSYS_ERR_PARSE, "%s: truncated: %zu bytes, the header alone is %d", name, len, MLSYS__OFFLOAD_PILOT_HDR);
    return mlsys_set_error(MLSYS_ERR_PARSE, "%s: bad magic (not an mlsys pilot model file)", name);
  }
  if (len < MLSYS__OFFLOAD_PILOT_HDR)
    return mlsys_set_error(MLSYS_ERR_PARSE, "%s: truncated: %zu bytes, the header alone is %d", name, len, MLSYS__OFFLOAD_PILOT_HDR);
  if ((v = mlsys__offload_pilot_rd32(b + 8)) != MLSYS_OFFLOAD_PILOT_VERSION)
    return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "%s: unsupported version %u (this build reads version %u)", name, v,
                           MLSYS_OFFLOAD_PILOT_VERSION);
  np = mlsys__offload_pilot_rd64(b + 64);
  if (np > MLSYS_OFFLOAD_PILOT_MAX_PARAMS)
    return mlsys_set_error(MLSYS_ERR_TOO_BIG, "%s: %llu parameters, above the limit of %u", name, (unsigned long long)np,
                           (unsigned)MLSYS_OFFLOAD_PILOT_MAX_PARAMS);
  need = MLSYS__OFFLOAD_PILOT_HDR + (size_t)np * 4 + 4;
  if (len < need) return mlsys_set_error(MLSYS_ERR_PARSE, "%s: truncated: %zu bytes, expected %zu", name, len, need);
  if (len > need) return mlsys_set_error(MLSYS_ERR_PARSE, "%s: %zu trailing bytes after the CRC", name, len - need);
  crc = mlsys__offload_pilot_rd32(b + need - 4);
  want = mlsys_crc32c(0, b, need - 4);
  if (crc != want)
    return mlsys_set_error(MLSYS_ERR_PARSE, "%s: CRC mismatch: stored 0x%08x, computed 0x%08x (the file is damaged)", name, crc, want);
  /* the CRC holds: what follows catches files from a broken writer */
  if ((v = mlsys__offload_pilot_rd32(b + 12)) != MLSYS_OFFLOAD_CATALOG_VERSION)
    return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "%s: trained with idiom catalogue version %u, this build has version %d (retrain)",
                           name, v, MLSYS_OFFLOAD_CATALOG_VERSION);
  memset(&c, 0, sizeof c);
  c.e_proj = (int32_t)mlsys__offload_pilot_rd32(b + 16);
  c.d = (int32_t)mlsys__offload_pilot_rd32(b + 20);
  c.h = (int32_t)mlsys__offload_pilot_rd32(b + 24);
  c.d_out = (int32_t)mlsys__offload_pilot_rd32(b + 28);
  c.k_max = (int32_t)mlsys__offload_pilot_rd32(b + 32);
  c.afm_full = (int32_t)mlsys__offload_pilot_rd32(b + 36);
  c.afm_rows_max = (int32_t)mlsys__offload_pilot_rd32(b + 40);
  c.leaky = mlsys__offload_pilot_bitsf(mlsys__offload_pilot_rd32(b + 44));
  c.lr = mlsys__offload_pilot_bitsf(mlsys__offload_pilot_rd32(b + 48));
  c.w_rows = mlsys__offload_pilot_bitsf(mlsys__offload_pilot_rd32(b + 52));
  c.seed = mlsys__offload_pilot_rd64(b + 56);
  if ((s = mlsys__offload_pilot_resolve(&c, &c, 1, name)) != MLSYS_OK) return s;
  want_np = mlsys__offload_pilot_layout_of(&c, NULL);
  if (want_np != np)
    return mlsys_set_error(MLSYS_ERR_PARSE, "%s: the file holds %llu parameters, its config needs %llu", name, (unsigned long long)np,
                           (unsigned long long)want_np);
  for (i = 0; i < (size_t)np; i++) {
    float f = mlsys__offload_pilot_bitsf(mlsys__offload_pilot_rd32(b + MLSYS__OFFLOAD_PILOT_HDR + 4 * i));
    if (!isfinite(f)) return mlsys_set_error(MLSYS_ERR_PARSE, "%s: weight %zu is not finite", name, i);
  }
  if ((s = mlsys__offload_pilot_alloc(&c, name, &m)) != MLSYS_OK) return s;
  for (i = 0; i < (size_t)np; i++) m->p[i] = mlsys__offload_pilot_bitsf(mlsys__offload_pilot_rd32(b + MLSYS__OFFLOAD_PILOT_HDR + 4 * i));
  *out = m;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_offload_pilot_load(const char *path, mlsys_offload_pilot **out) {
  char *data;
  size_t len;
  mlsys_status s;
  if (out) *out = NULL;
  if (!path) return mlsys_set_error(MLSYS_ERR_ARG, "pilot load: path is NULL");
  if ((s = mlsys_read_file(path, &data, &len)) != MLSYS_OK) return s;
  s = mlsys_offload_pilot_load_mem(data, len, path, out);
  mlsys_free(data);
  return s;
}

/* ---- mis-prediction cache: open addressing, linear probing, load ≤ 1/2 ---- */

struct mlsys_offload_mcache {
  int w;                          /* k_max·10 */
  size_t cap, n;                  /* cap: a power of two */
  uint8_t *used;
  int32_t *key, *val;             /* [cap][w] each */
};

static uint64_t mlsys__offload_mcache_hash(const int32_t *k, int w) {
  uint64_t h = 0x243F6A8885A308D3ull;
  int i;
  for (i = 0; i < w; i++) {
    h ^= (uint64_t)(uint32_t)k[i];
    h *= 0x100000001B3ull;
    h ^= h >> 29;
  }
  h ^= h >> 33;   /* splitmix64's finaliser: spread every input bit over the low bits the mask keeps */
  h *= 0xFF51AFD7ED558CCDull;
  h ^= h >> 33;
  h *= 0xC4CEB9FE1A85EC53ull;
  h ^= h >> 33;
  return h;
}

/* The slot holding key, or the empty slot where it would go. */
static size_t mlsys__offload_mcache_slot(const mlsys_offload_mcache *c, const int32_t *k) {
  size_t mask = c->cap - 1, i = (size_t)mlsys__offload_mcache_hash(k, c->w) & mask, bytes = (size_t)c->w * sizeof(int32_t);
  while (c->used[i] && memcmp(c->key + i * (size_t)c->w, k, bytes) != 0) i = (i + 1) & mask;
  return i;
}

static mlsys_status mlsys__offload_mcache_alloc(int w, size_t cap, mlsys_offload_mcache *c) {
  c->w = w;
  c->cap = cap;
  c->n = 0;
  c->used = (uint8_t *)mlsys_calloc(cap, 1);
  c->key = (int32_t *)mlsys_alloc(cap, (size_t)w * sizeof(int32_t));
  c->val = (int32_t *)mlsys_alloc(cap, (size_t)w * sizeof(int32_t));
  if (!c->used || !c->key || !c->val) {
    mlsys_free(c->used);
    mlsys_free(c->key);
    mlsys_free(c->val);
    return MLSYS_ERR_NOMEM;
  }
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_offload_mcache_create(int k_max, mlsys_offload_mcache **out) {
  mlsys_offload_mcache *c;
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "mis-prediction cache: out is NULL");
  *out = NULL;
  if (k_max < 1 || k_max > MLSYS_OFFLOAD_PILOT_MAX_DIM)
    return mlsys_set_error(MLSYS_ERR_ARG, "mis-prediction cache: k_max = %d is outside 1..%d", k_max, MLSYS_OFFLOAD_PILOT_MAX_DIM);
  c = (mlsys_offload_mcache *)mlsys_calloc(1, sizeof *c);
  if (!c) return MLSYS_ERR_NOMEM;
  if (mlsys__offload_mcache_alloc(k_max * 10, 16, c) != MLSYS_OK) {
    mlsys_free(c);
    return MLSYS_ERR_NOMEM;
  }
  *out = c;
  return MLSYS_OK;
}

MLSYS_DEF void mlsys_offload_mcache_free(mlsys_offload_mcache *c) {
  if (!c) return;
  mlsys_free(c->used);
  mlsys_free(c->key);
  mlsys_free(c->val);
  mlsys_free(c);
}

MLSYS_DEF mlsys_status mlsys_offload_mcache_put(mlsys_offload_mcache *c, const int32_t *pred, const int32_t *truth) {
  size_t i, w, bytes;
  if (!c || !pred || !truth) return mlsys_set_error(MLSYS_ERR_ARG, "mis-prediction cache put: NULL cache, key or value");
  w = (size_t)c->w;
  bytes = w * sizeof(int32_t);
  if ((c->n + 1) * 2 > c->cap) {
    mlsys_offload_mcache g;
    size_t j;
    if (c->cap > SIZE_MAX / 4 || mlsys__offload_mcache_alloc(c->w, c->cap * 2, &g) != MLSYS_OK) return MLSYS_ERR_NOMEM;
    for (j = 0; j < c->cap; j++)
      if (c->used[j]) {
        size_t k = mlsys__offload_mcache_slot(&g, c->key + j * w);
        g.used[k] = 1;
        memcpy(g.key + k * w, c->key + j * w, bytes);
        memcpy(g.val + k * w, c->val + j * w, bytes);
      }
    g.n = c->n;
    mlsys_free(c->used);
    mlsys_free(c->key);
    mlsys_free(c->val);
    *c = g;
  }
  i = mlsys__offload_mcache_slot(c, pred);
  if (!c->used[i]) {
    c->used[i] = 1;
    memcpy(c->key + i * w, pred, bytes);
    c->n++;
  }
  memcpy(c->val + i * w, truth, bytes);
  return MLSYS_OK;
}

MLSYS_DEF const int32_t *mlsys_offload_mcache_get(const mlsys_offload_mcache *c, const int32_t *pred) {
  size_t i;
  if (!c || !pred) return NULL;
  i = mlsys__offload_mcache_slot(c, pred);
  return c->used[i] ? c->val + i * (size_t)c->w : NULL;
}

MLSYS_DEF size_t mlsys_offload_mcache_size(const mlsys_offload_mcache *c) { return c ? c->n : 0; }
