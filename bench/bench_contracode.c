/* bench/bench_contracode.c — throughput of the ContraCode JavaScript front end (mlsys_contracode.h §1) on the
   Debian-packaged corpus (libjs-underscore, node-acorn, node-marked; bench/RESULTS.md §15).

   build/bench_contracode parse [--reps N]
     For each file: parse (best of N repetitions, default 20), then parse + compact print, in MB/s and functions/s
     (functions = mlsys_contracode_js_functions spans). bench/peers/acorn_parse.js times acorn in Node the same way. */
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

int main(int argc, char **argv) {
  char model[256], date[64];
  int reps = 20, i, r;
  double tot_bytes = 0, tot_parse = 0, tot_pp = 0, tot_fn = 0;
  if (argc < 2 || strcmp(argv[1], "parse") != 0) {
    fprintf(stderr, "usage: bench_contracode parse [--reps N]\n");
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
