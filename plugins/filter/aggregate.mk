# plugins/filter/aggregate.mk: the aggregate filter (statsd samples and
# spans to interval records) and its tests (included from Makefile.am)

pkgplugin_LTLIBRARIES += plugins/filter/aggregate.la
plugins_filter_aggregate_la_SOURCES = \
	plugins/filter/aggregate.c \
	plugins/filter/aggregate/state.c \
	plugins/filter/aggregate/state.h
# own flags: the plugin and the unit test build state.c each their way
plugins_filter_aggregate_la_CPPFLAGS = $(AM_CPPFLAGS)
plugins_filter_aggregate_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_filter_aggregate_la_LIBADD = core/libtally.la -lm

# Unit test: the state (pure code, no daemon), exact figures per interval.
check_PROGRAMS += t/unit/aggregate.t
t_unit_aggregate_t_SOURCES = t/unit/aggregate.c \
	plugins/filter/aggregate/state.c \
	plugins/filter/aggregate/state.h
t_unit_aggregate_t_LDADD = t/unit/libtap.la core/libtally.la -lm
TESTS += t/unit/aggregate.t

EXTRA_DIST += doc/plugins/aggregate.md

# Integration: statsd -> aggregate -> capture and prometheus; spans.
TESTS += t/t4002-aggregate.t t/t4004-aggregate-reload.t
EXTRA_DIST += t/t4002-aggregate.t t/t4004-aggregate-reload.t
