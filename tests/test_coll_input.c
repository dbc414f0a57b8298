/* Inputs of mlsys_collective.h: profile presets (Table 5.1 + the authors' profiles), the α/β fit of the §5.3
   profiler (spec T12), the authors' topology-profile JSON and communication-sketch JSON (spec §2.2–2.3), read from
   the real files in tests/data/taccl (microsoft/taccl examples). */
#define MLSYS_IMPLEMENTATION
#include "mlsys_collective.h"
#include "tests/test.h"

#define MB 1048576.0

/* ---------------------------------------------------------------------------------------------------------------
   presets
   --------------------------------------------------------------------------------------------------------------- */
TEST(preset_values) {
  static const struct { const char *name; double nva, nvb, iba, ibb; } want[4] = {
    {"ndv2-thesis", 0.7, 46, 1.7, 106}, {"dgx2-thesis", 0.7, 8, 1.7, 106},
    {"ndv2-repo", 0.3, 46, 2.6, 105}, {"dgx2-repo", 0.3, 8, 2.6, 105}};
  int i;
  for (i = 0; i < 4; i++) {
    mlsys_coll_profile p;
    CHECK_OK(mlsys_coll_profile_preset(want[i].name, &p));
    CHECK_STR(p.name, want[i].name);
    CHECK_NEAR(p.nvlink.alpha_us, want[i].nva, 0);
    CHECK_NEAR(p.nvlink.beta_us_per_mb, want[i].nvb, 0);
    CHECK_NEAR(p.ib.alpha_us, want[i].iba, 0);
    CHECK_NEAR(p.ib.beta_us_per_mb, want[i].ibb, 0);
  }
}

TEST(preset_unknown) {
  mlsys_coll_profile p;
  CHECK_EQ_INT(mlsys_coll_profile_preset("ndv3", &p), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "ndv3");
  CHECK_CONTAINS(mlsys_last_error(), "ndv2-thesis");
  CHECK_CONTAINS(mlsys_last_error(), "dgx2-repo");
  CHECK(p.name == NULL);
  CHECK_EQ_INT(mlsys_coll_profile_preset(NULL, &p), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_coll_profile_preset("ndv2-thesis", NULL), MLSYS_ERR_ARG);
}

/* Spec §2.2 check value (T11): on NDv2 IB (Table 5.1) two 32 KB chunks as one 64 KB send are 16.7 % faster. */
TEST(preset_17_percent_rule) {
  mlsys_coll_profile p;
  double seq, bat;
  REQUIRE_OK(mlsys_coll_profile_preset("ndv2-thesis", &p));
  /* the thesis rounds 32 KB to 0.032 MB: 10.18 µs vs 8.48 µs */
  seq = 2 * mlsys_coll_lat(p.ib, 0.032 * MB);
  bat = mlsys_coll_lat(p.ib, 0.064 * MB);
  CHECK_NEAR(seq, 10.184, 1e-9);
  CHECK_NEAR(bat, 8.484, 1e-9);
  CHECK_NEAR(1 - bat / seq, 0.167, 0.001);
  /* with MB = 2^20 exactly: 17.0 % */
  seq = 2 * mlsys_coll_lat(p.ib, 32768);
  bat = mlsys_coll_lat(p.ib, 65536);
  CHECK_NEAR(1 - bat / seq, 0.1696, 0.0001);
}

/* ---------------------------------------------------------------------------------------------------------------
   α/β fit
   --------------------------------------------------------------------------------------------------------------- */
/* Sizes 1 KB … 64 MB (powers of 2) × n = 2..8 from (alpha, beta); noise = ±rel multiplicative (uniform). */
static int make_measurements(double alpha, double beta, double rel, uint64_t seed, double *s, int *n, double *ts,
                             double *tb) {
  mlsys_rng r;
  int m = 0, e, k;
  mlsys_rng_seed(&r, seed);
  for (e = 10; e <= 26; e++)
    for (k = 2; k <= 8; k++) {
      s[m] = ldexp(1.0, e) / MB;
      n[m] = k;
      ts[m] = k * (alpha + beta * s[m]) * (1 + rel * (2 * mlsys_rng_uniform(&r) - 1));
      tb[m] = (alpha + k * beta * s[m]) * (1 + rel * (2 * mlsys_rng_uniform(&r) - 1));
      m++;
    }
  return m;
}

TEST(fit_exact) {
  double s[200], ts[200], tb[200], a, b;
  int n[200], m = make_measurements(1.7, 106, 0, 1, s, n, ts, tb);
  CHECK_EQ_INT(m, 17 * 7);
  REQUIRE_OK(mlsys_coll_fit_alpha_beta(s, n, ts, tb, m, &a, &b));
  CHECK_NEAR(a, 1.7, 1e-9);
  CHECK_NEAR(b, 106, 1e-9);
}

/* T12: ±1 % noise → α and β within 2 %. */
TEST(fit_noisy_T12) {
  double s[200], ts[200], tb[200], a, b;
  uint64_t seed;
  for (seed = 1; seed <= 5; seed++) {
    int n[200], m = make_measurements(1.7, 106, 0.01, 0x7a11 + seed, s, n, ts, tb);
    REQUIRE_OK(mlsys_coll_fit_alpha_beta(s, n, ts, tb, m, &a, &b));
    CHECK_MSG(fabs(a / 1.7 - 1) < 0.02, "seed %d: alpha %g", (int)seed, a);
    CHECK_MSG(fabs(b / 106 - 1) < 0.02, "seed %d: beta %g", (int)seed, b);
  }
}

/* Random exact cases over a wide range of α, β, sizes and n: the fit must be exact. */
TEST(fit_random_exact) {
  mlsys_rng r;
  int t;
  mlsys_rng_seed(&r, 42);
  for (t = 0; t < 300; t++) {
    double alpha = 0.05 + 20 * mlsys_rng_uniform(&r), beta = 1 + 300 * mlsys_rng_uniform(&r);
    double s[8], ts[8], tb[8], a, b;
    int n[8], m = mlsys_rng_range(&r, 1, 8), i;
    for (i = 0; i < m; i++) {
      s[i] = ldexp(1.0, mlsys_rng_range(&r, 0, 30)) / MB;
      n[i] = mlsys_rng_range(&r, 2, 16);
      ts[i] = n[i] * (alpha + beta * s[i]);
      tb[i] = alpha + n[i] * beta * s[i];
    }
    REQUIRE_OK(mlsys_coll_fit_alpha_beta(s, n, ts, tb, m, &a, &b));
    CHECK_MSG(fabs(a - alpha) <= 1e-6 * (alpha + beta), "case %d: alpha %.12g vs %.12g", t, a, alpha);
    CHECK_MSG(fabs(b - beta) <= 1e-6 * beta, "case %d: beta %.12g vs %.12g", t, b, beta);
  }
}

/* One pair: the closed form of §5.3 (α = (T_seq − T_bat)/(n−1), β = (T_bat − α)/(n·s)), on values that are not
   generated from the model (two equations, two unknowns: any data is fitted exactly). */
TEST(fit_closed_form_one_pair) {
  double s = 0.25, ts = 250, tb = 120, a, b, ca, cb;
  int n = 4;
  REQUIRE_OK(mlsys_coll_fit_alpha_beta(&s, &n, &ts, &tb, 1, &a, &b));
  ca = (ts - tb) / (n - 1);
  cb = (tb - ca) / (n * s);
  CHECK_NEAR(a, ca, 1e-9);
  CHECK_NEAR(b, cb, 1e-9);
  CHECK_NEAR(n * (a + b * s), ts, 1e-9);
  CHECK_NEAR(a + n * b * s, tb, 1e-9);
}

/* n = 1 everywhere but several sizes is enough (α + βs at two sizes). */
TEST(fit_n1_two_sizes) {
  double s[2] = {1, 3}, ts[2] = {1.7 + 106, 1.7 + 318}, tb[2], a, b;
  int n[2] = {1, 1};
  memcpy(tb, ts, sizeof tb);
  REQUIRE_OK(mlsys_coll_fit_alpha_beta(s, n, ts, tb, 2, &a, &b));
  CHECK_NEAR(a, 1.7, 1e-9);
  CHECK_NEAR(b, 106, 1e-9);
}

TEST(fit_errors) {
  double s[2] = {1, 1}, ts[2] = {10, 10}, tb[2] = {10, 10}, a = 5, b = 5;
  int n[2] = {1, 1};
  CHECK_EQ_INT(mlsys_coll_fit_alpha_beta(s, n, ts, tb, 0, &a, &b), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "m = 0");
  CHECK(a == 0 && b == 0);
  CHECK_EQ_INT(mlsys_coll_fit_alpha_beta(s, n, ts, tb, 2, &a, &b), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "cannot separate alpha and beta");
  n[0] = 0; n[1] = 2;
  CHECK_EQ_INT(mlsys_coll_fit_alpha_beta(s, n, ts, tb, 2, &a, &b), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "n = 0");
  n[0] = 2;
  ts[1] = NAN;
  CHECK_EQ_INT(mlsys_coll_fit_alpha_beta(s, n, ts, tb, 2, &a, &b), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "measurement 1");
  ts[1] = 10; tb[0] = -1;
  CHECK_EQ_INT(mlsys_coll_fit_alpha_beta(s, n, ts, tb, 2, &a, &b), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "measurement 0");
  tb[0] = 10; s[0] = INFINITY;
  CHECK_EQ_INT(mlsys_coll_fit_alpha_beta(s, n, ts, tb, 2, &a, &b), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "size");
  s[0] = s[1] = 0;
  CHECK_EQ_INT(mlsys_coll_fit_alpha_beta(s, n, ts, tb, 2, &a, &b), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "size 0");
  CHECK_EQ_INT(mlsys_coll_fit_alpha_beta(NULL, n, ts, tb, 2, &a, &b), MLSYS_ERR_ARG);
}

/* ---------------------------------------------------------------------------------------------------------------
   topology profiles
   --------------------------------------------------------------------------------------------------------------- */
typedef struct { mlsys_coll_profile p; int G, nics; char kind[16]; } prof_out;

static mlsys_status load_profile(const char *name, prof_out *o) {
  char path[256], *text;
  size_t len;
  mlsys_status st;
  snprintf(path, sizeof path, "tests/data/taccl/topo/%s.json", name);
  if ((st = mlsys_read_file(path, &text, &len))) return st;
  st = mlsys_coll_profile_parse_json(text, len, path, &o->p, &o->G, &o->nics, o->kind, sizeof o->kind);
  mlsys_free(text);
  return st;
}
static mlsys_status parse_profile(const char *json, prof_out *o) {
  return mlsys_coll_profile_parse_json(json, strlen(json), "prof.json", &o->p, &o->G, &o->nics, o->kind, sizeof o->kind);
}

TEST(profile_ndv2_1MB) {
  prof_out o;
  REQUIRE_OK(load_profile("topo-ndv2-1MB", &o));
  CHECK_STR(o.kind, "ndv2");
  CHECK_STR(o.p.name, "ndv2-json");
  CHECK_EQ_INT(o.G, 8);
  CHECK_EQ_INT(o.nics, 1);
  CHECK_NEAR(o.p.nvlink.beta_us_per_mb, 46, 1e-12);       /* the single link (last entry) */
  CHECK_NEAR(o.p.nvlink.alpha_us, 0, 1e-12);              /* invbw = beta at 1 MB */
  CHECK_NEAR(mlsys_coll_lat(o.p.nvlink, MB), 46, 1e-12);
  CHECK_NEAR(mlsys_coll_lat(o.p.nvlink, MB) / 2, 23, 1e-12); /* the double link = β/2 matches the repo's 23 */
  CHECK_NEAR(o.p.ib.alpha_us, 2.6, 1e-12);
  CHECK_NEAR(o.p.ib.beta_us_per_mb, 105, 1e-12);
  CHECK_NEAR(mlsys_coll_lat(o.p.ib, MB), 107.6, 1e-12);
}

TEST(profile_ndv2_1KB_32KB) {
  prof_out a, b;
  REQUIRE_OK(load_profile("topo-ndv2-1KB", &a));
  CHECK_STR(a.kind, "ndv2");
  CHECK_NEAR(a.p.ib.alpha_us, 2.6, 1e-12);
  CHECK_NEAR(a.p.ib.beta_us_per_mb, 10.25 * 0.01 * 1024, 1e-9);
  CHECK_NEAR(a.p.ib.beta_us_per_mb, 104.96, 1e-9);
  CHECK_NEAR(a.p.nvlink.beta_us_per_mb, 4.5 * 0.01 * 1024, 1e-9);
  CHECK_NEAR(a.p.nvlink.alpha_us, 0.3, 1e-12);            /* 34.50 − 4.50 = 30 units of 0.01 µs */
  CHECK_NEAR(mlsys_coll_lat(a.p.nvlink, 1024), 0.345, 1e-12);
  REQUIRE_OK(load_profile("topo-ndv2-32KB", &b));
  CHECK_NEAR(b.p.ib.alpha_us, 2.6, 1e-12);
  CHECK_NEAR(b.p.ib.beta_us_per_mb, 32.8 * 0.1 * 32, 1e-9);
  CHECK_NEAR(b.p.ib.beta_us_per_mb, 104.96, 1e-9);
  CHECK_NEAR(b.p.nvlink.beta_us_per_mb, 14.38 * 0.1 * 32, 1e-9);
  CHECK_NEAR(b.p.nvlink.alpha_us, 0.3, 1e-12);
  CHECK_NEAR(mlsys_coll_lat(b.p.nvlink, 32768), 1.738, 1e-12);
}

/* The three NDv2 calibrations describe the same machine: IB α = 2.6 µs and IB β within 1 %; the single NVLink β
   within 1 % too (46, 46.08, 46.016). */
TEST(profile_ndv2_consistent) {
  static const char *names[3] = {"topo-ndv2-1KB", "topo-ndv2-32KB", "topo-ndv2-1MB"};
  prof_out o[3];
  int i, j;
  for (i = 0; i < 3; i++) REQUIRE_OK(load_profile(names[i], &o[i]));
  for (i = 0; i < 3; i++) {
    CHECK_NEAR(o[i].p.ib.alpha_us, 2.6, 1e-12);
    for (j = 0; j < 3; j++) {
      CHECK(fabs(o[i].p.ib.beta_us_per_mb / o[j].p.ib.beta_us_per_mb - 1) < 0.01);
      CHECK(fabs(o[i].p.nvlink.beta_us_per_mb / o[j].p.nvlink.beta_us_per_mb - 1) < 0.01);
    }
  }
}

TEST(profile_dgx2) {
  prof_out a, b;
  REQUIRE_OK(load_profile("topo-dgx2-1MB", &a));
  CHECK_STR(a.kind, "dgx2");
  CHECK_STR(a.p.name, "dgx2-json");
  CHECK_EQ_INT(a.G, 16);
  CHECK_EQ_INT(a.nics, 8);
  CHECK_NEAR(a.p.nvlink.beta_us_per_mb, 8, 1e-12);
  CHECK_NEAR(a.p.nvlink.alpha_us, 0, 1e-12);
  CHECK_NEAR(a.p.ib.alpha_us, 2.6, 1e-12);
  CHECK_NEAR(a.p.ib.beta_us_per_mb, 105, 1e-12);
  REQUIRE_OK(load_profile("topo-dgx2-1KB", &b));
  CHECK_EQ_INT(b.G, 16);
  CHECK_EQ_INT(b.nics, 8);
  CHECK_NEAR(b.p.nvlink.beta_us_per_mb, 10.24, 1e-9);
  CHECK_NEAR(b.p.nvlink.alpha_us, 0.3, 1e-12);
  CHECK_NEAR(b.p.ib.alpha_us, 2.6, 1e-12);
  CHECK_NEAR(b.p.ib.beta_us_per_mb, 104.96, 1e-9);
}

/* Property over every real profile: the converted costs give back the file's per-chunk costs at its chunk size
   (intra: the last invbw; IB: remote_alpha + remote_beta), in µs. Reads the file values independently. */
TEST(profile_roundtrip_all) {
  static const struct { const char *name; double chunk, unit; } f[5] = {
    {"topo-ndv2-1KB", 1024, 0.01}, {"topo-ndv2-32KB", 32768, 0.1}, {"topo-ndv2-1MB", MB, 1},
    {"topo-dgx2-1KB", 1024, 0.01}, {"topo-dgx2-1MB", MB, 1}};
  int i;
  for (i = 0; i < 5; i++) {
    char path[256], *text;
    size_t len;
    mlsys_json_doc d;
    const mlsys_json *inv;
    prof_out o;
    double ra, rb;
    snprintf(path, sizeof path, "tests/data/taccl/topo/%s.json", f[i].name);
    REQUIRE_OK(mlsys_read_file(path, &text, &len));
    REQUIRE_OK(mlsys_json_parse(text, len, path, &d));
    inv = mlsys_json_get(d.root, "node_invbws_list");
    REQUIRE(inv && inv->count >= 1);
    ra = mlsys_json_get(d.root, "remote_alpha")->num;
    rb = mlsys_json_get(d.root, "remote_beta")->num;
    REQUIRE_OK(load_profile(f[i].name, &o));
    CHECK_NEAR(mlsys_coll_lat(o.p.nvlink, f[i].chunk), inv->items[inv->count - 1].num * f[i].unit, 1e-9);
    CHECK_NEAR(mlsys_coll_lat(o.p.ib, f[i].chunk), (ra + rb) * f[i].unit, 1e-9);
    mlsys_json_doc_free(&d);
    mlsys_free(text);
  }
}

TEST(profile_overrides_and_custom) {
  prof_out o;
  REQUIRE_OK(parse_profile("{\"name\":\"mybox\",\"gpus_per_node\":4,\"nics_per_node\":2,\"alpha\":1,\"node_betas_list\":[10],"
                           "\"node_invbws_list\":[12],\"remote_alpha\":4,\"remote_beta\":20,\"chunk_bytes\":65536,"
                           "\"time_unit_us\":0.5}", &o));
  CHECK_STR(o.kind, "custom");
  CHECK_EQ_INT(o.G, 4);
  CHECK_EQ_INT(o.nics, 2);
  CHECK_NEAR(o.p.nvlink.alpha_us, 1.0, 1e-12);
  CHECK_NEAR(o.p.nvlink.beta_us_per_mb, 10 * 0.5 * 16, 1e-9);
  CHECK_NEAR(o.p.ib.alpha_us, 2.0, 1e-12);
  CHECK_NEAR(o.p.ib.beta_us_per_mb, 20 * 0.5 * 16, 1e-9);
  /* the override beats the name's suffix; name prefix is case-insensitive */
  REQUIRE_OK(parse_profile("{\"name\":\"ndv2_1MB\",\"gpus_per_node\":8,\"nics_per_node\":1,\"node_betas_list\":[23,46],"
                           "\"node_invbws_list\":[23,46],\"remote_alpha\":2.6,\"remote_beta\":105,\"time_unit_us\":2}", &o));
  CHECK_STR(o.kind, "ndv2");
  CHECK_NEAR(o.p.nvlink.beta_us_per_mb, 92, 1e-12);
  /* kind_name and the counts are optional */
  {
    const char *j = "{\"name\":\"DGX2_1MB\",\"gpus_per_node\":16,\"nics_per_node\":8,\"node_betas_list\":[8],"
                    "\"node_invbws_list\":[8],\"remote_alpha\":2.6,\"remote_beta\":105}";
    mlsys_coll_profile p;
    CHECK_OK(mlsys_coll_profile_parse_json(j, strlen(j), NULL, &p, NULL, NULL, NULL, 0));
    CHECK_NEAR(p.nvlink.beta_us_per_mb, 8, 0);
  }
}

TEST(profile_errors) {
  static const struct { const char *json; int st; const char *a, *b; } bad[] = {
    {"{\"name\":\"NDv2_1MB\",\"gpus_per_node\":8,\"nics_per_node\":1,\"node_betas_list\":[46],\"node_invbws_list\":[46],"
     "\"remote_alpha\":2.6}", MLSYS_ERR_PARSE, "remote_beta", "prof.json"},
    {"{\"name\":\"NDv2_1MB\",\"gpus_per_node\":8,\"nics_per_node\":1,\"node_betas_list\":[46],\"node_invbws_list\":[46],"
     "\"remote_alpha\":-2.6,\"remote_beta\":105}", MLSYS_ERR_PARSE, "remote_alpha", "-2.6"},
    {"{\"name\":\"NDv2_1MB\",\"gpus_per_node\":0,\"nics_per_node\":1,\"node_betas_list\":[46],\"node_invbws_list\":[46],"
     "\"remote_alpha\":2.6,\"remote_beta\":105}", MLSYS_ERR_PARSE, "gpus_per_node", "got 0"},
    {"{\"name\":\"NDv2_1MB\",\"gpus_per_node\":65,\"nics_per_node\":1,\"node_betas_list\":[46],\"node_invbws_list\":[46],"
     "\"remote_alpha\":2.6,\"remote_beta\":105}", MLSYS_ERR_PARSE, "gpus_per_node", "got 65"},
    {"{\"name\":\"NDv2_1MB\",\"gpus_per_node\":8,\"nics_per_node\":9,\"node_betas_list\":[46],\"node_invbws_list\":[46],"
     "\"remote_alpha\":2.6,\"remote_beta\":105}", MLSYS_ERR_PARSE, "nics_per_node", "got 9"},
    {"{\"name\":\"NDv2_1MB\",\"gpus_per_node\":8,\"nics_per_node\":0,\"node_betas_list\":[46],\"node_invbws_list\":[46],"
     "\"remote_alpha\":2.6,\"remote_beta\":105}", MLSYS_ERR_PARSE, "nics_per_node", "got 0"},
    {"{\"name\":\"NDv2_1MB\",\"gpus_per_node\":8,\"nics_per_node\":1,\"node_betas_list\":[23,-46],\"node_invbws_list\":[23,46],"
     "\"remote_alpha\":2.6,\"remote_beta\":105}", MLSYS_ERR_PARSE, "node_betas_list[1]", "-46"},
    {"{\"name\":\"NDv2_1MB\",\"gpus_per_node\":8,\"nics_per_node\":1,\"node_betas_list\":[23,46],\"node_invbws_list\":[23],"
     "\"remote_alpha\":2.6,\"remote_beta\":105}", MLSYS_ERR_PARSE, "node_invbws_list", "has 1 entries"},
    {"{\"name\":\"NDv2_1MB\",\"gpus_per_node\":8,\"nics_per_node\":1,\"node_betas_list\":[],\"node_invbws_list\":[],"
     "\"remote_alpha\":2.6,\"remote_beta\":105}", MLSYS_ERR_PARSE, "node_betas_list", "empty"},
    {"{\"name\":\"NDv2_1MB\",\"gpus_per_node\":8,\"nics_per_node\":1,\"node_betas_list\":[\"46\"],\"node_invbws_list\":[46],"
     "\"remote_alpha\":2.6,\"remote_beta\":105}", MLSYS_ERR_PARSE, "node_betas_list[0]", "string"},
    {"{\"name\":\"NDv2_1MB\",\"gpus_per_node\":8,\"nics_per_node\":1,\"node_invbws_list\":[46],"
     "\"remote_alpha\":2.6,\"remote_beta\":105}", MLSYS_ERR_PARSE, "node_betas_list", "missing"},
    {"{\"gpus_per_node\":8,\"nics_per_node\":1}", MLSYS_ERR_PARSE, "'name'", "prof.json:1:1"},
    {"{\"name\":\"NDv2_2MB\",\"gpus_per_node\":8,\"nics_per_node\":1,\"node_betas_list\":[46],\"node_invbws_list\":[46],"
     "\"remote_alpha\":2.6,\"remote_beta\":105}", MLSYS_ERR_PARSE, "time unit", "time_unit_us"},
    {"{\"name\":\"box\",\"gpus_per_node\":8,\"nics_per_node\":1,\"node_betas_list\":[46],\"node_invbws_list\":[46],"
     "\"remote_alpha\":2.6,\"remote_beta\":105}", MLSYS_ERR_PARSE, "chunk size", "chunk_bytes"},
    {"{\"name\":\"NDv2_1MB\",\"gpus_per_node\":8,\"nics_per_node\":1,\"node_betas_list\":[46],\"node_invbws_list\":[46],"
     "\"remote_alpha\":2.6,\"remote_beta\":105,\"chunk_bytes\":0}", MLSYS_ERR_PARSE, "chunk_bytes", "positive"},
    {"{\"name\":\"custom\",\"gpus_per_node\":2,\"nics_per_node\":1,\"links\":[[0,1],[1,0]],\"betas\":[[0,1],[1,0]],"
     "\"invbws\":[[0,2],[2,0]],\"remote_alpha\":2.6,\"remote_beta\":105}", MLSYS_ERR_UNSUPPORTED, "custom", "links"},
    {"{\"name\":\"NDv2_1MB\",\"gpus_per_node\":8,,}", MLSYS_ERR_PARSE, "prof.json:1:", ""},
    {"[1,2]", MLSYS_ERR_PARSE, "JSON object", "array"},
  };
  size_t i;
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    prof_out o;
    mlsys_status st;
    memset(&o, 0x5a, sizeof o);
    st = parse_profile(bad[i].json, &o);
    CHECK_MSG((int)st == bad[i].st, "case %d: status %d, want %d (%s)", (int)i, st, bad[i].st, mlsys_last_error());
    CHECK_MSG(strstr(mlsys_last_error(), bad[i].a) && strstr(mlsys_last_error(), bad[i].b), "case %d: '%s' lacks '%s'/'%s'",
              (int)i, mlsys_last_error(), bad[i].a, bad[i].b);
    CHECK(o.p.name == NULL && o.p.ib.beta_us_per_mb == 0 && o.G == 0 && o.nics == 0 && o.kind[0] == 0);
  }
}

/* ---------------------------------------------------------------------------------------------------------------
   sketches
   --------------------------------------------------------------------------------------------------------------- */
static char *read_sketch(const char *name, size_t *len) {
  char path[256], *text = NULL;
  snprintf(path, sizeof path, "tests/data/taccl/sketch/%s.json", name);
  if (mlsys_read_file(path, &text, len)) return NULL;
  return text;
}
static mlsys_status load_sketch(const char *name, int G, mlsys_coll_sketch *s) {
  size_t len;
  char *text = read_sketch(name, &len);
  mlsys_status st;
  if (!text) return mlsys_last_status();
  st = mlsys_coll_sketch_parse_json(text, len, name, G, s);
  mlsys_free(text);
  return st;
}
static int count_conn(const mlsys_coll_sketch *s, int G) {
  int i, c = 0;
  for (i = 0; i < G * G; i++) c += s->internode_conn[i] != 0;
  return c;
}

TEST(sketch_all_real_files_parse) {
  static const char *names[11] = {"sk-dgx2-n1", "sk-ndv2-n1-cUp6", "sk1-dgx2-n1", "sk1-dgx2-n2", "sk1-ndv2-n1", "sk1-ndv2-n2",
                                  "sk1-ndv2-n4", "sk2-dgx2-n2", "sk2-ndv2-n2", "sk2-ndv2-n4", "sk3-ndv2-n2"};
  int i;
  for (i = 0; i < 11; i++) {
    mlsys_coll_sketch s;
    int G = strstr(names[i], "dgx2") ? 16 : 8;
    CHECK_MSG(load_sketch(names[i], G, &s) == MLSYS_OK, "%s: %s", names[i], mlsys_last_error());
    CHECK(s.nnodes >= 1 && s.chunkup >= 1);
    CHECK_EQ_INT(s.has_internode, s.nnodes > 1);
    CHECK_EQ_INT(s.intranode, strstr(names[i], "dgx2") ? MLSYS_COLL_INTRA_SWITCH : MLSYS_COLL_INTRA_NONE);
    mlsys_coll_sketch_free(&s);
    CHECK(s.sym == NULL && s.nnodes == 0);
    /* a DGX-2 sketch names GPUs 8..15: with 8 GPUs per node it must fail, naming the id */
    if (G == 16) {
      CHECK_EQ_INT(load_sketch(names[i], 8, &s), MLSYS_ERR_PARSE);
      CHECK_CONTAINS(mlsys_last_error(), "unknown GPU id 8");
      CHECK_CONTAINS(mlsys_last_error(), "(GPUs per node: 8)");
      CHECK(s.switch_ranks == NULL && s.internode_conn == NULL && s.nswitch == 0);
    }
  }
}

TEST(sketch_sk1_dgx2_n2) {
  mlsys_coll_sketch s;
  int i, j;
  REQUIRE_OK(load_sketch("sk1-dgx2-n2", 16, &s));
  CHECK_EQ_INT(s.nnodes, 2);
  CHECK_EQ_INT(s.intranode, MLSYS_COLL_INTRA_SWITCH);
  REQUIRE(s.nswitch == 1);
  CHECK_EQ_INT(s.switch_n[0], 16);
  for (i = 0; i < 16; i++) CHECK_EQ_INT(s.switch_ranks[0][i], i);
  CHECK_EQ_INT(s.switch_policy[0], MLSYS_COLL_UC_MIN);
  CHECK_EQ_INT(s.has_internode, 1);
  REQUIRE(s.internode_conn && s.relay_sender);
  for (i = 0; i < 16; i++)
    for (j = 0; j < 16; j++) CHECK_EQ_INT(s.internode_conn[i * 16 + j], (i % 2 == 1 && j == i - 1));
  CHECK_EQ_INT(count_conn(&s, 16), 8);
  for (i = 0; i < 16; i++) CHECK_EQ_INT(s.relay_sender[i], i | 1);
  CHECK_EQ_INT(s.relay_sender[0], 1);
  CHECK_EQ_INT(s.relay_sender[1], 1);
  CHECK(s.beta_split == NULL);
  CHECK_EQ_INT(s.enforce_ordering, 1);
  REQUIRE(s.nsym == 2);
  CHECK_EQ_INT(s.sym[0].offset, 2); CHECK_EQ_INT(s.sym[0].group, 16); CHECK_EQ_INT(s.sym[0].block, 0);
  CHECK_EQ_INT(s.sym[1].offset, 16); CHECK_EQ_INT(s.sym[1].group, 32);
  CHECK_EQ_INT(s.chunkup, 2);
  CHECK(s.input_bytes == 0);
  CHECK_EQ_INT(s.heuristic, 0);
  mlsys_coll_sketch_free(&s);
}

TEST(sketch_sk2_dgx2_n2) {
  mlsys_coll_sketch s;
  int i, j;
  REQUIRE_OK(load_sketch("sk2-dgx2-n2", 16, &s));
  CHECK_EQ_INT(s.nnodes, 2);
  REQUIRE(s.nswitch == 1);
  CHECK_EQ_INT(s.switch_policy[0], MLSYS_COLL_UC_MAX);
  REQUIRE(s.internode_conn && s.relay_sender);
  for (i = 0; i < 16; i++)
    for (j = 0; j < 16; j++) CHECK_EQ_INT(s.internode_conn[i * 16 + j], i == j);
  for (i = 0; i < 16; i++) CHECK_EQ_INT(s.relay_sender[i], i);
  CHECK_EQ_INT(s.enforce_ordering, 0);
  CHECK_EQ_INT(s.nsym, 2);
  CHECK_EQ_INT(s.chunkup, 1);
  mlsys_coll_sketch_free(&s);
}

TEST(sketch_ndv2_files) {
  mlsys_coll_sketch s;
  int i, j;
  REQUIRE_OK(load_sketch("sk1-ndv2-n2", 8, &s));
  CHECK_EQ_INT(s.nnodes, 2);
  CHECK_EQ_INT(s.intranode, MLSYS_COLL_INTRA_NONE);
  CHECK_EQ_INT(s.nswitch, 0);
  REQUIRE(s.internode_conn);
  CHECK_EQ_INT(s.internode_conn[0 * 8 + 1], 1);
  CHECK_EQ_INT(count_conn(&s, 8), 1);
  CHECK(s.relay_sender == NULL && s.beta_split == NULL);
  REQUIRE(s.nsym == 1);
  CHECK_EQ_INT(s.sym[0].offset, 8); CHECK_EQ_INT(s.sym[0].group, 16);
  mlsys_coll_sketch_free(&s);

  REQUIRE_OK(load_sketch("sk1-ndv2-n4", 8, &s));
  CHECK_EQ_INT(s.nnodes, 4);
  CHECK_EQ_INT(count_conn(&s, 8), 1);
  REQUIRE(s.nsym == 1);
  CHECK_EQ_INT(s.sym[0].group, 32);
  mlsys_coll_sketch_free(&s);

  REQUIRE_OK(load_sketch("sk2-ndv2-n2", 8, &s));
  CHECK_EQ_INT(count_conn(&s, 8), 64);
  mlsys_coll_sketch_free(&s);

  REQUIRE_OK(load_sketch("sk3-ndv2-n2", 8, &s));
  REQUIRE(s.internode_conn);
  for (i = 0; i < 8; i++)
    for (j = 0; j < 8; j++) CHECK_EQ_INT(s.internode_conn[i * 8 + j], i == j);
  mlsys_coll_sketch_free(&s);

  REQUIRE_OK(load_sketch("sk-ndv2-n1-cUp6", 8, &s));
  CHECK_EQ_INT(s.nnodes, 1);
  CHECK_EQ_INT(s.chunkup, 6);
  CHECK_EQ_INT(s.nsym, 0);
  CHECK(s.sym == NULL && s.internode_conn == NULL);
  CHECK_EQ_INT(s.has_internode, 0);
  mlsys_coll_sketch_free(&s);

  REQUIRE_OK(load_sketch("sk-dgx2-n1", 16, &s));
  CHECK_EQ_INT(s.chunkup, 2);
  REQUIRE(s.nsym == 1);
  CHECK_EQ_INT(s.sym[0].offset, 2); CHECK_EQ_INT(s.sym[0].group, 16);
  mlsys_coll_sketch_free(&s);
}

/* The thesis' Listing B.1 form of dgx2-sk-1: chunk_to_relay_map and beta_split instead of the explicit map. */
TEST(sketch_listing_b1) {
  static const char *j =
    "{\"nnodes\": 2, \"intranode_sketch\": {\"strategy\": \"switch\", \"switches\": [[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]],"
    " \"switch_hyperedge_strategy\": [\"uc-min\"]},"
    " \"internode_sketch\": {\"strategy\": \"relay\", \"internode_conn\": {\"1\": [0], \"3\": [2], \"5\": [4], \"7\": [6], \"9\": [8],"
    " \"11\": [10], \"13\": [12], \"15\": [14]}, \"beta_split\": {\"1\": 1, \"3\": 1, \"5\": 1, \"7\": 1, \"9\": 1, \"11\": 1,"
    " \"13\": 1, \"15\": 2.5}, \"chunk_to_relay_map\": [2, 1]},"
    " \"symmetry_offsets\": [[2, 16], [16, 32]], \"hyperparameters\": {\"input_chunkup\": 2, \"input_size\": \"1M\"},"
    " \"a_future_field\": {\"x\": [1, 2]}}";
  mlsys_coll_sketch s, r;
  int i;
  size_t len;
  char *t;
  REQUIRE_OK(mlsys_coll_sketch_parse_json(j, strlen(j), "B.1", 16, &s));
  REQUIRE(s.relay_sender && s.beta_split);
  for (i = 0; i < 16; i++) CHECK_EQ_INT(s.relay_sender[i], (i / 2) * 2 + 1);
  for (i = 0; i < 16; i++) CHECK_NEAR(s.beta_split[i], i == 15 ? 2.5 : i % 2 ? 1 : 0, 0);
  CHECK_NEAR(s.input_bytes, MB, 0);
  CHECK_EQ_INT(s.chunkup, 2);
  /* the same relays as the repo's explicit map in sk1-dgx2-n2 */
  t = read_sketch("sk1-dgx2-n2", &len);
  REQUIRE(t);
  REQUIRE_OK(mlsys_coll_sketch_parse_json(t, len, "sk1", 16, &r));
  CHECK(memcmp(r.relay_sender, s.relay_sender, 16 * sizeof(int)) == 0);
  CHECK(memcmp(r.internode_conn, s.internode_conn, 256) == 0);
  mlsys_coll_sketch_free(&r);
  mlsys_coll_sketch_free(&s);
  mlsys_free(t);
}

TEST(sketch_input_size) {
  static const struct { const char *v; double bytes; } ok[] = {
    {"\"1M\"", MB}, {"\"32K\"", 32768}, {"\"1K\"", 1024}, {"\"2M\"", 2 * MB}, {"\"1G\"", 1073741824.0},
    {"\"64KB\"", 65536}, {"\"1.5K\"", 1536}, {"\"512\"", 512}, {"4096", 4096}, {"\"1m\"", MB}};
  static const char *bad[] = {"\"\"", "\"M\"", "\"1X\"", "\"-1M\"", "\"1 M\"", "0", "-5", "true", "\"0K\"", "[1]"};
  size_t i;
  for (i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    char j[200];
    mlsys_coll_sketch s;
    snprintf(j, sizeof j, "{\"hyperparameters\": {\"input_size\": %s}}", ok[i].v);
    CHECK_MSG(mlsys_coll_sketch_parse_json(j, strlen(j), "sz", 8, &s) == MLSYS_OK, "%s: %s", ok[i].v, mlsys_last_error());
    CHECK_NEAR(s.input_bytes, ok[i].bytes, 0);
    mlsys_coll_sketch_free(&s);
  }
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char j[200];
    mlsys_coll_sketch s;
    snprintf(j, sizeof j, "{\"hyperparameters\": {\"input_size\": %s}}", bad[i]);
    CHECK_MSG(mlsys_coll_sketch_parse_json(j, strlen(j), "sz", 8, &s) == MLSYS_ERR_PARSE, "%s accepted", bad[i]);
    CHECK_CONTAINS(mlsys_last_error(), "input_size");
  }
}

TEST(sketch_default_and_free) {
  mlsys_coll_sketch s;
  memset(&s, 0x7f, sizeof s);
  mlsys_coll_sketch_default(&s);
  CHECK_EQ_INT(s.nnodes, 1);
  CHECK_EQ_INT(s.intranode, MLSYS_COLL_INTRA_NONE);
  CHECK_EQ_INT(s.has_internode, 0);
  CHECK_EQ_INT(s.chunkup, 1);
  CHECK(s.internode_conn == NULL && s.sym == NULL && s.switch_n == NULL && s.relay_sender == NULL && s.beta_split == NULL);
  CHECK(s.gamma == 0 && s.backend == 0 && s.heuristic == 0 && s.input_bytes == 0);
  mlsys_coll_sketch_free(&s);
  mlsys_coll_sketch_free(&s);  /* twice: the first zeroed it */
  mlsys_coll_sketch_free(NULL);
  /* the empty object is the default sketch */
  CHECK_OK(mlsys_coll_sketch_parse_json("{}", 2, "e", 8, &s));
  CHECK_EQ_INT(s.nnodes, 1);
  CHECK_EQ_INT(s.chunkup, 1);
  CHECK_EQ_INT(s.has_internode, 0);
  mlsys_coll_sketch_free(&s);
  /* several nodes without internode_sketch: has_internode 0 (fully connected when used) */
  CHECK_OK(mlsys_coll_sketch_parse_json("{\"nnodes\": 3}", 13, "e", 8, &s));
  CHECK_EQ_INT(s.nnodes, 3);
  CHECK_EQ_INT(s.has_internode, 0);
  mlsys_coll_sketch_free(&s);
  memset(&s, 0x33, sizeof s);
  CHECK_EQ_INT(mlsys_coll_sketch_parse_json("{", 1, "e", 8, &s), MLSYS_ERR_PARSE);
  CHECK(s.nnodes == 0 && s.chunkup == 0 && s.sym == NULL && s.internode_conn == NULL);
  memset(&s, 0x33, sizeof s);
  CHECK_EQ_INT(mlsys_coll_sketch_parse_json("{}", 2, "e", 0, &s), MLSYS_ERR_ARG);
  CHECK(s.nnodes == 0 && s.sym == NULL);
  CHECK_CONTAINS(mlsys_last_error(), "gpus_per_node 0");
  CHECK_EQ_INT(mlsys_coll_sketch_parse_json("{}", 2, "e", 65, &s), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_coll_sketch_parse_json("{}", 2, "e", 8, NULL), MLSYS_ERR_ARG);
}

TEST(sketch_switch_policies_and_overlap) {
  mlsys_coll_sketch s;
  const char *j = "{\"intranode_sketch\": {\"strategy\": \"switch\", \"switches\": [[0,1,2,3],[4,5,6,7],[0,1,2,3]]}}";
  REQUIRE_OK(mlsys_coll_sketch_parse_json(j, strlen(j), "sw", 8, &s));
  REQUIRE(s.nswitch == 3);
  CHECK_EQ_INT(s.switch_policy[0], MLSYS_COLL_UC_AUTO);
  CHECK_EQ_INT(s.switch_policy[2], MLSYS_COLL_UC_AUTO);
  CHECK_EQ_INT(s.switch_n[1], 4);
  CHECK_EQ_INT(s.switch_ranks[1][3], 7);
  mlsys_coll_sketch_free(&s);
  j = "{\"intranode_sketch\": {\"strategy\": \"switch\", \"switches\": [[0,1],[2,3]], \"switch_hyperedge_strategy\": [\"uc-max\", \"ignore\"]}}";
  REQUIRE_OK(mlsys_coll_sketch_parse_json(j, strlen(j), "sw", 4, &s));
  CHECK_EQ_INT(s.switch_policy[0], MLSYS_COLL_UC_MAX);
  CHECK_EQ_INT(s.switch_policy[1], MLSYS_COLL_UC_FREE);
  mlsys_coll_sketch_free(&s);
  /* minmax / maxmin ignore switches, as the repo does */
  j = "{\"intranode_sketch\": {\"strategy\": \"maxmin\", \"switches\": [[0,99]]}}";
  REQUIRE_OK(mlsys_coll_sketch_parse_json(j, strlen(j), "sw", 4, &s));
  CHECK_EQ_INT(s.intranode, MLSYS_COLL_INTRA_MAXMIN);
  CHECK_EQ_INT(s.nswitch, 0);
  mlsys_coll_sketch_free(&s);
}

/* Bad inputs: each fails with its status and a message naming the problem (and the source). */
TEST(sketch_bad_inputs) {
  static const struct { const char *json; int st; const char *a, *b; } bad[] = {
    /* 0 */ {"{\"nnodes\": 2,", MLSYS_ERR_PARSE, "bad.json:1:", ""},
    {"[]", MLSYS_ERR_PARSE, "JSON object", "array"},
    {"{\"nnodes\": 0}", MLSYS_ERR_PARSE, "nnodes", "got 0"},
    {"{\"nnodes\": 65}", MLSYS_ERR_PARSE, "nnodes", "got 65"},
    {"{\"nnodes\": \"2\"}", MLSYS_ERR_PARSE, "nnodes", "string"},
    /* 5 */ {"{\"nnodes\": 2, \"internode_sketch\": {\"strategy\": \"relay\", \"internode_conn\": {\"17\": [0]}}}",
     MLSYS_ERR_PARSE, "unknown GPU id 17 in internode_conn", "(GPUs per node: 16)"},
    {"{\"nnodes\": 2, \"internode_sketch\": {\"strategy\": \"relay\", \"internode_conn\": {\"1\": [-1]}}}",
     MLSYS_ERR_PARSE, "unknown GPU id -1 in internode_conn", "GPUs per node"},
    {"{\"nnodes\": 2, \"internode_sketch\": {\"strategy\": \"relay\", \"internode_conn\": {\"x1\": [0]}}}",
     MLSYS_ERR_PARSE, "key 'x1'", "not a GPU id"},
    {"{\"nnodes\": 2, \"internode_sketch\": {\"strategy\": \"relay\", \"internode_conn\": {\"1\": [0.5]}}}",
     MLSYS_ERR_PARSE, "GPU id", "0.5"},
    {"{\"nnodes\": 2, \"internode_sketch\": {\"strategy\": \"relay\", \"internode_conn\": {\"1\": 0}}}",
     MLSYS_ERR_PARSE, "internode_conn of GPU 1", "list"},
    /* 10 */ {"{\"nnodes\": 2, \"internode_sketch\": {\"strategy\": \"relay\", \"internode_conn\": \"ring\"}}",
     MLSYS_ERR_PARSE, "unknown internode_conn 'ring'", "direct-map"},
    {"{\"nnodes\": 2, \"internode_sketch\": {\"strategy\": \"relay\", \"internode_conn\": {}}}",
     MLSYS_ERR_ARG, "bad.json: sketch disconnects node", "internode_conn"},
    {"{\"nnodes\": 2, \"internode_sketch\": {\"strategy\": \"relay\", \"internode_conn\": {\"1\": [], \"2\": []}}}",
     MLSYS_ERR_ARG, "sketch disconnects node", ""},
    {"{\"nnodes\": 2, \"internode_sketch\": {\"strategy\": \"switch\", \"internode_conn\": \"direct-map\"}}",
     MLSYS_ERR_PARSE, "internode_sketch strategy 'switch'", "relay"},
    {"{\"nnodes\": 2, \"internode_sketch\": {\"strategy\": \"relay\"}}", MLSYS_ERR_PARSE, "internode_conn", "missing"},
    /* 15 */ {"{\"intranode_sketch\": {\"strategy\": \"switch\", \"switches\": [[0,1,1]]}}", MLSYS_ERR_PARSE, "switch 0", "GPU 1 twice"},
    {"{\"intranode_sketch\": {\"strategy\": \"switch\", \"switches\": [[3]]}}", MLSYS_ERR_PARSE, "switch 0", "at least 2"},
    {"{\"intranode_sketch\": {\"strategy\": \"switch\", \"switches\": [[0,1],[1,2]]}}", MLSYS_ERR_PARSE, "switches 0 and 1", "overlap"},
    {"{\"intranode_sketch\": {\"strategy\": \"switch\", \"switches\": []}}", MLSYS_ERR_PARSE, "at least one switch", ""},
    {"{\"intranode_sketch\": {\"strategy\": \"switch\"}}", MLSYS_ERR_PARSE, "switches", "missing"},
    /* 20 */ {"{\"intranode_sketch\": {\"strategy\": \"switch\", \"switches\": [[0,1]], \"switch_hyperedge_strategy\": [\"uc-min\", \"uc-max\"]}}",
     MLSYS_ERR_PARSE, "2 entries for 1 switch", ""},
    {"{\"intranode_sketch\": {\"strategy\": \"switch\", \"switches\": [[0,1]], \"switch_hyperedge_strategy\": [\"uc-mid\"]}}",
     MLSYS_ERR_PARSE, "'uc-mid'", "uc-max"},
    {"{\"intranode_sketch\": {\"strategy\": \"ring\"}}", MLSYS_ERR_PARSE, "intranode_sketch strategy 'ring'", "minmax"},
    {"{\"intranode_sketch\": {\"strategy\": \"switch\", \"switches\": [0, 1]}}", MLSYS_ERR_PARSE, "switch 0", "number"},
    {"{\"intranode_sketch\": \"none\"}", MLSYS_ERR_PARSE, "intranode_sketch", "string"},
    /* 25 */ {"{\"nnodes\": 2, \"symmetry_offsets\": [[8, 12]]}", MLSYS_ERR_PARSE, "[8, 12]", "does not divide"},
    {"{\"nnodes\": 2, \"symmetry_offsets\": [[16, 16]]}", MLSYS_ERR_PARSE, "[16, 16]", "offset < group"},
    {"{\"nnodes\": 2, \"symmetry_offsets\": [[1, 0]]}", MLSYS_ERR_PARSE, "[1, 0]", "group >= 1"},
    {"{\"nnodes\": 2, \"symmetry_offsets\": [[8, 64]]}", MLSYS_ERR_PARSE, "[8, 64]", "does not divide"},
    {"{\"symmetry_offsets\": [[8]]}", MLSYS_ERR_PARSE, "symmetry_offsets[0]", "pair"},
    /* 30 */ {"{\"symmetry_offsets\": [[1.5, 8]]}", MLSYS_ERR_PARSE, "[1.5, 8]", "integers"},
    {"{\"hyperparameters\": {\"input_chunkup\": 0}}", MLSYS_ERR_PARSE, "input_chunkup", "got 0"},
    {"{\"hyperparameters\": {\"input_chunkup\": 65}}", MLSYS_ERR_PARSE, "input_chunkup", "got 65"},
    {"{\"hyperparameters\": {\"input_size\": \"1Q\"}}", MLSYS_ERR_PARSE, "input_size", "1Q"},
    {"{\"nnodes\": 2, \"internode_sketch\": {\"strategy\": \"relay\", \"internode_conn\": \"direct-map\","
     " \"gpus_to_sender_rev_map\": {\"0\": [0, 1], \"1\": [1]}}}", MLSYS_ERR_PARSE, "GPU 1 is listed twice", "gpus_to_sender_rev_map"},
    /* 35 */ {"{\"nnodes\": 2, \"internode_sketch\": {\"strategy\": \"relay\", \"internode_conn\": {\"1\": [0]},"
     " \"gpus_to_sender_rev_map\": {\"0\": [0, 1]}}}", MLSYS_ERR_ARG, "relay sender GPU 0", "no link in internode_conn"},
    {"{\"nnodes\": 2, \"internode_sketch\": {\"strategy\": \"relay\", \"internode_conn\": \"direct-map\", \"chunk_to_relay_map\": [3, 2]}}",
     MLSYS_ERR_PARSE, "chunk_to_relay_map [3, 2]", "GPU 15's chunks via GPU 17"},
    {"{\"nnodes\": 2, \"internode_sketch\": {\"strategy\": \"relay\", \"internode_conn\": \"direct-map\", \"chunk_to_relay_map\": [2, 2]}}",
     MLSYS_ERR_PARSE, "r2", "got 2"},
    {"{\"nnodes\": 2, \"internode_sketch\": {\"strategy\": \"relay\", \"internode_conn\": \"direct-map\", \"chunk_to_relay_map\": [2, 1],"
     " \"gpus_to_sender_rev_map\": {\"0\": [0]}}}", MLSYS_ERR_PARSE, "GPU 0 via GPU 0", "chunk_to_relay_map via GPU 1"},
    {"{\"nnodes\": 2, \"internode_sketch\": {\"strategy\": \"relay\", \"internode_conn\": \"direct-map\", \"beta_split\": {\"3\": 0}}}",
     MLSYS_ERR_PARSE, "beta_split of GPU 3", "got 0"},
    /* 40 */ {"{\"nnodes\": 2, \"internode_sketch\": {\"strategy\": \"relay\", \"internode_conn\": \"direct-map\", \"enforce_ordering\": 1}}",
     MLSYS_ERR_PARSE, "enforce_ordering", "true or false"},
    {"{\"nnodes\": 2, \"internode_sketch\": {\"strategy\": \"relay\", \"internode_conn\": {\"1\": [0, 0]}}}",
     MLSYS_ERR_PARSE, "internode_conn of GPU 1", "GPU 0 twice"},
    {"{\"nnodes\": 2, \"internode_sketch\": {\"strategy\": \"relay\", \"internode_conn\": {\"16\": [0]}}}",
     MLSYS_ERR_PARSE, "unknown GPU id 16", "(GPUs per node: 16)"},
    {"{\"nnodes\": 2, \"nnodes\": 3}", MLSYS_ERR_PARSE, "bad.json:1:", "nnodes"},
  };
  size_t i;
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    mlsys_coll_sketch s;
    mlsys_status st;
    memset(&s, 0x5a, sizeof s);
    st = mlsys_coll_sketch_parse_json(bad[i].json, strlen(bad[i].json), "bad.json", 16, &s);
    CHECK_MSG((int)st == bad[i].st, "case %d: status %d, want %d (%s)", (int)i, st, bad[i].st, mlsys_last_error());
    CHECK_MSG(strstr(mlsys_last_error(), bad[i].a) && strstr(mlsys_last_error(), bad[i].b), "case %d: '%s' lacks '%s'/'%s'",
              (int)i, mlsys_last_error(), bad[i].a, bad[i].b);
    CHECK_MSG(strncmp(mlsys_last_error(), "bad.json", 8) == 0, "case %d: '%s' does not start with the source", (int)i,
              mlsys_last_error());
    /* the failed parse freed its partial output and left a zeroed struct */
    CHECK(s.switch_n == NULL && s.switch_ranks == NULL && s.internode_conn == NULL && s.relay_sender == NULL &&
          s.beta_split == NULL && s.sym == NULL && s.nswitch == 0 && s.nsym == 0);
    mlsys_coll_sketch_free(&s);
  }
}

/* 200 random mutations (flip / delete / insert / duplicate characters) of the real sketches: never crash (ASan),
   either parse or fail with a non-empty message; a successful parse is internally consistent. */
TEST(sketch_mutations) {
  static const char *names[4] = {"sk1-dgx2-n2", "sk2-dgx2-n2", "sk1-ndv2-n2", "sk-dgx2-n1"};
  static const char alphabet[] = "{}[],:\"0123456789-.eE truefalsn\\ x";
  mlsys_rng r;
  int t, nok = 0, nfail = 0;
  mlsys_rng_seed(&r, 2024);
  for (t = 0; t < 200; t++) {
    size_t len, n, k;
    char *orig = read_sketch(names[t % 4], &len), *buf;
    int nm = mlsys_rng_range(&r, 1, 4), G = mlsys_rng_range(&r, 0, 1) ? 16 : 8, i;
    mlsys_coll_sketch s;
    mlsys_status st;
    REQUIRE(orig);
    buf = (char *)malloc(len + 16);
    REQUIRE(buf);
    memcpy(buf, orig, len);
    n = len;
    for (k = 0; k < (size_t)nm; k++) {
      size_t p = (size_t)mlsys_rng_below(&r, n ? n : 1);
      int op = mlsys_rng_range(&r, 0, 3);
      if (op == 0 && n) buf[p] = alphabet[mlsys_rng_below(&r, sizeof alphabet - 1)];
      else if (op == 1 && n) { memmove(buf + p, buf + p + 1, n - p - 1); n--; }
      else if (op == 2 && n < len + 8) { memmove(buf + p + 1, buf + p, n - p); buf[p] = alphabet[mlsys_rng_below(&r, sizeof alphabet - 1)]; n++; }
      else if (n) buf[p] = (char)mlsys_rng_below(&r, 256);
    }
    st = mlsys_coll_sketch_parse_json(buf, n, "mut", G, &s);
    if (st == MLSYS_OK) {
      nok++;
      CHECK(s.nnodes >= 1 && s.nnodes <= 64 && s.chunkup >= 1 && s.chunkup <= 64);
      for (i = 0; i < s.nswitch; i++) CHECK(s.switch_n[i] >= 2);
      for (i = 0; i < s.nsym; i++) CHECK(s.sym[i].group >= 1 && (s.nnodes * G) % s.sym[i].group == 0);
      if (s.relay_sender)
        for (i = 0; i < G; i++) CHECK(s.relay_sender[i] >= -1 && s.relay_sender[i] < G);
    } else {
      nfail++;
      CHECK(st == MLSYS_ERR_PARSE || st == MLSYS_ERR_ARG);
      CHECK(mlsys_last_error()[0] != 0);
      CHECK(s.internode_conn == NULL && s.sym == NULL && s.switch_ranks == NULL);
    }
    mlsys_coll_sketch_free(&s);
    free(buf);
    mlsys_free(orig);
  }
  CHECK(nok > 0 && nfail > 0);
}

TEST_MAIN()
