# core/client/local.mk: libtally-trace, the application trace client
# (included from Makefile.am). It links libzmq and pthread only: never
# libtally or libevent, so applications pull in nothing of the daemon.

lib_LTLIBRARIES += core/client/libtally-trace.la
core_client_libtally_trace_la_SOURCES = \
	core/client/trace.c \
	core/client/discover.c \
	core/client/trace-internal.h
core_client_libtally_trace_la_CFLAGS = $(AM_CFLAGS) $(LIBZMQ_CFLAGS)
core_client_libtally_trace_la_LDFLAGS = $(AM_LDFLAGS) -version-info 0:0:0 \
	-export-symbols-regex '^tally_trace_'
core_client_libtally_trace_la_LIBADD = $(LIBZMQ_LIBS) $(PTHREAD_LIBS)

pkginclude_HEADERS += include/tally/trace.h
pkgconfig_DATA += core/client/tally-trace.pc
dist_man_MANS += doc/tally-trace.3
EXTRA_DIST += doc/wire-format.md core/client/tally-trace.pc.in
