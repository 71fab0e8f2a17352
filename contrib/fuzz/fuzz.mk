# contrib/fuzz/fuzz.mk: libFuzzer targets, built with clang by `make fuzz`
#
# Each target is contrib/fuzz/NAME_fuzz, built from its own source plus the
# sources it exercises, with -fsanitize=fuzzer,address,undefined. They are
# not part of `make check`; .ci/run runs each for a bounded time:
#	contrib/fuzz/NAME_fuzz -max_total_time=20 $(srcdir)/contrib/fuzz/corpus/NAME
# Fragments add their targets to FUZZ_TARGETS and a rule building them.

FUZZ_CC = clang
# The fuzzed sources see the same include path and defines as the build.
FUZZ_CFLAGS = -g -O1 -fsanitize=fuzzer,address,undefined $(AM_CPPFLAGS)
FUZZ_TARGETS = contrib/fuzz/config_fuzz

# All of libtally, so the list cannot go stale when the core gains a file.
CONFIG_FUZZ_SRC = $(top_srcdir)/contrib/fuzz/config_fuzz.c \
	$(addprefix $(top_srcdir)/,$(filter %.c,$(core_libtally_la_SOURCES)))
contrib/fuzz/config_fuzz: $(CONFIG_FUZZ_SRC) tally-dirs.h
	@$(MKDIR_P) contrib/fuzz
	$(AM_V_CC)$(FUZZ_CC) $(FUZZ_CFLAGS) $(LIBCONFIG_CFLAGS) \
		$(LIBEVENT_CFLAGS) $(ZLIB_CFLAGS) -o $@ $(CONFIG_FUZZ_SRC) \
		$(LIBCONFIG_LIBS) $(LIBEVENT_LIBS) $(ZLIB_LIBS) $(LTDL_LIBS) \
		$(PTHREAD_LIBS) -lm

# The text exposition parser (tally_expo_parse()): records come from the
# batch and label code, so it links the same sources as config_fuzz.
FUZZ_TARGETS += contrib/fuzz/expo_parse_fuzz
EXPO_PARSE_FUZZ_SRC = $(top_srcdir)/contrib/fuzz/expo_parse_fuzz.c \
	$(addprefix $(top_srcdir)/,$(filter %.c,$(core_libtally_la_SOURCES)))
contrib/fuzz/expo_parse_fuzz: $(EXPO_PARSE_FUZZ_SRC) tally-dirs.h
	@$(MKDIR_P) contrib/fuzz
	$(AM_V_CC)$(FUZZ_CC) $(FUZZ_CFLAGS) $(LIBCONFIG_CFLAGS) \
		$(LIBEVENT_CFLAGS) $(ZLIB_CFLAGS) -o $@ $(EXPO_PARSE_FUZZ_SRC) \
		$(LIBCONFIG_LIBS) $(LIBEVENT_LIBS) $(ZLIB_LIBS) $(LTDL_LIBS) \
		$(PTHREAD_LIBS) -lm
EXTRA_DIST += contrib/fuzz/expo_parse_fuzz.c contrib/fuzz/corpus/expo_parse

fuzz: $(FUZZ_TARGETS) $(check_LTLIBRARIES)
.PHONY: fuzz

EXTRA_DIST += contrib/fuzz/config_fuzz.c contrib/fuzz/corpus contrib/fuzz/lsan.supp
CLEANFILES += $(FUZZ_TARGETS)
