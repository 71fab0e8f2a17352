# plugins/filter/rate_limit.mk: the rate_limit filter (a token bucket per
# source on span streams) and its tests (included from Makefile.am)

pkgplugin_LTLIBRARIES += plugins/filter/rate_limit.la
plugins_filter_rate_limit_la_SOURCES = \
	plugins/filter/rate_limit.c \
	plugins/filter/rate_limit/state.c \
	plugins/filter/rate_limit/state.h
# own flags: the plugin and the unit test build state.c each their way
plugins_filter_rate_limit_la_CPPFLAGS = $(AM_CPPFLAGS)
plugins_filter_rate_limit_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_filter_rate_limit_la_LIBADD = core/libtally.la -lm

# Unit test: the state (pure code, no daemon), exact counts per key.
check_PROGRAMS += t/unit/rate_limit.t
t_unit_rate_limit_t_SOURCES = t/unit/rate_limit.c \
	plugins/filter/rate_limit/state.c \
	plugins/filter/rate_limit/state.h
t_unit_rate_limit_t_LDADD = t/unit/libtap.la core/libtally.la -lm
TESTS += t/unit/rate_limit.t

EXTRA_DIST += doc/plugins/rate_limit.md

# Integration: zmq_trace -> rate_limit -> capture and prometheus.
TESTS += t/t3102-rate-limit.t
EXTRA_DIST += t/t3102-rate-limit.t
# Both trace filters across reloads (their handoff and adopt ops).
TESTS += t/t3103-filter-reload.t
EXTRA_DIST += t/t3103-filter-reload.t
