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
CFLAGS  ?= $(OPT) -g
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

.PHONY: all deps test test-build demo bench cuda fuzz install clean check-cxx

all: $(BUILD)/mlsys $(TESTS) $(EXAMPLES)

deps:
	@bash scripts/install-deps.sh

$(BUILD)/mlsys: $(CLI_SRC) cli/cli.h $(HEADERS) | $(BUILD)
	$(CC) $(CSTD) $(WARN) $(CFLAGS) $(CPPFLAGS) -I. $(CLI_SRC) -o $@ $(LDFLAGS) $(LDLIBS)

$(BUILD)/test_%: tests/test_%.c $(wildcard tests/*.h) $(HEADERS) $(wildcard examples/*.h) | $(BUILD)
	$(CC) $(CSTD) $(WARN) $(CFLAGS) $(CPPFLAGS) -I. $< -o $@ $(LDFLAGS) $(LDLIBS)

$(BUILD)/bench_%: bench/bench_%.c $(HEADERS) $(wildcard bench/*.h) | $(BUILD)
	$(CC) $(CSTD) $(WARN) $(OPT) -g $(CPPFLAGS) -I. $< -o $@ $(LDLIBS)

# tools that produce committed inputs (tools/README.md)
$(BUILD)/maple_train $(BUILD)/index_keys: $(BUILD)/%: tools/%.c $(HEADERS) | $(BUILD)
	$(CC) $(CSTD) $(WARN) $(OPT) -g $(CPPFLAGS) -I. $< -o $@ $(LDLIBS)

$(BUILD)/examples/%: examples/%.c $(HEADERS) $(wildcard examples/*.h) | $(BUILD)
	@mkdir -p $(BUILD)/examples
	$(CC) $(CSTD) $(WARN) $(CFLAGS) $(CPPFLAGS) -I. $< -o $@ $(LDFLAGS) $(LDLIBS)

# The headers must also compile as C++ (frameworks vendor them into C++ code bases).
$(BUILD)/cxx_check: tests/cxx_check.cpp $(HEADERS) | $(BUILD)
	$(CXX) -std=c++17 -Wall -Wextra -Wno-missing-field-initializers $(CFLAGS) $(CPPFLAGS) -I. $< -o $@ $(LDFLAGS) $(LDLIBS)

$(BUILD):
	@mkdir -p $(BUILD)

test-build: $(BUILD)/mlsys $(TESTS) $(EXAMPLES) $(BUILD)/cxx_check

test: deps
	@$(MAKE) --no-print-directory test-build
	@MLSYS_BIN=$(BUILD)/mlsys bash scripts/run-tests.sh $(TESTS)

demo: deps
	@$(MAKE) --no-print-directory $(BUILD)/mlsys $(BUILD)/examples/remat_cnn $(BUILD)/examples/collective_basics $(BUILD)/examples/transfer_basics $(BUILD)/examples/pipeline_basics \
	  $(BUILD)/examples/pcr_basics $(BUILD)/examples/relm_basics $(BUILD)/examples/index_basics
	@MLSYS_BIN=$(BUILD)/mlsys bash scripts/demo.sh

bench: deps
	@$(MAKE) --no-print-directory $(BENCHES) $(BUILD)/mlsys
	@for b in $(BENCHES); do echo "== $$b"; ./$$b || exit 1; done

# Type-checks and compiles every piece of CUDA code with nvcc (no GPU needed to build).
CUDA_SRC := $(wildcard kernels/*.cu tests/cuda/*.cu)
# A source that mentions MLSYS_COLLECTIVE_NCCL gets -DMLSYS_HAVE_NCCL -lnccl when NCCL's header and library are
# installed (next to nvcc or in the system paths); without them it is built without its NCCL parts.
cuda: | $(BUILD)
	@test -x "$(NVCC)" || { echo "make cuda: nvcc not found (install the CUDA Toolkit)"; exit 1; }
	@cu=$$(dirname "$(NVCC)")/..; for f in $(CUDA_SRC); do echo "nvcc $$f"; nccl=""; \
	  if grep -q MLSYS_COLLECTIVE_NCCL $$f; then \
	    if { test -f $$cu/include/nccl.h || test -f /usr/include/nccl.h; } && \
	       { test -e $$cu/lib64/libnccl.so || test -e $$cu/lib/libnccl.so || /sbin/ldconfig -p 2>/dev/null | grep -q 'libnccl\.so '; }; \
	    then nccl="-DMLSYS_HAVE_NCCL -L$$cu/lib64 -L$$cu/lib -lnccl"; else echo "  (NCCL not found: built without it)"; fi; fi; \
	  $(NVCC) -std=c++17 -O2 -arch=sm_90 -I. -DMLSYS_CUDA $(filter -D%,$(CPPFLAGS)) $(filter -I%,$(CPPFLAGS)) \
	    $$f -o $(BUILD)/$$(basename $$f .cu) $(LDLIBS) $$nccl || exit 1; done

# Builds (as above) and runs every tests/cuda program; without a CUDA device each says it skipped and exits 0.
.PHONY: cuda-test
cuda-test: cuda
	@for f in $(wildcard tests/cuda/*.cu); do b=$(BUILD)/$$(basename $$f .cu); echo "== $$b"; ./$$b || exit 1; done

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
