/* tests/test_index_peer.c — workload files (mlsys_index.h, WORKLOAD FILES) and the real-peer path of issue 21:
   the C writer and reader round trip; every kind of damage is refused with a message naming it (and every
   truncation); `mlsys index workload` writes exactly the workload `bench` runs; the peer driver
   (bench/peers/alex/alex_driver.cpp, built by make against std::map as build/peer_stdmap, since CI has no ALEX
   checkout) reads our files, replays them and catches wrong answers; and `mlsys index bench --peer alex` runs the
   driver, takes medians and reports ratios that agree with its own numbers. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_index.h"
#include "tests/test.h"
#include "tests/cli_run.h"
#include "tests/pilot_file.h"

#include <math.h>

static mlsys_status make_wl(const char *spec, size_t init, size_t ops, double frac, uint64_t seed, mlsys_index_workload *w) {
  uint64_t *keys = NULL;
  size_t n = 0;
  mlsys_index_workload_opts o;
  mlsys_status st;
  memset(&o, 0, sizeof o);
  if ((st = mlsys_index_keys_load(spec, seed, &keys, &n))) return st;
  o.n_init = init;
  o.n_ops = ops;
  o.insert_frac = frac;
  o.seed = seed;
  st = mlsys_index_workload_make(keys, n, &o, w);
  mlsys_free(keys);
  return st;
}

static int same_workload(const mlsys_index_workload *a, const mlsys_index_workload *b) {
  return a->n_bulk == b->n_bulk && a->trace.n == b->trace.n && a->n_inserts == b->n_inserts && a->n_finds == b->n_finds &&
         a->exhausted == b->exhausted && !memcmp(a->bulk, b->bulk, a->n_bulk * 8) && !memcmp(a->trace.key, b->trace.key, a->trace.n * 8) &&
         !memcmp(a->trace.op, b->trace.op, a->trace.n);
}

/* The stand-in peer beside the mlsys binary under test (build/ or build-san/). */
static const char *peer_bin(void) {
  static char p[600];
  const char *b = bin(), *slash = strrchr(b, '/');
  snprintf(p, sizeof p, "%.*speer_stdmap", slash ? (int)(slash - b + 1) : 0, b);
  return p;
}

static double jnum(const mlsys_json *o, const char *key) {
  const mlsys_json *v = mlsys_json_get(o, key);
  return v && v->type == MLSYS_JSON_NUMBER ? v->num : NAN;
}

/* ---- the C writer and reader ---- */

TEST(workload_file_round_trip) {
  static const double fracs[] = {0, 0.15, 0.85, 1};
  const char *p = tmp_path("wl_rt");
  int f;
  for (f = 0; f < 4; f++) {
    mlsys_index_workload w, back;
    REQUIRE_OK(make_wl("gen:osm_like:60k", 20000, 50000, fracs[f], 7 + (uint64_t)f, &w));
    REQUIRE_OK(mlsys_index_workload_write(p, &w));
    REQUIRE_OK(mlsys_index_workload_read(p, &back));
    CHECK_MSG(same_workload(&w, &back), "insert fraction %g: the workload read back differs", fracs[f]);
    /* 42.5k or 50k inserts need more than the 40k spare keys: the flag must survive */
    CHECK_EQ_INT(back.exhausted, f >= 2);
    mlsys_index_workload_free(&w);
    mlsys_index_workload_free(&back);
  }
  unlink(p);
}

TEST(workload_file_damage_named) {
  const char *p = tmp_path("wl_bad");
  mlsys_index_workload w, back;
  uint8_t *b, *c;
  size_t len, cut, nb;
  struct { size_t off; uint8_t val; int fix; const char *says; } cases[] = {
      {0, 'X', 1, "magic"},            /* not a workload file */
      {8, 2, 1, "version 2"},          /* a later version */
      {12, 2, 1, "unknown flags"},
      {16, 0xff, 1, "need"},           /* n_bulk no longer matches the size */
      {0, 0, 0, "CRC"},                /* offset filled in below: a flipped key byte with the CRC left alone */
      {0, 7, 1, "has code 7"},         /* offset below: the first operation code */
      {0, 0, 1, "not above"},          /* offset below: the second bulk key made equal to the first */
      {32, 0, 1, "says 0 inserts"},    /* the insert count in the header */
  };
  size_t i;
  REQUIRE_OK(make_wl("gen:uniform:30k", 10000, 5000, 0.5, 3, &w));
  REQUIRE_OK(mlsys_index_workload_write(p, &w));
  REQUIRE((b = read_all(p, &len)) != NULL);
  REQUIRE((c = (uint8_t *)malloc(len)) != NULL);
  nb = w.n_bulk;
  CHECK_EQ_INT(len, 40 + 8 * nb + 9 * w.trace.n + 4);
  cases[4].off = 40 + 8 * 5 + 3;
  cases[5].off = 40 + 8 * nb + 8 * w.trace.n;
  for (i = 0; i < sizeof cases / sizeof *cases; i++) {
    memcpy(c, b, len);
    if (i == 4) c[cases[i].off] ^= 0x10;
    else if (i == 6) memcpy(c + 40 + 8, c + 40, 8);
    else if (i == 7) memset(c + 32, 0, 8);
    else c[cases[i].off] = cases[i].val;
    if (cases[i].fix) fix_crc(c, len);
    CHECK_MSG(mlsys_index_workload_parse(c, len, "damaged", &back) == MLSYS_ERR_PARSE, "case %zu (%s) was accepted", i, cases[i].says);
    CHECK_CONTAINS(mlsys_last_error(), cases[i].says);
    CHECK_CONTAINS(mlsys_last_error(), "damaged");
    CHECK(back.bulk == NULL && back.trace.key == NULL);   /* nothing handed out on failure */
  }
  /* every truncation is refused (never read past the end) */
  for (cut = 0; cut < len; cut += cut < 200 ? 1 : 997)
    CHECK_MSG(mlsys_index_workload_parse(b, cut, "cut", &back) == MLSYS_ERR_PARSE, "a file cut to %zu bytes was accepted", cut);
  /* and the undamaged bytes still parse */
  CHECK_OK(mlsys_index_workload_parse(b, len, "intact", &back));
  CHECK(same_workload(&w, &back));
  mlsys_index_workload_free(&back);
  /* the writer refuses what the reader would refuse, and leaves no file behind */
  w.trace.op[0] = 9;
  CHECK(mlsys_index_workload_write(tmp_path("wl_never"), &w) == MLSYS_ERR_ARG);
  CHECK(access(tmp_path("wl_never"), F_OK) != 0);
  CHECK(mlsys_index_workload_read("/nonexistent/dir/wl.bin", &back) == MLSYS_ERR_IO);
  CHECK_CONTAINS(mlsys_last_error(), "/nonexistent/dir/wl.bin");
  free(b);
  free(c);
  mlsys_index_workload_free(&w);
  unlink(p);
}

/* ---- `mlsys index workload` ---- */

TEST(cli_workload_is_the_bench_workload) {
  const char *p = tmp_path("wl_cli");
  char args[1024];
  mlsys_index_workload ref, got;
  mlsys_json_doc doc;
  run_result r;
  snprintf(args, sizeof args, "index workload --keys gen:lognormal:80k --init 30k --ops 40k --insert-frac 0.3 --seed 5 --out %s --json", p);
  r = run(args);
  CHECK_EQ_INT(r.code, 0);
  REQUIRE(r.out && mlsys_json_parse(r.out, strlen(r.out), "stdout", &doc) == MLSYS_OK);
  REQUIRE_OK(make_wl("gen:lognormal:80k", 30000, 40000, 0.3, 5, &ref));
  REQUIRE_OK(mlsys_index_workload_read(p, &got));
  CHECK(same_workload(&ref, &got));
  CHECK_EQ_INT((size_t)jnum(doc.root, "n_bulk"), 30000);
  CHECK_EQ_INT((size_t)jnum(doc.root, "ops"), 40000);
  CHECK_EQ_INT((size_t)jnum(doc.root, "inserts"), ref.n_inserts);
  CHECK_EQ_INT((size_t)jnum(doc.root, "bytes"), 40 + 8 * 30000 + 9 * 40000 + 4);
  mlsys_json_doc_free(&doc);
  run_free(&r);
  mlsys_index_workload_free(&ref);
  mlsys_index_workload_free(&got);
  unlink(p);
  r = run("index workload --keys gen:lognormal:1k");   /* no --out: a usage error */
  CHECK_EQ_INT(r.code, 2);
  CHECK_CONTAINS(r.err, "--out");
  run_free(&r);
  r = run("index workload --keys gen:lognormal:1k --out /nonexistent/dir/wl.bin");
  CHECK_EQ_INT(r.code, 1);
  CHECK_CONTAINS(r.err, "/nonexistent/dir/wl.bin");
  run_free(&r);
}

/* ---- the peer driver (std::map build) ---- */

TEST(driver_replays_our_file) {
  const char *p = tmp_path("wl_drv");
  char cmd[1400];
  mlsys_index_workload w;
  mlsys_json_doc doc;
  run_result r;
  if (access(peer_bin(), X_OK)) { CHECK_MSG(0, "%s was not built (make builds it)", peer_bin()); return; }
  REQUIRE_OK(make_wl("real:cities", 50000, 120000, 0.5, 2, &w));
  REQUIRE_OK(mlsys_index_workload_write(p, &w));
  snprintf(cmd, sizeof cmd, "%s %s --eif 0.5 --warmup 1000", peer_bin(), p);
  r = run_shell(cmd);
  CHECK_EQ_INT(r.code, 0);
  REQUIRE(r.out && mlsys_json_parse(r.out, strlen(r.out), "driver", &doc) == MLSYS_OK);
  CHECK_EQ_INT((size_t)jnum(doc.root, "n_bulk"), w.n_bulk);
  CHECK_EQ_INT((size_t)jnum(doc.root, "ops"), w.trace.n);
  CHECK_EQ_INT((size_t)jnum(doc.root, "inserts"), w.n_inserts);
  CHECK_EQ_INT((size_t)jnum(doc.root, "finds"), w.n_finds);
  CHECK_EQ_INT((size_t)jnum(doc.root, "wrong"), 0);
  CHECK(jnum(doc.root, "eif") == 0.5);
  /* std::map holds n_bulk + inserts keys; the counted heap bytes cover at least their pairs */
  CHECK(jnum(doc.root, "bytes") >= 16.0 * (double)(w.n_bulk + w.n_inserts));
  mlsys_json_doc_free(&doc);
  run_free(&r);

  /* a lookup of a key that was never inserted: the driver must count it wrong and exit 3 */
  w.trace.op[w.trace.n - 1] = MLSYS_INDEX_OP_FIND;
  w.n_inserts -= w.trace.op[w.trace.n - 1] == MLSYS_INDEX_OP_INSERT;
  {
    size_t i, ins = 0;
    for (i = 0; i < w.trace.n; i++) ins += w.trace.op[i];
    w.n_inserts = ins;
    w.n_finds = w.trace.n - ins;
  }
  w.trace.key[w.trace.n - 1] = 12345;   /* not an S2 cell id of any city: never present */
  REQUIRE_OK(mlsys_index_workload_write(p, &w));
  r = run_shell(cmd);
  CHECK_EQ_INT(r.code, 3);
  REQUIRE(r.out && mlsys_json_parse(r.out, strlen(r.out), "driver", &doc) == MLSYS_OK);
  CHECK_EQ_INT((size_t)jnum(doc.root, "wrong"), 1);
  mlsys_json_doc_free(&doc);
  run_free(&r);

  /* a damaged file: refused with a message, exit 1 */
  {
    size_t len;
    uint8_t *b = read_all(p, &len);
    FILE *f;
    REQUIRE(b != NULL);
    b[100] ^= 1;
    REQUIRE((f = fopen(p, "wb")) != NULL);
    fwrite(b, 1, len, f);
    fclose(f);
    free(b);
  }
  r = run_shell(cmd);
  CHECK_EQ_INT(r.code, 1);
  CHECK_CONTAINS(r.err, "CRC");
  run_free(&r);
  mlsys_index_workload_free(&w);
  unlink(p);
}

/* ---- `mlsys index bench --peer alex` with the stand-in ---- */

TEST(cli_peer_medians_and_ratios) {
  char args[1400];
  mlsys_json_doc doc;
  const mlsys_json *peer, *bl;
  run_result r;
  double best;
  if (access(peer_bin(), X_OK)) { CHECK_MSG(0, "%s was not built (make builds it)", peer_bin()); return; }
  snprintf(args, sizeof args,
           "index bench --keys gen:lognormal:100k --init 50k --ops 30k --insert-frac 0.4 --config flog --peer alex --peer-bin %s "
           "--reps 3 --json",
           peer_bin());
  r = run(args);
  CHECK_EQ_INT(r.code, 0);
  REQUIRE(r.out && mlsys_json_parse(r.out, strlen(r.out), "stdout", &doc) == MLSYS_OK);
  peer = mlsys_json_get(doc.root, "peer");
  bl = mlsys_json_get(doc.root, "baselines");
  REQUIRE(peer && peer->type == MLSYS_JSON_OBJECT && bl);
  CHECK(jnum(peer, "reps") == 3);
  CHECK(jnum(peer, "alex") > 0 && jnum(peer, "alex_eif") > 0 && jnum(peer, "mine_alex") > 0);
  best = jnum(peer, "alex") > jnum(peer, "alex_eif") ? jnum(peer, "alex") : jnum(peer, "alex_eif");
  CHECK(jnum(peer, "alex_best") == best);
  CHECK_NEAR(jnum(doc.root, "speedup_vs_peer"), jnum(doc.root, "mops") / best, 1e-4 * jnum(doc.root, "speedup_vs_peer"));
  CHECK_NEAR(jnum(doc.root, "mine_vs_peer"), jnum(peer, "mine_alex") / jnum(peer, "alex_eif"), 1e-4 * jnum(doc.root, "mine_vs_peer"));
  CHECK(jnum(bl, "alex") == jnum(peer, "mine_alex"));
  {   /* each arm's rounds are reported, and the medians are theirs */
    const mlsys_json *rd = mlsys_json_get(doc.root, "rounds"), *ra = rd ? mlsys_json_get(rd, "alex") : NULL;
    double v[3];
    int i;
    REQUIRE(ra && ra->type == MLSYS_JSON_ARRAY && ra->count == 3);
    for (i = 0; i < 3; i++) v[i] = mlsys_json_at(ra, i)->num;
    CHECK_NEAR(jnum(peer, "alex"), v[0] + v[1] + v[2] - fmax(v[0], fmax(v[1], v[2])) - fmin(v[0], fmin(v[1], v[2])),
               1e-5 * jnum(peer, "alex"));
    CHECK_EQ_INT(mlsys_json_get(rd, "maple")->count, 3);
  }
  /* the stand-in's memory: at least 16 bytes for each of the 50k + ~12k keys */
  CHECK(jnum(peer, "alex_bytes") >= 16.0 * 60000);
  CHECK(!strcmp(mlsys_json_get(doc.root, "config")->str, "flog:mf=64,mnf=64,nf=4"));
  mlsys_json_doc_free(&doc);
  run_free(&r);
}

TEST(cli_peer_errors) {
  run_result r = run("index bench --keys gen:lognormal:10k --ops 1k --config alex --peer alex --peer-bin /nonexistent/alex_driver");
  CHECK_EQ_INT(r.code, 1);
  CHECK_CONTAINS(r.err, "/nonexistent/alex_driver");
  CHECK_CONTAINS(r.err, "build.sh");
  run_free(&r);
  r = run("index bench --keys gen:lognormal:10k --ops 1k --config alex --peer btrfs");
  CHECK_EQ_INT(r.code, 2);
  CHECK_CONTAINS(r.err, "btrfs");
  run_free(&r);
  r = run("index bench --keys gen:lognormal:10k --ops 1k --config alex --reps 3");
  CHECK_EQ_INT(r.code, 2);
  CHECK_CONTAINS(r.err, "--peer");
  run_free(&r);
  r = run("index bench --keys gen:lognormal:10k --ops 1k --config alex --peer alex --reps 0");
  CHECK_EQ_INT(r.code, 2);
  run_free(&r);
  /* a driver that fails: /bin/false exits 1 */
  r = run("index bench --keys gen:lognormal:10k --ops 1k --config alex --peer alex --peer-bin /bin/false");
  CHECK_EQ_INT(r.code, 1);
  CHECK_CONTAINS(r.err, "exited with status 1");
  run_free(&r);
}

TEST_MAIN()
