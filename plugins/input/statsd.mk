# plugins/input/statsd.mk: the statsd input (included from Makefile.am)
#
# The line parser comes first, pure and fuzzed; the input that receives
# datagrams builds on it.

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
