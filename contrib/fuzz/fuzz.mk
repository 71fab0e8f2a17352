# contrib/fuzz/fuzz.mk: libFuzzer targets, built with clang by `make fuzz`
#
# Each target is contrib/fuzz/NAME_fuzz, built from its own source plus the
# sources it exercises, with -fsanitize=fuzzer,address,undefined. They are
# not part of `make check`; .ci/run runs each for a bounded time:
#	contrib/fuzz/NAME_fuzz -max_total_time=20 $(srcdir)/contrib/fuzz/corpus/NAME
# Fragments add their targets to FUZZ_TARGETS and a rule building them.

FUZZ_CC = clang
FUZZ_CFLAGS = -g -O1 -fsanitize=fuzzer,address,undefined \
	-I$(top_srcdir)/include -I$(top_builddir)
FUZZ_TARGETS = contrib/fuzz/config_fuzz

CONFIG_FUZZ_SRC = $(top_srcdir)/contrib/fuzz/config_fuzz.c \
	$(top_srcdir)/core/config.c $(top_srcdir)/core/conftext.c \
	$(top_srcdir)/core/options.c \
	$(top_srcdir)/core/loader.c $(top_srcdir)/core/log.c \
	$(top_srcdir)/core/labels.c $(top_srcdir)/core/record.c \
	$(top_srcdir)/core/hash.c $(top_srcdir)/core/utf8.c \
	$(top_srcdir)/core/pipeline.c $(top_srcdir)/core/graph.c \
	$(top_srcdir)/core/mode.c
contrib/fuzz/config_fuzz: $(CONFIG_FUZZ_SRC) tally-dirs.h
	@$(MKDIR_P) contrib/fuzz
	$(AM_V_CC)$(FUZZ_CC) $(FUZZ_CFLAGS) $(LIBCONFIG_CFLAGS) \
		$(LIBEVENT_CFLAGS) -o $@ $(CONFIG_FUZZ_SRC) $(LIBCONFIG_LIBS) \
		$(LIBEVENT_LIBS) $(LTDL_LIBS) $(PTHREAD_LIBS) -lm

fuzz: $(FUZZ_TARGETS) $(check_LTLIBRARIES)
.PHONY: fuzz

EXTRA_DIST += contrib/fuzz/config_fuzz.c contrib/fuzz/corpus contrib/fuzz/lsan.supp
CLEANFILES += $(FUZZ_TARGETS)
