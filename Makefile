# pgdirect - thin wrapper over meson/ninja.
#   make            release build in build/
#   make asan       ASan+UBSan build in build-asan/
#   make release    -O3 build in build-release/ (make check compiles it: gcc warns
#                   of other things at -O3, and warnings are errors)
#   make check      everything CI runs: unit tests (plain, ASan+UBSan, valgrind),
#                   integration tests against a real PostgreSQL 15 (needs root:
#                   it runs the servers as the postgres user)
#   make check-quick   for work in progress (a couple of minutes): the unit tests and
#                   the integration files of tests/integration/smoke.list on the
#                   ASan build; never instead of make check
#   make integration TESTS='tests/integration/08_wal.t'   one or a few integration tests
#   PGDIRECT_TEST_PG=17 make integration TESTS=...   the same against PostgreSQL 17 (14 to 18)
#   make integration-matrix   the scenarios of tests/integration/matrix.list against
#                   PostgreSQL 14, 16, 17 and 18 (make check runs it after the suite on 15)
#   make coverage   unit (ASan) and integration tests on a build with gcov
#                   counters, an HTML report in build-coverage/coverage/index.html
#                   and the per-folder floors of scripts/coverage-floors.txt
#                   (make check does the same run: no second integration pass)
#   make fuzz       every libFuzzer target of tests/fuzz/ for FUZZ_SECONDS each (60), then
#                   the differential checks (GNU tar, the lz4 and zstd tools) on what
#                   they reached; build-fuzz/ (clang, ASan+UBSan); make check runs each
#                   target once over its corpus and regressions (make fuzz-regress)
#   make demo       the README demo
#   make install    binary, manual page, bash completion and systemd units under
#                   $(DESTDIR)$(PREFIX) (PREFIX=/usr/local); make uninstall removes them

BUILD      ?= build
TESTS      ?= tests/integration/*.t
ASAN_BUILD ?= build-asan
RELEASE_BUILD ?= build-release

PREFIX      ?= /usr/local
DESTDIR     ?=
BINDIR      ?= $(PREFIX)/bin
MANDIR      ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
# systemd reads units from /usr/local/lib/systemd/system as well as /usr/lib/systemd/system
UNITDIR     ?= $(PREFIX)/lib/systemd/system
UNITS       := $(wildcard examples/systemd/*.service examples/systemd/*.timer)

.PHONY: all asan release unit unit-asan unit-valgrind integration check demo format clean bench bench-quick bench-io bench-s3 bench-stores bench-multi-repo \
        install uninstall bench-delta bench-versions

all: $(BUILD)/build.ninja
	ninja -C $(BUILD)

$(BUILD)/build.ninja:
	meson setup $(BUILD) --buildtype=debugoptimized

release: $(RELEASE_BUILD)/build.ninja
	ninja -C $(RELEASE_BUILD)

$(RELEASE_BUILD)/build.ninja:
	meson setup $(RELEASE_BUILD) --buildtype=release

asan: $(ASAN_BUILD)/build.ninja
	ninja -C $(ASAN_BUILD)

$(ASAN_BUILD)/build.ninja:
	meson setup $(ASAN_BUILD) --buildtype=debug -Db_sanitize=address,undefined -Db_lundef=false

unit: all
	meson test -C $(BUILD) --print-errorlogs

unit-asan: asan
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 meson test -C $(ASAN_BUILD) --print-errorlogs

unit-valgrind: all
	meson test -C $(BUILD) --print-errorlogs --suite pgdirect --no-suite tools \
	  --wrapper 'valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect --quiet'

# The integration tests run several at a time (scripts/run_tests.py: TEST_JOBS
# at once, 3 a core by default; the slowest first, by tests/integration/durations.txt).
TEST_JOBS ?=
RUN_TESTS = PGDIRECT_BIN=$(CURDIR)/$(ASAN_BUILD)/pgdirect PGD_PAGECACHE=$(CURDIR)/$(BUILD)/pgd-pagecache \
	  PGDIRECT_RELEASE_BIN=$(CURDIR)/$(BUILD)/pgdirect PGD_SIGV4=$(CURDIR)/$(BUILD)/pgd-sigv4 \
	  python3 scripts/run_tests.py $(if $(TEST_JOBS),--jobs $(TEST_JOBS)) \
	  --durations tests/integration/durations.txt --save-durations $(ASAN_BUILD)/test-durations.txt \
	  --summary $(ASAN_BUILD)/test-summary.txt

integration: all asan
	$(RUN_TESTS) $(TESTS)

# CI: the ASan tests and the integration suite run once, on the coverage
# build (ASan+UBSan with gcov counters), and the floors are checked after.
# (MAKE_STARTED: when this make read the Makefile, for the total printed last)
MAKE_STARTED := $(shell date +%s)
check:
	$(MAKE) release unit unit-valgrind
	python3 scripts/static_prefix.py
	$(MAKE) fuzz-regress
	$(MAKE) coverage-reset
	GCOV_PREFIX=$(COVERAGE_GCDA) GCOV_PREFIX_STRIP=0 \
	  $(MAKE) unit-asan integration-all ASAN_BUILD=$(COVERAGE_BUILD)
	$(MAKE) coverage-report
	@echo "=== make check: the integration run (unit tests and coverage floors passed above)"
	@cat $(COVERAGE_BUILD)/test-summary.txt
	@echo "make check: $$(( $$(date +%s) - $(MAKE_STARTED) )) s in all"

SMOKE_TESTS ?= $(shell grep -v '^\#' tests/integration/smoke.list)
.PHONY: check-quick
check-quick: unit
	$(MAKE) fuzz-regress
	$(MAKE) unit-asan integration TESTS='$(SMOKE_TESTS)'

# The version matrix: each scenario of tests/integration/matrix.list (one test
# file a line) once per PostgreSQL version besides Debian's 15.
MATRIX_VERSIONS ?= 14 16 17 18
MATRIX_TESTS    ?= $(shell grep -v '^\#' tests/integration/matrix.list)
comma := ,
empty :=
MATRIX_PG = $(subst $(empty) $(empty),$(comma),$(strip $(MATRIX_VERSIONS)))
.PHONY: integration-matrix integration-all
integration-matrix: all asan
	$(RUN_TESTS) --pg $(MATRIX_PG) $(MATRIX_TESTS)

# the suite on 15 and the matrix, in one run (make check)
integration-all: all asan
	$(RUN_TESTS) --pg 15 $(TESTS) --pg $(MATRIX_PG) $(MATRIX_TESTS)

demo: all
	bash scripts/demo.sh $(CURDIR)/$(BUILD)/pgdirect $(CURDIR)/$(BUILD)/pgd-pagecache

# The units name the binary where it is installed (@BINDIR@); they are installed, not enabled.
install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(UNITDIR)
	install -m 755 $(BUILD)/pgdirect $(DESTDIR)$(BINDIR)/pgdirect
	install -m 644 $(BUILD)/pgdirect.1 $(DESTDIR)$(MANDIR)/man1/pgdirect.1
	install -m 644 completion/pgdirect.bash $(DESTDIR)$(BASHCOMPDIR)/pgdirect
	for unit in $(UNITS); do \
	  sed 's|@BINDIR@|$(BINDIR)|g' $$unit >$(DESTDIR)$(UNITDIR)/$$(basename $$unit).tmp && \
	  chmod 644 $(DESTDIR)$(UNITDIR)/$$(basename $$unit).tmp && \
	  mv $(DESTDIR)$(UNITDIR)/$$(basename $$unit).tmp $(DESTDIR)$(UNITDIR)/$$(basename $$unit) || exit 1; \
	done

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/pgdirect $(DESTDIR)$(MANDIR)/man1/pgdirect.1 \
	  $(DESTDIR)$(BASHCOMPDIR)/pgdirect $(addprefix $(DESTDIR)$(UNITDIR)/,$(notdir $(UNITS)))

format:
	clang-format -i $$(git ls-files 'src/*.c' 'src/*.h' 'tests/*.c' 'tests/*.h')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(COVERAGE_BUILD) $(RELEASE_BUILD) $(FUZZ_BUILD)

bench: all
	bash bench/run.sh

bench-quick: all
	bash bench/run.sh --quick

# the backup against an O_DIRECT read pass on each PostgreSQL version (14-18)
bench-versions: all
	bash bench/versions.sh

bench-io: all
	bash bench/io_matrix.sh

bench-s3: all
	bash bench/s3.sh

# the store column: local, S3 (s3rver) and Azure (Azurite) side by side
bench-stores: all
	bash bench/stores.sh

bench-multi-repo: all
	bash bench/multi_repo.sh

# delta backups vs fulls and pgBackRest incr (issue 10); BENCH_DELTA_ARGS='--scale 5' for a short run
bench-delta: all
	bash bench/delta.sh $(BENCH_DELTA_ARGS)

# ---- coverage ----
# The ASan+UBSan build with gcov counters. Its counters are written under
# COVERAGE_GCDA (GCOV_PREFIX), not next to the objects: archive_command and
# restore_command run pgdirect as postgres, which may not enter the checkout
# and which creates files mode 0600 (PostgreSQL's umask). coverage-reset
# creates every counter file there beforehand, empty and mode 0666, so root
# and postgres processes both merge into it and libgcov never prints
# "profiling: ... Cannot open" on a stderr the tests read.
# coverage-report copies the counters back beside their .gcno files.
COVERAGE_BUILD ?= build-coverage
COVERAGE_GCDA  ?= /tmp/pgdirect-coverage-$(shell id -u)$(subst /,-,$(CURDIR))
COVERAGE_TESTS ?= $(TESTS)
.PHONY: coverage coverage-setup coverage-reset coverage-report

coverage-setup:
	test -f $(COVERAGE_BUILD)/build.ninja || meson setup $(COVERAGE_BUILD) --buildtype=debug \
	  -Db_sanitize=address,undefined -Db_lundef=false -Db_coverage=true
	ninja -C $(COVERAGE_BUILD)

coverage-reset: coverage-setup
	bash scripts/coverage.sh reset $(COVERAGE_BUILD) $(COVERAGE_GCDA)

coverage-report:
	bash scripts/coverage.sh report $(COVERAGE_BUILD) $(COVERAGE_GCDA) scripts/coverage-floors.txt

coverage: all coverage-reset
	GCOV_PREFIX=$(COVERAGE_GCDA) GCOV_PREFIX_STRIP=0 \
	  $(MAKE) unit-asan integration ASAN_BUILD=$(COVERAGE_BUILD) TESTS='$(COVERAGE_TESTS)'
	$(MAKE) coverage-report

# ---- fuzzing (tests/fuzz/README.md) ----
# The targets are built with clang in FUZZ_BUILD: the core library with
# -fsanitize=fuzzer-no-link (meson -Dfuzz=true), ASan and UBSan; the targets
# alone (ninja's fuzz alias), not the rest of the tree.
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=
.PHONY: fuzz fuzz-build fuzz-regress

$(FUZZ_BUILD)/build.ninja:
	@command -v clang >/dev/null || { echo "make: the fuzz targets need clang (scripts/setup.sh installs it)"; exit 1; }
	CC=clang meson setup $(FUZZ_BUILD) --buildtype=debugoptimized -Db_sanitize=address,undefined \
	  -Db_lundef=false -Dfuzz=true

fuzz-build: $(FUZZ_BUILD)/build.ninja
	ninja -C $(FUZZ_BUILD) fuzz

# each target over its seed corpus and its regressions, once; the differential
# checks on the seed corpus (seconds)
fuzz-regress: fuzz-build
	bash tests/fuzz/run.sh regress $(FUZZ_BUILD)
	python3 tests/fuzz/tar_diff.py $(FUZZ_BUILD) tests/fuzz/corpus/tar
	python3 tests/fuzz/frame_diff.py $(FUZZ_BUILD) lz4 tests/fuzz/corpus/lz4
	python3 tests/fuzz/frame_diff.py $(FUZZ_BUILD) zstd tests/fuzz/corpus/zstd

# every target (or FUZZ_TARGETS='fuzz_tar ...') for FUZZ_SECONDS, then the
# differential checks on the corpus the run reached
fuzz: fuzz-build
	bash tests/fuzz/run.sh fuzz $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)
	python3 tests/fuzz/tar_diff.py $(FUZZ_BUILD) tests/fuzz/corpus/tar $(FUZZ_BUILD)/fuzz-work/fuzz_tar/corpus
	python3 tests/fuzz/frame_diff.py $(FUZZ_BUILD) lz4 tests/fuzz/corpus/lz4 $(FUZZ_BUILD)/fuzz-work/fuzz_lz4/corpus
	python3 tests/fuzz/frame_diff.py $(FUZZ_BUILD) zstd tests/fuzz/corpus/zstd $(FUZZ_BUILD)/fuzz-work/fuzz_zstd/corpus
