# plugins/output/report.mk: the per-job report output, its unit tests,
# fuzz target and integration tests (included from Makefile.am)

REPORT_JOIN_SOURCES = \
	plugins/output/report/join.c \
	plugins/output/report/join.h

# Unit test: the join (pure code) against figures computed by hand.
check_PROGRAMS += t/unit/report-join.t
t_unit_report_join_t_SOURCES = t/unit/report-join.c $(REPORT_JOIN_SOURCES)
t_unit_report_join_t_LDADD = t/unit/libtap.la core/libtally.la -lm
TESTS += t/unit/report-join.t

# The join driven by arbitrary operations (contrib/fuzz/fuzz.mk).
FUZZ_TARGETS += contrib/fuzz/report_join_fuzz
REPORT_JOIN_FUZZ_SRC = $(top_srcdir)/contrib/fuzz/report_join_fuzz.c \
	$(top_srcdir)/plugins/output/report/join.c \
	$(top_srcdir)/core/hash.c $(top_srcdir)/core/quantile.c
contrib/fuzz/report_join_fuzz: $(REPORT_JOIN_FUZZ_SRC)
	@$(MKDIR_P) contrib/fuzz
	$(AM_V_CC)$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(REPORT_JOIN_FUZZ_SRC) -lm
EXTRA_DIST += contrib/fuzz/report_join_fuzz.c contrib/fuzz/corpus/report_join
