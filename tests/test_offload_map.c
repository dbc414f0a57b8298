/* Tests for the mapper of mlsys_offload.h (spec §3.5, §7.4 case 3): pilot prediction -> resolved path + blocks.
   Known answers are written out by hand (small program) or come from a second method: labels built from random
   true paths (the mapper must reproduce them exactly) and a brute-force enumeration of complete paths for the
   fallback. No check depends on time. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_offload.h"
#include "tests/test.h"

#define KM 16

static mlsys_offload_sig mk(int i0, int i1, int i2, int i3, int i4, int i5, int d0, int d1, int d2) {
  mlsys_offload_sig s;
  memset(&s, 0, sizeof s);
  s.idiom[0] = i0; s.idiom[1] = i1; s.idiom[2] = i2; s.idiom[3] = i3; s.idiom[4] = i4; s.idiom[5] = i5;
  s.dim[0] = d0; s.dim[1] = d1; s.dim[2] = d2;
  return s;
}

/* a; if {b} else {c}; loop 1..3 {d}; e.  AFM rows: 0 a, 1 branch, 2 b, 3 c, 4 loop, 5 d, 6 e. */
static void hand_prog(mlsys_offload_prog *p, int collide) {
  mlsys_offload_sig a = mk(1, 0, 0, 0, 0, 0, 2, 0, 0), b = mk(0, 1, 0, 0, 0, 0, 0, 3, 0);
  mlsys_offload_sig c = collide ? b : mk(0, 0, 1, 0, 0, 0, 0, 3, 0), d = mk(0, 0, 0, 0, 1, 0, 0, 0, 5);
  mlsys_offload_sig e = mk(0, 0, 0, 1, 0, 0, 0, 0, 0);
  int ia, ib, ic, id, ie, br, lp, kids[4], alts[2];
  mlsys_offload_prog_init(p, 0);
  ia = mlsys_offload_prog_op(p, &a);
  ib = mlsys_offload_prog_op(p, &b);
  ic = mlsys_offload_prog_op(p, &c);
  alts[0] = ib; alts[1] = ic;
  br = mlsys_offload_prog_branch(p, 2, alts);
  id = mlsys_offload_prog_op(p, &d);
  lp = mlsys_offload_prog_loop(p, id, 1, 3);
  ie = mlsys_offload_prog_op(p, &e);
  kids[0] = ia; kids[1] = br; kids[2] = lp; kids[3] = ie;
  mlsys_offload_prog_seq(p, 4, kids);
}

TEST(map_hand_paths_and_labels) {
  mlsys_offload_prog p;
  int alt, t, i;
  hand_prog(&p, 0);
  for (alt = 0; alt < 2; alt++)
    for (t = 1; t <= 3; t++) {
      int dec[2] = {alt, t}, want_rows[16], n = 0;
      int32_t lab[KM * 10], want1[10], want2a[10], want2b[10];
      mlsys_offload_resolved r, m;
      REQUIRE_OK(mlsys_offload_path(&p, dec, 2, &r));
      want_rows[n++] = 0; want_rows[n++] = 1; want_rows[n++] = alt ? 3 : 2; want_rows[n++] = 4;
      for (i = 0; i < t; i++) want_rows[n++] = 5;
      want_rows[n++] = 6;
      REQUIRE(r.n_rows == n);
      for (i = 0; i < n; i++) CHECK_EQ_INT(r.row[i], want_rows[i]);
      /* one block, by hand: rows n; T 1, G 1-alt, S alt, R 1, Str t, St 0; dims 2, 3, 5t */
      {
        int32_t w[10] = {0};
        w[0] = n; w[1] = 1; w[2] = alt ? 0 : 1; w[3] = alt ? 1 : 0; w[4] = 1; w[5] = t; w[6] = 0;
        w[7] = 2; w[8] = 3; w[9] = 5 * t;
        memcpy(want1, w, sizeof w);
      }
      mlsys_offload_path_label(&p, &r, KM, lab);
      for (i = 0; i < 10; i++) CHECK_EQ_INT(lab[i], want1[i]);
      for (i = 10; i < KM * 10; i++) CHECK_EQ_INT(lab[i], 0);
      REQUIRE_OK(mlsys_offload_map(&p, lab, KM, 0, &m));
      CHECK(m.exact == 1);
      REQUIRE(m.n_dec == 2);
      CHECK_EQ_INT(m.decision[0], alt);
      CHECK_EQ_INT(m.decision[1], t);
      mlsys_offload_resolved_free(&m);
      /* two blocks cut after 3 rows: [a, branch, b|c] and [loop, d^t, e] */
      memset(want2a, 0, sizeof want2a); memset(want2b, 0, sizeof want2b);
      want2a[0] = 3; want2a[1] = 1; want2a[2] = alt ? 0 : 1; want2a[3] = alt ? 1 : 0; want2a[7] = 2; want2a[8] = 3;
      want2b[0] = n - 3; want2b[4] = 1; want2b[5] = t; want2b[9] = 5 * t;
      r.block_start = (int *)mlsys_realloc_array(r.block_start, 3, sizeof(int));
      REQUIRE(r.block_start);
      r.k = 2; r.block_start[0] = 0; r.block_start[1] = 3; r.block_start[2] = n;
      mlsys_offload_path_label(&p, &r, KM, lab);
      for (i = 0; i < 10; i++) { CHECK_EQ_INT(lab[i], want2a[i]); CHECK_EQ_INT(lab[10 + i], want2b[i]); }
      REQUIRE_OK(mlsys_offload_map(&p, lab, KM, 0, &m));
      CHECK(m.exact == 1);
      REQUIRE(m.n_dec == 2 && m.k == 2);
      CHECK_EQ_INT(m.decision[0], alt);
      CHECK_EQ_INT(m.decision[1], t);
      CHECK_EQ_INT(m.block_start[1], 3);
      mlsys_offload_resolved_free(&m);
      /* k_max = 1 folds the second block into the first row */
      mlsys_offload_path_label(&p, &r, 1, lab);
      for (i = 0; i < 10; i++) CHECK_EQ_INT(lab[i], want1[i]);
      mlsys_offload_resolved_free(&r);
    }
  /* decisions that do not fit */
  {
    int bad1[2] = {2, 1}, bad2[2] = {0, 4}, bad3[3] = {0, 1, 0};
    mlsys_offload_resolved r;
    CHECK(mlsys_offload_path(&p, bad1, 2, &r) == MLSYS_ERR_ARG);
    CHECK_CONTAINS(mlsys_last_error(), "alternative");
    CHECK(mlsys_offload_path(&p, bad2, 2, &r) == MLSYS_ERR_ARG);
    CHECK_CONTAINS(mlsys_last_error(), "loop");
    CHECK(mlsys_offload_path(&p, bad3, 3, &r) == MLSYS_ERR_ARG);
    CHECK(mlsys_offload_path(&p, bad3, 1, &r) == MLSYS_ERR_ARG);
  }
  mlsys_offload_prog_free(&p);
}

TEST(map_hand_collision) {
  /* b and c carry the same signature, so (0,t) and (1,t) have identical labels: the mapper, trying alternatives in
     program order, answers alternative 0 for both, and that path reproduces the label. */
  mlsys_offload_prog p;
  int t;
  hand_prog(&p, 1);
  for (t = 1; t <= 3; t++) {
    int dec[2] = {1, t};
    int32_t lab[KM * 10], lab2[KM * 10];
    mlsys_offload_resolved r, m;
    REQUIRE_OK(mlsys_offload_path(&p, dec, 2, &r));
    mlsys_offload_path_label(&p, &r, KM, lab);
    REQUIRE_OK(mlsys_offload_map(&p, lab, KM, 0, &m));
    CHECK(m.exact == 1);
    REQUIRE(m.n_dec == 2);
    CHECK_EQ_INT(m.decision[0], 0);
    CHECK_EQ_INT(m.decision[1], t);
    CHECK_EQ_INT(m.row[2], 2);
    mlsys_offload_path_label(&p, &m, KM, lab2);
    CHECK(!memcmp(lab, lab2, sizeof lab));
    mlsys_offload_resolved_free(&r);
    mlsys_offload_resolved_free(&m);
  }
  mlsys_offload_prog_free(&p);
}

/* ---------------------------------------------------------------- random programs */
typedef struct { int branches, loops, rows; } gen_budget;

static int gen_node(mlsys_offload_prog *p, mlsys_rng *g, gen_budget *b, int depth) {
  int u = (int)mlsys_rng_below(g, 10);
  if (b->rows >= 200 || depth > 4) u = 0;
  if (u <= 4 || (u == 7 && b->branches == 0) || (u >= 8 && b->loops == 0)) {
    mlsys_offload_sig s = mk((int)mlsys_rng_below(g, 2), (int)mlsys_rng_below(g, 2), (int)mlsys_rng_below(g, 2),
                             (int)mlsys_rng_below(g, 2), (int)mlsys_rng_below(g, 3), (int)mlsys_rng_below(g, 2),
                             (int)mlsys_rng_below(g, 4), (int)mlsys_rng_below(g, 4), (int)mlsys_rng_below(g, 3));
    b->rows++;
    return mlsys_offload_prog_op(p, &s);
  }
  if (u <= 6) {
    int n = 1 + (int)mlsys_rng_below(g, 4), k[4], i;
    for (i = 0; i < n; i++) k[i] = gen_node(p, g, b, depth + 1);
    return mlsys_offload_prog_seq(p, n, k);
  }
  if (u == 7) {
    int n = 2 + (int)mlsys_rng_below(g, 2), k[3], i;
    b->branches--; b->rows++;
    for (i = 0; i < n; i++) k[i] = gen_node(p, g, b, depth + 1);
    return mlsys_offload_prog_branch(p, n, k);
  }
  {
    int body, lo = (int)mlsys_rng_below(g, 3), hi = mlsys_rng_below(g, 5) == 0 ? -1 : lo + (int)mlsys_rng_below(g, 4);
    b->loops--; b->rows++;
    body = gen_node(p, g, b, depth + 1);
    return mlsys_offload_prog_loop(p, body, lo, hi);
  }
}

static void gen_prog(mlsys_offload_prog *p, mlsys_rng *g) {
  gen_budget b;
  int k[6], n = 2 + (int)mlsys_rng_below(g, 5), i;
  mlsys_offload_sig s = mk(1, 0, 0, 0, 1, 0, 1, 1, 0);
  b.branches = (int)mlsys_rng_below(g, 9); b.loops = (int)mlsys_rng_below(g, 4); b.rows = 1;
  mlsys_offload_prog_init(p, 0);
  k[0] = mlsys_offload_prog_op(p, &s);
  for (i = 1; i < n; i++) k[i] = gen_node(p, g, &b, 1);
  mlsys_offload_prog_seq(p, n, k);
}

/* random decisions by walking the tree (unbounded loops: at most loop_min + 3 trips) */
static void walk(const mlsys_offload_prog *p, int v, mlsys_rng *g, int *dec, int *nd) {
  const mlsys_offload_pnode *x = &p->node[v];
  int i;
  if (x->kind == MLSYS_OFFLOAD_PN_SEQ)
    for (i = 0; i < x->n_child; i++) walk(p, p->child[x->first_child + i], g, dec, nd);
  else if (x->kind == MLSYS_OFFLOAD_PN_BRANCH) {
    int a = (int)mlsys_rng_below(g, (uint64_t)x->n_child);
    dec[(*nd)++] = a;
    walk(p, p->child[x->first_child + a], g, dec, nd);
  } else if (x->kind == MLSYS_OFFLOAD_PN_LOOP) {
    int hi = x->loop_max >= 0 ? x->loop_max : x->loop_min + 3, t = x->loop_min + (int)mlsys_rng_below(g, (uint64_t)(hi - x->loop_min + 1));
    dec[(*nd)++] = t;
    for (i = 0; i < t; i++) walk(p, p->child[x->first_child], g, dec, nd);
  }
}

static int random_case(mlsys_offload_prog *p, mlsys_rng *g, mlsys_offload_resolved *r, int32_t *lab, int *dec, int *nd) {
  int K, i, n;
  *nd = 0;
  gen_prog(p, g);
  walk(p, p->root, g, dec, nd);
  if (mlsys_offload_path(p, dec, *nd, r)) return 0;
  n = r->n_rows;
  K = 1 + (int)mlsys_rng_below(g, KM);
  if (K > n) K = n;
  r->block_start = (int *)mlsys_realloc_array(r->block_start, (size_t)K + 1, sizeof(int));
  /* K-1 distinct cuts in 1..n-1, by choosing a sorted subset */
  {
    int need = K - 1, have = 0, c;
    r->block_start[0] = 0;
    for (c = 1; c < n && have < need; c++)
      if ((int)mlsys_rng_below(g, (uint64_t)(n - c)) < need - have) r->block_start[++have] = c;
  }
  r->block_start[K] = n;
  r->k = K;
  for (i = 0; i < K; i++) if (r->block_start[i + 1] <= r->block_start[i]) return 0;
  mlsys_offload_path_label(p, r, KM, lab);
  return 1;
}

TEST(map_random_round_trip_h21) {
  mlsys_rng g;
  int c, exact = 0, collide = 0, same = 0;
  long smax = 0;
  double ssum = 0;
  static int dec[100000];
  mlsys_rng_seed(&g, 2121);
  for (c = 0; c < 500; c++) {
    mlsys_offload_prog p;
    mlsys_offload_resolved r, m;
    int32_t lab[KM * 10], lab2[KM * 10];
    int nd, i, eq;
    REQUIRE(random_case(&p, &g, &r, lab, dec, &nd));
    REQUIRE_OK(mlsys_offload_map(&p, lab, KM, 0, &m));
    mlsys_offload_path_label(&p, &m, KM, lab2);
    CHECK_MSG(m.exact == 1 && !memcmp(lab, lab2, sizeof lab), "case %d: exact %d", c, m.exact);
    exact += m.exact == 1 && !memcmp(lab, lab2, sizeof lab);
    eq = m.n_dec == nd;
    for (i = 0; eq && i < nd; i++) eq = m.decision[i] == dec[i];
    if (eq) same++;
    else collide++;
    if (m.states > smax) smax = m.states;
    ssum += (double)m.states;
    mlsys_offload_resolved_free(&m);
    mlsys_offload_resolved_free(&r);
    mlsys_offload_prog_free(&p);
  }
  printf("    H21: %d/500 exact; recovered decisions = true %d, collisions (other path, same labels) %d; states max %ld mean %.1f\n",
         exact, same, collide, smax, ssum / 500);
  CHECK_EQ_INT(exact, 500);
}

/* ---------------------------------------------------------------- brute force for the fallback */
typedef struct {
  const mlsys_offload_prog *p;
  const mlsys_offload_sig *afm;
  int *rowof;                         /* AFM row of each node (nodes are not shared in these programs) */
  int64_t Q[10], budget, best0, best1;
  int have, *stk;
  long visits;
} bf_ctx;

static void bf_rows(const mlsys_offload_prog *p, int v, int *r, int *rowof) {
  const mlsys_offload_pnode *x = &p->node[v];
  int i;
  if (x->kind != MLSYS_OFFLOAD_PN_SEQ) rowof[v] = (*r)++;
  for (i = 0; i < x->n_child; i++) bf_rows(p, p->child[x->first_child + i], r, rowof);
}

static void bf(bf_ctx *b, int sp, const int64_t *tot0) {
  int64_t tot[10];
  const mlsys_offload_pnode *x;
  int v, i, e;
  b->visits++;
  if (tot0[0] > b->budget || b->visits > 20000000L) return;
  if (sp == 0) {
    int64_t d0 = llabs(tot0[0] - b->Q[0]), d1 = 0;
    for (e = 1; e < 10; e++) d1 += llabs(tot0[e] - b->Q[e]);
    if (!b->have || d0 < b->best0 || (d0 == b->best0 && d1 < b->best1)) { b->have = 1; b->best0 = d0; b->best1 = d1; }
    return;
  }
  memcpy(tot, tot0, sizeof tot);
  v = b->stk[--sp];
  x = &b->p->node[v];
  if (x->kind != MLSYS_OFFLOAD_PN_SEQ) {
    const mlsys_offload_sig *s = &b->afm[b->rowof[v]];
    tot[0]++;
    for (e = 0; e < 6; e++) tot[1 + e] += s->idiom[e];
    for (e = 0; e < 3; e++) tot[7 + e] += s->dim[e];
  }
  if (x->kind == MLSYS_OFFLOAD_PN_OP) bf(b, sp, tot);
  else if (x->kind == MLSYS_OFFLOAD_PN_SEQ) {
    for (i = 0; i < x->n_child; i++) b->stk[sp + x->n_child - 1 - i] = b->p->child[x->first_child + i];
    bf(b, sp + x->n_child, tot);
  } else if (x->kind == MLSYS_OFFLOAD_PN_BRANCH) {
    for (i = 0; i < x->n_child; i++) { b->stk[sp] = b->p->child[x->first_child + i]; bf(b, sp + 1, tot); }
  } else {
    int t, hi = x->loop_max >= 0 ? x->loop_max : (int)b->budget;
    for (t = x->loop_min; t <= hi; t++) {
      if (sp + t > 200000) break;
      for (i = 0; i < t; i++) b->stk[sp + i] = b->p->child[x->first_child];
      bf(b, sp + t, tot);
    }
  }
  /* deeper calls consume the continuation below and overwrite it; give back the slot popped here */
  b->stk[sp] = v;
}

TEST(map_perturbed_fallback) {
  mlsys_rng g;
  int c, n_exact = 0, n_fb = 0, n_inf = 0, n_skip = 0;
  static int dec[100000], stk[200001];
  mlsys_rng_seed(&g, 777);
  for (c = 0; c < 500; c++) {
    mlsys_offload_prog p;
    mlsys_offload_resolved r, m;
    int32_t lab[KM * 10], lab2[KM * 10];
    int nd, K, blk, e, i, n_afm = 0;
    mlsys_status st;
    REQUIRE(random_case(&p, &g, &r, lab, dec, &nd));
    K = r.k;
    blk = (int)mlsys_rng_below(&g, (uint64_t)K);
    e = (int)mlsys_rng_below(&g, 10);
    if (lab[blk * 10 + e] == 0 || (e == 0 && lab[blk * 10] == 1) || mlsys_rng_below(&g, 2)) lab[blk * 10 + e]++;
    else lab[blk * 10 + e]--;
    st = mlsys_offload_map(&p, lab, KM, 0, &m);
    if (st == MLSYS_OK && m.exact) {
      n_exact++;
      mlsys_offload_path_label(&p, &m, KM, lab2);
      CHECK_MSG(!memcmp(lab, lab2, sizeof lab), "case %d: exact but labels differ", c);
    } else {
      bf_ctx b;
      int64_t z[10] = {0}, slack;
      mlsys_offload_sig *afm;
      memset(&b, 0, sizeof b);
      b.p = &p;
      REQUIRE_OK(mlsys_offload_afm(&p, NULL, 0, &n_afm));
      afm = (mlsys_offload_sig *)malloc((size_t)n_afm * sizeof *afm);
      b.rowof = (int *)malloc((size_t)p.n_node * sizeof(int));
      REQUIRE(afm && b.rowof);
      REQUIRE_OK(mlsys_offload_afm(&p, afm, n_afm, &n_afm));
      i = 0;
      bf_rows(&p, p.root, &i, b.rowof);
      b.afm = afm;
      for (i = 0; i < K * 10; i++) b.Q[i % 10] += lab[i];
      slack = b.Q[0] / 10;
      if (slack > 64) slack = 64;
      if (slack < 1) slack = 1;
      b.budget = b.Q[0] + slack;
      b.stk = stk;
      stk[0] = p.root;
      bf(&b, 1, z);
      if (b.visits > 20000000L) n_skip++;
      else if (!b.have) {
        CHECK_MSG(st == MLSYS_ERR_INFEASIBLE, "case %d: no path within the bound, but status %d", c, (int)st);
        n_inf++;
      } else {
        int64_t tot[10] = {0}, d0, d1 = 0, cum = 0;
        int k;
        REQUIRE(st == MLSYS_OK);
        n_fb++;
        CHECK(m.exact == 0);
        mlsys_offload_resolved tmp = m;
        tmp.k = 1; tmp.block_start = (int *)malloc(2 * sizeof(int));
        REQUIRE(tmp.block_start);
        tmp.block_start[0] = 0; tmp.block_start[1] = m.n_rows;
        mlsys_offload_path_label(&p, &tmp, 1, lab2);
        free(tmp.block_start);
        for (i = 0; i < 10; i++) tot[i] = lab2[i];
        d0 = llabs(tot[0] - b.Q[0]);
        for (i = 1; i < 10; i++) d1 += llabs(tot[i] - b.Q[i]);
        CHECK_MSG(tot[0] <= b.budget && d0 == b.best0 && d1 == b.best1,
                  "case %d: fallback (%lld,%lld) vs brute force (%lld,%lld)", c, (long long)d0, (long long)d1,
                  (long long)b.best0, (long long)b.best1);
        /* boundaries where the cumulative row count first reaches Q_k[0] */
        CHECK(m.block_start[0] == 0 && m.block_start[m.k] == m.n_rows);
        for (k = 1; k < m.k; k++) {
          int j;
          for (cum = 0, j = 0; j < K; j++) { cum += lab[j * 10]; if (cum == m.block_start[k]) break; }
          CHECK_MSG(j < K - 1, "case %d: boundary %d at row %d is no cumulative count", c, k, m.block_start[k]);
        }
      }
      free(afm);
      free(b.rowof);
    }
    if (st == MLSYS_OK) mlsys_offload_resolved_free(&m);
    mlsys_offload_resolved_free(&r);
    mlsys_offload_prog_free(&p);
  }
  printf("    perturbed: %d exact (another path), %d fallback (matches brute force), %d infeasible, %d brute force too big\n",
         n_exact, n_fb, n_inf, n_skip);
  CHECK(n_fb > 0);
}

TEST(map_bad_input) {
  mlsys_offload_prog p, empty;
  mlsys_offload_resolved m;
  int32_t lab[KM * 10];
  hand_prog(&p, 0);
  memset(lab, 0, sizeof lab);
  lab[0] = 3;
  CHECK(mlsys_offload_map(&p, lab, 0, 0, &m) == MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "k_max");
  lab[0] = 0;
  CHECK(mlsys_offload_map(&p, lab, KM, 0, &m) == MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "0 blocks");
  lab[0] = 3; lab[4] = -1;
  CHECK(mlsys_offload_map(&p, lab, KM, 0, &m) == MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "negative");
  lab[4] = 0;
  mlsys_offload_prog_init(&empty, 0);
  CHECK(mlsys_offload_map(&empty, lab, KM, 0, &m) == MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "no root");
  /* 3 rows cannot be a complete path (at least 6): the fallback finds none within 3 + 1 rows */
  CHECK(mlsys_offload_map(&p, lab, KM, 0, &m) == MLSYS_ERR_INFEASIBLE);
  mlsys_offload_prog_free(&empty);
  mlsys_offload_prog_free(&p);
}

TEST(map_small_max_states) {
  mlsys_rng g;
  int c, fb = 0, err = 0, ex = 0;
  static int dec[100000];
  mlsys_rng_seed(&g, 99);
  for (c = 0; c < 100; c++) {
    mlsys_offload_prog p;
    mlsys_offload_resolved r, m;
    int32_t lab[KM * 10];
    int nd;
    mlsys_status st;
    long lim = 1 + (long)mlsys_rng_below(&g, 20);
    REQUIRE(random_case(&p, &g, &r, lab, dec, &nd));
    st = mlsys_offload_map(&p, lab, KM, lim, &m);
    CHECK(st == MLSYS_OK || st == MLSYS_ERR_INFEASIBLE);
    if (st == MLSYS_OK) {
      CHECK(m.states <= 2 * lim + 2);
      if (m.exact) ex++; else fb++;
      mlsys_offload_resolved_free(&m);
    } else err++;
    mlsys_offload_resolved_free(&r);
    mlsys_offload_prog_free(&p);
  }
  printf("    max_states 1..20: %d exact, %d fallback, %d infeasible\n", ex, fb, err);
  CHECK(fb + err > 0);
}

TEST_MAIN()
