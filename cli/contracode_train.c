/* cli/contracode_train.c — `mlsys contracode train` and `embed` (mlsys_contracode.h section 6): MoCo pre-training of a
   code encoder on program units (functions) with two Alg. 1 views of each, and the vectors of a trained encoder. */
#include "mlsys_contracode.h"
#include "cli/cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int contracode_train_cmd(int argc, char **argv);
int contracode_embed_cmd(int argc, char **argv);

static const char contracode_train_help[] =
    "usage: mlsys contracode train --functions FUNCS.jsonl|FILE.js [FILE...] --out CKPT [options]\n"
    "  MoCo pre-training (ContraCode): each step draws B functions, makes two views of each with transform dropout\n"
    "  (the SAFE preset plus line subsampling p .25), normalizes and tokenizes them (subword sampling with --alpha),\n"
    "  and trains the query encoder on InfoNCE against a queue of K keys. FUNCS.jsonl: one object a line with a\n"
    "  \"src\" field (`mlsys contracode functions --jsonl`); FILE.js: every function in it is a unit.\n"
    "  --encoder bow|tiny-transformer|tiny-bilstm|transformer|bilstm   (default bow)\n"
    "  --vocab M.model     SentencePiece model (default tools/contracode_js8k.model when present)\n"
    "  --steps N (1000) --batch B (8) --queue K (1024, a multiple of B) --lr X (1e-4) --warmup W (steps/10)\n"
    "  --max-len T (512) --alpha A (0.1; 0 = Viterbi) --seed S (1) --threads N (1; 0 = all CPUs)\n"
    "  --resume            continue from CKPT (same data and seed give the same run as without the stop)\n"
    "  --ckpt-every N      also save every N steps (default: only at the end)\n"
    "  --stop-at S         save and stop after step S (of --steps; the schedule is unchanged), to --resume later\n"
    "  --json              a JSON summary on stdout (progress lines go to stderr)\n";
static const char contracode_embed_help[] =
    "usage: mlsys contracode embed --model CKPT --vocab M.model FILE.js|FUNCS.jsonl [--project] [--json]\n"
    "  One vector per function: the encoder's pooled representation (what clone detection compares), or with\n"
    "  --project the projection head's output. Text: LABEL<TAB>v1 v2 ...; --json: {\"dim\", \"functions\": [...]}.\n";

typedef struct {
  int n, cap;
  char **src, **label;
} cc_units;

static void cc_units_free(cc_units *u) {
  int i;
  for (i = 0; i < u->n; i++) free(u->src[i]), free(u->label[i]);
  free(u->src), free(u->label);
  memset(u, 0, sizeof *u);
}
static int cc_units_add(cc_units *u, char *src, const char *path, int line) {
  char lab[1200];
  if (u->n == u->cap) {
    int cap = u->cap ? 2 * u->cap : 64;
    char **s = (char **)realloc(u->src, (size_t)cap * sizeof *s), **l;
    if (!s) return 0;
    u->src = s;
    if (!(l = (char **)realloc(u->label, (size_t)cap * sizeof *l))) return 0;
    u->label = l, u->cap = cap;
  }
  snprintf(lab, sizeof lab, "%s:%d", path, line);
  u->src[u->n] = src;
  if (!(u->label[u->n] = strdup(lab))) return 0;
  u->n++;
  return 1;
}
static int cc_ends_with(const char *s, const char *suf) {
  size_t a = strlen(s), b = strlen(suf);
  return a >= b && !strcmp(s + a - b, suf);
}

/* Program units from a JSON-lines file (the "src" field of each non-empty line) or every function of a .js file. */
static int cc_load_units(const char *cmd, const char *path, cc_units *u) {
  char *data;
  size_t n;
  if (mlsys_read_file(path, &data, &n) != MLSYS_OK) return cli_fail(cmd, "%s", mlsys_last_error());
  if (cc_ends_with(path, ".jsonl") || cc_ends_with(path, ".json")) {
    size_t i = 0;
    int line = 0;
    while (i < n) {
      size_t e = i;
      mlsys_json_doc doc;
      const char *src;
      char name[1100];
      while (e < n && data[e] != '\n') e++;
      line++;
      if (e > i + 0 && strspn(data + i, " \t\r") < e - i) {
        snprintf(name, sizeof name, "%s:%d", path, line);
        if (mlsys_json_parse(data + i, e - i, name, &doc) != MLSYS_OK) {
          free(data);
          return cli_fail(cmd, "%s", mlsys_last_error());
        }
        if (mlsys_json_get_str(doc.root, "src", 1, NULL, &src) != MLSYS_OK) {
          mlsys_json_doc_free(&doc);
          free(data);
          return cli_fail(cmd, "%s: line %d has no string \"src\" field", path, line);
        }
        if (!cc_units_add(u, strdup(src), path, line)) {
          mlsys_json_doc_free(&doc);
          free(data);
          return cli_fail(cmd, "out of memory");
        }
        mlsys_json_doc_free(&doc);
      }
      i = e + 1;
    }
  } else {
    mlsys_contracode_js_ast ast;
    mlsys_contracode_fn_span *fs = NULL;
    int nf = 0, i;
    if (mlsys_contracode_js_parse(data, n, MLSYS_CONTRACODE_JS_SCRIPT, &ast) != MLSYS_OK &&
        mlsys_contracode_js_parse(data, n, MLSYS_CONTRACODE_JS_MODULE, &ast) != MLSYS_OK) {
      free(data);
      return cli_fail(cmd, "%s:%s", path, mlsys_last_error());
    }
    if (mlsys_contracode_js_functions(&ast, &fs, &nf) != MLSYS_OK) {
      mlsys_contracode_js_free(&ast);
      free(data);
      return cli_fail(cmd, "%s: %s", path, mlsys_last_error());
    }
    for (i = 0; i < nf; i++) {
      char *unit;
      size_t un, k;
      int line = 1;
      if (mlsys_contracode_fn_unit(data, n, &fs[i], &unit, &un) != MLSYS_OK) continue;
      for (k = 0; k < fs[i].start && k < n; k++) line += data[k] == '\n';
      if (!cc_units_add(u, unit, path, line)) {
        free(fs);
        mlsys_contracode_js_free(&ast);
        free(data);
        return cli_fail(cmd, "out of memory");
      }
    }
    free(fs);
    mlsys_contracode_js_free(&ast);
  }
  free(data);
  return CLI_OK;
}

/* The same units for `contracode eval --functions` (cli/contracode_eval.c): *src and *label malloc'd arrays of n
   malloc'd strings, freed by the caller. */
int contracode_load_units(const char *cmd, const char *path, int *n, char ***src, char ***label);
int contracode_load_units(const char *cmd, const char *path, int *n, char ***src, char ***label) {
  cc_units u;
  int rc;
  memset(&u, 0, sizeof u);
  if ((rc = cc_load_units(cmd, path, &u)) != CLI_OK) {
    cc_units_free(&u);
    return rc;
  }
  *n = u.n, *src = u.src, *label = u.label;
  return CLI_OK;
}

/* normalize_program, then Viterbi (alpha 0) or sampled ids, truncated to T; at least one id (the pad) per row.
   Also used by `contracode eval --scorer model:` (cli/contracode_eval.c). */
int contracode_tokenize_row(const mlsys_contracode_sp *sp, const char *src, double alpha, mlsys_rng *r, int T, int pad,
                            int32_t *row, int *len);
int contracode_tokenize_row(const mlsys_contracode_sp *sp, const char *src, double alpha, mlsys_rng *r, int T, int pad,
                       int32_t *row, int *len) {
  char *norm;
  size_t nn, ni = 0, t;
  int32_t *ids = NULL;
  mlsys_status st;
  if (mlsys_contracode_normalize_program(src, strlen(src), &norm, &nn) != MLSYS_OK) return 0;
  st = alpha > 0 ? mlsys_contracode_sp_sample(sp, norm, nn, alpha, r, &ids, &ni) : mlsys_contracode_sp_encode(sp, norm, nn, &ids, &ni, NULL);
  free(norm);
  if (st != MLSYS_OK) return 0;
  if (ni > (size_t)T) ni = (size_t)T;
  for (t = 0; t < (size_t)T; t++) row[t] = t < ni ? ids[t] : pad;
  *len = ni ? (int)ni : 1;
  free(ids);
  return 1;
}

static int cc_pad_id(const mlsys_contracode_sp *sp) {
  int id = mlsys_contracode_sp_id(sp, "[PAD]");
  if (id < 0) id = mlsys_contracode_sp_id(sp, "<pad>");
  return id < 0 ? 0 : id;
}

static int cc_parse_int(const char *s, long lo, long hi, long *out) {
  char *end;
  long v;
  errno = 0;
  v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) return 1;
  *out = v;
  return 0;
}

int contracode_train_cmd(int argc, char **argv) {
  const char *cmd = "contracode train";
  const char *funcs = NULL, *out = NULL, *enc_s = NULL, *vocab_s = NULL, *steps_s = NULL, *batch_s = NULL, *queue_s = NULL;
  const char *lr_s = NULL, *warm_s = NULL, *maxlen_s = NULL, *alpha_s = NULL, *seed_s = NULL, *threads_s = NULL;
  const char *resume = NULL, *every_s = NULL, *stop_s = NULL, *json = NULL, *help = NULL, *pos[64];
  cli_opt opts[] = {{"--functions", 1, &funcs}, {"--out", 1, &out},         {"--encoder", 1, &enc_s},
                    {"--vocab", 1, &vocab_s},   {"--steps", 1, &steps_s},   {"--batch", 1, &batch_s},
                    {"--queue", 1, &queue_s},   {"--lr", 1, &lr_s},         {"--warmup", 1, &warm_s},
                    {"--max-len", 1, &maxlen_s}, {"--alpha", 1, &alpha_s},  {"--seed", 1, &seed_s},
                    {"--threads", 1, &threads_s}, {"--resume", 0, &resume}, {"--ckpt-every", 1, &every_s},
                    {"--stop-at", 1, &stop_s},  {"--json", 0, &json},       {"--help", 0, &help}};
  long stop = -1, steps = 1000, B = 8, K = 1024, warm = -1, T = 512, threads = 1, every = 0;
  double lr = 1e-4, alpha = 0.1, seedd = 1, t0, first_loss = 0, last_loss = 0, last_acc = 0;
  char vocab_path[1024];
  int npos = 0, rc, i, nlog = 0;
  cc_units u = {0, 0, NULL, NULL};
  mlsys_contracode_sp *sp = NULL;
  mlsys_contracode_enc_cfg ec;
  mlsys_contracode_moco_cfg mc;
  mlsys_contracode_moco *m = NULL;
  mlsys_contracode_aug_cfg ac;
  mlsys_pool *pool = NULL;
  int32_t *iq = NULL, *ik = NULL;
  int *lq = NULL, *lk = NULL, *pick = NULL;
  int64_t s0 = 0, s;
  uint64_t seed;
  FILE *log = NULL;

  if ((rc = cli_parse_args(argc, argv, opts, (int)(sizeof opts / sizeof *opts), cmd, pos, 64, &npos))) return rc;
  if (help) {
    fputs(contracode_train_help, stdout);
    return CLI_OK;
  }
  if (!funcs) return cli_usage_error(cmd, "--functions FUNCS.jsonl|FILE.js is required");
  if (!out) return cli_usage_error(cmd, "--out CKPT is required");
  if (steps_s && cc_parse_int(steps_s, 1, 1000000000L, &steps)) return cli_usage_error(cmd, "--steps must be 1..1e9, not '%s'", steps_s);
  if (batch_s && cc_parse_int(batch_s, 1, 65536, &B)) return cli_usage_error(cmd, "--batch must be 1..65536, not '%s'", batch_s);
  if (queue_s && cc_parse_int(queue_s, 1, 10000000L, &K)) return cli_usage_error(cmd, "--queue must be 1..1e7, not '%s'", queue_s);
  if (K % B) return cli_usage_error(cmd, "--queue %ld is not a multiple of --batch %ld", K, B);
  if (warm_s && cc_parse_int(warm_s, 0, 1000000000L, &warm)) return cli_usage_error(cmd, "--warmup must be >= 0, not '%s'", warm_s);
  if (maxlen_s && cc_parse_int(maxlen_s, 1, 1 << 20, &T)) return cli_usage_error(cmd, "--max-len must be >= 1, not '%s'", maxlen_s);
  if (threads_s && cc_parse_int(threads_s, 0, 1024, &threads)) return cli_usage_error(cmd, "--threads must be 0..1024, not '%s'", threads_s);
  if (every_s && cc_parse_int(every_s, 0, 1000000000L, &every)) return cli_usage_error(cmd, "--ckpt-every must be >= 0, not '%s'", every_s);
  if (stop_s && cc_parse_int(stop_s, 1, 1000000000L, &stop)) return cli_usage_error(cmd, "--stop-at must be >= 1, not '%s'", stop_s);
  if (lr_s && (cli_parse_double(lr_s, &lr) || !(lr >= 0) || lr > 10)) return cli_usage_error(cmd, "--lr must be in [0, 10], not '%s'", lr_s);
  if (alpha_s && (cli_parse_double(alpha_s, &alpha) || !(alpha >= 0) || alpha > 1e6))
    return cli_usage_error(cmd, "--alpha must be a number >= 0, not '%s'", alpha_s);
  if (seed_s && (cli_parse_double(seed_s, &seedd) || seedd < 0 || seedd > 1.8e19 || seedd != (double)(uint64_t)seedd))
    return cli_usage_error(cmd, "--seed must be a non-negative integer, not '%s'", seed_s);
  seed = (uint64_t)seedd;
  if (!vocab_s) {
    if (!cli_repo_file("tools/contracode_js8k.model", vocab_path, sizeof vocab_path))
      return cli_usage_error(cmd, "--vocab M.model is required (tools/contracode_js8k.model is not there)");
    vocab_s = vocab_path;
  }
  if ((rc = cc_load_units(cmd, funcs, &u))) goto done;
  for (i = 0; i < npos; i++)
    if ((rc = cc_load_units(cmd, pos[i], &u))) goto done;
  if (u.n < 2) {
    rc = cli_fail(cmd, "%d function(s) found; contrastive training needs at least 2", u.n);
    goto done;
  }
  if (mlsys_contracode_sp_load(vocab_s, &sp) != MLSYS_OK) {
    rc = cli_fail(cmd, "%s", mlsys_last_error());
    goto done;
  }
  if (threads != 1 && mlsys_pool_create((int)threads, &pool) != MLSYS_OK) {
    rc = cli_fail(cmd, "%s", mlsys_last_error());
    goto done;
  }
  if (resume && cli_file_exists(out)) {
    if (mlsys_contracode_moco_load(out, pool, &m) != MLSYS_OK) {
      rc = cli_fail(cmd, "%s", mlsys_last_error());
      goto done;
    }
    ec = mlsys_contracode_moco_query_encoder(m)->cfg;
    s0 = mlsys_contracode_moco_steps(m);
    if (ec.vocab != mlsys_contracode_sp_size(sp)) {
      rc = cli_fail(cmd, "%s was trained with %d pieces, %s has %d", out, ec.vocab, vocab_s, mlsys_contracode_sp_size(sp));
      goto done;
    }
    if (T > ec.max_len) T = ec.max_len;
  } else {
    if (mlsys_contracode_enc_preset(enc_s ? enc_s : "bow", mlsys_contracode_sp_size(sp), &ec) != MLSYS_OK) {
      rc = cli_usage_error(cmd, "%s", mlsys_last_error());
      goto done;
    }
    ec.max_len = (int)T;
    ec.pad_id = cc_pad_id(sp);
    mlsys_contracode_moco_defaults(&mc);
    mc.K = (int)K, mc.lr = (float)lr, mc.warmup = (int)(warm >= 0 ? warm : steps / 10), mc.total_steps = (int)steps;
    if (mlsys_contracode_moco_new(&ec, &mc, seed, pool, &m) != MLSYS_OK) {
      rc = cli_fail(cmd, "%s", mlsys_last_error());
      goto done;
    }
  }
  mlsys_contracode_aug_preset(MLSYS_CONTRACODE_AUG_SAFE, &ac);
  ac.p_lines = 0.25; /* §3.4: SAFE plus line subsampling for training */
  if (ac.p_keep_line <= 0) ac.p_keep_line = 0.9;
  iq = (int32_t *)malloc((size_t)B * T * sizeof(int32_t));
  ik = (int32_t *)malloc((size_t)B * T * sizeof(int32_t));
  lq = (int *)malloc((size_t)B * sizeof(int)), lk = (int *)malloc((size_t)B * sizeof(int));
  pick = (int *)malloc((size_t)u.n * sizeof(int));
  if (!iq || !ik || !lq || !lk || !pick) {
    rc = cli_fail(cmd, "out of memory");
    goto done;
  }
  if (json) log = tmpfile();
  t0 = mlsys_now();
  if (stop < 0 || stop > steps) stop = steps;
  for (s = s0; s < stop; s++) {
    mlsys_rng r;
    mlsys_contracode_moco_stats st;
    int b, v;
    /* the batch of step s depends only on (seed, s): a resumed run sees the same data */
    mlsys_rng_seed(&r, seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(s + 1)));
    for (i = 0; i < u.n; i++) pick[i] = i;
    for (b = 0; b < B; b++) {
      int f;
      if (b < u.n) { /* without replacement while there are functions left: a batch's positives are distinct */
        int j = b + (int)mlsys_rng_below(&r, (uint64_t)(u.n - b)), tmp = pick[b];
        pick[b] = pick[j], pick[j] = tmp;
        f = pick[b];
      } else {
        f = (int)mlsys_rng_below(&r, (uint64_t)u.n);
      }
      for (v = 0; v < 2; v++) {
        mlsys_rng vr;
        char *aug = NULL;
        size_t an;
        const char *text = u.src[f];
        mlsys_rng_seed(&vr, mlsys_rng_u64(&r));
        /* a unit that does not parse trains on its text as it is */
        if (mlsys_contracode_augment(u.src[f], strlen(u.src[f]), &ac, &vr, &aug, &an, NULL) == MLSYS_OK) text = aug;
        if (!contracode_tokenize_row(sp, text, alpha, &vr, (int)T, ec.pad_id, (v ? ik : iq) + (size_t)b * T, (v ? lk : lq) + b)) {
          free(aug);
          rc = cli_fail(cmd, "%s: %s", u.label[f], mlsys_last_error());
          goto done;
        }
        free(aug);
      }
    }
    if (mlsys_contracode_moco_step(m, iq, lq, ik, lk, (int)B, (int)T, &st) != MLSYS_OK) {
      rc = cli_fail(cmd, "step %lld: %s", (long long)s, mlsys_last_error());
      goto done;
    }
    if (s == s0) first_loss = st.loss;
    last_loss = st.loss, last_acc = st.acc1;
    if ((s + 1) % (steps >= 20 ? steps / 20 : 1) == 0 || s + 1 == stop) {
      double el = mlsys_now() - t0;
      fprintf(stderr, "step %lld/%ld  loss %.4f  acc@1 %.3f  lr %.3g  %.2f steps/s\n", (long long)(s + 1), steps, st.loss, st.acc1,
              st.lr, el > 0 ? (double)(s + 1 - s0) / el : 0.0);
      if (log) fprintf(log, "%s{\"step\": %lld, \"loss\": %.6f, \"acc1\": %.4f, \"acc5\": %.4f, \"lr\": %.6g}", nlog++ ? ", " : "",
                       (long long)(s + 1), st.loss, st.acc1, st.acc5, st.lr);
    }
    if (every && (s + 1) % every == 0 && s + 1 < stop && mlsys_contracode_moco_save(m, out) != MLSYS_OK) {
      rc = cli_fail(cmd, "%s", mlsys_last_error());
      goto done;
    }
  }
  if (mlsys_contracode_moco_save(m, out) != MLSYS_OK) {
    rc = cli_fail(cmd, "%s", mlsys_last_error());
    goto done;
  }
  if (json) {
    const mlsys_contracode_enc *q = mlsys_contracode_moco_query_encoder(m);
    int c;
    printf("{\"out\": ");
    cli_json_str(stdout, out);
    printf(", \"functions\": %d, \"vocab\": %d, \"nparams\": %zu, \"pooled_dim\": %d, \"d_rep\": %d, \"start_step\": %lld, "
           "\"end_step\": %lld, \"steps\": %ld, \"first_loss\": %.6f, \"last_loss\": %.6f, \"last_acc1\": %.4f, \"log\": [",
           u.n, q->cfg.vocab, q->nparams, mlsys_contracode_enc_pooled_dim(&q->cfg), q->cfg.d_rep, (long long)s0, (long long)s, steps,
           first_loss, last_loss, last_acc);
    if (log) {
      rewind(log);
      while ((c = fgetc(log)) != EOF) putchar(c);
    }
    printf("]}\n");
  } else {
    printf("%s: steps %lld to %lld of %ld, loss %.4f -> %.4f\n", out, (long long)s0, (long long)s, steps, first_loss, last_loss);
  }
  rc = CLI_OK;
done:
  if (log) fclose(log);
  free(iq), free(ik), free(lq), free(lk), free(pick);
  mlsys_contracode_moco_free(m);
  mlsys_contracode_sp_free(sp);
  mlsys_pool_free(pool);
  cc_units_free(&u);
  return rc;
}

int contracode_embed_cmd(int argc, char **argv) {
  const char *cmd = "contracode embed";
  const char *model = NULL, *vocab_s = NULL, *project = NULL, *json = NULL, *help = NULL, *pos[1];
  cli_opt opts[] = {{"--model", 1, &model}, {"--vocab", 1, &vocab_s}, {"--project", 0, &project},
                    {"--json", 0, &json},   {"--help", 0, &help}};
  int npos = 0, rc, i, c, dim;
  char vocab_path[1024];
  cc_units u = {0, 0, NULL, NULL};
  mlsys_contracode_sp *sp = NULL;
  mlsys_contracode_moco *m = NULL;
  mlsys_contracode_enc *e;
  int32_t *row = NULL;
  float *vec = NULL;

  if ((rc = cli_parse_args(argc, argv, opts, (int)(sizeof opts / sizeof *opts), cmd, pos, 1, &npos))) return rc;
  if (help) {
    fputs(contracode_embed_help, stdout);
    return CLI_OK;
  }
  if (!model) return cli_usage_error(cmd, "--model CKPT is required");
  if (npos != 1) return cli_usage_error(cmd, "give one FILE.js or FUNCS.jsonl");
  if (!vocab_s) {
    if (!cli_repo_file("tools/contracode_js8k.model", vocab_path, sizeof vocab_path))
      return cli_usage_error(cmd, "--vocab M.model is required (tools/contracode_js8k.model is not there)");
    vocab_s = vocab_path;
  }
  if ((rc = cc_load_units(cmd, pos[0], &u))) goto done;
  rc = CLI_ERR;
  if (mlsys_contracode_sp_load(vocab_s, &sp) != MLSYS_OK || mlsys_contracode_moco_load(model, NULL, &m) != MLSYS_OK) {
    rc = cli_fail(cmd, "%s", mlsys_last_error());
    goto done;
  }
  e = mlsys_contracode_moco_query_encoder(m);
  if (e->cfg.vocab != mlsys_contracode_sp_size(sp)) {
    rc = cli_fail(cmd, "%s was trained with %d pieces, %s has %d", model, e->cfg.vocab, vocab_s, mlsys_contracode_sp_size(sp));
    goto done;
  }
  dim = project ? e->cfg.d_rep : mlsys_contracode_enc_pooled_dim(&e->cfg);
  row = (int32_t *)malloc((size_t)e->cfg.max_len * sizeof(int32_t));
  vec = (float *)malloc((size_t)dim * sizeof(float));
  if (!row || !vec) {
    rc = cli_fail(cmd, "out of memory");
    goto done;
  }
  if (json) printf("{\"dim\": %d, \"projected\": %s, \"functions\": [", dim, project ? "true" : "false");
  for (i = 0; i < u.n; i++) {
    int len;
    if (!contracode_tokenize_row(sp, u.src[i], 0, NULL, e->cfg.max_len, e->cfg.pad_id, row, &len) ||
        mlsys_contracode_enc_forward(e, row, &len, 1, len, project != NULL, 0, NULL, vec) != MLSYS_OK) {
      if (json) printf("]}\n");
      rc = cli_fail(cmd, "%s: %s", u.label[i], mlsys_last_error());
      goto done;
    }
    if (json) {
      printf("%s{\"label\": ", i ? ", " : "");
      cli_json_str(stdout, u.label[i]);
      printf(", \"vector\": [");
      for (c = 0; c < dim; c++) printf("%s%.9g", c ? ", " : "", vec[c]);
      printf("]}");
    } else {
      printf("%s\t", u.label[i]);
      for (c = 0; c < dim; c++) printf("%s%.9g", c ? " " : "", vec[c]);
      putchar('\n');
    }
  }
  if (json) printf("]}\n");
  rc = CLI_OK;
done:
  free(row), free(vec);
  mlsys_contracode_moco_free(m);
  mlsys_contracode_sp_free(sp);
  cc_units_free(&u);
  return rc;
}
