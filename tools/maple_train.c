/* tools/maple_train.c — measures MAPLE's training set on this machine and trains the throughput predictor that ships as
   tools/maple_predictor.bin (thesis §6.3.3; spec B3.5 "Training data").

   measure: for every (key set, insert fraction, lookup distribution) of the list below, a workload of --init bulk-loaded
            keys and --ops operations is made (seeded; the same on every machine) and every configuration of the default
            grid runs it once on this machine. One CSV row per run: set, insert_frac, zipf, config, mops, bytes.
   train:   the traces are made again from their seeds (so the CSV is all that has to be kept), rendered to trace images,
            and the CNN + configuration embeddings + MLP is trained on them. Key sets listed as held out are not trained
            on; the report gives the held-out error and how often the tuner's choice (top-10 by prediction, the fastest
            measured) is within 90 % of the best configuration (spec §7.2 test 5).

   eval:    the shipped predictor (--out names it) against rules that see only the insert fraction, on the held-out
            key sets, from the CSV's measurements (see eval() below; RESULTS §9.3).

   usage: maple_train measure --csv tools/maple_training.csv [--init N] [--ops N] [--sets a,b,..]
          maple_train train --csv tools/maple_training.csv --out tools/maple_predictor.bin [--epochs E] [--threads T]
          maple_train eval --csv tools/maple_training.csv --out tools/maple_predictor.bin [--top-k K]
          maple_train rule --csv tools/maple_training.csv       (prints the table of MLSYS_INDEX_PREDICT_RULE)
   (tools/maple_train.sh runs both with the values used for the shipped files.) */
#define MLSYS_IMPLEMENTATION
#include "mlsys_index.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *all_sets[] = {"gen:uniform",  "gen:normal",      "gen:lognormal", "gen:clustered", "gen:osm_like",
                                 "gen:words_like", "gen:ipv4_like", "real:cities",   "real:ipv4",     "real:words"};
/* held out of training: one real set per kind of structure the generators imitate */
static const char *held_out[] = {"real:cities", "real:words"};
static const double fracs[] = {0, 0.15, 0.5, 0.85, 1};
static const double zipfs[] = {0, 0.99};

static int is_held_out(const char *set) {
  size_t i;
  for (i = 0; i < sizeof held_out / sizeof *held_out; i++)
    if (!strcmp(set, held_out[i])) return 1;
  return 0;
}

typedef struct {
  char set[64];
  double frac, zipf;
  size_t n;
  mlsys_index_config *cfg;
  double *mops;
} trace_rows;

/* keys of a set at the training scale: generators make n_keys keys, real sets are used whole */
static mlsys_status set_keys(const char *set, size_t n_keys, uint64_t **keys, size_t *n) {
  char spec[128];
  if (!strncmp(set, "gen:", 4)) snprintf(spec, sizeof spec, "%s:%zu", set, n_keys);
  else snprintf(spec, sizeof spec, "%s", set);
  return mlsys_index_keys_load(spec, 1, keys, n);
}

static mlsys_status make_workload(const char *set, double frac, double zipf, size_t n_keys, size_t init, size_t ops,
                                  uint64_t **keys, size_t *nk, mlsys_index_workload *w) {
  mlsys_index_workload_opts wo;
  mlsys_status st;
  if ((st = set_keys(set, n_keys, keys, nk))) return st;
  memset(&wo, 0, sizeof wo);
  wo.n_init = init < *nk / 2 ? init : *nk / 2;
  wo.n_ops = ops;
  wo.insert_frac = frac;
  wo.zipf = zipf;
  wo.seed = 7;
  return mlsys_index_workload_make(*keys, *nk, &wo, w);
}

/* every (n_bulk / m)-th bulk key, m = min(n_bulk, 65,536): the sample mlsys_index_tune places trace keys by */
static uint64_t *bulk_sample(const mlsys_index_workload *w, size_t *m) {
  size_t j, stride;
  uint64_t *sample;
  *m = w->n_bulk < 65536 ? w->n_bulk : 65536;
  stride = *m ? w->n_bulk / *m : 1;
  if (!(sample = (uint64_t *)malloc((*m ? *m : 1) * sizeof *sample))) {
    fprintf(stderr, "maple_train: out of memory\n");
    exit(1);
  }
  for (j = 0; j < *m; j++) sample[j] = w->bulk[j * stride];
  return sample;
}

static int measure(const char *csv, size_t n_keys, size_t init, size_t ops, const char *only) {
  FILE *f = fopen(csv, "w");
  mlsys_index_config *grid = NULL;
  size_t si, fi, zi, g, n_grid = 0;
  if (!f) { fprintf(stderr, "maple_train: cannot write %s\n", csv); return 1; }
  fprintf(f, "set,insert_frac,zipf,config,mops,bytes\n");
  for (si = 0; si < sizeof all_sets / sizeof *all_sets; si++)
    for (fi = 0; fi < sizeof fracs / sizeof *fracs; fi++)
      for (zi = 0; zi < sizeof zipfs / sizeof *zipfs; zi++) {
        uint64_t *keys = NULL;
        if (only) { /* --sets a,b: only these (two processes can measure halves on a 2-core box) */
          const char *p = strstr(only, all_sets[si]);
          size_t l = strlen(all_sets[si]);
          if (!p || (p[l] && p[l] != ',')) continue;
        }
        size_t nk = 0;
        mlsys_index_workload w;
        double t0 = mlsys_now();
        memset(&w, 0, sizeof w);
        if (make_workload(all_sets[si], fracs[fi], zipfs[zi], n_keys, init, ops, &keys, &nk, &w) ||
            mlsys_index_grid_default(fracs[fi], &grid, &n_grid)) {
          fprintf(stderr, "maple_train: %s: %s\n", all_sets[si], mlsys_last_error());
          fclose(f);
          return 1;
        }
        for (g = 0; g < n_grid; g++) {
          mlsys_index_run_result r;
          char name[128];
          mlsys_index_config_format(&grid[g], name, sizeof name);
          if (mlsys_index_run(MLSYS_INDEX_KIND_MAPLE, &grid[g], w.bulk, w.n_bulk, &w.trace, 0, &r) || r.wrong) {
            fprintf(stderr, "maple_train: %s %s: %s\n", all_sets[si], name, r.wrong ? "wrong answers" : mlsys_last_error());
            fclose(f);
            return 1;
          }
          fprintf(f, "%s,%g,%g,\"%s\",%.6g,%zu\n", all_sets[si], fracs[fi], zipfs[zi], name, r.mops, r.bytes);
        }
        fflush(f);
        fprintf(stderr, "%-16s f=%.2f zipf=%.2f: %zu configurations in %.1f s\n", all_sets[si], fracs[fi], zipfs[zi], n_grid,
                mlsys_now() - t0);
        mlsys_free(grid);
        grid = NULL;
        mlsys_free(keys);
        mlsys_index_workload_free(&w);
      }
  fclose(f);
  return 0;
}

/* CSV reader for the file measure writes (quoted config names hold commas) */
static int read_csv(const char *csv, trace_rows **out, size_t *n_out) {
  FILE *f = fopen(csv, "r");
  char line[512];
  trace_rows *tr = NULL;
  size_t n = 0, lineno = 0;
  if (!f) { fprintf(stderr, "maple_train: cannot read %s\n", csv); return 1; }
  while (fgets(line, sizeof line, f)) {
    char set[64], cfgname[256];
    double frac, zipf, mops;
    size_t bytes;
    mlsys_index_config c;
    trace_rows *t;
    lineno++;
    if (lineno == 1) continue;
    if (sscanf(line, "%63[^,],%lf,%lf,\"%255[^\"]\",%lf,%zu", set, &frac, &zipf, cfgname, &mops, &bytes) != 6 ||
        mlsys_index_config_parse(cfgname, frac, &c)) {
      fprintf(stderr, "maple_train: %s:%zu: malformed row\n", csv, lineno);
      fclose(f);
      return 1;
    }
    if (!n || strcmp(tr[n - 1].set, set) || tr[n - 1].frac != frac || tr[n - 1].zipf != zipf) {
      tr = (trace_rows *)realloc(tr, (n + 1) * sizeof *tr);
      memset(&tr[n], 0, sizeof *tr);
      snprintf(tr[n].set, sizeof tr[n].set, "%s", set);
      tr[n].frac = frac;
      tr[n].zipf = zipf;
      n++;
    }
    t = &tr[n - 1];
    t->cfg = (mlsys_index_config *)realloc(t->cfg, (t->n + 1) * sizeof *t->cfg);
    t->mops = (double *)realloc(t->mops, (t->n + 1) * sizeof *t->mops);
    t->cfg[t->n] = c;
    t->mops[t->n] = mops;
    t->n++;
  }
  fclose(f);
  *out = tr;
  *n_out = n;
  return 0;
}

static int train(const char *csv, const char *out, size_t n_keys, size_t init, size_t ops, int epochs, int threads) {
  trace_rows *tr = NULL;
  size_t n = 0, i, n_train = 0, n_test = 0, hits90 = 0, top1 = 0;
  mlsys_index_train_item *items;
  float *imgs;
  mlsys_index_model *m = NULL;
  mlsys_index_train_opts to;
  mlsys_index_train_report rep;
  double err_model = 0, err_base = 0;
  if (read_csv(csv, &tr, &n)) return 1;
  items = (mlsys_index_train_item *)calloc(n, sizeof *items);
  imgs = (float *)malloc(n * 2 * MLSYS_INDEX_IMG * MLSYS_INDEX_IMG * sizeof *imgs);
  if (!items || !imgs) return 1;
  /* training traces first, held-out traces after them: the model's own report uses its items only */
  for (i = 0; i < n; i++) {
    uint64_t *keys = NULL;
    size_t nk, m_s;
    uint64_t *sample;
    mlsys_index_workload w;
    mlsys_index_trace prefix;
    if (make_workload(tr[i].set, tr[i].frac, tr[i].zipf, n_keys, init, ops, &keys, &nk, &w)) {
      fprintf(stderr, "maple_train: %s: %s\n", tr[i].set, mlsys_last_error());
      return 1;
    }
    sample = bulk_sample(&w, &m_s);
    prefix = w.trace;
    if (mlsys_index_trace_image(&prefix, sample, m_s, imgs + i * 2 * MLSYS_INDEX_IMG * MLSYS_INDEX_IMG)) return 1;
    items[i].img = imgs + i * 2 * MLSYS_INDEX_IMG * MLSYS_INDEX_IMG;
    items[i].cfgs = tr[i].cfg;
    items[i].mops = tr[i].mops;
    items[i].n = tr[i].n;
    mlsys_index_trace_features(&prefix, sample, m_s, items[i].features);
    free(sample);
    mlsys_free(keys);
    mlsys_index_workload_free(&w);
  }
  {
    /* order: training items, then held-out items */
    mlsys_index_train_item *ord = (mlsys_index_train_item *)calloc(n, sizeof *ord);
    trace_rows *ordr = (trace_rows *)calloc(n, sizeof *ordr);
    for (i = 0; i < n; i++) if (!is_held_out(tr[i].set)) { ordr[n_train] = tr[i]; ord[n_train++] = items[i]; }
    for (i = 0; i < n; i++) if (is_held_out(tr[i].set)) { ordr[n_train + n_test] = tr[i]; ord[n_train + n_test++] = items[i]; }
    memcpy(items, ord, n * sizeof *items);
    memcpy(tr, ordr, n * sizeof *tr);
    free(ord);
    free(ordr);
  }
  if (mlsys_index_model_create(1, &m)) return 1;
  memset(&to, 0, sizeof to);
  to.epochs = epochs;
  to.threads = threads;
  if (mlsys_index_model_train(m, items, n_train, &to, &rep)) { fprintf(stderr, "maple_train: %s\n", mlsys_last_error()); return 1; }
  fprintf(stderr, "trained on %zu traces (%d epochs): loss %.4f, held-out-within-training MAE(log) %.3f vs baseline %.3f\n", n_train,
          rep.epochs_run, rep.train_loss, rep.heldout_mae_log, rep.baseline_mae_log);
  /* held-out key sets: error against the per-configuration mean over the training traces, and the tuner's hit rate */
  for (i = n_train; i < n; i++) {
    double *pred = (double *)malloc(tr[i].n * sizeof *pred), best = 0, pick = 0, pbest = -1;
    size_t j, k, *ord = (size_t *)malloc(tr[i].n * sizeof *ord);
    if (mlsys_index_model_predict(m, items[i].img, tr[i].cfg, tr[i].n, pred)) return 1;
    for (j = 0; j < tr[i].n; j++) {
      double mean = 0;
      size_t cnt = 0, t2, g;
      for (t2 = 0; t2 < n_train; t2++)
        for (g = 0; g < tr[t2].n; g++)
          if (!memcmp(&tr[t2].cfg[g], &tr[i].cfg[j], sizeof tr[i].cfg[j]) ||
              (tr[t2].cfg[g].leaf == MLSYS_INDEX_FLOG && tr[i].cfg[j].leaf == MLSYS_INDEX_FLOG &&
               tr[t2].cfg[g].mf_size == tr[i].cfg[j].mf_size && tr[t2].cfg[g].mnf == tr[i].cfg[j].mnf && tr[t2].cfg[g].nf == tr[i].cfg[j].nf) ||
              (tr[t2].cfg[g].leaf == MLSYS_INDEX_GA && tr[i].cfg[j].leaf == MLSYS_INDEX_GA && tr[t2].cfg[g].msi == tr[i].cfg[j].msi &&
               tr[t2].cfg[g].msh == tr[i].cfg[j].msh && tr[t2].frac == tr[i].frac)) { mean += log(tr[t2].mops[g]); cnt++; }
      err_model += fabs(log(pred[j]) - log(tr[i].mops[j]));
      err_base += cnt ? fabs(mean / (double)cnt - log(tr[i].mops[j])) : 0;
      if (tr[i].mops[j] > best) best = tr[i].mops[j];
      ord[j] = j;
    }
    /* top 10 by prediction, the best measured among them */
    for (k = 0; k < 10 && k < tr[i].n; k++) {
      size_t b = k;
      for (j = k + 1; j < tr[i].n; j++) if (pred[ord[j]] > pred[ord[b]]) b = j;
      { size_t tmp = ord[k]; ord[k] = ord[b]; ord[b] = tmp; }
      if (tr[i].mops[ord[k]] > pick) pick = tr[i].mops[ord[k]];
      if (k == 0) pbest = tr[i].mops[ord[0]];
    }
    hits90 += pick >= 0.9 * best;
    top1 += pbest >= best;
    fprintf(stderr, "held out %-12s f=%.2f zipf=%.2f: tuner %.3f Mops/s, oracle %.3f (%.0f %%)\n", tr[i].set, tr[i].frac, tr[i].zipf, pick,
            best, 100 * pick / best);
    free(pred);
    free(ord);
  }
  if (n_test) {
    size_t cells = 0;
    for (i = n_train; i < n; i++) cells += tr[i].n;
    fprintf(stderr, "held-out key sets: MAE(log) model %.3f, per-configuration mean %.3f; tuner within 90 %% of the oracle on %zu of %zu "
            "traces; top-1 exact %zu\n", err_model / (double)cells, err_base / (double)cells, hits90, n_test, top1);
  }
  if (mlsys_index_model_save(m, out)) { fprintf(stderr, "maple_train: %s\n", mlsys_last_error()); return 1; }
  fprintf(stderr, "wrote %s\n", out);
  mlsys_index_model_free(m);
  free(items);
  free(imgs);
  return 0;
}

/* eval: the tuner against rules that see only the insert fraction, on the held-out key sets (issue 21). For each
   held-out trace of the CSV, with the same measurements the CSV holds:
     cnn    the shipped predictor's top k by prediction, the fastest measured of them (what mlsys_index_tune does)
     frac   the top k by mean log-throughput over the training traces of the same insert fraction, the fastest
            measured of them: the same measuring budget, without the trace image (MLSYS_INDEX_PREDICT_RULE)
     rule   mlsys_index_tune_heuristic: the fragmented log with default knobs above 50 % inserts, else ALEX; one
            configuration, nothing measured
   each as a fraction of the oracle (the fastest of the whole grid); "hit" = within 5 % of it. */
static int eval(const char *csv, const char *model_path, size_t n_keys, size_t init, size_t ops, int top_k) {
  trace_rows *tr = NULL;
  size_t n = 0, i, n_test = 0, hit_cnn = 0, hit_frac = 0, hit_rule = 0, cnn_beats = 0, frac_beats = 0;
  double sum_cnn = 0, sum_frac = 0, sum_rule = 0;
  mlsys_index_model *m = NULL;
  float *img = (float *)malloc(2 * MLSYS_INDEX_IMG * MLSYS_INDEX_IMG * sizeof *img);
  if (read_csv(csv, &tr, &n) || !img) return 1;
  if (mlsys_index_model_load(model_path, &m)) { fprintf(stderr, "maple_train: %s\n", mlsys_last_error()); return 1; }
  printf("| held-out workload | oracle (best of %zu) Mops/s | cnn top-%d | fraction rule top-%d | fixed rule |\n", tr[0].n, top_k, top_k);
  printf("|---|---|---|---|---|\n");
  for (i = 0; i < n; i++) {
    uint64_t *keys = NULL, *sample;
    size_t nk, m_s, j, k, *ord;
    double *pred, *score, best = 0, cnn = 0, frc = 0, rule = 0;
    mlsys_index_workload w;
    mlsys_index_config h;
    char hname[128];
    if (!is_held_out(tr[i].set)) continue;
    n_test++;
    if (make_workload(tr[i].set, tr[i].frac, tr[i].zipf, n_keys, init, ops, &keys, &nk, &w)) {
      fprintf(stderr, "maple_train: %s: %s\n", tr[i].set, mlsys_last_error());
      return 1;
    }
    sample = bulk_sample(&w, &m_s);
    pred = (double *)malloc(tr[i].n * sizeof *pred);
    score = (double *)malloc(tr[i].n * sizeof *score);
    ord = (size_t *)malloc(tr[i].n * sizeof *ord);
    if (mlsys_index_trace_image(&w.trace, sample, m_s, img) || mlsys_index_model_predict(m, img, tr[i].cfg, tr[i].n, pred)) {
      fprintf(stderr, "maple_train: %s\n", mlsys_last_error());
      return 1;
    }
    h = mlsys_index_tune_heuristic(&w.trace);
    if (h.leaf == MLSYS_INDEX_GA) h.expected_insert_frac = tr[i].frac;   /* the grid's ALEX uses the nominal fraction */
    mlsys_index_config_format(&h, hname, sizeof hname);
    for (j = 0; j < tr[i].n; j++) {
      char cname[128];
      double sum = 0;
      size_t cnt = 0, t2;
      if (tr[i].mops[j] > best) best = tr[i].mops[j];
      /* the fraction rule's score: mean log throughput of this configuration on the training traces of the same
         insert fraction, either lookup distribution (the grid, and so the row order, is the same for equal
         fractions); the table mlsys_index.h ships for MLSYS_INDEX_PREDICT_RULE (maple_train rule prints it) */
      for (t2 = 0; t2 < n; t2++)
        if (!is_held_out(tr[t2].set) && tr[t2].frac == tr[i].frac && tr[t2].n == tr[i].n) {
          sum += log(tr[t2].mops[j]);
          cnt++;
        }
      score[j] = cnt ? sum / (double)cnt : -1e300;
      mlsys_index_config_format(&tr[i].cfg[j], cname, sizeof cname);
      if (!strcmp(cname, hname)) rule = tr[i].mops[j];
    }
    /* the best measured among the top k of each ranking */
    for (k = 0; k < 2; k++) {
      const double *rank = k ? score : pred;
      double *pick = k ? &frc : &cnn;
      size_t a, b;
      for (j = 0; j < tr[i].n; j++) ord[j] = j;
      for (a = 0; a < (size_t)top_k && a < tr[i].n; a++) {
        size_t mx = a;
        for (b = a + 1; b < tr[i].n; b++) if (rank[ord[b]] > rank[ord[mx]]) mx = b;
        { size_t t = ord[a]; ord[a] = ord[mx]; ord[mx] = t; }
        if (tr[i].mops[ord[a]] > *pick) *pick = tr[i].mops[ord[a]];
      }
    }
    if (rule == 0) { fprintf(stderr, "maple_train: %s f=%g: the rule's %s is not in the grid\n", tr[i].set, tr[i].frac, hname); return 1; }
    hit_cnn += cnn >= 0.95 * best;
    hit_frac += frc >= 0.95 * best;
    hit_rule += rule >= 0.95 * best;
    cnn_beats += cnn > frc * 1.05;
    frac_beats += frc > cnn * 1.05;
    sum_cnn += log(cnn / best);
    sum_frac += log(frc / best);
    sum_rule += log(rule / best);
    printf("| %s f=%.2f zipf=%.2f | %.3f | %.0f %% | %.0f %% | %.0f %% (%s) |\n", tr[i].set, tr[i].frac, tr[i].zipf, best, 100 * cnn / best,
           100 * frc / best, 100 * rule / best, hname);
    free(sample);
    free(pred);
    free(score);
    free(ord);
    mlsys_free(keys);
    mlsys_index_workload_free(&w);
  }
  printf("\nheld-out traces: %zu. Within 5 %% of the oracle: cnn %zu, fraction rule %zu, fixed rule %zu. Geometric mean of the pick "
         "over the oracle: cnn %.3f, fraction rule %.3f, fixed rule %.3f. cnn more than 5 %% ahead of the fraction rule on %zu, "
         "behind on %zu.\n",
         n_test, hit_cnn, hit_frac, hit_rule, exp(sum_cnn / (double)n_test), exp(sum_frac / (double)n_test),
         exp(sum_rule / (double)n_test), cnn_beats, frac_beats);
  /* one line for tests/test_index_tune.c */
  printf("summary: traces=%zu cnn_hits=%zu rule_hits=%zu fixed_hits=%zu cnn_gm=%.4f rule_gm=%.4f fixed_gm=%.4f\n", n_test, hit_cnn,
         hit_frac, hit_rule, exp(sum_cnn / (double)n_test), exp(sum_frac / (double)n_test), exp(sum_rule / (double)n_test));
  mlsys_index_model_free(m);
  free(img);
  return 0;
}

/* rule: prints the table behind MLSYS_INDEX_PREDICT_RULE (mlsys_index.h): for each insert fraction of the training
   set, the mean log throughput of every default-grid configuration over the training traces (held-out sets excluded,
   both lookup distributions). */
static int rule(const char *csv) {
  trace_rows *tr = NULL;
  size_t n = 0, i, g, fi;
  if (read_csv(csv, &tr, &n)) return 1;
  printf("static const double mlsys__index_rule_frac[%zu] = {", sizeof fracs / sizeof *fracs);
  for (fi = 0; fi < sizeof fracs / sizeof *fracs; fi++) printf("%s%g", fi ? ", " : "", fracs[fi]);
  printf("};\nstatic const float mlsys__index_rule_logmops[%zu][136] = {\n", sizeof fracs / sizeof *fracs);
  for (fi = 0; fi < sizeof fracs / sizeof *fracs; fi++) {
    printf("    {");
    for (g = 0; g < 136; g++) {
      double sum = 0;
      size_t cnt = 0;
      for (i = 0; i < n; i++)
        if (!is_held_out(tr[i].set) && tr[i].frac == fracs[fi] && tr[i].n == 136) {
          sum += log(tr[i].mops[g]);
          cnt++;
        }
      if (!cnt) { fprintf(stderr, "maple_train: no training trace at insert fraction %g\n", fracs[fi]); return 1; }
      printf("%s%.4ff", g == 0 ? "" : g % 10 == 0 ? ",\n     " : ", ", sum / (double)cnt);
    }
    printf("}%s\n", fi + 1 < sizeof fracs / sizeof *fracs ? "," : "");
  }
  printf("};\n");
  return 0;
}

int main(int argc, char **argv) {
  const char *csv = "tools/maple_training.csv", *out = "tools/maple_predictor.bin";
  size_t n_keys = 1000000, init = 200000, ops = 100000;
  int epochs = 30, threads = 2, top_k = 10, i;
  const char *only = NULL;
  if (argc < 2) { fprintf(stderr, "usage: maple_train measure|train|eval|rule [--csv F] [--sets A,B] [--out F] [--keys N] [--init N] [--ops N] [--epochs E] [--threads T] [--top-k K]\n"); return 2; }
  for (i = 2; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--csv")) csv = argv[i + 1];
    else if (!strcmp(argv[i], "--out")) out = argv[i + 1];
    else if (!strcmp(argv[i], "--keys")) n_keys = (size_t)atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--init")) init = (size_t)atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--ops")) ops = (size_t)atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--epochs")) epochs = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--sets")) only = argv[i + 1];
    else if (!strcmp(argv[i], "--top-k")) top_k = atoi(argv[i + 1]);
    else { fprintf(stderr, "maple_train: unknown option %s\n", argv[i]); return 2; }
  }
  if (!strcmp(argv[1], "measure")) return measure(csv, n_keys, init, ops, only);
  if (!strcmp(argv[1], "train")) return train(csv, out, n_keys, init, ops, epochs, threads);
  if (!strcmp(argv[1], "eval")) return eval(csv, out, n_keys, init, ops, top_k);
  if (!strcmp(argv[1], "rule")) return rule(csv);
  fprintf(stderr, "maple_train: unknown verb %s\n", argv[1]);
  return 2;
}
