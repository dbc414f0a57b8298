/* mlsys_contracode.h — ContraCode: semantics-preserving JavaScript rewrites, contrastive code encoders, clone
   detection.                                                                                             MIT licence.

   Implements ContraCode (P. Jain, A. Jain, T. Zhang, P. Abbeel, J. E. Gonzalez, I. Stoica, "Contrastive Code
   Representation Learning", EMNLP 2021; thesis chapter "Contrastive Code Representation Learning"); docs/contracode.md
   is the guide. Section numbers (§) in the comments are those of the design specification the header was written from
   (not shipped with it).

   CONTENTS
     1. JavaScript front end: lexer and ES2020 parser (no JSX/TS/Flow) into an ESTree-like arena AST, a printer
        (compact and beautified; parse(print(x)) is the same tree), function spans and per-kind node counts.
        Malformed source is MLSYS_ERR_PARSE with "line:col: what".
     2. Scope analysis: scopes, bindings (var hoisting, params, let/const/class, catch, imports), references resolved
        or free, `arguments` use, eval/with unsafe marking.
     3. Transforms: T1 rename a parameter to a fresh name, T2 insert an unused `var` after the directive prologue,
        T3 scope-aware mangling of local names, and terser's compress passes T4-T10 (constant folding, dead code,
        unused variables, booleans, sequences/conditionals, property access, hoist_vars, arguments) plus the unsafe
        booleans_as_integers and drop_console and a safe template-to-concatenation.
     4. Augmentation (Alg. 1, transform dropout): the passes in a fixed order each with its probability, printing
        styles, line subsampling (lossy, by design); presets REPO_EFFECTIVE and SAFE; N deduplicated variants with
        per-variant seeds (reproducible, parallelizable); a function as a program unit.
     5. Tokenizer: a SentencePiece-compatible unigram model read from a `.model` file or an `spm_export_vocab` list
        (identity or precompiled-charsmap normalization, byte fallback); Viterbi ids equal to `spm_encode`, subword
        sampling (forward filtering, backward sampling); vocabulary training (SentencePiece's EM and pruning); the
        repo's normalize_program.
     6. Encoders and MoCo: the encoder API over one flat parameter array (presets, closed-form parameter counts,
        PyTorch's default init), the projection head, the bodies — a post-LN Transformer (PyTorch 2020's
        nn.TransformerEncoder), a packed 2-layer BiLSTM (DeepTyper-like) and a bag of words — InfoNCE with its gradient, and MoCo (momentum key encoder, FIFO queue,
        Adam with HF's linear warm-up/decay) with CRC-checked checkpoints that resume bit for bit.
     7. Evaluation: AUROC (ties ½), average precision (scikit-learn's), Hanley–McNeil standard errors, best-threshold
        accuracy, the adversarial min/max reduce over N variants, edit-distance similarity over token ids; the
        offline clone set (lodash-es, underscore, ramda modules sharing API names), its pairs (corrected and
        repo-faithful), the variant set (held-out functions vs their variants vs other functions), the
        hard-negative view, and the natural/adversarial evaluation driver with edit, bag-of-tokens or embedding
        scorers.
   The printer also has terser's output options braces, quote_style and quote_keys (and the props pass its
   keep_quoted_props), which Alg. 1 draws with the spec's probabilities; see docs/contracode.md.

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

/* The front end parses one ECMAScript 2020 script or module (plus ES2021-22 logical assignment, class fields,
   private names and static blocks) into a flat arena AST whose node kinds and child order follow ESTree, so node
   counts compare with acorn's. Nodes refer to each other by index (0 = none); lists are chained through `next`. The
   AST keeps its own copy of the source: identifiers and literals are slices of it (`str`, `slen`), and the printer
   re-emits literals from that raw text, so printing never changes a number's or a string's spelling. Comments are
   dropped. Not parsed: JSX, Flow, TypeScript, decorators, top-level await, import attributes, HTML-like comments
   (`<!--`). Early errors that are checked: assignment targets, break/continue targets and labels, `?.` misuse, `??`
   mixed with `||`/`&&`, unary before `**`, `new.target` outside functions, private names outside classes, rest
   position, invalid escapes in names and strings, regex flags; not checked: strict-mode-only rules, duplicate
   declarations, regex pattern syntax. Non-ASCII identifier characters are approximated (every code point but
   spaces, line terminators and the symbol/punctuation blocks; docs/contracode.md). */
#define MLSYS_CONTRACODE_JS_MAX_DEPTH 1000   /* deeper nesting (including long a.b.c… and a+b+c… chains) is an error */

typedef enum {
  MLSYS_CONTRACODE_JS_NONE = 0,
  /* statements and declarations */
  MLSYS_CONTRACODE_JS_PROGRAM, MLSYS_CONTRACODE_JS_EMPTY_STATEMENT, MLSYS_CONTRACODE_JS_BLOCK_STATEMENT,
  MLSYS_CONTRACODE_JS_EXPRESSION_STATEMENT, MLSYS_CONTRACODE_JS_IF_STATEMENT, MLSYS_CONTRACODE_JS_LABELED_STATEMENT,
  MLSYS_CONTRACODE_JS_BREAK_STATEMENT, MLSYS_CONTRACODE_JS_CONTINUE_STATEMENT, MLSYS_CONTRACODE_JS_WITH_STATEMENT,
  MLSYS_CONTRACODE_JS_SWITCH_STATEMENT, MLSYS_CONTRACODE_JS_SWITCH_CASE, MLSYS_CONTRACODE_JS_RETURN_STATEMENT,
  MLSYS_CONTRACODE_JS_THROW_STATEMENT, MLSYS_CONTRACODE_JS_TRY_STATEMENT, MLSYS_CONTRACODE_JS_CATCH_CLAUSE,
  MLSYS_CONTRACODE_JS_WHILE_STATEMENT, MLSYS_CONTRACODE_JS_DO_WHILE_STATEMENT, MLSYS_CONTRACODE_JS_FOR_STATEMENT,
  MLSYS_CONTRACODE_JS_FOR_IN_STATEMENT, MLSYS_CONTRACODE_JS_FOR_OF_STATEMENT, MLSYS_CONTRACODE_JS_DEBUGGER_STATEMENT,
  MLSYS_CONTRACODE_JS_FUNCTION_DECLARATION, MLSYS_CONTRACODE_JS_VARIABLE_DECLARATION,
  MLSYS_CONTRACODE_JS_VARIABLE_DECLARATOR, MLSYS_CONTRACODE_JS_CLASS_DECLARATION, MLSYS_CONTRACODE_JS_CLASS_BODY,
  MLSYS_CONTRACODE_JS_METHOD_DEFINITION, MLSYS_CONTRACODE_JS_PROPERTY_DEFINITION,
  /* expressions */
  MLSYS_CONTRACODE_JS_IDENTIFIER, MLSYS_CONTRACODE_JS_LITERAL, MLSYS_CONTRACODE_JS_THIS_EXPRESSION,
  MLSYS_CONTRACODE_JS_SUPER, MLSYS_CONTRACODE_JS_ARRAY_EXPRESSION, MLSYS_CONTRACODE_JS_OBJECT_EXPRESSION,
  MLSYS_CONTRACODE_JS_PROPERTY, MLSYS_CONTRACODE_JS_FUNCTION_EXPRESSION, MLSYS_CONTRACODE_JS_ARROW_FUNCTION_EXPRESSION,
  MLSYS_CONTRACODE_JS_CLASS_EXPRESSION, MLSYS_CONTRACODE_JS_UNARY_EXPRESSION, MLSYS_CONTRACODE_JS_UPDATE_EXPRESSION,
  MLSYS_CONTRACODE_JS_BINARY_EXPRESSION, MLSYS_CONTRACODE_JS_LOGICAL_EXPRESSION,
  MLSYS_CONTRACODE_JS_ASSIGNMENT_EXPRESSION, MLSYS_CONTRACODE_JS_CONDITIONAL_EXPRESSION,
  MLSYS_CONTRACODE_JS_CALL_EXPRESSION, MLSYS_CONTRACODE_JS_NEW_EXPRESSION, MLSYS_CONTRACODE_JS_MEMBER_EXPRESSION,
  MLSYS_CONTRACODE_JS_CHAIN_EXPRESSION, MLSYS_CONTRACODE_JS_SEQUENCE_EXPRESSION, MLSYS_CONTRACODE_JS_YIELD_EXPRESSION,
  MLSYS_CONTRACODE_JS_AWAIT_EXPRESSION, MLSYS_CONTRACODE_JS_TEMPLATE_LITERAL, MLSYS_CONTRACODE_JS_TEMPLATE_ELEMENT,
  MLSYS_CONTRACODE_JS_TAGGED_TEMPLATE_EXPRESSION, MLSYS_CONTRACODE_JS_SPREAD_ELEMENT,
  MLSYS_CONTRACODE_JS_META_PROPERTY, MLSYS_CONTRACODE_JS_IMPORT_EXPRESSION,
  /* patterns */
  MLSYS_CONTRACODE_JS_OBJECT_PATTERN, MLSYS_CONTRACODE_JS_ARRAY_PATTERN, MLSYS_CONTRACODE_JS_REST_ELEMENT,
  MLSYS_CONTRACODE_JS_ASSIGNMENT_PATTERN,
  /* modules */
  MLSYS_CONTRACODE_JS_IMPORT_DECLARATION, MLSYS_CONTRACODE_JS_IMPORT_SPECIFIER,
  MLSYS_CONTRACODE_JS_IMPORT_DEFAULT_SPECIFIER, MLSYS_CONTRACODE_JS_IMPORT_NAMESPACE_SPECIFIER,
  MLSYS_CONTRACODE_JS_EXPORT_NAMED_DECLARATION, MLSYS_CONTRACODE_JS_EXPORT_SPECIFIER,
  MLSYS_CONTRACODE_JS_EXPORT_DEFAULT_DECLARATION, MLSYS_CONTRACODE_JS_EXPORT_ALL_DECLARATION,
  /* ES2022 classes */
  MLSYS_CONTRACODE_JS_PRIVATE_IDENTIFIER, MLSYS_CONTRACODE_JS_STATIC_BLOCK,
  MLSYS_CONTRACODE_JS_HOLE,   /* an elision in [a,,b] (ESTree: null) */
  MLSYS_CONTRACODE_JS_KIND_COUNT
} mlsys_contracode_js_kind;

/* Children by kind (a, b, c, d; "list" = first of a `next` chain):
   Program a=body list | ExpressionStatement a=expr | Block a=list | If a=test b=then c=else | Labeled a=label b=body
   | Break/Continue a=label | With a=object b=body | Switch a=discriminant b=cases | SwitchCase a=test(0: default)
   b=consequent list | Return/Throw a=argument | Try a=block b=handler c=finalizer | CatchClause a=param b=body
   | While a=test b=body | DoWhile a=body b=test | For a=init b=test c=update d=body | ForIn/ForOf a=left b=right
   c=body | Function/Arrow a=id b=params list c=body | VariableDeclaration op=var/let/const a=declarators
   | VariableDeclarator a=id b=init | Class a=id b=superclass c=ClassBody | ClassBody a=list | MethodDefinition
   a=key b=FunctionExpression op=kind | PropertyDefinition a=key b=value | Array/Object/Sequence a=list | Property
   a=key b=value op=kind | Unary/Update/Spread/Rest/Await/Yield/Chain/ImportExpression a=argument | Binary/Logical/
   Assignment/AssignmentPattern a=left b=right op | Conditional a=test b=then c=else | Call/New a=callee b=arguments
   | Member a=object b=property | TemplateLiteral a=quasis b=expressions | TaggedTemplate a=tag b=quasi
   | MetaProperty a=meta b=property | ImportDeclaration a=specifiers b=source | ImportXSpecifier a=imported/local
   b=local | ExportNamed a=declaration b=specifiers c=source | ExportSpecifier a=local b=exported
   | ExportDefault a=declaration | ExportAll a=source b=exported | StaticBlock a=body list.
   Identifier/PrivateIdentifier/Literal/TemplateElement: text in str (a PrivateIdentifier's includes the #). */
enum {   /* flags */
  MLSYS_CONTRACODE_JS_F_COMPUTED = 1, MLSYS_CONTRACODE_JS_F_OPTIONAL = 2, MLSYS_CONTRACODE_JS_F_ASYNC = 4,
  MLSYS_CONTRACODE_JS_F_GENERATOR = 8, MLSYS_CONTRACODE_JS_F_STATIC = 16, MLSYS_CONTRACODE_JS_F_SHORTHAND = 32,
  MLSYS_CONTRACODE_JS_F_METHOD = 64, MLSYS_CONTRACODE_JS_F_PREFIX = 128, MLSYS_CONTRACODE_JS_F_DELEGATE = 256,
  MLSYS_CONTRACODE_JS_F_AWAIT = 512 /* for await */, MLSYS_CONTRACODE_JS_F_DIRECTIVE = 1024,
  MLSYS_CONTRACODE_JS_F_TAIL = 2048 /* last template element (internal elsewhere) */, MLSYS_CONTRACODE_JS_F_EXPRESSION = 4096 /* arrow
  with an expression body */, MLSYS_CONTRACODE_JS_F_PAREN = 8192 /* was parenthesized (not part of the tree) */,
  MLSYS_CONTRACODE_JS_F_ESCAPED = 16384 /* identifier spelled with \u escapes */,
  MLSYS_CONTRACODE_JS_F_COVER = 32768 /* internal: {a = 1} not yet turned into a pattern */
};
enum {   /* op of a Literal */
  MLSYS_CONTRACODE_JS_LIT_STRING = 1, MLSYS_CONTRACODE_JS_LIT_NUMBER, MLSYS_CONTRACODE_JS_LIT_BIGINT,
  MLSYS_CONTRACODE_JS_LIT_REGEX, MLSYS_CONTRACODE_JS_LIT_BOOLEAN, MLSYS_CONTRACODE_JS_LIT_NULL
};
enum {   /* op of Property / MethodDefinition (kind) and of VariableDeclaration */
  MLSYS_CONTRACODE_JS_PROP_INIT = 1, MLSYS_CONTRACODE_JS_PROP_GET, MLSYS_CONTRACODE_JS_PROP_SET,
  MLSYS_CONTRACODE_JS_PROP_METHOD, MLSYS_CONTRACODE_JS_PROP_CONSTRUCTOR,
  MLSYS_CONTRACODE_JS_VAR = 1, MLSYS_CONTRACODE_JS_LET, MLSYS_CONTRACODE_JS_CONST
};

typedef struct {
  uint16_t kind, flags;
  uint8_t op;               /* operator (mlsys_contracode_js_op_str), literal kind, property/declaration kind */
  uint8_t pad_[3];
  uint32_t start, end;      /* byte offsets in the source */
  uint32_t str, slen;       /* Identifier name / Literal raw text / TemplateElement raw text, in ast->text */
  int32_t a, b, c, d;       /* children (0 = none) */
  int32_t next;             /* next sibling in a list (0 = end) */
} mlsys_contracode_js_node;

enum {   /* token kinds (mlsys_contracode_js_tokens) */
  MLSYS_CONTRACODE_TOK_NAME = 1, MLSYS_CONTRACODE_TOK_KEYWORD, MLSYS_CONTRACODE_TOK_PUNCT,
  MLSYS_CONTRACODE_TOK_NUMBER, MLSYS_CONTRACODE_TOK_BIGINT, MLSYS_CONTRACODE_TOK_STRING,
  MLSYS_CONTRACODE_TOK_TEMPLATE /* one piece: `…${, }…${ or }…` */, MLSYS_CONTRACODE_TOK_REGEX,
  MLSYS_CONTRACODE_TOK_PRIVATE /* #name */
};
#define MLSYS_CONTRACODE_TOK_NEWLINE_BEFORE 1u   /* a line terminator precedes the token (ASI) */
typedef struct { uint16_t kind, flags; uint32_t start, end; } mlsys_contracode_js_token;

enum { MLSYS_CONTRACODE_JS_SCRIPT = 0, MLSYS_CONTRACODE_JS_MODULE = 1, MLSYS_CONTRACODE_JS_KEEP_TOKENS = 2 };

typedef struct {
  char *text;                        /* the source (NUL-terminated copy), then any text added later */
  size_t src_len, text_len, text_cap;
  mlsys_contracode_js_node *nodes;   /* nodes[0] is unused (index 0 = none) */
  int nnodes, cap;
  int root;                          /* the Program */
  int module;
  mlsys_contracode_js_token *tokens; /* with MLSYS_CONTRACODE_JS_KEEP_TOKENS: every token the parser consumed */
  int ntokens;
} mlsys_contracode_js_ast;

/* Parse src[0..n) (UTF-8; a leading BOM and `#!` line are skipped). flags: SCRIPT or MODULE, | KEEP_TOKENS. On
   error: MLSYS_ERR_PARSE with "line:col: what" (1-based; columns count code points), *ast zeroed. */
MLSYS_DEF mlsys_status mlsys_contracode_js_parse(const char *src, size_t n, int flags, mlsys_contracode_js_ast *ast);
MLSYS_DEF void mlsys_contracode_js_free(mlsys_contracode_js_ast *ast);
/* The tokens of src as the parser reads them (so `/` is division or a regex by syntactic context); malloc'd. */
MLSYS_DEF mlsys_status mlsys_contracode_js_tokens(const char *src, size_t n, int flags,
                                                  mlsys_contracode_js_token **toks, int *ntok);

typedef struct {
  int beautify;   /* 0: compact (minimal whitespace); 1: one statement per line, indented; MLSYS_CONTRACODE_JS_TERSE:
                     compact without the `;` that ends the last statement of a block or function body, as terser and
                     the expected outputs of spec §7.4 print (`function f(a){return a}`; ASI puts it back; an empty
                     statement's `;` stays, and so does the program's last one) */
  int indent;     /* spaces per level when beautifying (0 → 2) */
  /* terser's output options (spec §3.3 "Print styles"). Zero is the plain printer; every one keeps the program's
     meaning (parse(print(x)) differs from x only as each says). */
  int braces;     /* 1: the body of if/else/for/for-in/for-of/while/do/with is always a block (`if(a){b()}`, an
                     empty statement becomes `{}`); `else if` stays a chain and a label's body is not wrapped */
  int quote_style; /* string literals (expressions, property keys, import/export sources):
                     MLSYS_CONTRACODE_JS_QUOTE_ORIGINAL (0, the source's own text; terser's 3), _FEWER (terser's 0:
                     the quote that needs fewer escapes in the value, a tie → double), _SINGLE (terser's 1), _DOUBLE
                     (terser's 2). Re-quoting copies every backslash escape as it is (line continuations too), escapes
                     the new quote and drops the backslash of \' or \" when no longer needed, so the value stays.
                     A directive ("use strict") is re-quoted only when it holds no backslash and no quote of either
                     kind (a directive's raw text is what counts). Template literals and regexes are never touched. */
  int quote_keys; /* 1: quote each object-literal key that is an IdentifierName or a canonical number (its ToString
                     is its own text: `1`, `0.5`; not `1e3`, `0x10`, `.5`), methods and accessors too; shorthand
                     `{a}` → `{"a":a}` except `{__proto__}` (the long form would set the prototype). Classes, patterns,
                     member expressions and computed keys stay as they are. Double quotes unless _SINGLE. */
} mlsys_contracode_js_print_opts;
#define MLSYS_CONTRACODE_JS_TERSE 2
enum { MLSYS_CONTRACODE_JS_QUOTE_ORIGINAL = 0, MLSYS_CONTRACODE_JS_QUOTE_FEWER, MLSYS_CONTRACODE_JS_QUOTE_SINGLE,
       MLSYS_CONTRACODE_JS_QUOTE_DOUBLE };
/* The program as source (malloc'd, NUL-terminated). Parentheses come from operator precedence, never from the
   source, and parse(print(ast)) has the same canonical form as ast (braces, quote_style and quote_keys change it
   only as they say: added blocks, string spellings, quoted keys). opts NULL = compact. Bad quote_style:
   MLSYS_ERR_ARG. */
MLSYS_DEF mlsys_status mlsys_contracode_js_print(const mlsys_contracode_js_ast *ast,
                                                 const mlsys_contracode_js_print_opts *opts, char **out, size_t *outn);
/* A canonical serialization of the tree under node (0 = root): kinds, operators, flags, names, literal raw text;
   positions and parentheses are left out. Two trees are equal iff their serializations are. malloc'd. */
MLSYS_DEF mlsys_status mlsys_contracode_js_canonical(const mlsys_contracode_js_ast *ast, int node, char **out,
                                                     size_t *outn);

MLSYS_DEF const char *mlsys_contracode_js_kind_name(int kind);   /* ESTree name: "BinaryExpression", ... ("Hole") */
MLSYS_DEF const char *mlsys_contracode_js_op_str(int op);        /* "+", "typeof", ... */
/* counts[k] = number of nodes of kind k reachable from the root (counts has MLSYS_CONTRACODE_JS_KIND_COUNT). */
MLSYS_DEF void mlsys_contracode_js_count_kinds(const mlsys_contracode_js_ast *ast, long *counts);

enum { MLSYS_CONTRACODE_FN_DECLARATION = 1, MLSYS_CONTRACODE_FN_EXPRESSION, MLSYS_CONTRACODE_FN_ARROW,
       MLSYS_CONTRACODE_FN_METHOD };
typedef struct {
  int node;                  /* the function node (for a method: its FunctionExpression) */
  int kind;                  /* MLSYS_CONTRACODE_FN_* */
  uint32_t start, end;       /* byte span in the source (a method's span starts at its key / get / static) */
  uint32_t name_start, name_end;   /* its name (id, method key or `var x =` / `x:` it is bound to); empty if none */
  int nlines;                /* lines spanned */
} mlsys_contracode_fn_span;
/* Every function in source order (nested ones included); *out malloc'd. */
MLSYS_DEF mlsys_status mlsys_contracode_js_functions(const mlsys_contracode_js_ast *ast,
                                                     mlsys_contracode_fn_span **out, int *n);

/* [end of section 1 declarations] */

/* ---------------------------------------------------------------------------------------------------------------
   2. Scope analysis (declarations)
   --------------------------------------------------------------------------------------------------------------- */

/* Lexical scopes of a parsed program (§3.3). Scopes: the program (global, or module), each function (params and
   the body's top level share it; a named function expression's own name lives in a FNAME scope just outside it),
   each block, switch and static block, each for/for-in/for-of head (with let/const), each catch clause (param and
   body share it) and each named class expression. Bindings: var (hoisted to the nearest function/program/static
   block scope), let/const/class (their block), function declarations (the enclosing function's scope; in a module,
   where code is strict, a declaration inside a block stays in the block — in scripts it is hoisted like Annex B's
   sloppy-mode functions, which keeps renaming consistent for both readings of code like `if(c){function f(){}}f()`),
   params (destructuring, defaults and rest included), catch params, imports. Every Identifier in a name position
   (not a property key, member property, label, meta property, import/export alias) resolves to the innermost
   binding of its name on the scope chain, or is free (a global); inside a parameter list only parameters of that
   function are visible (`function f(a=b){var b}`: the default's b is the outer one). Labels are not bindings. TDZ is ignored (a name
   resolves the same whether used before or after its let). `arguments` not bound explicitly is the implicit object
   of the nearest non-arrow function: it is neither free nor a binding, and it sets that scope's uses_arguments;
   renaming a parameter keeps sloppy-mode aliasing (arguments[i] stays tied to the i-th parameter), so it does not
   forbid renaming. A direct `eval(...)` (free `eval` called) marks its scope and all enclosing scopes unsafe, and a
   `with` marks its scope chain and every scope inside its body unsafe: the transforms rename nothing there. */
enum { MLSYS_CONTRACODE_SCOPE_GLOBAL = 1, MLSYS_CONTRACODE_SCOPE_MODULE, MLSYS_CONTRACODE_SCOPE_FUNCTION,
       MLSYS_CONTRACODE_SCOPE_BLOCK, MLSYS_CONTRACODE_SCOPE_CATCH, MLSYS_CONTRACODE_SCOPE_FNAME,
       MLSYS_CONTRACODE_SCOPE_CLASS };
enum { MLSYS_CONTRACODE_BIND_VAR = 1, MLSYS_CONTRACODE_BIND_LET, MLSYS_CONTRACODE_BIND_CONST,
       MLSYS_CONTRACODE_BIND_CLASS, MLSYS_CONTRACODE_BIND_FUNCTION, MLSYS_CONTRACODE_BIND_PARAM,
       MLSYS_CONTRACODE_BIND_CATCH, MLSYS_CONTRACODE_BIND_FNAME, MLSYS_CONTRACODE_BIND_IMPORT };
typedef struct {
  int kind;            /* MLSYS_CONTRACODE_SCOPE_* */
  int parent;          /* enclosing scope index, -1 for the program */
  int node;            /* the node that opens it (Program, function, block, catch clause, for, class) */
  int fn;              /* index of the nearest enclosing function/program scope (itself if it is one) */
  int arrow;           /* a function scope of an arrow function */
  int unsafe;          /* eval or with can see it: do not rename its bindings */
  int uses_arguments;  /* function scope whose code reads the implicit `arguments` */
  int first;           /* first binding (chained through mlsys_contracode_binding.next), -1 none */
} mlsys_contracode_scope;
typedef struct {
  uint32_t str, slen;  /* the name, in ast->text */
  int kind;            /* MLSYS_CONTRACODE_BIND_* */
  int scope;
  int decl;            /* the first declaring Identifier node */
  int nrefs;           /* Identifier occurrences resolving to it that are not declarations */
  int ndecls;          /* declaring occurrences (var x; var x; → 2) */
  int param_index;     /* for PARAM: position in the parameter list; -1 otherwise */
  int next;
} mlsys_contracode_binding;
typedef struct {
  const mlsys_contracode_js_ast *ast;
  mlsys_contracode_scope *scopes;
  int nscopes;
  mlsys_contracode_binding *bindings;
  int nbindings;
  int nnodes;          /* ast->nnodes when built */
  int *node_scope;     /* per node: the scope it opens, -1 if none (a function node → its FUNCTION scope) */
  int *resolved;       /* per Identifier node in a name position: binding + 1, -1 free, 0 not a name use */
  uint8_t *is_decl;    /* per node: 1 if the Identifier declares its binding */
  int *id_scope;       /* per Identifier name use: the scope it is resolved from (-1 otherwise) */
} mlsys_contracode_scopes;
/* Builds the scopes of ast (which must not change while s is used; rebuild after a transform). */
MLSYS_DEF mlsys_status mlsys_contracode_scope_build(const mlsys_contracode_js_ast *ast, mlsys_contracode_scopes *s);
MLSYS_DEF void mlsys_contracode_scope_free(mlsys_contracode_scopes *s);
/* The binding a name resolves to from scope (-1: free). */
MLSYS_DEF int mlsys_contracode_scope_lookup(const mlsys_contracode_scopes *s, int scope, const char *name, size_t n);
/* 1 if name is free (resolves to no binding) in scope. */
MLSYS_DEF int mlsys_contracode_scope_is_free(const mlsys_contracode_scopes *s, int scope, const char *name);
/* The bindings of function node fn's parameters in order (*out malloc'd; a destructured parameter contributes all
   its names with the same param_index). MLSYS_ERR_ARG if fn is not a function node. */
MLSYS_DEF mlsys_status mlsys_contracode_scope_params(const mlsys_contracode_scopes *s, int fn, int **out, int *n);
/* Every Identifier node resolving to binding b (declarations included), in node order; *out malloc'd. */
MLSYS_DEF mlsys_status mlsys_contracode_scope_refs(const mlsys_contracode_scopes *s, int b, int **out, int *n);

/* [end of section 2 declarations] */

/* ---------------------------------------------------------------------------------------------------------------
   3. Transforms (declarations)
   --------------------------------------------------------------------------------------------------------------- */

/* Scope-aware rewrites of the AST in place (§3.1, §3.3); print the result with mlsys_contracode_js_print. Names
   added are appended to ast->text. Freshness (T1/T2): a new name must be an identifier that is not a reserved word
   nor `arguments, eval, undefined, NaN, Infinity`, and no Identifier inside the function (nested functions
   included) may have that name; otherwise MLSYS_ERR_ARG "… is not fresh …" and the tree is unchanged. A function
   whose scope is unsafe (eval/with) is refused with MLSYS_ERR_UNSUPPORTED. */
/* T1: renames parameter param_index (0-based) of function node fn (a simple identifier, `a = 1` or `...a`) and all
   its references: `function x(a,b){…}` → `function x(bright_river,b){…}`. Shorthand properties expand. */
MLSYS_DEF mlsys_status mlsys_contracode_rename_param(mlsys_contracode_js_ast *ast, int fn, int param_index,
                                                     const char *new_name);
/* T2: inserts `var NAME;` as the first statement of fn's body after its directive prologue. An arrow function with
   an expression body is MLSYS_ERR_ARG. */
MLSYS_DEF mlsys_status mlsys_contracode_insert_var(mlsys_contracode_js_ast *ast, int fn, const char *name);
/* T3 (mangle, terser toplevel=false, keep_fnames): renames every binding of every scope inside a function (params,
   var, let, const, catch params; not function or class names, not `arguments`, nothing in an unsafe scope) to the
   first of a..z, A..Z, $, _, then two-character names, in pre-order of scopes and declaration order, that is not
   reserved, not the name of any identifier inside the scope that resolves outside it or is free, and not the name
   of another binding in the scope or below it. So a new name never captures a free name or an outer binding, and
   the program's free names are unchanged. *nrenamed (nullable) gets the count of bindings renamed. */
MLSYS_DEF mlsys_status mlsys_contracode_mangle(mlsys_contracode_js_ast *ast, int *nrenamed);
/* The name fresh-check of T1/T2: 1 if name may be introduced in fn. */
MLSYS_DEF int mlsys_contracode_name_is_fresh(const mlsys_contracode_js_ast *ast, int fn, const char *name);

/* Table 2.1's compress passes (§3.3 T4-T8, terser's compress subset). Each rewrites ast in place, deterministically,
   and sets *nrewrites (nullable) to the number of rewrites it made; each preserves semantics by construction (the
   guards below), and none touches code whose scope eval or with can see. Run them in any order, any number of
   times; mlsys_contracode_compress runs them all in the order fold, dce, unused, seq_cond, props, booleans. */
/* T4 fold: evaluates, bottom-up, operators whose operands are all constants (number, string, boolean, null literals,
   `void <constant>`): `+ - * / % **`, unary `- + ! ~ typeof void`, bitwise and shifts (ToInt32/ToUint32),
   `< > <= >= == != === !==`, string concatenation, and `&& || ??` / `?:` with a constant left operand or test (the
   other operand is kept unless it is a name or member access: `(1&&o.f)()` keeps its `this`). Numbers print as JS's
   Number::toString (shortest round-trip digits, exponent iff exp ≥ 21 or ≤ −7). Not folded: results that are NaN,
   ±Infinity or −0 (`1/0` stays), strings spelled with a backslash escape, string-to-number conversions, string
   comparisons with non-ASCII characters, decimal literals with `_` or a legacy octal spelling. Already canonical
   forms (`-5`, `!0`, `void 0`) are left alone. */
MLSYS_DEF mlsys_status mlsys_contracode_fold(mlsys_contracode_js_ast *ast, int *nrewrites);
/* T6 booleans: `true` → `!0`, `false` → `!1`. */
MLSYS_DEF mlsys_status mlsys_contracode_booleans(mlsys_contracode_js_ast *ast, int *nrewrites);
/* T5 dead code, in statement lists: `if (constant)` keeps the taken branch (a block is spliced in unless it declares
   let/const/class/function); `while (falsy) S` and `for (init; falsy; u) S` (init not let/const) shrink to init;
   statements after return/throw/break/continue are dropped; empty statements and non-directive literal expression
   statements are dropped. Removed code's `var` names survive as `var a, b;` (no initializers) and function
   declarations after a jump stay; code holding a function declaration below its top (Annex B) or a dead let/const/
   class at list level is left as it is. */
MLSYS_DEF mlsys_status mlsys_contracode_dce(mlsys_contracode_js_ast *ast, int *nrewrites);
/* T5b unused: inside functions (never at the top level), to a fixpoint: drops function declarations and `var`
   declarators whose binding is never referenced, the latter only when the initializer is absent or side-effect free
   (a literal, `-`/`!`/`void` of one, a function or arrow expression, a name that resolves to a binding); never the
   variable of a for-in/for-of head. */
MLSYS_DEF mlsys_status mlsys_contracode_unused(mlsys_contracode_js_ast *ast, int *nrewrites);
/* T7 sequences and conditionals: `if (a) e;` → `a&&e;`, `if (!a) e;` → `a||e;`, `if (a) e1; else e2;` →
   `a?e1:e2;` (each branch one expression statement, braced or not); consecutive non-directive expression statements
   → one comma sequence; `e; return x;` → `return e,x;`; consecutive declarations of the same kind (var, let or const)
   → one. */
MLSYS_DEF mlsys_status mlsys_contracode_seq_cond(mlsys_contracode_js_ast *ast, int *nrewrites);
/* T8 props: `o["b"]` → `o.b` and `{"b": 1}` → `{b: 1}` (object literals and patterns, not class members) when the
   string is an ASCII IdentifierName spelled without escapes. */
MLSYS_DEF mlsys_status mlsys_contracode_props(mlsys_contracode_js_ast *ast, int *nrewrites);
/* The same; keep_quoted (terser's keep_quoted_props, "prevents stripping quotes from property names"): the keys of
   object literals and patterns stay as written, and only `o["b"]` → `o.b` is done. */
MLSYS_DEF mlsys_status mlsys_contracode_props_opt(mlsys_contracode_js_ast *ast, int keep_quoted, int *nrewrites);
/* All six, in the order above, once each; *nrewrites is their total. */
MLSYS_DEF mlsys_status mlsys_contracode_compress(mlsys_contracode_js_ast *ast, int *nrewrites);
/* The rest of terser's compress options that Table 2.1 and the repo's terser.js use (§3.1, §3.3); same contract
   as above (in place, deterministic, *nrewrites, nothing eval/with can see), none of them in compress. */
/* T9 hoist_vars (terser `hoist_vars`): in every function (not the top level) with at least two `var`
   declarations (terser's condition), the var names, first occurrence first, become one `var a, b;` after the
   directive prologue, and each declaration becomes the assignments of its initializers: `var a = 1, b;` → `a = 1;`
   (none: the statement goes, or is `;` where a single statement is needed), `for (var i = 0, j;…)` → `for (i = 0;…)`,
   `for (var k in o)` → `for (k in o)`, `var {a, b} = o` → `({a, b} = o)` (assignment and declaration run the same
   destructuring and name anonymous functions alike). Parameters' names are kept in the list: with default values
   the body's var is a second binding initialized from the parameter, which `var a;` still makes. A nested
   block's let/const of a var's name needs no guard (a var assigned inside such a block is an early error). Refused
   (the function is left alone): a function declaration in a nested block (Annex B gives it a var binding assigned
   when its block runs), a catch parameter with the name of one of the vars (`catch (e) { var e = 1 }` assigns
   the parameter, and keeping that right is not worth the case), `for (var k = 0 in o)` (Annex B), a var named
   `let` or `async` (`let = 1;` and `for (async of x)` parse differently once `var` is gone). *nrewrites counts the
   declarations rewritten. */
MLSYS_DEF mlsys_status mlsys_contracode_hoist_vars(mlsys_contracode_js_ast *ast, int *nrewrites);
/* T10 arguments (terser `arguments`): `arguments[i]` (i a decimal integer literal below the parameter count) →
   the i-th parameter, in functions that are not strict (no "use strict" here or above, not in a class, not a
   module) and have a simple parameter list (identifiers only), where sloppy mode maps arguments[i] onto the
   parameter. Exact, so guarded where the mapping could break: every use of the function's `arguments` must be
   `arguments[literal]` or `arguments.length` read (not assigned, updated, deleted, destructured into, or called
   through: `arguments[0]()` passes `arguments` as `this`), else the function is left alone; a parameter that is
   written anywhere (assigned, updated, a for-in/of or destructuring target, redeclared by var or function, or a
   duplicate name) is not substituted, since past the actual argument count the two are not aliased; nor one
   shadowed where `arguments` is read (a let, or an arrow's own parameter). Nested arrows' `arguments` is the
   enclosing function's; other nested functions have their own. Not covered: an Object.prototype property named
   like an index would show through `arguments[i]` past the argument count but not through the parameter. */
MLSYS_DEF mlsys_status mlsys_contracode_arguments(mlsys_contracode_js_ast *ast, int *nrewrites);
/* T6u bool_int (terser `booleans_as_integers`, UNSAFE, kept for faithfulness to the repo): `===`/`!==` with a
   boolean literal operand → `==`/`!=`, then `true`/`false` → `1`/`0`. Changes meaning (`x === true` for x = 1,
   `typeof true`, `true + ""`); spec §7.4 test 11 and the oracle catch it. Not in the SAFE preset. */
MLSYS_DEF mlsys_status mlsys_contracode_bool_int(mlsys_contracode_js_ast *ast, int *nrewrites);
/* template_concat, safe form: an untagged template whose every substitution is a string or number literal or a
   `typeof` expression → string concatenation: `` `a${typeof x}b` `` → `"a"+typeof x+"b"`, `` `${1}${2}` `` →
   `""+1+2` (the first piece, even empty, keeps every `+` a concatenation), `` `ab` `` → `"ab"`. Terser converts
   every template (unsafe: `${o}` calls o's toString, `"" + o` its valueOf first); here other substitutions leave
   the template alone, as does a raw CR (its cooked value is a LF). */
MLSYS_DEF mlsys_status mlsys_contracode_template_concat(mlsys_contracode_js_ast *ast, int *nrewrites);
/* drop_console (terser `drop_console`; CHANGES I/O, and drops the arguments' side effects, so not in SAFE): removes
   every expression statement that calls a member of the global `console` (`console.log(x);`,
   `console.log.apply(console, a);`); a statement position that needs one keeps `;`. A local `console` stays. */
MLSYS_DEF mlsys_status mlsys_contracode_drop_console(mlsys_contracode_js_ast *ast, int *nrewrites);

/* [end of section 3 declarations] */

/* ---------------------------------------------------------------------------------------------------------------
   4. Augmentation: transform dropout (Alg. 1) (declarations)
   --------------------------------------------------------------------------------------------------------------- */

/* Alg. 1 (§3.4): a variant of a program is made by walking the passes in a fixed order, applying each with its own
   probability, printing the tree, then (source level) subsampling lines. The AST passes, in order, are listed by
   MLSYS_CONTRACODE_AUG_* ids; each also has a name (mlsys_contracode_aug_pass_name) used by `--transforms`. A pass
   that finds nothing to do, or is refused (a function visible to eval/with), is simply not applied.
     rename-param  T1: in every function with a simple parameter, one parameter (chosen at random) gets a fresh
                   English-like name of one or two words from a built-in list, snake_case or camelCase (p .5 each),
                   as the repo's Babel pass does (the repo only visits FunctionDeclarations; here every function).
     insert-var    T2: `var <fresh word>;` at the top of every function body (not expression-bodied arrows).
     the terser block (its passes run only in variants where the block fires, p_block), in this order:
     drop-console, template-concat, fold, dce, unused, hoist-vars, arguments, seq-cond, props, bool-int, booleans
                   section 3's compress passes (terser's compress sub-options);
     mangle        T3.
   drop-console and bool-int change behaviour (section 3); the SAFE preset never runs them.
   Printing: beautified w.p. p_beautify (indent 4 w.p. p_indent4, else 2), else compact, without the last `;` of
   each block w.p. p_terse (terser's output); independently braces, quoted keys and a quote style, and the props
   pass keeps quoted keys w.p. p_keep_quoted (drawn when props' turn comes, block or not). All of that preserves
   semantics. Line subsampling
   (mlsys_contracode_sample_lines) w.p. p_lines does NOT: it deletes random lines, and the result need not parse —
   by design (Table 2.6: it helps as an augmentation); the SAFE preset leaves it out.
   Hook for more passes: a new AST pass adds its id before MLSYS_CONTRACODE_AUG_NPASSES (the enum order is the
   application order) and one row to mlsys__aug_table in the implementation (name, function, in-block flag). */
enum { MLSYS_CONTRACODE_AUG_RENAME_PARAM = 0, MLSYS_CONTRACODE_AUG_INSERT_VAR,
       /* the terser block: compress (T4-T10 and the rest) then mangle, terser's order. drop_console first (what it
          drops needs no other rewrite), template_concat before fold (which folds `"a"+1`), hoist_vars before
          seq_cond (which joins its assignments), bool_int before booleans (which would leave it no literal) */
       MLSYS_CONTRACODE_AUG_DROP_CONSOLE, MLSYS_CONTRACODE_AUG_TEMPLATE_CONCAT, MLSYS_CONTRACODE_AUG_FOLD,
       MLSYS_CONTRACODE_AUG_DCE, MLSYS_CONTRACODE_AUG_UNUSED, MLSYS_CONTRACODE_AUG_HOIST_VARS,
       MLSYS_CONTRACODE_AUG_ARGUMENTS, MLSYS_CONTRACODE_AUG_SEQ_COND, MLSYS_CONTRACODE_AUG_PROPS,
       MLSYS_CONTRACODE_AUG_BOOL_INT, MLSYS_CONTRACODE_AUG_BOOLEANS, MLSYS_CONTRACODE_AUG_MANGLE,
       MLSYS_CONTRACODE_AUG_NPASSES };
#define MLSYS_CONTRACODE_AUG_MAX_PASSES 28   /* pass ids stay below 28: bits 28-30 of `applied` are taken */
enum { MLSYS_CONTRACODE_AUG_REPO_EFFECTIVE = 0, MLSYS_CONTRACODE_AUG_SAFE };
/* Bits of *applied (mlsys_contracode_augment): 1 << pass id for the AST passes, then these. */
#define MLSYS_CONTRACODE_AUG_APPLIED_BEAUTIFY (1u << 28)
#define MLSYS_CONTRACODE_AUG_APPLIED_TERSE (1u << 29)
#define MLSYS_CONTRACODE_AUG_APPLIED_LINES (1u << 30)
typedef struct {
  double p_pass[MLSYS_CONTRACODE_AUG_MAX_PASSES];   /* by pass id */
  double p_block;                  /* the terser block; passes flagged in-block run only when it fires */
  double p_beautify, p_indent4, p_terse;
  /* terser's other output options: braces (mlsys_contracode_js_print_opts.braces), quote_keys, keep_quoted_props
     (the props pass leaves quoted keys quoted: mlsys_contracode_props_opt) and quote_style, by terser's value:
     [0] fewer escapes, [1] single, [2] double, [3] original; they sum to at most 1 and the rest keeps the source's
     quotes too (so a zeroed configuration prints as it always did). */
  double p_braces, p_quote_keys, p_keep_quoted, p_quote_style[4];
  double p_lines, p_keep_line;     /* line subsampling (lossy) and its per-line keep probability */
  int flags;                       /* MLSYS_CONTRACODE_JS_SCRIPT or _MODULE: how sources are parsed */
} mlsys_contracode_aug_cfg;
/* REPO_EFFECTIVE (the authors' pipeline as it really runs, §3.4): rename .25, insert .25, block .5 with, inside it,
   fold, unused, seq-cond, props, booleans, template-concat and mangle 1 and dce, hoist-vars, arguments, bool-int,
   drop-console .5 each (the repo's randomized compress sub-flags); beautify .75, indent 4 .5, terse .5 (when
   compact), braces .5, quote_keys .5, keep_quoted_props .5, quote_style fewer-escapes .5, single .25, double .125,
   original .125 (terser.js's output options), lines .25 (keep .9). SAFE: the same without bool-int, drop-console and line subsampling, so every
   variant behaves exactly like the input. Unknown preset: MLSYS_ERR_ARG. */
MLSYS_DEF mlsys_status mlsys_contracode_aug_preset(int preset, mlsys_contracode_aug_cfg *cfg);
/* The pass id of a name ("rename-param", "insert-var", "hoist-vars", "mangle", …: mlsys__aug_table), or -1. */
MLSYS_DEF int mlsys_contracode_aug_pass_id(const char *name);
MLSYS_DEF const char *mlsys_contracode_aug_pass_name(int id);   /* NULL if out of range */

/* Line subsampling (the repo's sample_lines, §3.3 T11): split src on each \r or \n; if there are at least 5 lines,
   with probability p keep the first and last line and each other line with probability p_keep, and join with \n.
   Otherwise (fewer lines, or the draw fails) the output is src unchanged. NOT semantics-preserving: the output may
   not even parse. *out malloc'd and NUL-terminated; *applied (nullable) = 1 if lines were sampled. */
MLSYS_DEF mlsys_status mlsys_contracode_sample_lines(const char *src, size_t n, double p, double p_keep, mlsys_rng *r,
                                                     char **out, size_t *outn, int *applied);

/* One variant of src (Alg. 1: parse, the passes in order each with its probability, print, lines). *out malloc'd;
   *applied (nullable) gets the bits of what was applied. A src that does not parse is MLSYS_ERR_PARSE. */
MLSYS_DEF mlsys_status mlsys_contracode_augment(const char *src, size_t n, const mlsys_contracode_aug_cfg *cfg,
                                                mlsys_rng *r, char **out, size_t *outn, uint32_t *applied);

/* A set of distinct strings in insertion order. */
typedef struct {
  int n;
  char **s;
  size_t *len;
  uint32_t *applied;   /* what made each (0 for the original) */
} mlsys_contracode_strset;
/* src itself (first) and up to nsamples variants, exactly deduplicated. Variant i (1-based) uses an RNG seeded
   from splitmix64(seed ^ fnv1a(src) ^ i) (mlsys_rng_seed), so a data set is reproducible and its variants can be
   made in any order or in parallel. src is parsed once. nsamples 0..1,000,000. */
MLSYS_DEF mlsys_status mlsys_contracode_augment_variants(const char *src, size_t n,
                                                         const mlsys_contracode_aug_cfg *cfg, int nsamples,
                                                         uint64_t seed, mlsys_contracode_strset *out);
MLSYS_DEF void mlsys_contracode_strset_free(mlsys_contracode_strset *s);

/* A function of a file as a program unit (§2.1): a declaration as it is, a function expression or arrow as
   `const x = …;`, a method inside `class x{…}` (its name is kept; the repo masks names to x). *out malloc'd. */
MLSYS_DEF mlsys_status mlsys_contracode_fn_unit(const char *src, size_t n, const mlsys_contracode_fn_span *f,
                                                char **out, size_t *outn);

/* [end of section 4 declarations] */

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
   6. Encoders and MoCo (declarations)
   --------------------------------------------------------------------------------------------------------------- */

/* Code encoders (§3.6) map token ids (SentencePiece ids of normalize_program'd source, section 5) to a pooled
   representation, and a projection head maps that to the d_rep-dim vector the contrastive loss sees. fp32 on the CPU,
   threads through mlsys_pool; the dense kernels are mlsys_common.h section 10. All parameters live in ONE flat array
   (body first, then the head) with a gradient array of the same layout, so momentum updates, Adam and checkpoints
   are loops over one array. Initialization follows PyTorch's defaults (Linear U(±1/√fan_in), Embedding N(0,1), LSTM
   U(±1/√h), attention in-projection Xavier-uniform with zero bias, LayerNorm 1/0), seeded. */
enum { MLSYS_CONTRACODE_ENC_TRANSFORMER = 0, MLSYS_CONTRACODE_ENC_BILSTM, MLSYS_CONTRACODE_ENC_BOW };
enum {
  MLSYS_CONTRACODE_POOL_MEAN_NONPAD = 0,   /* mean over the first lens[b] positions (default) */
  MLSYS_CONTRACODE_POOL_MEAN_ALL,          /* mean over all T positions, padding included (the repo's Transformer) */
  MLSYS_CONTRACODE_POOL_LSTM_HIDDEN        /* BiLSTM: the final hidden states [l0 fwd, l0 bwd, l1 fwd, l1 bwd, …] */
};
typedef struct {
  int type;                 /* MLSYS_CONTRACODE_ENC_* */
  int vocab, d_model, n_layers, n_heads, d_ff;   /* BiLSTM: d_model = hidden size per direction; BOW: only d_model */
  int d_rep;                /* projection output (128 in the paper) */
  int max_len;              /* positions of the sinusoidal encoding; longer inputs are MLSYS_ERR_ARG */
  int pad_id;               /* the padding id (its embedding row is trained like any other; it is masked by lens) */
  int pool;                 /* MLSYS_CONTRACODE_POOL_* */
  float dropout;            /* 0.1 in the paper; applied only in training forwards */
} mlsys_contracode_enc_cfg;
/* The paper's sizes (§3.6, §7.4 test 17) for a vocabulary of `vocab` pieces, and tiny ones for CPU runs:
   "transformer" (d 512, 6 layers, 8 heads, ff 2048), "bilstm" (hidden 512, 2 layers), "tiny-transformer" (d 128,
   2 layers, 4 heads, ff 512, d_rep 64), "tiny-bilstm" (hidden 128, 2 layers, d_rep 64), "bow" (d 128, d_rep 64).
   Unknown name: MLSYS_ERR_ARG. */
MLSYS_DEF mlsys_status mlsys_contracode_enc_preset(const char *name, int vocab, mlsys_contracode_enc_cfg *cfg);
/* Parameters of the body alone (with_head 0) or body + projection head (1); 0 for an invalid cfg. */
MLSYS_DEF size_t mlsys_contracode_enc_nparams(const mlsys_contracode_enc_cfg *cfg, int with_head);
/* The dimension of the pooled (un-projected) representation: d_model (Transformer, BOW); for the BiLSTM
   2·n_layers·d_model with LSTM_HIDDEN, 2·d_model with a mean. The head is Linear(pooled, d_model), ReLU,
   Linear(d_model, d_rep). */
MLSYS_DEF int mlsys_contracode_enc_pooled_dim(const mlsys_contracode_enc_cfg *cfg);

typedef struct mlsys_contracode_enc mlsys_contracode_enc;
struct mlsys_contracode_enc {
  mlsys_contracode_enc_cfg cfg;
  size_t nparams;           /* body + head */
  float *params, *grads;    /* nparams each; grads accumulate (zero them with mlsys_contracode_enc_zero_grad) */
  mlsys_pool *pool;         /* borrowed; NULL = serial */
  void *state_;             /* activations of the last forward (private) */
};
/* Allocates and initializes (seeded) an encoder. pool is borrowed (may be NULL). */
MLSYS_DEF mlsys_status mlsys_contracode_enc_init(mlsys_contracode_enc *e, const mlsys_contracode_enc_cfg *cfg, uint64_t seed,
                                                 mlsys_pool *pool);
MLSYS_DEF void mlsys_contracode_enc_free(mlsys_contracode_enc *e);
MLSYS_DEF void mlsys_contracode_enc_zero_grad(mlsys_contracode_enc *e);
/* Forward over a batch: ids is B×T row-major, row b's first lens[b] (1..T) ids are real, the rest padding.
   project = 1: out is B×d_rep (the head's output); 0: out is B×pooled_dim (the representation clone detection
   scores, §3.9). train = 1 applies dropout with draws from rng and keeps the activations for one backward. */
MLSYS_DEF mlsys_status mlsys_contracode_enc_forward(mlsys_contracode_enc *e, const int32_t *ids, const int *lens, int B, int T,
                                                    int project, int train, mlsys_rng *rng, float *out);
/* Backward of the last train forward: dout has that forward's shape; gradients are ADDED to e->grads. */
MLSYS_DEF mlsys_status mlsys_contracode_enc_backward(mlsys_contracode_enc *e, const float *dout);

/* InfoNCE (eq. 2.1, §3.7) for B queries q (B×d, unit rows), their positive keys k (B×d) and K queue keys (K×d):
   logits_b = [q_b·k_b, q_b·queue_j …] / T, loss = mean_b cross-entropy with label 0. dq (nullable, B×d) receives
   ∂loss/∂q; acc1/acc5 (nullable) the fraction of queries whose positive ranks first / in the top 5. Returns the loss
   (NaN on bad arguments). §7.4 test 15. */
MLSYS_DEF double mlsys_contracode_infonce(const float *q, const float *k, const float *queue, int B, int K, int d, float T,
                                          float *dq, double *acc1, double *acc5);

/* MoCo (§3.7): a query encoder trained by Adam on InfoNCE, a key encoder that follows it by momentum
   (θ_k ← m·θ_k + (1−m)·θ_q before the keys are computed), and a FIFO queue of K past keys (K a multiple of B). */
typedef struct {
  int K;                    /* queue size */
  float m, T;               /* momentum 0.999, temperature 0.07 */
  float lr, beta1, beta2, eps, weight_decay;   /* Adam: 1e-4, 0.9, 0.98, 1e-6, 0 */
  int warmup, total_steps;  /* linear warm-up to lr, then linear decay to 0 at total_steps (HF's linear schedule) */
} mlsys_contracode_moco_cfg;
MLSYS_DEF void mlsys_contracode_moco_defaults(mlsys_contracode_moco_cfg *c);
typedef struct {
  double loss, acc1, acc5, lr;
  int queue_ptr;
} mlsys_contracode_moco_stats;
typedef struct mlsys_contracode_moco mlsys_contracode_moco;
MLSYS_DEF mlsys_status mlsys_contracode_moco_new(const mlsys_contracode_enc_cfg *ec, const mlsys_contracode_moco_cfg *mc,
                                                 uint64_t seed, mlsys_pool *pool, mlsys_contracode_moco **out);
MLSYS_DEF void mlsys_contracode_moco_free(mlsys_contracode_moco *m);
/* One step on B (query view, key view) pairs, each B×T with lengths: the stats of the step (before the update). */
MLSYS_DEF mlsys_status mlsys_contracode_moco_step(mlsys_contracode_moco *m, const int32_t *ids_q, const int *len_q,
                                                  const int32_t *ids_k, const int *len_k, int B, int T,
                                                  mlsys_contracode_moco_stats *st);
MLSYS_DEF mlsys_contracode_enc *mlsys_contracode_moco_query_encoder(mlsys_contracode_moco *m);
/* Optimizer steps taken so far (restored by a load), so a resumed run knows where it is. */
MLSYS_DEF int64_t mlsys_contracode_moco_steps(const mlsys_contracode_moco *m);
/* Checkpoints (written to a temporary file and renamed; CRC-checked): the configs, step, both encoders, Adam's
   moments, the queue and its pointer, and the RNG, so a resumed run continues bit for bit. A damaged or truncated
   file is MLSYS_ERR_PARSE naming what is wrong. */
MLSYS_DEF mlsys_status mlsys_contracode_moco_save(const mlsys_contracode_moco *m, const char *path);
MLSYS_DEF mlsys_status mlsys_contracode_moco_load(const char *path, mlsys_pool *pool, mlsys_contracode_moco **out);

/* [end of section 6 declarations] */

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

/* The offline clone-detection set (spec §7.5) and its evaluation (§3.9). Programs are whole module files of
   libraries that implement the same public API under the same name (lodash-es, underscore's modules/, ramda's es/:
   Debian's node-lodash, node-underscore, node-ramda); a problem is an API name present in at least min_libs
   libraries. Labels mean "same documented API", not "same input/output" (ramda curries and reorders arguments). */
typedef struct {
  const char *library;   /* e.g. "lodash-es"; libraries are numbered by first appearance */
  const char *path;      /* the module's path under the library root, e.g. "map.js" */
  const char *src;
  size_t len;
} mlsys_contracode_clone_file;
typedef struct {
  int nprograms, nproblems, nlibs;
  char **src;            /* per program: the module parsed (as a module) and printed beautified: comments and
                            JSDoc gone, layout normalized */
  size_t *len;
  int *problem;          /* per program: its problem; programs are sorted by problem name, then library */
  int *lib;              /* per program: its library */
  char **problem_name;   /* per problem: the API name */
  int *problem_nlibs;    /* per problem: libraries that have it (= its programs) */
  char **lib_name;       /* per library */
  int nskipped;          /* files left out by the name rules (internal, index, wrapper, *.default, duplicates) */
  int nsingle;           /* API names kept out because fewer than min_libs libraries have them */
} mlsys_contracode_clone_set;
/* Builds the set from nfiles module files. Left out: files not ending in .js, names starting with `_` (lodash and
   underscore internals), under a directory called `internal` (ramda), `index`/`index-*`, names that are not
   identifiers (`lodash.default`, `underscore-array-methods`), names starting with `wrapper` and the library's own
   name (wrappers), and a second file with the same name in one library. Every other file must parse as a module
   (else MLSYS_ERR_PARSE "LIBRARY/PATH: line:col: what"). No problem left is MLSYS_ERR_ARG. */
MLSYS_DEF mlsys_status mlsys_contracode_clone_set_build(const mlsys_contracode_clone_file *files, int nfiles,
                                                        int min_libs, mlsys_contracode_clone_set *out);
MLSYS_DEF void mlsys_contracode_clone_set_free(mlsys_contracode_clone_set *s);

typedef struct {
  int a, b;              /* program indices: a is the one the adversary edits */
  uint8_t label;         /* 1 = clone (same problem) */
} mlsys_contracode_clone_pair;
enum {
  /* Unordered distinct positive pairs (a < b, same problem); negatives are pairs (a < b) of different problems
     drawn without replacement, as many as there are positives (fewer if fewer exist). The default. */
  MLSYS_CONTRACODE_PAIRS_DISTINCT = 0,
  /* The repo as written (§3.9): a problem with programs m_0..m_{k−1} gives (m_i, m_j) for i ∈ [0, k−2],
     j ∈ [1, k−1], (k−1)² ordered pairs with k−2 self pairs; negatives, as many as positives, drawn with replacement
     as (a, b) with a uniform over the programs of problems 0..P−2 and b over those of problems 1..P−1 (so a
     same-problem pair, even a self pair, can be labelled 0). */
  MLSYS_CONTRACODE_PAIRS_FAITHFUL = 1
};
/* Pairs over n programs with problem ids problem[i] ≥ 0 (programs of a problem in index order): positives first,
   then negatives; *out malloc'd. Seeded draws (mlsys_rng). MLSYS_ERR_ARG when no problem has two programs or all
   programs share one problem. */
MLSYS_DEF mlsys_status mlsys_contracode_clone_pairs(const int *problem, int n, int mode, uint64_t seed,
                                                    mlsys_contracode_clone_pair **out, size_t *npos, size_t *nneg);

/* A trained encoder plugged into the evaluation: embeds n programs into out (n × dim floats). */
typedef mlsys_status (*mlsys_contracode_embed_fn)(void *ctx, const char *const *src, const size_t *len, int n,
                                                  float *out /* n x dim */);
enum {
  MLSYS_CONTRACODE_SCORE_EDIT = 0,   /* lev_similarity of the SentencePiece ids (the paper's heuristic baseline) */
  MLSYS_CONTRACODE_SCORE_BOW,        /* cosine of the id count vectors (bag of tokens; order ignored) */
  MLSYS_CONTRACODE_SCORE_EMBED       /* cosine of embed()'s vectors */
};
/* EDIT and BOW tokenize normalize_program(src) with sp and add <s> and </s> when the vocabulary has them. */
typedef struct {
  int kind;
  const mlsys_contracode_sp *sp;     /* EDIT, BOW: any unigram vocabulary */
  mlsys_contracode_embed_fn embed;   /* EMBED */
  void *embed_ctx;
  int dim;                           /* EMBED: floats per program */
} mlsys_contracode_scorer;
/* The adversary's edits (§3.9: the repo's N samples come from terser alone): TERSER = Alg. 1's terser block only,
   with probability .75 (compress passes as REPO_EFFECTIVE's block, then mangle), printed compact without the last
   `;` as terser does; no renaming, no inserted variables, no beautifying, braces, quote changes or
   keep_quoted_props, no line sampling. SAFE = the SAFE
   preset (everything semantics-preserving). Both parse programs as modules. */
enum { MLSYS_CONTRACODE_ADV_TERSER = 0, MLSYS_CONTRACODE_ADV_SAFE };
MLSYS_DEF mlsys_status mlsys_contracode_clone_adversary(int kind, mlsys_contracode_aug_cfg *cfg);
/* Similarities of every pair: natural[i] = sim(a, b); with adv non-NULL and nsamples ≥ 1, adv_sims[i·nsamples + j]
   = sim(variant j of a, b), where variant j of program a is mlsys_contracode_augment(src[a]) with an RNG seeded
   from (seed, a, j): each program's variants are drawn once and shared by its pairs, only a is edited. */
MLSYS_DEF mlsys_status mlsys_contracode_clone_sims(const char *const *src, const size_t *len, int nprograms,
                                                   const mlsys_contracode_clone_pair *pairs, size_t npairs,
                                                   const mlsys_contracode_scorer *sc,
                                                   const mlsys_contracode_aug_cfg *adv, int nsamples, uint64_t seed,
                                                   float *natural, float *adv_sims);
typedef struct {
  double auroc, se, ap, accuracy, threshold;   /* se: Hanley–McNeil; accuracy at the best of 100 thresholds */
  long npos, nneg;                             /* examples scored */
} mlsys_contracode_clone_metrics;
/* The metrics of scored examples. */
MLSYS_DEF mlsys_status mlsys_contracode_clone_metrics_of(const float *score, const uint8_t *label, size_t n,
                                                         mlsys_contracode_clone_metrics *m);
/* Adversarial metrics for N = w out of nsamples variants (adversarial_reduce): start ≥ 0 scores the one window
   [start, start+w); start = −1 pools every window start = 0..nsamples−w as separate examples, the repo's rule
   (nsamples − w + 1 examples per pair). */
MLSYS_DEF mlsys_status mlsys_contracode_clone_adv_metrics(const float *adv_sims, const uint8_t *label, size_t npairs,
                                                          int nsamples, int w, int start,
                                                          mlsys_contracode_clone_metrics *m);

/* Debian's packages of the three libraries (node-lodash 4.17.21, node-underscore 1.13.4, node-ramda 0.28.0):
   an initializer of {library, directory} pairs. */
#define MLSYS_CONTRACODE_CLONE_DEFAULT_LIBS                                                                       \
  {{"lodash-es", "/usr/share/nodejs/lodash-es"},                                                                   \
   {"underscore", "/usr/share/nodejs/underscore/modules"},                                                         \
   {"ramda", "/usr/share/nodejs/ramda/es"}}
/* Appends the `.js` regular files directly in dir (not below it), by name, as files of library; *files grows
   (realloc) and each source is read into memory. A missing or unreadable directory is MLSYS_ERR_IO naming it. */
MLSYS_DEF mlsys_status mlsys_contracode_clone_read_dir(const char *library, const char *dir,
                                                       mlsys_contracode_clone_file **files, int *nfiles);
/* Frees what clone_read_dir allocated (the library, path and source strings and the array). */
MLSYS_DEF void mlsys_contracode_clone_files_free(mlsys_contracode_clone_file *files, int nfiles);

/* The hard-negative view (spec §3.9 [proposal]): the indices (ascending) of every positive and of the
   ceil(frac · #negatives) negatives with the highest key (e.g. their edit-distance similarity: the negatives a
   surface scorer finds most alike), ties to the lower index; *idx malloc'd. frac must be in (0, 1]. */
MLSYS_DEF mlsys_status mlsys_contracode_hard_subset(const float *key, const uint8_t *label, size_t n, double frac,
                                                    size_t **idx, size_t *nidx);

/* The variant clone set (issue 25 item 6: "functions vs their variants vs other functions"), the task pre-training
   aims at: for each of n units (held-out functions, say), program 2k is the unit as given and program 2k+1 one
   variant of it drawn with aug (RNG seeded from (seed, unit)), both of problem k; a draw that prints the unit
   unchanged is redrawn (up to 8 times). A unit that aug cannot parse, or whose 8 draws all print it unchanged, is
   left out and counted in nskipped. label[i] (nullable) names problem k, else "unit-I". One library, "variants".
   MLSYS_ERR_ARG when fewer than two units are left. */
MLSYS_DEF mlsys_status mlsys_contracode_clone_set_variants(const char *const *src, const size_t *len, int n,
                                                           const char *const *label,
                                                           const mlsys_contracode_aug_cfg *aug, uint64_t seed,
                                                           mlsys_contracode_clone_set *out);

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
#include <stdarg.h>
#include <setjmp.h>

/* Operators and punctuators: one table gives the op code, the spelling and (for binary operators) the precedence. */
enum {
  MLSYS__CC_P_NONE = 0, MLSYS__CC_P_LBRACE, MLSYS__CC_P_RBRACE, MLSYS__CC_P_LPAREN, MLSYS__CC_P_RPAREN,
  MLSYS__CC_P_LBRACK, MLSYS__CC_P_RBRACK, MLSYS__CC_P_DOT, MLSYS__CC_P_ELLIPSIS, MLSYS__CC_P_SEMI, MLSYS__CC_P_COMMA,
  MLSYS__CC_P_LT, MLSYS__CC_P_GT, MLSYS__CC_P_LE, MLSYS__CC_P_GE, MLSYS__CC_P_EQ, MLSYS__CC_P_NE, MLSYS__CC_P_SEQ,
  MLSYS__CC_P_SNE, MLSYS__CC_P_PLUS, MLSYS__CC_P_MINUS, MLSYS__CC_P_STAR, MLSYS__CC_P_SLASH, MLSYS__CC_P_PERCENT,
  MLSYS__CC_P_STARSTAR, MLSYS__CC_P_INC, MLSYS__CC_P_DEC, MLSYS__CC_P_SHL, MLSYS__CC_P_SHR, MLSYS__CC_P_USHR,
  MLSYS__CC_P_AMP, MLSYS__CC_P_PIPE, MLSYS__CC_P_CARET, MLSYS__CC_P_BANG, MLSYS__CC_P_TILDE, MLSYS__CC_P_AND,
  MLSYS__CC_P_OR, MLSYS__CC_P_NULLISH, MLSYS__CC_P_QUESTION, MLSYS__CC_P_QDOT, MLSYS__CC_P_COLON, MLSYS__CC_P_ASSIGN,
  MLSYS__CC_P_ADD_A, MLSYS__CC_P_SUB_A, MLSYS__CC_P_MUL_A, MLSYS__CC_P_DIV_A, MLSYS__CC_P_MOD_A, MLSYS__CC_P_EXP_A,
  MLSYS__CC_P_SHL_A, MLSYS__CC_P_SHR_A, MLSYS__CC_P_USHR_A, MLSYS__CC_P_AND_A, MLSYS__CC_P_OR_A, MLSYS__CC_P_XOR_A,
  MLSYS__CC_P_ARROW, MLSYS__CC_P_LAND_A, MLSYS__CC_P_LOR_A, MLSYS__CC_P_NULL_A,
  MLSYS__CC_P_TYPEOF, MLSYS__CC_P_VOID, MLSYS__CC_P_DELETE, MLSYS__CC_P_IN, MLSYS__CC_P_INSTANCEOF,
  MLSYS__CC_P_COUNT
};
static const char *const mlsys__cc_ops[MLSYS__CC_P_COUNT] = {
  "", "{", "}", "(", ")", "[", "]", ".", "...", ";", ",", "<", ">", "<=", ">=", "==", "!=", "===", "!==", "+", "-",
  "*", "/", "%", "**", "++", "--", "<<", ">>", ">>>", "&", "|", "^", "!", "~", "&&", "||", "??", "?", "?.", ":",
  "=", "+=", "-=", "*=", "/=", "%=", "**=", "<<=", ">>=", ">>>=", "&=", "|=", "^=", "=>", "&&=", "||=", "?\?=",
  "typeof", "void", "delete", "in", "instanceof"};
MLSYS_DEF const char *mlsys_contracode_js_op_str(int op) { return op > 0 && op < MLSYS__CC_P_COUNT ? mlsys__cc_ops[op] : ""; }

/* Binary precedence (acorn's numbering): ?? and || 1, && 2, | 3, ^ 4, & 5, equality 6, relational 7, shift 8,
   additive 9, multiplicative 10, ** 11; 0 = not a binary operator. */
static int mlsys__cc_binprec(int op) {
  switch (op) {
    case MLSYS__CC_P_NULLISH: case MLSYS__CC_P_OR: return 1;
    case MLSYS__CC_P_AND: return 2;
    case MLSYS__CC_P_PIPE: return 3;
    case MLSYS__CC_P_CARET: return 4;
    case MLSYS__CC_P_AMP: return 5;
    case MLSYS__CC_P_EQ: case MLSYS__CC_P_NE: case MLSYS__CC_P_SEQ: case MLSYS__CC_P_SNE: return 6;
    case MLSYS__CC_P_LT: case MLSYS__CC_P_GT: case MLSYS__CC_P_LE: case MLSYS__CC_P_GE: case MLSYS__CC_P_IN:
    case MLSYS__CC_P_INSTANCEOF: return 7;
    case MLSYS__CC_P_SHL: case MLSYS__CC_P_SHR: case MLSYS__CC_P_USHR: return 8;
    case MLSYS__CC_P_PLUS: case MLSYS__CC_P_MINUS: return 9;
    case MLSYS__CC_P_STAR: case MLSYS__CC_P_SLASH: case MLSYS__CC_P_PERCENT: return 10;
    case MLSYS__CC_P_STARSTAR: return 11;
    default: return 0;
  }
}
static int mlsys__cc_is_assign_op(int op) {
  return op == MLSYS__CC_P_ASSIGN || (op >= MLSYS__CC_P_ADD_A && op <= MLSYS__CC_P_XOR_A) ||
         (op >= MLSYS__CC_P_LAND_A && op <= MLSYS__CC_P_NULL_A);
}

static const char *const mlsys__cc_kind_names[MLSYS_CONTRACODE_JS_KIND_COUNT] = {
  "None", "Program", "EmptyStatement", "BlockStatement", "ExpressionStatement", "IfStatement", "LabeledStatement",
  "BreakStatement", "ContinueStatement", "WithStatement", "SwitchStatement", "SwitchCase", "ReturnStatement",
  "ThrowStatement", "TryStatement", "CatchClause", "WhileStatement", "DoWhileStatement", "ForStatement",
  "ForInStatement", "ForOfStatement", "DebuggerStatement", "FunctionDeclaration", "VariableDeclaration",
  "VariableDeclarator", "ClassDeclaration", "ClassBody", "MethodDefinition", "PropertyDefinition", "Identifier",
  "Literal", "ThisExpression", "Super", "ArrayExpression", "ObjectExpression", "Property", "FunctionExpression",
  "ArrowFunctionExpression", "ClassExpression", "UnaryExpression", "UpdateExpression", "BinaryExpression",
  "LogicalExpression", "AssignmentExpression", "ConditionalExpression", "CallExpression", "NewExpression",
  "MemberExpression", "ChainExpression", "SequenceExpression", "YieldExpression", "AwaitExpression",
  "TemplateLiteral", "TemplateElement", "TaggedTemplateExpression", "SpreadElement", "MetaProperty",
  "ImportExpression", "ObjectPattern", "ArrayPattern", "RestElement", "AssignmentPattern", "ImportDeclaration",
  "ImportSpecifier", "ImportDefaultSpecifier", "ImportNamespaceSpecifier", "ExportNamedDeclaration",
  "ExportSpecifier", "ExportDefaultDeclaration", "ExportAllDeclaration", "PrivateIdentifier", "StaticBlock", "Hole"};
MLSYS_DEF const char *mlsys_contracode_js_kind_name(int kind) {
  return kind >= 0 && kind < MLSYS_CONTRACODE_JS_KIND_COUNT ? mlsys__cc_kind_names[kind] : "?";
}

/* Reserved words (never identifiers). Contextual words (let, yield, await, async, of, get, set, static, ...) are
   names that the parser inspects. */
enum {
  MLSYS__CC_K_NONE = 0, MLSYS__CC_K_BREAK, MLSYS__CC_K_CASE, MLSYS__CC_K_CATCH, MLSYS__CC_K_CLASS,
  MLSYS__CC_K_CONST, MLSYS__CC_K_CONTINUE, MLSYS__CC_K_DEBUGGER, MLSYS__CC_K_DEFAULT, MLSYS__CC_K_DELETE,
  MLSYS__CC_K_DO, MLSYS__CC_K_ELSE, MLSYS__CC_K_EXPORT, MLSYS__CC_K_EXTENDS, MLSYS__CC_K_FINALLY, MLSYS__CC_K_FOR,
  MLSYS__CC_K_FUNCTION, MLSYS__CC_K_IF, MLSYS__CC_K_IMPORT, MLSYS__CC_K_IN, MLSYS__CC_K_INSTANCEOF, MLSYS__CC_K_NEW,
  MLSYS__CC_K_RETURN, MLSYS__CC_K_SUPER, MLSYS__CC_K_SWITCH, MLSYS__CC_K_THIS, MLSYS__CC_K_THROW, MLSYS__CC_K_TRY,
  MLSYS__CC_K_TYPEOF, MLSYS__CC_K_VAR, MLSYS__CC_K_VOID, MLSYS__CC_K_WHILE, MLSYS__CC_K_WITH, MLSYS__CC_K_NULL,
  MLSYS__CC_K_TRUE, MLSYS__CC_K_FALSE, MLSYS__CC_K_ENUM, MLSYS__CC_K_COUNT
};
static const char *const mlsys__cc_kw[MLSYS__CC_K_COUNT] = {
  "", "break", "case", "catch", "class", "const", "continue", "debugger", "default", "delete", "do", "else", "export",
  "extends", "finally", "for", "function", "if", "import", "in", "instanceof", "new", "return", "super", "switch",
  "this", "throw", "try", "typeof", "var", "void", "while", "with", "null", "true", "false", "enum"};
static int mlsys__cc_keyword(const char *s, uint32_t n) {
  int k;
  if (n < 2 || n > 10 || s[0] < 'b' || s[0] > 'w') return 0;
  for (k = 1; k < MLSYS__CC_K_COUNT; k++)
    if (mlsys__cc_kw[k][0] == s[0] && strlen(mlsys__cc_kw[k]) == n && !memcmp(mlsys__cc_kw[k], s, n)) return k;
  return 0;
}

typedef struct {
  uint8_t type;      /* MLSYS_CONTRACODE_TOK_*, 0 = end of input */
  uint8_t op;        /* punctuator op code */
  uint8_t kw;        /* keyword id (unescaped names only) */
  uint8_t nl;        /* newline before */
  uint8_t esc;       /* name spelled with escapes */
  uint8_t tail;      /* template piece ends with ` (not ${) */
  uint32_t start, end;
} mlsys__cc_tok;

typedef struct {
  mlsys_contracode_js_ast *ast;
  const char *s;
  uint32_t n, pos, prev_end;
  mlsys__cc_tok t;
  int depth, keep_tokens, tok_cap;
  int in_function, in_async, in_generator, module;
  int loop_depth, switch_depth, class_depth;
  int nlabels, label_cap;
  uint32_t *labels;      /* (start, len, is_loop) triples of the enclosing labels */
  jmp_buf jb;
  mlsys_status st;
} mlsys__cc_p;

static void mlsys__cc_linecol(const char *s, uint32_t n, uint32_t off, int *line, int *col) {
  uint32_t i;
  int l = 1, c = 1;
  for (i = 0; i < off && i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch == '\n' || (ch == '\r' && !(i + 1 < n && s[i + 1] == '\n'))) { l++; c = 1; continue; }
    if (ch == 0xE2 && i + 2 < n && (unsigned char)s[i + 1] == 0x80 &&
        ((unsigned char)s[i + 2] == 0xA8 || (unsigned char)s[i + 2] == 0xA9)) { l++; c = 1; i += 2; continue; }
    if ((ch & 0xC0) != 0x80 && ch != '\r') c++;
  }
  *line = l;
  *col = c;
}

static void mlsys__cc_fail(mlsys__cc_p *p, uint32_t off, const char *fmt, ...) MLSYS__PRINTF(3, 4);
static void mlsys__cc_fail(mlsys__cc_p *p, uint32_t off, const char *fmt, ...) {
  char msg[200];
  int line, col;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  mlsys__cc_linecol(p->s, p->n, off, &line, &col);
  p->st = mlsys_set_error(MLSYS_ERR_PARSE, "%d:%d: %s", line, col, msg);
  longjmp(p->jb, 1);
}
static void mlsys__cc_nomem(mlsys__cc_p *p) {
  p->st = mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory parsing JavaScript");
  longjmp(p->jb, 1);
}

/* ---- lexer ---- */
/* Decodes one UTF-8 code point at i; returns its length (0 when invalid). */
static int mlsys__cc_utf8(const char *s, uint32_t n, uint32_t i, uint32_t *cp) {
  const unsigned char *u = (const unsigned char *)s + i;
  uint32_t c, k, len;
  if (i >= n) return 0;
  c = u[0];
  if (c < 0x80) { *cp = c; return 1; }
  if ((c & 0xE0) == 0xC0) { len = 2; c &= 0x1F; }
  else if ((c & 0xF0) == 0xE0) { len = 3; c &= 0x0F; }
  else if ((c & 0xF8) == 0xF0) { len = 4; c &= 0x07; }
  else return 0;
  if (i + len > n) return 0;
  for (k = 1; k < len; k++) {
    if ((u[k] & 0xC0) != 0x80) return 0;
    c = (c << 6) | (u[k] & 0x3F);
  }
  if ((len == 2 && c < 0x80) || (len == 3 && c < 0x800) || (len == 4 && c < 0x10000) || c > 0x10FFFF ||
      (c >= 0xD800 && c <= 0xDFFF))
    return 0;
  *cp = c;
  return (int)len;
}
static int mlsys__cc_is_ws(uint32_t c) {
  return c == ' ' || c == '\t' || c == 0x0B || c == 0x0C || c == 0xA0 || c == 0xFEFF || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x202F || c == 0x205F || c == 0x3000;
}
static int mlsys__cc_is_lt(uint32_t c) { return c == '\n' || c == '\r' || c == 0x2028 || c == 0x2029; }
/* Non-ASCII identifier characters: an approximation of ID_Start/ID_Continue that accepts every code point except
   spaces, line terminators and the Latin-1 / General Punctuation / arrows / math / box-drawing symbol blocks. */
static int mlsys__cc_uni_id(uint32_t c) {
  if (mlsys__cc_is_ws(c) || mlsys__cc_is_lt(c)) return 0;
  if (c >= 0x80 && c <= 0xBF) return c == 0xAA || c == 0xB5 || c == 0xB7 || c == 0xBA;
  if (c == 0xD7 || c == 0xF7) return 0;
  if (c >= 0x2010 && c <= 0x206F) return c == 0x200C || c == 0x200D || c == 0x203F || c == 0x2040 || c == 0x2054;
  if (c >= 0x2190 && c <= 0x2BFF) return 0;
  if (c >= 0x3000 && c <= 0x3003) return 0;
  if (c == 0xFFFE || c == 0xFFFF) return 0;
  return 1;
}
static int mlsys__cc_id_start(uint32_t c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '$' || c == '_' ||
         (c >= 0x80 && c != 0x200C && c != 0x200D && c != 0xB7 && mlsys__cc_uni_id(c));
}
static int mlsys__cc_id_part(uint32_t c) {
  return mlsys__cc_id_start(c) || (c >= '0' && c <= '9') || (c >= 0x80 && mlsys__cc_uni_id(c));
}
static int mlsys__cc_hex(int c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                                                                   : -1;
}
/* A \u escape at i (s[i] == '\\'): returns the code point and advances *pi, or fails. */
static uint32_t mlsys__cc_uescape(mlsys__cc_p *p, uint32_t *pi) {
  uint32_t i = *pi, v = 0;
  int k;
  if (i + 1 >= p->n || p->s[i + 1] != 'u') mlsys__cc_fail(p, i, "bad escape in identifier");
  i += 2;
  if (i < p->n && p->s[i] == '{') {
    int nd = 0;
    for (i++; i < p->n && p->s[i] != '}'; i++, nd++) {
      int h = mlsys__cc_hex(p->s[i]);
      if (h < 0) mlsys__cc_fail(p, *pi, "bad \\u{...} escape");
      v = v * 16 + (uint32_t)h;
      if (v > 0x10FFFF) mlsys__cc_fail(p, *pi, "code point out of range in \\u{...} escape");
    }
    if (i >= p->n || nd == 0) mlsys__cc_fail(p, *pi, "bad \\u{...} escape");
    i++;
  } else {
    for (k = 0; k < 4; k++, i++) {
      int h = i < p->n ? mlsys__cc_hex(p->s[i]) : -1;
      if (h < 0) mlsys__cc_fail(p, *pi, "bad \\uXXXX escape");
      v = v * 16 + (uint32_t)h;
    }
  }
  *pi = i;
  return v;
}

static void mlsys__cc_skip_space(mlsys__cc_p *p) {
  uint32_t i = p->pos, cp;
  const char *s = p->s;
  while (i < p->n) {
    unsigned char c = (unsigned char)s[i];
    if (c == ' ' || c == '\t' || c == 0x0B || c == 0x0C) { i++; continue; }
    if (c == '\n' || c == '\r') { p->t.nl = 1; i++; continue; }
    if (c == '/' && i + 1 < p->n && s[i + 1] == '/') {
      i += 2;
      while (i < p->n) {
        c = (unsigned char)s[i];
        if (c == '\n' || c == '\r') break;
        if (c == 0xE2 && i + 2 < p->n && (unsigned char)s[i + 1] == 0x80 &&
            ((unsigned char)s[i + 2] == 0xA8 || (unsigned char)s[i + 2] == 0xA9))
          break;
        i++;
      }
      continue;
    }
    if (c == '/' && i + 1 < p->n && s[i + 1] == '*') {
      uint32_t st = i;
      i += 2;
      for (;;) {
        if (i + 1 >= p->n) mlsys__cc_fail(p, st, "unterminated comment");
        if (s[i] == '*' && s[i + 1] == '/') { i += 2; break; }
        c = (unsigned char)s[i];
        if (c == '\n' || c == '\r') p->t.nl = 1;
        else if (c == 0xE2 && (unsigned char)s[i + 1] == 0x80 && i + 2 < p->n &&
                 ((unsigned char)s[i + 2] == 0xA8 || (unsigned char)s[i + 2] == 0xA9))
          p->t.nl = 1;
        i++;
      }
      continue;
    }
    if (c >= 0x80) {
      int len = mlsys__cc_utf8(s, p->n, i, &cp);
      if (!len) mlsys__cc_fail(p, i, "invalid UTF-8");
      if (cp == 0x2028 || cp == 0x2029) { p->t.nl = 1; i += (uint32_t)len; continue; }
      if (mlsys__cc_is_ws(cp)) { i += (uint32_t)len; continue; }
    }
    break;
  }
  p->pos = i;
}

static void mlsys__cc_scan_name(mlsys__cc_p *p) {
  uint32_t i = p->pos, cp;
  int first = 1;
  while (i < p->n) {
    int len;
    if (p->s[i] == '\\') {
      uint32_t at = i;
      cp = mlsys__cc_uescape(p, &i);
      if (first ? !mlsys__cc_id_start(cp) : !mlsys__cc_id_part(cp))
        mlsys__cc_fail(p, at, "escape is not an identifier character");
      p->t.esc = 1;
      first = 0;
      continue;
    }
    len = mlsys__cc_utf8(p->s, p->n, i, &cp);
    if (!len) mlsys__cc_fail(p, i, "invalid UTF-8");
    if (!(first ? mlsys__cc_id_start(cp) : mlsys__cc_id_part(cp))) break;
    i += (uint32_t)len;
    first = 0;
  }
  p->t.type = MLSYS_CONTRACODE_TOK_NAME;
  p->t.end = i;
  if (!p->t.esc) {
    p->t.kw = (uint8_t)mlsys__cc_keyword(p->s + p->t.start, i - p->t.start);
    if (p->t.kw) p->t.type = MLSYS_CONTRACODE_TOK_KEYWORD;
  }
  p->pos = i;
}

/* Digits in a radix with numeric separators (a `_` only between two digits). Returns how many digits. */
static int mlsys__cc_digits(mlsys__cc_p *p, int radix, int seps) {
  int nd = 0, last_sep = 0;
  while (p->pos < p->n) {
    int c = (unsigned char)p->s[p->pos], v;
    if (c == '_' && seps) {
      if (!nd || last_sep) mlsys__cc_fail(p, p->pos, "misplaced numeric separator");
      last_sep = 1;
      p->pos++;
      continue;
    }
    v = mlsys__cc_hex(c);
    if (v < 0 || v >= radix) break;
    nd++;
    last_sep = 0;
    p->pos++;
  }
  if (last_sep) mlsys__cc_fail(p, p->pos - 1, "misplaced numeric separator");
  return nd;
}
static void mlsys__cc_scan_number(mlsys__cc_p *p) {
  const char *s = p->s;
  uint32_t st = p->pos, cp;
  int big_ok = 1;
  p->t.type = MLSYS_CONTRACODE_TOK_NUMBER;
  if (s[st] == '0' && st + 1 < p->n && strchr("xXoObB", s[st + 1]) && s[st + 1]) {
    int radix = (s[st + 1] == 'x' || s[st + 1] == 'X') ? 16 : (s[st + 1] == 'o' || s[st + 1] == 'O') ? 8 : 2;
    p->pos += 2;
    if (!mlsys__cc_digits(p, radix, 1)) mlsys__cc_fail(p, st, "expected digits after 0%c", s[st + 1]);
  } else if (s[st] == '0' && st + 1 < p->n && s[st + 1] >= '0' && s[st + 1] <= '9') {
    /* legacy octal (or 08/09, read as decimal): no separators, no fraction for octal, no BigInt */
    int octal = 1;
    p->pos++;
    while (p->pos < p->n && s[p->pos] >= '0' && s[p->pos] <= '9') {
      if (s[p->pos] >= '8') octal = 0;
      p->pos++;
    }
    big_ok = 0;
    if (!octal) goto fraction;
  } else {
    if (s[st] != '.') mlsys__cc_digits(p, 10, 1);
  fraction:
    if (p->pos < p->n && s[p->pos] == '.') {
      big_ok = 0;
      p->pos++;
      if (p->pos < p->n && s[p->pos] == '_') mlsys__cc_fail(p, p->pos, "misplaced numeric separator");
      mlsys__cc_digits(p, 10, 1);
    }
    if (p->pos < p->n && (s[p->pos] == 'e' || s[p->pos] == 'E')) {
      big_ok = 0;
      p->pos++;
      if (p->pos < p->n && (s[p->pos] == '+' || s[p->pos] == '-')) p->pos++;
      if (!mlsys__cc_digits(p, 10, 1)) mlsys__cc_fail(p, st, "expected digits in the exponent");
    }
  }
  if (p->pos < p->n && s[p->pos] == 'n') {
    if (!big_ok) mlsys__cc_fail(p, st, "invalid BigInt literal");
    p->pos++;
    p->t.type = MLSYS_CONTRACODE_TOK_BIGINT;
  }
  if (p->pos < p->n && (s[p->pos] == '\\' || (mlsys__cc_utf8(s, p->n, p->pos, &cp) && mlsys__cc_id_part(cp))))
    mlsys__cc_fail(p, p->pos, "identifier directly after number");
  p->t.end = p->pos;
}

/* One escape sequence in a string or template at s[i] == '\\'; returns the index after it. */
static uint32_t mlsys__cc_escape(mlsys__cc_p *p, uint32_t i, int tmpl) {
  const char *s = p->s;
  uint32_t st = i, cp;
  int k;
  i++;
  if (i >= p->n) mlsys__cc_fail(p, st, "unterminated escape");
  switch (s[i]) {
    case 'x':
      for (k = 1; k <= 2; k++)
        if (i + (uint32_t)k >= p->n || mlsys__cc_hex(s[i + k]) < 0) mlsys__cc_fail(p, st, "bad \\x escape");
      return i + 3;
    case 'u': {
      uint32_t j = st;
      (void)mlsys__cc_uescape(p, &j);
      return j;
    }
    case '\r': return (i + 1 < p->n && s[i + 1] == '\n') ? i + 2 : i + 1;
    default:
      if (tmpl && s[i] >= '1' && s[i] <= '9') mlsys__cc_fail(p, st, "octal escape in template");
      if (tmpl && s[i] == '0' && i + 1 < p->n && s[i + 1] >= '0' && s[i + 1] <= '9')
        mlsys__cc_fail(p, st, "octal escape in template");
      {
        int len = mlsys__cc_utf8(s, p->n, i, &cp);
        if (!len) mlsys__cc_fail(p, i, "invalid UTF-8");
        return i + (uint32_t)len;
      }
  }
}
static void mlsys__cc_scan_string(mlsys__cc_p *p) {
  const char *s = p->s;
  char q = s[p->pos];
  uint32_t i = p->pos + 1, cp;
  for (;;) {
    if (i >= p->n) mlsys__cc_fail(p, p->t.start, "unterminated string");
    if (s[i] == q) { i++; break; }
    if (s[i] == '\\') { i = mlsys__cc_escape(p, i, 0); continue; }
    if (s[i] == '\n' || s[i] == '\r') mlsys__cc_fail(p, p->t.start, "unterminated string");
    if ((unsigned char)s[i] >= 0x80) {
      int len = mlsys__cc_utf8(s, p->n, i, &cp);
      if (!len) mlsys__cc_fail(p, i, "invalid UTF-8");
      i += (uint32_t)len;
    } else {
      i++;
    }
  }
  p->t.type = MLSYS_CONTRACODE_TOK_STRING;
  p->t.end = p->pos = i;
}
/* A template piece starting at the ` or } at p->pos, up to and including ` or ${. */
static void mlsys__cc_scan_template(mlsys__cc_p *p) {
  const char *s = p->s;
  uint32_t i = p->pos + 1, cp;
  p->t.start = p->pos;
  for (;;) {
    if (i >= p->n) mlsys__cc_fail(p, p->t.start, "unterminated template literal");
    if (s[i] == '`') { i++; p->t.tail = 1; break; }
    if (s[i] == '$' && i + 1 < p->n && s[i + 1] == '{') { i += 2; p->t.tail = 0; break; }
    if (s[i] == '\\') { i = mlsys__cc_escape(p, i, 1); continue; }
    if ((unsigned char)s[i] >= 0x80) {
      int len = mlsys__cc_utf8(s, p->n, i, &cp);
      if (!len) mlsys__cc_fail(p, i, "invalid UTF-8");
      i += (uint32_t)len;
    } else {
      i++;
    }
  }
  p->t.type = MLSYS_CONTRACODE_TOK_TEMPLATE;
  p->t.end = p->pos = i;
}
/* A regular expression literal from the / at t.start (the parser asks when an expression may start here). */
static void mlsys__cc_scan_regex(mlsys__cc_p *p) {
  const char *s = p->s;
  uint32_t i = p->t.start + 1, cp;
  int cls = 0, seen[128] = {0};
  for (;;) {
    unsigned char c;
    if (i >= p->n) mlsys__cc_fail(p, p->t.start, "unterminated regular expression");
    c = (unsigned char)s[i];
    if (c == '\n' || c == '\r') mlsys__cc_fail(p, p->t.start, "unterminated regular expression");
    if (c == '\\') {
      i++;
      if (i >= p->n || s[i] == '\n' || s[i] == '\r') mlsys__cc_fail(p, p->t.start, "unterminated regular expression");
    } else if (c == '[') {
      cls = 1;
    } else if (c == ']') {
      cls = 0;
    } else if (c == '/' && !cls) {
      i++;
      break;
    }
    if ((unsigned char)s[i] >= 0x80) {
      int len = mlsys__cc_utf8(s, p->n, i, &cp);
      if (!len) mlsys__cc_fail(p, i, "invalid UTF-8");
      if (cp == 0x2028 || cp == 0x2029) mlsys__cc_fail(p, p->t.start, "unterminated regular expression");
      i += (uint32_t)len;
    } else {
      i++;
    }
  }
  while (i < p->n) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x80 || c == '\\' || !mlsys__cc_id_part(c)) {
      if (c == '\\' || (c >= 0x80 && mlsys__cc_utf8(s, p->n, i, &cp) && mlsys__cc_id_part(cp)))
        mlsys__cc_fail(p, i, "invalid regular expression flag");
      break;
    }
    if (!strchr("dgimsuy", c) || seen[c]) mlsys__cc_fail(p, i, "invalid regular expression flag '%c'", c);
    seen[c] = 1;
    i++;
  }
  p->t.type = MLSYS_CONTRACODE_TOK_REGEX;
  p->t.end = p->pos = i;
}

static void mlsys__cc_scan_punct(mlsys__cc_p *p) {
  const char *s = p->s + p->pos;
  uint32_t left = p->n - p->pos;
  int op = 0, len = 1;
#define MLSYS__CC_AT(k, ch) ((uint32_t)(k) < left && s[k] == (ch))
  switch (s[0]) {
    case '{': op = MLSYS__CC_P_LBRACE; break;
    case '}': op = MLSYS__CC_P_RBRACE; break;
    case '(': op = MLSYS__CC_P_LPAREN; break;
    case ')': op = MLSYS__CC_P_RPAREN; break;
    case '[': op = MLSYS__CC_P_LBRACK; break;
    case ']': op = MLSYS__CC_P_RBRACK; break;
    case ';': op = MLSYS__CC_P_SEMI; break;
    case ',': op = MLSYS__CC_P_COMMA; break;
    case ':': op = MLSYS__CC_P_COLON; break;
    case '~': op = MLSYS__CC_P_TILDE; break;
    case '.':
      if (MLSYS__CC_AT(1, '.') && MLSYS__CC_AT(2, '.')) { op = MLSYS__CC_P_ELLIPSIS; len = 3; }
      else op = MLSYS__CC_P_DOT;
      break;
    case '<':
      if (MLSYS__CC_AT(1, '<')) { if (MLSYS__CC_AT(2, '=')) { op = MLSYS__CC_P_SHL_A; len = 3; } else { op = MLSYS__CC_P_SHL; len = 2; } }
      else if (MLSYS__CC_AT(1, '=')) { op = MLSYS__CC_P_LE; len = 2; }
      else op = MLSYS__CC_P_LT;
      break;
    case '>':
      if (MLSYS__CC_AT(1, '>')) {
        if (MLSYS__CC_AT(2, '>')) { if (MLSYS__CC_AT(3, '=')) { op = MLSYS__CC_P_USHR_A; len = 4; } else { op = MLSYS__CC_P_USHR; len = 3; } }
        else if (MLSYS__CC_AT(2, '=')) { op = MLSYS__CC_P_SHR_A; len = 3; }
        else { op = MLSYS__CC_P_SHR; len = 2; }
      } else if (MLSYS__CC_AT(1, '=')) { op = MLSYS__CC_P_GE; len = 2; }
      else op = MLSYS__CC_P_GT;
      break;
    case '=':
      if (MLSYS__CC_AT(1, '=')) { if (MLSYS__CC_AT(2, '=')) { op = MLSYS__CC_P_SEQ; len = 3; } else { op = MLSYS__CC_P_EQ; len = 2; } }
      else if (MLSYS__CC_AT(1, '>')) { op = MLSYS__CC_P_ARROW; len = 2; }
      else op = MLSYS__CC_P_ASSIGN;
      break;
    case '!':
      if (MLSYS__CC_AT(1, '=')) { if (MLSYS__CC_AT(2, '=')) { op = MLSYS__CC_P_SNE; len = 3; } else { op = MLSYS__CC_P_NE; len = 2; } }
      else op = MLSYS__CC_P_BANG;
      break;
    case '+':
      if (MLSYS__CC_AT(1, '+')) { op = MLSYS__CC_P_INC; len = 2; }
      else if (MLSYS__CC_AT(1, '=')) { op = MLSYS__CC_P_ADD_A; len = 2; }
      else op = MLSYS__CC_P_PLUS;
      break;
    case '-':
      if (MLSYS__CC_AT(1, '-')) { op = MLSYS__CC_P_DEC; len = 2; }
      else if (MLSYS__CC_AT(1, '=')) { op = MLSYS__CC_P_SUB_A; len = 2; }
      else op = MLSYS__CC_P_MINUS;
      break;
    case '*':
      if (MLSYS__CC_AT(1, '*')) { if (MLSYS__CC_AT(2, '=')) { op = MLSYS__CC_P_EXP_A; len = 3; } else { op = MLSYS__CC_P_STARSTAR; len = 2; } }
      else if (MLSYS__CC_AT(1, '=')) { op = MLSYS__CC_P_MUL_A; len = 2; }
      else op = MLSYS__CC_P_STAR;
      break;
    case '/':
      if (MLSYS__CC_AT(1, '=')) { op = MLSYS__CC_P_DIV_A; len = 2; } else op = MLSYS__CC_P_SLASH;
      break;
    case '%':
      if (MLSYS__CC_AT(1, '=')) { op = MLSYS__CC_P_MOD_A; len = 2; } else op = MLSYS__CC_P_PERCENT;
      break;
    case '&':
      if (MLSYS__CC_AT(1, '&')) { if (MLSYS__CC_AT(2, '=')) { op = MLSYS__CC_P_LAND_A; len = 3; } else { op = MLSYS__CC_P_AND; len = 2; } }
      else if (MLSYS__CC_AT(1, '=')) { op = MLSYS__CC_P_AND_A; len = 2; }
      else op = MLSYS__CC_P_AMP;
      break;
    case '|':
      if (MLSYS__CC_AT(1, '|')) { if (MLSYS__CC_AT(2, '=')) { op = MLSYS__CC_P_LOR_A; len = 3; } else { op = MLSYS__CC_P_OR; len = 2; } }
      else if (MLSYS__CC_AT(1, '=')) { op = MLSYS__CC_P_OR_A; len = 2; }
      else op = MLSYS__CC_P_PIPE;
      break;
    case '^':
      if (MLSYS__CC_AT(1, '=')) { op = MLSYS__CC_P_XOR_A; len = 2; } else op = MLSYS__CC_P_CARET;
      break;
    case '?':
      if (MLSYS__CC_AT(1, '?')) { if (MLSYS__CC_AT(2, '=')) { op = MLSYS__CC_P_NULL_A; len = 3; } else { op = MLSYS__CC_P_NULLISH; len = 2; } }
      else if (MLSYS__CC_AT(1, '.') && !(left > 2 && s[2] >= '0' && s[2] <= '9')) { op = MLSYS__CC_P_QDOT; len = 2; }
      else op = MLSYS__CC_P_QUESTION;
      break;
    default: break;
  }
#undef MLSYS__CC_AT
  if (!op) {
    unsigned char c = (unsigned char)s[0];
    if (c >= 0x20 && c < 0x7F) mlsys__cc_fail(p, p->pos, "unexpected character '%c'", c);
    mlsys__cc_fail(p, p->pos, "unexpected character (byte 0x%02X)", c);
  }
  p->t.type = MLSYS_CONTRACODE_TOK_PUNCT;
  p->t.op = (uint8_t)op;
  p->pos += (uint32_t)len;
  p->t.end = p->pos;
}

/* Scans the next token into p->t ('/' is always a punctuator here; the parser re-scans it as a regex). */
static void mlsys__cc_lex(mlsys__cc_p *p) {
  uint32_t cp;
  unsigned char c;
  memset(&p->t, 0, sizeof p->t);
  mlsys__cc_skip_space(p);
  p->t.start = p->t.end = p->pos;
  if (p->pos >= p->n) return;
  c = (unsigned char)p->s[p->pos];
  if ((c >= '0' && c <= '9') || (c == '.' && p->pos + 1 < p->n && p->s[p->pos + 1] >= '0' && p->s[p->pos + 1] <= '9')) {
    mlsys__cc_scan_number(p);
  } else if (c == '"' || c == '\'') {
    mlsys__cc_scan_string(p);
  } else if (c == '`') {
    mlsys__cc_scan_template(p);
  } else if (c == '\\' || (c < 0x80 && mlsys__cc_id_start(c))) {
    mlsys__cc_scan_name(p);
  } else if (c == '#' && p->pos + 1 < p->n &&
             (p->s[p->pos + 1] == '\\' || (mlsys__cc_utf8(p->s, p->n, p->pos + 1, &cp) && mlsys__cc_id_start(cp)))) {
    p->pos++;
    mlsys__cc_scan_name(p);
    p->t.type = MLSYS_CONTRACODE_TOK_PRIVATE;
    p->t.kw = 0;
  } else if (c >= 0x80) {
    if (!mlsys__cc_utf8(p->s, p->n, p->pos, &cp)) mlsys__cc_fail(p, p->pos, "invalid UTF-8");
    if (!mlsys__cc_id_start(cp)) mlsys__cc_fail(p, p->pos, "unexpected character U+%04X", (unsigned)cp);
    mlsys__cc_scan_name(p);
  } else {
    mlsys__cc_scan_punct(p);
  }
}

/* ---- parser ---- */
#define MLSYS__CC_N(p, i) ((p)->ast->nodes[i])
typedef mlsys_contracode_js_node mlsys__cc_node;
/* the node array may move while v is computed, so v is evaluated before the node is addressed */
#define MLSYS__CC_SET(p, x, f, v) do { int v__ = (v); MLSYS__CC_N(p, x).f = v__; } while (0)

static int mlsys__cc_new(mlsys__cc_p *p, int kind, uint32_t start) {
  mlsys_contracode_js_ast *a = p->ast;
  mlsys__cc_node *nd;
  if (a->nnodes == a->cap) {
    int nc = a->cap ? a->cap * 2 : 256;
    mlsys__cc_node *nn = (mlsys__cc_node *)realloc(a->nodes, (size_t)nc * sizeof *nn);
    if (!nn) mlsys__cc_nomem(p);
    a->nodes = nn;
    a->cap = nc;
  }
  nd = &a->nodes[a->nnodes];
  memset(nd, 0, sizeof *nd);
  nd->kind = (uint16_t)kind;
  nd->start = start;
  nd->end = start;
  return a->nnodes++;
}
static int mlsys__cc_fin(mlsys__cc_p *p, int i) {
  MLSYS__CC_N(p, i).end = p->prev_end;
  return i;
}
static void mlsys__cc_enter(mlsys__cc_p *p) {
  if (++p->depth > MLSYS_CONTRACODE_JS_MAX_DEPTH)
    mlsys__cc_fail(p, p->t.start, "nesting deeper than %d", MLSYS_CONTRACODE_JS_MAX_DEPTH);
}

static void mlsys__cc_next(mlsys__cc_p *p) {
  if (p->keep_tokens && p->t.type) {
    mlsys_contracode_js_ast *a = p->ast;
    if (a->ntokens == p->tok_cap) {
      int nc = p->tok_cap ? p->tok_cap * 2 : 256;
      mlsys_contracode_js_token *nt = (mlsys_contracode_js_token *)realloc(a->tokens, (size_t)nc * sizeof *nt);
      if (!nt) mlsys__cc_nomem(p);
      a->tokens = nt;
      p->tok_cap = nc;
    }
    a->tokens[a->ntokens].kind = p->t.type;
    a->tokens[a->ntokens].flags = p->t.nl ? MLSYS_CONTRACODE_TOK_NEWLINE_BEFORE : 0;
    a->tokens[a->ntokens].start = p->t.start;
    a->tokens[a->ntokens].end = p->t.end;
    a->ntokens++;
  }
  p->prev_end = p->t.end;
  mlsys__cc_lex(p);
}
/* The token after the current one (scanned with '/' as a punctuator), leaving the state unchanged. */
static mlsys__cc_tok mlsys__cc_peek(mlsys__cc_p *p) {
  mlsys__cc_tok save = p->t, r;
  uint32_t pos = p->pos;
  mlsys__cc_lex(p);
  r = p->t;
  p->t = save;
  p->pos = pos;
  return r;
}
static int mlsys__cc_is(mlsys__cc_p *p, int op) { return p->t.type == MLSYS_CONTRACODE_TOK_PUNCT && p->t.op == op; }
static int mlsys__cc_iskw(mlsys__cc_p *p, int kw) { return p->t.type == MLSYS_CONTRACODE_TOK_KEYWORD && p->t.kw == kw; }
static int mlsys__cc_tok_is_name(const mlsys__cc_p *p, const mlsys__cc_tok *t, const char *w) {
  size_t l = strlen(w);
  return t->type == MLSYS_CONTRACODE_TOK_NAME && !t->esc && t->end - t->start == l && !memcmp(p->s + t->start, w, l);
}
static int mlsys__cc_isname(mlsys__cc_p *p, const char *w) { return mlsys__cc_tok_is_name(p, &p->t, w); }
static int mlsys__cc_eat(mlsys__cc_p *p, int op) {
  if (!mlsys__cc_is(p, op)) return 0;
  mlsys__cc_next(p);
  return 1;
}
static void mlsys__cc_unexpected(mlsys__cc_p *p) {
  if (!p->t.type) mlsys__cc_fail(p, p->t.start, "unexpected end of input");
  mlsys__cc_fail(p, p->t.start, "unexpected token '%.*s'", (int)(p->t.end - p->t.start > 20 ? 20 : p->t.end - p->t.start),
                 p->s + p->t.start);
}
static void mlsys__cc_expect(mlsys__cc_p *p, int op) {
  if (!mlsys__cc_eat(p, op)) {
    if (!p->t.type) mlsys__cc_fail(p, p->t.start, "expected '%s' before end of input", mlsys__cc_ops[op]);
    mlsys__cc_fail(p, p->t.start, "expected '%s', got '%.*s'", mlsys__cc_ops[op],
                   (int)(p->t.end - p->t.start > 20 ? 20 : p->t.end - p->t.start), p->s + p->t.start);
  }
}
/* Automatic semicolon insertion: `;`, or before `}`, at the end, or after a line break. */
static void mlsys__cc_semicolon(mlsys__cc_p *p) {
  if (mlsys__cc_eat(p, MLSYS__CC_P_SEMI)) return;
  if (mlsys__cc_is(p, MLSYS__CC_P_RBRACE) || !p->t.type || p->t.nl) return;
  mlsys__cc_fail(p, p->t.start, "expected ';' (or a line break) before '%.*s'",
                 (int)(p->t.end - p->t.start > 20 ? 20 : p->t.end - p->t.start), p->s + p->t.start);
}
static int mlsys__cc_can_insert_semi(mlsys__cc_p *p) {
  return !p->t.type || mlsys__cc_is(p, MLSYS__CC_P_RBRACE) || p->t.nl;
}

typedef struct { int head, tail; } mlsys__cc_list;
static void mlsys__cc_push(mlsys__cc_p *p, mlsys__cc_list *l, int x) {
  if (l->tail) MLSYS__CC_N(p, l->tail).next = x;
  else l->head = x;
  l->tail = x;
}

static int mlsys__cc_ident_node(mlsys__cc_p *p) {
  int id = mlsys__cc_new(p, p->t.type == MLSYS_CONTRACODE_TOK_PRIVATE ? MLSYS_CONTRACODE_JS_PRIVATE_IDENTIFIER
                                                                     : MLSYS_CONTRACODE_JS_IDENTIFIER, p->t.start);
  MLSYS__CC_N(p, id).str = p->t.start;
  MLSYS__CC_N(p, id).slen = p->t.end - p->t.start;
  if (p->t.esc) MLSYS__CC_N(p, id).flags |= MLSYS_CONTRACODE_JS_F_ESCAPED;
  mlsys__cc_next(p);
  return mlsys__cc_fin(p, id);
}
/* A binding or reference name: a NAME token that is not a contextual keyword in the current context. */
static int mlsys__cc_ident(mlsys__cc_p *p) {
  if (p->t.type == MLSYS_CONTRACODE_TOK_KEYWORD)
    mlsys__cc_fail(p, p->t.start, "unexpected keyword '%s'", mlsys__cc_kw[p->t.kw]);
  if (p->t.type != MLSYS_CONTRACODE_TOK_NAME) mlsys__cc_unexpected(p);
  if ((p->in_generator && mlsys__cc_isname(p, "yield")) || ((p->in_async || p->module) && mlsys__cc_isname(p, "await")))
    mlsys__cc_fail(p, p->t.start, "'%.*s' cannot be an identifier here", (int)(p->t.end - p->t.start), p->s + p->t.start);
  return mlsys__cc_ident_node(p);
}
/* An IdentifierName (after `.`, keys, export names): keywords allowed. */
static int mlsys__cc_ident_name(mlsys__cc_p *p) {
  if (p->t.type != MLSYS_CONTRACODE_TOK_NAME && p->t.type != MLSYS_CONTRACODE_TOK_KEYWORD) mlsys__cc_unexpected(p);
  return mlsys__cc_ident_node(p);
}
/* After `.` or `?.`: an IdentifierName or (inside a class) a #name. */
static int mlsys__cc_member_name(mlsys__cc_p *p) {
  if (p->t.type == MLSYS_CONTRACODE_TOK_PRIVATE) {
    if (!p->class_depth) mlsys__cc_fail(p, p->t.start, "private name outside a class");
    return mlsys__cc_ident_node(p);
  }
  return mlsys__cc_ident_name(p);
}

static int mlsys__cc_expression(mlsys__cc_p *p, int no_in);
static int mlsys__cc_assign(mlsys__cc_p *p, int no_in);
static int mlsys__cc_statement(mlsys__cc_p *p, int top);
static int mlsys__cc_function(mlsys__cc_p *p, int kind, uint32_t start, int is_async, int stmt_default);
static int mlsys__cc_class(mlsys__cc_p *p, int kind, int stmt_default);
static int mlsys__cc_unary(mlsys__cc_p *p);
static int mlsys__cc_subscripts(mlsys__cc_p *p, int base, uint32_t start, int no_calls);
static int mlsys__cc_binding_atom(mlsys__cc_p *p);
static int mlsys__cc_fn_body(mlsys__cc_p *p);
static int mlsys__cc_block(mlsys__cc_p *p);

/* Expression → pattern (the cover grammar of assignment targets and arrow parameters). */
static void mlsys__cc_to_assignable(mlsys__cc_p *p, int x, int binding) {
  int k = MLSYS__CC_N(p, x).kind, c;
  mlsys__cc_enter(p);
  switch (k) {
    case MLSYS_CONTRACODE_JS_IDENTIFIER: break;
    case MLSYS_CONTRACODE_JS_MEMBER_EXPRESSION:
      if (binding) mlsys__cc_fail(p, MLSYS__CC_N(p, x).start, "invalid binding pattern");
      break;
    case MLSYS_CONTRACODE_JS_OBJECT_EXPRESSION:
    case MLSYS_CONTRACODE_JS_ARRAY_EXPRESSION:
      if (MLSYS__CC_N(p, x).flags & MLSYS_CONTRACODE_JS_F_PAREN)
        mlsys__cc_fail(p, MLSYS__CC_N(p, x).start, "parenthesized pattern");
      MLSYS__CC_N(p, x).kind = (uint16_t)(k == MLSYS_CONTRACODE_JS_OBJECT_EXPRESSION ? MLSYS_CONTRACODE_JS_OBJECT_PATTERN
                                                                                   : MLSYS_CONTRACODE_JS_ARRAY_PATTERN);
      for (c = MLSYS__CC_N(p, x).a; c; c = MLSYS__CC_N(p, c).next) {
        int ck = MLSYS__CC_N(p, c).kind;
        if (ck == MLSYS_CONTRACODE_JS_SPREAD_ELEMENT) {
          if (MLSYS__CC_N(p, c).next) mlsys__cc_fail(p, MLSYS__CC_N(p, c).start, "rest element must be last");
          if (MLSYS__CC_N(p, c).flags & MLSYS_CONTRACODE_JS_F_TAIL)
            mlsys__cc_fail(p, MLSYS__CC_N(p, c).start, "comma after rest element");
          MLSYS__CC_N(p, c).kind = MLSYS_CONTRACODE_JS_REST_ELEMENT;
          if (MLSYS__CC_N(p, MLSYS__CC_N(p, c).a).kind == MLSYS_CONTRACODE_JS_ASSIGNMENT_EXPRESSION)
            mlsys__cc_fail(p, MLSYS__CC_N(p, c).start, "rest element cannot have a default");
          mlsys__cc_to_assignable(p, MLSYS__CC_N(p, c).a, binding);
        } else if (ck == MLSYS_CONTRACODE_JS_PROPERTY) {
          if (MLSYS__CC_N(p, c).op != MLSYS_CONTRACODE_JS_PROP_INIT || (MLSYS__CC_N(p, c).flags & MLSYS_CONTRACODE_JS_F_METHOD))
            mlsys__cc_fail(p, MLSYS__CC_N(p, c).start, "method in a destructuring pattern");
          MLSYS__CC_N(p, c).flags &= (uint16_t)~MLSYS_CONTRACODE_JS_F_COVER;
          mlsys__cc_to_assignable(p, MLSYS__CC_N(p, c).b, binding);
        } else if (ck != MLSYS_CONTRACODE_JS_HOLE) {
          mlsys__cc_to_assignable(p, c, binding);
        }
      }
      break;
    case MLSYS_CONTRACODE_JS_ASSIGNMENT_EXPRESSION:
      if (MLSYS__CC_N(p, x).op != MLSYS__CC_P_ASSIGN || (MLSYS__CC_N(p, x).flags & MLSYS_CONTRACODE_JS_F_PAREN))
        mlsys__cc_fail(p, MLSYS__CC_N(p, x).start, "invalid destructuring target");
      MLSYS__CC_N(p, x).kind = MLSYS_CONTRACODE_JS_ASSIGNMENT_PATTERN;
      mlsys__cc_to_assignable(p, MLSYS__CC_N(p, x).a, binding);
      break;
    case MLSYS_CONTRACODE_JS_ASSIGNMENT_PATTERN:
    case MLSYS_CONTRACODE_JS_OBJECT_PATTERN:
    case MLSYS_CONTRACODE_JS_ARRAY_PATTERN:
    case MLSYS_CONTRACODE_JS_REST_ELEMENT:
      break;
    default: mlsys__cc_fail(p, MLSYS__CC_N(p, x).start, "invalid assignment target");
  }
  p->depth--;
}
static void mlsys__cc_check_simple_target(mlsys__cc_p *p, int x) {
  int k = MLSYS__CC_N(p, x).kind;
  if (k != MLSYS_CONTRACODE_JS_IDENTIFIER && k != MLSYS_CONTRACODE_JS_MEMBER_EXPRESSION)
    mlsys__cc_fail(p, MLSYS__CC_N(p, x).start, "invalid assignment target");
}

static int mlsys__cc_literal(mlsys__cc_p *p, int lk) {
  int x = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_LITERAL, p->t.start);
  MLSYS__CC_N(p, x).op = (uint8_t)lk;
  MLSYS__CC_N(p, x).str = p->t.start;
  MLSYS__CC_N(p, x).slen = p->t.end - p->t.start;
  mlsys__cc_next(p);
  return mlsys__cc_fin(p, x);
}
/* Property key: name, string, number, or [computed]; sets COMPUTED on owner. */
static int mlsys__cc_prop_key(mlsys__cc_p *p, int owner) {
  int k;
  switch (p->t.type) {
    case MLSYS_CONTRACODE_TOK_STRING: return mlsys__cc_literal(p, MLSYS_CONTRACODE_JS_LIT_STRING);
    case MLSYS_CONTRACODE_TOK_NUMBER: return mlsys__cc_literal(p, MLSYS_CONTRACODE_JS_LIT_NUMBER);
    case MLSYS_CONTRACODE_TOK_BIGINT: return mlsys__cc_literal(p, MLSYS_CONTRACODE_JS_LIT_BIGINT);
    case MLSYS_CONTRACODE_TOK_NAME: case MLSYS_CONTRACODE_TOK_KEYWORD: return mlsys__cc_ident_name(p);
    case MLSYS_CONTRACODE_TOK_PRIVATE:
      if (MLSYS__CC_N(p, owner).kind != MLSYS_CONTRACODE_JS_METHOD_DEFINITION) mlsys__cc_unexpected(p);
      return mlsys__cc_ident_node(p);
    default: break;
  }
  if (mlsys__cc_eat(p, MLSYS__CC_P_LBRACK)) {
    k = mlsys__cc_assign(p, 0);
    mlsys__cc_expect(p, MLSYS__CC_P_RBRACK);
    MLSYS__CC_N(p, owner).flags |= MLSYS_CONTRACODE_JS_F_COMPUTED;
    return k;
  }
  mlsys__cc_unexpected(p);
  return 0;
}
/* Whether the current token can start a property key (after get/set/async/static/'*'). */
static int mlsys__cc_key_start(mlsys__cc_p *p) {
  return p->t.type == MLSYS_CONTRACODE_TOK_NAME || p->t.type == MLSYS_CONTRACODE_TOK_KEYWORD ||
         p->t.type == MLSYS_CONTRACODE_TOK_STRING || p->t.type == MLSYS_CONTRACODE_TOK_NUMBER ||
         p->t.type == MLSYS_CONTRACODE_TOK_BIGINT || p->t.type == MLSYS_CONTRACODE_TOK_PRIVATE || mlsys__cc_is(p, MLSYS__CC_P_LBRACK) ||
         mlsys__cc_is(p, MLSYS__CC_P_STAR);
}

/* params `(...)` into node fn (b = list); the function context must already be set. */
static void mlsys__cc_params(mlsys__cc_p *p, int fn) {
  mlsys__cc_list l = {0, 0};
  mlsys__cc_expect(p, MLSYS__CC_P_LPAREN);
  while (!mlsys__cc_is(p, MLSYS__CC_P_RPAREN)) {
    int x;
    if (mlsys__cc_is(p, MLSYS__CC_P_ELLIPSIS)) {
      uint32_t st = p->t.start;
      mlsys__cc_next(p);
      x = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_REST_ELEMENT, st);
      MLSYS__CC_SET(p, x, a, mlsys__cc_binding_atom(p));
      mlsys__cc_fin(p, x);
      mlsys__cc_push(p, &l, x);
      if (!mlsys__cc_is(p, MLSYS__CC_P_RPAREN)) mlsys__cc_fail(p, p->t.start, "rest parameter must be last");
      break;
    }
    x = mlsys__cc_binding_atom(p);
    if (mlsys__cc_is(p, MLSYS__CC_P_ASSIGN)) {
      int ap = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_ASSIGNMENT_PATTERN, MLSYS__CC_N(p, x).start);
      mlsys__cc_next(p);
      MLSYS__CC_N(p, ap).a = x;
      MLSYS__CC_SET(p, ap, b, mlsys__cc_assign(p, 0));
      MLSYS__CC_N(p, ap).op = MLSYS__CC_P_ASSIGN;
      x = mlsys__cc_fin(p, ap);
    }
    mlsys__cc_push(p, &l, x);
    if (!mlsys__cc_is(p, MLSYS__CC_P_RPAREN)) mlsys__cc_expect(p, MLSYS__CC_P_COMMA);
  }
  mlsys__cc_expect(p, MLSYS__CC_P_RPAREN);
  MLSYS__CC_N(p, fn).b = l.head;
}

/* Binding patterns (declarations, parameters, catch). */
static int mlsys__cc_binding_elem(mlsys__cc_p *p) {
  int x = mlsys__cc_binding_atom(p);
  if (mlsys__cc_is(p, MLSYS__CC_P_ASSIGN)) {
    int ap = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_ASSIGNMENT_PATTERN, MLSYS__CC_N(p, x).start);
    mlsys__cc_next(p);
    MLSYS__CC_N(p, ap).a = x;
    MLSYS__CC_N(p, ap).op = MLSYS__CC_P_ASSIGN;
    MLSYS__CC_SET(p, ap, b, mlsys__cc_assign(p, 0));
    x = mlsys__cc_fin(p, ap);
  }
  return x;
}
static int mlsys__cc_binding_atom(mlsys__cc_p *p) {
  uint32_t st = p->t.start;
  int x;
  mlsys__cc_list l = {0, 0};
  if (mlsys__cc_is(p, MLSYS__CC_P_LBRACK)) {
    mlsys__cc_enter(p);
    x = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_ARRAY_PATTERN, st);
    mlsys__cc_next(p);
    while (!mlsys__cc_is(p, MLSYS__CC_P_RBRACK)) {
      int e;
      if (mlsys__cc_is(p, MLSYS__CC_P_COMMA)) {
        e = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_HOLE, p->t.start);
        mlsys__cc_push(p, &l, e);
        mlsys__cc_next(p);
        continue;
      }
      if (mlsys__cc_is(p, MLSYS__CC_P_ELLIPSIS)) {
        e = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_REST_ELEMENT, p->t.start);
        mlsys__cc_next(p);
        MLSYS__CC_SET(p, e, a, mlsys__cc_binding_atom(p));
        mlsys__cc_push(p, &l, mlsys__cc_fin(p, e));
        if (!mlsys__cc_is(p, MLSYS__CC_P_RBRACK)) mlsys__cc_fail(p, p->t.start, "rest element must be last");
        break;
      }
      mlsys__cc_push(p, &l, mlsys__cc_binding_elem(p));
      if (!mlsys__cc_is(p, MLSYS__CC_P_RBRACK)) mlsys__cc_expect(p, MLSYS__CC_P_COMMA);
    }
    mlsys__cc_expect(p, MLSYS__CC_P_RBRACK);
    MLSYS__CC_N(p, x).a = l.head;
    p->depth--;
    return mlsys__cc_fin(p, x);
  }
  if (mlsys__cc_is(p, MLSYS__CC_P_LBRACE)) {
    mlsys__cc_enter(p);
    x = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_OBJECT_PATTERN, st);
    mlsys__cc_next(p);
    while (!mlsys__cc_is(p, MLSYS__CC_P_RBRACE)) {
      int pr;
      if (mlsys__cc_is(p, MLSYS__CC_P_ELLIPSIS)) {
        pr = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_REST_ELEMENT, p->t.start);
        mlsys__cc_next(p);
        MLSYS__CC_SET(p, pr, a, mlsys__cc_ident(p));
        mlsys__cc_push(p, &l, mlsys__cc_fin(p, pr));
        if (!mlsys__cc_is(p, MLSYS__CC_P_RBRACE)) mlsys__cc_fail(p, p->t.start, "rest element must be last");
        break;
      }
      pr = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_PROPERTY, p->t.start);
      MLSYS__CC_N(p, pr).op = MLSYS_CONTRACODE_JS_PROP_INIT;
      if (p->t.type == MLSYS_CONTRACODE_TOK_NAME) {
        mlsys__cc_tok nt = mlsys__cc_peek(p);
        if (!(nt.type == MLSYS_CONTRACODE_TOK_PUNCT && nt.op == MLSYS__CC_P_COLON)) {
          int id = mlsys__cc_ident(p), v = id;
          MLSYS__CC_N(p, pr).flags |= MLSYS_CONTRACODE_JS_F_SHORTHAND;
          MLSYS__CC_N(p, pr).a = id;
          if (mlsys__cc_is(p, MLSYS__CC_P_ASSIGN)) {
            int ap = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_ASSIGNMENT_PATTERN, MLSYS__CC_N(p, id).start);
            int id2 = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_IDENTIFIER, MLSYS__CC_N(p, id).start);
            MLSYS__CC_N(p, id2) = MLSYS__CC_N(p, id);
            MLSYS__CC_N(p, id2).next = 0;
            mlsys__cc_next(p);
            MLSYS__CC_N(p, ap).a = id2;
            MLSYS__CC_N(p, ap).op = MLSYS__CC_P_ASSIGN;
            MLSYS__CC_SET(p, ap, b, mlsys__cc_assign(p, 0));
            v = mlsys__cc_fin(p, ap);
          } else {
            v = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_IDENTIFIER, MLSYS__CC_N(p, id).start);
            MLSYS__CC_N(p, v) = MLSYS__CC_N(p, id);
            MLSYS__CC_N(p, v).next = 0;
          }
          MLSYS__CC_N(p, pr).b = v;
          mlsys__cc_push(p, &l, mlsys__cc_fin(p, pr));
          if (!mlsys__cc_is(p, MLSYS__CC_P_RBRACE)) mlsys__cc_expect(p, MLSYS__CC_P_COMMA);
          continue;
        }
      }
      MLSYS__CC_SET(p, pr, a, mlsys__cc_prop_key(p, pr));
      mlsys__cc_expect(p, MLSYS__CC_P_COLON);
      MLSYS__CC_SET(p, pr, b, mlsys__cc_binding_elem(p));
      mlsys__cc_push(p, &l, mlsys__cc_fin(p, pr));
      if (!mlsys__cc_is(p, MLSYS__CC_P_RBRACE)) mlsys__cc_expect(p, MLSYS__CC_P_COMMA);
    }
    mlsys__cc_expect(p, MLSYS__CC_P_RBRACE);
    MLSYS__CC_N(p, x).a = l.head;
    p->depth--;
    return mlsys__cc_fin(p, x);
  }
  return mlsys__cc_ident(p);
}

/* Template literal from the current TEMPLATE token. */
static int mlsys__cc_template(mlsys__cc_p *p) {
  int x = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_TEMPLATE_LITERAL, p->t.start);
  mlsys__cc_list q = {0, 0}, e = {0, 0};
  mlsys__cc_enter(p);
  for (;;) {
    int el = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_TEMPLATE_ELEMENT, p->t.start + 1);
    int tail = p->t.tail;
    MLSYS__CC_N(p, el).str = p->t.start + 1;
    MLSYS__CC_N(p, el).slen = p->t.end - p->t.start - (tail ? 2u : 3u);
    MLSYS__CC_N(p, el).end = MLSYS__CC_N(p, el).str + MLSYS__CC_N(p, el).slen;
    if (tail) MLSYS__CC_N(p, el).flags |= MLSYS_CONTRACODE_JS_F_TAIL;
    mlsys__cc_push(p, &q, el);
    mlsys__cc_next(p);
    if (tail) break;
    mlsys__cc_push(p, &e, mlsys__cc_expression(p, 0));
    if (!mlsys__cc_is(p, MLSYS__CC_P_RBRACE)) mlsys__cc_fail(p, p->t.start, "expected '}' in template literal");
    /* re-scan from the } as the continuation of the template */
    p->pos = p->t.start;
    {
      uint8_t nl = p->t.nl;
      memset(&p->t, 0, sizeof p->t);
      p->t.nl = nl;
    }
    mlsys__cc_scan_template(p);
  }
  MLSYS__CC_N(p, x).a = q.head;
  MLSYS__CC_N(p, x).b = e.head;
  p->depth--;
  return mlsys__cc_fin(p, x);
}

static int mlsys__cc_object(mlsys__cc_p *p) {
  int x = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_OBJECT_EXPRESSION, p->t.start);
  mlsys__cc_list l = {0, 0};
  mlsys__cc_next(p);
  while (!mlsys__cc_is(p, MLSYS__CC_P_RBRACE)) {
    int pr, is_async = 0, gen = 0, kind = MLSYS_CONTRACODE_JS_PROP_INIT;
    uint32_t st = p->t.start;
    if (mlsys__cc_is(p, MLSYS__CC_P_ELLIPSIS)) {
      pr = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_SPREAD_ELEMENT, st);
      mlsys__cc_next(p);
      MLSYS__CC_SET(p, pr, a, mlsys__cc_assign(p, 0));
      mlsys__cc_push(p, &l, mlsys__cc_fin(p, pr));
      if (mlsys__cc_is(p, MLSYS__CC_P_COMMA)) {
        mlsys__cc_next(p);
        if (mlsys__cc_is(p, MLSYS__CC_P_RBRACE)) MLSYS__CC_N(p, pr).flags |= MLSYS_CONTRACODE_JS_F_TAIL;
      } else if (!mlsys__cc_is(p, MLSYS__CC_P_RBRACE)) {
        mlsys__cc_expect(p, MLSYS__CC_P_COMMA);
      }
      continue;
    }
    pr = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_PROPERTY, st);
    if (p->t.type == MLSYS_CONTRACODE_TOK_NAME && !p->t.esc) {
      mlsys__cc_tok nt = mlsys__cc_peek(p);
      int modifier = !(nt.type == MLSYS_CONTRACODE_TOK_PUNCT &&
                       (nt.op == MLSYS__CC_P_COMMA || nt.op == MLSYS__CC_P_COLON || nt.op == MLSYS__CC_P_LPAREN ||
                        nt.op == MLSYS__CC_P_RBRACE || nt.op == MLSYS__CC_P_ASSIGN));
      if (modifier && mlsys__cc_isname(p, "async") && !nt.nl) { is_async = 1; mlsys__cc_next(p); }
      else if (modifier && mlsys__cc_isname(p, "get")) { kind = MLSYS_CONTRACODE_JS_PROP_GET; mlsys__cc_next(p); }
      else if (modifier && mlsys__cc_isname(p, "set")) { kind = MLSYS_CONTRACODE_JS_PROP_SET; mlsys__cc_next(p); }
    }
    if (kind == MLSYS_CONTRACODE_JS_PROP_INIT && mlsys__cc_eat(p, MLSYS__CC_P_STAR)) gen = 1;
    if (!mlsys__cc_key_start(p) || mlsys__cc_is(p, MLSYS__CC_P_STAR)) mlsys__cc_unexpected(p);
    MLSYS__CC_SET(p, pr, a, mlsys__cc_prop_key(p, pr));
    MLSYS__CC_N(p, pr).op = (uint8_t)kind;
    if (is_async || gen || kind != MLSYS_CONTRACODE_JS_PROP_INIT || mlsys__cc_is(p, MLSYS__CC_P_LPAREN)) {
      int fn = mlsys__cc_function(p, MLSYS_CONTRACODE_JS_FUNCTION_EXPRESSION, p->t.start,
                                  is_async | (gen ? 2 : 0) | 4 /* method: no name, params now */, 0);
      if (kind == MLSYS_CONTRACODE_JS_PROP_INIT) MLSYS__CC_N(p, pr).flags |= MLSYS_CONTRACODE_JS_F_METHOD;
      MLSYS__CC_N(p, pr).b = fn;
    } else if (mlsys__cc_eat(p, MLSYS__CC_P_COLON)) {
      MLSYS__CC_SET(p, pr, b, mlsys__cc_assign(p, 0));
    } else {
      /* shorthand {a} or cover-initialized {a = 1} (only valid once turned into a pattern) */
      int key = MLSYS__CC_N(p, pr).a, v;
      const mlsys__cc_node *kn = &MLSYS__CC_N(p, key);
      if (kn->kind != MLSYS_CONTRACODE_JS_IDENTIFIER || (MLSYS__CC_N(p, pr).flags & MLSYS_CONTRACODE_JS_F_COMPUTED))
        mlsys__cc_fail(p, st, "expected ':' after property key");
      if (mlsys__cc_keyword(p->s + kn->str, kn->slen) && !(kn->flags & MLSYS_CONTRACODE_JS_F_ESCAPED))
        mlsys__cc_fail(p, st, "keyword '%.*s' cannot be a shorthand property", (int)kn->slen, p->s + kn->str);
      v = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_IDENTIFIER, 0);
      MLSYS__CC_N(p, v) = MLSYS__CC_N(p, key);
      MLSYS__CC_N(p, v).next = 0;
      MLSYS__CC_N(p, pr).flags |= MLSYS_CONTRACODE_JS_F_SHORTHAND;
      if (mlsys__cc_is(p, MLSYS__CC_P_ASSIGN)) {
        int ap = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_ASSIGNMENT_PATTERN, MLSYS__CC_N(p, v).start);
        mlsys__cc_next(p);
        MLSYS__CC_N(p, ap).a = v;
        MLSYS__CC_N(p, ap).op = MLSYS__CC_P_ASSIGN;
        MLSYS__CC_SET(p, ap, b, mlsys__cc_assign(p, 0));
        v = mlsys__cc_fin(p, ap);
        MLSYS__CC_N(p, pr).flags |= MLSYS_CONTRACODE_JS_F_COVER;
      }
      MLSYS__CC_N(p, pr).b = v;
    }
    mlsys__cc_push(p, &l, mlsys__cc_fin(p, pr));
    if (!mlsys__cc_is(p, MLSYS__CC_P_RBRACE)) mlsys__cc_expect(p, MLSYS__CC_P_COMMA);
  }
  mlsys__cc_next(p);
  MLSYS__CC_N(p, x).a = l.head;
  return mlsys__cc_fin(p, x);
}

static int mlsys__cc_array(mlsys__cc_p *p) {
  int x = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_ARRAY_EXPRESSION, p->t.start);
  mlsys__cc_list l = {0, 0};
  mlsys__cc_next(p);
  while (!mlsys__cc_is(p, MLSYS__CC_P_RBRACK)) {
    int e;
    if (mlsys__cc_is(p, MLSYS__CC_P_COMMA)) {
      e = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_HOLE, p->t.start);
      mlsys__cc_push(p, &l, e);
      mlsys__cc_next(p);
      continue;
    }
    if (mlsys__cc_is(p, MLSYS__CC_P_ELLIPSIS)) {
      e = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_SPREAD_ELEMENT, p->t.start);
      mlsys__cc_next(p);
      MLSYS__CC_SET(p, e, a, mlsys__cc_assign(p, 0));
      mlsys__cc_fin(p, e);
    } else {
      e = mlsys__cc_assign(p, 0);
    }
    mlsys__cc_push(p, &l, e);
    if (!mlsys__cc_is(p, MLSYS__CC_P_RBRACK)) {
      mlsys__cc_expect(p, MLSYS__CC_P_COMMA);
      if (mlsys__cc_is(p, MLSYS__CC_P_RBRACK) && MLSYS__CC_N(p, e).kind == MLSYS_CONTRACODE_JS_SPREAD_ELEMENT)
        MLSYS__CC_N(p, e).flags |= MLSYS_CONTRACODE_JS_F_TAIL;   /* [...a,] is no pattern */
    }
  }
  mlsys__cc_next(p);
  MLSYS__CC_N(p, x).a = l.head;
  return mlsys__cc_fin(p, x);
}

/* Arrow function: params already parsed as the list `params` (patterns), current token is `=>`. */
static int mlsys__cc_arrow(mlsys__cc_p *p, uint32_t start, int params, int is_async) {
  int fn = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_ARROW_FUNCTION_EXPRESSION, start);
  int sa = p->in_async, sg = p->in_generator, sf = p->in_function, sl = p->loop_depth, ss = p->switch_depth,
      snl = p->nlabels;
  if (p->t.nl) mlsys__cc_fail(p, p->t.start, "line break before '=>'");
  mlsys__cc_expect(p, MLSYS__CC_P_ARROW);
  MLSYS__CC_N(p, fn).b = params;
  if (is_async) MLSYS__CC_N(p, fn).flags |= MLSYS_CONTRACODE_JS_F_ASYNC;
  p->in_async = is_async;
  p->in_generator = 0;
  if (mlsys__cc_is(p, MLSYS__CC_P_LBRACE)) {
    p->in_function = 1;
    p->loop_depth = p->switch_depth = p->nlabels = 0;
    MLSYS__CC_SET(p, fn, c, mlsys__cc_fn_body(p));
  } else {
    MLSYS__CC_N(p, fn).flags |= MLSYS_CONTRACODE_JS_F_EXPRESSION;
    MLSYS__CC_SET(p, fn, c, mlsys__cc_assign(p, 0));
  }
  p->in_async = sa;
  p->in_generator = sg;
  p->in_function = sf;
  p->loop_depth = sl;
  p->switch_depth = ss;
  p->nlabels = snl;
  return mlsys__cc_fin(p, fn);
}
/* Turns an argument/parenthesized list into parameters. */
static int mlsys__cc_to_params(mlsys__cc_p *p, int list) {
  int c;
  for (c = list; c; c = MLSYS__CC_N(p, c).next) {
    if (MLSYS__CC_N(p, c).kind == MLSYS_CONTRACODE_JS_SPREAD_ELEMENT) {
      if (MLSYS__CC_N(p, c).next) mlsys__cc_fail(p, MLSYS__CC_N(p, c).start, "rest parameter must be last");
      MLSYS__CC_N(p, c).kind = MLSYS_CONTRACODE_JS_REST_ELEMENT;
      mlsys__cc_to_assignable(p, MLSYS__CC_N(p, c).a, 1);
    } else {
      if (MLSYS__CC_N(p, c).flags & MLSYS_CONTRACODE_JS_F_PAREN)
        mlsys__cc_fail(p, MLSYS__CC_N(p, c).start, "parenthesized parameter");
      mlsys__cc_to_assignable(p, c, 1);
    }
  }
  return list;
}
/* Call arguments `(...)`; trailing comma allowed. */
static int mlsys__cc_args(mlsys__cc_p *p, int *trailing) {
  mlsys__cc_list l = {0, 0};
  mlsys__cc_expect(p, MLSYS__CC_P_LPAREN);
  if (trailing) *trailing = 0;
  while (!mlsys__cc_is(p, MLSYS__CC_P_RPAREN)) {
    int e;
    if (mlsys__cc_is(p, MLSYS__CC_P_ELLIPSIS)) {
      e = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_SPREAD_ELEMENT, p->t.start);
      mlsys__cc_next(p);
      MLSYS__CC_SET(p, e, a, mlsys__cc_assign(p, 0));
      mlsys__cc_fin(p, e);
    } else {
      e = mlsys__cc_assign(p, 0);
    }
    mlsys__cc_push(p, &l, e);
    if (!mlsys__cc_is(p, MLSYS__CC_P_RPAREN)) {
      mlsys__cc_expect(p, MLSYS__CC_P_COMMA);
      if (trailing && mlsys__cc_is(p, MLSYS__CC_P_RPAREN)) *trailing = 1;
    }
  }
  mlsys__cc_next(p);
  return l.head;
}

/* `(` in expression position: a parenthesized expression or arrow parameters. */
static int mlsys__cc_paren(mlsys__cc_p *p) {
  uint32_t st = p->t.start;
  mlsys__cc_list l = {0, 0};
  int n = 0, rest = 0, trailing = 0, x;
  mlsys__cc_next(p);
  while (!mlsys__cc_is(p, MLSYS__CC_P_RPAREN)) {
    int e;
    if (mlsys__cc_is(p, MLSYS__CC_P_ELLIPSIS)) {
      e = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_REST_ELEMENT, p->t.start);
      mlsys__cc_next(p);
      MLSYS__CC_SET(p, e, a, mlsys__cc_binding_atom(p));
      mlsys__cc_push(p, &l, mlsys__cc_fin(p, e));
      rest = 1;
      n++;
      if (!mlsys__cc_is(p, MLSYS__CC_P_RPAREN)) mlsys__cc_fail(p, p->t.start, "rest parameter must be last");
      break;
    }
    e = mlsys__cc_assign(p, 0);
    mlsys__cc_push(p, &l, e);
    n++;
    if (!mlsys__cc_is(p, MLSYS__CC_P_RPAREN)) {
      mlsys__cc_expect(p, MLSYS__CC_P_COMMA);
      if (mlsys__cc_is(p, MLSYS__CC_P_RPAREN)) trailing = 1;
    }
  }
  mlsys__cc_next(p);
  if (mlsys__cc_is(p, MLSYS__CC_P_ARROW) && !p->t.nl) return mlsys__cc_arrow(p, st, mlsys__cc_to_params(p, l.head), 0);
  if (n == 0 || rest || trailing) mlsys__cc_fail(p, st, "expected '=>' after arrow parameters");
  if (n == 1) {
    x = l.head;
  } else {
    x = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_SEQUENCE_EXPRESSION, MLSYS__CC_N(p, l.head).start);
    MLSYS__CC_N(p, x).a = l.head;
    MLSYS__CC_N(p, x).end = MLSYS__CC_N(p, l.tail).end;
  }
  MLSYS__CC_N(p, x).flags |= MLSYS_CONTRACODE_JS_F_PAREN;
  return x;
}

static int mlsys__cc_atom(mlsys__cc_p *p) {
  uint32_t st = p->t.start;
  int x;
  switch (p->t.type) {
    case 0: mlsys__cc_unexpected(p); break;
    case MLSYS_CONTRACODE_TOK_NUMBER: return mlsys__cc_literal(p, MLSYS_CONTRACODE_JS_LIT_NUMBER);
    case MLSYS_CONTRACODE_TOK_BIGINT: return mlsys__cc_literal(p, MLSYS_CONTRACODE_JS_LIT_BIGINT);
    case MLSYS_CONTRACODE_TOK_STRING: return mlsys__cc_literal(p, MLSYS_CONTRACODE_JS_LIT_STRING);
    case MLSYS_CONTRACODE_TOK_TEMPLATE: return mlsys__cc_template(p);
    case MLSYS_CONTRACODE_TOK_PRIVATE: {
      mlsys__cc_tok nt = mlsys__cc_peek(p);
      if (!p->class_depth) mlsys__cc_fail(p, st, "private name outside a class");
      if (!(nt.type == MLSYS_CONTRACODE_TOK_KEYWORD && nt.kw == MLSYS__CC_K_IN))
        mlsys__cc_fail(p, st, "a private name must be followed by 'in' here");
      return mlsys__cc_ident_node(p);
    }
    case MLSYS_CONTRACODE_TOK_KEYWORD:
      switch (p->t.kw) {
        case MLSYS__CC_K_THIS:
          x = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_THIS_EXPRESSION, st);
          mlsys__cc_next(p);
          return mlsys__cc_fin(p, x);
        case MLSYS__CC_K_SUPER:
          x = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_SUPER, st);
          mlsys__cc_next(p);
          if (!mlsys__cc_is(p, MLSYS__CC_P_LPAREN) && !mlsys__cc_is(p, MLSYS__CC_P_DOT) && !mlsys__cc_is(p, MLSYS__CC_P_LBRACK))
            mlsys__cc_fail(p, st, "'super' must be followed by '(', '.' or '['");
          return mlsys__cc_fin(p, x);
        case MLSYS__CC_K_NULL: return mlsys__cc_literal(p, MLSYS_CONTRACODE_JS_LIT_NULL);
        case MLSYS__CC_K_TRUE: case MLSYS__CC_K_FALSE: return mlsys__cc_literal(p, MLSYS_CONTRACODE_JS_LIT_BOOLEAN);
        case MLSYS__CC_K_FUNCTION: return mlsys__cc_function(p, MLSYS_CONTRACODE_JS_FUNCTION_EXPRESSION, st, 0, 0);
        case MLSYS__CC_K_CLASS: return mlsys__cc_class(p, MLSYS_CONTRACODE_JS_CLASS_EXPRESSION, 0);
        case MLSYS__CC_K_NEW: {
          int callee;
          mlsys__cc_next(p);
          if (mlsys__cc_is(p, MLSYS__CC_P_DOT)) {
            int meta;
            mlsys__cc_next(p);
            if (!mlsys__cc_isname(p, "target")) mlsys__cc_fail(p, p->t.start, "expected 'target' after 'new.'");
            if (!p->in_function) mlsys__cc_fail(p, st, "'new.target' outside a function");
            x = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_META_PROPERTY, st);
            meta = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_IDENTIFIER, st);
            MLSYS__CC_N(p, meta).str = st;
            MLSYS__CC_N(p, meta).slen = 3;
            MLSYS__CC_N(p, meta).end = st + 3;
            MLSYS__CC_N(p, x).a = meta;
            MLSYS__CC_SET(p, x, b, mlsys__cc_ident_node(p));
            return mlsys__cc_fin(p, x);
          }
          mlsys__cc_enter(p);
          x = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_NEW_EXPRESSION, st);
          if (mlsys__cc_iskw(p, MLSYS__CC_K_IMPORT)) mlsys__cc_fail(p, p->t.start, "cannot use 'new' with import()");
          {
            uint32_t cst = p->t.start;
            callee = mlsys__cc_atom(p);
            callee = mlsys__cc_subscripts(p, callee, cst, 1);
          }
          MLSYS__CC_N(p, x).a = callee;
          if (mlsys__cc_is(p, MLSYS__CC_P_LPAREN)) MLSYS__CC_SET(p, x, b, mlsys__cc_args(p, NULL));
          p->depth--;
          return mlsys__cc_fin(p, x);
        }
        case MLSYS__CC_K_IMPORT: {
          mlsys__cc_tok nt = mlsys__cc_peek(p);
          if (nt.type == MLSYS_CONTRACODE_TOK_PUNCT && nt.op == MLSYS__CC_P_DOT) {
            int meta;
            if (!p->module) mlsys__cc_fail(p, st, "'import.meta' outside a module");
            x = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_META_PROPERTY, st);
            meta = mlsys__cc_ident_name(p);
            mlsys__cc_next(p);
            if (!mlsys__cc_isname(p, "meta")) mlsys__cc_fail(p, p->t.start, "expected 'meta' after 'import.'");
            MLSYS__CC_N(p, x).a = meta;
            MLSYS__CC_SET(p, x, b, mlsys__cc_ident_node(p));
            return mlsys__cc_fin(p, x);
          }
          x = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_IMPORT_EXPRESSION, st);
          mlsys__cc_next(p);
          mlsys__cc_expect(p, MLSYS__CC_P_LPAREN);
          MLSYS__CC_SET(p, x, a, mlsys__cc_assign(p, 0));
          mlsys__cc_expect(p, MLSYS__CC_P_RPAREN);
          return mlsys__cc_fin(p, x);
        }
        default: break;
      }
      mlsys__cc_fail(p, st, "unexpected keyword '%s'", mlsys__cc_kw[p->t.kw]);
      break;
    case MLSYS_CONTRACODE_TOK_NAME: {
      if (mlsys__cc_isname(p, "async") && !p->t.esc) {
        mlsys__cc_tok nt = mlsys__cc_peek(p);
        if (nt.type == MLSYS_CONTRACODE_TOK_KEYWORD && nt.kw == MLSYS__CC_K_FUNCTION && !nt.nl) {
          mlsys__cc_next(p);
          return mlsys__cc_function(p, MLSYS_CONTRACODE_JS_FUNCTION_EXPRESSION, st, 1, 0);
        }
        if (nt.type == MLSYS_CONTRACODE_TOK_NAME && !nt.nl) {
          int id;
          mlsys__cc_next(p);
          id = mlsys__cc_ident(p);
          if (!mlsys__cc_is(p, MLSYS__CC_P_ARROW)) mlsys__cc_fail(p, p->t.start, "expected '=>' after async arrow parameter");
          return mlsys__cc_arrow(p, st, id, 1);
        }
      }
      x = mlsys__cc_ident(p);
      if (mlsys__cc_is(p, MLSYS__CC_P_ARROW) && !p->t.nl) return mlsys__cc_arrow(p, st, x, 0);
      return x;
    }
    case MLSYS_CONTRACODE_TOK_PUNCT:
      switch (p->t.op) {
        case MLSYS__CC_P_LPAREN: return mlsys__cc_paren(p);
        case MLSYS__CC_P_LBRACK: return mlsys__cc_array(p);
        case MLSYS__CC_P_LBRACE: return mlsys__cc_object(p);
        case MLSYS__CC_P_SLASH:
        case MLSYS__CC_P_DIV_A: {
          mlsys__cc_scan_regex(p);
          return mlsys__cc_literal(p, MLSYS_CONTRACODE_JS_LIT_REGEX);
        }
        default: break;
      }
      break;
    default: break;
  }
  mlsys__cc_unexpected(p);
  return 0;
}

static int mlsys__cc_is_async_ident(mlsys__cc_p *p, int x) {
  const mlsys__cc_node *n = &MLSYS__CC_N(p, x);
  return n->kind == MLSYS_CONTRACODE_JS_IDENTIFIER && !(n->flags & (MLSYS_CONTRACODE_JS_F_PAREN | MLSYS_CONTRACODE_JS_F_ESCAPED)) &&
         n->slen == 5 && !memcmp(p->s + n->str, "async", 5);
}

static int mlsys__cc_subscripts(mlsys__cc_p *p, int base, uint32_t start, int no_calls) {
  int chain = 0, levels = 0, x;
  int maybe_async_arrow = !no_calls && mlsys__cc_is_async_ident(p, base) && !p->t.nl;
  for (;;) {
    int optional = 0;
    if (mlsys__cc_is(p, MLSYS__CC_P_QDOT)) {
      if (no_calls) mlsys__cc_fail(p, p->t.start, "optional chain in a 'new' callee");
      optional = 1;
      chain = 1;
      mlsys__cc_next(p);
    } else if (mlsys__cc_is(p, MLSYS__CC_P_DOT)) {
      mlsys__cc_next(p);
      goto member_name;
    }
    if (optional && p->t.type != MLSYS_CONTRACODE_TOK_PUNCT && p->t.type != MLSYS_CONTRACODE_TOK_TEMPLATE) {
    member_name:
      mlsys__cc_enter(p);
      levels++;
      x = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_MEMBER_EXPRESSION, start);
      MLSYS__CC_N(p, x).a = base;
      MLSYS__CC_SET(p, x, b, mlsys__cc_member_name(p));
      if (optional) MLSYS__CC_N(p, x).flags |= MLSYS_CONTRACODE_JS_F_OPTIONAL;
      base = mlsys__cc_fin(p, x);
    } else if (mlsys__cc_is(p, MLSYS__CC_P_LBRACK)) {
      mlsys__cc_enter(p);
      levels++;
      x = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_MEMBER_EXPRESSION, start);
      mlsys__cc_next(p);
      MLSYS__CC_N(p, x).a = base;
      MLSYS__CC_SET(p, x, b, mlsys__cc_expression(p, 0));
      MLSYS__CC_N(p, x).flags |= MLSYS_CONTRACODE_JS_F_COMPUTED | (optional ? MLSYS_CONTRACODE_JS_F_OPTIONAL : 0);
      mlsys__cc_expect(p, MLSYS__CC_P_RBRACK);
      base = mlsys__cc_fin(p, x);
    } else if (!no_calls && mlsys__cc_is(p, MLSYS__CC_P_LPAREN)) {
      int trailing = 0, args;
      mlsys__cc_enter(p);
      levels++;
      x = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_CALL_EXPRESSION, start);
      args = mlsys__cc_args(p, &trailing);
      if (maybe_async_arrow && levels == 1 && mlsys__cc_is(p, MLSYS__CC_P_ARROW) && !p->t.nl) {
        p->depth -= levels;
        return mlsys__cc_arrow(p, start, mlsys__cc_to_params(p, args), 1);
      }
      MLSYS__CC_N(p, x).a = base;
      MLSYS__CC_N(p, x).b = args;
      if (optional) MLSYS__CC_N(p, x).flags |= MLSYS_CONTRACODE_JS_F_OPTIONAL;
      base = mlsys__cc_fin(p, x);
    } else if (p->t.type == MLSYS_CONTRACODE_TOK_TEMPLATE) {
      if (chain) mlsys__cc_fail(p, p->t.start, "tagged template in an optional chain");
      mlsys__cc_enter(p);
      levels++;
      x = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_TAGGED_TEMPLATE_EXPRESSION, start);
      MLSYS__CC_N(p, x).a = base;
      MLSYS__CC_SET(p, x, b, mlsys__cc_template(p));
      base = mlsys__cc_fin(p, x);
    } else {
      if (optional) mlsys__cc_unexpected(p);
      break;
    }
  }
  p->depth -= levels;
  if (chain) {
    x = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_CHAIN_EXPRESSION, start);
    MLSYS__CC_N(p, x).a = base;
    base = mlsys__cc_fin(p, x);
  }
  return base;
}

static int mlsys__cc_unary(mlsys__cc_p *p) {
  uint32_t st = p->t.start;
  int x, op = 0;
  if (p->t.type == MLSYS_CONTRACODE_TOK_PUNCT) {
    switch (p->t.op) {
      case MLSYS__CC_P_BANG: case MLSYS__CC_P_TILDE: case MLSYS__CC_P_PLUS: case MLSYS__CC_P_MINUS:
      case MLSYS__CC_P_INC: case MLSYS__CC_P_DEC: op = p->t.op; break;
      default: break;
    }
  } else if (p->t.type == MLSYS_CONTRACODE_TOK_KEYWORD) {
    if (p->t.kw == MLSYS__CC_K_TYPEOF) op = MLSYS__CC_P_TYPEOF;
    else if (p->t.kw == MLSYS__CC_K_VOID) op = MLSYS__CC_P_VOID;
    else if (p->t.kw == MLSYS__CC_K_DELETE) op = MLSYS__CC_P_DELETE;
  }
  if (op) {
    mlsys__cc_enter(p);
    mlsys__cc_next(p);
    x = mlsys__cc_new(p, (op == MLSYS__CC_P_INC || op == MLSYS__CC_P_DEC) ? MLSYS_CONTRACODE_JS_UPDATE_EXPRESSION
                                                                          : MLSYS_CONTRACODE_JS_UNARY_EXPRESSION, st);
    MLSYS__CC_N(p, x).op = (uint8_t)op;
    MLSYS__CC_N(p, x).flags |= MLSYS_CONTRACODE_JS_F_PREFIX;
    {
      int arg = mlsys__cc_unary(p);
      MLSYS__CC_N(p, x).a = arg;
      if (op == MLSYS__CC_P_INC || op == MLSYS__CC_P_DEC) mlsys__cc_check_simple_target(p, arg);
    }
    p->depth--;
    return mlsys__cc_fin(p, x);
  }
  if (p->in_async && mlsys__cc_isname(p, "await")) {
    mlsys__cc_enter(p);
    mlsys__cc_next(p);
    x = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_AWAIT_EXPRESSION, st);
    MLSYS__CC_SET(p, x, a, mlsys__cc_unary(p));
    p->depth--;
    return mlsys__cc_fin(p, x);
  }
  x = mlsys__cc_atom(p);
  if (MLSYS__CC_N(p, x).kind == MLSYS_CONTRACODE_JS_ARROW_FUNCTION_EXPRESSION &&
      !(MLSYS__CC_N(p, x).flags & MLSYS_CONTRACODE_JS_F_PAREN))
    return x;
  x = mlsys__cc_subscripts(p, x, st, 0);
  while ((mlsys__cc_is(p, MLSYS__CC_P_INC) || mlsys__cc_is(p, MLSYS__CC_P_DEC)) && !p->t.nl) {
    int u = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_UPDATE_EXPRESSION, st);
    mlsys__cc_check_simple_target(p, x);
    MLSYS__CC_N(p, u).op = p->t.op;
    MLSYS__CC_N(p, u).a = x;
    mlsys__cc_next(p);
    x = mlsys__cc_fin(p, u);
  }
  return x;
}

static int mlsys__cc_is_logical(int op) {
  return op == MLSYS__CC_P_AND || op == MLSYS__CC_P_OR || op == MLSYS__CC_P_NULLISH;
}
/* Precedence climbing over binary operators above min_prec. */
static int mlsys__cc_binary(mlsys__cc_p *p, int left, uint32_t start, int min_prec, int no_in) {
  int levels = 0;
  for (;;) {
    int op = 0, prec, right, x;
    uint32_t rst;
    if (p->t.type == MLSYS_CONTRACODE_TOK_PUNCT) op = p->t.op;
    else if (mlsys__cc_iskw(p, MLSYS__CC_K_IN) && !no_in) op = MLSYS__CC_P_IN;
    else if (mlsys__cc_iskw(p, MLSYS__CC_K_INSTANCEOF)) op = MLSYS__CC_P_INSTANCEOF;
    prec = mlsys__cc_binprec(op);
    if (!prec || prec <= min_prec) break;
    if (op == MLSYS__CC_P_STARSTAR && !(MLSYS__CC_N(p, left).flags & MLSYS_CONTRACODE_JS_F_PAREN) &&
        (MLSYS__CC_N(p, left).kind == MLSYS_CONTRACODE_JS_UNARY_EXPRESSION ||
         MLSYS__CC_N(p, left).kind == MLSYS_CONTRACODE_JS_AWAIT_EXPRESSION))
      mlsys__cc_fail(p, p->t.start, "unary operator before '**' needs parentheses");
    mlsys__cc_enter(p);
    levels++;
    mlsys__cc_next(p);
    rst = p->t.start;
    right = mlsys__cc_unary(p);
    right = mlsys__cc_binary(p, right, rst, op == MLSYS__CC_P_STARSTAR ? prec - 1 : prec, no_in);
    if (op == MLSYS__CC_P_NULLISH || op == MLSYS__CC_P_AND || op == MLSYS__CC_P_OR) {
      int sides[2], i;
      sides[0] = left;
      sides[1] = right;
      for (i = 0; i < 2; i++) {
        const mlsys__cc_node *s = &MLSYS__CC_N(p, sides[i]);
        if (s->kind == MLSYS_CONTRACODE_JS_LOGICAL_EXPRESSION && !(s->flags & MLSYS_CONTRACODE_JS_F_PAREN) &&
            ((op == MLSYS__CC_P_NULLISH) != (s->op == MLSYS__CC_P_NULLISH)))
          mlsys__cc_fail(p, s->start, "'?\?' mixed with '||' or '&&' needs parentheses");
      }
    }
    x = mlsys__cc_new(p, mlsys__cc_is_logical(op) ? MLSYS_CONTRACODE_JS_LOGICAL_EXPRESSION
                                                 : MLSYS_CONTRACODE_JS_BINARY_EXPRESSION, start);
    MLSYS__CC_N(p, x).op = (uint8_t)op;
    MLSYS__CC_N(p, x).a = left;
    MLSYS__CC_N(p, x).b = right;
    left = mlsys__cc_fin(p, x);
  }
  p->depth -= levels;
  return left;
}

static int mlsys__cc_conditional(mlsys__cc_p *p, int no_in) {
  uint32_t st = p->t.start;
  int x = mlsys__cc_unary(p);
  if (MLSYS__CC_N(p, x).kind == MLSYS_CONTRACODE_JS_ARROW_FUNCTION_EXPRESSION &&
      !(MLSYS__CC_N(p, x).flags & MLSYS_CONTRACODE_JS_F_PAREN))
    return x;
  x = mlsys__cc_binary(p, x, st, 0, no_in);
  if (mlsys__cc_is(p, MLSYS__CC_P_QUESTION)) {
    int c = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_CONDITIONAL_EXPRESSION, st);
    mlsys__cc_enter(p);
    mlsys__cc_next(p);
    MLSYS__CC_N(p, c).a = x;
    MLSYS__CC_SET(p, c, b, mlsys__cc_assign(p, 0));
    mlsys__cc_expect(p, MLSYS__CC_P_COLON);
    MLSYS__CC_SET(p, c, c, mlsys__cc_assign(p, no_in));
    p->depth--;
    x = mlsys__cc_fin(p, c);
  }
  return x;
}

static int mlsys__cc_assign(mlsys__cc_p *p, int no_in) {
  uint32_t st = p->t.start;
  int x;
  mlsys__cc_enter(p);
  if (p->in_generator && mlsys__cc_isname(p, "yield")) {
    x = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_YIELD_EXPRESSION, st);
    mlsys__cc_next(p);
    if (!p->t.nl) {
      if (mlsys__cc_eat(p, MLSYS__CC_P_STAR)) {
        MLSYS__CC_N(p, x).flags |= MLSYS_CONTRACODE_JS_F_DELEGATE;
        MLSYS__CC_SET(p, x, a, mlsys__cc_assign(p, no_in));
      } else if (p->t.type && !mlsys__cc_is(p, MLSYS__CC_P_RPAREN) && !mlsys__cc_is(p, MLSYS__CC_P_RBRACK) &&
                 !mlsys__cc_is(p, MLSYS__CC_P_RBRACE) && !mlsys__cc_is(p, MLSYS__CC_P_COMMA) &&
                 !mlsys__cc_is(p, MLSYS__CC_P_SEMI) && !mlsys__cc_is(p, MLSYS__CC_P_COLON) &&
                 !(mlsys__cc_iskw(p, MLSYS__CC_K_IN)) && !mlsys__cc_is(p, MLSYS__CC_P_QUESTION) &&
                 !(p->t.type == MLSYS_CONTRACODE_TOK_TEMPLATE && p->s[p->t.start] == '}')) {
        MLSYS__CC_SET(p, x, a, mlsys__cc_assign(p, no_in));
      }
    }
    p->depth--;
    return mlsys__cc_fin(p, x);
  }
  x = mlsys__cc_conditional(p, no_in);
  if (p->t.type == MLSYS_CONTRACODE_TOK_PUNCT && mlsys__cc_is_assign_op(p->t.op)) {
    int a = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_ASSIGNMENT_EXPRESSION, st);
    MLSYS__CC_N(p, a).op = p->t.op;
    if (p->t.op == MLSYS__CC_P_ASSIGN) {
      const mlsys__cc_node *n = &MLSYS__CC_N(p, x);
      if ((n->kind == MLSYS_CONTRACODE_JS_OBJECT_EXPRESSION || n->kind == MLSYS_CONTRACODE_JS_ARRAY_EXPRESSION) &&
          (n->flags & MLSYS_CONTRACODE_JS_F_PAREN))
        mlsys__cc_fail(p, n->start, "invalid assignment target");
      mlsys__cc_to_assignable(p, x, 0);
    } else {
      mlsys__cc_check_simple_target(p, x);
    }
    mlsys__cc_next(p);
    MLSYS__CC_N(p, a).a = x;
    MLSYS__CC_SET(p, a, b, mlsys__cc_assign(p, no_in));
    x = mlsys__cc_fin(p, a);
  }
  p->depth--;
  return x;
}

static int mlsys__cc_expression(mlsys__cc_p *p, int no_in) {
  uint32_t st = p->t.start;
  int x = mlsys__cc_assign(p, no_in);
  if (mlsys__cc_is(p, MLSYS__CC_P_COMMA)) {
    int s = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_SEQUENCE_EXPRESSION, st);
    mlsys__cc_list l = {0, 0};
    mlsys__cc_push(p, &l, x);
    while (mlsys__cc_eat(p, MLSYS__CC_P_COMMA)) mlsys__cc_push(p, &l, mlsys__cc_assign(p, no_in));
    MLSYS__CC_N(p, s).a = l.head;
    x = mlsys__cc_fin(p, s);
  }
  return x;
}

/* ---- functions, classes, statements ---- */
static int mlsys__cc_fn_body(mlsys__cc_p *p) {
  int b = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_BLOCK_STATEMENT, p->t.start);
  mlsys__cc_list l = {0, 0};
  int prologue = 1;
  mlsys__cc_expect(p, MLSYS__CC_P_LBRACE);
  while (!mlsys__cc_is(p, MLSYS__CC_P_RBRACE)) {
    int s;
    if (!p->t.type) mlsys__cc_fail(p, p->t.start, "expected '}' before end of input");
    s = mlsys__cc_statement(p, 0);
    if (prologue) {
      const mlsys__cc_node *n = &MLSYS__CC_N(p, s);
      if (n->kind == MLSYS_CONTRACODE_JS_EXPRESSION_STATEMENT && MLSYS__CC_N(p, n->a).kind == MLSYS_CONTRACODE_JS_LITERAL &&
          MLSYS__CC_N(p, n->a).op == MLSYS_CONTRACODE_JS_LIT_STRING && !(MLSYS__CC_N(p, n->a).flags & MLSYS_CONTRACODE_JS_F_PAREN))
        MLSYS__CC_N(p, s).flags |= MLSYS_CONTRACODE_JS_F_DIRECTIVE;
      else
        prologue = 0;
    }
    mlsys__cc_push(p, &l, s);
  }
  mlsys__cc_next(p);
  MLSYS__CC_N(p, b).a = l.head;
  return mlsys__cc_fin(p, b);
}

/* function [*] [name] (params) { body }. flags: 1 async, 2 generator (methods), 4 method (at the params).
   stmt_default: 1 declaration, 2 `export default` declaration (name optional). */
static int mlsys__cc_function(mlsys__cc_p *p, int kind, uint32_t start, int flags, int stmt_default) {
  int fn = mlsys__cc_new(p, kind, start);
  int is_async = flags & 1, gen = (flags & 2) != 0;
  int sa = p->in_async, sg = p->in_generator, sf = p->in_function, sl = p->loop_depth, ss = p->switch_depth,
      snl = p->nlabels;
  mlsys__cc_enter(p);
  if (!(flags & 4)) {
    if (!mlsys__cc_iskw(p, MLSYS__CC_K_FUNCTION)) mlsys__cc_unexpected(p);
    mlsys__cc_next(p);
    if (mlsys__cc_eat(p, MLSYS__CC_P_STAR)) gen = 1;
    if (!mlsys__cc_is(p, MLSYS__CC_P_LPAREN)) {
      /* a function expression's own name is bound inside it: yield/await follow its own kind */
      if (kind == MLSYS_CONTRACODE_JS_FUNCTION_EXPRESSION) {
        p->in_generator = gen;
        p->in_async = is_async;
      }
      MLSYS__CC_SET(p, fn, a, mlsys__cc_ident(p));
    } else if (stmt_default == 1) {
      mlsys__cc_fail(p, p->t.start, "function declaration needs a name");
    }
  }
  if (is_async) MLSYS__CC_N(p, fn).flags |= MLSYS_CONTRACODE_JS_F_ASYNC;
  if (gen) MLSYS__CC_N(p, fn).flags |= MLSYS_CONTRACODE_JS_F_GENERATOR;
  p->in_async = is_async;
  p->in_generator = gen;
  p->in_function = 1;
  p->loop_depth = p->switch_depth = p->nlabels = 0;
  mlsys__cc_params(p, fn);
  MLSYS__CC_SET(p, fn, c, mlsys__cc_fn_body(p));
  p->in_async = sa;
  p->in_generator = sg;
  p->in_function = sf;
  p->loop_depth = sl;
  p->switch_depth = ss;
  p->nlabels = snl;
  p->depth--;
  return mlsys__cc_fin(p, fn);
}

static int mlsys__cc_class(mlsys__cc_p *p, int kind, int stmt_default) {
  int x = mlsys__cc_new(p, kind, p->t.start), body;
  mlsys__cc_list l = {0, 0};
  mlsys__cc_enter(p);
  mlsys__cc_next(p);
  if (p->t.type == MLSYS_CONTRACODE_TOK_NAME) MLSYS__CC_SET(p, x, a, mlsys__cc_ident(p));
  else if (stmt_default == 1) mlsys__cc_fail(p, p->t.start, "class declaration needs a name");
  if (mlsys__cc_iskw(p, MLSYS__CC_K_EXTENDS)) {
    uint32_t st;
    mlsys__cc_next(p);
    st = p->t.start;
    MLSYS__CC_SET(p, x, b, mlsys__cc_subscripts(p, mlsys__cc_atom(p), st, 0));
  }
  body = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_CLASS_BODY, p->t.start);
  mlsys__cc_expect(p, MLSYS__CC_P_LBRACE);
  p->class_depth++;
  while (!mlsys__cc_is(p, MLSYS__CC_P_RBRACE)) {
    uint32_t st = p->t.start;
    int m, is_static = 0, is_async = 0, gen = 0, kind2 = MLSYS_CONTRACODE_JS_PROP_METHOD, key;
    if (mlsys__cc_eat(p, MLSYS__CC_P_SEMI)) continue;
    if (!p->t.type) mlsys__cc_fail(p, p->t.start, "expected '}' before end of input");
    m = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_METHOD_DEFINITION, st);
    if (mlsys__cc_isname(p, "static")) {
      mlsys__cc_tok nt = mlsys__cc_peek(p);
      if (!(nt.type == MLSYS_CONTRACODE_TOK_PUNCT && (nt.op == MLSYS__CC_P_LPAREN || nt.op == MLSYS__CC_P_ASSIGN ||
                                                       nt.op == MLSYS__CC_P_SEMI || nt.op == MLSYS__CC_P_RBRACE))) {
        is_static = 1;
        mlsys__cc_next(p);
      }
      if (is_static && mlsys__cc_is(p, MLSYS__CC_P_LBRACE)) {   /* static { ... } (ES2022) */
        int blk, sa = p->in_async, sg = p->in_generator, sf = p->in_function, sl = p->loop_depth,
                 ss = p->switch_depth, snl = p->nlabels;
        p->in_async = p->in_generator = p->in_function = p->loop_depth = p->switch_depth = p->nlabels = 0;
        blk = mlsys__cc_block(p);
        p->in_async = sa;
        p->in_generator = sg;
        p->in_function = sf;
        p->loop_depth = sl;
        p->switch_depth = ss;
        p->nlabels = snl;
        MLSYS__CC_N(p, m).kind = MLSYS_CONTRACODE_JS_STATIC_BLOCK;
        MLSYS__CC_N(p, m).a = MLSYS__CC_N(p, blk).a;
        mlsys__cc_push(p, &l, mlsys__cc_fin(p, m));
        continue;
      }
    }
    if (p->t.type == MLSYS_CONTRACODE_TOK_NAME && !p->t.esc) {
      mlsys__cc_tok nt = mlsys__cc_peek(p);
      int modifier = !(nt.type == MLSYS_CONTRACODE_TOK_PUNCT &&
                       (nt.op == MLSYS__CC_P_LPAREN || nt.op == MLSYS__CC_P_ASSIGN || nt.op == MLSYS__CC_P_SEMI ||
                        nt.op == MLSYS__CC_P_RBRACE)) && !nt.nl;
      if (modifier && mlsys__cc_isname(p, "async")) { is_async = 1; mlsys__cc_next(p); }
      else if (modifier && mlsys__cc_isname(p, "get")) { kind2 = MLSYS_CONTRACODE_JS_PROP_GET; mlsys__cc_next(p); }
      else if (modifier && mlsys__cc_isname(p, "set")) { kind2 = MLSYS_CONTRACODE_JS_PROP_SET; mlsys__cc_next(p); }
    }
    if (kind2 == MLSYS_CONTRACODE_JS_PROP_METHOD && mlsys__cc_eat(p, MLSYS__CC_P_STAR)) gen = 1;
    if (!mlsys__cc_key_start(p) || mlsys__cc_is(p, MLSYS__CC_P_STAR)) mlsys__cc_unexpected(p);
    key = mlsys__cc_prop_key(p, m);
    MLSYS__CC_N(p, m).a = key;
    if (is_static) MLSYS__CC_N(p, m).flags |= MLSYS_CONTRACODE_JS_F_STATIC;
    if (mlsys__cc_is(p, MLSYS__CC_P_LPAREN) || is_async || gen || kind2 != MLSYS_CONTRACODE_JS_PROP_METHOD) {
      const mlsys__cc_node *kn = &MLSYS__CC_N(p, key);
      if (!is_static && !(MLSYS__CC_N(p, m).flags & MLSYS_CONTRACODE_JS_F_COMPUTED) &&
          ((kn->kind == MLSYS_CONTRACODE_JS_IDENTIFIER && kn->slen == 11 && !memcmp(p->s + kn->str, "constructor", 11)) ||
           (kn->kind == MLSYS_CONTRACODE_JS_LITERAL && kn->slen == 13 && !memcmp(p->s + kn->str + 1, "constructor", 11)))) {
        if (kind2 != MLSYS_CONTRACODE_JS_PROP_METHOD || is_async || gen)
          mlsys__cc_fail(p, st, "constructor cannot be a getter, setter, async or generator");
        kind2 = MLSYS_CONTRACODE_JS_PROP_CONSTRUCTOR;
      }
      MLSYS__CC_N(p, m).op = (uint8_t)kind2;
      MLSYS__CC_SET(p, m, b, mlsys__cc_function(p, MLSYS_CONTRACODE_JS_FUNCTION_EXPRESSION, p->t.start,
                                               is_async | (gen ? 2 : 0) | 4, 0));
    } else {
      /* public field (ES2022) */
      MLSYS__CC_N(p, m).kind = MLSYS_CONTRACODE_JS_PROPERTY_DEFINITION;
      if (mlsys__cc_eat(p, MLSYS__CC_P_ASSIGN)) {
        int sf = p->in_function;
        p->in_function = 1;
        MLSYS__CC_SET(p, m, b, mlsys__cc_assign(p, 0));
        p->in_function = sf;
      }
      mlsys__cc_semicolon(p);
    }
    mlsys__cc_push(p, &l, mlsys__cc_fin(p, m));
  }
  p->class_depth--;
  mlsys__cc_next(p);
  MLSYS__CC_N(p, body).a = l.head;
  MLSYS__CC_SET(p, x, c, mlsys__cc_fin(p, body));
  p->depth--;
  return mlsys__cc_fin(p, x);
}

/* var/let/const declarators; the keyword is the current token. in_for: stop before in/of. */
static int mlsys__cc_var(mlsys__cc_p *p, int kind, int in_for) {
  int x = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_VARIABLE_DECLARATION, p->t.start);
  mlsys__cc_list l = {0, 0};
  MLSYS__CC_N(p, x).op = (uint8_t)kind;
  mlsys__cc_next(p);
  for (;;) {
    int d = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_VARIABLE_DECLARATOR, p->t.start);
    int id = mlsys__cc_binding_atom(p);
    if (kind != MLSYS_CONTRACODE_JS_VAR && MLSYS__CC_N(p, id).kind == MLSYS_CONTRACODE_JS_IDENTIFIER &&
        MLSYS__CC_N(p, id).slen == 3 && !memcmp(p->s + MLSYS__CC_N(p, id).str, "let", 3))
      mlsys__cc_fail(p, MLSYS__CC_N(p, id).start, "'let' cannot be a lexically bound name");
    MLSYS__CC_N(p, d).a = id;
    if (mlsys__cc_eat(p, MLSYS__CC_P_ASSIGN)) {
      MLSYS__CC_SET(p, d, b, mlsys__cc_assign(p, in_for));
    } else if (!(in_for && (mlsys__cc_iskw(p, MLSYS__CC_K_IN) || mlsys__cc_isname(p, "of")))) {
      if (kind == MLSYS_CONTRACODE_JS_CONST) mlsys__cc_fail(p, p->t.start, "missing initializer in const declaration");
      if (MLSYS__CC_N(p, id).kind != MLSYS_CONTRACODE_JS_IDENTIFIER)
        mlsys__cc_fail(p, p->t.start, "missing initializer in destructuring declaration");
    }
    mlsys__cc_push(p, &l, mlsys__cc_fin(p, d));
    if (!mlsys__cc_eat(p, MLSYS__CC_P_COMMA)) break;
  }
  MLSYS__CC_N(p, x).a = l.head;
  return mlsys__cc_fin(p, x);
}
/* `let` starts a declaration when followed by a name, [ or { (checked without consuming). */
static int mlsys__cc_let_decl(mlsys__cc_p *p) {
  mlsys__cc_tok nt;
  if (!mlsys__cc_isname(p, "let")) return 0;
  nt = mlsys__cc_peek(p);
  return nt.type == MLSYS_CONTRACODE_TOK_NAME ||
         (nt.type == MLSYS_CONTRACODE_TOK_PUNCT && (nt.op == MLSYS__CC_P_LBRACK || nt.op == MLSYS__CC_P_LBRACE));
}

static int mlsys__cc_block(mlsys__cc_p *p) {
  int b = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_BLOCK_STATEMENT, p->t.start);
  mlsys__cc_list l = {0, 0};
  mlsys__cc_expect(p, MLSYS__CC_P_LBRACE);
  while (!mlsys__cc_is(p, MLSYS__CC_P_RBRACE)) {
    if (!p->t.type) mlsys__cc_fail(p, p->t.start, "expected '}' before end of input");
    mlsys__cc_push(p, &l, mlsys__cc_statement(p, 0));
  }
  mlsys__cc_next(p);
  MLSYS__CC_N(p, b).a = l.head;
  return mlsys__cc_fin(p, b);
}
/* A loop body (counted for break/continue). */
static int mlsys__cc_loop_body(mlsys__cc_p *p) {
  int s;
  p->loop_depth++;
  s = mlsys__cc_statement(p, 0);
  p->loop_depth--;
  return s;
}
static int mlsys__cc_paren_expr(mlsys__cc_p *p) {
  int x;
  mlsys__cc_expect(p, MLSYS__CC_P_LPAREN);
  x = mlsys__cc_expression(p, 0);
  mlsys__cc_expect(p, MLSYS__CC_P_RPAREN);
  return x;
}

static int mlsys__cc_for(mlsys__cc_p *p, uint32_t st) {
  int init = 0, x, is_await = 0, kind;
  mlsys__cc_next(p);
  if (p->in_async && mlsys__cc_isname(p, "await")) {
    is_await = 1;
    mlsys__cc_next(p);
  }
  mlsys__cc_expect(p, MLSYS__CC_P_LPAREN);
  if (mlsys__cc_is(p, MLSYS__CC_P_SEMI)) {
    if (is_await) mlsys__cc_unexpected(p);
  } else {
    int decl = 0;
    if (mlsys__cc_iskw(p, MLSYS__CC_K_VAR)) decl = MLSYS_CONTRACODE_JS_VAR;
    else if (mlsys__cc_iskw(p, MLSYS__CC_K_CONST)) decl = MLSYS_CONTRACODE_JS_CONST;
    else if (mlsys__cc_let_decl(p)) decl = MLSYS_CONTRACODE_JS_LET;
    if (decl) {
      init = mlsys__cc_var(p, decl, 1);
    } else {
      uint32_t ist = p->t.start;
      int starts_let = mlsys__cc_isname(p, "let"), starts_async = mlsys__cc_isname(p, "async");
      init = mlsys__cc_expression(p, 1);
      if (mlsys__cc_isname(p, "of") && (starts_let || (starts_async && MLSYS__CC_N(p, init).kind == MLSYS_CONTRACODE_JS_IDENTIFIER && !is_await)))
        mlsys__cc_fail(p, ist, "for-of left side cannot start with 'let' or be 'async'");
    }
    if (mlsys__cc_iskw(p, MLSYS__CC_K_IN) || mlsys__cc_isname(p, "of")) {
      int of = mlsys__cc_isname(p, "of");
      if (is_await && !of) mlsys__cc_unexpected(p);
      if (MLSYS__CC_N(p, init).kind == MLSYS_CONTRACODE_JS_VARIABLE_DECLARATION) {
        int d = MLSYS__CC_N(p, init).a;
        if (MLSYS__CC_N(p, d).next) mlsys__cc_fail(p, MLSYS__CC_N(p, init).start, "only one binding allowed in for-in/of");
        if (MLSYS__CC_N(p, d).b) mlsys__cc_fail(p, MLSYS__CC_N(p, init).start, "for-in/of declaration cannot have an initializer");
      } else {
        if (MLSYS__CC_N(p, init).kind == MLSYS_CONTRACODE_JS_SEQUENCE_EXPRESSION ||
            ((MLSYS__CC_N(p, init).kind == MLSYS_CONTRACODE_JS_OBJECT_EXPRESSION ||
              MLSYS__CC_N(p, init).kind == MLSYS_CONTRACODE_JS_ARRAY_EXPRESSION) && (MLSYS__CC_N(p, init).flags & MLSYS_CONTRACODE_JS_F_PAREN)))
          mlsys__cc_fail(p, MLSYS__CC_N(p, init).start, "invalid for-in/of left side");
        mlsys__cc_to_assignable(p, init, 0);
      }
      kind = of ? MLSYS_CONTRACODE_JS_FOR_OF_STATEMENT : MLSYS_CONTRACODE_JS_FOR_IN_STATEMENT;
      x = mlsys__cc_new(p, kind, st);
      mlsys__cc_next(p);
      MLSYS__CC_N(p, x).a = init;
      MLSYS__CC_N(p, x).b = of ? mlsys__cc_assign(p, 0) : mlsys__cc_expression(p, 0);
      if (is_await) MLSYS__CC_N(p, x).flags |= MLSYS_CONTRACODE_JS_F_AWAIT;
      mlsys__cc_expect(p, MLSYS__CC_P_RPAREN);
      MLSYS__CC_SET(p, x, c, mlsys__cc_loop_body(p));
      return mlsys__cc_fin(p, x);
    }
    if (is_await) mlsys__cc_unexpected(p);
  }
  x = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_FOR_STATEMENT, st);
  MLSYS__CC_N(p, x).a = init;
  mlsys__cc_expect(p, MLSYS__CC_P_SEMI);
  if (!mlsys__cc_is(p, MLSYS__CC_P_SEMI)) MLSYS__CC_SET(p, x, b, mlsys__cc_expression(p, 0));
  mlsys__cc_expect(p, MLSYS__CC_P_SEMI);
  if (!mlsys__cc_is(p, MLSYS__CC_P_RPAREN)) MLSYS__CC_SET(p, x, c, mlsys__cc_expression(p, 0));
  mlsys__cc_expect(p, MLSYS__CC_P_RPAREN);
  MLSYS__CC_SET(p, x, d, mlsys__cc_loop_body(p));
  return mlsys__cc_fin(p, x);
}

static int mlsys__cc_string_lit(mlsys__cc_p *p) {
  if (p->t.type != MLSYS_CONTRACODE_TOK_STRING) mlsys__cc_fail(p, p->t.start, "expected a module specifier string");
  return mlsys__cc_literal(p, MLSYS_CONTRACODE_JS_LIT_STRING);
}
static int mlsys__cc_import_decl(mlsys__cc_p *p, uint32_t st) {
  int x = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_IMPORT_DECLARATION, st);
  mlsys__cc_list l = {0, 0};
  mlsys__cc_next(p);
  if (p->t.type != MLSYS_CONTRACODE_TOK_STRING) {
    if (p->t.type == MLSYS_CONTRACODE_TOK_NAME) {
      int s = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_IMPORT_DEFAULT_SPECIFIER, p->t.start);
      MLSYS__CC_SET(p, s, a, mlsys__cc_ident(p));
      mlsys__cc_push(p, &l, mlsys__cc_fin(p, s));
      if (!mlsys__cc_eat(p, MLSYS__CC_P_COMMA)) goto from;
    }
    if (mlsys__cc_is(p, MLSYS__CC_P_STAR)) {
      int s = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_IMPORT_NAMESPACE_SPECIFIER, p->t.start);
      mlsys__cc_next(p);
      if (!mlsys__cc_isname(p, "as")) mlsys__cc_fail(p, p->t.start, "expected 'as' after 'import *'");
      mlsys__cc_next(p);
      MLSYS__CC_SET(p, s, a, mlsys__cc_ident(p));
      mlsys__cc_push(p, &l, mlsys__cc_fin(p, s));
    } else if (mlsys__cc_eat(p, MLSYS__CC_P_LBRACE)) {
      while (!mlsys__cc_is(p, MLSYS__CC_P_RBRACE)) {
        int s = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_IMPORT_SPECIFIER, p->t.start), imp;
        int is_kw = p->t.type == MLSYS_CONTRACODE_TOK_KEYWORD;
        imp = mlsys__cc_ident_name(p);
        MLSYS__CC_N(p, s).a = imp;
        if (mlsys__cc_isname(p, "as")) {
          mlsys__cc_next(p);
          MLSYS__CC_SET(p, s, b, mlsys__cc_ident(p));
        } else {
          int loc = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_IDENTIFIER, 0);
          if (is_kw) mlsys__cc_fail(p, MLSYS__CC_N(p, imp).start, "keyword imported without 'as'");
          MLSYS__CC_N(p, loc) = MLSYS__CC_N(p, imp);
          MLSYS__CC_N(p, s).b = loc;
        }
        mlsys__cc_push(p, &l, mlsys__cc_fin(p, s));
        if (!mlsys__cc_is(p, MLSYS__CC_P_RBRACE)) mlsys__cc_expect(p, MLSYS__CC_P_COMMA);
      }
      mlsys__cc_next(p);
    } else {
      mlsys__cc_unexpected(p);
    }
  from:
    if (!mlsys__cc_isname(p, "from")) mlsys__cc_fail(p, p->t.start, "expected 'from'");
    mlsys__cc_next(p);
  }
  MLSYS__CC_N(p, x).a = l.head;
  MLSYS__CC_SET(p, x, b, mlsys__cc_string_lit(p));
  mlsys__cc_semicolon(p);
  return mlsys__cc_fin(p, x);
}
static int mlsys__cc_export_decl(mlsys__cc_p *p, uint32_t st) {
  int x;
  mlsys__cc_next(p);
  if (mlsys__cc_is(p, MLSYS__CC_P_STAR)) {
    x = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_EXPORT_ALL_DECLARATION, st);
    mlsys__cc_next(p);
    if (mlsys__cc_isname(p, "as")) {
      mlsys__cc_next(p);
      MLSYS__CC_SET(p, x, b, mlsys__cc_ident_name(p));
    }
    if (!mlsys__cc_isname(p, "from")) mlsys__cc_fail(p, p->t.start, "expected 'from'");
    mlsys__cc_next(p);
    MLSYS__CC_SET(p, x, a, mlsys__cc_string_lit(p));
    mlsys__cc_semicolon(p);
    return mlsys__cc_fin(p, x);
  }
  if (mlsys__cc_iskw(p, MLSYS__CC_K_DEFAULT)) {
    uint32_t dst;
    x = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_EXPORT_DEFAULT_DECLARATION, st);
    mlsys__cc_next(p);
    dst = p->t.start;
    if (mlsys__cc_iskw(p, MLSYS__CC_K_FUNCTION)) {
      MLSYS__CC_SET(p, x, a, mlsys__cc_function(p, MLSYS_CONTRACODE_JS_FUNCTION_DECLARATION, dst, 0, 2));
    } else if (mlsys__cc_isname(p, "async") && mlsys__cc_peek(p).kw == MLSYS__CC_K_FUNCTION && !mlsys__cc_peek(p).nl) {
      mlsys__cc_next(p);
      MLSYS__CC_SET(p, x, a, mlsys__cc_function(p, MLSYS_CONTRACODE_JS_FUNCTION_DECLARATION, dst, 1, 2));
    } else if (mlsys__cc_iskw(p, MLSYS__CC_K_CLASS)) {
      MLSYS__CC_SET(p, x, a, mlsys__cc_class(p, MLSYS_CONTRACODE_JS_CLASS_DECLARATION, 2));
    } else {
      MLSYS__CC_SET(p, x, a, mlsys__cc_assign(p, 0));
      mlsys__cc_semicolon(p);
    }
    return mlsys__cc_fin(p, x);
  }
  x = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_EXPORT_NAMED_DECLARATION, st);
  if (mlsys__cc_eat(p, MLSYS__CC_P_LBRACE)) {
    mlsys__cc_list l = {0, 0};
    while (!mlsys__cc_is(p, MLSYS__CC_P_RBRACE)) {
      int s = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_EXPORT_SPECIFIER, p->t.start), loc;
      loc = mlsys__cc_ident_name(p);
      MLSYS__CC_N(p, s).a = loc;
      if (mlsys__cc_isname(p, "as")) {
        mlsys__cc_next(p);
        MLSYS__CC_SET(p, s, b, mlsys__cc_ident_name(p));
      } else {
        int e = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_IDENTIFIER, 0);
        MLSYS__CC_N(p, e) = MLSYS__CC_N(p, loc);
        MLSYS__CC_N(p, s).b = e;
      }
      mlsys__cc_push(p, &l, mlsys__cc_fin(p, s));
      if (!mlsys__cc_is(p, MLSYS__CC_P_RBRACE)) mlsys__cc_expect(p, MLSYS__CC_P_COMMA);
    }
    mlsys__cc_next(p);
    MLSYS__CC_N(p, x).b = l.head;
    if (mlsys__cc_isname(p, "from")) {
      mlsys__cc_next(p);
      MLSYS__CC_SET(p, x, c, mlsys__cc_string_lit(p));
    }
    mlsys__cc_semicolon(p);
    return mlsys__cc_fin(p, x);
  }
  if (mlsys__cc_iskw(p, MLSYS__CC_K_VAR) || mlsys__cc_iskw(p, MLSYS__CC_K_CONST) || mlsys__cc_let_decl(p) ||
      mlsys__cc_iskw(p, MLSYS__CC_K_FUNCTION) || mlsys__cc_iskw(p, MLSYS__CC_K_CLASS) ||
      (mlsys__cc_isname(p, "async") && mlsys__cc_peek(p).kw == MLSYS__CC_K_FUNCTION)) {
    MLSYS__CC_SET(p, x, a, mlsys__cc_statement(p, 0));
    return mlsys__cc_fin(p, x);
  }
  mlsys__cc_unexpected(p);
  return 0;
}

/* break/continue label lookup; is_loop labels may be continued. */
static void mlsys__cc_check_jump(mlsys__cc_p *p, int label, int is_continue, uint32_t st) {
  int i;
  if (!label) {
    if (is_continue ? !p->loop_depth : !(p->loop_depth || p->switch_depth))
      mlsys__cc_fail(p, st, is_continue ? "'continue' outside a loop" : "'break' outside a loop or switch");
    return;
  }
  for (i = p->nlabels - 1; i >= 0; i--) {
    const mlsys__cc_node *ln = &MLSYS__CC_N(p, label);
    if (p->labels[3 * i + 1] == ln->slen && !memcmp(p->s + p->labels[3 * i], p->s + ln->str, ln->slen)) {
      if (is_continue && !p->labels[3 * i + 2]) mlsys__cc_fail(p, st, "'continue' to a label that is not a loop");
      return;
    }
  }
  mlsys__cc_fail(p, MLSYS__CC_N(p, label).start, "undefined label '%.*s'", (int)MLSYS__CC_N(p, label).slen,
                 p->s + MLSYS__CC_N(p, label).str);
}

static int mlsys__cc_statement(mlsys__cc_p *p, int top) {
  uint32_t st = p->t.start;
  int x = 0;
  mlsys__cc_enter(p);
  if (p->t.type == MLSYS_CONTRACODE_TOK_PUNCT) {
    if (p->t.op == MLSYS__CC_P_LBRACE) { x = mlsys__cc_block(p); goto done; }
    if (p->t.op == MLSYS__CC_P_SEMI) {
      x = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_EMPTY_STATEMENT, st);
      mlsys__cc_next(p);
      x = mlsys__cc_fin(p, x);
      goto done;
    }
  } else if (p->t.type == MLSYS_CONTRACODE_TOK_KEYWORD) {
    switch (p->t.kw) {
      case MLSYS__CC_K_VAR:
        x = mlsys__cc_var(p, MLSYS_CONTRACODE_JS_VAR, 0);
        mlsys__cc_semicolon(p);
        x = mlsys__cc_fin(p, x);
        goto done;
      case MLSYS__CC_K_CONST:
        x = mlsys__cc_var(p, MLSYS_CONTRACODE_JS_CONST, 0);
        mlsys__cc_semicolon(p);
        x = mlsys__cc_fin(p, x);
        goto done;
      case MLSYS__CC_K_FUNCTION: x = mlsys__cc_function(p, MLSYS_CONTRACODE_JS_FUNCTION_DECLARATION, st, 0, 1); goto done;
      case MLSYS__CC_K_CLASS: x = mlsys__cc_class(p, MLSYS_CONTRACODE_JS_CLASS_DECLARATION, 1); goto done;
      case MLSYS__CC_K_IF:
        x = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_IF_STATEMENT, st);
        mlsys__cc_next(p);
        MLSYS__CC_SET(p, x, a, mlsys__cc_paren_expr(p));
        MLSYS__CC_SET(p, x, b, mlsys__cc_statement(p, 0));
        if (mlsys__cc_iskw(p, MLSYS__CC_K_ELSE)) {
          mlsys__cc_next(p);
          MLSYS__CC_SET(p, x, c, mlsys__cc_statement(p, 0));
        }
        x = mlsys__cc_fin(p, x);
        goto done;
      case MLSYS__CC_K_FOR: x = mlsys__cc_for(p, st); goto done;
      case MLSYS__CC_K_WHILE:
        x = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_WHILE_STATEMENT, st);
        mlsys__cc_next(p);
        MLSYS__CC_SET(p, x, a, mlsys__cc_paren_expr(p));
        MLSYS__CC_SET(p, x, b, mlsys__cc_loop_body(p));
        x = mlsys__cc_fin(p, x);
        goto done;
      case MLSYS__CC_K_DO:
        x = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_DO_WHILE_STATEMENT, st);
        mlsys__cc_next(p);
        MLSYS__CC_SET(p, x, a, mlsys__cc_loop_body(p));
        if (!mlsys__cc_iskw(p, MLSYS__CC_K_WHILE)) mlsys__cc_fail(p, p->t.start, "expected 'while' after do body");
        mlsys__cc_next(p);
        MLSYS__CC_SET(p, x, b, mlsys__cc_paren_expr(p));
        mlsys__cc_eat(p, MLSYS__CC_P_SEMI);   /* ASI always applies after do-while */
        x = mlsys__cc_fin(p, x);
        goto done;
      case MLSYS__CC_K_RETURN:
        if (!p->in_function) mlsys__cc_fail(p, st, "'return' outside a function");
        x = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_RETURN_STATEMENT, st);
        mlsys__cc_next(p);
        if (!mlsys__cc_is(p, MLSYS__CC_P_SEMI) && !mlsys__cc_can_insert_semi(p)) MLSYS__CC_SET(p, x, a, mlsys__cc_expression(p, 0));
        mlsys__cc_semicolon(p);
        x = mlsys__cc_fin(p, x);
        goto done;
      case MLSYS__CC_K_THROW:
        x = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_THROW_STATEMENT, st);
        mlsys__cc_next(p);
        if (p->t.nl) mlsys__cc_fail(p, p->t.start, "line break after 'throw'");
        MLSYS__CC_SET(p, x, a, mlsys__cc_expression(p, 0));
        mlsys__cc_semicolon(p);
        x = mlsys__cc_fin(p, x);
        goto done;
      case MLSYS__CC_K_BREAK:
      case MLSYS__CC_K_CONTINUE: {
        int cont = p->t.kw == MLSYS__CC_K_CONTINUE;
        x = mlsys__cc_new(p, cont ? MLSYS_CONTRACODE_JS_CONTINUE_STATEMENT : MLSYS_CONTRACODE_JS_BREAK_STATEMENT, st);
        mlsys__cc_next(p);
        if (p->t.type == MLSYS_CONTRACODE_TOK_NAME && !p->t.nl) MLSYS__CC_SET(p, x, a, mlsys__cc_ident(p));
        mlsys__cc_check_jump(p, MLSYS__CC_N(p, x).a, cont, st);
        mlsys__cc_semicolon(p);
        x = mlsys__cc_fin(p, x);
        goto done;
      }
      case MLSYS__CC_K_TRY:
        x = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_TRY_STATEMENT, st);
        mlsys__cc_next(p);
        MLSYS__CC_SET(p, x, a, mlsys__cc_block(p));
        if (mlsys__cc_iskw(p, MLSYS__CC_K_CATCH)) {
          int c = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_CATCH_CLAUSE, p->t.start);
          mlsys__cc_next(p);
          if (mlsys__cc_eat(p, MLSYS__CC_P_LPAREN)) {
            MLSYS__CC_SET(p, c, a, mlsys__cc_binding_atom(p));
            mlsys__cc_expect(p, MLSYS__CC_P_RPAREN);
          }
          MLSYS__CC_SET(p, c, b, mlsys__cc_block(p));
          MLSYS__CC_SET(p, x, b, mlsys__cc_fin(p, c));
        }
        if (mlsys__cc_iskw(p, MLSYS__CC_K_FINALLY)) {
          mlsys__cc_next(p);
          MLSYS__CC_SET(p, x, c, mlsys__cc_block(p));
        }
        if (!MLSYS__CC_N(p, x).b && !MLSYS__CC_N(p, x).c) mlsys__cc_fail(p, p->t.start, "expected 'catch' or 'finally'");
        x = mlsys__cc_fin(p, x);
        goto done;
      case MLSYS__CC_K_SWITCH: {
        mlsys__cc_list cases = {0, 0};
        int seen_default = 0;
        x = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_SWITCH_STATEMENT, st);
        mlsys__cc_next(p);
        MLSYS__CC_SET(p, x, a, mlsys__cc_paren_expr(p));
        mlsys__cc_expect(p, MLSYS__CC_P_LBRACE);
        p->switch_depth++;
        while (!mlsys__cc_is(p, MLSYS__CC_P_RBRACE)) {
          int c = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_SWITCH_CASE, p->t.start);
          mlsys__cc_list body = {0, 0};
          if (mlsys__cc_iskw(p, MLSYS__CC_K_CASE)) {
            mlsys__cc_next(p);
            MLSYS__CC_SET(p, c, a, mlsys__cc_expression(p, 0));
          } else if (mlsys__cc_iskw(p, MLSYS__CC_K_DEFAULT)) {
            if (seen_default) mlsys__cc_fail(p, p->t.start, "more than one 'default' in switch");
            seen_default = 1;
            mlsys__cc_next(p);
          } else {
            mlsys__cc_fail(p, p->t.start, "expected 'case' or 'default'");
          }
          mlsys__cc_expect(p, MLSYS__CC_P_COLON);
          while (!mlsys__cc_is(p, MLSYS__CC_P_RBRACE) && !mlsys__cc_iskw(p, MLSYS__CC_K_CASE) && !mlsys__cc_iskw(p, MLSYS__CC_K_DEFAULT)) {
            if (!p->t.type) mlsys__cc_fail(p, p->t.start, "expected '}' before end of input");
            mlsys__cc_push(p, &body, mlsys__cc_statement(p, 0));
          }
          MLSYS__CC_N(p, c).b = body.head;
          mlsys__cc_push(p, &cases, mlsys__cc_fin(p, c));
        }
        p->switch_depth--;
        mlsys__cc_next(p);
        MLSYS__CC_N(p, x).b = cases.head;
        x = mlsys__cc_fin(p, x);
        goto done;
      }
      case MLSYS__CC_K_WITH:
        x = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_WITH_STATEMENT, st);
        mlsys__cc_next(p);
        MLSYS__CC_SET(p, x, a, mlsys__cc_paren_expr(p));
        MLSYS__CC_SET(p, x, b, mlsys__cc_statement(p, 0));
        x = mlsys__cc_fin(p, x);
        goto done;
      case MLSYS__CC_K_DEBUGGER:
        x = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_DEBUGGER_STATEMENT, st);
        mlsys__cc_next(p);
        mlsys__cc_semicolon(p);
        x = mlsys__cc_fin(p, x);
        goto done;
      case MLSYS__CC_K_IMPORT: {
        mlsys__cc_tok nt = mlsys__cc_peek(p);
        if (nt.type == MLSYS_CONTRACODE_TOK_PUNCT && (nt.op == MLSYS__CC_P_LPAREN || nt.op == MLSYS__CC_P_DOT)) break;
        if (!p->module) mlsys__cc_fail(p, st, "'import' declaration outside a module (use --module)");
        if (!top) mlsys__cc_fail(p, st, "'import' declaration must be at the top level");
        x = mlsys__cc_import_decl(p, st);
        goto done;
      }
      case MLSYS__CC_K_EXPORT:
        if (!p->module) mlsys__cc_fail(p, st, "'export' declaration outside a module (use --module)");
        if (!top) mlsys__cc_fail(p, st, "'export' declaration must be at the top level");
        x = mlsys__cc_export_decl(p, st);
        goto done;
      default: break;
    }
  } else if (p->t.type == MLSYS_CONTRACODE_TOK_NAME) {
    if (mlsys__cc_let_decl(p)) {
      x = mlsys__cc_var(p, MLSYS_CONTRACODE_JS_LET, 0);
      mlsys__cc_semicolon(p);
      x = mlsys__cc_fin(p, x);
      goto done;
    }
    if (mlsys__cc_isname(p, "async")) {
      mlsys__cc_tok nt = mlsys__cc_peek(p);
      if (nt.type == MLSYS_CONTRACODE_TOK_KEYWORD && nt.kw == MLSYS__CC_K_FUNCTION && !nt.nl) {
        mlsys__cc_next(p);
        x = mlsys__cc_function(p, MLSYS_CONTRACODE_JS_FUNCTION_DECLARATION, st, 1, 1);
        goto done;
      }
    }
    {
      mlsys__cc_tok nt = mlsys__cc_peek(p);
      if (nt.type == MLSYS_CONTRACODE_TOK_PUNCT && nt.op == MLSYS__CC_P_COLON) {
        int lab;
        uint32_t *labs;
        int is_loop;
        x = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_LABELED_STATEMENT, st);
        lab = mlsys__cc_ident(p);
        MLSYS__CC_N(p, x).a = lab;
        mlsys__cc_next(p);
        is_loop = mlsys__cc_iskw(p, MLSYS__CC_K_FOR) || mlsys__cc_iskw(p, MLSYS__CC_K_WHILE) || mlsys__cc_iskw(p, MLSYS__CC_K_DO);
        if (p->nlabels == p->label_cap) {
          int nc = p->label_cap ? p->label_cap * 2 : 16;
          labs = (uint32_t *)realloc(p->labels, (size_t)nc * 3 * sizeof *labs);
          if (!labs) mlsys__cc_nomem(p);
          p->labels = labs;
          p->label_cap = nc;
        }
        p->labels[3 * p->nlabels] = MLSYS__CC_N(p, lab).str;
        p->labels[3 * p->nlabels + 1] = MLSYS__CC_N(p, lab).slen;
        p->labels[3 * p->nlabels + 2] = (uint32_t)is_loop;
        p->nlabels++;
        MLSYS__CC_SET(p, x, b, mlsys__cc_statement(p, 0));
        p->nlabels--;
        x = mlsys__cc_fin(p, x);
        goto done;
      }
    }
  }
  x = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_EXPRESSION_STATEMENT, st);
  MLSYS__CC_SET(p, x, a, mlsys__cc_expression(p, 0));
  mlsys__cc_semicolon(p);
  x = mlsys__cc_fin(p, x);
done:
  p->depth--;
  return x;
}

static mlsys_status mlsys__cc_run(mlsys__cc_p *p) {
  if (setjmp(p->jb)) return p->st;
  {
    int prog = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_NONE, 0);   /* index 0: "none" */
    mlsys__cc_list l = {0, 0};
    int prologue = 1;
    (void)prog;
    prog = mlsys__cc_new(p, MLSYS_CONTRACODE_JS_PROGRAM, 0);
    p->ast->root = prog;
    mlsys__cc_lex(p);
    while (p->t.type) {
      int s = mlsys__cc_statement(p, 1);
      if (prologue) {
        const mlsys__cc_node *n = &MLSYS__CC_N(p, s);
        if (n->kind == MLSYS_CONTRACODE_JS_EXPRESSION_STATEMENT && MLSYS__CC_N(p, n->a).kind == MLSYS_CONTRACODE_JS_LITERAL &&
            MLSYS__CC_N(p, n->a).op == MLSYS_CONTRACODE_JS_LIT_STRING && !(MLSYS__CC_N(p, n->a).flags & MLSYS_CONTRACODE_JS_F_PAREN))
          MLSYS__CC_N(p, s).flags |= MLSYS_CONTRACODE_JS_F_DIRECTIVE;
        else
          prologue = 0;
      }
      mlsys__cc_push(p, &l, s);
    }
    MLSYS__CC_N(p, prog).a = l.head;
    MLSYS__CC_N(p, prog).end = p->n;
    {
      int i;
      for (i = 1; i < p->ast->nnodes; i++)
        if (p->ast->nodes[i].flags & MLSYS_CONTRACODE_JS_F_COVER)
          mlsys__cc_fail(p, p->ast->nodes[i].start, "shorthand property with '=' outside a destructuring pattern");
    }
  }
  return MLSYS_OK;
}

MLSYS_DEF void mlsys_contracode_js_free(mlsys_contracode_js_ast *ast) {
  if (!ast) return;
  free(ast->text);
  free(ast->nodes);
  free(ast->tokens);
  memset(ast, 0, sizeof *ast);
}

MLSYS_DEF mlsys_status mlsys_contracode_js_parse(const char *src, size_t n, int flags, mlsys_contracode_js_ast *ast) {
  mlsys__cc_p *p;
  mlsys_status st;
  uint32_t skip = 0;
  if (!ast) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_contracode_js_parse: ast is NULL");
  memset(ast, 0, sizeof *ast);
  if (!src && n) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_contracode_js_parse: src is NULL");
  if (n >= 0xFFFFFFF0u) return mlsys_set_error(MLSYS_ERR_TOO_BIG, "JavaScript source over 4 GiB");
  ast->text = (char *)malloc(n + 1);
  p = (mlsys__cc_p *)calloc(1, sizeof *p);
  if (!ast->text || !p) {
    free(p);
    mlsys_contracode_js_free(ast);
    return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory parsing JavaScript");
  }
  if (n) memcpy(ast->text, src, n);
  ast->text[n] = 0;
  ast->src_len = ast->text_len = n;
  ast->text_cap = n + 1;
  ast->module = (flags & MLSYS_CONTRACODE_JS_MODULE) != 0;
  p->ast = ast;
  p->s = ast->text;
  p->n = (uint32_t)n;
  p->module = ast->module;
  p->keep_tokens = (flags & MLSYS_CONTRACODE_JS_KEEP_TOKENS) != 0;
  if (n >= 3 && !memcmp(src, "\xEF\xBB\xBF", 3)) skip = 3;
  if (n >= skip + 2 && src[skip] == '#' && src[skip + 1] == '!') {
    skip += 2;
    while (skip < n && src[skip] != '\n' && src[skip] != '\r') skip++;
  }
  p->pos = skip;
  st = mlsys__cc_run(p);
  free(p->labels);
  free(p);
  if (st != MLSYS_OK) mlsys_contracode_js_free(ast);
  return st;
}

MLSYS_DEF mlsys_status mlsys_contracode_js_tokens(const char *src, size_t n, int flags, mlsys_contracode_js_token **toks,
                                        int *ntok) {
  mlsys_contracode_js_ast a;
  mlsys_status st;
  if (!toks || !ntok) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_contracode_js_tokens: NULL output");
  *toks = NULL;
  *ntok = 0;
  st = mlsys_contracode_js_parse(src, n, flags | MLSYS_CONTRACODE_JS_KEEP_TOKENS, &a);
  if (st != MLSYS_OK) return st;
  *toks = a.tokens;
  *ntok = a.ntokens;
  a.tokens = NULL;
  mlsys_contracode_js_free(&a);
  return MLSYS_OK;
}

/* ---- printer ---- */
typedef struct {
  const mlsys_contracode_js_ast *ast;
  char *buf;
  size_t len, cap;
  int beautify, indent, level, oom;
  int last_regex;    /* the last token was a regex literal (its flags must not run into a name) */
  int terse;         /* drop a block's final `;` (MLSYS_CONTRACODE_JS_TERSE) */
  int braces, quote_style, quote_keys;   /* the print options of the same names */
  int in_directive;  /* printing a directive's string: its raw text matters */
} mlsys__cc_pr;

static void mlsys__cc_raw(mlsys__cc_pr *w, const char *s, size_t n) {
  if (w->oom) return;
  if (w->len + n + 1 > w->cap) {
    size_t nc = w->cap ? w->cap * 2 : 4096;
    char *nb;
    while (nc < w->len + n + 1) nc *= 2;
    nb = (char *)realloc(w->buf, nc);
    if (!nb) { w->oom = 1; return; }
    w->buf = nb;
    w->cap = nc;
  }
  memcpy(w->buf + w->len, s, n);
  w->len += n;
  w->buf[w->len] = 0;
}
static int mlsys__cc_wordch(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$' ||
         c == '\\' || c >= 0x80;
}
/* Emit one token, with a space only where the two neighbours would otherwise merge. */
static void mlsys__cc_tok_out(mlsys__cc_pr *w, const char *s, size_t n) {
  if (!n) return;
  if (w->len) {
    unsigned char a = (unsigned char)w->buf[w->len - 1], b = (unsigned char)s[0];
    if ((mlsys__cc_wordch(a) && mlsys__cc_wordch(b)) || (w->last_regex && mlsys__cc_wordch(b)) ||
        (a == '+' && b == '+') || (a == '-' && b == '-') || (a == '/' && (b == '/' || b == '*')) ||
        (a == '<' && b == '!') || (a == '-' && b == '>') || (a == '.' && b >= '0' && b <= '9'))
      mlsys__cc_raw(w, " ", 1);
  }
  w->last_regex = 0;
  mlsys__cc_raw(w, s, n);
}
static void mlsys__cc_out(mlsys__cc_pr *w, const char *s) { mlsys__cc_tok_out(w, s, strlen(s)); }
static void mlsys__cc_sp(mlsys__cc_pr *w) {
  if (w->beautify && w->len && w->buf[w->len - 1] != ' ' && w->buf[w->len - 1] != '\n') mlsys__cc_raw(w, " ", 1);
}
static void mlsys__cc_nl(mlsys__cc_pr *w) {
  int i;
  if (!w->beautify) return;
  mlsys__cc_raw(w, "\n", 1);
  for (i = 0; i < w->level * w->indent; i++) mlsys__cc_raw(w, " ", 1);
}
#define MLSYS__CC_W(w, i) ((w)->ast->nodes[i])
static int mlsys__cc_hexval(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}
/* The code point an escape stands for, t[0] being the character after the backslash; -1 for the escapes that
   cannot be a quote (\n, a line continuation, ...). Only quotes matter here, so overflow is of no concern. */
static long mlsys__cc_esc_value(const char *t, size_t n) {
  long v = 0;
  size_t i, k;
  if (!n) return -1;
  if (t[0] == 'x' || (t[0] == 'u' && (n < 2 || t[1] != '{'))) {
    k = t[0] == 'x' ? 2 : 4;
    if (n < k + 1) return -1;
    for (i = 1; i <= k; i++) {
      if (mlsys__cc_hexval(t[i]) < 0) return -1;
      v = v * 16 + mlsys__cc_hexval(t[i]);
    }
    return v;
  }
  if (t[0] == 'u') {
    for (i = 2; i < n && t[i] != '}' && i < 12; i++) {
      if (mlsys__cc_hexval(t[i]) < 0) return -1;
      v = v * 16 + mlsys__cc_hexval(t[i]);
    }
    return v;
  }
  if (t[0] >= '0' && t[0] <= '7') {   /* legacy octal: up to 3 digits when the first is 0-3, else 2 */
    k = t[0] <= '3' ? 3 : 2;
    for (i = 0; i < k && i < n && t[i] >= '0' && t[i] <= '7'; i++) v = v * 8 + (t[i] - '0');
    return v;
  }
  return (unsigned char)t[0];
}
/* A string literal in w's quote style (mlsys_contracode_js_print_opts.quote_style). */
static void mlsys__cc_string_out(mlsys__cc_pr *w, const char *t, size_t n) {
  size_t i, o = 0;
  int sq = 0, dq = 0;
  char q, *b;
  if (n < 2 || w->quote_style == MLSYS_CONTRACODE_JS_QUOTE_ORIGINAL) { mlsys__cc_tok_out(w, t, n); return; }
  for (i = 1; i + 1 < n; i++) {
    if (t[i] == '\\') {
      long v = mlsys__cc_esc_value(t + i + 1, n - 2 - i);
      sq += v == '\'', dq += v == '"';
      i++;
    } else {
      sq += t[i] == '\'', dq += t[i] == '"';
    }
  }
  if (w->in_directive && (sq || dq || memchr(t + 1, '\\', n - 2))) { mlsys__cc_tok_out(w, t, n); return; }
  q = w->quote_style == MLSYS_CONTRACODE_JS_QUOTE_SINGLE ? '\''
    : w->quote_style == MLSYS_CONTRACODE_JS_QUOTE_DOUBLE ? '"' : dq > sq ? '\'' : '"';
  if (!(b = (char *)malloc(2 * n))) { w->oom = 1; return; }
  b[o++] = q;
  for (i = 1; i + 1 < n; i++) {
    if (t[i] == '\\') {   /* an escape stays as written, but \' and \" lose a backslash they no longer need */
      if ((t[i + 1] == '\'' || t[i + 1] == '"') && t[i + 1] != q) b[o++] = t[i + 1];
      else b[o++] = t[i], b[o++] = t[i + 1];
      i++;
      continue;
    }
    if (t[i] == q) b[o++] = '\\';
    b[o++] = t[i];
  }
  b[o++] = q;
  mlsys__cc_tok_out(w, b, o);
  free(b);
}
static void mlsys__cc_text(mlsys__cc_pr *w, int x) {
  const mlsys__cc_node *n = &MLSYS__CC_W(w, x);
  if (n->kind == MLSYS_CONTRACODE_JS_LITERAL && n->op == MLSYS_CONTRACODE_JS_LIT_STRING)
    mlsys__cc_string_out(w, w->ast->text + n->str, n->slen);
  else
    mlsys__cc_tok_out(w, w->ast->text + n->str, n->slen);
}

enum { MLSYS__CC_PR_SEQ = 0, MLSYS__CC_PR_ASSIGN = 1, MLSYS__CC_PR_COND = 2, MLSYS__CC_PR_UNARY = 14,
       MLSYS__CC_PR_POSTFIX = 15, MLSYS__CC_PR_LHS = 16, MLSYS__CC_PR_PRIMARY = 17 };
static int mlsys__cc_prec(const mlsys__cc_pr *w, int x) {
  const mlsys__cc_node *n = &MLSYS__CC_W(w, x);
  switch (n->kind) {
    case MLSYS_CONTRACODE_JS_SEQUENCE_EXPRESSION: return MLSYS__CC_PR_SEQ;
    case MLSYS_CONTRACODE_JS_ASSIGNMENT_EXPRESSION: case MLSYS_CONTRACODE_JS_ARROW_FUNCTION_EXPRESSION:
    case MLSYS_CONTRACODE_JS_YIELD_EXPRESSION: return MLSYS__CC_PR_ASSIGN;
    case MLSYS_CONTRACODE_JS_CONDITIONAL_EXPRESSION: return MLSYS__CC_PR_COND;
    case MLSYS_CONTRACODE_JS_BINARY_EXPRESSION: case MLSYS_CONTRACODE_JS_LOGICAL_EXPRESSION:
      return 2 + mlsys__cc_binprec(n->op);
    case MLSYS_CONTRACODE_JS_UNARY_EXPRESSION: case MLSYS_CONTRACODE_JS_AWAIT_EXPRESSION: return MLSYS__CC_PR_UNARY;
    case MLSYS_CONTRACODE_JS_UPDATE_EXPRESSION:
      return (n->flags & MLSYS_CONTRACODE_JS_F_PREFIX) ? MLSYS__CC_PR_UNARY : MLSYS__CC_PR_POSTFIX;
    case MLSYS_CONTRACODE_JS_CALL_EXPRESSION: case MLSYS_CONTRACODE_JS_NEW_EXPRESSION:
    case MLSYS_CONTRACODE_JS_MEMBER_EXPRESSION: case MLSYS_CONTRACODE_JS_TAGGED_TEMPLATE_EXPRESSION:
    case MLSYS_CONTRACODE_JS_CHAIN_EXPRESSION: case MLSYS_CONTRACODE_JS_IMPORT_EXPRESSION:
    case MLSYS_CONTRACODE_JS_META_PROPERTY: return MLSYS__CC_PR_LHS;
    default: return MLSYS__CC_PR_PRIMARY;
  }
}
/* The node printed first in x (to know whether a statement or arrow body would start with `{`, `function`, ...). */
static int mlsys__cc_leftmost(const mlsys__cc_pr *w, int x) {
  for (;;) {
    const mlsys__cc_node *n = &MLSYS__CC_W(w, x);
    switch (n->kind) {
      case MLSYS_CONTRACODE_JS_SEQUENCE_EXPRESSION: case MLSYS_CONTRACODE_JS_BINARY_EXPRESSION:
      case MLSYS_CONTRACODE_JS_LOGICAL_EXPRESSION: case MLSYS_CONTRACODE_JS_ASSIGNMENT_EXPRESSION:
      case MLSYS_CONTRACODE_JS_CONDITIONAL_EXPRESSION: case MLSYS_CONTRACODE_JS_MEMBER_EXPRESSION:
      case MLSYS_CONTRACODE_JS_CALL_EXPRESSION: case MLSYS_CONTRACODE_JS_TAGGED_TEMPLATE_EXPRESSION:
      case MLSYS_CONTRACODE_JS_CHAIN_EXPRESSION:
        x = n->a;
        break;
      case MLSYS_CONTRACODE_JS_UPDATE_EXPRESSION:
        if (n->flags & MLSYS_CONTRACODE_JS_F_PREFIX) return x;
        x = n->a;
        break;
      default: return x;
    }
  }
}
static int mlsys__cc_is_name(const mlsys__cc_pr *w, int x, const char *name) {
  const mlsys__cc_node *n = &MLSYS__CC_W(w, x);
  size_t l = strlen(name);
  return n->kind == MLSYS_CONTRACODE_JS_IDENTIFIER && n->slen == l && !memcmp(w->ast->text + n->str, name, l);
}
/* Whether x or its siblings contain an `in` operator (siblings by iteration: lists can be long). */
static int mlsys__cc_contains_in(const mlsys__cc_pr *w, int x) {
  for (; x; x = MLSYS__CC_W(w, x).next) {
    const mlsys__cc_node *n = &MLSYS__CC_W(w, x);
    if (n->kind == MLSYS_CONTRACODE_JS_BINARY_EXPRESSION && n->op == MLSYS__CC_P_IN) return 1;
    if (n->kind == MLSYS_CONTRACODE_JS_FUNCTION_EXPRESSION || n->kind == MLSYS_CONTRACODE_JS_CLASS_EXPRESSION ||
        n->kind == MLSYS_CONTRACODE_JS_TEMPLATE_LITERAL)
      continue;
    if (mlsys__cc_contains_in(w, n->a) || mlsys__cc_contains_in(w, n->b) || mlsys__cc_contains_in(w, n->c) ||
        mlsys__cc_contains_in(w, n->d))
      return 1;
  }
  return 0;
}

static void mlsys__cc_expr(mlsys__cc_pr *w, int x, int min);
static void mlsys__cc_stmt(mlsys__cc_pr *w, int x);
static void mlsys__cc_fn(mlsys__cc_pr *w, int x, int method);
static void mlsys__cc_class_out(mlsys__cc_pr *w, int x);

static void mlsys__cc_comma(mlsys__cc_pr *w) {
  mlsys__cc_out(w, ",");
  mlsys__cc_sp(w);
}
static void mlsys__cc_list_out(mlsys__cc_pr *w, int first, int min) {
  int c;
  for (c = first; c; c = MLSYS__CC_W(w, c).next) {
    if (c != first) mlsys__cc_comma(w);
    mlsys__cc_expr(w, c, min);
  }
}
/* A number whose ToString is its own text, so "text" names the same property: 0 or [1-9][0-9]* with an optional
   fraction not ending in 0, at most 15 significant digits (each such decimal is its double's shortest form) and
   below 1e-6 never (ToString writes those with an exponent). Conservative: a rarer canonical one stays unquoted. */
static int mlsys__cc_canonical_number(const char *t, size_t n) {
  size_t i = 0, sig = 0, lead = 0;
  int nz = 0;
  if (!n || t[0] < '0' || t[0] > '9' || (t[0] == '0' && n > 1 && t[1] != '.')) return 0;
  for (; i < n && t[i] >= '0' && t[i] <= '9'; i++) {
    nz |= t[i] != '0';
    sig += nz;
  }
  if (i < n) {
    if (t[i] != '.' || i + 1 == n || t[n - 1] == '0') return 0;
    for (i++; i < n; i++) {
      if (t[i] < '0' || t[i] > '9') return 0;
      if (!nz && t[i] == '0') lead++;
      nz |= t[i] != '0';
      sig += nz;
    }
    if (t[0] == '0' && lead > 5) return 0;
  }
  return sig <= 15;
}
/* quote: the key of an object literal under quote_keys. */
static void mlsys__cc_key(mlsys__cc_pr *w, int owner, int quote) {
  const mlsys__cc_node *k = &MLSYS__CC_W(w, MLSYS__CC_W(w, owner).a);
  if (MLSYS__CC_W(w, owner).flags & MLSYS_CONTRACODE_JS_F_COMPUTED) {
    mlsys__cc_out(w, "[");
    mlsys__cc_expr(w, MLSYS__CC_W(w, owner).a, MLSYS__CC_PR_ASSIGN);
    mlsys__cc_out(w, "]");
  } else if (quote && (k->kind == MLSYS_CONTRACODE_JS_IDENTIFIER ||
                       (k->kind == MLSYS_CONTRACODE_JS_LITERAL && k->op == MLSYS_CONTRACODE_JS_LIT_NUMBER &&
                        mlsys__cc_canonical_number(w->ast->text + k->str, k->slen)))) {
    /* an identifier's \u escapes mean the same inside a string */
    const char *q = w->quote_style == MLSYS_CONTRACODE_JS_QUOTE_SINGLE ? "'" : "\"";
    mlsys__cc_tok_out(w, q, 1);
    mlsys__cc_raw(w, w->ast->text + k->str, k->slen);
    mlsys__cc_raw(w, q, 1);
  } else {
    mlsys__cc_text(w, MLSYS__CC_W(w, owner).a);
  }
}
static int mlsys__cc_same_name(const mlsys__cc_pr *w, int a, int b) {
  const mlsys__cc_node *x = &MLSYS__CC_W(w, a), *y = &MLSYS__CC_W(w, b);
  return x->kind == MLSYS_CONTRACODE_JS_IDENTIFIER && y->kind == MLSYS_CONTRACODE_JS_IDENTIFIER &&
         x->slen == y->slen && !memcmp(w->ast->text + x->str, w->ast->text + y->str, x->slen);
}
/* Property of an object literal or pattern; method-like ones go through the function printer. literal: of an
   object literal (not a pattern), where quote_keys applies. */
static void mlsys__cc_property(mlsys__cc_pr *w, int x, int literal) {
  const mlsys__cc_node *n = &MLSYS__CC_W(w, x);
  int v = n->b, quote = literal && w->quote_keys;
  if (n->op == MLSYS_CONTRACODE_JS_PROP_GET || n->op == MLSYS_CONTRACODE_JS_PROP_SET) {
    mlsys__cc_out(w, n->op == MLSYS_CONTRACODE_JS_PROP_GET ? "get" : "set");
    mlsys__cc_sp(w);
    mlsys__cc_key(w, x, quote);
    mlsys__cc_fn(w, v, 2);
    return;
  }
  if (n->flags & MLSYS_CONTRACODE_JS_F_METHOD) {
    if (MLSYS__CC_W(w, v).flags & MLSYS_CONTRACODE_JS_F_ASYNC) mlsys__cc_out(w, "async");
    if (MLSYS__CC_W(w, v).flags & MLSYS_CONTRACODE_JS_F_GENERATOR) mlsys__cc_out(w, "*");
    mlsys__cc_key(w, x, quote);
    mlsys__cc_fn(w, v, 2);
    return;
  }
  if (n->flags & MLSYS_CONTRACODE_JS_F_SHORTHAND) {
    /* `{__proto__}` is an own property, `{"__proto__": __proto__}` sets the prototype (an escaped name might be
       __proto__ too: it stays shorthand) */
    int keep = !quote || (MLSYS__CC_W(w, n->a).flags & MLSYS_CONTRACODE_JS_F_ESCAPED) || mlsys__cc_is_name(w, n->a, "__proto__");
    if (keep && mlsys__cc_same_name(w, n->a, v)) { mlsys__cc_text(w, v); return; }
    if (MLSYS__CC_W(w, v).kind == MLSYS_CONTRACODE_JS_ASSIGNMENT_PATTERN && mlsys__cc_same_name(w, n->a, MLSYS__CC_W(w, v).a)) {
      mlsys__cc_text(w, MLSYS__CC_W(w, v).a);
      mlsys__cc_sp(w);
      mlsys__cc_out(w, "=");
      mlsys__cc_sp(w);
      mlsys__cc_expr(w, MLSYS__CC_W(w, v).b, MLSYS__CC_PR_ASSIGN);
      return;
    }
  }
  mlsys__cc_key(w, x, quote);
  mlsys__cc_out(w, ":");
  mlsys__cc_sp(w);
  mlsys__cc_expr(w, v, MLSYS__CC_PR_ASSIGN);
}
static void mlsys__cc_template_out(mlsys__cc_pr *w, int x) {
  int q = MLSYS__CC_W(w, x).a, e = MLSYS__CC_W(w, x).b;
  const mlsys_contracode_js_ast *a = w->ast;
  mlsys__cc_tok_out(w, "`", 1);
  for (; q; q = MLSYS__CC_W(w, q).next) {
    mlsys__cc_raw(w, a->text + MLSYS__CC_W(w, q).str, MLSYS__CC_W(w, q).slen);
    if (!MLSYS__CC_W(w, q).next) break;
    mlsys__cc_raw(w, "${", 2);
    if (e) {
      mlsys__cc_expr(w, e, MLSYS__CC_PR_SEQ);
      e = MLSYS__CC_W(w, e).next;
    }
    mlsys__cc_raw(w, "}", 1);
  }
  mlsys__cc_raw(w, "`", 1);
  w->last_regex = 0;
}
/* Whether a `new` callee must be parenthesized: it contains a call (or an optional chain) along its member path. */
static int mlsys__cc_new_callee_paren(const mlsys__cc_pr *w, int x) {
  for (;;) {
    const mlsys__cc_node *n = &MLSYS__CC_W(w, x);
    if (n->kind == MLSYS_CONTRACODE_JS_CALL_EXPRESSION || n->kind == MLSYS_CONTRACODE_JS_CHAIN_EXPRESSION) return 1;
    if (n->kind == MLSYS_CONTRACODE_JS_MEMBER_EXPRESSION || n->kind == MLSYS_CONTRACODE_JS_TAGGED_TEMPLATE_EXPRESSION) x = n->a;
    else return 0;
  }
}
static void mlsys__cc_params_out(mlsys__cc_pr *w, int first) {
  mlsys__cc_out(w, "(");
  mlsys__cc_list_out(w, first, MLSYS__CC_PR_ASSIGN);
  mlsys__cc_out(w, ")");
}
static void mlsys__cc_body(mlsys__cc_pr *w, int block);

static void mlsys__cc_expr(mlsys__cc_pr *w, int x, int min) {
  const mlsys__cc_node *n = &MLSYS__CC_W(w, x);
  int prec = mlsys__cc_prec(w, x), paren = prec < min;
  if (paren) mlsys__cc_out(w, "(");
  switch (n->kind) {
    case MLSYS_CONTRACODE_JS_IDENTIFIER: case MLSYS_CONTRACODE_JS_PRIVATE_IDENTIFIER: mlsys__cc_text(w, x); break;
    case MLSYS_CONTRACODE_JS_LITERAL:
      mlsys__cc_text(w, x);
      if (n->op == MLSYS_CONTRACODE_JS_LIT_REGEX) w->last_regex = 1;
      break;
    case MLSYS_CONTRACODE_JS_THIS_EXPRESSION: mlsys__cc_out(w, "this"); break;
    case MLSYS_CONTRACODE_JS_SUPER: mlsys__cc_out(w, "super"); break;
    case MLSYS_CONTRACODE_JS_HOLE: break;
    case MLSYS_CONTRACODE_JS_ARRAY_EXPRESSION:
    case MLSYS_CONTRACODE_JS_ARRAY_PATTERN: {
      int c, last = 0;
      mlsys__cc_out(w, "[");
      for (c = n->a; c; c = MLSYS__CC_W(w, c).next) {
        if (c != n->a) mlsys__cc_comma(w);
        mlsys__cc_expr(w, c, MLSYS__CC_PR_ASSIGN);
        last = c;
      }
      if (last && MLSYS__CC_W(w, last).kind == MLSYS_CONTRACODE_JS_HOLE) mlsys__cc_out(w, ",");
      mlsys__cc_out(w, "]");
      break;
    }
    case MLSYS_CONTRACODE_JS_OBJECT_EXPRESSION:
    case MLSYS_CONTRACODE_JS_OBJECT_PATTERN: {
      int c;
      mlsys__cc_out(w, "{");
      for (c = n->a; c; c = MLSYS__CC_W(w, c).next) {
        if (c != n->a) mlsys__cc_comma(w);
        if (MLSYS__CC_W(w, c).kind == MLSYS_CONTRACODE_JS_PROPERTY)
          mlsys__cc_property(w, c, n->kind == MLSYS_CONTRACODE_JS_OBJECT_EXPRESSION);
        else mlsys__cc_expr(w, c, MLSYS__CC_PR_ASSIGN);
      }
      mlsys__cc_out(w, "}");
      break;
    }
    case MLSYS_CONTRACODE_JS_FUNCTION_EXPRESSION: mlsys__cc_fn(w, x, 0); break;
    case MLSYS_CONTRACODE_JS_CLASS_EXPRESSION: mlsys__cc_class_out(w, x); break;
    case MLSYS_CONTRACODE_JS_ARROW_FUNCTION_EXPRESSION:
      if (n->flags & MLSYS_CONTRACODE_JS_F_ASYNC) {
        mlsys__cc_out(w, "async");
        mlsys__cc_sp(w);
      }
      mlsys__cc_params_out(w, n->b);
      mlsys__cc_sp(w);
      mlsys__cc_out(w, "=>");
      mlsys__cc_sp(w);
      if (n->flags & MLSYS_CONTRACODE_JS_F_EXPRESSION) {
        int lm = MLSYS__CC_W(w, mlsys__cc_leftmost(w, n->c)).kind;
        int wrap = lm == MLSYS_CONTRACODE_JS_OBJECT_EXPRESSION || lm == MLSYS_CONTRACODE_JS_OBJECT_PATTERN;
        if (wrap) mlsys__cc_out(w, "(");
        mlsys__cc_expr(w, n->c, MLSYS__CC_PR_ASSIGN);
        if (wrap) mlsys__cc_out(w, ")");
      } else {
        mlsys__cc_body(w, n->c);
      }
      break;
    case MLSYS_CONTRACODE_JS_UNARY_EXPRESSION:
    case MLSYS_CONTRACODE_JS_AWAIT_EXPRESSION:
      mlsys__cc_out(w, n->kind == MLSYS_CONTRACODE_JS_AWAIT_EXPRESSION ? "await" : mlsys__cc_ops[n->op]);
      mlsys__cc_expr(w, n->a, MLSYS__CC_PR_UNARY);
      break;
    case MLSYS_CONTRACODE_JS_UPDATE_EXPRESSION:
      if (n->flags & MLSYS_CONTRACODE_JS_F_PREFIX) {
        mlsys__cc_out(w, mlsys__cc_ops[n->op]);
        mlsys__cc_expr(w, n->a, MLSYS__CC_PR_LHS);
      } else {
        mlsys__cc_expr(w, n->a, MLSYS__CC_PR_LHS);
        mlsys__cc_out(w, mlsys__cc_ops[n->op]);
      }
      break;
    case MLSYS_CONTRACODE_JS_BINARY_EXPRESSION:
    case MLSYS_CONTRACODE_JS_LOGICAL_EXPRESSION: {
      int pb = prec, right_assoc = n->op == MLSYS__CC_P_STARSTAR;
      int lmin = right_assoc ? pb + 1 : pb, rmin = right_assoc ? pb : pb + 1, l = n->a, r = n->b, lp = 0, rp = 0;
      const mlsys__cc_node *ln = &MLSYS__CC_W(w, l), *rn = &MLSYS__CC_W(w, r);
      if (right_assoc && (ln->kind == MLSYS_CONTRACODE_JS_UNARY_EXPRESSION || ln->kind == MLSYS_CONTRACODE_JS_AWAIT_EXPRESSION ||
                          (ln->kind == MLSYS_CONTRACODE_JS_UPDATE_EXPRESSION && (ln->flags & MLSYS_CONTRACODE_JS_F_PREFIX))))
        lp = 1;
      if (n->kind == MLSYS_CONTRACODE_JS_LOGICAL_EXPRESSION) {
        if (ln->kind == MLSYS_CONTRACODE_JS_LOGICAL_EXPRESSION && ((ln->op == MLSYS__CC_P_NULLISH) != (n->op == MLSYS__CC_P_NULLISH))) lp = 1;
        if (rn->kind == MLSYS_CONTRACODE_JS_LOGICAL_EXPRESSION && ((rn->op == MLSYS__CC_P_NULLISH) != (n->op == MLSYS__CC_P_NULLISH))) rp = 1;
      }
      if (lp) mlsys__cc_out(w, "(");
      mlsys__cc_expr(w, l, lp ? 0 : lmin);
      if (lp) mlsys__cc_out(w, ")");
      mlsys__cc_sp(w);
      mlsys__cc_out(w, mlsys__cc_ops[n->op]);
      mlsys__cc_sp(w);
      if (rp) mlsys__cc_out(w, "(");
      mlsys__cc_expr(w, r, rp ? 0 : rmin);
      if (rp) mlsys__cc_out(w, ")");
      break;
    }
    case MLSYS_CONTRACODE_JS_ASSIGNMENT_EXPRESSION:
    case MLSYS_CONTRACODE_JS_ASSIGNMENT_PATTERN:
      mlsys__cc_expr(w, n->a, MLSYS__CC_PR_LHS);
      mlsys__cc_sp(w);
      mlsys__cc_out(w, mlsys__cc_ops[n->op ? (int)n->op : (int)MLSYS__CC_P_ASSIGN]);
      mlsys__cc_sp(w);
      mlsys__cc_expr(w, n->b, MLSYS__CC_PR_ASSIGN);
      break;
    case MLSYS_CONTRACODE_JS_CONDITIONAL_EXPRESSION:
      mlsys__cc_expr(w, n->a, 3);
      mlsys__cc_sp(w);
      mlsys__cc_out(w, "?");
      mlsys__cc_sp(w);
      mlsys__cc_expr(w, n->b, MLSYS__CC_PR_ASSIGN);
      mlsys__cc_sp(w);
      mlsys__cc_out(w, ":");
      mlsys__cc_sp(w);
      mlsys__cc_expr(w, n->c, MLSYS__CC_PR_ASSIGN);
      break;
    case MLSYS_CONTRACODE_JS_CALL_EXPRESSION:
    case MLSYS_CONTRACODE_JS_MEMBER_EXPRESSION:
    case MLSYS_CONTRACODE_JS_TAGGED_TEMPLATE_EXPRESSION: {
      int obj = n->a;
      const mlsys__cc_node *on = &MLSYS__CC_W(w, obj);
      int wrap = on->kind == MLSYS_CONTRACODE_JS_CHAIN_EXPRESSION;
      if (n->kind == MLSYS_CONTRACODE_JS_MEMBER_EXPRESSION && !(n->flags & MLSYS_CONTRACODE_JS_F_COMPUTED) &&
          on->kind == MLSYS_CONTRACODE_JS_LITERAL && on->op == MLSYS_CONTRACODE_JS_LIT_NUMBER) {
        uint32_t i;
        int digits_only = 1;
        for (i = 0; i < on->slen; i++)
          if (w->ast->text[on->str + i] < '0' || w->ast->text[on->str + i] > '9') digits_only = 0;
        if (digits_only) wrap = 1;   /* 1.toString would read as the number 1. */
      }
      if (wrap) mlsys__cc_out(w, "(");
      mlsys__cc_expr(w, obj, wrap ? 0 : MLSYS__CC_PR_LHS);
      if (wrap) mlsys__cc_out(w, ")");
      if (n->kind == MLSYS_CONTRACODE_JS_TAGGED_TEMPLATE_EXPRESSION) {
        mlsys__cc_template_out(w, n->b);
      } else if (n->kind == MLSYS_CONTRACODE_JS_CALL_EXPRESSION) {
        if (n->flags & MLSYS_CONTRACODE_JS_F_OPTIONAL) mlsys__cc_out(w, "?.");
        mlsys__cc_out(w, "(");
        mlsys__cc_list_out(w, n->b, MLSYS__CC_PR_ASSIGN);
        mlsys__cc_out(w, ")");
      } else if (n->flags & MLSYS_CONTRACODE_JS_F_COMPUTED) {
        if (n->flags & MLSYS_CONTRACODE_JS_F_OPTIONAL) mlsys__cc_out(w, "?.");
        mlsys__cc_out(w, "[");
        mlsys__cc_expr(w, n->b, MLSYS__CC_PR_SEQ);
        mlsys__cc_out(w, "]");
      } else {
        mlsys__cc_out(w, (n->flags & MLSYS_CONTRACODE_JS_F_OPTIONAL) ? "?." : ".");
        mlsys__cc_text(w, n->b);
      }
      break;
    }
    case MLSYS_CONTRACODE_JS_NEW_EXPRESSION: {
      int wrap = mlsys__cc_new_callee_paren(w, n->a);
      mlsys__cc_out(w, "new");
      if (wrap) {
        mlsys__cc_sp(w);
        mlsys__cc_out(w, "(");
      }
      mlsys__cc_expr(w, n->a, wrap ? 0 : MLSYS__CC_PR_LHS);
      if (wrap) mlsys__cc_out(w, ")");
      mlsys__cc_out(w, "(");
      mlsys__cc_list_out(w, n->b, MLSYS__CC_PR_ASSIGN);
      mlsys__cc_out(w, ")");
      break;
    }
    case MLSYS_CONTRACODE_JS_CHAIN_EXPRESSION: mlsys__cc_expr(w, n->a, MLSYS__CC_PR_LHS); break;
    case MLSYS_CONTRACODE_JS_SEQUENCE_EXPRESSION: mlsys__cc_list_out(w, n->a, MLSYS__CC_PR_ASSIGN); break;
    case MLSYS_CONTRACODE_JS_YIELD_EXPRESSION:
      mlsys__cc_out(w, "yield");
      if (n->flags & MLSYS_CONTRACODE_JS_F_DELEGATE) mlsys__cc_out(w, "*");
      if (n->a) {
        mlsys__cc_sp(w);
        mlsys__cc_expr(w, n->a, MLSYS__CC_PR_ASSIGN);
      }
      break;
    case MLSYS_CONTRACODE_JS_TEMPLATE_LITERAL: mlsys__cc_template_out(w, x); break;
    case MLSYS_CONTRACODE_JS_SPREAD_ELEMENT:
    case MLSYS_CONTRACODE_JS_REST_ELEMENT:
      mlsys__cc_out(w, "...");
      mlsys__cc_expr(w, n->a, MLSYS__CC_PR_ASSIGN);
      break;
    case MLSYS_CONTRACODE_JS_META_PROPERTY:
      mlsys__cc_text(w, n->a);
      mlsys__cc_out(w, ".");
      mlsys__cc_text(w, n->b);
      break;
    case MLSYS_CONTRACODE_JS_IMPORT_EXPRESSION:
      mlsys__cc_out(w, "import(");
      mlsys__cc_expr(w, n->a, MLSYS__CC_PR_ASSIGN);
      mlsys__cc_out(w, ")");
      break;
    default: mlsys__cc_out(w, "/*?*/"); w->oom = 2; break;
  }
  if (paren) mlsys__cc_out(w, ")");
}

/* 1 if statement x's printed text ends with an empty statement's `;` (for(;;); if(a);), which must stay. */
static int mlsys__cc_ends_empty(const mlsys__cc_pr *w, int x) {
  while (x) {
    const mlsys__cc_node *n = &MLSYS__CC_W(w, x);
    switch (n->kind) {
    case MLSYS_CONTRACODE_JS_EMPTY_STATEMENT: return 1;
    case MLSYS_CONTRACODE_JS_IF_STATEMENT: x = n->c ? n->c : n->b; break;
    case MLSYS_CONTRACODE_JS_FOR_STATEMENT: x = n->d; break;
    case MLSYS_CONTRACODE_JS_FOR_IN_STATEMENT: case MLSYS_CONTRACODE_JS_FOR_OF_STATEMENT: x = n->c; break;
    case MLSYS_CONTRACODE_JS_WHILE_STATEMENT: case MLSYS_CONTRACODE_JS_LABELED_STATEMENT:
    case MLSYS_CONTRACODE_JS_WITH_STATEMENT: x = n->b; break;
    default: return 0;
    }
  }
  return 0;
}
static void mlsys__cc_body(mlsys__cc_pr *w, int block) {
  int c, last = 0;
  mlsys__cc_out(w, "{");
  w->level++;
  for (c = MLSYS__CC_W(w, block).a; c; c = MLSYS__CC_W(w, c).next) {
    mlsys__cc_nl(w);
    mlsys__cc_stmt(w, c);
    last = c;
  }
  /* ASI inserts the `;` before `}` */
  if (w->terse && last && w->len && w->buf[w->len - 1] == ';' && !mlsys__cc_ends_empty(w, last)) w->buf[--w->len] = 0;
  w->level--;
  if (MLSYS__CC_W(w, block).a) mlsys__cc_nl(w);
  mlsys__cc_out(w, "}");
}
/* method: 0 function keyword and name, 2 just (params){body} (methods, accessors). */
static void mlsys__cc_fn(mlsys__cc_pr *w, int x, int method) {
  const mlsys__cc_node *n = &MLSYS__CC_W(w, x);
  if (!method) {
    if (n->flags & MLSYS_CONTRACODE_JS_F_ASYNC) mlsys__cc_out(w, "async");
    mlsys__cc_out(w, "function");
    if (n->flags & MLSYS_CONTRACODE_JS_F_GENERATOR) mlsys__cc_out(w, "*");
    if (n->a) {
      mlsys__cc_sp(w);
      mlsys__cc_text(w, n->a);
    }
  }
  mlsys__cc_params_out(w, n->b);
  mlsys__cc_sp(w);
  mlsys__cc_body(w, n->c);
}
static void mlsys__cc_class_out(mlsys__cc_pr *w, int x) {
  const mlsys__cc_node *n = &MLSYS__CC_W(w, x);
  int m;
  mlsys__cc_out(w, "class");
  if (n->a) mlsys__cc_text(w, n->a);
  if (n->b) {
    mlsys__cc_out(w, "extends");
    mlsys__cc_expr(w, n->b, MLSYS__CC_PR_LHS);
  }
  mlsys__cc_sp(w);
  mlsys__cc_out(w, "{");
  w->level++;
  for (m = MLSYS__CC_W(w, n->c).a; m; m = MLSYS__CC_W(w, m).next) {
    const mlsys__cc_node *mn = &MLSYS__CC_W(w, m);
    mlsys__cc_nl(w);
    if (mn->kind == MLSYS_CONTRACODE_JS_STATIC_BLOCK) {
      int c;
      mlsys__cc_out(w, "static");
      mlsys__cc_sp(w);
      mlsys__cc_out(w, "{");
      w->level++;
      for (c = mn->a; c; c = MLSYS__CC_W(w, c).next) {
        mlsys__cc_nl(w);
        mlsys__cc_stmt(w, c);
      }
      w->level--;
      if (mn->a) mlsys__cc_nl(w);
      mlsys__cc_out(w, "}");
      continue;
    }
    if (mn->flags & MLSYS_CONTRACODE_JS_F_STATIC) {
      mlsys__cc_out(w, "static");
      mlsys__cc_sp(w);
    }
    if (mn->kind == MLSYS_CONTRACODE_JS_PROPERTY_DEFINITION) {
      mlsys__cc_key(w, m, 0);
      if (mn->b) {
        mlsys__cc_sp(w);
        mlsys__cc_out(w, "=");
        mlsys__cc_sp(w);
        mlsys__cc_expr(w, mn->b, MLSYS__CC_PR_ASSIGN);
      }
      mlsys__cc_out(w, ";");
      continue;
    }
    if (mn->op == MLSYS_CONTRACODE_JS_PROP_GET || mn->op == MLSYS_CONTRACODE_JS_PROP_SET) {
      mlsys__cc_out(w, mn->op == MLSYS_CONTRACODE_JS_PROP_GET ? "get" : "set");
      mlsys__cc_sp(w);
    } else {
      if (MLSYS__CC_W(w, mn->b).flags & MLSYS_CONTRACODE_JS_F_ASYNC) {
        mlsys__cc_out(w, "async");
        mlsys__cc_sp(w);
      }
      if (MLSYS__CC_W(w, mn->b).flags & MLSYS_CONTRACODE_JS_F_GENERATOR) mlsys__cc_out(w, "*");
    }
    mlsys__cc_key(w, m, 0);
    mlsys__cc_fn(w, mn->b, 2);
  }
  w->level--;
  if (MLSYS__CC_W(w, n->c).a) mlsys__cc_nl(w);
  mlsys__cc_out(w, "}");
}
static void mlsys__cc_var_out(mlsys__cc_pr *w, int x, int in_for) {
  static const char *const kinds[] = {"var", "var", "let", "const"};
  const mlsys__cc_node *n = &MLSYS__CC_W(w, x);
  int d;
  mlsys__cc_out(w, kinds[n->op <= 3 ? n->op : 0]);
  mlsys__cc_sp(w);
  for (d = n->a; d; d = MLSYS__CC_W(w, d).next) {
    const mlsys__cc_node *dn = &MLSYS__CC_W(w, d);
    if (d != n->a) mlsys__cc_comma(w);
    mlsys__cc_expr(w, dn->a, MLSYS__CC_PR_ASSIGN);
    if (dn->b) {
      int wrap = in_for && mlsys__cc_contains_in(w, dn->b);
      mlsys__cc_sp(w);
      mlsys__cc_out(w, "=");
      mlsys__cc_sp(w);
      if (wrap) mlsys__cc_out(w, "(");
      mlsys__cc_expr(w, dn->b, wrap ? 0 : MLSYS__CC_PR_ASSIGN);
      if (wrap) mlsys__cc_out(w, ")");
    }
  }
}
/* Whether statement s, printed as an if's consequent, would capture a following else. */
static int mlsys__cc_open_if(const mlsys__cc_pr *w, int s) {
  for (;;) {
    const mlsys__cc_node *n = &MLSYS__CC_W(w, s);
    switch (n->kind) {
      case MLSYS_CONTRACODE_JS_IF_STATEMENT:
        if (!n->c) return 1;
        s = n->c;
        break;
      case MLSYS_CONTRACODE_JS_LABELED_STATEMENT: case MLSYS_CONTRACODE_JS_WITH_STATEMENT:
      case MLSYS_CONTRACODE_JS_WHILE_STATEMENT: s = n->b; break;
      case MLSYS_CONTRACODE_JS_FOR_IN_STATEMENT: case MLSYS_CONTRACODE_JS_FOR_OF_STATEMENT: s = n->c; break;
      case MLSYS_CONTRACODE_JS_FOR_STATEMENT: s = n->d; break;
      default: return 0;
    }
  }
}
/* A nested statement (if/loop bodies): blocks stay on the line, others are indented on the next, or with the
   braces option put in a block (terser's make_block: an empty statement is `{}`). */
static void mlsys__cc_sub(mlsys__cc_pr *w, int s) {
  if (MLSYS__CC_W(w, s).kind == MLSYS_CONTRACODE_JS_BLOCK_STATEMENT) {
    mlsys__cc_sp(w);
    mlsys__cc_stmt(w, s);
  } else if (w->braces) {
    mlsys__cc_sp(w);
    mlsys__cc_out(w, "{");
    if (MLSYS__CC_W(w, s).kind != MLSYS_CONTRACODE_JS_EMPTY_STATEMENT) {
      w->level++;
      mlsys__cc_nl(w);
      mlsys__cc_stmt(w, s);
      if (w->terse && w->len && w->buf[w->len - 1] == ';' && !mlsys__cc_ends_empty(w, s)) w->buf[--w->len] = 0;
      w->level--;
      mlsys__cc_nl(w);
    }
    mlsys__cc_out(w, "}");
  } else {
    w->level++;
    mlsys__cc_nl(w);
    mlsys__cc_stmt(w, s);
    w->level--;
  }
}
static void mlsys__cc_stmt(mlsys__cc_pr *w, int x) {
  const mlsys__cc_node *n = &MLSYS__CC_W(w, x);
  switch (n->kind) {
    case MLSYS_CONTRACODE_JS_EMPTY_STATEMENT: mlsys__cc_out(w, ";"); break;
    case MLSYS_CONTRACODE_JS_BLOCK_STATEMENT: mlsys__cc_body(w, x); break;
    case MLSYS_CONTRACODE_JS_EXPRESSION_STATEMENT: {
      int lm = mlsys__cc_leftmost(w, n->a), wrap = 0;
      const mlsys__cc_node *ln = &MLSYS__CC_W(w, lm);
      if (!(n->flags & MLSYS_CONTRACODE_JS_F_DIRECTIVE)) {
        wrap = ln->kind == MLSYS_CONTRACODE_JS_OBJECT_EXPRESSION || ln->kind == MLSYS_CONTRACODE_JS_OBJECT_PATTERN ||
               ln->kind == MLSYS_CONTRACODE_JS_FUNCTION_EXPRESSION || ln->kind == MLSYS_CONTRACODE_JS_CLASS_EXPRESSION ||
               mlsys__cc_is_name(w, lm, "let") ||
               (ln->kind == MLSYS_CONTRACODE_JS_LITERAL && ln->op == MLSYS_CONTRACODE_JS_LIT_STRING);
      }
      if (wrap) mlsys__cc_out(w, "(");
      w->in_directive = (n->flags & MLSYS_CONTRACODE_JS_F_DIRECTIVE) != 0;
      mlsys__cc_expr(w, n->a, wrap ? 0 : MLSYS__CC_PR_SEQ);
      w->in_directive = 0;
      if (wrap) mlsys__cc_out(w, ")");
      mlsys__cc_out(w, ";");
      break;
    }
    case MLSYS_CONTRACODE_JS_IF_STATEMENT: {
      int braces = n->c && !w->braces && mlsys__cc_open_if(w, n->b);
      mlsys__cc_out(w, "if");
      mlsys__cc_sp(w);
      mlsys__cc_out(w, "(");
      mlsys__cc_expr(w, n->a, MLSYS__CC_PR_SEQ);
      mlsys__cc_out(w, ")");
      if (braces) {   /* only for trees no parse produces: if (a) if (b) x; [else of the outer if] */
        mlsys__cc_sp(w);
        mlsys__cc_out(w, "{");
        mlsys__cc_stmt(w, n->b);
        mlsys__cc_out(w, "}");
      } else {
        mlsys__cc_sub(w, n->b);
      }
      if (n->c) {
        if (MLSYS__CC_W(w, n->b).kind == MLSYS_CONTRACODE_JS_BLOCK_STATEMENT || braces || w->braces) mlsys__cc_sp(w);
        else mlsys__cc_nl(w);
        mlsys__cc_out(w, "else");
        if (MLSYS__CC_W(w, n->c).kind == MLSYS_CONTRACODE_JS_IF_STATEMENT) {
          mlsys__cc_sp(w);
          mlsys__cc_stmt(w, n->c);
        } else {
          mlsys__cc_sub(w, n->c);
        }
      }
      break;
    }
    case MLSYS_CONTRACODE_JS_LABELED_STATEMENT:
      mlsys__cc_text(w, n->a);
      mlsys__cc_out(w, ":");
      mlsys__cc_sp(w);
      mlsys__cc_stmt(w, n->b);
      break;
    case MLSYS_CONTRACODE_JS_BREAK_STATEMENT:
    case MLSYS_CONTRACODE_JS_CONTINUE_STATEMENT:
      mlsys__cc_out(w, n->kind == MLSYS_CONTRACODE_JS_BREAK_STATEMENT ? "break" : "continue");
      if (n->a) mlsys__cc_text(w, n->a);
      mlsys__cc_out(w, ";");
      break;
    case MLSYS_CONTRACODE_JS_WITH_STATEMENT:
    case MLSYS_CONTRACODE_JS_WHILE_STATEMENT:
      mlsys__cc_out(w, n->kind == MLSYS_CONTRACODE_JS_WITH_STATEMENT ? "with" : "while");
      mlsys__cc_sp(w);
      mlsys__cc_out(w, "(");
      mlsys__cc_expr(w, n->a, MLSYS__CC_PR_SEQ);
      mlsys__cc_out(w, ")");
      mlsys__cc_sub(w, n->b);
      break;
    case MLSYS_CONTRACODE_JS_DO_WHILE_STATEMENT:
      mlsys__cc_out(w, "do");
      mlsys__cc_sub(w, n->a);
      if (MLSYS__CC_W(w, n->a).kind == MLSYS_CONTRACODE_JS_BLOCK_STATEMENT || w->braces) mlsys__cc_sp(w);
      else mlsys__cc_nl(w);
      mlsys__cc_out(w, "while");
      mlsys__cc_sp(w);
      mlsys__cc_out(w, "(");
      mlsys__cc_expr(w, n->b, MLSYS__CC_PR_SEQ);
      mlsys__cc_out(w, ");");
      break;
    case MLSYS_CONTRACODE_JS_SWITCH_STATEMENT: {
      int c;
      mlsys__cc_out(w, "switch");
      mlsys__cc_sp(w);
      mlsys__cc_out(w, "(");
      mlsys__cc_expr(w, n->a, MLSYS__CC_PR_SEQ);
      mlsys__cc_out(w, ")");
      mlsys__cc_sp(w);
      mlsys__cc_out(w, "{");
      w->level++;
      for (c = n->b; c; c = MLSYS__CC_W(w, c).next) {
        int s;
        mlsys__cc_nl(w);
        if (MLSYS__CC_W(w, c).a) {
          mlsys__cc_out(w, "case");
          mlsys__cc_sp(w);
          mlsys__cc_expr(w, MLSYS__CC_W(w, c).a, MLSYS__CC_PR_SEQ);
        } else {
          mlsys__cc_out(w, "default");
        }
        mlsys__cc_out(w, ":");
        w->level++;
        for (s = MLSYS__CC_W(w, c).b; s; s = MLSYS__CC_W(w, s).next) {
          mlsys__cc_nl(w);
          mlsys__cc_stmt(w, s);
        }
        w->level--;
      }
      w->level--;
      if (n->b) mlsys__cc_nl(w);
      mlsys__cc_out(w, "}");
      break;
    }
    case MLSYS_CONTRACODE_JS_RETURN_STATEMENT:
    case MLSYS_CONTRACODE_JS_THROW_STATEMENT:
      mlsys__cc_out(w, n->kind == MLSYS_CONTRACODE_JS_RETURN_STATEMENT ? "return" : "throw");
      if (n->a) {
        mlsys__cc_sp(w);
        mlsys__cc_expr(w, n->a, MLSYS__CC_PR_SEQ);
      }
      mlsys__cc_out(w, ";");
      break;
    case MLSYS_CONTRACODE_JS_TRY_STATEMENT:
      mlsys__cc_out(w, "try");
      mlsys__cc_sp(w);
      mlsys__cc_body(w, n->a);
      if (n->b) {
        const mlsys__cc_node *c = &MLSYS__CC_W(w, n->b);
        mlsys__cc_sp(w);
        mlsys__cc_out(w, "catch");
        if (c->a) {
          mlsys__cc_sp(w);
          mlsys__cc_out(w, "(");
          mlsys__cc_expr(w, c->a, MLSYS__CC_PR_ASSIGN);
          mlsys__cc_out(w, ")");
        }
        mlsys__cc_sp(w);
        mlsys__cc_body(w, c->b);
      }
      if (n->c) {
        mlsys__cc_sp(w);
        mlsys__cc_out(w, "finally");
        mlsys__cc_sp(w);
        mlsys__cc_body(w, n->c);
      }
      break;
    case MLSYS_CONTRACODE_JS_FOR_STATEMENT:
      mlsys__cc_out(w, "for");
      mlsys__cc_sp(w);
      mlsys__cc_out(w, "(");
      if (n->a) {
        if (MLSYS__CC_W(w, n->a).kind == MLSYS_CONTRACODE_JS_VARIABLE_DECLARATION) {
          mlsys__cc_var_out(w, n->a, 1);
        } else {
          int wrap = mlsys__cc_contains_in(w, n->a) || mlsys__cc_is_name(w, mlsys__cc_leftmost(w, n->a), "let");
          if (wrap) mlsys__cc_out(w, "(");
          mlsys__cc_expr(w, n->a, MLSYS__CC_PR_SEQ);
          if (wrap) mlsys__cc_out(w, ")");
        }
      }
      mlsys__cc_out(w, ";");
      if (n->b) {
        mlsys__cc_sp(w);
        mlsys__cc_expr(w, n->b, MLSYS__CC_PR_SEQ);
      }
      mlsys__cc_out(w, ";");
      if (n->c) {
        mlsys__cc_sp(w);
        mlsys__cc_expr(w, n->c, MLSYS__CC_PR_SEQ);
      }
      mlsys__cc_out(w, ")");
      mlsys__cc_sub(w, n->d);
      break;
    case MLSYS_CONTRACODE_JS_FOR_IN_STATEMENT:
    case MLSYS_CONTRACODE_JS_FOR_OF_STATEMENT: {
      int of = n->kind == MLSYS_CONTRACODE_JS_FOR_OF_STATEMENT;
      mlsys__cc_out(w, "for");
      if (n->flags & MLSYS_CONTRACODE_JS_F_AWAIT) mlsys__cc_out(w, "await");
      mlsys__cc_sp(w);
      mlsys__cc_out(w, "(");
      if (MLSYS__CC_W(w, n->a).kind == MLSYS_CONTRACODE_JS_VARIABLE_DECLARATION) {
        mlsys__cc_var_out(w, n->a, 1);
      } else {
        int lm = mlsys__cc_leftmost(w, n->a);
        int wrap = mlsys__cc_is_name(w, lm, "let") || (of && mlsys__cc_is_name(w, n->a, "async"));
        if (wrap) mlsys__cc_out(w, "(");
        mlsys__cc_expr(w, n->a, wrap ? 0 : MLSYS__CC_PR_LHS);
        if (wrap) mlsys__cc_out(w, ")");
      }
      mlsys__cc_sp(w);
      mlsys__cc_out(w, of ? "of" : "in");
      mlsys__cc_sp(w);
      mlsys__cc_expr(w, n->b, of ? MLSYS__CC_PR_ASSIGN : MLSYS__CC_PR_SEQ);
      mlsys__cc_out(w, ")");
      mlsys__cc_sub(w, n->c);
      break;
    }
    case MLSYS_CONTRACODE_JS_DEBUGGER_STATEMENT: mlsys__cc_out(w, "debugger;"); break;
    case MLSYS_CONTRACODE_JS_FUNCTION_DECLARATION: mlsys__cc_fn(w, x, 0); break;
    case MLSYS_CONTRACODE_JS_CLASS_DECLARATION: mlsys__cc_class_out(w, x); break;
    case MLSYS_CONTRACODE_JS_VARIABLE_DECLARATION:
      mlsys__cc_var_out(w, x, 0);
      mlsys__cc_out(w, ";");
      break;
    case MLSYS_CONTRACODE_JS_IMPORT_DECLARATION: {
      int s, braces = 0, any = 0;
      mlsys__cc_out(w, "import");
      for (s = n->a; s; s = MLSYS__CC_W(w, s).next) {
        const mlsys__cc_node *sn = &MLSYS__CC_W(w, s);
        if (sn->kind == MLSYS_CONTRACODE_JS_IMPORT_SPECIFIER) {
          if (!braces) {
            if (any) mlsys__cc_comma(w);
            else mlsys__cc_sp(w);
            mlsys__cc_out(w, "{");
            braces = 1;
          } else {
            mlsys__cc_comma(w);
          }
          mlsys__cc_text(w, sn->a);
          if (!mlsys__cc_same_name(w, sn->a, sn->b)) {
            mlsys__cc_out(w, "as");
            mlsys__cc_text(w, sn->b);
          }
        } else {
          if (any) mlsys__cc_comma(w);
          else mlsys__cc_sp(w);
          if (sn->kind == MLSYS_CONTRACODE_JS_IMPORT_NAMESPACE_SPECIFIER) {
            mlsys__cc_out(w, "*");
            mlsys__cc_out(w, "as");
          }
          mlsys__cc_text(w, sn->a);
        }
        any = 1;
      }
      if (braces) mlsys__cc_out(w, "}");
      if (any) {
        mlsys__cc_sp(w);
        mlsys__cc_out(w, "from");
      }
      mlsys__cc_sp(w);
      mlsys__cc_text(w, n->b);
      mlsys__cc_out(w, ";");
      break;
    }
    case MLSYS_CONTRACODE_JS_EXPORT_NAMED_DECLARATION:
      mlsys__cc_out(w, "export");
      if (n->a) {
        mlsys__cc_sp(w);
        mlsys__cc_stmt(w, n->a);
      } else {
        int s;
        mlsys__cc_sp(w);
        mlsys__cc_out(w, "{");
        for (s = n->b; s; s = MLSYS__CC_W(w, s).next) {
          const mlsys__cc_node *sn = &MLSYS__CC_W(w, s);
          if (s != n->b) mlsys__cc_comma(w);
          mlsys__cc_text(w, sn->a);
          if (!mlsys__cc_same_name(w, sn->a, sn->b)) {
            mlsys__cc_out(w, "as");
            mlsys__cc_text(w, sn->b);
          }
        }
        mlsys__cc_out(w, "}");
        if (n->c) {
          mlsys__cc_sp(w);
          mlsys__cc_out(w, "from");
          mlsys__cc_sp(w);
          mlsys__cc_text(w, n->c);
        }
        mlsys__cc_out(w, ";");
      }
      break;
    case MLSYS_CONTRACODE_JS_EXPORT_DEFAULT_DECLARATION: {
      int d = n->a, k = MLSYS__CC_W(w, d).kind;
      mlsys__cc_out(w, "export");
      mlsys__cc_out(w, "default");
      mlsys__cc_sp(w);
      if (k == MLSYS_CONTRACODE_JS_FUNCTION_DECLARATION || k == MLSYS_CONTRACODE_JS_CLASS_DECLARATION) {
        mlsys__cc_stmt(w, d);
      } else {
        int lk = MLSYS__CC_W(w, mlsys__cc_leftmost(w, d)).kind;
        int wrap = lk == MLSYS_CONTRACODE_JS_FUNCTION_EXPRESSION || lk == MLSYS_CONTRACODE_JS_CLASS_EXPRESSION ||
                   mlsys__cc_is_name(w, mlsys__cc_leftmost(w, d), "async");
        if (wrap) mlsys__cc_out(w, "(");
        mlsys__cc_expr(w, d, wrap ? 0 : MLSYS__CC_PR_ASSIGN);
        if (wrap) mlsys__cc_out(w, ")");
        mlsys__cc_out(w, ";");
      }
      break;
    }
    case MLSYS_CONTRACODE_JS_EXPORT_ALL_DECLARATION:
      mlsys__cc_out(w, "export");
      mlsys__cc_out(w, "*");
      if (n->b) {
        mlsys__cc_out(w, "as");
        mlsys__cc_text(w, n->b);
      }
      mlsys__cc_sp(w);
      mlsys__cc_out(w, "from");
      mlsys__cc_sp(w);
      mlsys__cc_text(w, n->a);
      mlsys__cc_out(w, ";");
      break;
    default: mlsys__cc_out(w, "/*?*/"); w->oom = 2; break;
  }
}

MLSYS_DEF mlsys_status mlsys_contracode_js_print(const mlsys_contracode_js_ast *ast, const mlsys_contracode_js_print_opts *opts,
                                       char **out, size_t *outn) {
  mlsys__cc_pr w;
  int s;
  if (!ast || !out || !ast->nodes || !ast->root) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_contracode_js_print: no AST");
  *out = NULL;
  if (outn) *outn = 0;
  memset(&w, 0, sizeof w);
  w.ast = ast;
  w.beautify = opts && opts->beautify && opts->beautify != MLSYS_CONTRACODE_JS_TERSE;
  w.indent = opts && opts->indent > 0 ? opts->indent : 2;
  w.terse = opts && opts->beautify == MLSYS_CONTRACODE_JS_TERSE;
  if (opts) {
    if (opts->quote_style < MLSYS_CONTRACODE_JS_QUOTE_ORIGINAL || opts->quote_style > MLSYS_CONTRACODE_JS_QUOTE_DOUBLE)
      return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_contracode_js_print: quote_style %d is not 0..3", opts->quote_style);
    w.braces = opts->braces != 0;
    w.quote_style = opts->quote_style;
    w.quote_keys = opts->quote_keys != 0;
  }
  mlsys__cc_raw(&w, "", 0);
  for (s = ast->nodes[ast->root].a; s; s = ast->nodes[s].next) {
    if (s != ast->nodes[ast->root].a && w.beautify) mlsys__cc_raw(&w, "\n", 1);
    mlsys__cc_stmt(&w, s);
  }
  if (w.beautify && w.len) mlsys__cc_raw(&w, "\n", 1);
  if (w.oom) {
    free(w.buf);
    return w.oom == 2 ? mlsys_set_error(MLSYS_ERR_ARG, "mlsys_contracode_js_print: malformed AST")
                      : mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory printing JavaScript");
  }
  *out = w.buf;
  if (outn) *outn = w.len;
  return MLSYS_OK;
}

/* ---- canonical form, counts, function spans ---- */
static void mlsys__cc_canon(mlsys__cc_pr *w, int x) {
  const mlsys__cc_node *n = &MLSYS__CC_W(w, x);
  char tmp[64];
  int f[4], i;
  unsigned flags = n->flags & ~(unsigned)(MLSYS_CONTRACODE_JS_F_PAREN | MLSYS_CONTRACODE_JS_F_ESCAPED | MLSYS_CONTRACODE_JS_F_COVER);
  if (n->kind != MLSYS_CONTRACODE_JS_TEMPLATE_ELEMENT) flags &= ~(unsigned)MLSYS_CONTRACODE_JS_F_TAIL;   /* [...a,] marker */
  snprintf(tmp, sizeof tmp, "(%s", mlsys__cc_kind_names[n->kind < MLSYS_CONTRACODE_JS_KIND_COUNT ? n->kind : 0]);
  mlsys__cc_raw(w, tmp, strlen(tmp));
  if (n->op) {
    snprintf(tmp, sizeof tmp, " op%d", n->op);
    mlsys__cc_raw(w, tmp, strlen(tmp));
  }
  if (flags) {
    snprintf(tmp, sizeof tmp, " f%u", flags);
    mlsys__cc_raw(w, tmp, strlen(tmp));
  }
  if (n->kind == MLSYS_CONTRACODE_JS_IDENTIFIER || n->kind == MLSYS_CONTRACODE_JS_LITERAL ||
      n->kind == MLSYS_CONTRACODE_JS_TEMPLATE_ELEMENT || n->kind == MLSYS_CONTRACODE_JS_PRIVATE_IDENTIFIER) {
    snprintf(tmp, sizeof tmp, " %u:", n->slen);
    mlsys__cc_raw(w, tmp, strlen(tmp));
    mlsys__cc_raw(w, w->ast->text + n->str, n->slen);
  }
  f[0] = n->a; f[1] = n->b; f[2] = n->c; f[3] = n->d;
  for (i = 0; i < 4; i++) {
    int c;
    if (n->kind == MLSYS_CONTRACODE_JS_IDENTIFIER || n->kind == MLSYS_CONTRACODE_JS_LITERAL ||
        n->kind == MLSYS_CONTRACODE_JS_PRIVATE_IDENTIFIER)
      break;
    mlsys__cc_raw(w, " [", 2);
    for (c = f[i]; c; c = MLSYS__CC_W(w, c).next) mlsys__cc_canon(w, c);
    mlsys__cc_raw(w, "]", 1);
  }
  mlsys__cc_raw(w, ")", 1);
}
MLSYS_DEF mlsys_status mlsys_contracode_js_canonical(const mlsys_contracode_js_ast *ast, int node, char **out, size_t *outn) {
  mlsys__cc_pr w;
  if (!ast || !out || !ast->nodes || !ast->root) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_contracode_js_canonical: no AST");
  if (node < 0 || node >= ast->nnodes) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_contracode_js_canonical: bad node %d", node);
  memset(&w, 0, sizeof w);
  w.ast = ast;
  mlsys__cc_raw(&w, "", 0);
  mlsys__cc_canon(&w, node ? node : ast->root);
  if (w.oom) {
    free(w.buf);
    return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory");
  }
  *out = w.buf;
  if (outn) *outn = w.len;
  return MLSYS_OK;
}

static void mlsys__cc_count(const mlsys_contracode_js_ast *a, int x, long *counts) {
  for (; x; x = a->nodes[x].next) {
    const mlsys__cc_node *n = &a->nodes[x];
    counts[n->kind]++;
    mlsys__cc_count(a, n->a, counts);
    mlsys__cc_count(a, n->b, counts);
    mlsys__cc_count(a, n->c, counts);
    mlsys__cc_count(a, n->d, counts);
  }
}
MLSYS_DEF void mlsys_contracode_js_count_kinds(const mlsys_contracode_js_ast *ast, long *counts) {
  memset(counts, 0, MLSYS_CONTRACODE_JS_KIND_COUNT * sizeof *counts);
  if (ast && ast->nodes && ast->root) mlsys__cc_count(ast, ast->root, counts);
}

typedef struct {
  const mlsys_contracode_js_ast *ast;
  mlsys_contracode_fn_span *v;
  int n, cap, oom;
} mlsys__cc_fw;
static void mlsys__cc_fn_add(mlsys__cc_fw *f, int fn, int kind, uint32_t start, int name) {
  mlsys_contracode_fn_span *s;
  const mlsys_contracode_js_ast *a = f->ast;
  uint32_t i, end = a->nodes[fn].end;
  if (f->n == f->cap) {
    int nc = f->cap ? f->cap * 2 : 64;
    mlsys_contracode_fn_span *nv = (mlsys_contracode_fn_span *)realloc(f->v, (size_t)nc * sizeof *nv);
    if (!nv) { f->oom = 1; return; }
    f->v = nv;
    f->cap = nc;
  }
  s = &f->v[f->n++];
  memset(s, 0, sizeof *s);
  s->node = fn;
  s->kind = kind;
  s->start = start;
  s->end = end;
  if (name && (a->nodes[name].kind == MLSYS_CONTRACODE_JS_IDENTIFIER || a->nodes[name].kind == MLSYS_CONTRACODE_JS_LITERAL ||
               a->nodes[name].kind == MLSYS_CONTRACODE_JS_PRIVATE_IDENTIFIER)) {
    s->name_start = a->nodes[name].start;
    s->name_end = a->nodes[name].end;
  }
  s->nlines = 1;
  for (i = start; i < end && i < a->src_len; i++)
    if (a->text[i] == '\n' || (a->text[i] == '\r' && !(i + 1 < end && a->text[i + 1] == '\n'))) s->nlines++;
}
/* Pre-order walk; `hint` names the function a node is bound to (var f = function, f: () => ...). */
static void mlsys__cc_fwalk(mlsys__cc_fw *f, int x) {
  const mlsys_contracode_js_ast *a = f->ast;
  for (; x; x = a->nodes[x].next) {
    const mlsys__cc_node *n = &a->nodes[x];
    int k = n->kind;
    if (k == MLSYS_CONTRACODE_JS_FUNCTION_DECLARATION) mlsys__cc_fn_add(f, x, MLSYS_CONTRACODE_FN_DECLARATION, n->start, n->a);
    if ((k == MLSYS_CONTRACODE_JS_METHOD_DEFINITION) ||
        (k == MLSYS_CONTRACODE_JS_PROPERTY && ((n->flags & MLSYS_CONTRACODE_JS_F_METHOD) || n->op == MLSYS_CONTRACODE_JS_PROP_GET ||
                                               n->op == MLSYS_CONTRACODE_JS_PROP_SET))) {
      mlsys__cc_fn_add(f, n->b, MLSYS_CONTRACODE_FN_METHOD, n->start,
                       (n->flags & MLSYS_CONTRACODE_JS_F_COMPUTED) ? 0 : n->a);
      mlsys__cc_fwalk(f, n->a);
      mlsys__cc_fwalk(f, a->nodes[n->b].b);   /* the method's params and body, not the method again */
      mlsys__cc_fwalk(f, a->nodes[n->b].c);
      continue;
    }
    if (k == MLSYS_CONTRACODE_JS_FUNCTION_EXPRESSION || k == MLSYS_CONTRACODE_JS_ARROW_FUNCTION_EXPRESSION) {
      /* named by its own id; else by what it is bound to, which the parent recorded */
      mlsys__cc_fn_add(f, x, k == MLSYS_CONTRACODE_JS_ARROW_FUNCTION_EXPRESSION ? MLSYS_CONTRACODE_FN_ARROW : MLSYS_CONTRACODE_FN_EXPRESSION,
                       n->start, n->a);
    }
    {
      int bind = 0, val = 0;
      if (k == MLSYS_CONTRACODE_JS_VARIABLE_DECLARATOR) { bind = n->a; val = n->b; }
      else if (k == MLSYS_CONTRACODE_JS_ASSIGNMENT_EXPRESSION) {
        bind = n->a;
        val = n->b;
        if (a->nodes[bind].kind == MLSYS_CONTRACODE_JS_MEMBER_EXPRESSION && !(a->nodes[bind].flags & MLSYS_CONTRACODE_JS_F_COMPUTED))
          bind = a->nodes[bind].b;
      } else if (k == MLSYS_CONTRACODE_JS_PROPERTY && !(n->flags & MLSYS_CONTRACODE_JS_F_COMPUTED)) { bind = n->a; val = n->b; }
      else if (k == MLSYS_CONTRACODE_JS_PROPERTY_DEFINITION && !(n->flags & MLSYS_CONTRACODE_JS_F_COMPUTED)) { bind = n->a; val = n->b; }
      mlsys__cc_fwalk(f, n->a);
      if (val && (a->nodes[val].kind == MLSYS_CONTRACODE_JS_FUNCTION_EXPRESSION ||
                  a->nodes[val].kind == MLSYS_CONTRACODE_JS_ARROW_FUNCTION_EXPRESSION) && !a->nodes[val].a &&
          a->nodes[bind].kind == MLSYS_CONTRACODE_JS_IDENTIFIER) {
        int before = f->n;
        mlsys__cc_fwalk(f, val);   /* walks val and its siblings: val is a single child here */
        if (before < f->n && f->v[before].node == val) {
          f->v[before].name_start = a->nodes[bind].start;
          f->v[before].name_end = a->nodes[bind].end;
        }
      } else {
        mlsys__cc_fwalk(f, n->b);
      }
      mlsys__cc_fwalk(f, n->c);
      mlsys__cc_fwalk(f, n->d);
    }
  }
}
MLSYS_DEF mlsys_status mlsys_contracode_js_functions(const mlsys_contracode_js_ast *ast, mlsys_contracode_fn_span **out, int *n) {
  mlsys__cc_fw f;
  if (!ast || !out || !n || !ast->nodes || !ast->root) return mlsys_set_error(MLSYS_ERR_ARG, "mlsys_contracode_js_functions: no AST");
  memset(&f, 0, sizeof f);
  f.ast = ast;
  mlsys__cc_fwalk(&f, ast->nodes[ast->root].a);
  if (f.oom) {
    free(f.v);
    *out = NULL;
    *n = 0;
    return mlsys_set_error(MLSYS_ERR_NOMEM, "out of memory listing functions");
  }
  *out = f.v;
  *n = f.n;
  return MLSYS_OK;
}

/* [end of section 1 implementation] */

/* ---------------------------------------------------------------------------------------------------------------
   2. Scope analysis (implementation)
   --------------------------------------------------------------------------------------------------------------- */
typedef struct {
  mlsys_contracode_scopes *s;
  const mlsys_contracode_js_ast *a;
  int mode;      /* 0: open scopes and declare; 1: resolve */
  int in_with;   /* scopes opened inside a with body are unsafe */
  int nomem;
  uint8_t *in_params;   /* mode 1, per scope: its parameter list is being walked (only params are visible there) */
} mlsys__sc;
#define MLSYS__SC_N(c, i) ((c)->a->nodes[i])

static int mlsys__sc_open(mlsys__sc *c, int kind, int parent, int node) {
  mlsys_contracode_scopes *s = c->s;
  mlsys_contracode_scope *sc;
  if (c->mode) return s->node_scope[node];
  if (s->nscopes % 64 == 0) {
    mlsys_contracode_scope *ns = (mlsys_contracode_scope *)realloc(s->scopes, (size_t)(s->nscopes + 64) * sizeof *ns);
    if (!ns) { c->nomem = 1; return parent; }
    s->scopes = ns;
  }
  sc = &s->scopes[s->nscopes];
  memset(sc, 0, sizeof *sc);
  sc->kind = kind;
  sc->parent = parent;
  sc->node = node;
  sc->first = -1;
  sc->unsafe = c->in_with > 0;
  sc->fn = (kind == MLSYS_CONTRACODE_SCOPE_FUNCTION || kind == MLSYS_CONTRACODE_SCOPE_GLOBAL ||
            kind == MLSYS_CONTRACODE_SCOPE_MODULE) ? s->nscopes : s->scopes[parent].fn;
  if (kind != MLSYS_CONTRACODE_SCOPE_FNAME && kind != MLSYS_CONTRACODE_SCOPE_CLASS) s->node_scope[node] = s->nscopes;
  return s->nscopes++;
}
static int mlsys__sc_in(const mlsys_contracode_scopes *s, int scope, const char *name, size_t n) {
  int b;
  for (b = s->scopes[scope].first; b >= 0; b = s->bindings[b].next)
    if (s->bindings[b].slen == n && !memcmp(s->ast->text + s->bindings[b].str, name, n)) return b;
  return -1;
}
static void mlsys__sc_declare(mlsys__sc *c, int scope, int id, int kind, int pidx) {
  mlsys_contracode_scopes *s = c->s;
  const mlsys_contracode_js_node *nd = &MLSYS__SC_N(c, id);
  mlsys_contracode_binding *b;
  if (mlsys__sc_in(s, scope, c->a->text + nd->str, nd->slen) >= 0) return;
  if (s->nbindings % 256 == 0) {
    mlsys_contracode_binding *nb =
        (mlsys_contracode_binding *)realloc(s->bindings, (size_t)(s->nbindings + 256) * sizeof *nb);
    if (!nb) { c->nomem = 1; return; }
    s->bindings = nb;
  }
  b = &s->bindings[s->nbindings];
  memset(b, 0, sizeof *b);
  b->str = nd->str;
  b->slen = nd->slen;
  b->kind = kind;
  b->scope = scope;
  b->decl = id;
  b->param_index = kind == MLSYS_CONTRACODE_BIND_PARAM ? pidx : -1;
  b->next = s->scopes[scope].first;   /* newest first; lookups do not care about order */
  s->scopes[scope].first = s->nbindings++;
}
MLSYS_DEF int mlsys_contracode_scope_lookup(const mlsys_contracode_scopes *s, int scope, const char *name, size_t n) {
  for (; scope >= 0; scope = s->scopes[scope].parent) {
    int b = mlsys__sc_in(s, scope, name, n);
    if (b >= 0) return b;
  }
  return -1;
}
MLSYS_DEF int mlsys_contracode_scope_is_free(const mlsys_contracode_scopes *s, int scope, const char *name) {
  return mlsys_contracode_scope_lookup(s, scope, name, strlen(name)) < 0;
}
static void mlsys__sc_unsafe_chain(mlsys_contracode_scopes *s, int scope) {
  for (; scope >= 0; scope = s->scopes[scope].parent) s->scopes[scope].unsafe = 1;
}
/* mode 1: resolve an Identifier in a name position. */
static void mlsys__sc_ref(mlsys__sc *c, int id, int scope, int decl) {
  mlsys_contracode_scopes *s = c->s;
  const mlsys_contracode_js_node *nd = &MLSYS__SC_N(c, id);
  const char *nm = c->a->text + nd->str;
  int b, sc;
  if (!c->mode) return;
  /* a default value sees the parameters but not the body's declarations (`function f(a=b){var b}`: outer b) */
  for (b = -1, sc = scope; sc >= 0; sc = s->scopes[sc].parent) {
    b = mlsys__sc_in(s, sc, nm, nd->slen);
    if (b >= 0 && c->in_params[sc] && s->bindings[b].kind != MLSYS_CONTRACODE_BIND_PARAM) b = -1;
    if (b >= 0) break;
  }
  s->id_scope[id] = scope;
  if (b < 0 && nd->slen == 9 && !memcmp(nm, "arguments", 9)) {
    int f = scope;
    while (f >= 0 && !(s->scopes[f].kind == MLSYS_CONTRACODE_SCOPE_FUNCTION && !s->scopes[f].arrow))
      f = s->scopes[f].parent;
    if (f >= 0) {
      s->scopes[f].uses_arguments = 1;
      return;   /* the implicit object: neither a binding nor free */
    }
  }
  s->resolved[id] = b >= 0 ? b + 1 : -1;
  if (b >= 0) {
    s->is_decl[id] = (uint8_t)decl;
    if (decl) s->bindings[b].ndecls++;
    else s->bindings[b].nrefs++;
  }
}
static void mlsys__sc_walk(mlsys__sc *c, int x, int scope);
static void mlsys__sc_list(mlsys__sc *c, int x, int scope) {
  for (; x; x = MLSYS__SC_N(c, x).next) mlsys__sc_walk(c, x, scope);
}
/* A binding pattern: declares into dscope (mode 0), resolves from scope (mode 1). */
static void mlsys__sc_pat(mlsys__sc *c, int x, int dscope, int scope, int kind, int pidx) {
  const mlsys_contracode_js_node *n;
  int e;
  if (!x) return;
  n = &MLSYS__SC_N(c, x);
  switch (n->kind) {
  case MLSYS_CONTRACODE_JS_IDENTIFIER:
    if (!c->mode) mlsys__sc_declare(c, dscope, x, kind, pidx);
    else mlsys__sc_ref(c, x, scope, 1);
    break;
  case MLSYS_CONTRACODE_JS_OBJECT_PATTERN:
    for (e = n->a; e; e = MLSYS__SC_N(c, e).next) {
      const mlsys_contracode_js_node *p = &MLSYS__SC_N(c, e);
      if (p->kind == MLSYS_CONTRACODE_JS_PROPERTY) {
        if (p->flags & MLSYS_CONTRACODE_JS_F_COMPUTED) mlsys__sc_walk(c, p->a, scope);
        mlsys__sc_pat(c, p->b, dscope, scope, kind, pidx);
      } else mlsys__sc_pat(c, e, dscope, scope, kind, pidx);
    }
    break;
  case MLSYS_CONTRACODE_JS_ARRAY_PATTERN:
    for (e = n->a; e; e = MLSYS__SC_N(c, e).next) mlsys__sc_pat(c, e, dscope, scope, kind, pidx);
    break;
  case MLSYS_CONTRACODE_JS_ASSIGNMENT_PATTERN:
    mlsys__sc_pat(c, n->a, dscope, scope, kind, pidx);
    mlsys__sc_walk(c, n->b, scope);
    break;
  case MLSYS_CONTRACODE_JS_REST_ELEMENT:
    mlsys__sc_pat(c, n->a, dscope, scope, kind, pidx);
    break;
  case MLSYS_CONTRACODE_JS_HOLE: break;
  default: mlsys__sc_walk(c, x, scope);   /* a member expression target (for (a.b in o)) */
  }
}
static void mlsys__sc_function(mlsys__sc *c, int x, int scope) {
  const mlsys_contracode_js_node *n = &MLSYS__SC_N(c, x);
  mlsys_contracode_scopes *s = c->s;
  int outer = scope, fs, p, i = 0;
  if (n->a && n->kind == MLSYS_CONTRACODE_JS_FUNCTION_DECLARATION) {
    int ds = (c->a->module || s->scopes[scope].kind == MLSYS_CONTRACODE_SCOPE_FUNCTION) ? scope : s->scopes[scope].fn;
    if (!c->mode) mlsys__sc_declare(c, ds, n->a, MLSYS_CONTRACODE_BIND_FUNCTION, -1);
    else mlsys__sc_ref(c, n->a, scope, 1);
  } else if (n->a) {   /* a named function expression sees its own name just outside its scope */
    if (!c->mode) {
      outer = mlsys__sc_open(c, MLSYS_CONTRACODE_SCOPE_FNAME, scope, x);
      mlsys__sc_declare(c, outer, n->a, MLSYS_CONTRACODE_BIND_FNAME, -1);
    } else {
      outer = s->scopes[s->node_scope[x]].parent;
      mlsys__sc_ref(c, n->a, outer, 1);
    }
  }
  fs = mlsys__sc_open(c, MLSYS_CONTRACODE_SCOPE_FUNCTION, outer, x);
  if (!c->mode && !c->nomem) s->scopes[fs].arrow = n->kind == MLSYS_CONTRACODE_JS_ARROW_FUNCTION_EXPRESSION;
  if (c->mode && !c->nomem) c->in_params[fs] = 1;
  for (p = n->b; p; p = MLSYS__SC_N(c, p).next, i++) mlsys__sc_pat(c, p, fs, fs, MLSYS_CONTRACODE_BIND_PARAM, i);
  if (c->mode && !c->nomem) c->in_params[fs] = 0;
  n = &MLSYS__SC_N(c, x);
  if (n->flags & MLSYS_CONTRACODE_JS_F_EXPRESSION) mlsys__sc_walk(c, n->c, fs);
  else if (n->c) mlsys__sc_list(c, MLSYS__SC_N(c, n->c).a, fs);
}
static void mlsys__sc_walk(mlsys__sc *c, int x, int scope) {
  mlsys_contracode_scopes *s = c->s;
  mlsys_contracode_js_node n;
  int e, sc;
  if (!x || c->nomem) return;
  n = MLSYS__SC_N(c, x);
  switch (n.kind) {
  case MLSYS_CONTRACODE_JS_IDENTIFIER: mlsys__sc_ref(c, x, scope, 0); return;
  case MLSYS_CONTRACODE_JS_FUNCTION_DECLARATION: case MLSYS_CONTRACODE_JS_FUNCTION_EXPRESSION:
  case MLSYS_CONTRACODE_JS_ARROW_FUNCTION_EXPRESSION:
    mlsys__sc_function(c, x, scope);
    return;
  case MLSYS_CONTRACODE_JS_CLASS_DECLARATION: case MLSYS_CONTRACODE_JS_CLASS_EXPRESSION:
    if (n.a && n.kind == MLSYS_CONTRACODE_JS_CLASS_DECLARATION) {
      if (!c->mode) mlsys__sc_declare(c, scope, n.a, MLSYS_CONTRACODE_BIND_CLASS, -1);
      else mlsys__sc_ref(c, n.a, scope, 1);
    }
    mlsys__sc_walk(c, n.b, scope);
    if (n.a && n.kind == MLSYS_CONTRACODE_JS_CLASS_EXPRESSION) {
      if (!c->mode) {
        scope = mlsys__sc_open(c, MLSYS_CONTRACODE_SCOPE_CLASS, scope, x);
        s->node_scope[x] = scope;
        mlsys__sc_declare(c, scope, n.a, MLSYS_CONTRACODE_BIND_CLASS, -1);
      } else {
        scope = s->node_scope[x];
        mlsys__sc_ref(c, n.a, scope, 1);
      }
    }
    mlsys__sc_walk(c, n.c, scope);
    return;
  case MLSYS_CONTRACODE_JS_METHOD_DEFINITION: case MLSYS_CONTRACODE_JS_PROPERTY_DEFINITION:
  case MLSYS_CONTRACODE_JS_PROPERTY:
    if (n.flags & MLSYS_CONTRACODE_JS_F_COMPUTED) mlsys__sc_walk(c, n.a, scope);
    mlsys__sc_walk(c, n.b, scope);
    return;
  case MLSYS_CONTRACODE_JS_MEMBER_EXPRESSION:
    mlsys__sc_walk(c, n.a, scope);
    if (n.flags & MLSYS_CONTRACODE_JS_F_COMPUTED) mlsys__sc_walk(c, n.b, scope);
    return;
  case MLSYS_CONTRACODE_JS_LABELED_STATEMENT: mlsys__sc_walk(c, n.b, scope); return;
  case MLSYS_CONTRACODE_JS_BREAK_STATEMENT: case MLSYS_CONTRACODE_JS_CONTINUE_STATEMENT:
  case MLSYS_CONTRACODE_JS_META_PROPERTY: case MLSYS_CONTRACODE_JS_PRIVATE_IDENTIFIER:
  case MLSYS_CONTRACODE_JS_EXPORT_ALL_DECLARATION:
    return;
  case MLSYS_CONTRACODE_JS_BLOCK_STATEMENT:
    mlsys__sc_list(c, n.a, mlsys__sc_open(c, MLSYS_CONTRACODE_SCOPE_BLOCK, scope, x));
    return;
  case MLSYS_CONTRACODE_JS_STATIC_BLOCK:   /* var scope of its own; `arguments` is not allowed in it */
    sc = mlsys__sc_open(c, MLSYS_CONTRACODE_SCOPE_FUNCTION, scope, x);
    if (!c->mode && !c->nomem) s->scopes[sc].arrow = 1;
    mlsys__sc_list(c, n.a, sc);
    return;
  case MLSYS_CONTRACODE_JS_VARIABLE_DECLARATION: {
    int kind = n.op == MLSYS_CONTRACODE_JS_VAR ? MLSYS_CONTRACODE_BIND_VAR
               : n.op == MLSYS_CONTRACODE_JS_LET ? MLSYS_CONTRACODE_BIND_LET : MLSYS_CONTRACODE_BIND_CONST;
    int ds = n.op == MLSYS_CONTRACODE_JS_VAR ? s->scopes[scope].fn : scope;
    for (e = n.a; e; e = MLSYS__SC_N(c, e).next) {
      mlsys__sc_pat(c, MLSYS__SC_N(c, e).a, ds, scope, kind, -1);
      mlsys__sc_walk(c, MLSYS__SC_N(c, e).b, scope);
    }
    return;
  }
  case MLSYS_CONTRACODE_JS_FOR_STATEMENT: case MLSYS_CONTRACODE_JS_FOR_IN_STATEMENT:
  case MLSYS_CONTRACODE_JS_FOR_OF_STATEMENT:
    if (n.a && MLSYS__SC_N(c, n.a).kind == MLSYS_CONTRACODE_JS_VARIABLE_DECLARATION &&
        MLSYS__SC_N(c, n.a).op != MLSYS_CONTRACODE_JS_VAR)
      scope = mlsys__sc_open(c, MLSYS_CONTRACODE_SCOPE_BLOCK, scope, x);
    break;   /* children below */
  case MLSYS_CONTRACODE_JS_SWITCH_STATEMENT:
    mlsys__sc_walk(c, n.a, scope);
    sc = mlsys__sc_open(c, MLSYS_CONTRACODE_SCOPE_BLOCK, scope, x);
    for (e = n.b; e; e = MLSYS__SC_N(c, e).next) {
      mlsys__sc_walk(c, MLSYS__SC_N(c, e).a, sc);
      mlsys__sc_list(c, MLSYS__SC_N(c, e).b, sc);
    }
    return;
  case MLSYS_CONTRACODE_JS_CATCH_CLAUSE:
    sc = mlsys__sc_open(c, MLSYS_CONTRACODE_SCOPE_CATCH, scope, x);
    mlsys__sc_pat(c, n.a, sc, sc, MLSYS_CONTRACODE_BIND_CATCH, -1);
    if (n.b) mlsys__sc_list(c, MLSYS__SC_N(c, n.b).a, sc);
    return;
  case MLSYS_CONTRACODE_JS_WITH_STATEMENT:
    mlsys__sc_walk(c, n.a, scope);
    if (!c->mode) mlsys__sc_unsafe_chain(s, scope);
    c->in_with++;
    mlsys__sc_walk(c, n.b, scope);
    c->in_with--;
    return;
  case MLSYS_CONTRACODE_JS_CALL_EXPRESSION: {
    const mlsys_contracode_js_node *cal = &MLSYS__SC_N(c, n.a);
    if (c->mode && cal->kind == MLSYS_CONTRACODE_JS_IDENTIFIER && cal->slen == 4 &&
        !memcmp(c->a->text + cal->str, "eval", 4) && mlsys_contracode_scope_lookup(s, scope, "eval", 4) < 0)
      mlsys__sc_unsafe_chain(s, scope);
    break;
  }
  case MLSYS_CONTRACODE_JS_IMPORT_DECLARATION:
    for (e = n.a; e; e = MLSYS__SC_N(c, e).next) {
      const mlsys_contracode_js_node *sp = &MLSYS__SC_N(c, e);
      int loc = sp->kind == MLSYS_CONTRACODE_JS_IMPORT_SPECIFIER ? sp->b : sp->a;
      if (!c->mode) mlsys__sc_declare(c, scope, loc, MLSYS_CONTRACODE_BIND_IMPORT, -1);
      else mlsys__sc_ref(c, loc, scope, 1);
    }
    return;
  case MLSYS_CONTRACODE_JS_EXPORT_NAMED_DECLARATION:
    mlsys__sc_walk(c, n.a, scope);
    if (!n.c)
      for (e = n.b; e; e = MLSYS__SC_N(c, e).next) mlsys__sc_walk(c, MLSYS__SC_N(c, e).a, scope);
    return;
  default: break;
  }
  mlsys__sc_list(c, n.a, scope);
  mlsys__sc_list(c, n.b, scope);
  mlsys__sc_list(c, n.c, scope);
  mlsys__sc_list(c, n.d, scope);
}
MLSYS_DEF void mlsys_contracode_scope_free(mlsys_contracode_scopes *s) {
  if (!s) return;
  free(s->scopes);
  free(s->bindings);
  free(s->node_scope);
  free(s->resolved);
  free(s->is_decl);
  free(s->id_scope);
  memset(s, 0, sizeof *s);
}
MLSYS_DEF mlsys_status mlsys_contracode_scope_build(const mlsys_contracode_js_ast *ast, mlsys_contracode_scopes *s) {
  mlsys__sc c;
  int i, ps;
  if (!s) return mlsys_set_error(MLSYS_ERR_ARG, "scope_build: NULL output");
  memset(s, 0, sizeof *s);
  if (!ast || !ast->nodes || ast->root <= 0 || ast->root >= ast->nnodes)
    return mlsys_set_error(MLSYS_ERR_ARG, "scope_build: not a parsed AST");
  s->ast = ast;
  s->nnodes = ast->nnodes;
  s->node_scope = (int *)malloc((size_t)ast->nnodes * sizeof(int));
  s->resolved = (int *)calloc((size_t)ast->nnodes, sizeof(int));
  s->is_decl = (uint8_t *)calloc((size_t)ast->nnodes, 1);
  s->id_scope = (int *)malloc((size_t)ast->nnodes * sizeof(int));
  if (!s->node_scope || !s->resolved || !s->is_decl || !s->id_scope) {
    mlsys_contracode_scope_free(s);
    return mlsys_set_error(MLSYS_ERR_NOMEM, "scope_build: out of memory (%d nodes)", ast->nnodes);
  }
  for (i = 0; i < ast->nnodes; i++) s->node_scope[i] = s->id_scope[i] = -1;
  memset(&c, 0, sizeof c);
  c.s = s;
  c.a = ast;
  ps = mlsys__sc_open(&c, ast->module ? MLSYS_CONTRACODE_SCOPE_MODULE : MLSYS_CONTRACODE_SCOPE_GLOBAL, -1, ast->root);
  for (c.mode = 0; c.mode < 2 && !c.nomem; c.mode++) {
    if (c.mode == 1 && !(c.in_params = (uint8_t *)calloc((size_t)s->nscopes, 1))) {
      c.nomem = 1;
      break;
    }
    mlsys__sc_list(&c, ast->nodes[ast->root].a, ps);
  }
  free(c.in_params);
  if (c.nomem) {
    mlsys_contracode_scope_free(s);
    return mlsys_set_error(MLSYS_ERR_NOMEM, "scope_build: out of memory");
  }
  return MLSYS_OK;
}
MLSYS_DEF mlsys_status mlsys_contracode_scope_params(const mlsys_contracode_scopes *s, int fn, int **out, int *n) {
  int fs, b, k = 0, cnt = 0, pass;
  *out = NULL;
  *n = 0;
  if (!s || fn <= 0 || fn >= s->nnodes || s->node_scope[fn] < 0 ||
      s->scopes[s->node_scope[fn]].kind != MLSYS_CONTRACODE_SCOPE_FUNCTION || s->scopes[s->node_scope[fn]].node != fn ||
      s->ast->nodes[fn].kind == MLSYS_CONTRACODE_JS_STATIC_BLOCK)
    return mlsys_set_error(MLSYS_ERR_ARG, "scope_params: node %d is not a function", fn);
  fs = s->node_scope[fn];
  /* bindings are numbered in declaration order, parameters first */
  for (pass = 0; pass < 2; pass++) {
    for (b = 0; b < s->nbindings; b++)
      if (s->bindings[b].scope == fs && s->bindings[b].kind == MLSYS_CONTRACODE_BIND_PARAM) {
        if (pass) (*out)[k++] = b;
        else cnt++;
      }
    if (!pass) {
      if (!cnt) return MLSYS_OK;
      *out = (int *)malloc((size_t)cnt * sizeof(int));
      if (!*out) return mlsys_set_error(MLSYS_ERR_NOMEM, "scope_params: out of memory");
    }
  }
  *n = k;
  return MLSYS_OK;
}
MLSYS_DEF mlsys_status mlsys_contracode_scope_refs(const mlsys_contracode_scopes *s, int b, int **out, int *n) {
  int i, k = 0, cnt;
  *out = NULL;
  *n = 0;
  if (!s || b < 0 || b >= s->nbindings) return mlsys_set_error(MLSYS_ERR_ARG, "scope_refs: no binding %d", b);
  cnt = s->bindings[b].nrefs + s->bindings[b].ndecls;
  if (!cnt) return MLSYS_OK;
  *out = (int *)malloc((size_t)cnt * sizeof(int));
  if (!*out) return mlsys_set_error(MLSYS_ERR_NOMEM, "scope_refs: out of memory");
  for (i = 1; i < s->nnodes && k < cnt; i++)
    if (s->resolved[i] == b + 1) (*out)[k++] = i;
  *n = k;
  return MLSYS_OK;
}

/* [end of section 2 implementation] */

/* ---------------------------------------------------------------------------------------------------------------
   3. Transforms (implementation)
   --------------------------------------------------------------------------------------------------------------- */
static int mlsys__tr_reserved(const char *s, size_t n) {
  static const char *const extra[] = {"let", "static", "yield", "await", "implements", "package", "protected",
                                      "interface", "private", "public", "enum", "null", "true", "false",
                                      "arguments", "eval", "undefined", "NaN", "Infinity"};
  size_t i;
  if (mlsys__cc_keyword(s, (uint32_t)n)) return 1;
  for (i = 0; i < sizeof extra / sizeof extra[0]; i++)
    if (strlen(extra[i]) == n && !memcmp(extra[i], s, n)) return 1;
  return 0;
}
static int mlsys__tr_has_name(const mlsys_contracode_js_ast *a, int x, const char *name, size_t n) {
  const mlsys_contracode_js_node *nd = &a->nodes[x];
  int ch[4], i, c;
  if (nd->kind == MLSYS_CONTRACODE_JS_IDENTIFIER && nd->slen == n && !memcmp(a->text + nd->str, name, n)) return 1;
  ch[0] = nd->a; ch[1] = nd->b; ch[2] = nd->c; ch[3] = nd->d;
  for (i = 0; i < 4; i++)
    for (c = ch[i]; c; c = a->nodes[c].next)
      if (mlsys__tr_has_name(a, c, name, n)) return 1;
  return 0;
}
static int mlsys__tr_is_fn(const mlsys_contracode_js_ast *a, int fn) {
  int k;
  if (!a || fn <= 0 || fn >= a->nnodes) return 0;
  k = a->nodes[fn].kind;
  return k == MLSYS_CONTRACODE_JS_FUNCTION_DECLARATION || k == MLSYS_CONTRACODE_JS_FUNCTION_EXPRESSION ||
         k == MLSYS_CONTRACODE_JS_ARROW_FUNCTION_EXPRESSION;
}
MLSYS_DEF int mlsys_contracode_name_is_fresh(const mlsys_contracode_js_ast *ast, int fn, const char *name) {
  size_t i, n;
  if (!name || !mlsys__tr_is_fn(ast, fn)) return 0;
  n = strlen(name);
  if (!n || (name[0] >= '0' && name[0] <= '9')) return 0;
  for (i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)name[i];
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '$'))
      return 0;
  }
  return !mlsys__tr_reserved(name, n) && !mlsys__tr_has_name(ast, fn, name, n);
}
/* Appends name to ast->text; its offset, or -1 without memory. */
static long mlsys__tr_add_text(mlsys_contracode_js_ast *a, const char *s, size_t n) {
  long off;
  if (a->text_len + n + 1 > a->text_cap) {
    size_t nc = (a->text_len + n + 1) * 2;
    char *t = (char *)realloc(a->text, nc);
    if (!t) return -1;
    a->text = t;
    a->text_cap = nc;
  }
  off = (long)a->text_len;
  memcpy(a->text + a->text_len, s, n);
  a->text_len += n;
  a->text[a->text_len] = 0;
  return off;
}
static int mlsys__tr_new_node(mlsys_contracode_js_ast *a, int kind) {
  if (a->nnodes == a->cap) {
    int nc = a->cap ? a->cap * 2 : 256;
    mlsys_contracode_js_node *nn = (mlsys_contracode_js_node *)realloc(a->nodes, (size_t)nc * sizeof *nn);
    if (!nn) return 0;
    a->nodes = nn;
    a->cap = nc;
  }
  memset(&a->nodes[a->nnodes], 0, sizeof a->nodes[0]);
  a->nodes[a->nnodes].kind = (uint16_t)kind;
  return a->nnodes++;
}
static mlsys_status mlsys__tr_check_fresh(const mlsys_contracode_js_ast *ast, int fn, const char *name, const char *what) {
  if (!mlsys__tr_is_fn(ast, fn)) return mlsys_set_error(MLSYS_ERR_ARG, "%s: node %d is not a function", what, fn);
  if (!name || !mlsys_contracode_name_is_fresh(ast, fn, name))
    return mlsys_set_error(MLSYS_ERR_ARG, "%s: name '%s' is not fresh in the function (reserved, not an identifier, or "
                           "already used in it)", what, name ? name : "(null)");
  return MLSYS_OK;
}
MLSYS_DEF mlsys_status mlsys_contracode_rename_param(mlsys_contracode_js_ast *ast, int fn, int param_index,
                                                     const char *new_name) {
  mlsys_contracode_scopes s;
  mlsys_status st;
  int p, i, id, b, *refs = NULL, nrefs = 0;
  long off;
  if ((st = mlsys__tr_check_fresh(ast, fn, new_name, "rename_param")) != MLSYS_OK) return st;
  for (p = ast->nodes[fn].b, i = 0; p && i < param_index; p = ast->nodes[p].next) i++;
  if (param_index < 0 || !p)
    return mlsys_set_error(MLSYS_ERR_ARG, "rename_param: the function has no parameter %d", param_index);
  id = p;
  if (ast->nodes[id].kind == MLSYS_CONTRACODE_JS_ASSIGNMENT_PATTERN || ast->nodes[id].kind == MLSYS_CONTRACODE_JS_REST_ELEMENT)
    id = ast->nodes[id].a;
  if (ast->nodes[id].kind != MLSYS_CONTRACODE_JS_IDENTIFIER)
    return mlsys_set_error(MLSYS_ERR_ARG, "rename_param: parameter %d is a destructuring pattern", param_index);
  if ((st = mlsys_contracode_scope_build(ast, &s)) != MLSYS_OK) return st;
  if (s.scopes[s.node_scope[fn]].unsafe) {
    mlsys_contracode_scope_free(&s);
    return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "rename_param: eval or with can see the function's scope");
  }
  b = s.resolved[id] - 1;
  st = b >= 0 ? mlsys_contracode_scope_refs(&s, b, &refs, &nrefs)
              : mlsys_set_error(MLSYS_ERR_ARG, "rename_param: parameter %d has no binding", param_index);
  mlsys_contracode_scope_free(&s);
  if (st != MLSYS_OK) return st;
  off = mlsys__tr_add_text(ast, new_name, strlen(new_name));
  if (off < 0) {
    free(refs);
    return mlsys_set_error(MLSYS_ERR_NOMEM, "rename_param: out of memory");
  }
  for (i = 0; i < nrefs; i++) {
    ast->nodes[refs[i]].str = (uint32_t)off;
    ast->nodes[refs[i]].slen = (uint32_t)strlen(new_name);
    ast->nodes[refs[i]].flags &= (uint16_t)~MLSYS_CONTRACODE_JS_F_ESCAPED;
  }
  free(refs);
  return MLSYS_OK;
}
MLSYS_DEF mlsys_status mlsys_contracode_insert_var(mlsys_contracode_js_ast *ast, int fn, const char *name) {
  mlsys_status st;
  int id, dr, dc, body, prev = 0, s;
  long off;
  if ((st = mlsys__tr_check_fresh(ast, fn, name, "insert_var")) != MLSYS_OK) return st;
  if ((ast->nodes[fn].flags & MLSYS_CONTRACODE_JS_F_EXPRESSION) || !ast->nodes[fn].c)
    return mlsys_set_error(MLSYS_ERR_ARG, "insert_var: an arrow function with an expression body has no statements");
  off = mlsys__tr_add_text(ast, name, strlen(name));
  if (off < 0 || !(id = mlsys__tr_new_node(ast, MLSYS_CONTRACODE_JS_IDENTIFIER)) ||
      !(dr = mlsys__tr_new_node(ast, MLSYS_CONTRACODE_JS_VARIABLE_DECLARATOR)) ||
      !(dc = mlsys__tr_new_node(ast, MLSYS_CONTRACODE_JS_VARIABLE_DECLARATION)))
    return mlsys_set_error(MLSYS_ERR_NOMEM, "insert_var: out of memory");
  ast->nodes[id].str = (uint32_t)off;
  ast->nodes[id].slen = (uint32_t)strlen(name);
  ast->nodes[dr].a = id;
  ast->nodes[dc].a = dr;
  ast->nodes[dc].op = MLSYS_CONTRACODE_JS_VAR;
  body = ast->nodes[fn].c;
  for (s = ast->nodes[body].a; s && (ast->nodes[s].flags & MLSYS_CONTRACODE_JS_F_DIRECTIVE); s = ast->nodes[s].next) prev = s;
  ast->nodes[dc].next = s;
  if (prev) ast->nodes[prev].next = dc;
  else ast->nodes[body].a = dc;
  return MLSYS_OK;
}

/* T3 candidates: a..z A..Z $ _ (54), then two characters (first from those 54, second from them or a digit). */
#define MLSYS__TR_NCAND (54 + 54 * 64)
static const char mlsys__tr_c1[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ$_0123456789";
static int mlsys__tr_cidx(const char *s, size_t n) {
  const char *p, *q;
  if (n < 1 || n > 2 || !(p = (const char *)memchr(mlsys__tr_c1, s[0], 54))) return -1;
  if (n == 1) return (int)(p - mlsys__tr_c1);
  if (!(q = (const char *)memchr(mlsys__tr_c1, s[1], 64))) return -1;
  return 54 + (int)(p - mlsys__tr_c1) * 64 + (int)(q - mlsys__tr_c1);
}
static size_t mlsys__tr_cname(int k, char *out) {
  if (k < 54) { out[0] = mlsys__tr_c1[k]; out[1] = 0; return 1; }
  out[0] = mlsys__tr_c1[(k - 54) / 64];
  out[1] = mlsys__tr_c1[(k - 54) % 64];
  out[2] = 0;
  return 2;
}
#define MLSYS__TR_FW ((MLSYS__TR_NCAND + 63) / 64)
MLSYS_DEF mlsys_status mlsys_contracode_mangle(mlsys_contracode_js_ast *ast, int *nrenamed) {
  mlsys_contracode_scopes s;
  mlsys_status st;
  uint64_t *forb = NULL, *forbb;
  int *start = NULL, *occ = NULL, i, b, sc, k, count = 0;
  long off[MLSYS__TR_NCAND];
  if (nrenamed) *nrenamed = 0;
  if ((st = mlsys_contracode_scope_build(ast, &s)) != MLSYS_OK) return st;
  forb = (uint64_t *)calloc((size_t)s.nscopes * MLSYS__TR_FW * 2, sizeof(uint64_t));
  start = (int *)calloc((size_t)s.nbindings + 1, sizeof(int));
  occ = (int *)malloc((size_t)s.nnodes * sizeof(int));
  if (!forb || !start || !occ) {
    st = mlsys_set_error(MLSYS_ERR_NOMEM, "mangle: out of memory");
    goto done;
  }
  forbb = forb + (size_t)s.nscopes * MLSYS__TR_FW;
#define MLSYS__TR_SET(f, scope, k) ((f)[(size_t)(scope) * MLSYS__TR_FW + (size_t)(k) / 64] |= (uint64_t)1 << ((k) % 64))
#define MLSYS__TR_GET(f, scope, k) (((f)[(size_t)(scope) * MLSYS__TR_FW + (size_t)(k) / 64] >> ((k) % 64)) & 1)
  for (k = 0; k < MLSYS__TR_NCAND; k++) off[k] = -1;
  /* occurrences grouped by binding (counting sort) */
  for (i = 1; i < s.nnodes; i++)
    if (s.resolved[i] > 0) start[s.resolved[i]]++;
  for (b = 1; b <= s.nbindings; b++) start[b] += start[b - 1];
  {
    int *fill = (int *)malloc(((size_t)s.nbindings + 1) * sizeof(int));
    if (!fill) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "mangle: out of memory"); goto done; }
    memcpy(fill, start, ((size_t)s.nbindings + 1) * sizeof(int));
    for (i = 1; i < s.nnodes; i++)
      if (s.resolved[i] > 0) occ[fill[s.resolved[i] - 1]++] = i;
    free(fill);
  }
  /* the short names a new binding of S must not take: forb, those of identifiers inside S that resolve outside it
     (or are free); forbb, those of bindings below S (one of them could capture a use of the renamed binding), except
     that a binding may keep its own name; and the current names of its siblings in S */
  for (i = 1; i < s.nnodes; i++) {
    const mlsys_contracode_js_node *nd = &ast->nodes[i];
    int bs, r;
    if (!s.resolved[i] || (k = mlsys__tr_cidx(ast->text + nd->str, nd->slen)) < 0) continue;
    bs = s.resolved[i] > 0 ? s.bindings[s.resolved[i] - 1].scope : -1;
    for (r = s.id_scope[i]; r >= 0 && r != bs; r = s.scopes[r].parent) MLSYS__TR_SET(forb, r, k);
  }
  for (b = 0; b < s.nbindings; b++)
    if ((k = mlsys__tr_cidx(ast->text + s.bindings[b].str, s.bindings[b].slen)) >= 0)
      for (sc = s.scopes[s.bindings[b].scope].parent; sc >= 0; sc = s.scopes[sc].parent) MLSYS__TR_SET(forbb, sc, k);
  /* scopes were numbered in pre-order, bindings in declaration order (parameters first) */
  for (b = 0; b < s.nbindings; b++) {
    mlsys_contracode_binding *bd = &s.bindings[b];
    const mlsys_contracode_scope *S = &s.scopes[bd->scope];
    char nm[3];
    size_t nl;
    int j, own;
    if (S->unsafe || S->kind == MLSYS_CONTRACODE_SCOPE_GLOBAL || S->kind == MLSYS_CONTRACODE_SCOPE_MODULE ||
        s.scopes[S->fn].kind != MLSYS_CONTRACODE_SCOPE_FUNCTION)
      continue;   /* top level (terser toplevel=false) or visible to eval/with */
    if (bd->kind == MLSYS_CONTRACODE_BIND_FUNCTION || bd->kind == MLSYS_CONTRACODE_BIND_FNAME ||
        bd->kind == MLSYS_CONTRACODE_BIND_CLASS || bd->kind == MLSYS_CONTRACODE_BIND_IMPORT)
      continue;   /* keep_fnames */
    if (!bd->ndecls) continue;   /* `var e` inside `catch (e)`: its declaring name belongs to the catch param */
    if (bd->slen == 9 && !memcmp(ast->text + bd->str, "arguments", 9)) continue;
    own = mlsys__tr_cidx(ast->text + bd->str, bd->slen);
    for (k = 0; k < MLSYS__TR_NCAND; k++) {
      int sib;
      nl = mlsys__tr_cname(k, nm);
      if (MLSYS__TR_GET(forb, bd->scope, k) || (k != own && MLSYS__TR_GET(forbb, bd->scope, k)) ||
          mlsys__tr_reserved(nm, nl))
        continue;
      for (sib = S->first; sib >= 0; sib = s.bindings[sib].next)
        if (sib != b && s.bindings[sib].slen == nl && !memcmp(ast->text + s.bindings[sib].str, nm, nl)) break;
      if (sib < 0) break;
    }
    if (k == MLSYS__TR_NCAND) continue;
    if (off[k] < 0 && (off[k] = mlsys__tr_add_text(ast, nm, nl)) < 0) {
      st = mlsys_set_error(MLSYS_ERR_NOMEM, "mangle: out of memory");
      goto done;
    }
    for (sc = S->parent; sc >= 0; sc = s.scopes[sc].parent) MLSYS__TR_SET(forbb, sc, k);
    bd->str = (uint32_t)off[k];
    bd->slen = (uint32_t)nl;
    for (j = start[b]; j < start[b + 1]; j++) {
      int r, x = occ[j];
      ast->nodes[x].str = (uint32_t)off[k];
      ast->nodes[x].slen = (uint32_t)nl;
      ast->nodes[x].flags &= (uint16_t)~MLSYS_CONTRACODE_JS_F_ESCAPED;
      /* scopes between a use and the binding now see the new name from outside */
      for (r = s.id_scope[x]; r >= 0 && r != bd->scope; r = s.scopes[r].parent) MLSYS__TR_SET(forb, r, k);
    }
    count++;
  }
#undef MLSYS__TR_SET
#undef MLSYS__TR_GET
  /* like terser, spell out shorthand properties inside functions ({data} → {data:data}) */
  for (i = 1; i < s.nnodes; i++) {
    mlsys_contracode_js_node *nd = &ast->nodes[i];
    int v;
    if (nd->kind != MLSYS_CONTRACODE_JS_PROPERTY || !(nd->flags & MLSYS_CONTRACODE_JS_F_SHORTHAND)) continue;
    v = nd->b;
    if (v && ast->nodes[v].kind == MLSYS_CONTRACODE_JS_ASSIGNMENT_PATTERN) v = ast->nodes[v].a;
    if (v && s.id_scope[v] >= 0 && s.scopes[s.scopes[s.id_scope[v]].fn].kind == MLSYS_CONTRACODE_SCOPE_FUNCTION &&
        !s.scopes[s.id_scope[v]].unsafe)
      nd->flags &= (uint16_t)~MLSYS_CONTRACODE_JS_F_SHORTHAND;
  }
  if (nrenamed) *nrenamed = count;
done:
  free(forb);
  free(start);
  free(occ);
  mlsys_contracode_scope_free(&s);
  return st;
}

/* ---- compress passes (T4-T8) ---- */
typedef struct {
  mlsys_contracode_js_ast *a;
  mlsys_contracode_scopes s;   /* built once per pass on the tree as it was; nodes added later inherit unsafety */
  int count, nomem;
  int *buf; size_t nbuf, cap;  /* scratch for list rewrites */
  uint8_t *drop;               /* T5b: declarators and declarations to remove */
  long aux;                    /* bool_int: where "01" was added to the text (-1 not yet) */
  int keep_quoted;             /* props: leave quoted keys of object literals and patterns quoted */
} mlsys__cp;
typedef void (*mlsys__cp_fn)(mlsys__cp *c, int x);
#define MLSYS__CP_N(c, x) ((c)->a->nodes[x])
static mlsys_status mlsys__cp_open(mlsys__cp *c, mlsys_contracode_js_ast *a) {
  memset(c, 0, sizeof *c);
  c->a = a;
  if (!a || !a->nodes || a->root <= 0) return mlsys_set_error(MLSYS_ERR_ARG, "compress: no parsed program");
  /* The passes hold pointers into a->nodes (list heads, the node being rewritten) while they add nodes, so the
     array must not move during a pass: room for as many new nodes as there are nodes is reserved here (every pass
     adds fewer: one node per rewrite, each rewrite consuming at least one), and mlsys__cp_new never grows it. */
  if (a->cap - a->nnodes < a->nnodes + 64) {
    int nc = 2 * a->nnodes + 64;
    mlsys_contracode_js_node *nn = (mlsys_contracode_js_node *)realloc(a->nodes, (size_t)nc * sizeof *nn);
    if (!nn) return mlsys_set_error(MLSYS_ERR_NOMEM, "compress: out of memory");
    a->nodes = nn;
    a->cap = nc;
  }
  return mlsys_contracode_scope_build(a, &c->s);
}
static mlsys_status mlsys__cp_close(mlsys__cp *c, int *nrewrites, const char *what) {
  mlsys_contracode_scope_free(&c->s);
  free(c->buf);
  if (nrewrites) *nrewrites = c->count;
  if (c->nomem == 2) return mlsys_set_error(MLSYS_ERR_TOO_BIG, "%s: more new nodes than the pass reserved", what);
  if (c->nomem) return mlsys_set_error(MLSYS_ERR_NOMEM, "%s: out of memory", what);
  return MLSYS_OK;
}
/* Post-order walk; fn sees a node after its children, and not at all inside unsafe (eval/with) scopes. */
static void mlsys__cp_walk(mlsys__cp *c, int x, int unsafe, mlsys__cp_fn fn) {
  int ch[4], i, y, sc;
  if (x < c->s.nnodes && (sc = c->s.node_scope[x]) >= 0) unsafe = c->s.scopes[sc].unsafe;
  ch[0] = MLSYS__CP_N(c, x).a; ch[1] = MLSYS__CP_N(c, x).b; ch[2] = MLSYS__CP_N(c, x).c; ch[3] = MLSYS__CP_N(c, x).d;
  if (MLSYS__CP_N(c, x).kind == MLSYS_CONTRACODE_JS_IDENTIFIER || MLSYS__CP_N(c, x).kind == MLSYS_CONTRACODE_JS_LITERAL)
    ch[0] = ch[1] = ch[2] = ch[3] = 0;
  for (i = 0; i < 4; i++)
    for (y = ch[i]; y; y = MLSYS__CP_N(c, y).next) mlsys__cp_walk(c, y, unsafe, fn);
  if (!unsafe && !c->nomem) fn(c, x);
}
static int mlsys__cp_new(mlsys__cp *c, int kind) {
  int x;
  if (c->a->nnodes >= c->a->cap) { c->nomem = 2; return 0; }   /* never move the array mid-pass (mlsys__cp_open) */
  x = mlsys__tr_new_node(c->a, kind);
  if (!x) c->nomem = 1;
  return x;
}
/* x takes y's contents (y is then unused), keeping its place in a list. */
static void mlsys__cp_become(mlsys__cp *c, int x, int y) {
  int nx = MLSYS__CP_N(c, x).next;
  MLSYS__CP_N(c, x) = MLSYS__CP_N(c, y);
  MLSYS__CP_N(c, x).next = nx;
}
static void mlsys__cp_set(mlsys__cp *c, int x, int kind, int op, int a, int b, int cc) {
  mlsys_contracode_js_node *n = &MLSYS__CP_N(c, x);
  n->kind = (uint16_t)kind; n->op = (uint8_t)op;
  n->flags = kind == MLSYS_CONTRACODE_JS_UNARY_EXPRESSION ? MLSYS_CONTRACODE_JS_F_PREFIX : 0;   /* as the parser sets it */
  n->a = a; n->b = b; n->c = cc; n->d = 0;
  n->str = n->slen = 0;
}
static int mlsys__cp_lit(mlsys__cp *c, int op, const char *s, size_t n) {
  long off = mlsys__tr_add_text(c->a, s, n);
  int x;
  if (off < 0) { c->nomem = 1; return 0; }
  if (!(x = mlsys__cp_new(c, MLSYS_CONTRACODE_JS_LITERAL))) return 0;
  MLSYS__CP_N(c, x).op = (uint8_t)op;
  MLSYS__CP_N(c, x).str = (uint32_t)off;
  MLSYS__CP_N(c, x).slen = (uint32_t)n;
  return x;
}
static int mlsys__cp_push(mlsys__cp *c, int x) {
  if (c->nbuf == c->cap) {
    size_t nc = c->cap ? c->cap * 2 : 64;
    int *nb = (int *)realloc(c->buf, nc * sizeof *nb);
    if (!nb) { c->nomem = 1; return 0; }
    c->buf = nb; c->cap = nc;
  }
  c->buf[c->nbuf++] = x;
  return 1;
}
/* Relinks buf[from..nbuf) as the list *head; the buffer shrinks back to from. */
static void mlsys__cp_relink(mlsys__cp *c, int32_t *head, size_t from) {
  size_t i;
  *head = 0;
  for (i = c->nbuf; i-- > from;) {
    MLSYS__CP_N(c, c->buf[i]).next = *head;
    *head = c->buf[i];
  }
  c->nbuf = from;
}
static int32_t *mlsys__cp_list(mlsys__cp *c, int x) {   /* the statement list x owns, or NULL */
  mlsys_contracode_js_node *n = &MLSYS__CP_N(c, x);
  switch (n->kind) {
    case MLSYS_CONTRACODE_JS_PROGRAM: case MLSYS_CONTRACODE_JS_BLOCK_STATEMENT: case MLSYS_CONTRACODE_JS_STATIC_BLOCK:
      return &n->a;
    case MLSYS_CONTRACODE_JS_SWITCH_CASE: return &n->b;
    default: return NULL;
  }
}

/* Constant values (T4). Strings are malloc'd. */
enum { MLSYS__CPV_NUM = 1, MLSYS__CPV_STR, MLSYS__CPV_BOOL, MLSYS__CPV_NULL, MLSYS__CPV_UNDEF };
typedef struct { int t; double d; char *s; size_t n; } mlsys__cpv;
static void mlsys__cpv_free(mlsys__cpv *v) { free(v->s); v->s = NULL; }
static int mlsys__cpv_str(mlsys__cpv *v, const char *s, size_t n) {
  v->t = MLSYS__CPV_STR;
  v->n = n;
  if (!(v->s = (char *)malloc(n + 1))) return 0;
  memcpy(v->s, s, n);
  v->s[n] = 0;
  return 1;
}
/* Number::toString for a finite x ≥ 0 (not −0): shortest round-trip digits, JS's exponent rule. */
static size_t mlsys__cp_numstr(double x, char *out) {
  char b[40], dg[24];
  int p, k = 0, e, nn, i;
  size_t o = 0;
  if (x == 0) { strcpy(out, "0"); return 1; }
  for (p = 1; p <= 17; p++) {
    snprintf(b, sizeof b, "%.*e", p - 1, x);
    if (strtod(b, NULL) == x) break;
  }
  for (i = 0; b[i] && b[i] != 'e'; i++)
    if (b[i] >= '0' && b[i] <= '9') dg[k++] = b[i];
  e = atoi(b + i + 1);
  while (k > 1 && dg[k - 1] == '0') k--;
  dg[k] = 0;
  nn = e + 1;
  if (k <= nn && nn <= 21) {
    memcpy(out, dg, (size_t)k); o = (size_t)k;
    for (i = k; i < nn; i++) out[o++] = '0';
  } else if (0 < nn && nn <= 21) {
    memcpy(out, dg, (size_t)nn); o = (size_t)nn;
    out[o++] = '.';
    memcpy(out + o, dg + nn, (size_t)(k - nn)); o += (size_t)(k - nn);
  } else if (-6 < nn && nn <= 0) {
    out[o++] = '0'; out[o++] = '.';
    for (i = 0; i < -nn; i++) out[o++] = '0';
    memcpy(out + o, dg, (size_t)k); o += (size_t)k;
  } else {
    out[o++] = dg[0];
    if (k > 1) { out[o++] = '.'; memcpy(out + o, dg + 1, (size_t)(k - 1)); o += (size_t)(k - 1); }
    o += (size_t)sprintf(out + o, "e%c%d", nn - 1 >= 0 ? '+' : '-', nn - 1 >= 0 ? nn - 1 : 1 - nn);
  }
  out[o] = 0;
  return o;
}
static int mlsys__cp_tostr(const mlsys__cpv *v, mlsys__cpv *r) {   /* ToString */
  char b[40];
  size_t n;
  switch (v->t) {
    case MLSYS__CPV_STR: return mlsys__cpv_str(r, v->s, v->n);
    case MLSYS__CPV_BOOL: return mlsys__cpv_str(r, v->d ? "true" : "false", v->d ? 4 : 5);
    case MLSYS__CPV_NULL: return mlsys__cpv_str(r, "null", 4);
    case MLSYS__CPV_UNDEF: return mlsys__cpv_str(r, "undefined", 9);
    default:
      if (v->d != v->d) return mlsys__cpv_str(r, "NaN", 3);
      if (isinf(v->d)) return v->d > 0 ? mlsys__cpv_str(r, "Infinity", 8) : mlsys__cpv_str(r, "-Infinity", 9);
      if (v->d < 0) { b[0] = '-'; n = 1 + mlsys__cp_numstr(-v->d, b + 1); }
      else n = mlsys__cp_numstr(v->d == 0 ? 0.0 : v->d, b);
      return mlsys__cpv_str(r, b, n);
  }
}
static int mlsys__cp_tonum(const mlsys__cpv *v, double *d) {   /* ToNumber, strings refused */
  switch (v->t) {
    case MLSYS__CPV_NUM: case MLSYS__CPV_BOOL: *d = v->d; return 1;
    case MLSYS__CPV_NULL: *d = 0; return 1;
    case MLSYS__CPV_UNDEF: *d = NAN; return 1;
    default: return 0;
  }
}
static int mlsys__cp_truthy(const mlsys__cpv *v) {
  switch (v->t) {
    case MLSYS__CPV_NUM: return v->d == v->d && v->d != 0;
    case MLSYS__CPV_STR: return v->n > 0;
    case MLSYS__CPV_BOOL: return v->d != 0;
    default: return 0;
  }
}
static int32_t mlsys__cp_int32(double d) {
  double m;
  if (!isfinite(d)) return 0;
  m = fmod(trunc(d), 4294967296.0);
  if (m < 0) m += 4294967296.0;
  return (int32_t)(uint32_t)m;
}
static int mlsys__cp_eval(mlsys__cp *c, int x, mlsys__cpv *v, int depth);
static int mlsys__cp_eval_lit(mlsys__cp *c, int x, mlsys__cpv *v) {
  const mlsys_contracode_js_node *n = &MLSYS__CP_N(c, x);
  const char *t = c->a->text + n->str;
  size_t i, len = n->slen;
  switch (n->op) {
    case MLSYS_CONTRACODE_JS_LIT_STRING:
      if (len < 2 || memchr(t, '\\', len)) return 0;
      return mlsys__cpv_str(v, t + 1, len - 2) ? 1 : (c->nomem = 1, 0);
    case MLSYS_CONTRACODE_JS_LIT_BOOLEAN: v->t = MLSYS__CPV_BOOL; v->d = t[0] == 't'; return 1;
    case MLSYS_CONTRACODE_JS_LIT_NULL: v->t = MLSYS__CPV_NULL; return 1;
    case MLSYS_CONTRACODE_JS_LIT_NUMBER: {
      char b[64];
      if (len == 0 || len >= sizeof b) return 0;
      memcpy(b, t, len);
      b[len] = 0;
      v->t = MLSYS__CPV_NUM;
      if (len > 2 && b[0] == '0' && (b[1] == 'x' || b[1] == 'X')) {
        if (len > 15) return 0;
        for (i = 2; i < len; i++) if (!strchr("0123456789abcdefABCDEF", b[i])) return 0;
        v->d = (double)strtoull(b + 2, NULL, 16);
        return 1;
      }
      if (b[0] == '0' && len > 1 && b[1] >= '0' && b[1] <= '9') return 0;   /* legacy octal / 08 */
      for (i = 0; i < len; i++)
        if (!strchr("0123456789.eE+-", b[i])) return 0;   /* 0b, 0o, separators */
      v->d = strtod(b, NULL);
      return 1;
    }
    default: return 0;
  }
}
static int mlsys__cp_eval_bin(int op, const mlsys__cpv *l, const mlsys__cpv *r, mlsys__cpv *v) {
  double x, y;
  if (op == MLSYS__CC_P_PLUS && (l->t == MLSYS__CPV_STR || r->t == MLSYS__CPV_STR)) {
    mlsys__cpv ls = {0, 0, NULL, 0}, rs = {0, 0, NULL, 0};
    int ok = mlsys__cp_tostr(l, &ls) && mlsys__cp_tostr(r, &rs) && (v->s = (char *)malloc(ls.n + rs.n + 1)) != NULL;
    if (ok) {
      memcpy(v->s, ls.s, ls.n);
      memcpy(v->s + ls.n, rs.s, rs.n);
      v->n = ls.n + rs.n;
      v->s[v->n] = 0;
      v->t = MLSYS__CPV_STR;
    }
    mlsys__cpv_free(&ls);
    mlsys__cpv_free(&rs);
    return ok;
  }
  if (op == MLSYS__CC_P_SEQ || op == MLSYS__CC_P_SNE || op == MLSYS__CC_P_EQ || op == MLSYS__CC_P_NE) {
    int eq, strict = op == MLSYS__CC_P_SEQ || op == MLSYS__CC_P_SNE;
    int ln = l->t == MLSYS__CPV_NULL || l->t == MLSYS__CPV_UNDEF, rn = r->t == MLSYS__CPV_NULL || r->t == MLSYS__CPV_UNDEF;
    if (l->t == r->t) {
      eq = l->t == MLSYS__CPV_STR ? (l->n == r->n && !memcmp(l->s, r->s, l->n))
           : (l->t == MLSYS__CPV_NUM || l->t == MLSYS__CPV_BOOL) ? l->d == r->d : 1;
    } else if (strict) eq = 0;
    else if (ln || rn) eq = ln && rn;
    else return 0;   /* loose equality with conversions */
    v->t = MLSYS__CPV_BOOL;
    v->d = (op == MLSYS__CC_P_SEQ || op == MLSYS__CC_P_EQ) ? eq : !eq;
    return 1;
  }
  if (op == MLSYS__CC_P_LT || op == MLSYS__CC_P_GT || op == MLSYS__CC_P_LE || op == MLSYS__CC_P_GE) {
    int cmp;   /* -1, 0, 1; 2 = unordered */
    if (l->t == MLSYS__CPV_STR && r->t == MLSYS__CPV_STR) {
      size_t i, m = l->n < r->n ? l->n : r->n;
      for (i = 0; i < l->n; i++) if ((unsigned char)l->s[i] >= 0x80) return 0;   /* UTF-16 order differs */
      for (i = 0; i < r->n; i++) if ((unsigned char)r->s[i] >= 0x80) return 0;
      cmp = memcmp(l->s, r->s, m);
      cmp = cmp < 0 ? -1 : cmp > 0 ? 1 : l->n < r->n ? -1 : l->n > r->n ? 1 : 0;
    } else {
      if (!mlsys__cp_tonum(l, &x) || !mlsys__cp_tonum(r, &y)) return 0;
      cmp = (x != x || y != y) ? 2 : x < y ? -1 : x > y ? 1 : 0;
    }
    v->t = MLSYS__CPV_BOOL;
    v->d = cmp == 2 ? 0 : op == MLSYS__CC_P_LT ? cmp < 0 : op == MLSYS__CC_P_GT ? cmp > 0 : op == MLSYS__CC_P_LE ? cmp <= 0 : cmp >= 0;
    return 1;
  }
  if (!mlsys__cp_tonum(l, &x) || !mlsys__cp_tonum(r, &y)) return 0;
  v->t = MLSYS__CPV_NUM;
  switch (op) {
    case MLSYS__CC_P_PLUS: v->d = x + y; return 1;
    case MLSYS__CC_P_MINUS: v->d = x - y; return 1;
    case MLSYS__CC_P_STAR: v->d = x * y; return 1;
    case MLSYS__CC_P_SLASH: v->d = x / y; return 1;
    case MLSYS__CC_P_PERCENT: v->d = fmod(x, y); return 1;
    case MLSYS__CC_P_STARSTAR:   /* JS: NaN exponent, or |base| = 1 with an infinite exponent, is NaN */
      v->d = (y != y || (fabs(x) == 1 && isinf(y))) ? NAN : pow(x, y);
      return 1;
    case MLSYS__CC_P_AMP: v->d = mlsys__cp_int32(x) & mlsys__cp_int32(y); return 1;
    case MLSYS__CC_P_PIPE: v->d = mlsys__cp_int32(x) | mlsys__cp_int32(y); return 1;
    case MLSYS__CC_P_CARET: v->d = mlsys__cp_int32(x) ^ mlsys__cp_int32(y); return 1;
    case MLSYS__CC_P_SHL: v->d = (int32_t)((uint32_t)mlsys__cp_int32(x) << ((uint32_t)mlsys__cp_int32(y) & 31)); return 1;
    case MLSYS__CC_P_SHR: {
      int32_t a = mlsys__cp_int32(x);
      int s = (int)((uint32_t)mlsys__cp_int32(y) & 31);
      v->d = a < 0 ? -(double)(((uint32_t)~a) >> s) - 1 : (double)(a >> s);
      return 1;
    }
    case MLSYS__CC_P_USHR: v->d = (double)((uint32_t)mlsys__cp_int32(x) >> ((uint32_t)mlsys__cp_int32(y) & 31)); return 1;
    default: return 0;
  }
}
static int mlsys__cp_eval(mlsys__cp *c, int x, mlsys__cpv *v, int depth) {
  const mlsys_contracode_js_node *n = &MLSYS__CP_N(c, x);
  mlsys__cpv l = {0, 0, NULL, 0}, r = {0, 0, NULL, 0};
  int ok = 0;
  double d = 0;
  memset(v, 0, sizeof *v);
  if (depth > 64) return 0;
  switch (n->kind) {
    case MLSYS_CONTRACODE_JS_LITERAL: return mlsys__cp_eval_lit(c, x, v);
    case MLSYS_CONTRACODE_JS_UNARY_EXPRESSION:
      if (n->op == MLSYS__CC_P_DELETE || !mlsys__cp_eval(c, n->a, &l, depth + 1)) break;
      ok = 1;
      switch (n->op) {
        case MLSYS__CC_P_VOID: v->t = MLSYS__CPV_UNDEF; break;
        case MLSYS__CC_P_BANG: v->t = MLSYS__CPV_BOOL; v->d = !mlsys__cp_truthy(&l); break;
        case MLSYS__CC_P_MINUS: ok = mlsys__cp_tonum(&l, &d); v->t = MLSYS__CPV_NUM; v->d = -d; break;
        case MLSYS__CC_P_PLUS: ok = mlsys__cp_tonum(&l, &d); v->t = MLSYS__CPV_NUM; v->d = d; break;
        case MLSYS__CC_P_TILDE: ok = mlsys__cp_tonum(&l, &d); v->t = MLSYS__CPV_NUM; v->d = ~mlsys__cp_int32(d); break;
        case MLSYS__CC_P_TYPEOF: {
          static const char *const tn[] = {"", "number", "string", "boolean", "object", "undefined"};
          ok = mlsys__cpv_str(v, tn[l.t], strlen(tn[l.t]));
          break;
        }
        default: ok = 0;
      }
      break;
    case MLSYS_CONTRACODE_JS_BINARY_EXPRESSION:
      if (mlsys__cp_eval(c, n->a, &l, depth + 1) && mlsys__cp_eval(c, n->b, &r, depth + 1))
        ok = mlsys__cp_eval_bin(n->op, &l, &r, v);
      break;
    case MLSYS_CONTRACODE_JS_LOGICAL_EXPRESSION:
      if (!mlsys__cp_eval(c, n->a, &l, depth + 1)) break;
      if ((n->op == MLSYS__CC_P_AND && !mlsys__cp_truthy(&l)) || (n->op == MLSYS__CC_P_OR && mlsys__cp_truthy(&l)) ||
          (n->op == MLSYS__CC_P_NULLISH && l.t != MLSYS__CPV_NULL && l.t != MLSYS__CPV_UNDEF)) {
        *v = l;
        return 1;
      }
      return mlsys__cp_eval(c, n->b, v, depth + 1) ? (mlsys__cpv_free(&l), 1) : (mlsys__cpv_free(&l), 0);
    case MLSYS_CONTRACODE_JS_CONDITIONAL_EXPRESSION:
      if (!mlsys__cp_eval(c, n->a, &l, depth + 1)) break;
      ok = mlsys__cp_eval(c, mlsys__cp_truthy(&l) ? n->b : n->c, v, depth + 1);
      mlsys__cpv_free(&l);
      return ok;
    default: break;
  }
  mlsys__cpv_free(&l);
  mlsys__cpv_free(&r);
  if (!ok) mlsys__cpv_free(v);
  return ok;
}
/* Writes constant v into node x; 0 if v has no exact literal form (NaN, ±Infinity, −0). */
static int mlsys__cp_write(mlsys__cp *c, int x, const mlsys__cpv *v) {
  char b[40];
  int y, z;
  switch (v->t) {
    case MLSYS__CPV_NUM:
      if (v->d != v->d || isinf(v->d) || (v->d == 0 && signbit(v->d))) return 0;
      if (!(y = mlsys__cp_lit(c, MLSYS_CONTRACODE_JS_LIT_NUMBER, b, mlsys__cp_numstr(fabs(v->d), b)))) return 0;
      if (v->d < 0) mlsys__cp_set(c, x, MLSYS_CONTRACODE_JS_UNARY_EXPRESSION, MLSYS__CC_P_MINUS, y, 0, 0);
      else mlsys__cp_become(c, x, y);
      return 1;
    case MLSYS__CPV_STR: {
      size_t i, o = 0;
      char *q = (char *)malloc(v->n * 2 + 3);
      if (!q) { c->nomem = 1; return 0; }
      q[o++] = '"';
      for (i = 0; i < v->n; i++) {
        if (v->s[i] == '"') q[o++] = '\\';
        q[o++] = v->s[i];
      }
      q[o++] = '"';
      y = mlsys__cp_lit(c, MLSYS_CONTRACODE_JS_LIT_STRING, q, o);
      free(q);
      if (!y) return 0;
      mlsys__cp_become(c, x, y);
      return 1;
    }
    case MLSYS__CPV_BOOL:
      if (!(y = mlsys__cp_lit(c, MLSYS_CONTRACODE_JS_LIT_BOOLEAN, v->d ? "true" : "false", v->d ? 4 : 5))) return 0;
      mlsys__cp_become(c, x, y);
      return 1;
    case MLSYS__CPV_NULL:
      if (!(y = mlsys__cp_lit(c, MLSYS_CONTRACODE_JS_LIT_NULL, "null", 4))) return 0;
      mlsys__cp_become(c, x, y);
      return 1;
    case MLSYS__CPV_UNDEF:
      if (!(z = mlsys__cp_lit(c, MLSYS_CONTRACODE_JS_LIT_NUMBER, "0", 1))) return 0;
      mlsys__cp_set(c, x, MLSYS_CONTRACODE_JS_UNARY_EXPRESSION, MLSYS__CC_P_VOID, z, 0, 0);
      return 1;
    default: return 0;
  }
}
static int mlsys__cp_is_numlit(mlsys__cp *c, int x, const char *raw) {
  const mlsys_contracode_js_node *n = &MLSYS__CP_N(c, x);
  return n->kind == MLSYS_CONTRACODE_JS_LITERAL && n->op == MLSYS_CONTRACODE_JS_LIT_NUMBER &&
         (!raw || (n->slen == strlen(raw) && !memcmp(c->a->text + n->str, raw, n->slen)));
}
static void mlsys__cp_fold1(mlsys__cp *c, int x) {
  mlsys_contracode_js_node *n = &MLSYS__CP_N(c, x);
  mlsys__cpv v, l;
  int k = n->kind, pick = 0;
  if (k == MLSYS_CONTRACODE_JS_UNARY_EXPRESSION &&
      ((n->op == MLSYS__CC_P_MINUS && mlsys__cp_is_numlit(c, n->a, NULL)) ||
       (n->op == MLSYS__CC_P_BANG && (mlsys__cp_is_numlit(c, n->a, "0") || mlsys__cp_is_numlit(c, n->a, "1"))) ||
       (n->op == MLSYS__CC_P_VOID && mlsys__cp_is_numlit(c, n->a, "0"))))
    return;   /* canonical already */
  if (k != MLSYS_CONTRACODE_JS_UNARY_EXPRESSION && k != MLSYS_CONTRACODE_JS_BINARY_EXPRESSION &&
      k != MLSYS_CONTRACODE_JS_LOGICAL_EXPRESSION && k != MLSYS_CONTRACODE_JS_CONDITIONAL_EXPRESSION)
    return;
  if (mlsys__cp_eval(c, x, &v, 0)) {
    int ok = mlsys__cp_write(c, x, &v);
    mlsys__cpv_free(&v);
    if (ok) c->count++;
    return;
  }
  /* constant left operand / test with a non-constant other side: keep the side that is evaluated */
  if (k == MLSYS_CONTRACODE_JS_LOGICAL_EXPRESSION && mlsys__cp_eval(c, n->a, &l, 0)) {
    int t = mlsys__cp_truthy(&l), nul = l.t == MLSYS__CPV_NULL || l.t == MLSYS__CPV_UNDEF;
    pick = n->op == MLSYS__CC_P_AND ? (t ? n->b : n->a) : n->op == MLSYS__CC_P_OR ? (t ? n->a : n->b) : (nul ? n->b : n->a);
    mlsys__cpv_free(&l);
  } else if (k == MLSYS_CONTRACODE_JS_CONDITIONAL_EXPRESSION && mlsys__cp_eval(c, n->a, &l, 0)) {
    pick = mlsys__cp_truthy(&l) ? n->b : n->c;
    mlsys__cpv_free(&l);
  }
  if (!pick) return;
  k = MLSYS__CP_N(c, pick).kind;
  if (k == MLSYS_CONTRACODE_JS_IDENTIFIER || k == MLSYS_CONTRACODE_JS_MEMBER_EXPRESSION ||
      k == MLSYS_CONTRACODE_JS_CHAIN_EXPRESSION || k == MLSYS_CONTRACODE_JS_SEQUENCE_EXPRESSION)
    return;   /* `(1&&o.f)()`, `(1&&eval)(s)`, `typeof (1&&x)`, `delete (1&&o.p)` would change meaning */
  mlsys__cp_become(c, x, pick);
  c->count++;
}
MLSYS_DEF mlsys_status mlsys_contracode_fold(mlsys_contracode_js_ast *ast, int *nrewrites) {
  mlsys__cp c;
  mlsys_status st = mlsys__cp_open(&c, ast);
  if (nrewrites) *nrewrites = 0;
  if (st != MLSYS_OK) return st;
  mlsys__cp_walk(&c, ast->root, 0, mlsys__cp_fold1);
  return mlsys__cp_close(&c, nrewrites, "fold");
}

static void mlsys__cp_bool1(mlsys__cp *c, int x) {
  const mlsys_contracode_js_node *n = &MLSYS__CP_N(c, x);
  int t, y;
  if (n->kind != MLSYS_CONTRACODE_JS_LITERAL || n->op != MLSYS_CONTRACODE_JS_LIT_BOOLEAN) return;
  t = c->a->text[n->str] == 't';
  if (!(y = mlsys__cp_lit(c, MLSYS_CONTRACODE_JS_LIT_NUMBER, t ? "0" : "1", 1))) return;
  mlsys__cp_set(c, x, MLSYS_CONTRACODE_JS_UNARY_EXPRESSION, MLSYS__CC_P_BANG, y, 0, 0);
  c->count++;
}
MLSYS_DEF mlsys_status mlsys_contracode_booleans(mlsys_contracode_js_ast *ast, int *nrewrites) {
  mlsys__cp c;
  mlsys_status st = mlsys__cp_open(&c, ast);
  if (nrewrites) *nrewrites = 0;
  if (st != MLSYS_OK) return st;
  mlsys__cp_walk(&c, ast->root, 0, mlsys__cp_bool1);
  return mlsys__cp_close(&c, nrewrites, "booleans");
}

/* The `var` names declared in x outside nested functions, pushed as Identifier nodes; *fdecl set if x holds a
   function declaration (Annex B gives it a var binding too) or x itself is a let/const/class declaration. */
static void mlsys__cp_pat_ids(mlsys__cp *c, int p) {
  const mlsys_contracode_js_node *n;
  int y;
  if (!p) return;
  n = &MLSYS__CP_N(c, p);
  switch (n->kind) {
    case MLSYS_CONTRACODE_JS_IDENTIFIER: mlsys__cp_push(c, p); break;
    case MLSYS_CONTRACODE_JS_ASSIGNMENT_PATTERN: case MLSYS_CONTRACODE_JS_REST_ELEMENT: mlsys__cp_pat_ids(c, n->a); break;
    case MLSYS_CONTRACODE_JS_ARRAY_PATTERN:
      for (y = n->a; y; y = MLSYS__CP_N(c, y).next) mlsys__cp_pat_ids(c, y);
      break;
    case MLSYS_CONTRACODE_JS_OBJECT_PATTERN:
      for (y = n->a; y; y = MLSYS__CP_N(c, y).next)
        mlsys__cp_pat_ids(c, MLSYS__CP_N(c, y).kind == MLSYS_CONTRACODE_JS_PROPERTY ? MLSYS__CP_N(c, y).b : y);
      break;
    default: break;
  }
}
static void mlsys__cp_vars(mlsys__cp *c, int x, int top, int *fdecl) {
  const mlsys_contracode_js_node *n = &MLSYS__CP_N(c, x);
  int ch[4], i, y;
  switch (n->kind) {
    case MLSYS_CONTRACODE_JS_FUNCTION_DECLARATION: *fdecl = 1; return;
    case MLSYS_CONTRACODE_JS_FUNCTION_EXPRESSION: case MLSYS_CONTRACODE_JS_ARROW_FUNCTION_EXPRESSION:
    case MLSYS_CONTRACODE_JS_CLASS_EXPRESSION: case MLSYS_CONTRACODE_JS_IDENTIFIER: case MLSYS_CONTRACODE_JS_LITERAL:
      return;
    case MLSYS_CONTRACODE_JS_CLASS_DECLARATION: if (top) *fdecl = 1; return;
    case MLSYS_CONTRACODE_JS_VARIABLE_DECLARATION:
      if (n->op != MLSYS_CONTRACODE_JS_VAR) { if (top) *fdecl = 1; return; }
      for (y = n->a; y; y = MLSYS__CP_N(c, y).next) mlsys__cp_pat_ids(c, MLSYS__CP_N(c, y).a);
      return;   /* initializers hold no declarations outside functions */
    default: break;
  }
  ch[0] = n->a; ch[1] = n->b; ch[2] = n->c; ch[3] = n->d;
  for (i = 0; i < 4; i++)
    for (y = ch[i]; y; y = MLSYS__CP_N(c, y).next) mlsys__cp_vars(c, y, 0, fdecl);
}
/* A `var a, b;` of the identifiers buf[from..nbuf) (fresh nodes with the same names); buf shrinks to from. */
static int mlsys__cp_var_decl(mlsys__cp *c, size_t from) {
  int d, first = 0, last = 0;
  size_t i;
  if (c->nbuf == from) return 0;
  if (!(d = mlsys__cp_new(c, MLSYS_CONTRACODE_JS_VARIABLE_DECLARATION))) return 0;
  MLSYS__CP_N(c, d).op = MLSYS_CONTRACODE_JS_VAR;
  for (i = from; i < c->nbuf; i++) {
    int id = mlsys__cp_new(c, MLSYS_CONTRACODE_JS_IDENTIFIER), dr = mlsys__cp_new(c, MLSYS_CONTRACODE_JS_VARIABLE_DECLARATOR);
    if (!id || !dr) return 0;
    MLSYS__CP_N(c, id).str = MLSYS__CP_N(c, c->buf[i]).str;
    MLSYS__CP_N(c, id).slen = MLSYS__CP_N(c, c->buf[i]).slen;
    MLSYS__CP_N(c, id).flags = MLSYS__CP_N(c, c->buf[i]).flags & MLSYS_CONTRACODE_JS_F_ESCAPED;
    MLSYS__CP_N(c, dr).a = id;
    if (last) MLSYS__CP_N(c, last).next = dr;
    else first = dr;
    last = dr;
  }
  MLSYS__CP_N(c, d).a = first;
  c->nbuf = from;
  return d;
}
static int mlsys__cp_has_lexical(mlsys__cp *c, int block) {   /* declarations scoped to the block itself */
  int y;
  for (y = MLSYS__CP_N(c, block).a; y; y = MLSYS__CP_N(c, y).next) {
    const mlsys_contracode_js_node *n = &MLSYS__CP_N(c, y);
    if (n->kind == MLSYS_CONTRACODE_JS_FUNCTION_DECLARATION || n->kind == MLSYS_CONTRACODE_JS_CLASS_DECLARATION ||
        (n->kind == MLSYS_CONTRACODE_JS_VARIABLE_DECLARATION && n->op != MLSYS_CONTRACODE_JS_VAR))
      return 1;
  }
  return 0;
}
static int mlsys__cp_const_test(mlsys__cp *c, int x, int *truthy) {
  mlsys__cpv v;
  if (!x || !mlsys__cp_eval(c, x, &v, 0)) return 0;
  *truthy = mlsys__cp_truthy(&v);
  mlsys__cpv_free(&v);
  return 1;
}
/* Pushes (onto buf) what statement s becomes; returns 1 if it changed. */
static int mlsys__cp_dce_stmt(mlsys__cp *c, int s) {
  mlsys_contracode_js_node n = MLSYS__CP_N(c, s);
  int t, fd = 0, keep, drop, d, y;
  size_t mark = c->nbuf;
  if (n.kind == MLSYS_CONTRACODE_JS_EMPTY_STATEMENT ||
      (n.kind == MLSYS_CONTRACODE_JS_EXPRESSION_STATEMENT && !(n.flags & MLSYS_CONTRACODE_JS_F_DIRECTIVE) &&
       MLSYS__CP_N(c, n.a).kind == MLSYS_CONTRACODE_JS_LITERAL && MLSYS__CP_N(c, n.a).op != MLSYS_CONTRACODE_JS_LIT_REGEX))
    return 1;
  if (n.kind == MLSYS_CONTRACODE_JS_IF_STATEMENT && mlsys__cp_const_test(c, n.a, &t)) {
    keep = t ? n.b : n.c;
    drop = t ? n.c : n.b;
    if (drop) mlsys__cp_vars(c, drop, 1, &fd);
    c->nbuf = mark;
    if (fd || (keep && MLSYS__CP_N(c, keep).kind == MLSYS_CONTRACODE_JS_FUNCTION_DECLARATION)) goto asis;
    if (keep && MLSYS__CP_N(c, keep).kind == MLSYS_CONTRACODE_JS_BLOCK_STATEMENT && !mlsys__cp_has_lexical(c, keep)) {
      for (y = MLSYS__CP_N(c, keep).a; y; y = MLSYS__CP_N(c, y).next) mlsys__cp_push(c, y);
    } else if (keep) mlsys__cp_push(c, keep);
    {
      size_t from = c->nbuf;
      if (drop) mlsys__cp_vars(c, drop, 1, &fd);
      if (c->nbuf > from && (d = mlsys__cp_var_decl(c, from))) mlsys__cp_push(c, d);
    }
    return 1;
  }
  if ((n.kind == MLSYS_CONTRACODE_JS_WHILE_STATEMENT && mlsys__cp_const_test(c, n.a, &t) && !t) ||
      (n.kind == MLSYS_CONTRACODE_JS_FOR_STATEMENT && n.b && mlsys__cp_const_test(c, n.b, &t) && !t)) {
    int body = n.kind == MLSYS_CONTRACODE_JS_WHILE_STATEMENT ? n.b : n.d;
    int init = n.kind == MLSYS_CONTRACODE_JS_FOR_STATEMENT ? n.a : 0;
    size_t from;
    if (init && MLSYS__CP_N(c, init).kind == MLSYS_CONTRACODE_JS_VARIABLE_DECLARATION &&
        MLSYS__CP_N(c, init).op != MLSYS_CONTRACODE_JS_VAR)
      goto asis;
    mlsys__cp_vars(c, body, 1, &fd);
    c->nbuf = mark;
    if (fd) goto asis;
    if (init) {
      if (MLSYS__CP_N(c, init).kind != MLSYS_CONTRACODE_JS_VARIABLE_DECLARATION) {
        int es = mlsys__cp_new(c, MLSYS_CONTRACODE_JS_EXPRESSION_STATEMENT);
        if (!es) return 0;
        MLSYS__CP_N(c, es).a = init;
        init = es;
      }
      mlsys__cp_push(c, init);
    }
    from = c->nbuf;
    mlsys__cp_vars(c, body, 1, &fd);
    if (c->nbuf > from && (d = mlsys__cp_var_decl(c, from))) mlsys__cp_push(c, d);
    return 1;
  }
asis:
  c->nbuf = mark;
  mlsys__cp_push(c, s);
  return 0;
}
static void mlsys__cp_dce1(mlsys__cp *c, int x) {
  int32_t *head = mlsys__cp_list(c, x);
  size_t from = c->nbuf;
  int s, changed = 0, nx;
  if (!head) return;
  for (s = *head; s; s = nx) {
    int k = MLSYS__CP_N(c, s).kind;
    nx = MLSYS__CP_N(c, s).next;
    changed += mlsys__cp_dce_stmt(c, s);
    if ((k == MLSYS_CONTRACODE_JS_RETURN_STATEMENT || k == MLSYS_CONTRACODE_JS_THROW_STATEMENT ||
         k == MLSYS_CONTRACODE_JS_BREAK_STATEMENT || k == MLSYS_CONTRACODE_JS_CONTINUE_STATEMENT) && nx) {
      /* the rest is unreachable: keep function declarations, and `var` names without their initializers */
      int y, fd = 0, tail_changed = 0;
      size_t tail = c->nbuf;
      for (y = nx; y; y = MLSYS__CP_N(c, y).next) {
        const mlsys_contracode_js_node *m = &MLSYS__CP_N(c, y);
        int inner = 0, bare = m->kind == MLSYS_CONTRACODE_JS_VARIABLE_DECLARATION && m->op == MLSYS_CONTRACODE_JS_VAR;
        if (m->kind == MLSYS_CONTRACODE_JS_FUNCTION_DECLARATION) { mlsys__cp_push(c, y); continue; }
        if (bare) {
          int dr;
          for (dr = m->a; dr; dr = MLSYS__CP_N(c, dr).next)
            if (MLSYS__CP_N(c, dr).b || MLSYS__CP_N(c, MLSYS__CP_N(c, dr).a).kind != MLSYS_CONTRACODE_JS_IDENTIFIER) bare = 0;
        }
        if (bare) { mlsys__cp_push(c, y); continue; }
        {
          size_t from2 = c->nbuf;
          int d;
          mlsys__cp_vars(c, y, 1, &inner);
          if (inner) { fd = 1; break; }
          if (c->nbuf > from2 && (d = mlsys__cp_var_decl(c, from2))) mlsys__cp_push(c, d);
          tail_changed = 1;
        }
      }
      if (fd) {   /* a let/const/class or a nested function declaration: leave the tail as it was */
        c->nbuf = tail;
        for (y = nx; y; y = MLSYS__CP_N(c, y).next) mlsys__cp_push(c, y);
      } else changed += tail_changed;
      break;
    }
  }
  if (c->nomem || !changed) { c->nbuf = from; return; }
  mlsys__cp_relink(c, head, from);
  c->count += changed;
}
MLSYS_DEF mlsys_status mlsys_contracode_dce(mlsys_contracode_js_ast *ast, int *nrewrites) {
  mlsys__cp c;
  mlsys_status st = mlsys__cp_open(&c, ast);
  if (nrewrites) *nrewrites = 0;
  if (st != MLSYS_OK) return st;
  mlsys__cp_walk(&c, ast->root, 0, mlsys__cp_dce1);
  return mlsys__cp_close(&c, nrewrites, "dce");
}

/* T5b: drop[x] marks declarators and function declarations whose binding nothing reads. */
static int mlsys__cp_pure(mlsys__cp *c, int x) {
  const mlsys_contracode_js_node *n;
  if (!x) return 1;
  n = &MLSYS__CP_N(c, x);
  switch (n->kind) {
    case MLSYS_CONTRACODE_JS_LITERAL: return 1;
    case MLSYS_CONTRACODE_JS_FUNCTION_EXPRESSION: case MLSYS_CONTRACODE_JS_ARROW_FUNCTION_EXPRESSION: return 1;
    case MLSYS_CONTRACODE_JS_IDENTIFIER: return x < c->s.nnodes && c->s.resolved[x] > 0;   /* a free name may throw */
    case MLSYS_CONTRACODE_JS_UNARY_EXPRESSION:
      return (n->op == MLSYS__CC_P_MINUS || n->op == MLSYS__CC_P_BANG || n->op == MLSYS__CC_P_VOID) &&
             MLSYS__CP_N(c, n->a).kind == MLSYS_CONTRACODE_JS_LITERAL;
    default: return 0;
  }
}
static int mlsys__cp_unused_binding(mlsys__cp *c, int id, int kind) {
  const mlsys_contracode_binding *b;
  const mlsys_contracode_scope *S;
  if (!id || id >= c->s.nnodes || MLSYS__CP_N(c, id).kind != MLSYS_CONTRACODE_JS_IDENTIFIER || c->s.resolved[id] <= 0 ||
      !c->s.is_decl[id])
    return 0;
  b = &c->s.bindings[c->s.resolved[id] - 1];
  S = &c->s.scopes[b->scope];
  if (b->kind != kind || b->nrefs || S->unsafe || S->kind == MLSYS_CONTRACODE_SCOPE_GLOBAL ||
      S->kind == MLSYS_CONTRACODE_SCOPE_MODULE || c->s.scopes[S->fn].kind != MLSYS_CONTRACODE_SCOPE_FUNCTION)
    return 0;
  if (kind == MLSYS_CONTRACODE_BIND_FUNCTION && b->ndecls != 1) return 0;
  if (b->slen == 9 && !memcmp(c->a->text + b->str, "arguments", 9)) return 0;
  return 1;
}
static void mlsys__cp_unused1(mlsys__cp *c, int x) {
  mlsys_contracode_js_node *n = &MLSYS__CP_N(c, x);
  uint8_t *drop = c->drop;
  int32_t *head;
  if (n->kind == MLSYS_CONTRACODE_JS_VARIABLE_DECLARATION) {
    int32_t *pp = &n->a;
    while (*pp) {
      int dr = *pp;
      if (dr < c->s.nnodes && drop[dr]) { *pp = MLSYS__CP_N(c, dr).next; c->count++; }
      else pp = &MLSYS__CP_N(c, dr).next;
    }
    if (!MLSYS__CP_N(c, x).a) {   /* op too: `if(a)var d;` → `if(a);` must equal the tree `;` parses to */
      MLSYS__CP_N(c, x).kind = MLSYS_CONTRACODE_JS_EMPTY_STATEMENT;
      MLSYS__CP_N(c, x).op = 0;
    }
    return;
  }
  if (n->kind == MLSYS_CONTRACODE_JS_FOR_STATEMENT && n->a && MLSYS__CP_N(c, n->a).kind == MLSYS_CONTRACODE_JS_EMPTY_STATEMENT) {
    n->a = 0;
    return;
  }
  if ((head = mlsys__cp_list(c, x)) != NULL) {
    int32_t *pp = head;
    while (*pp) {
      int s = *pp, k = MLSYS__CP_N(c, s).kind;
      if ((k == MLSYS_CONTRACODE_JS_FUNCTION_DECLARATION && s < c->s.nnodes && drop[s]) ||
          (k == MLSYS_CONTRACODE_JS_EMPTY_STATEMENT && s < c->s.nnodes && drop[s])) {
        *pp = MLSYS__CP_N(c, s).next;
        if (k == MLSYS_CONTRACODE_JS_FUNCTION_DECLARATION) c->count++;
      } else pp = &MLSYS__CP_N(c, s).next;
    }
  }
}
MLSYS_DEF mlsys_status mlsys_contracode_unused(mlsys_contracode_js_ast *ast, int *nrewrites) {
  int total = 0, round;
  if (nrewrites) *nrewrites = 0;
  for (round = 0; round < 1000; round++) {
    mlsys__cp c;
    mlsys_status st = mlsys__cp_open(&c, ast);
    int i, any = 0;
    if (st != MLSYS_OK) return st;
    if (!(c.drop = (uint8_t *)calloc((size_t)c.s.nnodes + 1, 1))) {
      c.nomem = 1;
      return mlsys__cp_close(&c, NULL, "unused");
    }
    for (i = 1; i < c.s.nnodes; i++) {
      const mlsys_contracode_js_node *n = &ast->nodes[i];
      if (n->kind == MLSYS_CONTRACODE_JS_FUNCTION_DECLARATION && mlsys__cp_unused_binding(&c, n->a, MLSYS_CONTRACODE_BIND_FUNCTION))
        c.drop[i] = any = 1;
      else if (n->kind == MLSYS_CONTRACODE_JS_VARIABLE_DECLARATION && n->op == MLSYS_CONTRACODE_JS_VAR) {
        int dr, all = 1;
        for (dr = n->a; dr; dr = ast->nodes[dr].next)
          if (mlsys__cp_unused_binding(&c, ast->nodes[dr].a, MLSYS_CONTRACODE_BIND_VAR) && mlsys__cp_pure(&c, ast->nodes[dr].b))
            c.drop[dr] = any = 1;
          else all = 0;
        if (all) c.drop[i] = 1;   /* the emptied declaration leaves its list */
      }
    }
    for (i = 1; i < c.s.nnodes; i++) {   /* the variable of a for-in/for-of head stays */
      const mlsys_contracode_js_node *n = &ast->nodes[i];
      if ((n->kind == MLSYS_CONTRACODE_JS_FOR_IN_STATEMENT || n->kind == MLSYS_CONTRACODE_JS_FOR_OF_STATEMENT) && n->a &&
          ast->nodes[n->a].kind == MLSYS_CONTRACODE_JS_VARIABLE_DECLARATION) {
        int dr;
        c.drop[n->a] = 0;
        for (dr = ast->nodes[n->a].a; dr; dr = ast->nodes[dr].next) c.drop[dr] = 0;
      }
    }
    if (any) {
      mlsys__cp_walk(&c, ast->root, 0, mlsys__cp_unused1);
    }
    free(c.drop);
    st = mlsys__cp_close(&c, &i, "unused");
    total += i;
    if (st != MLSYS_OK) return st;
    if (!i) break;
  }
  if (nrewrites) *nrewrites = total;
  return MLSYS_OK;
}

/* T7 */
static int mlsys__cp_single_expr(mlsys__cp *c, int s) {   /* the expression of `e;` or `{e;}`, else 0 */
  const mlsys_contracode_js_node *n;
  if (!s) return 0;
  n = &MLSYS__CP_N(c, s);
  if (n->kind == MLSYS_CONTRACODE_JS_BLOCK_STATEMENT && n->a && !MLSYS__CP_N(c, n->a).next) return mlsys__cp_single_expr(c, n->a);
  if (n->kind == MLSYS_CONTRACODE_JS_EXPRESSION_STATEMENT && !(n->flags & MLSYS_CONTRACODE_JS_F_DIRECTIVE)) return n->a;
  return 0;
}
/* Appends expression e (its items, if a sequence) to the list buf. */
static void mlsys__cp_push_seq(mlsys__cp *c, int e) {
  int y, nx;
  if (MLSYS__CP_N(c, e).kind == MLSYS_CONTRACODE_JS_SEQUENCE_EXPRESSION) {
    for (y = MLSYS__CP_N(c, e).a; y; y = nx) { nx = MLSYS__CP_N(c, y).next; mlsys__cp_push(c, y); }
  } else mlsys__cp_push(c, e);
}
static int mlsys__cp_seq(mlsys__cp *c, size_t from) {   /* a SequenceExpression of buf[from..) */
  int q = mlsys__cp_new(c, MLSYS_CONTRACODE_JS_SEQUENCE_EXPRESSION);
  if (!q) { c->nbuf = from; return 0; }
  mlsys__cp_relink(c, &MLSYS__CP_N(c, q).a, from);
  return q;
}
static void mlsys__cp_seq1(mlsys__cp *c, int x) {
  mlsys_contracode_js_node *n = &MLSYS__CP_N(c, x);
  int32_t *head;
  if (n->kind == MLSYS_CONTRACODE_JS_IF_STATEMENT) {
    int e1 = mlsys__cp_single_expr(c, n->b), e2 = n->c ? mlsys__cp_single_expr(c, n->c) : 0, t = n->a, y;
    if (!e1 || (n->c && !e2) || !(y = mlsys__cp_new(c, MLSYS_CONTRACODE_JS_LOGICAL_EXPRESSION))) return;
    MLSYS__CP_N(c, e1).next = 0;
    if (e2) {
      MLSYS__CP_N(c, e2).next = 0;
      mlsys__cp_set(c, y, MLSYS_CONTRACODE_JS_CONDITIONAL_EXPRESSION, 0, t, e1, e2);
    } else if (MLSYS__CP_N(c, t).kind == MLSYS_CONTRACODE_JS_UNARY_EXPRESSION && MLSYS__CP_N(c, t).op == MLSYS__CC_P_BANG)
      mlsys__cp_set(c, y, MLSYS_CONTRACODE_JS_LOGICAL_EXPRESSION, MLSYS__CC_P_OR, MLSYS__CP_N(c, t).a, e1, 0);
    else mlsys__cp_set(c, y, MLSYS_CONTRACODE_JS_LOGICAL_EXPRESSION, MLSYS__CC_P_AND, t, e1, 0);
    mlsys__cp_set(c, x, MLSYS_CONTRACODE_JS_EXPRESSION_STATEMENT, 0, y, 0, 0);
    c->count++;
    return;
  }
  if ((head = mlsys__cp_list(c, x)) != NULL) {
    size_t from = c->nbuf;
    int s, nx, changed = 0;
    for (s = *head; s; s = nx) {
      mlsys_contracode_js_node *m = &MLSYS__CP_N(c, s);
      nx = m->next;
      if (m->kind == MLSYS_CONTRACODE_JS_EXPRESSION_STATEMENT && !(m->flags & MLSYS_CONTRACODE_JS_F_DIRECTIVE) && nx) {
        /* a run of expression statements, perhaps ended by a return with a value */
        int y = nx, q, end = 0;
        size_t sf;
        const mlsys_contracode_js_node *r = &MLSYS__CP_N(c, y);
        if (!((r->kind == MLSYS_CONTRACODE_JS_EXPRESSION_STATEMENT && !(r->flags & MLSYS_CONTRACODE_JS_F_DIRECTIVE)) ||
              (r->kind == MLSYS_CONTRACODE_JS_RETURN_STATEMENT && r->a))) {
          mlsys__cp_push(c, s);
          continue;
        }
        sf = c->nbuf;
        mlsys__cp_push_seq(c, m->a);
        for (y = nx; y; y = MLSYS__CP_N(c, y).next) {
          r = &MLSYS__CP_N(c, y);
          if (r->kind == MLSYS_CONTRACODE_JS_EXPRESSION_STATEMENT && !(r->flags & MLSYS_CONTRACODE_JS_F_DIRECTIVE)) {
            mlsys__cp_push_seq(c, r->a);
            changed++;
          } else {
            if (r->kind == MLSYS_CONTRACODE_JS_RETURN_STATEMENT && r->a) { mlsys__cp_push_seq(c, r->a); end = y; changed++; }
            break;
          }
        }
        nx = end ? MLSYS__CP_N(c, end).next : y;
        if (!(q = mlsys__cp_seq(c, sf))) continue;
        if (end) { MLSYS__CP_N(c, end).a = q; s = end; }
        else MLSYS__CP_N(c, s).a = q;
        mlsys__cp_push(c, s);
        continue;
      }
      if (m->kind == MLSYS_CONTRACODE_JS_VARIABLE_DECLARATION && nx && MLSYS__CP_N(c, nx).kind == m->kind &&
          MLSYS__CP_N(c, nx).op == m->op) {
        int last = m->a;
        while (MLSYS__CP_N(c, last).next) last = MLSYS__CP_N(c, last).next;
        MLSYS__CP_N(c, last).next = MLSYS__CP_N(c, nx).a;
        m->next = MLSYS__CP_N(c, nx).next;
        nx = s;   /* look at the merged declaration again */
        changed++;
        continue;
      }
      mlsys__cp_push(c, s);
    }
    if (c->nomem || !changed) { c->nbuf = from; return; }
    mlsys__cp_relink(c, head, from);
    c->count += changed;
  }
}
MLSYS_DEF mlsys_status mlsys_contracode_seq_cond(mlsys_contracode_js_ast *ast, int *nrewrites) {
  mlsys__cp c;
  mlsys_status st = mlsys__cp_open(&c, ast);
  if (nrewrites) *nrewrites = 0;
  if (st != MLSYS_OK) return st;
  mlsys__cp_walk(&c, ast->root, 0, mlsys__cp_seq1);
  return mlsys__cp_close(&c, nrewrites, "seq_cond");
}

/* T8 */
static int mlsys__cp_ident_string(mlsys__cp *c, int x) {
  const mlsys_contracode_js_node *n = &MLSYS__CP_N(c, x);
  const char *t = c->a->text + n->str;
  uint32_t i;
  if (n->kind != MLSYS_CONTRACODE_JS_LITERAL || n->op != MLSYS_CONTRACODE_JS_LIT_STRING || n->slen < 3) return 0;
  for (i = 1; i + 1 < n->slen; i++) {
    unsigned char ch = (unsigned char)t[i];
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' || ch == '$' || (i > 1 && ch >= '0' && ch <= '9')))
      return 0;
  }
  return 1;
}
static void mlsys__cp_props1(mlsys__cp *c, int x) {
  mlsys_contracode_js_node *n = &MLSYS__CP_N(c, x);
  int k;
  if (n->kind == MLSYS_CONTRACODE_JS_MEMBER_EXPRESSION && (n->flags & MLSYS_CONTRACODE_JS_F_COMPUTED)) k = n->b;
  else if (n->kind == MLSYS_CONTRACODE_JS_PROPERTY && !(n->flags & MLSYS_CONTRACODE_JS_F_COMPUTED) && !c->keep_quoted) k = n->a;
  else return;
  if (!k || !mlsys__cp_ident_string(c, k)) return;
  n->flags &= (uint16_t)~MLSYS_CONTRACODE_JS_F_COMPUTED;
  {
    mlsys_contracode_js_node *key = &MLSYS__CP_N(c, k);
    key->kind = MLSYS_CONTRACODE_JS_IDENTIFIER;
    key->op = 0;
    key->flags = 0;
    key->str += 1;
    key->slen -= 2;
  }
  c->count++;
}
MLSYS_DEF mlsys_status mlsys_contracode_props_opt(mlsys_contracode_js_ast *ast, int keep_quoted, int *nrewrites) {
  mlsys__cp c;
  mlsys_status st = mlsys__cp_open(&c, ast);
  if (nrewrites) *nrewrites = 0;
  if (st != MLSYS_OK) return st;
  c.keep_quoted = keep_quoted != 0;
  mlsys__cp_walk(&c, ast->root, 0, mlsys__cp_props1);
  return mlsys__cp_close(&c, nrewrites, "props");
}
MLSYS_DEF mlsys_status mlsys_contracode_props(mlsys_contracode_js_ast *ast, int *nrewrites) {
  return mlsys_contracode_props_opt(ast, 0, nrewrites);
}
MLSYS_DEF mlsys_status mlsys_contracode_compress(mlsys_contracode_js_ast *ast, int *nrewrites) {
  typedef mlsys_status (*pass_fn)(mlsys_contracode_js_ast *, int *);
  static const pass_fn passes[] = {mlsys_contracode_fold, mlsys_contracode_dce, mlsys_contracode_unused,
                                   mlsys_contracode_seq_cond, mlsys_contracode_props, mlsys_contracode_booleans};
  size_t i;
  int total = 0, k;
  if (nrewrites) *nrewrites = 0;
  for (i = 0; i < sizeof passes / sizeof passes[0]; i++) {
    mlsys_status st = passes[i](ast, &k);
    if (st != MLSYS_OK) return st;
    total += k;
  }
  if (nrewrites) *nrewrites = total;
  return MLSYS_OK;
}

/* ---- T9 hoist_vars, T10 arguments, T6u bool_int, template_concat, drop_console ---- */
#define MLSYS__CP_IS_FN(k)                                                                                    \
  ((k) == MLSYS_CONTRACODE_JS_FUNCTION_DECLARATION || (k) == MLSYS_CONTRACODE_JS_FUNCTION_EXPRESSION ||       \
   (k) == MLSYS_CONTRACODE_JS_ARROW_FUNCTION_EXPRESSION)
static int mlsys__cp_is_name(mlsys__cp *c, int x, const char *s) {
  size_t n = strlen(s);
  return x && MLSYS__CP_N(c, x).kind == MLSYS_CONTRACODE_JS_IDENTIFIER && MLSYS__CP_N(c, x).slen == n &&
         !memcmp(c->a->text + MLSYS__CP_N(c, x).str, s, n);
}
static int mlsys__cp_is_var(mlsys__cp *c, int x) {
  return x && MLSYS__CP_N(c, x).kind == MLSYS_CONTRACODE_JS_VARIABLE_DECLARATION && MLSYS__CP_N(c, x).op == MLSYS_CONTRACODE_JS_VAR;
}
/* par[x] = the node holding x, for the nodes reachable from the root (a dead node may still point at live ones, so
   this follows the tree, not the array). */
static void mlsys__cp_par_walk(mlsys__cp *c, int *par, int x) {
  int ch[4], i, y;
  const mlsys_contracode_js_node *n = &MLSYS__CP_N(c, x);
  if (n->kind == MLSYS_CONTRACODE_JS_IDENTIFIER || n->kind == MLSYS_CONTRACODE_JS_LITERAL) return;
  ch[0] = n->a; ch[1] = n->b; ch[2] = n->c; ch[3] = n->d;
  for (i = 0; i < 4; i++)
    for (y = ch[i]; y; y = MLSYS__CP_N(c, y).next) {
      par[y] = x;
      mlsys__cp_par_walk(c, par, y);
    }
}
static int *mlsys__cp_parents(mlsys__cp *c) {
  int *par = (int *)calloc((size_t)c->a->nnodes + 1, sizeof *par);
  if (!par) { c->nomem = 1; return NULL; }
  mlsys__cp_par_walk(c, par, c->a->root);
  return par;
}
/* Strict code: a module, inside a class, or under a "use strict" prologue of x or an enclosing function/program. */
static int mlsys__cp_strict(mlsys__cp *c, const int *par, int x) {
  if (c->a->module) return 1;
  for (; x; x = par[x]) {
    const mlsys_contracode_js_node *n = &MLSYS__CP_N(c, x);
    int body = 0, y;
    if (n->kind == MLSYS_CONTRACODE_JS_CLASS_BODY || n->kind == MLSYS_CONTRACODE_JS_CLASS_DECLARATION ||
        n->kind == MLSYS_CONTRACODE_JS_CLASS_EXPRESSION)
      return 1;
    if (n->kind == MLSYS_CONTRACODE_JS_PROGRAM) body = x;
    else if (MLSYS__CP_IS_FN(n->kind) && n->c && MLSYS__CP_N(c, n->c).kind == MLSYS_CONTRACODE_JS_BLOCK_STATEMENT) body = n->c;
    if (!body) continue;
    for (y = MLSYS__CP_N(c, body).a; y && (MLSYS__CP_N(c, y).flags & MLSYS_CONTRACODE_JS_F_DIRECTIVE); y = MLSYS__CP_N(c, y).next) {
      const mlsys_contracode_js_node *l = &MLSYS__CP_N(c, MLSYS__CP_N(c, y).a);
      if (l->slen == 12 && !memcmp(c->a->text + l->str + 1, "use strict", 10)) return 1;
    }
  }
  return 0;
}

/* T9 hoist_vars. h: bad (refuse the function), ndecl (var declarations seen). The var names go onto buf. */
typedef struct { int bad, ndecl; size_t from, to; } mlsys__hv;
static void mlsys__hv_collect(mlsys__cp *c, int x, int top, int check, mlsys__hv *h) {
  const mlsys_contracode_js_node *n = &MLSYS__CP_N(c, x);
  int ch[4], i, y;
  size_t k;
  switch (n->kind) {
    case MLSYS_CONTRACODE_JS_FUNCTION_EXPRESSION: case MLSYS_CONTRACODE_JS_ARROW_FUNCTION_EXPRESSION:
    case MLSYS_CONTRACODE_JS_CLASS_EXPRESSION: case MLSYS_CONTRACODE_JS_CLASS_DECLARATION:
    case MLSYS_CONTRACODE_JS_IDENTIFIER: case MLSYS_CONTRACODE_JS_LITERAL:
      return;
    case MLSYS_CONTRACODE_JS_FUNCTION_DECLARATION:
      if (!top) h->bad = 1;   /* Annex B: a block function also gets a var binding, assigned when its block runs */
      return;
    case MLSYS_CONTRACODE_JS_VARIABLE_DECLARATION:
      if (n->op != MLSYS_CONTRACODE_JS_VAR || check) return;
      h->ndecl++;
      k = c->nbuf;
      for (y = n->a; y; y = MLSYS__CP_N(c, y).next) mlsys__cp_pat_ids(c, MLSYS__CP_N(c, y).a);
      for (; k < c->nbuf; k++)   /* `let = 1;` and `for (async of x)` read differently once `var` is gone */
        if (mlsys__cp_is_name(c, c->buf[k], "let") || mlsys__cp_is_name(c, c->buf[k], "async")) h->bad = 1;
      return;   /* initializers hold no declarations outside functions */
    case MLSYS_CONTRACODE_JS_FOR_IN_STATEMENT: case MLSYS_CONTRACODE_JS_FOR_OF_STATEMENT:
      if (mlsys__cp_is_var(c, n->a) && MLSYS__CP_N(c, MLSYS__CP_N(c, n->a).a).b) h->bad = 1;   /* Annex B `for (var k = 0 in o)` */
      break;
    case MLSYS_CONTRACODE_JS_CATCH_CLAUSE:
      if (check && n->a) {   /* `catch (e) { var e = 1 }`: the initializer writes the catch parameter */
        size_t mark = c->nbuf, j;
        mlsys__cp_pat_ids(c, n->a);
        for (k = mark; k < c->nbuf && !h->bad; k++)
          for (j = h->from; j < h->to; j++) {
            const mlsys_contracode_js_node *p = &MLSYS__CP_N(c, c->buf[k]), *v = &MLSYS__CP_N(c, c->buf[j]);
            if (p->slen == v->slen && !memcmp(c->a->text + p->str, c->a->text + v->str, p->slen)) { h->bad = 1; break; }
          }
        c->nbuf = mark;
      }
      break;
    default: break;
  }
  ch[0] = n->a; ch[1] = n->b; ch[2] = n->c; ch[3] = n->d;
  for (i = 0; i < 4; i++)
    for (y = ch[i]; y; y = MLSYS__CP_N(c, y).next) mlsys__hv_collect(c, y, 0, check, h);
}
/* The initializers of var declaration d as one expression (declarators become assignments), or 0. */
static int mlsys__hv_expr(mlsys__cp *c, int d) {
  size_t from = c->nbuf;
  int dr, nx, e;
  for (dr = MLSYS__CP_N(c, d).a; dr; dr = nx) {
    int id = MLSYS__CP_N(c, dr).a, init = MLSYS__CP_N(c, dr).b;
    nx = MLSYS__CP_N(c, dr).next;
    if (!init) continue;
    mlsys__cp_set(c, dr, MLSYS_CONTRACODE_JS_ASSIGNMENT_EXPRESSION, MLSYS__CC_P_ASSIGN, id, init, 0);
    MLSYS__CP_N(c, dr).next = 0;
    mlsys__cp_push(c, dr);
  }
  if (c->nbuf == from) return 0;
  if (c->nbuf == from + 1) { e = c->buf[from]; c->nbuf = from; return e; }
  return mlsys__cp_seq(c, from);
}
/* Statement s (a var declaration) in a single-statement slot: its assignments, or an empty statement. */
static void mlsys__hv_stmt(mlsys__cp *c, int s) {
  int e = mlsys__hv_expr(c, s);
  mlsys__cp_set(c, s, e ? MLSYS_CONTRACODE_JS_EXPRESSION_STATEMENT : MLSYS_CONTRACODE_JS_EMPTY_STATEMENT, 0, e, 0, 0);
  c->count++;
}
static void mlsys__hv_rewrite(mlsys__cp *c, int x) {
  mlsys_contracode_js_node *n = &MLSYS__CP_N(c, x);
  int ch[4], i, y;
  int32_t *head;
  switch (n->kind) {
    case MLSYS_CONTRACODE_JS_FUNCTION_DECLARATION: case MLSYS_CONTRACODE_JS_FUNCTION_EXPRESSION:
    case MLSYS_CONTRACODE_JS_ARROW_FUNCTION_EXPRESSION: case MLSYS_CONTRACODE_JS_CLASS_EXPRESSION:
    case MLSYS_CONTRACODE_JS_CLASS_DECLARATION: case MLSYS_CONTRACODE_JS_IDENTIFIER: case MLSYS_CONTRACODE_JS_LITERAL:
    case MLSYS_CONTRACODE_JS_VARIABLE_DECLARATION:
      return;
    default: break;
  }
  ch[0] = n->a; ch[1] = n->b; ch[2] = n->c; ch[3] = n->d;
  for (i = 0; i < 4; i++)
    for (y = ch[i]; y; y = MLSYS__CP_N(c, y).next) mlsys__hv_rewrite(c, y);
  n = &MLSYS__CP_N(c, x);
  if ((head = mlsys__cp_list(c, x)) != NULL) {
    int32_t *pp = head;
    while (*pp) {
      int s = *pp, e;
      if (!mlsys__cp_is_var(c, s)) { pp = &MLSYS__CP_N(c, s).next; continue; }
      c->count++;
      if ((e = mlsys__hv_expr(c, s)) != 0) {
        mlsys__cp_set(c, s, MLSYS_CONTRACODE_JS_EXPRESSION_STATEMENT, 0, e, 0, 0);
        pp = &MLSYS__CP_N(c, s).next;
      } else *pp = MLSYS__CP_N(c, s).next;
    }
    return;
  }
  switch (n->kind) {
    case MLSYS_CONTRACODE_JS_FOR_STATEMENT:
      if (mlsys__cp_is_var(c, n->a)) { n->a = mlsys__hv_expr(c, n->a); c->count++; }
      if (mlsys__cp_is_var(c, n->d)) mlsys__hv_stmt(c, n->d);
      break;
    case MLSYS_CONTRACODE_JS_FOR_IN_STATEMENT: case MLSYS_CONTRACODE_JS_FOR_OF_STATEMENT:
      if (mlsys__cp_is_var(c, n->a)) {
        n->a = MLSYS__CP_N(c, MLSYS__CP_N(c, n->a).a).a;   /* the declarator's target */
        MLSYS__CP_N(c, n->a).next = 0;
        c->count++;
      }
      if (mlsys__cp_is_var(c, n->c)) mlsys__hv_stmt(c, n->c);
      break;
    case MLSYS_CONTRACODE_JS_IF_STATEMENT:
      if (mlsys__cp_is_var(c, n->b)) mlsys__hv_stmt(c, n->b);
      if (mlsys__cp_is_var(c, n->c)) mlsys__hv_stmt(c, n->c);
      break;
    case MLSYS_CONTRACODE_JS_WHILE_STATEMENT: case MLSYS_CONTRACODE_JS_LABELED_STATEMENT:
    case MLSYS_CONTRACODE_JS_WITH_STATEMENT:
      if (mlsys__cp_is_var(c, n->b)) mlsys__hv_stmt(c, n->b);
      break;
    case MLSYS_CONTRACODE_JS_DO_WHILE_STATEMENT:
      if (mlsys__cp_is_var(c, n->a)) mlsys__hv_stmt(c, n->a);
      break;
    default: break;
  }
}
static void mlsys__cp_hoist1(mlsys__cp *c, int x) {
  mlsys__hv h;
  int body, y, d;
  int32_t *pp;
  size_t i, j, k;
  if (!MLSYS__CP_IS_FN(MLSYS__CP_N(c, x).kind)) return;
  body = MLSYS__CP_N(c, x).c;
  if (!body || MLSYS__CP_N(c, body).kind != MLSYS_CONTRACODE_JS_BLOCK_STATEMENT) return;
  memset(&h, 0, sizeof h);
  h.from = c->nbuf;
  for (y = MLSYS__CP_N(c, body).a; y; y = MLSYS__CP_N(c, y).next) mlsys__hv_collect(c, y, 1, 0, &h);
  h.to = c->nbuf;
  if (!h.bad && h.ndecl >= 2)
    for (y = MLSYS__CP_N(c, body).a; y; y = MLSYS__CP_N(c, y).next) mlsys__hv_collect(c, y, 1, 1, &h);
  if (h.bad || h.ndecl < 2 || c->nomem) { c->nbuf = h.from; return; }
  for (i = k = h.from; i < h.to; i++) {   /* first occurrence of each name, in source order */
    const mlsys_contracode_js_node *v = &MLSYS__CP_N(c, c->buf[i]);
    for (j = h.from; j < k; j++) {
      const mlsys_contracode_js_node *u = &MLSYS__CP_N(c, c->buf[j]);
      if (u->slen == v->slen && !memcmp(c->a->text + u->str, c->a->text + v->str, v->slen)) break;
    }
    if (j == k) c->buf[k++] = c->buf[i];
  }
  c->nbuf = k;
  mlsys__hv_rewrite(c, body);
  if (c->nomem || !(d = mlsys__cp_var_decl(c, h.from))) { c->nbuf = h.from; return; }
  pp = &MLSYS__CP_N(c, body).a;
  while (*pp && (MLSYS__CP_N(c, *pp).flags & MLSYS_CONTRACODE_JS_F_DIRECTIVE)) pp = &MLSYS__CP_N(c, *pp).next;
  MLSYS__CP_N(c, d).next = *pp;
  *pp = d;
}
MLSYS_DEF mlsys_status mlsys_contracode_hoist_vars(mlsys_contracode_js_ast *ast, int *nrewrites) {
  mlsys__cp c;
  mlsys_status st = mlsys__cp_open(&c, ast);
  if (nrewrites) *nrewrites = 0;
  if (st != MLSYS_OK) return st;
  mlsys__cp_walk(&c, ast->root, 0, mlsys__cp_hoist1);
  return mlsys__cp_close(&c, nrewrites, "hoist_vars");
}

/* T10 arguments. Is identifier x (a name use) written: assigned, updated, a for-in/of target or in a pattern? */
static int mlsys__cp_written(mlsys__cp *c, const int *par, int x) {
  int p = par[x];
  const mlsys_contracode_js_node *n = &MLSYS__CP_N(c, p);
  switch (n->kind) {
    case MLSYS_CONTRACODE_JS_ASSIGNMENT_EXPRESSION: case MLSYS_CONTRACODE_JS_ASSIGNMENT_PATTERN:
    case MLSYS_CONTRACODE_JS_FOR_IN_STATEMENT: case MLSYS_CONTRACODE_JS_FOR_OF_STATEMENT:
      return n->a == x;
    case MLSYS_CONTRACODE_JS_UPDATE_EXPRESSION: case MLSYS_CONTRACODE_JS_ARRAY_PATTERN: case MLSYS_CONTRACODE_JS_REST_ELEMENT:
      return 1;
    case MLSYS_CONTRACODE_JS_PROPERTY: return MLSYS__CP_N(c, par[p]).kind == MLSYS_CONTRACODE_JS_OBJECT_PATTERN;
    case MLSYS_CONTRACODE_JS_UNARY_EXPRESSION: return n->op == MLSYS__CC_P_DELETE;
    default: return 0;
  }
}
/* The non-arrow function scope whose implicit `arguments` identifier x is, or -1. */
static int mlsys__cp_args_owner(mlsys__cp *c, int x) {
  int f;
  if (x >= c->s.nnodes || c->s.resolved[x] != 0 || (f = c->s.id_scope[x]) < 0 || !mlsys__cp_is_name(c, x, "arguments"))
    return -1;
  while (f >= 0 && !(c->s.scopes[f].kind == MLSYS_CONTRACODE_SCOPE_FUNCTION && !c->s.scopes[f].arrow)) f = c->s.scopes[f].parent;
  return f;
}
/* `arguments[i]` (i a decimal integer literal) → i, `arguments.length` → -2, anything else → -1. m = par[x]. */
static int mlsys__cp_args_use(mlsys__cp *c, const int *par, int x) {
  int m = par[x], k;
  const mlsys_contracode_js_node *n = &MLSYS__CP_N(c, m), *l;
  long v = 0;
  uint32_t i;
  if (n->kind != MLSYS_CONTRACODE_JS_MEMBER_EXPRESSION || n->a != x || (n->flags & MLSYS_CONTRACODE_JS_F_OPTIONAL)) return -1;
  /* read positions only: `arguments[0]()` would lose its `this`, a write or delete would change the mapping */
  if (mlsys__cp_written(c, par, m)) return -1;
  k = MLSYS__CP_N(c, par[m]).kind;
  if ((k == MLSYS_CONTRACODE_JS_CALL_EXPRESSION || k == MLSYS_CONTRACODE_JS_TAGGED_TEMPLATE_EXPRESSION) &&
      MLSYS__CP_N(c, par[m]).a == m)
    return -1;
  if (k == MLSYS_CONTRACODE_JS_CHAIN_EXPRESSION) return -1;
  if (!(n->flags & MLSYS_CONTRACODE_JS_F_COMPUTED)) return mlsys__cp_is_name(c, n->b, "length") ? -2 : -1;
  l = &MLSYS__CP_N(c, n->b);
  if (l->kind != MLSYS_CONTRACODE_JS_LITERAL || l->op != MLSYS_CONTRACODE_JS_LIT_NUMBER || !l->slen || l->slen > 6 ||
      (l->slen > 1 && c->a->text[l->str] == '0'))
    return -1;
  for (i = 0; i < l->slen; i++) {
    char ch = c->a->text[l->str + i];
    if (ch < '0' || ch > '9') return -1;
    v = v * 10 + (ch - '0');
  }
  return (int)v;
}
MLSYS_DEF mlsys_status mlsys_contracode_arguments(mlsys_contracode_js_ast *ast, int *nrewrites) {
  mlsys__cp c;
  mlsys_status st = mlsys__cp_open(&c, ast);
  int *par = NULL, i, f;
  uint8_t *ok = NULL, *written = NULL;
  if (nrewrites) *nrewrites = 0;
  if (st != MLSYS_OK) return st;
  par = mlsys__cp_parents(&c);
  ok = (uint8_t *)calloc((size_t)c.s.nscopes + 1, 1);
  written = (uint8_t *)calloc((size_t)c.s.nbindings + 1, 1);
  if (!par || !ok || !written) { c.nomem = 1; goto done; }
  /* candidate functions: sloppy, simple parameters, not seen by eval/with */
  for (f = 0; f < c.s.nscopes; f++) {
    const mlsys_contracode_scope *S = &c.s.scopes[f];
    int p;
    if (S->kind != MLSYS_CONTRACODE_SCOPE_FUNCTION || S->arrow || !S->uses_arguments || S->unsafe) continue;
    ok[f] = 1;
    for (p = MLSYS__CP_N(&c, S->node).b; p; p = MLSYS__CP_N(&c, p).next)
      if (MLSYS__CP_N(&c, p).kind != MLSYS_CONTRACODE_JS_IDENTIFIER) ok[f] = 0;
    if (ok[f] && mlsys__cp_strict(&c, par, S->node)) ok[f] = 0;
  }
  /* a parameter written anywhere (or declared twice) loses the rewrite: past the actual argument count the
     parameter and arguments[i] are not aliased, so after a write they would differ */
  for (i = 1; i < c.s.nnodes; i++) {
    int b = c.s.resolved[i] - 1;
    if (b < 0 || (i != ast->root && !par[i])) continue;
    if (c.s.bindings[b].ndecls > 1 || (!c.s.is_decl[i] && mlsys__cp_written(&c, par, i))) written[b] = 1;
  }
  /* any other use of `arguments` (escaping, written, called through) disqualifies its function */
  for (i = 1; i < c.s.nnodes; i++)
    if ((par[i] || i == ast->root) && (f = mlsys__cp_args_owner(&c, i)) >= 0 && mlsys__cp_args_use(&c, par, i) == -1) ok[f] = 0;
  for (i = 1; i < c.s.nnodes; i++) {
    int idx, p, k = 0, b, m;
    if (!par[i] || (f = mlsys__cp_args_owner(&c, i)) < 0 || !ok[f] || c.s.scopes[c.s.id_scope[i]].unsafe) continue;
    if ((idx = mlsys__cp_args_use(&c, par, i)) < 0) continue;
    for (p = MLSYS__CP_N(&c, c.s.scopes[f].node).b; p && k < idx; p = MLSYS__CP_N(&c, p).next) k++;
    if (!p || (b = c.s.resolved[p] - 1) < 0 || written[b]) continue;
    if (mlsys_contracode_scope_lookup(&c.s, c.s.id_scope[i], ast->text + MLSYS__CP_N(&c, p).str, MLSYS__CP_N(&c, p).slen) != b)
      continue;   /* shadowed where `arguments` is read */
    m = par[i];
    mlsys__cp_set(&c, m, MLSYS_CONTRACODE_JS_IDENTIFIER, 0, 0, 0, 0);
    MLSYS__CP_N(&c, m).str = MLSYS__CP_N(&c, p).str;
    MLSYS__CP_N(&c, m).slen = MLSYS__CP_N(&c, p).slen;
    MLSYS__CP_N(&c, m).flags = MLSYS__CP_N(&c, p).flags & MLSYS_CONTRACODE_JS_F_ESCAPED;
    c.count++;
  }
done:
  free(par);
  free(ok);
  free(written);
  return mlsys__cp_close(&c, nrewrites, "arguments");
}

/* T6u bool_int (unsafe) */
static void mlsys__cp_boolint_eq(mlsys__cp *c, int x) {
  mlsys_contracode_js_node *n = &MLSYS__CP_N(c, x);
  const mlsys_contracode_js_node *l, *r;
  if (n->kind != MLSYS_CONTRACODE_JS_BINARY_EXPRESSION || (n->op != MLSYS__CC_P_SEQ && n->op != MLSYS__CC_P_SNE)) return;
  l = &MLSYS__CP_N(c, n->a);
  r = &MLSYS__CP_N(c, n->b);
  if (!((l->kind == MLSYS_CONTRACODE_JS_LITERAL && l->op == MLSYS_CONTRACODE_JS_LIT_BOOLEAN) ||
        (r->kind == MLSYS_CONTRACODE_JS_LITERAL && r->op == MLSYS_CONTRACODE_JS_LIT_BOOLEAN)))
    return;
  n->op = n->op == MLSYS__CC_P_SEQ ? MLSYS__CC_P_EQ : MLSYS__CC_P_NE;
  c->count++;
}
static void mlsys__cp_boolint_lit(mlsys__cp *c, int x) {
  mlsys_contracode_js_node *n = &MLSYS__CP_N(c, x);
  if (n->kind != MLSYS_CONTRACODE_JS_LITERAL || n->op != MLSYS_CONTRACODE_JS_LIT_BOOLEAN) return;
  if (c->aux < 0 && (c->aux = mlsys__tr_add_text(c->a, "01", 2)) < 0) { c->nomem = 1; return; }   /* once */
  n->str = (uint32_t)c->aux + (c->a->text[n->str] == 't');
  n->slen = 1;
  n->op = MLSYS_CONTRACODE_JS_LIT_NUMBER;
  c->count++;
}
MLSYS_DEF mlsys_status mlsys_contracode_bool_int(mlsys_contracode_js_ast *ast, int *nrewrites) {
  mlsys__cp c;
  mlsys_status st = mlsys__cp_open(&c, ast);
  if (nrewrites) *nrewrites = 0;
  if (st != MLSYS_OK) return st;
  c.aux = -1;
  mlsys__cp_walk(&c, ast->root, 0, mlsys__cp_boolint_eq);   /* first, while the operands are still booleans */
  mlsys__cp_walk(&c, ast->root, 0, mlsys__cp_boolint_lit);
  return mlsys__cp_close(&c, nrewrites, "bool_int");
}

/* template_concat (safe form). The template's raw text as a double-quoted string literal, or 0 (a CR, whose
   cooked value differs from its raw spelling). *out malloc'd. */
static int mlsys__cp_tpl_string(mlsys__cp *c, int q, char **out, size_t *outn) {
  const char *t = c->a->text + MLSYS__CP_N(c, q).str;
  size_t n = MLSYS__CP_N(c, q).slen, i, o = 0;
  char *b = (char *)malloc(6 * n + 3);
  if (!b) { c->nomem = 1; return 0; }
  b[o++] = '"';
  for (i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)t[i];
    if (ch == '\r' || (ch == '\\' && i + 1 < n && t[i + 1] == '\r')) { free(b); return 0; }
    if (ch == '\\' && i + 1 < n) { b[o++] = t[i++]; b[o++] = t[i]; }   /* escapes mean the same in a string */
    else if (ch == '"') { b[o++] = '\\'; b[o++] = '"'; }
    else if (ch == '\n') { b[o++] = '\\'; b[o++] = 'n'; }
    else if (ch == 0xE2 && i + 2 < n && (unsigned char)t[i + 1] == 0x80 && ((unsigned char)t[i + 2] | 1) == 0xA9) {
      memcpy(b + o, (unsigned char)t[i + 2] == 0xA8 ? "\\u2028" : "\\u2029", 6);
      o += 6;
      i += 2;
    } else b[o++] = (char)ch;
  }
  b[o++] = '"';
  *out = b;
  *outn = o;
  return 1;
}
static int mlsys__cp_tpl_safe(mlsys__cp *c, int e) {   /* its ToString and `"" + e` agree */
  const mlsys_contracode_js_node *n = &MLSYS__CP_N(c, e);
  if (n->kind == MLSYS_CONTRACODE_JS_LITERAL) return n->op == MLSYS_CONTRACODE_JS_LIT_STRING || n->op == MLSYS_CONTRACODE_JS_LIT_NUMBER;
  return n->kind == MLSYS_CONTRACODE_JS_UNARY_EXPRESSION && n->op == MLSYS__CC_P_TYPEOF;
}
static void mlsys__cp_tpl1(mlsys__cp *c, int x) {
  int q, e, r = 0, nq, ne;
  if (MLSYS__CP_N(c, x).kind != MLSYS_CONTRACODE_JS_TEMPLATE_LITERAL || (x < c->s.nnodes && c->drop[x])) return;
  for (e = MLSYS__CP_N(c, x).b; e; e = MLSYS__CP_N(c, e).next)
    if (!mlsys__cp_tpl_safe(c, e)) return;
  for (q = MLSYS__CP_N(c, x).a; q; q = MLSYS__CP_N(c, q).next) {   /* every piece must convert before any changes */
    char *s;
    size_t sn;
    if (!mlsys__cp_tpl_string(c, q, &s, &sn)) return;
    free(s);
  }
  for (q = MLSYS__CP_N(c, x).a, e = MLSYS__CP_N(c, x).b; q; q = nq, e = ne) {
    char *s;
    size_t sn;
    long off;
    int empty = MLSYS__CP_N(c, q).slen == 0;
    nq = MLSYS__CP_N(c, q).next;
    ne = e ? MLSYS__CP_N(c, e).next : 0;
    if (!mlsys__cp_tpl_string(c, q, &s, &sn)) return;
    off = mlsys__tr_add_text(c->a, s, sn);
    free(s);
    if (off < 0) { c->nomem = 1; return; }
    mlsys__cp_set(c, q, MLSYS_CONTRACODE_JS_LITERAL, MLSYS_CONTRACODE_JS_LIT_STRING, 0, 0, 0);
    MLSYS__CP_N(c, q).str = (uint32_t)off;
    MLSYS__CP_N(c, q).slen = (uint32_t)sn;
    MLSYS__CP_N(c, q).next = 0;
    if (!r) r = q;   /* the first piece, even "", makes every `+` a concatenation */
    else if (!empty) {
      int y = mlsys__cp_new(c, MLSYS_CONTRACODE_JS_BINARY_EXPRESSION);
      if (!y) return;
      mlsys__cp_set(c, y, MLSYS_CONTRACODE_JS_BINARY_EXPRESSION, MLSYS__CC_P_PLUS, r, q, 0);
      r = y;
    }
    if (e) {
      int y = mlsys__cp_new(c, MLSYS_CONTRACODE_JS_BINARY_EXPRESSION);
      if (!y) return;
      MLSYS__CP_N(c, e).next = 0;
      mlsys__cp_set(c, y, MLSYS_CONTRACODE_JS_BINARY_EXPRESSION, MLSYS__CC_P_PLUS, r, e, 0);
      r = y;
    }
  }
  mlsys__cp_become(c, x, r);
  c->count++;
}
MLSYS_DEF mlsys_status mlsys_contracode_template_concat(mlsys_contracode_js_ast *ast, int *nrewrites) {
  mlsys__cp c;
  mlsys_status st = mlsys__cp_open(&c, ast);
  int i;
  if (nrewrites) *nrewrites = 0;
  if (st != MLSYS_OK) return st;
  if (!(c.drop = (uint8_t *)calloc((size_t)c.s.nnodes + 1, 1))) {
    c.nomem = 1;
    return mlsys__cp_close(&c, nrewrites, "template_concat");
  }
  for (i = 1; i < c.s.nnodes; i++)   /* a tagged template's pieces are the tag's arguments: they stay */
    if (ast->nodes[i].kind == MLSYS_CONTRACODE_JS_TAGGED_TEMPLATE_EXPRESSION && ast->nodes[i].b < c.s.nnodes)
      c.drop[ast->nodes[i].b] = 1;
  mlsys__cp_walk(&c, ast->root, 0, mlsys__cp_tpl1);
  free(c.drop);
  return mlsys__cp_close(&c, nrewrites, "template_concat");
}

/* drop_console (changes I/O) */
static int mlsys__cp_console_stmt(mlsys__cp *c, int s) {
  const mlsys_contracode_js_node *n = &MLSYS__CP_N(c, s);
  int e;
  if (!s || n->kind != MLSYS_CONTRACODE_JS_EXPRESSION_STATEMENT) return 0;
  e = n->a;
  if (MLSYS__CP_N(c, e).kind != MLSYS_CONTRACODE_JS_CALL_EXPRESSION) return 0;
  e = MLSYS__CP_N(c, e).a;
  if (MLSYS__CP_N(c, e).kind != MLSYS_CONTRACODE_JS_MEMBER_EXPRESSION) return 0;
  while (MLSYS__CP_N(c, e).kind == MLSYS_CONTRACODE_JS_MEMBER_EXPRESSION) e = MLSYS__CP_N(c, e).a;
  return mlsys__cp_is_name(c, e, "console") && e < c->s.nnodes && c->s.resolved[e] == -1;   /* the global one */
}
static void mlsys__cp_console1(mlsys__cp *c, int x) {
  mlsys_contracode_js_node *n = &MLSYS__CP_N(c, x);
  int32_t *head = mlsys__cp_list(c, x), *slot[3];
  int i, ns = 0;
  if (head) {
    int32_t *pp = head;
    while (*pp)
      if (mlsys__cp_console_stmt(c, *pp)) { *pp = MLSYS__CP_N(c, *pp).next; c->count++; }
      else pp = &MLSYS__CP_N(c, *pp).next;
    return;
  }
  switch (n->kind) {   /* single-statement slots keep an empty statement */
    case MLSYS_CONTRACODE_JS_IF_STATEMENT: slot[ns++] = &n->b; slot[ns++] = &n->c; break;
    case MLSYS_CONTRACODE_JS_WHILE_STATEMENT: case MLSYS_CONTRACODE_JS_LABELED_STATEMENT: case MLSYS_CONTRACODE_JS_WITH_STATEMENT:
      slot[ns++] = &n->b; break;
    case MLSYS_CONTRACODE_JS_DO_WHILE_STATEMENT: slot[ns++] = &n->a; break;
    case MLSYS_CONTRACODE_JS_FOR_STATEMENT: slot[ns++] = &n->d; break;
    case MLSYS_CONTRACODE_JS_FOR_IN_STATEMENT: case MLSYS_CONTRACODE_JS_FOR_OF_STATEMENT: slot[ns++] = &n->c; break;
    default: break;
  }
  for (i = 0; i < ns; i++)
    if (mlsys__cp_console_stmt(c, *slot[i])) {
      mlsys__cp_set(c, *slot[i], MLSYS_CONTRACODE_JS_EMPTY_STATEMENT, 0, 0, 0, 0);
      c->count++;
    }
}
MLSYS_DEF mlsys_status mlsys_contracode_drop_console(mlsys_contracode_js_ast *ast, int *nrewrites) {
  mlsys__cp c;
  mlsys_status st = mlsys__cp_open(&c, ast);
  if (nrewrites) *nrewrites = 0;
  if (st != MLSYS_OK) return st;
  mlsys__cp_walk(&c, ast->root, 0, mlsys__cp_console1);
  return mlsys__cp_close(&c, nrewrites, "drop_console");
}

/* [end of section 3 implementation] */

/* ---------------------------------------------------------------------------------------------------------------
   4. Augmentation: transform dropout (Alg. 1) (implementation)
   --------------------------------------------------------------------------------------------------------------- */
/* Words for T1/T2 names, like the English words of the repo's Babel pass; none is reserved. */
static const char *const mlsys__aug_words[] = {
    "apple",  "river",  "bright", "stone", "cloud", "green",  "silver", "quiet", "forest", "ocean",  "paper",
    "window", "garden", "yellow", "smooth", "table", "candle", "winter", "summer", "spring", "autumn", "bridge",
    "castle", "mirror", "pepper", "rocket", "shadow", "thunder", "valley", "velvet", "wagon",  "zebra",  "anchor",
    "basket", "copper", "dragon", "engine", "falcon", "ginger", "harbor", "island", "jungle", "kettle", "lemon",
    "marble", "needle", "orange", "pillow", "quartz", "ribbon", "saddle", "tunnel", "umbrella", "violet", "walnut",
    "number", "value",  "result", "count",  "index", "item",   "list",   "total", "buffer", "cursor", "token"};
#define MLSYS__AUG_NWORDS ((int)(sizeof mlsys__aug_words / sizeof mlsys__aug_words[0]))

/* One or two words, snake_case or camelCase (p .5 each), into buf (64 bytes is enough). */
static void mlsys__aug_name(mlsys_rng *r, char *buf, size_t cap) {
  const char *w1 = mlsys__aug_words[mlsys_rng_below(r, MLSYS__AUG_NWORDS)];
  if (mlsys_rng_uniform(r) < 0.5) {
    snprintf(buf, cap, "%s", w1);
  } else {
    const char *w2 = mlsys__aug_words[mlsys_rng_below(r, MLSYS__AUG_NWORDS)];
    if (mlsys_rng_uniform(r) < 0.5) snprintf(buf, cap, "%s_%s", w1, w2);
    else snprintf(buf, cap, "%s%c%s", w1, w2[0] - 'a' + 'A', w2 + 1);
  }
}
static int mlsys__aug_is_fn(const mlsys_contracode_js_ast *a, int x) {
  int k = a->nodes[x].kind;
  return k == MLSYS_CONTRACODE_JS_FUNCTION_DECLARATION || k == MLSYS_CONTRACODE_JS_FUNCTION_EXPRESSION ||
         k == MLSYS_CONTRACODE_JS_ARROW_FUNCTION_EXPRESSION;
}
/* MLSYS_ERR_ARG (not fresh, destructured) and UNSUPPORTED (eval/with) mean "not here"; anything else is an error. */
static int mlsys__aug_soft(mlsys_status st) { return st == MLSYS_ERR_ARG || st == MLSYS_ERR_UNSUPPORTED; }

static mlsys_status mlsys__aug_rename(mlsys_contracode_js_ast *a, mlsys_rng *r, int *did) {
  int x, nn = a->nnodes;
  for (x = 1; x < nn; x++) {
    int p, np = 0, simple[64], t;
    if (!mlsys__aug_is_fn(a, x)) continue;
    for (p = a->nodes[x].b; p && np < 64; p = a->nodes[p].next, np++) {
      int id = p, k = a->nodes[p].kind;
      if (k == MLSYS_CONTRACODE_JS_ASSIGNMENT_PATTERN || k == MLSYS_CONTRACODE_JS_REST_ELEMENT) id = a->nodes[p].a;
      simple[np] = a->nodes[id].kind == MLSYS_CONTRACODE_JS_IDENTIFIER;
    }
    {
      int ns = 0, pick, i;
      for (i = 0; i < np; i++) ns += simple[i];
      if (!ns) continue;
      pick = (int)mlsys_rng_below(r, (uint64_t)ns);
      for (i = 0; i < np; i++)
        if (simple[i] && pick-- == 0) break;
      for (t = 0; t < 4; t++) {   /* a taken name is redrawn a few times, then this function is left alone */
        char nm[64];
        mlsys_status st;
        mlsys__aug_name(r, nm, sizeof nm);
        st = mlsys_contracode_rename_param(a, x, i, nm);
        if (st == MLSYS_OK) { *did = 1; break; }
        if (!mlsys__aug_soft(st)) return st;
        if (st == MLSYS_ERR_UNSUPPORTED) break;
      }
    }
  }
  return MLSYS_OK;
}
static mlsys_status mlsys__aug_insert(mlsys_contracode_js_ast *a, mlsys_rng *r, int *did) {
  int x, nn = a->nnodes, t;
  for (x = 1; x < nn; x++) {
    if (!mlsys__aug_is_fn(a, x) || (a->nodes[x].flags & MLSYS_CONTRACODE_JS_F_EXPRESSION)) continue;
    for (t = 0; t < 4; t++) {
      char nm[64];
      mlsys_status st;
      mlsys__aug_name(r, nm, sizeof nm);
      st = mlsys_contracode_insert_var(a, x, nm);
      if (st == MLSYS_OK) { *did = 1; break; }
      if (!mlsys__aug_soft(st)) return st;
    }
  }
  return MLSYS_OK;
}
static mlsys_status mlsys__aug_mangle(mlsys_contracode_js_ast *a, mlsys_rng *r, int *did) {
  int k = 0;
  mlsys_status st = mlsys_contracode_mangle(a, &k);
  (void)r;
  if (st == MLSYS_OK) *did = k > 0;
  return mlsys__aug_soft(st) ? MLSYS_OK : st;
}
/* The compress passes of section 3 as augmentation passes (deterministic; the RNG is not used). */
#define MLSYS__AUG_COMPRESS_PASS(NAME)                                                                         \
  static mlsys_status mlsys__aug_##NAME(mlsys_contracode_js_ast *a, mlsys_rng *r, int *did) {                  \
    int k = 0;                                                                                                 \
    mlsys_status st = mlsys_contracode_##NAME(a, &k);                                                          \
    (void)r;                                                                                                   \
    if (st == MLSYS_OK) *did = k > 0;                                                                          \
    return mlsys__aug_soft(st) ? MLSYS_OK : st;                                                                \
  }
MLSYS__AUG_COMPRESS_PASS(fold)
MLSYS__AUG_COMPRESS_PASS(dce)
MLSYS__AUG_COMPRESS_PASS(unused)
MLSYS__AUG_COMPRESS_PASS(seq_cond)
MLSYS__AUG_COMPRESS_PASS(props)
static mlsys_status mlsys__aug_props_keep(mlsys_contracode_js_ast *a, int keep_quoted, int *did) {
  int k = 0;
  mlsys_status st = mlsys_contracode_props_opt(a, keep_quoted, &k);
  if (st == MLSYS_OK) *did = k > 0;
  return mlsys__aug_soft(st) ? MLSYS_OK : st;
}
MLSYS__AUG_COMPRESS_PASS(booleans)
MLSYS__AUG_COMPRESS_PASS(hoist_vars)
MLSYS__AUG_COMPRESS_PASS(arguments)
MLSYS__AUG_COMPRESS_PASS(bool_int)
MLSYS__AUG_COMPRESS_PASS(template_concat)
MLSYS__AUG_COMPRESS_PASS(drop_console)
#undef MLSYS__AUG_COMPRESS_PASS
typedef mlsys_status (*mlsys__aug_fn)(mlsys_contracode_js_ast *a, mlsys_rng *r, int *did);
/* By pass id (the application order). in_block: part of the terser block. */
static const struct {
  const char *name;
  mlsys__aug_fn fn;
  int in_block;
} mlsys__aug_table[MLSYS_CONTRACODE_AUG_NPASSES] = {
    {"rename-param", mlsys__aug_rename, 0},
    {"insert-var", mlsys__aug_insert, 0},
    {"drop-console", mlsys__aug_drop_console, 1},
    {"template-concat", mlsys__aug_template_concat, 1},
    {"fold", mlsys__aug_fold, 1},
    {"dce", mlsys__aug_dce, 1},
    {"unused", mlsys__aug_unused, 1},
    {"hoist-vars", mlsys__aug_hoist_vars, 1},
    {"arguments", mlsys__aug_arguments, 1},
    {"seq-cond", mlsys__aug_seq_cond, 1},
    {"props", mlsys__aug_props, 1},
    {"bool-int", mlsys__aug_bool_int, 1},
    {"booleans", mlsys__aug_booleans, 1},
    {"mangle", mlsys__aug_mangle, 1},
};

MLSYS_DEF int mlsys_contracode_aug_pass_id(const char *name) {
  int i;
  for (i = 0; name && i < MLSYS_CONTRACODE_AUG_NPASSES; i++)
    if (!strcmp(mlsys__aug_table[i].name, name)) return i;
  return -1;
}
MLSYS_DEF const char *mlsys_contracode_aug_pass_name(int id) {
  return id >= 0 && id < MLSYS_CONTRACODE_AUG_NPASSES ? mlsys__aug_table[id].name : NULL;
}
MLSYS_DEF mlsys_status mlsys_contracode_aug_preset(int preset, mlsys_contracode_aug_cfg *c) {
  if (!c) return mlsys_set_error(MLSYS_ERR_ARG, "aug_preset: NULL config");
  if (preset != MLSYS_CONTRACODE_AUG_REPO_EFFECTIVE && preset != MLSYS_CONTRACODE_AUG_SAFE)
    return mlsys_set_error(MLSYS_ERR_ARG, "aug_preset: unknown preset %d", preset);
  memset(c, 0, sizeof *c);
  c->p_pass[MLSYS_CONTRACODE_AUG_RENAME_PARAM] = 0.25;
  c->p_pass[MLSYS_CONTRACODE_AUG_INSERT_VAR] = 0.25;
  c->p_pass[MLSYS_CONTRACODE_AUG_MANGLE] = 1.0;
  /* spec §3.4, the measured (sticky) repo behaviour: compress whenever the block fires, its always-on sub-passes
     with 1, the repo's randomized sub-flags dead_code, hoist_vars, arguments, booleans_as_integers, drop_console
     with .5; template_concat (its safe form) with 1. SAFE leaves out the two that change behaviour. */
  c->p_pass[MLSYS_CONTRACODE_AUG_FOLD] = 1.0;
  c->p_pass[MLSYS_CONTRACODE_AUG_UNUSED] = 1.0;
  c->p_pass[MLSYS_CONTRACODE_AUG_SEQ_COND] = 1.0;
  c->p_pass[MLSYS_CONTRACODE_AUG_PROPS] = 1.0;
  c->p_pass[MLSYS_CONTRACODE_AUG_BOOLEANS] = 1.0;
  c->p_pass[MLSYS_CONTRACODE_AUG_TEMPLATE_CONCAT] = 1.0;
  c->p_pass[MLSYS_CONTRACODE_AUG_DCE] = 0.5;
  c->p_pass[MLSYS_CONTRACODE_AUG_HOIST_VARS] = 0.5;
  c->p_pass[MLSYS_CONTRACODE_AUG_ARGUMENTS] = 0.5;
  c->p_pass[MLSYS_CONTRACODE_AUG_BOOL_INT] = preset == MLSYS_CONTRACODE_AUG_SAFE ? 0.0 : 0.5;
  c->p_pass[MLSYS_CONTRACODE_AUG_DROP_CONSOLE] = preset == MLSYS_CONTRACODE_AUG_SAFE ? 0.0 : 0.5;
  c->p_block = 0.5;
  c->p_beautify = 0.75;
  c->p_indent4 = 0.5;
  c->p_terse = 0.5;
  c->p_braces = 0.5;
  c->p_quote_keys = 0.5;
  c->p_keep_quoted = 0.5;
  c->p_quote_style[0] = 0.5, c->p_quote_style[1] = 0.25, c->p_quote_style[2] = 0.125, c->p_quote_style[3] = 0.125;
  c->p_lines = preset == MLSYS_CONTRACODE_AUG_SAFE ? 0.0 : 0.25;
  c->p_keep_line = 0.9;
  c->flags = MLSYS_CONTRACODE_JS_SCRIPT;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_contracode_sample_lines(const char *src, size_t n, double p, double p_keep, mlsys_rng *r,
                                                     char **out, size_t *outn, int *applied) {
  size_t i, nl = 1, o = 0, ls = 0;
  size_t li = 0;
  char *b;
  int draw;
  if (applied) *applied = 0;
  if (!out || !outn || !r || (!src && n)) return mlsys_set_error(MLSYS_ERR_ARG, "sample_lines: NULL argument");
  *out = NULL;
  *outn = 0;
  if (!(p >= 0 && p <= 1) || !(p_keep >= 0 && p_keep <= 1))
    return mlsys_set_error(MLSYS_ERR_ARG, "sample_lines: probabilities must be in [0, 1] (p %g, p_keep %g)", p, p_keep);
  for (i = 0; i < n; i++) nl += src[i] == '\r' || src[i] == '\n';
  if (!(b = (char *)malloc(n + 1))) return mlsys_set_error(MLSYS_ERR_NOMEM, "sample_lines: out of memory");
  draw = mlsys_rng_uniform(r) < p;
  if (nl < 5 || !draw) {
    if (n) memcpy(b, src, n);
    b[n] = 0;
    *out = b;
    *outn = n;
    return MLSYS_OK;
  }
  for (i = 0; i <= n; i++) {
    if (i < n && src[i] != '\r' && src[i] != '\n') continue;
    /* line li is src[ls, i) */
    if (li == 0 || li == nl - 1 || mlsys_rng_uniform(r) < p_keep) {
      if (o) b[o++] = '\n';
      memcpy(b + o, src + ls, i - ls);
      o += i - ls;
    }
    ls = i + 1;
    li++;
  }
  b[o] = 0;
  *out = b;
  *outn = o;
  if (applied) *applied = 1;
  return MLSYS_OK;
}

static mlsys_status mlsys__aug_clone(const mlsys_contracode_js_ast *a, mlsys_contracode_js_ast *c) {
  memset(c, 0, sizeof *c);
  c->text = (char *)malloc(a->text_len + 1);
  c->nodes = (mlsys_contracode_js_node *)malloc((size_t)a->nnodes * sizeof *c->nodes);
  if (!c->text || !c->nodes) {
    free(c->text);
    free(c->nodes);
    memset(c, 0, sizeof *c);
    return mlsys_set_error(MLSYS_ERR_NOMEM, "augment: out of memory");
  }
  memcpy(c->text, a->text, a->text_len + 1);
  memcpy(c->nodes, a->nodes, (size_t)a->nnodes * sizeof *c->nodes);
  c->src_len = a->src_len;
  c->text_len = a->text_len;
  c->text_cap = a->text_len + 1;
  c->nnodes = c->cap = a->nnodes;
  c->root = a->root;
  c->module = a->module;
  return MLSYS_OK;
}
static mlsys_status mlsys__aug_check_cfg(const mlsys_contracode_aug_cfg *c) {
  static const char *const qn[9] = {"p_block", "p_beautify", "p_indent4", "p_terse", "p_lines", "p_keep_line",
                                    "p_braces", "p_quote_keys", "p_keep_quoted"};
  double q[9], sum = 0;
  int i;
  if (!c) return mlsys_set_error(MLSYS_ERR_ARG, "augment: NULL config");
  for (i = 0; i < MLSYS_CONTRACODE_AUG_MAX_PASSES; i++)
    if (!(c->p_pass[i] >= 0 && c->p_pass[i] <= 1))
      return mlsys_set_error(MLSYS_ERR_ARG, "augment: p_pass[%d] = %g is not a probability", i, c->p_pass[i]);
  q[0] = c->p_block, q[1] = c->p_beautify, q[2] = c->p_indent4, q[3] = c->p_terse, q[4] = c->p_lines;
  q[5] = c->p_keep_line, q[6] = c->p_braces, q[7] = c->p_quote_keys, q[8] = c->p_keep_quoted;
  for (i = 0; i < 9; i++)
    if (!(q[i] >= 0 && q[i] <= 1)) return mlsys_set_error(MLSYS_ERR_ARG, "augment: %s = %g is not a probability", qn[i], q[i]);
  for (i = 0; i < 4; i++) {
    if (!(c->p_quote_style[i] >= 0 && c->p_quote_style[i] <= 1))
      return mlsys_set_error(MLSYS_ERR_ARG, "augment: p_quote_style[%d] = %g is not a probability", i, c->p_quote_style[i]);
    sum += c->p_quote_style[i];
  }
  if (sum > 1 + 1e-9) return mlsys_set_error(MLSYS_ERR_ARG, "augment: p_quote_style sums to %g, more than 1", sum);
  if (c->flags & ~MLSYS_CONTRACODE_JS_MODULE) return mlsys_set_error(MLSYS_ERR_ARG, "augment: flags must be SCRIPT or MODULE, got %d", c->flags);
  return MLSYS_OK;
}
/* Alg. 1 on a parsed tree (consumed: the passes rewrite it). */
static mlsys_status mlsys__aug_run(mlsys_contracode_js_ast *a, const mlsys_contracode_aug_cfg *c, mlsys_rng *r,
                                   char **out, size_t *outn, uint32_t *applied) {
  mlsys_contracode_js_print_opts po;
  mlsys_status st;
  uint32_t bits = 0;
  int i, block = mlsys_rng_uniform(r) < c->p_block, lines = 0, keep_quoted = 0;
  double u;
  char *txt;
  size_t tn;
  for (i = 0; i < MLSYS_CONTRACODE_AUG_NPASSES; i++) {
    int did = 0, on;
    /* keep_quoted_props is an output option of terser, but here it is the props pass that strips quotes */
    if (i == MLSYS_CONTRACODE_AUG_PROPS) keep_quoted = mlsys_rng_uniform(r) < c->p_keep_quoted;
    on = mlsys_rng_uniform(r) < c->p_pass[i];   /* always drawn: the stream does not depend on p */
    if (!on || (mlsys__aug_table[i].in_block && !block)) continue;
    if (i == MLSYS_CONTRACODE_AUG_PROPS) st = mlsys__aug_props_keep(a, keep_quoted, &did);
    else st = mlsys__aug_table[i].fn(a, r, &did);
    if (st != MLSYS_OK) return st;
    if (did) bits |= 1u << i;
  }
  memset(&po, 0, sizeof po);
  po.indent = mlsys_rng_uniform(r) < c->p_indent4 ? 4 : 2;
  if (mlsys_rng_uniform(r) < c->p_beautify) po.beautify = 1, bits |= MLSYS_CONTRACODE_AUG_APPLIED_BEAUTIFY;
  else if (mlsys_rng_uniform(r) < c->p_terse) po.beautify = MLSYS_CONTRACODE_JS_TERSE, bits |= MLSYS_CONTRACODE_AUG_APPLIED_TERSE;
  po.braces = mlsys_rng_uniform(r) < c->p_braces;
  po.quote_keys = mlsys_rng_uniform(r) < c->p_quote_keys;
  u = mlsys_rng_uniform(r);   /* terser's quote_style 0..3, then the rest: the source's quotes */
  if (u < c->p_quote_style[0]) po.quote_style = MLSYS_CONTRACODE_JS_QUOTE_FEWER;
  else if (u < c->p_quote_style[0] + c->p_quote_style[1]) po.quote_style = MLSYS_CONTRACODE_JS_QUOTE_SINGLE;
  else if (u < c->p_quote_style[0] + c->p_quote_style[1] + c->p_quote_style[2]) po.quote_style = MLSYS_CONTRACODE_JS_QUOTE_DOUBLE;
  else po.quote_style = MLSYS_CONTRACODE_JS_QUOTE_ORIGINAL;
  if ((st = mlsys_contracode_js_print(a, &po, &txt, &tn)) != MLSYS_OK) return st;
  if (c->p_lines > 0) {
    st = mlsys_contracode_sample_lines(txt, tn, c->p_lines, c->p_keep_line, r, out, outn, &lines);
    free(txt);
    if (st != MLSYS_OK) return st;
    if (lines) bits |= MLSYS_CONTRACODE_AUG_APPLIED_LINES;
  } else {
    *out = txt;
    *outn = tn;
  }
  if (applied) *applied = bits;
  return MLSYS_OK;
}
MLSYS_DEF mlsys_status mlsys_contracode_augment(const char *src, size_t n, const mlsys_contracode_aug_cfg *cfg,
                                                mlsys_rng *r, char **out, size_t *outn, uint32_t *applied) {
  mlsys_contracode_js_ast a;
  mlsys_status st;
  if (applied) *applied = 0;
  if (!out || !outn || !r || (!src && n)) return mlsys_set_error(MLSYS_ERR_ARG, "augment: NULL argument");
  *out = NULL;
  *outn = 0;
  if ((st = mlsys__aug_check_cfg(cfg)) != MLSYS_OK) return st;
  if ((st = mlsys_contracode_js_parse(src ? src : "", n, cfg->flags & MLSYS_CONTRACODE_JS_MODULE, &a)) != MLSYS_OK)
    return st;
  st = mlsys__aug_run(&a, cfg, r, out, outn, applied);
  mlsys_contracode_js_free(&a);
  return st;
}

static uint64_t mlsys__aug_fnv(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  size_t i;
  for (i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
  return h;
}
MLSYS_DEF void mlsys_contracode_strset_free(mlsys_contracode_strset *s) {
  int i;
  if (!s) return;
  for (i = 0; i < s->n; i++) free(s->s[i]);
  free(s->s);
  free(s->len);
  free(s->applied);
  memset(s, 0, sizeof *s);
}
MLSYS_DEF mlsys_status mlsys_contracode_augment_variants(const char *src, size_t n,
                                                         const mlsys_contracode_aug_cfg *cfg, int nsamples,
                                                         uint64_t seed, mlsys_contracode_strset *out) {
  mlsys_contracode_js_ast a;
  mlsys_status st;
  uint64_t h0, *hs = NULL;
  int *slot = NULL, i;
  size_t cap = 16;
  if (!out || (!src && n)) return mlsys_set_error(MLSYS_ERR_ARG, "augment_variants: NULL argument");
  memset(out, 0, sizeof *out);
  if (nsamples < 0 || nsamples > 1000000)
    return mlsys_set_error(MLSYS_ERR_ARG, "augment_variants: nsamples must be 0..1000000, got %d", nsamples);
  if ((st = mlsys__aug_check_cfg(cfg)) != MLSYS_OK) return st;
  if (!src) src = "";
  if ((st = mlsys_contracode_js_parse(src, n, cfg->flags & MLSYS_CONTRACODE_JS_MODULE, &a)) != MLSYS_OK) return st;
  while (cap < 2 * ((size_t)nsamples + 1)) cap *= 2;
  out->s = (char **)malloc(((size_t)nsamples + 1) * sizeof(char *));
  out->len = (size_t *)malloc(((size_t)nsamples + 1) * sizeof(size_t));
  out->applied = (uint32_t *)malloc(((size_t)nsamples + 1) * sizeof(uint32_t));
  hs = (uint64_t *)malloc(cap * sizeof *hs);
  slot = (int *)malloc(cap * sizeof *slot);
  if (!out->s || !out->len || !out->applied || !hs || !slot || !(out->s[0] = (char *)malloc(n + 1))) {
    st = mlsys_set_error(MLSYS_ERR_NOMEM, "augment_variants: out of memory");
    goto done;
  }
  for (i = 0; i < (int)cap; i++) slot[i] = -1;
  if (n) memcpy(out->s[0], src, n);
  out->s[0][n] = 0;
  out->len[0] = n;
  out->applied[0] = 0;
  out->n = 1;
  h0 = mlsys__aug_fnv(src, n);
  slot[h0 & (cap - 1)] = 0, hs[h0 & (cap - 1)] = h0;
  for (i = 1; i <= nsamples; i++) {
    mlsys_contracode_js_ast c;
    mlsys_rng r;
    char *v;
    size_t vn, k;
    uint32_t bits;
    uint64_t h;
    mlsys_rng_seed(&r, seed ^ h0 ^ (uint64_t)i);
    if ((st = mlsys__aug_clone(&a, &c)) != MLSYS_OK) goto done;
    st = mlsys__aug_run(&c, cfg, &r, &v, &vn, &bits);
    mlsys_contracode_js_free(&c);
    if (st != MLSYS_OK) goto done;
    h = mlsys__aug_fnv(v, vn);
    for (k = h & (cap - 1); slot[k] >= 0; k = (k + 1) & (cap - 1))
      if (hs[k] == h && out->len[slot[k]] == vn && !memcmp(out->s[slot[k]], v, vn)) break;
    if (slot[k] >= 0) {
      free(v);
      continue;
    }
    slot[k] = out->n, hs[k] = h;
    out->s[out->n] = v;
    out->len[out->n] = vn;
    out->applied[out->n++] = bits;
  }
done:
  free(hs);
  free(slot);
  mlsys_contracode_js_free(&a);
  if (st != MLSYS_OK) mlsys_contracode_strset_free(out);
  return st;
}

MLSYS_DEF mlsys_status mlsys_contracode_fn_unit(const char *src, size_t n, const mlsys_contracode_fn_span *f,
                                                char **out, size_t *outn) {
  const char *pre = "", *post = "";
  size_t len, pl, ql;
  char *b;
  if (!src || !f || !out || !outn) return mlsys_set_error(MLSYS_ERR_ARG, "fn_unit: NULL argument");
  if (f->start > f->end || f->end > n) return mlsys_set_error(MLSYS_ERR_ARG, "fn_unit: span %u..%u is outside the %zu-byte source", f->start, f->end, n);
  if (f->kind == MLSYS_CONTRACODE_FN_EXPRESSION || f->kind == MLSYS_CONTRACODE_FN_ARROW) pre = "const x = ", post = ";";
  else if (f->kind == MLSYS_CONTRACODE_FN_METHOD) pre = "class x{", post = "}";
  else if (f->kind != MLSYS_CONTRACODE_FN_DECLARATION) return mlsys_set_error(MLSYS_ERR_ARG, "fn_unit: unknown function kind %d", f->kind);
  len = f->end - f->start, pl = strlen(pre), ql = strlen(post);
  if (!(b = (char *)malloc(pl + len + ql + 1))) return mlsys_set_error(MLSYS_ERR_NOMEM, "fn_unit: out of memory");
  memcpy(b, pre, pl);
  memcpy(b + pl, src + f->start, len);
  memcpy(b + pl + len, post, ql + 1);
  *out = b;
  *outn = pl + len + ql;
  return MLSYS_OK;
}

/* [end of section 4 implementation] */

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

/* Room for twice as many pieces (at least 1024) in the four parallel arrays of both loaders. A failed step leaves
   the arrays that did grow in place (still owned by m), so the caller's cleanup frees them all. */
static mlsys_status mlsys__cc_sp_grow(mlsys_contracode_sp *m, int *cap) {
  int nc = *cap ? 2 * *cap : 1024;
  char **np = (char **)mlsys_realloc_array(m->piece, (size_t)nc, sizeof *np);
  size_t *nl;
  float *ns;
  uint8_t *nt;
  if (!np) return MLSYS_ERR_NOMEM;
  m->piece = np;
  if (!(nl = (size_t *)mlsys_realloc_array(m->plen, (size_t)nc, sizeof *nl))) return MLSYS_ERR_NOMEM;
  m->plen = nl;
  if (!(ns = (float *)mlsys_realloc_array(m->score, (size_t)nc, sizeof *ns))) return MLSYS_ERR_NOMEM;
  m->score = ns;
  if (!(nt = (uint8_t *)mlsys_realloc_array(m->type, (size_t)nc, 1))) return MLSYS_ERR_NOMEM;
  m->type = nt;
  *cap = nc;
  return MLSYS_OK;
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
      if (m->n == cap && (st = mlsys__cc_sp_grow(m, &cap)) != MLSYS_OK) goto fail;
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
    if (m->n == cap && (st = mlsys__cc_sp_grow(m, &cap)) != MLSYS_OK) goto fail;
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

/* ================================================================================================================
   6. Encoders and MoCo (implementation)
   ================================================================================================================ */
/* An encoder body maps ids to the pooled representation (B × pooled_dim); the head and the flat parameter array are
   the API's (6a). Each body keeps its own activations in *state between a train forward and its backward. */
typedef struct {
  size_t (*nparams)(const mlsys_contracode_enc_cfg *c);                      /* body parameters */
  void (*init)(const mlsys_contracode_enc_cfg *c, float *p, mlsys_rng *r);   /* PyTorch's default init, seeded */
  mlsys_status (*forward)(const mlsys_contracode_enc_cfg *c, const float *p, void **state, mlsys_pool *pool,
                          const int32_t *ids, const int *lens, int B, int T, int train, mlsys_rng *rng, float *pooled);
  /* gradients ADDED to g (same layout as p) from dpooled (B × pooled_dim) of the last train forward */
  mlsys_status (*backward)(const mlsys_contracode_enc_cfg *c, const float *p, float *g, void *state, mlsys_pool *pool,
                           const float *dpooled);
  void (*free_state)(void *state);
} mlsys__enc_body;

/* [6a: encoder API, projection head, BOW body] */
static const mlsys__enc_body *mlsys__enc_body_of(int type);

/* The head's layout after the body: W1 (d_model × P), b1, W2 (d_rep × d_model), b2 (PyTorch nn.Linear order). */
static size_t mlsys__enc_head_nparams(const mlsys_contracode_enc_cfg *c, int P) {
  return (size_t)c->d_model * (size_t)P + (size_t)c->d_model + (size_t)c->d_rep * (size_t)c->d_model + (size_t)c->d_rep;
}

/* NULL when cfg is usable, else what is wrong (for the error message). */
static const char *mlsys__enc_cfg_problem(const mlsys_contracode_enc_cfg *c) {
  if (!c) return "NULL cfg";
  if (c->type < MLSYS_CONTRACODE_ENC_TRANSFORMER || c->type > MLSYS_CONTRACODE_ENC_BOW) return "unknown encoder type";
  if (c->vocab < 1 || c->d_model < 1 || c->d_rep < 1 || c->max_len < 1) return "vocab, d_model, d_rep and max_len must be >= 1";
  /* bounds that keep every size computation far from overflow (the paper's largest model is well inside) */
  if (c->vocab > (1 << 24) || c->d_model > 65536 || c->d_rep > 65536 || c->max_len > (1 << 20) || c->n_layers > 1024 ||
      c->d_ff > (1 << 20) || c->n_heads > 65536)
    return "a size is above its limit (vocab 2^24, d_model/d_rep/n_heads 65536, max_len/d_ff 2^20, n_layers 1024)";
  if (c->pad_id < 0 || c->pad_id >= c->vocab) return "pad_id is not in [0, vocab)";
  if (c->pool < MLSYS_CONTRACODE_POOL_MEAN_NONPAD || c->pool > MLSYS_CONTRACODE_POOL_LSTM_HIDDEN) return "unknown pool";
  if (c->pool == MLSYS_CONTRACODE_POOL_LSTM_HIDDEN && c->type != MLSYS_CONTRACODE_ENC_BILSTM) return "LSTM_HIDDEN pooling needs the BiLSTM";
  if (!(c->dropout >= 0 && c->dropout < 1)) return "dropout must be in [0, 1)";
  if (c->type != MLSYS_CONTRACODE_ENC_BOW && c->n_layers < 1) return "n_layers must be >= 1";
  if (c->type == MLSYS_CONTRACODE_ENC_TRANSFORMER && (c->n_heads < 1 || c->d_model % c->n_heads || c->d_ff < 1))
    return "n_heads must divide d_model and d_ff must be >= 1";
  return NULL;
}

MLSYS_DEF mlsys_status mlsys_contracode_enc_preset(const char *name, int vocab, mlsys_contracode_enc_cfg *c) {
  if (!name || !c) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: enc_preset: NULL argument");
  if (vocab < 1) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: enc_preset: vocab %d < 1", vocab);
  memset(c, 0, sizeof *c);
  c->vocab = vocab;
  c->d_rep = 128;
  c->max_len = 1024;
  c->pad_id = 0;
  c->pool = MLSYS_CONTRACODE_POOL_MEAN_NONPAD;
  c->dropout = 0.1f;
  if (!strcmp(name, "transformer") || !strcmp(name, "tiny-transformer")) {
    int tiny = name[0] == 't' && name[1] == 'i';
    c->type = MLSYS_CONTRACODE_ENC_TRANSFORMER;
    c->d_model = tiny ? 128 : 512, c->n_layers = tiny ? 2 : 6, c->n_heads = tiny ? 4 : 8, c->d_ff = tiny ? 512 : 2048;
    if (tiny) c->d_rep = 64;
  } else if (!strcmp(name, "bilstm") || !strcmp(name, "tiny-bilstm")) {
    int tiny = name[0] == 't';
    c->type = MLSYS_CONTRACODE_ENC_BILSTM;
    c->d_model = tiny ? 128 : 512, c->n_layers = 2;
    c->pool = MLSYS_CONTRACODE_POOL_LSTM_HIDDEN;
    if (tiny) c->d_rep = 64;
  } else if (!strcmp(name, "bow")) {
    c->type = MLSYS_CONTRACODE_ENC_BOW;
    c->d_model = 128, c->d_rep = 64;
  } else {
    return mlsys_set_error(MLSYS_ERR_ARG,
                           "contracode: unknown encoder preset '%s' (transformer, bilstm, tiny-transformer, tiny-bilstm, bow)", name);
  }
  return MLSYS_OK;
}

MLSYS_DEF int mlsys_contracode_enc_pooled_dim(const mlsys_contracode_enc_cfg *c) {
  if (mlsys__enc_cfg_problem(c)) return 0;
  if (c->type == MLSYS_CONTRACODE_ENC_BILSTM)
    return c->pool == MLSYS_CONTRACODE_POOL_LSTM_HIDDEN ? 2 * c->n_layers * c->d_model : 2 * c->d_model;
  return c->d_model;
}

/* Body counts in closed form (§3.6), so sizes are known whether or not a body is built in. */
static size_t mlsys__enc_body_nparams_closed(const mlsys_contracode_enc_cfg *c) {
  size_t V = (size_t)c->vocab, d = (size_t)c->d_model, L = (size_t)c->n_layers, n = V * d, l;
  if (c->type == MLSYS_CONTRACODE_ENC_TRANSFORMER) {
    size_t ff = (size_t)c->d_ff;
    /* in-proj 3d×d + 3d, out-proj d×d + d, W1 ff×d + ff, W2 d×ff + d, two LayerNorms; then a final LayerNorm */
    n += L * (3 * d * d + 3 * d + d * d + d + ff * d + ff + d * ff + d + 4 * d) + 2 * d;
  } else if (c->type == MLSYS_CONTRACODE_ENC_BILSTM) {
    for (l = 0; l < L; l++) { /* per direction: W_ih 4h×in, W_hh 4h×h, b_ih, b_hh */
      size_t in = l ? 2 * d : d;
      n += 2 * (4 * d * in + 4 * d * d + 8 * d);
    }
  }
  return n;
}

MLSYS_DEF size_t mlsys_contracode_enc_nparams(const mlsys_contracode_enc_cfg *c, int with_head) {
  if (mlsys__enc_cfg_problem(c)) return 0;
  return mlsys__enc_body_nparams_closed(c) + (with_head ? mlsys__enc_head_nparams(c, mlsys_contracode_enc_pooled_dim(c)) : 0);
}

typedef struct {
  void *body;                /* the body's activations */
  float *pooled, *h1;        /* B×P; B×d_model after the ReLU */
  int B, project, valid;     /* valid: a train forward whose backward has not run yet */
} mlsys__enc_state;

static void mlsys__enc_uniform(float *p, size_t n, double bound, mlsys_rng *r) {
  size_t i;
  for (i = 0; i < n; i++) p[i] = (float)((2 * mlsys_rng_uniform(r) - 1) * bound);
}

MLSYS_DEF mlsys_status mlsys_contracode_enc_init(mlsys_contracode_enc *e, const mlsys_contracode_enc_cfg *cfg, uint64_t seed,
                                                 mlsys_pool *pool) {
  const char *why;
  const mlsys__enc_body *body;
  size_t nb, P;
  float *h;
  mlsys_rng r;
  if (!e) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: enc_init: NULL encoder");
  memset(e, 0, sizeof *e);
  if ((why = mlsys__enc_cfg_problem(cfg))) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: enc_init: %s", why);
  if (!(body = mlsys__enc_body_of(cfg->type)))
    return mlsys_set_error(MLSYS_ERR_UNSUPPORTED, "contracode: encoder type %s is not built",
                           cfg->type == MLSYS_CONTRACODE_ENC_TRANSFORMER ? "transformer" : "bilstm");
  e->cfg = *cfg;
  e->pool = pool;
  nb = body->nparams(cfg);
  /* the closed form (what enc_nparams reports without building anything) and the body must agree */
  if (nb != mlsys__enc_body_nparams_closed(cfg))
    return mlsys_set_error(MLSYS_ERR_ARG, "contracode: enc_init: the body has %zu parameters, the closed form %zu", nb,
                           mlsys__enc_body_nparams_closed(cfg));
  P = (size_t)mlsys_contracode_enc_pooled_dim(cfg);
  e->nparams = nb + mlsys__enc_head_nparams(cfg, (int)P);
  e->params = (float *)mlsys_calloc(e->nparams, sizeof(float));
  e->grads = (float *)mlsys_calloc(e->nparams, sizeof(float));
  e->state_ = mlsys_calloc(1, sizeof(mlsys__enc_state));
  if (!e->params || !e->grads || !e->state_) {
    mlsys_contracode_enc_free(e);
    return mlsys_set_error(MLSYS_ERR_NOMEM, "contracode: enc_init: out of memory for %zu parameters", e->nparams);
  }
  mlsys_rng_seed(&r, seed);
  body->init(cfg, e->params, &r);
  h = e->params + nb; /* nn.Linear's default: weights and biases U(±1/√fan_in) */
  mlsys__enc_uniform(h, (size_t)cfg->d_model * P + (size_t)cfg->d_model, 1 / sqrt((double)P), &r);
  h += (size_t)cfg->d_model * P + (size_t)cfg->d_model;
  mlsys__enc_uniform(h, (size_t)cfg->d_rep * (size_t)cfg->d_model + (size_t)cfg->d_rep, 1 / sqrt((double)cfg->d_model), &r);
  return MLSYS_OK;
}

MLSYS_DEF void mlsys_contracode_enc_free(mlsys_contracode_enc *e) {
  mlsys__enc_state *s;
  if (!e) return;
  s = (mlsys__enc_state *)e->state_;
  if (s) {
    const mlsys__enc_body *body = mlsys__enc_body_of(e->cfg.type);
    if (body && s->body) body->free_state(s->body);
    free(s->pooled);
    free(s->h1);
    free(s);
  }
  free(e->params);
  free(e->grads);
  memset(e, 0, sizeof *e);
}

MLSYS_DEF void mlsys_contracode_enc_zero_grad(mlsys_contracode_enc *e) {
  if (e && e->grads) memset(e->grads, 0, e->nparams * sizeof(float));
}

/* ids in [0, vocab), lens in 1..T, T ≤ max_len. */
static mlsys_status mlsys__enc_check_input(const mlsys_contracode_enc_cfg *c, const char *fn, const int32_t *ids, const int *lens,
                                           int B, int T) {
  int b, t;
  if (B < 1 || T < 1) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: %s: batch %d x %d is empty", fn, B, T);
  if (T > c->max_len) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: %s: T = %d exceeds max_len %d", fn, T, c->max_len);
  for (b = 0; b < B; b++) {
    if (lens[b] < 1 || lens[b] > T)
      return mlsys_set_error(MLSYS_ERR_ARG, "contracode: %s: lens[%d] = %d is not in 1..%d", fn, b, lens[b], T);
    for (t = 0; t < T; t++) {
      int32_t x = ids[(size_t)b * T + t];
      if (x < 0 || x >= c->vocab)
        return mlsys_set_error(MLSYS_ERR_ARG, "contracode: %s: ids[%d][%d] = %d is not in [0, %d)", fn, b, t, (int)x, c->vocab);
    }
  }
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_contracode_enc_forward(mlsys_contracode_enc *e, const int32_t *ids, const int *lens, int B, int T,
                                                    int project, int train, mlsys_rng *rng, float *out) {
  const mlsys__enc_body *body;
  mlsys__enc_state *s;
  mlsys_status st;
  int P, D;
  size_t nb;
  float *pooled, *h1, *w;
  if (!e || !e->params || !e->state_) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: enc_forward: uninitialized encoder");
  if (!ids || !lens || !out || (train && !rng)) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: enc_forward: NULL argument");
  if ((st = mlsys__enc_check_input(&e->cfg, "enc_forward", ids, lens, B, T)) != MLSYS_OK) return st;
  body = mlsys__enc_body_of(e->cfg.type);
  s = (mlsys__enc_state *)e->state_;
  P = mlsys_contracode_enc_pooled_dim(&e->cfg);
  D = e->cfg.d_model;
  nb = body->nparams(&e->cfg);
  s->valid = 0;
  free(s->pooled);
  free(s->h1);
  s->pooled = (float *)malloc((size_t)B * P * sizeof(float));
  s->h1 = (float *)malloc((size_t)B * D * sizeof(float));
  if (!s->pooled || !s->h1) return mlsys_set_error(MLSYS_ERR_NOMEM, "contracode: enc_forward: out of memory");
  pooled = s->pooled, h1 = s->h1;
  st = body->forward(&e->cfg, e->params, &s->body, e->pool, ids, lens, B, T, train, rng, pooled);
  if (st != MLSYS_OK) return st;
  if (project) {
    size_t i;
    w = e->params + nb;
    mlsys_dense_matmul(e->pool, h1, pooled, w, w + (size_t)D * P, B, P, D);
    for (i = 0; i < (size_t)B * D; i++) h1[i] = h1[i] > 0 ? h1[i] : 0;
    w += (size_t)D * P + D;
    mlsys_dense_matmul(e->pool, out, h1, w, w + (size_t)e->cfg.d_rep * D, B, D, e->cfg.d_rep);
  } else {
    memcpy(out, pooled, (size_t)B * P * sizeof(float));
  }
  s->B = B, s->project = project, s->valid = train;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_contracode_enc_backward(mlsys_contracode_enc *e, const float *dout) {
  const mlsys__enc_body *body;
  mlsys__enc_state *s;
  mlsys_status st;
  float *dpooled;
  int P, D, B;
  size_t nb;
  if (!e || !e->state_ || !dout) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: enc_backward: NULL argument");
  s = (mlsys__enc_state *)e->state_;
  if (!s->valid) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: enc_backward: no train forward to go back through");
  body = mlsys__enc_body_of(e->cfg.type);
  P = mlsys_contracode_enc_pooled_dim(&e->cfg), D = e->cfg.d_model, B = s->B;
  nb = body->nparams(&e->cfg);
  dpooled = (float *)malloc((size_t)B * P * sizeof(float));
  if (!dpooled) return mlsys_set_error(MLSYS_ERR_NOMEM, "contracode: enc_backward: out of memory");
  if (s->project) {
    const float *w1 = e->params + nb, *w2 = w1 + (size_t)D * P + D;
    float *g1 = e->grads + nb, *g2 = g1 + (size_t)D * P + D;
    float *dh = (float *)malloc((size_t)B * D * sizeof(float));
    size_t i;
    if (!dh) {
      free(dpooled);
      return mlsys_set_error(MLSYS_ERR_NOMEM, "contracode: enc_backward: out of memory");
    }
    mlsys_dense_matmul_backward(e->pool, dh, g2, g2 + (size_t)e->cfg.d_rep * D, dout, s->h1, w2, B, D, e->cfg.d_rep);
    for (i = 0; i < (size_t)B * D; i++) if (s->h1[i] <= 0) dh[i] = 0; /* h1 is post-ReLU: 0 exactly where it was cut */
    mlsys_dense_matmul_backward(e->pool, dpooled, g1, g1 + (size_t)D * P, dh, s->pooled, w1, B, P, D);
    free(dh);
  } else {
    memcpy(dpooled, dout, (size_t)B * P * sizeof(float));
  }
  st = body->backward(&e->cfg, e->params, e->grads, s->body, e->pool, dpooled);
  free(dpooled);
  s->valid = 0;
  return st;
}

/* The bag-of-words body: mean of (dropped-out) embedding rows. No position information, so it is a baseline and a
   fast body for CI-sized MoCo runs. */
typedef struct {
  int32_t *ids;
  int *lens, B, T;
  float *mask;   /* B×T×d dropout multipliers (0 or 1/(1−p)); NULL without dropout */
} mlsys__enc_bow_state;

static size_t mlsys__enc_bow_nparams(const mlsys_contracode_enc_cfg *c) { return (size_t)c->vocab * (size_t)c->d_model; }
static void mlsys__enc_bow_init(const mlsys_contracode_enc_cfg *c, float *p, mlsys_rng *r) {
  size_t i, n = mlsys__enc_bow_nparams(c);
  for (i = 0; i < n; i++) p[i] = (float)mlsys_rng_normal(r);
}
static void mlsys__enc_bow_free_state(void *state) {
  mlsys__enc_bow_state *s = (mlsys__enc_bow_state *)state;
  if (!s) return;
  free(s->ids);
  free(s->lens);
  free(s->mask);
  free(s);
}
static int mlsys__enc_bow_count(const mlsys_contracode_enc_cfg *c, int len, int T) {
  return c->pool == MLSYS_CONTRACODE_POOL_MEAN_ALL ? T : len;
}
static mlsys_status mlsys__enc_bow_forward(const mlsys_contracode_enc_cfg *c, const float *p, void **state, mlsys_pool *pool,
                                           const int32_t *ids, const int *lens, int B, int T, int train, mlsys_rng *rng,
                                           float *pooled) {
  mlsys__enc_bow_state *s = (mlsys__enc_bow_state *)*state;
  int b, t, j, d = c->d_model, drop = train && c->dropout > 0;
  float keep = 1.0f / (1.0f - c->dropout);
  (void)pool;
  if (!s) {
    if (!(s = (mlsys__enc_bow_state *)mlsys_calloc(1, sizeof *s))) return mlsys_set_error(MLSYS_ERR_NOMEM, "contracode: bow: out of memory");
    *state = s;
  }
  free(s->ids), free(s->lens), free(s->mask);
  s->ids = NULL, s->lens = NULL, s->mask = NULL;
  if (train) {
    s->ids = (int32_t *)malloc((size_t)B * T * sizeof(int32_t));
    s->lens = (int *)malloc((size_t)B * sizeof(int));
    if (drop) s->mask = (float *)malloc((size_t)B * T * d * sizeof(float));
    if (!s->ids || !s->lens || (drop && !s->mask)) return mlsys_set_error(MLSYS_ERR_NOMEM, "contracode: bow: out of memory");
    memcpy(s->ids, ids, (size_t)B * T * sizeof(int32_t));
    memcpy(s->lens, lens, (size_t)B * sizeof(int));
    s->B = B, s->T = T;
  }
  for (b = 0; b < B; b++) {
    int n = mlsys__enc_bow_count(c, lens[b], T);
    float *o = pooled + (size_t)b * d;
    for (j = 0; j < d; j++) o[j] = 0;
    for (t = 0; t < n; t++) {
      const float *row = p + (size_t)ids[(size_t)b * T + t] * d;
      if (drop) {
        float *mk = s->mask + ((size_t)b * T + t) * d;
        for (j = 0; j < d; j++) {
          mk[j] = mlsys_rng_uniform(rng) < c->dropout ? 0.0f : keep;
          o[j] += row[j] * mk[j];
        }
      } else {
        for (j = 0; j < d; j++) o[j] += row[j];
      }
    }
    for (j = 0; j < d; j++) o[j] /= (float)n;
  }
  return MLSYS_OK;
}
static mlsys_status mlsys__enc_bow_backward(const mlsys_contracode_enc_cfg *c, const float *p, float *g, void *state,
                                            mlsys_pool *pool, const float *dpooled) {
  mlsys__enc_bow_state *s = (mlsys__enc_bow_state *)state;
  int b, t, j, d = c->d_model;
  (void)p, (void)pool;
  if (!s || !s->ids) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: bow: no train forward to go back through");
  for (b = 0; b < s->B; b++) {
    int n = mlsys__enc_bow_count(c, s->lens[b], s->T);
    const float *dp = dpooled + (size_t)b * d;
    for (t = 0; t < n; t++) {
      float *gr = g + (size_t)s->ids[(size_t)b * s->T + t] * d;
      const float *mk = s->mask ? s->mask + ((size_t)b * s->T + t) * d : NULL;
      for (j = 0; j < d; j++) gr[j] += dp[j] / (float)n * (mk ? mk[j] : 1.0f);
    }
  }
  return MLSYS_OK;
}
static const mlsys__enc_body mlsys__enc_bow_body = {mlsys__enc_bow_nparams, mlsys__enc_bow_init, mlsys__enc_bow_forward,
                                                    mlsys__enc_bow_backward, mlsys__enc_bow_free_state};

/* [6b: Transformer and BiLSTM bodies] */

/* Transformer body (§3.6): PyTorch 2020 nn.TransformerEncoder (post-LN, ReLU) under an embedding ·√d plus the PyTorch
   tutorial's sinusoidal PositionalEncoding, then a final LayerNorm and a mean pool. Dropout (inverted, p = cfg->dropout,
   training forwards only) sits where PyTorch has it: after the embedding + PE, on the attention weights (inside
   nn.MultiheadAttention), after the attention block, after the ReLU and after the second linear layer. Its keep/drop
   draws come from rng in one fixed order (embedding; then per layer: attention weights b,h,t,t', attention output,
   ReLU, second linear) and are kept for the backward, so re-seeding rng reproduces a forward bit for bit.
   Parameter layout (d = d_model, F = d_ff, PyTorch's nn.Linear OC×C weights; in_proj rows are q, then k, then v):
     emb V×d;
     per layer: in_proj_w 3d×d, in_proj_b 3d, out_w d×d, out_b d, ln1_w d, ln1_b d, ff1_w F×d, ff1_b F,
                ff2_w d×F, ff2_b d, ln2_w d, ln2_b d;
     final LN w d, b d.
   So 4d² + 2dF + F + 9d per layer: the paper's 23,011,328 and tiny's 1,420,800 at V = 8,000 (§7.4 test 17).
   Every reduction has one order whatever the thread count: the dense kernels' fixed orders, one attention task per
   (sequence, head) that owns its slices, layer norms, dropout draws, pooling and the embedding gradient serial. */
typedef struct {
  int B, T, train, dropped;   /* dropped: masks were drawn (train with p > 0) */
  int pool;                   /* the forward's pool mode and dropout scale, for its backward */
  float kscale;
  int32_t *ids;
  int *lens;
  float *x0;                  /* per layer l (L + 1 of them): the layer's input; x0 + L·N·d is the final LN's input */
  float *qkv, *att, *ao, *r1, *h1, *u, *a, *r2, *m1, *s1, *m2, *s2, *fin, *mf, *sf;
  unsigned char *ke, *ka, *ky, *kf, *kz;   /* keep masks: embedding, attention weights, attention out, ReLU, ff out */
  float *fbuf;
  unsigned char *kbuf;
  size_t fcap, kcap;
} mlsys__enc_tf_state;

static void mlsys__enc_tf_free_state(void *st) {
  mlsys__enc_tf_state *s = (mlsys__enc_tf_state *)st;
  if (!s) return;
  free(s->ids);
  free(s->lens);
  free(s->fbuf);
  free(s->kbuf);
  free(s);
}

static size_t mlsys__enc_tf_nparams(const mlsys_contracode_enc_cfg *c) {
  const size_t d = (size_t)c->d_model, F = (size_t)c->d_ff;
  if (c->vocab < 1 || c->d_model < 1 || c->n_layers < 1 || c->n_heads < 1 || c->d_ff < 1 || c->d_model % c->n_heads) return 0;
  return (size_t)c->vocab * d + (size_t)c->n_layers * (4 * d * d + 2 * d * F + F + 9 * d) + 2 * d;
}

/* Offsets of one layer's tensors in the flat array. */
typedef struct { size_t inw, inb, ow, ob, l1w, l1b, f1w, f1b, f2w, f2b, l2w, l2b; } mlsys__enc_tf_lay;
static mlsys__enc_tf_lay mlsys__enc_tf_layer(const mlsys_contracode_enc_cfg *c, int l) {
  const size_t d = (size_t)c->d_model, F = (size_t)c->d_ff;
  mlsys__enc_tf_lay o;
  o.inw = (size_t)c->vocab * d + (size_t)l * (4 * d * d + 2 * d * F + F + 9 * d);
  o.inb = o.inw + 3 * d * d;
  o.ow = o.inb + 3 * d;
  o.ob = o.ow + d * d;
  o.l1w = o.ob + d;
  o.l1b = o.l1w + d;
  o.f1w = o.l1b + d;
  o.f1b = o.f1w + F * d;
  o.f2w = o.f1b + F;
  o.f2b = o.f2w + d * F;
  o.l2w = o.f2b + d;
  o.l2b = o.l2w + d;
  return o;
}

static void mlsys__enc_tf_uniform(float *p, size_t n, double bound, mlsys_rng *r) {
  size_t i;
  for (i = 0; i < n; i++) p[i] = (float)((2.0 * mlsys_rng_uniform(r) - 1.0) * bound);
}
static void mlsys__enc_tf_init(const mlsys_contracode_enc_cfg *c, float *p, mlsys_rng *r) {
  const size_t d = (size_t)c->d_model, F = (size_t)c->d_ff;
  size_t i;
  int l;
  for (i = 0; i < (size_t)c->vocab * d; i++) p[i] = (float)mlsys_rng_normal(r);
  for (l = 0; l < c->n_layers; l++) {
    const mlsys__enc_tf_lay o = mlsys__enc_tf_layer(c, l);
    mlsys__enc_tf_uniform(p + o.inw, 3 * d * d, sqrt(6.0 / (double)(d + 3 * d)), r);   /* xavier_uniform_ on 3d×d */
    memset(p + o.inb, 0, 3 * d * sizeof(float));
    mlsys__enc_tf_uniform(p + o.ow, d * d, 1.0 / sqrt((double)d), r);
    memset(p + o.ob, 0, d * sizeof(float));
    for (i = 0; i < d; i++) { p[o.l1w + i] = 1; p[o.l1b + i] = 0; p[o.l2w + i] = 1; p[o.l2b + i] = 0; }
    mlsys__enc_tf_uniform(p + o.f1w, F * d, 1.0 / sqrt((double)d), r);
    mlsys__enc_tf_uniform(p + o.f1b, F, 1.0 / sqrt((double)d), r);
    mlsys__enc_tf_uniform(p + o.f2w, d * F, 1.0 / sqrt((double)F), r);
    mlsys__enc_tf_uniform(p + o.f2b, d, 1.0 / sqrt((double)F), r);
  }
  {
    float *fw = p + mlsys__enc_tf_nparams(c) - 2 * d;
    for (i = 0; i < d; i++) { fw[i] = 1; fw[d + i] = 0; }
  }
}

/* Bidirectional attention with a key-padding mask, one task per (sequence, head). att keeps the softmax weights
   (before dropout); ka (nullable) the keep mask of the attention-weight dropout, kscale its 1/(1−p). */
typedef struct {
  float *out, *att, *dqkv, *scratch;
  const float *qkv, *dout;
  const unsigned char *ka;
  const int *lens;
  int B, T, C, NH;
  float kscale;
} mlsys__enc_tf_att;
/* Each task first copies its head's rows (q, k, v; strided by 3C in qkv) into contiguous per-worker scratch and
   accumulates dq, dk, dv there before writing them back: the same operations in the same order, in cache. */
/* The attention tasks get mlsys_common.h's AVX2 clones too (no FMA: the same bits as the portable code). */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDACC__) && !defined(MLSYS_NO_CLONES)
#define MLSYS__ENC_TF_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define MLSYS__ENC_TF_CLONES
#endif
static void mlsys__enc_tf_gather(float *dst, const float *qkv, int C, int hs, size_t row0, int n, size_t col) {
  int t;
  for (t = 0; t < n; t++) memcpy(dst + (size_t)t * hs, qkv + (row0 + (size_t)t) * 3 * C + col, (size_t)hs * sizeof(float));
}
MLSYS__ENC_TF_CLONES static void mlsys__enc_tf_att_fwd(void *ctx, long i, int worker) {
  const mlsys__enc_tf_att *a = (const mlsys__enc_tf_att *)ctx;
  const int C = a->C, NH = a->NH, T = a->T, hs = C / NH, h = (int)(i % NH), b = (int)(i / NH), len = a->lens[b];
  const float scale = 1.0f / sqrtf((float)hs);
  float *K = a->scratch + (size_t)worker * 2 * T * hs, *V = K + (size_t)T * hs;
  int t, t2, j;
  mlsys__enc_tf_gather(K, a->qkv, C, hs, (size_t)b * T, len, C + (size_t)h * hs);
  mlsys__enc_tf_gather(V, a->qkv, C, hs, (size_t)b * T, len, 2 * (size_t)C + (size_t)h * hs);
  for (t = 0; t < T; t++) {
    const size_t row = (size_t)b * T + (size_t)t, ab = (((size_t)b * NH + (size_t)h) * T + (size_t)t) * T;
    const float *q = a->qkv + row * 3 * C + (size_t)h * hs;
    float *w = a->att + ab, *o = a->out + row * C + (size_t)h * hs, mx = -INFINITY, sum = 0, inv;
    for (t2 = 0; t2 < len; t2++) {
      const float s = mlsys_dense_dot(q, K + (size_t)t2 * hs, hs) * scale;
      w[t2] = s;
      if (s > mx) mx = s;
    }
    for (t2 = 0; t2 < len; t2++) { const float e = expf(w[t2] - mx); w[t2] = e; sum += e; }
    inv = 1.0f / sum;
    for (j = 0; j < hs; j++) o[j] = 0;
    for (t2 = 0; t2 < len; t2++) {
      const float p = w[t2] * inv;
      w[t2] = p;
      if (a->ka) {
        if (a->ka[ab + (size_t)t2]) mlsys_dense_axpy(o, p * a->kscale, V + (size_t)t2 * hs, hs);
      } else {
        mlsys_dense_axpy(o, p, V + (size_t)t2 * hs, hs);
      }
    }
    for (t2 = len; t2 < T; t2++) w[t2] = 0;
  }
}
MLSYS__ENC_TF_CLONES static void mlsys__enc_tf_att_bwd(void *ctx, long i, int worker) {
  const mlsys__enc_tf_att *a = (const mlsys__enc_tf_att *)ctx;
  const int C = a->C, NH = a->NH, T = a->T, hs = C / NH, h = (int)(i % NH), b = (int)(i / NH), len = a->lens[b];
  const size_t Th = (size_t)T * hs, col = (size_t)h * hs;
  const float scale = 1.0f / sqrtf((float)hs);
  float *Q = a->scratch + (size_t)worker * (6 * Th + T), *K = Q + Th, *V = K + Th, *dQ = V + Th, *dK = dQ + Th, *dV = dK + Th,
        *datt = dV + Th;
  int t, t2;
  mlsys__enc_tf_gather(Q, a->qkv, C, hs, (size_t)b * T, T, col);
  mlsys__enc_tf_gather(K, a->qkv, C, hs, (size_t)b * T, len, C + col);
  mlsys__enc_tf_gather(V, a->qkv, C, hs, (size_t)b * T, len, 2 * (size_t)C + col);
  memset(dQ, 0, 3 * Th * sizeof(float));
  for (t = 0; t < T; t++) {
    const size_t row = (size_t)b * T + (size_t)t, ab = (((size_t)b * NH + (size_t)h) * T + (size_t)t) * T;
    const float *w = a->att + ab, *g = a->dout + row * C + col, *q = Q + (size_t)t * hs;
    float *dq = dQ + (size_t)t * hs, s = 0;
    for (t2 = 0; t2 < len; t2++) {   /* through the weighted sum of V (and the weights' dropout) */
      const float k = a->ka ? (a->ka[ab + (size_t)t2] ? a->kscale : 0.0f) : 1.0f;
      datt[t2] = k == 0.0f ? 0.0f : mlsys_dense_dot(V + (size_t)t2 * hs, g, hs) * k;
      if (k != 0.0f) mlsys_dense_axpy(dV + (size_t)t2 * hs, w[t2] * k, g, hs);
    }
    for (t2 = 0; t2 < len; t2++) s += w[t2] * datt[t2];
    for (t2 = 0; t2 < len; t2++) {   /* through the softmax and the scaled q·k */
      const float dp = w[t2] * (datt[t2] - s) * scale;
      mlsys_dense_axpy(dq, dp, K + (size_t)t2 * hs, hs);
      mlsys_dense_axpy(dK + (size_t)t2 * hs, dp, q, hs);
    }
  }
  for (t = 0; t < T; t++) {
    float *d = a->dqkv + ((size_t)b * T + (size_t)t) * 3 * C + col;
    memcpy(d, dQ + (size_t)t * hs, (size_t)hs * sizeof(float));
    memcpy(d + C, dK + (size_t)t * hs, (size_t)hs * sizeof(float));
    memcpy(d + 2 * (size_t)C, dV + (size_t)t * hs, (size_t)hs * sizeof(float));
  }
}

/* Draws n keep flags (1 = keep, probability 1 − p) in order. */
static void mlsys__enc_tf_draw(unsigned char *k, size_t n, double p, mlsys_rng *r) {
  size_t i;
  for (i = 0; i < n; i++) k[i] = mlsys_rng_uniform(r) >= p;
}
static void mlsys__enc_tf_apply(float *x, const unsigned char *k, size_t n, float scale) {
  size_t i;
  for (i = 0; i < n; i++) x[i] = k[i] ? x[i] * scale : 0.0f;
}

static mlsys_status mlsys__enc_tf_forward(const mlsys_contracode_enc_cfg *c, const float *p, void **state, mlsys_pool *pool,
                                          const int32_t *ids, const int *lens, int B, int T, int train, mlsys_rng *rng,
                                          float *pooled) {
  const int d = c->d_model, F = c->d_ff, L = c->n_layers, NH = c->n_heads;
  const size_t N = (size_t)B * (size_t)T, Nd = N * (size_t)d, NF = N * (size_t)F, A = (size_t)B * NH * T * T;
  const int dropped = train && c->dropout > 0;
  const float kscale = dropped ? 1.0f / (1.0f - c->dropout) : 1.0f, sq = sqrtf((float)d);
  mlsys__enc_tf_state *s;
  size_t fneed, kneed, n, i;
  float *f, *scratch;
  unsigned char *k;
  mlsys__enc_tf_att at;
  int b, t, l, j;
  if (!mlsys__enc_tf_nparams(c))
    return mlsys_set_error(MLSYS_ERR_ARG, "contracode transformer: bad config (vocab %d, d_model %d, %d layers, %d heads, "
                           "d_ff %d; d_model must be a multiple of the heads)", c->vocab, c->d_model, c->n_layers, c->n_heads, c->d_ff);
  if (c->pool != MLSYS_CONTRACODE_POOL_MEAN_NONPAD && c->pool != MLSYS_CONTRACODE_POOL_MEAN_ALL)
    return mlsys_set_error(MLSYS_ERR_ARG, "contracode transformer: pool mode %d is not a mean (MEAN_NONPAD or MEAN_ALL)", c->pool);
  if (!(c->dropout >= 0 && c->dropout < 1))
    return mlsys_set_error(MLSYS_ERR_ARG, "contracode transformer: dropout %g is outside [0, 1)", (double)c->dropout);
  if (!p || !state || !ids || !lens || !pooled || B < 1 || T < 1)
    return mlsys_set_error(MLSYS_ERR_ARG, "contracode transformer: NULL argument or empty batch (B %d, T %d)", B, T);
  if (T > c->max_len)
    return mlsys_set_error(MLSYS_ERR_ARG, "contracode transformer: T %d exceeds max_len %d", T, c->max_len);
  if (dropped && !rng) return mlsys_set_error(MLSYS_ERR_ARG, "contracode transformer: a training forward with dropout needs an rng");
  for (b = 0; b < B; b++) {
    if (lens[b] < 1 || lens[b] > T)
      return mlsys_set_error(MLSYS_ERR_ARG, "contracode transformer: lens[%d] = %d is outside 1..T (T %d)", b, lens[b], T);
    for (t = 0; t < T; t++)
      if (ids[(size_t)b * T + t] < 0 || ids[(size_t)b * T + t] >= c->vocab)
        return mlsys_set_error(MLSYS_ERR_ARG, "contracode transformer: id %ld at [%d][%d] is outside the vocabulary (%d)",
                               (long)ids[(size_t)b * T + t], b, t, c->vocab);
  }
  s = (mlsys__enc_tf_state *)*state;
  if (!s) {
    s = (mlsys__enc_tf_state *)mlsys_calloc(1, sizeof *s);
    if (!s) return MLSYS_ERR_NOMEM;
    *state = s;
  }
  /* activations: x (L+1)·Nd; per layer qkv 3Nd, att A, ao r1 h1 r2 4Nd, u a 2NF, four N-vectors; fin Nd; mf sf 2N */
  fneed = (size_t)(L + 1) * Nd + (size_t)L * (7 * Nd + A + 2 * NF + 4 * N) + Nd + 2 * N;
  kneed = dropped ? Nd + (size_t)L * (A + 2 * Nd + NF) : 0;
  s->train = 0;
  scratch = (float *)mlsys_alloc((size_t)mlsys_pool_size(pool) * 2 * (size_t)T * (size_t)(d / NH), sizeof(float));
  if (!scratch) return MLSYS_ERR_NOMEM;
  if (s->B != B || s->T != T || fneed > s->fcap || kneed > s->kcap) {
    free(s->ids); free(s->lens);
    s->ids = (int32_t *)mlsys_alloc(N, sizeof(int32_t));
    s->lens = (int *)mlsys_alloc((size_t)B, sizeof(int));
    if (fneed > s->fcap) { free(s->fbuf); s->fbuf = (float *)mlsys_alloc(fneed, sizeof(float)); s->fcap = s->fbuf ? fneed : 0; }
    if (kneed > s->kcap) { free(s->kbuf); s->kbuf = (unsigned char *)mlsys_alloc(kneed, 1); s->kcap = s->kbuf ? kneed : 0; }
    s->B = s->T = 0;
    if (!s->ids || !s->lens || !s->fbuf || (kneed && !s->kbuf)) { free(scratch); return MLSYS_ERR_NOMEM; }
    s->B = B; s->T = T;
  }
  memcpy(s->ids, ids, N * sizeof(int32_t));
  memcpy(s->lens, lens, (size_t)B * sizeof(int));
  s->dropped = dropped;
  s->pool = c->pool;
  s->kscale = kscale;
  f = s->fbuf;
  s->x0 = f; f += (size_t)(L + 1) * Nd;
  s->qkv = f; f += (size_t)L * 3 * Nd;
  s->att = f; f += (size_t)L * A;
  s->ao = f; f += (size_t)L * Nd;
  s->r1 = f; f += (size_t)L * Nd;
  s->h1 = f; f += (size_t)L * Nd;
  s->r2 = f; f += (size_t)L * Nd;
  s->u = f; f += (size_t)L * NF;
  s->a = f; f += (size_t)L * NF;
  s->m1 = f; f += (size_t)L * N;
  s->s1 = f; f += (size_t)L * N;
  s->m2 = f; f += (size_t)L * N;
  s->s2 = f; f += (size_t)L * N;
  s->fin = f; f += Nd;
  s->mf = f; f += N;
  s->sf = f;
  k = s->kbuf;
  s->ke = dropped ? k : NULL;
  s->ka = dropped ? k + Nd : NULL;
  s->ky = dropped ? s->ka + (size_t)L * A : NULL;
  s->kf = dropped ? s->ky + (size_t)L * Nd : NULL;
  s->kz = dropped ? s->kf + (size_t)L * NF : NULL;

  /* embedding ·√d + PE (pe[t][2i] = sin(t·10000^(−2i/d)), pe[t][2i+1] = cos of the same) */
  for (t = 0; t < T; t++)
    for (j = 0; j < d; j += 2) {
      const double ang = (double)t * exp((double)j * (-log(10000.0) / (double)d));
      const float ps = (float)sin(ang), pc = (float)cos(ang);
      for (b = 0; b < B; b++) {
        float *x = s->x0 + ((size_t)b * T + t) * d;
        const float *e = p + (size_t)ids[(size_t)b * T + t] * d;
        x[j] = e[j] * sq + ps;
        if (j + 1 < d) x[j + 1] = e[j + 1] * sq + pc;
      }
    }
  if (dropped) { mlsys__enc_tf_draw(s->ke, Nd, c->dropout, rng); mlsys__enc_tf_apply(s->x0, s->ke, Nd, kscale); }

  for (l = 0; l < L; l++) {
    const mlsys__enc_tf_lay o = mlsys__enc_tf_layer(c, l);
    float *X = s->x0 + (size_t)l * Nd, *qkv = s->qkv + (size_t)l * 3 * Nd, *ao = s->ao + (size_t)l * Nd, *r1 = s->r1 + (size_t)l * Nd,
          *h1 = s->h1 + (size_t)l * Nd, *u = s->u + (size_t)l * NF, *aa = s->a + (size_t)l * NF, *r2 = s->r2 + (size_t)l * Nd;
    unsigned char *ka = dropped ? s->ka + (size_t)l * A : NULL;
    mlsys_dense_matmul(pool, qkv, X, p + o.inw, p + o.inb, (int)N, d, 3 * d);
    if (dropped) mlsys__enc_tf_draw(ka, A, c->dropout, rng);
    memset(&at, 0, sizeof at);
    at.out = ao; at.att = s->att + (size_t)l * A; at.qkv = qkv; at.ka = ka; at.lens = lens; at.scratch = scratch;
    at.B = B; at.T = T; at.C = d; at.NH = NH; at.kscale = kscale;
    {
      const mlsys_status st = mlsys_pool_for(pool, (long)B * NH, mlsys__enc_tf_att_fwd, &at);   /* a busy pool */
      if (st != MLSYS_OK) { free(scratch); return st; }
    }
    mlsys_dense_matmul(pool, r1, ao, p + o.ow, p + o.ob, (int)N, d, d);
    if (dropped) { mlsys__enc_tf_draw(s->ky + (size_t)l * Nd, Nd, c->dropout, rng); mlsys__enc_tf_apply(r1, s->ky + (size_t)l * Nd, Nd, kscale); }
    for (i = 0; i < Nd; i++) r1[i] += X[i];
    mlsys_dense_layernorm(h1, s->m1 + (size_t)l * N, s->s1 + (size_t)l * N, r1, p + o.l1w, p + o.l1b, (int)N, d);
    mlsys_dense_matmul(pool, u, h1, p + o.f1w, p + o.f1b, (int)N, d, F);
    for (n = 0; n < NF; n++) aa[n] = u[n] > 0 ? u[n] : 0.0f;
    if (dropped) { mlsys__enc_tf_draw(s->kf + (size_t)l * NF, NF, c->dropout, rng); mlsys__enc_tf_apply(aa, s->kf + (size_t)l * NF, NF, kscale); }
    mlsys_dense_matmul(pool, r2, aa, p + o.f2w, p + o.f2b, (int)N, F, d);
    if (dropped) { mlsys__enc_tf_draw(s->kz + (size_t)l * Nd, Nd, c->dropout, rng); mlsys__enc_tf_apply(r2, s->kz + (size_t)l * Nd, Nd, kscale); }
    for (i = 0; i < Nd; i++) r2[i] += h1[i];
    mlsys_dense_layernorm(X + Nd, s->m2 + (size_t)l * N, s->s2 + (size_t)l * N, r2, p + o.l2w, p + o.l2b, (int)N, d);
  }
  {
    const float *fw = p + mlsys__enc_tf_nparams(c) - 2 * (size_t)d;
    mlsys_dense_layernorm(s->fin, s->mf, s->sf, s->x0 + (size_t)L * Nd, fw, fw + d, (int)N, d);
  }
  for (b = 0; b < B; b++) {   /* the mean in float, positions in order */
    const int cnt = c->pool == MLSYS_CONTRACODE_POOL_MEAN_ALL ? T : lens[b];
    float *y = pooled + (size_t)b * d;
    for (j = 0; j < d; j++) y[j] = 0;
    for (t = 0; t < cnt; t++) mlsys_dense_axpy(y, 1.0f, s->fin + ((size_t)b * T + t) * d, d);
    for (j = 0; j < d; j++) y[j] /= (float)cnt;
  }
  free(scratch);
  s->train = train != 0;
  return MLSYS_OK;
}

static mlsys_status mlsys__enc_tf_backward(const mlsys_contracode_enc_cfg *c, const float *p, float *g, void *state, mlsys_pool *pool,
                                           const float *dpooled) {
  mlsys__enc_tf_state *s = (mlsys__enc_tf_state *)state;
  const int d = c->d_model, F = c->d_ff, L = c->n_layers, NH = c->n_heads;
  size_t N, Nd, NF, A, i;
  const float sq = sqrtf((float)d);
  float kscale, *buf, *dX, *dh, *tmp, *dqkv, *da, *scratch;
  mlsys__enc_tf_att at;
  int b, t, l, B, T;
  if (!s || !s->train) return mlsys_set_error(MLSYS_ERR_ARG, "contracode transformer: backward without a training forward");
  if (!p || !g || !dpooled) return mlsys_set_error(MLSYS_ERR_ARG, "contracode transformer: NULL argument to the backward");
  B = s->B; T = s->T; kscale = s->kscale;
  N = (size_t)B * T; Nd = N * d; NF = N * F; A = (size_t)B * NH * T * T;
  buf = (float *)mlsys_alloc(3 * Nd + 3 * Nd + NF + (size_t)mlsys_pool_size(pool) * (6 * (size_t)T * (d / NH) + T), sizeof(float));
  if (!buf) return MLSYS_ERR_NOMEM;
  dX = buf; dh = dX + Nd; tmp = dh + Nd; dqkv = tmp + Nd; da = dqkv + 3 * Nd; scratch = da + NF;
  /* through the pool and the final LN: tmp = ∂/∂fin, dX = ∂/∂(last layer's output) */
  memset(tmp, 0, Nd * sizeof(float));
  for (b = 0; b < B; b++) {
    const int cnt = s->pool == MLSYS_CONTRACODE_POOL_MEAN_ALL ? T : s->lens[b];
    for (t = 0; t < cnt; t++)
      for (i = 0; i < (size_t)d; i++) tmp[((size_t)b * T + t) * d + i] = dpooled[(size_t)b * d + i] / (float)cnt;
  }
  memset(dX, 0, Nd * sizeof(float));
  {
    const size_t fo = mlsys__enc_tf_nparams(c) - 2 * (size_t)d;
    mlsys_dense_layernorm_backward(dX, g + fo, g + fo + d, tmp, s->x0 + (size_t)L * Nd, p + fo, s->mf, s->sf, (int)N, d);
  }
  for (l = L - 1; l >= 0; l--) {
    const mlsys__enc_tf_lay o = mlsys__enc_tf_layer(c, l);
    const float *X = s->x0 + (size_t)l * Nd, *qkv = s->qkv + (size_t)l * 3 * Nd, *ao = s->ao + (size_t)l * Nd, *r1 = s->r1 + (size_t)l * Nd,
                *h1 = s->h1 + (size_t)l * Nd, *u = s->u + (size_t)l * NF, *aa = s->a + (size_t)l * NF, *r2 = s->r2 + (size_t)l * Nd;
    /* LN2: dh = ∂/∂r2 (the residual into h1 and the ff output) */
    memset(dh, 0, Nd * sizeof(float));
    mlsys_dense_layernorm_backward(dh, g + o.l2w, g + o.l2b, dX, r2, p + o.l2w, s->m2 + (size_t)l * N, s->s2 + (size_t)l * N, (int)N, d);
    memcpy(tmp, dh, Nd * sizeof(float));
    if (s->dropped) mlsys__enc_tf_apply(tmp, s->kz + (size_t)l * Nd, Nd, kscale);
    mlsys_dense_matmul_backward(pool, da, g + o.f2w, g + o.f2b, tmp, aa, p + o.f2w, (int)N, F, d);
    if (s->dropped) mlsys__enc_tf_apply(da, s->kf + (size_t)l * NF, NF, kscale);
    for (i = 0; i < NF; i++) if (!(u[i] > 0)) da[i] = 0;
    mlsys_dense_matmul_backward(pool, tmp, g + o.f1w, g + o.f1b, da, h1, p + o.f1w, (int)N, d, F);
    for (i = 0; i < Nd; i++) dh[i] += tmp[i];   /* dh = ∂/∂h1 */
    /* LN1: dX = ∂/∂r1 (the residual into X and the attention block) */
    memset(dX, 0, Nd * sizeof(float));
    mlsys_dense_layernorm_backward(dX, g + o.l1w, g + o.l1b, dh, r1, p + o.l1w, s->m1 + (size_t)l * N, s->s1 + (size_t)l * N, (int)N, d);
    memcpy(tmp, dX, Nd * sizeof(float));
    if (s->dropped) mlsys__enc_tf_apply(tmp, s->ky + (size_t)l * Nd, Nd, kscale);
    mlsys_dense_matmul_backward(pool, dh, g + o.ow, g + o.ob, tmp, ao, p + o.ow, (int)N, d, d);   /* dh = ∂/∂ao */
    memset(dqkv, 0, 3 * Nd * sizeof(float));
    memset(&at, 0, sizeof at);
    at.att = s->att + (size_t)l * A; at.dqkv = dqkv; at.scratch = scratch; at.qkv = qkv; at.dout = dh;
    at.ka = s->dropped ? s->ka + (size_t)l * A : NULL; at.lens = s->lens;
    at.B = B; at.T = T; at.C = d; at.NH = NH; at.kscale = kscale;
    {
      const mlsys_status st = mlsys_pool_for(pool, (long)B * NH, mlsys__enc_tf_att_bwd, &at);
      if (st != MLSYS_OK) { free(buf); return st; }
    }
    mlsys_dense_matmul_backward(pool, tmp, g + o.inw, g + o.inb, dqkv, X, p + o.inw, (int)N, d, 3 * d);
    for (i = 0; i < Nd; i++) dX[i] += tmp[i];   /* dX = ∂/∂X, the previous layer's output */
  }
  if (s->dropped) mlsys__enc_tf_apply(dX, s->ke, Nd, kscale);
  for (i = 0; i < N; i++) mlsys_dense_axpy(g + (size_t)s->ids[i] * d, sq, dX + i * d, d);
  free(buf);
  return MLSYS_OK;
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((unused))   /* referenced by the body table (6d) */
#endif
static const mlsys__enc_body mlsys__enc_transformer_body = {mlsys__enc_tf_nparams, mlsys__enc_tf_init, mlsys__enc_tf_forward,
                                                            mlsys__enc_tf_backward, mlsys__enc_tf_free_state};

/* [6b2: BiLSTM body] */
/* DeepTyper-like BiLSTM (§3.6): h0 = Emb[x]·√d + PE_sin(t), dropout; n_layers bidirectional LSTM layers, hidden d per
   direction, PyTorch's gate order i,f,g,o with two bias vectors, packed by length (row b's forward direction runs
   t = 0..lens[b]−1 and its backward direction lens[b]−1..0, so padding never enters); layer l > 0 reads [fwd, bwd]
   (2d) of layer l−1 after dropout (train only, as nn.LSTM's dropout argument). Pooled: LSTM_HIDDEN = h_n flattened
   in PyTorch's order [l0 fwd, l0 bwd, l1 fwd, …] (fwd final = h at lens−1, bwd final = h at 0); MEAN_NONPAD = the
   mean over t < lens[b] of the last layer's [fwd, bwd]; MEAN_ALL = the same sum over T (pad_packed_sequence's zero
   outputs at padding count in the mean, as the repo's sequence_mean).
   Parameter layout: emb (V×d), then for each layer l and direction (fwd, bwd): w_ih (4d × in_l, in_0 = d, else 2d),
   w_hh (4d × d), b_ih (4d), b_hh (4d) — nn.LSTM's weight_ih_l{l}[_reverse] etc. in its state_dict order. */
static int mlsys__enc_lstm_pooled_dim(const mlsys_contracode_enc_cfg *c) {
  if (c->pool == MLSYS_CONTRACODE_POOL_LSTM_HIDDEN) return 2 * c->n_layers * c->d_model;
  if (c->pool == MLSYS_CONTRACODE_POOL_MEAN_NONPAD || c->pool == MLSYS_CONTRACODE_POOL_MEAN_ALL) return 2 * c->d_model;
  return 0;
}
static int mlsys__enc_lstm_cfg_ok(const mlsys_contracode_enc_cfg *c) {
  /* the bound keeps 4·d·2d and the per-layer offsets far inside size_t and int arithmetic */
  return c && c->vocab >= 1 && c->d_model >= 1 && c->d_model <= (1 << 14) && c->n_layers >= 1 && c->n_layers <= 64;
}
static size_t mlsys__enc_lstm_layer_size(size_t h, size_t in) { return 4 * h * in + 4 * h * h + 8 * h; }
static size_t mlsys__enc_lstm_nparams(const mlsys_contracode_enc_cfg *c) {
  size_t h, n;
  int l;
  if (!mlsys__enc_lstm_cfg_ok(c)) return 0;
  h = (size_t)c->d_model;
  n = (size_t)c->vocab * h;
  for (l = 0; l < c->n_layers; l++) n += 2 * mlsys__enc_lstm_layer_size(h, l ? 2 * h : h);
  return n;
}
/* Offset of layer l, direction dir's w_ih; w_hh, b_ih, b_hh follow it. */
static size_t mlsys__enc_lstm_off(const mlsys_contracode_enc_cfg *c, int l, int dir) {
  size_t h = (size_t)c->d_model, o = (size_t)c->vocab * h;
  int k;
  for (k = 0; k < l; k++) o += 2 * mlsys__enc_lstm_layer_size(h, k ? 2 * h : h);
  return o + (size_t)dir * mlsys__enc_lstm_layer_size(h, l ? 2 * h : h);
}
static void mlsys__enc_lstm_init(const mlsys_contracode_enc_cfg *c, float *p, mlsys_rng *r) {
  size_t i, ne, n = mlsys__enc_lstm_nparams(c);
  double a;
  if (!n) return;
  ne = (size_t)c->vocab * (size_t)c->d_model;
  a = 1.0 / sqrt((double)c->d_model);
  for (i = 0; i < ne; i++) p[i] = (float)mlsys_rng_normal(r);
  for (; i < n; i++) p[i] = (float)((2 * mlsys_rng_uniform(r) - 1) * a);
}

typedef struct {
  int B, T, L, h, d, pool, ready;
  size_t N;      /* Σ lens: rows are packed, sequence b's position t at row off[b] + t */
  size_t *off;
  int *lens;
  int32_t *ids;
  float **X;     /* L: layer inputs (N × in_l) as the layer saw them (after dropout) */
  float **Y;     /* L: layer outputs (N × 2h) [fwd | bwd] */
  float **A;     /* 2L: gate activations i,f,g,o (N × 4h) per layer and direction */
  float **C;     /* 2L: cell states (N × h) */
  float **M;     /* L: dropout scales (0 or 1/(1−p)) applied to X[l]; NULL when none */
  void *arena;
} mlsys__enc_lstm_state;

static void mlsys__enc_lstm_free_state(void *s) {
  mlsys__enc_lstm_state *st = (mlsys__enc_lstm_state *)s;
  if (!st) return;
  free(st->arena);
  free(st);
}

static mlsys__enc_lstm_state *mlsys__enc_lstm_alloc(int B, int T, const int *lens, int L, int h, int d, int masks) {
  size_t NR = 0, H = (size_t)h, nf = 0, nb, ptrs = (size_t)L * 7;
  mlsys__enc_lstm_state *st = (mlsys__enc_lstm_state *)calloc(1, sizeof *st);
  char *q;
  int l;
  if (!st) return NULL;
  for (l = 0; l < B; l++) NR += (size_t)lens[l];
  for (l = 0; l < L; l++) {
    size_t in = l ? 2 * H : (size_t)d;
    nf += NR * in + NR * 2 * H + 2 * NR * 4 * H + 2 * NR * H + (masks ? NR * in : 0);
  }
  nb = ptrs * sizeof(float *) + (size_t)B * sizeof(size_t) + (size_t)B * sizeof(int) + (size_t)B * (size_t)T * sizeof(int32_t);
  nb = (nb + 63) & ~(size_t)63;
  st->arena = calloc(1, nb + nf * sizeof(float));
  if (!st->arena) {
    free(st);
    return NULL;
  }
  q = (char *)st->arena;
  st->X = (float **)q; st->Y = st->X + L; st->A = st->Y + L; st->C = st->A + 2 * L; st->M = st->C + 2 * L;
  st->off = (size_t *)(st->M + L);
  st->lens = (int *)(st->off + B);
  st->ids = (int32_t *)(st->lens + B);
  q += nb;
  for (l = 0; l < L; l++) {
    size_t in = l ? 2 * H : (size_t)d;
    st->X[l] = (float *)q; q += NR * in * sizeof(float);
    st->Y[l] = (float *)q; q += NR * 2 * H * sizeof(float);
    st->A[2 * l] = (float *)q; q += NR * 4 * H * sizeof(float);
    st->A[2 * l + 1] = (float *)q; q += NR * 4 * H * sizeof(float);
    st->C[2 * l] = (float *)q; q += NR * H * sizeof(float);
    st->C[2 * l + 1] = (float *)q; q += NR * H * sizeof(float);
    if (masks) { st->M[l] = (float *)q; q += NR * in * sizeof(float); }
  }
  st->B = B; st->T = T; st->L = L; st->h = h; st->d = d; st->N = NR;
  for (l = 0, NR = 0; l < B; l++) { st->off[l] = NR; NR += (size_t)lens[l]; }
  memcpy(st->lens, lens, sizeof(int) * (size_t)B);
  return st;
}

static float mlsys__enc_lstm_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

/* One (sequence, direction) recurrence of layer l: A holds x·W_ihᵀ + b_ih for every row on entry. */
typedef struct {
  const mlsys__enc_lstm_state *st;
  const float *whh[2], *bhh[2];
  float *A[2], *C[2], *Y;
  /* backward */
  float *dY, *scratch;          /* dY: N × 2h (gradient at the layer's outputs); scratch: 2h per task */
  const float *dhn;             /* LSTM_HIDDEN: dpooled, NULL otherwise */
  int l, pooled_dim;
} mlsys__enc_lstm_job;

static void mlsys__enc_lstm_fwd_task(void *ctx, long task, int worker) {
  mlsys__enc_lstm_job *j = (mlsys__enc_lstm_job *)ctx;
  const mlsys__enc_lstm_state *st = j->st;
  int b = (int)(task >> 1), dir = (int)(task & 1), h = st->h, n = st->lens[b], s, k;
  const float *whh = j->whh[dir], *bhh = j->bhh[dir], *hprev = NULL, *cprev = NULL;
  (void)worker;
  for (s = 0; s < n; s++) {
    int t = dir ? n - 1 - s : s;
    size_t row = st->off[b] + (size_t)t;
    float *a = j->A[dir] + row * 4 * (size_t)h, *c = j->C[dir] + row * (size_t)h, *y = j->Y + row * 2 * (size_t)h + (size_t)dir * h;
    for (k = 0; k < 4 * h; k++) a[k] += bhh[k] + (hprev ? mlsys_dense_dot(whh + (size_t)k * h, hprev, h) : 0.0f);
    for (k = 0; k < h; k++) {
      float ig = mlsys__enc_lstm_sigmoid(a[k]), fg = mlsys__enc_lstm_sigmoid(a[h + k]), gg = tanhf(a[2 * h + k]),
            og = mlsys__enc_lstm_sigmoid(a[3 * h + k]);
      a[k] = ig; a[h + k] = fg; a[2 * h + k] = gg; a[3 * h + k] = og;
      c[k] = (cprev ? fg * cprev[k] : 0.0f) + ig * gg;
      y[k] = og * tanhf(c[k]);
    }
    hprev = y; cprev = c;
  }
}

/* BPTT of one (sequence, direction): turns A's activations into the gate pre-activation gradients, in place (rows
   in the order the forward wrote them, reversed, so each row is read before it is overwritten). */
static void mlsys__enc_lstm_bwd_task(void *ctx, long task, int worker) {
  mlsys__enc_lstm_job *j = (mlsys__enc_lstm_job *)ctx;
  const mlsys__enc_lstm_state *st = j->st;
  int b = (int)(task >> 1), dir = (int)(task & 1), h = st->h, n = st->lens[b], s, k;
  const float *whh = j->whh[dir];
  float *dhn = j->scratch + (size_t)task * 2 * (size_t)h, *dc = dhn + h;
  (void)worker;
  memset(dc, 0, sizeof(float) * (size_t)h);
  if (j->dhn) memcpy(dhn, j->dhn + (size_t)b * j->pooled_dim + (size_t)(2 * j->l + dir) * h, sizeof(float) * (size_t)h);
  else memset(dhn, 0, sizeof(float) * (size_t)h);
  for (s = n - 1; s >= 0; s--) {
    int t = dir ? n - 1 - s : s, tp = dir ? t + 1 : t - 1;
    size_t row = st->off[b] + (size_t)t, prow = st->off[b] + (size_t)tp;
    float *a = j->A[dir] + row * 4 * (size_t)h;
    const float *c = j->C[dir] + row * (size_t)h, *cp = s ? j->C[dir] + prow * (size_t)h : NULL,
                *dy = j->dY + row * 2 * (size_t)h + (size_t)dir * h;
    for (k = 0; k < h; k++) {
      float ig = a[k], fg = a[h + k], gg = a[2 * h + k], og = a[3 * h + k], tc = tanhf(c[k]);
      float g = dy[k] + dhn[k], dck = dc[k] + g * og * (1.0f - tc * tc);
      a[k] = dck * gg * ig * (1.0f - ig);
      a[h + k] = cp ? dck * cp[k] * fg * (1.0f - fg) : 0.0f;
      a[2 * h + k] = dck * ig * (1.0f - gg * gg);
      a[3 * h + k] = g * tc * og * (1.0f - og);
      dc[k] = dck * fg;
    }
    memset(dhn, 0, sizeof(float) * (size_t)h);
    if (s) for (k = 0; k < 4 * h; k++) mlsys_dense_axpy(dhn, a[k], whh + (size_t)k * h, h);
  }
}

static mlsys_status mlsys__enc_lstm_check(const mlsys_contracode_enc_cfg *c, const int32_t *ids, const int *lens, int B, int T) {
  int b;
  long i;
  if (!mlsys__enc_lstm_cfg_ok(c)) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: bilstm: invalid config (vocab, d_model or n_layers)");
  if (!mlsys__enc_lstm_pooled_dim(c)) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: bilstm: unknown pool mode %d", c->pool);
  if (!(c->dropout >= 0.0f && c->dropout < 1.0f)) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: bilstm: dropout %g not in [0, 1)", (double)c->dropout);
  if (B < 1 || T < 1) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: bilstm: batch %d x %d is empty", B, T);
  if (T > c->max_len) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: bilstm: length %d exceeds max_len %d", T, c->max_len);
  if (!ids || !lens) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: bilstm: NULL ids or lens");
  for (b = 0; b < B; b++)
    if (lens[b] < 1 || lens[b] > T) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: bilstm: lens[%d] = %d not in 1..%d", b, lens[b], T);
  for (i = 0; i < (long)B * T; i++)
    if (ids[i] < 0 || ids[i] >= c->vocab)
      return mlsys_set_error(MLSYS_ERR_ARG, "contracode: bilstm: id %ld at (%ld, %ld) outside the vocabulary of %d", (long)ids[i],
                             i / T, i % T, c->vocab);
  return MLSYS_OK;
}

/* Dropout scales for the N packed rows of an N × w tensor, drawn serially in (b, t, j) order. */
static void mlsys__enc_lstm_drop(float *m, size_t N, int w, float p, mlsys_rng *rng) {
  float keep = 1.0f / (1.0f - p);
  size_t i;
  for (i = 0; i < N * (size_t)w; i++) m[i] = mlsys_rng_uniform(rng) < p ? 0.0f : keep;
}

static mlsys_status mlsys__enc_lstm_forward(const mlsys_contracode_enc_cfg *c, const float *p, void **state, mlsys_pool *pool,
                                            const int32_t *ids, const int *lens, int B, int T, int train, mlsys_rng *rng,
                                            float *pooled) {
  mlsys__enc_lstm_state *st;
  mlsys__enc_lstm_job j;
  mlsys_status s;
  int h = c ? c->d_model : 0, L = c ? c->n_layers : 0, pd, b, t, k, l, dir, drop;
  float sq;
  if ((s = mlsys__enc_lstm_check(c, ids, lens, B, T)) != MLSYS_OK) return s;
  if (!p || !pooled || (train && !state)) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: bilstm: NULL parameters, output or state");
  drop = train && c->dropout > 0.0f;
  if (drop && !rng) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: bilstm: train forward with dropout needs an rng");
  pd = mlsys__enc_lstm_pooled_dim(c);
  st = mlsys__enc_lstm_alloc(B, T, lens, L, h, h, drop);
  if (!st) return mlsys_set_error(MLSYS_ERR_NOMEM, "contracode: bilstm: out of memory for a %d x %d batch", B, T);
  st->pool = c->pool;
  memcpy(st->ids, ids, sizeof(int32_t) * (size_t)B * T);
  /* embedding ·√d + the PyTorch tutorial's sinusoidal encoding, computed in double */
  sq = (float)sqrt((double)h);
  for (b = 0; b < B; b++)
    for (t = 0; t < lens[b]; t++) {
      float *x = st->X[0] + (st->off[b] + (size_t)t) * (size_t)h;
      const float *e = p + (size_t)ids[(size_t)b * T + t] * (size_t)h;
      for (k = 0; k < h; k++) {
        double ang = (double)t * exp((double)(k & ~1) * (-log(10000.0) / (double)h));
        x[k] = e[k] * sq + (float)((k & 1) ? cos(ang) : sin(ang));
      }
    }
  for (l = 0; l < L; l++) {
    int in = l ? 2 * h : h;
    size_t i, n = st->N * (size_t)in;
    if (l) memcpy(st->X[l], st->Y[l - 1], sizeof(float) * n);
    if (drop) {
      mlsys__enc_lstm_drop(st->M[l], st->N, in, c->dropout, rng);
      for (i = 0; i < n; i++) st->X[l][i] *= st->M[l][i];
    }
    memset(&j, 0, sizeof j);
    j.st = st; j.Y = st->Y[l]; j.l = l;
    for (dir = 0; dir < 2; dir++) {
      size_t o = mlsys__enc_lstm_off(c, l, dir);
      const float *wih = p + o, *whh = wih + 4 * (size_t)h * in, *bih = whh + 4 * (size_t)h * h;
      j.whh[dir] = whh; j.bhh[dir] = bih + 4 * h; j.A[dir] = st->A[2 * l + dir]; j.C[dir] = st->C[2 * l + dir];
      mlsys_dense_matmul(pool, j.A[dir], st->X[l], wih, bih, (int)st->N, in, 4 * h);
    }
    if ((s = mlsys_pool_for(pool, 2L * B, mlsys__enc_lstm_fwd_task, &j)) != MLSYS_OK) {
      mlsys__enc_lstm_free_state(st);
      return s;
    }
  }
  for (b = 0; b < B; b++) {
    float *o = pooled + (size_t)b * pd;
    if (c->pool == MLSYS_CONTRACODE_POOL_LSTM_HIDDEN) {
      for (l = 0; l < L; l++)
        for (dir = 0; dir < 2; dir++) {
          int t0 = dir ? 0 : lens[b] - 1;
          memcpy(o + (size_t)(2 * l + dir) * h, st->Y[l] + (st->off[b] + (size_t)t0) * 2 * h + (size_t)dir * h, sizeof(float) * (size_t)h);
        }
    } else {
      /* summed in double in t order, so the mean does not depend on the batch around the sequence */
      double inv = 1.0 / (c->pool == MLSYS_CONTRACODE_POOL_MEAN_ALL ? T : lens[b]);
      for (k = 0; k < 2 * h; k++) {
        double acc = 0;
        for (t = 0; t < lens[b]; t++) acc += st->Y[L - 1][(st->off[b] + (size_t)t) * 2 * h + k];
        o[k] = (float)(acc * inv);
      }
    }
  }
  if (!train) {
    mlsys__enc_lstm_free_state(st);
    return MLSYS_OK;
  }
  st->ready = 1;
  mlsys__enc_lstm_free_state(*state);
  *state = st;
  return MLSYS_OK;
}

static mlsys_status mlsys__enc_lstm_backward(const mlsys_contracode_enc_cfg *c, const float *p, float *g, void *state, mlsys_pool *pool,
                                             const float *dpooled) {
  mlsys__enc_lstm_state *st = (mlsys__enc_lstm_state *)state;
  mlsys__enc_lstm_job j;
  mlsys_status s = MLSYS_OK;
  int B, T, h, L, pd, b, t, k, l, dir;
  size_t NR, i;
  float *dY = NULL, *dX = NULL, *dXd = NULL, *hp = NULL, *scratch = NULL, sq;
  if (!mlsys__enc_lstm_cfg_ok(c) || !p || !g || !dpooled) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: bilstm: backward: bad arguments");
  if (!st || !st->ready) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: bilstm: backward without a train forward");
  if (st->h != c->d_model || st->L != c->n_layers || st->pool != c->pool)
    return mlsys_set_error(MLSYS_ERR_ARG, "contracode: bilstm: backward config differs from the forward's");
  B = st->B; T = st->T; h = st->h; L = st->L; NR = st->N;
  pd = mlsys__enc_lstm_pooled_dim(c);
  dY = (float *)calloc(NR * 2 * h, sizeof(float));
  dX = (float *)malloc(NR * 2 * h * sizeof(float));
  dXd = (float *)malloc(NR * 2 * h * sizeof(float));
  hp = (float *)malloc(NR * h * sizeof(float));
  scratch = (float *)malloc((size_t)B * 2 * 2 * h * sizeof(float));
  if (!dY || !dX || !dXd || !hp || !scratch) {
    s = mlsys_set_error(MLSYS_ERR_NOMEM, "contracode: bilstm: out of memory in backward");
    goto done;
  }
  st->ready = 0; /* the gate buffers become gradients below */
  if (c->pool != MLSYS_CONTRACODE_POOL_LSTM_HIDDEN)
    for (b = 0; b < B; b++) {
      float inv = (float)(1.0 / (c->pool == MLSYS_CONTRACODE_POOL_MEAN_ALL ? T : st->lens[b]));
      for (t = 0; t < st->lens[b]; t++)
        for (k = 0; k < 2 * h; k++) dY[(st->off[b] + (size_t)t) * 2 * h + k] = dpooled[(size_t)b * pd + k] * inv;
    }
  for (l = L - 1; l >= 0; l--) {
    int in = l ? 2 * h : h;
    memset(&j, 0, sizeof j);
    j.st = st; j.dY = dY; j.scratch = scratch; j.l = l; j.pooled_dim = pd;
    j.dhn = c->pool == MLSYS_CONTRACODE_POOL_LSTM_HIDDEN ? dpooled : NULL;
    for (dir = 0; dir < 2; dir++) {
      size_t o = mlsys__enc_lstm_off(c, l, dir);
      j.whh[dir] = p + o + 4 * (size_t)h * in; j.A[dir] = st->A[2 * l + dir]; j.C[dir] = st->C[2 * l + dir];
    }
    if ((s = mlsys_pool_for(pool, 2L * B, mlsys__enc_lstm_bwd_task, &j)) != MLSYS_OK) goto done;
    for (dir = 0; dir < 2; dir++) {
      size_t o = mlsys__enc_lstm_off(c, l, dir);
      const float *wih = p + o, *whh = wih + 4 * (size_t)h * in;
      float *gwih = g + o, *gwhh = gwih + 4 * (size_t)h * in, *gbih = gwhh + 4 * (size_t)h * h, *gbhh = gbih + 4 * h;
      /* h_{t−1} of each row in this direction's order, zero where the recurrence started */
      memset(hp, 0, NR * h * sizeof(float));
      for (b = 0; b < B; b++)
        for (t = 0; t < st->lens[b]; t++) {
          int tp = dir ? t + 1 : t - 1;
          if (tp < 0 || tp >= st->lens[b]) continue;
          memcpy(hp + (st->off[b] + (size_t)t) * h, st->Y[l] + (st->off[b] + (size_t)tp) * 2 * h + (size_t)dir * h, sizeof(float) * (size_t)h);
        }
      mlsys_dense_matmul_backward(pool, NULL, gwhh, gbhh, st->A[2 * l + dir], hp, whh, (int)NR, h, 4 * h);
      mlsys_dense_matmul_backward(pool, dir ? dXd : dX, gwih, gbih, st->A[2 * l + dir], st->X[l], wih, (int)NR, in, 4 * h);
    }
    for (i = 0; i < NR * (size_t)in; i++) dX[i] += dXd[i];
    if (st->M[l])
      for (i = 0; i < NR * (size_t)in; i++) dX[i] *= st->M[l][i];
    if (l) memcpy(dY, dX, NR * (size_t)in * sizeof(float));
  }
  /* embedding rows in (b, t) order: a repeated id sums in a fixed order */
  sq = (float)sqrt((double)h);
  for (b = 0; b < B; b++)
    for (t = 0; t < st->lens[b]; t++) mlsys_dense_axpy(g + (size_t)st->ids[(size_t)b * T + t] * h, sq, dX + (st->off[b] + (size_t)t) * h, h);
done:
  free(dY); free(dX); free(dXd); free(hp); free(scratch);
  return s;
}

static const mlsys__enc_body mlsys__enc_bilstm_body = {mlsys__enc_lstm_nparams, mlsys__enc_lstm_init, mlsys__enc_lstm_forward,
                                                       mlsys__enc_lstm_backward, mlsys__enc_lstm_free_state};

/* [6c: InfoNCE and MoCo] */
MLSYS_DEF double mlsys_contracode_infonce(const float *q, const float *k, const float *queue, int B, int K, int d, float T,
                                          float *dq, double *acc1, double *acc5) {
  double loss = 0, *lg;
  int b, j, c, n1 = 0, n5 = 0;
  if (!q || !k || (!queue && K) || B < 1 || K < 0 || d < 1 || !(T > 0)) return NAN;
  if (!(lg = (double *)malloc(((size_t)K + 1) * sizeof(double)))) return NAN;
  for (b = 0; b < B; b++) {
    const float *qb = q + (size_t)b * d;
    double mx, z = 0;
    int above = 0;
    for (j = 0; j <= K; j++) {
      const float *key = j ? queue + (size_t)(j - 1) * d : k + (size_t)b * d;
      double s = 0;
      for (c = 0; c < d; c++) s += (double)qb[c] * key[c];
      lg[j] = s / T;
    }
    mx = lg[0];
    for (j = 1; j <= K; j++) {
      if (lg[j] > mx) mx = lg[j];
      if (lg[j] > lg[0]) above++; /* ties rank the positive first */
    }
    n1 += above == 0, n5 += above < 5;
    for (j = 0; j <= K; j++) z += exp(lg[j] - mx);
    loss += -(lg[0] - mx - log(z));
    if (dq) { /* ∂/∂q_b of the mean: (Σ_j p_j key_j − k⁺) / (T·B) */
      float *g = dq + (size_t)b * d;
      for (c = 0; c < d; c++) g[c] = 0;
      for (j = 0; j <= K; j++) {
        const float *key = j ? queue + (size_t)(j - 1) * d : k + (size_t)b * d;
        double w = (exp(lg[j] - mx) / z - (j == 0)) / ((double)T * B);
        for (c = 0; c < d; c++) g[c] += (float)(w * key[c]);
      }
    }
  }
  free(lg);
  if (acc1) *acc1 = (double)n1 / B;
  if (acc5) *acc5 = (double)n5 / B;
  return loss / B;
}

MLSYS_DEF void mlsys_contracode_moco_defaults(mlsys_contracode_moco_cfg *c) {
  if (!c) return;
  c->K = 107520;
  c->m = 0.999f, c->T = 0.07f;
  c->lr = 1e-4f, c->beta1 = 0.9f, c->beta2 = 0.98f, c->eps = 1e-6f, c->weight_decay = 0;
  c->warmup = 5000, c->total_steps = 600000;
}

struct mlsys_contracode_moco {
  mlsys_contracode_moco_cfg mc;
  mlsys_contracode_enc q, k;
  float *adam_m, *adam_v, *queue;   /* queue: K rows of d_rep, each a unit key */
  int ptr;
  int64_t step;                     /* optimizer steps taken */
  mlsys_rng rng;                    /* dropout draws of both encoders */
  mlsys_pool *pool;
};

/* HF get_linear_schedule_with_warmup: the update of (0-based) step s uses lr·λ(s), so the very first update with a
   warm-up has lr 0, as in the repo. total_steps ≤ warmup (or ≤ 0) means no decay. */
static double mlsys__moco_lr(const mlsys_contracode_moco_cfg *c, int64_t s) {
  if (s < c->warmup) return (double)c->lr * (double)s / (double)(c->warmup > 1 ? c->warmup : 1);
  if (c->total_steps <= c->warmup) return c->lr;
  if (s >= c->total_steps) return 0;
  return (double)c->lr * (double)(c->total_steps - s) / (double)(c->total_steps - c->warmup);
}
static void mlsys__moco_momentum(float *pk, const float *pq, size_t n, float m) {
  size_t i;
  for (i = 0; i < n; i++) pk[i] = m * pk[i] + (1 - m) * pq[i];
}
/* Writes B keys at row ptr of the K-row queue; returns the next pointer. K is a multiple of B, so no wrap inside. */
static int mlsys__moco_enqueue(float *queue, int K, int d, int ptr, const float *keys, int B) {
  memcpy(queue + (size_t)ptr * d, keys, (size_t)B * d * sizeof(float));
  return (ptr + B) % K;
}
static void mlsys__moco_normalize(float *x, float *norm, int B, int d) {
  int b, c;
  for (b = 0; b < B; b++) {
    float *r = x + (size_t)b * d;
    double s = 0;
    for (c = 0; c < d; c++) s += (double)r[c] * r[c];
    s = sqrt(s);
    if (s < 1e-12) s = 1e-12; /* F.normalize's eps */
    norm[b] = (float)s;
    for (c = 0; c < d; c++) r[c] = (float)(r[c] / s);
  }
}

static mlsys_status mlsys__moco_alloc(const mlsys_contracode_enc_cfg *ec, const mlsys_contracode_moco_cfg *mc, uint64_t seed,
                                      mlsys_pool *pool, mlsys_contracode_moco **out) {
  mlsys_contracode_moco *m;
  mlsys_status st;
  if (!ec || !mc || !out) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: moco_new: NULL argument");
  *out = NULL;
  if (mc->K < 1) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: moco_new: queue size K = %d < 1", mc->K);
  if (!(mc->m >= 0 && mc->m <= 1)) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: moco_new: momentum m = %g is not in [0, 1]", mc->m);
  if (!(mc->T > 0)) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: moco_new: temperature T = %g must be > 0", mc->T);
  if (!(mc->lr >= 0) || mc->warmup < 0)
    return mlsys_set_error(MLSYS_ERR_ARG, "contracode: moco_new: lr (%g) and warmup (%d) must be >= 0", mc->lr, mc->warmup);
  if (!(m = (mlsys_contracode_moco *)mlsys_calloc(1, sizeof *m))) return MLSYS_ERR_NOMEM;
  m->mc = *mc;
  m->pool = pool;
  mlsys_rng_seed(&m->rng, seed ^ 0x6d6f636f71756575ull);
  st = mlsys_contracode_enc_init(&m->q, ec, seed, pool);
  if (st == MLSYS_OK) st = mlsys_contracode_enc_init(&m->k, ec, seed, pool);
  if (st != MLSYS_OK) {
    mlsys_contracode_moco_free(m);
    return st;
  }
  m->adam_m = (float *)mlsys_calloc(m->q.nparams, sizeof(float));
  m->adam_v = (float *)mlsys_calloc(m->q.nparams, sizeof(float));
  m->queue = (float *)mlsys_calloc((size_t)mc->K * ec->d_rep, sizeof(float));
  if (!m->adam_m || !m->adam_v || !m->queue) {
    mlsys_contracode_moco_free(m);
    return mlsys_set_error(MLSYS_ERR_NOMEM, "contracode: moco_new: out of memory");
  }
  *out = m;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_contracode_moco_new(const mlsys_contracode_enc_cfg *ec, const mlsys_contracode_moco_cfg *mc,
                                                 uint64_t seed, mlsys_pool *pool, mlsys_contracode_moco **out) {
  mlsys_contracode_moco *m;
  mlsys_status st = mlsys__moco_alloc(ec, mc, seed, pool, &m);
  size_t i, n;
  float *norm;
  if (st != MLSYS_OK) return st;
  memcpy(m->k.params, m->q.params, m->q.nparams * sizeof(float)); /* f_k starts as a copy of f_q */
  n = (size_t)mc->K * ec->d_rep;
  for (i = 0; i < n; i++) m->queue[i] = (float)mlsys_rng_normal(&m->rng);
  if (!(norm = (float *)malloc((size_t)mc->K * sizeof(float)))) {
    mlsys_contracode_moco_free(m);
    return MLSYS_ERR_NOMEM;
  }
  mlsys__moco_normalize(m->queue, norm, mc->K, ec->d_rep);
  free(norm);
  *out = m;
  return MLSYS_OK;
}

MLSYS_DEF void mlsys_contracode_moco_free(mlsys_contracode_moco *m) {
  if (!m) return;
  mlsys_contracode_enc_free(&m->q);
  mlsys_contracode_enc_free(&m->k);
  free(m->adam_m);
  free(m->adam_v);
  free(m->queue);
  free(m);
}

MLSYS_DEF mlsys_contracode_enc *mlsys_contracode_moco_query_encoder(mlsys_contracode_moco *m) { return m ? &m->q : NULL; }
MLSYS_DEF int64_t mlsys_contracode_moco_steps(const mlsys_contracode_moco *m) { return m ? m->step : 0; }

/* The query side of a step: q = normalize(f_q(x_q)) against unit keys and the queue, the InfoNCE loss, and its
   gradient put in f_q's (zeroed) gradients through the normalization: ∂L/∂z = (g − q(q·g)) / |z|. */
static mlsys_status mlsys__moco_query_grad(mlsys_contracode_moco *m, const int32_t *ids_q, const int *len_q, int B, int T,
                                           const float *keys, double *loss, double *a1, double *a5) {
  int d = m->q.cfg.d_rep, b, c;
  float *zq = (float *)malloc((size_t)B * d * sizeof(float)), *dq = (float *)malloc((size_t)B * d * sizeof(float));
  float *nq = (float *)malloc((size_t)B * sizeof(float));
  mlsys_status s;
  if (!zq || !dq || !nq) {
    s = mlsys_set_error(MLSYS_ERR_NOMEM, "contracode: moco_step: out of memory");
    goto done;
  }
  if ((s = mlsys_contracode_enc_forward(&m->q, ids_q, len_q, B, T, 1, 1, &m->rng, zq)) != MLSYS_OK) goto done;
  mlsys__moco_normalize(zq, nq, B, d);
  *loss = mlsys_contracode_infonce(zq, keys, m->queue, B, m->mc.K, d, m->mc.T, dq, a1, a5);
  for (b = 0; b < B; b++) {
    float *g = dq + (size_t)b * d;
    const float *qn = zq + (size_t)b * d;
    double dot = 0;
    for (c = 0; c < d; c++) dot += (double)qn[c] * g[c];
    for (c = 0; c < d; c++) g[c] = (float)((g[c] - qn[c] * dot) / nq[b]);
  }
  mlsys_contracode_enc_zero_grad(&m->q);
  s = mlsys_contracode_enc_backward(&m->q, dq);
done:
  free(zq), free(dq), free(nq);
  return s;
}

MLSYS_DEF mlsys_status mlsys_contracode_moco_step(mlsys_contracode_moco *m, const int32_t *ids_q, const int *len_q,
                                                  const int32_t *ids_k, const int *len_k, int B, int T,
                                                  mlsys_contracode_moco_stats *st) {
  float *zk = NULL, *nk = NULL;
  double loss = 0, a1 = 0, a5 = 0, lr;
  mlsys_status s;
  if (!m || !ids_q || !len_q || !ids_k || !len_k) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: moco_step: NULL argument");
  if (B < 1 || m->mc.K % B)
    return mlsys_set_error(MLSYS_ERR_ARG, "contracode: moco_step: the queue size K = %d is not a multiple of the batch B = %d",
                           m->mc.K, B);
  /* both views are checked before any state changes */
  if ((s = mlsys__enc_check_input(&m->q.cfg, "moco_step (query view)", ids_q, len_q, B, T)) != MLSYS_OK) return s;
  if ((s = mlsys__enc_check_input(&m->k.cfg, "moco_step (key view)", ids_k, len_k, B, T)) != MLSYS_OK) return s;
  zk = (float *)malloc((size_t)B * m->k.cfg.d_rep * sizeof(float));
  nk = (float *)malloc((size_t)B * sizeof(float));
  if (!zk || !nk) {
    s = mlsys_set_error(MLSYS_ERR_NOMEM, "contracode: moco_step: out of memory");
    goto done;
  }
  /* keys first: momentum from the current θ_q, then f_k in train mode (its dropout draws come before the query's) */
  mlsys__moco_momentum(m->k.params, m->q.params, m->q.nparams, m->mc.m);
  if ((s = mlsys_contracode_enc_forward(&m->k, ids_k, len_k, B, T, 1, 1, &m->rng, zk)) != MLSYS_OK) goto done;
  mlsys__moco_normalize(zk, nk, B, m->k.cfg.d_rep);
  if ((s = mlsys__moco_query_grad(m, ids_q, len_q, B, T, zk, &loss, &a1, &a5)) != MLSYS_OK) goto done;
  lr = mlsys__moco_lr(&m->mc, m->step);
  mlsys_adamw_step(m->q.params, m->q.grads, m->adam_m, m->adam_v, m->q.nparams, m->step + 1, (float)lr, m->mc.beta1,
                   m->mc.beta2, m->mc.eps, m->mc.weight_decay);
  m->ptr = mlsys__moco_enqueue(m->queue, m->mc.K, m->k.cfg.d_rep, m->ptr, zk, B);
  m->step++;
  if (st) st->loss = loss, st->acc1 = a1, st->acc5 = a5, st->lr = lr, st->queue_ptr = m->ptr;
done:
  free(zk), free(nk);
  return s;
}

/* Checkpoint: "MLSYSCCM" v1, the two configs, step, ptr, RNG, nparams, then q params, k params, Adam m and v, the queue,
   and a CRC-32C of everything before it. Native byte order (little-endian on every supported target). */
#define MLSYS__MOCO_MAGIC "MLSYSCCM"
typedef struct {
  FILE *f;
  uint32_t crc;
  int ok;
} mlsys__moco_io;
static void mlsys__moco_w(mlsys__moco_io *io, const void *p, size_t n) {
  if (!io->ok) return;
  io->crc = mlsys_crc32c(io->crc, p, n);
  io->ok = fwrite(p, 1, n, io->f) == n;
}
static int mlsys__moco_r(mlsys__moco_io *io, void *p, size_t n) {
  if (fread(p, 1, n, io->f) != n) return 0;
  io->crc = mlsys_crc32c(io->crc, p, n);
  return 1;
}
static void mlsys__moco_w_cfgs(mlsys__moco_io *io, const mlsys_contracode_enc_cfg *e, const mlsys_contracode_moco_cfg *c) {
  int32_t iv[10] = {e->type, e->vocab, e->d_model, e->n_layers, e->n_heads, e->d_ff, e->d_rep, e->max_len, e->pad_id, e->pool};
  int32_t mv[3] = {c->K, c->warmup, c->total_steps};
  float fv[8] = {e->dropout, c->m, c->T, c->lr, c->beta1, c->beta2, c->eps, c->weight_decay};
  mlsys__moco_w(io, iv, sizeof iv);
  mlsys__moco_w(io, mv, sizeof mv);
  mlsys__moco_w(io, fv, sizeof fv);
}

MLSYS_DEF mlsys_status mlsys_contracode_moco_save(const mlsys_contracode_moco *m, const char *path) {
  mlsys__moco_io io;
  char *tmp;
  size_t n;
  uint32_t ver = 1;
  int32_t ptr;
  uint64_t np;
  if (!m || !path) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: moco_save: NULL argument");
  n = strlen(path) + 8;
  if (!(tmp = (char *)malloc(n))) return MLSYS_ERR_NOMEM;
  snprintf(tmp, n, "%s.tmp", path);
  io.f = fopen(tmp, "wb"), io.crc = 0, io.ok = io.f != NULL;
  if (!io.f) {
    free(tmp);
    return mlsys_set_error(MLSYS_ERR_IO, "contracode: %s: cannot open for writing", path);
  }
  ptr = m->ptr, np = m->q.nparams;
  mlsys__moco_w(&io, MLSYS__MOCO_MAGIC, 8);
  mlsys__moco_w(&io, &ver, 4);
  mlsys__moco_w_cfgs(&io, &m->q.cfg, &m->mc);
  mlsys__moco_w(&io, &m->step, 8);
  mlsys__moco_w(&io, &ptr, 4);
  mlsys__moco_w(&io, m->rng.s, sizeof m->rng.s);
  mlsys__moco_w(&io, &np, 8);
  mlsys__moco_w(&io, m->q.params, np * sizeof(float));
  mlsys__moco_w(&io, m->k.params, np * sizeof(float));
  mlsys__moco_w(&io, m->adam_m, np * sizeof(float));
  mlsys__moco_w(&io, m->adam_v, np * sizeof(float));
  mlsys__moco_w(&io, m->queue, (size_t)m->mc.K * m->q.cfg.d_rep * sizeof(float));
  if (io.ok) {
    uint32_t crc = io.crc;
    io.ok = fwrite(&crc, 1, 4, io.f) == 4;
  }
  io.ok &= fclose(io.f) == 0;
  if (io.ok && rename(tmp, path) != 0) io.ok = 0;
  if (!io.ok) {
    remove(tmp);
    free(tmp);
    return mlsys_set_error(MLSYS_ERR_IO, "contracode: %s: write failed", path);
  }
  free(tmp);
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_contracode_moco_load(const char *path, mlsys_pool *pool, mlsys_contracode_moco **out) {
  mlsys__moco_io io = {NULL, 0, 1};
  mlsys_contracode_moco *m = NULL;
  mlsys_contracode_enc_cfg ec;
  mlsys_contracode_moco_cfg mc;
  char magic[8];
  uint32_t ver, crc;
  int32_t iv[10], mv[3], ptr;
  float fv[8];
  int64_t step;
  uint64_t rs[4], np;
  const char *what = NULL, *why;
  mlsys_status st;
  if (!path || !out) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: moco_load: NULL argument");
  *out = NULL;
  if (!(io.f = fopen(path, "rb"))) return mlsys_set_error(MLSYS_ERR_IO, "contracode: %s: cannot open", path);
  if (!mlsys__moco_r(&io, magic, 8) || memcmp(magic, MLSYS__MOCO_MAGIC, 8)) {
    fclose(io.f);
    return mlsys_set_error(MLSYS_ERR_PARSE, "contracode: %s: not a ContraCode MoCo checkpoint (bad magic)", path);
  }
  if (!mlsys__moco_r(&io, &ver, 4)) what = "the version";
  else if (ver != 1) {
    fclose(io.f);
    return mlsys_set_error(MLSYS_ERR_PARSE, "contracode: %s: checkpoint version %u (this build reads 1)", path, (unsigned)ver);
  } else if (!mlsys__moco_r(&io, iv, sizeof iv) || !mlsys__moco_r(&io, mv, sizeof mv) || !mlsys__moco_r(&io, fv, sizeof fv))
    what = "the configs";
  else if (!mlsys__moco_r(&io, &step, 8) || !mlsys__moco_r(&io, &ptr, 4) || !mlsys__moco_r(&io, rs, sizeof rs) ||
           !mlsys__moco_r(&io, &np, 8))
    what = "the header";
  if (what) {
    fclose(io.f);
    return mlsys_set_error(MLSYS_ERR_PARSE, "contracode: %s: truncated in %s", path, what);
  }
  memset(&ec, 0, sizeof ec);
  ec.type = iv[0], ec.vocab = iv[1], ec.d_model = iv[2], ec.n_layers = iv[3], ec.n_heads = iv[4], ec.d_ff = iv[5];
  ec.d_rep = iv[6], ec.max_len = iv[7], ec.pad_id = iv[8], ec.pool = iv[9], ec.dropout = fv[0];
  mc.K = mv[0], mc.warmup = mv[1], mc.total_steps = mv[2];
  mc.m = fv[1], mc.T = fv[2], mc.lr = fv[3], mc.beta1 = fv[4], mc.beta2 = fv[5], mc.eps = fv[6], mc.weight_decay = fv[7];
  if ((why = mlsys__enc_cfg_problem(&ec)) || mc.K < 1 || ptr < 0 || ptr >= mc.K || step < 0 ||
      np != mlsys_contracode_enc_nparams(&ec, 1) || (uint64_t)mc.K * (uint64_t)ec.d_rep > ((uint64_t)1 << 40)) {
    fclose(io.f);
    return mlsys_set_error(MLSYS_ERR_PARSE, "contracode: %s: damaged header (%s)", path,
                           why ? why : np != mlsys_contracode_enc_nparams(&ec, 1) ? "parameter count does not match the config"
                                                                                 : "queue size or pointer out of range");
  }
  { /* the file must be as long as the header says before anything that size is allocated */
    const uint64_t hdr = 8 + 4 + 40 + 12 + 32 + 8 + 4 + 32 + 8, enc = np * 4, q = (uint64_t)mc.K * (uint64_t)ec.d_rep * 4;
    const uint64_t ends[5] = {hdr + enc, hdr + 2 * enc, hdr + 4 * enc, hdr + 4 * enc + q, hdr + 4 * enc + q + 4};
    static const char *const names[5] = {"the query encoder", "the key encoder", "Adam's moments", "the queue", "the checksum"};
    long here = ftell(io.f), size;
    int k;
    if (here < 0 || fseek(io.f, 0, SEEK_END) != 0 || (size = ftell(io.f)) < 0 || fseek(io.f, here, SEEK_SET) != 0) {
      fclose(io.f);
      return mlsys_set_error(MLSYS_ERR_IO, "contracode: %s: cannot seek", path);
    }
    for (k = 0; k < 5; k++)
      if ((uint64_t)size < ends[k]) {
        fclose(io.f);
        return mlsys_set_error(MLSYS_ERR_PARSE, "contracode: %s: truncated in %s (%ld bytes, the header describes %llu)", path,
                               names[k], size, (unsigned long long)ends[4]);
      }
  }
  st = mlsys__moco_alloc(&ec, &mc, 0, pool, &m);
  if (st != MLSYS_OK) {
    fclose(io.f);
    if (st != MLSYS_ERR_ARG) return st;
    { /* copied: the message buffer is the one being written */
      char why_buf[256];
      const char *msg = mlsys_last_error(), *p = strstr(msg, "moco_new: ");
      snprintf(why_buf, sizeof why_buf, "%.200s", p ? p + 10 : msg);
      return mlsys_set_error(MLSYS_ERR_PARSE, "contracode: %s: damaged header (%s)", path, why_buf);
    }
  }
  if (!mlsys__moco_r(&io, m->q.params, np * sizeof(float))) what = "the query encoder";
  else if (!mlsys__moco_r(&io, m->k.params, np * sizeof(float))) what = "the key encoder";
  else if (!mlsys__moco_r(&io, m->adam_m, np * sizeof(float)) || !mlsys__moco_r(&io, m->adam_v, np * sizeof(float)))
    what = "Adam's moments";
  else if (!mlsys__moco_r(&io, m->queue, (size_t)mc.K * ec.d_rep * sizeof(float))) what = "the queue";
  else if (fread(&crc, 1, 4, io.f) != 4) what = "the checksum";
  if (what) {
    fclose(io.f);
    mlsys_contracode_moco_free(m);
    return mlsys_set_error(MLSYS_ERR_PARSE, "contracode: %s: truncated in %s", path, what);
  }
  if (crc != io.crc || fgetc(io.f) != EOF) {
    int trailing = crc == io.crc;
    fclose(io.f);
    mlsys_contracode_moco_free(m);
    return mlsys_set_error(MLSYS_ERR_PARSE, "contracode: %s: %s", path,
                           trailing ? "trailing bytes after the checksum" : "checksum mismatch (the file is damaged)");
  }
  fclose(io.f);
  m->step = step, m->ptr = ptr;
  memcpy(m->rng.s, rs, sizeof rs);
  *out = m;
  return MLSYS_OK;
}

/* [6d: the body table: mlsys__enc_body_of(type)] */
static const mlsys__enc_body *mlsys__enc_body_of(int type) {
  switch (type) {
    case MLSYS_CONTRACODE_ENC_TRANSFORMER: return &mlsys__enc_transformer_body;
    case MLSYS_CONTRACODE_ENC_BILSTM: return &mlsys__enc_bilstm_body;
    case MLSYS_CONTRACODE_ENC_BOW: return &mlsys__enc_bow_body;
    default: return NULL;
  }
}

/* [end of section 6 implementation] */

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

/* --- the offline clone set ------------------------------------------------------------------------------------ */

typedef struct {
  int lib, file;
  const char *name;   /* points into names[] of the builder */
} mlsys__cc_entry;
static int mlsys__cc_entry_cmp(const void *x, const void *y) {
  const mlsys__cc_entry *a = (const mlsys__cc_entry *)x, *b = (const mlsys__cc_entry *)y;
  int c = strcmp(a->name, b->name);
  if (c) return c;
  if (a->lib != b->lib) return a->lib < b->lib ? -1 : 1;
  return a->file < b->file ? -1 : a->file > b->file;
}

/* The API name of a module path, or NULL when the name rules leave the file out. */
static char *mlsys__cc_api_name(const char *library, const char *path) {
  const char *base = path, *p, *dash;
  size_t n, i, ln;
  char *name;
  for (p = path; *p; p++)
    if (*p == '/') {
      /* a directory component called internal (ramda's es/internal) */
      if ((size_t)(p - base) == 8 && !strncmp(base, "internal", 8)) return NULL;
      base = p + 1;
    }
  n = strlen(base);
  if (n <= 3 || strcmp(base + n - 3, ".js")) return NULL;
  n -= 3;
  if (base[0] == '_' || (n >= 5 && !strncmp(base, "index", 5) && (n == 5 || base[5] == '-' || base[5] == '.')))
    return NULL;
  if (n >= 7 && !strncmp(base, "wrapper", 7)) return NULL;
  for (i = 0; i < n; i++) {
    char c = base[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '$' || c == '_' || (i && c >= '0' && c <= '9')))
      return NULL;
  }
  /* the library's own name ("lodash" for lodash-es) is its all-in-one wrapper */
  dash = strchr(library, '-');
  ln = dash ? (size_t)(dash - library) : strlen(library);
  if (ln == n && !strncmp(library, base, n)) return NULL;
  if (!(name = (char *)malloc(n + 1))) return NULL;
  memcpy(name, base, n);
  name[n] = 0;
  return name;
}

MLSYS_DEF void mlsys_contracode_clone_set_free(mlsys_contracode_clone_set *s) {
  int i;
  if (!s) return;
  for (i = 0; i < s->nprograms; i++) free(s->src ? s->src[i] : NULL);
  for (i = 0; i < s->nproblems; i++) free(s->problem_name ? s->problem_name[i] : NULL);
  for (i = 0; i < s->nlibs; i++) free(s->lib_name ? s->lib_name[i] : NULL);
  free(s->src), free(s->len), free(s->problem), free(s->lib), free(s->problem_name), free(s->problem_nlibs);
  free(s->lib_name);
  memset(s, 0, sizeof *s);
}

MLSYS_DEF mlsys_status mlsys_contracode_clone_set_build(const mlsys_contracode_clone_file *files, int nfiles,
                                                        int min_libs, mlsys_contracode_clone_set *out) {
  mlsys__cc_entry *e = NULL;
  char **names = NULL;
  int *libof = NULL, ne = 0, i, j, k, nl = 0;
  mlsys_status st = MLSYS_OK;
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: clone_set_build: NULL output");
  memset(out, 0, sizeof *out);
  if (nfiles < 0 || (nfiles && !files) || min_libs < 1)
    return mlsys_set_error(MLSYS_ERR_ARG, "contracode: clone_set_build: bad arguments (nfiles %d, min_libs %d)", nfiles,
                           min_libs);
  for (i = 0; i < nfiles; i++)
    if (!files[i].library || !files[i].path || (!files[i].src && files[i].len))
      return mlsys_set_error(MLSYS_ERR_ARG, "contracode: clone_set_build: file %d has a NULL library, path or source", i);
  e = (mlsys__cc_entry *)mlsys_calloc((size_t)nfiles + 1, sizeof *e);
  names = (char **)mlsys_calloc((size_t)nfiles + 1, sizeof *names);
  libof = (int *)mlsys_calloc((size_t)nfiles + 1, sizeof *libof);
  out->lib_name = (char **)mlsys_calloc((size_t)nfiles + 1, sizeof(char *));
  if (!e || !names || !libof || !out->lib_name) {
    st = mlsys_set_error(MLSYS_ERR_NOMEM, "contracode: clone_set_build: out of memory");
    goto done;
  }
  for (i = 0; i < nfiles; i++) {
    for (j = 0; j < nl && strcmp(out->lib_name[j], files[i].library); j++) {
    }
    if (j == nl) {
      if (!(out->lib_name[nl] = mlsys_strdup(files[i].library))) {
        st = mlsys_set_error(MLSYS_ERR_NOMEM, "contracode: clone_set_build: out of memory");
        goto done;
      }
      out->nlibs = ++nl;
    }
    libof[i] = j;
    if (!(names[i] = mlsys__cc_api_name(files[i].library, files[i].path))) {
      out->nskipped++;
      continue;
    }
    e[ne].lib = j, e[ne].file = i, e[ne].name = names[i], ne++;
  }
  qsort(e, (size_t)ne, sizeof *e, mlsys__cc_entry_cmp);
  /* drop a library's second file of a name, then count the libraries of each name */
  for (i = j = 0; i < ne; i++) {
    if (j && e[j - 1].lib == e[i].lib && !strcmp(e[j - 1].name, e[i].name)) {
      out->nskipped++;
      continue;
    }
    e[j++] = e[i];
  }
  ne = j;
  out->src = (char **)mlsys_calloc((size_t)ne + 1, sizeof(char *));
  out->len = (size_t *)mlsys_calloc((size_t)ne + 1, sizeof(size_t));
  out->problem = (int *)mlsys_calloc((size_t)ne + 1, sizeof(int));
  out->lib = (int *)mlsys_calloc((size_t)ne + 1, sizeof(int));
  out->problem_name = (char **)mlsys_calloc((size_t)ne + 1, sizeof(char *));
  out->problem_nlibs = (int *)mlsys_calloc((size_t)ne + 1, sizeof(int));
  if (!out->src || !out->len || !out->problem || !out->lib || !out->problem_name || !out->problem_nlibs) {
    st = mlsys_set_error(MLSYS_ERR_NOMEM, "contracode: clone_set_build: out of memory");
    goto done;
  }
  for (i = 0; i < ne; i = j) {
    for (j = i; j < ne && !strcmp(e[j].name, e[i].name); j++) {
    }
    if (j - i < min_libs) {
      out->nsingle++;
      continue;
    }
    if (!(out->problem_name[out->nproblems] = mlsys_strdup(e[i].name))) {
      st = mlsys_set_error(MLSYS_ERR_NOMEM, "contracode: clone_set_build: out of memory");
      goto done;
    }
    out->problem_nlibs[out->nproblems] = j - i;
    for (k = i; k < j; k++) {
      const mlsys_contracode_clone_file *f = files + e[k].file;
      mlsys_contracode_js_ast a;
      mlsys_contracode_js_print_opts po = {1, 2, 0, 0, 0};
      int p = out->nprograms;
      if ((st = mlsys_contracode_js_parse(f->src ? f->src : "", f->len, MLSYS_CONTRACODE_JS_MODULE, &a)) != MLSYS_OK) {
        st = mlsys_prefix_error("contracode: clone_set_build: %s/%s", f->library, f->path);
        out->nproblems++;
        goto done;
      }
      st = mlsys_contracode_js_print(&a, &po, &out->src[p], &out->len[p]);
      mlsys_contracode_js_free(&a);
      if (st != MLSYS_OK) {
        out->nproblems++;
        goto done;
      }
      out->problem[p] = out->nproblems;
      out->lib[p] = e[k].lib;
      out->nprograms++;
    }
    out->nproblems++;
  }
  if (!out->nproblems)
    st = mlsys_set_error(MLSYS_ERR_ARG, "contracode: clone_set_build: no API name is in %d or more of the %d "
                         "libraries (%d files, %d left out by the name rules)", min_libs, nl, nfiles, out->nskipped);
done:
  for (i = 0; names && i < nfiles; i++) free(names[i]);
  free(names), free(e), free(libof);
  if (st != MLSYS_OK) mlsys_contracode_clone_set_free(out);
  return st;
}

/* --- pairs ----------------------------------------------------------------------------------------------------- */

MLSYS_DEF mlsys_status mlsys_contracode_clone_pairs(const int *problem, int n, int mode, uint64_t seed,
                                                    mlsys_contracode_clone_pair **out, size_t *npos, size_t *nneg) {
  int P = 0, i, j, *cnt = NULL, *start = NULL, *mem = NULL;
  size_t np = 0, nn = 0, k, cap, nsame = 0;
  mlsys_contracode_clone_pair *v = NULL;
  mlsys_rng r;
  mlsys_status st = MLSYS_OK;
  if (!out || !npos || !nneg) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: clone_pairs: NULL output");
  *out = NULL, *npos = *nneg = 0;
  if (n < 0 || (n && !problem) || (mode != MLSYS_CONTRACODE_PAIRS_DISTINCT && mode != MLSYS_CONTRACODE_PAIRS_FAITHFUL))
    return mlsys_set_error(MLSYS_ERR_ARG, "contracode: clone_pairs: bad arguments (n %d, mode %d)", n, mode);
  for (i = 0; i < n; i++) {
    if (problem[i] < 0 || problem[i] == INT32_MAX)
      return mlsys_set_error(MLSYS_ERR_ARG, "contracode: clone_pairs: program %d has problem id %d", i, problem[i]);
    if (problem[i] + 1 > P) P = problem[i] + 1;
  }
  cnt = (int *)mlsys_calloc((size_t)P + 1, sizeof(int));
  start = (int *)mlsys_calloc((size_t)P + 2, sizeof(int));
  mem = (int *)mlsys_calloc((size_t)n + 1, sizeof(int));
  if (!cnt || !start || !mem) {
    st = mlsys_set_error(MLSYS_ERR_NOMEM, "contracode: clone_pairs: out of memory");
    goto done;
  }
  for (i = 0; i < n; i++) cnt[problem[i]]++;
  for (i = 0; i < P; i++) start[i + 1] = start[i] + cnt[i];
  for (i = 0; i < P; i++) cnt[i] = 0;
  for (i = 0; i < n; i++) mem[start[problem[i]] + cnt[problem[i]]++] = i;   /* members in index order */
  for (i = 0; i < P; i++) {
    size_t c = (size_t)cnt[i];
    nsame += c * (c - (c > 0)) / 2;
    if (c >= 2) np += mode == MLSYS_CONTRACODE_PAIRS_FAITHFUL ? (c - 1) * (c - 1) : c * (c - 1) / 2;
  }
  if (!np) {
    st = mlsys_set_error(MLSYS_ERR_ARG, "contracode: clone_pairs: no problem has two programs (%d programs)", n);
    goto done;
  }
  if ((size_t)n * (size_t)(n - 1) / 2 == nsame) {
    st = mlsys_set_error(MLSYS_ERR_ARG, "contracode: clone_pairs: every program has the same problem: no negatives");
    goto done;
  }
  if (!(v = (mlsys_contracode_clone_pair *)mlsys_calloc(2 * np, sizeof *v))) {
    st = mlsys_set_error(MLSYS_ERR_NOMEM, "contracode: clone_pairs: out of memory");
    goto done;
  }
  k = 0;
  for (i = 0; i < P; i++) {
    const int *m = mem + start[i], c = cnt[i];
    int a, b;
    if (mode == MLSYS_CONTRACODE_PAIRS_FAITHFUL) {
      for (a = 0; a + 1 < c; a++)
        for (b = 1; b < c; b++) v[k].a = m[a], v[k].b = m[b], v[k++].label = 1;
    } else {
      for (a = 0; a < c; a++)
        for (b = a + 1; b < c; b++) v[k].a = m[a], v[k].b = m[b], v[k++].label = 1;
    }
  }
  mlsys_rng_seed(&r, seed);
  if (mode == MLSYS_CONTRACODE_PAIRS_FAITHFUL) {
    /* problems 0..P−2 hold programs mem[0 .. start[P−1]), problems 1..P−1 hold mem[start[1] .. n) */
    size_t na = (size_t)start[P - 1], nb = (size_t)(n - start[1]);
    if (!na || !nb) {
      st = mlsys_set_error(MLSYS_ERR_ARG, "contracode: clone_pairs: faithful negatives need programs in two problems");
      goto done;
    }
    for (nn = 0; nn < np; nn++, k++) {
      v[k].a = mem[mlsys_rng_below(&r, na)];
      v[k].b = mem[(size_t)start[1] + mlsys_rng_below(&r, nb)];
      v[k].label = 0;
    }
  } else {
    size_t total = (size_t)n * (size_t)(n - 1) / 2 - nsame, want = np < total ? np : total;
    if (2 * want >= total) {
      /* most negatives are wanted: list them all and keep a seeded partial shuffle's prefix */
      mlsys_contracode_clone_pair *all = (mlsys_contracode_clone_pair *)mlsys_calloc(total, sizeof *all);
      size_t t = 0;
      if (!all) {
        st = mlsys_set_error(MLSYS_ERR_NOMEM, "contracode: clone_pairs: out of memory");
        goto done;
      }
      for (i = 0; i < n; i++)
        for (j = i + 1; j < n; j++)
          if (problem[i] != problem[j]) all[t].a = i, all[t++].b = j;
      for (t = 0; t < want; t++) {
        size_t x = t + (size_t)mlsys_rng_below(&r, total - t);
        mlsys_contracode_clone_pair tmp = all[t];
        all[t] = all[x], all[x] = tmp;
        v[k] = all[t], v[k++].label = 0;
      }
      free(all);
      nn = want;
    } else {
      /* few of many: rejection sampling with a hash set of the drawn pairs (at most half are taken, so each draw
         succeeds with probability ≥ ½ among different-problem pairs) */
      uint64_t *hs;
      for (cap = 16; cap < 4 * want; cap *= 2) {
      }
      if (!(hs = (uint64_t *)malloc(cap * sizeof *hs))) {
        st = mlsys_set_error(MLSYS_ERR_NOMEM, "contracode: clone_pairs: out of memory");
        goto done;
      }
      memset(hs, 0xff, cap * sizeof *hs);
      while (nn < want) {
        int a = (int)mlsys_rng_below(&r, (uint64_t)n), b = (int)mlsys_rng_below(&r, (uint64_t)n);
        uint64_t key, h;
        if (a == b || problem[a] == problem[b]) continue;
        if (a > b) i = a, a = b, b = i;
        key = (uint64_t)a * (uint64_t)n + (uint64_t)b;
        for (h = (key * 0x9e3779b97f4a7c15ull) & (cap - 1); hs[h] != UINT64_MAX && hs[h] != key; h = (h + 1) & (cap - 1)) {
        }
        if (hs[h] == key) continue;
        hs[h] = key;
        v[k].a = a, v[k].b = b, v[k++].label = 0;
        nn++;
      }
      free(hs);
    }
  }
  *out = v, *npos = np, *nneg = nn;
  v = NULL;
done:
  free(v), free(cnt), free(start), free(mem);
  return st;
}

/* --- scoring and the evaluation driver -------------------------------------------------------------------------- */

MLSYS_DEF mlsys_status mlsys_contracode_clone_adversary(int kind, mlsys_contracode_aug_cfg *c) {
  mlsys_status st;
  if (!c) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: clone_adversary: NULL config");
  if (kind != MLSYS_CONTRACODE_ADV_TERSER && kind != MLSYS_CONTRACODE_ADV_SAFE)
    return mlsys_set_error(MLSYS_ERR_ARG, "contracode: clone_adversary: unknown adversary %d", kind);
  if ((st = mlsys_contracode_aug_preset(kind == MLSYS_CONTRACODE_ADV_SAFE ? MLSYS_CONTRACODE_AUG_SAFE
                                                                          : MLSYS_CONTRACODE_AUG_REPO_EFFECTIVE, c)))
    return st;
  if (kind == MLSYS_CONTRACODE_ADV_TERSER) {
    c->p_pass[MLSYS_CONTRACODE_AUG_RENAME_PARAM] = 0;
    c->p_pass[MLSYS_CONTRACODE_AUG_INSERT_VAR] = 0;
    c->p_block = 0.75;   /* spec §3.9: terser with p = .75 */
    c->p_beautify = 0;
    c->p_terse = 1;
    c->p_lines = 0;
    /* terser's other output options stay off too: this adversary's print is fixed (and bench/RESULTS.md §17 was
       measured so) */
    c->p_braces = c->p_quote_keys = c->p_keep_quoted = 0;
    memset(c->p_quote_style, 0, sizeof c->p_quote_style);
  }
  c->flags = MLSYS_CONTRACODE_JS_MODULE;
  return MLSYS_OK;
}

typedef struct {
  int32_t *ids;   /* EDIT: in order; BOW: sorted */
  int n;
  double norm;    /* BOW, EMBED: Euclidean norm */
  float *vec;     /* EMBED: points into the batch's matrix */
} mlsys__cc_feat;

static int mlsys__cc_i32_cmp(const void *x, const void *y) {
  int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
  return a < b ? -1 : a > b;
}

static mlsys_status mlsys__cc_featurize(const mlsys_contracode_scorer *sc, const char *src, size_t len,
                                        mlsys__cc_feat *f) {
  char *norm = NULL;
  size_t nn = 0, nids = 0, i;
  int32_t *ids = NULL, *full;
  int bos = mlsys_contracode_sp_id(sc->sp, "<s>"), eos = mlsys_contracode_sp_id(sc->sp, "</s>");
  mlsys_status st;
  memset(f, 0, sizeof *f);
  if ((st = mlsys_contracode_normalize_program(src, len, &norm, &nn)) != MLSYS_OK) return st;
  st = mlsys_contracode_sp_encode(sc->sp, norm, nn, &ids, &nids, NULL);
  free(norm);
  if (st != MLSYS_OK) return st;
  if (nids > (size_t)INT32_MAX - 2) {
    free(ids);
    return mlsys_set_error(MLSYS_ERR_ARG, "contracode: clone scorer: a program has too many tokens");
  }
  if (!(full = (int32_t *)malloc((nids + 2) * sizeof *full))) {
    free(ids);
    return mlsys_set_error(MLSYS_ERR_NOMEM, "contracode: clone scorer: out of memory");
  }
  f->n = 0;
  if (bos >= 0) full[f->n++] = bos;
  for (i = 0; i < nids; i++) full[f->n++] = ids[i];
  if (eos >= 0) full[f->n++] = eos;
  free(ids);
  f->ids = full;
  if (sc->kind == MLSYS_CONTRACODE_SCORE_BOW) {
    int a, b;
    double s = 0;
    qsort(full, (size_t)f->n, sizeof *full, mlsys__cc_i32_cmp);
    for (a = 0; a < f->n; a = b) {
      for (b = a; b < f->n && full[b] == full[a]; b++) {
      }
      s += (double)(b - a) * (double)(b - a);
    }
    f->norm = sqrt(s);
  }
  return MLSYS_OK;
}

static float mlsys__cc_sim(const mlsys_contracode_scorer *sc, const mlsys__cc_feat *x, const mlsys__cc_feat *y) {
  if (sc->kind == MLSYS_CONTRACODE_SCORE_EDIT) return (float)mlsys_contracode_lev_similarity(x->ids, x->n, y->ids, y->n);
  if (sc->kind == MLSYS_CONTRACODE_SCORE_BOW) {
    int i = 0, j = 0;
    double dot = 0;
    if (x->norm == 0 || y->norm == 0) return x->norm == y->norm ? 1.0f : 0.0f;
    while (i < x->n && j < y->n) {
      if (x->ids[i] < y->ids[j]) i++;
      else if (x->ids[i] > y->ids[j]) j++;
      else {
        int32_t t = x->ids[i];
        int ci = 0, cj = 0;
        while (i < x->n && x->ids[i] == t) i++, ci++;
        while (j < y->n && y->ids[j] == t) j++, cj++;
        dot += (double)ci * (double)cj;
      }
    }
    return (float)(dot / (x->norm * y->norm));
  } else {
    double dot = 0;
    int k;
    if (x->norm == 0 || y->norm == 0) return 0.0f;
    for (k = 0; k < sc->dim; k++) dot += (double)x->vec[k] * (double)y->vec[k];
    return (float)(dot / (x->norm * y->norm));
  }
}

/* Features of n strings; for EMBED the vectors go to *mat (n × dim, malloc'd), embedded in batches. */
static mlsys_status mlsys__cc_featurize_all(const mlsys_contracode_scorer *sc, const char *const *s, const size_t *l,
                                            int n, mlsys__cc_feat *f, float **mat) {
  int i;
  mlsys_status st = MLSYS_OK;
  *mat = NULL;
  if (sc->kind != MLSYS_CONTRACODE_SCORE_EMBED) {
    for (i = 0; i < n && st == MLSYS_OK; i++) st = mlsys__cc_featurize(sc, s[i], l[i], f + i);
    return st;
  }
  if (!(*mat = (float *)mlsys_calloc((size_t)(n ? n : 1) * (size_t)sc->dim, sizeof(float))))
    return mlsys_set_error(MLSYS_ERR_NOMEM, "contracode: clone scorer: out of memory");
  for (i = 0; i < n && st == MLSYS_OK; i += 64) {
    int b = n - i < 64 ? n - i : 64;
    st = sc->embed(sc->embed_ctx, s + i, l + i, b, *mat + (size_t)i * (size_t)sc->dim);
  }
  for (i = 0; i < n && st == MLSYS_OK; i++) {
    double q = 0;
    int k;
    f[i].vec = *mat + (size_t)i * (size_t)sc->dim;
    for (k = 0; k < sc->dim; k++) {
      if (f[i].vec[k] != f[i].vec[k])
        return mlsys_set_error(MLSYS_ERR_ARG, "contracode: clone scorer: the embedding of program %d has a NaN", i);
      q += (double)f[i].vec[k] * (double)f[i].vec[k];
    }
    f[i].norm = sqrt(q);
  }
  return st;
}

MLSYS_DEF mlsys_status mlsys_contracode_clone_sims(const char *const *src, const size_t *len, int nprog,
                                                   const mlsys_contracode_clone_pair *pairs, size_t npairs,
                                                   const mlsys_contracode_scorer *sc,
                                                   const mlsys_contracode_aug_cfg *adv, int nsamples, uint64_t seed,
                                                   float *natural, float *adv_sims) {
  mlsys__cc_feat *f = NULL, *vf = NULL;
  float *mat = NULL, *vmat = NULL;
  char **vs = NULL;
  size_t *vl = NULL, i;
  int *vrow = NULL, nfirst = 0, p, j, nv = 0;
  mlsys_status st = MLSYS_OK;
  if (!sc || !natural || (npairs && !pairs) || nprog < 0 || (nprog && (!src || !len)))
    return mlsys_set_error(MLSYS_ERR_ARG, "contracode: clone_sims: NULL argument");
  if (sc->kind < MLSYS_CONTRACODE_SCORE_EDIT || sc->kind > MLSYS_CONTRACODE_SCORE_EMBED)
    return mlsys_set_error(MLSYS_ERR_ARG, "contracode: clone_sims: unknown scorer kind %d", sc->kind);
  if (sc->kind == MLSYS_CONTRACODE_SCORE_EMBED ? (!sc->embed || sc->dim < 1) : !sc->sp)
    return mlsys_set_error(MLSYS_ERR_ARG, "contracode: clone_sims: the scorer needs %s",
                           sc->kind == MLSYS_CONTRACODE_SCORE_EMBED ? "an embed callback and dim >= 1" : "a tokenizer");
  if (adv && (nsamples < 1 || nsamples > 4096 || !adv_sims))
    return mlsys_set_error(MLSYS_ERR_ARG, "contracode: clone_sims: nsamples must be 1..4096 with adv_sims, got %d",
                           nsamples);
  for (i = 0; i < npairs; i++)
    if (pairs[i].a < 0 || pairs[i].a >= nprog || pairs[i].b < 0 || pairs[i].b >= nprog)
      return mlsys_set_error(MLSYS_ERR_ARG, "contracode: clone_sims: pair %zu (%d, %d) is outside %d programs", i,
                             pairs[i].a, pairs[i].b, nprog);
  if (!(f = (mlsys__cc_feat *)mlsys_calloc((size_t)nprog + 1, sizeof *f))) return MLSYS_ERR_NOMEM;
  if ((st = mlsys__cc_featurize_all(sc, src, len, nprog, f, &mat)) != MLSYS_OK) goto done;
  for (i = 0; i < npairs; i++) natural[i] = mlsys__cc_sim(sc, f + pairs[i].a, f + pairs[i].b);
  if (!adv) goto done;
  /* the variants of each program that is the first of a pair, drawn once */
  if (!(vrow = (int *)malloc(((size_t)nprog + 1) * sizeof(int)))) {
    st = MLSYS_ERR_NOMEM;
    goto done;
  }
  for (p = 0; p < nprog; p++) vrow[p] = -1;
  for (i = 0; i < npairs; i++)
    if (vrow[pairs[i].a] < 0) vrow[pairs[i].a] = nfirst++;
  nv = nfirst * nsamples;
  vs = (char **)mlsys_calloc((size_t)nv + 1, sizeof *vs);
  vl = (size_t *)mlsys_calloc((size_t)nv + 1, sizeof *vl);
  vf = (mlsys__cc_feat *)mlsys_calloc((size_t)nv + 1, sizeof *vf);
  if (!vs || !vl || !vf) {
    st = mlsys_set_error(MLSYS_ERR_NOMEM, "contracode: clone_sims: out of memory");
    goto done;
  }
  for (p = 0; p < nprog && st == MLSYS_OK; p++) {
    if (vrow[p] < 0) continue;
    for (j = 0; j < nsamples && st == MLSYS_OK; j++) {
      mlsys_rng r;
      int k = vrow[p] * nsamples + j;
      mlsys_rng_seed(&r, seed ^ ((uint64_t)(p + 1) * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)(j + 1) << 40));
      st = mlsys_contracode_augment(src[p], len[p], adv, &r, &vs[k], &vl[k], NULL);
      if (st != MLSYS_OK)
        st = mlsys_prefix_error("contracode: clone_sims: variant %d of program %d", j, p);
    }
  }
  if (st != MLSYS_OK) goto done;
  if ((st = mlsys__cc_featurize_all(sc, (const char *const *)vs, vl, nv, vf, &vmat)) != MLSYS_OK) goto done;
  for (i = 0; i < npairs; i++)
    for (j = 0; j < nsamples; j++)
      adv_sims[i * (size_t)nsamples + (size_t)j] =
          mlsys__cc_sim(sc, vf + (size_t)vrow[pairs[i].a] * (size_t)nsamples + (size_t)j, f + pairs[i].b);
done:
  for (p = 0; p < nprog && f; p++) free(f[p].ids);
  for (j = 0; j < nv; j++) {
    if (vf) free(vf[j].ids);
    if (vs) free(vs[j]);
  }
  free(f), free(vf), free(vs), free(vl), free(vrow), free(mat), free(vmat);
  return st;
}

MLSYS_DEF mlsys_status mlsys_contracode_clone_metrics_of(const float *score, const uint8_t *label, size_t n,
                                                         mlsys_contracode_clone_metrics *m) {
  mlsys_status st;
  size_t i;
  if (!m) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: clone_metrics: NULL output");
  memset(m, 0, sizeof *m);
  if ((st = mlsys_contracode_auroc(score, label, n, &m->auroc)) != MLSYS_OK) return st;
  if ((st = mlsys_contracode_average_precision(score, label, n, &m->ap)) != MLSYS_OK) return st;
  if ((st = mlsys_contracode_best_threshold_accuracy(score, label, n, 100, &m->accuracy, &m->threshold)) != MLSYS_OK)
    return st;
  for (i = 0; i < n; i++) label[i] ? m->npos++ : m->nneg++;
  m->se = mlsys_contracode_se_auc(m->auroc, m->npos, m->nneg);
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_contracode_clone_adv_metrics(const float *adv_sims, const uint8_t *label, size_t npairs,
                                                          int nsamples, int w, int start,
                                                          mlsys_contracode_clone_metrics *m) {
  int s0 = start < 0 ? 0 : start, s1 = start < 0 ? nsamples - w : start, s;
  size_t nw, i;
  float *sc;
  uint8_t *lb;
  mlsys_status st = MLSYS_OK;
  if (!m || (npairs && (!adv_sims || !label)))
    return mlsys_set_error(MLSYS_ERR_ARG, "contracode: clone_adv_metrics: NULL argument");
  if (nsamples < 1 || w < 1 || w > nsamples || start < -1 || start > nsamples - w)
    return mlsys_set_error(MLSYS_ERR_ARG, "contracode: clone_adv_metrics: window %d at %d does not fit %d samples", w,
                           start, nsamples);
  nw = (size_t)(s1 - s0 + 1);
  sc = (float *)malloc((npairs * nw + 1) * sizeof *sc);
  lb = (uint8_t *)malloc(npairs * nw + 1);
  if (!sc || !lb) {
    free(sc), free(lb);
    return mlsys_set_error(MLSYS_ERR_NOMEM, "contracode: clone_adv_metrics: out of memory");
  }
  for (s = s0; s <= s1 && st == MLSYS_OK; s++) {
    st = mlsys_contracode_adversarial_reduce(adv_sims, label, npairs, nsamples, s, w, sc + (size_t)(s - s0) * npairs);
    for (i = 0; i < npairs; i++) lb[(size_t)(s - s0) * npairs + i] = label[i] ? 1 : 0;
  }
  if (st == MLSYS_OK) st = mlsys_contracode_clone_metrics_of(sc, lb, npairs * nw, m);
  free(sc), free(lb);
  return st;
}

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
static int mlsys__cc_str_cmp(const void *x, const void *y) { return strcmp(*(char *const *)x, *(char *const *)y); }
MLSYS_DEF void mlsys_contracode_clone_files_free(mlsys_contracode_clone_file *files, int nfiles) {
  int i;
  for (i = 0; files && i < nfiles; i++) {
    free((char *)files[i].library);
    free((char *)files[i].path);
    free((char *)files[i].src);
  }
  free(files);
}
MLSYS_DEF mlsys_status mlsys_contracode_clone_read_dir(const char *library, const char *dir,
                                                       mlsys_contracode_clone_file **files, int *nfiles) {
  DIR *d;
  struct dirent *de;
  char **names = NULL;
  int nn = 0, cap = 0, i;
  mlsys_status st = MLSYS_OK;
  if (!library || !dir || !files || !nfiles || *nfiles < 0)
    return mlsys_set_error(MLSYS_ERR_ARG, "contracode: clone_read_dir: NULL argument");
  if (!(d = opendir(dir))) return mlsys_set_error(MLSYS_ERR_IO, "contracode: cannot open directory %s: %s", dir, strerror(errno));
  while ((de = readdir(d))) {
    size_t l = strlen(de->d_name);
    if (l < 4 || strcmp(de->d_name + l - 3, ".js")) continue;
    if (nn == cap) {
      char **t = (char **)realloc(names, (size_t)(cap = cap ? 2 * cap : 256) * sizeof *t);
      if (!t) {
        st = mlsys_set_error(MLSYS_ERR_NOMEM, "contracode: clone_read_dir: out of memory");
        break;
      }
      names = t;
    }
    if (!(names[nn] = mlsys_strdup(de->d_name))) {
      st = mlsys_set_error(MLSYS_ERR_NOMEM, "contracode: clone_read_dir: out of memory");
      break;
    }
    nn++;
  }
  closedir(d);
  if (st == MLSYS_OK && nn) {
    mlsys_contracode_clone_file *f;
    qsort(names, (size_t)nn, sizeof *names, mlsys__cc_str_cmp);
    f = (mlsys_contracode_clone_file *)realloc(*files, ((size_t)*nfiles + (size_t)nn) * sizeof *f);
    if (!f) st = mlsys_set_error(MLSYS_ERR_NOMEM, "contracode: clone_read_dir: out of memory");
    else *files = f;
    for (i = 0; i < nn && st == MLSYS_OK; i++) {
      size_t dl = strlen(dir), pl = dl + 1 + strlen(names[i]) + 1, len = 0;
      char *full = (char *)malloc(pl), *src = NULL;
      struct stat sb;
      if (!full) {
        st = mlsys_set_error(MLSYS_ERR_NOMEM, "contracode: clone_read_dir: out of memory");
        break;
      }
      snprintf(full, pl, "%s/%s", dir, names[i]);
      if (stat(full, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        free(full);
        continue;
      }
      st = mlsys_read_file(full, &src, &len);
      free(full);
      if (st != MLSYS_OK) break;
      f = *files + *nfiles;
      f->library = mlsys_strdup(library);
      f->path = names[i];
      names[i] = NULL;
      f->src = src;
      f->len = len;
      ++*nfiles;
      if (!f->library) st = mlsys_set_error(MLSYS_ERR_NOMEM, "contracode: clone_read_dir: out of memory");
    }
  }
  for (i = 0; i < nn; i++) free(names[i]);
  free(names);
  return st;
}

typedef struct { float key; size_t i; } mlsys__cc_keyed;
static int mlsys__cc_keyed_cmp(const void *x, const void *y) {   /* key descending, then index ascending */
  const mlsys__cc_keyed *a = (const mlsys__cc_keyed *)x, *b = (const mlsys__cc_keyed *)y;
  if (a->key != b->key) return a->key > b->key ? -1 : 1;
  return a->i < b->i ? -1 : a->i > b->i;
}
static int mlsys__cc_size_cmp(const void *x, const void *y) {
  size_t a = *(const size_t *)x, b = *(const size_t *)y;
  return a < b ? -1 : a > b;
}
MLSYS_DEF mlsys_status mlsys_contracode_hard_subset(const float *key, const uint8_t *label, size_t n, double frac,
                                                    size_t **idx, size_t *nidx) {
  mlsys__cc_keyed *neg;
  size_t i, nn = 0, keep, o = 0;
  if (!idx || !nidx || (n && (!key || !label)))
    return mlsys_set_error(MLSYS_ERR_ARG, "contracode: hard_subset: NULL argument");
  *idx = NULL, *nidx = 0;
  if (!(frac > 0 && frac <= 1)) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: hard_subset: frac %g is not in (0, 1]", frac);
  for (i = 0; i < n; i++) {
    if (label[i] == 0 && key[i] != key[i])
      return mlsys_set_error(MLSYS_ERR_ARG, "contracode: hard_subset: the key of negative %zu is NaN", i);
    if (!label[i]) nn++;
  }
  if (!(neg = (mlsys__cc_keyed *)malloc((nn + 1) * sizeof *neg)) || !(*idx = (size_t *)malloc((n + 1) * sizeof **idx))) {
    free(neg);
    return mlsys_set_error(MLSYS_ERR_NOMEM, "contracode: hard_subset: out of memory");
  }
  for (i = 0, nn = 0; i < n; i++)
    if (label[i]) (*idx)[o++] = i;
    else neg[nn].key = key[i], neg[nn++].i = i;
  qsort(neg, nn, sizeof *neg, mlsys__cc_keyed_cmp);
  keep = (size_t)ceil(frac * (double)nn - 1e-9);
  if (keep > nn) keep = nn;
  for (i = 0; i < keep; i++) (*idx)[o++] = neg[i].i;
  qsort(*idx, o, sizeof **idx, mlsys__cc_size_cmp);
  free(neg);
  *nidx = o;
  return MLSYS_OK;
}

MLSYS_DEF mlsys_status mlsys_contracode_clone_set_variants(const char *const *src, const size_t *len, int n,
                                                           const char *const *label,
                                                           const mlsys_contracode_aug_cfg *aug, uint64_t seed,
                                                           mlsys_contracode_clone_set *out) {
  int i, k = 0, t;
  mlsys_status st = MLSYS_OK;
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "contracode: clone_set_variants: NULL output");
  memset(out, 0, sizeof *out);
  if (n < 0 || (n && (!src || !len)) || !aug)
    return mlsys_set_error(MLSYS_ERR_ARG, "contracode: clone_set_variants: bad arguments (n %d)", n);
  out->src = (char **)mlsys_calloc(2 * (size_t)n + 1, sizeof(char *));
  out->len = (size_t *)mlsys_calloc(2 * (size_t)n + 1, sizeof(size_t));
  out->problem = (int *)mlsys_calloc(2 * (size_t)n + 1, sizeof(int));
  out->lib = (int *)mlsys_calloc(2 * (size_t)n + 1, sizeof(int));
  out->problem_name = (char **)mlsys_calloc((size_t)n + 1, sizeof(char *));
  out->problem_nlibs = (int *)mlsys_calloc((size_t)n + 1, sizeof(int));
  out->lib_name = (char **)mlsys_calloc(1, sizeof(char *));
  if (!out->src || !out->len || !out->problem || !out->lib || !out->problem_name || !out->problem_nlibs ||
      !out->lib_name || !(out->lib_name[0] = mlsys_strdup("variants"))) {
    st = mlsys_set_error(MLSYS_ERR_NOMEM, "contracode: clone_set_variants: out of memory");
    goto done;
  }
  out->nlibs = 1;
  for (i = 0; i < n && st == MLSYS_OK; i++) {
    char *v = NULL, name[32];
    size_t vn = 0;
    if (!src[i]) {
      out->nskipped++;
      continue;
    }
    for (t = 0; t < 8; t++) {
      mlsys_rng r;
      mlsys_rng_seed(&r, seed ^ ((uint64_t)(i + 1) * 0xd1b54a32d192ed03ull) ^ ((uint64_t)(t + 1) << 48));
      if (mlsys_contracode_augment(src[i], len[i], aug, &r, &v, &vn, NULL) != MLSYS_OK) break; /* does not parse */
      if (vn != len[i] || memcmp(v, src[i], vn)) break;
      free(v), v = NULL;
    }
    if (!v) {
      out->nskipped++;
      continue;
    }
    snprintf(name, sizeof name, "unit-%d", i);
    out->src[2 * k] = (char *)malloc(len[i] + 1);
    out->problem_name[k] = mlsys_strdup(label && label[i] ? label[i] : name);
    if (!out->src[2 * k] || !out->problem_name[k]) {
      free(v);
      free(out->problem_name[k]), out->problem_name[k] = NULL;
      st = mlsys_set_error(MLSYS_ERR_NOMEM, "contracode: clone_set_variants: out of memory");
      break;
    }
    memcpy(out->src[2 * k], src[i], len[i]);
    out->src[2 * k][len[i]] = 0;
    out->len[2 * k] = len[i];
    out->src[2 * k + 1] = v, out->len[2 * k + 1] = vn;
    out->problem[2 * k] = out->problem[2 * k + 1] = k;
    out->problem_nlibs[k] = 2;
    k++;
    out->nprograms = 2 * k, out->nproblems = k;
  }
  if (st == MLSYS_OK && k < 2)
    st = mlsys_set_error(MLSYS_ERR_ARG, "contracode: clone_set_variants: %d of %d units parse and have a variant; "
                                        "at least 2 are needed", k, n);
done:
  if (st != MLSYS_OK) {
    /* free what was built; the frees walk nprograms/nproblems/nlibs */
    if (out->src && out->nprograms < 2 * n && out->src[out->nprograms]) free(out->src[out->nprograms]);
    mlsys_contracode_clone_set_free(out);
  }
  return st;
}

/* [end of section 7 implementation] */

#endif /* MLSYS_CONTRACODE_IMPLEMENTATION_DONE */
#endif /* MLSYS_CONTRACODE_IMPLEMENTATION */
