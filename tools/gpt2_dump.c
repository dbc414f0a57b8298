/* tools/gpt2_dump.c — what the C GPT-2 (mlsys_relm.h) computes for one checkpoint, written as raw float32 files for
   tools/check_gpt2_torch.py, an independent PyTorch GPT-2 (issue 24).

     build/gpt2_dump --ckpt M.bin --text tests/data/relm/apache-2.0.txt --out DIR [--vocab DIR] [--seq N]
                     [--batch B --seq-len T] [--offset K] [--threads K]
     build/gpt2_dump --ckpt M.bin --tokens TOKS.i32 --out DIR ...

   The token stream is the text encoded with the GPT-2 tokenizer (--text; --vocab as `mlsys relm`), or raw
   little-endian int32 ids (--tokens). From token --offset (default 0) on:
     DIR/seq.i32       the first N ids (N = --seq, default maxT)
     DIR/logits.f32    mlsys_relm_gpt2_forward of them: N × V floats (V = vocab_size, not padded)
     DIR/inputs.i32    B × T ids: row b is the stream's ids [b·T, b·T + T) (B = --batch 2, T = --seq-len maxT)
     DIR/targets.i32   B × T ids: the same shifted by one (the next token)
     DIR/grads.f32     ∂loss/∂param of mlsys_relm_gpt2_backward on that batch: nparams floats, llm.c's order and
                       padded wte rows (as the checkpoint's parameters)
     DIR/meta.json     the checkpoint path, its config, N, B, T, nparams and the loss (nats, mean over B·T)
   Exit 0; 2 for bad usage; 1 when something fails (the cause on stderr).

   tests/test_relm_torch_check.c includes this file with GPT2_DUMP_NO_MAIN and calls gpt2_dump_main. */
#ifndef GPT2_DUMP_NO_MAIN
#define MLSYS_IMPLEMENTATION
#endif
#include "mlsys_relm.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int gpt2_dump_write(const char *dir, const char *name, const void *p, size_t bytes) {
  char path[4096];
  FILE *f;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  f = fopen(path, "wb");
  if (!f || (bytes && fwrite(p, 1, bytes, f) != bytes) || fclose(f)) {
    fprintf(stderr, "gpt2_dump: cannot write %s: %s\n", path, strerror(errno));
    return 1;
  }
  return 0;
}

static int gpt2_dump_int(const char *opt, const char *s, long lo, long hi, long *out) {
  char *end;
  long v;
  errno = 0;
  v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) {
    fprintf(stderr, "gpt2_dump: %s must be an integer in [%ld, %ld] (got '%s')\n", opt, lo, hi, s);
    return 2;
  }
  *out = v;
  return 0;
}

static int gpt2_dump_main(int argc, char **argv) {
  const char *ckpt = NULL, *text = NULL, *tokfile = NULL, *out = NULL, *vocab_dir = NULL;
  long seq = 0, B = 2, T = 0, offset = 0, threads = 1;
  int rc = 1, k;
  mlsys_relm_gpt2 *m = NULL;
  mlsys_relm_gpt2_desc md;
  mlsys_relm_gpt2_config cfg;
  mlsys_relm_vocab *v = NULL;
  int32_t *toks = NULL, *inputs = NULL, *targets = NULL;
  float *logits = NULL, *grads = NULL;
  size_t ntok = 0, np = 0;
  double loss = 0;
  char path[4096];
  FILE *f;

  for (k = 1; k < argc; k++) {
    const char *a = argv[k], *val = k + 1 < argc ? argv[k + 1] : NULL;
    int r = 0;
    if (!strcmp(a, "--help")) {
      puts("usage: gpt2_dump --ckpt M.bin (--text FILE [--vocab DIR] | --tokens FILE.i32) --out DIR [--seq N] [--batch B]\n"
           "                 [--seq-len T] [--offset K] [--threads K]   (see the comment at the top of tools/gpt2_dump.c)");
      return 0;
    }
    if (!val) { fprintf(stderr, "gpt2_dump: %s needs a value (or unknown option; --help)\n", a); return 2; }
    if (!strcmp(a, "--ckpt")) ckpt = val;
    else if (!strcmp(a, "--text")) text = val;
    else if (!strcmp(a, "--tokens")) tokfile = val;
    else if (!strcmp(a, "--out")) out = val;
    else if (!strcmp(a, "--vocab")) vocab_dir = val;
    else if (!strcmp(a, "--seq")) r = gpt2_dump_int(a, val, 1, 1 << 20, &seq);
    else if (!strcmp(a, "--batch")) r = gpt2_dump_int(a, val, 1, 4096, &B);
    else if (!strcmp(a, "--seq-len")) r = gpt2_dump_int(a, val, 1, 1 << 20, &T);
    else if (!strcmp(a, "--offset")) r = gpt2_dump_int(a, val, 0, 1L << 30, &offset);
    else if (!strcmp(a, "--threads")) r = gpt2_dump_int(a, val, 1, 4096, &threads);
    else { fprintf(stderr, "gpt2_dump: unknown option %s (--help)\n", a); return 2; }
    if (r) return r;
    k++;
  }
  if (!ckpt || !out || !text == !tokfile) {
    fprintf(stderr, "gpt2_dump: give --ckpt, --out and one of --text / --tokens (--help)\n");
    return 2;
  }

  memset(&md, 0, sizeof md);
  md.threads = (int)threads;
  if (mlsys_relm_gpt2_load(ckpt, &md, &m)) { fprintf(stderr, "gpt2_dump: %s\n", mlsys_last_error()); goto done; }
  cfg = mlsys_relm_gpt2_get_config(m);
  if (!seq) seq = cfg.max_seq_len;
  if (!T) T = cfg.max_seq_len;
  if (seq > cfg.max_seq_len || T > cfg.max_seq_len) {
    fprintf(stderr, "gpt2_dump: --seq %ld / --seq-len %ld exceed the checkpoint's context (maxT) %d\n", seq, T, cfg.max_seq_len);
    rc = 2;
    goto done;
  }

  if (text) {
    char *buf = NULL;
    size_t len = 0;
    if (mlsys_relm_vocab_load_gpt2_dir(vocab_dir, &v) || mlsys_read_file(text, &buf, &len)) {
      fprintf(stderr, "gpt2_dump: %s\n", mlsys_last_error());
      mlsys_free(buf);
      goto done;
    }
    if (mlsys_relm_encode(v, buf, len, &toks, &ntok)) {
      fprintf(stderr, "gpt2_dump: %s: %s\n", text, mlsys_last_error());
      mlsys_free(buf);
      goto done;
    }
    mlsys_free(buf);
  } else {
    char *buf = NULL;
    size_t len = 0;
    if (mlsys_read_file(tokfile, &buf, &len)) { fprintf(stderr, "gpt2_dump: %s\n", mlsys_last_error()); goto done; }
    if (len % 4) { fprintf(stderr, "gpt2_dump: %s holds %zu bytes, not a whole number of int32 ids\n", tokfile, len); mlsys_free(buf); goto done; }
    ntok = len / 4;
    toks = (int32_t *)mlsys_alloc(ntok ? ntok : 1, sizeof(int32_t));
    if (!toks) { mlsys_free(buf); fprintf(stderr, "gpt2_dump: out of memory\n"); goto done; }
    memcpy(toks, buf, len);
    mlsys_free(buf);
  }
  for (size_t i = 0; i < ntok; i++)
    if (toks[i] < 0 || toks[i] >= cfg.vocab_size) {
      fprintf(stderr, "gpt2_dump: token %zu is %d, outside the checkpoint's vocabulary [0, %d)\n", i, (int)toks[i], cfg.vocab_size);
      goto done;
    }
  if ((size_t)offset + (size_t)seq > ntok || (size_t)offset + (size_t)(B * T) + 1 > ntok) {
    fprintf(stderr, "gpt2_dump: %zu tokens from offset %ld: --seq %ld needs %ld and --batch %ld × --seq-len %ld needs %ld\n",
            ntok - ((size_t)offset < ntok ? (size_t)offset : ntok), offset, seq, seq, B, T, B * T + 1);
    goto done;
  }

  mlsys_relm_gpt2_params(m, &np);
  logits = (float *)malloc((size_t)seq * (size_t)cfg.vocab_size * sizeof(float));
  grads = (float *)malloc(np * sizeof(float));
  inputs = (int32_t *)malloc((size_t)(B * T) * sizeof(int32_t));
  targets = (int32_t *)malloc((size_t)(B * T) * sizeof(int32_t));
  if (!logits || !grads || !inputs || !targets) { fprintf(stderr, "gpt2_dump: out of memory\n"); goto done; }
  memcpy(inputs, toks + offset, (size_t)(B * T) * sizeof(int32_t));
  memcpy(targets, toks + offset + 1, (size_t)(B * T) * sizeof(int32_t));
  if (mlsys_relm_gpt2_forward(m, toks + offset, (int)seq, logits) ||
      mlsys_relm_gpt2_backward(m, inputs, targets, (int)B, (int)T, &loss, grads)) {
    fprintf(stderr, "gpt2_dump: %s\n", mlsys_last_error());
    goto done;
  }

  if (mkdir(out, 0777) && errno != EEXIST) { fprintf(stderr, "gpt2_dump: cannot create %s: %s\n", out, strerror(errno)); goto done; }
  if (gpt2_dump_write(out, "seq.i32", toks + offset, (size_t)seq * sizeof(int32_t)) ||
      gpt2_dump_write(out, "logits.f32", logits, (size_t)seq * (size_t)cfg.vocab_size * sizeof(float)) ||
      gpt2_dump_write(out, "inputs.i32", inputs, (size_t)(B * T) * sizeof(int32_t)) ||
      gpt2_dump_write(out, "targets.i32", targets, (size_t)(B * T) * sizeof(int32_t)) ||
      gpt2_dump_write(out, "grads.f32", grads, np * sizeof(float)))
    goto done;
  snprintf(path, sizeof path, "%s/meta.json", out);
  f = fopen(path, "w");
  if (!f) { fprintf(stderr, "gpt2_dump: cannot write %s: %s\n", path, strerror(errno)); goto done; }
  {
    mlsys_json_writer jw;
    mlsys_status st;
    mlsys_jw_init(&jw, f, 1);
    mlsys_jw_object(&jw);
    mlsys_jw_key(&jw, "checkpoint"); mlsys_jw_str(&jw, ckpt);
    mlsys_jw_key(&jw, "max_seq_len"); mlsys_jw_i64(&jw, cfg.max_seq_len);
    mlsys_jw_key(&jw, "vocab_size"); mlsys_jw_i64(&jw, cfg.vocab_size);
    mlsys_jw_key(&jw, "padded_vocab_size"); mlsys_jw_i64(&jw, cfg.padded_vocab_size);
    mlsys_jw_key(&jw, "n_layer"); mlsys_jw_i64(&jw, cfg.n_layer);
    mlsys_jw_key(&jw, "n_head"); mlsys_jw_i64(&jw, cfg.n_head);
    mlsys_jw_key(&jw, "n_embd"); mlsys_jw_i64(&jw, cfg.n_embd);
    mlsys_jw_key(&jw, "nparams"); mlsys_jw_u64(&jw, np);
    mlsys_jw_key(&jw, "seq"); mlsys_jw_i64(&jw, seq);
    mlsys_jw_key(&jw, "batch"); mlsys_jw_i64(&jw, B);
    mlsys_jw_key(&jw, "seq_len"); mlsys_jw_i64(&jw, T);
    mlsys_jw_key(&jw, "offset"); mlsys_jw_i64(&jw, offset);
    mlsys_jw_key(&jw, "loss"); mlsys_jw_double(&jw, loss);
    mlsys_jw_end(&jw);
    st = mlsys_jw_finish(&jw);
    if (fclose(f) || st) { fprintf(stderr, "gpt2_dump: cannot write %s\n", path); goto done; }
  }
  rc = 0;
done:
  free(logits);
  free(grads);
  free(inputs);
  free(targets);
  mlsys_free(toks);   /* mlsys_relm_encode's ids come from mlsys_alloc, as the --tokens copy */
  mlsys_relm_vocab_free(v);
  mlsys_relm_gpt2_free(m);
  return rc;
}

#ifndef GPT2_DUMP_NO_MAIN
int main(int argc, char **argv) { return gpt2_dump_main(argc, argv); }
#endif
