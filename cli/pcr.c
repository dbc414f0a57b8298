/* cli/pcr.c — `mlsys pcr`: Progressive Compressed Records (mlsys_pcr.h). pack writes photographs into records, info
   shows a record's (or an index's) bytes per fidelity, read loads a record at k scans and decodes it (optionally
   against full fidelity), tune picks k by the MS-SSIM rule and the I/O model of Theorem 4.4.1. */
#include "mlsys_pipeline.h"   /* first: mlsys_pipe_list_images (and mlsys_pcr.h's pipeline source) */
#include "mlsys_pcr.h"
#include "cli/cli.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *pcr_help =
    "usage: mlsys pcr <verb> [options]\n"
    "\n"
    "verbs:\n"
    "  pack  --out DIR [--images-per-record N] [--labels dirs|none] [--script simple|spectral] [--store-as-is]\n"
    "        [--align L] [--seed S] [--index] [--json] IMAGES...\n"
    "        Packs JPEG photographs into records DIR/pcr-000000.pcr, pcr-000001.pcr, ... of N images each (default\n"
    "        1024): each image is transcoded losslessly to a progressive JPEG (--script simple: libjpeg's 10-scan\n"
    "        progression, K = 10 groups, the default; spectral: 5 spectral-selection scans, K = 5) and scan g of every\n"
    "        image goes to scan group g. IMAGES are files or directories (every .jpg/.jpeg below them, recursively,\n"
    "        sorted by path). --labels dirs (default) labels an image with the index of its parent directory among\n"
    "        the sorted distinct parent directories (ImageFolder style); none labels every image 0. Without --seed the\n"
    "        images keep their sorted order; with --seed S they are shuffled once with that seed (the same seed gives\n"
    "        the same records). Files that are not JPEGs (judged by their bytes: a PNG named .jpg) or that the\n"
    "        transcode refuses are skipped, one line each on stderr, and counted; the pack fails only when no image\n"
    "        was packed. --store-as-is keeps every JPEG unchanged in one group (K = 1: the plain-JPEG record\n"
    "        baseline). --align L starts groups at multiples of 2^L bytes (9..21, for --io direct readers). --index\n"
    "        also writes DIR/index.pcri (every record's R(k); `info` reads it).\n"
    "  info  FILE [--json]\n"
    "        A record: images, scan groups K, script, prefix and file bytes, and per k = 0..K the bytes R(k) to read\n"
    "        for fidelity k, its fraction of R(K), E[s_k] = R(k)/N bytes per image and the largest speedup reading k\n"
    "        scans can give an I/O-bound loader, R(K)/R(k) (Theorem 4.4.1). An index.pcri (recognised by its magic\n"
    "        MLSYSPCI): the same summed over its records.\n"
    "  read  FILE --scans K [--out DIR] [--decoder libjpeg|stb] [--reference] [--io pread|mmap|direct]\n"
    "        [--throttle MBPS] [--json]\n"
    "        Opens the record, loads its first K scan groups (one sequential read of R(K) bytes; every group's CRC\n"
    "        checked), reassembles every image at K scans (--out writes them as DIR/<index>.jpg) and decodes them all,\n"
    "        timed (default decoder libjpeg). --reference also decodes every image at full fidelity (through a\n"
    "        second reader, so bytes_read stays R(K)) and reports MS-SSIM (thesis §3.6) and PSNR against it (the\n"
    "        scoring runs on every core; the timed decode on one). --throttle limits the reads to MBPS megabytes\n"
    "        (10^6 B) per second (a token bucket with a 1 MiB burst: slow-storage emulation). A damaged record is an\n"
    "        error naming the record and the group (and the image, for a damaged length table).\n"
    "  tune  DIR|FILES... [--n-images N] [--tau T] [--bandwidth MBPS] [--progress] [--json]\n"
    "        Over the records (every *.pcr in DIR, sorted, or the files given; all must have the same K): per k the\n"
    "        mean bytes per image E[s_k], its fraction of E[s_K], the Theorem 4.4.1 speedup E[s_K]/E[s_k], and the\n"
    "        mean MS-SSIM against full fidelity over the first N images (default 256; libjpeg); the chosen k is the\n"
    "        smallest with mean MS-SSIM >= T (default 0.95; §3.7a). --bandwidth W (MB/s) adds the I/O model (§3.4):\n"
    "        the rate storage allows, W/E[s_k] images/s, the single-core libjpeg decode rate r_dec(k) measured on the\n"
    "        first 32 images (the faster of two decodes of each), the predicted rate min(W/E[s_k], cores * r_dec(k)),\n"
    "        and the largest k that is not I/O-bound on this machine's online cores (§3.7c; the smallest k when\n"
    "        every k is). It first says on stderr how many images it will score (N x (K - 1) MS-SSIMs take about\n"
    "        30 ms each for a 640x480 photo: minutes at the default N), then shows its progress: a status line when\n"
    "        stderr is a terminal, or with --progress one line per tenth of the work.\n"
    "\n"
    "pack --json keys: records ([{path, images, bytes, source_bytes}]), images, skipped, skipped_files ([{path,\n"
    "reason}]), bytes, source_bytes, index (path or null), labels (the parent directories, index = label; [] for\n"
    "--labels none).\n"
    "info --json keys: kind (\"record\" or \"index\"), path, images, groups, script_id (null for an index),\n"
    "align_log2 (records only), prefix_bytes, file_bytes (the header's; for an index the sum of R(K)),\n"
    "present_bytes (the file's real size) and source_bytes (records only), group_end (R(0..K)), mean_bytes\n"
    "(E[s_0..K]), max_speedup ([0] is null), records (index only: [{path, images, groups}]).\n"
    "read --json keys: images, scans, bytes_read, read_s, decode_s, images_per_s; with --reference also\n"
    "msssim_mean, msssim_min, psnr_mean (over the images not identical to the reference; null when all are) and\n"
    "identical (images whose pixels equal the reference's).\n"
    "tune --json keys: records, images, groups, n_images, tau, k (1..K), mean_bytes, fraction, max_speedup, msssim\n"
    "(arrays over k), k_msssim; with --bandwidth also bandwidth_Bps, cores, io_rate, decode_rate,\n"
    "predicted_rate (min(io_rate, cores * decode_rate)), k_io, k_combined (max(k_msssim, k_io), spec 3.7c).\n"
    "\n"
    "Exit codes: 0 ok, 1 error (one line on stderr naming the file and the problem), 2 bad usage.\n";

/* ---- small helpers ---- */
static int pcr_int(const char *cmd, const char *opt, const char *v, double lo, double hi, double *out) {
  double d;
  if (!v) return CLI_OK;
  if (cli_parse_double(v, &d) || d != floor(d) || d < lo || d > hi) return cli_usage_error(cmd, "%s must be an integer in %.0f..%.0f", opt, lo, hi);
  *out = d;
  return CLI_OK;
}

static int is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}
static int64_t file_size(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 ? (int64_t)st.st_size : -1;
}
/* mkdir -p */
static int make_dirs(const char *path) {
  char buf[4096];
  size_t i, n = strlen(path);
  if (n == 0 || n >= sizeof buf) return -1;
  memcpy(buf, path, n + 1);
  for (i = 1; i <= n; i++) {
    if (buf[i] != '/' && buf[i] != 0) continue;
    buf[i] = 0;
    if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
    buf[i] = path[i];
  }
  return is_dir(path) ? 0 : -1;
}
static int write_all(const char *path, const uint8_t *b, size_t n) {
  FILE *f = fopen(path, "wb");
  int ok;
  if (!f) return -1;
  ok = fwrite(b, 1, n, f) == n;
  ok = (fclose(f) == 0) && ok;
  return ok ? 0 : -1;
}
static const char *script_name(int id) {
  return id == MLSYS_PCR_SCRIPT_SIMPLE ? "simple" : id == MLSYS_PCR_SCRIPT_SPECTRAL ? "spectral" : id == MLSYS_PCR_SCRIPT_CUSTOM ? "custom"
                                                                                                       : "none (stored as is)";
}
static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* ================================================================================================================
   pack
   ================================================================================================================ */
typedef struct { const char *path; int64_t label; } pack_item;
typedef struct { char *path; uint32_t images; uint64_t bytes, src; } pack_rec;
typedef struct { char *path, *reason; } pack_skip;

typedef struct {
  pack_rec *rec; int nrec, caprec;
  pack_skip *skip; int nskip, capskip;
} pack_out;

static void pack_out_free(pack_out *o) {
  int i;
  for (i = 0; i < o->nrec; i++) free(o->rec[i].path);
  for (i = 0; i < o->nskip; i++) { free(o->skip[i].path); free(o->skip[i].reason); }
  free(o->rec); free(o->skip);
}

/* the parent directory of a path ("." for a bare name) into buf */
static const char *parent_dir(const char *p, char *buf, size_t cap) {
  const char *s = strrchr(p, '/');
  size_t n;
  if (!s) return ".";
  n = (size_t)(s - p);
  if (n == 0) return "/";
  if (n >= cap) n = cap - 1;
  memcpy(buf, p, n);
  buf[n] = 0;
  return buf;
}

/* records named spec §2.5 that this pack did not write (an earlier, larger pack into the same DIR) */
static int stale_records(const char *dir, int nrec) {
  DIR *d = opendir(dir);
  struct dirent *e;
  int n = 0;
  if (!d) return 0;
  while ((e = readdir(d))) {
    const char *s = e->d_name;
    int i, ok = strlen(s) == 14 && !strncmp(s, "pcr-", 4) && !strcmp(s + 10, ".pcr");
    for (i = 4; ok && i < 10; i++) ok = s[i] >= '0' && s[i] <= '9';
    if (ok && atoi(s + 4) >= nrec) n++;
  }
  closedir(d);
  return n;
}

static int pcr_flush(const char *cmd, mlsys_pcr_writer *w, const char *dir, uint64_t src, pack_out *o) {
  char path[4096];
  pack_rec *r;
  uint32_t n = mlsys_pcr_writer_count(w);
  snprintf(path, sizeof path, "%s/pcr-%06d.pcr", dir, o->nrec);
  if (mlsys_pcr_writer_finish_file(w, path)) return cli_fail(cmd, "%s", mlsys_last_error());
  if (o->nrec == o->caprec) {
    int c = o->caprec ? 2 * o->caprec : 16;
    pack_rec *q = (pack_rec *)realloc(o->rec, (size_t)c * sizeof *q);
    if (!q) return cli_fail(cmd, "out of memory");
    o->rec = q; o->caprec = c;
  }
  r = &o->rec[o->nrec++];
  r->path = strdup(path);
  r->images = n;
  r->bytes = (uint64_t)file_size(path);
  r->src = src;
  return r->path ? CLI_OK : cli_fail(cmd, "out of memory");
}

static int pcr_pack(int argc, char **argv, const char *cmd) {
  const char *out = NULL, *per_s = NULL, *labels_s = NULL, *script_s = NULL, *as_is = NULL, *align_s = NULL, *seed_s = NULL,
             *index_s = NULL, *json = NULL, *help = NULL;
  cli_opt opts[] = {{"--out", 1, &out},         {"--images-per-record", 1, &per_s}, {"--labels", 1, &labels_s},
                    {"--script", 1, &script_s}, {"--store-as-is", 0, &as_is},      {"--align", 1, &align_s},
                    {"--seed", 1, &seed_s},     {"--index", 0, &index_s},          {"--json", 0, &json},
                    {"--help", 0, &help}};
  const char **pos = (const char **)malloc(sizeof(char *) * (size_t)(argc + 1));
  char ***lists = NULL;
  int64_t *nlist = NULL, nitems = 0, i, j;
  pack_item *items = NULL;
  char **parents = NULL;
  int64_t nparents = 0;
  pack_out o;
  mlsys_pcr_writer_desc wd;
  mlsys_pcr_writer *w = NULL;
  char index_path[4096] = "";
  uint64_t rec_src = 0, tot_bytes = 0, tot_src = 0, tot_images = 0;
  double per = 1024, align = 0, seed = -1;
  int npos = 0, rc, by_dirs = 1;

  memset(&o, 0, sizeof o);
  if (!pos) return cli_fail(cmd, "out of memory");
  if ((rc = cli_parse_args(argc, argv, opts, (int)(sizeof opts / sizeof opts[0]), cmd, pos, argc, &npos))) goto done;
  if (help) { fputs(pcr_help, stdout); rc = CLI_OK; goto done; }
  rc = CLI_USAGE;
  if (!out) { cli_usage_error(cmd, "--out DIR is required"); goto done; }
  if (npos == 0) { cli_usage_error(cmd, "no IMAGES given (files or directories of JPEGs)"); goto done; }
  if (pcr_int(cmd, "--images-per-record", per_s, 1, MLSYS_PCR_MAX_IMAGES, &per)) goto done;
  if (pcr_int(cmd, "--seed", seed_s, 0, 9007199254740992.0, &seed)) goto done;
  if (align_s && (pcr_int(cmd, "--align", align_s, 0, 21, &align) || (align > 0 && align < 9))) {
    if (align > 0 && align < 9) cli_usage_error(cmd, "--align must be 0 or 9..21 (log2 of the group alignment)");
    goto done;
  }
  if (labels_s && strcmp(labels_s, "dirs") && strcmp(labels_s, "none")) { cli_usage_error(cmd, "--labels is dirs or none"); goto done; }
  by_dirs = !labels_s || !strcmp(labels_s, "dirs");
  memset(&wd, 0, sizeof wd);
  if (script_s) {
    if (!strcmp(script_s, "simple")) wd.transcode.script = MLSYS_PCR_SCRIPT_SIMPLE;
    else if (!strcmp(script_s, "spectral")) wd.transcode.script = MLSYS_PCR_SCRIPT_SPECTRAL;
    else { cli_usage_error(cmd, "--script is simple or spectral"); goto done; }
  }
  wd.store_as_is = as_is != NULL;
  wd.align_log2 = (int)align;
  wd.max_images = (uint32_t)per;
  rc = CLI_ERR;

  /* 1. the images: files as given, directories listed recursively (sorted), in argument order */
  lists = (char ***)calloc((size_t)npos, sizeof *lists);
  nlist = (int64_t *)calloc((size_t)npos, sizeof *nlist);
  if (!lists || !nlist) { cli_fail(cmd, "out of memory"); goto done; }
  for (j = 0; j < npos; j++) {
    struct stat st;
    if (stat(pos[j], &st) != 0) { cli_fail(cmd, "cannot read '%s': %s", pos[j], strerror(errno)); goto done; }
    if (S_ISDIR(st.st_mode)) {
      if (mlsys_pipe_list_images(pos[j], &lists[j], &nlist[j])) { cli_fail(cmd, "%s", mlsys_last_error()); goto done; }
      if (nlist[j] == 0) fprintf(stderr, "mlsys %s: no .jpg or .jpeg files below '%s'\n", cmd, pos[j]);
    } else {
      nlist[j] = -1;   /* the argument itself */
    }
    nitems += nlist[j] < 0 ? 1 : nlist[j];
  }
  if (nitems == 0) { cli_fail(cmd, "no images to pack"); goto done; }
  items = (pack_item *)calloc((size_t)nitems, sizeof *items);
  parents = (char **)calloc((size_t)nitems, sizeof *parents);
  if (!items || !parents) { cli_fail(cmd, "out of memory"); goto done; }
  for (j = 0, i = 0; j < npos; j++) {
    int64_t m;
    if (nlist[j] < 0) items[i++].path = pos[j];
    else for (m = 0; m < nlist[j]; m++) items[i++].path = lists[j][m];
  }

  /* 2. labels: ImageFolder style, the index of the parent directory among the sorted distinct ones */
  if (by_dirs) {
    char buf[4096];
    for (i = 0; i < nitems; i++)
      if (!(parents[i] = strdup(parent_dir(items[i].path, buf, sizeof buf)))) { cli_fail(cmd, "out of memory"); goto done; }
    qsort(parents, (size_t)nitems, sizeof *parents, cmp_str);
    for (i = 0; i < nitems; i++) {   /* keep the first of each run of equal names, compacted to the front */
      if (nparents > 0 && !strcmp(parents[nparents - 1], parents[i])) free(parents[i]);
      else parents[nparents++] = parents[i];
      if (i >= nparents) parents[i] = NULL;
    }
    for (i = 0; i < nitems; i++) {
      const char *pd = parent_dir(items[i].path, buf, sizeof buf), **hit = &pd;
      char **f = (char **)bsearch(hit, parents, (size_t)nparents, sizeof *parents, cmp_str);
      items[i].label = f ? (int64_t)(f - parents) : 0;
    }
  }

  /* 3. one shuffle with the seed (Fisher-Yates), so that records mix classes; no seed: sorted order */
  if (seed >= 0) {
    mlsys_rng g;
    mlsys_rng_seed(&g, (uint64_t)seed);
    for (i = nitems - 1; i > 0; i--) {
      int64_t r = (int64_t)mlsys_rng_below(&g, (uint64_t)i + 1);
      pack_item t = items[i]; items[i] = items[r]; items[r] = t;
    }
  }

  /* 4. records of `per` images; a file the writer refuses is skipped and named */
  if (make_dirs(out)) { cli_fail(cmd, "cannot create directory '%s': %s", out, strerror(errno)); goto done; }
  if (mlsys_pcr_writer_create(&wd, &w)) { cli_fail(cmd, "%s", mlsys_last_error()); goto done; }
  for (i = 0; i < nitems; i++) {
    char *data = NULL;
    size_t len = 0;
    mlsys_status st = mlsys_read_file(items[i].path, &data, &len);
    if (!st) st = mlsys_pcr_writer_add_jpeg(w, (const uint8_t *)data, len, items[i].label, NULL, 0);
    mlsys_free(data);
    if (st == MLSYS_ERR_NOMEM) { cli_fail(cmd, "%s: %s", items[i].path, mlsys_last_error()); goto done; }
    if (st) {
      const char *why = mlsys_last_error();
      fprintf(stderr, "mlsys %s: skipped %s: %s\n", cmd, items[i].path, why);
      if (o.nskip == o.capskip) {
        int c = o.capskip ? 2 * o.capskip : 16;
        pack_skip *q = (pack_skip *)realloc(o.skip, (size_t)c * sizeof *q);
        if (!q) { cli_fail(cmd, "out of memory"); goto done; }
        o.skip = q; o.capskip = c;
      }
      o.skip[o.nskip].path = strdup(items[i].path);
      o.skip[o.nskip].reason = strdup(why);
      o.nskip++;
      continue;
    }
    rec_src += len;
    if (mlsys_pcr_writer_count(w) == (uint32_t)per) {
      if (pcr_flush(cmd, w, out, rec_src, &o)) goto done;
      rec_src = 0;
    }
  }
  if (mlsys_pcr_writer_count(w) > 0 && pcr_flush(cmd, w, out, rec_src, &o)) goto done;
  if (o.nrec == 0) { cli_fail(cmd, "no image was packed (%d skipped)", o.nskip); goto done; }
  for (i = 0; i < o.nrec; i++) { tot_images += o.rec[i].images; tot_bytes += o.rec[i].bytes; tot_src += o.rec[i].src; }

  if (index_s) {
    const char **rp = (const char **)malloc(sizeof(char *) * (size_t)o.nrec);
    mlsys_status st;
    if (!rp) { cli_fail(cmd, "out of memory"); goto done; }
    for (i = 0; i < o.nrec; i++) rp[i] = o.rec[i].path;
    snprintf(index_path, sizeof index_path, "%s/index.pcri", out);
    st = mlsys_pcr_index_build(rp, o.nrec, index_path);
    free(rp);
    if (st) { cli_fail(cmd, "%s", mlsys_last_error()); goto done; }
  }
  {
    int stale = stale_records(out, o.nrec);
    if (stale)
      fprintf(stderr, "mlsys %s: warning: %s also holds %d older record(s) numbered from pcr-%06d.pcr that this pack did not "
              "write; remove them before reading the directory as one dataset\n", cmd, out, stale, o.nrec);
  }

  if (json) {
    mlsys_json_writer jw;
    mlsys_jw_init(&jw, stdout, 1);
    mlsys_jw_object(&jw);
    mlsys_jw_key(&jw, "records"); mlsys_jw_array(&jw);
    for (i = 0; i < o.nrec; i++) {
      mlsys_jw_object(&jw);
      mlsys_jw_key(&jw, "path"); mlsys_jw_str(&jw, o.rec[i].path);
      mlsys_jw_key(&jw, "images"); mlsys_jw_u64(&jw, o.rec[i].images);
      mlsys_jw_key(&jw, "bytes"); mlsys_jw_u64(&jw, o.rec[i].bytes);
      mlsys_jw_key(&jw, "source_bytes"); mlsys_jw_u64(&jw, o.rec[i].src);
      mlsys_jw_end(&jw);
    }
    mlsys_jw_end(&jw);
    mlsys_jw_key(&jw, "images"); mlsys_jw_u64(&jw, tot_images);
    mlsys_jw_key(&jw, "skipped"); mlsys_jw_i64(&jw, o.nskip);
    mlsys_jw_key(&jw, "skipped_files"); mlsys_jw_array(&jw);
    for (i = 0; i < o.nskip; i++) {
      mlsys_jw_object(&jw);
      mlsys_jw_key(&jw, "path"); mlsys_jw_str(&jw, o.skip[i].path);
      mlsys_jw_key(&jw, "reason"); mlsys_jw_str(&jw, o.skip[i].reason);
      mlsys_jw_end(&jw);
    }
    mlsys_jw_end(&jw);
    mlsys_jw_key(&jw, "bytes"); mlsys_jw_u64(&jw, tot_bytes);
    mlsys_jw_key(&jw, "source_bytes"); mlsys_jw_u64(&jw, tot_src);
    mlsys_jw_key(&jw, "index"); mlsys_jw_str(&jw, index_s ? index_path : NULL);
    mlsys_jw_key(&jw, "labels"); mlsys_jw_array(&jw);
    for (i = 0; i < nparents; i++) mlsys_jw_str(&jw, parents[i]);
    mlsys_jw_end(&jw);
    mlsys_jw_end(&jw);
    if (mlsys_jw_finish(&jw)) { cli_fail(cmd, "%s", mlsys_last_error()); goto done; }
  } else {
    char b1[32], b2[32];
    for (i = 0; i < o.nrec; i++)
      printf("%s: %u images, %s (source JPEGs %s, PCR/source %.3f)\n", o.rec[i].path, o.rec[i].images, cli_fmt_bytes(o.rec[i].bytes, b1, sizeof b1),
             cli_fmt_bytes(o.rec[i].src, b2, sizeof b2), o.rec[i].src ? (double)o.rec[i].bytes / (double)o.rec[i].src : 0);
    printf("total: %d record%s, %llu images, %s (source JPEGs %s, PCR/source %.3f)", o.nrec, o.nrec == 1 ? "" : "s",
           (unsigned long long)tot_images, cli_fmt_bytes(tot_bytes, b1, sizeof b1), cli_fmt_bytes(tot_src, b2, sizeof b2),
           tot_src ? (double)tot_bytes / (double)tot_src : 0);
    printf("; %d skipped\n", o.nskip);
    if (by_dirs) printf("labels: %lld parent director%s (label = index in sorted order%s%s)\n", (long long)nparents, nparents == 1 ? "y" : "ies",
                        nparents == 1 ? ": " : "", nparents == 1 ? parents[0] : "");
    if (index_s) printf("index: %s\n", index_path);
  }
  rc = CLI_OK;
done:
  mlsys_pcr_writer_destroy(w);
  if (lists) for (j = 0; j < npos; j++) if (nlist[j] > 0) mlsys_pipe_paths_free(lists[j], nlist[j]);
  if (parents) for (i = 0; i < nitems; i++) free(parents[i]);
  free(parents); free(items); free(lists); free(nlist); free(pos);
  pack_out_free(&o);
  return rc;
}

/* ================================================================================================================
   info
   ================================================================================================================ */
static void info_table(const uint64_t *R, const double *mean, int K) {
  int k;
  printf("   k        R(k) bytes   of R(K)   E[s_k] B/image   max speedup R(K)/R(k)\n");
  for (k = 0; k <= K; k++) {
    printf("  %2d  %16llu  %7.2f%%  %15.1f", k, (unsigned long long)R[k], R[K] ? 100.0 * (double)R[k] / (double)R[K] : 0, mean[k]);
    if (k == 0) printf("   -\n");
    else printf("   %.2fx\n", mean[k] > 0 ? mean[K] / mean[k] : 0);
  }
}
static void info_json_arrays(mlsys_json_writer *jw, const uint64_t *R, const double *mean, int K) {
  int k;
  mlsys_jw_key(jw, "group_end"); mlsys_jw_array(jw);
  for (k = 0; k <= K; k++) mlsys_jw_u64(jw, R[k]);
  mlsys_jw_end(jw);
  mlsys_jw_key(jw, "mean_bytes"); mlsys_jw_array(jw);
  for (k = 0; k <= K; k++) mlsys_jw_double(jw, mean[k]);
  mlsys_jw_end(jw);
  mlsys_jw_key(jw, "max_speedup"); mlsys_jw_array(jw);
  for (k = 0; k <= K; k++) {
    if (k == 0) mlsys_jw_null(jw);
    else mlsys_jw_double(jw, mlsys_pcr_max_speedup(mean, K, k));
  }
  mlsys_jw_end(jw);
}

static int info_index(const char *cmd, const char *path, int json) {
  mlsys_pcr_index *ix;
  uint64_t R[MLSYS_PCR_MAX_GROUPS + 1];
  double mean[MLSYS_PCR_MAX_GROUPS + 1];
  int n, K, j, k;
  if (mlsys_pcr_index_open(path, &ix) || mlsys_pcr_index_mean_bytes(ix, mean)) {
    int rc = cli_fail(cmd, "%s", mlsys_last_error());
    return rc;
  }
  n = mlsys_pcr_index_records(ix);
  K = mlsys_pcr_index_max_groups(ix);
  memset(R, 0, sizeof R);
  for (j = 0; j < n; j++) {
    const uint64_t *r;
    if (mlsys_pcr_index_record(ix, j, NULL, NULL, NULL, &r)) { mlsys_pcr_index_close(ix); return cli_fail(cmd, "%s", mlsys_last_error()); }
    for (k = 0; k <= K; k++) R[k] += r[k];
  }
  if (json) {
    mlsys_json_writer jw;
    mlsys_jw_init(&jw, stdout, 1);
    mlsys_jw_object(&jw);
    mlsys_jw_key(&jw, "kind"); mlsys_jw_str(&jw, "index");
    mlsys_jw_key(&jw, "path"); mlsys_jw_str(&jw, path);
    mlsys_jw_key(&jw, "images"); mlsys_jw_u64(&jw, mlsys_pcr_index_images(ix));
    mlsys_jw_key(&jw, "groups"); mlsys_jw_i64(&jw, K);
    mlsys_jw_key(&jw, "script_id"); mlsys_jw_null(&jw);
    mlsys_jw_key(&jw, "prefix_bytes"); mlsys_jw_u64(&jw, R[0]);
    mlsys_jw_key(&jw, "file_bytes"); mlsys_jw_u64(&jw, R[K]);
    info_json_arrays(&jw, R, mean, K);
    mlsys_jw_key(&jw, "records"); mlsys_jw_array(&jw);
    for (j = 0; j < n; j++) {
      const char *p; uint32_t ni; int kk;
      mlsys_pcr_index_record(ix, j, &p, &ni, &kk, NULL);
      mlsys_jw_object(&jw);
      mlsys_jw_key(&jw, "path"); mlsys_jw_str(&jw, p);
      mlsys_jw_key(&jw, "images"); mlsys_jw_u64(&jw, ni);
      mlsys_jw_key(&jw, "groups"); mlsys_jw_i64(&jw, kk);
      mlsys_jw_end(&jw);
    }
    mlsys_jw_end(&jw);
    mlsys_jw_end(&jw);
    mlsys_pcr_index_close(ix);
    if (mlsys_jw_finish(&jw)) return cli_fail(cmd, "%s", mlsys_last_error());
    return CLI_OK;
  }
  {
    char b1[32];
    printf("index %s: %d record%s, %llu images, K_max = %d groups, %s in all (prefixes %llu B)\n", path, n, n == 1 ? "" : "s",
           (unsigned long long)mlsys_pcr_index_images(ix), K, cli_fmt_bytes(R[K], b1, sizeof b1), (unsigned long long)R[0]);
    for (j = 0; j < n; j++) {
      const char *p; uint32_t ni; int kk;
      mlsys_pcr_index_record(ix, j, &p, &ni, &kk, NULL);
      printf("  %s: %u images, K = %d\n", p, ni, kk);
    }
    printf("summed over the records (R(k) = bytes to read for fidelity k; E[s_k] = R(k) / images):\n");
    info_table(R, mean, K);
  }
  mlsys_pcr_index_close(ix);
  return CLI_OK;
}

static int pcr_info(int argc, char **argv, const char *cmd) {
  const char *json = NULL, *help = NULL, *pos[1] = {NULL};
  cli_opt opts[] = {{"--json", 0, &json}, {"--help", 0, &help}};
  mlsys_pcr_reader *r;
  mlsys_pcr_info in;
  double mean[MLSYS_PCR_MAX_GROUPS + 1];
  char magic[8] = {0};
  uint64_t src = 0;
  int64_t present;
  int npos, rc, k;
  uint32_t i;
  FILE *f;
  if ((rc = cli_parse_args(argc, argv, opts, 2, cmd, pos, 1, &npos))) return rc;
  if (help) { fputs(pcr_help, stdout); return CLI_OK; }
  if (npos != 1) return cli_usage_error(cmd, "needs one FILE (a record .pcr or an index.pcri)");
  if (!(f = fopen(pos[0], "rb"))) return cli_fail(cmd, "cannot open '%s': %s", pos[0], strerror(errno));
  if (fread(magic, 1, 8, f) != 8) memset(magic, 0, 8);
  fclose(f);
  if (!memcmp(magic, "MLSYSPCI", 8)) return info_index(cmd, pos[0], json != NULL);
  if (mlsys_pcr_open_file(pos[0], NULL, &r)) return cli_fail(cmd, "%s", mlsys_last_error());
  mlsys_pcr_get_info(r, &in);
  for (k = 0; k <= in.n_groups; k++) mean[k] = (double)in.group_end[k] / in.n_images;
  for (i = 0; i < in.n_images; i++) {
    mlsys_pcr_image im;
    if (!mlsys_pcr_image_info(r, i, &im)) src += im.src_bytes;
  }
  present = file_size(pos[0]);
  if (json) {
    mlsys_json_writer jw;
    mlsys_jw_init(&jw, stdout, 1);
    mlsys_jw_object(&jw);
    mlsys_jw_key(&jw, "kind"); mlsys_jw_str(&jw, "record");
    mlsys_jw_key(&jw, "path"); mlsys_jw_str(&jw, pos[0]);
    mlsys_jw_key(&jw, "images"); mlsys_jw_u64(&jw, in.n_images);
    mlsys_jw_key(&jw, "groups"); mlsys_jw_i64(&jw, in.n_groups);
    mlsys_jw_key(&jw, "script_id"); mlsys_jw_i64(&jw, in.script_id);
    mlsys_jw_key(&jw, "align_log2"); mlsys_jw_i64(&jw, in.align_log2);
    mlsys_jw_key(&jw, "prefix_bytes"); mlsys_jw_u64(&jw, in.prefix_bytes);
    mlsys_jw_key(&jw, "file_bytes"); mlsys_jw_u64(&jw, in.file_bytes);
    mlsys_jw_key(&jw, "present_bytes"); mlsys_jw_i64(&jw, present);
    mlsys_jw_key(&jw, "source_bytes"); mlsys_jw_u64(&jw, src);
    info_json_arrays(&jw, in.group_end, mean, in.n_groups);
    mlsys_jw_end(&jw);
    mlsys_pcr_close(r);
    if (mlsys_jw_finish(&jw)) return cli_fail(cmd, "%s", mlsys_last_error());
    return CLI_OK;
  }
  {
    char b1[32], b2[32];
    printf("record %s: %u images, K = %d scan groups, script %d (%s)%s\n", pos[0], in.n_images, in.n_groups, in.script_id,
           script_name(in.script_id), in.align_log2 ? "" : ", groups packed");
    if (in.align_log2) printf("  groups aligned to %d bytes\n", 1 << in.align_log2);
    printf("  prefix (header, directory, image table, JPEG headers) %llu B; file %s", (unsigned long long)in.prefix_bytes,
           cli_fmt_bytes(in.file_bytes, b1, sizeof b1));
    printf(" (source JPEGs %s, PCR/source %.3f)\n", cli_fmt_bytes(src, b2, sizeof b2), src ? (double)in.file_bytes / (double)src : 0);
    if (present >= 0 && (uint64_t)present < in.file_bytes) {
      for (k = 0; k < in.n_groups && in.group_end[k + 1] <= (uint64_t)present; k++) {}
      printf("  TRUNCATED: the file holds %lld of its %llu bytes: readable up to k = %d\n", (long long)present,
             (unsigned long long)in.file_bytes, k);
    }
    info_table(in.group_end, mean, in.n_groups);
  }
  mlsys_pcr_close(r);
  return CLI_OK;
}

/* ================================================================================================================
   read
   ================================================================================================================ */
static int io_mode(const char *s, int *io) {
  if (!s || !strcmp(s, "pread")) *io = MLSYS_PCR_IO_PREAD;
  else if (!strcmp(s, "mmap")) *io = MLSYS_PCR_IO_MMAP;
  else if (!strcmp(s, "direct")) *io = MLSYS_PCR_IO_DIRECT;
  else return -1;
  return 0;
}

/* image i at k scans of a loaded reader, decoded; *px from the decoder (mlsys_pcr_free) */
static mlsys_status decode_at(const mlsys_pcr_reader *r, uint32_t i, int k, const mlsys_pcr_decode_desc *dd, uint8_t **px, int *w, int *h) {
  uint8_t *jpg;
  size_t len;
  mlsys_status st;
  *px = NULL;
  if ((st = mlsys_pcr_image_jpeg(r, i, k, NULL, 0, &len))) return st;
  if (!(jpg = (uint8_t *)mlsys_alloc(len, 1))) return MLSYS_ERR_NOMEM;
  if (!(st = mlsys_pcr_image_jpeg(r, i, k, jpg, len, &len))) st = mlsys_pcr_decode(jpg, len, dd, px, w, h);
  mlsys_free(jpg);
  return st;
}

/* --reference: every image scored against full fidelity, spread over the cores (a loaded reader may be shared by
   threads for image_jpeg and decode) */
typedef struct {
  const mlsys_pcr_reader *r, *ref;
  int k, K;
  const mlsys_pcr_decode_desc *dd;
  double *msssim, *psnr;
  mlsys_status *st;
  char (*msg)[512];
} ref_job;
static void ref_one(void *ctx, long li, int worker) {
  ref_job *j = (ref_job *)ctx;
  uint32_t i = (uint32_t)li;
  uint8_t *px = NULL, *rpx = NULL;
  int w = 0, h = 0, rw = 0, rh = 0;
  mlsys_status st;
  (void)worker;
  if (!(st = decode_at(j->r, i, j->k, j->dd, &px, &w, &h)) && (st = decode_at(j->ref, i, j->K, j->dd, &rpx, &rw, &rh)))
    mlsys_prefix_error("at full fidelity");
  if (!st && (rw != w || rh != h))
    st = mlsys_set_error(MLSYS_ERR_PARSE, "decodes to %d x %d at %d scans and %d x %d at full fidelity", w, h, j->k, rw, rh);
  if (!st) {
    j->psnr[i] = mlsys_pcr_psnr(rpx, px, (size_t)w * (size_t)h * 3);
    if (isinf(j->psnr[i])) j->msssim[i] = 1;   /* identical pixels: MS-SSIM is exactly 1 (no need for the filters) */
    else st = mlsys_pcr_msssim(rpx, px, w, h, 3, &j->msssim[i], NULL);
  }
  if (st) snprintf(j->msg[i], sizeof j->msg[i], "%s", mlsys_last_error());
  j->st[i] = st;
  mlsys_pcr_free(px);
  mlsys_pcr_free(rpx);
}

static int pcr_read(int argc, char **argv, const char *cmd) {
  const char *scans_s = NULL, *out = NULL, *dec_s = NULL, *ref_s = NULL, *io_s = NULL, *thr_s = NULL, *json = NULL, *help = NULL,
             *pos[1] = {NULL};
  cli_opt opts[] = {{"--scans", 1, &scans_s}, {"--out", 1, &out},       {"--decoder", 1, &dec_s}, {"--reference", 0, &ref_s},
                    {"--io", 1, &io_s},       {"--throttle", 1, &thr_s}, {"--json", 0, &json},    {"--help", 0, &help}};
  mlsys_pcr_reader_desc rd;
  mlsys_pcr_decode_desc dd;
  mlsys_pcr_reader *r = NULL, *ref = NULL;
  mlsys_pcr_info in;
  mlsys_pool *pool = NULL;
  ref_job job;
  uint8_t *buf = NULL;
  size_t cap = 0;
  double scans = 0, thr = 0, t0, read_s, decode_s = 0, ms_sum = 0, ms_min = 1, ps_sum = 0;
  uint64_t bytes_read;
  int npos, rc, k, identical = 0, nps = 0;
  uint32_t i;

  memset(&job, 0, sizeof job);
  if ((rc = cli_parse_args(argc, argv, opts, (int)(sizeof opts / sizeof opts[0]), cmd, pos, 1, &npos))) return rc;
  if (help) { fputs(pcr_help, stdout); return CLI_OK; }
  if (npos != 1) return cli_usage_error(cmd, "needs one record FILE");
  if (!scans_s) return cli_usage_error(cmd, "--scans K is required (1..K of the record; `mlsys pcr info FILE` shows K)");
  if ((rc = pcr_int(cmd, "--scans", scans_s, 1, MLSYS_PCR_MAX_GROUPS, &scans))) return rc;
  k = (int)scans;
  memset(&rd, 0, sizeof rd);
  memset(&dd, 0, sizeof dd);
  if (io_mode(io_s, &rd.io)) return cli_usage_error(cmd, "--io is pread, mmap or direct");
  if (thr_s && (cli_parse_double(thr_s, &thr) || !(thr > 0))) return cli_usage_error(cmd, "--throttle needs a rate in MB/s > 0");
  rd.throttle_Bps = thr * 1e6;
  if (!dec_s || !strcmp(dec_s, "libjpeg")) dd.backend = MLSYS_PCR_DEC_LIBJPEG;
  else if (!strcmp(dec_s, "stb")) dd.backend = MLSYS_PCR_DEC_STB;
  else return cli_usage_error(cmd, "--decoder is libjpeg or stb");
  if (out && make_dirs(out)) return cli_fail(cmd, "cannot create directory '%s': %s", out, strerror(errno));

  /* one read of the prefix, one of groups 1..k (the CRC of every loaded group is checked) */
  t0 = mlsys_now();
  if (mlsys_pcr_open_file(pos[0], &rd, &r)) return cli_fail(cmd, "%s", mlsys_last_error());
  mlsys_pcr_get_info(r, &in);
  if (k > in.n_groups) {
    mlsys_pcr_close(r);
    return cli_fail(cmd, "%s has %d scan groups: --scans %d is out of range", pos[0], in.n_groups, k);
  }
  if (mlsys_pcr_load(r, k)) { rc = cli_fail(cmd, "%s", mlsys_last_error()); goto done; }
  read_s = mlsys_now() - t0;
  bytes_read = mlsys_pcr_bytes_read(r);

  /* every image reassembled at k scans and decoded on this thread: the decode time is one core's */
  for (i = 0; i < in.n_images; i++) {
    size_t len;
    uint8_t *px = NULL;
    int w, h;
    mlsys_status st;
    if (mlsys_pcr_image_jpeg(r, i, k, NULL, 0, &len)) { rc = cli_fail(cmd, "%s", mlsys_last_error()); goto done; }
    if (len > cap) {
      uint8_t *nb = (uint8_t *)realloc(buf, len);
      if (!nb) { rc = cli_fail(cmd, "out of memory"); goto done; }
      buf = nb; cap = len;
    }
    if (mlsys_pcr_image_jpeg(r, i, k, buf, cap, &len)) { rc = cli_fail(cmd, "%s", mlsys_last_error()); goto done; }
    if (out) {
      char p[4096];
      snprintf(p, sizeof p, "%s/%u.jpg", out, i);
      if (write_all(p, buf, len)) { rc = cli_fail(cmd, "cannot write '%s': %s", p, strerror(errno)); goto done; }
    }
    t0 = mlsys_now();
    st = mlsys_pcr_decode(buf, len, &dd, &px, &w, &h);
    decode_s += mlsys_now() - t0;
    mlsys_pcr_free(px);
    if (st) { rc = cli_fail(cmd, "%s: image %u at %d scans: %s", pos[0], i, k, mlsys_last_error()); goto done; }
  }

  if (ref_s) {
    /* full fidelity through a second reader, so that bytes_read above stays R(k) */
    int nthr = mlsys_ncpus() - 1;
    if (mlsys_pcr_open_file(pos[0], NULL, &ref) || mlsys_pcr_load(ref, in.n_groups)) {
      rc = cli_fail(cmd, "reference: %s", mlsys_last_error());
      goto done;
    }
    job.r = r; job.ref = ref; job.k = k; job.K = in.n_groups; job.dd = &dd;
    job.msssim = (double *)calloc(in.n_images, sizeof(double));
    job.psnr = (double *)calloc(in.n_images, sizeof(double));
    job.st = (mlsys_status *)calloc(in.n_images, sizeof(mlsys_status));
    job.msg = (char (*)[512])calloc(in.n_images, sizeof *job.msg);
    if (!job.msssim || !job.psnr || !job.st || !job.msg) { rc = cli_fail(cmd, "out of memory"); goto done; }
    if (nthr > 0 && mlsys_pool_create(nthr, &pool)) pool = NULL;   /* no pool: serially on this thread */
    if (mlsys_pool_for(pool, (long)in.n_images, ref_one, &job)) { rc = cli_fail(cmd, "%s", mlsys_last_error()); goto done; }
    for (i = 0; i < in.n_images; i++) {
      if (job.st[i]) { rc = cli_fail(cmd, "%s: image %u: %s", pos[0], i, job.msg[i]); goto done; }
      ms_sum += job.msssim[i];
      if (job.msssim[i] < ms_min) ms_min = job.msssim[i];
      if (isinf(job.psnr[i])) identical++;
      else { ps_sum += job.psnr[i]; nps++; }
    }
  }

  if (json) {
    mlsys_json_writer jw;
    mlsys_jw_init(&jw, stdout, 1);
    mlsys_jw_object(&jw);
    mlsys_jw_key(&jw, "images"); mlsys_jw_u64(&jw, in.n_images);
    mlsys_jw_key(&jw, "scans"); mlsys_jw_i64(&jw, k);
    mlsys_jw_key(&jw, "bytes_read"); mlsys_jw_u64(&jw, bytes_read);
    mlsys_jw_key(&jw, "read_s"); mlsys_jw_double(&jw, read_s);
    mlsys_jw_key(&jw, "decode_s"); mlsys_jw_double(&jw, decode_s);
    mlsys_jw_key(&jw, "images_per_s"); mlsys_jw_double(&jw, decode_s > 0 ? in.n_images / decode_s : 0);
    if (ref) {
      mlsys_jw_key(&jw, "msssim_mean"); mlsys_jw_double(&jw, ms_sum / in.n_images);
      mlsys_jw_key(&jw, "msssim_min"); mlsys_jw_double(&jw, ms_min);
      mlsys_jw_key(&jw, "psnr_mean");
      if (nps) mlsys_jw_double(&jw, ps_sum / nps); else mlsys_jw_null(&jw);
      mlsys_jw_key(&jw, "identical"); mlsys_jw_i64(&jw, identical);
    }
    mlsys_jw_end(&jw);
    if (mlsys_jw_finish(&jw)) { rc = cli_fail(cmd, "%s", mlsys_last_error()); goto done; }
  } else {
    char b1[32], b2[32];
    printf("%s at %d of %d scans: %u images, read %s of %s (%.1f%%) in %.3f s%s\n", pos[0], k, in.n_groups, in.n_images,
           cli_fmt_bytes(bytes_read, b1, sizeof b1), cli_fmt_bytes(in.file_bytes, b2, sizeof b2),
           in.file_bytes ? 100.0 * (double)bytes_read / (double)in.file_bytes : 0, read_s, thr > 0 ? " (throttled)" : "");
    printf("decode (%s, one core): %.3f s, %.1f images/s\n", dd.backend == MLSYS_PCR_DEC_STB ? "stb_image" : "libjpeg", decode_s,
           decode_s > 0 ? in.n_images / decode_s : 0);
    if (ref) {
      printf("against full fidelity: MS-SSIM mean %.4f (min %.4f)", ms_sum / in.n_images, ms_min);
      if (nps) printf(", PSNR mean %.2f dB over %d image%s", ps_sum / nps, nps, nps == 1 ? "" : "s");
      if (identical) printf(", %d image%s identical", identical, identical == 1 ? "" : "s");
      printf("\n");
    }
    if (out) printf("wrote %u JPEGs to %s/<index>.jpg\n", in.n_images, out);
  }
  rc = CLI_OK;
done:
  free(buf);
  free(job.msssim); free(job.psnr); free(job.st); free(job.msg);
  mlsys_pool_free(pool);
  mlsys_pcr_close(ref);
  mlsys_pcr_close(r);
  return rc;
}

/* ================================================================================================================
   tune
   ================================================================================================================ */
/* tune's progress on stderr, as `mlsys remat sweep` shows it: a status line while stderr is a terminal, or with
   --progress one line per tenth of each stage (a log gets a bounded number of lines, whatever N is) */
typedef struct {
  mlsys_progress bar;
  int lines;                /* --progress */
  const char *what, *unit;
  uint64_t next;
} tune_progress;
static void tune_progress_begin(tune_progress *p, const char *what, const char *unit, int lines) {
  memset(p, 0, sizeof *p);
  mlsys_progress_begin(&p->bar, "mlsys pcr tune", !lines);
  p->lines = lines;
  p->what = what;
  p->unit = unit;
}
static int tune_progress_step(void *user, uint64_t done, uint64_t total) {
  tune_progress *p = (tune_progress *)user;
  if (p->lines) {
    if (done >= p->next || done == total) {
      fprintf(stderr, "mlsys pcr tune: %s: %llu/%llu %s\n", p->what, (unsigned long long)done, (unsigned long long)total, p->unit);
      p->next = done + (total + 9) / 10;
    }
  } else mlsys_progress_update(&p->bar, "%s: %llu/%llu %s", p->what, (unsigned long long)done, (unsigned long long)total, p->unit);
  return 0;
}

static int pcr_tune(int argc, char **argv, const char *cmd) {
  const char *n_s = NULL, *tau_s = NULL, *bw_s = NULL, *json = NULL, *help = NULL, *progress = NULL;
  cli_opt opts[] = {{"--n-images", 1, &n_s}, {"--tau", 1, &tau_s}, {"--bandwidth", 1, &bw_s}, {"--json", 0, &json},
                    {"--progress", 0, &progress}, {"--help", 0, &help}};
  const char **pos = (const char **)malloc(sizeof(char *) * (size_t)(argc + 1));
  char **paths = NULL;
  int npaths = 0, cappaths = 0, npos, rc, j, K = 0, k, nprof = 0, k_ms, k_io = 0, cores = 1;
  mlsys_pcr_reader **recs = NULL;
  double nimg = 256, tau = 0.95, bw = 0, mean[MLSYS_PCR_MAX_GROUPS + 1], ms[MLSYS_PCR_MAX_GROUPS + 1], dec[MLSYS_PCR_MAX_GROUPS + 1];
  uint64_t total = 0, covered = 0, nscore;
  mlsys_pcr_decode_desc dd;
  mlsys_pcr_sys sys;
  tune_progress prog;

  memset(&prog, 0, sizeof prog);
  if (!pos) return cli_fail(cmd, "out of memory");
  if ((rc = cli_parse_args(argc, argv, opts, (int)(sizeof opts / sizeof opts[0]), cmd, pos, argc, &npos))) goto done;
  if (help) { fputs(pcr_help, stdout); rc = CLI_OK; goto done; }
  rc = CLI_USAGE;
  if (npos == 0) { cli_usage_error(cmd, "needs a directory of records or record files"); goto done; }
  if (pcr_int(cmd, "--n-images", n_s, 1, 1e9, &nimg)) goto done;
  if (tau_s && (cli_parse_double(tau_s, &tau) || !(tau > 0) || tau > 1)) { cli_usage_error(cmd, "--tau must be in (0, 1]"); goto done; }
  if (bw_s && (cli_parse_double(bw_s, &bw) || !(bw > 0))) { cli_usage_error(cmd, "--bandwidth needs a rate in MB/s > 0"); goto done; }
  rc = CLI_ERR;

  /* the records: every *.pcr of a directory (sorted), or the files as given */
  for (j = 0; j < npos; j++) {
    char **add = NULL;
    int nadd = 0, m;
    if (is_dir(pos[j])) {
      DIR *d = opendir(pos[j]);
      struct dirent *e;
      int capadd = 0;
      if (!d) { cli_fail(cmd, "cannot open directory '%s': %s", pos[j], strerror(errno)); goto done; }
      while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        char p[4096];
        if (l < 5 || strcmp(e->d_name + l - 4, ".pcr")) continue;
        snprintf(p, sizeof p, "%s/%s", pos[j], e->d_name);
        if (nadd == capadd) {
          char **q;
          capadd = capadd ? 2 * capadd : 64;
          if (!(q = (char **)realloc(add, (size_t)capadd * sizeof *q))) { closedir(d); free(add); cli_fail(cmd, "out of memory"); goto done; }
          add = q;
        }
        if (!(add[nadd++] = strdup(p))) { closedir(d); while (nadd > 0) free(add[--nadd]); free(add); cli_fail(cmd, "out of memory"); goto done; }
      }
      closedir(d);
      if (nadd == 0) { free(add); cli_fail(cmd, "no .pcr records in '%s'", pos[j]); goto done; }
      qsort(add, (size_t)nadd, sizeof *add, cmp_str);
    } else {
      if (!(add = (char **)malloc(sizeof *add))) { cli_fail(cmd, "out of memory"); goto done; }
      add[nadd++] = strdup(pos[j]);
    }
    for (m = 0; m < nadd; m++) {
      if (npaths == cappaths) {
        char **q;
        cappaths = cappaths ? 2 * cappaths : 64;
        if (!(q = (char **)realloc(paths, (size_t)cappaths * sizeof *q))) { free(add[m]); continue; }
        paths = q;
      }
      paths[npaths++] = add[m];
    }
    free(add);
  }
  if (!(recs = (mlsys_pcr_reader **)calloc((size_t)npaths, sizeof *recs))) { cli_fail(cmd, "out of memory"); goto done; }
  for (j = 0; j < npaths; j++) {
    mlsys_pcr_info in;
    if (!paths[j]) { cli_fail(cmd, "out of memory"); goto done; }
    if (mlsys_pcr_open_file(paths[j], NULL, &recs[j])) { cli_fail(cmd, "%s", mlsys_last_error()); goto done; }
    mlsys_pcr_get_info(recs[j], &in);
    if (j == 0) K = in.n_groups;
    total += in.n_images;
    /* the records that hold the first N images: only they are loaded in full for the MS-SSIM profile */
    if (covered < (uint64_t)nimg) { covered += in.n_images; nprof = j + 1; }
    if (in.n_groups != K) {
      /* the library's message (mlsys_pcr_msssim_profile refuses mixed K), with the two files named */
      mlsys_pcr_reader *two[2] = {recs[0], recs[j]};
      double tmp[MLSYS_PCR_MAX_GROUPS + 1];
      if (mlsys_pcr_msssim_profile(two, 2, 1, NULL, tmp) == MLSYS_OK) { cli_fail(cmd, "%s and %s differ in K", paths[0], paths[j]); goto done; }
      cli_fail(cmd, "%s (%s: K = %d, %s: K = %d; pack them with the same --script)", mlsys_last_error(), paths[0], K, paths[j], in.n_groups);
      goto done;
    }
  }
  if (mlsys_pcr_mean_bytes(recs, npaths, mean)) { cli_fail(cmd, "%s", mlsys_last_error()); goto done; }
  memset(&dd, 0, sizeof dd);
  dd.backend = MLSYS_PCR_DEC_LIBJPEG;
  /* say up front how much work this is: the profile alone can take minutes */
  nscore = (uint64_t)nimg < total ? (uint64_t)nimg : total;
  {
    mlsys_pcr_info in0;
    unsigned m0;
    mlsys_pcr_get_info(recs[0], &in0);
    m0 = in0.n_images < 32 ? in0.n_images : 32;
    fprintf(stderr, "mlsys %s: scoring %llu of %llu images (MS-SSIM at k = 1..%d against k = %d: %llu decodes, %llu scores; "
            "--n-images sets how many)", cmd, (unsigned long long)nscore, (unsigned long long)total, K - 1, K,
            (unsigned long long)(nscore * (uint64_t)K), (unsigned long long)(nscore * (uint64_t)(K - 1)));
    if (bw > 0) fprintf(stderr, ", then timing the decode of %u images at each k (%u decodes)", m0, 2 * m0 * (unsigned)K);
    fprintf(stderr, "\n");
  }
  tune_progress_begin(&prog, "MS-SSIM profile", "images", progress != NULL);
  if (mlsys_pcr_msssim_profile_progress(recs, nprof, (int)nimg, &dd, ms, tune_progress_step, &prog)) {
    mlsys_progress_end(&prog.bar);
    cli_fail(cmd, "%s", mlsys_last_error());
    goto done;
  }
  mlsys_progress_end(&prog.bar);
  k_ms = mlsys_pcr_select_k_msssim(ms, K, tau);

  memset(&sys, 0, sizeof sys);
  if (bw > 0) {
    /* r_dec(k): the first 32 images of the first record decoded with libjpeg on this thread (one core) */
    mlsys_pcr_info in;
    uint32_t m, i;
    long on = sysconf(_SC_NPROCESSORS_ONLN);
    uint8_t *buf = NULL;
    size_t cap = 0;
    cores = on > 0 ? (int)on : 1;
    mlsys_pcr_get_info(recs[0], &in);
    m = in.n_images < 32 ? in.n_images : 32;
    dec[0] = 0;
    tune_progress_begin(&prog, "decode rate", "scan counts", progress != NULL);
    for (k = 1; k <= K; k++) {
      double t = 0;
      for (i = 0; i < m; i++) {
        size_t len;
        uint8_t *px;
        int w, h;
        double t0, best = 0;
        int rep;
        if (mlsys_pcr_image_jpeg(recs[0], i, k, NULL, 0, &len)) { free(buf); mlsys_progress_end(&prog.bar); cli_fail(cmd, "%s", mlsys_last_error()); goto done; }
        if (len > cap) {
          uint8_t *nb = (uint8_t *)realloc(buf, len);
          if (!nb) { free(buf); mlsys_progress_end(&prog.bar); cli_fail(cmd, "out of memory"); goto done; }
          buf = nb; cap = len;
        }
        mlsys_pcr_image_jpeg(recs[0], i, k, buf, cap, &len);
        for (rep = 0; rep < 2; rep++) {   /* the faster of two decodes: a preempted one says nothing about the decoder */
          double dt;
          t0 = mlsys_now();
          if (mlsys_pcr_decode(buf, len, &dd, &px, &w, &h)) { free(buf); mlsys_progress_end(&prog.bar); cli_fail(cmd, "%s", mlsys_last_error()); goto done; }
          dt = mlsys_now() - t0;
          mlsys_pcr_free(px);
          best = rep == 0 || dt < best ? dt : best;
        }
        t += best;
      }
      dec[k] = t > 0 ? m / t : 0;
      tune_progress_step(&prog, (uint64_t)k, (uint64_t)K);
    }
    mlsys_progress_end(&prog.bar);
    free(buf);
    sys.bandwidth_Bps = bw * 1e6;
    sys.cores = cores;
    sys.dec_img_s_core = dec;
    k_io = mlsys_pcr_select_k_io(&sys, mean, K, 1);
  }

  if (json) {
    mlsys_json_writer jw;
#define TUNE_ARRAY(key, expr)                             \
  do {                                                    \
    mlsys_jw_key(&jw, key); mlsys_jw_array(&jw);          \
    for (k = 1; k <= K; k++) mlsys_jw_double(&jw, (expr)); \
    mlsys_jw_end(&jw);                                    \
  } while (0)
    mlsys_jw_init(&jw, stdout, 1);
    mlsys_jw_object(&jw);
    mlsys_jw_key(&jw, "records"); mlsys_jw_i64(&jw, npaths);
    mlsys_jw_key(&jw, "images"); mlsys_jw_u64(&jw, total);
    mlsys_jw_key(&jw, "groups"); mlsys_jw_i64(&jw, K);
    mlsys_jw_key(&jw, "n_images"); mlsys_jw_u64(&jw, (uint64_t)nimg < total ? (uint64_t)nimg : total);
    mlsys_jw_key(&jw, "tau"); mlsys_jw_double(&jw, tau);
    TUNE_ARRAY("k", k);
    TUNE_ARRAY("mean_bytes", mean[k]);
    TUNE_ARRAY("fraction", mean[K] > 0 ? mean[k] / mean[K] : 0);
    TUNE_ARRAY("max_speedup", mlsys_pcr_max_speedup(mean, K, k));
    TUNE_ARRAY("msssim", ms[k]);
    mlsys_jw_key(&jw, "k_msssim"); mlsys_jw_i64(&jw, k_ms);
    if (bw > 0) {
      mlsys_jw_key(&jw, "bandwidth_Bps"); mlsys_jw_double(&jw, sys.bandwidth_Bps);
      mlsys_jw_key(&jw, "cores"); mlsys_jw_i64(&jw, cores);
      TUNE_ARRAY("io_rate", sys.bandwidth_Bps / mean[k]);
      TUNE_ARRAY("decode_rate", dec[k]);
      TUNE_ARRAY("predicted_rate", mlsys_pcr_predict_rate(&sys, mean, k));
      mlsys_jw_key(&jw, "k_io"); mlsys_jw_i64(&jw, k_io);
      mlsys_jw_key(&jw, "k_combined");
      mlsys_jw_i64(&jw, k_ms > k_io ? k_ms : k_io);
    }
#undef TUNE_ARRAY
    mlsys_jw_end(&jw);
    if (mlsys_jw_finish(&jw)) { cli_fail(cmd, "%s", mlsys_last_error()); goto done; }
  } else {
    printf("%d record%s, %llu images, K = %d; MS-SSIM over the first %llu images (libjpeg) against k = %d\n", npaths, npaths == 1 ? "" : "s",
           (unsigned long long)total, K, (unsigned long long)((uint64_t)nimg < total ? (uint64_t)nimg : total), K);
    printf("   k   E[s_k] B/image   of full   max speedup   MS-SSIM");
    if (bw > 0) printf("   storage img/s   decode img/s/core   predicted img/s");
    printf("\n");
    for (k = 1; k <= K; k++) {
      printf("  %2d  %15.0f  %7.2f%%  %11.2fx  %8.4f", k, mean[k], mean[K] > 0 ? 100 * mean[k] / mean[K] : 0, mlsys_pcr_max_speedup(mean, K, k), ms[k]);
      if (bw > 0) printf("  %14.1f  %18.1f  %16.1f", sys.bandwidth_Bps / mean[k], dec[k], mlsys_pcr_predict_rate(&sys, mean, k));
      printf("%s\n", k == k_ms ? "   <- MS-SSIM rule" : "");
    }
    printf("MS-SSIM rule (tau %.3g): k = %d, reading %.1f%% of the bytes (up to %.2fx faster when I/O-bound)\n", tau, k_ms,
           mean[K] > 0 ? 100 * mean[k_ms] / mean[K] : 0, mlsys_pcr_max_speedup(mean, K, k_ms));
    if (bw > 0) {
      double io = sys.bandwidth_Bps / mean[k_io], cpu = cores * dec[k_io];
      if (io >= cpu)
        printf("I/O model at %.4g MB/s and %d cores: k = %d, the highest fidelity storage keeps up with (%.1f images/s, decode-bound)\n",
               bw, cores, k_io, mlsys_pcr_predict_rate(&sys, mean, k_io));
      else
        printf("I/O model at %.4g MB/s and %d cores: I/O-bound at every k; k = %d reads the fewest bytes (%.1f images/s)\n", bw, cores,
               k_io, mlsys_pcr_predict_rate(&sys, mean, k_io));
      /* spec §3.7(c): fidelity above the MS-SSIM floor is free while storage keeps up */
      printf("combined (spec 3.7c): k = max(%d, %d) = %d, %.1f images/s predicted\n", k_ms, k_io, k_ms > k_io ? k_ms : k_io,
             mlsys_pcr_predict_rate(&sys, mean, k_ms > k_io ? k_ms : k_io));
    }
  }
  rc = CLI_OK;
done:
  mlsys_progress_end(&prog.bar);   /* clears a status line left by an error */
  if (recs) for (j = 0; j < npaths; j++) mlsys_pcr_close(recs[j]);
  for (j = 0; j < npaths; j++) free(paths[j]);
  free(recs); free(paths); free(pos);
  return rc;
}

int cmd_pcr(int argc, char **argv) {
  if (argc < 3 || !strcmp(argv[2], "--help") || !strcmp(argv[2], "-h")) {
    fputs(pcr_help, argc < 3 ? stderr : stdout);
    return argc < 3 ? CLI_USAGE : CLI_OK;
  }
  if (!strcmp(argv[2], "pack")) return pcr_pack(argc, argv, "pcr pack");
  if (!strcmp(argv[2], "info")) return pcr_info(argc, argv, "pcr info");
  if (!strcmp(argv[2], "read")) return pcr_read(argc, argv, "pcr read");
  if (!strcmp(argv[2], "tune")) return pcr_tune(argc, argv, "pcr tune");
  return cli_usage_error("pcr", "unknown verb '%s' (pack, info, read, tune)", argv[2]);
}
