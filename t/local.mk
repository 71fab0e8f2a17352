# t/local.mk: the test harness (included from Makefile.am)
#
# Every test is a .t file speaking TAP: C unit tests (check_PROGRAMS named
# t/unit/NAME.t, linked with t/unit/libtap.la) and sharness scripts
# (t/tNNNN-name.t, executable, #!/bin/sh). automake's tap-driver.sh reads
# them all. Shell tests run from any build directory: they find their
# sources through SHARNESS_TEST_SRCDIR and write only under the build
# tree's t/ (their trash directories), so `make distcheck` works with a
# read-only source tree.

TEST_EXTENSIONS = .t
T_LOG_DRIVER = env AM_TAP_AWK='$(AWK)' $(SHELL) \
	$(top_srcdir)/config/tap-driver.sh
LOG_DRIVER = $(T_LOG_DRIVER)
# Every test runs under a time limit (TALLY_TEST_TIMEOUT, default 300 s).
T_LOG_COMPILER = $(SHELL) $(top_srcdir)/t/lib/run-test.sh
LOG_COMPILER = $(T_LOG_COMPILER)

# Paths are absolute: sharness scripts cd into their trash directory.
# SHARNESS_TEST_DIRECTORY puts the trash directories in the build tree's
# t/; HARNESS_ACTIVE stops sharness writing a test-results/ directory.
AM_TESTS_ENVIRONMENT = \
	top_srcdir='$(abs_top_srcdir)'; export top_srcdir; \
	top_builddir='$(abs_top_builddir)'; export top_builddir; \
	TALLYD='$(abs_top_builddir)/core/tallyd'; export TALLYD; \
	TALLY_PLUGIN_PATH='$(abs_top_builddir)/plugins/input:$(abs_top_builddir)/plugins/filter:$(abs_top_builddir)/plugins/output:$(abs_top_builddir)/t/plugins'; \
	export TALLY_PLUGIN_PATH; \
	PYTHON3='$(PYTHON3)'; export PYTHON3; \
	PROMTOOL='$(PROMTOOL)'; export PROMTOOL; \
	PROMETHEUS='$(PROMETHEUS)'; export PROMETHEUS; \
	SHARNESS_TEST_SRCDIR='$(abs_top_srcdir)/t'; export SHARNESS_TEST_SRCDIR; \
	SHARNESS_TEST_DIRECTORY='$(abs_top_builddir)/t'; \
	export SHARNESS_TEST_DIRECTORY; \
	HARNESS_ACTIVE=t; export HARNESS_ACTIVE; \
	UBSAN_OPTIONS=$${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}; \
	export UBSAN_OPTIONS; \
	$(TALLY_SAN_TESTS_ENV) \
	$(MKDIR_P) '$(abs_top_builddir)/t';

if SANITIZERS
# Plugins stay mapped at exit so leak reports can name their functions.
TALLY_SAN_TESTS_ENV = TALLY_NO_DLCLOSE=1; export TALLY_NO_DLCLOSE;
else
TALLY_SAN_TESTS_ENV =
endif

# The TAP library of the C unit tests (t/unit/tap.h).
check_LTLIBRARIES += t/unit/libtap.la
t_unit_libtap_la_SOURCES = t/unit/tap.c t/unit/tap.h
t_unit_libtap_la_LIBADD = $(PTHREAD_LIBS) -lm

# The TAP library's own test: passes, and checks its failure output in a
# child process.
check_PROGRAMS += t/unit/tap.t
t_unit_tap_t_SOURCES = t/unit/tap-selftest.c
t_unit_tap_t_LDADD = t/unit/libtap.la
TESTS += t/unit/tap.t

EXTRA_DIST += t/lib/tally.sh t/lib/run-test.sh t/lib/print-var.mk t/lsan.supp

# The test-only plugins (t/plugins) checked end to end.
TESTS += t/t0001-plugins-testonly.t
EXTRA_DIST += t/t0001-plugins-testonly.t

# Trash directories of failed shell tests (passing ones remove their own).
clean-local: clean-local-t
clean-local-t:
	-rm -rf '$(top_builddir)/t/trash directory.'*
.PHONY: clean-local-t
