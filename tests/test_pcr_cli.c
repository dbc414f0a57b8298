/* `mlsys pcr`: pack the 59 real photos of opencv-doc's examples/data into records (counts, index), skip a PNG named
   .jpg, info (R(k) strictly increasing, R(K) = the file's size from stat), read at 1 and 10 scans (bytes read = R(k),
   MS-SSIM 1 at full fidelity and between 0.5 and 1 at one scan; the reassembled files are JPEGs and, at full fidelity,
   byte-identical to jpegtran's lossless progressive transcode of the source), tune (MS-SSIM profile, the two
   choosers), damaged records (truncated, flipped byte: exit 1 naming the group) and bad usage (exit 2). Runs the
   binary named by $MLSYS_BIN (default build/mlsys). */
#define MLSYS_IMPLEMENTATION
#include "mlsys_pipeline.h"
#include "tests/test.h"
#include "tests/cli_run.h"

#include <sys/stat.h>

#define PHOTOS "/usr/share/doc/opencv-doc/examples/data"
#define PNG_AS_JPG "/usr/share/doc/opencv-doc/opencv4/html/board.jpg"
#define NEED_PHOTOS() \
  do { if (access(PHOTOS, R_OK)) SKIP_DEP("%s missing: run scripts/install-deps.sh (Debian package opencv-doc)", PHOTOS); } while (0)

static double num(const mlsys_json *o, const char *key) {
  const mlsys_json *v = mlsys_json_get(o, key);
  return v && v->type == MLSYS_JSON_NUMBER ? v->num : NAN;
}
static const mlsys_json *arr(const mlsys_json *o, const char *key) {
  const mlsys_json *v = mlsys_json_get(o, key);
  return v && v->type == MLSYS_JSON_ARRAY ? v : NULL;
}
static double at(const mlsys_json *a, int i) {
  const mlsys_json *v = a ? mlsys_json_at(a, i) : NULL;
  return v && v->type == MLSYS_JSON_NUMBER ? v->num : NAN;
}
static int64_t fsize(const char *p) {
  struct stat st;
  return stat(p, &st) ? -1 : (int64_t)st.st_size;
}

/* ---- one temporary directory for the whole binary, the 59 photos packed into it once ---- */
static char g_tmp[64];
static int g_packed = -1;
static void cleanup(void) {
  char cmd[128];
  if (!g_tmp[0]) return;
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
  if (system(cmd)) {}
}
static const char *tmpdir(void) {
  if (!g_tmp[0]) {
    strcpy(g_tmp, "/tmp/mlsys_pcr_cli_XXXXXX");
    if (!mkdtemp(g_tmp)) { g_tmp[0] = 0; return NULL; }
    atexit(cleanup);
  }
  return g_tmp;
}
/* the records DIR/rec/pcr-00000{0,1,2}.pcr (20, 20, 19 images, sorted order) and DIR/rec/index.pcri */
static int packed(void) {
  if (g_packed < 0) {
    char args[512];
    run_result r;
    if (!tmpdir()) return g_packed = 0;
    snprintf(args, sizeof args, "pcr pack --out %s/rec --images-per-record 20 --index " PHOTOS, g_tmp);
    r = run(args);
    g_packed = r.code == 0;
    run_free(&r);
  }
  return g_packed;
}
static const char *rec(int i) {
  static char p[3][128];
  snprintf(p[i], sizeof p[i], "%s/rec/pcr-%06d.pcr", g_tmp, i);
  return p[i];
}
/* `mlsys ARGS` expected to succeed with JSON on stdout */
static int run_json(const char *args, mlsys_json_doc *doc) {
  run_result r = run(args);
  int ok = r.code == 0 && r.out && mlsys_json_parse(r.out, strlen(r.out), "stdout", doc) == MLSYS_OK;
  if (!ok) printf("    `mlsys %s` exited %d: %s\n", args, r.code, r.err ? r.err : "");
  run_free(&r);
  return ok;
}
/* R(0..K) of a record from `info --json` */
static int group_end(const char *path, int64_t *R, int *K) {
  char args[256];
  mlsys_json_doc d;
  const mlsys_json *g;
  int k;
  snprintf(args, sizeof args, "pcr info %s --json", path);
  if (!run_json(args, &d)) return 0;
  g = arr(d.root, "group_end");
  *K = g ? g->count - 1 : -1;
  for (k = 0; g && k < g->count && k <= 64; k++) R[k] = (int64_t)at(g, k);
  mlsys_json_doc_free(&d);
  return *K > 0;
}

TEST(pack_59_photos_into_three_records_with_index) {
  char args[512], ix[128];
  mlsys_json_doc doc;
  const mlsys_json *recs;
  double sum = 0;
  int i;
  NEED_PHOTOS();
  REQUIRE(tmpdir());
  snprintf(args, sizeof args, "pcr pack --out %s/p59 --images-per-record 20 --index --json " PHOTOS, g_tmp);
  REQUIRE(run_json(args, &doc));
  CHECK_EQ_INT(num(doc.root, "images"), 59);
  CHECK_EQ_INT(num(doc.root, "skipped"), 0);
  recs = arr(doc.root, "records");
  REQUIRE(recs && recs->count == 3);
  for (i = 0; i < 3; i++) {
    const mlsys_json *o = mlsys_json_at(recs, i);
    const mlsys_json *p = mlsys_json_get(o, "path");
    char want[128];
    snprintf(want, sizeof want, "%s/p59/pcr-%06d.pcr", g_tmp, i);
    REQUIRE(p && p->type == MLSYS_JSON_STRING);
    CHECK_STR(p->str, want);
    CHECK_EQ_INT(num(o, "images"), i < 2 ? 20 : 19);
    CHECK_EQ_INT(num(o, "bytes"), fsize(want));   /* what stat says, not what the writer meant to write */
    sum += num(o, "bytes");
  }
  CHECK_EQ_INT(num(doc.root, "bytes"), sum);
  /* a lossless transcode with optimised Huffman tables: a little smaller than the source JPEGs */
  CHECK(num(doc.root, "bytes") < num(doc.root, "source_bytes") && num(doc.root, "bytes") > 0.8 * num(doc.root, "source_bytes"));
  mlsys_json_doc_free(&doc);
  snprintf(ix, sizeof ix, "%s/p59/index.pcri", g_tmp);
  CHECK(fsize(ix) > 0);
  /* info reads the index: the same totals */
  snprintf(args, sizeof args, "pcr info %s --json", ix);
  REQUIRE(run_json(args, &doc));
  CHECK_STR(mlsys_json_get(doc.root, "kind")->str, "index");
  CHECK_EQ_INT(num(doc.root, "images"), 59);
  CHECK_EQ_INT(num(doc.root, "groups"), 10);
  CHECK_EQ_INT(at(arr(doc.root, "group_end"), 10), sum);
  CHECK(arr(doc.root, "records") && arr(doc.root, "records")->count == 3);
  mlsys_json_doc_free(&doc);
}

TEST(pack_skips_a_png_named_jpg) {
  char dir[128], args[512], cmd[512];
  run_result r;
  mlsys_json_doc doc;
  NEED_PHOTOS();
  if (access(PNG_AS_JPG, R_OK)) SKIP_DEP("%s missing: run scripts/install-deps.sh (Debian package opencv-doc)", PNG_AS_JPG);
  REQUIRE(tmpdir());
  snprintf(dir, sizeof dir, "%s/mixed", g_tmp);
  snprintf(cmd, sizeof cmd, "mkdir -p %s && cp " PNG_AS_JPG " " PHOTOS "/fruits.jpg " PHOTOS "/baboon.jpg %s/", dir, dir);
  REQUIRE(system(cmd) == 0);
  snprintf(args, sizeof args, "pcr pack --out %s/mixed_out --json %s", g_tmp, dir);
  r = run(args);
  CHECK_EQ_INT(r.code, 0);
  CHECK_CONTAINS(r.err, "board.jpg");
  CHECK_CONTAINS(r.err, "PNG");
  REQUIRE(r.out && mlsys_json_parse(r.out, strlen(r.out), "stdout", &doc) == MLSYS_OK);
  CHECK_EQ_INT(num(doc.root, "skipped"), 1);
  CHECK_EQ_INT(num(doc.root, "images"), 2);
  CHECK(arr(doc.root, "records") && arr(doc.root, "records")->count == 1);
  mlsys_json_doc_free(&doc);
  run_free(&r);
  /* nothing packable: exit 1 */
  snprintf(args, sizeof args, "pcr pack --out %s/png_out %s/board.jpg", g_tmp, dir);
  r = run(args);
  CHECK_EQ_INT(r.code, 1);
  CHECK_CONTAINS(r.err, "no image was packed");
  run_free(&r);
}

TEST(info_group_end_increasing_to_file_size) {
  char args[256];
  mlsys_json_doc doc;
  const mlsys_json *ge, *mb, *sp;
  int k, K;
  NEED_PHOTOS();
  REQUIRE(packed());
  snprintf(args, sizeof args, "pcr info %s --json", rec(0));
  REQUIRE(run_json(args, &doc));
  CHECK_STR(mlsys_json_get(doc.root, "kind")->str, "record");
  CHECK_EQ_INT(num(doc.root, "images"), 20);
  CHECK_EQ_INT(num(doc.root, "groups"), 10);
  CHECK_EQ_INT(num(doc.root, "script_id"), 1);
  ge = arr(doc.root, "group_end"); mb = arr(doc.root, "mean_bytes"); sp = arr(doc.root, "max_speedup");
  REQUIRE(ge && mb && sp);
  K = (int)num(doc.root, "groups");
  REQUIRE(ge->count == K + 1 && mb->count == K + 1 && sp->count == K + 1);
  CHECK_EQ_INT(at(ge, 0), num(doc.root, "prefix_bytes"));
  for (k = 1; k <= K; k++) CHECK_MSG(at(ge, k) > at(ge, k - 1), "R(%d) = %.0f <= R(%d) = %.0f", k, at(ge, k), k - 1, at(ge, k - 1));
  CHECK_EQ_INT(at(ge, K), fsize(rec(0)));
  CHECK_EQ_INT(num(doc.root, "file_bytes"), fsize(rec(0)));
  for (k = 0; k <= K; k++) CHECK_NEAR(at(mb, k), at(ge, k) / 20.0, 1e-6);
  CHECK(mlsys_json_at(sp, 0)->type == MLSYS_JSON_NULL);
  CHECK_NEAR(at(sp, K), 1.0, 1e-12);
  CHECK_NEAR(at(sp, 1), at(ge, K) / at(ge, 1), 1e-9);
  mlsys_json_doc_free(&doc);
}

TEST(read_bytes_and_fidelity) {
  char args[256];
  mlsys_json_doc doc;
  int64_t R[65];
  int K;
  NEED_PHOTOS();
  REQUIRE(packed());
  REQUIRE(group_end(rec(2), R, &K) && K == 10);
  /* one scan, no reference: one read of R(1) bytes (prefix and group 1), no MS-SSIM */
  snprintf(args, sizeof args, "pcr read %s --scans 1 --json", rec(2));
  REQUIRE(run_json(args, &doc));
  CHECK_EQ_INT(num(doc.root, "images"), 19);
  CHECK_EQ_INT(num(doc.root, "scans"), 1);
  CHECK_EQ_INT(num(doc.root, "bytes_read"), R[1]);
  CHECK(num(doc.root, "decode_s") > 0 && num(doc.root, "images_per_s") > 0);
  CHECK(mlsys_json_get(doc.root, "msssim_mean") == NULL);
  mlsys_json_doc_free(&doc);
  /* one scan against full fidelity: visibly degraded but the same pictures */
  snprintf(args, sizeof args, "pcr read %s --scans 1 --reference --json", rec(2));
  REQUIRE(run_json(args, &doc));
  CHECK_EQ_INT(num(doc.root, "bytes_read"), R[1]);   /* the reference reader's bytes are not counted */
  CHECK_MSG(num(doc.root, "msssim_mean") > 0.5 && num(doc.root, "msssim_mean") < 1, "msssim_mean %g", num(doc.root, "msssim_mean"));
  CHECK_MSG(num(doc.root, "psnr_mean") > 15 && num(doc.root, "psnr_mean") < 50, "psnr_mean %g", num(doc.root, "psnr_mean"));
  CHECK_EQ_INT(num(doc.root, "identical"), 0);
  mlsys_json_doc_free(&doc);
  /* every scan: the whole record, pixels identical to the reference */
  snprintf(args, sizeof args, "pcr read %s --scans 10 --reference --decoder stb --json", rec(2));
  REQUIRE(run_json(args, &doc));
  CHECK_EQ_INT(num(doc.root, "bytes_read"), R[10]);
  CHECK_EQ_INT(num(doc.root, "bytes_read"), fsize(rec(2)));
  CHECK(num(doc.root, "msssim_mean") == 1.0);
  CHECK_EQ_INT(num(doc.root, "identical"), 19);
  CHECK(mlsys_json_get(doc.root, "psnr_mean") && mlsys_json_get(doc.root, "psnr_mean")->type == MLSYS_JSON_NULL);
  mlsys_json_doc_free(&doc);
  /* the other I/O paths read the same bytes */
  snprintf(args, sizeof args, "pcr read %s --scans 2 --io mmap --json", rec(2));
  REQUIRE(run_json(args, &doc));
  CHECK_EQ_INT(num(doc.root, "bytes_read"), R[2]);
  mlsys_json_doc_free(&doc);
}

/* the first bytes of a file equal those of buf */
static int same_file(const char *path, const char *buf, size_t n) {
  char *d;
  size_t len;
  int same;
  if (mlsys_read_file(path, &d, &len)) return 0;
  same = len == n && memcmp(d, buf, n) == 0;
  mlsys_free(d);
  return same;
}

TEST(read_out_writes_jpegs) {
  char args[512], dir[128], p[256];
  run_result r;
  char **paths = NULL;
  int64_t n = 0;
  int i;
  NEED_PHOTOS();
  REQUIRE(packed());
  snprintf(dir, sizeof dir, "%s/out2", g_tmp);
  snprintf(args, sizeof args, "pcr read %s --scans 2 --out %s", rec(2), dir);
  r = run(args);
  CHECK_EQ_INT(r.code, 0);
  run_free(&r);
  for (i = 0; i < 19; i++) {
    char *d;
    size_t len;
    snprintf(p, sizeof p, "%s/%d.jpg", dir, i);
    if (mlsys_read_file(p, &d, &len)) { CHECK_MSG(0, "%s missing", p); continue; }
    CHECK_MSG(len > 4 && (uint8_t)d[0] == 0xFF && (uint8_t)d[1] == 0xD8 && (uint8_t)d[len - 2] == 0xFF && (uint8_t)d[len - 1] == 0xD9,
              "%s is not SOI ... EOI", p);
    mlsys_free(d);
  }
  snprintf(p, sizeof p, "%s/19.jpg", dir);
  CHECK(access(p, F_OK) != 0);
  /* at full fidelity, an outside oracle: record 0 holds the first 20 photos in sorted order, and image i must be
     byte-identical to `jpegtran -copy none -optimize -progressive` of photo i (spec §3.1) */
  if (access("/usr/bin/jpegtran", X_OK)) return;   /* libjpeg-turbo-progs missing: the check above stands alone */
  snprintf(dir, sizeof dir, "%s/out10", g_tmp);
  snprintf(args, sizeof args, "pcr read %s --scans 10 --out %s", rec(0), dir);
  r = run(args);
  CHECK_EQ_INT(r.code, 0);
  run_free(&r);
  REQUIRE_OK(mlsys_pipe_list_images(PHOTOS, &paths, &n));
  REQUIRE(n == 59);
  for (i = 0; i < 4; i++) {
    char cmd[1024], ref[256], *d;
    size_t len;
    snprintf(ref, sizeof ref, "%s/jpegtran%d.jpg", g_tmp, i);
    snprintf(cmd, sizeof cmd, "jpegtran -copy none -optimize -progressive '%s' > '%s'", paths[i], ref);
    REQUIRE(system(cmd) == 0);
    REQUIRE_OK(mlsys_read_file(ref, &d, &len));
    snprintf(p, sizeof p, "%s/%d.jpg", dir, i);
    CHECK_MSG(same_file(p, d, len), "%s differs from jpegtran's transcode of %s", p, paths[i]);
    mlsys_free(d);
  }
  mlsys_pipe_paths_free(paths, n);
}

TEST(tune_profile_and_choosers) {
  char args[256];
  mlsys_json_doc doc;
  const mlsys_json *k, *mb, *fr, *ms, *sp, *io, *dec;
  int i, K, first_ok = 0;
  NEED_PHOTOS();
  REQUIRE(packed());
  snprintf(args, sizeof args, "pcr tune %s/rec --n-images 4 --bandwidth 25 --json", g_tmp);
  REQUIRE(run_json(args, &doc));
  CHECK_EQ_INT(num(doc.root, "records"), 3);
  CHECK_EQ_INT(num(doc.root, "images"), 59);
  CHECK_EQ_INT(num(doc.root, "n_images"), 4);
  K = (int)num(doc.root, "groups");
  REQUIRE(K == 10);
  k = arr(doc.root, "k"); mb = arr(doc.root, "mean_bytes"); fr = arr(doc.root, "fraction"); ms = arr(doc.root, "msssim");
  sp = arr(doc.root, "max_speedup"); io = arr(doc.root, "io_rate"); dec = arr(doc.root, "decode_rate");
  REQUIRE(k && mb && fr && ms && sp && io && dec);
  REQUIRE(k->count == K && mb->count == K && fr->count == K && ms->count == K && sp->count == K && io->count == K && dec->count == K);
  for (i = 0; i < K; i++) {
    CHECK_EQ_INT(at(k, i), i + 1);
    if (i) CHECK_MSG(at(mb, i) > at(mb, i - 1), "E[s_%d] %g <= E[s_%d] %g", i + 1, at(mb, i), i, at(mb, i - 1));
    if (i) CHECK_MSG(at(ms, i) >= at(ms, i - 1) - 1e-3, "MS-SSIM falls from %g at k = %d to %g", at(ms, i - 1), i, at(ms, i));
    CHECK(at(ms, i) > 0 && at(ms, i) <= 1);
    CHECK_NEAR(at(fr, i), at(mb, i) / at(mb, K - 1), 1e-9);
    CHECK_NEAR(at(sp, i), at(mb, K - 1) / at(mb, i), 1e-9);
    CHECK_NEAR(at(io, i), 25e6 / at(mb, i), 1e-6 * at(io, i));
    CHECK(at(dec, i) > 0);
    if (!first_ok && at(ms, i) >= 0.95) first_ok = i + 1;
  }
  CHECK(at(ms, K - 1) == 1.0);
  CHECK(num(doc.root, "k_msssim") >= 1 && num(doc.root, "k_msssim") <= K);
  CHECK_EQ_INT(num(doc.root, "k_msssim"), first_ok ? first_ok : K);   /* §3.7a: the smallest k with MS-SSIM >= tau */
  CHECK(num(doc.root, "k_io") >= 1 && num(doc.root, "k_io") <= K);
  /* §3.7(c): the MS-SSIM choice is a floor; fidelity above it is free while storage keeps up */
  CHECK_EQ_INT(num(doc.root, "k_combined"), num(doc.root, "k_msssim") > num(doc.root, "k_io") ? num(doc.root, "k_msssim") : num(doc.root, "k_io"));
  mlsys_json_doc_free(&doc);
}

TEST(tune_says_how_many_it_scores_and_shows_progress) {
  /* issue 19 #4: `tune --bandwidth 25` printed nothing for minutes. It now says up front, on stderr, how many images it
     will score; with --progress it reports each tenth of the work on stderr (a status line only on a terminal, which a
     test's pipe is not, so without --progress no progress line appears here). A record of two photos keeps it short. */
  char args[512];
  run_result r;
  NEED_PHOTOS();
  REQUIRE(tmpdir());
  snprintf(args, sizeof args, "pcr pack --out %s/two " PHOTOS "/fruits.jpg " PHOTOS "/baboon.jpg", g_tmp);
  r = run(args);
  REQUIRE(r.code == 0);
  run_free(&r);
  snprintf(args, sizeof args, "pcr tune %s/two --n-images 1 --json", g_tmp);
  r = run(args);
  CHECK_EQ_INT(r.code, 0);
  CHECK_CONTAINS(r.err, "scoring 1 of 2 images");
  CHECK(r.err && !strstr(r.err, "MS-SSIM profile:"));
  CHECK(r.out && r.out[0] == '{');   /* stdout stays the JSON alone */
  run_free(&r);
  /* more images asked for than the records hold: the count says what will really be scored */
  snprintf(args, sizeof args, "pcr tune %s/two --n-images 1000 --bandwidth 25 --progress", g_tmp);
  r = run(args);
  CHECK_EQ_INT(r.code, 0);
  CHECK_CONTAINS(r.err, "scoring 2 of 2 images");
  CHECK_CONTAINS(r.err, "then timing the decode of 2 images at each k");
  CHECK_CONTAINS(r.err, "MS-SSIM profile: 1/2 images");
  CHECK_CONTAINS(r.err, "MS-SSIM profile: 2/2 images");
  CHECK_CONTAINS(r.err, "decode rate: 10/10 scan counts");
  CHECK(r.out && strstr(r.out, "I/O model at 25 MB/s"));
  run_free(&r);
}

TEST(tune_refuses_mixed_K) {
  char args[512];
  run_result r;
  NEED_PHOTOS();
  REQUIRE(packed());
  snprintf(args, sizeof args, "pcr pack --out %s/spectral --script spectral " PHOTOS "/fruits.jpg " PHOTOS "/baboon.jpg", g_tmp);
  r = run(args);
  CHECK_EQ_INT(r.code, 0);
  run_free(&r);
  snprintf(args, sizeof args, "pcr tune %s %s/spectral/pcr-000000.pcr --n-images 1", rec(0), g_tmp);
  r = run(args);
  CHECK_EQ_INT(r.code, 1);
  CHECK_CONTAINS(r.err, "scan groups");
  CHECK_CONTAINS(r.err, "spectral/pcr-000000.pcr");
  run_free(&r);
}

TEST(damaged_records_name_the_group) {
  char cut[128], flip[128], args[256], cmd[512];
  int64_t R[65], size;
  int K;
  run_result r;
  FILE *f;
  NEED_PHOTOS();
  REQUIRE(packed());
  REQUIRE(group_end(rec(0), R, &K) && K == 10);
  size = fsize(rec(0));
  REQUIRE(R[1] < size / 2);   /* the cut in the middle falls after group 1 */
  snprintf(cut, sizeof cut, "%s/cut.pcr", g_tmp);
  snprintf(cmd, sizeof cmd, "cp %s %s && truncate -s %lld %s", rec(0), cut, (long long)(size / 2), cut);
  REQUIRE(system(cmd) == 0);
  snprintf(args, sizeof args, "pcr read %s --scans 10", cut);
  r = run(args);
  CHECK_EQ_INT(r.code, 1);
  CHECK_CONTAINS(r.err, "truncated");
  CHECK_CONTAINS(r.err, "group");
  CHECK_CONTAINS(r.err, "cut.pcr");
  run_free(&r);
  snprintf(args, sizeof args, "pcr read %s --scans 1", cut);
  r = run(args);
  CHECK_EQ_INT(r.code, 0);
  run_free(&r);
  /* one flipped bit in the last group: its CRC names it; fewer scans never read it */
  snprintf(flip, sizeof flip, "%s/flip.pcr", g_tmp);
  snprintf(cmd, sizeof cmd, "cp %s %s", rec(0), flip);
  REQUIRE(system(cmd) == 0);
  REQUIRE((f = fopen(flip, "r+b")));
  {
    long pos = (long)((R[9] + R[10]) / 2);
    int c;
    fseek(f, pos, SEEK_SET);
    c = fgetc(f);
    fseek(f, pos, SEEK_SET);
    fputc(c ^ 0x10, f);
    fclose(f);
  }
  snprintf(args, sizeof args, "pcr read %s --scans 10", flip);
  r = run(args);
  CHECK_EQ_INT(r.code, 1);
  CHECK_CONTAINS(r.err, "CRC");
  CHECK_CONTAINS(r.err, "group 10");
  run_free(&r);
  snprintf(args, sizeof args, "pcr read %s --scans 9", flip);
  r = run(args);
  CHECK_EQ_INT(r.code, 0);
  run_free(&r);
}

TEST(bad_input_and_usage) {
  run_result r;
  r = run("pcr frobnicate");
  CHECK_EQ_INT(r.code, 2);
  CHECK_CONTAINS(r.err, "frobnicate");
  run_free(&r);
  r = run("pcr read /nonexistent.pcr");
  CHECK_EQ_INT(r.code, 2);
  CHECK_CONTAINS(r.err, "--scans");
  run_free(&r);
  r = run("pcr read /nonexistent.pcr --scans 0");
  CHECK_EQ_INT(r.code, 2);
  run_free(&r);
  r = run("pcr read /nonexistent.pcr --scans 1");
  CHECK_EQ_INT(r.code, 1);
  CHECK_CONTAINS(r.err, "/nonexistent.pcr");
  run_free(&r);
  r = run("pcr pack " PHOTOS);
  CHECK_EQ_INT(r.code, 2);
  CHECK_CONTAINS(r.err, "--out");
  run_free(&r);
  r = run("pcr pack --out /tmp/x --script fancy " PHOTOS);
  CHECK_EQ_INT(r.code, 2);
  run_free(&r);
  r = run("pcr info");
  CHECK_EQ_INT(r.code, 2);
  run_free(&r);
  if (!access(PHOTOS "/fruits.jpg", R_OK)) {   /* a JPEG is not a record */
    r = run("pcr info " PHOTOS "/fruits.jpg");
    CHECK_EQ_INT(r.code, 1);
    CHECK_CONTAINS(r.err, "not a PCR record");
    run_free(&r);
  }
  r = run("pcr tune");
  CHECK_EQ_INT(r.code, 2);
  run_free(&r);
  r = run("pcr");
  CHECK_EQ_INT(r.code, 2);
  run_free(&r);
  r = run("pcr --help");
  CHECK_EQ_INT(r.code, 0);
  CHECK_CONTAINS(r.out, "group_end");
  CHECK_CONTAINS(r.out, "k_msssim");
  run_free(&r);
}

TEST_MAIN()
