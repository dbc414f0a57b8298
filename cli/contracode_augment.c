/* cli/contracode_augment.c — `mlsys contracode augment`: variants of a JavaScript file (or of each of its functions)
   by transform dropout (Alg. 1, mlsys_contracode.h section 4). The `contracode` dispatcher (cli/contracode.c) calls
   contracode_augment_cmd for the verb `augment`. */
#include "mlsys_contracode.h"
#include "cli/cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int contracode_augment_cmd(int argc, char **argv);

static const char contracode_augment_help[] =
    "usage: mlsys contracode augment FILE.js [--n N] [--transforms LIST | --semantic-only] [--seed S]\n"
    "                                [--functions] [--module] [--out DIR] [--json]\n"
    "  Variants of FILE by transform dropout (ContraCode's Alg. 1): the passes run in a fixed order, each with its\n"
    "  own probability, then the tree is printed (beautified with indent 2 or 4, compact, or terse) and, unless\n"
    "  --semantic-only, random lines are dropped (line subsampling; such a variant need not even parse). Passes:\n"
    "  rename-param (a parameter of each function gets fresh English-like words), insert-var (`var word;` at the\n"
    "  top of each function), then with probability .5 the terser block: drop-console (.5), template-concat,\n"
    "  fold, dce (.5), unused, hoist-vars (.5), arguments (.5), seq-cond, props, bool-int (.5), booleans\n"
    "  (terser's compress passes) and mangle (terser-style short local names); reformat (the print style and\n"
    "  terser's other output options: braces .5, quote_keys .5, keep_quoted_props .5, quote_style fewer-escapes\n"
    "  .5 / single .25 / double .125 / original .125), sample-lines.\n"
    "  drop-console and bool-int change behaviour, as the repo's terser options did.\n"
    "  The original comes first; variants are exactly deduplicated, so there may be fewer than N+1.\n"
    "  --n N          samples to draw (default 20; 0..100000).\n"
    "  --transforms   comma-separated subset of the passes above (the others are off; without reformat the\n"
    "                 output is compact, with the source's quotes and no added braces or quoted keys).\n"
    "  --semantic-only  only semantics-preserving passes (no sample-lines, bool-int, drop-console): every variant of a file\n"
    "                 behaves exactly like it.\n"
    "  --seed S       (default 1). Variant K uses an RNG seeded from S, the source's hash and K: reproducible.\n"
    "  --functions    augment each function of FILE separately, as a program unit (`const x = function…;`).\n"
    "  --out DIR      write DIR/variant-K.js (K = 0 is the original as printed), or DIR/fn-F-variant-K.js with\n"
    "                 --functions; prints one line per file written.\n"
    "  --json         {\"file\", \"units\": [{\"function\", \"name\", \"variants\": [{\"index\", \"passes\": [...],\n"
    "                 \"text\"}]}]} (function -1: the whole file).\n"
    "  Without --out/--json each variant is printed after a line `//# variant K: passes`.\n"
    "  Exit 2 on bad usage, 1 if FILE cannot be read or does not parse.\n";

static void aug_passes(uint32_t bits, char *buf, size_t cap, int json) {
  size_t o = 0;
  int i;
  const char *sep = json ? "\", \"" : ",";
  buf[0] = 0;
#define AUG_ADD(nm)                                                                         \
  do {                                                                                      \
    int w_ = snprintf(buf + o, cap - o, "%s%s", o ? sep : "", nm);                          \
    if (w_ > 0 && (size_t)w_ < cap - o) o += (size_t)w_;                                    \
  } while (0)
  for (i = 0; i < MLSYS_CONTRACODE_AUG_NPASSES; i++)
    if (bits & (1u << i)) AUG_ADD(mlsys_contracode_aug_pass_name(i));
  if (bits & MLSYS_CONTRACODE_AUG_APPLIED_BEAUTIFY) AUG_ADD("beautify");
  if (bits & MLSYS_CONTRACODE_AUG_APPLIED_TERSE) AUG_ADD("terse");
  if (bits & MLSYS_CONTRACODE_AUG_APPLIED_LINES) AUG_ADD("sample-lines");
#undef AUG_ADD
  if (!o && !json) snprintf(buf, cap, "%s", "compact");
}

static int aug_write(const char *cmd, const char *path, const char *s, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(s, 1, n, f) != n || (n && s[n - 1] != '\n' && fputc('\n', f) == EOF) || fclose(f) != 0) {
    if (f) fclose(f);
    return cli_fail(cmd, "cannot write %s: %s", path, strerror(errno));
  }
  printf("%s\n", path);
  return CLI_OK;
}

/* Emits one unit's variants; fn = -1 for the whole file. */
static int aug_emit(const char *cmd, const mlsys_contracode_strset *v, int fn, const char *name, const char *out,
                    int json, int *first_unit) {
  int k, rc;
  char path[4096], passes[256];
  if (json) {
    printf("%s{\"function\": %d, \"name\": ", *first_unit ? "" : ", ", fn);
    cli_json_str(stdout, name ? name : "");
    printf(", \"variants\": [");
  }
  for (k = 0; k < v->n; k++) {
    aug_passes(v->applied[k], passes, sizeof passes, json);
    if (out) {
      if (fn < 0) snprintf(path, sizeof path, "%s/variant-%d.js", out, k);
      else snprintf(path, sizeof path, "%s/fn-%d-variant-%d.js", out, fn, k);
      if ((rc = aug_write(cmd, path, v->s[k], v->len[k])) != CLI_OK) return rc;
    } else if (json) {
      printf("%s{\"index\": %d, \"passes\": [%s%s%s], \"text\": ", k ? ", " : "", k, *passes ? "\"" : "", passes,
             *passes ? "\"" : "");
      cli_json_str(stdout, v->s[k]);
      printf("}");
    } else {
      printf("//# variant %d%s%s: %s\n%s%s", k, fn >= 0 ? " of function " : "", fn >= 0 ? name : "",
             k ? passes : "original", v->s[k], v->len[k] && v->s[k][v->len[k] - 1] == '\n' ? "" : "\n");
    }
  }
  if (json) printf("]}");
  *first_unit = 0;
  return CLI_OK;
}

int contracode_augment_cmd(int argc, char **argv) {
  static const char *cmd = "contracode augment";
  const char *nstr = NULL, *transforms = NULL, *semantic = NULL, *seedstr = NULL, *out = NULL, *json = NULL,
             *functions = NULL, *module = NULL, *help = NULL, *pos[1];
  cli_opt opts[] = {{"--n", 1, &nstr},           {"--transforms", 1, &transforms}, {"--semantic-only", 0, &semantic},
                    {"--seed", 1, &seedstr},     {"--out", 1, &out},               {"--json", 0, &json},
                    {"--functions", 0, &functions}, {"--module", 0, &module},      {"--help", 0, &help}};
  mlsys_contracode_aug_cfg cfg;
  int npos = 0, rc = CLI_OK, nsamples = 20, first_unit = 1;
  unsigned long long seed = 1;
  char *src = NULL, *end;
  size_t n;
  if ((rc = cli_parse_args(argc, argv, opts, (int)(sizeof opts / sizeof *opts), cmd, pos, 1, &npos))) return rc;
  if (help) {
    fputs(contracode_augment_help, stdout);
    return CLI_OK;
  }
  if (npos != 1) return cli_usage_error(cmd, "needs one FILE.js");
  if (nstr) {
    long v;
    errno = 0;
    v = strtol(nstr, &end, 10);
    if (errno || *end || end == nstr || v < 0 || v > 100000) return cli_usage_error(cmd, "--n must be 0..100000, got '%s'", nstr);
    nsamples = (int)v;
  }
  if (seedstr) {
    errno = 0;
    seed = strtoull(seedstr, &end, 0);
    if (errno || *end || end == seedstr || *seedstr == '-') return cli_usage_error(cmd, "--seed must be an unsigned integer, got '%s'", seedstr);
  }
  if (transforms && semantic) return cli_usage_error(cmd, "--transforms and --semantic-only exclude each other");
  if (out && json) return cli_usage_error(cmd, "--out and --json exclude each other");
  mlsys_contracode_aug_preset(semantic ? MLSYS_CONTRACODE_AUG_SAFE : MLSYS_CONTRACODE_AUG_REPO_EFFECTIVE, &cfg);
  if (module) cfg.flags = MLSYS_CONTRACODE_JS_MODULE;
  if (transforms) {
    mlsys_contracode_aug_cfg on;
    const char *p = transforms;
    int i, reformat = 0, lines = 0;
    memset(&on, 0, sizeof on);
    while (*p) {
      const char *q = strchr(p, ',');
      size_t l = q ? (size_t)(q - p) : strlen(p);
      char nm[64];
      int id;
      if (!l || l >= sizeof nm) return cli_usage_error(cmd, "--transforms: empty or overlong name in '%s'", transforms);
      memcpy(nm, p, l);
      nm[l] = 0;
      if (!strcmp(nm, "reformat")) reformat = 1;
      else if (!strcmp(nm, "sample-lines")) lines = 1;
      else if ((id = mlsys_contracode_aug_pass_id(nm)) >= 0) on.p_pass[id] = 1;
      else return cli_usage_error(cmd, "--transforms: unknown transform '%s' (rename-param, insert-var, drop-console, template-concat, fold, dce, unused, hoist-vars, arguments, seq-cond, props, bool-int, booleans, mangle, reformat, sample-lines)", nm);
      p += l;
      if (*p == ',') p++;
    }
    for (i = 0; i < MLSYS_CONTRACODE_AUG_MAX_PASSES; i++)
      if (!on.p_pass[i]) cfg.p_pass[i] = 0;
    if (!reformat) {
      cfg.p_beautify = 0, cfg.p_terse = 0, cfg.p_braces = 0, cfg.p_quote_keys = 0, cfg.p_keep_quoted = 0;
      memset(cfg.p_quote_style, 0, sizeof cfg.p_quote_style);   /* the source's quotes */
    }
    if (!lines) cfg.p_lines = 0;
  }
  if (out) {
    struct stat sb;
    if (mkdir(out, 0777) != 0 && errno != EEXIST) return cli_fail(cmd, "cannot create %s: %s", out, strerror(errno));
    if (stat(out, &sb) != 0 || !S_ISDIR(sb.st_mode)) return cli_fail(cmd, "%s is not a directory", out);
  }
  if (mlsys_read_file(pos[0], &src, &n) != MLSYS_OK) return cli_fail(cmd, "%s", mlsys_last_error());
  if (json) {
    printf("{\"file\": ");
    cli_json_str(stdout, pos[0]);
    printf(", \"units\": [");
  }
  if (!functions) {
    mlsys_contracode_strset v;
    if (mlsys_contracode_augment_variants(src, n, &cfg, nsamples, seed, &v) != MLSYS_OK) {
      rc = cli_fail(cmd, "%s:%s", pos[0], mlsys_last_error());
    } else {
      /* the original as printed (compact) would be a variant of its own; K = 0 stays the file as given */
      rc = aug_emit(cmd, &v, -1, NULL, out, json != NULL, &first_unit);
      mlsys_contracode_strset_free(&v);
    }
  } else {
    mlsys_contracode_js_ast ast;
    mlsys_contracode_fn_span *fs = NULL;
    int nf = 0, f;
    if (mlsys_contracode_js_parse(src, n, cfg.flags & MLSYS_CONTRACODE_JS_MODULE, &ast) != MLSYS_OK) {
      rc = cli_fail(cmd, "%s:%s", pos[0], mlsys_last_error());
    } else {
      if (mlsys_contracode_js_functions(&ast, &fs, &nf) != MLSYS_OK) rc = cli_fail(cmd, "%s", mlsys_last_error());
      for (f = 0; rc == CLI_OK && f < nf; f++) {
        char *u, name[128];
        size_t un;
        mlsys_contracode_strset v;
        uint32_t nl = fs[f].name_end - fs[f].name_start;
        snprintf(name, sizeof name, "%.*s", (int)(nl < 100 ? nl : 100), src + fs[f].name_start);
        if (mlsys_contracode_fn_unit(src, n, &fs[f], &u, &un) != MLSYS_OK) {
          rc = cli_fail(cmd, "%s", mlsys_last_error());
          break;
        }
        /* a unit that does not parse alone (a method using super, say) is reported and skipped */
        if (mlsys_contracode_augment_variants(u, un, &cfg, nsamples, seed, &v) != MLSYS_OK) {
          fprintf(stderr, "mlsys %s: function %d (%s) skipped: %s\n", cmd, f, name, mlsys_last_error());
        } else {
          rc = aug_emit(cmd, &v, f, name, out, json != NULL, &first_unit);
          mlsys_contracode_strset_free(&v);
        }
        free(u);
      }
      free(fs);
      mlsys_contracode_js_free(&ast);
    }
  }
  if (json && rc == CLI_OK) printf("]}\n");
  free(src);
  return rc;
}
