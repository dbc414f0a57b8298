/* cli/contracode_eval.c — `mlsys contracode eval`: zero-shot clone detection on the offline set (mlsys_contracode.h
   §7, spec §3.9 and §7.5): the module files of lodash-es, underscore and ramda, a problem being a public API name
   that two or more of them implement; natural and adversarial AUROC ± SE, AP and best-threshold accuracy of a
   similarity baseline. The `contracode` dispatcher (cli/contracode.c) calls contracode_eval_cmd for the verb. */
#include "mlsys_contracode.h"
#include "cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int contracode_eval_cmd(int argc, char **argv);
int contracode_tokenize_row(const mlsys_contracode_sp *sp, const char *src, double alpha, mlsys_rng *r, int T, int pad,
                            int32_t *row, int *len);   /* cli/contracode_train.c */
int contracode_load_units(const char *cmd, const char *path, int *n, char ***src, char ***label);   /* the same */

/* --scorer model:CKPT / untrained:CKPT: the pooled, un-projected representation (§3.9) of the checkpoint's query
   encoder, or of a freshly initialized encoder of the same configuration (the "random init" row of Table 2.2), over
   Viterbi ids of normalize_program(src) truncated to the encoder's max_len, one program at a time. */
typedef struct {
  const mlsys_contracode_sp *sp;
  mlsys_contracode_enc *e;
  int32_t *row;
} cc_eval_embed_ctx;
static mlsys_status cc_eval_embed(void *ctx, const char *const *src, const size_t *len, int n, float *out) {
  cc_eval_embed_ctx *c = (cc_eval_embed_ctx *)ctx;
  const int dim = mlsys_contracode_enc_pooled_dim(&c->e->cfg);
  int i, l;
  mlsys_status st;
  (void)len;
  for (i = 0; i < n; i++) {
    if (!contracode_tokenize_row(c->sp, src[i], 0, NULL, c->e->cfg.max_len, c->e->cfg.pad_id, c->row, &l))
      return mlsys_set_error(MLSYS_ERR_PARSE, "contracode eval: program %d does not tokenize", i);
    if ((st = mlsys_contracode_enc_forward(c->e, c->row, &l, 1, l, 0, 0, NULL, out + (size_t)i * dim)) != MLSYS_OK) return st;
  }
  return MLSYS_OK;
}

static const char contracode_eval_help[] =
    "usage: mlsys contracode eval [--lib [NAME=]DIR]... [--scorer edit|bow|model:CKPT|untrained:CKPT] [--vocab M.model]\n"
    "                             [--adversarial N[,N...]] [--samples S] [--adversary terser|safe] [--faithful-pairs]\n"
    "                             [--min-libs K]\n"
    "                             [--seed S] [--json]\n"
    "       mlsys contracode eval --functions FUNCS.jsonl|FILE.js [--count M] [options above but --lib, --min-libs]\n"
    "       both: [--negatives R] [--hard F]\n"
    "  Builds the clone set from the .js module files directly in each DIR (default: Debian's node-lodash,\n"
    "  node-underscore and node-ramda: /usr/share/nodejs/lodash-es, /usr/share/nodejs/underscore/modules,\n"
    "  /usr/share/nodejs/ramda/es). A problem is an API name (the file name) found in K or more libraries\n"
    "  (default 2); internal (_x, internal/), index, wrapper and *.default files are left out; comments are\n"
    "  dropped by parsing and printing. NAME defaults to DIR's last component (its parent's for modules, es, src).\n"
    "  Pairs: unordered distinct positives and as many negatives drawn without replacement (seeded), or\n"
    "  --faithful-pairs: the authors' repo as written ((k-1)^2 ordered pairs per problem, self pairs included;\n"
    "  negatives with replacement).\n"
    "  Scorers over the SentencePiece ids of each program (--vocab, default tests/data/contracode/js_identity_1k.model):\n"
    "  edit = (max(|a|,|b|) - Levenshtein) / max(|a|,|b|), the paper's heuristic baseline; bow = cosine of the\n"
    "  token count vectors; model:CKPT = cosine of the pooled (un-projected) representation of a `contracode\n"
    "  train` checkpoint's query encoder; untrained:CKPT = the same architecture freshly initialized (seed 1),\n"
    "  the random-init baseline. With model:/untrained:, --vocab defaults to tools/contracode_js8k.model.\n"
    "  --adversarial N: the first program of each pair is edited S times (default S = max(16, N)) by the\n"
    "  adversary (terser: Alg. 1's terser block alone with p .75, printed compact, as the repo's terser samples;\n"
    "  safe: the SAFE preset), and each pair scores its worst case: the min over a window of N samples for a\n"
    "  positive, the max for a negative; every window start 0..S-N adds one example per pair (the repo's rule).\n"
    "  --functions: the variant set instead (functions vs their variants vs other functions): M units (default\n"
    "  400; drawn without replacement, seeded) from FUNCS.jsonl (`contracode functions --jsonl`; use the held-out\n"
    "  split) or every function of FILE.js; each unit and one SAFE-preset variant of it are a problem, parsed as\n"
    "  scripts; units that do not parse are left out (\"skipped\"). Positives: a unit and its variant.\n"
    "  --negatives R: R times as many negatives as positives (distinct pairs only; R seeded draws, duplicates\n"
    "  dropped). --hard F: also score the positives against only the fraction F of negatives with the highest\n"
    "  edit-distance similarity (the hard-negative view; settings natural-hard and adversarial-hard).\n"
    "  --json keys: set (libraries|variants; variants adds functions, units, drawn), negatives_ratio, hard,\n"
    "  libraries ([{name, dir, files}]), files, skipped, problems, problems_by_libs ({K: count}),\n"
    "  programs, pairs ({mode, positives, negatives}), scorer, vocab, vocab_size, adversary, samples, seed,\n"
    "  results ([{setting, N, windows, auroc, se, ap, accuracy, threshold, npos, nneg}]).\n"
    "  Exit 1: a directory that cannot be read, a file that does not parse, no problem in the set; 2: bad usage.\n";

#define CC_EVAL_MAXLIB 16
#define CC_EVAL_MAXADV 8

/* The library name of a directory: its last component, or its parent's when that is a generic folder name. */
static void cc_eval_lib_name(const char *dir, char *out, size_t cap) {
  char buf[1024];
  size_t n = strlen(dir);
  char *last, *prev;
  if (n >= sizeof buf) n = sizeof buf - 1;
  memcpy(buf, dir, n);
  buf[n] = 0;
  while (n > 1 && buf[n - 1] == '/') buf[--n] = 0;
  last = strrchr(buf, '/');
  if (last && (!strcmp(last + 1, "modules") || !strcmp(last + 1, "es") || !strcmp(last + 1, "src"))) {
    *last = 0;
    prev = strrchr(buf, '/');
    snprintf(out, cap, "%.255s", prev ? prev + 1 : buf);
    return;
  }
  snprintf(out, cap, "%.255s", last ? last + 1 : buf);
}

static int cc_eval_pair_cmp(const void *x, const void *y) {
  const mlsys_contracode_clone_pair *a = (const mlsys_contracode_clone_pair *)x, *b = (const mlsys_contracode_clone_pair *)y;
  if (a->a != b->a) return a->a < b->a ? -1 : 1;
  return a->b < b->b ? -1 : a->b > b->b;
}

static void cc_eval_print_row(int json, int first, const char *setting, int N, int windows,
                              const mlsys_contracode_clone_metrics *m) {
  if (json) {
    printf("%s\n    {\"setting\": \"%s\", \"N\": %d, \"windows\": %d, \"auroc\": %.6f, \"se\": %.6f, \"ap\": %.6f, "
           "\"accuracy\": %.6f, \"threshold\": %.6f, \"npos\": %ld, \"nneg\": %ld}",
           first ? "" : ",", setting, N, windows, m->auroc, m->se, m->ap, m->accuracy, m->threshold, m->npos, m->nneg);
  } else {
    char label[64];
    if (N) snprintf(label, sizeof label, "%s N=%d", setting, N);
    else snprintf(label, sizeof label, "%s", setting);
    printf("%-18s %6.2f ± %4.2f  %6.2f  %6.2f   %ld + %ld%s\n", label, 100 * m->auroc, 100 * m->se, 100 * m->ap,
           100 * m->accuracy, m->npos, m->nneg, windows > 1 ? " (windows pooled)" : "");
  }
}

int contracode_eval_cmd(int argc, char **argv) {
  const char *cmd = "contracode eval";
  static const char *const defaults[3][2] = MLSYS_CONTRACODE_CLONE_DEFAULT_LIBS;
  const char *libdir[CC_EVAL_MAXLIB], *scorer_s = "edit", *vocab_s = NULL, *adversary_s = "terser", *funcs_s = NULL;
  int count = 400, nunits = 0, min_libs_set = 0, nratio = 1;
  double hard = 0;
  size_t *hidx = NULL, nh = 0;
  float *hnat = NULL, *hadv = NULL, *esim = NULL;
  uint8_t *hlab = NULL;
  char **usrc = NULL, **ulab = NULL;
  char libname[CC_EVAL_MAXLIB][256], vocab[4096];
  int libfiles[CC_EVAL_MAXLIB], nlib = 0, adv[CC_EVAL_MAXADV], nadv = 0, faithful = 0, json = 0, min_libs = 2;
  int samples = 0, i, j, rc = CLI_OK, kind;
  double seed = 1, d;
  mlsys_contracode_clone_file *files = NULL;
  int nfiles = 0;
  mlsys_contracode_clone_set set;
  mlsys_contracode_clone_pair *pairs = NULL;
  size_t npos = 0, nneg = 0, n, k;
  mlsys_contracode_sp *sp = NULL;
  mlsys_contracode_aug_cfg acfg;
  mlsys_contracode_scorer sc;
  cc_eval_embed_ctx ectx = {NULL, NULL, NULL};
  mlsys_contracode_enc fresh;
  mlsys_contracode_moco *moco = NULL;
  int is_model = 0;
  mlsys_contracode_clone_metrics m;
  float *nat = NULL, *advs = NULL;
  uint8_t *lab = NULL;

  memset(&set, 0, sizeof set);
  memset(&fresh, 0, sizeof fresh);
  for (i = 3; i < argc; i++) {
    const char *a = argv[i], *v = NULL, *eq;
    char name[64];
    int has_value;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      fputs(contracode_eval_help, stdout);
      return CLI_OK;
    }
    if (strncmp(a, "--", 2)) return cli_usage_error(cmd, "unexpected argument '%s' (see --help)", a);
    eq = strchr(a, '=');
    snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - a) : (int)strlen(a), a);
    has_value = !strcmp(name, "--lib") || !strcmp(name, "--scorer") || !strcmp(name, "--vocab") ||
                !strcmp(name, "--adversarial") || !strcmp(name, "--samples") || !strcmp(name, "--adversary") ||
                !strcmp(name, "--min-libs") || !strcmp(name, "--seed") || !strcmp(name, "--functions") ||
                !strcmp(name, "--count") || !strcmp(name, "--negatives") || !strcmp(name, "--hard");
    if (has_value) {
      if (eq) v = eq + 1;
      else if (i + 1 < argc) v = argv[++i];
      else return cli_usage_error(cmd, "%s needs a value", name);
    } else if (eq) {
      return cli_usage_error(cmd, "%s takes no value", name);
    }
    if (!strcmp(name, "--lib")) {
      const char *e = strchr(v, '=');
      if (nlib == CC_EVAL_MAXLIB) return cli_usage_error(cmd, "at most %d --lib directories", CC_EVAL_MAXLIB);
      if (e && e > v) {
        snprintf(libname[nlib], sizeof libname[nlib], "%.*s", (int)(e - v), v);
        libdir[nlib++] = e + 1;
      } else {
        cc_eval_lib_name(v, libname[nlib], sizeof libname[nlib]);
        libdir[nlib++] = v;
      }
    } else if (!strcmp(name, "--scorer")) {
      scorer_s = v;
    } else if (!strcmp(name, "--vocab")) {
      vocab_s = v;
    } else if (!strcmp(name, "--adversary")) {
      adversary_s = v;
    } else if (!strcmp(name, "--adversarial")) {
      const char *p = v;
      while (*p) {
        char *end;
        long x = strtol(p, &end, 10);
        if (end == p || x < 1 || x > 1024 || (*end && *end != ','))
          return cli_usage_error(cmd, "--adversarial takes window sizes 1..1024 separated by commas, not '%s'", v);
        if (nadv == CC_EVAL_MAXADV) return cli_usage_error(cmd, "at most %d adversarial window sizes", CC_EVAL_MAXADV);
        adv[nadv++] = (int)x;
        p = *end ? end + 1 : end;
      }
    } else if (!strcmp(name, "--samples")) {
      if (cli_parse_double(v, &d) || d < 1 || d > 1024 || d != (int)d)
        return cli_usage_error(cmd, "--samples must be an integer in 1..1024, not '%s'", v);
      samples = (int)d;
    } else if (!strcmp(name, "--min-libs")) {
      if (cli_parse_double(v, &d) || d < 1 || d > 1000 || d != (int)d)
        return cli_usage_error(cmd, "--min-libs must be a positive integer, not '%s'", v);
      min_libs = (int)d, min_libs_set = 1;
    } else if (!strcmp(name, "--seed")) {
      if (cli_parse_double(v, &seed) || seed < 0 || seed > 1.8e19 || seed != (double)(uint64_t)seed)
        return cli_usage_error(cmd, "--seed must be a non-negative integer, not '%s'", v);
    } else if (!strcmp(name, "--functions")) {
      funcs_s = v;
    } else if (!strcmp(name, "--negatives")) {
      if (cli_parse_double(v, &d) || d < 1 || d > 1000 || d != (int)d)
        return cli_usage_error(cmd, "--negatives must be an integer in 1..1000, not '%s'", v);
      nratio = (int)d;
    } else if (!strcmp(name, "--hard")) {
      if (cli_parse_double(v, &hard) || !(hard > 0 && hard <= 1))
        return cli_usage_error(cmd, "--hard must be a fraction in (0, 1], not '%s'", v);
    } else if (!strcmp(name, "--count")) {
      if (cli_parse_double(v, &d) || d < 2 || d > 1e7 || d != (int)d)
        return cli_usage_error(cmd, "--count must be an integer in 2..10000000, not '%s'", v);
      count = (int)d;
    } else if (!strcmp(name, "--faithful-pairs")) {
      faithful = 1;
    } else if (!strcmp(name, "--json")) {
      json = 1;
    } else {
      return cli_usage_error(cmd, "unknown option '%s' (see --help)", name);
    }
  }
  if (strcmp(scorer_s, "edit") && strcmp(scorer_s, "bow") && strncmp(scorer_s, "model:", 6) &&
      strncmp(scorer_s, "untrained:", 10))
    return cli_usage_error(cmd, "--scorer must be edit, bow, model:CKPT or untrained:CKPT, not '%s'", scorer_s);
  is_model = !strncmp(scorer_s, "model:", 6) || !strncmp(scorer_s, "untrained:", 10);
  if (strcmp(adversary_s, "terser") && strcmp(adversary_s, "safe"))
    return cli_usage_error(cmd, "--adversary must be terser or safe, not '%s'", adversary_s);
  for (i = 0; i < nadv; i++)
    if (samples && adv[i] > samples)
      return cli_usage_error(cmd, "--adversarial %d is more than --samples %d", adv[i], samples);
  if (!samples)
    for (samples = 16, i = 0; i < nadv; i++)
      if (adv[i] > samples) samples = adv[i];
  if (faithful && nratio > 1) return cli_usage_error(cmd, "--negatives works with distinct pairs, not --faithful-pairs");
  if (funcs_s && (nlib || min_libs_set))
    return cli_usage_error(cmd, "--functions builds the variant set; it takes no --lib or --min-libs");
  if (!nlib && !funcs_s)
    for (; nlib < 3; nlib++) {
      snprintf(libname[nlib], sizeof libname[nlib], "%s", defaults[nlib][0]);
      libdir[nlib] = defaults[nlib][1];
    }
  if (vocab_s) snprintf(vocab, sizeof vocab, "%s", vocab_s);
  else cli_repo_file(is_model ? "tools/contracode_js8k.model" : "tests/data/contracode/js_identity_1k.model", vocab, sizeof vocab);

  for (i = 0; i < nlib; i++) {
    int before = nfiles;
    if (mlsys_contracode_clone_read_dir(libname[i], libdir[i], &files, &nfiles) != MLSYS_OK) {
      rc = cli_fail(cmd, "library %s: %s%s", libname[i], mlsys_last_error(),
                    i < 3 && libdir[i] == defaults[i][1] ? " (install node-lodash node-underscore node-ramda)" : "");
      goto done;
    }
    libfiles[i] = nfiles - before;
  }
  kind = !strcmp(adversary_s, "safe") ? MLSYS_CONTRACODE_ADV_SAFE : MLSYS_CONTRACODE_ADV_TERSER;
  if (mlsys_contracode_clone_adversary(kind, &acfg) != MLSYS_OK) {
    rc = cli_fail(cmd, "%s", mlsys_last_error());
    goto done;
  }
  if (funcs_s) {
    mlsys_contracode_aug_cfg vcfg;
    size_t *ulen;
    mlsys_rng r;
    int take;
    if ((rc = contracode_load_units(cmd, funcs_s, &nunits, &usrc, &ulab)) != CLI_OK) goto done;
    /* a seeded partial shuffle: the first `take` units are a uniform sample without replacement */
    take = nunits < count ? nunits : count;
    mlsys_rng_seed(&r, (uint64_t)seed * 0x9e3779b97f4a7c15ull + 7);
    for (i = 0; i < take; i++) {
      int j2 = i + (int)mlsys_rng_below(&r, (uint64_t)(nunits - i));
      char *t = usrc[i];
      usrc[i] = usrc[j2], usrc[j2] = t;
      t = ulab[i], ulab[i] = ulab[j2], ulab[j2] = t;
    }
    if (!(ulen = (size_t *)malloc(((size_t)take + 1) * sizeof *ulen))) {
      rc = cli_fail(cmd, "out of memory");
      goto done;
    }
    for (i = 0; i < take; i++) ulen[i] = strlen(usrc[i]);
    /* units are functions, not modules: parse them as scripts, for the variants and for the adversary alike */
    acfg.flags = MLSYS_CONTRACODE_JS_SCRIPT;
    if (mlsys_contracode_aug_preset(MLSYS_CONTRACODE_AUG_SAFE, &vcfg) != MLSYS_OK ||
        mlsys_contracode_clone_set_variants((const char *const *)usrc, ulen, take, (const char *const *)ulab, &vcfg,
                                            (uint64_t)seed, &set) != MLSYS_OK) {
      free(ulen);
      rc = cli_fail(cmd, "%s: %s", funcs_s, mlsys_last_error());
      goto done;
    }
    free(ulen);
    nfiles = take;
  } else if (mlsys_contracode_clone_set_build(files, nfiles, min_libs, &set) != MLSYS_OK) {
    rc = cli_fail(cmd, "%s", mlsys_last_error());
    goto done;
  }
  if (mlsys_contracode_clone_pairs(set.problem, set.nprograms,
                                   faithful ? MLSYS_CONTRACODE_PAIRS_FAITHFUL : MLSYS_CONTRACODE_PAIRS_DISTINCT,
                                   (uint64_t)seed, &pairs, &npos, &nneg) != MLSYS_OK) {
    rc = cli_fail(cmd, "%s", mlsys_last_error());
    goto done;
  }
  if (nratio > 1) {   /* more negatives: further seeded draws, appended, then sorted and deduplicated */
    int r;
    for (r = 1; r < nratio; r++) {
      mlsys_contracode_clone_pair *more = NULL, *grown;
      size_t mp, mn;
      if (mlsys_contracode_clone_pairs(set.problem, set.nprograms, MLSYS_CONTRACODE_PAIRS_DISTINCT,
                                       (uint64_t)seed + (uint64_t)r * 0x632be59bd9b4e019ull, &more, &mp, &mn) != MLSYS_OK) {
        rc = cli_fail(cmd, "%s", mlsys_last_error());
        goto done;
      }
      if (!(grown = (mlsys_contracode_clone_pair *)realloc(pairs, (npos + nneg + mn) * sizeof *pairs))) {
        free(more);
        rc = cli_fail(cmd, "out of memory");
        goto done;
      }
      pairs = grown;
      memcpy(pairs + npos + nneg, more + mp, mn * sizeof *pairs);
      nneg += mn;
      free(more);
    }
    qsort(pairs + npos, nneg, sizeof *pairs, cc_eval_pair_cmp);
    for (k = 0, n = 0; k < nneg; k++)
      if (!n || cc_eval_pair_cmp(&pairs[npos + n - 1], &pairs[npos + k])) pairs[npos + n++] = pairs[npos + k];
    nneg = n;
  }
  if (mlsys_contracode_sp_load(vocab, &sp) != MLSYS_OK) {
    rc = cli_fail(cmd, "%s", mlsys_last_error());
    goto done;
  }
  n = npos + nneg;
  nat = (float *)malloc(n * sizeof *nat);
  lab = (uint8_t *)malloc(n);
  advs = nadv ? (float *)malloc(n * (size_t)samples * sizeof *advs) : NULL;
  if (!nat || !lab || (nadv && !advs)) {
    rc = cli_fail(cmd, "out of memory");
    goto done;
  }
  for (k = 0; k < n; k++) lab[k] = pairs[k].label;
  memset(&sc, 0, sizeof sc);
  sc.kind = !strcmp(scorer_s, "bow") ? MLSYS_CONTRACODE_SCORE_BOW : MLSYS_CONTRACODE_SCORE_EDIT;
  sc.sp = sp;
  if (is_model) {
    const char *ck = strchr(scorer_s, ':') + 1;
    if (mlsys_contracode_moco_load(ck, NULL, &moco) != MLSYS_OK) {
      rc = cli_fail(cmd, "%s", mlsys_last_error());
      goto done;
    }
    ectx.e = mlsys_contracode_moco_query_encoder(moco);
    if (!strncmp(scorer_s, "untrained:", 10)) {
      mlsys_contracode_enc_cfg cfg = ectx.e->cfg;
      if (mlsys_contracode_enc_init(&fresh, &cfg, 1, NULL) != MLSYS_OK) {
        rc = cli_fail(cmd, "%s", mlsys_last_error());
        goto done;
      }
      ectx.e = &fresh;
    }
    if (ectx.e->cfg.vocab != mlsys_contracode_sp_size(sp)) {
      rc = cli_fail(cmd, "%s was trained with %d pieces, %s has %d", ck, ectx.e->cfg.vocab, vocab, mlsys_contracode_sp_size(sp));
      goto done;
    }
    if (!(ectx.row = (int32_t *)malloc((size_t)ectx.e->cfg.max_len * sizeof(int32_t)))) {
      rc = cli_fail(cmd, "out of memory");
      goto done;
    }
    ectx.sp = sp;
    sc.kind = MLSYS_CONTRACODE_SCORE_EMBED;
    sc.embed = cc_eval_embed;
    sc.embed_ctx = &ectx;
    sc.dim = mlsys_contracode_enc_pooled_dim(&ectx.e->cfg);
  }
  if (mlsys_contracode_clone_sims((const char *const *)set.src, set.len, set.nprograms, pairs, n, &sc,
                                  nadv ? &acfg : NULL, nadv ? samples : 0, (uint64_t)seed, nat, advs) != MLSYS_OK ||
      mlsys_contracode_clone_metrics_of(nat, lab, n, &m) != MLSYS_OK) {
    rc = cli_fail(cmd, "%s", mlsys_last_error());
    goto done;
  }

  if (json) {
    int maxl = 0;
    printf("{\n  \"set\": \"%s\", ", funcs_s ? "variants" : "libraries");
    if (funcs_s) {
      printf("\"functions\": ");
      cli_json_str(stdout, funcs_s);
      printf(", \"units\": %d, \"drawn\": %d,", nunits, nfiles);
    }
    printf("\n  \"libraries\": [");
    for (i = 0; i < nlib; i++) {
      printf("%s{\"name\": ", i ? ", " : "");
      cli_json_str(stdout, libname[i]);
      printf(", \"dir\": ");
      cli_json_str(stdout, libdir[i]);
      printf(", \"files\": %d}", libfiles[i]);
    }
    printf("],\n  \"files\": %d, \"skipped\": %d, \"problems\": %d, \"problems_by_libs\": {", nfiles, set.nskipped,
           set.nproblems);
    for (i = 0; i < set.nproblems; i++)
      if (set.problem_nlibs[i] > maxl) maxl = set.problem_nlibs[i];
    for (j = min_libs, k = 0; j <= maxl; j++) {
      int c = 0;
      for (i = 0; i < set.nproblems; i++) c += set.problem_nlibs[i] == j;
      printf("%s\"%d\": %d", k++ ? ", " : "", j, c);
    }
    printf("}, \"programs\": %d,\n  \"pairs\": {\"mode\": \"%s\", \"positives\": %zu, \"negatives\": %zu},\n",
           set.nprograms, faithful ? "faithful" : "distinct", npos, nneg);
    printf("  \"scorer\": \"%s\", \"vocab\": ", scorer_s);
    cli_json_str(stdout, vocab);
    printf(", \"vocab_size\": %d, \"adversary\": \"%s\", \"samples\": %d, \"seed\": %llu, \"negatives_ratio\": %d, "
           "\"hard\": %g,\n  \"results\": [",
           mlsys_contracode_sp_size(sp), adversary_s, nadv ? samples : 0, (unsigned long long)seed, nratio, hard);
  } else {
    int n2 = 0, n3 = 0;
    for (i = 0; i < set.nproblems; i++) set.problem_nlibs[i] == 2 ? n2++ : n3++;
    if (funcs_s) {
      printf("variant set: %d of %d units of %s drawn; %d left out (no parse or no distinct variant)\n", nfiles, nunits,
             funcs_s, set.nskipped);
      printf("problems: %d (a unit and its SAFE variant); programs: %d\n", set.nproblems, set.nprograms);
    } else {
      printf("clone set: %d files in", nfiles);
      for (i = 0; i < nlib; i++) printf("%s %s (%d)", i ? "," : "", libname[i], libfiles[i]);
      printf("; %d left out by the name rules\n", set.nskipped);
      printf("problems: %d (%d in 2 libraries, %d in more); programs: %d\n", set.nproblems, n2, n3, set.nprograms);
    }
    printf("pairs (%s): %zu positive, %zu negative\n", faithful ? "repo-faithful" : "distinct", npos, nneg);
    printf("scorer: %s over %s (%d pieces)", scorer_s, vocab, mlsys_contracode_sp_size(sp));
    if (nadv) printf("; adversary: %s, %d samples, seed %llu", adversary_s, samples, (unsigned long long)seed);
    printf("\n\n%-18s %14s  %6s  %6s   %s\n", "setting", "AUROC ± SE", "AP", "acc", "examples (pos + neg)");
  }
  cc_eval_print_row(json, 1, "natural", 0, 1, &m);
  for (i = 0; i < nadv; i++) {
    if (mlsys_contracode_clone_adv_metrics(advs, lab, n, samples, adv[i], -1, &m) != MLSYS_OK) {
      rc = cli_fail(cmd, "%s", mlsys_last_error());
      goto done;
    }
    cc_eval_print_row(json, 0, "adversarial", adv[i], samples - adv[i] + 1, &m);
  }
  if (hard > 0) {   /* the hard-negative view: every positive against the negatives edit distance finds most alike */
    if (sc.kind == MLSYS_CONTRACODE_SCORE_EDIT) {
      esim = NULL;
    } else {
      mlsys_contracode_scorer es;
      memset(&es, 0, sizeof es);
      es.kind = MLSYS_CONTRACODE_SCORE_EDIT, es.sp = sp;
      if (!(esim = (float *)malloc(n * sizeof *esim)) ||
          mlsys_contracode_clone_sims((const char *const *)set.src, set.len, set.nprograms, pairs, n, &es, NULL, 0,
                                      (uint64_t)seed, esim, NULL) != MLSYS_OK) {
        rc = cli_fail(cmd, "%s", esim ? mlsys_last_error() : "out of memory");
        goto done;
      }
    }
    if (mlsys_contracode_hard_subset(esim ? esim : nat, lab, n, hard, &hidx, &nh) != MLSYS_OK) {
      rc = cli_fail(cmd, "%s", mlsys_last_error());
      goto done;
    }
    hnat = (float *)malloc((nh + 1) * sizeof *hnat);
    hlab = (uint8_t *)malloc(nh + 1);
    hadv = nadv ? (float *)malloc((nh + 1) * (size_t)samples * sizeof *hadv) : NULL;
    if (!hnat || !hlab || (nadv && !hadv)) {
      rc = cli_fail(cmd, "out of memory");
      goto done;
    }
    for (k = 0; k < nh; k++) {
      hnat[k] = nat[hidx[k]], hlab[k] = lab[hidx[k]];
      if (nadv) memcpy(hadv + k * (size_t)samples, advs + hidx[k] * (size_t)samples, (size_t)samples * sizeof *hadv);
    }
    if (mlsys_contracode_clone_metrics_of(hnat, hlab, nh, &m) != MLSYS_OK) {
      rc = cli_fail(cmd, "%s", mlsys_last_error());
      goto done;
    }
    cc_eval_print_row(json, 0, "natural-hard", 0, 1, &m);
    for (i = 0; i < nadv; i++) {
      if (mlsys_contracode_clone_adv_metrics(hadv, hlab, nh, samples, adv[i], -1, &m) != MLSYS_OK) {
        rc = cli_fail(cmd, "%s", mlsys_last_error());
        goto done;
      }
      cc_eval_print_row(json, 0, "adversarial-hard", adv[i], samples - adv[i] + 1, &m);
    }
  }
  if (json) printf("\n  ]\n}\n");
  if (fflush(stdout)) rc = cli_fail(cmd, "writing the results failed");
done:
  free(nat), free(lab), free(advs), free(pairs);
  free(hidx), free(hnat), free(hlab), free(hadv), free(esim);
  free(ectx.row);
  mlsys_contracode_enc_free(&fresh);
  mlsys_contracode_moco_free(moco);
  mlsys_contracode_sp_free(sp);
  mlsys_contracode_clone_set_free(&set);
  if (!funcs_s) mlsys_contracode_clone_files_free(files, nfiles);
  for (i = 0; i < nunits; i++) free(usrc[i]), free(ulab[i]);
  free(usrc), free(ulab);
  return rc;
}
