# core/client/local.mk: libtally-trace, the application trace client
# (included from Makefile.am). It links libzmq and pthread only: never
# libtally or libevent, so applications pull in nothing of the daemon.

lib_LTLIBRARIES += core/client/libtally-trace.la
core_client_libtally_trace_la_SOURCES = \
	core/client/trace.c \
	core/client/discover.c \
	core/jobid.c \
	core/utf8.c \
	core/hash.c \
	core/client/trace-internal.h
core_client_libtally_trace_la_CFLAGS = $(AM_CFLAGS) $(LIBZMQ_CFLAGS)
core_client_libtally_trace_la_LDFLAGS = $(AM_LDFLAGS) -version-info 0:0:0 \
	-export-symbols-regex '^tally_trace_'
core_client_libtally_trace_la_LIBADD = $(LIBZMQ_LIBS) $(PTHREAD_LIBS)

pkginclude_HEADERS += include/tally/trace.h
pkgconfig_DATA += core/client/tally-trace.pc
dist_man_MANS += doc/tally-trace.3
EXTRA_DIST += doc/wire-format.md core/client/tally-trace.pc.in

# Unit test of the encoder (against doc/wire-format.md's vectors) and of
# the environment probes; built from the sources, since the library
# exports only tally_trace_*.
check_PROGRAMS += t/unit/trace-wire.t
t_unit_trace_wire_t_SOURCES = t/unit/trace-wire.c core/client/discover.c \
	core/jobid.c core/utf8.c core/hash.c
t_unit_trace_wire_t_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/core/client \
	-DTOP_SRCDIR='"$(abs_top_srcdir)"'
t_unit_trace_wire_t_LDADD = t/unit/libtap.la
TESTS += t/unit/trace-wire.t

# Test driver for the client and zmq_trace end-to-end tests.
check_PROGRAMS += t/trace-emit
t_trace_emit_SOURCES = t/trace-emit.c
t_trace_emit_LDADD = core/client/libtally-trace.la $(PTHREAD_LIBS)

# Behaviour of the installed library (through its exported API only).
check_PROGRAMS += t/unit/trace-nocollector.t
t_unit_trace_nocollector_t_SOURCES = t/unit/trace-nocollector.c
t_unit_trace_nocollector_t_LDADD = t/unit/libtap.la \
	core/client/libtally-trace.la
TESTS += t/unit/trace-nocollector.t

# These two also use libzmq directly, as the receiving end.
TRACE_ZMQ_TEST_CPPFLAGS = $(AM_CPPFLAGS) $(LIBZMQ_CFLAGS)
TRACE_ZMQ_TEST_LDADD = t/unit/libtap.la core/client/libtally-trace.la \
	$(LIBZMQ_LIBS) $(PTHREAD_LIBS)
check_PROGRAMS += t/unit/trace-api.t t/unit/trace-fork.t
t_unit_trace_api_t_SOURCES = t/unit/trace-api.c
t_unit_trace_api_t_CPPFLAGS = $(TRACE_ZMQ_TEST_CPPFLAGS)
t_unit_trace_api_t_LDADD = $(TRACE_ZMQ_TEST_LDADD)
# Built from the sources and never with the sanitizers (its own CFLAGS and
# LDFLAGS leave SAN_* out): it forks while other threads allocate, and a
# child forked while another thread is inside ASan's allocator inherits
# its lock and hangs (glibc's malloc is fork-safe, ASan's is not).
t_unit_trace_fork_t_SOURCES = t/unit/trace-fork.c t/unit/tap.c \
	core/client/trace.c core/client/discover.c core/jobid.c core/utf8.c \
	core/hash.c
t_unit_trace_fork_t_CPPFLAGS = $(TRACE_ZMQ_TEST_CPPFLAGS) \
	-I$(top_srcdir)/core/client
t_unit_trace_fork_t_CFLAGS = $(WARN_CFLAGS)
t_unit_trace_fork_t_LDFLAGS =
t_unit_trace_fork_t_LDADD = $(LIBZMQ_LIBS) $(PTHREAD_LIBS) -lm
TESTS += t/unit/trace-api.t t/unit/trace-fork.t

# Wire v2 (attributes, counters, announcement) decoded by the collector's
# own decoder; 8 threads adding to one counter.
check_PROGRAMS += t/unit/trace-counters.t
t_unit_trace_counters_t_SOURCES = t/unit/trace-counters.c \
	plugins/input/zmq_trace/decode.c core/utf8.c
t_unit_trace_counters_t_CPPFLAGS = $(TRACE_ZMQ_TEST_CPPFLAGS)
t_unit_trace_counters_t_LDADD = $(TRACE_ZMQ_TEST_LDADD) -lm
TESTS += t/unit/trace-counters.t

# The C client to a pyzmq receiver written from the spec.
TESTS += t/t3500-trace-client.t
EXTRA_DIST += t/t3500-trace-client.t t/t35-trace-recv.py t/t35-lib.sh

# Wire v2 end to end: both clients' attributes and counters.
TESTS += t/t3504-trace-v2.t
EXTRA_DIST += t/t3504-trace-v2.t

# An application built with pkg-config from a temporary install root.
TESTS += t/t3503-trace-pkgconfig.t
EXTRA_DIST += t/t3503-trace-pkgconfig.t

# The Python client (contrib/python) to the same receiver.
TESTS += t/t3502-trace-python.t
EXTRA_DIST += t/t3502-trace-python.t contrib/python/tally_trace.py \
	contrib/python/pyproject.toml
# ... installed with pip into a venv (offline, Debian's packages)
TESTS += t/t3504-trace-python-install.t
EXTRA_DIST += t/t3504-trace-python-install.t
