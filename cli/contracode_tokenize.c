/* cli/contracode_tokenize.c — `mlsys contracode tokenize`: SentencePiece unigram ids of each line of a file, as
   `spm_encode --output_format=id` prints them, or sampled with subword regularization (mlsys_contracode.h §5).
   The `contracode` dispatcher (cli/contracode.c) calls contracode_tokenize_cmd for the verb `tokenize`. */
#include "mlsys_contracode.h"
#include "cli/cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int contracode_tokenize_cmd(int argc, char **argv);

static const char contracode_tokenize_help[] =
    "usage: mlsys contracode tokenize --model M.model FILE|- [--sample [--alpha A] [--seed S]] [--json]\n"
    "  Each line of FILE (- = stdin) is normalized and segmented by the SentencePiece unigram model M (the .model\n"
    "  file spm_train writes; unigram only). Output: the ids of each line on one line, space-separated, exactly\n"
    "  as `spm_encode --output_format=id` prints them. --sample draws a segmentation with probability\n"
    "  proportional to exp(A * sum of piece scores) (SentencePiece's SampleEncode, nbest -1; default A 0.1, seed 1;\n"
    "  user-defined symbols stay whole). --json: one object a line, {\"ids\": [...], \"pieces\": [...]}.\n";

static int cc_read_all(const char *path, char **buf, size_t *len) {
  FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
  size_t cap = 1 << 16, n = 0, r;
  char *b;
  if (!f) return -1;
  b = (char *)malloc(cap);
  while (b && (r = fread(b + n, 1, cap - n, f)) > 0) {
    n += r;
    if (n == cap) {
      char *nb = (char *)realloc(b, cap * 2);
      if (!nb) {
        free(b);
        b = NULL;
        break;
      }
      b = nb;
      cap *= 2;
    }
  }
  if (f != stdin) fclose(f);
  if (!b) return -1;
  *buf = b;
  *len = n;
  return 0;
}

int contracode_tokenize_cmd(int argc, char **argv) {
  const char *cmd = "contracode tokenize", *model_s = NULL, *sample = NULL, *alpha_s = NULL, *seed_s = NULL,
             *json = NULL, *help = NULL;
  cli_opt opts[] = {{"--model", 1, &model_s}, {"--sample", 0, &sample}, {"--alpha", 1, &alpha_s},
                    {"--seed", 1, &seed_s},   {"--json", 0, &json},     {"--help", 0, &help}};
  const char *pos[1];
  int npos = 0, rc;
  double alpha = 0.1, seed = 1;
  char *buf = NULL, *p, *end;
  size_t len = 0;
  mlsys_contracode_sp *m = NULL;
  mlsys_rng rng;

  if ((rc = cli_parse_args(argc, argv, opts, (int)(sizeof opts / sizeof opts[0]), cmd, pos, 1, &npos))) return rc;
  if (help) {
    fputs(contracode_tokenize_help, stdout);
    return CLI_OK;
  }
  if (!model_s) return cli_usage_error(cmd, "--model M.model is required");
  if (npos != 1) return cli_usage_error(cmd, "give the FILE to tokenize (or - for stdin)");
  if ((alpha_s || seed_s) && !sample) return cli_usage_error(cmd, "--alpha and --seed need --sample");
  if (alpha_s && (cli_parse_double(alpha_s, &alpha) || !(alpha >= 0) || alpha > 1e6))
    return cli_usage_error(cmd, "--alpha must be a number in [0, 1e6], not '%s'", alpha_s);
  if (seed_s && (cli_parse_double(seed_s, &seed) || seed < 0 || seed > 1.8e19 || seed != (double)(uint64_t)seed))
    return cli_usage_error(cmd, "--seed must be a non-negative integer, not '%s'", seed_s);
  mlsys_rng_seed(&rng, (uint64_t)seed);
  if (mlsys_contracode_sp_load(model_s, &m)) return cli_fail(cmd, "%s", mlsys_last_error());
  if (cc_read_all(pos[0], &buf, &len)) {
    mlsys_contracode_sp_free(m);
    return cli_fail(cmd, "cannot read %s: %s", pos[0], strerror(errno));
  }
  rc = CLI_OK;
  for (p = buf, end = buf + len; p < end && rc == CLI_OK;) {
    char *nl = (char *)memchr(p, '\n', (size_t)(end - p));
    size_t ll = (nl ? (size_t)(nl - p) : (size_t)(end - p)), i, n = 0;
    int32_t *ids = NULL;
    mlsys_status st = sample ? mlsys_contracode_sp_sample(m, p, ll, alpha, &rng, &ids, &n)
                             : mlsys_contracode_sp_encode(m, p, ll, &ids, &n, NULL);
    if (st) {
      rc = cli_fail(cmd, "%s", mlsys_last_error());
      break;
    }
    if (json) {
      fputs("{\"ids\": [", stdout);
      for (i = 0; i < n; i++) printf(i ? ", %d" : "%d", (int)ids[i]);
      fputs("], \"pieces\": [", stdout);
      for (i = 0; i < n; i++) {
        if (i) fputs(", ", stdout);
        cli_json_str(stdout, mlsys_contracode_sp_piece(m, ids[i]));
      }
      fputs("]}\n", stdout);
    } else {
      for (i = 0; i < n; i++) printf(i ? " %d" : "%d", (int)ids[i]);
      putchar('\n');
    }
    free(ids);
    p = nl ? nl + 1 : end;
  }
  if (rc == CLI_OK && fflush(stdout)) rc = cli_fail(cmd, "writing the ids: %s", strerror(errno));
  free(buf);
  mlsys_contracode_sp_free(m);
  return rc;
}
