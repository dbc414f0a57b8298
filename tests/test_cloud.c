/* tests/test_cloud.c — mlsys_cloud.h (Srift): the compute model, the bandwidth conversions, the straggler and
   overlap simulators, the optimizer against brute force, CAP/TAP and the re-plan, with the seed paper's own numbers
   (arXiv 2011.14243 v1: Table 4's Bmax and spot prices, the case studies of §5.2 and the §5.4 timeline) as the
   expected answers where it prints them. Profiles here are synthetic (said where used); the seed publishes no t(B). */
#define MLSYS_IMPLEMENTATION
#include "mlsys_cloud.h"
#include "tests/test.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ---------------------------------------------------------------------------------------------- */
static void itype(mlsys_cloud_itype *t, const char *name, const char *sh, double price, int cap, int rank, double gbps) {
  memset(t, 0, sizeof *t);
  snprintf(t->name, sizeof t->name, "%s", name);
  snprintf(t->short_name, sizeof t->short_name, "%s", sh);
  t->price_per_hour = price, t->cap = cap, t->pref_rank = rank, t->rated_gbps = gbps;
}

/* a linear synthetic profile t_fw = a + b·B, t_bw = 2·t_fw at the sample batches (no layers) */
static void lin_prof(mlsys_cloud_cprof *p, int bmax, double a, double b) {
  double fw[4], bw[4], x[4];
  int i, n = mlsys_cloud_pwl_points(bmax, x);
  memset(p, 0, sizeof *p);
  for (i = 0; i < n; i++) fw[i] = a + b * x[i], bw[i] = 2 * fw[i];
  mlsys_cloud_cprof_set(p, bmax, fw, bw);
}

/* the case studies' three types with the seed's Table 4 spot prices */
static void case3_types(mlsys_cloud_itype *ty) {
  itype(&ty[0], "p3.8xlarge", "p3", 3.68, 4, 0, 10);
  itype(&ty[1], "g3.8xlarge", "g3", 0.69, 8, 1, 10);
  itype(&ty[2], "g4dn.8xlarge", "g4dn", 0.72, 8, 2, 50);
}

/* a t_iter table keyed by the formatted mix: a predictor injected in place of the simulator (spec §7.4 1, 3, 4) */
typedef struct {
  const mlsys_cloud_sim *s;
  int n;
  const char *const *cfg;
  const double *t;
} table_sim;
static double table_t_iter(void *ud, const int *counts, const int *batches) {
  const table_sim *T = (const table_sim *)ud;
  mlsys_cloud_plan pl;
  char buf[256];
  int i;
  memset(&pl, 0, sizeof pl);
  pl.ntypes = T->s->ntypes;
  for (i = 0; i < pl.ntypes; i++) pl.counts[i] = counts[i], pl.batches[i] = batches[i];
  mlsys_cloud_plan_format(T->s, &pl, buf, sizeof buf);
  for (i = 0; i < T->n; i++)
    if (strcmp(buf, T->cfg[i]) == 0) return T->t[i];
  return INFINITY;
}

static void fmt(const mlsys_cloud_sim *s, const mlsys_cloud_plan *pl, char *buf, size_t n) {
  mlsys_cloud_plan_format(s, pl, buf, n);
}

/* ---- 1. cost arithmetic and feasibility (spec §7.4 cases 1 and 3) ------------------------------------------ */
TEST(case3_cost_arithmetic_from_the_seeds_times) {
  /* the seed's predicted s/iter for Srift, CAP and TAP, 1000 iterations: cost = time · Σ counts·price / 3600 */
  static const char *const cfg[3] = {"4p3@1024 + 8g3@128 + 8g4dn@128", "2p3@1024 + 8g3@256 + 8g4dn@256",
                                     "4p3@1024 + 8g4dn@256"};
  static const double pred[3] = {0.378, 0.751, 0.742}, actual[3] = {0.381, 0.761, 0.759};
  static const double want_pred[3] = {2.730, 3.889, 4.221}, want_act[3] = {2.752, 3.940, 4.318};
  static const double printed_pred[3] = {2.72, 3.88, 4.22}, printed_act[3] = {2.74, 3.93, 4.31};
  mlsys_cloud_itype ty[3];
  mlsys_cloud_sim s = {0};
  mlsys_cloud_problem p = {0};
  table_sim T = {&s, 3, cfg, pred};
  int k, counts[3], batches[3];
  case3_types(ty);
  s.ntypes = 3, s.types = ty, s.t_iter_fn = table_t_iter, s.t_iter_ud = &T;
  p.global_batch = 6144, p.iters = 1000, p.time_limit_s = 600, p.budget = 3;
  for (k = 0; k < 3; k++) {
    mlsys_cloud_plan pl;
    REQUIRE_OK(mlsys_cloud_parse_config(ty, 3, cfg[k], counts, batches));
    T.t = pred;
    REQUIRE_OK(mlsys_cloud_plan_eval(&s, &p, counts, batches, &pl));
    CHECK_NEAR(pl.total_cost, want_pred[k], 5e-4);
    CHECK(fabs(pl.total_cost - printed_pred[k]) / printed_pred[k] <= 0.005);
    CHECK_NEAR(pl.total_time_s, pred[k] * 1000, 1e-9);
    /* case 3's verdicts: Srift's plan meets 10 min and $3; CAP and TAP break both */
    CHECK_EQ_INT(pl.feasible, k == 0);
    if (k) CHECK(pl.total_time_s > 600 && pl.total_cost > 3);
    T.t = actual;
    REQUIRE_OK(mlsys_cloud_plan_eval(&s, &p, counts, batches, &pl));
    CHECK_NEAR(pl.total_cost, want_act[k], 5e-4);
    CHECK(fabs(pl.total_cost - printed_act[k]) / printed_act[k] <= 0.005);
  }
}

/* ---- 2. CAP and TAP reproduce the seed's plans (spec §4.1, §7.4 case 2) --------------------------------------- */
TEST(cap_and_tap_plans_of_cases_2_and_3) {
  mlsys_cloud_itype ty[3];
  mlsys_cloud_cprof pr[3];
  mlsys_cloud_sim s = {0};
  mlsys_cloud_problem p = {0};
  mlsys_cloud_plan pl;
  char buf[128];
  /* case 3: ShuffleNet, Bmax 1024 / 256 / 256 (Table 4); synthetic profiles with the seed's speed order p3 > g4dn > g3 */
  case3_types(ty);
  lin_prof(&pr[0], 1024, 0.01, 0.0001);
  lin_prof(&pr[1], 256, 0.01, 0.0006);
  lin_prof(&pr[2], 256, 0.01, 0.0004);
  s.ntypes = 3, s.types = ty, s.prof = pr, s.straggler_iters = -1;
  p.global_batch = 6144, p.iters = 1000;
  REQUIRE_OK(mlsys_cloud_plan_cap(&s, &p, &pl));
  fmt(&s, &pl, buf, sizeof buf);
  CHECK_STR(buf, "2p3@1024 + 8g3@256 + 8g4dn@256");
  CHECK_NEAR(pl.cost_per_hour, 18.64, 1e-9);
  REQUIRE_OK(mlsys_cloud_plan_tap(&s, &p, &pl));
  fmt(&s, &pl, buf, sizeof buf);
  CHECK_STR(buf, "4p3@1024 + 8g4dn@256");
  CHECK_NEAR(pl.cost_per_hour, 20.48, 1e-9);
  /* case 2: VGG19 on 16 g4dn.8xlarge (Bmax 128) and 16 g3.8xlarge (Bmax 64), global batch 1024 */
  itype(&ty[0], "g4dn.8xlarge", "g4dn", 0.72, 16, 0, 50);
  itype(&ty[1], "g3.8xlarge", "g3", 0.69, 16, 1, 10);
  lin_prof(&pr[0], 128, 0.05, 0.004);
  lin_prof(&pr[1], 64, 0.05, 0.006);
  s.ntypes = 2;
  p.global_batch = 1024;
  REQUIRE_OK(mlsys_cloud_plan_cap(&s, &p, &pl));
  fmt(&s, &pl, buf, sizeof buf);
  CHECK_STR(buf, "16g3@64");
  REQUIRE_OK(mlsys_cloud_plan_tap(&s, &p, &pl));
  fmt(&s, &pl, buf, sizeof buf);
  CHECK_STR(buf, "8g4dn@128");
  /* not enough capacity at Bmax: a named error */
  ty[0].cap = 2, ty[1].cap = 2;
  CHECK_EQ_INT(mlsys_cloud_plan_cap(&s, &p, &pl), MLSYS_ERR_INFEASIBLE);
  CHECK_CONTAINS(mlsys_last_error(), "hold 384 of global batch 1024");
}

/* ---- 3. re-plan window and the §5.4 interruption (spec §3.6, §7.4 case 4) ---------------------------------- */
TEST(replan_after_a_spot_interruption_follows_the_seeds_timeline) {
  /* ResNet50, global batch 1024, 400 iterations, deadline 500 s, minimum cost; at t = 222 s, 200 iterations done, one
     of 2 p3.8xlarge is preempted; EBS ready after 4 s; launch 150 s: remaining window 500 − 222 − 4 − 150 = 124 s. */
  static const char *const cfg[6] = {"1p3@512 + 8g3@64", "2p3@512", "1p3@1024", "16g3@64", "1p3@512 + 8g4dn@64",
                                     "1p3@512 + 4g4dn@128"};
  static const double t[6] = {0.50, 0.38, 0.70, 0.90, 0.49, 0.66};
  mlsys_cloud_itype ty[3];
  mlsys_cloud_sim s = {0};
  mlsys_cloud_problem p = {0}, np;
  mlsys_cloud_progress pg = {222, 0, 200};
  mlsys_cloud_overheads oh = {150, 4, 0};
  mlsys_cloud_plan pl;
  table_sim T = {&s, 6, cfg, t};
  int surviving[3] = {1, 0, 0}, depleted[3] = {1, 0, 0}, caps[3];
  char buf[128];
  case3_types(ty);
  ty[0].cap = ty[1].cap = ty[2].cap = -1; /* no availability information (§5.4) */
  s.ntypes = 3, s.types = ty, s.t_iter_fn = table_t_iter, s.t_iter_ud = &T;
  p.global_batch = 1024, p.iters = 400, p.time_limit_s = 500, p.goal = MLSYS_CLOUD_MIN_COST;
  REQUIRE_OK(mlsys_cloud_replan_problem(&s, &p, &pg, &oh, surviving, depleted, caps, &np));
  CHECK_NEAR(np.time_limit_s, 124, 1e-12);
  CHECK(np.iters == 200);
  CHECK_EQ_INT(caps[0], 1);
  CHECK_EQ_INT(caps[1], 1024); /* unknown: up to the global batch */
  REQUIRE_OK(mlsys_cloud_replan(&s, &p, &pg, &oh, surviving, depleted, &pl));
  fmt(&s, &pl, buf, sizeof buf);
  /* 2 p3 would be cheapest (0.38 s/iter) but p3 is depleted; 1p3@1024 and 16g3@64 miss the window; the g4dn mixes
     cost more: the seed's new plan */
  CHECK_STR(buf, "1p3@512 + 8g3@64");
  CHECK_NEAR(pl.total_time_s, 100, 1e-9);
  CHECK(pl.feasible && pl.complete);
  /* nothing left of the window: a named error */
  pg.elapsed_s = 400;
  CHECK_EQ_INT(mlsys_cloud_replan(&s, &p, &pg, &oh, surviving, depleted, &pl), MLSYS_ERR_INFEASIBLE);
  CHECK_CONTAINS(mlsys_last_error(), "no time left");
  pg.elapsed_s = 222, pg.iters_done = 400;
  CHECK_EQ_INT(mlsys_cloud_replan(&s, &p, &pg, &oh, surviving, depleted, &pl), MLSYS_ERR_ARG);
}

/* ---- 4. bus bandwidth (spec §3.3, §7.4 case 5) -------------------------------------------------------------- */
TEST(busbw_formula_and_inverse) {
  CHECK_NEAR(mlsys_cloud_busbw(100e6, 4, 0.1), 1.5e9, 1e-3);
  CHECK_NEAR(mlsys_cloud_allreduce_time(100e6, 4, 1.5e9), 0.1, 1e-15);
  CHECK_NEAR(mlsys_cloud_allreduce_time(12345.0, 7, mlsys_cloud_busbw(12345.0, 7, 0.037)), 0.037, 1e-15);
  CHECK(mlsys_cloud_busbw(100e6, 1, 0.1) == 0);
  CHECK(mlsys_cloud_allreduce_time(100e6, 1, 1e9) == 0);
  CHECK(mlsys_cloud_pow2_ceil(9001) == 16384);
  CHECK(mlsys_cloud_pow2_ceil(8192) == 8192);
  CHECK(mlsys_cloud_pow2_ceil(3) == 4 && mlsys_cloud_pow2_ceil(0.5) == 1);
}

/* ---- 5. the overlap simulator's properties (spec §7.4 case 6) ---------------------------------------------- */
typedef struct {
  const double *req;
} req_tab;
static double req_from_tab(void *ud, int l, double bytes, int c) {
  (void)bytes, (void)c;
  return ((const req_tab *)ud)->req[l];
}

TEST(overlap_single_layer_and_equal_share) {
  double r = 0.25, s = 1e8, b = 1e9, t, W = 2 * s * 3 / 4, rr[2] = {0, 0}, ss[2] = {s, s}, q[2] = {b, b};
  req_tab R = {&b};
  REQUIRE_OK(mlsys_cloud_overlap_sim(1, &r, &s, 4, req_from_tab, &R, 1e12, 0, &t));
  CHECK_NEAR(t, r + W / b, 1e-12); /* (a) */
  R.req = q;
  REQUIRE_OK(mlsys_cloud_overlap_sim(2, rr, ss, 4, req_from_tab, &R, 1.5e9, 0, &t));
  CHECK_NEAR(t, 2 * W / 1.5e9, 1e-12); /* (b): each at b_cap/2 */
  REQUIRE_OK(mlsys_cloud_overlap_sim(2, rr, ss, 1, req_from_tab, &R, 1.5e9, 0, &t));
  CHECK(t == 0); /* one VM: no allreduce */
}

TEST(overlap_random_properties) {
  mlsys_rng g;
  int trial;
  mlsys_rng_seed(&g, 7);
  for (trial = 0; trial < 400; trial++) {
    int L = 1 + (int)mlsys_rng_below(&g, 30), n = 2 + (int)mlsys_rng_below(&g, 63), l, big = trial & 1;
    double ready[32], bytes[32], req[32], t_inf, want = 0, prev = INFINITY, cap, t0, t1, tb, rmax = 0;
    req_tab R = {req};
    for (l = 0; l < L; l++) {
      ready[l] = (l ? ready[l - 1] : 0) + mlsys_rng_uniform(&g) * 0.01;
      bytes[l] = 1 + mlsys_rng_uniform(&g) * 4e7;
      req[l] = 1e8 + mlsys_rng_uniform(&g) * 2e9;
      if (req[l] > rmax) rmax = req[l];
    }
    /* (c) no cap: each layer at its own request */
    REQUIRE_OK(mlsys_cloud_overlap_sim(L, ready, bytes, n, req_from_tab, &R, 1e300, 0, &t_inf));
    for (l = 0; l < L; l++) {
      double f = ready[l] + 2 * bytes[l] * (n - 1) / n / req[l];
      if (f > want) want = f;
    }
    CHECK_NEAR(t_inf / want, 1, 1e-12);
    /* (d), (e): t_pe ≥ the last ready time, and non-increasing in the cap */
    for (cap = 1e7; cap < 1e11; cap *= 1.7) {
      REQUIRE_OK(mlsys_cloud_overlap_sim(L, ready, bytes, n, req_from_tab, &R, cap, trial & 2 ? 1 : 0, &t0));
      CHECK(t0 >= ready[L - 1]);
      CHECK(t0 <= prev * (1 + 1e-12));
      CHECK(t0 >= t_inf * (1 - 1e-12));
      prev = t0;
    }
    /* (f) Eq. 2 and water-filling agree when no request is below b_cap/c (every request at least the cap) ... */
    cap = big ? 0.5e8 : 3e8;
    for (l = 0; l < L && big; l++) req[l] = cap * (1 + mlsys_rng_uniform(&g));
    REQUIRE_OK(mlsys_cloud_overlap_sim(L, ready, bytes, n, req_from_tab, &R, cap, 0, &t0));
    REQUIRE_OK(mlsys_cloud_overlap_sim(L, ready, bytes, n, req_from_tab, &R, cap, 1, &t1));
    if (big) CHECK_NEAR(t0 / t1, 1, 1e-12);
    /* ... and water-filling is never slower (it only hands out what Eq. 2 leaves unused) */
    CHECK(t1 <= t0 * (1 + 1e-12));
    (void)tb;
  }
}

TEST(overlap_modes_differ_when_a_request_is_below_the_share) {
  /* two transfers ready together, cap 1e9 B/s; the small one asks for 1e8. Eq. 2 gives the big one min(req, cap/2)
     = 5e8 and leaves 4e8 idle: the small ends at 0.1 s, the big has 5e7 of 1e8 bus bytes done, then runs alone at
     the cap: 0.15 s. Water-filling gives the big 9e8: 9e7 done at 0.1 s, then 0.01 s alone: 0.11 s. */
  double ready[2] = {0, 0}, bytes[2] = {1e7, 1e8}, req[2] = {1e8, 1e10}, t0, t1, cap = 1e9;
  req_tab R = {req};
  REQUIRE_OK(mlsys_cloud_overlap_sim(2, ready, bytes, 2, req_from_tab, &R, cap, 0, &t0));
  REQUIRE_OK(mlsys_cloud_overlap_sim(2, ready, bytes, 2, req_from_tab, &R, cap, 1, &t1));
  CHECK_NEAR(t0, 0.15, 1e-12);
  CHECK_NEAR(t1, 0.11, 1e-12);
  /* requests both at least cap/2: the same allocation, the same t_pe */
  req[0] = 6e8;
  REQUIRE_OK(mlsys_cloud_overlap_sim(2, ready, bytes, 2, req_from_tab, &R, cap, 0, &t0));
  REQUIRE_OK(mlsys_cloud_overlap_sim(2, ready, bytes, 2, req_from_tab, &R, cap, 1, &t1));
  CHECK(t0 == t1);
}

TEST(overlap_bad_inputs_are_named) {
  double ready[2] = {0.2, 0.1}, bytes[2] = {1, 1}, req[2] = {1e9, 1e9}, t;
  req_tab R = {req};
  CHECK_EQ_INT(mlsys_cloud_overlap_sim(2, ready, bytes, 4, req_from_tab, &R, 1e9, 0, &t), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "earlier than layer 0");
  ready[1] = 0.3, req[1] = 0;
  CHECK_EQ_INT(mlsys_cloud_overlap_sim(2, ready, bytes, 4, req_from_tab, &R, 1e9, 0, &t), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "bandwidth model gave 0");
  req[1] = 1e9;
  CHECK_EQ_INT(mlsys_cloud_overlap_sim(2, ready, bytes, 4, req_from_tab, &R, 1e9, 2, &t), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_cloud_overlap_sim(2, ready, bytes, 4, req_from_tab, &R, 0, 0, &t), MLSYS_ERR_ARG);
  bytes[0] = NAN;
  CHECK_EQ_INT(mlsys_cloud_overlap_sim(2, ready, bytes, 4, req_from_tab, &R, 1e9, 0, &t), MLSYS_ERR_ARG);
}

/* ---- 6. stragglers (spec §3.4, §7.4 case 7) ----------------------------------------------------------------- */
TEST(expected_max_matches_the_tabulated_e_n) {
  static const int n[7] = {2, 3, 4, 8, 16, 32, 64};
  static const double e[7] = {0.56419, 0.84628, 1.02938, 1.42360, 1.76599, 2.06967, 2.34373};
  int k;
  for (k = 0; k < 7; k++) CHECK_NEAR(mlsys_cloud_expected_max_normal(n[k]), e[k], 6e-6);
}

TEST(straggler_monte_carlo_within_one_percent_of_mu_plus_sigma_e_n) {
  mlsys_cloud_itype ty;
  mlsys_cloud_cprof pr;
  mlsys_cloud_sim s = {0};
  mlsys_cloud_simres r;
  int n, counts, batch = 64;
  itype(&ty, "x", "", 1, 64, 0, 10);
  lin_prof(&pr, 64, 0.1, 0.01); /* μ = 3·(0.1 + 0.64) = 2.22 s at batch 64 */
  pr.sigma_rel = 0.2;
  s.ntypes = 1, s.types = &ty, s.prof = &pr, s.straggler_iters = 100000, s.seed = 11;
  for (n = 2; n <= 64; n *= 2) {
    double mu = 2.22, sd = 0.2 * mu, e = mlsys_cloud_expected_max_normal(n);
    counts = n;
    REQUIRE_OK(mlsys_cloud_simulate(&s, &counts, &batch, &r));
    /* the excess over μ, the part the noise makes, within 1 % of σ·e_n */
    CHECK_MSG(fabs((r.t_compute - mu) / (sd * e) - 1) < 0.01, "n %d: %.6f vs %.6f", n, r.t_compute, mu + sd * e);
    s.straggler_iters = -1;
    REQUIRE_OK(mlsys_cloud_simulate(&s, &counts, &batch, &r));
    CHECK_NEAR(r.t_compute, mu + sd * e, 1e-5);
    s.straggler_iters = 100000;
  }
}

TEST(straggler_one_slow_vm_dominates) {
  mlsys_cloud_itype ty[2];
  mlsys_cloud_cprof pr[2];
  mlsys_cloud_sim s = {0};
  mlsys_cloud_simres r, r2;
  int counts[2] = {1, 15}, batches[2] = {32, 32};
  itype(&ty[0], "slow", "", 1, 4, 0, 10);
  itype(&ty[1], "fast", "", 1, 16, 1, 10);
  lin_prof(&pr[0], 64, 0.0, 0.02); /* μ = 3·0.64 = 1.92 */
  lin_prof(&pr[1], 64, 0.0, 0.01); /* μ = 0.96 */
  s.ntypes = 2, s.types = ty, s.prof = pr, s.straggler_iters = 20000, s.seed = 3;
  REQUIRE_OK(mlsys_cloud_simulate(&s, counts, batches, &r));
  CHECK(fabs(r.t_compute / 1.92 - 1) < 0.01);
  /* the split into fw/bw follows the slowest type; t_iter = t_fw + t_bw with no layers */
  CHECK_NEAR(r.t_fw / r.t_bw, 0.5, 1e-12);
  CHECK_NEAR(r.t_iter, r.t_compute, 1e-12);
  /* Monte Carlo and integration agree on a mixed case */
  counts[0] = 3, pr[0].sigma_rel = 0.3, pr[1].sigma_rel = 0.5;
  REQUIRE_OK(mlsys_cloud_simulate(&s, counts, batches, &r));
  s.straggler_iters = -1;
  REQUIRE_OK(mlsys_cloud_simulate(&s, counts, batches, &r2));
  CHECK(fabs(r.t_compute / r2.t_compute - 1) < 0.01);
  /* no noise: exactly the slowest mean */
  pr[0].sigma_rel = pr[1].sigma_rel = -1;
  REQUIRE_OK(mlsys_cloud_simulate(&s, counts, batches, &r2));
  CHECK_NEAR(r2.t_compute, 1.92, 1e-12);
}

/* ---- 7. the compute model (spec §3.2, §7.4 case 8) ---------------------------------------------------------- */
static double kinked(double B) { /* AlexNet-like (Fig. 5): a steeper slope below B = 32 (synthetic) */
  return B < 32 ? 0.004 + 0.0009 * B : 0.004 + 0.0009 * 32 + 0.0004 * (B - 32);
}

TEST(pwl_interpolates_and_beats_a_single_line) {
  double x[4], y[4], by[4], sx = 0, sy = 0, sxx = 0, sxy = 0, a, b, mp = 0, ml = 0;
  int n, i, B, cnt = 0;
  CHECK_EQ_INT(mlsys_cloud_pwl_points(1024, x), 4);
  CHECK(x[0] == 1 && x[1] == 341 && x[2] == 683 && x[3] == 1024);
  CHECK_EQ_INT(mlsys_cloud_pwl_points(2, x), 2);
  CHECK_EQ_INT(mlsys_cloud_pwl_points(1, x), 1);
  CHECK_EQ_INT(mlsys_cloud_pwl_points(4, x), 3); /* 1, 1, 3, 4 → 1, 3, 4 */
  n = mlsys_cloud_pwl_points(256, x);
  for (i = 0; i < n; i++) y[i] = kinked(x[i]);
  for (i = 0; i < n; i++) CHECK(mlsys_cloud_pwl_eval(x, y, n, x[i]) == y[i]);
  CHECK(isinf(mlsys_cloud_pwl_eval(x, y, n, 257)));
  CHECK(isinf(mlsys_cloud_pwl_eval(x, y, n, 0.5)));
  for (i = 1; i < n; i++) /* continuous at the knots */
    CHECK_NEAR(mlsys_cloud_pwl_eval(x, y, n, x[i] - 1e-9), mlsys_cloud_pwl_eval(x, y, n, x[i] + (i + 1 < n ? 1e-9 : 0)), 1e-9);
  /* Eq. 1's line, least squares through the same samples, against the PWL, on batches 1..256 in powers of 2 */
  for (i = 0; i < n; i++) sx += x[i], sy += y[i], sxx += x[i] * x[i], sxy += x[i] * y[i];
  b = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  a = (sy - b * sx) / n;
  for (B = 1; B <= 256; B *= 2, cnt++) {
    double t = kinked(B);
    mp += fabs(mlsys_cloud_pwl_eval(x, y, n, B) - t) / t;
    ml += fabs(a + b * B - t) / t;
  }
  CHECK_MSG(mp < ml, "PWL MAPE %.3f vs line %.3f", mp / cnt, ml / cnt);
  (void)by;
}

TEST(profiles_bad_input_is_named) {
  mlsys_cloud_cprof p;
  double fw[4] = {1, 2, 3, 4}, bw[4] = {1, 2, 3, 4}, rf[3] = {0.1, 0.5, 0.4}, gb[3] = {1, 1, 1};
  CHECK_EQ_INT(mlsys_cloud_cprof_set(&p, 0, fw, bw), MLSYS_ERR_ARG);
  fw[2] = -1;
  memset(&p, 0, sizeof p);
  CHECK_EQ_INT(mlsys_cloud_cprof_set(&p, 64, fw, bw), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "not a finite non-negative");
  fw[2] = 3;
  REQUIRE_OK(mlsys_cloud_cprof_set(&p, 64, fw, bw));
  p.nlayers = 3, p.ready_frac = rf, p.grad_bytes = gb;
  CHECK_EQ_INT(mlsys_cloud_cprof_check(&p, "alexnet on p3"), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "alexnet on p3: layer 2's ready fraction 0.4");
  p.sigma_rel = 1.5, rf[2] = 0.6;
  CHECK_EQ_INT(mlsys_cloud_cprof_check(&p, "x"), MLSYS_ERR_ARG);
}

/* ---- the measured-profile fit (mlsys_cloud_cprof_fit, mlsys_cloud_dnn_fit); synthetic curves ---------------- */
static double hat(const double *x, int m, int k, double B) { /* φ_k(B) on the knots x[0..m−1] */
  if (m == 1) return 1;
  if (k > 0 && B >= x[k - 1] && B <= x[k]) return (B - x[k - 1]) / (x[k] - x[k - 1]);
  if (k + 1 < m && B >= x[k] && B <= x[k + 1]) return (x[k + 1] - B) / (x[k + 1] - x[k]);
  return 0;
}

TEST(pwl_fit_recovers_curves_and_is_least_squares_on_300_random_cases) {
  mlsys_rng g;
  int trial;
  mlsys_rng_seed(&g, 2211);
  for (trial = 0; trial < 300; trial++) {
    int bmax = 1 + (int)mlsys_rng_below(&g, trial < 20 ? 4 : 3000), n = 0, m, i, k, noisy = trial % 2;
    double x[4], yf[4], yb[4], B[64], fw[64], bw[64];
    mlsys_cloud_cprof p;
    m = mlsys_cloud_pwl_points(bmax, x);
    for (k = 0; k < m; k++) /* an increasing curve, backward about twice the forward */
      yf[k] = (k ? yf[k - 1] : 1e-3) + (k ? 0.2 * mlsys_rng_uniform(&g) : 0), yb[k] = yf[k] * (1.5 + mlsys_rng_uniform(&g));
    for (k = 0; k < m; k++) B[n++] = x[k]; /* every knot timed once, then random batches */
    while (n < 8 + (int)mlsys_rng_below(&g, 40)) B[n++] = 1 + (double)mlsys_rng_below(&g, (uint64_t)bmax);
    for (i = 0; i < n; i++) {
      double e = noisy ? exp(0.1 * (mlsys_rng_uniform(&g) - 0.5)) : 1;
      fw[i] = mlsys_cloud_pwl_eval(x, yf, m, B[i]) * e, bw[i] = mlsys_cloud_pwl_eval(x, yb, m, B[i]) * e;
    }
    memset(&p, 0, sizeof p);
    REQUIRE_OK(mlsys_cloud_cprof_fit(&p, bmax, n, B, fw, bw));
    CHECK_EQ_INT(p.npts, m);
    if (!noisy) { /* exact timings: the curve comes back */
      for (k = 0; k < m; k++) {
        CHECK_MSG(fabs(p.t_fw[k] - yf[k]) <= 1e-9 * yf[k], "trial %d knot %d: %g vs %g", trial, k, p.t_fw[k], yf[k]);
        CHECK_MSG(fabs(p.t_bw[k] - yb[k]) <= 1e-9 * yb[k], "trial %d knot %d: %g vs %g", trial, k, p.t_bw[k], yb[k]);
      }
    } else { /* noisy: the weighted residual is orthogonal to every hat function (the normal equations) */
      for (k = 0; k < m; k++) {
        double df = 0, db = 0, sf = 0, sb = 0;
        for (i = 0; i < n; i++) {
          double y = fw[i] + bw[i], c = 1 / (y * y + 1e-12), ph = hat(x, m, k, B[i]);
          df += c * ph * (mlsys_cloud_pwl_eval(p.b, p.t_fw, m, B[i]) - fw[i]);
          db += c * ph * (mlsys_cloud_pwl_eval(p.b, p.t_bw, m, B[i]) - bw[i]);
          sf += c * ph * fw[i], sb += c * ph * bw[i];
        }
        CHECK_MSG(fabs(df) <= 1e-9 * sf && fabs(db) <= 1e-9 * sb, "trial %d knot %d: %g %g (scales %g %g)", trial, k, df,
                  db, sf, sb);
      }
    }
  }
}

TEST(pwl_fit_sigma_repeats_and_errors) {
  /* repeats only at the knots: each knot's value is the weighted mean of its repeats; sigma_rel from those at bmax */
  double B[8] = {1, 1, 33, 67, 100, 100, 100, 100}, fw[8] = {1, 3, 5, 7, 9, 10, 11, 12}, bw[8];
  double mean = 0, var = 0;
  mlsys_cloud_cprof p;
  int i;
  for (i = 0; i < 8; i++) bw[i] = fw[i];
  memset(&p, 0, sizeof p);
  REQUIRE_OK(mlsys_cloud_cprof_fit(&p, 100, 8, B, fw, bw));
  CHECK_NEAR(p.t_fw[0], (1.0 / 4 + 3.0 / 36) / (1.0 / 4 + 1.0 / 36), 1e-12); /* weights 1/(2t)² */
  CHECK_NEAR(p.t_fw[1], 5, 1e-12);
  for (i = 4; i < 8; i++) mean += 2 * fw[i] / 4;
  for (i = 4; i < 8; i++) var += (2 * fw[i] - mean) * (2 * fw[i] - mean) / 3;
  CHECK_NEAR(p.sigma_rel, sqrt(var) / mean, 1e-12);
  /* named errors */
  memset(&p, 0, sizeof p);
  CHECK_EQ_INT(mlsys_cloud_cprof_fit(&p, 100, 4, (double[]){1, 1, 100, 100}, fw, bw), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "do not determine the time at batch 33");
  CHECK_EQ_INT(mlsys_cloud_cprof_fit(&p, 100, 2, (double[]){1, 101}, fw, bw), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "outside [1, bmax 100]");
  CHECK_EQ_INT(mlsys_cloud_cprof_fit(&p, 100, 2, (double[]){1, 100}, (double[]){1, -1}, bw), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "not a finite non-negative time");
  CHECK_EQ_INT(mlsys_cloud_cprof_fit(&p, 0, 2, B, fw, bw), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_cloud_cprof_fit(&p, 100, 0, B, fw, bw), MLSYS_ERR_ARG);
  /* a curve that must dip below zero to fit: named, not returned */
  CHECK_EQ_INT(mlsys_cloud_cprof_fit(&p, 100, 4, (double[]){16, 17, 67, 100}, (double[]){0.01, 1, 20, 30},
                                     (double[]){0.01, 1, 20, 30}), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "goes negative at batch 1");
}

TEST(dnn_fit_from_csv_and_back_through_json) {
  /* two types (one with a bmax column), a layer list; the fitted profile written and read back loses nothing */
  const char *tim = "type,batch,t_fw,t_bw,bmax,note\n"
                    "a,1,0.01,0.02,,x\n" "a,21,0.11,0.22,,\n" "a,43,0.21,0.42,,\n" "a,64,0.3,0.6,,\n" "a,64,0.32,0.62,,\n"
                    "b,1,0.002,0.004,512,\n" "b,200,0.1,0.2,512,\n" "b,341,0.2,0.4,512,\n" "b,400,0.25,0.5,512,\n";
  const char *lay = "order,name,grad_bytes,ready_frac\n0,fc,4000,0.1\n1,conv,8000,0.7\n";
  mlsys_cloud_dnn d, e;
  mlsys_cloud_fit_stat *st = NULL;
  const mlsys_cloud_cprof *a, *b;
  FILE *f;
  char *buf = NULL;
  size_t len = 0;
  int k;
  REQUIRE_OK(mlsys_cloud_dnn_fit("toy", tim, strlen(tim), "t.csv", lay, strlen(lay), "l.csv", &d, &st));
  CHECK_EQ_INT(d.ntypes, 2);
  CHECK_STR(d.type_name[0], "a");
  CHECK_EQ_INT(d.nlayers, 2);
  CHECK_NEAR(d.grad_bytes[1], 8000, 0);
  a = mlsys_cloud_dnn_find(&d, "a"), b = mlsys_cloud_dnn_find(&d, "b");
  REQUIRE(a && b);
  CHECK_EQ_INT(a->bmax, 64); /* the largest timed batch */
  CHECK_EQ_INT(b->bmax, 512); /* the column, beyond the timings: extrapolated on the last segment */
  CHECK(a->sigma_rel > 0 && b->sigma_rel == 0); /* two timings at a's bmax; none at b's */
  CHECK_EQ_INT(st[0].n, 5);
  CHECK(st[1].fit_mape < 1e-9); /* b's four timings lie on a line through its knots' segments */
  CHECK(st[0].fit_mape <= st[0].line_mape + 1e-12);
  REQUIRE((f = tmpfile()) != NULL);
  REQUIRE_OK(mlsys_cloud_dnn_write(&d, f));
  len = (size_t)ftell(f);
  rewind(f);
  buf = (char *)malloc(len + 1);
  REQUIRE(fread(buf, 1, len, f) == len);
  fclose(f);
  REQUIRE_OK(mlsys_cloud_dnn_load(buf, len, "fitted", &e));
  for (k = 0; k < a->npts; k++) CHECK(e.prof[0].t_fw[k] == a->t_fw[k] && e.prof[0].b[k] == a->b[k]);
  CHECK(e.prof[1].t_bw[3] == b->t_bw[3]);
  mlsys_cloud_dnn_free(&e);
  mlsys_cloud_dnn_free(&d);
  mlsys_free(st);
  free(buf);
}

TEST(dnn_fit_bad_csv_is_named) {
  static const struct { const char *tim, *lay, *msg; } cases[] = {
      {"type,batch,t_fw\na,1,1\n", NULL, "no 't_bw' column"},
      {"type,batch,t_fw,t_bw\n", NULL, "no rows after the header"},
      {"type,batch,t_fw,t_bw\na,1,x,1\n", NULL, "t.csv:2: t_fw \"x\" is not a number"},
      {"type,batch,t_fw,t_bw\na,1.5,1,1\n", NULL, "batch \"1.5\" is not a whole number"},
      {"type,batch,t_fw,t_bw\na,1,1\n", NULL, "3 fields, the header has 4"},
      {"type,batch,t_fw,t_bw\na,1,1,1,1\n", NULL, "more fields than the header's 4"},
      {"type,batch,t_fw,t_bw\n,1,1,1\n", NULL, "empty type"},
      {"type,batch,t_fw,t_bw\nabcdefghijabcdefghijabcdefghijabc,1,1,1\n", NULL, "longer than 31 bytes"},
      {"type,batch,t_fw,t_bw,bmax\na,1,1,1,8\na,2,1,1,16\n", NULL, "a's bmax 16 differs from its first row's 8"},
      {"type,batch,t_fw,t_bw\na,1,1,1\na,9,1,1\n", NULL, "t.csv: a: cloud: fit: the timings do not determine"},
      {"type,batch,t_fw,t_bw\na,1,1,1\n", "grad_bytes,ready_frac\n1,0.5\n1,0.2\n", "l.csv:3: ready_frac 0.2 goes backwards"},
      {"type,batch,t_fw,t_bw\na,1,1,1\n", "grad_bytes\n1\n", "no 'ready_frac' column"},
      {"type,batch,t_fw,t_bw\na,1,1,1\n", "grad_bytes,ready_frac\n-1,0.5\n", "grad_bytes \"-1\""},
  };
  size_t i;
  for (i = 0; i < sizeof cases / sizeof *cases; i++) {
    mlsys_cloud_dnn d;
    mlsys_cloud_fit_stat *st = (mlsys_cloud_fit_stat *)1;
    mlsys_status s = mlsys_cloud_dnn_fit("x", cases[i].tim, strlen(cases[i].tim), "t.csv", cases[i].lay,
                                         cases[i].lay ? strlen(cases[i].lay) : 0, "l.csv", &d, &st);
    CHECK_MSG(s != MLSYS_OK && strstr(mlsys_last_error(), cases[i].msg), "case %zu: status %d, \"%s\" lacks \"%s\"", i,
              (int)s, mlsys_last_error(), cases[i].msg);
    CHECK(st == NULL && d.ntypes == 0 && d.prof == NULL);
  }
  CHECK_EQ_INT(mlsys_cloud_dnn_fit("", "type,batch,t_fw,t_bw\na,1,1,1\n", 30, NULL, NULL, 0, NULL, &(mlsys_cloud_dnn){0}, NULL),
               MLSYS_ERR_ARG);
}

/* ---- 8. the optimizer against brute force (spec §7.4 case 9) ------------------------------------------------ */
typedef struct {
  mlsys_cloud_itype ty[5];
  mlsys_cloud_cprof pr[5];
  double rf[5][12], gb[5][12];
} rand_inst;

static void rand_instance(mlsys_rng *g, rand_inst *I, int nt, int L) {
  int i, l;
  for (i = 0; i < nt; i++) {
    double fw[4], bw[4], x[4], a = 0.001 + 0.02 * mlsys_rng_uniform(g), b = 1e-4 + 2e-3 * mlsys_rng_uniform(g);
    int small = nt > 3, bmax = 1 << (small ? 2 + (int)mlsys_rng_below(g, 4) : 4 + (int)mlsys_rng_below(g, 7)), n, k;
    char nm[16];
    snprintf(nm, sizeof nm, "t%d", i);
    itype(&I->ty[i], nm, "", 0.2 + 4 * mlsys_rng_uniform(g), 1 + (int)mlsys_rng_below(g, small ? 4 : 8), i,
          5 + 45 * mlsys_rng_uniform(g));
    n = mlsys_cloud_pwl_points(bmax, x);
    memset(&I->pr[i], 0, sizeof I->pr[i]);
    for (k = 0; k < n; k++) fw[k] = a + b * x[k] * (k == 1 ? 0.9 : 1), bw[k] = fw[k] * (1.5 + mlsys_rng_uniform(g));
    mlsys_cloud_cprof_set(&I->pr[i], bmax, fw, bw);
    I->pr[i].sigma_rel = 0.01 + 0.08 * mlsys_rng_uniform(g);
    I->pr[i].nlayers = L;
    for (l = 0; l < L; l++) {
      I->rf[i][l] = (l ? I->rf[i][l - 1] : 0) + (1 - (l ? I->rf[i][l - 1] : 0)) * mlsys_rng_uniform(g) * 0.5;
      I->gb[i][l] = i == 0 ? 1e3 + 5e7 * mlsys_rng_uniform(g) : I->gb[0][l];
    }
    I->pr[i].ready_frac = I->rf[i], I->pr[i].grad_bytes = I->gb[i];
  }
}

/* every mix: counts 0..cap, power-of-two batches ≤ Bmax, Σ = B; the best objective among those meeting the limits */
static void brute_rec(const mlsys_cloud_sim *s, const mlsys_cloud_problem *p, int t, int *c, int *b, double *best,
                      int *found) {
  mlsys_cloud_plan pl;
  int k, sum = 0;
  double obj;
  if (t == s->ntypes) {
    for (k = 0; k < s->ntypes; k++) sum += c[k] * b[k];
    if (sum != p->global_batch) return;
    if (mlsys_cloud_plan_eval(s, p, c, b, &pl) != MLSYS_OK || !pl.feasible) return;
    obj = p->goal == MLSYS_CLOUD_MIN_TIME ? pl.total_time_s : pl.total_cost;
    if (obj < *best) *best = obj;
    *found = 1;
    return;
  }
  c[t] = 0, b[t] = 1; /* an unused type: counted once */
  brute_rec(s, p, t + 1, c, b, best, found);
  for (c[t] = 1; c[t] <= s->types[t].cap; c[t]++)
    for (b[t] = 1; b[t] <= s->prof[t].bmax; b[t] *= 2) brute_rec(s, p, t + 1, c, b, best, found);
  c[t] = 0, b[t] = 1;
}
static double brute(const mlsys_cloud_sim *s, const mlsys_cloud_problem *p, int *found) {
  int c[MLSYS_CLOUD_MAX_TYPES] = {0}, b[MLSYS_CLOUD_MAX_TYPES] = {0};
  double best = INFINITY;
  *found = 0;
  brute_rec(s, p, 0, c, b, &best, found);
  return best;
}

TEST(optimizer_equals_brute_force_on_200_random_instances) {
  mlsys_rng g;
  int trial, nfeas = 0, ninf = 0, nbig = 0;
  mlsys_rng_seed(&g, 2026);
  for (trial = 0; trial < 200; trial++) {
    rand_inst I;
    mlsys_cloud_sim s = {0};
    mlsys_cloud_problem p = {0};
    mlsys_cloud_plan pl, pe;
    int nt = trial < 160 ? 1 + (int)mlsys_rng_below(&g, 3) : 4 + (int)mlsys_rng_below(&g, 2), found, k;
    double want, got;
    mlsys_status st, se;
    rand_instance(&g, &I, nt, 1 + (int)mlsys_rng_below(&g, 12));
    s.ntypes = nt, s.types = I.ty, s.prof = I.pr, s.straggler_iters = 40, s.seed = (uint64_t)trial;
    s.share_mode = trial & 1;
    p.global_batch = 1 << (3 + (int)mlsys_rng_below(&g, 9));
    if (trial % 5 == 0) p.global_batch = 24 * (1 + (int)mlsys_rng_below(&g, 40)); /* not a power of two */
    if (nt > 3) p.global_batch = 8 + (int)mlsys_rng_below(&g, 120); /* 4-5 types with small caps and Bmax */
    p.iters = 100 + (long)mlsys_rng_below(&g, 5000);
    p.goal = trial % 3 == 0 ? MLSYS_CLOUD_MIN_TIME : MLSYS_CLOUD_MIN_COST;
    if (trial % 4 == 1) p.time_limit_s = p.iters * (0.02 + 2 * mlsys_rng_uniform(&g));
    if (trial % 4 == 2) p.budget = 0.05 + 3 * mlsys_rng_uniform(&g);
    want = brute(&s, &p, &found);
    st = mlsys_cloud_optimize(&s, &p, &pl);
    if (!found) {
      CHECK_MSG(st == MLSYS_ERR_INFEASIBLE, "trial %d: brute force found nothing, optimize says %d", trial, (int)st);
      ninf++;
    } else {
      CHECK_MSG(st == MLSYS_OK, "trial %d: %s", trial, mlsys_last_error());
      if (st != MLSYS_OK) continue;
      got = p.goal == MLSYS_CLOUD_MIN_TIME ? pl.total_time_s : pl.total_cost;
      CHECK_MSG(fabs(got / want - 1) < 1e-12, "trial %d: optimizer %.9g, brute force %.9g", trial, got, want);
      CHECK(pl.feasible && pl.complete);
      for (k = 0, found = 0; k < nt; k++) found += pl.counts[k] * pl.batches[k];
      CHECK_EQ_INT(found, p.global_batch);
      nfeas++;
      nbig += nt > 3;
    }
    /* eager: feasible or nothing, never better than exhaustive */
    p.eager = 1, p.eager_k = 2;
    se = mlsys_cloud_optimize(&s, &p, &pe);
    if (se == MLSYS_OK) {
      CHECK(pe.feasible);
      CHECK(st == MLSYS_OK);
      if (st == MLSYS_OK)
        CHECK((p.goal == MLSYS_CLOUD_MIN_TIME ? pe.total_time_s : pe.total_cost) >= (p.goal == MLSYS_CLOUD_MIN_TIME ? pl.total_time_s : pl.total_cost) * (1 - 1e-12));
    } else {
      CHECK_EQ_INT(se, MLSYS_ERR_INFEASIBLE);
    }
  }
  /* both outcomes were exercised, and the 4-5 type instances (where the search's bounds cut most) found plans */
  CHECK_MSG(nfeas > 100 && ninf > 5 && nbig > 15, "%d feasible (%d with 4-5 types), %d infeasible", nfeas, nbig, ninf);
}

TEST(optimizer_sim_budget_stops_and_says_so) {
  mlsys_rng g;
  rand_inst I;
  mlsys_cloud_sim s = {0};
  mlsys_cloud_problem p = {0};
  mlsys_cloud_plan pl;
  mlsys_status st;
  mlsys_rng_seed(&g, 5);
  rand_instance(&g, &I, 3, 4);
  I.ty[0].cap = I.ty[1].cap = I.ty[2].cap = 8;
  s.ntypes = 3, s.types = I.ty, s.prof = I.pr, s.straggler_iters = 10;
  p.global_batch = 256, p.iters = 100, p.max_sims = 3;
  st = mlsys_cloud_optimize(&s, &p, &pl);
  CHECK(pl.sims <= 3);
  CHECK(!pl.complete);
  if (st != MLSYS_OK) CHECK_CONTAINS(mlsys_last_error(), "stopped at its budget");
}

/* ---- 9. case 1's shape: spreading the batch when compute dominates (spec §7.4 case 10) ------------------------ */
TEST(case1_shape_sixteen_vms_at_half_the_batch) {
  /* Inception-like (synthetic): fw+bw ≈ 1.7 s at 64 per VM, nearly linear; 16 g4dn.8xlarge available; the seed's
     CAP = TAP = 8g4dn@64 and Srift 16g4dn@32, 1.94x faster predicted, about the same cost */
  mlsys_cloud_itype ty;
  mlsys_cloud_cprof pr;
  mlsys_cloud_sim s = {0};
  mlsys_cloud_problem p = {0};
  mlsys_cloud_plan pl, cap, tap;
  double rf[4] = {0.2, 0.5, 0.8, 1.0}, gb[4] = {4e6, 2e7, 3e7, 4e7};
  char buf[64];
  itype(&ty, "g4dn.8xlarge", "g4dn", 0.72, 16, 0, 50);
  lin_prof(&pr, 64, 0.01, 0.0088);
  pr.nlayers = 4, pr.ready_frac = rf, pr.grad_bytes = gb;
  s.ntypes = 1, s.types = &ty, s.prof = &pr, s.straggler_iters = -1;
  p.global_batch = 512, p.iters = 1000, p.goal = MLSYS_CLOUD_MIN_TIME;
  REQUIRE_OK(mlsys_cloud_optimize(&s, &p, &pl));
  fmt(&s, &pl, buf, sizeof buf);
  CHECK_STR(buf, "16g4dn@32");
  REQUIRE_OK(mlsys_cloud_plan_cap(&s, &p, &cap));
  REQUIRE_OK(mlsys_cloud_plan_tap(&s, &p, &tap));
  fmt(&s, &cap, buf, sizeof buf);
  CHECK_STR(buf, "8g4dn@64");
  fmt(&s, &tap, buf, sizeof buf);
  CHECK_STR(buf, "8g4dn@64");
  CHECK(cap.t_iter / pl.t_iter > 1.8 && cap.t_iter / pl.t_iter < 2.0);
  CHECK(fabs(pl.total_cost / cap.total_cost - 1) < 0.1);
}

/* ---- 10. configurations: format and parse --------------------------------------------------------------------- */
TEST(config_parse_and_format_round_trip) {
  mlsys_cloud_itype ty[3];
  mlsys_cloud_sim s = {0};
  mlsys_cloud_plan pl;
  int c[3], b[3], i;
  char buf[128];
  case3_types(ty);
  s.ntypes = 3, s.types = ty;
  REQUIRE_OK(mlsys_cloud_parse_config(ty, 3, "4xp3.8xlarge@1024+8xg3.8xlarge@128", c, b));
  CHECK(c[0] == 4 && b[0] == 1024 && c[1] == 8 && b[1] == 128 && c[2] == 0);
  REQUIRE_OK(mlsys_cloud_parse_config(ty, 3, " 4p3@1024 + 8g3@128 + 8g4dn@128 ", c, b));
  memset(&pl, 0, sizeof pl);
  pl.ntypes = 3;
  for (i = 0; i < 3; i++) pl.counts[i] = c[i], pl.batches[i] = b[i];
  fmt(&s, &pl, buf, sizeof buf);
  CHECK_STR(buf, "4p3@1024 + 8g3@128 + 8g4dn@128");
  CHECK_EQ_INT(mlsys_cloud_plan_format(&s, &pl, buf, 5), 30);
  CHECK_STR(buf, "4p3@");
  CHECK_EQ_INT(mlsys_cloud_parse_config(ty, 3, "4xp4.8xlarge@1024", c, b), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "unknown instance type \"p4.8xlarge\"");
  CHECK_EQ_INT(mlsys_cloud_parse_config(ty, 3, "4p3", c, b), MLSYS_ERR_PARSE);
  CHECK_EQ_INT(mlsys_cloud_parse_config(ty, 3, "4p3@", c, b), MLSYS_ERR_PARSE);
  CHECK_EQ_INT(mlsys_cloud_parse_config(ty, 3, "4p3@64 8g3@64", c, b), MLSYS_ERR_PARSE);
  CHECK_EQ_INT(mlsys_cloud_parse_config(ty, 3, "4p3@64+2p3@32", c, b), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "appears twice");
  CHECK_EQ_INT(mlsys_cloud_parse_config(ty, 3, "", c, b), MLSYS_ERR_PARSE);
  CHECK_EQ_INT(mlsys_cloud_parse_config(ty, 3, "0p3@64", c, b), MLSYS_ERR_ARG);
}

TEST(simulate_bad_mixes_are_named) {
  mlsys_cloud_itype ty[2];
  mlsys_cloud_cprof pr[2];
  mlsys_cloud_sim s = {0};
  mlsys_cloud_simres r;
  mlsys_cloud_problem p = {0};
  mlsys_cloud_plan pl;
  int c[2] = {1, 1}, b[2] = {64, 512};
  itype(&ty[0], "p3.8xlarge", "p3", 3.68, 4, 0, 10);
  itype(&ty[1], "g3.8xlarge", "g3", 0.69, 8, 1, 10);
  lin_prof(&pr[0], 1024, 0.01, 0.001);
  lin_prof(&pr[1], 256, 0.01, 0.001);
  s.ntypes = 2, s.types = ty, s.prof = pr;
  CHECK_EQ_INT(mlsys_cloud_simulate(&s, c, b, &r), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "type 1 (g3.8xlarge): batch 512 exceeds its Bmax 256");
  c[0] = -1;
  CHECK_EQ_INT(mlsys_cloud_simulate(&s, c, b, &r), MLSYS_ERR_ARG);
  c[0] = 0, c[1] = 0;
  CHECK_EQ_INT(mlsys_cloud_simulate(&s, c, b, &r), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "no VMs");
  p.global_batch = 0, p.iters = 10;
  CHECK_EQ_INT(mlsys_cloud_optimize(&s, &p, &pl), MLSYS_ERR_ARG);
  p.global_batch = 64, p.iters = 0;
  CHECK_EQ_INT(mlsys_cloud_optimize(&s, &p, &pl), MLSYS_ERR_ARG);
  p.iters = 10;
  ty[1].price_per_hour = -1;
  CHECK_EQ_INT(mlsys_cloud_optimize(&s, &p, &pl), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "price -1");
  ty[1].price_per_hour = 0.69;
  p.time_limit_s = 1e-9;
  CHECK_EQ_INT(mlsys_cloud_optimize(&s, &p, &pl), MLSYS_ERR_INFEASIBLE);
  CHECK_CONTAINS(mlsys_last_error(), "no mix of the 2 types");
}

TEST(dominance_pruning) {
  /* §3.1 rule 1: A is dropped only when B beats it on both throughput and throughput per $ */
  double thru[4] = {100, 60, 80, 30}, price[4] = {12.24, 2.176, 2.28, 3.06};
  int keep[4];
  /* per $: 8.2, 27.6, 35.1, 9.8: the fastest and the most cost-efficient stay; 80 beats 60 and 30 on both */
  CHECK_EQ_INT(mlsys_cloud_prune_dominated(4, thru, price, keep), 2);
  CHECK(keep[0] && !keep[1] && keep[2] && !keep[3]);
}

/* ---- 11. the profiling driver (§3.2) on a callback with known answers ------------------------------------- */
typedef struct {
  int fits;         /* largest batch that fits */
  long calls;
  int k;            /* iteration counter: the noise pattern */
  int fail_at;      /* return an error at this batch (0: never) */
} fake_iter;
static int fake_step(void *ud, int batch, double *t_fw, double *t_bw, double *stamps) {
  fake_iter *f = (fake_iter *)ud;
  double e = (f->k++ & 1) ? 0.1 : -0.1; /* ±10 %: std/mean exactly 0.1 over an even number of iterations */
  f->calls++;
  if (f->fail_at && batch == f->fail_at) {
    mlsys_set_error(MLSYS_ERR_IO, "fake: the device went away");
    return -1;
  }
  if (batch > f->fits) return 1;
  *t_fw = (0.01 + 0.001 * batch) * (1 + e);
  *t_bw = (0.02 + 0.002 * batch) * (1 + e);
  if (stamps) stamps[0] = 0.25 * *t_bw, stamps[1] = 0.75 * *t_bw, stamps[2] = *t_bw;
  return 0;
}

TEST(profiling_driver_finds_bmax_and_fits_the_samples) {
  fake_iter f = {700, 0, 0, 0};
  mlsys_cloud_profile_opts o = {3, 0, 1, 2, 10};
  mlsys_cloud_cprof p;
  double rf[3], gb[3] = {4, 8, 12};
  int k;
  REQUIRE_OK(mlsys_cloud_profile(fake_step, &f, &o, &p, rf));
  CHECK_EQ_INT(p.bmax, 512); /* powers of two, as Table 4 */
  CHECK_EQ_INT(p.npts, 4);
  CHECK(p.b[1] == 171 && p.b[2] == 341 && p.b[3] == 512);
  for (k = 0; k < 4; k++) { /* the ±10 % cancels over 10 iterations after 2 warm-ups */
    CHECK_NEAR(p.t_fw[k], 0.01 + 0.001 * p.b[k], 1e-12);
    CHECK_NEAR(p.t_bw[k], 0.02 + 0.002 * p.b[k], 1e-12);
  }
  CHECK_NEAR(p.sigma_rel, 0.1, 1e-9);
  CHECK_NEAR(rf[0], 0.25, 1e-12);
  CHECK_NEAR(rf[1], 0.75, 1e-12);
  CHECK_NEAR(rf[2], 1.0, 1e-12);
  p.grad_bytes = gb;
  CHECK_OK(mlsys_cloud_cprof_check(&p, "fake"));
  /* exact Bmax by bisection */
  o.pow2_only = 0;
  f.calls = 0;
  REQUIRE_OK(mlsys_cloud_profile(fake_step, &f, &o, &p, rf));
  CHECK_EQ_INT(p.bmax, 700);
  CHECK(f.calls <= 1 + 10 + 10 + 4 * 12); /* doubling to 1024, 8 bisection steps, 4 samples × 12 */
  /* a limit below what fits */
  o.bmax_limit = 100;
  REQUIRE_OK(mlsys_cloud_profile(fake_step, &f, &o, &p, rf));
  CHECK_EQ_INT(p.bmax, 100);
  /* nothing fits; the callback's own error passes through */
  f.fits = 0;
  CHECK_EQ_INT(mlsys_cloud_profile(fake_step, &f, &o, &p, rf), MLSYS_ERR_INFEASIBLE);
  CHECK_CONTAINS(mlsys_last_error(), "batch 1 does not fit");
  f.fits = 700, f.fail_at = 64, o.bmax_limit = 0;
  CHECK_EQ_INT(mlsys_cloud_profile(fake_step, &f, &o, &p, rf), MLSYS_ERR_IO);
  CHECK_CONTAINS(mlsys_last_error(), "device went away");
}

TEST(profile_written_and_read_back_exactly) {
  fake_iter f = {300, 0, 0, 0};
  mlsys_cloud_profile_opts o = {3, 0, 0, 1, 4};
  mlsys_cloud_cprof p[2];
  mlsys_cloud_dnn d, e;
  char name[2][32] = {"local-cpu", "other"}, *buf = NULL;
  double rf[3], gb[3] = {1e6, 2.5e5, 3};
  size_t len = 0;
  FILE *fp;
  int k;
  REQUIRE_OK(mlsys_cloud_profile(fake_step, &f, &o, &p[0], rf));
  p[0].grad_bytes = gb;
  p[1] = p[0];
  p[1].bmax = 64, p[1].npts = mlsys_cloud_pwl_points(64, p[1].b), p[1].sigma_rel = 0.05;
  memset(&d, 0, sizeof d);
  snprintf(d.dnn, sizeof d.dnn, "fake");
  d.ntypes = 2, d.type_name = name, d.prof = p, d.nlayers = 3, d.grad_bytes = gb, d.ready_frac = rf;
  fp = open_memstream(&buf, &len);
  REQUIRE(fp != NULL);
  REQUIRE_OK(mlsys_cloud_dnn_write(&d, fp));
  fclose(fp);
  REQUIRE_OK(mlsys_cloud_dnn_load(buf, len, "mem", &e));
  free(buf);
  CHECK_EQ_INT(e.ntypes, 2);
  CHECK_EQ_INT(e.nlayers, 3);
  CHECK_STR(e.type_name[0], "local-cpu");
  CHECK_EQ_INT(e.prof[0].bmax, 300);
  for (k = 0; k < 4; k++) CHECK(e.prof[0].t_fw[k] == p[0].t_fw[k] && e.prof[0].t_bw[k] == p[0].t_bw[k] && e.prof[0].b[k] == p[0].b[k]);
  CHECK(e.prof[0].sigma_rel == p[0].sigma_rel && e.prof[1].sigma_rel == 0.05);
  for (k = 0; k < 3; k++) CHECK(e.ready_frac[k] == rf[k] && e.grad_bytes[k] == gb[k]);
  mlsys_cloud_dnn_free(&e);
}

TEST_MAIN()
