# mlsys — make deps | test | demo | bench | cuda | fuzz | install | clean        (SAN=1: ASan + UBSan build)
#
# Everything builds with gcc (or CC=clang) on Debian 12; `make test` and `make demo` first install any missing
# Debian package through scripts/install-deps.sh (idempotent; runs apt-get only when something is missing).

SHELL   := /bin/bash
CC      ?= gcc
CXX     ?= g++
NVCC    ?= $(shell command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)
OPT     ?= -O2
CSTD    := -std=c11 -D_POSIX_C_SOURCE=200809L
WARN    := -Wall -Wextra -Wno-unused-function -Wstrict-prototypes -Wshadow
CFLAGS  ?= $(OPT) -g1
LDLIBS  := -llpsolve55 -lcolamd -ldl -lm -lpthread -lcurl -lcrypto -ljpeg

# CBC/Clp: compiled in when pkg-config finds them (install-deps.sh installs them); CBC=0 leaves them out.
CBC ?= $(shell pkg-config --exists cbc clp 2>/dev/null && echo 1 || echo 0)
ifeq ($(CBC),1)
  CPPFLAGS += -DMLSYS_MILP_CBC $(shell pkg-config --cflags cbc clp)
  LDLIBS   += $(shell pkg-config --libs cbc clp)
endif

BUILD := build
ifeq ($(SAN),1)
  BUILD   := build-san
  CFLAGS  := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
  LDFLAGS += -fsanitize=address,undefined
endif

HEADERS := $(wildcard mlsys_*.h)
TESTS   := $(patsubst tests/%.c,$(BUILD)/%,$(wildcard tests/test_*.c))
BENCHES := $(patsubst bench/%.c,$(BUILD)/%,$(wildcard bench/bench_*.c))
EXAMPLES:= $(patsubst examples/%.c,$(BUILD)/examples/%,$(wildcard examples/*.c))
CLI_SRC := $(wildcard cli/*.c)
FUZZERS := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(wildcard tests/fuzz/fuzz_*.c))
PREFIX  ?= /usr/local

.PHONY: all deps test test-build demo bench cuda fuzz install clean check-cxx relm-model

all: $(BUILD)/mlsys $(TESTS) $(EXAMPLES)

deps:
	@bash scripts/install-deps.sh

$(BUILD)/mlsys: $(CLI_SRC) cli/cli.h $(HEADERS) examples/cnn_kernels.h | $(BUILD)
	$(CC) $(CSTD) $(WARN) $(CFLAGS) $(CPPFLAGS) -I. $(CLI_SRC) -o $@ $(LDFLAGS) $(LDLIBS)

$(BUILD)/test_%: tests/test_%.c $(wildcard tests/*.h) $(HEADERS) $(wildcard examples/*.h) | $(BUILD)
	$(CC) $(CSTD) $(WARN) $(CFLAGS) $(CPPFLAGS) -I. $< -o $@ $(LDFLAGS) $(LDLIBS)

# Compile time is most of `make test` on 2 cores: ~100 test binaries, each compiling whole headers. -O1 halves it,
# so a test binary builds at $(TEST_OPT) unless its own run time is mostly our compiled code (TESTS_FULL_OPT, the
# binaries that ran 10 s or more in CI, minus those whose time goes to the mlsys binary, Node, PyTorch, libjpeg or the
# LP solvers: test_milp, test_xfer_plan/store, test_pcr_jpeg, test_pipe_jpeg and test_remat_coarsen ran as fast at -O1,
# 2026-11-29). SAN builds
# keep their own flags; CFLAGS=... on the command line still wins.
TEST_OPT ?= -O1
TESTS_FULL_OPT := test_remat test_remat_monet test_remat_monet_catalogue test_pcr_fidelity test_offload_e2e \
  test_remat_sweep test_index_model test_index_baselines test_index_core test_index_tune test_relm_experiments \
  test_relm_torch_check
ifneq ($(SAN),1)
$(filter-out $(TESTS_FULL_OPT:%=$(BUILD)/%),$(TESTS)): CFLAGS := $(TEST_OPT) -g1
endif

$(BUILD)/bench_%: bench/bench_%.c $(HEADERS) $(wildcard bench/*.h) tests/dtr_logs.h | $(BUILD)
	$(CC) $(CSTD) $(WARN) $(OPT) -g $(CPPFLAGS) -I. $< -o $@ $(LDLIBS)

# tools that produce committed inputs, and gpt2_dump (the C side of tools/check_gpt2_torch.py) (tools/README.md)
$(BUILD)/maple_train $(BUILD)/index_keys $(BUILD)/gpt2_dump: $(BUILD)/%: tools/%.c $(HEADERS) | $(BUILD)
	$(CC) $(CSTD) $(WARN) $(OPT) -g $(CPPFLAGS) -I. $< -o $@ $(LDLIBS)

# the PyTorch cross-check of the C GPT-2 runs tools/gpt2_dump.c's code, compiled into the test
$(BUILD)/test_relm_torch_check: tools/gpt2_dump.c

# The tree-sitter cross-check of the JavaScript front end (tests/test_contracode_treesitter.c): Debian's
# libtree-sitter-dev plus the generated grammar of npm tree-sitter-javascript@0.21.4 (ABI 14), which
# scripts/install-deps.sh unpacks into the git-ignored .deps/tree-sitter-javascript. Without them the test builds
# without tree-sitter and reports the missing dependency. The grammar is generated code: compiled on its own, warnings off.
TS_JS := .deps/tree-sitter-javascript
# the stamp install-deps writes: a binary built before the grammar arrived is rebuilt with it
$(BUILD)/test_contracode_treesitter: $(wildcard $(TS_JS)/.done)
ifeq ($(shell test -f /usr/include/tree_sitter/api.h && test -f $(TS_JS)/src/parser.c && echo 1),1)
$(BUILD)/test_contracode_treesitter: CPPFLAGS += -DMLSYS_HAVE_TREE_SITTER
$(BUILD)/test_contracode_treesitter: LDLIBS += $(BUILD)/ts_js_parser.o $(BUILD)/ts_js_scanner.o -ltree-sitter
$(BUILD)/test_contracode_treesitter: $(BUILD)/ts_js_parser.o $(BUILD)/ts_js_scanner.o
$(BUILD)/ts_js_%.o: $(TS_JS)/src/%.c | $(BUILD)
	$(CC) -std=c11 -O1 -w -I$(TS_JS)/src -c $< -o $@
endif

$(BUILD)/examples/%: examples/%.c $(HEADERS) $(wildcard examples/*.h) | $(BUILD)
	@mkdir -p $(BUILD)/examples
	$(CC) $(CSTD) $(WARN) $(CFLAGS) $(CPPFLAGS) -I. $< -o $@ $(LDFLAGS) $(LDLIBS)

# The headers must also compile as C++ (frameworks vendor them into C++ code bases).
$(BUILD)/cxx_check: tests/cxx_check.cpp $(HEADERS) | $(BUILD)
	$(CXX) -std=c++17 -Wall -Wextra -Wno-missing-field-initializers $(CFLAGS) $(CPPFLAGS) -I. $< -o $@ $(LDFLAGS) $(LDLIBS)

# The real-peer driver of bench/peers/alex built against std::map instead of ALEX (tests/test_index_peer.c): CI has
# no ALEX checkout, and this still runs the driver's reader, replay and checks. The operator new/delete it replaces
# are a matched pair, which gcc's -Wmismatched-new-delete cannot see.
$(BUILD)/peer_stdmap: bench/peers/alex/alex_driver.cpp | $(BUILD)
	$(CXX) -std=c++14 -Wall -Wextra -Wno-mismatched-new-delete $(CFLAGS) -DMLSYS_PEER_STDMAP $< -o $@ $(LDFLAGS)

$(BUILD):
	@mkdir -p $(BUILD)


# Builds with every core (JOBS=1 for one at a time), then runs every test binary and the GPU bundle check.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
test: deps
	@$(MAKE) --no-print-directory -j$(JOBS) test-build
	@MLSYS_BIN=$(BUILD)/mlsys bash scripts/run-tests.sh $(TESTS) scripts/gpu-bundle-check.sh

demo: deps
	@$(MAKE) --no-print-directory $(BUILD)/mlsys $(BUILD)/examples/remat_cnn $(BUILD)/examples/collective_basics $(BUILD)/examples/transfer_basics $(BUILD)/examples/pipeline_basics \
	  $(BUILD)/examples/pcr_basics $(BUILD)/examples/relm_basics $(BUILD)/examples/index_basics $(BUILD)/examples/offload_basics \
	  $(BUILD)/examples/cloud_basics $(BUILD)/examples/contracode_basics
	@MLSYS_BIN=$(BUILD)/mlsys bash scripts/demo.sh

# ReLM's GPT-2 trained in C on a pinned Debian 12 English corpus (docs/relm.md §6.1): scripts/relm-train-model.sh
# builds the corpus (scripts/relm-corpus.sh → build/relm-corpus) and trains build/relm-model/debian.bin, about an
# hour on one core, checking both against the sha256 sums recorded in the scripts; rerunning resumes. make demo uses it.
relm-model: deps
	@bash scripts/relm-train-model.sh

bench: deps
	@$(MAKE) --no-print-directory $(BENCHES) $(BUILD)/mlsys $(BUILD)/gpt2_dump $(BUILD)/test_relm_torch_check
	@bash bench/peers/tiktoken-install.sh || echo "bench: tiktoken not installed; bench_relm skips that peer"
	@for b in $(BENCHES); do echo "== $$b"; ./$$b || exit 1; done
	@echo "== peers: microsoft/ALEX (bench/peers/alex; RESULTS §12.1)"
	@if sh bench/peers/alex/build.sh; then rm -f $(BUILD)/alex-grid.jsonl; sh bench/peers/alex/grid.sh $(BUILD)/alex-grid.jsonl && \
	  python3 bench/peers/alex/table.py $(BUILD)/alex-grid.jsonl; else echo "bench: ALEX not built (no ALEX_DIR and no network); skipped"; fi
	@echo "== peers: PyTorch DataLoader (bench/peers/torch_loader.py; RESULTS §12.2)"
	@if bash bench/peers/torch-install.sh; then /usr/bin/python3 bench/peers/torch_loader.py; else echo "bench: torch not installed; skipped"; fi
	@echo "== ReLM GPT-2 vs PyTorch (tests/test_relm_torch_check, bench/relm_torch_check.sh; RESULTS §8.5)"
	@if /usr/bin/python3 -c "import torch" 2>/dev/null; then MLSYS_BIN=$(BUILD)/mlsys ./$(BUILD)/test_relm_torch_check && bash bench/relm_torch_check.sh $(BUILD) || exit 1; \
	  else echo "bench: torch not installed; GPT-2 cross-check skipped"; fi

# ---- CUDA (docs/gpu.md) ----------------------------------------------------------------------------------------
# Every CUDA program (tests/cuda/*.cu, bench/cuda/*.cu) is compiled here with nvcc for sm_90 (no GPU needed) into
# build/gpu/bin/, and `make gpu-bundle` makes build/gpu/ runnable on a GPU machine that has only a driver: the shared
# libraries the programs need beyond glibc, libstdc++, libgcc and libcuda are copied into build/gpu/lib/, and
# build/gpu/run.sh runs every test, then every benchmark. NCCL is the exception: its library is 200+ MB, so the
# NCCL programs (*_nccl) link it by name and run.sh finds it on the GPU machine (the CUDA image's pip NCCL).
GPU       := build/gpu
CUDA_ROOT := $(patsubst %/bin/nvcc,%,$(NVCC))
HAVE_NVCC := $(shell test -x "$(NVCC)" && echo 1)
NCCL_LIB  := $(firstword $(foreach d,$(CUDA_ROOT)/lib64 $(CUDA_ROOT)/lib /usr/lib/x86_64-linux-gnu,$(wildcard $(d)/libnccl.so)))
NCCL_INC  := $(firstword $(wildcard $(CUDA_ROOT)/include/nccl.h /usr/include/nccl.h))
NVFLAGS   := -std=c++17 -O2 -lineinfo -gencode arch=compute_90,code=[sm_90,compute_90] -I. -DMLSYS_CUDA \
             $(filter -D%,$(CPPFLAGS)) $(filter -I%,$(CPPFLAGS)) -Xlinker --as-needed
CUDA_DEPS := $(HEADERS) $(wildcard kernels/*.cuh) $(wildcard bench/cuda/*.cuh) $(wildcard tests/cuda/*.h) tests/test.h examples/remat_cnn_layers.h
GPU_PROGS := $(patsubst tests/cuda/%.cu,$(GPU)/bin/%,$(wildcard tests/cuda/*.cu)) \
             $(patsubst bench/cuda/%.cu,$(GPU)/bin/%,$(wildcard bench/cuda/*.cu))
ifneq ($(and $(NCCL_LIB),$(NCCL_INC)),)
  GPU_PROGS += $(GPU)/bin/test_collective_cuda_nccl $(GPU)/bin/bench_collective_gpu_nccl $(GPU)/bin/test_cloud_cuda_nccl
endif

$(GPU)/bin/%: tests/cuda/%.cu $(CUDA_DEPS)
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) $< -o $@ $(LDLIBS)
$(GPU)/bin/%: bench/cuda/%.cu $(CUDA_DEPS)
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) $< -o $@ $(LDLIBS)
$(GPU)/bin/test_collective_cuda_nccl: tests/cuda/test_collective_cuda.cu $(CUDA_DEPS)
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -DMLSYS_HAVE_NCCL -I$(dir $(NCCL_INC)) $< -o $@ $(LDLIBS) -L$(dir $(NCCL_LIB)) -lnccl
$(GPU)/bin/bench_collective_gpu_nccl: bench/cuda/bench_collective_gpu.cu $(CUDA_DEPS)
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -DMLSYS_HAVE_NCCL -I$(dir $(NCCL_INC)) $< -o $@ $(LDLIBS) -L$(dir $(NCCL_LIB)) -lnccl
$(GPU)/bin/test_cloud_cuda_nccl: tests/cuda/test_cloud_cuda.cu $(CUDA_DEPS)
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -DMLSYS_HAVE_NCCL -I$(dir $(NCCL_INC)) $< -o $@ $(LDLIBS) -L$(dir $(NCCL_LIB)) -lnccl
$(GPU)/.bundled: $(GPU_PROGS) scripts/gpu-bundle.sh scripts/gpu-run.sh tests/data/graphs/smallcnn_b8.json \
                 tests/data/offload/trees.txt $(wildcard bench/cuda/*.py)
	@bash scripts/gpu-bundle.sh $(GPU)

# The GPU bundle builds beside the tests (its nvcc programs are the slowest to compile) when nvcc exists. This rule
# sits below the CUDA variables: make expands a rule's prerequisites where it reads the rule.
# The long single compiles (the CLI and the C++ check, each all headers in one go) come first so that -j keeps every
# core busy to the end instead of finishing on one of them.
test-build: $(BUILD)/mlsys $(BUILD)/cxx_check $(TESTS) $(EXAMPLES) $(BUILD)/peer_stdmap $(BUILD)/maple_train $(if $(HAVE_NVCC),$(GPU)/.bundled)
	@:   # phony: it only gathers the builds (a `touch` here left a stray test-build file in the checkout)

.PHONY: cuda cuda-test gpu-bundle gpu-bundle-check
# Compiles every piece of CUDA code with nvcc (no GPU needed to build).
cuda:
	@test -n "$(HAVE_NVCC)" || { echo "make cuda: nvcc not found (install the CUDA Toolkit)"; exit 1; }
	@$(MAKE) --no-print-directory $(GPU_PROGS)
gpu-bundle:
	@test -n "$(HAVE_NVCC)" || { echo "make gpu-bundle: nvcc not found (install the CUDA Toolkit)"; exit 1; }
	@$(MAKE) --no-print-directory $(GPU)/.bundled
# What `make test` runs: the bundle resolves every library inside itself or the allowed system set, and run.sh
# without a GPU reports every program skipped. Without nvcc: one skip.
gpu-bundle-check:
	@if [ -n "$(HAVE_NVCC)" ]; then $(MAKE) --no-print-directory $(GPU)/.bundled; fi
	@bash scripts/gpu-bundle-check.sh $(GPU)
# Builds the bundle and runs it here (on a machine with a GPU: the whole device check).
cuda-test: gpu-bundle
	@bash $(GPU)/run.sh

# libFuzzer targets, each run for FUZZ_SECONDS (default 60) on its seed corpus in tests/fuzz/corpus/<name>.
FUZZ_SECONDS ?= 60
$(BUILD)/fuzz/%: tests/fuzz/%.c $(HEADERS)
	@mkdir -p $(BUILD)/fuzz
	clang $(CSTD) -O1 -g -fsanitize=fuzzer,address,undefined $(CPPFLAGS) -I. $< -o $@ $(LDLIBS)
fuzz: deps
	@$(MAKE) --no-print-directory $(FUZZERS)
	@for f in $(FUZZERS); do n=$$(basename $$f); mkdir -p $(BUILD)/fuzz/corpus-$$n; \
	  echo "== $$n ($(FUZZ_SECONDS) s)"; \
	  ./$$f -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	    $(BUILD)/fuzz/corpus-$$n tests/fuzz/corpus/$$n 2>&1 | grep -E "stat::number_of_executed_units|ERROR|SUMMARY|crash" ; \
	  test $${PIPESTATUS[0]} -eq 0 || exit 1; done

install: $(BUILD)/mlsys
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/bin
	install -m 644 $(wildcard mlsys_*.h) $(DESTDIR)$(PREFIX)/include/
	install -m 755 $(BUILD)/mlsys $(DESTDIR)$(PREFIX)/bin/

clean:
	rm -rf build build-san
