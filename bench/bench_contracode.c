/* bench/bench_contracode.c — throughput of the ContraCode JavaScript front end (mlsys_contracode.h §1) on the
   Debian-packaged corpus (libjs-underscore, node-acorn, node-marked; bench/RESULTS.md §15).

   build/bench_contracode parse [--reps N]
     For each file: parse (best of N repetitions, default 20), then parse + compact print, in MB/s and functions/s
     (functions = mlsys_contracode_js_functions spans). bench/peers/acorn_parse.js times acorn in Node the same way.

   build/bench_contracode augment [--n N] [--reps R] [--dump FILE]
     Alg. 1 (section 4): every function of the corpus with at most 100 lines, as a program unit (§2.1), gets N
     samples (default 20) with the REPO_EFFECTIVE and the SAFE presets; variants/s on one core (best of R runs,
     default 3), distinct variants per function. --dump writes the units (JSON list of strings) for
     bench/peers/augment_node.js, the authors'-style Babel + terser pipeline. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_contracode.h"
#include "bench/bench_machine.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const struct { const char *path; int module; } files[] = {
  {"/usr/share/javascript/underscore/underscore.js", 0},
  {"/usr/share/nodejs/acorn/dist/acorn.js", 0},
  {"/usr/share/nodejs/acorn/dist/acorn.mjs", 1},
  {"/usr/share/nodejs/marked/lib/marked.cjs", 0},
  {"/usr/share/nodejs/marked/lib/marked.umd.js", 0},
  {"/usr/share/nodejs/marked/lib/marked.esm.js", 1},
};

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int bench_augment(int argc, char **argv) {
  char model[256], date[64];
  char **units = NULL;
  size_t *ulen = NULL, nu = 0, cap = 0, bytes = 0;
  int nsamp = 20, reps = 3, i, a, p;
  const char *dump = NULL;
  for (a = 2; a + 1 < argc; a += 2) {
    if (!strcmp(argv[a], "--n")) nsamp = atoi(argv[a + 1]);
    else if (!strcmp(argv[a], "--reps")) reps = atoi(argv[a + 1]);
    else if (!strcmp(argv[a], "--dump")) dump = argv[a + 1];
  }
  if (nsamp < 1) nsamp = 1;
  if (reps < 1) reps = 1;
  for (i = 0; i < (int)(sizeof files / sizeof files[0]); i++) {
    char *src;
    size_t n;
    mlsys_contracode_js_ast ast;
    mlsys_contracode_fn_span *fs;
    int nf, f;
    if (files[i].module || mlsys_read_file(files[i].path, &src, &n) != MLSYS_OK) continue;   /* scripts only */
    if (mlsys_contracode_js_parse(src, n, 0, &ast) != MLSYS_OK || mlsys_contracode_js_functions(&ast, &fs, &nf) != MLSYS_OK) return 1;
    for (f = 0; f < nf; f++) {
      mlsys_contracode_js_ast t;
      char *u;
      size_t un;
      if (fs[f].nlines > 100 || mlsys_contracode_fn_unit(src, n, &fs[f], &u, &un) != MLSYS_OK) continue;
      if (mlsys_contracode_js_parse(u, un, 0, &t) != MLSYS_OK) { free(u); continue; }
      mlsys_contracode_js_free(&t);
      if (nu == cap) {
        cap = cap ? 2 * cap : 1024;
        units = (char **)realloc(units, cap * sizeof *units);
        ulen = (size_t *)realloc(ulen, cap * sizeof *ulen);
      }
      units[nu] = u, ulen[nu++] = un, bytes += un;
    }
    free(fs);
    mlsys_contracode_js_free(&ast);
    free(src);
  }
  if (!nu) {
    printf("no corpus files (scripts/install-deps.sh installs them)\n");
    return 1;
  }
  if (dump) {
    FILE *fo = fopen(dump, "w");
    size_t k;
    if (!fo) return 1;
    fputc('[', fo);
    for (k = 0; k < nu; k++) {
      size_t j;
      fputs(k ? ",\n\"" : "\"", fo);
      for (j = 0; j < ulen[k]; j++) {
        unsigned char ch = (unsigned char)units[k][j];
        if (ch == '"' || ch == '\\') fprintf(fo, "\\%c", ch);
        else if (ch < 32) fprintf(fo, "\\u%04x", ch);
        else fputc(ch, fo);
      }
      fputc('"', fo);
    }
    fputs("]\n", fo);
    fclose(fo);
  }
  bench_machine(model, sizeof model, date, sizeof date);
  printf("# bench_contracode augment: %s, %s, %zu functions (%zu bytes, mean %.0f), N = %d, best of %d, 1 thread\n",
         model, date, nu, bytes, (double)bytes / (double)nu, nsamp, reps);
  for (p = 0; p < 2; p++) {
    mlsys_contracode_aug_cfg c;
    double best = 1e30;
    long distinct = 0, atleast20 = 0;
    int r;
    mlsys_contracode_aug_preset(p ? MLSYS_CONTRACODE_AUG_SAFE : MLSYS_CONTRACODE_AUG_REPO_EFFECTIVE, &c);
    for (r = 0; r < reps; r++) {
      double t0 = now_s(), t;
      size_t k;
      distinct = atleast20 = 0;
      for (k = 0; k < nu; k++) {
        mlsys_contracode_strset v;
        if (mlsys_contracode_augment_variants(units[k], ulen[k], &c, nsamp, (uint64_t)k, &v) != MLSYS_OK) {
          printf("unit %zu: %s\n", k, mlsys_last_error());
          return 1;
        }
        distinct += v.n;
        atleast20 += v.n - 1 >= 20;
        mlsys_contracode_strset_free(&v);
      }
      t = now_s() - t0;
      if (t < best) best = t;
    }
    printf("%-15s %10.0f variants/s  %8.1f us/variant  distinct per function %.1f of %d (original included); %ld of %zu functions have >= 20 distinct variants\n",
           p ? "SAFE" : "REPO_EFFECTIVE", (double)nu * nsamp / best, best / ((double)nu * nsamp) * 1e6,
           (double)distinct / (double)nu, nsamp + 1, atleast20, nu);
  }
  {
    size_t k;
    for (k = 0; k < nu; k++) free(units[k]);
    free(units);
    free(ulen);
  }
  return 0;
}

int main(int argc, char **argv) {
  char model[256], date[64];
  int reps = 20, i, r;
  double tot_bytes = 0, tot_parse = 0, tot_pp = 0, tot_fn = 0;
  if (argc >= 2 && !strcmp(argv[1], "augment")) return bench_augment(argc, argv);
  if (argc < 2 || strcmp(argv[1], "parse") != 0) {
    fprintf(stderr, "usage: bench_contracode parse [--reps N] | augment [--n N] [--reps R] [--dump FILE]\n");
    return 2;
  }
  if (argc >= 4 && !strcmp(argv[2], "--reps")) reps = atoi(argv[3]);
  if (reps < 1) reps = 1;
  bench_machine(model, sizeof model, date, sizeof date);
  printf("# bench_contracode parse: %s, %s, best of %d\n", model, date, reps);
  printf("%-48s %9s %6s %10s %10s %12s %12s\n", "file", "bytes", "fns", "parse MB/s", "+print MB/s", "parse fn/s",
         "+print fn/s");
  for (i = 0; i < (int)(sizeof files / sizeof files[0]); i++) {
    char *src;
    size_t n;
    double best_p = 1e30, best_pp = 1e30;
    int nf = 0;
    if (mlsys_read_file(files[i].path, &src, &n) != MLSYS_OK) {
      printf("%-48s missing (scripts/install-deps.sh installs it)\n", files[i].path);
      continue;
    }
    for (r = 0; r < reps; r++) {
      mlsys_contracode_js_ast a;
      mlsys_contracode_fn_span *f;
      char *out;
      double t0 = now_s(), t1, t2;
      if (mlsys_contracode_js_parse(src, n, files[i].module, &a) != MLSYS_OK) {
        printf("%s: %s\n", files[i].path, mlsys_last_error());
        return 1;
      }
      t1 = now_s();
      mlsys_contracode_js_print(&a, NULL, &out, NULL);
      t2 = now_s();
      if (t1 - t0 < best_p) best_p = t1 - t0;
      if (t2 - t0 < best_pp) best_pp = t2 - t0;
      if (!r) {
        mlsys_contracode_js_functions(&a, &f, &nf);
        free(f);
      }
      free(out);
      mlsys_contracode_js_free(&a);
    }
    printf("%-48s %9zu %6d %10.1f %10.1f %12.0f %12.0f\n", files[i].path, n, nf, n / best_p / 1e6, n / best_pp / 1e6,
           nf / best_p, nf / best_pp);
    tot_bytes += (double)n;
    tot_parse += best_p;
    tot_pp += best_pp;
    tot_fn += nf;
    free(src);
  }
  if (tot_parse > 0)
    printf("%-48s %9.0f %6.0f %10.1f %10.1f %12.0f %12.0f\n", "total", tot_bytes, tot_fn, tot_bytes / tot_parse / 1e6,
           tot_bytes / tot_pp / 1e6, tot_fn / tot_parse, tot_fn / tot_pp);
  return 0;
}
