# pinwheel - one non-recursive Makefile.
#
#   make              build build/libpinwheel.{a,so} and build/pinwheel
#   make test         install missing packages, build, run every test and
#                     the examples (examples/examples.mk)
#   make check-exports   libpinwheel.so exports its API, nothing else
#   make check-includes  no include circle crosses module folders except
#                        through the headers docs/architecture.md names
#   make asan / tsan / ubsan   the same tests under a sanitizer
#   make fuzz         fuzz the HTTP/1.1 parsers for FUZZ_SECONDS (60) with
#                     clang's libFuzzer, ASan and UBSan
#   make bench        Google Benchmark micro benchmarks (table + JSON, then
#                     one summary table; BENCH_ARGS adds flags)
#   make udp-floor    build/udp-floor, the plain recvmmsg/sendmmsg echo
#                     server bench/udp.sh measures udp-echo against
#   make bench-compare BASE=REF   the benchmarks of git ref REF against
#                     this tree's, alternated, with the U test's verdict
#   make run          the main job: pinwheel bench, shard against steal
#                     (RUN_ARGS adds flags; see README.md)
#   make install PREFIX=/usr/local [DESTDIR=...]
#   make format / format-check / clean
#   V=1               print full command lines
#
# Sanitizer builds live in their own folders (build-asan, build-tsan,
# build-ubsan); they re-enter this Makefile with BUILD and SAN set.

VERSION := 0.1.0
CC ?= cc
CXX ?= c++
ifeq ($(origin CC),default)
CC := cc
endif
ifeq ($(origin CXX),default)
CXX := c++
endif
BUILD ?= build
SAN ?=
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
BINDIR ?= $(PREFIX)/bin

DEPS_PKGS := liburing-dev libjemalloc-dev libhwloc-dev libnuma-dev \
	libbenchmark-dev libcriterion-dev libck-dev g++ pkg-config \
	wrk gnuplot-nox python3 zlib1g-dev

WARN := -Wall -Wextra -Werror
OPT ?= -O2
CPPFLAGS := -D_GNU_SOURCE -I. -Iinclude
CFLAGS_ALL := -std=c11 $(OPT) -g $(WARN) -fPIC -fno-semantic-interposition $(CFLAGS)
CXXFLAGS_ALL := -std=c++17 $(OPT) -g -Wall -Wextra -Werror $(CXXFLAGS)
# zlib and libm: the HdrHistogram formats (core/hist_hdr.c).
LDLIBS_ALL := -luring -lhwloc -lnuma -lpthread -lz -lm $(LDLIBS)

# jemalloc serves malloc in the programs built here (tests, benchmarks, the
# pinwheel command) so shards get arenas of their own (numa/mem.c), except
# under ASan and TSan, which own malloc themselves. The library itself
# refers to jemalloc weakly and links without it. Nothing here calls
# jemalloc by name, so it is linked even where --as-needed is the default.
comma := ,
ifeq ($(filter address thread memory,$(subst $(comma), ,$(SAN))),)
CPPFLAGS += -DPW_HAVE_JEMALLOC
JEMALLOC := -Wl,--push-state,--no-as-needed -ljemalloc -Wl,--pop-state
else
JEMALLOC :=
endif

ifneq ($(SAN),)
CFLAGS_ALL += -fsanitize=$(SAN) -fno-sanitize-recover=all -fno-omit-frame-pointer
CXXFLAGS_ALL += -fsanitize=$(SAN) -fno-sanitize-recover=all -fno-omit-frame-pointer
SANLD := -fsanitize=$(SAN)
endif

ifeq ($(V),1)
Q :=
msg = @true
else
Q := @
msg = @printf '  %-6s %s\n' $(1) $(2)
endif

LIB_SRCS := $(sort $(wildcard core/*.c shard/*.c timer/*.c net/*.c fs/*.c numa/*.c \
	core/*.S))
APP_SRCS := $(sort $(wildcard apps/*.c))
TEST_SRCS := $(sort $(wildcard tests/*.c))
# bench/udp_floor.c is a program of its own (make udp-floor), not a
# micro benchmark.
BENCH_SRCS := $(filter-out bench/udp_floor.c,$(sort $(wildcard bench/*.c)))

LIB_OBJS := $(patsubst %.S,$(BUILD)/obj/%.o,$(LIB_SRCS:%.c=$(BUILD)/obj/%.o))
APP_OBJS := $(APP_SRCS:%.c=$(BUILD)/obj/%.o)
TEST_OBJS := $(TEST_SRCS:%.c=$(BUILD)/obj/%.o)
BENCH_OBJS := $(BENCH_SRCS:%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/bench/shim.o

LIB_A := $(BUILD)/libpinwheel.a
LIB_SO := $(BUILD)/libpinwheel.so
PINWHEEL := $(BUILD)/pinwheel
TESTS := $(BUILD)/pinwheel-tests
BENCHES := $(BUILD)/pinwheel-bench
DEPS_STAMP := build/.deps-ok

.PHONY: all deps test test-run test-aarch64 test-install check-exports check-includes asan tsan ubsan udp-floor \
	bench bench-compare test-bench-compare bench-peers run install format \
	format-check clean

all: $(DEPS_STAMP) $(LIB_A) $(LIB_SO) $(PINWHEEL)

# Checked once per package list (a change to this Makefile rechecks);
# delete the stamp (or make clean) to recheck.
$(DEPS_STAMP): scripts/deps.sh Makefile
	@mkdir -p $(dir $@)
	$(Q)sh scripts/deps.sh $(DEPS_PKGS)
	@echo "$(DEPS_PKGS)" > $@

deps:
	$(Q)sh scripts/deps.sh $(DEPS_PKGS)

$(BUILD)/obj/%.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call msg,CC,$<)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

# Assembly (the fiber context switch), through the C preprocessor.
$(BUILD)/obj/%.o: %.S | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call msg,AS,$<)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

$(BUILD)/obj/bench/shim.o: bench/shim.cc bench/bench.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call msg,CXX,$<)
	$(Q)$(CXX) $(CXXFLAGS_ALL) -I. -Iinclude -c $< -o $@

# The library's objects hide every symbol but those its headers mark
# PW_API (include/pinwheel/export.h): libpinwheel.so exports only its API.
# The programs built here link the static archive, where hidden symbols
# still link, so the tests reach the internals. They are rebuilt when this
# Makefile changes, so no object built with other flags stays behind.
$(LIB_OBJS): CFLAGS_ALL += -fvisibility=hidden
$(LIB_OBJS): Makefile

$(LIB_A): $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(LIB_SO): $(LIB_OBJS)
	$(call msg,LD,$@)
	$(Q)$(CC) -shared -Wl,-soname,libpinwheel.so.0 $(SANLD) -o $@ $^ \
		$(LDLIBS_ALL)

$(PINWHEEL): $(APP_OBJS) $(LIB_A)
	$(call msg,LD,$@)
	$(Q)$(CC) $(SANLD) -o $@ $(APP_OBJS) $(LIB_A) $(LDLIBS_ALL) $(JEMALLOC)

# Criterion cannot start inside a ThreadSanitizer process, so the TSan
# build runs the same test files on tests/tsan (a Criterion-compatible
# header and a fork-per-test runner).
ifeq ($(SAN),thread)
TEST_OBJS += $(BUILD)/obj/tests/tsan/runner.o
TEST_LIBS :=
$(BUILD)/obj/tests/%.o: CPPFLAGS += -Itests/tsan
else
TEST_LIBS := -lcriterion
endif

# The app modules the tests exercise directly (every app file but the
# command's main(); they are not in the library).
TEST_APP_OBJS := $(filter-out $(BUILD)/obj/apps/main.o,$(APP_OBJS))

$(TESTS): $(TEST_OBJS) $(TEST_APP_OBJS) $(LIB_A)
	$(call msg,LD,$@)
	$(Q)$(CC) $(SANLD) -o $@ $(TEST_OBJS) $(TEST_APP_OBJS) $(LIB_A) \
		$(TEST_LIBS) $(LDLIBS_ALL) $(JEMALLOC) -ldl

# The app modules the benchmarks time directly (the same set).
BENCH_APP_OBJS := $(TEST_APP_OBJS)

# The floor of bench/udp.sh: a plain recvmmsg/sendmmsg echo server.
UDP_FLOOR := $(BUILD)/udp-floor
udp-floor: $(UDP_FLOOR)
$(UDP_FLOOR): $(BUILD)/obj/bench/udp_floor.o
	$(call msg,LD,$@)
	$(Q)$(CC) $(SANLD) -o $@ $<

$(BENCHES): $(BENCH_OBJS) $(BENCH_APP_OBJS) $(LIB_A)
	$(call msg,LD,$@)
	$(Q)$(CXX) $(SANLD) -o $@ $(BENCH_OBJS) $(BENCH_APP_OBJS) $(LIB_A) \
		-lbenchmark $(LDLIBS_ALL) $(JEMALLOC)

# The tests find the sources (install test, README example) from here.
$(BUILD)/obj/tests/%.o: CPPFLAGS += -DPW_SRCDIR='"$(CURDIR)"' \
	-DPW_BUILDDIR='"$(CURDIR)/$(BUILD)"'

# Tests run in parallel, one process per test, once per scheduler (the
# second run with PW_SCHED=steal); TEST_ARGS adds Criterion flags (e.g.
# TEST_ARGS=--filter='wheel/*'), SCHEDS picks the schedulers. The tests
# that tests/one_pass.txt lists do not depend on the scheduler and run in
# the first pass only (a --filter in TEST_ARGS overrides that). Each test
# has a time limit of its own (tests/limit.c); SUITE_LIMIT bounds a whole
# run, so that nothing can keep it going for ever.
SCHEDS ?= shard steal
SUITE_LIMIT ?= 1500
ONE_PASS := $(shell sed -e 's/\#.*//' tests/one_pass.txt | \
	awk 'NF { printf "%s%s", sep, $$1; sep = "|" }')
test: all check-includes check-exports test-install test-bench-compare \
	test-run test-aarch64

test-run: $(TESTS) $(PINWHEEL)
	$(Q)only=; for s in $(SCHEDS); do \
		echo "  TEST   sched=$$s$${only:+ (less tests/one_pass.txt)}"; \
		PW_SCHED=$$s timeout -k 10 $(SUITE_LIMIT) $(TESTS) -j2 \
			$${only:+"$$only"} $(TEST_ARGS); rc=$$?; \
		only='--filter=!($(ONE_PASS))'; \
		if [ $$rc -eq 124 ] || [ $$rc -eq 137 ]; then \
			echo "sched=$$s: the tests did not finish within" \
				"$(SUITE_LIMIT) s (SUITE_LIMIT)" >&2; fi; \
		[ $$rc -eq 0 ] || exit 1; \
	done

# The aarch64 context switch (core/fiber_switch.S and the first frame of
# core/fiber_ctx.c), cross-built statically and run under qemu-user;
# skipped with a line naming the packages when they are missing.
AARCH64_CC ?= aarch64-linux-gnu-gcc
AARCH64_RUN ?= qemu-aarch64
AARCH64_TEST := $(BUILD)/aarch64/switch_test

test-aarch64:
	$(Q)if command -v $(AARCH64_CC) >/dev/null 2>&1 && \
		command -v $(AARCH64_RUN) >/dev/null 2>&1; then \
		mkdir -p $(dir $(AARCH64_TEST)) && \
		echo "  TEST   aarch64 context switch (qemu-user)" && \
		$(AARCH64_CC) -std=c11 -O2 -g $(WARN) -D_GNU_SOURCE -I. \
			-Iinclude -static -o $(AARCH64_TEST) \
			tests/aarch64/switch_test.c core/fiber_ctx.c \
			core/fiber_switch.S && \
		$(AARCH64_RUN) $(AARCH64_TEST); \
	else echo "  SKIP   aarch64 context switch test: needs $(AARCH64_CC)" \
		"and $(AARCH64_RUN) (Debian: gcc-aarch64-linux-gnu qemu-user)"; fi

# No internal pw__ symbol is exported; every function the headers declare
# is.
check-includes:
	$(Q)python3 scripts/include-cycles.py

check-exports: $(LIB_SO)
	$(Q)sh scripts/check-exports.sh $(LIB_SO) include/pinwheel/*.h

# Installs into a scratch prefix and builds docs/example.c against it
# with nothing but pkg-config.
test-install: all
	$(Q)sh scripts/test-install.sh

asan:
	$(Q)$(MAKE) --no-print-directory BUILD=build-asan \
		SAN=address,undefined PW_TEST_SCALE=0.1 test-run
tsan:
	$(Q)$(MAKE) --no-print-directory BUILD=build-tsan SAN=thread \
		PW_TEST_SCALE=0.1 test-run
ubsan:
	$(Q)$(MAKE) --no-print-directory BUILD=build-ubsan SAN=undefined \
		test-run
# Randomised tests scale their op counts by PW_TEST_SCALE (default 1).
export PW_TEST_SCALE

bench: all $(BENCHES)
	$(Q)$(BENCHES) --benchmark_out=$(BUILD)/bench.json \
		--benchmark_out_format=json $(BENCH_ARGS)
	$(Q)sh scripts/bench-summary.sh $(BUILD)/bench.json

# A/B of the micro benchmarks: BASE (a git ref, required) is exported and
# built in build/compare/base-SHA, then both binaries run in alternated
# rounds on the same CPUs and Google Benchmark's compare.py prints each
# change with its U test (scripts/bench-compare.sh; COMPARE_ROUNDS,
# COMPARE_REPS, COMPARE_FILTER, COMPARE_MIN_TIME, COMPARE_CPUS). Only this
# target needs the compare tool and SciPy, so their packages are checked
# here and not in DEPS_PKGS. make test checks only the script's merge step
# on fixtures (test-bench-compare), in well under a second.
COMPARE_PKGS := libbenchmark-tools python3-scipy python3-numpy

bench-compare:
	$(Q)[ -n "$(BASE)" ] || { sh scripts/bench-compare.sh --help; exit 2; }
	$(Q)git rev-parse --verify --quiet '$(BASE)^{commit}' >/dev/null || { \
		echo "bench-compare: unknown git ref '$(BASE)'" >&2; exit 2; }
	$(Q)sh scripts/deps.sh $(COMPARE_PKGS)
	$(Q)$(MAKE) --no-print-directory all $(BENCHES)
	$(Q)COMPARE_CONTENDER='$(CURDIR)/$(BENCHES)' \
		sh scripts/bench-compare.sh '$(BASE)'

test-bench-compare:
	$(Q)sh scripts/bench-compare.sh --self-test

run: all
	$(Q)sh scripts/run.sh $(PINWHEEL) $(RUN_ARGS)

# The Tokio peers (bench/peers/tokio), built offline from Debian's crates;
# skipped with a message when cargo or the crates are missing.
bench-peers:
	$(Q)sh scripts/bench-peers.sh

install: all
	install -d $(DESTDIR)$(INCLUDEDIR)/pinwheel $(DESTDIR)$(LIBDIR)/pkgconfig \
		$(DESTDIR)$(BINDIR)
	install -m 644 include/pinwheel.h $(DESTDIR)$(INCLUDEDIR)/
	install -m 644 include/pinwheel/*.h $(DESTDIR)$(INCLUDEDIR)/pinwheel/
	install -m 644 $(LIB_A) $(DESTDIR)$(LIBDIR)/
	install -m 755 $(LIB_SO) $(DESTDIR)$(LIBDIR)/libpinwheel.so.$(VERSION)
	ln -sf libpinwheel.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libpinwheel.so.0
	ln -sf libpinwheel.so.0 $(DESTDIR)$(LIBDIR)/libpinwheel.so
	install -m 755 $(PINWHEEL) $(DESTDIR)$(BINDIR)/
	sed -e 's|@PREFIX@|$(PREFIX)|; s|@LIBDIR@|$(LIBDIR)|; s|@INCLUDEDIR@|$(INCLUDEDIR)|; s|@VERSION@|$(VERSION)|' \
		scripts/pinwheel.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/pinwheel.pc

FORMAT_SRCS = $(sort $(wildcard include/*.h include/pinwheel/*.h core/*.[ch] \
	shard/*.[ch] timer/*.[ch] net/*.[ch] fs/*.[ch] numa/*.[ch] apps/*.[ch] \
	tests/*.[ch] tests/aarch64/*.c bench/*.[ch] docs/*.c))

format:
	$(Q)sh scripts/deps.sh clang-format
	$(Q)clang-format -i $(FORMAT_SRCS)

format-check:
	$(Q)sh scripts/deps.sh clang-format
	$(Q)clang-format --dry-run -Werror $(FORMAT_SRCS)
	@echo "format-check: $(words $(FORMAT_SRCS)) files clean"

# A libFuzzer target for the HTTP/1.1 parsers (tests/fuzz/http_parse.c,
# docs/testing.md), built by clang with ASan and UBSan from
# apps/http_parse.c alone (no liburing), and run for FUZZ_SECONDS on the
# seed corpus with the dictionary. What it learns goes to
# $(FUZZ_DIR)/corpus, kept between runs (the seed corpus is only read);
# a finding is written to $(FUZZ_DIR)/artifacts and fails the run.
# tests/fuzz/toolchain.sh installs clang's libFuzzer as root when it is
# missing, or names the Debian packages. FUZZ_ARGS adds libFuzzer flags.
# A small ASan quarantine: the target allocates a block per read, and the
# default quarantine (256 MiB) only slows it down.
FUZZ_SECONDS ?= 60
FUZZ_CC ?= clang
FUZZ_ARGS ?=
FUZZ_DIR := $(BUILD)/fuzz
FUZZ_BIN := $(FUZZ_DIR)/http_parse
FUZZ_CFLAGS := -std=c11 -O1 -g $(WARN) -D_GNU_SOURCE -I. -Iinclude \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer
FORMAT_SRCS += $(wildcard tests/fuzz/*.c)

.PHONY: fuzz

$(FUZZ_BIN): tests/fuzz/http_parse.c apps/http_parse.c apps/http_parse.h \
		tests/fuzz/toolchain.sh Makefile
	$(Q)sh tests/fuzz/toolchain.sh --install $(FUZZ_CC)
	@mkdir -p $(dir $@)
	$(call msg,FUZZCC,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ tests/fuzz/http_parse.c \
		apps/http_parse.c

fuzz: $(FUZZ_BIN)
	$(Q)case '$(FUZZ_SECONDS)' in ''|*[!0-9]*) false;; esac && \
		[ '$(FUZZ_SECONDS)' -gt 0 ] || { \
		echo "fuzz: FUZZ_SECONDS must be a whole number of seconds above 0," \
			"not '$(FUZZ_SECONDS)'" >&2; exit 2; }
	@mkdir -p $(FUZZ_DIR)/corpus $(FUZZ_DIR)/artifacts
	$(Q)ASAN_OPTIONS=quarantine_size_mb=16:malloc_context_size=2:$$ASAN_OPTIONS \
		UBSAN_OPTIONS=print_stacktrace=1:$$UBSAN_OPTIONS $(FUZZ_BIN) \
		-max_total_time=$(FUZZ_SECONDS) -timeout=60 -max_len=16384 \
		-dict=tests/fuzz/http.dict -print_final_stats=1 \
		-artifact_prefix=$(FUZZ_DIR)/artifacts/ $(FUZZ_ARGS) \
		$(FUZZ_DIR)/corpus tests/fuzz/corpus/http || { \
		echo "fuzz: a finding in $(FUZZ_DIR)/artifacts/;" \
			"rerun one input with: $(FUZZ_BIN) FILE" >&2; exit 1; }

# A second libFuzzer target, for the PROXY protocol parser and encoders
# (tests/fuzz/proxy_protocol.c, apps/proxy_protocol.c alone), run the same
# way by `make fuzz-proxy-protocol` on tests/fuzz/corpus/proxy_protocol;
# what it learns goes to $(FUZZ_DIR)/pp-corpus.
FUZZ_PP_BIN := $(FUZZ_DIR)/proxy_protocol

.PHONY: fuzz-proxy-protocol

$(FUZZ_PP_BIN): tests/fuzz/proxy_protocol.c apps/proxy_protocol.c \
		apps/proxy_protocol.h tests/fuzz/toolchain.sh Makefile
	$(Q)sh tests/fuzz/toolchain.sh --install $(FUZZ_CC)
	@mkdir -p $(dir $@)
	$(call msg,FUZZCC,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ tests/fuzz/proxy_protocol.c \
		apps/proxy_protocol.c

fuzz-proxy-protocol: $(FUZZ_PP_BIN)
	$(Q)case '$(FUZZ_SECONDS)' in ''|*[!0-9]*) false;; esac && \
		[ '$(FUZZ_SECONDS)' -gt 0 ] || { \
		echo "fuzz: FUZZ_SECONDS must be a whole number of seconds above 0," \
			"not '$(FUZZ_SECONDS)'" >&2; exit 2; }
	@mkdir -p $(FUZZ_DIR)/pp-corpus $(FUZZ_DIR)/artifacts
	$(Q)ASAN_OPTIONS=quarantine_size_mb=16:malloc_context_size=2:$$ASAN_OPTIONS \
		UBSAN_OPTIONS=print_stacktrace=1:$$UBSAN_OPTIONS $(FUZZ_PP_BIN) \
		-max_total_time=$(FUZZ_SECONDS) -timeout=60 -max_len=4096 \
		-print_final_stats=1 \
		-artifact_prefix=$(FUZZ_DIR)/artifacts/ $(FUZZ_ARGS) \
		$(FUZZ_DIR)/pp-corpus tests/fuzz/corpus/proxy_protocol || { \
		echo "fuzz: a finding in $(FUZZ_DIR)/artifacts/;" \
			"rerun one input with: $(FUZZ_PP_BIN) FILE" >&2; exit 1; }

# The examples: examples/examples.mk.
include examples/examples.mk

clean:
	rm -rf build build-asan build-tsan build-ubsan

-include $(wildcard $(BUILD)/obj/*/*.d)
