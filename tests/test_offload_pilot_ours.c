/* Tests for what mlsys_offload.h's pilot adds to the seed's (docs/offload.md §6d): the length code in x_e, Adam, the
   codebook that decode snaps to, and the version 2 model file that stores them.

   Oracles: the length code against its formula and a pairwise-distinctness property over every length up to 2000;
   the snapped decode against a brute-force nearest search; Adam against a replay through the gradient API in double
   precision; the file against a save/load round trip and every truncation. The end-to-end accuracy on real
   sentences is in test_offload_e2e.c. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_offload.h"
#include "tests/test.h"
#include "tests/pilot_file.h"

#include <unistd.h>


/* x_e's length code: its formula for every length, the rest of x_e untouched by it, and every two lengths up to 2000
   at least 0.1 apart in the code (log1p(n) puts 1000 and 1001 0.001 apart). */
TEST(length_code_formula_and_distinct_lengths) {
  enum { NMAX = 2000, LC = 32, E = 4 };
  static float code[NMAX + 1][LC];
  mlsys_offload_pilot_cfg c;
  mlsys_offload_pilot *m, *m0;
  float x[E + 2 + LC], x0[E + 2], emb[3 * 5];
  double min_d = INFINITY;
  int n, j, a, b, close_a = -1, close_b = -1;
  memset(&c, 0, sizeof c);
  c.e_proj = E;
  c.len_code = LC;
  REQUIRE_OK(mlsys_offload_pilot_create(&c, &m));
  c.len_code = 0;
  REQUIRE_OK(mlsys_offload_pilot_create(&c, &m0));
  CHECK_EQ_INT(mlsys_offload_pilot_nparams(m) - mlsys_offload_pilot_nparams(m0), (size_t)LC * 16);   /* W_e grows by d = 16 per feature */
  for (j = 0; j < 15; j++) emb[j] = (float)(j % 4) - 1.5f;
  for (n = 0; n <= NMAX; n++) {
    int k = n < 3 ? n : 3;
    mlsys_offload_pilot_features(m, emb, k, 5, x);
    mlsys_offload_pilot_features(m0, emb, k, 5, x0);
    CHECK(memcmp(x, x0, sizeof x0) == 0);   /* the code is appended, the seed's features are unchanged */
    /* the code of length n alone: features of k ≤ 3 rows, then the code recomputed at n */
    for (j = 0; j < LC; j++) {
      double ang = 6.283185307179586 * (double)(n % (j + 2)) / (double)(j + 2), want = j % 2 ? sin(ang) : cos(ang);
      code[n][j] = (float)want;
      if (n == k) CHECK_NEAR(x[E + 2 + j], want, 1e-6);
    }
  }
  for (a = 1; a <= NMAX; a++)
    for (b = a + 1; b <= NMAX; b++) {
      double d2 = 0;
      for (j = 0; j < LC; j++) d2 += ((double)code[a][j] - code[b][j]) * ((double)code[a][j] - code[b][j]);
      if (d2 < min_d) { min_d = d2; close_a = a; close_b = b; }
    }
  printf("    length code: closest pair of lengths in 1..%d is %d, %d at distance %.3f\n", NMAX, close_a, close_b, sqrt(min_d));
  CHECK(sqrt(min_d) > 0.1);
  /* a longer sentence goes through the same path */
  {
    float big[40 * 5];
    for (j = 0; j < 200; j++) big[j] = (float)(j % 7) * 0.25f;
    mlsys_offload_pilot_features(m, big, 40, 5, x);
    for (j = 0; j < LC; j++) CHECK_NEAR(x[E + 2 + j], code[40][j], 1e-6);
  }
  c.len_code = -1;
  { mlsys_offload_pilot *bad_m = NULL; CHECK_EQ_INT(mlsys_offload_pilot_create(&c, &bad_m), MLSYS_ERR_ARG); CHECK(bad_m == NULL); }
  CHECK_CONTAINS(mlsys_last_error(), "len_code = -1");
  mlsys_offload_pilot_free(m);
  mlsys_offload_pilot_free(m0);
}

static double snap_dist(const float *y, const int32_t *q, int ny, double w_rows) {
  double d = 0;
  int i;
  for (i = 0; i < ny; i++) {
    double e = (double)y[i] - log1p((double)q[i]);
    d += (i % 10 ? 1.0 : w_rows) * e * e;
  }
  return d;
}

/* The snapped decode answers the code nearest in weighted log space (brute force over the distinct codes, first on
   ties), repeats are dropped, bad codes are named, and an empty codebook brings back rounding. */
TEST(codebook_decode_is_the_nearest_code) {
  enum { KM = 2, NY = KM * 10, N = 300, Q = 400 };
  static float lab[N][NY];
  static int32_t uniq[N][NY];
  mlsys_offload_pilot_cfg c;
  mlsys_offload_pilot *m;
  mlsys_rng r;
  float y[NY];
  int32_t p[NY];
  int nu = 0, i, k, q, wrong = 0;
  memset(&c, 0, sizeof c);
  c.k_max = KM;
  c.w_rows = 4;
  REQUIRE_OK(mlsys_offload_pilot_create(&c, &m));
  mlsys_rng_seed(&r, 7);
  for (i = 0; i < N; i++) {
    if (i > 0 && mlsys_rng_below(&r, 3) == 0) memcpy(lab[i], lab[mlsys_rng_below(&r, (uint64_t)i)], sizeof lab[i]);   /* a repeat */
    else
      for (k = 0; k < NY; k++) lab[i][k] = (float)mlsys_rng_below(&r, k % 10 ? 50 : 400);
  }
  for (i = 0; i < N; i++) {
    int32_t v[NY], dup = 0, u;
    for (k = 0; k < NY; k++) v[k] = (int32_t)lab[i][k];
    for (u = 0; u < nu && !dup; u++) dup = !memcmp(uniq[u], v, sizeof v);
    if (!dup) memcpy(uniq[nu++], v, sizeof v);
  }
  REQUIRE_OK(mlsys_offload_pilot_set_codebook(m, &lab[0][0], N));
  CHECK_EQ_INT(mlsys_offload_pilot_codebook_size(m), nu);
  CHECK(nu < N && nu > N / 2);
  for (q = 0; q < Q; q++) {
    int best = 0;
    double bd = INFINITY;
    if (q % 2) {   /* near a code: its log values plus noise */
      const int32_t *base = uniq[mlsys_rng_below(&r, (uint64_t)nu)];
      for (k = 0; k < NY; k++) y[k] = (float)(log1p((double)base[k]) + 0.3 * (mlsys_rng_uniform(&r) - 0.5));
    } else {
      for (k = 0; k < NY; k++) y[k] = (float)(6 * mlsys_rng_uniform(&r));
    }
    for (i = 0; i < nu; i++) {
      double d = snap_dist(y, uniq[i], NY, 4.0);
      if (d < bd) { bd = d; best = i; }
    }
    mlsys_offload_pilot_decode(m, y, p);
    wrong += memcmp(p, uniq[best], sizeof p) != 0;
  }
  CHECK_EQ_INT(wrong, 0);
  /* a NaN output answers the first code rather than garbage */
  for (k = 0; k < NY; k++) y[k] = NAN;
  mlsys_offload_pilot_decode(m, y, p);
  CHECK(memcmp(p, uniq[0], sizeof p) == 0);
  /* bad codes: named, and the codebook stays */
  lab[5][3] = 1.5f;
  CHECK_EQ_INT(mlsys_offload_pilot_set_codebook(m, &lab[0][0], N), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "code 5 element 3 is 1.5");
  lab[5][3] = -1;
  CHECK_EQ_INT(mlsys_offload_pilot_set_codebook(m, &lab[0][0], N), MLSYS_ERR_ARG);
  lab[5][3] = NAN;
  CHECK_EQ_INT(mlsys_offload_pilot_set_codebook(m, &lab[0][0], N), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_offload_pilot_set_codebook(m, NULL, 3), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_offload_pilot_codebook_size(m), nu);
  /* empty: rounding again */
  REQUIRE_OK(mlsys_offload_pilot_set_codebook(m, NULL, 0));
  CHECK_EQ_INT(mlsys_offload_pilot_codebook_size(m), 0);
  for (k = 0; k < NY; k++) y[k] = (float)log1p((double)(k + 3));
  mlsys_offload_pilot_decode(m, y, p);
  for (k = 0; k < NY; k++) CHECK_EQ_INT(p[k], k + 3);
  mlsys_offload_pilot_free(m);
}

/* Adam: two epochs of one sample (two steps, no shuffling to undo) equal a replay through the gradient API with the
   textbook update in double precision. */
TEST(adam_steps_match_a_replay) {
  mlsys_offload_pilot_cfg c;
  mlsys_offload_pilot *m, *h;
  float xe[6 + 2 + 3], xa[11], lab[10], *g;
  double *m1, *m2;
  size_t np, j;
  int t, type = 1, bad = 0;
  double maxdiff = 0;
  memset(&c, 0, sizeof c);
  c.e_proj = 6; c.d = 4; c.h = 8; c.d_out = 8; c.k_max = 1; c.len_code = 3; c.adam = 1; c.lr = 0.01f;
  REQUIRE_OK(mlsys_offload_pilot_create(&c, &m));
  REQUIRE_OK(mlsys_offload_pilot_create(&c, &h));
  np = mlsys_offload_pilot_nparams(m);
  for (j = 0; j < 11; j++) xe[j] = (float)j * 0.1f - 0.3f;
  for (j = 0; j < 11; j++) xa[j] = (float)(j % 3);
  for (j = 0; j < 10; j++) lab[j] = (float)(j * 7 % 11);
  g = (float *)malloc(np * sizeof *g);
  m1 = (double *)calloc(np, sizeof *m1);
  m2 = (double *)calloc(np, sizeof *m2);
  REQUIRE(g && m1 && m2);
  for (t = 1; t <= 2; t++) {
    float *p = mlsys_offload_pilot_params(h);
    { float lo = mlsys_offload_pilot_train_epoch(m, 1, xe, xa, &type, lab, 1); CHECK_MSG(lo >= 0, "train: %s", mlsys_last_error()); }
    REQUIRE_OK(mlsys_offload_pilot_grad(h, xe, xa, type, lab, g));
    for (j = 0; j < np; j++) {
      double mh, vh;
      m1[j] = 0.9 * m1[j] + 0.1 * g[j];
      m2[j] = 0.999 * m2[j] + 0.001 * (double)g[j] * g[j];
      mh = m1[j] / (1 - pow(0.9, t));
      vh = m2[j] / (1 - pow(0.999, t));
      p[j] = (float)((double)p[j] - 0.01 * mh / (sqrt(vh) + 1e-8));
    }
  }
  for (j = 0; j < np; j++) {
    double d = fabs((double)mlsys_offload_pilot_params(m)[j] - mlsys_offload_pilot_params(h)[j]);
    if (d > maxdiff) maxdiff = d;
    bad += d > 1e-5;
  }
  printf("    Adam: largest difference from the replay after 2 steps %.2g\n", maxdiff);
  CHECK_EQ_INT(bad, 0);
  /* and the steps were Adam's, not SGD's: Adam moves every weight whose gradient kept its sign by about lr per step,
     whatever the gradient's size (SGD at lr 0.01 moves most of these by far less) */
  {
    mlsys_offload_pilot *f;
    int moved = 0, with_grad = 0;
    REQUIRE_OK(mlsys_offload_pilot_create(&c, &f));
    REQUIRE_OK(mlsys_offload_pilot_grad(f, xe, xa, type, lab, g));
    for (j = 0; j < np; j++)
      if (fabsf(g[j]) > 0) {
        with_grad++;
        moved += fabs((double)mlsys_offload_pilot_params(m)[j] - mlsys_offload_pilot_params(f)[j]) > 0.01;
      }
    printf("    Adam: %d of %d weights with a gradient moved by more than lr in 2 steps\n", moved, with_grad);
    CHECK(with_grad > 50 && moved > with_grad / 2);
    mlsys_offload_pilot_free(f);
  }
  free(g);
  free(m1);
  free(m2);
  mlsys_offload_pilot_free(m);
  mlsys_offload_pilot_free(h);
}

/* The version 2 file: a model with the length code, Adam and a codebook round-trips (config, weights, codebook,
   decode); a model without them is still written as version 1; every truncation, an oversized code count, a
   negative code and out-of-range new fields are named. */
TEST(version2_file_roundtrip_and_corruption) {
  enum { KM = 2, NY = KM * 10, N = 12 };
  float lab[N][NY], y[NY];
  int32_t pa[NY], pb[NY];
  mlsys_offload_pilot_cfg c, lc;
  mlsys_offload_pilot *m, *l = NULL;
  const char *path = tmp_path("v2");
  uint8_t *b, *w;
  size_t len, np, i, need;
  mlsys_rng r;
  int k, s, bad = 0;
  memset(&c, 0, sizeof c);
  c.e_proj = 3; c.d = 2; c.h = 3; c.d_out = 2; c.k_max = KM; c.len_code = 5; c.adam = 1; c.seed = 9;
  REQUIRE_OK(mlsys_offload_pilot_create(&c, &m));
  mlsys_rng_seed(&r, 3);
  for (i = 0; i < N; i++)
    for (k = 0; k < NY; k++) lab[i][k] = (float)(i == 7 ? lab[2][k] : (float)mlsys_rng_below(&r, 90));
  REQUIRE_OK(mlsys_offload_pilot_set_codebook(m, &lab[0][0], N));
  CHECK_EQ_INT(mlsys_offload_pilot_codebook_size(m), N - 1);
  REQUIRE_OK(mlsys_offload_pilot_save(m, path));
  REQUIRE((b = read_all(path, &len)) != NULL);
  remove(path);
  np = mlsys_offload_pilot_nparams(m);
  need = 84 + 4 * np + 4 * (size_t)(N - 1) * NY + 4;
  CHECK_EQ_INT(len, need);
  CHECK_EQ_INT(get32(b + 8), 2);
  CHECK_EQ_INT(get32(b + 72), 5);
  CHECK_EQ_INT(get32(b + 76), 1);
  CHECK_EQ_INT(get32(b + 80), N - 1);
  REQUIRE_OK(mlsys_offload_pilot_load_mem(b, len, "v2.bin", &l));
  lc = mlsys_offload_pilot_config(l);
  c = mlsys_offload_pilot_config(m);
  CHECK(memcmp(&lc, &c, sizeof c) == 0);
  CHECK(memcmp(mlsys_offload_pilot_params(l), mlsys_offload_pilot_params(m), np * sizeof(float)) == 0);
  CHECK_EQ_INT(mlsys_offload_pilot_codebook_size(l), N - 1);
  for (s = 0; s < 50; s++) {
    for (k = 0; k < NY; k++) y[k] = (float)(5 * mlsys_rng_uniform(&r));
    mlsys_offload_pilot_decode(m, y, pa);
    mlsys_offload_pilot_decode(l, y, pb);
    bad += memcmp(pa, pb, sizeof pa) != 0;
  }
  CHECK_EQ_INT(bad, 0);
  mlsys_offload_pilot_free(l);
  /* every truncation */
  for (i = 0, bad = 0; i < len; i++) {
    mlsys_status st = mlsys_offload_pilot_load_mem(b, i, "v2.bin", &l);
    bad += st != MLSYS_ERR_PARSE || l != NULL;
  }
  CHECK_EQ_INT(bad, 0);
  w = (uint8_t *)malloc(len);
  REQUIRE(w);
  memcpy(w, b, len); put32(w + 80, (1u << 20) + 1); fix_crc(w, len);
  CHECK_EQ_INT(mlsys_offload_pilot_load_mem(w, len, "v2.bin", &l), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "codes, above the limit");
  memcpy(w, b, len); put32(w + 84 + 4 * np + 4 * 25, 0xFFFFFFFFu); fix_crc(w, len);
  CHECK_EQ_INT(mlsys_offload_pilot_load_mem(w, len, "v2.bin", &l), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "code 1 element 5 is negative");
  memcpy(w, b, len); put32(w + 76, 2); fix_crc(w, len);
  CHECK_EQ_INT(mlsys_offload_pilot_load_mem(w, len, "v2.bin", &l), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "adam = 2");
  memcpy(w, b, len); put32(w + 72, 6); fix_crc(w, len);   /* len_code 6: the weights no longer fit the config */
  CHECK_EQ_INT(mlsys_offload_pilot_load_mem(w, len, "v2.bin", &l), MLSYS_ERR_PARSE);
  CHECK_CONTAINS(mlsys_last_error(), "its config needs");
  memcpy(w, b, len); put32(w + 8, 3); fix_crc(w, len);
  CHECK_EQ_INT(mlsys_offload_pilot_load_mem(w, len, "v2.bin", &l), MLSYS_ERR_UNSUPPORTED);
  CHECK_CONTAINS(mlsys_last_error(), "unsupported version 3");
  free(w);
  free(b);
  /* without the additions: version 1, byte for byte the old layout */
  REQUIRE_OK(mlsys_offload_pilot_set_codebook(m, NULL, 0));
  mlsys_offload_pilot_free(m);
  c.len_code = 0; c.adam = 0;
  REQUIRE_OK(mlsys_offload_pilot_create(&c, &m));
  REQUIRE_OK(mlsys_offload_pilot_save(m, path));
  REQUIRE((b = read_all(path, &len)) != NULL);
  remove(path);
  CHECK_EQ_INT(get32(b + 8), 1);
  CHECK_EQ_INT(len, 72 + 4 * mlsys_offload_pilot_nparams(m) + 4);
  free(b);
  mlsys_offload_pilot_free(m);
}

/* The fuzz target's version 2 seed (tests/fuzz/corpus/fuzz_offload_pilot/valid_v2: mode byte 0, then a tiny model with
   a length code, Adam and three codes, one of them repeated); MLSYS_WRITE_CORPUS=1 rewrites it. */
#define CORPUS_V2 "tests/fuzz/corpus/fuzz_offload_pilot/valid_v2"
TEST(fuzz_corpus_version2_seed) {
  mlsys_offload_pilot *m;
  uint8_t *f;
  size_t len;
  if (getenv("MLSYS_WRITE_CORPUS")) {
    mlsys_offload_pilot_cfg c;
    float lab[4][10] = {{3, 1, 0, 0, 2, 5, 0, 0, 0, 0}, {7, 2, 1, 0, 4, 9, 0, 0, 0, 0}, {3, 1, 0, 0, 2, 5, 0, 0, 0, 0}, {1}};
    const char *path = tmp_path("corpus");
    uint8_t mode = 0, *b;
    size_t n;
    FILE *o;
    memset(&c, 0, sizeof c);
    c.e_proj = 2; c.d = 2; c.h = 2; c.d_out = 2; c.k_max = 1; c.seed = 3; c.len_code = 2; c.adam = 1;
    REQUIRE_OK(mlsys_offload_pilot_create(&c, &m));
    REQUIRE_OK(mlsys_offload_pilot_set_codebook(m, &lab[0][0], 4));
    REQUIRE_OK(mlsys_offload_pilot_save(m, path));
    mlsys_offload_pilot_free(m);
    REQUIRE((b = read_all(path, &n)) != NULL);
    remove(path);
    REQUIRE((o = fopen(CORPUS_V2, "wb")) != NULL);
    fwrite(&mode, 1, 1, o);
    fwrite(b, 1, n, o);
    fclose(o);
    free(b);
  }
  REQUIRE((f = read_all(CORPUS_V2, &len)) != NULL);
  CHECK(f[0] == 0 && len > 85);
  REQUIRE_OK(mlsys_offload_pilot_load_mem(f + 1, len - 1, "valid_v2", &m));
  CHECK_EQ_INT(mlsys_offload_pilot_codebook_size(m), 3);
  CHECK_EQ_INT(mlsys_offload_pilot_nparams(m), 130 + 2 * 2);   /* the tiny v1 seed's 130, W_e two features wider */
  mlsys_offload_pilot_free(m);
  free(f);
}

TEST_MAIN()
