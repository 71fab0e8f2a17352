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

# The join, the renderings and the picture (with cairo, else the note
# that there is none): the plugin's and the benchmark's.
REPORT_SOURCES = $(REPORT_JOIN_SOURCES) \
	plugins/output/report/render.c plugins/output/report/render.h \
	plugins/output/report/draw.h
if HAVE_CAIRO
REPORT_SOURCES += plugins/output/report/draw.c
else
REPORT_SOURCES += plugins/output/report/draw-none.c
endif

pkgplugin_LTLIBRARIES += plugins/output/report.la
plugins_output_report_la_SOURCES = plugins/output/report/report.c \
	$(REPORT_SOURCES)
plugins_output_report_la_CPPFLAGS = $(AM_CPPFLAGS) $(LIBEVENT_CFLAGS) \
	$(CAIRO_CFLAGS)
# Never unloaded (a reload that removes the output, or exit): cairo and
# fontconfig keep process-wide caches that do not survive their library
# leaving the process, and a later report would load them again.
plugins_output_report_la_LDFLAGS = $(PLUGIN_LDFLAGS) -Wl,-z,nodelete
plugins_output_report_la_LIBADD = core/libtally.la $(LIBEVENT_LIBS) \
	$(CAIRO_LIBS) -lm
EXTRA_DIST += plugins/output/report/draw.c plugins/output/report/draw-none.c

# The report output's test input: a known job (GPU and host series, a
# nested trace of four ranks), emitted at once.
check_LTLIBRARIES += t/plugins/reportgen.la
t_plugins_reportgen_la_SOURCES = t/plugins/reportgen.c
t_plugins_reportgen_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
t_plugins_reportgen_la_LIBADD = core/libtally.la

# Integration: the known job end to end (tallyd --user -- CMD, SIGUSR1,
# shutdown), the picture, jobs without GPU or trace, bad input.
TESTS += t/t2601-report.t
EXTRA_DIST += t/t2601-report.t

# End-of-job benchmark (contrib/bench, never part of make check): a 1-hour
# job of 64 ranks and 8 GPUs sampled every second.
noinst_PROGRAMS += contrib/bench/report-bench
contrib_bench_report_bench_SOURCES = contrib/bench/report-bench.c \
	$(REPORT_SOURCES)
contrib_bench_report_bench_CPPFLAGS = $(AM_CPPFLAGS) $(LIBEVENT_CFLAGS) \
	$(CAIRO_CFLAGS)
contrib_bench_report_bench_LDADD = core/libtally.la $(LIBEVENT_LIBS) \
	$(CAIRO_LIBS) -lm
