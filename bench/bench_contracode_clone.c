/* bench/bench_contracode_clone.c — zero-shot clone detection on the offline set (mlsys_contracode.h §7, spec §7.5;
   bench/RESULTS.md §17): the module files of Debian's node-lodash (lodash-es), node-underscore (modules/) and
   node-ramda (es/), a problem being an API name in two or more of them. Prints Table 2.2's shape (AUROC ± SE / AP,
   natural and adversarial N = 4 and 16 from 16 terser-only samples of the first program of each pair, the repo's
   sliding windows) for the heuristic baselines available without a trained encoder: edit distance and a
   bag-of-tokens cosine over SentencePiece ids, with the corrected pairs and the repo-faithful ones, then the
   spread over seeds and the time taken.

   build/bench_contracode_clone [--vocab M.model] [--seeds K] */
#define MLSYS_IMPLEMENTATION
#include "mlsys_contracode.h"
#include "bench/bench_machine.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct {
  mlsys_contracode_clone_metrics nat, adv4, adv16;
  double secs;
  size_t npos, nneg;
} row;

static int run_one(const mlsys_contracode_clone_set *s, const mlsys_contracode_sp *sp, int kind, int mode, int adv,
                   uint64_t seed, row *out) {
  mlsys_contracode_clone_pair *p = NULL;
  size_t np = 0, nn = 0, n, i;
  float *nat = NULL, *av = NULL;
  uint8_t *lab = NULL;
  mlsys_contracode_scorer sc;
  mlsys_contracode_aug_cfg cfg;
  double t0 = now_s();
  int ok = 0;
  if (mlsys_contracode_clone_pairs(s->problem, s->nprograms, mode, seed, &p, &np, &nn) != MLSYS_OK) return 0;
  n = np + nn;
  nat = (float *)malloc(n * sizeof *nat);
  av = (float *)malloc(n * 16 * sizeof *av);
  lab = (uint8_t *)malloc(n);
  memset(&sc, 0, sizeof sc);
  sc.kind = kind, sc.sp = sp;
  if (nat && av && lab && mlsys_contracode_clone_adversary(adv, &cfg) == MLSYS_OK &&
      mlsys_contracode_clone_sims((const char *const *)s->src, s->len, s->nprograms, p, n, &sc, &cfg, 16, seed, nat,
                                  av) == MLSYS_OK) {
    for (i = 0; i < n; i++) lab[i] = p[i].label;
    ok = mlsys_contracode_clone_metrics_of(nat, lab, n, &out->nat) == MLSYS_OK &&
         mlsys_contracode_clone_adv_metrics(av, lab, n, 16, 4, -1, &out->adv4) == MLSYS_OK &&
         mlsys_contracode_clone_adv_metrics(av, lab, n, 16, 16, -1, &out->adv16) == MLSYS_OK;
  }
  out->secs = now_s() - t0;
  out->npos = np, out->nneg = nn;
  free(p), free(nat), free(av), free(lab);
  return ok;
}

static void print_row(const char *name, const row *r) {
  printf("| %-36s | %5.2f ± %4.2f / %5.2f | %5.2f ± %4.2f / %5.2f | %5.2f ± %4.2f / %5.2f | %5.2f | %4zu+%-4zu | %5.2f |\n",
         name, 100 * r->nat.auroc, 100 * r->nat.se, 100 * r->nat.ap, 100 * r->adv4.auroc, 100 * r->adv4.se,
         100 * r->adv4.ap, 100 * r->adv16.auroc, 100 * r->adv16.se, 100 * r->adv16.ap, 100 * r->nat.accuracy,
         r->npos, r->nneg, r->secs);
}

int main(int argc, char **argv) {
  static const char *const libs[3][2] = MLSYS_CONTRACODE_CLONE_DEFAULT_LIBS;
  const char *vocab = "tests/data/contracode/js_identity_1k.model";
  char model[256], date[64];
  int nseeds = 5, i, a, nfiles = 0, n2 = 0, n3 = 0, kind, mode;
  mlsys_contracode_clone_file *files = NULL;
  mlsys_contracode_clone_set s;
  mlsys_contracode_sp *sp = NULL;
  row r;
  for (a = 1; a + 1 < argc; a += 2) {
    if (!strcmp(argv[a], "--vocab")) vocab = argv[a + 1];
    else if (!strcmp(argv[a], "--seeds")) nseeds = atoi(argv[a + 1]);
  }
  if (nseeds < 1) nseeds = 1;
  bench_machine(model, sizeof model, date, sizeof date);
  printf("# bench_contracode_clone: %s, %s\n", model, date);
  for (i = 0; i < 3; i++)
    if (mlsys_contracode_clone_read_dir(libs[i][0], libs[i][1], &files, &nfiles) != MLSYS_OK) {
      printf("%s: skipped (scripts/install-deps.sh installs node-lodash node-underscore node-ramda)\n",
             mlsys_last_error());
      mlsys_contracode_clone_files_free(files, nfiles);
      return 0;
    }
  if (mlsys_contracode_clone_set_build(files, nfiles, 2, &s) != MLSYS_OK ||
      mlsys_contracode_sp_load(vocab, &sp) != MLSYS_OK) {
    fprintf(stderr, "bench_contracode_clone: %s\n", mlsys_last_error());
    mlsys_contracode_clone_files_free(files, nfiles);
    return 1;
  }
  for (i = 0; i < s.nproblems; i++) s.problem_nlibs[i] == 2 ? n2++ : n3++;
  printf("set: %d files, %d left out; %d problems (%d in 2 libraries, %d in 3), %d programs; vocab %s (%d pieces)\n\n",
         nfiles, s.nskipped, s.nproblems, n2, n3, s.nprograms, vocab, mlsys_contracode_sp_size(sp));
  printf("| scorer, pairs, adversary (seed 1)    | natural AUROC / AP    | adv. N=4              | adv. N=16             "
         "| acc.  | pos+neg   | s     |\n");
  printf("|---|---|---|---|---|---|---|\n");
  for (mode = 0; mode <= 1; mode++)
    for (kind = MLSYS_CONTRACODE_SCORE_EDIT; kind <= MLSYS_CONTRACODE_SCORE_BOW; kind++) {
      int adv;
      for (adv = MLSYS_CONTRACODE_ADV_TERSER; adv <= MLSYS_CONTRACODE_ADV_SAFE; adv++) {
        char name[96];
        if (mode && adv == MLSYS_CONTRACODE_ADV_SAFE) continue;
        snprintf(name, sizeof name, "%s, %s, %s", kind == MLSYS_CONTRACODE_SCORE_EDIT ? "edit distance" : "bag of tokens",
                 mode ? "repo-faithful" : "distinct", adv == MLSYS_CONTRACODE_ADV_SAFE ? "SAFE" : "terser");
        if (!run_one(&s, sp, kind, mode, adv, 1, &r)) {
          fprintf(stderr, "bench_contracode_clone: %s\n", mlsys_last_error());
          return 1;
        }
        print_row(name, &r);
      }
    }
  /* the spread over seeds (pairs and samples both redrawn): the natural SE above is the Hanley–McNeil one */
  printf("\nover %d seeds (distinct pairs, terser): mean ± sd of AUROC\n", nseeds);
  for (kind = MLSYS_CONTRACODE_SCORE_EDIT; kind <= MLSYS_CONTRACODE_SCORE_BOW; kind++) {
    double m[3] = {0, 0, 0}, q[3] = {0, 0, 0};
    int k;
    for (k = 1; k <= nseeds; k++) {
      double v[3];
      if (!run_one(&s, sp, kind, 0, MLSYS_CONTRACODE_ADV_TERSER, (uint64_t)k, &r)) return 1;
      v[0] = r.nat.auroc, v[1] = r.adv4.auroc, v[2] = r.adv16.auroc;
      for (i = 0; i < 3; i++) m[i] += v[i], q[i] += v[i] * v[i];
    }
    for (i = 0; i < 3; i++) {
      m[i] /= nseeds;
      q[i] = nseeds > 1 ? sqrt((q[i] - nseeds * m[i] * m[i]) / (nseeds - 1) > 0 ? (q[i] - nseeds * m[i] * m[i]) / (nseeds - 1) : 0) : 0;
    }
    printf("  %-14s natural %5.2f ± %4.2f   N=4 %5.2f ± %4.2f   N=16 %5.2f ± %4.2f\n",
           kind == MLSYS_CONTRACODE_SCORE_EDIT ? "edit distance" : "bag of tokens", 100 * m[0], 100 * q[0],
           100 * m[1], 100 * q[1], 100 * m[2], 100 * q[2]);
  }
  mlsys_contracode_sp_free(sp);
  mlsys_contracode_clone_set_free(&s);
  mlsys_contracode_clone_files_free(files, nfiles);
  return 0;
}
