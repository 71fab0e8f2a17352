# plugins/filter/select.mk: the select filter (keep, drop and rewrite
# records by name and label) and its tests (included from Makefile.am)

pkgplugin_LTLIBRARIES += plugins/filter/select.la
plugins_filter_select_la_SOURCES = \
	plugins/filter/select.c \
	plugins/filter/select/rules.c \
	plugins/filter/select/rules.h
# own flags: the plugin and the unit test build rules.c each their way
plugins_filter_select_la_CPPFLAGS = $(AM_CPPFLAGS)
plugins_filter_select_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_filter_select_la_LIBADD = core/libtally.la

# Unit test: the rules (pure code, no daemon).
check_PROGRAMS += t/unit/select.t
t_unit_select_t_SOURCES = t/unit/select.c \
	plugins/filter/select/rules.c \
	plugins/filter/select/rules.h
t_unit_select_t_LDADD = t/unit/libtap.la core/libtally.la
TESTS += t/unit/select.t

EXTRA_DIST += doc/plugins/select.md

# Integration: statsd -> select -> capture.
TESTS += t/t4003-select.t
EXTRA_DIST += t/t4003-select.t
