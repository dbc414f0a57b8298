/* mlsys_contracode.h — ContraCode: semantics-preserving JavaScript rewrites, contrastive code encoders, clone
   detection.                                                                                             MIT licence.

   Implements ContraCode (P. Jain, A. Jain, T. Zhang, P. Abbeel, J. E. Gonzalez, I. Stoica, "Contrastive Code
   Representation Learning", EMNLP 2021; thesis chapter "Contrastive Code Representation Learning"); docs/contracode.md
   is the guide. Section numbers (§) in the comments are those of the design specification the header was written from
   (not shipped with it).

   CONTENTS
     1. JavaScript front end: lexer and ES2020 parser (no JSX/TS/Flow) into an arena AST, and a printer (compact and
        beautified). Malformed source is MLSYS_ERR_PARSE with "line:col: what".
     5. Tokenizer: a SentencePiece-compatible unigram model read from a `.model` file or an `spm_export_vocab` list
        (identity or precompiled-charsmap normalization, byte fallback); Viterbi ids equal to `spm_encode`, subword
        sampling (forward filtering, backward sampling); vocabulary training (SentencePiece's EM and pruning); the
        repo's normalize_program.
     7. Evaluation: AUROC (ties ½), average precision (scikit-learn's), Hanley–McNeil standard errors, best-threshold
        accuracy, the adversarial min/max reduce over N variants, edit-distance similarity over token ids.
   (Sections 2–4 and 6 — scope analysis, the transforms of Table 2.1, transform dropout, the encoders and MoCo — are
   not written yet; see docs/contracode.md.)

   USAGE
     #define MLSYS_CONTRACODE_IMPLEMENTATION   (or MLSYS_IMPLEMENTATION) in one C file, then #include "mlsys_contracode.h".
     Public names are mlsys_contracode_*; every call that can fail returns mlsys_status with the detail in
     mlsys_last_error() (mlsys_common.h).
*/
#ifndef MLSYS_CONTRACODE_H
#define MLSYS_CONTRACODE_H
#ifdef MLSYS_IMPLEMENTATION
#ifndef MLSYS_CONTRACODE_IMPLEMENTATION
#define MLSYS_CONTRACODE_IMPLEMENTATION
#endif
#endif
#include "mlsys_common.h"
#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------------------------
   1. JavaScript front end (declarations)
   --------------------------------------------------------------------------------------------------------------- */

/* [end of section 1 declarations] */

/* ---------------------------------------------------------------------------------------------------------------
   5. Tokenizer: SentencePiece unigram (declarations)
   --------------------------------------------------------------------------------------------------------------- */

/* A SentencePiece unigram model, loaded from a `.model` file (the ModelProto protobuf that `spm_train` writes) or
   from the `piece<TAB>score` list of `spm_export_vocab`. Segmentation reproduces SentencePiece 0.1.97 (Debian's
   `spm_encode --output_format=id`): normalization (`identity`, or the precompiled charsmap of `nmt_nfkc` and other
   rules: a darts-clone double array plus replacement strings, read as SentencePiece's normalizer.cc does), heading,
   trailing and repeated spaces removed, spaces escaped to U+2581 "▁", a dummy "▁" prefix (or suffix with
   treat_whitespace_as_suffix), malformed UTF-8 bytes read as U+FFFD one byte at a time, user-defined symbols kept
   unnormalized, the optimized Viterbi of unigram_model.cc (same float arithmetic and tie order), a run of unknown
   characters merged into one unknown id, or decomposed into `<0xXX>` byte pieces when the model has byte_fallback.
   Only unigram models load (BPE/word/char models are MLSYS_ERR_UNSUPPORTED); a damaged file is MLSYS_ERR_PARSE
   naming the field. §2.2, §3.5. */
typedef struct mlsys_contracode_sp mlsys_contracode_sp;
enum { /* piece types, as in sentencepiece_model.proto */
  MLSYS_CONTRACODE_SP_NORMAL = 1, MLSYS_CONTRACODE_SP_UNKNOWN = 2, MLSYS_CONTRACODE_SP_CONTROL = 3,
  MLSYS_CONTRACODE_SP_USER_DEFINED = 4, MLSYS_CONTRACODE_SP_UNUSED = 5, MLSYS_CONTRACODE_SP_BYTE = 6
};
MLSYS_DEF mlsys_status mlsys_contracode_sp_load(const char *path, mlsys_contracode_sp **out);
MLSYS_DEF mlsys_status mlsys_contracode_sp_load_mem(const void *data, size_t n, mlsys_contracode_sp **out);
/* The `spm_export_vocab` list (one `piece<TAB>score` a line, id = line index). The list has no types: the line equal
   to unk_piece (NULL → "<unk>") is the unknown piece; "<s>", "</s>" and the pieces in control[] are control
   symbols; the pieces in user[] are user-defined; `<0x00>`…`<0xFF>` are byte pieces, and all 256 of them turn
   byte fallback on; every other line is a normal piece. Normalization is `identity` with SentencePiece's default
   whitespace rules (the TSV does not carry them; load the .model for anything else). */
MLSYS_DEF mlsys_status mlsys_contracode_sp_load_tsv(const char *path, const char *unk_piece, const char *const *control,
                                                    int ncontrol, const char *const *user, int nuser,
                                                    mlsys_contracode_sp **out);
MLSYS_DEF void mlsys_contracode_sp_free(mlsys_contracode_sp *m);
MLSYS_DEF int mlsys_contracode_sp_size(const mlsys_contracode_sp *m);                 /* number of pieces (ids) */
MLSYS_DEF int mlsys_contracode_sp_id(const mlsys_contracode_sp *m, const char *piece); /* -1 if absent */
MLSYS_DEF const char *mlsys_contracode_sp_piece(const mlsys_contracode_sp *m, int id); /* NULL if out of range */
MLSYS_DEF float mlsys_contracode_sp_score(const mlsys_contracode_sp *m, int id);
MLSYS_DEF int mlsys_contracode_sp_type(const mlsys_contracode_sp *m, int id);         /* MLSYS_CONTRACODE_SP_*, 0 */
MLSYS_DEF int mlsys_contracode_sp_unk_id(const mlsys_contracode_sp *m);
/* The model's normalization of text (what the lattice is built on), e.g. "a  b" → "▁a▁b". *out is malloc'd and
   NUL-terminated; free() it. */
MLSYS_DEF mlsys_status mlsys_contracode_sp_normalize(const mlsys_contracode_sp *m, const char *text, size_t n, char **out,
                                                     size_t *outn);
/* Viterbi segmentation: *ids (malloc'd, free() it) equals `spm_encode --output_format=id` on the line `text`.
   *score (nullable) is the path's sum of piece scores as SentencePiece accumulates it (float; unknowns count
   min_score − 10, user-defined symbols −0.1). Empty or all-space text gives 0 ids. */
MLSYS_DEF mlsys_status mlsys_contracode_sp_encode(const mlsys_contracode_sp *m, const char *text, size_t n, int32_t **ids,
                                                  size_t *nids, double *score);
/* Subword regularization (SentencePiece SampleEncode with nbest = −1): forward filtering over the lattice of all
   vocabulary matches, then backward sampling, so a segmentation s is drawn with probability ∝ exp(alpha·Σ score).
   alpha = 0 is uniform over segmentations. One deliberate difference: user-defined symbols ([EOL] …) are atomic
   (no piece starts inside one, crosses one, or splits it), where SentencePiece 0.1.97 may spell them out in
   characters (§8). Draws come from rng (mlsys_common.h), so a seed reproduces them. */
MLSYS_DEF mlsys_status mlsys_contracode_sp_sample(const mlsys_contracode_sp *m, const char *text, size_t n, double alpha,
                                                  mlsys_rng *rng, int32_t **ids, size_t *nids);
/* Vocabulary training, after SentencePiece's unigram trainer: seed pieces = every substring of ≤ max_piece_chars
   characters inside a word (words start at "▁"; a piece has "▁" only first and does not mix letters, digits, other
   ASCII and non-ASCII characters: an approximation of split_by_unicode_script/split_by_number) seen at least twice,
   ranked by count × length, plus every character; then rounds of EM (forward–backward expected counts, pieces
   expected < 0.5 times dropped, scores digamma(count) − digamma(total)) and pruning (each piece's removal re-segments
   its uses by its second-best split; the least costly go, keeping shrinking_factor of them) until within 10 % of
   the target, and last every character of the text plus the best-scored pieces. text: one sentence a line,
   normalized with `identity` and SentencePiece's whitespace rules. The model has <unk> (or unk_piece), <s>, </s>,
   the user symbols, then the pieces by decreasing score, vocab_size in all (more if the text has more characters
   than fit). */
typedef struct {
  int vocab_size;           /* total, special pieces included (default 8000) */
  int max_piece_chars;      /* 16 */
  int seed_size;            /* most seed pieces besides the characters (1,000,000) */
  double shrinking_factor;  /* 0.75 */
  int num_sub_iterations;   /* EM steps per round (2) */
  const char *unk_piece;    /* NULL → "<unk>" */
  const char *const *user;  /* user-defined symbols ([EOL] …), kept whole and not learned from */
  int nuser;
} mlsys_contracode_sp_train_opts;
MLSYS_DEF void mlsys_contracode_sp_train_defaults(mlsys_contracode_sp_train_opts *o);
MLSYS_DEF mlsys_status mlsys_contracode_sp_train(const char *text, size_t n, const mlsys_contracode_sp_train_opts *o,
                                                 mlsys_contracode_sp **out);
/* Writes m as a SentencePiece .model (pieces, the trainer and normalizer fields segmentation depends on, the
   charsmap if any) that spm_encode and mlsys_contracode_sp_load read back to the same segmentation. */
MLSYS_DEF mlsys_status mlsys_contracode_sp_save(const mlsys_contracode_sp *m, const char *path);
/* The repo's normalize_program (§2.2): each "\n" becomes " [EOL]", then every run of [ \t\n] becomes one space:
   "function f(a) {\n  return a;\n}" → "function f(a) { [EOL] return a; [EOL]}". *out is malloc'd; free() it. */
MLSYS_DEF mlsys_status mlsys_contracode_normalize_program(const char *src, size_t n, char **out, size_t *outn);

/* [end of section 5 declarations] */

/* ---------------------------------------------------------------------------------------------------------------
   7. Evaluation (declarations)
   --------------------------------------------------------------------------------------------------------------- */

/* Clone-detection metrics (§3.9). Labels are 0/1 (any non-zero byte is a positive); scores must not be NaN. Each
   function needs at least one positive and one negative, else MLSYS_ERR_ARG. */
/* Area under the ROC curve = the Mann–Whitney statistic: the fraction of (positive, negative) pairs ordered
   correctly, a tie counting ½. O(n log n). */
MLSYS_DEF mlsys_status mlsys_contracode_auroc(const float *score, const uint8_t *label, size_t n, double *auroc);
/* Average precision as scikit-learn's average_precision_score: Σ_k (R_k − R_{k−1})·P_k over the distinct score
   thresholds in decreasing order (tied scores enter together), no interpolation. */
MLSYS_DEF mlsys_status mlsys_contracode_average_precision(const float *score, const uint8_t *label, size_t n, double *ap);
/* Hanley–McNeil (1982) standard error of an AUROC A from npos positives and nneg negatives (auctestr se_auc):
   D_p = (n_p−1)(A/(2−A) − A²), D_n = (n_n−1)(2A²/(1+A) − A²), SE = √((A(1−A) + D_p + D_n)/(n_p·n_n)).
   Returns NaN for A outside [0, 1] or a count below 1. */
MLSYS_DEF double mlsys_contracode_se_auc(double auc, long npos, long nneg);
/* Best accuracy over nthresh (≥ 2) thresholds evenly spaced from the lowest to the highest score, predicting
   "clone" when score ≥ threshold; *threshold (nullable) receives the first threshold that reaches it. */
MLSYS_DEF mlsys_status mlsys_contracode_best_threshold_accuracy(const float *score, const uint8_t *label, size_t n,
                                                                int nthresh, double *accuracy, double *threshold);
/* Adversarial reduce (§3.9): sims is n×N row-major (pair i, variant j); out[i] = min over j in [start, start+w) for a
   positive pair, max for a negative one. The repo's sliding windows are start = 0..N−w. */
MLSYS_DEF mlsys_status mlsys_contracode_adversarial_reduce(const float *sims, const uint8_t *label, size_t n, int N,
                                                           int start, int w, float *out);
/* Edit-distance baseline: (max(|a|,|b|) − lev(a, b)) / max(|a|,|b|) over token ids (1 when both are empty).
   O(|a|·|b|) time, O(min) memory. Returns NaN on a negative length or a NULL array with a positive length. */
MLSYS_DEF double mlsys_contracode_lev_similarity(const int32_t *a, int na, const int32_t *b, int nb);

/* [end of section 7 declarations] */

#ifdef __cplusplus
}
#endif
#endif /* MLSYS_CONTRACODE_H */

/* ================================================================================================================
   Implementation
   ================================================================================================================ */
#ifdef MLSYS_CONTRACODE_IMPLEMENTATION
#ifndef MLSYS_CONTRACODE_IMPLEMENTATION_DONE
#define MLSYS_CONTRACODE_IMPLEMENTATION_DONE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------------------------
   1. JavaScript front end
   --------------------------------------------------------------------------------------------------------------- */

/* [end of section 1 implementation] */

/* ---------------------------------------------------------------------------------------------------------------
   5. Tokenizer: SentencePiece unigram
   --------------------------------------------------------------------------------------------------------------- */

/* Internal layout. All pieces live in one byte trie whose transitions are a hash of (node, byte) → child, so a
   step is one probe; a node carries the id of the piece that ends there in SentencePiece's "pieces_" map (normal,
   user-defined and unused pieces: the lattice) and in its "reserved" map (control, unknown, byte pieces), the two
   maps SentencePiece keeps apart (the same string may be in both). */
typedef struct {
  uint32_t key_node; /* parent node + 1 (0 = empty slot) */
  uint8_t key_byte;
  int32_t child;
} mlsys__cc_edge;

struct mlsys_contracode_sp {
  int n;
  char **piece;
  size_t *plen;
  float *score;
  uint8_t *type;
  int unk_id, byte_fallback, byte_id[256];
  int add_dummy_prefix, remove_extra_ws, escape_ws, ws_suffix;
  float min_score, max_score;
  int32_t *node_lat, *node_res; /* per trie node: lattice id / reserved id, -1 if none */
  int nnodes, capnodes;
  mlsys__cc_edge *edges;
  size_t nedges, edge_mask;
  int has_user;
  /* precompiled charsmap (empty → identity) */
  uint32_t *units;
  size_t nunits;
  char *normstr; /* NUL-terminated copy */
  size_t nnormstr;
  char name[64];
};

static uint64_t mlsys__cc_hash(uint32_t node, uint8_t b) {
  uint64_t x = ((uint64_t)node << 8 | b) * 0x9E3779B97F4A7C15ull;
  return x ^ (x >> 29);
}

static int32_t mlsys__cc_child(const mlsys_contracode_sp *m, int32_t node, uint8_t b) {
  size_t i = (size_t)mlsys__cc_hash((uint32_t)node, b) & m->edge_mask;
  for (;;) {
    const mlsys__cc_edge *e = &m->edges[i];
    if (e->key_node == 0) return -1;
    if (e->key_node == (uint32_t)node + 1 && e->key_byte == b) return e->child;
    i = (i + 1) & m->edge_mask;
  }
}

static mlsys_status mlsys__cc_trie_build(mlsys_contracode_sp *m) {
  size_t total = 1, cap = 16, i;
  int id;
  for (id = 0; id < m->n; id++) total += m->plen[id];
  while (cap < 2 * total) cap <<= 1;
  m->edges = (mlsys__cc_edge *)mlsys_calloc(cap, sizeof *m->edges);
  m->node_lat = (int32_t *)mlsys_calloc(total, sizeof(int32_t));
  m->node_res = (int32_t *)mlsys_calloc(total, sizeof(int32_t));
  if (!m->edges || !m->node_lat || !m->node_res) return MLSYS_ERR_NOMEM;
  m->edge_mask = cap - 1;
  for (i = 0; i < total; i++) m->node_lat[i] = m->node_res[i] = -1;
  m->nnodes = 1;
  for (id = 0; id < m->n; id++) {
    int32_t node = 0, *slot;
    int t = m->type[id], lat = t == MLSYS_CONTRACODE_SP_NORMAL || t == MLSYS_CONTRACODE_SP_USER_DEFINED ||
                              t == MLSYS_CONTRACODE_SP_UNUSED;
    for (i = 0; i < m->plen[id]; i++) {
      uint8_t b = (uint8_t)m->piece[id][i];
      int32_t c = mlsys__cc_child(m, node, b);
      if (c < 0) {
        size_t h = (size_t)mlsys__cc_hash((uint32_t)node, b) & m->edge_mask;
        while (m->edges[h].key_node) h = (h + 1) & m->edge_mask;
        c = m->nnodes++;
        m->edges[h].key_node = (uint32_t)node + 1;
        m->edges[h].key_byte = b;
        m->edges[h].child = c;
        m->nedges++;
      }
      node = c;
    }
    slot = lat ? &m->node_lat[node] : &m->node_res[node];
    if (*slot >= 0)
      return mlsys_set_error(MLSYS_ERR_PARSE, "contracode: sentencepiece model: piece %d \"%.40s\" is already defined (id %d)",
                             id, m->piece[id], *slot);
    *slot = id;
    if (t == MLSYS_CONTRACODE_SP_USER_DEFINED) m->has_user = 1;
  }
  return MLSYS_OK;
}

MLSYS_DEF void mlsys_contracode_sp_free(mlsys_contracode_sp *m) {
  int i;
  if (!m) return;
  if (m->piece)
    for (i = 0; i < m->n; i++) free(m->piece[i]);
  free(m->piece);
  free(m->plen);
  free(m->score);
  free(m->type);
  free(m->node_lat);
  free(m->node_res);
  free(m->edges);
  free(m->units);
  free(m->normstr);
  free(m);
}

static int mlsys__cc_byte_of_piece(const char *p, size_t n) {
  static const char hx[] = "0123456789ABCDEF";
  const char *a, *b;
  if (n != 6 || memcmp(p, "<0x", 3) != 0 || p[5] != '>') return -1;
  a = strchr(hx, p[3]);
  b = strchr(hx, p[4]);
  if (!p[3] || !p[4] || !a || !b) return -1;
  return (int)((a - hx) * 16 + (b - hx));
}

/* The checks of SentencePiece's ModelInterface::InitializePieces, then the trie and min/max scores. */
static mlsys_status mlsys__cc_finish(mlsys_contracode_sp *m) {
  int i, nbytes = 0;
  mlsys_status st;
  m->unk_id = -1;
  m->min_score = 3.402823466e+38F;
  m->max_score = 1.175494351e-38F; /* FLT_MIN, as unigram_model.cc starts it: so user symbols score ≈ −0.1 */
  for (i = 0; i < 256; i++) m->byte_id[i] = -1;
  if (m->n == 0) return mlsys_set_error(MLSYS_ERR_PARSE, "contracode: sentencepiece model has no pieces");
  for (i = 0; i < m->n; i++) {
    if (m->plen[i] == 0) return mlsys_set_error(MLSYS_ERR_PARSE, "contracode: sentencepiece model: piece %d is empty", i);
    if (m->type[i] == MLSYS_CONTRACODE_SP_UNKNOWN) {
      if (m->unk_id >= 0) return mlsys_set_error(MLSYS_ERR_PARSE, "contracode: sentencepiece model: unknown piece defined twice (ids %d, %d)", m->unk_id, i);
      m->unk_id = i;
    }
    if (m->type[i] == MLSYS_CONTRACODE_SP_BYTE) {
      int b = mlsys__cc_byte_of_piece(m->piece[i], m->plen[i]);
      if (!m->byte_fallback)
        return mlsys_set_error(MLSYS_ERR_PARSE, "contracode: sentencepiece model: byte piece %d found although byte_fallback is off", i);
      if (b < 0) return mlsys_set_error(MLSYS_ERR_PARSE, "contracode: sentencepiece model: byte piece %d \"%.20s\" is not <0xXX>", i, m->piece[i]);
      if (m->byte_id[b] < 0) nbytes++;
      m->byte_id[b] = i;
    }
    if (m->type[i] == MLSYS_CONTRACODE_SP_NORMAL) {
      if (m->score[i] < m->min_score) m->min_score = m->score[i];
      if (m->score[i] > m->max_score) m->max_score = m->score[i];
    }
  }
  if (m->unk_id < 0) return mlsys_set_error(MLSYS_ERR_PARSE, "contracode: sentencepiece model has no unknown piece");
  if (m->byte_fallback && nbytes != 256)
    return mlsys_set_error(MLSYS_ERR_PARSE, "contracode: sentencepiece model has byte_fallback but %d of the 256 byte pieces", nbytes);
  st = mlsys__cc_trie_build(m);
  return st;
}

/* ---- protobuf wire format (only what ModelProto needs) ---- */
typedef struct {
  const uint8_t *p, *end;
} mlsys__cc_pb;

static int mlsys__cc_varint(mlsys__cc_pb *r, uint64_t *v) {
  uint64_t x = 0;
  int s;
  for (s = 0; s < 64 && r->p < r->end; s += 7) {
    uint8_t b = *r->p++;
    x |= (uint64_t)(b & 0x7f) << s;
    if (!(b & 0x80)) {
      *v = x;
      return 1;
    }
  }
  return 0;
}

/* Reads one field header and its payload: wire 0 → *v, 1/5 → *v (raw bits), 2 → [*data, *len). 0 on damage. */
static int mlsys__cc_field(mlsys__cc_pb *r, uint32_t *field, int *wire, uint64_t *v, const uint8_t **data, size_t *len) {
  uint64_t key;
  if (!mlsys__cc_varint(r, &key) || (key >> 3) == 0 || (key >> 3) > 0x1fffffff) return 0;
  *field = (uint32_t)(key >> 3);
  *wire = (int)(key & 7);
  switch (*wire) {
  case 0: return mlsys__cc_varint(r, v);
  case 1:
    if (r->end - r->p < 8) return 0;
    memcpy(v, r->p, 8); /* little-endian hosts only, as the rest of mlsys */
    r->p += 8;
    return 1;
  case 5: {
    uint32_t u;
    if (r->end - r->p < 4) return 0;
    memcpy(&u, r->p, 4);
    *v = u;
    r->p += 4;
    return 1;
  }
  case 2:
    if (!mlsys__cc_varint(r, v) || *v > (uint64_t)(r->end - r->p)) return 0;
    *data = r->p;
    *len = (size_t)*v;
    r->p += *len;
    return 1;
  default: return 0; /* groups (3, 4) are not used by sentencepiece_model.proto */
  }
}

static mlsys_status mlsys__cc_pb_err(const char *msg, const mlsys__cc_pb *r, const uint8_t *base) {
  return mlsys_set_error(MLSYS_ERR_PARSE, "contracode: sentencepiece .model: %s (byte %ld)", msg, (long)(r->p - base));
}

MLSYS_DEF mlsys_status mlsys_contracode_sp_load_mem(const void *data, size_t size, mlsys_contracode_sp **out) {
  const uint8_t *base = (const uint8_t *)data;
  mlsys__cc_pb r;
  mlsys_contracode_sp *m;
  uint32_t f;
  int w, cap = 0, model_type = 1;
  uint64_t v;
  const uint8_t *d;
  size_t len;
  mlsys_status st;
  if (!out || (!data && size)) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: sp_load_mem: NULL argument");
  *out = NULL;
  m = (mlsys_contracode_sp *)mlsys_calloc(1, sizeof *m);
  if (!m) return MLSYS_ERR_NOMEM;
  m->add_dummy_prefix = m->remove_extra_ws = m->escape_ws = 1;
  r.p = base;
  r.end = base + size;
  while (r.p < r.end) {
    if (!mlsys__cc_field(&r, &f, &w, &v, &d, &len)) {
      st = mlsys__cc_pb_err("truncated or malformed field in ModelProto", &r, base);
      goto fail;
    }
    if ((f == 1 || f == 2 || f == 3) && w != 2) {
      st = mlsys__cc_pb_err("ModelProto field 1/2/3 is not length-delimited", &r, base);
      goto fail;
    }
    if (f == 1) { /* SentencePiece {1: piece, 2: score, 3: type} */
      mlsys__cc_pb q;
      const uint8_t *pd = NULL;
      size_t pl = 0;
      float sc = 0;
      int ty = MLSYS_CONTRACODE_SP_NORMAL;
      q.p = d;
      q.end = d + len;
      while (q.p < q.end) {
        uint32_t g;
        int gw;
        uint64_t gv;
        const uint8_t *gd;
        size_t gl;
        if (!mlsys__cc_field(&q, &g, &gw, &gv, &gd, &gl)) {
          st = mlsys__cc_pb_err("malformed field in piece", &q, base);
          goto fail;
        }
        if (g == 1 && gw == 2) pd = gd, pl = gl;
        else if (g == 2 && gw == 5) {
          uint32_t u = (uint32_t)gv;
          memcpy(&sc, &u, 4);
        } else if (g == 3 && gw == 0) {
          if (gv < 1 || gv > 6) {
            st = mlsys_set_error(MLSYS_ERR_PARSE, "contracode: sentencepiece .model: piece %d has unknown type %llu", m->n, (unsigned long long)gv);
            goto fail;
          }
          ty = (int)gv;
        } else if (g <= 3) {
          st = mlsys__cc_pb_err("piece field has the wrong wire type", &q, base);
          goto fail;
        }
      }
      if (sc != sc) {
        st = mlsys_set_error(MLSYS_ERR_PARSE, "contracode: sentencepiece .model: piece %d has a NaN score", m->n);
        goto fail;
      }
      if (m->n == cap) {
        int nc = cap ? 2 * cap : 1024;
        char **np = (char **)mlsys_realloc_array(m->piece, (size_t)nc, sizeof *np);
        if (np) m->piece = np;
        size_t *nl = np ? (size_t *)mlsys_realloc_array(m->plen, (size_t)nc, sizeof *nl) : NULL;
        if (nl) m->plen = nl;
        float *ns = nl ? (float *)mlsys_realloc_array(m->score, (size_t)nc, sizeof *ns) : NULL;
        if (ns) m->score = ns;
        uint8_t *nt = ns ? (uint8_t *)mlsys_realloc_array(m->type, (size_t)nc, 1) : NULL;
        if (!nt) {
          st = MLSYS_ERR_NOMEM;
          goto fail;
        }
        m->type = nt;
        cap = nc;
      }
      m->piece[m->n] = (char *)malloc(pl + 1);
      if (!m->piece[m->n]) {
        st = mlsys_set_error(MLSYS_ERR_NOMEM, "contracode: out of memory reading pieces");
        goto fail;
      }
      if (pl) memcpy(m->piece[m->n], pd, pl);
      m->piece[m->n][pl] = 0;
      m->plen[m->n] = pl;
      m->score[m->n] = sc;
      m->type[m->n] = (uint8_t)ty;
      m->n++;
      if (m->n > 0x3fffffff) {
        st = mlsys_set_error(MLSYS_ERR_TOO_BIG, "contracode: sentencepiece .model has too many pieces");
        goto fail;
      }
    } else if (f == 2 || f == 3) { /* TrainerSpec / NormalizerSpec: scalar fields we need */
      mlsys__cc_pb q;
      q.p = d;
      q.end = d + len;
      while (q.p < q.end) {
        uint32_t g;
        int gw;
        uint64_t gv = 0;
        const uint8_t *gd = NULL;
        size_t gl = 0;
        if (!mlsys__cc_field(&q, &g, &gw, &gv, &gd, &gl)) {
          st = mlsys__cc_pb_err(f == 2 ? "malformed field in trainer_spec" : "malformed field in normalizer_spec", &q, base);
          goto fail;
        }
        if (f == 2 && gw == 0) {
          if (g == 3) model_type = (int)(gv > 100 ? 100 : gv);
          else if (g == 24) m->ws_suffix = gv != 0;
          else if (g == 35) m->byte_fallback = gv != 0;
        } else if (f == 3) {
          if (g == 1 && gw == 2) snprintf(m->name, sizeof m->name, "%.*s", (int)(gl < 63 ? gl : 63), (const char *)gd);
          else if (g == 2 && gw == 2) {
            uint32_t tsz;
            free(m->units);
            free(m->normstr);
            m->units = NULL;
            m->normstr = NULL;
            m->nunits = m->nnormstr = 0;
            if (gl == 0) continue;
            if (gl <= 4) {
              st = mlsys_set_error(MLSYS_ERR_PARSE, "contracode: sentencepiece .model: precompiled_charsmap is broken (%zu bytes)", gl);
              goto fail;
            }
            memcpy(&tsz, gd, 4);
            if ((size_t)tsz >= gl || (size_t)tsz > gl - 4 || tsz % 4 || tsz == 0) {
              st = mlsys_set_error(MLSYS_ERR_PARSE, "contracode: sentencepiece .model: precompiled_charsmap trie size %u does not fit its %zu bytes", tsz, gl);
              goto fail;
            }
            m->nunits = tsz / 4;
            m->units = (uint32_t *)mlsys_calloc(m->nunits, 4);
            m->nnormstr = gl - 4 - tsz;
            m->normstr = (char *)mlsys_calloc(m->nnormstr + 1, 1);
            if (!m->units || !m->normstr) {
              st = MLSYS_ERR_NOMEM;
              goto fail;
            }
            memcpy(m->units, gd + 4, tsz);
            if (m->nnormstr) memcpy(m->normstr, gd + 4 + tsz, m->nnormstr);
          } else if (gw == 0 && g == 3) m->add_dummy_prefix = gv != 0;
          else if (gw == 0 && g == 4) m->remove_extra_ws = gv != 0;
          else if (gw == 0 && g == 5) m->escape_ws = gv != 0;
        }
      }
    }
  }
  if (model_type != 1) {
    static const char *const names[] = {"?", "unigram", "bpe", "word", "char"};
    st = mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "contracode: sentencepiece model type %s is not supported (only unigram)",
                         model_type >= 0 && model_type <= 4 ? names[model_type] : "unknown");
    goto fail;
  }
  st = mlsys__cc_finish(m);
  if (st != MLSYS_OK) goto fail;
  *out = m;
  return MLSYS_OK;
fail:
  mlsys_contracode_sp_free(m);
  return st;
}

MLSYS_DEF mlsys_status mlsys_contracode_sp_load(const char *path, mlsys_contracode_sp **out) {
  char *data = NULL;
  size_t n = 0;
  mlsys_status st;
  if (!path || !out) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: sp_load: NULL argument");
  *out = NULL;
  st = mlsys_read_file(path, &data, &n);
  if (st != MLSYS_OK) return st;
  st = mlsys_contracode_sp_load_mem(data, n, out);
  free(data);
  if (st != MLSYS_OK) mlsys_prefix_error("%s: ", path);
  return st;
}

MLSYS_DEF mlsys_status mlsys_contracode_sp_load_tsv(const char *path, const char *unk_piece, const char *const *control,
                                                    int ncontrol, const char *const *user, int nuser,
                                                    mlsys_contracode_sp **out) {
  char *data = NULL, *p, *end;
  size_t n = 0;
  int cap = 0, line = 0, nbytes = 0, i;
  mlsys_contracode_sp *m;
  mlsys_status st;
  if (!path || !out || (ncontrol > 0 && !control) || (nuser > 0 && !user))
    return mlsys_set_error(MLSYS_ERR_ARG, "contracode: sp_load_tsv: NULL argument");
  *out = NULL;
  if (!unk_piece) unk_piece = "<unk>";
  st = mlsys_read_file(path, &data, &n);
  if (st != MLSYS_OK) return st;
  m = (mlsys_contracode_sp *)mlsys_calloc(1, sizeof *m);
  if (!m) {
    free(data);
    return MLSYS_ERR_NOMEM;
  }
  m->add_dummy_prefix = m->remove_extra_ws = m->escape_ws = 1;
  snprintf(m->name, sizeof m->name, "identity");
  p = data;
  end = data + n;
  while (p < end) {
    char *nl = (char *)memchr(p, '\n', (size_t)(end - p)), *tab, *e;
    size_t ll;
    double sc;
    int ty = MLSYS_CONTRACODE_SP_NORMAL;
    if (!nl) nl = end;
    line++;
    ll = (size_t)(nl - p);
    if (ll && p[ll - 1] == '\r') ll--;
    tab = (char *)memchr(p, '\t', ll);
    if (!tab || tab == p) {
      st = mlsys_set_error(MLSYS_ERR_PARSE, "contracode: %s:%d: expected \"piece<TAB>score\"", path, line);
      goto fail;
    }
    {
      char num[64];
      size_t nn = (size_t)(p + ll - tab - 1);
      if (nn == 0 || nn >= sizeof num) {
        st = mlsys_set_error(MLSYS_ERR_PARSE, "contracode: %s:%d: bad score", path, line);
        goto fail;
      }
      memcpy(num, tab + 1, nn);
      num[nn] = 0;
      sc = strtod(num, &e);
      if (*e || sc != sc) {
        st = mlsys_set_error(MLSYS_ERR_PARSE, "contracode: %s:%d: bad score \"%s\"", path, line, num);
        goto fail;
      }
    }
    if (m->n == cap) {
      int nc = cap ? 2 * cap : 1024;
      char **np = (char **)mlsys_realloc_array(m->piece, (size_t)nc, sizeof *np);
      if (np) m->piece = np;
      size_t *nl2 = np ? (size_t *)mlsys_realloc_array(m->plen, (size_t)nc, sizeof *nl2) : NULL;
      if (nl2) m->plen = nl2;
      float *ns = nl2 ? (float *)mlsys_realloc_array(m->score, (size_t)nc, sizeof *ns) : NULL;
      if (ns) m->score = ns;
      uint8_t *nt = ns ? (uint8_t *)mlsys_realloc_array(m->type, (size_t)nc, 1) : NULL;
      if (!nt) {
        st = MLSYS_ERR_NOMEM;
        goto fail;
      }
      m->type = nt;
      cap = nc;
    }
    ll = (size_t)(tab - p);
    m->piece[m->n] = (char *)malloc(ll + 1);
    if (!m->piece[m->n]) {
      st = mlsys_set_error(MLSYS_ERR_NOMEM, "contracode: out of memory reading %s", path);
      goto fail;
    }
    memcpy(m->piece[m->n], p, ll);
    m->piece[m->n][ll] = 0;
    if (strlen(m->piece[m->n]) == ll) {
      if (!strcmp(m->piece[m->n], unk_piece)) ty = MLSYS_CONTRACODE_SP_UNKNOWN;
      else if (!strcmp(m->piece[m->n], "<s>") || !strcmp(m->piece[m->n], "</s>")) ty = MLSYS_CONTRACODE_SP_CONTROL;
      else if (mlsys__cc_byte_of_piece(m->piece[m->n], ll) >= 0) ty = MLSYS_CONTRACODE_SP_BYTE, nbytes++;
      for (i = 0; i < ncontrol; i++)
        if (control[i] && !strcmp(m->piece[m->n], control[i])) ty = MLSYS_CONTRACODE_SP_CONTROL;
      for (i = 0; i < nuser; i++)
        if (user[i] && !strcmp(m->piece[m->n], user[i])) ty = MLSYS_CONTRACODE_SP_USER_DEFINED;
    }
    m->plen[m->n] = ll;
    m->score[m->n] = (float)sc;
    m->type[m->n] = (uint8_t)ty;
    m->n++;
    p = nl + 1;
  }
  if (nbytes > 0 && nbytes != 256) /* a few "<0x..>"-looking pieces without the full set are ordinary pieces */
    for (i = 0; i < m->n; i++)
      if (m->type[i] == MLSYS_CONTRACODE_SP_BYTE) m->type[i] = MLSYS_CONTRACODE_SP_NORMAL;
  m->byte_fallback = nbytes == 256;
  st = mlsys__cc_finish(m);
  if (st != MLSYS_OK) {
    mlsys_prefix_error("%s: ", path);
    goto fail;
  }
  free(data);
  *out = m;
  return MLSYS_OK;
fail:
  free(data);
  mlsys_contracode_sp_free(m);
  return st;
}

MLSYS_DEF int mlsys_contracode_sp_size(const mlsys_contracode_sp *m) { return m ? m->n : 0; }
MLSYS_DEF const char *mlsys_contracode_sp_piece(const mlsys_contracode_sp *m, int id) {
  return m && id >= 0 && id < m->n ? m->piece[id] : NULL;
}
MLSYS_DEF float mlsys_contracode_sp_score(const mlsys_contracode_sp *m, int id) {
  return m && id >= 0 && id < m->n ? m->score[id] : 0.0f;
}
MLSYS_DEF int mlsys_contracode_sp_type(const mlsys_contracode_sp *m, int id) {
  return m && id >= 0 && id < m->n ? m->type[id] : 0;
}
MLSYS_DEF int mlsys_contracode_sp_unk_id(const mlsys_contracode_sp *m) { return m ? m->unk_id : -1; }
/* SentencePiece's PieceToId: the reserved map (control, unknown, byte) first, then the others. */
MLSYS_DEF int mlsys_contracode_sp_id(const mlsys_contracode_sp *m, const char *piece) {
  int32_t node = 0;
  if (!m || !piece || !*piece) return -1;
  for (; *piece && node >= 0; piece++) node = mlsys__cc_child(m, node, (uint8_t)*piece);
  if (node < 0) return -1;
  return m->node_res[node] >= 0 ? m->node_res[node] : m->node_lat[node];
}

/* ---- normalization (normalizer.cc) ---- */
static size_t mlsys__cc_onecharlen(uint8_t c) { return (size_t)"\1\1\1\1\1\1\1\1\1\1\1\1\2\2\3\4"[c >> 4]; }

/* string_util::DecodeUTF8's validity: returns the length of a valid character at s, or 0 if malformed (a literal
   U+FFFD counts as valid, as IsValidDecodeUTF8 says). */
static size_t mlsys__cc_utf8_valid(const uint8_t *s, size_t n) {
  uint32_t cp;
  if (s[0] < 0x80) return 1;
  if (n >= 2 && (s[0] & 0xE0) == 0xC0) {
    cp = (uint32_t)(s[0] & 0x1F) << 6 | (s[1] & 0x3F);
    if ((s[1] & 0xC0) == 0x80 && cp >= 0x80) return 2;
  } else if (n >= 3 && (s[0] & 0xF0) == 0xE0) {
    cp = (uint32_t)(s[0] & 0x0F) << 12 | (uint32_t)(s[1] & 0x3F) << 6 | (s[2] & 0x3F);
    if ((s[1] & 0xC0) == 0x80 && (s[2] & 0xC0) == 0x80 && cp >= 0x800 && (cp < 0xD800 || cp >= 0xE000)) return 3;
  } else if (n >= 4 && (s[0] & 0xF8) == 0xF0) {
    cp = (uint32_t)(s[0] & 0x07) << 18 | (uint32_t)(s[1] & 0x3F) << 12 | (uint32_t)(s[2] & 0x3F) << 6 | (s[3] & 0x3F);
    if ((s[1] & 0xC0) == 0x80 && (s[2] & 0xC0) == 0x80 && (s[3] & 0xC0) == 0x80 && cp >= 0x10000 && cp <= 0x10FFFF)
      return 4;
  }
  return 0;
}

/* Longest user-defined symbol that prefixes s (0 if none): SentencePiece's PrefixMatcher over those symbols. */
static size_t mlsys__cc_user_match(const mlsys_contracode_sp *m, const char *s, size_t n) {
  int32_t node = 0;
  size_t i, best = 0;
  if (!m->has_user) return 0;
  for (i = 0; i < n; i++) {
    node = mlsys__cc_child(m, node, (uint8_t)s[i]);
    if (node < 0) break;
    if (m->node_lat[node] >= 0 && m->type[m->node_lat[node]] == MLSYS_CONTRACODE_SP_USER_DEFINED) best = i + 1;
  }
  return best;
}

/* NormalizePrefix: (replacement, its length, bytes consumed). */
static void mlsys__cc_norm_prefix(const mlsys_contracode_sp *m, const char *s, size_t n, const char **rep, size_t *replen,
                                  size_t *consumed) {
  size_t um = mlsys__cc_user_match(m, s, n), best_len = 0, k;
  uint32_t best_val = 0;
  if (um) {
    *rep = s, *replen = *consumed = um;
    return;
  }
  if (m->units) { /* darts-clone commonPrefixSearch, with the builder's limit of 32 results honoured */
    size_t pos = 0, nres = 0;
    uint32_t u = m->units[0];
    pos ^= (size_t)((u >> 10) << ((u & (1u << 9)) >> 6));
    for (k = 0; k < n; k++) {
      uint8_t c = (uint8_t)s[k];
      pos ^= c;
      if (pos >= m->nunits) break;
      u = m->units[pos];
      if ((u & ((1u << 31) | 0xFF)) != c) break;
      pos ^= (size_t)((u >> 10) << ((u & (1u << 9)) >> 6));
      if ((u >> 8) & 1) {
        if (pos >= m->nunits) break;
        if (nres < 32 && (best_len == 0 || k + 1 > best_len)) {
          best_len = k + 1;
          best_val = m->units[pos] & ((1u << 31) - 1);
        }
        nres++;
      }
    }
    if (best_len && best_val >= m->nnormstr) best_len = 0; /* a damaged map: fall back to the character itself */
  }
  if (best_len) {
    *rep = m->normstr + best_val;
    *replen = strlen(*rep);
    *consumed = best_len;
    return;
  }
  k = mlsys__cc_utf8_valid((const uint8_t *)s, n);
  if (!k) {
    *rep = "\xEF\xBF\xBD", *replen = 3, *consumed = 1;
  } else {
    *rep = s, *replen = *consumed = k;
  }
}

typedef struct {
  char *p;
  size_t n, cap;
} mlsys__cc_buf;

static int mlsys__cc_put(mlsys__cc_buf *b, const char *s, size_t n) {
  if (b->n + n + 1 > b->cap) {
    size_t nc = b->cap ? b->cap : 64;
    char *np;
    while (nc < b->n + n + 1) nc *= 2;
    np = (char *)realloc(b->p, nc);
    if (!np) return 0;
    b->p = np;
    b->cap = nc;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
  return 1;
}

MLSYS_DEF mlsys_status mlsys_contracode_sp_normalize(const mlsys_contracode_sp *m, const char *text, size_t n, char **out,
                                                     size_t *outn) {
  static const char ws[] = "\xe2\x96\x81";
  mlsys__cc_buf b = {NULL, 0, 0};
  const char *rep, *sp = m && m->escape_ws ? ws : " ";
  size_t replen, used, spn = m && m->escape_ws ? 3 : 1;
  int prev_space, ok = 1;
  if (!m || (!text && n) || !out) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: sp_normalize: NULL argument");
  *out = NULL;
  if (outn) *outn = 0;
  if (!mlsys__cc_put(&b, "", 0)) return mlsys_set_error(MLSYS_ERR_NOMEM, "contracode: out of memory normalizing");
  if (m->remove_extra_ws)
    while (n) {
      mlsys__cc_norm_prefix(m, text, n, &rep, &replen, &used);
      if (!(replen == 1 && rep[0] == ' ')) break;
      text += used, n -= used;
    }
  if (n) {
    if (!m->ws_suffix && m->add_dummy_prefix) ok &= mlsys__cc_put(&b, sp, spn);
    prev_space = m->remove_extra_ws;
    while (n && ok) {
      size_t i;
      mlsys__cc_norm_prefix(m, text, n, &rep, &replen, &used);
      while (prev_space && replen && rep[0] == ' ') rep++, replen--;
      if (replen) {
        for (i = 0; i < replen; i++) ok &= rep[i] == ' ' && m->escape_ws ? mlsys__cc_put(&b, ws, 3) : mlsys__cc_put(&b, rep + i, 1);
        prev_space = rep[replen - 1] == ' ';
      }
      text += used, n -= used;
      if (!m->remove_extra_ws) prev_space = 0;
    }
    if (m->remove_extra_ws)
      while (b.n >= spn && !memcmp(b.p + b.n - spn, sp, spn)) b.p[b.n -= spn] = 0;
    if (m->ws_suffix && m->add_dummy_prefix) ok &= mlsys__cc_put(&b, sp, spn);
  }
  if (!ok) {
    free(b.p);
    return mlsys_set_error(MLSYS_ERR_NOMEM, "contracode: out of memory normalizing");
  }
  *out = b.p;
  if (outn) *outn = b.n;
  return MLSYS_OK;
}

/* Unknown runs merged into one id, or spelled out as byte pieces (PopulateSentencePieceText). */
static mlsys_status mlsys__cc_emit(const mlsys_contracode_sp *m, const char *norm, const int32_t *seg_id,
                                   const size_t *seg_start, size_t nseg, size_t normlen, int32_t **ids, size_t *nids) {
  size_t k, cnt = 0, j;
  int32_t *o;
  for (k = 0; k < nseg; k++) {
    size_t len = (k + 1 < nseg ? seg_start[k + 1] : normlen) - seg_start[k];
    cnt += seg_id[k] == m->unk_id && m->byte_fallback ? len : 1;
  }
  o = (int32_t *)mlsys_calloc(cnt ? cnt : 1, sizeof(int32_t));
  if (!o) return MLSYS_ERR_NOMEM;
  cnt = 0;
  for (k = 0; k < nseg; k++) {
    size_t len = (k + 1 < nseg ? seg_start[k + 1] : normlen) - seg_start[k];
    if (seg_id[k] == m->unk_id && m->byte_fallback) {
      for (j = 0; j < len; j++) o[cnt++] = m->byte_id[(uint8_t)norm[seg_start[k] + j]];
    } else if (seg_id[k] == m->unk_id && k > 0 && seg_id[k - 1] == m->unk_id) {
      continue;
    } else
      o[cnt++] = seg_id[k];
  }
  *ids = o;
  *nids = cnt;
  return MLSYS_OK;
}

typedef struct {
  int id;
  float best;
  long start;
} mlsys__cc_best;

MLSYS_DEF mlsys_status mlsys_contracode_sp_encode(const mlsys_contracode_sp *m, const char *text, size_t n, int32_t **ids,
                                                  size_t *nids, double *score) {
  char *norm = NULL;
  size_t size = 0, s, nseg = 0, k;
  mlsys__cc_best *bp = NULL;
  int32_t *seg_id = NULL;
  size_t *seg_start = NULL;
  mlsys_status st;
  const float unk_score = m ? m->min_score - 10.0f : 0;
  if (!m || (!text && n) || !ids || !nids) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: sp_encode: NULL argument");
  *ids = NULL;
  *nids = 0;
  if (score) *score = 0;
  st = mlsys_contracode_sp_normalize(m, text, n, &norm, &size);
  if (st != MLSYS_OK) return st;
  if (size > (size_t)0x7fffffff) {
    free(norm);
    return mlsys_set_error(MLSYS_ERR_TOO_BIG, "contracode: sp_encode: text of %zu normalized bytes is over 2 GiB", size);
  }
  bp = (mlsys__cc_best *)mlsys_calloc(size + 1, sizeof *bp);
  if (!bp) {
    free(norm);
    return MLSYS_ERR_NOMEM;
  }
  for (k = 0; k <= size; k++) bp[k].id = -1, bp[k].start = -1, bp[k].best = 0;
  /* EncodeOptimized: the best path ending at each byte, relaxed from each character start in order; ties keep the
     first candidate (strict >). User symbols score (float)(len·max_score) − 0.1. */
  for (s = 0; s < size;) {
    const float till = bp[s].best;
    size_t mblen = mlsys__cc_onecharlen((uint8_t)norm[s]), e;
    int32_t node = 0;
    int single = 0;
    if (mblen > size - s) mblen = size - s;
    for (e = s; e < size; e++) {
      int32_t id;
      node = mlsys__cc_child(m, node, (uint8_t)norm[e]);
      if (node < 0) break;
      id = m->node_lat[node];
      if (id < 0 || m->type[id] == MLSYS_CONTRACODE_SP_UNUSED) continue;
      {
        mlsys__cc_best *t = &bp[e + 1];
        size_t length = e + 1 - s;
        /* The C++ `cond ? double : float` makes every score a double, so the candidate is a double sum compared
           with the stored float: float arithmetic here picks different ties on real models. */
        double sc = m->type[id] == MLSYS_CONTRACODE_SP_USER_DEFINED ? (double)((float)length * m->max_score) - 0.1
                                                                     : (double)m->score[id];
        double cand = sc + (double)till;
        if (t->start == -1 || cand > (double)t->best) t->best = (float)cand, t->start = (long)s, t->id = id;
        if (length == mblen) single = 1;
      }
    }
    if (!single) {
      mlsys__cc_best *t = &bp[s + mblen];
      float cand = unk_score + till;
      if (t->start == -1 || cand > t->best) t->best = cand, t->start = (long)s, t->id = m->unk_id;
    }
    s += mblen;
  }
  for (k = size; k > 0; k = (size_t)bp[k].start) nseg++;
  seg_id = (int32_t *)mlsys_calloc(nseg ? nseg : 1, sizeof(int32_t));
  seg_start = (size_t *)mlsys_calloc(nseg ? nseg : 1, sizeof(size_t));
  if (!seg_id || !seg_start) {
    st = MLSYS_ERR_NOMEM;
    goto done;
  }
  s = nseg;
  for (k = size; k > 0; k = (size_t)bp[k].start) {
    s--;
    seg_id[s] = bp[k].id;
    seg_start[s] = (size_t)bp[k].start;
  }
  if (score) *score = size ? (double)bp[size].best : 0.0;
  st = mlsys__cc_emit(m, norm, seg_id, seg_start, nseg, size, ids, nids);
done:
  free(seg_id);
  free(seg_start);
  free(bp);
  free(norm);
  return st;
}

typedef struct {
  size_t start, end;
  int32_t id;
  double score;
} mlsys__cc_edge_l;

/* On failure the old array is freed and NULL returned, so a caller's single free() stays right. */
static mlsys__cc_edge_l *mlsys__cc_grow_edges(mlsys__cc_edge_l *E, size_t *cap) {
  size_t nc = *cap ? 2 * *cap : 256;
  mlsys__cc_edge_l *nE = (mlsys__cc_edge_l *)mlsys_realloc_array(E, nc, sizeof *E);
  if (!nE) {
    free(E);
    return NULL;
  }
  *cap = nc;
  return nE;
}

MLSYS_DEF mlsys_status mlsys_contracode_sp_sample(const mlsys_contracode_sp *m, const char *text, size_t n, double alpha,
                                                  mlsys_rng *rng, int32_t **ids, size_t *nids) {
  char *norm = NULL;
  size_t size = 0, s, ne = 0, cap = 0, k, nseg = 0;
  mlsys__cc_edge_l *E = NULL;
  size_t *span_end = NULL, *next_span = NULL, *eoff = NULL, *eidx = NULL, *seg_start = NULL;
  double *F = NULL, *w = NULL;
  uint8_t *bnd = NULL;
  int32_t *seg_id = NULL;
  mlsys_status st;
  if (!m || (!text && n) || !ids || !nids || !rng)
    return mlsys_set_error(MLSYS_ERR_ARG, "contracode: sp_sample: NULL argument");
  if (!(alpha >= 0) || alpha > 1e6) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: sp_sample: alpha %g must be in [0, 1e6]", alpha);
  *ids = NULL;
  *nids = 0;
  st = mlsys_contracode_sp_normalize(m, text, n, &norm, &size);
  if (st != MLSYS_OK) return st;
  span_end = (size_t *)mlsys_calloc(size + 1, sizeof(size_t));  /* span_end[s] > 0: a user symbol [s, span_end) */
  next_span = (size_t *)mlsys_calloc(size + 1, sizeof(size_t)); /* first span start ≥ s (size if none) */
  F = (double *)mlsys_calloc(size + 1, sizeof(double));
  eoff = (size_t *)mlsys_calloc(size + 2, sizeof(size_t));
  if (!span_end || !next_span || !F || !eoff) {
    st = MLSYS_ERR_NOMEM;
    goto done;
  }
  /* User symbols found left to right, longest first (as the normalizer's matcher finds them); the same walk fixes
     the character starts (bnd). Positions inside a span get span_end = SIZE_MAX so that nothing starts there. */
  bnd = (uint8_t *)mlsys_calloc(size + 1, 1);
  if (!bnd) {
    st = MLSYS_ERR_NOMEM;
    goto done;
  }
  for (s = 0; s < size;) {
    size_t um = mlsys__cc_user_match(m, norm + s, size - s), l;
    bnd[s] = 1;
    if (um) {
      span_end[s] = s + um;
      for (l = s + 1; l < s + um; l++) span_end[l] = (size_t)-1;
      s += um;
    } else {
      l = mlsys__cc_onecharlen((uint8_t)norm[s]);
      s += l < size - s ? l : size - s;
    }
  }
  bnd[size] = 1;
  next_span[size] = size;
  for (k = size; k-- > 0;) next_span[k] = span_end[k] && span_end[k] != (size_t)-1 ? k : next_span[k + 1];
  /* The lattice (PopulateNodes): every vocabulary match from a character start to a character start, plus an
     unknown edge over one character where no single-character piece exists; a user symbol is the only edge over
     its span. */
  for (s = 0; s < size;) {
    size_t mblen = mlsys__cc_onecharlen((uint8_t)norm[s]), e, limit;
    int32_t node = 0, uid = -1;
    int single = 0;
    if (mblen > size - s) mblen = size - s;
    if (span_end[s]) {
      for (e = s; e < span_end[s] && node >= 0; e++) node = mlsys__cc_child(m, node, (uint8_t)norm[e]);
      if (node >= 0) uid = m->node_lat[node];
      if (uid < 0) { /* cannot happen: the span is a user symbol */
        st = mlsys_set_error(MLSYS_ERR_SOLVER, "contracode: sp_sample: lost the user symbol at byte %zu", s);
        goto done;
      }
    }
    limit = span_end[s] ? span_end[s] : next_span[s];
    for (e = s; e < limit && !span_end[s]; e++) {
      int32_t id;
      node = mlsys__cc_child(m, node, (uint8_t)norm[e]);
      if (node < 0) break;
      id = m->node_lat[node];
      if (id < 0 || m->type[id] == MLSYS_CONTRACODE_SP_UNUSED || !bnd[e + 1]) continue;
      if (e + 1 - s == mblen) single = 1;
      if (ne == cap && !(E = mlsys__cc_grow_edges(E, &cap))) {
        st = MLSYS_ERR_NOMEM;
        goto done;
      }
      E[ne].start = s, E[ne].end = e + 1, E[ne].id = id, E[ne].score = (double)m->score[id];
      ne++;
    }
    if (span_end[s] || !single) {
      if (ne == cap && !(E = mlsys__cc_grow_edges(E, &cap))) {
        st = MLSYS_ERR_NOMEM;
        goto done;
      }
      E[ne].start = s;
      E[ne].end = span_end[s] ? span_end[s] : s + mblen;
      E[ne].id = span_end[s] ? uid : m->unk_id;
      E[ne].score = span_end[s] ? 0.0 : (double)(m->min_score - 10.0f);
      ne++;
    }
    s = span_end[s] ? span_end[s] : s + mblen;
  }
  /* edges grouped by end (counting sort), then forward filtering in log space */
  eidx = (size_t *)mlsys_calloc(ne ? ne : 1, sizeof(size_t));
  w = (double *)mlsys_calloc(ne ? ne : 1, sizeof(double));
  if (!eidx || !w) {
    st = MLSYS_ERR_NOMEM;
    goto done;
  }
  for (k = 0; k < ne; k++) eoff[E[k].end + 1]++;
  for (k = 1; k <= size + 1; k++) eoff[k] += eoff[k - 1];
  {
    size_t *fill = (size_t *)mlsys_calloc(size + 1, sizeof(size_t));
    if (!fill) {
      st = MLSYS_ERR_NOMEM;
      goto done;
    }
    for (k = 0; k < ne; k++) eidx[eoff[E[k].end] + fill[E[k].end]++] = k;
    free(fill);
  }
  for (k = 1; k <= size; k++) F[k] = -HUGE_VAL;
  for (k = 1; k <= size; k++) { /* starts precede ends, so F[start] is final when an edge ending at k is read */
    double mx = -HUGE_VAL, acc = 0;
    size_t a;
    for (a = eoff[k]; a < eoff[k + 1]; a++) {
      const mlsys__cc_edge_l *ed = &E[eidx[a]];
      double v = F[ed->start] + alpha * ed->score;
      if (v > mx) mx = v;
    }
    if (mx == -HUGE_VAL) continue;
    for (a = eoff[k]; a < eoff[k + 1]; a++) {
      const mlsys__cc_edge_l *ed = &E[eidx[a]];
      acc += exp(F[ed->start] + alpha * ed->score - mx);
    }
    F[k] = mx + log(acc);
  }
  /* backward sampling: from the end, pick an edge ending here with probability ∝ exp(F[start] + α·score) */
  seg_id = (int32_t *)mlsys_calloc(size ? size : 1, sizeof(int32_t));
  seg_start = (size_t *)mlsys_calloc(size ? size : 1, sizeof(size_t));
  if (!seg_id || !seg_start) {
    st = MLSYS_ERR_NOMEM;
    goto done;
  }
  for (k = size; k > 0;) {
    double tot = 0, u;
    size_t a, pick = (size_t)-1;
    for (a = eoff[k]; a < eoff[k + 1]; a++) {
      const mlsys__cc_edge_l *ed = &E[eidx[a]];
      w[a - eoff[k]] = F[ed->start] == -HUGE_VAL ? 0 : exp(F[ed->start] + alpha * ed->score - F[k]);
      tot += w[a - eoff[k]];
    }
    if (!(tot > 0)) {
      st = mlsys_set_error(MLSYS_ERR_SOLVER, "contracode: sp_sample: no segmentation reaches byte %zu", k);
      goto done;
    }
    u = mlsys_rng_uniform(rng) * tot;
    for (a = eoff[k]; a < eoff[k + 1]; a++) {
      if (w[a - eoff[k]] > 0) pick = a;
      u -= w[a - eoff[k]];
      if (u < 0 && pick != (size_t)-1) break;
    }
    seg_id[nseg] = E[eidx[pick]].id;
    seg_start[nseg] = E[eidx[pick]].start;
    nseg++;
    k = E[eidx[pick]].start;
  }
  for (k = 0; k < nseg / 2; k++) { /* reverse into text order */
    int32_t ti = seg_id[k];
    size_t ts = seg_start[k];
    seg_id[k] = seg_id[nseg - 1 - k], seg_id[nseg - 1 - k] = ti;
    seg_start[k] = seg_start[nseg - 1 - k], seg_start[nseg - 1 - k] = ts;
  }
  st = mlsys__cc_emit(m, norm, seg_id, seg_start, nseg, size, ids, nids);
done:
  free(E);
  free(bnd);
  free(span_end);
  free(next_span);
  free(eoff);
  free(eidx);
  free(F);
  free(w);
  free(seg_id);
  free(seg_start);
  free(norm);
  return st;
}

MLSYS_DEF mlsys_status mlsys_contracode_normalize_program(const char *src, size_t n, char **out, size_t *outn) {
  mlsys__cc_buf b = {NULL, 0, 0};
  size_t i;
  int ok = 1, in_space = 0;
  if ((!src && n) || !out) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: normalize_program: NULL argument");
  *out = NULL;
  ok &= mlsys__cc_put(&b, "", 0);
  /* "\n" → " [EOL]" then [ \t\n]+ → " ", done in one pass: a newline is a space followed by the [EOL] word */
  for (i = 0; i < n && ok; i++) {
    char c = src[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (!in_space) ok &= mlsys__cc_put(&b, " ", 1);
      in_space = 1;
      if (c == '\n') {
        ok &= mlsys__cc_put(&b, "[EOL]", 5);
        in_space = 0;
      }
    } else {
      ok &= mlsys__cc_put(&b, &c, 1);
      in_space = 0;
    }
  }
  if (!ok) {
    free(b.p);
    return mlsys_set_error(MLSYS_ERR_NOMEM, "contracode: out of memory in normalize_program");
  }
  *out = b.p;
  if (outn) *outn = b.n;
  return MLSYS_OK;
}

/* ---- training (SentencePiece's unigram trainer: seed substrings, EM with a Bayesian M-step, loss-based pruning) ---- */
typedef struct {
  char *s;
  size_t len;
  double freq, score; /* seed count; log-probability */
} mlsys__cc_tp;

typedef struct {
  double k;
  size_t i;
} mlsys__cc_sd;
static int mlsys__cc_sd_desc(const void *a, const void *b) {
  const mlsys__cc_sd *x = (const mlsys__cc_sd *)a, *y = (const mlsys__cc_sd *)b;
  if (x->k != y->k) return x->k > y->k ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i;
}
static char *mlsys__cc_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = (char *)malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

typedef struct {
  size_t *slot; /* index + 1 into keys (0 = empty) */
  size_t cap, n;
  char **key;
  size_t *klen;
  double *val;
  size_t kcap;
} mlsys__cc_smap; /* string → count */

static uint64_t mlsys__cc_fnv(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  size_t i;
  for (i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
  return h;
}

static int mlsys__cc_smap_add(mlsys__cc_smap *m, const char *s, size_t n, double v) {
  size_t i, k;
  if (2 * (m->n + 1) > m->cap) {
    size_t nc = m->cap ? 2 * m->cap : 1024, *ns = (size_t *)mlsys_calloc(nc, sizeof(size_t));
    if (!ns) return 0;
    for (k = 0; k < m->n; k++) {
      i = (size_t)mlsys__cc_fnv(m->key[k], m->klen[k]) & (nc - 1);
      while (ns[i]) i = (i + 1) & (nc - 1);
      ns[i] = k + 1;
    }
    free(m->slot);
    m->slot = ns;
    m->cap = nc;
  }
  i = (size_t)mlsys__cc_fnv(s, n) & (m->cap - 1);
  while (m->slot[i]) {
    k = m->slot[i] - 1;
    if (m->klen[k] == n && !memcmp(m->key[k], s, n)) {
      m->val[k] += v;
      return 1;
    }
    i = (i + 1) & (m->cap - 1);
  }
  if (m->n == m->kcap) {
    size_t nc = m->kcap ? 2 * m->kcap : 1024;
    char **nk = (char **)mlsys_realloc_array(m->key, nc, sizeof *nk);
    if (!nk) return 0;
    m->key = nk;
    size_t *nl = (size_t *)mlsys_realloc_array(m->klen, nc, sizeof *nl);
    if (!nl) return 0;
    m->klen = nl;
    double *nv = (double *)mlsys_realloc_array(m->val, nc, sizeof *nv);
    if (!nv) return 0;
    m->val = nv;
    m->kcap = nc;
  }
  if (!(m->key[m->n] = (char *)malloc(n + 1))) return 0;
  memcpy(m->key[m->n], s, n);
  m->key[m->n][n] = 0;
  m->klen[m->n] = n;
  m->val[m->n] = v;
  m->slot[i] = ++m->n;
  return 1;
}

static void mlsys__cc_smap_free(mlsys__cc_smap *m) {
  size_t k;
  for (k = 0; k < m->n; k++) free(m->key[k]);
  free(m->key);
  free(m->klen);
  free(m->val);
  free(m->slot);
  memset(m, 0, sizeof *m);
}

MLSYS_DEF void mlsys_contracode_sp_train_defaults(mlsys_contracode_sp_train_opts *o) {
  memset(o, 0, sizeof *o);
  o->vocab_size = 8000;
  o->max_piece_chars = 16;
  o->seed_size = 1000000;
  o->shrinking_factor = 0.75;
  o->num_sub_iterations = 2;
}

/* Character class for SentencePiece's piece validity (split_by_unicode_script / split_by_number, approximated):
   ASCII letters, digits, other ASCII, and non-ASCII characters are four classes that one piece does not mix. */
static int mlsys__cc_cclass(const char *s) {
  uint8_t c = (uint8_t)s[0];
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return 1;
  if (c >= '0' && c <= '9') return 2;
  return c < 0x80 ? 3 : 4;
}

static double mlsys__cc_digamma(double x) {
  double r = 0, f;
  while (x < 7) r -= 1 / x, x += 1;
  x -= 0.5;
  f = 1 / (x * x);
  return r + log(x) + (1.0 / 24) * f - (7.0 / 960) * f * f + (31.0 / 8064) * f * f * f - (127.0 / 30720) * f * f * f * f;
}

/* A model over the trainer's current pieces: <unk> (id 0), then piece k as id k + 1 with its score, all normal. */
static mlsys_status mlsys__cc_train_model(const mlsys__cc_tp *p, size_t n, mlsys_contracode_sp **out) {
  mlsys_contracode_sp *m = (mlsys_contracode_sp *)mlsys_calloc(1, sizeof *m);
  size_t k;
  mlsys_status st;
  *out = NULL;
  if (!m) return MLSYS_ERR_NOMEM;
  m->add_dummy_prefix = m->remove_extra_ws = m->escape_ws = 1;
  m->n = (int)n + 1;
  m->piece = (char **)mlsys_calloc(n + 1, sizeof(char *));
  m->plen = (size_t *)mlsys_calloc(n + 1, sizeof(size_t));
  m->score = (float *)mlsys_calloc(n + 1, sizeof(float));
  m->type = (uint8_t *)mlsys_calloc(n + 1, 1);
  if (!m->piece || !m->plen || !m->score || !m->type) {
    mlsys_contracode_sp_free(m);
    return MLSYS_ERR_NOMEM;
  }
  m->piece[0] = (char *)malloc(6);
  if (m->piece[0]) memcpy(m->piece[0], "<unk>", 6);
  m->plen[0] = 5;
  m->type[0] = MLSYS_CONTRACODE_SP_UNKNOWN;
  for (k = 0; k < n && m->piece[0]; k++) {
    m->piece[k + 1] = (char *)malloc(p[k].len + 1);
    if (!m->piece[k + 1]) break;
    memcpy(m->piece[k + 1], p[k].s, p[k].len + 1);
    m->plen[k + 1] = p[k].len;
    m->score[k + 1] = (float)p[k].score;
    m->type[k + 1] = MLSYS_CONTRACODE_SP_NORMAL;
  }
  if (!m->piece[0] || k < n) {
    mlsys_contracode_sp_free(m);
    return mlsys_set_error(MLSYS_ERR_NOMEM, "contracode: out of memory training");
  }
  st = mlsys__cc_finish(m);
  if (st != MLSYS_OK) {
    mlsys_contracode_sp_free(m);
    return st;
  }
  *out = m;
  return MLSYS_OK;
}

/* Viterbi over an already-normalized string with one piece disabled (−1: none): the segment ids into seg (cap
   entries); returns the count, or 0 if the path contains an unknown. */
static size_t mlsys__cc_viterbi_norm(const mlsys_contracode_sp *m, const char *s, size_t size, int32_t disabled,
                                     double *best, long *from, int32_t *bid, int32_t *seg, size_t cap, double *score) {
  size_t i, e, n = 0;
  for (i = 0; i <= size; i++) best[i] = -HUGE_VAL, from[i] = -1, bid[i] = -1;
  best[0] = 0;
  for (i = 0; i < size;) {
    size_t mblen = mlsys__cc_onecharlen((uint8_t)s[i]);
    int32_t node = 0;
    int single = 0;
    if (mblen > size - i) mblen = size - i;
    for (e = i; e < size; e++) {
      int32_t id;
      node = mlsys__cc_child(m, node, (uint8_t)s[e]);
      if (node < 0) break;
      id = m->node_lat[node];
      if (id < 0 || id == disabled) continue;
      if (best[i] + m->score[id] > best[e + 1]) best[e + 1] = best[i] + m->score[id], from[e + 1] = (long)i, bid[e + 1] = id;
      if (e + 1 - i == mblen) single = 1;
    }
    if (!single && best[i] + m->min_score - 10 > best[i + mblen])
      best[i + mblen] = best[i] + m->min_score - 10, from[i + mblen] = (long)i, bid[i + mblen] = m->unk_id;
    i += mblen;
  }
  if (score) *score = best[size];
  for (i = size; i > 0; i = (size_t)from[i]) {
    if (bid[i] == m->unk_id || n == cap) return 0;
    seg[n++] = bid[i];
  }
  for (i = 0; i < n / 2; i++) {
    int32_t t = seg[i];
    seg[i] = seg[n - 1 - i], seg[n - 1 - i] = t;
  }
  return n;
}

MLSYS_DEF mlsys_status mlsys_contracode_sp_train(const char *text, size_t n, const mlsys_contracode_sp_train_opts *opt,
                                                 mlsys_contracode_sp **out) {
  mlsys__cc_smap words, subs;
  mlsys__cc_tp *P = NULL;
  size_t np = 0, k, w, nmeta, target, desired, maxw = 0;
  mlsys_contracode_sp *m = NULL, *fin = NULL;
  mlsys_status st = MLSYS_OK;
  double *ex = NULL, *F = NULL, *B = NULL, *best = NULL;
  long *from = NULL;
  int32_t *bid = NULL, *seg = NULL, *ids_alt = NULL;
  const char *unk;
  char *norm = NULL;
  mlsys__cc_edge_l *E = NULL;
  size_t ecap = 0;
  int stuck = 0;
  memset(&words, 0, sizeof words);
  memset(&subs, 0, sizeof subs);
  if ((!text && n) || !opt || !out) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: sp_train: NULL argument");
  *out = NULL;
  unk = opt->unk_piece ? opt->unk_piece : "<unk>";
  nmeta = 3 + (size_t)(opt->nuser > 0 ? opt->nuser : 0);
  if (opt->vocab_size < (int)nmeta + 1 || opt->max_piece_chars < 1 || opt->seed_size < 1 || !(opt->shrinking_factor > 0) ||
      opt->shrinking_factor >= 1 || opt->num_sub_iterations < 1 || (opt->nuser > 0 && !opt->user))
    return mlsys_set_error(MLSYS_ERR_ARG, "contracode: sp_train: bad options (vocab_size %d for %zu special pieces, shrinking_factor %g)",
                           opt->vocab_size, nmeta, opt->shrinking_factor);
  target = (size_t)opt->vocab_size - nmeta;
  desired = (size_t)(target * 1.1);
  /* 1. sentences → identity-normalized words (each starts at ▁), counted; user symbols split out */
  {
    mlsys_contracode_sp *boot = NULL;
    mlsys__cc_tp *up = (mlsys__cc_tp *)mlsys_calloc((size_t)(opt->nuser > 0 ? opt->nuser : 0) + 1, sizeof *up);
    const char *p = text, *end = text + n;
    int i;
    if (!up) return MLSYS_ERR_NOMEM;
    for (i = 0; i < opt->nuser; i++) up[i].s = (char *)opt->user[i], up[i].len = strlen(opt->user[i]), up[i].freq = 1;
    st = mlsys__cc_train_model(up, (size_t)(opt->nuser > 0 ? opt->nuser : 0), &boot);
    free(up);
    if (st != MLSYS_OK) return st;
    for (i = 1; i < boot->n; i++) boot->type[i] = MLSYS_CONTRACODE_SP_USER_DEFINED;
    boot->has_user = opt->nuser > 0;
    while (p < end && st == MLSYS_OK) {
      const char *nl = (const char *)memchr(p, '\n', (size_t)(end - p));
      size_t nn = 0, a = 0, b2;
      if (!nl) nl = end;
      st = mlsys_contracode_sp_normalize(boot, p, (size_t)(nl - p), &norm, &nn);
      for (b2 = 0; st == MLSYS_OK && b2 <= nn;) {
        size_t um = b2 < nn ? mlsys__cc_user_match(boot, norm + b2, nn - b2) : 0;
        int ws = nn - b2 >= 3 && !memcmp(norm + b2, "\xe2\x96\x81", 3);
        if ((b2 == nn || um || ws) && b2 > a) { /* a word ends before a ▁, a user symbol or the end */
          if (!mlsys__cc_smap_add(&words, norm + a, b2 - a, 1)) st = MLSYS_ERR_NOMEM;
          if (b2 - a > maxw) maxw = b2 - a;
          a = b2;
        }
        if (b2 == nn) break;
        if (um) {
          b2 += um;
          a = b2;
        } else {
          size_t cl = mlsys__cc_onecharlen((uint8_t)norm[b2]);
          b2 += cl < nn - b2 ? cl : nn - b2;
        }
      }
      free(norm);
      norm = NULL;
      p = nl + 1;
    }
    mlsys_contracode_sp_free(boot);
    if (st != MLSYS_OK) goto done;
  }
  if (words.n == 0) {
    st = mlsys_set_error(MLSYS_ERR_ARG, "contracode: sp_train: no text to train on");
    goto done;
  }
  /* 2. seed pieces: every valid substring of ≤ max_piece_chars characters (▁ only first, one character class)
     weighted by its words' counts; keep those seen twice, by freq × length, plus every character */
  for (w = 0; w < words.n; w++) {
    const char *s = words.key[w];
    size_t len = words.klen[w], i, e;
    for (i = 0; i < len; i += mlsys__cc_onecharlen((uint8_t)s[i])) {
      int cls = -1, nch = 0;
      for (e = i; e < len && nch < opt->max_piece_chars;) {
        size_t cl = mlsys__cc_onecharlen((uint8_t)s[e]);
        int ws = len - e >= 3 && !memcmp(s + e, "\xe2\x96\x81", 3), c2;
        if (e + cl > len) cl = len - e;
        if (ws && e > i) break;
        if (!ws) {
          c2 = mlsys__cc_cclass(s + e);
          if (cls >= 0 && c2 != cls) break;
          cls = c2;
        }
        e += cl;
        nch++;
        if (!mlsys__cc_smap_add(&subs, s + i, e - i, words.val[w])) {
          st = MLSYS_ERR_NOMEM;
          goto done;
        }
      }
    }
  }
  {
    size_t cnt = 0;
    double total = 0;
    mlsys__cc_sd *v = (mlsys__cc_sd *)mlsys_calloc(subs.n + 1, sizeof *v);
    P = (mlsys__cc_tp *)mlsys_calloc(subs.n + 1, sizeof *P);
    if (!P || !v) {
      free(v);
      st = MLSYS_ERR_NOMEM;
      goto done;
    }
    /* single characters always; longer ones ranked by freq × length among those seen at least twice */
    for (k = 0; k < subs.n; k++) {
      if (mlsys__cc_onecharlen((uint8_t)subs.key[k][0]) >= subs.klen[k])
        P[np].s = subs.key[k], P[np].len = subs.klen[k], P[np].freq = subs.val[k], np++;
      else if (subs.val[k] >= 2)
        v[cnt].k = subs.val[k] * (double)subs.klen[k], v[cnt].i = k, cnt++;
    }
    qsort(v, cnt, sizeof *v, mlsys__cc_sd_desc);
    for (k = 0; k < cnt && np < (size_t)opt->seed_size; k++) {
      size_t j = v[k].i;
      P[np].s = subs.key[j], P[np].len = subs.klen[j], P[np].freq = subs.val[j], np++;
    }
    free(v);
    for (k = 0; k < np; k++) total += P[k].freq;
    for (k = 0; k < np; k++) P[k].score = log(P[k].freq) - log(total);
  }
  ex = (double *)mlsys_calloc(np + 1, sizeof(double));
  F = (double *)mlsys_calloc(maxw + 2, sizeof(double));
  B = (double *)mlsys_calloc(maxw + 2, sizeof(double));
  best = (double *)mlsys_calloc(maxw + 2, sizeof(double));
  from = (long *)mlsys_calloc(maxw + 2, sizeof(long));
  bid = (int32_t *)mlsys_calloc(maxw + 2, sizeof(int32_t));
  seg = (int32_t *)mlsys_calloc(maxw + 2, sizeof(int32_t));
  ids_alt = (int32_t *)mlsys_calloc(maxw + 2, sizeof(int32_t));
  if (!ex || !F || !B || !best || !from || !bid || !seg || !ids_alt) {
    st = MLSYS_ERR_NOMEM;
    goto done;
  }
  /* 3. EM rounds, then pruning, until the vocabulary is within 10 % of the target */
  for (;;) {
    int it;
    for (it = 0; it < opt->num_sub_iterations; it++) {
      double sum = 0, lsum;
      size_t keep = 0;
      st = mlsys__cc_train_model(P, np, &m);
      if (st != MLSYS_OK) goto done;
      memset(ex, 0, (np + 1) * sizeof(double));
      for (w = 0; w < words.n; w++) { /* E-step: forward–backward marginals of each piece in each word */
        const char *s = words.key[w];
        size_t len = words.klen[w], i, e, ne = 0;
        double z;
        for (i = 0; i < len;) {
          size_t mblen = mlsys__cc_onecharlen((uint8_t)s[i]);
          int32_t node = 0;
          int single = 0;
          if (mblen > len - i) mblen = len - i;
          for (e = i; e < len; e++) {
            int32_t id;
            node = mlsys__cc_child(m, node, (uint8_t)s[e]);
            if (node < 0) break;
            id = m->node_lat[node];
            if (id < 0) continue;
            if (ne == ecap && !(E = mlsys__cc_grow_edges(E, &ecap))) {
              st = MLSYS_ERR_NOMEM;
              goto done;
            }
            E[ne].start = i, E[ne].end = e + 1, E[ne].id = id, E[ne].score = m->score[id], ne++;
            if (e + 1 - i == mblen) single = 1;
          }
          if (!single) {
            if (ne == ecap && !(E = mlsys__cc_grow_edges(E, &ecap))) {
              st = MLSYS_ERR_NOMEM;
              goto done;
            }
            E[ne].start = i, E[ne].end = i + mblen, E[ne].id = 0, E[ne].score = m->min_score - 10, ne++;
          }
          i += mblen;
        }
        for (i = 0; i <= len; i++) F[i] = B[i] = -HUGE_VAL;
        F[0] = 0, B[len] = 0;
        for (k = 0; k < ne; k++) {
          double a = F[E[k].start] + E[k].score, b = F[E[k].end];
          F[E[k].end] = a > b ? a + log1p(exp(b - a)) : b + log1p(exp(a - b));
        }
        for (k = ne; k-- > 0;) {
          double a = B[E[k].end] + E[k].score, b = B[E[k].start];
          B[E[k].start] = a > b ? a + log1p(exp(b - a)) : b + log1p(exp(a - b));
        }
        z = F[len];
        for (k = 0; k < ne; k++)
          if (E[k].id > 0) ex[E[k].id - 1] += words.val[w] * exp(F[E[k].start] + E[k].score + B[E[k].end] - z);
      }
      mlsys_contracode_sp_free(m);
      m = NULL;
      /* M-step: drop pieces expected < 0.5 times, score the rest by digamma (a sparse Bayesian prior) */
      for (k = 0; k < np; k++)
        if (ex[k] >= 0.5) sum += ex[k];
      lsum = mlsys__cc_digamma(sum);
      for (k = 0; k < np; k++)
        if (ex[k] >= 0.5) {
          P[keep] = P[k];
          P[keep].score = mlsys__cc_digamma(ex[k]) - lsum;
          keep++;
        }
      np = keep;
    }
    if (np <= desired) break;
    /* 4. pruning: drop the pieces whose removal (their uses re-segmented by their second-best split) loses the
       least likelihood, keeping max(desired, shrinking_factor × size) */
    {
      double vsum = 0, fsum = 0, lfsum;
      size_t nkeep = 0, ncand = 0, *alt_off = NULL, *alt = NULL, nalt = 0, acap = 0;
      double *freq = NULL, *Fw = NULL;
      long *lastw = NULL;
      mlsys__cc_sd *cand = NULL;
      uint8_t *keep_flag = NULL, *removable = NULL;
      size_t pruned = (size_t)(opt->shrinking_factor * (double)np);
      if (pruned < desired) pruned = desired;
      st = mlsys__cc_train_model(P, np, &m);
      if (st != MLSYS_OK) goto done;
      alt_off = (size_t *)mlsys_calloc(np + 1, sizeof(size_t));
      freq = (double *)mlsys_calloc(np + 1, sizeof(double));
      Fw = (double *)mlsys_calloc(np + 1, sizeof(double));
      lastw = (long *)mlsys_calloc(np + 1, sizeof(long));
      cand = (mlsys__cc_sd *)mlsys_calloc(np + 1, sizeof *cand);
      keep_flag = (uint8_t *)mlsys_calloc(np + 1, 1);
      removable = (uint8_t *)mlsys_calloc(np + 1, 1);
      if (!alt_off || !freq || !Fw || !lastw || !cand || !keep_flag || !removable) st = MLSYS_ERR_NOMEM;
      for (k = 0; k < np && st == MLSYS_OK; k++) { /* alternatives */
        size_t ns = mlsys__cc_viterbi_norm(m, P[k].s, P[k].len, -1, best, from, bid, seg, maxw + 1, NULL), a;
        alt_off[k] = nalt;
        if (ns >= 2) {
          removable[k] = 1;
          continue;
        }
        ns = mlsys__cc_viterbi_norm(m, P[k].s, P[k].len, (int32_t)(k + 1), best, from, bid, ids_alt, maxw + 1, NULL);
        if (nalt + ns > acap) {
          size_t nc = acap ? 2 * acap : 1024, *na;
          while (nc < nalt + ns) nc *= 2;
          na = (size_t *)mlsys_realloc_array(alt, nc, sizeof *na);
          if (!na) {
            st = MLSYS_ERR_NOMEM;
            break;
          }
          alt = na, acap = nc;
        }
        for (a = 0; a < ns; a++) alt[nalt++] = (size_t)(ids_alt[a] - 1);
      }
      alt_off[np] = nalt;
      for (k = 0; k < np; k++) lastw[k] = -1;
      for (w = 0; w < words.n && st == MLSYS_OK; w++) { /* Viterbi frequencies and, per piece, its words' weight */
        size_t ns = mlsys__cc_viterbi_norm(m, words.key[w], words.klen[w], -1, best, from, bid, seg, maxw + 1, NULL), a;
        vsum += words.val[w];
        for (a = 0; a < ns; a++) {
          size_t id = (size_t)(seg[a] - 1);
          freq[id] += words.val[w];
          if (lastw[id] != (long)w) lastw[id] = (long)w, Fw[id] += words.val[w];
        }
      }
      for (k = 0; k < np; k++) fsum += freq[k];
      lfsum = log(fsum);
      for (k = 0; k < np && st == MLSYS_OK; k++) {
        size_t na = alt_off[k + 1] - alt_off[k], a;
        if (freq[k] == 0 || removable[k]) continue;
        if (na == 0) {
          keep_flag[k] = 1, nkeep++;
          continue;
        }
        {
          double lp = log(freq[k]) - lfsum, lsa = log(fsum + freq[k] * (double)(na - 1)), lpa = 0;
          for (a = alt_off[k]; a < alt_off[k + 1]; a++) lpa += log(freq[alt[a]] + freq[k]) - lsa;
          cand[ncand].k = Fw[k] / vsum * (lp - lpa);
          cand[ncand].i = k;
          ncand++;
        }
      }
      if (st == MLSYS_OK) {
        qsort(cand, ncand, sizeof *cand, mlsys__cc_sd_desc);
        for (k = 0; k < ncand && nkeep < pruned; k++) keep_flag[cand[k].i] = 1, nkeep++;
        nkeep = 0;
        for (k = 0; k < np; k++)
          if (keep_flag[k]) P[nkeep++] = P[k];
        if (nkeep == np) stuck = 1; /* only unsplittable pieces (characters) are left: finish with them */
        np = nkeep;
      }
      mlsys_contracode_sp_free(m);
      m = NULL;
      free(alt_off), free(alt), free(freq), free(Fw), free(lastw), free(cand), free(keep_flag), free(removable);
      if (st != MLSYS_OK) goto done;
      if (stuck) break;
    }
  }
  /* 5. the final vocabulary: every character of the text, then the best-scored pieces, sorted by score */
  {
    mlsys__cc_tp *Fv = (mlsys__cc_tp *)mlsys_calloc(np + subs.n + 1, sizeof *Fv);
    uint8_t *used = (uint8_t *)mlsys_calloc(np + 1, 1);
    mlsys__cc_sd *v = (mlsys__cc_sd *)mlsys_calloc(np + 1, sizeof *v);
    size_t nf = 0, j;
    double minlp = 0, pen = 0;
    if (!Fv || !used || !v) {
      free(Fv), free(used), free(v);
      st = MLSYS_ERR_NOMEM;
      goto done;
    }
    for (k = 0; k < np; k++)
      if (P[k].score < minlp) minlp = P[k].score;
    for (k = 0; k < subs.n; k++) { /* characters */
      if (mlsys__cc_onecharlen((uint8_t)subs.key[k][0]) < subs.klen[k]) continue;
      for (j = 0; j < np; j++)
        if (P[j].len == subs.klen[k] && !memcmp(P[j].s, subs.key[k], subs.klen[k])) break;
      Fv[nf].s = subs.key[k], Fv[nf].len = subs.klen[k];
      if (j < np) Fv[nf].freq = P[j].score, used[j] = 1;
      else Fv[nf].freq = minlp - (pen += 1e-4);
      nf++;
    }
    for (k = 0; k < np; k++) v[k].k = P[k].score, v[k].i = k;
    qsort(v, np, sizeof *v, mlsys__cc_sd_desc);
    for (k = 0; k < np && nf < target; k++)
      if (!used[v[k].i]) Fv[nf].s = P[v[k].i].s, Fv[nf].len = P[v[k].i].len, Fv[nf].freq = P[v[k].i].score, nf++;
    /* assemble: <unk>, <s>, </s>, user symbols, then pieces by decreasing score */
    fin = (mlsys_contracode_sp *)mlsys_calloc(1, sizeof *fin);
    if (fin) {
      size_t tot = nf + nmeta, q = 0;
      mlsys__cc_sd *o2 = (mlsys__cc_sd *)mlsys_calloc(nf + 1, sizeof *o2);
      fin->add_dummy_prefix = fin->remove_extra_ws = fin->escape_ws = 1;
      snprintf(fin->name, sizeof fin->name, "identity");
      fin->piece = (char **)mlsys_calloc(tot, sizeof(char *));
      fin->plen = (size_t *)mlsys_calloc(tot, sizeof(size_t));
      fin->score = (float *)mlsys_calloc(tot, sizeof(float));
      fin->type = (uint8_t *)mlsys_calloc(tot, 1);
      if (o2 && fin->piece && fin->plen && fin->score && fin->type) {
        const char *meta[3];
        int i;
        meta[0] = unk, meta[1] = "<s>", meta[2] = "</s>";
        for (k = 0; k < nf; k++) o2[k].k = Fv[k].freq, o2[k].i = k;
        qsort(o2, nf, sizeof *o2, mlsys__cc_sd_desc);
        for (i = 0; i < 3; i++) fin->piece[q] = mlsys__cc_strdup(meta[i]), fin->type[q] = (uint8_t)(i ? MLSYS_CONTRACODE_SP_CONTROL : MLSYS_CONTRACODE_SP_UNKNOWN), q++;
        for (i = 0; i < opt->nuser; i++) fin->piece[q] = mlsys__cc_strdup(opt->user[i]), fin->type[q] = MLSYS_CONTRACODE_SP_USER_DEFINED, q++;
        for (k = 0; k < nf; k++) {
          const mlsys__cc_tp *t = &Fv[o2[k].i];
          fin->piece[q] = (char *)malloc(t->len + 1);
          if (fin->piece[q]) memcpy(fin->piece[q], t->s, t->len), fin->piece[q][t->len] = 0;
          fin->plen[q] = t->len; /* not strlen: a NUL byte in the text is a character like any other */
          fin->score[q] = (float)t->freq;
          fin->type[q] = MLSYS_CONTRACODE_SP_NORMAL;
          q++;
        }
        fin->n = (int)q;
        for (k = 0; k < q; k++) {
          if (!fin->piece[k]) break;
          if (k < nmeta) fin->plen[k] = strlen(fin->piece[k]);
        }
        st = k < q ? MLSYS_ERR_NOMEM : mlsys__cc_finish(fin);
      } else
        st = MLSYS_ERR_NOMEM;
      free(o2);
    } else
      st = MLSYS_ERR_NOMEM;
    free(Fv), free(used), free(v);
    if (st != MLSYS_OK) {
      mlsys_contracode_sp_free(fin);
      fin = NULL;
      goto done;
    }
  }
  *out = fin;
done:
  mlsys_contracode_sp_free(m);
  free(P), free(ex), free(F), free(B), free(best), free(from), free(bid), free(seg), free(ids_alt), free(E), free(norm);
  mlsys__cc_smap_free(&words);
  mlsys__cc_smap_free(&subs);
  return st;
}

/* ---- writing a .model ---- */
static int mlsys__cc_wvar(mlsys__cc_buf *b, uint64_t v) {
  char t[10];
  int n = 0;
  do {
    uint8_t c = v & 0x7f;
    v >>= 7;
    t[n++] = (char)(c | (v ? 0x80 : 0));
  } while (v);
  return mlsys__cc_put(b, t, (size_t)n);
}
static int mlsys__cc_wbytes(mlsys__cc_buf *b, uint32_t field, const void *d, size_t n) {
  return mlsys__cc_wvar(b, (uint64_t)field << 3 | 2) && mlsys__cc_wvar(b, n) && (n == 0 || mlsys__cc_put(b, (const char *)d, n));
}
static int mlsys__cc_wint(mlsys__cc_buf *b, uint32_t field, uint64_t v) {
  return mlsys__cc_wvar(b, (uint64_t)field << 3) && mlsys__cc_wvar(b, v);
}

MLSYS_DEF mlsys_status mlsys_contracode_sp_save(const mlsys_contracode_sp *m, const char *path) {
  mlsys__cc_buf out = {NULL, 0, 0}, sub = {NULL, 0, 0};
  int i, ok = 1;
  FILE *f;
  if (!m || !path) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: sp_save: NULL argument");
  for (i = 0; i < m->n && ok; i++) {
    uint32_t u;
    char sc[5];
    sub.n = 0;
    memcpy(&u, &m->score[i], 4);
    sc[0] = (char)(2 << 3 | 5);
    memcpy(sc + 1, &u, 4); /* little-endian hosts, as the reader */
    ok = mlsys__cc_wbytes(&sub, 1, m->piece[i], m->plen[i]) && mlsys__cc_put(&sub, sc, 5) &&
         (m->type[i] == MLSYS_CONTRACODE_SP_NORMAL || mlsys__cc_wint(&sub, 3, m->type[i])) &&
         mlsys__cc_wbytes(&out, 1, sub.p, sub.n);
  }
  sub.n = 0; /* trainer_spec: model_type unigram, and the flags segmentation depends on */
  ok = ok && mlsys__cc_wint(&sub, 3, 1) && mlsys__cc_wint(&sub, 24, (uint64_t)m->ws_suffix) &&
       mlsys__cc_wint(&sub, 35, (uint64_t)m->byte_fallback) && mlsys__cc_wbytes(&out, 2, sub.p, sub.n);
  sub.n = 0;
  ok = ok && mlsys__cc_wbytes(&sub, 1, m->name, strlen(m->name));
  if (ok && m->units) {
    uint32_t tsz = (uint32_t)(m->nunits * 4);
    size_t bl = 4 + (size_t)tsz + m->nnormstr;
    char *blob = (char *)malloc(bl);
    ok = blob != NULL;
    if (blob) {
      memcpy(blob, &tsz, 4);
      memcpy(blob + 4, m->units, tsz);
      if (m->nnormstr) memcpy(blob + 4 + tsz, m->normstr, m->nnormstr);
      ok = mlsys__cc_wbytes(&sub, 2, blob, bl);
      free(blob);
    }
  }
  ok = ok && mlsys__cc_wint(&sub, 3, (uint64_t)m->add_dummy_prefix) && mlsys__cc_wint(&sub, 4, (uint64_t)m->remove_extra_ws) &&
       mlsys__cc_wint(&sub, 5, (uint64_t)m->escape_ws) && mlsys__cc_wbytes(&out, 3, sub.p, sub.n);
  free(sub.p);
  if (!ok) {
    free(out.p);
    return mlsys_set_error(MLSYS_ERR_NOMEM, "contracode: out of memory writing %s", path);
  }
  f = fopen(path, "wb");
  if (!f) {
    free(out.p);
    return mlsys_set_error(MLSYS_ERR_IO, "contracode: %s: cannot open for writing", path);
  }
  ok = fwrite(out.p, 1, out.n, f) == out.n;
  ok &= fclose(f) == 0;
  free(out.p);
  if (!ok) return mlsys_set_error(MLSYS_ERR_IO, "contracode: %s: write failed", path);
  return MLSYS_OK;
}

/* [end of section 5 implementation] */

/* ---------------------------------------------------------------------------------------------------------------
   7. Evaluation
   --------------------------------------------------------------------------------------------------------------- */

static mlsys_status mlsys__cc_check_scores(const char *fn, const float *score, const uint8_t *label, size_t n,
                                           size_t *npos, size_t *nneg) {
  size_t i;
  *npos = *nneg = 0;
  if (!score || !label) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: %s: NULL scores or labels", fn);
  for (i = 0; i < n; i++) {
    if (score[i] != score[i]) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: %s: score %zu is NaN", fn, i);
    if (label[i]) ++*npos;
    else ++*nneg;
  }
  if (!*npos || !*nneg)
    return mlsys_set_error(MLSYS_ERR_ARG, "contracode: %s: needs positives and negatives (got %zu and %zu)", fn, *npos, *nneg);
  return MLSYS_OK;
}

/* (score, index) pairs by decreasing score: a qsort comparator over a file-static key would not be thread-safe. */
typedef struct {
  float s;
  size_t i;
} mlsys__cc_si;
static int mlsys__cc_si_desc(const void *a, const void *b) {
  const mlsys__cc_si *x = (const mlsys__cc_si *)a, *y = (const mlsys__cc_si *)b;
  if (x->s != y->s) return x->s > y->s ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i;
}
static mlsys__cc_si *mlsys__cc_sorted(const float *score, size_t n) {
  mlsys__cc_si *v = (mlsys__cc_si *)mlsys_calloc(n, sizeof *v);
  size_t i;
  if (!v) return NULL;
  for (i = 0; i < n; i++) v[i].s = score[i], v[i].i = i;
  qsort(v, n, sizeof *v, mlsys__cc_si_desc);
  return v;
}

MLSYS_DEF mlsys_status mlsys_contracode_auroc(const float *score, const uint8_t *label, size_t n, double *auroc) {
  size_t np, nn, i, j;
  double below = 0, wins = 0; /* below: negatives with a lower score than the current group */
  mlsys__cc_si *v;
  mlsys_status st;
  if (!auroc) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: auroc: NULL output");
  st = mlsys__cc_check_scores("auroc", score, label, n, &np, &nn);
  if (st != MLSYS_OK) return st;
  if (!(v = mlsys__cc_sorted(score, n))) return MLSYS_ERR_NOMEM;
  /* walk tie groups from the lowest score up: each positive beats every lower negative and ties half of its group */
  below = 0;
  for (i = n; i > 0;) {
    size_t gp = 0, gn = 0;
    j = i;
    while (j > 0 && v[j - 1].s == v[i - 1].s) {
      if (label[v[j - 1].i]) gp++;
      else gn++;
      j--;
    }
    wins += (double)gp * (below + 0.5 * (double)gn);
    below += (double)gn;
    i = j;
  }
  free(v);
  *auroc = wins / ((double)np * (double)nn);
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_contracode_average_precision(const float *score, const uint8_t *label, size_t n, double *ap) {
  size_t np, nn, i, j, tp = 0, fp = 0;
  double sum = 0, prev_recall = 0;
  mlsys__cc_si *v;
  mlsys_status st;
  if (!ap) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: average_precision: NULL output");
  st = mlsys__cc_check_scores("average_precision", score, label, n, &np, &nn);
  if (st != MLSYS_OK) return st;
  if (!(v = mlsys__cc_sorted(score, n))) return MLSYS_ERR_NOMEM;
  for (i = 0; i < n; i = j) {
    double recall;
    for (j = i; j < n && v[j].s == v[i].s; j++) {
      if (label[v[j].i]) tp++;
      else fp++;
    }
    recall = (double)tp / (double)np;
    sum += (recall - prev_recall) * ((double)tp / (double)(tp + fp));
    prev_recall = recall;
  }
  free(v);
  *ap = sum;
  return MLSYS_OK;
}

MLSYS_DEF double mlsys_contracode_se_auc(double a, long np, long nn) {
  double dp, dn;
  if (!(a >= 0 && a <= 1) || np < 1 || nn < 1) return NAN;
  dp = (double)(np - 1) * (a / (2 - a) - a * a);
  dn = (double)(nn - 1) * (2 * a * a / (1 + a) - a * a);
  return sqrt((a * (1 - a) + dp + dn) / ((double)np * (double)nn));
}

MLSYS_DEF mlsys_status mlsys_contracode_best_threshold_accuracy(const float *score, const uint8_t *label, size_t n,
                                                                int nthresh, double *accuracy, double *threshold) {
  size_t np, nn, j = 0, tp_above, fp_above;
  double lo, hi, best = -1, best_t = 0;
  mlsys__cc_si *v;
  mlsys_status st;
  int k;
  if (!accuracy || nthresh < 2)
    return mlsys_set_error(MLSYS_ERR_ARG, "contracode: best_threshold_accuracy: NULL output or nthresh %d < 2", nthresh);
  st = mlsys__cc_check_scores("best_threshold_accuracy", score, label, n, &np, &nn);
  if (st != MLSYS_OK) return st;
  if (!(v = mlsys__cc_sorted(score, n))) return MLSYS_ERR_NOMEM;
  lo = v[n - 1].s;
  hi = v[0].s;
  /* thresholds ascending ⇒ walk the sorted scores from the low end: j counts scores below the threshold */
  tp_above = np;
  fp_above = nn;
  for (k = 0; k < nthresh; k++) {
    double t = k == nthresh - 1 ? hi : lo + (hi - lo) * k / (nthresh - 1), acc;
    while (j < n && (double)v[n - 1 - j].s < t) {
      if (label[v[n - 1 - j].i]) tp_above--;
      else fp_above--;
      j++;
    }
    acc = (double)(tp_above + (nn - fp_above)) / (double)n;
    if (acc > best) best = acc, best_t = t;
  }
  free(v);
  *accuracy = best;
  if (threshold) *threshold = best_t;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_contracode_adversarial_reduce(const float *sims, const uint8_t *label, size_t n, int N,
                                                           int start, int w, float *out) {
  size_t i;
  int j;
  if ((!sims || !label || !out) && n) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: adversarial_reduce: NULL argument");
  if (N < 1 || w < 1 || start < 0 || start > N - w)
    return mlsys_set_error(MLSYS_ERR_ARG, "contracode: adversarial_reduce: window [%d, %d+%d) is not inside N = %d variants",
                           start, start, w, N);
  for (i = 0; i < n; i++) {
    const float *r = sims + i * (size_t)N + start;
    float x = r[0];
    for (j = 1; j < w; j++) x = label[i] ? (r[j] < x ? r[j] : x) : (r[j] > x ? r[j] : x);
    out[i] = x;
  }
  return MLSYS_OK;
}

MLSYS_DEF double mlsys_contracode_lev_similarity(const int32_t *a, int na, const int32_t *b, int nb) {
  int *row, i, j, mx;
  double d;
  if (na < 0 || nb < 0 || (!a && na) || (!b && nb)) return NAN;
  if (na < nb) { /* keep the row over the shorter sequence */
    const int32_t *t = a;
    int tn = na;
    a = b, na = nb, b = t, nb = tn;
  }
  mx = na;
  if (mx == 0) return 1.0;
  row = (int *)malloc(((size_t)nb + 1) * sizeof(int));
  if (!row) return NAN;
  for (j = 0; j <= nb; j++) row[j] = j;
  for (i = 1; i <= na; i++) {
    int diag = row[0];
    row[0] = i;
    for (j = 1; j <= nb; j++) {
      int up = row[j], best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  d = row[nb];
  free(row);
  return ((double)mx - d) / (double)mx;
}

/* [end of section 7 implementation] */

#endif /* MLSYS_CONTRACODE_IMPLEMENTATION_DONE */
#endif /* MLSYS_CONTRACODE_IMPLEMENTATION */
