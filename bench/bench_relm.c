/* bench/bench_relm.c — mlsys_relm.h benchmarks (spec relm.md §7.5 engineering goals). So far: the GPT-2 tokenizer's
   encode throughput on real Debian text (/usr/share/common-licenses and every /usr/share/doc/<pkg>/copyright,
   concatenated) against the reference, npm gpt-3-encoder's Encoder.js under node, timed on the same text in the same
   run (node times itself, so its start-up is not counted; Encoder.js is slow, so it gets the first 256 kB and ours is
   timed on the same 256 kB for the ratio, besides the whole corpus). Target: >= 5 MB/s per core. Run:
   make build/bench_relm && ./build/bench_relm [--reps N] */
#define MLSYS_IMPLEMENTATION
#include "mlsys_relm.h"
#include "bench/bench_machine.h"
#include <dirent.h>
#include <time.h>
#include <unistd.h>

static double thread_cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* the corpus: common-licenses, then the copyright files in name order */
static char *corpus(size_t *len, int *nfiles) {
  static const char *const dirs[] = {"/usr/share/common-licenses"};
  char *all = NULL;
  size_t n = 0, cap = 0;
  struct dirent **ents;
  int i, k;
  *nfiles = 0;
  for (k = 0; k < 2; k++) {
    const char *dir = k == 0 ? dirs[0] : "/usr/share/doc";
    int m = scandir(dir, &ents, NULL, alphasort);
    for (i = 0; i < m; i++) {
      char p[4096], *d;
      size_t l;
      if (ents[i]->d_name[0] != '.') {
        if (k == 0) snprintf(p, sizeof p, "%s/%s", dir, ents[i]->d_name);
        else snprintf(p, sizeof p, "%s/%s/copyright", dir, ents[i]->d_name);
        if (!mlsys_read_file(p, &d, &l)) {
          if (n + l + 1 > cap) { cap = (n + l + 1) * 2; all = (char *)realloc(all, cap); }
          memcpy(all + n, d, l);
          n += l;
          all[n++] = '\n';
          (*nfiles)++;
          mlsys_free(d);
        }
      }
      free(ents[i]);
    }
    if (m > 0) free(ents);
  }
  *len = n;
  return all;
}

int main(int argc, char **argv) {
  char model[256], date[64], la[64], *text;
  size_t n, ntok = 0, ntok_small = 0, n_small = 0;
  double best_small = 0;
  int reps = 5, r, nfiles;
  double best = 1e30, node_best = -1;
  mlsys_relm_vocab *v;
  if (argc > 2 && !strcmp(argv[1], "--reps")) reps = atoi(argv[2]);
  bench_machine(model, sizeof model, date, sizeof date);
  bench_loadavg(la, sizeof la);
  printf("machine: %s; load average %s\ndate: %s\n", model, la, date);
  if (mlsys_relm_vocab_load_gpt2_dir(NULL, &v)) { fprintf(stderr, "bench_relm: %s (run scripts/install-deps.sh)\n", mlsys_last_error()); return 1; }
  text = corpus(&n, &nfiles);
  printf("corpus: %d Debian text files, %.2f MB\n", nfiles, (double)n / 1e6);
  for (r = 0; r < reps; r++) {
    int32_t *t;
    double t0 = thread_cpu();
    if (mlsys_relm_encode(v, text, n, &t, &ntok)) { fprintf(stderr, "%s\n", mlsys_last_error()); return 1; }
    t0 = thread_cpu() - t0;
    if (t0 < best) best = t0;
    mlsys_free(t);
  }
  {
    /* the reference on the first 256 kB (cut at a newline): node reads the file and times encode() itself */
    size_t m = n < 262144 ? n : 262144;
    double ours = 1e30;
    while (m < n && text[m - 1] != '\n') m--;
    for (r = 0; r < reps; r++) {
      int32_t *t;
      size_t nt;
      double t0 = thread_cpu();
      mlsys_relm_encode(v, text, m, &t, &nt);
      t0 = thread_cpu() - t0;
      if (t0 < ours) ours = t0;
      if (r == 0) ntok_small = nt;
      mlsys_free(t);
    }
    best_small = ours;
    n_small = m;
    char path[] = "/tmp/mlsys_bench_relm_XXXXXX", cmd[1024];
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w"), *p;
    fwrite(text, 1, m, f);
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "node -e 'const e=require(\"./.deps/npm/node_modules/gpt-3-encoder/Encoder.js\"); const s=require(\"fs\").readFileSync(process.argv[1],\"utf8\");"
             " let b=1e30, n=0; for (let r=0;r<%d;r++){ const t0=process.cpuUsage(); n=e.encode(s).length; const d=process.cpuUsage(t0); b=Math.min(b,(d.user+d.system)/1e6);}"
             " console.log(b, n)' %s 2>/dev/null",
             reps < 3 ? reps : 3, path);
    if ((p = popen(cmd, "r"))) {
      double nb;
      long nn;
      if (fscanf(p, "%lf %ld", &nb, &nn) == 2) {
        node_best = nb;
        if ((size_t)nn != ntok_small) printf("note: node gives %ld tokens, ours %zu (node reads the file as UTF-8)\n", nn, ntok_small);
      }
      pclose(p);
    }
    unlink(path);
  }
  printf("\n| tokenizer | text | tokens | best CPU s (of %d) | MB/s per core | tokens/s |\n|---|---|---|---|---|---|\n", reps);
  printf("| mlsys_relm_encode | whole corpus, %.2f MB | %zu | %.3f | **%.1f** | %.2fM |\n", (double)n / 1e6, ntok, best, (double)n / 1e6 / best,
         (double)ntok / best / 1e6);
  printf("| mlsys_relm_encode | first %.0f kB | %zu | %.4f | %.1f | %.2fM |\n", (double)n_small / 1e3, ntok_small, best_small,
         (double)n_small / 1e6 / best_small, (double)ntok_small / best_small / 1e6);
  if (node_best > 0)
    printf("| gpt-3-encoder 1.1.4, node | first %.0f kB | %zu | %.3f | %.2f | %.3fM |\n", (double)n_small / 1e3, ntok_small, node_best,
           (double)n_small / 1e6 / node_best, (double)ntok_small / node_best / 1e6);
  else
    printf("| gpt-3-encoder (node) | - | - | - | not run (node or the package missing) | - |\n");
  printf("\ntarget >= 5 MB/s per core: %s", (double)n / 1e6 / best >= 5 ? "met" : "NOT met");
  if (node_best > 0) printf("; %.0fx the reference on the same 256 kB", node_best / best_small);
  printf("\n");
  free(text);
  mlsys_relm_vocab_free(v);
  return 0;
}
