/* tests/test_pipe_jpeg.c — the JPEG training pipeline of mlsys_pipeline.h on real photographs (spec §7.5, §7.6 cases
   17–20): the files named .jpg that Debian's opencv-doc ships (JPEGs and 3 PNGs), installed by
   scripts/install-deps.sh. Determinism across workers × parallelism (SHA-256 of the first batches), error policies
   on a truncated JPEG and on the PNGs (a trace where every image fails is an error naming the files; skipped files
   are counted once and named), tuning end to end from NAIVE (the configuration Plumber's LP and cache rule give),
   and the cache rule's choice between the raw files and the decoded images by memory. Tuning windows are numbers
   of batches, never times, so the sizes and counts the checks rest on do not move with the machine's load; rates
   are printed (bench/bench_pipeline.c measures Plumber against NAIVE and the LP). */
#define MLSYS_IMPLEMENTATION
#include "mlsys_pipeline.h"
#include "tests/test.h"
#include <openssl/evp.h>
#include <unistd.h>

#include "tests/opencv_corpus.h"

/* SHA-256 over the first nb batches (every component's bytes) */
static int hash_batches(mlsys_pipe *p, int root, int nb, unsigned char md[32], int64_t *skipped_node_count, int skip_node) {
  mlsys_pipe_iter *it;
  mlsys_pipe_elem e;
  EVP_MD_CTX *ctx = EVP_MD_CTX_new();
  unsigned int len = 32;
  int end = 0, i, c;
  if (mlsys_pipe_open(p, root, &it)) { EVP_MD_CTX_free(ctx); return -1; }
  EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
  for (i = 0; i < nb; i++) {
    if (mlsys_pipe_next(it, &e, &end) || end) { mlsys_pipe_close(it); EVP_MD_CTX_free(ctx); return -1; }
    for (c = 0; c < e.ncomp; c++) EVP_DigestUpdate(ctx, e.comp[c].data, e.comp[c].nbytes);
    mlsys_pipe_elem_release(&e);
  }
  if (skipped_node_count) *skipped_node_count = mlsys_pipe_skipped(it, skip_node);
  mlsys_pipe_close(it);
  EVP_DigestFinal_ex(ctx, md, &len);
  EVP_MD_CTX_free(ctx);
  return 0;
}

TEST(determinism_sha256_workers_x_parallelism) {
  /* §7.6 #17: decode → random-resized-crop 224 → flip → batch 32, seed 7: the first 20 batches are bit-identical for
     workers {1, 2, 4} × parallelism {1, 3}; a different seed changes them */
  static const int W[3] = {1, 2, 4}, P[2] = {1, 3};
  unsigned char md0[32], md[32];
  int i, j, first = 1;
  NEED_CORPUS();
  for (i = 0; i < 3; i++)
    for (j = 0; j < 2; j++) {
      mlsys_pipe *p;
      mlsys_pipe_desc pd;
      mlsys_pipe_jpeg_desc jd;
      mlsys_pipe_jpeg_nodes nd;
      memset(&pd, 0, sizeof pd); memset(&jd, 0, sizeof jd);
      pd.workers = W[i]; pd.seed = 7;
      jd.batch = 32; jd.no_normalize = 1;
      REQUIRE_OK(mlsys_pipe_create(&pd, &p));
      REQUIRE_OK(mlsys_pipe_jpeg_pipeline(p, (const char *const *)g_paths, g_n, &jd, &nd));
      REQUIRE_OK(mlsys_pipe_set_knob(p, nd.decode, MLSYS_PIPE_KNOB_PARALLELISM, P[j]));
      REQUIRE_OK(mlsys_pipe_set_knob(p, nd.crop, MLSYS_PIPE_KNOB_PARALLELISM, P[j]));
      REQUIRE(hash_batches(p, nd.root, 20, md, NULL, 0) == 0);
      if (first) memcpy(md0, md, 32);
      CHECK_MSG(memcmp(md, md0, 32) == 0, "workers %d parallelism %d: different batches", W[i], P[j]);
      first = 0;
      mlsys_pipe_destroy(p);
    }
  {
    /* seed 8 vs seed 7 over the same 2 batches */
    mlsys_pipe *p;
    mlsys_pipe_desc pd;
    mlsys_pipe_jpeg_desc jd;
    mlsys_pipe_jpeg_nodes nd;
    unsigned char a[32], b[32];
    memset(&pd, 0, sizeof pd); memset(&jd, 0, sizeof jd);
    jd.batch = 32; jd.no_normalize = 1;
    pd.seed = 7;
    REQUIRE_OK(mlsys_pipe_create(&pd, &p));
    REQUIRE_OK(mlsys_pipe_jpeg_pipeline(p, (const char *const *)g_paths, g_n, &jd, &nd));
    REQUIRE(hash_batches(p, nd.root, 2, a, NULL, 0) == 0);
    mlsys_pipe_destroy(p);
    pd.seed = 8;
    REQUIRE_OK(mlsys_pipe_create(&pd, &p));
    REQUIRE_OK(mlsys_pipe_jpeg_pipeline(p, (const char *const *)g_paths, g_n, &jd, &nd));
    REQUIRE(hash_batches(p, nd.root, 2, b, NULL, 0) == 0);
    mlsys_pipe_destroy(p);
    CHECK(memcmp(a, b, 32) != 0);
  }
}

/* a directory of 6 real photos, a 400-byte truncated copy of the first in the middle, and one PNG named .jpg */
static int make_error_dir(char *dir, size_t cap, char **paths /* 8 */) {
  int i, k = 0;
  snprintf(dir, cap, "/tmp/mlsys_pipe_jpeg_XXXXXX");
  if (!mkdtemp(dir)) return -1;
  for (i = 0; k < 8; i++) {
    char path[600], *data;
    size_t len;
    FILE *f;
    if (i >= g_n) return -1;
    if (mlsys_read_file(g_paths[i], &data, &len)) return -1;
    if (mlsys_pipe_image_sniff((const uint8_t *)data, len) != MLSYS_PIPE_IMG_JPEG || len < 2000) { mlsys_free(data); continue; }
    snprintf(path, sizeof path, "%s/img%d.jpg", dir, k);
    f = fopen(path, "wb");
    fwrite(data, 1, k == 3 ? 400 : len, f);   /* img3 = the first 400 bytes: truncated */
    fclose(f);
    mlsys_free(data);
    paths[k++] = mlsys_strdup(path);
    if (k == 7) {
      /* img7: opencv-doc's board.jpg, a PNG */
      char png[600];
      snprintf(png, sizeof png, "%s/opencv4/html/board.jpg", OPENCV_DIR);
      if (mlsys_read_file(png, &data, &len)) return -1;
      snprintf(path, sizeof path, "%s/img7.jpg", dir);
      f = fopen(path, "wb"); fwrite(data, 1, len, f); fclose(f);
      mlsys_free(data);
      paths[k++] = mlsys_strdup(path);
    }
  }
  return 0;
}

TEST(errors_truncated_and_png_named_jpg) {
  /* §7.6 #18: the truncated JPEG fails naming its seq (FAIL) or is skipped and counted (SKIP), on both decoders; the
     PNG named .jpg is rejected by the libjpeg path naming PNG */
  char dir[64], *paths[8], cmd[128];
  int dec, mode, i;
  NEED_CORPUS();
  REQUIRE(make_error_dir(dir, sizeof dir, paths) == 0);
  for (dec = MLSYS_PIPE_DEC_STB; dec <= MLSYS_PIPE_DEC_LIBJPEG; dec++)
    for (mode = 0; mode < 2; mode++) {
      mlsys_pipe *p;
      mlsys_pipe_iter *it;
      mlsys_pipe_elem e;
      mlsys_pipe_jpeg_desc jd;
      mlsys_pipe_jpeg_nodes nd;
      mlsys_status st = MLSYS_OK;
      int end = 0, n = 0;
      memset(&jd, 0, sizeof jd);
      jd.batch = 1; jd.epochs = 1; jd.decoder = dec; jd.no_normalize = 1;
      jd.fail_on_error = mode == 0;
      REQUIRE_OK(mlsys_pipe_create(NULL, &p));
      REQUIRE_OK(mlsys_pipe_jpeg_pipeline(p, (const char *const *)paths, 8, &jd, &nd));
      REQUIRE_OK(mlsys_pipe_open(p, nd.root, &it));
      for (;;) {
        st = mlsys_pipe_next(it, &e, &end);
        if (st || end) break;
        CHECK_EQ_INT(e.comp[0].shape[1], 224);
        mlsys_pipe_elem_release(&e);
        n++;
      }
      if (mode == 0) {
        CHECK_EQ_INT(st, MLSYS_ERR_PARSE);
        CHECK_EQ_INT(n, 3);
        CHECK_CONTAINS(mlsys_last_error(), "seq 3");
        CHECK_CONTAINS(mlsys_last_error(), "truncated");
        CHECK_CONTAINS(mlsys_last_error(), "decode");
      } else {
        CHECK_OK(st);
        CHECK_EQ_INT(n, 6);   /* 8 files − the truncated one − the PNG */
        CHECK_EQ_INT(mlsys_pipe_skipped(it, nd.decode), 2);
      }
      mlsys_pipe_close(it);
      mlsys_pipe_destroy(p);
    }
  {
    /* the PNG alone, FAIL: its error names PNG */
    mlsys_pipe *p;
    mlsys_pipe_iter *it;
    mlsys_pipe_elem e;
    mlsys_pipe_jpeg_desc jd;
    mlsys_pipe_jpeg_nodes nd;
    int end = 0;
    memset(&jd, 0, sizeof jd);
    jd.batch = 1; jd.epochs = 1; jd.fail_on_error = 1;
    REQUIRE_OK(mlsys_pipe_create(NULL, &p));
    REQUIRE_OK(mlsys_pipe_jpeg_pipeline(p, (const char *const *)(paths + 7), 1, &jd, &nd));
    REQUIRE_OK(mlsys_pipe_open(p, nd.root, &it));
    CHECK_EQ_INT(mlsys_pipe_next(it, &e, &end), MLSYS_ERR_PARSE);
    CHECK_CONTAINS(mlsys_last_error(), "PNG");
    mlsys_pipe_close(it);
    mlsys_pipe_destroy(p);
  }
  for (i = 0; i < 8; i++) mlsys_free(paths[i]);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd)) {}
}

TEST(trace_of_undecodable_files_names_them) {
  /* issue 19 #3: a pipeline whose every file fails to decode (the truncated JPEG and the PNG of the error directory)
     used to trace as an empty window (X = 0, a bottleneck, an LP bound): now the trace and the tuner fail with the
     first error's status, naming the files and the causes. With the six good photos beside them, the window is
     fine, and it counts and names the two skipped files (once each, however many passes the repeat made). */
  char dir[64], *paths[8], *bad[2], cmd[128];
  int i;
  NEED_CORPUS();
  REQUIRE(make_error_dir(dir, sizeof dir, paths) == 0);
  bad[0] = paths[3]; bad[1] = paths[7];
  {
    mlsys_pipe *p;
    mlsys_pipe_jpeg_desc jd;
    mlsys_pipe_jpeg_nodes nd;
    mlsys_pipe_snapshot w;
    mlsys_pipe_tune_desc td;
    mlsys_pipe_tune_result r;
    memset(&jd, 0, sizeof jd);
    jd.batch = 2;
    REQUIRE_OK(mlsys_pipe_create(NULL, &p));
    REQUIRE_OK(mlsys_pipe_jpeg_pipeline(p, (const char *const *)bad, 2, &jd, &nd));
    CHECK_EQ_INT(mlsys_pipe_trace_elements(p, nd.root, 4, 1, &w, NULL), MLSYS_ERR_PARSE);
    CHECK_CONTAINS(mlsys_last_error(), "no element reached the root");
    CHECK_CONTAINS(mlsys_last_error(), "2 elements were skipped");
    CHECK_CONTAINS(mlsys_last_error(), "img3.jpg");
    CHECK_CONTAINS(mlsys_last_error(), "truncated");
    CHECK_CONTAINS(mlsys_last_error(), "img7.jpg");
    CHECK_CONTAINS(mlsys_last_error(), "PNG");
    CHECK_EQ_INT(mlsys_pipe_trace(p, nd.root, 0.2, 0.05, &w, NULL), MLSYS_ERR_PARSE);
    memset(&td, 0, sizeof td);
    td.trace_elements = 4; td.machine.cores = 2;
    CHECK_EQ_INT(mlsys_pipe_tune(p, nd.root, &td, &r, NULL), MLSYS_ERR_PARSE);
    CHECK_CONTAINS(mlsys_last_error(), "img3.jpg");
    mlsys_pipe_destroy(p);
    /* all eight: 6 decode */
    REQUIRE_OK(mlsys_pipe_create(NULL, &p));
    REQUIRE_OK(mlsys_pipe_jpeg_pipeline(p, (const char *const *)paths, 8, &jd, &nd));
    REQUIRE_OK(mlsys_pipe_trace_elements(p, nd.root, 12, 2, &w, NULL));   /* 28 photos: 4 passes over the 6 good */
    CHECK_EQ_INT(w.skipped_distinct, 2);
    REQUIRE(w.nskip_log == 2);
    CHECK_CONTAINS(w.skip_log[0], "img3.jpg");
    CHECK_CONTAINS(w.skip_log[0], "truncated");
    CHECK_CONTAINS(w.skip_log[1], "img7.jpg");
    for (i = 0; i < w.nops; i++)
      if (w.op[i].node == nd.decode) CHECK(w.op[i].skipped >= 4);   /* the window's own passes skip them again */
    mlsys_pipe_snapshot_free(&w);
    mlsys_pipe_destroy(p);
  }
  for (i = 0; i < 8; i++) mlsys_free(paths[i]);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd)) {}
}

static double naive_then_tune(int method, mlsys_pipe_tune_result *r, int64_t nfiles, double *x_naive, mlsys_pipe *pipe_out[1],
                              mlsys_pipe_jpeg_nodes *nodes) {
  mlsys_pipe *p;
  mlsys_pipe_jpeg_desc jd;
  mlsys_pipe_jpeg_nodes nd;
  mlsys_pipe_tune_desc td;
  mlsys_pipe_tune_result rn;
  memset(&jd, 0, sizeof jd);
  jd.batch = 32; jd.drop_remainder = 1; jd.no_normalize = 1;   /* §7.6 #17's pipeline: decode, crop 224, flip, batch 32 */
  memset(&td, 0, sizeof td);
  td.trace_elements = 3; td.warmup_elements = 1; td.machine.cores = 2;
  td.machine.mem_free_bytes = 1024.0 * 1048576;   /* the 100 decoded photos (~70 MB) fit: a cache after decode */
  if (x_naive) {
    if (mlsys_pipe_create(NULL, &p) || mlsys_pipe_jpeg_pipeline(p, (const char *const *)g_paths, nfiles, &jd, &nd)) return -1;
    td.method = MLSYS_PIPE_TUNE_NAIVE;
    if (mlsys_pipe_tune(p, nd.root, &td, &rn, NULL)) return -1;
    *x_naive = rn.x_measured;
    mlsys_pipe_tune_result_free(&rn);
    mlsys_pipe_destroy(p);
  }
  if (mlsys_pipe_create(NULL, &p) || mlsys_pipe_jpeg_pipeline(p, (const char *const *)g_paths, nfiles, &jd, &nd)) return -1;
  td.method = method;
  td.passes = method == MLSYS_PIPE_TUNE_PLUMBER ? 0 : 1;   /* the baselines are only run here: one step each */
  if (mlsys_pipe_tune(p, nd.root, &td, r, method == MLSYS_PIPE_TUNE_PLUMBER ? stdout : NULL)) return -1;
  if (pipe_out) { *pipe_out = p; *nodes = nd; }
  else mlsys_pipe_destroy(p);
  return r->x_measured;
}

TEST(tuning_end_to_end_configures_by_the_lp) {
  /* §7.6 #19 on 100 of the photos, from NAIVE: Plumber caches the decoded images (they fit 1 GiB, and everything above
     the crop is random), gives every parallel operator 1..2 of the 2 cores, puts a prefetch on top and measures a
     3-batch window; the other methods run too. The speeds (Plumber against NAIVE, the measurement against the LP at
     the cores obtained) are printed: they depend on the machine and its load, and bench/bench_pipeline.c (`tuners`,
     `predict`) is where they are judged. */
  mlsys_pipe_tune_result r;
  mlsys_pipe *p = NULL;
  mlsys_pipe_jpeg_nodes nd;
  double xn = 0, x;
  static const int others[3] = {MLSYS_PIPE_TUNE_HEURISTIC, MLSYS_PIPE_TUNE_AUTOTUNE, MLSYS_PIPE_TUNE_LOCAL};
  int i, v, kind = -1, in = -1;
  NEED_CORPUS();
  x = naive_then_tune(MLSYS_PIPE_TUNE_PLUMBER, &r, 100, &xn, &p, &nd);
  REQUIRE(x > 0 && p);
  printf("  naive %.2f batches/s; plumber %.2f (x%.2f) at %.2f cores, LP there %.2f, bottleneck %s, cache %s\n", xn, x, x / xn,
         r.cores_used, r.x_hat, r.bottleneck, r.cache_node >= 0 ? "inserted" : "none");
  CHECK_EQ_INT(r.cache_after, nd.decode);
  CHECK_EQ_INT(r.last.op[0].produced, 3);
  CHECK(r.x_pred > 0 && r.bottleneck[0] && strcmp(r.bottleneck, "-"));
  REQUIRE_OK(mlsys_pipe_node_info(p, r.root, &kind, &in, NULL));
  CHECK_EQ_INT(kind, MLSYS_PIPE_OP_PREFETCH);
  for (v = r.root; v >= 0; v = in) {
    int64_t par = 0;
    REQUIRE_OK(mlsys_pipe_node_info(p, v, &kind, &in, NULL));
    if (kind == MLSYS_PIPE_OP_MAP && !mlsys_pipe_get_knob(p, v, MLSYS_PIPE_KNOB_PARALLELISM, &par))
      CHECK_MSG(par >= 1 && par <= 2, "node %d: parallelism %lld with 2 cores", v, (long long)par);
  }
  mlsys_pipe_tune_result_free(&r);
  mlsys_pipe_destroy(p);
  for (i = 0; i < 3; i++) {
    x = naive_then_tune(others[i], &r, 100, NULL, NULL, NULL);
    printf("  %-10s %.2f batches/s at %.2f cores (LP there %.2f), bottleneck %s\n", mlsys_pipe_tune_name(others[i]), x, r.cores_used,
           r.x_hat, r.bottleneck);
    CHECK(x > 0);
    mlsys_pipe_tune_result_free(&r);
  }
}

TEST(cache_rule_picks_files_or_decoded_by_memory) {
  /* §7.6 #20: 64 MiB free (budget 60.4 MB): the decoded corpus does not fit, the raw files do → cache after files;
     1 GiB free (966 MB): cache after decode; never above the random crop. The sizes are estimated from the files the
     window read (Appendix 2). A window of 8 batches of 8 reads the same 64 photos on any machine (NAIVE runs inline,
     in path order: photos 8..71), whose estimates are 43.0 MB of files and 697.0 MB decoded (the whole corpus: 30.6
     and 420.9 MB); a 1-s window read however many photos the machine's load allowed, and its estimate moved with
     them (issue 19 #2: past the budget, once) */
  static const double mem[2] = {64.0 * 1048576, 1024.0 * 1048576};
  int k;
  NEED_CORPUS();
  for (k = 0; k < 2; k++) {
    mlsys_pipe *p;
    mlsys_pipe_jpeg_desc jd;
    mlsys_pipe_jpeg_nodes nd;
    mlsys_pipe_tune_desc td;
    mlsys_pipe_tune_result r;
    memset(&jd, 0, sizeof jd);
    jd.batch = 8;
    jd.size = 64; jd.no_normalize = 1;   /* the work above the crop does not enter the rule: keep it small */
    memset(&td, 0, sizeof td);
    td.method = MLSYS_PIPE_TUNE_PLUMBER; td.passes = 1; td.no_measure = 1; td.no_prefetch = 1;
    td.trace_elements = 8; td.warmup_elements = 1; td.machine.cores = 2; td.machine.mem_free_bytes = mem[k];
    REQUIRE_OK(mlsys_pipe_create(NULL, &p));
    REQUIRE_OK(mlsys_pipe_jpeg_pipeline(p, (const char *const *)g_paths, g_n, &jd, &nd));
    REQUIRE_OK(mlsys_pipe_tune(p, nd.root, &td, &r, stdout));
    CHECK_EQ_INT(r.cache_after, k == 0 ? nd.files : nd.decode);
    if (r.cache_node >= 0) {
      int in = -1;
      REQUIRE_OK(mlsys_pipe_node_info(p, k == 0 ? nd.decode : nd.repeat, NULL, &in, NULL));
      CHECK_EQ_INT(in, r.cache_node);   /* the operator above now reads the cache */
    }
    mlsys_pipe_tune_result_free(&r);
    mlsys_pipe_destroy(p);
  }
}

int main(int argc, char **argv) {
  int rc = test__run(argc, argv);
  corpus_free();
  return rc;
}
