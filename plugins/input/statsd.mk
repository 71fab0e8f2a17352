# plugins/input/statsd.mk: the statsd input (included from Makefile.am)
#
# The line parser (parse.c) is pure and fuzzed; the input (statsd.c)
# receives datagrams through the core's listener (tally/net.h).

pkgplugin_LTLIBRARIES += plugins/input/statsd.la
plugins_input_statsd_la_SOURCES = plugins/input/statsd/statsd.c \
	plugins/input/statsd/parse.c plugins/input/statsd/parse.h
# own CPPFLAGS: parse.c is built for the unit test too, without libtool
plugins_input_statsd_la_CPPFLAGS = $(AM_CPPFLAGS)
plugins_input_statsd_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_input_statsd_la_LIBADD = core/libtally.la -lm

# The input end to end: UDP, IPv6, unix and TCP senders (python3), the
# capture output and prometheus.
TESTS += t/t4001-statsd.t
EXTRA_DIST += t/t4001-statsd.t t/t40-statsd-send.py doc/plugins/statsd.md

# Unit test of the parser, built from its source.
check_PROGRAMS += t/unit/statsd-parse.t
t_unit_statsd_parse_t_SOURCES = t/unit/statsd-parse.c \
	plugins/input/statsd/parse.c plugins/input/statsd/parse.h core/utf8.c
t_unit_statsd_parse_t_LDADD = t/unit/libtap.la -lm
TESTS += t/unit/statsd-parse.t

# libFuzzer target for the parser (make fuzz).
FUZZ_TARGETS += contrib/fuzz/statsd_parse_fuzz
STATSD_FUZZ_SRC = $(top_srcdir)/contrib/fuzz/statsd_parse_fuzz.c \
	$(top_srcdir)/plugins/input/statsd/parse.c \
	$(top_srcdir)/core/utf8.c
contrib/fuzz/statsd_parse_fuzz: $(STATSD_FUZZ_SRC)
	@$(MKDIR_P) contrib/fuzz
	$(AM_V_CC)$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(STATSD_FUZZ_SRC) -lm

EXTRA_DIST += contrib/fuzz/statsd_parse_fuzz.c contrib/fuzz/corpus/statsd_parse
