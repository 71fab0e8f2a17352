# core/local.mk: libtally (everything plugins and tallyd share) and tallyd

lib_LTLIBRARIES += core/libtally.la
core_libtally_la_SOURCES = \
	core/core-internal.h \
	core/labels.c \
	core/record.c \
	core/log.c \
	core/options.c \
	core/config.c \
	core/loader.c \
	core/pipeline.c \
	core/mode.c
core_libtally_la_CPPFLAGS = $(AM_CPPFLAGS) $(LIBEVENT_CFLAGS) $(LIBCONFIG_CFLAGS)
core_libtally_la_LIBADD = $(LIBEVENT_LIBS) $(LIBCONFIG_LIBS) $(LTDL_LIBS) \
	$(PTHREAD_LIBS) -lm
# Only the public API (and the core-private tally_* the unit tests use).
core_libtally_la_LDFLAGS = -version-info 0:0:0 -export-symbols-regex '^tally_'

pkginclude_HEADERS += \
	include/tally/plugin.h \
	include/tally/config.h \
	include/tally/record.h \
	include/tally/labels.h \
	include/tally/log.h \
	include/tally/stats.h \
	include/tally/wire.h

sbin_PROGRAMS += core/tallyd
core_tallyd_SOURCES = core/tallyd.c
core_tallyd_CPPFLAGS = $(AM_CPPFLAGS) $(LIBEVENT_CFLAGS) $(LIBCONFIG_CFLAGS)
core_tallyd_LDADD = core/libtally.la
