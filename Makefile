# pgdirect - thin wrapper over meson/ninja.
#   make            release build in build/
#   make asan       ASan+UBSan build in build-asan/
#   make check      everything CI runs: unit tests (plain, ASan+UBSan, valgrind),
#                   integration tests against a real PostgreSQL 15 (needs root:
#                   it runs the servers as the postgres user)
#   make integration TESTS='tests/integration/08_wal.t'   one or a few integration tests
#   PGDIRECT_TEST_PG=17 make integration TESTS=...   the same against PostgreSQL 17 (14 to 18)
#   make integration-matrix   the scenarios of tests/integration/matrix.list against
#                   PostgreSQL 14, 16, 17 and 18 (make check runs it after the suite on 15)
#   make demo       the README demo

BUILD      ?= build
TESTS      ?= tests/integration/*.t
ASAN_BUILD ?= build-asan

.PHONY: all asan unit unit-asan unit-valgrind integration check demo format clean bench bench-quick bench-io bench-s3

all: $(BUILD)/build.ninja
	ninja -C $(BUILD)

$(BUILD)/build.ninja:
	meson setup $(BUILD) --buildtype=debugoptimized

asan: $(ASAN_BUILD)/build.ninja
	ninja -C $(ASAN_BUILD)

$(ASAN_BUILD)/build.ninja:
	meson setup $(ASAN_BUILD) --buildtype=debug -Db_sanitize=address,undefined -Db_lundef=false

unit: all
	meson test -C $(BUILD) --print-errorlogs

unit-asan: asan
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 meson test -C $(ASAN_BUILD) --print-errorlogs

unit-valgrind: all
	meson test -C $(BUILD) --print-errorlogs --suite pgdirect \
	  --wrapper 'valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect --quiet'

integration: all asan
	PGDIRECT_BIN=$(CURDIR)/$(ASAN_BUILD)/pgdirect PGD_PAGECACHE=$(CURDIR)/$(BUILD)/pgd-pagecache \
	  PGDIRECT_RELEASE_BIN=$(CURDIR)/$(BUILD)/pgdirect PGD_SIGV4=$(CURDIR)/$(BUILD)/pgd-sigv4 \
	  prove --exec bash --verbose --timer $(TESTS)

check: unit unit-valgrind unit-asan integration
check: integration-matrix

# The version matrix: each scenario of tests/integration/matrix.list (one test
# file a line) once per PostgreSQL version besides Debian's 15, every version
# run even when one fails.
MATRIX_VERSIONS ?= 14 16 17 18
MATRIX_TESTS    ?= $(shell grep -v '^\#' tests/integration/matrix.list)
.PHONY: integration-matrix
integration-matrix: all asan
	@fail=""; for v in $(MATRIX_VERSIONS); do \
	  echo "=== PostgreSQL $$v: $(MATRIX_TESTS)"; \
	  PGDIRECT_TEST_PG=$$v PGDIRECT_BIN=$(CURDIR)/$(ASAN_BUILD)/pgdirect \
	    PGD_PAGECACHE=$(CURDIR)/$(BUILD)/pgd-pagecache PGDIRECT_RELEASE_BIN=$(CURDIR)/$(BUILD)/pgdirect \
	    PGD_SIGV4=$(CURDIR)/$(BUILD)/pgd-sigv4 \
	    prove --exec bash --verbose --timer $(MATRIX_TESTS) || fail="$$fail $$v"; \
	done; \
	if [ -n "$$fail" ]; then echo "integration-matrix: failed on PostgreSQL$$fail"; exit 1; fi

demo: all
	bash scripts/demo.sh $(CURDIR)/$(BUILD)/pgdirect $(CURDIR)/$(BUILD)/pgd-pagecache

format:
	clang-format -i $$(git ls-files 'src/*.c' 'src/*.h' 'tests/*.c' 'tests/*.h')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)

bench: all
	bash bench/run.sh

bench-quick: all
	bash bench/run.sh --quick

bench-io: all
	bash bench/io_matrix.sh

bench-s3: all
	bash bench/s3.sh
