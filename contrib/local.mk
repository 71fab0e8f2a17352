# contrib/local.mk: rules for this part of the tree (included from Makefile.am)

# Benchmarks (contrib/bench): `make bench` builds what tallyd's side needs
# and runs contrib/bench/run-all, which compiles the C reference programs
# itself and prints every figure next to its reference. Never part of
# `make check`: nothing here is in TESTS, check_* or a default target.
# Pass options with BENCH_FLAGS, e.g. make bench BENCH_FLAGS='--quick'
# or BENCH_FLAGS='--record' to append the run to contrib/bench/RESULTS.md.

# The bench-only output (counts and times records): EXTRA_ so that only
# `make bench` builds it; -rpath because it is never installed.
EXTRA_LTLIBRARIES = contrib/bench/benchsink.la
contrib_bench_benchsink_la_SOURCES = contrib/bench/benchsink.c contrib/bench/bench.h
contrib_bench_benchsink_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
contrib_bench_benchsink_la_LIBADD = core/libtally.la

BENCH_SHELL_FILES = \
	contrib/bench/run-all \
	contrib/bench/rocm-smi-bench \
	contrib/bench/pyzmq-drain.py \
	contrib/bench/statsd-send.py \
	contrib/bench/count-recv.py \
	contrib/bench/statsd-loss
BENCH_C_FILES = \
	contrib/bench/bench.h \
	contrib/bench/zmq-send.c \
	contrib/bench/zmq-pull.c \
	contrib/bench/scrape.c \
	contrib/bench/trace-client-bench.c
EXTRA_DIST += $(BENCH_SHELL_FILES) $(BENCH_C_FILES) contrib/bench/RESULTS.md

BENCH_FLAGS =
bench: all contrib/bench/benchsink.la $(check_LTLIBRARIES)
	bash $(abs_top_srcdir)/contrib/bench/run-all \
		--build '$(abs_top_builddir)' $(BENCH_FLAGS)
.PHONY: bench
CLEANFILES += contrib/bench/benchsink.la
