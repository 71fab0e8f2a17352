# plugins/filter/flatten.mk: the flatten filter (nested spans to a flat
# sequence of fragments) and its tests (included from Makefile.am)

pkgplugin_LTLIBRARIES += plugins/filter/flatten.la
plugins_filter_flatten_la_SOURCES = \
	plugins/filter/flatten.c \
	plugins/filter/flatten/state.c \
	plugins/filter/flatten/state.h
# own flags: the plugin and the unit test build state.c each their way
plugins_filter_flatten_la_CPPFLAGS = $(AM_CPPFLAGS)
plugins_filter_flatten_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_filter_flatten_la_LIBADD = core/libtally.la

# Unit test: the state (pure code, no daemon), table-driven and on random
# nestings.
check_PROGRAMS += t/unit/flatten.t
t_unit_flatten_t_SOURCES = t/unit/flatten.c \
	plugins/filter/flatten/state.c \
	plugins/filter/flatten/state.h
t_unit_flatten_t_LDADD = t/unit/libtap.la core/libtally.la
TESTS += t/unit/flatten.t

EXTRA_DIST += doc/plugins/flatten.md

# Integration: zmq_trace -> flatten -> prometheus with four traced processes.
TESTS += t/t3101-flatten-prometheus.t
EXTRA_DIST += t/t3101-flatten-prometheus.t
