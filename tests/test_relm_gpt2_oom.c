/* Allocation-failure tests for mlsys_relm.h: for each operation the k-th allocation fails, for k = 0, 1, 2, ...
   until the operation needs no more than k allocations. Every failed run must return MLSYS_ERR_NOMEM (the thread's
   status set), leave outputs NULL and caches unchanged, and leak nothing (blocks counted here; ASan's leak checker
   double-checks with `make test SAN=1`); after it the same objects must still give the right answers. */
#include "tests/oom_alloc.h"
#define MLSYS_IMPLEMENTATION
#include "mlsys_relm.h"
#include "tests/test.h"

static const mlsys_relm_gpt2_config CFG = {16, 23, 24, 2, 2, 16};

/* A model, its full-forward logits of toks, for comparisons after failures. */
static mlsys_relm_gpt2 *M;
static int32_t TOKS[12] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8};
static float FULL_LG[12 * 23];

static void setup(void) {
  oom_fail_at = -1;
  if (!M) {
    mlsys_relm_gpt2_desc d = {2, 0};
    if (mlsys_relm_gpt2_random(&CFG, 3, &d, &M) == MLSYS_OK) mlsys_relm_gpt2_forward(M, TOKS, 12, FULL_LG);
  }
}

/* Runs op with the k-th allocation failing, for every k until it succeeds; op returns its status and cleans up
   what it made. Returns the number of failing runs (0 means the loop never saw a success). */
typedef mlsys_status (*op_fn)(int failed_before);
static int sweep(const char *name, op_fn op) {
  long k;
  int fails = 0;
  for (k = 0; k < 10000; k++) {
    long before = oom_live;
    mlsys_status s;
    oom_calls = 0;
    oom_fail_at = k;
    mlsys_clear_error();
    s = op(0);
    oom_fail_at = -1;
    if (s == MLSYS_OK && oom_calls <= k) break;   /* needed no more than k allocations: done */
    if (s == MLSYS_OK) continue;               /* the failing allocation was one it survives (scratch reuse) */
    fails++;
    CHECK_MSG(s == MLSYS_ERR_NOMEM, "%s: allocation %ld fails: status %d (%s)", name, k, (int)s, mlsys_last_error());
    CHECK_MSG(mlsys_last_status() == MLSYS_ERR_NOMEM, "%s: allocation %ld: thread status %d", name, k, (int)mlsys_last_status());
    CHECK_MSG(oom_live == before, "%s: allocation %ld fails: %ld blocks leaked", name, k, oom_live - before);
    CHECK_MSG(op(1) == MLSYS_OK, "%s: after failure at %ld the operation does not work: %s", name, k, mlsys_last_error());
  }
  CHECK_MSG(k < 10000, "%s: never succeeded", name);
  return fails;
}

static mlsys_status op_random(int again) {
  mlsys_relm_gpt2_desc d = {2, 0};
  mlsys_relm_gpt2 *m = (mlsys_relm_gpt2 *)&d;
  mlsys_status s = mlsys_relm_gpt2_random(&CFG, 3, &d, &m);
  (void)again;
  if (s) { CHECK(m == NULL); return s; }
  mlsys_relm_gpt2_free(m);
  return s;
}

static mlsys_status op_load_mem(int again) {
  int32_t h[256] = {20240326, 3, 16, 23, 2, 2, 16, 24};
  size_t np;
  float *p = mlsys_relm_gpt2_params(M, &np);
  char *buf = (char *)malloc(1024 + np * 4);
  mlsys_relm_gpt2 *m = M;
  mlsys_status s;
  float lg[12 * 23];
  (void)again;
  memcpy(buf, h, sizeof h);
  memcpy(buf + 1024, p, np * 4);
  s = mlsys_relm_gpt2_load_mem(buf, 1024 + np * 4, NULL, &m);
  free(buf);
  if (s) { CHECK(m == NULL); return s; }
  if (mlsys_relm_gpt2_forward(m, TOKS, 12, lg) == MLSYS_OK) CHECK(!memcmp(lg, FULL_LG, sizeof lg));
  mlsys_relm_gpt2_free(m);
  return MLSYS_OK;
}

/* A cache of 5 tokens, forked, both extended in one batch with a third fresh cache; on failure nothing changed. */
static mlsys_status op_caches(int again) {
  mlsys_relm_gpt2_cache *a = NULL, *b = NULL, *c = NULL;
  mlsys_status s;
  float lg[3 * 23];
  size_t kv0 = mlsys_relm_gpt2_kv_bytes(M);
  (void)again;
  if ((s = mlsys_relm_gpt2_cache_create(M, &a))) return s;
  if ((s = mlsys_relm_gpt2_cache_extend(a, TOKS, 5, NULL))) { CHECK_EQ_INT(mlsys_relm_gpt2_cache_len(a), 0); goto done; }
  if ((s = mlsys_relm_gpt2_cache_fork(a, &b))) { CHECK(b == NULL); goto done; }
  if ((s = mlsys_relm_gpt2_cache_create(M, &c))) goto done;
  {
    mlsys_relm_gpt2_cache *cs[3] = {a, b, c};
    const int32_t *tp[3] = {TOKS + 5, TOKS + 5, TOKS};
    int n[3] = {3, 1, 7};
    s = mlsys_relm_gpt2_cache_extend_batch(3, cs, tp, n, lg);
    if (s) {
      CHECK(mlsys_relm_gpt2_cache_len(a) == 5 && mlsys_relm_gpt2_cache_len(b) == 5 && mlsys_relm_gpt2_cache_len(c) == 0);
      goto done;
    }
    CHECK(!memcmp(lg, FULL_LG + 7 * 23, 23 * 4));
    CHECK(!memcmp(lg + 23, FULL_LG + 5 * 23, 23 * 4));
    CHECK(!memcmp(lg + 46, FULL_LG + 6 * 23, 23 * 4));
  }
done:
  mlsys_relm_gpt2_cache_free(a);
  mlsys_relm_gpt2_cache_free(b);
  mlsys_relm_gpt2_cache_free(c);
  CHECK_EQ_INT(mlsys_relm_gpt2_kv_bytes(M), kv0);
  return s;
}

/* The LM adapter: created, warmed with a batch, then a batch that shares prefixes with it; on failure of a call,
   the next identical call must give the full forward's log-probabilities. */
static mlsys_status op_lm(int again) {
  mlsys_relm_lm lm;
  mlsys_relm_gpt2_lm_desc d = {0, 0, 0, 0};
  mlsys_status s;
  float lp[3 * 23], ref[23];
  const int32_t *seqs[3] = {TOKS, TOKS, TOKS + 2};
  int lens1[3] = {4, 0, 3}, lens2[3] = {6, 5, 4}, b;
  int32_t full[13];
  (void)again;
  if ((s = mlsys_relm_gpt2_lm(M, &d, &lm))) { CHECK(lm.ctx == NULL); return s; }
  for (int round = 0; round < 2; round++) {
    const int *lens = round ? lens2 : lens1;
    if (lm.next_logprobs(lm.ctx, 3, seqs, lens, lp)) {
      s = mlsys_last_status();
      if (lm.next_logprobs(lm.ctx, 3, seqs, lens, lp)) { mlsys_relm_gpt2_lm_free(&lm); return MLSYS_ERR_ARG; }   /* must work now */
    }
    for (b = 0; b < 3; b++) {   /* against the full forward over BOS + sequence */
      float *all = (float *)malloc(13 * 23 * sizeof(float));
      full[0] = 22;
      memcpy(full + 1, seqs[b], (size_t)lens[b] * sizeof(int32_t));
      if (mlsys_relm_gpt2_forward(M, full, lens[b] + 1, all) == MLSYS_OK) {
        mlsys_relm_log_softmax(all + (size_t)lens[b] * 23, 23, ref);
        CHECK_MSG(!memcmp(ref, lp + b * 23, sizeof ref), "round %d sequence %d", round, b);
      }
      free(all);
    }
  }
  mlsys_relm_gpt2_lm_free(&lm);
  if (s) mlsys_set_error(s, "an LM call failed");
  return s;
}

static mlsys_status op_bigram(int again) {
  float t[9] = {0}, t0[3] = {0};
  mlsys_relm_lm lm;
  mlsys_status s = mlsys_relm_lm_bigram(3, t, t0, &lm);
  (void)again;
  if (!s) mlsys_relm_lm_bigram_free(&lm);
  return s;
}

TEST(oom_random_model) { setup(); REQUIRE(M); CHECK(sweep("random", op_random) > 0); }
TEST(oom_load_mem) { setup(); REQUIRE(M); CHECK(sweep("load_mem", op_load_mem) > 0); }
TEST(oom_caches_fork_batch) { setup(); REQUIRE(M); CHECK(sweep("caches", op_caches) > 0); }
TEST(oom_lm_adapter) { setup(); REQUIRE(M); CHECK(sweep("lm", op_lm) > 0); }
TEST(oom_bigram) { setup(); CHECK(sweep("bigram", op_bigram) > 0); }
TEST(oom_cleanup) {
  mlsys_relm_gpt2_free(M);
  M = NULL;
  CHECK_EQ_INT(oom_live, 0);
}

TEST_MAIN()
